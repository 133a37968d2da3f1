/*
 * ps: a small parameter server (thesis ch. 3), independent of Parsa.
 *
 * Roles: one scheduler, S servers, W workers (ps_transport.h numbers them
 * as nodes and places them on machines).  Values live in tables: table t
 * holds, for any 64-bit key, a value of tables[t].value_bytes bytes (all zero
 * until written).  Server i owns one contiguous key range (ps_ranges.h).
 *
 * Clients (workers, and the scheduler) issue asynchronous requests, each
 * returning a timestamp (1, 2, ... per client):
 *   ps_push  keys + values; each owning server merges them (OR for bit
 *            masks of any width, float/double ADD, OVERWRITE)
 *   ps_pull  keys → values, written into the caller's buffer on completion
 *   ps_wait  block until a request completed
 *   ps_call_hook  run a registered server-side function on every server
 * Key lists are sorted and unique; a request is sliced by key range, sent to
 * the owning servers only, and the answers reassembled in key order.
 *
 * Bounded delay: a worker groups its requests into iterations
 * (ps_iter_begin).  Iteration t may start only when the worker's requests of
 * iterations <= t - tau - 1 are complete (tau 0: sequential; -1: never wait).
 * Each start records how many earlier iterations were still incomplete (the
 * staleness histogram) and the time spent waiting for the window.
 *
 * Consistency models (ps_config.consistency; ps_consistency_parse):
 *   tau:T   the bounded delay above (per worker; no clocks).
 *   ssp:S   stale synchronous parallel (Ho et al. 2013; seed 001): every
 *           worker advances a clock (ps_clock) per iteration.  A pull at
 *           clock c returns values that include every worker's updates of
 *           clocks <= c - S - 1: the server parks it until it has every
 *           worker's CLOCK for those clocks.  ssp:0 is bulk synchronous
 *           (bsp).  Updates pushed inside the window may or may not be
 *           included (best effort), the worker's own earlier ones always.
 *   essp:S  eager SSP (seed 001): as ssp:S, and each time a server's clock
 *           advances it pushes, unasked, the values of its eager tables'
 *           keys that changed to every worker that uses them (a worker
 *           uses a key once it pulled it), with the snapshot's clock; a
 *           worker receives them through its eager handler and waits for
 *           them with ps_eager_wait instead of pulling again.
 * Clocks: a worker's clock c is the number of clocks it completed (0 at
 * the start); updates pushed during clock c belong to clock c.  A server's
 * clock is the least clock count over all workers, i.e. it holds every
 * update of clocks < its clock; values it answers with are a "snapshot"
 * of that clock.  The staleness of a read at clock c of a snapshot sc is
 * c - sc: 0 under BSP, at most S under (E)SSP (every read is checked: a
 * violation fails the run).  Reads are counted per key: pull replies
 * (against the clock the pull was made for) and eager values (against the
 * receiver's clock when they are delivered).
 *
 * Scheduler: starts tasks on workers (opaque payload → the worker's task
 * callback), collects progress records, releases worker barriers and shuts
 * the cluster down cleanly, gathering every node's statistics.
 *
 * Running: ps_run_threads (every node a thread of this process) or
 * ps_run_mpi (ps_transport_mpi.h) run the same struct ps_app; ps_run does
 * it on any transport.  Lower level: create a ps_cluster, a transport and
 * the nodes yourself (tests do, to inject faults).
 *
 * Errors: every call returns 0 or a PARSA_E* code with a message in err.
 * A request not answered within the timeout fails with PARSA_EMPI
 * "no reply from server i (node n) within T s"; a malformed message fails
 * the receiving node with PARSA_EPARSE and stops the whole cluster.
 *
 * Thread-safety: a ps_node or ps_server is used by one thread at a time
 * (the one that runs it); different nodes run concurrently.  A ps_cluster is
 * read-only after creation and shared by all nodes of a process.
 */
#ifndef PARSA_PS_H
#define PARSA_PS_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"
#include "ps_ranges.h"
#include "ps_store.h"
#include "ps_transport.h"

#define PS_MAX_TABLES 16
#define PS_MAX_HOOKS 16
#define PS_STALE_BUCKETS 32   /* staleness histogram: last bucket = ">=" */
#define PS_ALL (-1)           /* every worker / every server */
#define PS_DEFAULT_TIMEOUT 60.0

struct ps_table_spec {
	uint32_t value_bytes; /* bytes per key: ceil(k/8) for a k-bit mask */
	int op;               /* enum ps_op applied by ps_push */
	int eager;            /* ESSP: push this table's changed values */
};

enum ps_consistency_model { PS_CONS_TAU = 0, PS_CONS_SSP, PS_CONS_ESSP };

/* A consistency model and its bound (tau for TAU, S for SSP/ESSP). */
struct ps_consistency {
	int model;  /* enum ps_consistency_model */
	int bound;  /* TAU: tau (-1 = infinite); SSP/ESSP: S >= 0 */
};

/*
 * Parse "bsp", "ssp:S", "essp:S", "tau:T" (T may be "inf") into *c.
 * 0 or PARSA_EINVAL naming the bad part.
 */
int ps_consistency_parse(const char *s, struct ps_consistency *c,
			 struct parsa_err *err);
/* "bsp", "ssp:3", "essp:3", "tau:1", "tau:inf" into buf (>= 24 bytes). */
const char *ps_consistency_format(const struct ps_consistency *c, char *buf,
				  size_t len);

struct ps_config {
	uint32_t num_servers;  /* S; 0 = one per machine */
	uint32_t num_workers;  /* W; 0 = one per machine */
	uint32_t num_machines; /* threads only: 0 = max(S, W); MPI: ranks */
	uint32_t num_tables;
	struct ps_table_spec tables[PS_MAX_TABLES];
	const uint64_t *range_starts; /* NULL = uniform split; else S starts
					 (see ps_ranges_init_starts);
					 borrowed, copied by the cluster */
	int tau;               /* initial bounded delay of every worker */
	int consistency;       /* enum ps_consistency_model; TAU by default */
	int staleness;         /* SSP/ESSP: S >= 0 */
	double timeout_s;      /* reply / liveness timeout; 0 = 60 s */
	double server_delay_s; /* testing: servers sleep this long before
				  answering each push or pull */
};

/* Per-node traffic, split by whether the peer is on the same machine. */
enum { PS_LOCAL = 0, PS_REMOTE = 1 };
struct ps_counters {
	uint64_t msgs_sent[2], bytes_sent[2]; /* [PS_LOCAL], [PS_REMOTE] */
	uint64_t msgs_recv[2], bytes_recv[2]; /* bytes include headers */
};

/* Statistics of one node (all integers: sent as-is in SHUTDOWN_ACK). */
struct ps_node_stats {
	uint64_t valid;    /* 0: unknown on this process */
	uint64_t node, role, index, machine;
	struct ps_counters c;
	uint64_t requests; /* push/pull/hook requests issued */
	uint64_t iters;    /* ps_iter_begin calls */
	uint64_t stale_hist[PS_STALE_BUCKETS]; /* [s]: iterations that started
						  with s earlier ones
						  incomplete */
	uint64_t stale_max;
	uint64_t tau_wait_ns; /* blocked in ps_iter_begin */
	uint64_t wait_ns;     /* blocked in ps_wait / ps_wait_all */
	/* consistency models (SSP/ESSP) */
	uint64_t clock;       /* worker: clocks completed; server: its clock */
	uint64_t read_hist[PS_STALE_BUCKETS]; /* worker: keys read with
						 staleness s (last: >=) */
	uint64_t read_stale_max;
	uint64_t eager_msgs[2], eager_bytes[2]; /* worker: EAGER received;
						   server: sent (wire bytes,
						   [PS_LOCAL]/[PS_REMOTE]) */
	uint64_t eager_keys;  /* keys in them */
	uint64_t parked;      /* server: requests it had to park */
	uint64_t clock_wait_ns; /* worker: blocked in ps_eager_wait */
};

/* Result of a run: stats of every node (all valid on the scheduler's
 * process; only the hosted nodes elsewhere).  Owned: ps_result_release. */
struct ps_result {
	uint32_t num_nodes;
	struct ps_node_stats *nodes; /* indexed by node id */
};
void ps_result_release(struct ps_result *r);
/* Sum of the counters of every valid node into *sum. */
void ps_result_total(const struct ps_result *r, struct ps_counters *sum);

struct ps_cluster; /* shared, read-only configuration of one process */
struct ps_node;    /* a worker or the scheduler */
struct ps_server;  /* a server */
struct ps_reply;   /* response of a server-side hook, being built */

/* ---- cluster and nodes (low level; ps_run does all of this) ---------- */

/*
 * Validate cfg against layout l (S, W, M as resolved by the caller) and
 * build the shared configuration.  NULL on error (EINVAL names the field).
 */
struct ps_cluster *ps_cluster_create(const struct ps_config *cfg,
				     const struct ps_layout *l,
				     struct parsa_err *err);
void ps_cluster_destroy(struct ps_cluster *cl);
const struct ps_layout *ps_cluster_layout(const struct ps_cluster *cl);
const struct ps_ranges *ps_cluster_ranges(const struct ps_cluster *cl);

/*
 * A client node (scheduler: node 0, or a worker node id) on transport tp,
 * which must host it.  Borrows cl and tp: both must outlive the node.
 */
struct ps_node *ps_node_create(const struct ps_cluster *cl,
			       struct ps_transport *tp, uint32_t node,
			       struct parsa_err *err);
void ps_node_destroy(struct ps_node *n);

enum ps_role ps_node_role(const struct ps_node *n);
uint32_t ps_node_index(const struct ps_node *n); /* worker index; sched 0 */
uint32_t ps_node_id(const struct ps_node *n);
uint32_t ps_num_workers(const struct ps_node *n);
uint32_t ps_num_servers(const struct ps_node *n);
void ps_node_stats(const struct ps_node *n, struct ps_node_stats *st);

/* ---- client requests (workers and the scheduler) --------------------- */

/*
 * Push values for keys into table with the table's merge op (ps_push) or
 * op (ps_push_op).  keys[0..n) strictly increasing; vals holds n values of
 * the table's width, key-major.  Both are copied before returning.
 * *ts = the request's timestamp (n == 0: a request already complete).
 * EINVAL: bad table, unsorted keys, op not valid for the width.
 */
int ps_push(struct ps_node *c, uint32_t table, const uint64_t *keys,
	    size_t n, const void *vals, uint64_t *ts, struct parsa_err *err);
int ps_push_op(struct ps_node *c, uint32_t table, int op,
	       const uint64_t *keys, size_t n, const void *vals, uint64_t *ts,
	       struct parsa_err *err);

/*
 * Pull the values of keys[0..n) (strictly increasing) into out (n values of
 * the table's width, key-major; keys never written read as zeros).  keys
 * are copied; out is borrowed and must stay valid until ps_wait(*ts) (or
 * ps_wait_all) returns.  Its contents are undefined before that.
 */
int ps_pull(struct ps_node *c, uint32_t table, const uint64_t *keys,
	    size_t n, void *out, uint64_t *ts, struct parsa_err *err);

/* Block until request ts completed (earlier ones may still be open). */
int ps_wait(struct ps_node *c, uint64_t ts, struct parsa_err *err);
/* Block until every request of this client completed. */
int ps_wait_all(struct ps_node *c, struct parsa_err *err);

/*
 * Start the next iteration (numbered 0, 1, ...) in *iter (may be NULL):
 * blocks until every request issued in iterations <= t - tau - 1 has
 * completed, then records the staleness.  Requests issued afterwards belong
 * to iteration t.
 */
int ps_iter_begin(struct ps_node *c, int64_t *iter, struct parsa_err *err);
void ps_set_tau(struct ps_node *c, int tau); /* -1 = infinite */

/* ---- consistency models: clocks (SSP, ESSP) ------------------------ */

/*
 * A worker ends its current clock: every server gets CLOCK (after this
 * worker's earlier messages to it, so with every update of the clock).
 * ESTATE under the tau model or on the scheduler.
 */
int ps_clock(struct ps_node *w, struct parsa_err *err);
/* Clocks this worker completed (its current clock). */
int64_t ps_node_clock(const struct ps_node *w);
/* The model's bound: S under SSP/ESSP, tau under TAU. */
int ps_node_staleness(const struct ps_node *w);

/*
 * ps_pull for use at clock use (>= the current clock c, and use - S <= c:
 * a worker may ask now for what it will need at a later clock): the reply
 * includes every update of clocks < use - S.  Under TAU, ps_pull.
 */
int ps_pull_for(struct ps_node *c, uint32_t table, const uint64_t *keys,
		size_t n, void *out, int64_t use, uint64_t *ts,
		struct parsa_err *err);

/*
 * ESSP: values pushed by a server (keys sorted; vals n values of the
 * table's width; borrowed for the call) with the snapshot's clock.
 * Called in the worker's thread inside PS calls.  Non-zero fails the
 * worker with it.
 */
typedef int (*ps_eager_fn)(void *arg, uint32_t table, const uint64_t *keys,
			   const void *vals, size_t n, int64_t clock,
			   struct parsa_err *err);
void ps_set_eager_handler(struct ps_node *w, ps_eager_fn fn, void *arg);

/*
 * ESSP: take in every eager push that already arrived (through the
 * handler), then block until every server's pushes up to a snapshot of at
 * least min_clock arrived.  min_clock <= the current clock (EINVAL
 * otherwise: it could never hold).
 */
int ps_eager_wait(struct ps_node *w, int64_t min_clock,
		  struct parsa_err *err);

/*
 * Called once per answering server, in the caller's thread, while
 * ps_call_hook waits.  resp is borrowed for the call.  A non-zero return
 * makes ps_call_hook fail with it (after all replies arrived).
 */
typedef int (*ps_hook_reply_fn)(void *arg, uint32_t server, const void *resp,
				size_t len, struct parsa_err *err);

/*
 * Run hook `hook` on server `server` (or PS_ALL servers) with request
 * req[0..len) and wait for the responses.  A server without that hook, or
 * whose hook fails, makes the call fail with the server's message.
 * Under SSP/ESSP a worker's hook runs on a snapshot that holds every
 * update of the clocks the worker completed (the server parks it until
 * then); the scheduler's hooks run at once.
 */
int ps_call_hook(struct ps_node *c, int server, uint32_t hook,
		 const void *req, size_t len, ps_hook_reply_fn on_reply,
		 void *arg, struct parsa_err *err);

/* ---- worker ---------------------------------------------------------- */

/* Task callback: payload is borrowed for the call.  Non-zero = failed. */
typedef int (*ps_task_fn)(struct ps_node *w, uint64_t task_id,
			  const void *payload, size_t len, void *arg,
			  struct parsa_err *err);

/* Send a progress record (opaque, copied) to the scheduler. */
int ps_report_progress(struct ps_node *w, const void *rec, size_t len,
		       struct parsa_err *err);

/*
 * Wait until every worker called ps_barrier (the n-th call of each worker
 * forms barrier n).  The scheduler releases barriers while it is inside a
 * ps_sched_* call.
 */
int ps_barrier(struct ps_node *w, struct parsa_err *err);

/*
 * Serve tasks until the scheduler shuts the cluster down: run task() for
 * each TASK in arrival order, report TASK_DONE (with the error message if it
 * failed), then on SHUTDOWN wait for all own requests and answer with this
 * node's statistics.  task may be NULL (tasks then fail).
 */
int ps_worker_serve(struct ps_node *w, ps_task_fn task, void *arg,
		    struct parsa_err *err);

/* ---- scheduler ------------------------------------------------------- */

/*
 * Progress callback: worker index and its record (borrowed for the call).
 * Called in the scheduler's thread from ps_sched_wait_tasks / _poll.
 */
typedef void (*ps_progress_fn)(void *arg, uint32_t worker, const void *rec,
			       size_t len);

/*
 * Start a task on worker `worker` (or PS_ALL workers) with payload (copied).
 * *task_id (may be NULL) = the id of the first task; with PS_ALL, worker w
 * gets id *task_id + w.
 */
int ps_sched_start_task(struct ps_node *s, int worker, const void *payload,
			size_t len, uint64_t *task_id, struct parsa_err *err);

/*
 * Wait until every started task finished, passing progress records to fn
 * (may be NULL).  Fails as soon as a task fails, with its message (the
 * other tasks may be blocked on it: returning the error from sched_main
 * stops the cluster).  No timeout: a dead peer is detected by the
 * transport.
 */
int ps_sched_wait_tasks(struct ps_node *s, ps_progress_fn fn, void *arg,
			struct parsa_err *err);

/* Handle messages (progress, barriers, task completions) for seconds. */
int ps_sched_poll(struct ps_node *s, double seconds, ps_progress_fn fn,
		  void *arg, struct parsa_err *err);

/*
 * Clean shutdown: wait for open tasks, SHUTDOWN every worker and collect
 * their statistics, then the same for every server.  Afterwards
 * ps_sched_stats gives every node's statistics.
 */
int ps_sched_shutdown(struct ps_node *s, struct parsa_err *err);

/* Stats of node (valid after ps_sched_shutdown); NULL if out of range. */
const struct ps_node_stats *ps_sched_stats(const struct ps_node *s,
					   uint32_t node);

/* ---- server ---------------------------------------------------------- */

/*
 * Server index i on tp (which must host it).  Borrows cl and tp.
 * Hooks are registered before ps_server_serve.
 */
struct ps_server *ps_server_create(const struct ps_cluster *cl,
				   struct ps_transport *tp, uint32_t index,
				   struct parsa_err *err);
void ps_server_destroy(struct ps_server *s);

/*
 * Server-side function: runs on the server's thread with exclusive access
 * to its tables; req borrowed; append the response with ps_reply_append.
 */
typedef int (*ps_hook_fn)(struct ps_server *s, const void *req, size_t len,
			  struct ps_reply *reply, void *arg,
			  struct parsa_err *err);

int ps_server_register_hook(struct ps_server *s, uint32_t hook,
			    ps_hook_fn fn, void *arg, struct parsa_err *err);

/*
 * SSP/ESSP: fn(s, clock) runs on the server's thread each time every
 * worker completed clock `clock` (in order 0, 1, ...), before any request
 * parked for it is answered and before the eager pushes of the new
 * snapshot.  Like a hook it may read and write the server's tables.
 */
typedef int (*ps_clock_fn)(struct ps_server *s, int64_t clock, void *arg,
			   struct parsa_err *err);
void ps_server_on_clock(struct ps_server *s, ps_clock_fn fn, void *arg);

/*
 * ESSP: key's value in table (eager) was changed in place (through
 * ps_server_value / ps_server_table): push it with the next snapshot.
 * Pushes mark what they merge by themselves.  No-op otherwise.
 */
int ps_server_mark_updated(struct ps_server *s, uint32_t table, uint64_t key,
			   struct parsa_err *err);
int ps_reply_append(struct ps_reply *r, const void *data, size_t len,
		    struct parsa_err *err);

uint32_t ps_server_index(const struct ps_server *s);
uint32_t ps_server_num_servers(const struct ps_server *s);
/* Own key range [*lo, *hi]; *empty if it owns no key. */
void ps_server_range(const struct ps_server *s, uint64_t *lo, uint64_t *hi,
		     int *empty);
/*
 * Stored entries of table (insertion order): keys[i] has value
 * values + i * width, writable in place.  Borrowed until the next push or
 * ps_server_value(create=1).  EINVAL for a bad table.
 */
int ps_server_table(struct ps_server *s, uint32_t table,
		    const uint64_t **keys, unsigned char **values, size_t *n,
		    uint32_t *width, struct parsa_err *err);
/*
 * Take table's entries out of the server (ps_store_take): *keys, *values
 * and *n as ps_server_table, but the caller's to free(); the table is left
 * empty.  For a server function's last use of a table.  EINVAL for a bad
 * table, ESTATE for an eager (ESSP) one.
 */
int ps_server_table_take(struct ps_server *s, uint32_t table,
			 uint64_t **keys, unsigned char **values, size_t *n,
			 uint32_t *width, struct parsa_err *err);
/* Value of key (inserted zeroed if create; else *val = NULL if absent). */
int ps_server_value(struct ps_server *s, uint32_t table, uint64_t key,
		    int create, unsigned char **val, struct parsa_err *err);

/*
 * Answer requests until SHUTDOWN (answered with this server's statistics).
 * Fails on a malformed or unexpected message (and fails the transport).
 */
int ps_server_serve(struct ps_server *s, struct parsa_err *err);
void ps_server_stats(const struct ps_server *s, struct ps_node_stats *st);

/* ---- running a whole cluster ----------------------------------------- */

struct ps_app {
	/* Each server, on its thread, before serving (may be NULL). */
	int (*server_init)(struct ps_server *s, void *arg,
			   struct parsa_err *err);
	/* Each worker, on its thread, before serving tasks (may be NULL). */
	int (*worker_main)(struct ps_node *w, void *arg,
			   struct parsa_err *err);
	ps_task_fn task; /* task callback (may be NULL) */
	/* The scheduler, in the caller's thread; then shutdown (may be NULL). */
	int (*sched_main)(struct ps_node *s, void *arg,
			  struct parsa_err *err);
	void *arg;       /* shared by every callback on every thread */
};

/*
 * Run the nodes that tp hosts: servers and workers on new threads, the
 * scheduler (if hosted) in the calling thread; then close tp.  On any
 * node's failure the transport is failed, every node stops, and the first
 * error (the root cause, naming the node) is returned.  res (may be NULL)
 * receives the statistics.
 */
int ps_run(struct ps_transport *tp, const struct ps_config *cfg,
	   const struct ps_app *app, struct ps_result *res,
	   struct parsa_err *err);

/* Everything in this process on the threads transport. */
int ps_run_threads(const struct ps_config *cfg, const struct ps_app *app,
		   struct ps_result *res, struct parsa_err *err);

#endif /* PARSA_PS_H */
