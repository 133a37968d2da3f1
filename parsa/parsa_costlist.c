/*
 * parsa_costlist: the bucketed doubly-linked cost list of thesis 9.4.1
 * (see parsa_costlist.h).  One bucket (head[c]) per cost value c; items are
 * linked through prev/next arrays indexed by item id, so every operation is
 * a few array writes.  `top` bounds the buckets in use so that rebuilding
 * for a block only touches the buckets that block (or the last) used.
 */
#include "parsa_costlist.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

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

static int grow_items(struct parsa_costlist *cl, uint32_t n)
{
	size_t m = n ? n : 1;

	if (grow_array((void **)&cl->cost, m, sizeof(uint32_t)) ||
	    grow_array((void **)&cl->prev, m, sizeof(uint32_t)) ||
	    grow_array((void **)&cl->next, m, sizeof(uint32_t)))
		return -1;
	/* new items start outside the list */
	for (uint32_t u = cl->n; u < n; u++)
		cl->cost[u] = PARSA_CL_OUT;
	cl->n = n;
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
	if ((n > cl->n || !cl->cost) && grow_items(cl, n))
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

/* Link u at the front of bucket c (cost[u] already c). */
static inline void push_front(struct parsa_costlist *cl, uint32_t u,
			      uint32_t c)
{
	uint32_t h = cl->head[c];

	cl->prev[u] = PARSA_CL_NIL;
	cl->next[u] = h;
	if (h != PARSA_CL_NIL)
		cl->prev[h] = u;
	cl->head[c] = u;
}

/* Unlink u from its bucket (u stays marked in). */
static inline void unlink_item(struct parsa_costlist *cl, uint32_t u)
{
	uint32_t p = cl->prev[u], nx = cl->next[u];

	if (p != PARSA_CL_NIL)
		cl->next[p] = nx;
	else
		cl->head[cl->cost[u]] = nx;
	if (nx != PARSA_CL_NIL)
		cl->prev[nx] = p;
}

void parsa_costlist_build(struct parsa_costlist *cl, const uint32_t *costs,
			  uint32_t n_items)
{
	uint32_t top = 0;

	assert(n_items <= cl->n);
	for (uint32_t c = 0; c <= cl->top; c++)
		cl->head[c] = PARSA_CL_NIL;
	for (uint32_t u = n_items; u < cl->nbuilt; u++)
		cl->cost[u] = PARSA_CL_OUT;
	/* backwards with push_front: each bucket ends in increasing order */
	for (uint32_t u = n_items; u-- > 0;) {
		uint32_t c = costs[u];

		assert(c <= cl->max_cost);
		cl->cost[u] = c;
		if (c > top) {
			/* buckets above the old top are already NIL */
			top = c;
		}
		push_front(cl, u, c);
	}
	cl->top = top;
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
	assert(u < cl->n && cl->cost[u] != PARSA_CL_OUT);
	unlink_item(cl, u);
	cl->cost[u] = PARSA_CL_OUT;
	cl->live--;
}

void parsa_costlist_decrement(struct parsa_costlist *cl, uint32_t u)
{
	uint32_t c = cl->cost[u];

	assert(u < cl->n && c != PARSA_CL_OUT && c > 0);
	unlink_item(cl, u);
	cl->cost[u] = --c;
	push_front(cl, u, c);
	if (c < cl->min)
		cl->min = c;
}
