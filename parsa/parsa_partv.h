/*
 * parsa_partv: partition the features V given the example partition
 * (thesis Algorithm 11), with optional improving sweeps.
 *
 * Input: used = N(U_1..U_k) as neighbor-set masks (bit i of v set iff some
 * example of part i uses v).  Each used feature goes to one of the parts
 * that use it (never to a part that does not).  T_i starts at |N(U_i)|;
 * giving v (used by c parts) to ξ changes T_ξ by c - 2, so features are
 * taken in decreasing c (largest items first, as in LPT scheduling) and
 * each goes to the user with the smallest T.  A sweep then revisits every
 * feature with c >= 3 and moves it from owner o to user ξ only when
 * T_ξ + (c-2) < T_o, which strictly lowers max(T_o, T_ξ): T_max never
 * worsens.  Sweeps stop early when one moves nothing.
 * Unused features (c == 0) go to part v mod k (they cost nothing).
 * Deterministic: ties go to the lowest part index.
 */
#ifndef PARSA_PARTV_H
#define PARSA_PARTV_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_nbrset.h"

struct parsa_partv_stats {
	uint32_t sweeps_run; /* improving sweeps actually run */
	uint64_t moves;      /* features moved by sweeps */
};

/* owner has used->n_feat entries (output). */
int parsa_partition_v(const struct parsa_nbrset *used, uint32_t sweeps,
		      uint32_t *owner, struct parsa_partv_stats *st,
		      struct parsa_err *err);

/*
 * As parsa_partition_v; traffic (k entries, may be NULL) also receives the
 * T_i the algorithm ends with, which equal the T_i of parsa_metrics_parts
 * for the same placement.
 */
int parsa_partition_v_ex(const struct parsa_nbrset *used, uint32_t sweeps,
			 uint32_t *owner, uint64_t *traffic,
			 struct parsa_partv_stats *st, struct parsa_err *err);

/*
 * Algorithm 11 on a part of V, for a system whose other features are
 * placed elsewhere (the servers of the streaming mode each own a part).
 * T (k entries) is the running traffic of the whole system on entry: the
 * global M_i plus Σ (c_v - 2) over the features already owned elsewhere;
 * on return it includes this part's features.  greedy: first give every
 * used feature of `used` by Algorithm 11 (LPT order within the part);
 * then up to sweeps improving sweeps over owner (which must hold a valid
 * owner of every used feature when greedy is 0).  With greedy, unused
 * features (no bit) go to v mod k as in parsa_partition_v.  Running the parts one after another, each from
 * the previous one's T, gives every feature an owner among its users and
 * ends with the T_i of parsa_metrics_parts.
 */
int parsa_partition_v_part(const struct parsa_nbrset *used, int greedy,
			   uint32_t sweeps, uint32_t *owner, int64_t *T,
			   struct parsa_partv_stats *st, struct parsa_err *err);

#endif /* PARSA_PARTV_H */
