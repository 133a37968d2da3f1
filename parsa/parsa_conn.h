/*
 * parsa_conn: the state both connectivity refiners start from
 * (parsa_fm.h's sweeps and parsa_kfm.h's k-way FM): argument checks and
 * the dense per-(feature, part) counts.
 *
 * Counts: uint16 cnt[v * k + j] = the number of examples of part j using
 * feature v, saturating at PARSA_CONN_SAT (a saturated count is never
 * decremented by the refiners, so it over-states; see parsa_fm.h).
 * No globals.
 */
#ifndef PARSA_CONN_H
#define PARSA_CONN_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"

#define PARSA_CONN_SAT UINT16_MAX

/*
 * g, part, used non-NULL, used over g's features, every part[u] < used->k;
 * else PARSA_EINVAL with "who: ..." (who names the caller).  0 if fine.
 */
int parsa_conn_check(const struct parsa_graph *g, const uint32_t *part,
		     const struct parsa_nbrset *used, const char *who,
		     struct parsa_err *err);

/*
 * Fill, for the partition part of g into used->k parts: cnt (n_cols * k,
 * zeroed by the caller), lam[v] = the parts of used holding v (n_cols),
 * size[j] += Σ weights of part j (weight NULL: 1 each; size zeroed by the
 * caller).  Returns 1 if some count saturated, else 0.
 */
int parsa_conn_counts(const struct parsa_graph *g, const uint32_t *part,
		      const struct parsa_nbrset *used, const uint32_t *weight,
		      uint16_t *cnt, uint32_t *lam, uint64_t *size);

/*
 * parsa_conn_counts from t, the transpose of g (net v -> its pins; any
 * pin order): the same cnt, lam, size and result, with cnt written net
 * by net (sequentially) instead of by the rows' random features.
 */
int parsa_conn_counts_t(const struct parsa_graph *g,
			const struct parsa_graph *t, const uint32_t *part,
			const struct parsa_nbrset *used, const uint32_t *weight,
			uint16_t *cnt, uint32_t *lam, uint64_t *size);

/*
 * The features v of example u that another part uses too (λ_v ≥ 2,
 * lam[v] = λ_v = the parts of s holding v): hits[j] += #{such v ∈ S_j}
 * for every part j (hits zero on entry), their parts OR-ed into tmask
 * (s->words words).  Returns the number of dense ones (2 λ_v > k); when
 * it is > 0 every part shares a feature with u and tmask may miss some.
 * Dense features are counted by their complement (O(k − λ_v) each, plus
 * O(k) once).  O(deg(u) · (words + log deg(u)) + k).
 */
uint32_t parsa_conn_hits(const struct parsa_graph *g, uint32_t u,
			 const struct parsa_nbrset *s, const uint32_t *lam,
			 uint32_t *hits, uint64_t *tmask);

/*
 * The candidate parts of a hit count, in increasing index: the lowest set
 * bit of mask[*w..words), cleared (so the mask is all zero once this
 * returns UINT32_MAX), *w moved to its word.  Start with *w = 0.
 */
static inline uint32_t parsa_conn_pop(uint64_t *mask, uint32_t words,
				      uint32_t *w)
{
	for (; *w < words; ++*w) {
		uint64_t x = mask[*w];

		if (x) {
			mask[*w] = x & (x - 1);
			return *w * 64 + (uint32_t)__builtin_ctzll(x);
		}
	}
	return UINT32_MAX;
}

/*
 * Feature v of an example moving from part a to part b: *ca (count of v
 * in a) down unless saturated, v leaves S_a (bit, size, *lam) when it hits
 * 0; v joins S_b when *cb was 0; *cb up (saturating, *saturated set).
 * Returns the change of Σ_j |S_j|: -1, 0 or +1.
 */
static inline int parsa_conn_move_feature(struct parsa_nbrset *s, uint32_t v,
					  uint32_t a, uint32_t b, uint16_t *ca,
					  uint16_t *cb, uint32_t *lam,
					  int *saturated)
{
	int delta = 0;

	if (*ca != PARSA_CONN_SAT && --*ca == 0) { /* saturated: sticky */
		s->bits[(uint64_t)v * s->words + (a >> 6)] &=
			~(1ULL << (a & 63));
		s->size[a]--;
		--*lam;
		delta--;
	}
	if (*cb == 0 && parsa_nbrset_add(s, v, b)) {
		++*lam;
		delta++;
	}
	if (*cb < PARSA_CONN_SAT)
		++*cb;
	*saturated |= *cb == PARSA_CONN_SAT;
	return delta;
}

#endif /* PARSA_CONN_H */
