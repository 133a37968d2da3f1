/*
 * ps_sched: the scheduler: tasks on workers, progress records, worker
 * barriers and the shutdown protocol.
 *
 * The scheduler is driven by the thread that calls ps_sched_*; it handles
 * incoming messages only inside those calls.  Shutdown goes in two phases
 * so that no request is in flight when a server stops: first every worker
 * (which answers only after all its own requests completed), then every
 * server.  Each answers with its statistics.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ps_internal.h"

int ps_sched_state_init(struct ps_node *s, struct parsa_err *err)
{
	uint32_t nodes = ps_layout_nodes(&s->ep.cl->layout);

	s->sched = calloc(1, sizeof(*s->sched));
	if (s->sched)
		s->sched->stats = calloc(nodes, sizeof(*s->sched->stats));
	if (!s->sched || !s->sched->stats) {
		free(s->sched);
		s->sched = NULL;
		return parsa_fail(err, PARSA_ENOMEM, "scheduler state");
	}
	return 0;
}

void ps_sched_state_free(struct ps_node *s)
{
	struct ps_progress *p, *next;

	if (!s->sched)
		return;
	for (p = s->sched->prog_head; p; p = next) {
		next = p->next;
		free(p);
	}
	free(s->sched->stats);
	free(s->sched);
	s->sched = NULL;
}

static int check_sched(struct ps_node *s, const char *what,
		       struct parsa_err *err)
{
	if (!s->sched)
		return parsa_fail(err, PARSA_ESTATE, "%s: %s is for the "
				  "scheduler", s->ep.name, what);
	return 0;
}

/* ---- incoming messages ---- */

static int on_task_done(struct ps_node *s, const struct ps_rx *rx,
			struct parsa_err *err)
{
	struct ps_sched_state *st = s->sched;
	char who[48];

	if (rx->m.aux >= st->next_task || st->tasks_open == 0)
		return ps_ep_protocol(&s->ep, rx, "unknown task", err);
	st->tasks_open--;
	if (rx->m.flags & PS_MSGF_ERROR) {
		int code = (int)rx->m.table;

		ps_layout_name(&s->ep.cl->layout, rx->m.src, who, sizeof(who));
		parsa_fail(&st->task_err, code > 0 && code < PARSA_NSTATUS
				  ? code : PARSA_EIO,
			   "task %" PRIu64 " on %s failed: %.*s", rx->m.aux,
			   who, (int)rx->m.blob_len,
			   rx->m.blob ? (const char *)rx->m.blob : "");
	}
	return 0;
}

static int on_progress(struct ps_node *s, const struct ps_rx *rx,
		       struct parsa_err *err)
{
	struct ps_sched_state *st = s->sched;
	struct ps_progress *p = malloc(sizeof(*p) + rx->m.blob_len);

	if (!p)
		return parsa_fail(err, PARSA_ENOMEM, "progress record");
	p->next = NULL;
	p->worker = rx->m.src - 1 - s->ep.cl->layout.num_servers;
	p->len = rx->m.blob_len;
	if (p->len)
		memcpy(p->data, rx->m.blob, p->len);
	if (st->prog_tail)
		st->prog_tail->next = p;
	else
		st->prog_head = p;
	st->prog_tail = p;
	return 0;
}

static int broadcast(struct ps_node *s, enum ps_role role, uint16_t type,
		     uint64_t aux, struct parsa_err *err)
{
	const struct ps_layout *l = &s->ep.cl->layout;
	uint32_t i, n = role == PS_ROLE_WORKER ? l->num_workers
					      : l->num_servers;
	int rc = 0;

	for (i = 0; !rc && i < n; i++) {
		struct ps_msg h = { 0 };

		h.type = type;
		h.aux = aux;
		rc = ps_ep_send(&s->ep, role == PS_ROLE_WORKER
				? ps_layout_worker_node(l, i)
				: ps_layout_server_node(l, i),
				&h, NULL, NULL, NULL, err);
	}
	return rc;
}

/*
 * Workers that finished (acked SHUTDOWN) never enter another barrier: if
 * every other worker is waiting in one, it can never be released.
 */
static int check_barrier_deadlock(struct ps_node *s, struct parsa_err *err)
{
	struct ps_sched_state *st = s->sched;
	uint32_t w = s->ep.cl->layout.num_workers;

	if (st->barrier_count == 0 || st->worker_acks == 0 ||
	    st->barrier_count + st->worker_acks < w)
		return 0;
	parsa_fail(err, PARSA_ESTATE, "%s: barrier %" PRIu64 " can never "
		   "complete: %u workers wait in it but %u already finished "
		   "(workers called ps_barrier a different number of times)",
		   s->ep.name, st->barrier_gen, st->barrier_count,
		   st->worker_acks);
	ps_transport_fail(s->ep.tp, PARSA_ESTATE, "%s", err ? err->msg :
			  "barrier mismatch");
	return PARSA_ESTATE;
}

static int on_barrier(struct ps_node *s, const struct ps_rx *rx,
		      struct parsa_err *err)
{
	struct ps_sched_state *st = s->sched;

	if (rx->m.aux != st->barrier_gen)
		return ps_ep_protocol(&s->ep, rx, "wrong barrier generation",
				      err);
	if (++st->barrier_count < s->ep.cl->layout.num_workers)
		return check_barrier_deadlock(s, err);
	st->barrier_count = 0;
	st->barrier_gen++;
	return broadcast(s, PS_ROLE_WORKER, PS_MSG_BARRIER_RELEASE,
			 rx->m.aux, err);
}

static int on_shutdown_ack(struct ps_node *s, const struct ps_rx *rx,
			   struct parsa_err *err)
{
	struct ps_sched_state *st = s->sched;
	struct ps_node_stats *dst = &st->stats[rx->m.src];

	if (rx->m.blob_len != sizeof(*dst) || dst->valid)
		return ps_ep_protocol(&s->ep, rx, "bad statistics", err);
	memcpy(dst, rx->m.blob, sizeof(*dst));
	if (dst->node != rx->m.src)
		return ps_ep_protocol(&s->ep, rx, "statistics of another node",
				      err);
	dst->valid = 1;
	st->acks++;
	if (dst->role == PS_ROLE_WORKER)
		st->worker_acks++;
	return check_barrier_deadlock(s, err);
}

int ps_sched_other(struct ps_node *s, struct ps_rx *rx, struct parsa_err *err)
{
	uint32_t idx;
	enum ps_role from = ps_layout_role(&s->ep.cl->layout, rx->m.src, &idx);
	int rc;

	switch (rx->m.type) {
	case PS_MSG_TASK_DONE:
	case PS_MSG_PROGRESS:
	case PS_MSG_BARRIER:
		if (from != PS_ROLE_WORKER) {
			rc = ps_ep_protocol(&s->ep, rx, "not from a worker",
					    err);
			break;
		}
		rc = rx->m.type == PS_MSG_TASK_DONE ? on_task_done(s, rx, err)
		     : rx->m.type == PS_MSG_PROGRESS ? on_progress(s, rx, err)
						     : on_barrier(s, rx, err);
		break;
	case PS_MSG_SHUTDOWN_ACK:
		rc = on_shutdown_ack(s, rx, err);
		break;
	default:
		rc = ps_ep_protocol(&s->ep, rx, "not a scheduler message", err);
	}
	ps_rx_release(rx);
	return rc;
}

/* ---- tasks and progress ---- */

int ps_sched_start_task(struct ps_node *s, int worker, const void *payload,
			size_t len, uint64_t *task_id, struct parsa_err *err)
{
	const struct ps_layout *l = &s->ep.cl->layout;
	struct ps_msg h = { 0 };
	uint32_t w;
	int rc = check_sched(s, "ps_sched_start_task", err);

	if (rc)
		return rc;
	if ((worker != PS_ALL && (worker < 0 ||
				  (uint32_t)worker >= l->num_workers)) ||
	    len > PS_MSG_MAX_PAYLOAD || s->sched->shut)
		return parsa_fail(err, PARSA_EINVAL, "task for worker %d "
				  "(%u workers), %zu bytes%s", worker,
				  l->num_workers, len,
				  s->sched->shut ? ", after shutdown" : "");
	if (task_id)
		*task_id = s->sched->next_task;
	h.type = PS_MSG_TASK;
	h.blob_len = (uint32_t)len;
	for (w = 0; !rc && w < l->num_workers; w++) {
		if (worker != PS_ALL && (uint32_t)worker != w)
			continue;
		h.aux = s->sched->next_task++;
		rc = ps_ep_send(&s->ep, ps_layout_worker_node(l, w), &h, NULL,
				NULL, payload, err);
		if (!rc)
			s->sched->tasks_open++;
	}
	return rc;
}

static void deliver_progress(struct ps_node *s, ps_progress_fn fn, void *arg)
{
	struct ps_sched_state *st = s->sched;
	struct ps_progress *p;

	while ((p = st->prog_head)) {
		st->prog_head = p->next;
		if (!st->prog_head)
			st->prog_tail = NULL;
		if (fn)
			fn(arg, p->worker, p->data, p->len);
		free(p);
	}
}

int ps_sched_wait_tasks(struct ps_node *s, ps_progress_fn fn, void *arg,
			struct parsa_err *err)
{
	int rc = check_sched(s, "ps_sched_wait_tasks", err), got;

	/* the first failed task ends the wait: the other tasks may be
	 * blocked on it (a barrier, its pushes), and the caller's error
	 * stops the cluster */
	while (!rc && s->sched->tasks_open && !s->sched->task_err.code) {
		rc = ps_client_pump(s, -1, &got, err);
		deliver_progress(s, fn, arg);
	}
	if (!rc && s->sched->task_err.code) {
		rc = parsa_fail(err, s->sched->task_err.code, "%s",
				s->sched->task_err.msg);
		parsa_err_clear(&s->sched->task_err);
	}
	return rc;
}

int ps_sched_poll(struct ps_node *s, double seconds, ps_progress_fn fn,
		  void *arg, struct parsa_err *err)
{
	double end = ps_clock_now() + seconds, left;
	int rc = check_sched(s, "ps_sched_poll", err), got = 0;

	deliver_progress(s, fn, arg);
	while (!rc && (left = end - ps_clock_now()) > 0) {
		rc = ps_client_pump(s, left, &got, err);
		deliver_progress(s, fn, arg);
	}
	return rc;
}

/* ---- shutdown ---- */

static int pred_acks(struct ps_node *s, uint64_t want)
{
	return s->sched->acks >= want;
}

int ps_sched_shutdown(struct ps_node *s, struct parsa_err *err)
{
	const struct ps_layout *l = &s->ep.cl->layout;
	int rc = check_sched(s, "ps_sched_shutdown", err), got;

	if (rc || s->sched->shut)
		return rc;
	while (!rc && s->sched->tasks_open)
		rc = ps_client_pump(s, -1, &got, err);
	parsa_err_clear(&s->sched->task_err); /* the caller did not ask */
	if (!rc)
		rc = ps_wait_all(s, err);
	if (!rc)
		rc = broadcast(s, PS_ROLE_WORKER, PS_MSG_SHUTDOWN, 0, err);
	if (!rc)
		rc = ps_client_wait(s, pred_acks, l->num_workers, 0, err);
	if (!rc)
		rc = broadcast(s, PS_ROLE_SERVER, PS_MSG_SHUTDOWN, 0, err);
	if (!rc)
		rc = ps_client_wait(s, pred_acks,
				    l->num_workers + l->num_servers, 0, err);
	if (rc)
		return rc;
	deliver_progress(s, NULL, NULL);
	s->sched->shut = 1;
	ps_node_stats(s, &s->sched->stats[0]);
	return 0;
}

const struct ps_node_stats *ps_sched_stats(const struct ps_node *s,
					   uint32_t node)
{
	if (!s->sched || node >= ps_layout_nodes(&s->ep.cl->layout))
		return NULL;
	return &s->sched->stats[node];
}
