/*
 * ps_transport: node layout, the transport-independent wrappers and the
 * shared failure state (see ps_transport.h).
 */
#include "ps_transport.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ps_msg.h"

uint32_t ps_layout_nodes(const struct ps_layout *l)
{
	return 1 + l->num_servers + l->num_workers;
}

uint32_t ps_layout_server_node(const struct ps_layout *l, uint32_t i)
{
	(void)l;
	return 1 + i;
}

uint32_t ps_layout_worker_node(const struct ps_layout *l, uint32_t i)
{
	return 1 + l->num_servers + i;
}

enum ps_role ps_layout_role(const struct ps_layout *l, uint32_t node,
			    uint32_t *index)
{
	if (node == 0) {
		*index = 0;
		return PS_ROLE_SCHEDULER;
	}
	if (node <= l->num_servers) {
		*index = node - 1;
		return PS_ROLE_SERVER;
	}
	*index = node - 1 - l->num_servers;
	return PS_ROLE_WORKER;
}

uint32_t ps_layout_machine(const struct ps_layout *l, uint32_t node)
{
	uint32_t i;

	if (ps_layout_role(l, node, &i) == PS_ROLE_SCHEDULER)
		return 0;
	return i % l->num_machines;
}

const char *ps_layout_name(const struct ps_layout *l, uint32_t node,
			   char *buf, size_t size)
{
	static const char *const role[] = { "scheduler", "server", "worker" };
	uint32_t i;
	enum ps_role r;

	if (node >= ps_layout_nodes(l)) {
		snprintf(buf, size, "node %u", node);
		return buf;
	}
	r = ps_layout_role(l, node, &i);
	if (r == PS_ROLE_SCHEDULER)
		snprintf(buf, size, "scheduler (node 0)");
	else
		snprintf(buf, size, "%s %u (node %u)", role[r], i, node);
	return buf;
}

int ps_layout_check(const struct ps_layout *l, struct parsa_err *err)
{
	if (!l->num_servers || !l->num_workers || !l->num_machines)
		return parsa_fail(err, PARSA_EINVAL, "layout: %u servers, %u "
				  "workers, %u machines (each must be >= 1)",
				  l->num_servers, l->num_workers,
				  l->num_machines);
	if ((uint64_t)l->num_servers + l->num_workers + 1 > PS_MSG_MAX_NODES)
		return parsa_fail(err, PARSA_EINVAL, "layout: too many nodes");
	return 0;
}

int ps_transport_is_local(const struct ps_transport *tp, uint32_t node)
{
	return tp->all_local ||
	       ps_layout_machine(&tp->layout, node) == tp->rank;
}

uint32_t ps_transport_rank_of(const struct ps_transport *tp, uint32_t node)
{
	return tp->all_local ? 0 : ps_layout_machine(&tp->layout, node);
}

int ps_transport_send(struct ps_transport *tp, uint32_t dst, void *buf,
		      size_t len, struct parsa_err *err)
{
	return tp->ops->send(tp, dst, buf, len, err);
}

int ps_transport_recv(struct ps_transport *tp, uint32_t node,
		      double timeout_s, void **buf, size_t *len,
		      struct parsa_err *err)
{
	return tp->ops->recv(tp, node, timeout_s, buf, len, err);
}

void ps_transport_fail(struct ps_transport *tp, int code, const char *fmt,
		       ...)
{
	va_list ap;
	int first = 0;

	pthread_mutex_lock(&tp->fail_mu);
	if (!tp->fail_code) {
		tp->fail_code = code ? code : PARSA_EMPI;
		va_start(ap, fmt);
		vsnprintf(tp->fail_msg, sizeof(tp->fail_msg), fmt, ap);
		va_end(ap);
		first = 1;
	}
	pthread_mutex_unlock(&tp->fail_mu);
	if (first)
		tp->ops->wake(tp);
}

int ps_transport_failed(struct ps_transport *tp, struct parsa_err *err)
{
	int code;

	pthread_mutex_lock(&tp->fail_mu);
	code = tp->fail_code;
	if (code)
		parsa_fail(err, code, "%s", tp->fail_msg);
	pthread_mutex_unlock(&tp->fail_mu);
	return code;
}

int ps_transport_close(struct ps_transport *tp, double timeout_s,
		       struct parsa_err *err)
{
	int rc = ps_transport_failed(tp, err);

	return rc ? rc : tp->ops->close(tp, timeout_s, err);
}

void ps_transport_destroy(struct ps_transport *tp)
{
	if (tp)
		tp->ops->destroy(tp);
}

int ps_transport_base_init(struct ps_transport *tp,
			   const struct ps_transport_ops *ops,
			   const struct ps_layout *l, struct parsa_err *err)
{
	int rc = ps_layout_check(l, err);

	if (rc)
		return rc;
	tp->ops = ops;
	tp->layout = *l;
	tp->fail_code = 0;
	tp->fail_msg[0] = '\0';
	if (pthread_mutex_init(&tp->fail_mu, NULL))
		return parsa_fail(err, PARSA_ENOMEM, "transport mutex");
	return 0;
}

void ps_transport_base_release(struct ps_transport *tp)
{
	pthread_mutex_destroy(&tp->fail_mu);
}
