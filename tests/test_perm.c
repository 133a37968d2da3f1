/*
 * test_perm: parsa_perm (parsa_rng.h), the permutation without memory:
 * a bijection of [0, n) for every small n and for large random ones, the
 * same for a seed and different for another, and no order a visiting
 * order must not have (few fixed points, ascents about half, entries
 * about n/3 from their index, the first entries spread over the range).
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "parsa_rng.h"

/* Is p a bijection of [0, n)?  (seen: n bytes of scratch) */
static int bijective(const struct parsa_perm *p, uint64_t n, uint8_t *seen)
{
	memset(seen, 0, n);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = parsa_perm_at(p, i);

		if (x >= n || seen[x])
			return 0;
		seen[x] = 1;
	}
	return 1;
}

static void test_bijection(void)
{
	uint8_t *seen = malloc(1 << 20);
	struct parsa_rng r;

	REQUIRE(seen != NULL);
	parsa_rng_seed(&r, 7);
	for (uint64_t n = 1; n <= 600; n++)
		for (int s = 0; s < 3; s++) {
			struct parsa_perm p;

			parsa_perm_init(&p, &r, n);
			CHECK(bijective(&p, n, seen));
		}
	for (int t = 0; t < 20; t++) {
		uint64_t n = 1 + parsa_rng_below(&r, 1 << 20);
		struct parsa_perm p;

		parsa_perm_init(&p, &r, n);
		CHECK(bijective(&p, n, seen));
	}
	/* powers of two and their neighbours (m exact, or one more bit) */
	for (unsigned m = 1; m <= 20; m++)
		for (int d = -1; d <= 1; d++) {
			uint64_t n = ((uint64_t)1 << m) + (uint64_t)(int64_t)d;
			struct parsa_perm p;

			if (n == 0 || n > (1 << 20))
				continue;
			parsa_perm_init(&p, &r, n);
			CHECK(bijective(&p, n, seen));
		}
	free(seen);
}

static void test_seeds(void)
{
	struct parsa_rng a, b, c;
	struct parsa_perm pa, pb, pc;
	uint64_t same_ab = 1, diff_ac = 0, n = 100000;

	parsa_rng_seed(&a, 11);
	parsa_rng_seed(&b, 11);
	parsa_rng_seed(&c, 12);
	parsa_perm_init(&pa, &a, n);
	parsa_perm_init(&pb, &b, n);
	parsa_perm_init(&pc, &c, n);
	for (uint64_t i = 0; i < n; i++) {
		same_ab &= parsa_perm_at(&pa, i) == parsa_perm_at(&pb, i);
		diff_ac += parsa_perm_at(&pa, i) != parsa_perm_at(&pc, i);
	}
	CHECK(same_ab);
	CHECK_INT(diff_ac, >, n * 99 / 100);
	/* init draws 8 values: both streams moved alike */
	CHECK(parsa_rng_next(&a) == parsa_rng_next(&b));
}

static void test_no_visible_order(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 3);
	for (int t = 0; t < 8; t++) {
		uint64_t n = 50000 + parsa_rng_below(&r, 200000);
		uint64_t fixed = 0, up = 0, lowq = 0;
		double dist = 0;
		struct parsa_perm p;

		parsa_perm_init(&p, &r, n);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t x = parsa_perm_at(&p, i);

			fixed += x == i;
			if (i + 1 < n)
				up += parsa_perm_at(&p, i + 1) > x;
			dist += x > i ? (double)(x - i) : (double)(i - x);
			/* the first 1000 entries: a quarter in the lowest
			 * quarter of the range */
			lowq += i < 1000 && x < n / 4;
		}
		CHECK_INT(fixed, <, 20);
		CHECK_INT(up, >, n * 48 / 100);
		CHECK_INT(up, <, n * 52 / 100);
		/* E|x - i| = n/3 for a uniform permutation */
		CHECK(dist / (double)n > 0.31 * (double)n &&
		      dist / (double)n < 0.35 * (double)n);
		CHECK_INT(lowq, >, 200);
		CHECK_INT(lowq, <, 300);
	}
}

int main(void)
{
	RUN(test_bijection);
	RUN(test_seeds);
	RUN(test_no_visible_order);
	return harness_done();
}
