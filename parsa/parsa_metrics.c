/*
 * parsa_metrics: the quality metrics of README "What the numbers mean"
 * from a placement itself, and their mean over random placements (see
 * parsa_metrics.h).
 *
 * Everything comes from one neighbor-set table used = N(U_1..U_k)
 * (|V| x k bits).  With c_v the number of parts using v and o = owner[v]:
 *   T_o = |N(U_o) \ V_o| + Σ_{v∈V_o} (c_v - [o uses v]),
 * i.e. the first term is M_o minus the owned features o itself uses, and
 * each owned feature is pulled by every other part that uses it.
 */
#include "parsa_metrics.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base_prefetch.h"

#include "parsa_baseline.h"
#include "parsa_rng.h"

/* Part or owner ids: 4 bytes each (w), or 1 byte (b, w NULL: a random
 * trial's, parsa_random_placement8). */
struct ids {
	const uint32_t *w;
	const uint8_t *b;
};

static inline uint32_t id_at(struct ids x, uint64_t i)
{
	return x.w ? x.w[i] : x.b[i];
}

static struct ids ids32(const uint32_t *w)
{
	return (struct ids){ w, NULL };
}

static int check_ids(struct ids id, uint32_t n, uint32_t k, const char *what,
		     struct parsa_err *err)
{
	if (n > 0 && !id.w && !id.b)
		return parsa_fail(err, PARSA_EINVAL, "%s parts are NULL", what);
	for (uint32_t j = 0; j < n; j++)
		if (id_at(id, j) >= k)
			return parsa_fail(err, PARSA_EINVAL,
					  "%s %u has part %u, but k=%u", what,
					  j, id_at(id, j), k);
	return 0;
}

/* Nonzeros ahead whose mask parsa_used_sets_range fetches. */
#define USED_AHEAD 24

/* parsa_used_sets_check of part ids of either width. */
static int sets_check(const struct parsa_graph *g, struct ids part,
		      const struct parsa_nbrset *used, struct parsa_err *err)
{
	if (!g || !used || used->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "used sets: neighbor sets do not match the "
				  "graph's %u features", g ? g->n_cols : 0);
	return check_ids(part, g->n_rows, used->k, "example", err);
}

int parsa_used_sets_check(const struct parsa_graph *g, const uint32_t *part,
			  const struct parsa_nbrset *used,
			  struct parsa_err *err)
{
	return sets_check(g, ids32(part), used, err);
}

/* The sets of every feature (used cleared): 0, or -1 if a column of g is
 * >= g->n_cols (nothing set then). */
static int used_sets_all(const struct parsa_graph *g, struct ids part,
			 struct parsa_nbrset *used)
{
	const uint32_t *col = g->col;
	uint32_t words = used->words;
	uint64_t nnz = parsa_graph_nnz(g);

	/* rows in any order, each column checked */
	for (uint64_t e = 0; e < nnz; e++)
		if (col[e] >= g->n_cols)
			return -1;
	/* unconditional ORs (no test-and-count per edge); the masks fetched
	 * ahead (a random line each at scale) */
	for (uint32_t r = 0; r < g->n_rows; r++) {
		uint32_t j = id_at(part, r);
		uint64_t *bits = used->bits + (j >> 6);
		uint64_t b = 1ULL << (j & 63);

		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			if (e + USED_AHEAD < nnz)
				base_prefetch_w(used->bits + (uint64_t)col[e + USED_AHEAD] * words);
			bits[(uint64_t)col[e] * words] |= b;
		}
	}
	return 0;
}

int parsa_used_sets_range(const struct parsa_graph *g, const uint32_t *part,
			  struct parsa_nbrset *used, uint32_t lo, uint32_t hi)
{
	const uint32_t *col = g->col;
	uint32_t words = used->words, v, r;
	uint64_t in = 0, out = 0;
	struct parsa_range_it it;
	struct { uint64_t *m; uint32_t j; } q[USED_AHEAD];
	int more = 1;

	if (lo == 0 && hi >= g->n_cols)
		return used_sets_all(g, ids32(part), used);
	/* every row's last column checked (rows are sorted), then the
	 * entries in [lo, hi) (parsa_range_it) through a ring of USED_AHEAD
	 * whose masks are fetched on entry (the next in-range entries may
	 * be rows away) */
	for (uint32_t r = 0; r < g->n_rows; r++)
		if (g->row_ptr[r + 1] > g->row_ptr[r] &&
		    col[g->row_ptr[r + 1] - 1] >= g->n_cols)
			return -1;
	parsa_range_it_init(&it, g, lo, hi);
	for (;;) {
		if (more && (more = parsa_range_it_next(&it, &v, &r))) {
			q[in % USED_AHEAD].m = used->bits + (uint64_t)v * words;
			q[in % USED_AHEAD].j = part[r];
			base_prefetch_w(q[in % USED_AHEAD].m);
			in++;
		}
		if (out < in && (in - out == USED_AHEAD || !more)) {
			uint32_t j = q[out % USED_AHEAD].j;

			q[out % USED_AHEAD].m[j >> 6] |= 1ULL << (j & 63);
			out++;
		}
		if (!more && out == in)
			return 0;
	}
}

/* parsa_used_sets of part ids of either width. */
static int used_sets_of(const struct parsa_graph *g, struct ids part,
			struct parsa_nbrset *used, struct parsa_err *err)
{
	int rc = sets_check(g, part, used, err);

	if (rc)
		return rc;
	parsa_nbrset_clear(used);
	if (used_sets_all(g, part, used) != 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "used sets: a feature is out of range");
	parsa_nbrset_recount(used);
	return 0;
}

int parsa_used_sets(const struct parsa_graph *g, const uint32_t *part,
		    struct parsa_nbrset *used, struct parsa_err *err)
{
	return used_sets_of(g, ids32(part), used, err);
}

/* Fill pc from the used sets and the owners (pc zeroed, k entries). */
static void count_parts(const struct parsa_graph *g,
			const struct parsa_nbrset *used, struct ids part,
			struct ids owner, struct parsa_counts *pc)
{
	for (uint32_t r = 0; r < g->n_rows; r++)
		pc->U[id_at(part, r)]++;
	for (uint32_t i = 0; i < used->k; i++)
		pc->M[i] = used->size[i];
	for (uint32_t v = 0; v < g->n_cols; v++) {
		uint32_t c = parsa_nbrset_count(used, v), o = id_at(owner, v);
		uint32_t h = (uint32_t)parsa_nbrset_has(used, v, o);

		assert(c >= h);
		pc->V_used += c > 0;
		pc->local[o] += h;
		pc->T[o] += c - h;
	}
	for (uint32_t i = 0; i < used->k; i++) {
		assert(pc->M[i] >= pc->local[i]);
		pc->T[i] += pc->M[i] - pc->local[i];
	}
}

/*
 * count_parts without the k-bit sets (k > PARSA_METRICS_SETS_MAX_K): the
 * sets 64 parts at a time (parsa_sets64), each group's masks counted into
 * M_i, c_v and local_i.  8 bytes per feature for the masks, 4 for c_v and
 * 4 per example instead of k/8 per feature.  pc zeroed, k entries.
 */
static int count_parts_walk(const struct parsa_graph *g, uint32_t k,
			    const uint32_t *part, const uint32_t *owner,
			    struct parsa_counts *pc, struct parsa_err *err)
{
	struct parsa_sets64 s;
	uint32_t *c = calloc((size_t)g->n_cols + 1, sizeof(*c));
	int rc = c ? parsa_sets64_init(&s, g, k, part, err)
		   : parsa_fail(err, PARSA_ENOMEM,
				"metrics: out of memory (k=%u)", k);

	if (rc) {
		free(c);
		return rc;
	}
	for (uint32_t r = 0; r < g->n_rows; r++)
		pc->U[part[r]]++;
	for (uint32_t q = 0; q < s.groups; q++) {
		parsa_sets64_group(&s, g, part, q);
		for (uint32_t v = 0; v < g->n_cols; v++) {
			uint64_t m = s.mask[v];
			uint32_t o = owner[v];

			if (!m)
				continue;
			c[v] += parsa_popcount64(m);
			if (o >> 6 == q)
				pc->local[o] += (m >> (o & 63)) & 1;
			for (; m; m &= m - 1)
				pc->M[q * 64 + (uint32_t)__builtin_ctzll(m)]++;
		}
	}
	for (uint32_t v = 0; v < g->n_cols; v++) {
		pc->V_used += c[v] > 0;
		pc->T[owner[v]] += c[v];
	}
	for (uint32_t i = 0; i < k; i++) {
		assert(pc->T[i] >= pc->local[i] && pc->M[i] >= pc->local[i]);
		pc->T[i] = pc->T[i] - pc->local[i] + (pc->M[i] - pc->local[i]);
	}
	parsa_sets64_release(&s);
	free(c);
	return 0;
}

void parsa_metrics_summarize(const struct parsa_counts *pc, uint32_t k,
			     uint64_t n_rows, struct parsa_metrics *m)
{
	uint64_t M_max = 0, T_max = 0, T_sum = 0, M_sum = 0, loc = 0;
	uint64_t U_max = 0, ideal = ((uint64_t)n_rows + k - 1) / k;

	for (uint32_t i = 0; i < k; i++) {
		M_max = pc->M[i] > M_max ? pc->M[i] : M_max;
		T_max = pc->T[i] > T_max ? pc->T[i] : T_max;
		U_max = pc->U[i] > U_max ? pc->U[i] : U_max;
		T_sum += pc->T[i];
		M_sum += pc->M[i];
		loc += pc->local[i];
	}
	memset(m, 0, sizeof(*m));
	m->k = k;
	m->M_max = (double)M_max;
	m->T_max = (double)T_max;
	m->T_sum = (double)T_sum;
	m->M_sum = (double)M_sum;
	m->RF = pc->V_used ? (double)M_sum / (double)pc->V_used : 0.0;
	m->imbalance = ideal ? (double)U_max / (double)ideal : 1.0;
	/* 1 - Σ(M_i - local_i) / Σ M_i */
	m->local_fraction = M_sum ? (double)loc / (double)M_sum : 1.0;
	m->V_used = pc->V_used;
	m->U_max = U_max;
}

static void copy_out(uint64_t *dst, const uint64_t *src, uint32_t k)
{
	if (dst)
		memcpy(dst, src, (size_t)k * sizeof(*dst));
}

int parsa_partfig_init(struct parsa_partfig *pf, uint32_t k,
		       struct parsa_err *err)
{
	uint64_t *buf;

	memset(pf, 0, sizeof(*pf));
	if (k == 0)
		return parsa_fail(err, PARSA_EINVAL, "part figures: k must be >= 1");
	buf = calloc((size_t)k * 7, sizeof(*buf));
	if (!buf)
		return parsa_fail(err, PARSA_ENOMEM,
				  "part figures: out of memory (k=%u)", k);
	pf->k = k;
	pf->U = buf;
	pf->nnz = buf + (size_t)k;
	pf->M = buf + 2 * (size_t)k;
	pf->V = buf + 3 * (size_t)k;
	pf->T = buf + 4 * (size_t)k;
	pf->in = buf + 5 * (size_t)k;
	pf->out = buf + 6 * (size_t)k;
	return 0;
}

void parsa_partfig_release(struct parsa_partfig *pf)
{
	if (!pf)
		return;
	free(pf->U);
	memset(pf, 0, sizeof(*pf));
}

/* The figures beyond the counters: nnz and V from the placement, in/out
 * from M, T and the local counts. */
static void fill_figures(const struct parsa_graph *g, struct ids part,
			 struct ids owner, const struct parsa_counts *pc,
			 struct parsa_partfig *pf)
{
	uint32_t k = pf->k;

	memset(pf->U, 0, (size_t)k * 7 * sizeof(*pf->U));
	for (uint32_t r = 0; r < g->n_rows; r++)
		pf->nnz[id_at(part, r)] += g->row_ptr[r + 1] - g->row_ptr[r];
	for (uint32_t v = 0; v < g->n_cols; v++)
		pf->V[id_at(owner, v)]++;
	for (uint32_t i = 0; i < k; i++) {
		pf->U[i] = pc->U[i];
		pf->M[i] = pc->M[i];
		pf->T[i] = pc->T[i];
		pf->in[i] = pc->M[i] - pc->local[i];
		pf->out[i] = pc->T[i] - pf->in[i];
	}
}

/* Counters (and optionally figures) of one placement (ids of 1 byte only
 * with k <= PARSA_METRICS_SETS_MAX_K). */
static int metrics_all(const struct parsa_graph *g, uint32_t k,
		       struct ids part, struct ids owner,
		       uint64_t *M, uint64_t *T, uint64_t *U,
		       struct parsa_partfig *pf, struct parsa_metrics *m,
		       struct parsa_err *err)
{
	struct parsa_nbrset used;
	struct parsa_counts pc = { 0 };
	uint64_t *buf;
	int rc;

	if (!g || k == 0)
		return parsa_fail(err, PARSA_EINVAL, "metrics: %s",
				  g ? "k must be >= 1" : "graph is NULL");
	if (pf && pf->k != k)
		return parsa_fail(err, PARSA_EINVAL, "metrics: part figures "
				  "are for k=%u, not %u", pf->k, k);
	rc = check_ids(owner, g->n_cols, k, "feature", err);
	if (rc)
		return rc;
	memset(&used, 0, sizeof(used));
	if (k > PARSA_METRICS_SETS_MAX_K && (!part.w || !owner.w))
		return parsa_fail(err, PARSA_EINVAL, "metrics: 1-byte part "
				  "ids with k=%u", k);
	if (k > PARSA_METRICS_SETS_MAX_K)
		rc = check_ids(part, g->n_rows, k, "example", err);
	else if ((rc = parsa_nbrset_init(&used, g->n_cols, k, err)) == 0)
		rc = used_sets_of(g, part, &used, err);
	else
		return rc;
	buf = rc ? NULL : calloc((size_t)k * 4, sizeof(*buf));
	if (!rc && !buf)
		rc = parsa_fail(err, PARSA_ENOMEM,
				"metrics: out of memory (k=%u)", k);
	if (!rc) {
		pc.M = buf;
		pc.T = buf + k;
		pc.U = buf + 2 * (size_t)k;
		pc.local = buf + 3 * (size_t)k;
		if (k > PARSA_METRICS_SETS_MAX_K)
			rc = count_parts_walk(g, k, part.w, owner.w, &pc, err);
		else
			count_parts(g, &used, part, owner, &pc);
	}
	if (!rc) {
		if (m)
			parsa_metrics_summarize(&pc, k, g->n_rows, m);
		copy_out(M, pc.M, k);
		copy_out(T, pc.T, k);
		copy_out(U, pc.U, k);
		if (pf)
			fill_figures(g, part, owner, &pc, pf);
	}
	free(buf);
	parsa_nbrset_release(&used);
	return rc;
}

int parsa_metrics_parts(const struct parsa_graph *g, uint32_t k,
			const uint32_t *part, const uint32_t *owner,
			uint64_t *M, uint64_t *T, uint64_t *U,
			struct parsa_metrics *m, struct parsa_err *err)
{
	return metrics_all(g, k, ids32(part), ids32(owner), M, T, U, NULL, m,
			   err);
}

int parsa_metrics_figures(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, const uint32_t *owner,
			  struct parsa_partfig *pf, struct parsa_metrics *m,
			  struct parsa_err *err)
{
	return metrics_all(g, k, ids32(part), ids32(owner), NULL, NULL, NULL,
			   pf, m, err);
}

int parsa_metrics_compute(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, const uint32_t *owner,
			  struct parsa_metrics *m, struct parsa_err *err)
{
	return parsa_metrics_parts(g, k, part, owner, NULL, NULL, NULL, m,
				   err);
}

void parsa_metrics_add(struct parsa_metrics *acc,
			const struct parsa_metrics *x)
{
	acc->M_max += x->M_max;
	acc->T_max += x->T_max;
	acc->T_sum += x->T_sum;
	acc->M_sum += x->M_sum;
	acc->RF += x->RF;
	acc->imbalance += x->imbalance;
	acc->local_fraction += x->local_fraction;
	acc->V_used += x->V_used;
	acc->U_max += x->U_max;
}

void parsa_metrics_div(struct parsa_metrics *acc, uint32_t n)
{
	double d = (double)n;

	acc->M_max /= d;
	acc->T_max /= d;
	acc->T_sum /= d;
	acc->M_sum /= d;
	acc->RF /= d;
	acc->imbalance /= d;
	acc->local_fraction /= d;
	acc->V_used = (acc->V_used + n / 2) / n;
	acc->U_max = (acc->U_max + n / 2) / n;
}

/* A random trial's ids: one byte each where the metrics take them
 * (k <= PARSA_METRICS_SETS_MAX_K; the same placement as in 4 bytes), a
 * quarter of the memory beside the placement's own metrics. */
int parsa_metrics_random_one(const struct parsa_graph *g, uint32_t k,
			     uint64_t seed, struct parsa_partfig *pf,
			     struct parsa_metrics *m, struct parsa_err *err)
{
	size_t w = k <= PARSA_METRICS_SETS_MAX_K ? 1 : sizeof(uint32_t);
	void *part, *owner;
	int rc;

	if (!g || !m || k == 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "random metrics: need a graph and k >= 1");
	part = malloc(((size_t)g->n_rows + 1) * w);
	owner = malloc(((size_t)g->n_cols + 1) * w);
	if (!part || !owner)
		rc = parsa_fail(err, PARSA_ENOMEM,
				"random metrics: out of memory");
	else if (w == 1)
		rc = parsa_random_placement8(g->n_rows, g->n_cols, k, seed,
					     part, owner, err);
	else
		rc = parsa_random_placement(g->n_rows, g->n_cols, k, seed,
					    part, owner, err);
	if (!rc)
		rc = metrics_all(g, k,
				 w == 1 ? (struct ids){ NULL, part } : ids32(part),
				 w == 1 ? (struct ids){ NULL, owner } : ids32(owner),
				 NULL, NULL, NULL, pf, m, err);
	free(part);
	free(owner);
	return rc;
}

void parsa_metrics_mean(const struct parsa_metrics *one, uint32_t n,
			uint32_t k, struct parsa_metrics *mean)
{
	struct parsa_metrics acc = { 0 };

	for (uint32_t t = 0; t < n; t++)
		parsa_metrics_add(&acc, &one[t]);
	parsa_metrics_div(&acc, n);
	acc.k = k;
	*mean = acc;
}

int parsa_metrics_random_figures(const struct parsa_graph *g, uint32_t k,
				 uint64_t seed, uint32_t trials,
				 struct parsa_metrics *mean,
				 struct parsa_partfig *first,
				 struct parsa_err *err)
{
	struct parsa_metrics *one;
	int rc = 0;

	if (!g || !mean || k == 0 || trials == 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "random metrics: need a graph, k >= 1 and "
				  "trials >= 1 (k=%u, trials=%u)", k, trials);
	one = calloc(trials, sizeof(*one));
	if (!one)
		return parsa_fail(err, PARSA_ENOMEM,
				  "random metrics: out of memory");
	for (uint32_t t = 0; !rc && t < trials; t++)
		rc = parsa_metrics_random_one(g, k, seed + t,
					      t == 0 ? first : NULL, &one[t],
					      err);
	if (!rc)
		parsa_metrics_mean(one, trials, k, mean);
	free(one);
	return rc;
}

int parsa_metrics_random(const struct parsa_graph *g, uint32_t k,
			 uint64_t seed, uint32_t trials,
			 struct parsa_metrics *mean, struct parsa_err *err)
{
	return parsa_metrics_random_figures(g, k, seed, trials, mean, NULL,
					    err);
}

double parsa_improvement(double random, double ours)
{
	if (ours == 0.0 && random == 0.0)
		return 0.0;
	if (ours == 0.0)
		return random > 0 ? HUGE_VAL : -HUGE_VAL;
	return (random - ours) / ours * 100.0;
}
