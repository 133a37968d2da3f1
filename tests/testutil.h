/*
 * testutil.h: small helpers shared by the C tests (include after
 * harness.h).
 */
#ifndef PARSA_TESTS_TESTUTIL_H
#define PARSA_TESTS_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_graph.h"
#include "parsa_rng.h"

/* Write data[0..n) to path; a test that cannot exits with status 2. */
static inline void tu_write_file(const char *path, const void *data,
				 size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || (n && fwrite(data, 1, n, f) != n)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	fclose(f);
}

/* Entries left in dir besides . and .., or -1 if it cannot be read. */
static inline int tu_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

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

/*
 * Heavy-tailed random rows over cols features: degree uniform in
 * 0..maxdeg, and one row in ten uniform in 0..tail-1 instead (tail <= 512);
 * n_cols is at least cols.
 */
static inline void tu_heavy_graph(struct parsa_graph *g, struct parsa_rng *r,
				  uint32_t rows, uint32_t cols,
				  uint32_t maxdeg, uint32_t tail)
{
	uint32_t buf[512];

	parsa_graph_init(g);
	for (uint32_t u = 0; u < rows; u++) {
		uint32_t d = (uint32_t)parsa_rng_below(r, maxdeg + 1);

		if (parsa_rng_below(r, 10) == 0)
			d = (uint32_t)parsa_rng_below(r, tail);
		for (uint32_t i = 0; i < d; i++)
			buf[i] = (uint32_t)parsa_rng_below(r, cols);
		CHECK_INT(parsa_graph_add_row(g, buf, d, NULL), ==, 0);
	}
	if (g->n_cols < cols)
		g->n_cols = cols;
}

#endif /* PARSA_TESTS_TESTUTIL_H */
