/*
 * parsa_partu: partition U (thesis Algorithm 13) block by block, and the
 * sequential driver over random blocks with individual initialization
 * (see parsa_partu.h).
 *
 * Per block: a local transpose (feature -> block rows) is built in
 * O(nnz_block); cost_i(u) = |N(u) \ S_i| is computed from the masks and
 * counting-sorted into one bucketed cost list per partition; then each step
 * picks a partition by the rule, takes its cheapest example (removing it
 * from the other lists lazily, with the same result as eagerly), and for
 * every new (feature, partition) pair decrements the cost of the block's
 * unassigned examples using that feature.  Each pair enters S at most
 * once, so a block costs O(k * n_block + k * nnz_block).  The transpose
 * lists are compacted as they are scanned (assigned rows are dropped), so
 * later scans of the same feature only see live rows.
 *
 * With a par (parsa_partu_ctx_set_par), a block's transpose, the costs of
 * its rows (in ranges) and the builds of its lists run as tasks; the
 * driver extracts the next block beside each block's run, and the run
 * itself hands each step's growth of S_i and its decrements to a second
 * thread while it picks on (the asynchronous run below).  Every list sees
 * the operations of the serial run in the same order, so nothing else
 * changes.
 */
#include "parsa_partu.h"

#include <assert.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base_prefetch.h"
#include "base_cmp.h"
#include "parsa_costlist.h"
#include "parsa_rng.h"

#define NONE UINT32_MAX

/* The tasks of a parallel parsa_partu_block_begin (row ranges of the
 * costs, groups of lists to build), and the fewest block rows for which
 * it runs them through par (below, one thread: the same result). */
#define PARTU_TASKS 8
#define PARTU_PAR_MIN_ROWS 2048

/* Scratch of row_costs: one per task of a parallel begin. */
struct rowcost {
	uint32_t *cnt;  /* k: one row's costs */
	uint32_t *base; /* words: per-word base */
	uint64_t *c8;   /* words * 8: byte lanes */
};

/* A step's growth of S_i, handed from the picking thread to whichever
 * consumer takes it (the asynchronous run): row u placed in partition i
 * at step t. */
struct grow_item {
	uint32_t i, u, t;
};

/* A consumer of the asynchronous run's items: its own copy of the
 * transpose's lists (compacted as it scans them; tptr is shared), its
 * increments of ov and its counters. */
struct consumer {
	uint32_t *tlen;
	void *trow;
	uint64_t *ov;
	uint64_t new_bits, decrements;
};

struct parsa_partu_ctx {
	uint32_t k;
	uint32_t rows_cap;         /* block rows the lists hold */
	struct parsa_costlist *cl; /* k cost lists, one per partition */
	struct rowcost scr[PARTU_TASKS]; /* [0] always; the rest with par */
	parsa_graph_par_fn par;    /* NULL: begin on the caller's thread */
	void *par_arg;
	uint64_t spread[256];      /* spread[b]: bit j of b -> byte j */
	uint64_t *blk_count;       /* k: examples placed in this block */
	uint64_t feat_cap;         /* local features tptr/tlen hold */
	uint64_t *tptr;            /* transpose: first row slot of feature l */
	uint32_t *tlen;            /* transpose: live rows of feature l */
	uint64_t trow_bytes;       /* bytes trow holds */
	void *trow;                /* transpose: block rows per feature,
				      uint16_t when trow16 */
	int trow16;                /* the block has at most 65536 rows */
	uint8_t *done;             /* rows_cap: block row already assigned */
	uint64_t *ov;              /* rows_cap: Σ_i |N(r) ∩ S_i| (seeding) */
	/* the block in progress (parsa_partu_block_begin .. _run) */
	uint32_t t;                /* rows placed so far */
	uint32_t n;                /* its rows */
	uint64_t blk_cap;          /* its per-partition cap */
	/* the asynchronous run (with par, see async_run): the fields the
	 * threads share are read and written with __atomic builtins */
	int async;                 /* this block runs asynchronously */
	uint32_t *step;            /* a_step: step that placed a row, NONE */
	struct consumer cons[2];   /* [0] the picking thread's (ctx's own
				      transpose and ov), [1] the other's */
	uint64_t a_step, a_ov;     /* rows step and cons[1].ov hold */
	uint64_t a_feat;           /* features cons[1].tlen holds */
	uint64_t a_trow_bytes;     /* bytes cons[1].trow holds */
	struct grow_item *ring;    /* ring_mask + 1 items, > 2k */
	uint32_t ring_mask;
	uint8_t *pending;          /* k: partition i has an item unfinished */
	uint32_t head, tail;       /* items claimed, items issued */
	uint64_t issued;           /* = tail (the picking thread's count) */
	uint64_t finished;         /* items finished */
	int started;               /* the picking thread has begun */
	int stop;                  /* the picking thread is done */
};

/* ---------------------------------------------------------------- options */

void parsa_partu_opts_default(struct parsa_partu_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->k = 16;
	o->blocks = 0; /* auto: parsa_partu_blocks */
	o->init_blocks = 0;
	o->rule = PARSA_RULE_MIN_S;
	o->imbalance = 1.03;
	o->seed = 1;
}

uint32_t parsa_partu_fit_rows(uint32_t k, uint64_t fit_bytes)
{
	uint64_t r;

	if (fit_bytes < PARSA_FIT_MIN_BYTES)
		return PARSA_AUTO_BLOCK_ROWS;
	r = fit_bytes / ((uint64_t)(k ? k : 1) * 6 * PARSA_FIT_SHARE);
	if (r < PARSA_FIT_MIN_ROWS)
		r = PARSA_FIT_MIN_ROWS;
	return r < PARSA_AUTO_BLOCK_ROWS ? (uint32_t)r : PARSA_AUTO_BLOCK_ROWS;
}

uint32_t parsa_partu_blocks(const struct parsa_partu_opts *o, uint32_t n)
{
	uint64_t b = o->blocks;

	if (b == 0) {
		uint64_t rows = parsa_partu_fit_rows(o->k, o->fit_bytes);

		b = ((uint64_t)n + rows - 1) / rows;
		if (b < PARSA_AUTO_MIN_BLOCKS)
			b = PARSA_AUTO_MIN_BLOCKS;
	}
	if (n > 0 && b > n)
		b = n;
	return (uint32_t)b;
}

/* ---------------------------------------------------------------- balance */

/* min(ceil(x), n) for x >= 0, safe for huge x. */
static uint64_t ceil_clamp(double x, uint64_t n)
{
	double c = ceil(x);

	return c >= (double)n ? n : (uint64_t)c;
}

uint64_t parsa_balance_cap(uint64_t n, uint32_t k, double imbalance)
{
	uint64_t q, lo, hi;
	double imb = imbalance >= 1.0 ? imbalance : 1.0; /* also NaN */

	assert(k >= 1);
	q = n / k + (n % k != 0);
	hi = ceil_clamp(imb * (double)n / (double)k, n);
	lo = floor(imb * (double)q) >= (double)n ? n
						  : (uint64_t)floor(imb * (double)q);
	lo = lo < hi ? lo : hi;
	return lo > q ? lo : q;
}

int parsa_balance_init(struct parsa_balance *b, uint32_t k, uint64_t n_total,
		       enum parsa_rule rule, double imbalance,
		       struct parsa_err *err)
{
	memset(b, 0, sizeof(*b));
	if (k == 0)
		return parsa_fail(err, PARSA_EINVAL, "k must be >= 1");
	if (!(imbalance >= 1.0) || !isfinite(imbalance))
		return parsa_fail(err, PARSA_EINVAL,
				  "imbalance must be a finite number >= 1 (got %g)",
				  imbalance);
	if (rule != PARSA_RULE_MIN_S && rule != PARSA_RULE_ROUND_ROBIN)
		return parsa_fail(err, PARSA_EINVAL, "unknown partition rule %d",
				  (int)rule);
	b->count = calloc(k, sizeof(uint64_t));
	b->s_size = calloc(k, sizeof(uint64_t));
	if (!b->count || !b->s_size) {
		parsa_balance_release(b);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for balance (k=%u)", k);
	}
	b->k = k;
	b->rule = rule;
	b->imbalance = imbalance;
	b->block_imbalance = imbalance;
	b->cap = parsa_balance_cap(n_total, k, imbalance);
	return 0;
}

void parsa_balance_release(struct parsa_balance *b)
{
	if (!b)
		return;
	free(b->count);
	free(b->s_size);
	memset(b, 0, sizeof(*b));
}

void parsa_balance_split(uint32_t W, uint32_t k, const uint64_t *nw,
			 const uint64_t *avail, uint64_t *caps,
			 uint64_t *spare)
{
	uint64_t n_rest = 0;
	uint32_t i = 0;

	for (uint32_t w = 0; w < W; w++)
		n_rest += nw[w];
	for (uint32_t q = 0; q < k; q++)
		spare[q] = avail[q];
	for (uint32_t w = 0; w < W; w++)
		for (uint32_t q = 0; q < k; q++) {
			uint64_t base = n_rest ? avail[q] * nw[w] / n_rest : 0;

			caps[(uint64_t)w * k + q] = base; /* avail, nw < 2^32 */
			spare[q] -= base;
		}
	for (uint32_t w = 0; w < W; w++) {
		uint64_t have = 0, need;

		for (uint32_t q = 0; q < k; q++)
			have += caps[(uint64_t)w * k + q];
		need = nw[w] > have ? nw[w] - have : 0;
		for (uint32_t turns = 0; need > 0 && turns < k; i = (i + 1) % k) {
			if (spare[i] == 0) {
				turns++;
				continue;
			}
			turns = 0;
			caps[(uint64_t)w * k + i]++;
			spare[i]--;
			need--;
		}
		assert(need == 0); /* Σ avail >= n_rest */
	}
}

/* ------------------------------------------------------------------ block */

void parsa_block_init(struct parsa_block *b)
{
	memset(b, 0, sizeof(*b));
	parsa_graph_init(&b->g);
}

void parsa_block_release(struct parsa_block *b)
{
	if (!b)
		return;
	parsa_graph_release(&b->g);
	free(b->rows);
	free(b->feat);
	parsa_block_init(b);
}

/* One stable counting pass on byte `shift/8` from src into dst. */
static void radix_pass(const uint32_t *src, uint32_t *dst, size_t n,
		       unsigned shift, const size_t *count)
{
	size_t pos[256];

	pos[0] = 0;
	for (int d = 1; d < 256; d++)
		pos[d] = pos[d - 1] + count[d - 1];
	for (size_t i = 0; i < n; i++)
		dst[pos[(src[i] >> shift) & 255]++] = src[i];
}

/* Sort a[0..n) ascending (LSD radix on bytes; tmp has n entries).  Bytes
 * equal everywhere (e.g. the high bytes of small ids) are skipped. */
static void sort_u32(uint32_t *a, uint32_t *tmp, size_t n)
{
	size_t count[4][256] = {{0}};
	uint32_t *src = a, *dst = tmp, *t;

	if (n < 64) {
		base_sort_u32(a, n); /* short: insertion sort */
		return;
	}
	for (size_t i = 0; i < n; i++)
		for (unsigned b = 0; b < 4; b++)
			count[b][(a[i] >> (8 * b)) & 255]++;
	for (unsigned b = 0; b < 4; b++) {
		if (count[b][(a[0] >> (8 * b)) & 255] == n)
			continue;
		radix_pass(src, dst, n, 8 * b, count[b]);
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(uint32_t));
}

static int block_alloc(struct parsa_block *b, uint32_t n, uint64_t nnz,
		       struct parsa_err *err)
{
	size_t m = nnz ? (size_t)nnz : 1;

	if (nnz > SIZE_MAX / sizeof(uint32_t))
		return parsa_fail(err, PARSA_ENOMEM, "block too large");
	b->rows = malloc((n ? n : 1) * sizeof(uint32_t));
	b->feat = malloc(m * sizeof(uint32_t));
	b->g.row_ptr = malloc(((size_t)n + 1) * sizeof(uint64_t));
	b->g.col = malloc(m * sizeof(uint32_t));
	if (!b->rows || !b->feat || !b->g.row_ptr || !b->g.col) {
		parsa_block_release(b);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a block of %u rows, %llu nonzeros",
				  n, (unsigned long long)nnz);
	}
	b->g.row_cap = (uint64_t)n + 1;
	b->g.col_cap = m;
	b->rows_cap = n ? n : 1;
	b->feat_cap = m;
	return 0;
}

/*
 * Copy the rows' global feature ids into b->g (row_ptr, col) and collect
 * the distinct ones into b->feat, marking them in map; or (map NULL) mark
 * each one's bit in bits (parsa_block_extract_marks).  The only pass over
 * the (randomly placed) rows of g, so it prefetches a few rows ahead.
 */
static inline __attribute__((always_inline)) uint32_t
copy_rows_in(struct parsa_block *b, const struct parsa_graph *g, uint32_t n,
	     uint32_t *map, uint64_t *bits)
{
	uint64_t out = 0;
	uint32_t nf = 0;

	b->g.row_ptr[0] = 0;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t r = b->rows[j];

		/* rows at random: a row's columns fetched 8 rows ahead, then
		 * its map entries or mark words (a random line each at scale)
		 * 4 rows ahead */
		if (j + 16 < n)  /* the row's offsets, for the line below */
			base_prefetch(&g->row_ptr[b->rows[j + 16]]);
		if (j + 8 < n)
			base_prefetch(&g->col[g->row_ptr[b->rows[j + 8]]]);
		if (j + 4 < n) {
			uint32_t a = b->rows[j + 4];

			for (uint64_t e = g->row_ptr[a]; e < g->row_ptr[a + 1]; e++) {
				uint32_t c = g->col[e];

				if (map)
					base_prefetch_w(&map[c]);
				else
					base_prefetch_w(&bits[c >> 6]);
			}
		}
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			uint32_t v = g->col[e];

			b->g.col[out++] = v;
			if (!map) {
				bits[v >> 6] |= 1ULL << (v & 63);
			} else if (map[v] == UINT32_MAX) {
				map[v] = 0;
				b->feat[nf++] = v;
			}
		}
		b->g.row_ptr[j + 1] = out;
	}
	return nf;
}

static uint32_t copy_rows(struct parsa_block *b, const struct parsa_graph *g,
			  uint32_t n, uint32_t *map)
{
	return copy_rows_in(b, g, n, map, NULL);
}

static void copy_rows_marks(struct parsa_block *b, const struct parsa_graph *g,
			    uint32_t n, uint64_t *bits)
{
	(void)copy_rows_in(b, g, n, NULL, bits);
}

int parsa_block_extract(struct parsa_block *b, const struct parsa_graph *g,
			const uint32_t *rows, uint32_t n, uint32_t *map,
			struct parsa_err *err)
{
	uint64_t nnz = 0;
	uint32_t nf, *tmp;
	int rc;

	for (uint32_t j = 0; j < n; j++) {
		if (rows[j] >= g->n_rows)
			return parsa_fail(err, PARSA_EINVAL,
					  "block row %u out of range (%u rows)",
					  rows[j], g->n_rows);
		nnz += parsa_graph_degree(g, rows[j]);
	}
	parsa_block_release(b);
	rc = block_alloc(b, n, nnz, err);
	if (rc)
		return rc;
	tmp = malloc((nnz ? (size_t)nnz : 1) * sizeof(uint32_t)); /* sort */
	if (!tmp) {
		parsa_block_release(b);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a block of %llu nonzeros",
				  (unsigned long long)nnz);
	}
	if (n)
		memcpy(b->rows, rows, (size_t)n * sizeof(uint32_t));
	nf = copy_rows(b, g, n, map);
	sort_u32(b->feat, tmp, nf);
	free(tmp);
	/* local ids in increasing global order: the map is monotone, so the
	 * renumbered rows stay sorted */
	for (uint32_t l = 0; l < nf; l++)
		map[b->feat[l]] = l;
	for (uint64_t e = 0; e < nnz; e++) {
		if (e + 32 < nnz)
			base_prefetch(&map[b->g.col[e + 32]]);
		b->g.col[e] = map[b->g.col[e]];
	}
	for (uint32_t l = 0; l < nf; l++)
		map[b->feat[l]] = UINT32_MAX;
	if (nf < nnz) {
		uint32_t *p = realloc(b->feat, (nf ? nf : 1) * sizeof(uint32_t));

		if (p) {
			b->feat = p;
			b->feat_cap = nf ? nf : 1;
		}
	}
	b->g.n_rows = n;
	b->g.n_cols = nf;
	return 0;
}

int parsa_featmarks_init(struct parsa_featmarks *m, uint32_t n_feat,
			 struct parsa_err *err)
{
	size_t words = (size_t)n_feat / 64 + 1;

	m->n_feat = n_feat;
	m->bits = calloc(words, sizeof(uint64_t));
	m->rank = malloc(words * sizeof(uint32_t));
	if (!m->bits || !m->rank) {
		parsa_featmarks_release(m);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for the marks of %u features",
				  n_feat);
	}
	return 0;
}

void parsa_featmarks_release(struct parsa_featmarks *m)
{
	if (!m)
		return;
	free(m->bits);
	free(m->rank);
	memset(m, 0, sizeof(*m));
}

/* *p (capacity *cap entries of size sz) to at least n entries, with an
 * eighth more so that blocks a little larger than the last do not free
 * and allocate again (the holes fragment the heap); the content is not
 * kept.  0 or -1. */
static int grow(void **p, uint64_t *cap, uint64_t n, size_t sz)
{
	void *q;

	n = n ? n : 1;
	if (*p && *cap >= n)
		return 0;
	n += n / 8;
	if (n > SIZE_MAX / sz)
		return -1;
	q = malloc((size_t)n * sz);
	if (!q)
		return -1;
	free(*p);
	*p = q;
	*cap = n;
	return 0;
}

/* col[e] := the rank of its feature among the marked ones. */
static inline __attribute__((always_inline)) void
renumber_body(uint32_t *col, uint64_t nnz, const uint64_t *bits,
	      const uint32_t *rank)
{
	for (uint64_t e = 0; e < nnz; e++) {
		uint32_t v = col[e];
		uint64_t below = bits[v >> 6] & ((1ULL << (v & 63)) - 1);

		col[e] = rank[v >> 6] + (uint32_t)__builtin_popcountll(below);
	}
}

static void renumber_plain(uint32_t *col, uint64_t nnz, const uint64_t *bits,
			   const uint32_t *rank)
{
	renumber_body(col, nnz, bits, rank);
}

#if defined(__GNUC__) && defined(__x86_64__)
/* the same with the popcnt instruction (the portable build calls a
 * libgcc routine per nonzero) */
__attribute__((target("popcnt"))) static void
renumber_popcnt(uint32_t *col, uint64_t nnz, const uint64_t *bits,
		const uint32_t *rank)
{
	renumber_body(col, nnz, bits, rank);
}
#endif

static void renumber(uint32_t *col, uint64_t nnz, const uint64_t *bits,
		     const uint32_t *rank)
{
#if defined(__GNUC__) && defined(__x86_64__)
	if (__builtin_cpu_supports("popcnt")) {
		renumber_popcnt(col, nnz, bits, rank);
		return;
	}
#endif
	renumber_plain(col, nnz, bits, rank);
}

int parsa_block_extract_marks(struct parsa_block *b,
			      const struct parsa_graph *g, const uint32_t *rows,
			      uint32_t n, struct parsa_featmarks *m,
			      struct parsa_err *err)
{
	uint64_t nnz = 0, nf = 0, words;
	uint64_t *bits = m->bits;

	if (m->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "feature marks of %u features for a graph of %u",
				  m->n_feat, g->n_cols);
	for (uint32_t j = 0; j < n; j++) {
		if (rows[j] >= g->n_rows)
			return parsa_fail(err, PARSA_EINVAL,
					  "block row %u out of range (%u rows)",
					  rows[j], g->n_rows);
		nnz += parsa_graph_degree(g, rows[j]);
	}
	if (grow((void **)&b->rows, &b->rows_cap, n, sizeof(uint32_t)) ||
	    grow((void **)&b->g.row_ptr, &b->g.row_cap, (uint64_t)n + 1,
		 sizeof(uint64_t)) ||
	    grow((void **)&b->g.col, &b->g.col_cap, nnz, sizeof(uint32_t)))
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a block of %u rows, %llu nonzeros",
				  n, (unsigned long long)nnz);
	if (n)
		memcpy(b->rows, rows, (size_t)n * sizeof(uint32_t));
	copy_rows_marks(b, g, n, bits);
	words = (uint64_t)g->n_cols / 64 + 1;
	for (uint64_t w = 0; w < words; w++) {
		m->rank[w] = (uint32_t)nf;
		nf += bits[w] ? parsa_popcount64(bits[w]) : 0;
	}
	if (grow((void **)&b->feat, &b->feat_cap, nf, sizeof(uint32_t))) {
		memset(bits, 0, (size_t)words * sizeof(uint64_t));
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a block of %llu features",
				  (unsigned long long)nf);
	}
	for (uint64_t w = 0, l = 0; w < words && l < nf; w++)
		for (uint64_t x = bits[w]; x; x &= x - 1)
			b->feat[l++] = (uint32_t)(w * 64 +
						  (uint64_t)__builtin_ctzll(x));
	renumber(b->g.col, nnz, bits, m->rank);
	for (uint64_t l = 0; l < nf; l++)
		bits[b->feat[l] >> 6] = 0;
	b->g.n_rows = n;
	b->g.n_cols = (uint32_t)nf;
	return 0;
}

/* -------------------------------------------------------------- context */

/* Grow the k lists and done[] to n rows and costs up to max_cost. */
static int reserve_rows(struct parsa_partu_ctx *ctx, uint32_t n,
			uint32_t max_cost, struct parsa_err *err)
{
	int rc = 0;

	for (uint32_t i = 0; i < ctx->k && !rc; i++)
		rc = parsa_costlist_reserve(&ctx->cl[i], n, max_cost, err);
	if (rc)
		return rc;
	if (n > ctx->rows_cap || !ctx->done) {
		uint8_t *p = realloc(ctx->done, n ? n : 1);
		uint64_t *q;

		if (p)
			ctx->done = p;
		q = p ? realloc(ctx->ov, (n ? n : 1) * sizeof(*q)) : NULL;
		if (!q)
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for %u block rows", n);
		ctx->ov = q;
		ctx->rows_cap = n;
	}
	return 0;
}

/* Scratch for row_costs at k partitions; 0 or -1 (out of memory, s
 * then holds what was allocated: rowcost_free releases it). */
static int rowcost_alloc(struct rowcost *s, uint32_t k)
{
	s->cnt = calloc(k, sizeof(uint32_t));
	s->base = calloc(k / 64 + 1, sizeof(uint32_t));
	s->c8 = calloc((k / 64 + 1) * 8, sizeof(uint64_t));
	return s->cnt && s->base && s->c8 ? 0 : -1;
}

static void rowcost_free(struct rowcost *s)
{
	free(s->cnt);
	free(s->base);
	free(s->c8);
	*s = (struct rowcost){ NULL, NULL, NULL };
}

int parsa_partu_ctx_create(struct parsa_partu_ctx **out, uint32_t k,
			   uint32_t max_rows, struct parsa_err *err)
{
	struct parsa_partu_ctx *c;
	int rc = 0;

	*out = NULL;
	if (k == 0)
		return parsa_fail(err, PARSA_EINVAL, "k must be >= 1");
	c = calloc(1, sizeof(*c));
	if (!c)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	c->k = k;
	c->cl = calloc(k, sizeof(*c->cl));
	c->blk_count = calloc(k, sizeof(uint64_t));
	if (!c->cl || !c->blk_count || rowcost_alloc(&c->scr[0], k)) {
		rowcost_free(&c->scr[0]);
		free(c->cl);
		free(c->blk_count);
		free(c);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for k=%u cost lists", k);
	}
	for (uint32_t b = 0; b < 256; b++)
		for (uint32_t j = 0; j < 8; j++)
			c->spread[b] |= (uint64_t)((b >> j) & 1) << (8 * j);
	rc = reserve_rows(c, max_rows, 64, err);
	if (rc) {
		parsa_partu_ctx_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Free what only a par uses (the tasks' scratch, the asynchronous run's
 * arrays). */
static void par_release(struct parsa_partu_ctx *ctx)
{
	for (uint32_t t = 1; t < PARTU_TASKS; t++)
		rowcost_free(&ctx->scr[t]);
	free(ctx->step);
	free(ctx->cons[1].tlen);
	free(ctx->cons[1].trow);
	free(ctx->cons[1].ov);
	free(ctx->ring);
	free(ctx->pending);
	ctx->step = NULL;
	ctx->cons[1] = (struct consumer){ NULL, NULL, NULL, 0, 0 };
	ctx->ring = NULL;
	ctx->pending = NULL;
	ctx->a_step = ctx->a_ov = ctx->a_feat = ctx->a_trow_bytes = 0;
	ctx->async = 0;
}

int parsa_partu_ctx_set_par(struct parsa_partu_ctx *ctx,
			    parsa_graph_par_fn par, void *par_arg,
			    struct parsa_err *err)
{
	if (!par)
		par_release(ctx);
	for (uint32_t t = 1; par && t < PARTU_TASKS; t++)
		if (!ctx->scr[t].cnt && rowcost_alloc(&ctx->scr[t], ctx->k)) {
			rowcost_free(&ctx->scr[t]);
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for k=%u cost tasks",
					  ctx->k);
		}
	if (par && !ctx->ring) {
		uint32_t r = 4;

		while (r <= 2 * ctx->k + 2)
			r *= 2;
		ctx->ring = calloc(r, sizeof(*ctx->ring));
		ctx->pending = calloc(ctx->k, 1);
		if (!ctx->ring || !ctx->pending) {
			free(ctx->ring);
			free(ctx->pending);
			ctx->ring = NULL;
			ctx->pending = NULL;
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for k=%u cost tasks",
					  ctx->k);
		}
		ctx->ring_mask = r - 1;
	}
	ctx->par = par;
	ctx->par_arg = par_arg;
	return 0;
}

void parsa_partu_ctx_destroy(struct parsa_partu_ctx *ctx)
{
	if (!ctx)
		return;
	for (uint32_t i = 0; i < ctx->k; i++)
		parsa_costlist_release(&ctx->cl[i]);
	free(ctx->cl);
	par_release(ctx);
	rowcost_free(&ctx->scr[0]);
	free(ctx->blk_count);
	free(ctx->tptr);
	free(ctx->tlen);
	free(ctx->trow);
	free(ctx->done);
	free(ctx->ov);
	free(ctx);
}

static uint32_t max_degree(const struct parsa_graph *g)
{
	uint32_t m = 0;

	for (uint32_t r = 0; r < g->n_rows; r++) {
		uint32_t d = parsa_graph_degree(g, r);

		m = d > m ? d : m;
	}
	return m;
}

/* Grow the transpose arrays for the block's features and nonzeros. */
static int reserve_transpose(struct parsa_partu_ctx *ctx,
			     const struct parsa_graph *g, struct parsa_err *err)
{
	uint64_t nf = g->n_cols, nnz = parsa_graph_nnz(g);

	if (nf > ctx->feat_cap || !ctx->tptr) {
		uint64_t *p = realloc(ctx->tptr, (size_t)(nf + 1) * sizeof(*p));
		uint32_t *q;

		if (p)
			ctx->tptr = p;
		q = p ? realloc(ctx->tlen, (size_t)(nf ? nf : 1) * sizeof(*q))
		      : NULL;
		if (!q)
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for %llu block features",
					  (unsigned long long)nf);
		ctx->tlen = q;
		ctx->feat_cap = nf;
	}
	/* a block of up to 65536 rows numbers them in 16 bits (the default
	 * blocks have at most PARSA_AUTO_BLOCK_ROWS) */
	ctx->trow16 = g->n_rows <= 65536;
	{
		size_t w = ctx->trow16 ? sizeof(uint16_t) : sizeof(uint32_t);
		uint64_t bytes = (nnz ? nnz : 1) * w;
		void *p;

		if (bytes <= ctx->trow_bytes && ctx->trow)
			return 0;
		p = nnz <= SIZE_MAX / w ? realloc(ctx->trow, (size_t)bytes)
					: NULL;
		if (!p)
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for %llu block nonzeros",
					  (unsigned long long)nnz);
		ctx->trow = p;
		ctx->trow_bytes = bytes;
	}
	return 0;
}

/* Capacity for the block: rows, largest cost, transpose. */
static int ctx_reserve(struct parsa_partu_ctx *ctx,
		       const struct parsa_graph *g, struct parsa_err *err)
{
	int rc = reserve_rows(ctx, g->n_rows, max_degree(g), err);

	return rc ? rc : reserve_transpose(ctx, g, err);
}

/* Local feature -> block rows (increasing), in O(nnz_block + n_cols). */
static void build_transpose(struct parsa_partu_ctx *ctx,
			    const struct parsa_graph *g)
{
	uint64_t nnz = parsa_graph_nnz(g);
	uint32_t nf = g->n_cols;

	memset(ctx->tlen, 0, (size_t)nf * sizeof(uint32_t));
	for (uint64_t e = 0; e < nnz; e++)
		ctx->tlen[g->col[e]]++;
	ctx->tptr[0] = 0;
	for (uint32_t l = 0; l < nf; l++) {
		ctx->tptr[l + 1] = ctx->tptr[l] + ctx->tlen[l];
		ctx->tlen[l] = 0;
	}
	for (uint32_t r = 0; r < g->n_rows; r++)
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			uint32_t l = g->col[e];
			uint64_t at = ctx->tptr[l] + ctx->tlen[l]++;

			if (ctx->trow16)
				((uint16_t *)ctx->trow)[at] = (uint16_t)r;
			else
				((uint32_t *)ctx->trow)[at] = r;
		}
}


/*
 * Row costs.  cost_i(r) = |N(r) \ S_i| is summed over r's features one mask
 * word (64 partitions) at a time, in whichever of three forms is cheapest
 * for that word:
 *   few set bits:    base[w]++, and cnt[i]-- per set bit i;
 *   few clear bits:  cnt[i]++ per clear bit i;
 *   otherwise:       base[w]++, and the set bits are subtracted 8 lanes at
 *                    a time: c8 holds one byte counter per partition, fed
 *                    by spread[byte] (bit j -> byte j), flushed before a
 *                    byte can overflow.
 * At the end cost_i = base[w] + cnt[i] - c8 lane i (modulo 2^32).  A
 * feature thus costs O(min(set, clear, bytes)) per word, and the dense
 * middle runs without data-dependent branches.
 */

/* cnt[i] -= lane i of c8 for the partitions of word w; lanes zeroed. */
static void flush_lanes(uint32_t k, struct rowcost *s, uint32_t w)
{
	uint64_t *c8 = s->c8 + (uint64_t)w * 8;
	uint32_t *cnt = s->cnt + (uint64_t)w * 64;
	uint32_t nb = k - w * 64 < 64 ? k - w * 64 : 64;

	for (uint32_t i = 0; i < nb; i++)
		cnt[i] -= (uint32_t)((c8[i / 8] >> (8 * (i % 8))) & 255);
	memset(c8, 0, 8 * sizeof(uint64_t));
}

/* Add one feature's mask word x (nb valid bits) for word w; returns 1 if
 * it used the byte lanes. */
static int add_word(const struct parsa_partu_ctx *ctx, struct rowcost *s,
		    uint32_t w, uint64_t x, uint32_t nb)
{
	uint32_t pop = parsa_popcount64(x), nbytes = (nb + 7) / 8;
	uint32_t *c = s->cnt + (uint64_t)w * 64;

	if (pop <= nbytes || nb - pop <= nbytes) {
		uint32_t delta = 1;

		if (2 * pop <= nb) {
			s->base[w]++;
			delta = UINT32_MAX; /* -1 */
		} else {
			x = ~x & (nb == 64 ? ~0ULL : (1ULL << nb) - 1);
		}
		for (; x; x &= x - 1)
			c[__builtin_ctzll(x)] += delta;
		return 0;
	}
	s->base[w]++;
	for (uint32_t j = 0; j < nbytes; j++, x >>= 8)
		s->c8[(uint64_t)w * 8 + j] += ctx->spread[x & 255];
	return 1;
}

/* Nonzeros ahead whose mask row_costs fetches. */
#define PARTU_AHEAD 16

/* s->cnt[i] = cost_i(r) for i < k. */
static void row_costs(const struct parsa_partu_ctx *ctx, struct rowcost *s,
		      const struct parsa_graph *g,
		      const struct parsa_nbrset *S, uint32_t r)
{
	uint32_t words = S->words, laned = 0;

	memset(s->cnt, 0, (size_t)ctx->k * sizeof(uint32_t));
	memset(s->base, 0, (size_t)words * sizeof(uint32_t));
	for (uint64_t e = g->row_ptr[r], end = g->row_ptr[r + 1]; e < end;
	     e++) {
		const uint64_t *m = parsa_nbrset_mask(S, g->col[e]);
		int used = 0;

		/* the masks are a block's slice, too large for the caches at
		 * scale: fetched ahead (on into the next rows; row_ptr[n_rows]
		 * bounds the columns) */
		if (e + PARTU_AHEAD < g->row_ptr[g->n_rows])
			base_prefetch(parsa_nbrset_mask(S, g->col[e + PARTU_AHEAD]));

		for (uint32_t w = 0; w < words; w++)
			used |= add_word(ctx, s, w, m[w],
					 w + 1 < words ? 64 : ctx->k - w * 64);
		laned += (uint32_t)used;
		if (laned == 255) {
			for (uint32_t w = 0; w < words; w++)
				flush_lanes(ctx->k, s, w);
			laned = 0;
		}
	}
	for (uint32_t w = 0; w < words; w++) {
		if (laned)
			flush_lanes(ctx->k, s, w);
		for (uint32_t i = w * 64; i < ctx->k && i < w * 64 + 64; i++)
			s->cnt[i] += s->base[w];
	}
}

/* cost_i(r) staged in every list, and ov[r] (their overlap with S), for
 * the rows r0 .. r1 - 1, with scratch s.  Tasks on disjoint row ranges
 * write disjoint elements. */
static void costs_rows(struct parsa_partu_ctx *ctx, struct rowcost *s,
		       const struct parsa_graph *g,
		       const struct parsa_nbrset *S, uint32_t r0, uint32_t r1)
{
	for (uint32_t r = r0; r < r1; r++) {
		uint64_t deg = parsa_graph_degree(g, r), ov = 0;

		row_costs(ctx, s, g, S, r);
		for (uint32_t i = 0; i < ctx->k; i++) {
			assert(s->cnt[i] <= deg);
			parsa_costlist_stage(&ctx->cl[i], r, s->cnt[i]);
			ov += deg - s->cnt[i];
		}
		ctx->ov[r] = ov;
	}
}

/* The block's transpose and cost lists (every cost staged, then the
 * counting-sort build of every list) on the caller's thread. */
static void init_costs(struct parsa_partu_ctx *ctx,
		       const struct parsa_graph *g,
		       const struct parsa_nbrset *S)
{
	build_transpose(ctx, g);
	costs_rows(ctx, &ctx->scr[0], g, S, 0, g->n_rows);
	for (uint32_t i = 0; i < ctx->k; i++)
		parsa_costlist_build(&ctx->cl[i], NULL, g->n_rows);
}

/* init_costs through ctx->par, in two steps of tasks: the transpose
 * (task 0) beside the costs of PARTU_TASKS row ranges (task t + 1: range
 * t, scratch t), then the lists' builds in PARTU_TASKS groups.  Each
 * row's costs and each list's build are computed as by init_costs, so
 * the lists are the same. */
struct begin_job {
	struct parsa_partu_ctx *ctx;
	const struct parsa_graph *g;
	const struct parsa_nbrset *S;
};

static void costs_task(void *arg, uint32_t t)
{
	const struct begin_job *j = arg;
	uint64_t n = j->g->n_rows;

	if (t == 0) {
		build_transpose(j->ctx, j->g);
		return;
	}
	t--;
	costs_rows(j->ctx, &j->ctx->scr[t], j->g, j->S,
		   (uint32_t)(n * t / PARTU_TASKS),
		   (uint32_t)(n * (t + 1) / PARTU_TASKS));
}

static void build_task(void *arg, uint32_t t)
{
	const struct begin_job *j = arg;
	uint64_t k = j->ctx->k;

	for (uint64_t i = k * t / PARTU_TASKS; i < k * (t + 1) / PARTU_TASKS;
	     i++)
		parsa_costlist_build(&j->ctx->cl[i], NULL, j->g->n_rows);
}

static void init_costs_par(struct parsa_partu_ctx *ctx,
			   const struct parsa_graph *g,
			   const struct parsa_nbrset *S)
{
	struct begin_job job = { ctx, g, S };

	ctx->par(ctx->par_arg, PARTU_TASKS + 1, costs_task, &job);
	ctx->par(ctx->par_arg, PARTU_TASKS, build_task, &job);
}

/* ------------------------------------------------------- partition choice */

static int eligible(const struct parsa_balance *bal, const uint64_t *bc,
		    uint64_t blk_cap, uint32_t i)
{
	return bal->count[i] < bal->cap && bc[i] < blk_cap;
}

/* Smallest |S_i|; ties: fewest examples, then lowest index. */
static uint32_t pick_min_s(const struct parsa_balance *bal, const uint64_t *bc,
			   uint64_t blk_cap)
{
	uint32_t best = NONE;

	for (uint32_t i = 0; i < bal->k; i++) {
		if (!eligible(bal, bc, blk_cap, i))
			continue;
		if (best == NONE || bal->s_size[i] < bal->s_size[best] ||
		    (bal->s_size[i] == bal->s_size[best] &&
		     bal->count[i] < bal->count[best]))
			best = i;
	}
	return best;
}

/* The first eligible partition from the cursor on. */
static uint32_t pick_rr(const struct parsa_balance *bal, const uint64_t *bc,
			uint64_t blk_cap)
{
	for (uint32_t step = 0; step < bal->k; step++) {
		uint32_t i = (uint32_t)((bal->rr + step) % bal->k);

		if (eligible(bal, bc, blk_cap, i))
			return i;
	}
	return NONE;
}

static uint32_t pick_by_rule(const struct parsa_balance *bal,
			     const uint64_t *bc, uint64_t blk_cap)
{
	if (bal->rule == PARSA_RULE_ROUND_ROBIN)
		return pick_rr(bal, bc, blk_cap);
	return pick_min_s(bal, bc, blk_cap);
}

/* The partition that picks next; the block cap is dropped if it blocks
 * everyone.  Never NONE once the up-front room check passed. */
static uint32_t pick_partition(struct parsa_balance *bal, const uint64_t *bc,
			       uint64_t blk_cap)
{
	uint32_t i = pick_by_rule(bal, bc, blk_cap);

	if (i == NONE)
		i = pick_by_rule(bal, bc, UINT64_MAX);
	assert(i != NONE);
	if (bal->rule == PARSA_RULE_ROUND_ROBIN)
		bal->rr = (i + 1) % bal->k;
	return i;
}

/* ----------------------------------------------------------- Algorithm 13 */

/* ceil(block_imbalance * n / k), at most n (0 = imbalance, inf = n). */
static uint64_t block_cap(const struct parsa_balance *bal, uint32_t n)
{
	double f = bal->block_imbalance > 0 ? bal->block_imbalance
					    : bal->imbalance;

	return ceil_clamp(f * n / bal->k, n);
}

/*
 * The block cap at step t (t rows of the block placed so far): the block
 * cap, lowered to an even pace floor(f * (t + 1) / k) + 1 (f the block
 * factor), so no partition runs ahead of the others by more than the
 * imbalance at any point of the block.  Under the MIN_S rule this keeps
 * the partitions with small sets from taking the cheap rows early and
 * leaving the hard ones to the rest; round-robin is paced already.
 */
static uint64_t paced_cap(const struct parsa_balance *bal, uint64_t blk_cap,
			  uint32_t t)
{
	double f = bal->block_imbalance > 0 ? bal->block_imbalance
					    : bal->imbalance;
	double pace;

	if (isinf(f))
		return blk_cap;
	pace = floor(f * ((double)t + 1.0) / bal->k) + 1.0;
	return pace < (double)blk_cap ? (uint64_t)pace : blk_cap;
}

/* cost_i -= 1 for the live block rows using local feature l (those SKIP
 * does not drop; rows is l's transpose list, compacted to them, n its
 * length on entry, m on exit).  ov[w] counts the bit for each. */
#define TOUCH_BODY(T, SKIP)                                                  \
	do {                                                                 \
		T *rows = (T *)trow + ctx->tptr[l];                          \
									     \
		for (uint32_t x = 0; x < n; x++) {                           \
			uint32_t w = rows[x];                                \
									     \
			if (SKIP)                                            \
				continue;                                    \
			rows[m++] = (T)w;                                    \
			ov[w]++;                                             \
			parsa_costlist_decrement(cl, w);                     \
		}                                                            \
	} while (0)

/* Returns the decrements made; the rows placed so far are dropped. */
static uint32_t touch_feature(struct parsa_partu_ctx *ctx,
			      struct parsa_costlist *cl, uint32_t l)
{
	uint32_t n = ctx->tlen[l], m = 0;
	void *trow = ctx->trow;
	uint64_t *ov = ctx->ov;

	if (ctx->trow16)
		TOUCH_BODY(uint16_t, ctx->done[w]);
	else
		TOUCH_BODY(uint32_t, ctx->done[w]);
	ctx->tlen[l] = m;
	return m;
}

/* touch_feature for a step-at item, by consumer c on its own lists: the
 * rows placed at steps up to at are dropped, exactly those touch_feature
 * drops right after step at (rows placed later read NONE or their later
 * step, and either keeps them). */
static uint32_t touch_feature_at(const struct parsa_partu_ctx *ctx,
				 struct consumer *c, struct parsa_costlist *cl,
				 uint32_t l, uint32_t at)
{
	uint32_t n = c->tlen[l], m = 0;
	void *trow = c->trow;
	uint64_t *ov = c->ov;

	if (ctx->trow16)
		TOUCH_BODY(uint16_t,
			   __atomic_load_n(&ctx->step[w], __ATOMIC_RELAXED) <=
				   at);
	else
		TOUCH_BODY(uint32_t,
			   __atomic_load_n(&ctx->step[w], __ATOMIC_RELAXED) <=
				   at);
	c->tlen[l] = m;
	return m;
}

/* Add N(u) \ S_i to S_i, updating the costs of list i. */
static void grow_set(struct parsa_partu_ctx *ctx, const struct parsa_graph *g,
		     struct parsa_nbrset *S, struct parsa_balance *bal,
		     uint32_t i, uint32_t u, struct parsa_partu_stats *st)
{
	struct parsa_costlist *cl = &ctx->cl[i];

	uint64_t end = g->row_ptr[u + 1];

	for (uint64_t e = g->row_ptr[u]; e < end; e++) {
		uint32_t l = g->col[e];

		if (e + 4 < end) {  /* a few features ahead: mask, transpose */
			uint32_t a = g->col[e + 4];

			base_prefetch(parsa_nbrset_mask(S, a));
			base_prefetch(&ctx->tlen[a]);
			base_prefetch(&ctx->tptr[a]);
		}
		if (!parsa_nbrset_add(S, l, i))
			continue;
		bal->s_size[i]++;
		st->new_bits++;
		st->decrements += touch_feature(ctx, cl, l);
	}
}

/*
 * The cheapest unassigned row of list cl (the front of its lowest bucket),
 * or NIL.  An assigned row is removed from the other k - 1 lists lazily:
 * it stays there (never decremented again) and is dropped here when it
 * reaches the front of the lowest bucket.  Unlink and push-front keep the
 * relative order of the other items, so the result is exactly that of
 * removing it eagerly from all k lists (Algorithm 13, line 16), while rows
 * that never surface cost nothing.
 */
static uint32_t live_front(const struct parsa_partu_ctx *ctx,
			   struct parsa_costlist *cl)
{
	for (;;) {
		uint32_t c = parsa_costlist_min_cost(cl), u;

		if (c == UINT32_MAX)
			return PARSA_CL_NIL;
		u = parsa_costlist_front(cl, c);
		if (!ctx->done[u])
			return u;
		parsa_costlist_drop_front(cl, c); /* never seen again here */
	}
}

/* Take the cheapest unassigned row of list cl (see live_front); *cost
 * gets its cost. */
static uint32_t take_live(struct parsa_partu_ctx *ctx,
			  struct parsa_costlist *cl, uint32_t *cost)
{
	uint32_t u = live_front(ctx, cl);

	if (u != PARSA_CL_NIL) {
		*cost = parsa_costlist_cost(cl, u);
		parsa_costlist_remove(cl, u);
	}
	return u;
}

/* ov[w] (the asynchronous run: both consumers' counts, which are whole
 * only when every item has finished). */
static uint64_t ov_of(const struct parsa_partu_ctx *ctx, uint32_t w)
{
	return ctx->async ? ctx->ov[w] + ctx->cons[1].ov[w] : ctx->ov[w];
}

/*
 * The seed of an empty partition: among the cheapest unassigned rows of
 * cl, the one sharing the fewest features with the other partitions' sets
 * (smallest ov), first in list order on ties.  O(bucket), stopping at
 * ov == 0: a partition stays empty only while it takes empty rows, and an
 * empty row (cost 0, ov 0) ends the scan at once, so seeding costs
 * O(k * n_block) per block at most.
 */
static uint32_t take_seed(struct parsa_partu_ctx *ctx,
			  struct parsa_costlist *cl, uint32_t *cost)
{
	uint32_t best = live_front(ctx, cl);
	uint64_t ob;

	if (best == PARSA_CL_NIL)
		return best;
	ob = ov_of(ctx, best);
	for (uint32_t w = parsa_costlist_next(cl, best);
	     w != PARSA_CL_NIL && ob > 0; w = parsa_costlist_next(cl, w))
		if (!ctx->done[w] && ov_of(ctx, w) < ob) {
			best = w;
			ob = ov_of(ctx, w);
		}
	*cost = parsa_costlist_cost(cl, best);
	parsa_costlist_remove(cl, best);
	return best;
}

/* Place u (already taken from list i) in partition i. */
static void assign(struct parsa_partu_ctx *ctx, const struct parsa_graph *g,
		   struct parsa_nbrset *S, struct parsa_balance *bal,
		   uint32_t i, uint32_t u, struct parsa_partu_stats *st)
{
	ctx->done[u] = 1;
	bal->count[i]++;
	ctx->blk_count[i]++;
	st->assigned++;
	grow_set(ctx, g, S, bal, i, u, st);
}

/* ------------------------------------------------ the asynchronous run */

/*
 * With par, a block's run is split over two threads.  The picking thread
 * (async_run) makes every choice in order, as parsa_partu_block_run does:
 * the partition (the rule needs only the counts and |S_i|, which it
 * keeps: |S_i| grows by the cost of the row taken, the number of its
 * features new to S_i), then that partition's cheapest row.  The growth
 * of S_i and the decrements of list i that follow (grow_set's work, most
 * of a step's) go to a ring as an item; the other thread (async_worker)
 * and the picking thread itself, whenever it waits, take items from the
 * ring and do them.  List i is only read by the picking thread once
 * partition i has no item unfinished (pending[i], released by the
 * consumer that finished it), so at most one item per partition is out
 * and each list sees the same operations in the same order as in the
 * serial run.  An item drops the rows placed by its step and before (by
 * their step), just as the serial run drops the rows placed when it runs
 * the step, so the lists are exactly the serial run's.  Seeding reads ov,
 * which every item adds to: it waits for all items first.  The bits of
 * S are set atomically (two partitions' bits share a word); each
 * consumer scans its own copy of the transpose.
 */

/* Spin politely: a pause, and the CPU given up now and then. */
static void relax(uint32_t *spins)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	if (++*spins % 256 == 0)
		sched_yield();
}

/* The asynchronous run's arrays for block g (grow: their content is
 * rewritten by async_begin): 0 or PARSA_ENOMEM. */
static int async_reserve(struct parsa_partu_ctx *ctx,
			 const struct parsa_graph *g, struct parsa_err *err)
{
	uint64_t w = ctx->trow16 ? sizeof(uint16_t) : sizeof(uint32_t);

	if (grow((void **)&ctx->step, &ctx->a_step, g->n_rows,
		 sizeof(uint32_t)) ||
	    grow((void **)&ctx->cons[1].ov, &ctx->a_ov, g->n_rows,
		 sizeof(uint64_t)) ||
	    grow((void **)&ctx->cons[1].tlen, &ctx->a_feat, g->n_cols,
		 sizeof(uint32_t)) ||
	    grow(&ctx->cons[1].trow, &ctx->a_trow_bytes,
		 parsa_graph_nnz(g) * w, 1))
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a block of %u rows on two "
				  "threads", g->n_rows);
	return 0;
}

/* Ready the asynchronous run of block g (its lists and transpose built). */
static void async_begin(struct parsa_partu_ctx *ctx,
			const struct parsa_graph *g)
{
	size_t w = ctx->trow16 ? sizeof(uint16_t) : sizeof(uint32_t);

	memset(ctx->step, 0xff, (size_t)g->n_rows * sizeof(uint32_t));
	memset(ctx->cons[1].ov, 0, (size_t)g->n_rows * sizeof(uint64_t));
	memcpy(ctx->cons[1].tlen, ctx->tlen, (size_t)g->n_cols * sizeof(uint32_t));
	memcpy(ctx->cons[1].trow, ctx->trow, (size_t)parsa_graph_nnz(g) * w);
	ctx->cons[0] = (struct consumer){ ctx->tlen, ctx->trow, ctx->ov, 0, 0 };
	ctx->cons[1].new_bits = ctx->cons[1].decrements = 0;
	memset(ctx->pending, 0, ctx->k);
	ctx->head = ctx->tail = 0;
	ctx->issued = ctx->finished = 0;
	ctx->started = ctx->stop = 0;
	ctx->async = 1;
}

/* grow_set's work for item it, by consumer c (bal->s_size is the picking
 * thread's). */
static void grow_item(struct parsa_partu_ctx *ctx, struct consumer *c,
		      const struct parsa_graph *g, struct parsa_nbrset *S,
		      struct grow_item it)
{
	struct parsa_costlist *cl = &ctx->cl[it.i];
	uint64_t end = g->row_ptr[it.u + 1];

	for (uint64_t e = g->row_ptr[it.u]; e < end; e++) {
		uint32_t l = g->col[e];

		if (e + 4 < end) {
			uint32_t a = g->col[e + 4];

			base_prefetch(parsa_nbrset_mask(S, a));
			base_prefetch(&c->tlen[a]);
			base_prefetch(&ctx->tptr[a]);
		}
		if (!parsa_nbrset_add_shared(S, l, it.i))
			continue;
		c->new_bits++;
		c->decrements += touch_feature_at(ctx, c, cl, l, it.t);
	}
}

/* Take the oldest unclaimed item, if any, and do it as consumer c;
 * returns 0 if there was none.  The slot is read before the claim (and
 * dropped if another consumer claims it first); it cannot be reissued
 * meanwhile, as at most k items are out and the ring holds more than 2k. */
static int consume_one(struct parsa_partu_ctx *ctx, const struct parsa_graph *g,
		       struct parsa_nbrset *S, uint32_t c)
{
	uint32_t h = __atomic_load_n(&ctx->head, __ATOMIC_ACQUIRE);
	struct grow_item *slot, it;

	if (h == __atomic_load_n(&ctx->tail, __ATOMIC_ACQUIRE))
		return 0;
	slot = &ctx->ring[h & ctx->ring_mask];
	it.i = __atomic_load_n(&slot->i, __ATOMIC_RELAXED);
	it.u = __atomic_load_n(&slot->u, __ATOMIC_RELAXED);
	it.t = __atomic_load_n(&slot->t, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&ctx->head, &h, h + 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 1;
	grow_item(ctx, &ctx->cons[c], g, S, it);
	__atomic_store_n(&ctx->pending[it.i], 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&ctx->finished, 1, __ATOMIC_RELEASE);
	return 1;
}

/* Hand partition i's growth by row u at step t to the consumers. */
static void issue(struct parsa_partu_ctx *ctx, uint32_t i, uint32_t u,
		  uint32_t t)
{
	struct grow_item *slot = &ctx->ring[ctx->tail & ctx->ring_mask];

	__atomic_store_n(&slot->i, i, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->u, u, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->t, t, __ATOMIC_RELAXED);
	__atomic_store_n(&ctx->pending[i], 1, __ATOMIC_RELAXED);
	ctx->issued++;
	__atomic_store_n(&ctx->tail, ctx->tail + 1, __ATOMIC_RELEASE);
}

/* Until partition i (NONE: every partition) has no item out, doing items
 * meanwhile. */
static void async_wait(struct parsa_partu_ctx *ctx, const struct parsa_graph *g,
		       struct parsa_nbrset *S, uint32_t i)
{
	uint32_t spins = 0;

	while (i == NONE ? __atomic_load_n(&ctx->finished, __ATOMIC_ACQUIRE) !=
				   ctx->issued
			 : __atomic_load_n(&ctx->pending[i], __ATOMIC_ACQUIRE))
		if (!consume_one(ctx, g, S, 0))
			relax(&spins);
}

/* parsa_partu_block_run of the whole block, as the picking thread. */
static void async_run(struct parsa_partu_ctx *ctx, const struct parsa_graph *g,
		      struct parsa_nbrset *S, struct parsa_balance *bal,
		      uint32_t *part, struct parsa_partu_stats *st)
{
	uint64_t assigned = 0;

	__atomic_store_n(&ctx->started, 1, __ATOMIC_RELEASE);
	for (; ctx->t < ctx->n; ctx->t++) {
		uint32_t i = pick_partition(bal, ctx->blk_count,
					    paced_cap(bal, ctx->blk_cap, ctx->t));
		uint32_t u, cost;

		if (bal->s_size[i] == 0) {
			async_wait(ctx, g, S, NONE);
			u = take_seed(ctx, &ctx->cl[i], &cost);
		} else {
			async_wait(ctx, g, S, i);
			u = take_live(ctx, &ctx->cl[i], &cost);
		}
		assert(u != PARSA_CL_NIL);
		part[u] = i;
		ctx->done[u] = 1;
		__atomic_store_n(&ctx->step[u], ctx->t, __ATOMIC_RELAXED);
		bal->count[i]++;
		ctx->blk_count[i]++;
		assigned++;
		bal->s_size[i] += cost;
		if (cost > 0)
			issue(ctx, i, u, ctx->t);
	}
	async_wait(ctx, g, S, NONE);
	__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELEASE);
	if (st) {
		st->assigned += assigned;
		for (uint32_t c = 0; c < 2; c++) {
			st->new_bits += ctx->cons[c].new_bits;
			st->decrements += ctx->cons[c].decrements;
		}
	}
}

/* Spins the other thread waits for the picking thread to begin; then it
 * leaves the block to it (a par that runs the tasks one after another,
 * in any order, must not wait for ever). */
#define ASYNC_START_SPINS 4096

/* The other thread: items until the picking thread is done. */
static void async_worker(struct parsa_partu_ctx *ctx,
			 const struct parsa_graph *g, struct parsa_nbrset *S)
{
	uint32_t spins = 0;

	while (!__atomic_load_n(&ctx->started, __ATOMIC_ACQUIRE))
		if (spins >= ASYNC_START_SPINS)
			return;
		else
			relax(&spins);
	for (spins = 0;;) {
		if (consume_one(ctx, g, S, 1))
			spins = 0;
		else if (__atomic_load_n(&ctx->stop, __ATOMIC_ACQUIRE))
			return;
		else
			relax(&spins);
	}
}

static int check_block(const struct parsa_partu_ctx *ctx,
		       const struct parsa_block *blk,
		       const struct parsa_nbrset *S,
		       const struct parsa_balance *bal, struct parsa_err *err)
{
	uint64_t room = 0;

	if (S->k != ctx->k || bal->k != ctx->k)
		return parsa_fail(err, PARSA_EINVAL,
				  "k mismatch: context %u, sets %u, balance %u",
				  ctx->k, S->k, bal->k);
	if (S->n_feat != blk->g.n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "neighbor-set slice has %u features, block %u",
				  S->n_feat, blk->g.n_cols);
	for (uint32_t i = 0; i < bal->k && room < blk->g.n_rows; i++)
		room += bal->count[i] < bal->cap ? bal->cap - bal->count[i] : 0;
	if (room < blk->g.n_rows)
		return parsa_fail(err, PARSA_EINVAL,
				  "balance cap %llu leaves room for %llu of %u examples",
				  (unsigned long long)bal->cap,
				  (unsigned long long)room, blk->g.n_rows);
	return 0;
}

int parsa_partu_block_begin(struct parsa_partu_ctx *ctx,
			    const struct parsa_block *blk,
			    const struct parsa_nbrset *S,
			    const struct parsa_balance *bal,
			    struct parsa_err *err)
{
	const struct parsa_graph *g = &blk->g;
	int rc;

	ctx->t = ctx->n = 0;
	ctx->async = 0;
	rc = check_block(ctx, blk, S, bal, err);
	if (rc || g->n_rows == 0)
		return rc;
	rc = ctx_reserve(ctx, g, err);
	if (rc)
		return rc;
	if (ctx->par && g->n_rows >= PARTU_PAR_MIN_ROWS) {
		rc = async_reserve(ctx, g, err);
		if (rc)
			return rc;
		init_costs_par(ctx, g, S);
		async_begin(ctx, g);
	} else {
		init_costs(ctx, g, S);
	}
	ctx->n = g->n_rows;
	ctx->blk_cap = block_cap(bal, g->n_rows);
	memset(ctx->blk_count, 0, (size_t)ctx->k * sizeof(uint64_t));
	memset(ctx->done, 0, g->n_rows);
	return 0;
}

void parsa_partu_block_run(struct parsa_partu_ctx *ctx,
			   const struct parsa_block *blk,
			   struct parsa_nbrset *S, struct parsa_balance *bal,
			   uint32_t *part, uint32_t upto,
			   struct parsa_partu_stats *st)
{
	const struct parsa_graph *g = &blk->g;
	struct parsa_partu_stats local = {0};

	for (upto = upto < ctx->n ? upto : ctx->n; ctx->t < upto; ctx->t++) {
		uint32_t i = pick_partition(bal, ctx->blk_count,
					    paced_cap(bal, ctx->blk_cap, ctx->t));
		uint32_t cost;
		uint32_t u = bal->s_size[i] == 0
				     ? take_seed(ctx, &ctx->cl[i], &cost)
				     : take_live(ctx, &ctx->cl[i], &cost);

		assert(u != PARSA_CL_NIL);
		part[u] = i;
		assign(ctx, g, S, bal, i, u, &local);
	}
	if (st) {
		st->assigned += local.assigned;
		st->new_bits += local.new_bits;
		st->decrements += local.decrements;
	}
}

uint32_t parsa_partu_block_merge(struct parsa_partu_ctx *ctx,
				 struct parsa_nbrset *S, uint32_t l,
				 const uint64_t *mask)
{
	uint32_t added = 0;

	for (uint32_t q = 0; q < S->words; q++)
		for (uint64_t m = mask[q]; m; m &= m - 1) {
			uint32_t i = q * 64 + (uint32_t)__builtin_ctzll(m);

			if (i >= S->k || !parsa_nbrset_add(S, l, i))
				continue;
			added++;
			if (ctx->n)
				touch_feature(ctx, &ctx->cl[i], l);
		}
	return added;
}

int parsa_partu_block(struct parsa_partu_ctx *ctx,
		      const struct parsa_block *blk, struct parsa_nbrset *S,
		      struct parsa_balance *bal, uint32_t *part,
		      struct parsa_partu_stats *st, struct parsa_err *err)
{
	int rc = parsa_partu_block_begin(ctx, blk, S, bal, err);

	if (rc == 0)
		parsa_partu_block_run(ctx, blk, S, bal, part, blk->g.n_rows,
				      st);
	return rc;
}

/* parsa_partu_block_par's two tasks: the picker (0) and the worker (1). */
struct solo_job {
	struct parsa_partu_ctx *ctx;
	const struct parsa_block *blk;
	struct parsa_nbrset *S;
	struct parsa_balance *bal;
	uint32_t *part;
	struct parsa_partu_stats *st;
};

static void solo_task(void *arg, uint32_t t)
{
	struct solo_job *j = arg;

	if (t == 0)
		async_run(j->ctx, &j->blk->g, j->S, j->bal, j->part, j->st);
	else
		async_worker(j->ctx, &j->blk->g, j->S);
}

int parsa_partu_block_par(struct parsa_partu_ctx *ctx,
			  const struct parsa_block *blk, struct parsa_nbrset *S,
			  struct parsa_balance *bal, uint32_t *part,
			  struct parsa_partu_stats *st, struct parsa_err *err)
{
	int rc = parsa_partu_block_begin(ctx, blk, S, bal, err);
	struct solo_job j = { ctx, blk, S, bal, part, st };

	if (rc == 0 && ctx->async)
		ctx->par(ctx->par_arg, 2, solo_task, &j);
	else if (rc == 0)
		parsa_partu_block_run(ctx, blk, S, bal, part, blk->g.n_rows,
				      st);
	return rc;
}

/* ----------------------------------------------------------------- driver */

int parsa_blocks_split(uint32_t n, uint32_t b, uint64_t seed, uint32_t *perm,
		       uint32_t *start, struct parsa_err *err)
{
	struct parsa_rng rng;

	if (b == 0)
		return parsa_fail(err, PARSA_EINVAL, "blocks must be >= 1");
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	parsa_rng_seed(&rng, seed);
	parsa_rng_shuffle_u32(&rng, perm, n);
	for (uint64_t j = 0; j <= b; j++)
		start[j] = (uint32_t)(j * n / b);
	return 0;
}

/* State of one sequential run. */
struct run {
	const struct parsa_graph *g;
	const struct parsa_partu_opts *o;
	uint32_t b, a;              /* blocks (clamped), warm-up blocks */
	uint32_t *perm, *start;     /* the random split */
	uint32_t *map;              /* g->n_cols scratch, all UINT32_MAX */
	uint32_t *lpart;            /* part of the current block's rows */
	struct parsa_partu_ctx *ctx;
	struct parsa_block blk[2];  /* current and previous block */
	struct parsa_nbrset slice;  /* the current block's slice of S */
	uint64_t done;              /* blocks finished (progress) */
};

static void run_free(struct run *r)
{
	free(r->perm);
	free(r->start);
	free(r->map);
	free(r->lpart);
	parsa_partu_ctx_destroy(r->ctx);
	parsa_block_release(&r->blk[0]);
	parsa_block_release(&r->blk[1]);
	parsa_nbrset_release(&r->slice);
}

static int run_setup(struct run *r, struct parsa_err *err)
{
	uint32_t n = r->g->n_rows, nc = r->g->n_cols;
	uint32_t max_rows = n / r->b + (n % r->b != 0);
	int rc;

	r->perm = malloc((n ? n : 1) * sizeof(uint32_t));
	r->start = malloc(((size_t)r->b + 1) * sizeof(uint32_t));
	r->map = malloc((nc ? nc : 1) * sizeof(uint32_t));
	r->lpart = malloc((max_rows ? max_rows : 1) * sizeof(uint32_t));
	if (!r->perm || !r->start || !r->map || !r->lpart)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %u examples", n);
	memset(r->map, 0xff, (size_t)nc * sizeof(uint32_t));
	parsa_blocks_split(n, r->b, r->o->seed, r->perm, r->start, NULL);
	rc = parsa_partu_ctx_create(&r->ctx, r->o->k, max_rows, err);
	if (!rc && r->o->par)
		rc = parsa_partu_ctx_set_par(r->ctx, r->o->par,
					     r->o->par_arg, err);
	return rc;
}

static void report_progress(struct run *r)
{
	r->done++;
	if (r->o->progress)
		r->o->progress(r->o->progress_arg, r->done,
			       (uint64_t)r->a + r->b);
}

/* Block j's rows extracted into *blk (r->map is the scratch). */
static int extract_block(struct run *r, uint32_t j, struct parsa_block *blk,
			 struct parsa_err *err)
{
	return parsa_block_extract(blk, r->g, r->perm + r->start[j],
				   r->start[j + 1] - r->start[j], r->map, err);
}

/* A block's run (task 0) beside the extraction of block `next` into
 * *nblk (task 1; nothing when next is NONE), through r->o->par.  The two
 * share nothing: the run uses the context, the slice and lpart, the
 * extraction the graph, the split and r->map. */
struct pair_job {
	struct run *r;
	const struct parsa_block *blk;
	struct parsa_balance *bal;
	struct parsa_partu_stats *st;
	uint32_t next;
	struct parsa_block *nblk;
	int rc;               /* the extraction's */
	struct parsa_err err; /* its message */
};

static void pair_task(void *arg, uint32_t t)
{
	struct pair_job *p = arg;
	struct parsa_partu_ctx *ctx = p->r->ctx;

	if (t == 0 && ctx->async)
		async_run(ctx, &p->blk->g, &p->r->slice, p->bal, p->r->lpart,
			  p->st);
	else if (t == 0)
		parsa_partu_block_run(ctx, p->blk, &p->r->slice, p->bal,
				      p->r->lpart, p->blk->g.n_rows, p->st);
	else if (t == 1 && p->next != NONE)
		p->rc = extract_block(p->r, p->next, p->nblk, &p->err);
	else if (t == 2)
		async_worker(ctx, &p->blk->g, &p->r->slice);
}

/* Run Algorithm 13 on block j against X's slice (left in r->slice; X
 * itself is not changed); parts go to r->lpart.  nblk NULL: block j is
 * extracted into *blk first; else *blk holds it already, and block j + 1
 * (if any) is extracted into *nblk beside the run, through r->o->par. */
static int solve_block(struct run *r, uint32_t j, struct parsa_block *blk,
		       const struct parsa_nbrset *X, struct parsa_balance *bal,
		       struct parsa_partu_stats *st, struct parsa_block *nblk,
		       struct parsa_err *err)
{
	int rc = 0;

	if (r->o->cancel && *r->o->cancel)
		return parsa_fail(err, PARSA_ECANCEL, "cancelled");
	if (!nblk)
		rc = extract_block(r, j, blk, err);
	if (rc)
		return rc;
	parsa_nbrset_release(&r->slice);
	rc = parsa_nbrset_init(&r->slice, blk->g.n_cols, X->k, err);
	if (rc)
		return rc;
	parsa_nbrset_gather(&r->slice, X, blk->feat);
	memcpy(bal->s_size, X->size, (size_t)X->k * sizeof(uint64_t));
	if (!nblk) {
		rc = parsa_partu_block(r->ctx, blk, &r->slice, bal, r->lpart,
				       st, err);
	} else {
		rc = parsa_partu_block_begin(r->ctx, blk, &r->slice, bal, err);
		if (!rc) {
			struct pair_job p = {
				.r = r, .blk = blk, .bal = bal, .st = st,
				.next = j + 1 < r->b ? j + 1 : NONE,
				.nblk = nblk,
			};

			r->o->par(r->o->par_arg, r->ctx->async ? 3 : 2,
				  pair_task, &p);
			if (p.rc)
				*err = p.err;
			rc = p.rc;
		}
	}
	if (!rc)
		report_progress(r);
	return rc;
}

/* A balance over n examples with the run's options. */
static int run_balance(const struct run *r, uint64_t n,
		       struct parsa_balance *bal, struct parsa_err *err)
{
	int rc = parsa_balance_init(bal, r->o->k, n, r->o->rule,
				    r->o->imbalance, err);

	if (!rc && r->o->block_imbalance > 0)
		bal->block_imbalance = r->o->block_imbalance;
	return rc;
}

/* T := S on the features of blk (undo the previous warm-up block's bits). */
static void restore_features(struct parsa_nbrset *T,
			     const struct parsa_nbrset *S,
			     const struct parsa_block *blk)
{
	for (uint32_t l = 0; l < blk->g.n_cols; l++)
		parsa_nbrset_set_mask(T, blk->feat[l],
				      parsa_nbrset_mask(S, blk->feat[l]));
}

/* T |= N(U_i) of the block's rows under r->lpart. */
static void add_block_sets(struct parsa_nbrset *T, const struct parsa_block *blk,
			   const uint32_t *lpart)
{
	const struct parsa_graph *g = &blk->g;

	for (uint32_t r = 0; r < g->n_rows; r++)
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			parsa_nbrset_add(T, blk->feat[g->col[e]], lpart[r]);
}

/* Individual initialization: T enters as a copy of S and leaves as
 * S ∪ N(partition of the last warm-up block). */
static int warm_up(struct run *r, const struct parsa_nbrset *S,
		   struct parsa_nbrset *T, struct parsa_err *err)
{
	for (uint32_t j = 0; j < r->a; j++) {
		struct parsa_block *cur = &r->blk[j & 1], *prev = &r->blk[!(j & 1)];
		struct parsa_balance bal;
		uint32_t n = r->start[j + 1] - r->start[j];
		int rc;

		rc = run_balance(r, n, &bal, err);
		if (!rc)
			rc = solve_block(r, j, cur, T, &bal, NULL, NULL, err);
		parsa_balance_release(&bal);
		if (rc)
			return rc;
		if (j > 0)
			restore_features(T, S, prev);
		add_block_sets(T, cur, r->lpart);
	}
	return 0;
}

/* All b blocks in order, carrying X.  With r->o->par and blocks of at
 * least PARTU_PAR_MIN_ROWS rows, block j + 1 is extracted (into the other
 * of r->blk) while block j runs (smaller blocks: not worth a task). */
static int main_pass(struct run *r, struct parsa_nbrset *X, uint32_t *part,
		     struct parsa_partu_stats *st, struct parsa_err *err)
{
	struct parsa_balance bal;
	int piped = r->o->par != NULL &&
		    r->start[1] - r->start[0] >= PARTU_PAR_MIN_ROWS;
	int rc;

	rc = run_balance(r, r->g->n_rows, &bal, err);
	if (!rc && piped)
		rc = extract_block(r, 0, &r->blk[0], err);
	for (uint32_t j = 0; j < r->b && !rc; j++) {
		struct parsa_block *blk = &r->blk[piped ? j & 1 : 0];

		rc = solve_block(r, j, blk, X, &bal, st,
				 piped ? &r->blk[!(j & 1)] : NULL, err);
		if (rc)
			break;
		parsa_nbrset_scatter_or(X, &r->slice, blk->feat);
		for (uint32_t q = 0; q < blk->g.n_rows; q++)
			part[blk->rows[q]] = r->lpart[q];
		assert(memcmp(bal.s_size, X->size,
			      (size_t)X->k * sizeof(uint64_t)) == 0);
	}
	parsa_balance_release(&bal);
	return rc;
}

/* S |= N(U_i) for the whole placement; returns the new bits. */
static uint64_t add_placement(struct parsa_nbrset *S,
			      const struct parsa_graph *g, const uint32_t *part)
{
	uint64_t added = 0;

	for (uint32_t r = 0; r < g->n_rows; r++)
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			added += (uint64_t)parsa_nbrset_add(S, g->col[e], part[r]);
	return added;
}

/* Warm up on a copy T of S, run the main pass on T, then set S to
 * S ∪ N(U_i) (the warm-up bits only guided the choices). */
static int run_with_warm_up(struct run *r, struct parsa_nbrset *S,
			    uint32_t *part, struct parsa_partu_stats *st,
			    struct parsa_err *err)
{
	struct parsa_nbrset T;
	struct parsa_partu_stats ms = {0};
	int rc;

	rc = parsa_nbrset_init(&T, S->n_feat, S->k, err);
	if (rc)
		return rc;
	parsa_nbrset_copy(&T, S);
	rc = warm_up(r, S, &T, err);
	if (!rc)
		rc = main_pass(r, &T, part, &ms, err);
	parsa_nbrset_release(&T);
	if (rc)
		return rc;
	st->assigned += ms.assigned;
	st->decrements += ms.decrements;
	st->new_bits += add_placement(S, r->g, part);
	return 0;
}

static int check_run(const struct parsa_graph *g,
		     const struct parsa_partu_opts *o,
		     const struct parsa_nbrset *S, struct parsa_err *err)
{
	if (o->k == 0 || S->k != o->k)
		return parsa_fail(err, PARSA_EINVAL,
				  "k must be >= 1 and match the neighbor sets (%u vs %u)",
				  o->k, S->k);
	if (S->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "neighbor sets have %u features, graph %u",
				  S->n_feat, g->n_cols);
	if (o->init_blocks > parsa_partu_blocks(o, UINT32_MAX))
		return parsa_fail(err, PARSA_EINVAL,
				  "need init_blocks <= blocks (b=%u, a=%u)",
				  parsa_partu_blocks(o, UINT32_MAX),
				  o->init_blocks);
	if (!(o->imbalance >= 1.0) || !isfinite(o->imbalance))
		return parsa_fail(err, PARSA_EINVAL,
				  "imbalance must be a finite number >= 1 (got %g)",
				  o->imbalance);
	if (o->rule != PARSA_RULE_MIN_S && o->rule != PARSA_RULE_ROUND_ROBIN)
		return parsa_fail(err, PARSA_EINVAL, "unknown partition rule %d",
				  (int)o->rule);
	if (o->block_imbalance != 0 && !(o->block_imbalance >= 1.0))
		return parsa_fail(err, PARSA_EINVAL,
				  "block imbalance must be 0, >= 1 or infinity (got %g)",
				  o->block_imbalance);
	return 0;
}

int parsa_partition_u(const struct parsa_graph *g,
		      const struct parsa_partu_opts *o, struct parsa_nbrset *S,
		      uint32_t *part, struct parsa_partu_stats *st,
		      struct parsa_err *err)
{
	struct run r = {.g = g, .o = o};
	struct parsa_partu_stats dummy = {0};
	int rc;

	rc = check_run(g, o, S, err);
	if (rc || g->n_rows == 0)
		return rc;
	if (!st)
		st = &dummy;
	r.b = parsa_partu_blocks(o, g->n_rows);
	r.a = o->init_blocks < r.b ? o->init_blocks : r.b;
	parsa_block_init(&r.blk[0]);
	parsa_block_init(&r.blk[1]);
	rc = run_setup(&r, err);
	if (!rc && r.a > 0)
		rc = run_with_warm_up(&r, S, part, st, err);
	else if (!rc)
		rc = main_pass(&r, S, part, st, err);
	run_free(&r);
	return rc;
}
