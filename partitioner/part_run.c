/*
 * part_run: the method-independent partition pipeline (see part_run.h).
 */
#include "part_run.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base_io.h"
#include "parsa_baseline.h"
#include "parsa_flow.h"
#include "parsa_fm.h"
#include "parsa_kfm.h"
#include "parsa_louvain.h"
#include "parsa_ml.h"
#include "parsa_pcap.h"
#include "parsa_refine.h"
#include "parsa_rng.h"
#include "parsa_stop.h"
#include "part_lanes.h"
#include "part_levels.h"
#include "part_metis.h"
#include "part_pool.h"
#include "part_progress.h"

/* Defaults chosen by the study in BENCHMARKS.md. */
#define PART_DEFAULT_SWEEPS 4
#define PART_DEFAULT_TRIALS 5
#define PART_DEFAULT_REFINE 16
#define PART_SCRATCH_PASSES 8 /* sweeps per level of the multilevel candidate */
#define PART_BEST_FM_PASSES 2 /* best: k-way FM passes per level */
#define PART_BEST_ML_LEVELS 8 /* best: levels of the in-part V-cycle */
#define PART_BEST_ML_CYCLES 3 /* best: V-cycles at most */
#define PART_BEST_ML_CHAINS 2 /* best: independent chains of V-cycles */
#define PART_TMAX_ROUNDS 1000000 /* objective tmax: rounds at most (it
				  * ends at a local minimum long before) */
#define PART_TMAX_POLISH 2    /* objective tmax: T_sum passes after it */
#define PART_TMAX_CYCLES 8    /* objective tmax: (search, polish) cycles */
#define PART_TMAX_KICKS 30    /* objective tmax: kicks of the search on
			       * the best candidate at most ... */
#define PART_TMAX_KICK_PATIENCE 10 /* ... ending after this many in a
				    * row that kept nothing */
#define PART_TMAX_KICK_SIZE 2 /* examples a kick moves per busiest part */
#define PART_TMAX_KICK_LEVELS 2 /* then kicks of 4, then 8 examples ... */
#define PART_TMAX_KICK_MORE 30 /* ... at most this many in all ... */
#define PART_TMAX_KICK_PATIENCE_MORE 5 /* ... each size ending after this
					* many in a row that kept nothing */
#define PART_TMAX_MEMORY 1.2, 1.5, 2.0 /* objective tmax: the M_max bounds
				   * (x step 1's) of its loosened rounds
				   * where --max-memory is not given */
#define PART_TMAX_MEMORY_TOP 2.0 /* ... the largest of them */

/*
 * What each --quality preset sets (measured in BENCHMARKS.md): fast is the
 * pipeline before the refinement existed; default adds one connectivity
 * sweep (most of the gain is in the first; the issue-2 speed floors, 5x
 * faster than METIS and 80 ns/nnz, leave room for one, not for a k-way
 * FM pass); best adds more sweeps, p-fanout sweeps, the k-way FM
 * (parsa_kfm.h) after the sweeps of every level, two independent chains
 * of up to 3 in-part V-cycles each (parsa_ml_refine; the better chain is
 * kept), the multilevel candidate and more Algorithm 11 sweeps.  Restreaming stays an option: measured, it gained < 1% of T_sum.
 */
static const struct quality_preset {
	const char *name;
	uint32_t refine_rounds, refine_passes, refine_ppasses, restream;
	uint32_t ml_levels;
	int ml_scratch;
	uint32_t sweeps, blocks, skip, fm_passes, ml_cycles, ml_chains;
} presets[] = {
	[PART_QUALITY_DEFAULT] = { "default", PART_DEFAULT_REFINE, 1, 0, 0, 0,
				   0, PART_DEFAULT_SWEEPS, 0, 8, 0, 0, 0 },
	[PART_QUALITY_FAST] = { "fast", PART_DEFAULT_REFINE, 0, 0, 0, 0, 0,
				PART_DEFAULT_SWEEPS, 0, 0, 0, 0, 0 },
	[PART_QUALITY_BEST] = { "best", PART_DEFAULT_REFINE, 8, 2, 0,
				PART_BEST_ML_LEVELS, 1, 16, 0, 0,
				PART_BEST_FM_PASSES, PART_BEST_ML_CYCLES,
				PART_BEST_ML_CHAINS },
};

void part_quality_apply(struct part_run_opts *o, enum part_quality q)
{
	const struct quality_preset *p = &presets[q];

	o->quality = q;
	o->refine_rounds = p->refine_rounds;
	o->refine_passes = p->refine_passes;
	o->refine_ppasses = p->refine_ppasses;
	o->restream = p->restream;
	o->ml_levels = p->ml_levels;
	o->ml_scratch = p->ml_scratch;
	o->refine_skip = p->skip;
	o->fm_passes = p->fm_passes;
	o->ml_cycles = p->ml_cycles;
	o->ml_chains = p->ml_chains;
	o->sweeps = p->sweeps;
	o->pu.blocks = p->blocks;
}

int part_quality_parse(const char *s, enum part_quality *q)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(*presets); i++)
		if (strcmp(s, presets[i].name) == 0) {
			*q = (enum part_quality)i;
			return 0;
		}
	return PARSA_EINVAL;
}

const char *part_quality_name(enum part_quality q)
{
	if ((unsigned)q >= sizeof(presets) / sizeof(*presets))
		return "?";
	return presets[q].name;
}

void part_run_opts_default(struct part_run_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->method = PART_METHOD_PARSA;
	parsa_partu_opts_default(&o->pu);
	o->random_trials = PART_DEFAULT_TRIALS;
	o->guard_slack = 1.0;
	part_quality_apply(o, PART_QUALITY_DEFAULT);
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
	parsa_partfig_release(&r->parts);
	parsa_partfig_release(&r->rnd_parts);
	part_result_init(r);
}

void part_run_fit(struct parsa_partu_opts *pu, const struct part_dataset *ds)
{
	if (pu->fit_bytes == 0)
		pu->fit_bytes = part_dataset_csr_bytes(ds);
}

/* The automatic block count without fit_bytes (what the lanes follow). */
static uint32_t unfit_blocks(const struct parsa_partu_opts *pu, uint32_t n)
{
	struct parsa_partu_opts p = *pu;

	p.fit_bytes = 0;
	return parsa_partu_blocks(&p, n);
}

/* Algorithm 13 in one lane: the blocks' cost lists in tasks and the next
 * block extracted beside each run, on the threads (the same result). */
static int run_u_serial(const struct parsa_graph *g,
			const struct part_run_opts *o, struct parsa_nbrset *S,
			struct part_result *r, struct parsa_err *err)
{
	struct parsa_partu_opts pu = o->pu;
	uint32_t threads = o->threads ? o->threads : part_pool_cpus();

	if (threads > 1) {
		pu.par = part_pool_par;
		pu.par_arg = &threads;
	}
	return parsa_partition_u(g, &pu, S, r->part, &r->pu_stats, err);
}

static int run_u(const struct part_dataset *ds, const struct part_run_opts *o,
		 struct part_result *r, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	uint32_t k = o->pu.k, lanes;
	struct parsa_nbrset S;
	int rc;

	switch (o->method) {
	case PART_METHOD_RANDOM:
		return parsa_random_placement(g->n_rows, g->n_cols, k,
					      o->pu.seed, r->part, r->owner,
					      err);
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
	/* the lanes of the blocks before they were fitted to the data
	 * (part_run): smaller blocks side by side, not more of them */
	lanes = part_lanes_count(o->lanes, unfit_blocks(&o->pu, g->n_rows),
				 o->pu.init_blocks);
	if (lanes > 1)
		rc = part_lanes_partition_u(g, &o->pu, lanes, o->threads, &S,
					    r->part, &r->pu_stats,
					    &r->lanes_stats, err);
	else
		rc = run_u_serial(g, o, &S, r, err);
	parsa_nbrset_release(&S);
	return rc;
}

uint32_t part_run_v_slices(const struct part_run_opts *o, uint32_t n_feat)
{
	if (o->v_slices > 0)
		return o->v_slices;
	return n_feat >= PARSA_PARTV_SLICE_MIN_FEAT ? PARSA_PARTV_SLICES : 1;
}

/* Algorithm 11 on used into owner; *tmax, *mmax (may be NULL) receive the
 * resulting T_max and M_max. */
static int place_v(const struct part_run_opts *o, const struct parsa_nbrset *used,
		   uint32_t *owner, struct parsa_partv_stats *pv,
		   uint64_t *tmax, uint64_t *mmax, struct parsa_err *err)
{
	uint64_t *T = calloc(used->k, sizeof(uint64_t));
	int rc;

	if (!T)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (k=%u)", used->k);
	uint32_t threads = o->threads ? o->threads : part_pool_cpus();

	rc = parsa_partition_v_sliced(used, NULL, o->sweeps,
				      part_run_v_slices(o, used->n_feat),
				      threads > 1 ? part_pool_par : NULL, &threads,
				      owner, T, pv, err);
	if (rc == 0 && o->param_imbalance > 0)
		rc = parsa_param_cap(used, o->param_imbalance, owner, T, NULL,
				     err);
	if (tmax)
		*tmax = 0;
	if (mmax)
		*mmax = 0;
	for (uint32_t i = 0; rc == 0 && i < used->k; i++) {
		if (tmax && T[i] > *tmax)
			*tmax = T[i];
		if (mmax && used->size[i] > *mmax)
			*mmax = used->size[i];
	}
	free(T);
	return rc;
}

static uint64_t max_size(const struct parsa_nbrset *s)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < s->k; i++)
		m = s->size[i] > m ? s->size[i] : m;
	return m;
}

/*
 * Restreaming: Algorithm 13 again, S starting from N(U_i) of part; each
 * pass (seed + pass) that lowers the connectivity with M_max <= m_limit
 * replaces part/used; stops at the first that does not.
 */
static int restream(const struct part_dataset *ds, const struct part_run_opts *o,
		    const struct parsa_stop *stop, uint64_t cap,
		    uint64_t m_limit, uint32_t *part, struct parsa_nbrset *used,
		    uint32_t *kept, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	struct parsa_nbrset S;
	struct parsa_partu_opts pu = o->pu;
	uint32_t *np = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	int rc = np ? parsa_nbrset_init(&S, g->n_cols, used->k, err)
		    : parsa_fail(err, PARSA_ENOMEM, "out of memory (restream)");

	pu.progress = NULL;
	pu.init_blocks = 0;
	part_run_fit(&pu, ds);
	for (uint32_t t = 0; rc == 0 && t < o->restream && !parsa_stop_due(stop);
	     t++) {
		uint64_t before = parsa_connectivity(used);

		parsa_nbrset_copy(&S, used);
		pu.seed = o->pu.seed + 1 + t;
		rc = parsa_partition_u(g, &pu, &S, np, NULL, err);
		if (rc == 0)
			rc = parsa_used_sets(g, np, &S, err);
		if (rc == 0 && o->refine_rounds)
			rc = parsa_refine_mmax(g, np, &S, cap, o->refine_rounds,
					       NULL, err);
		if (rc || parsa_connectivity(&S) >= before ||
		    max_size(&S) > m_limit)
			break;
		memcpy(part, np, (size_t)g->n_rows * sizeof(uint32_t));
		parsa_nbrset_copy(used, &S);
		++*kept;
	}
	if (np)
		parsa_nbrset_release(&S);
	free(np);
	return rc;
}

/*
 * Part ids in 1 byte (k <= 256) or 2 (k <= 65536), kept while the
 * refinement's sweeps run and read back once after them.  From
 * PART_SPILL_MIN bytes on they go to an unlinked temporary file
 * (base_tmpfile) and are mapped from it, resident only while
 * narrow_load reads them (10M nonzeros, k=64: step 1's parts and parked
 * owners, 0.7 MB, left the refinement's peak); where no file can be made
 * they stay on the heap.
 */
struct narrow {
	void *p;
	size_t len;  /* of the mapping when mapped, else 0 (heap) */
	unsigned bytes;
};

#define PART_SPILL_MIN (64u << 10)

/* x[0..n) narrowed into out (n <= the chunk). */
static void narrow_chunk(void *out, const uint32_t *x, size_t n,
			 unsigned bytes)
{
	if (bytes == 1)
		for (size_t i = 0; i < n; i++)
			((uint8_t *)out)[i] = (uint8_t)x[i];
	else
		for (size_t i = 0; i < n; i++)
			((uint16_t *)out)[i] = (uint16_t)x[i];
}

/* n as a mapping of a temporary file holding x narrowed; 0 or -1 (then
 * nothing is kept). */
static int narrow_spill(struct narrow *n, const uint32_t *x, uint32_t n_x)
{
	enum { CHUNK = 16384 };
	size_t len = (size_t)n_x * n->bytes;
	void *buf = malloc(CHUNK * sizeof(uint16_t)), *m = MAP_FAILED;
	int fd = buf ? base_tmpfile(NULL) : -1;
	int rc = fd < 0;

	for (uint32_t i = 0; !rc && i < n_x; i += CHUNK) {
		size_t c = n_x - i < CHUNK ? n_x - i : CHUNK;

		narrow_chunk(buf, x + i, c, n->bytes);
		rc = base_write_all(fd, buf, c * n->bytes);
	}
	if (!rc)
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd); /* the mapping keeps the file */
	free(buf);
	if (m == MAP_FAILED)
		return -1;
	n->p = m;
	n->len = len;
	return 0;
}

/* n = x[0..n_x) in the width k needs (k <= 65536); 0 or -1. */
static int narrow_save(struct narrow *n, const uint32_t *x, uint32_t n_x,
		       uint32_t k)
{
	n->bytes = k <= 256 ? 1 : 2;
	n->len = 0;
	if (n_x > 0 && (size_t)n_x * n->bytes >= PART_SPILL_MIN &&
	    narrow_spill(n, x, n_x) == 0)
		return 0;
	n->p = malloc(((size_t)n_x + 1) * n->bytes);
	if (!n->p)
		return -1;
	narrow_chunk(n->p, x, n_x, n->bytes);
	return 0;
}

/* x = n's ids; a mapping's pages leave the resident set again. */
static void narrow_load(const struct narrow *n, uint32_t *x, uint32_t n_x)
{
	if (n->bytes == 1)
		for (uint32_t i = 0; i < n_x; i++)
			x[i] = ((const uint8_t *)n->p)[i];
	else
		for (uint32_t i = 0; i < n_x; i++)
			x[i] = ((const uint16_t *)n->p)[i];
	if (n->len)
		madvise(n->p, n->len, MADV_DONTNEED);
}

static void narrow_release(struct narrow *n)
{
	if (n->len)
		munmap(n->p, n->len);
	else
		free(n->p);
	n->p = NULL;
	n->len = 0;
}

/* A candidate placement of the guard: parts, owners and N(U_i). */
struct cand {
	uint32_t *part, *owner;
	struct narrow partn; /* cand_save_parts: the parts narrow (k <=
			      * 65536), part NULL */
	struct narrow ownern; /* owners_park: the owners narrow, owner NULL */
	struct parsa_nbrset used;
	uint64_t tmax, mmax;
};

static void cand_release(struct cand *c)
{
	narrow_release(&c->partn);
	narrow_release(&c->ownern);
	free(c->part);
	free(c->owner);
	parsa_nbrset_release(&c->used);
}

/* c = a copy of (part, owner, used) with T_max t and M_max m. */
/* c = an empty candidate for g with k parts (released on failure). */
static int cand_alloc(struct cand *c, const struct parsa_graph *g,
		      uint32_t k, struct parsa_err *err)
{
	memset(c, 0, sizeof(*c));
	c->part = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	c->owner = malloc(((size_t)g->n_cols + 1) * sizeof(uint32_t));
	if (!c->part || !c->owner ||
	    parsa_nbrset_init(&c->used, g->n_cols, k, err)) {
		cand_release(c);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	}
	return 0;
}

static int cand_save(struct cand *c, const struct parsa_graph *g,
		     const uint32_t *part, const uint32_t *owner,
		     const struct parsa_nbrset *used, uint64_t t, uint64_t m,
		     struct parsa_err *err)
{
	int rc = cand_alloc(c, g, used->k, err);

	if (rc)
		return rc;
	memcpy(c->part, part, (size_t)g->n_rows * sizeof(uint32_t));
	memcpy(c->owner, owner, (size_t)g->n_cols * sizeof(uint32_t));
	parsa_nbrset_copy(&c->used, used);
	c->tmax = t;
	c->mmax = m;
	return 0;
}

/* c = the parts of part (k <= 65536) in 8 or 16 bits, without the sets
 * (cand_take recomputes them from the parts) or the owners (cand_owner
 * copies them before they change): |U| or 2 |U| bytes instead of 4 |U| +
 * 4 |V| + k |V| / 8 while the refinement runs. */
static int cand_save_parts(struct cand *c, const struct parsa_graph *g,
			   const uint32_t *part, uint32_t k, uint64_t t,
			   uint64_t m, struct parsa_err *err)
{
	memset(c, 0, sizeof(*c));
	if (narrow_save(&c->partn, part, g->n_rows, k))
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	c->tmax = t;
	c->mmax = m;
	return 0;
}

/* c's owners = owner if c has none yet (cand_save_parts). */
static int cand_owner(struct cand *c, const struct parsa_graph *g,
		      const uint32_t *owner, struct parsa_err *err)
{
	if (c->owner || c->ownern.p)
		return 0;
	c->owner = malloc(((size_t)g->n_cols + 1) * sizeof(uint32_t));
	if (!c->owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	memcpy(c->owner, owner, (size_t)g->n_cols * sizeof(uint32_t));
	return 0;
}

/*
 * The sweeps do not read the owners (step 1's until Algorithm 11 runs
 * again): if c has none yet, owners_park keeps r's in c narrow (k <=
 * 65536) and frees r->owner (4 |V| bytes less at the refinement's peak);
 * owners_unpark gives them back to r (rc: the sweeps' result, returned
 * unless the allocation fails).
 */
static int owners_park(struct cand *c, const struct parsa_graph *g,
		       struct part_result *r, struct parsa_err *err)
{
	if (c->owner || c->ownern.p || r->k > 65536)
		return 0;
	if (narrow_save(&c->ownern, r->owner, g->n_cols, r->k))
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	free(r->owner);
	r->owner = NULL;
	return 0;
}

static int owners_unpark(const struct cand *c, const struct parsa_graph *g,
			 struct part_result *r, int rc, struct parsa_err *err)
{
	if (r->owner)
		return rc;
	r->owner = malloc(((size_t)g->n_cols + 1) * sizeof(uint32_t));
	if (!r->owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (refine)");
	narrow_load(&c->ownern, r->owner, g->n_cols);
	return rc;
}

/* Put c's placement into r and used (N(U_i) of c's part); without
 * owners (cand_owner not called), r's are c's. */
static void cand_take(const struct cand *c, const struct parsa_graph *g,
		      struct part_result *r, struct parsa_nbrset *used)
{
	if (c->partn.p)
		narrow_load(&c->partn, r->part, g->n_rows);
	else
		memcpy(r->part, c->part, (size_t)g->n_rows * sizeof(uint32_t));
	if (c->ownern.p)
		narrow_load(&c->ownern, r->owner, g->n_cols);
	else if (c->owner)
		memcpy(r->owner, c->owner, (size_t)g->n_cols * sizeof(uint32_t));
	if (c->used.bits)
		parsa_nbrset_copy(used, &c->used);
	else /* (cannot fail: r's parts are < k) */
		(void)parsa_used_sets(g, r->part, used, NULL);
}

/*
 * The multilevel partition from scratch (parsa_ml_partition) with the
 * M_max refinement, placed by Algorithm 11 (c->tmax, c->mmax): the
 * candidate of --multilevel; st receives its moves.  It reads nothing of
 * the current result, so it can be built while the chains run.
 */
static int scratch_build(const struct part_dataset *ds,
			 const struct part_run_opts *o,
			 const struct parsa_fm_opts *fo, struct cand *c,
			 struct parsa_fm_stats *st, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	struct parsa_fm_opts mo = *fo;
	int rc = cand_alloc(c, g, o->pu.k, err);

	if (rc)
		return rc;
	/* the candidate's own sweeps: a few plain ones per level (measured:
	 * more cost time and rarely change which candidate wins) */
	mo.max_passes = fo->max_passes < PART_SCRATCH_PASSES ? fo->max_passes
							     : PART_SCRATCH_PASSES;
	rc = parsa_ml_partition(g, &o->pu, c->part, &c->used, &mo,
				ML_MAX_LEVELS, st, err);
	if (rc == 0 && o->refine_rounds)
		rc = parsa_refine_mmax(g, c->part, &c->used, fo->cap,
				       o->refine_rounds, NULL, err);
	if (rc == 0)
		rc = place_v(o, &c->used, c->owner, NULL, &c->tmax, &c->mmax,
			     err);
	if (rc)
		cand_release(c);
	return rc;
}

/* The candidate replaces r/used when it keeps the guard (T_max <= t0,
 * M_max <= m0) and has a lower connectivity than r's. */
static void scratch_take(const struct parsa_graph *g, const struct cand *c,
			 const struct parsa_fm_stats *st,
			 struct part_result *r, struct parsa_nbrset *used,
			 uint64_t t0, uint64_t m0)
{
	if (c->tmax > t0 || c->mmax > m0 ||
	    parsa_connectivity(&c->used) >= parsa_connectivity(used))
		return;
	cand_take(c, g, r, used);
	r->fm_stats.passes += st->passes;
	r->fm_stats.moves += st->moves;
	r->fm_stats.conn_after = parsa_connectivity(used);
	r->scratch_kept = 1;
}

static int try_scratch(const struct part_dataset *ds,
		       const struct part_run_opts *o,
		       const struct parsa_fm_opts *fo, struct part_result *r,
		       struct parsa_nbrset *used, uint64_t t0, uint64_t m0,
		       struct parsa_err *err)
{
	struct cand c;
	struct parsa_fm_stats st;
	int rc = scratch_build(ds, o, fo, &c, &st, err);

	if (rc)
		return rc;
	scratch_take(&ds->g, &c, &st, r, used, t0, m0);
	cand_release(&c);
	return 0;
}

/* The candidate built as one more task of the chains' first round
 * (vchains): improve() takes it after the guard when the options it was
 * built with still hold. */
struct scratch_task {
	const struct part_dataset *ds;
	struct cand c;
	struct parsa_fm_stats st;
	int built;
};

/*
 * Where the refinement phases 2-3 are, for o->refine_progress: one step
 * for the sweeps (and FM) on the original graph, one per V-cycle of every
 * chain (a chain that stops early jumps to its end), one for the
 * multilevel candidate; and how long a V-cycle took (seconds, 0: none
 * ran yet), for the deadline.
 */
struct rpace {
	const struct part_run_opts *o;
	pthread_mutex_t mu;    /* chains on several threads report here */
	uint64_t done, total;  /* steps of this round */
	uint64_t sub;          /* step 1 (the sweeps) so far, of RP_SUB */
	uint64_t base, all;    /* reported: base + done of all (rounds) */
	uint64_t cycles;       /* V-cycles done or skipped, all chains */
	double t_cycle;
};

/* A step's fractions: the progress reported is (steps done) x RP_SUB plus
 * the sweeps' share of step 1 while it runs (the sweeps of a large graph
 * take most of the default refinement: its one step would otherwise sit
 * at 0 for seconds). */
#define RP_SUB 1000

/* Round `round` (from 0) of `rounds` runs of improve(). */
static void rpace_init(struct rpace *p, const struct part_run_opts *o,
		       unsigned round, unsigned rounds)
{
	uint64_t cycles = o->ml_cycles ? o->ml_cycles : 1;
	uint64_t chains = o->ml_chains ? o->ml_chains : 1;

	p->o = o;
	pthread_mutex_init(&p->mu, NULL);
	p->done = p->cycles = p->sub = 0;
	p->total = 1 + (o->ml_levels ? cycles * chains : 0) + !!o->ml_scratch;
	p->base = round * p->total;
	p->all = rounds * p->total;
	p->t_cycle = 0;
}

/* Report step `done` (never backwards, at most total); p->mu held. */
static void rpace_to_locked(struct rpace *p, uint64_t done)
{
	if (done > p->total)
		done = p->total;
	if (done <= p->done)
		return;
	p->done = done;
	if (p->o->refine_progress)
		p->o->refine_progress(p->o->refine_progress_arg,
				      (p->base + done) * RP_SUB,
				      p->all * RP_SUB);
}

/* parsa_fm_opts.progress of the sweeps on the original graph (step 1):
 * their share of the step, reported while step 1 is the one running. */
static void rpace_sweeps(void *arg, uint64_t done, uint64_t total)
{
	struct rpace *p = arg;
	uint64_t sub = total ? done * (RP_SUB - 1) / total : 0;

	pthread_mutex_lock(&p->mu);
	if (p->done == 0 && sub > p->sub) {
		p->sub = sub;
		if (p->o->refine_progress)
			p->o->refine_progress(p->o->refine_progress_arg,
					      p->base * RP_SUB + sub,
					      p->all * RP_SUB);
	}
	pthread_mutex_unlock(&p->mu);
}

static void rpace_to(struct rpace *p, uint64_t done)
{
	pthread_mutex_lock(&p->mu);
	rpace_to_locked(p, done);
	pthread_mutex_unlock(&p->mu);
}

/* n V-cycles of some chain ended (run, or skipped when the chain stopped
 * early); dt > 0: the seconds of the one just run.  Step 1 is the sweeps
 * on the original graph, so the cycles are steps 2, 3, ... */
static void rpace_cycles(struct rpace *p, uint64_t n, double dt)
{
	pthread_mutex_lock(&p->mu);
	if (dt > 0)
		p->t_cycle = dt;
	p->cycles += n;
	rpace_to_locked(p, 1 + p->cycles);
	pthread_mutex_unlock(&p->mu);
}

/* 1 when stop has a deadline and less than need seconds are left. */
static int too_late(const struct parsa_stop *stop, double need)
{
	return stop && stop->deadline > 0 &&
	       parsa_stop_clock() + need > stop->deadline;
}

/*
 * o->ml_cycles (at least 1) in-part V-cycles (parsa_ml_refine, seeds
 * seed, seed + 1, ...) on part/used; stops after a cycle that lowers
 * the connectivity by less than 0.1%, or when fo->stop is due (a cycle
 * cut while it refines keeps what its coarse levels gained).  Each cycle
 * never raises the connectivity.  *st adds their passes and moves, its
 * conn_after becomes the connectivity on return and its conn_before, if
 * 0, the one on entry.  pace: every cycle is a step (the ones a chain
 * skips too), and its t_cycle receives the seconds of the last cycle run.
 */
static int vcycles(const struct parsa_graph *g, const struct part_run_opts *o,
		   const struct parsa_fm_opts *fo, uint32_t *part,
		   struct parsa_nbrset *used, struct parsa_fm_stats *st,
		   struct rpace *pace, struct parsa_err *err)
{
	uint32_t cycles = o->ml_cycles ? o->ml_cycles : 1, c;
	uint64_t entry = parsa_connectivity(used);
	struct parsa_fm_opts co = *fo;
	int rc = 0;

	for (c = 0; rc == 0 && c < cycles && !parsa_stop_due(fo->stop); c++) {
		uint64_t before = parsa_connectivity(used);
		double t0 = parsa_stop_clock();
		struct parsa_fm_stats cs = { 0 };

		co.seed = fo->seed + c;
		co.comm = NULL; /* --ml-communities: the multilevel
				 * candidate's deeper start only (measured:
				 * in the V-cycles it was noise) */
		rc = parsa_ml_refine(g, part, used, &co, o->ml_levels, &cs,
				     err);
		st->passes += cs.passes;
		st->moves += cs.moves;
		rpace_cycles(pace, 1, parsa_stop_clock() - t0);
		if (rc == 0 && (double)(before - parsa_connectivity(used)) <
				       1e-3 * (double)before) {
			c++;
			break;
		}
	}
	if (c < cycles)
		rpace_cycles(pace, cycles - c, 0);
	st->conn_before = st->conn_before ? st->conn_before : entry;
	st->conn_after = parsa_connectivity(used);
	return rc;
}

/* One chain of V-cycles (vchains): its placement, what Algorithm 11
 * makes of it, its moves. */
struct chain {
	struct cand c;
	struct parsa_fm_stats st;
	uint64_t t, m;
	int ran;
};

/* The chains c0 .. c0 + n - 1 of one round of vchains. */
struct chains {
	const struct parsa_graph *g;
	const struct part_run_opts *o;
	const struct parsa_fm_opts *fo;
	const struct cand *start;
	struct rpace *pace;
	struct chain *ch;
	uint32_t c0, m;            /* this round: chains c0 .. c0 + m - 1 */
	struct scratch_task *sx;   /* task m of this round when non-NULL */
};

/* part_pool task: chain c0 + i from start, then Algorithm 11 on it (or,
 * i == m, the multilevel candidate).  No chain but the first starts once
 * the stop is due. */
static int chain_task(void *arg, uint32_t i, struct parsa_err *err)
{
	const struct chains *cs = arg;
	const struct cand *s = cs->start;
	uint32_t c = cs->c0 + i;
	struct parsa_fm_opts co = *cs->fo;
	struct chain *ch;
	int rc;

	co.par = NULL; /* this chain is a thread already */

	if (i == cs->m) {
		rc = scratch_build(cs->sx->ds, cs->o, &co, &cs->sx->c,
				   &cs->sx->st, err);
		cs->sx->built = rc == 0;
		return rc;
	}
	ch = &cs->ch[i];
	memset(ch, 0, sizeof(*ch));
	if (c > 0 && parsa_stop_due(co.stop)) {
		rpace_cycles(cs->pace, cs->o->ml_cycles ? cs->o->ml_cycles : 1,
			     0);
		return 0;
	}
	rc = cand_save(&ch->c, cs->g, s->part, s->owner, &s->used, 0, 0, err);
	if (rc)
		return rc;
	ch->ran = 1;
	co.seed = cs->fo->seed + 1000003ULL * c;
	rc = vcycles(cs->g, cs->o, &co, ch->c.part, &ch->c.used, &ch->st,
		     cs->pace, err);
	if (rc == 0)
		rc = place_v(cs->o, &ch->c.used, ch->c.owner, NULL, &ch->t,
			     &ch->m, err);
	return rc;
}

/*
 * o->ml_chains (0 counts as 1) independent chains of V-cycles (vcycles),
 * each from the step-1 result start (r->part/used hold it on entry), with
 * seeds fo->seed + 1000003·c.  The chain that ends in r->part/used: the
 * lowest connectivity among those that keep the guard (Algorithm 11's
 * T_max <= t0, M_max <= m0; ties: the first), or the lowest of all when
 * none does (the guard then rejects it).  No chain starts once fo->stop is
 * due (the first always does: its V-cycles poll the stop themselves).
 * r->fm_stats adds the kept chain's passes and moves and takes its
 * connectivity as conn_after.  The chains run in rounds of `threads` at
 * once (part_pool; without a deadline the result, report included, is
 * the same for every number of threads), so at most threads + 1 copies
 * of the placement are held.  sx (may be NULL): the multilevel candidate
 * is built as one more task of the first round.
 */
static int vchains(const struct parsa_graph *g, const struct part_run_opts *o,
		   const struct parsa_fm_opts *fo, const struct cand *start,
		   struct part_result *r, struct parsa_nbrset *used,
		   uint64_t t0, uint64_t m0, uint32_t threads,
		   struct scratch_task *sx, struct rpace *pace,
		   struct parsa_err *err)
{
	uint32_t n = o->ml_chains ? o->ml_chains : 1;
	uint32_t T = threads < 1 ? 1 : threads > n ? n : threads;
	struct chains cs = { g, o, fo, start, pace, NULL, 0, 0, NULL };
	struct parsa_fm_stats best_st = {0};
	struct cand best;
	uint64_t conn = UINT64_MAX;
	int rc = 0, have = 0, best_ok = 0;

	if (n == 1 && !sx) /* in place: no copy, no Algorithm 11 here */
		return vcycles(g, o, fo, r->part, used, &r->fm_stats, pace,
			       err);
	cs.ch = calloc(T, sizeof(*cs.ch));
	if (!cs.ch)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (chains)");
	for (cs.c0 = 0; rc == 0 && cs.c0 < n; cs.c0 += T) {
		uint32_t m = n - cs.c0 < T ? n - cs.c0 : T;

		cs.m = m;
		cs.sx = cs.c0 == 0 ? sx : NULL;
		rc = part_pool_run(m + !!cs.sx, threads, chain_task, &cs, err);
		for (uint32_t i = 0; i < m; i++) {
			struct chain *ch = &cs.ch[i];
			int ok = ch->t <= t0 && ch->m <= m0;

			if (rc == 0 && ch->ran &&
			    !(ok < best_ok || (ok == best_ok &&
					       parsa_connectivity(&ch->c.used) >=
						       conn))) {
				if (have)
					cand_release(&best);
				best = ch->c; /* moved, not copied */
				best_st = ch->st;
				have = 1;
				best_ok = ok;
				conn = parsa_connectivity(&best.used);
				continue;
			}
			if (ch->ran)
				cand_release(&ch->c);
		}
	}
	free(cs.ch);
	if (rc == 0 && have) {
		cand_take(&best, g, r, used);
		r->fm_stats.passes += best_st.passes;
		r->fm_stats.moves += best_st.moves;
		r->fm_stats.conn_before = r->fm_stats.conn_before
						  ? r->fm_stats.conn_before
						  : best_st.conn_before;
		r->fm_stats.conn_after = best_st.conn_after;
	}
	if (have)
		cand_release(&best);
	return rc;
}

/* The k-way FM (parsa_kfm.h) on r->part/used under the balance cap and
 * the step-1 M_max m0; its kept moves count in r->fm_stats. */
static int run_kfm(const struct parsa_graph *g, const struct part_run_opts *o,
		   const struct parsa_stop *stop, struct part_result *r,
		   struct parsa_nbrset *used, uint64_t cap, uint64_t m0,
		   struct parsa_err *err)
{
	struct parsa_kfm_opts ko = { o->fm_passes, cap, m0, o->pu.seed, 0, NULL,
				     0, stop };
	struct parsa_kfm_stats ks;
	int rc = parsa_kfm_refine(g, r->part, used, &ko, &ks, err);

	if (rc == 0) {
		r->fm_stats.moves += ks.moves;
		r->fm_stats.passes += ks.passes;
		r->fm_stats.conn_after = ks.conn_after;
	}
	return rc;
}

/* The two-way flow refinement (parsa_flow.h) on r->part/used under the
 * balance cap and the bound m0 on M_max; its moves count in r->fm_stats. */
static int run_flow(const struct parsa_graph *g, const struct part_run_opts *o,
		    const struct parsa_stop *stop, struct part_result *r,
		    struct parsa_nbrset *used, uint64_t cap, uint64_t m0,
		    struct parsa_err *err)
{
	struct parsa_flow_opts fo = { .max_rounds = o->flow_passes,
				      .cap = cap, .m_limit = m0,
				      .stop = stop };
	struct parsa_flow_stats fs;
	int rc = parsa_flow_refine(g, r->part, used, &fo, &fs, err);

	if (rc == 0) {
		r->fm_stats.moves += fs.moves;
		r->fm_stats.conn_after = fs.conn_after;
	}
	return rc;
}

/* The flow refinement on the result improve() kept (the chains' or the
 * multilevel candidate's), placed again by Algorithm 11; kept only if the
 * placement holds the bounds t0, m0 (else the result before it stays). */
static int flow_final(const struct part_dataset *ds,
		      const struct part_run_opts *o,
		      const struct parsa_stop *stop, struct part_result *r,
		      struct parsa_nbrset *used, uint64_t cap, uint64_t t0,
		      uint64_t m0, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	uint64_t c0 = parsa_connectivity(used), t1 = 0, m1 = 0;
	struct parsa_partv_stats pv = r->pv_stats;
	struct part_fm_keep { uint64_t moves, conn; } fk = {
		r->fm_stats.moves, r->fm_stats.conn_after };
	struct cand keep;
	int rc = cand_save(&keep, g, r->part, r->owner, used, 0, 0, err);

	if (rc)
		return rc;
	rc = run_flow(g, o, stop, r, used, cap, m0, err);
	if (rc == 0 && parsa_connectivity(used) < c0) {
		rc = place_v(o, used, r->owner, &r->pv_stats, &t1, &m1, err);
		if (rc == 0 && (t1 > t0 || m1 > m0)) {
			cand_take(&keep, g, r, used);
			r->pv_stats = pv;
			r->fm_stats.moves = fk.moves;
			r->fm_stats.conn_after = fk.conn;
		}
	}
	cand_release(&keep);
	return rc;
}

/*
 * vchains from the step-1 result; with a deadline (anytime order), the
 * sweeps and FM passes on the original graph run first and the chains
 * start from their result, one at a time, so a cut leaves the cheap gains
 * in place (without one, the chains start from step 1 as they always
 * have, on `threads` threads).
 */
static int vchains_from(const struct parsa_graph *g,
			const struct part_run_opts *o,
			const struct parsa_fm_opts *fo, const struct cand *step1,
			struct part_result *r, struct parsa_nbrset *used,
			uint64_t t0, uint64_t m0, uint32_t threads,
			struct scratch_task *sx, struct rpace *pace,
			struct parsa_err *err)
{
	struct cand pre;
	int rc;

	if (!fo->stop || fo->stop->deadline <= 0)
		return vchains(g, o, fo, step1, r, used, t0, m0, threads, sx,
			       pace, err);
	rc = parsa_fm_refine(g, r->part, used, fo, &r->fm_stats, err);
	if (rc == 0 && o->fm_passes)
		rc = run_kfm(g, o, fo->stop, r, used, fo->cap, m0, err);
	if (rc == 0)
		rc = cand_save(&pre, g, r->part, r->owner, used, 0, 0, err);
	if (rc)
		return rc;
	rpace_to(pace, 1);
	/* one chain at a time: under a deadline two chains that share the
	 * machine each get less far than one alone (measured at METIS's time
	 * on the shared sets: T_sum +6% to +8% on three graphs in edges mode
	 * at k=64, where the chains run out of time) */
	rc = vchains(g, o, fo, &pre, r, used, t0, m0, 1, NULL, pace, err);
	cand_release(&pre);
	return rc;
}

/* Examples per chunk of the chunked T_sum sweeps (parsa_fm.h), which run
 * on graphs of at least PARSA_FM_CHUNK_MIN_ROWS examples; the placement
 * depends on it, not on the threads. */
#define PART_SWEEP_CHUNK 8192

/* The guard's bound on a step-1 figure v: floor(v * slack), v itself for
 * slack <= 1, no bound for an infinite slack. */
static uint64_t guard_bound(uint64_t v, double slack)
{
	double b;

	if (!(slack > 1.0))
		return v;
	b = floor((double)v * slack);
	return b >= 1.8e19 ? UINT64_MAX : (uint64_t)b;
}

/*
 * The bound phases 2-3 keep a figure under, from its cap c and its step-1
 * value v (part_cap).  No cap given: guard_slack > 1 is the cap "Fx" for
 * both figures (--guard-slack is a spelling of the two caps), else the
 * objective's own bound (default: v; tsum: none).  Never below v (the
 * phases start there); *met = 0 when c asked for less than v.
 */
static uint64_t cap_bound(const struct part_run_opts *o,
			  const struct part_cap *c, uint64_t v, int *met)
{
	uint64_t b;

	if (c->v == 0 && o->guard_slack > 1.0)
		return guard_bound(v, o->guard_slack);
	if (c->v == 0 && c == &o->max_memory && o->objective == PART_OBJ_TMAX)
		return guard_bound(v, PART_TMAX_MEMORY_TOP);
	if (c->v == 0)
		return o->objective == PART_OBJ_TSUM ? UINT64_MAX : v;
	if (isinf(c->v))
		return UINT64_MAX;
	if (c->factor)
		return guard_bound(v, c->v);
	b = c->v >= 1.8e19 ? UINT64_MAX : (uint64_t)floor(c->v);
	if (b < v) {
		*met = 0;
		return v;
	}
	return b;
}

/*
 * Objective tmax: the bound on T_sum of its search (--max-tsum) when the
 * search starts from T_sum ts, the refinement's result, into
 * r->bound_tsum (UINT64_MAX: none, the default).  A bound below ts holds
 * the search at ts (parsa_tmax's tsum_cap): then caps_met = 0.
 */
static void set_tsum_bound(const struct part_run_opts *o, uint64_t ts,
			   struct part_result *r)
{
	const struct part_cap *c = &o->max_tsum;
	uint64_t b;

	r->bound_tsum = UINT64_MAX;
	if (c->v == 0 || isinf(c->v))
		return;
	b = c->factor ? guard_bound(ts, c->v)
		      : c->v >= 1.8e19 ? UINT64_MAX : (uint64_t)floor(c->v);
	if (b < ts) {
		r->caps_met = 0;
		b = ts;
	}
	r->bound_tsum = b;
}

/* 1: the multilevel candidate tries the deeper start (part_comm). */
static int deep_wanted(const struct part_run_opts *o,
		       const struct parsa_graph *g)
{
	if (!o->ml_scratch || o->ml_communities == PART_COMM_OFF)
		return 0;
	return o->ml_communities != PART_COMM_AUTO ||
	       (o->objective == PART_OBJ_TSUM &&
		parsa_graph_nnz(g) <= PART_COMM_AUTO_NNZ);
}

/* 1: its coarsening within Louvain communities (--ml-communities on). */
static int comm_wanted(const struct part_run_opts *o)
{
	return o->ml_scratch && o->ml_communities == PART_COMM_ON;
}

/*
 * The communities that restrict the coarsening of the multilevel
 * candidate's deeper start (--ml-communities, parsa_ml.h): Louvain on the
 * star expansion of g (parsa_louvain.h), seeded by o->pu.seed; *comm
 * receives g->n_rows ids (the caller frees it).
 */
static int communities(const struct parsa_graph *g,
		       const struct part_run_opts *o,
		       const struct parsa_stop *stop, uint32_t **comm,
		       struct parsa_err *err)
{
	struct parsa_louvain_opts lo;
	int rc;

	parsa_louvain_opts_default(&lo);
	lo.seed = o->pu.seed;
	lo.stop = stop;
	*comm = malloc(((size_t)g->n_rows + 1) * sizeof(uint32_t));
	if (!*comm)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (communities)");
	rc = parsa_louvain_star(g, &lo, *comm, NULL, err);
	if (rc) {
		free(*comm);
		*comm = NULL;
	}
	return rc;
}

/*
 * Phases 2-3 of part_run.h and the guard, on r->part/used (the step-1
 * result, whose Algorithm 11 placement is already in r->owner).  t0 and
 * m0 are the guard's bounds: the step-1 T_max and M_max, loosened by
 * guard_slack (guard_bound); the "step-1" result the guard falls back
 * to is whatever r holds on entry (the strict round's result in the
 * second round of a slack).  round/rounds: for the progress steps.
 * stop (may be NULL) cuts the phases short (parsa_stop.h); the guard
 * and Algorithm 11 still run.  comm (may be NULL): the communities of
 * --ml-communities (communities()).
 */
static int improve(const struct part_dataset *ds, const struct part_run_opts *o,
		   const struct parsa_stop *stop, struct part_result *r,
		   struct parsa_nbrset *used, uint64_t t0, uint64_t m0,
		   unsigned round, unsigned rounds, const uint32_t *comm,
		   struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	uint64_t cap = parsa_balance_cap(g->n_rows, r->k, o->pu.imbalance);
	struct parsa_fm_opts fo = { o->refine_passes, cap, m0, 1e-3,
				    o->pu.seed, 1, o->refine_ppasses,
				    o->refine_skip, NULL, o->fm_passes, stop };
	struct cand step1;
	uint64_t t1 = 0, m1 = 0;
	uint32_t threads = o->threads ? o->threads : part_pool_cpus();

	/* the sweeps on the original graph evaluate their chunks on the
	 * threads; the chains (on threads of their own) copy fo and run
	 * their tasks in turn (chain_task) */
	fo.chunk = PART_SWEEP_CHUNK;
	fo.par_tasks = threads;
	fo.par = threads > 1 ? part_pool_par : NULL;
	fo.par_arg = &threads;
	/* with threads to spare and no deadline, the multilevel candidate is
	 * built beside the chains (under a deadline it runs last, if time is
	 * left for it) */
	int pre = threads > 1 && o->ml_scratch && o->ml_levels &&
		  !(stop && stop->deadline > 0);
	struct scratch_task sx = { ds, { 0 }, { 0 }, 0 };
	struct rpace pace;
	int rev0 = r->guard_reverted; /* a slack's second round counts on */
	/* (the V-cycle chains start from step 1's sets) */
	int rc = o->ml_levels ? cand_save(&step1, g, r->part, r->owner, used,
					  t0, m0, err)
			      : cand_save_parts(&step1, g, r->part, r->k, t0,
						m0, err);

	if (rc)
		return rc;
	fo.comm = comm;
	fo.deep = deep_wanted(o, g);
	fo.rb_ml = o->ml_rb_starts;
	rpace_init(&pace, o, round, rounds);

	/* attempt 0: the options as given; if the guard rejects it, 1: plain
	 * sweeps (no restreaming, p-fanout or V-cycle), 2: one sweep */
	for (int at = 0; rc == 0 && at < 3; at++) {
		if (at == 1 && !o->restream && !o->refine_ppasses && !o->ml_levels &&
		    !o->fm_passes && !o->flow_passes)
			continue;
		if (at > 0) {
			cand_take(&step1, g, r, used);
			fo.p_passes = 0;
			fo.max_passes = at == 1 ? o->refine_passes : 1;
			r->guard_reverted++;
		}
		if (at == 0 && o->restream)
			rc = restream(ds, o, stop, cap, m0, r->part, used,
				      &r->restream_kept, err);
		if (rc == 0 && at == 0 && o->ml_levels)
			rc = vchains_from(g, o, &fo, &step1, r, used, t0, m0,
					  threads, pre ? &sx : NULL, &pace,
					  err);
		else if (rc == 0 && (rc = owners_park(&step1, g, r, err)) == 0) {
			/* (the chains' copies of fo report by V-cycles) */
			struct parsa_fm_opts fd = fo;

			fd.progress = rpace_sweeps;
			fd.progress_arg = &pace;
			rc = owners_unpark(&step1, g, r,
					   parsa_fm_refine(g, r->part, used, &fd,
							   &r->fm_stats, err),
					   err);
		}
		if (rc == 0 && at < 2 && o->fm_passes && !(at == 0 && o->ml_levels))
			rc = run_kfm(g, o, stop, r, used, cap, m0, err);
		rpace_to(&pace, 1);
		if (rc == 0) /* (r->owner is still step 1's) */
			rc = cand_owner(&step1, g, r->owner, err);
		if (rc == 0)
			rc = place_v(o, used, r->owner, &r->pv_stats, &t1, &m1,
				     err);
		if (rc == 0 && t1 <= t0 && m1 <= m0)
			break;
		if (rc == 0 && at == 2) {
			/* the guard: keep the step-1 result */
			cand_take(&step1, g, r, used);
			r->guard_reverted++;
		}
	}
	/* the multilevel candidate: about a V-cycle's time, its coarsening
	 * not cut short, and useless if cut (it must beat the result whole):
	 * not started when less time is left */
	if (rc == 0 && sx.built && r->guard_reverted == rev0) {
		/* built with the options of attempt 0, which the guard kept */
		if (!parsa_stop_due(stop))
			scratch_take(g, &sx.c, &sx.st, r, used, t0, m0);
	} else if (rc == 0 && o->ml_scratch && !parsa_stop_due(stop) &&
		   !too_late(stop, pace.t_cycle)) {
		rc = try_scratch(ds, o, &fo, r, used, t0, m0, err);
	}
	if (sx.built)
		cand_release(&sx.c);
	/* (with a slack, on the last round's result only: the loosened
	 * round starts from the strict one's, so a flow refinement there
	 * would mostly be redone) */
	if (rc == 0 && o->flow_passes && round + 1 == rounds &&
	    !parsa_stop_due(stop))
		rc = flow_final(ds, o, stop, r, used, cap, t0, m0, err);
	rpace_to(&pace, pace.total);
	pthread_mutex_destroy(&pace.mu);
	cand_release(&step1);
	return rc;
}

/* N(U_i) of the example partition, Parsa's refinement phases (part_run.h),
 * then Algorithm 11.  Random keeps the owners drawn with its U. */
static void run_phase(const struct part_run_opts *o, enum part_phase p)
{
	if (o->phase)
		o->phase(o->phase_arg, p);
}

/*
 * Objective tmax: parsa_tmax_refine on r->part/owner/used under the
 * balance cap and M_max <= m_limit, with up to kicks kicks, within stop
 * (the full deadline: no Algorithm 11 runs after it).
 */
static int run_tmax(const struct part_dataset *ds,
		    const struct part_run_opts *o, const struct parsa_stop *stop,
		    struct part_result *r, struct parsa_nbrset *used,
		    uint64_t m_limit, uint32_t kicks, struct parsa_err *err)
{
	struct parsa_tmax_opts to = {
		PART_TMAX_ROUNDS, PART_TMAX_POLISH,
		parsa_balance_cap(ds->g.n_rows, r->k, o->pu.imbalance),
		m_limit, o->pu.seed, stop, PART_TMAX_CYCLES,
		kicks, PART_TMAX_KICK_SIZE, PART_TMAX_KICK_PATIENCE,
		kicks ? PART_TMAX_KICK_LEVELS : 0, PART_TMAX_KICK_MORE,
		PART_TMAX_KICK_PATIENCE_MORE, 0,
		r->bound_tsum == UINT64_MAX ? 0 : r->bound_tsum,
	};
	double t0 = part_now();
	int rc;

	run_phase(o, PART_PHASE_REFINE);
	rc = parsa_tmax_refine(&ds->g, r->part, used, r->owner, &to, NULL,
			       &r->tmax_stats, err);
	r->tmax_ran = rc == 0;
	r->t_tmax += part_now() - t0;
	if (rc == 0 && r->tmax_stats.stopped &&
	    parsa_stop_due(stop) == PARSA_STOP_DEADLINE)
		r->time_limited = 1;
	return rc;
}

/* The M_max factors of objective tmax's loosened rounds (where no
 * --max-memory is given). */
static const double tmax_factors[] = { PART_TMAX_MEMORY };

/* 1: objective tmax's candidates and search run (tmax_candidates). */
static int tmax_on(const struct part_run_opts *o)
{
	return o->objective == PART_OBJ_TMAX && !(o->param_imbalance > 0);
}

/* The loosened rounds of tmax_candidates for the M_max bound mb (from
 * cap_bound) over the step-1 m0. */
static unsigned tmax_loosened(const struct part_run_opts *o, uint64_t m0,
			      uint64_t mb)
{
	if (o->max_memory.v != 0 || o->guard_slack > 1.0)
		return mb > m0;
	return sizeof(tmax_factors) / sizeof(*tmax_factors);
}

/* (T_max, T_sum) of the tmax phase's result a is below b's. */
static int tmax_better(const struct parsa_tmax_stats *a,
		       const struct parsa_tmax_stats *b)
{
	return a->tmax_after < b->tmax_after ||
	       (a->tmax_after == b->tmax_after && a->tsum_after < b->tsum_after);
}

/*
 * Objective tmax after the strict round (r/used hold its result, m0 is
 * step 1's M_max): candidates, each ended by the tmax phase, the best by
 * (T_max, T_sum) kept: the strict result itself (M_max <= m0), then from
 * it a loosened round per M_max bound (the cap given: mb; none given:
 * PART_TMAX_MEMORY's factors of m0) with T_max held at the strict
 * result's (a tightening bound; a --max-traffic given: tb).  A candidate
 * after the first starts only while the stop is not due.
 */
static int tmax_candidates(const struct part_dataset *ds,
			   const struct part_run_opts *o,
			   const struct parsa_stop *stop, struct part_result *r,
			   struct parsa_nbrset *used, uint64_t m0, uint64_t tb,
			   uint64_t mb, const uint32_t *comm,
			   struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	int given = o->max_memory.v != 0 || o->guard_slack > 1.0;
	unsigned n = tmax_loosened(o, m0, mb);
	struct cand strict, best;
	struct parsa_tmax_stats bst;
	uint64_t ts, bmb, btb, bts;
	int rc = place_v(o, used, r->owner, &r->pv_stats, &ts, NULL, err);

	/* each candidate's search under --max-tsum of its own start */
	set_tsum_bound(o, 2 * parsa_connectivity(used), r);
	if (rc == 0)
		rc = cand_save(&strict, g, r->part, r->owner, used, ts, m0, err);
	if (rc)
		return rc;
	if (o->max_traffic.v == 0 && o->guard_slack <= 1.0)
		tb = ts;
	rc = run_tmax(ds, o, stop, r, used, m0, 0, err);
	if (rc == 0)
		rc = cand_save(&best, g, r->part, r->owner, used, 0, 0, err);
	if (rc) {
		cand_release(&strict);
		return rc;
	}
	bst = r->tmax_stats;
	bmb = m0;
	btb = ts;
	bts = r->bound_tsum;
	for (unsigned i = 0; rc == 0 && i < n && !parsa_stop_due(stop); i++) {
		uint64_t mi = given ? mb : guard_bound(m0, tmax_factors[i]);

		cand_take(&strict, g, r, used);
		rc = improve(ds, o, stop, r, used, tb, mi, 1 + i, 1 + n, comm,
			     err);
		set_tsum_bound(o, 2 * parsa_connectivity(used), r);
		if (rc == 0)
			rc = run_tmax(ds, o, stop, r, used, mi, 0, err);
		if (rc == 0 && tmax_better(&r->tmax_stats, &bst)) {
			cand_release(&best);
			rc = cand_save(&best, g, r->part, r->owner, used, 0, 0,
				       err);
			bst = r->tmax_stats;
			bmb = mi;
			btb = tb;
			bts = r->bound_tsum;
			if (rc) /* best released by cand_save */
				best.part = NULL;
		}
	}
	if (rc == 0) {
		cand_take(&best, g, r, used);
		r->tmax_stats = bst;
		r->bound_mmax = bmb;
		r->bound_tmax = btb;
		r->bound_tsum = bts; /* the kicks: the best candidate's bound */
		if (!parsa_stop_due(stop)) {
			rc = run_tmax(ds, o, stop, r, used, bmb, PART_TMAX_KICKS,
				      err);
			if (rc == 0) {
				r->tmax_stats.tmax_before = bst.tmax_before;
				r->tmax_stats.tsum_before = bst.tsum_before;
			}
		}
	}
	if (best.part)
		cand_release(&best);
	cand_release(&strict);
	return rc;
}

/* A cold feature's nonzero against a hot one's, in quarters, for
 * used_sets_par's cuts (parsa_graph_col_cuts): one mask a nonzero (see
 * parsa_graph.c). */
#define USED_COLD_W 14

/* parsa_used_sets on up to `threads` threads, each over a range of the
 * features of about equal work (parsa_graph_col_cuts; the same sets:
 * every bit is set by one task). */
struct used_task {
	const struct parsa_graph *g;
	const uint32_t *part;
	struct parsa_nbrset *used;
	uint32_t n;
	uint32_t cut[PART_POOL_MAX_THREADS + 1];
	uint64_t *size; /* n x k: each task's count of its range's sets */
};

static int used_task(void *arg, uint32_t t, struct parsa_err *err)
{
	struct used_task *ut = arg;

	if (parsa_used_sets_range(ut->g, ut->part, ut->used, ut->cut[t],
				  ut->cut[t + 1]) != 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "used sets: a feature is out of range");
	if (ut->size) /* (else recounted after) */
		parsa_nbrset_count_range(ut->used, ut->cut[t], ut->cut[t + 1],
					 ut->size + (size_t)t * ut->used->k);
	return 0;
}

static int used_sets_par(const struct parsa_graph *g, const uint32_t *part,
			 struct parsa_nbrset *used, uint32_t threads,
			 struct parsa_err *err)
{
	struct used_task ut = { g, part, used,
				threads ? threads : part_pool_cpus(), { 0 }, NULL };
	int rc;

	if (ut.n > PART_POOL_MAX_THREADS)
		ut.n = PART_POOL_MAX_THREADS;
	/* below a million nonzeros one thread is as quick */
	if (ut.n <= 1 || parsa_graph_nnz(g) < (1u << 20))
		return parsa_used_sets(g, part, used, err);
	rc = parsa_used_sets_check(g, part, used, err);
	if (rc)
		return rc;
	/* (out of memory: even ranges, the same sets) */
	(void)parsa_graph_col_cuts(g, ut.n, ut.cut, USED_COLD_W, part_pool_par,
				   &ut.n);
	parsa_nbrset_clear(used);
	ut.size = calloc((size_t)ut.n * used->k, sizeof(uint64_t));
	rc = part_pool_run(ut.n, ut.n, used_task, &ut, err);
	if (rc == 0 && ut.size) { /* the sizes, summed in task order */
		memset(used->size, 0, (size_t)used->k * sizeof(uint64_t));
		for (uint32_t t = 0; t < ut.n; t++)
			for (uint32_t j = 0; j < used->k; j++)
				used->size[j] += ut.size[(size_t)t * used->k + j];
	} else if (rc == 0) {
		parsa_nbrset_recount(used);
	}
	free(ut.size);
	return rc;
}

static int run_v(const struct part_dataset *ds, const struct part_run_opts *o,
		 const struct parsa_stop *stop, struct part_result *r,
		 struct parsa_err *err)
{
	struct parsa_nbrset used;
	int parsa = o->method == PART_METHOD_PARSA;
	uint64_t t0 = 0, m0 = 0, tb, mb;
	unsigned rounds;
	double ts, tv;
	uint32_t *comm = NULL; /* --ml-communities: once for every round */
	int rc;

	r->bound_tmax = r->bound_mmax = UINT64_MAX; /* until phases 2-3 run */
	r->bound_tsum = UINT64_MAX;
	if (o->method == PART_METHOD_RANDOM)
		return 0;
	rc = parsa_nbrset_init(&used, ds->g.n_cols, r->k, err);
	if (rc)
		return rc;
	rc = used_sets_par(&ds->g, r->part, &used, o->threads, err);
	ts = part_now();
	if (rc == 0 && parsa && o->refine_rounds)
		run_phase(o, PART_PHASE_REFINE);
	if (rc == 0 && parsa && o->refine_rounds)
		rc = parsa_refine_mmax(&ds->g, r->part, &used,
				       parsa_balance_cap(ds->g.n_rows, r->k,
							 o->pu.imbalance),
				       o->refine_rounds, &r->refine_stats, err);
	tv = part_now();
	r->t_refine = tv - ts;
	run_phase(o, PART_PHASE_V);
	if (rc == 0)
		rc = place_v(o, &used, r->owner, &r->pv_stats, &t0, &m0, err);
	r->t_partition_v = part_now() - tv;
	if (rc == 0 && parsa && r->k > 1 &&
	    (o->restream || o->refine_passes || o->ml_scratch || o->fm_passes ||
	     o->flow_passes)) {
		/* after the deadline come at most two more runs of Algorithm
		 * 11 (a chain's and the guard's), each about as long as the
		 * one just measured: the phases stop early enough for them */
		struct parsa_stop st = *stop;

		if (st.deadline > 0) /* (and one after the flow refinement) */
			st.deadline -= (o->flow_passes ? 3 : 2) * r->t_partition_v;
		run_phase(o, PART_PHASE_REFINE);
		ts = part_now();
		r->step1_tmax = t0;
		r->step1_mmax = m0;
		/* with a slack, the phases run first under the strict bound,
		 * then on from that result under the loosened one: a slack
		 * never ends with a higher T_sum than the strict run (measured
		 * in BENCHMARKS.md: loosened from the start, the local search
		 * took other paths and ended higher on a third of the sets) */
		r->caps_met = 1;
		tb = cap_bound(o, &o->max_traffic, t0, &r->caps_met);
		mb = cap_bound(o, &o->max_memory, m0, &r->caps_met);
		rounds = tmax_on(o) ? 1 + tmax_loosened(o, m0, mb)
				    : tb > t0 || mb > m0 ? 2 : 1;
		r->bound_tmax = t0;
		r->bound_mmax = m0;
		if (comm_wanted(o))
			rc = communities(&ds->g, o, &st, &comm, err);
		if (rc == 0)
			rc = improve(ds, o, &st, r, &used, t0, m0, 0, rounds,
				     comm, err);
		if (rc == 0 && tmax_on(o))
			rc = tmax_candidates(ds, o, &st, r, &used, m0, tb, mb,
					     comm, err);
		else if (rc == 0 && rounds == 2 && !parsa_stop_due(&st)) {
			r->bound_tmax = tb;
			r->bound_mmax = mb;
			rc = improve(ds, o, &st, r, &used, tb, mb, 1, rounds,
				     comm, err);
		}
		r->t_refine += part_now() - ts;
		r->time_limited = parsa_stop_due(&st) == PARSA_STOP_DEADLINE;
	} else if (rc == 0 && parsa && r->k > 1 && tmax_on(o)) {
		int met = 1;

		set_tsum_bound(o, 2 * parsa_connectivity(&used), r);

		rc = run_tmax(ds, o, stop, r, &used,
			      cap_bound(o, &o->max_memory, m0, &met),
			      PART_TMAX_KICKS, err);
		r->t_refine += r->t_tmax;
	}
	free(comm);
	parsa_nbrset_release(&used);
	return rc;
}

/* part_run_metrics' tasks: 0 is the placement's metrics and figures,
 * 1 + t the random trial t (seed + t; trial 0 with its figures). */
struct metrics_task {
	const struct part_dataset *ds;
	struct part_result *r;
	uint64_t seed;
	struct parsa_metrics *one; /* trials entries */
	parsa_progress_fn progress; /* may be NULL */
	void *progress_arg;
	pthread_mutex_t mu;         /* the progress calls, one at a time */
	uint64_t done, total;
};

static int metrics_task(void *arg, uint32_t task, struct parsa_err *err)
{
	struct metrics_task *mt = arg;
	const struct parsa_graph *g = &mt->ds->g;
	struct part_result *r = mt->r;
	int rc;

	if (task == 0)
		rc = parsa_metrics_figures(g, r->k, r->part, r->owner,
					   &r->parts, &r->m, err);
	else
		rc = parsa_metrics_random_one(g, r->k, mt->seed + task - 1,
					      task == 1 ? &r->rnd_parts : NULL,
					      &mt->one[task - 1], err);
	if (mt->progress) {
		pthread_mutex_lock(&mt->mu);
		mt->progress(mt->progress_arg, ++mt->done, mt->total);
		pthread_mutex_unlock(&mt->mu);
	}
	return rc;
}

int part_run_metrics(const struct part_dataset *ds, uint64_t seed,
		     uint32_t trials, uint32_t threads,
		     parsa_progress_fn progress, void *progress_arg,
		     struct part_result *r, struct parsa_err *err)
{
	double t0 = part_now();
	struct metrics_task mt = { .ds = ds, .r = r, .seed = seed,
				   .progress = progress,
				   .progress_arg = progress_arg,
				   .total = (uint64_t)trials + 1 };
	int rc;

	if (trials == 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "random metrics: trials must be >= 1");
	parsa_partfig_release(&r->parts);
	parsa_partfig_release(&r->rnd_parts);
	rc = parsa_partfig_init(&r->parts, r->k, err);
	if (rc == 0)
		rc = parsa_partfig_init(&r->rnd_parts, r->k, err);
	mt.one = rc ? NULL : calloc(trials, sizeof(*mt.one));
	if (rc == 0 && !mt.one)
		rc = parsa_fail(err, PARSA_ENOMEM,
				"random metrics: out of memory");
	pthread_mutex_init(&mt.mu, NULL);
	if (rc == 0)
		rc = part_pool_run(1 + trials,
				   threads ? threads : part_pool_cpus(),
				   metrics_task, &mt, err);
	pthread_mutex_destroy(&mt.mu);
	if (rc == 0)
		parsa_metrics_mean(mt.one, trials, r->k, &r->rnd);
	free(mt.one);
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

/* After the placement: cancelled, or the metrics. */
static int then_metrics(const struct part_dataset *ds,
			const struct part_run_opts *o, struct part_result *r,
			struct parsa_err *err)
{
	if (o->pu.cancel && *o->pu.cancel)
		return parsa_fail(err, PARSA_ECANCEL, "cancelled");
	run_phase(o, PART_PHASE_METRICS);
	return part_run_metrics(ds, o->pu.seed, o->random_trials, o->threads,
				o->metrics_progress, o->metrics_progress_arg,
				r, err);
}

int part_run_finish(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err)
{
	/* the run began t_partition_u seconds ago (Algorithm 13 or the
	 * parallel workers): the time limit counts from there */
	struct parsa_stop stop = {
		o->pu.cancel,
		o->time_limit > 0 ? parsa_stop_clock() - r->t_partition_u +
					    o->time_limit
				  : 0,
	};
	int rc = 0;

	r->time_limited = 0;
	if (o->pu.cancel && *o->pu.cancel)
		return parsa_fail(err, PARSA_ECANCEL, "cancelled");
	rc = run_v(ds, o, &stop, r, err);
	return rc ? rc : then_metrics(ds, o, r, err);
}

int part_run_place(const struct part_dataset *ds,
		   const struct part_run_opts *o, double start,
		   struct part_result *r, struct parsa_err *err)
{
	struct parsa_stop stop = {
		o->pu.cancel, o->time_limit > 0 ? start + o->time_limit : 0,
	};
	double t0 = part_now();
	int rc;

	run_phase(o, PART_PHASE_U);
	rc = run_u(ds, o, r, err);
	r->t_partition_u = part_now() - t0;
	if (rc == 0 && o->pu.cancel && *o->pu.cancel)
		rc = parsa_fail(err, PARSA_ECANCEL, "cancelled");
	if (rc == 0)
		rc = run_v(ds, o, &stop, r, err);
	return rc;
}

int part_run_owners(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err)
{
	struct parsa_nbrset used;
	double t0 = part_now();
	int rc;

	run_phase(o, PART_PHASE_V);
	if (r->k > PARSA_METRICS_SETS_MAX_K && r->k <= 65536 &&
	    o->param_imbalance <= 0) {
		/* the users as lists: Σ c_v x 2 bytes, not k/8 a feature */
		struct parsa_users u;

		uint32_t threads = o->threads ? o->threads : part_pool_cpus();

		rc = parsa_users_build_par(&ds->g, r->k, r->part, &u,
					   threads > 1 ? part_pool_par : NULL,
					   &threads, threads, err);
		if (rc == 0)
			rc = parsa_partition_v_sliced(
				NULL, &u, o->sweeps, part_run_v_slices(o, u.n_feat),
				threads > 1 ? part_pool_par : NULL, &threads,
				r->owner, NULL, &r->pv_stats, err);
		parsa_users_release(&u);
		r->t_partition_v += part_now() - t0;
		return rc;
	}
	rc = parsa_nbrset_init(&used, ds->g.n_cols, r->k, err);
	if (rc)
		return rc;
	rc = used_sets_par(&ds->g, r->part, &used, o->threads, err);
	if (rc == 0)
		rc = place_v(o, &used, r->owner, &r->pv_stats, NULL, NULL,
			     err);
	parsa_nbrset_release(&used);
	r->t_partition_v += part_now() - t0;
	return rc;
}

int part_run(const struct part_dataset *ds, const struct part_run_opts *opts,
	     struct part_result *r, struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	/* Algorithm 13's automatic blocks sized to the whole dataset, at
	 * both levels (parsa_partu_blocks) */
	struct part_run_opts fit = *opts;
	const struct part_run_opts *o = &fit;
	double t0;
	int rc;

	part_run_fit(&fit.pu, ds);

	if (o->pu.k < 1)
		return parsa_fail(err, PARSA_EINVAL, "k must be at least 1");
	if (o->max_tsum.v != 0 && o->objective != PART_OBJ_TMAX)
		return parsa_fail(err, PARSA_EINVAL,
				  "--max-tsum (max_tsum) applies to "
				  "--objective tmax only");
	if (o->init_S && (o->init_S->n_feat != g->n_cols ||
			  o->init_S->k != o->pu.k))
		return parsa_fail(err, PARSA_EINVAL,
				  "initial neighbor sets do not match the dataset");
	rc = part_result_alloc(r, ds, o->pu.k, err);
	if (rc)
		return rc;
	if (part_levels_k1(o) > 1) {
		rc = part_levels_run(ds, o, r, err);
		if (rc == 0)
			rc = then_metrics(ds, o, r, err);
		if (rc)
			part_result_release(r);
		return rc;
	}
	t0 = part_now();
	run_phase(o, PART_PHASE_U);
	rc = run_u(ds, o, r, err);
	r->t_partition_u = part_now() - t0;
	if (rc == 0)
		rc = part_run_finish(ds, o, r, err);
	if (rc)
		part_result_release(r);
	return rc;
}

static const char *const objective_names[] = {
	[PART_OBJ_DEFAULT] = "default",
	[PART_OBJ_TSUM] = "tsum",
	[PART_OBJ_TMAX] = "tmax",
};

/* The index of s in names[0..n), or -1. */
static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* names[i], or "?" out of range. */
static const char *name_at(const char *const *names, size_t n, unsigned i)
{
	return i < n ? names[i] : "?";
}

#define NAMES_N(a) (sizeof(a) / sizeof(*(a)))

int part_objective_parse(const char *s, enum part_objective *ob)
{
	int i = name_index(objective_names, NAMES_N(objective_names), s);

	if (i < 0)
		return PARSA_EINVAL;
	*ob = (enum part_objective)i;
	return 0;
}

const char *part_objective_name(enum part_objective ob)
{
	return name_at(objective_names, NAMES_N(objective_names), (unsigned)ob);
}

static const char *const comm_names[] = {
	[PART_COMM_AUTO] = "auto",
	[PART_COMM_ON] = "on",
	[PART_COMM_DEEP] = "deep",
	[PART_COMM_OFF] = "off",
};

int part_comm_parse(const char *s, enum part_comm *c)
{
	int i = name_index(comm_names, NAMES_N(comm_names), s);

	if (i < 0)
		return PARSA_EINVAL;
	*c = (enum part_comm)i;
	return 0;
}

const char *part_comm_name(enum part_comm c)
{
	return name_at(comm_names, NAMES_N(comm_names), (unsigned)c);
}

int part_cap_parse(const char *s, struct part_cap *c)
{
	char *end;
	double v;
	size_t n = strlen(s);

	if (strcmp(s, "inf") == 0) {
		c->v = INFINITY;
		c->factor = 0;
		return 0;
	}
	if (n == 0 || n > 64 || s[0] == ' ' || s[0] == '+' || s[0] == '-')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 1.0 || v > 1e18)
		return -1;
	c->factor = *end == 'x';
	if (*end == 'x')
		end++;
	if (*end)
		return -1;
	c->v = v;
	return 0;
}

void part_cap_text(const struct part_cap *c, char *buf, size_t len)
{
	if (c->v == 0)
		snprintf(buf, len, "%s", "");
	else if (isinf(c->v))
		snprintf(buf, len, "%s", "inf");
	else
		/* the shortest form that reads back as the same number */
		for (int p = 1; p <= 17; p++) {
			snprintf(buf, len, "%.*g%s", p, c->v,
				 c->factor ? "x" : "");
			if (strtod(buf, NULL) == c->v)
				break;
		}
}

static const char *const method_names[] = {
	[PART_METHOD_PARSA] = "parsa",
	[PART_METHOD_RANDOM] = "random",
	[PART_METHOD_METIS] = "metis",
	[PART_METHOD_GREEDY] = "greedy",
};

int part_method_parse(const char *s, enum part_method *m)
{
	int i = name_index(method_names, NAMES_N(method_names), s);

	if (i < 0)
		return PARSA_EINVAL;
	*m = (enum part_method)i;
	return 0;
}

const char *part_method_name(enum part_method m)
{
	return name_at(method_names, NAMES_N(method_names), (unsigned)m);
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
