/*
 * parsa_graph: the bipartite graph G(U, V, E) in CSR form.
 *
 * Rows are examples (U), columns are features (V) as compact indices
 * 0..n_cols-1 (the map back to the dataset's own 64-bit ids lives with the
 * reader, not here).  Edge offsets are 64-bit so graphs beyond 2^31 nonzeros
 * are not excluded by design; vertex counts are 32-bit.
 *
 * Invariants (checked by parsa_graph_validate):
 *   - row_ptr[0] == 0, row_ptr is non-decreasing, row_ptr[n_rows] == nnz;
 *   - every col[e] < n_cols;
 *   - within a row, col is strictly increasing (sorted, no duplicates).
 * A row may be empty (an example without features).
 * parsa_graph_validate reads no column past row_ptr[n_rows], whatever the
 * other offsets hold (the binary cache gives it files from anyone), so
 * row_ptr[n_rows] must not exceed col's length.
 *
 * Ownership: a struct parsa_graph owns row_ptr and col; parsa_graph_release
 * frees them.  Not thread-safe for writing; concurrent readers are fine.
 */
#ifndef PARSA_GRAPH_H
#define PARSA_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

struct parsa_graph {
	uint32_t n_rows;   /* |U|: examples */
	uint32_t n_cols;   /* |V|: features, compact ids */
	uint64_t *row_ptr; /* n_rows + 1 offsets into col */
	uint32_t *col;     /* row_ptr[n_rows] feature ids, sorted per row */
	uint64_t row_cap;  /* allocated entries of row_ptr (builder) */
	uint64_t col_cap;  /* allocated entries of col (builder) */
};

/* An empty graph with no allocation; n_cols may be grown by add_row. */
void parsa_graph_init(struct parsa_graph *g);

/* Free the arrays and reset to the empty graph.  g may be NULL. */
void parsa_graph_release(struct parsa_graph *g);

static inline uint64_t parsa_graph_nnz(const struct parsa_graph *g)
{
	return g->row_ptr ? g->row_ptr[g->n_rows] : 0;
}

static inline uint32_t parsa_graph_degree(const struct parsa_graph *g,
					  uint32_t r)
{
	return (uint32_t)(g->row_ptr[r + 1] - g->row_ptr[r]);
}

/*
 * Append one row whose features are cols[0..n) (any order, duplicates
 * allowed: they are sorted and counted once).  cols is modified in place
 * (sorted).  n_cols grows to cover the largest id.  Returns 0, PARSA_ENOMEM,
 * or PARSA_ERANGE when the graph would exceed 2^32-1 rows.
 */
int parsa_graph_add_row(struct parsa_graph *g, uint32_t *cols, size_t n,
			struct parsa_err *err);

/* Shrink the arrays to their used size (after building).  Never fails. */
void parsa_graph_trim(struct parsa_graph *g);

/*
 * Build the transpose of g into *t (features become rows), rows sorted.
 * *t must be initialised (parsa_graph_init) and is overwritten.
 */
int parsa_graph_transpose(const struct parsa_graph *g, struct parsa_graph *t,
			  struct parsa_err *err);

/* Check the invariants above; PARSA_EINVAL with a message if broken. */
int parsa_graph_validate(const struct parsa_graph *g, struct parsa_err *err);

/*
 * Cuts of the features into n ranges of about equal nonzeros, for tasks
 * that each take the features [cut[t], cut[t+1]) (a range's work grows
 * with its nonzeros; even ranges of ids leave the first task most of
 * the work where low ids are the popular ones, as in Zipf-like data):
 * 0 = cut[0] <= cut[1] <= ... <= cut[n] = n_cols, every inner cut a
 * multiple of 64.  From a histogram of col in buckets of 64 or more
 * features, built by up to n tasks over ranges of rows through par
 * (which must call fn(fn_arg, t) once for every t in [0, n) and return
 * when all have returned; NULL: one task).  cold_w: what a nonzero of a
 * cold feature weighs against one of the hottest, in quarters (the
 * caller's measure of its task: 4 = all alike; see parsa_graph.c).  The
 * cuts depend on g, n and cold_w only.  0, or PARSA_ENOMEM with even cuts
 * in cut (still valid ranges).
 */
typedef void (*parsa_graph_task_fn)(void *fn_arg, uint32_t t);
typedef void (*parsa_graph_par_fn)(void *par_arg, uint32_t n,
				   parsa_graph_task_fn fn, void *fn_arg);
int parsa_graph_col_cuts(const struct parsa_graph *g, uint32_t n,
			 uint32_t *cut, uint32_t cold_w,
			 parsa_graph_par_fn par, void *par_arg);

/*
 * The nonzeros whose column is in [lo, hi), row by row: a row's columns
 * are sorted, so those in range are one run of it (found by a scan from
 * the row's start).  parsa_range_it_init, then parsa_range_it_next gives
 * 1 with *v, *r (column, row) until it gives 0.
 */
struct parsa_range_it {
	const struct parsa_graph *g;
	uint32_t lo, hi, r; /* r: the row of e, or n_rows when done */
	uint64_t e, end;
};

static inline void parsa_range_it_row(struct parsa_range_it *it)
{
	const struct parsa_graph *g = it->g;

	for (; it->r < g->n_rows; it->r++) {
		it->e = g->row_ptr[it->r];
		it->end = g->row_ptr[it->r + 1];
		while (it->e < it->end && g->col[it->e] < it->lo)
			it->e++;
		if (it->e < it->end && g->col[it->e] < it->hi)
			return;
	}
}

static inline void parsa_range_it_init(struct parsa_range_it *it,
				       const struct parsa_graph *g,
				       uint32_t lo, uint32_t hi)
{
	it->g = g;
	it->lo = lo;
	it->hi = hi;
	it->r = 0;
	it->e = it->end = 0;
	parsa_range_it_row(it);
}

static inline int parsa_range_it_next(struct parsa_range_it *it,
				      uint32_t *v, uint32_t *r)
{
	if (it->r >= it->g->n_rows)
		return 0;
	*v = it->g->col[it->e];
	*r = it->r;
	if (++it->e >= it->end || it->g->col[it->e] >= it->hi) {
		it->r++;
		parsa_range_it_row(it);
	}
	return 1;
}

/* Bytes held by the arrays in use (for memory reports). */
uint64_t parsa_graph_bytes(const struct parsa_graph *g);

#endif /* PARSA_GRAPH_H */
