/*
 * parsa_rb: recursive bisection with multi-start FM (see parsa_rb.h).
 *
 * A bisection works on a sub-hypergraph (struct hg) with local vertex ids
 * and only the nets that have at least two pins in it (a net with one pin
 * cannot be cut).  struct fm holds the state of one bisection: sides, pin
 * counts per net and side, gains and the gain buckets of free vertices.
 */
#include "parsa_rb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_rng.h"

#define NONE UINT32_MAX
#define RB_MAX_PASSES 16
#define RB_ML_COARSEST 160  /* multilevel starts: coarsest vertices */
#define RB_ML_MAXW_DIV 80   /* a cluster weighs at most wsum / this */
#define RB_ML_PIN_BUDGET 2048 /* pins rated per vertex at most */
#define RB_ML_NET_MAX 256   /* larger nets are not rated */
#define RB_ML_LEVELS 40

/* A sub-hypergraph: n vertices (global row vid[i], weight w[i]) and m nets
 * of >= 2 pins; vertex -> nets (vptr/vnet) and net -> pins (eptr/epin). */
struct hg {
	uint32_t n, m;
	uint32_t *vid, *w;
	uint64_t *vptr, *eptr;
	uint32_t *vnet, *epin;
	uint64_t wsum;
};

static void hg_release(struct hg *h)
{
	free(h->vid);
	free(h->w);
	free(h->vptr);
	free(h->eptr);
	free(h->vnet);
	free(h->epin);
	memset(h, 0, sizeof(*h));
}

/* After a fill that advanced each ptr[i] to the end of its run, put the
 * starts back: ptr[i] := ptr[i - 1], ptr[0] := 0 (n + 1 entries). */
static void shift_back(uint64_t *ptr, uint32_t n)
{
	for (uint32_t i = n; i > 0; i--)
		ptr[i] = ptr[i - 1];
	ptr[0] = 0;
}

/* h->vptr/vnet from h->eptr/epin (the pins' transpose); n, m set. */
static int hg_vertex_side(struct hg *h)
{
	uint64_t pins = h->m ? h->eptr[h->m] : 0;

	h->vptr = calloc((size_t)h->n + 1, sizeof(uint64_t));
	h->vnet = malloc((pins ? pins : 1) * sizeof(uint32_t));
	if (!h->vptr || !h->vnet)
		return PARSA_ENOMEM;
	for (uint64_t p = 0; p < pins; p++)
		h->vptr[h->epin[p] + 1]++;
	for (uint32_t v = 0; v < h->n; v++)
		h->vptr[v + 1] += h->vptr[v];
	for (uint32_t e = 0; e < h->m; e++)
		for (uint64_t p = h->eptr[e]; p < h->eptr[e + 1]; p++)
			h->vnet[h->vptr[h->epin[p]]++] = e;
	shift_back(h->vptr, h->n);
	return 0;
}

/* The top hypergraph of g: every row, the columns with >= 2 pins. */
static int hg_top(struct hg *h, const struct parsa_graph *g,
		  const uint32_t *w)
{
	uint64_t nnz = parsa_graph_nnz(g), pins = 0;
	uint32_t *cnt = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	uint32_t *id = malloc(((size_t)g->n_cols + 1) * sizeof(uint32_t));
	int rc = 0;

	memset(h, 0, sizeof(*h));
	h->n = g->n_rows;
	h->vid = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	h->w = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	if (!cnt || !id || !h->vid || !h->w) {
		rc = PARSA_ENOMEM;
		goto out;
	}
	for (uint32_t r = 0; r < h->n; r++) {
		h->vid[r] = r;
		h->w[r] = w ? w[r] : 1;
		h->wsum += h->w[r];
	}
	for (uint64_t e = 0; e < nnz; e++)
		cnt[g->col[e]]++;
	for (uint32_t c = 0; c < g->n_cols; c++) {
		id[c] = cnt[c] >= 2 ? h->m++ : NONE;
		if (cnt[c] >= 2)
			pins += cnt[c];
	}
	h->eptr = calloc((size_t)h->m + 1, sizeof(uint64_t));
	h->epin = malloc((pins ? pins : 1) * sizeof(uint32_t));
	if (!h->eptr || !h->epin) {
		rc = PARSA_ENOMEM;
		goto out;
	}
	for (uint32_t c = 0; c < g->n_cols; c++)
		if (id[c] != NONE)
			h->eptr[id[c] + 1] = cnt[c];
	for (uint32_t e = 0; e < h->m; e++)
		h->eptr[e + 1] += h->eptr[e];
	for (uint32_t r = 0; r < h->n; r++) /* pins in row order */
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			if (id[g->col[e]] != NONE)
				h->epin[h->eptr[id[g->col[e]]]++] = r;
	shift_back(h->eptr, h->m);
	rc = hg_vertex_side(h);
out:
	free(cnt);
	free(id);
	if (rc)
		hg_release(h);
	return rc;
}

/* s := the side-`which` part of h (side[v] == which), with every net's
 * pins there kept when there are >= 2 of them (net splitting). */
static int hg_split(const struct hg *h, const uint8_t *side, uint8_t which,
		    struct hg *s)
{
	uint32_t *loc = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	uint64_t pins = 0;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	if (!loc)
		return PARSA_ENOMEM;
	for (uint32_t v = 0; v < h->n; v++)
		loc[v] = side[v] == which ? s->n++ : NONE;
	s->vid = malloc(((size_t)s->n + 1) * sizeof(uint32_t));
	s->w = malloc(((size_t)s->n + 1) * sizeof(uint32_t));
	s->eptr = malloc(((size_t)h->m + 1) * sizeof(uint64_t));
	if (!s->vid || !s->w || !s->eptr) {
		rc = PARSA_ENOMEM;
		goto out;
	}
	for (uint32_t v = 0; v < h->n; v++)
		if (loc[v] != NONE) {
			s->vid[loc[v]] = h->vid[v];
			s->w[loc[v]] = h->w[v];
			s->wsum += h->w[v];
		}
	for (uint32_t e = 0; e < h->m; e++) {
		uint32_t c = 0;

		for (uint64_t p = h->eptr[e]; p < h->eptr[e + 1]; p++)
			c += side[h->epin[p]] == which;
		if (c >= 2)
			pins += c;
	}
	/* + 1: a net's lone pin is written before it is dropped */
	s->epin = malloc((pins + 1) * sizeof(uint32_t));
	if (!s->epin) {
		rc = PARSA_ENOMEM;
		goto out;
	}
	s->eptr[0] = 0;
	for (uint32_t e = 0; e < h->m; e++) {
		uint64_t at = s->eptr[s->m];

		for (uint64_t p = h->eptr[e]; p < h->eptr[e + 1]; p++)
			if (side[h->epin[p]] == which)
				s->epin[at++] = loc[h->epin[p]];
		if (at - s->eptr[s->m] >= 2)
			s->eptr[++s->m] = at;
	}
	rc = hg_vertex_side(s);
out:
	free(loc);
	if (rc)
		hg_release(s);
	return rc;
}

/* ------------------------------------------------------------ bisection */

struct fm {
	const struct hg *h;
	uint8_t *side;
	uint8_t *locked;
	uint32_t *pc;          /* 2m: pins of net e on side 0, 1 */
	uint64_t *ps;          /* 2m: the sum of those pins' ids, so a lone
				* pin is found without a scan */
	int32_t *gain;         /* gain of moving v to the other side */
	uint32_t *tie;         /* random order of the vertices (a try's) */
	/* the free vertices of side s in gain buckets: head[s][g + G] the
	 * last one pushed with gain g (|g| <= G, the largest degree), a
	 * doubly-linked list through next/prev; top[s] >= the highest
	 * non-empty bucket */
	uint32_t *head[2];
	uint32_t *next, *prev;
	uint8_t *inq;
	int64_t top[2];
	uint32_t qn[2], G;
	uint32_t *moves;
	uint64_t W[2], max[2];
	uint64_t cut;
};

static void q_push(struct fm *f, uint32_t v)
{
	uint8_t s = f->side[v];
	int64_t b = (int64_t)f->gain[v] + f->G;
	uint32_t x = f->head[s][b];

	f->next[v] = x;
	f->prev[v] = NONE;
	if (x != NONE)
		f->prev[x] = v;
	f->head[s][b] = v;
	if (b > f->top[s])
		f->top[s] = b;
	f->inq[v] = 1;
	f->qn[s]++;
}

static void q_remove(struct fm *f, uint32_t v)
{
	uint8_t s = f->side[v];

	if (f->prev[v] != NONE)
		f->next[f->prev[v]] = f->next[v];
	else
		f->head[s][(int64_t)f->gain[v] + f->G] = f->next[v];
	if (f->next[v] != NONE)
		f->prev[f->next[v]] = f->prev[v];
	f->inq[v] = 0;
	f->qn[s]--;
}

/* The free vertex of side s with the highest gain (NONE: none). */
static uint32_t q_top(struct fm *f, uint8_t s)
{
	if (!f->qn[s])
		return NONE;
	while (f->head[s][f->top[s]] == NONE)
		f->top[s]--;
	return f->head[s][f->top[s]];
}

static void q_clear(struct fm *f)
{
	memset(f->head[0], 0xff, (2 * (size_t)f->G + 1) * sizeof(uint32_t));
	memset(f->head[1], 0xff, (2 * (size_t)f->G + 1) * sizeof(uint32_t));
	memset(f->inq, 0, f->h->n);
	f->top[0] = f->top[1] = -1;
	f->qn[0] = f->qn[1] = 0;
}

/* gain[u] += d (u free), moving u to its new bucket when queued. */
static void bump(struct fm *f, uint32_t u, int32_t d)
{
	if (!f->inq[u]) {
		f->gain[u] += d;
		return;
	}
	q_remove(f, u);
	f->gain[u] += d;
	q_push(f, u);
}

/* Add d to the gains of the free pins of e other than v. */
static void bump_net(struct fm *f, uint32_t e, uint32_t v, int32_t d)
{
	const struct hg *h = f->h;

	for (uint64_t p = h->eptr[e]; p < h->eptr[e + 1]; p++) {
		uint32_t u = h->epin[p];

		if (u != v && !f->locked[u])
			bump(f, u, d);
	}
}

/*
 * Move v to the other side: pin counts, cut, weights, and (gains set)
 * the FM gain updates of its nets' free pins.  v must be out of the
 * buckets.
 */
static void fm_move(struct fm *f, uint32_t v, int gains)
{
	const struct hg *h = f->h;
	uint8_t F = f->side[v], T = (uint8_t)!F;

	for (uint64_t p = h->vptr[v]; p < h->vptr[v + 1]; p++) {
		uint32_t e = h->vnet[p], *c = f->pc + 2 * (uint64_t)e;
		uint64_t *sum = f->ps + 2 * (uint64_t)e;
		int cut0 = c[0] && c[1];

		if (gains) {
			if (c[T] == 0) {
				bump_net(f, e, v, 1);
			} else if (c[T] == 1) { /* the lone pin on T */
				uint32_t u = (uint32_t)sum[T];

				if (!f->locked[u])
					bump(f, u, -1);
			}
		}
		c[F]--;
		c[T]++;
		sum[F] -= v;
		sum[T] += v;
		if (gains) {
			if (c[F] == 0) {
				bump_net(f, e, v, -1);
			} else if (c[F] == 1) { /* the lone pin left on F */
				uint32_t u = (uint32_t)sum[F];

				if (!f->locked[u])
					bump(f, u, 1);
			}
		}
		f->cut += (uint64_t)(c[0] && c[1]) - (uint64_t)cut0;
	}
	f->side[v] = T;
	f->W[F] -= h->w[v];
	f->W[T] += h->w[v];
}

/* Pin counts, cut and weights from f->side. */
static void fm_count(struct fm *f)
{
	const struct hg *h = f->h;

	memset(f->pc, 0, 2 * (size_t)h->m * sizeof(uint32_t));
	memset(f->ps, 0, 2 * (size_t)h->m * sizeof(uint64_t));
	f->W[0] = f->W[1] = 0;
	f->cut = 0;
	for (uint32_t v = 0; v < h->n; v++) {
		f->W[f->side[v]] += h->w[v];
		for (uint64_t p = h->vptr[v]; p < h->vptr[v + 1]; p++) {
			f->pc[2 * (uint64_t)h->vnet[p] + f->side[v]]++;
			f->ps[2 * (uint64_t)h->vnet[p] + f->side[v]] += v;
		}
	}
	for (uint32_t e = 0; e < h->m; e++)
		f->cut += f->pc[2 * (uint64_t)e] && f->pc[2 * (uint64_t)e + 1];
}

static void fm_gains(struct fm *f)
{
	const struct hg *h = f->h;

	for (uint32_t v = 0; v < h->n; v++) {
		int32_t gn = 0;
		uint8_t F = f->side[v];

		for (uint64_t p = h->vptr[v]; p < h->vptr[v + 1]; p++) {
			const uint32_t *c = f->pc + 2 * (uint64_t)h->vnet[p];

			gn += (c[F] == 1) - (c[!F] == 0);
		}
		f->gain[v] = gn;
	}
}

static uint64_t overweight(const struct fm *f)
{
	return (f->W[0] > f->max[0] ? f->W[0] - f->max[0] : 0) +
	       (f->W[1] > f->max[1] ? f->W[1] - f->max[1] : 0);
}

/* One FM pass; 1 if it improved (overweight, then cut). */
static int fm_pass(struct fm *f)
{
	const struct hg *h = f->h;
	uint64_t best_over = overweight(f), best_cut = f->cut;
	uint32_t nm = 0, best_i = 0;
	uint32_t limit = h->n / 4 > 64 ? h->n / 4 : 64;

	fm_gains(f);
	q_clear(f);
	for (uint32_t i = 0; i < h->n; i++) { /* a try's random order */
		f->locked[f->tie[i]] = 0;
		q_push(f, f->tie[i]);
	}
	while (nm - best_i <= limit) {
		uint32_t pick = NONE;

		for (uint8_t s = 0; s < 2; s++) {
			/* the best free vertex of side s that fits on the
			 * other side (or lightens an overweight side) */
			uint32_t v;

			while ((v = q_top(f, s)) != NONE) {
				int fits = f->W[!s] + h->w[v] <= f->max[!s] ||
					   (f->W[s] > f->max[s] &&
					    f->W[!s] + h->w[v] <= f->W[s]);

				if (fits)
					break;
				q_remove(f, v);
				f->locked[v] = 1;
			}
			/* ties: from the heavier side */
			if (v != NONE && (pick == NONE || f->gain[v] > f->gain[pick] ||
					  (f->gain[v] == f->gain[pick] &&
					   f->W[s] > f->W[!s])))
				pick = v;
		}
		if (pick == NONE)
			break;
		q_remove(f, pick);
		f->locked[pick] = 1;
		fm_move(f, pick, 1);
		f->moves[nm++] = pick;
		{
			uint64_t over = overweight(f);

			if (over < best_over ||
			    (over == best_over && f->cut < best_cut)) {
				best_over = over;
				best_cut = f->cut;
				best_i = nm;
			}
		}
	}
	while (nm > best_i) /* roll back to the best prefix */
		fm_move(f, f->moves[--nm], 0);
	return best_i > 0;
}

/* Greedy hypergraph growing: side 0 grows from a random vertex by best
 * gain until it reaches target0. */
static void grow(struct fm *f, uint64_t target0, struct parsa_rng *rng)
{
	const struct hg *h = f->h;
	uint32_t v = (uint32_t)parsa_rng_below(rng, h->n);

	for (uint32_t u = 0; u < h->n; u++) {
		f->side[u] = 1;
		f->locked[u] = 0;
	}
	fm_count(f);
	fm_gains(f);
	q_clear(f);
	for (uint32_t i = 0; i < h->n; i++)
		q_push(f, f->tie[i]);
	while (f->W[0] < target0) {
		if (v == NONE) {
			while ((v = q_top(f, 1)) != NONE &&
			       f->W[0] + h->w[v] > f->max[0]) {
				q_remove(f, v);
				f->locked[v] = 1;
			}
			if (v == NONE)
				break;
		}
		q_remove(f, v);
		f->locked[v] = 1;
		fm_move(f, v, 1);
		v = NONE;
	}
}

/* Random fill: vertices in random order go to side 0 while it is below
 * target0 and they fit. */
static void fill(struct fm *f, uint64_t target0, struct parsa_rng *rng)
{
	const struct hg *h = f->h;
	uint64_t w0 = 0;

	for (uint32_t u = 0; u < h->n; u++) {
		f->side[u] = 1;
		f->moves[u] = u;
	}
	parsa_rng_shuffle_u32(rng, f->moves, h->n);
	for (uint32_t i = 0; i < h->n && w0 < target0; i++) {
		uint32_t u = f->moves[i];

		if (w0 + h->w[u] <= f->max[0]) {
			f->side[u] = 0;
			w0 += h->w[u];
		}
	}
	fm_count(f);
}

/* Both sides get at least k0 / k1 vertices (when n >= k0 + k1): the
 * lightest vertices move over from a side that has more than it needs. */
static void ensure_counts(struct fm *f, uint32_t k0, uint32_t k1)
{
	const struct hg *h = f->h;
	uint32_t c[2] = { 0, 0 }, need[2] = { k0, k1 };

	for (uint32_t v = 0; v < h->n; v++)
		c[f->side[v]]++;
	for (uint8_t s = 0; s < 2; s++)
		while (c[s] < need[s] && c[!s] > need[!s]) {
			uint32_t lt = NONE;

			for (uint32_t v = 0; v < h->n; v++)
				if (f->side[v] == !s &&
				    (lt == NONE || h->w[v] < h->w[lt]))
					lt = v;
			fm_move(f, lt, 0);
			c[s]++;
			c[!s]--;
		}
}

static void fm_free(struct fm *f)
{
	free(f->side);
	free(f->locked);
	free(f->pc);
	free(f->ps);
	free(f->gain);
	free(f->tie);
	free(f->next);
	free(f->prev);
	free(f->inq);
	free(f->head[0]);
	free(f->head[1]);
	free(f->moves);
	memset(f, 0, sizeof(*f));
}

/* f's scratch for bisections of h into weight shares k0 : k1 (the side
 * bounds f->max from eps); *target0: side 0's share.  0 or
 * PARSA_ENOMEM. */
static int fm_init(struct fm *f, const struct hg *h, uint32_t k0,
		   uint32_t k1, double eps, uint64_t *target0)
{
	uint64_t wmax = 0;
	double share0 = (double)h->wsum * k0 / (k0 + k1);

	memset(f, 0, sizeof(*f));
	*target0 = (uint64_t)llround(share0);
	f->h = h;
	f->side = malloc((size_t)h->n + 1);
	f->locked = malloc((size_t)h->n + 1);
	f->pc = malloc((2 * (size_t)h->m + 1) * sizeof(uint32_t));
	f->ps = malloc((2 * (size_t)h->m + 1) * sizeof(uint64_t));
	f->gain = malloc(((size_t)h->n + 1) * sizeof(int32_t));
	f->tie = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	f->next = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	f->prev = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	f->inq = malloc((size_t)h->n + 1);
	f->moves = malloc(((size_t)h->n + 1) * sizeof(uint32_t));
	for (uint32_t v = 0; v < h->n; v++) {
		uint64_t d = h->vptr[v + 1] - h->vptr[v];

		f->G = d > f->G ? (uint32_t)d : f->G;
	}
	f->head[0] = malloc((2 * (size_t)f->G + 1) * sizeof(uint32_t));
	f->head[1] = malloc((2 * (size_t)f->G + 1) * sizeof(uint32_t));
	if (!f->side || !f->locked || !f->pc || !f->ps || !f->gain ||
	    !f->tie || !f->next || !f->prev || !f->inq || !f->moves ||
	    !f->head[0] || !f->head[1]) {
		fm_free(f);
		return PARSA_ENOMEM;
	}
	for (uint32_t v = 0; v < h->n; v++)
		if (h->w[v] > wmax)
			wmax = h->w[v];
	/* a side may weigh (1 + eps) times its share, or its share and a
	 * vertex less than the heaviest where the weights are too coarse */
	for (uint8_t s = 0; s < 2; s++) {
		double share = s ? (double)h->wsum - share0 : share0;
		uint64_t m = (uint64_t)floor(share * (1.0 + eps));
		uint64_t lo = (uint64_t)ceil(share) + wmax - 1;

		f->max[s] = m > lo ? m : lo;
	}
	return 0;
}

/* FM passes on f->side (set by the caller) in a random order, until one
 * gains nothing, then the counts ensured. */
static void fm_improve(struct fm *f, uint32_t k0, uint32_t k1,
		       const struct parsa_rb_opts *o, struct parsa_rng *rng)
{
	const struct hg *h = f->h;

	for (uint32_t v = 0; v < h->n; v++)
		f->tie[v] = v;
	parsa_rng_shuffle_u32(rng, f->tie, h->n);
	fm_count(f);
	for (uint32_t p = 0; p < RB_MAX_PASSES && !parsa_stop_due(o->stop) &&
			    fm_pass(f); p++)
		;
	ensure_counts(f, k0, k1);
}

/* f's bisection replaces (side, *over, *cut) when better: the smaller
 * overweight, then the smaller cut. */
static void keep_best(const struct fm *f, uint8_t *side, uint64_t *over,
		      uint64_t *cut)
{
	uint64_t ov = overweight(f);

	if (ov < *over || (ov == *over && f->cut < *cut)) {
		*over = ov;
		*cut = f->cut;
		memcpy(side, f->side, f->h->n);
	}
}

/*
 * o->tries flat starts on h (half greedy growing, half random fills,
 * each improved by FM); the best replaces (side, *over, *cut) when
 * better (keep_best).
 */
static int flat_tries(const struct hg *h, uint32_t k0, uint32_t k1,
		      const struct parsa_rb_opts *o, struct parsa_rng *rng,
		      uint8_t *side, uint64_t *over, uint64_t *cut)
{
	struct fm f;
	uint64_t target0;

	if (fm_init(&f, h, k0, k1, o->eps, &target0))
		return PARSA_ENOMEM;
	for (uint32_t t = 0; t < o->tries && (t == 0 || !parsa_stop_due(o->stop));
	     t++) {
		for (uint32_t v = 0; v < h->n; v++)
			f.tie[v] = v;
		parsa_rng_shuffle_u32(rng, f.tie, h->n);
		if (t % 2 == 0)
			grow(&f, target0, rng);
		else
			fill(&f, target0, rng);
		for (uint32_t p = 0; p < RB_MAX_PASSES &&
				    !parsa_stop_due(o->stop) && fm_pass(&f); p++)
			;
		ensure_counts(&f, k0, k1);
		keep_best(&f, side, over, cut);
	}
	fm_free(&f);
	return 0;
}

/*
 * One level of the multilevel starts: h's vertices, in a random order,
 * each unmatched one paired with its unmatched neighbour of the highest
 * rating Σ 1/(|e| − 1) over their shared nets (ties: the lowest index;
 * the pair weighing at most maxw; at most RB_ML_PIN_BUDGET pins rated
 * per vertex), or left alone.  map[v] receives v's vertex of c, the
 * contracted hypergraph (weights summed; each net's pins mapped, the
 * duplicates dropped, the nets left with one pin dropped; nets are not
 * merged, so c's cut of a bisection is h's cut of its projection).
 * 0 or PARSA_ENOMEM.
 */
static int hg_coarsen(const struct hg *h, uint64_t maxw, struct parsa_rng *rng,
		      uint32_t *map, struct hg *c)
{
	size_t n1 = (size_t)h->n + 1;
	uint32_t *order = malloc(n1 * sizeof(uint32_t));
	uint32_t *touched = malloc(n1 * sizeof(uint32_t));
	uint32_t *stamp = NULL;
	float *score = calloc(n1, sizeof(float));
	uint64_t pins = 0;
	uint32_t nc = 0;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if (!order || !touched || !score) {
		rc = PARSA_ENOMEM;
		goto out;
	}
	for (uint32_t v = 0; v < h->n; v++) {
		order[v] = v;
		map[v] = NONE;
	}
	parsa_rng_shuffle_u32(rng, order, h->n);
	for (uint32_t i = 0; i < h->n; i++) {
		uint32_t u = order[i], nt = 0, best = NONE;
		uint32_t budget = RB_ML_PIN_BUDGET;

		if (map[u] != NONE)
			continue;
		for (uint64_t p = h->vptr[u]; p < h->vptr[u + 1]; p++) {
			uint32_t e = h->vnet[p];
			uint64_t d = h->eptr[e + 1] - h->eptr[e];
			float r;

			if (d > RB_ML_NET_MAX || d > budget)
				continue;
			budget -= (uint32_t)d;
			r = 1.0f / (float)(d - 1);
			for (uint64_t q = h->eptr[e]; q < h->eptr[e + 1]; q++) {
				uint32_t x = h->epin[q];

				if (x == u || map[x] != NONE ||
				    h->w[u] + h->w[x] > maxw)
					continue;
				if (score[x] == 0.0f)
					touched[nt++] = x;
				score[x] += r;
			}
		}
		for (uint32_t t = 0; t < nt; t++) {
			uint32_t x = touched[t];

			if (best == NONE || score[x] > score[best] ||
			    (score[x] == score[best] && x < best))
				best = x;
		}
		for (uint32_t t = 0; t < nt; t++)
			score[touched[t]] = 0.0f;
		map[u] = nc;
		if (best != NONE)
			map[best] = nc;
		nc++;
	}
	c->n = nc;
	c->vid = malloc(((size_t)nc + 1) * sizeof(uint32_t));
	c->w = calloc((size_t)nc + 1, sizeof(uint32_t));
	c->eptr = malloc(((size_t)h->m + 1) * sizeof(uint64_t));
	c->epin = malloc(((h->m ? h->eptr[h->m] : 0) + 1) * sizeof(uint32_t));
	stamp = malloc(((size_t)nc + 1) * sizeof(uint32_t));
	if (!c->vid || !c->w || !c->eptr || !c->epin || !stamp) {
		rc = PARSA_ENOMEM;
		goto out;
	}
	for (uint32_t x = 0; x < nc; x++) {
		c->vid[x] = x;
		stamp[x] = NONE;
	}
	for (uint32_t v = 0; v < h->n; v++) {
		c->w[map[v]] += h->w[v];
		c->wsum += h->w[v];
	}
	c->eptr[0] = 0;
	for (uint32_t e = 0; e < h->m; e++) {
		uint64_t at = pins;

		for (uint64_t q = h->eptr[e]; q < h->eptr[e + 1]; q++) {
			uint32_t x = map[h->epin[q]];

			if (stamp[x] != e) {
				stamp[x] = e;
				c->epin[pins++] = x;
			}
		}
		if (pins - at >= 2)
			c->eptr[++c->m] = pins;
		else
			pins = at;
	}
	rc = hg_vertex_side(c);
out:
	free(order);
	free(touched);
	free(score);
	free(stamp);
	if (rc)
		hg_release(c);
	return rc;
}

/*
 * One multilevel start on h (parsa_rb_opts.ml): coarsen, o->tries flat
 * starts on the coarsest, FM on every level back up; the result replaces
 * (side, *over, *cut) when better (keep_best).  *flat = 1 when h did not
 * coarsen (its first level shrank by less than 10%): the start was
 * o->tries flat ones on h.
 */
static int ml_start(const struct hg *h, uint32_t k0, uint32_t k1,
		    const struct parsa_rb_opts *o, struct parsa_rng *rng,
		    uint8_t *side, uint64_t *over, uint64_t *cut, int *flat)
{
	struct hg lv[RB_ML_LEVELS + 1];
	uint32_t *map[RB_ML_LEVELS + 1];
	uint8_t *cs = NULL, *fs = NULL;
	uint64_t maxw = h->wsum / RB_ML_MAXW_DIV, cover = UINT64_MAX;
	uint64_t ccut = UINT64_MAX, target0;
	uint32_t nl = 0;
	int rc = 0;

	memset(lv, 0, sizeof(lv));
	memset(map, 0, sizeof(map));
	for (uint32_t v = 0; v < h->n; v++) /* at least a pair's weight */
		maxw = 2 * (uint64_t)h->w[v] > maxw ? 2 * (uint64_t)h->w[v] : maxw;
	while (rc == 0 && nl < RB_ML_LEVELS) {
		const struct hg *f = nl ? &lv[nl] : h;

		if (f->n <= RB_ML_COARSEST)
			break;
		map[nl] = malloc(((size_t)f->n + 1) * sizeof(uint32_t));
		rc = map[nl] ? hg_coarsen(f, maxw, rng, map[nl], &lv[nl + 1])
			     : PARSA_ENOMEM;
		if (rc)
			break;
		if ((uint64_t)lv[nl + 1].n * 10 > (uint64_t)f->n * 9) {
			hg_release(&lv[nl + 1]); /* shrinks by less than 10%:
						  * f is the coarsest */
			break;
		}
		nl++;
	}
	*flat = nl == 0;
	if (rc == 0 && nl == 0) /* h is the coarsest */
		rc = flat_tries(h, k0, k1, o, rng, side, over, cut);
	else if (rc == 0) {
		cs = malloc((size_t)lv[nl].n + 1);
		rc = cs ? flat_tries(&lv[nl], k0, k1, o, rng, cs, &cover, &ccut)
			: PARSA_ENOMEM;
	}
	for (uint32_t l = nl; rc == 0 && l >= 1; l--) {
		const struct hg *f = l > 1 ? &lv[l - 1] : h;
		struct fm fm;

		fs = malloc((size_t)f->n + 1);
		if (!fs || fm_init(&fm, f, k0, k1, o->eps, &target0)) {
			rc = PARSA_ENOMEM;
			break;
		}
		for (uint32_t v = 0; v < f->n; v++)
			fm.side[v] = cs[map[l - 1][v]];
		fm_improve(&fm, k0, k1, o, rng);
		memcpy(fs, fm.side, f->n);
		if (l == 1)
			keep_best(&fm, side, over, cut);
		fm_free(&fm);
		free(cs);
		cs = fs;
		fs = NULL;
	}
	free(cs);
	free(fs);
	for (uint32_t l = 1; l <= nl; l++)
		hg_release(&lv[l]);
	for (uint32_t l = 0; l <= RB_ML_LEVELS; l++)
		free(map[l]);
	return rc;
}

/*
 * The best bisection of h into sides of weight shares k0 : k1 over
 * o->tries flat starts, or o->ml multilevel ones when o->ml > 0 (one
 * when h does not coarsen: those are flat); side[] receives it and *cut
 * its cut.
 */
static int bisect(const struct hg *h, uint32_t k0, uint32_t k1,
		  const struct parsa_rb_opts *o, struct parsa_rng *rng,
		  uint8_t *side, uint64_t *cut)
{
	uint64_t over = UINT64_MAX;

	*cut = UINT64_MAX;
	if (o->ml == 0)
		return flat_tries(h, k0, k1, o, rng, side, &over, cut);
	for (uint32_t t = 0; t < o->ml && (t == 0 || !parsa_stop_due(o->stop));
	     t++) {
		int flat = 0, rc = ml_start(h, k0, k1, o, rng, side, &over, cut,
					    &flat);

		if (rc || flat) /* (flat: the same again would be flat) */
			return rc;
	}
	return 0;
}

/* Parts base .. base + k - 1 for h's vertices; h is released. */
static int rb(struct hg *h, uint32_t k, uint32_t base,
	      const struct parsa_rb_opts *o, struct parsa_rng *rng,
	      uint32_t *part, uint64_t *conn)
{
	uint32_t k0 = k / 2, k1 = k - k / 2;
	struct hg s0, s1;
	uint8_t *side;
	uint64_t cut = 0;
	int rc;

	if (k == 1 || h->n <= 1) {
		for (uint32_t v = 0; v < h->n; v++)
			part[h->vid[v]] = base;
		hg_release(h);
		return 0;
	}
	side = malloc((size_t)h->n + 1);
	rc = side ? bisect(h, k0, k1, o, rng, side, &cut) : PARSA_ENOMEM;
	if (rc == 0)
		rc = hg_split(h, side, 0, &s0);
	if (rc == 0) {
		rc = hg_split(h, side, 1, &s1);
		if (rc)
			hg_release(&s0);
	}
	free(side);
	hg_release(h);
	if (rc)
		return rc;
	*conn += cut;
	rc = rb(&s0, k0, base, o, rng, part, conn);
	if (rc == 0)
		rc = rb(&s1, k1, base + k0, o, rng, part, conn);
	else
		hg_release(&s1);
	return rc;
}

int parsa_rb_partition(const struct parsa_graph *g, const uint32_t *w,
		       const struct parsa_rb_opts *o, uint32_t *part,
		       uint64_t *conn, struct parsa_err *err)
{
	struct parsa_rng rng;
	struct hg h;
	uint64_t c = 0;
	int rc;

	if (o->k == 0 || o->tries == 0 || !(o->eps >= 0) || !isfinite(o->eps))
		return parsa_fail(err, PARSA_EINVAL,
				  "recursive bisection: k and tries must be >= 1, "
				  "eps a finite number >= 0");
	parsa_rng_seed(&rng, o->seed ^ 0x9e3779b97f4a7c15ULL);
	rc = hg_top(&h, g, w);
	if (rc == 0)
		rc = rb(&h, o->k, 0, o, &rng, part, &c);
	if (rc)
		return parsa_fail(err, rc, "out of memory (recursive bisection, "
				  "%u vertices)", g->n_rows);
	if (conn)
		*conn = c;
	return 0;
}
