/*
 * test_tmax: the T_max refinement (parsa_tmax) against brute force on
 * small random graphs: the T_i it reports equal parsa_metrics_parts' after
 * every round (runs cut after 0, 1, 2, ... rounds), T_max never above its
 * input, the balance cap and the M bound kept, every used feature owned
 * by a user, the used sets exact, a local minimum where it stops (no
 * single allowed move of the busiest part, tried by brute force, lowers
 * it), the same result for a seed, a set cancel honoured, the swaps'
 * bound changing nothing, the larger kicks never worse; and the
 * pipeline's --objective tmax (never a higher T_max than the default
 * objective's, the balance cap and its M_max bound kept, the same
 * placement on 1, 2 or 3 threads, progress never backwards).
 */
#include "harness.h"
#include "testutil.h"
#include "testpart.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_metrics.h"
#include "parsa_partv.h"
#include "parsa_tmax.h"
#include "part_run.h"

/* ---------------------------------------------------------------- helpers */

/* A random start: parts (round-robin or random), used, Algorithm 11. */
struct start {
	struct parsa_graph g;
	uint32_t k;
	uint32_t *part, *owner;
	struct parsa_nbrset used;
};

static void start_make(struct start *s, struct parsa_rng *r, int iter)
{
	uint32_t rows = 2 + (uint32_t)parsa_rng_below(r, 120);
	uint32_t cols = 1 + (uint32_t)parsa_rng_below(r, 80);

	s->k = 2 + (uint32_t)parsa_rng_below(r, iter % 9 == 0 ? 70 : 9);
	tu_heavy_graph(&s->g, r, rows, cols, 6, 60);
	s->part = malloc(rows * sizeof(uint32_t));
	s->owner = malloc(((size_t)s->g.n_cols + 1) * sizeof(uint32_t));
	for (uint32_t u = 0; u < rows; u++)
		s->part[u] = iter % 2 ? u % s->k
				      : (uint32_t)parsa_rng_below(r, s->k);
	REQUIRE(tu_used_of(&s->g, s->part, s->k, &s->used) == 0);
	REQUIRE(parsa_partition_v(&s->used, 2, s->owner, NULL, NULL) == 0);
}

static void start_copy(struct start *d, const struct start *s)
{
	d->g = s->g; /* shared, not owned */
	d->k = s->k;
	d->part = malloc(s->g.n_rows * sizeof(uint32_t) + 1);
	d->owner = malloc(((size_t)s->g.n_cols + 1) * sizeof(uint32_t));
	memcpy(d->part, s->part, s->g.n_rows * sizeof(uint32_t));
	memcpy(d->owner, s->owner, s->g.n_cols * sizeof(uint32_t));
	REQUIRE(parsa_nbrset_init(&d->used, s->g.n_cols, s->k, NULL) == 0);
	parsa_nbrset_copy(&d->used, &s->used);
}

static void start_free(struct start *s, int own_graph)
{
	free(s->part);
	free(s->owner);
	parsa_nbrset_release(&s->used);
	if (own_graph)
		parsa_graph_release(&s->g);
}

/* Brute-force T_i, M_i, |U_i| of a placement (k entries each). */
static void brute(const struct start *s, uint64_t *T, uint64_t *M,
		  uint64_t *U)
{
	REQUIRE(parsa_metrics_parts(&s->g, s->k, s->part, s->owner, M, T, U,
				    NULL, NULL) == 0);
}

/* Every used feature owned by one of its users. */
static void check_owners(const struct start *s)
{
	for (uint32_t v = 0; v < s->g.n_cols; v++)
		if (parsa_nbrset_count(&s->used, v) > 0)
			CHECK(parsa_nbrset_has(&s->used, v, s->owner[v]));
}

/*
 * After a phase-1 run that ended by itself: the lowest-index busiest part
 * p has no single move the search allows that lowers it: an example of p
 * to a part q (with the owner rule of parsa_tmax.h) after which T_p and
 * every T that rose is below T_max, within the caps; nor a feature it owns
 * that a user could take with T below T_max, nor trade with a user for
 * a feature that user owns.  All by brute force.
 */
static void check_local_min(const struct start *s, uint64_t cap,
			    uint64_t m_limit)
{
	uint32_t k = s->k, p = 0;
	uint64_t *T = calloc(k, 8), *M = calloc(k, 8), *U = calloc(k, 8);
	uint64_t *T2 = calloc(k, 8), *M2 = calloc(k, 8), *U2 = calloc(k, 8);
	uint32_t *own = malloc(((size_t)s->g.n_cols + 1) * sizeof(uint32_t));

	brute(s, T, M, U);
	for (uint32_t j = 1; j < k; j++)
		if (T[j] > T[p])
			p = j;
	for (uint32_t u = 0; u < s->g.n_rows; u++) {
		if (s->part[u] != p)
			continue;
		for (uint32_t q = 0; q < k; q++) {
			int ok = 1;

			if (q == p || U[q] + 1 > cap)
				continue;
			memcpy(own, s->owner, s->g.n_cols * sizeof(uint32_t));
			s->part[u] = q;
			/* features p stops using that it owned pass to q */
			for (uint64_t e = s->g.row_ptr[u]; e < s->g.row_ptr[u + 1]; e++) {
				uint32_t v = s->g.col[e], still = 0;

				for (uint32_t w = 0; w < s->g.n_rows; w++)
					for (uint64_t f = s->g.row_ptr[w];
					     f < s->g.row_ptr[w + 1]; f++)
						still |= s->part[w] == p &&
							 s->g.col[f] == v;
				if (!still && own[v] == p)
					own[v] = q;
			}
			REQUIRE(parsa_metrics_parts(&s->g, k, s->part, own, M2, T2,
						    U2, NULL, NULL) == 0);
			s->part[u] = p;
			if (M2[q] > M[q] && M2[q] > m_limit)
				continue;
			ok = T2[p] < T[p];
			for (uint32_t j = 0; j < k; j++)
				if (T2[j] > T[j] && T2[j] >= T[p])
					ok = 0;
			CHECK(!ok);
		}
	}
	for (uint32_t v = 0; v < s->g.n_cols; v++) {
		uint32_t c = parsa_nbrset_count(&s->used, v);

		if (s->owner[v] != p || c < 3)
			continue;
		for (uint32_t j = 0; j < k; j++)
			if (j != p && parsa_nbrset_has(&s->used, v, j))
				CHECK(T[j] + c - 2 >= T[p]);
		/* nor a trade: v to a user j, a feature w j owns and p uses
		 * to p, both ending below T_max */
		for (uint32_t w = 0; w < s->g.n_cols; w++) {
			uint32_t cw = parsa_nbrset_count(&s->used, w), j = s->owner[w];

			if (cw < 3 || j == p || !parsa_nbrset_has(&s->used, v, j) ||
			    !parsa_nbrset_has(&s->used, w, p))
				continue;
			CHECK(!(T[p] - c + cw < T[p] && T[j] + c - cw < T[p]));
		}
	}
	free(T), free(M), free(U), free(T2), free(M2), free(U2), free(own);
}

/* ------------------------------------------------------------------ tests */

/* Random starts and caps: exact bookkeeping after every round, T_max
 * never up, caps kept, owners among users, a local minimum at the end. */
static void test_tmax_properties(void)
{
	struct parsa_rng r;
	uint64_t lowered = 0, polished = 0;

	parsa_rng_seed(&r, 7);
	for (int iter = 0; iter < 120; iter++) {
		struct start s;
		uint32_t k;
		uint64_t *T0, *M0, *U0, cap, m_limit, rounds_all;
		struct parsa_tmax_opts o;
		struct parsa_tmax_stats st;

		start_make(&s, &r, iter);
		k = s.k;
		T0 = calloc(k, 8), M0 = calloc(k, 8), U0 = calloc(k, 8);
		brute(&s, T0, M0, U0);
		cap = tu_max_of(U0, k) + (iter % 3 ? (uint64_t)parsa_rng_below(&r, 4) : 0);
		m_limit = iter % 4 == 0 ? UINT64_MAX : tu_max_of(M0, k) + (iter % 4) - 1;
		o = (struct parsa_tmax_opts){ 1000000, 0, cap, m_limit,
					      (uint64_t)iter, NULL };
		/* the full phase 1, then cut after 0, 1, 2, ... rounds */
		{
			struct start t;

			start_copy(&t, &s);
			REQUIRE(parsa_tmax_refine(&t.g, t.part, &t.used, t.owner, &o,
						  NULL, &st, NULL) == 0);
			rounds_all = st.rounds;
			check_local_min(&t, cap, m_limit);
			start_free(&t, 0);
		}
		for (uint32_t n = 0; n <= rounds_all + 1 && n < 12; n++) {
			struct start t;
			uint64_t *T = calloc(k, 8), *M = calloc(k, 8), *U = calloc(k, 8);
			uint64_t *Tm = calloc(k, 8);

			start_copy(&t, &s);
			o.passes = n;
			o.polish_passes = n % 3;
			REQUIRE(parsa_tmax_refine(&t.g, t.part, &t.used, t.owner, &o,
						  Tm, &st, NULL) == 0);
			brute(&t, T, M, U);
			for (uint32_t j = 0; j < k; j++) {
				CHECK_INT(Tm[j], ==, T[j]);
				CHECK(U[j] <= (cap > U0[j] ? cap : U0[j]));
				CHECK(M[j] <= M0[j] || M[j] <= m_limit);
			}
			CHECK_INT(st.tmax_before, ==, tu_max_of(T0, k));
			CHECK_INT(st.tmax_after, ==, tu_max_of(T, k));
			CHECK(st.tmax_after <= st.tmax_before);
			{
				uint64_t sum = 0;

				for (uint32_t j = 0; j < k; j++)
					sum += T[j];
				CHECK_INT(st.tsum_after, ==, sum);
			}
			tu_check_used(&t.g, t.part, &t.used);
			check_owners(&t);
			lowered += st.tmax_after < st.tmax_before;
			polished += st.polish_moves;
			free(T), free(M), free(U), free(Tm);
			start_free(&t, 0);
		}
		free(T0), free(M0), free(U0);
		start_free(&s, 1);
	}
	/* the search does something on these inputs */
	CHECK(lowered > 50);
	CHECK(polished > 0);
}

/* The same seed gives the same placement; another seed may differ. */
static void test_tmax_deterministic(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 99);
	for (int iter = 0; iter < 20; iter++) {
		struct start s, a, b;
		struct parsa_tmax_opts o = { 1000000, 2, UINT64_MAX, UINT64_MAX,
					     5, NULL };

		start_make(&s, &r, iter);
		start_copy(&a, &s);
		start_copy(&b, &s);
		REQUIRE(parsa_tmax_refine(&a.g, a.part, &a.used, a.owner, &o, NULL,
					  NULL, NULL) == 0);
		REQUIRE(parsa_tmax_refine(&b.g, b.part, &b.used, b.owner, &o, NULL,
					  NULL, NULL) == 0);
		CHECK(memcmp(a.part, b.part, s.g.n_rows * sizeof(uint32_t)) == 0);
		CHECK(memcmp(a.owner, b.owner, s.g.n_cols * sizeof(uint32_t)) == 0);
		start_free(&a, 0);
		start_free(&b, 0);
		start_free(&s, 1);
	}
}

/* A cancel set on entry: nothing moves, the result says it was stopped;
 * bad input is refused with the placement unchanged. */
static void test_tmax_stop_and_errors(void)
{
	struct parsa_rng r;
	struct start s;
	atomic_int cancel = 1;
	struct parsa_stop stop = { &cancel, 0 };
	struct parsa_tmax_opts o = { 1000000, 2, UINT64_MAX, UINT64_MAX, 1,
				     &stop };
	struct parsa_tmax_stats st;
	struct parsa_err e = { 0 };
	uint32_t *p0;

	parsa_rng_seed(&r, 3);
	start_make(&s, &r, 1);
	p0 = malloc(s.g.n_rows * sizeof(uint32_t) + 1);
	memcpy(p0, s.part, s.g.n_rows * sizeof(uint32_t));
	REQUIRE(parsa_tmax_refine(&s.g, s.part, &s.used, s.owner, &o, NULL, &st,
				  NULL) == 0);
	CHECK(st.stopped);
	CHECK_INT(st.u_moves + st.v_moves + st.polish_moves, ==, 0);
	CHECK(memcmp(p0, s.part, s.g.n_rows * sizeof(uint32_t)) == 0);
	/* a deadline already passed stops it too */
	stop.cancel = NULL;
	stop.deadline = parsa_stop_clock() - 1;
	REQUIRE(parsa_tmax_refine(&s.g, s.part, &s.used, s.owner, &o, NULL, &st,
				  NULL) == 0);
	CHECK(st.stopped);
	/* an owner that does not use its feature */
	o.stop = NULL;
	for (uint32_t v = 0; v < s.g.n_cols; v++)
		if (parsa_nbrset_count(&s.used, v) > 0 &&
		    parsa_nbrset_count(&s.used, v) < s.k) {
			uint32_t j = 0;

			while (parsa_nbrset_has(&s.used, v, j))
				j++;
			s.owner[v] = j;
			CHECK_INT(parsa_tmax_refine(&s.g, s.part, &s.used, s.owner,
						    &o, NULL, &st, &e),
				  ==, PARSA_EINVAL);
			CHECK_CONTAINS(e.msg, "does not use it");
			break;
		}
	CHECK(memcmp(p0, s.part, s.g.n_rows * sizeof(uint32_t)) == 0);
	free(p0);
	start_free(&s, 1);
}

/*
 * One random start refined twice: run a without kicks (levels 0) or with
 * kicks but no larger ones (levels 1), run b (and c, for the seed) with
 * them.  b's T_i equal brute force's, the caps kept, every used feature
 * owned by a user, the used sets exact, (T_max, T_sum) never above a's
 * (whose search, or kicks, are b's first), the same result for a seed.
 */
static void kick_case(struct parsa_rng *r, int iter, int levels,
		      struct parsa_tmax_stats *sa, struct parsa_tmax_stats *sb)
{
	struct start s, a, b, c;
	uint32_t k;
	uint64_t *T0, *M0, *U0, *T, *M, *U, *Tm, cap, m_limit, sum = 0;
	struct parsa_tmax_opts o;

	start_make(&s, r, iter);
	k = s.k;
	T0 = calloc(k, 8), M0 = calloc(k, 8), U0 = calloc(k, 8);
	T = calloc(k, 8), M = calloc(k, 8), U = calloc(k, 8);
	Tm = calloc(k, 8);
	brute(&s, T0, M0, U0);
	cap = tu_max_of(U0, k) + (uint64_t)parsa_rng_below(r, 3);
	m_limit = iter % 3 == 0 ? UINT64_MAX
				: tu_max_of(M0, k) + (uint64_t)(iter % 4);
	o = (struct parsa_tmax_opts){ 1000000, 1 + (uint32_t)iter % 2, cap,
				      m_limit, (uint64_t)iter, NULL,
				      1 + (uint32_t)iter % 3 };
	if (levels) {
		o.kicks = 1 + (uint32_t)iter % 4;
		o.kick_size = 1;
		o.kick_patience = 1 + (uint32_t)iter % 3;
	}
	start_copy(&a, &s);
	REQUIRE(parsa_tmax_refine(&a.g, a.part, &a.used, a.owner, &o, NULL, sa,
				  NULL) == 0);
	if (levels) {
		o.kick_levels = 1 + (uint32_t)iter % 4;
		o.kick_more = 2 + (uint32_t)iter % 7;
		o.kick_patience_more = (uint32_t)iter % 3;
	} else {
		o.kicks = 3 + (uint32_t)iter % 6;
		o.kick_size = (uint32_t)iter % 3;
		o.kick_patience = iter % 4 == 0 ? 2 : 0;
	}
	start_copy(&b, &s);
	start_copy(&c, &s);
	REQUIRE(parsa_tmax_refine(&b.g, b.part, &b.used, b.owner, &o, Tm, sb,
				  NULL) == 0);
	REQUIRE(parsa_tmax_refine(&c.g, c.part, &c.used, c.owner, &o, NULL, NULL,
				  NULL) == 0);
	brute(&b, T, M, U);
	for (uint32_t j = 0; j < k; j++) {
		CHECK_INT(Tm[j], ==, T[j]);
		CHECK(U[j] <= (cap > U0[j] ? cap : U0[j]));
		CHECK(M[j] <= M0[j] || M[j] <= m_limit);
		sum += T[j];
	}
	CHECK_INT(sb->tmax_after, ==, tu_max_of(T, k));
	CHECK_INT(sb->tsum_after, ==, sum);
	CHECK(sb->tmax_after <= sb->tmax_before);
	CHECK(sb->tmax_after < sa->tmax_after ||
	      (sb->tmax_after == sa->tmax_after &&
	       sb->tsum_after <= sa->tsum_after));
	CHECK(sb->kicks_kept <= sb->kicks);
	if (levels) { /* the larger kicks come after a's, at most kick_more */
		CHECK(sb->kicks >= sa->kicks);
		CHECK(sb->kicks <= sa->kicks + o.kick_more);
		CHECK(sb->kicks_kept >= sa->kicks_kept);
	} else {
		CHECK(sb->kicks <= o.kicks);
	}
	tu_check_used(&b.g, b.part, &b.used);
	check_owners(&b);
	CHECK(memcmp(b.part, c.part, s.g.n_rows * sizeof(uint32_t)) == 0);
	CHECK(memcmp(b.owner, c.owner, s.g.n_cols * sizeof(uint32_t)) == 0);
	free(T0), free(M0), free(U0), free(T), free(M), free(U), free(Tm);
	start_free(&a, 0);
	start_free(&b, 0);
	start_free(&c, 0);
	start_free(&s, 1);
}

/* Kicks (the iterated local search) and group moves on random starts
 * (kick_case); kicks kept and group moves made on some of them, owners
 * traded on some. */
static void test_tmax_kicks(void)
{
	struct parsa_rng r;
	uint64_t kept = 0, groups = 0, trades = 0;

	parsa_rng_seed(&r, 11);
	for (int iter = 0; iter < 100; iter++) {
		struct parsa_tmax_stats sa, sb;

		kick_case(&r, iter, 0, &sa, &sb);
		kept += sb.kicks_kept;
		groups += sa.group_moves + sb.group_moves;
		trades += sa.v_trades + sb.v_trades;
	}
	CHECK(kept > 0);
	CHECK(groups > 0);
	CHECK(trades > 0);
}

/* The swaps' bound (parsa_tmax.h) on random starts, with kicks: the same
 * placement and moves as trying every pair, pairs skipped on some. */
static void test_tmax_swap_bound(void)
{
	struct parsa_rng r;
	uint64_t skipped = 0, swaps = 0;

	parsa_rng_seed(&r, 13);
	for (int iter = 0; iter < 100; iter++) {
		struct start s, a, b;
		uint64_t *U0, *M0, *T0;
		struct parsa_tmax_opts o;
		struct parsa_tmax_stats sa, sb;

		start_make(&s, &r, iter);
		T0 = calloc(s.k, 8), M0 = calloc(s.k, 8), U0 = calloc(s.k, 8);
		brute(&s, T0, M0, U0);
		o = (struct parsa_tmax_opts){ 1000000, 1 + (uint32_t)iter % 2,
					      tu_max_of(U0, s.k) + (uint64_t)(iter % 2),
					      iter % 3 ? UINT64_MAX
						       : tu_max_of(M0, s.k) + 1,
					      (uint64_t)iter, NULL, 2,
					      (uint32_t)iter % 5, 2, 3,
					      (uint32_t)iter % 3, 6, 2, 0 };
		start_copy(&a, &s);
		start_copy(&b, &s);
		REQUIRE(parsa_tmax_refine(&a.g, a.part, &a.used, a.owner, &o, NULL,
					  &sa, NULL) == 0);
		o.exhaustive_swaps = 1;
		REQUIRE(parsa_tmax_refine(&b.g, b.part, &b.used, b.owner, &o, NULL,
					  &sb, NULL) == 0);
		CHECK(memcmp(a.part, b.part, s.g.n_rows * sizeof(uint32_t)) == 0);
		CHECK(memcmp(a.owner, b.owner, s.g.n_cols * sizeof(uint32_t)) == 0);
		CHECK_INT(sa.swaps, ==, sb.swaps);
		CHECK_INT(sa.u_moves + sa.group_moves + sa.polish_moves, ==,
			  sb.u_moves + sb.group_moves + sb.polish_moves);
		CHECK_INT(sa.tsum_after, ==, sb.tsum_after);
		CHECK_INT(sb.swap_pairs_skipped, ==, 0);
		skipped += sa.swap_pairs_skipped;
		swaps += sa.swaps;
		free(T0), free(M0), free(U0);
		start_free(&a, 0);
		start_free(&b, 0);
		start_free(&s, 1);
	}
	CHECK(skipped > 0);
	CHECK(swaps > 0);
}

/* The larger kicks after the kicks of kick_size (kick_levels) on random
 * starts (kick_case): never above the same run without them, at most
 * kick_more of them; a lower (T_max, T_sum) than without them on some. */
static void test_tmax_kick_levels(void)
{
	struct parsa_rng r;
	uint64_t better = 0;

	parsa_rng_seed(&r, 17);
	for (int iter = 0; iter < 100; iter++) {
		struct parsa_tmax_stats sa, sb;

		kick_case(&r, iter, 1, &sa, &sb);
		better += sb.tmax_after < sa.tmax_after ||
			  sb.tsum_after < sa.tsum_after;
	}
	CHECK(better > 0);
}

/* A deadline reached during the kicks (as good as endless here): the
 * search returns stopped, on a valid placement with exact T_i, no higher
 * T_max than its input. */
static void test_tmax_kicks_stop(void)
{
	struct parsa_rng r;
	struct parsa_stop stop = { NULL, 0 };
	struct parsa_tmax_opts o = { 1000000, 2, UINT64_MAX, UINT64_MAX, 1,
				     &stop, 2, UINT32_MAX, 2, 0 };
	struct parsa_tmax_stats st;

	parsa_rng_seed(&r, 5);
	for (int iter = 0; iter < 3; iter++) {
		struct start s;
		uint64_t *T, *M, *U, *Tm;

		start_make(&s, &r, 2 * iter + 1);
		T = calloc(s.k, 8), M = calloc(s.k, 8), U = calloc(s.k, 8);
		Tm = calloc(s.k, 8);
		stop.deadline = parsa_stop_clock() + 0.2;
		REQUIRE(parsa_tmax_refine(&s.g, s.part, &s.used, s.owner, &o, Tm,
					  &st, NULL) == 0);
		CHECK(st.stopped);
		CHECK(st.kicks > 0);
		brute(&s, T, M, U);
		for (uint32_t j = 0; j < s.k; j++)
			CHECK_INT(Tm[j], ==, T[j]);
		CHECK_INT(st.tmax_after, ==, tu_max_of(T, s.k));
		CHECK(st.tmax_after <= st.tmax_before);
		tu_check_used(&s.g, s.part, &s.used);
		check_owners(&s);
		free(T), free(M), free(U), free(Tm);
		start_free(&s, 1);
	}
}

/* The T_sum cap (tsum_cap): on random starts, with kicks, swaps and
 * group moves, T_sum never ends above max(cap, its value on entry), the
 * bookkeeping stays exact, T_max never rises, the caps hold; with the
 * cap at T_sum on entry T_max still falls on some starts; phase 1 alone
 * (no polish, no kicks) ends above the bound without the cap on some
 * starts, and never with it (the cap binds). */
static void test_tmax_tsum_cap(void)
{
	struct parsa_rng r;
	uint64_t lowered = 0, bound = 0;

	parsa_rng_seed(&r, 23);
	for (int iter = 0; iter < 80; iter++) {
		struct start s, t, f;
		uint32_t k;
		uint64_t *T0, *M0, *U0, *T, *M, *U, *Tm, cap, s0 = 0, lim, sum = 0;
		struct parsa_tmax_opts o = { 1000000, 2, 0, UINT64_MAX,
					     (uint64_t)iter, NULL, 2,
					     iter % 2 ? 20 : 0, 2, 5, 2, 20, 3,
					     iter % 3 == 0, 0 };
		struct parsa_tmax_stats st, sf;

		start_make(&s, &r, iter);
		k = s.k;
		T0 = calloc(k, 8), M0 = calloc(k, 8), U0 = calloc(k, 8);
		T = calloc(k, 8), M = calloc(k, 8), U = calloc(k, 8);
		Tm = calloc(k, 8);
		brute(&s, T0, M0, U0);
		for (uint32_t j = 0; j < k; j++)
			s0 += T0[j];
		cap = tu_max_of(U0, k) + (uint64_t)parsa_rng_below(&r, 3);
		o.cap = cap;
		o.m_limit = iter % 4 == 0 ? UINT64_MAX : tu_max_of(M0, k);
		/* the cap: T_sum on entry, a little above, or below it (then
		 * T_sum on entry is the bound) */
		o.tsum_cap = iter % 3 == 0 ? 1
			     : iter % 3 == 1 ? s0 + (uint64_t)parsa_rng_below(&r, 8)
					     : (s0 > 4 ? s0 - 4 : 1);
		lim = o.tsum_cap > s0 ? o.tsum_cap : s0;
		start_copy(&t, &s);
		start_copy(&f, &s);
		REQUIRE(parsa_tmax_refine(&t.g, t.part, &t.used, t.owner, &o, Tm,
					  &st, NULL) == 0);
		brute(&t, T, M, U);
		for (uint32_t j = 0; j < k; j++) {
			CHECK_INT(Tm[j], ==, T[j]);
			CHECK(U[j] <= (cap > U0[j] ? cap : U0[j]));
			CHECK(M[j] <= M0[j] || M[j] <= o.m_limit);
			sum += T[j];
		}
		CHECK_INT(st.tsum_before, ==, s0);
		CHECK_INT(st.tsum_after, ==, sum);
		CHECK(sum <= lim);
		CHECK_INT(st.tmax_after, ==, tu_max_of(T, k));
		CHECK(st.tmax_after <= st.tmax_before);
		tu_check_used(&t.g, t.part, &t.used);
		check_owners(&t);
		lowered += st.tmax_after < st.tmax_before;
		/* without the polish and kicks, phase 1 alone: uncapped it
		 * ends above the bound on some starts, capped never */
		o.polish_passes = 0;
		o.kicks = 0;
		o.tsum_cap = 0;
		{
			struct start c;
			struct parsa_tmax_stats sc;

			start_copy(&c, &s);
			REQUIRE(parsa_tmax_refine(&f.g, f.part, &f.used, f.owner,
						  &o, NULL, &sf, NULL) == 0);
			o.tsum_cap = lim;
			REQUIRE(parsa_tmax_refine(&c.g, c.part, &c.used, c.owner,
						  &o, NULL, &sc, NULL) == 0);
			CHECK(sc.tsum_after <= lim);
			bound += sf.tsum_after > lim;
			start_free(&c, 0);
		}
		free(T0), free(M0), free(U0), free(T), free(M), free(U), free(Tm);
		start_free(&t, 0);
		start_free(&f, 0);
		start_free(&s, 1);
	}
	CHECK(lowered > 10);
	CHECK(bound > 0); /* 4 of the 80 */
}

/* Refinement progress of a run: the last fraction, and whether it ever
 * went back or past 1. */
struct prog {
	double last;
	int bad, calls;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;
	double f = total ? (double)done / (double)total : 0;

	p->bad |= f < p->last || done > total;
	p->last = f;
	p->calls++;
}

/* The pipeline: --objective tmax on random datasets ends with a T_max no
 * higher than the default objective's, within the balance cap, and is
 * deterministic. */
static void test_tmax_pipeline(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 21);
	for (int iter = 0; iter < 8; iter++) {
		struct parsa_graph g;
		struct part_dataset ds;
		struct part_run_opts o;
		struct part_result a, b, c;
		uint64_t cap;

		tu_heavy_graph(&g, &r, 300 + 50 * (uint32_t)iter, 200, 8, 100);
		tu_as_dataset(&ds, &g);
		part_run_opts_default(&o);
		part_quality_apply(&o, iter % 2 ? PART_QUALITY_BEST
						: PART_QUALITY_DEFAULT);
		o.pu.k = 2 + (uint32_t)iter;
		o.threads = 1;
		o.random_trials = 1;
		part_result_init(&a);
		part_result_init(&b);
		part_result_init(&c);
		REQUIRE(part_run(&ds, &o, &a, NULL) == 0);
		o.objective = PART_OBJ_TMAX;
		{
			struct prog pg = { 0, 0, 0 };

			o.refine_progress = on_progress;
			o.refine_progress_arg = &pg;
			REQUIRE(part_run(&ds, &o, &b, NULL) == 0);
			CHECK(!pg.bad && pg.calls > 0);
			CHECK(pg.last == 1.0);
			o.refine_progress = NULL;
		}
		o.threads = 2 + (uint32_t)iter % 2; /* the same for 1-3 threads */
		REQUIRE(part_run(&ds, &o, &c, NULL) == 0);
		CHECK(b.tmax_ran);
		CHECK(b.m.T_max <= a.m.T_max);
		CHECK(b.m.T_max <= (double)b.step1_tmax);
		CHECK(b.m.M_max <= 2.0 * (double)b.step1_mmax);
		cap = parsa_balance_cap(ds.g.n_rows, o.pu.k, o.pu.imbalance);
		CHECK(b.m.U_max <= cap);
		CHECK_INT(b.tmax_stats.tmax_after, ==, (uint64_t)b.m.T_max);
		CHECK(memcmp(b.part, c.part, ds.g.n_rows * sizeof(uint32_t)) == 0);
		CHECK(memcmp(b.owner, c.owner, ds.g.n_cols * sizeof(uint32_t)) == 0);
		part_result_release(&a);
		part_result_release(&b);
		part_result_release(&c);
		part_dataset_release(&ds);
	}
}

int main(void)
{
	RUN(test_tmax_properties);
	RUN(test_tmax_deterministic);
	RUN(test_tmax_stop_and_errors);
	RUN(test_tmax_kicks);
	RUN(test_tmax_swap_bound);
	RUN(test_tmax_kick_levels);
	RUN(test_tmax_kicks_stop);
	RUN(test_tmax_pipeline);
	RUN(test_tmax_tsum_cap);
	return harness_done();
}
