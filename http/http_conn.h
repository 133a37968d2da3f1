/*
 * http_conn: the service's defences against idle, slow and hostile
 * clients, at the connection level (libevent 2.1's evhttp has none of
 * these itself):
 *
 *  - a cap on open connections: a connection accepted beyond `max` is
 *    closed at once (before it costs more than its descriptor);
 *  - a connection that has not sent its first request's headers within
 *    header_timeout seconds in all is closed (one trickling bytes to stay
 *    under evhttp's inactivity timeout: a "slowloris");
 *  - accept paused, and retried with a growing back-off (10 ms .. 1 s),
 *    when accept() fails for want of descriptors or memory (EMFILE,
 *    ENFILE, ENOBUFS, ENOMEM): no busy loop, and one warning per 5 s at
 *    most, with the count of the ones left out;
 *  - a first request whose Content-Length is over `max_body` by more than
 *    16 MiB gets its 413 at once (without it evhttp's lingering close
 *    would read, and throw away, the whole announced body before
 *    answering);
 *  - the first request's chunked body is followed, so that a malformed
 *    chunk size is told from a body too large (evhttp answers 413 for
 *    both);
 *  - an upload's body (POST /v1/datasets) is hidden from evhttp, which
 *    would hold it whole in memory, and left in the connection for the
 *    handler to stream to disk (http_conns_diverted, http_upload.h).
 *
 * Every accepted connection is tracked from the evhttp bufferevent
 * callback (http_conns_track) until evhttp frees it; code that wants its
 * own close callback on a connection sets it with http_conns_set_closecb
 * (never evhttp_connection_set_closecb, which would drop the tracking).
 * Loop thread only.
 */
#ifndef HTTP_CONN_H
#define HTTP_CONN_H

#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "parsa_err.h"

struct http_conns;

/* *out is new (http_conns_destroy after evhttp_free).  max >= 1
 * connections at once; max_body: larger announced bodies get 400 at
 * once; header_timeout: seconds a connection may take to send its first
 * request's headers in all.  0 or PARSA_ENOMEM. */
int http_conns_create(struct http_conns **out, struct event_base *base,
		      unsigned max, uint64_t max_body, double header_timeout,
		      struct parsa_err *err);

/* NULL: no-op.  Call after evhttp_free (which closes every connection). */
void http_conns_destroy(struct http_conns *C);

/* From evhttp's bufferevent callback: track the new connection of bev. */
void http_conns_track(struct http_conns *C, struct bufferevent *bev);

/* Pause and back off the listener on descriptor exhaustion. */
void http_conns_watch_listener(struct http_conns *C, struct evconnlistener *l);

/* The close callback of a tracked connection (cb NULL: none). */
void http_conns_set_closecb(struct http_conns *C,
			    struct evhttp_connection *evcon,
			    void (*cb)(struct evhttp_connection *, void *),
			    void *arg);

/* 1 if out is the output of the connection whose Content-Length was
 * refused last (its 400 page then becomes a 413); clears the mark. */
int http_conns_take_oversize(struct http_conns *C, struct evbuffer *out);

/* 1 if out is the output of the connection whose chunked body had a
 * malformed chunk size (evhttp's 413 page then becomes a 400); clears
 * the mark. */
int http_conns_take_bad_chunk(struct http_conns *C, struct evbuffer *out);

/* A long-lived response starts on evcon (an event stream): no read
 * timeout there (evhttp keeps reading only to see the client close, and
 * re-arms the read timeout at every write: a stream quieter than
 * --read-timeout would be cut); the write timeout stays. */
void http_conns_streaming(struct http_conns *C, struct evhttp_connection *evcon);

/* The request just dispatched on evcon is an upload (POST /v1/datasets)
 * whose body the connection tracker held back from evhttp (the body is
 * still to be read from the connection, http_upload.h): 1, with
 * *chunked and *length (its Content-Length; 0 when chunked); once per
 * request.  0 for any other request (its body, if any, is evhttp's).
 * The connection is not followed further (it must close after the reply)
 * unless http_conns_resume says its body has been read whole.  Call it for
 * every request the handler gets, in order (it counts them). */
int http_conns_diverted(struct http_conns *C, struct evhttp_connection *evcon,
			int *chunked, uint64_t *length);

/* The held-back body has been read to its end: follow the connection
 * again from what is left in its input (the next requests). */
void http_conns_resume(struct http_conns *C, struct evhttp_connection *evcon);

/* Connections open now. */
unsigned http_conns_count(const struct http_conns *C);

/* Connections closed at once for being over the cap, since the start. */
uint64_t http_conns_refused(const struct http_conns *C);

#endif /* HTTP_CONN_H */
