/*
 * test_baseline: the random placement (parsa_random_u / parsa_random_v) and
 * the streaming greedy partition of U (parsa_baseline.c).
 */
#include <math.h>

#include "harness.h"
#include "testutil.h"
#include "parsa_baseline.h"
#include "parsa_graph.h"
#include "parsa_metrics.h"
#include "parsa_partu.h"
#include "parsa_rng.h"

/* Random deal: each part gets exactly its round-robin share. */
static void test_random_u_deal(void)
{
	static const uint32_t ns[] = { 0, 1, 5, 64, 100, 1001 };
	static const uint32_t ks[] = { 1, 2, 3, 7, 64, 1500 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 5);
	for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++) {
		for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++) {
			uint32_t n = ns[a], k = ks[b];
			uint32_t *part = malloc((n + 1) * sizeof(*part));
			uint32_t *cnt = calloc(k, sizeof(*cnt));

			CHECK_INT(parsa_random_u(n, k, &rng, part, NULL), ==,
				  0);
			for (uint32_t j = 0; j < n; j++) {
				CHECK(part[j] < k);
				if (part[j] < k)
					cnt[part[j]]++;
			}
			for (uint32_t p = 0; p < k; p++)
				CHECK_INT(cnt[p], ==, n / k + (p < n % k));
			free(part);
			free(cnt);
		}
	}
}

/* Seeded: same seed, same deal; the deal is actually shuffled. */
static void test_random_u_seeded(void)
{
	struct parsa_rng r1, r2, r3;
	uint32_t a[200], b[200], c[200];
	int in_order = 1;

	parsa_rng_seed(&r1, 77);
	parsa_rng_seed(&r2, 77);
	parsa_rng_seed(&r3, 78);
	CHECK_INT(parsa_random_u(200, 4, &r1, a, NULL), ==, 0);
	CHECK_INT(parsa_random_u(200, 4, &r2, b, NULL), ==, 0);
	CHECK_INT(parsa_random_u(200, 4, &r3, c, NULL), ==, 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK(memcmp(a, c, sizeof(a)) != 0);
	for (uint32_t j = 0; j < 200; j++)
		in_order &= a[j] == j % 4;
	CHECK(!in_order);
	CHECK_INT(parsa_random_u(10, 0, &r1, a, NULL), ==, PARSA_EINVAL);
	CHECK_INT(parsa_random_u(10, 2, NULL, a, NULL), ==, PARSA_EINVAL);
}

static void test_random_v(void)
{
	struct parsa_rng rng;
	const uint32_t n = 100000, k = 10;
	uint32_t *owner = malloc(n * sizeof(*owner));
	uint32_t cnt[10] = { 0 };

	parsa_rng_seed(&rng, 3);
	parsa_random_v(n, k, &rng, owner);
	for (uint32_t v = 0; v < n; v++) {
		CHECK(owner[v] < k);
		if (owner[v] < k)
			cnt[owner[v]]++;
	}
	/* mean 10000, sd about 95: 5% is far outside chance */
	for (uint32_t i = 0; i < k; i++)
		CHECK(cnt[i] > 9500 && cnt[i] < 10500);
	parsa_random_v(1000, 1, &rng, owner);
	for (uint32_t v = 0; v < 1000; v++)
		CHECK_INT(owner[v], ==, 0);
	free(owner);
}

static void check_greedy(const struct parsa_graph *g, uint32_t k, double imb)
{
	uint32_t *part = malloc(((size_t)g->n_rows + 1) * sizeof(*part));
	uint64_t *cnt = calloc(k, sizeof(*cnt));
	uint64_t cap = parsa_balance_cap(g->n_rows, k, imb);

	for (uint32_t r = 0; r < g->n_rows; r++)
		part[r] = UINT32_MAX;
	CHECK_INT(parsa_greedy_u(g, k, imb, part, NULL), ==, 0);
	for (uint32_t r = 0; r < g->n_rows; r++) {
		CHECK(part[r] < k);
		if (part[r] < k)
			cnt[part[r]]++;
	}
	for (uint32_t i = 0; i < k; i++)
		CHECK(cnt[i] <= cap);
	free(part);
	free(cnt);
}

/* The balance cap holds and every example is placed, for many k. */
/* parsa_random_placement8 gives parsa_random_placement's ids in a byte,
 * for sizes below and above the shuffle's fetch-ahead ring; k > 256 and
 * k = 0 refused. */
static void test_random_placement8(void)
{
	static const uint32_t ks[] = {1, 3, 64, 255, 256};
	static const uint32_t ns[] = {0, 1, 5, 17, 1000};

	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++)
		for (size_t b = 0; b < sizeof(ns) / sizeof(ns[0]); b++) {
			uint32_t n = ns[b], m = ns[(b + 2) % 5], k = ks[a];
			uint32_t *p = malloc((n + 1) * 4), *o = malloc((m + 1) * 4);
			uint8_t *p8 = malloc(n + 1), *o8 = malloc(m + 1);

			REQUIRE(p && o && p8 && o8);
			REQUIRE(parsa_random_placement(n, m, k, 40 + b, p, o,
						       NULL) == 0);
			REQUIRE(parsa_random_placement8(n, m, k, 40 + b, p8,
							o8, NULL) == 0);
			for (uint32_t i = 0; i < n; i++)
				CHECK_INT(p8[i], ==, p[i]);
			for (uint32_t v = 0; v < m; v++)
				CHECK_INT(o8[v], ==, o[v]);
			free(p);
			free(o);
			free(p8);
			free(o8);
		}
	{
		uint8_t p8[4], o8[4];
		struct parsa_err err = { 0 };

		CHECK_INT(parsa_random_placement8(4, 4, 257, 1, p8, o8, &err),
			  ==, PARSA_EINVAL);
		CHECK(strstr(err.msg, "k=257") != NULL);
		CHECK_INT(parsa_random_placement8(4, 4, 0, 1, p8, o8, NULL),
			  ==, PARSA_EINVAL);
	}
}

static void test_greedy_balance(void)
{
	static const uint32_t ks[] = { 1, 2, 3, 5, 8, 16, 64, 65, 130, 1024 };
	static const double imbs[] = { 1.0, 1.03, 1.1, 2.0 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 11);
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		for (size_t b = 0; b < sizeof(imbs) / sizeof(imbs[0]); b++) {
			struct parsa_graph g;
			uint32_t n = (uint32_t)parsa_rng_below(&rng, 400);

			tu_random_graph(&g, &rng, n, 60, 0.05);
			check_greedy(&g, ks[a], imbs[b]);
			parsa_graph_release(&g);
		}
	}
}

/*
 * Hand example, k = 2, imbalance 2 (cap 4): rows {0,1} {2,3} {0,1,2} {3}.
 *   r0: new 2 | 2, tie, sizes 0 | 0 -> part 0
 *   r1: new 2 | 2, tie, sizes 1 | 0 -> part 1
 *   r2: new 1 | 2 -> part 0;  r3: new 1 | 0 -> part 1
 */
static void test_greedy_hand(void)
{
	static const uint32_t rows[4][3] = {
		{ 0, 1 }, { 2, 3 }, { 0, 1, 2 }, { 3 },
	};
	static const size_t len[4] = { 2, 2, 3, 1 };
	struct parsa_graph g;
	uint32_t part[4], tmp[3];

	parsa_graph_init(&g);
	for (int r = 0; r < 4; r++) {
		memcpy(tmp, rows[r], sizeof(tmp));
		CHECK_INT(parsa_graph_add_row(&g, tmp, len[r], NULL), ==, 0);
	}
	CHECK_INT(parsa_greedy_u(&g, 2, 2.0, part, NULL), ==, 0);
	CHECK_INT(part[0], ==, 0);
	CHECK_INT(part[1], ==, 1);
	CHECK_INT(part[2], ==, 0);
	CHECK_INT(part[3], ==, 1);
	parsa_graph_release(&g);
}

/* Empty rows add nothing: ties fall to fewest examples, then lowest id. */
static void test_greedy_empty_rows(void)
{
	struct parsa_graph g;
	uint32_t part[10];

	parsa_graph_init(&g);
	for (int r = 0; r < 10; r++)
		CHECK_INT(parsa_graph_add_row(&g, NULL, 0, NULL), ==, 0);
	CHECK_INT(parsa_greedy_u(&g, 3, 1.5, part, NULL), ==, 0);
	for (uint32_t r = 0; r < 10; r++)
		CHECK_INT(part[r], ==, r % 3);
	parsa_graph_release(&g);
	parsa_graph_init(&g);
	CHECK_INT(parsa_greedy_u(&g, 3, 1.0, NULL, NULL), ==, 0);
	parsa_graph_release(&g);
}

/* Two disjoint clusters, interleaved in the input, are separated. */
static void test_greedy_clusters(void)
{
	struct parsa_rng rng;
	struct parsa_graph g;
	struct parsa_metrics m;
	uint32_t part[40], owner[20], cols[10];

	parsa_rng_seed(&rng, 21);
	parsa_graph_init(&g);
	for (uint32_t r = 0; r < 40; r++) {
		uint32_t base = (r % 2) * 10;
		size_t n = 0;

		cols[n++] = base; /* a hub feature per cluster */
		for (uint32_t v = 1; v < 10; v++)
			if (parsa_rng_double(&rng) < 0.4)
				cols[n++] = base + v;
		CHECK_INT(parsa_graph_add_row(&g, cols, n, NULL), ==, 0);
	}
	CHECK_INT(parsa_greedy_u(&g, 2, 1.0, part, NULL), ==, 0);
	for (uint32_t r = 2; r < 40; r++)
		CHECK_INT(part[r], ==, part[r % 2]);
	CHECK(part[0] != part[1]);
	/* each cluster's features owned by its part: no traffic at all */
	for (uint32_t v = 0; v < 20; v++)
		owner[v] = part[v / 10];
	CHECK_INT(parsa_metrics_compute(&g, 2, part, owner, &m, NULL), ==, 0);
	CHECK(m.T_max == 0.0 && m.RF == 1.0 && m.imbalance == 1.0);
	parsa_graph_release(&g);
}

/* Greedy beats random on memory for clustered data, and it is fast. */
static void test_greedy_quality(void)
{
	struct parsa_rng rng;
	struct parsa_graph g;
	struct parsa_metrics mg, mr;
	const uint32_t n = 20000, k = 16;
	uint32_t *part = malloc(n * sizeof(*part));
	uint32_t *owner = malloc(16 * 100 * sizeof(*owner));
	uint32_t cols[8];

	parsa_rng_seed(&rng, 31);
	parsa_graph_init(&g);
	for (uint32_t r = 0; r < n; r++) {
		/* 16 communities of 100 features, 10% cross edges */
		uint32_t com = (uint32_t)parsa_rng_below(&rng, 16);

		for (int j = 0; j < 8; j++) {
			uint32_t c = com, f;

			if (parsa_rng_double(&rng) < 0.1)
				c = (uint32_t)parsa_rng_below(&rng, 16);
			f = (uint32_t)parsa_rng_below(&rng, 100);
			cols[j] = c * 100 + f;
		}
		CHECK_INT(parsa_graph_add_row(&g, cols, 8, NULL), ==, 0);
	}
	CHECK_INT(parsa_greedy_u(&g, k, 1.05, part, NULL), ==, 0);
	parsa_rng_seed(&rng, 1);
	parsa_random_v(g.n_cols, k, &rng, owner);
	CHECK_INT(parsa_metrics_compute(&g, k, part, owner, &mg, NULL), ==, 0);
	CHECK_INT(parsa_metrics_random(&g, k, 1, 3, &mr, NULL), ==, 0);
	CHECK(mg.M_max < mr.M_max);
	CHECK(mg.imbalance <= 1.05 + 1e-9);
	free(part);
	free(owner);
	parsa_graph_release(&g);
}

static void test_greedy_errors(void)
{
	struct parsa_graph g;
	struct parsa_err err;
	uint32_t part[1], one[1] = { 0 };

	parsa_graph_init(&g);
	CHECK_INT(parsa_graph_add_row(&g, one, 1, NULL), ==, 0);
	CHECK_INT(parsa_greedy_u(&g, 0, 1.0, part, NULL), ==, PARSA_EINVAL);
	parsa_err_clear(&err);
	CHECK_INT(parsa_greedy_u(&g, 2, 0.5, part, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "imbalance");
	CHECK_INT(parsa_greedy_u(&g, 2, NAN, part, NULL), ==,
		  PARSA_EINVAL);
	CHECK_INT(parsa_greedy_u(&g, 2, 1.0, NULL, NULL), ==, PARSA_EINVAL);
	CHECK_INT(parsa_greedy_u(NULL, 2, 1.0, part, NULL), ==, PARSA_EINVAL);
	g.col[0] = 5; /* out of range: rejected, not a crash */
	CHECK_INT(parsa_greedy_u(&g, 2, 1.0, part, NULL), ==, PARSA_EINVAL);
	parsa_graph_release(&g);
}

int main(void)
{
	RUN(test_random_u_deal);
	RUN(test_random_u_seeded);
	RUN(test_random_v);
	RUN(test_random_placement8);
	RUN(test_greedy_balance);
	RUN(test_greedy_hand);
	RUN(test_greedy_empty_rows);
	RUN(test_greedy_clusters);
	RUN(test_greedy_quality);
	RUN(test_greedy_errors);
	return harness_done();
}
