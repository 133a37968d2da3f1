/*
 * train_run: delayed block proximal gradient (thesis ch. 6, Algorithm 5)
 * for sparse L1-regularized logistic regression on the parameter server.
 *
 * Layout: k machines; worker i trains on its examples U_i (part[r] == i)
 * and server i owns the weights of V_i (owner[j] == i).  Keys are remapped
 * so that server i's parameters are one contiguous key range: features
 * sorted by (owner, compact id) get keys 0..n_cols-1, and the range starts
 * (ps_config.range_starts) are the prefix sums of |V_i|.  col_of_key is
 * the inverse map used to export the model.
 *
 * Blocks: server i's range is cut into B equal contiguous pieces; block b
 * is the union of every server's piece b, so every server works on every
 * block.  Iteration t of pass p is block b = t mod B (in order).
 *
 * Iteration t, on worker i (keys K = N(U_i) in block b, exactly the keys
 * its examples use):
 *   1. ps_iter_begin (bounded delay tau: at most tau earlier iterations
 *      unfinished);
 *   2. from its margins, the gradient g_j and the curvature bound
 *      u_j = sum_r omega_rj s_r (1 - s_r) x_rj^2 for j in K, omega_rj = the
 *      active non-zeros of row r in blocks b - tau .. b + tau of the pass
 *      (those move together: none sees the others' updates), plus j
 *      itself if inactive (a key is inactive while its last update left it
 *      at 0 with |g| <= lambda (1 - TRAIN_KKT_DELTA): the server publishes
 *      it as -0.0).  By Cauchy-Schwarz, diag(u) then bounds the Hessian
 *      along the joint move of the active keys and any one inactive key;
 *   3. push (g, u) for K (table GRAD, double ADD);
 *   4. finish iteration t - tau: wait for its push, barrier (every worker
 *      pushed), hook PROX on every server (the first call per iteration
 *      applies train_prox_step to each of the server's keys of the block
 *      that received gradient, with a per-coordinate trust region, writes
 *      table W and clears GRAD), pull W for K, and update the margins by
 *      the weight changes.
 * KKT filter (opt-in, train_opts.kkt): in the passes between full ones
 * (every TRAIN_KKT_PERIOD-th pass, and the first, is full) workers neither
 * push nor pull inactive keys.  Every worker got the flag from the same pull
 * iteration, so all skip the same keys.  Traffic then drops below 12 T_sum.
 * SSP / ESSP (train_opts.cons, staleness S): iteration t is the workers'
 * clock t; each server applies PROX for iteration t's block in its
 * on-clock callback, once every worker completed clock t (so no barrier
 * and no PROX hook).  Before computing iteration t a worker's margins must
 * hold every update of iterations < t - S: under SSP it pulls block b(t -
 * S - 1)'s weights for clock t (sent one clock early when S >= 1), under
 * ESSP it subscribes to all its keys once (a pull at the start) and then
 * applies the servers' eager pushes of changed weights as they come, and
 * waits for the snapshot t - S.  The curvature bound counts blocks b - S ..
 * b + S, so it holds for any delay up to S.
 * A pass finishes all its iterations before it ends, so the end-of-pass
 * numbers are exact.  With tau = 0 and one worker this is sequential block
 * coordinate descent with a Newton-type proximal step.
 *
 * Traffic (data plane, counted by the workers on what they send and what
 * the servers answer them): a push to server s costs 8 bytes of keys and
 * 16 of values per key, a pull 8 of keys (request) and 8 of values
 * (reply) per key, and one message per server slice each way; local iff
 * server s sits on the worker's machine (ps_layout_machine).  So per pass
 * the remote value bytes are 24 sum_i |N(U_i) \ V_i| = 12 T_sum.  The
 * transport's own counters (every message, headers, barriers, hooks,
 * evaluation) are reported as wire bytes.
 *
 * Thread-safety / ownership: problem and options are borrowed for the
 * call; results are new (train_result_release).  Under MPI every rank
 * calls train_run with the same problem, except that a rank's rows need
 * only hold the examples of the workers it hosts (train_opts.load);
 * rank 0 gets the results.
 */
#ifndef TRAIN_RUN_H
#define TRAIN_RUN_H

#include <stdint.h>

#include "parsa_err.h"
#include "ps.h"
#include "ps_link.h"
#include "train_data.h"

#define TRAIN_KKT_DELTA 0.1 /* skip when |g| <= lambda (1 - this) */
#define TRAIN_KKT_PERIOD 5  /* every 5th pass (and the first) is full */

/* Data-plane traffic, [0] local and [1] remote (PS_LOCAL, PS_REMOTE). */
struct train_traffic {
	uint64_t key_bytes[2], val_bytes[2], msgs[2];
};

/* What a pass reports (root process). */
/* What a worker waits for (train_pass.wait_split): the tau window
 * (ps_iter_begin), a push's acknowledgement, the barrier before PROX, the
 * PROX hook, pulled weights (SSP: a parked pull; ESSP: the servers'
 * snapshot). */
enum {
	TRAIN_WAIT_WINDOW,
	TRAIN_WAIT_PUSH,
	TRAIN_WAIT_BARRIER,
	TRAIN_WAIT_PROX,
	TRAIN_WAIT_PULL,
	TRAIN_WAIT_KINDS
};

struct train_pass {
	uint32_t pass;          /* 1-based */
	double objective;       /* logloss + lambda * l1 */
	double logloss;         /* sum over the training examples */
	double l1;
	double auc;             /* test AUC, NaN without test data */
	uint64_t nnz_w;
	double seconds;         /* wall time of the pass (slowest worker) */
	double total_seconds;   /* since training started */
	double wait_seconds;    /* mean per worker: blocked in waits,
				   barriers, hooks and the tau window */
	/* wait_seconds split by what the worker waited for (mean per
	   worker, TRAIN_WAIT_*: sums to wait_seconds) */
	double wait_split[TRAIN_WAIT_KINDS];
	struct train_traffic t; /* data plane of the pass */
	/* keys read with staleness s (clocks missing, ps.h), all workers;
	   the last bucket counts s and more */
	uint64_t read_hist[PS_STALE_BUCKETS];
	uint64_t eager_bytes[2]; /* ESSP: EAGER wire bytes workers received
				    from servers on their / other machines */
	int delay;               /* the bound in effect: tau or S, capped at
				    blocks - 1 */
	uint64_t wire_bytes[2], wire_msgs[2]; /* transport, workers+servers */
};

struct train_problem {
	const struct train_data *train;
	const struct train_data *test; /* NULL: no AUC */
	const uint32_t *part;  /* n_rows: worker of each example, < k */
	const uint32_t *owner; /* n_cols: server of each feature, < k */
	uint32_t k;
};

struct train_opts {
	uint32_t passes;   /* >= 1 */
	double lambda;     /* >= 0 */
	int tau;           /* >= 0 (capped at blocks - 1) */
	/* consistency model: PS_CONS_TAU (the default: tau above and a
	   barrier + PROX hook per iteration), or SSP/ESSP with staleness
	   cons.bound (capped at blocks - 1), where servers apply PROX when
	   every worker completed the iteration's clock */
	struct ps_consistency cons;
	uint32_t blocks;   /* >= 1 (capped at the number of features) */
	int kkt;           /* KKT filter: skip inactive coordinates */
	int mpi;           /* MPI transport (one machine per rank) */
	int have_link;     /* wrap the transport in an emulated link */
	struct ps_link_spec link;
	double timeout_s;  /* 0: the parameter server's default */
	/* root, scheduler thread: after each pass (may be NULL) */
	void (*on_pass)(void *arg, const struct train_pass *p);
	void *arg;
	/* tests (threads only): n_rows entries, set to 1 + i by worker i for
	   every example it uses */
	uint32_t *trace_rows;
	/*
	 * Per-process loading (may be NULL): called once in each process
	 * after the transport is up (so rank and nranks are known; threads:
	 * 0 of 1) and before any node runs.  It fills the rows of
	 * pb->train that this process's workers use (worker i runs on rank
	 * i % nranks); until then the rows may be pending (rowptr NULL),
	 * but n_rows, n_cols, part and owner must be final.  A failure is
	 * fed into the run: every server and worker of this process fails
	 * with it, so every rank stops with this root cause (an MPI rank
	 * that hosts no node returns it alone).
	 */
	int (*load)(void *arg, uint32_t rank, uint32_t nranks,
		    struct parsa_err *err);
	void *load_arg;
};

void train_opts_default(struct train_opts *o);

struct train_result {
	int is_root;                /* this process has the results */
	int rank, nranks;
	double *w;                  /* n_cols final weights by compact id */
	struct train_pass last;     /* the last pass */
	struct train_traffic *per_worker; /* k: totals over all passes */
	struct ps_link_stats link;  /* emulated link (this process) */
	uint64_t nnz;               /* non-zeros of all workers' rows */
	uint32_t *parsed;           /* nranks: rows each process parsed
				       (train_data.n_parsed; 0 for a rank
				       without workers) */
	const char *transport;      /* "threads" or "mpi" (static) */
};

void train_result_release(struct train_result *r);

/*
 * Train.  0 or the first error (EINVAL for bad options or a problem that
 * does not fit, ENOMEM, EMPI for transport failures).
 */
int train_run(const struct train_problem *pb, const struct train_opts *o,
	      struct train_result *res, struct parsa_err *err);

/*
 * The key remapping alone (exposed for tests): key_of[j] for every
 * compact feature j, col_of_key (inverse), starts[k] (prefix sums of
 * |V_i|).  All arrays caller-allocated.
 */
void train_keys_build(const uint32_t *owner, uint32_t n_cols, uint32_t k,
		      uint64_t *key_of, uint32_t *col_of_key,
		      uint64_t *starts);

#endif /* TRAIN_RUN_H */
