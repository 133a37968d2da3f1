/*
 * parsa_costlist: the bucketed doubly-linked cost list of thesis 9.4.1
 * (Figure 9.4), for one partition i over the n examples of a block.
 *
 * cost[u] = |N(u) \ S_i| for every item u still in the list.  Items with the
 * same cost form one doubly-linked bucket with head[c]; `min` is a lower
 * bound of the smallest non-empty bucket and only moves up past empty
 * buckets, so take_min, remove and decrement are O(1) amortised (min rises at
 * most max_cost + #decrements times in total).
 *
 * Tie-breaking (documented contract): build() fills each bucket in increasing
 * item order; decrement() puts the item at the *front* of its new bucket, so
 * among equal costs the most recently decremented item is taken first (it
 * shares features with what the partition just took); take_min() returns the
 * front of the lowest bucket.
 *
 * Invariants: item u is in the list iff cost[u] is not OUT (except items
 * dropped by drop_front() since the last build, which are out whatever
 * their cost reads); it is then in bucket cost[u].  There is no separate
 * flag: a removal writes only the cost line it read, and Algorithm 13
 * removes every row from k lists.  live == number of items in the list;
 * every bucket below min and above top is empty; top <= max_cost.
 *
 * Width: cost, prev and next are uint16_t ("narrow", NIL and OUT stored as
 * 0xFFFF) while ids and costs fit, n <= PARSA_CL_NARROW_MAX + 1 and
 * max_cost <= PARSA_CL_NARROW_MAX (a block of Algorithm 13 is at most
 * 32768 rows by default), else uint32_t.  Algorithm 13 keeps k lists over
 * the same block: halving their footprint is measured to pay (-5% to -20%
 * of partition U at k = 16..64).  The accessors below hide the width;
 * reserve() widens, keeping the content, when a larger n or max_cost needs
 * it, and never narrows.  A narrow list's costs are uint8_t (OUT 0xFF)
 * while max_cost <= PARSA_CL_COST8_MAX ("cost8": rows of up to 254
 * features, 1/6 of the lists' bytes less; reserve() widens them to
 * uint16_t past it).
 * Ownership: owns its arrays.  Not thread-safe.
 */
#ifndef PARSA_COSTLIST_H
#define PARSA_COSTLIST_H

#include <stdint.h>

#include "parsa_err.h"

#define PARSA_CL_NIL UINT32_MAX
#define PARSA_CL_OUT UINT32_MAX /* cost of an item not in the list */
#define PARSA_CL_NARROW_MAX 65534u /* largest id and cost of a narrow list */
#define PARSA_CL_COST8_MAX 254u    /* largest cost of a cost8 list */

struct parsa_costlist {
	uint32_t n;        /* capacity in items: ids 0..n-1 */
	uint32_t max_cost; /* largest cost allowed: buckets 0..max_cost */
	uint32_t live;     /* items currently in the list */
	uint32_t min;      /* no non-empty bucket below this */
	int narrow;        /* 1: the arrays below hold uint16_t, else uint32_t */
	int cost8;         /* narrow and cost holds uint8_t */
	void *cost;        /* cost[u], or OUT */
	void *prev;        /* prev[u] in its bucket, or NIL */
	void *next;        /* next[u] in its bucket, or NIL */
	uint32_t *head;    /* head[c]: first item of bucket c, or NIL */
	uint32_t top;      /* every bucket above top is empty */
	uint32_t nbuilt;   /* items of the last build: those past it are out */
};

/* Element u of one of the arrays, NIL/OUT as UINT32_MAX. */
static inline uint32_t parsa_costlist_at(const struct parsa_costlist *cl,
					 const void *a, uint32_t u)
{
	if (cl->narrow) {
		uint16_t x = ((const uint16_t *)a)[u];

		return x == 0xFFFF ? UINT32_MAX : x;
	}
	return ((const uint32_t *)a)[u];
}

/* cost[u] (PARSA_CL_OUT when u is not in the list); u < n. */
static inline uint32_t parsa_costlist_cost(const struct parsa_costlist *cl,
					   uint32_t u)
{
	if (cl->cost8) {
		uint8_t x = ((const uint8_t *)cl->cost)[u];

		return x == 0xFF ? UINT32_MAX : x;
	}
	return parsa_costlist_at(cl, cl->cost, u);
}

/* 1 while item u (u < n) is in the list. */
static inline int parsa_costlist_in(const struct parsa_costlist *cl,
				    uint32_t u)
{
	return parsa_costlist_cost(cl, u) != PARSA_CL_OUT;
}

/* The item after / before u in its bucket, or PARSA_CL_NIL; u in the list. */
static inline uint32_t parsa_costlist_next(const struct parsa_costlist *cl,
					   uint32_t u)
{
	return parsa_costlist_at(cl, cl->next, u);
}

static inline uint32_t parsa_costlist_prev(const struct parsa_costlist *cl,
					   uint32_t u)
{
	return parsa_costlist_at(cl, cl->prev, u);
}

/* The first item of bucket c (c <= max_cost), or PARSA_CL_NIL. */
static inline uint32_t parsa_costlist_front(const struct parsa_costlist *cl,
					    uint32_t c)
{
	return cl->head[c];
}

/* Stage cost c (<= max_cost) of item u (< n) for a build from NULL; the
 * list must not be in use (it is rebuilt next). */
static inline void parsa_costlist_stage(struct parsa_costlist *cl, uint32_t u,
					uint32_t c)
{
	if (cl->cost8)
		((uint8_t *)cl->cost)[u] = (uint8_t)c;
	else if (cl->narrow)
		((uint16_t *)cl->cost)[u] = (uint16_t)c;
	else
		((uint32_t *)cl->cost)[u] = c;
}

/* Allocate for n items and costs up to max_cost; list empty. */
int parsa_costlist_init(struct parsa_costlist *cl, uint32_t n,
			uint32_t max_cost, struct parsa_err *err);

/*
 * Grow the capacity to at least n items and costs up to max_cost (never
 * shrinks; widens the arrays if n or max_cost no longer fit narrow); the
 * list's content is kept.  0 or PARSA_ENOMEM (the list then stays usable
 * with its old capacity).
 */
int parsa_costlist_reserve(struct parsa_costlist *cl, uint32_t n,
			   uint32_t max_cost, struct parsa_err *err);

/* Free and zero.  cl may be NULL. */
void parsa_costlist_release(struct parsa_costlist *cl);

/*
 * Reset to hold items 0..n_items-1 (n_items <= n) with costs[u]
 * (each <= max_cost), by counting sort: O(n_items + largest cost of this
 * and the previous build).  costs NULL: the costs staged with
 * parsa_costlist_stage() for every item below n_items.
 */
void parsa_costlist_build(struct parsa_costlist *cl, const uint32_t *costs,
			  uint32_t n_items);

/* Remove and return an item of lowest cost; PARSA_CL_NIL if empty. */
uint32_t parsa_costlist_take_min(struct parsa_costlist *cl);

/* Lowest cost present (UINT32_MAX if empty); moves min up if needed. */
uint32_t parsa_costlist_min_cost(struct parsa_costlist *cl);

/* Remove item u (must be in the list). */
void parsa_costlist_remove(struct parsa_costlist *cl, uint32_t u);

/*
 * Remove the front item of bucket c (non-empty) without marking it out:
 * cheaper than remove() (the item's own cost and prev are not touched), for
 * items the caller will never pass to this list again before the next
 * build (Algorithm 13's rows placed in another partition).  The dropped
 * item's in/cost are unspecified until then; live and every other item
 * are as after remove().
 */
void parsa_costlist_drop_front(struct parsa_costlist *cl, uint32_t c);

/* cost[u] -= 1 (u in the list, cost[u] > 0), keeping buckets ordered. */
void parsa_costlist_decrement(struct parsa_costlist *cl, uint32_t u);

#endif /* PARSA_COSTLIST_H */
