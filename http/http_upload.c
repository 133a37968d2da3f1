/*
 * http_upload: an upload's body from its connection to a file as it
 * arrives (see http_upload.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "http_upload.h"

enum { S_DATA = 0, S_SIZE, S_TRAILER };

/* A chunk-size line longer than this is malformed. */
#define MAX_SIZE_LINE 1024

struct http_upload {
	struct http_upload_opts o;
	struct bufferevent *bev;
	bufferevent_data_cb rcb, wcb;   /* evhttp's, given back at the end */
	bufferevent_event_cb ecb;
	void *cbarg;
	int state;                      /* S_*; S_DATA for a length body */
	uint64_t left;                  /* bytes of the body / chunk due */
	uint64_t stored;                /* bytes in the file */
	uint64_t dropped;               /* bytes read and thrown away */
	enum http_upload_end drop_end;  /* why (when dropping) */
	int dropping;
	int over;                       /* ended (done called) */
};

/* The end: reading off, the connection's callbacks back to evhttp's (but
 * its read callback only when the body was read to its end: else the
 * connection closes after the reply), then done. */
static void finish(struct http_upload *u, enum http_upload_end end, int err)
{
	bufferevent_disable(u->bev, EV_READ);
	bufferevent_setcb(u->bev, end == HTTP_UPLOAD_DONE ? u->rcb : NULL,
			  u->wcb, u->ecb, u->cbarg);
	u->over = 1;
	u->o.done(u->o.arg, end, u->stored, err);
}

/* Give n bytes at the front of in to the file (or drop them); 0, or -1
 * after finish. */
static int take(struct http_upload *u, struct evbuffer *in, size_t n)
{
	if (!u->dropping) {
		if (u->stored + n > u->o.max) {
			u->dropping = 1;
			u->drop_end = HTTP_UPLOAD_TOO_LARGE;
		} else if (u->o.more && u->o.more(u->o.arg, n)) {
			u->dropping = 1;
			u->drop_end = HTTP_UPLOAD_REFUSED;
		}
	}
	if (u->dropping) {
		evbuffer_drain(in, n);
		u->dropped += n;
		if (u->dropped > u->o.drop_max) {
			finish(u, u->drop_end, 0);
			return -1;
		}
		return 0;
	}
	if (u->o.fd < 0) { /* into the request's input buffer */
		struct evbuffer *b = evhttp_request_get_input_buffer(u->o.req);

		if (evbuffer_remove_buffer(in, b, n) != (int)n) {
			finish(u, HTTP_UPLOAD_IO, ENOMEM);
			return -1;
		}
		u->stored += n;
		return 0;
	}
	while (n > 0) {
		int w = evbuffer_write_atmost(in, u->o.fd, (ev_ssize_t)n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			finish(u, HTTP_UPLOAD_IO, w < 0 ? errno : ENOSPC);
			return -1;
		}
		n -= (size_t)w;
		u->stored += (uint64_t)w;
	}
	return 0;
}

/* A chunk-size line (hex digits, then the end, blanks or ';' and an
 * extension): 0 and *v, or -1. */
static int chunk_size(const char *p, uint64_t *v)
{
	uint64_t x = 0;
	const char *q = p;

	while (*q == ' ' || *q == '\t')
		q++;
	p = q;
	for (; (*q >= '0' && *q <= '9') || ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'f'); q++) {
		unsigned c = (unsigned char)*q;

		if (x >> 59)
			return -1;
		x = x * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	if (q == p || (*q && *q != ' ' && *q != '\t' && *q != ';'))
		return -1;
	*v = x;
	return 0;
}

/* Malformed framing: a body already over its limit (or refused) ends
 * as such, as evhttp's own check would have it. */
static void bad_chunk(struct http_upload *u)
{
	finish(u, u->dropping ? u->drop_end : HTTP_UPLOAD_BAD_CHUNK, 0);
}

/* The body, as far as in holds it; 0, or -1 after finish. */
static int pump(struct http_upload *u)
{
	struct evbuffer *in = bufferevent_get_input(u->bev);

	for (;;) {
		size_t avail = evbuffer_get_length(in), n;
		char *line;

		if (u->state == S_DATA) {
			if (u->left == 0) {
				if (!u->o.chunked)
					break;
				u->state = S_SIZE; /* its CRLF: an empty line */
				continue;
			}
			if (avail == 0)
				return 0;
			n = avail < u->left ? avail : (size_t)u->left;
			if (take(u, in, n))
				return -1;
			u->left -= n;
			continue;
		}
		line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
		if (!line) {
			if (avail > MAX_SIZE_LINE) {
				bad_chunk(u);
				return -1;
			}
			return 0;
		}
		if (u->state == S_SIZE) {
			uint64_t v;

			if (n == 0) { /* the CRLF after a chunk (as evhttp: any
				       * empty line before a size) */
				free(line);
				continue;
			}
			if (chunk_size(line, &v)) {
				free(line);
				bad_chunk(u);
				return -1;
			}
			u->state = v ? S_DATA : S_TRAILER;
			u->left = v;
		} else if (n == 0) { /* S_TRAILER: its end */
			free(line);
			break;
		}
		free(line);
	}
	finish(u, u->dropping ? u->drop_end : HTTP_UPLOAD_DONE, 0);
	return -1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pump(arg);
}

/* A timeout or the client gone: evhttp's own handling (it closes the
 * connection; its close callback frees the upload). */
static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct http_upload *u = arg;
	bufferevent_event_cb ecb = u->ecb;
	void *cbarg = u->cbarg;

	bufferevent_setcb(bev, NULL, u->wcb, u->ecb, u->cbarg);
	if (ecb)
		ecb(bev, what, cbarg);
}

int http_upload_start(struct http_upload **out, const struct http_upload_opts *o)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(o->req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct http_upload *u;

	*out = NULL;
	if (!bev || !(u = calloc(1, sizeof(*u))))
		return -1;
	u->o = *o;
	u->bev = bev;
	bufferevent_getcb(bev, &u->rcb, &u->wcb, &u->ecb, &u->cbarg);
	u->state = o->chunked ? S_SIZE : S_DATA;
	u->left = o->chunked ? 0 : o->length;
	if (o->refuse) {
		u->dropping = 1;
		u->drop_end = HTTP_UPLOAD_REFUSED;
	} else if (!o->chunked && o->length > o->max) {
		u->dropping = 1;
		u->drop_end = HTTP_UPLOAD_TOO_LARGE;
	}
	*out = u;
	/* evhttp's read callback must not run: its connection is "writing"
	 * (the request was dispatched) and would abort on input */
	bufferevent_setcb(bev, on_read, NULL, on_event, u);
	if (o->send_continue) {
		struct evbuffer *out_b = bufferevent_get_output(bev);

		evbuffer_add_printf(out_b, "HTTP/1.1 100 Continue\r\n\r\n");
		bufferevent_enable(bev, EV_WRITE);
	}
	bufferevent_enable(bev, EV_READ);
	pump(u); /* what came with the headers */
	return 0;
}

void http_upload_free(struct http_upload *u)
{
	free(u);
}
