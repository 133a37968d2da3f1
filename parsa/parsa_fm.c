/*
 * parsa_fm: connectivity (T_sum) refinement by label-propagation sweeps of
 * single-example moves under the balance and M_max caps; see parsa_fm.h
 * for the objective, the move rule and why it terminates.
 *
 * Phases: init (counts from the placement), per sweep: a seeded shuffle,
 * then for every example gain evaluation (eval_move) and, if accepted, the
 * move (apply_move), which keeps counts, masks and M exact (up to the
 * saturated counts).
 */
#include "parsa_fm.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"
#include "base_prefetch.h"
#include "base_huge.h"
#include "parsa_conn.h"
#include "parsa_metrics.h"
#include "parsa_pcount.h"
#include "parsa_rng.h"

/* features ahead of the current one whose counts and masks are prefetched */
#define FM_AHEAD 8

/* the most rows whose visiting order is kept in 3 bytes an entry */
#define FM_ORDER3_MAX (1u << 24)

static inline uint32_t get3(const uint8_t *a, uint64_t i)
{
	const uint8_t *p = a + 3 * i;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}

static inline void put3(uint8_t *a, uint64_t i, uint32_t v)
{
	uint8_t *p = a + 3 * i;

	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
}


/* Working state of one call (arrays owned, except g, part and used). */
struct fm {
	const struct parsa_graph *g;
	uint32_t *part;
	struct parsa_nbrset *used; /* kept: bit (v, j) set iff cnt[v][j] > 0 */
	uint32_t k;
	uint64_t cap, m_limit;
	const uint32_t *weight; /* n_rows vertex weights, or NULL: all 1 */
	struct parsa_pcount pc; /* cnt(v, j), saturating (parsa_pcount.h) */
	uint64_t *size;    /* k: |U_j| */
	uint32_t *hits;    /* k: |N(u) ∩ N(U_j)| scratch, zero between uses */
	uint64_t *tmask;   /* words: parts with hits > 0, zero between uses */
	uint32_t *order;   /* n_rows: visiting order, or NULL and ... */
	uint8_t *order3;   /* ... 3 bytes an entry (chunked sweeps on at most
			    * FM_ORDER3_MAX rows: |U| bytes less at the
			    * refinement's peak), or both NULL and ... */
	int perm_mode;     /* ... 1: each sweep's order is a parsa_perm
			    * drawn from the seed (parsa_fm_opts.order);
			    * a chunk's entries are computed by its
			    * evaluating tasks */
	struct parsa_perm perm;
	int saturated;     /* some count reached PARSA_PCOUNT_SAT */
	int pmode;         /* 1: gains of the p-fanout surrogate (see below) */
	int force;         /* 1: rebalancing |U_j|: best target with room, any
			    * gain, m_limit ignored; 2: rebalancing M_j: the
			    * same within m_limit */
	int64_t *acc;      /* k: p-mode cost scratch, zero between uses */
	uint64_t *full;    /* words: the mask of all k parts */
	uint32_t *lam;     /* n_cols: parts using the feature (bits of its mask) */
	uint64_t *single;  /* k <= 64: n_cols masks, bit j set iff cnt(v, j)
			    * == 1 (what the gains read: no count lookup);
			    * NULL for larger k */
	uint32_t *mark;    /* n_cols: the sweep that last moved an example
			    * using the feature (0: none) */
	uint32_t epoch;    /* the current sweep, from 1 */
	uint32_t first_exact; /* the first exact sweep's epoch */
	uint32_t ratio;    /* skip u when priv * ratio < deg (0: never) */
	uint32_t *entry;   /* n_rows: the entry placement (p-mode only) */
	/* chunked sweeps (parsa_fm.h); ev == NULL: one move at a time */
	uint32_t chunk, ntasks;
	struct fm_eval *ev;     /* chunk entries: the moves chosen */
	uint32_t *rows;         /* chunk entries: the chunk's order3 or perm */
	int order_last;         /* 1: no sweep after this one reads the
				 * order: sweep_chunked gives the pages of
				 * the part it has read back as it goes (the
				 * order is garbage after it) */
	size_t order_dropped;   /* bytes of the order given back */
	uint32_t *mvu, *mvi;    /* chunk entries: the chunk's moves, their
				 * examples and entries, in order */
	struct fm_scratch *tsc; /* ntasks evaluation scratch sets */
	void *tsc_mem;
	parsa_fm_par_fn par;
	void *par_arg;
	struct fm_cand *cand; /* swap wishes of a sweep / rebalancing moves;
			       * the wishes as keys (wish_key) when
			       * narrow */
	size_t cand_bytes;    /* allocated bytes of cand */
	int narrow;           /* 1: k <= 256 and every exact gain fits 16
			       * bits (|gain| <= a row's degree <=
			       * INT16_MAX): swap wishes take 8 bytes */
	int swaps;            /* swap phase on */
	int nomem;            /* a cand allocation failed: the call goes on
			       * with fewer candidates (every bound but
			       * the rebalancing's still holds), then
			       * fails with PARSA_ENOMEM */
	/* parsa_fm_opts.progress: the sweeps before this one visited
	 * prog_base examples of prog_total */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	uint64_t prog_base, prog_total;
};

/* Evaluation scratch (eval_move): hits and acc (k) and tmask (words),
 * all zero between uses.  The call's own is f->hits, f->tmask, f->acc;
 * each task of a chunked sweep has one more. */
struct fm_scratch {
	uint32_t *hits;
	uint64_t *tmask;
	int64_t *acc;
};

/* A wish of the swap phase: u (in part from) would move to the full part
 * to with the given gain. */
/* 12 bytes: parts fit 16 bits (the counts refuse k > 65536, so the
 * sweeps never run there); a candidate without a target (rebalance) has
 * gain INT32_MIN, which clamp32 never gives. */
struct fm_cand {
	uint16_t from, to;
	int32_t gain;
	uint32_t u;
};

/* The chosen move of one example. */
struct fm_move {
	uint32_t to;  /* target part, or UINT32_MAX: stay */
	int64_t gain; /* priv_a − add_to */
	uint32_t add; /* add_to */
};

/* A chunk entry of a chunked sweep: the move chosen against the chunk's
 * start, and the best full target (for the swap phase). */
struct fm_eval {
	struct fm_move mv, full;
};

/* The visiting order's entry i. */
static inline uint32_t order_at(const struct fm *f, uint32_t i)
{
	if (f->perm_mode)
		return (uint32_t)parsa_perm_at(&f->perm, i);
	return f->order3 ? get3(f->order3, i) : f->order[i];
}

/* order3's entries i and j swapped; entry j fetched (order_shuffle). */
static void swap3(void *arg, uint64_t i, uint64_t j)
{
	uint8_t *a = arg;
	uint32_t t = get3(a, i);

	put3(a, i, get3(a, j));
	put3(a, j, t);
}

static void fetch3(void *arg, uint64_t j)
{
	base_prefetch_w((uint8_t *)arg + 3 * j);
}

/* A sweep's fresh order: a new permutation (perm_mode), else
 * parsa_rng_shuffle_u32 of the stored order (the same draws, the same
 * swaps). */
static void order_shuffle(struct fm *f, struct parsa_rng *rng)
{
	if (f->perm_mode) {
		parsa_perm_init(&f->perm, rng, f->g->n_rows);
		return;
	}
	if (f->order3)
		parsa_rng_shuffle_by(rng, f->g->n_rows, swap3, fetch3,
				     f->order3);
	else
		parsa_rng_shuffle_u32(rng, f->order, f->g->n_rows);
}

static void fm_free(struct fm *f)
{
	parsa_pcount_release(&f->pc);
	free(f->size);
	free(f->hits);
	free(f->tmask);
	free(f->order);
	free(f->order3);
	free(f->rows);
	free(f->cand);
	free(f->acc);
	free(f->full);
	free(f->lam);
	free(f->mark);
	free(f->single);
	free(f->entry);
	free(f->ev);
	free(f->mvu);
	free(f->mvi);
	free(f->tsc);
	free(f->tsc_mem);
}

static uint64_t wt(const struct fm *f, uint32_t u)
{
	return f->weight ? f->weight[u] : 1;
}

/* cnt(v, j) of a part j holding v (bit j of v's mask m set), or
 * PARSA_PCOUNT_BIG for any count at least that: what the gains and marks
 * read (cnt == 1, cnt <= 2, the p-fanout weight) is the same. */
static uint32_t cnt_in(const struct fm *f, const uint64_t *m, uint32_t v,
		       uint32_t j)
{
	return *parsa_pcount_slot(&f->pc, m, v, j);
}

/* Are the exact sweeps chunked (parsa_fm.h)? */
static int fm_chunked(const struct parsa_graph *g,
		      const struct parsa_fm_opts *o)
{
	return o->chunk && g->n_rows >= (o->chunk_min_rows
						 ? o->chunk_min_rows
						 : PARSA_FM_CHUNK_MIN_ROWS);
}

/* f->single[v] for the features [lo, hi): the parts of v's mask where
 * its count is 1 (k <= 64). */
static void single_range(struct fm *f, uint32_t lo, uint32_t hi)
{
	for (uint32_t v = lo; v < hi; v++) {
		const uint8_t *c = f->pc.pool + (f->pc.hdr[v] & PARSA_PCOUNT_OFF);
		uint64_t x = f->used->bits[v], one = 0;

		for (; x; x &= x - 1)
			one |= *c++ == 1 ? x & -x : 0;
		f->single[v] = one;
	}
}

/* The singletons in FM_SINGLE_TASKS ranges of features on the sweeps'
 * threads (each feature on its own: the same masks for any split); more
 * ranges than threads, as the features' parts are skewed (1-2 s on one
 * thread at a billion nonzeros). */
#define FM_SINGLE_TASKS 16

static void single_task(void *arg, uint32_t t)
{
	struct fm *f = arg;
	uint64_t n = f->g->n_cols;

	single_range(f, (uint32_t)(n * t / FM_SINGLE_TASKS),
		     (uint32_t)(n * (t + 1) / FM_SINGLE_TASKS));
}

static int fm_init(struct fm *f, const struct parsa_graph *g, uint32_t *part,
		   struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		   struct parsa_err *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->g = g;
	f->part = part;
	f->used = used;
	f->k = used->k;
	f->cap = o->cap;
	f->m_limit = o->m_limit;
	f->weight = o->weight;
	f->swaps = o->swaps;
	f->ratio = o->skip_ratio;
	f->size = calloc(f->k, sizeof(uint64_t));
	f->hits = calloc(f->k, sizeof(uint32_t));
	f->acc = calloc(f->k, sizeof(int64_t));
	f->full = calloc(used->words, sizeof(uint64_t));
	/* λ is the popcount of a one-word mask; the marks are read from the
	 * second exact sweep on */
	if (used->words > 1)
		f->lam = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	if (o->max_passes > 1)
		f->mark = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	f->tmask = calloc(used->words, sizeof(uint64_t));
	f->perm_mode = o->order == PARSA_FM_ORDER_PERM ||
		       (o->order == PARSA_FM_ORDER_AUTO && fm_chunked(g, o));
	if (f->perm_mode)
		; /* nothing stored */
	else if (fm_chunked(g, o) && g->n_rows <= FM_ORDER3_MAX)
		f->order3 = malloc((size_t)g->n_rows * 3 + 1);
	else
		f->order = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	if (!f->size || !f->hits || !f->acc || !f->full ||
	    (o->max_passes > 1 && !f->mark) || (used->words > 1 && !f->lam) ||
	    !f->tmask || (!f->order && !f->order3 && !f->perm_mode)) {
		fm_free(f);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory (refine: %u features x %u parts)",
				  g->n_cols, f->k);
	}
	for (uint32_t j = 0; j < f->k; j++)
		f->full[j >> 6] |= 1ULL << (j & 63);
	for (uint32_t u = 0; !f->perm_mode && u < g->n_rows; u++)
		if (f->order3)
			put3(f->order3, u, u);
		else
			f->order[u] = u;
	for (uint32_t v = 0; f->lam && v < g->n_cols; v++)
		f->lam[v] = parsa_nbrset_count(used, v);
	for (uint32_t u = 0; u < g->n_rows; u++)
		f->size[part[u]] += wt(f, u);
	/* narrow swap wishes: the exact gains are priv - add, both at most
	 * the row's degree */
	f->narrow = f->k <= 256;
	for (uint32_t u = 0; f->narrow && u < g->n_rows; u++)
		if (g->row_ptr[u + 1] - g->row_ptr[u] > INT16_MAX)
			f->narrow = 0;
	/* on the sweeps' threads, by ranges of features (a large graph's
	 * counts take as long as a sweep's evaluation) */
	rc = parsa_pcount_build_par(&f->pc, g, part, used, &f->saturated,
				    fm_chunked(g, o) ? o->par : NULL,
				    o->par_arg, o->par_tasks, err);
	if (rc == 0 && used->words == 1) {
		f->single = malloc(((size_t)g->n_cols + 1) * sizeof(uint64_t));
		base_huge(f->single, (size_t)g->n_cols * sizeof(uint64_t));
		if (!f->single)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (refine: "
					"%u features)", g->n_cols);
		else if (fm_chunked(g, o) && o->par)
			o->par(o->par_arg, FM_SINGLE_TASKS, single_task, f);
		else
			single_range(f, 0, g->n_cols);
	}
	if (rc)
		fm_free(f);
	return rc;
}

/*
 * The p-fanout surrogate (Kabiljo et al., Social Hash Partitioner, 2017):
 * Σ_v Σ_j (1 − q^cnt[v][j]) with q = 1 − p, p = 1/2, whose move gains are
 * smooth in the counts (a part holding many of a feature's examples
 * attracts more than one holding a single one), which lets the sweeps
 * leave the plateaus of the exact objective.  Fixed point: p q^c scaled
 * by 2^20; counts >= 40 weigh 0.
 */
#define FM_P_ONE ((int64_t)1 << 19) /* p q^0 = 1/2 */

static int64_t pw_of(uint32_t c)
{
	return c >= 40 ? 0 : FM_P_ONE >> c;
}

/*
 * p-mode: hits[j] and acc[j] += pw(cnt[v][j]) − p over every feature v of
 * u and part j using it, those parts set in tmask; returns Σ_v
 * pw(cnt[v][a] − 1), a = u's part.
 */
static int64_t pmode_hits(const struct fm *f, struct fm_scratch *sc,
			  uint32_t u)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;
	uint32_t a = f->part[u];
	int64_t rm = 0;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		const uint64_t *m = parsa_nbrset_mask(s, v);
		/* v's counts in the order of its mask's bits */
		const uint8_t *c = f->pc.pool +
				    (f->pc.hdr[v] & PARSA_PCOUNT_OFF);

		rm += pw_of(cnt_in(f, m, v, a) - 1);
		for (uint32_t w = 0; w < s->words; w++) {
			sc->tmask[w] |= m[w];
			for (uint64_t x = m[w]; x; x &= x - 1) {
				uint32_t j = w * 64 + (uint32_t)__builtin_ctzll(x);

				sc->hits[j]++;
				sc->acc[j] += pw_of(*c++) - FM_P_ONE;
			}
		}
	}
	return rm;
}

/* A feature's header and mask, then (FM_AHEAD later) its count, are
 * fetched ahead: the count's address needs the first two.  With the
 * singleton masks (k <= 64) the evaluation reads those instead of the
 * counts. */
static void fetch_ahead(const struct fm *f, uint32_t v)
{
	if (f->single)
		base_prefetch(&f->single[v]);
	else
		base_prefetch(&f->pc.hdr[v]);
	base_prefetch(parsa_nbrset_mask(f->used, v));
	if (f->used->words > 1)
		base_prefetch(&f->lam[v]);
}

/* priv = #{v ∈ N(u) : cnt(v, a) == 1}, shared = #{v ∈ N(u) : λ_v ≥ 2}
 * (a = u's part). */
static void priv_shared(const struct fm *f, uint32_t u, uint32_t a,
			uint32_t *priv, uint32_t *shared)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;
	const uint32_t *col = g->col;
	const uint8_t *ring[2 * FM_AHEAD];
	uint64_t beg = g->row_ptr[u], end = g->row_ptr[u + 1];
	uint32_t p = 0, sh = 0;

	if (f->single) { /* k <= 64: the singleton masks */
		for (uint64_t e = beg; e < end; e++) {
			uint32_t v = col[e];
			uint64_t m;

			if (e + FM_AHEAD < end) {
				base_prefetch(&f->single[col[e + FM_AHEAD]]);
				base_prefetch(&s->bits[col[e + FM_AHEAD]]);
			}
			m = s->bits[v];
			p += f->single[v] >> a & 1;
			sh += (m & (m - 1)) != 0;
		}
		*priv = p;
		*shared = sh;
		return;
	}
	for (uint64_t e = beg; e < end && e < beg + 2 * FM_AHEAD; e++)
		fetch_ahead(f, col[e]);
	for (uint64_t e = beg; e < end && e < beg + FM_AHEAD; e++) {
		ring[e % (2 * FM_AHEAD)] = parsa_pcount_slot(
			&f->pc, parsa_nbrset_mask(s, col[e]), col[e], a);
		base_prefetch(ring[e % (2 * FM_AHEAD)]);
	}
	for (uint64_t e = beg; e < end; e++) {
		uint32_t v = col[e];
		const uint64_t *m = parsa_nbrset_mask(s, v);

		if (e + 2 * FM_AHEAD < end)
			fetch_ahead(f, col[e + 2 * FM_AHEAD]);
		if (e + FM_AHEAD < end) {
			uint32_t w = col[e + FM_AHEAD];
			const uint8_t *c = parsa_pcount_slot(
				&f->pc, parsa_nbrset_mask(s, w), w, a);

			ring[(e + FM_AHEAD) % (2 * FM_AHEAD)] = c;
			base_prefetch(c);
		}
		p += *ring[e % (2 * FM_AHEAD)] == 1;
		sh += s->words == 1 ? (m[0] & (m[0] - 1)) != 0 : f->lam[v] >= 2;
	}
	*priv = p;
	*shared = sh;
}

/* Is (gain, m) a better choice than the current best (ties: smaller M of
 * the target after the move, then lower index)? */
static int better(const struct fm_move *best, uint64_t best_m, uint32_t j,
		  int64_t gain, uint64_t m)
{
	return best->to == UINT32_MAX || gain > best->gain ||
	       (gain == best->gain &&
		(m < best_m || (m == best_m && j < best->to)));
}

/*
 * Best move of u (see parsa_fm.h for the rule); .to == UINT32_MAX: stay.
 * *full receives the best target among the parts at the cap (for the swap
 * phase), by the same order, whatever its gain.
 */
static struct fm_move eval_move_in(const struct fm *f, struct fm_scratch *sc,
				   uint32_t u, struct fm_move *full)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;
	uint32_t a = f->part[u], deg = parsa_graph_degree(g, u);
	uint32_t priv = 0, base = 0, shared = 0;
	int64_t rm = 0; /* p-mode: Σ_v p q^(cnt[v][a] - 1) */
	struct fm_move best = { UINT32_MAX, 0, 0 };
	uint64_t best_m = UINT64_MAX, full_m = UINT64_MAX;

	*full = (struct fm_move){ UINT32_MAX, 0, 0 };
	priv_shared(f, u, a, &priv, &shared);
	/* without a private feature no move lowers M_a (memory rebalancing)
	 * or Σ M; and since hits[j] <= shared for j != a and gain_j = priv −
	 * deg + hits[j], with too few shared features every gain is < 0 (the
	 * sweeps' skip_ratio also drops examples that can gain little) */
	if (!f->pmode && f->force != 1 && priv == 0)
		return best;
	if (!f->pmode && f->force == 0 &&
	    (shared + priv < deg ||
	     (f->ratio && (uint64_t)priv * f->ratio < deg)))
		return best;
	if (f->pmode)
		rm = pmode_hits(f, sc, u);
	else
		base = parsa_conn_hits(g, u, s, f->lam, sc->hits, sc->tmask);
	if (base) /* every part shares a feature with u: all are candidates */
		for (uint32_t w = 0; w < s->words; w++)
			sc->tmask[w] = f->full[w];
	/* the candidates in increasing order (better() is a total order:
	 * the choice does not depend on the order) */
	for (uint32_t w = 0, j; (j = parsa_conn_pop(sc->tmask, s->words, &w)) !=
				UINT32_MAX;) {
		uint32_t add = deg - sc->hits[j];
		int64_t gain = f->pmode ? rm - (FM_P_ONE * (int64_t)deg + sc->acc[j])
					: (int64_t)priv - add;
		uint64_t mj = s->size[j] + add;

		sc->hits[j] = 0;
		sc->acc[j] = 0;
		if (j == a || (mj > f->m_limit && f->force != 1))
			continue;
		if (f->size[j] + wt(f, u) <= f->cap) {
			if (better(&best, best_m, j, gain, mj)) {
				best = (struct fm_move){ j, gain, add };
				best_m = mj;
			}
		} else if (better(full, full_m, j, gain, mj)) {
			*full = (struct fm_move){ j, gain, add };
			full_m = mj;
		}
	}
	if (f->force)
		return best;
	if (best.to != UINT32_MAX && f->pmode && best.gain <= 0)
		best.to = UINT32_MAX;
	if (best.to != UINT32_MAX && !f->pmode &&
	    !(best.gain > 0 ||
	      (best.gain == 0 && priv > 0 && best_m < s->size[a])))
		best.to = UINT32_MAX;
	return best;
}

/* eval_move_in with the call's own scratch. */
static struct fm_move eval_move(struct fm *f, uint32_t u, struct fm_move *full)
{
	struct fm_scratch sc = { f->hits, f->tmask, f->acc };

	return eval_move_in(f, &sc, u, full);
}

/* Move u from its part a to b, keeping cnt, the masks and sizes; returns
 * the change of Σ_j M_j.  Every feature of u that b does not hold needs
 * room for one more part (make_room), unless this undoes the last moves
 * in reverse order (parsa_pcount.h). */
static int64_t apply_move(struct fm *f, uint32_t u, uint32_t b)
{
	const struct parsa_graph *g = f->g;
	struct parsa_nbrset *s = f->used;
	uint32_t a = f->part[u];
	int64_t delta = 0;

	for (uint64_t e = g->row_ptr[u], end = g->row_ptr[u + 1]; e < end; e++) {
		uint32_t v = g->col[e];
		const uint64_t *m = parsa_nbrset_mask(s, v);
		uint32_t cb, ca, lam;

		if (e + 4 < end) /* (its header and mask are fetched) */
			base_prefetch(f->pc.pool + (f->pc.hdr[g->col[e + 4]] &
							 PARSA_PCOUNT_OFF));
		cb = m[b >> 6] >> (b & 63) & 1 ? cnt_in(f, m, v, b) : 0;
		ca = cnt_in(f, m, v, a);

		/* only the counts 2 -> 1 -> 0 and 0 -> 1 -> 2 change gains */
		if (f->mark && (ca <= 2 || cb <= 1))
			f->mark[v] = f->epoch;
		lam = f->lam ? f->lam[v] : parsa_popcount64(m[0]);
		delta += parsa_pcount_move(&f->pc, s, v, a, b, &lam,
					   &f->saturated);
		if (f->lam)
			f->lam[v] = lam;
		if (f->single) { /* the counts after the move: 1? (a big
				  * count stays big: not 1) */
			ca -= ca != PARSA_PCOUNT_BIG;
			cb += cb != PARSA_PCOUNT_BIG;
			f->single[v] = (f->single[v] &
					~(1ULL << a) & ~(1ULL << b)) |
				       (uint64_t)(ca == 1) << a |
				       (uint64_t)(cb == 1) << b;
		}
	}
	f->part[u] = b;
	f->size[a] -= wt(f, u);
	f->size[b] += wt(f, u);
	return delta;
}

/* Room in the counts of every feature of u that part b does not hold for
 * one more part (parsa_pcount_reserve).  0, or -1 when out of memory:
 * f->nomem is set and the move must not be made (the call goes on with
 * fewer moves, then fails with PARSA_ENOMEM). */
static int make_room(struct fm *f, uint32_t u, uint32_t b)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		const uint64_t *m = parsa_nbrset_mask(s, v);

		if (!(m[b >> 6] >> (b & 63) & 1) &&
		    parsa_pcount_reserve(&f->pc, v, f->lam ? f->lam[v]
							   : parsa_popcount64(m[0]))) {
			f->nomem = 1;
			return -1;
		}
	}
	return 0;
}

/* apply_move after make_room: 1 (made, its change of Σ_j M_j added to
 * *delta if not NULL) or 0 (out of memory, not made). */
static int try_move(struct fm *f, uint32_t u, uint32_t b, int64_t *delta)
{
	int64_t d;

	if (make_room(f, u, b))
		return 0;
	d = apply_move(f, u, b);
	if (delta)
		*delta += d;
	return 1;
}

static uint64_t sum_m(const struct parsa_nbrset *s)
{
	uint64_t t = 0;

	for (uint32_t j = 0; j < s->k; j++)
		t += s->size[j];
	return t;
}

static int32_t clamp32(int64_t x)
{
	return x > INT32_MAX ? INT32_MAX : x < INT32_MIN + 1 ? INT32_MIN + 1 : (int32_t)x;
}

/* Room for candidate nc of es bytes (grows cand); 0 if out of memory (the
 * swap phase and rebalancing then work with fewer candidates, and the call
 * ends with PARSA_ENOMEM: its result would not be the one the seed
 * gives). */
static int cand_room_of(struct fm *f, uint32_t nc, size_t es)
{
	struct fm_cand *p;
	size_t cap;

	if (((size_t)nc + 1) * es <= f->cand_bytes)
		return 1;
	cap = f->cand_bytes ? 2 * f->cand_bytes : 1024 * es;
	while (cap < ((size_t)nc + 1) * es)
		cap *= 2;
	p = realloc(f->cand, cap);
	if (!p) {
		f->nomem = 1;
		return 0;
	}
	f->cand = p;
	f->cand_bytes = cap;
	return 1;
}

static int cand_room(struct fm *f, uint32_t nc)
{
	return cand_room_of(f, nc, sizeof(struct fm_cand));
}

/*
 * A swap wish when f->narrow: from and to (< 256) in the top 16 bits,
 * then INT16_MAX - gain (|gain| <= INT16_MAX), then u: the keys' order
 * is cmp_cand's (from, to, gain descending, u).
 */
static inline uint64_t wish_key(uint32_t from, uint32_t to, int64_t gain,
				uint32_t u)
{
	return (uint64_t)from << 56 | (uint64_t)to << 48 |
	       (uint64_t)(INT16_MAX - gain) << 32 | u;
}

static inline uint32_t wish_from(uint64_t x) { return (uint32_t)(x >> 56); }
static inline uint32_t wish_to(uint64_t x) { return (uint32_t)(x >> 48) & 255; }
static inline int64_t wish_gain(uint64_t x)
{
	return INT16_MAX - (int64_t)((x >> 32) & 0xffff);
}
static inline uint32_t wish_u(uint64_t x) { return (uint32_t)x; }

/* Swap wish nc (u from its part to `to`, exact gain `gain`) into cand:
 * 1, or 0 when out of memory (cand_room). */
static int wish_add(struct fm *f, uint32_t nc, uint32_t u, uint32_t to,
		    int64_t gain)
{
	if (f->narrow) {
		if (!cand_room_of(f, nc, sizeof(uint64_t)))
			return 0;
		((uint64_t *)(void *)f->cand)[nc] =
			wish_key(f->part[u], to, gain, u);
		return 1;
	}
	if (!cand_room(f, nc))
		return 0;
	f->cand[nc] = (struct fm_cand){ (uint16_t)f->part[u], (uint16_t)to,
					clamp32(gain), u };
	return 1;
}

static int cmp_cand(const void *x, const void *y)
{
	const struct fm_cand *p = x, *q = y;

	if (p->from != q->from)
		return p->from < q->from ? -1 : 1;
	if (p->to != q->to)
		return p->to < q->to ? -1 : 1;
	if (p->gain != q->gain)
		return p->gain > q->gain ? -1 : 1;
	return p->u < q->u ? -1 : p->u > q->u;
}

/*
 * Candidates sorted in place by cmp (a total order, so the result is the
 * one qsort gives): glibc's qsort is a merge sort with a buffer as large
 * as the array (1.6 MB at the refinement's peak at 10M nonzeros).  An
 * introsort: quicksort on the median of three, heapsort past 2 log2 n
 * levels, insertion sort below 16 elements.
 */
typedef int (*cand_cmp_fn)(const void *, const void *);

static void cand_swap(struct fm_cand *a, struct fm_cand *b)
{
	struct fm_cand t = *a;

	*a = *b;
	*b = t;
}

static void cand_sift(struct fm_cand *c, size_t i, size_t n, cand_cmp_fn cmp)
{
	for (size_t j; (j = 2 * i + 1) < n; i = j) {
		if (j + 1 < n && cmp(&c[j], &c[j + 1]) < 0)
			j++;
		if (cmp(&c[i], &c[j]) >= 0)
			return;
		cand_swap(&c[i], &c[j]);
	}
}

static void cand_heapsort(struct fm_cand *c, size_t n, cand_cmp_fn cmp)
{
	for (size_t i = n / 2; i-- > 0;)
		cand_sift(c, i, n, cmp);
	for (size_t m = n; m-- > 1;) {
		cand_swap(&c[0], &c[m]);
		cand_sift(c, 0, m, cmp);
	}
}

static void cand_intro(struct fm_cand *c, size_t n, int depth, cand_cmp_fn cmp)
{
	while (n > 16) {
		size_t m = n / 2, i = 0, j = n - 1;
		struct fm_cand pv;

		if (depth-- == 0) {
			cand_heapsort(c, n, cmp);
			return;
		}
		/* median of three into c[m], the pivot */
		if (cmp(&c[m], &c[0]) < 0)
			cand_swap(&c[m], &c[0]);
		if (cmp(&c[n - 1], &c[m]) < 0) {
			cand_swap(&c[n - 1], &c[m]);
			if (cmp(&c[m], &c[0]) < 0)
				cand_swap(&c[m], &c[0]);
		}
		pv = c[m];
		for (;;) { /* Hoare: c[0..j] <= pv <= c[j+1..n) */
			while (cmp(&c[i], &pv) < 0)
				i++;
			while (cmp(&pv, &c[j]) < 0)
				j--;
			if (i >= j)
				break;
			cand_swap(&c[i], &c[j]);
			i++;
			j--;
		}
		/* the smaller side by recursion, the larger in the loop */
		if (j + 1 < n - j - 1) {
			cand_intro(c, j + 1, depth, cmp);
			c += j + 1;
			n -= j + 1;
		} else {
			cand_intro(c + j + 1, n - j - 1, depth, cmp);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && cmp(&c[j], &c[j - 1]) < 0; j--)
			cand_swap(&c[j], &c[j - 1]);
}

static void cand_sort(struct fm_cand *c, uint32_t n, cand_cmp_fn cmp)
{
	int depth = 0;

	for (uint32_t m = n; m > 1; m >>= 1)
		depth += 2;
	cand_intro(c, n, depth, cmp);
}

/* First candidate of the sorted list with (from, to) >= (a, b). */
static uint32_t lower_bound(const struct fm_cand *c, uint32_t n, uint32_t a,
			    uint32_t b)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c[mid].from < a || (c[mid].from == a && c[mid].to < b))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Exchange u (in a) with w (in b), both parts at the cap, when the pair
 * lowers Σ M exactly and keeps M_a, M_b within m_limit; otherwise undo.
 * Returns the drop of Σ M (0 if undone).
 */
static uint64_t try_pair(struct fm *f, uint32_t u, uint32_t w)
{
	uint32_t a = f->part[u], b = f->part[w];
	int64_t d = 0;

	if (!try_move(f, u, b, &d))
		return 0;
	if (!try_move(f, w, a, &d)) {
		apply_move(f, u, a); /* undoes: needs no room */
		return 0;
	}
	if (d < 0 && f->used->size[a] <= f->m_limit &&
	    f->used->size[b] <= f->m_limit && f->size[a] <= f->cap &&
	    f->size[b] <= f->cap)
		return (uint64_t)-d;
	apply_move(f, w, b);
	apply_move(f, u, a);
	return 0;
}

/*
 * The swap phase: for every pair of parts {a, b}, the examples of a that
 * want b (sorted by gain) are exchanged with those of b that want a while
 * the two recorded gains sum to > 0 (then checked exactly by try_pair).
 */
static uint64_t swap_phase_narrow(struct fm *f, uint32_t n,
				  uint64_t *moves)
{
	uint64_t *c = (uint64_t *)(void *)f->cand;
	uint64_t drop = 0;

	base_sort_u64(c, n);
	for (uint32_t i = 0; i < n;) {
		uint32_t a = wish_from(c[i]), b = wish_to(c[i]), ie = i, j, je;

		while (ie < n && c[ie] >> 48 == c[i] >> 48)
			ie++;
		if (a < b) {
			j = (uint32_t)base_lower_bound_u64(
				c, n, wish_key(b, a, INT16_MAX, 0));
			for (je = j; je < n && wish_from(c[je]) == b &&
				     wish_to(c[je]) == a;)
				je++;
			for (uint32_t x = i; x < ie && j < je &&
					     wish_gain(c[x]) + wish_gain(c[j]) > 0;
			     x++, j++) {
				uint32_t ux = wish_u(c[x]), uj = wish_u(c[j]);
				uint64_t dd;

				if (f->part[ux] != a || f->part[uj] != b)
					continue;
				dd = try_pair(f, ux, uj);
				drop += dd;
				*moves += dd ? 2 : 0;
			}
		}
		i = ie;
	}
	return drop;
}

static uint64_t swap_phase(struct fm *f, uint32_t n, uint64_t *moves)
{
	struct fm_cand *c = f->cand;
	uint64_t drop = 0;

	if (f->narrow)
		return swap_phase_narrow(f, n, moves);
	cand_sort(c, n, cmp_cand);
	for (uint32_t i = 0; i < n;) {
		uint32_t a = c[i].from, b = c[i].to, ie = i, j, je;

		while (ie < n && c[ie].from == a && c[ie].to == b)
			ie++;
		if (a < b) {
			j = lower_bound(c, n, b, a);
			for (je = j; je < n && c[je].from == b && c[je].to == a;)
				je++;
			for (uint32_t x = i; x < ie && j < je &&
					     (int64_t)c[x].gain + c[j].gain > 0; x++, j++) {
				uint64_t dd;

				if (f->part[c[x].u] != a || f->part[c[j].u] != b)
					continue;
				dd = try_pair(f, c[x].u, c[j].u);
				drop += dd;
				*moves += dd ? 2 : 0;
			}
		}
		i = ie;
	}
	return drop;
}

/*
 * Is u worth evaluating?  The first sweep and p-fanout sweeps look at every
 * example; later exact sweeps only at those with a feature whose counts
 * crossed 0, 1 or 2 in some part in this sweep or the previous one (the
 * others' gains are unchanged; only the caps' state may differ).
 */
static int active(const struct fm *f, uint32_t u)
{
	const struct parsa_graph *g = f->g;

	if (f->pmode || f->epoch <= f->first_exact)
		return 1;
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
		if (f->mark[g->col[e]] + 1 >= f->epoch)
			return 1;
	return 0;
}

/* Chunked sweeps: scratch for o->par_tasks tasks and a chunk's entries;
 * 0 or PARSA_ENOMEM. */
static int chunk_init(struct fm *f, const struct parsa_fm_opts *o,
		      struct parsa_err *err)
{
	uint32_t k = f->k, words = f->used->words;
	/* one block per task, a multiple of 64 bytes (aligned for the
	 * uint64_t words, and no cache line shared between tasks) */
	size_t per = ((size_t)k * (sizeof(uint32_t) + sizeof(int64_t)) +
		      (size_t)words * sizeof(uint64_t) + 63) & ~(size_t)63;
	unsigned char *p;

	f->chunk = o->chunk;
	f->ntasks = o->par_tasks ? o->par_tasks : 1;
	if (f->ntasks > f->chunk)
		f->ntasks = f->chunk;
	f->par = o->par;
	f->par_arg = o->par_arg;
	f->ev = malloc((size_t)f->chunk * sizeof(*f->ev));
	f->rows = f->order3 || f->perm_mode
			  ? malloc((size_t)f->chunk * sizeof(uint32_t))
			  : NULL;
	f->mvu = malloc((size_t)f->chunk * sizeof(uint32_t));
	f->mvi = malloc((size_t)f->chunk * sizeof(uint32_t));
	f->tsc = calloc(f->ntasks, sizeof(*f->tsc));
	f->tsc_mem = calloc(f->ntasks, per);
	if (!f->ev || !f->mvu || !f->mvi || !f->tsc || !f->tsc_mem ||
	    ((f->order3 || f->perm_mode) && !f->rows))
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine: "
				  "%u tasks of chunked sweeps)", f->ntasks);
	p = f->tsc_mem;
	for (uint32_t t = 0; t < f->ntasks; t++, p += per) {
		f->tsc[t].tmask = (uint64_t *)p;
		f->tsc[t].acc = (int64_t *)(p + (size_t)words * sizeof(uint64_t));
		f->tsc[t].hits = (uint32_t *)(p + (size_t)words * sizeof(uint64_t) +
					      (size_t)k * sizeof(int64_t));
	}
	return 0;
}

/* The rows ahead of rows[i] (of rows[..hi)) fetched in stages, each
 * needing the last: the offsets of the 6th, the features and the part of
 * the 3rd, the headers and masks of the next one's features. */
static void fetch_rows(const struct fm *f, const uint32_t *rows, uint32_t i,
		       uint32_t hi)
{
	const struct parsa_graph *g = f->g;

	if (i + 6 < hi)
		base_prefetch(&g->row_ptr[rows[i + 6]]);
	if (i + 3 < hi) {
		base_prefetch(&g->col[g->row_ptr[rows[i + 3]]]);
		base_prefetch(&f->part[rows[i + 3]]);
	}
	if (i + 1 < hi) {
		uint32_t r = rows[i + 1];
		uint64_t e = g->row_ptr[r], end = g->row_ptr[r + 1];

		for (end = end < e + 2 * FM_AHEAD ? end : e + 2 * FM_AHEAD;
		     e < end; e++)
			fetch_ahead(f, g->col[e]);
	}
}

/* One task of a chunk's evaluation: its share of rows[0..n), against the
 * state at the chunk's start (which no task changes). */
struct chunk_job {
	const struct fm *f;
	const uint32_t *rows;
	uint32_t n;
	uint32_t i0; /* the chunk's first entry of the sweep's order */
};

static void chunk_task(void *arg, uint32_t t)
{
	const struct chunk_job *cj = arg;
	const struct fm *f = cj->f;
	uint32_t lo = (uint32_t)((uint64_t)cj->n * t / f->ntasks);
	uint32_t hi = (uint32_t)((uint64_t)cj->n * (t + 1) / f->ntasks);

	for (uint32_t i = lo; f->perm_mode && i < hi; i++)
		f->rows[i] = (uint32_t)parsa_perm_at(&f->perm, cj->i0 + i);
	for (uint32_t i = lo; i < hi; i++) {
		struct fm_eval *e = &f->ev[i];

		fetch_rows(f, cj->rows, i, hi);
		if (!active(f, cj->rows[i])) {
			e->mv.to = e->full.to = UINT32_MAX;
			continue;
		}
		e->mv = eval_move_in(f, &f->tsc[t], cj->rows[i], &e->full);
	}
}

/* Does moving u to b still qualify (the rule of parsa_fm.h: caps, then a
 * positive gain or a zero gain that lowers max(M_a, M_b)), on the current
 * counts? */
static int still_good(const struct fm *f, uint32_t u, uint32_t b)
{
	const struct parsa_graph *g = f->g;
	const struct parsa_nbrset *s = f->used;
	uint32_t a = f->part[u], priv = 0, add = 0;
	uint64_t mb;
	int64_t gain;

	if (b == a || f->size[b] + wt(f, u) > f->cap)
		return 0;
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];

		const uint64_t *m = parsa_nbrset_mask(s, v);

		base_prefetch(&f->pc.hdr[v]); /* for apply_move */
		priv += f->single ? f->single[v] >> a & 1
				  : cnt_in(f, m, v, a) == 1;
		add += !(m[b >> 6] >> (b & 63) & 1);
	}
	mb = s->size[b] + add;
	gain = (int64_t)priv - add;
	return mb <= f->m_limit &&
	       (gain > 0 || (gain == 0 && priv > 0 && mb < s->size[a]));
}

/* A chunked exact sweep (parsa_fm.h): like sweep(), the chunks' moves
 * chosen by tasks against the chunk's start, applied in order if still
 * good; stop is polled before every chunk. */
static int64_t sweep_chunked(struct fm *f, const struct parsa_stop *stop,
			     uint64_t *moves)
{
	uint64_t before = sum_m(f->used);
	uint32_t nc = 0, n = f->g->n_rows;

	for (uint32_t i0 = 0; i0 < n; i0 += f->chunk) {
		struct chunk_job cj = { f, f->order3 || f->perm_mode
					       ? f->rows : f->order + i0,
					n - i0 < f->chunk ? n - i0 : f->chunk,
					i0 };

		if (i0 && parsa_stop_due(stop))
			break;
		if (f->order_last && !f->perm_mode) {
			/* the chunks before i0 are read: their order's pages
			 * leave the resident set while the candidates grow
			 * (|U| 3 or 4 bytes at the end of the last sweep) */
			size_t w = f->order3 ? 3 : sizeof(uint32_t);
			uint8_t *o = f->order3 ? f->order3
					       : (uint8_t *)f->order;

			base_huge_drop(o + f->order_dropped,
				       (size_t)i0 * w - f->order_dropped);
			f->order_dropped = (size_t)i0 * w;
		}
		for (uint32_t i = 0; f->order3 && i < cj.n; i++)
			f->rows[i] = get3(f->order3, i0 + i);
		if (f->par)
			f->par(f->par_arg, f->ntasks, chunk_task, &cj);
		else
			for (uint32_t t = 0; t < f->ntasks; t++)
				chunk_task(&cj, t);
		/* the moves listed, the swap wishes taken (an example
		 * without a move keeps its part through the chunk's moves) */
		uint32_t nm = 0;

		for (uint32_t i = 0; i < cj.n; i++) {
			uint32_t u = cj.rows[i];
			const struct fm_eval *e = &f->ev[i];

			if (e->mv.to != UINT32_MAX) {
				f->mvu[nm] = u;
				f->mvi[nm++] = i;
			} else if (e->full.to != UINT32_MAX && f->swaps &&
				   wish_add(f, nc, u, e->full.to,
					    e->full.gain)) {
				nc++;
			}
		}
		/* the moves in order, if still good; the next ones' rows
		 * fetched ahead (one move's random reads at a time
		 * otherwise) */
		for (uint32_t x = 0; x < nm; x++) {
			uint32_t u = f->mvu[x], to = f->ev[f->mvi[x]].mv.to;

			fetch_rows(f, f->mvu, x, nm);
			if (still_good(f, u, to) && try_move(f, u, to, NULL))
				++*moves;
		}
		if (f->progress)
			f->progress(f->progress_arg, f->prog_base + i0 + cj.n,
				    f->prog_total);
	}
	if (nc)
		swap_phase(f, nc, moves);
	assert(sum_m(f->used) <= before);
	return (int64_t)before - (int64_t)sum_m(f->used);
}

/* One sweep in a fresh random order (cut short when stop comes due,
 * polled every PARSA_STOP_POPS examples), then the swap phase; returns the
 * drop of Σ M.  Exact sweeps are chunked when f->ev is set. */
static int64_t sweep(struct fm *f, struct parsa_rng *rng,
		     const struct parsa_stop *stop, uint64_t *moves)
{
	uint64_t before = sum_m(f->used);
	uint32_t nc = 0;

	f->epoch++;
	order_shuffle(f, rng);
	if (f->ev && !f->pmode)
		return sweep_chunked(f, stop, moves);
	for (uint32_t i = 0; i < f->g->n_rows; i++) {
		uint32_t u = order_at(f, i);
		struct fm_move full, mv;

		if (i % PARSA_STOP_POPS == PARSA_STOP_POPS - 1 &&
		    parsa_stop_due(stop))
			break;
		if (!active(f, u))
			continue;
		mv = eval_move(f, u, &full);

		if (mv.to != UINT32_MAX) {
			*moves += (uint64_t)try_move(f, u, mv.to, NULL);
		} else if (full.to != UINT32_MAX && f->swaps && !f->pmode &&
			   wish_add(f, nc, u, full.to, full.gain)) {
			nc++;
		}
	}
	if (nc)
		swap_phase(f, nc, moves);
	assert(f->pmode || sum_m(f->used) <= before);
	return (int64_t)before - (int64_t)sum_m(f->used);
}

/* A sweep ended (whole, or cut short): its examples count as visited. */
static void sweep_done(struct fm *f)
{
	f->prog_base += f->g->n_rows;
	if (f->progress)
		f->progress(f->progress_arg, f->prog_base, f->prog_total);
}

static int cmp_gain(const void *x, const void *y)
{
	const struct fm_cand *p = x, *q = y;

	if (p->gain != q->gain)
		return p->gain > q->gain ? -1 : 1;
	return p->u < q->u ? -1 : p->u > q->u;
}

/* The part with the smallest |U_j| (ties: lowest index). */
static uint32_t lightest(const struct fm *f)
{
	uint32_t b = 0;

	for (uint32_t j = 1; j < f->k; j++)
		if (f->size[j] < f->size[b])
			b = j;
	return b;
}

/*
 * Rebalancing: while a part is above the cap, move its examples out, best
 * gain first (to the best part with room that shares a feature, else the
 * lightest part).  Used when the entry placement breaks the cap (the
 * coarse-to-fine projection of parsa_ml).  May raise Σ M.
 */
static void rebalance(struct fm *f, uint64_t *moves)
{
	uint32_t nc = 0;

	f->force = 1;
	for (uint32_t u = 0; u < f->g->n_rows; u++) {
		struct fm_move full, mv;

		if (f->size[f->part[u]] <= f->cap)
			continue;
		mv = eval_move(f, u, &full);
		if (!cand_room(f, nc))
			break;
		f->cand[nc++] = (struct fm_cand){
			(uint16_t)f->part[u], (uint16_t)mv.to,
			mv.to == UINT32_MAX ? INT32_MIN : clamp32(mv.gain), u };
	}
	if (nc == 0) {
		f->force = 0;
		return;
	}
	cand_sort(f->cand, nc, cmp_gain);
	for (uint32_t i = 0; i < nc; i++) {
		uint32_t u = f->cand[i].u, a = f->part[u];
		uint32_t b = f->cand[i].gain == INT32_MIN ? UINT32_MAX
							   : f->cand[i].to;
		struct fm_move full;

		if (f->size[a] <= f->cap)
			continue;
		if (b == UINT32_MAX || f->size[b] + wt(f, u) > f->cap)
			b = eval_move(f, u, &full).to;
		if (b == UINT32_MAX || f->size[b] + wt(f, u) > f->cap)
			b = lightest(f);
		if (b == a)
			continue;
		*moves += (uint64_t)try_move(f, u, b, NULL);
	}
	f->force = 0;
}

/*
 * Memory rebalancing: while parts are above m_limit (after a projection
 * from a coarse level, whose partition was not bound by it), move their
 * examples that have private features out, best gain first, to parts with
 * room that stay within m_limit.  Up to 4 rounds; may raise Σ M.
 */
static void mbalance(struct fm *f, uint64_t *moves)
{
	const struct parsa_nbrset *s = f->used;

	f->force = 2;
	for (int round = 0; round < 4; round++) {
		uint32_t nc = 0;
		uint64_t moved = 0;

		for (uint32_t u = 0; u < f->g->n_rows; u++) {
			struct fm_move full, mv;

			if (s->size[f->part[u]] <= f->m_limit)
				continue;
			mv = eval_move(f, u, &full);
			if (mv.to == UINT32_MAX || !cand_room(f, nc))
				continue;
			f->cand[nc++] = (struct fm_cand){
				(uint16_t)f->part[u], (uint16_t)mv.to,
				clamp32(mv.gain), u };
		}
		if (nc == 0)
			break;
		cand_sort(f->cand, nc, cmp_gain);
		for (uint32_t i = 0; i < nc; i++) {
			uint32_t u = f->cand[i].u;
			struct fm_move full, mv;

			if (s->size[f->part[u]] <= f->m_limit)
				continue;
			mv = eval_move(f, u, &full); /* targets may have filled */
			if (mv.to == UINT32_MAX)
				continue;
			moved += (uint64_t)try_move(f, u, mv.to, NULL);
		}
		*moves += moved;
		if (moved == 0)
			break;
	}
	f->force = 0;
}

uint64_t parsa_connectivity(const struct parsa_nbrset *s)
{
	uint64_t used = 0;

	for (uint32_t v = 0; v < s->n_feat; v++) {
		const uint64_t *m = parsa_nbrset_mask(s, v);
		uint64_t any = 0;

		for (uint32_t w = 0; w < s->words; w++)
			any |= m[w];
		used += any != 0;
	}
	return sum_m(s) - used;
}

int parsa_fm_refine(const struct parsa_graph *g, uint32_t *part,
		    struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		    struct parsa_fm_stats *st, struct parsa_err *err)
{
	struct parsa_fm_stats s = { 0 };
	struct parsa_rng rng;
	struct fm f;
	int rc = o ? parsa_conn_check(g, part, used, "refine", err)
		   : parsa_fail(err, PARSA_EINVAL, "refine: NULL options");

	if (rc)
		return rc;
	s.conn_before = s.conn_after = parsa_connectivity(used);
	if (o->max_passes == 0 || used->k < 2 || g->n_rows == 0) {
		if (st)
			*st = s;
		return 0;
	}
	rc = fm_init(&f, g, part, used, o, err); /* frees f on failure */
	if (rc)
		return rc;
	if (fm_chunked(g, o))
		rc = chunk_init(&f, o, err);
	if (rc) {
		fm_free(&f);
		return rc;
	}
	f.progress = o->progress;
	f.progress_arg = o->progress_arg;
	f.prog_total = ((uint64_t)o->p_passes + o->max_passes) * g->n_rows;
	parsa_rng_seed(&rng, o->seed ^ 0x9e3779b97f4a7c15ULL);
	rebalance(&f, &s.moves);
	mbalance(&f, &s.moves);
	s.conn_mid = parsa_connectivity(used);
	if (o->p_passes) {
		f.entry = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
		if (!f.entry) {
			fm_free(&f);
			return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
		}
		memcpy(f.entry, part, (size_t)g->n_rows * sizeof(uint32_t));
	}
	/* p-fanout sweeps first (they may raise Σ M), then exact sweeps */
	for (f.pmode = 1; s.passes < o->p_passes && !parsa_stop_due(o->stop);
	     s.passes++) {
		sweep(&f, &rng, o->stop, &s.moves);
		sweep_done(&f);
	}
	f.prog_base = (uint64_t)o->p_passes * g->n_rows;
	f.pmode = 0;
	f.first_exact = f.epoch + 1;
	for (uint64_t conn = parsa_connectivity(used), n = 0;
	     n < o->max_passes && !parsa_stop_due(o->stop); n++) {
		int64_t gain;

		/* nothing reads the order after the last sweep */
		f.order_last = n + 1 == o->max_passes;
		gain = sweep(&f, &rng, o->stop, &s.moves);
		sweep_done(&f);

		s.passes++;
		if (gain <= 0 || (double)gain < o->min_gain * (double)conn)
			break;
		conn -= (uint64_t)gain;
	}
	if (f.entry && parsa_connectivity(used) > s.conn_mid) {
		/* the surrogate did not pay: back to the entry placement */
		memcpy(part, f.entry, (size_t)g->n_rows * sizeof(uint32_t));
		f.saturated = 1;
	}
	if (f.saturated)
		rc = parsa_used_sets(g, part, used, err);
	if (rc == 0 && f.nomem)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (refine: "
				"move candidates)");
	if (f.progress)
		f.progress(f.progress_arg, f.prog_total, f.prog_total);
	fm_free(&f);
	s.conn_after = parsa_connectivity(used);
	assert(s.conn_after <= s.conn_mid);
	if (st)
		*st = s;
	return rc;
}
