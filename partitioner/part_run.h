/*
 * part_run: one partition job on a loaded dataset, whatever the method:
 * partition U (Parsa, random, METIS or streaming greedy), partition V
 * (Algorithm 11 for every method but random, so differences between methods
 * come from U), then the metrics of the result and of the random baseline.
 * Used by the CLI and by the HTTP service.
 *
 * Parsa's post-U phases (part_run_finish, so the parallel driver gets them
 * too), in order:
 *   1. the M_max refinement (parsa_refine.h, refine_rounds);
 *   2. restreaming (restream passes): Algorithm 13 again over all blocks,
 *      its neighbor sets starting from N(U_i) of the current result; a pass
 *      is kept only when it lowers the connectivity (T_sum) without raising
 *      M_max above the step-1 result, and the passes stop at the first that
 *      does not;
 *   3. the connectivity refinement (parsa_fm.h, refine_passes sweeps),
 *      then fm_passes k-way FM passes (parsa_kfm.h); with ml_levels, up to
 *      ml_cycles in-part V-cycles (parsa_ml.h) running both at every
 *      level, in ml_chains independent chains (the best kept; they and
 *      the --multilevel candidate run on up to `threads` threads, with the
 *      same result for any number); all capped at the step-1 M_max and the
 *      balance bound;
 *   4. Algorithm 11 with its sweeps (and the optional cap on parameters
 *      per server, param_imbalance).
 *   Then, with flow_passes, on the result kept (in the last round of a
 *   slack or caps), the two-way flow refinement (parsa_flow.h) under the
 *   balance cap and the round's M_max bound, Algorithm 11 again, and the
 *   result before it back if T_max or M_max went above the round's bounds.
 * Guard: when 2 or 3 ran, the result is compared with the step-1 result
 * (both through Algorithm 11): if its T_max or M_max is larger, 3 is tried
 * again from the step-1 result with plain sweeps and FM passes (no
 * restreaming, p-fanout or V-cycle), then with one sweep, and if those fail too the step-1
 * result is kept; so the extra phases never worsen T_max or M_max.
 * Looser bounds (the caps max_memory and max_traffic, guard_slack as
 * the cap "Fx" on both, or objective tsum: none where no cap is given)
 * then run 2-3 (and the guard) a second time, from that result, with the
 * bounds loosened to the caps (everywhere the step-1 M_max caps a move,
 * too): memory and peak traffic traded for total traffic, and never a
 * higher T_sum than the strict round's.
 * --multilevel then builds a separate candidate (parsa_ml_partition) that
 * replaces the result only if it keeps the same guard and lowers T_sum.
 * Objective tmax: after the strict round, candidates: its result, and
 * from it one loosened round per M_max bound (1.2x, 1.5x and 2x the
 * step-1 M_max, or only the --max-memory cap given) with T_max held at
 * the strict result's (or the --max-traffic cap); each ends with
 * parsa_tmax_refine (parsa_tmax.h: examples off the busiest machine,
 * owners between users, T_max first then T_sum, exact owners: no
 * Algorithm 11 after it) under the balance cap and its M_max bound; the
 * lowest (T_max, T_sum) is kept, so T_max is never above the default
 * objective's, and searched once more with kicks (an iterated local
 * search, PART_TMAX_KICKS).  With flow_passes the flow refinement runs
 * in the last candidate's round only (as in a slack's last round).  With
 * param_imbalance neither the candidates nor the search run (its owners
 * would not keep that cap): the phases run as for the default objective
 * with --max-memory 2x.
 * time_limit and pu.cancel stop phases 2-3 early (parsa_stop.h): with a
 * deadline, 3 runs its sweeps and FM passes before the V-cycles so that a
 * cut leaves the cheap gains; the guard and 4 always run.
 */
#ifndef PART_RUN_H
#define PART_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_fm.h"
#include "parsa_metrics.h"
#include "parsa_partu.h"
#include "parsa_partv.h"
#include "parsa_refine.h"
#include "parsa_tmax.h"
#include "part_lanes.h"
#include "part_reader.h"

enum part_method {
	PART_METHOD_PARSA = 0,
	PART_METHOD_RANDOM,
	PART_METHOD_METIS,
	PART_METHOD_GREEDY,
};

/* --quality presets (part_quality_apply). */
enum part_quality {
	PART_QUALITY_DEFAULT = 0,
	PART_QUALITY_FAST,
	PART_QUALITY_BEST,
};

/* What the refinement phases minimize (--objective). */
enum part_objective {
	PART_OBJ_DEFAULT = 0, /* T_sum, never raising M_max and T_max above
			       * the step-1 result (times guard_slack) */
	PART_OBJ_TSUM,        /* T_sum first: M_max and T_max bounded only
			       * by the caps given (and the balance cap) */
	PART_OBJ_TMAX,        /* T_max first, then T_sum (see top) */
};

/* --ml-communities: the multilevel candidate's deeper start (parsa_ml.h),
 * on = with its coarsening restricted to Louvain communities
 * (parsa_louvain.h: 24-48 bytes per nonzero), deep = unrestricted, off =
 * none; auto = deep with objective tsum on data of at most
 * PART_COMM_AUTO_NNZ nonzeros, off otherwise (measured: the communities
 * add nothing to the deeper start's gain, BENCHMARKS.md). */
enum part_comm {
	PART_COMM_AUTO = 0,
	PART_COMM_ON,
	PART_COMM_OFF,
	PART_COMM_DEEP,
};
#define PART_COMM_AUTO_NNZ (1ULL << 24)

/*
 * A cap on M_max or T_max (--max-memory, --max-traffic): v == 0: none
 * given (the objective's default bound); v == INFINITY: no bound; else an
 * absolute bound (factor 0) or a factor >= 1 of the step-1 result (factor
 * 1).  A cap below the step-1 result cannot bind the refinement, which
 * starts there: it then keeps that result's value (the report says so).
 */
struct part_cap {
	double v;
	int factor;
};

/* The phases a run goes through, in order (refine and partition_v may
 * alternate: the M_max refinement, Algorithm 11, then the T_sum
 * refinement with its own runs of Algorithm 11); part_run_opts.phase. */
enum part_phase {
	PART_PHASE_U = 0,      /* partition U (Algorithm 13 or a baseline) */
	PART_PHASE_REFINE,     /* Parsa's refinement phases */
	PART_PHASE_V,          /* Algorithm 11 */
	PART_PHASE_METRICS,    /* the metrics and the random baseline */
};

struct part_run_opts {
	enum part_method method;
	struct parsa_partu_opts pu; /* k, blocks, init_blocks, rule, imbalance, seed */
	uint32_t sweeps;            /* improving sweeps of Algorithm 11 */
	uint32_t random_trials;     /* seeds averaged for the random baseline */
	uint32_t refine_rounds;     /* Parsa: rounds of the M_max refinement (0 = off) */
	const struct parsa_nbrset *init_S; /* borrowed, may be NULL: incremental start */
	uint32_t refine_passes;     /* Parsa: connectivity refinement sweeps (0 = off) */
	uint32_t refine_ppasses;    /* Parsa: p-fanout sweeps before them (parsa_fm.h) */
	uint32_t refine_skip;       /* Parsa: their skip_ratio (parsa_fm.h; preset) */
	uint32_t fm_passes;         /* Parsa: k-way FM passes after those sweeps
				     * and at every level of the multilevel
				     * candidate (parsa_kfm.h; 0 = off) */
	uint32_t flow_passes;       /* Parsa: rounds of the two-way flow
				     * refinement after the k-way FM at the
				     * finest level (parsa_flow.h; 0 = off) */
	uint32_t restream;          /* Parsa: restreaming passes (0 = off) */
	uint32_t ml_levels;         /* Parsa: coarsening levels of the V-cycle
				     * around the refinement (parsa_ml.h; 0 = off) */
	uint32_t ml_cycles;         /* Parsa: V-cycles when ml_levels > 0 (seeds
				     * seed, seed + 1, ...; 0 counts as 1) */
	uint32_t ml_chains;         /* Parsa: independent chains of ml_cycles
				     * V-cycles from the same start, the best
				     * kept (0 counts as 1) */
	int ml_scratch;             /* Parsa: also try parsa_ml_partition (the
				     * guard keeps the better) */
	enum part_comm ml_communities; /* Parsa: ml_scratch also tries a
				     * deeper start whose coarsening joins
				     * only examples of one Louvain community
				     * (parsa_louvain.h, parsa_ml.h) */
	uint32_t ml_rb_starts;      /* Parsa: ml_scratch also tries a third
				     * start, recursive bisection with this
				     * many multilevel starts per bisection
				     * (parsa_fm_opts.rb_ml); 0 = off */
	uint32_t threads;           /* Parsa: threads for the independent
				     * chains of V-cycles (part_pool.h; the
				     * result does not depend on it);
				     * 0 = the CPUs the process may use */
	uint32_t lanes;             /* Parsa: lanes of Algorithm 13 on
				     * threads (part_lanes.h; the result
				     * does not depend on threads); 0 =
				     * auto (part_lanes_count: 1, the
				     * sequential run, on small data) */
	uint32_t v_slices;          /* Algorithm 11 in slices on threads
				     * (parsa_partv.h; the result does not
				     * depend on threads); 0 = auto
				     * (part_run_v_slices) */
	double guard_slack;         /* Parsa: the guard's bound (see top): phases
				     * 2-3 may end with T_max and M_max up to
				     * guard_slack times the step-1 result's
				     * (floor); <= 1 = never worse (the
				     * default), INFINITY = no bound (the
				     * connectivity alone, the balance cap
				     * still holds) */
	enum part_objective objective; /* Parsa: what phases 2-3 minimize */
	struct part_cap max_memory;  /* Parsa: caps of phases 2-3 on M_max */
	struct part_cap max_traffic; /* ... and on T_max (see part_cap) */
	struct part_cap max_tsum;    /* objective tmax: cap of its search on
				      * T_sum (a factor: of T_sum where each
				      * candidate's search starts, its
				      * refinement's result); none: no
				      * bound */
	double param_imbalance;     /* Algorithm 11: max features per server /
				     * ceil(|V_used| / k); 0 = no cap */
	enum part_quality quality;  /* the preset the options came from */
	double time_limit;          /* Parsa: seconds from the start of the
				     * partition within which it should end:
				     * phases 2-3 stop at their next checkpoint
				     * (parsa_stop.h) once only the time of two
				     * more runs of Algorithm 11 (timed on the
				     * step-1 one) is left; 0 = none */
	uint32_t levels;            /* Parsa: 1 = one k-way run; 2 = the
				     * two-level run (part_levels.h); 0 =
				     * auto (PART_LEVELS_AUTO_K) */
	parsa_progress_fn refine_progress; /* may be NULL: (step, steps) of
					    * phases 2-3 as they go (a step
					    * per V-cycle of every chain, one
					    * for the sweeps on the original
					    * graph, one for the multilevel
					    * candidate) */
	void *refine_progress_arg;
	void (*phase)(void *arg, enum part_phase p); /* may be NULL: called
					    * as each phase begins */
	void *phase_arg;
	parsa_progress_fn metrics_progress; /* may be NULL: (tasks done,
					    * tasks) of the metrics, the
					    * placement's and each random
					    * trial's, as each ends; from the
					    * threads that run them, one call
					    * at a time */
	void *metrics_progress_arg;
};

/* Defaults: method parsa, parsa_partu_opts_default, the measured sweeps, 5
 * trials, and the post-U phases of PART_QUALITY_DEFAULT. */
void part_run_opts_default(struct part_run_opts *o);

/*
 * Set the options a --quality preset decides (refine_rounds, refine_passes,
 * restream, sweeps, blocks) and o->quality; the table is in part_run.c and
 * README.md.  Options given explicitly should be applied after this.
 */
void part_quality_apply(struct part_run_opts *o, enum part_quality q);
int part_quality_parse(const char *s, enum part_quality *q);

const char *part_quality_name(enum part_quality q);

struct part_result {
	uint32_t k;
	uint32_t *part;        /* n_rows: part of each example (owned) */
	uint32_t *owner;       /* n_cols: server of each feature (owned) */
	struct parsa_metrics m;   /* of this placement */
	struct parsa_metrics rnd; /* random baseline (mean of trials) */
	struct parsa_partfig parts;     /* per-part figures of this placement
					 * (part_run_metrics; k == 0: none) */
	struct parsa_partfig rnd_parts; /* ... of the random baseline's
					 * first trial (seed) */
	double t_partition_u;  /* Algorithm 13 (or the baseline's U) */
	double t_refine;       /* every Parsa refinement phase: M_max,
				* restreaming, connectivity, and the guard */
	double t_partition_v;  /* Algorithm 11 with its sweeps, incl. N(U_i) */
	double t_metrics;
	struct parsa_refine_stats refine_stats;
	struct parsa_fm_stats fm_stats;
	uint32_t restream_kept;  /* restreaming passes kept */
	int guard_reverted;      /* attempts the guard rejected (see top); 3:
				  * the step-1 result was kept */
	int scratch_kept;        /* 1: the multilevel partition was kept */
	uint64_t step1_tmax;     /* T_max and M_max of the step-1 result (the
				  * guard's reference; 0 when no phase 2-3 */
	uint64_t step1_mmax;     /* ran) */
	uint64_t bound_mmax;     /* the bounds phases 2-3 ended under (the
				  * last round's; UINT64_MAX: none) */
	uint64_t bound_tmax;
	uint64_t bound_tsum;     /* objective tmax: its search's T_sum bound
				  * (--max-tsum; UINT64_MAX: none) */
	int caps_met;            /* 0: a cap given was below the step-1
				  * result, so the step-1 value bound it */
	int time_limited;        /* 1: the time limit was reached before the
				  * refinement phases ended (they were cut) */
	struct parsa_partu_stats pu_stats;
	struct part_lanes_stats lanes_stats; /* lanes > 1: CPU work and span */
	struct parsa_partv_stats pv_stats;
	struct parsa_tmax_stats tmax_stats; /* objective tmax: its phase */
	int tmax_ran;            /* 1: the tmax phase ran */
	double t_tmax;           /* its seconds (also in t_refine) */
};

void part_result_init(struct part_result *r);
void part_result_release(struct part_result *r);

/* Algorithm 13's automatic blocks sized to ds (pu->fit_bytes = its CSR
 * bytes, parsa_partu_blocks) unless pu says already what to fit them to
 * (level 2 of a two-level run: the whole dataset, not the group).  Every
 * in-memory run (sequential, lanes, workers, restreaming) splits so. */
void part_run_fit(struct parsa_partu_opts *pu, const struct part_dataset *ds);

/* Run the job.  r must be initialised; it is filled on success. */
int part_run(const struct part_dataset *ds, const struct part_run_opts *o,
	     struct part_result *r, struct parsa_err *err);

/* r->k = k and zeroed r->part (n_rows) and r->owner (n_cols) for ds
 * (r's old content released).  0 or PARSA_ENOMEM. */
int part_result_alloc(struct part_result *r, const struct part_dataset *ds,
		      uint32_t k, struct parsa_err *err);

/*
 * The stages of part_run after partition U: N(U_i), the M_max refinement
 * (Parsa), Algorithm 11, then part_run_metrics.  r->k and r->part are set
 * (r from part_result_alloc); fills r->owner, the metrics and timings.
 * Used by part_run and by the parallel driver (part_parallel.h).
 */
int part_run_finish(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err);

/*
 * One level of a two-level run (part_levels.h): partition U of ds at
 * o->pu.k (o->method is Parsa; init_S NULL), the refinement phases and
 * Algorithm 11, as part_run without the metrics, into r (from
 * part_result_alloc with o->pu.k).  A time limit counts from start
 * (parsa_stop_clock time).
 */
int part_run_place(const struct part_dataset *ds,
		   const struct part_run_opts *o, double start,
		   struct part_result *r, struct parsa_err *err);

/* Algorithm 11 with its sweeps (and param_imbalance) alone on r->part
 * (r->k parts), into r->owner; its seconds added to r->t_partition_v.
 * Above k=64 without param_imbalance on the users' lists
 * (parsa_users_build), the same owners as on the k-bit sets. */
int part_run_owners(const struct part_dataset *ds,
		    const struct part_run_opts *o, struct part_result *r,
		    struct parsa_err *err);

/* The slices of Algorithm 11 for n_feat features: o->v_slices, or auto
 * (0): PARSA_PARTV_SLICES from PARSA_PARTV_SLICE_MIN_FEAT features, else
 * 1 (the serial algorithm: small inputs keep its placements). */
uint32_t part_run_v_slices(const struct part_run_opts *o, uint32_t n_feat);

/* Metrics of r->part/r->owner and the random baseline (part of part_run;
 * also used by `parsa eval`).  r->k, part, owner must be set.  The
 * placement's metrics and the `trials` random trials are independent
 * tasks on up to `threads` threads (part_pool.h; 0 = the CPUs this process
 * may use); the result does not depend on the number of threads.
 * progress (may be NULL): (tasks done, 1 + trials) as each task ends, one
 * call at a time (part_run_opts.metrics_progress). */
int part_run_metrics(const struct part_dataset *ds, uint64_t seed,
		     uint32_t trials, uint32_t threads,
		     parsa_progress_fn progress, void *progress_arg,
		     struct part_result *r, struct parsa_err *err);

int part_objective_parse(const char *s, enum part_objective *ob);
const char *part_objective_name(enum part_objective ob);
int part_comm_parse(const char *s, enum part_comm *c);
const char *part_comm_name(enum part_comm c);

/* A cap's text form: "N" (absolute, a number >= 1), "Fx" (a factor >= 1
 * of the step-1 result) or "inf"; 0 or -1.  part_cap_text writes the
 * canonical form ("" for none). */
int part_cap_parse(const char *s, struct part_cap *c);
void part_cap_text(const struct part_cap *c, char *buf, size_t len);

int part_method_parse(const char *s, enum part_method *m);
const char *part_method_name(enum part_method m);
int part_rule_parse(const char *s, enum parsa_rule *r);
const char *part_rule_name(enum parsa_rule r);

/*
 * Neighbor sets for incremental partitioning: S over ds's features with
 * bit (v, i) set when feature id feat_id[v] is used by part i in the
 * earlier dataset old (placement old_part).  S initialised by the caller.
 */
int part_init_from_placement(const struct part_dataset *ds,
			     const struct part_dataset *old,
			     const uint32_t *old_part, struct parsa_nbrset *S,
			     struct parsa_err *err);

#endif /* PART_RUN_H */
