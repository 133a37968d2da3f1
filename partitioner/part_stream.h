/*
 * part_stream: Parsa on a LIBSVM file streamed in blocks, with a memory
 * bound per worker (thesis 9.4.2: "only the current block is in memory, so
 * graphs larger than RAM can be streamed"; 9.4.3: the neighbor sets live
 * on the servers).  No process ever holds the dataset.
 *
 * Blocks.  The data lines of the file (blank and '#' lines skipped, as
 * part_reader.h) are cut into blocks of B consecutive examples; block b
 * belongs to worker b mod W.  Every worker reads the file from the start
 * (each rank opens it itself), skips the lines of other workers' blocks
 * without parsing them, and holds one block at a time: its rows as local
 * feature ids, the block's masks and Algorithm 13's cost lists.  B is
 * --block-rows, or from --mem-limit: from the sample of lines (below),
 * the bytes a block row costs (part_stream_row_bytes) and B = mem_limit /
 * that (at least PART_STREAM_MIN_BLOCK_ROWS), or else
 * PART_STREAM_DEFAULT_BLOCK_ROWS.
 *
 * Keys.  A feature's key on the servers is its id.  Every process reads
 * the first PART_STREAM_SAMPLE_LINES data lines before the cluster starts
 * (the same on every rank): server i owns ids from i * span / S, span =
 * 17/16 of the largest sampled id, so the usual dense ids 1..d spread
 * evenly (and each server indexes its range directly); ids beyond go to
 * the last server.
 *
 * Tables on the servers:
 *   0 SSIZE  i < k -> |S_i| (double, ADD; the MIN_S rule's key)
 *   1 COUNT  i < k -> examples given to part i (double, ADD; read by
 *            the last block)
 *   2 USED   feature -> (1 + R) masks of ceil(k/8) bytes, OR: N(v) of the
 *            result, then N(v) of each of the R random placements.  The
 *            first mask is also Algorithm 12's S(v) (v is in S_i iff an
 *            example of part i uses v), so there is no separate table of
 *            S(v): one value per feature per server.
 *
 * A worker's block: pull the USED values of its features (keeping their
 * first masks: the slice of S), |S_i| and the counts; Algorithm 13
 * (parsa_partu_block); push the block's USED masks and the size and count
 * deltas; send the block's parts to the scheduler.  One block = one PS
 * iteration, so --tau bounds the delay.
 * Global initialization (9.4.4): block 0 is partitioned first, by worker
 * 0 alone; every other block starts from its sets (a barrier).
 *
 * Balance, exact whatever the interleaving: a block that is not the last
 * gives part i at most floor(imb * B / k) examples (plus extras dealt
 * round-robin across blocks when that leaves too few places), so those
 * blocks stay within the global cap of n; the last block waits (a second
 * barrier) until every other block is acknowledged and fills the rest of
 * the global cap parsa_balance_cap(n, k, imb) from the exact counts.
 *
 * The random baseline: trial t deals each block's examples round-robin
 * from a random offset after a seeded shuffle (so |U_i| are balanced) and
 * gives feature v to server hash(seed + t, key) mod k.  Its distribution
 * is that of `parsa eval`'s baseline; the draws differ.
 *
 * On the servers, after the last block: M_i from the USED masks (the
 * server keeps the USED table's arrays as its state, the tables
 * themselves are emptied; the counters free the masks, the dump the
 * rest); then
 * Algorithm 11 (parsa_partition_v_part) on each server's own features in
 * turn, each from the traffic the previous ones left (then the sweeps the
 * same way), so V is assigned where the sets live; then every metric of
 * the result and of the random trials (counters summed over servers).
 * The scheduler gathers the parts (4 bytes per example) and the feature
 * owners (12 bytes per used feature) to write the placement.
 *
 * Only LIBSVM input (one example per line): the other formats need the
 * whole file to number their examples.  At most UINT32_MAX examples.
 */
#ifndef PART_STREAM_H
#define PART_STREAM_H

#include <stdint.h>

#include "parsa_metrics.h"
#include "parsa_partu.h"
#include "part_parallel.h"

#define PART_STREAM_DEFAULT_BLOCK_ROWS 32768
#define PART_STREAM_MIN_BLOCK_ROWS 64
#define PART_STREAM_SAMPLE_LINES 4096
#define PART_STREAM_MAX_TRIALS 8

struct part_stream_opts {
	uint32_t k;
	enum parsa_rule rule;
	double imbalance;        /* >= 1 */
	double block_imbalance;  /* 0 = imbalance; +INFINITY = off */
	uint64_t seed;
	uint32_t sweeps;         /* improving sweeps of Algorithm 11 */
	uint32_t random_trials;  /* 1..PART_STREAM_MAX_TRIALS */
	uint64_t block_rows;     /* B; 0 = from mem_limit, or the default */
	uint64_t mem_limit;      /* bytes of block data per worker; 0 = none */
	parsa_progress_fn progress; /* root: (examples done, 0) */
	void *progress_arg;
};

void part_stream_opts_default(struct part_stream_opts *o);

/* Estimated bytes one block row with avg_nnz entries costs a worker. */
double part_stream_row_bytes(double avg_nnz, uint32_t k, uint32_t trials);

struct part_stream_result {
	uint32_t k;
	uint32_t n_rows;       /* examples */
	uint32_t *part;        /* n_rows (owned) */
	uint32_t n_feat;       /* features used */
	uint64_t *feat_id;     /* n_feat input ids, by server, first-stored
				  first (owned) */
	uint32_t *owner;       /* n_feat (owned) */
	struct parsa_metrics m, rnd;
	uint64_t nnz, entries, duplicates, empty_rows;
	uint64_t block_rows, blocks;
	double row_bytes;      /* the estimate B came from (0: --block-rows) */
	long worker_peak_rss_kb; /* max over the processes running workers */
	double t_partition_u, t_partition_v, t_metrics;
};

void part_stream_result_init(struct part_stream_result *r);
void part_stream_result_release(struct part_stream_result *r);

/*
 * Partition the LIBSVM file at path.  As part_par_run: under MPI every
 * rank calls it with the same arguments; on the root (threads: the caller;
 * MPI: rank 0) r and info are filled and *is_root = 1.  Errors of any rank
 * (a parse error names file:line:col) are returned on every rank.
 */
int part_stream_run(const char *path, const struct part_stream_opts *o,
		    const struct part_par_opts *po,
		    struct part_stream_result *r, struct part_par_info *info,
		    int *is_root, int *rank, struct parsa_err *err);

#endif /* PART_STREAM_H */
