/*
 * test_stop: deadlines and cancel flags in the refinement (parsa_stop).
 *
 * A stop that is due on entry leaves the sweeps, the k-way FM and the
 * V-cycle without a move; one that never comes due changes nothing (the
 * same placement as without a stop, byte for byte); the pipeline with
 * --time-limit keeps the guard (T_max, M_max never above the step-1
 * result's) and the balance bound, reports the cut, and really stops:
 * with a tenth of the time `best` takes, its refinement ends in well
 * under half of it (self-calibrated on this machine, so it fails when a
 * phase ignores the deadline); a cancel from another thread ends the
 * run as promptly, with PARSA_ECANCEL.
 */
#include "harness.h"
#include "testutil.h"
#include "testpart.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parsa_fm.h"
#include "parsa_kfm.h"
#include "parsa_metrics.h"
#include "parsa_ml.h"
#include "parsa_stop.h"
#include "part_run.h"

/* A deadline long past (the monotonic clock has run for more than a
 * second since boot) and one that will not come during the test. */
#define PAST 1e-3
#define NEVER 1e15

static void test_stop_due(void)
{
	atomic_int flag = 0;
	struct parsa_stop none = { NULL, 0 }, past = { NULL, PAST };
	struct parsa_stop never = { &flag, NEVER }, cancel = { &flag, PAST };

	CHECK(parsa_stop_clock() > PAST);
	CHECK_INT(parsa_stop_due(NULL), ==, PARSA_STOP_NO);
	CHECK_INT(parsa_stop_due(&none), ==, PARSA_STOP_NO);
	CHECK_INT(parsa_stop_due(&past), ==, PARSA_STOP_DEADLINE);
	CHECK_INT(parsa_stop_due(&never), ==, PARSA_STOP_NO);
	atomic_store(&flag, 1);
	CHECK_INT(parsa_stop_due(&never), ==, PARSA_STOP_CANCEL);
	CHECK_INT(parsa_stop_due(&cancel), ==, PARSA_STOP_CANCEL);
}

/* Which refinement run_one runs. */
enum phase { SWEEPS, KFM, VCYCLE };

/* One phase on (g, part) with fresh used sets and the given stop; the
 * sets are checked against part on return; *conn gets the connectivity. */
static int run_one(const struct parsa_graph *g, uint32_t *part, uint32_t k,
		   enum phase ph, const struct parsa_stop *stop,
		   uint64_t *moves, uint64_t *conn)
{
	struct parsa_nbrset used;
	uint64_t cap = parsa_balance_cap(g->n_rows, k, 1.03);
	struct parsa_fm_opts fo = { 4, cap, UINT64_MAX, 1e-3, 7, 1, 1, 0, NULL,
				    2, stop };
	struct parsa_kfm_opts ko = { 4, cap, UINT64_MAX, 7, 0, NULL, 0, stop };
	struct parsa_fm_stats fs = { 0 };
	struct parsa_kfm_stats ks = { 0 };
	int rc;

	if (tu_used_of(g, part, k, &used))
		return -1;
	if (ph == SWEEPS)
		rc = parsa_fm_refine(g, part, &used, &fo, &fs, NULL);
	else if (ph == KFM)
		rc = parsa_kfm_refine(g, part, &used, &ko, &ks, NULL);
	else
		rc = parsa_ml_refine(g, part, &used, &fo, 6, &fs, NULL);
	if (rc == 0)
		tu_check_used(g, part, &used);
	*moves = ph == KFM ? ks.moves : fs.moves;
	*conn = parsa_connectivity(&used);
	parsa_nbrset_release(&used);
	return rc;
}

/* Due on entry (deadline or cancel): no move, the placement unchanged.
 * Never due: the same placement as without a stop. */
static void test_due_and_never(void)
{
	struct parsa_rng r;
	atomic_int flag = 1;
	struct parsa_stop past = { NULL, PAST }, cancelled = { &flag, NEVER };
	struct parsa_stop never = { NULL, NEVER };

	parsa_rng_seed(&r, 5);
	for (int iter = 0; iter < 12; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, 12);
		uint32_t rows = 200 + (uint32_t)parsa_rng_below(&r, 1500);
		enum phase ph = (enum phase)(iter % 3);
		struct parsa_graph g;
		uint32_t *p0 = malloc(rows * sizeof(uint32_t));
		uint32_t *a = malloc(rows * sizeof(uint32_t));
		uint32_t *b = malloc(rows * sizeof(uint32_t));
		uint64_t moves, conn, conn0, cb;

		REQUIRE(p0 && a && b);
		tu_heavy_graph(&g, &r, rows, 100 + (uint32_t)parsa_rng_below(&r, 600),
			       10, 200);
		for (uint32_t u = 0; u < rows; u++)
			p0[u] = u % k; /* within the cap: no rebalancing move */
		/* the phase does move something without a stop */
		memcpy(a, p0, rows * sizeof(uint32_t));
		REQUIRE(run_one(&g, a, k, ph, NULL, &moves, &conn0) == 0);
		CHECK_INT(moves, >, 0);
		for (int s = 0; s < 2; s++) {
			memcpy(b, p0, rows * sizeof(uint32_t));
			REQUIRE(run_one(&g, b, k, ph, s ? &cancelled : &past,
					&moves, &conn) == 0);
			CHECK_INT(moves, ==, 0);
			CHECK(memcmp(b, p0, rows * sizeof(uint32_t)) == 0);
		}
		memcpy(b, p0, rows * sizeof(uint32_t));
		REQUIRE(run_one(&g, b, k, ph, &never, &moves, &cb) == 0);
		CHECK(memcmp(a, b, rows * sizeof(uint32_t)) == 0);
		CHECK_INT(cb, ==, conn0);
		free(p0);
		free(a);
		free(b);
		parsa_graph_release(&g);
	}
}

/* part_run with preset q (seed 3), the given time limit and cancel flag. */
static int run_preset(const struct part_dataset *ds, uint32_t k,
		      enum part_quality q, double limit,
		      const atomic_int *cancel, struct part_result *r,
		      struct parsa_err *err)
{
	struct part_run_opts o;

	part_run_opts_default(&o);
	part_quality_apply(&o, q);
	o.pu.k = k;
	o.pu.seed = 3;
	o.pu.cancel = cancel;
	o.random_trials = 1;
	o.time_limit = limit;
	part_result_init(r);
	return part_run(ds, &o, r, err);
}

static int run_best(const struct part_dataset *ds, uint32_t k,
		    double limit, const atomic_int *cancel,
		    struct part_result *r, struct parsa_err *err)
{
	return run_preset(ds, k, PART_QUALITY_BEST, limit, cancel, r, err);
}

/* The guard and the balance bound hold whatever the limit; a limit that
 * is never reached is not reported; one that is, is. */
static void test_pipeline_limits(void)
{
	struct parsa_rng r;
	static const double limits[] = { 1e-6, 2e-3, 2e-2, 1e6 };

	parsa_rng_seed(&r, 17);
	for (int iter = 0; iter < 4; iter++) {
		uint32_t k = 2 + (uint32_t)parsa_rng_below(&r, 16);
		struct parsa_graph g;
		struct part_dataset ds;
		struct part_result f, b;

		/* drawn in the order gcc evaluated them as arguments: the same cases */
		uint32_t cols = 100 + (uint32_t)parsa_rng_below(&r, 900);
		uint32_t rows = 500 + (uint32_t)parsa_rng_below(&r, 3000);

		tu_heavy_graph(&g, &r, rows, cols, 10, 300);
		tu_as_dataset(&ds, &g);
		REQUIRE(run_preset(&ds, k, PART_QUALITY_FAST, 0, NULL, &f, NULL) == 0);
		for (int l = 0; l < 4; l++) {
			REQUIRE(run_best(&ds, k, limits[l], NULL, &b, NULL) == 0);
			CHECK(b.m.T_max <= f.m.T_max && b.m.M_max <= f.m.M_max);
			CHECK(b.m.imbalance <= 1.03 + 1e-9);
			if (l == 0)
				CHECK_INT(b.time_limited, ==, 1);
			if (l == 3)
				CHECK_INT(b.time_limited, ==, 0);
			part_result_release(&b);
		}
		part_result_release(&f);
		part_dataset_release(&ds);
	}
}

/* A graph on which best's refinement takes a while: clustered rows. */
static void clustered(struct part_dataset *ds, uint32_t rows)
{
	struct parsa_rng r;
	struct parsa_graph g;
	uint32_t row[24];

	parsa_rng_seed(&r, 99);
	parsa_graph_init(&g);
	for (uint32_t u = 0; u < rows; u++) {
		uint32_t c = (uint32_t)parsa_rng_below(&r, 64), d = 0;

		for (; d < 20; d++)
			row[d] = c * 300 + (uint32_t)parsa_rng_below(&r, 300);
		for (; d < 24; d++)
			row[d] = (uint32_t)parsa_rng_below(&r, 64 * 300);
		CHECK(parsa_graph_add_row(&g, row, d, NULL) == 0);
	}
	tu_as_dataset(ds, &g);
}

struct canceller {
	atomic_int *flag;
	double after;
};

static void *cancel_later(void *p)
{
	struct canceller *c = p;
	struct timespec ts = { 0, (long)(c->after * 1e9) };

	nanosleep(&ts, NULL);
	atomic_store(c->flag, 1);
	return NULL;
}

/* Self-calibrated: best's refinement takes t; with a limit of t/10 (from
 * the start of the run) the refinement ends well within t/2, and a cancel
 * t/10 into the refinement ends the run as fast. */
static void test_limit_and_cancel_stop_the_run(void)
{
	struct part_dataset ds;
	struct part_result full, cut;
	struct parsa_err err = { 0 };
	atomic_int flag = 0;
	struct canceller c = { &flag, 0 };
	pthread_t th;
	double t, t0, limit;

	clustered(&ds, 20000);
	REQUIRE(run_best(&ds, 16, 0, NULL, &full, NULL) == 0);
	t = full.t_refine;
	CHECK_INT(full.time_limited, ==, 0);
	limit = full.t_partition_u + t / 10;
	REQUIRE(run_best(&ds, 16, limit, NULL, &cut, NULL) == 0);
	CHECK_INT(cut.time_limited, ==, 1);
	CHECK(cut.t_refine < t / 2);
	CHECK(cut.m.T_max <= full.m.T_max * 2 && cut.m.imbalance <= 1.03 + 1e-9);
	part_result_release(&cut);
	c.after = full.t_partition_u + t / 10;
	REQUIRE(pthread_create(&th, NULL, cancel_later, &c) == 0);
	t0 = parsa_stop_clock();
	CHECK_INT(run_best(&ds, 16, 0, &flag, &cut, &err), ==, PARSA_ECANCEL);
	CHECK(parsa_stop_clock() - t0 < full.t_partition_u + t / 2);
	CHECK_CONTAINS(err.msg, "cancel");
	pthread_join(th, NULL);
	part_result_release(&cut);
	part_result_release(&full);
	part_dataset_release(&ds);
}

int main(void)
{
	RUN(test_stop_due);
	RUN(test_due_and_never);
	RUN(test_pipeline_limits);
	RUN(test_limit_and_cancel_stop_the_run);
	return harness_done();
}
