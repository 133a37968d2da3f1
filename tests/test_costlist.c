/*
 * test_costlist: the bucketed cost list against a brute-force oracle.
 *
 * The oracle keeps cost[] and in[] plus the tie order the header promises:
 * among the lowest costs, the most recently decremented item first, then
 * (never decremented since build) the lowest id.  Random sequences of
 * build / take_min / remove / decrement / reserve are checked after every
 * operation.
 */
#include "harness.h"

#include "parsa_costlist.h"
#include "parsa_rng.h"

#define MAXN 300

struct oracle {
	uint32_t n;
	uint32_t cost[MAXN];
	uint8_t in[MAXN];
	uint8_t dropped[MAXN]; /* by drop_front: in/cost unspecified */
	uint64_t stamp[MAXN]; /* last decrement time, 0 = none since build */
	uint64_t clock;
	uint32_t live;
};

static void oracle_build(struct oracle *o, const uint32_t *costs, uint32_t n)
{
	memset(o, 0, sizeof(*o));
	o->n = n;
	for (uint32_t u = 0; u < n; u++) {
		o->cost[u] = costs[u];
		o->in[u] = 1;
	}
	o->live = n;
}

/* The item take_min must return, or PARSA_CL_NIL. */
static uint32_t oracle_min(const struct oracle *o)
{
	uint32_t best = PARSA_CL_NIL;

	for (uint32_t u = 0; u < o->n; u++) {
		if (!o->in[u])
			continue;
		if (best == PARSA_CL_NIL || o->cost[u] < o->cost[best] ||
		    (o->cost[u] == o->cost[best] && o->stamp[u] > o->stamp[best]))
			best = u;
	}
	return best;
}

/* A random live item (or NIL); with need_pos, one with cost > 0. */
static uint32_t oracle_pick(const struct oracle *o, struct parsa_rng *r,
			    int need_pos)
{
	uint32_t cand[MAXN], m = 0;

	for (uint32_t u = 0; u < o->n; u++)
		if (o->in[u] && (!need_pos || o->cost[u] > 0))
			cand[m++] = u;
	return m ? cand[parsa_rng_below(r, m)] : PARSA_CL_NIL;
}

static void check_same(struct parsa_costlist *cl, const struct oracle *o)
{
	uint32_t mc = UINT32_MAX;

	CHECK_INT(cl->live, ==, o->live);
	for (uint32_t u = 0; u < o->n; u++) {
		if (o->dropped[u])
			continue;
		CHECK_INT(parsa_costlist_in(cl, u), ==, o->in[u]);
		if (o->in[u]) {
			CHECK_INT(parsa_costlist_cost(cl, u), ==, o->cost[u]);
			mc = o->cost[u] < mc ? o->cost[u] : mc;
		}
	}
	CHECK_INT(parsa_costlist_min_cost(cl), ==, mc);
}

/* Walk every bucket: links consistent, each item in its cost's bucket. */
static void check_links(const struct parsa_costlist *cl)
{
	uint32_t seen = 0;

	for (uint32_t c = 0; c <= cl->max_cost; c++) {
		uint32_t prev = PARSA_CL_NIL;

		if (c > cl->top + 64) /* wide lists: max_cost up to 70000 */
			break;
		if (c > cl->top) {
			CHECK(cl->head[c] == PARSA_CL_NIL);
			continue;
		}
		for (uint32_t u = cl->head[c]; u != PARSA_CL_NIL; u = parsa_costlist_next(cl, u)) {
			CHECK_INT(parsa_costlist_cost(cl, u), ==, c);
			CHECK_INT(parsa_costlist_prev(cl, u), ==, prev);
			CHECK(parsa_costlist_in(cl, u));
			if (c < cl->min)
				CHECK(0 && "item below min");
			prev = u;
			if (++seen > cl->n)
				return;
		}
	}
	CHECK_INT(seen, ==, cl->live);
}

static void random_build(struct parsa_costlist *cl, struct oracle *o,
			 struct parsa_rng *r, uint32_t n, uint32_t max_cost)
{
	uint32_t costs[MAXN];

	/* costs stay small when max_cost was raised to force wide arrays */
	uint32_t range = max_cost > 1000 ? 100 : max_cost;

	for (uint32_t u = 0; u < n; u++)
		costs[u] = (uint32_t)parsa_rng_below(r, (uint64_t)range + 1);
	if (parsa_rng_below(r, 2)) {
		/* build from staged costs (documented NULL) */
		for (uint32_t u = 0; u < n; u++)
			parsa_costlist_stage(cl, u, costs[u]);
		parsa_costlist_build(cl, NULL, n);
	} else {
		parsa_costlist_build(cl, costs, n);
	}
	oracle_build(o, costs, n);
}

static void op_take(struct parsa_costlist *cl, struct oracle *o)
{
	uint32_t want = oracle_min(o), got = parsa_costlist_take_min(cl);

	CHECK_INT(got, ==, want);
	if (want != PARSA_CL_NIL) {
		o->in[want] = 0;
		o->live--;
	}
}

static void op_remove(struct parsa_costlist *cl, struct oracle *o,
		      struct parsa_rng *r)
{
	uint32_t u = oracle_pick(o, r, 0);

	if (u == PARSA_CL_NIL)
		return;
	parsa_costlist_remove(cl, u);
	o->in[u] = 0;
	o->live--;
}

/* drop_front of the bucket of a random live item: the oracle's first
 * item of that cost (latest decrement, then lowest id). */
static void op_drop(struct parsa_costlist *cl, struct oracle *o,
		    struct parsa_rng *r)
{
	uint32_t u = oracle_pick(o, r, 0), c, want = PARSA_CL_NIL;

	if (u == PARSA_CL_NIL)
		return;
	c = o->cost[u];
	for (uint32_t w = 0; w < o->n; w++)
		if (o->in[w] && o->cost[w] == c &&
		    (want == PARSA_CL_NIL || o->stamp[w] > o->stamp[want]))
			want = w;
	CHECK_INT(parsa_costlist_front(cl, c), ==, want);
	parsa_costlist_drop_front(cl, c);
	o->in[want] = 0;
	o->dropped[want] = 1;
	o->live--;
}

static void op_decrement(struct parsa_costlist *cl, struct oracle *o,
			 struct parsa_rng *r)
{
	uint32_t u = oracle_pick(o, r, 1);

	if (u == PARSA_CL_NIL)
		return;
	parsa_costlist_decrement(cl, u);
	o->cost[u]--;
	o->stamp[u] = ++o->clock;
}

static void run_sequence(uint64_t seed)
{
	struct parsa_rng r;
	struct parsa_costlist cl;
	struct oracle o;
	uint32_t cap, max_cost;

	parsa_rng_seed(&r, seed);
	cap = 1 + (uint32_t)parsa_rng_below(&r, MAXN / 2);
	max_cost = (uint32_t)parsa_rng_below(&r, 40);
	if (seed % 8 == 0) /* wide from the start */
		max_cost = PARSA_CL_NARROW_MAX + 1 + max_cost;
	REQUIRE(parsa_costlist_init(&cl, cap, max_cost, NULL) == 0);
	CHECK_INT(cl.narrow, ==, seed % 8 != 0);
	CHECK_INT(cl.cost8, ==, seed % 8 != 0); /* max_cost < 40 */
	random_build(&cl, &o, &r, (uint32_t)parsa_rng_below(&r, cap + 1),
		     max_cost);
	for (int step = 0; step < 600 && !harness_cur_failed; step++) {
		uint64_t op = parsa_rng_below(&r, 100);

		if (op < 30)
			op_take(&cl, &o);
		else if (op < 38)
			op_remove(&cl, &o, &r);
		else if (op < 45)
			op_drop(&cl, &o, &r);
		else if (op < 95)
			op_decrement(&cl, &o, &r);
		else if (op < 98) {
			cap += (uint32_t)parsa_rng_below(&r, 20);
			max_cost += (uint32_t)parsa_rng_below(&r, 20);
			if (cap > MAXN)
				cap = MAXN;
			if (parsa_rng_below(&r, 6) == 0) /* widen, content kept */
				max_cost += PARSA_CL_NARROW_MAX;
			else if (parsa_rng_below(&r, 4) == 0) /* 16-bit costs */
				max_cost += PARSA_CL_COST8_MAX;
			CHECK(parsa_costlist_reserve(&cl, cap, max_cost, NULL) == 0);
		} else {
			random_build(&cl, &o, &r,
				     (uint32_t)parsa_rng_below(&r, cap + 1),
				     max_cost);
		}
		check_same(&cl, &o);
		check_links(&cl);
	}
	parsa_costlist_release(&cl);
}

static void test_oracle_random(void)
{
	for (uint64_t seed = 1; seed <= 400 && !harness_cur_failed; seed++)
		run_sequence(seed);
}

static void test_build_tie_order(void)
{
	struct parsa_costlist cl;
	uint32_t costs[8] = {3, 1, 2, 1, 3, 0, 1, 0};
	uint32_t want[8] = {5, 7, 1, 3, 6, 2, 0, 4};

	REQUIRE(parsa_costlist_init(&cl, 8, 3, NULL) == 0);
	parsa_costlist_build(&cl, costs, 8);
	for (int j = 0; j < 8; j++)
		CHECK_INT(parsa_costlist_take_min(&cl), ==, want[j]);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, PARSA_CL_NIL);
	CHECK_INT(parsa_costlist_min_cost(&cl), ==, UINT32_MAX);
	CHECK_INT(cl.live, ==, 0);
	parsa_costlist_release(&cl);
}

static void test_decrement_goes_first(void)
{
	struct parsa_costlist cl;
	uint32_t costs[5] = {2, 2, 2, 3, 3};

	REQUIRE(parsa_costlist_init(&cl, 5, 3, NULL) == 0);
	parsa_costlist_build(&cl, costs, 5);
	parsa_costlist_decrement(&cl, 4); /* 4 joins bucket 2 at the front */
	parsa_costlist_decrement(&cl, 3); /* then 3, in front of 4 */
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 3);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 4);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 0);
	parsa_costlist_decrement(&cl, 2); /* cost 1: min moves down */
	CHECK_INT(parsa_costlist_min_cost(&cl), ==, 1);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 2);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 1);
	parsa_costlist_release(&cl);
}

static void test_rebuild_smaller(void)
{
	struct parsa_costlist cl;
	uint32_t big[4] = {9, 8, 7, 9}, small[2] = {1, 0};

	REQUIRE(parsa_costlist_init(&cl, 4, 9, NULL) == 0);
	parsa_costlist_build(&cl, big, 4);
	CHECK_INT(cl.top, ==, 9);
	/* rebuild with fewer items and lower costs: old buckets are gone */
	parsa_costlist_build(&cl, small, 2);
	CHECK_INT(cl.live, ==, 2);
	CHECK(!parsa_costlist_in(&cl, 2) && !parsa_costlist_in(&cl, 3));
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 1);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 0);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, PARSA_CL_NIL);
	/* an empty build */
	parsa_costlist_build(&cl, small, 0);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, PARSA_CL_NIL);
	parsa_costlist_release(&cl);
	parsa_costlist_release(NULL);
}

static void test_reserve_keeps_content(void)
{
	struct parsa_costlist cl;
	uint32_t costs[3] = {2, 0, 1};

	REQUIRE(parsa_costlist_init(&cl, 3, 2, NULL) == 0);
	parsa_costlist_build(&cl, costs, 3);
	REQUIRE(parsa_costlist_reserve(&cl, 1000, 500, NULL) == 0);
	CHECK_INT(cl.n, ==, 1000);
	CHECK_INT(cl.max_cost, ==, 500);
	CHECK_INT(cl.live, ==, 3);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 1);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 2);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 0);
	parsa_costlist_release(&cl);
}

/* A narrow list widened by reserve(n > 65535) keeps its items, links and
 * tie order: it answers as its narrow twin under the same operations. */
static void test_widen_keeps_content(void)
{
	struct parsa_costlist a, b;
	uint32_t costs[12] = {3, 1, 2, 1, 3, 0, 1, 0, 2, 2, 3, 1};

	REQUIRE(parsa_costlist_init(&a, 12, 3, NULL) == 0);
	REQUIRE(parsa_costlist_init(&b, 12, 3, NULL) == 0);
	CHECK(a.narrow && b.narrow);
	parsa_costlist_build(&a, costs, 12);
	parsa_costlist_build(&b, costs, 12);
	for (uint32_t u = 0; u < 12; u += 3) {
		if (parsa_costlist_cost(&a, u) > 0) {
			parsa_costlist_decrement(&a, u);
			parsa_costlist_decrement(&b, u);
		}
	}
	parsa_costlist_remove(&a, 4);
	parsa_costlist_remove(&b, 4);
	REQUIRE(parsa_costlist_reserve(&b, PARSA_CL_NARROW_MAX + 2, 3,
				       NULL) == 0);
	CHECK(a.narrow && !b.narrow);
	CHECK_INT(b.n, ==, PARSA_CL_NARROW_MAX + 2);
	CHECK(!parsa_costlist_in(&b, 4) && !parsa_costlist_in(&b, 12) &&
	      !parsa_costlist_in(&b, PARSA_CL_NARROW_MAX + 1));
	check_links(&b);
	for (uint32_t u = 0; u < 12; u++)
		CHECK_INT(parsa_costlist_cost(&b, u), ==,
			  parsa_costlist_cost(&a, u));
	parsa_costlist_decrement(&a, 10);
	parsa_costlist_decrement(&b, 10);
	for (int j = 0; j < 12; j++)
		CHECK_INT(parsa_costlist_take_min(&b), ==,
			  parsa_costlist_take_min(&a));
	CHECK_INT(parsa_costlist_take_min(&b), ==, PARSA_CL_NIL);
	parsa_costlist_release(&a);
	parsa_costlist_release(&b);
}

/* 8-bit costs widened to 16 bits by reserve(max_cost > 254) keep every
 * cost, OUT and the tie order; the list stays narrow and takes costs past
 * 254 from then on. */
static void test_widen_cost8(void)
{
	struct parsa_costlist a, b;
	uint32_t costs[12] = {3, 1, 2, 1, 254, 0, 1, 0, 2, 2, 3, 1};

	REQUIRE(parsa_costlist_init(&a, 12, PARSA_CL_COST8_MAX, NULL) == 0);
	REQUIRE(parsa_costlist_init(&b, 12, PARSA_CL_COST8_MAX, NULL) == 0);
	CHECK(a.cost8 && b.cost8);
	parsa_costlist_build(&a, costs, 12);
	parsa_costlist_build(&b, costs, 12);
	CHECK_INT(parsa_costlist_cost(&a, 4), ==, 254);
	for (uint32_t u = 0; u < 12; u += 3) {
		parsa_costlist_decrement(&a, u);
		parsa_costlist_decrement(&b, u);
	}
	parsa_costlist_remove(&a, 2);
	parsa_costlist_remove(&b, 2);
	REQUIRE(parsa_costlist_reserve(&b, 12, 1000, NULL) == 0);
	CHECK(a.cost8 && !b.cost8 && b.narrow);
	CHECK(!parsa_costlist_in(&b, 2));
	check_links(&b);
	for (uint32_t u = 0; u < 12; u++)
		CHECK_INT(parsa_costlist_cost(&b, u), ==,
			  parsa_costlist_cost(&a, u));
	for (int j = 0; j < 11; j++)
		CHECK_INT(parsa_costlist_take_min(&b), ==,
			  parsa_costlist_take_min(&a));
	CHECK_INT(parsa_costlist_take_min(&b), ==, PARSA_CL_NIL);
	costs[4] = 1000;
	parsa_costlist_build(&b, costs, 12);
	CHECK_INT(parsa_costlist_cost(&b, 4), ==, 1000);
	parsa_costlist_release(&a);
	parsa_costlist_release(&b);
}

/* A wide list over more than 65535 items: build, decrement, take. */
static void test_wide_many_items(void)
{
	struct parsa_costlist cl;
	uint32_t n = PARSA_CL_NARROW_MAX + 100;
	uint32_t *costs = malloc(n * sizeof(uint32_t));

	REQUIRE(costs != NULL);
	REQUIRE(parsa_costlist_init(&cl, n, 5, NULL) == 0);
	CHECK(!cl.narrow);
	for (uint32_t u = 0; u < n; u++)
		costs[u] = 1 + u % 5;
	parsa_costlist_build(&cl, costs, n);
	parsa_costlist_decrement(&cl, n - 1);
	while (parsa_costlist_cost(&cl, n - 2) > 0)
		parsa_costlist_decrement(&cl, n - 2);
	CHECK_INT(parsa_costlist_cost(&cl, n - 2), ==, 0);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, n - 2);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, 0); /* first of cost 1 */
	check_links(&cl);
	CHECK_INT(cl.live, ==, n - 2);
	parsa_costlist_release(&cl);
	free(costs);
}

static void test_zero_capacity(void)
{
	struct parsa_costlist cl;

	REQUIRE(parsa_costlist_init(&cl, 0, 0, NULL) == 0);
	parsa_costlist_build(&cl, NULL, 0);
	CHECK_INT(parsa_costlist_take_min(&cl), ==, PARSA_CL_NIL);
	parsa_costlist_release(&cl);
}

int main(void)
{
	RUN(test_build_tie_order);
	RUN(test_decrement_goes_first);
	RUN(test_rebuild_smaller);
	RUN(test_reserve_keeps_content);
	RUN(test_zero_capacity);
	RUN(test_widen_keeps_content);
	RUN(test_widen_cost8);
	RUN(test_wide_many_items);
	RUN(test_oracle_random);
	return harness_done();
}
