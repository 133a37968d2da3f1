/*
 * train_main: `parsa train` (train_main.h): options, data and placement
 * loading, the per-pass JSON lines, the model file.
 *
 * Under --mpi with a placement (PREFIX or URL) every rank reads the
 * placement, then (once MPI is up and its rank known, train_opts.load)
 * parses only the examples of the workers it hosts (part % nranks ==
 * rank) and skips the other lines unparsed; with --placement random (which
 * deals every feature) and in the thread mode the whole file is read.
 * Compact feature ids then follow the order of PREFIX.features, which is
 * the data's order of first appearance for every placement that `parsa
 * partition` or `parsa serve` wrote (both write compact-id order), so the
 * keys, blocks and results are those of a full read.  Rank 0 prints and
 * writes the outputs, the others stay quiet.  A
 * failed MPI run is not finalised (a peer may be dead): the process ends
 * with _exit(1) after printing "parsa: rank R: message".
 */
#include "part_cli.h"
#include "train_main.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parsa_baseline.h"
#include "part_cache.h"
#include "part_io.h"
#include "part_out.h"
#include "part_placement.h"
#include "part_reader.h"
#include "parsa_metrics.h"
#include "train_data.h"
#include "train_fetch.h"
#include "train_implicit.h"
#include "train_run.h"

#define EXIT_USAGE 2

static const char usage[] =
	"usage: parsa train DATA --placement PREFIX|URL|random [options]\n"
	"\n"
	"Train sparse L1-regularized logistic regression (delayed block\n"
	"proximal gradient, thesis ch. 6) on the parameter server: worker i\n"
	"trains on the examples the placement gives part i, server i owns\n"
	"the features it gives part i.  Prints one JSON object per data pass\n"
	"(the last line of stdout is the final one).\n"
	"\n"
	"  --placement P     PREFIX (PREFIX.examples + PREFIX.features from\n"
	"                    'parsa partition'), http://HOST:PORT/v1/jobs/ID\n"
	"                    (the service's placement), or random (examples\n"
	"                    shuffled and dealt round-robin, features to\n"
	"                    uniformly random servers; needs --workers)\n"
	"  --passes P        data passes (default 10)\n"
	"  --lambda L        L1 weight: minimise sum logloss + L ||w||_1\n"
	"                    (default 1; liblinear -s 6 -c 1)\n"
	"  --tau T           bounded delay in blocks (default 0)\n"
	"  --consistency M   tau:T (the default, as --tau T: a barrier and a\n"
	"                    PROX call per block), bsp, ssp:S or essp:S (stale\n"
	"                    synchronous parallel, S = 0 is bsp; eager: servers\n"
	"                    push changed weights to the workers using them):\n"
	"                    servers apply PROX when every worker finished the\n"
	"                    block; S and T are capped at blocks - 1\n"
	"  --blocks B        feature blocks per pass (default 8)\n"
	"  --workers K       machines (default: the placement's k)\n"
	"  --kkt             KKT filter: skip zero weights whose gradient\n"
	"                    stays inside [-L, L] (every 5th pass is full)\n"
	"  --mpi             run over MPI: mpirun -np N parsa train ... --mpi\n"
	"                    (rank r hosts worker and server i for i % N == r\n"
	"                    and parses only those workers' examples; with\n"
	"                    --placement random every rank reads all of DATA)\n"
	"  --test FILE       LIBSVM test set: AUC per pass\n"
	"  --link BW,LAT[,nic]  emulated link between machines, e.g. 1gbit,0.1ms\n"
	"                    (BW inf: latency only):\n"
	"                    remote messages are delayed (timings emulated);\n"
	"                    a token bucket per machine pair, or with ,nic one\n"
	"                    per sending machine (a shared NIC)\n"
	"  --model FILE      write the final model, 'feature_id weight' lines\n"
	"                    (non-zero weights)\n"
	"  --log FILE        write the per-pass objects as JSON lines\n"
	"  --seed S          seed of the random placement and of the sampled\n"
	"                    negatives of pairs/SNAP (default 1)\n"
	"  --format F        auto (default: guessed as by 'parsa partition'),\n"
	"                    libsvm, pairs or snap; pairs and SNAP are trained\n"
	"                    as implicit feedback: a positive per (user, item)\n"
	"                    and one sampled negative (seeded by --seed),\n"
	"                    features item and user bias (README \"Trainer\")\n"
	"  --graph M         SNAP: adjacency (default; edges is refused)\n"
	"  --timeout S       parameter-server reply timeout in s (default 60)\n"
	"  -q, --quiet       print only the final object\n"
	"  -h, --help        this text\n";

struct cli {
	const char *data, *placement, *test, *model, *log;
	int have_tau, have_cons;
	struct train_opts o;
	uint32_t workers;
	uint64_t seed;
	int quiet;
	FILE *logf;
	int is_root;
	struct part_read_opts ro; /* --format, --graph */
	int have_graph;
	int implicit;             /* DATA is pairs or SNAP */
	struct train_implicit imp;
	double tsum_pairs, tsum;  /* T_sum of the pairs placement and of the
				     converted examples (implicit only) */
};

/* The MPI rows loader (train_opts.load): DATA against the placement. */
struct loader {
	const struct cli *c;
	struct train_data *d;
	const uint32_t *part;
	uint32_t n_pl; /* examples of the placement */
};

static int die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "parsa: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(run 'parsa train --help' for usage)\n");
	return EXIT_USAGE;
}

enum {
	OPT_PLACEMENT = 256, OPT_PASSES, OPT_LAMBDA, OPT_TAU, OPT_BLOCKS,
	OPT_WORKERS, OPT_MPI, OPT_TEST, OPT_LINK, OPT_MODEL, OPT_LOG,
	OPT_SEED, OPT_FORMAT, OPT_TIMEOUT, OPT_KKT, OPT_CONSISTENCY, OPT_GRAPH,
};

static const struct option longopts[] = {
	{"placement", required_argument, NULL, OPT_PLACEMENT},
	{"passes", required_argument, NULL, OPT_PASSES},
	{"lambda", required_argument, NULL, OPT_LAMBDA},
	{"tau", required_argument, NULL, OPT_TAU},
	{"consistency", required_argument, NULL, OPT_CONSISTENCY},
	{"blocks", required_argument, NULL, OPT_BLOCKS},
	{"workers", required_argument, NULL, OPT_WORKERS},
	{"mpi", no_argument, NULL, OPT_MPI},
	{"kkt", no_argument, NULL, OPT_KKT},
	{"test", required_argument, NULL, OPT_TEST},
	{"link", required_argument, NULL, OPT_LINK},
	{"model", required_argument, NULL, OPT_MODEL},
	{"log", required_argument, NULL, OPT_LOG},
	{"seed", required_argument, NULL, OPT_SEED},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"graph", required_argument, NULL, OPT_GRAPH},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int parse_one(struct cli *c, int opt, const char *arg)
{
	struct parsa_err err = {0};
	uint64_t v;

	switch (opt) {
	case OPT_PLACEMENT: c->placement = arg; return 0;
	case OPT_TEST: c->test = arg; return 0;
	case OPT_MODEL: c->model = arg; return 0;
	case OPT_LOG: c->log = arg; return 0;
	case OPT_MPI: c->o.mpi = 1; return 0;
	case OPT_KKT: c->o.kkt = 1; return 0;
	case 'q': c->quiet = 1; return 0;
	case OPT_PASSES:
		if (part_cli_u64(arg, 1, 1000000, &v))
			return die_usage("--passes must be an integer in 1..1000000, got '%s'", arg);
		c->o.passes = (uint32_t)v;
		return 0;
	case OPT_LAMBDA:
		if (part_cli_dbl(arg, 0, 1e300, &c->o.lambda))
			return die_usage("--lambda must be a number >= 0, got '%s'", arg);
		return 0;
	case OPT_TAU: /* the rule of partition and HTTP: 0..1000000 or inf */
		if (strcmp(arg, "inf") == 0)
			v = 1000000;
		else if (part_cli_u64(arg, 0, 1000000, &v))
			return die_usage("--tau must be an integer in 0..1000000 or inf, got '%s'", arg);
		c->o.tau = (int)v;
		c->have_tau = 1;
		return 0;
	case OPT_CONSISTENCY:
		if (ps_consistency_parse(arg, &c->o.cons, &err))
			return die_usage("--%s", err.msg);
		if (c->o.cons.model == PS_CONS_TAU)
			c->o.tau = c->o.cons.bound < 0 ? 1000000
						       : c->o.cons.bound;
		c->have_cons = 1;
		return 0;
	case OPT_BLOCKS:
		if (part_cli_u64(arg, 1, 1000000, &v))
			return die_usage("--blocks must be an integer in 1..1000000, got '%s'", arg);
		c->o.blocks = (uint32_t)v;
		return 0;
	case OPT_WORKERS:
		if (part_cli_u64(arg, 1, 4096, &v))
			return die_usage("--workers must be an integer in 1..4096, got '%s'", arg);
		c->workers = (uint32_t)v;
		return 0;
	case OPT_SEED:
		if (part_cli_u64(arg, 0, UINT64_MAX, &c->seed))
			return die_usage("--seed must be an unsigned integer, got '%s'", arg);
		return 0;
	case OPT_TIMEOUT:
		if (part_cli_dbl(arg, 0.001, 1e6, &c->o.timeout_s))
			return die_usage("--timeout must be a positive number, got '%s'", arg);
		return 0;
	case OPT_FORMAT:
		if (part_format_parse(arg, &c->ro.format))
			return die_usage("--format must be auto, libsvm, pairs or snap, got '%s'", arg);
		return 0;
	case OPT_GRAPH:
		if (part_graph_mode_parse(arg, &c->ro.graph))
			return die_usage("--graph must be adjacency or edges, got '%s'", arg);
		c->have_graph = 1;
		return 0;
	case OPT_LINK:
		if (ps_link_parse(arg, &c->o.link, &err))
			return die_usage("%s", err.msg);
		c->o.have_link = 1;
		return 0;
	}
	return die_usage("%s", "unknown option");
}

/* -1 to continue, else an exit status. */
static int parse_args(int argc, char **argv, struct cli *c)
{
	int opt;

	memset(c, 0, sizeof(*c));
	train_opts_default(&c->o);
	c->seed = 1;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		int rc;

		if (opt == 'h') {
			fputs(usage, stdout);
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
	c->data = argv[optind];
	if (!c->placement)
		return die_usage("%s", "--placement PREFIX|URL|random is required");
	if (strcmp(c->placement, "random") == 0 && !c->workers)
		return die_usage("%s", "--placement random needs --workers K");
	if (c->have_tau && c->have_cons)
		return die_usage("%s", "--tau and --consistency both given "
				 "(--consistency tau:T is --tau T)");
	return -1;
}

/* ------------------------------------------------------------ placement */

/* part/owner from files, URL or random; *k set. */
/* *prefix = the placement's file prefix: c->placement itself, or (a URL)
 * the temporary copy fetched into buf, which the caller cleans up with
 * train_fetch_cleanup when *prefix == buf. */
static int placement_prefix(const struct cli *c, char *buf, size_t len,
			    const char **prefix, struct parsa_err *err)
{
	int rc = 0;

	*prefix = c->placement;
	if (train_is_url(c->placement)) {
		rc = train_fetch_placement(c->placement, buf, len, 30.0, err);
		if (!rc)
			*prefix = buf;
	}
	return rc;
}

/* In msg, the fetched copy's file names become what the user named:
 * "TMP/placement.examples" -> "URL/placement/examples" (and features). */
static void name_url(char *msg, size_t cap, const char *fetched,
		     const char *url)
{
	static const char *const what[2] = {"examples", "features"};
	size_t ul = strlen(url);

	while (ul > 0 && url[ul - 1] == '/')
		ul--;
	for (int i = 0; i < 2; i++) {
		char from[PATH_MAX + 16], to[2048], out[PARSA_ERR_MSG];
		char *at;

		snprintf(from, sizeof(from), "%s.%s", fetched, what[i]);
		snprintf(to, sizeof(to), "%.*s/placement/%s", (int)ul, url,
			 what[i]);
		while ((at = strstr(msg, from)) != NULL) {
			size_t pre = (size_t)(at - msg), tl = strlen(to);
			size_t rest = strlen(at + strlen(from));

			if (pre + tl + rest + 1 > sizeof(out) ||
			    pre + tl + rest + 1 > cap)
				break;
			memcpy(out, msg, pre);
			memcpy(out + pre, to, tl);
			memcpy(out + pre + tl, at + strlen(from), rest + 1);
			memcpy(msg, out, pre + tl + rest + 1);
		}
	}
}

static int load_placement(struct cli *c, uint32_t n_rows,
			  const uint64_t *feat_id, uint32_t n_cols,
			  uint32_t *part, uint32_t *owner, uint32_t *k,
			  struct parsa_err *err)
{
	char fetched[PATH_MAX];
	const char *prefix;
	struct parsa_err perr = {0};
	uint32_t k_seen = 0;
	int rc;

	if (strcmp(c->placement, "random") == 0) {
		*k = c->workers;
		/* the placement of partition --method random, same seed */
		return parsa_random_placement(n_rows, n_cols, *k,
					      c->seed, part, owner, err);
	}
	rc = placement_prefix(c, fetched, sizeof(fetched), &prefix, err);
	if (rc)
		return rc;
	rc = part_placement_read(prefix, n_rows, feat_id, n_cols,
				 c->workers, part, owner, &k_seen, &perr);
	if (prefix == fetched) {
		name_url(perr.msg, sizeof(perr.msg), fetched, c->placement);
		train_fetch_cleanup(fetched);
	}
	if (rc == PARSA_EIO)
		return parsa_fail(err, rc, "%s", perr.msg);
	if (rc)
		return parsa_fail(err, rc, "placement %s does not match %s: %s",
				  c->placement, c->data, perr.msg);
	*k = c->workers ? c->workers : k_seen;
	return 0;
}

/*
 * MPI with a placement: everything but the rows, without reading DATA.
 * The features' compact ids are their order in PREFIX.features (d->map,
 * d->feat_id, d->n_cols); n_pl = lines of PREFIX.examples; then
 * part_placement_read checks both files against that (every malformed
 * line, part ids, k) and fills part and owner.  d->n_rows = n_pl, rows
 * pending (load_rows checks DATA's count).
 */
static int feature_ids(const char *path, struct part_idmap *m,
		       struct parsa_err *err)
{
	struct part_lines *l = NULL;
	const char *line;
	size_t len;
	int eof = 0, rc = part_lines_open(&l, path, err);

	while (!rc) {
		size_t i = 0;
		uint64_t id = 0;
		uint32_t cid;
		int isnew = 0, digits = 0;

		rc = part_lines_next(l, &line, &len, &eof, err);
		if (rc || eof)
			break;
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		for (; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
			if (id > (UINT64_MAX - (uint64_t)(line[i] - '0')) / 10)
				break;
			id = id * 10 + (uint64_t)(line[i] - '0');
			digits = 1;
		}
		if (!digits)
			break; /* part_placement_read reports it */
		rc = part_idmap_get(m, id, &cid, &isnew, "features", err);
		if (!rc && !isnew)
			rc = parsa_fail_at(err, PARSA_EPARSE, part_lines_name(l),
					   part_lines_lineno(l), 1, "feature "
					   "%llu listed twice (first on line "
					   "%u)", (unsigned long long)id,
					   cid + 1);
	}
	part_lines_close(l);
	return rc;
}

static int count_lines(const char *path, uint32_t *n, struct parsa_err *err)
{
	struct part_lines *l = NULL;
	const char *line;
	size_t len;
	int eof = 0, rc = part_lines_open(&l, path, err);

	*n = 0;
	while (!rc) {
		rc = part_lines_next(l, &line, &len, &eof, err);
		if (rc || eof)
			break;
		if (*n == UINT32_MAX - 1)
			rc = parsa_fail(err, PARSA_ERANGE, "%s: too many lines",
					path);
		else
			++*n;
	}
	part_lines_close(l);
	return rc;
}

static int placement_files(struct cli *c, const char *prefix,
			   struct train_data *d, uint32_t **part,
			   uint32_t **owner, uint32_t *k, struct parsa_err *err)
{
	size_t n = strlen(prefix) + sizeof(".examples");
	char *name = malloc(n + 1);
	uint32_t n_pl = 0, k_seen = 0;
	int rc = 0;

	if (!name)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	snprintf(name, n + 1, "%s.examples", prefix);
	rc = count_lines(name, &n_pl, err);
	snprintf(name, n + 1, "%s.features", prefix);
	if (!rc)
		rc = feature_ids(name, &d->map, err);
	free(name);
	if (rc)
		return rc;
	d->n_cols = d->map.n;
	d->feat_id = malloc(((size_t)d->n_cols + 1) * sizeof(uint64_t));
	*part = malloc(((size_t)n_pl + 1) * sizeof(uint32_t));
	*owner = malloc(((size_t)d->n_cols + 1) * sizeof(uint32_t));
	if (!d->feat_id || !*part || !*owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	if (d->n_cols)
		memcpy(d->feat_id, d->map.ids,
		       (size_t)d->n_cols * sizeof(uint64_t));
	rc = part_placement_read(prefix, n_pl, d->feat_id, d->n_cols,
				 c->workers, *part, *owner, &k_seen, err);
	if (!rc && n_pl == 0)
		rc = parsa_fail(err, PARSA_EINVAL, "%s.examples: no examples",
				prefix);
	d->n_rows = n_pl;
	*k = c->workers ? c->workers : k_seen;
	return rc;
}

static int load_placement_only(struct cli *c, struct train_data *d,
			       uint32_t **part, uint32_t **owner, uint32_t *k,
			       struct parsa_err *err)
{
	char fetched[PATH_MAX];
	const char *prefix;
	struct parsa_err perr = {0};
	int rc;

	rc = placement_prefix(c, fetched, sizeof(fetched), &prefix, err);
	if (rc)
		return rc;
	rc = placement_files(c, prefix, d, part, owner, k, &perr);
	if (prefix == fetched) {
		name_url(perr.msg, sizeof(perr.msg), fetched, c->placement);
		train_fetch_cleanup(fetched);
	}
	if (rc == PARSA_EIO || rc == PARSA_ENOMEM)
		return parsa_fail(err, rc, "%s", perr.msg);
	if (rc)
		return parsa_fail(err, rc, "placement %s does not match %s: %s",
				  c->placement, c->data, perr.msg);
	return 0;
}

/* train_opts.load: this rank's rows of DATA (train_data_read_part). */
static int load_rows(void *arg, uint32_t rank, uint32_t nranks,
		     struct parsa_err *err)
{
	struct loader *ld = arg;
	struct parsa_err e = {0};
	int rc;

	ld->d->n_rows = 0;
	rc = train_data_read_part(ld->c->data, ld->part, ld->n_pl, rank,
				  nranks, ld->d, &e);
	if (rc == PARSA_EPARSE && strstr(e.msg, "is not in the placement"))
		return parsa_fail(err, rc, "placement %s does not match %s: %s",
				  ld->c->placement, ld->c->data, e.msg);
	if (rc)
		return parsa_fail(err, rc, "%s", e.msg);
	if (ld->d->n_rows != ld->n_pl)
		return parsa_fail(err, PARSA_EPARSE, "placement %s does not "
				  "match %s: %u examples in the placement, %u "
				  "in the data", ld->c->placement,
				  ld->c->data, ld->n_pl, ld->d->n_rows);
	return 0;
}

/* ---------------------------------------------------------------- output */

/* Emulated hosts (scripts/netns-cluster.sh, scripts/train-hosts.sh):
 * they describe the links in the environment of every rank. */
static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static int on_hosts(void)
{
	return getenv("PARSA_NETNS_HOSTS") != NULL;
}

/* The link the timings are emulated on, or null. */
static json_t *link_json(const struct cli *c)
{
	json_t *l;

	if (!c->o.have_link && !on_hosts())
		return json_null();
	l = json_object();
	if (!l)
		return json_null();
	json_object_set_new(l, "emulated", json_true());
	if (on_hosts()) {
		const char *delay = env_or("PARSA_NETNS_DELAY", "0us");
		int netem = strcmp(env_or("PARSA_NETNS_NETEM", "0"), "1") == 0;

		json_object_set_new(l, "via", json_string("netns"));
		json_object_set_new(l, "hosts", json_integer(strtol(
			env_or("PARSA_NETNS_HOSTS", "0"), NULL, 10)));
		json_object_set_new(l, "nominal", json_string(
			env_or("PARSA_HOSTS_LINK", "")));
		json_object_set_new(l, "scale", json_real(strtod(
			env_or("PARSA_HOSTS_SCALE", "1"), NULL)));
		json_object_set_new(l, "rate_bits_per_s", json_real(strtod(
			env_or("PARSA_NETNS_RATE", "0"), NULL)));
		json_object_set_new(l, "delay", json_string(delay));
		json_object_set_new(l, "delay_via", json_string(
			strcmp(delay, "0us") == 0 ? "none"
			: netem ? "netem"
			: c->o.have_link ? "transport" : "not applied"));
	} else {
		json_object_set_new(l, "via", json_string("transport"));
	}
	if (c->o.have_link) {
		json_object_set_new(l, "transport_bits_per_s",
				    isinf(c->o.link.bits_per_s)
					    ? json_null()
					    : json_real(c->o.link.bits_per_s));
		json_object_set_new(l, "transport_latency_s",
				    json_real(c->o.link.latency_s));
		json_object_set_new(l, "transport_model", json_string(
			c->o.link.per_machine ? "nic" : "pair"));
	}
	return l;
}

static json_t *hist_json(const uint64_t *h)
{
	json_t *a = json_array();
	int last = -1;

	for (int b = 0; b < PS_STALE_BUCKETS; b++)
		if (h[b])
			last = b;
	for (int b = 0; a && b <= last; b++)
		json_array_append_new(a, json_integer((json_int_t)h[b]));
	return a ? a : json_null();
}

static json_t *pass_json(const struct cli *c, const struct train_pass *p)
{
	const struct train_traffic *t = &p->t;
	json_t *j = json_object();
	struct ps_consistency eff = c->o.cons;
	char cons[32];

	if (!j)
		return NULL;
	eff.bound = p->delay;
	json_object_set_new(j, "pass", json_integer(p->pass));
	json_object_set_new(j, "objective", json_real(p->objective));
	json_object_set_new(j, "logloss", json_real(p->logloss));
	json_object_set_new(j, "auc", isnan(p->auc) ? json_null()
						     : json_real(p->auc));
	json_object_set_new(j, "nnz_w", json_integer((json_int_t)p->nnz_w));
	json_object_set_new(j, "seconds", json_real(p->seconds));
	json_object_set_new(j, "total_seconds", json_real(p->total_seconds));
	json_object_set_new(j, "wait_seconds", json_real(p->wait_seconds));
	{
		static const char *const kind[TRAIN_WAIT_KINDS] = {
			"window", "push", "barrier", "prox", "pull" };
		json_t *ws = json_object();

		for (int i = 0; ws && i < TRAIN_WAIT_KINDS; i++)
			json_object_set_new(ws, kind[i],
					    json_real(p->wait_split[i]));
		json_object_set_new(j, "wait_split", ws);
	}
	json_object_set_new(j, "emulated",
			    json_boolean(c->o.have_link || on_hosts()));
	json_object_set_new(j, "consistency", json_string(
		ps_consistency_format(&eff, cons, sizeof(cons))));
	json_object_set_new(j, "staleness_hist", hist_json(p->read_hist));
	json_object_set_new(j, "bytes_remote_pushed_eagerly",
			    json_integer((json_int_t)p->eager_bytes[1]));
	json_object_set_new(j, "bytes_local_pushed_eagerly",
			    json_integer((json_int_t)p->eager_bytes[0]));
	json_object_set_new(j, "link", link_json(c));
	json_object_set_new(j, "bytes_local", json_integer((json_int_t)(
		t->key_bytes[0] + t->val_bytes[0])));
	json_object_set_new(j, "bytes_remote", json_integer((json_int_t)(
		t->key_bytes[1] + t->val_bytes[1])));
	json_object_set_new(j, "key_bytes_local",
			    json_integer((json_int_t)t->key_bytes[0]));
	json_object_set_new(j, "key_bytes_remote",
			    json_integer((json_int_t)t->key_bytes[1]));
	json_object_set_new(j, "value_bytes_local",
			    json_integer((json_int_t)t->val_bytes[0]));
	json_object_set_new(j, "value_bytes_remote",
			    json_integer((json_int_t)t->val_bytes[1]));
	json_object_set_new(j, "messages_local",
			    json_integer((json_int_t)t->msgs[0]));
	json_object_set_new(j, "messages_remote",
			    json_integer((json_int_t)t->msgs[1]));
	json_object_set_new(j, "wire_bytes_local",
			    json_integer((json_int_t)p->wire_bytes[0]));
	json_object_set_new(j, "wire_bytes_remote",
			    json_integer((json_int_t)p->wire_bytes[1]));
	json_object_set_new(j, "wire_messages_local",
			    json_integer((json_int_t)p->wire_msgs[0]));
	json_object_set_new(j, "wire_messages_remote",
			    json_integer((json_int_t)p->wire_msgs[1]));
	return j;
}

static void emit(FILE *f, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12) |
				JSON_PRESERVE_ORDER);

	if (s) {
		fprintf(f, "%s\n", s);
		fflush(f);
		free(s);
	}
}

static void on_pass(void *arg, const struct train_pass *p)
{
	struct cli *c = arg;
	json_t *j = pass_json(c, p);

	if (!j)
		return;
	if (!c->quiet)
		emit(stdout, j);
	if (c->logf)
		emit(c->logf, j);
	json_decref(j);
}

/* The final object: the last pass plus the run's description. */
static void emit_final(const struct cli *c, const struct train_result *res,
		       uint32_t k, const struct train_data *d)
{
	json_t *j = pass_json(c, &res->last);

	if (!j)
		return;
	json_object_set_new(j, "final", json_true());
	json_object_set_new(j, "k", json_integer(k));
	json_object_set_new(j, "examples", json_integer(d->n_rows));
	json_object_set_new(j, "features", json_integer(d->n_cols));
	json_object_set_new(j, "nonzeros", json_integer((json_int_t)res->nnz));
	if (res->parsed) {
		json_t *a = json_array();

		for (int r = 0; a && r < res->nranks; r++)
			json_array_append_new(a, json_integer(res->parsed[r]));
		if (a)
			json_object_set_new(j, "parsed_examples", a);
	}
	json_object_set_new(j, "placement", json_string(c->placement));
	if (c->implicit) {
		json_t *im = json_object();

		if (im) {
			json_object_set_new(im, "users", json_integer(c->imp.users));
			json_object_set_new(im, "items", json_integer(c->imp.items));
			json_object_set_new(im, "positives", json_integer(
				(json_int_t)c->imp.positives));
			json_object_set_new(im, "negatives", json_integer(
				(json_int_t)c->imp.negatives));
			json_object_set_new(im, "users_without_negative",
				json_integer(c->imp.users_without_negative));
			json_object_set_new(im, "T_sum_pairs",
					    json_real(c->tsum_pairs));
			json_object_set_new(im, "T_sum", json_real(c->tsum));
			json_object_set_new(j, "implicit", im);
		}
	}
	json_object_set_new(j, "transport", json_string(res->transport));
	json_object_set_new(j, "ranks", json_integer(res->nranks));
	json_object_set_new(j, "lambda", json_real(c->o.lambda));
	json_object_set_new(j, "tau", json_integer(c->o.tau));
	json_object_set_new(j, "blocks", json_integer(c->o.blocks));
	json_object_set_new(j, "kkt", json_boolean(c->o.kkt));
	if (c->o.have_link) {
		json_object_set_new(j, "link_bits_per_s",
				    isinf(c->o.link.bits_per_s)
					    ? json_null()
					    : json_real(c->o.link.bits_per_s));
		json_object_set_new(j, "link_latency_s",
				    json_real(c->o.link.latency_s));
		json_object_set_new(j, "link_model", json_string(
			c->o.link.per_machine ? "nic" : "pair"));
		json_object_set_new(j, "link_delayed_messages", json_integer(
			(json_int_t)res->link.delayed_msgs));
	}
	emit(stdout, j);
	json_decref(j);
}

/* Implicit feedback: keys from n_items on are user biases, "user:E". */
static int write_model(const char *path, const struct train_data *d,
		       uint32_t n_items, const double *w,
		       struct parsa_err *err)
{
	struct part_out o;
	int bad = 0, rc = part_out_open(&o, path, err);

	if (rc)
		return rc;
	for (uint32_t j = 0; w && j < d->n_cols && !bad; j++)
		if (w[j] != 0)
			bad = fprintf(o.f, "%s%" PRIu64 " %.17g\n",
				      j >= n_items ? "user:" : "",
				      d->feat_id[j], w[j]) < 0;
	if (bad) {
		part_out_abort(&o);
		return parsa_fail(err, PARSA_EIO, "%s: write failed", path);
	}
	return part_out_commit(&o, err);
}

/* ------------------------------------------------------------------ main */

/* Whether DATA is pairs or SNAP (c->implicit): --format, else the name
 * (part_format_guess), else the first data line as the partitioner's
 * reader decides (':' -> LIBSVM; the reader then tells pairs from SNAP).
 * A binary cache is read as LIBSVM's. */
static int sniff_format(struct cli *c, struct parsa_err *err)
{
	enum part_format f = c->ro.format;
	struct part_lines *l = NULL;
	const char *line;
	size_t len;
	int eof = 0, rc = 0;

	if (f == PART_FMT_AUTO && !part_cache_probe(c->data))
		f = part_format_guess(c->data);
	if (f == PART_FMT_AUTO && !part_cache_probe(c->data) &&
	    !(rc = part_lines_open(&l, c->data, err))) {
		while (!(rc = part_lines_next(l, &line, &len, &eof, err)) &&
		       !eof && part_line_is_skippable(line, len))
			;
		if (!rc && !eof && !memchr(line, ':', len))
			f = PART_FMT_PAIRS; /* or SNAP: the reader decides */
		part_lines_close(l);
	}
	c->implicit = f == PART_FMT_PAIRS || f == PART_FMT_SNAP;
	if (rc)
		return rc;
	if (c->implicit && c->ro.graph == PART_GRAPH_EDGES)
		return parsa_fail(err, PARSA_EINVAL, "%s: --graph edges makes "
				  "every edge an example with two vertex "
				  "features and no user: there is no "
				  "implicit-feedback mapping (train on the "
				  "adjacency, the default)", c->data);
	if (!c->implicit && c->have_graph)
		return parsa_fail(err, PARSA_EINVAL, "%s: --graph applies to "
				  "SNAP data only", c->data);
	if (c->implicit && c->test)
		return parsa_fail(err, PARSA_EINVAL, "%s: --test is not "
				  "supported with pairs or SNAP data (the "
				  "held-out pairs would need their own sampled "
				  "negatives; see bench/train.py)", c->data);
	return 0;
}

/* T_sum of the placement on the pairs and on the converted examples. */
static int implicit_tsum(struct cli *c, const struct parsa_graph *g,
			 const uint32_t *up, const uint32_t *io,
			 const struct train_data *d, const uint32_t *part,
			 const uint32_t *owner, uint32_t k,
			 struct parsa_err *err)
{
	struct parsa_graph v = {d->n_rows, d->n_cols, d->rowptr, d->col, 0, 0};
	struct parsa_metrics m;
	int rc = parsa_metrics_compute(g, k, up, io, &m, err);

	c->tsum_pairs = m.T_sum;
	if (!rc)
		rc = parsa_metrics_compute(&v, k, part, owner, &m, err);
	c->tsum = m.T_sum;
	return rc;
}

/* Pairs or SNAP (adjacency): the partitioner's dataset, its placement,
 * then the examples of train_implicit.h with the placement carried over. */
static int load_implicit(struct cli *c, struct train_data *d, uint32_t **part,
			 uint32_t **owner, uint32_t *k, struct parsa_err *err)
{
	struct part_dataset ds;
	uint32_t *up = NULL, *io = NULL;
	int rc;

	part_dataset_init(&ds);
	rc = part_read_file(c->data, &c->ro, &ds, err);
	if (!rc && ds.g.n_rows == 0)
		rc = parsa_fail(err, PARSA_EINVAL, "%s: no examples", c->data);
	if (!rc && ds.format == PART_FMT_LIBSVM)
		rc = parsa_fail(err, PARSA_EINVAL, "%s: read as LIBSVM, not "
				"as pairs or SNAP", c->data);
	if (!rc) {
		up = malloc(((size_t)ds.g.n_rows + 1) * sizeof(uint32_t));
		io = malloc(((size_t)ds.g.n_cols + 1) * sizeof(uint32_t));
		if (!up || !io)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = load_placement(c, ds.g.n_rows, ds.feat_id, ds.g.n_cols,
				    up, io, k, err);
	if (!rc)
		rc = train_implicit_build(&ds, up, io, c->seed, d, part, owner,
					  &c->imp, err);
	if (!rc)
		rc = implicit_tsum(c, &ds.g, up, io, d, *part, *owner, *k, err);
	free(up);
	free(io);
	part_dataset_release(&ds);
	return rc;
}

static int load_all(struct cli *c, struct train_data *d, struct train_data *t,
		    uint32_t **part, uint32_t **owner, uint32_t *k,
		    struct loader *ld, struct parsa_err *err)
{
	int rc = sniff_format(c, err);

	if (rc)
		return rc;
	if (c->implicit) /* every rank builds every example (cheap) */
		return load_implicit(c, d, part, owner, k, err);
	if (c->o.mpi && strcmp(c->placement, "random") != 0) {
		/* rows later, per rank (load_rows) */
		rc = load_placement_only(c, d, part, owner, k, err);
		if (!rc && c->test)
			rc = train_data_read(c->test, d, t, err);
		*ld = (struct loader){c, d, *part, d->n_rows};
		c->o.load = load_rows;
		c->o.load_arg = ld;
		return rc;
	}
	rc = train_data_read(c->data, NULL, d, err);

	if (!rc && d->n_rows == 0)
		rc = parsa_fail(err, PARSA_EINVAL, "%s: no examples", c->data);
	if (!rc && c->test)
		rc = train_data_read(c->test, d, t, err);
	if (rc)
		return rc;
	*part = malloc(((size_t)d->n_rows + 1) * sizeof(uint32_t));
	*owner = malloc(((size_t)d->n_cols + 1) * sizeof(uint32_t));
	if (!*part || !*owner)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	return load_placement(c, d->n_rows, d->feat_id, d->n_cols, *part,
			      *owner, k, err);
}

static int finish(struct cli *c, const struct train_result *res, uint32_t k,
		  const struct train_data *d, struct parsa_err *err)
{
	emit_final(c, res, k, d);
	return c->model ? write_model(c->model, d, c->implicit ? c->imp.items
							       : UINT32_MAX,
				      res->w, err)
			: 0;
}

int train_main(int argc, char **argv)
{
	struct cli c;
	struct train_data d, t;
	struct train_problem pb = {0};
	struct train_result res = {0};
	struct parsa_err err = {0};
	struct loader ld = {0};
	struct part_out logo = {0};
	uint32_t *part = NULL, *owner = NULL, k = 0;
	int rc = parse_args(argc, argv, &c);

	if (rc >= 0)
		return rc;
	rc = 0;
	train_data_init(&d);
	train_data_init(&t);
	c.o.on_pass = on_pass;
	c.o.arg = &c;
	if (c.log && !(rc = part_out_open(&logo, c.log, &err)))
		c.logf = logo.f;
	if (!rc && c.model && (!c.o.mpi || !getenv("OMPI_COMM_WORLD_RANK") ||
			       strcmp(getenv("OMPI_COMM_WORLD_RANK"), "0") == 0))
		rc = part_out_check(c.model, &err); /* before any work */
	if (!rc)
		rc = load_all(&c, &d, &t, &part, &owner, &k, &ld, &err);
	if (!rc) {
		pb = (struct train_problem){&d, c.test ? &t : NULL, part, owner,
					    k};
		rc = train_run(&pb, &c.o, &res, &err);
	}
	if (!rc && res.is_root)
		rc = finish(&c, &res, k, &d, &err);
	if (c.logf) {
		/* the root's log replaces the file (also after a failure,
		 * which it records); the other ranks' copies are dropped */
		int rc2 = res.is_root || !c.o.mpi ? part_out_commit(&logo, &err)
						 : (part_out_abort(&logo), 0);

		rc = rc ? rc : rc2;
		c.logf = NULL;
	}
	if (rc && c.o.mpi) {
		/* before MPI started, mpirun's environment knows the rank */
		const char *r = getenv("OMPI_COMM_WORLD_RANK");

		if (res.nranks > 0 || !r)
			fprintf(stderr, "parsa: rank %d: %s\n", res.rank,
				err.msg[0] ? err.msg : parsa_strerror(rc));
		else
			fprintf(stderr, "parsa: rank %.12s: %s\n", r,
				err.msg[0] ? err.msg : parsa_strerror(rc));
		fflush(stdout);
		fflush(stderr);
		_exit(1);
	}
	if (rc)
		fprintf(stderr, "parsa: %s\n",
			err.msg[0] ? err.msg : parsa_strerror(rc));
	train_result_release(&res);
	train_data_release(&d);
	train_data_release(&t);
	free(part);
	free(owner);
	return rc ? 1 : 0;
}
