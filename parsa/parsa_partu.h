/*
 * parsa_partu: partition the examples U (thesis Algorithm 13) over blocks.
 *
 * The unit of work is a block: a subgraph of some examples with its
 * features renumbered locally (struct parsa_block).  parsa_partu_block runs
 * Algorithm 13 on one block against the block's slice of the neighbor sets
 * (a parsa_nbrset over the block's local features), updating it in place.
 * This is the same step the sequential driver (parsa_partition_u) and the
 * parallel workers on the parameter server perform, so the two agree
 * exactly for one worker.
 *
 * Partition choice (which partition picks next) is a rule:
 *   PARSA_RULE_MIN_S       the thesis: the eligible partition with the
 *                          smallest |S_i| (ties: fewest examples, then
 *                          lowest index);
 *   PARSA_RULE_ROUND_ROBIN step t goes to partition t mod k, skipping
 *                          partitions that are full.
 * A partition is eligible while it is below both its global cap
 * (parsa_balance_cap) and its per-block cap ceil(block_imbalance * n_block
 * / k) (block_imbalance defaults to imbalance; +INFINITY turns the block
 * cap off); if no partition meets both, the block cap is dropped, so every
 * example is always placed and max |U_i| <= the global cap.
 *
 * Seeding (a tie rule): while S_i is empty (global |S_i| == 0), partition
 * i's pick is, among its cheapest unassigned examples, the one sharing the
 * fewest features with the other partitions' sets (Σ_j |N(u) ∩ S_j|),
 * first in list order on ties: farthest-first, so two partitions do not
 * start inside the same cluster.  Otherwise the pick is the front of the
 * lowest bucket (parsa_costlist's tie rule).
 */
#ifndef PARSA_PARTU_H
#define PARSA_PARTU_H

#include <stdatomic.h>
#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"

enum parsa_rule {
	PARSA_RULE_MIN_S = 0,
	PARSA_RULE_ROUND_ROBIN = 1,
};

typedef void (*parsa_progress_fn)(void *arg, uint64_t done, uint64_t total);

struct parsa_partu_opts {
	uint32_t k;            /* partitions, >= 1 */
	uint32_t blocks;       /* b (more than |U| is clamped); 0 = auto */
	uint32_t init_blocks;  /* a, 0..b: warm-up blocks (individual init) */
	enum parsa_rule rule;  /* partition-choice rule */
	double imbalance;      /* >= 1.0, default 1.03 */
	double block_imbalance; /* per-block cap factor: 0 = imbalance (the
				 * default), >= 1, or INFINITY = no block cap */
	uint64_t seed;         /* all randomness (block split) */
	/* 0, or the bytes of the whole dataset (its CSR) the automatic
	 * blocks are sized to: see parsa_partu_blocks */
	uint64_t fit_bytes;
	parsa_progress_fn progress; /* may be NULL */
	void *progress_arg;
	/* may be NULL; when *cancel becomes non-zero (another thread may set
	 * it) the run stops before its next block with PARSA_ECANCEL */
	const atomic_int *cancel;
	/* may be NULL (one thread): par(par_arg, n, fn, fn_arg) must call
	 * fn(fn_arg, t) once for every t in [0, n), on any threads in any
	 * order, and return when all have returned.  parsa_partition_u then
	 * computes each block's cost lists in tasks and runs each block on
	 * two threads (parsa_partu_ctx_set_par), extracting the next block
	 * beside it; the result is the same with or without par.  A call's
	 * tasks should run at once: run one after another, they give the
	 * same result on one thread (a task waits at most a few thousand
	 * spins for another to begin). */
	parsa_graph_par_fn par;
	void *par_arg;
};

/* Fill the defaults (k = 16; the measured defaults for the rest). */
void parsa_partu_opts_default(struct parsa_partu_opts *o);

/*
 * Automatic block count (blocks == 0): at least PARSA_AUTO_MIN_BLOCKS, and
 * blocks of at most PARSA_AUTO_BLOCK_ROWS examples, so the cost lists of a
 * block (k * rows * 13 bytes) stay cache-friendly and memory stays bounded
 * by the block, not the dataset.  Chosen by the study in BENCHMARKS.md.
 */
#define PARSA_AUTO_MIN_BLOCKS 6
#define PARSA_AUTO_BLOCK_ROWS 32768

/*
 * Sized to the data (fit_bytes > 0, automatic count only): a block's k
 * cost lists (6 bytes a row and partition) are also kept within
 * 1/PARSA_FIT_SHARE of fit_bytes, i.e. at most
 * parsa_partu_fit_rows(k, fit_bytes) rows, so the scratch of a thread
 * (those lists, the block and its transpose) stays a small part of the
 * dataset's own size on small data too.  Never below PARSA_FIT_MIN_ROWS
 * rows: at 10M nonzeros and k = 64 blocks of 7.4k rows instead of 31k (1/4
 * the scratch; M_max, T_max, T_sum within 0.2% over three seeds); from
 * 100M nonzeros at k <= 64 the limit is above PARSA_AUTO_BLOCK_ROWS and
 * nothing changes; below PARSA_FIT_MIN_BYTES neither.
 */
#define PARSA_FIT_SHARE 16
#define PARSA_FIT_MIN_ROWS 4096
/* ... and only for datasets of at least this size (32 MiB of CSR): below,
 * a block's lists are a few MiB whatever the split, and the default
 * blocks give the better placements (the default on soc-Slashdot0902
 * adjacency, 0.9M nonzeros, k=64: M_max 7,975 against 9,754 in 21 fitted
 * blocks; T_sum +2% on gowalla k=64 and email-Enron k=16). */
#define PARSA_FIT_MIN_BYTES ((uint64_t)32 << 20)

/* The largest automatic block for k partitions and a dataset of
 * fit_bytes (0 or under PARSA_FIT_MIN_BYTES: PARSA_AUTO_BLOCK_ROWS), in
 * PARSA_FIT_MIN_ROWS .. PARSA_AUTO_BLOCK_ROWS. */
uint32_t parsa_partu_fit_rows(uint32_t k, uint64_t fit_bytes);

/* The number of blocks a run on n examples uses: o->blocks, or the automatic
 * count when it is 0 (blocks of at most parsa_partu_fit_rows(o->k,
 * o->fit_bytes) rows, at least PARSA_AUTO_MIN_BLOCKS); never more than n
 * (for n > 0). */
uint32_t parsa_partu_blocks(const struct parsa_partu_opts *o, uint32_t n);

/*
 * The largest number of examples a partition may hold:
 * max(ceil(n/k), min(floor(imb * ceil(n/k)), ceil(imb * n / k))),
 * so both max|U_i| <= ceil(imb*n/k) and max|U_i|/ceil(n/k) <= imb hold.
 */
uint64_t parsa_balance_cap(uint64_t n, uint32_t k, double imbalance);

/* Balance book-keeping shared by the blocks of one run. */
struct parsa_balance {
	uint32_t k;
	enum parsa_rule rule;
	double imbalance;
	double block_imbalance; /* per-block cap factor (init: imbalance) */
	uint64_t cap;      /* global cap per partition */
	uint64_t *count;   /* k: examples assigned so far to each partition */
	uint64_t *s_size;  /* k: the *global* |S_i| (the MIN_S rule's key) */
	uint64_t rr;       /* round-robin cursor */
};

/*
 * count and s_size start at zero.  s_size must hold the global |S_i| (not
 * the block slice's) when a block starts: the caller sets it (the
 * sequential driver copies the global S->size before every block; a
 * parallel worker uses the sizes it pulled), and parsa_partu_block adds
 * the bits it sets.  0, PARSA_ENOMEM, or PARSA_EINVAL (k == 0, imbalance
 * < 1 or not finite, unknown rule).
 */
int parsa_balance_init(struct parsa_balance *b, uint32_t k, uint64_t n_total,
		       enum parsa_rule rule, double imbalance,
		       struct parsa_err *err);
void parsa_balance_release(struct parsa_balance *b);

/*
 * Caps for W block runs that go on at once against the same balance (the
 * parameter server's workers, the lanes of part_lanes.h): partition i has
 * avail[i] free slots, run w has nw[w] examples to place (Σ avail >=
 * Σ nw).  caps[w * k + i] (W * k) gets floor(avail[i] nw[w] / Σ nw) (so
 * Σ_w caps[., i] <= avail[i]), then each run takes the spare slots it
 * still needs round-robin over the partitions from one cursor shared by
 * the runs (with equal avail: fewer than k per run, on distinct
 * partitions), so Σ_i caps[w, .] >= nw[w].  spare (k) is scratch.  A run
 * holds its caps by starting from count[i] = cap - caps[w * k + i].
 * With W = 1 and nw[0] > 0, caps = avail.
 */
void parsa_balance_split(uint32_t W, uint32_t k, const uint64_t *nw,
			 const uint64_t *avail, uint64_t *caps,
			 uint64_t *spare);

/*
 * A block: the examples rows[0..g.n_rows) of the full graph, as a subgraph
 * whose columns are local feature ids; feat[l] is the global id of local
 * feature l, and feat is strictly increasing (a sorted unique key list, as
 * the parameter server wants it).  Owns all three arrays.
 */
struct parsa_block {
	struct parsa_graph g; /* local subgraph */
	uint32_t *rows;       /* g.n_rows global example ids */
	uint32_t *feat;       /* g.n_cols global feature ids, increasing */
	uint64_t rows_cap;    /* allocated entries of rows */
	uint64_t feat_cap;    /* allocated entries of feat */
};

void parsa_block_init(struct parsa_block *b);
void parsa_block_release(struct parsa_block *b);

/*
 * Build the block of the examples rows[0..n) of g.  map is caller scratch
 * of g->n_cols entries, all UINT32_MAX on entry and restored on return.
 */
int parsa_block_extract(struct parsa_block *b, const struct parsa_graph *g,
			const uint32_t *rows, uint32_t n, uint32_t *map,
			struct parsa_err *err);

/*
 * Feature marks for parsa_block_extract_marks: one bit per feature of g and
 * a rank per 64-bit word (3/16 byte a feature, against the 4 bytes of
 * parsa_block_extract's map: 0.4 MB instead of 8 MB per thread at 2M
 * features).  Every bit is zero between uses.
 */
struct parsa_featmarks {
	uint32_t n_feat;
	uint64_t *bits;  /* ceil(n_feat / 64) words */
	uint32_t *rank;  /* per word: marked features in the words before */
};

int parsa_featmarks_init(struct parsa_featmarks *m, uint32_t n_feat,
			 struct parsa_err *err);
void parsa_featmarks_release(struct parsa_featmarks *m);

/*
 * The block of parsa_block_extract (the same arrays, the same local ids),
 * with marks (m->n_feat == g->n_cols) instead of the map, and into b's
 * arrays where they are large enough (b->rows_cap, feat_cap, g.row_cap,
 * g.col_cap): a block reused from extraction to extraction is allocated
 * only when it grows, so a long run does not leave the heap fragmented.
 */
int parsa_block_extract_marks(struct parsa_block *b,
			      const struct parsa_graph *g, const uint32_t *rows,
			      uint32_t n, struct parsa_featmarks *m,
			      struct parsa_err *err);

/* Per-run counters (for reports and tests). */
struct parsa_partu_stats {
	uint64_t assigned;   /* examples placed */
	uint64_t new_bits;   /* (feature, partition) pairs added to S */
	uint64_t decrements; /* cost-list decrements */
};

struct parsa_partu_ctx;

/* Scratch for blocks up to max_rows examples; k partitions.  It grows on
 * demand if a larger block comes (max_rows is a hint). */
int parsa_partu_ctx_create(struct parsa_partu_ctx **ctx, uint32_t k,
			   uint32_t max_rows, struct parsa_err *err);
void parsa_partu_ctx_destroy(struct parsa_partu_ctx *ctx);

/*
 * From now on parsa_partu_block_begin computes the block's transpose and
 * cost lists in tasks through par (the contract of parsa_partu_opts.par;
 * NULL: on the caller's thread), for blocks of at least 2048 rows, and
 * readies them for a run on two threads (parsa_partu_block_par,
 * parsa_partition_u: a copy of the transpose, the steps of the rows);
 * parsa_partu_block_run still runs such a block on the caller's thread.
 * The lists, and so every result, are the same either way.  0, or
 * PARSA_ENOMEM (the scratch of the tasks; the context's par is then
 * unchanged).  par NULL frees that scratch again.
 */
int parsa_partu_ctx_set_par(struct parsa_partu_ctx *ctx,
			    parsa_graph_par_fn par, void *par_arg,
			    struct parsa_err *err);

/*
 * Algorithm 13 on one block.  S is the block's slice of the neighbor sets
 * (S->n_feat == blk->g.n_cols, S->k == bal->k) and is updated in place to
 * S ∪ N(U_i^block).  part[r] receives the partition of block row r.
 * bal->count and bal->s_size are updated.  st (may be NULL) is added to.
 * PARSA_EINVAL (nothing changed) if k or sizes disagree or the global caps
 * leave room for fewer than n_block examples.  A block of 0 rows is a no-op.
 * Deterministic: ties in a cost list follow parsa_costlist's rule.
 */
int parsa_partu_block(struct parsa_partu_ctx *ctx,
		      const struct parsa_block *blk, struct parsa_nbrset *S,
		      struct parsa_balance *bal, uint32_t *part,
		      struct parsa_partu_stats *st, struct parsa_err *err);

/*
 * parsa_partu_block through the context's par (parsa_partu_ctx_set_par):
 * a block of at least 2048 rows has its lists built in tasks and runs on
 * two threads, each step's growth of S_i and decrements handed from the
 * thread that picks to the other; the same result, S, bal, part and st as
 * parsa_partu_block, which it is without a par.  The par's two tasks
 * should run at once (run one after the other they still give the
 * result, on one thread).
 */
int parsa_partu_block_par(struct parsa_partu_ctx *ctx,
			  const struct parsa_block *blk, struct parsa_nbrset *S,
			  struct parsa_balance *bal, uint32_t *part,
			  struct parsa_partu_stats *st, struct parsa_err *err);

/*
 * parsa_partu_block in steps, so that a parallel worker can bring in the
 * bits other workers set while the block runs:
 *   parsa_partu_block_begin  the checks and the block's cost lists from S
 *                            (PARSA_EINVAL as parsa_partu_block);
 *   parsa_partu_block_run    place rows until `upto` of the block's rows
 *                            are placed (min with its size);
 *   parsa_partu_block_merge  S(l) |= mask (k bits, S->words words) for
 *                            local feature l, lowering the cost in each
 *                            newly set partition of the block's unplaced
 *                            rows that use l, as if a row of that
 *                            partition had set it; returns the bits
 *                            added.  bal->s_size is not changed (the
 *                            caller owns the global sizes).
 * begin + run(n_rows) is exactly parsa_partu_block.  S, bal and part must
 * be the same objects throughout a block; the cost invariant
 * cost_i(r) = |N(r) \ S_i| holds between the calls.
 */
int parsa_partu_block_begin(struct parsa_partu_ctx *ctx,
			    const struct parsa_block *blk,
			    const struct parsa_nbrset *S,
			    const struct parsa_balance *bal,
			    struct parsa_err *err);
void parsa_partu_block_run(struct parsa_partu_ctx *ctx,
			   const struct parsa_block *blk,
			   struct parsa_nbrset *S, struct parsa_balance *bal,
			   uint32_t *part, uint32_t upto,
			   struct parsa_partu_stats *st);
uint32_t parsa_partu_block_merge(struct parsa_partu_ctx *ctx,
				 struct parsa_nbrset *S, uint32_t l,
				 const uint64_t *mask);

/*
 * The whole sequential run: split U at random into b blocks (seeded),
 * warm S up on the first a blocks (individual initialization: each warm-up
 * block starts from the neighbor sets of the previous warm-up block's
 * partition only; their assignments are discarded), then partition all b
 * blocks in order carrying S.  S (n_feat == g->n_cols) is the initial
 * neighbor sets on entry (empty, or from an earlier placement) and
 * S ∪ N(U_i) on return.  part has g->n_rows entries.
 *
 * Warm-up in detail: warm-up block 1 starts from S; warm-up block j > 1
 * from S ∪ N(its predecessor's partition); each gets its own balance over
 * its own rows.  The main pass starts from S ∪ N(last warm-up partition)
 * on a working copy; those warm-up bits only guide the choices, and on
 * return S is exactly S_entry ∪ N(U_i) (so with a > 0 the run keeps one
 * extra copy of S).  Blocks b > |U| are clamped to |U|, a to b.  The
 * global balance (MIN_S key: S->size) is carried across blocks; the
 * round-robin cursor too.  progress(arg, done, a + b) is called after each
 * block (warm-up blocks included).  st counts the main pass only, and
 * st->new_bits is the bits added to the caller's S.  Deterministic for a
 * given seed.  0, PARSA_ENOMEM or PARSA_EINVAL (k, sizes, b == 0, a > b,
 * imbalance, rule).
 */
int parsa_partition_u(const struct parsa_graph *g,
		      const struct parsa_partu_opts *o, struct parsa_nbrset *S,
		      uint32_t *part, struct parsa_partu_stats *st,
		      struct parsa_err *err);

/* The random split into blocks: a permutation of 0..n-1 cut into b runs;
 * block j is perm[start[j] .. start[j+1]).  start has b+1 entries. */
int parsa_blocks_split(uint32_t n, uint32_t b, uint64_t seed, uint32_t *perm,
		       uint32_t *start, struct parsa_err *err);

#endif /* PARSA_PARTU_H */
