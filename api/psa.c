/*
 * psa: the C API of include/parsa.h (libparsa), over the partitioner's
 * pipeline: part_read_file, part_opts (the option table), part_run,
 * part_run_metrics, part_placement, part_report and part_assign.  Nothing
 * here partitions by itself, so a graph, options and seed give the
 * placement `parsa partition` gives.
 *
 * Every exported function carries PSA_API (visibility default); the
 * shared library is compiled with -fvisibility=hidden, so it exports
 * those alone.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parsa.h"

#include "parsa_err.h"
#include "part_assign.h"
#include "part_hash.h"
#include "part_opts.h"
#include "part_placement.h"
#include "part_progress.h"
#include "part_reader.h"
#include "part_report.h"
#include "part_run.h"

_Static_assert((int)PSA_ENOMEM == (int)PARSA_ENOMEM &&
	       (int)PSA_EINVAL == (int)PARSA_EINVAL &&
	       (int)PSA_EIO == (int)PARSA_EIO &&
	       (int)PSA_EPARSE == (int)PARSA_EPARSE &&
	       (int)PSA_ERANGE == (int)PARSA_ERANGE &&
	       (int)PSA_EMPI == (int)PARSA_EMPI &&
	       (int)PSA_ESTATE == (int)PARSA_ESTATE &&
	       (int)PSA_ECANCELLED == (int)PARSA_ECANCEL,
	       "psa_status and parsa_status disagree");
_Static_assert(PSA_ERR_MSG == PARSA_ERR_MSG, "message sizes disagree");

struct psa_graph {
	atomic_uint refs;        /* the caller's and every result's */
	struct part_dataset ds;
	char *path;              /* the file read, or NULL (arrays) */
	double t_load;           /* seconds reading or building it */
};

struct psa_pair {
	char *name, *value;
};

struct psa_opts {
	struct part_opts cur;    /* defaults, then the pairs (preset first) */
	struct psa_pair *pairs;  /* every psa_opts_set, in order */
	size_t n, cap;
	psa_progress_fn progress;
	void *progress_arg;
	psa_cancel_fn cancel_fn;
	void *cancel_arg;
	atomic_int cancel;
};

/* The assign rule's model (part_assign.h), built on first use. */
struct psa_model {
	pthread_mutex_t mu;
	atomic_int built;
	uint32_t words;
	uint64_t *bits, *count;
	struct part_idmap map;
};

struct psa_result {
	psa_graph *g;                /* a reference */
	struct part_result r;
	struct part_run_opts run;    /* the options used (callbacks cleared) */
	int eval;                    /* from psa_evaluate */
	double t_total;              /* seconds of the call that made it */
	struct psa_model model;
};

/* The internal error into the public one. */
static int out_err(psa_error *e, const struct parsa_err *in, int rc)
{
	if (e && rc) {
		e->code = rc;
		snprintf(e->message, sizeof(e->message), "%s",
			 in->msg[0] ? in->msg : parsa_strerror(rc));
	}
	return rc;
}

static int fail(psa_error *e, int rc, const char *msg)
{
	if (e) {
		e->code = rc;
		snprintf(e->message, sizeof(e->message), "%s", msg);
	}
	return rc;
}

static void clear(psa_error *e)
{
	if (e) {
		e->code = 0;
		e->message[0] = '\0';
	}
}

PSA_API const char *psa_version(void)
{
	return PSA_VERSION;
}

PSA_API const char *psa_strerror(int code)
{
	return parsa_strerror(code);
}

PSA_API void psa_free(void *p)
{
	free(p);
}

/* ---- graphs ---- */

static psa_graph *graph_new(void)
{
	psa_graph *g = calloc(1, sizeof(*g));

	if (g) {
		atomic_init(&g->refs, 1);
		part_dataset_init(&g->ds);
	}
	return g;
}

static void graph_unref(psa_graph *g)
{
	if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
		return;
	part_dataset_release(&g->ds);
	free(g->path);
	free(g);
}

/* Rows into ds as the LIBSVM reader adds them: ids mapped in row order
 * (first appearance), each row sorted and de-duplicated. */
static int csr_build(struct part_dataset *ds, uint32_t n,
		     const uint64_t *row_ptr, const uint64_t *ids,
		     struct parsa_err *err)
{
	struct part_idmap map;
	uint32_t *row = NULL;
	uint64_t widest = 0;
	int rc = 0;

	for (uint32_t r = 0; r < n; r++)
		if (row_ptr[r + 1] - row_ptr[r] > widest)
			widest = row_ptr[r + 1] - row_ptr[r];
	if (widest > SIZE_MAX / sizeof(uint32_t) - 1)
		return parsa_fail(err, PARSA_ERANGE, "a row is too long");
	part_idmap_init(&map);
	row = malloc(((size_t)widest + 1) * sizeof(uint32_t));
	if (!row)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	for (uint32_t r = 0; rc == 0 && r < n; r++) {
		size_t len = (size_t)(row_ptr[r + 1] - row_ptr[r]);

		for (size_t j = 0; rc == 0 && j < len; j++)
			rc = part_idmap_get(&map, ids[row_ptr[r] + j], &row[j],
					    NULL, "features", err);
		if (rc == 0)
			rc = parsa_graph_add_row(&ds->g, row, len, err);
		if (rc)
			break;
		ds->entries += len;
		ds->duplicates += len - parsa_graph_degree(&ds->g, r);
		ds->empty_rows += len == 0;
	}
	free(row);
	if (rc) {
		part_idmap_release(&map);
		return rc;
	}
	ds->g.n_cols = map.n;
	ds->feat_id = part_idmap_take_ids(&map);
	ds->lines = n;
	parsa_graph_trim(&ds->g);
	return 0;
}

PSA_API int psa_graph_from_csr(psa_graph **out, uint32_t n_examples,
			       const uint64_t *row_ptr,
			       const uint64_t *col_ids, psa_error *err)
{
	struct parsa_err e;
	psa_graph *g;
	double t0 = part_now();
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!out || !row_ptr)
		return fail(err, PSA_EINVAL, "graph: out and row_ptr must not be NULL");
	if (n_examples == 0 || n_examples == UINT32_MAX)
		return fail(err, PSA_EINVAL, "graph: n_examples must be in 1..2^32-2");
	if (row_ptr[0] != 0)
		return fail(err, PSA_EINVAL, "graph: row_ptr[0] must be 0");
	for (uint32_t r = 0; r < n_examples; r++)
		if (row_ptr[r + 1] < row_ptr[r]) {
			char m[96];

			snprintf(m, sizeof(m), "graph: row_ptr decreases at "
				 "row %u", r);
			return fail(err, PSA_EINVAL, m);
		}
	if (row_ptr[n_examples] > 0 && !col_ids)
		return fail(err, PSA_EINVAL, "graph: col_ids must not be NULL");
	if (!(g = graph_new()))
		return fail(err, PSA_ENOMEM, "out of memory");
	rc = csr_build(&g->ds, n_examples, row_ptr, col_ids, &e);
	if (rc) {
		graph_unref(g);
		return out_err(err, &e, rc);
	}
	g->ds.format = PART_FMT_AUTO;
	g->t_load = part_now() - t0;
	*out = g;
	return 0;
}

PSA_API int psa_graph_read(psa_graph **out, const char *path,
			   const char *format, const char *graph_mode,
			   psa_error *err)
{
	struct part_read_opts ro = {0};
	struct parsa_err e;
	psa_graph *g;
	double t0 = part_now();
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!out || !path)
		return fail(err, PSA_EINVAL, "read: out and path must not be NULL");
	if (format && part_format_parse(format, &ro.format))
		return fail(err, PSA_EINVAL, "read: format must be auto, "
			    "libsvm, snap or pairs");
	if (graph_mode && part_graph_mode_parse(graph_mode, &ro.graph))
		return fail(err, PSA_EINVAL, "read: graph_mode must be "
			    "adjacency or edges");
	if (!(g = graph_new()) || !(g->path = strdup(path))) {
		graph_unref(g);
		return fail(err, PSA_ENOMEM, "out of memory");
	}
	rc = part_read_file(path, &ro, &g->ds, &e);
	if (rc == 0 && g->ds.g.n_rows == 0)
		rc = parsa_fail(&e, PARSA_EINVAL, "%s: empty dataset: no "
				"examples to partition", path);
	if (rc) {
		graph_unref(g);
		return out_err(err, &e, rc);
	}
	g->t_load = part_now() - t0;
	*out = g;
	return 0;
}

PSA_API uint32_t psa_graph_examples(const psa_graph *g)
{
	return g ? g->ds.g.n_rows : 0;
}

PSA_API uint32_t psa_graph_features(const psa_graph *g)
{
	return g ? g->ds.g.n_cols : 0;
}

PSA_API uint64_t psa_graph_nnz(const psa_graph *g)
{
	return g ? parsa_graph_nnz(&g->ds.g) : 0;
}

PSA_API const uint64_t *psa_graph_feature_ids(const psa_graph *g)
{
	return g && g->ds.g.n_cols ? g->ds.feat_id : NULL;
}

PSA_API void psa_graph_free(psa_graph *g)
{
	graph_unref(g);
}

/* ---- options ---- */

/* The options the library takes: those of `parsa partition` stored in
 * struct part_run_opts (the job itself), not the parallel or streamed
 * runs' nor files and output. */
static const struct part_opt *lib_opt(const char *name)
{
	const struct part_opt *e;

	if (name && strcmp(name, "k") == 0)
		name = "parts";
	e = name ? part_opts_find(name, 0) : NULL;
	if (!e || !(e->where & PART_OPT_PARTITION) ||
	    (e->flags & (PART_OPT_PAR | PART_OPT_STREAM)) ||
	    e->type == PART_OPT_STR ||
	    e->off + e->size > sizeof(struct part_run_opts))
		return NULL;
	return e;
}

/* cur = the defaults, then every pair (the presets first). */
static int opts_apply(struct part_opts *cur, const struct psa_pair *pairs,
		      size_t n, struct parsa_err *err)
{
	part_opts_default(cur);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			const struct part_opt *e = lib_opt(pairs[i].name);
			int rc;

			if (!!(e->flags & PART_OPT_PRESET) != (pass == 0))
				continue;
			rc = part_opts_set(cur, PART_OPT_PARTITION, e->name,
					   pairs[i].value, err);
			if (rc)
				return rc;
		}
	return 0;
}

PSA_API int psa_opts_new(psa_opts **out, psa_error *err)
{
	psa_opts *o;

	clear(err);
	if (!out)
		return fail(err, PSA_EINVAL, "opts: out must not be NULL");
	if (!(o = calloc(1, sizeof(*o))))
		return fail(err, PSA_ENOMEM, "out of memory");
	part_opts_default(&o->cur);
	atomic_init(&o->cancel, 0);
	*out = o;
	return 0;
}

PSA_API void psa_opts_free(psa_opts *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++) {
		free(o->pairs[i].name);
		free(o->pairs[i].value);
	}
	free(o->pairs);
	free(o);
}

PSA_API int psa_opts_set(psa_opts *o, const char *name, const char *value,
			 psa_error *err)
{
	struct part_opts next;
	struct parsa_err e;
	struct psa_pair p;
	const struct part_opt *opt;
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!o || !name)
		return fail(err, PSA_EINVAL, "opts: o and name must not be NULL");
	if (!(opt = lib_opt(name))) {
		char m[160];

		snprintf(m, sizeof(m), "'%s' is not an option of the library "
			 "(see psa_opts_set in parsa.h)", name);
		return fail(err, PSA_EINVAL, m);
	}
	if (!value)
		value = opt->type == PART_OPT_FLAG ? "" : "(null)";
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 8;
		struct psa_pair *np = realloc(o->pairs, cap * sizeof(*np));

		if (!np)
			return fail(err, PSA_ENOMEM, "out of memory");
		o->pairs = np;
		o->cap = cap;
	}
	p.name = strdup(opt->name);
	p.value = strdup(value);
	if (!p.name || !p.value) {
		free(p.name);
		free(p.value);
		return fail(err, PSA_ENOMEM, "out of memory");
	}
	o->pairs[o->n] = p;
	rc = opts_apply(&next, o->pairs, o->n + 1, &e);
	if (rc) {
		free(p.name);
		free(p.value);
		return out_err(err, &e, rc);
	}
	o->n++;
	o->cur = next;
	return 0;
}

/* The shorthands: a number as its text, through psa_opts_set. */
static int set_u64(psa_opts *o, const char *name, uint64_t v, psa_error *err)
{
	char t[32];

	snprintf(t, sizeof(t), "%llu", (unsigned long long)v);
	return psa_opts_set(o, name, t, err);
}

static int set_num(psa_opts *o, const char *name, double v, psa_error *err)
{
	char t[40];

	snprintf(t, sizeof(t), "%.17g", v);
	return psa_opts_set(o, name, t, err);
}

PSA_API int psa_opts_set_k(psa_opts *o, uint32_t k, psa_error *err)
{
	return set_u64(o, "parts", k, err);
}

PSA_API int psa_opts_set_method(psa_opts *o, const char *method,
				psa_error *err)
{
	return psa_opts_set(o, "method", method, err);
}

PSA_API int psa_opts_set_quality(psa_opts *o, const char *quality,
				 psa_error *err)
{
	return psa_opts_set(o, "quality", quality, err);
}

PSA_API int psa_opts_set_seed(psa_opts *o, uint64_t seed, psa_error *err)
{
	return set_u64(o, "seed", seed, err);
}

PSA_API int psa_opts_set_threads(psa_opts *o, uint32_t threads,
				 psa_error *err)
{
	return set_u64(o, "threads", threads, err);
}

PSA_API int psa_opts_set_imbalance(psa_opts *o, double imbalance,
				   psa_error *err)
{
	return set_num(o, "imbalance", imbalance, err);
}

PSA_API int psa_opts_set_time_limit(psa_opts *o, double seconds,
				    psa_error *err)
{
	return set_num(o, "time-limit", seconds, err);
}

PSA_API void psa_opts_set_progress(psa_opts *o, psa_progress_fn fn,
				   void *arg)
{
	if (o) {
		o->progress = fn;
		o->progress_arg = arg;
	}
}

PSA_API void psa_opts_set_cancel(psa_opts *o, psa_cancel_fn fn, void *arg)
{
	if (o) {
		o->cancel_fn = fn;
		o->cancel_arg = arg;
	}
}

PSA_API void psa_opts_cancel(psa_opts *o, int on)
{
	if (o)
		atomic_store(&o->cancel, on ? 1 : 0);
}

/* ---- partitioning ---- */

/* One psa_partition call's progress: fractions never go back. */
struct call {
	psa_opts *o;
	pthread_mutex_t mu;
	double last;
	const char *phase;
};

static void report(struct call *c, double frac, const char *phase)
{
	pthread_mutex_lock(&c->mu);
	if (frac < c->last)
		frac = c->last;
	if (frac > 1)
		frac = 1;
	c->last = frac;
	if (phase)
		c->phase = phase;
	if (c->o->progress)
		c->o->progress(c->o->progress_arg, frac, c->phase);
	if (c->o->cancel_fn && c->o->cancel_fn(c->o->cancel_arg))
		atomic_store(&c->o->cancel, 1);
	pthread_mutex_unlock(&c->mu);
}

static void on_u(void *arg, uint64_t done, uint64_t total)
{
	report(arg, total ? 0.5 * (double)done / (double)total : 0, NULL);
}

static void on_refine(void *arg, uint64_t done, uint64_t total)
{
	report(arg, total ? 0.5 + 0.4 * (double)done / (double)total : 0.5,
	       "refine");
}

static void on_phase(void *arg, enum part_phase p)
{
	static const double at[] = {
		[PART_PHASE_U] = 0, [PART_PHASE_REFINE] = 0.5,
		[PART_PHASE_V] = 0.9, [PART_PHASE_METRICS] = 0.95,
	};
	static const char *const name[] = {
		[PART_PHASE_U] = "partition U", [PART_PHASE_REFINE] = "refine",
		[PART_PHASE_V] = "partition V", [PART_PHASE_METRICS] = "metrics",
	};

	report(arg, at[p], name[p]);
}

static psa_result *result_new(const psa_graph *g)
{
	psa_result *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->g = (psa_graph *)g;
	atomic_fetch_add(&r->g->refs, 1);
	part_result_init(&r->r);
	pthread_mutex_init(&r->model.mu, NULL);
	atomic_init(&r->model.built, 0);
	part_idmap_init(&r->model.map);
	return r;
}

PSA_API void psa_result_free(psa_result *r)
{
	if (!r)
		return;
	part_result_release(&r->r);
	free(r->model.bits);
	free(r->model.count);
	part_idmap_release(&r->model.map);
	pthread_mutex_destroy(&r->model.mu);
	graph_unref(r->g);
	free(r);
}

static int cancelled(psa_error *err)
{
	return fail(err, PSA_ECANCELLED, "cancelled");
}

PSA_API int psa_partition(const psa_graph *g, const psa_opts *o,
			  psa_result **out, psa_error *err)
{
	psa_opts *mo = (psa_opts *)o; /* the cancel flag is atomic */
	struct call c = {.o = mo, .last = 0, .phase = "partition U"};
	struct part_run_opts run;
	struct parsa_err e;
	psa_result *r;
	double t0 = part_now();
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!g || !o || !out)
		return fail(err, PSA_EINVAL, "partition: g, o and out must not be NULL");
	if (!part_opts_given(&o->cur, "k"))
		return fail(err, PSA_EINVAL, "partition: k is not set "
			    "(psa_opts_set_k)");
	if (atomic_load(&mo->cancel))
		return cancelled(err);
	if (!(r = result_new(g)))
		return fail(err, PSA_ENOMEM, "out of memory");
	run = o->cur.run;
	run.init_S = NULL;
	run.pu.cancel = &mo->cancel;
	run.pu.progress = on_u;
	run.pu.progress_arg = &c;
	run.refine_progress = on_refine;
	run.refine_progress_arg = &c;
	run.phase = on_phase;
	run.phase_arg = &c;
	pthread_mutex_init(&c.mu, NULL);
	rc = part_run(&g->ds, &run, &r->r, &e);
	if (rc == 0 && atomic_load(&mo->cancel))
		rc = PARSA_ECANCEL;
	if (rc == 0)
		report(&c, 1, "done");
	pthread_mutex_destroy(&c.mu);
	if (rc) {
		psa_result_free(r);
		return rc == PARSA_ECANCEL ? cancelled(err) : out_err(err, &e, rc);
	}
	r->run = o->cur.run;
	r->run.init_S = NULL;
	r->t_total = part_now() - t0 + g->t_load;
	*out = r;
	return 0;
}

PSA_API int psa_evaluate(const psa_graph *g, uint32_t k,
			 const uint32_t *parts, const uint32_t *owners,
			 const psa_opts *o, psa_result **out,
			 psa_error *err)
{
	struct part_opts def;
	struct parsa_err e;
	psa_result *r;
	double t0 = part_now();
	uint32_t n, m;
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!g || !parts || !owners || !out)
		return fail(err, PSA_EINVAL, "evaluate: g, parts, owners and out must not be NULL");
	if (k == 0)
		return fail(err, PSA_EINVAL, "evaluate: k must be at least 1");
	n = g->ds.g.n_rows;
	m = g->ds.g.n_cols;
	for (uint32_t i = 0; i < n; i++)
		if (parts[i] >= k) {
			parsa_fail(&e, PARSA_EINVAL, "evaluate: example %u is "
				   "in part %u, not below k = %u", i, parts[i], k);
			return out_err(err, &e, PARSA_EINVAL);
		}
	for (uint32_t j = 0; j < m; j++)
		if (owners[j] >= k) {
			parsa_fail(&e, PARSA_EINVAL, "evaluate: feature %u is "
				   "on server %u, not below k = %u", j, owners[j], k);
			return out_err(err, &e, PARSA_EINVAL);
		}
	if (!o)
		part_opts_default(&def);
	if (!(r = result_new(g)))
		return fail(err, PSA_ENOMEM, "out of memory");
	r->eval = 1;
	r->run = o ? o->cur.run : def.run;
	r->run.init_S = NULL;
	r->r.k = k;
	r->r.part = malloc(((size_t)n + 1) * sizeof(uint32_t));
	r->r.owner = malloc(((size_t)m + 1) * sizeof(uint32_t));
	if (!r->r.part || !r->r.owner) {
		psa_result_free(r);
		return fail(err, PSA_ENOMEM, "out of memory");
	}
	memcpy(r->r.part, parts, (size_t)n * sizeof(uint32_t));
	memcpy(r->r.owner, owners, (size_t)m * sizeof(uint32_t));
	rc = part_run_metrics(&g->ds, r->run.pu.seed, r->run.random_trials,
			      r->run.threads, NULL, NULL, &r->r, &e);
	if (rc) {
		psa_result_free(r);
		return out_err(err, &e, rc);
	}
	r->t_total = part_now() - t0 + g->t_load;
	*out = r;
	return 0;
}

PSA_API int psa_placement_read(const psa_graph *g, const char *prefix,
			       uint32_t *parts, uint32_t *owners,
			       uint32_t *k, psa_error *err)
{
	struct parsa_err e;
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!g || !prefix || !parts || !owners || !k)
		return fail(err, PSA_EINVAL, "placement: no argument may be NULL");
	rc = part_placement_read(prefix, g->ds.g.n_rows, g->ds.feat_id,
				 g->ds.g.n_cols, 0, parts, owners, k, &e);
	return out_err(err, &e, rc);
}

PSA_API uint32_t psa_result_k(const psa_result *r)
{
	return r ? r->r.k : 0;
}

PSA_API const uint32_t *psa_result_parts(const psa_result *r)
{
	return r ? r->r.part : NULL;
}

PSA_API const uint32_t *psa_result_owners(const psa_result *r)
{
	return r ? r->r.owner : NULL;
}

PSA_API const psa_graph *psa_result_graph(const psa_result *r)
{
	return r ? r->g : NULL;
}

PSA_API int psa_result_metrics(const psa_result *r, int which,
			       psa_metrics *m, psa_error *err)
{
	const struct parsa_metrics *x;

	clear(err);
	if (!r || !m || (which != PSA_PLACEMENT && which != PSA_RANDOM))
		return fail(err, PSA_EINVAL, "metrics: r and m must not be NULL, "
			    "which PSA_PLACEMENT or PSA_RANDOM");
	x = which == PSA_RANDOM ? &r->r.rnd : &r->r.m;
	*m = (psa_metrics){
		.k = x->k, .M_max = x->M_max, .T_max = x->T_max,
		.T_sum = x->T_sum, .M_sum = x->M_sum, .RF = x->RF,
		.imbalance = x->imbalance, .local_fraction = x->local_fraction,
		.V_used = x->V_used, .U_max = x->U_max,
	};
	return 0;
}

static json_t *report_of(const psa_result *r)
{
	struct part_report_info info = {
		.data_path = r->g->path, .ds = &r->g->ds,
		.opts = r->eval ? NULL : &r->run, .res = &r->r,
		.method = r->eval ? "eval" : part_method_name(r->run.method),
		.t_load = r->g->t_load, .t_total = r->t_total,
		.peak_rss_kb = part_peak_rss_kb(),
	};

	return part_report_json(&info);
}

PSA_API char *psa_result_report_json(const psa_result *r)
{
	json_t *j = r ? report_of(r) : NULL;
	char *s;

	if (!j)
		return NULL;
	s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(j);
	return s;
}

PSA_API int psa_result_write(const psa_result *r, const char *prefix,
			     psa_error *err)
{
	struct parsa_err e;
	char *path;
	json_t *j;
	int rc;

	clear(err);
	parsa_err_clear(&e);
	if (!r || !prefix)
		return fail(err, PSA_EINVAL, "write: r and prefix must not be NULL");
	rc = part_placement_write(prefix, r->r.part, r->g->ds.g.n_rows,
				  r->r.owner, r->g->ds.feat_id,
				  r->g->ds.g.n_cols, r->run.threads, &e);
	if (rc)
		return out_err(err, &e, rc);
	if (!(path = malloc(strlen(prefix) + 6)))
		return fail(err, PSA_ENOMEM, "out of memory");
	snprintf(path, strlen(prefix) + 6, "%s.json", prefix);
	j = report_of(r);
	rc = j ? part_report_write(path, j, &e)
	       : parsa_fail(&e, PARSA_ENOMEM, "out of memory (report)");
	json_decref(j);
	free(path);
	return out_err(err, &e, rc);
}

/* ---- incremental assignment ---- */

/* S masks, |U_i| and the feature id map of r's placement. */
static int model_build(psa_result *r, struct parsa_err *err)
{
	struct psa_model *md = &r->model;
	const struct part_dataset *ds = &r->g->ds;
	const struct parsa_graph *g = &ds->g;
	uint32_t k = r->r.k, words = (k + 63) / 64, id;
	int rc = 0;

	md->words = words;
	md->count = calloc(k, sizeof(uint64_t));
	md->bits = calloc((size_t)(g->n_cols ? g->n_cols : 1) * words,
			  sizeof(uint64_t));
	if (!md->count || !md->bits)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	for (uint32_t u = 0; u < g->n_rows; u++) {
		uint32_t p = r->r.part[u];

		md->count[p]++;
		for (uint64_t e = g->row_ptr[u]; e < g->row_ptr[u + 1]; e++)
			md->bits[(uint64_t)g->col[e] * words + p / 64] |=
				1ull << (p % 64);
	}
	for (uint32_t j = 0; rc == 0 && j < g->n_cols; j++)
		rc = part_idmap_get(&md->map, ds->feat_id[j], &id, NULL,
				    "features", err);
	return rc;
}

PSA_API int psa_assign(const psa_result *r, uint32_t n,
		       const uint64_t *row_ptr, const uint64_t *col_ids,
		       uint32_t *parts_out, psa_error *err)
{
	psa_result *mr = (psa_result *)r; /* the model is built once, locked */
	struct part_assign_model m;
	struct parsa_err e;
	int rc = 0;

	clear(err);
	parsa_err_clear(&e);
	if (!r || !row_ptr || !parts_out || (n && row_ptr[n] > row_ptr[0] && !col_ids))
		return fail(err, PSA_EINVAL, "assign: r, row_ptr, col_ids and "
			    "parts_out must not be NULL");
	for (uint32_t i = 0; i < n; i++)
		if (row_ptr[i + 1] < row_ptr[i])
			return fail(err, PSA_EINVAL, "assign: row_ptr decreases");
	if (n == 0)
		return 0;
	if (!atomic_load(&mr->model.built)) {
		pthread_mutex_lock(&mr->model.mu);
		if (!atomic_load(&mr->model.built)) {
			rc = model_build(mr, &e);
			if (rc) {
				free(mr->model.bits);
				free(mr->model.count);
				mr->model.bits = mr->model.count = NULL;
				part_idmap_release(&mr->model.map);
			} else {
				atomic_store(&mr->model.built, 1);
			}
		}
		pthread_mutex_unlock(&mr->model.mu);
		if (rc)
			return out_err(err, &e, rc);
	}
	m = (struct part_assign_model){
		.k = r->r.k, .words = r->model.words, .bits = r->model.bits,
		.map = &r->model.map, .count = r->model.count,
		.imbalance = r->run.pu.imbalance >= 1 ? r->run.pu.imbalance
						      : 1.03,
	};
	rc = part_assign_batch(&m, row_ptr, col_ids, n, parts_out, &e);
	return out_err(err, &e, rc);
}
