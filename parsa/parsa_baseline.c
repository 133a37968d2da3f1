/*
 * parsa_baseline: the random placement a parameter server uses by default,
 * and a one-pass streaming greedy partition of U (see parsa_baseline.h).
 *
 * The greedy keeps S_1..S_k as per-feature k-bit masks (parsa_nbrset).  For
 * an example u, count[i] = |N(u) ∩ S_i| is gathered by walking the set bits
 * of the masks of u's features, so |N(u) \ S_i| = deg(u) - count[i]; the
 * choice is then one O(k) scan.  Cost per example: O(Σ popcount + k).
 */
#include "parsa_baseline.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base_greedy.h"
#include "parsa_nbrset.h"
#include "parsa_partu.h"

int parsa_random_u(uint32_t n, uint32_t k, struct parsa_rng *rng,
		   uint32_t *part, struct parsa_err *err)
{
	if (k == 0 || !rng || (n > 0 && !part))
		return parsa_fail(err, PARSA_EINVAL,
				  "random U: need k >= 1, an rng and an "
				  "output array (k=%u)", k);
	/*
	 * Dealing a shuffled U round-robin is the same as shuffling the
	 * labels 0,1,..,k-1,0,1,.. over U: sizes differ by at most one.
	 */
	for (uint32_t j = 0; j < n; j++)
		part[j] = j % k;
	parsa_rng_shuffle_u32(rng, part, n);
	return 0;
}

void parsa_random_v(uint32_t n_feat, uint32_t k, struct parsa_rng *rng,
		    uint32_t *owner)
{
	assert(k > 0 && rng && (n_feat == 0 || owner));
	if (k == 0)
		return;
	for (uint32_t v = 0; v < n_feat; v++)
		owner[v] = (uint32_t)parsa_rng_below(rng, k);
}

int parsa_random_placement8(uint32_t n_rows, uint32_t n_cols, uint32_t k,
			    uint64_t seed, uint8_t *part, uint8_t *owner,
			    struct parsa_err *err)
{
	struct parsa_rng rng;

	if (k == 0 || k > 256 || (n_rows > 0 && !part) ||
	    (n_cols > 0 && !owner))
		return parsa_fail(err, PARSA_EINVAL,
				  "random placement: need 1 <= k <= 256 and "
				  "output arrays (k=%u)", k);
	parsa_rng_seed(&rng, seed);
	/* parsa_random_u's labels and shuffle, parsa_random_v's draws */
	for (uint32_t j = 0; j < n_rows; j++)
		part[j] = (uint8_t)(j % k);
	parsa_rng_shuffle_u8(&rng, part, n_rows);
	for (uint32_t v = 0; v < n_cols; v++)
		owner[v] = (uint8_t)parsa_rng_below(&rng, k);
	return 0;
}

int parsa_random_placement(uint32_t n_rows, uint32_t n_cols, uint32_t k,
			   uint64_t seed, uint32_t *part, uint32_t *owner,
			   struct parsa_err *err)
{
	struct parsa_rng rng;
	int rc;

	if (n_cols > 0 && !owner)
		return parsa_fail(err, PARSA_EINVAL,
				  "random placement: no owner array");
	parsa_rng_seed(&rng, seed);
	rc = parsa_random_u(n_rows, k, &rng, part, err);
	if (rc == 0)
		parsa_random_v(n_cols, k, &rng, owner);
	return rc;
}

/* Scratch of one greedy run. */
struct greedy {
	struct parsa_nbrset S; /* S_i as per-feature masks */
	uint64_t *count;       /* k: |N(u) ∩ S_i| for the current u */
	uint64_t *size;        /* k: |U_i| */
	uint64_t cap;          /* balance cap per part */
	uint32_t k;
};

static void greedy_free(struct greedy *gr)
{
	parsa_nbrset_release(&gr->S);
	free(gr->count);
	free(gr->size);
}

static int greedy_alloc(struct greedy *gr, const struct parsa_graph *g,
			uint32_t k, double imbalance, struct parsa_err *err)
{
	int rc;

	memset(gr, 0, sizeof(*gr));
	gr->k = k;
	gr->cap = parsa_balance_cap(g->n_rows, k, imbalance);
	rc = parsa_nbrset_init(&gr->S, g->n_cols, k, err);
	if (rc)
		return rc;
	gr->count = calloc(k, sizeof(*gr->count));
	gr->size = calloc(k, sizeof(*gr->size));
	if (!gr->count || !gr->size) {
		greedy_free(gr);
		return parsa_fail(err, PARSA_ENOMEM,
				  "greedy: out of memory (k=%u)", k);
	}
	return 0;
}

/* count[i] += 1 for every part i whose S_i holds feature v. */
static void count_mask(struct greedy *gr, uint32_t v)
{
	const uint64_t *m = parsa_nbrset_mask(&gr->S, v);

	for (uint32_t w = 0; w < gr->S.words; w++)
		for (uint64_t b = m[w]; b; b &= b - 1)
			gr->count[w * 64 + (uint32_t)__builtin_ctzll(b)]++;
}

/*
 * The part under the cap with the fewest new features deg - count[i]
 * (base_greedy_pick: ties to fewest examples, then lowest index).
 * Resets count[] to zero.
 */
static uint32_t pick_part(struct greedy *gr, uint32_t deg)
{
	uint32_t best;

	for (uint32_t i = 0; i < gr->k; i++) {
		assert(gr->count[i] <= deg);
		gr->count[i] = deg - gr->count[i];
	}
	best = base_greedy_pick(gr->k, gr->count, gr->size, gr->cap);
	memset(gr->count, 0, gr->k * sizeof(*gr->count));
	return best;
}

static void greedy_place(struct greedy *gr, const struct parsa_graph *g,
			 uint32_t r, uint32_t *part)
{
	uint64_t b = g->row_ptr[r], e = g->row_ptr[r + 1];
	uint32_t p;

	for (uint64_t j = b; j < e; j++)
		count_mask(gr, g->col[j]);
	p = pick_part(gr, (uint32_t)(e - b));
	/* cap >= ceil(n/k), so some part always has room */
	assert(p < gr->k);
	for (uint64_t j = b; j < e; j++)
		parsa_nbrset_add(&gr->S, g->col[j], p);
	gr->size[p]++;
	part[r] = p;
}

int parsa_greedy_u(const struct parsa_graph *g, uint32_t k, double imbalance,
		   uint32_t *part, struct parsa_err *err)
{
	struct greedy gr;
	int rc;

	if (!g || k == 0 || (g->n_rows > 0 && !part))
		return parsa_fail(err, PARSA_EINVAL,
				  "greedy: need a graph, k >= 1 and an output "
				  "array (k=%u)", k);
	if (!(imbalance >= 1.0) || isinf(imbalance))
		return parsa_fail(err, PARSA_EINVAL,
				  "greedy: imbalance must be a finite number "
				  ">= 1 (got %g)", imbalance);
	rc = parsa_graph_validate(g, err);
	if (rc)
		return rc;
	rc = greedy_alloc(&gr, g, k, imbalance, err);
	if (rc)
		return rc;
	for (uint32_t r = 0; r < g->n_rows; r++)
		greedy_place(&gr, g, r, part);
	greedy_free(&gr);
	return 0;
}
