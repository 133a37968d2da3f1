/*
 * part_lanes: Algorithm 13 (partition U) on threads, with a placement that
 * does not depend on the number of threads.
 *
 * The run splits U into the same b random blocks as parsa_partition_u
 * (parsa_blocks_split, same seed) and processes them in rounds of
 * "lanes":
 *   round 0        block 0 alone (the lead block: every partition gets its
 *                  seed from one block, so the lanes that follow grow the
 *                  same clusters rather than each its own);
 *   round r >= 1   lanes l = 0..L-1 take blocks 1 + (r-1)L + l (the last
 *                  round may be shorter).
 * Every lane of a round runs parsa_partu_block on its block against the
 * snapshot of the neighbor sets S and of the balance taken when the round
 * starts (read-only during the round), with its own per-partition caps
 * from parsa_balance_split over the room left (cap - count), so the
 * global balance cap always holds and every example is placed.  After the
 * round the lanes' new bits are OR-ed into S and their counts added, in
 * lane order; the round-robin cursor continues from the last lane's.
 * L is fixed by the caller (never the thread count); `threads` threads
 * only execute the lanes of each round (part_pool.h), so the placement is
 * the same for every number of threads.  With L = 1 the run is exactly
 * parsa_partition_u without warm-up (a test checks it).
 *
 * Memory beside S and part: per thread that runs a lane, feature marks
 * (parsa_featmarks: 3/16 byte a feature of g), a block (rows, features,
 * local CSR: about the block's nonzeros in uint32) and a parsa_partu_ctx
 * (about 13 k bytes per block row, plus the block's transpose); per lane,
 * its block's features and slice of S (features of the block x k bits);
 * all reused from round to round, grown only.  The random permutation of
 * U is kept in part itself, and drawn again from the seed (4 |U| bytes)
 * once the rest is freed, to put part in row order (part_lanes.c):
 * O(min(threads, L) (n_cols / 5 + k rows_per_block + block) + L * block
 * features).
 *
 * Warm-up blocks (init_blocks > 0) are refused: individual initialization
 * is sequential by nature (use L = 1).  An initial S (incremental start)
 * is taken as is, as parsa_partition_u does.
 */
#ifndef PART_LANES_H
#define PART_LANES_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_partu.h"

/*
 * The automatic lane count (lanes option 0): L = 1 (the sequential run,
 * exactly) below PART_LANES_MIN_BLOCKS_PER_LANE * 2 blocks; above, the
 * largest of 2, 4, ..., PART_LANES_AUTO_MAX with at least
 * PART_LANES_MIN_BLOCKS_PER_LANE blocks per lane.  Blocks, not threads:
 * the count depends on the data only.
 */
#define PART_LANES_MIN_BLOCKS_PER_LANE 8
#define PART_LANES_AUTO_MAX 8
#define PART_LANES_MAX 4096

/* The lanes a run on b blocks uses: `lanes` when > 0 (at most b), else
 * the automatic count above; 1 when init_blocks > 0 and lanes == 0. */
uint32_t part_lanes_count(uint32_t lanes, uint32_t b, uint32_t init_blocks);

/*
 * What a run cost in CPU time (clock_gettime's thread clocks), so the
 * speed-up of the threads can be judged on a machine whose other load
 * makes wall times noisy: cpu_work is the CPU time of every lane plus the
 * calling thread's planning and merging; cpu_span the wall time the run
 * would take on as many free cores as it had threads: each round's lanes
 * laid out in lane order on the first free of `threads` threads (as
 * part_pool takes them), plus the planning and merging, summed over the
 * rounds.  Lane times are measured on the threads that ran them, so
 * memory contention between the lanes is in them.
 */
struct part_lanes_stats {
	uint32_t lanes, threads, rounds;
	double cpu_work, cpu_span; /* seconds */
};

/*
 * Algorithm 13 over the blocks of o (o->blocks, 0 = auto) in rounds of
 * `lanes` lanes (>= 1) on `threads` threads (0 = part_pool_cpus()).  S
 * (n_feat == g->n_cols, k == o->k) is the initial neighbor sets on entry
 * and S ∪ N(U_i) on return; part has g->n_rows entries.  progress(arg,
 * done, b) after each round; o->cancel checked before each round and each
 * lane (PARSA_ECANCEL).  st (may be NULL) is added to (new_bits: the bits
 * added to S).  0, PARSA_ENOMEM or PARSA_EINVAL (as parsa_partition_u;
 * init_blocks > 0 with lanes > 1).  ls (may be NULL) receives the CPU
 * times above (zero rounds when the run was delegated to
 * parsa_partition_u for its warm-up).
 */
int part_lanes_partition_u(const struct parsa_graph *g,
			   const struct parsa_partu_opts *o, uint32_t lanes,
			   uint32_t threads, struct parsa_nbrset *S,
			   uint32_t *part, struct parsa_partu_stats *st,
			   struct part_lanes_stats *ls, struct parsa_err *err);

#endif /* PART_LANES_H */
