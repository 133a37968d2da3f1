/*
 * base_greedy: the greedy choice rule (see base_greedy.h).
 */
#include "base_greedy.h"

uint32_t base_greedy_pick(uint32_t k, const uint64_t *cost,
			  const uint64_t *size, uint64_t cap)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t i = 0; i < k; i++) {
		if (size[i] >= cap)
			continue;
		if (best == UINT32_MAX || cost[i] < cost[best] ||
		    (cost[i] == cost[best] && size[i] < size[best]))
			best = i;
	}
	return best;
}

uint32_t base_greedy_smallest(uint32_t k, const uint64_t *size)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < k; i++)
		if (size[i] < size[best])
			best = i;
	return best;
}
