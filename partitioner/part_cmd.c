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
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part_cli.h"
#include "part_cmd.h"
#include "part_mem.h"
#include "part_opts.h"
#include "part_out.h"
#include "parsa_err.h"
#include "part_gen.h"
#include "part_parallel.h"
#include "part_placement.h"
#include "part_pool.h"
#include "part_progress.h"
#include "part_reader.h"
#include "part_report.h"
#include "part_run.h"
#include "part_cache.h"
#include "part_shards.h"
#include "part_stream.h"
#include "ps_transport_mpi.h"

#define EXIT_USAGE 2

static const char usage_partition[] =
	"usage: parsa partition DATA -k K [options]\n"
	"\n"
	"Partition DATA into K parts and write PREFIX.examples (part of each\n"
	"example, one per line), PREFIX.features ('feature_id part' per line)\n"
	"and PREFIX.json (the report); print a summary to stdout.\n"
	"\n";

static const char usage_eval[] =
	"usage: parsa eval DATA --placement PREFIX [options]\n"
	"\n"
	"Recompute every metric of an existing placement (PREFIX.examples and\n"
	"PREFIX.features, from any tool) on DATA, with the random baseline.\n"
	"\n";

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

/* Options of partition and eval (the table of part_opts.h) and DATA. */
struct cmd_opts {
	struct part_opts o;
	const char *data;
};

static int load(struct cmd_opts *in, struct part_dataset *ds,
		struct part_progress *pg, double *secs, struct parsa_err *err)
{
	double t0 = part_now();
	int rc;

	part_progress_begin(pg, "reading");
	in->o.read.progress = part_progress_cb;
	in->o.read.progress_arg = pg;
	in->o.read.threads = in->o.run.threads;  /* --threads: every phase */
	/* a binary cache's unused sections are checked while the command
	 * works; part_dataset_verify before anything is written */
	in->o.read.verify_later = 1;
	rc = part_read_file(in->data, &in->o.read, ds, err);
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

static void print_partition_help(void)
{
	fputs(usage_partition, stdout);
	part_opts_help(stdout, PART_OPT_PARTITION);
}

/* Parse argv; returns -1 to continue, else an exit status (help: 0). */
static int parse_cmd(int argc, char **argv, unsigned cmd, struct cmd_opts *c,
		     void (*help)(void))
{
	return part_opts_parse_argv(argc, argv, cmd, &c->o, &c->data, help);
}

/* What --stream supports (see part_stream.h). */
static int check_stream_opts(struct cmd_opts *c)
{
	enum part_format f = c->o.read.format;

	if (f == PART_FMT_AUTO)
		f = part_format_guess(c->data);
	if (f != PART_FMT_AUTO && f != PART_FMT_LIBSVM)
		return die_usage("--stream reads LIBSVM only (one example per line), not %s",
				 part_format_name(f));
	if (part_cache_probe(c->data))
		return die_usage("--stream reads LIBSVM text, and %s is a binary cache (pcsr): give the text file, or drop --stream",
				 c->data);
	if (c->o.init_from || c->o.shards || c->o.run.pu.init_blocks > 0 ||
	    c->o.par.init_sample >= 0 || c->o.par.syncs >= 0 || c->o.run.pu.blocks)
		return die_usage("%s", "--stream: --init-from, --shards, --blocks, --init-blocks, --init-sample and --syncs do not apply (blocks: --block-rows or --mem-limit)");
	if (strcmp(c->data, "-") == 0)
		return die_usage("%s", "--stream needs a file (every worker reads it)");
	if (c->o.run.param_imbalance > 0)
		return die_usage("%s", "--stream: --param-imbalance is not supported (Algorithm 11 runs per server)");
	if (c->o.run.time_limit > 0)
		return die_usage("%s", "--stream: --time-limit does not apply (the streaming pass has no refinement phases)");
	if (c->o.run.guard_slack > 1.0 || c->o.run.objective != PART_OBJ_DEFAULT ||
	    c->o.run.max_memory.v != 0 || c->o.run.max_traffic.v != 0 ||
	    c->o.run.max_tsum.v != 0)
		return die_usage("%s", "--stream: --guard-slack, --objective, --max-memory, --max-traffic and --max-tsum do not apply (the streaming pass has no refinement phases)");
	return -1;
}

static int check_partition_opts(struct cmd_opts *c)
{
	if (!part_opts_given(&c->o, "k"))
		return die_usage("%s", "-k K is required");
	if (c->o.run.max_tsum.v != 0 && c->o.run.objective != PART_OBJ_TMAX)
		return die_usage("%s", "--max-tsum applies to --objective tmax only");
	if (c->o.run.pu.blocks && c->o.run.pu.init_blocks > c->o.run.pu.blocks)
		return die_usage("%s", "--init-blocks cannot exceed --blocks");
	if ((c->o.init_from != NULL) != (c->o.init_data != NULL))
		return die_usage("%s", "--init-from and --init-data go together");
	if (c->o.init_from && c->o.run.method != PART_METHOD_PARSA)
		return die_usage("%s", "--init-from needs --method parsa");
	if (c->o.parallel && c->o.run.method != PART_METHOD_PARSA)
		return die_usage("%s", "--workers/--servers/--tau/--mpi need --method parsa");
	if (c->o.par.init_sample >= 0 && c->o.run.pu.init_blocks > 0)
		return die_usage("%s", "--init-sample and --init-blocks are alternatives");
	if (c->o.run.levels == 2 && (c->o.parallel || c->o.stream || c->o.init_from))
		return die_usage("%s", "--levels 2 does not apply with --workers/--mpi, --stream or --init-from");
	if (c->o.parallel || c->o.stream || c->o.init_from)
		c->o.run.levels = 1; /* (auto: those run one level) */
	if (c->o.examples_ids && (c->o.stream ||
				  c->o.read.format == PART_FMT_LIBSVM ||
				  (c->o.read.format == PART_FMT_AUTO &&
				   part_format_guess(c->data) == PART_FMT_LIBSVM)))
		return die_usage("%s", "--examples-ids needs pairs or SNAP input "
				 "(a LIBSVM example has no id but its line)");
	if (c->o.par.mpi && !part_opts_given(&c->o, "workers"))
		c->o.par.workers = 0; /* one per rank */
	return c->o.stream ? check_stream_opts(c) : -1;
}

/* Incremental start: S from an earlier placement of dataset OLD. */
static int load_init(struct cmd_opts *c, const struct part_dataset *ds,
		     struct parsa_nbrset *S, struct parsa_err *err)
{
	struct part_dataset old;
	uint32_t *part = NULL, *owner = NULL, k_seen = 0;
	int rc;

	part_dataset_init(&old);
	rc = part_read_file(c->o.init_data, &c->o.read, &old, err);
	if (rc == 0) {
		part = malloc(((size_t)old.g.n_rows + 1) * sizeof(uint32_t));
		owner = malloc(((size_t)old.g.n_cols + 1) * sizeof(uint32_t));
		if (!part || !owner)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	if (rc == 0)
		rc = part_placement_read(c->o.init_from, old.g.n_rows, old.feat_id,
					 old.g.n_cols, c->o.run.pu.k, part, owner,
					 &k_seen, err);
	if (rc == 0)
		rc = parsa_nbrset_init(S, ds->g.n_cols, c->o.run.pu.k, err);
	if (rc == 0)
		rc = part_init_from_placement(ds, &old, part, S, err);
	if (rc == 0)
		rc = part_dataset_verify(&old, err);
	free(part);
	free(owner);
	part_dataset_release(&old);
	return rc;
}

/* The output prefix (--out or DATA's name + .k<K>). */
static void out_prefix(const struct cmd_opts *c, uint32_t k, char *buf,
		       size_t len)
{
	if (c->o.out)
		snprintf(buf, len, "%s", c->o.out);
	else
		default_prefix(c->data, k, buf, len);
}

/*
 * Before any work: can every output be written?  PREFIX.examples,
 * .features and .json (their directory exists and is writable, none is a
 * directory), --shards DIR (creatable), --report FILE.
 */
static int check_outputs(const struct cmd_opts *c, struct parsa_err *err)
{
	static const char *const ext[3] = { ".examples", ".features",
					    ".json" };
	char prefix[PATH_MAX], path[PATH_MAX + 16];
	int rc = 0;

	if (c->o.placement) { /* eval */
		return c->o.report ? part_out_check(c->o.report, err) : 0;
	}
	out_prefix(c, c->o.run.pu.k, prefix, sizeof(prefix));
	for (int i = 0; i < 3 && !rc; i++) {
		snprintf(path, sizeof(path), "%s%s", prefix, ext[i]);
		rc = part_out_check(path, err);
	}
	if (!rc && c->o.shards)
		rc = part_out_check_dir(c->o.shards, err);
	if (!rc && c->o.examples_ids) {
		snprintf(path, sizeof(path), "%s.example_ids", prefix);
		rc = part_out_check(path, err);
	}
	return rc;
}

/*
 * PREFIX.example_ids: line i is example i as "ID PART" with the input's
 * own id (pairs: the user; SNAP adjacency: the vertex), or "A B PART" for
 * an edge of SNAP edges mode (its two vertex ids, ascending).
 */
static int write_example_ids(const char *path, const struct part_dataset *ds,
			     const uint32_t *part, struct parsa_err *err)
{
	struct part_out o;
	int rc, bad = 0;

	if (!ds->ex_id && ds->map && ds->format != PART_FMT_LIBSVM &&
	    (ds->format != PART_FMT_SNAP || ds->graph != PART_GRAPH_EDGES))
		return parsa_fail(err, PARSA_EINVAL, "--examples-ids: a binary "
				  "cache holds no example ids; give the "
				  "original pairs or SNAP file");
	if (!ds->ex_id && (ds->format != PART_FMT_SNAP ||
			   ds->graph != PART_GRAPH_EDGES))
		return parsa_fail(err, PARSA_EINVAL,
				  "--examples-ids needs pairs or SNAP input "
				  "(a LIBSVM example has no id but its line)");
	rc = part_out_open(&o, path, err);
	if (rc)
		return rc;
	for (uint32_t e = 0; e < ds->g.n_rows && !bad; e++) {
		if (ds->ex_id) {
			bad = fprintf(o.f, "%" PRIu64 " %u\n", ds->ex_id[e],
				      part[e]) < 0;
		} else {
			uint64_t a = ds->g.row_ptr[e];
			uint64_t x = ds->feat_id[ds->g.col[a]];
			uint64_t y = ds->feat_id[ds->g.col[a + 1]];

			bad = fprintf(o.f, "%" PRIu64 " %" PRIu64 " %u\n",
				      x < y ? x : y, x < y ? y : x,
				      part[e]) < 0;
		}
	}
	if (bad) {
		part_out_abort(&o);
		return parsa_fail(err, PARSA_EIO, "%s: write error", path);
	}
	return part_out_commit(&o, err);
}

static int partition_outputs(struct cmd_opts *c, const struct part_dataset *ds,
			     const struct part_result *r,
			     struct part_report_info *info,
			     struct part_progress *pg, struct parsa_err *err)
{
	char prefix[PATH_MAX], json_path[PATH_MAX + 16];
	int rc;

	/* (the bar's line is cleared before the report is printed) */
	part_progress_phase(pg, "writing");
	out_prefix(c, r->k, prefix, sizeof(prefix));
	rc = part_placement_write(prefix, r->part, ds->g.n_rows, r->owner,
				  ds->feat_id, ds->g.n_cols, c->o.run.threads,
				  err);
	if (rc == 0 && c->o.examples_ids) {
		snprintf(json_path, sizeof(json_path), "%s.example_ids",
			 prefix);
		rc = write_example_ids(json_path, ds, r->part, err);
	}
	if (rc == 0 && c->o.shards)
		rc = part_write_shards(c->o.shards, c->data, ds, r->part,
				       r->owner, r->k, err);
	part_progress_end(pg);
	if (rc)
		return rc;
	snprintf(json_path, sizeof(json_path), "%s.json", prefix);
	info->peak_rss_kb = info->mem ? part_mem_peak_kb(info->mem)
				      : part_peak_rss_kb();
	return emit_report(info, c->o.json, c->o.quiet, json_path, err);
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
	if (c->o.par.mpi) {
		install_term_handler();
		if (env_rank() > 0)
			c->o.quiet = 1;
	}
	if (getenv("PARSA_TEST_DIE_RANK") || getenv("PARSA_TEST_GARBAGE_RANK"))
		c->o.par.test_hook = test_hook;
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
	if (!c->o.parallel)
		return part_run(ds, &c->o.run, r, err);
	rc = part_par_run(ds, &c->o.run, &c->o.par, r, pi, is_root, rank,
				  err);
	if (!c->o.par.mpi)
		*rank = -1;
	return rc;
}

/* part_run_opts.phase: the memory peaks per phase (part_progress.h).
 * What the last phase freed goes back to the system first: glibc keeps
 * freed blocks below its mmap threshold (Algorithm 13's cost lists, a
 * block's arrays) in its heaps, where the next phases' resident set
 * would carry them. */
static void mem_phase(void *arg, enum part_phase p)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	part_mem_phase(arg, PART_MEM_LOAD + 1 + (int)p);
}

/* part_run_opts.phase of `partition`: the memory peaks, and the bar's
 * label for each phase (the refinement's and Algorithm 13's bars move
 * with their steps; Algorithm 11 and the metrics show their name). */
struct run_phases {
	struct part_mem_phases *mem;
	struct part_progress *pg;
};

static void run_phases(void *arg, enum part_phase p)
{
	struct run_phases *rp = arg;

	mem_phase(rp->mem, p);
	if (p == PART_PHASE_REFINE && rp->pg->label != refining)
		part_progress_begin(rp->pg, refining);
	else if (p == PART_PHASE_V)
		part_progress_phase(rp->pg, "placing features");
	else if (p == PART_PHASE_METRICS)
		part_progress_phase(rp->pg, "measuring");
}

/* Arrays of 1 MiB and more in mappings of their own, always: glibc
 * raises its mmap threshold (up to 32 MiB) each time a mapped block is
 * freed, after which the phases' per-feature and per-row arrays (8-15
 * MiB each at 100M nonzeros) came from the heap, and freed there they
 * left holes malloc_trim cannot give back.  Read from text (whose reader
 * frees large buffers), the refinement's peak at 100M, k=64 was 597-610
 * MiB with the dynamic threshold, 573 MiB with this (the binary cache:
 * 559 MiB either way). */
static void fixed_mmap_threshold(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

/* Id maps from text of at least this size go to a file while the
 * partition works (part_dataset_spill_ids): 1 MiB = 128Ki features (at
 * 10M nonzeros the 200k features' 1.6 MB map was the difference between
 * partition U on 1 thread over and under 1.3x the CSR; writing it takes
 * a millisecond); PARSA_ID_SPILL_MIN=BYTES in the environment sets
 * another floor. */
#define SPILL_MIN_BYTES (1u << 20)

/* Error exit; under MPI with the rank, and without finalising MPI. */
static int partition_failed(const struct cmd_opts *c, int rank,
			    const struct parsa_err *err, int rc)
{
	const char *msg;

	if (!c->o.par.mpi)
		return report_err(err, rc);
	if (rank < 0 || env_rank() >= 0) /* mpirun's rank when it has one */
		rank = env_rank();
	msg = err->msg[0] ? err->msg : parsa_strerror(rc);
	if (rank < 0) /* not under mpirun, and MPI never started */
		fprintf(stderr, "parsa: %s\n", msg);
	else
		fprintf(stderr, "parsa: rank %d: %s\n", rank, msg);
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
	so.k = c->o.run.pu.k;
	so.rule = c->o.run.pu.rule;
	so.imbalance = c->o.run.pu.imbalance;
	so.block_imbalance = c->o.run.pu.block_imbalance;
	so.seed = c->o.run.pu.seed;
	so.sweeps = c->o.run.sweeps;
	so.random_trials = c->o.run.random_trials;
	so.block_rows = c->o.block_rows;
	so.mem_limit = c->o.mem_limit;
	part_progress_init(&pg, !c->o.quiet);
	part_progress_begin(&pg, "streaming");
	so.progress = progress_trampoline;
	so.progress_arg = &pg;
	part_stream_result_init(&r);
	part_result_init(&pr);
	rc = part_stream_run(c->data, &so, &c->o.par, &r, &pinfo,
				     &is_root, &rank, &err);
	part_progress_end(&pg);
	if (rc == 0 && is_root) {
		out_prefix(c, r.k, prefix, sizeof(prefix));
		rc = part_placement_write(prefix, r.part, r.n_rows, r.owner,
					  r.feat_id, r.n_feat,
					  c->o.run.threads, &err);
	}
	if (rc == 0 && is_root) {
		pr.k = r.k;
		pr.m = r.m;
		pr.rnd = r.rnd;
		pr.t_partition_u = r.t_partition_u;
		pr.t_partition_v = r.t_partition_v;
		pr.t_metrics = r.t_metrics;
		/* the refinement phases need the whole graph: not run */
		c->o.run.refine_rounds = 0;
		c->o.run.refine_passes = 0;
		c->o.run.refine_ppasses = 0;
		c->o.run.restream = 0;
		c->o.run.ml_levels = 0;
		c->o.run.ml_scratch = 0;
		info = (struct part_report_info){
			.data_path = c->data, .opts = &c->o.run, .res = &pr,
			.method = "parsa", .t_total = part_now() - t0,
			.peak_rss_kb = part_peak_rss_kb(), .par = &pinfo,
			.stream = &r, .mem_limit = c->o.mem_limit,
		};
		snprintf(json_path, sizeof(json_path), "%s.json", prefix);
		rc = emit_report(&info, c->o.json, c->o.quiet, json_path,
				 &err);
	}
	part_stream_result_release(&r);
	if (!c->o.par.mpi)
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
	struct part_mem_phases mem;
	struct run_phases phases = { &mem, &pg };
	double t0 = part_now(), t_load = 0;
	int rc, is_root = 1, rank = -1;

	rc = parse_cmd(argc, argv, PART_OPT_PARTITION, &c,
		       print_partition_help);
	if (rc >= 0)
		return rc;
	rc = check_partition_opts(&c);
	if (rc >= 0)
		return rc;
	if (c.o.parallel)
		setup_parallel(&c);
	parsa_err_clear(&err);
	if (env_rank() <= 0 && check_outputs(&c, &err) != 0)
		return partition_failed(&c, -1, &err, PARSA_EIO);
	/* MPI before the data: every wait after it has a deadline */
	if (c.o.par.mpi && (rc = ps_mpi_start(&err)) != 0)
		return partition_failed(&c, -1, &err, rc);
	if (c.o.par.mpi && env_long("PARSA_TEST_STALL_RANK") == env_rank() &&
	    env_rank() >= 0) /* tests only: this rank stalls while loading */
		raise(SIGSTOP);
	if (c.o.stream) {
		rc = stream_job(&c, t0);
		if (rc == 0 && c.o.par.mpi)
			ps_mpi_finish();
		return rc;
	}
	part_dataset_init(&ds);
	part_result_init(&r);
	part_progress_init(&pg, !c.o.quiet);
	fixed_mmap_threshold();
	part_mem_phases_init(&mem);
	rc = load(&c, &ds, &pg, &t_load, &err);
	if (rc == 0 && !c.o.parallel) /* before the work, not after 70 s */
		rc = part_mem_check(&c.o.run, ds.g.n_rows, ds.g.n_cols,
				    parsa_graph_nnz(&ds.g), c.data, &err);
	if (rc == 0 && c.o.run.pu.k > ds.g.n_rows && !c.o.quiet &&
	    env_rank() <= 0)
		fprintf(stderr, "parsa: note: -k %u is more than the %u examples: "
			"at least %u parts get no example (allowed)\n",
			c.o.run.pu.k, ds.g.n_rows, c.o.run.pu.k - ds.g.n_rows);
	/* the id maps wait in a file until the placement is written */
	if (rc == 0) {
		long min = env_long("PARSA_ID_SPILL_MIN");

		part_dataset_spill_ids(&ds, NULL, min >= 0 ? (size_t)min
						   : SPILL_MIN_BYTES);
	}
	if (rc == 0 && c.o.init_from) {
		rc = load_init(&c, &ds, &S, &err);
		c.o.run.init_S = &S;
	}
	if (rc == 0) {
		part_progress_begin(&pg, "partitioning");
		c.o.run.pu.progress = progress_trampoline;
		c.o.run.pu.progress_arg = &pg;
		c.o.run.refine_progress = refine_trampoline;
		c.o.run.refine_progress_arg = &pg;
		c.o.run.phase = run_phases;
		c.o.run.phase_arg = &phases;
		c.o.run.metrics_progress = progress_trampoline;
		c.o.run.metrics_progress_arg = &pg;
		rc = run_job(&c, &ds, &r, &pinfo, &is_root, &rank, &err);
		part_mem_phase(&mem, -1);
		part_progress_end(&pg);
	}
	if (rc == 0 && is_root)
		rc = part_dataset_verify(&ds, &err);
	if (rc == 0 && is_root) {
		info = (struct part_report_info){
			.data_path = c.data, .ds = &ds, .opts = &c.o.run,
			.res = &r, .method = part_method_name(c.o.run.method),
			.t_load = t_load, .t_total = part_now() - t0,
			.par = c.o.parallel ? &pinfo : NULL,
			.per_part = c.o.per_part, .mem = &mem,
		};
		rc = partition_outputs(&c, &ds, &r, &info, &pg, &err);
	}
	parsa_nbrset_release(&S);
	part_result_release(&r);
	part_dataset_release(&ds);
	if (rc == 0 && c.o.par.mpi)
		ps_mpi_finish();
	return rc ? partition_failed(&c, rank, &err, rc) : 0;
}

static void print_eval_help(void)
{
	fputs(usage_eval, stdout);
	part_opts_help(stdout, PART_OPT_EVAL);
}

static int eval_run(struct cmd_opts *c, const struct part_dataset *ds,
		    struct part_result *r, struct part_progress *pg,
		    struct parsa_err *err)
{
	uint32_t k_seen = 0;
	int rc;

	r->part = malloc(((size_t)ds->g.n_rows + 1) * sizeof(uint32_t));
	r->owner = malloc(((size_t)ds->g.n_cols + 1) * sizeof(uint32_t));
	if (!r->part || !r->owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	rc = part_placement_read(c->o.placement, ds->g.n_rows, ds->feat_id,
				 ds->g.n_cols, part_opts_given(&c->o, "k") ? c->o.run.pu.k : 0,
				 r->part, r->owner, &k_seen, err);
	if (rc)
		return rc;
	r->k = part_opts_given(&c->o, "k") ? c->o.run.pu.k : k_seen;
	part_progress_phase(pg, "measuring");
	rc = part_run_metrics(ds, c->o.run.pu.seed, c->o.run.random_trials,
			      c->o.run.threads, progress_trampoline, pg, r, err);
	part_progress_end(pg);
	return rc;
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

	rc = parse_cmd(argc, argv, PART_OPT_EVAL, &c, print_eval_help);
	if (rc >= 0)
		return rc;
	if (!c.o.placement)
		return die_usage("%s", "--placement PREFIX is required");
	parsa_err_clear(&err);
	if (check_outputs(&c, &err) != 0)
		return report_err(&err, PARSA_EIO);
	part_dataset_init(&ds);
	part_result_init(&r);
	part_progress_init(&pg, !c.o.quiet);
	rc = load(&c, &ds, &pg, &t_load, &err);
	if (rc == 0)
		rc = eval_run(&c, &ds, &r, &pg, &err);
	if (rc == 0)
		rc = part_dataset_verify(&ds, &err);
	if (rc == 0) {
		info = (struct part_report_info){
			.data_path = c.data, .ds = &ds, .opts = NULL,
			.res = &r, .method = "eval", .t_load = t_load,
			.t_total = part_now() - t0,
			.peak_rss_kb = part_peak_rss_kb(),
			.per_part = c.o.per_part,
		};
		rc = emit_report(&info, c.o.json, c.o.quiet, c.o.report, &err);
	}
	part_result_release(&r);
	part_dataset_release(&ds);
	return rc ? report_err(&err, rc) : 0;
}

enum {
	OPT_EXAMPLES = 256, OPT_FEATURES, OPT_AVG_NNZ, OPT_TOPICS,
	OPT_TOPIC_FRAC, OPT_ZIPF, OPT_SEED, OPT_OUT,
};

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
