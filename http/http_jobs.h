/*
 * http_jobs: partition jobs of the HTTP service: a FIFO queue served by a
 * fixed pool of worker threads (--workers), each job reading its dataset
 * (http_data.h), running part_run (or part_par_run when the job asks for
 * parallel workers), and storing the report and placement under
 * STATE/jobs/J/ (http_store.h, http_place.h) before it is marked
 * succeeded.  Ids are "j1", "j2", ... in order of submission.
 *
 * States: queued -> running -> succeeded | failed | cancelled; queued ->
 * cancelled.  Each change is written to STATE/jobs/J/job.json atomically.
 * On open, jobs found "running" (the server died under them) become
 * failed with a message saying so; "queued" ones are queued again.  A
 * graceful stop (http_jobs_stop) lets running jobs finish; jobs it has to
 * interrupt (http_jobs_interrupt) are stored as queued and so run again
 * after the restart.
 *
 * Thread-safety: all functions may be called from any thread (one mutex);
 * the notify callback runs on a worker thread.
 */
#ifndef HTTP_JOBS_H
#define HTTP_JOBS_H

#include <jansson.h>
#include <stdint.h>

#include "parsa_err.h"
#include "part_opts.h"
#include "part_run.h"
#include "http_data.h"
#include "http_metrics.h"
#include "http_place.h"
#include "http_route.h"

enum http_job_state {
	HTTP_JOB_QUEUED = 0,
	HTTP_JOB_RUNNING,
	HTTP_JOB_SUCCEEDED,
	HTTP_JOB_FAILED,
	HTTP_JOB_CANCELLED,
};

/* "queued", "running", ...; the names of /metrics too. */
extern const char *const http_job_state_names[HTTP_JOB_NSTATES];

/* Where a job is: queued, then (running) loading its dataset, the
 * partition's phases (part_run.h: partition_u, refine, partition_v,
 * metrics), saving its placement and report; done once it has ended. */
enum http_job_phase {
	HTTP_PHASE_QUEUED = 0,
	HTTP_PHASE_LOADING,
	HTTP_PHASE_PARTITION_U,
	HTTP_PHASE_REFINE,
	HTTP_PHASE_PARTITION_V,
	HTTP_PHASE_METRICS,
	HTTP_PHASE_SAVING,
	HTTP_PHASE_DONE,
	HTTP_PHASE_COUNT
};

/* "queued", "loading", "partition_u", ..., "done". */
extern const char *const http_job_phase_names[HTTP_PHASE_COUNT];

/* What a job runs (POST /v1/jobs). */
struct http_job_spec {
	char dataset[HTTP_ID_MAX];
	struct part_opts o;       /* the job's options (part_opts.h): k, method,
				   * quality, ...; o.parallel: workers, tau or
				   * syncs given (part_par_run) */
};

/*
 * Fill *s from a POST /v1/jobs body: "dataset" and the HTTP members of the
 * option table (part_opts.h; docs/openapi.yaml's JobParams), only dataset
 * and k required.  On a missing, mistyped, out-of-range or unknown member
 * returns PARSA_EINVAL with a message and the member's name in field[64].
 * Does not check that the dataset exists.
 */
int http_job_spec_parse(json_t *body, struct http_job_spec *s, char *field,
			struct parsa_err *err);

struct http_jobs_opts {
	const char *state_dir;
	unsigned workers;               /* concurrent jobs, >= 1 */
	int nice;                       /* job threads' nice value (0..19) */
	double time_limit;              /* seconds: caps each job's own
					 * time_limit, and applies to jobs
					 * without one; 0 = none */
	unsigned threads;               /* threads of a job without its own
					 * "threads"; 0 = the CPUs the process
					 * may use / workers, at least 1 */
	struct http_datasets *data;     /* borrowed */
	struct http_metrics *metrics;   /* borrowed */
	void (*notify)(void *arg);      /* after a job ends (worker thread) */
	void *notify_arg;
};

struct http_jobs;

/* Load STATE/jobs and start the workers.  *out is new (http_jobs_close). */
int http_jobs_open(struct http_jobs **out, const struct http_jobs_opts *o,
		   struct parsa_err *err);

/* Stop workers taking queued jobs (running ones go on).  Idempotent. */
void http_jobs_stop(struct http_jobs *J);

/* Ask running jobs to stop now; they are stored as queued (re-run after a
 * restart).  Only after http_jobs_stop. */
void http_jobs_interrupt(struct http_jobs *J);

/* Jobs running now. */
unsigned http_jobs_running(struct http_jobs *J);

/* Join the workers (after http_jobs_stop) and free everything. */
void http_jobs_close(struct http_jobs *J);

/* Queue a job; its id into id[HTTP_ID_MAX].  0, PARSA_EIO, PARSA_ENOMEM. */
int http_jobs_submit(struct http_jobs *J, const struct http_job_spec *s,
		     char *id, struct parsa_err *err);

/* New reference: the job's JSON (with the report when it succeeded and
 * with_report), or NULL when there is no such job.  Besides the stored
 * members it has "phase" and "elapsed" (http_job_status). */
json_t *http_jobs_get_json(struct http_jobs *J, const char *id,
			   int with_report);

/* Which jobs a list shows. */
struct http_jobs_query {
	uint64_t after;      /* id numbers above this (0: from the first) */
	unsigned limit;      /* at most this many (0: all) */
	int state;           /* an enum http_job_state, or -1: any */
	const char *dataset; /* only this dataset's jobs (NULL: any) */
};

/* New reference: {"jobs": [...]} without reports, in id order, as q
 * selects (NULL: all); "next" is the last one's id when more follow. */
json_t *http_jobs_list_json(struct http_jobs *J, const struct http_jobs_query *q);

/* Queued or running jobs of dataset id. */
unsigned http_jobs_using(struct http_jobs *J, const char *dataset);

/*
 * Delete a finished job (succeeded, failed or cancelled) and its files:
 * 200, 404 (no such job) or 409 (queued or running: *state_out says
 * which; cancel it first), 507 (the disk is full) or 500 when the
 * highest id given cannot be recorded (the job is then kept).  Its id is
 * not given again.  The caller makes
 * sure nothing else holds its placement (a download in progress).
 */
int http_jobs_purge(struct http_jobs *J, const char *id,
		    enum http_job_state *state_out);

/* Retention: which finished jobs (succeeded, failed, cancelled) are
 * beyond the newest max_jobs finished ones (by id, i.e. submission order;
 * 0: no count limit) or ended more than max_age seconds ago (0: no age
 * limit).  Their ids into ids[0..cap), oldest first; returns how many
 * there are (may exceed cap).  Queued and running jobs are never chosen. */
size_t http_jobs_expired(struct http_jobs *J, uint64_t max_jobs,
			 double max_age, char (*ids)[HTTP_ID_MAX], size_t cap);

/*
 * Cancel: 200 (queued -> cancelled now), 202 (running: the worker stops
 * at its next block and the job becomes cancelled), 404 (no such job) or
 * 409 (already finished; *state_out says which).
 */
int http_jobs_cancel(struct http_jobs *J, const char *id,
		     enum http_job_state *state_out);

/*
 * The placement of a succeeded job (borrowed; valid until close), loaded
 * from the state dir on first use after a restart.  Returns 200, 404 (no
 * such job) or 409 (not succeeded: *state_out says the state), or 500
 * with err set when the stored placement cannot be read.
 */
int http_jobs_place(struct http_jobs *J, const char *id,
		    const struct http_place **p, enum http_job_state *state_out,
		    struct parsa_err *err);

/* A job's status now (what its events stream sends). */
struct http_job_status {
	enum http_job_state state;
	enum http_job_phase phase;
	double progress;   /* 0..1 */
	double elapsed;    /* seconds running (so far, or in all once ended;
			    * -1 when unknown: ended before a restart of a
			    * server that did not store it); 0 while queued */
	double eta;        /* running: seconds left, estimated from the
			    * progress so far; -1 when unknown */
};

/* 0, or 404 when there is no such job. */
int http_jobs_status(struct http_jobs *J, const char *id,
		     struct http_job_status *st);

/* Jobs per state. */
void http_jobs_counts(struct http_jobs *J, uint64_t counts[HTTP_JOB_NSTATES]);

#endif /* HTTP_JOBS_H */
