/*
 * parsa_flow: two-way flow-based refinement of the example partition on
 * the connectivity objective (T_sum / 2, see parsa_fm.h), after KaHyPar-MF
 * (Heuer, Sanders, Schlag, "Network flow-based refinement for multilevel
 * hypergraph partitioning", SEA 2018) and the FlowCutter-style balancing
 * of Mt-KaHyPar's flow refiner (Gottesbüren, Heuer, Sanders, "Parallel
 * flow-based hypergraph partitioning", SEA 2022).  Our own code.
 *
 * Examples are vertices, features are nets.  For a pair of parts (a, b),
 * moving examples between a and b changes only [a ∈ Λ(v)] + [b ∈ Λ(v)]
 * of the nets v with pins in a ∪ b: the connectivity changes by exactly
 * the change of the number of nets cut between a and b (pins of the other
 * parts are constants).  So a pair is a two-way cut-net problem on the
 * nets restricted to a ∪ b.
 *
 * One pair:
 *   - region: on each side, first the vertices with a net cut between a
 *     and b, the largest share of cut nets first (ties: the order of the
 *     part's list), then a BFS through nets of at most
 *     PARSA_FLOW_NET_SCAN pins; side a takes at most the weight
 *        R_a = min(|a|, alpha·(cap − avg) + max(0, cap − |b|))
 *     (avg = ceil(Σ weights / k)), as KaHyPar-MF sizes it with
 *     (1 + alpha·ε)·avg − |b|; the vertices outside the region (and the
 *     `fixed` ones) are terminals (a's: the source, b's: the sink);
 *   - network (Lawler): per net with a pin in the region, two nodes and a
 *     capacity-1 bridge e_in → e_out; a region pin u has u → e_in and
 *     e_out → u of infinite capacity; a net with a terminal pin of a has
 *     source → e_in, one with a terminal pin of b has e_out → sink.  Nets
 *     with terminal pins on both sides are cut whatever the region does
 *     (a constant), nets with a single pin in a ∪ b never are (left out);
 *   - max flow by Dinic's algorithm (every augmenting path carries one
 *     unit), stopped as soon as the flow shows no cut can beat the
 *     current one;
 *   - balance (FlowCutter): of the two extreme min cuts (the source's
 *     residual reach; the complement of the sink's) the more balanced
 *     one that keeps both parts within the cap is taken; when neither
 *     does, vertices are pierced (made terminals) on the side that must
 *     grow, about the weight it lacks at once (FlowCutter pierces one at
 *     a time), vertices whose piercing adds no flow when the two extreme
 *     cuts leave room between them, and the flow is augmented again, at
 *     most PARSA_FLOW_PIERCE times;
 *   - the cut found is evaluated exactly (the new M_a and M_b from the
 *     per-net pin counts) and applied only if it lowers M_a + M_b (the
 *     connectivity), keeps both parts within the cap and neither M_a nor
 *     M_b above max(m_limit, its value before).
 *
 * Schedule (KaHyPar's active blocks): a round takes the pairs that share
 * at least one net, most shared nets first (ties: lower a, then lower b),
 * in the first round all of them, later only those with a part changed
 * in the round before; rounds repeat while one improves, up to
 * max_rounds.  Within a round a pair is tried again with the same alpha
 * after an improvement (at most 3 times) and with half of it after a
 * failure, down to 1 (KaHyPar-MF's adaptive alpha).  Only k ≤ PARSA_FLOW_MAX_K (the pair table is k² counts);
 * for more parts the call does nothing.
 *
 * Weighted vertices (coarse levels): |U_j| is the sum of weights; the
 * connectivity is unweighted.  A part above the cap on entry may only
 * lose weight in a pair.
 *
 * Cost per pair: O(nnz(a) + nnz(b)) for the counts (a retry with a
 * smaller alpha, nothing applied since, keeps them: O(nets of a ∪ b)),
 * O(region's nnz · sqrt) for Dinic (unit augmentations, bounded by the
 * pair's cut), and O(network) per piercing.  Memory: O(n_cols + n_rows + k²) plus the
 * transpose and the network of one pair.
 * What it finds: with a cap that does not bind, the minimum cut between
 * the terminals (tests/test_flow.c checks it against brute force); with
 * a binding cap the piercing is a heuristic (it found the balanced
 * optimum in 192 of 300 tiny random instances).  Vertices without a net
 * path to the boundary never enter a region.
 * Deterministic (no randomness, no dependence on timing unless the stop
 * cuts the call short).  Polls the stop before every pair and every
 * PARSA_STOP_POPS augmenting paths; a pair cut short is not applied.
 * No globals; not thread-safe per call.
 */
#ifndef PARSA_FLOW_H
#define PARSA_FLOW_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_stop.h"

/* Nets with more pins are not walked by the region's BFS. */
#define PARSA_FLOW_NET_SCAN 1000
/* Piercings per pair before it is given up. */
#define PARSA_FLOW_PIERCE 16
/* Largest k the refinement runs for. */
#define PARSA_FLOW_MAX_K 1024
/* The automatic region factor (KaHyPar-MF's alpha). */
#define PARSA_FLOW_ALPHA_AUTO 16.0

struct parsa_flow_opts {
	uint32_t max_rounds; /* rounds over the active pairs (0: nothing) */
	uint64_t cap;        /* largest |U_j| (Σ weights) a move may create */
	uint64_t m_limit;    /* largest M_j a pair may create */
	double alpha;        /* region factor; 0 = PARSA_FLOW_ALPHA_AUTO */
	uint32_t max_region; /* vertices per side of a region; 0 = no bound */
	const uint32_t *weight;        /* borrowed, n_rows weights or NULL */
	const uint8_t *fixed;          /* borrowed, n_rows flags or NULL:
					* vertices never in a region (they
					* stay terminals, never move) */
	const struct parsa_stop *stop; /* borrowed, may be NULL */
};

struct parsa_flow_stats {
	uint32_t rounds;      /* rounds run */
	uint64_t pairs;       /* pairs tried */
	uint64_t improved;    /* pairs whose cut was applied */
	uint64_t moves;       /* vertices moved by the applied cuts */
	uint64_t conn_before; /* Σ_i M_i − |V_used| on entry */
	uint64_t conn_after;  /* the same on return (≤ conn_before) */
};

/*
 * part: g->n_rows part ids < used->k, updated in place.  used: N(U_1..U_k)
 * of part on entry (parsa_used_sets), equal to that of the new part on
 * return.  st may be NULL.  Returns 0, PARSA_ENOMEM or PARSA_EINVAL (NULL
 * argument, sizes, part id out of range); on PARSA_EINVAL part and used
 * are unchanged, on PARSA_ENOMEM the pairs applied before stay (part and
 * used still agree).
 */
int parsa_flow_refine(const struct parsa_graph *g, uint32_t *part,
		      struct parsa_nbrset *used,
		      const struct parsa_flow_opts *o,
		      struct parsa_flow_stats *st, struct parsa_err *err);

#endif /* PARSA_FLOW_H */
