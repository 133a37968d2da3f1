/*
 * http_server: the HTTP service of `parsa serve` on libevent's evhttp:
 * one event-loop thread answers every request (routing http_route.h,
 * errors http_problem.h, metrics http_metrics.h); partition jobs run on
 * http_jobs.h's worker threads and dataset registrations on a thread each,
 * which hand their results back to the loop through an event made active
 * from the thread (evthread_use_pthreads).  Placements are served from
 * memory (http_place.h).  SIGTERM/SIGINT stop the service gracefully:
 * no new connections, queued jobs stay queued on disk, running jobs may
 * finish for grace seconds and are then interrupted and stored as queued.
 * A second signal interrupts at once.
 */
#ifndef HTTP_SERVER_H
#define HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

struct http_server_opts {
	const char *host;        /* listen address (127.0.0.1) */
	unsigned port;           /* 0 = any free port */
	const char *state_dir;   /* required */
	const char *data_dir;    /* NULL: registering by path is disabled */
	unsigned workers;        /* concurrent partition jobs (>= 1) */
	const char *token;       /* NULL: no auth; else the bearer token */
	uint64_t max_upload;     /* largest request body, bytes */
	uint64_t max_upload_total; /* upload bytes being received at once,
				  * all requests together */
	double grace;            /* seconds running jobs may finish on stop */
	unsigned cache;          /* parsed datasets kept in memory */
	int nice;                /* nice of job and dataset-reading threads */
	double job_time_limit;   /* caps every job's time_limit (and is the
				  * limit of jobs without one); 0 = none */
	unsigned job_threads;    /* threads of a job without "threads"; 0 =
				  * the CPUs / workers (http_jobs_opts) */
	unsigned max_streams;    /* open event streams at most (>= 1) */
	double read_timeout;     /* seconds a client may stay silent while
				  * sending a request (or not read a reply) */
	unsigned max_connections; /* open connections at most (>= 1) */
	uint64_t max_jobs;       /* retention: finished jobs kept at most (the
				  * newest); 0 = no limit */
	double max_age;          /* retention: seconds a finished job is kept
				  * after it ended; 0 = no limit */
};

/*
 * Run the service until SIGTERM or SIGINT.  Prints "parsa serve: listening
 * on http://HOST:PORT" on stdout (flushed) once the socket is bound.
 * 0 after a clean stop, or an error (bind failure, unreadable state dir).
 */
int http_server_run(const struct http_server_opts *o, struct parsa_err *err);

/*
 * The same service in process, without its own listening socket or signal
 * handling (tests/fuzz_http.c): it accepts connections on listen_fd (a
 * listening socket, e.g. AF_UNIX; owned from now on, closed by
 * http_server_close) and the caller runs the loop with http_server_step.
 */
struct http_server;

/* *out is new (http_server_close).  0 or an error (as http_server_run's
 * set-up). */
int http_server_open(struct http_server **out, const struct http_server_opts *o,
		     int listen_fd, struct parsa_err *err);

/* Run the event loop once: the events ready, waiting up to max_wait
 * seconds for one.  1 while work goes on outside the loop or is held
 * (dataset reads, queued and running jobs, long polls), else 0. */
int http_server_step(struct http_server *S, double max_wait);

/* Stop as a second SIGTERM would (running jobs interrupted, held replies
 * answered, event streams ended), wait for the threads, free.  NULL:
 * no-op. */
void http_server_close(struct http_server *S);

#endif /* HTTP_SERVER_H */
