/*
 * parsa_nbrset: the neighbor sets S_1..S_k as one k-bit mask per feature.
 *
 * Bit i of feature v's mask is set iff v ∈ S_i.  The per-feature layout is
 * what the parameter server stores (key = feature, value = k-bit mask) and
 * lets Algorithm 13 read all k memberships of a feature in one cache line
 * for k ≤ 512.  Any k ≥ 1 is supported (not limited to 64).
 *
 * Invariants: size[i] == number of features with bit i set; bits beyond k in
 * the last word of a mask are always zero.
 * Ownership: owns bits and size; parsa_nbrset_release frees them.
 */
#ifndef PARSA_NBRSET_H
#define PARSA_NBRSET_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"

struct parsa_nbrset {
	uint32_t n_feat; /* features (compact ids 0..n_feat-1) */
	uint32_t k;      /* partitions */
	uint32_t words;  /* 64-bit words per mask: ceil(k / 64) */
	uint64_t *bits;  /* n_feat * words mask words, feature-major */
	uint64_t *size;  /* k counters: |S_i| */
};

/* All sets empty.  0 or PARSA_ENOMEM / PARSA_EINVAL (k == 0). */
int parsa_nbrset_init(struct parsa_nbrset *s, uint32_t n_feat, uint32_t k,
		      struct parsa_err *err);

/* Free and zero.  s may be NULL. */
void parsa_nbrset_release(struct parsa_nbrset *s);

/* Empty every set (keeps the allocation). */
void parsa_nbrset_clear(struct parsa_nbrset *s);

/* Copy src into dst (same n_feat and k; dst initialised). */
void parsa_nbrset_copy(struct parsa_nbrset *dst, const struct parsa_nbrset *src);

/* Set bits of x.  Portable x86-64 builds have no popcnt instruction and
 * libgcc's fallback is a table walk, so use the SWAR sum unless the target
 * has one. */
static inline uint32_t parsa_popcount64(uint64_t x)
{
#if defined(__POPCNT__)
	return (uint32_t)__builtin_popcountll(x);
#else
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (uint32_t)((x * 0x0101010101010101ULL) >> 56);
#endif
}

static inline const uint64_t *parsa_nbrset_mask(const struct parsa_nbrset *s,
						uint32_t v)
{
	return s->bits + (uint64_t)v * s->words;
}

static inline int parsa_nbrset_has(const struct parsa_nbrset *s, uint32_t v,
				   uint32_t i)
{
	return (int)((s->bits[(uint64_t)v * s->words + (i >> 6)] >> (i & 63)) & 1);
}

/* Add v to S_i; returns 1 if it was new, 0 if already there. */
static inline int parsa_nbrset_add(struct parsa_nbrset *s, uint32_t v,
				   uint32_t i)
{
	uint64_t *w = &s->bits[(uint64_t)v * s->words + (i >> 6)];
	uint64_t b = 1ULL << (i & 63);

	if (*w & b)
		return 0;
	*w |= b;
	s->size[i]++;
	return 1;
}

/*
 * parsa_nbrset_add for threads that add bits of distinct partitions to
 * one set at once: the word is or-ed atomically.  Partition i (its bits
 * and size[i]) must be added to by one thread at a time, each handing it
 * on with a release and acquire, and no thread may read the masks
 * otherwise meanwhile.
 */
static inline int parsa_nbrset_add_shared(struct parsa_nbrset *s, uint32_t v,
					  uint32_t i)
{
	uint64_t *w = &s->bits[(uint64_t)v * s->words + (i >> 6)];
	uint64_t b = 1ULL << (i & 63);

	if (__atomic_load_n(w, __ATOMIC_RELAXED) & b)
		return 0;
	__atomic_fetch_or(w, b, __ATOMIC_RELAXED);
	s->size[i]++;
	return 1;
}

/* Number of sets containing v (popcount of its mask). */
uint32_t parsa_nbrset_count(const struct parsa_nbrset *s, uint32_t v);

/*
 * OR a mask (words words) into feature v's mask, keeping size[] right.
 * Returns how many bits were new.
 */
uint32_t parsa_nbrset_or_mask(struct parsa_nbrset *s, uint32_t v,
			      const uint64_t *mask);

/* Recount size[] from bits (after bulk writes to bits). */
void parsa_nbrset_recount(struct parsa_nbrset *s);

/* size[j] += the features of [lo, hi) whose mask holds j (size: k
 * entries; s unchanged): ranges of features counted on their own threads
 * and summed give parsa_nbrset_recount's size[]. */
void parsa_nbrset_count_range(const struct parsa_nbrset *s, uint32_t lo,
			      uint32_t hi, uint64_t *size);

/*
 * Replace feature v's mask by mask (words words; bits beyond k ignored),
 * keeping size[] right.  O(words + changed bits).
 */
void parsa_nbrset_set_mask(struct parsa_nbrset *s, uint32_t v,
			   const uint64_t *mask);

/*
 * Pull a block's slice: slice mask l = src mask feat[l] for l <
 * slice->n_feat (slice initialised with that n_feat and src->k); slice
 * size[] is recounted (it counts the slice's bits only).
 */
void parsa_nbrset_gather(struct parsa_nbrset *slice,
			 const struct parsa_nbrset *src, const uint32_t *feat);

/*
 * Push a slice back: OR slice mask l into dst mask feat[l].  Returns how
 * many bits were new in dst (dst size[] kept right).
 */
uint64_t parsa_nbrset_scatter_or(struct parsa_nbrset *dst,
				 const struct parsa_nbrset *slice,
				 const uint32_t *feat);

/*
 * parsa_nbrset_scatter_or for the slice features whose id feat[l] is in
 * [lo, hi) only (feat increasing, as a block's features are), with the
 * new bits counted into size_add[0..k) instead of dst->size: calls on
 * disjoint ranges may run at once (each writes only its own features'
 * words and its own size_add), and adding every call's size_add to
 * dst->size gives parsa_nbrset_scatter_or's result.  Returns the bits
 * that were new.
 */
uint64_t parsa_nbrset_scatter_or_range(struct parsa_nbrset *dst,
				       const struct parsa_nbrset *slice,
				       const uint32_t *feat, uint32_t lo,
				       uint32_t hi, uint64_t *size_add);

/*
 * The used sets N(U_i) of a placement 64 parts at a time, for large k
 * (the metrics and the users' lists above k=64): the examples ordered by
 * part / 64 (stable, so in row order within a group), then for group q one
 * 64-bit mask per feature, bit i - 64q set iff part i uses it.  8 bytes a
 * feature and 4 an example instead of k/8 a feature; the rows are walked
 * once over all the groups, each group's masks scanned once.
 */
struct parsa_sets64 {
	uint32_t k, groups;  /* groups = ceil(k / 64) */
	uint32_t n_feat;
	uint32_t *order;     /* n_rows examples, by part / 64 */
	uint64_t *start;     /* groups + 1 offsets into order */
	uint64_t *mask;      /* n_feat: the current group's masks */
};

/*
 * Order g's examples for part (g->n_rows entries).  0, PARSA_EINVAL (a
 * part id >= k, a column >= g->n_cols; messages as parsa_used_sets') or
 * PARSA_ENOMEM (s released).
 */
int parsa_sets64_init(struct parsa_sets64 *s, const struct parsa_graph *g,
		      uint32_t k, const uint32_t *part, struct parsa_err *err);
/* s->mask = the sets of parts 64q .. 64q + 63 (q < s->groups). */
void parsa_sets64_group(struct parsa_sets64 *s, const struct parsa_graph *g,
			const uint32_t *part, uint32_t q);
/*
 * The same for the features [lo, hi) only: s->mask[lo .. hi) is set, the
 * rest untouched.  Calls on disjoint ranges of the same group may run at
 * once on threads (each reads the group's rows, writes only its range).
 */
void parsa_sets64_group_range(struct parsa_sets64 *s,
			      const struct parsa_graph *g,
			      const uint32_t *part, uint32_t q, uint32_t lo,
			      uint32_t hi);
void parsa_sets64_release(struct parsa_sets64 *s); /* zeroed: no-op */

#endif /* PARSA_NBRSET_H */
