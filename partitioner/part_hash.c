/*
 * part_hash: 64-bit -> compact 32-bit id map (see part_hash.h).
 */
#include "part_hash.h"

#include <stdlib.h>
#include <string.h>

#include "base_hash.h"
#include "base_huge.h"

#define SLOT_EMPTY UINT32_MAX
#define DENSE_MIN (1u << 16)   /* the dense range may always reach this */

void part_idmap_init(struct part_idmap *m)
{
	memset(m, 0, sizeof(*m));
}

void part_idmap_release(struct part_idmap *m)
{
	if (!m)
		return;
	free(m->slot);
	free(m->ids);
	free(m->dense);
	part_idmap_init(m);
}

void part_idmap_clear(struct part_idmap *m)
{
	for (uint32_t c = 0; c < m->n; c++)
		if (m->ids[c] < m->dense_cap)
			m->dense[m->ids[c]] = 0;
	if (m->n_hashed)
		memset(m->slot, 0xff, (size_t)m->cap * sizeof(uint32_t));
	m->n = 0;
	m->n_hashed = 0;
}

/* Rebuild the table with ncap slots from the keys >= dense_cap. */
static int rehash(struct part_idmap *m, uint64_t ncap, struct parsa_err *err)
{
	uint32_t *ns;
	uint64_t mask = ncap - 1;

	if (ncap > SIZE_MAX / sizeof(uint32_t) ||
	    !(ns = malloc((size_t)ncap * sizeof(uint32_t))))
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a hash table of %llu slots",
				  (unsigned long long)ncap);
	memset(ns, 0xff, (size_t)ncap * sizeof(uint32_t));
	m->n_hashed = 0;
	for (uint32_t c = 0; c < m->n; c++) {
		uint64_t h;

		if (m->ids[c] < m->dense_cap)
			continue;
		for (h = base_mix64(m->ids[c]) & mask; ns[h] != SLOT_EMPTY;
		     h = (h + 1) & mask)
			;
		ns[h] = c;
		m->n_hashed++;
	}
	free(m->slot);
	m->slot = ns;
	m->cap = ncap;
	return 0;
}

static int grow_ids(struct part_idmap *m, struct parsa_err *err)
{
	uint64_t ncap = m->ids_cap ? m->ids_cap + m->ids_cap / 2 : 1024;
	uint64_t *ni;

	if (ncap > (uint64_t)PART_IDMAP_MAX)
		ncap = PART_IDMAP_MAX;
	if (ncap > SIZE_MAX / sizeof(uint64_t) ||
	    !(ni = realloc(m->ids, (size_t)ncap * sizeof(uint64_t))))
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %llu ids",
				  (unsigned long long)ncap);
	m->ids = ni;
	m->ids_cap = ncap;
	return 0;
}

/*
 * Grow the dense range to cover key when the size rule allows it (see the
 * header); keys already stored below the new bound are copied in.  Not
 * growing is not an error (key then goes to the table).
 */
static void maybe_grow_dense(struct part_idmap *m, uint64_t key)
{
	uint64_t limit = 4 * ((uint64_t)m->n + 1), ncap;
	uint32_t *nd;

	if (limit < DENSE_MIN)
		limit = DENSE_MIN;
	if (key >= limit)
		return;
	for (ncap = m->dense_cap ? m->dense_cap : 1024; ncap <= key;)
		ncap *= 2;
	if (ncap > SIZE_MAX / sizeof(uint32_t))
		return;
	nd = base_huge_grow(m->dense, (size_t)m->dense_cap * sizeof(uint32_t),
			    (size_t)ncap * sizeof(uint32_t));
	if (!nd)
		return;
	for (uint32_t c = 0; c < m->n; c++)
		if (m->ids[c] >= m->dense_cap && m->ids[c] < ncap)
			nd[m->ids[c]] = c + 1;
	m->dense = nd;
	m->dense_cap = ncap;
}

/* The table slot of key, or the empty slot where it would go. */
static inline uint64_t probe(const struct part_idmap *m, uint64_t key)
{
	uint64_t mask = m->cap - 1, h = base_mix64(key) & mask;

	while (m->slot[h] != SLOT_EMPTY && m->ids[m->slot[h]] != key)
		h = (h + 1) & mask;
	return h;
}

int part_idmap_find(const struct part_idmap *m, uint64_t key, uint32_t *id)
{
	uint64_t h;

	if (key < m->dense_cap) {
		if (!m->dense[key])
			return 0;
		*id = m->dense[key] - 1;
		return 1;
	}
	if (!m->cap)
		return 0;
	h = probe(m, key);
	if (m->slot[h] == SLOT_EMPTY)
		return 0;
	*id = m->slot[h];
	return 1;
}

/* Store the new key as id n (room in ids is already there). */
static int insert_new(struct part_idmap *m, uint64_t key, struct parsa_err *err)
{
	int rc;

	if (key >= m->dense_cap)
		maybe_grow_dense(m, key);
	if (key < m->dense_cap) {
		m->dense[key] = m->n + 1;
	} else {
		if (((uint64_t)m->n_hashed + 1) * 2 > m->cap) {
			rc = rehash(m, m->cap ? m->cap * 2 : 1024, err);
			if (rc)
				return rc;
		}
		m->slot[probe(m, key)] = m->n;
		m->n_hashed++;
	}
	m->ids[m->n] = key;
	return 0;
}

int part_idmap_get(struct part_idmap *m, uint64_t key, uint32_t *id,
		   int *isnew, const char *what, struct parsa_err *err)
{
	int rc;

	if (isnew)
		*isnew = 0;
	if (part_idmap_find(m, key, id))
		return 0;
	if (m->n >= PART_IDMAP_MAX)
		return parsa_fail(err, PARSA_ERANGE, "more than %u %s",
				  PART_IDMAP_MAX, what ? what : "ids");
	if (m->n >= m->ids_cap && (rc = grow_ids(m, err)) != 0)
		return rc;
	rc = insert_new(m, key, err);
	if (rc)
		return rc;
	*id = m->n++;
	if (isnew)
		*isnew = 1;
	return 0;
}

uint64_t *part_idmap_take_ids(struct part_idmap *m)
{
	uint64_t *ids = m->ids;

	if (m->n == 0) {
		part_idmap_release(m);
		return NULL;
	}
	if (m->ids_cap > m->n) {
		uint64_t *t = realloc(ids, (size_t)m->n * sizeof(uint64_t));

		if (t)
			ids = t;
	}
	m->ids = NULL;
	part_idmap_release(m);
	return ids;
}
