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

/* Streaming greedy partition of U (imbalance as in parsa_balance_cap). */
int parsa_greedy_u(const struct parsa_graph *g, uint32_t k, double imbalance,
		   uint32_t *part, struct parsa_err *err);

#endif /* PARSA_BASELINE_H */
