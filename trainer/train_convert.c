/*
 * train_convert: `parsa convert` with labels and values (train_convert.h).
 */
#include "train_convert.h"

#include <stdlib.h>
#include <string.h>

#include "part_convert.h"
#include "train_data.h"

/* The trainer's rows must be the partitioner's: same examples, same
 * features in the same compact order, same entries per row. */
static int same_rows(const char *data, const struct train_data *d,
		     const struct part_dataset *ds, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;

	if (d->n_rows != g->n_rows || d->n_cols != g->n_cols ||
	    d->nnz != parsa_graph_nnz(g) ||
	    memcmp(d->rowptr, g->row_ptr,
		   ((size_t)g->n_rows + 1) * sizeof(uint64_t)) != 0 ||
	    (g->n_cols && memcmp(d->feat_id, ds->feat_id,
				 (size_t)g->n_cols * sizeof(uint64_t)) != 0))
		return parsa_fail(err, PARSA_EINVAL,
				  "%s: the trainer reads other rows than the partitioner (%u x %u, %llu entries against %u x %u, %llu)",
				  data, d->n_rows, d->n_cols,
				  (unsigned long long)d->nnz, g->n_rows,
				  g->n_cols,
				  (unsigned long long)parsa_graph_nnz(g));
	return 0;
}

static int values(const char *data, const struct part_dataset *ds,
		  struct part_cache_values *vals, void **priv,
		  struct parsa_err *err)
{
	struct train_data *d = malloc(sizeof(*d));
	int rc;

	*priv = NULL;
	if (!d)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	rc = train_data_read(data, NULL, d, err);
	if (!rc)
		rc = same_rows(data, d, ds, err);
	if (rc) {
		train_data_release(d);
		free(d);
		return rc;
	}
	vals->y = d->y;
	vals->col = d->col;
	vals->val = d->val;
	*priv = d;
	return 0;
}

static void release(void *priv)
{
	train_data_release(priv);
	free(priv);
}

int train_cmd_convert(int argc, char **argv)
{
	static const struct part_convert_ext ext = {values, release};

	return part_convert_main(argc, argv, &ext);
}
