/*
 * ps_ranges: which server owns which 64-bit key.
 *
 * The key space [0, 2^64) is cut into S contiguous ranges, one per server,
 * with no gap: server i owns [start[i], start[i+1]) and the last server owns
 * [start[S-1], 2^64).  start[0] == 0 and starts never decrease, so a range
 * may be empty (a server that owns nothing) except the last one.  Ranges come
 * either from a uniform split or from a placement: the caller renumbers keys
 * so that each V_i is contiguous and passes the sizes |V_i| (or the starts).
 *
 * Invariants: n >= 1, start[0] == 0, start[i] <= start[i+1].
 * Ownership: a ps_ranges owns its start array (ps_ranges_release frees it).
 * Thread-safety: read-only after init; share freely between threads.
 */
#ifndef PARSA_PS_RANGES_H
#define PARSA_PS_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

struct ps_ranges {
	uint32_t n;      /* number of servers */
	uint64_t *start; /* n starts; see invariants */
};

/* Uniform split: start[i] = floor(i * 2^64 / n).  0, EINVAL (n == 0), ENOMEM. */
int ps_ranges_init_uniform(struct ps_ranges *r, uint32_t n,
			   struct parsa_err *err);

/*
 * Explicit starts (copied).  EINVAL unless start[0] == 0 and non-decreasing
 * (message names the first bad index).
 */
int ps_ranges_init_starts(struct ps_ranges *r, const uint64_t *start,
			  uint32_t n, struct parsa_err *err);

/*
 * From a placement: server i owns the next size[i] keys, so V_0 = [0, size[0]),
 * V_1 = [size[0], size[0]+size[1]), ...; keys past the total belong to the
 * last server.  EINVAL if n == 0, ERANGE if the sizes add up past 2^64 - 1.
 */
int ps_ranges_init_sizes(struct ps_ranges *r, const uint64_t *size,
			 uint32_t n, struct parsa_err *err);

void ps_ranges_release(struct ps_ranges *r);

/* Server owning key (binary search; the last non-empty range wins ties). */
uint32_t ps_ranges_owner(const struct ps_ranges *r, uint64_t key);

/* First and last key (inclusive) of server i; *empty set if it owns none. */
void ps_ranges_bounds(const struct ps_ranges *r, uint32_t i, uint64_t *lo,
		      uint64_t *hi, int *empty);

/*
 * Number of leading keys of the sorted array keys[0..n) owned by servers
 * < i+1, i.e. the end of server i's slice.  Slices of a sorted key list are
 * contiguous: server i's slice is [end(i-1), end(i)).
 */
size_t ps_ranges_slice_end(const struct ps_ranges *r, uint32_t i,
			   const uint64_t *keys, size_t n);

#endif /* PARSA_PS_RANGES_H */
