/*
 * test_ps_threads: the parameter server on the in-process transport.
 *
 * Wire format, key ranges, merge semantics (OR of 1..1024-bit masks, float
 * and double ADD, OVERWRITE), key-space edges, the bounded-delay window and
 * its staleness histogram, concurrent workers, local/remote counters,
 * scheduler tasks/progress/barriers/shutdown, server hooks, and failures
 * (malformed messages, a server that never answers, a failing worker).
 *
 * Node callbacks run on their own threads: they never touch the harness;
 * they return an error (with a message) that ps_run_threads hands back.
 * Also run under -fsanitize=thread and address,undefined (see server/README).
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include "harness.h"
#include "ps.h"
#include "ps_msg.h"

#define MAXW 8

static int fail_if(int cond, struct parsa_err *err, const char *fmt, ...)
	PARSA_PRINTF(3, 4);

/* Record a check failure from a node thread. */
static int fail_if(int cond, struct parsa_err *err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!cond)
		return 0;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return parsa_fail(err, PARSA_EINVAL, "check failed: %s", msg);
}

static struct ps_config base_config(uint32_t s, uint32_t w)
{
	struct ps_config c;

	memset(&c, 0, sizeof(c));
	c.num_servers = s;
	c.num_workers = w;
	c.timeout_s = 20;
	return c;
}

static void add_table(struct ps_config *c, uint32_t width, int op)
{
	c->tables[c->num_tables].value_bytes = width;
	c->tables[c->num_tables].op = op;
	c->num_tables++;
}

/* Run and check success, printing the error otherwise. */
static int run_ok(const struct ps_config *cfg, const struct ps_app *app,
		  struct ps_result *res)
{
	struct parsa_err err = { 0 };
	int rc = ps_run_threads(cfg, app, res, &err);

	if (rc)
		fprintf(stderr, "  run failed: %s (%s)\n", err.msg,
			parsa_strerror(rc));
	return rc;
}

/* ---------------------------------------------------------------- wire */

static void test_msg_roundtrip(void)
{
	uint64_t keys[3] = { 1, 7, UINT64_MAX }, vals[3] = { 10, 20, 30 };
	struct ps_msg m = { 0 }, d;
	void *buf;
	size_t len;
	char blob[] = "hello";

	m.type = PS_MSG_PUSH;
	m.src = 3;
	m.dst = 1;
	m.flags = PS_OP_ADD_F64;
	m.ts = 42;
	m.aux = 5;
	m.nkeys = 3;
	m.value_bytes = 8;
	m.blob_len = 5;
	REQUIRE(ps_msg_encode(&m, keys, vals, blob, &buf, &len, NULL) == 0);
	CHECK_INT(len, ==, 64 + 3 * 16 + 5);
	CHECK_INT(ps_msg_decode(buf, len, &d, NULL), ==, 0);
	CHECK_INT(d.type, ==, PS_MSG_PUSH);
	CHECK_INT(d.ts, ==, 42);
	CHECK_INT(d.nkeys, ==, 3);
	CHECK(ps_msg_key(&d, 2) == UINT64_MAX);
	CHECK(d.values && memcmp(d.values, vals, 24) == 0);
	CHECK(d.blob && memcmp(d.blob, "hello", 5) == 0);
	free(buf);
}

static int decode_err(const void *b, size_t n, struct parsa_err *e)
{
	struct ps_msg d;

	parsa_err_clear(e);
	return ps_msg_decode(b, n, &d, e);
}

static void test_msg_malformed(void)
{
	uint64_t keys[2] = { 5, 9 };
	struct ps_msg m = { 0 };
	struct parsa_err e;
	unsigned char *b;
	void *buf;
	size_t len, i;

	m.type = PS_MSG_PULL;
	m.src = 4;
	m.dst = 1;
	m.nkeys = 2;
	REQUIRE(ps_msg_encode(&m, keys, NULL, NULL, &buf, &len, NULL) == 0);
	b = buf;
	CHECK_INT(decode_err(b, len, &e), ==, 0);
	for (i = 0; i < len; i++) /* every truncation fails cleanly */
		CHECK_INT(decode_err(b, i, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "length mismatch");
	b[0] ^= 0xff;
	CHECK_INT(decode_err(b, len, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "bad magic");
	b[0] ^= 0xff;
	b[4] = 9; /* version */
	CHECK_INT(decode_err(b, len, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "version");
	b[4] = 1;
	memcpy(b + 64, &keys[1], 8); /* keys 9, 9 */
	CHECK_INT(decode_err(b, len, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "not sorted");
	memcpy(b + 64, &keys[0], 8);
	b[40] = 200; /* key count vs payload */
	CHECK_INT(decode_err(b, len, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "length mismatch");
	b[40] = 2;
	b[6] = 77; /* type */
	CHECK_INT(decode_err(b, len, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "unknown type");
	b[6] = PS_MSG_PULL;
	b[46] = 0xff; /* huge nkeys: overflow guard */
	CHECK_INT(decode_err(b, len, &e), ==, PARSA_EPARSE);
	free(buf);
}

/* -------------------------------------------------------------- ranges */

static void test_ranges_uniform_edges(void)
{
	struct ps_ranges r;
	uint32_t n;
	uint64_t lo, hi;
	int empty;

	for (n = 1; n <= 7; n++) {
		uint32_t i;

		REQUIRE(ps_ranges_init_uniform(&r, n, NULL) == 0);
		CHECK_INT(ps_ranges_owner(&r, 0), ==, 0);
		CHECK_INT(ps_ranges_owner(&r, 1), ==, 0);
		CHECK_INT(ps_ranges_owner(&r, UINT64_MAX), ==, n - 1);
		for (i = 0; i < n; i++) { /* ranges tile the key space */
			ps_ranges_bounds(&r, i, &lo, &hi, &empty);
			CHECK(!empty);
			CHECK_INT(ps_ranges_owner(&r, lo), ==, i);
			CHECK_INT(ps_ranges_owner(&r, hi), ==, i);
			if (i + 1 < n)
				CHECK(hi + 1 == r.start[i + 1]);
			else
				CHECK(hi == UINT64_MAX);
			if (i > 0)
				CHECK_INT(ps_ranges_owner(&r, lo - 1), ==,
					  i - 1);
		}
		ps_ranges_release(&r);
	}
	REQUIRE(ps_ranges_init_uniform(&r, 2, NULL) == 0);
	CHECK(r.start[1] == (1ull << 63));
	CHECK_INT(ps_ranges_owner(&r, (1ull << 63) - 1), ==, 0);
	CHECK_INT(ps_ranges_owner(&r, 1ull << 63), ==, 1);
	ps_ranges_release(&r);
	CHECK_INT(ps_ranges_init_uniform(&r, 0, NULL), ==, PARSA_EINVAL);
}

static void test_ranges_placement(void)
{
	uint64_t sizes[4] = { 3, 0, 5, 2 }, keys[6] = { 0, 2, 3, 7, 8, 100 };
	uint64_t bad[3] = { 0, 9, 4 }, lo, hi;
	struct ps_ranges r;
	struct parsa_err e = { 0 };
	int empty;

	REQUIRE(ps_ranges_init_sizes(&r, sizes, 4, NULL) == 0);
	/* V_0 = [0,3), V_1 = {}, V_2 = [3,8), V_3 = [8, 2^64) */
	CHECK_INT(ps_ranges_owner(&r, 2), ==, 0);
	CHECK_INT(ps_ranges_owner(&r, 3), ==, 2);
	CHECK_INT(ps_ranges_owner(&r, 7), ==, 2);
	CHECK_INT(ps_ranges_owner(&r, 8), ==, 3);
	CHECK_INT(ps_ranges_owner(&r, UINT64_MAX), ==, 3);
	ps_ranges_bounds(&r, 1, &lo, &hi, &empty);
	CHECK(empty);
	ps_ranges_bounds(&r, 2, &lo, &hi, &empty);
	CHECK(!empty && lo == 3 && hi == 7);
	CHECK_INT(ps_ranges_slice_end(&r, 0, keys, 6), ==, 2);
	CHECK_INT(ps_ranges_slice_end(&r, 1, keys, 6), ==, 2);
	CHECK_INT(ps_ranges_slice_end(&r, 2, keys, 6), ==, 4);
	CHECK_INT(ps_ranges_slice_end(&r, 3, keys, 6), ==, 6);
	ps_ranges_release(&r);
	CHECK_INT(ps_ranges_init_starts(&r, bad, 3, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "start[2]");
	parsa_err_clear(&e);
	CHECK_INT(ps_ranges_init_starts(&r, bad + 1, 2, &e), ==,
		  PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "not 0");
}

/* ------------------------------------------------- merge semantics (OR) */

struct or_case {
	uint32_t k;     /* bits per value */
	uint32_t nkeys;
	uint64_t *keys;
};

/* Worker w sets bit (w * 7 + j) % k of key j, for every key. */
static void or_value(const struct or_case *oc, uint32_t w, uint32_t j,
		     unsigned char *v)
{
	uint32_t bit = (w * 7 + j) % oc->k;

	memset(v, 0, (oc->k + 7) / 8);
	v[bit / 8] |= (unsigned char)(1u << (bit % 8));
}

static int or_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct or_case *oc = arg;
	uint32_t width = (oc->k + 7) / 8, me = ps_node_index(w), j, x, nw;
	unsigned char *vals = calloc(oc->nkeys, width);
	unsigned char *got = calloc(oc->nkeys, width);
	unsigned char *want = calloc(1, width), *one = calloc(1, width);
	uint64_t ts;
	int rc = vals && got && want && one ? 0
		 : parsa_fail(err, PARSA_ENOMEM, "test");

	for (j = 0; !rc && j < oc->nkeys; j++)
		or_value(oc, me, j, vals + (size_t)j * width);
	if (!rc)
		rc = ps_push(w, 0, oc->keys, oc->nkeys, vals, &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	if (!rc)
		rc = ps_barrier(w, err);
	if (!rc)
		rc = ps_pull(w, 0, oc->keys, oc->nkeys, got, &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	nw = ps_num_workers(w);
	for (j = 0; !rc && j < oc->nkeys; j++) {
		memset(want, 0, width);
		for (x = 0; x < nw; x++) {
			uint32_t b;

			or_value(oc, x, j, one);
			for (b = 0; b < width; b++)
				want[b] |= one[b];
		}
		rc = fail_if(memcmp(want, got + (size_t)j * width, width) != 0,
			     err, "k=%u key %u: OR mismatch", oc->k, j);
	}
	free(vals);
	free(got);
	free(want);
	free(one);
	return rc;
}

static void test_or_widths(void)
{
	static const uint32_t ks[] = { 1, 8, 64, 65, 1024 };
	uint64_t keys[40];
	size_t i, j;

	for (j = 0; j < 40; j++) /* spread over the key space */
		keys[j] = j * (UINT64_MAX / 40) + j;
	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		struct ps_config cfg = base_config(3, 3);
		struct or_case oc = { ks[i], 40, keys };
		struct ps_app app = { 0 };

		add_table(&cfg, (ks[i] + 7) / 8, PS_OP_OR);
		app.worker_main = or_worker;
		app.arg = &oc;
		CHECK_INT(run_ok(&cfg, &app, NULL), ==, 0);
	}
}

/* --------------------------------------- ADD, OVERWRITE, zeros, workers */

#define ADD_KEYS 64
#define ADD_ROUNDS 300

struct add_case {
	uint64_t keys[ADD_KEYS];
};

/* Each worker adds 1 (float table 0) and 0.5 (double table 1) to every
 * key, ADD_ROUNDS times, with tau = 3; then barrier and check the sums. */
static int add_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct add_case *ac = arg;
	float f[ADD_KEYS], gf[ADD_KEYS];
	double d[2 * ADD_KEYS], gd[2 * ADD_KEYS];
	uint64_t ts, ts2;
	double want;
	int rc = 0, r, j;

	for (j = 0; j < ADD_KEYS; j++) {
		f[j] = 1.0f;
		d[2 * j] = 0.5;
		d[2 * j + 1] = -1.0;
	}
	ps_set_tau(w, 3);
	for (r = 0; !rc && r < ADD_ROUNDS; r++) {
		rc = ps_iter_begin(w, NULL, err);
		if (!rc)
			rc = ps_push(w, 0, ac->keys, ADD_KEYS, f, &ts, err);
		if (!rc)
			rc = ps_push(w, 1, ac->keys, ADD_KEYS, d, &ts, err);
	}
	if (!rc)
		rc = ps_wait_all(w, err);
	if (!rc)
		rc = ps_barrier(w, err);
	if (!rc)
		rc = ps_pull(w, 0, ac->keys, ADD_KEYS, gf, &ts, err);
	if (!rc)
		rc = ps_pull(w, 1, ac->keys, ADD_KEYS, gd, &ts2, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	if (!rc)
		rc = ps_wait(w, ts2, err);
	want = (double)ADD_ROUNDS * ps_num_workers(w);
	for (j = 0; !rc && j < ADD_KEYS; j++)
		rc = fail_if(gf[j] != (float)want || gd[2 * j] != want / 2 ||
			     gd[2 * j + 1] != -want, err,
			     "key %d: %g %g %g, want %g", j, gf[j],
			     gd[2 * j], gd[2 * j + 1], want);
	return rc;
}

static void test_add_concurrent_workers(void)
{
	struct ps_config cfg = base_config(3, 4);
	struct add_case ac;
	struct ps_app app = { 0 };
	struct ps_result res;
	int j;

	for (j = 0; j < ADD_KEYS; j++)
		ac.keys[j] = (uint64_t)j * 0x0400000000000001ull;
	add_table(&cfg, 4, PS_OP_ADD_F32);
	add_table(&cfg, 16, PS_OP_ADD_F64);
	app.worker_main = add_worker;
	app.arg = &ac;
	CHECK_INT(run_ok(&cfg, &app, &res), ==, 0);
	CHECK_INT(res.num_nodes, ==, 8);
	for (j = 0; j < 8 && res.nodes; j++)
		CHECK(res.nodes[j].valid);
	if (res.nodes)
		CHECK_INT(res.nodes[4].requests, ==, 2 * ADD_ROUNDS + 2);
	ps_result_release(&res);
}

static int overwrite_worker(struct ps_node *w, void *arg,
			    struct parsa_err *err)
{
	uint64_t keys[3] = { 0, 5, UINT64_MAX }, other[2] = { 6, 7 }, ts;
	double init[3] = { 1.5, 2.5, 3.5 }, add[3] = { 1, 1, 1 }, got[3];
	double zero[2] = { 9, 9 };
	int rc;

	(void)arg;
	if (ps_node_index(w) != 0)
		return 0;
	rc = ps_push_op(w, 0, PS_OP_OVERWRITE, keys, 3, init, &ts, err);
	if (!rc)
		rc = ps_push(w, 0, keys, 3, add, &ts, err);
	if (!rc)
		rc = ps_push_op(w, 0, PS_OP_OVERWRITE, keys + 2, 1, init, &ts,
				err);
	if (!rc)
		rc = ps_pull(w, 0, keys, 3, got, &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	if (!rc)
		rc = fail_if(got[0] != 2.5 || got[1] != 3.5 || got[2] != 1.5,
			     err, "overwrite then add: %g %g %g", got[0],
			     got[1], got[2]);
	if (!rc) /* keys never pushed read as zeros */
		rc = ps_pull(w, 0, other, 2, zero, &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	if (!rc)
		rc = fail_if(zero[0] != 0 || zero[1] != 0, err,
			     "unwritten keys: %g %g", zero[0], zero[1]);
	return rc;
}

static void test_overwrite_and_zeros(void)
{
	struct ps_config cfg = base_config(2, 1);
	struct ps_app app = { 0 };

	add_table(&cfg, 8, PS_OP_ADD_F64);
	app.worker_main = overwrite_worker;
	CHECK_INT(run_ok(&cfg, &app, NULL), ==, 0);
}

/* ---------------------------------------------------------- key edges */

#define EDGE_KEYS 9
static const uint64_t edge_keys[EDGE_KEYS] = {
	0, 1, 2, 3, 7, (1ull << 63) - 1, 1ull << 63, UINT64_MAX - 1, UINT64_MAX
};

/* Hook 0: the keys of table 0 stored on this server. */
static int list_keys_hook(struct ps_server *s, const void *req, size_t len,
			  struct ps_reply *reply, void *arg,
			  struct parsa_err *err)
{
	const uint64_t *keys;
	unsigned char *vals;
	size_t n;
	int rc = ps_server_table(s, 0, &keys, &vals, &n, NULL, err);

	(void)req;
	(void)len;
	(void)arg;
	return rc ? rc : ps_reply_append(reply, keys, n * 8, err);
}

static int register_list_hook(struct ps_server *s, void *arg,
			      struct parsa_err *err)
{
	(void)arg;
	return ps_server_register_hook(s, 0, list_keys_hook, NULL, err);
}

struct edge_case {
	struct ps_ranges ranges; /* what the cluster uses */
	int bad;                 /* keys found on the wrong server */
	int found;
};

static int edge_reply(void *arg, uint32_t server, const void *resp,
		      size_t len, struct parsa_err *err)
{
	struct edge_case *ec = arg;
	size_t i;

	(void)err;
	for (i = 0; i < len / 8; i++) {
		uint64_t k;

		memcpy(&k, (const unsigned char *)resp + 8 * i, 8);
		ec->found++;
		if (ps_ranges_owner(&ec->ranges, k) != server)
			ec->bad++;
	}
	return 0;
}

static int edge_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	struct edge_case *ec = arg;
	uint64_t vals[EDGE_KEYS], got[EDGE_KEYS], ts;
	int rc, j;

	for (j = 0; j < EDGE_KEYS; j++)
		vals[j] = 1000 + (uint64_t)j;
	rc = ps_push(w, 0, edge_keys, EDGE_KEYS, vals, &ts, err);
	if (!rc)
		rc = ps_pull(w, 0, edge_keys, EDGE_KEYS, got, &ts, err);
	if (!rc)
		rc = ps_wait_all(w, err);
	for (j = 0; !rc && j < EDGE_KEYS; j++)
		rc = fail_if(got[j] != vals[j], err, "edge key %d", j);
	if (!rc)
		rc = ps_call_hook(w, PS_ALL, 0, NULL, 0, edge_reply, ec, err);
	return rc;
}

static void run_edges(const uint64_t *starts, uint32_t s)
{
	struct ps_config cfg = base_config(s, 1);
	struct ps_app app = { 0 };
	struct edge_case ec = { { 0 }, 0, 0 };

	add_table(&cfg, 8, PS_OP_OVERWRITE);
	cfg.range_starts = starts;
	if (starts)
		REQUIRE(ps_ranges_init_starts(&ec.ranges, starts, s, NULL) ==
			0);
	else
		REQUIRE(ps_ranges_init_uniform(&ec.ranges, s, NULL) == 0);
	app.server_init = register_list_hook;
	app.worker_main = edge_worker;
	app.arg = &ec;
	CHECK_INT(run_ok(&cfg, &app, NULL), ==, 0);
	CHECK_INT(ec.found, ==, EDGE_KEYS);
	CHECK_INT(ec.bad, ==, 0);
	ps_ranges_release(&ec.ranges);
}

static void test_key_edges(void)
{
	/* boundaries exactly at pushed keys; an empty range (server 2) */
	uint64_t starts[5] = { 0, 3, 1ull << 63, 1ull << 63, UINT64_MAX };

	run_edges(NULL, 1);
	run_edges(NULL, 2);
	run_edges(NULL, 3);
	run_edges(starts, 5);
}

/* --------------------------------------------------- bounded delay tau */

struct tau_case {
	int tau;
	int iters;
};

static int tau_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct tau_case *tc = arg;
	uint64_t key = 42 + ps_node_index(w), ts;
	float one = 1;
	int i, rc = 0;

	ps_set_tau(w, tc->tau);
	for (i = 0; !rc && i < tc->iters; i++) {
		rc = ps_iter_begin(w, NULL, err);
		if (!rc) /* two requests per iteration */
			rc = ps_push(w, 0, &key, 1, &one, &ts, err);
		if (!rc)
			rc = ps_push(w, 0, &key, 1, &one, &ts, err);
	}
	return rc;
}

static void run_tau(int tau, uint64_t *stale_max, uint64_t *hist0,
		    uint64_t *tau_wait)
{
	struct ps_config cfg = base_config(1, 2);
	struct tau_case tc = { tau, 25 };
	struct ps_app app = { 0 };
	struct ps_result res = { 0 };
	uint32_t w;

	add_table(&cfg, 4, PS_OP_ADD_F32);
	cfg.server_delay_s = 0.001; /* a slow server */
	app.worker_main = tau_worker;
	app.arg = &tc;
	*stale_max = *hist0 = *tau_wait = 0;
	CHECK_INT(run_ok(&cfg, &app, &res), ==, 0);
	for (w = 0; res.nodes && w < 2; w++) {
		const struct ps_node_stats *st = &res.nodes[2 + w];
		uint64_t sum = 0;
		int b;

		for (b = 0; b < PS_STALE_BUCKETS; b++)
			sum += st->stale_hist[b];
		CHECK_INT(sum, ==, 25);
		CHECK_INT(st->iters, ==, 25);
		if (st->stale_max > *stale_max)
			*stale_max = st->stale_max;
		*hist0 += st->stale_hist[0];
		*tau_wait += st->tau_wait_ns;
	}
	ps_result_release(&res);
}

static void test_tau_window(void)
{
	uint64_t mx, h0, waited;

	run_tau(0, &mx, &h0, &waited);
	CHECK_INT(mx, ==, 0);
	CHECK_INT(h0, ==, 50);
	CHECK(waited > 0);
	run_tau(2, &mx, &h0, &waited);
	CHECK_INT(mx, <=, 2);
	CHECK_INT(mx, >=, 1); /* the slow server makes it run ahead */
	run_tau(-1, &mx, &h0, &waited);
	CHECK_INT(mx, >, 2);  /* unbounded: far ahead of the server */
}

/* ----------------------------------------------------------- counters */

static int counter_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	uint64_t local = 5, remote = (1ull << 63) + 5, v = 1, ts;
	int i, rc = 0;

	(void)arg;
	if (ps_node_index(w) != 0)
		return 0;
	for (i = 0; !rc && i < 3; i++) /* server 0: same machine */
		rc = ps_push(w, 0, &local, 1, &v, &ts, err);
	for (i = 0; !rc && i < 2; i++) /* server 1: machine 1 */
		rc = ps_push(w, 0, &remote, 1, &v, &ts, err);
	return rc ? rc : ps_wait_all(w, err);
}

static void test_counters_local_remote(void)
{
	struct ps_config cfg = base_config(2, 2);
	struct ps_app app = { 0 };
	struct ps_result res = { 0 };
	struct ps_counters tot;
	const struct ps_node_stats *w0, *w1;
	uint64_t push_bytes = 64 + 8 + 8;

	add_table(&cfg, 8, PS_OP_OR);
	app.worker_main = counter_worker;
	REQUIRE(run_ok(&cfg, &app, &res) == 0);
	w0 = &res.nodes[3];
	w1 = &res.nodes[4];
	CHECK_INT(w0->machine, ==, 0);
	CHECK_INT(w1->machine, ==, 1);
	CHECK_INT(w0->c.msgs_sent[PS_LOCAL], ==, 3);
	CHECK_INT(w0->c.msgs_sent[PS_REMOTE], ==, 2);
	CHECK_INT(w0->c.bytes_sent[PS_LOCAL], ==, 3 * push_bytes);
	CHECK_INT(w0->c.bytes_sent[PS_REMOTE], ==, 2 * push_bytes);
	/* acks from server 0 + SHUTDOWN from the scheduler (machine 0) */
	CHECK_INT(w0->c.msgs_recv[PS_LOCAL], ==, 4);
	CHECK_INT(w0->c.msgs_recv[PS_REMOTE], ==, 2);
	CHECK_INT(w1->c.msgs_recv[PS_REMOTE], ==, 1); /* SHUTDOWN */
	CHECK_INT(res.nodes[1].c.msgs_recv[PS_LOCAL], ==, 4);
	CHECK_INT(res.nodes[2].c.msgs_recv[PS_REMOTE], ==, 3);
	/* everything sent was received, plus the unrecorded final acks */
	ps_result_total(&res, &tot);
	CHECK_INT(tot.msgs_recv[0] + tot.msgs_recv[1], ==,
		  tot.msgs_sent[0] + tot.msgs_sent[1] + 4);
	ps_result_release(&res);
}

/* -------------------------------------------------- scheduler and tasks */

struct sched_case {
	int progress_seen;   /* scheduler thread only */
	uint32_t progress_from;
	char fail_msg[PARSA_ERR_MSG];
	int fail_rc;
};

static int task_fn(struct ps_node *w, uint64_t id, const void *payload,
		   size_t len, void *arg, struct parsa_err *err)
{
	uint64_t key = 1000 + id, ts;
	double one = 1;
	int rc;

	(void)arg;
	if (len == 4 && memcmp(payload, "boom", 4) == 0)
		return parsa_fail(err, PARSA_EIO, "boom on purpose");
	rc = ps_push(w, 0, &key, 1, &one, &ts, err);
	if (!rc)
		rc = ps_report_progress(w, &id, sizeof(id), err);
	if (!rc)
		rc = ps_report_progress(w, &id, sizeof(id), err);
	return rc;
}

static void on_progress(void *arg, uint32_t worker, const void *rec,
			size_t len)
{
	struct sched_case *sc = arg;

	(void)rec;
	if (len == 8)
		sc->progress_seen++;
	sc->progress_from |= 1u << worker;
}

static int count_reply(void *arg, uint32_t server, const void *resp,
		       size_t len, struct parsa_err *err)
{
	int *n = arg;

	(void)server;
	(void)resp;
	(void)err;
	*n += (int)(len / 8);
	return 0;
}

static int sched_fn(struct ps_node *s, void *arg, struct parsa_err *err)
{
	struct sched_case *sc = arg;
	struct parsa_err terr = { 0 };
	uint64_t id;
	int rc, stored = 0;

	rc = ps_sched_start_task(s, PS_ALL, "go", 2, &id, err);
	if (!rc)
		rc = fail_if(id != 0, err, "first task id %llu",
			     (unsigned long long)id);
	if (!rc)
		rc = ps_sched_wait_tasks(s, on_progress, sc, err);
	if (!rc)
		rc = ps_sched_start_task(s, 1, "boom", 4, &id, err);
	if (!rc) {
		sc->fail_rc = ps_sched_wait_tasks(s, on_progress, sc, &terr);
		memcpy(sc->fail_msg, terr.msg, sizeof(sc->fail_msg));
	}
	if (!rc) /* the scheduler may call server hooks, too */
		rc = ps_call_hook(s, PS_ALL, 0, NULL, 0, count_reply, &stored,
				  err);
	if (!rc)
		rc = fail_if(stored != 4, err, "%d keys stored", stored);
	return rc;
}

/* Workers: three barriers; the data pushed before each is visible after. */
static int barrier_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	uint64_t key = 7, ts;
	double one = 1, got = 0;
	int b, rc = 0;

	(void)arg;
	for (b = 1; !rc && b <= 3; b++) {
		rc = ps_push(w, 0, &key, 1, &one, &ts, err);
		if (!rc)
			rc = ps_wait(w, ts, err);
		if (!rc)
			rc = ps_barrier(w, err);
		if (!rc)
			rc = ps_pull(w, 0, &key, 1, &got, &ts, err);
		if (!rc)
			rc = ps_wait(w, ts, err);
		if (!rc)
			rc = fail_if(got < b * 3.0, err, "after barrier %d: "
				     "%g < %d", b, got, b * 3);
		if (!rc)
			rc = ps_barrier(w, err); /* nobody pushes past b */
	}
	return rc;
}

static void test_scheduler_tasks_barrier(void)
{
	struct ps_config cfg = base_config(2, 3);
	struct sched_case sc = { 0 };
	struct ps_app app = { 0 };
	struct ps_result res = { 0 };
	uint32_t i;

	add_table(&cfg, 8, PS_OP_ADD_F64);
	app.server_init = register_list_hook;
	app.worker_main = barrier_worker;
	app.task = task_fn;
	app.sched_main = sched_fn;
	app.arg = &sc;
	CHECK_INT(run_ok(&cfg, &app, &res), ==, 0);
	CHECK_INT(sc.progress_seen, ==, 6);
	CHECK_INT(sc.progress_from, ==, 7);
	CHECK_INT(sc.fail_rc, ==, PARSA_EIO);
	CHECK_CONTAINS(sc.fail_msg, "task 3 on worker 1 (node 4) failed");
	CHECK_CONTAINS(sc.fail_msg, "boom on purpose");
	for (i = 0; i < res.num_nodes; i++) /* clean shutdown: all stats */
		CHECK(res.nodes[i].valid);
	ps_result_release(&res);
}

static int idle_sched(struct ps_node *s, void *arg, struct parsa_err *err)
{
	(void)arg;
	return ps_sched_poll(s, 0.01, NULL, NULL, err);
}

static void test_shutdown_idle(void)
{
	struct ps_config cfg = base_config(3, 4);
	struct ps_app app = { 0 };

	app.sched_main = idle_sched;
	CHECK_INT(run_ok(&cfg, &app, NULL), ==, 0); /* no tables at all */
}

/* --------------------------------------------------------- server hook */

/* Hook 1: a proximal-style step over the server's own values: scale every
 * stored value of table 0 by the request's factor; reply the sum. */
static int scale_hook(struct ps_server *s, const void *req, size_t len,
		      struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	const uint64_t *keys;
	unsigned char *vals;
	size_t n, i;
	double f, sum = 0;
	int rc;

	(void)arg;
	if (len != sizeof(f))
		return parsa_fail(err, PARSA_EINVAL, "scale: want 8 bytes, "
				  "got %zu", len);
	memcpy(&f, req, sizeof(f));
	rc = ps_server_table(s, 0, &keys, &vals, &n, NULL, err);
	for (i = 0; !rc && i < n; i++) {
		double v;

		memcpy(&v, vals + 8 * i, 8);
		v *= f;
		memcpy(vals + 8 * i, &v, 8);
		sum += v;
	}
	return rc ? rc : ps_reply_append(reply, &sum, sizeof(sum), err);
}

static int hook_server_init(struct ps_server *s, void *arg,
			    struct parsa_err *err)
{
	unsigned char *v;
	uint64_t lo, hi;
	double init = 1.0;
	int empty, rc;

	(void)arg;
	rc = ps_server_register_hook(s, 1, scale_hook, NULL, err);
	ps_server_range(s, &lo, &hi, &empty);
	if (!rc && !empty) /* preload one value at the start of the range */
		rc = ps_server_value(s, 0, lo, 1, &v, err);
	if (!rc && !empty)
		memcpy(v, &init, 8);
	return rc;
}

static int sum_reply(void *arg, uint32_t server, const void *resp,
		     size_t len, struct parsa_err *err)
{
	double *sum = arg, x;

	(void)server;
	if (len != 8)
		return parsa_fail(err, PARSA_EINVAL, "reply of %zu bytes", len);
	memcpy(&x, resp, 8);
	*sum += x;
	return 0;
}

static int hook_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	char *msg = arg;
	struct parsa_err e2 = { 0 };
	double f = 3.0, sum = 0;
	int rc;

	rc = ps_call_hook(w, PS_ALL, 1, &f, sizeof(f), sum_reply, &sum, err);
	if (!rc)
		rc = fail_if(sum != 9.0, err, "scaled sum %g", sum);
	if (!rc) {
		sum = 0;
		rc = ps_call_hook(w, 2, 1, &f, sizeof(f), sum_reply, &sum,
				  err);
	}
	if (!rc)
		rc = fail_if(sum != 9.0, err, "server 2 alone: %g", sum);
	if (!rc) /* a hook error comes back with the server's message */
		rc = fail_if(ps_call_hook(w, PS_ALL, 1, "x", 1, NULL, NULL,
					  &e2) != PARSA_EINVAL, err,
			     "bad request accepted");
	if (!rc)
		memcpy(msg, e2.msg, 200);
	parsa_err_clear(&e2);
	if (!rc)
		rc = fail_if(ps_call_hook(w, 0, 5, NULL, 0, NULL, NULL, &e2) !=
			     PARSA_EINVAL || !strstr(e2.msg, "no hook 5"),
			     err, "unknown hook: %s", e2.msg);
	return rc;
}

static void test_server_hook(void)
{
	struct ps_config cfg = base_config(3, 1);
	struct ps_app app = { 0 };
	char msg[256] = "";

	add_table(&cfg, 8, PS_OP_ADD_F64);
	app.server_init = hook_server_init;
	app.worker_main = hook_worker;
	app.arg = msg;
	CHECK_INT(run_ok(&cfg, &app, NULL), ==, 0);
	CHECK_CONTAINS(msg, "scale: want 8 bytes, got 1");
	CHECK_CONTAINS(msg, "server ");
}

/* ----------------------------------------------------------- failures */

struct manual {
	struct ps_cluster *cl;
	struct ps_transport *tp;
	struct ps_server *srv;
	pthread_t th;
	int started;
	int rc;
	struct parsa_err err;
};

static void *serve_thread(void *p)
{
	struct manual *mn = p;

	mn->rc = ps_server_serve(mn->srv, &mn->err);
	return NULL;
}

static int manual_setup(struct manual *mn, double timeout, int start_server)
{
	struct ps_config cfg = base_config(1, 1);
	struct ps_layout l = { 1, 1, 1 };

	memset(mn, 0, sizeof(*mn));
	add_table(&cfg, 8, PS_OP_ADD_F64);
	cfg.timeout_s = timeout;
	mn->cl = ps_cluster_create(&cfg, &l, NULL);
	mn->tp = ps_transport_threads_create(&l, NULL);
	if (!mn->cl || !mn->tp)
		return -1;
	if (!start_server)
		return 0;
	mn->srv = ps_server_create(mn->cl, mn->tp, 0, NULL);
	if (!mn->srv || pthread_create(&mn->th, NULL, serve_thread, mn))
		return -1;
	mn->started = 1;
	return 0;
}

static void manual_teardown(struct manual *mn)
{
	if (mn->started)
		pthread_join(mn->th, NULL);
	ps_server_destroy(mn->srv);
	ps_transport_destroy(mn->tp);
	ps_cluster_destroy(mn->cl);
}

static void inject_and_check(const void *bytes, size_t len, const char *want)
{
	struct manual mn;
	struct parsa_err e = { 0 };
	void *copy = malloc(len ? len : 1);

	REQUIRE(copy && manual_setup(&mn, 5, 1) == 0);
	memcpy(copy, bytes, len);
	CHECK_INT(ps_transport_send(mn.tp, 1, copy, len, NULL), ==, 0);
	pthread_join(mn.th, NULL);
	mn.started = 0;
	CHECK_INT(mn.rc, ==, PARSA_EPARSE);
	CHECK_CONTAINS(mn.err.msg, "server 0 (node 1)");
	CHECK_CONTAINS(mn.err.msg, want);
	CHECK_INT(ps_transport_failed(mn.tp, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, want);
	manual_teardown(&mn);
}

static void test_malformed_rejected(void)
{
	unsigned char junk[100];
	uint64_t keys[1] = { 3 };
	struct ps_msg m = { 0 };
	void *buf;
	size_t len, i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	inject_and_check(junk, sizeof(junk), "bad magic");
	inject_and_check(junk, 10, "message too short");
	m.type = PS_MSG_TASK; /* well-formed, but not for a server */
	m.src = 0;
	m.dst = 1;
	REQUIRE(ps_msg_encode(&m, NULL, NULL, NULL, &buf, &len, NULL) == 0);
	inject_and_check(buf, len, "unexpected TASK");
	free(buf);
	m.type = PS_MSG_PULL; /* table out of range */
	m.src = 2;
	m.table = 3;
	m.nkeys = 1;
	REQUIRE(ps_msg_encode(&m, keys, NULL, NULL, &buf, &len, NULL) == 0);
	inject_and_check(buf, len, "table 3 of 1");
	free(buf);
}

static void test_timeout_no_reply(void)
{
	struct manual mn;
	struct ps_node *w;
	struct parsa_err e = { 0 };
	uint64_t key = 1, ts;
	double v = 1, t0;

	REQUIRE(manual_setup(&mn, 0.3, 0) == 0); /* server never runs */
	w = ps_node_create(mn.cl, mn.tp, 2, NULL);
	REQUIRE(w != NULL);
	CHECK_INT(ps_push(w, 0, &key, 1, &v, &ts, &e), ==, 0);
	t0 = ps_clock_now();
	CHECK_INT(ps_wait(w, ts, &e), ==, PARSA_EMPI);
	CHECK(ps_clock_now() - t0 >= 0.29 && ps_clock_now() - t0 < 3);
	CHECK_CONTAINS(e.msg, "no reply from server 0 (node 1) within 0.3 s");
	CHECK_CONTAINS(e.msg, "worker 0 (node 2)");
	ps_node_destroy(w);
	manual_teardown(&mn);
}

/* A server stuck in its init: the whole run fails with the timeout. */
static int slow_init(struct ps_server *s, void *arg, struct parsa_err *err)
{
	struct timespec ts = { 1, 0 };

	(void)s;
	(void)arg;
	(void)err;
	nanosleep(&ts, NULL);
	return 0;
}

static int one_push(struct ps_node *w, void *arg, struct parsa_err *err)
{
	uint64_t key = 1, ts;
	double v = 1;
	int rc = ps_push(w, 0, &key, 1, &v, &ts, err);

	(void)arg;
	return rc ? rc : ps_wait(w, ts, err);
}

static void test_run_fails_cleanly(void)
{
	struct ps_config cfg = base_config(1, 2);
	struct ps_app app = { 0 };
	struct parsa_err e = { 0 };

	add_table(&cfg, 8, PS_OP_ADD_F64);
	cfg.timeout_s = 0.2;
	app.server_init = slow_init;
	app.worker_main = one_push;
	CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, PARSA_EMPI);
	CHECK_CONTAINS(e.msg, "no reply from server 0 (node 1) within 0.2 s");
}

static int failing_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	(void)arg;
	if (ps_node_index(w) == 2)
		return parsa_fail(err, PARSA_EIO, "disk on fire");
	return ps_barrier(w, err); /* would hang without failure handling */
}

static void test_worker_failure_stops_all(void)
{
	struct ps_config cfg = base_config(2, 4);
	struct ps_app app = { 0 };
	struct parsa_err e = { 0 };

	app.worker_main = failing_worker;
	CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, PARSA_EIO);
	CHECK_STR(e.msg, "worker 2 (node 5): disk on fire");
}

static int uneven_barrier_worker(struct ps_node *w, void *arg,
				 struct parsa_err *err)
{
	(void)arg;
	if (ps_node_index(w) == 0)
		return 0; /* skips the barrier the others wait in */
	return ps_barrier(w, err);
}

static void test_barrier_mismatch_detected(void)
{
	struct ps_config cfg = base_config(1, 3);
	struct ps_app app = { 0 };
	struct parsa_err e = { 0 };

	app.worker_main = uneven_barrier_worker;
	CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, PARSA_ESTATE);
	CHECK_CONTAINS(e.msg, "barrier 0 can never complete");
}

static int bad_args_worker(struct ps_node *w, void *arg,
			   struct parsa_err *err)
{
	uint64_t unsorted[2] = { 5, 5 }, ts;
	unsigned char v[18] = { 0 };
	struct parsa_err e = { 0 };
	int rc = 0;

	(void)arg;
	rc |= fail_if(ps_push(w, 0, unsorted, 2, v, &ts, &e) != PARSA_EINVAL,
		      err, "duplicate keys accepted");
	rc |= fail_if(!strstr(e.msg, "sorted"), err, "msg: %s", e.msg);
	rc |= fail_if(ps_pull(w, 9, unsorted, 1, v, &ts, NULL) != PARSA_EINVAL,
		      err, "bad table accepted");
	rc |= fail_if(ps_push_op(w, 0, PS_OP_ADD_F32, unsorted, 1, v, &ts,
				 NULL) != PARSA_EINVAL, err,
		      "float add on 9-byte values accepted");
	rc |= fail_if(ps_wait(w, 99, NULL) != PARSA_EINVAL, err,
		      "wait for a future ts accepted");
	rc |= fail_if(ps_sched_start_task(w, 0, NULL, 0, NULL, NULL) !=
		      PARSA_ESTATE, err, "worker started a task");
	return rc;
}

static void test_bad_arguments(void)
{
	struct ps_config cfg = base_config(1, 1);
	struct ps_app app = { 0 };
	struct parsa_err e = { 0 };

	add_table(&cfg, 9, PS_OP_OR);
	app.worker_main = bad_args_worker;
	CHECK_INT(run_ok(&cfg, &app, NULL), ==, 0);
	cfg.tables[0].op = PS_OP_ADD_F64; /* 9 bytes are not doubles */
	CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "add_f64");
	cfg = base_config(2, 1);
	cfg.range_starts = (const uint64_t[]){ 1, 2 };
	parsa_err_clear(&e);
	CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "not 0");
}

int main(void)
{
	RUN(test_msg_roundtrip);
	RUN(test_msg_malformed);
	RUN(test_ranges_uniform_edges);
	RUN(test_ranges_placement);
	RUN(test_or_widths);
	RUN(test_add_concurrent_workers);
	RUN(test_overwrite_and_zeros);
	RUN(test_key_edges);
	RUN(test_tau_window);
	RUN(test_counters_local_remote);
	RUN(test_scheduler_tasks_barrier);
	RUN(test_shutdown_idle);
	RUN(test_server_hook);
	RUN(test_malformed_rejected);
	RUN(test_timeout_no_reply);
	RUN(test_run_fails_cleanly);
	RUN(test_worker_failure_stops_all);
	RUN(test_barrier_mismatch_detected);
	RUN(test_bad_arguments);
	return harness_done();
}
