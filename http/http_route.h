/*
 * http_route: the URL routing of the service, a pure function from a path
 * (without the query) to a route and its parameters, plus the methods each
 * route allows (for 405 + Allow) and a stable route label for /metrics.
 * Unit-tested in tests/test_http_route.c.
 */
#ifndef HTTP_ROUTE_H
#define HTTP_ROUTE_H

#include <stddef.h>
#include <stdint.h>

enum http_route_id {
	HTTP_R_NONE = 0,     /* unknown path: 404 */
	HTTP_R_HEALTHZ,      /* /healthz */
	HTTP_R_METRICS,      /* /metrics */
	HTTP_R_DATASETS,     /* /v1/datasets */
	HTTP_R_DATASET,      /* /v1/datasets/{id} */
	HTTP_R_JOBS,         /* /v1/jobs */
	HTTP_R_JOB,          /* /v1/jobs/{id} */
	HTTP_R_REPORT,       /* /v1/jobs/{id}/report */
	HTTP_R_PLACEMENT,    /* /v1/jobs/{id}/placement/{examples|features} */
	HTTP_R_EXAMPLE,      /* /v1/jobs/{id}/examples/{i} */
	HTTP_R_FEATURE,      /* /v1/jobs/{id}/features/{f} */
	HTTP_R_ASSIGN,       /* /v1/jobs/{id}/assign */
	HTTP_R_EVENTS,       /* /v1/jobs/{id}/events (http_events.h) */
	HTTP_R_UI,           /* / and /ui/{asset}: the web page (http_ui.h) */
	HTTP_R_EXAMPLE_KEY,  /* /v1/jobs/{id}/examples (?key=: the user's id) */
	HTTP_R_COUNT
};

/* Method bits. */
#define HTTP_M_GET 1u
#define HTTP_M_POST 2u
#define HTTP_M_DELETE 4u
#define HTTP_M_HEAD 8u
#define HTTP_M_OTHER 16u

#define HTTP_ID_MAX 64

struct http_route {
	enum http_route_id id;
	char rid[HTTP_ID_MAX];  /* {id}: 1..63 of [A-Za-z0-9_-], else "" */
	int features;           /* PLACEMENT: 1 = features, 0 = examples */
	uint64_t index;         /* EXAMPLE / FEATURE: the number */
	int index_ok;           /* 0: {i}/{f} is not an unsigned 64-bit decimal */
	char asset[HTTP_ID_MAX]; /* UI: the asset's name ("" for / and /ui/):
				  * 1..63 of [A-Za-z0-9._-], not starting
				  * with '.' */
};

/*
 * Match path (e.g. "/v1/jobs/j3/features/17"; a trailing '/' is accepted,
 * an empty or NULL path is "/").  Fills *r and returns r->id (HTTP_R_NONE
 * for an unknown path or an {id} that is not a valid id).
 */
enum http_route_id http_route_match(const char *path, struct http_route *r);

/* The HTTP_M_* bits a route allows (0 for HTTP_R_NONE). */
unsigned http_route_methods(enum http_route_id id);

/* The Allow header value of a route, e.g. "GET, DELETE" (static). */
const char *http_route_allow(enum http_route_id id);

/* The metrics label of a route, e.g. "/v1/jobs/{id}" (static). */
const char *http_route_label(enum http_route_id id);

/* Parse an unsigned 64-bit decimal (digits only, no sign, no overflow)
 * of s[0..len); 0 on success, -1 otherwise. */
int http_parse_u64(const char *s, size_t len, uint64_t *out);

#endif /* HTTP_ROUTE_H */
