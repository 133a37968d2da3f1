/*
 * part_masks: helpers shared by the drivers that keep neighbor sets on the
 * parameter server (part_parallel.h, part_stream.h).
 *
 * On the server a k-bit mask is ceil(k/8) bytes, byte j = bits 8j..8j+7
 * (table width); in memory it is a parsa_nbrset mask of ceil(k/64) words.
 */
#ifndef PART_MASKS_H
#define PART_MASKS_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

/* Mask words (nbrset layout) from width bytes; bits >= k dropped. */
void part_mask_decode(uint64_t *w, uint32_t words, uint32_t k,
		      const unsigned char *v, uint32_t width);

/*
 * n masks at once: w[l * words ..] from v[l * width ..] for l < n, as
 * part_mask_decode of each (one tight loop per width when k <= 64).
 */
void part_mask_decode_n(uint64_t *w, uint32_t words, uint32_t k,
			const unsigned char *v, uint32_t width, size_t n);

/* width bytes from mask words (the low 8 * width bits). */
void part_mask_encode(unsigned char *v, uint32_t width, const uint64_t *w);

/*
 * Grow *p (capacity *cap elements of sz bytes) to hold n elements; the
 * contents are kept, and so is *p on failure (PARSA_ENOMEM).
 */
int part_grow(void **p, size_t *cap, size_t n, size_t sz,
	      struct parsa_err *err);

#endif /* PART_MASKS_H */
