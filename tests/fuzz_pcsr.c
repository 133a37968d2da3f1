/*
 * fuzz_pcsr: libFuzzer target for the binary dataset cache reader
 * (part_cache_read_mem, partitioner/part_cache.h).  Any input must be
 * either refused with a message or give a dataset that satisfies the CSR
 * invariants; the corpus (tests/corpus/pcsr/) holds small valid caches of
 * every format kind and broken ones (truncated, flipped, wrong version,
 * foreign byte order, text, rows past the nonzeros).  Each input is read
 * as it is and again with its checksums recomputed (part_cache_reseal), so
 * that mutations reach the checks past the checksums.  See fuzz_libsvm.c.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "part_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One read of data: refused with a message, or a sound dataset. */
static void read_one(const uint8_t *data, size_t size)
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
		return;
	}
	parsa_err_clear(&e);
	if (parsa_graph_validate(&ds.g, &e) != 0)
		abort();
	if (ds.g.n_cols && !ds.feat_id)
		abort();
	if (ds.format > PART_FMT_PAIRS || ds.graph > PART_GRAPH_EDGES)
		abort();
	for (uint32_t i = 0; i < ds.g.n_cols && ds.g.n_cols <= 4096; i++)
		for (uint32_t j = i + 1; j < ds.g.n_cols; j++)
			if (ds.feat_id[i] == ds.feat_id[j])
				abort(); /* a feature id twice */
	part_dataset_release(&ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *sealed;

	read_one(data, size);
	/* and with its checksums made right, which a hostile file has: a
	 * mutation would otherwise stop at them nearly always, never
	 * reaching the checks of the sections' contents */
	sealed = malloc(size ? size : 1);
	if (!sealed)
		return 0;
	memcpy(sealed, data, size);
	if (part_cache_reseal(sealed, size))
		read_one(sealed, size);
	free(sealed);
	return 0;
}
