/*
 * fuzz_http: libFuzzer target for the HTTP layer of `parsa serve`: the
 * request line, headers, query strings, bodies (chunked or not) and the
 * JSON of every route (jobs, assign, datasets by path), through the real
 * service code (http_server_open over http/, libevent's evhttp).
 *
 * Input: the raw bytes one client sends on one connection (any number
 * of requests, keep-alive or pipelined); or, so that mutations of a body
 * keep their framing, "#json METHOD TARGET" or "#body METHOD TARGET", a
 * newline and the body: sent as one HTTP/1.1 request with the body's
 * Content-Length (and Content-Type: application/json for #json).  An
 * input ending in a NUL byte is sent without it, and the client then
 * closes at once, without waiting for the replies (a client gone while
 * its upload is read or its long poll held).
 *
 * The service: each input gets a fresh one (http_server_open) on a copy
 * of a template state directory, made once per process: dataset d1
 * registered from a small libsvm file and job j1 on it (k = 2) already
 * succeeded, so lookups, placements and assign answer.  --data-dir holds
 * that file and two more (a.svm; g.txt, SNAP edges; p.csv, pairs) for
 * registrations by path; a bearer token "fuzz-token" when the input has
 * the bytes "Authorization:" (else none); --max-upload 64 KiB and
 * --max-upload-total 128 KiB (so the over-limit answers are reached);
 * one job worker, a job time limit of 2 s.  It accepts on an AF_UNIX socket in the private temporary
 * directory (no network).  The input is written as the service reads
 * it, the replies are read; when the service has been idle (no bytes
 * moved, no dataset read, queued or running job or held reply) for 4
 * loop turns the client half-closes, then closes.  Jobs an input submits
 * run for real (on these datasets they take milliseconds); what the
 * service started is let finish, then http_server_close interrupts any
 * job still running.

 * Everything is under one mkdtemp directory (/tmp/parsa-fuzz-http-*),
 * removed at a normal exit (a crash leaves it, with the state of the
 * failing input); each input's state directory is removed after it.
 *
 * PARSA_FUZZ_HTTP_SHOW=1 in the environment prints the replies (their
 * first 16 KiB), for writing the corpus.
 *
 * Invariants: no crash, no sanitizer report, no leak; every reply starts
 * with an HTTP/1.x status line; no reply (of the first 16 KiB) says "out
 * of memory" or has status 500 (no allocation fails here, and nothing a
 * client sends is the server's own fault).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "http_server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static int rm_one(const char *p, const struct stat *sb, int flag,
		  struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

static void rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	rm_tree(root);
}

static void put(const char *name, const char *text)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, name);
	f = fopen(p, "wb");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static const char *copy_src, *copy_dst;

static int copy_one(const char *p, const struct stat *sb, int flag,
		    struct FTW *f)
{
	char to[512], buf[8192];
	FILE *in, *out;
	size_t n;

	(void)f;
	snprintf(to, sizeof(to), "%s%s", copy_dst, p + strlen(copy_src));
	if (flag == FTW_D)
		return mkdir(to, 0755) != 0 && errno != EEXIST;
	if (flag != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	in = fopen(p, "rb");
	out = fopen(to, "wb");
	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	if (in)
		fclose(in);
	return !in || !out || fclose(out) != 0;
}

/* Copy the tree src to dst (directories and regular files). */
static void copy_tree(const char *src, const char *dst)
{
	copy_src = src;
	copy_dst = dst;
	if (nftw(src, copy_one, 16, FTW_PHYS) != 0)
		abort();
}

static int listener(char *path, size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(path, len, "%s/sock", root);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(fd, 16) != 0)
		abort();
	return fd;
}

static int client(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		abort();
	return fd;
}

/* Serve one connection carrying data[0..size) on a service over state;
 * the replies' first bytes into out (NUL-terminated, cut to cap). */
static void exchange(const char *state, const uint8_t *data, size_t size,
		     char *out, size_t cap)
{
	struct http_server_opts o = {
		.host = "unix", .state_dir = state, .data_dir = root,
		.workers = 1, .max_upload = 65536, .max_upload_total = 131072,
		.grace = 0, .cache = 2,
		.job_time_limit = 2, .job_threads = 1, .max_streams = 2,
		.read_timeout = 5, .max_connections = 4,
	};
	struct http_server *S;
	struct parsa_err err;
	char path[96], buf[4096];
	size_t sent = 0, got = 0;
	/* a last byte NUL: the client hangs up once it has sent the rest */
	int hangup = size > 0 && data[size - 1] == '\0';
	int fd, idle = 0, half = 0, busy = 1;

	if (hangup)
		size--;
	/* an input that sends an Authorization header runs with a token */
	if (memmem(data, size, "Authorization:", 14))
		o.token = "fuzz-token";
	parsa_err_clear(&err);
	if (http_server_open(&S, &o, listener(path, sizeof(path)), &err)) {
		fprintf(stderr, "fuzz_http: %s\n", err.msg);
		abort();
	}
	fd = client(path);
	/* at most 20000 loop turns (~20 s when every turn waits) */
	for (int turn = 0; turn < 20000; turn++) {
		int moved = 0;
		ssize_t n;

		if (sent < size) {
			n = write(fd, data + sent, size - sent);
			if (n > 0) {
				sent += (size_t)n;
				moved = 1;
			}
			if (sent == size && hangup) {
				close(fd);
				fd = -1;
				break;
			}
		}
		busy = http_server_step(S, busy ? 0.001 : 0);
		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			if (got + 1 < cap) {
				size_t c = (size_t)n < cap - 1 - got ? (size_t)n : cap - 1 - got;

				memcpy(out + got, buf, c);
				got += c;
				out[got] = '\0';
			}
			moved = 1;
		}
		if (n == 0)
			break; /* the service closed the connection */
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			break;
		idle = moved || busy ? 0 : idle + 1;
		if (idle >= 4 && sent == size && !half) {
			shutdown(fd, SHUT_WR);
			half = 1;
			idle = 0;
		} else if (idle >= 4 && half) {
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	/* the service finishes what it started (for a client gone or not) */
	while (http_server_step(S, 0.001))
		;
	for (int i = 0; i < 3; i++)
		http_server_step(S, 0);
	http_server_close(S);
}

/* The template state: d1 from a.svm, j1 on it succeeded. */
static void make_template(void)
{
	static const char reqs[] =
		"POST /v1/datasets HTTP/1.1\r\nHost: x\r\n"
		"Content-Type: application/json\r\nContent-Length: 17\r\n\r\n"
		"{\"path\":\"a.svm\"}\n"
		"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\n"
		"{\"dataset\":\"d1\",\"k\":2}\n\n\n\n"
		"GET /v1/jobs/j1?wait=30 HTTP/1.1\r\nHost: x\r\n\r\n";
	char t[96], out[8192];

	snprintf(t, sizeof(t), "%s/template", root);
	exchange(t, (const uint8_t *)reqs, sizeof(reqs) - 1, out, sizeof(out));
	if (!strstr(out, "\"state\":\"succeeded\"")) {
		fprintf(stderr, "fuzz_http: the template job did not succeed:\n%s\n",
			out);
		abort();
	}
}

/*
 * "#json METHOD TARGET\nBODY" or "#body METHOD TARGET\nBODY" into one
 * HTTP/1.1 request with BODY's Content-Length (and for #json its
 * Content-Type), malloc'd into *req; 0 if data is not of that form.
 */
static size_t framed(const uint8_t *data, size_t size, uint8_t **req)
{
	const uint8_t *nl;
	size_t head, body, cap, n;
	int json;

	if (size < 6 || (memcmp(data, "#json ", 6) && memcmp(data, "#body ", 6)))
		return 0;
	json = data[1] == 'j';
	nl = memchr(data, '\n', size);
	head = nl ? (size_t)(nl - data) - 6 : size - 6;
	body = nl ? size - (size_t)(nl - data) - 1 : 0;
	cap = head + body + 160;
	if (!(*req = malloc(cap)))
		abort();
	memcpy(*req, data + 6, head);
	n = head + (size_t)snprintf((char *)*req + head, cap - head,
				    " HTTP/1.1\r\nHost: x\r\n%sContent-Length: "
				    "%zu\r\n\r\n", json ? "Content-Type: "
				    "application/json\r\n" : "", body);
	if (body)
		memcpy(*req + n, nl + 1, body);
	return n + body;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[16384];
	uint8_t *req = NULL;
	size_t len;
	char state[96], tmpl[96];
	/* PARSA_FUZZ_HTTP_SHOW=1: print the replies (writing a corpus) */
	const char *show = getenv("PARSA_FUZZ_HTTP_SHOW");

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/parsa-fuzz-http-XXXXXX");
		if (!mkdtemp(root))
			abort();
		atexit(cleanup);
		put("a.svm", "1 1:1 2:1 3:1\n-1 2:1 3:1\n1 4:1 5:1\n"
		    "-1 5:1 6:1\n1 1:1 6:1\n-1 3:1 4:1\n");
		put("g.txt", "# edges\n1\t2\n2\t3\n3\t1\n4\t5\n");
		put("p.csv", "user,item\n1,10\n2,10\n2,11\n3,12\n");
		make_template();
	}
	snprintf(state, sizeof(state), "%s/state", root);
	snprintf(tmpl, sizeof(tmpl), "%s/template", root);
	rm_tree(state);
	copy_tree(tmpl, state);
	out[0] = '\0';
	len = framed(data, size, &req);
	exchange(state, req ? req : data, req ? len : size, out, sizeof(out));
	free(req);
	if (show)
		printf("%s\n----\n", out);
	if (out[0] && strncmp(out, "HTTP/1.", 7) != 0)
		abort();
	/* nothing runs out of memory here, and nothing a client sends is the
	 * server's fault: "out of memory" or a 500 is a mishandled input */
	if (strstr(out, "\"out of memory\"") || strstr(out, "\"status\":500"))
		abort();
	rm_tree(state);
	return 0;
}
