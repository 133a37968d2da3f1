/*
 * ps_client: requests of a worker or the scheduler: push, pull, server
 * hooks, timestamps, waits and the bounded-delay window.
 *
 * Outstanding requests sit in a ring ordered by timestamp; a request is
 * split into one part per owning server and completes when every part was
 * answered.  Completed requests leave the ring from the front, so the front
 * is always the oldest incomplete request.  Replies are only processed
 * while the client is inside one of these calls (no extra thread).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ps_internal.h"

/* Context of a ps_call_hook waiting on the caller's stack. */
struct hook_ctx {
	ps_hook_reply_fn fn;
	void *arg;
	int rc;
	struct parsa_err err;
};

/* ---- node lifecycle ---- */

struct ps_node *ps_node_create(const struct ps_cluster *cl,
			       struct ps_transport *tp, uint32_t node,
			       struct parsa_err *err)
{
	struct ps_node *c;
	uint32_t idx;
	enum ps_role role;

	if (node >= ps_layout_nodes(&cl->layout) ||
	    !ps_transport_is_local(tp, node)) {
		parsa_fail(err, PARSA_EINVAL, "node %u is not hosted here",
			   node);
		return NULL;
	}
	role = ps_layout_role(&cl->layout, node, &idx);
	if (role == PS_ROLE_SERVER) {
		parsa_fail(err, PARSA_EINVAL, "node %u is a server", node);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		parsa_fail(err, PARSA_ENOMEM, "node");
		return NULL;
	}
	ps_ep_init(&c->ep, cl, tp, node);
	c->first_ts = c->next_ts = 1;
	c->pend_words = (cl->layout.num_servers + 63) / 64;
	c->tau = cl->tau;
	c->iter = -1;
	if (role == PS_ROLE_WORKER && cl->consistency == PS_CONS_ESSP) {
		c->eclock = calloc(cl->layout.num_servers, sizeof(int64_t));
		if (!c->eclock) {
			free(c);
			parsa_fail(err, PARSA_ENOMEM, "node");
			return NULL;
		}
	}
	if (role == PS_ROLE_SCHEDULER && ps_sched_state_init(c, err)) {
		free(c);
		return NULL;
	}
	return c;
}

void ps_node_destroy(struct ps_node *c)
{
	struct ps_rx *t, *next;
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->count; i++)
		free(c->ring[(c->head + i) % c->cap].pending);
	free(c->ring);
	for (t = c->tasks_head; t; t = next) {
		next = t->next;
		ps_rx_release(t);
		free(t);
	}
	ps_sched_state_free(c);
	free(c->eclock);
	free(c);
}

enum ps_role ps_node_role(const struct ps_node *n) { return n->ep.role; }
uint32_t ps_node_index(const struct ps_node *n) { return n->ep.index; }
uint32_t ps_node_id(const struct ps_node *n) { return n->ep.id; }

uint32_t ps_num_workers(const struct ps_node *n)
{
	return n->ep.cl->layout.num_workers;
}

uint32_t ps_num_servers(const struct ps_node *n)
{
	return n->ep.cl->layout.num_servers;
}

void ps_node_stats(const struct ps_node *c, struct ps_node_stats *st)
{
	ps_ep_stats(&c->ep, st);
	st->requests = c->requests;
	st->iters = c->iters;
	memcpy(st->stale_hist, c->stale_hist, sizeof(st->stale_hist));
	st->stale_max = c->stale_max;
	st->tau_wait_ns = c->tau_wait_ns;
	st->wait_ns = c->wait_ns;
	st->clock = (uint64_t)c->clock;
	memcpy(st->read_hist, c->read_hist, sizeof(st->read_hist));
	st->read_stale_max = c->read_stale_max;
	memcpy(st->eager_msgs, c->eager_msgs, sizeof(st->eager_msgs));
	memcpy(st->eager_bytes, c->eager_bytes, sizeof(st->eager_bytes));
	st->eager_keys = c->eager_keys;
	st->clock_wait_ns = c->clock_wait_ns;
}

void ps_set_tau(struct ps_node *c, int tau)
{
	c->tau = tau < 0 ? -1 : tau;
}

/* ---- the request ring ---- */

static struct ps_req *req_of(struct ps_node *c, uint64_t ts)
{
	if (ts < c->first_ts || ts >= c->next_ts)
		return NULL;
	return &c->ring[(c->head + (size_t)(ts - c->first_ts)) % c->cap];
}

static int ring_grow(struct ps_node *c, struct parsa_err *err)
{
	size_t cap = c->cap ? 2 * c->cap : 16, i;
	struct ps_req *r = malloc(cap * sizeof(*r));

	if (!r)
		return parsa_fail(err, PARSA_ENOMEM, "request ring %zu", cap);
	for (i = 0; i < c->count; i++)
		r[i] = c->ring[(c->head + i) % c->cap];
	free(c->ring);
	c->ring = r;
	c->cap = cap;
	c->head = 0;
	return 0;
}

static void ring_pop_done(struct ps_node *c)
{
	while (c->count && c->ring[c->head].done) {
		c->head = (c->head + 1) % c->cap;
		c->count--;
		c->first_ts++;
	}
}

/* Append a new, not yet sent request. */
static int req_new(struct ps_node *c, enum ps_req_kind kind,
		   struct ps_req **out, struct parsa_err *err)
{
	struct ps_req *r;
	int rc;

	if (c->count == c->cap && (rc = ring_grow(c, err)))
		return rc;
	r = &c->ring[(c->head + c->count) % c->cap];
	memset(r, 0, sizeof(*r));
	r->pending = calloc(c->pend_words, sizeof(uint64_t));
	if (!r->pending)
		return parsa_fail(err, PARSA_ENOMEM, "request");
	r->ts = c->next_ts++;
	r->iter = c->iter;
	r->kind = kind;
	r->min_clock = -1;
	c->count++;
	c->requests++;
	*out = r;
	return 0;
}

static void req_expect(struct ps_req *r, uint32_t server)
{
	r->pending[server / 64] |= 1ull << (server % 64);
	r->parts_left++;
}

static void req_part_done(struct ps_node *c, struct ps_req *r,
			  uint32_t server)
{
	r->pending[server / 64] &= ~(1ull << (server % 64));
	if (--r->parts_left == 0) {
		r->done = 1;
		free(r->pending);
		r->pending = NULL;
		ring_pop_done(c);
	}
}

/* All parts sent: a request that needed no server is done at once. */
static void req_sent(struct ps_node *c, struct ps_req *r)
{
	if (r->parts_left == 0) {
		r->done = 1;
		free(r->pending);
		r->pending = NULL;
		ring_pop_done(c);
	}
}

static int first_pending(const struct ps_node *c, const struct ps_req *r)
{
	uint32_t s;

	for (s = 0; r->pending && s < c->ep.cl->layout.num_servers; s++)
		if (r->pending[s / 64] >> (s % 64) & 1)
			return (int)s;
	return -1;
}

/* ---- replies ---- */

static int reply_error(const struct ps_rx *rx, struct parsa_err *err)
{
	int code = (int)rx->m.table;

	if (code <= 0 || code >= PARSA_NSTATUS)
		code = PARSA_EIO;
	return parsa_fail(err, code, "%.*s", (int)rx->m.blob_len,
			  rx->m.blob ? (const char *)rx->m.blob : "");
}

/* Count n keys read at clock `at` of a snapshot `snap`. */
static void note_reads(struct ps_node *c, int64_t at, int64_t snap,
		       uint64_t n)
{
	uint64_t s = at > snap ? (uint64_t)(at - snap) : 0;

	if (!n)
		return;
	c->read_hist[s < PS_STALE_BUCKETS ? s : PS_STALE_BUCKETS - 1] += n;
	if (s > c->read_stale_max)
		c->read_stale_max = s;
}

/*
 * The debug check of the consistency models: a reply (or eager push) must
 * be a snapshot of at least the clock the request required.  Always on: a
 * violation is a bug of the parameter server, and fails the run.
 */
static int check_snapshot(struct ps_node *c, const struct ps_rx *rx,
			  int64_t need, struct parsa_err *err)
{
	char who[48];

	if (need < 0)
		return 0;
	if ((rx->m.flags & PS_MSGF_CLOCK) && rx->m.clock >= need)
		return 0;
	ps_layout_name(&c->ep.cl->layout, rx->m.src, who, sizeof(who));
	parsa_fail(err, PARSA_ESTATE, "%s: consistency bound violated: %s "
		   "answered %s ts %" PRIu64 " with a snapshot of clock %"
		   PRId64 ", needed %" PRId64, c->ep.name, who,
		   ps_msg_type_name(rx->m.type), rx->m.ts,
		   (rx->m.flags & PS_MSGF_CLOCK) ? rx->m.clock : -1, need);
	ps_transport_fail(c->ep.tp, PARSA_ESTATE, "%s", err->msg);
	return PARSA_ESTATE;
}

/* Copy a pull reply's values into place; -1 if they do not fit. */
static int take_pull(struct ps_req *r, const struct ps_rx *rx)
{
	const struct ps_msg *m = &rx->m;

	if (m->value_bytes != r->width || m->aux > r->nkeys ||
	    m->nkeys > r->nkeys - m->aux)
		return -1;
	if (r->out && m->nkeys)
		memcpy(r->out + m->aux * r->width, m->values,
		       m->nkeys * r->width);
	return 0;
}

static void take_hook(struct ps_req *r, uint32_t server,
		      const struct ps_rx *rx)
{
	struct hook_ctx *h = r->hook;
	int rc;

	if (!h)
		return;
	if (rx->m.flags & PS_MSGF_ERROR) {
		if (!h->rc)
			h->rc = reply_error(rx, &h->err);
		return;
	}
	if (!h->fn || h->rc)
		return;
	rc = h->fn(h->arg, server, rx->m.blob, rx->m.blob_len, &h->err);
	if (rc)
		h->rc = rc;
}

static const uint16_t reply_type[] = {
	[PS_REQ_PUSH] = PS_MSG_PUSH_ACK,
	[PS_REQ_PULL] = PS_MSG_PULL_REPLY,
	[PS_REQ_HOOK] = PS_MSG_HOOK_REPLY,
};

static int take_reply(struct ps_node *c, const struct ps_rx *rx,
		      struct parsa_err *err)
{
	const struct ps_layout *l = &c->ep.cl->layout;
	struct ps_req *r = req_of(c, rx->m.ts);
	uint32_t s = rx->m.src - 1;
	int rc = 0;

	if (rx->m.src == 0 || s >= l->num_servers)
		return ps_ep_protocol(&c->ep, rx, "not from a server", err);
	if (!r || r->done || !(r->pending[s / 64] >> (s % 64) & 1) ||
	    reply_type[r->kind] != rx->m.type)
		return ps_ep_protocol(&c->ep, rx, "no such request open", err);
	if (!(rx->m.flags & PS_MSGF_ERROR) &&
	    (rc = check_snapshot(c, rx, r->min_clock, err)))
		return rc;
	if (r->kind == PS_REQ_HOOK) {
		take_hook(r, s, rx);
	} else if (rx->m.flags & PS_MSGF_ERROR) {
		r->out = NULL; /* the caller gets the error; drop later data */
		rc = reply_error(rx, err);
	} else if (r->kind == PS_REQ_PULL && take_pull(r, rx)) {
		return ps_ep_protocol(&c->ep, rx, "values do not fit the pull",
				      err);
	} else if (r->kind == PS_REQ_PULL && r->min_clock >= 0) {
		note_reads(c, r->use_clock, rx->m.clock, rx->m.nkeys);
	}
	req_part_done(c, r, s);
	return rc;
}

/* ESSP: values a server pushed unasked; a round's last message (aux 0)
 * completes the server's snapshot. */
static int take_eager(struct ps_node *c, const struct ps_rx *rx,
		      struct parsa_err *err)
{
	const struct ps_cluster *cl = c->ep.cl;
	const struct ps_msg *m = &rx->m;
	uint32_t s = m->src - 1;
	const uint64_t *keys = NULL;
	const void *vals = m->values;
	uint64_t *kcopy = NULL;
	int cls, rc = 0;

	if (!c->eclock || m->src == 0 || s >= cl->layout.num_servers)
		return ps_ep_protocol(&c->ep, rx, "eager push outside ESSP or "
				      "not from a server", err);
	if (!cl->tables[m->table].eager ||
	    m->value_bytes != cl->tables[m->table].value_bytes)
		return ps_ep_protocol(&c->ep, rx, "eager push of a table that "
				      "is not eager", err);
	if (m->clock < c->eclock[s])
		return ps_ep_protocol(&c->ep, rx, "eager snapshot older than "
				      "the last one", err);
	cls = ps_layout_machine(&cl->layout, m->src) == c->ep.machine
		      ? PS_LOCAL : PS_REMOTE;
	c->eager_msgs[cls]++;
	c->eager_bytes[cls] += rx->len;
	c->eager_keys += m->nkeys;
	note_reads(c, c->clock, m->clock, m->nkeys);
	if (m->nkeys && c->eager_fn) {
		/* the sections start 8-byte aligned in a malloc'd buffer;
		 * copy the keys anyway if they are not */
		if (((uintptr_t)m->keys & 7) == 0) {
			keys = (const uint64_t *)(const void *)m->keys;
		} else {
			kcopy = malloc(m->nkeys * sizeof(uint64_t));
			if (!kcopy)
				return parsa_fail(err, PARSA_ENOMEM, "eager");
			memcpy(kcopy, m->keys, m->nkeys * sizeof(uint64_t));
			keys = kcopy;
		}
		rc = c->eager_fn(c->eager_arg, m->table, keys, vals,
				 (size_t)m->nkeys, m->clock, err);
		free(kcopy);
		if (rc)
			return rc;
	}
	if (m->aux == 0)
		c->eclock[s] = m->clock;
	return 0;
}

int ps_client_pump(struct ps_node *c, double timeout_s, int *got,
		   struct parsa_err *err)
{
	struct ps_rx rx;
	int rc = ps_ep_recv(&c->ep, timeout_s, &rx, err);

	*got = rx.buf != NULL;
	if (rc || !rx.buf)
		return rc;
	switch (rx.m.type) {
	case PS_MSG_PUSH_ACK:
	case PS_MSG_PULL_REPLY:
	case PS_MSG_HOOK_REPLY:
		rc = take_reply(c, &rx, err);
		ps_rx_release(&rx);
		return rc;
	case PS_MSG_EAGER:
		rc = take_eager(c, &rx, err);
		ps_rx_release(&rx);
		return rc;
	default:
		if (c->ep.role == PS_ROLE_SCHEDULER)
			return ps_sched_other(c, &rx, err);
		return ps_worker_other(c, &rx, err);
	}
}

/* ---- waiting ---- */

static int timeout_error(struct ps_node *c, uint64_t blame_ts,
			 struct parsa_err *err)
{
	static const char *const kind[] = { "push", "pull", "hook" };
	struct ps_req *r = req_of(c, blame_ts);
	char who[48] = "a server";
	int s;

	if (!r || r->done)
		r = c->count ? &c->ring[c->head] : NULL;
	s = r ? first_pending(c, r) : -1;
	if (s >= 0)
		ps_layout_name(&c->ep.cl->layout,
			       ps_layout_server_node(&c->ep.cl->layout,
						     (uint32_t)s),
			       who, sizeof(who));
	return parsa_fail(err, PARSA_EMPI, "%s: no reply from %s within %.1f "
			  "s (%s request ts %" PRIu64 ")", c->ep.name, who,
			  c->ep.cl->timeout_s, r ? kind[r->kind] : "?",
			  r ? r->ts : 0);
}

int ps_client_wait(struct ps_node *c, int (*pred)(struct ps_node *, uint64_t),
		   uint64_t arg, int timed, struct parsa_err *err)
{
	double limit = c->ep.cl->timeout_s, last = ps_clock_now();
	int rc, got;

	while (!pred(c, arg)) {
		double left = timed ? last + limit - ps_clock_now() : -1;

		if (timed && left <= 0)
			return timeout_error(c, arg, err);
		rc = ps_client_pump(c, left, &got, err);
		if (rc)
			return rc;
		if (got)
			last = ps_clock_now();
	}
	return 0;
}

static int pred_done(struct ps_node *c, uint64_t ts)
{
	struct ps_req *r = req_of(c, ts);

	return !r || r->done;
}

static int pred_all(struct ps_node *c, uint64_t unused)
{
	(void)unused;
	return c->count == 0;
}

int ps_wait(struct ps_node *c, uint64_t ts, struct parsa_err *err)
{
	uint64_t t0 = ps_now_ns();
	int rc;

	if (ts == 0 || ts >= c->next_ts)
		return parsa_fail(err, PARSA_EINVAL, "%s: wait for unknown "
				  "timestamp %" PRIu64, c->ep.name, ts);
	rc = ps_client_wait(c, pred_done, ts, 1, err);
	c->wait_ns += ps_now_ns() - t0;
	return rc;
}

int ps_wait_all(struct ps_node *c, struct parsa_err *err)
{
	uint64_t t0 = ps_now_ns();
	int rc = ps_client_wait(c, pred_all, 0, 1, err);

	c->wait_ns += ps_now_ns() - t0;
	return rc;
}

/* ---- bounded delay ---- */

/* Iteration t may start: the oldest incomplete request is from >= t-tau. */
static int pred_window(struct ps_node *c, uint64_t t)
{
	if (c->tau < 0 || c->count == 0)
		return 1;
	return c->ring[c->head].iter >= (int64_t)t - c->tau;
}

/* Distinct earlier iterations with an incomplete request. */
static uint64_t count_stale(const struct ps_node *c, int64_t t)
{
	uint64_t n = 0;
	int64_t last = INT64_MIN;
	size_t i;

	for (i = 0; i < c->count; i++) {
		const struct ps_req *r = &c->ring[(c->head + i) % c->cap];

		if (!r->done && r->iter < t && r->iter != last) {
			n++;
			last = r->iter;
		}
	}
	return n;
}

int ps_iter_begin(struct ps_node *c, int64_t *iter, struct parsa_err *err)
{
	int64_t t = c->iter + 1;
	uint64_t t0, stale;
	int rc, got;

	do { /* take in every reply that already arrived */
		rc = ps_client_pump(c, 0, &got, err);
	} while (!rc && got);
	t0 = ps_now_ns();
	if (!rc)
		rc = ps_client_wait(c, pred_window, (uint64_t)t, 1, err);
	c->tau_wait_ns += ps_now_ns() - t0;
	if (rc)
		return rc;
	stale = count_stale(c, t);
	c->stale_hist[stale < PS_STALE_BUCKETS ? stale
					       : PS_STALE_BUCKETS - 1]++;
	if (stale > c->stale_max)
		c->stale_max = stale;
	c->iter = t;
	c->iters++;
	if (iter)
		*iter = t;
	return 0;
}

/* ---- push / pull ---- */

static int check_request(struct ps_node *c, uint32_t table,
			 const uint64_t *keys, size_t n,
			 struct parsa_err *err)
{
	size_t i;

	if (table >= c->ep.cl->num_tables)
		return parsa_fail(err, PARSA_EINVAL, "%s: table %u of %u",
				  c->ep.name, table, c->ep.cl->num_tables);
	for (i = 1; i < n; i++)
		if (keys[i] <= keys[i - 1])
			return parsa_fail(err, PARSA_EINVAL, "%s: keys not "
					  "sorted and unique at index %zu",
					  c->ep.name, i);
	return 0;
}

/* Send r's parts: one message per server owning some of keys. */
static int send_parts(struct ps_node *c, struct ps_req *r, struct ps_msg *h,
		      const uint64_t *keys, size_t n, const unsigned char *vals,
		      struct parsa_err *err)
{
	const struct ps_cluster *cl = c->ep.cl;
	size_t lo = 0, hi;
	uint32_t s;
	int rc = 0;

	for (s = 0; !rc && lo < n && s < cl->layout.num_servers; s++, lo = hi) {
		hi = ps_ranges_slice_end(&cl->ranges, s, keys, n);
		if (hi == lo)
			continue;
		h->aux = lo;
		h->nkeys = hi - lo;
		rc = ps_ep_send(&c->ep, ps_layout_server_node(&cl->layout, s),
				h, keys + lo, vals ? vals + lo * h->value_bytes
						   : NULL, NULL, err);
		if (!rc)
			req_expect(r, s);
	}
	return rc;
}

int ps_push_op(struct ps_node *c, uint32_t table, int op,
	       const uint64_t *keys, size_t n, const void *vals, uint64_t *ts,
	       struct parsa_err *err)
{
	struct ps_msg h = { 0 };
	struct ps_req *r;
	int rc = check_request(c, table, keys, n, err);

	if (!rc)
		rc = ps_op_check(op, c->ep.cl->tables[table].value_bytes, err);
	if (!rc)
		rc = req_new(c, PS_REQ_PUSH, &r, err);
	if (rc)
		return rc;
	h.type = PS_MSG_PUSH;
	h.table = table;
	h.flags = (uint32_t)op;
	h.ts = r->ts;
	h.value_bytes = c->ep.cl->tables[table].value_bytes;
	*ts = r->ts;
	rc = send_parts(c, r, &h, keys, n, vals, err);
	req_sent(c, r);
	return rc;
}

int ps_push(struct ps_node *c, uint32_t table, const uint64_t *keys,
	    size_t n, const void *vals, uint64_t *ts, struct parsa_err *err)
{
	if (table >= c->ep.cl->num_tables)
		return parsa_fail(err, PARSA_EINVAL, "%s: table %u of %u",
				  c->ep.name, table, c->ep.cl->num_tables);
	return ps_push_op(c, table, c->ep.cl->tables[table].op, keys, n, vals,
			  ts, err);
}

/* A worker under SSP/ESSP: its reads and hooks carry clocks. */
static int clocked_worker(const struct ps_node *c)
{
	return c->ep.role == PS_ROLE_WORKER && ps_clocked(c->ep.cl);
}

int ps_pull(struct ps_node *c, uint32_t table, const uint64_t *keys,
	    size_t n, void *out, uint64_t *ts, struct parsa_err *err)
{
	return ps_pull_for(c, table, keys, n, out, c->clock, ts, err);
}

int ps_pull_for(struct ps_node *c, uint32_t table, const uint64_t *keys,
		size_t n, void *out, int64_t use, uint64_t *ts,
		struct parsa_err *err)
{
	struct ps_msg h = { 0 };
	struct ps_req *r;
	int64_t need = -1;
	int rc = check_request(c, table, keys, n, err);

	if (!rc && clocked_worker(c)) {
		need = use - c->ep.cl->staleness;
		if (use < c->clock || need > c->clock)
			rc = parsa_fail(err, PARSA_EINVAL, "%s: pull for clock "
					"%" PRId64 " at clock %" PRId64
					" (staleness %d)", c->ep.name, use,
					c->clock, c->ep.cl->staleness);
		need = need < 0 ? 0 : need;
	}
	if (!rc)
		rc = req_new(c, PS_REQ_PULL, &r, err);
	if (rc)
		return rc;
	r->out = out;
	r->nkeys = n;
	r->width = c->ep.cl->tables[table].value_bytes;
	h.type = PS_MSG_PULL;
	h.table = table;
	h.ts = r->ts;
	if (need >= 0) {
		r->min_clock = need;
		r->use_clock = use;
		h.flags |= PS_MSGF_CLOCK;
		h.clock = need;
	}
	*ts = r->ts;
	rc = send_parts(c, r, &h, keys, n, NULL, err);
	req_sent(c, r);
	return rc;
}

/* ---- server hooks ---- */

static int send_hook(struct ps_node *c, struct ps_req *r, int server,
		     uint32_t hook, const void *req, size_t len,
		     struct parsa_err *err)
{
	const struct ps_layout *l = &c->ep.cl->layout;
	struct ps_msg h = { 0 };
	uint32_t s;
	int rc = 0;

	h.type = PS_MSG_HOOK;
	h.ts = r->ts;
	h.aux = hook;
	h.blob_len = (uint32_t)len;
	if (clocked_worker(c)) {
		r->min_clock = c->clock;
		h.flags |= PS_MSGF_CLOCK;
		h.clock = c->clock;
	}
	for (s = 0; !rc && s < l->num_servers; s++) {
		if (server != PS_ALL && (uint32_t)server != s)
			continue;
		rc = ps_ep_send(&c->ep, ps_layout_server_node(l, s), &h, NULL,
				NULL, req, err);
		if (!rc)
			req_expect(r, s);
	}
	return rc;
}

int ps_call_hook(struct ps_node *c, int server, uint32_t hook,
		 const void *req, size_t len, ps_hook_reply_fn on_reply,
		 void *arg, struct parsa_err *err)
{
	struct hook_ctx h = { on_reply, arg, 0, { 0 } };
	struct ps_req *r;
	uint64_t ts;
	int rc;

	if ((server != PS_ALL &&
	     (server < 0 || (uint32_t)server >= ps_num_servers(c))) ||
	    hook >= PS_MAX_HOOKS || len > PS_MSG_MAX_PAYLOAD)
		return parsa_fail(err, PARSA_EINVAL, "%s: hook %u on server "
				  "%d, %zu request bytes", c->ep.name, hook,
				  server, len);
	rc = req_new(c, PS_REQ_HOOK, &r, err);
	if (rc)
		return rc;
	r->hook = &h;
	ts = r->ts;
	rc = send_hook(c, r, server, hook, req, len, err);
	req_sent(c, r);
	if (!rc)
		rc = ps_client_wait(c, pred_done, ts, 1, err);
	r = req_of(c, ts);
	if (r) /* still open (error): h dies with this frame */
		r->hook = NULL;
	if (!rc && h.rc)
		rc = parsa_fail(err, h.rc, "%s", h.err.msg);
	return rc;
}

/* ---- consistency models: clocks ---- */

int64_t ps_node_clock(const struct ps_node *w) { return w->clock; }

int ps_node_staleness(const struct ps_node *w)
{
	return ps_clocked(w->ep.cl) ? w->ep.cl->staleness : w->tau;
}

void ps_set_eager_handler(struct ps_node *w, ps_eager_fn fn, void *arg)
{
	w->eager_fn = fn;
	w->eager_arg = arg;
}

int ps_clock(struct ps_node *w, struct parsa_err *err)
{
	const struct ps_layout *l = &w->ep.cl->layout;
	struct ps_msg h = { 0 };
	uint32_t s;
	int rc = 0;

	if (!clocked_worker(w))
		return parsa_fail(err, PARSA_ESTATE, "%s: ps_clock needs a "
				  "worker under ssp or essp", w->ep.name);
	h.type = PS_MSG_CLOCK;
	h.flags = PS_MSGF_CLOCK;
	h.clock = w->clock + 1;
	for (s = 0; !rc && s < l->num_servers; s++)
		rc = ps_ep_send(&w->ep, ps_layout_server_node(l, s), &h, NULL,
				NULL, NULL, err);
	if (!rc)
		w->clock++;
	return rc;
}

static int pred_eager(struct ps_node *w, uint64_t min)
{
	uint32_t s;

	for (s = 0; s < w->ep.cl->layout.num_servers; s++)
		if (w->eclock[s] < (int64_t)min)
			return 0;
	return 1;
}

int ps_eager_wait(struct ps_node *w, int64_t min_clock, struct parsa_err *err)
{
	uint64_t t0;
	int rc, got;

	if (!w->eclock)
		return parsa_fail(err, PARSA_ESTATE, "%s: ps_eager_wait needs "
				  "a worker under essp", w->ep.name);
	if (min_clock > w->clock)
		return parsa_fail(err, PARSA_EINVAL, "%s: eager wait for "
				  "snapshot %" PRId64 " at clock %" PRId64,
				  w->ep.name, min_clock, w->clock);
	do { /* take in (apply) every push that already arrived */
		rc = ps_client_pump(w, 0, &got, err);
	} while (!rc && got);
	if (rc || min_clock <= 0)
		return rc;
	t0 = ps_now_ns();
	rc = ps_client_wait(w, pred_eager, (uint64_t)min_clock, 1, err);
	w->clock_wait_ns += ps_now_ns() - t0;
	return rc;
}
