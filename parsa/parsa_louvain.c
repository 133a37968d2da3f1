/*
 * parsa_louvain: Louvain modularity maximisation (parsa_louvain.h).
 * Phases per level: local moving (passes over the nodes in a seeded
 * order), then contraction of the communities into the next level's
 * nodes.
 */
#include "parsa_louvain.h"

#include <stdlib.h>
#include <string.h>

#include "parsa_rng.h"

#define NIL UINT32_MAX
#define LV_MAX_LEVELS 32

void parsa_louvain_opts_default(struct parsa_louvain_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->max_passes = 5;
	o->min_move_frac = 0.01;
	o->max_levels = LV_MAX_LEVELS;
	o->weight = PARSA_LOUVAIN_HYBRID;
}

void parsa_wgraph_release(struct parsa_wgraph *g)
{
	if (!g)
		return;
	free(g->ptr);
	free(g->adj);
	free(g->w);
	memset(g, 0, sizeof(*g));
}

double parsa_modularity(const struct parsa_wgraph *g, const uint32_t *comm)
{
	double m2 = 0, in = 0, sq = 0, *tot = calloc((size_t)g->n + 1,
						       sizeof(double));

	if (!tot)
		return 0;
	for (uint32_t a = 0; a < g->n; a++)
		for (uint64_t e = g->ptr[a]; e < g->ptr[a + 1]; e++) {
			m2 += g->w[e];
			tot[comm[a]] += g->w[e];
			if (comm[g->adj[e]] == comm[a])
				in += g->w[e];
		}
	for (uint32_t c = 0; c < g->n; c++)
		sq += tot[c] * tot[c];
	free(tot);
	return m2 > 0 ? in / m2 - sq / (m2 * m2) : 0;
}

/* Scratch of one level's local moving (n = the level's nodes). */
struct lv_work {
	uint32_t *comm, *order, *touched;
	double *tot, *k, *acc;
	uint8_t *mark;
};

static void work_release(struct lv_work *w)
{
	free(w->comm);
	free(w->order);
	free(w->touched);
	free(w->tot);
	free(w->k);
	free(w->acc);
	free(w->mark);
}

static int work_init(struct lv_work *w, uint32_t n)
{
	size_t m = (size_t)n + 1;

	w->comm = malloc(m * sizeof(uint32_t));
	w->order = malloc(m * sizeof(uint32_t));
	w->touched = malloc(m * sizeof(uint32_t));
	w->tot = malloc(m * sizeof(double));
	w->k = malloc(m * sizeof(double));
	w->acc = calloc(m, sizeof(double));
	w->mark = calloc(m, 1);
	return w->comm && w->order && w->touched && w->tot && w->k &&
	       w->acc && w->mark;
}

/*
 * One move decision for node a: the community with the largest gain
 * (a taken out of its own first); moves a when it beats staying.
 * Returns 1 when a moved (*dq: the modularity gain).
 */
static int move_node(const struct parsa_wgraph *g, struct lv_work *w,
		     uint32_t a, double m2, uint32_t *from, double *dq)
{
	uint32_t own = w->comm[a], best = own, nt = 0;
	double ka = w->k[a], gown, gbest;

	for (uint64_t e = g->ptr[a]; e < g->ptr[a + 1]; e++) {
		uint32_t b = g->adj[e], d;

		if (b == a)
			continue;
		d = w->comm[b];
		if (!w->mark[d]) {
			w->mark[d] = 1;
			w->touched[nt++] = d;
		}
		w->acc[d] += g->w[e];
	}
	w->tot[own] -= ka;
	gown = gbest = w->acc[own] - ka * w->tot[own] / m2;
	for (uint32_t i = 0; i < nt; i++) {
		uint32_t d = w->touched[i];
		double gd = w->acc[d] - ka * w->tot[d] / m2;

		if (d != own && (gd > gbest ||
				 (gd == gbest && best != own && d < best))) {
			best = d;
			gbest = gd;
		}
	}
	for (uint32_t i = 0; i < nt; i++) {
		w->acc[w->touched[i]] = 0;
		w->mark[w->touched[i]] = 0;
	}
	w->tot[best] += ka;
	*from = own;
	*dq = 2.0 * (gbest - gown) / m2;
	w->comm[a] = best;
	return best != own;
}

/*
 * Local moving on g (w->comm: singletons on entry).  Returns the number
 * of moves of all passes; *stopped = 1 when o->stop came due.
 */
static uint64_t local_moving(const struct parsa_wgraph *g, struct lv_work *w,
			     const struct parsa_louvain_opts *o,
			     struct parsa_rng *rng, uint32_t level,
			     int *stopped)
{
	uint32_t passes = o->max_passes ? o->max_passes : 1;
	double m2 = 0;
	uint64_t total = 0;

	for (uint32_t a = 0; a < g->n; a++) {
		w->comm[a] = a;
		w->order[a] = a;
		w->k[a] = 0;
		for (uint64_t e = g->ptr[a]; e < g->ptr[a + 1]; e++)
			w->k[a] += g->w[e];
		w->tot[a] = w->k[a];
		m2 += w->k[a];
	}
	if (m2 <= 0)
		return 0;
	parsa_rng_shuffle_u32(rng, w->order, g->n);
	for (uint32_t p = 0; p < passes; p++) {
		uint64_t moves = 0;

		if (parsa_stop_due(o->stop)) {
			*stopped = 1;
			break;
		}
		for (uint32_t i = 0; i < g->n; i++) {
			uint32_t a = w->order[i], from;
			double dq;

			if (i % PARSA_STOP_POPS == PARSA_STOP_POPS - 1 &&
			    parsa_stop_due(o->stop)) {
				*stopped = 1;
				return total + moves;
			}
			if (w->k[a] <= 0 || !move_node(g, w, a, m2, &from, &dq))
				continue;
			moves++;
			if (o->trace)
				o->trace(o->trace_arg, level, w->comm, a, from,
					 w->comm[a], dq);
		}
		total += moves;
		if ((double)moves < o->min_move_frac * (double)g->n ||
		    moves == 0)
			break;
	}
	return total;
}

/*
 * Number g's communities (w->comm) 0..*nc-1 in order of their lowest node
 * into newid (indexed by the old id), and contract g into x: a node per
 * community, its row the summed weights to every community (its own: the
 * self-loop).  0 or PARSA_ENOMEM.
 */
/*
 * Number the values of in[0..n) (each < n_ids) densely in order of first
 * appearance: id[v] = the number of value v (NIL if absent; id has n_ids
 * entries), out[u] = id[in[u]] when out is not NULL (out may be in).
 * Returns how many values there are.
 */
static uint32_t dense_ids(const uint32_t *in, uint32_t n, uint32_t *id,
			  uint32_t n_ids, uint32_t *out)
{
	uint32_t c = 0;

	for (uint32_t a = 0; a < n_ids; a++)
		id[a] = NIL;
	for (uint32_t u = 0; u < n; u++) {
		if (id[in[u]] == NIL)
			id[in[u]] = c++;
		if (out)
			out[u] = id[in[u]];
	}
	return c;
}

static int contract(const struct parsa_wgraph *g, struct lv_work *w,
		    uint32_t *newid, uint32_t *nc, struct parsa_wgraph *x,
		    struct parsa_err *err)
{
	uint32_t n = g->n, c = dense_ids(w->comm, n, newid, n, NULL), *first;
	uint32_t *next;
	uint64_t cap = g->ptr[n] ? g->ptr[n] : 1, at = 0;

	*nc = c;
	first = malloc(((size_t)c + 1) * sizeof(uint32_t));
	next = malloc(((size_t)n + 1) * sizeof(uint32_t));
	x->ptr = malloc(((size_t)c + 1) * sizeof(uint64_t));
	x->adj = malloc((size_t)cap * sizeof(uint32_t));
	x->w = malloc((size_t)cap * sizeof(double));
	if (!first || !next || !x->ptr || !x->adj || !x->w) {
		free(first);
		free(next);
		parsa_wgraph_release(x);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (communities)");
	}
	x->n = c;
	for (uint32_t i = 0; i < c; i++)
		first[i] = NIL;
	for (uint32_t a = n; a-- > 0;) { /* members in increasing order */
		uint32_t ci = newid[w->comm[a]];

		next[a] = first[ci];
		first[ci] = a;
	}
	for (uint32_t ci = 0; ci < c; ci++) {
		uint32_t nt = 0;

		x->ptr[ci] = at;
		for (uint32_t a = first[ci]; a != NIL; a = next[a])
			for (uint64_t e = g->ptr[a]; e < g->ptr[a + 1]; e++) {
				uint32_t d = newid[w->comm[g->adj[e]]];

				if (!w->mark[d]) {
					w->mark[d] = 1;
					w->touched[nt++] = d;
				}
				w->acc[d] += g->w[e];
			}
		for (uint32_t i = 0; i < nt; i++) {
			uint32_t d = w->touched[i];

			x->adj[at] = d;
			x->w[at++] = w->acc[d];
			w->acc[d] = 0;
			w->mark[d] = 0;
		}
	}
	x->ptr[c] = at;
	free(first);
	free(next);
	return 0;
}

int parsa_louvain(const struct parsa_wgraph *g,
		  const struct parsa_louvain_opts *o, uint32_t *comm,
		  uint32_t *nc, struct parsa_err *err)
{
	struct parsa_wgraph cur = { 0 }, nxt = { 0 };
	const struct parsa_wgraph *lv = g;
	struct lv_work w = { 0 };
	struct parsa_rng rng;
	uint32_t levels = o->max_levels ? o->max_levels : 1, c = 0;
	uint32_t *newid = malloc(((size_t)g->n + 1) * sizeof(uint32_t));
	int rc = 0, stopped = 0;

	if (!newid || !work_init(&w, g->n)) {
		free(newid);
		work_release(&w);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (communities)");
	}
	parsa_rng_seed(&rng, o->seed ^ 0x9e3779b97f4a7c15ULL);
	for (uint32_t a = 0; a < g->n; a++)
		comm[a] = a; /* the node of a at the current level */
	for (uint32_t l = 0; l < levels && !stopped; l++) {
		uint32_t k;

		if (local_moving(lv, &w, o, &rng, l, &stopped) == 0)
			break;
		rc = contract(lv, &w, newid, &k, &nxt, err);
		if (rc)
			break;
		for (uint32_t a = 0; a < g->n; a++)
			comm[a] = newid[w.comm[comm[a]]];
		parsa_wgraph_release(&cur);
		cur = nxt;
		nxt = (struct parsa_wgraph){ 0 };
		lv = &cur;
	}
	parsa_wgraph_release(&cur);
	if (rc == 0) { /* number them by their lowest node */
		c = dense_ids(comm, g->n, newid, g->n, comm);
		if (nc)
			*nc = c;
	}
	free(newid);
	work_release(&w);
	return rc;
}

int parsa_louvain_expand(const struct parsa_graph *h,
			 enum parsa_louvain_weight weight,
			 struct parsa_wgraph *x, struct parsa_err *err)
{
	uint64_t nnz = parsa_graph_nnz(h), n = (uint64_t)h->n_rows + h->n_cols;
	uint64_t *cur;

	memset(x, 0, sizeof(*x));
	if (n >= UINT32_MAX)
		return parsa_fail(err, PARSA_ERANGE,
				  "communities: %llu rows and columns",
				  (unsigned long long)n);
	if (weight == PARSA_LOUVAIN_HYBRID)
		weight = (double)h->n_cols >= 0.75 * (double)h->n_rows
				 ? PARSA_LOUVAIN_UNIFORM
				 : PARSA_LOUVAIN_DEGREE;
	x->n = (uint32_t)n;
	x->ptr = calloc((size_t)n + 1, sizeof(uint64_t));
	x->adj = malloc((size_t)(2 * nnz + 1) * sizeof(uint32_t));
	x->w = malloc((size_t)(2 * nnz + 1) * sizeof(double));
	cur = malloc(((size_t)h->n_cols + 1) * sizeof(uint64_t));
	if (!x->ptr || !x->adj || !x->w || !cur) {
		free(cur);
		parsa_wgraph_release(x);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (communities)");
	}
	/* rows: the row's own nonzeros; columns: the net's pins */
	for (uint32_t u = 0; u < h->n_rows; u++)
		x->ptr[u + 1] = h->row_ptr[u + 1];
	for (uint64_t e = 0; e < nnz; e++)
		x->ptr[h->n_rows + h->col[e] + 1]++;
	for (uint64_t a = h->n_rows; a < n; a++)
		x->ptr[a + 1] += x->ptr[a];
	for (uint32_t v = 0; v < h->n_cols; v++)
		cur[v] = x->ptr[h->n_rows + v];
	for (uint32_t u = 0; u < h->n_rows; u++) {
		double du = (double)parsa_graph_degree(h, u);

		for (uint64_t e = h->row_ptr[u]; e < h->row_ptr[u + 1]; e++) {
			uint32_t v = h->col[e];
			uint64_t sz = x->ptr[h->n_rows + v + 1] -
				      x->ptr[h->n_rows + v];
			double wt = weight == PARSA_LOUVAIN_DEGREE
					    ? du / (double)sz
					    : 1.0;

			x->adj[e] = h->n_rows + v;
			x->w[e] = wt;
			x->adj[cur[v]] = u;
			x->w[cur[v]++] = wt;
		}
	}
	free(cur);
	return 0;
}

int parsa_louvain_star(const struct parsa_graph *h,
		       const struct parsa_louvain_opts *o, uint32_t *comm,
		       uint32_t *nc, struct parsa_err *err)
{
	struct parsa_wgraph x;
	uint32_t *all, *id, c = 0;
	int rc = parsa_louvain_expand(h, o->weight, &x, err);

	if (rc)
		return rc;
	all = malloc(((size_t)x.n + 1) * sizeof(uint32_t));
	id = malloc(((size_t)x.n + 1) * sizeof(uint32_t));
	if (!all || !id)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (communities)");
	if (rc == 0)
		rc = parsa_louvain(&x, o, all, NULL, err);
	if (rc == 0) { /* the rows' communities, by their lowest row */
		c = dense_ids(all, h->n_rows, id, x.n, comm);
		if (nc)
			*nc = c;
	}
	free(all);
	free(id);
	parsa_wgraph_release(&x);
	return rc;
}
