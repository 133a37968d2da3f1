/*
 * test_partv: partition of V (Algorithm 11 + sweeps, parsa_partv.c):
 * validity, the LPT order on a hand example, sweeps never worsening T_max,
 * agreement of the algorithm's own T with parsa_metrics, brute force on
 * tiny instances, determinism and large k; the sliced run (parsa_partition_
 * v_sliced) on threads.
 */

#include "harness.h"
#include "testpar.h"
#include "parsa_graph.h"
#include "parsa_metrics.h"
#include "parsa_nbrset.h"
#include "parsa_partv.h"
#include "parsa_rng.h"
#include "testutil.h"

/* Random used sets: n features over k parts, mean density about p. */
static void fill_used(struct parsa_nbrset *s, uint32_t k, uint32_t n,
		      struct parsa_rng *rng, double p)
{
	REQUIRE(parsa_nbrset_init(s, n, k, NULL) == 0);
	for (uint32_t v = 0; v < n; v++) {
		/* per-feature density, so c varies from 0 to k */
		double q = p * parsa_rng_double(rng) * 2;

		for (uint32_t i = 0; i < k; i++)
			if (parsa_rng_double(rng) < q)
				parsa_nbrset_add(s, v, i);
	}
}

/*
 * A graph whose N(U_i) are exactly the used sets: example i (in part i)
 * uses the features of S_i.
 */
static void graph_of(const struct parsa_nbrset *s, struct parsa_graph *g,
		     uint32_t *part)
{
	uint32_t *cols = malloc(((size_t)s->n_feat + 1) * sizeof(*cols));

	parsa_graph_init(g);
	for (uint32_t i = 0; i < s->k; i++) {
		size_t m = 0;

		for (uint32_t v = 0; v < s->n_feat; v++)
			if (parsa_nbrset_has(s, v, i))
				cols[m++] = v;
		CHECK_INT(parsa_graph_add_row(g, cols, m, NULL), ==, 0);
		part[i] = i;
	}
	g->n_cols = s->n_feat;
	free(cols);
}

static uint64_t max_u64(const uint64_t *a, uint32_t k)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < k; i++)
		m = a[i] > m ? a[i] : m;
	return m;
}

/* Owners are users; c == 1 goes to the only user; unused to v mod k. */
static void check_valid(const struct parsa_nbrset *s, const uint32_t *owner)
{
	for (uint32_t v = 0; v < s->n_feat; v++) {
		uint32_t c = parsa_nbrset_count(s, v);

		CHECK(owner[v] < s->k);
		if (c == 0)
			CHECK_INT(owner[v], ==, v % s->k);
		else
			CHECK(parsa_nbrset_has(s, v, owner[v]));
	}
}

/* The T the algorithm reports equals the T parsa_metrics computes. */
static void check_traffic(const struct parsa_nbrset *s, const uint32_t *owner,
			  const uint64_t *T)
{
	struct parsa_graph g;
	uint32_t *part = malloc(((size_t)s->k + 1) * sizeof(*part));
	uint64_t *Tm = malloc(((size_t)s->k + 1) * sizeof(*Tm));

	graph_of(s, &g, part);
	CHECK_INT(parsa_metrics_parts(&g, s->k, part, owner, NULL, Tm, NULL,
				      NULL, NULL), ==, 0);
	for (uint32_t i = 0; i < s->k; i++)
		CHECK_INT(T[i], ==, Tm[i]);
	free(part);
	free(Tm);
	parsa_graph_release(&g);
}

/* After sweeps stopped on their own, no single move is improving. */
static void check_local_opt(const struct parsa_nbrset *s,
			    const uint32_t *owner, const uint64_t *T)
{
	for (uint32_t v = 0; v < s->n_feat; v++) {
		uint32_t c = parsa_nbrset_count(s, v), o = owner[v];

		for (uint32_t i = 0; c >= 3 && i < s->k; i++)
			if (i != o && parsa_nbrset_has(s, v, i))
				CHECK(T[i] + (c - 2) >= T[o]);
	}
}

/*
 * k = 3.  f0 used by {0,1,2} (c=3), f1 by {0,1}, f2 by {2}, f3 unused.
 * M = (2, 2, 2) = T at start.  LPT order: f0, f1, f2.
 *   f0: all T equal -> part 0, T = (3,2,2)
 *   f1: users 0 (3), 1 (2) -> part 1, T += 0
 *   f2: only user 2 -> T = (3,2,1);  f3 -> 3 mod 3 = 0
 * Sweep 1: f0 at 0 (T 3); best other user 2 (T 1): 1 + 1 < 3, move:
 *   T = (2,2,2).  Sweep 2: f0 at 2; 2 + 1 < 2 fails: nothing moves, stop.
 */
static void test_hand(void)
{
	struct parsa_nbrset s;
	struct parsa_partv_stats st;
	uint32_t owner[4];
	uint64_t T[3];

	REQUIRE(parsa_nbrset_init(&s, 4, 3, NULL) == 0);
	parsa_nbrset_add(&s, 0, 0);
	parsa_nbrset_add(&s, 0, 1);
	parsa_nbrset_add(&s, 0, 2);
	parsa_nbrset_add(&s, 1, 0);
	parsa_nbrset_add(&s, 1, 1);
	parsa_nbrset_add(&s, 2, 2);
	CHECK_INT(parsa_partition_v_ex(&s, 0, owner, T, &st, NULL), ==, 0);
	CHECK_INT(owner[0], ==, 0);
	CHECK_INT(owner[1], ==, 1);
	CHECK_INT(owner[2], ==, 2);
	CHECK_INT(owner[3], ==, 0);
	CHECK_INT(T[0], ==, 3);
	CHECK_INT(T[1], ==, 2);
	CHECK_INT(T[2], ==, 1);
	CHECK_INT(st.sweeps_run, ==, 0);
	CHECK_INT(st.moves, ==, 0);
	check_traffic(&s, owner, T);

	CHECK_INT(parsa_partition_v_ex(&s, 5, owner, T, &st, NULL), ==, 0);
	CHECK_INT(owner[0], ==, 2);
	CHECK_INT(owner[1], ==, 1);
	CHECK_INT(T[0], ==, 2);
	CHECK_INT(T[1], ==, 2);
	CHECK_INT(T[2], ==, 2);
	CHECK_INT(st.sweeps_run, ==, 2);
	CHECK_INT(st.moves, ==, 1);
	check_traffic(&s, owner, T);
	parsa_nbrset_release(&s);
}

/*
 * LPT: the feature with the larger c goes first even with a higher id.
 * k = 2: f0 used by {0} (c=1), f1 by {0,1} (c=2); M = (2, 1).
 *   LPT order f1, f0:  f1 -> part 1 (T_1 = 1 < 2), f0 -> 0: T = (1, 1).
 *   (id order would give f0 -> 0, T = (1,1), then f1 -> 0 on the tie.)
 */
static void test_lpt_order(void)
{
	struct parsa_nbrset s;
	uint32_t owner[2];
	uint64_t T[2];

	REQUIRE(parsa_nbrset_init(&s, 2, 2, NULL) == 0);
	parsa_nbrset_add(&s, 0, 0);
	parsa_nbrset_add(&s, 1, 0);
	parsa_nbrset_add(&s, 1, 1);
	CHECK_INT(parsa_partition_v_ex(&s, 0, owner, T, NULL, NULL), ==, 0);
	CHECK_INT(owner[0], ==, 0);
	CHECK_INT(owner[1], ==, 1);
	CHECK_INT(T[0], ==, 1);
	CHECK_INT(T[1], ==, 1);
	parsa_nbrset_release(&s);
}

static void run_random(uint32_t k, uint32_t n, double p, uint64_t seed)
{
	struct parsa_rng rng;
	struct parsa_nbrset s;
	struct parsa_partv_stats st;
	uint32_t *owner = malloc(((size_t)n + 1) * sizeof(*owner));
	uint32_t *again = malloc(((size_t)n + 1) * sizeof(*again));
	uint64_t *T = malloc((size_t)k * sizeof(*T));
	uint64_t prev = UINT64_MAX, first = 0;

	parsa_rng_seed(&rng, seed);
	fill_used(&s, k, n, &rng, p);
	for (uint32_t sw = 0; sw <= 5; sw++) {
		uint64_t tmax;

		CHECK_INT(parsa_partition_v_ex(&s, sw, owner, T, &st, NULL),
			  ==, 0);
		check_valid(&s, owner);
		check_traffic(&s, owner, T);
		tmax = max_u64(T, k);
		if (sw == 0)
			first = tmax;
		CHECK(tmax <= prev && tmax <= first);
		CHECK(st.sweeps_run <= sw);
		if (st.sweeps_run < sw)
			check_local_opt(&s, owner, T);
		prev = tmax;
	}
	/* determinism */
	CHECK_INT(parsa_partition_v(&s, 5, again, NULL, NULL), ==, 0);
	CHECK(memcmp(owner, again, (size_t)n * sizeof(*owner)) == 0);
	free(owner);
	free(again);
	free(T);
	parsa_nbrset_release(&s);
}

static void test_random_sweeps(void)
{
	static const uint32_t ks[] = { 1, 2, 3, 4, 7, 16, 63, 64, 65, 130 };

	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++)
		for (uint64_t t = 0; t < 12; t++)
			run_random(ks[a], 1 + (uint32_t)(t * 37 % 300),
				   0.05 + 0.05 * (double)(t % 6),
				   1000 * ks[a] + t);
}

static void test_large_k(void)
{
	run_random(1024, 500, 0.01, 7);
	run_random(1030, 300, 0.02, 8);
}

/* T of a complete assignment straight from the definition (k <= 4). */
static uint64_t brute_tmax(const struct parsa_nbrset *s,
			   const uint32_t *owner)
{
	uint64_t T[4] = { 0 }, m = 0;

	for (uint32_t i = 0; i < s->k; i++) {
		for (uint32_t v = 0; v < s->n_feat; v++) {
			if (parsa_nbrset_has(s, v, i) && owner[v] != i)
				T[i]++;
			for (uint32_t j = 0; owner[v] == i && j < s->k; j++)
				if (j != i && parsa_nbrset_has(s, v, j))
					T[i]++;
		}
		m = T[i] > m ? T[i] : m;
	}
	return m;
}

/*
 * Enumerate every assignment of users to the used features of a tiny
 * instance: the result is one of them, and no better than the optimum.
 */
static void brute_one(const struct parsa_nbrset *s, uint32_t *best_opt,
		      uint32_t *n_opt)
{
	uint32_t n = s->n_feat, k = s->k, owner[6], res[6];
	uint64_t total = 1, opt = UINT64_MAX, got;
	uint64_t T[4];
	int found = 0;

	REQUIRE(parsa_partition_v_ex(s, 3, res, T, NULL, NULL) == 0);
	got = max_u64(T, k);
	CHECK_INT(got, ==, brute_tmax(s, res));
	for (uint32_t v = 0; v < n; v++)
		total *= k;
	for (uint64_t code = 0; code < total; code++) {
		uint64_t x = code;
		int valid = 1, same = 1;

		for (uint32_t v = 0; v < n; v++, x /= k) {
			uint32_t c = parsa_nbrset_count(s, v);

			owner[v] = (uint32_t)(x % k);
			if (c ? !parsa_nbrset_has(s, v, owner[v])
			      : owner[v] != v % k)
				valid = 0;
			same &= owner[v] == res[v];
		}
		if (!valid)
			continue;
		found |= same;
		got = brute_tmax(s, owner);
		opt = got < opt ? got : opt;
	}
	CHECK(found);
	CHECK(max_u64(T, k) >= opt);
	*n_opt += max_u64(T, k) == opt;
	(*best_opt)++;
}

static void test_brute_force(void)
{
	struct parsa_rng rng;
	uint32_t runs = 0, optimal = 0;

	parsa_rng_seed(&rng, 99);
	for (uint32_t k = 1; k <= 4; k++) {
		for (int t = 0; t < 60; t++) {
			struct parsa_nbrset s;
			uint32_t n = 1 + (uint32_t)parsa_rng_below(&rng, 6);

			fill_used(&s, k, n, &rng, 0.4);
			brute_one(&s, &runs, &optimal);
			parsa_nbrset_release(&s);
		}
	}
	/* greedy + sweeps is near-optimal on tiny instances */
	CHECK(optimal * 10 >= runs * 8);
}

/*
 * parsa_partition_v_part over the features split in P contiguous parts,
 * run in turn from the global M (as the streaming servers do): owners
 * are users, the final T equals parsa_metrics' T, one part equals
 * parsa_partition_v_ex exactly, and chained sweeps never raise T_max.
 */
static void run_parts(uint32_t k, uint32_t n, uint32_t P, uint64_t seed)
{
	struct parsa_rng rng;
	struct parsa_nbrset s, sub;
	uint32_t *owner = malloc(((size_t)n + 1) * sizeof(*owner));
	uint32_t *whole = malloc(((size_t)n + 1) * sizeof(*whole));
	uint64_t *Tw = malloc((size_t)k * sizeof(*Tw));
	uint64_t *Tu = malloc((size_t)k * sizeof(*Tu));
	int64_t *T = malloc((size_t)k * sizeof(*T));
	uint64_t tmax_greedy = 0;

	parsa_rng_seed(&rng, seed);
	fill_used(&s, k, n, &rng, 0.2);
	for (uint32_t i = 0; i < k; i++)
		T[i] = (int64_t)s.size[i];
	for (uint32_t round = 0; round < 3; round++) {
		for (uint32_t q = 0; q < P; q++) {
			uint32_t lo = (uint32_t)((uint64_t)n * q / P);
			uint32_t hi = (uint32_t)((uint64_t)n * (q + 1) / P);

			REQUIRE(parsa_nbrset_init(&sub, hi - lo, k, NULL) == 0);
			for (uint32_t v = lo; v < hi; v++)
				for (uint32_t i = 0; i < k; i++)
					if (parsa_nbrset_has(&s, v, i))
						parsa_nbrset_add(&sub, v - lo, i);
			CHECK_INT(parsa_partition_v_part(&sub, round == 0,
							 round == 0 ? 0 : 1,
							 owner + lo, T, NULL,
							 NULL), ==, 0);
			parsa_nbrset_release(&sub);
		}
		for (uint32_t i = 0; i < k; i++) {
			CHECK(T[i] >= 0);
			Tu[i] = (uint64_t)T[i];
		}
		for (uint32_t v = 0; v < n; v++) /* unused: v mod k per part */
			if (parsa_nbrset_count(&s, v) == 0)
				owner[v] = v % k;
		check_valid(&s, owner);
		check_traffic(&s, owner, Tu);
		if (round == 0)
			tmax_greedy = max_u64(Tu, k);
		CHECK(max_u64(Tu, k) <= tmax_greedy);
		if (P == 1 && round == 0) {
			CHECK_INT(parsa_partition_v_ex(&s, 0, whole, Tw, NULL,
						       NULL), ==, 0);
			CHECK(memcmp(whole, owner, (size_t)n * sizeof(*owner)) ==
			      0);
			CHECK(memcmp(Tw, Tu, (size_t)k * sizeof(*Tw)) == 0);
		}
	}
	CHECK_INT(parsa_partition_v_part(&s, 1, 0, owner, NULL, NULL, NULL),
		  ==, PARSA_EINVAL);
	free(owner);
	free(whole);
	free(Tw);
	free(Tu);
	free(T);
	parsa_nbrset_release(&s);
}

static void test_parts(void)
{
	static const uint32_t ks[] = { 1, 2, 5, 16, 64, 65 };

	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++)
		for (uint32_t P = 1; P <= 4; P++)
			run_parts(ks[a], 20 + 61 * P, P, 77 * ks[a] + P);
}

static void test_degenerate(void)
{
	struct parsa_nbrset s;
	struct parsa_err err;
	uint32_t owner[5];
	uint64_t T[4] = { 9, 9, 9, 9 };

	/* no features */
	REQUIRE(parsa_nbrset_init(&s, 0, 4, NULL) == 0);
	CHECK_INT(parsa_partition_v_ex(&s, 3, NULL, T, NULL, NULL), ==, 0);
	CHECK(T[0] == 0 && T[3] == 0);
	parsa_nbrset_release(&s);
	/* no used features: round robin */
	REQUIRE(parsa_nbrset_init(&s, 5, 2, NULL) == 0);
	CHECK_INT(parsa_partition_v(&s, 3, owner, NULL, NULL), ==, 0);
	for (uint32_t v = 0; v < 5; v++)
		CHECK_INT(owner[v], ==, v % 2);
	parsa_err_clear(&err);
	CHECK_INT(parsa_partition_v(&s, 3, NULL, NULL, &err), ==,
		  PARSA_EINVAL);
	CHECK(err.msg[0] != '\0');
	parsa_nbrset_release(&s);
	CHECK_INT(parsa_partition_v(NULL, 3, owner, NULL, NULL), ==,
		  PARSA_EINVAL);
}

/* The users' lists of a placement are its used sets' bits, in increasing
 * part order, and Algorithm 11 on them gives the masks' owners, T and
 * stats; a part id >= k is refused. */
static void test_lists(void)
{
	static const uint32_t ks[] = { 1, 3, 64, 65, 300, 1024 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 77);
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		for (int t = 0; t < 6; t++) {
			uint32_t k = ks[a];
			uint32_t n = 1 + (uint32_t)parsa_rng_below(&rng, 3000);
			uint32_t d = 1 + (uint32_t)parsa_rng_below(&rng, 300);
			struct parsa_graph g;
			struct parsa_nbrset used;
			struct parsa_users u;
			struct parsa_partv_stats s1, s2;
			uint32_t *part = malloc(((size_t)n + 1) * 4);
			uint32_t *o1 = malloc(((size_t)d + 1) * 4);
			uint32_t *o2 = malloc(((size_t)d + 1) * 4);
			uint64_t *T1 = calloc(k, 8), *T2 = calloc(k, 8);

			tu_random_graph(&g, &rng, n, d,
					parsa_rng_double(&rng) * 0.05);
			for (uint32_t r = 0; r < n; r++)
				part[r] = (uint32_t)parsa_rng_below(&rng, k);
			REQUIRE(parsa_nbrset_init(&used, d, k, NULL) == 0);
			REQUIRE(parsa_used_sets(&g, part, &used, NULL) == 0);
			REQUIRE(parsa_users_build(&g, k, part, &u, NULL) == 0);
			CHECK_INT(u.n_feat, ==, d);
			CHECK_INT(u.k, ==, k);
			for (uint32_t v = 0; v < d; v++) {
				uint64_t e = u.ptr[v];

				CHECK_INT(u.ptr[v + 1] - u.ptr[v], ==,
					  parsa_nbrset_count(&used, v));
				for (uint32_t i = 0; i < k; i++)
					if (parsa_nbrset_has(&used, v, i)) {
						CHECK(e < u.ptr[v + 1] &&
						      u.part[e] == i);
						e++;
					}
			}
			REQUIRE(parsa_partition_v_ex(&used, 4, o1, T1, &s1,
						     NULL) == 0);
			REQUIRE(parsa_partition_v_lists(&u, 4, o2, T2, &s2,
							NULL) == 0);
			CHECK(memcmp(o1, o2, (size_t)d * 4) == 0);
			CHECK(memcmp(T1, T2, (size_t)k * 8) == 0);
			CHECK_INT(s1.sweeps_run, ==, s2.sweeps_run);
			CHECK_INT(s1.moves, ==, s2.moves);
			parsa_users_release(&u);
			parsa_users_release(&u); /* twice: a no-op */
			part[n - 1] = k;
			CHECK_INT(parsa_users_build(&g, k, part, &u, NULL), ==,
				  PARSA_EINVAL);
			parsa_nbrset_release(&used);
			parsa_graph_release(&g);
			free(part);
			free(o1);
			free(o2);
			free(T1);
			free(T2);
		}
	}
}

/* T_i recomputed from the owners: M_i + Σ_{v owned by i} (c_v - 2). */
static void traffic_of(const struct parsa_nbrset *s, const uint32_t *owner,
		       uint64_t *T)
{
	for (uint32_t i = 0; i < s->k; i++)
		T[i] = s->size[i];
	for (uint32_t v = 0; v < s->n_feat; v++) {
		uint32_t c = parsa_nbrset_count(s, v);

		if (c > 0)
			T[owner[v]] = (uint64_t)((int64_t)T[owner[v]] + c - 2);
	}
}

static uint64_t max_of(const uint64_t *T, uint32_t k)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < k; i++)
		if (T[i] > m)
			m = T[i];
	return m;
}

/*
 * Algorithm 11 in slices: one slice is parsa_partition_v_ex exactly; any
 * number gives a valid placement (each used feature to one of its users,
 * unused ones to v mod k) whose T is the one the run returns, the same
 * on the masks and the lists and whatever runs the tasks (serial, or 4
 * threads in another order), sweeps that never raise T_max, and a T_max
 * close to the serial one's.
 */
static void test_sliced(void)
{
	static const uint32_t ks[] = { 2, 5, 16, 64, 130 };
	static const uint32_t slices[] = { 1, 2, 3, 8, 64 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 2026);
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		for (int t = 0; t < 4; t++) {
			uint32_t k = ks[a];
			uint32_t n = 1 + (uint32_t)parsa_rng_below(&rng, 4000);
			struct parsa_nbrset s;
			struct parsa_graph g;
			struct parsa_users u;
			uint32_t *part = malloc(((size_t)k + 1) * 4);
			uint32_t *o1 = malloc(((size_t)n + 1) * 4);
			uint32_t *o2 = malloc(((size_t)n + 1) * 4);
			uint32_t *o3 = malloc(((size_t)n + 1) * 4);
			uint64_t *T1 = calloc(k, 8), *T2 = calloc(k, 8);
			uint64_t *T3 = calloc(k, 8), *Tr = calloc(k, 8);
			uint64_t serial_tmax = 0;

			fill_used(&s, k, n, &rng, 0.3);
			graph_of(&s, &g, part);
			REQUIRE(parsa_users_build(&g, k, part, &u, NULL) == 0);
			/* the lists made in tasks on threads: the same */
			for (uint32_t tasks = 2; tasks <= 7; tasks += 5) {
				struct parsa_users u2;

				REQUIRE(parsa_users_build_par(
						&g, k, part, &u2, tp_par_pthreads,
						NULL, tasks, NULL) == 0);
				CHECK(memcmp(u.ptr, u2.ptr,
					     ((size_t)n + 1) * 8) == 0);
				CHECK(memcmp(u.part, u2.part,
					     u.ptr[n] * 2) == 0);
				parsa_users_release(&u2);
			}
			REQUIRE(parsa_partition_v_ex(&s, 4, o1, T1, NULL,
						     NULL) == 0);
			serial_tmax = max_of(T1, k);
			for (size_t b = 0; b < 5; b++) {
				uint32_t S = slices[b];
				struct parsa_partv_stats st;

				REQUIRE(parsa_partition_v_sliced(
						&s, NULL, 4, S, NULL, NULL, o2,
						T2, &st, NULL) == 0);
				if (S == 1) {
					CHECK(memcmp(o1, o2, (size_t)n * 4) ==
					      0);
					CHECK(memcmp(T1, T2, (size_t)k * 8) ==
					      0);
				}
				for (uint32_t v = 0; v < n; v++)
					CHECK(parsa_nbrset_count(&s, v)
						      ? parsa_nbrset_has(&s, v,
									 o2[v])
						      : o2[v] == v % k);
				traffic_of(&s, o2, Tr);
				CHECK(memcmp(Tr, T2, (size_t)k * 8) == 0);
				/* on threads, on the lists: the same */
				REQUIRE(parsa_partition_v_sliced(
						NULL, &u, 4, S, tp_par_pthreads,
						NULL, o3, T3, NULL, NULL) == 0);
				CHECK(memcmp(o2, o3, (size_t)n * 4) == 0);
				CHECK(memcmp(T2, T3, (size_t)k * 8) == 0);
				/* each further sweep never raises T_max (a run
				 * with sw sweeps is the run with sw - 1 and one
				 * more) */
				REQUIRE(parsa_partition_v_sliced(
						&s, NULL, 0, S, NULL, NULL, o3,
						T3, NULL, NULL) == 0);
				for (uint32_t sw = 1; sw <= 4; sw++) {
					uint64_t before = max_of(T3, k);

					REQUIRE(parsa_partition_v_sliced(
							&s, NULL, sw, S, NULL,
							NULL, o3, T3, NULL,
							NULL) == 0);
					CHECK(max_of(T3, k) <= before);
				}
				/* close to the serial T_max where slices hold
				 * many features */
				if (n / S >= 500)
					CHECK(max_of(T2, k) * 100 <=
					      serial_tmax * 103);
			}
			parsa_users_release(&u);
			parsa_graph_release(&g);
			parsa_nbrset_release(&s);
			free(part);
			free(o1);
			free(o2);
			free(o3);
			free(T1);
			free(T2);
			free(T3);
			free(Tr);
		}
	}
}

int main(void)
{
	RUN(test_hand);
	RUN(test_lpt_order);
	RUN(test_random_sweeps);
	RUN(test_large_k);
	RUN(test_brute_force);
	RUN(test_degenerate);
	RUN(test_parts);
	RUN(test_lists);
	RUN(test_sliced);
	return harness_done();
}
