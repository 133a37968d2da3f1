/*
 * parsa_rng: xoshiro256** (Blackman & Vigna), seeded with splitmix64
 * (base_hash.h).
 */
#include "parsa_rng.h"

#include "base_hash.h"
#include "base_prefetch.h"

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void parsa_rng_seed(struct parsa_rng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = base_splitmix64(&x);
}

uint64_t parsa_rng_next(struct parsa_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t parsa_rng_below(struct parsa_rng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)parsa_rng_next(r) * n;
	uint64_t lo = (uint64_t)m;

	if (lo < n) {
		uint64_t t = (0 - n) % n;

		while (lo < t) {
			m = (unsigned __int128)parsa_rng_next(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double parsa_rng_double(struct parsa_rng *r)
{
	return (double)(parsa_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Draws made this far ahead of their swaps, their targets fetched: the
 * swaps of a large array wait on memory otherwise (one random line each). */
#define SHUFFLE_AHEAD 16

void parsa_rng_shuffle_u32(struct parsa_rng *r, uint32_t *a, uint64_t n)
{
	/* the draws for i = n, n - 1, ..., 2 in that order, as the plain
	 * loop makes them (the same draws, the same swaps), ring[i % AHEAD]
	 * holding i's; d is the next i to draw for */
	uint64_t ring[SHUFFLE_AHEAD], d = n;

	for (; d > 1 && n - d < SHUFFLE_AHEAD; d--) {
		ring[d % SHUFFLE_AHEAD] = parsa_rng_below(r, d);
		base_prefetch_w(&a[ring[d % SHUFFLE_AHEAD]]);
	}
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = ring[i % SHUFFLE_AHEAD];
		uint32_t t = a[i - 1];

		if (d > 1) {  /* (d == i - AHEAD: the slot just read) */
			ring[d % SHUFFLE_AHEAD] = parsa_rng_below(r, d);
			base_prefetch_w(&a[ring[d % SHUFFLE_AHEAD]]);
			d--;
		}
		a[i - 1] = a[j];
		a[j] = t;
	}
}
