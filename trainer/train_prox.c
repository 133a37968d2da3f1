/*
 * train_prox: loss, derivatives, the proximal step and AUC (train_prox.h).
 */
#include "train_prox.h"

#include <math.h>
#include <stdlib.h>

double train_logloss(double margin, int y)
{
	double z = -(double)y * margin;

	/* log(1 + e^z) = max(z, 0) + log1p(e^-|z|) */
	return (z > 0 ? z : 0) + log1p(exp(-fabs(z)));
}

void train_loss_derivs(double margin, int y, double *d1, double *d2)
{
	double z = (double)y * margin, s;

	s = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
	*d1 = -(double)y * (1.0 - s);
	*d2 = s * (1.0 - s);
}

double train_soft_threshold(double z, double t)
{
	if (z > t)
		return z - t;
	if (z < -t)
		return z + t;
	return 0.0;
}

double train_prox_step(double w, double g, double u, double lambda,
		       double *delta)
{
	double nw, d;

	if (!(u > 0))
		return w;
	nw = train_soft_threshold(w - g / u, lambda / u);
	d = nw - w;
	if (d > *delta)
		d = *delta;
	else if (d < -*delta)
		d = -*delta;
	*delta = fabs(d) * 2 > *delta / 2 ? fabs(d) * 2 : *delta / 2;
	return w + d;
}

struct scored {
	double s;
	int8_t y;
};

static int by_score(const void *a, const void *b)
{
	double x = ((const struct scored *)a)->s;
	double z = ((const struct scored *)b)->s;

	return (x > z) - (x < z);
}

double train_auc(const double *score, const int8_t *y, size_t n)
{
	struct scored *v = malloc((n ? n : 1) * sizeof(*v));
	double pos = 0, neg = 0, ranks = 0; /* sum of positives' ranks */
	size_t i = 0;

	if (!v)
		return NAN;
	for (size_t r = 0; r < n; r++)
		v[r] = (struct scored){score[r], y[r]};
	qsort(v, n, sizeof(*v), by_score);
	while (i < n) {
		size_t j = i, p = 0;

		while (j < n && v[j].s == v[i].s)
			p += v[j++].y > 0;
		/* ranks i+1..j share the mean rank (i + 1 + j) / 2 */
		ranks += (double)p * (double)(i + 1 + j) / 2.0;
		pos += (double)p;
		neg += (double)(j - i - p);
		i = j;
	}
	free(v);
	if (pos == 0 || neg == 0)
		return NAN;
	return (ranks - pos * (pos + 1) / 2) / (pos * neg);
}
