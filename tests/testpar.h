/*
 * testpar: a par for the library's parallel steps (parsa_partu_opts.par,
 * parsa_partv's, parsa_pcount's: fn(fn_arg, t) for every t in [0, n),
 * returning when all have returned) on up to 4 pthreads, each taking the
 * tasks t = j, j + 4, ... in decreasing order, so the order is not the
 * serial loop's.  par_arg, if not NULL, is an atomic_uint counting the
 * calls.  A thread that cannot be created has its share run by the
 * caller.
 */
#ifndef TESTPAR_H
#define TESTPAR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct tp_thread {
	void (*fn)(void *fn_arg, uint32_t t);
	void *fn_arg;
	uint32_t n, j;
};

static void *tp_thread_main(void *arg)
{
	struct tp_thread *p = arg;

	for (uint32_t t = p->n; t-- > 0;)
		if (t % 4 == p->j)
			p->fn(p->fn_arg, t);
	return NULL;
}

static inline void tp_par_pthreads(void *par_arg, uint32_t n,
				   void (*fn)(void *fn_arg, uint32_t t),
				   void *fn_arg)
{
	pthread_t th[4];
	struct tp_thread p[4];
	int made[4] = { 0, 0, 0, 0 };

	if (par_arg)
		atomic_fetch_add((atomic_uint *)par_arg, 1);
	for (uint32_t j = 0; j < 4; j++) {
		p[j] = (struct tp_thread){ fn, fn_arg, n, j };
		made[j] = pthread_create(&th[j], NULL, tp_thread_main,
					 &p[j]) == 0;
		if (!made[j])
			tp_thread_main(&p[j]);
	}
	for (uint32_t j = 0; j < 4; j++)
		if (made[j])
			pthread_join(th[j], NULL);
}

#endif /* TESTPAR_H */
