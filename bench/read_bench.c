/*
 * read_bench: time part_read_file on one file (the reader's own speed,
 * nothing else): `read_bench FILE [THREADS [REPEATS]]` prints, per run and
 * as the median, seconds, MB/s of the file's bytes (compressed bytes for
 * gzip), MB/s per thread and ns per nonzero read.  THREADS 0 = the
 * reader's default.  Built by `make build/bench/read_bench`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base_time.h"
#include "part_reader.h"


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
	double t[64], mb;
	unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	int reps = argc > 3 ? atoi(argv[3]) : 3;
	uint64_t entries = 0;

	if (argc < 2 || stat(argv[1], &st) != 0 || reps < 1 || reps > 64) {
		fprintf(stderr, "usage: read_bench FILE [THREADS [REPEATS]]\n");
		return 2;
	}
	mb = (double)st.st_size / 1e6;
	memset(&o, 0, sizeof(o));
	o.threads = threads;
	for (int i = 0; i < reps; i++) {
		double t0 = base_now();

		part_dataset_init(&ds);
		parsa_err_clear(&err);
		if (part_read_file(argv[1], &o, &ds, &err) != 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		t[i] = base_now() - t0;
		entries = ds.entries;
		printf("run %d: %.3f s  %.1f MB/s  %u rows %u cols %llu nnz\n",
		       i + 1, t[i], mb / t[i], ds.g.n_rows, ds.g.n_cols,
		       (unsigned long long)parsa_graph_nnz(&ds.g));
		part_dataset_release(&ds);
	}
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_d);
	printf("median %.3f s  %.1f MB/s  %.1f MB/s per thread  %.1f ns/nnz"
	       "  (%s, %.1f MB, threads %u)\n",
	       t[reps / 2], mb / t[reps / 2],
	       mb / t[reps / 2] / (threads ? threads : 1),
	       t[reps / 2] * 1e9 / (double)(entries ? entries : 1), argv[1],
	       mb, threads);
	return 0;
}
