/*
 * parsa_graph: CSR building, transpose and validation (see parsa_graph.h).
 */
#include "parsa_graph.h"

#include <stdlib.h>
#include <string.h>

void parsa_graph_init(struct parsa_graph *g)
{
	memset(g, 0, sizeof(*g));
}

void parsa_graph_release(struct parsa_graph *g)
{
	if (!g)
		return;
	free(g->row_ptr);
	free(g->col);
	parsa_graph_init(g);
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem,
		struct parsa_err *err)
{
	uint64_t ncap = *cap ? *cap : 1024;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap += ncap / 2 + 1024;
	if (ncap > SIZE_MAX / elem)
		return parsa_fail(err, PARSA_ENOMEM, "graph too large");
	np = realloc(*p, (size_t)(ncap * elem));
	if (!np)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory growing graph to %llu entries",
				  (unsigned long long)ncap);
	*p = np;
	*cap = ncap;
	return 0;
}

static void sort_u32(uint32_t *a, size_t n)
{
	size_t s = 1;

	while (s < n && a[s - 1] <= a[s])
		s++;
	if (s >= n)
		return; /* already sorted: the common case for LIBSVM rows */
	if (n <= 64) { /* insertion sort from the sorted prefix a[0..s) */
		for (size_t i = s; i < n; i++) {
			uint32_t v = a[i];
			size_t j = i;

			for (; j > 0 && a[j - 1] > v; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	/* longer rows: shell sort (no qsort callback per comparison) */
	for (size_t gap = n / 2; gap > 0; gap = gap == 2 ? 1 : gap * 5 / 11) {
		for (size_t i = gap; i < n; i++) {
			uint32_t v = a[i];
			size_t j = i;

			while (j >= gap && a[j - gap] > v) {
				a[j] = a[j - gap];
				j -= gap;
			}
			a[j] = v;
		}
	}
}

int parsa_graph_add_row(struct parsa_graph *g, uint32_t *cols, size_t n,
			struct parsa_err *err)
{
	uint64_t base;
	size_t m = 0;
	int rc;

	if (g->n_rows == UINT32_MAX)
		return parsa_fail(err, PARSA_ERANGE,
				  "more than %u examples", UINT32_MAX - 1);
	rc = grow((void **)&g->row_ptr, &g->row_cap, (uint64_t)g->n_rows + 2,
		  sizeof(uint64_t), err);
	if (rc)
		return rc;
	if (g->n_rows == 0)
		g->row_ptr[0] = 0;
	base = g->row_ptr[g->n_rows];
	rc = grow((void **)&g->col, &g->col_cap, base + n, sizeof(uint32_t),
		  err);
	if (rc)
		return rc;
	sort_u32(cols, n);
	for (size_t i = 0; i < n; i++) {
		if (m > 0 && cols[i] == g->col[base + m - 1])
			continue;
		g->col[base + m++] = cols[i];
		if (cols[i] >= g->n_cols)
			g->n_cols = cols[i] + 1;
	}
	g->n_rows++;
	g->row_ptr[g->n_rows] = base + m;
	return 0;
}

void parsa_graph_trim(struct parsa_graph *g)
{
	uint64_t nnz = parsa_graph_nnz(g);
	void *p;

	if (g->row_ptr && g->row_cap > (uint64_t)g->n_rows + 1) {
		p = realloc(g->row_ptr, ((size_t)g->n_rows + 1) * sizeof(uint64_t));
		if (p) {
			g->row_ptr = p;
			g->row_cap = (uint64_t)g->n_rows + 1;
		}
	}
	if (g->col && nnz > 0 && g->col_cap > nnz) {
		p = realloc(g->col, (size_t)nnz * sizeof(uint32_t));
		if (p) {
			g->col = p;
			g->col_cap = nnz;
		}
	}
}

int parsa_graph_transpose(const struct parsa_graph *g, struct parsa_graph *t,
			  struct parsa_err *err)
{
	uint64_t nnz = parsa_graph_nnz(g);
	uint64_t *ptr;
	uint32_t *col;

	parsa_graph_release(t);
	ptr = calloc((size_t)g->n_cols + 1, sizeof(uint64_t));
	col = malloc((size_t)(nnz ? nnz : 1) * sizeof(uint32_t));
	if (!ptr || !col) {
		free(ptr);
		free(col);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory transposing %llu nonzeros",
				  (unsigned long long)nnz);
	}
	for (uint64_t e = 0; e < nnz; e++)
		ptr[g->col[e] + 1]++;
	for (uint32_t c = 0; c < g->n_cols; c++)
		ptr[c + 1] += ptr[c];
	/* rows visited in increasing order => each transposed row is sorted */
	for (uint32_t r = 0; r < g->n_rows; r++)
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			col[ptr[g->col[e]]++] = r;
	for (uint32_t c = g->n_cols; c > 0; c--)
		ptr[c] = ptr[c - 1];
	ptr[0] = 0;
	t->n_rows = g->n_cols;
	t->n_cols = g->n_rows;
	t->row_ptr = ptr;
	t->col = col;
	t->row_cap = (uint64_t)g->n_cols + 1;
	t->col_cap = nnz ? nnz : 1;
	return 0;
}

int parsa_graph_validate(const struct parsa_graph *g, struct parsa_err *err)
{
	uint64_t end;

	if (g->n_rows == 0)
		return 0;
	if (!g->row_ptr || g->row_ptr[0] != 0)
		return parsa_fail(err, PARSA_EINVAL, "row_ptr[0] must be 0");
	end = g->row_ptr[g->n_rows];
	for (uint32_t r = 0; r < g->n_rows; r++) {
		uint64_t a = g->row_ptr[r], b = g->row_ptr[r + 1];

		if (b < a)
			return parsa_fail(err, PARSA_EINVAL,
					  "row_ptr decreases at row %u", r);
		/* (rows of increasing offsets may climb past the last one
		 * and come back down later: a row is refused before any of
		 * its columns past the columns' end is read) */
		if (b > end)
			return parsa_fail(err, PARSA_EINVAL,
					  "row %u ends at %llu, past the %llu nonzeros",
					  r, (unsigned long long)b,
					  (unsigned long long)end);
		for (uint64_t e = a; e < b; e++) {
			if (g->col[e] >= g->n_cols)
				return parsa_fail(err, PARSA_EINVAL,
						  "row %u: column %u >= %u", r,
						  g->col[e], g->n_cols);
			if (e > a && g->col[e] <= g->col[e - 1])
				return parsa_fail(err, PARSA_EINVAL,
						  "row %u: columns not strictly increasing",
						  r);
		}
	}
	return 0;
}

/* parsa_graph_col_cuts' histogram: task t's rows into hist + t * nb. */
struct cuts_job {
	const struct parsa_graph *g;
	uint64_t *hist;
	uint32_t nb, shift, n;
};

static void hist_task(void *arg, uint32_t t)
{
	const struct cuts_job *j = arg;
	const struct parsa_graph *g = j->g;
	uint64_t *h = j->hist + (size_t)t * j->nb;
	uint32_t lo = (uint32_t)((uint64_t)g->n_rows * t / j->n);
	uint32_t hi = (uint32_t)((uint64_t)g->n_rows * (t + 1) / j->n);

	for (uint64_t e = g->row_ptr[lo], end = g->row_ptr[hi]; e < end; e++)
		h[g->col[e] >> j->shift]++;
}

static int cmp_desc_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a < b) - (a > b);
}

/*
 * The buckets' nonzeros (j->hist) into work: a nonzero of a cold feature
 * weighs cold_w / 4 as much as one of the hottest features, whose
 * per-feature state stays in cache (the densest buckets holding
 * HOT_FEATURES features, if twice as dense as the mean).  What a cold
 * nonzero costs depends on the task: on Zipf-like data (parsa gen, 100M
 * nonzeros, 2 threads) a weight of 3.5 left the FM's counts (a header,
 * a mask and a count fetched a nonzero) 1.00-1.39x longer on the hot
 * task, 2.25 1.01-1.03x; the used sets (a mask) keep 3.5 (their tasks
 * end in either order, 0.81-1.29x).  Without memory for the sort: the
 * nonzeros as they are.
 */
#define HOT_FEATURES 32768u

static void weigh(struct cuts_job *j, uint32_t cold_w)
{
	uint32_t hot = HOT_FEATURES >> j->shift, nb = j->nb;
	uint64_t *s, th, sum = 0;

	if (cold_w == 4 || hot >= nb ||
	    !(s = malloc((size_t)nb * sizeof(uint64_t))))
		return;
	memcpy(s, j->hist, (size_t)nb * sizeof(uint64_t));
	for (uint32_t b = 0; b < nb; b++)
		sum += s[b];
	qsort(s, nb, sizeof(uint64_t), cmp_desc_u64);
	/* hot: above that and twice the mean (where every feature is as
	 * frequent, none is hotter) */
	th = s[hot] > 2 * (sum / nb) ? s[hot] : 2 * (sum / nb);
	free(s);
	for (uint32_t b = 0; b < nb; b++)
		if (j->hist[b] <= th)
			j->hist[b] = j->hist[b] * cold_w / 4;
}

int parsa_graph_col_cuts(const struct parsa_graph *g, uint32_t n,
			 uint32_t *cut, uint32_t cold_w,
			 parsa_graph_par_fn par, void *par_arg)
{
	struct cuts_job j = { g, NULL, 0, 6, n ? n : 1 };
	uint64_t total = 0, acc = 0;
	uint32_t t = 1;

	for (uint32_t i = 0; i <= n; i++)  /* even ranges, multiples of 64 */
		cut[i] = i == n ? g->n_cols
				: (uint32_t)((uint64_t)g->n_cols * i / n) & ~63u;
	if (n <= 1 || g->n_rows == 0)
		return 0;
	while (((uint64_t)g->n_cols >> j.shift) >= (1u << 16))
		j.shift++;
	j.nb = (uint32_t)(((uint64_t)g->n_cols >> j.shift) + 1);
	j.hist = calloc((size_t)j.n * j.nb, sizeof(uint64_t));
	if (!j.hist)
		return PARSA_ENOMEM;
	if (par)
		par(par_arg, j.n, hist_task, &j);
	else
		for (uint32_t i = 0; i < j.n; i++)
			hist_task(&j, i);
	for (uint32_t b = 0; b < j.nb; b++)
		for (uint32_t i = 1; i < j.n; i++)
			j.hist[b] += j.hist[(size_t)i * j.nb + b];
	weigh(&j, cold_w);
	for (uint32_t b = 0; b < j.nb; b++)
		total += j.hist[b];
	/* cut t after the first bucket where t/n of the nonzeros are in */
	for (uint32_t b = 0; b < j.nb && t < n; b++) {
		acc += j.hist[b];
		while (t < n && acc * n >= total * t) {
			uint64_t c = (uint64_t)(b + 1) << j.shift;

			cut[t++] = c < g->n_cols ? (uint32_t)c : g->n_cols;
		}
	}
	while (t < n)
		cut[t++] = g->n_cols;
	free(j.hist);
	return 0;
}

uint64_t parsa_graph_bytes(const struct parsa_graph *g)
{
	if (!g->row_ptr)
		return 0;
	return ((uint64_t)g->n_rows + 1) * sizeof(uint64_t) +
	       parsa_graph_nnz(g) * sizeof(uint32_t);
}
