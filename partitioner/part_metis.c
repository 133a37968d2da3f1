/*
 * part_metis: METIS 5 k-way baseline on the bipartite graph, plus the
 * balance repair that makes its result obey parsa_balance_cap (see
 * part_metis.h for the model and the repair rule).
 */
#include "part_metis.h"

#include <math.h>
#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "base_greedy.h"
#include "parsa_partu.h"

_Static_assert(sizeof(idx_t) == 4, "parsa expects METIS built with 32-bit idx_t");

/* The METIS view of the bipartite graph; all arrays owned. */
struct metis_graph {
	idx_t nv;      /* n_rows + n_cols */
	idx_t *xadj;   /* nv + 1 */
	idx_t *adjncy; /* 2 * nnz */
	idx_t *vwgt;   /* nv: 1 for examples, 0 for features */
	idx_t *mpart;  /* nv: METIS output */
};

static void mg_release(struct metis_graph *m)
{
	free(m->xadj);
	free(m->adjncy);
	free(m->vwgt);
	free(m->mpart);
	memset(m, 0, sizeof(*m));
}

static int check_sizes(const struct parsa_graph *g, struct parsa_err *err)
{
	uint64_t nv = (uint64_t)g->n_rows + g->n_cols;
	uint64_t nnz = parsa_graph_nnz(g);

	if (nv > (uint64_t)INT32_MAX)
		return parsa_fail(err, PARSA_ERANGE,
				  "metis: %llu examples + features exceed "
				  "METIS's 32-bit vertex ids",
				  (unsigned long long)nv);
	if (nnz > (uint64_t)INT32_MAX / 2)
		return parsa_fail(err, PARSA_ERANGE,
				  "metis: %llu nonzeros (x2 for both edge "
				  "directions) exceed METIS's 32-bit edge index",
				  (unsigned long long)nnz);
	return 0;
}

/* Vertex degrees into xadj[1..nv], then prefix sums. */
static void fill_xadj(const struct parsa_graph *g, idx_t *xadj)
{
	uint32_t nr = g->n_rows;
	uint64_t nnz = parsa_graph_nnz(g);

	xadj[0] = 0;
	for (uint32_t u = 0; u < nr; u++)
		xadj[u + 1] = (idx_t)parsa_graph_degree(g, u);
	for (uint32_t j = 0; j < g->n_cols; j++)
		xadj[nr + j + 1] = 0;
	for (uint64_t e = 0; e < nnz; e++)
		xadj[nr + g->col[e] + 1]++;
	for (uint64_t v = 0; v < (uint64_t)nr + g->n_cols; v++)
		xadj[v + 1] += xadj[v];
}

/* Adjacency: example u -> n_rows + c, feature c -> u. */
static void fill_adjncy(const struct parsa_graph *g, const idx_t *xadj,
			idx_t *cursor, idx_t *adjncy)
{
	uint32_t nr = g->n_rows;

	for (uint32_t j = 0; j < g->n_cols; j++)
		cursor[j] = xadj[nr + j];
	for (uint32_t u = 0; u < nr; u++) {
		idx_t p = xadj[u];

		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
			uint32_t c = g->col[e];

			adjncy[p++] = (idx_t)(nr + c);
			adjncy[cursor[c]++] = (idx_t)u;
		}
	}
}

static int mg_build(struct metis_graph *m, const struct parsa_graph *g,
		    struct parsa_err *err)
{
	size_t nv = (size_t)g->n_rows + g->n_cols;
	size_t ne = (size_t)(2 * parsa_graph_nnz(g));
	idx_t *cursor;

	memset(m, 0, sizeof(*m));
	m->nv = (idx_t)nv;
	m->xadj = malloc((nv + 1) * sizeof(idx_t));
	m->adjncy = malloc((ne ? ne : 1) * sizeof(idx_t));
	m->vwgt = malloc((nv ? nv : 1) * sizeof(idx_t));
	m->mpart = malloc((nv ? nv : 1) * sizeof(idx_t));
	cursor = malloc(((size_t)g->n_cols + 1) * sizeof(idx_t));
	if (!m->xadj || !m->adjncy || !m->vwgt || !m->mpart || !cursor) {
		free(cursor);
		mg_release(m);
		return parsa_fail(err, PARSA_ENOMEM,
				  "metis: out of memory for a graph of %zu "
				  "vertices and %zu arcs", nv, ne);
	}
	fill_xadj(g, m->xadj);
	fill_adjncy(g, m->xadj, cursor, m->adjncy);
	free(cursor);
	for (size_t v = 0; v < nv; v++)
		m->vwgt[v] = v < g->n_rows ? 1 : 0;
	return 0;
}

/* UFACTOR (1/1000 of allowed overload) so that METIS aims at the cap. */
static idx_t ufactor_for(uint64_t n, uint32_t k, uint64_t cap)
{
	double ratio = (double)cap * k / (double)n;
	double uf = floor((ratio - 1.0) * 1000.0);

	if (uf < 1)
		return 1;
	return uf > 1e6 ? (idx_t)1000000 : (idx_t)uf;
}

static int map_metis_status(int st, struct parsa_err *err)
{
	switch (st) {
	case METIS_OK:
		return 0;
	case METIS_ERROR_MEMORY:
		return parsa_fail(err, PARSA_ENOMEM, "metis: out of memory");
	case METIS_ERROR_INPUT:
		return parsa_fail(err, PARSA_EINVAL,
				  "metis: METIS rejected the input graph");
	default:
		return parsa_fail(err, PARSA_EINVAL,
				  "metis: METIS_PartGraphKway failed (%d)", st);
	}
}

static int run_metis(struct metis_graph *m, uint32_t k, idx_t ufactor,
		     uint64_t seed, struct parsa_err *err)
{
	idx_t options[METIS_NOPTIONS];
	idx_t ncon = 1, nparts = (idx_t)k, objval = 0;
	int st;

	METIS_SetDefaultOptions(options);
	options[METIS_OPTION_SEED] = (idx_t)((seed ^ (seed >> 32)) & 0x7fffffff);
	options[METIS_OPTION_UFACTOR] = ufactor;
	options[METIS_OPTION_NUMBERING] = 0;
	st = METIS_PartGraphKway(&m->nv, &ncon, m->xadj, m->adjncy, m->vwgt,
				 NULL, NULL, &nparts, NULL, NULL, options,
				 &objval, m->mpart);
	if (st != METIS_OK)
		return map_metis_status(st, err);
	for (idx_t v = 0; v < m->nv; v++)
		if (m->mpart[v] < 0 || m->mpart[v] >= nparts)
			return parsa_fail(err, PARSA_EINVAL,
					  "metis: METIS returned part %d for "
					  "vertex %d (k = %u)", (int)m->mpart[v],
					  (int)v, k);
	return 0;
}

/* ---- balance repair ------------------------------------------------------ */

struct cand {
	uint32_t part; /* current (overloaded) part */
	uint32_t aff;  /* features METIS placed in the same part */
	uint32_t u;    /* example */
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	if (x->aff != y->aff)
		return x->aff < y->aff ? -1 : 1;
	return (x->u < y->u) - (x->u > y->u); /* higher id first */
}

/* The part under the cap for example u (rule in part_metis.h): the
 * greedy rule (base_greedy.h) with cost[q] = the features of u that METIS
 * did not place in q; u's own part is over the cap, so never chosen.
 * cost[] (k) is zero on entry and on return. */
static uint32_t repair_target(const struct parsa_graph *g, const idx_t *fpart,
			      uint32_t u, uint32_t k, const uint64_t *count,
			      uint64_t cap, uint64_t *cost)
{
	uint64_t deg = g->row_ptr[u + 1] - g->row_ptr[u];
	uint32_t best;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
		cost[fpart[g->col[e]]]++;
	for (uint32_t q = 0; q < k; q++)
		cost[q] = deg - cost[q];
	best = base_greedy_pick(k, cost, count, cap);
	memset(cost, 0, k * sizeof(*cost));
	return best;
}

/* Candidates: every example of an overloaded part, with its affinity. */
static size_t collect_cands(const struct parsa_graph *g, const idx_t *fpart,
			    const uint32_t *part, const uint64_t *count,
			    uint64_t cap, struct cand *c)
{
	size_t nc = 0;

	for (uint32_t u = 0; u < g->n_rows; u++) {
		uint32_t p = part[u], aff = 0;

		if (count[p] <= cap)
			continue;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
			aff += (uint32_t)fpart[g->col[e]] == p;
		c[nc++] = (struct cand){ p, aff, u };
	}
	return nc;
}

static int repair_balance(const struct parsa_graph *g, const idx_t *fpart,
			  uint32_t k, uint64_t cap, uint32_t *part,
			  struct parsa_err *err)
{
	uint64_t *count = calloc(k, sizeof(*count));
	uint64_t *cost = calloc(k, sizeof(*cost));
	struct cand *c = NULL;
	size_t nc = 0, i = 0;
	int over = 0;

	if (!count || !cost)
		goto oom;
	for (uint32_t u = 0; u < g->n_rows; u++)
		count[part[u]]++;
	for (uint32_t q = 0; q < k; q++)
		over |= count[q] > cap;
	if (!over)
		goto done;
	c = malloc((size_t)g->n_rows * sizeof(*c));
	if (!c)
		goto oom;
	nc = collect_cands(g, fpart, part, count, cap, c);
	qsort(c, nc, sizeof(*c), cand_cmp);
	for (; i < nc; i++) {
		uint32_t p = c[i].part, u = c[i].u, q;

		if (count[p] <= cap)
			continue;
		q = repair_target(g, fpart, u, k, count, cap, cost);
		/* q exists: sum(count) = n <= k * cap, and p is over cap */
		part[u] = q;
		count[p]--;
		count[q]++;
	}
done:
	free(count);
	free(cost);
	free(c);
	return 0;
oom:
	free(count);
	free(cost);
	return parsa_fail(err, PARSA_ENOMEM, "metis: out of memory (repair)");
}

/* ---- entry point --------------------------------------------------------- */

static int check_args(const struct parsa_graph *g, uint32_t k,
		      double imbalance, const uint32_t *part,
		      struct parsa_err *err)
{
	if (!g)
		return parsa_fail(err, PARSA_EINVAL, "metis: no graph");
	if (k < 1 || k > (uint32_t)INT32_MAX)
		return parsa_fail(err, PARSA_EINVAL,
				  "metis: k must be in 1..%d (got %u)",
				  INT32_MAX, k);
	if (!(imbalance >= 1.0) || !isfinite(imbalance))
		return parsa_fail(err, PARSA_EINVAL,
				  "metis: imbalance must be >= 1 (got %g)",
				  imbalance);
	if (g->n_rows > 0 && !part)
		return parsa_fail(err, PARSA_EINVAL, "metis: no output array");
	return 0;
}

/* The cases decided without METIS; returns 1 when handled. */
static int trivial_cases(const struct parsa_graph *g, uint32_t k,
			 uint32_t *part)
{
	uint32_t n = g->n_rows;

	if (n == 0)
		return 1;
	if (k == 1 || n <= k || parsa_graph_nnz(g) == 0) {
		for (uint32_t u = 0; u < n; u++)
			part[u] = k == 1 ? 0 : u % k;
		return 1;
	}
	return 0;
}

int part_metis_u(const struct parsa_graph *g, uint32_t k, double imbalance,
		 uint64_t seed, uint32_t *part, struct parsa_err *err)
{
	struct metis_graph m;
	uint64_t cap;
	int rc = check_args(g, k, imbalance, part, err);

	if (rc)
		return rc;
	if ((rc = parsa_graph_validate(g, err)) != 0)
		return rc;
	if (trivial_cases(g, k, part))
		return 0;
	if ((rc = check_sizes(g, err)) != 0)
		return rc;
	if ((rc = mg_build(&m, g, err)) != 0)
		return rc;
	cap = parsa_balance_cap(g->n_rows, k, imbalance);
	rc = run_metis(&m, k, ufactor_for(g->n_rows, k, cap), seed, err);
	if (!rc) {
		for (uint32_t u = 0; u < g->n_rows; u++)
			part[u] = (uint32_t)m.mpart[u];
		rc = repair_balance(g, m.mpart + g->n_rows, k, cap, part, err);
	}
	mg_release(&m);
	return rc;
}
