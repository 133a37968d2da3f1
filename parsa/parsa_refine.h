/*
 * parsa_refine: a memory refinement of the example partition, after
 * Algorithm 13.
 *
 * Algorithm 13 takes the cheapest examples first, so the heaviest examples
 * (hubs, power users) are placed last, wherever the partition choice
 * happens to be; on small heavy-tailed data that decides M_max.  This pass
 * repairs it with local moves, as LPT would: repeatedly take the partition
 * p with the largest M_p = |N(U_p)| and move examples out of it, an example
 * u going to the partition j (below the balance cap) that needs the fewest
 * new features add_j(u) = |N(u) \ N(U_j)|, when u has features private to
 * it within p (gain > 0) and M_j + add_j(u) < M_p.  Every move strictly
 * lowers max(M_p, M_j) and never raises any M above the old M_p, so M_max
 * never increases and the sorted vector of M decreases: the pass ends.
 * It also stops after max_rounds rounds (a round = one scan of the current
 * largest partition), or after a round that lowers M_max by less than
 * 1/2048 of it.
 *
 * Cost per round: O(|U| + nnz(U_p) * words) plus, per candidate, O(deg * k / 64
 * + set bits): well below Algorithm 13's O(k |E|) for a few rounds; a part's
 * examples are found by a scan of part (a few per round and per swap).
 * Memory: 8 bytes per feature and 16 per example of the largest part
 * (or of the balance cap, if larger), none per example of U.
 */
#ifndef PARSA_REFINE_H
#define PARSA_REFINE_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"

struct parsa_refine_stats {
	uint32_t rounds; /* rounds run */
	uint64_t moves;  /* examples moved */
	uint64_t M_max_before, M_max_after;
};

/*
 * part: g->n_rows part ids < k (updated).  used: N(U_1..U_k) for part on
 * entry (parsa_used_sets), kept equal to it for the new part on return.
 * cap: the largest |U_j| a move may create (parsa_balance_cap).
 * st may be NULL.  0, PARSA_ENOMEM or PARSA_EINVAL.
 */
int parsa_refine_mmax(const struct parsa_graph *g, uint32_t *part,
		      struct parsa_nbrset *used, uint64_t cap,
		      uint32_t max_rounds, struct parsa_refine_stats *st,
		      struct parsa_err *err);

#endif /* PARSA_REFINE_H */
