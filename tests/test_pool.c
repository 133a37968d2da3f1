/*
 * part_pool: every task runs exactly once, the result and error are those
 * of a plain loop over the tasks in order (the lowest failed task), and a
 * failure stops the tasks not yet taken; against that loop as the oracle
 * for random task counts, thread counts and failing sets.  Also built
 * under ThreadSanitizer by `make tsan`.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "harness.h"
#include "parsa_rng.h"
#include "part_pool.h"

#define MAX_TASKS 64

struct job {
	uint32_t n;
	uint8_t fails[MAX_TASKS];  /* task t returns fails[t] (0 = ok) */
	atomic_uint runs[MAX_TASKS];
	uint64_t work[MAX_TASKS];  /* each task's own slot */
};

static int task(void *arg, uint32_t t, struct parsa_err *err)
{
	struct job *j = arg;
	uint64_t x = t + 1;

	atomic_fetch_add(&j->runs[t], 1);
	for (int i = 0; i < 2000; i++) /* some work, so threads overlap */
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	j->work[t] = x;
	if (j->fails[t])
		return parsa_fail(err, j->fails[t], "task %u failed", t);
	return 0;
}

/* The oracle: the plain loop. */
static int loop(struct job *j, struct parsa_err *err)
{
	for (uint32_t t = 0; t < j->n; t++) {
		int rc = task(j, t, err);

		if (rc)
			return rc;
	}
	return 0;
}

static void test_random_against_loop(void)
{
	struct parsa_rng rng;

	parsa_rng_seed(&rng, 7);
	for (int iter = 0; iter < 400; iter++) {
		static struct job a, b;
		struct parsa_err ea = {0}, eb = {0};
		uint32_t threads = 1 + (uint32_t)parsa_rng_below(&rng, 6);
		int ra, rb, any = 0;

		memset(&a, 0, sizeof(a));
		a.n = (uint32_t)parsa_rng_below(&rng, MAX_TASKS + 1);
		for (uint32_t t = 0; t < a.n; t++)
			if (parsa_rng_below(&rng, 8) == 0)
				a.fails[t] = (uint8_t)(1 + parsa_rng_below(&rng, 5));
		memcpy(&b, &a, sizeof(a));
		ra = part_pool_run(a.n, threads, task, &a, &ea);
		rb = loop(&b, &eb);
		CHECK_INT(ra, ==, rb);
		CHECK_STR(ea.msg, eb.msg);
		for (uint32_t t = 0; t < a.n; t++) {
			unsigned ru = atomic_load(&a.runs[t]);

			/* before the first failure every task ran once; after
			 * it a task ran at most once (threads may have taken
			 * it already) */
			if (!any)
				CHECK_INT(ru, ==, 1);
			else
				CHECK_INT(ru, <=, 1);
			if (ru)
				CHECK(a.work[t] == b.work[t] || !atomic_load(&b.runs[t]));
			any |= a.fails[t] != 0;
		}
	}
}

static void test_more_threads_than_tasks_and_none(void)
{
	static struct job j;
	struct parsa_err err = {0};

	memset(&j, 0, sizeof(j));
	CHECK_INT(part_pool_run(0, 8, task, &j, &err), ==, 0);
	j.n = 3;
	CHECK_INT(part_pool_run(3, 200, task, &j, &err), ==, 0);
	for (uint32_t t = 0; t < 3; t++)
		CHECK_INT(atomic_load(&j.runs[t]), ==, 1);
	CHECK_INT(err.code, ==, 0);
	CHECK(part_pool_cpus() >= 1);
}

int main(void)
{
	RUN(test_random_against_loop);
	RUN(test_more_threads_than_tasks_and_none);
	return harness_done();
}
