/*
 * test_partu: Algorithm 13 (parsa_partu_block) and the sequential driver
 * (parsa_partition_u): balance caps, the random block split, block
 * extraction, a brute-force replica of Algorithm 13 that must agree
 * exactly (picks, tie order, seeding, caps), clusters, the final neighbor
 * sets, balance for many k, determinism, warm-up, incremental sets and
 * the edge cases (empty rows, empty blocks, b > n, bad arguments).
 */
#include "harness.h"
#include "testpar.h"

#include <math.h>
#include <stdatomic.h>

#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_partu.h"
#include "parsa_rng.h"

/* ---------------------------------------------------------------- helpers */

/* n rows over m features, degree in [dmin, dmax]; empty_pct % empty rows. */
static void random_graph(struct parsa_graph *g, struct parsa_rng *r,
			 uint32_t n, uint32_t m, uint32_t dmin, uint32_t dmax,
			 uint32_t empty_pct)
{
	uint32_t *buf = malloc(((size_t)dmax + 1) * sizeof(uint32_t));

	parsa_graph_init(g);
	for (uint32_t u = 0; u < n; u++) {
		uint32_t d = dmin + (uint32_t)parsa_rng_below(r, dmax - dmin + 1);

		if (parsa_rng_below(r, 100) < empty_pct)
			d = 0;
		for (uint32_t j = 0; j < d; j++)
			buf[j] = (uint32_t)parsa_rng_below(r, m);
		CHECK(parsa_graph_add_row(g, buf, d, NULL) == 0);
	}
	g->n_cols = m; /* also features nobody uses */
	free(buf);
}

/* Two clusters: rows [0, h) use 3 of features 0..4, rows [h, 2h) 3 of
 * 5..9 (any two 3-subsets of a 5-set intersect). */
static void two_clusters(struct parsa_graph *g, uint32_t h, int interleave)
{
	parsa_graph_init(g);
	for (uint32_t u = 0; u < 2 * h; u++) {
		uint32_t c = interleave ? u % 2 : u / h, s = u % 5;
		uint32_t f[3] = {5 * c + s, 5 * c + (s + 1) % 5,
				 5 * c + (s + 3) % 5};

		CHECK(parsa_graph_add_row(g, f, 3, NULL) == 0);
	}
}

static uint32_t *new_part(uint32_t n)
{
	uint32_t *p = malloc((n ? n : 1) * sizeof(uint32_t));

	memset(p, 0xff, (n ? n : 1) * sizeof(uint32_t));
	return p;
}

/* S == S0 ∪ N(U_i) exactly, every example placed, counts within cap. */
static void check_result(const struct parsa_graph *g, uint32_t k,
			 double imb, const struct parsa_nbrset *S0,
			 const struct parsa_nbrset *S, const uint32_t *part)
{
	struct parsa_nbrset want;
	uint64_t *count = calloc(k, sizeof(uint64_t));
	uint64_t cap = parsa_balance_cap(g->n_rows, k, imb);

	REQUIRE(parsa_nbrset_init(&want, g->n_cols, k, NULL) == 0);
	parsa_nbrset_copy(&want, S0);
	for (uint32_t u = 0; u < g->n_rows; u++) {
		CHECK(part[u] < k);
		if (part[u] >= k)
			continue;
		count[part[u]]++;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
			parsa_nbrset_add(&want, g->col[e], part[u]);
	}
	for (uint32_t i = 0; i < k; i++) {
		CHECK_INT(count[i], <=, cap);
		CHECK_INT(S->size[i], ==, want.size[i]);
	}
	CHECK(memcmp(want.bits, S->bits, (size_t)g->n_cols * S->words *
		     sizeof(uint64_t)) == 0);
	parsa_nbrset_release(&want);
	free(count);
}

/* Run the driver with a fresh empty S; checks the result; returns part. */
static uint32_t *run_checked(const struct parsa_graph *g,
			     const struct parsa_partu_opts *o,
			     struct parsa_partu_stats *st)
{
	struct parsa_nbrset S, S0;
	uint32_t *part = new_part(g->n_rows);
	struct parsa_err err;
	int rc;

	parsa_err_clear(&err);
	if (parsa_nbrset_init(&S, g->n_cols, o->k, NULL) ||
	    parsa_nbrset_init(&S0, g->n_cols, o->k, NULL)) {
		CHECK(0 && "nbrset init");
		return part;
	}
	rc = parsa_partition_u(g, o, &S, part, st, &err);
	CHECK_INT(rc, ==, 0);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	else
		check_result(g, o->k, o->imbalance, &S0, &S, part);
	parsa_nbrset_release(&S);
	parsa_nbrset_release(&S0);
	return part;
}

/* ----------------------------------------------------------------- basics */

static void test_balance_cap(void)
{
	CHECK_INT(parsa_balance_cap(100, 4, 1.03), ==, 25);
	CHECK_INT(parsa_balance_cap(100, 4, 1.0), ==, 25);
	CHECK_INT(parsa_balance_cap(10, 3, 1.0), ==, 4);
	CHECK_INT(parsa_balance_cap(10, 3, 1.2), ==, 4);  /* floor(4.8), ceil(4) */
	CHECK_INT(parsa_balance_cap(1000, 3, 1.03), ==, 344);
	CHECK_INT(parsa_balance_cap(100, 4, 2.0), ==, 50);
	CHECK_INT(parsa_balance_cap(0, 4, 1.03), ==, 0);
	CHECK_INT(parsa_balance_cap(7, 1, 1.03), ==, 7);
	CHECK_INT(parsa_balance_cap(5, 16, 1.03), ==, 1);
	CHECK_INT(parsa_balance_cap(5, 16, 0.5), ==, 1);  /* < 1 acts as 1 */
	CHECK_INT(parsa_balance_cap(100, 4, 1e300), ==, 100);
	/* both bounds of the header hold for many n, k, imb */
	for (uint64_t n = 0; n < 300; n += 7)
		for (uint32_t k = 1; k < 40; k += 3)
			for (double imb = 1.0; imb < 1.6; imb += 0.07) {
				uint64_t cap = parsa_balance_cap(n, k, imb);
				uint64_t q = (n + k - 1) / k;

				CHECK_INT(cap, >=, q);
				if (cap > q) {
					CHECK(cap <= ceil(imb * (double)n / k));
					CHECK((double)cap / (double)q <= imb);
				}
			}
}

static void test_balance_init(void)
{
	struct parsa_balance b;
	struct parsa_err err;

	REQUIRE(parsa_balance_init(&b, 5, 100, PARSA_RULE_MIN_S, 1.03, NULL) == 0);
	CHECK_INT(b.cap, ==, 20);
	for (uint32_t i = 0; i < 5; i++)
		CHECK(b.count[i] == 0 && b.s_size[i] == 0);
	parsa_balance_release(&b);
	parsa_balance_release(NULL);
	parsa_err_clear(&err);
	CHECK_INT(parsa_balance_init(&b, 0, 10, PARSA_RULE_MIN_S, 1.0, &err), ==,
		  PARSA_EINVAL);
	CHECK_INT(parsa_balance_init(&b, 2, 10, PARSA_RULE_MIN_S, 0.9, NULL), ==,
		  PARSA_EINVAL);
	CHECK_INT(parsa_balance_init(&b, 2, 10, PARSA_RULE_MIN_S, NAN, NULL), ==,
		  PARSA_EINVAL);
	CHECK_INT(parsa_balance_init(&b, 2, 10, (enum parsa_rule)7, 1.0, NULL), ==,
		  PARSA_EINVAL);
	CHECK(err.msg[0] != 0);
}

static void test_opts_default(void)
{
	struct parsa_partu_opts o;

	memset(&o, 0xab, sizeof(o));
	parsa_partu_opts_default(&o);
	CHECK_INT(o.k, ==, 16);
	CHECK_INT(o.blocks, ==, 0); /* auto */
	CHECK_INT(o.init_blocks, <=, parsa_partu_blocks(&o, 1000));
	CHECK_INT(parsa_partu_blocks(&o, 1000), ==, PARSA_AUTO_MIN_BLOCKS);
	CHECK_INT(parsa_partu_blocks(&o, 3), ==, 3);
	CHECK_INT(parsa_partu_blocks(&o, 10 * PARSA_AUTO_BLOCK_ROWS + 1), ==, 11);
	o.blocks = 9;
	CHECK_INT(parsa_partu_blocks(&o, 1000), ==, 9);
	CHECK_INT(parsa_partu_blocks(&o, 4), ==, 4);
	CHECK(o.imbalance >= 1.0);
	CHECK(o.rule == PARSA_RULE_MIN_S || o.rule == PARSA_RULE_ROUND_ROBIN);
	CHECK(o.progress == NULL);
}

/* Blocks sized to the data: k * rows * 6 * PARSA_FIT_SHARE <= fit_bytes,
 * within PARSA_FIT_MIN_ROWS .. PARSA_AUTO_BLOCK_ROWS; only the automatic
 * count; 0 bytes: as before. */
static void test_fit_rows(void)
{
	struct parsa_partu_opts o;
	uint64_t csr10m = 45599388; /* memory.csr_bytes of the 10M set */

	parsa_partu_opts_default(&o);
	CHECK_INT(parsa_partu_fit_rows(64, 0), ==, PARSA_AUTO_BLOCK_ROWS);
	/* small data keeps the default blocks */
	CHECK_INT(parsa_partu_fit_rows(64, 1), ==, PARSA_AUTO_BLOCK_ROWS);
	CHECK_INT(parsa_partu_fit_rows(64, PARSA_FIT_MIN_BYTES - 1), ==,
		  PARSA_AUTO_BLOCK_ROWS);
	CHECK_INT(parsa_partu_fit_rows(1024, PARSA_FIT_MIN_BYTES), ==,
		  PARSA_FIT_MIN_ROWS);
	CHECK_INT(parsa_partu_fit_rows(64, UINT64_MAX), ==,
		  PARSA_AUTO_BLOCK_ROWS);
	/* the rule at the 10M set: 7,421 rows at k = 64, 68 blocks */
	CHECK_INT(parsa_partu_fit_rows(64, csr10m), ==, 7421);
	CHECK((uint64_t)64 * 7421 * 6 * PARSA_FIT_SHARE <= csr10m);
	CHECK((uint64_t)64 * 7422 * 6 * PARSA_FIT_SHARE > csr10m);
	o.k = 64;
	o.fit_bytes = csr10m;
	CHECK_INT(parsa_partu_blocks(&o, 500000), ==, 68);
	/* the 100M set (434.9 MiB) at k = 64: the limit is above the
	 * automatic block, nothing changes */
	o.fit_bytes = 456000000;
	CHECK_INT(parsa_partu_blocks(&o, 5000000), ==,
		  (5000000 + PARSA_AUTO_BLOCK_ROWS - 1) / PARSA_AUTO_BLOCK_ROWS);
	/* at the smallest fitted size and a large k: blocks of
	 * PARSA_FIT_MIN_ROWS, never fewer than the minimum count */
	o.k = 1024;
	o.fit_bytes = PARSA_FIT_MIN_BYTES;
	CHECK_INT(parsa_partu_blocks(&o, 1000), ==, PARSA_AUTO_MIN_BLOCKS);
	CHECK_INT(parsa_partu_blocks(&o, 6 * PARSA_FIT_MIN_ROWS), ==,
		  PARSA_AUTO_MIN_BLOCKS);
	CHECK_INT(parsa_partu_blocks(&o, 6 * PARSA_FIT_MIN_ROWS + 1), ==, 7);
	/* small data (a few MiB): the default blocks, as before the rule */
	o.k = 16;
	o.fit_bytes = 100000;
	CHECK_INT(parsa_partu_blocks(&o, 200000), ==,
		  (200000 + PARSA_AUTO_BLOCK_ROWS - 1) / PARSA_AUTO_BLOCK_ROWS);
	/* an explicit count is kept */
	o.blocks = 9;
	CHECK_INT(parsa_partu_blocks(&o, 500000), ==, 9);
}

static void test_blocks_split(void)
{
	uint32_t perm[100], perm2[100], start[151], start2[151], seen[100];

	for (uint32_t b = 1; b <= 150; b += 7) {
		REQUIRE(parsa_blocks_split(100, b, 9, perm, start, NULL) == 0);
		memset(seen, 0, sizeof(seen));
		for (uint32_t i = 0; i < 100; i++)
			seen[perm[i]]++;
		for (uint32_t i = 0; i < 100; i++)
			CHECK_INT(seen[i], ==, 1);
		CHECK_INT(start[0], ==, 0);
		CHECK_INT(start[b], ==, 100);
		for (uint32_t j = 0; j < b; j++) {
			uint32_t len = start[j + 1] - start[j];

			CHECK(start[j + 1] >= start[j]);
			CHECK(len == 100 / b || len == 100 / b + 1);
		}
		REQUIRE(parsa_blocks_split(100, b, 9, perm2, start2, NULL) == 0);
		CHECK(memcmp(perm, perm2, sizeof(perm)) == 0);
	}
	parsa_blocks_split(100, 4, 10, perm2, start2, NULL);
	CHECK(memcmp(perm, perm2, sizeof(perm)) != 0);
	CHECK_INT(parsa_blocks_split(100, 0, 1, perm, start, NULL), ==,
		  PARSA_EINVAL);
	REQUIRE(parsa_blocks_split(0, 3, 1, perm, start, NULL) == 0);
	CHECK(start[0] == 0 && start[3] == 0);
}

/* ------------------------------------------------------------- extraction */

static void check_block(const struct parsa_block *b,
			const struct parsa_graph *g, const uint32_t *rows,
			uint32_t n)
{
	CHECK_INT(b->g.n_rows, ==, n);
	CHECK(parsa_graph_validate(&b->g, NULL) == 0);
	for (uint32_t l = 1; l < b->g.n_cols; l++)
		CHECK(b->feat[l - 1] < b->feat[l]);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t r = rows[j];

		CHECK_INT(b->rows[j], ==, r);
		CHECK_INT(parsa_graph_degree(&b->g, j), ==, parsa_graph_degree(g, r));
		for (uint64_t e = 0; e < parsa_graph_degree(g, r); e++)
			CHECK_INT(b->feat[b->g.col[b->g.row_ptr[j] + e]], ==,
				  g->col[g->row_ptr[r] + e]);
	}
}

static void test_block_extract(void)
{
	struct parsa_graph g;
	struct parsa_rng r;
	struct parsa_block b;
	uint32_t rows[400], *map;
	struct parsa_err err;

	parsa_rng_seed(&r, 3);
	random_graph(&g, &r, 400, 3000, 0, 30, 10);
	map = malloc(g.n_cols * sizeof(uint32_t));
	memset(map, 0xff, g.n_cols * sizeof(uint32_t));
	parsa_block_init(&b);
	for (uint32_t t = 0; t < 20; t++) {
		uint32_t n = (uint32_t)parsa_rng_below(&r, 401);

		for (uint32_t j = 0; j < n; j++)
			rows[j] = (uint32_t)parsa_rng_below(&r, g.n_rows);
		REQUIRE(parsa_block_extract(&b, &g, rows, n, map, NULL) == 0);
		check_block(&b, &g, rows, n);
		for (uint32_t v = 0; v < g.n_cols; v++)
			CHECK(map[v] == UINT32_MAX);
	}
	REQUIRE(parsa_block_extract(&b, &g, rows, 0, map, NULL) == 0);
	CHECK(b.g.n_rows == 0 && b.g.n_cols == 0);
	CHECK_INT(parsa_graph_nnz(&b.g), ==, 0);
	rows[0] = 1;
	rows[1] = 400;
	parsa_err_clear(&err);
	CHECK_INT(parsa_block_extract(&b, &g, rows, 2, map, &err), ==,
		  PARSA_EINVAL);
	for (uint32_t v = 0; v < g.n_cols; v++)
		CHECK(map[v] == UINT32_MAX);
	parsa_block_release(&b);
	parsa_block_release(NULL);
	parsa_graph_release(&g);
	free(map);
}

/* ------------------------------------------- brute-force Algorithm 13 */

/*
 * The replica: eager removal, the costlist's tie order as stamps (most
 * recent decrement first, then lowest row), the rules and caps of the
 * header, and farthest-first seeding of empty partitions.  O(n^2 k).
 */
struct replica {
	uint32_t n, k;
	uint32_t *cost;  /* k * n */
	uint64_t *stamp; /* k * n */
	uint64_t *ov, clock;
	uint8_t *live;
	uint64_t *bc;
};

static int before(const struct replica *x, uint32_t i, uint32_t a, uint32_t b)
{
	const uint32_t *c = x->cost + (size_t)i * x->n;
	const uint64_t *s = x->stamp + (size_t)i * x->n;

	if (c[a] != c[b])
		return c[a] < c[b];
	if (s[a] != s[b])
		return s[a] > s[b];
	return a < b;
}

static uint32_t replica_take(const struct replica *x, uint32_t i, int seed)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t u = 0; u < x->n; u++) {
		if (!x->live[u])
			continue;
		if (best == UINT32_MAX)
			best = u;
		else if (seed && x->cost[(size_t)i * x->n + u] ==
					 x->cost[(size_t)i * x->n + best]) {
			if (x->ov[u] < x->ov[best] ||
			    (x->ov[u] == x->ov[best] && before(x, i, u, best)))
				best = u;
		} else if (before(x, i, u, best)) {
			best = u;
		}
	}
	return best;
}

static uint32_t replica_pick(struct parsa_balance *bal, const uint64_t *bc,
			     uint64_t bcap)
{
	for (int pass = 0; pass < 2; pass++, bcap = UINT64_MAX) {
		uint32_t best = UINT32_MAX;

		for (uint32_t s = 0; s < bal->k; s++) {
			uint32_t i = bal->rule == PARSA_RULE_ROUND_ROBIN
					     ? (uint32_t)((bal->rr + s) % bal->k)
					     : s;

			if (bal->count[i] >= bal->cap || bc[i] >= bcap)
				continue;
			if (bal->rule == PARSA_RULE_ROUND_ROBIN) {
				bal->rr = (i + 1) % bal->k;
				return i;
			}
			if (best == UINT32_MAX || bal->s_size[i] < bal->s_size[best] ||
			    (bal->s_size[i] == bal->s_size[best] &&
			     bal->count[i] < bal->count[best]))
				best = i;
		}
		if (best != UINT32_MAX)
			return best;
	}
	return UINT32_MAX;
}

/* Feature l newly in S_i: each live row using it costs one less in i
 * (and is the most recent decrement there). */
static void replica_touch(struct replica *x, const struct parsa_graph *g,
			  uint32_t i, uint32_t l)
{
	for (uint32_t w = 0; w < x->n; w++) {
		int uses = 0;

		for (uint64_t f = g->row_ptr[w]; f < g->row_ptr[w + 1]; f++)
			uses |= g->col[f] == l;
		if (!x->live[w] || !uses)
			continue;
		x->cost[(size_t)i * x->n + w]--;
		x->stamp[(size_t)i * x->n + w] = ++x->clock;
		x->ov[w]++;
	}
}

static void replica_add(struct replica *x, const struct parsa_graph *g,
			struct parsa_nbrset *S, struct parsa_balance *bal,
			uint32_t i, uint32_t u)
{
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t l = g->col[e];

		if (!parsa_nbrset_add(S, l, i))
			continue;
		bal->s_size[i]++;
		replica_touch(x, g, i, l);
	}
}

static void replica_init(struct replica *x, const struct parsa_graph *g,
			 const struct parsa_nbrset *S)
{
	x->n = g->n_rows;
	x->k = S->k;
	x->cost = calloc((size_t)x->n * x->k + 1, sizeof(uint32_t));
	x->stamp = calloc((size_t)x->n * x->k + 1, sizeof(uint64_t));
	x->ov = calloc(x->n + 1, sizeof(uint64_t));
	x->live = calloc(x->n + 1, 1);
	x->bc = calloc(x->k, sizeof(uint64_t));
	x->clock = 0;
	for (uint32_t u = 0; u < x->n; u++) {
		x->live[u] = 1;
		for (uint32_t i = 0; i < x->k; i++)
			for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
				int in = parsa_nbrset_has(S, g->col[e], i);

				x->cost[(size_t)i * x->n + u] += !in;
				x->ov[u] += (uint64_t)in;
			}
	}
}

static void replica_free(struct replica *x)
{
	free(x->cost);
	free(x->stamp);
	free(x->ov);
	free(x->live);
	free(x->bc);
}

/*
 * Bits set elsewhere, brought into a running block: before row at[q] is
 * placed, S(l[q][j]) |= mask[q][j] for j < nf[q] (parsa_partu_block_merge).
 */
struct merges {
	uint32_t count;
	uint32_t at[4], nf[4], l[4][3];
	uint64_t mask[4][3][3];
};

/* The replica's merge: each new bit lowers the live users' cost, as a
 * decrement (stamp, ov) without touching s_size. */
static void replica_merge(struct replica *x, const struct parsa_graph *g,
			  struct parsa_nbrset *S, uint32_t l, const uint64_t *mask)
{
	for (uint32_t i = 0; i < S->k; i++) {
		if ((mask[i / 64] >> (i % 64) & 1) && parsa_nbrset_add(S, l, i))
			replica_touch(x, g, i, l);
	}
}

static void replica_merges(struct replica *x, const struct parsa_graph *g,
			   struct parsa_nbrset *S, const struct merges *mg,
			   uint32_t *q, uint32_t t)
{
	for (; mg && *q < mg->count && mg->at[*q] <= t; ++*q)
		for (uint32_t j = 0; j < mg->nf[*q]; j++)
			replica_merge(x, g, S, mg->l[*q][j], mg->mask[*q][j]);
}

static void replica_block(const struct parsa_graph *g, struct parsa_nbrset *S,
			  struct parsa_balance *bal, uint32_t *part,
			  const struct merges *mg)
{
	struct replica x;
	uint64_t bcap;
	uint32_t q = 0;

	replica_init(&x, g, S);
	bcap = isinf(bal->block_imbalance)
		       ? UINT64_MAX
		       : (uint64_t)ceil(bal->block_imbalance * g->n_rows / bal->k);
	for (uint32_t t = 0; t < g->n_rows; t++) {
		double f = bal->block_imbalance > 0 ? bal->block_imbalance
						    : bal->imbalance;
		uint64_t pace = isinf(f) ? UINT64_MAX
					 : (uint64_t)floor(f * (t + 1.0) / bal->k) + 1;
		uint32_t i, u;

		replica_merges(&x, g, S, mg, &q, t);
		i = replica_pick(bal, x.bc, pace < bcap ? pace : bcap);
		u = replica_take(&x, i, bal->s_size[i] == 0);

		part[u] = i;
		x.live[u] = 0;
		bal->count[i]++;
		x.bc[i]++;
		replica_add(&x, g, S, bal, i, u);
	}
	replica_merges(&x, g, S, mg, &q, UINT32_MAX);
	replica_free(&x);
}

/* Random merges at increasing points of a block of n rows (words <= 3). */
static void random_merges(struct merges *mg, struct parsa_rng *r, uint32_t n,
			  uint32_t n_feat, uint32_t k)
{
	memset(mg, 0, sizeof(*mg));
	mg->count = n_feat ? 1 + (uint32_t)parsa_rng_below(r, 4) : 0;
	for (uint32_t q = 0; q < mg->count; q++) {
		uint32_t lo = q ? mg->at[q - 1] : 0;

		mg->at[q] = lo + (uint32_t)parsa_rng_below(r, n - lo + 1);
		mg->nf[q] = 1 + (uint32_t)parsa_rng_below(r, 3);
		for (uint32_t j = 0; j < mg->nf[q]; j++) {
			mg->l[q][j] = (uint32_t)parsa_rng_below(r, n_feat);
			for (uint32_t b = 0; b < 2; b++) {
				uint32_t i = (uint32_t)parsa_rng_below(r, k);

				mg->mask[q][j][i / 64] |= 1ULL << (i % 64);
			}
		}
	}
}

/* parsa_partu_block_begin, then _run to each merge point and the merges,
 * then _run to the end. */
static int stepped_block(struct parsa_partu_ctx *ctx,
			 const struct parsa_block *blk, struct parsa_nbrset *S,
			 struct parsa_balance *bal, uint32_t *part,
			 const struct merges *mg, struct parsa_err *err)
{
	int rc = parsa_partu_block_begin(ctx, blk, S, bal, err);

	for (uint32_t q = 0; rc == 0 && q < mg->count; q++) {
		parsa_partu_block_run(ctx, blk, S, bal, part, mg->at[q], NULL);
		for (uint32_t j = 0; j < mg->nf[q]; j++)
			parsa_partu_block_merge(ctx, S, mg->l[q][j], mg->mask[q][j]);
	}
	if (rc == 0)
		parsa_partu_block_run(ctx, blk, S, bal, part, blk->g.n_rows, NULL);
	return rc;
}

/* One random block, run both ways from identical state. */
/* One block's inputs and two results (parsa_partu vs the replica). */
struct twin {
	struct parsa_graph g;
	struct parsa_block blk;
	struct parsa_nbrset S1, S2;
	struct parsa_balance b1, b2;
	uint32_t *rows, *map, *p1, *p2;
};

static void twin_release(struct twin *w)
{
	parsa_balance_release(&w->b1);
	parsa_balance_release(&w->b2);
	parsa_nbrset_release(&w->S1);
	parsa_nbrset_release(&w->S2);
	parsa_block_release(&w->blk);
	parsa_graph_release(&w->g);
	free(w->rows);
	free(w->map);
	free(w->p1);
	free(w->p2);
}

static void replica_case(uint64_t seed)
{
	struct parsa_rng r;
	struct twin w;
	struct parsa_graph *g = &w.g;
	struct parsa_block *blk = &w.blk;
	struct parsa_nbrset *S1 = &w.S1, *S2 = &w.S2;
	struct parsa_balance *b1 = &w.b1, *b2 = &w.b2;
	struct parsa_partu_ctx *ctx;
	uint32_t n, k, m, *rows, *map, *p1, *p2;
	const double imbs[] = {1.0, 1.03, 1.3, 2.0};
	enum parsa_rule rule;
	double imb;
	struct parsa_err err;
	struct merges mg;
	int stepped = seed % 2 == 0, rc;

	parsa_rng_seed(&r, seed);
	n = 1 + (uint32_t)parsa_rng_below(&r, 40);
	k = 1 + (uint32_t)parsa_rng_below(&r, seed % 5 == 0 ? 130 : 9);
	m = 1 + (uint32_t)parsa_rng_below(&r, 30);
	rule = (enum parsa_rule)parsa_rng_below(&r, 2);
	imb = imbs[parsa_rng_below(&r, 4)];
	random_graph(g, &r, n + 5, m, 0, 6, 10);
	rows = w.rows = malloc(n * sizeof(uint32_t));
	map = w.map = malloc(m * sizeof(uint32_t));
	memset(map, 0xff, m * sizeof(uint32_t));
	for (uint32_t j = 0; j < n; j++)
		rows[j] = (uint32_t)parsa_rng_below(&r, n + 5);
	parsa_block_init(blk);
	REQUIRE(parsa_block_extract(blk, g, rows, n, map, NULL) == 0);
	REQUIRE(parsa_nbrset_init(S1, blk->g.n_cols, k, NULL) == 0);
	REQUIRE(parsa_nbrset_init(S2, blk->g.n_cols, k, NULL) == 0);
	for (uint32_t t = (uint32_t)parsa_rng_below(&r, 3 * m * k / 4 + 1);
	     t && blk->g.n_cols; t--) {
		/* (in the order gcc evaluated them as arguments: the same cases) */
		uint32_t i = (uint32_t)parsa_rng_below(&r, k);

		parsa_nbrset_add(S1, (uint32_t)parsa_rng_below(&r, blk->g.n_cols), i);
	}
	parsa_nbrset_copy(S2, S1);
	REQUIRE(parsa_balance_init(b1, k, 3 * n, rule, imb, NULL) == 0);
	REQUIRE(parsa_balance_init(b2, k, 3 * n, rule, imb, NULL) == 0);
	for (uint32_t i = 0; i < k; i++) {
		/* global sizes >= the slice's; some counts already used */
		uint64_t used = parsa_rng_below(&r, 2); /* (in the order gcc evaluated them as arguments: the same cases) */

		b1->s_size[i] = b2->s_size[i] = S1->size[i] + parsa_rng_below(&r, 3) * used;
		b1->count[i] = b2->count[i] = parsa_rng_below(&r, b1->cap / 2 + 1);
	}
	b1->rr = b2->rr = parsa_rng_below(&r, k);
	if (seed % 3 == 1)
		b1->block_imbalance = b2->block_imbalance = 1.5;
	else if (seed % 3 == 2)
		b1->block_imbalance = b2->block_imbalance = INFINITY;
	p1 = w.p1 = new_part(n);
	p2 = w.p2 = new_part(n);
	REQUIRE(parsa_partu_ctx_create(&ctx, k, (uint32_t)parsa_rng_below(&r, n + 1),
				       NULL) == 0);
	parsa_err_clear(&err);
	random_merges(&mg, &r, n, blk->g.n_cols, k);
	rc = stepped ? stepped_block(ctx, blk, S1, b1, p1, &mg, &err)
		     : parsa_partu_block(ctx, blk, S1, b1, p1, NULL, &err);
	if (rc == 0) {
		replica_block(&blk->g, S2, b2, p2, stepped ? &mg : NULL);
		CHECK(memcmp(p1, p2, n * sizeof(uint32_t)) == 0);
		CHECK(memcmp(S1->bits, S2->bits, (size_t)S1->n_feat * S1->words * 8) == 0);
		CHECK(memcmp(b1->count, b2->count, k * sizeof(uint64_t)) == 0);
		CHECK(memcmp(b1->s_size, b2->s_size, k * sizeof(uint64_t)) == 0);
		CHECK_INT(b1->rr, ==, b2->rr);
	} else {
		CHECK_CONTAINS(err.msg, "room");
	}
	if (harness_cur_failed)
		fprintf(stderr, "  replica case seed %llu (n=%u k=%u rule=%d imb=%g"
			" merges %u)\n", (unsigned long long)seed, n, k, (int)rule,
			imb, stepped ? mg.count : 0);
	parsa_partu_ctx_destroy(ctx);
	twin_release(&w);
}

/*
 * Cost lists wider than 16 bits: a block with a row of 65,540 features
 * of its own (cost 65,540 in every list: kept in 16 bits it would read as
 * 4, among the cheapest rows) between two narrow blocks, on one context
 * (the lists widen on the way and stay wide), each against the replica.
 */
static void test_wide_lists_match_replica(void)
{
	struct parsa_rng r;
	struct parsa_partu_ctx *ctx;
	uint32_t k = 4, *buf = malloc(65540 * sizeof(uint32_t));

	REQUIRE(buf != NULL);
	parsa_rng_seed(&r, 99);
	REQUIRE(parsa_partu_ctx_create(&ctx, k, 8, NULL) == 0);
	for (int round = 0; round < 3 && !harness_cur_failed; round++) {
		struct twin w;
		uint32_t n = 30, m = round == 1 ? 300 + 65540 : 300;
		uint32_t low = 0; /* local ids of features < 300 */

		parsa_graph_init(&w.g);
		for (uint32_t u = 0; u < n; u++) {
			uint32_t d = round == 1 && u == 7 ? 65540
				     : 1 + (uint32_t)parsa_rng_below(&r, 12);

			for (uint32_t j = 0; j < d; j++)
				buf[j] = d == 65540 ? 300 + j
				       : (uint32_t)parsa_rng_below(&r, 300);
			REQUIRE(parsa_graph_add_row(&w.g, buf, d, NULL) == 0);
		}
		w.g.n_cols = m;
		w.rows = malloc(n * sizeof(uint32_t));
		w.map = malloc(m * sizeof(uint32_t));
		w.p1 = new_part(n);
		w.p2 = new_part(n);
		memset(w.map, 0xff, m * sizeof(uint32_t));
		for (uint32_t j = 0; j < n; j++)
			w.rows[j] = j;
		parsa_block_init(&w.blk);
		REQUIRE(parsa_block_extract(&w.blk, &w.g, w.rows, n, w.map,
					    NULL) == 0);
		REQUIRE(parsa_nbrset_init(&w.S1, w.blk.g.n_cols, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&w.S2, w.blk.g.n_cols, k, NULL) == 0);
		while (low < w.blk.g.n_cols && w.blk.feat[low] < 300)
			low++;
		for (uint32_t t = 0; t < 200 && low; t++) {
			/* (in the order gcc evaluated them as arguments: the same cases) */
			uint32_t i = (uint32_t)parsa_rng_below(&r, k);

			parsa_nbrset_add(&w.S1, (uint32_t)parsa_rng_below(&r, low), i);
		}
		parsa_nbrset_copy(&w.S2, &w.S1);
		REQUIRE(parsa_balance_init(&w.b1, k, n, PARSA_RULE_MIN_S, 1.03,
					   NULL) == 0);
		REQUIRE(parsa_balance_init(&w.b2, k, n, PARSA_RULE_MIN_S, 1.03,
					   NULL) == 0);
		for (uint32_t i = 0; i < k; i++)
			w.b1.s_size[i] = w.b2.s_size[i] = w.S1.size[i];
		CHECK_INT(parsa_partu_block(ctx, &w.blk, &w.S1, &w.b1, w.p1,
					    NULL, NULL), ==, 0);
		replica_block(&w.blk.g, &w.S2, &w.b2, w.p2, NULL);
		CHECK(memcmp(w.p1, w.p2, n * sizeof(uint32_t)) == 0);
		CHECK(memcmp(w.S1.bits, w.S2.bits,
			     (size_t)w.S1.n_feat * w.S1.words * 8) == 0);
		twin_release(&w);
	}
	parsa_partu_ctx_destroy(ctx);
	free(buf);
}

static void test_block_matches_replica(void)
{
	for (uint64_t seed = 1; seed <= 600 && !harness_cur_failed; seed++)
		replica_case(seed);
}

/* --------------------------------------------------------------- quality */

static void test_two_clusters(void)
{
	for (int rule = 0; rule < 2; rule++)
		for (int inter = 0; inter < 2; inter++) {
			struct parsa_graph g;
			struct parsa_partu_opts o;
			uint32_t *part;

			two_clusters(&g, 10, inter);
			parsa_partu_opts_default(&o);
			o.k = 2;
			o.blocks = 1;
			o.rule = (enum parsa_rule)rule;
			part = run_checked(&g, &o, NULL);
			for (uint32_t u = 0; u < 20; u++) {
				uint32_t c = inter ? u % 2 : u / 10;
				uint32_t u0 = inter ? c : 10 * c; /* first of c */

				CHECK_INT(part[u], ==, part[u0]);
			}
			CHECK(part[0] != part[inter ? 1 : 10]);
			free(part);
			parsa_graph_release(&g);
		}
}

/* More clusters than parts would allow mixing: k = 4 clusters of 25, b=1. */
static void test_four_clusters(void)
{
	struct parsa_graph g;
	struct parsa_partu_opts o;
	uint32_t *part;

	parsa_graph_init(&g);
	for (uint32_t u = 0; u < 100; u++) {
		uint32_t c = (u * 7) % 4, s = u % 5;
		uint32_t f[3] = {5 * c + s, 5 * c + (s + 1) % 5,
				 5 * c + (s + 3) % 5};

		CHECK(parsa_graph_add_row(&g, f, 3, NULL) == 0);
	}
	for (int rule = 0; rule < 2; rule++) {
		parsa_partu_opts_default(&o);
		o.k = 4;
		o.blocks = 1;
		o.imbalance = 1.0;
		o.rule = (enum parsa_rule)rule;
		part = run_checked(&g, &o, NULL);
		for (uint32_t u = 4; u < 100; u++)
			CHECK_INT(part[u], ==, part[u % 4]);
		free(part);
	}
	parsa_graph_release(&g);
}

/* ------------------------------------------------------------ the driver */

static void test_final_sets_exact(void)
{
	for (uint64_t seed = 1; seed <= 150 && !harness_cur_failed; seed++) {
		struct parsa_rng r;
		struct parsa_graph g;
		struct parsa_partu_opts o;
		struct parsa_partu_stats st = {0};
		uint32_t *part;

		parsa_rng_seed(&r, seed);
		{
			/* (in the order gcc evaluated them as arguments: the same cases) */
			uint32_t m = 1 + (uint32_t)parsa_rng_below(&r, 40);

			random_graph(&g, &r, 1 + (uint32_t)parsa_rng_below(&r, 60),
				     m, 0, 8, 10);
		}
		parsa_partu_opts_default(&o);
		o.k = 1 + (uint32_t)parsa_rng_below(&r, 70);
		o.blocks = 1 + (uint32_t)parsa_rng_below(&r, 10);
		o.init_blocks = (uint32_t)parsa_rng_below(&r, o.blocks + 1);
		o.rule = (enum parsa_rule)parsa_rng_below(&r, 2);
		o.imbalance = 1.0 + 0.1 * (double)parsa_rng_below(&r, 5);
		o.block_imbalance = seed % 3 == 0 ? 0 : (seed % 3 == 1 ? 1.5 : INFINITY);
		o.seed = seed;
		part = run_checked(&g, &o, &st);
		CHECK_INT(st.assigned, ==, g.n_rows);
		free(part);
		parsa_graph_release(&g);
	}
}

static void test_balance_many_k(void)
{
	const uint32_t ks[] = {2, 3, 7, 16, 64, 1024};

	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		for (int v = 0; v < 3; v++) {
			struct parsa_rng r;
			struct parsa_graph g;
			struct parsa_partu_opts o;
			uint32_t *part;

			parsa_rng_seed(&r, 100 * j + v);
			random_graph(&g, &r, 300 + (uint32_t)parsa_rng_below(&r, 2500),
				     500, 1, 25, 3);
			parsa_partu_opts_default(&o);
			o.k = ks[j];
			o.blocks = v == 0 ? 1 : (v == 1 ? 7 : 40);
			o.init_blocks = v == 2 ? 3 : v;
			o.rule = (enum parsa_rule)(v % 2);
			o.imbalance = v == 1 ? 1.0 : 1.03;
			o.block_imbalance = v == 2 ? INFINITY : 0;
			o.seed = 5 + v;
			part = run_checked(&g, &o, NULL);
			free(part);
			parsa_graph_release(&g);
		}
	}
}

static void test_deterministic(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_partu_opts o;
	uint32_t *a, *b, *c;

	parsa_rng_seed(&r, 77);
	random_graph(&g, &r, 2000, 800, 1, 20, 0);
	parsa_partu_opts_default(&o);
	o.k = 8;
	o.blocks = 5;
	o.init_blocks = 1;
	a = run_checked(&g, &o, NULL);
	b = run_checked(&g, &o, NULL);
	o.seed = 2;
	c = run_checked(&g, &o, NULL);
	CHECK(memcmp(a, b, g.n_rows * sizeof(uint32_t)) == 0);
	CHECK(memcmp(a, c, g.n_rows * sizeof(uint32_t)) != 0);
	free(a);
	free(b);
	free(c);
	parsa_graph_release(&g);
}

/* A par that runs the tasks one after another, the last first. */
static void par_reverse(void *par_arg, uint32_t n, parsa_graph_task_fn fn,
			void *fn_arg)
{
	atomic_fetch_add((atomic_uint *)par_arg, 1);
	for (uint32_t t = n; t-- > 0;)
		fn(fn_arg, t);
}

/* The sequential run with par (the blocks' costs in tasks, the next block
 * extracted beside each run) equals the run without: the parts, the
 * final sets and the counters, for k of one and two mask words, narrow
 * and wide costs, with and without warm-up, blocks above and below the
 * size where begin uses the tasks. */
static void test_par_same_result(void)
{
	static const struct {
		uint32_t n, m, dmax, k, blocks, init;
	} cs[] = {
		{ 6000, 1500, 30, 8, 2, 0 },  { 6000, 1500, 30, 70, 2, 0 },
		{ 5000, 900, 300, 5, 2, 1 },  { 9000, 3000, 12, 16, 3, 0 },
		{ 3000, 700, 20, 3, 6, 0 },   { 7000, 2000, 25, 130, 3, 1 },
	};

	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		struct parsa_rng r;
		struct parsa_graph g;
		struct parsa_partu_opts o;
		struct parsa_nbrset S0, S1, S2;
		struct parsa_partu_stats st1 = { 0 }, st2 = { 0 };
		struct parsa_err err;
		atomic_uint calls = 0;
		uint32_t *p1, *p2;

		parsa_rng_seed(&r, 900 + c);
		random_graph(&g, &r, cs[c].n, cs[c].m, 1, cs[c].dmax, 5);
		parsa_partu_opts_default(&o);
		o.k = cs[c].k;
		o.blocks = cs[c].blocks;
		o.init_blocks = cs[c].init;
		o.seed = 5 + c;
		p1 = new_part(g.n_rows);
		p2 = new_part(g.n_rows);
		REQUIRE(parsa_nbrset_init(&S1, g.n_cols, o.k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&S2, g.n_cols, o.k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&S0, g.n_cols, o.k, NULL) == 0);
		CHECK_INT(parsa_partition_u(&g, &o, &S1, p1, &st1, &err), ==, 0);
		o.par_arg = &calls;
		/* every other case on one thread, the tasks in reverse */
		o.par = c % 2 ? par_reverse : tp_par_pthreads;
		CHECK_INT(parsa_partition_u(&g, &o, &S2, p2, &st2, &err), ==, 0);
		/* blocks of >= 2048 rows: begin's two steps and the run
		 * beside the next extraction, each block of the main pass */
		CHECK(atomic_load(&calls) ==
		      (cs[c].n / cs[c].blocks >= 2048 ? 3 * cs[c].blocks : 0) +
			      (cs[c].n / cs[c].blocks >= 2048 ? 2 * cs[c].init
							      : 0));
		CHECK(memcmp(p1, p2, g.n_rows * sizeof(uint32_t)) == 0);
		for (uint32_t v = 0; v < g.n_cols; v++)
			CHECK(memcmp(parsa_nbrset_mask(&S1, v),
				     parsa_nbrset_mask(&S2, v),
				     S1.words * sizeof(uint64_t)) == 0);
		CHECK(st1.assigned == st2.assigned);
		CHECK(st1.new_bits == st2.new_bits);
		CHECK(st1.decrements == st2.decrements);
		check_result(&g, o.k, o.imbalance, &S0, &S2, p2);
		free(p1);
		free(p2);
		parsa_nbrset_release(&S1);
		parsa_nbrset_release(&S2);
		parsa_nbrset_release(&S0);
		parsa_graph_release(&g);
	}
}

/* parsa_partu_block_par equals parsa_partu_block block after block (the
 * parts, the slices, the balance, the counters), with one context kept
 * across blocks of growing size (below and above 2048 rows, so the par's
 * arrays grow), par on pthreads and in reverse on one thread, and a
 * context whose par is removed again (its arrays freed) still agrees. */
static void test_block_par(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_block blk;
	struct parsa_partu_ctx *c1, *c2;
	uint32_t *rows, *map, *p1, *p2;
	const uint32_t n = 9000, m = 2500, k = 24;
	atomic_uint calls = 0;

	parsa_rng_seed(&r, 33);
	random_graph(&g, &r, n, m, 1, 40, 3);
	rows = malloc(n * sizeof(uint32_t));
	map = malloc(m * sizeof(uint32_t));
	p1 = malloc(n * sizeof(uint32_t));
	p2 = malloc(n * sizeof(uint32_t));
	memset(map, 0xff, m * sizeof(uint32_t));
	REQUIRE(parsa_blocks_split(n, 1, 4, rows, (uint32_t[2]){ 0 }, NULL) == 0);
	parsa_block_init(&blk);
	REQUIRE(parsa_partu_ctx_create(&c1, k, 16, NULL) == 0);
	REQUIRE(parsa_partu_ctx_create(&c2, k, 16, NULL) == 0);
	for (int pass = 0; pass < 3; pass++) {
		struct parsa_balance b1, b2;

		/* pass 0: pthreads; 1: in reverse; 2: the par removed */
		REQUIRE(parsa_partu_ctx_set_par(c2, pass == 2 ? NULL : pass ?
						par_reverse : tp_par_pthreads,
						&calls, NULL) == 0);
		REQUIRE(parsa_balance_init(&b1, k, n, PARSA_RULE_MIN_S, 1.03,
					   NULL) == 0);
		REQUIRE(parsa_balance_init(&b2, k, n, PARSA_RULE_MIN_S, 1.03,
					   NULL) == 0);
		for (uint32_t lo = 0, len = 700; lo < n; lo += len, len *= 2) {
			struct parsa_nbrset S1, S2;
			struct parsa_partu_stats st1 = { 0 }, st2 = { 0 };
			unsigned before = atomic_load(&calls);

			len = lo + len > n ? n - lo : len;
			REQUIRE(parsa_block_extract(&blk, &g, rows + lo, len,
						    map, NULL) == 0);
			REQUIRE(parsa_nbrset_init(&S1, blk.g.n_cols, k, NULL) == 0);
			REQUIRE(parsa_nbrset_init(&S2, blk.g.n_cols, k, NULL) == 0);
			CHECK_INT(parsa_partu_block(c1, &blk, &S1, &b1, p1, &st1,
						    NULL), ==, 0);
			CHECK_INT(parsa_partu_block_par(c2, &blk, &S2, &b2, p2,
							&st2, NULL), ==, 0);
			/* begin's two steps and the run's one from 2048 rows */
			CHECK_INT(atomic_load(&calls) - before, ==,
				  pass < 2 && len >= 2048 ? 3 : 0);
			CHECK(memcmp(p1, p2, len * sizeof(uint32_t)) == 0);
			CHECK(memcmp(S1.bits, S2.bits,
				     (size_t)blk.g.n_cols * S1.words *
					     sizeof(uint64_t)) == 0);
			CHECK(memcmp(S1.size, S2.size, k * sizeof(uint64_t)) == 0);
			CHECK(memcmp(b1.count, b2.count, k * sizeof(uint64_t)) == 0);
			CHECK(memcmp(b1.s_size, b2.s_size,
				     k * sizeof(uint64_t)) == 0);
			CHECK(st1.assigned == st2.assigned &&
			      st1.new_bits == st2.new_bits &&
			      st1.decrements == st2.decrements);
			parsa_nbrset_release(&S1);
			parsa_nbrset_release(&S2);
		}
		parsa_balance_release(&b1);
		parsa_balance_release(&b2);
	}
	parsa_partu_ctx_destroy(c1);
	parsa_partu_ctx_destroy(c2);
	parsa_block_release(&blk);
	parsa_graph_release(&g);
	free(rows);
	free(map);
	free(p1);
	free(p2);
}

static void test_empty_rows_and_graphs(void)
{
	struct parsa_graph g;
	struct parsa_partu_opts o;
	uint32_t *part, empty[1];

	/* only empty rows: no features at all */
	parsa_graph_init(&g);
	for (int u = 0; u < 10; u++)
		CHECK(parsa_graph_add_row(&g, empty, 0, NULL) == 0);
	parsa_partu_opts_default(&o);
	o.k = 3;
	o.blocks = 2;
	o.init_blocks = 1;
	part = run_checked(&g, &o, NULL);
	free(part);
	parsa_graph_release(&g);
	/* no rows at all */
	parsa_graph_init(&g);
	part = run_checked(&g, &o, NULL);
	free(part);
	/* half of the rows empty */
	{
		struct parsa_rng r;

		parsa_rng_seed(&r, 8);
		random_graph(&g, &r, 500, 100, 1, 10, 50);
		o.blocks = 4;
		part = run_checked(&g, &o, NULL);
		free(part);
		parsa_graph_release(&g);
	}
}

static void test_zero_row_block(void)
{
	struct parsa_block blk;
	struct parsa_nbrset S;
	struct parsa_balance bal;
	struct parsa_partu_ctx *ctx;
	struct parsa_partu_stats st = {0};
	uint32_t part[1] = {7};

	parsa_block_init(&blk);
	REQUIRE(parsa_nbrset_init(&S, 0, 4, NULL) == 0);
	REQUIRE(parsa_balance_init(&bal, 4, 0, PARSA_RULE_MIN_S, 1.03, NULL) == 0);
	REQUIRE(parsa_partu_ctx_create(&ctx, 4, 0, NULL) == 0);
	CHECK_INT(parsa_partu_block(ctx, &blk, &S, &bal, part, &st, NULL), ==, 0);
	CHECK_INT(part[0], ==, 7);
	CHECK_INT(st.assigned, ==, 0);
	for (uint32_t i = 0; i < 4; i++)
		CHECK_INT(bal.count[i], ==, 0);
	parsa_partu_ctx_destroy(ctx);
	parsa_partu_ctx_destroy(NULL);
	parsa_balance_release(&bal);
	parsa_nbrset_release(&S);
}

struct progress_log {
	uint64_t calls, last_done, total;
	int monotone;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct progress_log *p = arg;

	p->monotone &= done == p->last_done + 1;
	p->calls++;
	p->last_done = done;
	p->total = total;
}

static void test_blocks_clamped_and_progress(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_partu_opts o;
	struct progress_log log = {0, 0, 0, 1};
	uint32_t *part;

	parsa_rng_seed(&r, 4);
	random_graph(&g, &r, 10, 30, 1, 5, 0);
	parsa_partu_opts_default(&o);
	o.k = 4;
	o.blocks = 1000;
	o.init_blocks = 500;
	o.progress = on_progress;
	o.progress_arg = &log;
	part = run_checked(&g, &o, NULL);
	CHECK(log.monotone);
	CHECK_INT(log.calls, ==, 20); /* b clamped to 10, a to b */
	CHECK_INT(log.total, ==, 20);
	CHECK_INT(log.last_done, ==, 20);
	free(part);
	parsa_graph_release(&g);
}

/* S given before the run: respected and kept (incremental partitioning).
 * One block, so the per-block cap does not force mixing. */
static void test_incremental(void)
{
	for (int rule = 0; rule < 4; rule++) {
		struct parsa_graph g;
		struct parsa_partu_opts o;
		struct parsa_nbrset S, S0;
		uint32_t *part = new_part(40);

		two_clusters(&g, 20, 1);
		parsa_partu_opts_default(&o);
		o.k = 2;
		o.blocks = rule < 2 ? 1 : 4;
		o.rule = (enum parsa_rule)(rule % 2);
		REQUIRE(parsa_nbrset_init(&S, g.n_cols, 2, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&S0, g.n_cols, 2, NULL) == 0);
		/* an earlier placement: cluster 0 (features 0..4) on part 1,
		 * cluster 1 on part 0; plus a stray bit */
		for (uint32_t v = 0; v < 5; v++) {
			parsa_nbrset_add(&S0, v, 1);
			parsa_nbrset_add(&S0, 5 + v, 0);
		}
		parsa_nbrset_add(&S0, 2, 0);
		parsa_nbrset_copy(&S, &S0);
		REQUIRE(parsa_partition_u(&g, &o, &S, part, NULL, NULL) == 0);
		check_result(&g, 2, o.imbalance, &S0, &S, part);
		for (uint32_t u = 0; u < 40 && o.blocks == 1; u++)
			CHECK_INT(part[u], ==, u % 2 == 0 ? 1 : 0);
		parsa_nbrset_release(&S);
		parsa_nbrset_release(&S0);
		parsa_graph_release(&g);
		free(part);
	}
}

/* Warm-up bits guide but do not stay: S == S0 ∪ N(U_i) with a > 0. */
static void test_warm_up_sets(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_partu_opts o;
	struct parsa_partu_stats st = {0};
	uint32_t *part;

	parsa_rng_seed(&r, 12);
	random_graph(&g, &r, 900, 400, 1, 12, 5);
	for (uint32_t a = 0; a <= 6; a += 3) {
		parsa_partu_opts_default(&o);
		o.k = 5;
		o.blocks = 6;
		o.init_blocks = a;
		memset(&st, 0, sizeof(st));
		part = run_checked(&g, &o, &st);
		CHECK_INT(st.assigned, ==, 900);
		CHECK_INT(st.new_bits, >, 0);
		free(part);
	}
	parsa_graph_release(&g);
}

static void test_bad_arguments(void)
{
	struct parsa_graph g;
	struct parsa_partu_opts o;
	struct parsa_nbrset S;
	struct parsa_err err;
	uint32_t part[20];

	two_clusters(&g, 10, 0);
	REQUIRE(parsa_nbrset_init(&S, g.n_cols, 4, NULL) == 0);
	parsa_partu_opts_default(&o);
	o.k = 3; /* S has 4 */
	parsa_err_clear(&err);
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, &err), ==,
		  PARSA_EINVAL);
	CHECK(err.msg[0] != 0);
	o.k = 4;
	o.blocks = 2;
	o.init_blocks = 3;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	o.init_blocks = 0;
	o.imbalance = 0.99;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	o.imbalance = INFINITY;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	o.imbalance = 1.0;
	o.block_imbalance = 0.5;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	o.block_imbalance = NAN;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	o.block_imbalance = 0;
	o.rule = (enum parsa_rule)9;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	parsa_nbrset_release(&S);
	REQUIRE(parsa_nbrset_init(&S, g.n_cols + 1, 4, NULL) == 0);
	o.rule = PARSA_RULE_MIN_S;
	CHECK_INT(parsa_partition_u(&g, &o, &S, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	parsa_nbrset_release(&S);
	parsa_graph_release(&g);
}

/* A block the global caps cannot hold is refused before any change. */
static void test_block_no_room(void)
{
	struct parsa_graph g;
	struct parsa_block blk;
	struct parsa_nbrset S;
	struct parsa_balance bal;
	struct parsa_partu_ctx *ctx;
	struct parsa_err err;
	uint32_t rows[20], map[10], part[20];

	two_clusters(&g, 10, 0);
	for (uint32_t j = 0; j < 20; j++)
		rows[j] = j;
	memset(map, 0xff, sizeof(map));
	parsa_block_init(&blk);
	REQUIRE(parsa_block_extract(&blk, &g, rows, 20, map, NULL) == 0);
	REQUIRE(parsa_nbrset_init(&S, blk.g.n_cols, 2, NULL) == 0);
	REQUIRE(parsa_balance_init(&bal, 2, 10, PARSA_RULE_MIN_S, 1.0, NULL) == 0);
	REQUIRE(parsa_partu_ctx_create(&ctx, 2, 20, NULL) == 0);
	parsa_err_clear(&err);
	CHECK_INT(parsa_partu_block(ctx, &blk, &S, &bal, part, NULL, &err), ==,
		  PARSA_EINVAL);
	CHECK_INT(S.size[0] + S.size[1], ==, 0);
	CHECK_INT(bal.count[0] + bal.count[1], ==, 0);
	/* mismatched k */
	parsa_partu_ctx_destroy(ctx);
	REQUIRE(parsa_partu_ctx_create(&ctx, 3, 20, NULL) == 0);
	CHECK_INT(parsa_partu_block(ctx, &blk, &S, &bal, part, NULL, NULL), ==,
		  PARSA_EINVAL);
	parsa_partu_ctx_destroy(ctx);
	CHECK_INT(parsa_partu_ctx_create(&ctx, 0, 20, NULL), ==, PARSA_EINVAL);
	CHECK(ctx == NULL);
	parsa_partu_ctx_destroy(ctx);
	parsa_balance_release(&bal);
	parsa_nbrset_release(&S);
	parsa_block_release(&blk);
	parsa_graph_release(&g);
}

/* One ctx reused for blocks of growing size and degree. */
static void test_ctx_grows(void)
{
	struct parsa_rng r;
	struct parsa_graph g;
	struct parsa_block blk;
	struct parsa_partu_ctx *ctx;
	struct parsa_balance bal;
	uint32_t *rows, *map, *part;

	parsa_rng_seed(&r, 21);
	random_graph(&g, &r, 3000, 5000, 0, 200, 5);
	rows = malloc(3000 * sizeof(uint32_t));
	map = malloc(5000 * sizeof(uint32_t));
	part = malloc(3000 * sizeof(uint32_t));
	memset(map, 0xff, 5000 * sizeof(uint32_t));
	for (uint32_t j = 0; j < 3000; j++)
		rows[j] = j;
	parsa_block_init(&blk);
	REQUIRE(parsa_partu_ctx_create(&ctx, 6, 1, NULL) == 0);
	REQUIRE(parsa_balance_init(&bal, 6, 3000, PARSA_RULE_MIN_S, 1.03, NULL) == 0);
	for (uint32_t lo = 0, n = 10; lo < 3000; lo += n, n *= 3) {
		struct parsa_nbrset S;

		if (lo + n > 3000)
			n = 3000 - lo;
		REQUIRE(parsa_block_extract(&blk, &g, rows + lo, n, map, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&S, blk.g.n_cols, 6, NULL) == 0);
		CHECK_INT(parsa_partu_block(ctx, &blk, &S, &bal, part, NULL, NULL),
			  ==, 0);
		for (uint32_t q = 0; q < n; q++)
			CHECK(part[q] < 6);
		parsa_nbrset_release(&S);
	}
	for (uint32_t i = 0; i < 6; i++)
		CHECK_INT(bal.count[i], <=, bal.cap);
	parsa_partu_ctx_destroy(ctx);
	parsa_balance_release(&bal);
	parsa_block_release(&blk);
	parsa_graph_release(&g);
	free(rows);
	free(map);
	free(part);
}

/* parsa_block_extract_marks builds the block parsa_block_extract builds
 * (rows, features, local CSR), into the same reused block from call to
 * call (growing and shrinking blocks), with the marks all zero after
 * every call and after an error; feature counts across word boundaries
 * (up to 64 x 3 + 5, so the ranks of several words are used). */
static void test_block_extract_marks(void)
{
	struct parsa_rng r;
	struct parsa_err err;

	parsa_rng_seed(&r, 11);
	for (uint32_t it = 0; it < 12; it++) {
		uint32_t nc = 1 + (uint32_t)parsa_rng_below(&r, it < 6 ? 197 : 5000);
		struct parsa_graph g;
		struct parsa_block a, b;
		struct parsa_featmarks m;
		uint32_t rows[300], *map = malloc(nc * sizeof(uint32_t));
		uint64_t words = nc / 64 + 1;

		random_graph(&g, &r, 300, nc, 0, 1 + it * 3, 4);
		REQUIRE(g.n_cols == nc);
		memset(map, 0xff, nc * sizeof(uint32_t));
		REQUIRE(parsa_featmarks_init(&m, nc, NULL) == 0);
		parsa_block_init(&a);
		parsa_block_init(&b);
		for (uint32_t t = 0; t < 15; t++) {
			uint32_t n = (uint32_t)parsa_rng_below(&r, 301);

			for (uint32_t j = 0; j < n; j++)
				rows[j] = (uint32_t)parsa_rng_below(&r, g.n_rows);
			REQUIRE(parsa_block_extract(&a, &g, rows, n, map, NULL) == 0);
			REQUIRE(parsa_block_extract_marks(&b, &g, rows, n, &m,
							  NULL) == 0);
			check_block(&b, &g, rows, n);
			CHECK_INT(b.g.n_rows, ==, a.g.n_rows);
			CHECK_INT(b.g.n_cols, ==, a.g.n_cols);
			CHECK(b.g.n_cols <= b.feat_cap && n <= b.rows_cap);
			CHECK(memcmp(b.feat, a.feat, a.g.n_cols * sizeof(uint32_t)) == 0);
			CHECK(memcmp(b.g.row_ptr, a.g.row_ptr,
				     (n + 1) * sizeof(uint64_t)) == 0);
			CHECK(memcmp(b.g.col, a.g.col,
				     parsa_graph_nnz(&a.g) * sizeof(uint32_t)) == 0);
			for (uint64_t w = 0; w < words; w++)
				CHECK(m.bits[w] == 0);
		}
		rows[0] = 1;
		rows[1] = g.n_rows;
		parsa_err_clear(&err);
		CHECK_INT(parsa_block_extract_marks(&b, &g, rows, 2, &m, &err), ==,
			  PARSA_EINVAL);
		for (uint64_t w = 0; w < words; w++)
			CHECK(m.bits[w] == 0);
		parsa_block_release(&a);
		parsa_block_release(&b);
		parsa_featmarks_release(&m);
		parsa_graph_release(&g);
		free(map);
	}
}

int main(void)
{
	RUN(test_balance_cap);
	RUN(test_balance_init);
	RUN(test_opts_default);
	RUN(test_fit_rows);
	RUN(test_blocks_split);
	RUN(test_block_extract);
	RUN(test_block_extract_marks);
	RUN(test_block_matches_replica);
	RUN(test_wide_lists_match_replica);
	RUN(test_two_clusters);
	RUN(test_four_clusters);
	RUN(test_final_sets_exact);
	RUN(test_balance_many_k);
	RUN(test_deterministic);
	RUN(test_par_same_result);
	RUN(test_block_par);
	RUN(test_empty_rows_and_graphs);
	RUN(test_zero_row_block);
	RUN(test_blocks_clamped_and_progress);
	RUN(test_incremental);
	RUN(test_warm_up_sets);
	RUN(test_bad_arguments);
	RUN(test_block_no_room);
	RUN(test_ctx_grows);
	return harness_done();
}
