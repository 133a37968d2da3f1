/*
 * test_base_cmp: the integer sorts and the lower bound of base_cmp.h
 * against qsort and a linear scan, on random arrays of every small size
 * and on the shapes that break a plain quicksort (sorted, reversed, all
 * equal, few distinct values, organ pipe).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"
#include "harness.h"
#include "parsa_rng.h"

enum shape { S_RANDOM, S_SORTED, S_REVERSED, S_EQUAL, S_FEW, S_PIPE, S_N };

static uint64_t value(enum shape s, size_t i, size_t n, struct parsa_rng *r)
{
	switch (s) {
	case S_SORTED:
		return i;
	case S_REVERSED:
		return n - i;
	case S_EQUAL:
		return 42;
	case S_FEW:
		return parsa_rng_below(r, 3);
	case S_PIPE:
		return i < n / 2 ? i : n - i;
	default:
		return parsa_rng_next(r);
	}
}

static void test_sorts_against_qsort(void)
{
	struct parsa_rng r;
	size_t bad = 0;

	parsa_rng_seed(&r, 5);
	for (size_t n = 0; n < 3000; n += 1 + n / 8) {
		uint64_t *a = malloc((n + 1) * sizeof(*a));
		uint64_t *b = malloc((n + 1) * sizeof(*b));
		uint32_t *c = malloc((n + 1) * sizeof(*c));
		uint32_t *d = malloc((n + 1) * sizeof(*d));

		REQUIRE(a && b && c && d);
		for (int s = 0; s < S_N; s++) {
			for (size_t i = 0; i < n; i++) {
				a[i] = b[i] = value((enum shape)s, i, n, &r);
				c[i] = d[i] = (uint32_t)a[i];
			}
			base_sort_u64(a, n);
			qsort(b, n, sizeof(*b), base_cmp_u64);
			base_sort_u32(c, n);
			qsort(d, n, sizeof(*d), base_cmp_u32);
			bad += n && (memcmp(a, b, n * sizeof(*a)) != 0 ||
				     memcmp(c, d, n * sizeof(*c)) != 0);
		}
		free(a);
		free(b);
		free(c);
		free(d);
	}
	CHECK_INT(bad, ==, 0);
}

static void test_lower_bound(void)
{
	struct parsa_rng r;
	uint64_t a[200];
	size_t bad = 0;

	parsa_rng_seed(&r, 9);
	for (size_t n = 0; n <= 200; n += 7) {
		for (size_t i = 0; i < n; i++)
			a[i] = parsa_rng_below(&r, 50);
		base_sort_u64(a, n);
		for (uint64_t x = 0; x <= 51; x++) {
			size_t want = 0;

			while (want < n && a[want] < x)
				want++;
			bad += base_lower_bound_u64(a, n, x) != want;
		}
	}
	CHECK_INT(bad, ==, 0);
	CHECK_INT(base_lower_bound_u64(NULL, 0, 7), ==, 0);
}

int main(void)
{
	RUN(test_sorts_against_qsort);
	RUN(test_lower_bound);
	return harness_done();
}
