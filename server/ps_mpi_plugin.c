/*
 * ps_mpi_plugin: the MPI transport itself, built into the plugin
 * parsa-mpi.so (ps_mpi_plugin.h), which alone links OpenMPI: nodes on MPI
 * ranks, one comm thread per rank that owns all MPI calls (see
 * ps_transport_mpi.h for the contract).
 *
 * Threads and state: node threads call send/recv; sends to another rank go
 * to the outbox (mu/cv).  The comm thread alone touches MPI, the in-flight
 * sends and the liveness clocks.  Control flags (stop, ready, closed) are
 * guarded by mu.  Without mpi.h the file compiles to nothing (a build that
 * links the server sources statically then has no MPI transport).
 */
#include "ps_mpi_plugin.h"

#include <stdlib.h>
#include <string.h>

#if !defined(PS_NO_MPI) && defined(__has_include)
#if __has_include(<mpi.h>)
#define PS_HAVE_MPI 1
#endif
#endif

#ifdef PS_HAVE_MPI


#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "base_time.h"
#include "ps_mailbox.h"
#include "ps_msg.h"

#define TAG 7031
#define IDLE_MIN 20e-6   /* comm thread back-off, seconds */
#define IDLE_MAX 1e-3
#define WAIT_MAX 1e-4    /* back-off cap while a hosted worker waits */
#define RELAX_MIN 2.5e-4 /* relaxed polling (ps_transport_mpi_relax) */
#define ABORT_GRACE 2.0  /* seconds to deliver ABORT to the others */

struct out_msg {
	struct out_msg *next;
	void *buf;
	size_t len;
	int rank;
};

struct inflight {
	MPI_Request req;
	void *buf;
	int rank;
};

struct tp_mpi {
	struct ps_transport base;     /* first: cast from ps_transport */
	uint32_t nodes;
	struct ps_mailbox *box;       /* one per node (hosted ones used) */
	uint32_t nbox_init;
	double timeout_s;
	pthread_t thread;             /* the comm thread */
	int comm_started;
	/* guarded by mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* outbox, stop, ready, closed */
	struct out_msg *out_head, *out_tail;
	int ready;                    /* 1 ok, -1 init failed */
	int stop;                     /* close or destroy asked */
	int closed;                   /* comm thread left its loop */
	int waiting;                  /* workers blocked in recv */
	double relax_max;             /* 0: relaxed polling off */
	atomic_int relaxed;           /* relax_max != 0, read without mu */
	int close_rc;
	char close_msg[PARSA_ERR_MSG];
	struct ps_layout req_layout;  /* as asked by the caller */
	/* comm thread only */
	MPI_Comm comm;
	int owns_init;
	struct inflight *fl;
	size_t nfl, capfl;
	double *last_heard;           /* per rank */
	double last_hb;
	int remote_abort;             /* failure came from another rank */
	int abort_sent;
	double abort_deadline;
	int barrier_started, barrier_done;
	MPI_Request barrier;
};


/* ---- errors ---- */

static int mpi_err(struct tp_mpi *t, int rc, const char *what, int peer)
{
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;

	if (rc == MPI_SUCCESS)
		return 0;
	if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS)
		snprintf(s, sizeof(s), "MPI error %d", rc);
	ps_transport_fail(&t->base, PARSA_EMPI, "%s (peer rank %d): %s", what,
			  peer, s);
	return -1;
}

static int is_failed(struct tp_mpi *t)
{
	return ps_transport_failed(&t->base, NULL) != 0;
}

/* ---- node-side operations ---- */

static int mpi_send(struct ps_transport *tp, uint32_t dst, void *buf,
		    size_t len, struct parsa_err *err)
{
	struct tp_mpi *t = (struct tp_mpi *)tp;
	struct out_msg *o;
	int rc = ps_transport_failed(tp, err);

	if (!rc && (dst >= t->nodes || len > INT_MAX))
		rc = parsa_fail(err, PARSA_EINVAL, "send %zu bytes to node %u",
				len, dst);
	if (!rc && ps_transport_is_local(tp, dst)) {
		if (!ps_mailbox_put(&t->box[dst], buf, len))
			return 0;
		rc = ps_transport_failed(tp, err);
		return rc ? rc : parsa_fail(err, PARSA_ENOMEM, "mailbox");
	}
	o = rc ? NULL : malloc(sizeof(*o));
	if (!o) {
		free(buf);
		return rc ? rc : parsa_fail(err, PARSA_ENOMEM, "outbox");
	}
	o->next = NULL;
	o->buf = buf;
	o->len = len;
	o->rank = (int)ps_transport_rank_of(tp, dst);
	pthread_mutex_lock(&t->mu);
	if (t->out_tail)
		t->out_tail->next = o;
	else
		t->out_head = o;
	t->out_tail = o;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* A worker's blocking recv: counted in t->waiting (comm_round polls
 * briskly meanwhile: the back-off stops at WAIT_MAX instead of IDLE_MAX,
 * so a reply is not left in MPI for up to a millisecond while the worker
 * idles) and the comm thread woken at once, since a message may already
 * wait in MPI while it sleeps. */
static int recv_waiting(struct tp_mpi *t, uint32_t node, double timeout_s,
			void **buf, size_t *len)
{
	int rc = ps_mailbox_get(&t->box[node], 0, buf, len);

	if (rc != 0)
		return rc;
	pthread_mutex_lock(&t->mu);
	t->waiting++;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	rc = ps_mailbox_get(&t->box[node], timeout_s, buf, len);
	pthread_mutex_lock(&t->mu);
	t->waiting--;
	pthread_mutex_unlock(&t->mu);
	return rc;
}

static int mpi_recv(struct ps_transport *tp, uint32_t node, double timeout_s,
		    void **buf, size_t *len, struct parsa_err *err)
{
	struct tp_mpi *t = (struct tp_mpi *)tp;
	uint32_t idx;
	int rc;

	*buf = NULL;
	if (node >= t->nodes || !ps_transport_is_local(tp, node))
		return parsa_fail(err, PARSA_EINVAL, "recv on node %u, not on "
				  "rank %u", node, tp->rank);
	if (timeout_s != 0 &&
	    ps_layout_role(&tp->layout, node, &idx) == PS_ROLE_WORKER)
		rc = recv_waiting(t, node, timeout_s, buf, len);
	else
		rc = ps_mailbox_get(&t->box[node], timeout_s, buf, len);
	if (rc < 0) {
		rc = ps_transport_failed(tp, err);
		return rc ? rc : parsa_fail(err, PARSA_EMPI, "mailbox failed");
	}
	return 0;
}

static void mpi_wake(struct ps_transport *tp)
{
	struct tp_mpi *t = (struct tp_mpi *)tp;
	uint32_t i;

	for (i = 0; i < t->nbox_init; i++)
		ps_mailbox_fail(&t->box[i]);
	pthread_mutex_lock(&t->mu);
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

/* ---- comm thread: sending ---- */

static int post_send(struct tp_mpi *t, void *buf, size_t len, int rank)
{
	struct inflight *f;
	int rc;

	if (t->nfl == t->capfl) {
		size_t cap = t->capfl ? 2 * t->capfl : 64;
		struct inflight *n = realloc(t->fl, cap * sizeof(*n));

		if (!n) {
			free(buf);
			ps_transport_fail(&t->base, PARSA_ENOMEM,
					  "MPI send queue");
			return -1;
		}
		t->fl = n;
		t->capfl = cap;
	}
	f = &t->fl[t->nfl];
	rc = MPI_Isend(buf, (int)len, MPI_BYTE, rank, TAG, t->comm, &f->req);
	if (rc != MPI_SUCCESS) {
		free(buf);
		return mpi_err(t, rc, "MPI_Isend", rank);
	}
	f->buf = buf;
	f->rank = rank;
	t->nfl++;
	return 0;
}

/* Post every queued message; returns how many. */
static int flush_outbox(struct tp_mpi *t)
{
	struct out_msg *o, *next;
	int n = 0;

	pthread_mutex_lock(&t->mu);
	o = t->out_head;
	t->out_head = t->out_tail = NULL;
	pthread_mutex_unlock(&t->mu);
	for (; o; o = next, n++) {
		next = o->next;
		if (is_failed(t) && !t->abort_sent)
			free(o->buf); /* nobody waits for it any more */
		else
			post_send(t, o->buf, o->len, o->rank);
		free(o);
	}
	return n;
}

/* MPI_Test every in-flight send; returns how many completed. */
static int test_sends(struct tp_mpi *t)
{
	size_t i = 0;
	int n = 0, done, rc;

	while (i < t->nfl) {
		rc = MPI_Test(&t->fl[i].req, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			mpi_err(t, rc, "MPI_Test (send)", t->fl[i].rank);
			done = 1; /* give up on it */
		}
		if (!done) {
			i++;
			continue;
		}
		free(t->fl[i].buf);
		t->fl[i] = t->fl[--t->nfl];
		n++;
	}
	return n;
}

static void send_control(struct tp_mpi *t, int rank, uint16_t type,
			 const char *text)
{
	struct ps_msg m = { 0 };
	void *buf;
	size_t len;

	m.type = type;
	m.src = t->base.rank;
	m.dst = PS_NODE_TRANSPORT;
	m.blob_len = text ? (uint32_t)strlen(text) : 0;
	if (ps_msg_encode(&m, NULL, NULL, text, &buf, &len, NULL) == 0)
		post_send(t, buf, len, rank);
}

static void heartbeat(struct tp_mpi *t, double now)
{
	double every = t->timeout_s / 4 < 0.5 ? t->timeout_s / 4 : 0.5;
	uint32_t r;

	if (now - t->last_hb < every)
		return;
	t->last_hb = now;
	for (r = 0; r < t->base.nranks; r++)
		if (r != t->base.rank)
			send_control(t, (int)r, PS_MSG_HEARTBEAT, NULL);
}

/* After a local failure: tell every other rank why, once. */
static void broadcast_abort(struct tp_mpi *t)
{
	char why[PARSA_ERR_MSG];
	uint32_t r;

	t->abort_sent = 1;
	t->abort_deadline = ps_clock_now() + ABORT_GRACE;
	if (t->remote_abort)
		return;
	pthread_mutex_lock(&t->base.fail_mu);
	memcpy(why, t->base.fail_msg, sizeof(why));
	pthread_mutex_unlock(&t->base.fail_mu);
	for (r = 0; r < t->base.nranks; r++)
		if (r != t->base.rank)
			send_control(t, (int)r, PS_MSG_ABORT, why);
}

/* ---- comm thread: receiving ---- */

static void on_control(struct tp_mpi *t, const struct ps_msg *m, int from)
{
	if (m->type != PS_MSG_ABORT)
		return; /* heartbeat: last_heard is already updated */
	if (!is_failed(t))
		t->remote_abort = 1;
	ps_transport_fail(&t->base, PARSA_EMPI, "rank %d failed: %.*s", from,
			  (int)m->blob_len,
			  m->blob ? (const char *)m->blob : "");
}

/* Validate and route one received message (buf stolen). */
static void deliver(struct tp_mpi *t, void *buf, size_t len, int from)
{
	struct parsa_err why = { 0 };
	struct ps_msg m;
	int control;

	if (ps_msg_decode(buf, len, &m, &why)) {
		free(buf);
		ps_transport_fail(&t->base, PARSA_EPARSE, "malformed message "
				  "(%zu bytes) from rank %d: %s", len, from,
				  why.msg);
		return;
	}
	control = m.dst == PS_NODE_TRANSPORT;
	if ((control ? m.src != (uint32_t)from
		     : m.src >= t->nodes || m.dst >= t->nodes ||
		       ps_transport_rank_of(&t->base, m.src) != (uint32_t)from ||
		       !ps_transport_is_local(&t->base, m.dst))) {
		free(buf);
		ps_transport_fail(&t->base, PARSA_EPARSE, "misrouted %s from "
				  "rank %d (node %u to node %u)",
				  ps_msg_type_name(m.type), from, m.src, m.dst);
		return;
	}
	if (control) {
		on_control(t, &m, from);
		free(buf);
		return;
	}
	ps_mailbox_put(&t->box[m.dst], buf, len); /* frees if failed */
}

/* Receive what has arrived (at most a batch); returns how many. */
static int poll_recv(struct tp_mpi *t, double now)
{
	int n = 0, flag, count, rc;
	MPI_Message msg;
	MPI_Status st;
	void *buf;

	while (n < 64) {
		rc = MPI_Improbe(MPI_ANY_SOURCE, TAG, t->comm, &flag, &msg, &st);
		if (rc != MPI_SUCCESS)
			return mpi_err(t, rc, "MPI_Improbe", -1), n;
		if (!flag)
			break;
		MPI_Get_count(&st, MPI_BYTE, &count);
		buf = malloc(count > 0 ? (size_t)count : 1);
		if (!buf) {
			ps_transport_fail(&t->base, PARSA_ENOMEM, "receive "
					  "%d bytes", count);
			return n;
		}
		rc = MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			free(buf);
			return mpi_err(t, rc, "MPI_Mrecv", st.MPI_SOURCE), n;
		}
		t->last_heard[st.MPI_SOURCE] = now;
		n++;
		if (is_failed(t) && t->abort_sent)
			free(buf); /* draining after a failure */
		else
			deliver(t, buf, (size_t)count, st.MPI_SOURCE);
	}
	return n;
}

static void check_liveness(struct tp_mpi *t, double now)
{
	uint32_t r;

	for (r = 0; r < t->base.nranks; r++)
		if (r != t->base.rank &&
		    now - t->last_heard[r] > t->timeout_s) {
			ps_transport_fail(&t->base, PARSA_EMPI, "no message "
					  "from rank %u within %.1f s (the rank "
					  "died or hangs)", r, t->timeout_s);
			return;
		}
}

/* ---- comm thread: main loop ---- */

/* Clean close: after all sends completed, a non-blocking barrier. */
static int step_close(struct tp_mpi *t)
{
	int rc;

	if (!t->barrier_started) {
		if (t->nfl)
			return 0;
		rc = MPI_Ibarrier(t->comm, &t->barrier);
		if (rc != MPI_SUCCESS)
			return mpi_err(t, rc, "MPI_Ibarrier", -1), 0;
		t->barrier_started = 1;
	}
	rc = MPI_Test(&t->barrier, &t->barrier_done, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS)
		return mpi_err(t, rc, "MPI_Test (barrier)", -1), 0;
	return t->barrier_done;
}

static void idle_wait(struct tp_mpi *t, double seconds)
{
	struct timespec ts = base_deadline(seconds);

	pthread_mutex_lock(&t->mu);
	if (!t->out_head) /* also while closing: never spin */
		pthread_cond_timedwait(&t->cv, &t->mu, &ts);
	pthread_mutex_unlock(&t->mu);
}

/* The next back-off: lo after activity, else doubling up to hi. */
static double next_idle(double idle, int active, double lo, double hi)
{
	if (active)
		return lo;
	idle *= 2;
	return idle < lo ? lo : idle > hi ? hi : idle;
}

/* One round of work; returns 1 when the loop should end.  While a hosted
 * worker waits in recv (or the transport closes) the comm thread polls
 * briskly (back-off at most WAIT_MAX); otherwise it sleeps up to IDLE_MAX,
 * or longer when relaxed polling is on. */
static int comm_round(struct tp_mpi *t, double *idle)
{
	double now = ps_clock_now();
	double relax;
	int busy = 0, stop, waiting;

	busy += flush_outbox(t);
	busy += test_sends(t);
	busy += poll_recv(t, now);
	pthread_mutex_lock(&t->mu);
	stop = t->stop;
	waiting = t->waiting;
	relax = waiting || stop ? 0 : t->relax_max;
	pthread_mutex_unlock(&t->mu);
	if (is_failed(t)) {
		if (!t->abort_sent)
			broadcast_abort(t);
		if (stop && (t->nfl == 0 || now > t->abort_deadline))
			return 1;
	} else {
		heartbeat(t, now);
		if (!t->barrier_done)
			check_liveness(t, now);
		if (stop && step_close(t) && t->nfl == 0)
			return 1;
	}
	/* sends in flight only progress inside MPI calls (the TCP transport
	 * moves a large message in fragments): keep polling briskly, unless
	 * relaxed (the application tolerates the delay; on one host the
	 * receiver copies a large message itself) */
	*idle = next_idle(*idle, busy || (t->nfl && !relax),
			  relax ? RELAX_MIN : IDLE_MIN,
			  relax ? relax : waiting ? WAIT_MAX : IDLE_MAX);
	if (!busy)
		idle_wait(t, *idle);
	return 0;
}

static int comm_init(struct tp_mpi *t, struct parsa_err *err);

static void signal_state(struct tp_mpi *t, int *flag, int value)
{
	pthread_mutex_lock(&t->mu);
	*flag = value;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static void *comm_main(void *p)
{
	struct tp_mpi *t = p;
	struct parsa_err err = { 0 };
	double idle = IDLE_MIN;
	sigset_t pipe;
	int clean;

	pthread_setname_np(pthread_self(), "ps-comm");
	/* A write to a dead peer's socket must fail with EPIPE, not kill the
	 * rank: block SIGPIPE in this thread (and MPI's helper threads, which
	 * inherit the mask).  Other threads keep their disposition. */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	if (comm_init(t, &err)) {
		pthread_mutex_lock(&t->mu);
		memcpy(t->close_msg, err.msg, sizeof(t->close_msg));
		t->close_rc = err.code;
		pthread_mutex_unlock(&t->mu);
		signal_state(t, &t->ready, -1);
		return NULL;
	}
	signal_state(t, &t->ready, 1);
	while (!comm_round(t, &idle))
		;
	clean = !is_failed(t);
	if (clean) {
		MPI_Comm_free(&t->comm);
		if (t->owns_init)
			MPI_Finalize();
	}
	pthread_mutex_lock(&t->mu);
	t->close_rc = ps_transport_failed(&t->base, NULL);
	pthread_mutex_unlock(&t->mu);
	signal_state(t, &t->closed, 1);
	return NULL;
}

/* ---- setup (on the comm thread) ---- */

#define HELLO_TAG 0x7e11

/*
 * Start-up handshake on MPI_COMM_WORLD: a byte to and from every other
 * rank, polled (MPI_Test) until all arrived or timeout_s passed; then the
 * error names the ranks not heard from.
 */
static int hello(struct tp_mpi *t, struct parsa_err *err)
{
	uint32_t n = t->base.nranks, me = t->base.rank, left = 0, r;
	MPI_Request *rq = calloc(2 * (size_t)n + 1, sizeof(*rq));
	unsigned char *in = calloc((size_t)n + 1, 1), out = 1;
	double deadline = ps_clock_now() + t->timeout_s;
	int rc = 0;

	if (!rq || !in) {
		free(rq);
		free(in);
		return parsa_fail(err, PARSA_ENOMEM, "MPI start-up");
	}
	for (r = 0; r < 2 * n; r++)
		rq[r] = MPI_REQUEST_NULL;
	for (r = 0; r < n && !rc; r++) {
		if (r == me)
			continue;
		if (MPI_Irecv(&in[r], 1, MPI_BYTE, (int)r, HELLO_TAG,
			      MPI_COMM_WORLD, &rq[r]) != MPI_SUCCESS ||
		    MPI_Isend(&out, 1, MPI_BYTE, (int)r, HELLO_TAG,
			      MPI_COMM_WORLD, &rq[n + r]) != MPI_SUCCESS)
			rc = parsa_fail(err, PARSA_EMPI, "MPI start-up: "
					"cannot reach rank %u", r);
		left += 2;
	}
	while (!rc && left > 0) {
		struct timespec ts = { 0, 1000000 };

		for (r = 0; r < 2 * n; r++) {
			int done = 0;

			if (rq[r] == MPI_REQUEST_NULL)
				continue;
			if (MPI_Test(&rq[r], &done, MPI_STATUS_IGNORE) !=
			    MPI_SUCCESS)
				rc = parsa_fail(err, PARSA_EMPI, "MPI start-up: "
						"rank %u failed", r % n);
			else if (done)
				left--;
		}
		if (rc || left == 0)
			break;
		if (ps_clock_now() > deadline) {
			char who[256] = "";
			size_t m = 0;

			for (r = 0; r < n && m < sizeof(who) - 16; r++)
				if (r != me && rq[r] != MPI_REQUEST_NULL)
					m += (size_t)snprintf(who + m,
							      sizeof(who) - m,
							      "%s%u", m ? ", " : "", r);
			rc = parsa_fail(err, PARSA_EMPI,
					"no word from rank %s within %.1f s of "
					"start-up (--mpi-timeout; the rank died, "
					"hangs or is still loading its data)",
					m ? who : "?", t->timeout_s);
			break;
		}
		nanosleep(&ts, NULL);
	}
	/* on failure the requests stay posted: the process exits */
	free(rq);
	if (!rc)
		free(in);
	return rc;
}

static int init_mpi(struct tp_mpi *t, struct parsa_err *err)
{
	int inited = 0, provided = 0, rank, size, rc;

	MPI_Initialized(&inited);
	if (!inited) {
		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED,
				     &provided);
		if (rc != MPI_SUCCESS)
			return parsa_fail(err, PARSA_EMPI, "MPI_Init_thread "
					  "failed (%d)", rc);
		t->owns_init = 1;
	} else {
		MPI_Query_thread(&provided);
		if (provided < MPI_THREAD_SERIALIZED)
			return parsa_fail(err, PARSA_EMPI, "MPI was initialised"
					  " with thread level %d; the MPI "
					  "transport needs MPI_THREAD_SERIALIZED",
					  provided);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	t->base.rank = (uint32_t)rank;
	t->base.nranks = (uint32_t)size;
	/* every rank answers before the first collective (MPI_Comm_dup,
	 * which has no deadline): a silent rank is named, not waited for */
	rc = hello(t, err);
	if (rc)
		return rc;
	rc = MPI_Comm_dup(MPI_COMM_WORLD, &t->comm);
	if (rc != MPI_SUCCESS)
		return parsa_fail(err, PARSA_EMPI, "MPI_Comm_dup failed");
	MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
	return 0;
}

static int init_boxes(struct tp_mpi *t, struct parsa_err *err)
{
	struct ps_layout l = t->req_layout;
	double now = ps_clock_now();
	uint32_t r;

	l.num_machines = t->base.nranks;
	if (!l.num_servers)
		l.num_servers = t->base.nranks;
	if (!l.num_workers)
		l.num_workers = t->base.nranks;
	if (ps_layout_check(&l, err))
		return err ? err->code : PARSA_EINVAL;
	t->base.layout = l;
	t->nodes = ps_layout_nodes(&l);
	t->box = calloc(t->nodes, sizeof(*t->box));
	t->last_heard = calloc(t->base.nranks, sizeof(*t->last_heard));
	if (!t->box || !t->last_heard)
		return parsa_fail(err, PARSA_ENOMEM, "MPI transport");
	for (; t->nbox_init < t->nodes; t->nbox_init++)
		if (ps_mailbox_init(&t->box[t->nbox_init]))
			return parsa_fail(err, PARSA_ENOMEM, "mailbox");
	for (r = 0; r < t->base.nranks; r++)
		t->last_heard[r] = now;
	t->last_hb = now;
	return 0;
}

static int comm_init(struct tp_mpi *t, struct parsa_err *err)
{
	int rc = init_mpi(t, err);

	return rc ? rc : init_boxes(t, err);
}

/* ---- lifecycle ---- */

static void stop_comm(struct tp_mpi *t, double wait_s)
{
	struct timespec ts = base_deadline((double)(time_t)wait_s + 1);

	pthread_mutex_lock(&t->mu);
	t->stop = 1;
	pthread_cond_broadcast(&t->cv);
	while (!t->closed && pthread_cond_timedwait(&t->cv, &t->mu, &ts) == 0)
		;
	pthread_mutex_unlock(&t->mu);
}

static int mpi_close(struct ps_transport *tp, double timeout_s,
		     struct parsa_err *err)
{
	struct tp_mpi *t = (struct tp_mpi *)tp;
	int closed;

	stop_comm(t, timeout_s > 0 ? timeout_s : t->timeout_s);
	pthread_mutex_lock(&t->mu);
	closed = t->closed;
	pthread_mutex_unlock(&t->mu);
	if (!closed)
		ps_transport_fail(tp, PARSA_EMPI, "closing the MPI transport "
				  "took over %.1f s", t->timeout_s);
	return ps_transport_failed(tp, err);
}

static void free_queues(struct tp_mpi *t)
{
	struct out_msg *o, *next;
	uint32_t i;

	for (o = t->out_head; o; o = next) {
		next = o->next;
		free(o->buf);
		free(o);
	}
	for (i = 0; i < t->nbox_init; i++)
		ps_mailbox_release(&t->box[i]);
	free(t->box);
	free(t->last_heard);
	free(t->fl); /* in-flight buffers leak if MPI never completed them */
}

/* Is the comm thread finished (or never got going)? */
static int comm_finished(struct tp_mpi *t)
{
	int done;

	pthread_mutex_lock(&t->mu);
	done = t->closed || t->ready < 0;
	pthread_mutex_unlock(&t->mu);
	return done;
}

static void mpi_destroy(struct ps_transport *tp)
{
	struct tp_mpi *t = (struct tp_mpi *)tp;

	if (t->comm_started) {
		if (!comm_finished(t)) { /* not closed: a failure path */
			if (!is_failed(t))
				ps_transport_fail(tp, PARSA_ESTATE, "MPI "
						  "transport destroyed while "
						  "open");
			stop_comm(t, ABORT_GRACE);
		}
		if (!comm_finished(t)) { /* stuck inside MPI: leave it */
			pthread_detach(t->thread);
			return;
		}
		pthread_join(t->thread, NULL);
	}
	free_queues(t);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	ps_transport_base_release(tp);
	free(t);
}

static const struct ps_transport_ops mpi_ops = {
	.name = "mpi",
	.send = mpi_send,
	.recv = mpi_recv,
	.wake = mpi_wake,
	.close = mpi_close,
	.destroy = mpi_destroy,
};

/*
 * Wait for the comm thread's start-up, at most timeout_s (its handshake's
 * deadline) plus a grace: MPI_Init itself may wait for every rank.
 */
static int wait_ready(struct tp_mpi *t, struct parsa_err *err)
{
	struct timespec ts = base_deadline(t->timeout_s + 2 * ABORT_GRACE);
	int ready, late = 0;

	pthread_mutex_lock(&t->mu);
	while (!t->ready && !late)
		late = pthread_cond_timedwait(&t->cv, &t->mu, &ts) != 0 &&
		       !t->ready;
	ready = t->ready;
	if (ready < 0)
		parsa_fail(err, t->close_rc ? t->close_rc : PARSA_EMPI, "%s",
			   t->close_msg);
	pthread_mutex_unlock(&t->mu);
	if (late)
		return parsa_fail(err, PARSA_EMPI, "MPI start-up did not end "
				  "within %.1f s (MPI_Init waits for every "
				  "rank: one died, hangs or is still loading)",
				  t->timeout_s + 2 * ABORT_GRACE);
	return ready < 0 ? (t->close_rc ? t->close_rc : PARSA_EMPI) : 0;
}

static struct ps_transport *mpi_create(const struct ps_layout *l,
				       double timeout_s, struct parsa_err *err)
{
	struct ps_layout tmp = { 1, 1, 1 }; /* placeholder until MPI runs */
	struct tp_mpi *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;

	if (!t || ps_transport_base_init(&t->base, &mpi_ops, &tmp, err)) {
		free(t);
		parsa_fail(err, PARSA_ENOMEM, "MPI transport");
		return NULL;
	}
	t->req_layout = *l;
	t->timeout_s = timeout_s > 0 ? timeout_s : 60.0;
	t->base.nranks = 1;
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&t->thread, NULL, comm_main, t)) {
		parsa_fail(err, PARSA_ENOMEM, "cannot start the comm thread");
		mpi_destroy(&t->base);
		return NULL;
	}
	t->comm_started = 1;
	if (wait_ready(t, err)) {
		mpi_destroy(&t->base);
		return NULL;
	}
	return &t->base;
}

static int mpi_start(struct parsa_err *err)
{
	int inited = 0, provided = 0;

	MPI_Initialized(&inited);
	if (inited)
		return 0;
	if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) !=
	    MPI_SUCCESS)
		return parsa_fail(err, PARSA_EMPI, "MPI_Init_thread failed");
	if (provided < MPI_THREAD_SERIALIZED)
		return parsa_fail(err, PARSA_EMPI, "MPI gives thread level %d; "
				  "the transport needs MPI_THREAD_SERIALIZED",
				  provided);
	return 0;
}

static void mpi_finish(void)
{
	int inited = 0, done = 0;

	MPI_Initialized(&inited);
	MPI_Finalized(&done);
	if (inited && !done)
		MPI_Finalize();
}

static void mpi_relax(struct ps_transport *tp, double max_s)
{
	struct tp_mpi *t = (struct tp_mpi *)tp;

	if (!tp || tp->ops != &mpi_ops)
		return;
	pthread_mutex_lock(&t->mu);
	t->relax_max = max_s > RELAX_MIN ? max_s : 0;
	atomic_store(&t->relaxed, t->relax_max != 0);
	pthread_mutex_unlock(&t->mu);
}

static const struct ps_mpi_plugin plugin = {
	.abi = PS_MPI_PLUGIN_ABI,
	.sizes = PS_MPI_PLUGIN_SIZES,
	.start = mpi_start,
	.finish = mpi_finish,
	.create = mpi_create,
	.relax = mpi_relax,
};

const struct ps_mpi_plugin *ps_mpi_plugin_v1(void)
{
	return &plugin;
}

#endif /* PS_HAVE_MPI */
