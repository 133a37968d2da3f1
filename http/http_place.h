/*
 * http_place: a finished job's placement held in memory for the lookup,
 * streaming and assign endpoints: the part of every example, the owner of
 * every feature, a hash from feature id to compact id, the part sizes
 * |U_i| and the neighbor sets S_i = N(U_i) (one k-bit mask per feature).
 *
 * It is built from the run's result in the job's worker thread and saved
 * next to the CLI-format files (part_placement.h) as STATE/jobs/J/
 * placement.examples, placement.features and placement.nbr, plus, for
 * pairs and SNAP adjacency input, placement.example_ids (the CLI's
 * --examples-ids file: "ID PART" per example, ID the user or vertex);
 * after a restart it is loaded back from those files alone (the dataset
 * is not needed).  Immutable once built: any number of threads may read it.
 *
 * placement.nbr (little-endian as the host): 8 bytes "PARSANB1", then
 * uint32 k, uint32 n_cols, then n_cols * ceil(k/64) uint64 mask words in
 * compact feature order (the order of placement.features).
 */
#ifndef HTTP_PLACE_H
#define HTTP_PLACE_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_hash.h"
#include "part_reader.h"

struct http_place {
	uint32_t k, n_rows, n_cols;
	uint32_t *part;      /* n_rows */
	uint64_t *feat_id;   /* n_cols: feature id of compact id */
	uint32_t *owner;     /* n_cols */
	uint64_t *count;     /* k: |U_i| */
	uint32_t words;      /* ceil(k/64) */
	uint64_t *bits;      /* n_cols * words: S masks */
	struct part_idmap map; /* feature id -> compact id */
	uint64_t *ex_id;     /* n_rows or NULL: each example's own id (pairs:
			      * the user; SNAP adjacency: the vertex) */
	struct part_idmap ex_map; /* ex_id -> key number (empty without) */
	uint32_t *ex_row;    /* key number -> example (its first row) */
};

/* The example whose own id is key: 1 and *row set, else 0 (also when the
 * placement has no example ids: p->ex_id NULL). */
int http_place_find_example(const struct http_place *p, uint64_t key,
			    uint32_t *row);

/*
 * Build from a run on ds: takes over part and owner (malloc'ed arrays of
 * n_rows / n_cols; freed even on failure), copies feat_id, computes counts,
 * masks and the map.  *out is new (http_place_free).
 */
int http_place_build(struct http_place **out, const struct part_dataset *ds,
		     uint32_t k, uint32_t *part, uint32_t *owner,
		     struct parsa_err *err);

/* Write PREFIX.examples/.features (the CLI's format), PREFIX.nbr and,
 * with example ids, PREFIX.example_ids, each atomically and fsync'ed. */
int http_place_save(const struct http_place *p, const char *prefix,
		    struct parsa_err *err);

/* Load what http_place_save wrote.  *out is new. */
int http_place_load(struct http_place **out, const char *prefix,
		    struct parsa_err *err);

void http_place_free(struct http_place *p);  /* NULL: no-op */

#endif /* HTTP_PLACE_H */
