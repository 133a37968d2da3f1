/*
 * parsa_metrics: the quality metrics of README "What the numbers mean",
 * computed from a placement itself (never from counters), and the random
 * baseline.
 *
 * With N(U_i) the features used by part i and V_i those owned by server i:
 *   M_i = |N(U_i)|,  T_i = |N(U_i) \ V_i| + Σ_{j≠i} |V_i ∩ N(U_j)|,
 *   RF = Σ M_i / |V_used|,  imbalance = max|U_i| / ceil(|U|/k),
 *   local_fraction = 1 - Σ|N(U_i) \ V_i| / Σ M_i.
 * Random = U shuffled and dealt round-robin, each feature owned by a
 * uniformly random server; averaged over `trials` seeds.
 */
#ifndef PARSA_METRICS_H
#define PARSA_METRICS_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"

/*
 * Above this k the metrics (parsa_metrics_parts, _figures, _random_one)
 * count without the k-bit sets (k |V| / 8 bytes: 244 MiB at 2M features
 * and k=1024): each part's examples are walked with a stamp per feature,
 * 4 bytes per example and 8 per feature; the same figures.
 */
#define PARSA_METRICS_SETS_MAX_K 64

struct parsa_metrics {
	uint32_t k;
	double M_max, T_max, T_sum; /* doubles: random is a mean of trials */
	double M_sum;               /* Σ M_i */
	double RF, imbalance, local_fraction;
	uint64_t V_used;            /* features used by at least one example */
	uint64_t U_max;             /* max |U_i| */
};

/*
 * used (initialised by the caller with n_feat == g->n_cols, k) receives
 * N(U_1..U_k) for part[] (g->n_rows entries, each < k).
 */
int parsa_used_sets(const struct parsa_graph *g, const uint32_t *part,
		    struct parsa_nbrset *used, struct parsa_err *err);

/*
 * parsa_used_sets in pieces, for threads (partitioner/part_run.c):
 * parsa_used_sets_check checks the sizes and part ids; after
 * parsa_nbrset_clear(used), parsa_used_sets_range sets the bits of the
 * features in [lo, hi) only (calls on disjoint ranges may run at once:
 * each writes only its own features' words), returning -1 if a column of
 * g is >= g->n_cols (the sets are then incomplete); parsa_nbrset_recount
 * ends it (or parsa_nbrset_count_range over the same ranges, summed).
 * Rows' columns must be sorted (parsa_graph_validate).
 */
int parsa_used_sets_check(const struct parsa_graph *g, const uint32_t *part,
			  const struct parsa_nbrset *used,
			  struct parsa_err *err);
int parsa_used_sets_range(const struct parsa_graph *g, const uint32_t *part,
			  struct parsa_nbrset *used, uint32_t lo, uint32_t hi);

/*
 * Metrics of the placement (part: g->n_rows entries < k; owner: g->n_cols
 * entries < k).  PARSA_EINVAL if a part id is out of range.
 */
int parsa_metrics_compute(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, const uint32_t *owner,
			  struct parsa_metrics *m, struct parsa_err *err);

/* Per-part counters of one placement (k entries each). */
struct parsa_counts {
	uint64_t *M;     /* |N(U_i)| */
	uint64_t *T;     /* traffic T_i */
	uint64_t *U;     /* |U_i| */
	uint64_t *local; /* |V_i ∩ N(U_i)| */
	uint64_t V_used; /* features used by some part */
};

/*
 * The summary metrics (M_max ... U_max) of the per-part counters of a
 * placement of n_rows examples.  Used by parsa_metrics_parts and by the
 * streaming mode, whose counters are summed over the servers.
 */
void parsa_metrics_summarize(const struct parsa_counts *pc, uint32_t k,
			     uint64_t n_rows, struct parsa_metrics *m);

/* acc += x field by field; then parsa_metrics_div(acc, n) makes the mean
 * of n (the integer fields rounded), as for the random baseline. */
void parsa_metrics_add(struct parsa_metrics *acc,
		       const struct parsa_metrics *x);
void parsa_metrics_div(struct parsa_metrics *acc, uint32_t n);

/*
 * As parsa_metrics_compute, and also the per-part values: M[i] = M_i,
 * T[i] = T_i, U[i] = |U_i| (each k entries; any of M, T, U, m may be NULL).
 * Edge cases: RF = 0 when no feature is used, local_fraction = 1 when
 * Σ M_i = 0, imbalance = 1 when |U| = 0.
 */
int parsa_metrics_parts(const struct parsa_graph *g, uint32_t k,
			const uint32_t *part, const uint32_t *owner,
			uint64_t *M, uint64_t *T, uint64_t *U,
			struct parsa_metrics *m, struct parsa_err *err);

/*
 * Per-part figures of one placement (each array k entries, owned):
 *   U[i]   = |U_i| (examples),  nnz[i] = Σ_{u∈U_i} |N(u)|,
 *   M[i]   = |N(U_i)|,          V[i]   = |V_i| (parameters owned),
 *   T[i]   = in[i] + out[i]:    in[i]  = |N(U_i) \ V_i| (what worker i
 *   pulls from other machines), out[i] = Σ_{j≠i} |V_i ∩ N(U_j)| (what
 *   server i serves to other machines).
 * M[i] - in[i] = |N(U_i) ∩ V_i| are worker i's local parameters.
 */
struct parsa_partfig {
	uint32_t k;
	uint64_t *U, *nnz, *M, *V, *T, *in, *out; /* one block of 7k */
};

/* Zeroed figures for k parts.  0 or PARSA_ENOMEM/EINVAL. */
int parsa_partfig_init(struct parsa_partfig *pf, uint32_t k,
		       struct parsa_err *err);
void parsa_partfig_release(struct parsa_partfig *pf); /* zeroed: no-op */

/*
 * As parsa_metrics_compute (m may be NULL), and the per-part figures into
 * pf (initialised for k by the caller; may be NULL).
 */
int parsa_metrics_figures(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, const uint32_t *owner,
			  struct parsa_partfig *pf, struct parsa_metrics *m,
			  struct parsa_err *err);

/*
 * As parsa_metrics_random, and the per-part figures of its first trial
 * (parsa_random_placement of seed itself) into first (initialised for k; may be NULL).
 */
int parsa_metrics_random_figures(const struct parsa_graph *g, uint32_t k,
				 uint64_t seed, uint32_t trials,
				 struct parsa_metrics *mean,
				 struct parsa_partfig *first,
				 struct parsa_err *err);

/*
 * One trial of the random baseline: the metrics of parsa_random_placement
 * of seed (m), and its per-part figures into pf (initialised for k; may be
 * NULL).  It allocates its own placement, so concurrent calls on the same
 * graph are safe (the partitioner runs the trials on threads).
 */
int parsa_metrics_random_one(const struct parsa_graph *g, uint32_t k,
			     uint64_t seed, struct parsa_partfig *pf,
			     struct parsa_metrics *m, struct parsa_err *err);

/*
 * mean = the mean of one[0..n) (n >= 1) as parsa_metrics_random forms it:
 * summed in index order, then divided (so the result does not depend on
 * which thread computed which trial).
 */
void parsa_metrics_mean(const struct parsa_metrics *one, uint32_t n,
			uint32_t k, struct parsa_metrics *mean);

/*
 * Mean metrics of `trials` (>= 1) random placements: trial t draws
 * parsa_random_u then parsa_random_v from one rng seeded with seed + t.
 * The integer fields (V_used, U_max) are rounded means.
 */
int parsa_metrics_random(const struct parsa_graph *g, uint32_t k,
			 uint64_t seed, uint32_t trials,
			 struct parsa_metrics *mean, struct parsa_err *err);

/* (random - ours) / ours * 100; 0 when both are 0, +inf when only ours is. */
double parsa_improvement(double random, double ours);

#endif /* PARSA_METRICS_H */
