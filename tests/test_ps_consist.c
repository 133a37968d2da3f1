/*
 * test_ps_consist: the parameter server's consistency models (SSP, BSP,
 * ESSP; ps.h) on the in-process transport, with scripted delays.
 *
 * Instrumented clocks: every worker w sets bit (w * T + t) of every key
 * at its clock t (an OR table), so a value read says exactly which
 * worker's update of which clock it holds.  A read at clock c must hold
 * every worker's bits of clocks <= c - S - 1 and the reader's own of
 * clocks < c; one worker is made slow (it sleeps each clock), so the
 * others run into the bound and their pulls are parked.  Also: eager
 * pushes (ESSP) carry only keys the receiver pulled, and bring its view
 * up to the bound without pulls; hooks run on the snapshot of the caller's
 * clock; the on-clock callback sees every worker's updates of its clock;
 * a worker dying under each model stops every node with its error, fast;
 * wire format and parsing of the model names; bad calls.
 *
 * Node callbacks run on their own threads: they return an error (with a
 * message) instead of touching the harness.  Also under TSan (make tsan)
 * and ASan/UBSan (make check).
 */
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include "harness.h"
#include "ps.h"
#include "ps_msg.h"

#define MAXW 4
#define MAXT 16
#define NKEYS 24

static int fail_if(int cond, struct parsa_err *err, const char *fmt, ...)
	PARSA_PRINTF(3, 4);

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

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static struct ps_config config(uint32_t s, uint32_t w, int model, int S)
{
	struct ps_config c;

	memset(&c, 0, sizeof(c));
	c.num_servers = s;
	c.num_workers = w;
	c.timeout_s = 20;
	c.consistency = model;
	c.staleness = S;
	return c;
}

/* Keys spread over the whole key space, so every server owns some. */
static uint64_t key_at(uint32_t i)
{
	return (uint64_t)i * (UINT64_MAX / NKEYS);
}

struct clk_case {
	int model, S;
	uint32_t W, T;
	int slow;          /* worker that sleeps every clock, or -1 */
	int slow_ms;
	/* ESSP: worker w subscribes to key i iff (i + w) % 3 != 0 */
};

static uint32_t width_of(const struct clk_case *cc)
{
	return (cc->W * cc->T + 7) / 8;
}

static int has_bit(const unsigned char *v, uint32_t bit)
{
	return v[bit / 8] >> (bit % 8) & 1;
}

/* The bound: v (one key's value) read at clock c holds every worker's
 * bits of clocks < c - S and the reader's own of clocks < c. */
static int check_value(const struct clk_case *cc, uint32_t me, int64_t c,
		       const unsigned char *v, uint64_t key,
		       struct parsa_err *err)
{
	for (uint32_t w = 0; w < cc->W; w++) {
		int64_t need = w == me ? c : c - cc->S;

		for (int64_t t = 0; t < need; t++) {
			int rc = fail_if(!has_bit(v, w * cc->T + (uint32_t)t),
					 err, "worker %u at clock %lld read key "
					 "%llu without worker %u's update of "
					 "clock %lld (S=%d)", me, (long long)c,
					 (unsigned long long)key, w,
					 (long long)t, cc->S);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* This worker's update of clock c: its bit on every key. */
static int push_clock_bit(struct ps_node *w, const struct clk_case *cc,
			  uint64_t *keys, unsigned char *vals, int64_t c,
			  struct parsa_err *err)
{
	uint32_t me = ps_node_index(w), wd = width_of(cc), bit;
	uint64_t ts;

	bit = me * cc->T + (uint32_t)c;
	memset(vals, 0, (size_t)NKEYS * wd);
	for (uint32_t i = 0; i < NKEYS; i++) {
		keys[i] = key_at(i);
		vals[(size_t)i * wd + bit / 8] |= (unsigned char)(1u << (bit % 8));
	}
	return ps_push(w, 0, keys, NKEYS, vals, &ts, err);
}

/* SSP/BSP: pull everything each clock, check, push own bit, clock. */
static int ssp_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct clk_case *cc = arg;
	uint32_t me = ps_node_index(w), wd = width_of(cc);
	uint64_t keys[NKEYS], ts;
	unsigned char vals[NKEYS * (MAXW * MAXT / 8 + 1)];
	unsigned char got[NKEYS * (MAXW * MAXT / 8 + 1)];
	int rc = 0;

	for (uint32_t i = 0; i < NKEYS; i++)
		keys[i] = key_at(i);
	for (int64_t c = 0; !rc && c < (int64_t)cc->T; c++) {
		rc = fail_if(ps_node_clock(w) != c, err, "clock %lld != %lld",
			     (long long)ps_node_clock(w), (long long)c);
		if ((int)me == cc->slow)
			sleep_ms(cc->slow_ms);
		if (!rc)
			rc = ps_pull(w, 0, keys, NKEYS, got, &ts, err);
		if (!rc)
			rc = ps_wait(w, ts, err);
		for (uint32_t i = 0; !rc && i < NKEYS; i++)
			rc = check_value(cc, me, c, got + (size_t)i * wd,
					 keys[i], err);
		if (!rc)
			rc = push_clock_bit(w, cc, keys, vals, c, err);
		if (!rc)
			rc = ps_clock(w, err);
	}
	if (!rc)
		rc = ps_wait_all(w, err);
	return rc;
}

static void add_or_table(struct ps_config *cfg, const struct clk_case *cc,
			 int eager)
{
	cfg->tables[0].value_bytes = width_of(cc);
	cfg->tables[0].op = PS_OP_OR;
	cfg->tables[0].eager = eager;
	cfg->num_tables = 1;
}

struct clk_result {
	uint64_t read_max;        /* highest read staleness of any worker */
	uint64_t reads;           /* keys read, all workers */
	uint64_t parked;          /* requests parked, all servers */
	uint64_t eager_keys;      /* keys pushed eagerly, all workers */
	uint64_t over;            /* reads counted above S */
};

static int run_clocked(const struct clk_case *cc, uint32_t servers,
		       int (*worker)(struct ps_node *, void *,
				     struct parsa_err *),
		       struct clk_result *out)
{
	struct ps_config cfg = config(servers, cc->W, cc->model, cc->S);
	struct ps_app app = { 0 };
	struct ps_result res = { 0 };
	struct parsa_err e = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	add_or_table(&cfg, cc, cc->model == PS_CONS_ESSP);
	app.worker_main = worker;
	app.arg = (void *)cc;
	rc = ps_run_threads(&cfg, &app, &res, &e);
	if (rc) {
		fprintf(stderr, "  run failed: %s\n", e.msg);
		return rc;
	}
	for (uint32_t n = 0; n < res.num_nodes; n++) {
		const struct ps_node_stats *st = &res.nodes[n];

		if (st->role == PS_ROLE_SERVER)
			out->parked += st->parked;
		if (st->role != PS_ROLE_WORKER)
			continue;
		if (st->read_stale_max > out->read_max)
			out->read_max = st->read_stale_max;
		for (int b = 0; b < PS_STALE_BUCKETS; b++) {
			out->reads += st->read_hist[b];
			if (b > cc->S)
				out->over += st->read_hist[b];
		}
		out->eager_keys += st->eager_keys;
	}
	ps_result_release(&res);
	return 0;
}

/* ------------------------------------------------------------- SSP, BSP */

static void test_ssp_bound_with_slow_worker(void)
{
	static const int bounds[] = { 0, 1, 3 };

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		struct clk_case cc = { PS_CONS_SSP, bounds[i], 3, 12, 1, 15 };
		struct clk_result r;

		REQUIRE(run_clocked(&cc, 2, ssp_worker, &r) == 0);
		CHECK_INT(r.reads, ==, 3 * 12 * NKEYS);
		CHECK_INT(r.over, ==, 0);
		CHECK_INT(r.read_max, <=, cc.S);
		/* the slow worker holds the others back: their reads wait */
		CHECK_INT(r.parked, >, 0);
		CHECK_INT(r.eager_keys, ==, 0);
	}
}

/* Without a slow worker, and with a slow one that is not worker 0. */
static void test_ssp_more_layouts(void)
{
	struct clk_case a = { PS_CONS_SSP, 2, 4, 10, -1, 0 };
	struct clk_case b = { PS_CONS_SSP, 1, 2, 16, 0, 5 };
	struct clk_result r;

	REQUIRE(run_clocked(&a, 3, ssp_worker, &r) == 0);
	CHECK_INT(r.over, ==, 0);
	REQUIRE(run_clocked(&b, 1, ssp_worker, &r) == 0);
	CHECK_INT(r.over, ==, 0);
	CHECK_INT(r.parked, >, 0);
}

/* --------------------------------------------------------------- ESSP */

static int subscribed(uint32_t key_index, uint32_t w)
{
	return (key_index + w) % 3 != 0;
}

struct essp_view {
	const struct clk_case *cc;
	uint32_t me;
	unsigned char cache[NKEYS * (MAXW * MAXT / 8 + 1)];
	uint64_t got_keys;
};

static int key_index(uint64_t key)
{
	for (uint32_t i = 0; i < NKEYS; i++)
		if (key_at(i) == key)
			return (int)i;
	return -1;
}

/* Eager values: only keys this worker pulled; merged (OR) into its view,
 * which also holds its own updates (as an application applies its own
 * writes: the snapshot may be older than them). */
static int on_eager(void *arg, uint32_t table, const uint64_t *keys,
		    const void *vals, size_t n, int64_t clock,
		    struct parsa_err *err)
{
	struct essp_view *v = arg;
	uint32_t wd = width_of(v->cc);

	(void)clock;
	if (table != 0)
		return parsa_fail(err, PARSA_EINVAL, "eager table %u", table);
	for (size_t j = 0; j < n; j++) {
		int i = key_index(keys[j]);

		if (i < 0 || !subscribed((uint32_t)i, v->me))
			return parsa_fail(err, PARSA_EINVAL, "worker %u got an "
					  "eager push of key %llu it never "
					  "pulled", v->me,
					  (unsigned long long)keys[j]);
		for (uint32_t b = 0; b < wd; b++)
			v->cache[(size_t)i * wd + b] |=
				((const unsigned char *)vals)[j * wd + b];
		v->got_keys++;
	}
	return 0;
}

/* ESSP: pull own keys once (subscribe), then never again: the view is
 * kept up to date by the servers' eager pushes. */
static int essp_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct clk_case *cc = arg;
	struct essp_view *v = calloc(1, sizeof(*v));
	uint32_t wd = width_of(cc), n = 0;
	uint64_t keys[NKEYS], ts;
	unsigned char vals[NKEYS * (MAXW * MAXT / 8 + 1)];
	int rc = 0;

	if (!v)
		return parsa_fail(err, PARSA_ENOMEM, "view");
	v->cc = cc;
	v->me = ps_node_index(w);
	for (uint32_t i = 0; i < NKEYS; i++)
		if (subscribed(i, v->me))
			keys[n++] = key_at(i);
	ps_set_eager_handler(w, on_eager, v);
	rc = ps_pull(w, 0, keys, n, vals, &ts, err);
	if (!rc)
		rc = ps_wait(w, ts, err);
	for (uint32_t j = 0; !rc && j < n; j++) /* the snapshot it read */
		memcpy(v->cache + (size_t)key_index(keys[j]) * wd,
		       vals + (size_t)j * wd, wd);
	for (int64_t c = 0; !rc && c < (int64_t)cc->T; c++) {
		uint32_t bit = v->me * cc->T + (uint32_t)c;

		if ((int)v->me == cc->slow)
			sleep_ms(cc->slow_ms);
		rc = ps_eager_wait(w, c - cc->S, err);
		for (uint32_t i = 0; !rc && i < NKEYS; i++)
			if (subscribed(i, v->me))
				rc = check_value(cc, v->me, c,
						 v->cache + (size_t)i * wd,
						 key_at(i), err);
		if (!rc)
			rc = push_clock_bit(w, cc, keys, vals, c, err);
		for (uint32_t i = 0; i < NKEYS; i++) /* own write */
			v->cache[(size_t)i * wd + bit / 8] |=
				(unsigned char)(1u << (bit % 8));
		if (!rc)
			rc = ps_clock(w, err);
	}
	/* the last snapshot: every update of every worker (S = 0) */
	if (!rc)
		rc = ps_eager_wait(w, cc->T, err);
	for (uint32_t i = 0; !rc && i < NKEYS; i++) {
		struct clk_case all = *cc;

		all.S = 0;
		if (subscribed(i, v->me))
			rc = check_value(&all, v->me, cc->T,
					 v->cache + (size_t)i * wd, key_at(i),
					 err);
	}
	if (!rc)
		rc = fail_if(v->got_keys == 0, err, "no eager value arrived");
	if (!rc)
		rc = ps_wait_all(w, err);
	free(v);
	return rc;
}

static void test_essp_pushes_only_used_keys(void)
{
	static const int bounds[] = { 0, 2 };

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		struct clk_case cc = { PS_CONS_ESSP, bounds[i], 3, 10, 2, 10 };
		struct clk_result r;

		REQUIRE(run_clocked(&cc, 2, essp_worker, &r) == 0);
		CHECK_INT(r.over, ==, 0);
		/* each worker subscribed to 2/3 of the keys; each key changes
		 * every clock, so it is pushed at most once a snapshot */
		CHECK_INT(r.eager_keys, >, 0);
		CHECK_INT(r.eager_keys, <=, 3 * (NKEYS * 2 / 3) * 10);
	}
}

/* ---------------------------------------------- on-clock, parked hooks */

struct oc_state {
	int64_t seen[MAXT];
	int n;
	uint32_t W;
	int bad;
};

static int sum_key(struct ps_server *s, double *sum, struct parsa_err *err)
{
	unsigned char *v;
	uint64_t lo, hi;
	int empty, rc;

	ps_server_range(s, &lo, &hi, &empty);
	*sum = 0;
	if (empty || 7 < lo || 7 > hi)
		return 0;
	rc = ps_server_value(s, 0, 7, 0, &v, err);
	if (!rc && v)
		memcpy(sum, v, sizeof(*sum));
	return rc;
}

static int on_clock_cb(struct ps_server *s, int64_t clock, void *arg,
		       struct parsa_err *err)
{
	struct oc_state *os = arg;
	double sum;
	uint64_t lo, hi;
	int empty, rc;

	ps_server_range(s, &lo, &hi, &empty);
	if (empty || 7 < lo || 7 > hi)
		return 0; /* key 7 lives on server 0 */
	if ((rc = sum_key(s, &sum, err)))
		return rc;
	if (os->n < MAXT)
		os->seen[os->n++] = clock;
	/* every worker's +1 of clocks 0..clock is in */
	return fail_if(sum < (double)os->W * (double)(clock + 1), err,
		       "on_clock(%lld) sees %g", (long long)clock, sum);
}

static int read_hook(struct ps_server *s, const void *req, size_t len,
		     struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	double sum;
	int rc = sum_key(s, &sum, err);

	(void)req;
	(void)len;
	(void)arg;
	return rc ? rc : ps_reply_append(reply, &sum, sizeof(sum), err);
}

static int oc_server_init(struct ps_server *s, void *arg,
			  struct parsa_err *err)
{
	ps_server_on_clock(s, on_clock_cb, arg);
	return ps_server_register_hook(s, 1, read_hook, NULL, err);
}

static int take_sum(void *arg, uint32_t server, const void *resp, size_t len,
		    struct parsa_err *err)
{
	double v;

	(void)err;
	if (len != sizeof(v))
		return parsa_fail(err, PARSA_EINVAL, "hook reply %zu", len);
	(void)server;
	memcpy(&v, resp, sizeof(v));
	*(double *)arg += v;
	return 0;
}

/* Each clock: +1 on key 7, then (worker 1, slow or not) the hook must see
 * every worker's +1 of the clocks it completed. */
static int oc_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct oc_state *os = arg;
	uint64_t key = 7, ts;
	double one = 1;
	int rc = 0;

	for (int64_t c = 0; !rc && c < 8; c++) {
		double sum = 0;

		if (ps_node_index(w) == 0)
			sleep_ms(5);
		rc = ps_push(w, 0, &key, 1, &one, &ts, err);
		if (!rc)
			rc = ps_clock(w, err);
		if (!rc)
			rc = ps_call_hook(w, PS_ALL, 1, NULL, 0, take_sum, &sum,
					  err);
		if (!rc)
			rc = fail_if(sum < (double)os->W * (double)(c + 1), err,
				     "hook at clock %lld saw %g",
				     (long long)(c + 1), sum);
	}
	return rc;
}

static void test_on_clock_and_parked_hooks(void)
{
	struct oc_state os = { { 0 }, 0, 3, 0 };
	struct ps_config cfg = config(2, 3, PS_CONS_SSP, 4);
	struct ps_app app = { 0 };
	struct parsa_err e = { 0 };

	cfg.tables[0].value_bytes = 8;
	cfg.tables[0].op = PS_OP_ADD_F64;
	cfg.num_tables = 1;
	app.server_init = oc_server_init;
	app.worker_main = oc_worker;
	app.arg = &os;
	CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, 0);
	if (e.code)
		fprintf(stderr, "  %s\n", e.msg);
	CHECK_INT(os.n, ==, 8);
	for (int i = 0; i < os.n; i++)
		CHECK_INT(os.seen[i], ==, i);
}

/* ------------------------------------------------------- dying workers */

struct die_case {
	int model, S;
};

static int dying_worker(struct ps_node *w, void *arg, struct parsa_err *err)
{
	const struct die_case *dc = arg;
	uint64_t key = 5, ts;
	double one = 1, got;
	int rc = 0;

	if (dc->model == PS_CONS_ESSP) { /* subscribe */
		rc = ps_pull(w, 0, &key, 1, &got, &ts, err);
		if (!rc)
			rc = ps_wait(w, ts, err);
	}
	for (int64_t c = 0; !rc && c < 1000; c++) {
		if (ps_node_index(w) == 1 && c == 3)
			return parsa_fail(err, PARSA_EIO, "scripted death at "
					  "clock 3");
		switch (dc->model) {
		case PS_CONS_TAU:
			rc = ps_iter_begin(w, NULL, err);
			if (!rc)
				rc = ps_barrier(w, err);
			break;
		case PS_CONS_SSP:
			rc = ps_pull(w, 0, &key, 1, &got, &ts, err);
			if (!rc)
				rc = ps_wait(w, ts, err);
			break;
		default:
			rc = ps_eager_wait(w, c - dc->S, err);
		}
		if (!rc)
			rc = ps_push(w, 0, &key, 1, &one, &ts, err);
		if (!rc && dc->model != PS_CONS_TAU)
			rc = ps_clock(w, err);
	}
	return rc;
}

static void test_dying_worker_stops_all(void)
{
	static const struct die_case cases[] = {
		{ PS_CONS_TAU, 0 }, { PS_CONS_SSP, 0 }, { PS_CONS_SSP, 2 },
		{ PS_CONS_ESSP, 0 }, { PS_CONS_ESSP, 2 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ps_config cfg = config(2, 3, cases[i].model,
					      cases[i].S);
		struct ps_app app = { 0 };
		struct parsa_err e = { 0 };
		double t0 = ps_clock_now();

		cfg.tables[0].value_bytes = 8;
		cfg.tables[0].op = PS_OP_ADD_F64;
		cfg.tables[0].eager = 1;
		cfg.num_tables = 1;
		app.worker_main = dying_worker;
		app.arg = (void *)&cases[i];
		CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, PARSA_EIO);
		CHECK_CONTAINS(e.msg, "worker 1 (node 4): scripted death");
		/* no node waited for a timeout (20 s) */
		CHECK(ps_clock_now() - t0 < 5);
	}
}

/* ------------------------------------------------------ wire and names */

static void test_msg_clock(void)
{
	uint64_t keys[2] = { 3, 9 }, vals[2] = { 1, 2 };
	struct ps_msg m = { 0 }, d;
	struct parsa_err e = { 0 };
	unsigned char *b;
	void *buf;
	size_t len;

	m.type = PS_MSG_PULL;
	m.src = 4;
	m.dst = 1;
	m.nkeys = 2;
	m.flags = PS_MSGF_CLOCK;
	m.clock = 123456789012LL;
	m.blob_len = 3;
	REQUIRE(ps_msg_encode(&m, keys, NULL, "abc", &buf, &len, NULL) == 0);
	CHECK_INT(len, ==, 64 + 16 + 8 + 3);
	CHECK_INT(ps_msg_decode(buf, len, &d, NULL), ==, 0);
	CHECK_INT(d.clock, ==, 123456789012LL);
	CHECK_INT(d.blob_len, ==, 3);
	CHECK(d.blob && memcmp(d.blob, "abc", 3) == 0);
	/* a clock flag whose 8 bytes are missing */
	b = buf;
	b[52] = 3; /* header blob_len 3 (with the flag) */
	parsa_err_clear(&e);
	CHECK_INT(ps_msg_decode(buf, len - 8, &d, &e), ==, PARSA_EPARSE);
	free(buf);

	memset(&m, 0, sizeof(m));
	m.type = PS_MSG_EAGER;
	m.src = 1;
	m.dst = 4;
	m.nkeys = 2;
	m.value_bytes = 8;
	m.flags = PS_MSGF_CLOCK;
	m.clock = 7;
	m.aux = 1;
	REQUIRE(ps_msg_encode(&m, keys, vals, NULL, &buf, &len, NULL) == 0);
	CHECK_INT(ps_msg_decode(buf, len, &d, NULL), ==, 0);
	CHECK_INT(d.clock, ==, 7);
	CHECK(d.values && memcmp(d.values, vals, 16) == 0);
	free(buf);
	m.flags = 0; /* EAGER without a clock */
	REQUIRE(ps_msg_encode(&m, keys, vals, NULL, &buf, &len, NULL) == 0);
	parsa_err_clear(&e);
	CHECK_INT(ps_msg_decode(buf, len, &d, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "no clock");
	free(buf);

	memset(&m, 0, sizeof(m));
	m.type = PS_MSG_TASK; /* a clock where none belongs */
	m.flags = PS_MSGF_CLOCK;
	m.dst = 4;
	REQUIRE(ps_msg_encode(&m, NULL, NULL, NULL, &buf, &len, NULL) == 0);
	parsa_err_clear(&e);
	CHECK_INT(ps_msg_decode(buf, len, &d, &e), ==, PARSA_EPARSE);
	CHECK_CONTAINS(e.msg, "carries a clock");
	free(buf);

	memset(&m, 0, sizeof(m));
	m.type = PS_MSG_CLOCK;
	m.flags = PS_MSGF_CLOCK;
	m.clock = -2;
	m.src = 4;
	m.dst = 1;
	REQUIRE(ps_msg_encode(&m, NULL, NULL, NULL, &buf, &len, NULL) == 0);
	parsa_err_clear(&e);
	CHECK_INT(ps_msg_decode(buf, len, &d, &e), ==, PARSA_EPARSE);
	free(buf);
}

static void test_consistency_names(void)
{
	static const char *const good[] = { "bsp", "ssp:0", "ssp:3",
					    "essp:10", "tau:0", "tau:inf" };
	static const char *const canon[] = { "bsp", "bsp", "ssp:3",
					     "essp:10", "tau:0", "tau:inf" };
	static const char *const bad[] = { "", "ssp", "ssp:", "ssp:-1",
					   "essp:x", "tau:1.5", "bsp:1",
					   "async" };
	struct ps_consistency c;
	struct parsa_err e = { 0 };
	char buf[32];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK_INT(ps_consistency_parse(good[i], &c, &e), ==, 0);
		CHECK_STR(ps_consistency_format(&c, buf, sizeof(buf)),
			  canon[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		parsa_err_clear(&e);
		CHECK_INT(ps_consistency_parse(bad[i], &c, &e), ==,
			  PARSA_EINVAL);
		CHECK_CONTAINS(e.msg, "consistency");
	}
}

/* ---------------------------------------------------------- bad calls */

static int bad_calls_worker(struct ps_node *w, void *arg,
			    struct parsa_err *err)
{
	int model = *(const int *)arg;
	uint64_t key = 1, ts;
	double v;
	struct parsa_err e = { 0 };
	int rc;

	if (model == PS_CONS_TAU) {
		rc = ps_clock(w, &e);
		return fail_if(rc != PARSA_ESTATE, err, "ps_clock under tau: "
			       "%d", rc);
	}
	/* S = 1: for clock 2 at clock 0 is too far ahead, clock -1 behind */
	rc = ps_pull_for(w, 0, &key, 1, &v, 2, &ts, &e);
	if (!rc || rc != PARSA_EINVAL)
		return fail_if(1, err, "pull for clock 2 at 0: %d", rc);
	rc = ps_pull_for(w, 0, &key, 1, &v, -1, &ts, &e);
	if (rc != PARSA_EINVAL)
		return fail_if(1, err, "pull for clock -1: %d", rc);
	rc = ps_eager_wait(w, 1, &e);
	if (rc != (model == PS_CONS_ESSP ? PARSA_EINVAL : PARSA_ESTATE))
		return fail_if(1, err, "eager wait: %d", rc);
	rc = ps_pull_for(w, 0, &key, 1, &v, 1, &ts, err); /* fine: S = 1 */
	if (!rc)
		rc = ps_wait(w, ts, err);
	return rc;
}

static void test_bad_calls(void)
{
	static const int models[] = { PS_CONS_TAU, PS_CONS_SSP,
				      PS_CONS_ESSP };
	struct ps_config cfg;
	struct parsa_err e = { 0 };

	for (size_t i = 0; i < 3; i++) {
		struct ps_app app = { 0 };

		cfg = config(1, 1, models[i], 1);
		cfg.tables[0].value_bytes = 8;
		cfg.tables[0].op = PS_OP_ADD_F64;
		cfg.tables[0].eager = 1;
		cfg.num_tables = 1;
		app.worker_main = bad_calls_worker;
		app.arg = (void *)&models[i];
		CHECK_INT(ps_run_threads(&cfg, &app, NULL, &e), ==, 0);
		if (e.code)
			fprintf(stderr, "  %s\n", e.msg);
	}
	/* ESSP needs an eager table; S >= 0 */
	parsa_err_clear(&e);
	cfg = config(1, 1, PS_CONS_ESSP, 1);
	cfg.tables[0].value_bytes = 8;
	cfg.tables[0].op = PS_OP_ADD_F64;
	cfg.num_tables = 1;
	CHECK_INT(ps_run_threads(&cfg, NULL, NULL, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "no table is eager");
	cfg = config(1, 1, PS_CONS_SSP, -1);
	CHECK_INT(ps_run_threads(&cfg, NULL, NULL, &e), ==, PARSA_EINVAL);
}

int main(void)
{
	RUN(test_msg_clock);
	RUN(test_consistency_names);
	RUN(test_ssp_bound_with_slow_worker);
	RUN(test_ssp_more_layouts);
	RUN(test_essp_pushes_only_used_keys);
	RUN(test_on_clock_and_parked_hooks);
	RUN(test_dying_worker_stops_all);
	RUN(test_bad_calls);
	return harness_done();
}
