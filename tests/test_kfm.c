/*
 * test_kfm: the k-way FM refinement (parsa_kfm) against brute-force
 * evaluations of the connectivity, every M_j and every part size: the cap
 * and m_limit are never exceeded, the connectivity never rises (rollback),
 * the tracked sets stay exact, the same seed gives the same result; FM
 * escapes a local optimum that needs negative-gain moves (where the
 * label-propagation sweeps of parsa_fm are stuck), and recovers a planted
 * partition from a scrambled start.  Also the pipeline with --fm-passes,
 * --ml-levels, --ml-cycles and --ml-chains (the guard, determinism).
 */
#include "harness.h"
#include "testutil.h"
#include "testpart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_fm.h"
#include "parsa_kfm.h"
#include "parsa_metrics.h"
#include "parsa_ml.h"
#include "parsa_partu.h"
#include "part_run.h"

/* ---------------------------------------------------------------- helpers */

/* Run parsa_kfm_refine on (g, part) with fresh used sets. */
static int run_kfm(const struct parsa_graph *g, uint32_t *part, uint32_t k,
		   const struct parsa_kfm_opts *o, struct parsa_kfm_stats *st)
{
	struct parsa_nbrset used;
	int rc;

	if (tu_used_of(g, part, k, &used))
		return -1;
	rc = parsa_kfm_refine(g, part, &used, o, st, NULL);
	if (rc == 0)
		tu_check_used(g, part, &used);
	parsa_nbrset_release(&used);
	return rc;
}

/* ------------------------------------------------------------------ tests */

/* Random graphs, unit or random weights, any k: cap and m_limit kept, the
 * connectivity never rises, the stats agree with brute force. */
static void test_kfm_properties(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 11);
	for (int iter = 0; iter < 150; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, iter % 10 == 0 ? 90 : 12);
		uint32_t rows = 1 + (uint32_t)parsa_rng_below(&r, 500);
		uint32_t cols = 1 + (uint32_t)parsa_rng_below(&r, 300);
		struct parsa_graph g;
		struct parsa_kfm_stats st;
		uint32_t *part = malloc(rows * sizeof(uint32_t));
		uint32_t *w = iter % 3 == 1 ? malloc(rows * sizeof(uint32_t)) : NULL;
		uint64_t *M0 = calloc(k, sizeof(uint64_t)), *M1 = calloc(k, sizeof(uint64_t));
		uint64_t total = 0, cap, c0, c1;
		struct parsa_kfm_opts o = { 1 + (uint32_t)(iter % 5), 0, 0,
					    (uint64_t)iter,
					    (uint32_t)(iter % 4 == 0 ? 3 : 0),
					    w, (uint32_t)(iter % 7 == 0 ? 1 : 0) };

		tu_heavy_graph(&g, &r, rows, cols, 12, 300);
		for (uint32_t u = 0; w && u < rows; u++)
			w[u] = 1 + (uint32_t)parsa_rng_below(&r, 5);
		for (uint32_t u = 0; u < rows; u++)
			total += w ? w[u] : 1;
		/* dealt round-robin; the cap is what that dealing needs, plus
		 * a little room (none every fifth case) */
		for (uint32_t u = 0; u < rows; u++)
			part[u] = u % k;
		cap = tu_max_size(part, w, rows, k) + (iter % 5 ? total / (8 * k) : 0);
		o.cap = cap;
		c0 = tu_brute_conn(&g, part, k, M0);
		/* m_limit: the entry M_max, or a little below the largest M_j
		 * (that part may then only shrink) */
		o.m_limit = tu_max_of(M0, k) - (iter % 6 == 5 && tu_max_of(M0, k) > 0);
		REQUIRE(run_kfm(&g, part, k, &o, &st) == 0);
		c1 = tu_brute_conn(&g, part, k, M1);
		CHECK_INT(st.conn_before, ==, c0);
		CHECK_INT(st.conn_after, ==, c1);
		CHECK_INT(c1, <=, c0);
		CHECK_INT(st.moves, <=, st.tried);
		CHECK_INT(tu_max_size(part, w, rows, k), <=, cap);
		for (uint32_t j = 0; j < k; j++)
			CHECK(M1[j] <= o.m_limit || M1[j] <= M0[j]);
		free(part);
		free(w);
		free(M0);
		free(M1);
		parsa_graph_release(&g);
	}
}

/* The same seed gives the same placement; k-way FM is not a no-op on
 * random data (it finds something to improve from a round-robin start). */
static void test_kfm_deterministic(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	uint32_t rows = 1200, k = 7, *a = malloc(rows * sizeof(uint32_t));
	uint32_t *b = malloc(rows * sizeof(uint32_t));
	uint64_t M[7];
	struct parsa_kfm_stats sa, sb;
	struct parsa_kfm_opts o = { 4, parsa_balance_cap(rows, k, 1.03),
				    UINT64_MAX, 5, 0, NULL, 0 };

	parsa_rng_seed(&r, 77);
	tu_heavy_graph(&g, &r, rows, 500, 12, 300);
	for (uint32_t u = 0; u < rows; u++)
		a[u] = b[u] = u % k;
	REQUIRE(run_kfm(&g, a, k, &o, &sa) == 0);
	REQUIRE(run_kfm(&g, b, k, &o, &sb) == 0);
	CHECK(memcmp(a, b, rows * sizeof(uint32_t)) == 0);
	CHECK_INT(sa.conn_after, ==, sb.conn_after);
	CHECK_INT(sa.conn_after, <, sa.conn_before);
	CHECK_INT(tu_brute_conn(&g, a, k, M), ==, sa.conn_after);
	free(a);
	free(b);
	parsa_graph_release(&g);
}

/*
 * A local optimum of single moves: three examples g1..g3 of part 0 share
 * features s1, s2 (only theirs) and each has a feature t_i that part 1
 * also uses.  Moving one g alone costs 1 (gain −1), every other single
 * move too; moving all three saves 3.  The sweeps of parsa_fm stay at
 * connectivity 3, FM (negative-gain moves, best prefix) reaches 0.
 */
static void test_kfm_negative_moves(void)
{
	enum { S1, S2, T1, T2, T3, A, B };
	uint32_t rows[9][4] = {
		{ S1, S2, T1 }, { S1, S2, T2 }, { S1, S2, T3 },
		{ A }, { A }, { A },
		{ B, T1, T2, T3 }, { B, T1, T2, T3 }, { B, T1, T2, T3 },
	};
	uint32_t deg[9] = { 3, 3, 3, 1, 1, 1, 4, 4, 4 };
	uint32_t part[9] = { 0, 0, 0, 0, 0, 0, 1, 1, 1 }, p2[9];
	struct parsa_graph g;
	struct parsa_nbrset used;
	struct parsa_kfm_stats st;
	struct parsa_fm_opts fo = { 8, 6, 6, 0.0, 1, 1, 0, 0, NULL };
	struct parsa_kfm_opts ko = { 8, 6, 6, 1, 0, NULL, 0 };
	uint64_t M[2];

	parsa_graph_init(&g);
	for (int i = 0; i < 9; i++)
		REQUIRE(parsa_graph_add_row(&g, rows[i], deg[i], NULL) == 0);
	memcpy(p2, part, sizeof(part));
	CHECK_INT(tu_brute_conn(&g, part, 2, M), ==, 3);
	REQUIRE(parsa_nbrset_init(&used, g.n_cols, 2, NULL) == 0);
	REQUIRE(parsa_used_sets(&g, p2, &used, NULL) == 0);
	REQUIRE(parsa_fm_refine(&g, p2, &used, &fo, NULL, NULL) == 0);
	CHECK_INT(tu_brute_conn(&g, p2, 2, M), ==, 3); /* the sweeps are stuck */
	parsa_nbrset_release(&used);
	REQUIRE(run_kfm(&g, part, 2, &ko, &st) == 0);
	CHECK_INT(tu_brute_conn(&g, part, 2, M), ==, 0);
	CHECK_INT(st.conn_after, ==, 0);
	CHECK_INT(tu_max_size(part, NULL, 9, 2), <=, 6);
	CHECK_INT(tu_max_of(M, 2), <=, 6);
	CHECK(part[0] == 1 && part[1] == 1 && part[2] == 1);
	parsa_graph_release(&g);
}

/*
 * k disjoint clusters of 40 features, 60 examples each drawing 8 of their
 * cluster's features, plus 2% noise features from anywhere; start: the
 * planted parts with a third of the examples exchanged at random between
 * parts (sizes kept).  FM puts (almost) every cluster back in one part and
 * ends at or below the planted partition's connectivity.
 */
static void test_kfm_planted(void)
{
	const uint32_t k = 8, per = 60, vocab = 40, n = k * per;
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_kfm_stats st;
	uint32_t *truth = malloc(n * sizeof(uint32_t));
	uint32_t *part = malloc(n * sizeof(uint32_t)), row[10], agree = 0;
	uint64_t M[8], planted, scrambled;
	struct parsa_kfm_opts o = { 16, parsa_balance_cap(n, k, 1.03),
				    UINT64_MAX, 3, 0, NULL, 0 };

	parsa_rng_seed(&r, 42);
	parsa_graph_init(&g);
	for (uint32_t u = 0; u < n; u++) {
		uint32_t c = u / per, d = 0;

		truth[u] = part[u] = c;
		for (; d < 8; d++)
			row[d] = c * vocab + (uint32_t)parsa_rng_below(&r, vocab);
		if (parsa_rng_below(&r, 50) == 0)
			row[d++] = (uint32_t)parsa_rng_below(&r, k * vocab);
		CHECK(parsa_graph_add_row(&g, row, d, NULL) == 0);
	}
	planted = tu_brute_conn(&g, part, k, M);
	for (uint32_t i = 0; i < n / 6; i++) {
		uint32_t x = (uint32_t)parsa_rng_below(&r, n);
		uint32_t y = (uint32_t)parsa_rng_below(&r, n), t = part[x];

		part[x] = part[y];
		part[y] = t;
	}
	scrambled = tu_brute_conn(&g, part, k, M);
	CHECK_INT(scrambled, >, planted + 200); /* the start is far off */
	REQUIRE(run_kfm(&g, part, k, &o, &st) == 0);
	CHECK_INT(tu_brute_conn(&g, part, k, M), <=, planted);
	for (uint32_t c = 0; c < k; c++) {
		uint32_t cnt[8] = { 0 }, best = 0;

		for (uint32_t u = 0; u < n; u++)
			if (truth[u] == c)
				cnt[part[u]]++;
		for (uint32_t j = 0; j < k; j++)
			best = cnt[j] > best ? cnt[j] : best;
		agree += best;
	}
	CHECK_INT(agree * 100, >=, 95 * n);
	free(truth);
	free(part);
	parsa_graph_release(&g);
}

/* Counts saturate at 65535 (one feature in 70,000 examples of a part):
 * the sets are exact on return and the connectivity agrees. */
static void test_kfm_saturated_counts(void)
{
	struct parsa_graph g;
	uint32_t n = 70000, k = 2, *part = malloc(n * sizeof(uint32_t));
	uint64_t M[2];
	struct parsa_kfm_stats st;
	struct parsa_kfm_opts o = { 2, parsa_balance_cap(n, k, 1.03),
				    UINT64_MAX, 1, 0, NULL, 0 };

	parsa_graph_init(&g);
	for (uint32_t u = 0; u < n; u++) {
		uint32_t row[2] = { 0, 1 + u % 50 };

		CHECK(parsa_graph_add_row(&g, row, 2, NULL) == 0);
		part[u] = u % 50 < 25 ? 0 : 1;
	}
	REQUIRE(run_kfm(&g, part, k, &o, &st) == 0);
	CHECK_INT(tu_brute_conn(&g, part, k, M), ==, st.conn_after);
	CHECK_INT(st.conn_after, <=, st.conn_before);
	CHECK_INT(tu_max_size(part, NULL, n, k), <=, o.cap);
	parsa_graph_release(&g);
	free(part);
}

static void test_kfm_rejects_bad_input(void)
{
	struct parsa_graph g;
	struct parsa_nbrset used;
	struct parsa_err err;
	uint32_t row[] = { 0, 1 }, part[1] = { 5 };
	struct parsa_kfm_opts o = { 2, 1, UINT64_MAX, 1, 0, NULL, 0 };

	parsa_graph_init(&g);
	CHECK(parsa_graph_add_row(&g, row, 2, NULL) == 0);
	REQUIRE(parsa_nbrset_init(&used, g.n_cols, 2, NULL) == 0);
	parsa_err_clear(&err);
	CHECK_INT(parsa_kfm_refine(&g, part, &used, &o, NULL, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "part 5");
	CHECK_INT(parsa_kfm_refine(&g, part, &used, NULL, NULL, NULL), ==, PARSA_EINVAL);
	parsa_nbrset_release(&used);
	REQUIRE(parsa_nbrset_init(&used, 9, 2, NULL) == 0);
	part[0] = 0;
	CHECK_INT(parsa_kfm_refine(&g, part, &used, &o, NULL, NULL), ==, PARSA_EINVAL);
	parsa_nbrset_release(&used);
	parsa_graph_release(&g);
}

static int run_opts(const struct part_dataset *ds, uint32_t k, int kfm,
		    struct part_result *r)
{
	struct part_run_opts o;

	part_run_opts_default(&o);
	part_quality_apply(&o, kfm ? PART_QUALITY_BEST : PART_QUALITY_FAST);
	if (kfm) {
		o.fm_passes = 3;
		o.ml_levels = 6;
		o.ml_cycles = 2;
		o.ml_chains = 2;
	}
	o.pu.k = k;
	o.pu.seed = 9;
	o.random_trials = 1;
	part_result_init(r);
	return part_run(ds, &o, r, NULL);
}

/* The pipeline with k-way FM, V-cycles and the multilevel candidate:
 * never a larger T_max or M_max than fast (the guard), never a larger
 * T_sum, the balance bound kept, the same result for the same seed. */
static void test_kfm_pipeline(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 31);
	for (int iter = 0; iter < 8; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, 20);
		struct parsa_graph g;
		struct part_dataset ds;
		struct part_result f, b, b2;

		/* drawn in the order gcc evaluated them as arguments: the same cases */
		uint32_t cols = 50 + (uint32_t)parsa_rng_below(&r, 800);
		uint32_t rows = 100 + (uint32_t)parsa_rng_below(&r, 2000);

		tu_heavy_graph(&g, &r, rows, cols, 10, 300);
		tu_as_dataset(&ds, &g);
		REQUIRE(run_opts(&ds, k, 0, &f) == 0);
		REQUIRE(run_opts(&ds, k, 1, &b) == 0);
		REQUIRE(run_opts(&ds, k, 1, &b2) == 0);
		CHECK(b.m.T_max <= f.m.T_max && b.m.M_max <= f.m.M_max);
		CHECK(b.m.T_sum <= f.m.T_sum);
		CHECK(b.m.imbalance <= 1.03 + 1e-9);
		CHECK(memcmp(b.part, b2.part, ds.g.n_rows * sizeof(uint32_t)) == 0);
		part_result_release(&f);
		part_result_release(&b);
		part_result_release(&b2);
		part_dataset_release(&ds);
	}
}

/* Progress of the refinement: steps never go back, end at the total. */
struct steps {
	uint64_t last, total, calls;
	int back;
};

static void on_step(void *arg, uint64_t done, uint64_t total)
{
	struct steps *s = arg;

	s->back |= done < s->last || (s->total && total != s->total);
	s->last = done;
	s->total = total;
	s->calls++;
}

/* --guard-slack in the pipeline (best, one thread): the step-1 figures
 * are the strict run's, M_max and T_max within floor(slack times) them,
 * T_sum never above the strict run's (brute force), the balance bound
 * kept, progress monotone through both rounds; and the option's parser. */
static void test_guard_slack_pipeline(void)
{
	struct parsa_rng r;
	const double slacks[] = { 1.3, INFINITY };

	parsa_rng_seed(&r, 77);
	for (int iter = 0; iter < 6; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, 12);
		struct parsa_graph g;
		struct part_dataset ds;
		struct part_run_opts o;
		struct part_result st;
		uint64_t *M = calloc(k, sizeof(uint64_t));

		/* drawn in the order gcc evaluated them as arguments: the same cases */
		uint32_t cols = 50 + (uint32_t)parsa_rng_below(&r, 600);
		uint32_t rows = 200 + (uint32_t)parsa_rng_below(&r, 1500);

		tu_heavy_graph(&g, &r, rows, cols, 10, 300);
		tu_as_dataset(&ds, &g);
		part_run_opts_default(&o);
		part_quality_apply(&o, PART_QUALITY_BEST);
		o.pu.k = k;
		o.pu.seed = 3 + (uint64_t)iter;
		o.random_trials = 1;
		o.threads = 1;
		part_result_init(&st);
		REQUIRE(part_run(&ds, &o, &st, NULL) == 0);
		for (size_t i = 0; i < sizeof(slacks) / sizeof(*slacks); i++) {
			struct part_result sl;
			struct steps steps = { 0, 0, 0, 0 };
			uint64_t conn;

			o.guard_slack = slacks[i];
			o.refine_progress = on_step;
			o.refine_progress_arg = &steps;
			part_result_init(&sl);
			REQUIRE(part_run(&ds, &o, &sl, NULL) == 0);
			CHECK_INT(sl.step1_mmax, ==, st.step1_mmax);
			CHECK_INT(sl.step1_tmax, ==, st.step1_tmax);
			if (!isinf(slacks[i])) {
				CHECK(sl.m.M_max <= floor(slacks[i] * (double)sl.step1_mmax));
				CHECK(sl.m.T_max <= floor(slacks[i] * (double)sl.step1_tmax));
			}
			conn = tu_brute_conn(&ds.g, sl.part, k, M);
			CHECK_INT(conn, <=, tu_brute_conn(&ds.g, st.part, k, M));
			CHECK(sl.m.T_sum <= st.m.T_sum);
			CHECK(sl.m.imbalance <= 1.03 + 1e-9);
			CHECK(!steps.back && steps.calls > 0);
			CHECK_INT(steps.last, ==, steps.total);
			part_result_release(&sl);
		}
		o.refine_progress = NULL;
		part_result_release(&st);
		part_dataset_release(&ds);
		free(M);
	}
}

int main(void)
{
	RUN(test_kfm_properties);
	RUN(test_kfm_deterministic);
	RUN(test_kfm_negative_moves);
	RUN(test_kfm_planted);
	RUN(test_kfm_saturated_counts);
	RUN(test_kfm_rejects_bad_input);
	RUN(test_kfm_pipeline);
	RUN(test_guard_slack_pipeline);
	return harness_done();
}
