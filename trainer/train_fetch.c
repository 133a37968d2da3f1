/*
 * train_fetch: HTTP GET over a plain socket, and the placement download
 * (train_fetch.h).
 */
#include "train_fetch.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_BODY ((size_t)1 << 32) /* 4 GiB */

struct url {
	char host[256], port[16], path[1024];
};

int train_is_url(const char *s)
{
	return s && strncmp(s, "http://", 7) == 0;
}

static int parse_url(const char *s, struct url *u, struct parsa_err *err)
{
	const char *h = s + 7, *slash, *colon;
	size_t hl;

	if (!train_is_url(s))
		return parsa_fail(err, PARSA_EINVAL, "%s: not an http:// URL",
				  s);
	slash = strchr(h, '/');
	if (!slash)
		slash = h + strlen(h);
	colon = memchr(h, ':', (size_t)(slash - h));
	hl = (size_t)((colon ? colon : slash) - h);
	if (hl == 0 || hl >= sizeof(u->host))
		return parsa_fail(err, PARSA_EINVAL, "%s: bad host", s);
	memcpy(u->host, h, hl);
	u->host[hl] = '\0';
	if (colon) {
		size_t pl = (size_t)(slash - colon - 1);

		if (pl == 0 || pl >= sizeof(u->port) ||
		    strspn(colon + 1, "0123456789") < pl ||
		    strtoul(colon + 1, NULL, 10) < 1 ||
		    strtoul(colon + 1, NULL, 10) > 65535)
			return parsa_fail(err, PARSA_EINVAL,
					  "%s: bad port (1..65535)", s);
		memcpy(u->port, colon + 1, pl);
		u->port[pl] = '\0';
	} else {
		snprintf(u->port, sizeof(u->port), "80");
	}
	if (snprintf(u->path, sizeof(u->path), "%s", *slash ? slash : "/") >=
	    (int)sizeof(u->path))
		return parsa_fail(err, PARSA_EINVAL, "%s: path too long", s);
	return 0;
}

static int dial(const struct url *u, double timeout_s, const char *url,
		struct parsa_err *err)
{
	struct addrinfo hints = {0}, *res = NULL, *a;
	struct timeval tv;
	int fd = -1, e, last = 0;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = AF_UNSPEC;
	e = getaddrinfo(u->host, u->port, &hints, &res);
	if (e) {
		parsa_fail(err, PARSA_EIO, "GET %s: %s", url, gai_strerror(e));
		return -1;
	}
	tv.tv_sec = (time_t)timeout_s;
	tv.tv_usec = (suseconds_t)((timeout_s - (double)tv.tv_sec) * 1e6);
	for (a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		last = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		parsa_fail(err, PARSA_EIO, "GET %s: %s", url,
			   strerror(last ? last : ECONNREFUSED));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read everything until the peer closes. */
static int recv_all(int fd, char **buf, size_t *len, const char *url,
		    struct parsa_err *err)
{
	size_t cap = 65536, n = 0;
	char *b = malloc(cap + 1);

	while (b) {
		ssize_t r;

		if (n == cap) {
			char *nb = cap < MAX_BODY ? realloc(b, 2 * cap + 1)
						  : NULL;

			if (!nb) {
				free(b);
				return parsa_fail(err, PARSA_ENOMEM, "GET %s: "
						  "response too large", url);
			}
			b = nb;
			cap *= 2;
		}
		r = recv(fd, b + n, cap - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(b);
			return parsa_fail(err, PARSA_EIO, "GET %s: %s", url,
					  errno == EAGAIN ? "timed out"
							  : strerror(errno));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (!b)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* Value of header name in head[0..hl) (case-insensitive), or NULL. */
static const char *header(const char *head, size_t hl, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = head; p && p < head + hl;) {
		const char *eol = strstr(p, "\r\n");

		if (!eol || eol > head + hl)
			break;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 &&
		    p[nl] == ':') {
			p += nl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
		p = eol + 2;
	}
	return NULL;
}

/* Decode a chunked body in place; -1 if malformed. */
static int dechunk(char *b, size_t n, size_t *out)
{
	size_t r = 0, w = 0;

	for (;;) {
		char *end;
		unsigned long long sz;
		const char *eol = r < n ? strstr(b + r, "\r\n") : NULL;

		if (!eol)
			return -1;
		errno = 0;
		sz = strtoull(b + r, &end, 16);
		if (errno || end == b + r)
			return -1;
		r = (size_t)(eol - b) + 2;
		if (sz == 0)
			break;
		if (sz > n - r || n - r - sz < 2)
			return -1;
		memmove(b + w, b + r, (size_t)sz);
		w += (size_t)sz;
		r += (size_t)sz + 2;
	}
	b[w] = '\0';
	*out = w;
	return 0;
}

/* Split the response into status and body (moved to the front). */
static int parse_response(char *b, size_t n, char **body, size_t *len,
			  const char *url, struct parsa_err *err)
{
	char *eoh = strstr(b, "\r\n\r\n");
	const char *te, *cl;
	unsigned long long clen = 0;
	size_t hl, bl;
	int status = 0, chunked;

	if (!eoh || sscanf(b, "HTTP/%*d.%*d %d", &status) != 1)
		return parsa_fail(err, PARSA_EIO, "GET %s: not an HTTP "
				  "response", url);
	hl = (size_t)(eoh - b) + 2;
	bl = n - hl - 2;
	te = header(b, hl, "Transfer-Encoding");
	cl = header(b, hl, "Content-Length");
	/* read the headers before the body moves over them */
	chunked = te && strncasecmp(te, "chunked", 7) == 0;
	if (cl) { /* digits only: no sign, no junk */
		char *e;

		while (*cl == ' ' || *cl == '\t')
			cl++;
		errno = 0;
		clen = strtoull(cl, &e, 10);
		while (*e == ' ' || *e == '\t')
			e++;
		if (*cl < '0' || *cl > '9' || errno || (*e != '\r' && *e))
			return parsa_fail(err, PARSA_EIO, "GET %s: bad "
					  "Content-Length '%.*s'", url,
					  (int)strcspn(cl, "\r\n") > 30 ? 30 :
					  (int)strcspn(cl, "\r\n"), cl);
	}
	memmove(b, eoh + 4, bl);
	b[bl] = '\0';
	if (chunked) {
		if (dechunk(b, bl, &bl))
			return parsa_fail(err, PARSA_EIO, "GET %s: bad chunked "
					  "body", url);
	} else if (cl) {
		if (clen > bl)
			return parsa_fail(err, PARSA_EIO, "GET %s: body cut "
					  "short (%zu of %llu bytes)", url, bl,
					  clen);
		bl = (size_t)clen;
		b[bl] = '\0';
	}
	if (status != 200)
		return parsa_fail(err, PARSA_EIO, "GET %s: HTTP %d: %.200s",
				  url, status, b);
	*body = b;
	*len = bl;
	return 0;
}

int train_http_get(const char *url, double timeout_s, char **body,
		   size_t *len, struct parsa_err *err)
{
	struct url u;
	char req[1400], *buf = NULL;
	size_t n = 0;
	int fd, rc, m;

	*body = NULL;
	*len = 0;
	rc = parse_url(url, &u, err);
	if (rc)
		return rc;
	fd = dial(&u, timeout_s > 0 ? timeout_s : 30, url, err);
	if (fd < 0)
		return err ? err->code : PARSA_EIO;
	m = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s:%s\r\n"
		     "Accept: text/plain\r\nConnection: close\r\n\r\n",
		     u.path, u.host, u.port);
	if (m < 0 || (size_t)m >= sizeof(req) || send_all(fd, req, (size_t)m))
		rc = parsa_fail(err, PARSA_EIO, "GET %s: cannot send the "
				"request", url);
	if (!rc)
		rc = recv_all(fd, &buf, &n, url, err);
	close(fd);
	if (!rc)
		rc = parse_response(buf, n, body, len, url, err);
	if (rc)
		free(buf);
	return rc;
}

static int save(const char *path, const char *b, size_t n,
		struct parsa_err *err)
{
	FILE *f = fopen(path, "wb");
	int bad;

	if (!f)
		return parsa_fail(err, PARSA_EIO, "%s: %s", path,
				  strerror(errno));
	bad = fwrite(b, 1, n, f) != n;
	bad |= fclose(f) != 0;
	return bad ? parsa_fail(err, PARSA_EIO, "%s: write failed", path) : 0;
}

void train_fetch_cleanup(const char *prefix)
{
	char p[PATH_MAX + 32], dir[PATH_MAX];
	const char *slash = strrchr(prefix, '/');

	snprintf(p, sizeof(p), "%s.examples", prefix);
	unlink(p);
	snprintf(p, sizeof(p), "%s.features", prefix);
	unlink(p);
	if (slash && (size_t)(slash - prefix) < sizeof(dir)) {
		memcpy(dir, prefix, (size_t)(slash - prefix));
		dir[slash - prefix] = '\0';
		rmdir(dir);
	}
}

int train_fetch_placement(const char *url, char *prefix, size_t size,
			  double timeout_s, struct parsa_err *err)
{
	static const char *const what[2] = {"examples", "features"};
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX - 64], u[2048], path[PATH_MAX];
	size_t ul = strlen(url);
	int rc = 0;

	while (ul > 0 && url[ul - 1] == '/')
		ul--;
	snprintf(dir, sizeof(dir), "%s/parsa-train-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return parsa_fail(err, PARSA_EIO, "%s: %s", dir,
				  strerror(errno));
	if (snprintf(prefix, size, "%s/placement", dir) >= (int)size)
		rc = parsa_fail(err, PARSA_EINVAL, "temporary path too long");
	for (int i = 0; !rc && i < 2; i++) {
		char *body;
		size_t len;

		if (snprintf(u, sizeof(u), "%.*s/placement/%s", (int)ul, url,
			     what[i]) >= (int)sizeof(u))
			rc = parsa_fail(err, PARSA_EINVAL, "URL too long");
		if (!rc)
			rc = train_http_get(u, timeout_s, &body, &len, err);
		if (rc)
			break;
		snprintf(path, sizeof(path), "%s.%s", prefix, what[i]);
		rc = save(path, body, len, err);
		free(body);
	}
	if (rc) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/placement", dir);
		train_fetch_cleanup(p);
	}
	return rc;
}
