/*
 * part_pool: a task counter shared by a few threads (see part_pool.h).
 */
#include "part_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct pool {
	part_pool_fn fn;
	void *arg;
	uint32_t n;
	atomic_uint next;    /* the next task to take */
	atomic_int failed;   /* a task failed: take no more */
	int *rc;             /* n: each task's status (0 until it runs) */
	struct parsa_err *err; /* n: each task's error */
};

/* Take and run tasks until none is left or one failed. */
static void drain(struct pool *p)
{
	while (!atomic_load(&p->failed)) {
		uint32_t t = atomic_fetch_add(&p->next, 1);

		if (t >= p->n)
			break;
		p->rc[t] = p->fn(p->arg, t, &p->err[t]);
		if (p->rc[t])
			atomic_store(&p->failed, 1);
	}
}

static void *thread_main(void *arg)
{
	pthread_setname_np(pthread_self(), "parsa-pool");
	drain(arg);
	return NULL;
}

int part_pool_run(uint32_t n, uint32_t threads, part_pool_fn fn, void *arg,
		  struct parsa_err *err)
{
	struct pool p = { fn, arg, n, 0, 0, NULL, NULL };
	pthread_t tid[PART_POOL_MAX_THREADS];
	uint32_t started = 0;
	int rc = 0;

	if (threads > n)
		threads = n;
	if (threads > PART_POOL_MAX_THREADS)
		threads = PART_POOL_MAX_THREADS;
	if (threads <= 1) { /* the plain loop */
		for (uint32_t t = 0; t < n && rc == 0; t++)
			rc = fn(arg, t, err);
		return rc;
	}
	p.rc = calloc(n, sizeof(int));
	p.err = calloc(n, sizeof(struct parsa_err));
	if (!p.rc || !p.err) {
		free(p.rc);
		free(p.err);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (%u tasks)",
				  n);
	}
	for (uint32_t i = 1; i < threads; i++)
		if (pthread_create(&tid[started], NULL, thread_main, &p) == 0)
			started++;
	drain(&p);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	for (uint32_t t = 0; t < n; t++)
		if (p.rc[t]) {
			rc = parsa_fail(err, p.rc[t], "%s", p.err[t].msg);
			break;
		}
	free(p.rc);
	free(p.err);
	return rc;
}

uint32_t part_pool_cpus(void)
{
	cpu_set_t set;
	int n;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (uint32_t)n : 1;
}

struct par_call {
	part_pool_task_fn fn;
	void *fn_arg;
};

static int par_task(void *arg, uint32_t t, struct parsa_err *err)
{
	const struct par_call *pc = arg;

	(void)err;
	pc->fn(pc->fn_arg, t);
	return 0;
}

void part_pool_par(void *par_arg, uint32_t n, part_pool_task_fn fn,
		   void *fn_arg)
{
	struct par_call pc = { fn, fn_arg };
	struct parsa_err e;

	(void)part_pool_run(n, *(const uint32_t *)par_arg, par_task, &pc, &e);
}
