/*
 * parsa_pcap: a cap on the parameters (features) each server owns, applied
 * after Algorithm 11 (parameter memory balance, `--param-imbalance X`).
 *
 * Algorithm 11 balances traffic, not the number of parameters per server:
 * a part whose examples use many single-user features owns all of them.
 * Given the owners and N(U_1..U_k), this pass moves features off every
 * server above cap = max(ceil(X * |V| / k), ceil(|V| / k)) until none is
 * above it: it visits the features in id order and gives each feature of
 * an over-full server to a server with room, preferring servers that use
 * the feature (T_sum is then unchanged when the old owner uses it too),
 * then the smallest traffic after the move.  Every feature is counted,
 * used or not, so the cap (>= ceil(|V| / k)) is always reachable.  Moves change T_o and T_ξ by the exact amounts of
 * README "What the numbers mean"; T_max may rise (the price of the cap),
 * T_sum rises only by moves to non-users.
 *
 * O(|V| (words + k)) per over-full server in the worst case; no globals.
 */
#ifndef PARSA_PCAP_H
#define PARSA_PCAP_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_nbrset.h"

struct parsa_pcap_stats {
	uint64_t cap;   /* the cap applied */
	uint64_t moves; /* features moved */
};

/*
 * owner: used->n_feat entries < used->k (updated).  imbalance >= 1.
 * T (k entries, may be NULL): the traffic of the placement on entry (from
 * parsa_partition_v_ex); kept up to date.  0, PARSA_EINVAL or PARSA_ENOMEM.
 */
int parsa_param_cap(const struct parsa_nbrset *used, double imbalance,
		    uint32_t *owner, uint64_t *T, struct parsa_pcap_stats *st,
		    struct parsa_err *err);

#endif /* PARSA_PCAP_H */
