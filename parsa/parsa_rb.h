/*
 * parsa_rb: k-way partition of a small weighted hypergraph by recursive
 * bisection, for the connectivity objective: the initial partition of the
 * multilevel candidate (parsa_ml_partition) on its coarsest graph.
 *
 * The hypergraph is a parsa_graph read sideways: rows are the vertices
 * (examples, or clusters of them, weight w[r]), columns are the nets (the
 * features).  The connectivity of a partition is Σ_v (λ_v − 1), λ_v the
 * number of parts among net v's pins: half of T_sum when every feature is
 * owned by one of its users.
 *
 * Recursive bisection with net splitting: k splits into ⌊k/2⌋ and ⌈k/2⌉,
 * the vertices into two sides whose weights are proportional to those
 * (each within 1 + eps of its share, or its share plus the heaviest
 * vertex where the weights are too coarse for that), and each side goes
 * on with the pins of every net it holds.  A net cut by a bisection adds
 * 1 to the connectivity and lives on in both sides, so the connectivity
 * of the k-way result is exactly the sum of the cuts of all the
 * bisections.  Each bisection is the best (fewest cut nets, then the
 * smaller overweight) of `tries` starts, half greedy hypergraph growing
 * from a random vertex and half random fills, each improved by
 * Fiduccia-Mattheyses passes (moves by best gain from gain buckets, one
 * set per side, in a random order per start; every vertex at most once
 * per pass; the pass rolled back to its best prefix) until a pass gains
 * nothing (at most 16).
 *
 * Cost: per bisection O(tries · passes · pins), where pins
 * counts the sub-hypergraph's pins; meant for graphs of thousands of
 * vertices (the coarsest level), not millions.  Deterministic for a seed.
 */
#ifndef PARSA_RB_H
#define PARSA_RB_H

#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "parsa_stop.h"

struct parsa_rb_opts {
	uint32_t k;      /* parts, >= 1 */
	double eps;      /* per-bisection weight tolerance, >= 0 */
	uint32_t tries;  /* starts per bisection, >= 1 */
	uint64_t seed;
	/* may be NULL; polled before every start but a bisection's first
	 * and before every FM pass: once due, each bisection keeps the best
	 * of what it has (its first start at least), so the result is
	 * still a valid k-way partition, only a worse one */
	const struct parsa_stop *stop;
	/* multilevel starts per bisection instead of the flat ones (0:
	 * none, the flat starts): each coarsens the sub-hypergraph by
	 * heavy-edge matching (pairs; rating Σ 1/(|e| − 1) over the shared
	 * nets of at most 256 pins, at most 2048 pins rated per vertex, a
	 * pair weighing at most 1/80 of the whole or twice the heaviest
	 * vertex) down to 160 vertices or until a level would shrink by
	 * less than 10% (when already the first would, the start is
	 * `tries` flat ones and the only one: more would be the same), bisects the
	 * coarsest with `tries` flat starts and refines the bisection with
	 * FM passes on every level on the way back (the nets are kept, not
	 * merged: the cut of a level is the cut of its projection); the
	 * best of the `ml` results is kept (the smaller overweight, then
	 * the fewer cut nets) */
	uint32_t ml;
};

/*
 * part[r] (g->n_rows entries) receives the part of row r, in 0..k-1.
 * w (may be NULL: every weight 1) holds the rows' weights.  Every part
 * gets at least one row when n_rows >= k.  *conn (may be NULL) receives
 * the connectivity of the result.  0, PARSA_ENOMEM or PARSA_EINVAL (k ==
 * 0, tries == 0, eps < 0).
 */
int parsa_rb_partition(const struct parsa_graph *g, const uint32_t *w,
		       const struct parsa_rb_opts *o, uint32_t *part,
		       uint64_t *conn, struct parsa_err *err);

#endif /* PARSA_RB_H */
