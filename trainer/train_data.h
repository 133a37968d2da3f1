/*
 * train_data: the trainer's dataset: LIBSVM rows with labels and values.
 *
 * Same example and feature rules as the partitioner's reader (README
 * "Input formats", part_reader.h), so a placement written by `parsa partition` matches:
 * every data line is one example in file order (blank and '#' lines
 * skipped), `label [qid:N] idx:val ...`, a '#' token ends the line, compact
 * feature ids in order of first appearance, a repeated index in one line
 * counts once (its first value is kept).  Labels must be numbers: label > 0
 * is the positive class (+1), anything else -1.
 *
 * Test data are read against a training set (ref): their features map to
 * the training set's compact ids, and features the training set never saw
 * are dropped (their weight is 0 anyway).
 *
 * Errors: PARSA_EPARSE "file:line:col: reason" for malformed input,
 * PARSA_EIO, PARSA_ENOMEM, PARSA_ERANGE.  On error *d is left empty.
 */
#ifndef TRAIN_DATA_H
#define TRAIN_DATA_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_hash.h"

/* Invariants: rowptr[0] == 0, rowptr non-decreasing, rowptr[n_rows] == nnz,
 * col[i] < n_cols, no column twice in a row; y[r] is +1 or -1. */
struct train_data {
	uint32_t n_rows, n_cols;
	uint64_t nnz;
	uint64_t *rowptr;    /* n_rows + 1 */
	uint32_t *col;       /* nnz compact feature ids */
	double *val;         /* nnz values */
	int8_t *y;           /* n_rows labels, +1 / -1 */
	uint64_t *feat_id;   /* n_cols input ids (training sets only) */
	struct part_idmap map; /* input id -> compact id (training sets) */
	uint64_t dropped;    /* test sets: entries of unknown features */
	uint32_t n_parsed;   /* rows actually parsed (train_data_read:
				n_rows; train_data_read_part: own rows) */
};

void train_data_init(struct train_data *d);
void train_data_release(struct train_data *d);

/*
 * Read path (plain or gzip) into d (initialised, empty).  ref == NULL: a
 * training set (features get compact ids); else a test set mapped onto
 * ref's features (ref borrowed for the call; d->feat_id stays NULL and
 * d->n_cols = ref->n_cols).
 */
int train_data_read(const char *path, const struct train_data *ref,
		    struct train_data *d, struct parsa_err *err);

/*
 * Read only this rank's examples of a training set whose features are
 * already fixed (an MPI rank training on a placement, train_main).  On
 * entry d holds the feature side and no rows: map (input id -> compact id,
 * exactly n_cols ids), feat_id (= map.ids) and n_cols; rowptr == NULL.
 * Example e (0-based, data-file order, same line rules as
 * train_data_read) is own iff e < n_part and part[e] % nranks == rank:
 * own lines are parsed (errors keep "file:line:col"), the others are only
 * counted and become empty rows with label -1 (no entries), so row numbers
 * stay global: d->n_rows = every example of the file, d->n_parsed = the
 * own ones, d->nnz = their entries.  A feature of an own example that the
 * map does not hold is PARSA_EPARSE "file:line:col: feature ID (example
 * E) is not in the placement".  Comparing n_rows with n_part is the
 * caller's business.  On error the rows are freed again (rowptr NULL) and
 * the feature side is kept.
 */
int train_data_read_part(const char *path, const uint32_t *part,
			 uint32_t n_part, uint32_t rank, uint32_t nranks,
			 struct train_data *d, struct parsa_err *err);

#endif /* TRAIN_DATA_H */
