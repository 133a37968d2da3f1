/*
 * train_implicit: pairs / SNAP as implicit feedback (train_implicit.h).
 */
#include "train_implicit.h"

#include <stdlib.h>
#include <string.h>

#include "parsa_rng.h"

/* One uniformly drawn item the user (marked with stamp) never touched, or
 * UINT32_MAX when there is none. */
static uint32_t negative(struct parsa_rng *r, const uint32_t *mark,
			 uint32_t stamp, uint32_t n_items, uint32_t deg)
{
	uint32_t j;

	if (deg >= n_items)
		return UINT32_MAX;
	do
		j = (uint32_t)parsa_rng_below(r, n_items);
	while (mark[j] == stamp);
	return j;
}

int train_implicit_build(const struct part_dataset *ds, const uint32_t *part,
			 const uint32_t *owner, uint64_t seed,
			 struct train_data *d, uint32_t **part_out,
			 uint32_t **owner_out, struct train_implicit *st,
			 struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	uint32_t n_items = g->n_cols, n_users = g->n_rows;
	uint64_t pairs = parsa_graph_nnz(g), cap = 2 * pairs, e = 0, nz = 0;
	uint64_t keys = (uint64_t)n_items + n_users;
	uint32_t *mark = NULL, *pt = NULL, *ow = NULL;
	struct parsa_rng r;

	memset(st, 0, sizeof(*st));
	*part_out = *owner_out = NULL;
	if (cap >= UINT32_MAX - 1 || keys >= UINT32_MAX - 1)
		return parsa_fail(err, PARSA_ERANGE, "implicit feedback: "
				  "%llu pairs give too many examples or keys",
				  (unsigned long long)pairs);
	mark = calloc((size_t)n_items + 1, sizeof(*mark));
	pt = malloc(((size_t)cap + 1) * sizeof(*pt));
	ow = malloc(((size_t)keys + 1) * sizeof(*ow));
	d->rowptr = malloc(((size_t)cap + 1) * sizeof(uint64_t));
	d->col = malloc(((size_t)cap * 2 + 1) * sizeof(uint32_t));
	d->val = malloc(((size_t)cap * 2 + 1) * sizeof(double));
	d->y = malloc(((size_t)cap + 1) * sizeof(int8_t));
	d->feat_id = malloc(((size_t)keys + 1) * sizeof(uint64_t));
	if (!mark || !pt || !ow || !d->rowptr || !d->col || !d->val || !d->y ||
	    !d->feat_id) {
		free(mark);
		free(pt);
		free(ow);
		train_data_release(d);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	parsa_rng_seed(&r, seed);
	d->rowptr[0] = 0;
	for (uint32_t u = 0; u < n_users; u++) {
		uint64_t b = g->row_ptr[u], end = g->row_ptr[u + 1];
		uint32_t deg = (uint32_t)(end - b), bias = n_items + u;

		for (uint64_t p = b; p < end; p++)
			mark[g->col[p]] = u + 1;
		if (deg && deg >= n_items)
			st->users_without_negative++;
		for (uint64_t p = b; p < end; p++) {
			uint32_t item[2] = {g->col[p], 0};

			item[1] = negative(&r, mark, u + 1, n_items, deg);
			for (int s = 0; s < 2 && item[s] != UINT32_MAX; s++) {
				/* item < bias: the row is sorted */
				d->col[nz] = item[s];
				d->val[nz++] = 1.0;
				d->col[nz] = bias;
				d->val[nz++] = 1.0;
				d->y[e] = s ? -1 : 1;
				pt[e] = part[u];
				d->rowptr[++e] = nz;
				if (s)
					st->negatives++;
				else
					st->positives++;
			}
		}
	}
	for (uint32_t j = 0; j < n_items; j++) {
		ow[j] = owner[j];
		d->feat_id[j] = ds->feat_id[j];
	}
	for (uint32_t u = 0; u < n_users; u++) {
		ow[n_items + u] = part[u];
		d->feat_id[n_items + u] = u;
	}
	free(mark);
	d->n_rows = (uint32_t)e;
	d->n_parsed = (uint32_t)e;
	d->n_cols = (uint32_t)keys;
	d->nnz = nz;
	st->users = n_users;
	st->items = n_items;
	*part_out = pt;
	*owner_out = ow;
	return 0;
}
