/*
 * ps_ranges: key-range ownership by binary search (see ps_ranges.h).
 */
#include "ps_ranges.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"

static int alloc_starts(struct ps_ranges *r, uint32_t n, struct parsa_err *err)
{
	memset(r, 0, sizeof(*r));
	if (n == 0)
		return parsa_fail(err, PARSA_EINVAL, "key ranges: 0 servers");
	r->start = calloc(n, sizeof(*r->start));
	if (!r->start)
		return parsa_fail(err, PARSA_ENOMEM, "key ranges: %u servers",
				  n);
	r->n = n;
	return 0;
}

int ps_ranges_init_uniform(struct ps_ranges *r, uint32_t n,
			   struct parsa_err *err)
{
	uint32_t i;
	int rc = alloc_starts(r, n, err);

	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		__extension__ unsigned __int128 x =
			((unsigned __int128)i << 64) / n;
		r->start[i] = (uint64_t)x;
	}
	return 0;
}

int ps_ranges_init_starts(struct ps_ranges *r, const uint64_t *start,
			  uint32_t n, struct parsa_err *err)
{
	uint32_t i;
	int rc;

	if (n && start[0] != 0)
		return parsa_fail(err, PARSA_EINVAL, "key ranges: first range "
				  "starts at %" PRIu64 ", not 0", start[0]);
	for (i = 1; i < n; i++)
		if (start[i] < start[i - 1])
			return parsa_fail(err, PARSA_EINVAL, "key ranges: "
					  "start[%u] = %" PRIu64 " < start[%u]"
					  " = %" PRIu64, i, start[i], i - 1,
					  start[i - 1]);
	rc = alloc_starts(r, n, err);
	if (!rc)
		memcpy(r->start, start, n * sizeof(*start));
	return rc;
}

int ps_ranges_init_sizes(struct ps_ranges *r, const uint64_t *size,
			 uint32_t n, struct parsa_err *err)
{
	uint64_t at = 0;
	uint32_t i;
	int rc = alloc_starts(r, n, err);

	for (i = 0; !rc && i < n; i++) {
		r->start[i] = at;
		if (size[i] > UINT64_MAX - at) {
			ps_ranges_release(r);
			return parsa_fail(err, PARSA_ERANGE, "key ranges: "
					  "sizes add up past 2^64-1 at server "
					  "%u", i);
		}
		at += size[i];
	}
	return rc;
}

void ps_ranges_release(struct ps_ranges *r)
{
	if (!r)
		return;
	free(r->start);
	memset(r, 0, sizeof(*r));
}

uint32_t ps_ranges_owner(const struct ps_ranges *r, uint64_t key)
{
	uint32_t lo = 0, hi = r->n; /* answer in [lo, hi): start[lo] <= key */

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->start[mid] <= key)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void ps_ranges_bounds(const struct ps_ranges *r, uint32_t i, uint64_t *lo,
		      uint64_t *hi, int *empty)
{
	uint64_t end = i + 1 < r->n ? r->start[i + 1] : 0; /* 0: 2^64 */

	*lo = r->start[i];
	*empty = i + 1 < r->n && end == *lo;
	*hi = *empty ? *lo : end - 1; /* end 0 wraps to UINT64_MAX */
}

size_t ps_ranges_slice_end(const struct ps_ranges *r, uint32_t i,
			   const uint64_t *keys, size_t n)
{
	uint64_t end;

	if (i + 1 >= r->n)
		return n;
	end = r->start[i + 1]; /* first key not owned by servers <= i */
	return base_lower_bound_u64(keys, n, end);
}
