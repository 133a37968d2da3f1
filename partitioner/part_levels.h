/*
 * part_levels: Parsa in two levels for large k (k = k1 x k2).
 *
 * Level 1 runs the whole one-level pipeline (Algorithm 13, the
 * refinement phases, Algorithm 11) at k1 on the whole data; level 2 takes
 * each level-1 group's examples as a dataset of its own (its features
 * renumbered, in increasing id order so rows stay sorted), partitions it
 * into k2 parts with the same pipeline (seed + 1 + group) and frees it;
 * the groups are tasks on the threads (part_pool.h; each group's run on
 * one thread: a group's copy and state, about 1/k1 of the data's, per
 * thread).  Part g * k2 + j is group g's part j.  Then Algorithm 11
 * (with its sweeps) runs once on the k-way result (part_run_owners, on
 * the users' lists), and part_run the metrics (64 parts at a time).
 * Times: level 2's phases are the groups' phase times scaled to its wall
 * time; its memory counts in the phase partition_u (the phase callback
 * is not called from the groups' threads).  The report's partition_u and
 * refine objects are level 1's.
 *
 * Why: the one-level pipeline at k holds k cost lists of a block's rows
 * per thread and k-bit sets per feature (at 100M nonzeros and k=1024: 3.2x
 * the CSR); the levels hold k1 and k2 of them.  The connectivity
 * objective decomposes exactly: Σ_i |N(U_i)| is the sum over the groups
 * of their parts' sets, so level 2 minimizes the global objective given
 * the groups.
 *
 * Balance: with C = parsa_balance_cap(|U|, k, imbalance), level 1 runs at
 * imbalance sqrt(imbalance) lowered until its cap is at most k2 x C, and
 * group g (n_g examples) at the largest imbalance whose cap at k2 is at
 * most C: every part holds at most C examples, as in one level.
 *
 * Deterministic for a seed, and independent of the thread count, since
 * each level's run is.  Not with init_S (incremental) or --workers.
 */
#ifndef PART_LEVELS_H
#define PART_LEVELS_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_reader.h"
#include "part_run.h"

/* levels = 0 (auto) runs two levels above this k. */
#define PART_LEVELS_AUTO_K 256

/* k1 is the largest divisor of k below k and at most this or sqrt(k):
 * level 1 is then the one-level run at k1 <= 64 up to k = 4096, whose
 * memory is measured (BENCHMARKS.md); at 10M nonzeros and k=1024, T_sum
 * was +5.9%, +4.1%, +0.9%, -1.0% and -0.3% of the one-level run's at k1 =
 * 8, 16, 32, 64 and 128. */
#define PART_LEVELS_K1 64

/*
 * k1 for o (Parsa, o->levels and o->pu.k): the largest divisor of k below
 * k and at most max(PART_LEVELS_K1, sqrt(k)) when two levels run, else 1
 * (one level: levels 1, auto at k <= PART_LEVELS_AUTO_K, another method,
 * an incremental start, or k without a divisor > 1, as a prime).
 */
uint32_t part_levels_k1(const struct part_run_opts *o);

/* The imbalance of a level run at k parts of n examples whose cap must
 * stay at most cap: the largest x <= want (and >= 1) with
 * parsa_balance_cap(n, k, x) <= cap (1 when even that is above it). */
double part_levels_imbalance(uint64_t n, uint32_t k, double want,
			     uint64_t cap);

/*
 * The two-level run (see top) into r (from part_result_alloc with
 * o->pu.k): r->part and r->owner, the times (t_partition_u: level 1's
 * and every group's Algorithm 13; t_refine: their refinement phases;
 * t_partition_v: their Algorithm 11 and the global one).  0 or an error.
 */
int part_levels_run(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err);

#endif /* PART_LEVELS_H */
