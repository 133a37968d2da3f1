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
#include "parsa_graph.h"
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

/*
 * The used sets as lists, for large k: part[ptr[v] .. ptr[v + 1]) are the
 * parts using feature v, increasing (Σ_v c_v entries of 2 bytes and 8
 * bytes a feature, against k / 8 bytes a feature for the masks: at 2M
 * features, k=1024 and 30M users, 76 MiB instead of 244).  k <= 65536.
 */
struct parsa_users {
	uint32_t n_feat, k;
	uint64_t *ptr;  /* n_feat + 1 offsets */
	uint16_t *part; /* ptr[n_feat] part ids */
};

/*
 * The lists of g's features for part (g->n_rows entries, each < k; k <=
 * 65536): each part's examples walked in turn with a stamp per feature,
 * twice (the counts, then the lists).  u is filled (release it with
 * parsa_users_release).  0, PARSA_EINVAL (a part id >= k, a column out of
 * range) or PARSA_ENOMEM.
 */
int parsa_users_build(const struct parsa_graph *g, uint32_t k,
		      const uint32_t *part, struct parsa_users *u,
		      struct parsa_err *err);
void parsa_users_release(struct parsa_users *u); /* zeroed: no-op */

/* parsa_partition_v_ex on the lists: the same owners and traffic as on
 * the masks of the same sets. */
int parsa_partition_v_lists(const struct parsa_users *lists, uint32_t sweeps,
			    uint32_t *owner, uint64_t *traffic,
			    struct parsa_partv_stats *st, struct parsa_err *err);

/*
 * Algorithm 11 in slices, for large V on threads: the features are cut
 * into `slices` ranges of consecutive ids ("servers own disjoint feature
 * ranges"), and each step (counting, ordering, the greedy, each sweep)
 * runs on every slice as a task.  A slice orders its own features (LPT
 * within the slice) and sees part i at T_i + S D_i, where D_i is what the
 * slice itself added in this step (S = slices: as if every slice added as
 * much); after the step the slices' D are added into T in slice order.  A
 * sweep moves v from o to its user ξ of smallest view only if
 * V_ξ + S (c_v - 2) < min(V_o, T_max before the sweep), which keeps
 * T_max from rising once the slices' moves are summed.
 *
 * Exactly one of used and lists is given.  par(par_arg, n, fn, fn_arg),
 * if not NULL, must call fn(fn_arg, t) once for every t in [0, n), on any
 * threads in any order, and return when all calls have returned; the
 * result depends on slices only, never on par or the threads.  slices <= 1
 * is parsa_partition_v_ex (or _lists): the same owners and traffic.
 * Extra memory: slices x k x 16 bytes.
 */
typedef void (*parsa_partv_task_fn)(void *fn_arg, uint32_t t);
typedef void (*parsa_partv_par_fn)(void *par_arg, uint32_t n,
				   parsa_partv_task_fn fn, void *fn_arg);

/* The slices part_run uses from PARSA_PARTV_SLICE_MIN_FEAT features up
 * (below, one slice: the serial algorithm, so small inputs keep their
 * placements). */
#define PARSA_PARTV_SLICES 8
#define PARSA_PARTV_SLICE_MIN_FEAT 1048576
#define PARSA_PARTV_SLICES_MAX 4096

int parsa_partition_v_sliced(const struct parsa_nbrset *used,
			     const struct parsa_users *lists, uint32_t sweeps,
			     uint32_t slices, parsa_partv_par_fn par,
			     void *par_arg, uint32_t *owner, uint64_t *traffic,
			     struct parsa_partv_stats *st,
			     struct parsa_err *err);

/*
 * parsa_users_build with each group's masks and lists made in `tasks`
 * tasks over ranges of the features (par as for parsa_partition_v_sliced;
 * NULL or tasks <= 1: one task).  The same lists whatever the tasks.
 */
int parsa_users_build_par(const struct parsa_graph *g, uint32_t k,
			  const uint32_t *part, struct parsa_users *u,
			  parsa_partv_par_fn par, void *par_arg,
			  uint32_t tasks, struct parsa_err *err);

#endif /* PARSA_PARTV_H */
