/*
 * ps_consist: the server side of the clocked consistency models (SSP and
 * ESSP, ps.h): per-worker clocks, the server's clock (their minimum), the
 * callbacks that run when it advances, requests parked until their
 * snapshot exists, and ESSP's eager rounds.
 *
 * A server's clock only moves when a CLOCK arrives.  Then, in this order:
 * the application's on-clock callback for every clock completed, the eager
 * round (ESSP: one EAGER per eager table to every worker, with the changed
 * keys that worker subscribed to, the last one of the round with aux 0),
 * and the parked requests whose requirement now holds, in arrival order.
 * Messages from one node to another stay in order (both transports), so a
 * worker's updates of a clock are merged before its CLOCK is seen, and
 * what a server sends a worker arrives in snapshot order.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ps_internal.h"

int ps_consist_init(struct ps_server *s, struct parsa_err *err)
{
	const struct ps_cluster *cl = s->ep.cl;
	uint32_t t, nw = cl->layout.num_workers;

	if (!ps_clocked(cl))
		return 0;
	s->done = calloc(nw ? nw : 1, sizeof(int64_t));
	if (!s->done)
		return parsa_fail(err, PARSA_ENOMEM, "server clocks");
	if (cl->consistency != PS_CONS_ESSP)
		return 0;
	s->sub_words = (nw + 63) / 64;
	for (t = 0; t < cl->num_tables; t++) {
		if (!cl->tables[t].eager)
			continue;
		s->eager[t] = calloc(1, sizeof(*s->eager[t]));
		if (!s->eager[t])
			return parsa_fail(err, PARSA_ENOMEM, "eager table");
	}
	return 0;
}

void ps_consist_free(struct ps_server *s)
{
	struct ps_rx *p, *next;
	uint32_t t;

	for (p = s->park_head; p; p = next) {
		next = p->next;
		ps_rx_release(p);
		free(p);
	}
	s->park_head = s->park_tail = NULL;
	for (t = 0; t < PS_MAX_TABLES; t++) {
		struct ps_eager_tbl *et = s->eager[t];

		if (!et)
			continue;
		free(et->sub);
		free(et->dirty);
		free(et->list);
		free(et);
		s->eager[t] = NULL;
	}
	free(s->done);
	s->done = NULL;
}

/* Worker index of node src, or -1. */
static int64_t worker_of(const struct ps_server *s, uint32_t src)
{
	uint32_t idx;

	if (ps_layout_role(&s->ep.cl->layout, src, &idx) != PS_ROLE_WORKER)
		return -1;
	return idx;
}

int ps_consist_park(struct ps_server *s, struct ps_rx *rx, int *parked,
		    struct parsa_err *err)
{
	struct ps_rx *p;
	int64_t w;

	*parked = 0;
	if (!(rx->m.flags & PS_MSGF_CLOCK))
		return 0;
	w = worker_of(s, rx->m.src);
	if (!ps_clocked(s->ep.cl) || w < 0)
		return ps_ep_protocol(&s->ep, rx, "a clocked request from a "
				      "node that has no clock", err);
	/* its sender's CLOCKs came first: it cannot need more than those */
	if (rx->m.clock > s->done[w])
		return ps_ep_protocol(&s->ep, rx, "requires a clock its sender "
				      "has not completed", err);
	if (rx->m.clock <= s->clock)
		return 0;
	p = malloc(sizeof(*p));
	if (!p)
		return parsa_fail(err, PARSA_ENOMEM, "parked request");
	*p = *rx; /* m's sections point into buf, which moves along */
	p->next = NULL;
	if (s->park_tail)
		s->park_tail->next = p;
	else
		s->park_head = p;
	s->park_tail = p;
	s->parked++;
	*parked = 1;
	return 0;
}

/* Answer every parked request the current clock satisfies, in order. */
static int unpark(struct ps_server *s, struct parsa_err *err)
{
	struct ps_rx **link = &s->park_head, *p;
	int rc = 0;

	s->park_tail = NULL;
	while ((p = *link)) {
		if (p->m.clock > s->clock) {
			s->park_tail = p;
			link = &p->next;
			continue;
		}
		*link = p->next;
		if (!rc)
			rc = ps_server_answer(s, p, err);
		ps_rx_release(p);
		free(p);
	}
	return rc;
}

/* ---- ESSP ---- */

static int eager_fit(struct ps_server *s, struct ps_eager_tbl *et,
		     size_t need, struct parsa_err *err)
{
	size_t cap = et->cap ? et->cap : 64;
	uint64_t *sub;
	uint8_t *dirty;

	if (need <= et->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	sub = realloc(et->sub, cap * s->sub_words * sizeof(uint64_t));
	if (!sub)
		return parsa_fail(err, PARSA_ENOMEM, "eager subscriptions");
	et->sub = sub;
	dirty = realloc(et->dirty, cap);
	if (!dirty)
		return parsa_fail(err, PARSA_ENOMEM, "eager state");
	et->dirty = dirty;
	memset(sub + et->cap * s->sub_words, 0,
	       (cap - et->cap) * s->sub_words * sizeof(uint64_t));
	memset(dirty + et->cap, 0, cap - et->cap);
	et->cap = cap;
	return 0;
}

int ps_consist_dirty(struct ps_server *s, uint32_t table,
		     const unsigned char *val, struct parsa_err *err)
{
	struct ps_eager_tbl *et = s->eager[table];
	size_t e;
	int rc;

	if (!et)
		return 0;
	e = ps_store_entry(s->store[table], val);
	if ((rc = eager_fit(s, et, e + 1, err)))
		return rc;
	if (et->dirty[e])
		return 0;
	if (et->nlist == et->list_cap) {
		size_t cap = et->list_cap ? 2 * et->list_cap : 256;
		size_t *l = realloc(et->list, cap * sizeof(size_t));

		if (!l)
			return parsa_fail(err, PARSA_ENOMEM, "eager list");
		et->list = l;
		et->list_cap = cap;
	}
	et->dirty[e] = 1;
	et->list[et->nlist++] = e;
	return 0;
}

int ps_consist_subscribe(struct ps_server *s, const struct ps_msg *m,
			 struct parsa_err *err)
{
	struct ps_eager_tbl *et = s->eager[m->table];
	struct ps_store *st = s->store[m->table];
	int64_t w = worker_of(s, m->src);
	uint64_t i;
	int rc;

	if (!et || w < 0)
		return 0;
	for (i = 0; i < m->nkeys; i++) {
		unsigned char *v;
		size_t e;

		/* a key never written gets a (zero) entry to hang the
		 * subscription on */
		if ((rc = ps_store_get(st, ps_msg_key(m, i), &v, err)))
			return rc;
		e = ps_store_entry(st, v);
		if ((rc = eager_fit(s, et, e + 1, err)))
			return rc;
		et->sub[e * s->sub_words + (uint64_t)w / 64] |=
			1ull << ((uint64_t)w % 64);
	}
	return 0;
}

struct keyed {
	uint64_t key;
	size_t entry;
};

static int cmp_keyed(const void *a, const void *b)
{
	uint64_t x = ((const struct keyed *)a)->key;
	uint64_t y = ((const struct keyed *)b)->key;

	return (x > y) - (x < y);
}

/* One EAGER of table t to worker w: the dirty entries it subscribed to. */
static int eager_send(struct ps_server *s, uint32_t t, uint32_t w,
		      const struct keyed *kd, size_t n, uint64_t left,
		      uint64_t *keys, unsigned char *vals,
		      struct parsa_err *err)
{
	const struct ps_layout *l = &s->ep.cl->layout;
	struct ps_eager_tbl *et = s->eager[t];
	struct ps_store *st = s->store[t];
	uint32_t width = ps_store_width(st), dst;
	const unsigned char *all = ps_store_values(st);
	struct ps_msg h = { 0 };
	size_t i, m = 0;
	int cls, rc;
	size_t before;

	for (i = 0; i < n; i++) {
		const uint64_t *sub = et->sub + kd[i].entry * s->sub_words;

		if (!(sub[w / 64] >> (w % 64) & 1))
			continue;
		keys[m] = kd[i].key;
		memcpy(vals + m * width, all + kd[i].entry * width, width);
		m++;
	}
	dst = ps_layout_worker_node(l, w);
	h.type = PS_MSG_EAGER;
	h.table = t;
	h.flags = PS_MSGF_CLOCK;
	h.clock = s->clock;
	h.aux = left;
	h.nkeys = m;
	h.value_bytes = width;
	cls = ps_layout_machine(l, dst) == s->ep.machine ? PS_LOCAL
							 : PS_REMOTE;
	before = (size_t)s->ep.cnt.bytes_sent[cls];
	rc = ps_ep_send(&s->ep, dst, &h, keys, vals, NULL, err);
	s->eager_msgs[cls]++;
	s->eager_bytes[cls] += s->ep.cnt.bytes_sent[cls] - before;
	s->eager_keys += m;
	return rc;
}

/* After the clock advanced: every worker gets every eager table's changed
 * keys it uses (maybe none) as a snapshot of the new clock. */
static int eager_round(struct ps_server *s, struct parsa_err *err)
{
	const struct ps_cluster *cl = s->ep.cl;
	uint32_t t, w, eager = 0, k = 0;
	int rc = 0;

	for (t = 0; t < cl->num_tables; t++)
		eager += s->eager[t] != NULL;
	for (t = 0; !rc && t < cl->num_tables; t++) {
		struct ps_eager_tbl *et = s->eager[t];
		struct ps_store *st = s->store[t];
		const uint64_t *skeys = ps_store_keys(st);
		struct keyed *kd;
		uint64_t *keys;
		unsigned char *vals;
		size_t i, n;

		if (!et)
			continue;
		n = et->nlist;
		kd = malloc((n + 1) * sizeof(*kd));
		keys = malloc((n + 1) * sizeof(uint64_t));
		vals = malloc((n + 1) * ps_store_width(st));
		if (!kd || !keys || !vals) {
			free(kd);
			free(keys);
			free(vals);
			return parsa_fail(err, PARSA_ENOMEM, "eager round");
		}
		for (i = 0; i < n; i++) {
			kd[i].entry = et->list[i];
			kd[i].key = skeys[et->list[i]];
			et->dirty[et->list[i]] = 0;
		}
		et->nlist = 0;
		qsort(kd, n, sizeof(*kd), cmp_keyed);
		k++;
		for (w = 0; !rc && w < cl->layout.num_workers; w++)
			rc = eager_send(s, t, w, kd, n, eager - k, keys, vals,
					err);
		free(kd);
		free(keys);
		free(vals);
	}
	return rc;
}

int ps_consist_on_clock_msg(struct ps_server *s, const struct ps_rx *rx,
			    struct parsa_err *err)
{
	const struct ps_cluster *cl = s->ep.cl;
	int64_t w = worker_of(s, rx->m.src), low;
	uint32_t i;
	int rc = 0;

	if (!ps_clocked(cl) || w < 0)
		return ps_ep_protocol(&s->ep, rx, "CLOCK outside ssp/essp or "
				      "not from a worker", err);
	if (rx->m.clock != s->done[w] + 1)
		return ps_ep_protocol(&s->ep, rx, "clocks out of order", err);
	s->done[w] = rx->m.clock;
	low = s->done[0];
	for (i = 1; i < cl->layout.num_workers; i++)
		low = s->done[i] < low ? s->done[i] : low;
	if (low <= s->clock)
		return 0;
	while (!rc && s->clock < low) {
		if (s->on_clock)
			rc = s->on_clock(s, s->clock, s->on_clock_arg, err);
		if (!rc)
			s->clock++;
	}
	if (!rc && cl->consistency == PS_CONS_ESSP)
		rc = eager_round(s, err);
	if (!rc)
		rc = unpark(s, err);
	return rc;
}
