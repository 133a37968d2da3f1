/*
 * part_hash: map 64-bit ids to compact 32-bit ids, in order of first
 * insertion (the readers' "order of first appearance").
 *
 * Small keys (the common case: LIBSVM indices, SNAP vertex ids, MovieLens
 * ids are mostly dense small integers) go to a direct-mapped array: keys
 * below dense_cap are looked up as dense[key] (compact id + 1, 0 = absent).
 * dense_cap grows (powers of two) to cover a new key while that keeps it
 * at most max(64Ki, 4 x (keys + 1)) entries, i.e. at most about 16 bytes a
 * key.  Other keys go to open addressing with linear probing over a
 * power-of-two table of 32-bit slots (load at most 1/2); each slot holds a
 * compact id, whose key is kept in the ids array, which is also the map
 * back (compact id -> 64-bit id).  Invariant: every key >= dense_cap is in
 * the hash table; every key < dense_cap is in dense (keys hashed before the
 * dense range grew over them stay in the table, harmlessly).
 * Memory: 8 bytes per key in ids plus 8-16 bytes of slots or dense.
 *
 * Compact ids run 0..n-1 with n <= PART_IDMAP_MAX.  Not thread-safe.
 */
#ifndef PART_HASH_H
#define PART_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "base_hash.h"
#include "base_prefetch.h"
#include "parsa_err.h"

#define PART_IDMAP_MAX (UINT32_MAX - 1u)

struct part_idmap {
	uint32_t *slot;    /* cap slots; UINT32_MAX = empty */
	uint64_t *ids;     /* ids[c] = the key of compact id c */
	uint32_t n;        /* keys stored */
	uint64_t cap;      /* slots (0 or a power of two) */
	uint64_t ids_cap;  /* allocated entries of ids */
	uint32_t *dense;   /* dense_cap entries: compact id + 1, 0 = absent */
	uint64_t dense_cap;
	uint32_t n_hashed; /* keys inserted into the table */
};

/* An empty map (no allocation). */
void part_idmap_init(struct part_idmap *m);

/* Free everything and reset to empty.  m may be NULL. */
void part_idmap_release(struct part_idmap *m);

/* Forget every key, keeping the allocations (O(keys + table slots)): a
 * map reused for one block after another. */
void part_idmap_clear(struct part_idmap *m);

/*
 * The compact id of key in *id, inserting key as id n when new (then *isnew
 * is 1, else 0; isnew may be NULL).  Returns 0, PARSA_ENOMEM, or
 * PARSA_ERANGE when more than PART_IDMAP_MAX keys would be stored; what
 * says what is being counted ("features", "vertices"...) for the message.
 */
int part_idmap_get(struct part_idmap *m, uint64_t key, uint32_t *id,
		   int *isnew, const char *what, struct parsa_err *err);

/* 1 and *id set when key is stored, else 0. */
int part_idmap_find(const struct part_idmap *m, uint64_t key, uint32_t *id);

/* A hint that key is looked up soon: its dense entry, or its first table
 * slot, is fetched into the cache (nothing else changes). */
static inline void part_idmap_prefetch(const struct part_idmap *m,
				       uint64_t key)
{
	if (key < m->dense_cap)
		base_prefetch(&m->dense[key]);
	else if (m->cap)
		base_prefetch(&m->slot[base_mix64(key) & (m->cap - 1)]);
}

/*
 * Hand over the ids array (exactly n entries, or NULL when n == 0; the
 * caller frees it) and release the rest of the map.
 */
uint64_t *part_idmap_take_ids(struct part_idmap *m);

#endif /* PART_HASH_H */
