/*
 * testutil.h: small helpers shared by the C tests (include after
 * harness.h).
 */
#ifndef PARSA_TESTS_TESTUTIL_H
#define PARSA_TESTS_TESTUTIL_H

#include <stdlib.h>

#include "parsa_graph.h"
#include "parsa_rng.h"

/* A random graph: n rows over d features, each (row, feature) present with
 * probability p; n_cols is d even when the last features go unused. */
static inline void tu_random_graph(struct parsa_graph *g,
				   struct parsa_rng *rng, uint32_t n,
				   uint32_t d, double p)
{
	uint32_t *cols = malloc(((size_t)d + 1) * sizeof(*cols));

	parsa_graph_init(g);
	for (uint32_t r = 0; r < n; r++) {
		size_t m = 0;

		for (uint32_t v = 0; v < d; v++)
			if (parsa_rng_double(rng) < p)
				cols[m++] = v;
		CHECK_INT(parsa_graph_add_row(g, cols, m, NULL), ==, 0);
	}
	g->n_cols = d;
	free(cols);
}

#endif /* PARSA_TESTS_TESTUTIL_H */
