/*
 * http_route: path -> route (see http_route.h).  The path is split on '/'
 * into at most 6 segments; ids are taken literally (no percent-decoding:
 * valid ids never need it).
 */
#include <stddef.h>
#include <string.h>

#include "http_route.h"

#define MAX_SEG 6

static const struct {
	const char *label;
	unsigned methods;
	const char *allow;
} routes[HTTP_R_COUNT] = {
	[HTTP_R_NONE] = {"other", 0, ""},
	[HTTP_R_HEALTHZ] = {"/healthz", HTTP_M_GET | HTTP_M_HEAD, "GET, HEAD"},
	[HTTP_R_METRICS] = {"/metrics", HTTP_M_GET | HTTP_M_HEAD, "GET, HEAD"},
	[HTTP_R_DATASETS] = {"/v1/datasets", HTTP_M_GET | HTTP_M_POST, "GET, POST"},
	[HTTP_R_DATASET] = {"/v1/datasets/{id}", HTTP_M_GET | HTTP_M_DELETE, "GET, DELETE"},
	[HTTP_R_JOBS] = {"/v1/jobs", HTTP_M_GET | HTTP_M_POST, "GET, POST"},
	[HTTP_R_JOB] = {"/v1/jobs/{id}", HTTP_M_GET | HTTP_M_DELETE, "GET, DELETE"},
	[HTTP_R_REPORT] = {"/v1/jobs/{id}/report", HTTP_M_GET, "GET"},
	[HTTP_R_PLACEMENT] = {"/v1/jobs/{id}/placement/{which}", HTTP_M_GET, "GET"},
	[HTTP_R_EXAMPLE] = {"/v1/jobs/{id}/examples/{i}", HTTP_M_GET, "GET"},
	[HTTP_R_FEATURE] = {"/v1/jobs/{id}/features/{f}", HTTP_M_GET, "GET"},
	[HTTP_R_ASSIGN] = {"/v1/jobs/{id}/assign", HTTP_M_POST, "POST"},
	[HTTP_R_EVENTS] = {"/v1/jobs/{id}/events", HTTP_M_GET, "GET"},
	[HTTP_R_UI] = {"/ui", HTTP_M_GET | HTTP_M_HEAD, "GET, HEAD"},
	[HTTP_R_EXAMPLE_KEY] = {"/v1/jobs/{id}/examples", HTTP_M_GET, "GET"},
};

unsigned http_route_methods(enum http_route_id id)
{
	return (unsigned)id < HTTP_R_COUNT ? routes[id].methods : 0;
}

const char *http_route_allow(enum http_route_id id)
{
	return (unsigned)id < HTTP_R_COUNT ? routes[id].allow : "";
}

const char *http_route_label(enum http_route_id id)
{
	return (unsigned)id < HTTP_R_COUNT ? routes[id].label : "other";
}

int http_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

struct seg {
	const char *p;
	size_t n;
};

/* Split path into segments; -1 when there are more than MAX_SEG or an
 * empty one in the middle ("//"). */
static int split(const char *path, struct seg *s)
{
	int n = 0;
	const char *p = path;

	if (*p == '/')
		p++;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == 0 || n == MAX_SEG)
			return -1;
		s[n].p = p;
		s[n++].n = len;
		if (!e)
			break;
		p = e + 1; /* a trailing '/' ends the loop on "" */
	}
	return n;
}

static int seg_is(const struct seg *s, const char *lit)
{
	return s->n == strlen(lit) && memcmp(s->p, lit, s->n) == 0;
}

static int take_id(const struct seg *s, char *out)
{
	if (s->n == 0 || s->n >= HTTP_ID_MAX)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		char c = s->p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return -1;
	}
	memcpy(out, s->p, s->n);
	out[s->n] = '\0';
	return 0;
}

/* /v1/jobs/{id}/... with n >= 3 segments. */
static enum http_route_id match_job(const struct seg *s, int n,
				    struct http_route *r)
{
	if (take_id(&s[2], r->rid))
		return HTTP_R_NONE;
	if (n == 3)
		return HTTP_R_JOB;
	if (n == 4 && seg_is(&s[3], "report"))
		return HTTP_R_REPORT;
	if (n == 4 && seg_is(&s[3], "assign"))
		return HTTP_R_ASSIGN;
	if (n == 4 && seg_is(&s[3], "events"))
		return HTTP_R_EVENTS;
	if (n == 4 && seg_is(&s[3], "examples"))
		return HTTP_R_EXAMPLE_KEY;
	if (n != 5)
		return HTTP_R_NONE;
	if (seg_is(&s[3], "placement")) {
		if (seg_is(&s[4], "examples") || seg_is(&s[4], "features")) {
			r->features = seg_is(&s[4], "features");
			return HTTP_R_PLACEMENT;
		}
		return HTTP_R_NONE;
	}
	if (seg_is(&s[3], "examples") || seg_is(&s[3], "features")) {
		r->index_ok = http_parse_u64(s[4].p, s[4].n, &r->index) == 0;
		return seg_is(&s[3], "examples") ? HTTP_R_EXAMPLE : HTTP_R_FEATURE;
	}
	return HTTP_R_NONE;
}

/* An asset name: 1..63 of [A-Za-z0-9._-], not starting with '.'. */
static int take_asset(const struct seg *s, char *out)
{
	if (s->n == 0 || s->n >= HTTP_ID_MAX || s->p[0] == '.')
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		char c = s->p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return -1;
	}
	memcpy(out, s->p, s->n);
	out[s->n] = '\0';
	return 0;
}

static enum http_route_id match(const char *path, struct http_route *r)
{
	struct seg s[MAX_SEG];
	int n = split(path, s);

	if (n == 0 || (n == 1 && seg_is(&s[0], "ui")))
		return HTTP_R_UI;
	if (n == 2 && seg_is(&s[0], "ui"))
		return take_asset(&s[1], r->asset) ? HTTP_R_NONE : HTTP_R_UI;

	if (n == 1 && seg_is(&s[0], "healthz"))
		return HTTP_R_HEALTHZ;
	if (n == 1 && seg_is(&s[0], "metrics"))
		return HTTP_R_METRICS;
	if (n < 2 || !seg_is(&s[0], "v1"))
		return HTTP_R_NONE;
	if (seg_is(&s[1], "datasets")) {
		if (n == 2)
			return HTTP_R_DATASETS;
		if (n == 3 && take_id(&s[2], r->rid) == 0)
			return HTTP_R_DATASET;
		return HTTP_R_NONE;
	}
	if (!seg_is(&s[1], "jobs"))
		return HTTP_R_NONE;
	return n == 2 ? HTTP_R_JOBS : match_job(s, n, r);
}

enum http_route_id http_route_match(const char *path, struct http_route *r)
{
	memset(r, 0, sizeof(*r));
	r->id = match(path && *path ? path : "/", r);
	if (r->id == HTTP_R_NONE)
		r->rid[0] = '\0';
	return r->id;
}
