/*
 * train_run: DBPG on the parameter server (see train_run.h).
 *
 * Layout of this file: keys and blocks (shared job), the servers' state
 * and hooks (PROX, STATS, MODEL), the worker (local column-major data,
 * iterations, finishing, pass records), the scheduler (pass records ->
 * train_pass), and the run on a threads or MPI transport.
 */
#include "train_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"
#include "ps.h"
#include "ps_transport_mpi.h"
#include "train_prox.h"

#define TBL_GRAD 0 /* key -> (g, u), double ADD */
#define TBL_W 1    /* key -> w, written by the PROX hook */
#define NUM_TABLES 2
#define HOOK_PROX 1
#define HOOK_STATS 2
#define HOOK_MODEL 3
#define TASK_MAGIC 0x5452414eu /* "TRAN" */
#define REC_MAGIC 0x54524543u  /* "TREC" */

/* Server state, one per server of this process (dense over its range). */
struct srv {
	uint64_t lo, n;     /* keys [lo, lo + n) */
	double *w, *delta;  /* n each */
	int64_t applied;    /* last iteration whose PROX ran */
};

/* Per pass, accumulated by the scheduler from the workers' records. */
struct pass_acc {
	uint32_t count;
	struct train_pass p;
	double wait_sum, wait_split[TRAIN_WAIT_KINDS];
};

/* One run, shared by every node of this process.  Read-only while nodes
 * run, except: srv[i] (server i's thread), model (worker 0), and the
 * scheduler's fields (acc, per_worker, rec_rc). */
struct job {
	const struct train_problem *pb;
	const struct train_opts *o;
	uint32_t k, B, n_cols, tau; /* tau: the delay bound (tau or S) */
	int clocked, essp;          /* SSP/ESSP: servers PROX on clocks */
	uint64_t *key_of;    /* compact col -> key */
	uint32_t *col_of;    /* key -> compact col */
	uint64_t *starts;    /* k range starts */
	uint64_t *size;      /* k: |V_i| */
	uint32_t *blk_of;    /* key -> block */
	struct ps_layout layout;
	struct srv **srv;    /* k; NULL for servers not hosted here */
	double *model;       /* n_cols by col; worker 0 (root) fills it */
	/* scheduler */
	struct pass_acc *acc;
	struct train_traffic *per_worker;
	double total_s;
	struct train_pass last;
	int rec_rc;
	struct parsa_err rec_err;
	uint32_t rank, nranks; /* this process */
	uint64_t nnz;          /* scheduler: workers' row non-zeros */
	uint32_t *parsed;      /* scheduler: nranks, rows parsed per rank */
	int load_rc;           /* train_opts.load failed in this process */
	struct parsa_err load_err;
};

/* A pass record from worker `worker` to the scheduler. */
struct rec {
	uint32_t magic, worker, pass, pad;
	double logloss, seconds, wait;
	double wait_split[TRAIN_WAIT_KINDS];
	struct train_traffic t;
	uint64_t wire_bytes[2], wire_msgs[2]; /* this worker's node */
	uint64_t rows_nnz;         /* entries of the worker's rows */
	uint64_t read_hist[PS_STALE_BUCKETS];
	uint64_t eager_bytes[2];
	uint32_t rank, parsed;     /* its process, rows that process parsed */
	/* worker 0 only */
	double l1, auc;
	uint64_t nnz;
	uint64_t srv_bytes[2], srv_msgs[2];   /* all servers, this pass */
};

/* Reply of HOOK_STATS. */
struct stats_reply {
	double l1;
	uint64_t nnz;
	uint64_t bytes[2], msgs[2]; /* the server's sent counters, cumulative */
};

void train_opts_default(struct train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->passes = 10;
	o->lambda = 1.0;
	o->blocks = 8;
	o->cons.model = PS_CONS_TAU;
}

void train_result_release(struct train_result *r)
{
	if (!r)
		return;
	free(r->w);
	free(r->per_worker);
	free(r->parsed);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------ keys and blocks */

void train_keys_build(const uint32_t *owner, uint32_t n_cols, uint32_t k,
		      uint64_t *key_of, uint32_t *col_of_key,
		      uint64_t *starts)
{
	uint64_t acc = 0;

	memset(starts, 0, (size_t)k * sizeof(uint64_t));
	for (uint32_t j = 0; j < n_cols; j++)
		starts[owner[j]]++;
	for (uint32_t i = 0; i < k; i++) {
		uint64_t c = starts[i];

		starts[i] = acc;
		acc += c;
	}
	/* counting sort by owner, stable: compact id order within a server;
	 * afterwards starts[i] is the end of range i */
	for (uint32_t j = 0; j < n_cols; j++) {
		key_of[j] = starts[owner[j]]++;
		col_of_key[key_of[j]] = j;
	}
	for (uint32_t i = k; i-- > 1;)
		starts[i] = starts[i - 1];
	starts[0] = 0;
}

/* First key offset of block b in a range of n keys: ceil(b n / B). */
static uint64_t blk_lo(uint64_t n, uint32_t b, uint32_t B)
{
	return ((uint64_t)b * n + B - 1) / B;
}

static void job_release(struct job *jb)
{
	free(jb->key_of);
	free(jb->col_of);
	free(jb->starts);
	free(jb->size);
	free(jb->blk_of);
	if (jb->srv) {
		for (uint32_t i = 0; i < jb->k; i++) {
			if (!jb->srv[i])
				continue;
			free(jb->srv[i]->w);
			free(jb->srv[i]->delta);
			free(jb->srv[i]);
		}
	}
	free(jb->srv);
	free(jb->model);
	free(jb->acc);
	free(jb->per_worker);
	free(jb->parsed);
}

static int job_init(struct job *jb, const struct train_problem *pb,
		    const struct train_opts *o, struct parsa_err *err)
{
	uint32_t nc = pb->train->n_cols, k = pb->k;

	memset(jb, 0, sizeof(*jb));
	jb->pb = pb;
	jb->o = o;
	jb->k = k;
	jb->n_cols = nc;
	jb->B = o->blocks < nc ? o->blocks : (nc ? nc : 1);
	jb->clocked = o->cons.model == PS_CONS_SSP ||
		      o->cons.model == PS_CONS_ESSP;
	jb->essp = o->cons.model == PS_CONS_ESSP;
	{
		uint32_t d = (uint32_t)(jb->clocked ? o->cons.bound : o->tau);

		jb->tau = d < jb->B ? d : jb->B - 1;
	}
	jb->key_of = malloc(((size_t)nc + 1) * sizeof(uint64_t));
	jb->col_of = malloc(((size_t)nc + 1) * sizeof(uint32_t));
	jb->blk_of = malloc(((size_t)nc + 1) * sizeof(uint32_t));
	jb->starts = calloc(k, sizeof(uint64_t));
	jb->size = calloc(k, sizeof(uint64_t));
	jb->srv = calloc(k, sizeof(*jb->srv));
	jb->acc = calloc(o->passes, sizeof(*jb->acc));
	jb->per_worker = calloc(k, sizeof(*jb->per_worker));
	if (!jb->key_of || !jb->col_of || !jb->blk_of || !jb->starts ||
	    !jb->size || !jb->srv || !jb->acc || !jb->per_worker)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (keys)");
	train_keys_build(pb->owner, nc, k, jb->key_of, jb->col_of,
			 jb->starts);
	for (uint32_t i = 0; i < k; i++)
		jb->size[i] = (i + 1 < k ? jb->starts[i + 1] : nc) -
			      jb->starts[i];
	for (uint64_t key = 0; key < nc; key++) {
		uint32_t s = pb->owner[jb->col_of[key]];
		uint64_t off = key - jb->starts[s];

		jb->blk_of[key] = (uint32_t)(off * jb->B / jb->size[s]);
	}
	return 0;
}

/* Server of a key (keys < n_cols). */
static uint32_t key_server(const struct job *jb, uint64_t key)
{
	return jb->pb->owner[jb->col_of[key]];
}

/* ------------------------------------------------------------- servers */

/* PROX on server s for block b: the step for every key of the block that
 * received gradient, its GRAD cleared, W published (ESSP: a changed W is
 * pushed with the next snapshot). */
static int prox_block(struct ps_server *s, struct job *jb, struct srv *sv,
		      uint32_t b, struct parsa_err *err)
{
	uint64_t lo = blk_lo(sv->n, b, jb->B), hi = blk_lo(sv->n, b + 1, jb->B);

	for (uint64_t o = lo; o < hi; o++) {
		unsigned char *v;
		double gu[2], nw, pub, old;
		int rc = ps_server_value(s, TBL_GRAD, sv->lo + o, 0, &v, err);

		if (rc)
			return rc;
		if (!v)
			continue;
		memcpy(gu, v, sizeof(gu));
		memset(v, 0, sizeof(gu));
		nw = train_prox_step(sv->w[o], gu[0], gu[1], jb->o->lambda,
				     &sv->delta[o]);
		pub = nw;
		/* KKT: a zero weight whose gradient is well inside [-l, l]
		 * stays zero; published as -0.0 so workers skip it */
		if (nw == 0 &&
		    fabs(gu[0]) <= jb->o->lambda * (1 - TRAIN_KKT_DELTA))
			pub = -0.0;
		sv->w[o] = nw;
		rc = ps_server_value(s, TBL_W, sv->lo + o, 1, &v, err);
		if (rc)
			return rc;
		memcpy(&old, v, sizeof(old));
		if (memcmp(&old, &pub, sizeof(pub)) == 0)
			continue;
		memcpy(v, &pub, sizeof(pub));
		if (jb->essp &&
		    (rc = ps_server_mark_updated(s, TBL_W, sv->lo + o, err)))
			return rc;
	}
	return 0;
}

static int hook_prox(struct ps_server *s, const void *req, size_t len,
		     struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	struct job *jb = arg;
	struct srv *sv = jb->srv[ps_server_index(s)];
	uint32_t b;
	int64_t iter;

	(void)reply;
	if (len != 12)
		return parsa_fail(err, PARSA_EPARSE, "PROX: bad request");
	memcpy(&b, req, 4);
	memcpy(&iter, (const char *)req + 4, 8);
	if (b >= jb->B)
		return parsa_fail(err, PARSA_EPARSE, "PROX: bad block %u", b);
	if (iter <= sv->applied)
		return 0; /* another worker's call applied it already */
	sv->applied = iter;
	return prox_block(s, jb, sv, b, err);
}

/* SSP/ESSP: every worker completed iteration `clock`: its PROX. */
static int clock_prox(struct ps_server *s, int64_t clock, void *arg,
		      struct parsa_err *err)
{
	struct job *jb = arg;
	struct srv *sv = jb->srv[ps_server_index(s)];

	sv->applied = clock;
	return prox_block(s, jb, sv, (uint32_t)(clock % jb->B), err);
}

static int hook_stats(struct ps_server *s, const void *req, size_t len,
		      struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	struct job *jb = arg;
	struct srv *sv = jb->srv[ps_server_index(s)];
	struct stats_reply r = {0};
	struct ps_node_stats st;

	(void)req;
	(void)len;
	for (uint64_t o = 0; o < sv->n; o++) {
		r.l1 += fabs(sv->w[o]);
		r.nnz += sv->w[o] != 0;
	}
	ps_server_stats(s, &st);
	for (int i = 0; i < 2; i++) {
		r.bytes[i] = st.c.bytes_sent[i];
		r.msgs[i] = st.c.msgs_sent[i];
	}
	return ps_reply_append(reply, &r, sizeof(r), err);
}

/* Reply: (key uint64, weight double) for every non-zero weight. */
static int hook_model(struct ps_server *s, const void *req, size_t len,
		      struct ps_reply *reply, void *arg, struct parsa_err *err)
{
	struct job *jb = arg;
	struct srv *sv = jb->srv[ps_server_index(s)];
	int rc = 0;

	(void)req;
	(void)len;
	for (uint64_t o = 0; !rc && o < sv->n; o++) {
		unsigned char pair[16];
		uint64_t key = sv->lo + o;

		if (sv->w[o] == 0)
			continue;
		memcpy(pair, &key, 8);
		memcpy(pair + 8, &sv->w[o], 8);
		rc = ps_reply_append(reply, pair, sizeof(pair), err);
	}
	return rc;
}

static int server_init(struct ps_server *s, void *arg, struct parsa_err *err)
{
	struct job *jb = arg;
	uint32_t i = ps_server_index(s);
	struct srv *sv = calloc(1, sizeof(*sv));
	int rc;

	if (!sv)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (server)");
	jb->srv[i] = sv;
	sv->lo = jb->starts[i];
	sv->n = jb->size[i];
	sv->applied = -1;
	sv->w = calloc(sv->n + 1, sizeof(double));
	sv->delta = malloc((sv->n + 1) * sizeof(double));
	if (!sv->w || !sv->delta)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (server "
				  "%u: %llu keys)", i,
				  (unsigned long long)sv->n);
	for (uint64_t o = 0; o < sv->n; o++)
		sv->delta[o] = TRAIN_DELTA0;
	if (jb->clocked)
		ps_server_on_clock(s, clock_prox, jb);
	rc = ps_server_register_hook(s, HOOK_PROX, hook_prox, jb, err);
	if (!rc)
		rc = ps_server_register_hook(s, HOOK_STATS, hook_stats, jb, err);
	if (!rc)
		rc = ps_server_register_hook(s, HOOK_MODEL, hook_model, jb, err);
	return rc;
}

/* -------------------------------------------------------------- worker */

/* One iteration in flight: its block, push and pull buffers. */
struct slot {
	int64_t iter;
	uint32_t block;
	uint64_t push_ts;
	uint32_t n;     /* keys used: the block's, minus KKT-skipped ones */
	uint64_t *keys; /* n keys (sorted) */
	uint32_t *lid;  /* n local ids */
	double *gu;     /* 2 per key */
	double *wnew;   /* pulled weights */
	int pulled;     /* SSP: its pull is out (pull_ts) */
	uint64_t pull_ts;
};

/* Per row, what a gradient reads beside the entry: the loss derivatives
 * and omega (cnt), valid while stamp is the iteration's (one cache line
 * touched per entry instead of three, and no pass to clear omega). */
struct wrow {
	double d1, d2;
	uint32_t cnt, stamp;
};

/*
 * A worker's local data: rows U_i, local features N(U_i) in block order
 * (keys sorted within a block), column-major entries.
 * Invariants: bstart[0] == 0, bstart[B] == nl; cptr[nl] == nnz; crow[e]
 * < nr.
 */
struct wk {
	struct job *jb;
	struct ps_node *node;
	uint32_t index, machine;
	uint32_t nr, nl;
	int8_t *y;
	double *m;            /* nr: margins */
	struct wrow *row;     /* nr: derivatives and omega, by stamp */
	uint32_t stamp;       /* the current gradient's stamp (rows: 0) */
	uint64_t *keys;       /* nl, block order */
	uint32_t *bstart;     /* B + 1 */
	uint64_t *cptr;       /* nl + 1 */
	uint32_t *crow;
	double *cval;
	double *w;            /* nl: weights as last pulled */
	uint8_t *inactive;    /* nl: KKT flag as last pulled (-0.0) */
	struct slot *slots;   /* tau + 1 */
	uint32_t max_block;
	/* tau = 0: the same entries row-major per block (rows ascending, a
	 * row's entries by local id): block b's rows are rrow[rbs[b] ..
	 * rbs[b + 1]), row i's entries rptr[i] .. rptr[i + 1] in rlid/rval;
	 * gacc: 2 per key of the largest block */
	uint64_t *rbs, *rptr;
	uint32_t *rrow, *rlid;
	double *rval, *gacc;
	struct train_traffic t, t_total;
	double wait;          /* this pass */
	double wait_split[TRAIN_WAIT_KINDS]; /* the same by kind */
	struct ps_node_stats prev; /* wire counters at the last pass end */
	uint64_t tau_reads;   /* tau model: keys pulled (staleness tau) */
	uint64_t srv_prev_bytes[2], srv_prev_msgs[2];
};

static void wk_release(struct wk *w)
{
	free(w->y);
	free(w->m);
	free(w->row);
	free(w->keys);
	free(w->bstart);
	free(w->cptr);
	free(w->crow);
	free(w->cval);
	free(w->rbs);
	free(w->rptr);
	free(w->rrow);
	free(w->rlid);
	free(w->rval);
	free(w->gacc);
	free(w->w);
	free(w->inactive);
	if (w->slots) {
		for (uint32_t i = 0; i <= w->jb->tau; i++) {
			free(w->slots[i].gu);
			free(w->slots[i].wnew);
			free(w->slots[i].keys);
			free(w->slots[i].lid);
		}
	}
	free(w->slots);
}

/* Rows of this worker, their labels, and its local features (sorted
 * keys) into w->keys / lid (col -> local id, by the caller). */
static int wk_rows(struct wk *w, uint32_t *rows, struct parsa_err *err)
{
	const struct train_data *d = w->jb->pb->train;
	const uint32_t *part = w->jb->pb->part;
	uint32_t *trace = w->jb->o->trace_rows;

	for (uint32_t r = 0; r < d->n_rows; r++) {
		if (part[r] != w->index)
			continue;
		rows[w->nr++] = r;
		if (trace)
			trace[r] = w->index + 1;
	}
	w->y = malloc(((size_t)w->nr + 1));
	w->m = calloc((size_t)w->nr + 1, sizeof(double));
	w->row = calloc((size_t)w->nr + 1, sizeof(*w->row));
	if (!w->y || !w->m || !w->row)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	for (uint32_t q = 0; q < w->nr; q++)
		w->y[q] = d->y[rows[q]];
	return 0;
}

/* The local features: keys sorted, then bucketed by block (stable). */
static int wk_features(struct wk *w, const uint32_t *rows, uint32_t *lid,
		       struct parsa_err *err)
{
	const struct job *jb = w->jb;
	const struct train_data *d = jb->pb->train;
	uint64_t *sorted;
	uint32_t B = jb->B;

	for (uint32_t q = 0; q < w->nr; q++)
		for (uint64_t e = d->rowptr[rows[q]]; e < d->rowptr[rows[q] + 1];
		     e++)
			if (lid[d->col[e]] == UINT32_MAX)
				lid[d->col[e]] = w->nl++;
	sorted = malloc(((size_t)w->nl + 1) * sizeof(uint64_t));
	w->keys = malloc(((size_t)w->nl + 1) * sizeof(uint64_t));
	w->bstart = calloc((size_t)B + 1, sizeof(uint32_t));
	if (!sorted || !w->keys || !w->bstart) {
		free(sorted);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	}
	for (uint32_t q = 0, n = 0; q < w->nr; q++)
		for (uint64_t e = d->rowptr[rows[q]]; e < d->rowptr[rows[q] + 1];
		     e++)
			if (lid[d->col[e]] == n)
				sorted[n++] = jb->key_of[d->col[e]];
	qsort(sorted, w->nl, sizeof(uint64_t), base_cmp_u64);
	for (uint32_t l = 0; l < w->nl; l++)
		w->bstart[jb->blk_of[sorted[l]] + 1]++;
	for (uint32_t b = 0; b < B; b++) {
		uint32_t n = w->bstart[b + 1];

		w->bstart[b + 1] = w->bstart[b] + n;
		w->max_block = n > w->max_block ? n : w->max_block;
	}
	{
		uint32_t *fill = malloc(((size_t)B + 1) * sizeof(uint32_t));

		if (!fill) {
			free(sorted);
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		}
		memcpy(fill, w->bstart, (size_t)B * sizeof(uint32_t));
		for (uint32_t l = 0; l < w->nl; l++) {
			uint64_t key = sorted[l];

			w->keys[fill[jb->blk_of[key]]++] = key;
		}
		free(fill);
	}
	free(sorted);
	/* lid now follows the block order */
	for (uint32_t l = 0; l < w->nl; l++)
		lid[jb->col_of[w->keys[l]]] = l;
	return 0;
}

/* Column-major local entries from the rows (lid: col -> local id). */
static int wk_columns(struct wk *w, const uint32_t *rows,
		      const uint32_t *lid, struct parsa_err *err)
{
	const struct train_data *d = w->jb->pb->train;
	uint64_t nnz = 0, *fill;

	w->cptr = calloc((size_t)w->nl + 1, sizeof(uint64_t));
	if (!w->cptr)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	for (uint32_t q = 0; q < w->nr; q++)
		for (uint64_t e = d->rowptr[rows[q]]; e < d->rowptr[rows[q] + 1];
		     e++, nnz++)
			w->cptr[lid[d->col[e]] + 1]++;
	for (uint32_t l = 0; l < w->nl; l++)
		w->cptr[l + 1] += w->cptr[l];
	w->crow = malloc((size_t)(nnz + 1) * sizeof(uint32_t));
	w->cval = malloc((size_t)(nnz + 1) * sizeof(double));
	fill = malloc(((size_t)w->nl + 1) * sizeof(uint64_t));
	w->w = calloc((size_t)w->nl + 1, sizeof(double));
	w->inactive = calloc((size_t)w->nl + 1, 1);
	if (!w->crow || !w->cval || !fill || !w->w || !w->inactive) {
		free(fill);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	}
	memcpy(fill, w->cptr, (size_t)w->nl * sizeof(uint64_t));
	for (uint32_t q = 0; q < w->nr; q++) {
		for (uint64_t e = d->rowptr[rows[q]]; e < d->rowptr[rows[q] + 1];
		     e++) {
			uint64_t at = fill[lid[d->col[e]]]++;

			w->crow[at] = q;
			w->cval[at] = d->val[e];
		}
	}
	free(fill);
	return 0;
}

/* tau = 0: the row-major copy of each block's entries (struct wk). */
static int wk_rowmajor(struct wk *w, struct parsa_err *err)
{
	uint32_t B = w->jb->B, *cnt;
	uint64_t nnz = w->cptr[w->nl], pairs = 0, *at;

	cnt = calloc((size_t)w->nr + 1, sizeof(uint32_t));
	at = malloc(((size_t)w->nr + 1) * sizeof(uint64_t));
	w->rbs = calloc((size_t)B + 1, sizeof(uint64_t));
	w->rlid = malloc((size_t)(nnz + 1) * sizeof(uint32_t));
	w->rval = malloc((size_t)(nnz + 1) * sizeof(double));
	w->gacc = malloc(((size_t)w->max_block + 1) * 2 * sizeof(double));
	if (!cnt || !at || !w->rbs || !w->rlid || !w->rval || !w->gacc)
		goto oom;
	/* rows per block: first count, then fill */
	for (uint32_t b = 0; b < B; b++) {
		for (uint64_t e = w->cptr[w->bstart[b]];
		     e < w->cptr[w->bstart[b + 1]]; e++)
			cnt[w->crow[e]] = 1;
		for (uint32_t q = 0; q < w->nr; q++) {
			pairs += cnt[q];
			cnt[q] = 0;
		}
		w->rbs[b + 1] = pairs;
	}
	w->rrow = malloc((size_t)(pairs + 1) * sizeof(uint32_t));
	w->rptr = malloc((size_t)(pairs + 1) * sizeof(uint64_t));
	if (!w->rrow || !w->rptr)
		goto oom;
	w->rptr[0] = 0;
	for (uint32_t b = 0; b < B; b++) {
		uint64_t i = w->rbs[b], base = w->cptr[w->bstart[b]];

		for (uint64_t e = base; e < w->cptr[w->bstart[b + 1]]; e++)
			cnt[w->crow[e]]++;
		for (uint32_t q = 0; q < w->nr; q++) {
			if (!cnt[q])
				continue;
			w->rrow[i] = q;
			at[q] = base;
			base += cnt[q];
			w->rptr[++i] = base;
			cnt[q] = 0;
		}
		/* columns in id order: a row's entries come out by id */
		for (uint32_t l = w->bstart[b]; l < w->bstart[b + 1]; l++) {
			for (uint64_t e = w->cptr[l]; e < w->cptr[l + 1]; e++) {
				uint64_t to = at[w->crow[e]]++;

				w->rlid[to] = l;
				w->rval[to] = w->cval[e];
			}
		}
	}
	free(cnt);
	free(at);
	return 0;
oom:
	free(cnt);
	free(at);
	return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker rows)");
}

static int wk_slots(struct wk *w, struct parsa_err *err)
{
	uint32_t n = w->jb->tau + 1;

	w->slots = calloc(n, sizeof(*w->slots));
	if (!w->slots)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	for (uint32_t i = 0; i < n; i++) {
		w->slots[i].gu = malloc(((size_t)w->max_block + 1) * 16);
		w->slots[i].wnew = malloc(((size_t)w->max_block + 1) * 8);
		w->slots[i].keys = malloc(((size_t)w->max_block + 1) * 8);
		w->slots[i].lid = malloc(((size_t)w->max_block + 1) * 4);
		w->slots[i].iter = -1;
		if (!w->slots[i].gu || !w->slots[i].wnew || !w->slots[i].keys ||
		    !w->slots[i].lid)
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	return 0;
}

static int wk_init(struct wk *w, struct job *jb, struct ps_node *node,
		   struct parsa_err *err)
{
	uint32_t nc = jb->n_cols, n = jb->pb->train->n_rows;
	uint32_t *rows = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *lid = malloc(((size_t)nc + 1) * sizeof(uint32_t));
	int rc;

	memset(w, 0, sizeof(*w));
	w->jb = jb;
	w->node = node;
	w->index = ps_node_index(node);
	w->machine = ps_layout_machine(&jb->layout, ps_node_id(node));
	if (!rows || !lid) {
		free(rows);
		free(lid);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (worker)");
	}
	memset(lid, 0xff, ((size_t)nc + 1) * sizeof(uint32_t));
	rc = wk_rows(w, rows, err);
	if (!rc)
		rc = wk_features(w, rows, lid, err);
	if (!rc)
		rc = wk_columns(w, rows, lid, err);
	if (!rc)
		rc = wk_slots(w, err);
	if (!rc && jb->tau == 0)
		rc = wk_rowmajor(w, err);
	free(rows);
	free(lid);
	return rc;
}

/* Count a request for keys[0..n) (sorted): per server slice, one message
 * each way; key and value bytes per key as given. */
static void count(struct wk *w, const uint64_t *keys, uint32_t n,
		  uint32_t key_b, uint32_t val_b, int reply)
{
	const struct job *jb = w->jb;
	uint32_t i = 0;

	while (i < n) {
		uint32_t s = key_server(jb, keys[i]), j = i;
		uint32_t node = ps_layout_server_node(&jb->layout, s);
		int where = ps_layout_machine(&jb->layout, node) == w->machine
				    ? 0 : 1;

		while (j < n && key_server(jb, keys[j]) == s)
			j++;
		w->t.key_bytes[where] += (uint64_t)(j - i) * key_b;
		w->t.val_bytes[where] += (uint64_t)(j - i) * val_b;
		w->t.msgs[where] += reply ? 2 : 1;
		i = j;
	}
}

/* The keys of block b this iteration uses: all of them, or (KKT filter,
 * outside the full passes) those not flagged inactive. */
static void wk_select(struct wk *w, uint32_t b, int filter, struct slot *sl)
{
	sl->n = 0;
	for (uint32_t l = w->bstart[b]; l < w->bstart[b + 1]; l++) {
		if (filter && w->inactive[l])
			continue;
		sl->keys[sl->n] = w->keys[l];
		sl->lid[sl->n++] = l;
	}
}

/* omega[q] += 1 for each active key of block b that row q uses, for the
 * rows stamped by this gradient (the others are not read). */
static void wk_omega_block(struct wk *w, uint32_t b)
{
	struct wrow *row = w->row;

	for (uint32_t l = w->bstart[b]; l < w->bstart[b + 1]; l++) {
		if (w->inactive[l])
			continue;
		for (uint64_t e = w->cptr[l]; e < w->cptr[l + 1]; e++) {
			struct wrow *r = &row[w->crow[e]];

			r->cnt += r->stamp == w->stamp;
		}
	}
}

/*
 * tau = 0, row-major: per row of block b, omega (1 + its active keys of
 * the block) and the derivatives, then its entries' shares of g and u
 * into gacc.  Rows ascend, so every key sums its entries in the order
 * of the column sweep (wk_gradient): the same g and u to the bit.
 */
static void wk_gradient_rows(struct wk *w, struct slot *sl)
{
	uint32_t b = sl->block, base = w->bstart[b];
	double *acc = w->gacc;

	memset(acc, 0, (size_t)(w->bstart[b + 1] - base) * 2 * sizeof(double));
	for (uint64_t i = w->rbs[b]; i < w->rbs[b + 1]; i++) {
		uint32_t q = w->rrow[i], cnt = 1;
		double d1, d2;

		for (uint64_t e = w->rptr[i]; e < w->rptr[i + 1]; e++)
			cnt += w->inactive[w->rlid[e]] ? 0 : 1;
		train_loss_derivs(w->m[q], w->y[q], &d1, &d2);
		for (uint64_t e = w->rptr[i]; e < w->rptr[i + 1]; e++) {
			uint32_t l = w->rlid[e];
			uint32_t self = w->inactive[l] ? 0 : 1;
			double x = w->rval[e], *a = &acc[2 * (l - base)];

			a[0] += x * d1;
			a[1] += x * x * d2 * (cnt - self);
		}
	}
	for (uint32_t i = 0; i < sl->n; i++) {
		sl->gu[2 * i] = acc[2 * (sl->lid[i] - base)];
		sl->gu[2 * i + 1] = acc[2 * (sl->lid[i] - base) + 1];
	}
}

/*
 * g and u of the slot's keys into slot->gu (2 per key).  With a delay
 * tau, the blocks b - tau .. b + tau of this pass are computed before
 * each other's updates reach the margins, so they move together: their
 * active keys all count in omega (tau = 0: block b only).
 *
 * omega[q] = 1 + the active keys of those blocks in row q.  The slot's
 * keys (block b: all of its keys, or its active ones) stamp their rows,
 * compute the derivatives once per row and count block b's active keys
 * in the same sweep; the other blocks count into stamped rows only.
 */
static void wk_gradient(struct wk *w, struct slot *sl)
{
	uint32_t b = sl->block, tau = w->jb->tau, B = w->jb->B;
	uint32_t lo = b > tau ? b - tau : 0;
	uint32_t hi = b + tau < B ? b + tau : B - 1;
	struct wrow *row = w->row;
	uint32_t stamp;

	if (w->rbs) {
		wk_gradient_rows(w, sl);
		return;
	}
	if (++w->stamp == 0) { /* wrapped: no row may hold a live stamp */
		for (uint32_t q = 0; q < w->nr; q++)
			row[q].stamp = 0;
		w->stamp = 1;
	}
	stamp = w->stamp;
	for (uint32_t i = 0; i < sl->n; i++) {
		uint32_t l = sl->lid[i], act = w->inactive[l] ? 0 : 1;

		for (uint64_t e = w->cptr[l]; e < w->cptr[l + 1]; e++) {
			uint32_t q = w->crow[e];
			struct wrow *r = &row[q];

			if (r->stamp != stamp) {
				r->stamp = stamp;
				r->cnt = 1;
				train_loss_derivs(w->m[q], w->y[q], &r->d1,
						  &r->d2);
			}
			r->cnt += act;
		}
	}
	for (uint32_t bb = lo; bb <= hi; bb++)
		if (bb != b)
			wk_omega_block(w, bb);
	for (uint32_t i = 0; i < sl->n; i++) {
		uint32_t l = sl->lid[i];
		/* omega - 1 active keys besides j, plus j itself */
		uint32_t self = w->inactive[l] ? 0 : 1;
		double g = 0, u = 0;

		for (uint64_t e = w->cptr[l]; e < w->cptr[l + 1]; e++) {
			const struct wrow *r = &row[w->crow[e]];
			double x = w->cval[e];

			g += x * r->d1;
			u += x * x * r->d2 * (r->cnt - self);
		}
		sl->gu[2 * i] = g;
		sl->gu[2 * i + 1] = u;
	}
}

/* A new weight of local key l: margins move by the change; the KKT flag
 * (-0.0) is taken as published. */
static void wk_apply(struct wk *w, uint32_t l, double wnew)
{
	double dw = wnew - w->w[l];

	w->inactive[l] = wnew == 0 && signbit(wnew);
	if (dw == 0)
		return;
	w->w[l] = wnew;
	for (uint64_t e = w->cptr[l]; e < w->cptr[l + 1]; e++)
		w->m[w->crow[e]] += dw * w->cval[e];
}

/* Local id of key, or -1 if this worker does not use it. */
static int64_t wk_lid(const struct wk *w, uint64_t key)
{
	uint32_t b, lo, hi;

	if (key >= w->jb->n_cols)
		return -1;
	b = w->jb->blk_of[key];
	lo = w->bstart[b];
	hi = w->bstart[b + 1];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (w->keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->bstart[b + 1] && w->keys[lo] == key ? (int64_t)lo : -1;
}

/* Time blocking calls into w->wait and its kind's share: t0 =
 * ps_clock_now(); rc = tock(w, TRAIN_WAIT_X, t0, call()). */
static int tock(struct wk *w, int kind, double t0, int rc)
{
	double d = ps_clock_now() - t0;

	w->wait += d;
	w->wait_split[kind] += d;
	return rc;
}

/* Iteration sl->iter: wait for its push, barrier, PROX, pull, margins. */
static int wk_finish(struct wk *w, struct slot *sl, struct parsa_err *err)
{
	uint32_t b = sl->block, n = sl->n;
	unsigned char req[12];
	uint64_t ts;
	double t0;
	int rc;

	memcpy(req, &b, 4);
	memcpy(req + 4, &sl->iter, 8);
	t0 = ps_clock_now();
	rc = tock(w, TRAIN_WAIT_PUSH, t0, ps_wait(w->node, sl->push_ts, err));
	t0 = ps_clock_now();
	if (!rc)
		rc = tock(w, TRAIN_WAIT_BARRIER, t0, ps_barrier(w->node, err));
	t0 = ps_clock_now();
	if (!rc)
		rc = tock(w, TRAIN_WAIT_PROX, t0,
				  ps_call_hook(w->node, PS_ALL, HOOK_PROX, req,
					       sizeof(req), NULL, NULL, err));
	if (!rc)
		rc = ps_pull(w->node, TBL_W, sl->keys, n, sl->wnew, &ts, err);
	t0 = ps_clock_now();
	if (!rc)
		rc = tock(w, TRAIN_WAIT_PULL, t0, ps_wait(w->node, ts, err));
	if (rc)
		return rc;
	count(w, sl->keys, n, 8, 8, 1);
	w->tau_reads += n;
	for (uint32_t i = 0; i < n; i++)
		wk_apply(w, sl->lid[i], sl->wnew[i]);
	sl->iter = -1;
	return 0;
}

/* Iteration t on block b: gradient, push; finish iteration t - tau.
 * filter: skip the keys the last pull flagged inactive (KKT). */
static int wk_iterate(struct wk *w, int64_t t, uint32_t b, int filter,
		      struct parsa_err *err)
{
	uint32_t ns = w->jb->tau + 1;
	struct slot *sl = &w->slots[t % ns];
	double t0 = ps_clock_now();
	int rc = tock(w, TRAIN_WAIT_WINDOW, t0,
			  ps_iter_begin(w->node, NULL, err));

	if (!rc && sl->iter >= 0)
		rc = wk_finish(w, sl, err);
	if (rc)
		return rc;
	wk_select(w, b, filter, sl);
	sl->block = b;
	wk_gradient(w, sl);
	sl->iter = t;
	rc = ps_push(w->node, TBL_GRAD, sl->keys, sl->n, sl->gu, &sl->push_ts,
		     err);
	if (!rc)
		count(w, sl->keys, sl->n, 8, 16, 0);
	return rc;
}

/* ---- SSP / ESSP ---- */

/* SSP: send the pull of the slot's keys, for use at clock `use`. */
static int wk_pull(struct wk *w, struct slot *sl, int64_t use,
		   struct parsa_err *err)
{
	int rc = ps_pull_for(w->node, TBL_W, sl->keys, sl->n, sl->wnew, use,
			     &sl->pull_ts, err);

	if (!rc) {
		sl->pulled = 1;
		count(w, sl->keys, sl->n, 8, 8, 1);
	}
	return rc;
}

/* SSP: wait for the slot's pull and move the margins. */
static int wk_take(struct wk *w, struct slot *sl, struct parsa_err *err)
{
	double t0 = ps_clock_now();
	int rc = tock(w, TRAIN_WAIT_PULL, t0,
			  ps_wait(w->node, sl->pull_ts, err));

	if (rc)
		return rc;
	for (uint32_t i = 0; i < sl->n; i++)
		wk_apply(w, sl->lid[i], sl->wnew[i]);
	sl->pulled = 0;
	sl->iter = -1;
	return 0;
}

/* ESSP: weights a server pushed (changed since its last snapshot). */
static int wk_on_eager(void *arg, uint32_t table, const uint64_t *keys,
		       const void *vals, size_t n, int64_t clock,
		       struct parsa_err *err)
{
	struct wk *w = arg;
	const unsigned char *v = vals;

	(void)clock;
	if (table != TBL_W)
		return parsa_fail(err, PARSA_EPARSE, "eager push of table %u",
				  table);
	for (size_t i = 0; i < n; i++) {
		int64_t l = wk_lid(w, keys[i]);
		double x;

		if (l < 0)
			return parsa_fail(err, PARSA_EPARSE, "eager push of key "
					  "%llu, which worker %u does not use",
					  (unsigned long long)keys[i],
					  w->index);
		memcpy(&x, v + i * 8, 8);
		wk_apply(w, (uint32_t)l, x);
	}
	return 0;
}

/* ESSP: subscribe to every own key (one pull at the start; the weights
 * are still zero: no server can pass clock 0 before this worker). */
static int wk_subscribe(struct wk *w, struct parsa_err *err)
{
	uint64_t *keys = malloc(((size_t)w->nl + 1) * sizeof(uint64_t)), ts;
	double *vals = malloc(((size_t)w->nl + 1) * sizeof(double)), t0;
	int rc;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	memcpy(keys, w->keys, (size_t)w->nl * sizeof(uint64_t));
	qsort(keys, w->nl, sizeof(uint64_t), base_cmp_u64);
	ps_set_eager_handler(w->node, wk_on_eager, w);
	rc = ps_pull(w->node, TBL_W, keys, w->nl, vals, &ts, err);
	t0 = ps_clock_now();
	if (!rc)
		rc = tock(w, TRAIN_WAIT_PULL, t0, ps_wait(w->node, ts, err));
	if (!rc)
		count(w, keys, w->nl, 8, 8, 1);
	for (uint32_t i = 0; !rc && i < w->nl; i++)
		wk_apply(w, (uint32_t)wk_lid(w, keys[i]), vals[i]);
	free(keys);
	free(vals);
	return rc;
}

/*
 * Clock t on block b.  The margins must hold every update of iterations <
 * t - S: SSP takes the pull of iteration t - S - 1 (sent a clock early
 * when S >= 1) and sends the one of t - S for clock t + 1; ESSP waits for
 * the servers' snapshot t - S (their pushes are applied on arrival).  Then
 * gradient, push, clock.
 */
static int wk_iterate_clocked(struct wk *w, int64_t t, uint32_t b,
			      int filter, struct parsa_err *err)
{
	int64_t S = w->jb->tau, ns = S + 1;
	struct slot *sl = &w->slots[t % ns];
	double t0 = ps_clock_now();
	int rc = 0;

	if (w->jb->essp) {
		rc = tock(w, TRAIN_WAIT_PULL, t0,
			  ps_eager_wait(w->node, t - S, err));
	} else {
		if (sl->iter >= 0 && !sl->pulled)
			rc = wk_pull(w, sl, t, err);
		if (!rc && sl->iter >= 0)
			rc = wk_take(w, sl, err);
		if (!rc && S >= 1 && t - S >= 0) {
			struct slot *nx = &w->slots[(t - S) % ns];

			if (nx->iter == t - S && !nx->pulled)
				rc = wk_pull(w, nx, t + 1, err);
		}
	}
	if (rc)
		return rc;
	wk_select(w, b, filter, sl);
	sl->block = b;
	wk_gradient(w, sl);
	sl->iter = t;
	rc = ps_push(w->node, TBL_GRAD, sl->keys, sl->n, sl->gu, &sl->push_ts,
		     err);
	if (!rc)
		count(w, sl->keys, sl->n, 8, 16, 0);
	if (!rc)
		rc = ps_clock(w->node, err);
	return rc;
}

/* Pass end (clock next): every update of the pass in the margins. */
static int wk_drain_clocked(struct wk *w, int64_t next, struct parsa_err *err)
{
	int64_t S = w->jb->tau, ns = S + 1;
	double t0 = ps_clock_now();
	int rc = 0;

	if (w->jb->essp)
		return tock(w, TRAIN_WAIT_PULL, t0,
			    ps_eager_wait(w->node, next, err));
	for (int64_t t = next - ns; !rc && t < next; t++) {
		struct slot *sl = t >= 0 ? &w->slots[t % ns] : NULL;

		if (sl && sl->iter == t && !sl->pulled)
			rc = wk_pull(w, sl, t + 1 + S, err);
	}
	for (int64_t t = next - ns; !rc && t < next; t++) {
		struct slot *sl = t >= 0 ? &w->slots[t % ns] : NULL;

		if (sl && sl->iter == t)
			rc = wk_take(w, sl, err);
	}
	return rc;
}

/* Finish every open iteration, oldest first. */
static int wk_drain(struct wk *w, int64_t next, struct parsa_err *err)
{
	uint32_t ns = w->jb->tau + 1;
	int rc = 0;

	for (int64_t t = next - ns; !rc && t < next; t++) {
		struct slot *sl;

		if (t < 0)
			continue;
		sl = &w->slots[t % ns];
		if (sl->iter == t)
			rc = wk_finish(w, sl, err);
	}
	return rc;
}

/* Worker 0 at a pass end: l1, nnz, servers' counters; the model when
 * needed (test AUC, or the last pass). */
struct model_ctx {
	struct job *jb;
	struct stats_reply sum;
};

static int on_stats(void *arg, uint32_t server, const void *resp, size_t len,
		    struct parsa_err *err)
{
	struct model_ctx *mc = arg;
	struct stats_reply r;

	if (len != sizeof(r))
		return parsa_fail(err, PARSA_EPARSE, "STATS reply of server "
				  "%u: %zu bytes", server, len);
	memcpy(&r, resp, sizeof(r));
	mc->sum.l1 += r.l1;
	mc->sum.nnz += r.nnz;
	for (int i = 0; i < 2; i++) {
		mc->sum.bytes[i] += r.bytes[i];
		mc->sum.msgs[i] += r.msgs[i];
	}
	return 0;
}

static int on_model(void *arg, uint32_t server, const void *resp, size_t len,
		    struct parsa_err *err)
{
	struct model_ctx *mc = arg;
	const unsigned char *p = resp;

	if (len % 16)
		return parsa_fail(err, PARSA_EPARSE, "MODEL reply of server "
				  "%u: %zu bytes", server, len);
	for (size_t i = 0; i < len; i += 16) {
		uint64_t key;
		double v;

		memcpy(&key, p + i, 8);
		memcpy(&v, p + i + 8, 8);
		if (key >= mc->jb->n_cols)
			return parsa_fail(err, PARSA_EPARSE, "MODEL reply: key "
					  "%llu", (unsigned long long)key);
		mc->jb->model[mc->jb->col_of[key]] = v;
	}
	return 0;
}

static double test_auc(const struct job *jb)
{
	const struct train_data *t = jb->pb->test;
	double *score = malloc(((size_t)t->n_rows + 1) * sizeof(double)), a;

	if (!score)
		return NAN;
	for (uint32_t r = 0; r < t->n_rows; r++) {
		double s = 0;

		for (uint64_t e = t->rowptr[r]; e < t->rowptr[r + 1]; e++)
			s += jb->model[t->col[e]] * t->val[e];
		score[r] = s;
	}
	a = train_auc(score, t->y, t->n_rows);
	free(score);
	return a;
}

static int wk_evaluate(struct wk *w, uint32_t pass, struct rec *r,
		       struct parsa_err *err)
{
	struct job *jb = w->jb;
	struct model_ctx mc = {jb, {0}};
	int rc;

	rc = ps_call_hook(w->node, PS_ALL, HOOK_STATS, NULL, 0, on_stats, &mc,
			  err);
	if (rc)
		return rc;
	r->l1 = mc.sum.l1;
	r->nnz = mc.sum.nnz;
	for (int i = 0; i < 2; i++) {
		r->srv_bytes[i] = mc.sum.bytes[i] - w->srv_prev_bytes[i];
		r->srv_msgs[i] = mc.sum.msgs[i] - w->srv_prev_msgs[i];
		w->srv_prev_bytes[i] = mc.sum.bytes[i];
		w->srv_prev_msgs[i] = mc.sum.msgs[i];
	}
	r->auc = NAN;
	if (!jb->pb->test && pass + 1 < jb->o->passes)
		return 0;
	if (!jb->model)
		jb->model = calloc((size_t)jb->n_cols + 1, sizeof(double));
	if (!jb->model)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (model)");
	memset(jb->model, 0, (size_t)jb->n_cols * sizeof(double));
	rc = ps_call_hook(w->node, PS_ALL, HOOK_MODEL, NULL, 0, on_model, &mc,
			  err);
	if (!rc && jb->pb->test)
		r->auc = test_auc(jb);
	return rc;
}

/* The pass record: logloss of own rows, traffic, wire counters. */
static int wk_report(struct wk *w, uint32_t pass, double secs,
		     struct parsa_err *err)
{
	struct rec r = {0};
	struct ps_node_stats st;
	int rc = 0;

	r.magic = REC_MAGIC;
	r.worker = w->index;
	r.pass = pass;
	for (uint32_t q = 0; q < w->nr; q++)
		r.logloss += train_logloss(w->m[q], w->y[q]);
	r.seconds = secs;
	r.wait = w->wait;
	memcpy(r.wait_split, w->wait_split, sizeof(r.wait_split));
	r.rows_nnz = w->cptr[w->nl];
	r.rank = w->jb->rank;
	r.parsed = w->jb->pb->train->n_parsed;
	r.t = w->t;
	ps_node_stats(w->node, &st);
	for (int i = 0; i < 2; i++) {
		r.wire_bytes[i] = st.c.bytes_sent[i] - w->prev.c.bytes_sent[i];
		r.wire_msgs[i] = st.c.msgs_sent[i] - w->prev.c.msgs_sent[i];
		r.eager_bytes[i] = st.eager_bytes[i] - w->prev.eager_bytes[i];
	}
	for (int b = 0; b < PS_STALE_BUCKETS; b++)
		r.read_hist[b] = st.read_hist[b] - w->prev.read_hist[b];
	/* tau model: every pull is read tau iterations later */
	r.read_hist[w->jb->tau < PS_STALE_BUCKETS ? w->jb->tau
						  : PS_STALE_BUCKETS - 1] +=
		w->tau_reads;
	w->tau_reads = 0;
	w->prev = st;
	if (w->index == 0)
		rc = wk_evaluate(w, pass, &r, err);
	if (!rc)
		rc = ps_report_progress(w->node, &r, sizeof(r), err);
	return rc;
}

static int worker_task(struct ps_node *node, uint64_t task_id,
		       const void *payload, size_t len, void *arg,
		       struct parsa_err *err)
{
	struct job *jb = arg;
	struct wk w;
	uint32_t magic = 0;
	int64_t t = 0;
	int rc;

	(void)task_id;
	if (len == sizeof(magic))
		memcpy(&magic, payload, sizeof(magic));
	if (magic != TASK_MAGIC)
		return parsa_fail(err, PARSA_EPARSE, "bad trainer task");
	rc = wk_init(&w, jb, node, err);
	if (!rc && jb->essp)
		rc = wk_subscribe(&w, err);
	/* every worker set up before the first pass's clock starts: the
	 * slowest one's set-up is loading, not the first pass */
	if (!rc)
		rc = ps_barrier(w.node, err);
	for (uint32_t p = 0; !rc && p < jb->o->passes; p++) {
		double t0 = ps_clock_now();
		/* KKT: every TRAIN_KKT_PERIOD-th pass (and the first) is full */
		int filter = jb->o->kkt && p % TRAIN_KKT_PERIOD != 0;

		memset(&w.t, 0, sizeof(w.t));
		w.wait = 0;
		memset(w.wait_split, 0, sizeof(w.wait_split));
		for (uint32_t b = 0; !rc && b < jb->B; b++, t++)
			rc = jb->clocked ? wk_iterate_clocked(&w, t, b, filter,
							      err)
					 : wk_iterate(&w, t, b, filter, err);
		if (!rc)
			rc = jb->clocked ? wk_drain_clocked(&w, t, err)
					 : wk_drain(&w, t, err);
		if (!rc)
			rc = wk_report(&w, p, ps_clock_now() - t0, err);
	}
	wk_release(&w);
	return rc;
}

/* ----------------------------------------------------------- scheduler */

static void add_traffic(struct train_traffic *a, const struct train_traffic *b)
{
	for (int i = 0; i < 2; i++) {
		a->key_bytes[i] += b->key_bytes[i];
		a->val_bytes[i] += b->val_bytes[i];
		a->msgs[i] += b->msgs[i];
	}
}

static void pass_done(struct job *jb, struct pass_acc *a)
{
	a->p.objective = a->p.logloss + jb->o->lambda * a->p.l1;
	a->p.delay = (int)jb->tau;
	a->p.wait_seconds = a->wait_sum / jb->k;
	for (int i = 0; i < TRAIN_WAIT_KINDS; i++)
		a->p.wait_split[i] = a->wait_split[i] / jb->k;
	jb->total_s += a->p.seconds;
	a->p.total_seconds = jb->total_s;
	jb->last = a->p;
	if (jb->o->on_pass)
		jb->o->on_pass(jb->o->arg, &a->p);
}

static void on_rec(void *arg, uint32_t worker, const void *rec, size_t len)
{
	struct job *jb = arg;
	struct pass_acc *a;
	struct rec r;

	if (len != sizeof(r)) {
		if (!jb->rec_rc)
			jb->rec_rc = parsa_fail(&jb->rec_err, PARSA_EPARSE,
						"bad record from worker %u",
						worker);
		return;
	}
	memcpy(&r, rec, sizeof(r));
	if (r.magic != REC_MAGIC || r.worker != worker || worker >= jb->k ||
	    r.pass >= jb->o->passes) {
		if (!jb->rec_rc)
			jb->rec_rc = parsa_fail(&jb->rec_err, PARSA_EPARSE,
						"bad record from worker %u",
						worker);
		return;
	}
	a = &jb->acc[r.pass];
	a->p.pass = r.pass + 1;
	a->p.logloss += r.logloss;
	a->p.seconds = r.seconds > a->p.seconds ? r.seconds : a->p.seconds;
	a->wait_sum += r.wait;
	for (int i = 0; i < TRAIN_WAIT_KINDS; i++)
		a->wait_split[i] += r.wait_split[i];
	add_traffic(&a->p.t, &r.t);
	add_traffic(&jb->per_worker[worker], &r.t);
	for (int b = 0; b < PS_STALE_BUCKETS; b++)
		a->p.read_hist[b] += r.read_hist[b];
	for (int i = 0; i < 2; i++)
		a->p.eager_bytes[i] += r.eager_bytes[i];
	for (int i = 0; i < 2; i++) {
		a->p.wire_bytes[i] += r.wire_bytes[i];
		a->p.wire_msgs[i] += r.wire_msgs[i];
	}
	if (r.pass == 0) {
		jb->nnz += r.rows_nnz;
		if (r.rank < jb->nranks)
			jb->parsed[r.rank] = r.parsed;
	}
	if (worker == 0) {
		a->p.l1 = r.l1;
		a->p.nnz_w = r.nnz;
		a->p.auc = r.auc;
		for (int i = 0; i < 2; i++) {
			a->p.wire_bytes[i] += r.srv_bytes[i];
			a->p.wire_msgs[i] += r.srv_msgs[i];
		}
	}
	if (++a->count == jb->k)
		pass_done(jb, a);
}

static int sched_main(struct ps_node *s, void *arg, struct parsa_err *err)
{
	struct job *jb = arg;
	uint32_t magic = TASK_MAGIC;
	int rc;

	rc = ps_sched_start_task(s, PS_ALL, &magic, sizeof(magic), NULL, err);
	if (!rc)
		rc = ps_sched_wait_tasks(s, on_rec, jb, err);
	if (!rc && jb->rec_rc)
		rc = parsa_fail(err, jb->rec_rc, "%s", jb->rec_err.msg);
	for (uint32_t p = 0; !rc && p < jb->o->passes; p++)
		if (jb->acc[p].count != jb->k)
			rc = parsa_fail(err, PARSA_ESTATE, "pass %u: records of "
					"%u of %u workers", p + 1,
					jb->acc[p].count, jb->k);
	return rc;
}

/* ----------------------------------------------------------------- run */

static int check_problem(const struct train_problem *pb,
			 const struct train_opts *o, struct parsa_err *err)
{
	const struct train_data *d = pb->train;

	if (pb->k < 1)
		return parsa_fail(err, PARSA_EINVAL, "need k >= 1 machines");
	if (d->n_rows == 0 || d->n_cols == 0)
		return parsa_fail(err, PARSA_EINVAL, "empty training set");
	if (o->passes < 1 || !(o->lambda >= 0) || o->tau < 0 ||
	    o->blocks < 1 || (o->cons.model != PS_CONS_TAU &&
			      o->cons.model != PS_CONS_SSP &&
			      o->cons.model != PS_CONS_ESSP) ||
	    (o->cons.model != PS_CONS_TAU && o->cons.bound < 0))
		return parsa_fail(err, PARSA_EINVAL, "bad options (passes "
				  ">= 1, lambda >= 0, tau >= 0, blocks >= 1)");
	for (uint32_t r = 0; r < d->n_rows; r++)
		if (pb->part[r] >= pb->k)
			return parsa_fail(err, PARSA_EINVAL, "example %u on "
					  "worker %u of %u", r, pb->part[r],
					  pb->k);
	for (uint32_t j = 0; j < d->n_cols; j++)
		if (pb->owner[j] >= pb->k)
			return parsa_fail(err, PARSA_EINVAL, "feature %u on "
					  "server %u of %u", j, pb->owner[j],
					  pb->k);
	return 0;
}

static struct ps_transport *make_transport(const struct train_opts *o,
					   uint32_t k, struct parsa_err *err)
{
	struct ps_layout l = {k, k, k};
	struct ps_transport *tp;

	if (o->mpi) {
		l.num_machines = 0;
		tp = ps_transport_mpi_create(&l, o->timeout_s, err);
	} else {
		tp = ps_transport_threads_create(&l, err);
	}
	if (tp && o->have_link)
		tp = ps_link_create(tp, &o->link, err);
	return tp;
}

static void fill_result(struct job *jb, struct ps_transport *tp,
			struct train_result *res)
{
	res->is_root = tp->rank == 0;
	res->rank = (int)tp->rank;
	res->nranks = (int)tp->nranks;
	res->transport = jb->o->mpi ? "mpi" : "threads";
	ps_link_get_stats(tp, &res->link);
	if (!res->is_root)
		return;
	res->last = jb->last;
	res->w = jb->model;
	jb->model = NULL;
	res->per_worker = jb->per_worker;
	jb->per_worker = NULL;
	res->nnz = jb->nnz;
	res->parsed = jb->parsed;
	jb->parsed = NULL;
}

/* A failed train_opts.load, reported by every node of this process. */
static int load_failed(struct job *jb, struct parsa_err *err)
{
	return parsa_fail(err, jb->load_rc, "%s", jb->load_err.msg[0] ?
			  jb->load_err.msg : parsa_strerror(jb->load_rc));
}

static int fail_server_init(struct ps_server *s, void *arg,
			    struct parsa_err *err)
{
	(void)s;
	return load_failed(arg, err);
}

static int fail_worker_main(struct ps_node *w, void *arg,
			    struct parsa_err *err)
{
	(void)w;
	return load_failed(arg, err);
}

/* Whether this process hosts a server or a worker. */
static int hosts_node(const struct job *jb)
{
	return jb->k > jb->rank;
}

static int run_on(struct job *jb, struct ps_transport *tp,
		  struct train_result *res, struct parsa_err *err)
{
	struct ps_config cfg = {0};
	struct ps_app app = {0};
	int rc;

	jb->layout = tp->layout;
	jb->rank = tp->rank;
	jb->nranks = tp->nranks;
	jb->parsed = calloc((size_t)tp->nranks + 1, sizeof(uint32_t));
	if (!jb->parsed)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	if (jb->o->load)
		jb->load_rc = jb->o->load(jb->o->load_arg, tp->rank,
					  tp->nranks, &jb->load_err);
	if (jb->load_rc && !hosts_node(jb))
		return load_failed(jb, err);
	cfg.num_servers = jb->k;
	cfg.num_workers = jb->k;
	cfg.num_machines = tp->layout.num_machines;
	cfg.num_tables = NUM_TABLES;
	cfg.tables[TBL_GRAD] = (struct ps_table_spec){16, PS_OP_ADD_F64};
	cfg.tables[TBL_W] = (struct ps_table_spec){8, PS_OP_OVERWRITE,
						   jb->essp};
	cfg.range_starts = jb->starts;
	cfg.tau = (int)jb->tau;
	if (jb->clocked) {
		cfg.consistency = jb->o->cons.model;
		cfg.staleness = (int)jb->tau;
	}
	cfg.timeout_s = jb->o->timeout_s;
	app.server_init = jb->load_rc ? fail_server_init : server_init;
	app.worker_main = jb->load_rc ? fail_worker_main : NULL;
	app.task = worker_task;
	app.sched_main = sched_main;
	app.arg = jb;
	rc = ps_run(tp, &cfg, &app, NULL, err);
	if (!rc)
		fill_result(jb, tp, res);
	return rc;
}

int train_run(const struct train_problem *pb, const struct train_opts *o,
	      struct train_result *res, struct parsa_err *err)
{
	struct parsa_err local = {0};
	struct ps_transport *tp = NULL;
	struct job jb;
	int rc;

	err = err ? err : &local;
	memset(res, 0, sizeof(*res));
	memset(&jb, 0, sizeof(jb));
	rc = check_problem(pb, o, err);
	if (!rc)
		rc = job_init(&jb, pb, o, err);
	if (!rc) {
		tp = make_transport(o, pb->k, err);
		rc = tp ? 0 : (err->code ? err->code : PARSA_EMPI);
	}
	if (!rc)
		rc = run_on(&jb, tp, res, err);
	if (tp) {
		res->rank = (int)tp->rank;
		res->nranks = (int)tp->nranks;
	}
	ps_transport_destroy(tp);
	job_release(&jb);
	return rc;
}
