/*
 * part_lanes: Algorithm 13 in deterministic rounds of lanes on threads
 * (see part_lanes.h).
 *
 * A round: the caps of its lanes from the room left (main thread), the
 * lanes on part_pool (each extracts its block into a thread's scratch,
 * gathers its slice from the frozen S, and runs parsa_partu_block with its
 * own balance), then the merge in lane order (main thread).  Nothing a
 * lane computes depends on which thread ran it or when.
 *
 * Memory: the random permutation of U lives in part itself (block j's
 * positions start[j] .. start[j+1]): a lane reads its rows from there
 * into its thread's block and writes its rows' partitions back in their
 * place, so after the last round part holds the partitions in permutation
 * order, and the permutation, drawn again from the seed once the lanes'
 * memory is freed, puts them in row order.  A thread's block (its CSR,
 * features, rows) and a lane's features and slice are kept from round to
 * round and only grow, so the rounds allocate next to nothing: freeing
 * and allocating a few MB per lane and round left a third of the heap in
 * free fragments (measured at 100M nonzeros).
 */
#include "part_lanes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base_prefetch.h"
#include "part_pool.h"

/* A thread's scratch: the feature marks (all zero between uses), the block
 * being solved and Algorithm 13's context.  Taken from a free list for one
 * lane. */
struct scratch {
	struct parsa_featmarks fm;
	struct parsa_block blk;
	struct parsa_partu_ctx *ctx;
};

/* One lane: its block's features (global ids, swapped with the scratch
 * block's array once solved) and slice, its balance, kept to the merge;
 * the block's rows' partitions are in part. */
struct lane {
	uint32_t j;                /* block index */
	uint32_t *feat;            /* slice.n_feat features */
	uint64_t feat_cap;
	uint64_t bits_cap;         /* mask words slice.bits holds */
	struct parsa_nbrset slice;
	struct parsa_balance bal;
	struct parsa_partu_stats st;
	double cpu;                /* thread CPU seconds of the lane */
};

struct lanes_run {
	const struct parsa_graph *g;
	const struct parsa_partu_opts *o;
	struct parsa_nbrset *S;    /* frozen while lanes run */
	uint32_t b, L, T;          /* blocks, lanes, threads */
	uint32_t *perm, *start;    /* the random split (perm = part) */
	uint32_t max_rows;
	uint64_t cap;              /* global cap per partition */
	uint64_t *count;           /* k: examples placed so far */
	uint64_t rr;               /* round-robin cursor */
	uint64_t *caps;            /* L * k: this round's lane caps */
	uint64_t *nw, *avail, *spare;
	struct lane *lane;         /* L */
	uint32_t n_lanes;          /* lanes in this round */
	struct scratch *sc;        /* min(T, L) */
	uint32_t n_sc, *free_sc, n_free;
	pthread_mutex_t mu;        /* guards free_sc / n_free */
	double *slot;              /* T: the span's schedule of a round */
	uint64_t *size_add;        /* T * k: the merge tasks' new bits per
				      part */
	uint64_t *added;           /* T: the merge tasks' new bits */
	struct part_lanes_stats ls;
};

static double thread_cpu(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint32_t part_lanes_count(uint32_t lanes, uint32_t b, uint32_t init_blocks)
{
	uint32_t L = 1;

	if (lanes > 0)
		return b > 0 && lanes > b ? b : lanes;
	if (init_blocks > 0)
		return 1;
	while (L * 2 <= PART_LANES_AUTO_MAX &&
	       (uint64_t)L * 2 * PART_LANES_MIN_BLOCKS_PER_LANE <= b)
		L *= 2;
	return L;
}

/* ---------------------------------------------------------------- setup */

static void lanes_free(struct lanes_run *r)
{
	for (uint32_t l = 0; r->lane && l < r->L; l++) {
		free(r->lane[l].feat);
		parsa_nbrset_release(&r->lane[l].slice);
		parsa_balance_release(&r->lane[l].bal);
	}
	for (uint32_t t = 0; r->sc && t < r->n_sc; t++) {
		parsa_featmarks_release(&r->sc[t].fm);
		parsa_block_release(&r->sc[t].blk);
		parsa_partu_ctx_destroy(r->sc[t].ctx);
	}
	free(r->lane);
	free(r->sc);
	free(r->free_sc);
	r->lane = NULL;
	r->sc = NULL;
	r->free_sc = NULL;
	free(r->start);
	free(r->count);
	free(r->caps);
	free(r->nw);
	free(r->avail);
	free(r->spare);
	free(r->slot);
	free(r->size_add);
	free(r->added);
}

static int setup_lanes(struct lanes_run *r, struct parsa_err *err)
{
	const struct parsa_partu_opts *o = r->o;
	int rc = 0;

	for (uint32_t l = 0; l < r->L && !rc; l++) {
		struct lane *ln = &r->lane[l];

		ln->slice.k = o->k;
		ln->slice.words = o->k / 64 + (o->k % 64 != 0);
		ln->slice.size = calloc(o->k, sizeof(uint64_t));
		if (!ln->slice.size)
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for lane %u", l);
		rc = parsa_balance_init(&ln->bal, o->k, r->g->n_rows, o->rule,
					o->imbalance, err);
		if (!rc && o->block_imbalance > 0)
			ln->bal.block_imbalance = o->block_imbalance;
	}
	return rc;
}

static int setup_scratch(struct lanes_run *r, struct parsa_err *err)
{
	uint32_t nc = r->g->n_cols;
	int rc = 0;

	for (uint32_t t = 0; t < r->n_sc && !rc; t++) {
		parsa_block_init(&r->sc[t].blk);
		rc = parsa_featmarks_init(&r->sc[t].fm, nc, err);
		if (rc)
			return rc;
		rc = parsa_partu_ctx_create(&r->sc[t].ctx, r->o->k, r->max_rows,
					    err);
		r->free_sc[t] = t;
	}
	r->n_free = r->n_sc;
	return rc;
}

static int lanes_setup(struct lanes_run *r, uint32_t *part,
		       struct parsa_err *err)
{
	uint32_t n = r->g->n_rows, k = r->o->k;
	int rc;

	r->max_rows = n / r->b + (n % r->b != 0);
	r->max_rows = r->max_rows ? r->max_rows : 1;
	r->n_sc = r->T < r->L ? r->T : r->L;
	r->perm = part;
	r->start = malloc(((size_t)r->b + 1) * sizeof(uint32_t));
	r->count = calloc(k, sizeof(uint64_t));
	r->caps = calloc((size_t)r->L * k, sizeof(uint64_t));
	r->nw = calloc(r->L, sizeof(uint64_t));
	r->avail = calloc(k, sizeof(uint64_t));
	r->spare = calloc(k, sizeof(uint64_t));
	r->lane = calloc(r->L, sizeof(*r->lane));
	r->sc = calloc(r->n_sc, sizeof(*r->sc));
	r->free_sc = calloc(r->n_sc, sizeof(uint32_t));
	r->slot = calloc(r->T, sizeof(double));
	r->size_add = calloc((size_t)r->T * k, sizeof(uint64_t));
	r->added = calloc(r->T, sizeof(uint64_t));
	if (!r->slot || !r->size_add || !r->added || !r->perm || !r->start || !r->count || !r->caps || !r->nw ||
	    !r->avail || !r->spare || !r->lane || !r->sc || !r->free_sc)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %u lanes over %u examples",
				  r->L, n);
	parsa_blocks_split(n, r->b, r->o->seed, r->perm, r->start, NULL);
	r->cap = parsa_balance_cap(n, k, r->o->imbalance);
	rc = setup_lanes(r, err);
	return rc ? rc : setup_scratch(r, err);
}

/* ------------------------------------------------------------ one lane */

static struct scratch *take_scratch(struct lanes_run *r)
{
	struct scratch *s;

	pthread_mutex_lock(&r->mu);
	/* at most min(T, L) lanes run at once, so one is always free */
	s = &r->sc[r->free_sc[--r->n_free]];
	pthread_mutex_unlock(&r->mu);
	return s;
}

static void give_scratch(struct lanes_run *r, struct scratch *s)
{
	pthread_mutex_lock(&r->mu);
	r->free_sc[r->n_free++] = (uint32_t)(s - r->sc);
	pthread_mutex_unlock(&r->mu);
}

/* Lane l's balance: the global cap, count[i] = cap - its cap, the frozen
 * global |S_i|, the round's cursor. */
static void lane_balance(const struct lanes_run *r, uint32_t l)
{
	struct parsa_balance *bal = &r->lane[l].bal;
	uint32_t k = r->o->k;

	for (uint32_t i = 0; i < k; i++)
		bal->count[i] = r->cap - r->caps[(uint64_t)l * k + i];
	memcpy(bal->s_size, r->S->size, (size_t)k * sizeof(uint64_t));
	bal->rr = r->rr;
}

/* The lane's slice to nf features (all bits overwritten by the gather). */
static int slice_reserve(struct lane *ln, uint32_t nf, struct parsa_err *err)
{
	uint64_t need = (uint64_t)(nf ? nf : 1) * ln->slice.words;

	if (need > ln->bits_cap) {
		uint64_t *p;

		need += need / 8; /* as parsa_block_extract_marks's arrays */
		p = need <= SIZE_MAX / sizeof(uint64_t)
			    ? malloc((size_t)need * sizeof(uint64_t))
			    : NULL;
		if (!p)
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory for a slice of %u features",
					  nf);
		free(ln->slice.bits);
		ln->slice.bits = p;
		ln->bits_cap = need;
	}
	ln->slice.n_feat = nf;
	return 0;
}

/* Lane ln's block on scratch sc; solo: the round's only lane (the lead
 * block), run on two of the threads (parsa_partu_block_par). */
static int lane_solve(struct lanes_run *r, struct lane *ln,
		      struct scratch *sc, int solo, struct parsa_err *err)
{
	uint32_t j = ln->j, n = r->start[j + 1] - r->start[j];
	uint32_t *pos = r->perm + r->start[j], *t;
	uint64_t cap;
	int rc;

	/* the block copies its rows out of pos, which then takes their
	 * partitions */
	rc = parsa_block_extract_marks(&sc->blk, r->g, pos, n, &sc->fm, err);
	if (!rc)
		rc = slice_reserve(ln, sc->blk.g.n_cols, err);
	if (rc)
		return rc;
	parsa_nbrset_gather(&ln->slice, r->S, sc->blk.feat);
	if (solo)
		rc = parsa_partu_block_par(sc->ctx, &sc->blk, &ln->slice,
					   &ln->bal, pos, &ln->st, err);
	else
		rc = parsa_partu_block(sc->ctx, &sc->blk, &ln->slice,
				       &ln->bal, pos, &ln->st, err);
	/* the merge needs the features: the lane takes the block's array,
	 * the block the lane's old one */
	t = ln->feat;
	cap = ln->feat_cap;
	ln->feat = sc->blk.feat;
	ln->feat_cap = sc->blk.feat_cap;
	sc->blk.feat = t;
	sc->blk.feat_cap = t ? cap : 0;
	return rc;
}

/* part_pool task: lane l of the current round.  A round of one lane (the
 * lead block) would leave the other threads idle: its block runs on two
 * of them, with the same result (the scratch's context holds the par's
 * arrays for that block only).  Its cpu is the picking thread's. */
static int lane_task(void *arg, uint32_t l, struct parsa_err *err)
{
	struct lanes_run *r = arg;
	struct scratch *sc;
	double t0 = thread_cpu();
	int solo = r->n_lanes == 1 && r->T > 1, rc = 0;

	if (r->o->cancel && *r->o->cancel)
		return parsa_fail(err, PARSA_ECANCEL, "cancelled");
	lane_balance(r, l);
	sc = take_scratch(r);
	if (solo)
		rc = parsa_partu_ctx_set_par(sc->ctx, part_pool_par, &r->T,
					     err);
	if (rc == 0)
		rc = lane_solve(r, &r->lane[l], sc, solo, err);
	if (solo)
		(void)parsa_partu_ctx_set_par(sc->ctx, NULL, NULL, NULL);
	give_scratch(r, sc);
	r->lane[l].cpu = thread_cpu() - t0;
	return rc;
}

/* -------------------------------------------------------------- rounds */

/* Blocks first .. first + m - 1 as this round's lanes; their caps. */
static void plan_round(struct lanes_run *r, uint32_t first, uint32_t m)
{
	uint32_t k = r->o->k;

	r->n_lanes = m;
	for (uint32_t l = 0; l < m; l++) {
		r->lane[l].j = first + l;
		r->nw[l] = r->start[first + l + 1] - r->start[first + l];
		memset(&r->lane[l].st, 0, sizeof(r->lane[l].st));
	}
	for (uint32_t i = 0; i < k; i++)
		r->avail[i] = r->count[i] < r->cap ? r->cap - r->count[i] : 0;
	parsa_balance_split(m, k, r->nw, r->avail, r->caps, r->spare);
}

/* One merge task: every lane's slice features in the task's range of the
 * global features ORed into S (parsa_nbrset_scatter_or_range: disjoint
 * words, the new bits counted in the task's own size_add). */
static int merge_task(void *arg, uint32_t t, struct parsa_err *err)
{
	struct lanes_run *r = arg;
	uint64_t nc = r->g->n_cols, *add = r->size_add + (size_t)t * r->o->k;
	uint32_t lo = (uint32_t)(nc * t / r->T), hi = (uint32_t)(nc * (t + 1) / r->T);

	(void)err;
	memset(add, 0, r->o->k * sizeof(uint64_t));
	r->added[t] = 0;
	for (uint32_t l = 0; l < r->n_lanes; l++)
		r->added[t] += parsa_nbrset_scatter_or_range(
			r->S, &r->lane[l].slice, r->lane[l].feat, lo, hi,
			add);
	return 0;
}

/* The round's lanes into S, part, count and st.  S is the union of the
 * slices whatever the order; the rest in lane order. */
static void merge_round(struct lanes_run *r, uint32_t *part,
			struct parsa_partu_stats *st)
{
	struct parsa_err e;

	/* the slices on the threads, each over a range of the features (the
	 * tasks cannot fail) */
	if (r->T > 1 && part_pool_run(r->T, r->T, merge_task, r, &e) == 0) {
		for (uint32_t t = 0; t < r->T; t++) {
			const uint64_t *add = r->size_add + (size_t)t * r->o->k;

			st->new_bits += r->added[t];
			for (uint32_t i = 0; i < r->o->k; i++)
				r->S->size[i] += add[i];
		}
	} else {
		for (uint32_t l = 0; l < r->n_lanes; l++)
			st->new_bits += parsa_nbrset_scatter_or(
				r->S, &r->lane[l].slice, r->lane[l].feat);
	}
	for (uint32_t l = 0; l < r->n_lanes; l++) {
		struct lane *ln = &r->lane[l];
		uint32_t a = r->start[ln->j], z = r->start[ln->j + 1];

		st->assigned += ln->st.assigned;
		st->decrements += ln->st.decrements;
		for (uint32_t q = a; q < z; q++)
			r->count[part[q]]++;
		if (z > a)
			r->rr = ln->bal.rr;
	}
}

/* The round's lanes in order on the first free of T threads: its span;
 * serial is the calling thread's planning and merging. */
static void account_round(struct lanes_run *r, double serial)
{
	double span = 0;

	memset(r->slot, 0, r->T * sizeof(double));
	for (uint32_t l = 0; l < r->n_lanes; l++) {
		uint32_t best = 0;

		for (uint32_t t = 1; t < r->T; t++)
			best = r->slot[t] < r->slot[best] ? t : best;
		r->slot[best] += r->lane[l].cpu;
		span = r->slot[best] > span ? r->slot[best] : span;
		r->ls.cpu_work += r->lane[l].cpu;
	}
	r->ls.cpu_work += serial;
	r->ls.cpu_span += span + serial;
	r->ls.rounds++;
}

static int run_rounds(struct lanes_run *r, uint32_t *part,
		      struct parsa_partu_stats *st, struct parsa_err *err)
{
	uint32_t first = 0;
	int rc = 0;

	while (first < r->b && !rc) {
		/* round 0: the lead block alone */
		uint32_t m = first == 0 ? 1 : r->L;
		double t0 = thread_cpu(), t1, t2;

		m = m < r->b - first ? m : r->b - first;
		if (r->o->cancel && *r->o->cancel)
			return parsa_fail(err, PARSA_ECANCEL, "cancelled");
		plan_round(r, first, m);
		t1 = thread_cpu();
		rc = part_pool_run(m, r->T, lane_task, r, err);
		if (rc)
			break;
		t2 = thread_cpu();
		merge_round(r, part, st);
		account_round(r, (t1 - t0) + (thread_cpu() - t2));
		first += m;
		if (r->o->progress)
			r->o->progress(r->o->progress_arg, first, r->b);
	}
	return rc;
}

/* to_row_order's scatter: task t's share of the positions. */
struct scatter_job {
	const uint32_t *perm, *part;
	uint32_t *out;
	uint32_t n, T;
};

static int scatter_task(void *arg, uint32_t t, struct parsa_err *err)
{
	const struct scatter_job *sj = arg;
	uint32_t lo = (uint32_t)((uint64_t)sj->n * t / sj->T);
	uint32_t hi = (uint32_t)((uint64_t)sj->n * (t + 1) / sj->T);

	(void)err;
	for (uint32_t i = lo; i < hi; i++) {
		if (i + 16 < hi)
			base_prefetch_w(&sj->out[sj->perm[i + 16]]);
		sj->out[sj->perm[i]] = sj->part[i];
	}
	return 0;
}

/* part[i] is the partition of row perm[i] (the split's permutation):
 * draw perm again and put part in row order.  Scattered into a second
 * array by T tasks (each position is written once, whatever the tasks),
 * then copied back: the lanes are freed by then, so the second array
 * does not raise the phase's peak.  Without memory for it, the
 * permutation's cycles are followed in place (perm marks the positions
 * done): one thread and a dependent random read a row, 0.86 s at 100M
 * nonzeros (5M rows) against 0.1 s scattered on 2 threads. */
static int to_row_order(uint32_t n, uint32_t b, uint64_t seed, uint32_t *part,
			uint32_t T, struct parsa_err *err)
{
	uint32_t *perm = malloc((size_t)n * sizeof(uint32_t));
	uint32_t *start = malloc(((size_t)b + 1) * sizeof(uint32_t));
	uint32_t *out;

	if (!perm || !start) {
		free(perm);
		free(start);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %u examples", n);
	}
	parsa_blocks_split(n, b, seed, perm, start, NULL);
	free(start);
	out = malloc((size_t)n * sizeof(uint32_t));
	if (out) {
		struct scatter_job sj = { perm, part, out, n, T ? T : 1 };
		struct parsa_err e;

		/* (the pool fails only before its tasks run: then here) */
		if (part_pool_run(sj.T, sj.T, scatter_task, &sj, &e))
			for (uint32_t t = 0; t < sj.T; t++)
				(void)scatter_task(&sj, t, &e);
		memcpy(part, out, (size_t)n * sizeof(uint32_t));
		free(out);
		free(perm);
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = part[i], q = perm[i];

		if (q == UINT32_MAX)
			continue;
		perm[i] = UINT32_MAX;
		while (q != i) { /* v belongs at q: put it there, carry q's */
			uint32_t w = part[q], nq = perm[q];

			part[q] = v;
			v = w;
			perm[q] = UINT32_MAX;
			q = nq;
		}
		part[i] = v;
	}
	free(perm);
	return 0;
}

static int check_lanes(const struct parsa_graph *g,
		       const struct parsa_partu_opts *o, uint32_t lanes,
		       const struct parsa_nbrset *S, struct parsa_err *err)
{
	if (lanes == 0 || lanes > PART_LANES_MAX)
		return parsa_fail(err, PARSA_EINVAL,
				  "lanes must be in 1..%u (got %u)",
				  PART_LANES_MAX, lanes);
	if (lanes > 1 && o->init_blocks > 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "lanes %u with init_blocks %u: the warm-up "
				  "(individual initialization) is sequential; "
				  "use one lane", lanes, o->init_blocks);
	if (o->k == 0 || S->k != o->k || S->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "neighbor sets (%u features, k=%u) do not "
				  "match the graph (%u features, k=%u)",
				  S->n_feat, S->k, g->n_cols, o->k);
	return 0;
}

int part_lanes_partition_u(const struct parsa_graph *g,
			   const struct parsa_partu_opts *o, uint32_t lanes,
			   uint32_t threads, struct parsa_nbrset *S,
			   uint32_t *part, struct parsa_partu_stats *st,
			   struct part_lanes_stats *ls, struct parsa_err *err)
{
	struct lanes_run r = {.g = g, .o = o, .S = S};
	struct parsa_partu_stats dummy = {0};
	struct parsa_balance probe;
	int rc;

	if (ls)
		memset(ls, 0, sizeof(*ls));
	rc = check_lanes(g, o, lanes, S, err);
	if (rc)
		return rc;
	if (o->init_blocks > 0) /* one lane: the sequential run, warm-up */
		return parsa_partition_u(g, o, S, part, st, err);
	/* the option checks parsa_partition_u makes (imbalance, rule) */
	rc = parsa_balance_init(&probe, o->k, g->n_rows, o->rule, o->imbalance,
				err);
	parsa_balance_release(&probe);
	if (rc)
		return rc;
	if (o->block_imbalance != 0 && !(o->block_imbalance >= 1.0))
		return parsa_fail(err, PARSA_EINVAL,
				  "block imbalance must be 0, >= 1 or infinity (got %g)",
				  o->block_imbalance);
	if (g->n_rows == 0)
		return 0;
	r.b = parsa_partu_blocks(o, g->n_rows);
	r.L = lanes < r.b ? lanes : r.b;
	r.T = threads ? threads : part_pool_cpus();
	r.T = r.T < r.L ? r.T : r.L;
	if (pthread_mutex_init(&r.mu, NULL))
		return parsa_fail(err, PARSA_ENOMEM, "cannot create a mutex");
	r.ls.lanes = r.L;
	r.ls.threads = r.T;
	rc = lanes_setup(&r, part, err);
	if (!rc)
		rc = run_rounds(&r, part, st ? st : &dummy, err);
	if (!rc && ls)
		*ls = r.ls;
	lanes_free(&r);
	if (!rc)
		rc = to_row_order(g->n_rows, r.b, o->seed, part, r.T, err);
	pthread_mutex_destroy(&r.mu);
	return rc;
}
