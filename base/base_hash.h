/*
 * base_hash: the project's one 64-bit hash mixer.
 *
 * base_mix64 is splitmix64's finalizer (Steele, Lea & Flood): a bijection
 * of 64-bit words in which every input bit affects every output bit.  It
 * serves the hash tables (slot = base_mix64(key) & mask), the seeding of
 * parsa_rng and every "random but reproducible" function of a key and a
 * seed.  Inline: it sits in the readers' and the stores' inner loops.
 */
#ifndef BASE_HASH_H
#define BASE_HASH_H

#include <stdint.h>

/* 2^64 / golden ratio: splitmix64's increment, an odd constant with no
 * pattern, also used to derive one seed from another. */
#define BASE_GOLDEN64 0x9e3779b97f4a7c15ULL

/* splitmix64's finalizer. */
static inline uint64_t base_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* One step of splitmix64: advance *state and return the next word. */
static inline uint64_t base_splitmix64(uint64_t *state)
{
	return base_mix64(*state += BASE_GOLDEN64);
}

#endif /* BASE_HASH_H */
