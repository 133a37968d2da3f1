/*
 * fuzz_pairs: libFuzzer target for the user-item pairs (TSV/CSV) reader.
 * See fuzz_libsvm.c.
 */
#include <stdint.h>
#include <stddef.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size, PART_FMT_PAIRS, PART_GRAPH_ADJACENCY);
	return 0;
}
