/*
 * part_convert: `parsa convert` (part_convert.h).
 */
#include "part_convert.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "part_cache.h"
#include "part_progress.h"
#include "part_reader.h"

#define EXIT_USAGE 2

static const char usage[] =
	"usage: parsa convert DATA --out FILE.pcsr [options]\n"
	"\n"
	"Read DATA (LIBSVM, SNAP edge list or user-item pairs, plain or gzip,\n"
	"as 'parsa partition' reads it) and write its binary cache: the CSR,\n"
	"its transpose, the feature ids and (LIBSVM) the labels and values,\n"
	"versioned and checksummed.  Every command that takes DATA\n"
	"(partition, eval, train, serve's datasets) accepts the cache\n"
	"instead, whatever its name (it is recognised by its content), and\n"
	"gives the same results as from the text.\n"
	"\n"
	"  --out FILE       the cache to write (written to FILE.PID.tmp in the\n"
	"                   same directory, then renamed)\n"
	"  --format F       auto (default), libsvm, snap or pairs\n"
	"  --graph M        SNAP edge lists: adjacency (default) or edges; the\n"
	"                   cache keeps the mode, and reading it asks for the same\n"
	"  --no-transpose   leave the transpose out (a smaller file)\n"
	"  --no-values      LIBSVM: leave out the labels and values (written\n"
	"                   by default, for 'parsa train'; 12 bytes a nonzero)\n"
	"  -q, --quiet      no progress bar and no summary\n"
	"  -h, --help       this text\n";

static int die_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "parsa: convert: ");
	fprintf(stderr, msg, arg);
	fprintf(stderr, "\n(run with --help for usage)\n");
	return EXIT_USAGE;
}

static int fail(const struct parsa_err *err, int rc)
{
	fprintf(stderr, "parsa: %s\n",
		err->msg[0] ? err->msg : parsa_strerror(rc));
	return 1;
}

int part_cmd_convert(int argc, char **argv)
{
	return part_convert_main(argc, argv, NULL);
}

int part_convert_main(int argc, char **argv,
		      const struct part_convert_ext *ext)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'f'},
		{"graph", required_argument, NULL, 'g'},
		{"no-transpose", no_argument, NULL, 'T'},
		{"no-values", no_argument, NULL, 'V'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct part_read_opts ro;
	struct part_cache_write_opts wo;
	struct part_dataset ds;
	struct part_progress pg;
	struct parsa_err err;
	const char *out = NULL, *data;
	double t0, t_read, t_write;
	struct part_cache_values vals;
	void *priv = NULL;
	int c, quiet = 0, no_values = 0, have_values = 0, rc;

	memset(&ro, 0, sizeof(ro));
	memset(&wo, 0, sizeof(wo));
	parsa_err_clear(&err);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			if (part_format_parse(optarg, &ro.format))
				return die_usage("--format '%s': expected auto, libsvm, snap or pairs", optarg);
			break;
		case 'g':
			if (part_graph_mode_parse(optarg, &ro.graph))
				return die_usage("--graph '%s': expected adjacency or edges", optarg);
			break;
		case 'T':
			wo.no_transpose = 1;
			break;
		case 'V':
			no_values = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return die_usage("%s needs a value", argv[optind - 1]);
		default:
			return die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return die_usage("%s", "DATA is required");
	if (argc - optind > 1)
		return die_usage("one DATA only, got also '%s'", argv[optind + 1]);
	data = argv[optind];
	if (!out || !*out)
		return die_usage("%s", "--out FILE is required");
	if (strcmp(out, "-") == 0)
		return die_usage("%s", "--out: the cache is a file, not stdout");
	part_progress_init(&pg, !quiet);
	part_dataset_init(&ds);
	t0 = part_now();
	part_progress_begin(&pg, "reading");
	ro.progress = part_progress_cb;
	ro.progress_arg = &pg;
	rc = part_read_file(data, &ro, &ds, &err);
	part_progress_end(&pg);
	t_read = part_now() - t0;
	if (rc)
		return fail(&err, rc);
	if (ext && !no_values && ds.format == PART_FMT_LIBSVM && ds.g.n_rows) {
		struct parsa_err verr;

		parsa_err_clear(&verr);
		part_progress_begin(&pg, "values");
		rc = ext->values(data, &ds, &vals, &priv, &verr);
		part_progress_end(&pg);
		if (rc == 0) {
			have_values = 1;
			wo.values = &vals;
		} else if (!quiet) {
			fprintf(stderr, "parsa: note: %s: no labels or values in the cache ('parsa train' will refuse it): %s\n",
				out, verr.msg[0] ? verr.msg : parsa_strerror(rc));
		}
	}
	t0 = part_now();
	part_progress_begin(&pg, "writing");
	wo.progress = part_progress_cb;
	wo.progress_arg = &pg;
	rc = part_cache_write(out, &ds, &wo, &err);
	part_progress_end(&pg);
	if (priv && ext->release)
		ext->release(priv);
	t_write = part_now() - t0;
	if (rc) {
		part_dataset_release(&ds);
		return fail(&err, rc);
	}
	if (!quiet)
		printf("%s: %u examples, %u features, %llu nonzeros (%s%s%s%s), read in %.2f s, written in %.2f s\n",
		       out, ds.g.n_rows, ds.g.n_cols,
		       (unsigned long long)parsa_graph_nnz(&ds.g),
		       part_format_name(ds.format),
		       ds.format == PART_FMT_SNAP ? ", " : "",
		       ds.format == PART_FMT_SNAP ? part_graph_mode_name(ds.graph) : "",
		       have_values ? ", with labels and values" : "",
		       t_read, t_write);
	part_dataset_release(&ds);
	return 0;
}
