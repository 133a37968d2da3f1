/*
 * parsa_kfm: k-way FM on the connectivity with lazy upper-bound keys in a
 * bucket queue, negative-gain moves and rollback to the best prefix; see
 * parsa_kfm.h for the design and its contracts.
 *
 * Phases of a pass: fill (every boundary vertex queued with an O(deg)
 * bound), moves (pop, re-evaluate exactly, move, re-queue or wait for a
 * full part; propagate the raising count crossings and the room a move
 * leaves), rollback (undo the moves after the best prefix, in reverse
 * order, without propagation).
 */
#include "parsa_kfm.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base_prefetch.h"

#include "parsa_conn.h"
#include "parsa_fm.h"
#include "parsa_metrics.h"
#include "parsa_rng.h"

#define CNT_SAT PARSA_CONN_SAT
#define NIL UINT32_MAX
#define NO_KEY INT32_MIN
/* features ahead of the current one whose counts and masks are prefetched */
#define KFM_AHEAD 8

/* One move of a pass, for the rollback. */
struct kfm_step {
	uint32_t u, from;
};

/*
 * Working state of one call (arrays owned, except g, part, used, weight).
 * Invariants between operations:
 *   - cnt[v][j] > 0 iff bit (v, j) of used is set; lam[v] = its popcount;
 *     size[j] = Σ weights of part j; sq = Σ_j size[j]²;
 *   - u is in the queue iff inq[u]; then u is in bucket key[u] and
 *     key[u] ≥ the exact best feasible gain of u, as long as the feasible
 *     targets do not change (the caps are a heuristic's, see parsa_kfm.h);
 *   - u waits in part j's heap iff wpart[u] == j (then wkey[u] bounds the
 *     gain of its move to j); a vertex may be queued and waiting at once;
 *   - part j's waiters form a max pairing heap rooted at whead[j] under
 *     (wkey, wstamp) (w_before): a node comes before its children;
 *   - lock[u] == epoch iff u moved in this pass (never queued again).
 */
struct kfm {
	const struct parsa_graph *g;
	struct parsa_graph t;      /* transpose: net v -> its pins */
	uint32_t *part;
	struct parsa_nbrset *used;
	uint32_t k;
	uint64_t cap, m_limit;
	const uint32_t *weight;
	uint16_t *cnt;             /* n_cols * k, feature-major, saturating */
	uint32_t *lam;             /* n_cols: parts using v */
	uint64_t *size;            /* k: |U_j| */
	double sq;                 /* Σ_j size[j]² */
	uint64_t *full;            /* words: mask of all k parts */
	uint32_t *hits;            /* k scratch, zero between uses */
	uint32_t *ties;            /* k scratch: blocked targets of equal gain */
	uint64_t *tmask;           /* words scratch, zero between uses */
	int saturated;             /* some count reached CNT_SAT */
	/* the bucket queue */
	int32_t D;                 /* keys in [−D, D] */
	int32_t top;               /* no non-empty bucket above top */
	uint32_t *head;            /* 2D + 1 bucket heads */
	uint32_t *next, *prev;     /* n: list links */
	int32_t *key;              /* n: queue key (while queued) */
	/* the bound of a vertex's best feasible gain since its last
	 * evaluation: max(g1 + bt, g2 + bo), g1 the best gain (to t1), g2 the
	 * best to any other part, bt/bo the raising crossings since toward
	 * t1 / toward other parts (a private-feature crossing counts for both) */
	int32_t *g1, *g2, *bt, *bo;
	uint32_t *t1;
	uint8_t *inq;              /* n: 1 iff queued */
	uint32_t *lock;            /* n: epoch of the vertex's move */
	/* waiting heaps: u waits on part wpart[u] (NIL: none), whose size
	 * cap blocked u's best move of gain wkey[u] */
	uint32_t *whead;           /* k heap roots */
	uint32_t *wchild;          /* n: first child (NIL: none) */
	uint32_t *wnext;           /* n: next sibling (NIL: none) */
	uint32_t *wprev;           /* n: previous sibling, or the parent of a
				    * first child (NIL: a root) */
	uint32_t *wpart;
	int32_t *wkey;
	uint64_t *wstamp;          /* n: when u began to wait (later: larger) */
	uint64_t wclock;           /* stamps handed out */
	uint32_t epoch;
	uint32_t *order;           /* n: fill order */
	struct kfm_step *log;      /* n: the moves of the pass */
};

/* The exact best move of a vertex. */
struct kfm_eval {
	uint32_t to;   /* best feasible target, NIL: none */
	int32_t gain;  /* its gain */
	int32_t ub;    /* best gain over every target, feasible or not */
	uint32_t want; /* best target within m_limit whose size cap blocks
			* it and whose gain beats the feasible one's; NIL */
	int32_t wgain; /* its gain */
	int32_t gain2; /* best gain of a feasible target other than to, or
			* to an unrelated part (priv − deg) */
};

static uint64_t wt(const struct kfm *f, uint32_t u)
{
	return f->weight ? f->weight[u] : 1;
}

static uint16_t *cnt_at(const struct kfm *f, uint32_t v, uint32_t j)
{
	return &f->cnt[(uint64_t)v * f->k + j];
}

static void kfm_free(struct kfm *f)
{
	parsa_graph_release(&f->t);
	free(f->cnt);
	free(f->lam);
	free(f->size);
	free(f->full);
	free(f->hits);
	free(f->ties);
	free(f->tmask);
	free(f->head);
	free(f->next);
	free(f->prev);
	free(f->key);
	free(f->g1);
	free(f->g2);
	free(f->bt);
	free(f->bo);
	free(f->t1);
	free(f->inq);
	free(f->lock);
	free(f->whead);
	free(f->wchild);
	free(f->wnext);
	free(f->wprev);
	free(f->wstamp);
	free(f->wpart);
	free(f->wkey);
	free(f->order);
	free(f->log);
}

/* Allocate every array of f; 0 or PARSA_ENOMEM (f freed). */
static int kfm_alloc(struct kfm *f, struct parsa_err *err)
{
	const struct parsa_graph *g = f->g;
	size_t n = (size_t)g->n_rows + 1;

	for (uint32_t u = 0; u < g->n_rows; u++) {
		uint32_t d = parsa_graph_degree(g, u);

		f->D = (int32_t)d > f->D ? (int32_t)d : f->D;
	}
	f->cnt = calloc((size_t)g->n_cols * f->k + 1, sizeof(uint16_t));
	f->lam = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	f->size = calloc(f->k, sizeof(uint64_t));
	f->full = calloc(f->used->words, sizeof(uint64_t));
	f->hits = calloc(f->k, sizeof(uint32_t));
	f->ties = malloc(f->k * sizeof(uint32_t));
	f->tmask = calloc(f->used->words, sizeof(uint64_t));
	f->head = malloc((2 * (size_t)f->D + 1) * sizeof(uint32_t));
	f->next = malloc(n * sizeof(uint32_t));
	f->prev = malloc(n * sizeof(uint32_t));
	f->key = malloc(n * sizeof(int32_t));
	f->g1 = malloc(n * sizeof(int32_t));
	f->g2 = malloc(n * sizeof(int32_t));
	f->bt = malloc(n * sizeof(int32_t));
	f->bo = malloc(n * sizeof(int32_t));
	f->t1 = malloc(n * sizeof(uint32_t));
	f->inq = calloc(n, 1);
	f->lock = calloc(n, sizeof(uint32_t));
	f->whead = malloc(f->k * sizeof(uint32_t));
	f->wchild = malloc(n * sizeof(uint32_t));
	f->wnext = malloc(n * sizeof(uint32_t));
	f->wprev = malloc(n * sizeof(uint32_t));
	f->wstamp = malloc(n * sizeof(uint64_t));
	f->wpart = malloc(n * sizeof(uint32_t));
	f->wkey = malloc(n * sizeof(int32_t));
	f->order = malloc(n * sizeof(uint32_t));
	f->log = malloc(n * sizeof(struct kfm_step));
	if (!f->cnt || !f->lam || !f->size || !f->full || !f->hits ||
	    !f->ties || !f->tmask || !f->head || !f->next || !f->prev || !f->key ||
	    !f->inq || !f->lock || !f->order || !f->log || !f->whead ||
	    !f->wnext || !f->wprev || !f->wpart || !f->wkey || !f->g1 ||
	    !f->wchild || !f->wstamp ||
	    !f->g2 || !f->bt || !f->bo || !f->t1 ||
	    parsa_graph_transpose(g, &f->t, NULL)) {
		kfm_free(f);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory (k-way FM: %u features x %u parts)",
				  g->n_cols, f->k);
	}
	return 0;
}

static int kfm_init(struct kfm *f, const struct parsa_graph *g, uint32_t *part,
		    struct parsa_nbrset *used, const struct parsa_kfm_opts *o,
		    struct parsa_err *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	parsa_graph_init(&f->t);
	f->g = g;
	f->part = part;
	f->used = used;
	f->k = used->k;
	f->cap = o->cap;
	f->m_limit = o->m_limit;
	f->weight = o->weight;
	rc = kfm_alloc(f, err);
	if (rc)
		return rc;
	for (uint32_t j = 0; j < f->k; j++)
		f->full[j >> 6] |= 1ULL << (j & 63);
	for (uint32_t u = 0; u < g->n_rows; u++)
		f->order[u] = u;
	f->saturated = parsa_conn_counts_t(g, &f->t, part, used, f->weight,
					   f->cnt, f->lam, f->size);
	for (uint32_t j = 0; j < f->k; j++)
		f->sq += (double)f->size[j] * (double)f->size[j];
	return 0;
}

/* ------------------------------------------------------- the bucket queue */

static void q_clear(struct kfm *f)
{
	for (int32_t i = 0; i <= 2 * f->D; i++)
		f->head[i] = NIL;
	f->top = -f->D - 1;
	for (uint32_t j = 0; j < f->k; j++)
		f->whead[j] = NIL;
	for (uint32_t u = 0; u < f->g->n_rows; u++) {
		f->inq[u] = 0;
		f->wpart[u] = NIL;
	}
}

/* Queue u with key x (clamped to [−deg(u), deg(u)]: every gain is). */
static void q_insert(struct kfm *f, uint32_t u, int32_t x)
{
	int32_t d = (int32_t)parsa_graph_degree(f->g, u);
	uint32_t *h;

	x = x > d ? d : x < -d ? -d : x;
	h = &f->head[x + f->D];
	f->key[u] = x;
	f->prev[u] = NIL;
	f->next[u] = *h;
	if (*h != NIL)
		f->prev[*h] = u;
	*h = u;
	f->inq[u] = 1;
	if (x > f->top)
		f->top = x;
}

static void q_remove(struct kfm *f, uint32_t u)
{
	if (f->prev[u] != NIL)
		f->next[f->prev[u]] = f->next[u];
	else
		f->head[f->key[u] + f->D] = f->next[u];
	if (f->next[u] != NIL)
		f->prev[f->next[u]] = f->prev[u];
	f->inq[u] = 0;
}

/* The largest key in the queue, NO_KEY if it is empty. */
static int32_t q_max(struct kfm *f)
{
	while (f->top >= -f->D && f->head[f->top + f->D] == NIL)
		f->top--;
	return f->top >= -f->D ? f->top : NO_KEY;
}

/*
 * The waiting heaps.  w_flush takes the waiter of the largest bound, the
 * latest to begin waiting among equal ones (the head of the list it once
 * scanned, newest first): the maximum of the total order w_before, so
 * the shape of a heap never decides which.
 */

/* Does a come before b: larger bound, then later stamp? */
static int w_before(const struct kfm *f, uint32_t a, uint32_t b)
{
	return f->wkey[a] > f->wkey[b] ||
	       (f->wkey[a] == f->wkey[b] && f->wstamp[a] > f->wstamp[b]);
}

/* Meld the heaps rooted at a and b (roots, NIL: empty); the new root. */
static uint32_t w_meld(struct kfm *f, uint32_t a, uint32_t b)
{
	uint32_t t;

	if (a == NIL || b == NIL)
		return a == NIL ? b : a;
	if (w_before(f, b, a))
		t = a, a = b, b = t;
	f->wnext[b] = f->wchild[a];
	if (f->wchild[a] != NIL)
		f->wprev[f->wchild[a]] = b;
	f->wprev[b] = a;
	f->wchild[a] = b;
	f->wnext[a] = f->wprev[a] = NIL;
	return a;
}

/* The heap of the sibling list from c (detached roots): melded in pairs
 * left to right, then the pairs right to left.  Its root, NIL if none. */
static uint32_t w_merge_pairs(struct kfm *f, uint32_t c)
{
	uint32_t pairs = NIL, r = NIL;

	while (c != NIL) { /* the pairs in a list through wprev, last first */
		uint32_t a = c, b = f->wnext[a], p;

		c = b != NIL ? f->wnext[b] : NIL;
		f->wnext[a] = f->wprev[a] = NIL;
		if (b != NIL)
			f->wnext[b] = f->wprev[b] = NIL;
		p = w_meld(f, a, b);
		f->wprev[p] = pairs;
		pairs = p;
	}
	while (pairs != NIL) {
		uint32_t p = pairs;

		pairs = f->wprev[p];
		f->wprev[p] = NIL;
		r = w_meld(f, r, p);
	}
	return r;
}

/* Detach u's subtree from its heap (u not the root). */
static void w_cut(struct kfm *f, uint32_t u)
{
	uint32_t p = f->wprev[u];

	if (f->wchild[p] == u)
		f->wchild[p] = f->wnext[u];
	else
		f->wnext[p] = f->wnext[u];
	if (f->wnext[u] != NIL)
		f->wprev[f->wnext[u]] = p;
	f->wnext[u] = f->wprev[u] = NIL;
}

/* u waits until part j has room for it (its best move, of gain x). */
static void w_insert(struct kfm *f, uint32_t u, uint32_t j, int32_t x)
{
	f->wpart[u] = j;
	f->wkey[u] = x;
	f->wstamp[u] = ++f->wclock;
	f->wchild[u] = f->wnext[u] = f->wprev[u] = NIL;
	f->whead[j] = w_meld(f, f->whead[j], u);
}

static void w_remove(struct kfm *f, uint32_t u)
{
	uint32_t j = f->wpart[u], c = w_merge_pairs(f, f->wchild[u]);

	f->wchild[u] = NIL;
	if (f->whead[j] == u) {
		f->whead[j] = c;
	} else {
		w_cut(f, u);
		f->whead[j] = w_meld(f, f->whead[j], c);
	}
	f->wpart[u] = NIL;
}

/* wkey[u] of a waiting u was raised: restore its heap's order. */
static void w_raised(struct kfm *f, uint32_t u)
{
	uint32_t j = f->wpart[u];

	if (f->whead[j] == u)
		return;
	w_cut(f, u);
	f->whead[j] = w_meld(f, f->whead[j], u);
}

/* Raise u's queue key to at least x (queue it if it is not). */
static void q_raise(struct kfm *f, uint32_t u, int32_t x)
{
	if (f->inq[u]) {
		if (f->key[u] >= x)
			return;
		q_remove(f, u);
	}
	q_insert(f, u, x);
}

/* u was just evaluated: best gain x1 (to t, NIL: any part), best to any
 * other part x2 <= x1. */
static void set_bound(struct kfm *f, uint32_t u, int32_t x1, uint32_t t,
		      int32_t x2)
{
	f->g1[u] = x1;
	f->t1[u] = t;
	f->g2[u] = x2;
	f->bt[u] = f->bo[u] = 0;
}

static int32_t bound(const struct kfm *f, uint32_t u)
{
	int32_t x = f->g1[u] + f->bt[u], y = f->g2[u] + f->bo[u];

	return x > y ? x : y;
}

/*
 * A count crossing raised u's gain toward part b by 1 (b == NIL: toward
 * every part, a feature became private): raise its bounds, and queue it
 * again if that lifts its key (or if it had left the queue unmoved).
 */
static void q_bump(struct kfm *f, uint32_t u, uint32_t b)
{
	int32_t x;

	if (f->lock[u] == f->epoch)
		return;
	if (b == NIL || b == f->t1[u] || f->t1[u] == NIL)
		f->bt[u]++;
	if (b == NIL || b != f->t1[u])
		f->bo[u]++;
	if (f->wpart[u] != NIL) {
		if (b == NIL || b == f->wpart[u]) {
			f->wkey[u]++; /* the blocked move's bound */
			w_raised(f, u);
		}
		if (!f->inq[u])
			return; /* no feasible target when it was evaluated */
	}
	x = bound(f, u);
	if (!f->inq[u] || f->key[u] < x)
		q_raise(f, u, x);
}

/*
 * Part j lost weight: its waiting vertices of the largest bounds whose
 * weights fill the room (at least one) are queued with those bounds; the
 * others keep waiting (a heap's root per waiter taken).
 */
static void w_flush(struct kfm *f, uint32_t j)
{
	uint64_t room = f->size[j] < f->cap ? f->cap - f->size[j] : 0;

	do {
		uint32_t best = f->whead[j];

		if (best == NIL)
			return;
		w_remove(f, best);
		room = room > wt(f, best) ? room - wt(f, best) : 0;
		if (f->lock[best] != f->epoch)
			q_raise(f, best, f->wkey[best]);
	} while (room > 0);
}

/* ------------------------------------------------------------- evaluation */

/* Prefetch what the evaluation of a vertex of part a reads of feature v. */
static void prefetch_feature(const struct kfm *f, uint32_t v, uint32_t a)
{
	base_prefetch(cnt_at(f, v, a));
	base_prefetch(&f->lam[v]);
	base_prefetch(parsa_nbrset_mask(f->used, v));
}

/*
 * hits[j] = #{v ∈ N(u): v in part j, λ_v ≥ 2} (parsa_conn_hits), the
 * parts using such a feature set in tmask (the candidates), every part
 * when u has a dense feature.  Returns the number of those.
 */
static uint32_t count_hits(struct kfm *f, uint32_t u)
{
	const struct parsa_nbrset *s = f->used;
	uint32_t base = parsa_conn_hits(f->g, u, s, f->lam, f->hits, f->tmask);

	if (base)
		for (uint32_t w = 0; w < s->words; w++)
			f->tmask[w] = f->full[w];
	return base;
}

/*
 * Of the n >= 2 parts ties[0..n) (no dense feature in N(u)), the one the
 * first feature of u in row order that some other part uses reaches
 * first, lowest index first (parsa_kfm.h: ties between blocked parts).
 */
static uint32_t first_met(struct kfm *f, uint32_t u, uint32_t n)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;
	uint32_t r = NIL;

	for (uint32_t i = 0; i < n; i++)
		f->tmask[f->ties[i] >> 6] |= 1ULL << (f->ties[i] & 63);
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1] && r == NIL; e++) {
		const uint64_t *m = parsa_nbrset_mask(s, g->col[e]);

		if (f->lam[g->col[e]] == 1)
			continue;
		for (uint32_t w = 0; w < s->words && r == NIL; w++)
			if (m[w] & f->tmask[w])
				r = w * 64 + (uint32_t)__builtin_ctzll(m[w] & f->tmask[w]);
	}
	for (uint32_t i = 0; i < n; i++)
		f->tmask[f->ties[i] >> 6] = 0;
	return r;
}

/*
 * Candidate j (gain, M_j after the move mj) of u into r: the best
 * feasible target by (gain, smaller mj, lower j), gain2 and ub as
 * struct kfm_eval says; a blocked target of the best gain into want
 * (its ties, in increasing j, listed in f->ties, *nties of them).
 */
static void consider(struct kfm *f, uint32_t u, uint32_t j, int32_t gain,
		     uint64_t mj, struct kfm_eval *r, uint64_t *best_m,
		     uint32_t *nties)
{
	r->ub = gain > r->ub ? gain : r->ub;
	if (mj > f->m_limit)
		return;
	if (f->size[j] + wt(f, u) > f->cap) {
		if (r->want == NIL || gain > r->wgain) {
			r->want = j;
			r->wgain = gain;
			*nties = 0;
		}
		if (gain == r->wgain)
			f->ties[(*nties)++] = j;
		return;
	}
	if (r->to == NIL || gain > r->gain ||
	    (gain == r->gain && (mj < *best_m || (mj == *best_m && j < r->to)))) {
		if (r->to != NIL && r->gain > r->gain2)
			r->gain2 = r->gain;
		r->to = j;
		r->gain = gain;
		*best_m = mj;
	} else if (gain > r->gain2) {
		r->gain2 = gain;
	}
}

/*
 * The exact best move of u (parsa_kfm.h: targets, caps, ties).  The
 * candidates are visited in increasing index; all but want's choice are
 * order-free (maxima of total orders), and want's ties go to the part a
 * scan of u's features in row order meets first (all parts, in
 * increasing index, when u has a dense feature).
 */
static struct kfm_eval evaluate(struct kfm *f, uint32_t u)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;
	uint32_t a = f->part[u], deg = parsa_graph_degree(g, u), priv = 0;
	uint32_t base, nties = 0;
	uint64_t best_m = UINT64_MAX;
	struct kfm_eval r = { NIL, 0, 0, NIL, 0, 0 };

	for (uint64_t e = g->row_ptr[u], end = g->row_ptr[u + 1]; e < end; e++) {
		if (e + KFM_AHEAD < end)
			prefetch_feature(f, g->col[e + KFM_AHEAD], a);
		priv += *cnt_at(f, g->col[e], a) == 1;
	}
	r.ub = r.gain2 = (int32_t)priv - (int32_t)deg;
	base = count_hits(f, u);
	for (uint32_t w = 0, j; (j = parsa_conn_pop(f->tmask, s->words, &w)) !=
				UINT32_MAX;) {
		uint32_t add = deg - f->hits[j];

		f->hits[j] = 0;
		if (j != a)
			consider(f, u, j, (int32_t)priv - (int32_t)add,
				 s->size[j] + add, &r, &best_m, &nties);
	}
	if (nties > 1 && base == 0)
		r.want = first_met(f, u, nties);
	if (r.want != NIL && r.to != NIL && r.wgain <= r.gain)
		r.want = NIL; /* the feasible move is as good */
	return r;
}

/* ------------------------------------------------------------------ moves */

/* The pins of net v other than u whose gains rise: the one left in part a
 * (cnt[v][a] 2 -> 1: v becomes private to it, every gain +1; b == NIL) or
 * all of them (cnt[v][b] 0 -> 1: their gains toward b +1). */
static void bump_net(struct kfm *f, uint32_t v, uint32_t u, uint32_t a,
		     uint32_t b)
{
	const struct parsa_graph *t = &f->t;

	for (uint64_t i = t->row_ptr[v]; i < t->row_ptr[v + 1]; i++) {
		uint32_t w = t->col[i];

		if (w == u || (b == NIL && f->part[w] != a))
			continue;
		q_bump(f, w, b);
		if (b == NIL)
			return;
	}
}

/*
 * Move u from its part to b, keeping counts, masks, lam, sizes and sq
 * exact (up to saturated counts); with propagate, raise the bounds of the
 * pins whose gains the move may raise (parsa_kfm.h).  Returns the change
 * of Σ_j M_j.
 */
static int64_t move(struct kfm *f, uint32_t u, uint32_t b, int propagate)
{
	const struct parsa_graph *g = f->g;
	struct parsa_nbrset *s = f->used;
	uint32_t a = f->part[u];
	int64_t delta = 0;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		uint16_t *ca = cnt_at(f, v, a), *cb = cnt_at(f, v, b);

		if (propagate && *ca == 2)
			bump_net(f, v, u, a, NIL);
		if (propagate && *cb == 0)
			bump_net(f, v, u, a, b);
		delta += parsa_conn_move_feature(s, v, a, b, ca, cb, &f->lam[v],
						 &f->saturated);
	}
	f->sq -= (double)f->size[a] * (double)f->size[a] +
		 (double)f->size[b] * (double)f->size[b];
	f->size[a] -= wt(f, u);
	f->size[b] += wt(f, u);
	f->sq += (double)f->size[a] * (double)f->size[a] +
		 (double)f->size[b] * (double)f->size[b];
	f->part[u] = b;
	if (propagate)
		w_flush(f, a);
	return delta;
}

/*
 * A cheap bound of u's best gain, O(deg): gain_b = priv − deg + hits_b and
 * hits_b ≤ shared = #{v ∈ N(u): λ_v ≥ 2} for b ≠ a.  *boundary: shared > 0.
 */
static int32_t quick_bound(const struct kfm *f, uint32_t u, int *boundary)
{
	const struct parsa_graph *g = f->g;
	uint32_t a = f->part[u], priv = 0, shared = 0;

	for (uint64_t e = g->row_ptr[u], end = g->row_ptr[u + 1]; e < end; e++) {
		uint32_t v = g->col[e];

		if (e + KFM_AHEAD < end)
			prefetch_feature(f, g->col[e + KFM_AHEAD], a);
		priv += *cnt_at(f, v, a) == 1;
		shared += f->lam[v] >= 2;
	}
	*boundary = shared > 0;
	return (int32_t)(priv + shared) - (int32_t)parsa_graph_degree(g, u);
}

/* Queue every boundary vertex with its quick bound as key, in a seeded
 * random order (LIFO buckets: the order breaks ties between equal keys);
 * the exact gains are computed lazily when popped. */
static void fill(struct kfm *f, struct parsa_rng *rng)
{
	uint32_t n = f->g->n_rows;

	q_clear(f);
	/* the bounds in row order, so the walk waits on the counts and not
	 * on the rows (key[u] holds u's boundary flag until u is queued:
	 * key is read only while inq) */
	for (uint32_t u = 0; u < n; u++) {
		int boundary;
		int32_t x = quick_bound(f, u, &boundary);

		set_bound(f, u, x, NIL, x);
		f->key[u] = boundary;
	}
	parsa_rng_shuffle_u32(rng, f->order, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t u = f->order[i];

		if (f->key[u])
			q_insert(f, u, f->g1[u]);
	}
}

/*
 * One pass (parsa_kfm.h): moves until the queue empties, the stall bound,
 * the pop budget or the stop (polled every PARSA_STOP_POPS pops), then
 * rollback to the best prefix.  Returns the drop of Σ_j M_j (≥ 0); tried
 * and kept count the moves made and kept.
 */
static uint64_t pass(struct kfm *f, struct parsa_rng *rng, uint32_t stall,
		     uint64_t budget, const struct parsa_stop *stop,
		     uint64_t *tried, uint64_t *kept)
{
	uint64_t pops = 0;
	uint32_t n = 0, best_n = 0, since = 0;
	int64_t cum = 0, best = 0;
	double best_sq = f->sq;

	f->epoch++;
	fill(f, rng);
	while (since < stall && pops++ < budget) {
		int32_t x = q_max(f), nx;
		uint32_t u;
		struct kfm_eval r;

		if (x == NO_KEY || (pops % PARSA_STOP_POPS == 0 &&
				    parsa_stop_due(stop)))
			break;
		u = f->head[x + f->D];
		q_remove(f, u);
		if (f->wpart[u] != NIL)
			w_remove(f, u); /* waits again below if it must */
		r = evaluate(f, u);
		nx = q_max(f);
		if (r.want != NIL && (r.to == NIL || (nx != NO_KEY && r.gain < nx)))
			w_insert(f, u, r.want, r.wgain); /* until want has room */
		if (r.to == NIL) {
			/* leaves until a crossing raises it */
			set_bound(f, u, r.ub, NIL, r.ub);
			continue;
		}
		if (nx != NO_KEY && r.gain < nx) {
			set_bound(f, u, r.gain, r.to, r.gain2);
			q_insert(f, u, r.gain);
			continue;
		}
		f->log[n++] = (struct kfm_step){ u, f->part[u] };
		f->lock[u] = f->epoch;
		cum -= move(f, u, r.to, 1);
		if (cum > best || (cum == best && f->sq < best_sq)) {
			best = cum;
			best_sq = f->sq;
			best_n = n;
			since = 0;
		} else {
			since++;
		}
	}
	*tried += n;
	*kept += best_n;
	while (n > best_n) {
		n--;
		move(f, f->log[n].u, f->log[n].from, 0);
	}
	return (uint64_t)best;
}

static uint32_t auto_stall(uint32_t n)
{
	uint32_t s = n / 16;

	return s < 64 ? 64 : s > 1024 ? 1024 : s;
}

int parsa_kfm_refine(const struct parsa_graph *g, uint32_t *part,
		     struct parsa_nbrset *used, const struct parsa_kfm_opts *o,
		     struct parsa_kfm_stats *st, struct parsa_err *err)
{
	struct parsa_kfm_stats s = { 0 };
	struct parsa_rng rng;
	struct kfm f;
	uint32_t stall;
	uint64_t budget;
	int rc = o ? parsa_conn_check(g, part, used, "k-way FM", err)
		   : parsa_fail(err, PARSA_EINVAL, "k-way FM: NULL options");

	if (rc)
		return rc;
	s.conn_before = s.conn_after = parsa_connectivity(used);
	if (o->max_passes == 0 || used->k < 2 || g->n_rows == 0 ||
	    parsa_stop_due(o->stop)) { /* (no pass would run: skip the setup) */
		if (st)
			*st = s;
		return 0;
	}
	rc = kfm_init(&f, g, part, used, o, err);
	if (rc)
		return rc;
	stall = o->stall ? o->stall : auto_stall(g->n_rows);
	budget = (uint64_t)(o->pops ? o->pops : PARSA_KFM_POPS_AUTO) * g->n_rows / 8 + 64;
	parsa_rng_seed(&rng, o->seed ^ 0xd1b54a32d192ed03ULL);
	while (s.passes < o->max_passes && !parsa_stop_due(o->stop)) {
		uint64_t drop = pass(&f, &rng, stall, budget, o->stop, &s.tried,
				     &s.moves);

		s.passes++;
		if (drop == 0)
			break;
	}
	if (f.saturated)
		rc = parsa_used_sets(g, part, used, err);
	kfm_free(&f);
	s.conn_after = parsa_connectivity(used);
	assert(rc || s.conn_after <= s.conn_before);
	if (st)
		*st = s;
	return rc;
}
