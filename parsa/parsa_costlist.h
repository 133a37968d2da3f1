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
 * Invariants: item u is in the list iff cost[u] != PARSA_CL_OUT; it is then
 * in bucket cost[u] (no separate flag: a removal writes only the cost line
 * it read, and Algorithm 13 removes every row from k lists);
 * live == number of items in the list; every bucket below min and above
 * top is empty; top <= max_cost.
 * Ownership: owns its arrays.  Not thread-safe.
 */
#ifndef PARSA_COSTLIST_H
#define PARSA_COSTLIST_H

#include <stdint.h>

#include "parsa_err.h"

#define PARSA_CL_NIL UINT32_MAX
#define PARSA_CL_OUT UINT32_MAX /* cost[u] of an item not in the list */

struct parsa_costlist {
	uint32_t n;        /* capacity in items: ids 0..n-1 */
	uint32_t max_cost; /* largest cost allowed: buckets 0..max_cost */
	uint32_t live;     /* items currently in the list */
	uint32_t min;      /* no non-empty bucket below this */
	uint32_t *cost;    /* cost[u], or PARSA_CL_OUT */
	uint32_t *prev;    /* prev[u] in its bucket, or NIL */
	uint32_t *next;    /* next[u] in its bucket, or NIL */
	uint32_t *head;    /* head[c]: first item of bucket c, or NIL */
	uint32_t top;      /* every bucket above top is empty */
	uint32_t nbuilt;   /* items of the last build: those past it are out */
};

/* 1 while item u (u < n) is in the list. */
static inline int parsa_costlist_in(const struct parsa_costlist *cl,
				    uint32_t u)
{
	return cl->cost[u] != PARSA_CL_OUT;
}

/* Allocate for n items and costs up to max_cost; list empty. */
int parsa_costlist_init(struct parsa_costlist *cl, uint32_t n,
			uint32_t max_cost, struct parsa_err *err);

/*
 * Grow the capacity to at least n items and costs up to max_cost (never
 * shrinks); the list's content is kept.  0 or PARSA_ENOMEM (the list then
 * stays usable with its old capacity).
 */
int parsa_costlist_reserve(struct parsa_costlist *cl, uint32_t n,
			   uint32_t max_cost, struct parsa_err *err);

/* Free and zero.  cl may be NULL. */
void parsa_costlist_release(struct parsa_costlist *cl);

/*
 * Reset to hold items 0..n_items-1 (n_items <= n) with costs[u]
 * (each <= max_cost), by counting sort: O(n_items + largest cost of this
 * and the previous build).  costs may be cl->cost itself.
 */
void parsa_costlist_build(struct parsa_costlist *cl, const uint32_t *costs,
			  uint32_t n_items);

/* Remove and return an item of lowest cost; PARSA_CL_NIL if empty. */
uint32_t parsa_costlist_take_min(struct parsa_costlist *cl);

/* Lowest cost present (UINT32_MAX if empty); moves min up if needed. */
uint32_t parsa_costlist_min_cost(struct parsa_costlist *cl);

/* Remove item u (must be in the list). */
void parsa_costlist_remove(struct parsa_costlist *cl, uint32_t u);

/* cost[u] -= 1 (u in the list, cost[u] > 0), keeping buckets ordered. */
void parsa_costlist_decrement(struct parsa_costlist *cl, uint32_t u);

#endif /* PARSA_COSTLIST_H */
