/*
 * fuzz_placement: libFuzzer target for the placement reader
 * (part_placement_read: PREFIX.examples and PREFIX.features, as `parsa
 * eval`, `parsa train` and incremental runs read them).
 *
 * Input: byte 0 = n_rows (0..255), byte 1 = n_cols (0..255), byte 2 =
 * k_max (0 = none), byte 3 bit 0 = the dataset's feature ids are 0..n-1
 * (set) or spread over 64 bits (clear); then the examples file's bytes, a
 * NUL, the features file's bytes (bit 1 of byte 3: gzip neither; the
 * reader sniffs gzip by its magic itself).  Both are written to a private
 * temporary directory and read back.  Invariants: an error carries its code
 * and a message; a success gives every part and owner below k_out (and
 * below k_max when set), k_out >= 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part_placement.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int put(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	if (n && fwrite(p, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

static void cleanup(void)
{
	char p[96];

	snprintf(p, sizeof(p), "%s/p.examples", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/p.features", dir);
	unlink(p);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t n_rows, n_cols, k_max, k_out = 0;
	uint32_t part[256], owner[256];
	uint64_t ids[256];
	const uint8_t *nul;
	char ex[128], fe[128], prefix[96];
	struct parsa_err err;
	int rc;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/parsa-fuzz-placement-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	if (size < 4)
		return 0;
	n_rows = data[0];
	n_cols = data[1];
	k_max = data[2];
	for (uint32_t j = 0; j < n_cols; j++)
		ids[j] = data[3] & 1 ? j : (uint64_t)j * 0x9e3779b97f4a7c15ULL;
	data += 4;
	size -= 4;
	nul = memchr(data, 0, size);
	snprintf(prefix, sizeof(prefix), "%s/p", dir);
	snprintf(ex, sizeof(ex), "%s.examples", prefix);
	snprintf(fe, sizeof(fe), "%s.features", prefix);
	if (put(ex, data, nul ? (size_t)(nul - data) : size) ||
	    put(fe, nul ? nul + 1 : data, nul ? size - (size_t)(nul - data) - 1 : 0))
		abort();
	parsa_err_clear(&err);
	rc = part_placement_read(prefix, n_rows, ids, n_cols, k_max, part,
				 owner, &k_out, &err);
	if (rc) {
		if (err.code != rc || err.msg[0] == '\0')
			abort();
		return 0;
	}
	if (k_out < 1 || (k_max && k_out > k_max))
		abort();
	for (uint32_t i = 0; i < n_rows; i++)
		if (part[i] >= k_out)
			abort();
	for (uint32_t j = 0; j < n_cols; j++)
		if (owner[j] >= k_out)
			abort();
	return 0;
}
