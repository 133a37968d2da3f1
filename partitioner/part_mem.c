/*
 * part_mem: the memory estimate of a partition (see part_mem.h).
 */
#include "part_mem.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "part_levels.h"
#include "part_pool.h"

static void estimate(const struct part_run_opts *o, uint32_t n_rows,
		     uint32_t n_cols, uint64_t nnz, struct part_mem_est *e)
{
	uint64_t k = o->pu.k ? o->pu.k : 1;
	uint64_t b = parsa_partu_blocks(&o->pu, n_rows);
	uint64_t rows = b ? ((uint64_t)n_rows + b - 1) / b : n_rows;
	uint64_t words = (k + 63) / 64;
	int parsa = o->method == PART_METHOD_PARSA;
	int refine = parsa && k > 1 &&
		     (o->refine_passes || o->refine_ppasses || o->fm_passes ||
		      o->ml_levels || o->ml_scratch);
	uint64_t dense, sparse;

	memset(e, 0, sizeof(*e));
	if (parsa)
		e->partu = k * rows * 8;
	if (refine) {
		uint32_t threads = o->threads ? o->threads : part_pool_cpus();
		uint32_t chains = o->ml_chains ? o->ml_chains : 1;

		if (!o->ml_levels)
			chains = 1;
		e->copies = threads < chains ? threads : chains;
		if (e->copies < 1)
			e->copies = 1;
		e->copies += !!o->ml_scratch + !!o->fm_passes;
		/* the sweeps' counts are sparse (parsa_pcount.h: at most 2
		 * bytes per nonzero plus 22 per feature, with slack), the
		 * k-way FM's dense */
		dense = (uint64_t)n_cols * k * 2;
		sparse = 3 * nnz + 24 * (uint64_t)n_cols;
		e->refine = (e->copies - !!o->fm_passes) *
				    (sparse < dense ? sparse : dense) +
			    (o->fm_passes ? dense : 0);
	}
	/* the dataset is loaded when this is checked: 4 bytes per nonzero
	 * for what is still to come (a block's copy, the transposes of the
	 * k-way FM and the flow refinement) */
	e->sets = 2 * (uint64_t)n_cols * words * 8;
	e->total = nnz * 4 + (uint64_t)n_rows * 16 + (uint64_t)n_cols * 16 +
		   e->sets + e->partu + e->refine;
}

void part_mem_estimate(const struct part_run_opts *o, uint32_t n_rows,
		       uint32_t n_cols, uint64_t nnz, struct part_mem_est *e)
{
	uint32_t k1 = part_levels_k1(o);
	struct part_run_opts one;

	if (k1 < 2) {
		estimate(o, n_rows, n_cols, nnz, e);
		return;
	}
	/* two levels: each level's run at most the whole data at the larger
	 * of k1 and k2, then the users' lists (2 bytes a user, at most one
	 * per nonzero) and the 64-part masks */
	one = *o;
	one.pu.k = k1 > o->pu.k / k1 ? k1 : o->pu.k / k1;
	one.levels = 1;
	estimate(&one, n_rows, n_cols, nnz, e);
	e->sets += 2 * nnz + 24 * (uint64_t)n_cols;
	e->total += 2 * nnz + 24 * (uint64_t)n_cols;
}

/* A number of bytes in a file of one line ("max" or unreadable: 0). */
static uint64_t read_bytes(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

uint64_t part_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	uint64_t avail = 0, cg_max, cg_cur;
	struct rlimit rl;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			avail = (uint64_t)kb * 1024;
			break;
		}
	}
	if (f)
		fclose(f);
	cg_max = read_bytes("/sys/fs/cgroup/memory.max");
	if (cg_max) {
		cg_cur = read_bytes("/sys/fs/cgroup/memory.current");
		cg_max = cg_max > cg_cur ? cg_max - cg_cur : 1;
		if (!avail || cg_max < avail)
			avail = cg_max;
	}
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (!avail || (uint64_t)rl.rlim_cur < avail))
		avail = (uint64_t)rl.rlim_cur;
	return avail;
}

int part_mem_check(const struct part_run_opts *o, uint32_t n_rows,
		   uint32_t n_cols, uint64_t nnz, const char *what,
		   struct parsa_err *err)
{
	struct part_mem_est e;
	uint64_t avail = part_mem_available();
	const double gib = 1024.0 * 1024.0 * 1024.0;

	part_mem_estimate(o, n_rows, n_cols, nnz, &e);
	if (!avail || e.total <= avail)
		return 0;
	if (e.refine && e.refine >= e.sets && e.refine >= e.partu)
		return parsa_fail(err, PARSA_ENOMEM,
				  "%s: k=%u needs about %.1f GiB of memory (refinement %.1f GiB: %u state(s) over %u features; "
				  "Algorithm 13 %.1f GiB), %.1f GiB available: lower -k, or use --quality fast "
				  "(no refinement)%s",
				  what, o->pu.k, e.total / gib, e.refine / gib,
				  e.copies, n_cols, e.partu / gib, avail / gib,
				  e.copies > 1 ? " or --threads 1" : "");
	if (e.sets >= e.partu)
		return parsa_fail(err, PARSA_ENOMEM,
				  "%s: k=%u needs about %.1f GiB of memory (neighbour sets %.1f GiB: 2 x %u features x k / 8 bytes), "
				  "%.1f GiB available: lower -k",
				  what, o->pu.k, e.total / gib, e.sets / gib,
				  n_cols, avail / gib);
	return parsa_fail(err, PARSA_ENOMEM,
			  "%s: k=%u needs about %.1f GiB of memory (Algorithm 13's cost lists %.1f GiB: k x %u rows per block x 8 bytes), "
			  "%.1f GiB available: lower -k or raise --blocks",
			  what, o->pu.k, e.total / gib, e.partu / gib,
			  parsa_partu_blocks(&o->pu, n_rows) ?
				  (unsigned)((n_rows + parsa_partu_blocks(&o->pu, n_rows) - 1) /
					     parsa_partu_blocks(&o->pu, n_rows)) : n_rows,
			  avail / gib);
}
