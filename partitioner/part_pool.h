/*
 * part_pool: run independent tasks on a few threads (the refinement's
 * chains of V-cycles, part_run.c).
 *
 * part_pool_run(n, threads, fn, arg, err) calls fn(arg, t, err_t) once for
 * each task t in [0, n), taking tasks in increasing t, on up to `threads`
 * threads counting the caller's (the others are created for the call and
 * joined before it returns).  Each task gets its own error record.  The
 * result is that of a plain loop over the tasks in order: 0 when every
 * task returned 0, else the rc of the lowest failed task with its message
 * in *err.  With threads <= 1 it is that loop (it stops at the first
 * failure); with more, a failure stops the tasks not yet taken, and tasks
 * already running finish.  If a thread cannot be created the caller's
 * thread does its share (never an error).
 *
 * Contract for fn: tasks share arg read-only except for their own slots;
 * whatever else they share must be synchronised by the caller (as the
 * progress reporting of part_run.c is, under a mutex).
 *
 * part_pool_cpus: the CPUs this process may run on (its affinity mask),
 * at least 1; the default number of threads.
 */
#ifndef PART_POOL_H
#define PART_POOL_H

#include <stdint.h>

#include "parsa_err.h"

#define PART_POOL_MAX_THREADS 256

typedef int (*part_pool_fn)(void *arg, uint32_t task, struct parsa_err *err);

int part_pool_run(uint32_t n, uint32_t threads, part_pool_fn fn, void *arg,
		  struct parsa_err *err);

uint32_t part_pool_cpus(void);

/*
 * The par of the library's parallel steps (parsa_partu_opts.par,
 * parsa_fm_opts.par, parsa_partv's and parsa_graph's par: the same
 * shape): fn(fn_arg, t) for every t in [0, n) through part_pool_run on
 * *(const uint32_t *)par_arg threads; returns when all have returned
 * (the tasks cannot fail).
 */
typedef void (*part_pool_task_fn)(void *fn_arg, uint32_t t);
void part_pool_par(void *par_arg, uint32_t n, part_pool_task_fn fn,
		   void *fn_arg);

#endif /* PART_POOL_H */
