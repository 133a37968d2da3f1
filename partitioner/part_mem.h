/*
 * part_mem: how much memory a partition will take, checked before the work.
 *
 * The k-dependent allocations of the sequential pipeline (measured on
 * gowalla, 29,858 x 40,981, k = 16..65,536):
 *
 *   Algorithm 13's cost lists    k x (rows per block) x 8 bytes
 *   neighbour sets and masks     2 x n_cols x ceil(k/64) x 8 bytes
 *   each refinement state        the sweeps' sparse counts, at most
 *                                3 x nnz + 24 x n_cols bytes (and never
 *                                more than the dense n_cols x k x 2); the
 *                                k-way FM's dense uint16 counts per
 *                                feature and part; `best` holds one per
 *                                chain running at once, one for the
 *                                multilevel candidate and one for the
 *                                k-way FM
 *
 * plus 4 bytes per nonzero (checked after the load: the dataset itself is
 * in memory already; this is a block's copy and the transposes of the
 * k-way FM and the flow refinement).  The estimate is of what is
 * allocated (virtual), an upper bound of what is touched.
 */
#ifndef PART_MEM_H
#define PART_MEM_H

#include <stdint.h>

#include "parsa_err.h"
#include "part_run.h"

struct part_mem_est {
	uint64_t total;     /* bytes */
	uint64_t partu;     /* Algorithm 13's cost lists */
	uint64_t refine;    /* the refinement states (0: no refinement) */
	uint64_t sets;      /* the neighbour sets and masks */
	uint32_t copies;    /* refinement states held at once */
};

/* The estimate for o on a dataset of n_rows x n_cols with nnz nonzeros. */
void part_mem_estimate(const struct part_run_opts *o, uint32_t n_rows,
		       uint32_t n_cols, uint64_t nnz, struct part_mem_est *e);

/*
 * Bytes this process may still allocate: MemAvailable of /proc/meminfo,
 * lowered by a cgroup v2 memory.max (minus memory.current) and by
 * RLIMIT_AS; 0 when none is known.
 */
uint64_t part_mem_available(void);

/*
 * Refuse (PARSA_ENOMEM) when the estimate exceeds what is available, with
 * a message naming both and how to lower it; what = the data's name.
 */
int part_mem_check(const struct part_run_opts *o, uint32_t n_rows,
		   uint32_t n_cols, uint64_t nnz, const char *what,
		   struct parsa_err *err);

#endif /* PART_MEM_H */
