/*
 * train_prox: the numerics of sparse L1-regularized logistic regression
 * (no I/O, no state): loss and its derivatives, the per-coordinate
 * proximal (soft-threshold) step with a trust region, and AUC.
 *
 * Problem: minimise F(w) = sum_r log(1 + exp(-y_r w.x_r)) + lambda ||w||_1
 * (labels y_r in {-1, +1}, no bias; liblinear -s 6 -c 1 for lambda = 1).
 *
 * Step (thesis ch. 6, Algorithm 5, server side): with g the aggregated
 * gradient of coordinate j and u > 0 its curvature bound, the new weight
 * minimises the local model
 *     g d + u d^2 / 2 + lambda |w + d|   over  |d| <= delta,
 * i.e. the soft-threshold of w - g/u at lambda/u, clamped to the trust
 * region [w - delta, w + delta] (the model is convex in d, so clamping its
 * minimiser solves the constrained problem).  The trust region then
 * becomes max(2 |d|, delta / 2).
 */
#ifndef TRAIN_PROX_H
#define TRAIN_PROX_H

#include <stddef.h>
#include <stdint.h>

#define TRAIN_DELTA0 1.0 /* initial trust region of every coordinate */

/* log(1 + exp(-y m)), computed without overflow. */
double train_logloss(double margin, int y);

/*
 * First and second derivative of train_logloss with respect to the margin:
 * *d1 = -y (1 - s), *d2 = s (1 - s) with s = sigmoid(y m).
 */
void train_loss_derivs(double margin, int y, double *d1, double *d2);

/* Soft-threshold: sign(z) max(|z| - t, 0)  (t >= 0). */
double train_soft_threshold(double z, double t);

/*
 * The new weight of one coordinate (see above).  u <= 0 (no data on the
 * coordinate) leaves w unchanged.  *delta (in/out) is the trust region.
 */
double train_prox_step(double w, double g, double u, double lambda,
		       double *delta);

/*
 * Area under the ROC curve of scores against labels (+1/-1), ties counted
 * one half.  NaN when one class is missing.  Sorts a copy: O(n log n);
 * returns NaN also when out of memory.
 */
double train_auc(const double *score, const int8_t *y, size_t n);

#endif /* TRAIN_PROX_H */
