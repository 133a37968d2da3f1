/*
 * part_levels: Parsa in two levels for large k (see part_levels.h).
 */
#include "part_levels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_partu.h"
#include "parsa_stop.h"
#include "part_pool.h"
#include "part_progress.h"

uint32_t part_levels_k1(const struct part_run_opts *o)
{
	uint32_t k = o->pu.k, k1 = 1;

	if (o->method != PART_METHOD_PARSA || o->init_S || o->levels == 1 ||
	    (o->levels == 0 && k <= PART_LEVELS_AUTO_K))
		return 1;
	for (uint32_t d = 2; d < k; d++) {
		if (d > PART_LEVELS_K1 && (uint64_t)d * d > k)
			break;
		if (k % d == 0)
			k1 = d;
	}
	return k1;
}

double part_levels_imbalance(uint64_t n, uint32_t k, double want,
			     uint64_t cap)
{
	uint64_t q = n / k + (n % k != 0);
	double x = want;

	if (q > 0 && (double)cap / (double)q < x)
		x = (double)cap / (double)q;
	if (!(x >= 1.0))
		return 1.0;
	/* rounding: lower it until the cap fits (a few steps at most) */
	for (int i = 0; i < 64 && x > 1.0 && parsa_balance_cap(n, k, x) > cap;
	     i++)
		x = x * (1.0 - 1e-9) > 1.0 ? x * (1.0 - 1e-9) - 1e-12 : 1.0;
	return parsa_balance_cap(n, k, x) > cap ? 1.0 : x;
}

/* Group g's examples (rows[0..n)) as a dataset of their features only,
 * renumbered in increasing id order (map: ds's n_cols entries, zero on
 * entry). */
static int sub_dataset(const struct parsa_graph *g, const uint32_t *rows,
		       uint32_t n, uint32_t *map, struct part_dataset *sub,
		       struct parsa_err *err)
{
	struct parsa_graph *s = &sub->g;
	uint64_t nnz = 0;
	uint32_t next = 0;

	for (uint32_t j = 0; j < n; j++) {
		uint32_t r = rows[j];

		nnz += g->row_ptr[r + 1] - g->row_ptr[r];
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			map[g->col[e]] = 1;
	}
	for (uint32_t v = 0; v < g->n_cols; v++)
		if (map[v])
			map[v] = ++next;
	s->row_ptr = malloc(((size_t)n + 1) * sizeof(*s->row_ptr));
	s->col = malloc((size_t)(nnz + 1) * sizeof(*s->col));
	if (!s->row_ptr || !s->col)
		return parsa_fail(err, PARSA_ENOMEM,
				  "two levels: out of memory for a group of "
				  "%u examples", n);
	s->n_rows = n;
	s->n_cols = next;
	s->row_cap = (uint64_t)n + 1;
	s->col_cap = nnz + 1;
	s->row_ptr[0] = 0;
	nnz = 0;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t r = rows[j];

		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			s->col[nnz++] = map[g->col[e]] - 1;
		s->row_ptr[j + 1] = nnz;
	}
	return 0;
}

/* The times of a level's run added to r's. */
static void add_times(struct part_result *r, const struct part_result *x)
{
	r->t_partition_u += x->t_partition_u;
	r->t_refine += x->t_refine;
	r->t_partition_v += x->t_partition_v;
	r->restream_kept += x->restream_kept;
	r->guard_reverted += x->guard_reverted;
}

/* Level 2's tasks: group i of the rows ordered by group (end[i] is the
 * end of group i) into k2 parts, into r->part; its times into t[i]. */
struct level2 {
	const struct part_dataset *ds;
	const struct part_run_opts *o;
	const uint32_t *rows;
	const uint64_t *end;
	uint32_t k2, inner_threads;
	uint64_t cap;
	double start;
	struct part_result *r;
	struct part_result *t; /* k1: each group's times */
};

static int group_task(void *arg, uint32_t i, struct parsa_err *err)
{
	struct level2 *l = arg;
	const struct parsa_graph *g = &l->ds->g;
	uint64_t b = i ? l->end[i - 1] : 0;
	uint32_t n = (uint32_t)(l->end[i] - b);
	struct part_run_opts o2 = *l->o;
	struct part_dataset sub;
	struct part_result r2;
	uint32_t *map;
	int rc;

	if (n == 0)
		return 0;
	map = calloc((size_t)g->n_cols + 1, sizeof(*map));
	if (!map)
		return parsa_fail(err, PARSA_ENOMEM,
				  "two levels: out of memory");
	part_dataset_init(&sub);
	part_result_init(&r2);
	rc = sub_dataset(g, l->rows + b, n, map, &sub, err);
	free(map);
	o2.pu.k = l->k2;
	o2.pu.seed = l->o->pu.seed + 1 + i;
	o2.pu.imbalance = part_levels_imbalance(n, l->k2, l->o->pu.imbalance,
						l->cap);
	o2.levels = 1;
	o2.threads = l->inner_threads;
	o2.refine_progress = NULL;
	o2.phase = NULL;
	if (rc == 0)
		rc = part_result_alloc(&r2, &sub, l->k2, err);
	if (rc == 0)
		rc = part_run_place(&sub, &o2, l->start, &r2, err);
	for (uint32_t j = 0; rc == 0 && j < n; j++)
		l->r->part[l->rows[b + j]] = i * l->k2 + r2.part[j];
	add_times(&l->t[i], &r2);
	part_result_release(&r2);
	part_dataset_release(&sub);
	return rc;
}

/* Level 2: every group of part1 (k1 groups) into k2 parts, into r->part,
 * the groups as tasks on the threads (each group's run on one: the
 * result is the same for any number). */
static int level2(const struct part_dataset *ds,
		  const struct part_run_opts *o, const uint32_t *part1,
		  uint32_t k1, uint32_t k2, uint64_t cap, double start,
		  struct part_result *r, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	uint32_t threads = o->threads ? o->threads : part_pool_cpus();
	uint32_t *rows = malloc(((size_t)g->n_rows + 1) * sizeof(*rows));
	uint64_t *at = calloc((size_t)k1 + 1, sizeof(*at));
	struct part_result *t = calloc(k1, sizeof(*t));
	struct level2 l = { ds, o, rows, at, k2, threads > 1 ? 1 : threads,
			    cap, start, r, t };
	double t0 = part_now(), sum = 0, scale;
	int rc = 0;

	if (!rows || !at || !t) {
		rc = parsa_fail(err, PARSA_ENOMEM,
				"two levels: out of memory");
		goto out;
	}
	for (uint32_t u = 0; u < g->n_rows; u++)
		at[part1[u] + 1]++;
	for (uint32_t i = 0; i < k1; i++)
		at[i + 1] += at[i];
	for (uint32_t u = 0; u < g->n_rows; u++)
		rows[at[part1[u]]++] = u;
	/* at[i] is now the end of group i */
	if (o->phase)
		o->phase(o->phase_arg, PART_PHASE_U);
	rc = part_pool_run(k1, threads, group_task, &l, err);
	/* the groups' phase times (summed over the threads) scaled to the
	 * level's wall time, summed in group order */
	for (uint32_t i = 0; i < k1; i++)
		sum += t[i].t_partition_u + t[i].t_refine + t[i].t_partition_v;
	scale = sum > 0 ? (part_now() - t0) / sum : 0;
	for (uint32_t i = 0; i < k1; i++) {
		t[i].t_partition_u *= scale;
		t[i].t_refine *= scale;
		t[i].t_partition_v *= scale;
		add_times(r, &t[i]);
	}
out:
	free(rows);
	free(at);
	free(t);
	return rc;
}

int part_levels_run(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err)
{
	uint32_t k = o->pu.k, k1 = part_levels_k1(o), k2 = k / k1;
	uint64_t n = ds->g.n_rows;
	uint64_t cap = parsa_balance_cap(n, k, o->pu.imbalance);
	struct part_run_opts o1 = *o;
	struct part_result r1;
	double start = parsa_stop_clock();
	int rc;

	if (k1 < 2 || k % k1 != 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "two levels: k=%u has no split", k);
	o1.pu.k = k1;
	o1.levels = 1;
	o1.pu.imbalance = part_levels_imbalance(n, k1, sqrt(o->pu.imbalance),
						(uint64_t)k2 * cap);
	part_result_init(&r1);
	rc = part_result_alloc(&r1, ds, k1, err);
	if (rc == 0)
		rc = part_run_place(ds, &o1, start, &r1, err);
	if (rc == 0) {
		/* level 1's owners are not needed: their memory goes back
		 * before level 2 */
		free(r1.owner);
		r1.owner = NULL;
		r->t_partition_u = r->t_refine = r->t_partition_v = 0;
		add_times(r, &r1);
		r->pu_stats = r1.pu_stats;
		r->lanes_stats = r1.lanes_stats;
		r->refine_stats = r1.refine_stats;
		r->fm_stats = r1.fm_stats;
		rc = level2(ds, o, r1.part, k1, k2, cap, start, r, err);
	}
	part_result_release(&r1);
	r->step1_tmax = r->step1_mmax = 0;
	r->bound_tmax = r->bound_mmax = UINT64_MAX;
	if (rc == 0)
		rc = part_run_owners(ds, o, r, err);
	return rc;
}
