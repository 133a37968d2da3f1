/*
 * test_louvain: Louvain communities (parsa_louvain) against a brute-force
 * modularity: every move of the first level raises Q by exactly the gain
 * it predicts, every node is in one community numbered densely, more
 * levels never lower Q, the same seed gives the same communities; planted
 * communities are recovered (graphs and the star expansion of a
 * hypergraph); a due stop leaves a valid clustering.  And the restricted
 * clustering of parsa_ml: no cluster spans two communities (or parts).
 */
#include "harness.h"
#include "testutil.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_louvain.h"
#include "parsa_ml.h"

/* A dense symmetric matrix as a parsa_wgraph (zero entries left out). */
static void from_dense(struct parsa_wgraph *g, const double *A, uint32_t n)
{
	uint64_t at = 0;

	g->n = n;
	g->ptr = calloc(n + 1, sizeof(uint64_t));
	g->adj = malloc((size_t)n * n * sizeof(uint32_t) + 4);
	g->w = malloc((size_t)n * n * sizeof(double) + 8);
	for (uint32_t a = 0; a < n; a++) {
		for (uint32_t b = 0; b < n; b++)
			if (A[a * n + b] > 0) {
				g->adj[at] = b;
				g->w[at++] = A[a * n + b];
			}
		g->ptr[a + 1] = at;
	}
}

/* The oracle: Q = (1/2m) Σ_ab [A_ab − k_a k_b / 2m] δ(c_a, c_b). */
static double brute_q(const double *A, uint32_t n, const uint32_t *c)
{
	double m2 = 0, q = 0, *k = calloc(n, sizeof(double));

	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++) {
			k[a] += A[a * n + b];
			m2 += A[a * n + b];
		}
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++)
			if (c[a] == c[b])
				q += A[a * n + b] - k[a] * k[b] / m2;
	free(k);
	return m2 > 0 ? q / m2 : 0;
}

static void random_dense(double *A, uint32_t n, struct parsa_rng *r,
			 double p)
{
	memset(A, 0, (size_t)n * n * sizeof(double));
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = a; b < n; b++)
			if (parsa_rng_double(r) < (a == b ? p / 4 : p)) {
				double w = parsa_rng_below(r, 3) == 0
						   ? 1.0
						   : 0.25 + parsa_rng_double(r) * 3;

				A[a * n + b] = A[b * n + a] = w;
			}
}

struct tracer {
	const double *A;
	uint32_t n;
	double q;      /* Q before the next move of level 0 */
	uint32_t moves, bad_gain, bad_sign, bad_from;
	uint32_t *prev; /* level 0's communities before the move */
};

static void trace(void *arg, uint32_t level, const uint32_t *comm,
		  uint32_t node, uint32_t from, uint32_t to, double dq)
{
	struct tracer *t = arg;
	double q;

	if (level != 0)
		return;
	t->moves++;
	if (t->prev[node] != from || from == to)
		t->bad_from++;
	q = brute_q(t->A, t->n, comm);
	if (fabs((q - t->q) - dq) > 1e-9)
		t->bad_gain++;
	if (!(q > t->q - 1e-12) || !(dq > 0))
		t->bad_sign++;
	t->q = q;
	memcpy(t->prev, comm, t->n * sizeof(uint32_t));
}

/* Every node in one community, ids dense 0..nc-1 in order of their lowest
 * node. */
static void check_dense(const uint32_t *c, uint32_t n, uint32_t nc)
{
	uint32_t next = 0;

	for (uint32_t a = 0; a < n; a++) {
		CHECK_INT(c[a], <, nc);
		CHECK_INT(c[a], <=, next);
		if (c[a] == next)
			next++;
	}
	CHECK_INT(next, ==, nc);
}

static void test_louvain_moves_oracle(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 11);
	for (int iter = 0; iter < 200; iter++) {
		uint32_t n = 2 + (uint32_t)parsa_rng_below(&r, 40);
		double *A = malloc((size_t)n * n * sizeof(double));
		uint32_t *c = malloc(n * sizeof(uint32_t));
		uint32_t *c2 = malloc(n * sizeof(uint32_t));
		uint32_t *single = malloc(n * sizeof(uint32_t));
		struct tracer t = { A, n, 0, 0, 0, 0, 0,
				    malloc(n * sizeof(uint32_t)) };
		struct parsa_louvain_opts o;
		struct parsa_wgraph g;
		uint32_t nc = 0, nc2 = 0;

		random_dense(A, n, &r, 0.05 + parsa_rng_double(&r) * 0.4);
		from_dense(&g, A, n);
		for (uint32_t a = 0; a < n; a++)
			single[a] = t.prev[a] = a;
		t.q = brute_q(A, n, single);
		parsa_louvain_opts_default(&o);
		o.seed = (uint64_t)iter;
		o.trace = trace;
		o.trace_arg = &t;
		REQUIRE(parsa_louvain(&g, &o, c, &nc, NULL) == 0);
		check_dense(c, n, nc);
		CHECK_INT(t.bad_gain, ==, 0);
		CHECK_INT(t.bad_sign, ==, 0);
		CHECK_INT(t.bad_from, ==, 0);
		/* the module's Q is the oracle's; the result no worse than
		 * singletons nor than level 0 alone */
		CHECK(fabs(parsa_modularity(&g, c) - brute_q(A, n, c)) < 1e-9);
		CHECK(brute_q(A, n, c) >= t.q - 1e-9);
		CHECK(brute_q(A, n, c) >= brute_q(A, n, single) - 1e-12);
		/* more levels never lower Q (same seed: the same first ones) */
		{
			double last = brute_q(A, n, single);

			o.trace = NULL;
			for (uint32_t l = 1; l <= 5; l++) {
				o.max_levels = l;
				REQUIRE(parsa_louvain(&g, &o, c2, &nc2, NULL) == 0);
				check_dense(c2, n, nc2);
				CHECK(brute_q(A, n, c2) >= last - 1e-9);
				last = brute_q(A, n, c2);
			}
		}
		/* determinism */
		parsa_louvain_opts_default(&o);
		o.seed = (uint64_t)iter;
		REQUIRE(parsa_louvain(&g, &o, c2, &nc2, NULL) == 0);
		CHECK_INT(nc2, ==, nc);
		CHECK(memcmp(c, c2, n * sizeof(uint32_t)) == 0);
		parsa_wgraph_release(&g);
		free(A);
		free(c);
		free(c2);
		free(single);
		free(t.prev);
	}
}

/* 6 cliques of 10 nodes, a sparse ring of single edges between them: the
 * cliques come out as the communities, for every seed. */
static void test_louvain_planted_graph(void)
{
	uint32_t n = 60, c[60], nc;
	double *A = calloc(n * n, sizeof(double));
	struct parsa_wgraph g;
	struct parsa_louvain_opts o;

	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++)
			if (a != b && a / 10 == b / 10)
				A[a * n + b] = 1;
	for (uint32_t q = 0; q < 6; q++) {
		uint32_t a = q * 10, b = ((q + 1) % 6) * 10 + 5;

		A[a * n + b] = A[b * n + a] = 1;
	}
	from_dense(&g, A, n);
	parsa_louvain_opts_default(&o);
	for (uint64_t seed = 1; seed <= 10; seed++) {
		o.seed = seed;
		REQUIRE(parsa_louvain(&g, &o, c, &nc, NULL) == 0);
		CHECK_INT(nc, ==, 6);
		for (uint32_t a = 0; a < n; a++)
			CHECK_INT(c[a], ==, a / 10);
	}
	parsa_wgraph_release(&g);
	free(A);
}

/* A hypergraph of 5 planted groups of 40 rows, each row using 4 to 8 of
 * its group's 30 features and, one row in ten, one feature of another
 * group: the star expansion's communities are the groups (but for at
 * most 2 rows of 200). */
static void planted_hypergraph(struct parsa_graph *h, struct parsa_rng *r,
			       uint32_t groups)
{
	uint32_t buf[16];

	parsa_graph_init(h);
	for (uint32_t u = 0; u < groups * 40; u++) {
		uint32_t grp = u / 40, d = 4 + (uint32_t)parsa_rng_below(r, 5);

		for (uint32_t i = 0; i < d; i++)
			buf[i] = grp * 30 + (uint32_t)parsa_rng_below(r, 30);
		if (parsa_rng_below(r, 10) == 0)
			buf[d++] = (uint32_t)parsa_rng_below(r, groups * 30);
		CHECK_INT(parsa_graph_add_row(h, buf, d, NULL), ==, 0);
	}
}

static void test_louvain_planted_star(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 3);
	for (int w = 0; w < 3; w++) {
		struct parsa_graph h;
		struct parsa_louvain_opts o;
		uint32_t c[200], nc, mis = 0;

		planted_hypergraph(&h, &r, 5);
		parsa_louvain_opts_default(&o);
		o.weight = (enum parsa_louvain_weight)w;
		o.seed = 7;
		REQUIRE(parsa_louvain_star(&h, &o, c, &nc, NULL) == 0);
		check_dense(c, 200, nc);
		/* each group's majority community, held by nothing else */
		for (uint32_t grp = 0; grp < 5; grp++)
			for (uint32_t u = grp * 40; u < grp * 40 + 40; u++)
				mis += c[u] != c[grp * 40];
		for (uint32_t grp = 1; grp < 5; grp++)
			CHECK(c[grp * 40] != c[(grp - 1) * 40]);
		CHECK_INT(nc, ==, 5);
		CHECK_INT(mis, <=, 2); /* a noisy row may side with its
					* foreign feature's group */
		parsa_graph_release(&h);
	}
}

/* A stop already due: nothing moves, every row its own community. */
static void test_louvain_stop(void)
{
	atomic_int cancel = 1;
	struct parsa_stop stop = { &cancel, 0 };
	struct parsa_rng r;
	struct parsa_graph h;
	struct parsa_louvain_opts o;
	uint32_t c[200], nc;

	parsa_rng_seed(&r, 4);
	planted_hypergraph(&h, &r, 5);
	parsa_louvain_opts_default(&o);
	o.stop = &stop;
	REQUIRE(parsa_louvain_star(&h, &o, c, &nc, NULL) == 0);
	check_dense(c, 200, nc);
	CHECK_INT(nc, ==, 200);
	parsa_graph_release(&h);
}

/* The restricted clustering: on random graphs with random communities
 * (and parts), no cluster spans two communities (or parts) or weighs
 * more than max_w; without communities, clusters do form across them;
 * singletons as communities: nothing is joined. */
static void test_ml_cluster_restricted(void)
{
	struct parsa_rng r;
	uint64_t crossing_free = 0;

	parsa_rng_seed(&r, 9);
	for (int iter = 0; iter < 100; iter++) {
		uint32_t rows = 2 + (uint32_t)parsa_rng_below(&r, 300);
		uint32_t cols = 1 + (uint32_t)parsa_rng_below(&r, 200);
		uint32_t nk = 1 + (uint32_t)parsa_rng_below(&r, 6);
		uint32_t max_w = 2 + (uint32_t)parsa_rng_below(&r, 8);
		uint32_t *comm = malloc(rows * sizeof(uint32_t));
		uint32_t *part = malloc(rows * sizeof(uint32_t));
		uint32_t *cmap = malloc(rows * sizeof(uint32_t));
		uint32_t *cc = malloc(rows * sizeof(uint32_t));
		uint32_t *cp = malloc(rows * sizeof(uint32_t));
		uint32_t *cw = calloc(rows, sizeof(uint32_t));
		struct parsa_graph g;
		uint32_t nc;

		tu_heavy_graph(&g, &r, rows, cols, 10, 60);
		for (uint32_t u = 0; u < rows; u++) {
			comm[u] = (uint32_t)parsa_rng_below(&r, nk);
			part[u] = (uint32_t)parsa_rng_below(&r, 3);
		}
		for (int mode = 0; mode < 3; mode++) {
			const uint32_t *pp = mode == 1 ? part : NULL;
			const uint32_t *cm = mode == 2 ? NULL : comm;

			REQUIRE(parsa_ml_cluster(&g, pp, cm, max_w, (uint64_t)iter,
						 cmap, &nc, NULL) == 0);
			memset(cw, 0, rows * sizeof(uint32_t));
			for (uint32_t x = 0; x < nc; x++)
				cc[x] = cp[x] = UINT32_MAX;
			for (uint32_t u = 0; u < rows; u++) {
				uint32_t x = cmap[u];

				REQUIRE(x < nc);
				cw[x]++;
				if (mode == 2) {
					if (cc[x] != UINT32_MAX && cc[x] != comm[u])
						crossing_free++; /* allowed here */
				} else {
					CHECK(cc[x] == UINT32_MAX || cc[x] == comm[u]);
				}
				if (pp)
					CHECK(cp[x] == UINT32_MAX || cp[x] == part[u]);
				cc[x] = comm[u];
				cp[x] = part[u];
			}
			for (uint32_t x = 0; x < nc; x++)
				CHECK_INT(cw[x], <=, max_w);
		}
		/* singletons: nothing joins */
		for (uint32_t u = 0; u < rows; u++)
			comm[u] = u;
		REQUIRE(parsa_ml_cluster(&g, NULL, comm, max_w, 1, cmap, &nc,
					 NULL) == 0);
		CHECK_INT(nc, ==, rows);
		parsa_graph_release(&g);
		free(comm);
		free(part);
		free(cmap);
		free(cc);
		free(cp);
		free(cw);
	}
	/* the unrestricted clustering does cross them (so the check above
	 * is not vacuous) */
	CHECK_INT(crossing_free, >, 0);
}

/* The multilevel partition with communities: deterministic, within the
 * balance cap, never a higher connectivity than without them (its deeper
 * start is kept only when better), and equal to the one without coarse
 * levels when every row is its own community (nothing can be joined). */
static void test_ml_partition_communities(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	uint32_t k = 4, rows = 2000, *comm = malloc(rows * sizeof(uint32_t));
	uint32_t *a = malloc(rows * sizeof(uint32_t));
	uint32_t *b = malloc(rows * sizeof(uint32_t));
	struct parsa_louvain_opts lo;
	struct parsa_partu_opts pu;
	struct parsa_nbrset ua, ub;
	struct parsa_fm_opts o = { 4, 0, UINT64_MAX, 1e-3, 5, 1, 0, 0, NULL,
				   1, NULL };
	uint64_t size[4] = { 0 };

	parsa_rng_seed(&r, 21);
	tu_heavy_graph(&g, &r, rows, 1500, 12, 100);
	parsa_partu_opts_default(&pu);
	pu.k = k;
	o.cap = parsa_balance_cap(rows, k, pu.imbalance);
	parsa_louvain_opts_default(&lo);
	REQUIRE(parsa_louvain_star(&g, &lo, comm, NULL, NULL) == 0);
	o.comm = comm;
	REQUIRE(parsa_nbrset_init(&ua, g.n_cols, k, NULL) == 0);
	REQUIRE(parsa_nbrset_init(&ub, g.n_cols, k, NULL) == 0);
	REQUIRE(parsa_ml_partition(&g, &pu, a, &ua, &o, ML_MAX_LEVELS, NULL,
				   NULL) == 0);
	REQUIRE(parsa_ml_partition(&g, &pu, b, &ub, &o, ML_MAX_LEVELS, NULL,
				   NULL) == 0);
	CHECK(memcmp(a, b, rows * sizeof(uint32_t)) == 0);
	for (uint32_t u = 0; u < rows; u++)
		size[a[u]]++;
	for (uint32_t j = 0; j < k; j++)
		CHECK_INT(size[j], <=, o.cap);
	/* the deeper start with communities is kept only when better: never
	 * a higher connectivity than without them */
	o.comm = NULL;
	REQUIRE(parsa_ml_partition(&g, &pu, b, &ub, &o, ML_MAX_LEVELS, NULL,
				   NULL) == 0);
	CHECK_INT(parsa_connectivity(&ua), <=, parsa_connectivity(&ub));
	o.comm = comm;
	/* singletons == no coarse level */
	for (uint32_t u = 0; u < rows; u++)
		comm[u] = u;
	REQUIRE(parsa_ml_partition(&g, &pu, a, &ua, &o, ML_MAX_LEVELS, NULL,
				   NULL) == 0);
	o.comm = NULL;
	REQUIRE(parsa_ml_partition(&g, &pu, b, &ub, &o, 0, NULL, NULL) == 0);
	CHECK(memcmp(a, b, rows * sizeof(uint32_t)) == 0);
	CHECK_INT(parsa_connectivity(&ua), ==, parsa_connectivity(&ub));
	/* the in-part V-cycle with singletons == a plain refinement */
	for (uint32_t u = 0; u < rows; u++)
		b[u] = a[u];
	o.comm = comm;
	REQUIRE(parsa_ml_refine(&g, a, &ua, &o, 8, NULL, NULL) == 0);
	o.comm = NULL;
	REQUIRE(parsa_ml_refine(&g, b, &ub, &o, 0, NULL, NULL) == 0);
	CHECK(memcmp(a, b, rows * sizeof(uint32_t)) == 0);
	parsa_nbrset_release(&ua);
	parsa_nbrset_release(&ub);
	parsa_graph_release(&g);
	free(comm);
	free(a);
	free(b);
}

int main(void)
{
	RUN(test_louvain_moves_oracle);
	RUN(test_louvain_planted_graph);
	RUN(test_louvain_planted_star);
	RUN(test_louvain_stop);
	RUN(test_ml_cluster_restricted);
	RUN(test_ml_partition_communities);
	return harness_done();
}
