/*
 * test_metrics: the metrics of README "What the numbers mean"
 * (parsa_metrics.c) against hand computed values and against a
 * brute-force oracle that applies the definitions directly with explicit
 * sets; the random baseline's mean.
 */
#include <math.h>

#include "harness.h"
#include "testutil.h"
#include "parsa_baseline.h"
#include "parsa_graph.h"
#include "parsa_metrics.h"
#include "parsa_nbrset.h"
#include "parsa_rng.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (1.0 + fabs(b));
}

#define NEAR(a, b) near((double)(a), (double)(b))

static void add_row(struct parsa_graph *g, const uint32_t *cols, size_t n)
{
	uint32_t tmp[64];

	memcpy(tmp, cols, n * sizeof(*tmp));
	CHECK_INT(parsa_graph_add_row(g, tmp, n, NULL), ==, 0);
}

/*
 * The 3-machine example: 6 examples over 5 features.
 *   u0 {0,1}  u1 {1,2}  | u2 {2,3}  u3 {3,4}  | u4 {0,4}  u5 {1,3}
 *   part:  u0,u1 -> 0;  u2,u3 -> 1;  u4,u5 -> 2
 *   N(U_0) = {0,1,2}, N(U_1) = {2,3,4}, N(U_2) = {0,1,3,4}
 *   M = (3, 3, 4): M_max = 4, Σ M = 10
 *   owner: f0 -> 0, f1 -> 2, f2 -> 1, f3 -> 1, f4 -> 2
 *   V_0 = {0}, V_1 = {2,3}, V_2 = {1,4}
 *   T_0 = |{1,2}| + |V_0 ∩ N(U_1)| + |V_0 ∩ N(U_2)| = 2 + 0 + 1 = 3
 *   T_1 = |{4}|   + |V_1 ∩ N(U_0)| + |V_1 ∩ N(U_2)| = 1 + 1 + 1 = 3
 *   T_2 = |{0,3}| + |V_2 ∩ N(U_0)| + |V_2 ∩ N(U_1)| = 2 + 1 + 1 = 4
 *   T_max = 4, T_sum = 10, V_used = 5, RF = 10 / 5 = 2
 *   imbalance = 2 / ceil(6/3) = 1, local = 1 - (2+1+2)/10 = 0.5
 */
static void build_example(struct parsa_graph *g)
{
	static const uint32_t rows[6][2] = {
		{ 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 0, 4 }, { 1, 3 },
	};

	parsa_graph_init(g);
	for (int r = 0; r < 6; r++)
		add_row(g, rows[r], 2);
}

static void test_hand_example(void)
{
	struct parsa_graph g;
	uint32_t part[6] = { 0, 0, 1, 1, 2, 2 };
	uint32_t owner[5] = { 0, 2, 1, 1, 2 };
	uint64_t M[3], T[3], U[3];
	struct parsa_metrics m;

	build_example(&g);
	CHECK_INT(parsa_metrics_parts(&g, 3, part, owner, M, T, U, &m, NULL),
		  ==, 0);
	CHECK_INT(M[0], ==, 3);
	CHECK_INT(M[1], ==, 3);
	CHECK_INT(M[2], ==, 4);
	CHECK_INT(T[0], ==, 3);
	CHECK_INT(T[1], ==, 3);
	CHECK_INT(T[2], ==, 4);
	CHECK_INT(U[0], ==, 2);
	CHECK_INT(U[2], ==, 2);
	CHECK_INT(m.k, ==, 3);
	CHECK(NEAR(m.M_max, 4) && NEAR(m.M_sum, 10));
	CHECK(NEAR(m.T_max, 4) && NEAR(m.T_sum, 10));
	CHECK(NEAR(m.RF, 2.0));
	CHECK(NEAR(m.imbalance, 1.0));
	CHECK(NEAR(m.local_fraction, 0.5));
	CHECK_INT(m.V_used, ==, 5);
	CHECK_INT(m.U_max, ==, 2);
	parsa_graph_release(&g);
}

/*
 * Same graph, u5 moved to part 0 and everything owned by server 0:
 *   N(U_0) = {0,1,2,3}, N(U_1) = {2,3,4}, N(U_2) = {0,4}; M = (4,3,2)
 *   V_0 = all: T_0 = 0 + |N(U_1)| + |N(U_2)| = 5, T_1 = 3, T_2 = 2
 *   sizes (3,2,1): imbalance = 3/2; local = 1 - (0+3+2)/9 = 4/9
 */
static void test_hand_skewed(void)
{
	struct parsa_graph g;
	uint32_t part[6] = { 0, 0, 1, 1, 2, 0 };
	uint32_t owner[5] = { 0, 0, 0, 0, 0 };
	uint64_t T[3];
	struct parsa_metrics m;

	build_example(&g);
	CHECK_INT(parsa_metrics_parts(&g, 3, part, owner, NULL, T, NULL, &m,
				      NULL), ==, 0);
	CHECK_INT(T[0], ==, 5);
	CHECK_INT(T[1], ==, 3);
	CHECK_INT(T[2], ==, 2);
	CHECK(NEAR(m.M_max, 4) && NEAR(m.M_sum, 9));
	CHECK(NEAR(m.T_max, 5) && NEAR(m.T_sum, 10));
	CHECK(NEAR(m.imbalance, 1.5));
	CHECK(NEAR(m.local_fraction, 4.0 / 9.0));
	CHECK(NEAR(m.RF, 9.0 / 5.0));
	CHECK_INT(m.U_max, ==, 3);
	parsa_graph_release(&g);
}

/* Oracle: the definitions of §1 with explicit boolean sets. */
struct oracle {
	uint64_t M[1100], T[1100], U[1100];
	uint64_t nnz[1100], V[1100], in[1100], out[1100];
	uint64_t V_used, remote;
};

static void oracle(const struct parsa_graph *g, uint32_t k,
		   const uint32_t *part, const uint32_t *owner,
		   struct oracle *o)
{
	uint32_t d = g->n_cols;
	unsigned char *in = calloc((size_t)k * d + 1, 1); /* v ∈ N(U_i) */

	memset(o, 0, sizeof(*o));
	for (uint32_t r = 0; r < g->n_rows; r++) {
		o->U[part[r]]++;
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			in[(size_t)part[r] * d + g->col[e]] = 1;
			o->nnz[part[r]]++;
		}
	}
	for (uint32_t v = 0; v < d; v++)
		o->V[owner[v]]++;
	for (uint32_t v = 0; v < d; v++) {
		int any = 0;

		for (uint32_t i = 0; i < k; i++)
			any |= in[(size_t)i * d + v];
		o->V_used += (uint64_t)any;
	}
	for (uint32_t i = 0; i < k; i++) {
		for (uint32_t v = 0; v < d; v++) {
			int mine = owner[v] == i;

			o->M[i] += in[(size_t)i * d + v];
			/* |N(U_i) \ V_i| */
			if (in[(size_t)i * d + v] && !mine) {
				o->T[i]++;
				o->in[i]++;
				o->remote++;
			}
			/* Σ_{j≠i} |V_i ∩ N(U_j)| */
			for (uint32_t j = 0; mine && j < k; j++)
				if (j != i && in[(size_t)j * d + v]) {
					o->T[i]++;
					o->out[i]++;
				}
		}
	}
	free(in);
}

/* The per-part figures (parsa_metrics_figures) equal the oracle's, and
 * the summary metrics equal parsa_metrics_parts' m. */
static void check_figures_oracle(const struct parsa_graph *g, uint32_t k,
				 const uint32_t *part, const uint32_t *owner,
				 const struct oracle *o,
				 const struct parsa_metrics *m)
{
	struct parsa_partfig pf;
	struct parsa_metrics m2;

	REQUIRE(parsa_partfig_init(&pf, k, NULL) == 0);
	REQUIRE(parsa_metrics_figures(g, k, part, owner, &pf, &m2, NULL) == 0);
	for (uint32_t i = 0; i < k; i++) {
		CHECK_INT(pf.U[i], ==, o->U[i]);
		CHECK_INT(pf.nnz[i], ==, o->nnz[i]);
		CHECK_INT(pf.M[i], ==, o->M[i]);
		CHECK_INT(pf.V[i], ==, o->V[i]);
		CHECK_INT(pf.T[i], ==, o->T[i]);
		CHECK_INT(pf.in[i], ==, o->in[i]);
		CHECK_INT(pf.out[i], ==, o->out[i]);
		CHECK_INT(pf.in[i] + pf.out[i], ==, pf.T[i]);
	}
	CHECK(m2.T_sum == m->T_sum && m2.M_max == m->M_max &&
	      m2.local_fraction == m->local_fraction);
	/* figures of another k are refused */
	if (k > 1) {
		struct parsa_partfig other;

		REQUIRE(parsa_partfig_init(&other, k - 1, NULL) == 0);
		CHECK_INT(parsa_metrics_figures(g, k, part, owner, &other,
						NULL, NULL), ==, PARSA_EINVAL);
		parsa_partfig_release(&other);
	}
	parsa_partfig_release(&pf);
	parsa_partfig_release(&pf); /* twice: a no-op */
}

static void check_against_oracle(const struct parsa_graph *g, uint32_t k,
				 const uint32_t *part, const uint32_t *owner)
{
	static uint64_t M[1100], T[1100], U[1100];
	struct oracle o;
	struct parsa_metrics m;
	uint64_t mmax = 0, tmax = 0, tsum = 0, msum = 0, umax = 0;

	oracle(g, k, part, owner, &o);
	REQUIRE(parsa_metrics_parts(g, k, part, owner, M, T, U, &m, NULL) ==
		0);
	for (uint32_t i = 0; i < k; i++) {
		CHECK_INT(M[i], ==, o.M[i]);
		CHECK_INT(T[i], ==, o.T[i]);
		CHECK_INT(U[i], ==, o.U[i]);
		mmax = o.M[i] > mmax ? o.M[i] : mmax;
		tmax = o.T[i] > tmax ? o.T[i] : tmax;
		umax = o.U[i] > umax ? o.U[i] : umax;
		tsum += o.T[i];
		msum += o.M[i];
	}
	CHECK(NEAR(m.M_max, (double)mmax) && NEAR(m.T_max, (double)tmax));
	CHECK(NEAR(m.T_sum, (double)tsum) && NEAR(m.M_sum, (double)msum));
	check_figures_oracle(g, k, part, owner, &o, &m);
	CHECK_INT(m.V_used, ==, o.V_used);
	CHECK_INT(m.U_max, ==, umax);
	CHECK(NEAR(m.RF, o.V_used ? (double)msum / (double)o.V_used : 0.0));
	CHECK(NEAR(m.local_fraction,
		   msum ? 1.0 - (double)o.remote / (double)msum : 1.0));
	if (g->n_rows)
		CHECK(NEAR(m.imbalance,
			   (double)umax / (double)((g->n_rows + k - 1) / k)));
}

static void test_oracle_random(void)
{
	static const uint32_t ks[] = { 1, 2, 3, 5, 64, 65, 130, 1024 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 42);
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		uint32_t k = ks[a];

		for (int t = 0; t < 40; t++) {
			uint32_t n = (uint32_t)parsa_rng_below(&rng, 60);
			uint32_t d = 1 + (uint32_t)parsa_rng_below(&rng, 40);
			double p = parsa_rng_double(&rng) * 0.4;
			struct parsa_graph g;
			uint32_t *part = malloc((n + 1) * sizeof(*part));
			uint32_t *owner = malloc((d + 1) * sizeof(*owner));

			tu_random_graph(&g, &rng, n, d, p);
			for (uint32_t r = 0; r < n; r++)
				part[r] = (uint32_t)parsa_rng_below(&rng, k);
			for (uint32_t v = 0; v < d; v++)
				owner[v] = (uint32_t)parsa_rng_below(&rng, k);
			check_against_oracle(&g, k, part, owner);
			free(part);
			free(owner);
			parsa_graph_release(&g);
		}
	}
}

/* parsa_used_sets gives exactly the sets N(U_i), replacing old content. */
static void test_used_sets(void)
{
	struct parsa_graph g;
	struct parsa_nbrset used;
	uint32_t part[6] = { 0, 0, 1, 1, 2, 2 };
	/* N(U_0) = {0,1,2}, N(U_1) = {2,3,4}, N(U_2) = {0,1,3,4} */
	static const int want[3][5] = {
		{ 1, 1, 1, 0, 0 }, { 0, 0, 1, 1, 1 }, { 1, 1, 0, 1, 1 },
	};

	build_example(&g);
	REQUIRE(parsa_nbrset_init(&used, 5, 3, NULL) == 0);
	parsa_nbrset_add(&used, 3, 0); /* stale bit: must be cleared */
	CHECK_INT(parsa_used_sets(&g, part, &used, NULL), ==, 0);
	for (uint32_t i = 0; i < 3; i++)
		for (uint32_t v = 0; v < 5; v++)
			CHECK_INT(parsa_nbrset_has(&used, v, i), ==,
				  want[i][v]);
	CHECK_INT(used.size[0], ==, 3);
	CHECK_INT(used.size[2], ==, 4);
	parsa_nbrset_release(&used);
	/* wrong n_feat */
	REQUIRE(parsa_nbrset_init(&used, 4, 3, NULL) == 0);
	CHECK_INT(parsa_used_sets(&g, part, &used, NULL), ==, PARSA_EINVAL);
	parsa_nbrset_release(&used);
	parsa_graph_release(&g);
}

/* parsa_used_sets in 1-5 feature ranges (as the threads of part_run run
 * it) equals the one-call sets on random graphs, k up to 130 (3 words);
 * a column past n_cols is reported by every piece that meets its row. */
static void test_used_sets_ranges(void)
{
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 77);
	for (int trial = 0; trial < 40; trial++) {
		struct parsa_graph g;
		struct parsa_nbrset want, got;
		uint32_t n = 1 + parsa_rng_below(&rng, 60);
		uint32_t d = 1 + parsa_rng_below(&rng, 90);
		uint32_t k = 1 + parsa_rng_below(&rng, 130);
		uint32_t pieces = 1 + parsa_rng_below(&rng, 5);
		uint32_t *part = malloc(n * sizeof(*part));

		tu_random_graph(&g, &rng, n, d, 0.15);
		for (uint32_t r = 0; r < n; r++)
			part[r] = parsa_rng_below(&rng, k);
		REQUIRE(parsa_nbrset_init(&want, d, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&got, d, k, NULL) == 0);
		CHECK_INT(parsa_used_sets(&g, part, &want, NULL), ==, 0);
		CHECK_INT(parsa_used_sets_check(&g, part, &got, NULL), ==, 0);
		parsa_nbrset_add(&got, 0, k - 1); /* stale: cleared below */
		parsa_nbrset_clear(&got);
		for (uint32_t t = 0; t < pieces; t++)
			CHECK_INT(parsa_used_sets_range(&g, part, &got,
							(uint32_t)((uint64_t)d * t / pieces),
							(uint32_t)((uint64_t)d * (t + 1) / pieces)),
				  ==, 0);
		parsa_nbrset_recount(&got);
		for (uint32_t v = 0; v < d; v++)
			for (uint32_t i = 0; i < k; i++)
				CHECK_INT(parsa_nbrset_has(&got, v, i), ==,
					  parsa_nbrset_has(&want, v, i));
		for (uint32_t i = 0; i < k; i++)
			CHECK_INT(got.size[i], ==, want.size[i]);
		/* an id past the features in the last row */
		if (g.n_rows && parsa_graph_degree(&g, n - 1)) {
			g.col[g.row_ptr[n] - 1] = d;
			CHECK_INT(parsa_used_sets_range(&g, part, &got, 0, d / 2),
				  ==, -1);
			CHECK_INT(parsa_used_sets_range(&g, part, &got, 0, d),
				  ==, -1);
			CHECK_INT(parsa_used_sets(&g, part, &want, NULL), ==,
				  PARSA_EINVAL);
		}
		/* a part id out of range */
		part[n - 1] = k;
		CHECK_INT(parsa_used_sets_check(&g, part, &got, NULL), ==,
			  PARSA_EINVAL);
		parsa_nbrset_release(&want);
		parsa_nbrset_release(&got);
		parsa_graph_release(&g);
		free(part);
	}
}

/* No examples, empty rows, unused features: no division by zero. */
static void test_degenerate(void)
{
	struct parsa_graph g;
	struct parsa_metrics m;
	uint32_t part[4] = { 0, 1, 1, 0 }, owner[3] = { 2, 0, 1 };

	parsa_graph_init(&g);
	CHECK_INT(parsa_metrics_compute(&g, 4, NULL, NULL, &m, NULL), ==, 0);
	CHECK(m.RF == 0.0 && m.local_fraction == 1.0 && m.imbalance == 1.0);
	CHECK(m.T_max == 0.0 && m.M_max == 0.0 && m.U_max == 0);
	for (int r = 0; r < 4; r++)
		CHECK_INT(parsa_graph_add_row(&g, NULL, 0, NULL), ==, 0);
	g.n_cols = 3;
	CHECK_INT(parsa_metrics_compute(&g, 3, part, owner, &m, NULL), ==, 0);
	CHECK(m.RF == 0.0 && m.local_fraction == 1.0);
	CHECK(NEAR(m.imbalance, 1.0)); /* 2 / ceil(4/3) */
	CHECK_INT(m.V_used, ==, 0);
	CHECK(m.T_sum == 0.0 && m.M_sum == 0.0);
	CHECK_INT(m.U_max, ==, 2);
	parsa_graph_release(&g);
}

static void test_bad_ids(void)
{
	struct parsa_graph g;
	struct parsa_metrics m;
	struct parsa_err err;
	uint32_t part[6] = { 0, 0, 1, 3, 2, 2 };
	uint32_t owner[5] = { 0, 2, 1, 1, 2 };

	build_example(&g);
	parsa_err_clear(&err);
	CHECK_INT(parsa_metrics_compute(&g, 3, part, owner, &m, &err), ==,
		  PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "example 3");
	part[3] = 1;
	owner[4] = 7;
	parsa_err_clear(&err);
	CHECK_INT(parsa_metrics_compute(&g, 3, part, owner, &m, &err), ==,
		  PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "feature 4");
	owner[4] = 2;
	CHECK_INT(parsa_metrics_compute(&g, 0, part, owner, &m, NULL), ==,
		  PARSA_EINVAL);
	CHECK_INT(parsa_metrics_compute(&g, 3, part, owner, &m, NULL), ==, 0);
	parsa_graph_release(&g);
}

/* The random baseline is the mean over trials seeded seed, seed+1, ... */
static void random_mean_k(uint32_t k);

static void test_random_mean(void)
{
	/* 1-byte ids in the trials up to k = 64, 4-byte ones above */
	static const uint32_t ks[] = {7, 64, 65, 200};

	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
		random_mean_k(ks[i]);
}

static void random_mean_k(uint32_t k)
{
	struct parsa_rng rng;
	struct parsa_graph g;
	struct parsa_metrics mean, one, sum = { 0 };
	const uint32_t trials = 5;
	const uint64_t seed = 1234;
	uint32_t part[300], owner[80];

	parsa_rng_seed(&rng, 9);
	tu_random_graph(&g, &rng, 300, 80, 0.05);
	CHECK_INT(parsa_metrics_random(&g, k, seed, trials, &mean, NULL), ==,
		  0);
	for (uint32_t t = 0; t < trials; t++) {
		parsa_rng_seed(&rng, seed + t);
		REQUIRE(parsa_random_u(g.n_rows, k, &rng, part, NULL) == 0);
		parsa_random_v(g.n_cols, k, &rng, owner);
		REQUIRE(parsa_metrics_compute(&g, k, part, owner, &one,
					      NULL) == 0);
		sum.M_max += one.M_max;
		sum.T_max += one.T_max;
		sum.T_sum += one.T_sum;
		sum.M_sum += one.M_sum;
		sum.RF += one.RF;
		sum.imbalance += one.imbalance;
		sum.local_fraction += one.local_fraction;
		sum.V_used = one.V_used;
		sum.U_max = one.U_max;
	}
	CHECK_INT(mean.k, ==, k);
	CHECK(NEAR(mean.M_max, sum.M_max / trials));
	CHECK(NEAR(mean.T_max, sum.T_max / trials));
	CHECK(NEAR(mean.T_sum, sum.T_sum / trials));
	CHECK(NEAR(mean.M_sum, sum.M_sum / trials));
	CHECK(NEAR(mean.RF, sum.RF / trials));
	CHECK(NEAR(mean.imbalance, sum.imbalance / trials));
	CHECK(NEAR(mean.local_fraction, sum.local_fraction / trials));
	CHECK_INT(mean.V_used, ==, sum.V_used);
	CHECK_INT(mean.U_max, ==, sum.U_max); /* a deal: always ceil(n/k) */
	CHECK_INT(mean.U_max, ==, (300 + k - 1) / k);
	/* random placements are not local: about 1/k of the uses are */
	CHECK(mean.local_fraction > 0.4 / k && mean.local_fraction < 2.5 / k);
	/* deterministic */
	CHECK_INT(parsa_metrics_random(&g, k, seed, trials, &one, NULL), ==,
		  0);
	CHECK(one.T_max == mean.T_max && one.RF == mean.RF);
	CHECK_INT(parsa_metrics_random(&g, k, seed, 0, &one, NULL), ==,
		  PARSA_EINVAL);
	CHECK_INT(parsa_metrics_random(&g, 0, seed, 5, &one, NULL), ==,
		  PARSA_EINVAL);
	parsa_graph_release(&g);
}

/* The random baseline's per-part figures are those of its first trial
 * (seed), checked by brute force; the mean is unchanged by asking. */
static void test_random_first_figures(void)
{
	struct parsa_rng rng;
	struct parsa_graph g;
	struct parsa_metrics mean, mean2, one;
	struct parsa_partfig pf;
	struct oracle o;
	const uint32_t k = 5;
	uint32_t part[200], owner[60];

	parsa_rng_seed(&rng, 77);
	tu_random_graph(&g, &rng, 200, 60, 0.08);
	REQUIRE(parsa_partfig_init(&pf, k, NULL) == 0);
	CHECK_INT(parsa_metrics_random_figures(&g, k, 31, 3, &mean, &pf, NULL),
		  ==, 0);
	CHECK_INT(parsa_metrics_random(&g, k, 31, 3, &mean2, NULL), ==, 0);
	CHECK(mean.T_sum == mean2.T_sum && mean.M_max == mean2.M_max);
	REQUIRE(parsa_random_placement(g.n_rows, g.n_cols, k, 31, part, owner,
				       NULL) == 0);
	oracle(&g, k, part, owner, &o);
	CHECK_INT(parsa_metrics_compute(&g, k, part, owner, &one, NULL), ==, 0);
	for (uint32_t i = 0; i < k; i++) {
		CHECK_INT(pf.U[i], ==, o.U[i]);
		CHECK_INT(pf.nnz[i], ==, o.nnz[i]);
		CHECK_INT(pf.M[i], ==, o.M[i]);
		CHECK_INT(pf.V[i], ==, o.V[i]);
		CHECK_INT(pf.in[i], ==, o.in[i]);
		CHECK_INT(pf.out[i], ==, o.out[i]);
	}
	parsa_partfig_release(&pf);
	CHECK_INT(parsa_partfig_init(&pf, 0, NULL), ==, PARSA_EINVAL);
	parsa_graph_release(&g);
}

/* The trials one by one (in any order of computation) and their mean in
 * index order equal parsa_metrics_random: what the partitioner's threads
 * rely on; each trial is the oracle's metrics of its own seed. */
static void test_random_trials_one_by_one(void)
{
	struct parsa_rng rng;
	struct parsa_graph g;
	struct parsa_metrics one[4], mean, ref, direct;
	const uint32_t k = 4, trials = 4;
	uint32_t part[150], owner[70];

	parsa_rng_seed(&rng, 5);
	tu_random_graph(&g, &rng, 150, 70, 0.1);
	/* computed backwards: the mean must not care */
	for (uint32_t t = trials; t-- > 0;)
		CHECK_INT(parsa_metrics_random_one(&g, k, 40 + t, NULL, &one[t],
						   NULL), ==, 0);
	parsa_metrics_mean(one, trials, k, &mean);
	CHECK_INT(parsa_metrics_random(&g, k, 40, trials, &ref, NULL), ==, 0);
	CHECK(mean.k == ref.k && mean.M_max == ref.M_max &&
	      mean.T_max == ref.T_max && mean.T_sum == ref.T_sum &&
	      mean.M_sum == ref.M_sum && mean.RF == ref.RF &&
	      mean.imbalance == ref.imbalance &&
	      mean.local_fraction == ref.local_fraction &&
	      mean.V_used == ref.V_used && mean.U_max == ref.U_max);
	for (uint32_t t = 0; t < trials; t++) {
		REQUIRE(parsa_random_placement(g.n_rows, g.n_cols, k, 40 + t,
					       part, owner, NULL) == 0);
		CHECK_INT(parsa_metrics_compute(&g, k, part, owner, &direct,
						NULL), ==, 0);
		CHECK(direct.T_sum == one[t].T_sum && direct.M_max == one[t].M_max &&
		      direct.T_max == one[t].T_max);
	}
	CHECK_INT(parsa_metrics_random_one(&g, 0, 1, NULL, &direct, NULL), ==,
		  PARSA_EINVAL);
	parsa_graph_release(&g);
}

static void test_improvement(void)
{
	CHECK(NEAR(parsa_improvement(10, 5), 100.0));
	CHECK(NEAR(parsa_improvement(5, 10), -50.0));
	CHECK(NEAR(parsa_improvement(7, 7), 0.0));
	CHECK(parsa_improvement(0, 0) == 0.0);
	CHECK(isinf(parsa_improvement(3, 0)) && parsa_improvement(3, 0) > 0);
}

int main(void)
{
	RUN(test_hand_example);
	RUN(test_hand_skewed);
	RUN(test_oracle_random);
	RUN(test_used_sets);
	RUN(test_used_sets_ranges);
	RUN(test_degenerate);
	RUN(test_bad_ids);
	RUN(test_random_mean);
	RUN(test_random_first_figures);
	RUN(test_random_trials_one_by_one);
	RUN(test_improvement);
	return harness_done();
}
