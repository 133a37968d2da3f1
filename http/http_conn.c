/*
 * http_conn: connection cap, accept back-off and the early check of
 * Content-Length (see http_conn.h).
 *
 * evhttp 2.1 has no hook when it accepts a connection, only the
 * bufferevent callback that runs just before the connection exists.  So
 * http_conns_track records the bufferevent and makes an event active;
 * that event runs in the same loop iteration, after evhttp has set the
 * connection up and before any of its I/O, and finds the connection as
 * the bufferevent's callback argument (bufferevent_getcb).  From then on
 * the connection's close callback is ours: it counts the connection out.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "base_time.h"
#include "http_conn.h"

struct conn {
	struct http_conns *C;
	struct bufferevent *bev;
	struct evhttp_connection *evcon;  /* NULL until registered */
	void (*cb)(struct evhttp_connection *, void *);  /* the user's */
	void *cb_arg;
	int hdr_done;      /* the first request's headers have been seen */
	int chunk_state;   /* 1: following its chunked body; 2: malformed */
	uint64_t chunk_left;      /* bytes of the current chunk still due */
	char line[32];            /* the chunk-size line so far */
	size_t line_len;
	struct event *hdr_timer;  /* closes it if they take too long */
	struct conn *prev, *next;
};

struct http_conns {
	struct event_base *base;
	unsigned max;
	uint64_t max_body;        /* over this + ABSURD_SLACK: at once */
	struct bufferevent *oversize;  /* its 400 page becomes a 413 */
	struct bufferevent *bad_chunk; /* its 413 page becomes a 400 */
	struct timeval hdr_deadline;
	unsigned count;           /* registered and open */
	uint64_t refused;
	struct conn *list;        /* registered connections */
	struct conn **pending;    /* tracked, not yet registered */
	size_t npending, cap_pending;
	struct event *reg_ev;     /* registers the pending ones */
	struct evconnlistener *listener;
	struct event *resume_ev;  /* re-enables the paused listener */
	double backoff;           /* seconds; 0 = not backing off */
	struct limiter {          /* warnings of one kind */
		double at;        /* the last one */
		uint64_t unsaid;  /* events since */
	} w_accept, w_cap, w_length;
};

/* At most one warning per WARN_EVERY seconds; the rest are counted. */
#define WARN_EVERY 5.0

static void warn(struct limiter *w, const char *what)
{
	double now = base_now();

	if (w->at > 0 && now - w->at < WARN_EVERY) {
		w->unsaid++;
		return;
	}
	if (w->unsaid)
		fprintf(stderr, "parsa serve: %s (and %llu more such events "
			"in the last %.0f s)\n", what,
			(unsigned long long)w->unsaid, now - w->at);
	else
		fprintf(stderr, "parsa serve: %s\n", what);
	w->at = now;
	w->unsaid = 0;
}

static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info,
		     void *arg);

static void unlink_conn(struct conn *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		x->C->list = x->next;
	if (x->next)
		x->next->prev = x->prev;
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
	struct conn *x = arg;

	if (x->cb)
		x->cb(evcon, x->cb_arg);
	evbuffer_remove_cb(bufferevent_get_input(x->bev), on_input, x);
	if (x->hdr_timer)
		event_free(x->hdr_timer);
	if (x->C->oversize == x->bev)
		x->C->oversize = NULL;
	if (x->C->bad_chunk == x->bev)
		x->C->bad_chunk = NULL;
	unlink_conn(x);
	x->C->count--;
	free(x);
}

/* ---- Content-Length checked as the headers arrive ---- */

/* An announced body this much over the limit is refused at once; a
 * smaller excess is read and thrown away first (evhttp's lingering
 * close), so the client, still sending, gets to read the 413. */
#define ABSURD_SLACK (16ULL << 20)

/* The value of a "Content-Length:" line (len bytes, no EOL) is over
 * max_body + ABSURD_SLACK: return the offset of its first digit; else
 * -1. */
static long absurd_length(const char *p, size_t len, uint64_t max_body)
{
	static const char key[] = "content-length:";
	size_t i = sizeof(key) - 1, d;
	uint64_t v = 0;

	if (len < i || strncasecmp(p, key, i) != 0)
		return -1;
	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	for (d = i; d < len && p[d] >= '0' && p[d] <= '9'; d++) {
		if (v > (UINT64_MAX - 9) / 10)
			return (long)i;  /* more than 2^64: absurd */
		v = v * 10 + (uint64_t)(p[d] - '0');
	}
	return d > i && v > max_body && v - max_body > ABSURD_SLACK ? (long)i : -1;
}

/* "Transfer-Encoding: chunked" (len bytes, no EOL)? */
static int is_chunked_header(const char *p, size_t len)
{
	static const char key[] = "transfer-encoding:";
	size_t i = sizeof(key) - 1;

	if (len < i || strncasecmp(p, key, i) != 0)
		return 0;
	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	while (len > i && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	return len - i == 7 && strncasecmp(p + i, "chunked", 7) == 0;
}

/* A chunk-size line as evhttp judges it (strtoll base 16, then the end
 * or a space): 1 if it is malformed (evhttp then answers 413, as for a
 * body too large: we make that a 400). */
static int bad_chunk_line(const char *p, size_t len)
{
	size_t i = 0, d;

	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (i < len && p[i] == '+')
		i++;
	for (d = i; d < len && isxdigit((unsigned char)p[d]); d++)
		;
	return d == i || (d < len && p[d] != ' ');
}

/* Follow the chunked framing over the new bytes b[0..n) (the first
 * request's body): chunk-size lines, then that many bytes; evhttp skips
 * the empty line after each chunk's data.  Stops at the last chunk or
 * at the first malformed size line (marking it). */
static void follow_chunks(struct conn *x, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n && x->chunk_state == 1; ) {
		if (x->chunk_left > 0) {
			size_t k = n - i < x->chunk_left ? n - i : (size_t)x->chunk_left;

			x->chunk_left -= k;
			i += k;
			continue;
		}
		if (b[i] != '\n') {
			if (x->line_len < sizeof(x->line))
				x->line[x->line_len] = (char)b[i];
			x->line_len++;
			i++;
			continue;
		}
		i++;
		{
			size_t len = x->line_len < sizeof(x->line) ? x->line_len
								  : sizeof(x->line);
			uint64_t v = 0;

			if (len && x->line[len - 1] == '\r')
				len--;
			x->line_len = 0;
			if (len == 0)
				continue;  /* the end of a chunk's data */
			if (bad_chunk_line(x->line, len)) {
				x->chunk_state = 2;
				x->C->bad_chunk = x->bev;
				return;
			}
			for (size_t j = 0; j < len && isxdigit((unsigned char)x->line[j]); j++) {
				unsigned c = (unsigned char)x->line[j];

				if (v >> 60) { /* huge: evhttp's own 413 */
					x->chunk_state = 0;
					return;
				}
				v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
			}
			if (v == 0) {
				x->chunk_state = 0;  /* the last chunk */
				return;
			}
			x->chunk_left = v;
		}
	}
}

/*
 * Input callback of a connection for its first request: evhttp has
 * consumed every complete header line before this read, so until the
 * headers end the buffer holds at most a partial line plus the new bytes.
 * A Content-Length too far over the limit gets its first digit turned
 * into 'x': evhttp then rejects it as an invalid header at once (400,
 * made a 413 by http_conns_take_oversize).  A chunked body's framing is
 * followed to tell a malformed chunk size (400) from a body too large.
 */
static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info,
		     void *arg)
{
	struct conn *x = arg;
	size_t len = evbuffer_get_length(buf), start = 0;
	unsigned char *p;

	if (info->n_added == 0 || len == 0)
		return;
	if (x->hdr_done) {
		if (x->chunk_state == 1) {
			size_t n = info->n_added < len ? info->n_added : len;

			p = evbuffer_pullup(buf, (ev_ssize_t)len);
			if (p)
				follow_chunks(x, p + len - n, n);
		}
		return;
	}
	if (len > 65536 + 4) /* longer than evhttp allows headers to be */
		len = 65536 + 4;
	p = evbuffer_pullup(buf, (ev_ssize_t)len);
	if (!p)
		return;
	for (size_t i = 0; i < len; i++) {
		size_t end;
		long at;

		if (p[i] != '\n')
			continue;
		end = i > start && p[i - 1] == '\r' ? i - 1 : i;
		if (end == start) { /* the empty line: headers done */
			x->hdr_done = 1;
			if (x->hdr_timer)
				event_del(x->hdr_timer);
			if (x->chunk_state == 1)
				follow_chunks(x, p + i + 1, len - i - 1);
			return;
		}
		if (is_chunked_header((const char *)p + start, end - start))
			x->chunk_state = 1;
		at = absurd_length((const char *)p + start, end - start,
				   x->C->max_body);
		if (at >= 0) {
			p[start + (size_t)at] = 'x';
			x->C->oversize = x->bev;
			warn(&x->C->w_length, "refused a request announcing a body larger "
			     "than --max-upload (413 at once)");
		}
		start = i + 1;
	}
}

/* ---- registration of new connections ---- */

/* The first request's headers took longer than the read timeout (a
 * client trickling bytes to stay under the inactivity timeout). */
static void on_hdr_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct conn *x = arg;

	(void)fd;
	(void)what;
	if (!x->hdr_done && x->evcon)
		evhttp_connection_free(x->evcon); /* calls on_close */
}

static void on_register(evutil_socket_t fd, short what, void *arg)
{
	struct http_conns *C = arg;

	(void)fd;
	(void)what;
	for (size_t i = 0; i < C->npending; i++) {
		struct conn *x = C->pending[i];
		bufferevent_data_cb rcb, wcb;
		bufferevent_event_cb ecb;
		void *cbarg = NULL;

		bufferevent_getcb(x->bev, &rcb, &wcb, &ecb, &cbarg);
		if (!cbarg) { /* evhttp gave up on it (out of memory) */
			free(x);
			continue;
		}
		x->evcon = cbarg;
		x->next = C->list;
		if (C->list)
			C->list->prev = x;
		C->list = x;
		C->count++;
		evhttp_connection_set_closecb(x->evcon, on_close, x);
		x->hdr_timer = evtimer_new(C->base, on_hdr_timeout, x);
		if (x->hdr_timer)
			evtimer_add(x->hdr_timer, &C->hdr_deadline);
		if (C->count > C->max) {
			char msg[160];

			C->refused++;
			snprintf(msg, sizeof(msg), "%u connections are open "
				 "(--max-connections): closing a new one", C->max);
			warn(&C->w_cap, msg);
			evhttp_connection_free(x->evcon); /* calls on_close */
		}
	}
	C->npending = 0;
}

void http_conns_track(struct http_conns *C, struct bufferevent *bev)
{
	struct conn *x;

	C->backoff = 0; /* accept works again */
	if (C->npending == C->cap_pending) {
		size_t n = C->cap_pending ? 2 * C->cap_pending : 16;
		struct conn **p = realloc(C->pending, n * sizeof(*p));

		if (!p)
			return;
		C->pending = p;
		C->cap_pending = n;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return;
	x->C = C;
	x->bev = bev;
	evbuffer_add_cb(bufferevent_get_input(bev), on_input, x);
	C->pending[C->npending++] = x;
	if (C->npending == 1)
		event_active(C->reg_ev, EV_READ, 0);
}

/* ---- accept errors ---- */

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct http_conns *C = arg;

	(void)fd;
	(void)what;
	if (C->listener)
		evconnlistener_enable(C->listener);
}

/* The listener's error callback gets evhttp's argument, not ours, and
 * libevent 2.1 has no other place for it: the one service of the process
 * (loop thread only; set by http_conns_watch_listener). */
static struct http_conns *watching;

static void on_accept_error(struct evconnlistener *l, void *arg)
{
	struct http_conns *C = watching;
	int e = EVUTIL_SOCKET_ERROR();
	struct timeval tv;
	char msg[200];

	(void)arg;
	if (!C)
		return;

	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
		snprintf(msg, sizeof(msg), "accept: %s", strerror(e));
		warn(&C->w_accept, msg);
		return;
	}
	/* out of descriptors: stop accepting for a while, longer each time
	 * in a row, so the loop serves the open connections meanwhile */
	C->backoff = C->backoff > 0 ? C->backoff * 2 : 0.01;
	if (C->backoff > 1)
		C->backoff = 1;
	evconnlistener_disable(l);
	tv.tv_sec = (time_t)C->backoff;
	tv.tv_usec = (suseconds_t)((C->backoff - (double)tv.tv_sec) * 1e6);
	event_add(C->resume_ev, &tv);
	snprintf(msg, sizeof(msg), "accept: %s (%u connections open): new "
		 "connections wait up to %.0f ms", strerror(e), C->count,
		 C->backoff * 1e3);
	warn(&C->w_accept, msg);
}

void http_conns_watch_listener(struct http_conns *C, struct evconnlistener *l)
{
	C->listener = l;
	watching = l ? C : NULL;
	if (l)
		evconnlistener_set_error_cb(l, on_accept_error);
}

void http_conns_set_closecb(struct http_conns *C,
			    struct evhttp_connection *evcon,
			    void (*cb)(struct evhttp_connection *, void *),
			    void *arg)
{
	for (struct conn *x = C->list; x; x = x->next)
		if (x->evcon == evcon) {
			x->cb = cb;
			x->cb_arg = arg;
			return;
		}
	evhttp_connection_set_closecb(evcon, cb, arg); /* not tracked */
}

int http_conns_take_oversize(struct http_conns *C, struct evbuffer *out)
{
	if (!C->oversize || bufferevent_get_output(C->oversize) != out)
		return 0;
	C->oversize = NULL;
	return 1;
}

int http_conns_take_bad_chunk(struct http_conns *C, struct evbuffer *out)
{
	if (!C->bad_chunk || bufferevent_get_output(C->bad_chunk) != out)
		return 0;
	C->bad_chunk = NULL;
	return 1;
}

void http_conns_streaming(struct http_conns *C, struct evhttp_connection *evcon)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);

	if (bev)
		bufferevent_set_timeouts(bev, NULL, &C->hdr_deadline);
}

unsigned http_conns_count(const struct http_conns *C)
{
	return C->count;
}

uint64_t http_conns_refused(const struct http_conns *C)
{
	return C->refused;
}

int http_conns_create(struct http_conns **out, struct event_base *base,
		      unsigned max, uint64_t max_body, double header_timeout,
		      struct parsa_err *err)
{
	struct http_conns *C = calloc(1, sizeof(*C));

	*out = NULL;
	if (!C)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	C->base = base;
	C->max = max ? max : 1;
	C->max_body = max_body;
	C->hdr_deadline.tv_sec = (time_t)header_timeout;
	C->hdr_deadline.tv_usec = (suseconds_t)((header_timeout -
		(double)C->hdr_deadline.tv_sec) * 1e6);
	C->reg_ev = event_new(base, -1, 0, on_register, C);
	C->resume_ev = evtimer_new(base, on_resume, C);
	if (!C->reg_ev || !C->resume_ev) {
		http_conns_destroy(C);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	*out = C;
	return 0;
}

void http_conns_destroy(struct http_conns *C)
{
	if (!C)
		return;
	if (watching == C)
		watching = NULL;
	/* evhttp_free has closed every registered connection (on_close) */
	while (C->list) {
		struct conn *x = C->list;

		C->list = x->next;
		if (x->hdr_timer)
			event_free(x->hdr_timer);
		free(x);
	}
	for (size_t i = 0; i < C->npending; i++)
		free(C->pending[i]);
	free(C->pending);
	if (C->reg_ev)
		event_free(C->reg_ev);
	if (C->resume_ev)
		event_free(C->resume_ev);
	free(C);
}
