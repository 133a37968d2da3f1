/*
 * http_server: the event loop, request dispatch and the handlers of every
 * endpoint (see http_server.h, README "HTTP service", docs/openapi.yaml).
 *
 * Every reply goes through reply_buf (or the streaming path), which records
 * the route, status and latency in the metrics.  Handlers run on the loop
 * thread only; slow work (reading datasets, partitioning) never does.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>

#include "base_time.h"
#include "part_reader.h"
#include "part_assign.h"
#include "http_conn.h"
#include "http_data.h"
#include "http_events.h"
#include "http_jobs.h"
#include "http_metrics.h"
#include "http_problem.h"
#include "http_route.h"
#include "http_server.h"
#include "http_store.h"
#include "http_ui.h"
#include "http_upload.h"

struct reg_task;
struct waiter;
struct stream;

struct svc {
	struct http_server_opts o;
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	struct event *notify_ev, *sig_term, *sig_int, *tick;
	struct event *retain_ev;     /* periodic retention check */
	struct http_datasets *data;
	struct http_jobs *jobs;
	struct http_metrics *metrics;
	struct http_events *events;  /* GET /v1/jobs/{id}/events */
	struct http_conns *conns;    /* connection cap, accept back-off */
	double flush_until;          /* stop: let closed streams flush */
	char data_dir[PATH_MAX];     /* realpath of --data-dir, "" if none */
	char state_dir[PATH_MAX];    /* realpath of --state-dir */
	pthread_mutex_t mu;          /* done list and loaders */
	struct reg_task *done;       /* finished registrations */
	struct waiter *waiters;      /* long polls: GET /v1/jobs/{id}?wait=S */
	struct stream *streams;      /* placement downloads in progress */
	unsigned loaders;            /* registration threads alive */
	uint64_t uploading;          /* upload bytes being received (loop
				      * thread): --max-upload-total caps it */
	int stopping;                /* a stop signal came */
	int interrupted;             /* running jobs asked to stop */
	double stop_deadline;
};

/* A request being answered. */
struct rctx {
	struct svc *s;
	struct evhttp_request *req;
	struct http_route r;
	double t0;
	int div;                 /* its body is still in the connection
				  * (http_conns_diverted) */
	int div_chunked;
	uint64_t div_len;
};

/* ---- replies ---- */

static void reply_buf(struct rctx *c, int status, const char *ctype,
		      struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(c->req);

	if (ctype)
		evhttp_add_header(h, "Content-Type", ctype);
	if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD && body) {
		/* libevent 2.1 would send the body: announce its length only */
		char n[32];

		snprintf(n, sizeof(n), "%zu", evbuffer_get_length(body));
		evhttp_add_header(h, "Content-Length", n);
		evbuffer_drain(body, evbuffer_get_length(body));
	}
	evhttp_send_reply(c->req, status, http_status_phrase(status), body);
	http_metrics_request(c->s->metrics, c->r.id, status, base_now() - c->t0);
}

/* Reply with j (stolen; NULL = out of memory -> 503). */
static void reply_json_ct(struct rctx *c, int status, json_t *j,
			  const char *ctype)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	struct evbuffer *b = evhttp_request_get_output_buffer(c->req);

	json_decref(j);
	if (!s) {
		evbuffer_add_printf(b, "{\"type\":\"urn:parsa:problem:out-of-memory\","
				    "\"title\":\"Service Unavailable\",\"status\":503,"
				    "\"detail\":\"out of memory\"}");
		reply_buf(c, 503, "application/problem+json", b);
		return;
	}
	evbuffer_add(b, s, strlen(s));
	evbuffer_add(b, "\n", 1);
	free(s);
	reply_buf(c, status, ctype, b);
}

static void reply_json(struct rctx *c, int status, json_t *j)
{
	reply_json_ct(c, status, j, "application/json");
}

/* problem+json; extra (stolen, may be NULL) is merged into the body. */
static void problem_x(struct rctx *c, int status, const char *slug,
		      json_t *extra, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void problem_x(struct rctx *c, int status, const char *slug,
		      json_t *extra, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;
	json_t *j;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	j = http_problem_new(status, slug, detail);
	if (j && extra)
		json_object_update(j, extra);
	json_decref(extra);
	if (j)
		json_object_set_new(j, "instance",
				    http_json_text(evhttp_request_get_uri(c->req)));
	reply_json_ct(c, status, j, "application/problem+json");
}

#define problem(c, status, slug, ...) problem_x(c, status, slug, NULL, __VA_ARGS__)

/* 422 naming the offending field. */
static void invalid(struct rctx *c, const char *field, const char *msg)
{
	problem_x(c, 422, "invalid-parameter",
		  json_pack("{s:o}", "field", http_json_text(field)), "%s", msg);
}

/* 507 for a write the full disk refused: the detail says so without
 * the server's file names (the full message goes to stderr). */
static void insufficient_storage(struct rctx *c)
{
	problem(c, 507, "insufficient-storage", "the server's disk is full: "
		"nothing was stored; retry once space is freed (or delete "
		"datasets and jobs)");
}

static int disk_full(struct rctx *c, const struct parsa_err *e)
{
	if (!http_store_full(e))
		return 0;
	fprintf(stderr, "parsa serve: %s: %s\n", evhttp_request_get_uri(c->req), e->msg);
	insufficient_storage(c);
	return 1;
}

/* The error of a parsa call: status from the one table, with position. */
static void problem_err(struct rctx *c, int code, const struct parsa_err *e)
{
	int status = http_status_of_parsa(code);
	json_t *x;

	if (disk_full(c, e))
		return;
	x = json_object();

	if (x && e->line)
		json_object_set_new(x, "line", json_integer((json_int_t)e->line));
	if (x && e->col)
		json_object_set_new(x, "column", json_integer((json_int_t)e->col));
	problem_x(c, status, code == PARSA_EPARSE ? "dataset-parse-error" : NULL,
		  x, "%s", e->msg[0] ? e->msg : parsa_strerror(code));
}

/* ---- request helpers ---- */

static unsigned method_bit(enum evhttp_cmd_type t)
{
	switch (t) {
	case EVHTTP_REQ_GET: return HTTP_M_GET;
	case EVHTTP_REQ_POST: return HTTP_M_POST;
	case EVHTTP_REQ_DELETE: return HTTP_M_DELETE;
	case EVHTTP_REQ_HEAD: return HTTP_M_HEAD;
	default: return HTTP_M_OTHER;
	}
}

/* The body as JSON; on failure replies 400 (with line/column) and returns
 * NULL. */
static json_t *body_json(struct rctx *c)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
	size_t len = evbuffer_get_length(in);
	const char *p = len ? (const char *)evbuffer_pullup(in, -1) : "";
	json_error_t je;
	json_t *j;

	if (len == 0) {
		problem(c, 400, "malformed-json", "the request body is empty; "
			"a JSON object was expected");
		return NULL;
	}
	j = json_loadb(p, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		problem_x(c, 400, "malformed-json",
			  json_pack("{s:i, s:i}", "line", je.line, "column", je.column),
			  "malformed JSON at line %d, column %d: %s", je.line,
			  je.column, je.text);
	return j;
}

/* A query parameter (copied into buf) or NULL. */
static const char *query_param(struct rctx *c, const char *key, char *buf,
			       size_t len)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(c->req);
	const char *q = u ? evhttp_uri_get_query(u) : NULL;
	struct evkeyvalq kv;
	const char *v;

	if (!q)
		return NULL;
	if (evhttp_parse_query_str(q, &kv) != 0) {
		evhttp_clear_headers(&kv);
		return NULL;
	}
	v = evhttp_find_header(&kv, key);
	if (v)
		snprintf(buf, len, "%s", v);
	evhttp_clear_headers(&kv);
	return v ? buf : NULL;
}

/* Constant-time (in the token's length) bearer check. */
static int authorized(struct svc *s, struct evhttp_request *req)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req),
					   "Authorization");
	const char *t = s->o.token;
	size_t n = strlen(t), m;
	unsigned char diff = 0;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	h += 7;
	m = strlen(h);
	diff = (unsigned char)(m != n);
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)t[i] ^ (unsigned char)(i < m ? h[i] : 0);
	return diff == 0;
}

/* ---- datasets ---- */

/* Registrations (dataset reads) running at once; more get 503. */
#define MAX_LOADERS 4

struct reg_task {
	struct svc *s;
	struct rctx c;
	char id[HTTP_ID_MAX];
	char *name;
	char path[PATH_MAX + 64];
	int uploaded;
	struct evbuffer *body;     /* upload: the file (owned) */
	struct http_store_file file; /* streamed upload: its temporary file */
	int file_open;
	uint64_t reserved;         /* bytes counted in svc.uploading */
	struct http_upload *up;    /* streamed upload: while receiving */
	enum part_format format;
	const char *format_from;   /* "request" or "name" (AUTO: content) */
	enum part_graph_mode graph;
	int rc;
	int input_fault;           /* rc is the dataset's fault (422) */
	struct parsa_err err;
	struct reg_task *next;
};

static int write_upload(struct reg_task *t)
{
	struct http_store_file f;
	struct evbuffer_iovec v[64];
	int rc = http_store_begin(&f, t->path, &t->err);

	while (rc == 0 && evbuffer_get_length(t->body) > 0) {
		int n = evbuffer_peek(t->body, -1, NULL, v, 64);
		size_t done = 0;

		for (int i = 0; rc == 0 && i < n && i < 64; i++) {
			rc = http_store_write(&f, v[i].iov_base, v[i].iov_len, &t->err);
			done += v[i].iov_len;
		}
		evbuffer_drain(t->body, done);
	}
	if (rc == 0)
		return http_store_commit(&f, &t->err);
	http_store_abort(&f);
	return rc;
}

static void *reg_main(void *arg)
{
	struct reg_task *t = arg;
	struct svc *s = t->s;

	/* batch work: yield to the event loop (as the job threads do) */
	if (s->o.nice &&
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), s->o.nice) != 0)
		errno = 0;
	if (t->body)
		t->rc = write_upload(t);
	else if (t->file_open) /* streamed: fsync, rename */
		t->rc = http_store_commit(&t->file, &t->err);
	t->file_open = 0;
	if (t->body) {
		evbuffer_free(t->body);
		t->body = NULL;
	}
	if (t->rc == 0)
		t->rc = http_datasets_register(s->data, t->id, t->name, t->path,
					       t->uploaded, t->format,
					       t->format_from, t->graph,
					       &t->input_fault, &t->err);
	if (t->rc && t->uploaded)
		unlink(t->path);
	pthread_mutex_lock(&s->mu);
	t->next = s->done;
	s->done = t;
	s->loaders--;
	pthread_mutex_unlock(&s->mu);
	event_active(s->notify_ev, EV_READ, 0);
	return NULL;
}

static void reg_free(struct reg_task *t)
{
	if (t->file_open)
		http_store_abort(&t->file);
	if (t->reserved) {
		t->s->uploading -= t->reserved;
		t->reserved = 0;
	}
	http_upload_free(t->up);
	if (t->body)
		evbuffer_free(t->body);
	free(t->name);
	free(t);
}

static void start_register(struct reg_task *t)
{
	pthread_t th;
	pthread_attr_t at;
	unsigned busy;

	pthread_mutex_lock(&t->s->mu);
	busy = t->s->loaders;
	pthread_mutex_unlock(&t->s->mu);
	if (busy >= MAX_LOADERS) {
		evhttp_add_header(evhttp_request_get_output_headers(t->c.req),
				  "Retry-After", "5");
		problem(&t->c, 503, "busy", "%u datasets are being read already; "
			"retry later", busy);
		reg_free(t);
		return;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&t->s->mu);
	t->s->loaders++;
	pthread_mutex_unlock(&t->s->mu);
	if (pthread_create(&th, &at, reg_main, t) != 0) {
		pthread_mutex_lock(&t->s->mu);
		t->s->loaders--;
		pthread_mutex_unlock(&t->s->mu);
		problem(&t->c, 503, NULL, "cannot start a thread to read the dataset");
		reg_free(t);
	}
	pthread_attr_destroy(&at);
}

/* msg with every occurrence of from replaced by to (in place, cut to
 * the buffer). */
static void replace_all(char *msg, size_t size, const char *from, const char *to)
{
	char out[sizeof(((struct parsa_err *)0)->msg)];
	size_t n = strlen(from), o = 0;
	const char *p = msg, *hit;

	if (!n || size > sizeof(out))
		return;
	while ((hit = strstr(p, from)) != NULL) {
		o += (size_t)snprintf(out + o, o < sizeof(out) ? sizeof(out) - o : 0,
				      "%.*s%s", (int)(hit - p), p, to);
		if (o >= sizeof(out))
			break;
		p = hit + n;
	}
	if (o < sizeof(out))
		snprintf(out + o, sizeof(out) - o, "%s", p);
	snprintf(msg, size, "%s", out);
}

/* A failed registration: 422 when the file was at fault (unreadable,
 * malformed, truncated, empty), naming the dataset as the client gave it
 * (the upload's name or the path as given, never the server's files),
 * with the line and column of a parse error; else the server's status. */
static void reg_problem(struct reg_task *t)
{
	json_t *x = json_object();
	int status = http_status_of_parsa(t->rc);
	const char *slug = t->rc == PARSA_EPARSE ? "dataset-parse-error" : NULL;

	if (disk_full(&t->c, &t->err)) {
		json_decref(x);
		return;
	}
	replace_all(t->err.msg, sizeof(t->err.msg), t->path, t->name);
	if (t->input_fault && status >= 500 && t->rc != PARSA_ENOMEM) {
		status = 422;
		slug = "dataset-unreadable";
	}
	if (x) {
		json_object_set_new(x, "dataset", json_string(t->name));
		if (t->err.line)
			json_object_set_new(x, "line", json_integer((json_int_t)t->err.line));
		if (t->err.col)
			json_object_set_new(x, "column", json_integer((json_int_t)t->err.col));
	}
	problem_x(&t->c, status, slug, x, "%s",
		  t->err.msg[0] ? t->err.msg : parsa_strerror(t->rc));
}

/* Answer finished registrations (loop thread). */
static void drain_done(struct svc *s)
{
	struct reg_task *t;

	pthread_mutex_lock(&s->mu);
	t = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&s->mu);
	while (t) {
		struct reg_task *next = t->next;

		if (t->rc) {
			reg_problem(t);
		} else {
			const struct http_dataset *d = http_datasets_find(s->data, t->id);
			char loc[128];

			snprintf(loc, sizeof(loc), "/v1/datasets/%s", t->id);
			evhttp_add_header(evhttp_request_get_output_headers(t->c.req),
					  "Location", loc);
			reply_json(&t->c, 201, d ? http_dataset_json(d) : NULL);
		}
		reg_free(t);
		t = next;
	}
}

static struct reg_task *reg_new(struct rctx *c)
{
	struct reg_task *t = calloc(1, sizeof(*t));

	if (!t) {
		problem(c, 503, NULL, "out of memory");
		return NULL;
	}
	t->s = c->s;
	t->c = *c;
	parsa_err_clear(&t->err);
	http_datasets_new_id(c->s->data, t->id);
	return t;
}

/* format/graph strings (NULL = default) into t; 0 or replied 422. */
static int parse_fmt(struct rctx *c, struct reg_task *t, const char *fmt,
		     const char *graph)
{
	if (fmt && part_format_parse(fmt, &t->format)) {
		invalid(c, "format", "format must be libsvm, snap, pairs or auto");
		return -1;
	}
	if (graph && part_graph_mode_parse(graph, &t->graph)) {
		invalid(c, "graph", "graph must be adjacency or edges");
		return -1;
	}
	return 0;
}

static const char *const upload_params[] = {"format", "graph", "name"};

/* A query parameter not in names[0..n): replied 422 naming it, 1. */
static int unknown_query(struct rctx *c, const char *const *names, size_t n)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(c->req);
	const char *q = u ? evhttp_uri_get_query(u) : NULL;
	struct evkeyvalq kv;
	struct evkeyval *e;
	int bad = 0;

	if (!q || !*q)
		return 0;
	if (evhttp_parse_query_str(q, &kv) != 0) {
		evhttp_clear_headers(&kv);
		invalid(c, "(query)", "malformed query string");
		return 1;
	}
	for (e = kv.tqh_first; e; e = e->next.tqe_next) {
		size_t i = 0;

		while (i < n && strcmp(e->key, names[i]))
			i++;
		if (i == n) {
			char msg[300];

			snprintf(msg, sizeof(msg), "unknown parameter '%.200s' "
				 "(an upload takes format, graph and name)", e->key);
			invalid(c, e->key, msg);
			bad = 1;
			break;
		}
	}
	evhttp_clear_headers(&kv);
	return bad;
}

/* ---- uploads streamed to disk ----
 *
 * An upload's body (held back from evhttp by the connection tracker,
 * http_conn.h) goes to its temporary file in the state dir as it
 * arrives (http_upload.h); the registration thread then commits it
 * (fsync, rename) as it did the in-memory body.  svc.uploading counts the
 * bytes of the uploads being received: a Content-Length counts whole
 * from the start, a chunked body as it comes; one that would take it
 * over --max-upload-total gets 503 with Retry-After.
 */

/* Bytes read and dropped at most after a refusal (then the connection
 * is closed): as http_conn's slack for a Content-Length over the limit. */
#define DROP_MAX (16ULL << 20)

/* The largest upload: --max-upload, or --max-upload-total when smaller
 * (a larger one could never fit: 413, not 503). */
static uint64_t upload_limit(const struct svc *s)
{
	return s->o.max_upload < s->o.max_upload_total ? s->o.max_upload
						       : s->o.max_upload_total;
}

static void upload_refused(struct rctx *c, uint64_t want)
{
	evhttp_add_header(evhttp_request_get_output_headers(c->req),
			  "Retry-After", "5");
	problem(c, 503, "uploads-busy", "uploads being received total %llu "
		"bytes; this one (%llu%s bytes) would take them over "
		"--max-upload-total (%llu bytes): retry later",
		(unsigned long long)c->s->uploading, (unsigned long long)want,
		c->div_chunked ? " or more" : "",
		(unsigned long long)c->s->o.max_upload_total);
}

/* The connection of a body being read closed: the client went away or
 * was silent for --read-timeout, and evhttp let go of the request (it is
 * ours to free: the reply does it), unless the whole service is being
 * torn down (then evhttp frees it). */
static void body_interrupted(struct rctx *c)
{
	if (evhttp_request_get_connection(c->req) == NULL)
		problem(c, 400, "body-interrupted", "the connection closed "
			"before the request's body ended");
}

/* Start reading c's held-back body (uo), with closed as the
 * connection's close callback meanwhile; 0, or -1 after a reply. */
static int body_start(struct rctx *c, struct http_upload_opts *uo,
		      struct http_upload **up,
		      void (*closed)(struct evhttp_connection *, void *))
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
	const char *expect = evhttp_find_header(
		evhttp_request_get_input_headers(c->req), "Expect");

	uo->req = c->req;
	uo->chunked = c->div_chunked;
	uo->length = c->div_len;
	uo->drop_max = DROP_MAX;
	uo->send_continue = expect && strcasecmp(expect, "100-continue") == 0;
	http_conns_set_closecb(c->s->conns, evcon, closed, uo->arg);
	if (http_upload_start(up, uo) == 0)
		return 0;
	http_conns_set_closecb(c->s->conns, evcon, NULL, NULL);
	problem(c, 503, NULL, "out of memory");
	return -1;
}

/* A held-back body was read to its end: the connection may go on. */
static void body_whole(struct rctx *c)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);

	evhttp_remove_header(evhttp_request_get_output_headers(c->req),
			     "Connection");
	http_conns_resume(c->s->conns, evcon);
}

static void upload_closed(struct evhttp_connection *evcon, void *arg)
{
	struct reg_task *t = arg;

	(void)evcon;
	body_interrupted(&t->c);
	reg_free(t);
}

static int upload_more(void *arg, uint64_t n)
{
	struct reg_task *t = arg;
	struct svc *s = t->s;

	if (!t->c.div_chunked)
		return 0; /* counted whole at the start */
	if (s->uploading + n > s->o.max_upload_total)
		return 1;
	s->uploading += n;
	t->reserved += n;
	return 0;
}

static void upload_done(void *arg, enum http_upload_end end, uint64_t bytes,
			int e)
{
	struct reg_task *t = arg;
	struct rctx *c = &t->c;
	struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);

	http_conns_set_closecb(c->s->conns, evcon, NULL, NULL);
	http_upload_free(t->up);
	t->up = NULL;
	c->s->uploading -= t->reserved;
	t->reserved = 0;
	if (end == HTTP_UPLOAD_DONE)
		body_whole(c);
	switch (end) {
	case HTTP_UPLOAD_DONE:
		if (bytes == 0) {
			invalid(c, "body", "the upload is empty: send the dataset "
				"file as the request body");
			break;
		}
		start_register(t); /* replies, and frees t */
		return;
	case HTTP_UPLOAD_TOO_LARGE:
		problem(c, 413, NULL, "the request body is larger than the "
			"server's limit of %llu bytes (--max-upload%s)",
			(unsigned long long)upload_limit(c->s),
			upload_limit(c->s) < c->s->o.max_upload
			? "-total: it could never fit" : "");
		break;
	case HTTP_UPLOAD_REFUSED:
		upload_refused(c, c->div_chunked ? bytes : c->div_len);
		break;
	case HTTP_UPLOAD_BAD_CHUNK:
		problem(c, 400, NULL, "malformed HTTP request body (a chunk "
			"size that is not hexadecimal)");
		break;
	case HTTP_UPLOAD_IO:
		if (e == ENOSPC || e == EDQUOT)
			insufficient_storage(c);
		else
			problem(c, 500, NULL, "cannot store the upload: %s",
				strerror(e));
		break;
	}
	reg_free(t);
}

/* Receive a held-back upload into t's temporary file, then register. */
static void upload_stream(struct rctx *c, struct reg_task *t)
{
	struct svc *s = c->s;
	const char *expect = evhttp_find_header(
		evhttp_request_get_input_headers(c->req), "Expect");
	struct http_upload_opts uo;
	unsigned busy;
	int refuse = 0, too_large;

	pthread_mutex_lock(&s->mu);
	busy = s->loaders;
	pthread_mutex_unlock(&s->mu);
	if (busy >= MAX_LOADERS) {
		evhttp_add_header(evhttp_request_get_output_headers(c->req),
				  "Retry-After", "5");
		problem(c, 503, "busy", "%u datasets are being read already; "
			"retry later", busy);
		reg_free(t);
		return;
	}
	/* a Content-Length over --max-upload gets 413 (never fitting),
	 * else it counts whole from now, or is refused */
	too_large = !c->div_chunked && c->div_len > upload_limit(s);
	if (!c->div_chunked && !too_large) {
		if (s->uploading + c->div_len > s->o.max_upload_total) {
			refuse = 1;
		} else {
			s->uploading += c->div_len;
			t->reserved = c->div_len;
		}
	}
	if (refuse && expect && strcasecmp(expect, "100-continue") == 0) {
		upload_refused(c, c->div_len); /* the client waits: no body */
		reg_free(t);
		return;
	}
	/* (dropped bodies are read without a file) */
	if (!refuse && !too_large &&
	    http_store_begin(&t->file, t->path, &t->err)) {
		problem_err(c, PARSA_EIO, &t->err);
		reg_free(t);
		return;
	}
	t->file_open = !refuse && !too_large;
	uo = (struct http_upload_opts){
		.fd = t->file_open ? t->file.fd : -1, .max = upload_limit(s),
		.refuse = refuse, .more = upload_more, .done = upload_done,
		.arg = t,
	};
	if (body_start(c, &uo, &t->up, upload_closed))
		reg_free(t);
	/* else upload_done or upload_closed finishes (maybe already did) */
}

/* A held-back body of a request other than an upload (a registration
 * by path): read into the request's buffer, then handled as usual. */
struct body_task {
	struct rctx c;
	unsigned m;
	int unauth;             /* without the token: dropped, then 401 */
	struct http_upload *up;
};

static void dispatch(struct rctx *c, unsigned m);
static void unauthorized(struct rctx *c);

static void body_closed(struct evhttp_connection *evcon, void *arg)
{
	struct body_task *b = arg;

	(void)evcon;
	body_interrupted(&b->c);
	http_upload_free(b->up);
	free(b);
}

static void body_done(void *arg, enum http_upload_end end, uint64_t bytes,
		      int e)
{
	struct body_task *b = arg;
	struct rctx *c = &b->c;

	(void)bytes;
	http_conns_set_closecb(c->s->conns, evhttp_request_get_connection(c->req),
			       NULL, NULL);
	http_upload_free(b->up);
	b->up = NULL;
	if (end == HTTP_UPLOAD_DONE)
		body_whole(c);
	if (b->unauth)
		unauthorized(c);
	else if (end == HTTP_UPLOAD_DONE)
		dispatch(c, b->m);
	else if (end == HTTP_UPLOAD_TOO_LARGE)
		problem(c, 413, NULL, "the request body is larger than the "
			"server's limit of %llu bytes (--max-upload)",
			(unsigned long long)c->s->o.max_upload);
	else if (end == HTTP_UPLOAD_BAD_CHUNK)
		problem(c, 400, NULL, "malformed HTTP request body (a chunk "
			"size that is not hexadecimal)");
	else
		problem(c, 503, NULL, "cannot read the body: %s", strerror(e));
	free(b);
}

/* Read c's held-back body, then dispatch (unauth: drop it, then 401, so
 * that a client still sending reads the 401 rather than a reset). */
static void read_body_then_dispatch(struct rctx *c, unsigned m, int unauth)
{
	struct body_task *b = calloc(1, sizeof(*b));
	struct http_upload_opts uo;

	if (!b) {
		problem(c, 503, NULL, "out of memory");
		return;
	}
	b->c = *c;
	b->m = m;
	b->unauth = unauth;
	uo = (struct http_upload_opts){
		.fd = -1, .max = c->s->o.max_upload, .refuse = unauth,
		.done = body_done, .arg = b,
	};
	if (body_start(c, &uo, &b->up, body_closed))
		free(b);
}

static void datasets_upload(struct rctx *c)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(c->req);
	char fmt[32], graph[32], name[256];
	const char *f = query_param(c, "format", fmt, sizeof(fmt));
	const char *g = query_param(c, "graph", graph, sizeof(graph));
	const char *n = query_param(c, "name", name, sizeof(name));
	struct reg_task *t;

	if (unknown_query(c, upload_params, 3))
		return;
	if (n && !http_utf8_valid(n)) {
		invalid(c, "name", "name must be UTF-8 text");
		return;
	}
	if (!c->div && evbuffer_get_length(in) == 0) {
		invalid(c, "body", "the upload is empty: send the dataset file "
			"as the request body (or JSON {\"path\": ...} with "
			"Content-Type: application/json)");
		return;
	}
	if (!(t = reg_new(c)))
		return;
	if (parse_fmt(c, t, f, g)) {
		reg_free(t);
		return;
	}
	t->format_from = "request";
	if (!f && n) {
		t->format = part_format_guess(n);
		t->format_from = "name";
	}
	t->name = strdup(n ? n : "upload");
	t->uploaded = 1;
	http_datasets_upload_path(c->s->data, t->id, t->path, sizeof(t->path));
	if (!t->name) {
		problem(c, 503, NULL, "out of memory");
		reg_free(t);
		return;
	}
	if (c->div) {
		upload_stream(c, t);
		return;
	}
	/* a body evhttp read whole (an upload on a connection after a
	 * chunked request): it counts while it is written */
	if (c->s->uploading + evbuffer_get_length(in) > c->s->o.max_upload_total) {
		upload_refused(c, evbuffer_get_length(in));
		reg_free(t);
		return;
	}
	t->reserved = evbuffer_get_length(in);
	c->s->uploading += t->reserved;
	t->body = evbuffer_new();
	if (!t->name || !t->body || evbuffer_add_buffer(t->body, in) != 0) {
		problem(c, 503, NULL, "out of memory");
		reg_free(t);
		return;
	}
	start_register(t);
}

/* Resolve a path inside --data-dir into t->path; 0 or replied. */
static int resolve_path(struct rctx *c, struct reg_task *t, const char *p)
{
	char joined[PATH_MAX * 2], real[PATH_MAX];
	size_t n = strlen(c->s->data_dir);
	struct stat sb;

	if (!c->s->data_dir[0]) {
		invalid(c, "path", "registering a dataset by path needs the "
			"server's --data-dir; upload the file instead");
		return -1;
	}
	if (p[0] == '/')
		snprintf(joined, sizeof(joined), "%s", p);
	else
		snprintf(joined, sizeof(joined), "%s/%s", c->s->data_dir, p);
	if (!realpath(joined, real)) {
		problem_x(c, 422, "invalid-parameter", json_pack("{s:s}", "field", "path"),
			  "path '%s': %s (paths are relative to the data dir)",
			  p, strerror(errno));
		return -1;
	}
	if (strncmp(real, c->s->data_dir, n) != 0 || real[n] != '/') {
		invalid(c, "path", "path resolves outside the server's --data-dir");
		return -1;
	}
	/* a directory cannot be read; a FIFO or device could block the
	 * reading thread forever: only regular files (checked without
	 * opening it) */
	memset(&sb, 0, sizeof(sb));
	errno = 0;
	if (stat(real, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		char msg[PATH_MAX + 128];

		snprintf(msg, sizeof(msg), "path '%s' is %s: name a dataset file", p,
			 errno && !sb.st_mode ? strerror(errno)
			 : S_ISDIR(sb.st_mode) ? "a directory"
			 : "not a regular file (a FIFO, device or socket)");
		invalid(c, "path", msg);
		return -1;
	}
	snprintf(t->path, sizeof(t->path), "%s", real);
	return 0;
}

static int check_keys(struct rctx *c, json_t *j, const char *const *keys,
		      size_t nkeys)
{
	const char *key;
	json_t *v;

	json_object_foreach(j, key, v) {
		size_t i = 0;

		while (i < nkeys && strcmp(key, keys[i]))
			i++;
		if (i == nkeys) {
			char msg[256];

			snprintf(msg, sizeof(msg), "unknown field '%s'", key);
			invalid(c, key, msg);
			return -1;
		}
	}
	return 0;
}

static void datasets_by_path(struct rctx *c)
{
	static const char *const keys[] = {"path", "format", "graph", "name"};
	json_t *j = body_json(c), *p, *f, *g;
	struct reg_task *t = NULL;

	if (!j)
		return;
	if (!json_is_object(j)) {
		invalid(c, "(body)", "the body must be a JSON object");
		goto end;
	}
	if (check_keys(c, j, keys, 4))
		goto end;
	p = json_object_get(j, "path");
	f = json_object_get(j, "format");
	g = json_object_get(j, "graph");
	if (!json_is_string(p) || json_string_length(p) == 0) {
		invalid(c, "path", "'path' (a non-empty string) is required");
		goto end;
	}
	if ((f && !json_is_string(f)) || (g && !json_is_string(g))) {
		invalid(c, f && !json_is_string(f) ? "format" : "graph",
			"format and graph must be strings");
		goto end;
	}
	if (!(t = reg_new(c)) ||
	    parse_fmt(c, t, json_string_value(f), json_string_value(g)) ||
	    resolve_path(c, t, json_string_value(p)))
		goto end;
	t->format_from = "request";
	if (!f) {
		t->format = part_format_guess(t->path);
		t->format_from = "name";
	}
	t->name = strdup(json_string_value(p));
	if (!t->name) {
		problem(c, 503, NULL, "out of memory");
		goto end;
	}
	start_register(t);
	t = NULL;
end:
	if (t)
		reg_free(t);
	json_decref(j);
}

/*
 * The query of a list (GET /v1/datasets, /v1/jobs): limit (1..1000),
 * after (an id of the list's kind: 'd' or 'j'), and for jobs state and
 * dataset; anything else is refused.  0, or replied 422.
 */
static int list_query(struct rctx *c, char kind, struct http_jobs_query *q,
		      char *dataset)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(c->req);
	const char *qs = u ? evhttp_uri_get_query(u) : NULL;
	struct evkeyvalq kv;
	struct evkeyval *e;
	const char *bad = NULL, *why = NULL;

	*q = (struct http_jobs_query){.state = -1};
	if (!qs || !*qs)
		return 0;
	if (evhttp_parse_query_str(qs, &kv) != 0) {
		evhttp_clear_headers(&kv);
		invalid(c, "(query)", "malformed query string");
		return -1;
	}
	for (e = kv.tqh_first; e && !bad; e = e->next.tqe_next) {
		uint64_t v;

		if (strcmp(e->key, "limit") == 0) {
			if (http_parse_u64(e->value, strlen(e->value), &v) ||
			    v < 1 || v > 1000)
				bad = "limit", why = "limit must be an integer in 1..1000";
			else
				q->limit = (unsigned)v;
		} else if (strcmp(e->key, "after") == 0) {
			if ((v = http_id_number(e->value, kind)) == 0)
				bad = "after", why = kind == 'j'
					? "after must be a job id (as j12)"
					: "after must be a dataset id (as d3)";
			else
				q->after = v;
		} else if (kind == 'j' && strcmp(e->key, "state") == 0) {
			int st = -1;

			for (int i = 0; i < HTTP_JOB_NSTATES; i++)
				if (strcmp(e->value, http_job_state_names[i]) == 0)
					st = i;
			if (st < 0)
				bad = "state", why = "state must be queued, running, "
					"succeeded, failed or cancelled";
			q->state = st;
		} else if (kind == 'j' && strcmp(e->key, "dataset") == 0) {
			if (!*e->value || strlen(e->value) >= HTTP_ID_MAX)
				bad = "dataset", why = "dataset must be a dataset id";
			else {
				snprintf(dataset, HTTP_ID_MAX, "%s", e->value);
				q->dataset = dataset;
			}
		} else {
			bad = "(query)";
			why = kind == 'j' ? "unknown parameter: the list of jobs takes "
				"limit, after, state and dataset"
				: "unknown parameter: the list of datasets takes limit "
				"and after";
		}
	}
	evhttp_clear_headers(&kv);
	if (bad) {
		invalid(c, bad, why);
		return -1;
	}
	return 0;
}

/* POST /v1/datasets with a body that is not JSON: an upload. */
static int is_upload(struct rctx *c)
{
	const char *ct = evhttp_find_header(
		evhttp_request_get_input_headers(c->req), "Content-Type");

	return c->r.id == HTTP_R_DATASETS &&
	       evhttp_request_get_command(c->req) == EVHTTP_REQ_POST &&
	       !(ct && strncasecmp(ct, "application/json", 16) == 0);
}

static void h_datasets(struct rctx *c, unsigned m)
{
	struct http_jobs_query q;
	char ds[HTTP_ID_MAX];
	const char *ct;

	if (m == HTTP_M_GET) {
		if (list_query(c, 'd', &q, ds) == 0)
			reply_json(c, 200, http_datasets_list_json(c->s->data,
								   q.after, q.limit));
		return;
	}
	ct = evhttp_find_header(evhttp_request_get_input_headers(c->req),
				"Content-Type");
	if (ct && strncasecmp(ct, "application/json", 16) == 0)
		datasets_by_path(c);
	else
		datasets_upload(c);
}

/* A deletion refused because its record (the highest id given) could not
 * be stored: without it a restart would give the id again. */
static void not_deleted(struct rctx *c, int status)
{
	problem(c, status, status == 507 ? "insufficient-storage" : NULL,
		"%s was not deleted: the server could not record it%s", c->r.rid,
		status == 507 ? " (its disk is full); retry once space is freed" : "");
}

static void h_dataset(struct rctx *c, unsigned m)
{
	const struct http_dataset *d = http_datasets_find(c->s->data, c->r.rid);
	unsigned users;
	int st = 0;

	if (!d) {
		problem(c, 404, NULL, "no dataset '%s'", c->r.rid);
		return;
	}
	if (m != HTTP_M_DELETE) {
		reply_json(c, 200, http_dataset_json(d));
		return;
	}
	/* DELETE: not while a job will read it */
	if ((users = http_jobs_using(c->s->jobs, c->r.rid)) > 0 ||
	    (st = http_datasets_remove(c->s->data, c->r.rid)) == 409) {
		problem(c, 409, "dataset-in-use", "dataset %s is used by %u "
			"queued or running job%s; cancel them or wait", c->r.rid,
			users ? users : 1, users == 1 || !users ? "" : "s");
		return;
	}
	if (st >= 500) {
		not_deleted(c, st);
		return;
	}
	reply_json(c, 200, json_pack("{s:s, s:b}", "id", c->r.rid, "deleted", 1));
}

/* ---- jobs ---- */

static void h_jobs(struct rctx *c, unsigned m)
{
	struct http_job_spec spec;
	struct parsa_err err;
	char field[64], id[HTTP_ID_MAX], loc[128];
	json_t *j;
	int rc;

	if (m == HTTP_M_GET) {
		struct http_jobs_query q;
		char ds[HTTP_ID_MAX];

		if (list_query(c, 'j', &q, ds) == 0)
			reply_json(c, 200, http_jobs_list_json(c->s->jobs, &q));
		return;
	}
	if (c->s->stopping) {
		problem(c, 503, "shutting-down", "the server is shutting down");
		return;
	}
	if (!(j = body_json(c)))
		return;
	parsa_err_clear(&err);
	rc = http_job_spec_parse(j, &spec, field, &err);
	json_decref(j);
	if (rc) {
		invalid(c, field, err.msg);
		return;
	}
	if (!http_datasets_find(c->s->data, spec.dataset)) {
		char msg[128];

		snprintf(msg, sizeof(msg), "no dataset '%s' (register it with "
			 "POST /v1/datasets)", spec.dataset);
		invalid(c, "dataset", msg);
		return;
	}
	rc = http_jobs_submit(c->s->jobs, &spec, id, &err);
	if (rc) {
		problem_err(c, rc, &err);
		return;
	}
	snprintf(loc, sizeof(loc), "/v1/jobs/%s", id);
	evhttp_add_header(evhttp_request_get_output_headers(c->req), "Location", loc);
	reply_json(c, 202, http_jobs_get_json(c->s->jobs, id, 0));
}

/* ---- long polls: GET /v1/jobs/{id}?wait=SECONDS ----
 *
 * The reply is held until the job leaves queued/running or the wait ends
 * (at most 600 s); checked whenever a job ends (on_notify).  Loop thread
 * only. */

struct waiter {
	struct rctx c;
	struct event *timer;
	struct waiter *next;
};

static int job_active(json_t *j)
{
	const char *st = json_string_value(json_object_get(j, "state"));

	return st && (strcmp(st, "queued") == 0 || strcmp(st, "running") == 0);
}

/* Unlink w, answer with the job's current state and free it. */
static void waiter_finish(struct waiter *w)
{
	struct waiter **pp = &w->c.s->waiters;

	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	event_free(w->timer);
	reply_json(&w->c, 200, http_jobs_get_json(w->c.s->jobs, w->c.r.rid, 1));
	free(w);
}

static void waiter_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	waiter_finish(arg);
}

/* Answer the waiters whose job has ended (all of them when all != 0). */
static void wake_waiters(struct svc *s, int all)
{
	struct waiter *w = s->waiters, *next;

	for (; w; w = next) {
		json_t *j = all ? NULL : http_jobs_get_json(s->jobs, w->c.r.rid, 0);

		next = w->next;
		if (all || !job_active(j))
			waiter_finish(w);
		json_decref(j);
	}
}

/* Hold the request when ?wait= asks for it and the job is active; 1 if
 * held (or answered with an error). */
static int maybe_wait(struct rctx *c)
{
	char buf[32];
	const char *v = query_param(c, "wait", buf, sizeof(buf));
	struct timeval tv;
	struct waiter *w;
	json_t *j;
	char *end;
	double secs;

	if (!v)
		return 0;
	errno = 0;
	secs = strtod(v, &end);
	if (c->s->stopping)
		secs = 0; /* never hold a reply while shutting down */
	if (errno || end == v || *end || !(secs >= 0 && secs <= 600)) {
		invalid(c, "wait", "wait must be seconds in 0..600");
		return 1;
	}
	j = http_jobs_get_json(c->s->jobs, c->r.rid, 0);
	if (!j || !job_active(j) || secs == 0) {
		json_decref(j);
		return 0;
	}
	json_decref(j);
	w = calloc(1, sizeof(*w));
	if (!w)
		return 0;
	w->c = *c;
	w->timer = evtimer_new(c->s->base, waiter_timeout, w);
	if (!w->timer) {
		free(w);
		return 0;
	}
	tv.tv_sec = (time_t)secs;
	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	evtimer_add(w->timer, &tv);
	w->next = c->s->waiters;
	c->s->waiters = w;
	return 1;
}

static int downloading(struct svc *s, const char *job);

/* DELETE /v1/jobs/{id}?purge=true: a finished job and its files. */
static void purge_job(struct rctx *c, const char *v)
{
	enum http_job_state st = HTTP_JOB_QUEUED;
	int status;

	if (strcmp(v, "true") != 0 && strcmp(v, "1") != 0) {
		invalid(c, "purge", "purge must be true (or 1)");
		return;
	}
	if (downloading(c->s, c->r.rid)) {
		evhttp_add_header(evhttp_request_get_output_headers(c->req),
				  "Retry-After", "5");
		problem(c, 409, "job-in-use", "job %s's placement is being "
			"downloaded; retry when it is done", c->r.rid);
		return;
	}
	status = http_jobs_purge(c->s->jobs, c->r.rid, &st);
	if (status == 404)
		problem(c, 404, NULL, "no job '%s'", c->r.rid);
	else if (status == 409)
		problem(c, 409, "job-not-finished", "job %s is %s: cancel it "
			"first (DELETE without purge), then delete it", c->r.rid,
			http_job_state_names[st]);
	else if (status >= 500)
		not_deleted(c, status);
	else
		reply_json(c, 200, json_pack("{s:s, s:b}", "id", c->r.rid,
					     "deleted", 1));
}

/*
 * Retention (--max-jobs, --max-age): finished jobs beyond the newest
 * max_jobs, or ended more than max_age ago, are deleted with their files
 * as DELETE ?purge=true does; a job whose placement is being downloaded
 * waits for the next check.  Loop thread: at start-up, after each job
 * ends (on_notify) and periodically (retain_ev).
 */
static void retain(struct svc *s)
{
	enum { BATCH = 128 };
	char ids[BATCH][HTTP_ID_MAX];
	size_t n, removed;

	if (!s->o.max_jobs && !(s->o.max_age > 0))
		return;
	do {
		removed = 0;
		n = http_jobs_expired(s->jobs, s->o.max_jobs, s->o.max_age,
				      ids, BATCH);
		for (size_t i = 0; i < n && i < BATCH; i++) {
			enum http_job_state st = HTTP_JOB_QUEUED;

			if (downloading(s, ids[i]))
				continue;
			if (http_jobs_purge(s->jobs, ids[i], &st) != 200)
				continue;
			removed++;
			fprintf(stderr, "parsa serve: retention: removed job %s "
				"(%s) and its files\n", ids[i],
				http_job_state_names[st]);
		}
	} while (n > BATCH && removed > 0);
}

static void on_retain(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	retain(arg);
}

static void h_job(struct rctx *c, unsigned m)
{
	enum http_job_state st = HTTP_JOB_QUEUED;
	char pv[16];
	int status;

	if (m == HTTP_M_DELETE && query_param(c, "purge", pv, sizeof(pv))) {
		purge_job(c, pv);
		return;
	}
	if (m == HTTP_M_DELETE) {
		status = http_jobs_cancel(c->s->jobs, c->r.rid, &st);
		if (status == 404)
			problem(c, 404, NULL, "no job '%s'", c->r.rid);
		else if (status == 409)
			problem(c, 409, "job-finished", "job %s has already "
				"finished (%s); nothing to cancel (DELETE "
				"?purge=true deletes it and its files)", c->r.rid,
				http_job_state_names[st]);
		else if (status >= 500)
			problem(c, status, status == 507 ? "insufficient-storage" : NULL,
				"job %s stays queued: its cancellation could not "
				"be stored%s", c->r.rid, status == 507 ?
				" (the server's disk is full)" : "");
		else
			reply_json(c, status, http_jobs_get_json(c->s->jobs, c->r.rid, 0));
		return;
	}
	if (maybe_wait(c))
		return;
	json_t *j = http_jobs_get_json(c->s->jobs, c->r.rid, 1);

	if (!j)
		problem(c, 404, NULL, "no job '%s'", c->r.rid);
	else
		reply_json(c, 200, j);
}

/* GET /v1/jobs/{id}/events: Server-Sent Events (http_events.h). */
static void h_events(struct rctx *c)
{
	const char *last = evhttp_find_header(
		evhttp_request_get_input_headers(c->req), "Last-Event-ID");
	int rc;

	if (c->s->stopping) {
		problem(c, 503, "shutting-down", "the server is shutting down");
		return;
	}
	rc = http_events_open(c->s->events, c->req, c->r.rid, last, c->t0);
	if (rc == 404) {
		problem(c, 404, NULL, "no job '%s'", c->r.rid);
	} else if (rc) {
		evhttp_add_header(evhttp_request_get_output_headers(c->req),
				  "Retry-After", "5");
		problem(c, 503, "too-many-streams", "%u event streams are open "
			"(--max-streams); retry later",
			http_events_count(c->s->events));
	}
}

static void h_report(struct rctx *c)
{
	json_t *j = http_jobs_get_json(c->s->jobs, c->r.rid, 1);
	json_t *r = j ? json_object_get(j, "report") : NULL;

	if (!j)
		problem(c, 404, NULL, "no job '%s'", c->r.rid);
	else if (!r)
		problem(c, 409, "job-not-finished", "job %s has no report: it is %s",
			c->r.rid, json_string_value(json_object_get(j, "state")));
	else
		reply_json(c, 200, json_incref(r));
	json_decref(j);
}

/* The placement of the route's job, or NULL after replying 404/409/500. */
static const struct http_place *need_place(struct rctx *c)
{
	const struct http_place *p;
	enum http_job_state st = HTTP_JOB_QUEUED;
	struct parsa_err err;
	int status;

	parsa_err_clear(&err);
	status = http_jobs_place(c->s->jobs, c->r.rid, &p, &st, &err);
	if (status == 200)
		return p;
	if (status == 404)
		problem(c, 404, NULL, "no job '%s'", c->r.rid);
	else if (status == 409)
		problem(c, 409, "job-not-finished", "job %s is %s: its placement "
			"exists once it has succeeded", c->r.rid,
			http_job_state_names[st]);
	else
		problem(c, 500, NULL, "cannot read the stored placement: %s", err.msg);
	return NULL;
}

/* ---- placement streaming ---- */

#define STREAM_CHUNK 65536 /* entries per chunk */

struct stream {
	struct rctx c;
	struct stream *next_open;  /* svc's list of downloads */
	struct evhttp_connection *evcon;
	const struct http_place *p;
	int features, json;
	uint64_t pos, n;
	int started_json, done;
};

static void stream_unlist(struct stream *st)
{
	struct stream **pp = &st->c.s->streams;

	while (*pp && *pp != st)
		pp = &(*pp)->next_open;
	if (*pp)
		*pp = st->next_open;
}

/* Is a placement of job being downloaded? */
static int downloading(struct svc *s, const char *job)
{
	for (struct stream *st = s->streams; st; st = st->next_open)
		if (strcmp(st->c.r.rid, job) == 0)
			return 1;
	return 0;
}

static char *fmt_u64(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/*
 * Feature ids in JSON: 0..2^64-1, as the readers accept them.  Up to
 * 2^53-1 they are numbers (exact in every JSON parser, JavaScript's
 * included); from 2^53 on they are decimal strings ("18446744073709551615").
 * Inputs take either form for any id (jansson itself reads numbers only
 * up to 2^63-1: larger ids must come as strings).
 */
#define ID_NUMBER_MAX ((UINT64_C(1) << 53) - 1)

/* An id in JSON, written backwards before end. */
static char *fmt_id_json(char *end, uint64_t v)
{
	if (v <= ID_NUMBER_MAX)
		return fmt_u64(end, v);
	*--end = '"';
	end = fmt_u64(end, v);
	*--end = '"';
	return end;
}

static json_t *id_json(uint64_t v)
{
	char buf[32], *q = fmt_u64(buf + sizeof(buf) - 1, v);

	buf[sizeof(buf) - 1] = '\0';
	return v <= ID_NUMBER_MAX ? json_integer((json_int_t)v) : json_string(q);
}

/* An id from JSON: an integer >= 0 or a string of 1..20 decimal digits
 * up to 2^64-1.  0 or -1. */
static int id_from_json(const json_t *f, uint64_t *out)
{
	if (json_is_integer(f) && json_integer_value(f) >= 0) {
		*out = (uint64_t)json_integer_value(f);
		return 0;
	}
	if (json_is_string(f))
		return http_parse_u64(json_string_value(f), json_string_length(f), out);
	return -1;
}

static void stream_fill(struct stream *st, struct evbuffer *b)
{
	char line[64];
	uint64_t stop = st->pos + STREAM_CHUNK < st->n ? st->pos + STREAM_CHUNK : st->n;

	if (st->json && !st->started_json) {
		evbuffer_add_printf(b, "{\"job\":\"%s\",\"k\":%u,\"%s\":[",
				    st->c.r.rid, st->p->k,
				    st->features ? "features" : "examples");
		st->started_json = 1;
	}
	for (; st->pos < stop; st->pos++) {
		char *e = line + sizeof(line), *q = e;
		uint64_t i = st->pos;

		if (st->json) {
			if (st->features) {
				*--q = ']';
				q = fmt_u64(q, st->p->owner[i]);
				*--q = ',';
				q = fmt_id_json(q, st->p->feat_id[i]);
				*--q = '[';
			} else {
				q = fmt_u64(q, st->p->part[i]);
			}
			if (i > 0)
				*--q = ',';
		} else {
			*--q = '\n';
			if (st->features) {
				q = fmt_u64(q, st->p->owner[i]);
				*--q = ' ';
				q = fmt_u64(q, st->p->feat_id[i]);
			} else {
				q = fmt_u64(q, st->p->part[i]);
			}
		}
		evbuffer_add(b, q, (size_t)(e - q));
	}
	if (st->json && st->pos == st->n)
		evbuffer_add(b, "]}\n", 3);
}

/* The client went away mid-stream.  On a read error libevent has already
 * detached the unfinished request (then it is ours to free); when the
 * server itself frees the connection the request is still attached and
 * libevent frees it. */
static void stream_closed(struct evhttp_connection *evcon, void *arg)
{
	struct stream *st = arg;

	(void)evcon;
	if (!evhttp_request_get_connection(st->c.req))
		evhttp_request_free(st->c.req);
	http_metrics_request(st->c.s->metrics, st->c.r.id, 499, base_now() - st->c.t0);
	stream_unlist(st);
	free(st);
}

static void stream_next(struct evhttp_connection *evcon, void *arg)
{
	struct stream *st = arg;
	struct evbuffer *b;

	(void)evcon;
	if (st->pos == st->n && st->done) {
		http_conns_set_closecb(st->c.s->conns, st->evcon, NULL, NULL);
		evhttp_send_reply_end(st->c.req);
		http_metrics_request(st->c.s->metrics, st->c.r.id, 200,
				     base_now() - st->c.t0);
		stream_unlist(st);
		free(st);
		return;
	}
	b = evbuffer_new();
	if (!b) { /* give up: close the connection */
		http_conns_set_closecb(st->c.s->conns, st->evcon, NULL, NULL);
		evhttp_send_reply_end(st->c.req);
		stream_unlist(st);
		free(st);
		return;
	}
	stream_fill(st, b);
	if (st->pos == st->n)
		st->done = 1;
	evhttp_send_reply_chunk_with_cb(st->c.req, b, stream_next, st);
	evbuffer_free(b);
}

static int wants_json(struct rctx *c)
{
	char fmt[16];
	const char *f = query_param(c, "format", fmt, sizeof(fmt));
	const char *acc = evhttp_find_header(evhttp_request_get_input_headers(c->req),
					     "Accept");

	if (f)
		return strcmp(f, "json") == 0;
	return acc && strstr(acc, "application/json") != NULL;
}

static void h_placement(struct rctx *c)
{
	const struct http_place *p = need_place(c);
	struct stream *st;
	char fmt[16];
	const char *f = query_param(c, "format", fmt, sizeof(fmt));

	if (!p)
		return;
	if (f && strcmp(f, "json") != 0 && strcmp(f, "text") != 0) {
		invalid(c, "format", "format must be text or json");
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		problem(c, 503, NULL, "out of memory");
		return;
	}
	st->c = *c;
	st->next_open = c->s->streams;
	c->s->streams = st;
	st->p = p;
	st->features = c->r.features;
	st->json = wants_json(c);
	st->n = st->features ? p->n_cols : p->n_rows;
	st->evcon = evhttp_request_get_connection(c->req);
	evhttp_add_header(evhttp_request_get_output_headers(c->req), "Content-Type",
			  st->json ? "application/json" : "text/plain; charset=utf-8");
	http_conns_set_closecb(c->s->conns, st->evcon, stream_closed, st);
	evhttp_send_reply_start(c->req, 200, "OK");
	stream_next(NULL, st);
}

/* ---- lookups and assign ---- */

static void h_lookup(struct rctx *c, int features)
{
	const struct http_place *p;
	struct evbuffer *b;
	uint32_t v;

	if (!c->r.index_ok) {
		problem(c, 404, NULL, "%s must be an unsigned integer",
			features ? "the feature id" : "the example index");
		return;
	}
	if (!(p = need_place(c)))
		return;
	b = evhttp_request_get_output_buffer(c->req);
	if (features) {
		if (!part_idmap_find(&p->map, c->r.index, &v)) {
			problem(c, 404, "unknown-feature", "feature %llu is not in "
				"the dataset of job %s", (unsigned long long)c->r.index,
				c->r.rid);
			return;
		}
		reply_json(c, 200, json_pack("{s:s, s:o, s:i}", "job", c->r.rid,
					     "feature", id_json(c->r.index),
					     "part", (int)p->owner[v]));
		return;
	} else {
		if (c->r.index >= p->n_rows) {
			problem(c, 404, "unknown-example", "example %llu is out of "
				"range: job %s has %u examples (0-based)",
				(unsigned long long)c->r.index, c->r.rid, p->n_rows);
			return;
		}
		char kb[32], *ks = NULL;

		if (p->ex_id) { /* the example's own id too */
			kb[sizeof(kb) - 1] = '\0';
			ks = fmt_id_json(kb + sizeof(kb) - 1, p->ex_id[c->r.index]);
		}
		evbuffer_add_printf(b, "{\"job\":\"%s\",\"example\":%llu,%s%s%s"
				    "\"part\":%u}\n", c->r.rid,
				    (unsigned long long)c->r.index,
				    ks ? "\"key\":" : "", ks ? ks : "", ks ? "," : "",
				    p->part[c->r.index]);
	}
	reply_buf(c, 200, "application/json", b);
}

/* GET /v1/jobs/{id}/examples?key=K: the example whose own id (pairs: the
 * user; SNAP adjacency: the vertex) is K. */
static void h_example_key(struct rctx *c)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(c->req);
	const char *q = u ? evhttp_uri_get_query(u) : NULL;
	const struct http_place *p;
	struct evkeyvalq kv;
	struct evkeyval *e;
	const char *bad = "key";
	char key[32] = "";
	uint64_t k = 0;
	uint32_t row;
	int nkey = 0;

	if (q && evhttp_parse_query_str(q, &kv) == 0) {
		bad = NULL;
		for (e = kv.tqh_first; e && !bad; e = e->next.tqe_next) {
			if (strcmp(e->key, "key") != 0)
				bad = e->key;
			else if (nkey++ == 0)
				snprintf(key, sizeof(key), "%s", e->value);
		}
		if (!bad && (nkey != 1 || http_parse_u64(key, strlen(key), &k)))
			bad = "key";
		if (bad) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%.200s: this route takes one "
				 "parameter, key, the example's own id (0..2^64-1 "
				 "in decimal); by position: /v1/jobs/%s/examples/{i}",
				 bad, c->r.rid);
			invalid(c, bad, msg);
		}
		evhttp_clear_headers(&kv);
		if (bad)
			return;
	} else if (q) {
		invalid(c, "(query)", "malformed query string");
		return;
	} else {
		invalid(c, "key", "key is required: the example's own id "
			"(pairs: the user; SNAP: the vertex), e.g. ?key=12345");
		return;
	}
	if (!(p = need_place(c)))
		return;
	if (!p->ex_id) {
		problem(c, 404, "no-example-ids", "the examples of job %s have "
			"no ids of their own (LIBSVM input, or SNAP edges); look "
			"them up by position: /v1/jobs/%s/examples/{i}", c->r.rid,
			c->r.rid);
		return;
	}
	if (!http_place_find_example(p, k, &row)) {
		problem(c, 404, "unknown-key", "no example with id %llu in the "
			"dataset of job %s", (unsigned long long)k, c->r.rid);
		return;
	}
	reply_json(c, 200, json_pack("{s:s, s:o, s:I, s:i}", "job", c->r.rid,
				     "key", id_json(k), "example", (json_int_t)row,
				     "part", (int)p->part[row]));
}

/* examples: [[f, ...], ...] into CSR; 0 or replied 422. */
static int assign_input(struct rctx *c, json_t *body, uint64_t **off_out,
			uint64_t **ids_out, uint32_t *n_out)
{
	json_t *ex = json_is_object(body) ? json_object_get(body, "examples") : NULL;
	uint64_t *off, *ids, nnz = 0;
	size_t n, i, j;
	json_t *row, *f;
	char field[64];

	if (!json_is_array(ex) || json_array_size(ex) == 0 ||
	    json_array_size(ex) > UINT32_MAX - 1) {
		invalid(c, "examples", "'examples' must be a non-empty array of "
			"examples, each an array of feature ids");
		return -1;
	}
	n = json_array_size(ex);
	json_array_foreach(ex, i, row) {
		if (!json_is_array(row)) {
			snprintf(field, sizeof(field), "examples[%zu]", i);
			invalid(c, field, "each example must be an array of feature ids");
			return -1;
		}
		json_array_foreach(row, j, f) {
			uint64_t v;

			if (id_from_json(f, &v)) {
				snprintf(field, sizeof(field), "examples[%zu][%zu]", i, j);
				invalid(c, field, "feature ids must be integers in "
					"0..2^64-1, as JSON numbers (up to 2^63-1) "
					"or decimal strings");
				return -1;
			}
		}
		nnz += json_array_size(row);
	}
	off = malloc((n + 1) * sizeof(uint64_t));
	ids = malloc((nnz ? nnz : 1) * sizeof(uint64_t));
	if (!off || !ids) {
		free(off);
		free(ids);
		problem(c, 503, NULL, "out of memory");
		return -1;
	}
	off[0] = 0;
	json_array_foreach(ex, i, row) {
		off[i + 1] = off[i];
		json_array_foreach(row, j, f)
			id_from_json(f, &ids[off[i + 1]++]);
	}
	*off_out = off;
	*ids_out = ids;
	*n_out = (uint32_t)n;
	return 0;
}

static const char *const assign_keys[] = {"examples"};

static void h_assign(struct rctx *c)
{
	const struct http_place *p;
	struct part_assign_model m;
	struct parsa_err err;
	uint64_t *off = NULL, *ids = NULL;
	uint32_t n = 0, *out = NULL;
	json_t *body, *job, *parts;
	int rc;

	if (!(body = body_json(c)))
		return;
	if (!(p = need_place(c)) ||
	    (json_is_object(body) && check_keys(c, body, assign_keys, 1)) ||
	    assign_input(c, body, &off, &ids, &n)) {
		json_decref(body);
		return;
	}
	json_decref(body);
	job = http_jobs_get_json(c->s->jobs, c->r.rid, 0);
	m = (struct part_assign_model){
		.k = p->k, .words = p->words, .bits = p->bits, .map = &p->map,
		.count = p->count,
		.imbalance = json_number_value(json_object_get(
			json_object_get(job, "params"), "imbalance")),
	};
	json_decref(job);
	if (m.imbalance < 1)
		m.imbalance = 1.03;
	parsa_err_clear(&err);
	out = malloc(n * sizeof(uint32_t));
	rc = out ? part_assign_batch(&m, off, ids, n, out, &err)
		 : parsa_fail(&err, PARSA_ENOMEM, "out of memory");
	parts = rc ? NULL : json_array();
	for (uint32_t i = 0; parts && i < n; i++)
		json_array_append_new(parts, json_integer(out[i]));
	if (rc)
		problem_err(c, rc, &err);
	else
		reply_json(c, 200, json_pack("{s:s, s:i, s:o}", "job", c->r.rid,
					     "k", (int)p->k, "parts", parts));
	free(out);
	free(off);
	free(ids);
}

/* ---- the web page (http_ui.h) ---- */

static void h_ui(struct rctx *c)
{
	const struct http_ui_asset *a = http_ui_find(c->r.asset);
	struct evkeyvalq *h = evhttp_request_get_output_headers(c->req);
	const unsigned char *seg[4];
	size_t len[4];
	unsigned nseg = 0;
	const char *inm;
	char etag[80];
	struct evbuffer *b;

	if (!a) {
		problem(c, 404, NULL, "no such file of the web page: %s", c->r.asset);
		return;
	}
	/* with a token the page asks for it at once, and fetches nothing early */
	if (c->s->o.token)
		nseg = http_ui_auth_page(a, seg, len);
	snprintf(etag, sizeof(etag), "%.*s%s\"", (int)strlen(a->etag) - 1,
		 a->etag, nseg ? "-a" : "");
	evhttp_add_header(h, "ETag", etag);
	/* revalidated on every load (a new binary may bring new files) */
	evhttp_add_header(h, "Cache-Control", "no-cache");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Content-Security-Policy", "default-src 'self'; "
			  "img-src 'self' data: blob:; object-src 'none'; "
			  "base-uri 'none'; frame-ancestors 'none'");
	inm = evhttp_find_header(evhttp_request_get_input_headers(c->req),
				 "If-None-Match");
	if (inm && strcmp(inm, etag) == 0) {
		reply_buf(c, 304, NULL, NULL);
		return;
	}
	b = evhttp_request_get_output_buffer(c->req);
	if (!nseg)
		evbuffer_add_reference(b, a->data, a->len, NULL, NULL);
	for (unsigned i = 0; i < nseg; i++)
		evbuffer_add_reference(b, seg[i], len[i], NULL, NULL);
	reply_buf(c, 200, a->type, b);
}

/* ---- health and metrics ---- */

static void h_healthz(struct rctx *c)
{
	/* "auth": the API needs the bearer token (so the page asks for it
	 * before its first call) */
	reply_json(c, c->s->stopping ? 503 : 200,
		   json_pack("{s:s, s:i, s:I, s:b}", "status",
			     c->s->stopping ? "stopping" : "ok", "jobs_running",
			     (int)http_jobs_running(c->s->jobs), "datasets",
			     (json_int_t)http_datasets_count(c->s->data),
			     "auth", c->s->o.token != NULL));
}

static void h_metrics(struct rctx *c)
{
	uint64_t counts[HTTP_JOB_NSTATES];
	struct evbuffer *b = evhttp_request_get_output_buffer(c->req);
	char *t;

	http_jobs_counts(c->s->jobs, counts);
	t = http_metrics_text(c->s->metrics, counts, http_job_state_names,
			      http_datasets_count(c->s->data));
	if (!t) {
		problem(c, 503, NULL, "out of memory");
		return;
	}
	evbuffer_add(b, t, strlen(t));
	free(t);
	reply_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8", b);
}

/* ---- dispatch ---- */

static void dispatch(struct rctx *c, unsigned m)
{
	switch (c->r.id) {
	case HTTP_R_HEALTHZ: h_healthz(c); break;
	case HTTP_R_METRICS: h_metrics(c); break;
	case HTTP_R_DATASETS: h_datasets(c, m); break;
	case HTTP_R_DATASET: h_dataset(c, m); break;
	case HTTP_R_JOBS: h_jobs(c, m); break;
	case HTTP_R_JOB: h_job(c, m); break;
	case HTTP_R_REPORT: h_report(c); break;
	case HTTP_R_PLACEMENT: h_placement(c); break;
	case HTTP_R_EXAMPLE: h_lookup(c, 0); break;
	case HTTP_R_FEATURE: h_lookup(c, 1); break;
	case HTTP_R_EXAMPLE_KEY: h_example_key(c); break;
	case HTTP_R_ASSIGN: h_assign(c); break;
	case HTTP_R_EVENTS: h_events(c); break;
	case HTTP_R_UI: h_ui(c); break;
	default: problem(c, 404, NULL, "no such resource"); break;
	}
}

static void unauthorized(struct rctx *c)
{
	evhttp_add_header(evhttp_request_get_output_headers(c->req),
			  "WWW-Authenticate", "Bearer realm=\"parsa\"");
	problem(c, 401, NULL, "missing or wrong bearer token "
		"(send 'Authorization: Bearer <token>')");
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct rctx c = {.s = arg, .req = req, .t0 = base_now()};
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	unsigned m = method_bit(evhttp_request_get_command(req));

	http_route_match(u ? evhttp_uri_get_path(u) : "/", &c.r);
	if (http_conns_diverted(c.s->conns, evhttp_request_get_connection(req),
				&c.div_chunked, &c.div_len)) {
		/* its body is still in the connection (an upload's, to be
		 * streamed to disk): the connection closes after the reply
		 * unless the body is read to its end (body_whole) */
		c.div = 1;
		evhttp_add_header(evhttp_request_get_output_headers(req),
				  "Connection", "close");
	}
	/* evhttp takes any "HTTP/m.n" with m <= 1 (HTTP/0.1, HTTP/-1.-5)
	 * and would answer in that version: only 1.0 and 1.1 are served,
	 * the rest get 505 as HTTP/1.0 (then the connection closes) */
	if (req->major != 1 || req->minor < 0 || req->minor > 1) {
		req->major = 1;
		req->minor = 0;
		problem(&c, 505, "http-version", "only HTTP/1.0 and HTTP/1.1 are "
			"supported");
		return;
	}
	/* with a token, everything but /healthz and the page needs it, and
	 * first: a client without it learns nothing, not even which routes
	 * exist (401 before 404 and 405) */
	if (c.s->o.token && c.r.id != HTTP_R_HEALTHZ && c.r.id != HTTP_R_UI &&
	    !authorized(c.s, req)) {
		const char *x = evhttp_find_header(
			evhttp_request_get_input_headers(req), "Expect");

		if (c.div && !(x && strcasecmp(x, "100-continue") == 0))
			read_body_then_dispatch(&c, m, 1);
		else
			unauthorized(&c);
		return;
	}
	if (c.r.id == HTTP_R_NONE) {
		problem(&c, 404, NULL, "no such resource: %s",
			u && evhttp_uri_get_path(u) ? evhttp_uri_get_path(u) : "/");
		return;
	}
	if (!(http_route_methods(c.r.id) & m)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
				  http_route_allow(c.r.id));
		problem(&c, 405, NULL, "method not allowed on %s (allowed: %s)",
			http_route_label(c.r.id), http_route_allow(c.r.id));
		return;
	}
	if (c.div && !is_upload(&c)) {
		read_body_then_dispatch(&c, m, 0);
		return;
	}
	dispatch(&c, m == HTTP_M_HEAD ? HTTP_M_GET : m);
}

/* ---- libevent's own error pages as problem+json ----
 *
 * evhttp answers some errors itself before any handler runs (a body over
 * the size limit: 413; a malformed request line or header: 400; an
 * unsupported method: 501) with a fixed HTML page.  libevent 2.1 has no
 * hook for those, so every connection's output buffer carries a callback
 * that spots such a page (a status line followed, at the end of the
 * buffer, by evhttp's "</BODY></HTML>\n") and replaces it by the same
 * status with a problem+json body.  Only the loop thread writes there.
 */

static const char html_tail[] = "</BODY></HTML>\n";
#define HTML_TAIL_LEN (sizeof(html_tail) - 1)

static int fixing;  /* re-entrancy guard (loop thread only) */

static const char *page_detail(int status, uint64_t max_upload)
{
	static char buf[160];

	switch (status) {
	case 413:
		snprintf(buf, sizeof(buf), "the request body is larger than the "
			 "server's limit of %llu bytes (--max-upload)",
			 (unsigned long long)max_upload);
		return buf;
	case 400:
		return "malformed HTTP request (request line, headers, or body: "
		       "e.g. a chunk size that is not hexadecimal)";
	case 501:
		return "HTTP method not implemented";
	default:
		return http_status_phrase(status);
	}
}

/* Replace buf[from..) (an evhttp error page with status) by problem+json. */
static void rewrite_page(struct svc *s, struct evbuffer *buf, size_t from,
			 int status, int minor)
{
	size_t len = evbuffer_get_length(buf);
	char *head = from ? malloc(from) : NULL;
	char *text = http_problem_text(status, NULL, page_detail(status, s->o.max_upload));

	if ((from && !head) || !text) {
		free(head);
		free(text);
		return;
	}
	if (from)
		evbuffer_copyout(buf, head, from);
	evbuffer_drain(buf, len);
	if (from)
		evbuffer_add(buf, head, from);
	evbuffer_add_printf(buf, "HTTP/1.%d %d %s\r\nContent-Type: "
			    "application/problem+json\r\nContent-Length: %zu\r\n"
			    "Connection: close\r\n\r\n%s", minor, status,
			    http_status_phrase(status), strlen(text), text);
	free(head);
	free(text);
	http_metrics_request(s->metrics, HTTP_R_NONE, status, 0);
}

static void fix_page(struct evbuffer *buf, const struct evbuffer_cb_info *info,
		     void *arg)
{
	size_t len = evbuffer_get_length(buf);
	struct evbuffer_ptr pos, hit;
	char tail[HTML_TAIL_LEN], line[32];
	int status, major, minor;

	if (fixing || info->n_added == 0 || len < 64 ||
	    evbuffer_ptr_set(buf, &pos, len - HTML_TAIL_LEN, EVBUFFER_PTR_SET) ||
	    evbuffer_copyout_from(buf, &pos, tail, HTML_TAIL_LEN) != (ev_ssize_t)HTML_TAIL_LEN ||
	    memcmp(tail, html_tail, HTML_TAIL_LEN) != 0)
		return;
	hit = evbuffer_search(buf, "HTTP/", 5, NULL);
	while (hit.pos >= 0) { /* the last status line in the buffer */
		struct evbuffer_ptr next = hit;

		if (evbuffer_ptr_set(buf, &next, 1, EVBUFFER_PTR_ADD))
			break;
		next = evbuffer_search(buf, "HTTP/", 5, &next);
		if (next.pos < 0)
			break;
		hit = next;
	}
	/* evhttp echoes the request's version, whatever it was (HTTP/0.1,
	 * HTTP/-1.-5): the page is rewritten as HTTP/1.1 or 1.0 */
	memset(line, 0, sizeof(line));
	if (hit.pos < 0 || evbuffer_copyout_from(buf, &hit, line,
						 sizeof(line) - 1) < 9 ||
	    sscanf(line, "HTTP/%d.%d %3d", &major, &minor, &status) != 3)
		return;
	if (major != 1 || minor != 1)
		minor = 0;
	/* a Content-Length refused at once by http_conn: a 413 */
	if (status == 400 &&
	    http_conns_take_oversize(((struct svc *)arg)->conns, buf))
		status = 413;
	/* a malformed chunk size, which evhttp answers as too large */
	if (status == 413 &&
	    http_conns_take_bad_chunk(((struct svc *)arg)->conns, buf))
		status = 400;
	fixing = 1;
	rewrite_page(arg, buf, (size_t)hit.pos, status, minor);
	fixing = 0;
}

static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
	struct svc *s = arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, 0);

	if (bev) {
		evbuffer_add_cb(bufferevent_get_output(bev), fix_page, arg);
		http_conns_track(s->conns, bev);
	}
	return bev;
}

/* ---- lifecycle ---- */

static void notify_from_thread(void *arg)
{
	struct svc *s = arg;

	event_active(s->notify_ev, EV_READ, 0);
}

/* Stop when nothing runs any more; interrupt jobs after the grace time. */
static void check_stop(struct svc *s)
{
	unsigned loaders;

	if (!s->stopping)
		return;
	pthread_mutex_lock(&s->mu);
	loaders = s->loaders;
	pthread_mutex_unlock(&s->mu);
	if (!s->interrupted && base_now() >= s->stop_deadline) {
		fprintf(stderr, "parsa serve: interrupting running jobs (they "
			"will run again after a restart)\n");
		http_jobs_interrupt(s->jobs);
		s->interrupted = 1;
	}
	if (loaders == 0 && http_jobs_running(s->jobs) == 0 &&
	    base_now() >= s->flush_until) {
		wake_waiters(s, 1);
		event_base_loopexit(s->base, NULL);
	}
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	drain_done(arg);
	wake_waiters(arg, 0);
	http_events_poll(((struct svc *)arg)->events);
	retain(arg);
	check_stop(arg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	drain_done(arg);
	check_stop(arg);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct svc *s = arg;
	struct timeval tv = {0, 100000};

	(void)what;
	if (s->stopping) {
		s->stop_deadline = 0; /* second signal: interrupt now */
		check_stop(s);
		return;
	}
	fprintf(stderr, "parsa serve: %s: stopping (running jobs have %.0f s "
		"to finish)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", s->o.grace);
	s->stopping = 1;
	s->stop_deadline = base_now() + s->o.grace;
	if (s->bound) {
		http_conns_watch_listener(s->conns, NULL);
		evhttp_del_accept_socket(s->http, s->bound);
		s->bound = NULL;
	}
	http_jobs_stop(s->jobs);
	wake_waiters(s, 1); /* answered now, while the loop still runs */
	/* event streams end cleanly ("shutdown"); the loop runs on for a
	 * moment so their last bytes leave */
	if (http_events_close_all(s->events))
		s->flush_until = base_now() + 0.2;
	event_add(s->tick, &tv);
	check_stop(s);
}

#define HTTP_LISTEN_BACKLOG 4096

static int listen_on(struct svc *s, struct parsa_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned port = s->o.port;
	int one = 1;

	s->bound = evhttp_bind_socket_with_handle(s->http, s->o.host,
						  (ev_uint16_t)s->o.port);
	if (!s->bound)
		return parsa_fail(err, PARSA_EIO, "cannot listen on %s:%u: %s",
				  s->o.host, s->o.port, strerror(errno));
	/* accepted sockets inherit it (Linux): replies, and the last chunk of
	 * a stream, leave at once instead of waiting for the client's
	 * delayed ACK */
	setsockopt(evhttp_bound_socket_get_fd(s->bound), IPPROTO_TCP, TCP_NODELAY,
		   &one, sizeof(one));
	/* evhttp listens with a backlog of 128: a burst of connections (a
	 * few thousand clients) overflowed it while the loop was busy, and
	 * each dropped SYN cost its client a 1 s retransmission.  Linux
	 * takes a second listen() as the new backlog (capped by somaxconn). */
	listen(evhttp_bound_socket_get_fd(s->bound), HTTP_LISTEN_BACKLOG);
	http_conns_watch_listener(s->conns,
				  evhttp_bound_socket_get_listener(s->bound));
	if (getsockname(evhttp_bound_socket_get_fd(s->bound),
			(struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	printf("parsa serve: listening on http://%s%s%s:%u\n",
	       strchr(s->o.host, ':') ? "[" : "", s->o.host,
	       strchr(s->o.host, ':') ? "]" : "", port);
	fflush(stdout);
	return 0;
}

static int setup_http(struct svc *s, struct parsa_err *err)
{
	struct timeval tv;

	s->http = evhttp_new(s->base);
	if (!s->http)
		return parsa_fail(err, PARSA_ENOMEM, "cannot create the HTTP server");
	evhttp_set_max_body_size(s->http, (ev_ssize_t)s->o.max_upload);
	evhttp_set_max_headers_size(s->http, 65536);
	/* a client silent this long while sending its request (or not
	 * reading the reply) is dropped; between requests, too */
	tv.tv_sec = (time_t)s->o.read_timeout;
	tv.tv_usec = (suseconds_t)((s->o.read_timeout - (double)tv.tv_sec) * 1e6);
	evhttp_set_timeout_tv(s->http, &tv);
	evhttp_set_flags(s->http, EVHTTP_SERVER_LINGERING_CLOSE);
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
				   EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD |
				   EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
				   EVHTTP_REQ_OPTIONS);
	evhttp_set_bevcb(s->http, make_bev, s);
	evhttp_set_gencb(s->http, on_request, s);
	return 0;
}

static int setup(struct svc *s, struct parsa_err *err)
{
	struct http_jobs_opts jo;
	int rc;

	if (s->o.data_dir && !realpath(s->o.data_dir, s->data_dir))
		return parsa_fail(err, PARSA_EIO, "--data-dir %s: %s",
				  s->o.data_dir, strerror(errno));
	rc = http_store_mkdirs(s->o.state_dir, err);
	if (rc)
		return rc;
	/* absolute, so stored paths survive a restart from another cwd */
	if (!realpath(s->o.state_dir, s->state_dir))
		return parsa_fail(err, PARSA_EIO, "--state-dir %s: %s",
				  s->o.state_dir, strerror(errno));
	s->o.state_dir = s->state_dir;
	if (evthread_use_pthreads() != 0)
		return parsa_fail(err, PARSA_ENOMEM, "libevent threads unavailable");
	s->base = event_base_new();
	s->metrics = http_metrics_create();
	if (!s->base || !s->metrics)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	s->notify_ev = event_new(s->base, -1, 0, on_notify, s);
	s->tick = event_new(s->base, -1, EV_PERSIST, on_tick, s);
	s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
	s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
	if (!s->notify_ev || !s->tick || !s->sig_term || !s->sig_int ||
	    event_add(s->sig_term, NULL) || event_add(s->sig_int, NULL))
		return parsa_fail(err, PARSA_ENOMEM, "cannot set up events");
	rc = http_datasets_open(&s->data, s->o.state_dir, s->o.cache, err);
	if (rc)
		return rc;
	jo = (struct http_jobs_opts){
		.state_dir = s->o.state_dir, .workers = s->o.workers,
		.nice = s->o.nice, .time_limit = s->o.job_time_limit,
		.threads = s->o.job_threads,
		.data = s->data, .metrics = s->metrics,
		.notify = notify_from_thread, .notify_arg = s,
	};
	rc = http_jobs_open(&s->jobs, &jo, err);
	if (rc)
		return rc;
	rc = http_conns_create(&s->conns, s->base, s->o.max_connections,
			       s->o.max_upload, s->o.read_timeout, err);
	if (rc)
		return rc;
	rc = http_events_create(&s->events, &(struct http_events_opts){
		.base = s->base, .jobs = s->jobs, .metrics = s->metrics,
		.max_streams = s->o.max_streams, .interval = 0.2,
		.conns = s->conns,
		.heartbeat = 15}, err);
	if (rc)
		return rc;
	if (s->o.max_jobs || s->o.max_age > 0) {
		/* every minute, or more often for a short --max-age */
		double every = s->o.max_age > 0 && s->o.max_age / 4 < 60
			? s->o.max_age / 4 : 60;
		struct timeval tv;

		if (every < 0.5)
			every = 0.5;
		tv.tv_sec = (time_t)every;
		tv.tv_usec = (suseconds_t)((every - (double)tv.tv_sec) * 1e6);
		s->retain_ev = event_new(s->base, -1, EV_PERSIST, on_retain, s);
		if (!s->retain_ev || event_add(s->retain_ev, &tv))
			return parsa_fail(err, PARSA_ENOMEM, "cannot set up events");
		retain(s);
	}
	return setup_http(s, err);
}

static void teardown(struct svc *s)
{
	if (s->jobs) {
		http_jobs_stop(s->jobs);
		http_jobs_close(s->jobs);
	}
	/* registration threads have all ended when the loop exits cleanly;
	 * after a setup failure none was started */
	drain_done(s);
	wake_waiters(s, 1);
	http_events_destroy(s->events);
	if (s->http)
		evhttp_free(s->http);
	http_conns_destroy(s->conns);
	http_datasets_close(s->data);
	if (s->notify_ev)
		event_free(s->notify_ev);
	if (s->tick)
		event_free(s->tick);
	if (s->retain_ev)
		event_free(s->retain_ev);
	if (s->sig_term)
		event_free(s->sig_term);
	if (s->sig_int)
		event_free(s->sig_int);
	if (s->base)
		event_base_free(s->base);
	http_metrics_destroy(s->metrics);
	pthread_mutex_destroy(&s->mu);
}

int http_server_run(const struct http_server_opts *o, struct parsa_err *err)
{
	struct svc s;
	int rc;

	memset(&s, 0, sizeof(s));
	s.o = *o;
	pthread_mutex_init(&s.mu, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&s, err);
	if (rc == 0)
		rc = listen_on(&s, err);
	if (rc == 0 && event_base_dispatch(s.base) < 0)
		rc = parsa_fail(err, PARSA_EIO, "event loop failed");
	if (rc == 0)
		fprintf(stderr, "parsa serve: stopped\n");
	teardown(&s);
	libevent_global_shutdown();
	return rc;
}

/* ---- in-process (http_server.h: http_server_open) ---- */

struct http_server {
	struct svc s;
	struct event *wake;  /* bounds http_server_step's wait */
};

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

int http_server_open(struct http_server **out, const struct http_server_opts *o,
		     int listen_fd, struct parsa_err *err)
{
	struct http_server *S = calloc(1, sizeof(*S));
	struct evhttp_bound_socket *b;
	int rc;

	*out = NULL;
	if (!S) {
		close(listen_fd);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	S->s.o = *o;
	pthread_mutex_init(&S->s.mu, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&S->s, err);
	if (rc == 0 && !(S->wake = evtimer_new(S->s.base, on_wake, S)))
		rc = parsa_fail(err, PARSA_ENOMEM, "cannot set up events");
	if (rc == 0) {
		b = evhttp_accept_socket_with_handle(S->s.http, listen_fd);
		if (!b)
			rc = parsa_fail(err, PARSA_EIO, "cannot accept on socket %d",
					listen_fd);
		else
			http_conns_watch_listener(S->s.conns,
						  evhttp_bound_socket_get_listener(b));
	}
	if (rc) {
		close(listen_fd);
		if (S->wake)
			event_free(S->wake);
		teardown(&S->s);
		free(S);
		return rc;
	}
	*out = S;
	return 0;
}

/* Registrations, running jobs (and queued ones unless stopping) or held
 * replies. */
static int busy(struct svc *s)
{
	uint64_t n[HTTP_JOB_NSTATES];
	unsigned loaders;
	int done;

	pthread_mutex_lock(&s->mu);
	loaders = s->loaders;
	done = s->done != NULL;
	pthread_mutex_unlock(&s->mu);
	http_jobs_counts(s->jobs, n);
	return loaders || done || s->waiters || n[HTTP_JOB_RUNNING] ||
	       (!s->stopping && n[HTTP_JOB_QUEUED]);
}

int http_server_step(struct http_server *S, double max_wait)
{
	struct timeval tv;

	tv.tv_sec = (time_t)max_wait;
	tv.tv_usec = (suseconds_t)((max_wait - (double)tv.tv_sec) * 1e6);
	evtimer_add(S->wake, &tv);
	event_base_loop(S->s.base, EVLOOP_ONCE);
	return busy(&S->s);
}

void http_server_close(struct http_server *S)
{
	struct svc *s;

	if (!S)
		return;
	s = &S->s;
	/* as a second stop signal: no new work, running jobs interrupted,
	 * held replies answered, streams ended; then wait for the threads */
	s->stopping = 1;
	http_jobs_stop(s->jobs);
	http_jobs_interrupt(s->jobs);
	s->interrupted = 1;
	wake_waiters(s, 1);
	http_events_close_all(s->events);
	for (double w = 0; http_server_step(S, w); w = 0.001)
		;
	event_free(S->wake);
	teardown(s);
	free(S);
}
