/*
 * test_nbrset: the k-bit-per-feature neighbor sets for k around the word
 * boundaries (1, 63, 64, 65, 1024), against a byte-per-bit oracle.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "parsa_nbrset.h"
#include "parsa_metrics.h"
#include "parsa_rng.h"
#include "testutil.h"

static const uint32_t ks[] = {1, 2, 63, 64, 65, 127, 128, 1024};
#define NK (sizeof(ks) / sizeof(ks[0]))

/* size[] and the per-bit view agree with the oracle; no stray high bits. */
static void check_against(const struct parsa_nbrset *s, const uint8_t *o)
{
	for (uint32_t i = 0; i < s->k; i++) {
		uint64_t c = 0;

		for (uint32_t v = 0; v < s->n_feat; v++)
			c += o[(size_t)v * s->k + i];
		CHECK_INT(s->size[i], ==, c);
	}
	for (uint32_t v = 0; v < s->n_feat; v++) {
		uint32_t c = 0;

		for (uint32_t i = 0; i < s->k; i++) {
			CHECK_INT(parsa_nbrset_has(s, v, i), ==, o[(size_t)v * s->k + i]);
			c += o[(size_t)v * s->k + i];
		}
		CHECK_INT(parsa_nbrset_count(s, v), ==, c);
		if (s->k % 64)
			CHECK((parsa_nbrset_mask(s, v)[s->words - 1] >> (s->k % 64)) == 0);
	}
}

static void test_init_args(void)
{
	struct parsa_nbrset s;
	struct parsa_err err;

	parsa_err_clear(&err);
	CHECK_INT(parsa_nbrset_init(&s, 10, 0, &err), ==, PARSA_EINVAL);
	CHECK_INT(err.code, ==, PARSA_EINVAL);
	CHECK(s.bits == NULL);
	parsa_nbrset_release(&s);
	parsa_nbrset_release(NULL);
	for (size_t j = 0; j < NK; j++) {
		REQUIRE(parsa_nbrset_init(&s, 3, ks[j], NULL) == 0);
		CHECK_INT(s.words, ==, (ks[j] + 63) / 64);
		parsa_nbrset_release(&s);
	}
	REQUIRE(parsa_nbrset_init(&s, 0, 5, NULL) == 0); /* no features */
	parsa_nbrset_clear(&s);
	parsa_nbrset_recount(&s);
	parsa_nbrset_release(&s);
}

static void test_add_has_count(void)
{
	for (size_t j = 0; j < NK; j++) {
		uint32_t k = ks[j], nf = 7;
		struct parsa_nbrset s;
		uint8_t *o = calloc((size_t)nf * k, 1);
		struct parsa_rng r;

		REQUIRE(parsa_nbrset_init(&s, nf, k, NULL) == 0);
		parsa_rng_seed(&r, k);
		for (int t = 0; t < 3000; t++) {
			uint32_t v = (uint32_t)parsa_rng_below(&r, nf);
			uint32_t i = (uint32_t)parsa_rng_below(&r, k);
			int was = o[(size_t)v * k + i];

			CHECK_INT(parsa_nbrset_add(&s, v, i), ==, !was);
			o[(size_t)v * k + i] = 1;
		}
		/* the last partition and partition 0 explicitly */
		parsa_nbrset_add(&s, 0, k - 1);
		o[k - 1] = 1;
		parsa_nbrset_add(&s, nf - 1, 0);
		o[(size_t)(nf - 1) * k] = 1;
		check_against(&s, o);
		parsa_nbrset_recount(&s);
		check_against(&s, o);
		parsa_nbrset_clear(&s);
		memset(o, 0, (size_t)nf * k);
		check_against(&s, o);
		parsa_nbrset_release(&s);
		free(o);
	}
}

/* parsa_nbrset_count_range over random splits of the features into
 * ranges sums to the oracle's sizes (and leaves the sets alone): sparse
 * masks (counted bit by bit), dense and full ones (counted a byte at a
 * time, flushed every 255 features: 700 features cross that). */
static void test_count_range(void)
{
	static const uint32_t nfs[] = {41, 700};
	static const double fills[] = {0.03, 0.6, 1.0};

	for (size_t j = 0; j < NK * 6; j++) {
		uint32_t k = ks[j / 6], nf = nfs[j % 2];
		double fill = fills[j / 2 % 3];
		struct parsa_nbrset s;
		uint8_t *o = calloc((size_t)nf * k, 1);
		uint64_t *size = calloc(k, sizeof(uint64_t));
		struct parsa_rng r;

		REQUIRE(parsa_nbrset_init(&s, nf, k, NULL) == 0);
		parsa_rng_seed(&r, 7 * k + j + 1);
		for (uint32_t v = 0; v < nf; v++)
			for (uint32_t i = 0; i < k; i++)
				if (fill >= 1.0 ||
				    parsa_rng_below(&r, 1000) < fill * 1000) {
					parsa_nbrset_add(&s, v, i);
					o[(size_t)v * k + i] = 1;
				}
		for (int split = 0; split < 20; split++) {
			uint32_t lo = 0;

			memset(size, 0, k * sizeof(uint64_t));
			while (lo < nf) { /* ranges of 0..nf-lo features */
				uint32_t hi = lo + (uint32_t)parsa_rng_below(
							   &r, nf - lo + 1);

				parsa_nbrset_count_range(&s, lo, hi, size);
				lo = hi;
			}
			parsa_nbrset_count_range(&s, nf, nf, size);
			for (uint32_t i = 0; i < k; i++) {
				uint64_t c = 0;

				for (uint32_t v = 0; v < nf; v++)
					c += o[(size_t)v * k + i];
				CHECK_INT(size[i], ==, c);
			}
		}
		check_against(&s, o);
		parsa_nbrset_release(&s);
		free(size);
		free(o);
	}
}

static void test_or_and_set_mask(void)
{
	for (size_t j = 0; j < NK; j++) {
		uint32_t k = ks[j], nf = 5, words = (k + 63) / 64;
		struct parsa_nbrset s;
		uint8_t *o = calloc((size_t)nf * k, 1);
		uint64_t *m = malloc(words * sizeof(uint64_t));
		struct parsa_rng r;

		REQUIRE(parsa_nbrset_init(&s, nf, k, NULL) == 0);
		parsa_rng_seed(&r, 1000 + k);
		for (int t = 0; t < 200; t++) {
			uint32_t v = (uint32_t)parsa_rng_below(&r, nf), added = 0;
			int set = parsa_rng_below(&r, 4) == 0;

			/* random words, all bits (also those beyond k) */
			for (uint32_t w = 0; w < words; w++)
				m[w] = parsa_rng_next(&r) & parsa_rng_next(&r);
			if (t % 17 == 0)
				memset(m, 0xff, words * sizeof(uint64_t));
			for (uint32_t i = 0; i < k; i++) {
				int b = (int)((m[i / 64] >> (i % 64)) & 1);
				uint8_t *x = &o[(size_t)v * k + i];

				added += b && !*x;
				*x = set ? (uint8_t)b : (uint8_t)(*x | b);
			}
			if (set)
				parsa_nbrset_set_mask(&s, v, m);
			else
				CHECK_INT(parsa_nbrset_or_mask(&s, v, m), ==, added);
		}
		check_against(&s, o);
		parsa_nbrset_release(&s);
		free(o);
		free(m);
	}
}

static void test_copy_gather_scatter(void)
{
	for (size_t j = 0; j < NK; j++) {
		uint32_t k = ks[j], nf = 9, feat[3] = {1, 4, 8};
		struct parsa_nbrset a, b, slice;
		struct parsa_rng r;
		uint64_t added;

		REQUIRE(parsa_nbrset_init(&a, nf, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&b, nf, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&slice, 3, k, NULL) == 0);
		parsa_rng_seed(&r, 7 * k);
		for (int t = 0; t < 100; t++) {
			/* (in the order gcc evaluated them as arguments: the same cases) */
			uint32_t i = (uint32_t)parsa_rng_below(&r, k);

			parsa_nbrset_add(&a, (uint32_t)parsa_rng_below(&r, nf), i);
		}
		parsa_nbrset_copy(&b, &a);
		for (uint32_t i = 0; i < k; i++)
			CHECK_INT(b.size[i], ==, a.size[i]);
		parsa_nbrset_gather(&slice, &a, feat);
		for (uint32_t l = 0; l < 3; l++)
			for (uint32_t i = 0; i < k; i++)
				CHECK_INT(parsa_nbrset_has(&slice, l, i), ==,
					  parsa_nbrset_has(&a, feat[l], i));
		/* slice sizes count the slice only */
		for (uint32_t i = 0; i < k; i++) {
			uint64_t c = 0;

			for (uint32_t l = 0; l < 3; l++)
				c += (uint64_t)parsa_nbrset_has(&a, feat[l], i);
			CHECK_INT(slice.size[i], ==, c);
		}
		added = (uint64_t)parsa_nbrset_add(&slice, 2, k - 1) +
			(uint64_t)parsa_nbrset_add(&slice, 0, 0);
		CHECK_INT(parsa_nbrset_scatter_or(&a, &slice, feat), ==, added);
		CHECK(parsa_nbrset_has(&a, 8, k - 1));
		CHECK(parsa_nbrset_has(&a, 1, 0));
		parsa_nbrset_recount(&b);
		parsa_nbrset_copy(&b, &a);
		parsa_nbrset_recount(&b);
		for (uint32_t i = 0; i < k; i++)
			CHECK_INT(b.size[i], ==, a.size[i]);
		parsa_nbrset_release(&a);
		parsa_nbrset_release(&b);
		parsa_nbrset_release(&slice);
	}
}

/* parsa_nbrset_scatter_or_range over 1-5 disjoint ranges of the feature
 * ids equals one parsa_nbrset_scatter_or: the same bits, the same sizes
 * (dst's own plus the ranges' size_add), the same count of new bits. */
static void test_scatter_or_range(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 41);
	for (int it = 0; it < 50; it++) {
		uint32_t nf = 1 + (uint32_t)parsa_rng_below(&r, 300);
		uint32_t k = 1 + (uint32_t)parsa_rng_below(&r, 150);
		uint32_t pieces = 1 + (uint32_t)parsa_rng_below(&r, 5), n = 0;
		uint32_t *feat = malloc(nf * sizeof(uint32_t));
		uint64_t *add = calloc(k, sizeof(uint64_t)), added = 0;
		struct parsa_nbrset a, b, slice;

		for (uint32_t v = 0; v < nf; v++)
			if (parsa_rng_below(&r, 3) == 0)
				feat[n++] = v; /* increasing */
		REQUIRE(parsa_nbrset_init(&a, nf, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&b, nf, k, NULL) == 0);
		REQUIRE(parsa_nbrset_init(&slice, n, k, NULL) == 0);
		for (uint32_t q = 0; q < nf * 2; q++) {
			uint32_t v = (uint32_t)parsa_rng_below(&r, nf);
			uint32_t i = (uint32_t)parsa_rng_below(&r, k);

			parsa_nbrset_add(&a, v, i);
			parsa_nbrset_add(&b, v, i);
		}
		for (uint32_t q = 0; n && q < n * 3; q++) {
			/* (in the order gcc evaluated them as arguments: the same cases) */
			uint32_t i = (uint32_t)parsa_rng_below(&r, k);

			parsa_nbrset_add(&slice, (uint32_t)parsa_rng_below(&r, n), i);
		}
		uint64_t want = parsa_nbrset_scatter_or(&a, &slice, feat);

		for (uint32_t t = 0; t < pieces; t++)
			added += parsa_nbrset_scatter_or_range(
				&b, &slice, feat, (uint32_t)((uint64_t)nf * t / pieces),
				(uint32_t)((uint64_t)nf * (t + 1) / pieces), add);
		CHECK_INT(added, ==, want);
		for (uint32_t i = 0; i < k; i++)
			CHECK_INT(b.size[i] + add[i], ==, a.size[i]);
		CHECK(memcmp(a.bits, b.bits, (size_t)nf * a.words * 8) == 0);
		parsa_nbrset_release(&a);
		parsa_nbrset_release(&b);
		parsa_nbrset_release(&slice);
		free(feat);
		free(add);
	}
}

/* parsa_sets64: group q's masks are bits 64q.. of the used sets; part
 * ids >= k and columns out of range are refused. */
static void test_sets64(void)
{
	static const uint32_t ks[] = { 1, 63, 64, 65, 200, 1024 };
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 31);
	for (size_t a = 0; a < sizeof(ks) / sizeof(ks[0]); a++) {
		uint32_t k = ks[a], n = 1 + (uint32_t)parsa_rng_below(&rng, 2000);
		uint32_t d = 1 + (uint32_t)parsa_rng_below(&rng, 200);
		uint32_t *part = malloc(((size_t)n + 1) * sizeof(*part));
		struct parsa_graph g;
		struct parsa_nbrset used;
		struct parsa_sets64 s;

		tu_random_graph(&g, &rng, n, d, parsa_rng_double(&rng) * 0.1);
		for (uint32_t r = 0; r < n; r++)
			part[r] = (uint32_t)parsa_rng_below(&rng, k);
		REQUIRE(parsa_nbrset_init(&used, d, k, NULL) == 0);
		REQUIRE(parsa_used_sets(&g, part, &used, NULL) == 0);
		REQUIRE(parsa_sets64_init(&s, &g, k, part, NULL) == 0);
		CHECK_INT(s.groups, ==, (k + 63) / 64);
		for (uint32_t q = 0; q < s.groups; q++) {
			parsa_sets64_group(&s, &g, part, q);
			for (uint32_t v = 0; v < d; v++)
				CHECK(s.mask[v] ==
				      parsa_nbrset_mask(&used, v)[q]);
		}
		parsa_sets64_release(&s);
		parsa_sets64_release(&s); /* twice: a no-op */
		part[n - 1] = k;
		CHECK_INT(parsa_sets64_init(&s, &g, k, part, NULL), ==,
			  PARSA_EINVAL);
		part[n - 1] = 0;
		if (parsa_graph_nnz(&g) > 0) {
			g.col[0] = d;
			CHECK_INT(parsa_sets64_init(&s, &g, k, part, NULL), ==,
				  PARSA_EINVAL);
		}
		parsa_nbrset_release(&used);
		parsa_graph_release(&g);
		free(part);
	}
}

int main(void)
{
	RUN(test_init_args);
	RUN(test_add_has_count);
	RUN(test_count_range);
	RUN(test_or_and_set_mask);
	RUN(test_copy_gather_scatter);
	RUN(test_scatter_or_range);
	RUN(test_sets64);
	return harness_done();
}
