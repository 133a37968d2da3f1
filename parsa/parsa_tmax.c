/*
 * parsa_tmax: T_max-first local search on examples and features (see
 * parsa_tmax.h).
 *
 * State: cnt[v * k + j] = examples of part j using v (exact, 32 bits),
 * lam[v] = c_v, T[j], |U_j|, and every part's examples as an unordered
 * list (pos[u] = u's index in its part's list).  A move is evaluated into
 * a sparse delta over the parts it touches (eval_move), judged, and made
 * with the same rule (apply_move), so the bookkeeping stays exact.
 */
#include "parsa_tmax.h"

#include <stdlib.h>
#include <string.h>

#include "parsa_conn.h"
#include "parsa_rng.h"

/* Pull partners per part tried first by a swap. */
#define TMAX_PULL 4

/* Largest group of examples a group move takes out of a part. */
#define TMAX_GROUP 32

struct tmax_ctx {
	const struct parsa_graph *g;
	uint32_t *part, *owner;
	struct parsa_nbrset *used;
	uint32_t k, words;
	uint32_t *cnt;        /* n_cols * k */
	uint32_t *lam;        /* n_cols */
	int64_t *T;           /* k */
	uint64_t *usz;        /* k: |U_j| */
	uint32_t **mem;       /* k lists of examples */
	uint32_t *mlen, *mcap;
	uint32_t *pos;        /* n_rows */
	int64_t *delta;       /* k, zero between evaluations */
	uint32_t *touched;    /* k */
	uint8_t *listed;      /* k: in touched */
	uint32_t n_touched;
	uint32_t *scratch;    /* n_rows */
	uint64_t *mask;       /* words */
	int64_t *T0;          /* k: T before a tentative swap */
	uint64_t *M0;         /* k: M before a tentative swap */
	uint32_t *own0;       /* max row degree: owners before it */
	uint32_t *gown;       /* TMAX_GROUP * max row degree: owners
			       * before a group move */
	uint32_t *pp;         /* k * TMAX_PULL: pull partners (swap_off) */
	int64_t *pb;          /* k: the most any example of part q can
			       * lower T_p by moving into p (swap_off) */
	uint8_t *dirty;       /* k: changed by a move since the kick */
	int64_t tsum;         /* the sum of T (kept by apply_move) */
	int64_t tsum_lim;     /* largest T_sum a move may create (or
			       * INT64_MAX) */
	int only_dirty;       /* polish: only examples of dirty parts */
	const struct parsa_tmax_opts *o;
	uint64_t polls;
	int stopped;
};

static void ctx_free(struct tmax_ctx *x)
{
	for (uint32_t j = 0; x->mem && j < x->k; j++)
		free(x->mem[j]);
	free(x->mem);
	free(x->mlen);
	free(x->mcap);
	free(x->cnt);
	free(x->lam);
	free(x->T);
	free(x->usz);
	free(x->pos);
	free(x->delta);
	free(x->touched);
	free(x->listed);
	free(x->scratch);
	free(x->mask);
	free(x->T0);
	free(x->M0);
	free(x->own0);
	free(x->gown);
	free(x->dirty);
	free(x->pp);
	free(x->pb);
}

/* 1 when the stop is due (polled on the first call and every
 * PARSA_STOP_POPS calls). */
static int poll_stop(struct tmax_ctx *x)
{
	if (x->stopped)
		return 1;
	if (x->polls++ % PARSA_STOP_POPS == 0 && parsa_stop_due(x->o->stop))
		x->stopped = 1;
	return x->stopped;
}

/* Room for one more example in part j's list; 0 or -1. */
static int list_reserve(struct tmax_ctx *x, uint32_t j)
{
	if (x->mlen[j] == x->mcap[j]) {
		uint32_t nc = x->mcap[j] ? 2 * x->mcap[j] : 16;
		uint32_t *p = realloc(x->mem[j], (size_t)nc * sizeof(*p));

		if (!p)
			return -1;
		x->mem[j] = p;
		x->mcap[j] = nc;
	}
	return 0;
}

static int list_push(struct tmax_ctx *x, uint32_t j, uint32_t u)
{
	if (list_reserve(x, j))
		return -1;
	x->pos[u] = x->mlen[j];
	x->mem[j][x->mlen[j]++] = u;
	return 0;
}

static void list_remove(struct tmax_ctx *x, uint32_t j, uint32_t u)
{
	uint32_t i = x->pos[u], last = x->mem[j][--x->mlen[j]];

	x->mem[j][i] = last;
	x->pos[last] = i;
}

/* Set up the state; 0, PARSA_EINVAL or PARSA_ENOMEM. */
static int ctx_init(struct tmax_ctx *x, const struct parsa_graph *g,
		    uint32_t *part, struct parsa_nbrset *used, uint32_t *owner,
		    const struct parsa_tmax_opts *o, struct parsa_err *err)
{
	uint32_t k = used->k;

	memset(x, 0, sizeof(*x));
	x->g = g;
	x->part = part;
	x->owner = owner;
	x->used = used;
	x->k = k;
	x->words = used->words;
	x->o = o;
	x->cnt = calloc((size_t)g->n_cols * k + 1, sizeof(*x->cnt));
	x->lam = calloc((size_t)g->n_cols + 1, sizeof(*x->lam));
	x->T = calloc(k, sizeof(*x->T));
	x->usz = calloc(k, sizeof(*x->usz));
	x->mem = calloc(k, sizeof(*x->mem));
	x->mlen = calloc(k, sizeof(*x->mlen));
	x->mcap = calloc(k, sizeof(*x->mcap));
	x->pos = malloc(((size_t)g->n_rows + 1) * sizeof(*x->pos));
	x->delta = calloc(k, sizeof(*x->delta));
	x->touched = malloc((size_t)k * sizeof(*x->touched));
	x->listed = calloc(k, sizeof(*x->listed));
	x->scratch = malloc(((size_t)g->n_rows + 1) * sizeof(*x->scratch));
	x->mask = malloc((size_t)x->words * sizeof(*x->mask));
	x->T0 = malloc((size_t)k * sizeof(*x->T0));
	x->M0 = malloc((size_t)k * sizeof(*x->M0));
	x->dirty = calloc(k, sizeof(*x->dirty));
	x->pp = malloc((size_t)k * TMAX_PULL * sizeof(*x->pp));
	x->pb = malloc((size_t)k * sizeof(*x->pb));
	{
		uint64_t dmax = 0;

		for (uint32_t u = 0; u < g->n_rows; u++)
			if (g->row_ptr[u + 1] - g->row_ptr[u] > dmax)
				dmax = g->row_ptr[u + 1] - g->row_ptr[u];
		x->own0 = malloc(((size_t)dmax + 1) * sizeof(*x->own0));
		x->gown = malloc(((size_t)dmax * TMAX_GROUP + 1) *
				 sizeof(*x->gown));
	}
	if (!x->cnt || !x->lam || !x->T || !x->usz || !x->mem || !x->mlen ||
	    !x->mcap || !x->pos || !x->delta || !x->touched || !x->listed || !x->scratch ||
	    !x->mask || !x->T0 || !x->M0 || !x->own0 || !x->gown || !x->dirty ||
	    !x->pp || !x->pb)
		goto nomem;
	for (uint32_t u = 0; u < g->n_rows; u++) {
		if (part[u] >= k) {
			ctx_free(x);
			return parsa_fail(err, PARSA_EINVAL,
					  "tmax refinement: example %u in part %u, k is %u",
					  u, part[u], k);
		}
		x->usz[part[u]]++;
		if (list_push(x, part[u], u))
			goto nomem;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
			x->cnt[(size_t)g->col[e] * k + part[u]]++;
	}
	for (uint32_t v = 0; v < g->n_cols; v++) {
		for (uint32_t j = 0; j < k; j++) {
			int has = x->cnt[(size_t)v * k + j] > 0;

			if (has != parsa_nbrset_has(used, v, j)) {
				ctx_free(x);
				return parsa_fail(err, PARSA_EINVAL,
						  "tmax refinement: the used sets do not match the partition (feature %u, part %u)",
						  v, j);
			}
			x->lam[v] += (uint32_t)has;
			x->T[j] += has;
		}
		if (x->lam[v] == 0)
			continue;
		if (owner[v] >= k || !x->cnt[(size_t)v * k + owner[v]]) {
			ctx_free(x);
			return parsa_fail(err, PARSA_EINVAL,
					  "tmax refinement: feature %u owned by part %u, which does not use it",
					  v, owner[v]);
		}
		x->T[owner[v]] += (int64_t)x->lam[v] - 2;
	}
	return 0;
nomem:
	ctx_free(x);
	return parsa_fail(err, PARSA_ENOMEM,
			  "tmax refinement: out of memory (%u features, k=%u)",
			  g->n_cols, k);
}

static void touch(struct tmax_ctx *x, uint32_t j, int64_t d)
{
	if (d == 0)
		return;
	if (!x->listed[j]) {
		x->listed[j] = 1;
		x->touched[x->n_touched++] = j;
	}
	x->delta[j] += d;
}

static void untouch(struct tmax_ctx *x)
{
	for (uint32_t i = 0; i < x->n_touched; i++) {
		x->delta[x->touched[i]] = 0;
		x->listed[x->touched[i]] = 0;
	}
	x->n_touched = 0;
}

/*
 * The change of every T_j if u moves from p to q (into delta/touched);
 * *dsum the change of T_sum, *madd the features q gains.
 */
static void eval_move(struct tmax_ctx *x, uint32_t u, uint32_t p, uint32_t q,
		      int64_t *dsum, uint64_t *madd)
{
	const struct parsa_graph *g = x->g;
	uint32_t k = x->k;
	int64_t s = 0;
	uint64_t add = 0;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		int lose = x->cnt[(size_t)v * k + p] == 1;
		int gain = x->cnt[(size_t)v * k + q] == 0;
		int64_t c, c2;

		if (!lose && !gain)
			continue;
		c = x->lam[v];
		c2 = c - lose + gain;
		touch(x, p, -lose);
		touch(x, q, gain);
		if (lose && x->owner[v] == p) {
			touch(x, p, -(c - 2));
			touch(x, q, c2 - 2);
		} else {
			touch(x, x->owner[v], c2 - c);
		}
		s += 2 * (gain - lose);
		add += (uint64_t)gain;
	}
	*dsum = s;
	*madd = add;
}

/* Make the move eval_move judged (delta still holds it); -1 (nothing
 * changed) when q's list cannot grow. */
static int apply_move(struct tmax_ctx *x, uint32_t u, uint32_t p, uint32_t q)
{
	const struct parsa_graph *g = x->g;
	uint32_t k = x->k;

	if (list_reserve(x, q)) {
		untouch(x);
		return -1;
	}

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		uint32_t *cp = &x->cnt[(size_t)v * k + p];
		uint32_t *cq = &x->cnt[(size_t)v * k + q];

		if (--*cp == 0) {
			x->used->bits[(uint64_t)v * x->words + (p >> 6)] &=
				~(1ULL << (p & 63));
			x->used->size[p]--;
			x->lam[v]--;
			if (x->owner[v] == p)
				x->owner[v] = q;
		}
		if ((*cq)++ == 0) {
			parsa_nbrset_add(x->used, v, q);
			x->lam[v]++;
		}
	}
	for (uint32_t i = 0; i < x->n_touched; i++) {
		x->T[x->touched[i]] += x->delta[x->touched[i]];
		x->tsum += x->delta[x->touched[i]];
	}
	untouch(x);
	x->part[u] = q;
	x->dirty[p] = x->dirty[q] = 1;
	x->usz[p]--;
	x->usz[q]++;
	list_remove(x, p, u);
	return list_push(x, q, u);
}

/* 1 when every part the evaluated move changes ends at most lim. */
static int within(const struct tmax_ctx *x, int64_t lim)
{
	for (uint32_t i = 0; i < x->n_touched; i++) {
		uint32_t j = x->touched[i];

		if (x->delta[j] > 0 && x->T[j] + x->delta[j] > lim)
			return 0;
	}
	return 1;
}

static int64_t tmax_of(const struct tmax_ctx *x, uint32_t *arg)
{
	int64_t m = x->T[0];
	uint32_t a = 0;

	for (uint32_t j = 1; j < x->k; j++)
		if (x->T[j] > m) {
			m = x->T[j];
			a = j;
		}
	if (arg)
		*arg = a;
	return m;
}

/* The move of u (in p) to q is allowed by m_limit and the T_sum cap
 * (delta of the move in x: madd features for q, ds on T_sum). */
static int caps_ok(const struct tmax_ctx *x, uint32_t q, uint64_t madd,
		   int64_t ds)
{
	return (madd == 0 || x->used->size[q] + madd <= x->o->m_limit) &&
	       (ds <= 0 || x->tsum + ds <= x->tsum_lim);
}

/*
 * The best target q for example u (now in part a) under T_max tm for the
 * busiest part p (p may be a or not; q != a, q != p): every T that rises
 * ends below tm, the caps kept, and with need_fall T_p ends below tm;
 * the lowest T_p afterwards, then the lowest T_sum, then the lowest
 * index.  UINT32_MAX when none.
 */
static uint32_t best_target(struct tmax_ctx *x, uint32_t u, uint32_t p,
			    int64_t tm, int need_fall)
{
	uint32_t a = x->part[u], best = UINT32_MAX;
	int64_t best_tp = 0, best_sum = 0;

	for (uint32_t q = 0; q < x->k; q++) {
		int64_t ds, tp;
		uint64_t madd;

		if (q == a || q == p || x->usz[q] + 1 > x->o->cap)
			continue;
		eval_move(x, u, a, q, &ds, &madd);
		tp = x->T[p] + x->delta[p];
		if ((!need_fall || tp < tm) && within(x, tm - 1) &&
		    caps_ok(x, q, madd, ds) &&
		    (best == UINT32_MAX || tp < best_tp ||
		     (tp == best_tp && ds < best_sum))) {
			best = q;
			best_tp = tp;
			best_sum = ds;
		}
		untouch(x);
	}
	return best;
}

/*
 * Phase 1, U side: u (now in part a) to its best target (best_target,
 * T_p ending below tm).  Makes the move.  1 if moved, 0 if none, -1 on
 * allocation failure.
 */
static int move_off(struct tmax_ctx *x, uint32_t u, uint32_t p, int64_t tm)
{
	uint32_t a = x->part[u], best = best_target(x, u, p, tm, 1);
	int64_t ds;

	if (best == UINT32_MAX)
		return 0;
	eval_move(x, u, a, best, &ds, &(uint64_t){ 0 });
	return apply_move(x, u, a, best) ? -1 : 1;
}

/* 1 when moving u out of its part would lower c_v of a feature p owns
 * (u is the only example of its part using it): a pull candidate. */
static int pulls(const struct tmax_ctx *x, uint32_t u, uint32_t p)
{
	const struct parsa_graph *g = x->g;
	uint32_t a = x->part[u];

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];

		if (x->owner[v] == p && x->cnt[(size_t)v * x->k + a] == 1)
			return 1;
	}
	return 0;
}

/* Phase 1, pull side: examples of other parts whose move lowers T_p (p
 * serves them a feature only they use in their part), from a random
 * start, while p is a busiest part; -1 on allocation failure, else the
 * number moved. */
static int64_t pull_in(struct tmax_ctx *x, uint32_t p, struct parsa_rng *r)
{
	uint32_t n = x->g->n_rows, s0 = n ? (uint32_t)parsa_rng_below(r, n) : 0;
	int64_t tm = tmax_of(x, NULL), moved = 0;

	for (uint32_t i = 0; i < n && x->T[p] == tm && !poll_stop(x); i++) {
		uint32_t u = (s0 + i) % n;
		int rc;

		if (x->part[u] == p || !pulls(x, u, p))
			continue;
		rc = move_off(x, u, p, tm);
		if (rc < 0)
			return -1;
		moved += rc;
		if (rc)
			tm = tmax_of(x, NULL);
	}
	return moved;
}

/*
 * For the swaps of busiest part p: per other part q, up to TMAX_PULL
 * examples whose move into p would help it most (into pp, UINT32_MAX for
 * none): the score of w is the number of its features it alone uses in
 * q and p uses too (their c_v would fall) less the number p does not use
 * (M_p would rise); only scores > 0, the highest first (ties: list
 * order).
 */
static void pull_partners(struct tmax_ctx *x, uint32_t p)
{
	const struct parsa_graph *g = x->g;
	uint32_t k = x->k;

	for (uint32_t q = 0; q < k; q++) {
		uint32_t *b = &x->pp[(size_t)q * TMAX_PULL];
		int64_t sc[TMAX_PULL];

		for (uint32_t t = 0; t < TMAX_PULL; t++)
			b[t] = UINT32_MAX, sc[t] = 0;
		x->pb[q] = 0;
		if (q == p)
			continue;
		for (uint32_t i = 0; i < x->mlen[q]; i++) {
			uint32_t w = x->mem[q][i];
			int64_t score = 0, fall = 0;

			for (uint64_t e = g->row_ptr[w]; e < g->row_ptr[w + 1]; e++) {
				uint32_t v = g->col[e];
				uint32_t cp = x->cnt[(size_t)v * k + p];
				int alone = x->cnt[(size_t)v * k + q] == 1;

				score += (cp > 0 && alone) - (cp == 0);
				/* eval_move(w, q, p) lowers T_p only here, by 1:
				 * c_v falls for a feature p owns, or p takes
				 * over from q a feature c_v = 2 leaves local */
				fall += cp > 0 && alone &&
					(x->owner[v] == p ||
					 (x->owner[v] == q && x->lam[v] == 2));
			}
			if (fall > x->pb[q])
				x->pb[q] = fall;
			for (uint32_t t = 0; t < TMAX_PULL; t++)
				if (score > sc[t]) {
					memmove(&b[t + 1], &b[t],
						(TMAX_PULL - 1 - t) * sizeof(*b));
					memmove(&sc[t + 1], &sc[t],
						(TMAX_PULL - 1 - t) * sizeof(*sc));
					b[t] = w;
					sc[t] = score;
					break;
				}
		}
	}
}

/* Partners tried per part for a swap. */
#define TMAX_SWAP_TRIES 16

/*
 * Phase 1, swap side (when no single move is left): u of the busiest
 * part p and w of another part q trade places (the sizes stay), made
 * only when T_p ends below tm and every T that rose ends below tm, and
 * every M that rose at most m_limit.  Tried for real: u's move is made,
 * w's evaluated on top, and u's move undone (counts, sets, owners, T)
 * when the pair fails.  w: up to TMAX_SWAP_TRIES random examples of q.
 * 1 if swapped, 0 if not, -1 on allocation failure.
 */
static int swap_off(struct tmax_ctx *x, uint32_t u, uint32_t p, int64_t tm,
		    struct parsa_rng *r, uint64_t *skipped)
{
	const struct parsa_graph *g = x->g;
	uint64_t e0 = g->row_ptr[u], deg = g->row_ptr[u + 1] - e0;

	for (uint32_t q = 0; q < x->k; q++) {
		int64_t ds;
		uint64_t madd;
		int done = 0;

		if (q == p || x->mlen[q] == 0)
			continue;
		eval_move(x, u, p, q, &ds, &madd);
		if (!x->o->exhaustive_swaps &&
		    x->T[p] + x->delta[p] - x->pb[q] >= tm) {
			/* no partner of q can bring T_p below tm (the
			 * state after u's move only lowers what a w can
			 * give): the pair fails.  What trying it would
			 * leave is left all the same, so the seeded path
			 * is the one of trying it: the draws of the tries,
			 * u at the end of p's list, p and q dirty */
			untouch(x);
			for (uint32_t t = 0; t < TMAX_SWAP_TRIES; t++)
				(void)parsa_rng_below(r, x->mlen[q] + 1);
			list_remove(x, p, u);
			(void)list_push(x, p, u); /* room: u's slot */
			x->dirty[p] = x->dirty[q] = 1;
			++*skipped;
			continue;
		}
		memcpy(x->T0, x->T, x->k * sizeof(*x->T0));
		memcpy(x->M0, x->used->size, x->k * sizeof(*x->M0));
		for (uint64_t i = 0; i < deg; i++)
			x->own0[i] = x->owner[g->col[e0 + i]];
		if (apply_move(x, u, p, q))
			return -1;
		for (uint32_t t = 0; t < TMAX_PULL + TMAX_SWAP_TRIES && !done;
		     t++) {
			uint32_t w = t < TMAX_PULL
					     ? x->pp[(size_t)q * TMAX_PULL + t]
					     : x->mem[q][parsa_rng_below(
						       r, x->mlen[q])];
			int ok;

			if (w == u || w == UINT32_MAX || x->part[w] != q)
				continue;
			eval_move(x, w, q, p, &ds, &madd);
			/* the pair as a whole within the T_sum cap (u's
			 * move alone may have passed it) */
			ok = x->T[p] + x->delta[p] < tm &&
			     x->tsum + ds <= x->tsum_lim;
			for (uint32_t j = 0; ok && j < x->k; j++) {
				int64_t t2 = x->T[j] + x->delta[j];
				uint64_t m2 = x->used->size[j] +
					      (j == p ? madd : 0);

				if ((t2 > x->T0[j] && t2 >= tm) ||
				    (m2 > x->M0[j] && m2 > x->o->m_limit))
					ok = 0;
			}
			if (!ok) {
				untouch(x);
				continue;
			}
			if (apply_move(x, w, q, p))
				return -1;
			done = 1;
		}
		if (done)
			return 1;
		/* undo u's move: counts and sets by the reverse move, then
		 * the owners and T as they were */
		eval_move(x, u, q, p, &ds, &madd);
		if (apply_move(x, u, q, p))
			return -1;
		for (uint64_t i = 0; i < deg; i++)
			x->owner[g->col[e0 + i]] = x->own0[i];
		memcpy(x->T, x->T0, x->k * sizeof(*x->T0));
	}
	return 0;
}

/* A feature of the busiest part and one of its examples using it. */
struct tmax_pair {
	uint32_t v, u;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct tmax_pair *x = a, *y = b;

	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return x->u < y->u ? -1 : x->u > y->u;
}

/*
 * Phase 1, group side (when no single move is left): for a feature v that
 * 2..TMAX_GROUP examples of the busiest part p use, those examples leave
 * p together (p stops using v): each in turn goes to its best target by
 * move_off's rule (every T that rises ends below tm, the caps kept) but
 * T_p need not fall before the last; the group is kept when T_p ends
 * below tm, else undone (the reverse moves, then the owners and T as they
 * were).  Groups in a seeded random order, up to the first kept.  *moved
 * receives the examples moved; 1 if a group moved, 0 if none, -1 on
 * allocation failure.
 */
static int group_off(struct tmax_ctx *x, uint32_t p, int64_t tm,
		     struct parsa_rng *r, uint64_t *moved)
{
	const struct parsa_graph *g = x->g;
	uint32_t k = x->k, n = x->mlen[p], ng = 0;
	size_t np = 0, at = 0;
	struct tmax_pair *pr;
	uint32_t *gs;
	int res = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t u = x->mem[p][i];

		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t c = x->cnt[(size_t)g->col[e] * k + p];

			np += c >= 2 && c <= TMAX_GROUP;
		}
	}
	if (np == 0)
		return 0;
	pr = malloc(np * sizeof(*pr));
	gs = malloc(np * sizeof(*gs));
	if (!pr || !gs) {
		free(pr);
		free(gs);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t u = x->mem[p][i];

		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t v = g->col[e], c = x->cnt[(size_t)v * k + p];

			if (c >= 2 && c <= TMAX_GROUP)
				pr[at++] = (struct tmax_pair){ v, u };
		}
	}
	qsort(pr, np, sizeof(*pr), pair_cmp);
	for (size_t i = 0; i < np; i++)
		if (i == 0 || pr[i].v != pr[i - 1].v)
			gs[ng++] = (uint32_t)i;
	parsa_rng_shuffle_u32(r, gs, ng);
	for (uint32_t gi = 0; gi < ng && res == 0 && !poll_stop(x); gi++) {
		uint32_t v = pr[gs[gi]].v, mv[TMAX_GROUP], nm = 0;
		size_t no = 0;

		memcpy(x->T0, x->T, k * sizeof(*x->T0));
		for (size_t i = gs[gi]; i < np && pr[i].v == v && nm < TMAX_GROUP;
		     i++) {
			uint32_t u = pr[i].u, best;
			int64_t ds;
			uint64_t madd;

			if (x->part[u] != p)
				continue;
			best = best_target(x, u, p, tm, 0);
			if (best == UINT32_MAX)
				break;
			for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
				x->gown[no++] = x->owner[g->col[e]];
			eval_move(x, u, p, best, &ds, &madd);
			if (apply_move(x, u, p, best)) {
				res = -1;
				break;
			}
			mv[nm++] = u;
		}
		if (res == 0 && nm > 0 && x->T[p] < tm) {
			*moved += nm;
			res = 1;
			break;
		}
		/* undo: the reverse moves, then the owners (latest first, so
		 * each ends as it was before the group) and T */
		for (uint32_t i = nm; i-- > 0 && res == 0;) {
			uint32_t u = mv[i], q = x->part[u];
			int64_t ds;
			uint64_t madd;

			eval_move(x, u, q, p, &ds, &madd);
			if (apply_move(x, u, q, p))
				res = -1;
		}
		if (res)
			break;
		for (uint32_t i = nm; i-- > 0;) {
			uint32_t u = mv[i];

			for (uint64_t e = g->row_ptr[u + 1]; e-- > g->row_ptr[u];)
				x->owner[g->col[e]] = x->gown[--no];
		}
		memcpy(x->T, x->T0, k * sizeof(*x->T0));
	}
	free(pr);
	free(gs);
	return res;
}

/* The user of v with the lowest T other than skip (ties: lowest index). */
static uint32_t min_user(const struct tmax_ctx *x, uint32_t v, uint32_t skip)
{
	const uint64_t *m = parsa_nbrset_mask(x->used, v);
	uint32_t best = UINT32_MAX;

	for (uint32_t w = 0; w < x->words; w++)
		for (uint64_t b = m[w]; b; b &= b - 1) {
			uint32_t j = w * 64 + (uint32_t)__builtin_ctzll(b);

			if (j != skip && (best == UINT32_MAX || x->T[j] < x->T[best]))
				best = j;
		}
	return best;
}

/* Phase 1, V side: features owned by p pass to other users while p is a
 * busiest part; the number moved. */
static uint64_t give_away(struct tmax_ctx *x, uint32_t p)
{
	uint64_t moved = 0;
	int64_t tm = tmax_of(x, NULL);

	for (uint32_t v = 0; v < x->g->n_cols && x->T[p] == tm; v++) {
		int64_t gain = (int64_t)x->lam[v] - 2;
		uint32_t xi;

		if (x->owner[v] != p || x->lam[v] < 3 || poll_stop(x))
			continue;
		xi = min_user(x, v, p);
		if (xi == UINT32_MAX || x->T[xi] + gain >= tm)
			continue;
		x->T[p] -= gain;
		x->T[xi] += gain;
		x->owner[v] = xi;
		moved++;
		tm = tmax_of(x, NULL);
	}
	return moved;
}

/*
 * Phase 1, V side, when no feature of p can pass alone: owners trade.  A
 * feature v owned by p (c_v >= 3) passes to a user q of it while a
 * feature w owned by q and used by p passes to p, when T_p and T_q both
 * end below tm (so c_w < c_v); for the first v (index order) and q
 * (index order) with such a w, the w that leaves max(T_p, T_q) lowest.
 * 1 if traded, 0 if not, -1 on allocation failure.
 */
static int trade_owners(struct tmax_ctx *x, uint32_t p, int64_t tm)
{
	uint32_t k = x->k, nv = x->g->n_cols, *ost, *ol;
	int res = 0;

	ost = calloc((size_t)k + 1, sizeof(*ost));
	ol = malloc(((size_t)nv + 1) * sizeof(*ol));
	if (!ost || !ol) {
		free(ost);
		free(ol);
		return -1;
	}
	/* the features of lam >= 3 by owner */
	for (uint32_t v = 0; v < nv; v++)
		if (x->lam[v] >= 3)
			ost[x->owner[v] + 1]++;
	for (uint32_t j = 0; j < k; j++)
		ost[j + 1] += ost[j];
	{
		uint32_t *fill = x->touched; /* k entries, free between moves */

		memcpy(fill, ost, (size_t)k * sizeof(*fill));
		for (uint32_t v = 0; v < nv; v++)
			if (x->lam[v] >= 3)
				ol[fill[x->owner[v]]++] = v;
	}
	for (uint32_t i = ost[p]; i < ost[p + 1] && !res && !poll_stop(x); i++) {
		uint32_t v = ol[i];
		int64_t gv = (int64_t)x->lam[v] - 2;
		const uint64_t *m = parsa_nbrset_mask(x->used, v);

		for (uint32_t wd = 0; wd < x->words && !res; wd++)
			for (uint64_t b = m[wd]; b && !res; b &= b - 1) {
				uint32_t q = wd * 64 + (uint32_t)__builtin_ctzll(b);
				uint32_t bw = UINT32_MAX;
				int64_t bhi = 0;

				if (q == p)
					continue;
				for (uint32_t t = ost[q]; t < ost[q + 1]; t++) {
					uint32_t w = ol[t];
					int64_t gw = (int64_t)x->lam[w] - 2;
					int64_t tp = x->T[p] - gv + gw;
					int64_t tq = x->T[q] + gv - gw;
					int64_t hi = tp > tq ? tp : tq;

					if (tp < tm && tq < tm &&
					    parsa_nbrset_has(x->used, w, p) &&
					    (bw == UINT32_MAX || hi < bhi)) {
						bw = w;
						bhi = hi;
					}
				}
				if (bw == UINT32_MAX)
					continue;
				x->T[p] += (int64_t)x->lam[bw] - 2 - gv;
				x->T[q] += gv - ((int64_t)x->lam[bw] - 2);
				x->owner[v] = q;
				x->owner[bw] = p;
				res = 1;
			}
	}
	free(ost);
	free(ol);
	return res;
}

static int phase1(struct tmax_ctx *x, struct parsa_tmax_stats *st,
		  struct parsa_rng *r)
{
	while (st->rounds < x->o->passes && !poll_stop(x)) {
		uint32_t p, n;
		int64_t tm = tmax_of(x, &p);
		int moved = 0;

		st->rounds++;
		n = x->mlen[p];
		if (n) /* an empty part's list may not exist */
			memcpy(x->scratch, x->mem[p], (size_t)n * sizeof(uint32_t));
		parsa_rng_shuffle_u32(r, x->scratch, n);
		for (uint32_t i = 0; i < n && !poll_stop(x); i++) {
			int rc = move_off(x, x->scratch[i], p, tm);

			if (rc < 0)
				return -1;
			if (rc == 0)
				continue;
			moved = 1;
			st->u_moves++;
			tm = tmax_of(x, NULL);
			if (x->T[p] < tm)
				break; /* another part is the busiest now */
		}
		if (!moved && !x->stopped) {
			uint64_t vm = give_away(x, p);

			st->v_moves += vm;
			moved = vm > 0;
		}
		if (!moved && !x->stopped) {
			int rc = trade_owners(x, p, tm);

			if (rc < 0)
				return -1;
			st->v_trades += (uint64_t)rc;
			moved = rc;
		}
		if (!moved && !x->stopped) {
			int64_t pm = pull_in(x, p, r);

			if (pm < 0)
				return -1;
			st->pull_moves += (uint64_t)pm;
			moved = pm > 0;
		}
		if (!moved && !x->stopped) {
			int rc = group_off(x, p, tm, r, &st->group_moves);

			if (rc < 0)
				return -1;
			moved = rc;
		}
		if (!moved && !x->stopped)
			pull_partners(x, p);
		for (uint32_t i = 0; !moved && !x->stopped && i < n; i++) {
			int rc;

			if (x->part[x->scratch[i]] != p || poll_stop(x))
				continue;
			rc = swap_off(x, x->scratch[i], p, tm, r,
				      &st->swap_pairs_skipped);
			if (rc < 0)
				return -1;
			st->swaps += (uint64_t)rc;
			moved = rc;
		}
		if (!moved)
			break; /* a busiest part with no move left */
	}
	return 0;
}

/* Phase 2: T_sum moves, every changed T at most tm. */
static int polish(struct tmax_ctx *x, struct parsa_tmax_stats *st,
		  struct parsa_rng *r, int64_t tm)
{
	const struct parsa_graph *g = x->g;

	for (uint32_t pass = 0; pass < x->o->polish_passes; pass++) {
		uint64_t before = st->polish_moves;

		for (uint32_t u = 0; u < g->n_rows; u++)
			x->scratch[u] = u;
		parsa_rng_shuffle_u32(r, x->scratch, g->n_rows);
		for (uint32_t i = 0; i < g->n_rows && !poll_stop(x); i++) {
			uint32_t u = x->scratch[i], p = x->part[u], w = 0, q;
			uint32_t best = UINT32_MAX;
			int64_t best_sum = 0;

			if (x->only_dirty && !x->dirty[p])
				continue;

			memset(x->mask, 0, x->words * sizeof(*x->mask));
			for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1];
			     e++) {
				const uint64_t *m =
					parsa_nbrset_mask(x->used, g->col[e]);

				for (uint32_t j = 0; j < x->words; j++)
					x->mask[j] |= m[j];
			}
			x->mask[p >> 6] &= ~(1ULL << (p & 63));
			while ((q = parsa_conn_pop(x->mask, x->words, &w)) !=
			       UINT32_MAX) {
				int64_t ds;
				uint64_t madd;

				if (x->usz[q] + 1 > x->o->cap)
					continue;
				eval_move(x, u, p, q, &ds, &madd);
				if (ds < best_sum && within(x, tm) &&
				    caps_ok(x, q, madd, ds)) {
					best = q;
					best_sum = ds;
				}
				untouch(x);
			}
			if (best == UINT32_MAX)
				continue;
			eval_move(x, u, p, best, &best_sum, &(uint64_t){ 0 });
			if (apply_move(x, u, p, best))
				return -1;
			st->polish_moves++;
		}
		if (x->stopped || st->polish_moves == before)
			break;
	}
	return 0;
}

static uint64_t tsum_of(const struct tmax_ctx *x)
{
	int64_t s = 0;

	for (uint32_t j = 0; j < x->k; j++)
		s += x->T[j];
	return (uint64_t)s;
}

/* Phase 1 then phase 2, up to o->cycles times while a cycle lowers T_max;
 * 0 or -1 (allocation failure). */
static int search(struct tmax_ctx *x, struct parsa_tmax_stats *s,
		  struct parsa_rng *r)
{
	int rc = 0;

	for (uint32_t c = 0; rc == 0 && c < (x->o->cycles ? x->o->cycles : 1) &&
			     !x->stopped; c++) {
		int64_t before = tmax_of(x, NULL);

		rc = phase1(x, s, r);
		if (rc == 0)
			rc = polish(x, s, r, tmax_of(x, NULL));
		if (c > 0 && tmax_of(x, NULL) >= before)
			break; /* this cycle did not lower T_max */
	}
	return rc;
}

/* T_i from the counts and owners (after a restore). */
static void recount_T(struct tmax_ctx *x)
{
	for (uint32_t j = 0; j < x->k; j++)
		x->T[j] = (int64_t)x->used->size[j];
	for (uint32_t v = 0; v < x->g->n_cols; v++)
		if (x->lam[v] > 0)
			x->T[x->owner[v]] += (int64_t)x->lam[v] - 2;
}

/*
 * A kick: from every busiest part, size random examples go, each to the
 * part with the lowest T after it among those the balance cap and m_limit
 * allow (T_max may rise).  0 or -1 (allocation failure).
 */
static int kick(struct tmax_ctx *x, struct parsa_rng *r, uint32_t size)
{
	int64_t tm = tmax_of(x, NULL);

	for (uint32_t p = 0; p < x->k; p++) {
		if (x->T[p] != tm)
			continue;
		for (uint32_t t = 0; t < size && x->mlen[p] > 0; t++) {
			uint32_t u = x->mem[p][parsa_rng_below(r, x->mlen[p])];
			uint32_t best = UINT32_MAX;
			int64_t best_t = 0, ds;
			uint64_t madd;

			for (uint32_t q = 0; q < x->k; q++) {
				if (q == p || x->usz[q] + 1 > x->o->cap)
					continue;
				eval_move(x, u, p, q, &ds, &madd);
				if (caps_ok(x, q, madd, ds) &&
				    (best == UINT32_MAX ||
				     x->T[q] + x->delta[q] < best_t)) {
					best = q;
					best_t = x->T[q] + x->delta[q];
				}
				untouch(x);
			}
			if (best == UINT32_MAX)
				continue;
			eval_move(x, u, p, best, &ds, &madd);
			if (apply_move(x, u, p, best))
				return -1;
		}
	}
	return 0;
}

/* Back to the placement (bpart, bown): the examples moved back, then the
 * owners and T.  0 or -1 (allocation failure). */
static int restore(struct tmax_ctx *x, const uint32_t *bpart,
		   const uint32_t *bown)
{
	for (uint32_t u = 0; u < x->g->n_rows; u++) {
		int64_t ds;
		uint64_t madd;

		if (x->part[u] == bpart[u])
			continue;
		eval_move(x, u, x->part[u], bpart[u], &ds, &madd);
		if (apply_move(x, u, x->part[u], bpart[u]))
			return -1;
	}
	memcpy(x->owner, bown, (size_t)x->g->n_cols * sizeof(*bown));
	recount_T(x);
	x->tsum = (int64_t)tsum_of(x);
	return 0;
}

/*
 * The search, then o->kicks times: a kick of the best placement so far,
 * the search again, kept when (T_max, T_sum) is lower, else undone (an
 * iterated local search); then, where o->kick_levels asks, kicks twice,
 * four times ... as large (a variable neighbourhood: each size until
 * o->kick_patience_more in a row kept nothing, o->kick_more of them in
 * all).  The kicks of kick_size are the same as without the larger ones,
 * so the result is never above theirs.  Ends on the best placement.  0 or
 * -1.
 */
static int search_kicks(struct tmax_ctx *x, struct parsa_tmax_stats *s,
			struct parsa_rng *r)
{
	const struct parsa_graph *g = x->g;
	uint32_t *bpart, *bown;
	int64_t bt, bs;
	int rc = search(x, s, r);

	if (rc || x->o->kicks == 0 || x->stopped)
		return rc;
	bpart = malloc(((size_t)g->n_rows + 1) * sizeof(*bpart));
	bown = malloc(((size_t)g->n_cols + 1) * sizeof(*bown));
	if (!bpart || !bown) {
		free(bpart);
		free(bown);
		return -1;
	}
	memcpy(bpart, x->part, (size_t)g->n_rows * sizeof(*bpart));
	memcpy(bown, x->owner, (size_t)g->n_cols * sizeof(*bown));
	bt = tmax_of(x, NULL);
	bs = (int64_t)tsum_of(x);
	for (uint32_t i = 0, more = 0, idle = 0, level = 0;
	     rc == 0 && !poll_stop(x); i++) {
		int64_t t, sum;
		uint32_t size = x->o->kick_size ? x->o->kick_size : 1;

		if (level == 0 &&
		    (i >= x->o->kicks ||
		     (x->o->kick_patience && idle >= x->o->kick_patience))) {
			/* the kicks of kick_size are over: twice larger */
			level = 1;
			idle = 0;
		}
		if (level > 0 && idle >= (x->o->kick_patience_more
						  ? x->o->kick_patience_more
						  : 1)) {
			level++; /* these stopped paying: larger again */
			idle = 0;
		}
		if (level > (x->o->kick_levels < 16 ? x->o->kick_levels : 16) ||
		    (level > 0 && more++ >= x->o->kick_more))
			break;
		size <<= level;
		memset(x->dirty, 0, x->k * sizeof(*x->dirty));
		x->only_dirty = 1;
		rc = kick(x, r, size);
		if (rc == 0)
			rc = search(x, s, r);
		x->only_dirty = 0;
		if (rc)
			break;
		s->kicks++;
		t = tmax_of(x, NULL);
		sum = (int64_t)tsum_of(x);
		idle++;
		if (t < bt || (t == bt && sum < bs)) {
			idle = 0;
			s->kicks_kept++;
			bt = t;
			bs = sum;
			memcpy(bpart, x->part, (size_t)g->n_rows * sizeof(*bpart));
			memcpy(bown, x->owner, (size_t)g->n_cols * sizeof(*bown));
		} else {
			rc = restore(x, bpart, bown);
		}
	}
	if (rc == 0 && (tmax_of(x, NULL) != bt || (int64_t)tsum_of(x) != bs))
		rc = restore(x, bpart, bown);
	free(bpart);
	free(bown);
	return rc;
}

int parsa_tmax_refine(const struct parsa_graph *g, uint32_t *part,
		      struct parsa_nbrset *used, uint32_t *owner,
		      const struct parsa_tmax_opts *o, uint64_t *T,
		      struct parsa_tmax_stats *st, struct parsa_err *err)
{
	struct tmax_ctx x;
	struct parsa_tmax_stats s;
	struct parsa_rng r;
	int rc;

	memset(&s, 0, sizeof(s));
	if (!g || !part || !used || !owner || !o || used->k == 0 ||
	    used->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "tmax refinement: bad arguments");
	rc = ctx_init(&x, g, part, used, owner, o, err);
	if (rc)
		return rc;
	parsa_rng_seed(&r, o->seed);
	s.tmax_before = (uint64_t)tmax_of(&x, NULL);
	s.tsum_before = tsum_of(&x);
	x.tsum = (int64_t)s.tsum_before;
	x.tsum_lim = INT64_MAX;
	if (o->tsum_cap && o->tsum_cap < (uint64_t)INT64_MAX)
		x.tsum_lim = (int64_t)(o->tsum_cap > s.tsum_before
					       ? o->tsum_cap
					       : s.tsum_before);
	if (x.k > 1)
		rc = search_kicks(&x, &s, &r);
	if (rc) {
		/* a list could not grow: the moves so far are kept (each
		 * is exact and the placement valid) */
		ctx_free(&x);
		return parsa_fail(err, PARSA_ENOMEM,
				  "tmax refinement: out of memory");
	}
	s.tmax_after = (uint64_t)tmax_of(&x, NULL);
	s.tsum_after = tsum_of(&x);
	s.stopped = x.stopped;
	for (uint32_t j = 0; T && j < x.k; j++)
		T[j] = (uint64_t)x.T[j];
	if (st)
		*st = s;
	ctx_free(&x);
	return 0;
}
