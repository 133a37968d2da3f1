/*
 * part_parallel: parallel Parsa (thesis 9.4.3, Algorithm 12) on the
 * parameter server (server/ps.h), on threads or over OpenMPI.
 *
 * Roles.  One scheduler, S servers, W workers (ps_transport.h places them:
 * server i and worker i on machine i % M; under MPI machine = rank and
 * rank 0 also runs the scheduler).
 *   servers    hold the neighbor sets: table 0 maps a compact feature id v
 *              to the k-bit mask S(v) (ceil(k/8) bytes, byte j = bits
 *              8j..8j+7, merged with OR); table 1 maps key i < k to |S_i|
 *              (a double, merged with ADD).  The feature ids [0, n_cols)
 *              are split evenly over the S servers.
 *   scheduler  global initialization (below), pushes the initial sets
 *              (OVERWRITE), starts one task per worker, collects each
 *              block's parts from the workers' progress records, then
 *              (still on the scheduler, so a failure stops every rank) runs
 *              the rest of the pipeline of part_run: the M_max refinement,
 *              Algorithm 11 and the metrics (part_run_finish).
 *   workers    worker w partitions blocks j ≡ w (mod W) of the same random
 *              split as the sequential driver (parsa_blocks_split, same
 *              seed, parsa_partu_blocks; with the automatic block count
 *              and W > 1 rounded up to a multiple of W, so every worker
 *              gets as many blocks), in increasing j, one PS iteration
 *              per block: ps_iter_begin (the τ window), extract the block,
 *              pull the masks of its features and the |S_i| counters,
 *              parsa_partu_block, push only the new bits (after & ~before,
 *              OR) and the counts of new bits per partition (ADD), and send
 *              the block's parts to the scheduler.
 *
 * Bounded delay τ: iteration t starts when the worker's requests of
 * iterations <= t - τ - 1 are complete (τ = 0: every pull sees all the
 * worker's earlier pushes; PART_PAR_TAU_INF: never wait).
 *
 * Prefetch (τ != 0): a worker extracts block j + W and sends its pulls
 * before it partitions block j, so the servers answer while it computes;
 * when they arrive it ORs in the bits (and adds the |S_i| deltas) it pushed
 * for block j itself, which the answer cannot hold (messages between a
 * worker and a server keep their order).  The pull of block j + W thus
 * misses only the other workers' pushes of one more block.  With one
 * worker the slice is exactly the sequential one, so τ = 1 or ∞ also
 * equals the sequential run bit for bit.
 *
 * Mid-block syncs (--syncs N; default 2 with W > 1): a block's rows are
 * placed in N + 1 equal steps; between two, the worker pushes the bits it
 * added since its last push and takes the answer of a pull of the block's
 * masks and counters sent one step earlier (no round trip is waited for):
 * the other workers' new bits enter the running block's cost lists
 * (parsa_partu_block_merge), so a block no longer misses the whole block
 * each other worker partitions at the same time, only the last step of
 * it.  With one worker the answers hold only its own bits: every N
 * equals the sequential run.
 *
 * |S_i| (the MIN_S rule's key): the pulled counters, i.e. the initial sizes
 * plus every new bit pushed so far.  Exact for one worker with τ = 0; with
 * several workers a bit two workers add at the same time is counted twice
 * and pushes still in flight are missed (an estimate, as in the thesis).
 *
 * Balance: the global cap C = parsa_balance_cap(|U|, k, imbalance), less
 * the kept sample's count s_i (0 without a sample), is split into
 * per-worker caps c_w,i with Σ_w c_w,i <= C - s_i and Σ_i c_w,i >= n_w
 * (the worker's examples): c_w,i = floor((C - s_i) n_w / (|U| - m)) plus,
 * where needed, one more round-robin over the partitions with room
 * (without a sample: on distinct partitions).  Worker w's balance keeps
 * the global cap C and starts count[i] at C - c_w,i, so no worker can
 * push a partition over C whatever the others do.  One worker: c = C and count = 0, exactly the
 * sequential balance.
 *
 * Initialization (thesis 9.4.4), done by the scheduler before any worker
 * starts; the result is pushed as the start S of every worker:
 *   --init-blocks A > 0   the sequential driver's warm-up, mirrored
 *                         exactly (blocks 0..A-1, each from the sets of
 *                         the previous warm-up block's partition only);
 *   init_sample F > 0     global initialization: a random sample of
 *                         m = round(F |U|) examples (the first ones of the
 *                         split's permutation) partitioned sequentially
 *                         (parsa_partition_u on the sample, in blocks of
 *                         the main pass's size); S = its N(U_i).  The
 *                         sample's examples keep those parts; the blocks
 *                         split the other |U| - m examples, and the
 *                         workers' caps share C - (sample's count in i)
 *                         per partition (the counts go in the task
 *                         payload, so every rank derives the same caps);
 *   o->init_S             (incremental) is the base of either.
 * The examples of the warm-up blocks are partitioned again by the
 * workers.
 *
 * With one worker and no sample the run equals parsa_partition_u with the
 * same options bit for bit, for every τ (tests/cli/test_parallel.py).
 *
 * Thread-safety: part_par_run is called once per process (under MPI, once
 * by every rank with the same dataset and options).
 */
#ifndef PART_PARALLEL_H
#define PART_PARALLEL_H

#include <stdint.h>

#include "ps.h"
#include "part_reader.h"
#include "part_run.h"

#define PART_PAR_TAU_INF (-1)

/*
 * Testing hook, called on a worker's thread after each of its blocks
 * (blocks_done = 1, 2, ...).  tp is the process's transport, rank its
 * rank.  Non-zero fails the worker (and so the run).  Used by the CLI to
 * make a rank die or send a malformed message (tests only).
 */
typedef int (*part_par_test_fn)(void *arg, struct ps_transport *tp,
				uint32_t rank, uint32_t worker,
				uint32_t blocks_done, struct parsa_err *err);

struct part_par_opts {
	uint32_t workers;   /* W; 0 = one per rank (MPI) or 1 (threads) */
	uint32_t servers;   /* S; 0 = one per rank (MPI) or W (threads) */
	int tau;            /* >= 0, or PART_PAR_TAU_INF */
	/* consistency model (ps.h): NULL or "tau:T" (T replaces tau), "bsp",
	   "ssp:S": each worker's block is a clock, and its pulls hold every
	   worker's pushes of blocks < its own - S (essp is refused) */
	const char *consistency;
	int mpi;            /* 1: OpenMPI transport; every rank calls */
	double init_sample; /* global-init sample fraction in [0, 1];
			       < 0 = auto (part_par_auto_sample) */
	int syncs;          /* mid-block syncs per block; < 0 = auto
			       (part_par_auto_syncs) */
	double timeout_s;   /* reply / liveness timeout; 0 = 60 s */
	part_par_test_fn test_hook; /* NULL normally */
	void *test_arg;
};

/* W = 1, S = 0, τ = PART_PAR_DEFAULT_TAU, threads, auto sample and
 * syncs. */
void part_par_opts_default(struct part_par_opts *po);

/* Default bounded delay (measured, see README "Parallel and MPI"): 1 lets
 * a worker prefetch the next block's pull; with one worker it still equals
 * the sequential run. */
#define PART_PAR_DEFAULT_TAU 1

/*
 * The sample fraction used when init_sample < 0 for n examples: 0 with one
 * worker (the run then equals the sequential one) or with warm-up blocks
 * (a > 0); else PART_PAR_SAMPLE_ROWS / n, kept within
 * [PART_PAR_MIN_SAMPLE, PART_PAR_AUTO_SAMPLE] (10% on small data such as
 * gowalla, where less costs quality; 2% on millions of examples, where 2%
 * loses < 0.5% and the single-threaded sample would bound the speedup).
 */
#define PART_PAR_AUTO_SAMPLE 0.10
#define PART_PAR_MIN_SAMPLE 0.02
#define PART_PAR_SAMPLE_ROWS 20000
double part_par_auto_sample(const struct part_par_opts *po, uint32_t workers,
			    uint32_t init_blocks, uint64_t n);

/*
 * Mid-block syncs per block when syncs < 0, for W workers and b blocks:
 * while a block runs, the other workers' W - 1 blocks are in flight, a
 * fraction (W - 1) / b of the data it cannot see; N syncs cut that to
 * (W - 1) / (b (N + 1)).  Auto: the least N that brings it to
 * 1 / PART_PAR_SYNC_SPAN, at most PART_PAR_AUTO_SYNCS_MAX; 0 with one
 * worker (the run then equals the sequential one).  Measured (README
 * "Parallel and MPI"): on gowalla (6 blocks) 3 syncs take the M_max loss
 * of 2 workers from +7.7% to +3.9% (seeds 1-5), for a speedup of 1.07x
 * instead of 1.25x (a sync costs about 1 ms there); on 20M nonzeros (38
 * blocks) the loss is 0.1% without syncs.
 */
#define PART_PAR_SYNC_SPAN 20
#define PART_PAR_AUTO_SYNCS_MAX 4
#define PART_PAR_MAX_SYNCS 64
uint32_t part_par_auto_syncs(const struct part_par_opts *po,
			     uint32_t workers, uint32_t blocks);

/* What a run did (filled on the root process after success). */
struct part_par_info {
	const char *transport;   /* "threads" or "mpi" (static) */
	uint32_t workers, servers, ranks;
	int tau;                 /* PART_PAR_TAU_INF = infinite */
	char consistency[24];    /* "tau:1", "bsp", "ssp:3" */
	uint64_t read_hist[PS_STALE_BUCKETS]; /* ssp: keys read with
						 staleness s, all workers */
	const char *init;        /* "none", "warm-up" or "sample" (static) */
	uint32_t init_blocks;    /* warm-up blocks used */
	double init_sample;      /* sample fraction used */
	uint64_t init_rows;      /* examples partitioned for initialization */
	double t_init;           /* seconds of initialization */
	double t_workers;        /* seconds from task start to last block */
	struct ps_counters traffic;  /* summed over every node */
	uint64_t stale_hist[PS_STALE_BUCKETS]; /* summed over workers */
	uint64_t stale_max;
	uint64_t iters;          /* worker iterations (= blocks) */
	uint32_t blocks;         /* blocks of the split (rounded to W) */
	uint32_t syncs;          /* mid-block syncs per block */
	double tau_wait_s;       /* summed over workers: blocked by τ */
	double wait_s;           /* summed over workers: in ps_wait */
};

/*
 * Run Parsa on ds in parallel (o->method must be parsa): partition U on
 * the parameter server, then refine, Algorithm 11 and the metrics on the
 * scheduler's process.  r must be initialised; on the root (threads: the
 * caller; MPI: rank 0) it is filled as by part_run and *is_root = 1;
 * elsewhere r stays empty and *is_root = 0.  info (may be NULL) is filled
 * on the root.  *rank (may be NULL) = this process's rank (threads: 0).
 * o->pu.progress, if set, is called on the root's calling thread.
 * Errors (any rank's, named) are returned on every rank: 0, PARSA_EINVAL,
 * PARSA_ENOMEM, PARSA_EMPI, PARSA_EPARSE (malformed message), ...
 */
int part_par_run(const struct part_dataset *ds, const struct part_run_opts *o,
		 const struct part_par_opts *po, struct part_result *r,
		 struct part_par_info *info, int *is_root, int *rank,
		 struct parsa_err *err);

/* "inf", "-1" -> PART_PAR_TAU_INF; "0".."1000000" -> τ.  0 or -1. */
/*
 * The body of a run on a transport (the caller's args in arg): set up the
 * config (part_par_config) and the app, ps_run them.  On failure before
 * ps_run it must fail tp so that the other ranks stop too.
 */
typedef int (*part_par_body_fn)(void *arg, struct ps_transport *tp,
				struct parsa_err *err);

/*
 * When this process is bound (its affinity mask has fewer CPUs than are
 * online, as under mpirun's default binding): how many of `workers`
 * threads exceed the mask's CPUs; 0 when not bound (more workers than
 * cores on a free machine is the user's choice) or the mask cannot be
 * read.  *cpus receives the mask's CPU count.  part_par_launch warns on
 * stderr when this is not 0.
 */
uint32_t part_par_cpu_shortfall(uint32_t workers, uint32_t *cpus);

/*
 * Create the transport po asks for, run fn(arg, tp), destroy it.  *is_root
 * = this process is rank 0 (threads: always) and fn succeeded; *rank (may
 * be NULL) = its rank.  Used by part_par_run and part_stream_run.
 */
int part_par_launch(const struct part_par_opts *po, part_par_body_fn fn,
		    void *arg, int *is_root, int *rank, struct parsa_err *err);

/* cfg zeroed, then the layout's S, W, M and po's τ and timeout. */
void part_par_config(struct ps_config *cfg, const struct ps_layout *l,
		     const struct part_par_opts *po);

/* info's transport, layout, τ, traffic and staleness fields from a run's
 * statistics (the initialization fields zeroed, init "none"). */
void part_par_info_fill(const struct ps_transport *tp,
			const struct ps_result *res, int tau,
			struct part_par_info *in);

#endif /* PART_PARALLEL_H */
