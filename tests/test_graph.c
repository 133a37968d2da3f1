/*
 * test_graph: CSR building, de-duplication, transpose, validation; RNG.
 */
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"
#include "harness.h"

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_rng.h"

static void test_add_row_sorts_and_dedupes(void)
{
	struct parsa_graph g;
	uint32_t r0[] = {5, 1, 5, 3, 1};
	uint32_t r1[] = {0};

	parsa_graph_init(&g);
	REQUIRE(parsa_graph_add_row(&g, r0, 5, NULL) == 0);
	REQUIRE(parsa_graph_add_row(&g, NULL, 0, NULL) == 0); /* empty row */
	REQUIRE(parsa_graph_add_row(&g, r1, 1, NULL) == 0);
	CHECK_INT(g.n_rows, ==, 3);
	CHECK_INT(g.n_cols, ==, 6);
	CHECK_INT(parsa_graph_nnz(&g), ==, 4);
	CHECK_INT(parsa_graph_degree(&g, 0), ==, 3);
	CHECK_INT(parsa_graph_degree(&g, 1), ==, 0);
	CHECK_INT(g.col[0], ==, 1);
	CHECK_INT(g.col[1], ==, 3);
	CHECK_INT(g.col[2], ==, 5);
	CHECK_INT(g.col[3], ==, 0);
	CHECK(parsa_graph_validate(&g, NULL) == 0);
	parsa_graph_trim(&g);
	CHECK(parsa_graph_validate(&g, NULL) == 0);
	CHECK_INT(parsa_graph_bytes(&g), ==, 4 * 8 + 4 * 4);
	parsa_graph_release(&g);
	CHECK(g.row_ptr == NULL && g.n_rows == 0);
	parsa_graph_release(NULL);
}

/* Rows of 0..200 ids (short rows by insertion, long ones by shell sort),
 * sorted, partly sorted or random, against qsort + unique. */
static void test_add_row_random_oracle(void)
{
	struct parsa_rng rng;
	uint32_t buf[200], want[200];
	struct parsa_graph g;

	parsa_rng_seed(&rng, 7);
	parsa_graph_init(&g);
	for (int iter = 0; iter < 600 && !harness_cur_failed; iter++) {
		size_t n = parsa_rng_below(&rng, 201), m = 0;
		uint32_t range = 1 + (uint32_t)parsa_rng_below(&rng, 400);
		uint64_t shape = parsa_rng_below(&rng, 3);

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint32_t)parsa_rng_below(&rng, range);
		if (shape > 0) /* sorted, or sorted then a random tail */
			qsort(buf, shape == 1 ? n : n / 2, sizeof(uint32_t),
			      base_cmp_u32);
		memcpy(want, buf, n * sizeof(uint32_t));
		qsort(want, n, sizeof(uint32_t), base_cmp_u32);
		for (size_t i = 0; i < n; i++)
			if (m == 0 || want[i] != want[m - 1])
				want[m++] = want[i];
		REQUIRE(parsa_graph_add_row(&g, buf, n, NULL) == 0);
		CHECK_INT(parsa_graph_degree(&g, g.n_rows - 1), ==, m);
		for (size_t i = 0; i < m; i++)
			CHECK_INT(g.col[g.row_ptr[g.n_rows - 1] + i], ==, want[i]);
	}
	parsa_graph_release(&g);
}

static void test_transpose_random(void)
{
	struct parsa_rng rng;
	uint32_t buf[40];

	parsa_rng_seed(&rng, 42);
	for (int iter = 0; iter < 50; iter++) {
		struct parsa_graph g, t, tt;
		uint32_t rows = 1 + (uint32_t)parsa_rng_below(&rng, 60);
		uint32_t cols = 1 + (uint32_t)parsa_rng_below(&rng, 30);

		parsa_graph_init(&g);
		parsa_graph_init(&t);
		parsa_graph_init(&tt);
		for (uint32_t r = 0; r < rows; r++) {
			size_t n = parsa_rng_below(&rng, 40);

			for (size_t i = 0; i < n; i++)
				buf[i] = (uint32_t)parsa_rng_below(&rng, cols);
			REQUIRE(parsa_graph_add_row(&g, buf, n, NULL) == 0);
		}
		REQUIRE(parsa_graph_transpose(&g, &t, NULL) == 0);
		CHECK(parsa_graph_validate(&t, NULL) == 0);
		CHECK_INT(parsa_graph_nnz(&t), ==, parsa_graph_nnz(&g));
		REQUIRE(parsa_graph_transpose(&t, &tt, NULL) == 0);
		/* transposing twice gives the rows back (up to trailing empty cols) */
		CHECK_INT(tt.n_rows, <=, g.n_rows);
		for (uint32_t r = 0; r < tt.n_rows; r++) {
			CHECK_INT(tt.row_ptr[r + 1], ==, g.row_ptr[r + 1]);
		}
		for (uint64_t e = 0; e < parsa_graph_nnz(&g); e++)
			CHECK_INT(tt.col[e], ==, g.col[e]);
		parsa_graph_release(&g);
		parsa_graph_release(&t);
		parsa_graph_release(&tt);
	}
}

static void test_validate_rejects(void)
{
	struct parsa_graph g;
	struct parsa_err err;
	uint32_t r[] = {1, 2};

	parsa_graph_init(&g);
	REQUIRE(parsa_graph_add_row(&g, r, 2, NULL) == 0);
	g.col[1] = 1; /* not strictly increasing */
	parsa_err_clear(&err);
	CHECK_INT(parsa_graph_validate(&g, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "not strictly increasing");
	g.col[1] = 9; /* out of range */
	parsa_err_clear(&err);
	CHECK_INT(parsa_graph_validate(&g, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "column 9");
	parsa_graph_release(&g);
	{
		/* offsets that climb past the last one and come back: the
		 * row reaching past is refused before its columns are read
		 * (col holds exactly 2 entries: ASan sees any read past) */
		uint64_t rp[] = {0, 1, 2, 3, 2};
		uint32_t *col = malloc(2 * sizeof(uint32_t));

		REQUIRE(col != NULL);
		col[0] = 0;
		col[1] = 1;
		parsa_graph_init(&g);
		g.n_rows = 4;
		g.n_cols = 2;
		g.row_ptr = rp;
		g.col = col;
		parsa_err_clear(&err);
		CHECK_INT(parsa_graph_validate(&g, &err), ==, PARSA_EINVAL);
		CHECK_CONTAINS(err.msg, "row 2 ends at 3, past the 2 nonzeros");
		free(col);
	}
}

static void test_err_first_wins(void)
{
	struct parsa_err err;

	parsa_err_clear(&err);
	CHECK_INT(parsa_fail(&err, PARSA_EIO, "first %d", 1), ==, PARSA_EIO);
	CHECK_INT(parsa_fail(&err, PARSA_EINVAL, "second"), ==, PARSA_EINVAL);
	CHECK_INT(err.code, ==, PARSA_EIO);
	CHECK_STR(err.msg, "first 1");
	parsa_err_clear(&err);
	parsa_fail_at(&err, PARSA_EPARSE, "f.svm", 3, 7, "bad %s", "token");
	CHECK_STR(err.msg, "f.svm:3:7: bad token");
	CHECK_INT(err.line, ==, 3);
	CHECK_INT(err.col, ==, 7);
	CHECK_INT(parsa_fail(NULL, PARSA_ENOMEM, "x"), ==, PARSA_ENOMEM);
	CHECK_STR(parsa_strerror(PARSA_OK), "success");
	CHECK_STR(parsa_strerror(999), "unknown error");
}

static void test_rng(void)
{
	struct parsa_rng a, b;
	uint32_t perm[100], seen[100] = {0};
	int counts[7] = {0};

	parsa_rng_seed(&a, 5);
	parsa_rng_seed(&b, 5);
	for (int i = 0; i < 100; i++)
		CHECK(parsa_rng_next(&a) == parsa_rng_next(&b));
	for (int i = 0; i < 70000; i++)
		counts[parsa_rng_below(&a, 7)]++;
	for (int i = 0; i < 7; i++)
		CHECK(counts[i] > 9000 && counts[i] < 11000);
	for (uint32_t i = 0; i < 100; i++)
		perm[i] = i;
	parsa_rng_shuffle_u32(&a, perm, 100);
	for (int i = 0; i < 100; i++)
		seen[perm[i]]++;
	for (int i = 0; i < 100; i++)
		CHECK_INT(seen[i], ==, 1);
	for (int i = 0; i < 1000; i++) {
		double d = parsa_rng_double(&a);

		CHECK(d >= 0.0 && d < 1.0);
	}
}

/* The shuffle (its draws made ahead of their swaps) against the plain
 * Fisher-Yates loop with the same generator: the same permutation and the
 * same generator state after, for sizes around the look-ahead. */
static void test_shuffle_oracle(void)
{
	static const uint64_t ns[] = { 0, 1, 2, 3, 15, 16, 17, 18, 31, 33,
				       100, 4097 };

	for (size_t c = 0; c < sizeof(ns) / sizeof(ns[0]); c++) {
		uint64_t n = ns[c];
		uint32_t *got = malloc((n + 1) * sizeof(uint32_t));
		uint32_t *want = malloc((n + 1) * sizeof(uint32_t));
		struct parsa_rng a, b;

		REQUIRE(got && want);
		for (uint64_t i = 0; i < n; i++)
			got[i] = want[i] = (uint32_t)(i * 7 + 3);
		parsa_rng_seed(&a, 11 + c);
		parsa_rng_seed(&b, 11 + c);
		parsa_rng_shuffle_u32(&a, got, n);
		for (uint64_t i = n; i > 1; i--) {
			uint64_t j = parsa_rng_below(&b, i);
			uint32_t t = want[i - 1];

			want[i - 1] = want[j];
			want[j] = t;
		}
		CHECK(n == 0 || memcmp(got, want, n * sizeof(uint32_t)) == 0);
		CHECK(parsa_rng_next(&a) == parsa_rng_next(&b));
		free(got);
		free(want);
	}
}

/* par for parsa_graph_col_cuts: the tasks in reverse order */
static void par_reverse(void *arg, uint32_t n, parsa_graph_task_fn fn,
			void *fn_arg)
{
	(void)arg;
	for (uint32_t t = n; t-- > 0;)
		fn(fn_arg, t);
}

/* Cuts on random graphs: ordered, multiples of 64 inside, from 0 to
 * n_cols, the same with and without tasks; features of equal frequency
 * get ranges of equal nonzeros within a bucket's; skewed frequencies
 * (feature v used by about 1 / (v + 1) of the rows) give the first task
 * fewer features than an even split, and still every task some work. */
static void test_col_cuts(void)
{
	static const uint32_t ncols[] = { 1, 63, 64, 1000, 70000, 3000000 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 7);
	for (size_t c = 0; c < sizeof(ncols) / sizeof(ncols[0]); c++) {
		for (int skew = 0; skew < 2; skew++) {
			struct parsa_graph g;
			uint32_t nc = ncols[c], row[64];
			uint32_t cut[9], cut2[9];
			uint64_t *bnnz;
			uint32_t nb = nc / 64 + 1;

			parsa_graph_init(&g);
			for (uint32_t r = 0; r < 4000; r++) {
				size_t n = 0;

				for (int j = 0; j < 40; j++)
					row[n++] = skew ? (uint32_t)(
						(uint64_t)nc >> parsa_rng_below(
							&rng, 22)) % nc
						: (uint32_t)parsa_rng_below(
							&rng, nc);
				REQUIRE(parsa_graph_add_row(&g, row, n, NULL) ==
					0);
			}
			g.n_cols = nc;
			bnnz = calloc(nb, sizeof(uint64_t));
			REQUIRE(bnnz != NULL);
			for (uint64_t e = 0; e < parsa_graph_nnz(&g); e++)
				bnnz[g.col[e] / 64]++;
			for (uint32_t n = 1; n <= 8; n++) {
				REQUIRE(parsa_graph_col_cuts(&g, n, cut, 14,
							     NULL, NULL) == 0);
				REQUIRE(parsa_graph_col_cuts(&g, n, cut2, 14,
							     par_reverse,
							     NULL) == 0);
				CHECK(memcmp(cut, cut2,
					     (n + 1) * sizeof(uint32_t)) == 0);
				CHECK_INT(cut[0], ==, 0);
				CHECK_INT(cut[n], ==, nc);
				for (uint32_t t = 1; t <= n; t++) {
					CHECK(cut[t - 1] <= cut[t]);
					CHECK(t == n || cut[t] % 64 == 0 ||
					      cut[t] == nc);
				}
				if (!skew && nc >= 64000 && n > 1) {
					/* even nonzeros, within 2 buckets
					 * (a bucket is at most 64 wide
					 * below 4M features) */
					uint64_t tot = parsa_graph_nnz(&g);

					for (uint32_t t = 0; t < n; t++) {
						uint64_t s = 0;

						for (uint32_t b = cut[t] / 64;
						     b < (cut[t + 1] + 63) / 64;
						     b++)
							s += bnnz[b];
						CHECK(s * n <= tot +
						      2 * n * (tot / nb + 64));
					}
				}
				if (skew && nc >= 3000000 && n > 1)
					CHECK(cut[1] < nc / n);
			}
			free(bnnz);
			parsa_graph_release(&g);
		}
	}
}

/* The weight of cold features (cold_w): 4 weighs none, so even nonzeros
 * also on Zipf-like data; a heavier cold nonzero moves the first cut
 * right (the first range holds the hot features: it needs more of the
 * cold ones to make its share), never left. */
static void test_col_cuts_cold_weight(void)
{
	static const uint32_t ncols[] = { 70000, 3000000 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 11);
	for (size_t c = 0; c < sizeof(ncols) / sizeof(ncols[0]); c++) {
		struct parsa_graph g;
		uint32_t nc = ncols[c], row[64], nb = nc / 64 + 1;
		uint64_t *bnnz, tot;

		parsa_graph_init(&g);
		for (uint32_t r = 0; r < 20000; r++) {
			for (int j = 0; j < 40; j++) {
				/* density about v^(-2/3): Zipf-like */
				double x = (double)parsa_rng_below(&rng, 1u << 30) /
					   (double)(1u << 30);

				row[j] = (uint32_t)(nc * x * x * x) % nc;
			}
			REQUIRE(parsa_graph_add_row(&g, row, 40, NULL) == 0);
		}
		g.n_cols = nc;
		tot = parsa_graph_nnz(&g);
		bnnz = calloc(nb, sizeof(uint64_t));
		REQUIRE(bnnz != NULL);
		for (uint64_t e = 0; e < tot; e++)
			bnnz[g.col[e] / 64]++;
		for (uint32_t n = 2; n <= 8; n *= 2) {
			uint32_t c4[9], c9[9], c14[9];
			uint64_t s = 0, last;

			REQUIRE(parsa_graph_col_cuts(&g, n, c4, 4, NULL, NULL) == 0);
			REQUIRE(parsa_graph_col_cuts(&g, n, c9, 9, NULL, NULL) == 0);
			REQUIRE(parsa_graph_col_cuts(&g, n, c14, 14, NULL, NULL) == 0);
			/* the first range ends with the bucket where 1/n of
			 * the nonzeros are reached (buckets of 64 here) */
			REQUIRE(c4[1] % 64 == 0 && c4[1] > 0);
			for (uint32_t b = 0; b + 1 < c4[1] / 64; b++)
				s += bnnz[b];
			last = bnnz[c4[1] / 64 - 1];
			CHECK(s * n < tot);
			CHECK((s + last) * n >= tot);
			CHECK(c4[1] <= c9[1]);
			CHECK(c9[1] <= c14[1]);
			CHECK(c4[1] < c14[1]);
		}
		free(bnnz);
		parsa_graph_release(&g);
	}
}

int main(void)
{
	RUN(test_add_row_sorts_and_dedupes);
	RUN(test_add_row_random_oracle);
	RUN(test_transpose_random);
	RUN(test_validate_rejects);
	RUN(test_err_first_wins);
	RUN(test_rng);
	RUN(test_col_cuts);
	RUN(test_col_cuts_cold_weight);
	RUN(test_shuffle_oracle);
	return harness_done();
}
