/*
 * parsa_flow: two-way flow refinement on pairs of parts (region, Lawler
 * network, Dinic, FlowCutter-style piercing, exact evaluation); see
 * parsa_flow.h for the design and its contracts.
 */
#include "parsa_flow.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_conn.h"
#include "parsa_fm.h"

#define NIL UINT32_MAX
#define TOUCHED (UINT32_MAX - 1) /* net with a region pin, not yet classed */
#define CONSTNET (UINT32_MAX - 2) /* terminal pins on both sides: always cut */
#define SKIPNET (UINT32_MAX - 3) /* a single pin in a ∪ b: never cut */
#define INF ((int32_t)1 << 30)
#define SRC 0u
#define SNK 1u

/* The flow network of one pair: nodes 0 (source), 1 (sink), 2 + i for
 * region vertex i, then two per net (in, out).  Arcs are collected
 * (tail, head, capacity), then laid out in CSR order (start, to, rc,
 * rev: the paired arc).  Every region vertex has an arc from the source
 * and one to the sink of capacity 0, set to infinity when it is pierced
 * (psrc, psnk: their CSR positions). */
struct net {
	uint32_t n, na;         /* nodes, arcs collected */
	uint32_t ncap, acap;    /* allocated: nodes, arcs */
	uint32_t *at, *ah;      /* acap: collected tails, heads */
	int32_t *ac;            /* acap: capacities, then CSR positions */
	uint32_t *start;        /* ncap + 1 */
	uint32_t *to, *rev;     /* 2 acap */
	int32_t *rc;            /* 2 acap: residual capacity */
	uint32_t *level, *cur, *stack, *queue, *seen; /* ncap */
	uint32_t *psrc, *psnk;  /* ncap: pierce arcs of region vertex i */
	uint32_t stamp;
};

struct flow {
	const struct parsa_graph *g;
	struct parsa_graph t;   /* transpose: net v -> its pins */
	uint32_t *part;
	struct parsa_nbrset *used;
	const struct parsa_flow_opts *o;
	uint32_t k;
	uint64_t *size;         /* k: Σ weights of part j */
	uint64_t avg;           /* ceil(Σ weights / k) */
	uint32_t **list;        /* k: the vertices of part j */
	uint32_t *len, *lcap;
	/* per net (n_cols), valid when nst[v] == epoch */
	uint32_t *nst, *ca, *cb, *ra, *rb, *nid, *nca, *ncb, *visa, *visb;
	/* per vertex (n_rows) */
	uint32_t *vst;
	uint32_t epoch;
	uint32_t *reg;          /* region: side a first (na), then side b */
	uint8_t *side;          /* new side of region vertex i (0 a, 1 b) */
	uint8_t *pierced;       /* 1 source, 2 sink */
	uint32_t nreg, na;
	uint32_t *rnets, nrn;   /* nets with a region pin */
	/* the nets of a ∪ b that pair_counts stamped, and for which pair its
	 * ca / cb hold (cnt_ok: nothing was applied since): a pair tried
	 * again with a smaller alpha after a failure restamps these nets
	 * instead of counting a's and b's pins again */
	uint32_t *pnets, npn;
	uint32_t cnt_a, cnt_b;
	int cnt_ok;
	uint32_t *tmp;          /* n_rows scratch */
	uint64_t *skey;         /* n_rows: seed keys */
	struct net nw;
};

static uint64_t wt(const struct flow *f, uint32_t u)
{
	return f->o->weight ? f->o->weight[u] : 1;
}

/* ------------------------------------------------------------ network */

static int grow_u32(uint32_t **p, size_t n)
{
	uint32_t *x = realloc(*p, n * sizeof(uint32_t));

	if (!x)
		return -1;
	*p = x;
	return 0;
}

static int net_reserve(struct net *w, uint32_t n, uint32_t arcs)
{
	if (n + 1 > w->ncap) {
		size_t c = (size_t)n + n / 2 + 16;
		uint32_t **a[] = { &w->start, &w->level, &w->cur, &w->stack,
				   &w->queue, &w->seen, &w->psrc, &w->psnk };

		for (size_t i = 0; i < sizeof(a) / sizeof(*a); i++)
			if (grow_u32(a[i], c))
				return -1;
		memset(w->seen, 0, c * sizeof(uint32_t));
		w->stamp = 0;
		w->ncap = (uint32_t)c;
	}
	if (arcs > w->acap) {
		size_t c = (size_t)arcs + arcs / 2 + 64;

		if (grow_u32(&w->at, c) || grow_u32(&w->ah, c) ||
		    grow_u32((uint32_t **)&w->ac, c) ||
		    grow_u32(&w->to, 2 * c) || grow_u32(&w->rev, 2 * c) ||
		    grow_u32((uint32_t **)&w->rc, 2 * c))
			return -1;
		w->acap = (uint32_t)c;
	}
	return 0;
}

static void net_free(struct net *w)
{
	free(w->at);
	free(w->ah);
	free(w->ac);
	free(w->start);
	free(w->to);
	free(w->rev);
	free(w->rc);
	free(w->level);
	free(w->cur);
	free(w->stack);
	free(w->queue);
	free(w->seen);
	free(w->psrc);
	free(w->psnk);
}

/* Collect arc x -> y of capacity c; returns its collection index. */
static uint32_t arc(struct net *w, uint32_t x, uint32_t y, int32_t c)
{
	uint32_t a = w->na++;

	assert(a < w->acap);
	w->at[a] = x;
	w->ah[a] = y;
	w->ac[a] = c;
	return a;
}

/* Lay the collected arcs out in CSR order; ac[a] becomes the CSR
 * position of arc a. */
static void net_finish(struct net *w)
{
	uint32_t *st = w->start;

	memset(st, 0, ((size_t)w->n + 1) * sizeof(uint32_t));
	for (uint32_t a = 0; a < w->na; a++) {
		st[w->at[a] + 1]++;
		st[w->ah[a] + 1]++;
	}
	for (uint32_t x = 0; x < w->n; x++)
		st[x + 1] += st[x];
	memcpy(w->cur, st, (size_t)w->n * sizeof(uint32_t));
	for (uint32_t a = 0; a < w->na; a++) {
		uint32_t f = w->cur[w->at[a]]++, r = w->cur[w->ah[a]]++;

		w->to[f] = w->ah[a];
		w->rc[f] = w->ac[a];
		w->rev[f] = r;
		w->to[r] = w->at[a];
		w->rc[r] = 0;
		w->rev[r] = f;
		w->ac[a] = (int32_t)f;
	}
}

/* BFS levels from the source over residual arcs; 1 if the sink is
 * reached. */
static int levels(struct net *w)
{
	uint32_t qh = 0, qt = 0;

	for (uint32_t x = 0; x < w->n; x++)
		w->level[x] = NIL;
	w->level[SRC] = 0;
	w->queue[qt++] = SRC;
	while (qh < qt) {
		uint32_t x = w->queue[qh++];

		if (w->level[SNK] != NIL && w->level[x] >= w->level[SNK])
			break; /* nodes past the sink's level are of no use */
		for (uint32_t e = w->start[x]; e < w->start[x + 1]; e++) {
			uint32_t y = w->to[e];

			if (w->rc[e] > 0 && w->level[y] == NIL) {
				w->level[y] = w->level[x] + 1;
				w->queue[qt++] = y;
			}
		}
	}
	return w->level[SNK] != NIL;
}

/*
 * Augment (Dinic, one unit per path) until the flow exceeds limit or no
 * augmenting path is left.  *flow counts on.  Returns 0 (max flow reached,
 * *flow <= limit), 1 (flow > limit) or -1 (stop due).
 */
static int maxflow(struct net *w, uint64_t *flow, uint64_t limit,
		   const struct parsa_stop *stop)
{
	uint64_t paths = 0;

	while (levels(w)) {
		memcpy(w->cur, w->start, (size_t)w->n * sizeof(uint32_t));
		for (;;) {
			uint32_t sp = 0, x = SRC;

			while (x != SNK) {
				uint32_t e = w->cur[x], end = w->start[x + 1];

				while (e < end && !(w->rc[e] > 0 &&
						    w->level[w->to[e]] ==
							    w->level[x] + 1))
					e++;
				w->cur[x] = e;
				if (e == end) {
					if (x == SRC)
						break;
					w->level[x] = NIL; /* dead end */
					x = w->to[w->rev[w->stack[--sp]]];
					continue;
				}
				w->stack[sp++] = e;
				x = w->to[e];
			}
			if (x != SNK)
				break; /* phase done */
			for (uint32_t i = 0; i < sp; i++) {
				w->rc[w->stack[i]] -= 1;
				w->rc[w->rev[w->stack[i]]] += 1;
			}
			if (++*flow > limit)
				return 1;
			if (++paths % PARSA_STOP_POPS == 0 &&
			    parsa_stop_due(stop))
				return -1;
		}
	}
	return 0;
}

/* After maxflow returned 0 its last levels() found no path: the nodes
 * with a level are the source's residual reach; stamp them. */
static uint32_t reach_src(struct net *w)
{
	uint32_t s = ++w->stamp;

	for (uint32_t x = 0; x < w->n; x++)
		if (w->level[x] != NIL)
			w->seen[x] = s;
	return s;
}

/* Mark (stamp s) the nodes the source reaches in the residual network
 * (fwd) or those that reach the sink (!fwd); returns the new stamp. */
static uint32_t reach(struct net *w, int fwd)
{
	uint32_t s = ++w->stamp, qh = 0, qt = 0, from = fwd ? SRC : SNK;

	w->seen[from] = s;
	w->queue[qt++] = from;
	while (qh < qt) {
		uint32_t x = w->queue[qh++];

		for (uint32_t e = w->start[x]; e < w->start[x + 1]; e++) {
			uint32_t y = w->to[e];
			int32_t c = fwd ? w->rc[e] : w->rc[w->rev[e]];

			if (c > 0 && w->seen[y] != s) {
				w->seen[y] = s;
				w->queue[qt++] = y;
			}
		}
	}
	return s;
}

/* ----------------------------------------------------------- one pair */

/* Count the pins of a and b of every net they touch (stamps epoch). */
static void pair_counts(struct flow *f, uint32_t a, uint32_t b)
{
	const struct parsa_graph *g = f->g;
	uint32_t ep = f->epoch;

	f->npn = 0;
	for (int s = 0; s < 2; s++) {
		uint32_t p = s ? b : a;

		for (uint32_t i = 0; i < f->len[p]; i++) {
			uint32_t u = f->list[p][i];

			for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1];
			     e++) {
				uint32_t v = g->col[e];

				if (f->nst[v] != ep) {
					f->nst[v] = ep;
					f->pnets[f->npn++] = v;
					f->ca[v] = f->cb[v] = 0;
					f->ra[v] = f->rb[v] = 0;
					f->nid[v] = NIL;
					f->visa[v] = f->visb[v] = 0;
				}
				if (s)
					f->cb[v]++;
				else
					f->ca[v]++;
			}
		}
	}
}

/* pair_counts again for the same pair, nothing applied since: its nets
 * stamped with the new epoch and their region fields cleared; the counts
 * stay. */
static void pair_restamp(struct flow *f)
{
	uint32_t ep = f->epoch;

	for (uint32_t i = 0; i < f->npn; i++) {
		uint32_t v = f->pnets[i];

		f->nst[v] = ep;
		f->ra[v] = f->rb[v] = 0;
		f->nid[v] = NIL;
		f->visa[v] = f->visb[v] = 0;
	}
}

/* The share of u's nets cut between a and b, in 1/1024 (0: none). */
static uint64_t cut_share(const struct flow *f, uint32_t u)
{
	const struct parsa_graph *g = f->g;
	uint64_t c = 0, d = g->row_ptr[u + 1] - g->row_ptr[u];

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];

		c += f->ca[v] && f->cb[v];
	}
	return d ? c * 1024 / d : 0;
}

static int u64_desc(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? 1 : a > b ? -1 : 0;
}

/*
 * Grow side s (part p) of the region up to weight budget: first the
 * vertices with a cut net, the largest share of cut nets first (ties:
 * the order of part p's list), then BFS through nets.
 */
static void grow(struct flow *f, uint32_t p, int s, uint64_t budget)
{
	const struct parsa_graph *g = f->g, *t = &f->t;
	uint32_t ep = f->epoch, start = f->nreg, ns = 0;
	uint32_t lim = f->o->max_region ? f->o->max_region : UINT32_MAX;
	uint32_t *vis = s ? f->visb : f->visa;
	uint64_t have = 0;

	for (uint32_t i = 0; i < f->len[p]; i++) {
		uint32_t u = f->list[p][i];
		uint64_t c;

		if (f->o->fixed && f->o->fixed[u])
			continue;
		c = cut_share(f, u);
		if (c)
			f->skey[ns++] = c << 32 | (uint32_t)~i;
	}
	qsort(f->skey, ns, sizeof(uint64_t), u64_desc);
	for (uint32_t j = 0; j < ns && have < budget; j++) {
		uint32_t u = f->list[p][~(uint32_t)f->skey[j]];

		if (f->nreg - start >= lim)
			return;
		if (have + wt(f, u) > budget)
			continue;
		f->vst[u] = ep;
		f->reg[f->nreg++] = u;
		have += wt(f, u);
	}
	for (uint32_t h = start; h < f->nreg && have < budget; h++) {
		uint32_t u = f->reg[h];

		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t v = g->col[e];
			uint64_t lo = t->row_ptr[v], hi = t->row_ptr[v + 1];

			if (vis[v] || hi - lo > PARSA_FLOW_NET_SCAN)
				continue;
			vis[v] = 1;
			for (uint64_t q = lo; q < hi; q++) {
				uint32_t x = t->col[q];

				if (f->part[x] != p || f->vst[x] == ep ||
				    have + wt(f, x) > budget ||
				    (f->o->fixed && f->o->fixed[x]))
					continue;
				if (f->nreg - start >= lim)
					return;
				f->vst[x] = ep;
				f->reg[f->nreg++] = x;
				have += wt(f, x);
			}
		}
	}
}

/* Pierce region vertex i as a source (s = 1) or sink (s = 2). */
static void pierce(struct flow *f, uint32_t i, int s)
{
	f->pierced[i] = (uint8_t)s;
	f->nw.rc[s == 1 ? f->nw.psrc[i] : f->nw.psnk[i]] = INF;
}

/*
 * Pierce (as s: 1 source, 2 sink) region vertices whose node has stamp
 * `in` (or, with in == 0, is in neither reach set sa, sb) until their
 * weight reaches need (at least one), scanning first the region of side
 * `deep` from its end (deepest in its part), then the other side from
 * its start (nearest the boundary).  Returns how many were pierced.
 */
static uint32_t pierce_many(struct flow *f, uint32_t in, uint32_t sa,
			    uint32_t sb, int deep, uint64_t need, int s)
{
	uint32_t lo[2] = { 0, f->na }, hi[2] = { f->na, f->nreg }, n = 0;
	uint64_t got = 0;

	for (int pass = 0; pass < 2; pass++) {
		int sd = pass ? !deep : deep;

		for (uint32_t j = 0; j < hi[sd] - lo[sd]; j++) {
			uint32_t i = pass ? lo[sd] + j : hi[sd] - 1 - j;
			uint32_t st = f->nw.seen[2 + i];

			if (f->pierced[i] ||
			    !(in ? st == in : st != sa && st != sb))
				continue;
			pierce(f, i, s);
			n++;
			got += wt(f, f->reg[i]);
			if (got >= need)
				return n;
		}
	}
	return n;
}

/*
 * Evaluate the assignment f->side exactly: *dma, *dmb the changes of
 * M_a, M_b.  Uses nca/ncb of the region nets.
 */
static void evaluate(struct flow *f, int64_t *dma, int64_t *dmb)
{
	const struct parsa_graph *g = f->g;
	int64_t da = 0, db = 0;

	for (uint32_t j = 0; j < f->nrn; j++) {
		uint32_t v = f->rnets[j];

		f->nca[v] = f->ca[v];
		f->ncb[v] = f->cb[v];
	}
	for (uint32_t i = 0; i < f->nreg; i++) {
		uint32_t u = f->reg[i];
		int was = i >= f->na;

		if (f->side[i] == was)
			continue;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t v = g->col[e];

			if (was) {
				f->ncb[v]--;
				f->nca[v]++;
			} else {
				f->nca[v]--;
				f->ncb[v]++;
			}
		}
	}
	for (uint32_t j = 0; j < f->nrn; j++) {
		uint32_t v = f->rnets[j];

		da += (f->nca[v] > 0) - (f->ca[v] > 0);
		db += (f->ncb[v] > 0) - (f->cb[v] > 0);
	}
	*dma = da;
	*dmb = db;
}

static void set_bit(struct parsa_nbrset *s, uint32_t v, uint32_t i, int on)
{
	uint64_t *w = &s->bits[(uint64_t)v * s->words + (i >> 6)];
	uint64_t b = 1ULL << (i & 63);

	if (on && !(*w & b)) {
		*w |= b;
		s->size[i]++;
	} else if (!on && (*w & b)) {
		*w &= ~b;
		s->size[i]--;
	}
}

/* Apply f->side (evaluated: nca/ncb current): part, used, sizes, lists. */
static int apply(struct flow *f, uint32_t a, uint32_t b, uint64_t *moves)
{
	uint32_t la = f->len[a], lb = f->len[b], n = 0, m = 0;
	uint32_t *all = f->tmp;

	for (uint32_t i = 0; i < f->nreg; i++) {
		uint32_t u = f->reg[i];
		uint32_t to = f->side[i] ? b : a;

		if (f->part[u] != to) {
			f->size[f->part[u]] -= wt(f, u);
			f->size[to] += wt(f, u);
			f->part[u] = to;
			++*moves;
		}
	}
	for (uint32_t j = 0; j < f->nrn; j++) {
		uint32_t v = f->rnets[j];

		set_bit(f->used, v, a, f->nca[v] > 0);
		set_bit(f->used, v, b, f->ncb[v] > 0);
	}
	memcpy(all, f->list[a], (size_t)la * sizeof(uint32_t));
	memcpy(all + la, f->list[b], (size_t)lb * sizeof(uint32_t));
	for (uint32_t i = 0; i < la + lb; i++)
		if (f->part[all[i]] == a)
			n++;
	m = la + lb - n;
	for (int s = 0; s < 2; s++) {
		uint32_t p = s ? b : a, want = s ? m : n;

		if (want > f->lcap[p]) {
			uint32_t *x = realloc(f->list[p],
					      (size_t)want * sizeof(uint32_t));

			if (!x)
				return -1;
			f->list[p] = x;
			f->lcap[p] = want;
		}
		f->len[p] = 0;
	}
	for (uint32_t i = 0; i < la + lb; i++) {
		uint32_t p = f->part[all[i]];

		f->list[p][f->len[p]++] = all[i];
	}
	return 0;
}

/* Weight of side a of the cut whose a side is the region vertices with
 * (stamp == s) == in_a_if (in: 1 = those in the set go to a). */
static void cut_sides(struct flow *f, uint32_t s, int set_is_a,
		      uint64_t wa_out, uint64_t *wa)
{
	uint64_t x = wa_out;

	for (uint32_t i = 0; i < f->nreg; i++) {
		int in = f->nw.seen[2 + i] == s;
		int to_a = set_is_a ? in : !in;

		if (to_a)
			x += wt(f, f->reg[i]);
	}
	*wa = x;
}

static void set_sides(struct flow *f, uint32_t s, int set_is_a)
{
	for (uint32_t i = 0; i < f->nreg; i++) {
		int in = f->nw.seen[2 + i] == s;

		f->side[i] = (uint8_t)((set_is_a ? in : !in) ? 0 : 1);
	}
}

/*
 * The flow refinement of pair (a, b).  Returns 1 if a cut was applied, 0
 * if not, -1 on no memory, -2 if the stop was due.
 */
static int pair_refine(struct flow *f, uint32_t a, uint32_t b,
		       double alpha, uint64_t *moves)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_flow_opts *o = f->o;
	struct net *w = &f->nw;
	uint64_t wa = f->size[a], wb = f->size[b], W = wa + wb;
	uint64_t cap = o->cap, sl, ra_b, rb_b;
	uint64_t wra = 0, old_cut = 0, cnst = 0, flow = 0, limit;
	uint32_t nnet = 0, narc = 0;

	if (++f->epoch == 0) { /* wrapped: reset every stamp */
		memset(f->nst, 0, (size_t)g->n_cols * sizeof(uint32_t));
		memset(f->vst, 0, (size_t)g->n_rows * sizeof(uint32_t));
		f->epoch = 1;
	}
	if (f->cnt_ok && f->cnt_a == a && f->cnt_b == b) {
		pair_restamp(f);
	} else {
		pair_counts(f, a, b);
		f->cnt_a = a;
		f->cnt_b = b;
		f->cnt_ok = 1;
	}
	/* region budgets (KaHyPar-MF's alpha): the room the other part has
	 * under the cap, plus alpha times the cap's slack over the average
	 * part (the balancing takes back what does not fit) */
	sl = cap > f->avg ? cap - f->avg : 0;
	{
		double ba = alpha * (double)sl + (cap > wb ? (double)(cap - wb) : 0);
		double bb = alpha * (double)sl + (cap > wa ? (double)(cap - wa) : 0);

		ra_b = ba >= (double)wa ? wa : (uint64_t)ba;
		rb_b = bb >= (double)wb ? wb : (uint64_t)bb;
	}
	f->nreg = 0;
	grow(f, a, 0, ra_b);
	f->na = f->nreg;
	grow(f, b, 1, rb_b);
	if (f->nreg == 0)
		return 0;
	for (uint32_t i = 0; i < f->na; i++)
		wra += wt(f, f->reg[i]);
	/* region nets and their region pins */
	f->nrn = 0;
	for (uint32_t i = 0; i < f->nreg; i++) {
		uint32_t u = f->reg[i];

		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t v = g->col[e];

			if (f->nid[v] == NIL) {
				f->nid[v] = TOUCHED;
				f->rnets[f->nrn++] = v;
			}
			if (i < f->na)
				f->ra[v]++;
			else
				f->rb[v]++;
		}
	}
	for (uint32_t j = 0; j < f->nrn; j++) {
		uint32_t v = f->rnets[j];
		int ta = f->ca[v] > f->ra[v], tb = f->cb[v] > f->rb[v];

		if (f->ca[v] && f->cb[v])
			old_cut++;
		if (ta && tb) {
			f->nid[v] = CONSTNET;
			cnst++;
		} else if (f->ca[v] + f->cb[v] < 2) {
			f->nid[v] = SKIPNET;
		} else {
			f->nid[v] = nnet++;
			narc += 1 + (uint32_t)ta + (uint32_t)tb;
			narc += 2 * (f->ra[v] + f->rb[v]);
		}
	}
	if (old_cut <= cnst)
		return 0; /* no cut of the region can do better */
	limit = old_cut - cnst - 1;
	if (net_reserve(w, 2 + f->nreg + 2 * nnet, narc + 2 * f->nreg))
		return -1;
	w->n = 2 + f->nreg + 2 * nnet;
	w->na = 0;
	for (uint32_t j = 0; j < f->nrn; j++) {
		uint32_t v = f->rnets[j], id = f->nid[v];
		uint32_t in, out;

		if (id >= SKIPNET)
			continue;
		in = 2 + f->nreg + 2 * id;
		out = in + 1;
		arc(w, in, out, 1);
		if (f->ca[v] > f->ra[v])
			arc(w, SRC, in, INF);
		if (f->cb[v] > f->rb[v])
			arc(w, out, SNK, INF);
	}
	for (uint32_t i = 0; i < f->nreg; i++) {
		uint32_t u = f->reg[i];

		f->pierced[i] = 0;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t id = f->nid[g->col[e]], in;

			if (id >= SKIPNET)
				continue;
			in = 2 + f->nreg + 2 * id;
			arc(w, 2 + i, in, INF);
			arc(w, in + 1, 2 + i, INF);
		}
		w->psrc[i] = arc(w, SRC, 2 + i, 0);
		w->psnk[i] = arc(w, 2 + i, SNK, 0);
	}
	net_finish(w);
	for (uint32_t i = 0; i < f->nreg; i++) {
		w->psrc[i] = (uint32_t)w->ac[w->psrc[i]];
		w->psnk[i] = (uint32_t)w->ac[w->psnk[i]];
	}
	/* (a side without terminal nets has no pull: the extreme cuts and
	 * the piercing below decide where its region goes) */
	for (int it = 0;; it++) {
		uint32_t ss, tt;
		uint64_t waA, waB, wbA, wbB;
		int okA, okB, r = maxflow(w, &flow, limit, o->stop);

		if (r)
			return r < 0 ? -2 : 0;
		ss = reach_src(w);
		cut_sides(f, ss, 1, wa - wra, &waA);
		tt = reach(w, 0);
		cut_sides(f, tt, 0, wa - wra, &waB);
		wbA = W - waA;
		wbB = W - waB;
		okA = (waA <= cap || waA <= wa) && (wbA <= cap || wbA <= wb);
		okB = (waB <= cap || waB <= wa) && (wbB <= cap || wbB <= wb);
		{
			/* the feasible extreme cuts, the more balanced first */
			uint64_t mA = waA > wbA ? waA : wbA;
			uint64_t mB = waB > wbB ? waB : wbB;
			int order[2], nc = 0;

			if (okA && (!okB || mA <= mB))
				order[nc++] = 1;
			if (okB)
				order[nc++] = 0;
			if (okA && okB && mB < mA)
				order[nc++] = 1;
			for (int c = 0; c < nc; c++) {
				int64_t dma, dmb;
				uint64_t Ma = f->used->size[a];
				uint64_t Mb = f->used->size[b];

				if (order[c])
					set_sides(f, ss, 1);
				else
					set_sides(f, tt, 0);
				evaluate(f, &dma, &dmb);
				if (dma + dmb >= 0)
					continue;
				if ((dma > 0 &&
				     Ma + (uint64_t)dma > o->m_limit) ||
				    (dmb > 0 &&
				     Mb + (uint64_t)dmb > o->m_limit))
					continue;
				f->cnt_ok = 0; /* the parts change */
				return apply(f, a, b, moves) ? -1 : 1;
			}
		}
		if (okA || okB || it >= PARSA_FLOW_PIERCE)
			return 0;
		/* pierce: the side that must grow, by about the weight it
		 * lacks (FlowCutter pierces one vertex at a time; in bulk
		 * the balance is reached in a few rounds) */
		if (!(waA <= cap || waA <= wa)) {
			/* a too heavy even on the least source side */
			if (!pierce_many(f, ss, 0, 0, 1, waA - cap, 2))
				return 0;
		} else if (!(wbB <= cap || wbB <= wb)) {
			if (!pierce_many(f, tt, 0, 0, 0, wbB - cap, 1))
				return 0;
		} else {
			/* between the two extreme cuts: grow the smaller
			 * side by vertices in neither reach (no new flow) */
			int src = waA <= wbB;
			uint64_t need = src ? wbA - cap : waB - cap;

			if (!pierce_many(f, 0, ss, tt, src ? 0 : 1, need,
					 src ? 1 : 2))
				return 0;
		}
	}
}

/* ------------------------------------------------------------ schedule */

struct pair {
	uint32_t a, b, shared;
};

static int pair_cmp(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;

	if (p->shared != q->shared)
		return p->shared > q->shared ? -1 : 1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

/* The pairs sharing a net with a part active (all if act NULL), sorted. */
static struct pair *pairs_of(const struct flow *f, const uint8_t *act,
			     uint32_t *sh, uint32_t *parts, uint64_t *np)
{
	const struct parsa_nbrset *s = f->used;
	uint32_t k = f->k;
	uint64_t n = 0;
	struct pair *p;

	memset(sh, 0, (size_t)k * k * sizeof(uint32_t));
	for (uint32_t v = 0; v < s->n_feat; v++) {
		const uint64_t *m = parsa_nbrset_mask(s, v);
		uint32_t l = 0;

		for (uint32_t wd = 0; wd < s->words; wd++)
			for (uint64_t x = m[wd]; x; x &= x - 1)
				parts[l++] = wd * 64 + (uint32_t)__builtin_ctzll(x);
		for (uint32_t i = 0; i < l; i++)
			for (uint32_t j = i + 1; j < l; j++)
				sh[(size_t)parts[i] * k + parts[j]]++;
	}
	for (uint32_t a = 0; a < k; a++)
		for (uint32_t b = a + 1; b < k; b++)
			if (sh[(size_t)a * k + b] && (!act || act[a] || act[b]))
				n++;
	p = malloc((n ? n : 1) * sizeof(*p));
	if (!p)
		return NULL;
	n = 0;
	for (uint32_t a = 0; a < k; a++)
		for (uint32_t b = a + 1; b < k; b++)
			if (sh[(size_t)a * k + b] && (!act || act[a] || act[b]))
				p[n++] = (struct pair){ a, b,
							sh[(size_t)a * k + b] };
	qsort(p, n, sizeof(*p), pair_cmp);
	*np = n;
	return p;
}

static void flow_free(struct flow *f)
{
	for (uint32_t j = 0; f->list && j < f->k; j++)
		free(f->list[j]);
	free(f->list);
	free(f->len);
	free(f->lcap);
	free(f->size);
	free(f->nst);
	free(f->pnets);
	free(f->ca);
	free(f->cb);
	free(f->ra);
	free(f->rb);
	free(f->nid);
	free(f->nca);
	free(f->ncb);
	free(f->visa);
	free(f->visb);
	free(f->vst);
	free(f->reg);
	free(f->side);
	free(f->pierced);
	free(f->rnets);
	free(f->tmp);
	free(f->skey);
	net_free(&f->nw);
	parsa_graph_release(&f->t);
}

static int flow_init(struct flow *f, const struct parsa_graph *g,
		     uint32_t *part, struct parsa_nbrset *used,
		     const struct parsa_flow_opts *o, struct parsa_err *err)
{
	size_t nc = (size_t)g->n_cols + 1, nr = (size_t)g->n_rows + 1;
	uint32_t k = used->k;
	int bad = 0;

	memset(f, 0, sizeof(*f));
	f->g = g;
	f->part = part;
	f->used = used;
	f->o = o;
	f->k = k;
	parsa_graph_init(&f->t);
	f->list = calloc(k, sizeof(uint32_t *));
	f->len = calloc(k, sizeof(uint32_t));
	f->lcap = calloc(k, sizeof(uint32_t));
	f->size = calloc(k, sizeof(uint64_t));
	uint32_t **pc[] = { &f->nst, &f->ca, &f->cb, &f->ra, &f->rb, &f->nid,
			    &f->nca, &f->ncb, &f->visa, &f->visb, &f->rnets,
			    &f->pnets };
	for (size_t i = 0; i < sizeof(pc) / sizeof(*pc); i++)
		bad |= !(*pc[i] = calloc(nc, sizeof(uint32_t)));
	bad |= !(f->vst = calloc(nr, sizeof(uint32_t)));
	bad |= !(f->reg = calloc(nr, sizeof(uint32_t)));
	bad |= !(f->tmp = calloc(nr, sizeof(uint32_t)));
	bad |= !(f->skey = calloc(nr, sizeof(uint64_t)));
	bad |= !(f->side = calloc(nr, 1));
	bad |= !(f->pierced = calloc(nr, 1));
	if (bad || !f->list || !f->len || !f->lcap || !f->size ||
	    parsa_graph_transpose(g, &f->t, err)) {
		flow_free(f);
		return parsa_fail(err, PARSA_ENOMEM,
				  "flow refinement: out of memory");
	}
	for (uint32_t u = 0; u < g->n_rows; u++) {
		f->size[part[u]] += wt(f, u);
		f->len[part[u]]++;
	}
	for (uint32_t j = 0; j < k; j++)
		f->avg += f->size[j];
	f->avg = (f->avg + k - 1) / k;
	for (uint32_t j = 0; j < k; j++) {
		f->lcap[j] = f->len[j];
		f->list[j] = malloc((size_t)(f->len[j] ? f->len[j] : 1) *
				    sizeof(uint32_t));
		if (!f->list[j]) {
			flow_free(f);
			return parsa_fail(err, PARSA_ENOMEM,
					  "flow refinement: out of memory");
		}
		f->len[j] = 0;
	}
	for (uint32_t u = 0; u < g->n_rows; u++)
		f->list[part[u]][f->len[part[u]]++] = u;
	return 0;
}

int parsa_flow_refine(const struct parsa_graph *g, uint32_t *part,
		      struct parsa_nbrset *used,
		      const struct parsa_flow_opts *o,
		      struct parsa_flow_stats *st, struct parsa_err *err)
{
	struct parsa_flow_stats s = { 0 };
	struct flow f;
	uint32_t *sh = NULL, *parts = NULL;
	uint8_t *act = NULL, *next = NULL;
	int rc = o ? parsa_conn_check(g, part, used, "flow refinement", err)
		   : parsa_fail(err, PARSA_EINVAL,
				"flow refinement: NULL options");

	if (rc)
		return rc;
	s.conn_before = s.conn_after = parsa_connectivity(used);
	if (o->max_rounds == 0 || used->k < 2 || used->k > PARSA_FLOW_MAX_K ||
	    g->n_rows == 0 || parsa_stop_due(o->stop)) {
		if (st)
			*st = s;
		return 0;
	}
	rc = flow_init(&f, g, part, used, o, err);
	if (rc)
		return rc;
	sh = malloc((size_t)f.k * f.k * sizeof(uint32_t));
	parts = malloc((size_t)f.k * sizeof(uint32_t));
	act = calloc(f.k, 1);
	next = calloc(f.k, 1);
	if (!sh || !parts || !act || !next)
		rc = parsa_fail(err, PARSA_ENOMEM,
				"flow refinement: out of memory");
	while (rc == 0 && s.rounds < o->max_rounds && !parsa_stop_due(o->stop)) {
		uint64_t np = 0, improved = 0;
		struct pair *p = pairs_of(&f, s.rounds ? act : NULL, sh, parts,
					  &np);

		if (!p) {
			rc = parsa_fail(err, PARSA_ENOMEM,
					"flow refinement: out of memory");
			break;
		}
		s.rounds++;
		memset(next, 0, f.k);
		for (uint64_t i = 0; i < np; i++) {
			int r;

			if (parsa_stop_due(o->stop))
				break;
			s.pairs++;
			/* KaHyPar-MF's adaptive alpha: the same region size
			 * again after an improvement (at most 3 times), half
			 * of it after a failure, down to 1 */
			{
				double al = o->alpha > 0 ? o->alpha
							 : PARSA_FLOW_ALPHA_AUTO;
				int again = 0;

				r = 0;
				while (al >= 1.0) {
					int q = pair_refine(&f, p[i].a, p[i].b,
							    al, &s.moves);

					if (q < 0) {
						r = q;
						break;
					}
					if (q == 1) {
						r = 1;
						if (++again >= 3)
							break;
						continue;
					}
					al /= 2;
				}
			}
			if (r == -1) {
				rc = parsa_fail(err, PARSA_ENOMEM,
						"flow refinement: out of memory");
				break;
			}
			if (r == -2)
				break;
			if (r == 1) {
				improved++;
				next[p[i].a] = next[p[i].b] = 1;
			}
		}
		free(p);
		s.improved += improved;
		memcpy(act, next, f.k);
		if (improved == 0)
			break;
	}
	free(sh);
	free(parts);
	free(act);
	free(next);
	flow_free(&f);
	s.conn_after = parsa_connectivity(used);
	assert(s.conn_after <= s.conn_before);
	if (st)
		*st = s;
	return rc;
}
