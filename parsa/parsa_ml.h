/*
 * parsa_ml: a multilevel V-cycle around the connectivity refinement of
 * parsa_fm, starting from a given example partition (Parsa's).
 *
 * Coarsening: at every level each vertex (visited in a seeded random
 * order) joins the vertex that shares the most features with it, weighted
 * by 1 / (|net| − 1) (heavy-edge rating over the feature nets; nets of
 * more than ML_NET_MAX vertices, ML_NET_MAX_SCRATCH in parsa_ml_partition,
 * are left out of the rating: they connect almost everything, and
 * scanning them would cost O(|net|^2); at most
 * ML_PIN_BUDGET pins are rated per vertex, so a level costs
 * O(ML_PIN_BUDGET |U| + |E|)): a pair with an unclustered vertex, or the
 * cluster of a clustered one, as long as the cluster weighs at most
 * max_weight.  parsa_ml_refine only joins vertices of the same part (the
 * partition is kept); parsa_ml_partition joins across parts.  A cluster's
 * features are the union of its members' and its weight their number of
 * examples.  Levels stop when a level shrinks by less than 10% (with
 * communities, one that joins nothing is dropped), at the size limit, or after
 * max_levels.  Since N(cluster) is the union of its
 * members' features, every M_j and the connectivity are the same at every
 * level.
 *
 * Uncoarsening refines the coarsest level with parsa_fm_refine (weighted
 * balance; at most ML_COARSE_PASSES sweeps per coarse level) and then,
 * when o->fm_passes > 0, with that many k-way FM passes (parsa_kfm.h,
 * same caps and weights), projects
 * the parts one level down, refines again, and so on to the original
 * graph: moving a whole cluster at a coarse level is a
 * move the single-example sweeps cannot find.  Every level keeps the
 * balance cap and m_limit and never raises the connectivity, so neither
 * does the cycle.
 *
 * With o->comm (parsa_fm.h: communities of the original rows, e.g. from
 * parsa_louvain.h) a cluster also never spans two communities (the
 * community-aware coarsening of KaHyPar): a level's community is its
 * members' one.
 *
 * Memory: the coarse graphs (their nonzeros shrink level by level) and one
 * transpose per level during clustering and contraction (parsa_ml_refine:
 * its pins grouped by part, and per nonzero the segment of its net in its
 * row's part: 3 |E| words).  Deterministic for a given seed.
 *
 * o->stop (parsa_stop.h): once due, parsa_ml_refine coarsens no further
 * and both functions only project the remaining levels down, without
 * refining them; the result keeps every bound above.
 */
#ifndef PARSA_ML_H
#define PARSA_ML_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_fm.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_partu.h"

#define ML_NET_MAX 64
#define ML_NET_MAX_SCRATCH 256 /* the same for parsa_ml_partition */
#define ML_PIN_BUDGET 2048 /* pins rated per vertex at most */
#define ML_MAX_LEVELS 32 /* coarsening levels at most */
#define ML_COARSE_PASSES 3 /* refinement sweeps per coarse level at most */

/*
 * part, used, o as for parsa_fm_refine (o->weight must be NULL: level 0 is
 * the original, unweighted graph).  max_levels: coarsening levels (0 = a
 * plain parsa_fm_refine).  st (may be NULL) sums the levels' moves and
 * passes; conn_before/after are those of the original graph.
 * 0, PARSA_ENOMEM or PARSA_EINVAL.
 */
int parsa_ml_refine(const struct parsa_graph *g, uint32_t *part,
		    struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		    uint32_t max_levels, struct parsa_fm_stats *st,
		    struct parsa_err *err);

/*
 * One level of the clustering above, alone (tests): cmap (g->n_rows)
 * receives each row's cluster and *nc their number.  part NULL: across
 * parts (the nets of parsa_ml_partition), else only rows of one part;
 * comm (may be NULL, as o->comm of parsa_fm.h): only rows of one
 * community.  Every cluster holds at most max_w rows.  0 or PARSA_ENOMEM.
 */
int parsa_ml_cluster(const struct parsa_graph *g, const uint32_t *part,
		     const uint32_t *comm, uint32_t max_w, uint64_t seed,
		     uint32_t *cmap, uint32_t *nc, struct parsa_err *err);

/* Clusters per part at which parsa_ml_partition stops coarsening. */
#define ML_COARSEST_PER_PART 512 /* 64 before the recursive bisection */
/* The same for its deeper start with communities (o->comm). */
#define ML_COARSEST_DEEP 128
/* Its recursive bisection (parsa_rb.h): tolerance per bisection, starts. */
#define ML_RB_EPS 0.01
#define ML_RB_TRIES 8
#define ML_RB_PINS 500000 /* fewer starts above this many pins */
/* The third start (o->rb_ml) only on coarsest graphs of at most this
 * many pins (each multilevel start coarsens the whole of it). */
#define ML_RB_ML_PINS 4000000

/*
 * A multilevel partition from scratch: coarsen across parts (same rating,
 * nets up to ML_NET_MAX_SCRATCH) down to about ML_COARSEST_PER_PART * k
 * clusters (or max_levels), then two starts on the coarsest graph:
 * Algorithm 13 (pu: k, rule, imbalance, seed; one block) and recursive
 * bisection (parsa_rb.h: tolerance ML_RB_EPS per bisection, ML_RB_TRIES
 * starts, fewer above ML_RB_PINS pins), each refined on the coarsest
 * level; the better one (the smaller excess of M_max over o->m_limit,
 * then the lower connectivity: both are the same on every level) is
 * refined level by level as parsa_ml_refine does (without coarse levels,
 * both are refined on g and the better kept), each level first
 * rebalanced by weight to o->cap (parsa_fm.h); the coarse levels ignore
 * o->m_limit (they optimise the connectivity alone), the original graph
 * first moves examples out of the parts above it (parsa_fm.h).  part (n_rows,
 * output) and used (initialised, n_feat == g->n_cols, k == pu->k;
 * output: N(U_i) of part) receive the result; every part is within o->cap.
 * o->m_limit still bounds the moves of the refinement, but the coarsest
 * partition is not bound by it, so M_max is not guaranteed: the caller
 * compares.  With o->comm, that partition (coarsened without the
 * communities) is followed by a second one coarsened with them down to
 * ML_COARSEST_DEEP clusters per part (when g has more rows than that),
 * kept when it is strictly better (the same order): community-aware
 * coarsening goes deeper without joining across communities, and the
 * flat start still wins where the coarse levels do not help (measured:
 * BENCHMARKS.md).  With o->rb_ml (--ml-rb-starts), a third start:
 * recursive bisection with o->rb_ml multilevel starts per bisection
 * (parsa_rb_opts.ml; on coarsest graphs of at most ML_RB_ML_PINS pins),
 * compared with the other two on the coarsest level
 * when there are no coarse levels, else refined and uncoarsened on its
 * own and kept when strictly better on g (the same order).  0,
 * PARSA_ENOMEM or PARSA_EINVAL.
 */
int parsa_ml_partition(const struct parsa_graph *g,
		       const struct parsa_partu_opts *pu, uint32_t *part,
		       struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		       uint32_t max_levels, struct parsa_fm_stats *st,
		       struct parsa_err *err);

#endif /* PARSA_ML_H */
