/*
 * http_events: Server-Sent Events streams of job status (see
 * http_events.h).
 *
 * Every open stream is in one list.  A timer (running only while a stream
 * is open) compares each stream's job status with what it sent last and
 * sends the difference; http_events_poll does the same at once when a job
 * ends.  A stream ends when its job has ended (after the `end` event), when
 * the client goes away (the connection's close callback), when its output
 * backs up past OUT_MAX (a client that does not read), or at shutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base_time.h"
#include "http_events.h"

/* A client whose unread events pass this is dropped. */
#define OUT_MAX (256u << 10)

struct sse {
	struct http_events *E;
	struct evhttp_request *req;
	struct evhttp_connection *evcon;
	char id[HTTP_ID_MAX];
	unsigned long long seq;      /* id of the last event sent */
	int sent;                    /* an event has been sent */
	struct http_job_status last; /* what was sent last */
	double t_write;              /* last write (for the heartbeat) */
	struct sse *prev, *next;
};

struct http_events {
	struct http_events_opts o;
	struct event *timer;
	struct sse *head;
	unsigned n;
};

static void arm(struct http_events *E)
{
	struct timeval tv;

	tv.tv_sec = (time_t)E->o.interval;
	tv.tv_usec = (suseconds_t)((E->o.interval - (double)tv.tv_sec) * 1e6);
	if (!evtimer_pending(E->timer, NULL))
		evtimer_add(E->timer, &tv);
}

static void unlink_sse(struct sse *x)
{
	struct http_events *E = x->E;

	if (x->prev)
		x->prev->next = x->next;
	else
		E->head = x->next;
	if (x->next)
		x->next->prev = x->prev;
	E->n--;
	if (E->n == 0)
		evtimer_del(E->timer);
}

/* The client went away.  On a read error libevent has already detached
 * the unfinished request (then it is ours to free); when the server
 * itself frees the connection the request is still attached and libevent
 * frees it (as for the placement streams). */
static void on_closed(struct evhttp_connection *evcon, void *arg)
{
	struct sse *x = arg;

	(void)evcon;
	unlink_sse(x);
	if (!evhttp_request_get_connection(x->req))
		evhttp_request_free(x->req);
	http_metrics_request(x->E->o.metrics, HTTP_R_EVENTS, 499, 0);
	free(x);
}

/* End the response (the connection then closes: "Connection: close"). */
static void finish(struct sse *x)
{
	unlink_sse(x);
	http_conns_set_closecb(x->E->o.conns, x->evcon, NULL, NULL);
	evhttp_send_reply_end(x->req);
	free(x);
}

static size_t backlog(const struct sse *x)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(x->evcon);

	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

/* One event: "id: N\nevent: NAME\ndata: JSON\n\n" (data stolen). */
static void send_event(struct sse *x, const char *name, json_t *data)
{
	char *s = data ? json_dumps(data, JSON_COMPACT | JSON_REAL_PRECISION(6))
		       : NULL;
	struct evbuffer *b = evbuffer_new();

	json_decref(data);
	if (b && s) {
		evbuffer_add_printf(b, "id: %llu\nevent: %s\ndata: %s\n\n",
				    ++x->seq, name, s);
		evhttp_send_reply_chunk(x->req, b);
		x->t_write = base_now();
	}
	if (b)
		evbuffer_free(b);
	free(s);
}

static json_t *status_json(const struct sse *x, const struct http_job_status *st)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:f}", "id", x->id, "state",
			      http_job_state_names[st->state], "phase",
			      http_job_phase_names[st->phase], "progress",
			      st->progress);

	if (!j)
		return NULL;
	json_object_set_new(j, "elapsed", st->elapsed >= 0 ? json_real(st->elapsed)
							   : json_null());
	json_object_set_new(j, "eta", st->eta >= 0 ? json_real(st->eta) : json_null());
	return j;
}

static int ended(enum http_job_state s)
{
	return s != HTTP_JOB_QUEUED && s != HTTP_JOB_RUNNING;
}

/* Send what changed since the last event; end the stream after the job
 * has ended.  Returns 1 when the stream was freed. */
static int update(struct sse *x, double now)
{
	struct http_job_status st;

	if (backlog(x) > OUT_MAX) { /* not reading: drop it */
		http_metrics_request(x->E->o.metrics, HTTP_R_EVENTS, 499, 0);
		finish(x);
		return 1;
	}
	if (http_jobs_status(x->E->o.jobs, x->id, &st) != 0) {
		finish(x); /* cannot happen: jobs are never removed */
		return 1;
	}
	if (!x->sent || st.state != x->last.state) {
		send_event(x, "state", status_json(x, &st));
	} else if (st.phase != x->last.phase ||
		   (long)(st.progress * 1000) != (long)(x->last.progress * 1000)) {
		send_event(x, "progress", status_json(x, &st));
	} else if (now - x->t_write >= x->E->o.heartbeat) {
		struct evbuffer *b = evbuffer_new();

		if (b) {
			evbuffer_add_printf(b, ": ping\n\n");
			evhttp_send_reply_chunk(x->req, b);
			evbuffer_free(b);
		}
		x->t_write = now;
	}
	x->sent = 1;
	x->last = st;
	if (ended(st.state)) {
		/* the job's JSON (with its phase and elapsed time) */
		send_event(x, "end", http_jobs_get_json(x->E->o.jobs, x->id, 0));
		finish(x);
		return 1;
	}
	return 0;
}

static void update_all(struct http_events *E)
{
	double now = base_now();
	struct sse *x = E->head, *next;

	for (; x; x = next) {
		next = x->next;
		update(x, now);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct http_events *E = arg;

	(void)fd;
	(void)what;
	update_all(E);
	if (E->n)
		arm(E);
}

int http_events_create(struct http_events **out,
		       const struct http_events_opts *o, struct parsa_err *err)
{
	struct http_events *E = calloc(1, sizeof(*E));

	*out = NULL;
	if (!E)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	E->o = *o;
	if (E->o.max_streams < 1)
		E->o.max_streams = 1;
	if (!(E->o.interval > 0))
		E->o.interval = 0.2;
	if (!(E->o.heartbeat > 0))
		E->o.heartbeat = 15;
	E->timer = evtimer_new(o->base, on_timer, E);
	if (!E->timer) {
		free(E);
		return parsa_fail(err, PARSA_ENOMEM, "cannot create the events timer");
	}
	*out = E;
	return 0;
}

void http_events_destroy(struct http_events *E)
{
	if (!E)
		return;
	http_events_close_all(E);
	event_free(E->timer);
	free(E);
}

int http_events_open(struct http_events *E, struct evhttp_request *req,
		     const char *id, const char *last_id, double t0)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct http_job_status st;
	struct sse *x;
	char *end;

	if (http_jobs_status(E->o.jobs, id, &st) != 0)
		return 404;
	if (E->n >= E->o.max_streams)
		return 503;
	x = calloc(1, sizeof(*x));
	if (!x)
		return 503;
	x->E = E;
	x->req = req;
	x->evcon = evhttp_request_get_connection(req);
	snprintf(x->id, sizeof(x->id), "%s", id);
	if (last_id) {
		unsigned long long v = strtoull(last_id, &end, 10);

		if (end != last_id && *end == '\0')
			x->seq = v;
	}
	x->next = E->head;
	if (E->head)
		E->head->prev = x;
	E->head = x;
	E->n++;
	evhttp_add_header(h, "Content-Type", "text/event-stream; charset=utf-8");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "Connection", "close");
	evhttp_add_header(h, "X-Accel-Buffering", "no");
	http_conns_set_closecb(E->o.conns, x->evcon, on_closed, x);
	evhttp_send_reply_start(req, 200, "OK");
	http_conns_streaming(E->o.conns, x->evcon);
	http_metrics_request(E->o.metrics, HTTP_R_EVENTS, 200, base_now() - t0);
	{
		struct evbuffer *b = evbuffer_new();

		if (b) {
			evbuffer_add_printf(b, "retry: 1000\n\n");
			evhttp_send_reply_chunk(req, b);
			evbuffer_free(b);
		}
	}
	if (!update(x, base_now()))
		arm(E);
	return 0;
}

void http_events_poll(struct http_events *E)
{
	if (E && E->n)
		update_all(E);
}

unsigned http_events_close_all(struct http_events *E)
{
	unsigned n = 0;

	while (E && E->head) {
		struct sse *x = E->head;

		send_event(x, "shutdown", json_pack("{s:s, s:s}", "id", x->id,
						    "reason", "the server is stopping"));
		finish(x);
		n++;
	}
	return n;
}

unsigned http_events_count(const struct http_events *E)
{
	return E ? E->n : 0;
}
