/*
 * ps_cluster: the shared configuration, and the endpoint layer every node
 * sends and receives through: encoding, validation of what arrives, traffic
 * counters (local vs remote by machine id) and failure reporting.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ps_internal.h"

_Static_assert(PS_MSG_MAX_OP == PS_OP_OVERWRITE, "op numbering");
_Static_assert(sizeof(struct ps_node_stats) % 8 == 0, "stats are u64s");

static int check_tables(const struct ps_config *cfg, struct parsa_err *err)
{
	uint32_t t;
	int rc;

	if (cfg->num_tables > PS_MAX_TABLES)
		return parsa_fail(err, PARSA_EINVAL, "%u tables (max %d)",
				  cfg->num_tables, PS_MAX_TABLES);
	for (t = 0; t < cfg->num_tables; t++) {
		const struct ps_table_spec *ts = &cfg->tables[t];

		if (ts->value_bytes == 0 ||
		    ts->value_bytes > PS_MSG_MAX_VALUE_BYTES)
			return parsa_fail(err, PARSA_EINVAL, "table %u: value "
					  "width %u bytes (1..%u)", t,
					  ts->value_bytes,
					  PS_MSG_MAX_VALUE_BYTES);
		rc = ps_op_check(ts->op, ts->value_bytes, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int check_consistency(const struct ps_config *cfg,
			     struct parsa_err *err)
{
	uint32_t t, eager = 0;

	if (cfg->consistency == PS_CONS_TAU)
		return 0;
	if (cfg->consistency != PS_CONS_SSP &&
	    cfg->consistency != PS_CONS_ESSP)
		return parsa_fail(err, PARSA_EINVAL, "consistency model %d",
				  cfg->consistency);
	if (cfg->staleness < 0)
		return parsa_fail(err, PARSA_EINVAL, "staleness %d (>= 0)",
				  cfg->staleness);
	for (t = 0; t < cfg->num_tables; t++)
		eager += cfg->tables[t].eager != 0;
	if (cfg->consistency == PS_CONS_ESSP && eager == 0)
		return parsa_fail(err, PARSA_EINVAL, "essp: no table is eager "
				  "(ps_table_spec.eager)");
	return 0;
}

/* ---- consistency models: names ---- */

int ps_consistency_parse(const char *s, struct ps_consistency *c,
			 struct parsa_err *err)
{
	const char *arg = NULL;
	char *end;
	long v;

	if (!s)
		s = "";
	if (strcmp(s, "bsp") == 0) {
		c->model = PS_CONS_SSP;
		c->bound = 0;
		return 0;
	}
	if (strncmp(s, "ssp:", 4) == 0) {
		c->model = PS_CONS_SSP;
		arg = s + 4;
	} else if (strncmp(s, "essp:", 5) == 0) {
		c->model = PS_CONS_ESSP;
		arg = s + 5;
	} else if (strncmp(s, "tau:", 4) == 0) {
		c->model = PS_CONS_TAU;
		arg = s + 4;
		if (strcmp(arg, "inf") == 0) {
			c->bound = -1;
			return 0;
		}
	} else {
		return parsa_fail(err, PARSA_EINVAL, "consistency '%s': one "
				  "of bsp, ssp:S, essp:S, tau:T", s);
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (!*arg || *end || errno || v < 0 || v > 1000000)
		return parsa_fail(err, PARSA_EINVAL, "consistency '%s': the "
				  "bound must be an integer in 0..1000000%s", s,
				  c->model == PS_CONS_TAU ? " or inf" : "");
	c->bound = (int)v;
	return 0;
}

const char *ps_consistency_format(const struct ps_consistency *c, char *buf,
				  size_t len)
{
	if (c->model == PS_CONS_SSP && c->bound == 0)
		snprintf(buf, len, "bsp");
	else if (c->model == PS_CONS_TAU && c->bound < 0)
		snprintf(buf, len, "tau:inf");
	else
		snprintf(buf, len, "%s:%d", c->model == PS_CONS_SSP ? "ssp"
					    : c->model == PS_CONS_ESSP ? "essp"
								       : "tau",
			 c->bound);
	return buf;
}

struct ps_cluster *ps_cluster_create(const struct ps_config *cfg,
				     const struct ps_layout *l,
				     struct parsa_err *err)
{
	struct ps_cluster *cl;
	int rc;

	if (ps_layout_check(l, err) || check_tables(cfg, err))
		return NULL;
	if (cfg->tau < -1 || cfg->timeout_s < 0 || cfg->server_delay_s < 0) {
		parsa_fail(err, PARSA_EINVAL, "tau %d / timeout %g / delay %g",
			   cfg->tau, cfg->timeout_s, cfg->server_delay_s);
		return NULL;
	}
	if (check_consistency(cfg, err))
		return NULL;
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		parsa_fail(err, PARSA_ENOMEM, "cluster");
		return NULL;
	}
	cl->layout = *l;
	cl->num_tables = cfg->num_tables;
	memcpy(cl->tables, cfg->tables, sizeof(cl->tables));
	cl->tau = cfg->tau;
	cl->consistency = cfg->consistency;
	cl->staleness = cfg->staleness;
	cl->timeout_s = cfg->timeout_s > 0 ? cfg->timeout_s
					   : PS_DEFAULT_TIMEOUT;
	cl->server_delay_s = cfg->server_delay_s;
	if (cfg->range_starts)
		rc = ps_ranges_init_starts(&cl->ranges, cfg->range_starts,
					   l->num_servers, err);
	else
		rc = ps_ranges_init_uniform(&cl->ranges, l->num_servers, err);
	if (rc) {
		free(cl);
		return NULL;
	}
	return cl;
}

void ps_cluster_destroy(struct ps_cluster *cl)
{
	if (!cl)
		return;
	ps_ranges_release(&cl->ranges);
	free(cl);
}

const struct ps_layout *ps_cluster_layout(const struct ps_cluster *cl)
{
	return &cl->layout;
}

const struct ps_ranges *ps_cluster_ranges(const struct ps_cluster *cl)
{
	return &cl->ranges;
}

void ps_ep_init(struct ps_endpoint *ep, const struct ps_cluster *cl,
		struct ps_transport *tp, uint32_t node)
{
	memset(ep, 0, sizeof(*ep));
	ep->tp = tp;
	ep->cl = cl;
	ep->id = node;
	ep->role = ps_layout_role(&cl->layout, node, &ep->index);
	ep->machine = ps_layout_machine(&cl->layout, node);
	ps_layout_name(&cl->layout, node, ep->name, sizeof(ep->name));
}

static int peer_class(const struct ps_endpoint *ep, uint32_t peer)
{
	return ps_layout_machine(&ep->cl->layout, peer) == ep->machine
		       ? PS_LOCAL
		       : PS_REMOTE;
}

int ps_ep_send_buf(struct ps_endpoint *ep, uint32_t dst, void *buf,
		   size_t len, struct parsa_err *err)
{
	int cls = peer_class(ep, dst);

	ep->cnt.msgs_sent[cls]++;
	ep->cnt.bytes_sent[cls] += len;
	return ps_transport_send(ep->tp, dst, buf, len, err);
}

int ps_ep_send(struct ps_endpoint *ep, uint32_t dst, struct ps_msg *hdr,
	       const uint64_t *keys, const void *vals, const void *blob,
	       struct parsa_err *err)
{
	void *buf;
	size_t len;
	int rc;

	hdr->src = ep->id;
	hdr->dst = dst;
	rc = ps_msg_encode(hdr, keys, vals, blob, &buf, &len, err);
	if (rc)
		return rc;
	return ps_ep_send_buf(ep, dst, buf, len, err);
}

void ps_rx_release(struct ps_rx *rx)
{
	free(rx->buf);
	rx->buf = NULL;
	rx->len = 0;
}

int ps_ep_fail(struct ps_endpoint *ep, int code, struct parsa_err *err)
{
	const char *msg = err && err->code ? err->msg : parsa_strerror(code);

	ps_transport_fail(ep->tp, code, "%s: %s", ep->name, msg);
	return code;
}

/* Checks beyond ps_msg_decode: addressing and table ids. */
static int check_addressing(const struct ps_endpoint *ep,
			    const struct ps_msg *m, struct parsa_err *err)
{
	uint32_t nodes = ps_layout_nodes(&ep->cl->layout);

	if (m->dst != ep->id)
		return parsa_fail(err, PARSA_EPARSE, "%s for node %u",
				  ps_msg_type_name(m->type), m->dst);
	if (m->src >= nodes || m->src == ep->id)
		return parsa_fail(err, PARSA_EPARSE, "%s from bad node %u",
				  ps_msg_type_name(m->type), m->src);
	if ((m->type == PS_MSG_PUSH || m->type == PS_MSG_PULL ||
	     m->type == PS_MSG_EAGER) && m->table >= ep->cl->num_tables)
		return parsa_fail(err, PARSA_EPARSE, "%s for table %u of %u",
				  ps_msg_type_name(m->type), m->table,
				  ep->cl->num_tables);
	return 0;
}

int ps_ep_recv(struct ps_endpoint *ep, double timeout_s, struct ps_rx *rx,
	       struct parsa_err *err)
{
	struct parsa_err why = { 0 };
	int rc;

	memset(rx, 0, sizeof(*rx));
	rc = ps_transport_recv(ep->tp, ep->id, timeout_s, &rx->buf, &rx->len,
			       err);
	if (rc || !rx->buf)
		return rc;
	rc = ps_msg_decode(rx->buf, rx->len, &rx->m, &why);
	if (!rc)
		rc = check_addressing(ep, &rx->m, &why);
	if (rc) {
		parsa_fail(err, rc, "malformed message (%zu bytes) received "
			   "by %s: %s", rx->len, ep->name, why.msg);
		ps_rx_release(rx);
		ps_transport_fail(ep->tp, rc, "%s", err ? err->msg : why.msg);
		return rc;
	}
	rc = peer_class(ep, rx->m.src);
	ep->cnt.msgs_recv[rc]++;
	ep->cnt.bytes_recv[rc] += rx->len;
	return 0;
}

int ps_ep_protocol(struct ps_endpoint *ep, const struct ps_rx *rx,
		   const char *what, struct parsa_err *err)
{
	char src[48];

	ps_layout_name(&ep->cl->layout, rx->m.src, src, sizeof(src));
	parsa_fail(err, PARSA_EPARSE, "%s: unexpected %s from %s (ts %" PRIu64
		   "): %s", ep->name, ps_msg_type_name(rx->m.type), src,
		   rx->m.ts, what);
	ps_transport_fail(ep->tp, PARSA_EPARSE, "%s", err ? err->msg : what);
	return PARSA_EPARSE;
}

int ps_ep_reply_error(struct ps_endpoint *ep, const struct ps_rx *rx,
		      uint16_t type, const struct parsa_err *why,
		      struct parsa_err *err)
{
	struct ps_msg r = { 0 };
	char text[PARSA_ERR_MSG + 64];
	int n = snprintf(text, sizeof(text), "%s: %s", ep->name, why->msg);

	r.type = type;
	r.flags = PS_MSGF_ERROR;
	r.ts = rx->m.ts;
	r.aux = rx->m.aux;
	r.table = (uint32_t)why->code;
	r.blob_len = (uint32_t)(n < 0 ? 0 : (size_t)n < sizeof(text)
					     ? (size_t)n : sizeof(text) - 1);
	return ps_ep_send(ep, rx->m.src, &r, NULL, NULL, text, err);
}

void ps_ep_stats(const struct ps_endpoint *ep, struct ps_node_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->valid = 1;
	st->node = ep->id;
	st->role = ep->role;
	st->index = ep->index;
	st->machine = ep->machine;
	st->c = ep->cnt;
}

void ps_result_release(struct ps_result *r)
{
	if (!r)
		return;
	free(r->nodes);
	r->nodes = NULL;
	r->num_nodes = 0;
}

void ps_result_total(const struct ps_result *r, struct ps_counters *sum)
{
	uint32_t i;
	int c;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < r->num_nodes; i++) {
		const struct ps_counters *x = &r->nodes[i].c;

		if (!r->nodes[i].valid)
			continue;
		for (c = 0; c < 2; c++) {
			sum->msgs_sent[c] += x->msgs_sent[c];
			sum->bytes_sent[c] += x->bytes_sent[c];
			sum->msgs_recv[c] += x->msgs_recv[c];
			sum->bytes_recv[c] += x->bytes_recv[c];
		}
	}
}
