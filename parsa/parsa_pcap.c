/*
 * parsa_pcap: the cap on parameters per server after Algorithm 11 (see
 * parsa_pcap.h for the rule).
 *
 * Traffic of a move of v (used by c parts) from owner o to ξ, with
 * h_i = [part i uses v]: owning v costs the owner c − h_owner (every other
 * user pulls it) and each user i other than the owner pays 1 for it.  So
 * T_o changes by −(c − h_o) + h_o and T_ξ by (c − h_ξ) − h_ξ.
 */
#include "parsa_pcap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ΔT of the new owner j of v (c users; h = [j uses v]). */
static int64_t gain_cost(uint32_t c, int h)
{
	return (int64_t)c - 2 * h;
}

/* The server with room minimising T_j + cost; users first. */
static uint32_t pick(const struct parsa_nbrset *used, uint32_t v, uint32_t o,
		     const uint64_t *count, uint64_t cap, const int64_t *T)
{
	uint32_t c = parsa_nbrset_count(used, v), best = UINT32_MAX;
	int best_h = 0;
	int64_t best_t = 0;

	for (uint32_t j = 0; j < used->k; j++) {
		int h = parsa_nbrset_has(used, v, j);
		int64_t t = T[j] + gain_cost(c, h);

		if (j == o || count[j] >= cap)
			continue;
		if (best == UINT32_MAX || h > best_h ||
		    (h == best_h && t < best_t)) {
			best = j;
			best_h = h;
			best_t = t;
		}
	}
	return best;
}

int parsa_param_cap(const struct parsa_nbrset *used, double imbalance,
		    uint32_t *owner, uint64_t *T, struct parsa_pcap_stats *st,
		    struct parsa_err *err)
{
	uint32_t k = used->k, n = used->n_feat;
	uint64_t *count, cap, ideal;
	int64_t *t;
	struct parsa_pcap_stats s = { 0, 0 };

	if (!(imbalance >= 1.0) || !isfinite(imbalance) || k == 0 ||
	    (n > 0 && !owner))
		return parsa_fail(err, PARSA_EINVAL,
				  "parameter cap: needs k >= 1, owners and "
				  "imbalance >= 1");
	ideal = ((uint64_t)n + k - 1) / k;
	cap = (uint64_t)ceil(imbalance * (double)n / (double)k);
	s.cap = cap = cap > ideal ? cap : ideal;
	count = calloc(k, sizeof(*count));
	t = calloc(k, sizeof(*t));
	if (!count || !t) {
		free(count);
		free(t);
		return parsa_fail(err, PARSA_ENOMEM, "parameter cap: out of memory");
	}
	for (uint32_t v = 0; v < n; v++) {
		if (owner[v] >= k) {
			free(count);
			free(t);
			return parsa_fail(err, PARSA_EINVAL,
					  "feature %u owned by %u, k is %u", v,
					  owner[v], k);
		}
		count[owner[v]]++;
	}
	for (uint32_t j = 0; T && j < k; j++)
		t[j] = (int64_t)T[j];
	/* features in id order; from an over-full owner, to the best server */
	for (uint32_t v = 0; v < n; v++) {
		uint32_t o = owner[v], c, x;
		int ho;

		if (count[o] <= cap)
			continue;
		x = pick(used, v, o, count, cap, t);
		if (x == UINT32_MAX)
			break; /* cannot happen: cap * k >= n */
		c = parsa_nbrset_count(used, v);
		ho = parsa_nbrset_has(used, v, o);
		t[o] -= gain_cost(c, ho);
		t[x] += gain_cost(c, parsa_nbrset_has(used, v, x));
		owner[v] = x;
		count[o]--;
		count[x]++;
		s.moves++;
	}
	for (uint32_t j = 0; T && j < k; j++)
		T[j] = (uint64_t)t[j];
	free(count);
	free(t);
	if (st)
		*st = s;
	return 0;
}
