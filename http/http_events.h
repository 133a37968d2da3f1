/*
 * http_events: Server-Sent Events of the HTTP service,
 * GET /v1/jobs/{id}/events (text/event-stream).
 *
 * A stream sends the job's status at once, then every change of its state,
 * phase or progress (checked every `interval` seconds on the loop thread,
 * and at once when a job ends: http_events_poll), so neither the page nor
 * a client polls.  Events:
 *
 *   retry: 1000                        (first, once)
 *   id: N                              (every event; N counts up from the
 *                                       request's Last-Event-ID + 1)
 *   event: state | progress | end | shutdown
 *   data: {"id", "state", "phase", "progress", "elapsed", "eta"}
 *
 * `state` when the state changes (and first), `progress` when the phase
 * or progress moves within a state, `end` once the job has ended (data:
 * the job's JSON, without the report, plus "phase" and "elapsed"), after
 * which the response ends and the connection closes; `shutdown` when the
 * server stops (the stream is then closed cleanly; a client reconnects to
 * the restarted server with Last-Event-ID).  A comment line (": ping")
 * every `heartbeat` seconds keeps idle streams alive.  At most
 * max_streams are open at once; more are refused (503 + Retry-After).
 *
 * Loop thread only: no function here may be called from another thread.
 * Job threads only store their progress (http_jobs_status reads it), so a
 * stream costs the running partition nothing.
 */
#ifndef HTTP_EVENTS_H
#define HTTP_EVENTS_H

#include <event2/event.h>
#include <event2/http.h>

#include "parsa_err.h"
#include "http_conn.h"
#include "http_jobs.h"
#include "http_metrics.h"

struct http_events_opts {
	struct event_base *base;       /* borrowed */
	struct http_jobs *jobs;        /* borrowed */
	struct http_metrics *metrics;  /* borrowed */
	unsigned max_streams;          /* open streams at most (>= 1) */
	double interval;               /* seconds between checks (0.2) */
	double heartbeat;              /* seconds between pings (15) */
	struct http_conns *conns;      /* borrowed: close callbacks */
};

struct http_events;

/* *out is new (http_events_destroy).  0 or PARSA_ENOMEM. */
int http_events_create(struct http_events **out,
		       const struct http_events_opts *o, struct parsa_err *err);

/* Close every stream (as http_events_close_all) and free.  NULL: no-op. */
void http_events_destroy(struct http_events *E);

/*
 * Start a stream of job `id` on req (GET): 0 when started (the request is
 * then the module's until the stream ends), 404 when there is no such
 * job, 503 when max_streams are open (the caller replies to those).
 * last_id: the request's Last-Event-ID (NULL: none).  t0: when the
 * request arrived (for the metrics).
 */
int http_events_open(struct http_events *E, struct evhttp_request *req,
		     const char *id, const char *last_id, double t0);

/* Check every stream now (a job may have ended). */
void http_events_poll(struct http_events *E);

/* Send `shutdown` on every stream and end it; returns how many. */
unsigned http_events_close_all(struct http_events *E);

/* Streams open now. */
unsigned http_events_count(const struct http_events *E);

#endif /* HTTP_EVENTS_H */
