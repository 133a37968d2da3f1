/*
 * http_problem: errors of the HTTP service as application/problem+json
 * (RFC 9457) and the one table that maps parsa status codes to HTTP
 * statuses.  Pure functions (no libevent), unit-tested in
 * tests/test_http_problem.c.
 */
#ifndef HTTP_PROBLEM_H
#define HTTP_PROBLEM_H

#include <jansson.h>

/* The reason phrase of an HTTP status ("Not Found"; "Error" if unknown). */
const char *http_status_phrase(int status);

/*
 * The HTTP status for a parsa status (parsa_err.h): EINVAL/ERANGE -> 422,
 * EPARSE -> 422, ENOMEM -> 503, EIO -> 500, ESTATE -> 409, ECANCEL -> 409,
 * anything else -> 500.
 */
int http_status_of_parsa(int code);

/*
 * New reference: {"type", "title", "status", "detail"} with type
 * "urn:parsa:problem:<slug>" (slug = lower-case title with '-' for spaces,
 * or the given slug when non-NULL) and title the status phrase.  detail is
 * copied (NULL = the title; invalid UTF-8 as http_json_text).  NULL only
 * on out of memory.
 */
json_t *http_problem_new(int status, const char *slug, const char *detail);

/* 1 if s is valid UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF), else 0. */
int http_utf8_valid(const char *s);

/* New reference: s as a JSON string, each byte of s that is not part of
 * valid UTF-8 replaced by '?' (jansson refuses invalid UTF-8: a client's
 * bytes echoed in a reply, as a path or a parse error quoting an upload,
 * must not make the reply fail).  NULL only on out of memory. */
json_t *http_json_text(const char *s);

/* New string: the compact JSON text of a problem (as http_problem_new);
 * NULL on out of memory. */
char *http_problem_text(int status, const char *slug, const char *detail);

#endif /* HTTP_PROBLEM_H */
