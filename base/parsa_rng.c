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

/* parsa_rng_shuffle_<name> over an array of T: parsa_rng_shuffle_by with
 * that element's swap and fetch (inlined at the call). */
#define PARSA_RNG_SHUFFLE_OF(T, name)                                       \
	static void swap_##name(void *arg, uint64_t i, uint64_t j)          \
	{                                                                   \
		T *a = arg, t = a[i];                                       \
									    \
		a[i] = a[j];                                                \
		a[j] = t;                                                   \
	}                                                                   \
									    \
	static void fetch_##name(void *arg, uint64_t j)                     \
	{                                                                   \
		base_prefetch_w((T *)arg + j);                              \
	}                                                                   \
									    \
	void parsa_rng_shuffle_##name(struct parsa_rng *r, T *a, uint64_t n) \
	{                                                                   \
		parsa_rng_shuffle_by(r, n, swap_##name, fetch_##name, a);   \
	}

PARSA_RNG_SHUFFLE_OF(uint32_t, u32)
PARSA_RNG_SHUFFLE_OF(uint8_t, u8)

void parsa_perm_init(struct parsa_perm *p, struct parsa_rng *r, uint64_t n)
{
	unsigned m = 1;

	while (m < 63 && ((uint64_t)1 << m) < n)
		m++;
	p->n = n;
	p->mask = ((uint64_t)1 << m) - 1;
	p->sh = (m + 1) / 2;
	for (int k = 0; k < 4; k++) {
		p->key[k] = parsa_rng_next(r) & p->mask;
		p->mul[k] = parsa_rng_next(r) | 1;
	}
}
