/*
 * http_store: durable files under the service's --state-dir.  Every file
 * is written atomically: to "PATH.tmp.<n>", fsync'ed, renamed over PATH,
 * and the directory fsync'ed, so after a crash PATH holds either the old
 * or the new content, never a torn one.
 *
 * Layout (see docs/http.md):
 *   STATE/datasets/D.json    a dataset's description (http_data.h)
 *   STATE/datasets/D.data    an uploaded dataset file, as received
 *   STATE/jobs/J/job.json    a job: parameters, state, error, times
 *   STATE/jobs/J/report.json the partition report (the CLI's JSON)
 *   STATE/jobs/J/placement.examples, placement.features  the CLI's files
 *   STATE/jobs/J/placement.nbr  neighbor sets S_i (binary, for assign)
 */
#ifndef HTTP_STORE_H
#define HTTP_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

/* An atomic file being written. */
struct http_store_file {
	int fd;                 /* -1 when closed */
	char path[4096];        /* final name */
	char tmp[4096 + 32];    /* temporary name */
};

/* mkdir -p (mode 0755).  0 or PARSA_EIO. */
int http_store_mkdirs(const char *path, struct parsa_err *err);

/* Open a temporary file for path.  0 or PARSA_EIO. */
int http_store_begin(struct http_store_file *f, const char *path,
		     struct parsa_err *err);

/* Append len bytes.  0 or PARSA_EIO. */
int http_store_write(struct http_store_file *f, const void *buf, size_t len,
		     struct parsa_err *err);

/* fsync, close, rename over the path, fsync the directory.  On failure
 * the temporary file is removed.  0 or PARSA_EIO. */
int http_store_commit(struct http_store_file *f, struct parsa_err *err);

/* Close and remove the temporary file (after an error); idempotent. */
void http_store_abort(struct http_store_file *f);

/* Write buf[0..len) to path atomically.  0 or PARSA_EIO. */
int http_store_put(const char *path, const void *buf, size_t len,
		   struct parsa_err *err);

/* Write j (pretty, keys as given) to path atomically.  0 or an error. */
int http_store_put_json(const char *path, const json_t *j,
			struct parsa_err *err);

/* New reference: the JSON object in path; NULL with err set (PARSA_EIO
 * when missing, PARSA_EPARSE when malformed). */
json_t *http_store_get_json(const char *path, struct parsa_err *err);

/* fsync an existing file and its directory (files written by others,
 * e.g. part_placement_write).  0 or PARSA_EIO. */
int http_store_sync(const char *path, struct parsa_err *err);

/* Remove the temporary files a killed process left in dir (names
 * NAME.tmp.PID.N, as http_store_begin makes them, and .NAME.tmp.PID[.I],
 * as part_out makes them for the placement files); *files and *bytes
 * (may be NULL) count what went.  0, or PARSA_EIO when dir cannot be
 * read. */
int http_store_sweep(const char *dir, unsigned *files, uint64_t *bytes,
		     struct parsa_err *err);

/* The highest id number given out in dir (its file "last-id", written by
 * http_store_put_last_id when an entry is deleted, so that a deleted
 * entry's id is never given again): 0 when there is none. */
uint64_t http_store_get_last_id(const char *dir);

/* Record v as dir's highest id given out (atomically).  0 or PARSA_EIO. */
int http_store_put_last_id(const char *dir, uint64_t v, struct parsa_err *err);

/* Read a whole file into a new buffer (*buf, *len; NUL-terminated).
 * 0, PARSA_EIO or PARSA_ENOMEM. */
int http_store_slurp(const char *path, char **buf, size_t *len,
		     struct parsa_err *err);

/* 1 when err is a write that failed because the disk (or the quota) is
 * full (ENOSPC, EDQUOT): the service answers 507 for it. */
int http_store_full(const struct parsa_err *err);

#endif /* HTTP_STORE_H */
