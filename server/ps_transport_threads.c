/*
 * ps_transport_threads: every node in this process, one mailbox each.
 *
 * send() appends the buffer to the destination's mailbox (zero copy); recv()
 * blocks on that mailbox's condition variable.  Machines are virtual: the
 * layout's machine ids only classify traffic as local or remote.
 */
#include <stdlib.h>

#include "ps_mailbox.h"
#include "ps_transport.h"

struct tp_threads {
	struct ps_transport base; /* first: cast from ps_transport */
	uint32_t nodes;
	struct ps_mailbox *box;   /* nodes mailboxes */
	int nbox_init;            /* how many are initialised */
};

static int th_send(struct ps_transport *tp, uint32_t dst, void *buf,
		   size_t len, struct parsa_err *err)
{
	struct tp_threads *t = (struct tp_threads *)tp;
	int rc = ps_transport_failed(tp, err);

	if (rc) {
		free(buf);
		return rc;
	}
	if (dst >= t->nodes) {
		free(buf);
		return parsa_fail(err, PARSA_EINVAL, "send to node %u of %u",
				  dst, t->nodes);
	}
	if (ps_mailbox_put(&t->box[dst], buf, len)) {
		rc = ps_transport_failed(tp, err);
		return rc ? rc : parsa_fail(err, PARSA_ENOMEM, "mailbox");
	}
	return 0;
}

static int th_recv(struct ps_transport *tp, uint32_t node, double timeout_s,
		   void **buf, size_t *len, struct parsa_err *err)
{
	struct tp_threads *t = (struct tp_threads *)tp;
	int rc;

	*buf = NULL;
	if (node >= t->nodes)
		return parsa_fail(err, PARSA_EINVAL, "recv on node %u", node);
	rc = ps_mailbox_get(&t->box[node], timeout_s, buf, len);
	if (rc < 0) {
		rc = ps_transport_failed(tp, err);
		return rc ? rc : parsa_fail(err, PARSA_EMPI, "mailbox failed");
	}
	return 0;
}

static void th_wake(struct ps_transport *tp)
{
	struct tp_threads *t = (struct tp_threads *)tp;
	uint32_t i;

	for (i = 0; i < t->nodes; i++)
		ps_mailbox_fail(&t->box[i]);
}

static int th_close(struct ps_transport *tp, double timeout_s,
		    struct parsa_err *err)
{
	(void)tp;
	(void)timeout_s;
	(void)err;
	return 0;
}

static void th_destroy(struct ps_transport *tp)
{
	struct tp_threads *t = (struct tp_threads *)tp;
	int i;

	for (i = 0; i < t->nbox_init; i++)
		ps_mailbox_release(&t->box[i]);
	free(t->box);
	ps_transport_base_release(tp);
	free(t);
}

static const struct ps_transport_ops threads_ops = {
	.name = "threads",
	.send = th_send,
	.recv = th_recv,
	.wake = th_wake,
	.close = th_close,
	.destroy = th_destroy,
};

struct ps_transport *ps_transport_threads_create(const struct ps_layout *l,
						 struct parsa_err *err)
{
	struct tp_threads *t = calloc(1, sizeof(*t));

	if (!t) {
		parsa_fail(err, PARSA_ENOMEM, "threads transport");
		return NULL;
	}
	if (ps_transport_base_init(&t->base, &threads_ops, l, err)) {
		free(t);
		return NULL;
	}
	t->base.rank = 0;
	t->base.nranks = 1;
	t->base.all_local = 1;
	t->nodes = ps_layout_nodes(l);
	t->box = calloc(t->nodes, sizeof(*t->box));
	if (!t->box) {
		parsa_fail(err, PARSA_ENOMEM, "%u mailboxes", t->nodes);
		th_destroy(&t->base);
		return NULL;
	}
	while ((uint32_t)t->nbox_init < t->nodes) {
		if (ps_mailbox_init(&t->box[t->nbox_init])) {
			parsa_fail(err, PARSA_ENOMEM, "mailbox");
			th_destroy(&t->base);
			return NULL;
		}
		t->nbox_init++;
	}
	return &t->base;
}
