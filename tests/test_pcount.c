/*
 * test_pcount: the sparse per-(feature, part) counts (parsa_pcount) against
 * a brute-force dense table: the build, every count and mask after random
 * moves (with parts joining and leaving features, regions growing and the
 * pool moving), undoing moves in reverse order without room, saturation,
 * k above 64 (masks of several words), counts crossing one byte (the
 * table of big counts) and the refusal of sets that are not
 * N(U_i) of the partition.
 */
#include "harness.h"
#include "testutil.h"
#include "testpart.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_metrics.h"
#include "parsa_pcount.h"

/* Dense counts of part (saturating like parsa_pcount). */
static uint16_t *dense_counts(const struct parsa_graph *g,
			      const uint32_t *part, uint32_t k)
{
	uint16_t *c = calloc((size_t)g->n_cols * k + 1, sizeof(uint16_t));

	for (uint32_t u = 0; u < g->n_rows; u++)
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint16_t *x = &c[(uint64_t)g->col[e] * k + part[u]];

			if (*x < PARSA_PCOUNT_SAT)
				++*x;
		}
	return c;
}

/* pc and s equal the dense counts d (k parts), lam the masks' popcounts. */
static void check_same(const struct parsa_pcount *pc,
		       const struct parsa_nbrset *s, const uint16_t *d,
		       const uint32_t *lam, uint32_t n_cols, uint32_t k)
{
	int bad = 0;

	for (uint32_t v = 0; v < n_cols && !bad; v++) {
		uint32_t n = 0;

		for (uint32_t j = 0; j < k; j++) {
			uint32_t c = parsa_pcount_get(pc, s, v, j);

			n += parsa_nbrset_has(s, v, j);
			if (c != d[(uint64_t)v * k + j] ||
			    parsa_nbrset_has(s, v, j) != (c > 0)) {
				fprintf(stderr, "v %u part %u: %u, dense %u\n",
					v, j, c, d[(uint64_t)v * k + j]);
				bad = 1;
			}
		}
		if (n != lam[v] || n > pc->hdr[v] >> PARSA_PCOUNT_CAP_SHIFT)
			bad = 1;
	}
	CHECK(!bad);
	for (uint32_t j = 0; j < k; j++) {
		uint64_t m = 0;

		for (uint32_t v = 0; v < n_cols; v++)
			m += parsa_nbrset_has(s, v, j);
		CHECK_INT(s->size[j], ==, m);
	}
}

/* Move u to b on the dense table (the reference of parsa_pcount_move). */
static int64_t dense_move(const struct parsa_graph *g, uint16_t *d,
			  uint32_t k, uint32_t u, uint32_t a, uint32_t b)
{
	int64_t delta = 0;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint16_t *ca = &d[(uint64_t)g->col[e] * k + a];
		uint16_t *cb = &d[(uint64_t)g->col[e] * k + b];

		if (*ca != PARSA_PCOUNT_SAT && --*ca == 0)
			delta--;
		if (*cb == 0)
			delta++;
		if (*cb < PARSA_PCOUNT_SAT)
			++*cb;
	}
	return delta;
}

/* Move u to b with parsa_pcount (room made first unless undo). */
static int64_t sparse_move(struct parsa_pcount *pc, struct parsa_nbrset *s,
			   const struct parsa_graph *g, uint32_t *lam,
			   uint32_t u, uint32_t a, uint32_t b, int undo,
			   int *sat)
{
	int64_t delta = 0;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];

		if (!undo && !parsa_nbrset_has(s, v, b))
			CHECK_INT(parsa_pcount_reserve(pc, v, lam[v]), ==, 0);
		delta += parsa_pcount_move(pc, s, v, a, b, &lam[v], sat);
	}
	return delta;
}

static void test_random_moves(void)
{
	struct parsa_rng r;
	uint32_t grew = 0; /* runs where regions grew (and moved) */

	parsa_rng_seed(&r, 17);
	for (int iter = 0; iter < 60; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, iter % 4 == 0 ? 200 : 12);
		uint32_t rows = 1 + (uint32_t)parsa_rng_below(&r, 300);
		uint32_t cols = 1 + (uint32_t)parsa_rng_below(&r, 200);
		struct parsa_graph g;
		struct parsa_nbrset s;
		struct parsa_pcount pc;
		uint32_t *part = malloc(rows * sizeof(uint32_t));
		uint32_t *lam, hist_u[8], hist_a[8];
		uint16_t *d;
		int sat = 0;

		tu_heavy_graph(&g, &r, rows, cols, 10, 120);
		/* few parts at first: moves make parts join features */
		for (uint32_t u = 0; u < rows; u++)
			part[u] = (uint32_t)parsa_rng_below(&r, iter % 3 ? k : 2);
		REQUIRE(parsa_nbrset_init(&s, g.n_cols, k, NULL) == 0);
		REQUIRE(parsa_used_sets(&g, part, &s, NULL) == 0);
		REQUIRE(parsa_pcount_build(&pc, &g, part, &s, &sat, NULL) == 0);
		CHECK_INT(sat, ==, 0);
		lam = malloc(((size_t)g.n_cols + 1) * sizeof(uint32_t));
		for (uint32_t v = 0; v < g.n_cols; v++)
			lam[v] = parsa_nbrset_count(&s, v);
		d = dense_counts(&g, part, k);
		check_same(&pc, &s, d, lam, g.n_cols, k);
		for (int step = 0; step < 400; step++) {
			uint32_t n = 1 + (uint32_t)parsa_rng_below(&r, 8);

			/* n moves, then maybe undone in reverse order */
			for (uint32_t i = 0; i < n; i++) {
				uint32_t u = (uint32_t)parsa_rng_below(&r, rows);
				uint32_t a = part[u], b = (uint32_t)parsa_rng_below(&r, k);

				if (b == a)
					b = (b + 1) % k;
				hist_u[i] = u;
				hist_a[i] = a;
				CHECK_INT(sparse_move(&pc, &s, &g, lam, u, a, b, 0, &sat),
					  ==, dense_move(&g, d, k, u, a, b));
				part[u] = b;
			}
			if (parsa_rng_below(&r, 2))
				for (uint32_t i = n; i-- > 0;) {
					uint32_t u = hist_u[i];

					CHECK_INT(sparse_move(&pc, &s, &g, lam, u,
							      part[u], hist_a[i], 1,
							      &sat),
						  ==, dense_move(&g, d, k, u, part[u],
								 hist_a[i]));
					part[u] = hist_a[i];
				}
			if (step % 50 == 0)
				check_same(&pc, &s, d, lam, g.n_cols, k);
		}
		check_same(&pc, &s, d, lam, g.n_cols, k);
		tu_check_used(&g, part, &s);
		CHECK(parsa_pcount_bytes(&pc) >= pc.len);
		grew += pc.waste > 0;
		parsa_pcount_release(&pc);
		parsa_nbrset_release(&s);
		parsa_graph_release(&g);
		free(part);
		free(lam);
		free(d);
	}
	CHECK_INT(grew, >=, 10);
}

/* A feature of more than 65535 examples of one part: the count saturates
 * and stays (sticky) as examples leave. */
static void test_saturation(void)
{
	const uint32_t rows = 70000, k = 3;
	struct parsa_graph g;
	struct parsa_nbrset s;
	struct parsa_pcount pc;
	uint32_t *part = calloc(rows, sizeof(uint32_t)), lam[2], one[2] = { 0, 1 };
	uint16_t *d;
	int sat = 0;

	parsa_graph_init(&g);
	for (uint32_t u = 0; u < rows; u++) {
		one[0] = 0;
		one[1] = 1;
		REQUIRE(parsa_graph_add_row(&g, one, u % 2 ? 1 : 2, NULL) == 0);
		part[u] = u < 5 ? 1 : 0;
	}
	REQUIRE(parsa_nbrset_init(&s, g.n_cols, k, NULL) == 0);
	REQUIRE(parsa_used_sets(&g, part, &s, NULL) == 0);
	REQUIRE(parsa_pcount_build(&pc, &g, part, &s, &sat, NULL) == 0);
	CHECK_INT(sat, ==, 1);
	CHECK_INT(parsa_pcount_get(&pc, &s, 0, 0), ==, PARSA_PCOUNT_SAT);
	CHECK_INT(parsa_pcount_get(&pc, &s, 1, 0), ==, 34997);
	CHECK_INT(parsa_pcount_get(&pc, &s, 0, 1), ==, 5);
	lam[0] = parsa_nbrset_count(&s, 0);
	lam[1] = parsa_nbrset_count(&s, 1);
	d = dense_counts(&g, part, k);
	for (uint32_t u = 10; u < 2010; u++) {
		int64_t a = sparse_move(&pc, &s, &g, lam, u, 0, 2, 0, &sat);

		CHECK_INT(a, ==, dense_move(&g, d, k, u, 0, 2));
		part[u] = 2;
	}
	check_same(&pc, &s, d, lam, g.n_cols, k);
	CHECK_INT(parsa_pcount_get(&pc, &s, 0, 0), ==, PARSA_PCOUNT_SAT);
	parsa_pcount_release(&pc);
	parsa_nbrset_release(&s);
	parsa_graph_release(&g);
	free(part);
	free(d);
}

/* Sets that are not N(U_i) of the partition are refused. */
static void test_rejects_bad_sets(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_nbrset s;
	struct parsa_pcount pc;
	struct parsa_err err;
	uint32_t part[50];
	int sat;

	parsa_err_clear(&err);
	parsa_rng_seed(&r, 3);
	tu_random_graph(&g, &r, 50, 20, 0.3);
	for (uint32_t u = 0; u < 50; u++)
		part[u] = u % 4;
	REQUIRE(parsa_nbrset_init(&s, g.n_cols, 4, NULL) == 0);
	REQUIRE(parsa_used_sets(&g, part, &s, NULL) == 0);
	part[0] = (part[0] + 1) % 4; /* a part missing from some mask */
	CHECK_INT(parsa_pcount_build(&pc, &g, part, &s, &sat, &err), ==,
		  PARSA_EINVAL);
	CHECK(strstr(err.msg, "not N(U_i)") != NULL);
	part[0] = (part[0] + 3) % 4;
	parsa_nbrset_add(&s, 19, 3); /* a part holding no example */
	if (parsa_pcount_build(&pc, &g, part, &s, &sat, &err) == 0) {
		/* (feature 19 may already be in part 3) */
		parsa_pcount_release(&pc);
	}
	parsa_nbrset_clear(&s);
	parsa_nbrset_add(&s, 0, 1);
	parsa_err_clear(&err);
	CHECK_INT(parsa_pcount_build(&pc, &g, part, &s, &sat, &err), ==,
		  PARSA_EINVAL);
	parsa_nbrset_release(&s);
	parsa_graph_release(&g);
}

/* par for parsa_pcount_build_par: the tasks on threads of their own (odd
 * n: the caller runs task 0 after the others are started), so TSan sees
 * them run at once. */
struct par_call {
	parsa_pcount_task_fn fn;
	void *arg;
	uint32_t t;
};

static void *par_thread(void *p)
{
	struct par_call *c = p;

	c->fn(c->arg, c->t);
	return NULL;
}

static void par_threads(void *par_arg, uint32_t n, parsa_pcount_task_fn fn,
			void *fn_arg)
{
	pthread_t th[PARSA_PCOUNT_MAX_TASKS];
	struct par_call c[PARSA_PCOUNT_MAX_TASKS];
	int started[PARSA_PCOUNT_MAX_TASKS] = { 0 };

	(void)par_arg;
	for (uint32_t t = n % 2; t < n; t++) {
		c[t] = (struct par_call){ fn, fn_arg, t };
		started[t] = pthread_create(&th[t], NULL, par_thread, &c[t]) == 0;
		if (!started[t])
			fn(fn_arg, t);
	}
	if (n % 2)
		fn(fn_arg, 0);
	for (uint32_t t = 0; t < n; t++)
		if (started[t])
			pthread_join(th[t], NULL);
}

/* The tasks in reverse order on the caller's thread. */
static void par_reverse(void *par_arg, uint32_t n, parsa_pcount_task_fn fn,
			void *fn_arg)
{
	(void)par_arg;
	while (n-- > 0)
		fn(fn_arg, n);
}

/* The build in 1-7 tasks over ranges of the features gives the serial
 * build's header, pool and saturation flag, and refuses the same bad
 * sets. */
static void test_build_par(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 29);
	for (int iter = 0; iter < 60; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, iter % 4 == 0 ? 200 : 12);
		uint32_t rows = 1 + (uint32_t)parsa_rng_below(&r, 300);
		uint32_t cols = 1 + (uint32_t)parsa_rng_below(&r, 200);
		uint32_t tasks = 1 + (uint32_t)parsa_rng_below(&r, 7);
		struct parsa_graph g;
		struct parsa_nbrset s;
		struct parsa_pcount a, b;
		uint32_t *part = malloc(rows * sizeof(uint32_t));
		int sa = 0, sb = 0;

		tu_heavy_graph(&g, &r, rows, cols, 10, 120);
		for (uint32_t u = 0; u < rows; u++)
			part[u] = (uint32_t)parsa_rng_below(&r, k);
		REQUIRE(parsa_nbrset_init(&s, g.n_cols, k, NULL) == 0);
		REQUIRE(parsa_used_sets(&g, part, &s, NULL) == 0);
		REQUIRE(parsa_pcount_build(&a, &g, part, &s, &sa, NULL) == 0);
		REQUIRE(parsa_pcount_build_par(&b, &g, part, &s, &sb,
					       iter % 2 ? par_threads : par_reverse,
					       NULL, tasks, NULL) == 0);
		CHECK_INT(sa, ==, sb);
		CHECK_INT(a.len, ==, b.len);
		CHECK(memcmp(a.hdr, b.hdr, g.n_cols * sizeof(uint64_t)) == 0);
		CHECK(memcmp(a.pool, b.pool, a.len) == 0);
		CHECK_INT(a.big.n, ==, b.big.n);
		for (uint32_t v = 0; v < g.n_cols; v++)
			for (uint32_t j = 0; j < k; j++)
				if (parsa_pcount_get(&a, &s, v, j) !=
				    parsa_pcount_get(&b, &s, v, j))
					CHECK(!"a count differs by tasks");
		parsa_pcount_release(&a);
		parsa_pcount_release(&b);
		/* a part missing from a mask of its example's features */
		if (g.row_ptr[1] > g.row_ptr[0]) {
			part[0] = (part[0] + 1) % k;
			sb = 0;
			if (!parsa_nbrset_has(&s, g.col[0], part[0]))
				CHECK_INT(parsa_pcount_build_par(&b, &g, part, &s, &sb,
								 par_threads, NULL,
								 tasks, NULL),
					  ==, PARSA_EINVAL);
			else
				parsa_pcount_release(&b);
		}
		parsa_nbrset_release(&s);
		parsa_graph_release(&g);
		free(part);
	}
}

/* Counts around 255 (one byte's slot, then the table of big counts):
 * about 270 examples of each part use each feature, so random moves take
 * hundreds of (feature, part) counts across 254/255 both ways (inserts,
 * raises, backward-shift removals in a table of several hundred entries).
 * After every batch the counts equal the dense ones and the table holds
 * exactly the counts from 255 on; the build in 1-5 tasks gives the same
 * counts. */
static void test_big_counts(void)
{
	const uint32_t rows = 900, cols = 300, k = 3;
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_nbrset s;
	struct parsa_pcount pc;
	uint32_t *part = malloc(rows * sizeof(uint32_t)), *lam;
	uint16_t *d;
	int sat = 0;
	uint64_t crossed = 0;

	parsa_rng_seed(&r, 41);
	tu_random_graph(&g, &r, rows, cols, 0.9);
	for (uint32_t u = 0; u < rows; u++)
		part[u] = u % k;
	REQUIRE(parsa_nbrset_init(&s, g.n_cols, k, NULL) == 0);
	REQUIRE(parsa_used_sets(&g, part, &s, NULL) == 0);
	for (uint32_t tasks = 2; tasks <= 5; tasks++) {
		struct parsa_pcount a;
		int sa = 0;

		REQUIRE(parsa_pcount_build_par(&a, &g, part, &s, &sa, par_threads,
					       NULL, tasks, NULL) == 0);
		CHECK_INT(sa, ==, 0);
		CHECK_INT(a.big.n, >, 100);
		d = dense_counts(&g, part, k);
		lam = calloc(g.n_cols, sizeof(uint32_t));
		for (uint32_t v = 0; v < g.n_cols; v++)
			lam[v] = parsa_nbrset_count(&s, v);
		check_same(&a, &s, d, lam, g.n_cols, k);
		free(lam);
		free(d);
		parsa_pcount_release(&a);
	}
	REQUIRE(parsa_pcount_build(&pc, &g, part, &s, &sat, NULL) == 0);
	d = dense_counts(&g, part, k);
	lam = calloc(g.n_cols, sizeof(uint32_t));
	for (uint32_t v = 0; v < g.n_cols; v++)
		lam[v] = parsa_nbrset_count(&s, v);
	for (int batch = 0; batch < 40; batch++) {
		uint64_t big = 0, before = pc.big.n;

		for (int i = 0; i < 25; i++) {
			uint32_t u = (uint32_t)parsa_rng_below(&r, rows);
			uint32_t a = part[u];
			uint32_t b = (a + 1 + (uint32_t)parsa_rng_below(&r, k - 1)) % k;
			int64_t x = sparse_move(&pc, &s, &g, lam, u, a, b, 0, &sat);

			CHECK_INT(x, ==, dense_move(&g, d, k, u, a, b));
			part[u] = b;
		}
		check_same(&pc, &s, d, lam, g.n_cols, k);
		for (uint64_t i = 0; i < (uint64_t)g.n_cols * k; i++)
			big += d[i] >= PARSA_PCOUNT_BIG;
		CHECK_INT(pc.big.n, ==, big);
		crossed += pc.big.n > before ? pc.big.n - before
					     : before - pc.big.n;
	}
	CHECK_INT(sat, ==, 0);
	CHECK_INT(crossed, >, 100);
	free(lam);
	free(d);
	parsa_pcount_release(&pc);
	parsa_nbrset_release(&s);
	parsa_graph_release(&g);
	free(part);
}

int main(void)
{
	RUN(test_random_moves);
	RUN(test_saturation);
	RUN(test_rejects_bad_sets);
	RUN(test_build_par);
	RUN(test_big_counts);
	return harness_done();
}
