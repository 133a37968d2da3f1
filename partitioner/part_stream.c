/*
 * part_stream: Parsa on a LIBSVM file streamed in blocks (see
 * part_stream.h for the blocks, keys, tables and phases).
 *
 * Layout of this file: keys and the random baseline's draws, the job, the
 * worker (reading its blocks, one PS iteration per block), the server
 * hooks (M, Algorithm 11, counters, dump), the scheduler, the run.
 */
#include "part_stream.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base_hash.h"
#include "parsa_rng.h"
#include "part_hash.h"
#include "part_io.h"
#include "part_masks.h"
#include "part_progress.h"
#include "part_reader.h"

#define TBL_SSIZE 0
#define TBL_COUNT 1
#define TBL_USED 2
#define NUM_TABLES 3
#define HOOK_M 1      /* -> M[k], V_used; builds the server's state */
#define HOOK_PARTV 2  /* (greedy, sweeps, T[k]) -> (T[k], moves) */
#define HOOK_COUNTS 3 /* -> (1 + R) x (M, T, local)[k], V_used; frees masks */
#define HOOK_DUMP 4   /* -> n, ids[n], owners[n]; frees the state */
#define TASK_MAGIC 0x5053544bu /* "PSTK" */
#define REC_BLOCK 0x50534250u  /* "PSBP": a block's parts */
#define REC_END 0x50534e44u    /* "PSND": a worker's totals */

/* ------------------------------------------------------------- hashing */

/* Random trial t: the server of key, and the rng of block b. */
static uint32_t rnd_owner(uint64_t seed, uint32_t t, uint64_t key,
			  uint32_t k)
{
	return (uint32_t)(base_mix64(key ^ base_mix64(seed + t)) %
			  k);
}

static void rnd_block_rng(struct parsa_rng *g, uint64_t seed, uint32_t t,
			  uint64_t b)
{
	parsa_rng_seed(g, base_mix64(seed + t) ^ base_mix64(~b));
}

/* -------------------------------------------------------------- options */

void part_stream_opts_default(struct part_stream_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->k = 0;
	o->rule = PARSA_RULE_MIN_S;
	o->imbalance = 1.0;
	o->seed = 1;
	o->sweeps = 4;
	o->random_trials = 5;
}

double part_stream_row_bytes(double avg_nnz, uint32_t k, uint32_t trials)
{
	double width = ceil(k / 8.0), words = ceil(k / 64.0);
	/* per entry: local id, graph column, transpose, row buffer, parsing
	 * (raw id) and the hash map's share; per row: offsets, cost lists
	 * (k entries of prev/next/cost), part; per feature (<= entries):
	 * key, sort pair, rank, slice masks, the pulled USED values and the
	 * pushed ones.  (Until the pull read USED, a separate S table's
	 * masks and a snapshot of the slice were counted: 16 words + 2 width
	 * + the USED values; the larger of the two is kept so --mem-limit
	 * gives the same blocks as before whenever that was not less.) */
	double per_entry = 4 + 4 + 4 + 4 + 8 + 12;
	double old_feat = 16 * words + 2 * width + (1 + trials) * width;
	double now_feat = 8 * words + 2 * (1 + trials) * width;
	double per_feat = 8 + 16 + 4 + (now_feat > old_feat ? now_feat
							     : old_feat);
	double per_row = 16 + 12.0 * k + 8;

	return avg_nnz * (per_entry + per_feat) + per_row;
}

/* ------------------------------------------------------------------ job */

struct rec_block {      /* then n uint32 parts */
	uint32_t magic, worker, n, trials;
	uint64_t block, first; /* block index, its first example */
	uint64_t new_bits;
	uint32_t offset[PART_STREAM_MAX_TRIALS]; /* random trials' offsets */
};

struct rec_end {
	uint32_t magic, worker;
	uint64_t examples, lines, entries, nnz, duplicates, empty_rows;
	int64_t peak_rss_kb;
};

struct task {
	uint32_t magic, pad;
	uint64_t block_rows;
};

/* A server's state after the last block (its used features): the USED
 * table's own arrays, taken from the store (not copied). */
struct srv_state {
	uint32_t n;
	uint64_t *keys;            /* n keys */
	unsigned char *vals;       /* n * uwidth: USED values (rnd masks) */
	struct parsa_nbrset used;  /* exact N(v) of the result */
	uint32_t *owner;           /* n */
};

struct sjob {
	const char *path;
	const struct part_stream_opts *o;
	const struct part_par_opts *po;
	struct ps_transport *tp;
	uint32_t k, width, uwidth, R, W;
	uint64_t B;
	uint64_t max_id;           /* largest feature id of the sample */
	struct part_par_info *info; /* root: filled after the run */
	struct srv_state *srv;     /* num_servers (only hosted ones used) */
	/* scheduler (root) only */
	struct part_stream_result *r;
	size_t part_cap;
	uint8_t *seen;
	size_t seen_cap;
	uint64_t blocks_seen, max_block;
	uint32_t (*offsets)[PART_STREAM_MAX_TRIALS]; /* per block */
	uint64_t *block_n;
	size_t off_cap;
	uint64_t examples;         /* from the END records (all agree) */
	uint32_t ends;
	int rec_rc;
	struct parsa_err rec_err;
	uint64_t done;
};

static int rec_fail(struct sjob *jb, uint32_t worker, const char *why)
{
	if (!jb->rec_rc)
		jb->rec_rc = parsa_fail(&jb->rec_err, PARSA_EPARSE,
					"bad record from worker %u: %s",
					worker, why);
	return jb->rec_rc;
}

/* --------------------------------------------------------------- worker */

struct kpair {
	uint64_t key;
	uint32_t id;
};

struct swork {
	struct sjob *jb;
	uint32_t me;
	uint64_t B;                /* examples per block (the task's) */
	/* the block being read */
	uint64_t block, first;     /* its index and first example */
	uint32_t rows;
	uint64_t *raw;             /* one parsed line's ids */
	size_t raw_cap;
	uint32_t *ent;             /* entries as first-appearance ids */
	size_t ent_n, ent_cap;
	uint64_t *roff;            /* rows + 1 offsets into ent */
	size_t roff_cap;
	struct part_idmap map;     /* feature id -> first-appearance id */
	/* the block being partitioned */
	struct kpair *srt, *tmp;   /* radix sort and its buffer */
	size_t srt_cap, tmp_cap;
	uint32_t *rpart;           /* R x rows: random trials' parts */
	size_t rpart_cap;
	uint32_t *rank;            /* first-appearance id -> local id */
	size_t rank_cap;
	uint32_t *rowbuf;
	size_t rowbuf_cap;
	struct parsa_block blk;
	uint64_t *keys;
	size_t keys_cap;
	unsigned char *vals;       /* pulled USED values, then pushed ones */
	size_t vals_cap;
	struct parsa_nbrset slice;
	uint32_t *rec;
	size_t rec_cap;
	uint32_t *perm;
	size_t perm_cap;
	struct parsa_partu_ctx *ctx;
	struct parsa_balance bal;
	uint64_t *ckeys, *s0;
	double *cnt, *pcnt;
	int barrier_done;          /* the first barrier (after block 0) */
	int last;                  /* this block is the dataset's last */
	int pending;               /* a full block waits for the next line */
	uint64_t n;                /* examples in the file (at EOF) */
	uint32_t done;             /* blocks partitioned */
	struct rec_end tot;
};

static void sw_release(struct swork *w)
{
	free(w->raw);
	free(w->ent);
	free(w->roff);
	part_idmap_release(&w->map);
	free(w->srt);
	free(w->tmp);
	free(w->rpart);
	free(w->rank);
	free(w->rowbuf);
	parsa_block_release(&w->blk);
	free(w->keys);
	free(w->vals);
	parsa_nbrset_release(&w->slice);
	free(w->rec);
	free(w->perm);
	parsa_partu_ctx_destroy(w->ctx);
	parsa_balance_release(&w->bal);
	free(w->ckeys);
	free(w->s0);
	free(w->cnt);
	free(w->pcnt);
}

static int sw_init(struct swork *w, struct sjob *jb, uint32_t me,
		   uint64_t B, struct parsa_err *err)
{
	const struct part_stream_opts *o = jb->o;
	uint32_t k = jb->k;
	uint32_t hint = B < 65536 ? (uint32_t)B : 65536;
	int rc;

	memset(w, 0, sizeof(*w));
	w->jb = jb;
	w->me = me;
	w->B = B;
	part_idmap_init(&w->map);
	parsa_block_init(&w->blk);
	w->tot.magic = REC_END;
	w->tot.worker = me;
	w->ckeys = malloc(k * sizeof(uint64_t));
	w->s0 = malloc(k * sizeof(uint64_t));
	w->cnt = malloc(k * sizeof(double));
	w->pcnt = malloc(k * sizeof(double));
	w->roff = malloc(sizeof(uint64_t));
	if (!w->ckeys || !w->s0 || !w->cnt || !w->pcnt || !w->roff)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	w->roff_cap = 1;
	w->roff[0] = 0;
	for (uint32_t i = 0; i < k; i++)
		w->ckeys[i] = i;
	rc = parsa_partu_ctx_create(&w->ctx, k, hint, err);
	if (!rc)
		rc = parsa_balance_init(&w->bal, k, B, o->rule,
					o->imbalance, err);
	if (!rc && o->block_imbalance > 0)
		w->bal.block_imbalance = o->block_imbalance;
	return rc;
}

/* Parse one of this worker's lines into the block being read. */
static int sw_add_line(struct swork *w, struct part_lines *l,
		       const char *line, struct parsa_err *err)
{
	size_t n = 0;
	int rc = part_libsvm_row(part_lines_name(l), part_lines_lineno(l),
				 line, &w->raw, &n, &w->raw_cap, err);

	if (!rc)
		rc = part_grow((void **)&w->ent, &w->ent_cap, w->ent_n + n,
			       sizeof(uint32_t), err);
	if (!rc)
		rc = part_grow((void **)&w->roff, &w->roff_cap,
			       (size_t)w->rows + 2, sizeof(uint64_t), err);
	for (size_t j = 0; !rc && j < n; j++)
		rc = part_idmap_get(&w->map, w->raw[j], &w->ent[w->ent_n++],
				    NULL, "features", err);
	if (rc)
		return rc;
	w->rows++;
	w->roff[w->rows] = w->ent_n;
	w->tot.entries += n;
	return 0;
}

/* Sort a[0..n) by key (LSD radix, 16-bit digits; tmp: n scratch). */
static int radix_sort(struct kpair *a, struct kpair *tmp, size_t n,
		      struct parsa_err *err)
{
	size_t *cnt;

	if (n < 2)
		return 0;
	cnt = malloc(65536 * sizeof(size_t));
	if (!cnt)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (sort)");
	for (unsigned shift = 0; shift < 64; shift += 16) {
		size_t sum = 0;

		memset(cnt, 0, 65536 * sizeof(size_t));
		for (size_t i = 0; i < n; i++)
			cnt[(a[i].key >> shift) & 0xffff]++;
		for (size_t d = 0; d < 65536; d++) {
			size_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(a[i].key >> shift) & 0xffff]++] = a[i];
		memcpy(a, tmp, n * sizeof(*a));
	}
	free(cnt);
	return 0;
}

/* The block's graph over local ids in key order; keys into w->keys. */
static int sw_build(struct swork *w, struct parsa_err *err)
{
	uint32_t nf = w->map.n;
	int rc = part_grow((void **)&w->srt, &w->srt_cap, nf,
			   sizeof(struct kpair), err);

	if (!rc)
		rc = part_grow((void **)&w->tmp, &w->tmp_cap, nf,
			       sizeof(struct kpair), err);
	if (!rc)
		rc = part_grow((void **)&w->rank, &w->rank_cap, nf,
			       sizeof(uint32_t), err);
	if (!rc)
		rc = part_grow((void **)&w->keys, &w->keys_cap, nf,
			       sizeof(uint64_t), err);
	if (rc)
		return rc;
	for (uint32_t c = 0; c < nf; c++)
		w->srt[c] = (struct kpair){w->map.ids[c], c};
	rc = radix_sort(w->srt, w->tmp, nf, err);
	for (uint32_t l = 0; !rc && l < nf; l++) {
		w->rank[w->srt[l].id] = l;
		w->keys[l] = w->srt[l].key;
	}
	parsa_graph_release(&w->blk.g);
	parsa_graph_init(&w->blk.g);
	for (uint32_t r = 0; !rc && r < w->rows; r++) {
		uint64_t a = w->roff[r], b = w->roff[r + 1];
		struct parsa_graph *g = &w->blk.g;

		rc = part_grow((void **)&w->rowbuf, &w->rowbuf_cap, b - a + 1,
			       sizeof(uint32_t), err);
		for (uint64_t e = a; !rc && e < b; e++)
			w->rowbuf[e - a] = w->rank[w->ent[e]];
		if (!rc)
			rc = parsa_graph_add_row(g, w->rowbuf, b - a, err);
		if (!rc) {
			uint64_t d = parsa_graph_degree(g, g->n_rows - 1);

			w->tot.duplicates += (b - a) - d;
			w->tot.nnz += d;
			w->tot.empty_rows += d == 0;
		}
	}
	w->blk.g.n_cols = nf;
	return rc;
}

/*
 * The caps of a block that is not the last: part i may take
 * floor(imb * n_b / k), plus one where that leaves fewer than n_b places:
 * e = n_b - k * floor(imb * n_b / k) extras, dealt round-robin across
 * blocks (block b's start at b * e mod k).  Without extras the caps of
 * the blocks sum to <= floor(imb * n / k) per part; with them every block
 * is filled exactly and the parts differ by at most one: either way within
 * the global cap, whatever order the blocks run in.  Expressed as the
 * balance's cap C_b and count[i] = C_b - cap_i (the trick of
 * part_parallel's per-worker shares); the block cap and its pace stay.
 */
static void block_caps(struct swork *w)
{
	uint32_t k = w->jb->k;
	uint64_t base = (uint64_t)floor(w->jb->o->imbalance *
					(double)w->rows / k);
	uint64_t e = w->rows > base * k ? w->rows - base * k : 0;
	uint64_t start = (w->block % k) * (e % k) % k;

	w->bal.cap = base + (e > 0);
	/* the block cap (>= these caps) keeps its even pace within the
	 * block, as in the sequential run */
	w->bal.block_imbalance = w->jb->o->block_imbalance > 0
					 ? w->jb->o->block_imbalance
					 : w->jb->o->imbalance;
	for (uint32_t i = 0; i < k; i++) {
		uint64_t pos = (i + k - start) % k; /* i's place in the deal */

		w->bal.count[i] = w->bal.cap - (base + (pos < e));
	}
}

/* Pull the masks, |S_i| and the counts; set up the slice and balance.
 * S(v) is the first mask of v's USED value (the parts of the examples
 * that use v so far), so the USED values are pulled and their first
 * masks kept. */
static int sw_pull(struct ps_node *nd, struct swork *w, struct parsa_err *err)
{
	struct sjob *jb = w->jb;
	uint32_t nf = w->blk.g.n_cols, k = jb->k;
	uint64_t t1 = 0, t2, t3, total = 0;
	int rc;

	parsa_nbrset_release(&w->slice);
	rc = parsa_nbrset_init(&w->slice, nf, k, err);
	if (!rc)
		rc = part_grow((void **)&w->vals, &w->vals_cap,
			       (size_t)nf * jb->uwidth, 1, err);
	if (!rc && nf)
		rc = ps_pull(nd, TBL_USED, w->keys, nf, w->vals, &t1, err);
	if (!rc)
		rc = ps_pull(nd, TBL_SSIZE, w->ckeys, k, w->cnt, &t2, err);
	if (!rc)
		rc = ps_pull(nd, TBL_COUNT, w->ckeys, k, w->pcnt, &t3, err);
	if (!rc && nf)
		rc = ps_wait(nd, t1, err);
	if (!rc)
		rc = ps_wait(nd, t2, err);
	if (!rc)
		rc = ps_wait(nd, t3, err);
	if (rc)
		return rc;
	/* the slice's own sizes stay unset: parsa_partu_block reads only
	 * bal.s_size, the global |S_i| */
	for (uint32_t l = 1; l < nf; l++) /* l * width < l * uwidth */
		memmove(w->vals + (size_t)l * jb->width,
			w->vals + (size_t)l * jb->uwidth, jb->width);
	part_mask_decode_n(w->slice.bits, w->slice.words, k, w->vals,
			   jb->width, nf);
	for (uint32_t i = 0; i < k; i++) {
		w->bal.s_size[i] = w->cnt[i] > 0 ? (uint64_t)w->cnt[i] : 0;
		w->bal.count[i] = w->pcnt[i] > 0 ? (uint64_t)w->pcnt[i] : 0;
		total += w->bal.count[i];
	}
	if (w->last) {
		/* every other block is done and acknowledged: the counts are
		 * exact, and the rest of the global cap of n takes the block */
		w->bal.cap = parsa_balance_cap(w->n, k, jb->o->imbalance);
		w->bal.block_imbalance = jb->o->block_imbalance > 0
						 ? jb->o->block_imbalance
						 : jb->o->imbalance;
		if (total + w->rows != w->n)
			return parsa_fail(err, PARSA_ESTATE, "last block: %llu "
					  "examples counted before it, want %llu",
					  (unsigned long long)total,
					  (unsigned long long)(w->n - w->rows));
	} else {
		block_caps(w);
	}
	memcpy(w->s0, w->bal.s_size, k * sizeof(uint64_t));
	return 0;
}

/* Set bit i of the width-byte mask at v. */
static inline void bit_set(unsigned char *v, uint32_t i)
{
	v[i / 8] |= (unsigned char)(1u << (i % 8));
}

/* The USED values: N(v) of the block's parts, then each random trial's
 * (one pass over the entries, all 1 + R bits of an entry in one value). */
static int sw_used(struct swork *w, const uint32_t *part,
		   struct rec_block *h, struct parsa_err *err)
{
	struct sjob *jb = w->jb;
	const struct parsa_graph *g = &w->blk.g;
	uint32_t n = g->n_rows, k = jb->k, R = jb->R, width = jb->width;
	size_t sz = (size_t)g->n_cols * jb->uwidth;
	int rc = part_grow((void **)&w->vals, &w->vals_cap, sz, 1, err);

	if (!rc)
		rc = part_grow((void **)&w->perm, &w->perm_cap, n + 1,
			       sizeof(uint32_t), err);
	if (!rc)
		rc = part_grow((void **)&w->rpart, &w->rpart_cap,
			       (size_t)R * n + 1, sizeof(uint32_t), err);
	if (rc)
		return rc;
	for (uint32_t t = 0; t < R; t++) {
		struct parsa_rng rng;
		uint32_t off, *rp = w->rpart + (size_t)t * n;

		rnd_block_rng(&rng, jb->o->seed, t, w->block);
		off = (uint32_t)parsa_rng_below(&rng, k);
		h->offset[t] = off;
		for (uint32_t r = 0; r < n; r++)
			w->perm[r] = r;
		parsa_rng_shuffle_u32(&rng, w->perm, n);
		/* position j of the shuffle goes to part (j + off) mod k */
		for (uint32_t j = 0; j < n; j++)
			rp[w->perm[j]] = (j + off) % k;
	}
	memset(w->vals, 0, sz); /* the pulled values are decoded by now */
	for (uint32_t r = 0; r < n; r++) {
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			unsigned char *v = w->vals +
					   (size_t)g->col[e] * jb->uwidth;

			bit_set(v, part[r]);
			for (uint32_t t = 0; t < R; t++)
				bit_set(v + (size_t)(1 + t) * width,
					w->rpart[(size_t)t * n + r]);
		}
	}
	return 0;
}

/* Push the USED masks (S(v)'s new bits among them) and the size and
 * count deltas (no wait: τ). */
static int sw_push(struct ps_node *nd, struct swork *w, const uint32_t *part,
		   struct parsa_err *err)
{
	struct sjob *jb = w->jb;
	uint32_t k = jb->k;
	uint64_t ts;
	int rc = 0;

	if (w->blk.g.n_cols)
		rc = ps_push(nd, TBL_USED, w->keys, w->blk.g.n_cols, w->vals,
			     &ts, err);
	for (uint32_t i = 0; i < k; i++) {
		w->cnt[i] = (double)(w->bal.s_size[i] - w->s0[i]);
		w->pcnt[i] = 0;
	}
	for (uint32_t r = 0; r < w->blk.g.n_rows; r++)
		w->pcnt[part[r]] += 1;
	if (!rc)
		rc = ps_push(nd, TBL_SSIZE, w->ckeys, k, w->cnt, &ts, err);
	if (!rc)
		rc = ps_push(nd, TBL_COUNT, w->ckeys, k, w->pcnt, &ts, err);
	return rc;
}

/* Partition the block read so far (one PS iteration), send its parts. */
static int sw_block(struct ps_node *nd, struct swork *w,
		    struct parsa_err *err)
{
	struct sjob *jb = w->jb;
	size_t hw = sizeof(struct rec_block) / sizeof(uint32_t);
	struct rec_block h = {REC_BLOCK, w->me, w->rows, jb->R, w->block,
			      w->first, 0, {0}};
	struct parsa_partu_stats st = {0};
	uint32_t *part;
	int rc = 0;

	if (!w->barrier_done && w->me != 0) {
		rc = ps_barrier(nd, err); /* block 0 is in S now */
		w->barrier_done = 1;
	}
	assert(w->last || w->rows == w->B);
	if (!rc)
		rc = ps_iter_begin(nd, NULL, err);
	if (!rc)
		rc = sw_build(w, err);
	if (!rc)
		rc = sw_pull(nd, w, err);
	if (!rc)
		rc = part_grow((void **)&w->rec, &w->rec_cap, hw + w->rows,
			       sizeof(uint32_t), err);
	part = w->rec + hw;
	if (!rc)
		rc = parsa_partu_block(w->ctx, &w->blk, &w->slice, &w->bal,
				       part, &st, err);
	if (!rc)
		rc = sw_used(w, part, &h, err);
	if (!rc)
		rc = sw_push(nd, w, part, err);
	if (!rc) {
		h.new_bits = st.new_bits;
		memcpy(w->rec, &h, sizeof(h));
		rc = ps_report_progress(nd, w->rec,
					(hw + w->rows) * sizeof(uint32_t), err);
	}
	w->done++;
	if (!rc && jb->po->test_hook) /* tests: die, send garbage */
		rc = jb->po->test_hook(jb->po->test_arg, jb->tp, jb->tp->rank,
				       w->me, w->done, err);
	if (!rc && !w->barrier_done) { /* worker 0 after block 0 */
		rc = ps_wait_all(nd, err);
		if (!rc)
			rc = ps_barrier(nd, err);
		w->barrier_done = 1;
	}
	/* the next block starts empty */
	w->rows = 0;
	w->ent_n = 0;
	part_idmap_clear(&w->map);
	return rc;
}

/*
 * The second barrier: every worker reaches it once all its blocks but the
 * dataset's last are done and acknowledged; the owner of the last block
 * then partitions it from exact counts.
 */
static int sw_barriers(struct ps_node *nd, struct swork *w,
		       struct parsa_err *err)
{
	int rc = 0;

	if (!w->barrier_done) { /* no earlier block of its own */
		rc = ps_barrier(nd, err);
		w->barrier_done = 1;
	}
	if (!rc)
		rc = ps_wait_all(nd, err);
	return rc ? rc : ps_barrier(nd, err);
}

/*
 * Read the file; partition blocks b with b mod W == me.  A full block is
 * partitioned when the next data line shows it is not the last one.
 */
static int sw_read(struct ps_node *nd, struct swork *w, struct parsa_err *err)
{
	struct sjob *jb = w->jb;
	struct part_lines *l = NULL;
	uint64_t e = 0;
	int rc = part_lines_open(&l, jb->path, err);

	while (!rc) {
		const char *line;
		size_t len;
		int eof;
		uint64_t b = e / w->B;

		rc = part_lines_next(l, &line, &len, &eof, err);
		if (rc || eof)
			break;
		w->tot.lines++;
		if (part_line_is_skippable(line, len))
			continue;
		if (e >= UINT32_MAX - 1) {
			rc = parsa_fail(err, PARSA_EINVAL, "%s: more than %u "
					"examples", jb->path, UINT32_MAX - 2);
			break;
		}
		if (w->pending) {
			rc = sw_block(nd, w, err);
			w->pending = 0;
			if (rc)
				break;
		}
		if (b % jb->W == w->me) {
			if (w->rows == 0) {
				w->block = b;
				w->first = e;
			}
			rc = sw_add_line(w, l, line, err);
		}
		e++;
		if (e % w->B == 0 && b % jb->W == w->me)
			w->pending = 1;
	}
	part_lines_close(l);
	w->n = e;
	if (!rc && e > 0 && ((e - 1) / w->B) % jb->W == w->me) {
		w->last = 1; /* its rows are the block being read */
		rc = sw_barriers(nd, w, err);
		if (!rc)
			rc = sw_block(nd, w, err);
	} else if (!rc) {
		rc = sw_barriers(nd, w, err);
	}
	w->tot.examples = e;
	return rc;
}

static int worker_task(struct ps_node *nd, uint64_t task_id,
		       const void *payload, size_t len, void *arg,
		       struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct task t = {0};
	struct swork w;
	int rc;

	(void)task_id;
	if (len == sizeof(t))
		memcpy(&t, payload, sizeof(t));
	if (t.magic != TASK_MAGIC || t.block_rows == 0)
		return parsa_fail(err, PARSA_EPARSE, "unexpected task payload "
				  "(%zu bytes)", len);
	ps_set_tau(nd, jb->po->tau);
	rc = sw_init(&w, jb, ps_node_index(nd), t.block_rows, err);
	if (!rc)
		rc = sw_read(nd, &w, err);
	if (!rc)
		rc = ps_wait_all(nd, err);
	if (!rc) {
		w.tot.peak_rss_kb = part_peak_rss_kb();
		rc = ps_report_progress(nd, &w.tot, sizeof(w.tot), err);
	}
	sw_release(&w);
	return rc;
}

/* --------------------------------------------------------------- server */

static void srv_release(struct srv_state *s)
{
	free(s->keys);
	free(s->vals);
	parsa_nbrset_release(&s->used);
	free(s->owner);
	memset(s, 0, sizeof(*s));
}

/* The masks of random trial t (< R) of entry v. */
static const unsigned char *srv_rnd(const struct sjob *jb,
				    const struct srv_state *s, uint32_t v,
				    uint32_t t)
{
	return s->vals + (size_t)v * jb->uwidth + (size_t)(1 + t) * jb->width;
}

/*
 * M_i and V_used of this server's features.  After the last block only
 * the USED table is needed: the other tables are dropped first and USED's
 * arrays become the state, so the rank holds no copy of them.
 */
static int hook_m(struct ps_server *srv, const void *req, size_t len,
		  struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct srv_state *s = &jb->srv[ps_server_index(srv)];
	uint64_t *dk;
	unsigned char *dv;
	size_t n;
	uint32_t width, k = jb->k, words;
	uint64_t *M;
	int rc = 0;

	(void)req;
	(void)len;
	srv_release(s);
	for (uint32_t t = 0; !rc && t < NUM_TABLES; t++) {
		if (t == TBL_USED)
			continue;
		rc = ps_server_table_take(srv, t, &dk, &dv, &n, NULL, err);
		if (!rc) {
			free(dk);
			free(dv);
		}
	}
	if (!rc)
		rc = ps_server_table_take(srv, TBL_USED, &s->keys, &s->vals, &n,
					  &width, err);
	if (rc)
		return rc;
	if (n > UINT32_MAX - 1 || width != jb->uwidth)
		return parsa_fail(err, PARSA_EINVAL, "too many features");
	s->n = (uint32_t)n;
	s->owner = malloc((n + 1) * sizeof(uint32_t));
	M = calloc(k + 1, sizeof(uint64_t));
	rc = !s->owner || !M
		     ? parsa_fail(err, PARSA_ENOMEM, "out of memory (server)")
		     : parsa_nbrset_init(&s->used, s->n, k, err);
	words = s->used.words;
	for (uint32_t v = 0; !rc && v < s->n; v++)
		part_mask_decode(s->used.bits + (uint64_t)v * words, words, k,
				 s->vals + (size_t)v * width, jb->width);
	if (!rc) {
		parsa_nbrset_recount(&s->used);
		for (uint32_t i = 0; i < k; i++)
			M[i] = s->used.size[i];
		M[k] = s->n;
		rc = ps_reply_append(reply, M, (k + 1) * sizeof(uint64_t), err);
	}
	free(M);
	return rc;
}

/* Algorithm 11 on this server's features from the system's traffic. */
static int hook_partv(struct ps_server *srv, const void *req, size_t len,
		      struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct srv_state *s = &jb->srv[ps_server_index(srv)];
	size_t want = 2 * sizeof(uint32_t) + jb->k * sizeof(int64_t);
	struct parsa_partv_stats st = {0};
	uint32_t hdr[2];
	int64_t *T;
	int rc;

	if (len != want)
		return parsa_fail(err, PARSA_EPARSE, "partition V request of "
				  "%zu bytes, want %zu", len, want);
	T = malloc((jb->k + 1) * sizeof(int64_t));
	if (!T)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (server)");
	memcpy(hdr, req, sizeof(hdr));
	memcpy(T, (const char *)req + sizeof(hdr), jb->k * sizeof(int64_t));
	rc = parsa_partition_v_part(&s->used, (int)hdr[0], hdr[1], s->owner,
				    T, &st, err);
	T[jb->k] = (int64_t)st.moves;
	if (!rc)
		rc = ps_reply_append(reply, T, (jb->k + 1) * sizeof(int64_t),
				     err);
	free(T);
	return rc;
}

/* (M, T, local) of feature v owned by o with users mask m (width bytes). */
static void count_one(uint64_t *M, uint64_t *T, uint64_t *loc,
		      const unsigned char *m, uint32_t width, uint32_t o)
{
	uint32_t c = 0, h;

	for (uint32_t j = 0; j < width; j++) {
		for (unsigned x = m[j]; x; x &= x - 1) {
			M[j * 8 + (uint32_t)__builtin_ctz(x)]++;
			c++;
		}
	}
	h = (m[o / 8] >> (o % 8)) & 1u;
	loc[o] += h;
	T[o] += c - h;
}

/* Counters of the result and of every random trial on this server. */
static int hook_counts(struct ps_server *srv, const void *req, size_t len,
		       struct ps_reply *reply, void *arg,
		       struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct srv_state *s = &jb->srv[ps_server_index(srv)];
	uint32_t k = jb->k, R = jb->R;
	size_t nc = (size_t)(1 + R) * 3 * k + 1;
	uint64_t *c = calloc(nc, sizeof(uint64_t));
	unsigned char *m = malloc(jb->width);
	int rc;

	(void)req;
	(void)len;
	if (!c || !m) {
		free(c);
		free(m);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (server)");
	}
	for (uint32_t v = 0; v < s->n; v++) {
		part_mask_encode(m, jb->width,
				 s->used.bits + (uint64_t)v * s->used.words);
		count_one(c, c + k, c + 2 * k, m, jb->width, s->owner[v]);
		for (uint32_t t = 0; t < R; t++) {
			uint64_t *ct = c + (size_t)(1 + t) * 3 * k;

			count_one(ct, ct + k, ct + 2 * k, srv_rnd(jb, s, v, t),
				  jb->width, rnd_owner(jb->o->seed, t,
						       s->keys[v], k));
		}
	}
	/* T_i also counts i's own features owned elsewhere: M_i - local_i */
	for (uint32_t t = 0; t <= R; t++) {
		uint64_t *ct = c + (size_t)t * 3 * k;

		for (uint32_t i = 0; i < k; i++)
			ct[k + i] += ct[i] - ct[2 * k + i];
	}
	c[nc - 1] = s->n;
	rc = ps_reply_append(reply, c, nc * sizeof(uint64_t), err);
	free(c);
	free(m);
	/* the masks' last use: only the keys and owners remain (the dump) */
	free(s->vals);
	s->vals = NULL;
	parsa_nbrset_release(&s->used);
	return rc;
}

/* The feature ids and owners of this server's features. */
static int hook_dump(struct ps_server *srv, const void *req, size_t len,
		     struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct srv_state *s = &jb->srv[ps_server_index(srv)];
	uint64_t n = s->n;
	int rc = ps_reply_append(reply, &n, sizeof(n), err);

	(void)req;
	(void)len;
	for (uint32_t v = 0; !rc && v < s->n; v++) {
		rc = ps_reply_append(reply, &s->keys[v], sizeof(uint64_t),
				     err);
	}
	if (!rc && n)
		rc = ps_reply_append(reply, s->owner, n * sizeof(uint32_t),
				     err);
	srv_release(s); /* the state's last use */
	return rc;
}

static int server_init(struct ps_server *srv, void *arg,
		       struct parsa_err *err)
{
	int rc = ps_server_register_hook(srv, HOOK_M, hook_m, arg, err);

	if (!rc)
		rc = ps_server_register_hook(srv, HOOK_PARTV, hook_partv, arg,
					     err);
	if (!rc)
		rc = ps_server_register_hook(srv, HOOK_COUNTS, hook_counts,
					     arg, err);
	if (!rc)
		rc = ps_server_register_hook(srv, HOOK_DUMP, hook_dump, arg,
					     err);
	return rc;
}

/* ------------------------------------------------------------ scheduler */

/*
 * On every process, before the cluster starts: the first data lines give
 * the mean entries per row (for B) and the largest feature id (for the
 * key ranges).  Counting ':' is enough here; the workers parse for real.
 */
static int plan(struct sjob *jb, double *row_bytes, struct parsa_err *err)
{
	const struct part_stream_opts *o = jb->o;
	struct part_lines *l = NULL;
	uint64_t rows = 0, entries = 0;
	int rc = part_lines_open(&l, jb->path, err);

	while (!rc && rows < PART_STREAM_SAMPLE_LINES) {
		const char *line, *p;
		size_t len;
		int eof;

		rc = part_lines_next(l, &line, &len, &eof, err);
		if (rc || eof)
			break;
		if (part_line_is_skippable(line, len))
			continue;
		rows++;
		for (p = line; (p = strchr(p, ':')); p++) {
			const char *d = p;
			uint64_t id = 0;

			entries++;
			while (d > line && d[-1] >= '0' && d[-1] <= '9')
				d--;
			for (; d < p && id < UINT64_MAX / 10 - 9; d++)
				id = id * 10 + (uint64_t)(*d - '0');
			jb->max_id = id > jb->max_id ? id : jb->max_id;
		}
	}
	part_lines_close(l);
	if (rc)
		return rc;
	*row_bytes = part_stream_row_bytes(
		rows ? (double)entries / (double)rows : 1.0, jb->k, jb->R);
	if (o->block_rows)
		jb->B = o->block_rows;
	else if (!o->mem_limit)
		jb->B = PART_STREAM_DEFAULT_BLOCK_ROWS;
	else
		jb->B = (uint64_t)((double)o->mem_limit / *row_bytes);
	if (jb->B < PART_STREAM_MIN_BLOCK_ROWS && !o->block_rows)
		jb->B = PART_STREAM_MIN_BLOCK_ROWS;
	return 0;
}

/* Server i owns ids from i * span / S (span: past the sampled ids, so
 * dense ids 0..d spread evenly; larger ids fall to the last server). */
static uint64_t *range_starts(const struct sjob *jb, uint32_t S,
			      struct parsa_err *err)
{
	uint64_t *st = malloc((size_t)S * sizeof(uint64_t));
	uint64_t span = jb->max_id + 1 + jb->max_id / 16;

	if (!st) {
		parsa_fail(err, PARSA_ENOMEM, "out of memory");
		return NULL;
	}
	if (span < S)
		span = S;
	for (uint32_t i = 0; i < S; i++)
		st[i] = (uint64_t)((unsigned __int128)span * i / S);
	return st;
}

/* Room for block b in the per-block arrays (errors in jb->rec_err). */
static int grow_seen(struct sjob *jb, uint64_t b)
{
	size_t cap = jb->seen_cap, old = jb->seen_cap, c1 = old, c2 = old;

	if (b < cap)
		return 0;
	while (cap <= b)
		cap = cap ? cap * 2 : 64;
	if (part_grow((void **)&jb->offsets, &jb->off_cap, cap,
		      sizeof(*jb->offsets), &jb->rec_err) ||
	    part_grow((void **)&jb->seen, &c1, cap, 1, &jb->rec_err) ||
	    part_grow((void **)&jb->block_n, &c2, cap, sizeof(uint64_t),
		      &jb->rec_err))
		return jb->rec_err.code;
	memset(jb->seen + old, 0, cap - old);
	jb->seen_cap = cap;
	return 0;
}

static void on_block(struct sjob *jb, uint32_t worker, const void *rec,
		     size_t len)
{
	struct part_stream_result *r = jb->r;
	struct rec_block h;
	size_t hb = sizeof(h);
	const uint32_t *parts = (const uint32_t *)((const char *)rec + hb);

	memcpy(&h, rec, sizeof(h));
	if ((len - hb) % sizeof(uint32_t) || (len - hb) / 4 != h.n ||
	    h.trials != jb->R || h.first + h.n > UINT32_MAX ||
	    h.block != h.first / jb->B) {
		rec_fail(jb, worker, "inconsistent block header");
		return;
	}
	if (grow_seen(jb, h.block)) {
		jb->rec_rc = jb->rec_err.code;
		return;
	}
	if (jb->seen[h.block]) {
		rec_fail(jb, worker, "block received twice");
		return;
	}
	if (part_grow((void **)&r->part, &jb->part_cap, h.first + h.n,
		      sizeof(uint32_t), &jb->rec_err)) {
		jb->rec_rc = jb->rec_err.code;
		return;
	}
	for (uint32_t j = 0; j < h.n; j++) {
		if (parts[j] >= jb->k) {
			rec_fail(jb, worker, "part id out of range");
			return;
		}
		r->part[h.first + j] = parts[j];
	}
	jb->seen[h.block] = 1;
	jb->block_n[h.block] = h.n;
	memcpy(jb->offsets[h.block], h.offset, sizeof(h.offset));
	jb->blocks_seen++;
	jb->max_block = h.block + 1 > jb->max_block ? h.block + 1
						     : jb->max_block;
	jb->done += h.n;
	if (jb->o->progress)
		jb->o->progress(jb->o->progress_arg, jb->done, 0);
}

static void on_end(struct sjob *jb, uint32_t worker, const void *rec)
{
	struct part_stream_result *r = jb->r;
	struct rec_end e;

	memcpy(&e, rec, sizeof(e));
	if (jb->ends > 0 && e.examples != jb->examples) {
		rec_fail(jb, worker, "workers counted different examples");
		return;
	}
	jb->examples = e.examples;
	jb->ends++;
	r->entries += e.entries;
	r->nnz += e.nnz;
	r->duplicates += e.duplicates;
	r->empty_rows += e.empty_rows;
	if (e.peak_rss_kb > r->worker_peak_rss_kb)
		r->worker_peak_rss_kb = (long)e.peak_rss_kb;
}

static void on_record(void *arg, uint32_t worker, const void *rec,
		      size_t len)
{
	struct sjob *jb = arg;
	uint32_t magic = 0;

	if (jb->rec_rc)
		return;
	if (len >= sizeof(magic))
		memcpy(&magic, rec, sizeof(magic));
	if (magic == REC_BLOCK && len >= sizeof(struct rec_block))
		on_block(jb, worker, rec, len);
	else if (magic == REC_END && len == sizeof(struct rec_end))
		on_end(jb, worker, rec);
	else
		rec_fail(jb, worker, "unknown record");
}

/* Reply collectors of the hooks. */
struct sums {
	struct sjob *jb;
	uint64_t *acc;   /* n words summed */
	size_t n;
	int64_t *T;      /* HOOK_PARTV: the answer */
	uint64_t moves;
};

static int sum_reply(void *arg, uint32_t server, const void *resp,
		     size_t len, struct parsa_err *err)
{
	struct sums *s = arg;
	uint64_t x;

	if (len != s->n * sizeof(uint64_t))
		return parsa_fail(err, PARSA_EPARSE, "server %u answered %zu "
				  "bytes, want %zu", server, len,
				  s->n * sizeof(uint64_t));
	for (size_t i = 0; i < s->n; i++) {
		memcpy(&x, (const char *)resp + i * sizeof(x), sizeof(x));
		s->acc[i] += x;
	}
	return 0;
}

static int partv_reply(void *arg, uint32_t server, const void *resp,
		       size_t len, struct parsa_err *err)
{
	struct sums *s = arg;
	uint32_t k = s->jb->k;
	int64_t mv;

	if (len != (k + 1) * sizeof(int64_t))
		return parsa_fail(err, PARSA_EPARSE, "server %u: bad partition "
				  "V answer (%zu bytes)", server, len);
	memcpy(s->T, resp, k * sizeof(int64_t));
	memcpy(&mv, (const char *)resp + k * sizeof(int64_t), sizeof(mv));
	s->moves += (uint64_t)mv;
	return 0;
}

static int dump_reply(void *arg, uint32_t server, const void *resp,
		      size_t len, struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct part_stream_result *r = jb->r;
	uint64_t n;

	if (len < sizeof(n))
		return parsa_fail(err, PARSA_EPARSE, "server %u: empty dump",
				  server);
	memcpy(&n, resp, sizeof(n));
	if (len != sizeof(n) + n * 12 || r->n_feat + n > UINT32_MAX - 1)
		return parsa_fail(err, PARSA_EPARSE, "server %u: bad dump "
				  "(%zu bytes for %llu features)", server, len,
				  (unsigned long long)n);
	memcpy(r->feat_id + r->n_feat, (const char *)resp + sizeof(n),
	       n * sizeof(uint64_t));
	memcpy(r->owner + r->n_feat, (const char *)resp + sizeof(n) + n * 8,
	       n * sizeof(uint32_t));
	r->n_feat += (uint32_t)n;
	return 0;
}

/* M_i, then Algorithm 11 server by server, then the sweeps. */
static int sched_partv(struct ps_node *sn, struct sjob *jb, uint64_t *Mv,
		       int64_t *T, struct parsa_err *err)
{
	uint32_t k = jb->k, S = ps_num_servers(sn);
	struct sums s = {jb, Mv, (size_t)k + 1, NULL, 0};
	size_t rl = 2 * sizeof(uint32_t) + k * sizeof(int64_t);
	unsigned char *req = malloc(rl);
	int rc = req ? 0 : parsa_fail(err, PARSA_ENOMEM, "out of memory");

	if (!rc)
		rc = ps_call_hook(sn, PS_ALL, HOOK_M, NULL, 0, sum_reply, &s,
				  err);
	for (uint32_t i = 0; i < k; i++)
		T[i] = (int64_t)Mv[i];
	s.T = T;
	for (uint32_t round = 0; !rc && round <= jb->o->sweeps; round++) {
		uint32_t hdr[2] = {round == 0, round == 0 ? 0 : 1};

		s.moves = 0;
		for (uint32_t srv = 0; !rc && srv < S; srv++) {
			memcpy(req, hdr, sizeof(hdr));
			memcpy(req + sizeof(hdr), T, k * sizeof(int64_t));
			rc = ps_call_hook(sn, (int)srv, HOOK_PARTV, req, rl,
					  partv_reply, &s, err);
		}
		if (round > 0 && s.moves == 0)
			break;
	}
	free(req);
	return rc;
}

/* Every metric from the servers' counters; checks T against Alg. 11's. */
static int sched_metrics(struct ps_node *sn, struct sjob *jb,
			 const int64_t *T, struct parsa_err *err)
{
	struct part_stream_result *r = jb->r;
	uint32_t k = jb->k, R = jb->R;
	size_t nc = (size_t)(1 + R) * 3 * k + 1;
	uint64_t *c = calloc(nc, sizeof(uint64_t));
	uint64_t *U = calloc(k, sizeof(uint64_t));
	struct sums s = {jb, c, nc, NULL, 0};
	struct parsa_counts pc;
	struct parsa_metrics acc = {0}, one;
	int rc = c && U ? 0 : parsa_fail(err, PARSA_ENOMEM, "out of memory");

	if (!rc)
		rc = ps_call_hook(sn, PS_ALL, HOOK_COUNTS, NULL, 0, sum_reply,
				  &s, err);
	for (uint32_t i = 0; !rc && i < k; i++)
		if ((int64_t)c[k + i] != T[i])
			rc = parsa_fail(err, PARSA_ESTATE, "traffic of part %u: "
					"%llu counted, %lld from partition V",
					i, (unsigned long long)c[k + i],
					(long long)T[i]);
	for (uint32_t t = 0; !rc && t <= R; t++) {
		memset(U, 0, k * sizeof(uint64_t));
		if (t == 0) {
			for (uint32_t e = 0; e < r->n_rows; e++)
				U[r->part[e]]++;
		} else {
			for (uint64_t b = 0; b < jb->max_block; b++) {
				uint64_t n = jb->block_n[b];
				uint32_t off = jb->offsets[b][t - 1];

				for (uint32_t i = 0; i < k; i++)
					U[(i + off) % k] += n / k +
							    (i < n % k);
			}
		}
		pc = (struct parsa_counts){c + (size_t)t * 3 * k,
					   c + (size_t)t * 3 * k + k, U,
					   c + (size_t)t * 3 * k + 2 * k,
					   c[nc - 1]};
		parsa_metrics_summarize(&pc, k, r->n_rows, &one);
		if (t == 0)
			r->m = one;
		else
			parsa_metrics_add(&acc, &one);
	}
	if (!rc) {
		parsa_metrics_div(&acc, R);
		acc.k = k;
		r->rnd = acc;
	}
	free(c);
	free(U);
	return rc;
}

static int sched_outputs(struct ps_node *sn, struct sjob *jb, uint64_t nf,
			 struct parsa_err *err)
{
	struct part_stream_result *r = jb->r;

	r->feat_id = malloc((nf + 1) * sizeof(uint64_t));
	r->owner = malloc((nf + 1) * sizeof(uint32_t));
	if (!r->feat_id || !r->owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory for %llu "
				  "features", (unsigned long long)nf);
	r->n_feat = 0;
	for (uint32_t srv = 0; srv < ps_num_servers(sn); srv++) {
		int rc = ps_call_hook(sn, (int)srv, HOOK_DUMP, NULL, 0,
				      dump_reply, jb, err);

		if (rc)
			return rc;
	}
	return r->n_feat == nf ? 0 : parsa_fail(err, PARSA_ESTATE,
						"%u features dumped, %llu used",
						r->n_feat,
						(unsigned long long)nf);
}

static int sched_collect(struct ps_node *sn, struct sjob *jb,
			 struct parsa_err *err)
{
	struct task t = {TASK_MAGIC, 0, jb->B};
	uint64_t blocks;
	int rc = ps_sched_start_task(sn, PS_ALL, &t, sizeof(t), NULL, err);

	if (!rc)
		rc = ps_sched_wait_tasks(sn, on_record, jb, err);
	if (!rc && jb->rec_rc)
		rc = parsa_fail(err, jb->rec_rc, "%s", jb->rec_err.msg);
	blocks = (jb->examples + jb->B - 1) / jb->B;
	if (!rc && (jb->ends != jb->W || jb->blocks_seen != blocks ||
		    jb->max_block != blocks))
		rc = parsa_fail(err, PARSA_ESTATE, "parts of %llu of %llu "
				"blocks received (%u of %u workers ended)",
				(unsigned long long)jb->blocks_seen,
				(unsigned long long)blocks, jb->ends, jb->W);
	if (!rc && jb->examples == 0)
		rc = parsa_fail(err, PARSA_EINVAL, "%s: empty dataset: no "
				"examples to partition", jb->path);
	jb->r->n_rows = (uint32_t)jb->examples;
	jb->r->blocks = blocks;
	jb->r->block_rows = jb->B;
	return rc;
}

static int sched_main(struct ps_node *sn, void *arg, struct parsa_err *err)
{
	struct sjob *jb = arg;
	uint32_t k = jb->k;
	uint64_t *Mv = calloc(k + 1, sizeof(uint64_t));
	int64_t *T = calloc(k, sizeof(int64_t));
	double t0 = part_now(), t1, t2, t3;
	int rc = Mv && T ? 0 : parsa_fail(err, PARSA_ENOMEM, "out of memory");

	/* the metrics before the dump: each is the last use of a part of
	 * the servers' state, which they free as they answer */
	if (!rc)
		rc = sched_collect(sn, jb, err);
	t1 = part_now();
	if (!rc)
		rc = sched_partv(sn, jb, Mv, T, err);
	t2 = part_now();
	if (!rc)
		rc = sched_metrics(sn, jb, T, err);
	t3 = part_now();
	if (!rc)
		rc = sched_outputs(sn, jb, Mv[k], err);
	jb->r->t_partition_u = t1 - t0;
	jb->r->t_partition_v = (t2 - t1) + (part_now() - t3);
	jb->r->t_metrics = t3 - t2;
	free(Mv);
	free(T);
	return rc;
}

/* ------------------------------------------------------------------ run */

void part_stream_result_init(struct part_stream_result *r)
{
	memset(r, 0, sizeof(*r));
}

void part_stream_result_release(struct part_stream_result *r)
{
	free(r->part);
	free(r->feat_id);
	free(r->owner);
	part_stream_result_init(r);
}

static int check_opts(const struct part_stream_opts *o,
		      struct parsa_err *err)
{
	if (o->k == 0 || o->k > 65536)
		return parsa_fail(err, PARSA_EINVAL, "k must be 1..65536");
	if (o->random_trials < 1 || o->random_trials > PART_STREAM_MAX_TRIALS)
		return parsa_fail(err, PARSA_EINVAL, "streaming: random trials "
				  "must be 1..%d", PART_STREAM_MAX_TRIALS);
	if (!(o->imbalance >= 1.0) || isinf(o->imbalance))
		return parsa_fail(err, PARSA_EINVAL, "imbalance must be >= 1");
	return 0;
}

/* part_par_launch's body (arg: the job; info in jb->info). */
static int run_on(void *arg, struct ps_transport *tp, struct parsa_err *err)
{
	struct sjob *jb = arg;
	struct part_par_info *info = jb->info;
	const struct ps_layout *l = &tp->layout;
	struct ps_config cfg;
	struct ps_app app = {0};
	struct ps_result res = {0};
	int rc;

	uint64_t *starts;

	jb->W = l->num_workers;
	jb->srv = calloc(l->num_servers, sizeof(*jb->srv));
	starts = range_starts(jb, l->num_servers, err);
	if (!jb->srv || !starts) {
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
		ps_transport_fail(tp, rc, "%s", err->msg);
		free(jb->srv);
		free(starts);
		return rc;
	}
	jb->tp = tp;
	part_par_config(&cfg, l, jb->po);
	cfg.num_tables = NUM_TABLES;
	cfg.tables[TBL_SSIZE] = (struct ps_table_spec){8, PS_OP_ADD_F64};
	cfg.tables[TBL_COUNT] = (struct ps_table_spec){8, PS_OP_ADD_F64};
	cfg.tables[TBL_USED] = (struct ps_table_spec){jb->uwidth, PS_OP_OR};
	cfg.range_starts = starts;
	app.server_init = server_init;
	app.task = worker_task;
	app.sched_main = sched_main;
	app.arg = jb;
	rc = ps_run(tp, &cfg, &app, &res, err);
	if (!rc && tp->rank == 0 && info) {
		part_par_info_fill(tp, &res, jb->po->tau, info);
		info->init = "block 0";
		info->init_blocks = 1;
		info->t_workers = jb->r->t_partition_u;
	}
	ps_result_release(&res);
	free(starts);
	for (uint32_t i = 0; i < l->num_servers; i++)
		srv_release(&jb->srv[i]);
	free(jb->srv);
	return rc;
}

int part_stream_run(const char *path, const struct part_stream_opts *o,
		    const struct part_par_opts *po,
		    struct part_stream_result *r, struct part_par_info *info,
		    int *is_root, int *rank, struct parsa_err *err)
{
	struct parsa_err local = {0};
	struct sjob jb;
	int rc;

	err = err ? err : &local;
	memset(&jb, 0, sizeof(jb));
	*is_root = 0;
	if (rank)
		*rank = 0;
	rc = check_opts(o, err);
	if (!rc && po->consistency && strncmp(po->consistency, "tau:", 4))
		rc = parsa_fail(err, PARSA_EINVAL, "--stream: consistency %s: "
				"the streaming mode runs the tau window only "
				"(--tau T)", po->consistency);
	if (!rc) {
		jb.path = path;
		jb.o = o;
		jb.po = po;
		jb.k = o->k;
		jb.width = (o->k + 7) / 8;
		jb.R = o->random_trials;
		jb.uwidth = jb.width * (1 + jb.R);
		jb.r = r;
		r->k = o->k;
		rc = plan(&jb, &r->row_bytes, err);
	}
	if (!rc) {
		r->block_rows = jb.B;
		jb.info = info;
		rc = part_par_launch(po, run_on, &jb, is_root, rank, err);
	}
	if (rc || !*is_root)
		part_stream_result_release(r);
	free(jb.seen);
	free(jb.offsets);
	free(jb.block_n);
	return rc;
}
