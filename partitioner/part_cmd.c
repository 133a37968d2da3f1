/*
 * part_cmd: the partitioner's subcommands of the `parsa` program:
 * partition, eval, gen (registered in app/app_main.c's command table).
 *
 * Exit status: 0 success, 1 runtime error (bad input, I/O, memory),
 * 2 usage error.  Errors are one line on stderr: "parsa: <message>".
 *
 * Parallel runs (--workers, --tau, --mpi; part_parallel.h): under MPI
 * every rank reads the dataset and runs its nodes; only rank 0 writes the
 * outputs and prints the summary, the others exit 0 quietly.  An error on
 * any rank stops every rank with "parsa: rank R: <message>" and exit 1
 * (after a transport failure MPI is not finalised, so _exit); a rank
 * stopped by mpirun (SIGTERM, because another rank failed) says so and
 * exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part_cli.h"
#include "part_cmd.h"
#include "parsa_err.h"
#include "part_gen.h"
#include "part_parallel.h"
#include "part_placement.h"
#include "part_pool.h"
#include "part_progress.h"
#include "part_reader.h"
#include "part_report.h"
#include "part_run.h"
#include "part_shards.h"
#include "part_stream.h"

#define EXIT_USAGE 2

static const char usage_partition[] =
	"usage: parsa partition DATA -k K [options]\n"
	"\n"
	"Partition DATA into K parts and write PREFIX.examples (part of each\n"
	"example, one per line), PREFIX.features ('feature_id part' per line)\n"
	"and PREFIX.json (the report); print a summary to stdout.\n"
	"\n"
	"input:\n"
	"  --format F        libsvm | snap | pairs | auto (default: auto, by\n"
	"                    file name then content); .gz is read transparently\n"
	"  --graph MODE      for snap: adjacency (each vertex an example, its\n"
	"                    neighbours its features; default) | edges (each\n"
	"                    edge an example with its two endpoints)\n"
	"method:\n"
	"  -k, --parts K     number of parts (machines), 1..65536 (required)\n"
	"  --method M        parsa (default) | random | metis | greedy\n"
	"  --blocks B        Parsa: random blocks partitioned in turn (default:\n"
	"                    auto = max(%u, ceil(|U| / %u)))\n"
	"  --init-blocks A   Parsa: warm-up blocks, individual init (default %u)\n"
	"  --rule R          Parsa: min-s (thesis: smallest |S_i| picks next)\n"
	"                    | round-robin (default %s)\n"
	"  --imbalance X     max |U_i| / ceil(|U|/k), >= 1 (default %.2f)\n"
	"  --block-imbalance X|off  Parsa: also cap each part within each\n"
	"                    block at ceil(X * block size / k) (default %s)\n"
	"  --quality Q       Parsa: fast | default | best: presets of the\n"
	"                    refinement options below (default: default);\n"
	"                    options given explicitly override the preset\n"
	"  --refine N        Parsa: rounds of the M_max refinement, moves out\n"
	"                    of the largest part; 0 = off (default %u)\n"
	"  --refine-passes N Parsa: sweeps of the connectivity (T_sum)\n"
	"                    refinement; 0 = off (default %u)\n"
	"  --pfanout-passes N  Parsa: p-fanout sweeps before the T_sum\n"
	"                    refinement's exact ones (default %u)\n"
	"  --fm-passes N     Parsa: k-way FM passes (negative-gain moves with\n"
	"                    rollback) after those sweeps and at every level of\n"
	"                    the multilevel partition; 0 = off (default %u)\n"
	"  --restream N      Parsa: restreaming passes, Algorithm 13 again from\n"
	"                    the previous result's neighbor sets (default %u)\n"
	"  --ml-levels N     Parsa: coarsening levels of a multilevel V-cycle\n"
	"                    around the T_sum refinement; 0 = off (default %u)\n"
	"  --ml-cycles N     Parsa: V-cycles of --ml-levels, each seeded anew,\n"
	"                    while one gains 0.1%% (default %u)\n"
	"  --ml-chains N     Parsa: independent chains of those V-cycles from\n"
	"                    the same start, the best kept (default %u)\n"
	"  --multilevel on|off  Parsa: also compute a multilevel partition\n"
	"                    (Algorithm 13 or recursive bisection on the\n"
	"                    coarsest graph) and keep it when it is better\n"
	"                    (default %s)\n"
	"  --threads N       Parsa: threads for the independent chains of\n"
	"                    V-cycles (best); the result is the same for\n"
	"                    every N (default: the CPUs this process may use)\n"
	"  --time-limit S    Parsa: the refinement phases stop at their next\n"
	"                    checkpoint once S seconds of partitioning have\n"
	"                    passed, keeping the best placement found (never\n"
	"                    worse than Algorithm 13's); the run is then not\n"
	"                    reproducible (default: none)\n"
	"  --guard-slack X   Parsa: the refinement phases may end with T_max\n"
	"                    and M_max up to X times Algorithm 13's (after the\n"
	"                    M_max refinement): memory and peak traffic traded\n"
	"                    for total traffic (T_sum); inf = no bound but\n"
	"                    the balance cap (default 1: never worse)\n"
	"  --param-imbalance X  cap the parameters per server at\n"
	"                    X * ceil(|V_used| / k); 0 = no cap (default)\n"
	"  --sweeps N        improving sweeps of Algorithm 11 (default %u)\n"
	"  --seed S          seed of every random choice (default %" PRIu64 ")\n"
	"  --init-from PREFIX --init-data OLD\n"
	"                    incremental: start from the neighbor sets of an\n"
	"                    earlier placement PREFIX of dataset OLD\n"
	"parallel (Parsa on the parameter server; see README):\n"
	"  --workers W       W worker threads (plus servers) partition the\n"
	"                    blocks in parallel; without --workers, --tau or\n"
	"                    --mpi the run is sequential (with --mpi: default\n"
	"                    one worker per rank)\n"
	"  --servers S       servers holding the neighbor sets (default: W, or\n"
	"                    one per rank)\n"
	"  --tau T|inf       bounded delay: a worker runs at most T blocks ahead\n"
	"                    of its unacknowledged pushes; T >= 1 also lets it\n"
	"                    pull the next block while it partitions one\n"
	"                    (default %d; with one worker every T equals the\n"
	"                    sequential run exactly)\n"
	"  --init-sample F   global initialization: partition a random F of\n"
	"                    the examples first, its neighbor sets start every\n"
	"                    worker (default with W > 1: %d examples, within\n"
	"                    %.2f..%.2f of them; 0 with one worker or\n"
	"                    --init-blocks)\n"
	"  --syncs N         mid-block syncs: a worker pushes its new bits and\n"
	"                    pulls the others' N times within each block, so\n"
	"                    its cost lists follow the other workers (default:\n"
	"                    enough that a step misses at most 1/%d of the\n"
	"                    data, (W - 1) / (blocks (N + 1)), up to %d; 0\n"
	"                    with one worker)\n"
	"  --mpi             run over MPI: mpirun -np N parsa partition ... --mpi\n"
	"                    (every rank reads DATA; rank 0 writes the outputs)\n"
	"streaming (LIBSVM; blocks read by the workers, nothing loads DATA):\n"
	"  --stream          each worker reads its blocks of consecutive lines\n"
	"                    from DATA itself and holds one block at a time;\n"
	"                    neighbor sets, partition V and the metrics live on\n"
	"                    the servers (with --workers/--servers/--tau/--mpi)\n"
	"  --mem-limit SIZE  bytes of block data per worker (e.g. 64M): sets the\n"
	"                    block size from the first lines (implies --stream)\n"
	"  --block-rows N    examples per block (implies --stream; default\n"
	"                    32768 without --mem-limit)\n"
	"output:\n"
	"  --out PREFIX      output prefix (default: DATA's name + .k<K>)\n"
	"  --shards DIR      also write DIR/part-<i>.libsvm and\n"
	"                    DIR/features-<i>.txt for every part i\n"
	"  --random-trials N seeds averaged for the random baseline (default %u)\n"
	"  --json            print the JSON report to stdout instead of the summary\n"
	"  -q, --quiet       no summary, no progress bar\n"
	"  -h, --help        this text\n";

static const char usage_eval[] =
	"usage: parsa eval DATA --placement PREFIX [options]\n"
	"\n"
	"Recompute every metric of an existing placement (PREFIX.examples and\n"
	"PREFIX.features, from any tool) on DATA, with the random baseline.\n"
	"\n"
	"  --placement PREFIX  the placement to evaluate (required)\n"
	"  -k, --parts K       number of parts (default: 1 + largest part id)\n"
	"  --format F, --graph MODE   as for partition\n"
	"  --seed S            seed of the random baseline (default 1)\n"
	"  --random-trials N   seeds averaged for the random baseline (default 5)\n"
	"  --report FILE       also write the JSON report to FILE\n"
	"  --json              print the JSON report instead of the summary\n"
	"  -q, --quiet         no progress bar\n"
	"  -h, --help          this text\n";

static const char usage_gen[] =
	"usage: parsa gen --examples N --features M --avg-nnz D --topics T\n"
	"                 [--seed S] [--topic-frac F] [--zipf Z] --out FILE\n"
	"\n"
	"Write a synthetic CTR-like LIBSVM dataset, streaming: each example\n"
	"draws most features from its latent topic's Zipf vocabulary and the\n"
	"rest from a global Zipf; labels from a planted sparse linear model.\n"
	"FILE ending in .gz is compressed; '-' writes to stdout.\n";

static int die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "parsa: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(run with --help for usage)\n");
	return EXIT_USAGE;
}

static int report_err(const struct parsa_err *err, int rc)
{
	fprintf(stderr, "parsa: %s\n",
		err->msg[0] ? err->msg : parsa_strerror(rc));
	return 1;
}

/* A byte size: digits with an optional K, M, G or T suffix (powers of
 * 1024, an optional trailing 'B' or 'iB'). */
/* Options shared by partition and eval for reading the dataset. */
struct input_opts {
	const char *data;
	struct part_read_opts ro;
	int quiet;
	int json;
};

static int load(struct input_opts *in, struct part_dataset *ds,
		struct part_progress *pg, double *secs, struct parsa_err *err)
{
	double t0 = part_now();
	int rc;

	part_progress_begin(pg, "reading");
	in->ro.progress = part_progress_cb;
	in->ro.progress_arg = pg;
	rc = part_read_file(in->data, &in->ro, ds, err);
	part_progress_end(pg);
	*secs = part_now() - t0;
	if (rc == 0 && ds->g.n_rows == 0)
		rc = parsa_fail(err, PARSA_EINVAL,
				"%s: empty dataset: no examples to partition",
				in->data);
	return rc;
}

static void progress_trampoline(void *arg, uint64_t done, uint64_t total)
{
	part_progress_cb(arg, done, total);
}

/* The refinement's steps (part_run_opts.refine_progress) on a bar of
 * their own. */
static const char refining[] = "refining";

static void refine_trampoline(void *arg, uint64_t done, uint64_t total)
{
	struct part_progress *pg = arg;

	if (pg->label != refining)
		part_progress_begin(pg, refining);
	part_progress_cb(arg, done, total);
}

static void default_prefix(const char *data, uint32_t k, char *buf,
			   size_t len)
{
	const char *base = strrchr(data, '/');
	char name[PATH_MAX - 16];
	char *dot;

	base = base ? base + 1 : data;
	snprintf(name, sizeof(name), "%s", base);
	if ((dot = strstr(name, ".gz")) && dot[3] == '\0')
		*dot = '\0';
	if ((dot = strrchr(name, '.')) && dot != name)
		*dot = '\0';
	snprintf(buf, len, "%s.k%u", name, k);
}

static int emit_report(const struct part_report_info *info, int json_out,
		       int quiet, const char *json_path,
		       struct parsa_err *err)
{
	json_t *j = part_report_json(info);
	int rc = 0;

	if (!j)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (report)");
	if (json_path)
		rc = part_report_write(json_path, j, err);
	if (rc == 0 && json_out) {
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		fputc('\n', stdout);
	} else if (rc == 0 && !quiet) {
		part_report_print(stdout, info);
	}
	json_decref(j);
	return rc;
}

enum {
	OPT_FORMAT = 256, OPT_GRAPH, OPT_METHOD, OPT_BLOCKS, OPT_INIT_BLOCKS,
	OPT_RULE, OPT_IMBALANCE, OPT_SWEEPS, OPT_SEED, OPT_OUT, OPT_SHARDS,
	OPT_TRIALS, OPT_JSON, OPT_INIT_FROM, OPT_INIT_DATA, OPT_PLACEMENT,
	OPT_REPORT, OPT_EXAMPLES, OPT_FEATURES, OPT_AVG_NNZ, OPT_TOPICS,
	OPT_TOPIC_FRAC, OPT_ZIPF, OPT_BLOCK_IMB, OPT_REFINE, OPT_WORKERS,
	OPT_SERVERS, OPT_TAU, OPT_MPI, OPT_INIT_SAMPLE, OPT_SYNCS, OPT_QUALITY,
	OPT_REFINE_PASSES, OPT_RESTREAM, OPT_PARAM_IMB, OPT_ML_LEVELS,
	OPT_MULTILEVEL, OPT_PFANOUT, OPT_FM_PASSES, OPT_ML_CYCLES, OPT_ML_CHAINS,
	OPT_TIME_LIMIT, OPT_THREADS, OPT_GUARD_SLACK,
};

/* streaming options (part_stream.h) */
enum { OPT_STREAM = 1000, OPT_MEM_LIMIT, OPT_BLOCK_ROWS };

static const struct option partition_longopts[] = {
	{"parts", required_argument, NULL, 'k'},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"graph", required_argument, NULL, OPT_GRAPH},
	{"method", required_argument, NULL, OPT_METHOD},
	{"blocks", required_argument, NULL, OPT_BLOCKS},
	{"init-blocks", required_argument, NULL, OPT_INIT_BLOCKS},
	{"rule", required_argument, NULL, OPT_RULE},
	{"imbalance", required_argument, NULL, OPT_IMBALANCE},
	{"block-imbalance", required_argument, NULL, OPT_BLOCK_IMB},
	{"sweeps", required_argument, NULL, OPT_SWEEPS},
	{"refine", required_argument, NULL, OPT_REFINE},
	{"quality", required_argument, NULL, OPT_QUALITY},
	{"refine-passes", required_argument, NULL, OPT_REFINE_PASSES},
	{"restream", required_argument, NULL, OPT_RESTREAM},
	{"ml-levels", required_argument, NULL, OPT_ML_LEVELS},
	{"multilevel", required_argument, NULL, OPT_MULTILEVEL},
	{"pfanout-passes", required_argument, NULL, OPT_PFANOUT},
	{"fm-passes", required_argument, NULL, OPT_FM_PASSES},
	{"ml-cycles", required_argument, NULL, OPT_ML_CYCLES},
	{"ml-chains", required_argument, NULL, OPT_ML_CHAINS},
	{"param-imbalance", required_argument, NULL, OPT_PARAM_IMB},
	{"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
	{"guard-slack", required_argument, NULL, OPT_GUARD_SLACK},
	{"threads", required_argument, NULL, OPT_THREADS},
	{"seed", required_argument, NULL, OPT_SEED},
	{"out", required_argument, NULL, OPT_OUT},
	{"shards", required_argument, NULL, OPT_SHARDS},
	{"random-trials", required_argument, NULL, OPT_TRIALS},
	{"json", no_argument, NULL, OPT_JSON},
	{"init-from", required_argument, NULL, OPT_INIT_FROM},
	{"init-data", required_argument, NULL, OPT_INIT_DATA},
	{"placement", required_argument, NULL, OPT_PLACEMENT},
	{"report", required_argument, NULL, OPT_REPORT},
	{"workers", required_argument, NULL, OPT_WORKERS},
	{"servers", required_argument, NULL, OPT_SERVERS},
	{"tau", required_argument, NULL, OPT_TAU},
	{"mpi", no_argument, NULL, OPT_MPI},
	{"init-sample", required_argument, NULL, OPT_INIT_SAMPLE},
	{"syncs", required_argument, NULL, OPT_SYNCS},
	{"stream", no_argument, NULL, OPT_STREAM},
	{"mem-limit", required_argument, NULL, OPT_MEM_LIMIT},
	{"block-rows", required_argument, NULL, OPT_BLOCK_ROWS},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Options of partition and eval; shared parser, per-command validation. */
struct cmd_opts {
	struct input_opts in;
	struct part_run_opts run;
	int have_k;
	const char *out, *shards, *init_from, *init_data;
	const char *placement, *report;
	struct part_par_opts par;
	int parallel;    /* --workers, --servers, --tau, --init-sample or --mpi */
	int have_workers;
	int stream;      /* --stream, --mem-limit or --block-rows */
	uint64_t mem_limit, block_rows;
};

static void print_partition_help(void)
{
	struct part_run_opts d;

	part_run_opts_default(&d);
	printf(usage_partition, PARSA_AUTO_MIN_BLOCKS, PARSA_AUTO_BLOCK_ROWS,
	       d.pu.init_blocks,
	       part_rule_name(d.pu.rule), d.pu.imbalance,
	       isinf(d.pu.block_imbalance) ? "off" : "= --imbalance",
	       d.refine_rounds, d.refine_passes, d.refine_ppasses, d.fm_passes,
	       d.restream,
	       d.ml_levels, d.ml_cycles ? d.ml_cycles : 1,
	       d.ml_chains ? d.ml_chains : 1,
	       d.ml_scratch ? "on" : "off",
	       d.sweeps,
	       d.pu.seed, PART_PAR_DEFAULT_TAU, PART_PAR_SAMPLE_ROWS, PART_PAR_MIN_SAMPLE, PART_PAR_AUTO_SAMPLE,
	       PART_PAR_SYNC_SPAN, PART_PAR_AUTO_SYNCS_MAX,
	       d.random_trials);
}

static int parse_one(struct cmd_opts *c, int opt, const char *arg)
{
	struct parsa_partu_opts *pu = &c->run.pu;
	uint64_t v;

	switch (opt) {
	case 'k':
		if (part_cli_u64(arg, 1, 65536, &v))
			return die_usage("-k must be an integer in 1..65536, got '%s'", arg);
		pu->k = (uint32_t)v;
		c->have_k = 1;
		return 0;
	case OPT_FORMAT:
		if (part_format_parse(arg, &c->in.ro.format))
			return die_usage("unknown --format '%s' (libsvm, snap, pairs, auto)", arg);
		return 0;
	case OPT_GRAPH:
		if (part_graph_mode_parse(arg, &c->in.ro.graph))
			return die_usage("unknown --graph '%s' (adjacency, edges)", arg);
		return 0;
	case OPT_METHOD:
		if (part_method_parse(arg, &c->run.method))
			return die_usage("unknown --method '%s' (parsa, random, metis, greedy)", arg);
		return 0;
	case OPT_BLOCKS:
		if (part_cli_u64(arg, 1, UINT32_MAX, &v))
			return die_usage("--blocks must be a positive integer, got '%s'", arg);
		pu->blocks = (uint32_t)v;
		return 0;
	case OPT_INIT_BLOCKS:
		if (part_cli_u64(arg, 0, UINT32_MAX, &v))
			return die_usage("--init-blocks must be an integer >= 0, got '%s'", arg);
		pu->init_blocks = (uint32_t)v;
		return 0;
	case OPT_RULE:
		if (part_rule_parse(arg, &pu->rule))
			return die_usage("unknown --rule '%s' (min-s, round-robin)", arg);
		return 0;
	case OPT_IMBALANCE:
		if (part_cli_dbl(arg, 1.0, 1e6, &pu->imbalance))
			return die_usage("--imbalance must be a number >= 1, got '%s'", arg);
		return 0;
	case OPT_BLOCK_IMB:
		if (strcmp(arg, "off") == 0 || strcmp(arg, "inf") == 0)
			pu->block_imbalance = INFINITY;
		else if (part_cli_dbl(arg, 1.0, 1e6, &pu->block_imbalance))
			return die_usage("--block-imbalance must be a number >= 1 or 'off', got '%s'", arg);
		return 0;
	case OPT_SWEEPS:
		if (part_cli_u64(arg, 0, 1000, &v))
			return die_usage("--sweeps must be an integer in 0..1000, got '%s'", arg);
		c->run.sweeps = (uint32_t)v;
		return 0;
	case OPT_REFINE:
		if (part_cli_u64(arg, 0, 1000000, &v))
			return die_usage("--refine must be an integer in 0..1000000, got '%s'", arg);
		c->run.refine_rounds = (uint32_t)v;
		return 0;
	case OPT_QUALITY: {
		enum part_quality q;

		/* applied by parse_cmd before the other options */
		if (part_quality_parse(arg, &q))
			return die_usage("unknown --quality '%s' (fast, default, best)", arg);
		return 0;
	}
	case OPT_REFINE_PASSES:
	case OPT_RESTREAM:
	case OPT_ML_LEVELS:
	case OPT_PFANOUT:
	case OPT_FM_PASSES:
	case OPT_ML_CYCLES:
	case OPT_ML_CHAINS:
		if (part_cli_u64(arg, 0, 1000, &v))
			return die_usage("--refine-passes/--pfanout-passes/--fm-passes/--restream/--ml-levels/--ml-cycles/--ml-chains must be an integer in 0..1000, got '%s'", arg);
		*(opt == OPT_RESTREAM ? &c->run.restream
		  : opt == OPT_ML_LEVELS ? &c->run.ml_levels
		  : opt == OPT_ML_CYCLES ? &c->run.ml_cycles
		  : opt == OPT_ML_CHAINS ? &c->run.ml_chains
		  : opt == OPT_PFANOUT ? &c->run.refine_ppasses
		  : opt == OPT_FM_PASSES ? &c->run.fm_passes
					 : &c->run.refine_passes) = (uint32_t)v;
		return 0;
	case OPT_MULTILEVEL:
		if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0)
			return die_usage("--multilevel must be on or off, got '%s'", arg);
		c->run.ml_scratch = strcmp(arg, "on") == 0;
		return 0;
	case OPT_PARAM_IMB:
		if (strcmp(arg, "0") != 0 &&
		    part_cli_dbl(arg, 1.0, 1e6, &c->run.param_imbalance))
			return die_usage("--param-imbalance must be 0 or a number >= 1, got '%s'", arg);
		return 0;
	case OPT_TIME_LIMIT:
		if (part_cli_dbl(arg, 1e-6, 1e9, &c->run.time_limit))
			return die_usage("--time-limit must be a number of seconds > 0, got '%s'", arg);
		return 0;
	case OPT_GUARD_SLACK:
		if (part_guard_slack_parse(arg, &c->run.guard_slack))
			return die_usage("--guard-slack must be a number >= 1 or inf, got '%s'", arg);
		return 0;
	case OPT_THREADS:
		if (part_cli_u64(arg, 1, PART_POOL_MAX_THREADS, &v))
			return die_usage("--threads must be an integer in 1..256, got '%s'", arg);
		c->run.threads = (uint32_t)v;
		return 0;
	case OPT_SEED:
		if (part_cli_u64(arg, 0, UINT64_MAX, &pu->seed))
			return die_usage("--seed must be an unsigned integer, got '%s'", arg);
		return 0;
	case OPT_TRIALS:
		if (part_cli_u64(arg, 1, 1000, &v))
			return die_usage("--random-trials must be in 1..1000, got '%s'", arg);
		c->run.random_trials = (uint32_t)v;
		return 0;
	case OPT_WORKERS:
	case OPT_SERVERS:
		if (part_cli_u64(arg, 1, 4096, &v))
			return die_usage("--workers/--servers must be an integer in 1..4096, got '%s'", arg);
		*(opt == OPT_WORKERS ? &c->par.workers : &c->par.servers) =
			(uint32_t)v;
		c->have_workers |= opt == OPT_WORKERS;
		c->parallel = 1;
		return 0;
	case OPT_TAU:
		if (part_par_tau_parse(arg, &c->par.tau))
			return die_usage("--tau must be an integer >= 0 or 'inf', got '%s'", arg);
		c->parallel = 1;
		return 0;
	case OPT_INIT_SAMPLE:
		if (part_cli_dbl(arg, 0.0, 1.0, &c->par.init_sample))
			return die_usage("--init-sample must be a fraction in [0,1], got '%s'", arg);
		c->parallel = 1;
		return 0;
	case OPT_SYNCS:
		if (part_cli_u64(arg, 0, PART_PAR_MAX_SYNCS, &v))
			return die_usage("--syncs must be an integer in 0..64, got '%s'",
					 arg);
		c->par.syncs = (int)v;
		c->parallel = 1;
		return 0;
	case OPT_MPI:
		c->par.mpi = 1;
		c->parallel = 1;
		return 0;
	case OPT_STREAM:
		c->stream = c->parallel = 1;
		return 0;
	case OPT_MEM_LIMIT:
		if (part_cli_size(arg, &c->mem_limit) || c->mem_limit < 65536)
			return die_usage("--mem-limit must be a size >= 64K (e.g. 512M, 2G), got '%s'", arg);
		c->stream = c->parallel = 1;
		return 0;
	case OPT_BLOCK_ROWS:
		if (part_cli_u64(arg, 1, UINT32_MAX, &c->block_rows))
			return die_usage("--block-rows must be an integer in 1..4294967295, got '%s'", arg);
		c->stream = c->parallel = 1;
		return 0;
	case OPT_OUT: c->out = arg; return 0;
	case OPT_SHARDS: c->shards = arg; return 0;
	case OPT_JSON: c->in.json = 1; return 0;
	case OPT_INIT_FROM: c->init_from = arg; return 0;
	case OPT_INIT_DATA: c->init_data = arg; return 0;
	case OPT_PLACEMENT: c->placement = arg; return 0;
	case OPT_REPORT: c->report = arg; return 0;
	case 'q': c->in.quiet = 1; return 0;
	}
	return die_usage("%s", "unknown option");
}

/* The last --quality Q / --quality=Q of argv (before a "--"), applied
 * first so explicit options override the preset.  Bad values are left to
 * parse_one's usage error. */
static void apply_quality(int argc, char **argv, struct part_run_opts *o)
{
	const char *q = NULL;
	enum part_quality v;

	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--quality") == 0 && i + 1 < argc)
			q = argv[++i];
		else if (strncmp(argv[i], "--quality=", 10) == 0)
			q = argv[i] + 10;
	}
	if (q && part_quality_parse(q, &v) == 0)
		part_quality_apply(o, v);
}

/* Parse argv; returns -1 to continue, else an exit status (help: 0). */
static int parse_cmd(int argc, char **argv, struct cmd_opts *c,
		     void (*help)(void))
{
	int opt;

	memset(c, 0, sizeof(*c));
	part_run_opts_default(&c->run);
	apply_quality(argc, argv, &c->run);
	part_par_opts_default(&c->par);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":k:qh", partition_longopts,
				  NULL)) != -1) {
		int rc;

		if (opt == 'h') {
			help();
			return 0;
		}
		if (opt == '?')
			return die_usage("unknown option '%s'", argv[optind - 1]);
		if (opt == ':')
			return die_usage("option '%s' needs a value", argv[optind - 1]);
		rc = parse_one(c, opt, optarg);
		if (rc)
			return rc;
	}
	if (optind >= argc)
		return die_usage("%s", "missing DATA file");
	if (optind + 1 < argc)
		return die_usage("unexpected argument '%s'", argv[optind + 1]);
	c->in.data = argv[optind];
	return -1;
}

/* What --stream supports (see part_stream.h). */
static int check_stream_opts(struct cmd_opts *c)
{
	enum part_format f = c->in.ro.format;

	if (f == PART_FMT_AUTO)
		f = part_format_guess(c->in.data);
	if (f != PART_FMT_AUTO && f != PART_FMT_LIBSVM)
		return die_usage("--stream reads LIBSVM only (one example per line), not %s",
				 part_format_name(f));
	if (c->init_from || c->shards || c->run.pu.init_blocks > 0 ||
	    c->par.init_sample >= 0 || c->par.syncs >= 0 || c->run.pu.blocks)
		return die_usage("%s", "--stream: --init-from, --shards, --blocks, --init-blocks, --init-sample and --syncs do not apply (blocks: --block-rows or --mem-limit)");
	if (strcmp(c->in.data, "-") == 0)
		return die_usage("%s", "--stream needs a file (every worker reads it)");
	if (c->run.param_imbalance > 0)
		return die_usage("%s", "--stream: --param-imbalance is not supported (Algorithm 11 runs per server)");
	if (c->run.time_limit > 0)
		return die_usage("%s", "--stream: --time-limit does not apply (the streaming pass has no refinement phases)");
	if (c->run.guard_slack > 1.0)
		return die_usage("%s", "--stream: --guard-slack does not apply (the streaming pass has no refinement phases)");
	return -1;
}

static int check_partition_opts(struct cmd_opts *c)
{
	if (!c->have_k)
		return die_usage("%s", "-k K is required");
	if (c->run.pu.blocks && c->run.pu.init_blocks > c->run.pu.blocks)
		return die_usage("%s", "--init-blocks cannot exceed --blocks");
	if ((c->init_from != NULL) != (c->init_data != NULL))
		return die_usage("%s", "--init-from and --init-data go together");
	if (c->init_from && c->run.method != PART_METHOD_PARSA)
		return die_usage("%s", "--init-from needs --method parsa");
	if (c->placement || c->report)
		return die_usage("%s", "--placement/--report belong to 'parsa eval'");
	if (c->parallel && c->run.method != PART_METHOD_PARSA)
		return die_usage("%s", "--workers/--servers/--tau/--mpi need --method parsa");
	if (c->par.init_sample >= 0 && c->run.pu.init_blocks > 0)
		return die_usage("%s", "--init-sample and --init-blocks are alternatives");
	if (c->par.mpi && !c->have_workers)
		c->par.workers = 0; /* one per rank */
	return c->stream ? check_stream_opts(c) : -1;
}

/* Incremental start: S from an earlier placement of dataset OLD. */
static int load_init(struct cmd_opts *c, const struct part_dataset *ds,
		     struct parsa_nbrset *S, struct parsa_err *err)
{
	struct part_dataset old;
	uint32_t *part = NULL, *owner = NULL, k_seen = 0;
	int rc;

	part_dataset_init(&old);
	rc = part_read_file(c->init_data, &c->in.ro, &old, err);
	if (rc == 0) {
		part = malloc(((size_t)old.g.n_rows + 1) * sizeof(uint32_t));
		owner = malloc(((size_t)old.g.n_cols + 1) * sizeof(uint32_t));
		if (!part || !owner)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	if (rc == 0)
		rc = part_placement_read(c->init_from, old.g.n_rows, old.feat_id,
					 old.g.n_cols, c->run.pu.k, part, owner,
					 &k_seen, err);
	if (rc == 0)
		rc = parsa_nbrset_init(S, ds->g.n_cols, c->run.pu.k, err);
	if (rc == 0)
		rc = part_init_from_placement(ds, &old, part, S, err);
	free(part);
	free(owner);
	part_dataset_release(&old);
	return rc;
}

/* The output prefix (--out or DATA's name + .k<K>). */
static void out_prefix(const struct cmd_opts *c, uint32_t k, char *buf,
		       size_t len)
{
	if (c->out)
		snprintf(buf, len, "%s", c->out);
	else
		default_prefix(c->in.data, k, buf, len);
}

static int partition_outputs(struct cmd_opts *c, const struct part_dataset *ds,
			     const struct part_result *r,
			     struct part_report_info *info,
			     struct parsa_err *err)
{
	char prefix[PATH_MAX], json_path[PATH_MAX + 8];
	int rc;

	out_prefix(c, r->k, prefix, sizeof(prefix));
	rc = part_placement_write(prefix, r->part, ds->g.n_rows, r->owner,
				  ds->feat_id, ds->g.n_cols, err);
	if (rc == 0 && c->shards)
		rc = part_write_shards(c->shards, c->in.data, ds, r->part,
				       r->owner, r->k, err);
	if (rc)
		return rc;
	snprintf(json_path, sizeof(json_path), "%s.json", prefix);
	info->peak_rss_kb = part_peak_rss_kb();
	return emit_report(info, c->in.json, c->in.quiet, json_path, err);
}

/* ---- parallel runs ---- */

/* mpirun stops the other ranks with SIGTERM when one fails: say so. */
static char term_msg[128];
static volatile sig_atomic_t term_len;

static void on_term(int sig)
{
	(void)sig;
	if (term_len > 0 && write(2, term_msg, (size_t)term_len) < 0)
		term_len = 0;
	_exit(1);
}

static void install_term_handler(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	struct sigaction sa;
	int n = snprintf(term_msg, sizeof(term_msg), "parsa: terminated "
			 "(another rank failed), rank %s\n", r ? r : "?");

	term_len = n > 0 && (size_t)n < sizeof(term_msg) ? n : 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a dead peer's socket: EPIPE, not death */
}

/* Environment variable name as an integer >= 0, or -1 (unset, bad). */
static long env_long(const char *name)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end ? -1 : v;
}

/* This process's MPI rank from mpirun's environment (-1 if none), known
 * before MPI starts: only rank 0 draws a progress bar. */
static int env_rank(void)
{
	long r = env_long("OMPI_COMM_WORLD_RANK");

	return r >= 0 && r <= INT_MAX ? (int)r : -1;
}

/*
 * Tests only: PARSA_TEST_DIE_RANK=R makes rank R _exit(3) after its first
 * block; PARSA_TEST_GARBAGE_RANK=R makes it send a malformed message to
 * the scheduler instead.
 */
static int test_hook(void *arg, struct ps_transport *tp, uint32_t rank,
		     uint32_t worker, uint32_t blocks_done,
		     struct parsa_err *err)
{
	static const char junk[64] = "this is not a parameter-server message";
	long die = env_long("PARSA_TEST_DIE_RANK");
	long garbage = env_long("PARSA_TEST_GARBAGE_RANK");
	void *buf;

	(void)arg;
	(void)worker;
	if (blocks_done != 1)
		return 0;
	if (die == (long)rank) {
		fprintf(stderr, "parsa: rank %u: dying on purpose "
			"(PARSA_TEST_DIE_RANK)\n", rank);
		_exit(3);
	}
	if (garbage != (long)rank)
		return 0;
	buf = malloc(sizeof(junk));
	if (!buf)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	memcpy(buf, junk, sizeof(junk));
	return ps_transport_send(tp, 0, buf, sizeof(junk), err);
}

static void setup_parallel(struct cmd_opts *c)
{
	if (c->par.mpi) {
		install_term_handler();
		if (env_rank() > 0)
			c->in.quiet = 1;
	}
	if (getenv("PARSA_TEST_DIE_RANK") || getenv("PARSA_TEST_GARBAGE_RANK"))
		c->par.test_hook = test_hook;
}

/* Before a long parallel run: can the outputs be written at all? */
static int check_out_dir(const struct cmd_opts *c, struct parsa_err *err)
{
	char prefix[PATH_MAX], dir[PATH_MAX];

	out_prefix(c, c->run.pu.k, prefix, sizeof(prefix));
	snprintf(dir, sizeof(dir), "%s", prefix);
	if (access(dirname(dir), W_OK) != 0)
		return parsa_fail(err, PARSA_EIO, "%s: cannot write outputs "
				  "there: %s", prefix, strerror(errno));
	return 0;
}

/* Partition U..metrics, sequential or parallel; *is_root: this process
 * writes the outputs. */
static int run_job(struct cmd_opts *c, const struct part_dataset *ds,
		   struct part_result *r, struct part_par_info *pi,
		   int *is_root, int *rank, struct parsa_err *err)
{
	int rc;

	*is_root = 1;
	*rank = -1;
	if (!c->parallel)
		return part_run(ds, &c->run, r, err);
	rc = env_rank() <= 0 ? check_out_dir(c, err) : 0;
	if (rc == 0)
		rc = part_par_run(ds, &c->run, &c->par, r, pi, is_root, rank,
				  err);
	if (!c->par.mpi)
		*rank = -1;
	return rc;
}

/* Error exit; under MPI with the rank, and without finalising MPI. */
static int partition_failed(const struct cmd_opts *c, int rank,
			    const struct parsa_err *err, int rc)
{
	if (!c->par.mpi)
		return report_err(err, rc);
	if (rank < 0)
		rank = env_rank();
	fprintf(stderr, "parsa: rank %d: %s\n", rank,
		err->msg[0] ? err->msg : parsa_strerror(rc));
	fflush(stderr);
	fflush(stdout);
	_exit(1);
}

/* --stream: Parsa on the file in blocks (part_stream.h); nothing loads
 * the dataset.  The root writes the placement and the report. */
static int stream_job(struct cmd_opts *c, double t0)
{
	struct part_stream_opts so;
	struct part_stream_result r;
	struct part_result pr;
	struct part_par_info pinfo;
	struct part_progress pg;
	struct part_report_info info;
	struct parsa_err err;
	char prefix[PATH_MAX], json_path[PATH_MAX + 8];
	int rc, is_root = 0, rank = -1;

	parsa_err_clear(&err);
	part_stream_opts_default(&so);
	so.k = c->run.pu.k;
	so.rule = c->run.pu.rule;
	so.imbalance = c->run.pu.imbalance;
	so.block_imbalance = c->run.pu.block_imbalance;
	so.seed = c->run.pu.seed;
	so.sweeps = c->run.sweeps;
	so.random_trials = c->run.random_trials;
	so.block_rows = c->block_rows;
	so.mem_limit = c->mem_limit;
	part_progress_init(&pg, !c->in.quiet);
	part_progress_begin(&pg, "streaming");
	so.progress = progress_trampoline;
	so.progress_arg = &pg;
	part_stream_result_init(&r);
	part_result_init(&pr);
	rc = env_rank() <= 0 ? check_out_dir(c, &err) : 0;
	if (rc == 0)
		rc = part_stream_run(c->in.data, &so, &c->par, &r, &pinfo,
				     &is_root, &rank, &err);
	part_progress_end(&pg);
	if (rc == 0 && is_root) {
		out_prefix(c, r.k, prefix, sizeof(prefix));
		rc = part_placement_write(prefix, r.part, r.n_rows, r.owner,
					  r.feat_id, r.n_feat, &err);
	}
	if (rc == 0 && is_root) {
		pr.k = r.k;
		pr.m = r.m;
		pr.rnd = r.rnd;
		pr.t_partition_u = r.t_partition_u;
		pr.t_partition_v = r.t_partition_v;
		pr.t_metrics = r.t_metrics;
		/* the refinement phases need the whole graph: not run */
		c->run.refine_rounds = 0;
		c->run.refine_passes = 0;
		c->run.refine_ppasses = 0;
		c->run.restream = 0;
		c->run.ml_levels = 0;
		c->run.ml_scratch = 0;
		info = (struct part_report_info){
			.data_path = c->in.data, .opts = &c->run, .res = &pr,
			.method = "parsa", .t_total = part_now() - t0,
			.peak_rss_kb = part_peak_rss_kb(), .par = &pinfo,
			.stream = &r, .mem_limit = c->mem_limit,
		};
		snprintf(json_path, sizeof(json_path), "%s.json", prefix);
		rc = emit_report(&info, c->in.json, c->in.quiet, json_path,
				 &err);
	}
	part_stream_result_release(&r);
	if (!c->par.mpi)
		rank = -1;
	return rc ? partition_failed(c, rank, &err, rc) : 0;
}

int part_cmd_partition(int argc, char **argv)
{
	struct cmd_opts c;
	struct part_dataset ds;
	struct part_result r;
	struct part_progress pg;
	struct parsa_nbrset S = {0};
	struct parsa_err err;
	struct part_report_info info = {0};
	struct part_par_info pinfo;
	double t0 = part_now(), t_load = 0;
	int rc, is_root = 1, rank = -1;

	rc = parse_cmd(argc, argv, &c, print_partition_help);
	if (rc >= 0)
		return rc;
	rc = check_partition_opts(&c);
	if (rc >= 0)
		return rc;
	if (c.parallel)
		setup_parallel(&c);
	if (c.stream)
		return stream_job(&c, t0);
	parsa_err_clear(&err);
	part_dataset_init(&ds);
	part_result_init(&r);
	part_progress_init(&pg, !c.in.quiet);
	rc = load(&c.in, &ds, &pg, &t_load, &err);
	if (rc == 0 && c.init_from) {
		rc = load_init(&c, &ds, &S, &err);
		c.run.init_S = &S;
	}
	if (rc == 0) {
		part_progress_begin(&pg, "partitioning");
		c.run.pu.progress = progress_trampoline;
		c.run.pu.progress_arg = &pg;
		c.run.refine_progress = refine_trampoline;
		c.run.refine_progress_arg = &pg;
		rc = run_job(&c, &ds, &r, &pinfo, &is_root, &rank, &err);
		part_progress_end(&pg);
	}
	if (rc == 0 && is_root) {
		info = (struct part_report_info){
			.data_path = c.in.data, .ds = &ds, .opts = &c.run,
			.res = &r, .method = part_method_name(c.run.method),
			.t_load = t_load, .t_total = part_now() - t0,
			.par = c.parallel ? &pinfo : NULL,
		};
		rc = partition_outputs(&c, &ds, &r, &info, &err);
	}
	parsa_nbrset_release(&S);
	part_result_release(&r);
	part_dataset_release(&ds);
	return rc ? partition_failed(&c, rank, &err, rc) : 0;
}

static void print_eval_help(void)
{
	fputs(usage_eval, stdout);
}

static int eval_run(struct cmd_opts *c, const struct part_dataset *ds,
		    struct part_result *r, struct parsa_err *err)
{
	uint32_t k_seen = 0;
	int rc;

	r->part = malloc(((size_t)ds->g.n_rows + 1) * sizeof(uint32_t));
	r->owner = malloc(((size_t)ds->g.n_cols + 1) * sizeof(uint32_t));
	if (!r->part || !r->owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	rc = part_placement_read(c->placement, ds->g.n_rows, ds->feat_id,
				 ds->g.n_cols, c->have_k ? c->run.pu.k : 0,
				 r->part, r->owner, &k_seen, err);
	if (rc)
		return rc;
	r->k = c->have_k ? c->run.pu.k : k_seen;
	return part_run_metrics(ds, c->run.pu.seed, c->run.random_trials, r,
				err);
}

int part_cmd_eval(int argc, char **argv)
{
	struct cmd_opts c;
	struct part_dataset ds;
	struct part_result r;
	struct part_progress pg;
	struct parsa_err err;
	struct part_report_info info;
	double t0 = part_now(), t_load = 0;
	int rc;

	rc = parse_cmd(argc, argv, &c, print_eval_help);
	if (rc >= 0)
		return rc;
	if (!c.placement)
		return die_usage("%s", "--placement PREFIX is required");
	parsa_err_clear(&err);
	part_dataset_init(&ds);
	part_result_init(&r);
	part_progress_init(&pg, !c.in.quiet);
	rc = load(&c.in, &ds, &pg, &t_load, &err);
	if (rc == 0)
		rc = eval_run(&c, &ds, &r, &err);
	if (rc == 0) {
		info = (struct part_report_info){
			.data_path = c.in.data, .ds = &ds, .opts = NULL,
			.res = &r, .method = "eval", .t_load = t_load,
			.t_total = part_now() - t0,
			.peak_rss_kb = part_peak_rss_kb(),
		};
		rc = emit_report(&info, c.in.json, 0, c.report, &err);
	}
	part_result_release(&r);
	part_dataset_release(&ds);
	return rc ? report_err(&err, rc) : 0;
}

static const struct option gen_longopts[] = {
	{"examples", required_argument, NULL, OPT_EXAMPLES},
	{"features", required_argument, NULL, OPT_FEATURES},
	{"avg-nnz", required_argument, NULL, OPT_AVG_NNZ},
	{"topics", required_argument, NULL, OPT_TOPICS},
	{"topic-frac", required_argument, NULL, OPT_TOPIC_FRAC},
	{"zipf", required_argument, NULL, OPT_ZIPF},
	{"seed", required_argument, NULL, OPT_SEED},
	{"out", required_argument, NULL, OPT_OUT},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int gen_one(struct part_gen_opts *g, const char **out, int *quiet,
		   int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case OPT_EXAMPLES:
		if (part_cli_u64(arg, 1, UINT32_MAX - 1, &g->examples))
			return die_usage("--examples must be in 1..2^32-2, got '%s'", arg);
		return 0;
	case OPT_FEATURES:
		if (part_cli_u64(arg, 1, UINT32_MAX - 1, &g->features))
			return die_usage("--features must be in 1..2^32-2, got '%s'", arg);
		return 0;
	case OPT_AVG_NNZ:
		if (part_cli_dbl(arg, 1e-9, 1e9, &g->avg_nnz))
			return die_usage("--avg-nnz must be a positive number, got '%s'", arg);
		return 0;
	case OPT_TOPICS:
		if (part_cli_u64(arg, 1, 1u << 24, &v))
			return die_usage("--topics must be in 1..16777216, got '%s'", arg);
		g->topics = (uint32_t)v;
		return 0;
	case OPT_TOPIC_FRAC:
		if (part_cli_dbl(arg, 0.0, 1.0, &g->topic_frac))
			return die_usage("--topic-frac must be in [0,1], got '%s'", arg);
		return 0;
	case OPT_ZIPF:
		if (part_cli_dbl(arg, 0.0, 10.0, &g->zipf))
			return die_usage("--zipf must be in [0,10], got '%s'", arg);
		return 0;
	case OPT_SEED:
		if (part_cli_u64(arg, 0, UINT64_MAX, &g->seed))
			return die_usage("--seed must be an unsigned integer, got '%s'", arg);
		return 0;
	case OPT_OUT: *out = arg; return 0;
	case 'q': *quiet = 1; return 0;
	}
	return die_usage("%s", "unknown option");
}

int part_cmd_gen(int argc, char **argv)
{
	struct part_gen_opts g;
	struct part_progress pg;
	struct parsa_err err;
	const char *out = NULL;
	int opt, quiet = 0, rc;

	part_gen_opts_default(&g);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":qh", gen_longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(usage_gen, stdout);
			return 0;
		}
		if (opt == '?')
			return die_usage("unknown option '%s'", argv[optind - 1]);
		if (opt == ':')
			return die_usage("option '%s' needs a value", argv[optind - 1]);
		rc = gen_one(&g, &out, &quiet, opt, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc)
		return die_usage("unexpected argument '%s'", argv[optind]);
	if (!out)
		return die_usage("%s", "--out FILE is required");
	parsa_err_clear(&err);
	part_progress_init(&pg, !quiet && strcmp(out, "-") != 0);
	part_progress_begin(&pg, "generating");
	g.progress = part_progress_cb;
	g.progress_arg = &pg;
	rc = part_gen_write(&g, out, &err);
	part_progress_end(&pg);
	return rc ? report_err(&err, rc) : 0;
}
