/*
 * fuzz_pcsr: libFuzzer target for the binary dataset cache reader
 * (part_cache_read_mem, partitioner/part_cache.h).  Any input must be
 * either refused with a message or give a dataset that satisfies the CSR
 * invariants; the corpus (tests/corpus/pcsr/) holds small valid caches of
 * every format kind and broken ones (truncated, flipped, wrong version,
 * foreign byte order, text).  See fuzz_libsvm.c.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "part_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct part_dataset ds;
	struct parsa_err err, e;
	int rc;

	part_dataset_init(&ds);
	parsa_err_clear(&err);
	rc = part_cache_read_mem("fuzz", data, size, NULL, &ds, &err);
	if (rc) {
		if (err.code != rc || err.msg[0] == '\0')
			abort();
		return 0;
	}
	parsa_err_clear(&e);
	if (parsa_graph_validate(&ds.g, &e) != 0)
		abort();
	if (ds.g.n_cols && !ds.feat_id)
		abort();
	if (ds.format > PART_FMT_PAIRS || ds.graph > PART_GRAPH_EDGES)
		abort();
	part_dataset_release(&ds);
	return 0;
}
