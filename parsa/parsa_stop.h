/*
 * parsa_stop: when to end the long refinement phases early.
 *
 * A stop is a deadline on the monotonic clock and/or a cancel flag that
 * another thread may set.  The refinement code (parsa_fm, parsa_kfm,
 * parsa_ml, and the pipeline that chains them) polls it at checkpoints:
 * before a sweep and every PARSA_STOP_POPS examples within one, before an
 * FM pass and every PARSA_STOP_POPS pops within one, before a coarsening
 * level and every PARSA_STOP_POPS vertices of its clustering, before a
 * level's refinement, before every start but the first of each recursive
 * bisection (parsa_rb) and before each of its FM passes, before each pair
 * of parts of the flow refinement (parsa_flow) and every PARSA_STOP_POPS
 * augmenting paths of its max flow, before every local-moving pass of the
 * Louvain communities (parsa_louvain) and every PARSA_STOP_POPS nodes of
 * one.  A phase that finds the stop due ends with a valid
 * placement (a sweep's moves so far kept, each being exact; a pass rolled
 * back to its best prefix; a level cut in its clustering dropped, the
 * levels built still projected down without refinement),
 * so every guarantee of the phase (balance cap, memory bound, never a
 * higher connectivity) still holds; only the work left is skipped.
 *
 * A result cut by a deadline depends on the machine's speed: runs with a
 * deadline are not reproducible the way runs without one are.
 */
#ifndef PARSA_STOP_H
#define PARSA_STOP_H

#include <stdatomic.h>

#include "base_time.h"

struct parsa_stop {
	const atomic_int *cancel; /* may be NULL; non-zero: stop */
	double deadline;          /* parsa_stop_clock() time; 0 = none */
};

/* What parsa_stop_due found. */
enum {
	PARSA_STOP_NO = 0,
	PARSA_STOP_DEADLINE,
	PARSA_STOP_CANCEL,
};

/* Work between two polls of the stop within a sweep, an FM pass (pops)
 * or a clustering (vertices). */
#define PARSA_STOP_POPS 4096

/* Seconds on CLOCK_MONOTONIC (base_now). */
static inline double parsa_stop_clock(void)
{
	return base_now();
}

/* PARSA_STOP_CANCEL when *cancel is set, PARSA_STOP_DEADLINE when the
 * deadline has passed, else PARSA_STOP_NO (also for s == NULL). */
int parsa_stop_due(const struct parsa_stop *s);

#endif /* PARSA_STOP_H */
