/*
 * part_metis: the METIS 5 baseline for partitioning the examples U.
 *
 * The bipartite graph G(U, V, E) is handed to METIS_PartGraphKway as one
 * undirected graph: vertices 0..|U|-1 are the examples (weight 1), vertices
 * |U|..|U|+|V|-1 the features (weight 0, so only examples count towards
 * balance), each nonzero an edge in both directions.  METIS minimises the
 * edge cut (its default objective) with METIS_OPTION_SEED from the caller's
 * seed and UFACTOR derived from the imbalance bound.  Only the example parts
 * are returned; features are placed afterwards by Algorithm 11 elsewhere.
 *
 * Balance repair: METIS treats UFACTOR as a target, not a guarantee.  After
 * it returns, every part holding more than parsa_balance_cap(|U|, k,
 * imbalance) examples gives up its excess: the examples with the fewest
 * features that METIS placed in the same part go first (ties: higher
 * example id first), each to the part under the cap holding most of its
 * features (ties: fewest examples, then lowest index), or to the least
 * loaded part under the cap if none of them does.  So
 * max_i |U_i| <= parsa_balance_cap always holds on success.
 *
 * Special cases that METIS handles badly are decided here: k == 1 puts
 * everything in part 0; |U| <= k puts example i in part i; a graph without
 * nonzeros is dealt round-robin.
 *
 * Limits: METIS is built with 32-bit idx_t on Debian, so |U| + |V| and
 * 2 * nnz must fit in int32 (PARSA_ERANGE otherwise).  Note that METIS may
 * print to stdout on internal errors and installs signal handlers while it
 * runs (GKlib's gk_sigtrap/gk_errexit, which raise and longjmp); not for
 * concurrent use from several threads of a process that relies on SIGTERM.
 */
#ifndef PART_METIS_H
#define PART_METIS_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"

/*
 * Partition the examples of g into k parts.  part has g->n_rows entries
 * (caller-owned) and receives values in [0, k).  imbalance >= 1 as in
 * parsa_balance_cap.  Deterministic for a given seed.  Returns 0,
 * PARSA_EINVAL (bad argument, invalid graph, METIS input error),
 * PARSA_ERANGE (graph too large for idx_t) or PARSA_ENOMEM.
 */
int part_metis_u(const struct parsa_graph *g, uint32_t k, double imbalance,
		 uint64_t seed, uint32_t *part, struct parsa_err *err);

#endif /* PART_METIS_H */
