/*
 * test_metis: the METIS baseline (partitioner/part_metis).
 *
 * Two disjoint clusters split exactly at k = 2; the balance cap holds for
 * k in {2, 4, 16, 64} and several imbalance bounds on random graphs;
 * every example is assigned; the special cases (k = 1, |U| <= k, no
 * nonzeros, empty rows) and bad arguments; determinism by seed.
 */
#include <math.h>

#include "harness.h"
#include "parsa_graph.h"
#include "parsa_partu.h"
#include "parsa_rng.h"
#include "part_metis.h"

/* n rows, each with deg random features of [lo, lo + span). */
static int add_random_rows(struct parsa_graph *g, uint32_t n, uint32_t lo,
			   uint32_t span, uint32_t deg, struct parsa_rng *r)
{
	uint32_t cols[64];

	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t d = 0; d < deg && d < 64; d++)
			cols[d] = lo + (uint32_t)parsa_rng_below(r, span);
		if (parsa_graph_add_row(g, cols, deg, NULL) != 0)
			return -1;
	}
	return 0;
}

static int random_graph(struct parsa_graph *g, uint32_t n, uint32_t f,
			uint32_t deg, uint64_t seed)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, seed);
	parsa_graph_init(g);
	return add_random_rows(g, n, 0, f, deg, &r);
}

/* part in range and max count <= parsa_balance_cap. */
static void check_balance(const uint32_t *part, uint32_t n, uint32_t k,
			  double imb)
{
	uint64_t *count = calloc(k, sizeof(*count)), max = 0;
	uint64_t cap = parsa_balance_cap(n, k, imb);

	REQUIRE(count != NULL);
	for (uint32_t i = 0; i < n; i++) {
		CHECK_INT(part[i], <, k);
		if (part[i] < k)
			count[part[i]]++;
	}
	for (uint32_t q = 0; q < k; q++)
		max = count[q] > max ? count[q] : max;
	if (max > cap)
		fprintf(stderr, "k=%u imb=%g: max part %llu > cap %llu\n", k,
			imb, (unsigned long long)max, (unsigned long long)cap);
	CHECK_INT(max, <=, cap);
	free(count);
}

static void test_two_clusters_split(void)
{
	struct parsa_graph g;
	struct parsa_rng r;
	uint32_t part[200];
	double imbs[2] = { 1.0, 1.03 };

	parsa_rng_seed(&r, 3);
	parsa_graph_init(&g);
	/* interleaved: even rows use features 0..29, odd rows 30..59 */
	for (uint32_t i = 0; i < 200; i++)
		REQUIRE(add_random_rows(&g, 1, (i % 2) * 30, 30, 8, &r) == 0);
	for (int t = 0; t < 2; t++) {
		struct parsa_err e;

		parsa_err_clear(&e);
		memset(part, 0xff, sizeof(part));
		CHECK_INT(part_metis_u(&g, 2, imbs[t], 1, part, &e), ==, 0);
		CHECK_INT(part[0], !=, part[1]);
		for (uint32_t i = 2; i < 200; i++)
			CHECK_INT(part[i], ==, part[i % 2]);
		check_balance(part, 200, 2, imbs[t]);
	}
	parsa_graph_release(&g);
}

static void test_balance_cap_random(void)
{
	static const uint32_t ks[4] = { 2, 4, 16, 64 };
	static const double imbs[3] = { 1.0, 1.03, 1.2 };
	struct parsa_graph g;
	uint32_t n = 3001;
	uint32_t *part = malloc(n * sizeof(*part));

	REQUIRE(part != NULL);
	REQUIRE(random_graph(&g, n, 900, 7, 11) == 0);
	for (int a = 0; a < 4; a++) {
		for (int b = 0; b < 3; b++) {
			struct parsa_err e;

			parsa_err_clear(&e);
			memset(part, 0xff, n * sizeof(*part));
			CHECK_INT(part_metis_u(&g, ks[a], imbs[b], 5, part, &e),
				  ==, 0);
			check_balance(part, n, ks[a], imbs[b]);
		}
	}
	free(part);
	parsa_graph_release(&g);
}

/* Skewed degrees and clusters of unequal size push METIS off balance. */
static void test_balance_cap_skewed(void)
{
	struct parsa_graph g;
	struct parsa_rng r;
	uint32_t n = 0, *part;

	parsa_rng_seed(&r, 99);
	parsa_graph_init(&g);
	for (uint32_t c = 0; c < 12; c++) {
		uint32_t rows = 20 + 40 * c;

		REQUIRE(add_random_rows(&g, rows, c * 50, 50, 1 + c % 5,
					&r) == 0);
		n += rows;
	}
	part = malloc(n * sizeof(*part));
	REQUIRE(part != NULL);
	for (uint32_t k = 2; k <= 64; k *= 2) {
		CHECK_INT(part_metis_u(&g, k, 1.0, 2, part, NULL), ==, 0);
		check_balance(part, n, k, 1.0);
	}
	free(part);
	parsa_graph_release(&g);
}

static void test_k1_and_small(void)
{
	struct parsa_graph g;
	uint32_t part[50];

	REQUIRE(random_graph(&g, 50, 30, 4, 1) == 0);
	memset(part, 0xff, sizeof(part));
	CHECK_INT(part_metis_u(&g, 1, 1.0, 1, part, NULL), ==, 0);
	for (int i = 0; i < 50; i++)
		CHECK_INT(part[i], ==, 0);
	/* |U| <= k: one example per part */
	CHECK_INT(part_metis_u(&g, 64, 1.03, 1, part, NULL), ==, 0);
	check_balance(part, 50, 64, 1.03);
	CHECK_INT(part_metis_u(&g, 50, 1.0, 1, part, NULL), ==, 0);
	check_balance(part, 50, 50, 1.0);
	parsa_graph_release(&g);
}

static void test_empty_rows_and_graphs(void)
{
	struct parsa_graph g;
	struct parsa_rng r;
	uint32_t part[400];

	/* no examples at all */
	parsa_graph_init(&g);
	CHECK_INT(part_metis_u(&g, 4, 1.0, 1, NULL, NULL), ==, 0);
	/* rows without features only */
	for (int i = 0; i < 40; i++)
		REQUIRE(parsa_graph_add_row(&g, NULL, 0, NULL) == 0);
	CHECK_INT(part_metis_u(&g, 4, 1.0, 1, part, NULL), ==, 0);
	check_balance(part, 40, 4, 1.0);
	/* a mix: isolated examples among connected ones */
	parsa_rng_seed(&r, 5);
	for (int i = 0; i < 360; i++) {
		if (i % 3 == 0)
			REQUIRE(parsa_graph_add_row(&g, NULL, 0, NULL) == 0);
		else
			REQUIRE(add_random_rows(&g, 1, 0, 100, 5, &r) == 0);
	}
	for (uint32_t k = 2; k <= 16; k *= 2) {
		memset(part, 0xff, sizeof(part));
		CHECK_INT(part_metis_u(&g, k, 1.03, 1, part, NULL), ==, 0);
		check_balance(part, 400, k, 1.03);
	}
	parsa_graph_release(&g);
}

static void test_deterministic(void)
{
	struct parsa_graph g;
	uint32_t a[1000], b[1000];

	REQUIRE(random_graph(&g, 1000, 400, 6, 8) == 0);
	CHECK_INT(part_metis_u(&g, 8, 1.03, 42, a, NULL), ==, 0);
	CHECK_INT(part_metis_u(&g, 8, 1.03, 42, b, NULL), ==, 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	parsa_graph_release(&g);
}

static void test_bad_args(void)
{
	struct parsa_graph g;
	struct parsa_err e;
	uint32_t part[10];

	REQUIRE(random_graph(&g, 10, 5, 2, 1) == 0);
	parsa_err_clear(&e);
	CHECK_INT(part_metis_u(&g, 0, 1.0, 1, part, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "k must be");
	parsa_err_clear(&e);
	CHECK_INT(part_metis_u(&g, 2, 0.5, 1, part, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "imbalance");
	CHECK_INT(part_metis_u(&g, 2, NAN, 1, part, NULL), ==, PARSA_EINVAL);
	CHECK_INT(part_metis_u(&g, 2, 1.0, 1, NULL, NULL), ==, PARSA_EINVAL);
	CHECK_INT(part_metis_u(NULL, 2, 1.0, 1, part, NULL), ==, PARSA_EINVAL);
	g.col[0] = 1000; /* corrupt: column out of range */
	CHECK_INT(part_metis_u(&g, 2, 1.0, 1, part, NULL), ==, PARSA_EINVAL);
	parsa_graph_release(&g);
}

int main(void)
{
	RUN(test_two_clusters_split);
	RUN(test_balance_cap_random);
	RUN(test_balance_cap_skewed);
	RUN(test_k1_and_small);
	RUN(test_empty_rows_and_graphs);
	RUN(test_deterministic);
	RUN(test_bad_args);
	return harness_done();
}
