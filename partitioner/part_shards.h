/*
 * part_shards: split a dataset into per-part files after partitioning.
 *
 * part_write_shards(dir, data_path, ds, part, owner, k) creates dir (like
 * `mkdir -p`) and writes, for every part i in 0..k-1 (also for parts that
 * got nothing: the files are then empty):
 *
 *   dir/part-<i>.libsvm   the examples of part i (part[e] == i), in example
 *                         order.  LIBSVM input: the input's own data lines,
 *                         byte for byte (re-read from data_path with
 *                         part_io, which must still hold the data ds was
 *                         read from; its line ending becomes '\n').  SNAP or
 *                         pairs input: one line `0 f1:1 f2:1 ... # ID` per
 *                         example with its original feature ids ascending
 *                         and, when ds->ex_id is set, its own id (user or
 *                         vertex) as a LIBSVM comment.
 *   dir/features-<i>.txt  the original ids of the features owned by server
 *                         i (owner[f] == i), one per line, ascending.
 *
 * part has ds->g.n_rows entries, owner ds->g.n_cols entries, all < k.
 * Every file is written under a temporary name (".<name>.tmp.<pid>", by
 * part_out: a symlink's target is replaced, a device written directly);
 * only when all of them are complete are they renamed to their final names, so
 * a failure leaves no half-written file (the temporary files are removed).
 * At most 256 output files are open at once (more parts mean more passes
 * over the data).
 *
 * Errors: PARSA_EINVAL (bad arguments, a part or owner id >= k, LIBSVM input
 * without data_path), PARSA_EIO ("path: reason"; also when data_path no
 * longer matches ds), PARSA_ENOMEM, or the reader's errors.
 */
#ifndef PART_SHARDS_H
#define PART_SHARDS_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_reader.h"

int part_write_shards(const char *dir, const char *data_path,
		      const struct part_dataset *ds, const uint32_t *part,
		      const uint32_t *owner, uint32_t k,
		      struct parsa_err *err);

#endif /* PART_SHARDS_H */
