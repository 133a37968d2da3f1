/*
 * base_greedy: the greedy choice rule shared by every one-pass placement
 * of an example (the streaming greedy baseline of parsa_baseline, the
 * incremental assignment of the HTTP service).
 *
 * Among the parts whose size is below the cap, the one with the lowest
 * cost (the new features the example would add to it); ties: the part
 * with fewer examples, then the lower index.
 */
#ifndef BASE_GREEDY_H
#define BASE_GREEDY_H

#include <stdint.h>

/* The part i in [0, k) chosen by the rule above from cost[i] and size[i],
 * or UINT32_MAX when every part has size[i] >= cap. */
uint32_t base_greedy_pick(uint32_t k, const uint64_t *cost,
			  const uint64_t *size, uint64_t cap);

/* The smallest part (ties: the lower index); k >= 1. */
uint32_t base_greedy_smallest(uint32_t k, const uint64_t *size);

#endif /* BASE_GREEDY_H */
