/*
 * test_part_assign: the incremental assign rule (part_assign.h) against a
 * brute-force oracle on random placements (k across the 64-bit word
 * boundary), plus the balance cap and unknown features.
 */
#include "harness.h"

#include "parsa_partu.h"
#include "parsa_rng.h"
#include "part_assign.h"

#define NF 40   /* features in the placement (ids 1000 + v) */

/* Oracle: sets as byte matrices, the rule spelled out. */
static void oracle(uint32_t k, const uint8_t *S0, const uint64_t *count,
		   const uint64_t *off, const uint64_t *ids, uint32_t n,
		   double imb, uint32_t *out)
{
	uint8_t *S = malloc((size_t)k * (NF + 64));
	uint64_t cnt[130], total = 0;

	memset(S, 0, (size_t)k * (NF + 64));
	for (uint32_t i = 0; i < k; i++) {
		cnt[i] = count[i];
		total += cnt[i];
		for (uint32_t v = 0; v < NF; v++)
			S[i * (NF + 64) + v] = S0[v * k + i];
	}
	uint64_t cap = parsa_balance_cap(total + n, k, imb);

	for (uint32_t e = 0; e < n; e++) {
		uint32_t best = UINT32_MAX;
		uint64_t bc = 0;

		for (uint32_t i = 0; i < k; i++) {
			uint8_t seen[NF + 64] = {0};
			uint64_t c = 0;

			if (cnt[i] >= cap)
				continue;
			for (uint64_t j = off[e]; j < off[e + 1]; j++) {
				uint32_t x = (uint32_t)(ids[j] - 1000);

				if (!seen[x] && !S[i * (NF + 64) + x])
					c++;
				seen[x] = 1;
			}
			if (best == UINT32_MAX || c < bc ||
			    (c == bc && cnt[i] < cnt[best])) {
				best = i;
				bc = c;
			}
		}
		out[e] = best;
		cnt[best]++;
		for (uint64_t j = off[e]; j < off[e + 1]; j++)
			S[best * (NF + 64) + (ids[j] - 1000)] = 1;
	}
	free(S);
}

/* One random case: k parts, n new examples; ids >= 1000 + NF are unknown. */
static void one_case(uint32_t k, uint32_t n, uint64_t seed)
{
	struct parsa_rng rng;
	struct part_idmap map;
	uint32_t words = (k + 63) / 64, got[64], want[64];
	uint64_t *bits = calloc((size_t)NF * words, sizeof(uint64_t));
	uint8_t *S0 = calloc((size_t)NF * k, 1);
	uint64_t count[130], off[65], ids[64 * 12];
	struct part_assign_model m;

	parsa_rng_seed(&rng, seed);
	part_idmap_init(&map);
	for (uint32_t v = 0; v < NF; v++) {
		uint32_t id;

		part_idmap_get(&map, 1000 + v, &id, NULL, "features", NULL);
		for (uint32_t i = 0; i < k; i++)
			if (parsa_rng_below(&rng, 4) == 0) {
				S0[v * k + i] = 1;
				bits[v * words + i / 64] |= 1ULL << (i % 64);
			}
	}
	for (uint32_t i = 0; i < k; i++)
		count[i] = 5 + parsa_rng_below(&rng, 3);
	off[0] = 0;
	for (uint32_t e = 0; e < n; e++) {
		uint32_t len = parsa_rng_below(&rng, 12);

		off[e + 1] = off[e] + len;
		for (uint32_t j = 0; j < len; j++)
			ids[off[e] + j] = 1000 + parsa_rng_below(&rng, NF + 8);
	}
	m = (struct part_assign_model){.k = k, .words = words, .bits = bits,
				       .map = &map, .count = count,
				       .imbalance = 1.03};
	/* unknown ids (>= 1000 + NF) are in no S_i: the oracle's S0 rows
	 * for them are zero, which the byte matrix gives by calloc */
	CHECK_INT(part_assign_batch(&m, off, ids, n, got, NULL), ==, 0);
	oracle(k, S0, count, off, ids, n, 1.03, want);
	for (uint32_t e = 0; e < n; e++)
		CHECK_INT(got[e], ==, want[e]);
	part_idmap_release(&map);
	free(bits);
	free(S0);
}

static void test_against_oracle(void)
{
	static const uint32_t ks[] = {1, 2, 3, 16, 63, 64, 65, 128};

	for (size_t a = 0; a < sizeof(ks) / sizeof(*ks); a++)
		for (uint64_t seed = 1; seed <= 25; seed++)
			one_case(ks[a], 1 + (uint32_t)(seed * 7 % 64), seed * 31 + a);
}

static void test_balance_and_ties(void)
{
	/* k = 2, no features known: cost ties, so the smaller part wins until
	 * the parts are even, then the smaller id */
	uint64_t count[2] = {3, 0}, off[6] = {0, 0, 0, 0, 0, 0}, ids[1] = {0};
	uint32_t out[5];
	struct part_assign_model m = {.k = 2, .words = 1, .bits = NULL,
				      .map = NULL, .count = count,
				      .imbalance = 1.0};

	CHECK_INT(part_assign_batch(&m, off, ids, 5, out, NULL), ==, 0);
	CHECK_INT(out[0], ==, 1);
	CHECK_INT(out[1], ==, 1);
	CHECK_INT(out[2], ==, 1);
	CHECK_INT(out[3], ==, 0);  /* 3/3: tie -> id 0 */
	CHECK_INT(out[4], ==, 1);  /* cap ceil(8/2) = 4: part 0 is full */
	m.k = 0;
	CHECK_INT(part_assign_batch(&m, off, ids, 1, out, NULL), ==, PARSA_EINVAL);
}

static void test_batch_sees_its_own_features(void)
{
	/* the first example takes part 1 (smaller); the second, sharing its
	 * features, follows it there (cost 0) while the cap allows */
	uint64_t count[2] = {2, 1}, off[3] = {0, 3, 6};
	uint64_t ids[6] = {7, 8, 9, 9, 8, 7};
	uint32_t out[2];
	struct part_assign_model m = {.k = 2, .words = 1, .bits = NULL,
				      .map = NULL, .count = count,
				      .imbalance = 1.5};

	CHECK_INT(part_assign_batch(&m, off, ids, 2, out, NULL), ==, 0);
	CHECK_INT(out[0], ==, 1);
	CHECK_INT(out[1], ==, 1);
}

int main(void)
{
	RUN(test_against_oracle);
	RUN(test_balance_and_ties);
	RUN(test_batch_sees_its_own_features);
	return harness_done();
}
