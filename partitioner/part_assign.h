/*
 * part_assign: incremental placement of fresh examples against a finished
 * placement (thesis 9.4.4, "incremental" initialization), the rule behind
 * POST /v1/jobs/{id}/assign and of the C API's psa_assign.  Pure (no I/O, no locks); unit-tested against
 * a brute-force oracle in tests/test_part_assign.c.
 *
 * The rule.  S_i = the features used by part i in the placement (N(U_i)),
 * |U_i| its examples.  The new examples are placed one after another, in
 * the order given; example u (its distinct feature ids N(u)) goes to the
 * part i minimising cost_i(u) = |N(u) \ S_i| among the parts with
 * |U_i| < C, C = parsa_balance_cap(Σ|U_i| + n, k, imbalance) (the balance
 * bound of the partitioner, over the old and the new examples); ties go to
 * the part with fewer examples, then to the smaller id.  After each choice
 * |U_i| grows by one and N(u) joins S_i, so later examples of the same
 * batch see it.  Features the placement has never seen are in no S_i.
 * Nothing in the model is changed: the batch works on its own copies.
 */
#ifndef PART_ASSIGN_H
#define PART_ASSIGN_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_hash.h"

struct part_assign_model {
	uint32_t k;                    /* parts, >= 1 */
	uint32_t words;                /* 64-bit words per mask: ceil(k/64) */
	const uint64_t *bits;          /* borrowed: n_cols * words, mask of S(v)
					  for compact feature v (bit i = in S_i) */
	const struct part_idmap *map;  /* borrowed: feature id -> compact id */
	const uint64_t *count;         /* borrowed: k entries, |U_i| */
	double imbalance;              /* >= 1 (the partitioner's 1.03) */
};

/*
 * Place n examples; example e has the feature ids ids[off[e]..off[e+1])
 * (any order, repeats count once).  out[e] = its part.  Returns 0,
 * PARSA_EINVAL (k == 0) or PARSA_ENOMEM.  Thread-safe for concurrent
 * calls on the same model (read-only).
 */
int part_assign_batch(const struct part_assign_model *m, const uint64_t *off,
		      const uint64_t *ids, uint32_t n, uint32_t *out,
		      struct parsa_err *err);

#endif /* PART_ASSIGN_H */
