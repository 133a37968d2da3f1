/*
 * parsa_refine: M_max refinement by moves out of the largest partition
 * (see parsa_refine.h for the rule and why it terminates).
 */
#include "parsa_refine.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base_cmp.h"

struct refine {
	const struct parsa_graph *g;
	struct parsa_nbrset *used;
	uint32_t *part;
	uint32_t k;
	uint64_t cap;
	uint64_t *M;     /* k: |N(U_j)| */
	uint64_t *size;  /* k: |U_j| */
	uint32_t *cnt;   /* n_cols: examples of p using v (p = current max) */
	uint32_t *cnt2;  /* n_cols: scratch counts of a swap partner part */
	uint32_t *hits;  /* k: |N(u) ∩ N(U_j)| scratch */
	uint32_t *cand;  /* n_alloc: examples of p, as a round began */
	uint32_t *mem2;  /* n_alloc: examples of a swap partner j */
	uint64_t *key;   /* n_alloc: order_candidates' sort keys */
	uint32_t n_alloc; /* > every |U_j| at any time (refine_init) */
};

#define NIL UINT32_MAX

/* Swap attempts per round: each costs O(nnz of the partner part). */
#define REFINE_SWAPS_PER_ROUND 4

static void refine_free(struct refine *r)
{
	free(r->M);
	free(r->size);
	free(r->cnt);
	free(r->cnt2);
	free(r->hits);
	free(r->cand);
	free(r->mem2);
	free(r->key);
}

/* out = the examples of part j in ascending order; returns their count
 * (|U_j| < n_alloc).  A scan of part: O(|U|), a few per round, where a
 * list per part would cost 8 |U| bytes at the refinement's peak. */
static uint32_t members(const struct refine *r, uint32_t j, uint32_t *out)
{
	uint32_t n = 0;

	for (uint32_t u = 0; u < r->g->n_rows; u++)
		if (r->part[u] == j)
			out[n++] = u;
	assert(n < r->n_alloc);
	return n;
}

static int refine_init(struct refine *r, const struct parsa_graph *g,
		       uint32_t *part, struct parsa_nbrset *used, uint64_t cap,
		       struct parsa_err *err)
{
	memset(r, 0, sizeof(*r));
	r->g = g;
	r->used = used;
	r->part = part;
	r->k = used->k;
	r->cap = cap;
	r->M = calloc(r->k, sizeof(uint64_t));
	r->size = calloc(r->k, sizeof(uint64_t));
	r->cnt = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	r->cnt2 = calloc((size_t)g->n_cols + 1, sizeof(uint32_t));
	r->hits = calloc(r->k, sizeof(uint32_t));
	if (!r->M || !r->size || !r->cnt || !r->cnt2 || !r->hits) {
		refine_free(r);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	}
	for (uint32_t j = 0; j < r->k; j++)
		r->M[j] = used->size[j];
	for (uint32_t u = 0; u < g->n_rows; u++) {
		if (part[u] >= r->k) {
			refine_free(r);
			return parsa_fail(err, PARSA_EINVAL,
					  "example %u in part %u, k is %u", u,
					  part[u], r->k);
		}
		r->size[part[u]]++;
	}
	/* A plain move goes only to a part below the cap; a swap puts u in
	 * a part first (one over for a moment), then one of the two back:
	 * no part ever holds more than max(largest now, cap) + 1. */
	uint64_t most = cap;

	for (uint32_t j = 0; j < r->k; j++)
		if (r->size[j] > most)
			most = r->size[j];
	r->n_alloc = most + 2 < (uint64_t)g->n_rows + 1 ? (uint32_t)(most + 2)
						      : g->n_rows + 1;
	r->cand = malloc((size_t)r->n_alloc * sizeof(uint32_t));
	r->mem2 = malloc((size_t)r->n_alloc * sizeof(uint32_t));
	r->key = malloc((size_t)r->n_alloc * sizeof(uint64_t));
	if (!r->cand || !r->mem2 || !r->key) {
		refine_free(r);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	}
	return 0;
}

static uint32_t argmax_M(const struct refine *r)
{
	uint32_t p = 0;

	for (uint32_t j = 1; j < r->k; j++)
		if (r->M[j] > r->M[p])
			p = j;
	return p;
}

/* cnt[v] = examples of p using v; cand = examples of p.  Returns |cand|.
 * O(|U_p| + nnz(U_p)): cnt is all zero on entry (see clear_part). */
static uint32_t load_part(struct refine *r, uint32_t p)
{
	const struct parsa_graph *g = r->g;
	uint32_t n = members(r, p, r->cand);

	for (uint32_t c = 0; c < n; c++)
		for (uint64_t e = g->row_ptr[r->cand[c]];
		     e < g->row_ptr[r->cand[c] + 1]; e++)
			r->cnt[g->col[e]]++;
	return n;
}

/* Zero cnt again after a round on p (only p's features can be non-zero). */
static void clear_part(struct refine *r, uint32_t p)
{
	const struct parsa_graph *g = r->g;

	for (uint32_t u = 0; u < g->n_rows; u++)
		if (r->part[u] == p)
			for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1];
			     e++)
				r->cnt[g->col[e]] = 0;
}

/* Features of u used by no other example of p. */
static uint32_t gain_of(const struct refine *r, uint32_t u)
{
	const struct parsa_graph *g = r->g;
	uint32_t gain = 0;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
		gain += r->cnt[g->col[e]] == 1;
	return gain;
}

/* The partition j != p minimising M_j + add_j(u) among those below the
 * cap (full == 0) or those at the cap (full == 1); *add_out receives
 * add_j(u).  UINT32_MAX if none. */
static uint32_t best_target(struct refine *r, uint32_t u, uint32_t p,
			    int full, uint32_t *add_out)
{
	const struct parsa_graph *g = r->g;
	uint32_t deg = parsa_graph_degree(g, u), best = UINT32_MAX;
	uint64_t best_val = UINT64_MAX;

	memset(r->hits, 0, r->k * sizeof(uint32_t));
	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		const uint64_t *m = parsa_nbrset_mask(r->used, g->col[e]);

		for (uint32_t w = 0; w < r->used->words; w++)
			for (uint64_t x = m[w]; x; x &= x - 1)
				r->hits[w * 64 + (uint32_t)__builtin_ctzll(x)]++;
	}
	for (uint32_t j = 0; j < r->k; j++) {
		uint64_t val = r->M[j] + (deg - r->hits[j]);

		if (j == p || (r->size[j] >= r->cap) != full)
			continue;
		if (val < best_val) {
			best_val = val;
			best = j;
		}
	}
	if (best != UINT32_MAX)
		*add_out = deg - r->hits[best];
	return best;
}

/*
 * Move u from part p to part j.  cnt_p holds p's per-feature counts (kept
 * exact); cnt_j, if not NULL, holds j's and is incremented.
 */
static void move_ex(struct refine *r, uint32_t u, uint32_t p, uint32_t j,
		    uint32_t *cnt_p, uint32_t *cnt_j)
{
	const struct parsa_graph *g = r->g;
	struct parsa_nbrset *s = r->used;

	for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++) {
		uint32_t v = g->col[e];
		uint64_t *w = &s->bits[(uint64_t)v * s->words + (p >> 6)];

		if (--cnt_p[v] == 0) {
			*w &= ~(1ULL << (p & 63));
			s->size[p]--;
			r->M[p]--;
		}
		if (cnt_j)
			cnt_j[v]++;
		if (parsa_nbrset_add(s, v, j))
			r->M[j]++;
	}
	r->part[u] = j;
	r->size[p]--;
	r->size[j]++;
}

static void move(struct refine *r, uint32_t u, uint32_t p, uint32_t j)
{
	move_ex(r, u, p, j, r->cnt, NULL);
}

/* cnt2[v] += 1 (add) or = 0 for each use of v by the n examples of mem. */
static void count_members(struct refine *r, const uint32_t *mem, uint32_t n,
			  uint32_t *cnt2, int add)
{
	const struct parsa_graph *g = r->g;

	for (uint32_t c = 0; c < n; c++)
		for (uint64_t e = g->row_ptr[mem[c]]; e < g->row_ptr[mem[c] + 1];
		     e++)
			cnt2[g->col[e]] = add ? cnt2[g->col[e]] + 1 : 0;
}

/* The example w of j (the n of mem, not u) whose move to p gives the
 * smallest max(M_p + add_p(w), M_j - gain_j(w)), the first in ascending
 * order on ties; *val receives that maximum. */
static uint32_t best_back(struct refine *r, const uint32_t *mem, uint32_t n,
			  uint32_t p, uint32_t u, const uint32_t *cnt2,
			  uint64_t *val)
{
	const struct parsa_graph *g = r->g;
	uint32_t best = NIL, j = r->part[u];

	*val = UINT64_MAX;
	for (uint32_t c = 0; c < n; c++) {
		uint32_t w = mem[c];
		uint64_t add = 0, gain = 0, a, b;

		if (w == u)
			continue;
		for (uint64_t e = g->row_ptr[w]; e < g->row_ptr[w + 1]; e++) {
			uint32_t v = g->col[e];

			gain += cnt2[v] == 1;
			add += !parsa_nbrset_has(r->used, v, p);
		}
		a = r->M[p] + add;
		b = r->M[j] - gain;
		if ((a > b ? a : b) < *val) {
			*val = a > b ? a : b;
			best = w;
		}
	}
	return best;
}

/*
 * Swap u (in p) with an example of the full part j when that lowers
 * max(M_p, M_j) below the old M_p; otherwise put u back.  1 if swapped.
 */
static int try_swap(struct refine *r, uint32_t u, uint32_t p, uint32_t j)
{
	uint64_t old_max = r->M[p], val;
	uint32_t w;

	uint32_t n;

	move(r, u, p, j);
	n = members(r, j, r->mem2);
	count_members(r, r->mem2, n, r->cnt2, 1);
	w = best_back(r, r->mem2, n, p, u, r->cnt2, &val);
	if (w != NIL && val < old_max)
		move_ex(r, w, j, p, r->cnt2, r->cnt);
	else
		move_ex(r, u, j, p, r->cnt2, r->cnt);
	/* cnt2 is non-zero only on features of j's examples now, all in mem2 */
	count_members(r, r->mem2, n, r->cnt2, 0);
	return w != NIL && val < old_max;
}

/* Order the candidates by private fraction gain/deg, largest first (they
 * free the most memory per feature they carry over); stable, by key (its
 * buffer allocated with the rest: no allocation that could fail here and
 * change the order). */
static void order_candidates(struct refine *r, uint32_t n)
{
	uint64_t *key = r->key;

	for (uint32_t c = 0; c < n; c++) {
		uint32_t u = r->cand[c], deg = parsa_graph_degree(r->g, u);
		uint64_t frac = deg ? ((uint64_t)gain_of(r, u) << 20) / deg : 0;

		key[c] = ((((uint64_t)1 << 21) - frac) << 32) | u;
	}
	qsort(key, n, sizeof(uint64_t), base_cmp_u64);
	for (uint32_t c = 0; c < n; c++)
		r->cand[c] = (uint32_t)key[c];
}

/* One round on the current largest partition p; returns moves made. */
static uint64_t round_on(struct refine *r, uint32_t p)
{
	uint32_t n = load_part(r, p), swaps = 0;
	uint64_t moves = 0;

	order_candidates(r, n);

	for (uint32_t c = 0; c < n; c++) {
		uint32_t u = r->cand[c], add = 0, gain = gain_of(r, u), j;

		if (gain == 0)
			continue;
		j = best_target(r, u, p, 0, &add);
		if (j != UINT32_MAX && r->M[j] + add < r->M[p] &&
		    add <= 2 * gain) {
			move(r, u, p, j);
		} else if (swaps < REFINE_SWAPS_PER_ROUND &&
			   (j = best_target(r, u, p, 1, &add)) != UINT32_MAX &&
			   r->M[j] + add < r->M[p] && add <= 2 * gain) {
			swaps++;
			if (!try_swap(r, u, p, j))
				continue;
		} else {
			continue;
		}
		moves++;
		if (argmax_M(r) != p)
			break; /* p is no longer the largest: next round */
	}
	clear_part(r, p);
	return moves;
}

int parsa_refine_mmax(const struct parsa_graph *g, uint32_t *part,
		      struct parsa_nbrset *used, uint64_t cap,
		      uint32_t max_rounds, struct parsa_refine_stats *st,
		      struct parsa_err *err)
{
	struct refine r;
	struct parsa_refine_stats local = {0};
	int rc;

	if (used->n_feat != g->n_cols)
		return parsa_fail(err, PARSA_EINVAL,
				  "refine: sets over %u features, graph has %u",
				  used->n_feat, g->n_cols);
	rc = refine_init(&r, g, part, used, cap, err);
	if (rc)
		return rc;
	local.M_max_before = r.M[argmax_M(&r)];
	for (uint32_t t = 0; t < max_rounds && r.k > 1; t++) {
		uint64_t before = r.M[argmax_M(&r)];
		uint64_t m = round_on(&r, argmax_M(&r));

		local.rounds++;
		local.moves += m;
		/* stop when a round gains less than 1/2048 of M_max: on large
		 * well-mixed data the rounds would cost time for nothing */
		if (m == 0 || (before - r.M[argmax_M(&r)]) * 2048 < before)
			break;
	}
	local.M_max_after = r.M[argmax_M(&r)];
	assert(local.M_max_after <= local.M_max_before);
	refine_free(&r);
	if (st)
		*st = local;
	return 0;
}
