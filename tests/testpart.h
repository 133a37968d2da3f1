/*
 * testpart.h: brute-force oracles and fixtures shared by the refinement
 * tests (test_fm.c, test_kfm.c); include after harness.h.
 */
#ifndef PARSA_TESTS_TESTPART_H
#define PARSA_TESTS_TESTPART_H

#include <stdlib.h>
#include <string.h>

#include "parsa_graph.h"
#include "parsa_metrics.h"
#include "parsa_nbrset.h"
#include "part_reader.h"

/* Brute force: M_j = |N(U_j)| from a boolean table (M: k entries); returns
 * the connectivity Σ_j M_j − |V_used|. */
static inline uint64_t tu_brute_conn(const struct parsa_graph *g,
				     const uint32_t *part, uint32_t k,
				     uint64_t *M)
{
	uint8_t *in = calloc((size_t)g->n_cols * k + 1, 1);
	uint64_t sum = 0, vused = 0;

	memset(M, 0, k * sizeof(uint64_t));
	for (uint32_t u = 0; u < g->n_rows; u++)
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
			in[(size_t)g->col[e] * k + part[u]] = 1;
	for (uint32_t v = 0; v < g->n_cols; v++) {
		int any = 0;

		for (uint32_t j = 0; j < k; j++) {
			M[j] += in[(size_t)v * k + j];
			sum += in[(size_t)v * k + j];
			any |= in[(size_t)v * k + j];
		}
		vused += any;
	}
	free(in);
	return sum - vused;
}

static inline uint64_t tu_max_of(const uint64_t *a, uint32_t k)
{
	uint64_t m = 0;

	for (uint32_t j = 0; j < k; j++)
		m = a[j] > m ? a[j] : m;
	return m;
}

/* The largest Σ weights of a part (w NULL: all 1). */
static inline uint64_t tu_max_size(const uint32_t *part, const uint32_t *w,
				   uint32_t n, uint32_t k)
{
	uint64_t *s = calloc(k, sizeof(uint64_t)), m;

	for (uint32_t u = 0; u < n; u++)
		s[part[u]] += w ? w[u] : 1;
	m = tu_max_of(s, k);
	free(s);
	return m;
}

/* The used sets must equal the brute-force sets of part. */
static inline void tu_check_used(const struct parsa_graph *g,
				 const uint32_t *part,
				 const struct parsa_nbrset *used)
{
	struct parsa_nbrset chk;

	REQUIRE(parsa_nbrset_init(&chk, g->n_cols, used->k, NULL) == 0);
	REQUIRE(parsa_used_sets(g, part, &chk, NULL) == 0);
	for (uint32_t j = 0; j < used->k; j++)
		CHECK_INT(used->size[j], ==, chk.size[j]);
	CHECK(memcmp(used->bits, chk.bits,
		     (size_t)g->n_cols * used->words * sizeof(uint64_t)) == 0);
	parsa_nbrset_release(&chk);
}

/* used = fresh N(U_i) of part (k parts); 0, or -1 with used released. */
static inline int tu_used_of(const struct parsa_graph *g, const uint32_t *part,
			     uint32_t k, struct parsa_nbrset *used)
{
	if (parsa_nbrset_init(used, g->n_cols, k, NULL))
		return -1;
	if (parsa_used_sets(g, part, used, NULL)) {
		parsa_nbrset_release(used);
		return -1;
	}
	return 0;
}

/* A dataset over g (ids = compact ids); g is moved into it. */
static inline void tu_as_dataset(struct part_dataset *ds,
				 struct parsa_graph *g)
{
	part_dataset_init(ds);
	ds->g = *g;
	ds->feat_id = malloc(((size_t)g->n_cols + 1) * sizeof(uint64_t));
	for (uint32_t v = 0; v < g->n_cols; v++)
		ds->feat_id[v] = v;
	parsa_graph_init(g);
}

#endif /* PARSA_TESTS_TESTPART_H */
