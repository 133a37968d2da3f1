/*
 * test_api: the C library's API (include/parsa.h).
 *
 * The placement of psa_partition on random CSR arrays is the one the
 * command line's own path gives (part_opts_parse_argv on a `parsa
 * partition` argv, part_read_file of the same data written as LIBSVM,
 * part_run), for every method and several qualities, k and seeds; every
 * error path returns its code with a message; cancel (flag, callback)
 * gives PSA_ECANCELLED; progress never goes back and ends at 1; results
 * outlive their graph; two threads partition one graph at once.  Run
 * under ASan by make check (nothing leaks).
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>

#include "parsa.h"
#include "parsa_rng.h"
#include "part_opts.h"
#include "part_reader.h"
#include "part_run.h"

struct csr {
	uint32_t n;
	uint64_t *ptr, *ids;
};

static void csr_free(struct csr *c)
{
	free(c->ptr);
	free(c->ids);
}

/* n rows of 0..max_deg ids drawn from a pool of 64-bit ids (some huge),
 * with repeats within rows and empty rows. */
static void csr_random(struct csr *c, struct parsa_rng *r, uint32_t n,
		       uint32_t pool, uint32_t max_deg)
{
	uint64_t nnz = 0;

	c->n = n;
	c->ptr = malloc((n + 1) * sizeof(uint64_t));
	c->ids = malloc(((size_t)n * max_deg + 1) * sizeof(uint64_t));
	c->ptr[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t d = (uint32_t)parsa_rng_below(r, max_deg + 1);

		for (uint32_t j = 0; j < d; j++) {
			uint64_t v = parsa_rng_below(r, pool);

			c->ids[nnz++] = v % 3 == 0 ? v * 0x9E3779B97F4A7C15ull
						   : v;
		}
		c->ptr[i + 1] = nnz;
	}
}

static void csr_write_libsvm(const struct csr *c, const char *path)
{
	FILE *f = fopen(path, "w");

	for (uint32_t i = 0; f && i < c->n; i++) {
		fprintf(f, "%d", (int)(i % 2));
		for (uint64_t e = c->ptr[i]; e < c->ptr[i + 1]; e++)
			fprintf(f, " %" PRIu64 ":1", c->ids[e]);
		fputc('\n', f);
	}
	if (f)
		fclose(f);
}

static char tmpdir[] = "/tmp/test_api.XXXXXX";

/* The command line's path: parse argv as `parsa partition`, read, run. */
static int cli_run(const char *path, char **args, int nargs,
		   struct part_dataset *ds, struct part_result *res)
{
	char *argv[32] = {"partition", (char *)path};
	struct part_opts o;
	const char *data;
	struct parsa_err err;

	for (int i = 0; i < nargs; i++)
		argv[2 + i] = args[i];
	if (part_opts_parse_argv(2 + nargs, argv, PART_OPT_PARTITION, &o,
				 &data, NULL) >= 0)
		return -1;
	parsa_err_clear(&err);
	if (part_read_file(data, &o.read, ds, &err))
		return -1;
	o.run.pu.progress = NULL;
	return part_run(ds, &o.run, res, &err);
}

static void test_same_as_cli(void)
{
	static const char *const methods[] = {"parsa", "random", "greedy", "metis"};
	static const char *const qualities[] = {"fast", "default", "best"};
	struct parsa_rng rng;
	char path[64];

	parsa_rng_seed(&rng, 7);
	snprintf(path, sizeof(path), "%s/data.svm", tmpdir);
	for (int t = 0; t < 12; t++) {
		struct csr c;
		struct part_dataset ds;
		struct part_result res;
		psa_graph *g = NULL;
		psa_opts *o = NULL;
		psa_result *r = NULL;
		psa_metrics m;
		char kbuf[16], sbuf[24];
		const char *method = methods[t % 4];
		const char *quality = qualities[t % 3];
		uint32_t k = 1 + (uint32_t)parsa_rng_below(&rng, 7);
		uint64_t seed = parsa_rng_below(&rng, 1000);
		char *args[] = {"-k", kbuf, "--seed", sbuf, "--method",
				(char *)method, "--quality", (char *)quality,
				"--threads", "2"};
		psa_error e;

		/* drawn in the order gcc evaluated them as arguments: the same cases */
		uint32_t cols = 60 + (uint32_t)parsa_rng_below(&rng, 200);
		uint32_t rows = 40 + (uint32_t)parsa_rng_below(&rng, 400);

		csr_random(&c, &rng, rows, cols, 9);
		csr_write_libsvm(&c, path);
		snprintf(kbuf, sizeof(kbuf), "%u", k);
		snprintf(sbuf, sizeof(sbuf), "%" PRIu64, seed);
		part_dataset_init(&ds);
		part_result_init(&res);
		REQUIRE(cli_run(path, args, 10, &ds, &res) == 0);
		CHECK_INT(psa_graph_from_csr(&g, c.n, c.ptr, c.ids, &e), ==, 0);
		CHECK_INT(psa_opts_new(&o, &e), ==, 0);
		CHECK_INT(psa_opts_set_k(o, k, &e), ==, 0);
		CHECK_INT(psa_opts_set_seed(o, seed, &e), ==, 0);
		CHECK_INT(psa_opts_set_method(o, method, &e), ==, 0);
		CHECK_INT(psa_opts_set_threads(o, 2, &e), ==, 0);
		/* the preset after the others: applied first all the same */
		CHECK_INT(psa_opts_set_quality(o, quality, &e), ==, 0);
		CHECK_INT(psa_partition(g, o, &r, &e), ==, 0);
		REQUIRE(r != NULL);
		CHECK_INT(psa_graph_examples(g), ==, ds.g.n_rows);
		CHECK_INT(psa_graph_features(g), ==, ds.g.n_cols);
		CHECK_INT(psa_graph_nnz(g), ==, parsa_graph_nnz(&ds.g));
		CHECK(memcmp(psa_graph_feature_ids(g), ds.feat_id,
			     ds.g.n_cols * sizeof(uint64_t)) == 0);
		CHECK_INT(psa_result_k(r), ==, k);
		CHECK(memcmp(psa_result_parts(r), res.part,
			     ds.g.n_rows * sizeof(uint32_t)) == 0);
		CHECK(memcmp(psa_result_owners(r), res.owner,
			     ds.g.n_cols * sizeof(uint32_t)) == 0);
		CHECK_INT(psa_result_metrics(r, PSA_PLACEMENT, &m, &e), ==, 0);
		CHECK(m.T_sum == res.m.T_sum && m.M_max == res.m.M_max &&
		      m.T_max == res.m.T_max && m.RF == res.m.RF &&
		      m.local_fraction == res.m.local_fraction);
		CHECK_INT(psa_result_metrics(r, PSA_RANDOM, &m, &e), ==, 0);
		CHECK(m.T_sum == res.rnd.T_sum && m.M_max == res.rnd.M_max);
		psa_result_free(r);
		psa_opts_free(o);
		psa_graph_free(g);
		part_result_release(&res);
		part_dataset_release(&ds);
		csr_free(&c);
	}
	remove(path);
}

/* A graph of n examples, 1 + i % 5 features each from 3n ids. */
static psa_graph *graph_of(uint32_t n)
{
	struct parsa_rng rng;
	struct csr c;
	psa_graph *g = NULL;

	parsa_rng_seed(&rng, n);
	csr_random(&c, &rng, n, 3 * n, 6);
	if (psa_graph_from_csr(&g, c.n, c.ptr, c.ids, NULL))
		g = NULL;
	csr_free(&c);
	return g;
}

static void test_read_write_evaluate(void)
{
	psa_graph *g = NULL, *g2 = NULL;
	psa_opts *o = NULL;
	psa_result *r = NULL, *ev = NULL;
	psa_metrics a, b;
	psa_error e;
	char prefix[64], path[80];
	uint32_t *parts, *owners, k = 0;
	char *json;

	g = graph_of(500);
	REQUIRE(g != NULL);
	psa_opts_new(&o, NULL);
	psa_opts_set(o, "k", "5", NULL);
	CHECK_INT(psa_partition(g, o, &r, &e), ==, 0);
	snprintf(prefix, sizeof(prefix), "%s/out", tmpdir);
	CHECK_INT(psa_result_write(r, prefix, &e), ==, 0);
	parts = calloc(psa_graph_examples(g), sizeof(uint32_t));
	owners = calloc(psa_graph_features(g), sizeof(uint32_t));
	CHECK_INT(psa_placement_read(g, prefix, parts, owners, &k, &e), ==, 0);
	CHECK(k <= 5);
	CHECK(memcmp(parts, psa_result_parts(r),
		     psa_graph_examples(g) * sizeof(uint32_t)) == 0);
	CHECK(memcmp(owners, psa_result_owners(r),
		     psa_graph_features(g) * sizeof(uint32_t)) == 0);
	CHECK_INT(psa_evaluate(g, 5, parts, owners, o, &ev, &e), ==, 0);
	psa_result_metrics(r, PSA_PLACEMENT, &a, NULL);
	psa_result_metrics(ev, PSA_PLACEMENT, &b, NULL);
	CHECK(a.T_sum == b.T_sum && a.M_max == b.M_max && a.T_max == b.T_max &&
	      a.imbalance == b.imbalance && a.V_used == b.V_used);
	json = psa_result_report_json(r);
	CHECK_CONTAINS(json, "\"T_sum\"");
	CHECK_CONTAINS(json, "\"params\"");
	psa_free(json);
	json = psa_result_report_json(ev);
	CHECK_CONTAINS(json, "\"eval\"");
	psa_free(json);
	/* a parse error names file:line:col ("id part" is no LIBSVM) */
	snprintf(path, sizeof(path), "%s.features", prefix);
	CHECK_INT(psa_graph_read(&g2, path, "libsvm", NULL, &e), ==,
		  PSA_EPARSE);
	CHECK_CONTAINS(e.message, ".features:1:");
	CHECK(g2 == NULL);
	remove(path);
	snprintf(path, sizeof(path), "%s.examples", prefix);
	remove(path);
	snprintf(path, sizeof(path), "%s.json", prefix);
	remove(path);
	free(parts);
	free(owners);
	psa_result_free(ev);
	psa_result_free(r);
	psa_opts_free(o);
	psa_graph_free(g);
}

static void test_errors(void)
{
	static const uint64_t ptr[] = {0, 2, 3}, ids[] = {1, 2, 3};
	static const uint64_t bad0[] = {1, 2, 3}, dec[] = {0, 2, 1};
	psa_graph *g = NULL;
	psa_opts *o = NULL;
	psa_result *r = NULL;
	psa_error e;
	uint32_t parts[2] = {0, 0}, owners[3] = {0, 0, 0}, k;

	CHECK_INT(psa_graph_from_csr(NULL, 2, ptr, ids, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_graph_from_csr(&g, 2, NULL, ids, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_graph_from_csr(&g, 2, ptr, NULL, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "col_ids");
	CHECK_INT(psa_graph_from_csr(&g, 0, ptr, ids, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "n_examples");
	CHECK_INT(psa_graph_from_csr(&g, 2, bad0, ids, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "row_ptr[0]");
	CHECK_INT(psa_graph_from_csr(&g, 2, dec, ids, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "decreases at row 1");
	CHECK_INT(e.code, ==, PSA_EINVAL);
	CHECK(g == NULL);
	CHECK_INT(psa_graph_from_csr(&g, 2, ptr, ids, NULL), ==, 0);
	REQUIRE(g != NULL);

	CHECK_INT(psa_graph_read(&g, NULL, NULL, NULL, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_graph_read(NULL, "x", NULL, NULL, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_graph_read(&g, "/nonexistent/x.svm", NULL, NULL, &e), ==,
		  PSA_EIO);
	CHECK_CONTAINS(e.message, "/nonexistent/x.svm");
	CHECK_INT(psa_graph_read(&g, "x.svm", "xml", NULL, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_graph_read(&g, "x.txt", NULL, "cliques", &e), ==,
		  PSA_EINVAL);

	CHECK_INT(psa_opts_new(NULL, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_new(&o, &e), ==, 0);
	CHECK_INT(psa_opts_set(NULL, "k", "2", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set(o, NULL, "2", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set_k(o, 0, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "--parts must be");
	CHECK_CONTAINS(e.message, "got '0'");
	CHECK_INT(psa_opts_set(o, "k", "-3", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set_method(o, "spectral", &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "unknown --method 'spectral'");
	CHECK_INT(psa_opts_set_quality(o, "ultra", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set_imbalance(o, 0.5, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "--imbalance");
	CHECK_INT(psa_opts_set_time_limit(o, -1, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set(o, "no-such-option", "1", &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "not an option of the library");
	CHECK_INT(psa_opts_set(o, "out", "x", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set(o, "workers", "2", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set(o, "stream", "", &e), ==, PSA_EINVAL);
	CHECK_INT(psa_opts_set(o, "format", "libsvm", &e), ==, PSA_EINVAL);

	/* k not set: the failed sets above changed nothing */
	CHECK_INT(psa_partition(g, o, &r, &e), ==, PSA_EINVAL);
	CHECK_CONTAINS(e.message, "k is not set");
	CHECK_INT(psa_partition(NULL, o, &r, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_partition(g, NULL, &r, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_partition(g, o, NULL, &e), ==, PSA_EINVAL);
	CHECK(r == NULL);
	CHECK_INT(psa_opts_set_k(o, 2, &e), ==, 0);
	CHECK_INT(psa_partition(g, o, &r, NULL), ==, 0);

	CHECK_INT(psa_evaluate(g, 0, parts, owners, NULL, &r, &e), ==,
		  PSA_EINVAL);
	owners[2] = 2;
	{
		psa_result *ev = NULL;

		CHECK_INT(psa_evaluate(g, 2, parts, owners, NULL, &ev, &e), ==,
			  PSA_EINVAL);
		CHECK_CONTAINS(e.message, "feature 2 is on server 2");
		parts[1] = 7;
		owners[2] = 0;
		CHECK_INT(psa_evaluate(g, 2, parts, owners, NULL, &ev, &e), ==,
			  PSA_EINVAL);
		CHECK_CONTAINS(e.message, "example 1 is in part 7");
		CHECK_INT(psa_evaluate(g, 2, NULL, owners, NULL, &ev, &e), ==,
			  PSA_EINVAL);
		CHECK(ev == NULL);
	}
	CHECK_INT(psa_placement_read(g, "/nonexistent/p", parts, owners, &k,
				     &e), ==, PSA_EIO);
	CHECK_INT(psa_result_metrics(r, 5, &(psa_metrics){0}, &e), ==,
		  PSA_EINVAL);
	CHECK_INT(psa_result_write(r, "/nonexistent/dir/p", &e), ==, PSA_EIO);
	CHECK_INT(psa_assign(r, 2, dec, ids, parts, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_assign(NULL, 1, ptr, ids, parts, &e), ==, PSA_EINVAL);
	CHECK_INT(psa_assign(r, 0, ptr, ids, parts, &e), ==, 0);
	CHECK_STR(psa_strerror(PSA_ECANCELLED), psa_strerror(8));
	CHECK_STR(psa_version(), PSA_VERSION);
	/* NULL handles are no-ops */
	psa_result_free(NULL);
	psa_opts_free(NULL);
	psa_graph_free(NULL);
	CHECK_INT(psa_graph_examples(NULL), ==, 0);
	psa_result_free(r);
	psa_opts_free(o);
	psa_graph_free(g);
}

struct prog {
	double last;
	int calls, backwards, cancel_at;
	const char *phase;
};

static void on_progress(void *arg, double f, const char *phase)
{
	struct prog *p = arg;

	if (f < p->last || f < 0 || f > 1)
		p->backwards++;
	p->last = f;
	p->phase = phase;
	p->calls++;
}

static int on_cancel(void *arg)
{
	struct prog *p = arg;

	return p->cancel_at && p->calls >= p->cancel_at;
}

static void test_progress_cancel(void)
{
	psa_graph *g = graph_of(4000);
	psa_opts *o = NULL;
	psa_result *r = NULL;
	struct prog p = {0};
	psa_error e;

	REQUIRE(g != NULL);
	psa_opts_new(&o, NULL);
	psa_opts_set_k(o, 8, NULL);
	psa_opts_set_quality(o, "best", NULL);
	psa_opts_set(o, "blocks", "8", NULL);
	psa_opts_set_progress(o, on_progress, &p);
	psa_opts_set_cancel(o, on_cancel, &p);
	CHECK_INT(psa_partition(g, o, &r, &e), ==, 0);
	CHECK(p.calls > 8);
	CHECK_INT(p.backwards, ==, 0);
	CHECK(p.last == 1.0);
	CHECK_STR(p.phase, "done");
	psa_result_free(r);
	r = NULL;

	/* the callback cancels after the third progress point */
	p = (struct prog){.cancel_at = 3};
	CHECK_INT(psa_partition(g, o, &r, &e), ==, PSA_ECANCELLED);
	CHECK_STR(e.message, "cancelled");
	CHECK(r == NULL);
	CHECK(p.last < 1.0);
	/* the flag stays set until cleared */
	p = (struct prog){0};
	CHECK_INT(psa_partition(g, o, &r, &e), ==, PSA_ECANCELLED);
	CHECK_INT(p.calls, ==, 0);
	psa_opts_cancel(o, 0);
	CHECK_INT(psa_partition(g, o, &r, &e), ==, 0);
	psa_result_free(r);
	r = NULL;
	psa_opts_cancel(o, 1);
	CHECK_INT(psa_partition(g, o, &r, &e), ==, PSA_ECANCELLED);
	CHECK_INT(e.code, ==, PSA_ECANCELLED);
	psa_opts_free(o);
	psa_graph_free(g);
}

static void test_assign_and_lifetime(void)
{
	/* three pairs of examples over disjoint feature pairs */
	static const uint64_t ptr[] = {0, 2, 4, 6, 8, 10, 12};
	static const uint64_t ids[] = {10, 11, 11, 10, 12, 13, 13, 12,
				       14, 15, 15, 14};
	static const uint64_t nptr[] = {0, 2, 4, 5};
	static const uint64_t nids[] = {13, 12, 15, 14, 1ull << 60};
	psa_graph *g = NULL;
	psa_opts *o = NULL;
	psa_result *r = NULL;
	psa_error e;
	uint32_t out[3];
	const uint32_t *parts;

	CHECK_INT(psa_graph_from_csr(&g, 6, ptr, ids, &e), ==, 0);
	psa_opts_new(&o, NULL);
	psa_opts_set_k(o, 3, NULL);
	psa_opts_set_imbalance(o, 2.0, NULL);
	CHECK_INT(psa_partition(g, o, &r, &e), ==, 0);
	psa_graph_free(g); /* the result keeps the graph */
	psa_opts_free(o);
	parts = psa_result_parts(r);
	CHECK_INT(parts[0], ==, parts[1]);
	CHECK_INT(parts[2], ==, parts[3]);
	CHECK_INT(psa_graph_examples(psa_result_graph(r)), ==, 6);
	CHECK_INT(psa_assign(r, 3, nptr, nids, out, &e), ==, 0);
	CHECK_INT(out[0], ==, parts[2]);
	CHECK_INT(out[1], ==, parts[4]);
	CHECK(out[2] < 3);
	/* again (the model is built once) */
	CHECK_INT(psa_assign(r, 1, nptr, nids, out, &e), ==, 0);
	CHECK_INT(out[0], ==, parts[2]);
	psa_result_free(r);
}

struct job {
	const psa_graph *g;
	const psa_opts *o;
	psa_result *r;
	int rc;
};

static void *run_job(void *arg)
{
	struct job *j = arg;

	j->rc = psa_partition(j->g, j->o, &j->r, NULL);
	return NULL;
}

static void test_threads(void)
{
	psa_graph *g = graph_of(3000);
	psa_opts *o = NULL;
	struct job j[2];
	pthread_t th[2];

	REQUIRE(g != NULL);
	psa_opts_new(&o, NULL);
	psa_opts_set_k(o, 4, NULL);
	for (int i = 0; i < 2; i++) {
		j[i] = (struct job){.g = g, .o = o};
		pthread_create(&th[i], NULL, run_job, &j[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_INT(j[0].rc, ==, 0);
	CHECK_INT(j[1].rc, ==, 0);
	if (j[0].r && j[1].r)
		CHECK(memcmp(psa_result_parts(j[0].r), psa_result_parts(j[1].r),
			     psa_graph_examples(g) * sizeof(uint32_t)) == 0);
	psa_result_free(j[0].r);
	psa_result_free(j[1].r);
	psa_opts_free(o);
	psa_graph_free(g);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_same_as_cli);
	RUN(test_read_write_evaluate);
	RUN(test_errors);
	RUN(test_progress_cancel);
	RUN(test_assign_and_lifetime);
	RUN(test_threads);
	rmdir(tmpdir);
	return harness_done();
}
