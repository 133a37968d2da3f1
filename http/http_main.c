/*
 * http_main: option parsing of `parsa serve` (see http_main.h and the
 * README section "HTTP service").
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "part_cli.h"
#include "part_pool.h"
#include "http_main.h"
#include "http_route.h"
#include "http_server.h"
#include "http_store.h"

#define EXIT_USAGE 2
#define DEFAULT_MAX_UPLOAD (1024ULL << 20) /* 1 GiB */

static const char usage_serve[] =
	"usage: parsa serve [options]\n"
	"\n"
	"Run the HTTP partitioning service: register datasets, run partition\n"
	"jobs, serve reports, placements and lookups (README: HTTP service;\n"
	"API: docs/openapi.yaml).  Stops on SIGTERM/SIGINT.\n"
	"\n"
	"options:\n"
	"  --listen HOST:PORT  address to listen on (127.0.0.1:8080; port 0 =\n"
	"                      any free port, printed on stdout)\n"
	"  --state-dir DIR     datasets, jobs, reports and placements (./parsa-state)\n"
	"  --data-dir DIR      datasets may be registered by a path inside DIR\n"
	"                      (without it only uploads are accepted)\n"
	"  --workers W         partition jobs running at once (1); a job's own\n"
	"                      parallel workers are its \"workers\" parameter\n"
	"  --token-file F      require 'Authorization: Bearer <token>' (the\n"
	"                      file's first line) on everything but /healthz\n"
	"                      and the web page (/, /ui/...)\n"
	"  --max-upload SIZE   largest request body, e.g. 512M, 2G (1G)\n"
	"  --max-upload-total SIZE  upload bytes being received at once, all\n"
	"                      uploads together (uploads stream to disk);\n"
	"                      one over it gets 503 (2 x --max-upload)\n"
	"  --grace SECONDS     on SIGTERM, running jobs may finish this long\n"
	"                      before they are interrupted and re-queued (30)\n"
	"  --cache N           parsed datasets kept in memory (4)\n"
	"  --job-nice N        nice value of the partition and dataset-reading\n"
	"                      threads, so lookups keep their latency while jobs\n"
	"                      run (10; 0 = same priority as the event loop)\n"
	"  --job-time-limit S  every job's partition aims to end within S\n"
	"                      seconds: its refinement is cut short (Algorithm\n"
	"                      13 always completes); a job's own time_limit is\n"
	"                      capped at S (default: none)\n"
	"  --job-threads N     threads of a quality=best job without its own\n"
	"                      \"threads\" (placements are the same for any N;\n"
	"                      default: the CPUs this process may use divided\n"
	"                      by --workers, at least 1)\n"
	"  --max-streams N     event streams (GET /v1/jobs/{id}/events) open at\n"
	"                      once; more get 503 (64)\n"
	"  --read-timeout S    a client silent this long while it sends a request\n"
	"                      (or does not read the reply, or between requests)\n"
	"                      is disconnected (10)\n"
	"  --max-connections N open connections at most; a new one beyond is\n"
	"                      closed at once (default: the descriptor limit\n"
	"                      less 64, at most 10000)\n"
	"  --max-jobs N        retention: keep the newest N finished jobs\n"
	"                      (succeeded, failed, cancelled); older ones are\n"
	"                      deleted with their files (default: all kept)\n"
	"  --max-age DURATION  retention: delete finished jobs this long after\n"
	"                      they ended, e.g. 7d, 12h, 30m, 90s (default:\n"
	"                      none).  Both are checked at start-up, after each\n"
	"                      job ends and periodically; queued and running\n"
	"                      jobs are never deleted\n"
	"  -h, --help          this text\n";

enum { O_LISTEN = 256, O_STATE, O_DATA, O_WORKERS, O_TOKEN, O_MAXUP,
       O_GRACE, O_CACHE, O_NICE, O_TLIMIT, O_THREADS, O_STREAMS,
       O_RTIMEOUT, O_MAXCONN, O_MAXJOBS, O_MAXAGE, O_MAXUPTOT };

static const struct option longopts[] = {
	{"listen", required_argument, NULL, O_LISTEN},
	{"state-dir", required_argument, NULL, O_STATE},
	{"data-dir", required_argument, NULL, O_DATA},
	{"workers", required_argument, NULL, O_WORKERS},
	{"jobs", required_argument, NULL, O_WORKERS},
	{"token-file", required_argument, NULL, O_TOKEN},
	{"max-upload", required_argument, NULL, O_MAXUP},
	{"max-upload-total", required_argument, NULL, O_MAXUPTOT},
	{"grace", required_argument, NULL, O_GRACE},
	{"cache", required_argument, NULL, O_CACHE},
	{"job-nice", required_argument, NULL, O_NICE},
	{"job-time-limit", required_argument, NULL, O_TLIMIT},
	{"job-threads", required_argument, NULL, O_THREADS},
	{"max-streams", required_argument, NULL, O_STREAMS},
	{"read-timeout", required_argument, NULL, O_RTIMEOUT},
	{"max-connections", required_argument, NULL, O_MAXCONN},
	{"max-jobs", required_argument, NULL, O_MAXJOBS},
	{"max-age", required_argument, NULL, O_MAXAGE},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "parsa serve: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(run 'parsa serve --help' for usage)\n");
	return EXIT_USAGE;
}

/* "512M", "2G", "1048576" -> bytes; -1 if bad. */
static int parse_listen(const char *s, char *host, size_t len, unsigned *port)
{
	const char *colon = strrchr(s, ':');
	uint64_t p;

	if (!colon || colon == s || (size_t)(colon - s) >= len ||
	    http_parse_u64(colon + 1, strlen(colon + 1), &p) || p > 65535)
		return -1;
	if (s[0] == '[' && colon[-1] == ']')
		snprintf(host, len, "%.*s", (int)(colon - s - 2), s + 1);
	else
		snprintf(host, len, "%.*s", (int)(colon - s), s);
	*port = (unsigned)p;
	return 0;
}

/* The token: the file's first line without trailing blanks. */
static int read_token(const char *path, char **out)
{
	char *buf;
	size_t len, n = 0;
	struct parsa_err err;

	parsa_err_clear(&err);
	if (http_store_slurp(path, &buf, &len, &err)) {
		fprintf(stderr, "parsa serve: --token-file: %s\n", err.msg);
		return 1;
	}
	while (n < len && buf[n] != '\n' && buf[n] != '\r')
		n++;
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	buf[n] = '\0';
	if (n == 0) {
		free(buf);
		fprintf(stderr, "parsa serve: --token-file %s: empty token\n", path);
		return 1;
	}
	*out = buf;
	return 0;
}

/* Raise the descriptor limit to its hard limit (a service holds a
 * descriptor per connection), and leave 64 for files, threads and the
 * listener: the default --max-connections. */
static unsigned default_max_connections(void)
{
	struct rlimit r;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &r) != 0)
		return 1024;
	if (r.rlim_cur < r.rlim_max) {
		rlim_t want = r.rlim_max == RLIM_INFINITY || r.rlim_max > 65536
			? 65536 : r.rlim_max;

		if (want > r.rlim_cur) {
			struct rlimit t = {want, r.rlim_max};

			if (setrlimit(RLIMIT_NOFILE, &t) == 0)
				r.rlim_cur = want;
		}
	}
	n = r.rlim_cur == RLIM_INFINITY ? 65536 : r.rlim_cur;
	n = n > 64 + 16 ? n - 64 : 16;
	return n > 10000 ? 10000 : (unsigned)n;
}

/* "7d", "12h", "30m", "90s", "90" (seconds), "1.5h" -> seconds > 0; -1 if
 * bad. */
static double parse_duration(const char *s)
{
	char *end;
	double v, unit = 1;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v > 0))
		return -1;
	switch (*end) {
	case 'd': unit = 86400; end++; break;
	case 'h': unit = 3600; end++; break;
	case 'm': unit = 60; end++; break;
	case 's': end++; break;
	case '\0': break;
	default: return -1;
	}
	if (*end || v * unit > 1e10)
		return -1;
	return v * unit;
}

struct serve_args {
	char host[256];
	struct http_server_opts o;
	const char *token_file;
};

static int parse_opt(struct serve_args *a, int opt, const char *arg)
{
	double v;

	switch (opt) {
	case O_LISTEN:
		if (parse_listen(arg, a->host, sizeof(a->host), &a->o.port))
			return usage_error("--listen must be HOST:PORT, got '%s'", arg);
		return 0;
	case O_STATE: a->o.state_dir = arg; return 0;
	case O_DATA: a->o.data_dir = arg; return 0;
	case O_TOKEN: a->token_file = arg; return 0;
	case O_WORKERS:
		if (part_cli_dbl(arg, 1, 256, &v) || v != (unsigned)v)
			return usage_error("--workers must be an integer in 1..256, got '%s'", arg);
		a->o.workers = (unsigned)v;
		return 0;
	case O_CACHE:
		if (part_cli_dbl(arg, 0, 1000, &v) || v != (unsigned)v)
			return usage_error("--cache must be an integer in 0..1000, got '%s'", arg);
		a->o.cache = (unsigned)v;
		return 0;
	case O_NICE:
		if (part_cli_dbl(arg, 0, 19, &v) || v != (int)v)
			return usage_error("--job-nice must be an integer in 0..19, got '%s'", arg);
		a->o.nice = (int)v;
		return 0;
	case O_TLIMIT:
		if (part_cli_dbl(arg, 1e-6, 1e9, &a->o.job_time_limit))
			return usage_error("--job-time-limit must be a number of seconds > 0, got '%s'", arg);
		return 0;
	case O_THREADS:
		if (part_cli_dbl(arg, 1, PART_POOL_MAX_THREADS, &v) ||
		    v != (unsigned)v)
			return usage_error("--job-threads must be an integer in 1..256, got '%s'", arg);
		a->o.job_threads = (unsigned)v;
		return 0;
	case O_STREAMS:
		if (part_cli_dbl(arg, 1, 100000, &v) || v != (unsigned)v)
			return usage_error("--max-streams must be an integer in 1..100000, got '%s'", arg);
		a->o.max_streams = (unsigned)v;
		return 0;
	case O_RTIMEOUT:
		if (part_cli_dbl(arg, 0.01, 3600, &a->o.read_timeout))
			return usage_error("--read-timeout must be seconds in 0.01..3600, got '%s'", arg);
		return 0;
	case O_MAXCONN:
		if (part_cli_dbl(arg, 1, 1000000, &v) || v != (unsigned)v)
			return usage_error("--max-connections must be an integer in 1..1000000, got '%s'", arg);
		a->o.max_connections = (unsigned)v;
		return 0;
	case O_MAXJOBS:
		if (part_cli_dbl(arg, 1, 1e12, &v) || v != (double)(uint64_t)v)
			return usage_error("--max-jobs must be an integer >= 1, got '%s'", arg);
		a->o.max_jobs = (uint64_t)v;
		return 0;
	case O_MAXAGE:
		if ((a->o.max_age = parse_duration(arg)) < 0)
			return usage_error("--max-age must be a duration such as 7d, 12h, 30m or 90s, got '%s'", arg);
		return 0;
	case O_GRACE:
		if (part_cli_dbl(arg, 0, 86400, &a->o.grace))
			return usage_error("--grace must be seconds in 0..86400, got '%s'", arg);
		return 0;
	case O_MAXUPTOT:
		if (part_cli_size(arg, &a->o.max_upload_total) || a->o.max_upload_total == 0)
			return usage_error("--max-upload-total must be a size such as 2G, got '%s'", arg);
		return 0;
	case O_MAXUP:
		if (part_cli_size(arg, &a->o.max_upload) || a->o.max_upload == 0)
			return usage_error("--max-upload must be a size such as 512M, got '%s'", arg);
		return 0;
	default:
		return usage_error("%s", "unknown option");
	}
}

int http_main(int argc, char **argv)
{
	struct serve_args a;
	struct parsa_err err;
	char *token = NULL;
	int opt, rc;

	memset(&a, 0, sizeof(a));
	snprintf(a.host, sizeof(a.host), "127.0.0.1");
	a.o = (struct http_server_opts){
		.port = 8080, .state_dir = "parsa-state", .workers = 1,
		.max_upload = DEFAULT_MAX_UPLOAD, .grace = 30, .cache = 4,
		.nice = 10, .max_streams = 64, .read_timeout = 10,
	};
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(usage_serve, stdout);
			return 0;
		}
		if (opt == '?')
			return usage_error("unknown option '%s'", argv[optind - 1]);
		if (opt == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		if ((rc = parse_opt(&a, opt, optarg)) != 0)
			return rc;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (a.token_file && read_token(a.token_file, &token))
		return 1;
	if (!a.o.max_connections)
		a.o.max_connections = default_max_connections();
	if (!a.o.max_upload_total)
		a.o.max_upload_total = a.o.max_upload > UINT64_MAX / 2
			? UINT64_MAX : 2 * a.o.max_upload;
	a.o.host = a.host;
	a.o.token = token;
	parsa_err_clear(&err);
	rc = http_server_run(&a.o, &err);
	free(token);
	if (rc) {
		fprintf(stderr, "parsa serve: %s\n", err.msg[0] ? err.msg : parsa_strerror(rc));
		return 1;
	}
	return 0;
}
