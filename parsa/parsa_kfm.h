/*
 * parsa_kfm: k-way Fiduccia–Mattheyses refinement of the example partition
 * on the connectivity objective (T_sum / 2, see parsa_fm.h), with
 * negative-gain moves and rollback.
 *
 * Gains.  For u in part a and a part b, gain_b(u) = priv_a(u) − add_b(u)
 * = priv_a(u) − deg(u) + hits_b(u), hits_b(u) = #{v ∈ N(u): cnt[v][b] > 0},
 * from dense saturating uint16 counts per (feature, part) (parsa_conn.h;
 * parsa_fm keeps sparse ones).
 * Only parts b with hits_b(u) > 0 are targets (a move to an unrelated part
 * is never better than one to a related part).
 *
 * Priority structure: one bucket queue (doubly-linked lists indexed by the
 * key, a key in [−D, D] with D the largest degree, and a moving maximum
 * pointer; O(1) insert, remove and key change) keyed by an UPPER BOUND of
 * each vertex's best gain, re-evaluated lazily:
 *   - a pass queues every boundary vertex (one with a feature used by
 *     another part) with the O(deg) bound priv − deg + #{v: λ_v ≥ 2};
 *   - a popped vertex's best move is recomputed exactly
 *     (O(Σ_{v∈N(u)} ⌈k/64⌉), the evaluation of a label-propagation step);
 *     it is made if its exact gain is at least the largest key left in
 *     the queue, else the vertex goes back with its exact gain as key;
 *   - after a move of u from a to b only the count changes that can RAISE
 *     another vertex's gain are propagated (one count change moves each
 *     gain of a pin by at most 1): cnt[v][a] 2 → 1 (the last pin of v in
 *     a gains a private feature, +1 toward every part: found by a scan of
 *     net v) and cnt[v][b] 0 → 1 (every pin of v gains a hit in b: +1
 *     toward b).  A vertex's bound is max(g1 + r1, g2 + r2), g1 its best
 *     feasible gain at its last evaluation (toward t1), g2 the best toward
 *     any other part, r1/r2 the raises since toward t1 / toward the
 *     others; so raises toward parts far below its best do not lift its
 *     key.  Changes that lower gains (1 → 0, 1 → 2) are not propagated:
 *     the stale keys stay upper bounds and are corrected when popped;
 *   - balance: a vertex whose best move goes to a part at the cap (and
 *     beats its best feasible move) also waits in that part's list with
 *     that move's gain (ties between blocked parts: the one a scan of
 *     its features in row order, each feature's parts in increasing
 *     index, meets first; dense features: the lowest index); when a
 *     vertex leaves the part, the waiters with the largest gains that
 *     fill the room are queued again with them.
 * Why not a full gain table (KaHyPar's gain cache): it costs n·k entries
 * and a delta update per pin for every threshold crossing of every net;
 * with k up to 65536 that is not an option, and the lazy bounds need only
 * O(n + k) memory and touch a pin only on the two raising crossings (the
 * price: a vertex may be evaluated several times per move).
 * Keys only fall between moves (a re-inserted key is strictly below the one
 * it was popped with), so every move is preceded by finitely many pops.
 *
 * A pass moves vertices one at a time, each at most once (locked after
 * its move), negative gains included, only to parts b that share a feature
 * with it and have |U_b| + w_u ≤ cap and M_b + add_b(u) ≤ m_limit (ties
 * between targets: larger gain, smaller M_b + add_b, lower index).  The
 * running sum of gains is kept; the pass stops when the queue is empty,
 * after `stall` moves without a new best prefix, or after the pop budget;
 * then every move after the best prefix (largest cumulative gain; ties:
 * smaller Σ_j |U_j|², then fewer moves) is undone in reverse order.  So a
 * pass never raises the connectivity and never breaks the cap or m_limit
 * (a part the entry placement has above them only loses vertices).
 * Cost of a pass: O(|E|) for the queue, at most `pops` evaluations, and
 * O(|v|) per raising crossing of net v: O(k·|E|) for a bounded number of
 * pops.  Passes repeat while a pass
 * gains > 0, up to max_passes.
 *
 * Weighted vertices (coarse levels of parsa_ml): |U_j| is the sum of
 * weights; the connectivity is unweighted (N(cluster) is the union of its
 * members' features).  The entry placement should be within the cap
 * (parsa_fm_refine rebalances one that is not); a part above it only loses
 * vertices.
 *
 * Counts saturate as in parsa_fm (a saturated count is sticky, the tracked
 * M_j are then upper bounds and `used` is recomputed exactly at the end).
 * Memory: 2·k·|V| bytes of counts, the transpose of g, ~70 bytes
 * per vertex and O(k + max degree) more.
 * Deterministic for a given seed.  No globals; not thread-safe per call.
 */
#ifndef PARSA_KFM_H
#define PARSA_KFM_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_stop.h"

struct parsa_kfm_opts {
	uint32_t max_passes; /* FM passes (0: nothing to do) */
	uint64_t cap;        /* largest |U_j| (Σ weights) a move may create */
	uint64_t m_limit;    /* largest M_j a move may create */
	uint64_t seed;       /* order of the queue within a bucket */
	uint32_t stall;      /* moves without a new best before a pass stops;
			      * 0 = PARSA_KFM_STALL_AUTO */
	const uint32_t *weight; /* borrowed, n_rows vertex weights or NULL */
	uint32_t pops;       /* a pass pops at most pops·n/8 + 64 vertices;
			      * 0 = PARSA_KFM_POPS_AUTO */
	const struct parsa_stop *stop; /* borrowed, may be NULL: polled
					* before every pass and every
					* PARSA_STOP_POPS pops; a pass cut
					* short is rolled back to its best
					* prefix like any other */
};

/* The automatic pop budget of a pass, in eighths of n: 4·n. */
#define PARSA_KFM_POPS_AUTO 32

/* The automatic stall bound of a pass: clamp(n / 16, 64, 1024). */
#define PARSA_KFM_STALL_AUTO 0

struct parsa_kfm_stats {
	uint32_t passes;      /* passes run */
	uint64_t moves;       /* moves kept (after rollbacks) */
	uint64_t tried;       /* moves made, rolled back ones included */
	uint64_t conn_before; /* Σ_i M_i − |V_used| on entry */
	uint64_t conn_after;  /* the same on return (≤ conn_before) */
};

/*
 * part: g->n_rows part ids < used->k, updated in place.  used: N(U_1..U_k)
 * of part on entry (parsa_used_sets), equal to that of the new part on
 * return.  st may be NULL.  Returns 0, PARSA_ENOMEM or PARSA_EINVAL (NULL
 * argument, sizes, part id out of range); on error part and used are
 * unchanged.
 */
int parsa_kfm_refine(const struct parsa_graph *g, uint32_t *part,
		     struct parsa_nbrset *used, const struct parsa_kfm_opts *o,
		     struct parsa_kfm_stats *st, struct parsa_err *err);

#endif /* PARSA_KFM_H */
