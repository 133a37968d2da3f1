/*
 * fuzz_snap: libFuzzer target for the SNAP edge-list reader, in adjacency
 * and edges mode.  See fuzz_libsvm.c.
 */
#include <stdint.h>
#include <stddef.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size, PART_FMT_SNAP, PART_GRAPH_ADJACENCY);
	fuzz_read(data, size, PART_FMT_SNAP, PART_GRAPH_EDGES);
	return 0;
}
