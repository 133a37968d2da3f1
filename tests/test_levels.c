/*
 * test_levels: Parsa in two levels (part_levels.h).
 *
 * k1 is the largest divisor of k below k and at most 64 or sqrt(k), two
 * levels run only when asked or above PART_LEVELS_AUTO_K; the level
 * imbalances keep every
 * cap; the two-level placement is valid (every part id < k, every used
 * feature owned by a part that uses it), under the one-level balance cap,
 * its groups (part / k2) are exactly the level-1 pipeline's run at k1, its
 * metrics equal a brute-force evaluation of the definitions; the same
 * seed gives the same placement for 1, 2 and 3 threads (lanes 2), and at
 * k <= 64 auto is the one-level run byte for byte.
 */
#include "harness.h"
#include "testutil.h"
#include "testpart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_metrics.h"
#include "parsa_partu.h"
#include "part_levels.h"
#include "part_run.h"

static void test_k1(void)
{
	static const struct { uint32_t k, levels, k1; } c[] = {
		{ 1024, 0, 64 }, { 1024, 2, 64 }, { 1024, 1, 1 },
		{ 1000, 0, 50 }, { 257, 0, 1 },   { 256, 0, 1 },
		{ 256, 2, 64 },  { 64, 0, 1 },    { 64, 2, 32 },
		{ 12, 2, 6 },    { 7, 2, 1 },     { 1, 2, 1 },
		{ 4, 2, 2 },     { 300, 0, 60 },  { 65536, 2, 256 },
		{ 2 * 4099, 2, 2 }, { 4099 * 4099, 2, 4099 },
	};
	struct part_run_opts o;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		part_run_opts_default(&o);
		o.pu.k = c[i].k;
		o.levels = c[i].levels;
		CHECK_INT(part_levels_k1(&o), ==, c[i].k1);
	}
	part_run_opts_default(&o);
	o.pu.k = 1024;
	o.method = PART_METHOD_RANDOM;
	CHECK_INT(part_levels_k1(&o), ==, 1);
}

static void test_imbalance(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 5);
	for (int t = 0; t < 20000; t++) {
		uint64_t n = parsa_rng_below(&r, 100000);
		uint32_t k = 1 + (uint32_t)parsa_rng_below(&r, 64);
		double want = 1.0 + parsa_rng_double(&r) * 0.2;
		uint64_t q = n / k + (n % k != 0);
		uint64_t cap = q + parsa_rng_below(&r, q / 8 + 2);
		double x = part_levels_imbalance(n, k, want, cap);

		CHECK(x >= 1.0 && x <= want);
		CHECK(parsa_balance_cap(n, k, x) <= cap);
	}
}

/* Heavy-tailed rows in 24 clusters of features (so the groups mean
 * something). */
static void dataset(struct part_dataset *ds, uint32_t rows, uint64_t seed)
{
	struct parsa_rng r;
	struct parsa_graph g;
	uint32_t row[40];

	parsa_rng_seed(&r, seed);
	parsa_graph_init(&g);
	for (uint32_t u = 0; u < rows; u++) {
		uint32_t c = (uint32_t)parsa_rng_below(&r, 24);
		uint32_t d = (uint32_t)parsa_rng_below(&r, 30), m = 0;

		for (; m < d; m++)
			row[m] = c * 200 + (uint32_t)parsa_rng_below(&r, 200);
		for (; m < d + 4; m++)
			row[m] = (uint32_t)parsa_rng_below(&r, 24 * 200);
		CHECK(parsa_graph_add_row(&g, row, m, NULL) == 0);
	}
	tu_as_dataset(ds, &g);
}

static int run(const struct part_dataset *ds, uint32_t k, uint32_t levels,
	       uint32_t threads, uint32_t lanes, struct part_result *r)
{
	struct part_run_opts o;

	part_run_opts_default(&o);
	o.pu.k = k;
	o.pu.seed = 11;
	o.levels = levels;
	o.threads = threads;
	o.lanes = lanes;
	o.random_trials = 1;
	part_result_init(r);
	return part_run(ds, &o, r, NULL);
}

/* Brute force: M_i, T_i from the definitions (boolean table). */
static void check_metrics(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, const uint32_t *owner,
			  const struct parsa_metrics *m)
{
	uint32_t d = g->n_cols;
	uint8_t *in = calloc((size_t)k * d + 1, 1);
	uint64_t *M = calloc(k, sizeof(*M)), *T = calloc(k, sizeof(*T));
	uint64_t mmax = 0, tmax = 0, tsum = 0;

	for (uint32_t u = 0; u < g->n_rows; u++)
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
			in[(size_t)part[u] * d + g->col[e]] = 1;
	for (uint32_t v = 0; v < d; v++) {
		int used = 0;

		for (uint32_t i = 0; i < k; i++) {
			uint8_t x = in[(size_t)i * d + v];

			used |= x;
			M[i] += x;
			if (x && owner[v] != i) {
				T[i]++;         /* i pulls v */
				T[owner[v]]++;  /* its owner serves it */
			}
		}
		if (used) /* Algorithm 11: owned by a user */
			CHECK(in[(size_t)owner[v] * d + v]);
	}
	for (uint32_t i = 0; i < k; i++) {
		mmax = M[i] > mmax ? M[i] : mmax;
		tmax = T[i] > tmax ? T[i] : tmax;
		tsum += T[i];
	}
	CHECK(m->M_max == (double)mmax);
	CHECK(m->T_max == (double)tmax);
	CHECK(m->T_sum == (double)tsum);
	free(in);
	free(M);
	free(T);
}

static void test_oracle(void)
{
	static const struct { uint32_t rows, k; } c[] = {
		{ 3000, 12 }, { 4000, 36 }, { 5000, 1024 }, { 700, 100 },
		{ 5, 1024 }, { 0, 300 },
	};

	for (size_t t = 0; t < sizeof(c) / sizeof(c[0]); t++) {
		struct part_dataset ds;
		struct part_result r, r1;
		struct part_run_opts o1;
		uint32_t k = c[t].k, k1, k2;
		uint64_t cap;

		dataset(&ds, c[t].rows, 7 + t);
		REQUIRE(run(&ds, k, 2, 2, 0, &r) == 0);
		part_run_opts_default(&o1);
		o1.pu.k = k;
		o1.levels = 2;
		k1 = part_levels_k1(&o1);
		k2 = k / k1;
		REQUIRE(k1 > 1);
		cap = parsa_balance_cap(ds.g.n_rows, k, o1.pu.imbalance);
		for (uint32_t u = 0; u < ds.g.n_rows; u++)
			CHECK(r.part[u] < k);
		for (uint32_t v = 0; v < ds.g.n_cols; v++)
			CHECK(r.owner[v] < k);
		CHECK(tu_max_size(r.part, NULL, ds.g.n_rows, k) <= cap);
		CHECK(r.m.U_max <= cap);
		check_metrics(&ds.g, k, r.part, r.owner, &r.m);
		/* the groups are the level-1 pipeline's parts at k1 */
		o1.pu.k = k1;
		o1.pu.seed = 11;
		o1.levels = 1;
		o1.threads = 2;
		o1.random_trials = 1;
		o1.pu.imbalance = part_levels_imbalance(
			ds.g.n_rows, k1, sqrt(o1.pu.imbalance),
			(uint64_t)k2 * cap);
		part_result_init(&r1);
		REQUIRE(part_run(&ds, &o1, &r1, NULL) == 0);
		for (uint32_t u = 0; u < ds.g.n_rows; u++)
			CHECK_INT(r.part[u] / k2, ==, r1.part[u]);
		part_result_release(&r1);
		part_result_release(&r);
		part_dataset_release(&ds);
	}
}

static void test_threads(void)
{
	struct part_dataset ds;
	struct part_result r[4];

	dataset(&ds, 6000, 3);
	for (uint32_t t = 1; t <= 3; t++)
		REQUIRE(run(&ds, 64, 2, t, 2, &r[t]) == 0);
	REQUIRE(run(&ds, 64, 2, 2, 2, &r[0]) == 0); /* again */
	for (uint32_t t = 0; t <= 3; t++) {
		CHECK(memcmp(r[t].part, r[1].part,
			     ds.g.n_rows * sizeof(uint32_t)) == 0);
		CHECK(memcmp(r[t].owner, r[1].owner,
			     ds.g.n_cols * sizeof(uint32_t)) == 0);
		CHECK(r[t].m.T_sum == r[1].m.T_sum);
	}
	for (uint32_t t = 0; t <= 3; t++)
		part_result_release(&r[t]);
	part_dataset_release(&ds);
}

/* k <= PART_LEVELS_AUTO_K: auto is the one-level run, byte for byte. */
static void test_auto_one_level(void)
{
	struct part_dataset ds;
	struct part_result a, b;

	dataset(&ds, 3000, 4);
	REQUIRE(run(&ds, 64, 0, 2, 0, &a) == 0);
	REQUIRE(run(&ds, 64, 1, 2, 0, &b) == 0);
	CHECK(memcmp(a.part, b.part, ds.g.n_rows * sizeof(uint32_t)) == 0);
	CHECK(memcmp(a.owner, b.owner, ds.g.n_cols * sizeof(uint32_t)) == 0);
	part_result_release(&a);
	part_result_release(&b);
	part_dataset_release(&ds);
}

int main(void)
{
	RUN(test_k1);
	RUN(test_imbalance);
	RUN(test_oracle);
	RUN(test_threads);
	RUN(test_auto_one_level);
	return harness_done();
}
