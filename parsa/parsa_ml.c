/*
 * parsa_ml: the multilevel V-cycle of parsa_ml.h.  Phases: cluster
 * (heavy-edge rating over the small nets), contract (the coarse graph,
 * weights and parts), then refine level by level on the way back.
 */
#include "parsa_ml.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base_prefetch.h"

#include "parsa_kfm.h"
#include "parsa_metrics.h"
#include "parsa_partu.h"
#include "parsa_rb.h"
#include "parsa_rng.h"

#define NIL UINT32_MAX
/* nets ahead of the current one whose pins are prefetched */
#define ML_AHEAD 4

/* One coarse level: its graph, vertex weights and parts, and the map from
 * the vertices of the level below (finer) to this level's. */
struct ml_level {
	struct parsa_graph g; /* rows = clusters, cols = the original features */
	uint32_t *w;          /* g.n_rows weights (examples per cluster) */
	uint32_t *part;       /* g.n_rows parts */
	uint32_t *cmap;       /* finer level's n_rows: its cluster here */
	uint32_t *key;        /* NULL, or g.n_rows communities (o->comm) */
	uint64_t m_limit;     /* the refinement's M cap on this level */
};

/* The pins of net v in part p within v's pin list of the grouped
 * transpose: t.col[t.row_ptr[v] + off ..) for len pins. */
struct ml_seg {
	uint32_t off, len;
};

/* Scratch of the matching on one level (n = the level's rows). */
struct ml_match {
	struct parsa_graph t; /* transpose: feature -> vertices; with parts,
			       * each net's pins grouped by part, ascending */
	struct ml_seg *seg;   /* NULL, or per nonzero e = (u, v) of the
			       * level's graph: the pins of v in u's part */
	uint32_t *order, *mate, *touched;
	uint32_t *root;       /* a vertex's cluster's first vertex (itself
			       * while unclustered) */
	uint32_t *rw;         /* rw[root[x]]: the weight of x's cluster */
	float *score;
	int scratch;          /* across parts: the larger nets are rated */
};

static void level_release(struct ml_level *l)
{
	parsa_graph_release(&l->g);
	free(l->w);
	free(l->part);
	free(l->cmap);
	free(l->key);
	memset(l, 0, sizeof(*l));
}

static void match_release(struct ml_match *m)
{
	parsa_graph_release(&m->t);
	free(m->seg);
	free(m->order);
	free(m->mate);
	free(m->touched);
	free(m->root);
	free(m->rw);
	free(m->score);
}

/*
 * Scatter the rows rows[0..n) (all of part p, increasing) into m->t's
 * columns at the cursors cur (left at the ends of their part-p
 * segments), then fill m->seg for their nonzeros: the segment of each
 * net in part p, relative to its start (net_start).  stamp[v] == p + 1
 * iff v met part p already; first[v]: where its segment begins.
 */
static void scatter_part(struct ml_match *m, const struct parsa_graph *g,
			 const uint32_t *rows, uint32_t n, uint32_t p,
			 uint64_t *cur, const uint64_t *net_start,
			 uint32_t *stamp, uint64_t *first)
{
	uint32_t *col = m->t.col;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = rows[i];

		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			uint32_t v = g->col[e];

			if (stamp[v] != p + 1) {
				stamp[v] = p + 1;
				first[v] = cur[v];
			}
			col[cur[v]++] = r;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t r = rows[i];

		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			uint32_t v = g->col[e];

			m->seg[e] = (struct ml_seg){
				(uint32_t)(first[v] - net_start[v]),
				(uint32_t)(cur[v] - first[v]) };
		}
	}
}

/*
 * m->t = the transpose of g with each net's pins ordered by (part, row)
 * and m->seg their segments per nonzero of g (rows visited in that order
 * by a counting sort on the parts).  0 or PARSA_ENOMEM.
 */
static int transpose_by_part(struct ml_match *m, const struct parsa_graph *g,
			     const uint32_t *part, struct parsa_err *err)
{
	uint64_t nnz = parsa_graph_nnz(g), *ptr, *cur, *first;
	uint32_t kp = 0, *pos, *stamp;
	int rc = 0;

	for (uint32_t u = 0; u < g->n_rows; u++)
		kp = part[u] >= kp ? part[u] + 1 : kp;
	pos = calloc((size_t)kp + 1, sizeof(uint32_t));
	ptr = calloc((size_t)g->n_cols + 1, sizeof(uint64_t));
	cur = malloc(((size_t)g->n_cols + 1) * sizeof(uint64_t));
	first = malloc(((size_t)g->n_cols + 1) * sizeof(uint64_t));
	stamp = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	m->t.col = malloc((size_t)(nnz ? nnz : 1) * sizeof(uint32_t));
	m->seg = malloc((size_t)(nnz ? nnz : 1) * sizeof(struct ml_seg));
	if (!pos || !ptr || !cur || !first || !stamp || !m->t.col || !m->seg) {
		free(ptr);
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
		goto out;
	}
	for (uint32_t u = 0; u < g->n_rows; u++)
		pos[part[u] + 1]++;
	for (uint32_t j = 0; j < kp; j++)
		pos[j + 1] += pos[j];
	for (uint32_t u = 0; u < g->n_rows; u++)
		m->order[pos[part[u]]++] = u; /* rows by part (order: scratch) */
	for (uint64_t e = 0; e < nnz; e++)
		ptr[g->col[e] + 1]++;
	for (uint32_t c = 0; c < g->n_cols; c++)
		ptr[c + 1] += ptr[c];
	memcpy(cur, ptr, ((size_t)g->n_cols + 1) * sizeof(uint64_t));
	for (uint32_t p = 0, at = 0; p < kp; at = pos[p++])
		scatter_part(m, g, m->order + at, pos[p] - at, p, cur, ptr,
			     stamp, first);
	m->t = (struct parsa_graph){ g->n_cols, g->n_rows, ptr, m->t.col,
				     (uint64_t)g->n_cols + 1, nnz ? nnz : 1 };
out:
	free(pos);
	free(cur);
	free(first);
	free(stamp);
	return rc;
}

/* The matching's scratch for g; grp NULL: across parts (plain
 * transpose), else pins grouped by grp (the parts, the communities or
 * both: group_labels); scratch: rate the nets up to ML_NET_MAX_SCRATCH. */
static int match_init(struct ml_match *m, const struct parsa_graph *g,
		      const uint32_t *w, const uint32_t *part, int scratch,
		      struct parsa_rng *rng, struct parsa_err *err)
{
	size_t n = (size_t)g->n_rows + 1;

	memset(m, 0, sizeof(*m));
	m->scratch = scratch;
	parsa_graph_init(&m->t);
	m->order = malloc(n * sizeof(uint32_t));
	m->mate = malloc(n * sizeof(uint32_t));
	m->touched = malloc(n * sizeof(uint32_t));
	m->root = malloc(n * sizeof(uint32_t));
	m->rw = malloc(n * sizeof(uint32_t));
	m->score = calloc(n, sizeof(float));
	if (!m->order || !m->mate || !m->touched || !m->root || !m->rw ||
	    !m->score) {
		match_release(m);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
	}
	if (part ? transpose_by_part(m, g, part, err)
		 : parsa_graph_transpose(g, &m->t, err)) {
		match_release(m);
		return PARSA_ENOMEM;
	}
	for (uint32_t u = 0; u < g->n_rows; u++) {
		m->order[u] = u;
		m->mate[u] = NIL;
		m->root[u] = u;
		m->rw[u] = w ? w[u] : 1;
	}
	parsa_rng_shuffle_u32(rng, m->order, g->n_rows);
	return 0;
}

static uint32_t weight_of(const uint32_t *w, uint32_t u)
{
	return w ? w[u] : 1;
}

/* Prefetch the pins best_mate rates of nonzero e = (u, v) of g. */
static void prefetch_net(const struct ml_match *m, const struct parsa_graph *g,
			 uint64_t e)
{
	uint64_t b = m->t.row_ptr[g->col[e]];

	base_prefetch(&m->t.col[m->seg ? b + m->seg[e].off : b]);
}

/*
 * Add rate to the score of the pins col[b..b+d), listing the newly scored
 * ones in touched[*nt..].  The pins' cluster weights are not read here:
 * best_mate filters the touched ones.
 */
static void rate_pins(struct ml_match *m, uint64_t b, uint64_t d, float rate,
		      uint32_t *nt)
{
	const uint32_t *col = m->t.col;

	for (uint64_t i = b; i < b + d; i++) {
		uint32_t x = col[i];

		if (m->score[x] == 0.0f)
			m->touched[(*nt)++] = x;
		m->score[x] += rate;
	}
}

/*
 * The best vertex for u to join, in u's part: an unclustered vertex (a new
 * pair) or a clustered one (u joins its cluster), whichever shares the most
 * rated nets, if the resulting cluster weighs at most max_w (NIL: none).
 * Every pin is scored and the weight cap applied to the touched vertices
 * only: a pin's cluster weight does not change during the call and each
 * score is the same sum in the same order, so this picks the vertex a
 * filter per pin would (ties: lowest index, a total order).
 */
static uint32_t best_mate(struct ml_match *m, const struct parsa_graph *g,
			  const uint32_t *w, uint32_t u, uint32_t max_w)
{
	uint32_t nt = 0, best = NIL, wu = weight_of(w, u);
	uint32_t budget = ML_PIN_BUDGET;

	for (uint64_t e = g->row_ptr[u], end = g->row_ptr[u + 1]; e < end; e++) {
		uint32_t v = g->col[e];
		uint64_t b = m->t.row_ptr[v], d = m->t.row_ptr[v + 1] - b;
		float rate;

		if (e + ML_AHEAD < end)
			prefetch_net(m, g, e + ML_AHEAD);

		/* in-part (m->seg): the small nets; from scratch, larger
		 * ones too (measured: BENCHMARKS.md, recursive bisection) */
		if (d < 2 || d > (m->scratch ? ML_NET_MAX_SCRATCH : ML_NET_MAX))
			continue;
		if (budget < d)
			break; /* scanned enough pins for u */
		budget -= (uint32_t)d;
		rate = 1.0f / (float)(d - 1);
		if (m->seg) /* only the pins of u's part */
			rate_pins(m, b + m->seg[e].off, m->seg[e].len, rate, &nt);
		else
			rate_pins(m, b, d, rate, &nt);
	}
	for (uint32_t i = 0; i < nt; i++) {
		uint32_t x = m->touched[i];

		if (x == u || wu + m->rw[m->root[x]] > max_w)
			continue;
		if (best == NIL || m->score[x] > m->score[best] ||
		    (m->score[x] == m->score[best] && x < best))
			best = x;
	}
	for (uint32_t i = 0; i < nt; i++)
		m->score[m->touched[i]] = 0.0f;
	return best;
}

/*
 * Cluster g's vertices (visiting order m->order): each unclustered vertex
 * joins its best mate's cluster, or forms a pair with an unclustered mate,
 * or stays alone.  Fills cmap (clusters numbered in order of creation);
 * returns the number of clusters, or UINT32_MAX when stop came due (polled
 * every PARSA_STOP_POPS vertices; cmap is then incomplete).
 */
static uint32_t cluster(struct ml_match *m, const struct parsa_graph *g,
			const uint32_t *w, uint32_t max_w,
			const struct parsa_stop *stop, uint32_t *cmap)
{
	uint32_t nc = 0;

	for (uint32_t i = 0; i < g->n_rows; i++) {
		uint32_t u = m->order[i], x;

		if (i % PARSA_STOP_POPS == PARSA_STOP_POPS - 1 &&
		    parsa_stop_due(stop))
			return UINT32_MAX;

		if (m->mate[u] != NIL)
			continue;
		x = best_mate(m, g, w, u, max_w);
		m->mate[u] = u;
		if (x != NIL && m->mate[x] != NIL) {
			cmap[u] = cmap[x]; /* join x's cluster */
			m->root[u] = m->root[x];
			m->rw[m->root[x]] += weight_of(w, u);
			continue;
		}
		cmap[u] = nc;
		if (x != NIL) {
			m->mate[x] = u;
			cmap[x] = nc;
			m->root[x] = u;
			m->rw[u] += weight_of(w, x);
		}
		nc++;
	}
	return nc;
}

/*
 * Level c's weights and parts from the finer w/part and cmap (nc
 * clusters): a cluster weighs its members' weights and takes the part of
 * its last member (all members share one in parsa_ml_refine).
 */
static int contract_vertices(struct ml_level *c, const struct parsa_graph *g,
			     const uint32_t *w, const uint32_t *part,
			     const uint32_t *key, uint32_t nc,
			     struct parsa_err *err)
{
	c->w = calloc((size_t)nc + 1, sizeof(uint32_t));
	c->part = calloc((size_t)nc + 1, sizeof(uint32_t));
	if (!c->w || !c->part)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
	for (uint32_t u = 0; u < g->n_rows; u++) {
		c->w[c->cmap[u]] += weight_of(w, u);
		c->part[c->cmap[u]] = part ? part[u] : 0;
	}
	if (key) { /* (every cluster lies in one community) */
		c->key = malloc(((size_t)nc + 1) * sizeof(uint32_t));
		if (!c->key)
			return parsa_fail(err, PARSA_ENOMEM,
					  "out of memory (coarsening)");
		for (uint32_t u = 0; u < g->n_rows; u++)
			c->key[c->cmap[u]] = key[u];
	}
	return 0;
}

/*
 * out[u] = a dense id of the pair (a[u], b[u]) for u < n: rows share an
 * id iff they share both.  0 or PARSA_ENOMEM.
 */
static int group_labels(uint32_t n, const uint32_t *a, const uint32_t *b,
			uint32_t *out, struct parsa_err *err)
{
	uint32_t na = 0, nb = 0, id = 0, *pos, *ord, *stamp, *lab;

	for (uint32_t u = 0; u < n; u++) {
		na = a[u] >= na ? a[u] + 1 : na;
		nb = b[u] >= nb ? b[u] + 1 : nb;
	}
	pos = calloc((size_t)na + 1, sizeof(uint32_t));
	ord = malloc(((size_t)n + 1) * sizeof(uint32_t));
	stamp = calloc((size_t)nb + 1, sizeof(uint32_t));
	lab = malloc(((size_t)nb + 1) * sizeof(uint32_t));
	if (!pos || !ord || !stamp || !lab) {
		free(pos);
		free(ord);
		free(stamp);
		free(lab);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
	}
	for (uint32_t u = 0; u < n; u++)
		pos[a[u] + 1]++;
	for (uint32_t i = 0; i < na; i++)
		pos[i + 1] += pos[i];
	for (uint32_t u = 0; u < n; u++)
		ord[pos[a[u]]++] = u; /* rows by a, increasing within */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t u = ord[i];

		if (stamp[b[u]] != a[u] + 1) {
			stamp[b[u]] = a[u] + 1;
			lab[b[u]] = id++;
		}
		out[u] = lab[b[u]];
	}
	free(pos);
	free(ord);
	free(stamp);
	free(lab);
	return 0;
}

/*
 * Level c's graph from the finer graph's transpose t and cmap (nc
 * clusters): a cluster's row is the union of its members' rows.  Nets are
 * visited in increasing order and a cluster takes net v once (stamp[x] ==
 * v + 1: taken), so every row comes out sorted without duplicates, in
 * O(|E|) without sorting: one pass counts, one fills.
 */
static int contract_rows(struct ml_level *c, const struct parsa_graph *t,
			 uint32_t nc, struct parsa_err *err)
{
	uint64_t *ptr = calloc((size_t)nc + 2, sizeof(uint64_t));
	uint32_t *stamp = calloc((size_t)nc + 1, sizeof(uint32_t)), *col;

	if (!ptr || !stamp) {
		free(ptr);
		free(stamp);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
	}
	for (uint32_t v = 0; v < t->n_rows; v++)
		for (uint64_t i = t->row_ptr[v]; i < t->row_ptr[v + 1]; i++) {
			uint32_t x = c->cmap[t->col[i]];

			if (stamp[x] != v + 1) {
				stamp[x] = v + 1;
				ptr[x + 2]++;
			}
		}
	for (uint32_t x = 0; x < nc; x++)
		ptr[x + 2] += ptr[x + 1];
	col = malloc((size_t)(ptr[nc + 1] ? ptr[nc + 1] : 1) * sizeof(uint32_t));
	if (!col) {
		free(ptr);
		free(stamp);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
	}
	memset(stamp, 0, ((size_t)nc + 1) * sizeof(uint32_t));
	for (uint32_t v = 0; v < t->n_rows; v++)
		for (uint64_t i = t->row_ptr[v]; i < t->row_ptr[v + 1]; i++) {
			uint32_t x = c->cmap[t->col[i]];

			if (stamp[x] != v + 1) {
				stamp[x] = v + 1;
				col[ptr[x + 1]++] = v;
			}
		}
	free(stamp);
	c->g.n_rows = nc;
	c->g.n_cols = t->n_rows;
	c->g.row_ptr = ptr;
	c->g.col = col;
	c->g.row_cap = (uint64_t)nc + 2;
	c->g.col_cap = ptr[nc] ? ptr[nc] : 1;
	return 0;
}

/* Coarsen the finer level (g, w, part, key: its communities or NULL)
 * into c; *stopped = 1 (c left empty) when stop came due during the
 * clustering. */
static int coarsen(struct ml_level *c, const struct parsa_graph *g,
		   const uint32_t *w, const uint32_t *part, const uint32_t *key,
		   uint32_t max_w, const struct parsa_stop *stop,
		   struct parsa_rng *rng, int *stopped, struct parsa_err *err)
{
	struct ml_match m;
	uint32_t nc, *grp = NULL;
	int rc = 0;

	*stopped = 0;
	parsa_graph_init(&c->g);
	c->cmap = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	if (!c->cmap)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (coarsening)");
	if (part && key) { /* in-part and in-community */
		grp = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
		rc = grp ? group_labels(g->n_rows, part, key, grp, err)
			 : parsa_fail(err, PARSA_ENOMEM,
				      "out of memory (coarsening)");
	}
	if (rc == 0)
		rc = match_init(&m, g, w, grp ? grp : part ? part : key, !part,
				rng, err);
	free(grp);
	if (rc == 0) {
		nc = cluster(&m, g, w, max_w, stop, c->cmap);
		*stopped = nc == UINT32_MAX;
		if (!*stopped)
			rc = contract_vertices(c, g, w, part, key, nc, err);
		if (rc == 0 && !*stopped)
			rc = contract_rows(c, &m.t, nc, err);
		match_release(&m);
	}
	if (*stopped)
		level_release(c);
	return rc;
}

/*
 * The k-way FM after a level's sweeps (o->fm_passes passes, same caps,
 * weights and seed), its kept moves and passes added to st.
 */
static int level_kfm(const struct parsa_graph *g, uint32_t *part,
		     struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		     struct parsa_fm_stats *st, struct parsa_err *err)
{
	struct parsa_kfm_opts ko = { o->fm_passes, o->cap, o->m_limit, o->seed,
				     0, o->weight, 0, o->stop };
	struct parsa_kfm_stats ks;
	int rc;

	if (o->fm_passes == 0)
		return 0;
	rc = parsa_kfm_refine(g, part, used, &ko, &ks, err);
	if (rc == 0) {
		st->passes += ks.passes;
		st->moves += ks.moves;
	}
	return rc;
}

/* parsa_fm_refine, then the k-way FM, on one coarse level (its own used
 * sets). */
static int refine_level(struct ml_level *l, uint32_t k,
			const struct parsa_fm_opts *o,
			struct parsa_fm_stats *st, struct parsa_nbrset *out,
			struct parsa_err *err)
{
	struct parsa_nbrset used;
	struct parsa_fm_opts lo = *o;
	struct parsa_fm_stats s;
	int rc = parsa_nbrset_init(&used, l->g.n_cols, k, err);

	if (rc)
		return rc;
	lo.weight = l->w;
	lo.p_passes = 0;
	lo.m_limit = l->m_limit;
	if (lo.max_passes > ML_COARSE_PASSES)
		lo.max_passes = ML_COARSE_PASSES;
	rc = parsa_used_sets(&l->g, l->part, &used, err);
	if (rc == 0)
		rc = parsa_fm_refine(&l->g, l->part, &used, &lo, &s, err);
	if (rc == 0) {
		st->passes += s.passes;
		st->moves += s.moves;
		rc = level_kfm(&l->g, l->part, &used, &lo, st, err);
	}
	if (rc == 0 && out) /* the level's sets, for the caller */
		parsa_nbrset_copy(out, &used);
	parsa_nbrset_release(&used);
	return rc;
}

/*
 * Coarsen from (g, part) (part NULL: across parts) into lv[1..*nl]; lv[0]
 * stands for g itself and is not touched.  Stops as parsa_ml.h says, at
 * min_rows rows, or when stop is due.
 */
static int build_levels(struct ml_level *lv, uint32_t *nl,
			const struct parsa_graph *g, const uint32_t *part,
			const uint32_t *key, uint32_t max_levels, uint32_t min_rows, uint32_t max_w,
			const struct parsa_stop *stop, struct parsa_rng *rng,
			struct parsa_err *err)
{
	int rc = 0;

	*nl = 0;
	if (max_levels > ML_MAX_LEVELS)
		max_levels = ML_MAX_LEVELS;
	while (rc == 0 && *nl < max_levels) {
		const struct parsa_graph *fg = *nl ? &lv[*nl].g : g;
		const uint32_t *fw = *nl ? lv[*nl].w : NULL;
		const uint32_t *fp = *nl ? lv[*nl].part : part;
		const uint32_t *fk = *nl ? lv[*nl].key : key;
		int stopped;

		if (fg->n_rows < min_rows || parsa_stop_due(stop))
			break;
		rc = coarsen(&lv[*nl + 1], fg, fw, fp, fk, max_w, stop, rng,
			     &stopped, err);
		if (stopped)
			break; /* the level was dropped */
		if (rc == 0 && fk && lv[*nl + 1].g.n_rows == fg->n_rows) {
			level_release(&lv[*nl + 1]); /* nothing joined (each
						      * row its own community) */
			break;
		}
		++*nl;
		if (rc == 0 && (uint64_t)lv[*nl].g.n_rows * 10 > (uint64_t)fg->n_rows * 9)
			break; /* shrinks by less than 10%: this is the last */
	}
	return rc;
}

int parsa_ml_cluster(const struct parsa_graph *g, const uint32_t *part,
		     const uint32_t *comm, uint32_t max_w, uint64_t seed,
		     uint32_t *cmap, uint32_t *nc, struct parsa_err *err)
{
	struct ml_level c;
	struct parsa_rng rng;
	int stopped, rc;

	memset(&c, 0, sizeof(c));
	parsa_rng_seed(&rng, seed);
	rc = coarsen(&c, g, NULL, part, comm, max_w, NULL, &rng, &stopped,
		     err);
	if (rc == 0) {
		memcpy(cmap, c.cmap, (size_t)g->n_rows * sizeof(uint32_t));
		*nc = c.g.n_rows;
	}
	level_release(&c);
	return rc;
}

/*
 * Refine lv[nl..1] with the parts they hold, projecting each level's parts
 * to the next finer one, then the original graph (part, used: its sets
 * are recomputed when nl > 0); top_refined: lv[nl] is refined already.
 * Once o->stop is due the levels are only
 * projected (refine_level would poll it before each sweep and pass; this
 * also skips its used sets).
 */
static int uncoarsen(struct ml_level *lv, uint32_t nl,
		     const struct parsa_graph *g, uint32_t *part,
		     struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		     int top_refined, struct parsa_fm_stats *s,
		     struct parsa_err *err)
{
	struct parsa_fm_stats s0;
	int rc = 0;

	for (uint32_t l = nl; rc == 0 && l >= 1; l--) {
		uint32_t *fp = l > 1 ? lv[l - 1].part : part;
		uint32_t n = l > 1 ? lv[l - 1].g.n_rows : g->n_rows;

		if (!parsa_stop_due(o->stop) && !(top_refined && l == nl))
			rc = refine_level(&lv[l], used->k, o, s, NULL, err);
		for (uint32_t u = 0; rc == 0 && u < n; u++)
			fp[u] = lv[l].part[lv[l].cmap[u]];
	}
	if (rc == 0 && nl)
		rc = parsa_used_sets(g, part, used, err);
	if (rc == 0)
		rc = parsa_fm_refine(g, part, used, o, &s0, err);
	if (rc == 0) {
		s->passes += s0.passes;
		s->moves += s0.moves;
		rc = level_kfm(g, part, used, o, s, err);
	}
	if (rc == 0)
		s->conn_after = parsa_connectivity(used);
	return rc;
}

int parsa_ml_refine(const struct parsa_graph *g, uint32_t *part,
		    struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		    uint32_t max_levels, struct parsa_fm_stats *st,
		    struct parsa_err *err)
{
	struct ml_level lv[ML_MAX_LEVELS + 1];
	struct parsa_fm_stats s = { 0 };
	struct parsa_rng rng;
	uint32_t nl = 0, max_w = (uint32_t)(o->cap / 8 > 2 ? o->cap / 8 : 2);
	int rc;

	if (o->weight)
		return parsa_fail(err, PARSA_EINVAL, "multilevel: weighted input");
	memset(lv, 0, sizeof(lv));
	parsa_rng_seed(&rng, o->seed ^ 0x5851f42d4c957f2dULL);
	s.conn_before = s.conn_mid = parsa_connectivity(used);
	rc = build_levels(lv, &nl, g, part, o->comm, max_levels, 8 * used->k,
			  max_w, o->stop, &rng, err);
	for (uint32_t l = 1; l <= nl; l++)
		lv[l].m_limit = o->m_limit;
	if (rc == 0)
		rc = uncoarsen(lv, nl, g, part, used, o, 0, &s, err);
	assert(rc || s.conn_after <= s.conn_before);
	for (uint32_t l = 1; l <= nl; l++)
		level_release(&lv[l]);
	if (st)
		*st = s;
	return rc;
}

/* Which of two results is better: the smaller excess of M_max over
 * m_limit, then the lower connectivity (ties: a). */
static int better_result(const struct parsa_nbrset *a,
			 const struct parsa_nbrset *b, uint64_t m_limit)
{
	uint64_t ma = 0, mb = 0, xa, xb;

	for (uint32_t j = 0; j < a->k; j++) {
		ma = a->size[j] > ma ? a->size[j] : ma;
		mb = b->size[j] > mb ? b->size[j] : mb;
	}
	xa = ma > m_limit ? ma - m_limit : 0;
	xb = mb > m_limit ? mb - m_limit : 0;
	if (xa != xb)
		return xa < xb;
	return parsa_connectivity(a) <= parsa_connectivity(b);
}

/* Recursive bisection's starts on a coarsest graph of `pins` pins: 8,
 * fewer on large ones (their cost is tries times pins; measured on the
 * 17M synthetic set, whose coarsest graph has millions of pins). */
static uint32_t rb_tries(uint64_t pins)
{
	uint64_t t = pins ? ML_RB_TRIES * ML_RB_PINS / pins : ML_RB_TRIES;

	return t < 2 ? 2 : t > ML_RB_TRIES ? ML_RB_TRIES : (uint32_t)t;
}

/*
 * With coarse levels, the start rbp (recursive bisection with multilevel
 * starts) refined on the coarsest level and uncoarsened on its own; its
 * result replaces part/used when strictly better (better_result: the
 * coarse levels' connectivity predicts g's poorly, measured in
 * BENCHMARKS.md).  s adds its passes and moves.
 */
static int third_start(struct ml_level *lv, uint32_t nl,
		       const struct parsa_graph *g, const uint32_t *rbp,
		       uint32_t *part, struct parsa_nbrset *used,
		       const struct parsa_fm_opts *o, struct parsa_fm_stats *s,
		       struct parsa_err *err)
{
	struct parsa_nbrset u2 = { 0 };
	uint32_t *p2 = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	int rc = p2 ? parsa_nbrset_init(&u2, g->n_cols, used->k, err)
		    : parsa_fail(err, PARSA_ENOMEM, "out of memory (multilevel)");

	if (rc == 0) {
		memcpy(lv[nl].part, rbp, (size_t)lv[nl].g.n_rows * sizeof(uint32_t));
		rc = refine_level(&lv[nl], used->k, o, s, NULL, err);
	}
	if (rc == 0)
		rc = uncoarsen(lv, nl, g, p2, &u2, o, 1, s, err);
	if (rc == 0 && !better_result(used, &u2, o->m_limit)) {
		memcpy(part, p2, (size_t)g->n_rows * sizeof(uint32_t));
		parsa_nbrset_copy(used, &u2);
	}
	s->conn_after = parsa_connectivity(used);
	parsa_nbrset_release(&u2);
	free(p2);
	return rc;
}

/*
 * The starts of parsa_ml_partition on the coarsest level: Algorithm 13
 * (balance by clusters; the refinement rebalances by weight), recursive
 * bisection (parsa_rb.h, by weight) and, with o->rb_ml (and at most
 * ML_RB_ML_PINS pins), recursive bisection with o->rb_ml multilevel
 * starts per bisection.  With coarse
 * levels (nl > 0) each start is refined on the coarsest level and the
 * best (better_result: M_j and the connectivity do not change as the
 * parts are projected down; ties: the earlier start) is uncoarsened;
 * without (nl == 0: the coarsest is g) each is refined on g and the best
 * kept.  part/used/s receive it.
 */
static int coarsest_starts(struct ml_level *lv, uint32_t nl,
		      const struct parsa_graph *g,
		      const struct parsa_partu_opts *pu, uint32_t *part,
		      struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		      struct parsa_fm_stats *s, struct parsa_err *err)
{
	const struct parsa_graph *cg = nl ? &lv[nl].g : g;
	uint32_t *cpart = nl ? lv[nl].part : part, k = used->k;
	uint32_t cn = cg->n_rows;
	uint32_t rb_ml = parsa_graph_nnz(cg) <= ML_RB_ML_PINS ? o->rb_ml : 0;
	uint32_t ns = rb_ml && nl == 0 ? 3 : 2;
	struct parsa_partu_opts cpu = *pu;
	struct parsa_rb_opts ro = { k, ML_RB_EPS, rb_tries(parsa_graph_nnz(cg)),
				    o->seed, o->stop, 0 };
	struct parsa_fm_stats s1 = { 0 };
	struct parsa_nbrset S = { 0 }, ub = { 0 }, uc = { 0 };
	uint32_t *rbp[2] = { NULL, NULL };
	uint32_t *pb = malloc(((size_t)cn + 1) * sizeof(uint32_t));
	int rc = pb ? 0 : parsa_fail(err, PARSA_ENOMEM,
				     "out of memory (multilevel)");

	cpu.progress = NULL;
	cpu.init_blocks = 0;
	cpu.blocks = 1;
	*s = (struct parsa_fm_stats){ 0 };
	for (uint32_t i = 0; rc == 0 && i < (rb_ml ? 2u : 1u); i++) {
		ro.ml = i ? rb_ml : 0;
		rbp[i] = malloc(((size_t)cn + 1) * sizeof(uint32_t));
		rc = rbp[i] ? parsa_rb_partition(cg, nl ? lv[nl].w : NULL, &ro,
						 rbp[i], NULL, err)
			    : parsa_fail(err, PARSA_ENOMEM,
					 "out of memory (multilevel)");
	}
	if (rc == 0)
		rc = parsa_nbrset_init(&S, g->n_cols, k, err);
	if (rc == 0)
		rc = parsa_partition_u(cg, &cpu, &S, cpart, NULL, err);
	parsa_nbrset_release(&S);
	if (rc == 0)
		rc = parsa_nbrset_init(&ub, cg->n_cols, k, err);
	if (rc == 0)
		rc = parsa_nbrset_init(&uc, cg->n_cols, k, err);
	/* start 0 is Algorithm 13's (in cpart), start i > 0 rbp[i - 1]; the
	 * best so far in pb/ub (and s1, without coarse levels) */
	for (uint32_t i = 0; rc == 0 && i < ns; i++) {
		struct parsa_fm_stats si = { 0 };

		if (i > 0)
			memcpy(cpart, rbp[i - 1], (size_t)cn * sizeof(uint32_t));
		if (nl > 0) {
			rc = refine_level(&lv[nl], k, o, s, &uc, err);
		} else {
			rc = parsa_used_sets(g, part, used, err);
			if (rc == 0)
				rc = uncoarsen(lv, 0, g, part, used, o, 0, &si,
					       err);
			if (rc == 0)
				parsa_nbrset_copy(&uc, used);
		}
		if (rc == 0 && (i == 0 || !better_result(&ub, &uc, o->m_limit))) {
			memcpy(pb, cpart, (size_t)cn * sizeof(uint32_t));
			parsa_nbrset_copy(&ub, &uc);
			s1 = si;
		}
	}
	if (rc == 0) {
		memcpy(cpart, pb, (size_t)cn * sizeof(uint32_t));
		if (nl > 0) {
			rc = uncoarsen(lv, nl, g, part, used, o, 1, s, err);
		} else {
			parsa_nbrset_copy(used, &ub);
			*s = s1;
		}
	}
	if (rc == 0 && nl > 0 && rb_ml) /* the third start, compared
					     * on g */
		rc = third_start(lv, nl, g, rbp[1], part, used, o, s, err);
	parsa_nbrset_release(&ub);
	parsa_nbrset_release(&uc);
	free(rbp[0]);
	free(rbp[1]);
	free(pb);
	return rc;
}

/*
 * parsa_ml_partition's body: coarsen (restricted to comm, may be NULL)
 * down to per_part clusters per part, the starts, refined back.
 */
static int partition_at(const struct parsa_graph *g,
			const struct parsa_partu_opts *pu, uint32_t *part,
			struct parsa_nbrset *used,
			const struct parsa_fm_opts *o, const uint32_t *comm,
			uint32_t max_levels, uint32_t per_part,
			struct parsa_fm_stats *s, struct parsa_err *err)
{
	struct ml_level lv[ML_MAX_LEVELS + 1];
	struct parsa_rng rng;
	uint32_t nl = 0, k = used->k;
	uint32_t max_w = (uint32_t)(o->cap / 16 > 2 ? o->cap / 16 : 2);
	int rc;

	memset(lv, 0, sizeof(lv));
	parsa_rng_seed(&rng, o->seed ^ 0x2545f4914f6cdd1dULL);
	/* the coarsening is not cut short by o->stop: the starts must run
	 * on the coarse graph they are sized for */
	rc = build_levels(lv, &nl, g, NULL, comm, max_levels, per_part * k,
			  max_w, NULL, &rng, err);
	/* coarse levels: connectivity and weight balance only (the coarsest
	 * partition is not bound by m_limit); level 0 rebalances M */
	for (uint32_t l = 1; l <= nl; l++)
		lv[l].m_limit = UINT64_MAX;
	if (rc == 0)
		rc = coarsest_starts(lv, nl, g, pu, part, used, o, s, err);
	for (uint32_t l = 1; l <= nl; l++)
		level_release(&lv[l]);
	return rc;
}

/*
 * The deeper start (o->comm or o->deep): partition_at down to
 * ML_COARSEST_DEEP per part, its coarsening within the communities when
 * o->comm is given; it replaces part/used/s when strictly better
 * (better_result).
 */
static int deep_start(const struct parsa_graph *g,
		      const struct parsa_partu_opts *pu, uint32_t *part,
		      struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		      uint32_t max_levels, struct parsa_fm_stats *s,
		      struct parsa_err *err)
{
	struct parsa_fm_opts fo = *o;
	struct parsa_fm_stats s2 = { 0 };
	struct parsa_nbrset u2 = { 0 };
	uint32_t *p2 = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	int rc = p2 ? parsa_nbrset_init(&u2, g->n_cols, used->k, err)
		    : parsa_fail(err, PARSA_ENOMEM, "out of memory (multilevel)");

	fo.comm = NULL; /* (the levels carry them) */
	if (rc == 0)
		rc = partition_at(g, pu, p2, &u2, &fo, o->comm, max_levels,
				  ML_COARSEST_DEEP, &s2, err);
	if (rc == 0 && !better_result(used, &u2, o->m_limit)) {
		memcpy(part, p2, (size_t)g->n_rows * sizeof(uint32_t));
		parsa_nbrset_copy(used, &u2);
		*s = s2;
	}
	parsa_nbrset_release(&u2);
	free(p2);
	return rc;
}

int parsa_ml_partition(const struct parsa_graph *g,
		       const struct parsa_partu_opts *pu, uint32_t *part,
		       struct parsa_nbrset *used, const struct parsa_fm_opts *o,
		       uint32_t max_levels, struct parsa_fm_stats *st,
		       struct parsa_err *err)
{
	struct parsa_fm_opts fo = *o;
	struct parsa_fm_stats s = { 0 };
	uint32_t k = used->k;
	int rc;

	if (o->weight || pu->k != k)
		return parsa_fail(err, PARSA_EINVAL, "multilevel: bad arguments");
	fo.comm = NULL;
	rc = partition_at(g, pu, part, used, &fo, NULL, max_levels,
			  ML_COARSEST_PER_PART, &s, err);
	/* with communities or o->deep, a deeper start too (when it can
	 * coarsen) */
	if (rc == 0 && (o->comm || o->deep) &&
	    (uint64_t)g->n_rows > (uint64_t)ML_COARSEST_DEEP * k &&
	    !parsa_stop_due(o->stop))
		rc = deep_start(g, pu, part, used, o, max_levels, &s, err);
	if (st)
		*st = s;
	return rc;
}
