/*
 * part_opts: the option table and what is made from it (see part_opts.h).
 *
 * The table first, then the value codecs every surface shares (text from
 * the command line or a JSON member in, JSON or text out), then the
 * surfaces: argv, --help, the HTTP job's JSON, the report's params and the
 * schema docs/openapi.yaml is checked against.
 */
#include "part_opts.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_partu.h"
#include "parsa_partv.h"
#include "part_cli.h"
#include "part_lanes.h"
#include "part_levels.h"
#include "part_pool.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- enum codecs ---- */

/* NAME_in / NAME_out: an enum's parse and name functions over int (how
 * the table stores enums). */
#define ENUM_CODEC(NAME, TYPE, PARSE, TONAME)                               \
	static int NAME##_in(const char *s, int *v)                         \
	{                                                                   \
		TYPE x;                                                     \
									    \
		if (PARSE(s, &x))                                           \
			return -1;                                          \
		*v = (int)x;                                                \
		return 0;                                                   \
	}                                                                   \
	static const char *NAME##_out(int v)                                \
	{                                                                   \
		return TONAME((TYPE)v);                                     \
	}

ENUM_CODEC(method, enum part_method, part_method_parse, part_method_name)
ENUM_CODEC(rule, enum parsa_rule, part_rule_parse, part_rule_name)
ENUM_CODEC(quality, enum part_quality, part_quality_parse, part_quality_name)
ENUM_CODEC(objective, enum part_objective, part_objective_parse,
	   part_objective_name)
ENUM_CODEC(comm, enum part_comm, part_comm_parse, part_comm_name)
ENUM_CODEC(format, enum part_format, part_format_parse, part_format_name)
ENUM_CODEC(graph, enum part_graph_mode, part_graph_mode_parse,
	   part_graph_mode_name)

/* --quality: the preset's values, before the options given explicitly. */
static int quality_set(struct part_opts *o, const char *s)
{
	(void)s;
	part_quality_apply(&o->run, o->run.quality);
	return 0;
}

/* ---- derived report values ---- */

static json_t *rep_blocks(const struct part_run_opts *o,
			  const struct part_opts_facts *f)
{
	struct parsa_partu_opts pu = o->pu;

	/* two levels: level 1's blocks (k1 parts; level 2's groups are
	 * smaller) */
	if (part_levels_k1(o) > 1)
		pu.k = part_levels_k1(o);
	pu.fit_bytes = f->fit_bytes;
	return json_integer(f->blocks ? (json_int_t)f->blocks
			    : parsa_partu_blocks(&pu, (uint32_t)f->examples));
}

static json_t *rep_threads(const struct part_run_opts *o,
			   const struct part_opts_facts *f)
{
	(void)f;
	return json_integer(o->threads ? o->threads : part_pool_cpus());
}

static json_t *rep_lanes(const struct part_run_opts *o,
			 const struct part_opts_facts *f)
{
	uint32_t b = f->blocks ? f->blocks
			       : parsa_partu_blocks(&o->pu, (uint32_t)f->examples);

	return json_integer(part_lanes_count(o->lanes, b, o->pu.init_blocks));
}

static json_t *rep_v_slices(const struct part_run_opts *o,
			    const struct part_opts_facts *f)
{
	return json_integer(part_run_v_slices(o, (uint32_t)f->features));
}

static json_t *rep_levels(const struct part_run_opts *o,
			  const struct part_opts_facts *f)
{
	(void)f;
	return json_integer(part_levels_k1(o) > 1 ? 2 : 1);
}

static json_t *rep_incremental(const struct part_run_opts *o,
			       const struct part_opts_facts *f)
{
	(void)f;
	return json_boolean(o->init_S != NULL);
}

static json_t *rep_block_imbalance(const struct part_run_opts *o,
				   const struct part_opts_facts *f)
{
	(void)f;
	if (isinf(o->pu.block_imbalance))
		return json_string("off");
	return json_real(o->pu.block_imbalance > 0 ? o->pu.block_imbalance
						   : o->pu.imbalance);
}

/* ---- the table ---- */

#define AT(field) offsetof(struct part_opts, field), \
	sizeof(((struct part_opts *)0)->field)
#define P PART_OPT_PARTITION
#define E PART_OPT_EVAL
#define H PART_OPT_HTTP

const struct part_opt part_opts_table[] = {
	/* input */
	{.name = "format", .where = P | E, .type = PART_OPT_ENUM,
	 AT(read.format), .choices = "libsvm, snap, pairs, auto",
	 .enum_parse = format_in, .enum_name = format_out,
	 .group = "input", .arg = "F",
	 .help = "libsvm | snap | pairs | auto (default: auto, by\n"
		 "file name then content); .gz is read transparently"},
	{.name = "graph", .where = P | E, .type = PART_OPT_ENUM,
	 AT(read.graph), .choices = "adjacency, edges",
	 .enum_parse = graph_in, .enum_name = graph_out, .arg = "MODE",
	 .help = "for snap: adjacency (each vertex an example, its\n"
		 "neighbours its features; default) | edges (each\n"
		 "edge an example with its two endpoints)"},
	/* method */
	{.name = "parts", .short_name = 'k', .key = "k", .where = P | E | H,
	 .flags = PART_OPT_JOB, .type = PART_OPT_UINT, AT(run.pu.k),
	 .lo = 1, .hi = 65536, .group = "method", .arg = "K",
	 .help = "number of parts (machines), 1..65536 (required;\n"
		 "eval: default 1 + the largest part id)"},
	{.name = "method", .key = "method", .where = P | H,
	 .flags = PART_OPT_JOB, .type = PART_OPT_ENUM, AT(run.method),
	 .choices = "parsa, random, metis, greedy", .enum_parse = method_in,
	 .enum_name = method_out, .arg = "M",
	 .help = "parsa (default) | random | metis | greedy"},
	{.name = "quality", .key = "quality", .where = P | H,
	 .flags = PART_OPT_PRESET | PART_OPT_JOB, .type = PART_OPT_ENUM,
	 AT(run.quality), .choices = "fast, default, best",
	 .enum_parse = quality_in, .enum_name = quality_out,
	 .set = quality_set, .arg = "Q", .report_when = PART_REP_PARSA,
	 .help = "Parsa: fast | default | best: presets of the\n"
		 "refinement options below (default: {});\n"
		 "options given explicitly override the preset"},
	{.name = "blocks", .key = "blocks", .where = P | H,
	 .type = PART_OPT_UINT, AT(run.pu.blocks), .lo = 1, .hi = UINT32_MAX,
	 .arg = "B", .report_when = PART_REP_PARSA, .report = rep_blocks,
	 .help = "Parsa: random blocks partitioned in turn (default:\n"
		 "auto = max(" STR(PARSA_AUTO_MIN_BLOCKS) ", ceil(|U| / R)), R = "
		 STR(PARSA_AUTO_BLOCK_ROWS) ", or fewer\n"
		 "rows (at least " STR(PARSA_FIT_MIN_ROWS) ") so a block's k cost lists\n"
		 "stay within 1/" STR(PARSA_FIT_SHARE) " of the dataset's CSR, from\n"
		 "32 MiB of CSR)"},
	{.name = "init-blocks", .key = "init_blocks", .where = P | H,
	 .type = PART_OPT_UINT, AT(run.pu.init_blocks), .lo = 0,
	 .hi = UINT32_MAX, .arg = "A", .report_when = PART_REP_PARSA,
	 .help = "Parsa: warm-up blocks, individual init (default {})"},
	{.name = "rule", .key = "rule", .where = P | H, .flags = PART_OPT_JOB,
	 .type = PART_OPT_ENUM, AT(run.pu.rule),
	 .choices = "min-s, round-robin", .enum_parse = rule_in,
	 .enum_name = rule_out, .arg = "R", .report_when = PART_REP_PARSA,
	 .help = "Parsa: min-s (thesis: smallest |S_i| picks next)\n"
		 "| round-robin (default {})"},
	{.name = "imbalance", .key = "imbalance", .where = P | H,
	 .flags = PART_OPT_JOB, .type = PART_OPT_NUM, AT(run.pu.imbalance),
	 .dlo = 1.0, .dhi = 1e6, .arg = "X", .report_when = PART_REP_ALWAYS,
	 .help = "max |U_i| / ceil(|U|/k), >= 1 (default {})"},
	{.name = "block-imbalance", .key = "block_imbalance", .where = P,
	 .type = PART_OPT_NUM, AT(run.pu.block_imbalance), .dlo = 1.0,
	 .dhi = 1e6, .words = "off|inf", .special = INFINITY, .arg = "X|off",
	 .report_when = PART_REP_PARSA, .report = rep_block_imbalance,
	 .help = "Parsa: also cap each part within each\n"
		 "block at ceil(X * block size / k) (default:\n"
		 "= --imbalance)"},
	{.name = "refine", .key = "refine_rounds", .where = P,
	 .type = PART_OPT_UINT, AT(run.refine_rounds), .lo = 0, .hi = 1000000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: rounds of the M_max refinement, moves out\n"
		 "of the largest part; 0 = off (default {})"},
	{.name = "refine-passes", .key = "refine_passes", .where = P,
	 .type = PART_OPT_UINT, AT(run.refine_passes), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: sweeps of the connectivity (T_sum)\n"
		 "refinement; 0 = off (default {})"},
	{.name = "pfanout-passes", .key = "refine_ppasses", .where = P,
	 .type = PART_OPT_UINT, AT(run.refine_ppasses), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: p-fanout sweeps before the T_sum\n"
		 "refinement's exact ones (default {})"},
	{.name = "fm-passes", .key = "fm_passes", .where = P,
	 .type = PART_OPT_UINT, AT(run.fm_passes), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: k-way FM passes (negative-gain moves with\n"
		 "rollback) after those sweeps and at every level of\n"
		 "the multilevel partition; 0 = off (default {})"},
	{.name = "flow-passes", .key = "flow_passes", .where = P | H,
	 .type = PART_OPT_UINT, AT(run.flow_passes), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: rounds of the two-way flow refinement\n"
		 "(max-flow min-cut on pairs of parts) after the\n"
		 "refinement sweeps and FM; 0 = off (default {})"},
	{.name = "ml-rb-starts", .key = "ml_rb_starts", .where = P,
	 .type = PART_OPT_UINT, AT(run.ml_rb_starts), .lo = 0, .hi = 64,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: the multilevel candidate also tries recursive\n"
		 "bisection with N multilevel starts per bisection,\n"
		 "kept where T_sum ends lower; 0 = off (default {})"},
	{.name = "restream", .key = "restream", .where = P,
	 .type = PART_OPT_UINT, AT(run.restream), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: restreaming passes, Algorithm 13 again from\n"
		 "the previous result's neighbor sets (default {})"},
	{.name = "ml-levels", .key = "ml_levels", .where = P,
	 .type = PART_OPT_UINT, AT(run.ml_levels), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: coarsening levels of a multilevel V-cycle\n"
		 "around the T_sum refinement; 0 = off (default {})"},
	{.name = "ml-cycles", .key = "ml_cycles", .where = P,
	 .type = PART_OPT_UINT, AT(run.ml_cycles), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: V-cycles of --ml-levels, each seeded anew,\n"
		 "while one gains 0.1%; 0 counts as 1 (default {})"},
	{.name = "ml-chains", .key = "ml_chains", .where = P,
	 .type = PART_OPT_UINT, AT(run.ml_chains), .lo = 0, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_PARSA,
	 .help = "Parsa: independent chains of those V-cycles from\n"
		 "the same start, the best kept; 0 counts as 1\n"
		 "(default {})"},
	{.name = "multilevel", .key = "multilevel", .where = P,
	 .type = PART_OPT_ONOFF, AT(run.ml_scratch), .arg = "on|off",
	 .report_when = PART_REP_PARSA,
	 .help = "Parsa: also compute a multilevel partition\n"
		 "(Algorithm 13 or recursive bisection on the\n"
		 "coarsest graph) and keep it when it is better\n"
		 "(default {})"},
	{.name = "ml-communities", .key = "ml_communities", .where = P,
	 .type = PART_OPT_ENUM, AT(run.ml_communities),
	 .choices = "auto, on, deep, off", .enum_parse = comm_in,
	 .enum_name = comm_out, .arg = "C", .report_when = PART_REP_PARSA,
	 .help = "Parsa: the multilevel partition also tries a\n"
		 "deeper start (down to 128 clusters a part), kept\n"
		 "when better; on = its coarsening joins only\n"
		 "examples of one community (Louvain on the star\n"
		 "expansion), deep = unrestricted, off = none; auto\n"
		 "= deep with --objective tsum up to 16M nonzeros,\n"
		 "else off (default {})"},
	{.name = "threads", .key = "threads", .where = P | H | E,
	 .type = PART_OPT_UINT, AT(run.threads), .lo = 1,
	 .hi = PART_POOL_MAX_THREADS, .arg = "N",
	 .report_when = PART_REP_PARSA, .report = rep_threads,
	 .help = "threads for reading LIBSVM files, Algorithm 13\n"
		 "(lanes; in one lane each block's costs and the\n"
		 "next block's extraction), the sweeps, Algorithm\n"
		 "11's slices, the independent chains of V-cycles\n"
		 "(best), the metrics and the random baseline's\n"
		 "trials; the result is the same for every N\n"
		 "(default: the CPUs this process may use)"},
	{.name = "lanes", .key = "lanes", .where = P | H,
	 .type = PART_OPT_UINT, AT(run.lanes), .lo = 1, .hi = PART_LANES_MAX,
	 .arg = "L", .report_when = PART_REP_PARSA, .report = rep_lanes,
	 .help = "Parsa: Algorithm 13 in rounds of L blocks run side\n"
		 "by side on the threads, each against the sets at\n"
		 "the round's start; the result depends on L, not\n"
		 "on --threads (default: auto = the largest of 2,\n"
		 "4, .., " STR(PART_LANES_AUTO_MAX) " with at least " STR(PART_LANES_MIN_BLOCKS_PER_LANE) " blocks per lane, else\n"
		 "1, the sequential run; not with --init-blocks;\n"
		 "--workers runs use their own schedule)"},
	{.name = "v-slices", .key = "v_slices", .where = P,
	 .type = PART_OPT_UINT, AT(run.v_slices), .lo = 1,
	 .hi = PARSA_PARTV_SLICES_MAX, .arg = "S",
	 .report_when = PART_REP_NOT_RANDOM, .report = rep_v_slices,
	 .help = "Algorithm 11 in S slices of the features, each\n"
		 "step a task per slice on the threads; the result\n"
		 "depends on S, not on --threads (default: auto =\n"
		 STR(PARSA_PARTV_SLICES) " from " STR(PARSA_PARTV_SLICE_MIN_FEAT) " features, else 1, the\n"
		 "serial algorithm; --stream and --workers runs:\n"
		 "each server's range in turn)"},
	{.name = "levels", .key = "levels", .where = P | H,
	 .type = PART_OPT_UINT, AT(run.levels), .lo = 1, .hi = 2,
	 .arg = "L", .report_when = PART_REP_PARSA, .report = rep_levels,
	 .help = "Parsa: 2 = two levels for k = k1 x k2 (k1 the\n"
		 "largest divisor of k below it and at most " STR(PART_LEVELS_K1) "\n"
		 "or sqrt(k)): k1 groups, then each group's examples\n"
		 "into k2 parts, Algorithm 11 on the whole; the\n"
		 "memory of k1 and k2 parts, not k (default: auto =\n"
		 "2 above k=" STR(PART_LEVELS_AUTO_K) " unless k is prime, else 1; not\n"
		 "with --workers or --init-from)"},
	{.name = "time-limit", .key = "time_limit", .where = P | H,
	 .flags = PART_OPT_NULL0, .type = PART_OPT_NUM, AT(run.time_limit),
	 .dlo = 1e-6, .dhi = 1e9, .what = "must be a number of seconds > 0",
	 .arg = "S", .report_when = PART_REP_PARSA,
	 .help = "Parsa: the refinement phases stop at their next\n"
		 "checkpoint once S seconds of partitioning have\n"
		 "passed, keeping the best placement found (never\n"
		 "worse than Algorithm 13's); the run is then not\n"
		 "reproducible (default: none)"},
	{.name = "guard-slack", .key = "guard_slack", .where = P | H,
	 .type = PART_OPT_NUM, AT(run.guard_slack), .dlo = 1.0, .dhi = 1e6,
	 .words = "inf", .special = INFINITY, .arg = "X",
	 .report_when = PART_REP_PARSA,
	 .help = "Parsa: the refinement phases may end with T_max\n"
		 "and M_max up to X times Algorithm 13's (after the\n"
		 "M_max refinement): memory and peak traffic traded\n"
		 "for total traffic (T_sum); inf = no bound but\n"
		 "the balance cap (default {}: never worse)"},
	{.name = "objective", .key = "objective", .where = P | H,
	 .type = PART_OPT_ENUM, AT(run.objective), .choices = "default, tsum, tmax",
	 .enum_parse = objective_in, .enum_name = objective_out,
	 .arg = "O", .report_when = PART_REP_PARSA,
	 .help = "Parsa: what the refinement phases minimize:\n"
		 "default (T_sum, never raising M_max and T_max\n"
		 "above Algorithm 13's, times --guard-slack) | tsum\n"
		 "(T_sum first; M_max and T_max bounded only by\n"
		 "--max-memory / --max-traffic) | tmax (T_max\n"
		 "first, then T_sum: default's phases, then a\n"
		 "search that moves examples off the busiest\n"
		 "machine and owners between users; M_max kept\n"
		 "under --max-memory, else Algorithm 13's)\n"
		 "(default {})"},
	{.name = "max-memory", .key = "max_memory", .where = P | H,
	 .type = PART_OPT_CAP, AT(run.max_memory), .arg = "N|Fx|inf",
	 .what = "must be a number >= 1, a factor such as 1.2x, or inf",
	 .report_when = PART_REP_PARSA,
	 .help = "Parsa: cap of the refinement phases on M_max: N\n"
		 "features, or F times Algorithm 13's M_max (e.g.\n"
		 "1.1x); inf = none; a cap below Algorithm 13's is\n"
		 "held at that (default: the objective's)"},
	{.name = "max-traffic", .key = "max_traffic", .where = P | H,
	 .type = PART_OPT_CAP, AT(run.max_traffic), .arg = "N|Fx|inf",
	 .what = "must be a number >= 1, a factor such as 1.2x, or inf",
	 .report_when = PART_REP_PARSA,
	 .help = "Parsa: the same cap on T_max (default: the\n"
		 "objective's)"},
	{.name = "max-tsum", .key = "max_tsum", .where = P | H,
	 .type = PART_OPT_CAP, AT(run.max_tsum), .arg = "N|Fx|inf",
	 .what = "must be a number >= 1, a factor such as 1.05x, or inf",
	 .report_when = PART_REP_PARSA,
	 .help = "Parsa, --objective tmax: its search never raises\n"
		 "T_sum above N, or F times the T_sum it starts\n"
		 "from (each candidate's refinement result); inf =\n"
		 "none (default: none)"},
	{.name = "param-imbalance", .key = "param_imbalance", .where = P,
	 .flags = PART_OPT_ZERO, .type = PART_OPT_NUM,
	 AT(run.param_imbalance), .dlo = 1.0, .dhi = 1e6, .arg = "X",
	 .what = "must be 0 or a number >= 1",
	 .report_when = PART_REP_NOT_RANDOM,
	 .help = "cap the parameters per server at\n"
		 "X * ceil(|V_used| / k); 0 = no cap (default {})"},
	{.name = "sweeps", .key = "sweeps", .where = P, .type = PART_OPT_UINT,
	 AT(run.sweeps), .lo = 0, .hi = 1000, .arg = "N",
	 .report_when = PART_REP_NOT_RANDOM,
	 .help = "improving sweeps of Algorithm 11 (default {})"},
	{.name = "seed", .key = "seed", .where = P | E | H,
	 .flags = PART_OPT_JOB, .type = PART_OPT_UINT, AT(run.pu.seed),
	 .lo = 0, .hi = UINT64_MAX, .http_hi = INT64_MAX, .arg = "S",
	 .report_when = PART_REP_ALWAYS,
	 .help = "seed of every random choice (default {})"},
	{.name = "init-from", .key = "incremental", .where = P,
	 .type = PART_OPT_STR, AT(init_from), .arg = "PREFIX",
	 .report_when = PART_REP_PARSA, .report = rep_incremental,
	 .help = "with --init-data OLD: incremental: start from the\n"
		 "neighbor sets of an earlier placement PREFIX of\n"
		 "dataset OLD"},
	{.name = "init-data", .where = P, .type = PART_OPT_STR,
	 AT(init_data), .arg = "OLD",
	 .help = "the dataset of --init-from's placement"},
	/* parallel */
	{.name = "workers", .key = "workers", .where = P | H,
	 .flags = PART_OPT_PAR, .type = PART_OPT_UINT, AT(par.workers),
	 .lo = 1, .hi = 4096, .arg = "W",
	 .group = "parallel (Parsa on the parameter server; see README)",
	 .help = "W worker threads (plus servers) partition the\n"
		 "blocks in parallel; without --workers, --tau or\n"
		 "--mpi the run is sequential (with --mpi: default\n"
		 "one worker per rank)"},
	{.name = "servers", .where = P, .flags = PART_OPT_PAR,
	 .type = PART_OPT_UINT, AT(par.servers), .lo = 1, .hi = 4096,
	 .arg = "S",
	 .help = "servers holding the neighbor sets (default: W, or\n"
		 "one per rank)"},
	{.name = "tau", .key = "tau", .where = P | H, .flags = PART_OPT_PAR,
	 .type = PART_OPT_UINT, AT(par.tau), .lo = 0, .hi = 1000000,
	 .words = "inf", .special = PART_PAR_TAU_INF, .arg = "T|inf",
	 .help = "bounded delay: a worker runs at most T blocks ahead\n"
		 "of its unacknowledged pushes; T >= 1 also lets it\n"
		 "pull the next block while it partitions one\n"
		 "(default {}; with one worker every T equals the\n"
		 "sequential run exactly)"},
	{.name = "consistency", .where = P, .flags = PART_OPT_PAR,
	 .type = PART_OPT_STR, AT(par.consistency), .arg = "M",
	 .help = "consistency model of the parameter server: tau:T\n"
		 "(= --tau T), bsp or ssp:S (each worker's blocks are\n"
		 "clocks: a block's pulls hold every worker's pushes\n"
		 "of blocks before its own - S; S = 0 is bsp)"},
	{.name = "init-sample", .where = P, .flags = PART_OPT_PAR,
	 .type = PART_OPT_NUM, AT(par.init_sample), .dlo = 0.0, .dhi = 1.0,
	 .what = "must be a fraction in [0,1]", .arg = "F",
	 .help = "global initialization: partition a random F of\n"
		 "the examples first, its neighbor sets start every\n"
		 "worker (default with W > 1: " STR(PART_PAR_SAMPLE_ROWS)
		 " examples, within\n" STR(PART_PAR_MIN_SAMPLE) ".."
		 STR(PART_PAR_AUTO_SAMPLE) " of them; 0 with one worker or\n"
		 "--init-blocks)"},
	{.name = "syncs", .key = "syncs", .where = P | H,
	 .flags = PART_OPT_PAR, .type = PART_OPT_UINT, AT(par.syncs), .lo = 0,
	 .hi = PART_PAR_MAX_SYNCS, .arg = "N",
	 .help = "mid-block syncs: a worker pushes its new bits and\n"
		 "pulls the others' N times within each block, so\n"
		 "its cost lists follow the other workers (default:\n"
		 "enough that a step misses at most 1/"
		 STR(PART_PAR_SYNC_SPAN) " of the\n"
		 "data, (W - 1) / (blocks (N + 1)), up to "
		 STR(PART_PAR_AUTO_SYNCS_MAX) "; 0\nwith one worker)"},
	{.name = "mpi", .where = P, .flags = PART_OPT_PAR,
	 .type = PART_OPT_FLAG, AT(par.mpi),
	 .help = "run over MPI: mpirun -np N parsa partition ... --mpi\n"
		 "(every rank reads DATA; rank 0 writes the outputs)"},
	{.name = "mpi-timeout", .where = P, .type = PART_OPT_NUM,
	 AT(par.timeout_s), .dlo = 0.1, .dhi = 1e6,
	 .what = "must be a number of seconds >= 0.1", .arg = "S",
	 .help = "with --mpi: the longest any rank waits for another\n"
		 "(start-up, messages, shutdown); then every rank\n"
		 "stops with an error naming the silent rank\n"
		 "(default 60)"},
	/* streaming */
	{.name = "stream", .where = P, .flags = PART_OPT_STREAM,
	 .type = PART_OPT_FLAG, AT(stream),
	 .group = "streaming (LIBSVM; blocks read by the workers, nothing "
		  "loads DATA)",
	 .help = "each worker reads its blocks of consecutive lines\n"
		 "from DATA itself and holds one block at a time;\n"
		 "neighbor sets, partition V and the metrics live on\n"
		 "the servers (with --workers/--servers/--tau/--mpi)"},
	{.name = "mem-limit", .where = P, .flags = PART_OPT_STREAM,
	 .type = PART_OPT_SIZE, AT(mem_limit), .lo = 65536,
	 .what = "must be a size >= 64K (e.g. 512M, 2G)", .arg = "SIZE",
	 .help = "bytes of block data per worker (e.g. 64M): sets the\n"
		 "block size from the first lines (implies --stream)"},
	{.name = "block-rows", .where = P, .flags = PART_OPT_STREAM,
	 .type = PART_OPT_UINT, AT(block_rows), .lo = 1, .hi = UINT32_MAX,
	 .arg = "N",
	 .help = "examples per block (implies --stream; default\n"
		 "32768 without --mem-limit)"},
	/* eval */
	{.name = "placement", .where = E, .type = PART_OPT_STR,
	 AT(placement), .arg = "PREFIX", .group = "evaluation",
	 .help = "the placement to evaluate: PREFIX.examples and\n"
		 "PREFIX.features (required)"},
	{.name = "report", .where = E, .type = PART_OPT_STR, AT(report),
	 .arg = "FILE", .help = "also write the JSON report to FILE"},
	/* output */
	{.name = "out", .where = P, .type = PART_OPT_STR, AT(out),
	 .arg = "PREFIX", .group = "output",
	 .help = "output prefix (default: DATA's name + .k<K>)"},
	{.name = "shards", .where = P, .type = PART_OPT_STR, AT(shards),
	 .arg = "DIR",
	 .help = "also write DIR/part-<i>.libsvm and\n"
		 "DIR/features-<i>.txt for every part i"},
	{.name = "examples-ids", .where = P, .type = PART_OPT_FLAG,
	 AT(examples_ids), .group = "output",
	 .help = "also write PREFIX.example_ids, 'ID PART' per example\n"
		 "with the input's own id (pairs: the user; SNAP: the\n"
		 "vertex, or 'A B PART' per edge with --graph edges)"},
	{.name = "random-trials", .key = "random_trials", .where = P | E | H,
	 .type = PART_OPT_UINT, AT(run.random_trials), .lo = 1, .hi = 1000,
	 .arg = "N", .report_when = PART_REP_ALWAYS,
	 .help = "seeds averaged for the random baseline (default {})"},
	{.name = "json", .where = P | E, .type = PART_OPT_FLAG, AT(json),
	 .help = "print the JSON report to stdout instead of the summary"},
	{.name = "per-part", .where = P | E, .type = PART_OPT_FLAG, AT(per_part),
	 .help = "the summary also lists every part: U_i, nnz_i, M_i, V_i\n"
		 "(parameters owned), T_i = in_i + out_i (pulled from /\n"
		 "served to other machines), with max and mean rows"},
	{.name = "quiet", .short_name = 'q', .where = P | E,
	 .type = PART_OPT_FLAG, AT(quiet),
	 .help = "no summary, no progress bar"},
};

#undef P
#undef E
#undef H

const size_t part_opts_count = sizeof(part_opts_table) / sizeof(*part_opts_table);

_Static_assert(sizeof(part_opts_table) / sizeof(*part_opts_table) <= PART_OPTS_MAX,
	       "PART_OPTS_MAX too small");
_Static_assert(offsetof(struct part_opts, run) == 0,
	       "part_opts_report reads a bare struct part_run_opts");
_Static_assert(sizeof(enum part_method) == sizeof(int) &&
	       sizeof(enum parsa_rule) == sizeof(int) &&
	       sizeof(enum part_quality) == sizeof(int) &&
	       sizeof(enum part_format) == sizeof(int) &&
	       sizeof(enum part_graph_mode) == sizeof(int),
	       "ENUM options are stored as int");

const struct part_opt *part_opts_find(const char *name, int json)
{
	for (size_t i = 0; i < part_opts_count; i++) {
		const char *n = json ? part_opts_table[i].key
				     : part_opts_table[i].name;

		if (n && strcmp(n, name) == 0)
			return &part_opts_table[i];
	}
	return NULL;
}

static size_t index_of(const struct part_opt *e)
{
	return (size_t)(e - part_opts_table);
}

void part_opts_default(struct part_opts *o)
{
	memset(o, 0, sizeof(*o));
	part_run_opts_default(&o->run);
	part_par_opts_default(&o->par);
	o->read.format = PART_FMT_AUTO;
}

int part_opts_given(const struct part_opts *o, const char *key)
{
	const struct part_opt *e = part_opts_find(key, 1);

	return e && o->given[index_of(e)];
}

/* ---- values ---- */

static void *field(struct part_opts *o, const struct part_opt *e)
{
	return (char *)o + e->off;
}

static const void *cfield(const void *base, const struct part_opt *e)
{
	return (const char *)base + e->off;
}

static void put_int(struct part_opts *o, const struct part_opt *e,
		    int64_t v)
{
	if (e->size == sizeof(uint64_t)) {
		uint64_t u = (uint64_t)v;

		memcpy(field(o, e), &u, sizeof(u));
	} else {
		int32_t i = (int32_t)v; /* uint32_t and int alike */

		memcpy(field(o, e), &i, sizeof(i));
	}
}

static int64_t get_int(const void *base, const struct part_opt *e)
{
	if (e->size == sizeof(uint64_t)) {
		uint64_t u;

		memcpy(&u, cfield(base, e), sizeof(u));
		return (int64_t)u;
	}
	{
		int32_t i;
		uint32_t u;

		/* an int (tau, syncs: negative = automatic or inf) unless
		 * the range needs all of a uint32_t */
		memcpy(&i, cfield(base, e), sizeof(i));
		memcpy(&u, cfield(base, e), sizeof(u));
		return i < 0 && e->hi > INT32_MAX ? (int64_t)u : (int64_t)i;
	}
}

static uint64_t get_u64(const void *base, const struct part_opt *e)
{
	if (e->size == sizeof(uint64_t)) {
		uint64_t u;

		memcpy(&u, cfield(base, e), sizeof(u));
		return u;
	}
	return (uint64_t)get_int(base, e);
}

static double get_num(const void *base, const struct part_opt *e)
{
	double d;

	memcpy(&d, cfield(base, e), sizeof(d));
	return d;
}

/* 1 when s is one of e's words ('|'-separated). */
static int is_word(const struct part_opt *e, const char *s, int first_only)
{
	const char *w = e->words;
	size_t n = strlen(s);

	while (w && *w) {
		const char *bar = strchr(w, '|');
		size_t len = bar ? (size_t)(bar - w) : strlen(w);

		if (len == n && strncmp(w, s, n) == 0)
			return 1;
		if (first_only || !bar)
			break;
		w = bar + 1;
	}
	return 0;
}

/* The first (canonical) word into buf. */
static const char *first_word(const struct part_opt *e, char *buf,
			      size_t len)
{
	const char *bar = strchr(e->words, '|');
	size_t n = bar ? (size_t)(bar - e->words) : strlen(e->words);

	snprintf(buf, len, "%.*s", (int)n, e->words);
	return buf;
}

/* The integer range over this surface. */
static uint64_t hi_of(const struct part_opt *e, int json)
{
	return json && e->http_hi ? e->http_hi : e->hi;
}

/* Store the value spelled s (argv or a JSON string); 0 or -1. */
static int set_text(struct part_opts *o, const struct part_opt *e,
		    const char *s, int json)
{
	uint64_t u;
	double d;
	int v;

	switch (e->type) {
	case PART_OPT_UINT:
		if (is_word(e, s, json)) {
			put_int(o, e, (int64_t)e->special);
			return 0;
		}
		if ((e->flags & PART_OPT_ZERO) && strcmp(s, "0") == 0)
			u = 0;
		else if (part_cli_u64(s, e->lo, hi_of(e, json), &u))
			return -1;
		put_int(o, e, (int64_t)u);
		return 0;
	case PART_OPT_NUM:
		if (is_word(e, s, json))
			d = e->special;
		else if ((e->flags & PART_OPT_ZERO) && strcmp(s, "0") == 0)
			d = 0;
		else if (part_cli_dbl(s, e->dlo, e->dhi, &d))
			return -1;
		memcpy(field(o, e), &d, sizeof(d));
		return 0;
	case PART_OPT_ENUM:
		if (e->enum_parse(s, &v))
			return -1;
		memcpy(field(o, e), &v, sizeof(v));
		return 0;
	case PART_OPT_ONOFF:
		if (strcmp(s, "on") != 0 && strcmp(s, "off") != 0)
			return -1;
		v = strcmp(s, "on") == 0;
		memcpy(field(o, e), &v, sizeof(v));
		return 0;
	case PART_OPT_FLAG:
		v = 1;
		memcpy(field(o, e), &v, sizeof(v));
		return 0;
	case PART_OPT_STR:
		memcpy(field(o, e), &s, sizeof(s));
		return 0;
	case PART_OPT_SIZE:
		if (part_cli_size(s, &u) || u < e->lo)
			return -1;
		memcpy(field(o, e), &u, sizeof(u));
		return 0;
	case PART_OPT_CAP: {
		struct part_cap c;

		if (part_cap_parse(s, &c))
			return -1;
		memcpy(field(o, e), &c, sizeof(c));
		return 0;
	}
	}
	return -1;
}

/* Record that e was given, with its side effects. */
static int mark_given(struct part_opts *o, const struct part_opt *e,
		      const char *s)
{
	o->given[index_of(e)] = 1;
	if (e->flags & (PART_OPT_PAR | PART_OPT_STREAM))
		o->parallel = 1;
	if (e->flags & PART_OPT_STREAM)
		o->stream = 1;
	return e->set ? e->set(o, s) : 0;
}

/* "must be ..." of e (its own, else from its type and range). */
static void what_of(const struct part_opt *e, int json, char *buf,
		    size_t len)
{
	char w[32] = "";
	uint64_t hi = hi_of(e, json);
	int open = e->size == sizeof(uint32_t) ? hi >= UINT32_MAX
					       : hi >= (uint64_t)INT64_MAX;

	if (e->what) {
		snprintf(buf, len, "%s", e->what);
		return;
	}
	if (e->words)
		snprintf(w, sizeof(w), " or %s%s%s", json ? "\"" : "",
			 first_word(e, buf, len), json ? "\"" : "");
	switch (e->type) {
	case PART_OPT_UINT:
		if (open && e->lo == 1)
			snprintf(buf, len, "must be a positive integer%s", w);
		else if (open)
			snprintf(buf, len, "must be an integer >= %" PRIu64 "%s",
				 e->lo, w);
		else
			snprintf(buf, len, "must be an integer in %" PRIu64
				 "..%" PRIu64 "%s", e->lo, hi, w);
		return;
	case PART_OPT_NUM:
		if (e->dhi >= 1e6)
			snprintf(buf, len, "must be a number >= %g%s", e->dlo, w);
		else
			snprintf(buf, len, "must be a number in [%g, %g]%s",
				 e->dlo, e->dhi, w);
		return;
	case PART_OPT_ENUM:
		snprintf(buf, len, "must be one of %s", e->choices);
		return;
	case PART_OPT_ONOFF:
		snprintf(buf, len, "must be on or off");
		return;
	default:
		snprintf(buf, len, "is not valid");
	}
}

/* ---- the command line ---- */

static const char *cmd_name(unsigned cmd)
{
	return cmd == PART_OPT_EVAL ? "eval" : "partition";
}

static int usage_error(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "parsa: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n(run with --help for usage)\n");
	return 2;
}

/* A bad value of e on the command line. */
static int bad_arg(const struct part_opt *e, const char *arg)
{
	char what[160], disp[64];

	if (e->short_name)
		snprintf(disp, sizeof(disp), "-%c", e->short_name);
	else
		snprintf(disp, sizeof(disp), "--%s", e->name);
	if (e->type == PART_OPT_ENUM) {
		fprintf(stderr, "parsa: unknown %s '%s' (%s)\n"
			"(run with --help for usage)\n", disp, arg, e->choices);
		return 2;
	}
	what_of(e, 0, what, sizeof(what));
	fprintf(stderr, "parsa: %s %s, got '%s'\n"
		"(run with --help for usage)\n", disp, what, arg);
	return 2;
}

/* An option getopt did not know: maybe another command's. */
static int unknown_option(const char *tok, unsigned cmd)
{
	char name[64];
	const struct part_opt *e;

	if (strncmp(tok, "--", 2) == 0) {
		snprintf(name, sizeof(name), "%s", tok + 2);
		name[strcspn(name, "=")] = '\0';
		e = part_opts_find(name, 0);
		if (e && (e->where & (PART_OPT_PARTITION | PART_OPT_EVAL)) &&
		    !(e->where & cmd))
			return usage_error("%s is an option of 'parsa %s'", tok,
					   cmd_name(e->where & ~cmd));
	}
	return usage_error("unknown option '%s'%s", tok, "");
}

struct given_arg {
	const struct part_opt *e;
	const char *arg;
};

/* getopt_long's tables for the options of cmd. */
static void getopt_tables(unsigned cmd, struct option *lo, char *shorts)
{
	size_t n = 0, s = 0;

	shorts[s++] = ':';
	shorts[s++] = 'h';
	for (size_t i = 0; i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];
		int has_arg = e->type == PART_OPT_FLAG ? no_argument
						       : required_argument;

		if (!e->name || !(e->where & cmd))
			continue;
		lo[n++] = (struct option){e->name, has_arg, NULL, 256 + (int)i};
		if (e->short_name) {
			shorts[s++] = e->short_name;
			if (has_arg == required_argument)
				shorts[s++] = ':';
		}
	}
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n] = (struct option){NULL, 0, NULL, 0};
	shorts[s] = '\0';
}

static const struct part_opt *by_short(int c, unsigned cmd)
{
	for (size_t i = 0; i < part_opts_count; i++)
		if (part_opts_table[i].short_name == c &&
		    (part_opts_table[i].where & cmd))
			return &part_opts_table[i];
	return NULL;
}

/* Collect (entry, value) in argv order; -1 or an exit status. */
static int collect(int argc, char **argv, unsigned cmd,
		   struct given_arg *got, int *n, void (*help)(void))
{
	struct option lo[PART_OPTS_MAX + 2];
	char shorts[3 * PART_OPTS_MAX + 4];
	int opt;

	getopt_tables(cmd, lo, shorts);
	optind = 1;
	opterr = 0;
	*n = 0;
	while ((opt = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct part_opt *e;

		if (opt == 'h') {
			help();
			return 0;
		}
		if (opt == '?')
			return unknown_option(argv[optind - 1], cmd);
		if (opt == ':')
			return usage_error("option '%s' needs a value%s",
					   argv[optind - 1], "");
		e = opt >= 256 ? &part_opts_table[opt - 256] : by_short(opt, cmd);
		if (!e)
			return usage_error("unknown option '%s'%s",
					   argv[optind - 1], "");
		got[*n].e = e;
		got[(*n)++].arg = optarg;
	}
	return -1;
}

/* Store the collected values: the preset first, then the rest in order. */
static int apply_argv(struct part_opts *o, const struct given_arg *got,
		      int n)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			const struct part_opt *e = got[i].e;
			const char *arg = got[i].arg ? got[i].arg : "";

			if (!!(e->flags & PART_OPT_PRESET) != (pass == 0))
				continue;
			if (set_text(o, e, arg, 0) || mark_given(o, e, arg))
				return bad_arg(e, arg);
		}
	return -1;
}

int part_opts_parse_argv(int argc, char **argv, unsigned cmd,
			 struct part_opts *o, const char **data,
			 void (*help)(void))
{
	struct given_arg *got = malloc(((size_t)argc + 1) * sizeof(*got));
	int n = 0, rc;

	part_opts_default(o);
	*data = NULL;
	if (!got) {
		fprintf(stderr, "parsa: out of memory\n");
		return 1;
	}
	rc = collect(argc, argv, cmd, got, &n, help);
	if (rc < 0)
		rc = apply_argv(o, got, n);
	free(got);
	if (rc >= 0)
		return rc;
	if (optind >= argc)
		return usage_error("missing DATA file%s%s", "", "");
	if (optind + 1 < argc)
		return usage_error("unexpected argument '%s'%s",
				   argv[optind + 1], "");
	*data = argv[optind];
	return -1;
}

int part_opts_set(struct part_opts *o, unsigned cmd, const char *name,
		  const char *s, struct parsa_err *err)
{
	const struct part_opt *e = NULL;
	char what[160];

	if (name && name[0] && !name[1])
		e = by_short(name[0], cmd);
	else if (name)
		e = part_opts_find(name, 0);
	if (!e || !e->name || !(e->where & cmd))
		return parsa_fail(err, PARSA_EINVAL, "unknown option '%s'",
				  name ? name : "(null)");
	if (!s)
		s = "";
	if (set_text(o, e, s, 0) == 0 && mark_given(o, e, s) == 0)
		return 0;
	if (e->type == PART_OPT_ENUM)
		return parsa_fail(err, PARSA_EINVAL, "unknown --%s '%s' (%s)",
				  e->name, s, e->choices);
	what_of(e, 0, what, sizeof(what));
	return parsa_fail(err, PARSA_EINVAL, "--%s %s, got '%s'", e->name,
			  what, s);
}

/* ---- --help ---- */

/* The value of e in the defaults, as the help text shows it. */
static void show_default(const struct part_opts *d, const struct part_opt *e,
			 char *buf, size_t len)
{
	int v;

	switch (e->type) {
	case PART_OPT_UINT:
		if (e->words && get_int(d, e) == (int64_t)e->special)
			first_word(e, buf, len);
		else
			snprintf(buf, len, "%" PRIu64, get_u64(d, e));
		return;
	case PART_OPT_NUM:
		if (e->words && get_num(d, e) == e->special)
			first_word(e, buf, len);
		else
			snprintf(buf, len, "%g", get_num(d, e));
		return;
	case PART_OPT_ENUM:
		memcpy(&v, cfield(d, e), sizeof(v));
		snprintf(buf, len, "%s", e->enum_name(v));
		return;
	case PART_OPT_ONOFF:
		memcpy(&v, cfield(d, e), sizeof(v));
		snprintf(buf, len, "%s", v ? "on" : "off");
		return;
	case PART_OPT_CAP: {
		struct part_cap c;

		memcpy(&c, cfield(d, e), sizeof(c));
		part_cap_text(&c, buf, len);
		if (!buf[0])
			snprintf(buf, len, "none");
		return;
	}
	default:
		snprintf(buf, len, "none");
	}
}

#define HELP_COL 20

static void help_entry(FILE *f, const struct part_opts *d,
		       const struct part_opt *e)
{
	char left[64], def[64];
	const char *h = e->help;
	int col;

	if (e->short_name)
		col = snprintf(left, sizeof(left), "  -%c, --%s", e->short_name,
			       e->name);
	else
		col = snprintf(left, sizeof(left), "  --%s", e->name);
	if (e->arg)
		col += snprintf(left + col, sizeof(left) - (size_t)col, " %s",
				e->arg);
	fputs(left, f);
	fprintf(f, "%*s", col < HELP_COL - 1 ? HELP_COL - col : 2, "");
	show_default(d, e, def, sizeof(def));
	for (; *h; h++) {
		if (h[0] == '{' && h[1] == '}') {
			fputs(def, f);
			h++;
		} else if (*h == '\n') {
			fprintf(f, "\n%*s", HELP_COL, "");
		} else {
			fputc(*h, f);
		}
	}
	fputc('\n', f);
}

void part_opts_help(FILE *f, unsigned cmd)
{
	struct part_opts d;

	part_opts_default(&d);
	for (size_t i = 0; i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];

		if (e->group)
			for (size_t j = i; j < part_opts_count; j++) {
				const struct part_opt *g = &part_opts_table[j];

				if (j > i && g->group)
					break;
				if (g->name && (g->where & cmd)) {
					fprintf(f, "%s:\n", e->group);
					break;
				}
			}
		if (e->name && (e->where & cmd))
			help_entry(f, &d, e);
	}
	fprintf(f, "  -h, --help%*sthis text\n", HELP_COL - 12, "");
}

/* ---- JSON: the HTTP job ---- */

static int bad_member(const struct part_opt *e, const char *key,
		      char *fieldname, struct parsa_err *err)
{
	char what[160];

	snprintf(fieldname, 64, "%s", key);
	if (!e)
		return parsa_fail(err, PARSA_EINVAL, "'%s' is not valid", key);
	what_of(e, 1, what, sizeof(what));
	return parsa_fail(err, PARSA_EINVAL, "'%s' %s", key, what);
}

/* A JSON member's value for e as text for set_text; NULL if its JSON
 * type is wrong. */
static const char *json_text(const struct part_opt *e, json_t *v,
			     char *buf, size_t len)
{
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (e->type == PART_OPT_ENUM || e->type == PART_OPT_STR ||
		    e->type == PART_OPT_SIZE || e->type == PART_OPT_CAP)
			return s;
		return e->words && is_word(e, s, 1) ? s : NULL;
	}
	if (json_is_boolean(v) && (e->type == PART_OPT_ONOFF ||
				   e->type == PART_OPT_FLAG))
		return json_is_true(v) ? "on" : "off";
	if (json_is_integer(v) && (e->type == PART_OPT_UINT ||
				   e->type == PART_OPT_NUM ||
				   e->type == PART_OPT_SIZE ||
				   e->type == PART_OPT_CAP)) {
		if (json_integer_value(v) < 0)
			return NULL;
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		return buf;
	}
	if (json_is_real(v) && (e->type == PART_OPT_NUM ||
				e->type == PART_OPT_CAP) &&
	    isfinite(json_real_value(v))) {
		snprintf(buf, len, "%.17g", json_real_value(v));
		return buf;
	}
	return NULL;
}

static int in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

/* "'x' is not a job parameter (a, b, ...)". */
static int unknown_member(const char *key, const char *const *skip,
			  char *fieldname, struct parsa_err *err)
{
	char names[1024];
	size_t n = 0;

	names[0] = '\0';
	for (; skip && *skip; skip++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s, ", *skip);
	if (n < sizeof(names))
		part_opts_http_names(names + n, sizeof(names) - n);
	snprintf(fieldname, 64, "%s", key);
	return parsa_fail(err, PARSA_EINVAL, "'%s' is not a job parameter (%s)",
			  key, names);
}

int part_opts_from_json(json_t *obj, const char *const *skip,
			struct part_opts *o, char *fieldname,
			struct parsa_err *err)
{
	const char *key;
	json_t *val;

	part_opts_default(o);
	fieldname[0] = '\0';
	if (!json_is_object(obj)) {
		snprintf(fieldname, 64, "(body)");
		return parsa_fail(err, PARSA_EINVAL,
				  "'(body)' must be a JSON object");
	}
	json_object_foreach(obj, key, val) {
		const struct part_opt *e = part_opts_find(key, 1);

		if (!in_list(skip, key) && (!e || !(e->where & PART_OPT_HTTP)))
			return unknown_member(key, skip, fieldname, err);
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < part_opts_count; i++) {
			const struct part_opt *e = &part_opts_table[i];
			char buf[64];
			const char *s;

			if (!(e->where & PART_OPT_HTTP) ||
			    !!(e->flags & PART_OPT_PRESET) != (pass == 0) ||
			    !(val = json_object_get(obj, e->key)))
				continue;
			s = json_text(e, val, buf, sizeof(buf));
			if (!s || set_text(o, e, s, 1) || mark_given(o, e, s))
				return bad_member(e, e->key, fieldname, err);
		}
	return 0;
}

/* e's value in base (a part_opts or a part_run_opts) as JSON. */
static json_t *value_json(const void *base, const struct part_opt *e)
{
	char w[32];
	int v;

	switch (e->type) {
	case PART_OPT_UINT:
		if (e->words && get_int(base, e) == (int64_t)e->special)
			return json_string(first_word(e, w, sizeof(w)));
		return json_integer((json_int_t)get_u64(base, e));
	case PART_OPT_NUM:
		if (e->words && get_num(base, e) == e->special)
			return json_string(first_word(e, w, sizeof(w)));
		if ((e->flags & PART_OPT_NULL0) && get_num(base, e) == 0)
			return json_null();
		return json_real(get_num(base, e));
	case PART_OPT_ENUM:
		memcpy(&v, cfield(base, e), sizeof(v));
		return json_string(e->enum_name(v));
	case PART_OPT_ONOFF:
	case PART_OPT_FLAG:
		memcpy(&v, cfield(base, e), sizeof(v));
		return json_boolean(v);
	case PART_OPT_STR: {
		const char *s;

		memcpy(&s, cfield(base, e), sizeof(s));
		return s ? json_string(s) : json_null();
	}
	case PART_OPT_SIZE:
		return json_integer((json_int_t)get_u64(base, e));
	case PART_OPT_CAP: {
		struct part_cap c;

		memcpy(&c, cfield(base, e), sizeof(c));
		if (c.v == 0)
			return json_null();
		if (!c.factor && isfinite(c.v) && c.v == floor(c.v) &&
		    c.v < 9e15)
			return json_integer((json_int_t)c.v);
		part_cap_text(&c, w, sizeof(w));
		return json_string(w);
	}
	}
	return json_null();
}

json_t *part_opts_to_json(const struct part_opts *o)
{
	json_t *j = json_object();

	for (size_t i = 0; j && i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];

		if ((e->where & PART_OPT_HTTP) &&
		    ((e->flags & PART_OPT_JOB) || o->given[i]) &&
		    json_object_set_new(j, e->key, value_json(o, e))) {
			json_decref(j);
			return NULL;
		}
	}
	return j;
}

/* ---- the report ---- */

json_t *part_opts_report(const struct part_run_opts *o,
			 const struct part_opts_facts *f)
{
	json_t *j = json_object();

	for (size_t i = 0; j && i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];
		int on = e->report_when == PART_REP_ALWAYS ||
			 (e->report_when == PART_REP_NOT_RANDOM &&
			  o->method != PART_METHOD_RANDOM) ||
			 (e->report_when == PART_REP_PARSA &&
			  o->method == PART_METHOD_PARSA);

		if (!on)
			continue;
		if (json_object_set_new(j, e->key, e->report ? e->report(o, f)
						   : value_json(o, e))) {
			json_decref(j);
			return NULL;
		}
	}
	return j;
}

/* ---- the schema ---- */

static json_t *schema_of(const struct part_opt *e)
{
	char w[32];
	json_t *s = NULL;
	uint64_t hi = hi_of(e, 1);
	int open = e->size == sizeof(uint32_t) ? hi >= UINT32_MAX
					       : hi >= (uint64_t)INT64_MAX;

	switch (e->type) {
	case PART_OPT_UINT:
		s = json_pack("{s:s, s:I}", "type", "integer", "minimum",
			      (json_int_t)e->lo);
		if (s && !open)
			json_object_set_new(s, "maximum", json_integer((json_int_t)hi));
		break;
	case PART_OPT_NUM:
		s = json_pack("{s:s, s:f, s:f}", "type", "number", "minimum",
			      e->dlo, "maximum", e->dhi);
		break;
	case PART_OPT_ENUM: {
		json_t *en = json_array();
		char buf[256], *save = NULL, *t;

		snprintf(buf, sizeof(buf), "%s", e->choices);
		for (t = strtok_r(buf, ", ", &save); en && t;
		     t = strtok_r(NULL, ", ", &save))
			json_array_append_new(en, json_string(t));
		s = json_pack("{s:s, s:o}", "type", "string", "enum", en);
		break;
	}
	case PART_OPT_CAP:
		s = json_pack("{s:[{s:s, s:f}, {s:s, s:s}]}", "oneOf", "type",
			      "number", "minimum", 1.0, "type", "string",
			      "pattern", "^(inf|[0-9.eE+]+x?)$");
		break;
	default:
		s = json_pack("{s:s}", "type", "boolean");
	}
	if (s && e->words)
		s = json_pack("{s:[o, {s:s, s:[s]}]}", "oneOf", s, "type",
			      "string", "enum", first_word(e, w, sizeof(w)));
	return s;
}

json_t *part_opts_schema(void)
{
	json_t *j = json_object();

	for (size_t i = 0; j && i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];

		if ((e->where & PART_OPT_HTTP) &&
		    json_object_set_new(j, e->key, schema_of(e))) {
			json_decref(j);
			return NULL;
		}
	}
	return j;
}

void part_opts_http_names(char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < part_opts_count && n < len; i++)
		if (part_opts_table[i].where & PART_OPT_HTTP)
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
					      n ? ", " : "",
					      part_opts_table[i].key);
}
