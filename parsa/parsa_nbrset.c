/*
 * parsa_nbrset: the neighbor sets S_1..S_k as one k-bit mask per feature
 * (see parsa_nbrset.h).  Masks are ceil(k/64) words, feature-major; size[]
 * is kept equal to the per-set bit counts by every writer here.  Bit loops
 * visit only set bits (ctz), so all costs are O(words + set bits).
 */
#include "parsa_nbrset.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base_prefetch.h"
#include "base_huge.h"

/* The valid bits of the last word of a mask (bits beyond k are zero). */
static uint64_t last_word_mask(uint32_t k)
{
	uint32_t r = k & 63;

	return r ? (1ULL << r) - 1 : ~0ULL;
}

/* size[base + b] += delta for every set bit b of x. */
static void count_bits(uint64_t *size, uint32_t base, uint64_t x, int delta)
{
	while (x) {
		size[base + (uint32_t)__builtin_ctzll(x)] += (uint64_t)delta;
		x &= x - 1;
	}
}

int parsa_nbrset_init(struct parsa_nbrset *s, uint32_t n_feat, uint32_t k,
		      struct parsa_err *err)
{
	uint32_t words = k / 64 + (k % 64 != 0);
	uint64_t n_words = (uint64_t)n_feat * words;

	memset(s, 0, sizeof(*s));
	if (k == 0)
		return parsa_fail(err, PARSA_EINVAL, "neighbor sets: k must be >= 1");
	if (n_words > SIZE_MAX / sizeof(uint64_t))
		return parsa_fail(err, PARSA_ENOMEM,
				  "neighbor sets too large (%u features, k=%u)",
				  n_feat, k);
	s->bits = calloc(n_words ? (size_t)n_words : 1, sizeof(uint64_t));
	base_huge(s->bits, (size_t)n_words * sizeof(uint64_t));
	s->size = calloc(k, sizeof(uint64_t));
	if (!s->bits || !s->size) {
		parsa_nbrset_release(s);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for neighbor sets (%u features, k=%u)",
				  n_feat, k);
	}
	s->n_feat = n_feat;
	s->k = k;
	s->words = words;
	return 0;
}

void parsa_nbrset_release(struct parsa_nbrset *s)
{
	if (!s)
		return;
	free(s->bits);
	free(s->size);
	memset(s, 0, sizeof(*s));
}

void parsa_nbrset_clear(struct parsa_nbrset *s)
{
	memset(s->bits, 0, (size_t)s->n_feat * s->words * sizeof(uint64_t));
	memset(s->size, 0, (size_t)s->k * sizeof(uint64_t));
}

void parsa_nbrset_copy(struct parsa_nbrset *dst, const struct parsa_nbrset *src)
{
	assert(dst->n_feat == src->n_feat && dst->k == src->k);
	memcpy(dst->bits, src->bits,
	       (size_t)src->n_feat * src->words * sizeof(uint64_t));
	memcpy(dst->size, src->size, (size_t)src->k * sizeof(uint64_t));
}

uint32_t parsa_nbrset_count(const struct parsa_nbrset *s, uint32_t v)
{
	const uint64_t *m = parsa_nbrset_mask(s, v);
	uint32_t c = 0;

	for (uint32_t w = 0; w < s->words; w++)
		c += parsa_popcount64(m[w]);
	return c;
}

uint32_t parsa_nbrset_or_mask(struct parsa_nbrset *s, uint32_t v,
			      const uint64_t *mask)
{
	uint64_t *m = s->bits + (uint64_t)v * s->words;
	uint32_t added = 0;

	assert(v < s->n_feat);
	for (uint32_t w = 0; w < s->words; w++) {
		uint64_t in = mask[w];
		uint64_t fresh;

		if (w + 1 == s->words)
			in &= last_word_mask(s->k);
		fresh = in & ~m[w];
		if (!fresh)
			continue;
		m[w] |= fresh;
		added += parsa_popcount64(fresh);
		count_bits(s->size, w * 64, fresh, 1);
	}
	return added;
}

void parsa_nbrset_set_mask(struct parsa_nbrset *s, uint32_t v,
			   const uint64_t *mask)
{
	uint64_t *m = s->bits + (uint64_t)v * s->words;

	assert(v < s->n_feat);
	for (uint32_t w = 0; w < s->words; w++) {
		uint64_t in = mask[w];

		if (w + 1 == s->words)
			in &= last_word_mask(s->k);
		count_bits(s->size, w * 64, m[w] & ~in, -1);
		count_bits(s->size, w * 64, in & ~m[w], 1);
		m[w] = in;
	}
}

/* Words of a mask counted bit by bit (ctz) up to this many set bits; a
 * denser word (a random placement's: about 35 of 64 at 100M nonzeros)
 * is counted a byte at a time into byte-wide counters (count_dense). */
#define COUNT_SPARSE_BITS 6

/* spread[b]: byte l = bit l of b (count_dense's table). */
#define SP1(b)                                                              \
	((uint64_t)((b) & 1) | (uint64_t)((b) >> 1 & 1) << 8 |               \
	 (uint64_t)((b) >> 2 & 1) << 16 | (uint64_t)((b) >> 3 & 1) << 24 |   \
	 (uint64_t)((b) >> 4 & 1) << 32 | (uint64_t)((b) >> 5 & 1) << 40 |   \
	 (uint64_t)((b) >> 6 & 1) << 48 | (uint64_t)((b) >> 7 & 1) << 56)
#define SP4(b) SP1(b), SP1((b) + 1), SP1((b) + 2), SP1((b) + 3)
#define SP16(b) SP4(b), SP4((b) + 4), SP4((b) + 8), SP4((b) + 12)
#define SP64(b) SP16(b), SP16((b) + 16), SP16((b) + 32), SP16((b) + 48)
static const uint64_t spread[256] = { SP64(0), SP64(64), SP64(128),
				      SP64(192) };

/* size[8 i + l] += byte l of acc[i] for the bits 8 i + l < k (those
 * above k are never set); acc zeroed. */
static void count_flush(uint64_t *size, uint64_t *acc, uint32_t k)
{
	for (uint32_t i = 0; 8 * i < k; i++) {
		for (uint32_t l = 0; l < 8 && 8 * i + l < k; l++)
			size[8 * i + l] += (acc[i] >> (8 * l)) & 255;
		acc[i] = 0;
	}
}

void parsa_nbrset_count_range(const struct parsa_nbrset *s, uint32_t lo,
			      uint32_t hi, uint64_t *size)
{
	/* acc[8 w + i]: 8 byte-wide counters of bits 64 w + 8 i + 0..7 of
	 * the dense words, flushed every 255 features (one word each) */
	uint64_t acc[8 * 64];
	uint32_t words = s->words, dense = words <= 64, in_acc = 0;
	const uint64_t *m = s->bits + (uint64_t)lo * words;

	assert(lo <= hi && hi <= s->n_feat);
	if (dense)
		memset(acc, 0, (size_t)words * 8 * sizeof(uint64_t));
	for (uint32_t v = lo; v < hi; v++, m += words) {
		for (uint32_t w = 0; w < words; w++) {
			uint64_t x = m[w];

			if (!dense || parsa_popcount64(x) <= COUNT_SPARSE_BITS) {
				count_bits(size, w * 64, x, 1);
				continue;
			}
			for (uint32_t i = 0; i < 8; i++)
				acc[8 * w + i] += spread[(x >> (8 * i)) & 255];
		}
		if (dense && ++in_acc == 255) {
			count_flush(size, acc, s->k);
			in_acc = 0;
		}
	}
	if (dense)
		count_flush(size, acc, s->k);
}

void parsa_nbrset_recount(struct parsa_nbrset *s)
{
	memset(s->size, 0, (size_t)s->k * sizeof(uint64_t));
	parsa_nbrset_count_range(s, 0, s->n_feat, s->size);
}

void parsa_nbrset_gather(struct parsa_nbrset *slice,
			 const struct parsa_nbrset *src, const uint32_t *feat)
{
	size_t row = (size_t)src->words * sizeof(uint64_t);

	assert(slice->k == src->k);
	for (uint32_t l = 0; l < slice->n_feat; l++) {
		assert(feat[l] < src->n_feat);
		memcpy(slice->bits + (uint64_t)l * slice->words,
		       parsa_nbrset_mask(src, feat[l]), row);
	}
	parsa_nbrset_recount(slice);
}

/* The first l in [0, n) with feat[l] >= v (feat increasing). */
static uint32_t lower_bound(const uint32_t *feat, uint32_t n, uint32_t v)
{
	uint32_t a = 0, b = n;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (feat[m] < v)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

uint64_t parsa_nbrset_scatter_or_range(struct parsa_nbrset *dst,
				       const struct parsa_nbrset *slice,
				       const uint32_t *feat, uint32_t lo,
				       uint32_t hi, uint64_t *size_add)
{
	uint32_t a = lower_bound(feat, slice->n_feat, lo);
	uint32_t b = lower_bound(feat, slice->n_feat, hi);
	uint64_t added = 0;

	assert(slice->k == dst->k);
	for (uint32_t l = a; l < b; l++) {
		uint64_t *m = dst->bits + (uint64_t)feat[l] * dst->words;
		const uint64_t *in = parsa_nbrset_mask(slice, l);

		assert(feat[l] < dst->n_feat);
		if (l + 16 < b) /* a random line of dst each at scale */
			base_prefetch_w(dst->bits + (uint64_t)feat[l + 16] * dst->words);
		for (uint32_t w = 0; w < dst->words; w++) {
			uint64_t fresh = in[w] & ~m[w];

			if (w + 1 == dst->words)
				fresh &= last_word_mask(dst->k);
			if (!fresh)
				continue;
			m[w] |= fresh;
			added += parsa_popcount64(fresh);
			count_bits(size_add, w * 64, fresh, 1);
		}
	}
	return added;
}

uint64_t parsa_nbrset_scatter_or(struct parsa_nbrset *dst,
				 const struct parsa_nbrset *slice,
				 const uint32_t *feat)
{
	uint64_t added = 0;

	assert(slice->k == dst->k);
	for (uint32_t l = 0; l < slice->n_feat; l++)
		added += parsa_nbrset_or_mask(dst, feat[l],
					      parsa_nbrset_mask(slice, l));
	return added;
}

void parsa_sets64_release(struct parsa_sets64 *s)
{
	if (!s)
		return;
	free(s->order);
	free(s->start);
	free(s->mask);
	memset(s, 0, sizeof(*s));
}

int parsa_sets64_init(struct parsa_sets64 *s, const struct parsa_graph *g,
		      uint32_t k, const uint32_t *part, struct parsa_err *err)
{
	uint64_t nnz = parsa_graph_nnz(g);

	memset(s, 0, sizeof(*s));
	if (k == 0)
		return parsa_fail(err, PARSA_EINVAL, "k must be >= 1");
	for (uint32_t r = 0; r < g->n_rows; r++)
		if (part[r] >= k)
			return parsa_fail(err, PARSA_EINVAL,
					  "example %u has part %u, but k=%u",
					  r, part[r], k);
	for (uint64_t e = 0; e < nnz; e++)
		if (g->col[e] >= g->n_cols)
			return parsa_fail(err, PARSA_EINVAL,
					  "used sets: a feature is out of range");
	s->k = k;
	s->groups = (k + 63) / 64;
	s->n_feat = g->n_cols;
	s->order = malloc(((size_t)g->n_rows + 1) * sizeof(*s->order));
	s->start = calloc((size_t)s->groups + 2, sizeof(*s->start));
	s->mask = malloc(((size_t)g->n_cols + 1) * sizeof(*s->mask));
	if (!s->order || !s->start || !s->mask) {
		parsa_sets64_release(s);
		return parsa_fail(err, PARSA_ENOMEM,
				  "used sets: out of memory (%u examples)",
				  g->n_rows);
	}
	for (uint32_t r = 0; r < g->n_rows; r++)
		s->start[(part[r] >> 6) + 2]++;
	for (uint32_t q = 0; q < s->groups; q++)
		s->start[q + 2] += s->start[q + 1];
	for (uint32_t r = 0; r < g->n_rows; r++)
		s->order[s->start[(part[r] >> 6) + 1]++] = r;
	/* start[q + 1] moved to the end of group q: start[q] is its start */
	return 0;
}

/* Rows ahead whose columns and masks parsa_sets64_group fetches. */
#define SETS64_AHEAD 4

void parsa_sets64_group_range(struct parsa_sets64 *s,
			      const struct parsa_graph *g,
			      const uint32_t *part, uint32_t q, uint32_t lo,
			      uint32_t hi)
{
	uint64_t b = s->start[q], end = s->start[q + 1];
	int all = lo == 0 && hi == s->n_feat;

	memset(s->mask + lo, 0, (size_t)(hi - lo) * sizeof(*s->mask));
	for (uint64_t j = b; j < end; j++) {
		uint32_t r = s->order[j];
		uint64_t bit = 1ULL << (part[r] & 63);

		if (j + 2 * SETS64_AHEAD < end)
			base_prefetch(&g->row_ptr[s->order[j + 2 * SETS64_AHEAD]]);
		if (j + SETS64_AHEAD < end) {
			uint32_t a = s->order[j + SETS64_AHEAD];

			for (uint64_t e = g->row_ptr[a]; e < g->row_ptr[a + 1];
			     e += 16)
				base_prefetch(&g->col[e]);
		}
		if (j + 1 < end) {
			uint32_t a = s->order[j + 1];

			for (uint64_t e = g->row_ptr[a]; e < g->row_ptr[a + 1];
			     e++)
				if (all || (g->col[e] >= lo && g->col[e] < hi))
					base_prefetch_w(&s->mask[g->col[e]]);
		}
		if (all) {
			for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1];
			     e++)
				s->mask[g->col[e]] |= bit;
			continue;
		}
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++) {
			uint32_t v = g->col[e];

			if (v >= lo && v < hi)
				s->mask[v] |= bit;
		}
	}
}

void parsa_sets64_group(struct parsa_sets64 *s, const struct parsa_graph *g,
			const uint32_t *part, uint32_t q)
{
	parsa_sets64_group_range(s, g, part, q, 0, s->n_feat);
}
