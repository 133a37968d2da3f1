/*
 * test_train_run: the trainer on the threads transport, its reader and
 * the emulated link.
 *
 *  - worker i only ever uses its own examples (trace), and every push and
 *    pull to server j is counted local iff server j sits on worker i's
 *    machine: exact byte counts for a placement where the answer is known;
 *  - with k = 1 and tau = 0 the objective decreases every pass and nothing
 *    is remote; different tau and k reach about the same objective;
 *  - the reader: labels, values, duplicates, test features, errors with
 *    file:line:col;
 *  - ps_link delays messages between machines only, by about the latency.
 */
#include <math.h>
#include <stdarg.h>

#include "harness.h"
#include "ps_link.h"
#include "ps_msg.h"
#include "train_data.h"
#include "train_run.h"

static char tmpdir[] = "/tmp/test_train_XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];
	FILE *f;

	snprintf(p, 512, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return p;
}

/* A random LIBSVM set: n rows over d features, ~nnz per row. */
static const char *random_set(const char *name, int n, int d, int nnz,
			      uint64_t seed)
{
	static char buf[1 << 20];
	size_t at = 0;

	for (int r = 0; r < n; r++) {
		int label = 0;

		for (int e = 0; e < nnz; e++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			int f = (int)((seed >> 33) % (uint64_t)d) + 1;

			label += f % 3 == 0 ? 1 : -1;
			at += (size_t)snprintf(buf + at, sizeof(buf) - at,
					       "%s%d:%g", e ? " " : "", f,
					       0.5 + (double)(f % 5) / 4);
		}
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "\n");
		/* prepend the label: rewrite the line start */
		{
			char *line = buf + at - 1;

			while (line > buf && line[-1] != '\n')
				line--;
			memmove(line + 3, line, (size_t)(buf + at - line));
			memcpy(line, label > 0 ? "+1 " : "-1 ", 3);
			at += 3;
			buf[at] = '\0';
		}
	}
	return write_file(name, buf);
}

struct collect {
	int n;
	struct train_pass p[64];
};

static void on_pass(void *arg, const struct train_pass *p)
{
	struct collect *c = arg;

	if (c->n < 64)
		c->p[c->n++] = *p;
}

static void test_reader(void)
{
	struct train_data d, t;
	struct parsa_err err = {0};
	const char *p = write_file("r.svm", "# comment\n+1 3:0.5 1:2 3:9\n\n"
				   "-1 qid:4 7:1 # tail\n0\n2 1:1e-1\n");
	const char *q = write_file("t.svm", "1 1:1 99:5 7:2\n");

	CHECK_INT(train_data_read(p, NULL, &d, &err), ==, 0);
	CHECK_INT(d.n_rows, ==, 4);
	CHECK_INT(d.n_cols, ==, 3);
	CHECK_INT(d.nnz, ==, 4);
	CHECK(d.y[0] == 1 && d.y[1] == -1 && d.y[2] == -1 && d.y[3] == 1);
	CHECK(d.feat_id[0] == 3 && d.feat_id[1] == 1 && d.feat_id[2] == 7);
	CHECK(d.val[0] == 0.5 && d.val[1] == 2); /* duplicate 3: first kept */
	CHECK(d.rowptr[2] == 3 && d.rowptr[3] == 3);
	CHECK_INT(train_data_read(q, &d, &t, &err), ==, 0);
	CHECK_INT(t.n_rows, ==, 1);
	CHECK_INT(t.nnz, ==, 2);
	CHECK_INT(t.dropped, ==, 1);
	CHECK(t.col[0] == 1 && t.col[1] == 2);
	train_data_release(&t);
	train_data_release(&d);

	p = write_file("bad1.svm", "+1 1:1\nyes 2:1\n");
	CHECK_INT(train_data_read(p, NULL, &d, &err), ==, PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "bad1.svm:2:1: label is not a number");
	parsa_err_clear(&err);
	p = write_file("bad2.svm", "+1 1:1 2:x\n");
	CHECK_INT(train_data_read(p, NULL, &d, &err), ==, PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "bad2.svm:1:10: bad feature value");
	parsa_err_clear(&err);
	p = write_file("bad3.svm", "+1 1:1 abc\n");
	CHECK_INT(train_data_read(p, NULL, &d, &err), ==, PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "bad3.svm:1:8: expected 'index:value'");
}

/* Random bytes and mangled lines: an error or a dataset, never a crash
 * (ASan in make check). */
static void test_reader_garbage(void)
{
	static const char alphabet[] = "0123456789:+-. \t#\nqide\r\x01";
	uint64_t seed = 99;

	for (int t = 0; t < 300; t++) {
		char text[400];
		int n = 1 + t % 399;
		struct train_data d;
		struct parsa_err err = {0};
		int rc;

		for (int i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			text[i] = alphabet[(seed >> 33) % (sizeof(alphabet) - 1)];
		}
		text[n] = '\0';
		rc = train_data_read(write_file("garbage.svm", text), NULL, &d,
				     &err);
		CHECK(rc == 0 || rc == PARSA_EPARSE);
		if (rc == 0) {
			CHECK(d.rowptr[d.n_rows] == d.nnz);
			train_data_release(&d);
		} else {
			CHECK(strstr(err.msg, "garbage.svm:") != NULL);
		}
	}
}

/* Run with part/owner; returns 0 and fills res. */
static int run(const struct train_data *d, const uint32_t *part,
	       const uint32_t *owner, uint32_t k, struct train_opts *o,
	       struct collect *c, struct train_result *res,
	       struct parsa_err *err)
{
	struct train_problem pb = {d, NULL, part, owner, k};

	o->on_pass = on_pass;
	o->arg = c;
	c->n = 0;
	return train_run(&pb, o, res, err);
}

/* d with a placement's feature side only: ids in this order, no rows. */
static void fixed_features(struct train_data *d, const uint64_t *ids,
			   uint32_t n)
{
	struct parsa_err err = {0};
	uint32_t c;

	train_data_init(d);
	for (uint32_t i = 0; i < n; i++)
		REQUIRE(part_idmap_get(&d->map, ids[i], &c, NULL, "features",
				       &err) == 0);
	d->n_cols = n;
	d->feat_id = malloc((n + 1) * sizeof(uint64_t));
	REQUIRE(d->feat_id != NULL);
	memcpy(d->feat_id, ids, n * sizeof(uint64_t));
}

/* train_data_read_part: own examples parsed, the others empty rows. */
static void test_reader_part(void)
{
	struct train_data d;
	struct parsa_err err = {0};
	const uint64_t ids[3] = {3, 1, 7};
	const uint32_t part[4] = {0, 1, 0, 1};
	const char *p = write_file("part.svm", "# c\n+1 3:0.5 1:2 3:9\n\n"
				   "-1 qid:4 7:1 # tail\n0\n2 1:1e-1 8:1\n");

	fixed_features(&d, ids, 3);
	CHECK_INT(train_data_read_part(p, part, 4, 0, 2, &d, &err), ==, 0);
	CHECK_INT(d.n_rows, ==, 4);
	CHECK_INT(d.n_parsed, ==, 2);
	CHECK_INT(d.nnz, ==, 2);
	CHECK(d.rowptr[1] == 2 && d.rowptr[2] == 2 && d.rowptr[4] == 2);
	CHECK(d.y[0] == 1 && d.y[2] == -1);
	CHECK(d.col[0] == 0 && d.col[1] == 1);
	CHECK(d.val[0] == 0.5 && d.val[1] == 2);
	train_data_release(&d);

	/* rank 1 owns example 3, whose feature 8 the placement lacks */
	fixed_features(&d, ids, 3);
	CHECK_INT(train_data_read_part(p, part, 4, 1, 2, &d, &err), ==,
		  PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "part.svm:6:10: feature 8 (example 3) is "
		       "not in the placement");
	CHECK(d.rowptr == NULL && d.n_rows == 0 && d.map.n == 3);
	parsa_err_clear(&err);
	/* examples past the placement's are counted, not parsed */
	CHECK_INT(train_data_read_part(p, part, 3, 1, 2, &d, &err), ==, 0);
	CHECK_INT(d.n_rows, ==, 4);
	CHECK_INT(d.n_parsed, ==, 1);
	CHECK(d.nnz == 1 && d.col[0] == 2 && d.y[1] == -1);
	train_data_release(&d);
}

struct load_ctx {
	const char *path;
	const uint32_t *part;
	uint32_t n;
	struct train_data *d;
	int fail;
};

static int load_rows(void *arg, uint32_t rank, uint32_t nranks,
		     struct parsa_err *err)
{
	struct load_ctx *l = arg;

	if (l->fail)
		return parsa_fail(err, PARSA_EPARSE, "cannot load rank %u",
				  rank);
	return train_data_read_part(l->path, l->part, l->n, rank, nranks,
				    l->d, err);
}

/* train_opts.load (threads: rank 0 of 1) gives the full read's run (k =
 * 2: a sum of two gradients does not depend on the arrival order, so the
 * runs are bit-identical); a failed load stops the run with its message. */
static void test_run_with_load(void)
{
	struct train_data d, e;
	struct train_opts o;
	struct train_result r1, r2;
	struct collect c;
	struct parsa_err err = {0};
	uint32_t *part, *owner, k = 2;
	const char *p = random_set("load.svm", 150, 40, 5, 11);
	struct load_ctx l;

	REQUIRE(train_data_read(p, NULL, &d, &err) == 0);
	part = malloc(d.n_rows * sizeof(uint32_t));
	owner = malloc(d.n_cols * sizeof(uint32_t));
	for (uint32_t r = 0; r < d.n_rows; r++)
		part[r] = (r * 5) % k;
	for (uint32_t j = 0; j < d.n_cols; j++)
		owner[j] = (j * 7) % k;
	train_opts_default(&o);
	o.passes = 3;
	o.blocks = 4;
	CHECK_INT(run(&d, part, owner, k, &o, &c, &r1, &err), ==, 0);
	fixed_features(&e, d.feat_id, d.n_cols);
	e.n_rows = d.n_rows; /* rows pending */
	l = (struct load_ctx){p, part, d.n_rows, &e, 0};
	o.load = load_rows;
	o.load_arg = &l;
	CHECK_INT(run(&e, part, owner, k, &o, &c, &r2, &err), ==, 0);
	CHECK_STR(err.msg, "");
	REQUIRE(r1.w != NULL && r2.w != NULL);
	CHECK(r1.last.objective == r2.last.objective);
	CHECK(memcmp(r1.w, r2.w, d.n_cols * sizeof(double)) == 0);
	CHECK(r1.nnz == d.nnz && r2.nnz == d.nnz);
	REQUIRE(r2.parsed != NULL);
	CHECK_INT(r2.parsed[0], ==, d.n_rows);
	train_result_release(&r2);
	train_data_release(&e);

	fixed_features(&e, d.feat_id, d.n_cols);
	e.n_rows = d.n_rows;
	l = (struct load_ctx){p, part, d.n_rows, &e, 1};
	CHECK_INT(run(&e, part, owner, k, &o, &c, &r2, &err), ==,
		  PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "cannot load rank 0");
	train_result_release(&r2);
	train_result_release(&r1);
	train_data_release(&e);
	train_data_release(&d);
	free(part);
	free(owner);
}


/*
 * k = 3: examples round-robin; every feature owned by server 0.  Worker 0
 * sits with server 0 (all local), workers 1 and 2 have only remote keys.
 * Per pass each worker sends 8 + 8 key bytes and receives/sends 16 + 8
 * value bytes for each key of N(U_i).
 */
static void test_own_examples_and_local_counting(void)
{
	struct train_data d;
	struct train_opts o;
	struct train_result res;
	struct collect c;
	struct parsa_err err = {0};
	uint32_t *part, *owner, *trace, k = 3, passes = 2;
	uint64_t nu[3] = {0};
	const char *p = random_set("own.svm", 200, 50, 6, 7);

	REQUIRE(train_data_read(p, NULL, &d, &err) == 0);
	part = malloc(d.n_rows * sizeof(uint32_t));
	owner = calloc(d.n_cols, sizeof(uint32_t));
	trace = calloc(d.n_rows, sizeof(uint32_t));
	for (uint32_t r = 0; r < d.n_rows; r++)
		part[r] = (r * 7) % k;
	for (uint32_t i = 0; i < k; i++) { /* |N(U_i)| */
		uint8_t *seen = calloc(d.n_cols, 1);

		for (uint32_t r = 0; r < d.n_rows; r++)
			for (uint64_t e = d.rowptr[r]; part[r] == i &&
			     e < d.rowptr[r + 1]; e++)
				if (!seen[d.col[e]]++)
					nu[i]++;
		free(seen);
	}
	train_opts_default(&o);
	o.passes = passes;
	o.blocks = 4;
	o.trace_rows = trace;
	CHECK_INT(run(&d, part, owner, k, &o, &c, &res, &err), ==, 0);
	CHECK_STR(err.msg, "");
	for (uint32_t r = 0; r < d.n_rows; r++)
		CHECK_INT(trace[r], ==, part[r] + 1);
	REQUIRE(res.per_worker != NULL);
	CHECK_INT(res.per_worker[0].key_bytes[1], ==, 0);
	CHECK_INT(res.per_worker[0].val_bytes[1], ==, 0);
	CHECK_INT(res.per_worker[0].msgs[1], ==, 0);
	CHECK_INT(res.per_worker[0].key_bytes[0], ==, passes * nu[0] * 16);
	CHECK_INT(res.per_worker[0].val_bytes[0], ==, passes * nu[0] * 24);
	for (uint32_t i = 1; i < k; i++) {
		CHECK_INT(res.per_worker[i].key_bytes[0], ==, 0);
		CHECK_INT(res.per_worker[i].msgs[0], ==, 0);
		CHECK_INT(res.per_worker[i].key_bytes[1], ==,
			  passes * nu[i] * 16);
		CHECK_INT(res.per_worker[i].val_bytes[1], ==,
			  passes * nu[i] * 24);
		/* one push, one pull and its reply per block with keys */
		CHECK(res.per_worker[i].msgs[1] % 3 == 0);
		CHECK(res.per_worker[i].msgs[1] > 0);
	}
	CHECK_INT(c.n, ==, (int)passes);
	CHECK_INT(c.p[1].t.val_bytes[1], ==, (nu[1] + nu[2]) * 24);
	CHECK(c.p[1].wire_bytes[1] > 0); /* remote workers' transport bytes */
	train_result_release(&res);
	free(part);
	free(owner);
	free(trace);
	train_data_release(&d);
}

/* Random owners: local iff owner == worker (machine i hosts both). */
static void test_local_iff_same_machine(void)
{
	struct train_data d;
	struct train_opts o;
	struct train_result res;
	struct collect c;
	struct parsa_err err = {0};
	uint32_t *part, *owner, k = 4;
	uint64_t loc[4] = {0}, rem[4] = {0};
	const char *p = random_set("iff.svm", 300, 80, 5, 11);

	REQUIRE(train_data_read(p, NULL, &d, &err) == 0);
	part = malloc(d.n_rows * sizeof(uint32_t));
	owner = malloc(d.n_cols * sizeof(uint32_t));
	for (uint32_t r = 0; r < d.n_rows; r++)
		part[r] = (r * 13 + 1) % k;
	for (uint32_t j = 0; j < d.n_cols; j++)
		owner[j] = (j * 5 + 3) % k;
	for (uint32_t i = 0; i < k; i++) {
		uint8_t *seen = calloc(d.n_cols, 1);

		for (uint32_t r = 0; r < d.n_rows; r++)
			for (uint64_t e = d.rowptr[r]; part[r] == i &&
			     e < d.rowptr[r + 1]; e++)
				if (!seen[d.col[e]]++)
					(owner[d.col[e]] == i ? loc : rem)[i]++;
		free(seen);
	}
	train_opts_default(&o);
	o.passes = 1;
	o.blocks = 3;
	o.tau = 2;
	CHECK_INT(run(&d, part, owner, k, &o, &c, &res, &err), ==, 0);
	for (uint32_t i = 0; i < k && res.per_worker; i++) {
		CHECK_INT(res.per_worker[i].val_bytes[0], ==, loc[i] * 24);
		CHECK_INT(res.per_worker[i].val_bytes[1], ==, rem[i] * 24);
		CHECK_INT(res.per_worker[i].key_bytes[1], ==, rem[i] * 16);
	}
	train_result_release(&res);
	free(part);
	free(owner);
	train_data_release(&d);
}

static double final_objective(const struct train_data *d, uint32_t k,
			      int tau, uint32_t passes, int check_monotone)
{
	struct train_opts o;
	struct train_result res;
	struct collect c;
	struct parsa_err err = {0};
	uint32_t *part = malloc(d->n_rows * sizeof(uint32_t));
	uint32_t *owner = malloc(d->n_cols * sizeof(uint32_t));
	double obj = NAN;

	for (uint32_t r = 0; r < d->n_rows; r++)
		part[r] = r % k;
	for (uint32_t j = 0; j < d->n_cols; j++)
		owner[j] = (j * 3) % k;
	train_opts_default(&o);
	o.passes = passes;
	o.tau = tau;
	o.lambda = 0.5;
	CHECK_INT(run(d, part, owner, k, &o, &c, &res, &err), ==, 0);
	CHECK_INT(c.n, ==, (int)passes);
	for (int i = 1; check_monotone && i < c.n; i++)
		CHECK(c.p[i].objective <= c.p[i - 1].objective * (1 + 1e-12));
	if (k == 1) {
		CHECK_INT(res.last.t.val_bytes[1], ==, 0);
		CHECK_INT(res.last.wire_bytes[1], ==, 0);
	}
	if (res.w) {
		double l1 = 0;

		for (uint32_t j = 0; j < d->n_cols; j++)
			l1 += fabs(res.w[j]);
		CHECK(fabs(l1 - res.last.l1) <= 1e-9 * (1 + l1));
	}
	obj = res.last.objective;
	train_result_release(&res);
	free(part);
	free(owner);
	return obj;
}

static void test_converges_same_objective(void)
{
	struct train_data d;
	struct parsa_err err = {0};
	const char *p = random_set("conv.svm", 400, 60, 8, 3);
	double a, b, c;

	REQUIRE(train_data_read(p, NULL, &d, &err) == 0);
	a = final_objective(&d, 1, 0, 40, 1);
	b = final_objective(&d, 3, 0, 40, 1);
	c = final_objective(&d, 4, 2, 40, 1); /* the delay is in the bound */
	CHECK(fabs(a - b) <= 0.01 * a);
	CHECK(fabs(a - c) <= 0.01 * a);
	c = final_objective(&d, 2, 7, 40, 1); /* tau = blocks - 1 */
	CHECK(fabs(a - c) <= 0.01 * a);
	train_data_release(&d);
}

/* KKT filter: fewer value bytes after the first pass, same objective. */
static void test_kkt_filter(void)
{
	struct train_data d;
	struct train_opts o;
	struct train_result res;
	struct collect c;
	struct parsa_err err = {0};
	uint32_t *part, *owner, k = 2;
	double obj[2];
	uint64_t bytes[2][2];
	const char *p = random_set("kkt.svm", 400, 300, 6, 5);

	REQUIRE(train_data_read(p, NULL, &d, &err) == 0);
	part = malloc(d.n_rows * sizeof(uint32_t));
	owner = malloc(d.n_cols * sizeof(uint32_t));
	for (uint32_t r = 0; r < d.n_rows; r++)
		part[r] = r % k;
	for (uint32_t j = 0; j < d.n_cols; j++)
		owner[j] = j % k;
	for (int kkt = 0; kkt < 2; kkt++) {
		train_opts_default(&o);
		o.passes = 24;
		o.lambda = 4;
		o.kkt = kkt;
		CHECK_INT(run(&d, part, owner, k, &o, &c, &res, &err), ==, 0);
		obj[kkt] = res.last.objective;
		bytes[kkt][0] = c.p[0].t.val_bytes[0] + c.p[0].t.val_bytes[1];
		bytes[kkt][1] = c.p[1].t.val_bytes[0] + c.p[1].t.val_bytes[1];
		train_result_release(&res);
	}
	CHECK_INT(bytes[1][0], ==, bytes[0][0]); /* the first pass is full */
	CHECK(bytes[1][1] < bytes[0][1] / 2);    /* then most keys skip */
	CHECK(fabs(obj[1] - obj[0]) <= 0.01 * obj[0]);
	free(part);
	free(owner);
	train_data_release(&d);
}

/* ------------------------------------------------------------------ link */

static void *message(uint32_t src, uint32_t dst, size_t *len)
{
	struct ps_msg m = {0};
	void *buf = NULL;
	char blob[32] = "hello";

	m.type = PS_MSG_PROGRESS;
	m.src = src;
	m.dst = dst;
	m.blob_len = sizeof(blob);
	ps_msg_encode(&m, NULL, NULL, blob, &buf, len, NULL);
	return buf;
}

/* Seconds until node receives a message sent now from src. */
static double delivery(struct ps_transport *tp, uint32_t src, uint32_t dst)
{
	size_t len = 0, rl;
	void *buf = message(src, dst, &len), *got = NULL;
	double t0 = ps_clock_now();

	CHECK_INT(ps_transport_send(tp, dst, buf, len, NULL), ==, 0);
	CHECK_INT(ps_transport_recv(tp, dst, 5.0, &got, &rl, NULL), ==, 0);
	CHECK(got != NULL);
	free(got);
	return ps_clock_now() - t0;
}

static void test_link_delays_remote_only(void)
{
	/* 2 servers, 2 workers, 2 machines: server 0 (node 1) and worker 0
	 * (node 3) on machine 0, server 1 (node 2), worker 1 (node 4) on 1 */
	struct ps_layout l = {2, 2, 2};
	struct ps_link_spec sp = {1e9, 0.05};
	struct ps_link_stats st;
	struct parsa_err err = {0};
	struct ps_transport *tp = ps_transport_threads_create(&l, &err);
	double local, remote, remote2;

	tp = ps_link_create(tp, &sp, &err);
	REQUIRE(tp != NULL);
	CHECK(ps_link_is_link(tp));
	local = delivery(tp, 3, 1);  /* worker 0 -> server 0 */
	remote = delivery(tp, 3, 2); /* worker 0 -> server 1 */
	remote2 = delivery(tp, 0, 4); /* scheduler -> worker 1 */
	CHECK(local < 0.02);
	CHECK(remote >= 0.049 && remote < 1.0);
	CHECK(remote2 >= 0.049 && remote2 < 1.0);
	ps_link_get_stats(tp, &st);
	CHECK_INT(st.delayed_msgs, ==, 2);
	CHECK_INT(st.direct_msgs, ==, 1);
	CHECK_INT(ps_transport_close(tp, 5.0, &err), ==, 0);
	ps_transport_destroy(tp);
}

/* Bandwidth: 10 messages of 100 kB (0.8 Mbit) from machine 1 to machine 0
 * over 80 Mbit/s take about 0.1 s in all, and arrive in send order. */
static void test_link_bandwidth_and_order(void)
{
	struct ps_layout l = {1, 2, 2}; /* node 3 = worker 1, machine 1 */
	struct ps_link_spec sp = {80e6, 0};
	struct parsa_err err = {0};
	struct ps_transport *tp = ps_transport_threads_create(&l, &err);
	static char blob[100000];
	double t0;

	tp = ps_link_create(tp, &sp, &err);
	REQUIRE(tp != NULL);
	t0 = ps_clock_now();
	for (int i = 0; i < 10; i++) {
		struct ps_msg m = {0};
		void *buf = NULL;
		size_t len;

		blob[0] = (char)i;
		m.type = PS_MSG_PROGRESS;
		m.src = 3;
		m.dst = 1;
		m.blob_len = sizeof(blob);
		CHECK_INT(ps_msg_encode(&m, NULL, NULL, blob, &buf, &len, NULL),
			  ==, 0);
		CHECK_INT(ps_transport_send(tp, 1, buf, len, NULL), ==, 0);
	}
	CHECK(ps_clock_now() - t0 < 0.05); /* send never blocks */
	for (int i = 0; i < 10; i++) {
		void *got = NULL;
		size_t rl;
		struct ps_msg m;

		CHECK_INT(ps_transport_recv(tp, 1, 5.0, &got, &rl, NULL), ==, 0);
		REQUIRE(got != NULL);
		CHECK_INT(ps_msg_decode(got, rl, &m, NULL), ==, 0);
		CHECK_INT(m.blob[0], ==, i);
		free(got);
	}
	CHECK(ps_clock_now() - t0 >= 0.099);
	CHECK(ps_clock_now() - t0 < 2.0);
	CHECK_INT(ps_transport_close(tp, 5.0, &err), ==, 0);
	ps_transport_destroy(tp);
}

/* Seconds until 5 + 5 messages of 100 kB from worker 1 (machine 1) reach
 * server 0 (machine 0) and server 2 (machine 2) over 80 Mbit/s. */
static double two_streams(int per_machine)
{
	struct ps_layout l = {3, 3, 3};
	struct ps_link_spec sp = {80e6, 0, per_machine};
	struct parsa_err err = {0};
	struct ps_transport *tp = ps_transport_threads_create(&l, &err);
	static char blob[100000];
	double t0;

	tp = ps_link_create(tp, &sp, &err);
	if (!tp)
		return -1;
	t0 = ps_clock_now();
	for (int i = 0; i < 10; i++) {
		struct ps_msg m = {0};
		void *buf = NULL;
		size_t len;

		m.type = PS_MSG_PROGRESS;
		m.src = 5;
		m.dst = i % 2 ? 1 : 3;
		m.blob_len = sizeof(blob);
		ps_msg_encode(&m, NULL, NULL, blob, &buf, &len, NULL);
		ps_transport_send(tp, m.dst, buf, len, NULL);
	}
	for (int i = 0; i < 10; i++) {
		void *got = NULL;
		size_t rl;

		ps_transport_recv(tp, i % 2 ? 1 : 3, 5.0, &got, &rl, NULL);
		free(got);
	}
	t0 = ps_clock_now() - t0;
	ps_transport_close(tp, 5.0, &err);
	ps_transport_destroy(tp);
	return t0;
}

/* A bucket per pair lets both streams run at full speed; a NIC bucket
 * per sending machine makes them share it. */
static void test_link_pair_vs_nic(void)
{
	double pair = two_streams(0), nic = two_streams(1);

	CHECK(pair >= 0.049 && pair < 2.0);
	CHECK(nic >= 0.099 && nic < 2.0);
	CHECK(nic > pair + 0.03); /* 0.1 s vs 0.05 s */
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_reader);
	RUN(test_reader_garbage);
	RUN(test_reader_part);
	RUN(test_own_examples_and_local_counting);
	RUN(test_run_with_load);
	RUN(test_local_iff_same_machine);
	RUN(test_converges_same_objective);
	RUN(test_kkt_filter);
	RUN(test_link_delays_remote_only);
	RUN(test_link_bandwidth_and_order);
	RUN(test_link_pair_vs_nic);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tmpdir);
	}
	return harness_done();
}
