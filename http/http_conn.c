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
	/* the request stream, followed byte by byte (every request, not
	 * just the first): an upload's body is held back from evhttp */
	int t_state;              /* T_* below */
	int t_first;              /* the next complete line is a request line */
	int t_upload;             /* this request is POST /v1/datasets */
	int t_div;                /* its Content-Length/chunked was hidden */
	int t_chunked;            /* a non-upload chunked body follows */
	uint64_t t_clen;          /* its Content-Length (0: none) */
	uint64_t t_skip;          /* T_SKIP: body bytes still to pass */
	size_t t_len;             /* the current line's length so far */
	unsigned nreq;            /* requests whose headers ended */
	int div_pending;          /* a request's body is held: */
	unsigned div_at;          /* that request's number (0: the first) */
	unsigned ndisp;           /* requests handed to the handler */
	int div_chunked;
	uint64_t div_len;
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


/* ---- the request stream: upload bodies held back from evhttp ----
 *
 * evhttp 2.1 reads a whole request body into memory before its handler
 * runs.  For an upload (POST /v1/datasets) the tracker hides the body
 * from evhttp as the header lines arrive, before evhttp parses them: a
 * Content-Length's digits become zeros, a "Transfer-Encoding: chunked"
 * becomes "xhunked" (same lengths, in place), so evhttp sees a request
 * without a body and dispatches it at once; the body is still in the
 * socket, for the handler to stream to disk (http_upload.h), told by
 * http_conns_diverted.  Such a connection is closed after its reply (the
 * handler sets Connection: close), so the tracker stops there.  Other
 * requests' bodies are skipped by their Content-Length; after a chunked
 * non-upload body the tracker stops (later uploads on that connection
 * come whole, as before).
 */
enum { T_LINE = 0, T_SKIP, T_HELD, T_OFF };

/* "POST /v1/datasets" with nothing but '/', '?...' after (len bytes). */
static int is_upload_line(const char *p, size_t len)
{
	static const char m[] = "POST /v1/datasets";
	size_t n = sizeof(m) - 1;

	if (len < n + 1 || memcmp(p, m, n) != 0)
		return 0;
	if (p[n] == '/')
		n++;
	return p[n] == ' ' || p[n] == '?';
}

/* The value of header key in line p[0..len): its offset, else -1. */
static long header_value(const char *p, size_t len, const char *key)
{
	size_t i = strlen(key);

	if (len < i || strncasecmp(p, key, i) != 0)
		return -1;
	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	return (long)i;
}

/* A complete line at buf[at .. at+len) (no EOL); the whole buffer is
 * pulled up at buf.  1 when the headers ended with it (the rest is body). */
static int track_line(struct conn *x, unsigned char *buf, size_t at, size_t len)
{
	char *p = (char *)buf + at;
	long v;

	if (len && p[len - 1] == '\r')
		len--;
	if (x->t_first) {
		if (len == 0)
			return 0; /* blank lines before a request */
		x->t_first = 0;
		x->t_upload = is_upload_line(p, len);
		x->t_div = x->t_chunked = 0;
		x->t_clen = 0;
		x->div_chunked = 0;
		x->div_len = 0;
		return 0;
	}
	if (len == 0)
		return 1;
	if ((v = header_value(p, len, "content-length:")) >= 0) {
		uint64_t n = 0;
		size_t d;

		if (absurd_length(p, len, x->C->max_body) >= 0)
			return 0; /* the first check's 413 */
		for (d = (size_t)v; d < len && p[d] >= '0' && p[d] <= '9'; d++)
			n = n * 10 + (uint64_t)(p[d] - '0');
		x->t_clen = n;
		if (x->t_upload && n > 0 && !x->div_chunked) {
			memset(p + v, '0', d - (size_t)v);
			x->t_div = 1;
			x->div_len = n;
		}
	} else if (is_chunked_header(p, len)) {
		if (x->t_upload) {
			char *c = p + header_value(p, len, "transfer-encoding:");

			*c = 'x'; /* "xhunked": no body for evhttp */
			x->t_div = 1;
			x->div_chunked = 1;
			x->div_len = 0;
		} else {
			x->t_chunked = 1;
		}
	}
	return 0;
}

/* The headers of a request ended; the bytes after are its body. */
static void track_headers_end(struct conn *x)
{
	x->nreq++;
	x->t_first = 1;
	if (x->t_div) {
		x->div_pending = 1;
		x->div_at = x->nreq - 1;
		x->t_state = T_HELD;
	} else if (x->t_chunked) {
		x->t_state = T_OFF;
	} else if (x->t_clen > 0) {
		x->t_skip = x->t_clen;
		x->t_state = T_SKIP;
	}
}

/* Follow the new bytes buf[from..len) of the stream (buf: the whole
 * input, pulled up); returns where the first request's headers ended
 * (for the chunk check), or len. */
static size_t track(struct conn *x, unsigned char *buf, size_t from, size_t len)
{
	size_t first_end = len;

	for (size_t i = from; i < len; ) {
		if (x->t_state == T_SKIP) {
			size_t k = len - i < x->t_skip ? len - i : (size_t)x->t_skip;

			x->t_skip -= k;
			i += k;
			if (x->t_skip == 0)
				x->t_state = T_LINE;
			continue;
		}
		if (x->t_state != T_LINE)
			break;
		if (buf[i] != '\n') {
			x->t_len++;
			i++;
			continue;
		}
		if (x->t_len > i) { /* not in the buffer any more: lost */
			x->t_state = T_OFF;
			break;
		}
		{
			size_t at = i - x->t_len, n = x->t_len;
			unsigned nreq = x->nreq;

			x->t_len = 0;
			i++;
			if (track_line(x, buf, at, n)) {
				track_headers_end(x);
				if (nreq == 0)
					first_end = i;
			}
		}
	}
	return first_end;
}

void http_conns_resume(struct http_conns *C, struct evhttp_connection *evcon)
{
	for (struct conn *x = C->list; x; x = x->next)
		if (x->evcon == evcon) {
			struct evbuffer *in = bufferevent_get_input(x->bev);
			size_t len = evbuffer_get_length(in);
			unsigned char *p;

			x->t_state = T_LINE;
			x->t_first = 1;
			x->t_len = 0;
			/* what came after the body: not seen yet */
			if (len && (p = evbuffer_pullup(in, (ev_ssize_t)len)))
				track(x, p, 0, len);
			else if (len)
				x->t_state = T_OFF;
			return;
		}
}

int http_conns_diverted(struct http_conns *C, struct evhttp_connection *evcon,
			int *chunked, uint64_t *length)
{
	for (struct conn *x = C->list; x; x = x->next)
		if (x->evcon == evcon) {
			/* pipelined requests: the tracker may be ahead */
			unsigned n = x->ndisp++;

			if (!x->div_pending || n != x->div_at)
				return 0;
			x->div_pending = 0;
			x->t_state = T_OFF; /* until http_conns_resume */
			*chunked = x->div_chunked;
			*length = x->div_len;
			return 1;
		}
	return 0;
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
	size_t len = evbuffer_get_length(buf), start = 0, n, from, hend = 0;
	unsigned char *p;

	if (info->n_added == 0 || len == 0)
		return;
	n = info->n_added < len ? info->n_added : len;
	from = len - n;
	if (x->t_state != T_LINE && x->t_state != T_SKIP && x->chunk_state != 1)
		return; /* an upload's body, or no longer followed */
	if (x->hdr_done) {
		if (x->t_state == T_SKIP && x->chunk_state != 1) {
			/* a body evhttp reads: count it without looking */
			uint64_t k = n < x->t_skip ? n : x->t_skip;

			x->t_skip -= k;
			from += (size_t)k;
			if (x->t_skip > 0 || from == len) {
				if (x->t_skip == 0)
					x->t_state = T_LINE;
				return;
			}
			x->t_state = T_LINE;
		}
		p = evbuffer_pullup(buf, (ev_ssize_t)len);
		if (!p)
			return;
		if (x->chunk_state == 1)
			follow_chunks(x, p + from, len - from);
		else
			track(x, p, from, len);
		return;
	}
	if (len > 65536 + 4) { /* longer than evhttp allows headers to be */
		len = 65536 + 4;
		x->t_state = T_OFF; /* (not followed: uploads come whole) */
	}
	p = evbuffer_pullup(buf, (ev_ssize_t)len);
	if (!p)
		return;
	/* the first request's headers: the absurd length check, then the
	 * stream (which hides an upload's body) */
	for (size_t i = 0; i < len; i++) {
		size_t end;
		long at;

		if (p[i] != '\n')
			continue;
		end = i > start && p[i - 1] == '\r' ? i - 1 : i;
		if (end == start) { /* the empty line: headers done */
			hend = i + 1;
			break;
		}
		if (is_chunked_header((const char *)p + start, end - start))
			x->chunk_state = 1;
		at = absurd_length((const char *)p + start, end - start,
				   x->C->max_body);
		if (at >= 0 && p[start + (size_t)at] != 'x') {
			p[start + (size_t)at] = 'x';
			x->C->oversize = x->bev;
			warn(&x->C->w_length, "refused a request announcing a body larger "
			     "than --max-upload (413 at once)");
		}
		start = i + 1;
	}
	if (x->t_state != T_OFF) { /* followed: it says where they ended */
		hend = track(x, p, from, len);
		hend = x->nreq > 0 ? hend : 0;
	}
	if (hend > 0) {
		x->hdr_done = 1;
		if (x->hdr_timer)
			event_del(x->hdr_timer);
		if (x->t_div)
			x->chunk_state = 0; /* evhttp sees no body */
		if (x->chunk_state == 1)
			follow_chunks(x, p + hend, len - hend);
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
	x->t_first = 1;
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
