/*
 * ps_transport: how parameter-server nodes exchange messages.
 *
 * A cluster has one scheduler, S servers and W workers, numbered as nodes
 * (ps_layout): node 0 is the scheduler, nodes 1..S the servers, S+1..S+W the
 * workers.  Nodes live on machines: server i and worker i on machine
 * i % M, the scheduler on machine 0.  A transport hosts some of the nodes
 * (all of them in-process; those of its rank under MPI) and gives each
 * hosted node a mailbox: send() delivers an encoded message (ps_msg) to any
 * node's mailbox, recv() takes the next message from a hosted node's
 * mailbox.  Nothing above this interface knows which transport it runs on.
 *
 * Two implementations: ps_transport_threads_create (threads + queues, one
 * process, M virtual machines) and ps_transport_mpi_create
 * (ps_transport_mpi.h; one rank per machine, M = number of ranks).
 *
 * Failure: ps_transport_fail records the first error (first wins) and wakes
 * every blocked recv(); from then on send/recv return that error, so all
 * nodes stop with the root cause instead of hanging.  The MPI transport also
 * forwards the failure to the other ranks.
 *
 * Thread-safety: send, recv (one thread per hosted node), fail and failed
 * may be called from any thread concurrently.  close and destroy are called
 * once, after every node thread has stopped.
 */
#ifndef PARSA_PS_TRANSPORT_H
#define PARSA_PS_TRANSPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base_time.h"
#include "parsa_err.h"

enum ps_role { PS_ROLE_SCHEDULER, PS_ROLE_SERVER, PS_ROLE_WORKER };

/* Where every node is.  Plain value; copy freely. */
struct ps_layout {
	uint32_t num_servers;  /* S >= 1 */
	uint32_t num_workers;  /* W >= 1 */
	uint32_t num_machines; /* M >= 1 (MPI: number of ranks) */
};

uint32_t ps_layout_nodes(const struct ps_layout *l); /* 1 + S + W */
uint32_t ps_layout_server_node(const struct ps_layout *l, uint32_t i);
uint32_t ps_layout_worker_node(const struct ps_layout *l, uint32_t i);
/* Role of node (< nodes) and its index within the role. */
enum ps_role ps_layout_role(const struct ps_layout *l, uint32_t node,
			    uint32_t *index);
/* Machine of node: scheduler 0, server/worker i → i % M. */
uint32_t ps_layout_machine(const struct ps_layout *l, uint32_t node);
/* "scheduler", "server 3", "worker 0" into buf; returns buf. */
const char *ps_layout_name(const struct ps_layout *l, uint32_t node,
			   char *buf, size_t size);
/* 0 or PARSA_EINVAL when a count is 0 or the node ids do not fit. */
int ps_layout_check(const struct ps_layout *l, struct parsa_err *err);

struct ps_transport;

struct ps_transport_ops {
	const char *name; /* "threads", "mpi" */
	/* Deliver buf (steals it, also on failure) to node dst. */
	int (*send)(struct ps_transport *tp, uint32_t dst, void *buf,
		    size_t len, struct parsa_err *err);
	/* Next message for hosted node; *buf = NULL on timeout. */
	int (*recv)(struct ps_transport *tp, uint32_t node, double timeout_s,
		    void **buf, size_t *len, struct parsa_err *err);
	/* Wake every blocked recv after a failure was recorded. */
	void (*wake)(struct ps_transport *tp);
	/* Collective clean finish (flush, agree with the other ranks). */
	int (*close)(struct ps_transport *tp, double timeout_s,
		     struct parsa_err *err);
	void (*destroy)(struct ps_transport *tp);
};

/*
 * Common part, embedded first in each implementation.
 * Invariants: rank < nranks; layout.num_machines == nranks for MPI;
 * fail_code != 0 once failed, never reset.
 */
struct ps_transport {
	const struct ps_transport_ops *ops;
	struct ps_layout layout;
	uint32_t rank, nranks;   /* this process; threads: 0 of 1 */
	int all_local;           /* threads: every node hosted here */
	pthread_mutex_t fail_mu; /* guards fail_code, fail_msg */
	int fail_code;
	char fail_msg[PARSA_ERR_MSG];
};

/* Threads transport hosting every node of layout.  NULL on error. */
struct ps_transport *ps_transport_threads_create(const struct ps_layout *l,
						 struct parsa_err *err);

/* Is node hosted by this transport (this process / rank)? */
int ps_transport_is_local(const struct ps_transport *tp, uint32_t node);
/* Rank hosting node (threads: 0). */
uint32_t ps_transport_rank_of(const struct ps_transport *tp, uint32_t node);

/*
 * Send / receive (see ps_transport_ops).  recv: timeout_s < 0 waits forever;
 * returns 0 with *buf = NULL on timeout; the failure's code and message once
 * the transport failed.  send steals buf.
 */
int ps_transport_send(struct ps_transport *tp, uint32_t dst, void *buf,
		      size_t len, struct parsa_err *err);
int ps_transport_recv(struct ps_transport *tp, uint32_t node,
		      double timeout_s, void **buf, size_t *len,
		      struct parsa_err *err);

/* Record a failure (first wins) and wake all receivers. */
void ps_transport_fail(struct ps_transport *tp, int code, const char *fmt,
		       ...) PARSA_PRINTF(3, 4);
/* 0 if not failed; else the failure code, copied into err. */
int ps_transport_failed(struct ps_transport *tp, struct parsa_err *err);

int ps_transport_close(struct ps_transport *tp, double timeout_s,
		       struct parsa_err *err);
void ps_transport_destroy(struct ps_transport *tp); /* NULL: no-op */

/* Helpers for implementations. */
int ps_transport_base_init(struct ps_transport *tp,
			   const struct ps_transport_ops *ops,
			   const struct ps_layout *l, struct parsa_err *err);
void ps_transport_base_release(struct ps_transport *tp);

/* Monotonic clock in seconds: base_now under the server's name. */
static inline double ps_clock_now(void)
{
	return base_now();
}

#endif /* PARSA_PS_TRANSPORT_H */
