/*
 * parsa_rng: a small deterministic PRNG (xoshiro256** seeded by splitmix64).
 *
 * Every random choice in the project draws from a struct parsa_rng seeded
 * from the user's --seed, so runs are reproducible on every platform.
 * The state is a plain value: copy it to fork a stream, no globals.
 */
#ifndef PARSA_RNG_H
#define PARSA_RNG_H

#include <stdint.h>

struct parsa_rng {
	uint64_t s[4];
};

/* Seed the generator; any seed (including 0) is valid. */
void parsa_rng_seed(struct parsa_rng *r, uint64_t seed);

/* Next 64 uniformly random bits. */
uint64_t parsa_rng_next(struct parsa_rng *r);

/* Uniform integer in [0, n); n must be > 0.  Unbiased (Lemire). */
uint64_t parsa_rng_below(struct parsa_rng *r, uint64_t n);

/* Uniform double in [0, 1). */
double parsa_rng_double(struct parsa_rng *r);

/* Fisher-Yates shuffle of a[0..n); the _u8 one makes the same draws and
 * swaps (the same permutation of its entries for the same r). */
void parsa_rng_shuffle_u32(struct parsa_rng *r, uint32_t *a, uint64_t n);
void parsa_rng_shuffle_u8(struct parsa_rng *r, uint8_t *a, uint64_t n);

/*
 * The Fisher-Yates shuffle of n entries of any layout: for i = n, ...,
 * 2, j = parsa_rng_below(r, i), then swap(arg, i - 1, j): the plain
 * loop's draws, swaps and final state.  Each draw is made
 * PARSA_RNG_SHUFFLE_AHEAD swaps before its swap and passed to
 * fetch(arg, j) first, so that the swaps of a large array need not wait
 * on memory (one random line each).  Inline, for the compiler to inline
 * swap and fetch at each call site.
 */
#define PARSA_RNG_SHUFFLE_AHEAD 16

static inline void parsa_rng_shuffle_by(struct parsa_rng *r, uint64_t n,
					void (*swap)(void *, uint64_t,
						     uint64_t),
					void (*fetch)(void *, uint64_t),
					void *arg)
{
	/* ring[i % AHEAD] holds i's draw; d is the next i to draw for */
	uint64_t ring[PARSA_RNG_SHUFFLE_AHEAD], d = n;

	for (; d > 1 && n - d < PARSA_RNG_SHUFFLE_AHEAD; d--) {
		ring[d % PARSA_RNG_SHUFFLE_AHEAD] = parsa_rng_below(r, d);
		fetch(arg, ring[d % PARSA_RNG_SHUFFLE_AHEAD]);
	}
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = ring[i % PARSA_RNG_SHUFFLE_AHEAD];

		if (d > 1) {  /* (d == i - AHEAD: the slot just read) */
			ring[d % PARSA_RNG_SHUFFLE_AHEAD] =
				parsa_rng_below(r, d);
			fetch(arg, ring[d % PARSA_RNG_SHUFFLE_AHEAD]);
			d--;
		}
		swap(arg, i - 1, j);
	}
}

/*
 * A random permutation of [0, n) that takes no memory: parsa_perm_at(p,
 * i) for i < n gives the i-th entry.  It is a bijection of the m-bit
 * integers (2^(m-1) < n <= 2^m), four rounds of x ^= key, x *= odd (mod
 * 2^m), x ^= x >> ceil(m/2) with keys and odd multipliers drawn from r,
 * restricted to [0, n) by cycle walking (applied again while the value is
 * n or more: fewer than two applications on average).  Not a uniform
 * draw among the n! orders, nor cryptographic: a visiting order that no
 * simple structure of the data lines up with, where a stored shuffled
 * array would cost 3 or 4 bytes an entry and a serial pass.
 * parsa_perm_init draws 8 values from r; n must be at least 1 (and at
 * most 2^63).
 */
struct parsa_perm {
	uint64_t n, mask, key[4], mul[4];
	unsigned sh;
};

void parsa_perm_init(struct parsa_perm *p, struct parsa_rng *r, uint64_t n);

static inline uint64_t parsa_perm_at(const struct parsa_perm *p, uint64_t i)
{
	uint64_t x = i;

	do {
		for (int k = 0; k < 4; k++) {
			x = ((x ^ p->key[k]) * p->mul[k]) & p->mask;
			x ^= x >> p->sh;
		}
	} while (x >= p->n);
	return x;
}

#endif /* PARSA_RNG_H */
