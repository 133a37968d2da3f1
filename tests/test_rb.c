/*
 * test_rb: recursive bisection (parsa_rb) against brute force: the
 * connectivity it reports is the partition's (the sum of the bisections'
 * cuts, with net splitting), every part id is in range and every part is
 * used, the weight bound holds, the same seed gives the same partition;
 * on tiny graphs its bisection is the exhaustive optimum on nearly every
 * instance, and it recovers planted clusters.
 */
#include "harness.h"
#include "testutil.h"
#include "testpart.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_rb.h"

/* Random graphs (uniform and heavy-tailed), unit or random weights, any
 * k: the reported connectivity is the brute-force one, parts in range and
 * non-empty (n >= k), weights within the compounded bound. */
static void test_rb_properties(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 5);
	for (int iter = 0; iter < 300; iter++) {
		uint32_t k = 1 + (uint32_t)parsa_rng_below(&r, iter % 10 == 0 ? 40 : 12);
		uint32_t rows = 1 + (uint32_t)parsa_rng_below(&r, iter % 3 == 2 ? 1200 : 400);
		uint32_t cols = 1 + (uint32_t)parsa_rng_below(&r, 300);
		struct parsa_rb_opts o = { k, iter % 4 == 0 ? 0.0 : 0.03,
					   1 + (uint32_t)parsa_rng_below(&r, 6),
					   (uint64_t)iter, NULL,
					   /* multilevel starts on a third */
					   iter % 3 == 2 ? 1 + (uint32_t)(iter % 4) : 0 };
		struct parsa_graph g;
		uint32_t *part = malloc(rows * sizeof(uint32_t));
		uint32_t *w = iter % 3 == 1 ? malloc(rows * sizeof(uint32_t)) : NULL;
		uint64_t *M = calloc(k, sizeof(uint64_t)), *size = calloc(k, sizeof(uint64_t));
		uint64_t conn = 0, wsum = 0, wmax = 0;
		uint32_t levels = 0;

		if (iter % 2)
			tu_random_graph(&g, &r, rows, cols, 0.02 + parsa_rng_double(&r) * 0.1);
		else
			tu_heavy_graph(&g, &r, rows, cols, 8, 200);
		for (uint32_t u = 0; u < rows; u++) {
			if (w)
				w[u] = 1 + (uint32_t)parsa_rng_below(&r, 10);
			wsum += w ? w[u] : 1;
			wmax = (w ? w[u] : 1) > wmax ? (w ? w[u] : 1) : wmax;
		}
		for (uint32_t q = 1; q < k; q *= 2)
			levels++;
		REQUIRE(parsa_rb_partition(&g, w, &o, part, &conn, NULL) == 0);
		for (uint32_t u = 0; u < rows; u++) {
			CHECK_INT(part[u], <, k);
			if (part[u] < k)
				size[part[u]] += w ? w[u] : 1;
		}
		CHECK_INT(conn, ==, tu_brute_conn(&g, part, k, M));
		if (rows >= k)
			for (uint32_t j = 0; j < k; j++)
				CHECK_INT(size[j], >, 0);
		{
			double f = pow(1.0 + o.eps, levels);
			double bound = (double)wsum / k * f + levels * (double)wmax * f + 1;

			CHECK(tu_max_of(size, k) <= bound);
		}
		parsa_graph_release(&g);
		free(part);
		free(w);
		free(M);
		free(size);
	}
}

/* The same seed, the same partition; another seed usually another. */
static void test_rb_deterministic(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	uint32_t a[300], b[300];
	struct parsa_rb_opts o = { 7, 0.03, 4, 42 };

	parsa_rng_seed(&r, 9);
	tu_heavy_graph(&g, &r, 300, 200, 10, 100);
	REQUIRE(parsa_rb_partition(&g, NULL, &o, a, NULL, NULL) == 0);
	REQUIRE(parsa_rb_partition(&g, NULL, &o, b, NULL, NULL) == 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	o.ml = 3; /* the multilevel starts too */
	REQUIRE(parsa_rb_partition(&g, NULL, &o, a, NULL, NULL) == 0);
	REQUIRE(parsa_rb_partition(&g, NULL, &o, b, NULL, NULL) == 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	parsa_graph_release(&g);
}

/* Exhaustive optimum of a balanced bisection (unit weights, sides of
 * floor(n/2) and ceil(n/2) within the tolerance of eps = 0). */
static uint64_t brute_bisection(const struct parsa_graph *g)
{
	uint32_t n = g->n_rows, part[16];
	uint64_t best = UINT64_MAX, M[2];

	for (uint32_t s = 0; s < (1u << n); s++) {
		uint32_t c = (uint32_t)__builtin_popcount(s);

		if (c != n / 2)
			continue;
		for (uint32_t u = 0; u < n; u++)
			part[u] = (s >> u) & 1;
		uint64_t cut = tu_brute_conn(g, part, 2, M);

		best = cut < best ? cut : best;
	}
	return best;
}

/* Tiny graphs: with 8 starts the bisection is the optimum on nearly every
 * instance (FM is a heuristic: a rare miss is allowed, a habit is not). */
static void test_rb_tiny_bisection_optimal(void)
{
	struct parsa_rng r;
	int miss = 0, total = 0;

	parsa_rng_seed(&r, 13);
	for (int iter = 0; iter < 200; iter++) {
		uint32_t n = 4 + 2 * (uint32_t)parsa_rng_below(&r, 5); /* even */
		struct parsa_graph g;
		uint32_t part[16];
		uint64_t conn = 0, M[2], opt;
		struct parsa_rb_opts o = { 2, 0.0, 8, (uint64_t)iter };

		tu_random_graph(&g, &r, n, 3 + (uint32_t)parsa_rng_below(&r, 12), 0.3);
		opt = brute_bisection(&g);
		REQUIRE(parsa_rb_partition(&g, NULL, &o, part, &conn, NULL) == 0);
		CHECK_INT(conn, ==, tu_brute_conn(&g, part, 2, M));
		{
			uint32_t c0 = 0;

			for (uint32_t u = 0; u < n; u++)
				c0 += part[u] == 0;
			CHECK_INT(c0, ==, n / 2); /* exact halves at eps 0 */
		}
		CHECK_INT(conn, >=, opt);
		miss += conn > opt;
		total++;
		parsa_graph_release(&g);
	}
	CHECK_INT(miss * 20, <=, total); /* at most 5% */
}

/* k clusters of rows over disjoint features plus a few noise pins: the
 * partition found costs no more than the planted one. */
static void test_rb_planted(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 21);
	for (uint32_t k = 2; k <= 16; k *= 2) {
		uint32_t per = 30, n = k * per, fpc = 40, cols[16];
		struct parsa_graph g;
		uint32_t *part = malloc(n * sizeof(uint32_t));
		uint32_t *planted = malloc(n * sizeof(uint32_t));
		uint64_t *M = calloc(k, sizeof(uint64_t)), conn = 0, pconn;
		struct parsa_rb_opts o = { k, 0.03, 8, 3 };

		parsa_graph_init(&g);
		for (uint32_t u = 0; u < n; u++) {
			uint32_t c = u % k, m = 0;

			planted[u] = c;
			for (uint32_t t = 0; t < 8; t++)
				cols[m++] = c * fpc + (uint32_t)parsa_rng_below(&r, fpc);
			if (parsa_rng_below(&r, 10) == 0) /* noise */
				cols[m++] = (uint32_t)parsa_rng_below(&r, k * fpc);
			REQUIRE(parsa_graph_add_row(&g, cols, m, NULL) == 0);
		}
		pconn = tu_brute_conn(&g, planted, k, M);
		REQUIRE(parsa_rb_partition(&g, NULL, &o, part, &conn, NULL) == 0);
		CHECK_INT(conn, <=, pconn);
		o.ml = 2; /* multilevel starts (coarsened: n > 160 from k = 8) */
		REQUIRE(parsa_rb_partition(&g, NULL, &o, part, &conn, NULL) == 0);
		CHECK_INT(conn, ==, tu_brute_conn(&g, part, k, M));
		CHECK_INT(conn, <=, pconn);
		o.ml = 0;
		parsa_graph_release(&g);
		free(part);
		free(planted);
		free(M);
	}
}

/* A stop that is due from the start: every bisection keeps its first
 * start, unrefined, and the result is still a valid k-way partition with
 * the connectivity it reports; a stop never due changes nothing. */
static void test_rb_stop(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	atomic_int yes = 1, no = 0;
	struct parsa_stop due = { &yes, 0 }, never = { &no, 0 };
	uint32_t k = 8, a[600], b[600], c[600];
	uint64_t conn = 0, M[8];
	struct parsa_rb_opts o = { k, 0.03, 8, 5, &due };

	parsa_rng_seed(&r, 17);
	tu_heavy_graph(&g, &r, 600, 300, 10, 100);
	REQUIRE(parsa_rb_partition(&g, NULL, &o, a, &conn, NULL) == 0);
	CHECK_INT(conn, ==, tu_brute_conn(&g, a, k, M));
	{
		uint64_t size[8] = { 0 };

		for (uint32_t u = 0; u < 600; u++)
			size[a[u] < k ? a[u] : 0]++;
		for (uint32_t j = 0; j < k; j++)
			CHECK_INT(size[j], >, 0);
	}
	o.stop = NULL;
	REQUIRE(parsa_rb_partition(&g, NULL, &o, b, NULL, NULL) == 0);
	o.stop = &never;
	REQUIRE(parsa_rb_partition(&g, NULL, &o, c, NULL, NULL) == 0);
	CHECK(memcmp(b, c, sizeof(b)) == 0);
	/* the same with multilevel starts: one per bisection once due */
	o.ml = 3;
	o.stop = &due;
	REQUIRE(parsa_rb_partition(&g, NULL, &o, a, &conn, NULL) == 0);
	CHECK_INT(conn, ==, tu_brute_conn(&g, a, k, M));
	o.stop = NULL;
	REQUIRE(parsa_rb_partition(&g, NULL, &o, b, NULL, NULL) == 0);
	o.stop = &never;
	REQUIRE(parsa_rb_partition(&g, NULL, &o, c, NULL, NULL) == 0);
	CHECK(memcmp(b, c, sizeof(b)) == 0);
	parsa_graph_release(&g);
}

static void test_rb_bad_args(void)
{
	struct parsa_graph g;
	struct parsa_rng r;
	uint32_t part[10];
	struct parsa_err e;
	struct parsa_rb_opts bad[] = { { 0, 0.03, 4, 1 }, { 2, 0.03, 0, 1 },
				       { 2, -0.1, 4, 1 }, { 2, NAN, 4, 1 } };

	parsa_rng_seed(&r, 1);
	tu_random_graph(&g, &r, 10, 10, 0.3);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		parsa_err_clear(&e);
		CHECK_INT(parsa_rb_partition(&g, NULL, &bad[i], part, NULL, &e), ==,
			  PARSA_EINVAL);
		CHECK_CONTAINS(e.msg, "recursive bisection");
	}
	parsa_graph_release(&g);
}

int main(void)
{
	RUN(test_rb_properties);
	RUN(test_rb_deterministic);
	RUN(test_rb_tiny_bisection_optimal);
	RUN(test_rb_planted);
	RUN(test_rb_stop);
	RUN(test_rb_bad_args);
	return harness_done();
}
