/*
 * test_train_prox: the trainer's numerics against brute-force oracles:
 * soft-threshold, the trust-region proximal step (grid search of the
 * local model), loss derivatives (finite differences), AUC (all pairs),
 * the key remapping (server i's keys are one contiguous range), and the
 * --link parser.
 */
#include <math.h>

#include "harness.h"
#include "ps_link.h"
#include "train_prox.h"
#include "train_run.h"

static uint64_t rng_state = 12345;

static double urand(void) /* [0, 1) */
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

static void test_soft_threshold(void)
{
	CHECK(train_soft_threshold(3.0, 1.0) == 2.0);
	CHECK(train_soft_threshold(-3.0, 1.0) == -2.0);
	CHECK(train_soft_threshold(0.5, 1.0) == 0.0);
	CHECK(train_soft_threshold(-1.0, 1.0) == 0.0);
	CHECK(train_soft_threshold(2.0, 0.0) == 2.0);
}

/* The local model the step minimises. */
static double model(double w, double d, double g, double u, double lambda)
{
	return g * d + u * d * d / 2 + lambda * fabs(w + d);
}

/* Brute force: the best d on a fine grid over [-delta, delta], plus the
 * kink d = -w when it lies inside. */
static double brute_step(double w, double g, double u, double lambda,
			 double delta)
{
	double best = 0, bv = model(w, 0, g, u, lambda);
	int n = 200000;

	for (int i = 0; i <= n; i++) {
		double d = -delta + 2 * delta * i / n;
		double v = model(w, d, g, u, lambda);

		if (v < bv) {
			bv = v;
			best = d;
		}
	}
	if (fabs(w) <= delta && model(w, -w, g, u, lambda) <= bv)
		best = -w;
	return w + best;
}

static void test_prox_step_vs_brute_force(void)
{
	for (int t = 0; t < 300; t++) {
		double w = (urand() - 0.5) * 4 * (t % 3 == 0 ? 0 : 1);
		double g = (urand() - 0.5) * 10, u = urand() * 5 + 0.01;
		double lambda = t % 5 == 0 ? 0 : urand() * 3;
		double delta = urand() * 3 + 0.01, d0 = delta;
		double got = train_prox_step(w, g, u, lambda, &delta);
		double want = brute_step(w, g, u, lambda, d0);
		double tol = 2 * 2 * d0 / 200000 + 1e-12;

		CHECK(fabs(got - want) <= tol ||
		      model(w, got - w, g, u, lambda) <=
			      model(w, want - w, g, u, lambda) + 1e-12);
		CHECK(fabs(got - w) <= d0 + 1e-15);
		/* trust region: max(2|d|, delta/2) */
		CHECK(fabs(delta - fmax(2 * fabs(got - w), d0 / 2)) < 1e-12);
	}
	/* no curvature: no move */
	{
		double delta = 1;

		CHECK(train_prox_step(0.7, 3, 0, 1, &delta) == 0.7);
	}
	/* an unconstrained step equals the closed form */
	{
		double delta = 100;

		CHECK(fabs(train_prox_step(0, -5, 2, 1, &delta) - 2.0) < 1e-15);
	}
}

static void test_loss_derivatives(void)
{
	for (int t = 0; t < 200; t++) {
		double m = (urand() - 0.5) * 40, h = 1e-5, d1, d2;
		int y = t % 2 ? 1 : -1;
		double fd1 = (train_logloss(m + h, y) - train_logloss(m - h, y)) /
			     (2 * h);
		double a, b, c, e;

		train_loss_derivs(m, y, &d1, &d2);
		CHECK(fabs(d1 - fd1) < 1e-6);
		train_loss_derivs(m + h, y, &a, &b);
		train_loss_derivs(m - h, y, &c, &e);
		CHECK(fabs(d2 - (a - c) / (2 * h)) < 1e-5);
	}
	CHECK(fabs(train_logloss(0, 1) - log(2.0)) < 1e-15);
	CHECK(isfinite(train_logloss(-1000, 1)));
	CHECK(fabs(train_logloss(-1000, 1) - 1000) < 1e-9);
	CHECK(train_logloss(1000, 1) < 1e-300 + 1e-12);
}

static void test_auc_vs_pairs(void)
{
	for (int t = 0; t < 20; t++) {
		enum { N = 60 };
		double s[N];
		int8_t y[N];
		double num = 0, den = 0;

		for (int i = 0; i < N; i++) {
			s[i] = floor(urand() * 8); /* many ties */
			y[i] = urand() < 0.4 ? 1 : -1;
		}
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++)
				if (y[i] > 0 && y[j] < 0) {
					den += 1;
					num += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5
									     : 0;
				}
		CHECK(fabs(train_auc(s, y, N) - num / den) < 1e-12);
	}
	{
		double s[3] = {1, 2, 3};
		int8_t y[3] = {1, 1, 1};

		CHECK(isnan(train_auc(s, y, 3)));
	}
}

static void test_keys_contiguous_per_server(void)
{
	enum { N = 1000, K = 7 };
	uint32_t owner[N], col_of[N];
	uint64_t key_of[N], starts[K];

	for (int j = 0; j < N; j++)
		owner[j] = (uint32_t)(urand() * K);
	owner[5] = 6;
	train_keys_build(owner, N, K, key_of, col_of, starts);
	CHECK(starts[0] == 0);
	for (int i = 1; i < K; i++)
		CHECK(starts[i] >= starts[i - 1]);
	for (int j = 0; j < N; j++) {
		uint32_t s = owner[j];
		uint64_t end = s + 1 < K ? starts[s + 1] : N;

		CHECK(key_of[j] >= starts[s] && key_of[j] < end);
		CHECK(col_of[key_of[j]] == (uint32_t)j);
		/* stable: compact-id order within a server */
		if (j > 0 && owner[j - 1] == s)
			CHECK(key_of[j - 1] < key_of[j]);
	}
}

static void test_link_parse(void)
{
	struct ps_link_spec sp;
	struct parsa_err err = {0};

	CHECK_INT(ps_link_parse("1gbit,0.1ms", &sp, &err), ==, 0);
	CHECK(fabs(sp.bits_per_s - 1e9) < 1 && fabs(sp.latency_s - 1e-4) < 1e-12);
	CHECK_INT(ps_link_parse("100mbit,2ms", &sp, &err), ==, 0);
	CHECK(fabs(sp.bits_per_s - 1e8) < 1 && fabs(sp.latency_s - 2e-3) < 1e-12);
	CHECK_INT(ps_link_parse("5e6,0", &sp, &err), ==, 0);
	CHECK(sp.bits_per_s == 5e6 && sp.latency_s == 0);
	CHECK(sp.per_machine == 0);
	CHECK_INT(ps_link_parse("1gbit,0.1ms,nic", &sp, &err), ==, 0);
	CHECK(sp.per_machine == 1 && fabs(sp.latency_s - 1e-4) < 1e-12);
	CHECK_INT(ps_link_parse("1gbit,0.1ms,pair", &sp, &err), ==, 0);
	CHECK(sp.per_machine == 0);
	CHECK_INT(ps_link_parse("1gbit,0.1ms,bus", &sp, &err), ==, PARSA_EINVAL);
	parsa_err_clear(&err);
	CHECK_INT(ps_link_parse("1gbit", &sp, &err), ==, PARSA_EINVAL);
	parsa_err_clear(&err);
	CHECK_INT(ps_link_parse("0gbit,1ms", &sp, &err), ==, PARSA_EINVAL);
	parsa_err_clear(&err);
	CHECK_INT(ps_link_parse("1gbit,1parsec", &sp, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "latency");
}

int main(void)
{
	RUN(test_soft_threshold);
	RUN(test_prox_step_vs_brute_force);
	RUN(test_loss_derivatives);
	RUN(test_auc_vs_pairs);
	RUN(test_keys_contiguous_per_server);
	RUN(test_link_parse);
	return harness_done();
}
