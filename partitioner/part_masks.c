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

/* One word from W <= 8 bytes; W a constant at every call site below, so
 * each loop of part_mask_decode_n is straight-line code. */
static inline __attribute__((always_inline)) void
decode_words(uint64_t *w, const unsigned char *v, size_t n, uint32_t W,
	     uint64_t keep)
{
	for (size_t l = 0; l < n; l++, v += W) {
		uint64_t x = 0;

		for (uint32_t j = 0; j < W; j++)
			x |= (uint64_t)v[j] << (8 * j);
		w[l] = x & keep;
	}
}

void part_mask_decode_n(uint64_t *w, uint32_t words, uint32_t k,
			const unsigned char *v, uint32_t width, size_t n)
{
	uint64_t keep = k % 64 ? (1ULL << (k % 64)) - 1 : ~0ULL;

	if (words != 1 || width > 8) {
		for (size_t l = 0; l < n; l++)
			part_mask_decode(w + l * words, words, k,
					 v + l * width, width);
		return;
	}
	switch (width) {
	case 1: decode_words(w, v, n, 1, keep); break;
	case 2: decode_words(w, v, n, 2, keep); break;
	case 3: decode_words(w, v, n, 3, keep); break;
	case 4: decode_words(w, v, n, 4, keep); break;
	case 5: decode_words(w, v, n, 5, keep); break;
	case 6: decode_words(w, v, n, 6, keep); break;
	case 7: decode_words(w, v, n, 7, keep); break;
	default: decode_words(w, v, n, width, keep); break;
	}
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
