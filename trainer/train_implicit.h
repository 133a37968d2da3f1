/*
 * train_implicit: `parsa train` on user-item pairs and SNAP graphs (README
 * "Trainer", "Implicit feedback"): the partitioner's dataset (part_reader.h;
 * examples = users, or vertices in adjacency mode; features = items, or
 * neighbour vertices) turned into labelled examples in memory, with the
 * placement of that dataset carried over.
 *
 * Conversion (bench/train.py's, with parsa's RNG): for every user u in the
 * partitioner's example order and every item i of u's row in row order, a
 * positive example (u, i, +1) followed by one sampled negative (u, j, -1),
 * j drawn uniformly (rejection) among the items u never touched, from one
 * parsa_rng seeded with seed, so the examples depend only on the dataset
 * and the seed.  A user who touched every item gets no negatives (counted
 * in users_without_negative).  Each example has two entries of value 1:
 * the item's feature (compact id = the dataset's) and u's bias feature
 * (compact id n_items + u).
 *
 * Placement: every example of u goes to part[u]; item features keep
 * owner[]; u's bias feature is owned by part[u] (the server on u's own
 * machine), so it never crosses the network.
 *
 * d->feat_id: items keep their input ids; a bias feature holds its user's
 * example index (train_main writes it as "user:E").
 *
 * Errors: PARSA_ERANGE (more than 2^32 - 2 examples or keys), PARSA_ENOMEM.
 * On error nothing is allocated.
 */
#ifndef TRAIN_IMPLICIT_H
#define TRAIN_IMPLICIT_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_reader.h"
#include "train_data.h"

struct train_implicit {
	uint32_t users, items;
	uint64_t positives, negatives;
	uint32_t users_without_negative;
};

/*
 * d: initialised and empty.  part: ds->g.n_rows parts, owner:
 * ds->g.n_cols owners (both < k, checked by the caller).  On success
 * *part_out has d->n_rows entries, *owner_out d->n_cols (malloc'd).
 */
int train_implicit_build(const struct part_dataset *ds, const uint32_t *part,
			 const uint32_t *owner, uint64_t seed,
			 struct train_data *d, uint32_t **part_out,
			 uint32_t **owner_out, struct train_implicit *st,
			 struct parsa_err *err);

#endif /* TRAIN_IMPLICIT_H */
