/*
 * part_parallel: parallel Parsa on the parameter server (see
 * part_parallel.h for the roles, tables, τ, balance and initialization).
 *
 * Layout of this file: the shared job (split, per-worker caps), mask
 * encoding, the worker (one PS iteration per block), the scheduler
 * (initialization, parts collection, the rest of the pipeline), and the
 * run on a threads or MPI transport.
 */
#include "part_parallel.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parsa_partu.h"
#include "part_masks.h"
#include "part_pool.h"
#include "part_progress.h"
#include "ps_transport_mpi.h"

#define TBL_MASK 0  /* feature -> k-bit mask, OR */
#define TBL_SSIZE 1 /* partition i -> |S_i| as a double, ADD */
#define NUM_TABLES 2
#define TASK_MAGIC 0x5041524bu /* "PARK": the workers' task payload */
#define REC_MAGIC 0x50415254u  /* "PART": a block's parts */
#define PUSH_CHUNK 65536       /* features per initial push */

/* A worker's record of one block: this header, then n parts (uint32). */
struct rec_head {
	uint32_t magic;
	uint32_t block;
	uint32_t n;
	uint32_t worker;
	uint64_t new_bits;
	uint64_t decrements;
};

/* One run, shared by every node of this process.  Read-only while the
 * workers run, except the scheduler-only fields (root process). */
struct job {
	const struct part_dataset *ds;
	const struct part_run_opts *o;
	const struct part_par_opts *po;
	struct ps_transport *tp;
	int clocked;              /* ssp/bsp: blocks are clocks */
	int staleness;            /* S */
	uint32_t k, width, b, a;  /* mask bytes, blocks, warm-up blocks */
	uint32_t W;               /* workers */
	uint32_t syncs;           /* mid-block syncs per block */
	uint32_t m_sample;        /* global-init sample rows (0: none) */
	double sample;            /* its fraction */
	uint32_t *perm, *start;   /* the random split: sample perm[0, m_sample),
				     then blocks perm[start[j], start[j+1]) */
	uint64_t cap;             /* global cap per partition */
	/* scheduler (root) only */
	struct part_result *r;
	uint32_t *sample_count;   /* k: the kept sample's examples per part */
	uint8_t *seen;            /* b: block's parts received */
	uint32_t blocks_seen;
	uint64_t progress_done, progress_total;
	int rec_rc;               /* first bad record */
	struct parsa_err rec_err;
	double t_init, t_workers;
	uint64_t init_rows;
};

/* ------------------------------------------------------------- options */

void part_par_opts_default(struct part_par_opts *po)
{
	memset(po, 0, sizeof(*po));
	po->workers = 1;
	po->tau = PART_PAR_DEFAULT_TAU;
	po->init_sample = -1.0;
	po->syncs = -1;
}

uint32_t part_par_auto_syncs(const struct part_par_opts *po,
			     uint32_t workers, uint32_t blocks)
{
	uint64_t steps;

	if (po->syncs >= 0)
		return (uint32_t)po->syncs;
	if (workers <= 1 || blocks == 0)
		return 0;
	/* least N + 1 with (W - 1) SPAN <= b (N + 1) */
	steps = ((uint64_t)(workers - 1) * PART_PAR_SYNC_SPAN + blocks - 1) /
		blocks;
	steps = steps > 0 ? steps - 1 : 0;
	return steps < PART_PAR_AUTO_SYNCS_MAX ? (uint32_t)steps
					       : PART_PAR_AUTO_SYNCS_MAX;
}

double part_par_auto_sample(const struct part_par_opts *po, uint32_t workers,
			    uint32_t init_blocks, uint64_t n)
{
	double f;

	if (po->init_sample >= 0)
		return po->init_sample;
	if (workers <= 1 || init_blocks > 0 || n == 0)
		return 0.0;
	/* PART_PAR_SAMPLE_ROWS examples suffice on large data; the sample is
	 * partitioned on one thread, so it should not be a fixed fraction */
	f = (double)PART_PAR_SAMPLE_ROWS / (double)n;
	if (f < PART_PAR_MIN_SAMPLE)
		f = PART_PAR_MIN_SAMPLE;
	return f < PART_PAR_AUTO_SAMPLE ? f : PART_PAR_AUTO_SAMPLE;
}

/* ---------------------------------------------------------- shared job */

/*
 * Worker caps given the kept sample's count per partition (k uint32 in
 * the task payload, not necessarily aligned), into caps (W * k).  Every
 * rank computes the same.
 */
static int job_caps(const struct job *jb, const unsigned char *sample_count,
		    uint64_t *caps, struct parsa_err *err)
{
	uint64_t *nw = calloc(jb->W, sizeof(uint64_t));
	uint64_t *avail = malloc(jb->k * sizeof(uint64_t));
	uint64_t *spare = malloc(jb->k * sizeof(uint64_t));
	int rc = 0;

	if (!nw || !avail || !spare) {
		rc = parsa_fail(err, PARSA_ENOMEM,
				"out of memory for %u workers' caps", jb->W);
		goto out;
	}
	for (uint32_t j = 0; j < jb->b; j++)
		nw[j % jb->W] += jb->start[j + 1] - jb->start[j];
	for (uint32_t i = 0; i < jb->k; i++) {
		uint32_t c;

		memcpy(&c, sample_count + (size_t)i * sizeof(c), sizeof(c));

		if (c > jb->cap) {
			rc = parsa_fail(err, PARSA_EPARSE, "sample count %u "
					"of partition %u exceeds the cap %llu",
					c, i, (unsigned long long)jb->cap);
			goto out;
		}
		avail[i] = jb->cap - c;
	}
	parsa_balance_split(jb->W, jb->k, nw, avail, caps, spare);
out:
	free(nw);
	free(avail);
	free(spare);
	return rc;
}

static int check_opts(const struct part_dataset *ds,
		      const struct part_run_opts *o,
		      const struct part_par_opts *po, struct parsa_err *err)
{
	if (o->method != PART_METHOD_PARSA)
		return parsa_fail(err, PARSA_EINVAL,
				  "parallel runs need --method parsa");
	if (o->pu.k < 1)
		return parsa_fail(err, PARSA_EINVAL, "k must be at least 1");
	if (o->pu.blocks && o->pu.init_blocks > o->pu.blocks)
		return parsa_fail(err, PARSA_EINVAL,
				  "need init_blocks <= blocks (b=%u, a=%u)",
				  o->pu.blocks, o->pu.init_blocks);
	if (!(o->pu.imbalance >= 1.0) || !isfinite(o->pu.imbalance))
		return parsa_fail(err, PARSA_EINVAL,
				  "imbalance must be a finite number >= 1");
	if (po->tau < PART_PAR_TAU_INF)
		return parsa_fail(err, PARSA_EINVAL, "bad tau %d", po->tau);
	if (po->consistency) {
		struct ps_consistency c;
		int rc = ps_consistency_parse(po->consistency, &c, err);

		if (rc)
			return rc;
		if (c.model == PS_CONS_ESSP)
			return parsa_fail(err, PARSA_EINVAL, "consistency %s: "
					  "the partitioner takes tau:T, bsp or "
					  "ssp:S (a worker reads each feature's "
					  "mask about once per block it appears "
					  "in, so eager pushes would resend the "
					  "table; essp is for parsa train)",
					  po->consistency);
	}
	if (po->init_sample > 1.0)
		return parsa_fail(err, PARSA_EINVAL,
				  "init sample must be in [0, 1] (got %g)",
				  po->init_sample);
	if (o->init_S && (o->init_S->n_feat != ds->g.n_cols ||
			  o->init_S->k != o->pu.k))
		return parsa_fail(err, PARSA_EINVAL,
				  "initial neighbor sets do not match the dataset");
	if (ds->g.n_rows == 0)
		return parsa_fail(err, PARSA_EINVAL, "empty dataset");
	return 0;
}

/* Split and sizes that do not depend on the number of workers. */
static int job_init(struct job *jb, const struct part_dataset *ds,
		    const struct part_run_opts *o,
		    const struct part_par_opts *po, struct parsa_err *err)
{
	uint32_t n = ds->g.n_rows;

	memset(jb, 0, sizeof(*jb));
	jb->ds = ds;
	jb->o = o;
	jb->po = po;
	jb->k = o->pu.k;
	jb->width = (o->pu.k + 7) / 8;
	jb->perm = malloc((size_t)n * sizeof(uint32_t));
	if (!jb->perm)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %u examples", n);
	return 0;
}

/*
 * The parts that depend on the layout (known once the transport runs; the
 * same on every rank).  The split: parsa_partu_blocks' blocks (sized to
 * the dataset as in part_run), and with
 * the automatic count and W > 1 workers rounded up to a multiple of W, so
 * that every worker partitions as many blocks (one worker: exactly the
 * sequential split).
 */
static int job_layout(struct job *jb, const struct ps_layout *l,
		      struct parsa_err *err)
{
	const struct part_run_opts *o = jb->o;
	struct parsa_partu_opts pu = o->pu;
	uint32_t n = jb->ds->g.n_rows;
	uint64_t b;
	double f;
	int rc;

	jb->W = l->num_workers;
	part_run_fit(&pu, jb->ds); /* as the sequential run */
	b = parsa_partu_blocks(&pu, n);
	if (o->pu.blocks == 0 && jb->W > 1 && b % jb->W)
		b += jb->W - b % jb->W;
	jb->b = (uint32_t)(b < n ? b : n);
	jb->a = o->pu.init_blocks < jb->b ? o->pu.init_blocks : jb->b;
	jb->syncs = part_par_auto_syncs(jb->po, jb->W, jb->b);
	free(jb->start);
	jb->start = malloc(((size_t)jb->b + 1) * sizeof(uint32_t));
	if (!jb->start)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory for %u "
				  "blocks", jb->b);
	rc = parsa_blocks_split(n, jb->b, o->pu.seed, jb->perm, jb->start,
				err);
	if (rc)
		return rc;
	f = part_par_auto_sample(jb->po, jb->W, jb->a, n);
	jb->sample = jb->a > 0 ? 0.0 : f;
	jb->m_sample = (uint32_t)llround(jb->sample * n);
	if (jb->sample > 0 && jb->m_sample == 0)
		jb->m_sample = 1;
	/* The sample keeps its parts; the blocks split the other examples
	 * (no sample: exactly the sequential split). */
	for (uint64_t j = 0; j <= jb->b; j++)
		jb->start[j] = jb->m_sample +
			       (uint32_t)(j * (n - jb->m_sample) / jb->b);
	jb->cap = parsa_balance_cap(n, jb->k, o->pu.imbalance);
	return 0;
}

static void job_release(struct job *jb)
{
	free(jb->perm);
	free(jb->start);
	free(jb->seen);
	free(jb->sample_count);
}

/* Key range starts: [0, n_cols) split evenly over S servers. */
static uint64_t *range_starts(uint32_t S, uint32_t n_cols,
			      struct parsa_err *err)
{
	uint64_t *st = malloc((size_t)S * sizeof(uint64_t));

	if (!st) {
		parsa_fail(err, PARSA_ENOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < S; i++)
		st[i] = (uint64_t)i * n_cols / S;
	return st;
}

/* -------------------------------------------------------------- worker */

/*
 * A block in flight: its rows and local features, its keys, and the
 * pulled masks and counters.  Two of them when the worker prefetches
 * (τ != 0): block j+W is extracted and its pull sent before block j is
 * partitioned, so the servers answer while the worker computes.
 */
struct wslot {
	struct parsa_block blk;
	uint64_t *keys;            /* block keys / push keys */
	size_t keys_cap;
	unsigned char *vals;       /* pulled / pushed mask bytes */
	size_t vals_cap;
	double *cnt;               /* k: pulled |S_i|, then pushed deltas */
	uint64_t ts_mask, ts_size; /* the pull's timestamps (0: none) */
	uint32_t pushed;           /* keys[0..pushed) / vals: the block's push */
	uint32_t block;            /* block index j */
};

/* A worker's state for its blocks.  Buffers grow with the blocks. */
struct wstate {
	struct job *jb;
	uint32_t index;            /* worker index w */
	int prefetch;              /* τ != 0: pull block j+W before j runs */
	struct parsa_partu_ctx *ctx;
	struct parsa_balance bal;
	struct wslot slot[2];
	uint32_t cur;              /* slot of the block being partitioned */
	struct parsa_nbrset slice; /* the block's masks */
	uint32_t *map;             /* n_cols scratch, all UINT32_MAX */
	uint64_t *before;          /* slice bits before the block */
	size_t before_cap;
	uint32_t *rec;             /* progress record (head + parts) */
	size_t rec_cap;
	uint64_t *ckeys;           /* 0..k-1 */
	uint64_t *s0;              /* k: s_size before the block */
	uint64_t *diff;            /* one mask: new bits of a feature */
	uint32_t done;             /* blocks finished */
	/* mid-block syncs (jb->syncs > 0) */
	uint64_t *since;           /* slice bits at the last sync */
	size_t since_cap;
	uint64_t *s1;              /* k: s_size at the last push or merge */
	uint64_t *s2;              /* k: s_size when the sync pull went out */
	double *own;               /* k: the block's pushed |S_i| deltas */
	double *scnt;              /* k: a sync's pulled counters */
	double *dcnt;              /* k: a sync's pushed counters */
	uint64_t *pbits;           /* a sync's pulled masks, decoded */
	size_t pbits_cap;
	uint64_t *pkeys;           /* a sync's push */
	size_t pkeys_cap;
	unsigned char *pvals;
	size_t pvals_cap;
};

static void ws_release(struct wstate *ws)
{
	parsa_partu_ctx_destroy(ws->ctx);
	parsa_balance_release(&ws->bal);
	for (int q = 0; q < 2; q++) {
		parsa_block_release(&ws->slot[q].blk);
		free(ws->slot[q].keys);
		free(ws->slot[q].vals);
		free(ws->slot[q].cnt);
	}
	parsa_nbrset_release(&ws->slice);
	free(ws->map);
	free(ws->before);
	free(ws->rec);
	free(ws->ckeys);
	free(ws->s0);
	free(ws->diff);
	free(ws->since);
	free(ws->s1);
	free(ws->s2);
	free(ws->own);
	free(ws->scnt);
	free(ws->dcnt);
	free(ws->pbits);
	free(ws->pkeys);
	free(ws->pvals);
}

/* The balance of worker w: global cap, count[i] = C - c_w,i (caps: the
 * W * k per-worker caps). */
static int ws_balance(struct wstate *ws, const uint64_t *caps,
		      struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	const struct parsa_partu_opts *pu = &jb->o->pu;
	int rc = parsa_balance_init(&ws->bal, jb->k, jb->ds->g.n_rows,
				    pu->rule, pu->imbalance, err);

	if (rc)
		return rc;
	if (pu->block_imbalance > 0)
		ws->bal.block_imbalance = pu->block_imbalance;
	for (uint32_t i = 0; i < jb->k; i++)
		ws->bal.count[i] = ws->bal.cap -
				   caps[(uint64_t)ws->index * jb->k + i];
	return 0;
}

static int ws_init(struct wstate *ws, struct job *jb, uint32_t index,
		   const uint64_t *caps, struct parsa_err *err)
{
	uint32_t n = jb->ds->g.n_rows, nc = jb->ds->g.n_cols, k = jb->k;
	uint32_t max_rows = n / jb->b + (n % jb->b != 0);
	int rc;

	memset(ws, 0, sizeof(*ws));
	ws->jb = jb;
	ws->index = index;
	ws->prefetch = jb->clocked ? jb->staleness >= 1 : jb->po->tau != 0;
	parsa_block_init(&ws->slot[0].blk);
	parsa_block_init(&ws->slot[1].blk);
	ws->map = malloc((nc ? nc : 1) * sizeof(uint32_t));
	ws->ckeys = malloc(k * sizeof(uint64_t));
	ws->slot[0].cnt = malloc(k * sizeof(double));
	ws->slot[1].cnt = malloc(k * sizeof(double));
	ws->s0 = malloc(k * sizeof(uint64_t));
	ws->diff = malloc((k / 64 + 1) * sizeof(uint64_t));
	ws->s1 = malloc(k * sizeof(uint64_t));
	ws->s2 = malloc(k * sizeof(uint64_t));
	ws->own = malloc(k * sizeof(double));
	ws->scnt = malloc(k * sizeof(double));
	ws->dcnt = malloc(k * sizeof(double));
	if (!ws->map || !ws->ckeys || !ws->slot[0].cnt || !ws->slot[1].cnt ||
	    !ws->s0 || !ws->diff || !ws->s1 || !ws->s2 || !ws->own || !ws->scnt ||
	    !ws->dcnt)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	memset(ws->map, 0xff, (size_t)nc * sizeof(uint32_t));
	for (uint32_t i = 0; i < k; i++)
		ws->ckeys[i] = i;
	rc = parsa_partu_ctx_create(&ws->ctx, k, max_rows, err);
	return rc ? rc : ws_balance(ws, caps, err);
}

/* Block j's rows and local features into sl->blk, its keys into sl->keys. */
static int ws_extract(struct wstate *ws, struct wslot *sl, uint32_t j,
		      struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	uint32_t n = jb->start[j + 1] - jb->start[j];
	int rc = parsa_block_extract(&sl->blk, &jb->ds->g,
				     jb->perm + jb->start[j], n, ws->map, err);

	if (!rc)
		rc = part_grow((void **)&sl->keys, &sl->keys_cap,
			       sl->blk.g.n_cols, sizeof(uint64_t), err);
	for (uint32_t l = 0; !rc && l < sl->blk.g.n_cols; l++)
		sl->keys[l] = sl->blk.feat[l];
	sl->block = j;
	sl->pushed = 0;
	sl->ts_mask = sl->ts_size = 0;
	return rc;
}

/* Send the pulls of the block's masks and of the |S_i| counters, for the
 * block run at clock `use` (ssp; the current clock or the next one). */
static int ws_pull_send(struct ps_node *w, struct wstate *ws,
			struct wslot *sl, int64_t use, struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	uint32_t nf = sl->blk.g.n_cols;
	int rc = part_grow((void **)&sl->vals, &sl->vals_cap,
			   (size_t)nf * jb->width, 1, err);

	if (!rc && nf)
		rc = ps_pull_for(w, TBL_MASK, sl->keys, nf, sl->vals, use,
				 &sl->ts_mask, err);
	if (!rc)
		rc = ps_pull_for(w, TBL_SSIZE, ws->ckeys, jb->k, sl->cnt, use,
				 &sl->ts_size, err);
	return rc;
}

/*
 * sl's pulled masks |= own's pushed bits (byte-wise, in the server's
 * encoding), and the pulled counters += own's pushed deltas: own is the
 * block this worker pushed after sl's pull was sent (FIFO per
 * worker-server pair: the answer cannot contain it).  Both key lists are
 * increasing: one merge.
 */
static void ws_merge_own(const struct wstate *ws, struct wslot *sl,
			 const struct wslot *own)
{
	uint32_t width = ws->jb->width, nf = sl->blk.g.n_cols;

	for (uint32_t a = 0, b = 0; a < own->pushed && b < nf;) {
		uint64_t ka = own->keys[a], kb = sl->keys[b];

		if (ka == kb) {
			unsigned char *d = sl->vals + (size_t)b * width;
			const unsigned char *o = own->vals + (size_t)a * width;

			for (uint32_t q = 0; q < width; q++)
				d[q] |= o[q];
		}
		a += ka <= kb;
		b += kb <= ka;
	}
	for (uint32_t i = 0; i < ws->jb->k; i++)
		sl->cnt[i] += own->cnt[i];
}

/*
 * Wait for sl's pulls; fill the slice and bal.s_size (the MIN_S key),
 * with own's push merged in when the pull was sent before it (own may be
 * NULL).  The slice's own sizes (slice.size) are not maintained:
 * parsa_partu_block reads only bal.s_size, the global |S_i|.
 */
static int ws_pull_wait(struct ps_node *w, struct wstate *ws,
			struct wslot *sl, const struct wslot *own,
			struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	uint32_t nf = sl->blk.g.n_cols;
	int rc;

	parsa_nbrset_release(&ws->slice);
	rc = parsa_nbrset_init(&ws->slice, nf, jb->k, err);
	if (!rc && sl->ts_mask)
		rc = ps_wait(w, sl->ts_mask, err);
	if (!rc)
		rc = ps_wait(w, sl->ts_size, err);
	if (rc)
		return rc;
	if (own)
		ws_merge_own(ws, sl, own);
	part_mask_decode_n(ws->slice.bits, ws->slice.words, jb->k, sl->vals,
			   jb->width, nf);
	for (uint32_t i = 0; i < jb->k; i++)
		ws->bal.s_size[i] = sl->cnt[i] > 0 ? (uint64_t)sl->cnt[i] : 0;
	return 0;
}

/* Keep a copy of the slice's bits and sizes before the block. */
static int ws_snapshot(struct wstate *ws, struct parsa_err *err)
{
	size_t nw = (size_t)ws->slice.n_feat * ws->slice.words;
	int rc = part_grow((void **)&ws->before, &ws->before_cap, nw,
		      sizeof(uint64_t), err);

	if (rc)
		return rc;
	memcpy(ws->before, ws->slice.bits, nw * sizeof(uint64_t));
	memcpy(ws->s0, ws->bal.s_size, ws->jb->k * sizeof(uint64_t));
	return 0;
}

/* The slice's bits not in base (same layout), encoded with their keys
 * into keys/vals (keys may be sl->keys itself: entry m <= l is written
 * after key l is read); returns how many. */
static uint32_t ws_diff(struct wstate *ws, const struct wslot *sl,
			const uint64_t *base, uint64_t *keys,
			unsigned char *vals)
{
	uint32_t words = ws->slice.words, width = ws->jb->width, m = 0;
	uint64_t *diff = ws->diff;

	for (uint32_t l = 0; l < ws->slice.n_feat; l++) {
		const uint64_t *a = ws->slice.bits + (uint64_t)l * words;
		const uint64_t *b = base + (uint64_t)l * words;
		uint64_t or = 0;

		for (uint32_t q = 0; q < words; q++)
			or |= diff[q] = a[q] & ~b[q];
		if (!or)
			continue;
		keys[m] = sl->blk.feat[l];
		part_mask_encode(vals + (size_t)m * width, width, diff);
		m++;
	}
	return m;
}

/* Push m masks (OR) and, if any is non-zero, the k counters (ADD). */
static int ws_send(struct ps_node *w, struct wstate *ws, const uint64_t *keys,
		   const unsigned char *vals, uint32_t m, const double *cnt,
		   struct parsa_err *err)
{
	uint64_t ts;
	int rc = 0, any = 0;

	if (m)
		rc = ps_push(w, TBL_MASK, keys, m, vals, &ts, err);
	for (uint32_t i = 0; i < ws->jb->k; i++)
		any |= cnt[i] != 0;
	if (!rc && any)
		rc = ps_push(w, TBL_SSIZE, ws->ckeys, ws->jb->k, cnt, &ts, err);
	return rc;
}

/* Push the bits the block added (after & ~before, OR) and the number of
 * new bits per partition (ADD); they stay in sl (keys, vals, pushed, cnt)
 * for ws_merge_own.  No wait: τ bounds the delay. */
static int ws_push(struct ps_node *w, struct wstate *ws, struct wslot *sl,
		   struct parsa_err *err)
{
	sl->pushed = ws_diff(ws, sl, ws->before, sl->keys, sl->vals);
	for (uint32_t i = 0; i < ws->jb->k; i++)
		sl->cnt[i] = (double)(ws->bal.s_size[i] - ws->s0[i]);
	return ws_send(w, ws, sl->keys, sl->vals, sl->pushed, sl->cnt, err);
}

/*
 * Mid-block syncs (jb->syncs = N > 0).  The block runs in N + 1 equal
 * steps.  A pull of the block's masks and of the |S_i| counters goes out
 * when the block starts and after each sync but the last; at sync q the
 * worker pushes what it added since the previous push, then takes the
 * answer of the pull sent at the previous point (sent a step earlier, so
 * the worker never waits for a round trip): the bits other workers set
 * enter the running block (parsa_partu_block_merge: the costs follow),
 * and |S_i| becomes the pulled value plus the worker's own growth since
 * that pull went out (the answer holds every push sent before it: one
 * worker-server pair keeps its order).  With one worker the answer holds
 * only the worker's own bits, so nothing changes.
 *
 * State: since = the slice's bits at the last push (merged bits are added
 * to it, so they are never pushed back), s1 = s_size at the last push or
 * merge, s2 = s_size when the pull in flight went out, own = every
 * counter pushed in this block.
 */

/* Push what the block added since the last push (bits after & ~since,
 * counters s_size - s1); ws->own adds the counters. */
static int ws_push_since(struct ps_node *w, struct wstate *ws,
			 const struct wslot *sl, struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	uint32_t nf = ws->slice.n_feat, m;
	size_t nw = (size_t)nf * ws->slice.words;
	int rc = part_grow((void **)&ws->pkeys, &ws->pkeys_cap, nf,
			   sizeof(uint64_t), err);

	if (!rc)
		rc = part_grow((void **)&ws->pvals, &ws->pvals_cap,
			       (size_t)nf * jb->width, 1, err);
	if (rc)
		return rc;
	m = ws_diff(ws, sl, ws->since, ws->pkeys, ws->pvals);
	for (uint32_t i = 0; i < jb->k; i++) {
		ws->dcnt[i] = (double)(ws->bal.s_size[i] - ws->s1[i]);
		ws->own[i] += ws->dcnt[i];
	}
	memcpy(ws->since, ws->slice.bits, nw * sizeof(uint64_t));
	memcpy(ws->s1, ws->bal.s_size, jb->k * sizeof(uint64_t));
	return ws_send(w, ws, ws->pkeys, ws->pvals, m, ws->dcnt, err);
}

/* Send the pull of the block's masks (into sl->vals) and counters. */
static int ws_sync_pull(struct ps_node *w, struct wstate *ws,
			struct wslot *sl, struct parsa_err *err)
{
	uint32_t nf = sl->blk.g.n_cols;
	int rc = 0;

	sl->ts_mask = sl->ts_size = 0;
	if (nf)
		rc = ps_pull(w, TBL_MASK, sl->keys, nf, sl->vals, &sl->ts_mask,
			     err);
	if (!rc)
		rc = ps_pull(w, TBL_SSIZE, ws->ckeys, ws->jb->k, ws->scnt,
			     &sl->ts_size, err);
	memcpy(ws->s2, ws->bal.s_size, ws->jb->k * sizeof(uint64_t));
	return rc;
}

/* Wait for the pull in flight (if any); merge its answer when `merge`. */
static int ws_sync_take(struct ps_node *w, struct wstate *ws,
			struct wslot *sl, int merge, struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	uint32_t nf = sl->blk.g.n_cols, words = ws->slice.words;
	int rc = 0;

	if (sl->ts_mask)
		rc = ps_wait(w, sl->ts_mask, err);
	if (!rc && sl->ts_size)
		rc = ps_wait(w, sl->ts_size, err);
	if (rc || !merge || !sl->ts_size)
		return rc;
	rc = part_grow((void **)&ws->pbits, &ws->pbits_cap,
		       (size_t)nf * words, sizeof(uint64_t), err);
	if (rc)
		return rc;
	part_mask_decode_n(ws->pbits, words, jb->k, sl->vals, jb->width, nf);
	for (uint32_t l = 0; l < nf; l++) {
		const uint64_t *have = ws->slice.bits + (uint64_t)l * words;
		uint64_t *got = ws->pbits + (uint64_t)l * words, or = 0;
		uint64_t *was = ws->since + (uint64_t)l * words;

		for (uint32_t q = 0; q < words; q++)
			or |= got[q] &= ~have[q];
		if (!or)
			continue;
		parsa_partu_block_merge(ws->ctx, &ws->slice, l, got);
		for (uint32_t q = 0; q < words; q++)
			was[q] |= got[q];
	}
	for (uint32_t i = 0; i < jb->k; i++) {
		double v = ws->scnt[i] + (double)(ws->bal.s_size[i] - ws->s2[i]);

		ws->bal.s_size[i] = v > 0 ? (uint64_t)v : 0;
	}
	memcpy(ws->s1, ws->bal.s_size, jb->k * sizeof(uint64_t));
	return 0;
}

/* The block's end with syncs: push what came since the last push, let the
 * last pull finish; keep in sl, for ws_merge_own, everything the block
 * added since it started (bits after & ~before, and ws->own). */
static int ws_push_synced(struct ps_node *w, struct wstate *ws,
			  struct wslot *sl, struct parsa_err *err)
{
	int rc = ws_push_since(w, ws, sl, err);

	if (!rc)
		rc = ws_sync_take(w, ws, sl, 0, err);
	sl->pushed = ws_diff(ws, sl, ws->before, sl->keys, sl->vals);
	memcpy(sl->cnt, ws->own, ws->jb->k * sizeof(double));
	return rc;
}

/* Partition the block in jb->syncs + 1 steps, syncing between two. */
static int ws_partition(struct ps_node *w, struct wstate *ws,
			struct wslot *sl, uint32_t *part,
			struct parsa_partu_stats *st, struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	uint32_t n = sl->blk.g.n_rows, N = jb->syncs;
	size_t nw = (size_t)ws->slice.n_feat * ws->slice.words;
	int rc = parsa_partu_block_begin(ws->ctx, &sl->blk, &ws->slice,
					 &ws->bal, err);

	if (!rc)
		rc = part_grow((void **)&ws->since, &ws->since_cap, nw,
			       sizeof(uint64_t), err);
	if (rc)
		return rc;
	memcpy(ws->since, ws->slice.bits, nw * sizeof(uint64_t));
	memcpy(ws->s1, ws->bal.s_size, jb->k * sizeof(uint64_t));
	memset(ws->own, 0, jb->k * sizeof(double));
	rc = ws_sync_pull(w, ws, sl, err);
	for (uint32_t q = 1; !rc && q <= N; q++) {
		parsa_partu_block_run(ws->ctx, &sl->blk, &ws->slice, &ws->bal,
				      part, (uint32_t)((uint64_t)n * q / (N + 1)),
				      st);
		rc = ws_push_since(w, ws, sl, err);
		if (!rc)
			rc = ws_sync_take(w, ws, sl, 1, err);
		if (!rc && q < N)
			rc = ws_sync_pull(w, ws, sl, err);
	}
	if (!rc)
		parsa_partu_block_run(ws->ctx, &sl->blk, &ws->slice, &ws->bal,
				      part, n, st);
	return rc;
}

/* Send block j's parts (block row order) to the scheduler. */
static int ws_send_parts(struct ps_node *w, struct wstate *ws, uint32_t j,
			 uint32_t n, const struct parsa_partu_stats *st,
			 struct parsa_err *err)
{
	size_t hw = sizeof(struct rec_head) / sizeof(uint32_t);
	struct rec_head h = {REC_MAGIC, j, n, ws->index, st->new_bits,
			     st->decrements};

	memcpy(ws->rec, &h, sizeof(h));
	return ps_report_progress(w, ws->rec, (hw + n) * sizeof(uint32_t),
				  err);
}

/*
 * One block = one PS iteration.  Without prefetch: extract, pull, wait,
 * partition, push.  With prefetch the current slot's pull was sent during
 * the previous iteration (before that iteration's push, which is merged in
 * locally), and the next block's pull goes out before this one is
 * partitioned.  One worker: the slice and counters are exactly the server's
 * state after every earlier push either way, so the result is the same.
 */
static int ws_block(struct ps_node *w, struct wstate *ws, uint32_t j,
		    struct parsa_err *err)
{
	const struct job *jb = ws->jb;
	size_t hw = sizeof(struct rec_head) / sizeof(uint32_t);
	struct parsa_partu_stats st = {0};
	struct wslot *sl = &ws->slot[ws->cur], *nx = &ws->slot[!ws->cur];
	const struct wslot *own = NULL;
	uint32_t next = j + jb->W;
	int64_t clock = ps_node_clock(w);
	int rc = jb->clocked ? 0 : ps_iter_begin(w, NULL, err);

	if (!ws->prefetch || ws->done == 0) { /* nothing sent yet for j */
		if (!rc)
			rc = ws_extract(ws, sl, j, err);
		if (!rc)
			rc = ws_pull_send(w, ws, sl, clock, err);
	} else if (nx->block + jb->W == j) {
		own = nx; /* the previous block, pushed after sl's pull */
	}
	if (!rc)
		rc = ws_pull_wait(w, ws, sl, own, err);
	if (!rc && ws->prefetch && next < jb->b) {
		rc = ws_extract(ws, nx, next, err);
		if (!rc)
			rc = ws_pull_send(w, ws, nx, clock + 1, err);
	}
	if (!rc)
		rc = ws_snapshot(ws, err);
	if (!rc)
		rc = part_grow((void **)&ws->rec, &ws->rec_cap,
			       hw + sl->blk.g.n_rows, sizeof(uint32_t), err);
	if (!rc && jb->syncs == 0)
		rc = parsa_partu_block(ws->ctx, &sl->blk, &ws->slice, &ws->bal,
				       ws->rec + hw, &st, err);
	else if (!rc)
		rc = ws_partition(w, ws, sl, ws->rec + hw, &st, err);
	if (!rc)
		rc = jb->syncs ? ws_push_synced(w, ws, sl, err)
			       : ws_push(w, ws, sl, err);
	if (!rc)
		rc = ws_send_parts(w, ws, j, sl->blk.g.n_rows, &st, err);
	if (!rc && jb->clocked) /* the block's pushes are this clock's */
		rc = ps_clock(w, err);
	if (ws->prefetch)
		ws->cur = !ws->cur;
	return rc;
}

/* The workers' task payload: TASK_MAGIC, then the kept sample's count of
 * examples in each of the k partitions (uint32 each; zeros without a
 * sample), from which every worker derives the same caps. */
static size_t task_len(const struct job *jb)
{
	return (1 + (size_t)jb->k) * sizeof(uint32_t);
}

static int worker_task(struct ps_node *w, uint64_t task_id,
		       const void *payload, size_t len, void *arg,
		       struct parsa_err *err)
{
	struct job *jb = arg;
	struct wstate ws;
	uint32_t magic = 0, me = ps_node_index(w);
	uint64_t *caps = calloc((size_t)jb->W * jb->k, sizeof(uint64_t));
	int rc = 0;

	(void)task_id;
	if (!caps)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	else if (len == task_len(jb))
		memcpy(&magic, payload, sizeof(magic));
	if (!rc && magic != TASK_MAGIC)
		rc = parsa_fail(err, PARSA_EPARSE, "unexpected task payload "
				"(%zu bytes)", len);
	if (!rc)
		rc = job_caps(jb, (const unsigned char *)payload +
					  sizeof(magic), caps, err);
	if (rc) {
		free(caps);
		return rc;
	}
	ps_set_tau(w, jb->po->tau);
	rc = ws_init(&ws, jb, me, caps, err);
	free(caps);
	for (uint32_t j = me; !rc && j < jb->b; j += jb->W) {
		rc = ws_block(w, &ws, j, err);
		ws.done++;
		if (!rc && jb->po->test_hook)
			rc = jb->po->test_hook(jb->po->test_arg, jb->tp,
					       jb->tp->rank, me, ws.done, err);
	}
	if (!rc)
		rc = ps_wait_all(w, err);
	ws_release(&ws);
	return rc;
}

/* ----------------------------------------------------------- scheduler */

static void sched_progress(struct job *jb)
{
	jb->progress_done++;
	if (jb->o->pu.progress)
		jb->o->pu.progress(jb->o->pu.progress_arg, jb->progress_done,
				   jb->progress_total);
}

/* One initialization block: rows[0..n) against T (left unchanged),
 * with its own balance, as the sequential warm-up; parts to lpart. */
static int init_block(struct job *jb, struct parsa_partu_ctx *ctx,
		      struct parsa_block *blk, const uint32_t *rows, uint32_t n,
		      const struct parsa_nbrset *T, uint32_t *map,
		      uint32_t *lpart, struct parsa_err *err)
{
	const struct parsa_partu_opts *pu = &jb->o->pu;
	struct parsa_nbrset slice = {0};
	struct parsa_balance bal;
	int rc;

	rc = parsa_balance_init(&bal, jb->k, n, pu->rule, pu->imbalance, err);
	if (rc)
		return rc;
	if (pu->block_imbalance > 0)
		bal.block_imbalance = pu->block_imbalance;
	rc = parsa_block_extract(blk, &jb->ds->g, rows, n, map, err);
	if (!rc)
		rc = parsa_nbrset_init(&slice, blk->g.n_cols, jb->k, err);
	if (!rc) {
		parsa_nbrset_gather(&slice, T, blk->feat);
		memcpy(bal.s_size, T->size, (size_t)jb->k * sizeof(uint64_t));
		rc = parsa_partu_block(ctx, blk, &slice, &bal, lpart, NULL,
				       err);
	}
	parsa_nbrset_release(&slice);
	parsa_balance_release(&bal);
	return rc;
}

/* T := S0 on blk's features (S0 NULL: empty). */
static void restore_features(struct parsa_nbrset *T,
			     const struct parsa_nbrset *S0,
			     const struct parsa_block *blk)
{
	for (uint32_t l = 0; l < blk->g.n_cols; l++) {
		uint64_t *m = T->bits + (uint64_t)blk->feat[l] * T->words;

		if (S0) {
			parsa_nbrset_set_mask(T, blk->feat[l],
					      parsa_nbrset_mask(S0, blk->feat[l]));
			continue;
		}
		for (uint32_t q = 0; q < T->words; q++) /* clear, sizes too */
			for (; m[q]; m[q] &= m[q] - 1)
				T->size[q * 64 + (uint32_t)__builtin_ctzll(m[q])]--;
	}
}

/* T |= N(U_i) of blk's rows under lpart. */
static void add_block_sets(struct parsa_nbrset *T,
			   const struct parsa_block *blk, const uint32_t *lpart)
{
	const struct parsa_graph *g = &blk->g;

	for (uint32_t r = 0; r < g->n_rows; r++)
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			parsa_nbrset_add(T, blk->feat[g->col[e]], lpart[r]);
}

/*
 * The sequential warm-up, mirrored: T (entering as S0, or empty) leaves as
 * S0 ∪ N(partition of warm-up block a-1), each warm-up block partitioned
 * from the previous one's sets only, with its own balance.
 */
static int warm_up_sets(struct job *jb, struct parsa_nbrset *T,
			struct parsa_err *err)
{
	uint32_t n = jb->ds->g.n_rows, nc = jb->ds->g.n_cols;
	uint32_t max_rows = n / jb->b + (n % jb->b != 0), *map, *lpart;
	struct parsa_block blk[2];
	struct parsa_partu_ctx *ctx = NULL;
	int rc = 0;

	map = malloc((nc ? nc : 1) * sizeof(uint32_t));
	lpart = malloc(max_rows * sizeof(uint32_t));
	if (!map || !lpart)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (init)");
	else
		memset(map, 0xff, (size_t)nc * sizeof(uint32_t));
	parsa_block_init(&blk[0]);
	parsa_block_init(&blk[1]);
	if (!rc)
		rc = parsa_partu_ctx_create(&ctx, jb->k, max_rows, err);
	for (uint32_t u = 0; !rc && u < jb->a; u++) {
		struct parsa_block *cur = &blk[u & 1], *prev = &blk[!(u & 1)];
		uint32_t m = jb->start[u + 1] - jb->start[u];

		rc = init_block(jb, ctx, cur, jb->perm + jb->start[u], m, T,
				map, lpart, err);
		if (rc)
			break;
		if (u > 0)
			restore_features(T, jb->o->init_S, prev);
		add_block_sets(T, cur, lpart);
		jb->init_rows += m;
		sched_progress(jb);
	}
	parsa_partu_ctx_destroy(ctx);
	parsa_block_release(&blk[0]);
	parsa_block_release(&blk[1]);
	free(map);
	free(lpart);
	return rc;
}

/* Sequential Parsa on the sample subgraph blk from T's slice, with the
 * main pass's block size; T |= the result (T's bits ∪ N(U_i)). */
static int partition_sample(struct job *jb, const struct parsa_block *blk,
			    struct parsa_nbrset *T, struct parsa_err *err)
{
	struct parsa_partu_opts so = jb->o->pu;
	struct parsa_nbrset S = {0};
	uint32_t n = jb->ds->g.n_rows, m = blk->g.n_rows;
	uint32_t rows = n / jb->b + (n % jb->b != 0);
	uint32_t *part = malloc((size_t)m * sizeof(uint32_t));
	int rc = part ? parsa_nbrset_init(&S, blk->g.n_cols, jb->k, err)
		      : parsa_fail(err, PARSA_ENOMEM, "out of memory (init)");

	so.blocks = m / rows + (m % rows != 0);
	so.init_blocks = 0;
	so.progress = NULL;
	if (!rc) {
		parsa_nbrset_gather(&S, T, blk->feat);
		rc = parsa_partition_u(&blk->g, &so, &S, part,
				       &jb->r->pu_stats, err);
	}
	if (!rc) {
		parsa_nbrset_scatter_or(T, &S, blk->feat);
		/* the sample keeps its parts (its balance: the cap of m
		 * examples, <= the cap of n) */
		for (uint32_t q = 0; q < m; q++) {
			jb->r->part[blk->rows[q]] = part[q];
			jb->sample_count[part[q]]++;
		}
	}
	parsa_nbrset_release(&S);
	free(part);
	return rc;
}

/*
 * Global initialization: T (S0 or empty) |= N(U_i) of a sequential
 * partition of the sample (the first m_sample examples of the split's
 * permutation, a uniform random sample).
 */
static int sample_sets(struct job *jb, struct parsa_nbrset *T,
		       struct parsa_err *err)
{
	uint32_t nc = jb->ds->g.n_cols;
	uint32_t *map = malloc((nc ? nc : 1) * sizeof(uint32_t));
	struct parsa_block blk;
	int rc;

	if (!map)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (init)");
	memset(map, 0xff, (size_t)nc * sizeof(uint32_t));
	parsa_block_init(&blk);
	rc = parsa_block_extract(&blk, &jb->ds->g, jb->perm, jb->m_sample,
				 map, err);
	free(map);
	if (!rc)
		rc = partition_sample(jb, &blk, T, err);
	parsa_block_release(&blk);
	if (!rc) {
		jb->init_rows = jb->m_sample;
		sched_progress(jb);
	}
	return rc;
}

/* Push T's non-empty masks (OVERWRITE, in chunks) and sizes; wait. */
static int push_sets(struct ps_node *s, const struct job *jb,
		     const struct parsa_nbrset *T, struct parsa_err *err)
{
	uint64_t *keys = malloc(PUSH_CHUNK * sizeof(uint64_t)), ts;
	unsigned char *vals = malloc((size_t)PUSH_CHUNK * jb->width);
	double *sz = malloc(jb->k * sizeof(double));
	uint64_t *ckeys = malloc(jb->k * sizeof(uint64_t));
	uint32_t m = 0;
	int rc = 0;

	if (!keys || !vals || !sz || !ckeys)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (init)");
	for (uint32_t v = 0; !rc && v < T->n_feat; v++) {
		if (parsa_nbrset_count(T, v) == 0)
			continue;
		keys[m] = v;
		part_mask_encode(vals + (size_t)m * jb->width, jb->width,
			    parsa_nbrset_mask(T, v));
		if (++m == PUSH_CHUNK) {
			rc = ps_push_op(s, TBL_MASK, PS_OP_OVERWRITE, keys, m,
					vals, &ts, err);
			m = 0;
		}
	}
	if (!rc && m)
		rc = ps_push_op(s, TBL_MASK, PS_OP_OVERWRITE, keys, m, vals,
				&ts, err);
	for (uint32_t i = 0; !rc && i < jb->k; i++) {
		ckeys[i] = i;
		sz[i] = (double)T->size[i];
	}
	if (!rc)
		rc = ps_push_op(s, TBL_SSIZE, PS_OP_OVERWRITE, ckeys, jb->k, sz,
				&ts, err);
	if (!rc)
		rc = ps_wait_all(s, err);
	free(keys);
	free(vals);
	free(sz);
	free(ckeys);
	return rc;
}

/* Global initialization on the scheduler (part_parallel.h). */
static int sched_init(struct ps_node *s, struct job *jb,
		      struct parsa_err *err)
{
	struct parsa_nbrset T;
	double t0 = part_now();
	int rc = parsa_nbrset_init(&T, jb->ds->g.n_cols, jb->k, err);

	if (rc)
		return rc;
	if (jb->o->init_S)
		parsa_nbrset_copy(&T, jb->o->init_S);
	if (jb->a > 0)
		rc = warm_up_sets(jb, &T, err);
	else if (jb->m_sample > 0)
		rc = sample_sets(jb, &T, err);
	if (!rc)
		rc = push_sets(s, jb, &T, err);
	parsa_nbrset_release(&T);
	jb->t_init = part_now() - t0;
	return rc;
}

static int bad_record(struct job *jb, uint32_t worker, const char *why,
		      uint64_t x)
{
	if (!jb->rec_rc)
		jb->rec_rc = parsa_fail(&jb->rec_err, PARSA_EPARSE,
					"bad parts record from worker %u: %s "
					"(%llu)", worker, why,
					(unsigned long long)x);
	return jb->rec_rc;
}

/* A worker's parts of one block: checked, then placed in r->part. */
static void on_record(void *arg, uint32_t worker, const void *rec,
		      size_t len)
{
	struct job *jb = arg;
	struct rec_head h;
	const unsigned char *p = rec;
	uint32_t *part = jb->r->part, v;

	if (len < sizeof(h)) {
		bad_record(jb, worker, "short", len);
		return;
	}
	memcpy(&h, rec, sizeof(h));
	if (h.magic != REC_MAGIC || h.block >= jb->b || h.worker != worker ||
	    h.block % jb->W != worker || jb->seen[h.block]) {
		bad_record(jb, worker, "block", h.block);
		return;
	}
	if (h.n != jb->start[h.block + 1] - jb->start[h.block] ||
	    len != sizeof(h) + (size_t)h.n * sizeof(uint32_t)) {
		bad_record(jb, worker, "length", len);
		return;
	}
	for (uint32_t q = 0; q < h.n; q++) {
		memcpy(&v, p + sizeof(h) + (size_t)q * sizeof(v), sizeof(v));
		if (v >= jb->k) {
			bad_record(jb, worker, "part", v);
			return;
		}
		part[jb->perm[jb->start[h.block] + q]] = v;
	}
	jb->seen[h.block] = 1;
	jb->blocks_seen++;
	jb->r->pu_stats.assigned += h.n;
	jb->r->pu_stats.new_bits += h.new_bits;
	jb->r->pu_stats.decrements += h.decrements;
	sched_progress(jb);
}

/* Start the workers and collect every block's parts. */
static int sched_collect(struct ps_node *s, struct job *jb,
			 struct parsa_err *err)
{
	uint32_t *task = calloc(1 + (size_t)jb->k, sizeof(uint32_t));
	double t0 = part_now();
	int rc;

	if (!task)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	task[0] = TASK_MAGIC;
	memcpy(task + 1, jb->sample_count, jb->k * sizeof(uint32_t));
	rc = ps_sched_start_task(s, PS_ALL, task, task_len(jb), NULL, err);
	free(task);
	if (!rc)
		rc = ps_sched_wait_tasks(s, on_record, jb, err);
	jb->t_workers = part_now() - t0;
	if (!rc && jb->rec_rc)
		rc = parsa_fail(err, jb->rec_rc, "%s", jb->rec_err.msg);
	if (!rc && jb->blocks_seen != jb->b)
		rc = parsa_fail(err, PARSA_ESTATE,
				"parts of %u of %u blocks received",
				jb->blocks_seen, jb->b);
	return rc;
}

/* The scheduler: initialization, workers, then V and the metrics here, so
 * that a failure still stops every rank. */
static int sched_main(struct ps_node *s, void *arg, struct parsa_err *err)
{
	struct job *jb = arg;
	int rc;

	jb->seen = calloc(jb->b, 1);
	jb->sample_count = calloc(jb->k, sizeof(uint32_t));
	if (!jb->seen || !jb->sample_count)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	jb->progress_total = (uint64_t)(jb->a > 0 ? jb->a : jb->m_sample > 0) +
			     jb->b;
	rc = sched_init(s, jb, err);
	if (!rc)
		rc = sched_collect(s, jb, err);
	jb->r->t_partition_u = jb->t_init + jb->t_workers;
	if (!rc)
		rc = part_run_finish(jb->ds, jb->o, jb->r, err);
	return rc;
}

/* ----------------------------------------------------------------- run */

static struct ps_transport *make_transport(const struct part_par_opts *po,
					   struct parsa_err *err);

void part_par_info_fill(const struct ps_transport *tp,
			const struct ps_result *res, int tau,
			struct part_par_info *in)
{
	memset(in, 0, sizeof(*in));
	in->transport = tp->ops->name;
	in->workers = tp->layout.num_workers;
	in->servers = tp->layout.num_servers;
	in->ranks = tp->nranks;
	in->tau = tau;
	{
		struct ps_consistency c = {PS_CONS_TAU, tau};

		ps_consistency_format(&c, in->consistency,
				      sizeof(in->consistency));
	}
	in->init = "none";
	ps_result_total(res, &in->traffic);
	for (uint32_t i = 0; i < res->num_nodes; i++) {
		const struct ps_node_stats *st = &res->nodes[i];

		if (!st->valid || st->role != PS_ROLE_WORKER)
			continue;
		for (int b = 0; b < PS_STALE_BUCKETS; b++) {
			in->stale_hist[b] += st->stale_hist[b];
			in->read_hist[b] += st->read_hist[b];
		}
		in->stale_max = st->stale_max > in->stale_max ? st->stale_max
							      : in->stale_max;
		in->iters += st->iters;
		in->tau_wait_s += (double)st->tau_wait_ns * 1e-9;
		in->wait_s += (double)st->wait_ns * 1e-9;
	}
}

static void fill_info(const struct job *jb, const struct ps_transport *tp,
		      const struct ps_result *res, struct part_par_info *in)
{
	part_par_info_fill(tp, res, jb->po->tau, in);
	if (jb->clocked) {
		struct ps_consistency c = {PS_CONS_SSP, jb->staleness};

		ps_consistency_format(&c, in->consistency,
				      sizeof(in->consistency));
	}
	in->init = jb->a > 0 ? "warm-up" : jb->m_sample > 0 ? "sample"
							    : "none";
	in->init_blocks = jb->a;
	in->blocks = jb->b;
	in->syncs = jb->syncs;
	in->init_sample = jb->a > 0 ? 0.0 : jb->sample;
	in->init_rows = jb->init_rows;
	in->t_init = jb->t_init;
	in->t_workers = jb->t_workers;
}

static struct ps_transport *make_transport(const struct part_par_opts *po,
					   struct parsa_err *err)
{
	struct ps_layout l;

	if (po->mpi) {
		l = (struct ps_layout){po->servers, po->workers, 0};
		return ps_transport_mpi_create(&l, po->timeout_s, err);
	}
	l.num_workers = po->workers ? po->workers : 1;
	l.num_servers = po->servers ? po->servers : l.num_workers;
	l.num_machines = l.num_servers > l.num_workers ? l.num_servers
							: l.num_workers;
	return ps_transport_threads_create(&l, err);
}

/* Everything once the transport exists: config, result, ps_run. */
void part_par_config(struct ps_config *cfg, const struct ps_layout *l,
		     const struct part_par_opts *po)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->num_servers = l->num_servers;
	cfg->num_workers = l->num_workers;
	cfg->num_machines = l->num_machines;
	cfg->tau = po->tau;
	cfg->timeout_s = po->timeout_s;
}

/* Workers this process runs (all of them with threads, its rank's with
 * MPI). */
static uint32_t hosted_workers(const struct ps_transport *tp)
{
	const struct ps_layout *l = &tp->layout;
	uint32_t n = 0;

	for (uint32_t i = 0; i < l->num_workers; i++)
		n += (uint32_t)ps_transport_is_local(tp,
						     ps_layout_worker_node(l, i));
	return n;
}

uint32_t part_par_cpu_shortfall(uint32_t workers, uint32_t *cpus)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	*cpus = part_pool_cpus();
	if (online > 0 && (long)*cpus >= online)
		return 0; /* not bound: more workers than cores was asked for */
	return workers > *cpus ? workers - *cpus : 0;
}

/*
 * Warn (stderr, once per process) when this process is bound to fewer CPUs
 * than the machine has and runs more workers than that: they then take
 * turns on them and the run can be slower than one worker.  mpirun binds
 * every rank to one core by default when there are at most 2 ranks, so
 * `mpirun -np 1 ... --workers 2` runs both workers on one core (2.2 s
 * against 0.95 s with --bind-to none, 20M nonzeros, 2-core VM).
 */
static void warn_cpus(const struct ps_transport *tp)
{
	uint32_t w = hosted_workers(tp), cpus = 0;
	char who[32] = "this process";

	if (w < 2 || !part_par_cpu_shortfall(w, &cpus))
		return;
	if (!tp->all_local)
		snprintf(who, sizeof(who), "rank %u", tp->rank);
	fprintf(stderr, "parsa: warning: %s runs %u workers on %u CPU%s (its "
		"affinity mask), so they take turns; under mpirun add "
		"--bind-to none, or run one rank per worker\n", who, w, cpus,
		cpus == 1 ? "" : "s");
}

int part_par_launch(const struct part_par_opts *po, part_par_body_fn fn,
		    void *arg, int *is_root, int *rank, struct parsa_err *err)
{
	struct ps_transport *tp = make_transport(po, err);
	int rc = tp ? 0 : (err->code ? err->code : PARSA_EMPI);

	*is_root = 0;
	if (rank)
		*rank = 0;
	if (!rc) {
		if (rank)
			*rank = (int)tp->rank;
		warn_cpus(tp);
		rc = fn(arg, tp, err);
		*is_root = tp->rank == 0 && rc == 0;
	}
	ps_transport_destroy(tp);
	return rc;
}

/* ps_transport_mpi_relax's longest sleep in the in-memory mode. */
#define PART_PAR_RELAX_S 4e-3

/* part_par_launch's body: everything once the transport exists. */
struct run_args {
	struct job *jb;
	struct part_result *r;
	struct part_par_info *info;
};

static int run_on(void *arg, struct ps_transport *tp, struct parsa_err *err)
{
	struct run_args *a = arg;
	struct job *jb = a->jb;
	struct part_result *r = a->r;
	struct part_par_info *info = a->info;
	const struct ps_layout *l = &tp->layout;
	struct ps_config cfg = {0};
	struct ps_app app = {0};
	struct ps_result res = {0};
	uint64_t *starts;
	int rc;

	rc = job_layout(jb, l, err);
	starts = rc ? NULL : range_starts(l->num_servers, jb->ds->g.n_cols,
					  err);
	if (!starts) {
		ps_transport_fail(tp, err->code, "%s", err->msg);
		return err->code;
	}
	jb->tp = tp;
	/* With tau >= 1 every pull is sent a block (or a sync step) before
	 * its answer is taken and no push is waited for, so the MPI comm
	 * threads may poll lazily while the workers compute (20M nonzeros:
	 * partition U 6% faster; BENCHMARKS.md).  Streaming waits for each
	 * block's pull and keeps the brisk default. */
	if (jb->clocked ? jb->staleness >= 1 : jb->po->tau != 0)
		ps_transport_mpi_relax(tp, PART_PAR_RELAX_S);
	if (tp->rank == 0)
		rc = part_result_alloc(r, jb->ds, jb->k, err);
	part_par_config(&cfg, l, jb->po);
	if (jb->clocked) {
		cfg.consistency = PS_CONS_SSP;
		cfg.staleness = jb->staleness;
	}
	cfg.num_tables = NUM_TABLES;
	cfg.tables[TBL_MASK] = (struct ps_table_spec){jb->width, PS_OP_OR};
	cfg.tables[TBL_SSIZE] = (struct ps_table_spec){8, PS_OP_ADD_F64};
	cfg.range_starts = starts;
	app.task = worker_task;
	app.sched_main = sched_main;
	app.arg = jb;
	jb->r = r;
	if (rc)
		ps_transport_fail(tp, rc, "%s", err->msg);
	else
		rc = ps_run(tp, &cfg, &app, &res, err);
	if (!rc && tp->rank == 0 && info)
		fill_info(jb, tp, &res, info);
	ps_result_release(&res);
	free(starts);
	return rc;
}

int part_par_run(const struct part_dataset *ds, const struct part_run_opts *o,
		 const struct part_par_opts *po, struct part_result *r,
		 struct part_par_info *info, int *is_root, int *rank,
		 struct parsa_err *err)
{
	struct parsa_err local = {0};
	struct job jb;
	struct run_args a = {&jb, r, info};
	int rc;

	struct part_par_opts pc = *po;
	struct ps_consistency c = {PS_CONS_TAU, po->tau};

	err = err ? err : &local;
	memset(&jb, 0, sizeof(jb));
	*is_root = 0;
	if (rank)
		*rank = 0;
	rc = check_opts(ds, o, po, err);
	if (!rc && po->consistency)
		rc = ps_consistency_parse(po->consistency, &c, err);
	if (!rc && c.model == PS_CONS_TAU)
		pc.tau = c.bound < 0 ? PART_PAR_TAU_INF : c.bound;
	if (!rc)
		rc = job_init(&jb, ds, o, &pc, err);
	jb.clocked = c.model == PS_CONS_SSP;
	jb.staleness = jb.clocked ? c.bound : 0;
	if (!rc)
		rc = part_par_launch(po, run_on, &a, is_root, rank, err);
	if (rc)
		part_result_release(r);
	job_release(&jb);
	return rc;
}
