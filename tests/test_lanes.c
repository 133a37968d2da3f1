/*
 * test_lanes: Algorithm 13 in rounds of lanes (part_lanes.h) and the cap
 * split it shares with the parallel driver (parsa_balance_split).  One
 * lane equals parsa_partition_u exactly; with L lanes the placement and
 * the sets are the same for 1, 2, 3 and 4 threads; every example is
 * placed within the global balance cap and the final sets are the
 * brute-force S0 ∪ N(U_i), on random graphs for many k, imbalance 1.0 and
 * 1.03, both rules, uneven last rounds.  Also built under
 * ThreadSanitizer by `make tsan`.
 */
#include "harness.h"

#include <math.h>
#include <stdatomic.h>

#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_partu.h"
#include "parsa_rng.h"
#include "part_lanes.h"

/* n rows over m features, degree in [dmin, dmax]; empty_pct % empty;
 * rows draw most features from one of `topics` ranges (clusters). */
static void random_graph(struct parsa_graph *g, struct parsa_rng *r,
			 uint32_t n, uint32_t m, uint32_t dmax,
			 uint32_t empty_pct, uint32_t topics)
{
	uint32_t *buf = malloc(((size_t)dmax + 1) * sizeof(uint32_t));
	uint32_t span = m / topics ? m / topics : 1;

	parsa_graph_init(g);
	for (uint32_t u = 0; u < n; u++) {
		uint32_t d = (uint32_t)parsa_rng_below(r, dmax + 1);
		uint32_t t = (uint32_t)parsa_rng_below(r, topics);

		if (parsa_rng_below(r, 100) < empty_pct)
			d = 0;
		for (uint32_t j = 0; j < d; j++)
			buf[j] = parsa_rng_below(r, 4)
					 ? (t * span + (uint32_t)parsa_rng_below(r, span)) % m
					 : (uint32_t)parsa_rng_below(r, m);
		CHECK(parsa_graph_add_row(g, buf, d, NULL) == 0);
	}
	g->n_cols = m;
	free(buf);
}

static uint32_t *new_part(uint32_t n)
{
	uint32_t *p = malloc((n ? n : 1) * sizeof(uint32_t));

	memset(p, 0xff, (n ? n : 1) * sizeof(uint32_t));
	return p;
}

static int same_sets(const struct parsa_nbrset *a, const struct parsa_nbrset *b)
{
	return a->k == b->k && a->n_feat == b->n_feat &&
	       memcmp(a->bits, b->bits,
		      (size_t)a->n_feat * a->words * sizeof(uint64_t)) == 0 &&
	       memcmp(a->size, b->size, a->k * sizeof(uint64_t)) == 0;
}

/* Some bits of an earlier placement (incremental start), or none. */
static void random_init(struct parsa_nbrset *S, struct parsa_rng *r, int on)
{
	if (!on)
		return;
	for (uint32_t v = 0; v < S->n_feat; v++)
		if (parsa_rng_below(r, 3) == 0)
			parsa_nbrset_add(S, v, (uint32_t)parsa_rng_below(r, S->k));
}

/* ------------------------------------------------------------- the split */

static void test_balance_split(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 7);
	for (int it = 0; it < 2000; it++) {
		uint32_t W = 1 + (uint32_t)parsa_rng_below(&r, 9);
		uint32_t k = 1 + (uint32_t)parsa_rng_below(&r, 70);
		uint64_t nw[9], avail[70], spare[70], caps[9 * 70], tot = 0;
		uint64_t room = 0;

		for (uint32_t i = 0; i < k; i++) {
			avail[i] = parsa_rng_below(&r, 50);
			room += avail[i];
		}
		for (uint32_t w = 0; w < W; w++) {
			nw[w] = room ? parsa_rng_below(&r, room / W + 1) : 0;
			tot += nw[w];
		}
		REQUIRE(tot <= room);
		parsa_balance_split(W, k, nw, avail, caps, spare);
		for (uint32_t i = 0; i < k; i++) {
			uint64_t s = 0;

			for (uint32_t w = 0; w < W; w++)
				s += caps[w * k + i];
			CHECK_INT(s, <=, avail[i]);
			if (W == 1 && nw[0] > 0)
				CHECK_INT(caps[i], ==, avail[i]);
		}
		for (uint32_t w = 0; w < W; w++) {
			uint64_t s = 0;

			for (uint32_t i = 0; i < k; i++)
				s += caps[w * k + i];
			CHECK_INT(s, >=, nw[w]);
		}
	}
}

static void test_lane_count(void)
{
	CHECK_INT(part_lanes_count(0, 1, 0), ==, 1);
	CHECK_INT(part_lanes_count(0, 15, 0), ==, 1);
	CHECK_INT(part_lanes_count(0, 16, 0), ==, 2);
	CHECK_INT(part_lanes_count(0, 31, 0), ==, 2);
	CHECK_INT(part_lanes_count(0, 32, 0), ==, 4);
	CHECK_INT(part_lanes_count(0, 63, 0), ==, 4);
	CHECK_INT(part_lanes_count(0, 64, 0), ==, 8);
	CHECK_INT(part_lanes_count(0, 100000, 0), ==, PART_LANES_AUTO_MAX);
	CHECK_INT(part_lanes_count(0, 100000, 2), ==, 1); /* warm-up */
	CHECK_INT(part_lanes_count(3, 100, 0), ==, 3);
	CHECK_INT(part_lanes_count(3, 2, 0), ==, 2);
	CHECK_INT(part_lanes_count(3, 100, 2), ==, 3); /* refused later */
}

/* ------------------------------------------------------------ the runs */

struct setup {
	struct parsa_graph g;
	struct parsa_partu_opts o;
	int init;
	uint64_t init_seed;
};

static void random_setup(struct setup *s, struct parsa_rng *r)
{
	uint32_t n = 1 + (uint32_t)parsa_rng_below(r, 400);
	uint32_t m = 1 + (uint32_t)parsa_rng_below(r, 300);
	static const uint32_t ks[] = {1, 2, 3, 5, 8, 16, 31, 64, 65, 100};

	/* (in the order gcc evaluated them as arguments: the same cases) */
	uint32_t e = 1 + (uint32_t)parsa_rng_below(r, 8);
	uint32_t d = (uint32_t)parsa_rng_below(r, 10);

	random_graph(&s->g, r, n, m, 1 + (uint32_t)parsa_rng_below(r, 12), d, e);
	parsa_partu_opts_default(&s->o);
	s->o.k = ks[parsa_rng_below(r, sizeof(ks) / sizeof(*ks))];
	s->o.blocks = 1 + (uint32_t)parsa_rng_below(r, 30);
	s->o.imbalance = parsa_rng_below(r, 2) ? 1.0 : 1.03;
	s->o.rule = parsa_rng_below(r, 4) ? PARSA_RULE_MIN_S
					  : PARSA_RULE_ROUND_ROBIN;
	if (parsa_rng_below(r, 5) == 0)
		s->o.block_imbalance = INFINITY;
	s->o.seed = parsa_rng_next(r);
	s->init = parsa_rng_below(r, 4) == 0;
	s->init_seed = parsa_rng_next(r);
}

/* A fixed clustered graph (seed, n, m, dmax, topics) with k and blocks. */
static void fixed_setup(struct setup *s, uint64_t seed, uint32_t n,
			uint32_t m, uint32_t dmax, uint32_t topics, uint32_t k,
			uint32_t blocks)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, seed);
	random_graph(&s->g, &r, n, m, dmax, 0, topics);
	parsa_partu_opts_default(&s->o);
	s->o.k = k;
	s->o.blocks = blocks;
	s->init = 0;
	s->init_seed = 0;
}

/* Run with L lanes on T threads (L == 0: parsa_partition_u). */
static int run(const struct setup *s, uint32_t L, uint32_t T, uint32_t *part,
	       struct parsa_nbrset *S, struct parsa_partu_stats *st)
{
	struct parsa_rng r;
	struct parsa_err err = {0};
	struct part_lanes_stats ls;
	int rc;

	if (parsa_nbrset_init(S, s->g.n_cols, s->o.k, NULL))
		return PARSA_ENOMEM;
	parsa_rng_seed(&r, s->init_seed);
	random_init(S, &r, s->init);
	memset(st, 0, sizeof(*st));
	if (L == 0)
		rc = parsa_partition_u(&s->g, &s->o, S, part, st, &err);
	else
		rc = part_lanes_partition_u(&s->g, &s->o, L, T, S, part, st,
					    &ls, &err);
	if (rc)
		fprintf(stderr, "run: %s\n", err.msg);
	if (rc == 0 && L > 0 && s->o.init_blocks == 0 && s->g.n_rows > 0) {
		/* rounds: the lead block, then ceil((b - 1) / L) */
		uint32_t b = parsa_partu_blocks(&s->o, s->g.n_rows);
		uint32_t lanes = L < b ? L : b;

		CHECK_INT(ls.lanes, ==, lanes);
		CHECK_INT(ls.threads, ==, T < lanes ? T : lanes);
		CHECK_INT(ls.rounds, ==, 1 + (b - 1 + lanes - 1) / lanes);
		CHECK(ls.cpu_work >= 0 && ls.cpu_span >= 0);
		CHECK(ls.cpu_span <= ls.cpu_work + 1e-6);
	}
	return rc;
}

static void test_one_lane_is_sequential(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 11);
	for (int it = 0; it < 150; it++) {
		struct setup s;
		struct parsa_nbrset S0, S1;
		struct parsa_partu_stats st0, st1;
		uint32_t *p0, *p1;

		random_setup(&s, &r);
		p0 = new_part(s.g.n_rows);
		p1 = new_part(s.g.n_rows);
		CHECK(run(&s, 0, 1, p0, &S0, &st0) == 0);
		CHECK(run(&s, 1, 1 + it % 3, p1, &S1, &st1) == 0);
		CHECK(memcmp(p0, p1, s.g.n_rows * sizeof(uint32_t)) == 0);
		CHECK(same_sets(&S0, &S1));
		CHECK_INT(st0.assigned, ==, st1.assigned);
		CHECK_INT(st0.new_bits, ==, st1.new_bits);
		CHECK_INT(st0.decrements, ==, st1.decrements);
		parsa_nbrset_release(&S0);
		parsa_nbrset_release(&S1);
		parsa_graph_release(&s.g);
		free(p0);
		free(p1);
	}
}

/* Every example placed, the cap kept, S = S_init ∪ N(U_i) (brute). */
static void check_valid(const struct setup *s, const uint32_t *part,
			const struct parsa_nbrset *S,
			const struct parsa_partu_stats *st)
{
	uint32_t n = s->g.n_rows, k = s->o.k;
	uint64_t *cnt = calloc(k, sizeof(uint64_t));
	uint64_t cap = parsa_balance_cap(n, k, s->o.imbalance);
	struct parsa_nbrset B;
	struct parsa_rng r;

	for (uint32_t u = 0; u < n; u++) {
		REQUIRE(part[u] < k);
		cnt[part[u]]++;
	}
	for (uint32_t i = 0; i < k; i++)
		CHECK_INT(cnt[i], <=, cap);
	CHECK_INT(st->assigned, ==, n);
	REQUIRE(parsa_nbrset_init(&B, s->g.n_cols, k, NULL) == 0);
	parsa_rng_seed(&r, s->init_seed);
	random_init(&B, &r, s->init);
	for (uint32_t u = 0; u < n; u++)
		for (uint64_t e = s->g.row_ptr[u]; e < s->g.row_ptr[u + 1]; e++)
			parsa_nbrset_add(&B, s->g.col[e], part[u]);
	CHECK(same_sets(&B, S));
	parsa_nbrset_release(&B);
	free(cnt);
}

static void test_threads_and_validity(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 12);
	for (int it = 0; it < 150; it++) {
		struct setup s;
		uint32_t L = 2 + (uint32_t)parsa_rng_below(&r, 6);
		struct parsa_nbrset S1;
		struct parsa_partu_stats st1;
		uint32_t *p1;

		random_setup(&s, &r);
		p1 = new_part(s.g.n_rows);
		CHECK(run(&s, L, 1, p1, &S1, &st1) == 0);
		check_valid(&s, p1, &S1, &st1);
		for (uint32_t T = 2; T <= 4; T++) {
			struct parsa_nbrset S;
			struct parsa_partu_stats st;
			uint32_t *p = new_part(s.g.n_rows);

			CHECK(run(&s, L, T, p, &S, &st) == 0);
			CHECK(memcmp(p, p1, s.g.n_rows * sizeof(uint32_t)) == 0);
			CHECK(same_sets(&S, &S1));
			CHECK_INT(st.new_bits, ==, st1.new_bits);
			CHECK_INT(st.decrements, ==, st1.decrements);
			parsa_nbrset_release(&S);
			free(p);
		}
		parsa_nbrset_release(&S1);
		parsa_graph_release(&s.g);
		free(p1);
	}
}

/* Blocks of at least 2048 rows: the lead block (a round of one lane) runs
 * on two of the threads (parsa_partu_block_par); the parts, the sets and
 * the counters are those of one thread, for L = 2 and 3 and 1-3 threads,
 * and of the sequential run for L = 1. */
static void test_lead_block_on_threads(void)
{
	struct setup s;
	struct parsa_nbrset S0, S1;
	struct parsa_partu_stats st0, st1;
	uint32_t *p0, *p1;

	fixed_setup(&s, 15, 30000, 6000, 16, 24, 20, 7);
	p0 = new_part(s.g.n_rows);
	p1 = new_part(s.g.n_rows);
	CHECK(run(&s, 0, 1, p0, &S0, &st0) == 0);
	CHECK(run(&s, 1, 2, p1, &S1, &st1) == 0);
	CHECK(memcmp(p0, p1, s.g.n_rows * sizeof(uint32_t)) == 0);
	CHECK(same_sets(&S0, &S1));
	parsa_nbrset_release(&S0);
	parsa_nbrset_release(&S1);
	for (uint32_t L = 2; L <= 3; L++) {
		CHECK(run(&s, L, 1, p0, &S0, &st0) == 0);
		for (uint32_t T = 2; T <= 3; T++) {
			CHECK(run(&s, L, T, p1, &S1, &st1) == 0);
			CHECK(memcmp(p0, p1, s.g.n_rows * sizeof(uint32_t)) == 0);
			CHECK(same_sets(&S0, &S1));
			CHECK_INT(st0.new_bits, ==, st1.new_bits);
			CHECK_INT(st0.decrements, ==, st1.decrements);
			parsa_nbrset_release(&S1);
		}
		parsa_nbrset_release(&S0);
	}
	parsa_graph_release(&s.g);
	free(p0);
	free(p1);
}

/* Clustered data: lanes lose little against one lane (a sanity bound,
 * not a benchmark: the connectivity within 10%). */
static void test_quality_close(void)
{
	struct setup s;
	struct parsa_nbrset S0, S4;
	struct parsa_partu_stats st0, st4;
	uint32_t *p0, *p4;
	uint64_t c0 = 0, c4 = 0;

	fixed_setup(&s, 13, 6000, 3000, 12, 16, 8, 40);
	p0 = new_part(s.g.n_rows);
	p4 = new_part(s.g.n_rows);
	CHECK(run(&s, 1, 1, p0, &S0, &st0) == 0);
	CHECK(run(&s, 4, 2, p4, &S4, &st4) == 0);
	for (uint32_t i = 0; i < s.o.k; i++) {
		c0 += S0.size[i];
		c4 += S4.size[i];
	}
	CHECK_INT(c4 * 10, <=, c0 * 11);
	parsa_nbrset_release(&S0);
	parsa_nbrset_release(&S4);
	parsa_graph_release(&s.g);
	free(p0);
	free(p4);
}

struct prog {
	uint64_t last, total, calls;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	p->last = done;
	p->total = total;
	p->calls++;
}

static void test_progress_cancel_and_errors(void)
{
	struct setup s;
	struct parsa_nbrset S, S0;
	struct parsa_partu_stats st, st0;
	struct parsa_err err = {0};
	struct prog pg = {0};
	atomic_int cancel = 1;
	uint32_t *p, *p0;

	fixed_setup(&s, 14, 500, 200, 8, 4, 4, 10);
	p = new_part(s.g.n_rows);
	p0 = new_part(s.g.n_rows);
	/* progress: 1 + ceil(9 / 3) = 4 rounds, the last at 10 of 10 */
	s.o.progress = on_progress;
	s.o.progress_arg = &pg;
	CHECK(run(&s, 3, 2, p, &S, &st) == 0);
	CHECK_INT(pg.calls, ==, 4);
	CHECK_INT(pg.last, ==, 10);
	CHECK_INT(pg.total, ==, 10);
	parsa_nbrset_release(&S);
	s.o.progress = NULL;
	/* cancel */
	s.o.cancel = &cancel;
	REQUIRE(parsa_nbrset_init(&S, s.g.n_cols, s.o.k, NULL) == 0);
	CHECK_INT(part_lanes_partition_u(&s.g, &s.o, 3, 2, &S, p, NULL, NULL, &err),
		  ==, PARSA_ECANCEL);
	s.o.cancel = NULL;
	/* 0 lanes; warm-up with lanes; mismatched sets */
	CHECK_INT(part_lanes_partition_u(&s.g, &s.o, 0, 2, &S, p, NULL, NULL, &err),
		  ==, PARSA_EINVAL);
	s.o.init_blocks = 2;
	memset(&err, 0, sizeof(err));
	CHECK_INT(part_lanes_partition_u(&s.g, &s.o, 2, 2, &S, p, NULL, NULL, &err),
		  ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "sequential");
	/* one lane with warm-up: the sequential run with it */
	CHECK(run(&s, 1, 2, p, &S0, &st0) == 0);
	parsa_nbrset_release(&S);
	CHECK(run(&s, 0, 1, p0, &S, &st) == 0);
	CHECK(memcmp(p, p0, s.g.n_rows * sizeof(uint32_t)) == 0);
	CHECK(same_sets(&S, &S0));
	parsa_nbrset_release(&S0);
	s.o.init_blocks = 0;
	s.o.k = 5; /* S has k = 4 */
	CHECK_INT(part_lanes_partition_u(&s.g, &s.o, 2, 2, &S, p, NULL, NULL, &err),
		  ==, PARSA_EINVAL);
	s.o.k = 4;
	s.o.imbalance = 0.5;
	CHECK_INT(part_lanes_partition_u(&s.g, &s.o, 2, 2, &S, p, NULL, NULL, &err),
		  ==, PARSA_EINVAL);
	parsa_nbrset_release(&S);
	parsa_graph_release(&s.g);
	free(p);
	free(p0);
}

int main(void)
{
	RUN(test_balance_split);
	RUN(test_lane_count);
	RUN(test_one_lane_is_sequential);
	RUN(test_threads_and_validity);
	RUN(test_lead_block_on_threads);
	RUN(test_quality_close);
	RUN(test_progress_cancel_and_errors);
	return harness_done();
}
