/*
 * parsa_pcount: sparse per-(feature, part) counts in the order of the
 * features' mask bits (see parsa_pcount.h).
 */
#include "parsa_pcount.h"

#include <stdlib.h>

#include "base_hash.h"
#include "base_prefetch.h"
#include "base_huge.h"

/* cap, at most k. */
static uint64_t cap_of(uint64_t want, uint32_t k)
{
	return want < k ? want : k;
}

/* The big counts' table: the key of (v, j) and its first probe. */
static uint64_t big_key(uint32_t v, uint32_t j)
{
	return (uint64_t)v << 16 | j;
}

static uint64_t big_home(const struct parsa_pcount_big *t, uint64_t key)
{
	return base_mix64(key) & (t->cap - 1);
}

/* The entry of key, or NULL. */
static uint64_t *big_find(const struct parsa_pcount_big *t, uint64_t key)
{
	if (!t->cap)
		return NULL;
	for (uint64_t i = big_home(t, key);; i = (i + 1) & (t->cap - 1)) {
		if (!t->slot[i])
			return NULL;
		if (t->slot[i] >> 16 == key)
			return &t->slot[i];
	}
}

/* Insert the entry w (its key absent); the table has room. */
static void big_place(struct parsa_pcount_big *t, uint64_t w)
{
	uint64_t i = big_home(t, w >> 16);

	while (t->slot[i])
		i = (i + 1) & (t->cap - 1);
	t->slot[i] = w;
	t->n++;
}

/* Room for one more entry at a load of at most 1/2: 0, or -1 (out of
 * memory, t unchanged). */
static int big_room(struct parsa_pcount_big *t)
{
	struct parsa_pcount_big nt;

	if ((t->n + 1) * 2 <= t->cap)
		return 0;
	nt.cap = t->cap ? t->cap * 2 : 1024;
	nt.n = 0;
	nt.slot = calloc((size_t)nt.cap, sizeof(uint64_t));
	if (!nt.slot)
		return -1;
	for (uint64_t i = 0; i < t->cap; i++)
		if (t->slot[i])
			big_place(&nt, t->slot[i]);
	free(t->slot);
	*t = nt;
	return 0;
}

/* Remove the entry at e (backward-shift deletion: every later entry of
 * the probe run that may move closer to its home does). */
static void big_remove(struct parsa_pcount_big *t, uint64_t *e)
{
	uint64_t i = (uint64_t)(e - t->slot), j = i, mask = t->cap - 1;

	for (;;) {
		uint64_t h;

		j = (j + 1) & mask;
		if (!t->slot[j])
			break;
		h = big_home(t, t->slot[j] >> 16);
		/* slot j's entry may fill the hole at i unless its home lies
		 * cyclically in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		t->slot[i] = t->slot[j];
		i = j;
	}
	t->slot[i] = 0;
	t->n--;
}

uint32_t parsa_pcount_big_get(const struct parsa_pcount_big *t, uint32_t v,
			      uint32_t j)
{
	const uint64_t *e = big_find(t, big_key(v, j));

	return e ? (uint32_t)(*e & 0xFFFF) : PARSA_PCOUNT_SAT;
}

void parsa_pcount_big_up(struct parsa_pcount_big *t, uint8_t *c, uint32_t v,
			 uint32_t j, int *saturated)
{
	uint64_t key = big_key(v, j), *e;

	if (*c < PARSA_PCOUNT_BIG) { /* 254 -> 255 */
		*c = PARSA_PCOUNT_BIG;
		if (big_room(t))
			*saturated = 1; /* absent: saturated */
		else
			big_place(t, key << 16 | PARSA_PCOUNT_BIG);
		return;
	}
	e = big_find(t, key);
	if (!e) {
		*saturated = 1;
	} else if ((*e & 0xFFFF) + 1 == PARSA_PCOUNT_SAT) {
		big_remove(t, e);
		*saturated = 1;
	} else {
		++*e;
	}
}

void parsa_pcount_big_down(struct parsa_pcount_big *t, uint8_t *c,
			   uint32_t v, uint32_t j)
{
	uint64_t *e = big_find(t, big_key(v, j));

	if (!e)
		return; /* saturated */
	if ((*e & 0xFFFF) == PARSA_PCOUNT_BIG) {
		big_remove(t, e);
		*c = PARSA_PCOUNT_BIG - 1;
	} else {
		--*e;
	}
}

void parsa_pcount_release(struct parsa_pcount *pc)
{
	if (!pc)
		return;
	free(pc->hdr);
	free(pc->pool);
	free(pc->big.slot);
	memset(pc, 0, sizeof(*pc));
}

uint64_t parsa_pcount_bytes(const struct parsa_pcount *pc)
{
	return (uint64_t)pc->n_feat * sizeof(uint64_t) + pc->alloc +
	       pc->big.cap * sizeof(uint64_t);
}

/* Fetch ahead (the nonzeros are a stream; a count's address needs the
 * feature's header and mask): headers and masks this far ahead, counts
 * half as far. */
#ifndef PC_AHEAD
#define PC_AHEAD 16
#endif

/* The counts of part for the features [lo, hi) into c16, the build's
 * 2-byte slots (regions sized, zero; saturating at PARSA_PCOUNT_SAT), in
 * three stages PC_AHEAD / 2 nonzeros apart: a nonzero's header and mask
 * fetched, then its slot found (and fetched), then its count raised.  -1
 * if a part is missing from a mask of its examples' features. */
static int count_range(const struct parsa_pcount *pc, uint16_t *c16,
		       const struct parsa_graph *g, const uint32_t *part,
		       const struct parsa_nbrset *used, uint32_t lo, uint32_t hi,
		       int *sat)
{
	struct { uint32_t v, j; uint16_t *c; } q[2 * PC_AHEAD];
	struct parsa_range_it it;
	const uint64_t half = PC_AHEAD / 2, qn = 2 * PC_AHEAD;
	uint64_t in = 0, mid = 0, out = 0;
	int more = 1;

	parsa_range_it_init(&it, g, lo, hi);
	for (;;) {
		uint32_t v, r;

		if (more && (more = parsa_range_it_next(&it, &v, &r))) {
			q[in % qn].v = v;
			q[in % qn].j = part[r];
			base_prefetch(&pc->hdr[v]);
			base_prefetch(parsa_nbrset_mask(used, v));
			in++;
		}
		if (mid < in && (in - mid > half || !more)) {
			uint32_t j = q[mid % qn].j;
			const uint64_t *m = parsa_nbrset_mask(used, q[mid % qn].v);

			if (!(m[j >> 6] >> (j & 63) & 1))
				return -1;
			q[mid % qn].c = c16 + (pc->hdr[q[mid % qn].v] &
					       PARSA_PCOUNT_OFF) +
					parsa_pcount_rank(m, pc->words, j);
			base_prefetch(q[mid % qn].c);
			mid++;
		}
		if (out < mid && (mid - out > half || !more)) {
			uint16_t *c = q[out % qn].c;

			if (*c < PARSA_PCOUNT_SAT)
				++*c;
			*sat |= *c == PARSA_PCOUNT_SAT;
			out++;
		}
		if (!more && out == in)
			return 0;
	}
}

/* Every part of a mask of the features [lo, hi) holds an example using
 * the feature (its count in c16 is not 0): 0, or -1. */
static int check_range(const struct parsa_pcount *pc, const uint16_t *c16,
		       const struct parsa_nbrset *used, uint32_t lo,
		       uint32_t hi)
{
	for (uint32_t v = lo; v < hi; v++) {
		const uint16_t *c = c16 + (pc->hdr[v] & PARSA_PCOUNT_OFF);

		for (uint32_t i = 0, n = parsa_nbrset_count(used, v); i < n; i++)
			if (c[i] == 0)
				return -1;
	}
	return 0;
}

/*
 * The build's 2-byte counts narrowed in place to the pool's 1-byte slots
 * (slot i moves from bytes 2i, 2i + 1 to byte i: a forward pass over the
 * features, whose regions lie in feature order, never overwrites what it
 * has still to read), each count from 255 on into the table (a saturated
 * one, or one the table cannot take, stays out: saturated, *sat set).
 * Counting in 2 bytes keeps the build's one increment a nonzero; looking
 * up a table there (the hot features' nonzeros) took 2-3% of a 100M run.
 */
static void narrow(struct parsa_pcount *pc, const struct parsa_nbrset *used,
		   int *sat)
{
	const uint16_t *c16 = (const uint16_t *)(void *)pc->pool;

	for (uint32_t v = 0; v < pc->n_feat; v++) {
		const uint64_t *m = parsa_nbrset_mask(used, v);
		uint64_t off = pc->hdr[v] & PARSA_PCOUNT_OFF, i = off;

		for (uint32_t w = 0; w < pc->words; w++)
			for (uint64_t x = m[w]; x; x &= x - 1, i++) {
				uint32_t j = w * 64 + (uint32_t)__builtin_ctzll(x);
				uint16_t n = c16[i];

				pc->pool[i] = n < PARSA_PCOUNT_BIG
						      ? (uint8_t)n
						      : PARSA_PCOUNT_BIG;
				if (n < PARSA_PCOUNT_BIG)
					continue;
				if (n == PARSA_PCOUNT_SAT || big_room(&pc->big))
					*sat = 1;
				else
					big_place(&pc->big,
						  big_key(v, j) << 16 | n);
			}
	}
}

/* A cold feature's nonzero against a hot one's, in quarters, for the
 * tasks' cuts (parsa_graph_col_cuts): a header, a mask and a count to
 * fetch, the hot features' counts (up to k each) out of cache too. */
#define PC_COLD_W 9

/* One task of parsa_pcount_build_par: the features [cut[t], cut[t+1])
 * counted into c16 (the pool's 2-byte view during the build). */
struct count_task {
	struct parsa_pcount *pc;
	const struct parsa_graph *g;
	const uint32_t *part;
	const struct parsa_nbrset *used;
	uint32_t n;
	uint32_t cut[PARSA_PCOUNT_MAX_TASKS + 1];
	uint16_t *c16;
	int sat[PARSA_PCOUNT_MAX_TASKS], bad[PARSA_PCOUNT_MAX_TASKS];
};

static void count_task(void *arg, uint32_t t)
{
	struct count_task *ct = arg;
	uint32_t lo = ct->cut[t], hi = ct->cut[t + 1];

	ct->bad[t] = count_range(ct->pc, ct->c16, ct->g, ct->part, ct->used,
				 lo, hi, &ct->sat[t]) ||
		     check_range(ct->pc, ct->c16, ct->used, lo, hi);
}

int parsa_pcount_build_par(struct parsa_pcount *pc,
			   const struct parsa_graph *g, const uint32_t *part,
			   const struct parsa_nbrset *used, int *saturated,
			   parsa_pcount_par_fn par, void *par_arg,
			   uint32_t tasks, struct parsa_err *err)
{
	uint64_t off = 0, alloc;
	int sat = 0, bad = 0;

	memset(pc, 0, sizeof(*pc));
	if (used->n_feat != g->n_cols || used->k > 65536)
		return parsa_fail(err, PARSA_EINVAL, "counts: sets over %u "
				  "features in %u parts, graph has %u",
				  used->n_feat, used->k, g->n_cols);
	pc->n_feat = g->n_cols;
	pc->k = used->k;
	pc->words = used->words;
	pc->hdr = malloc(((size_t)g->n_cols + 1) * sizeof(uint64_t));
	if (!pc->hdr)
		goto nomem;
	base_huge(pc->hdr, (size_t)g->n_cols * sizeof(uint64_t));
	for (uint32_t v = 0; v < g->n_cols; v++) {
		uint32_t lam = parsa_nbrset_count(used, v);
		uint64_t c = lam ? cap_of((uint64_t)lam + 1, pc->k) : 0;

		pc->hdr[v] = off | c << PARSA_PCOUNT_CAP_SHIFT;
		off += c;
	}
	/* room to grow (the growth step of parsa_pcount_grow) from the
	 * start: never touched unless used, it spares a realloc, which on a
	 * huge-page pool held a second copy for a moment (+41 MiB at the
	 * refinement's peak at 100M nonzeros) */
	alloc = off + off / 4 + 4096;
	/* counted in 2 bytes a slot, then narrowed in place (narrow) and
	 * the block shrunk */
	pc->pool = calloc((size_t)alloc, sizeof(uint16_t));
	if (!pc->pool)
		goto nomem;
	base_huge(pc->pool, (size_t)alloc * sizeof(uint16_t));
	pc->len = off;
	pc->alloc = alloc;
	for (uint32_t u = 0; u < g->n_rows; u++)
		if (part[u] >= pc->k)
			goto bad;
	if (tasks > 1 && par) {
		struct count_task ct = { pc, g, part, used, 0, { 0 },
					 (uint16_t *)(void *)pc->pool, { 0 },
					 { 0 } };

		ct.n = tasks < PARSA_PCOUNT_MAX_TASKS ? tasks
						      : PARSA_PCOUNT_MAX_TASKS;
		/* ranges of equal nonzeros (on failure even ones: slower,
		 * the same counts) */
		(void)parsa_graph_col_cuts(g, ct.n, ct.cut, PC_COLD_W, par,
					   par_arg);
		par(par_arg, ct.n, count_task, &ct);
		for (uint32_t t = 0; t < ct.n; t++) {
			sat |= ct.sat[t];
			bad |= ct.bad[t];
		}
	} else {
		uint16_t *c16 = (uint16_t *)(void *)pc->pool;

		bad = count_range(pc, c16, g, part, used, 0, g->n_cols, &sat) ||
		      check_range(pc, c16, used, 0, g->n_cols);
	}
	if (bad)
		goto bad;
	narrow(pc, used, &sat);
	{
		uint8_t *p = realloc(pc->pool, (size_t)alloc);

		if (p) /* (a failed shrink keeps the larger block) */
			pc->pool = p;
	}
	/* the room to grow held the 2-byte view's second half: its pages
	 * go back (zero when parsa_pcount_grow touches them again): 0.8 MB
	 * of the refinement's peak at 10M nonzeros, k=64 */
	base_huge_drop(pc->pool + off, (size_t)(alloc - off));
	*saturated = sat;
	return 0;
bad:
	parsa_pcount_release(pc);
	return parsa_fail(err, PARSA_EINVAL,
			  "counts: the sets are not N(U_i) of the partition");
nomem:
	parsa_pcount_release(pc);
	return parsa_fail(err, PARSA_ENOMEM, "out of memory (counts: %u "
			  "features x %u parts)", g->n_cols, used->k);
}

int parsa_pcount_build(struct parsa_pcount *pc, const struct parsa_graph *g,
		       const uint32_t *part, const struct parsa_nbrset *used,
		       int *saturated, struct parsa_err *err)
{
	return parsa_pcount_build_par(pc, g, part, used, saturated, NULL, NULL,
				      1, err);
}

int parsa_pcount_grow(struct parsa_pcount *pc, uint32_t v, uint32_t lam)
{
	uint64_t off = pc->hdr[v] & PARSA_PCOUNT_OFF;
	uint64_t c = pc->hdr[v] >> PARSA_PCOUNT_CAP_SHIFT, nc;

	if (lam >= pc->k || lam < c)
		return 0; /* every part holds v already, or there is room */
	nc = cap_of(c + (c / 2 > 4 ? c / 2 : 4), pc->k);
	if (c && off + c == pc->len) { /* the last region: grows in place */
		off = pc->len - c;
	} else {
		off = pc->len;
		pc->waste += c;
	}
	if (off + nc > pc->alloc) {
		uint64_t na = pc->alloc + pc->alloc / 4 + 4096;
		uint8_t *p;

		if (na < off + nc)
			na = off + nc;
		if (na > PARSA_PCOUNT_OFF)
			return -1;
		p = realloc(pc->pool, (size_t)na);
		if (!p)
			return -1;
		pc->pool = p;
		pc->alloc = na;
	}
	if (off != (pc->hdr[v] & PARSA_PCOUNT_OFF))
		memcpy(pc->pool + off, pc->pool + (pc->hdr[v] & PARSA_PCOUNT_OFF),
		       (size_t)lam);
	pc->len = off + nc;
	pc->hdr[v] = off | nc << PARSA_PCOUNT_CAP_SHIFT;
	return 0;
}
