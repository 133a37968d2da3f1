/*
 * fuzz_libsvm: libFuzzer target for the LIBSVM reader (and AUTO detection).
 * The bytes are read through part_lines_open_mem + part_read_lines; every
 * result (dataset or error) is released.  Build with
 * clang -fsanitize=fuzzer,address,undefined, or with tests/fuzz_main.c.
 */
#include <stdint.h>
#include <stddef.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY);
	fuzz_read(data, size, PART_FMT_AUTO, PART_GRAPH_ADJACENCY);
	return 0;
}
