/*
 * parsa_baseline: the baselines Parsa is compared against.
 *
 * random: what a parameter server does by default: U shuffled and dealt
 * round-robin, each feature owned by a uniformly random server.
 * greedy: one-pass streaming greedy (PowerGraph-style): examples in input
 * order, each to the part with the fewest new features |N(u) \ S_i| among
 * parts under the balance cap (ties: fewest examples, then lowest index).
 */
#ifndef PARSA_BASELINE_H
#define PARSA_BASELINE_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_rng.h"

/* part[0..n): shuffled round-robin deal into k parts. */
int parsa_random_u(uint32_t n, uint32_t k, struct parsa_rng *rng,
		   uint32_t *part, struct parsa_err *err);

/* owner[0..n_feat): uniform random server per feature. */
void parsa_random_v(uint32_t n_feat, uint32_t k, struct parsa_rng *rng,
		    uint32_t *owner);

/* The whole random placement of a seed: parsa_rng seeded with seed, then
 * parsa_random_u over the n_rows examples and parsa_random_v over the
 * n_cols features, from that one stream.  Every random placement the
 * project makes (partition --method random, train --placement random)
 * is this one. */
int parsa_random_placement(uint32_t n_rows, uint32_t n_cols, uint32_t k,
			   uint64_t seed, uint32_t *part, uint32_t *owner,
			   struct parsa_err *err);

/* parsa_random_placement in one byte an id (k <= 256): the same parts
 * and owners for the same seed, a quarter of the memory. */
int parsa_random_placement8(uint32_t n_rows, uint32_t n_cols, uint32_t k,
			    uint64_t seed, uint8_t *part, uint8_t *owner,
			    struct parsa_err *err);

/* Streaming greedy partition of U (imbalance as in parsa_balance_cap). */
int parsa_greedy_u(const struct parsa_graph *g, uint32_t k, double imbalance,
		   uint32_t *part, struct parsa_err *err);

#endif /* PARSA_BASELINE_H */
