/*
 * parsa_tmax: local search on a whole placement (examples and features)
 * that lowers T_max, the largest per-machine traffic, then T_sum under
 * the T_max reached (the objective `tmax`).
 *
 * With c_v the number of parts using feature v and every used feature
 * owned by one of its users (as Algorithm 11 leaves it),
 *   T_i = M_i + Σ_{v owned by i} (c_v - 2)
 * (design.md §1).  The module keeps exact per-(feature, part) example
 * counts, c_v, M_i and T_i, and makes these moves:
 *
 *  - U-move (phase 1): an example u of a busiest part p (T_p = T_max)
 *    goes to another part q.  For each feature v of u: p stops using v
 *    when u was its only example there (M_p - 1, c_v - 1), q starts using
 *    it when it did not (M_q + 1, c_v + 1), and v's owner o pays the
 *    change of c_v; when o = p and p stops using v, v passes to q (a user
 *    after the move).  The move is made only when every part whose T it
 *    changes ends strictly below the current T_max, so (T_max, the number
 *    of parts at T_max) falls lexicographically with every move: the
 *    search ends.  Among the targets q allowed, the one with the lowest
 *    T_p afterwards, then the lowest T_sum, then the lowest index.
 *  - V-move (phase 1, when no U-move of p is left): a feature owned by p
 *    with c_v >= 3 passes to its user ξ with the lowest T, when T_ξ +
 *    c_v - 2 stays below T_max (as Algorithm 11's sweeps, but for the
 *    busiest part only and against T_max).  When no feature can pass
 *    alone, owners trade: v owned by p goes to a user q of it and a
 *    feature w (c_w >= 3) that q owns and p uses comes to p, when T_p
 *    and T_q both end below T_max (the w leaving the larger of them
 *    lowest).
 *  - pull (phase 1, when neither is left): an example of another part
 *    that alone in its part uses a feature p owns moves to a part q (not
 *    p) under the same rule as a U-move: c_v falls, and with it T_p.
 *  - swap (phase 1, when none of those nor a group move is left; the
 *    balance cap usually blocks single moves): an example u of p and one
 *    of another part q trade places, under the same rule (and every M
 *    that rises at most m_limit); u's move is made, the partner's
 *    evaluated on top, and u's move undone when no partner of q fits:
 *    first up to 4 whose move into p would help it most (per q, once a
 *    round: the features it alone uses in q that p uses, less those p
 *    does not use), then up to 16 random ones.  A pair (u, q) is not
 *    tried when T_p after u's move, less the most any example of q can
 *    lower it by (counted once a round), is not below T_max: it would
 *    fail; what trying it leaves (the random draws, the order of p's
 *    list) is left all the same, so the placement is the one of trying
 *    every pair (exhaustive_swaps: try them, for the tests).
 *  - group move (phase 1, before the swaps): the examples of p using a
 *    feature v that 2..32 of them use (p stops using v) leave p together,
 *    each in turn to its best target under the rule of a U-move (every
 *    T that rises ends below T_max, the caps kept) except that T_p need
 *    only fall by the last; kept when it does, else undone exactly (the
 *    reverse moves, then the owners and T as they were).
 *    Phase 1 ends when a busiest part has no move of these kinds (a
 *    local minimum as far as these moves go), after `passes` rounds or
 *    when the stop is due.
 *  - T_sum move (phase 2, polish_passes passes over all examples in a
 *    seeded random order): an example goes to the part, among those
 *    sharing a feature with it, that lowers T_sum most, when every T it
 *    changes stays at most the T_max phase 1 reached.
 *  - kicks (after phases 1-2, `kicks` times at most; an iterated local
 *    search): kick_size random examples of every busiest part go, each
 *    to the part with the lowest T after it that the caps allow (T_max
 *    may rise), and phases 1-2 run again (the T_sum passes only over the
 *    examples of parts changed since the kick); the result is kept when
 *    its (T_max, T_sum) is below the best so far, else the best is put
 *    back.  They end after kick_patience kicks in a row kept nothing.
 *    When those end (kicks made or patience spent), kick_levels larger
 *    sizes in turn (2x, 4x ... kick_size examples: a variable
 *    neighbourhood, for the minima the small kicks do not leave), each
 *    until kick_patience_more kicks in a row kept nothing, kick_more of
 *    them at most; the kicks before are the same as without them.
 *    The placement returned is the best one: never a higher (T_max,
 *    T_sum) than the same run without kicks (or without the larger
 *    ones).
 *
 * Every move keeps the balance cap (|U_q| + 1 <= cap) and the memory
 * bound (M_q after the move <= m_limit, never checked for a part that
 * shrinks); T_max never rises (but inside a kick, undone unless it
 * ends lower), T_sum may rise in phase 1 only.
 * Deterministic for a seed; no threads, no I/O, no globals.  The stop is
 * polled every PARSA_STOP_POPS examples looked at and before every kick;
 * a cut leaves a valid placement with every move so far kept (each is
 * exact), or inside a kick the best placement before it.
 * Memory: 4 bytes per (feature, part) for the counts, plus O(|U| + |V| +
 * k + 32 times the largest example degree) (the best placement of the
 * kicks; a busiest part's (feature, example) pairs and the owners a
 * group move may undo).
 */
#ifndef PARSA_TMAX_H
#define PARSA_TMAX_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_nbrset.h"
#include "parsa_stop.h"

struct parsa_tmax_opts {
	uint32_t passes;        /* phase 1: at most this many rounds (a round
				 * looks at one busiest part); 0 = none */
	uint32_t polish_passes; /* phase 2 passes over all examples */
	uint64_t cap;           /* largest |U_j| a move may create */
	uint64_t m_limit;       /* largest M_j a move may create
				 * (UINT64_MAX: none) */
	uint64_t seed;          /* the order examples are looked at */
	const struct parsa_stop *stop; /* may be NULL */
	uint32_t cycles;        /* phase 1 then phase 2, up to this many
				 * times while a cycle lowers T_max (the
				 * polish frees room for more phase-1 moves;
				 * 0 counts as 1) */
	uint32_t kicks;         /* after the search: kicks (iterated local
				 * search, see parsa_tmax_refine); 0 = none */
	uint32_t kick_size;     /* examples a kick moves from each busiest
				 * part (0 counts as 1) */
	uint32_t kick_patience; /* the kicks end after this many in a row
				 * that kept nothing (0: never early) */
	uint32_t kick_levels;   /* when those end (kicks made or patience
				 * spent): kicks of 2x, 4x ... kick_size, up
				 * to this many doublings (at most 16) */
	uint32_t kick_more;     /* ... at most this many of them in all */
	uint32_t kick_patience_more; /* ... each size ending after this many
				      * in a row kept nothing (0 counts
				      * as 1) */
	int exhaustive_swaps;   /* 1: no pair is skipped by the swaps'
				 * bound (the same placement, slower; for
				 * the tests) */
	uint64_t tsum_cap;      /* 0: none; else no move (kicks included)
				 * raises T_sum above max(tsum_cap, T_sum
				 * on entry), so T_max and M_max fall under
				 * a T_sum budget */
};

struct parsa_tmax_stats {
	uint64_t tmax_before, tmax_after; /* T_max on entry and on return */
	uint64_t tsum_before, tsum_after; /* T_sum on entry and on return */
	uint64_t u_moves, v_moves;        /* phase 1 moves */
	uint64_t v_trades;                /* phase 1 owner trades */
	uint64_t pull_moves;              /* phase 1 moves of other parts'
					   * examples */
	uint64_t swaps;                   /* phase 1 swaps */
	uint64_t swap_pairs_skipped;      /* pairs (u, q) the swaps' bound
					   * left untried */
	uint64_t group_moves;             /* phase 1: examples moved in
					   * groups */
	uint64_t polish_moves;            /* phase 2 moves */
	uint32_t rounds;                  /* phase 1 rounds run */
	uint32_t kicks, kicks_kept;       /* kicks made; kept */
	int stopped;                      /* 1: the stop cut it */
};

/*
 * Refine the placement (part: g->n_rows entries < k; owner: g->n_cols
 * entries; used: N(U_1..U_k) of part, k = used->k) in place: part, owner
 * and used change together.  Every used feature's owner must be one of
 * its users (PARSA_EINVAL otherwise); unused features keep theirs.
 * T (k entries, may be NULL) receives the final T_i, which equal
 * parsa_metrics_parts' for the placement returned.  0, PARSA_EINVAL or
 * PARSA_ENOMEM (on entry: nothing changed; later: the moves made so far
 * kept, the placement valid).
 */
int parsa_tmax_refine(const struct parsa_graph *g, uint32_t *part,
		      struct parsa_nbrset *used, uint32_t *owner,
		      const struct parsa_tmax_opts *o, uint64_t *T,
		      struct parsa_tmax_stats *st, struct parsa_err *err);

#endif /* PARSA_TMAX_H */
