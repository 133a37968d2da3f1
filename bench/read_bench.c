/*
 * read_bench: time part_read_file on one file (the reader's own speed,
 * nothing else): `read_bench FILE [THREADS|serial [REPEATS [CHUNK [map|read]]]]` prints, per run and
 * as the median, seconds, MB/s of the file's bytes (compressed bytes for
 * gzip), MB/s per thread, MB per CPU-second of the process (user + system:
 * a per-core figure that holds on a loaded machine) and ns per nonzero.  THREADS 0 = the
 * reader's default, "serial" the line reader (part_read_lines, as before
 * part_preader); CHUNK sets part_read_opts.chunk (bytes; 0 = default); "read" reads a
 * plain file instead of mapping it (part_read_opts.no_map).  Built by `make build/bench/read_bench`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "base_time.h"
#include "part_reader.h"


/* CPU seconds (user + system) of the whole process so far. */
static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The line reader (part_read_lines): the reader before part_preader. */
static int read_serial(const char *path, const struct part_read_opts *o,
		       struct part_dataset *ds, struct parsa_err *err)
{
	struct part_lines *l;
	int rc = part_lines_open(&l, path, err);

	if (rc)
		return rc;
	rc = part_read_lines(l, o, ds, err);
	part_lines_close(l);
	return rc;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct part_read_opts o;
	struct part_dataset ds;
	struct parsa_err err;
	struct stat st;
	double t[64], cpu[64], mb;
	int serial = argc > 2 && strcmp(argv[2], "serial") == 0;
	unsigned threads = argc > 2 && !serial ? (unsigned)atoi(argv[2]) : 0;
	int reps = argc > 3 ? atoi(argv[3]) : 3;
	uint64_t entries = 0;

	if (argc < 2 || stat(argv[1], &st) != 0 || reps < 1 || reps > 64) {
		fprintf(stderr, "usage: read_bench FILE [THREADS|serial [REPEATS [CHUNK [map|read]]]]\n");
		return 2;
	}
	mb = (double)st.st_size / 1e6;
	memset(&o, 0, sizeof(o));
	o.threads = threads;
	o.chunk = argc > 4 ? (size_t)atol(argv[4]) : 0;
	o.no_map = argc > 5 && strcmp(argv[5], "read") == 0;
	for (int i = 0; i < reps; i++) {
		double t0 = base_now(), c0 = cpu_now();

		part_dataset_init(&ds);
		parsa_err_clear(&err);
		if ((serial ? read_serial(argv[1], &o, &ds, &err)
			    : part_read_file(argv[1], &o, &ds, &err)) != 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		t[i] = base_now() - t0;
		cpu[i] = cpu_now() - c0;
		entries = ds.entries;
		printf("run %d: %.3f s (cpu %.3f s)  %.1f MB/s  %.1f MB/s per "
		       "cpu-second  %u rows %u cols %llu nnz\n",
		       i + 1, t[i], cpu[i], mb / t[i], mb / cpu[i],
		       ds.g.n_rows, ds.g.n_cols,
		       (unsigned long long)parsa_graph_nnz(&ds.g));
		part_dataset_release(&ds);
	}
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_d);
	qsort(cpu, (size_t)reps, sizeof(cpu[0]), cmp_d);
	printf("median %.3f s  %.1f MB/s  %.1f MB/s per thread  %.1f MB/s per "
	       "cpu-second  %.1f ns/nnz  (%s, %.1f MB, threads %s, %s)\n",
	       t[reps / 2], mb / t[reps / 2],
	       mb / t[reps / 2] / (threads ? threads : 1), mb / cpu[reps / 2],
	       t[reps / 2] * 1e9 / (double)(entries ? entries : 1), argv[1],
	       mb, serial ? "serial" : argc > 2 ? argv[2] : "0",
	       o.no_map ? "read" : "mapped if a plain file");
	return 0;
}
