/* part_masks: see part_masks.h. */
#include "part_masks.h"

#include <stdlib.h>
#include <string.h>

/* Mask words (nbrset layout) from width bytes; bits >= k dropped. */
void part_mask_decode(uint64_t *w, uint32_t words, uint32_t k,
		      const unsigned char *v, uint32_t width)
{
	memset(w, 0, (size_t)words * sizeof(uint64_t));
	for (uint32_t j = 0; j < width; j++)
		w[j / 8] |= (uint64_t)v[j] << (8 * (j % 8));
	if (k % 64)
		w[words - 1] &= (1ULL << (k % 64)) - 1;
}

void part_mask_encode(unsigned char *v, uint32_t width, const uint64_t *w)
{
	for (uint32_t j = 0; j < width; j++)
		v[j] = (unsigned char)(w[j / 8] >> (8 * (j % 8)));
}

/* Grow *p to hold n elements of size sz (kept on failure). */
int part_grow(void **p, size_t *cap, size_t n, size_t sz,
	      struct parsa_err *err)
{
	void *q;

	if (n <= *cap && *p)
		return 0;
	q = realloc(*p, (n ? n : 1) * sz);
	if (!q)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %zu block entries", n);
	*p = q;
	*cap = n;
	return 0;
}
