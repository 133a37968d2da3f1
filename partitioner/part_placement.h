/*
 * part_placement: the placement files of a partition run (README "Outputs").
 *
 *   PREFIX.examples   one part id per line; line i (1-based) is example i-1
 *                     in the dataset's example order.
 *   PREFIX.features   "feature_id part" per line, feature ids as in the
 *                     input, one line per feature, written in compact-id
 *                     order (any order is accepted on reading).
 *
 * Both are plain decimal text with '\n' line ends.  The reader also accepts
 * gzip-compressed files under the same names, "\r\n" line ends, blanks
 * (spaces/tabs) around fields, and a missing final newline; anything else
 * (blank lines, signs, comments, extra fields) is an error with
 * file:line:col and a reason.
 */
#ifndef PART_PLACEMENT_H
#define PART_PLACEMENT_H

#include <stdint.h>

#include "parsa_err.h"

/*
 * Write PREFIX.examples (part[0..n_rows)) and PREFIX.features (feat_id[j]
 * and owner[j] for j in 0..n_cols).  feat_id may be NULL: then feature j's
 * id is j.  Each file goes through part_out (part_out.h): both are written
 * to temporary files and renamed into place only when both are complete; on
 * failure the temporary files are removed and existing files are left
 * alone (a device or FIFO is written directly).  With threads > 1 (0: the
 * CPUs the process may use) and over a million lines in all, the two
 * files are written side by side; the files and the error are those of
 * writing them in turn (the examples file's error when both fail).
 * Returns 0, PARSA_EINVAL, PARSA_ENOMEM or PARSA_EIO.
 */
int part_placement_write(const char *prefix, const uint32_t *part,
			 uint32_t n_rows, const uint32_t *owner,
			 const uint64_t *feat_id, uint32_t n_cols,
			 uint32_t threads, struct parsa_err *err);

/*
 * Read a placement for a dataset with n_rows examples and n_cols features
 * whose ids are feat_id[0..n_cols) (distinct; NULL: feature j has id j).
 * Fills part[0..n_rows) and owner[0..n_cols) (caller-owned) and *k_out =
 * 1 + the largest part id seen in either file (1 when both are empty).
 * With k_max > 0, part ids must be < k_max.
 *
 * Errors (the message starts with "PREFIX.examples:line:col: " or
 * "PREFIX.features:line:col: "; err->line/col are set):
 *   PARSA_EIO     a file cannot be opened or read;
 *   PARSA_EPARSE  malformed line, negative or too large number, fewer or
 *                 more lines than n_rows, feature id not in the dataset,
 *                 duplicate feature, dataset feature missing from the file
 *                 (named; position = end of file);
 *   PARSA_EINVAL  bad arguments or duplicate ids in feat_id;
 *   PARSA_ENOMEM.
 * On error part/owner hold partial results.
 */
int part_placement_read(const char *prefix, uint32_t n_rows,
			const uint64_t *feat_id, uint32_t n_cols,
			uint32_t k_max, uint32_t *part, uint32_t *owner,
			uint32_t *k_out, struct parsa_err *err);

#endif /* PART_PLACEMENT_H */
