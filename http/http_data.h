/*
 * http_data: the datasets of the HTTP service.  A dataset is a file (an
 * upload kept under STATE/datasets/D.data, or a path inside --data-dir)
 * with its format; registering it reads it once (part_reader.h) to check
 * it and count examples, features and nonzeros, then writes
 * STATE/datasets/D.json atomically.  Ids are "d1", "d2", ... in order.
 *
 * Parsed datasets are cached in memory for the jobs that use them (at most
 * cache_max unreferenced ones are kept, least recently used dropped first);
 * a job whose dataset is not cached reads it again in its worker thread.
 *
 * Thread-safety: every function may be called from any thread; the
 * registry has one mutex.  A struct http_dataset, once registered, never
 * changes (except its cache fields, under the mutex) and lives until
 * http_datasets_close.
 */
#ifndef HTTP_DATA_H
#define HTTP_DATA_H

#include <jansson.h>
#include <stdint.h>

#include "parsa_err.h"
#include "part_reader.h"
#include "http_route.h"

struct http_dataset {
	char id[HTTP_ID_MAX];
	char *name;                /* the upload's name or the path given */
	char *path;                /* the file read */
	int uploaded;              /* 1: path is under the state dir */
	enum part_format format;   /* as read (AUTO resolved) */
	char format_from[12];      /* "request", "name" or "content" */
	enum part_graph_mode graph;
	uint64_t examples, features, nonzeros, bytes;
	double load_seconds;       /* reading it at registration */
	char created[32];          /* UTC, ISO 8601 */
	/* cache, under the registry's mutex */
	struct part_dataset *ds;   /* NULL when not in memory */
	unsigned refs;             /* jobs using ds */
	uint64_t last_use;
};

struct http_datasets;

/*
 * Open the registry of state_dir (creating STATE/datasets) and load the
 * descriptions stored there.  *out is new (http_datasets_close).
 */
int http_datasets_open(struct http_datasets **out, const char *state_dir,
		       unsigned cache_max, struct parsa_err *err);
void http_datasets_close(struct http_datasets *r);  /* NULL: no-op */

/* Reserve the next id into id[HTTP_ID_MAX]. */
void http_datasets_new_id(struct http_datasets *r, char *id);

/* The path an upload with this id is stored at, into buf. */
void http_datasets_upload_path(const struct http_datasets *r, const char *id,
			       char *buf, size_t len);

/*
 * Read path (format/graph as on the CLI; format AUTO: by content, as
 * the CLI's reader, then format_from is "content"; else format_from says
 * where the format came from, "request" or "name"), and on success store the
 * description and add the dataset under id (its parsed data cached).
 * Errors are the reader's (PARSA_EPARSE with file:line:col, PARSA_EIO...)
 * or PARSA_EINVAL for an empty dataset; nothing is stored then.
 * *input_fault is set to 1 when the error is the file's (reading or
 * parsing it failed: the client's fault), 0 when it is the server's.  Slow:
 * call it from a worker thread.
 */
int http_datasets_register(struct http_datasets *r, const char *id,
			   const char *name, const char *path, int uploaded,
			   enum part_format format, const char *format_from,
			   enum part_graph_mode graph, int *input_fault,
			   struct parsa_err *err);

/* The dataset with this id (borrowed, valid until close) or NULL. */
const struct http_dataset *http_datasets_find(struct http_datasets *r,
					      const char *id);

/* Number of datasets. */
uint64_t http_datasets_count(struct http_datasets *r);

/* New reference: the public description of d. */
json_t *http_dataset_json(const struct http_dataset *d);

/* New reference: {"datasets": [...]}, in id order: those after id
 * number `after` (0: from the first), at most limit (0: all); "next" is
 * the last one's id when more follow. */
json_t *http_datasets_list_json(struct http_datasets *r, uint64_t after,
				unsigned limit);

/*
 * Remove dataset id: its description, then its upload (a path's file is
 * the user's and stays), and its memory.  The caller makes sure no job
 * queued or running uses it.  0, 404 when there is no such dataset, 409
 * when a job holds its parsed data, 507 (the disk is full) or 500 when
 * the highest id given cannot be recorded (it is then kept: a restart
 * would give its id again).
 */
int http_datasets_remove(struct http_datasets *r, const char *id);

/*
 * The parsed data of dataset id for a job: from the cache, or read now
 * (in the caller's thread; *t_load = seconds spent, 0 when cached).  The
 * pointer stays valid until the matching http_datasets_release.
 */
int http_datasets_acquire(struct http_datasets *r, const char *id,
			  const struct part_dataset **ds, double *t_load,
			  struct parsa_err *err);
void http_datasets_release(struct http_datasets *r, const char *id);

/* "d12" -> 12; 0 for anything else.  Also used for jobs with 'j'. */
uint64_t http_id_number(const char *id, char prefix);

/* Now as "2026-01-02T03:04:05Z" into buf[32]. */
void http_now_iso(char *buf);

#endif /* HTTP_DATA_H */
