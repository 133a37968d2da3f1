/*
 * train_fetch: a placement from the HTTP service (`parsa serve`).
 *
 * `--placement http://HOST:PORT/v1/jobs/ID` names a finished job; its
 * placement is GET .../placement/examples and GET .../placement/features
 * (text, the same format as PREFIX.examples / PREFIX.features).  A plain
 * blocking socket client (http:// only, HTTP/1.1 with Connection: close,
 * Content-Length, chunked or read-to-close bodies) saves both bodies into
 * a new temporary directory so part_placement_read can check them like
 * files.
 */
#ifndef TRAIN_FETCH_H
#define TRAIN_FETCH_H

#include <stddef.h>

#include "parsa_err.h"

/* 1 if s starts with "http://". */
int train_is_url(const char *s);

/*
 * Fetch the placement of job URL into DIR/placement.examples and
 * DIR/placement.features, DIR a new directory under $TMPDIR (or /tmp).
 * prefix (size bytes) receives "DIR/placement".  Errors: PARSA_EINVAL (bad
 * URL), PARSA_EIO ("GET URL: connection refused", "GET URL: HTTP 404: body
 * excerpt"), PARSA_ENOMEM.  On error nothing is left behind.
 */
int train_fetch_placement(const char *url, char *prefix, size_t size,
			  double timeout_s, struct parsa_err *err);

/* Remove what train_fetch_placement made (prefix as it returned). */
void train_fetch_cleanup(const char *prefix);

/*
 * GET url into a new buffer (*body, *len; free() it).  HTTP status other
 * than 200 is an error (PARSA_EIO with the status and a body excerpt).
 */
int train_http_get(const char *url, double timeout_s, char **body,
		   size_t *len, struct parsa_err *err);

#endif /* TRAIN_FETCH_H */
