/*
 * part_gen: a synthetic, CTR-like LIBSVM dataset generator (`parsa gen`).
 *
 * The data has the structure that makes placement matter: examples fall
 * into topics, each topic uses its own Zipf-distributed vocabulary, and a
 * global Zipf background (shared popular features) links the topics.
 *
 * Model (all randomness from o->seed, so the output is a pure function of
 * the options):
 *   - Zipf(s) over ranks 0..F-1 (F = features): P(r) ~ 1/(r+1)^s.  Sampled
 *     with an alias table over the first min(F, 2^21) ranks plus one tail
 *     bucket whose rank is drawn from the continuous power law.
 *   - Topic t maps rank r to feature (a_t * r + b_t) mod F, an affine
 *     permutation with random a_t coprime to F; the global background uses
 *     its own permutation.  Topic heads are thus random, mostly disjoint
 *     feature sets.
 *   - Each example picks a topic uniformly and a number of nonzeros n:
 *     1 + Poisson(avg_nnz - 1) when avg_nnz >= 1, else Poisson(avg_nnz)
 *     (Poisson with mean >= 30 is approximated by a rounded normal), capped
 *     at F.  Each nonzero comes from the topic with probability topic_frac,
 *     else from the background.  A feature already in the row is redrawn (up
 *     to 8 times, then the next free id is taken), so rows have exactly n
 *     distinct features and the mean is avg_nnz (less only when the cap at F
 *     bites).
 *   - Labels come from a planted sparse linear model: w_j != 0 for ~10% of
 *     features, w_j ~ N(0, sigma^2) with sigma = 2 / sqrt(max(1, avg_nnz/10))
 *     (w is a hash of (seed, j): no memory); label = +1 when
 *     sigmoid(x.w + N(0, 0.25)) > U(0,1), else -1.
 *   - Lines are "+1 3:1 17:1 ..." / "-1 ...": 1-based feature ids, strictly
 *     ascending, value 1.  A row with n = 0 is the label alone.
 *
 * Memory is O(min(F, 2^21) + topics + max row length), independent of the
 * number of examples.
 */
#ifndef PART_GEN_H
#define PART_GEN_H

#include <stdint.h>

#include "parsa_err.h"

struct part_gen_opts {
	uint64_t examples;  /* rows, >= 1 */
	uint64_t features;  /* feature space F, >= 1 (ids 1..F) */
	double avg_nnz;     /* mean nonzeros per row, 0 < avg_nnz <= F */
	uint32_t topics;    /* >= 1 */
	uint64_t seed;      /* any value */
	double topic_frac;  /* [0, 1]: share of nonzeros from the topic (0.8) */
	double zipf;        /* Zipf exponent >= 0 (0 = uniform), default 1.1 */
	/* Called every 65536 examples and at the end with (done, examples);
	 * may be NULL.  Runs on the caller's thread. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
};

/* Defaults: 100000 examples, 100000 features, avg_nnz 17, 64 topics,
 * seed 1, topic_frac 0.8, zipf 1.1, no progress callback. */
void part_gen_opts_default(struct part_gen_opts *o);

/* Check the options; PARSA_EINVAL with a message naming the bad one. */
int part_gen_validate(const struct part_gen_opts *o, struct parsa_err *err);

/*
 * Generate the dataset into path.  A path ending in ".gz" is written
 * gzip-compressed (zlib level 1); "-" writes plain text to stdout.  The
 * file is written through part_out (part_out.h): a regular file is replaced
 * atomically only on success (never a partial dataset), a symlink's target
 * likewise, a device or FIFO is written directly.
 * Returns 0, PARSA_EINVAL (options), PARSA_ENOMEM or PARSA_EIO.
 */
int part_gen_write(const struct part_gen_opts *o, const char *path,
		   struct parsa_err *err);

#endif /* PART_GEN_H */
