/*
 * parsa_pcount: sparse per-(feature, part) counts in the order of the
 * features' mask bits (see parsa_pcount.h).
 */
#include "parsa_pcount.h"

#include <stdlib.h>

#include "base_prefetch.h"
#include "base_huge.h"

/* cap, at most k. */
static uint64_t cap_of(uint64_t want, uint32_t k)
{
	return want < k ? want : k;
}

void parsa_pcount_release(struct parsa_pcount *pc)
{
	if (!pc)
		return;
	free(pc->hdr);
	free(pc->pool);
	memset(pc, 0, sizeof(*pc));
}

uint64_t parsa_pcount_bytes(const struct parsa_pcount *pc)
{
	return (uint64_t)pc->n_feat * sizeof(uint64_t) +
	       pc->alloc * sizeof(uint16_t);
}

/* Fetch ahead (the nonzeros are a stream; a count's address needs the
 * feature's header and mask): headers and masks this far ahead, counts
 * half as far. */
#ifndef PC_AHEAD
#define PC_AHEAD 16
#endif

/* The counts of part for the features [lo, hi) into pc (regions sized,
 * zero), in three stages PC_AHEAD / 2 nonzeros apart: a nonzero's header
 * and mask fetched, then its slot found (and fetched), then its count
 * raised.  -1 if a part is missing from a mask of its examples'
 * features. */
static int count_range(struct parsa_pcount *pc, const struct parsa_graph *g,
		       const uint32_t *part, const struct parsa_nbrset *used,
		       uint32_t lo, uint32_t hi, int *sat)
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
			q[mid % qn].c = parsa_pcount_slot(pc, m, q[mid % qn].v, j);
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
 * the feature (its count is not 0): 0, or -1. */
static int check_range(const struct parsa_pcount *pc,
		       const struct parsa_nbrset *used, uint32_t lo,
		       uint32_t hi)
{
	for (uint32_t v = lo; v < hi; v++) {
		const uint16_t *c = pc->pool + (pc->hdr[v] & PARSA_PCOUNT_OFF);

		for (uint32_t i = 0, n = parsa_nbrset_count(used, v); i < n; i++)
			if (c[i] == 0)
				return -1;
	}
	return 0;
}

/* A cold feature's nonzero against a hot one's, in quarters, for the
 * tasks' cuts (parsa_graph_col_cuts): a header, a mask and a count to
 * fetch, the hot features' counts (up to k each) out of cache too. */
#define PC_COLD_W 9

/* One task of parsa_pcount_build_par: the features [cut[t], cut[t+1]). */
struct count_task {
	struct parsa_pcount *pc;
	const struct parsa_graph *g;
	const uint32_t *part;
	const struct parsa_nbrset *used;
	uint32_t n;
	uint32_t cut[PARSA_PCOUNT_MAX_TASKS + 1];
	int sat[PARSA_PCOUNT_MAX_TASKS], bad[PARSA_PCOUNT_MAX_TASKS];
};

static void count_task(void *arg, uint32_t t)
{
	struct count_task *ct = arg;
	uint32_t lo = ct->cut[t], hi = ct->cut[t + 1];

	ct->bad[t] = count_range(ct->pc, ct->g, ct->part, ct->used, lo, hi,
				 &ct->sat[t]) ||
		     check_range(ct->pc, ct->used, lo, hi);
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
		struct count_task ct = { pc, g, part, used, 0, { 0 }, { 0 },
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
		bad = count_range(pc, g, part, used, 0, g->n_cols, &sat) ||
		      check_range(pc, used, 0, g->n_cols);
	}
	if (bad)
		goto bad;
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
		uint16_t *p;

		if (na < off + nc)
			na = off + nc;
		if (na > PARSA_PCOUNT_OFF)
			return -1;
		p = realloc(pc->pool, (size_t)na * sizeof(uint16_t));
		if (!p)
			return -1;
		pc->pool = p;
		pc->alloc = na;
	}
	if (off != (pc->hdr[v] & PARSA_PCOUNT_OFF))
		memcpy(pc->pool + off, pc->pool + (pc->hdr[v] & PARSA_PCOUNT_OFF),
		       (size_t)lam * sizeof(uint16_t));
	pc->len = off + nc;
	pc->hdr[v] = off | nc << PARSA_PCOUNT_CAP_SHIFT;
	return 0;
}
