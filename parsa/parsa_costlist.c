/*
 * parsa_costlist: the bucketed doubly-linked cost list of thesis 9.4.1
 * (see parsa_costlist.h).  One bucket (head[c]) per cost value c; items are
 * linked through prev/next arrays indexed by item id, so every operation is
 * a few array writes.  `top` bounds the buckets in use so that rebuilding
 * for a block only touches the buckets that block (or the last) used.
 *
 * The arrays are uint16_t or uint32_t (cl->narrow): every operation that
 * walks them is written once in CL_OPS below and instantiated for both
 * widths; the public functions pick one by cl->narrow.
 */
#include "parsa_costlist.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NIL16 ((uint16_t)0xFFFF)
#define NIL8 ((uint8_t)0xFF)

/* Grow *p to n elements of size elem (contents kept).  0 or -1. */
static int grow_array(void **p, size_t n, size_t elem)
{
	void *np;

	if (n > SIZE_MAX / elem)
		return -1;
	np = realloc(*p, n * elem);
	if (!np)
		return -1;
	*p = np;
	return 0;
}

static int fits_narrow(uint32_t n, uint32_t max_cost)
{
	return n <= PARSA_CL_NARROW_MAX + 1 && max_cost <= PARSA_CL_NARROW_MAX;
}

/*
 * The operations on the arrays, for link type T with NIL stored as NILT
 * (NIL16, or UINT32_MAX, where the conversions fold away) and cost type C
 * with OUT stored as NILC.
 */
#define CL_OPS(S, T, NILT, C, NILC)                                                   \
/* Link u at the front of bucket c (cost[u] already c). */                  \
static inline void push_front_##S(struct parsa_costlist *cl, uint32_t u,    \
				  uint32_t c)                               \
{                                                                           \
	T *prev = cl->prev, *next = cl->next;                               \
	uint32_t h = cl->head[c];                                           \
									    \
	prev[u] = NILT;                                                     \
	next[u] = h == PARSA_CL_NIL ? NILT : (T)h;                          \
	if (h != PARSA_CL_NIL)                                              \
		prev[h] = (T)u;                                             \
	cl->head[c] = u;                                                    \
}                                                                           \
									    \
/* Unlink u from its bucket (its cost is left as it was). */               \
static inline void unlink_##S(struct parsa_costlist *cl, uint32_t u)        \
{                                                                           \
	T *prev = cl->prev, *next = cl->next;                               \
	C *cost = cl->cost;                                                 \
	T p = prev[u], nx = next[u];                                        \
									    \
	if (p != NILT)                                                      \
		next[p] = nx;                                               \
	else                                                                \
		cl->head[cost[u]] = nx == NILT ? PARSA_CL_NIL : nx;         \
	if (nx != NILT)                                                     \
		prev[nx] = p;                                               \
}                                                                           \
									    \
static void build_##S(struct parsa_costlist *cl, const uint32_t *costs,     \
		      uint32_t n_items)                                     \
{                                                                           \
	C *cost = cl->cost;                                                 \
	uint32_t top = 0;                                                   \
									    \
	for (uint32_t u = n_items; u < cl->nbuilt; u++)                     \
		cost[u] = NILC;                                             \
	/* backwards with push_front: each bucket ends in increasing order */ \
	for (uint32_t u = n_items; u-- > 0;) {                              \
		uint32_t c = costs ? costs[u] : cost[u];                    \
									    \
		assert(c <= cl->max_cost);                                  \
		cost[u] = (C)c;                                             \
		/* buckets above the old top are already NIL */             \
		top = c > top ? c : top;                                    \
		push_front_##S(cl, u, c);                                   \
	}                                                                   \
	cl->top = top;                                                      \
}                                                                           \
									    \
static void remove_##S(struct parsa_costlist *cl, uint32_t u)               \
{                                                                           \
	unlink_##S(cl, u);                                                  \
	((C *)cl->cost)[u] = NILC;                                          \
}                                                                           \
									    \
static void drop_front_##S(struct parsa_costlist *cl, uint32_t c)         \
{                                                                           \
	T *prev = cl->prev, *next = cl->next;                               \
	T nx = next[cl->head[c]];                                           \
									    \
	cl->head[c] = nx == NILT ? PARSA_CL_NIL : nx;                       \
	if (nx != NILT)                                                     \
		prev[nx] = NILT;                                            \
}                                                                           \
									    \
static void decrement_##S(struct parsa_costlist *cl, uint32_t u)            \
{                                                                           \
	C *cost = cl->cost;                                                 \
	uint32_t c = cost[u];                                               \
									    \
	unlink_##S(cl, u);                                                  \
	cost[u] = (C)--c;                                                   \
	push_front_##S(cl, u, c);                                           \
	if (c < cl->min)                                                    \
		cl->min = c;                                                \
}

CL_OPS(n8, uint16_t, NIL16, uint8_t, NIL8)
CL_OPS(n16, uint16_t, NIL16, uint16_t, NIL16)
CL_OPS(n32, uint32_t, UINT32_MAX, uint32_t, UINT32_MAX)

/* op_n8, op_n16 or op_n32 by the list's widths */
#define CL_DISPATCH(op, ...)                                                 \
	do {                                                                 \
		if (cl->cost8)                                               \
			op##_n8(__VA_ARGS__);                                \
		else if (cl->narrow)                                         \
			op##_n16(__VA_ARGS__);                               \
		else                                                         \
			op##_n32(__VA_ARGS__);                               \
	} while (0)

/* Grow the item arrays to n (at least one allocated) in the current
 * widths; new items start outside the list. */
static int grow_items(struct parsa_costlist *cl, uint32_t n)
{
	size_t w = cl->narrow ? sizeof(uint16_t) : sizeof(uint32_t);
	size_t wc = cl->cost8 ? sizeof(uint8_t) : w;
	size_t m = n ? n : 1;

	if (grow_array(&cl->cost, m, wc) || grow_array(&cl->prev, m, w) ||
	    grow_array(&cl->next, m, w))
		return -1;
	if (cl->cost8)
		memset((uint8_t *)cl->cost + cl->n, NIL8, n - cl->n);
	else if (cl->narrow)
		for (uint32_t u = cl->n; u < n; u++)
			((uint16_t *)cl->cost)[u] = NIL16;
	else
		for (uint32_t u = cl->n; u < n; u++)
			((uint32_t *)cl->cost)[u] = PARSA_CL_OUT;
	cl->n = n;
	return 0;
}

/* cost8 -> uint16_t costs at the same capacity (OUT kept). */
static int widen_cost8(struct parsa_costlist *cl)
{
	const uint8_t *a = cl->cost;
	uint16_t *c = malloc((cl->n ? cl->n : 1) * sizeof(uint16_t));

	if (!c)
		return -1;
	for (uint32_t u = 0; u < cl->n; u++)
		c[u] = a[u] == NIL8 ? NIL16 : a[u];
	free(cl->cost);
	cl->cost = c;
	cl->cost8 = 0;
	return 0;
}

/* A uint32_t copy of narrow array a (n items, NIL16 -> UINT32_MAX); NULL
 * if out of memory. */
static uint32_t *widen_array(const uint16_t *a, uint32_t n)
{
	uint32_t *w = malloc((n ? n : 1) * sizeof(uint32_t));

	for (uint32_t u = 0; w && u < n; u++)
		w[u] = a[u] == NIL16 ? UINT32_MAX : a[u];
	return w;
}

/* Narrow -> wide at the same capacity, keeping every item's links and
 * cost (grow_items then adds capacity). */
static int widen(struct parsa_costlist *cl)
{
	uint32_t *c, *p;

	if (cl->cost8 && widen_cost8(cl))
		return -1;
	c = widen_array(cl->cost, cl->n);
	p = c ? widen_array(cl->prev, cl->n) : NULL;
	uint32_t *x;

	x = p ? widen_array(cl->next, cl->n) : NULL;
	if (!x) {
		free(c);
		free(p);
		return -1;
	}
	free(cl->cost);
	free(cl->prev);
	free(cl->next);
	cl->cost = c;
	cl->prev = p;
	cl->next = x;
	cl->narrow = 0;
	return 0;
}

static int grow_buckets(struct parsa_costlist *cl, uint32_t max_cost)
{
	size_t old = cl->head ? (size_t)cl->max_cost + 1 : 0;

	if (max_cost == UINT32_MAX ||
	    grow_array((void **)&cl->head, (size_t)max_cost + 1,
		       sizeof(uint32_t)))
		return -1;
	for (size_t c = old; c <= max_cost; c++)
		cl->head[c] = PARSA_CL_NIL;
	cl->max_cost = max_cost;
	return 0;
}

int parsa_costlist_init(struct parsa_costlist *cl, uint32_t n,
			uint32_t max_cost, struct parsa_err *err)
{
	memset(cl, 0, sizeof(*cl));
	return parsa_costlist_reserve(cl, n, max_cost, err);
}

int parsa_costlist_reserve(struct parsa_costlist *cl, uint32_t n,
			   uint32_t max_cost, struct parsa_err *err)
{
	uint32_t cap = n > cl->n ? n : cl->n;
	uint32_t mc = max_cost > cl->max_cost ? max_cost : cl->max_cost;
	int rc = 0;

	if (!cl->cost) { /* no items yet: pick the widths */
		cl->narrow = fits_narrow(cap, mc);
		cl->cost8 = cl->narrow && mc <= PARSA_CL_COST8_MAX;
	} else if (cl->narrow && !fits_narrow(cap, mc)) {
		rc = widen(cl);
	} else if (cl->cost8 && mc > PARSA_CL_COST8_MAX) {
		rc = widen_cost8(cl);
	}
	if (!rc && (cap > cl->n || !cl->cost))
		rc = grow_items(cl, cap);
	if (rc)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a cost list of %u items", n);
	if ((max_cost > cl->max_cost || !cl->head) &&
	    grow_buckets(cl, max_cost))
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %u cost buckets", max_cost);
	return 0;
}

void parsa_costlist_release(struct parsa_costlist *cl)
{
	if (!cl)
		return;
	free(cl->cost);
	free(cl->prev);
	free(cl->next);
	free(cl->head);
	memset(cl, 0, sizeof(*cl));
}

void parsa_costlist_build(struct parsa_costlist *cl, const uint32_t *costs,
			  uint32_t n_items)
{
	assert(n_items <= cl->n);
	for (uint32_t c = 0; c <= cl->top; c++)
		cl->head[c] = PARSA_CL_NIL;
	CL_DISPATCH(build, cl, costs, n_items);
	cl->nbuilt = n_items;
	cl->live = n_items;
	cl->min = 0;
}

uint32_t parsa_costlist_min_cost(struct parsa_costlist *cl)
{
	if (cl->live == 0)
		return UINT32_MAX;
	while (cl->head[cl->min] == PARSA_CL_NIL) {
		cl->min++;
		assert(cl->min <= cl->top);
	}
	return cl->min;
}

uint32_t parsa_costlist_take_min(struct parsa_costlist *cl)
{
	uint32_t u;

	if (parsa_costlist_min_cost(cl) == UINT32_MAX)
		return PARSA_CL_NIL;
	u = cl->head[cl->min];
	parsa_costlist_remove(cl, u);
	return u;
}

void parsa_costlist_remove(struct parsa_costlist *cl, uint32_t u)
{
	assert(u < cl->n && parsa_costlist_in(cl, u));
	CL_DISPATCH(remove, cl, u);
	cl->live--;
}

void parsa_costlist_drop_front(struct parsa_costlist *cl, uint32_t c)
{
	assert(c <= cl->top && cl->head[c] != PARSA_CL_NIL);
	CL_DISPATCH(drop_front, cl, c);
	cl->live--;
}

void parsa_costlist_decrement(struct parsa_costlist *cl, uint32_t u)
{
	assert(u < cl->n && parsa_costlist_in(cl, u) &&
	       parsa_costlist_cost(cl, u) > 0);
	CL_DISPATCH(decrement, cl, u);
}
