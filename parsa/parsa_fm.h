/*
 * parsa_fm: connectivity refinement of the example partition (after
 * Algorithm 13 and the M_max refinement), by label-propagation sweeps of
 * single-example moves.
 *
 * Objective.  With λ_v the number of parts using feature v, every feature
 * placed (by Algorithm 11) on one of the parts that use it gives
 *   T_sum = Σ_i T_i = 2 Σ_v (λ_v − 1) = 2 (Σ_i M_i − |V_used|),
 * so T_sum is fixed by the example partition alone: it is twice the
 * hypergraph connectivity ("λ − 1") of U with the features as nets.  Moving
 * example u from part a to part b changes Σ_i M_i by
 *   add_b(u) − priv_a(u),  priv_a(u) = #{v ∈ N(u) : cnt[v][a] == 1},
 *                          add_b(u)  = #{v ∈ N(u) : cnt[v][b] == 0},
 * where cnt[v][j] is the number of examples of part j using v.  The move's
 * gain is priv_a(u) − add_b(u).
 *
 * A sweep visits the examples in a seeded random order and moves each to
 * the part b with the largest gain among the parts that share a feature
 * with it (ties: smallest M_b + add_b, then lowest index), when
 *   - |U_b| + w_u ≤ cap (the balance bound is never broken; w_u = 1
 *     unless vertex weights are given), and
 *   - M_b + add_b ≤ m_limit (so M_max never rises above m_limit; pass the
 *     entry M_max to make the refinement never worsen M_max), and
 *   - the gain is > 0, or it is 0, priv_a(u) > 0 and M_b + add_b < M_a
 *     (a move that keeps T_sum and strictly lowers max(M_a, M_b)).
 * Every accepted move strictly lowers (Σ_i M_i, Σ_i M_i²) in lexicographic
 * order, so the sweeps terminate; they also stop after max_passes, or after
 * a sweep that lowers Σ_i M_i by less than min_gain · (Σ_i M_i − |V_used|).
 *
 * Swap phase (swaps = 1): parts at the cap take no single move, so after
 * each sweep the examples whose best target was a full part are grouped by
 * (from, to), sorted by gain, and exchanged pairwise between a → b and
 * b → a (the Social Hash Partitioner's pairing) while the two gains sum to
 * more than 0; each exchange is applied and kept only if it lowers Σ M
 * exactly and keeps M_a, M_b ≤ m_limit (otherwise undone).  Sizes do not
 * change.
 *
 * p-fanout sweeps (p_passes > 0, run first): the same moves scored by the
 * smooth surrogate Σ_v Σ_j (1 − 2^−cnt[v][j]) (see parsa_fm.c), which can
 * leave plateaus of the exact objective; if the result after the exact
 * sweeps is worse than the entry placement, the entry placement is
 * restored, so the connectivity never rises.
 *
 * Rebalancing: if the entry placement breaks the cap (a projection from a
 * coarse level, parsa_ml.h), the examples of the parts above it are first
 * moved out, best gain first, to the best part with room (any gain, m_limit
 * ignored), else to the lightest part, until every part is within the cap.
 * Then, if parts are above m_limit, their examples with private features
 * are moved out, best gain first (any gain), to parts with room that stay
 * within m_limit, for up to 4 rounds (M_max can still end above m_limit
 * when that is not enough; it never rises).
 * These two may raise the connectivity; the rest of the call never does.
 *
 * Counts: uint16 per (feature, part holding it), sparse (parsa_pcount.h),
 * saturating at UINT16_MAX: a saturated count is never decremented (its
 * feature stays in the part until the end), so the tracked M_j are upper
 * bounds of the true ones and the guarantees above still hold; `used` is
 * recomputed exactly at the end when a count saturated.  Memory: about
 * 2.5 Σ_v λ_v + 8 |V| bytes for the counts (the dense table would take
 * 2 k |V|); for k <= 64 8 |V| for the masks of the parts where a count
 * is 1 (what the gains read), for larger k 4 |V| for λ; 4 |V| for the
 * sweep marks when max_passes > 1; 4 |U| for a stored order (none for
 * a parsa_perm order: see `order` below).  A
 * count region that cannot grow (out of memory) drops the move; the call
 * then ends with PARSA_ENOMEM, part and used consistent.
 *
 * Chunked sweeps (chunk > 0, on graphs of at least chunk_min_rows
 * examples; exact sweeps only): the sweep's order is cut into chunks of
 * `chunk` examples; the moves of a chunk are chosen against the state at
 * the chunk's start (in par_tasks tasks, which o->par may run on threads:
 * this evaluation is most of a sweep's cost), then applied in order, each
 * after an exact check of its gain, caps and acceptance rule on the
 * current state (a move that no longer qualifies is dropped).  So every
 * guarantee above holds, and the result depends on the seed and chunk
 * only: not on par_tasks, on par, or on the order the tasks run in.  It
 * differs from the one-at-a-time sweep's (a move is chosen without the
 * chunk's earlier moves).
 *
 * Cost per sweep: O(Σ_u Σ_{v∈N(u)} (1 + λ_v)) ≤ O(k |E|).
 * Deterministic for a given seed.  No globals; not thread-safe per call
 * (its own tasks aside).
 */
#ifndef PARSA_FM_H
#define PARSA_FM_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_stop.h"

/* The parallel evaluation of chunked sweeps: par(par_arg, n, fn, fn_arg)
 * must call fn(fn_arg, t) exactly once for every t in [0, n), on any
 * threads in any order, and return when all calls have returned. */
typedef void (*parsa_fm_task_fn)(void *fn_arg, uint32_t t);
typedef void (*parsa_fm_par_fn)(void *par_arg, uint32_t n,
				parsa_fm_task_fn fn, void *fn_arg);

/* The default chunk_min_rows: smaller graphs sweep one move at a time. */
#define PARSA_FM_CHUNK_MIN_ROWS 262144

struct parsa_fm_opts {
	uint32_t max_passes; /* sweeps (0: nothing to do) */
	uint64_t cap;        /* largest |U_j| a move may create */
	uint64_t m_limit;    /* largest M_j a move may create */
	double min_gain;     /* stop when a sweep gains < min_gain * conn */
	uint64_t seed;       /* visiting order */
	int swaps;           /* 1: swap phase after every sweep (see above) */
	uint32_t p_passes;   /* p-fanout sweeps before the exact ones */
	uint32_t skip_ratio; /* exact sweeps skip u when |private features| *
			      * skip_ratio < deg(u) (it can gain little for
			      * its cost); 0 = evaluate every u */
	const uint32_t *weight; /* borrowed, n_rows vertex weights (|U_j| is
				 * then Σ weights: coarse levels of parsa_ml),
				 * or NULL: all 1 */
	uint32_t fm_passes;  /* parsa_ml only: k-way FM passes (parsa_kfm.h)
			      * after the sweeps of every level; 0 = none.
			      * parsa_fm_refine ignores it */
	const struct parsa_stop *stop; /* borrowed, may be NULL: polled
					* before and within every sweep
					* (parsa_stop.h) */
	uint32_t chunk;      /* chunked sweeps (above): examples per chunk;
			      * 0 = one move at a time */
	uint32_t chunk_min_rows; /* chunked only on at least this many
				  * examples; 0 = PARSA_FM_CHUNK_MIN_ROWS */
	uint32_t par_tasks;  /* tasks per chunk (0 counts as 1); each has
			      * its own scratch of O(k) */
	parsa_fm_par_fn par; /* may be NULL: the tasks run in the caller */
	void *par_arg;
	const uint32_t *comm; /* parsa_ml only, borrowed, may be NULL: a
			       * community per row of the original graph
			       * (parsa_louvain.h); parsa_ml_refine's
			       * coarsening then joins only rows of one
			       * community, parsa_ml_partition adds a
			       * deeper start that does (parsa_ml.h) */
	int deep;             /* parsa_ml_partition only: the deeper start
			       * also without comm (coarsening unrestricted) */
	uint32_t rb_ml;       /* parsa_ml_partition only: a third start on
			       * the coarsest level, recursive bisection
			       * with this many multilevel starts per
			       * bisection (parsa_rb_opts.ml); 0 = none */
	/* parsa_fm_refine only, may be NULL: (examples visited, examples
	 * to visit) through its sweeps, in the caller's thread: total =
	 * (p_passes + max_passes) x n_rows; after every chunk of a chunked
	 * sweep and at the end of every sweep; non-decreasing, and (done =
	 * total) last, also when the sweeps end early (no gain, the stop);
	 * not called when there is nothing to sweep (max_passes 0, k < 2,
	 * no examples) or the set-up fails */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	/* the sweeps' visiting order, a fresh one for every sweep: 0
	 * (PARSA_FM_ORDER_AUTO) = a parsa_perm (no memory, no serial
	 * shuffle) for chunked sweeps, else a stored shuffled array;
	 * PARSA_FM_ORDER_STORED = the array for every sweep;
	 * PARSA_FM_ORDER_PERM = the permutation for every sweep.  The
	 * placement depends on it (as on the seed) */
	uint32_t order;
};

#define PARSA_FM_ORDER_AUTO 0
#define PARSA_FM_ORDER_STORED 1
#define PARSA_FM_ORDER_PERM 2

struct parsa_fm_stats {
	uint32_t passes;      /* sweeps run */
	uint64_t moves;       /* examples moved */
	uint64_t conn_before; /* Σ_i M_i − |V_used| on entry */
	uint64_t conn_mid;    /* the same after rebalancing (= conn_before
			       * when the entry placement keeps the cap) */
	uint64_t conn_after;  /* the same on return */
};

/*
 * part: g->n_rows part ids < used->k (updated in place).  used: N(U_1..U_k)
 * for part on entry (parsa_used_sets), equal to it for the new part on
 * return.  st may be NULL.  0, PARSA_ENOMEM or PARSA_EINVAL (sizes, part
 * id out of range); on error part and used are unchanged or consistent.
 */
int parsa_fm_refine(const struct parsa_graph *g, uint32_t *part,
		    struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		    struct parsa_fm_stats *st, struct parsa_err *err);

/* Σ_i |N(U_i)| − |V_used| of the sets (T_sum / 2 under Algorithm 11). */
uint64_t parsa_connectivity(const struct parsa_nbrset *used);

#endif /* PARSA_FM_H */
