/*
 * fuzz_common.h: the shared body of the reader fuzz targets (header-only,
 * so each target stays one .c file for both gcc+fuzz_main and libFuzzer).
 *
 * fuzz_read() reads data[0..size) with the given format and mode, checks
 * that a successful result satisfies the CSR invariants and the dataset's
 * own bookkeeping (any violation aborts, which the fuzzer reports), and
 * releases everything.
 */
#ifndef PARSA_TESTS_FUZZ_COMMON_H
#define PARSA_TESTS_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "part_io.h"
#include "part_reader.h"

static void fuzz_check(const struct part_dataset *ds, int rc,
		       const struct parsa_err *err)
{
	struct parsa_err e;

	if (rc) {
		/* an error always comes with a message */
		if (err->code != rc || err->msg[0] == '\0')
			abort();
		return;
	}
	parsa_err_clear(&e);
	if (parsa_graph_validate(&ds->g, &e) != 0)
		abort();
	if (ds->g.n_cols && !ds->feat_id)
		abort();
	if (ds->entries < parsa_graph_nnz(&ds->g))
		abort();
	for (uint32_t c = 0; c + 1 < ds->g.n_cols && c < 64; c++)
		for (uint32_t d = c + 1; d < ds->g.n_cols && d < 64; d++)
			if (ds->feat_id[c] == ds->feat_id[d])
				abort();
}

static inline void fuzz_read(const uint8_t *data, size_t size,
			     enum part_format fmt, enum part_graph_mode mode)
{
	struct part_read_opts o;
	struct part_dataset ds;
	struct part_lines *l;
	struct parsa_err err;
	int rc;

	memset(&o, 0, sizeof(o));
	o.format = fmt;
	o.graph = mode;
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	if (part_lines_open_mem(&l, "fuzz", (const char *)data, size, &err))
		return;
	rc = part_read_lines(l, &o, &ds, &err);
	fuzz_check(&ds, rc, &err);
	part_dataset_release(&ds);
	part_lines_close(l);
}

#endif /* PARSA_TESTS_FUZZ_COMMON_H */
