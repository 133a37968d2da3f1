/*
 * ps_worker: the worker side of the scheduler protocol: tasks, progress,
 * barriers and shutdown.
 *
 * Messages that are not replies (TASK, BARRIER_RELEASE, SHUTDOWN) arrive
 * while the worker waits for something else; tasks are queued and run by
 * ps_worker_serve in arrival order, releases and shutdown only set state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps_internal.h"

int ps_worker_other(struct ps_node *w, struct ps_rx *rx, struct parsa_err *err)
{
	struct ps_rx *t;
	int rc = 0;

	if (rx->m.src != 0) {
		rc = ps_ep_protocol(&w->ep, rx, "workers only hear the "
				    "scheduler", err);
	} else if (rx->m.type == PS_MSG_TASK) {
		t = malloc(sizeof(*t));
		if (!t) {
			ps_rx_release(rx);
			return parsa_fail(err, PARSA_ENOMEM, "task");
		}
		*t = *rx; /* m's pointers stay valid: they point into buf */
		t->next = NULL;
		if (w->tasks_tail)
			w->tasks_tail->next = t;
		else
			w->tasks_head = t;
		w->tasks_tail = t;
		return 0;
	} else if (rx->m.type == PS_MSG_BARRIER_RELEASE &&
		   rx->m.aux == w->released_gen && w->released_gen <
		   w->barrier_gen) {
		w->released_gen++;
	} else if (rx->m.type == PS_MSG_SHUTDOWN) {
		w->shutdown_seen = 1;
	} else {
		rc = ps_ep_protocol(&w->ep, rx, "not a worker message", err);
	}
	ps_rx_release(rx);
	return rc;
}

static int check_worker(struct ps_node *w, const char *what,
			struct parsa_err *err)
{
	if (w->ep.role != PS_ROLE_WORKER)
		return parsa_fail(err, PARSA_ESTATE, "%s: %s is for workers",
				  w->ep.name, what);
	return 0;
}

int ps_report_progress(struct ps_node *w, const void *rec, size_t len,
		       struct parsa_err *err)
{
	struct ps_msg h = { 0 };
	int rc = check_worker(w, "ps_report_progress", err);

	if (rc)
		return rc;
	if (len > PS_MSG_MAX_PAYLOAD)
		return parsa_fail(err, PARSA_ERANGE, "progress record of %zu "
				  "bytes", len);
	h.type = PS_MSG_PROGRESS;
	h.blob_len = (uint32_t)len;
	return ps_ep_send(&w->ep, 0, &h, NULL, NULL, rec, err);
}

static int pred_released(struct ps_node *w, uint64_t gen)
{
	return w->released_gen > gen;
}

int ps_barrier(struct ps_node *w, struct parsa_err *err)
{
	struct ps_msg h = { 0 };
	uint64_t gen = w->barrier_gen;
	int rc = check_worker(w, "ps_barrier", err);

	if (rc)
		return rc;
	h.type = PS_MSG_BARRIER;
	h.aux = gen;
	rc = ps_ep_send(&w->ep, 0, &h, NULL, NULL, NULL, err);
	if (rc)
		return rc;
	w->barrier_gen++;
	return ps_client_wait(w, pred_released, gen, 0, err);
}

static int run_task(struct ps_node *w, struct ps_rx *t, ps_task_fn task,
		    void *arg, struct parsa_err *err)
{
	struct parsa_err terr = { 0 };
	struct ps_msg h = { 0 };
	int rc;

	if (task)
		rc = task(w, t->m.aux, t->m.blob, t->m.blob_len, arg, &terr);
	else
		rc = parsa_fail(&terr, PARSA_ESTATE, "no task function");
	h.type = PS_MSG_TASK_DONE;
	h.aux = t->m.aux;
	if (rc) {
		char text[PARSA_ERR_MSG];
		int n = snprintf(text, sizeof(text), "%s", terr.msg[0]
				 ? terr.msg : parsa_strerror(rc));

		h.flags = PS_MSGF_ERROR;
		h.table = (uint32_t)rc;
		h.blob_len = (uint32_t)(n < 0 ? 0 : n);
		return ps_ep_send(&w->ep, 0, &h, NULL, NULL, text, err);
	}
	return ps_ep_send(&w->ep, 0, &h, NULL, NULL, NULL, err);
}

static int send_shutdown_ack(struct ps_node *w, struct parsa_err *err)
{
	struct ps_node_stats st;
	struct ps_msg h = { 0 };

	ps_node_stats(w, &st);
	h.type = PS_MSG_SHUTDOWN_ACK;
	h.blob_len = sizeof(st);
	return ps_ep_send(&w->ep, 0, &h, NULL, NULL, &st, err);
}

int ps_worker_serve(struct ps_node *w, ps_task_fn task, void *arg,
		    struct parsa_err *err)
{
	struct ps_rx *t;
	int rc = check_worker(w, "ps_worker_serve", err), got;

	while (!rc) {
		t = w->tasks_head;
		if (t) {
			w->tasks_head = t->next;
			if (!w->tasks_head)
				w->tasks_tail = NULL;
			rc = run_task(w, t, task, arg, err);
			ps_rx_release(t);
			free(t);
		} else if (w->shutdown_seen) {
			break;
		} else {
			rc = ps_client_pump(w, -1, &got, err);
		}
	}
	if (!rc)
		rc = ps_wait_all(w, err);
	if (!rc)
		rc = send_shutdown_ack(w, err);
	return rc;
}
