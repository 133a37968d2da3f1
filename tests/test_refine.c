/*
 * test_refine: the M_max refinement never raises M_max, keeps the used
 * sets exact, respects the cap, and repairs a placement with a stranded
 * heavy example.
 */
#include "harness.h"
#include "testutil.h"

#include <stdlib.h>

#include "parsa_metrics.h"
#include "parsa_partu.h"
#include "parsa_refine.h"
#include "parsa_rng.h"

static uint64_t mmax_of(const struct parsa_nbrset *s)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < s->k; i++)
		m = s->size[i] > m ? s->size[i] : m;
	return m;
}

static void test_random_invariants(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 11);
	for (int iter = 0; iter < 200; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, iter % 10 == 0 ? 100 : 8);
		uint32_t rows = 1 + (uint32_t)parsa_rng_below(&r, 300);
		struct parsa_graph g;
		struct parsa_nbrset used, check;
		struct parsa_refine_stats st;
		uint32_t *part = malloc(rows * sizeof(uint32_t));
		uint64_t cap = parsa_balance_cap(rows, k, 1.03), before, *size;

		tu_heavy_graph(&g, &r, rows,
			       1 + (uint32_t)parsa_rng_below(&r, 400),
			       12, 256);
		for (uint32_t u = 0; u < rows; u++)
			part[u] = (uint32_t)(u % k);
		REQUIRE(parsa_nbrset_init(&used, g.n_cols, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&check, g.n_cols, k, NULL) == 0);
		REQUIRE(parsa_used_sets(&g, part, &used, NULL) == 0);
		before = mmax_of(&used);
		REQUIRE(parsa_refine_mmax(&g, part, &used, cap, 50, &st, NULL) == 0);
		CHECK_INT(st.M_max_before, ==, before);
		CHECK_INT(st.M_max_after, <=, before);
		CHECK_INT(mmax_of(&used), ==, st.M_max_after);
		/* used must equal the sets recomputed from the new placement */
		REQUIRE(parsa_used_sets(&g, part, &check, NULL) == 0);
		for (uint32_t i = 0; i < k; i++)
			CHECK_INT(used.size[i], ==, check.size[i]);
		for (uint64_t w = 0; w < (uint64_t)g.n_cols * used.words; w++)
			CHECK(used.bits[w] == check.bits[w]);
		size = calloc(k, sizeof(uint64_t));
		for (uint32_t u = 0; u < rows; u++) {
			CHECK_INT(part[u], <, k);
			size[part[u]]++;
		}
		for (uint32_t i = 0; i < k; i++)
			CHECK_INT(size[i], <=, cap > (rows + k - 1) / k ? cap : (rows + k - 1) / k);
		free(size);
		free(part);
		parsa_nbrset_release(&used);
		parsa_nbrset_release(&check);
		parsa_graph_release(&g);
	}
}

/* Part 0 holds two heavy disjoint rows, part 1 holds rows that overlap one
 * of them: moving it to part 1 must lower M_max. */
static void test_moves_stranded_heavy_row(void)
{
	struct parsa_graph g;
	struct parsa_nbrset used;
	struct parsa_refine_stats st;
	uint32_t a[20], b[20], c[20], part[4] = {0, 0, 1, 1};

	parsa_graph_init(&g);
	for (uint32_t i = 0; i < 20; i++) {
		a[i] = i;      /* row 0: features 0..19 */
		b[i] = 20 + i; /* row 1: features 20..39 */
		c[i] = 20 + i; /* rows 2, 3: features 20..39 (subset below) */
	}
	parsa_graph_add_row(&g, a, 20, NULL);
	parsa_graph_add_row(&g, b, 20, NULL);
	parsa_graph_add_row(&g, c, 10, NULL);
	parsa_graph_add_row(&g, c + 10, 10, NULL);
	REQUIRE(parsa_nbrset_init(&used, g.n_cols, 2, NULL) == 0);
	REQUIRE(parsa_used_sets(&g, part, &used, NULL) == 0);
	CHECK_INT(mmax_of(&used), ==, 40);
	REQUIRE(parsa_refine_mmax(&g, part, &used, 3, 10, &st, NULL) == 0);
	CHECK_INT(part[1], ==, 1);
	CHECK_INT(st.M_max_after, ==, 20);
	CHECK_INT(st.moves, ==, 1);
	/* with a cap of 2 there is no room for a move: row 1 is swapped with
	 * a 10-feature row of part 1 instead (M = 30 and 20), sizes kept */
	part[1] = 0;
	part[2] = part[3] = 1;
	REQUIRE(parsa_used_sets(&g, part, &used, NULL) == 0);
	REQUIRE(parsa_refine_mmax(&g, part, &used, 2, 10, &st, NULL) == 0);
	CHECK_INT(part[1], ==, 1);
	CHECK_INT(part[0], ==, 0);
	CHECK_INT(part[2] + part[3], ==, 1);
	CHECK_INT(st.M_max_after, ==, 30);
	/* cap 2 and nothing to gain: a placement already optimal stays */
	part[0] = 0; part[1] = 1; part[2] = 0; part[3] = 1;
	REQUIRE(parsa_used_sets(&g, part, &used, NULL) == 0);
	REQUIRE(parsa_refine_mmax(&g, part, &used, 2, 10, &st, NULL) == 0);
	CHECK_INT(st.M_max_after, <=, st.M_max_before);
	parsa_nbrset_release(&used);
	parsa_graph_release(&g);
}

static void test_rejects_bad_input(void)
{
	struct parsa_graph g;
	struct parsa_nbrset used;
	struct parsa_err err;
	uint32_t row[] = {0, 1}, part[1] = {5};

	parsa_graph_init(&g);
	parsa_graph_add_row(&g, row, 2, NULL);
	REQUIRE(parsa_nbrset_init(&used, g.n_cols, 2, NULL) == 0);
	parsa_err_clear(&err);
	CHECK_INT(parsa_refine_mmax(&g, part, &used, 1, 5, NULL, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "part 5");
	parsa_nbrset_release(&used);
	REQUIRE(parsa_nbrset_init(&used, 7, 2, NULL) == 0);
	part[0] = 0;
	CHECK_INT(parsa_refine_mmax(&g, part, &used, 1, 5, NULL, NULL), ==, PARSA_EINVAL);
	parsa_nbrset_release(&used);
	parsa_graph_release(&g);
}

int main(void)
{
	RUN(test_random_invariants);
	RUN(test_moves_stranded_heavy_row);
	RUN(test_rejects_bad_input);
	return harness_done();
}
