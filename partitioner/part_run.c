/*
 * part_run: the method-independent partition pipeline (see part_run.h).
 */
#include "part_run.h"

#include <stdlib.h>
#include <string.h>

#include "parsa_baseline.h"
#include "parsa_refine.h"
#include "parsa_rng.h"
#include "part_metis.h"
#include "part_progress.h"

/* Defaults chosen by the study in BENCHMARKS.md. */
#define PART_DEFAULT_SWEEPS 4
#define PART_DEFAULT_TRIALS 5
#define PART_DEFAULT_REFINE 16

void part_run_opts_default(struct part_run_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->method = PART_METHOD_PARSA;
	parsa_partu_opts_default(&o->pu);
	o->sweeps = PART_DEFAULT_SWEEPS;
	o->random_trials = PART_DEFAULT_TRIALS;
	o->refine_rounds = PART_DEFAULT_REFINE;
}

void part_result_init(struct part_result *r)
{
	memset(r, 0, sizeof(*r));
}

void part_result_release(struct part_result *r)
{
	if (!r)
		return;
	free(r->part);
	free(r->owner);
	part_result_init(r);
}

static int run_u(const struct part_dataset *ds, const struct part_run_opts *o,
		 struct part_result *r, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	uint32_t k = o->pu.k;
	struct parsa_nbrset S;
	struct parsa_rng rng;
	int rc;

	switch (o->method) {
	case PART_METHOD_RANDOM:
		parsa_rng_seed(&rng, o->pu.seed);
		rc = parsa_random_u(g->n_rows, k, &rng, r->part, err);
		if (rc == 0)
			parsa_random_v(g->n_cols, k, &rng, r->owner);
		return rc;
	case PART_METHOD_METIS:
		return part_metis_u(g, k, o->pu.imbalance, o->pu.seed, r->part,
				    err);
	case PART_METHOD_GREEDY:
		return parsa_greedy_u(g, k, o->pu.imbalance, r->part, err);
	case PART_METHOD_PARSA:
		break;
	}
	rc = parsa_nbrset_init(&S, g->n_cols, k, err);
	if (rc)
		return rc;
	if (o->init_S)
		parsa_nbrset_copy(&S, o->init_S);
	rc = parsa_partition_u(g, &o->pu, &S, r->part, &r->pu_stats, err);
	parsa_nbrset_release(&S);
	return rc;
}

/* N(U_i) of the example partition, the M_max refinement (Parsa only),
 * then Algorithm 11.  Random keeps the owners drawn with its U. */
static int run_v(const struct part_dataset *ds, const struct part_run_opts *o,
		 struct part_result *r, struct parsa_err *err)
{
	struct parsa_nbrset used;
	double t0;
	int rc;

	if (o->method == PART_METHOD_RANDOM)
		return 0;
	rc = parsa_nbrset_init(&used, ds->g.n_cols, r->k, err);
	if (rc)
		return rc;
	rc = parsa_used_sets(&ds->g, r->part, &used, err);
	if (rc == 0 && o->method == PART_METHOD_PARSA && o->refine_rounds) {
		t0 = part_now();
		rc = parsa_refine_mmax(&ds->g, r->part, &used,
				       parsa_balance_cap(ds->g.n_rows, r->k,
							 o->pu.imbalance),
				       o->refine_rounds, &r->refine_stats, err);
		r->t_refine = part_now() - t0;
	}
	t0 = part_now();
	if (rc == 0)
		rc = parsa_partition_v(&used, o->sweeps, r->owner,
				       &r->pv_stats, err);
	r->t_partition_v = part_now() - t0;
	parsa_nbrset_release(&used);
	return rc;
}

int part_run_metrics(const struct part_dataset *ds, uint64_t seed,
		     uint32_t trials, struct part_result *r,
		     struct parsa_err *err)
{
	double t0 = part_now();
	int rc;

	rc = parsa_metrics_compute(&ds->g, r->k, r->part, r->owner, &r->m, err);
	if (rc == 0)
		rc = parsa_metrics_random(&ds->g, r->k, seed, trials, &r->rnd,
					  err);
	r->t_metrics = part_now() - t0;
	return rc;
}

int part_result_alloc(struct part_result *r, const struct part_dataset *ds,
		      uint32_t k, struct parsa_err *err)
{
	part_result_release(r);
	r->k = k;
	r->part = calloc((size_t)ds->g.n_rows + 1, sizeof(uint32_t));
	r->owner = calloc((size_t)ds->g.n_cols + 1, sizeof(uint32_t));
	if (!r->part || !r->owner) {
		part_result_release(r);
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for the placement");
	}
	return 0;
}

int part_run_finish(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err)
{
	int rc = run_v(ds, o, r, err);

	if (rc == 0)
		rc = part_run_metrics(ds, o->pu.seed, o->random_trials, r, err);
	return rc;
}

int part_run(const struct part_dataset *ds, const struct part_run_opts *o,
	     struct part_result *r, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	double t0;
	int rc;

	if (o->pu.k < 1)
		return parsa_fail(err, PARSA_EINVAL, "k must be at least 1");
	if (o->init_S && (o->init_S->n_feat != g->n_cols ||
			  o->init_S->k != o->pu.k))
		return parsa_fail(err, PARSA_EINVAL,
				  "initial neighbor sets do not match the dataset");
	rc = part_result_alloc(r, ds, o->pu.k, err);
	if (rc)
		return rc;
	t0 = part_now();
	rc = run_u(ds, o, r, err);
	r->t_partition_u = part_now() - t0;
	if (rc == 0)
		rc = part_run_finish(ds, o, r, err);
	if (rc)
		part_result_release(r);
	return rc;
}

static const char *const method_names[] = {
	[PART_METHOD_PARSA] = "parsa",
	[PART_METHOD_RANDOM] = "random",
	[PART_METHOD_METIS] = "metis",
	[PART_METHOD_GREEDY] = "greedy",
};

int part_method_parse(const char *s, enum part_method *m)
{
	for (size_t i = 0; i < sizeof(method_names) / sizeof(*method_names); i++)
		if (strcmp(s, method_names[i]) == 0) {
			*m = (enum part_method)i;
			return 0;
		}
	return PARSA_EINVAL;
}

const char *part_method_name(enum part_method m)
{
	if ((unsigned)m >= sizeof(method_names) / sizeof(*method_names))
		return "?";
	return method_names[m];
}

int part_rule_parse(const char *s, enum parsa_rule *r)
{
	if (strcmp(s, "min-s") == 0 || strcmp(s, "thesis") == 0)
		*r = PARSA_RULE_MIN_S;
	else if (strcmp(s, "round-robin") == 0 || strcmp(s, "rr") == 0)
		*r = PARSA_RULE_ROUND_ROBIN;
	else
		return PARSA_EINVAL;
	return 0;
}

const char *part_rule_name(enum parsa_rule r)
{
	return r == PARSA_RULE_ROUND_ROBIN ? "round-robin" : "min-s";
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];

	return x < y ? -1 : x > y;
}

/* Sorted (id, compact index) pairs of ds's features, for lookups. */
static uint64_t *sorted_ids(const struct part_dataset *ds,
			    struct parsa_err *err)
{
	uint32_t n = ds->g.n_cols;
	uint64_t *p = malloc(((size_t)n + 1) * 2 * sizeof(uint64_t));

	if (!p) {
		parsa_fail(err, PARSA_ENOMEM, "out of memory");
		return NULL;
	}
	for (uint32_t v = 0; v < n; v++) {
		p[2 * v] = ds->feat_id[v];
		p[2 * v + 1] = v;
	}
	qsort(p, n, 2 * sizeof(uint64_t), cmp_id);
	return p;
}

static int64_t lookup(const uint64_t *p, uint32_t n, uint64_t id)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p[2 * mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && p[2 * lo] == id ? (int64_t)p[2 * lo + 1] : -1;
}

int part_init_from_placement(const struct part_dataset *ds,
			     const struct part_dataset *old,
			     const uint32_t *old_part, struct parsa_nbrset *S,
			     struct parsa_err *err)
{
	const struct parsa_graph *og = &old->g;
	uint64_t *ids = sorted_ids(ds, err);

	if (!ids)
		return PARSA_ENOMEM;
	for (uint32_t u = 0; u < og->n_rows; u++) {
		if (old_part[u] >= S->k) {
			free(ids);
			return parsa_fail(err, PARSA_EINVAL,
					  "earlier placement: example %u in part %u, k is %u",
					  u, old_part[u], S->k);
		}
		for (uint64_t e = og->row_ptr[u]; e < og->row_ptr[u + 1]; e++) {
			int64_t v = lookup(ids, ds->g.n_cols,
					   old->feat_id[og->col[e]]);

			if (v >= 0)
				parsa_nbrset_add(S, (uint32_t)v, old_part[u]);
		}
	}
	free(ids);
	return 0;
}
