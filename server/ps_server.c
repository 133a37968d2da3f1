/*
 * ps_server: one server node: its key range, one store per table, the
 * registered server-side functions (hooks), and the request loop.
 *
 * A bad request (wrong width, key outside the range, unknown hook, failing
 * hook) is answered with an error reply, so the requester's call fails with
 * the server's message; a malformed or unexpected message is a protocol
 * violation and stops the cluster.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ps_internal.h"

/* Keys from the start of a server's range indexed directly (4 bytes each,
 * allocated up to the largest key stored). */
#define PS_STORE_WINDOW (1ULL << 26)


struct ps_server *ps_server_create(const struct ps_cluster *cl,
				   struct ps_transport *tp, uint32_t index,
				   struct parsa_err *err)
{
	uint32_t node = ps_layout_server_node(&cl->layout, index), t;
	struct ps_server *s;

	if (index >= cl->layout.num_servers || !ps_transport_is_local(tp, node)) {
		parsa_fail(err, PARSA_EINVAL, "server %u is not hosted here",
			   index);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		parsa_fail(err, PARSA_ENOMEM, "server");
		return NULL;
	}
	ps_ep_init(&s->ep, cl, tp, node);
	ps_ranges_bounds(&cl->ranges, index, &s->lo, &s->hi, &s->empty);
	for (t = 0; t < cl->num_tables; t++) {
		s->store[t] = ps_store_create(cl->tables[t].value_bytes, err);
		if (!s->store[t]) {
			ps_server_destroy(s);
			return NULL;
		}
		/* the start of the own range is indexed directly (it grows
		 * only as far as the keys actually stored) */
		if (!s->empty)
			ps_store_set_window(s->store[t], s->lo,
					    s->hi - s->lo < PS_STORE_WINDOW
						    ? s->hi - s->lo + 1
						    : PS_STORE_WINDOW);
	}
	if (ps_consist_init(s, err)) {
		ps_server_destroy(s);
		return NULL;
	}
	return s;
}

void ps_server_destroy(struct ps_server *s)
{
	uint32_t t;

	if (!s)
		return;
	for (t = 0; t < PS_MAX_TABLES; t++)
		ps_store_destroy(s->store[t]);
	ps_consist_free(s);
	free(s);
}

uint32_t ps_server_index(const struct ps_server *s) { return s->ep.index; }

uint32_t ps_server_num_servers(const struct ps_server *s)
{
	return s->ep.cl->layout.num_servers;
}

void ps_server_range(const struct ps_server *s, uint64_t *lo, uint64_t *hi,
		     int *empty)
{
	*lo = s->lo;
	*hi = s->hi;
	*empty = s->empty;
}

void ps_server_stats(const struct ps_server *s, struct ps_node_stats *st)
{
	ps_ep_stats(&s->ep, st);
	st->clock = (uint64_t)(s->clock > 0 ? s->clock : 0);
	st->parked = s->parked;
	memcpy(st->eager_msgs, s->eager_msgs, sizeof(st->eager_msgs));
	memcpy(st->eager_bytes, s->eager_bytes, sizeof(st->eager_bytes));
	st->eager_keys = s->eager_keys;
}

void ps_server_on_clock(struct ps_server *s, ps_clock_fn fn, void *arg)
{
	s->on_clock = fn;
	s->on_clock_arg = arg;
}

int ps_server_mark_updated(struct ps_server *s, uint32_t table, uint64_t key,
			   struct parsa_err *err)
{
	const unsigned char *v;

	if (table >= s->ep.cl->num_tables)
		return parsa_fail(err, PARSA_EINVAL, "table %u of %u", table,
				  s->ep.cl->num_tables);
	if (!s->eager[table] || !(v = ps_store_find(s->store[table], key)))
		return 0;
	return ps_consist_dirty(s, table, v, err);
}

int ps_server_register_hook(struct ps_server *s, uint32_t hook,
			    ps_hook_fn fn, void *arg, struct parsa_err *err)
{
	if (hook >= PS_MAX_HOOKS || !fn)
		return parsa_fail(err, PARSA_EINVAL, "hook id %u (max %d)",
				  hook, PS_MAX_HOOKS - 1);
	s->hooks[hook].fn = fn;
	s->hooks[hook].arg = arg;
	return 0;
}

int ps_reply_append(struct ps_reply *r, const void *data, size_t len,
		    struct parsa_err *err)
{
	if (len > PS_MSG_MAX_PAYLOAD - r->len)
		return parsa_fail(err, PARSA_ERANGE, "hook response over %llu "
				  "bytes", (unsigned long long)PS_MSG_MAX_PAYLOAD);
	if (r->len + len > r->cap) {
		size_t cap = r->cap ? r->cap : 256;
		unsigned char *b;

		while (cap < r->len + len)
			cap *= 2;
		b = realloc(r->buf, cap);
		if (!b)
			return parsa_fail(err, PARSA_ENOMEM, "hook response");
		r->buf = b;
		r->cap = cap;
	}
	if (len)
		memcpy(r->buf + r->len, data, len);
	r->len += len;
	return 0;
}

int ps_server_table(struct ps_server *s, uint32_t table,
		    const uint64_t **keys, unsigned char **values, size_t *n,
		    uint32_t *width, struct parsa_err *err)
{
	if (table >= s->ep.cl->num_tables)
		return parsa_fail(err, PARSA_EINVAL, "table %u of %u", table,
				  s->ep.cl->num_tables);
	*keys = ps_store_keys(s->store[table]);
	*values = ps_store_values(s->store[table]);
	*n = ps_store_size(s->store[table]);
	if (width)
		*width = ps_store_width(s->store[table]);
	return 0;
}

int ps_server_table_take(struct ps_server *s, uint32_t table,
			 uint64_t **keys, unsigned char **values, size_t *n,
			 uint32_t *width, struct parsa_err *err)
{
	if (table >= s->ep.cl->num_tables)
		return parsa_fail(err, PARSA_EINVAL, "table %u of %u", table,
				  s->ep.cl->num_tables);
	if (s->eager[table])
		return parsa_fail(err, PARSA_ESTATE, "table %u is eager (ESSP):"
				  " its entries cannot be taken", table);
	if (width)
		*width = ps_store_width(s->store[table]);
	ps_store_take(s->store[table], keys, values, n);
	return 0;
}

int ps_server_value(struct ps_server *s, uint32_t table, uint64_t key,
		    int create, unsigned char **val, struct parsa_err *err)
{
	*val = NULL;
	if (table >= s->ep.cl->num_tables)
		return parsa_fail(err, PARSA_EINVAL, "table %u of %u", table,
				  s->ep.cl->num_tables);
	if (!create) {
		*val = ps_store_find(s->store[table], key);
		return 0;
	}
	return ps_store_get(s->store[table], key, val, err);
}

/* ---- requests ---- */

static int check_keys_owned(const struct ps_server *s, const struct ps_msg *m,
			    struct parsa_err *why)
{
	uint64_t first = ps_msg_key(m, 0), last = ps_msg_key(m, m->nkeys - 1);

	if (s->empty || first < s->lo || last > s->hi)
		return parsa_fail(why, PARSA_EINVAL, "keys %" PRIu64 "..%"
				  PRIu64 " outside own range %" PRIu64 "..%"
				  PRIu64 "%s", first, last, s->lo, s->hi,
				  s->empty ? " (empty)" : "");
	return 0;
}

static void artificial_delay(const struct ps_server *s)
{
	double d = s->ep.cl->server_delay_s;
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int apply_push(struct ps_server *s, const struct ps_msg *m,
		      struct parsa_err *why)
{
	struct ps_store *st = s->store[m->table];
	uint32_t w = ps_store_width(st), op = m->flags & PS_MSGF_OP_MASK;
	uint64_t i;
	unsigned char *v;
	int rc;

	if (m->value_bytes != w)
		return parsa_fail(why, PARSA_EINVAL, "table %u has %u-byte "
				  "values, push has %u", m->table, w,
				  m->value_bytes);
	if ((rc = ps_op_check((int)op, w, why)) ||
	    (rc = check_keys_owned(s, m, why)))
		return rc;
	for (i = 0; i < m->nkeys; i++) {
		rc = ps_store_get(st, ps_msg_key(m, i), &v, why);
		if (rc)
			return rc;
		ps_op_merge((int)op, v, m->values + i * w, w);
		if (s->eager[m->table] &&
		    (rc = ps_consist_dirty(s, m->table, v, why)))
			return rc;
	}
	return 0;
}

static int handle_push(struct ps_server *s, const struct ps_rx *rx,
		       struct parsa_err *err)
{
	struct parsa_err why = { 0 };
	struct ps_msg r = { 0 };

	artificial_delay(s);
	if (apply_push(s, &rx->m, &why))
		return ps_ep_reply_error(&s->ep, rx, PS_MSG_PUSH_ACK, &why,
					 err);
	r.type = PS_MSG_PUSH_ACK;
	r.table = rx->m.table;
	r.ts = rx->m.ts;
	r.aux = rx->m.aux;
	return ps_ep_send(&s->ep, rx->m.src, &r, NULL, NULL, NULL, err);
}

static int handle_pull(struct ps_server *s, const struct ps_rx *rx,
		       struct parsa_err *err)
{
	struct parsa_err why = { 0 };
	const struct ps_store *st = s->store[rx->m.table];
	struct ps_msg r = { 0 };
	unsigned char *out;
	const unsigned char *v;
	uint32_t w = ps_store_width(st);
	uint64_t i;
	void *buf;
	size_t len;
	int rc;

	artificial_delay(s);
	if (check_keys_owned(s, &rx->m, &why))
		return ps_ep_reply_error(&s->ep, rx, PS_MSG_PULL_REPLY, &why,
					 err);
	r.type = PS_MSG_PULL_REPLY;
	r.src = s->ep.id;
	r.dst = rx->m.src;
	r.table = rx->m.table;
	r.flags = PS_MSGF_NOKEYS;
	r.ts = rx->m.ts;
	r.aux = rx->m.aux;
	r.nkeys = rx->m.nkeys;
	r.value_bytes = w;
	if (rx->m.flags & PS_MSGF_CLOCK) {
		r.flags |= PS_MSGF_CLOCK;
		r.clock = s->clock;
		if (s->eager[rx->m.table] &&
		    (rc = ps_consist_subscribe(s, &rx->m, err)))
			return rc;
	}
	rc = ps_msg_encode(&r, NULL, NULL, NULL, &buf, &len, err);
	if (rc)
		return rc;
	out = ps_msg_values_mut(buf); /* zero-filled: absent keys read 0 */
	for (i = 0; i < rx->m.nkeys; i++)
		if ((v = ps_store_find(st, ps_msg_key(&rx->m, i))))
			memcpy(out + i * w, v, w);
	return ps_ep_send_buf(&s->ep, rx->m.src, buf, len, err);
}

static int handle_hook(struct ps_server *s, const struct ps_rx *rx,
		       struct parsa_err *err)
{
	struct parsa_err why = { 0 };
	struct ps_reply reply = { 0 };
	struct ps_msg r = { 0 };
	const struct hook_slot *h = rx->m.aux < PS_MAX_HOOKS
				    ? &s->hooks[rx->m.aux] : NULL;
	int rc;

	if (!h || !h->fn)
		parsa_fail(&why, PARSA_EINVAL, "no hook %" PRIu64
			   " registered", rx->m.aux);
	else if ((rc = h->fn(s, rx->m.blob, rx->m.blob_len, &reply, h->arg,
			     &why)) && !why.code)
		parsa_fail(&why, rc, "hook %" PRIu64 " failed: %s", rx->m.aux,
			   parsa_strerror(rc));
	if (why.code) {
		free(reply.buf);
		return ps_ep_reply_error(&s->ep, rx, PS_MSG_HOOK_REPLY, &why,
					 err);
	}
	r.type = PS_MSG_HOOK_REPLY;
	r.ts = rx->m.ts;
	r.aux = rx->m.aux;
	r.blob_len = (uint32_t)reply.len;
	if (rx->m.flags & PS_MSGF_CLOCK) {
		r.flags = PS_MSGF_CLOCK;
		r.clock = s->clock;
	}
	rc = ps_ep_send(&s->ep, rx->m.src, &r, NULL, NULL, reply.buf, err);
	free(reply.buf);
	return rc;
}

static int handle_shutdown(struct ps_server *s, const struct ps_rx *rx,
			   struct parsa_err *err)
{
	struct ps_node_stats st;
	struct ps_msg r = { 0 };

	if (rx->m.src != 0)
		return ps_ep_protocol(&s->ep, rx, "only the scheduler may "
				      "shut down", err);
	ps_server_stats(s, &st);
	r.type = PS_MSG_SHUTDOWN_ACK;
	r.blob_len = sizeof(st);
	s->shutdown = 1;
	return ps_ep_send(&s->ep, 0, &r, NULL, NULL, &st, err);
}

int ps_server_answer(struct ps_server *s, const struct ps_rx *rx,
		     struct parsa_err *err)
{
	return rx->m.type == PS_MSG_PULL ? handle_pull(s, rx, err)
					 : handle_hook(s, rx, err);
}

/* rx is released here unless a clocked request was parked (stolen). */
static int dispatch(struct ps_server *s, struct ps_rx *rx,
		    struct parsa_err *err)
{
	int rc, parked = 0;

	switch (rx->m.type) {
	case PS_MSG_PUSH: rc = handle_push(s, rx, err); break;
	case PS_MSG_PULL:
	case PS_MSG_HOOK:
		rc = ps_consist_park(s, rx, &parked, err);
		if (!rc && !parked)
			rc = ps_server_answer(s, rx, err);
		break;
	case PS_MSG_CLOCK: rc = ps_consist_on_clock_msg(s, rx, err); break;
	case PS_MSG_SHUTDOWN: rc = handle_shutdown(s, rx, err); break;
	default:
		rc = ps_ep_protocol(&s->ep, rx, "not a server message", err);
	}
	if (!parked)
		ps_rx_release(rx);
	return rc;
}

int ps_server_serve(struct ps_server *s, struct parsa_err *err)
{
	struct ps_rx rx;
	int rc = 0;

	while (!rc && !s->shutdown) {
		rc = ps_ep_recv(&s->ep, -1, &rx, err);
		if (rc || !rx.buf)
			continue;
		rc = dispatch(s, &rx, err);
	}
	return rc;
}
