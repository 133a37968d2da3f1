/*
 * ps_internal: structures shared by the parameter server's modules
 * (ps_cluster.c, ps_client.c, ps_worker.c, ps_sched.c, ps_server.c,
 * ps_run.c).  Not part of the public API: include ps.h instead.
 *
 * Every node is an endpoint (transport + identity + counters).  A client
 * (worker or scheduler) adds its request ring; the scheduler adds the
 * scheduler state.  Each node is driven by exactly one thread, so none of
 * these structures is locked.
 */
#ifndef PARSA_PS_INTERNAL_H
#define PARSA_PS_INTERNAL_H

#include "base_time.h"
#include "ps.h"
#include "ps_msg.h"

struct ps_cluster {
	struct ps_layout layout;
	uint32_t num_tables;
	struct ps_table_spec tables[PS_MAX_TABLES];
	struct ps_ranges ranges; /* layout.num_servers ranges */
	int tau;
	int consistency;         /* enum ps_consistency_model */
	int staleness;           /* SSP/ESSP: S */
	double timeout_s;        /* > 0 */
	double server_delay_s;
};

/* Identity and traffic of one node.  Invariant: tp hosts id. */
struct ps_endpoint {
	struct ps_transport *tp;       /* borrowed */
	const struct ps_cluster *cl;   /* borrowed */
	uint32_t id, index, machine;
	enum ps_role role;
	struct ps_counters cnt;
	char name[48];                 /* "worker 2 (node 5)" */
};

/* A received, validated message: m's sections point into buf (owned). */
struct ps_rx {
	void *buf;
	size_t len;
	struct ps_msg m;
	struct ps_rx *next; /* for queues */
};

enum ps_req_kind { PS_REQ_PUSH, PS_REQ_PULL, PS_REQ_HOOK };

/*
 * One outstanding request.  Invariant: parts_left == number of bits set in
 * pending; done == (parts_left == 0).
 */
struct ps_req {
	uint64_t ts;
	int64_t iter;            /* iteration that issued it */
	enum ps_req_kind kind;
	uint32_t parts_left;     /* replies still expected */
	uint64_t *pending;       /* bitmap of servers still owing a reply */
	int done;
	unsigned char *out;      /* pull: destination (borrowed) */
	uint64_t nkeys;          /* pull: keys in the request */
	uint32_t width;          /* pull: value bytes */
	void *hook;              /* hook: the waiting call's context, or NULL */
	int64_t min_clock;       /* SSP/ESSP: snapshot required, -1 none */
	int64_t use_clock;       /* SSP/ESSP pull: clock it is read for */
};

struct ps_progress {
	struct ps_progress *next;
	uint32_t worker;
	size_t len;
	unsigned char data[];
};

/* Scheduler-only state. */
struct ps_sched_state {
	uint64_t next_task;     /* ids handed out: 0 .. next_task-1 */
	uint64_t tasks_open;
	struct parsa_err task_err; /* first failed task */
	uint64_t barrier_gen;   /* generation being collected */
	uint32_t barrier_count; /* workers in it so far */
	struct ps_progress *prog_head, *prog_tail;
	uint32_t acks;          /* SHUTDOWN_ACKs received */
	uint32_t worker_acks;   /* ... of them from workers */
	int shut;               /* shutdown completed */
	struct ps_node_stats *stats; /* one per node */
};

struct ps_node {
	struct ps_endpoint ep;
	/* request ring: ring[(head + i) % cap] has ts first_ts + i */
	struct ps_req *ring;
	size_t cap, head, count;
	uint64_t first_ts, next_ts;
	uint32_t pend_words;    /* 64-bit words per pending bitmap */
	int tau;
	int64_t iter;           /* current iteration, -1 before the first */
	uint64_t requests, iters, stale_hist[PS_STALE_BUCKETS], stale_max;
	uint64_t tau_wait_ns, wait_ns;
	/* consistency models (workers under SSP/ESSP) */
	int64_t clock;          /* clocks completed */
	int64_t *eclock;        /* ESSP: per server, snapshot of its last
				   complete eager round (num_servers) */
	ps_eager_fn eager_fn;
	void *eager_arg;
	uint64_t read_hist[PS_STALE_BUCKETS], read_stale_max;
	uint64_t eager_msgs[2], eager_bytes[2], eager_keys, clock_wait_ns;
	/* worker */
	struct ps_rx *tasks_head, *tasks_tail; /* TASKs not yet run */
	uint64_t barrier_gen;   /* barriers entered */
	uint64_t released_gen;  /* barriers released */
	int shutdown_seen;
	/* scheduler */
	struct ps_sched_state *sched;
};

struct ps_reply {
	unsigned char *buf;
	size_t len, cap;
};

struct hook_slot {
	ps_hook_fn fn; /* NULL: not registered */
	void *arg;
};

/* ESSP state of one eager table on a server, per store entry. */
struct ps_eager_tbl {
	uint64_t *sub;      /* cap * sub_words: bit w = worker w pulled it */
	uint8_t *dirty;     /* cap: changed since the last eager round */
	size_t cap;
	size_t *list;       /* entries with dirty set, nlist of them */
	size_t nlist, list_cap;
};

/* Invariant: store[t] exists for every t < cl->num_tables. */
struct ps_server {
	struct ps_endpoint ep;
	struct ps_store *store[PS_MAX_TABLES];
	uint64_t lo, hi;  /* own keys [lo, hi] unless empty */
	int empty;
	struct hook_slot hooks[PS_MAX_HOOKS];
	int shutdown;     /* SHUTDOWN answered */
	/* consistency models (SSP/ESSP; ps_consist.c) */
	int64_t *done;    /* per worker: clocks completed (its CLOCKs) */
	int64_t clock;    /* min of done: every update of clocks < it is in */
	struct ps_rx *park_head, *park_tail; /* requests for a later clock */
	ps_clock_fn on_clock;
	void *on_clock_arg;
	uint32_t sub_words; /* 64-bit words per entry of ps_eager_tbl.sub */
	struct ps_eager_tbl *eager[PS_MAX_TABLES]; /* NULL: not eager */
	uint64_t parked, eager_msgs[2], eager_bytes[2], eager_keys;
};

/* 1 if cl runs a clocked model (SSP or ESSP). */
static inline int ps_clocked(const struct ps_cluster *cl)
{
	return cl->consistency == PS_CONS_SSP ||
	       cl->consistency == PS_CONS_ESSP;
}

/* ---- ps_cluster.c: endpoints ---- */
void ps_ep_init(struct ps_endpoint *ep, const struct ps_cluster *cl,
		struct ps_transport *tp, uint32_t node);
/* Encode and send; counts the traffic.  keys/vals/blob as ps_msg_encode. */
int ps_ep_send(struct ps_endpoint *ep, uint32_t dst, struct ps_msg *hdr,
	       const uint64_t *keys, const void *vals, const void *blob,
	       struct parsa_err *err);
/* Send an already encoded buffer (stolen); counts the traffic. */
int ps_ep_send_buf(struct ps_endpoint *ep, uint32_t dst, void *buf,
		   size_t len, struct parsa_err *err);
/*
 * Receive and validate one message (rx->buf NULL on timeout).  A malformed
 * or misaddressed message fails the transport (fatal for everyone).
 */
int ps_ep_recv(struct ps_endpoint *ep, double timeout_s, struct ps_rx *rx,
	       struct parsa_err *err);
void ps_rx_release(struct ps_rx *rx);
/* Record err as this node's failure in the transport; returns err->code. */
int ps_ep_fail(struct ps_endpoint *ep, int code, struct parsa_err *err);
/* Fail the cluster: a protocol violation seen by ep. */
int ps_ep_protocol(struct ps_endpoint *ep, const struct ps_rx *rx,
		   const char *what, struct parsa_err *err);
/* Common part of the stats. */
void ps_ep_stats(const struct ps_endpoint *ep, struct ps_node_stats *st);
/* Reply to rx with an error message (blob). */
int ps_ep_reply_error(struct ps_endpoint *ep, const struct ps_rx *rx,
		      uint16_t type, const struct parsa_err *why,
		      struct parsa_err *err);
/* Monotonic clock in nanoseconds (base_now_ns). */
static inline uint64_t ps_now_ns(void)
{
	return base_now_ns();
}

/* ---- ps_client.c ---- */
/* Handle one received message; non-reply messages go to ps_client_other. */
int ps_client_pump(struct ps_node *c, double timeout_s, int *got,
		   struct parsa_err *err);
/* Wait (pumping) until pred(c, arg) holds; requests blamed on timeout. */
int ps_client_wait(struct ps_node *c, int (*pred)(struct ps_node *, uint64_t),
		   uint64_t arg, int timed, struct parsa_err *err);

/* ---- ps_consist.c: the server side of SSP/ESSP ---- */
int ps_consist_init(struct ps_server *s, struct parsa_err *err);
void ps_consist_free(struct ps_server *s);
/* A PULL or HOOK whose required snapshot is ahead: keep it (rx stolen,
 * *parked = 1); else *parked = 0 and rx is untouched. */
int ps_consist_park(struct ps_server *s, struct ps_rx *rx, int *parked,
		    struct parsa_err *err);
int ps_consist_on_clock_msg(struct ps_server *s, const struct ps_rx *rx,
			    struct parsa_err *err);
/* ESSP: a pull of table by worker node src was answered: subscribe. */
int ps_consist_subscribe(struct ps_server *s, const struct ps_msg *m,
			 struct parsa_err *err);
/* ESSP: entry of table changed. */
int ps_consist_dirty(struct ps_server *s, uint32_t table,
		     const unsigned char *val, struct parsa_err *err);
/* ps_server.c: answer a request (also a parked one) at the current clock */
int ps_server_answer(struct ps_server *s, const struct ps_rx *rx,
		     struct parsa_err *err);

/* ---- ps_worker.c / ps_sched.c: non-reply messages of a client ---- */
int ps_worker_other(struct ps_node *w, struct ps_rx *rx,
		    struct parsa_err *err);
int ps_sched_other(struct ps_node *s, struct ps_rx *rx,
		   struct parsa_err *err);
int ps_sched_state_init(struct ps_node *s, struct parsa_err *err);
void ps_sched_state_free(struct ps_node *s);

#endif /* PARSA_PS_INTERNAL_H */
