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

/* Fisher-Yates shuffle of a[0..n). */
void parsa_rng_shuffle_u32(struct parsa_rng *r, uint32_t *a, uint64_t n);

#endif /* PARSA_RNG_H */
