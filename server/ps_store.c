/*
 * ps_store: open-addressing hash map over dense key/value arrays, and the
 * merge operations (see ps_store.h).
 */
#include "ps_store.h"

#include <stdlib.h>
#include <string.h>

#include "base_hash.h"

struct ps_store {
	uint32_t width;         /* bytes per value */
	size_t size, cap;       /* entries used / allocated */
	uint64_t *keys;         /* cap keys, first size used */
	unsigned char *values;  /* cap * width bytes */
	size_t nslots;          /* power of two, > 2 * size */
	uint32_t *slot;         /* 0 = empty, else entry index + 1 */
	uint64_t wlo;           /* direct window: keys wlo .. wlo + wmax - 1 */
	uint64_t wmax;          /* window size (0 = none) */
	uint64_t wn;            /* dslot entries allocated (<= wmax) */
	uint32_t *dslot;        /* key - wlo -> entry index + 1, 0 = absent */
};

/* Keys inside the window never enter the hash index; dslot covers every
 * window key ever inserted (wn grows to the largest one). */
static int in_window(const struct ps_store *s, uint64_t key)
{
	return key - s->wlo < s->wmax;
}

int ps_store_set_window(struct ps_store *s, uint64_t lo, uint64_t n)
{
	if (s->size != 0)
		return PARSA_ESTATE;
	s->wlo = lo;
	s->wmax = n;
	return 0;
}

static int grow_window(struct ps_store *s, uint64_t need,
		       struct parsa_err *err)
{
	uint64_t n = s->wn ? s->wn : 1024;
	uint32_t *d;

	while (n < need)
		n *= 2;
	if (n > s->wmax)
		n = s->wmax;
	d = realloc(s->dslot, (size_t)n * sizeof(*d));
	if (!d)
		return parsa_fail(err, PARSA_ENOMEM, "store window %llu",
				  (unsigned long long)n);
	memset(d + s->wn, 0, (size_t)(n - s->wn) * sizeof(*d));
	s->dslot = d;
	s->wn = n;
	return 0;
}

struct ps_store *ps_store_create(uint32_t width, struct parsa_err *err)
{
	struct ps_store *s;

	if (width == 0) {
		parsa_fail(err, PARSA_EINVAL, "table value width 0");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s) {
		s->width = width;
		s->nslots = 16;
		s->slot = calloc(s->nslots, sizeof(*s->slot));
	}
	if (!s || !s->slot) {
		free(s);
		parsa_fail(err, PARSA_ENOMEM, "table store");
		return NULL;
	}
	return s;
}

void ps_store_destroy(struct ps_store *s)
{
	if (!s)
		return;
	free(s->keys);
	free(s->values);
	free(s->slot);
	free(s->dslot);
	free(s);
}

/* Slot index holding key, or the empty slot where it would go. */
static size_t probe(const struct ps_store *s, uint64_t key)
{
	size_t mask = s->nslots - 1, i = (size_t)base_mix64(key) & mask;

	while (s->slot[i] && s->keys[s->slot[i] - 1] != key)
		i = (i + 1) & mask;
	return i;
}

unsigned char *ps_store_find(const struct ps_store *s, uint64_t key)
{
	size_t i;

	if (in_window(s, key)) {
		uint64_t d = key - s->wlo;

		if (d >= s->wn || !s->dslot[d])
			return NULL;
		return s->values + (size_t)(s->dslot[d] - 1) * s->width;
	}
	i = probe(s, key);

	if (!s->slot[i])
		return NULL;
	return s->values + (size_t)(s->slot[i] - 1) * s->width;
}

static int grow_index(struct ps_store *s, struct parsa_err *err)
{
	size_t n = s->nslots * 2, e;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return parsa_fail(err, PARSA_ENOMEM, "store index %zu", n);
	free(s->slot);
	s->slot = slot;
	s->nslots = n;
	for (e = 0; e < s->size; e++)
		if (!in_window(s, s->keys[e]))
			s->slot[probe(s, s->keys[e])] = (uint32_t)(e + 1);
	return 0;
}

static int grow_entries(struct ps_store *s, struct parsa_err *err)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	uint64_t *k;
	unsigned char *v;

	if (cap > UINT32_MAX - 1)
		return parsa_fail(err, PARSA_ERANGE, "store over 2^32 keys");
	k = realloc(s->keys, cap * sizeof(*k));
	if (!k)
		return parsa_fail(err, PARSA_ENOMEM, "store keys %zu", cap);
	s->keys = k;
	v = realloc(s->values, cap * s->width);
	if (!v)
		return parsa_fail(err, PARSA_ENOMEM, "store values %zu", cap);
	s->values = v;
	s->cap = cap;
	return 0;
}

/* Append a zeroed entry for key; *val points at it. */
static int append(struct ps_store *s, uint64_t key, unsigned char **val,
		  struct parsa_err *err)
{
	int rc;

	if (s->size == s->cap && (rc = grow_entries(s, err)))
		return rc;
	s->keys[s->size] = key;
	*val = s->values + s->size * s->width;
	memset(*val, 0, s->width);
	s->size++;
	return 0;
}

static int get_window(struct ps_store *s, uint64_t key, unsigned char **val,
		      struct parsa_err *err)
{
	uint64_t d = key - s->wlo;
	int rc;

	if (d >= s->wn && (rc = grow_window(s, d + 1, err)))
		return rc;
	if (s->dslot[d]) {
		*val = s->values + (size_t)(s->dslot[d] - 1) * s->width;
		return 0;
	}
	if ((rc = append(s, key, val, err)))
		return rc;
	s->dslot[d] = (uint32_t)s->size;
	return 0;
}

int ps_store_get(struct ps_store *s, uint64_t key, unsigned char **val,
		 struct parsa_err *err)
{
	size_t i;
	int rc;
	unsigned char *v;

	if (in_window(s, key))
		return get_window(s, key, val, err);
	i = probe(s, key);

	if (s->slot[i]) {
		*val = s->values + (size_t)(s->slot[i] - 1) * s->width;
		return 0;
	}
	if (s->size == s->cap && (rc = grow_entries(s, err)))
		return rc;
	if (2 * (s->size + 1) >= s->nslots) {
		if ((rc = grow_index(s, err)))
			return rc;
		i = probe(s, key);
	}
	s->keys[s->size] = key;
	v = s->values + s->size * s->width;
	memset(v, 0, s->width);
	s->slot[i] = (uint32_t)(++s->size);
	*val = v;
	return 0;
}

void ps_store_take(struct ps_store *s, uint64_t **keys,
		   unsigned char **values, size_t *n)
{
	uint32_t *slot = calloc(16, sizeof(*slot));

	*keys = s->keys;
	*values = s->values;
	*n = s->size;
	free(s->dslot);
	s->dslot = NULL;
	s->wn = 0;
	s->keys = NULL;
	s->values = NULL;
	s->size = s->cap = 0;
	if (slot) { /* back to a new store's index */
		free(s->slot);
		s->slot = slot;
		s->nslots = 16;
	} else { /* keep the old one, emptied */
		memset(s->slot, 0, s->nslots * sizeof(*s->slot));
	}
}

size_t ps_store_size(const struct ps_store *s) { return s->size; }

size_t ps_store_entry(const struct ps_store *s, const unsigned char *val)
{
	return (size_t)(val - s->values) / s->width;
}
uint32_t ps_store_width(const struct ps_store *s) { return s->width; }
const uint64_t *ps_store_keys(const struct ps_store *s) { return s->keys; }
unsigned char *ps_store_values(struct ps_store *s) { return s->values; }

const char *ps_op_name(int op)
{
	switch (op) {
	case PS_OP_OR: return "or";
	case PS_OP_ADD_F32: return "add_f32";
	case PS_OP_ADD_F64: return "add_f64";
	case PS_OP_OVERWRITE: return "overwrite";
	default: return "?";
	}
}

int ps_op_check(int op, uint32_t width, struct parsa_err *err)
{
	int ok;

	switch (op) {
	case PS_OP_OR:
	case PS_OP_OVERWRITE: ok = width > 0; break;
	case PS_OP_ADD_F32: ok = width > 0 && width % 4 == 0; break;
	case PS_OP_ADD_F64: ok = width > 0 && width % 8 == 0; break;
	default:
		return parsa_fail(err, PARSA_EINVAL, "unknown merge op %d", op);
	}
	if (!ok)
		return parsa_fail(err, PARSA_EINVAL, "merge op %s does not fit "
				  "values of %u bytes", ps_op_name(op), width);
	return 0;
}

static void add_f32(unsigned char *dst, const unsigned char *src, uint32_t w)
{
	uint32_t i;

	for (i = 0; i < w; i += 4) {
		float a, b;

		memcpy(&a, dst + i, 4);
		memcpy(&b, src + i, 4);
		a += b;
		memcpy(dst + i, &a, 4);
	}
}

static void add_f64(unsigned char *dst, const unsigned char *src, uint32_t w)
{
	uint32_t i;

	for (i = 0; i < w; i += 8) {
		double a, b;

		memcpy(&a, dst + i, 8);
		memcpy(&b, src + i, 8);
		a += b;
		memcpy(dst + i, &a, 8);
	}
}

void ps_op_merge(int op, unsigned char *dst, const unsigned char *src,
		 uint32_t width)
{
	uint32_t i;

	switch (op) {
	case PS_OP_OR:
		for (i = 0; i < width; i++)
			dst[i] |= src[i];
		break;
	case PS_OP_ADD_F32: add_f32(dst, src, width); break;
	case PS_OP_ADD_F64: add_f64(dst, src, width); break;
	case PS_OP_OVERWRITE: memcpy(dst, src, width); break;
	default: break;
	}
}
