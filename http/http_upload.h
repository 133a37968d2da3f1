/*
 * http_upload: an upload's body streamed from its connection into a file
 * as it arrives, so the memory an upload takes stays bounded (a few
 * socket reads) whatever its size.  The body is the one the connection
 * tracker held back from evhttp (http_conns_diverted, http_conn.h): a
 * Content-Length body or a chunked one, decoded here.
 *
 * While it runs the connection's bufferevent callbacks are the upload's
 * (evhttp's error callback is still called, through it, on a timeout or
 * the client closing: evhttp then closes the connection, whose close
 * callback must free the upload); at the end evhttp's write and error
 * callbacks are back and reading is off: the reply follows.  After a
 * body read to its end evhttp's read callback is back too (the connection
 * may go on: http_conns_resume); after any other end the connection must
 * close after the reply (Connection: close).  Loop thread only.
 */
#ifndef HTTP_UPLOAD_H
#define HTTP_UPLOAD_H

#include <stdint.h>

#include <event2/http.h>

enum http_upload_end {
	HTTP_UPLOAD_DONE = 0,   /* the whole body is in the file */
	HTTP_UPLOAD_TOO_LARGE,  /* over max: read and dropped (or cut) */
	HTTP_UPLOAD_REFUSED,    /* refused (opts.refuse, or more() said so):
				 * read and dropped (or cut) */
	HTTP_UPLOAD_BAD_CHUNK,  /* malformed chunked framing */
	HTTP_UPLOAD_IO,         /* the file could not be written */
};

struct http_upload_opts {
	struct evhttp_request *req;
	int fd;                 /* the body goes here (write(2)); -1: into
				 * the request's input buffer (a small body
				 * its handler reads as evhttp's) */
	int chunked;            /* else length bytes */
	uint64_t length;
	uint64_t max;           /* body bytes at most */
	uint64_t drop_max;      /* after a refusal, bytes read and dropped
				 * at most (so the client, still sending,
				 * gets to read the reply); then it ends */
	int refuse;             /* refused from the start */
	int send_continue;      /* answer "100 Continue" first */
	/* before n more bytes are stored (may be NULL): 0 to go on, else
	 * they and the rest are refused */
	int (*more)(void *arg, uint64_t n);
	/* the end (once; not after a close): bytes stored, and for IO the
	 * errno.  The upload may be freed here. */
	void (*done)(void *arg, enum http_upload_end end, uint64_t bytes,
		     int err);
	void *arg;
};

struct http_upload;

/* Take the connection of o->req over and start reading (done may be
 * called before this returns, with *out set).  0, or -1 when the
 * connection is gone or out of memory (nothing taken over). */
int http_upload_start(struct http_upload **out, const struct http_upload_opts *o);

/* Free (from done, or from the connection's close callback: then the
 * connection is not touched).  NULL: no-op. */
void http_upload_free(struct http_upload *u);

#endif /* HTTP_UPLOAD_H */
