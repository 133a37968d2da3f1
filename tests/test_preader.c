/*
 * test_preader: the parallel LIBSVM reader (part_preader) equals the line
 * reader (part_read_lines): the same CSR, feature ids and counters, or the
 * same error code and text (file:line:col), with 1-4 threads and chunk
 * sizes of 1, 2, 3, 7, 64 and 4096 bytes (which also set the read block, so
 * reads split lines everywhere) and the default, each plain file both
 * mapped (the default) and read (part_read_opts.no_map), and with the
 * worker maps' row stamps starting again every few rows.
 *
 * Inputs: every bundled sample in data/ and every file of the bad-input
 * corpus tests/bad/, each read as LIBSVM (whatever its format: the SNAP and
 * pairs files make good malformed LIBSVM) and through part_read_file with
 * its own format; and random LIBSVM-like files built from awkward tokens
 * (qid, inf, nan, hex floats, leading zeros, 20-digit indices, comments,
 * CRLF, NUL bytes), plain and gzipped.  Run from the repository root.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "harness.h"
#include "part_preader.h"
#include "part_reader.h"

static const size_t chunks[] = { 1, 2, 3, 7, 64, 4096, 0 };
static char tmpdir[256];
static int ncompared;

/* The line reader's result for path read as format f. */
static int serial_read(const char *path, enum part_format f,
		       enum part_graph_mode m, struct part_dataset *ds,
		       struct parsa_err *err)
{
	struct part_read_opts o;
	struct part_lines *l;
	int rc;

	memset(&o, 0, sizeof(o));
	o.format = f;
	o.graph = m;
	parsa_err_clear(err);
	rc = part_lines_open(&l, path, err);
	if (rc)
		return rc;
	rc = part_read_lines(l, &o, ds, err);
	part_lines_close(l);
	return rc;
}

/* 1 when a and b are the same dataset (CSR, ids, counters). */
static int same_dataset(const struct part_dataset *a,
			const struct part_dataset *b)
{
	uint64_t nnz = parsa_graph_nnz(&a->g);

	if (a->g.n_rows != b->g.n_rows || a->g.n_cols != b->g.n_cols ||
	    nnz != parsa_graph_nnz(&b->g) || a->format != b->format ||
	    a->graph != b->graph || a->lines != b->lines ||
	    a->entries != b->entries || a->duplicates != b->duplicates ||
	    a->self_loops != b->self_loops || a->empty_rows != b->empty_rows ||
	    (a->feat_id == NULL) != (b->feat_id == NULL))
		return 0;
	if (a->g.n_rows &&
	    (memcmp(a->g.row_ptr, b->g.row_ptr,
		    ((size_t)a->g.n_rows + 1) * sizeof(uint64_t)) ||
	     (nnz && memcmp(a->g.col, b->g.col,
			    (size_t)nnz * sizeof(uint32_t)))))
		return 0;
	return !a->feat_id || !a->g.n_cols ||
	       !memcmp(a->feat_id, b->feat_id,
		       (size_t)a->g.n_cols * sizeof(uint64_t));
}

struct prog {
	int calls;
	uint64_t done, total;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	if (p->calls && done < p->done)
		p->calls = -1000000;  /* went backwards */
	p->calls++;
	p->done = done;
	p->total = total;
}

/*
 * Compare the line reader with the parallel one (called directly when
 * direct, else through part_read_file) on path as format f, for every
 * thread count and chunk size.
 */
static void compare(const char *path, enum part_format f,
		    enum part_graph_mode m, int direct)
{
	const size_t nc = sizeof(chunks) / sizeof(chunks[0]);
	struct part_dataset want, got;
	struct parsa_err werr, gerr;
	int wrc;

	part_dataset_init(&want);
	wrc = serial_read(path, f, m, &want, &werr);
	for (uint32_t t = 1; t <= 4; t++) {
		/* each chunk size mapped, then read */
		for (size_t c = 0; c < 2 * nc; c++) {
			struct part_read_opts o;
			struct prog pg = { 0, 0, 0 };
			int rc;

			memset(&o, 0, sizeof(o));
			o.format = f;
			o.graph = m;
			o.threads = t;
			o.no_map = c >= nc;
			o.chunk = chunks[c % nc];
			/* the row stamps start again every few rows */
			o.stamp_restart = c % 3 == 1 ? 1 + (uint32_t)c : 0;
			o.progress = on_progress;
			o.progress_arg = &pg;
			part_dataset_init(&got);
			parsa_err_clear(&gerr);
			rc = direct ? part_preader_libsvm(path, &o, &got, &gerr)
				    : part_read_file(path, &o, &got, &gerr);
			ncompared++;
			if (rc != wrc || (rc && strcmp(gerr.msg, werr.msg)) ||
			    (!rc && !same_dataset(&want, &got)) ||
			    (!rc && direct &&
			     (pg.calls < 1 || pg.done != pg.total))) {
				fprintf(stderr,
					"%s as %s, %u threads, chunk %zu%s:\n"
					"  line reader: rc %d %s\n"
					"  parallel:    rc %d %s\n"
					"  (rows %u/%u, progress calls %d)\n",
					path, part_format_name(f), t,
					chunks[c % nc],
					o.no_map ? " (read)" : "",
					wrc, wrc ? werr.msg : "ok", rc,
					rc ? gerr.msg : "ok", want.g.n_rows,
					got.g.n_rows, pg.calls);
				harness_cur_failed = 1;
			}
			if (rc) {
				CHECK_INT(got.g.n_rows, ==, 0);
				CHECK(got.feat_id == NULL);
			}
			part_dataset_release(&got);
		}
	}
	part_dataset_release(&want);
}

/* Every file of dir except *.err and README, read as LIBSVM and as its
 * own format (guessed from the name, or the .err's format= line). */
static int compare_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL) {
		char path[512];
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.' || strcmp(de->d_name, "README") == 0 ||
		    strcmp(de->d_name, "README.md") == 0 ||
		    (len > 4 && strcmp(de->d_name + len - 4, ".err") == 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		compare(path, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
		compare(path, part_format_guess(path), PART_GRAPH_ADJACENCY,
			0);
		n++;
	}
	closedir(d);
	return n;
}

static void test_samples(void)
{
	int n = compare_dir("data");

	if (n < 0)
		SKIP("data/ not found (run from the repository root)");
	printf("  %d samples\n", n);
	CHECK(n >= 4);
}

static void test_bad_corpus(void)
{
	int n = compare_dir("tests/bad");

	if (n < 0)
		SKIP("tests/bad not found (run from the repository root)");
	printf("  %d bad inputs\n", n);
	CHECK(n >= 20);
}

/* ---- random LIBSVM-like files ------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

/* Append a random line (mostly valid) to buf. */
static size_t random_line(char *buf, uint32_t bad_rate)
{
	static const char *labels[] = { "1", "-1", "+1", "0.5", "abc", "" };
	static const char *vals[] = { "1", "0", "-2.5", "3e-2", ".5", "5.",
				      "+1E+3", "1e5" };
	static const char *odd_vals[] = { "inf", "nan", "-Inf", "0x1p3",
					  "1E-0", "-.0" };
	static const char *odd_idx[] = { "00000000000000000000007",
					 "18446744073709551615", "0",
					 "12345678901234567", "123456789",
					 "99999999", "0000000012",
					 "1234567890123456789" };
	static const char *bad_vals[] = { "1e", "abc", "", "1:2", "1e+",
					  "--1", ".", "1.5x", "0x" };
	static const char *bad_idx[] = { "18446744073709551616",
					 "99999999999999999999", "-3", "x",
					 "" };
	size_t n = 0;
	/* mostly short rows; some long ones (the merge sort of long rows) */
	int k = rnd(20) ? (int)rnd(8) : 30 + (int)rnd(300);

	switch (rnd(16)) {
	case 0:
		return (size_t)sprintf(buf, " \t\r\n");
	case 1:
		return (size_t)sprintf(buf, "  # comment 1:x\n");
	case 2:
		return (size_t)sprintf(buf, "\n");
	default:
		break;
	}
	n += (size_t)sprintf(buf + n, "%s",
			     labels[rnd(100) < bad_rate ? 5 : rnd(5)]);
	if (rnd(10) == 0)
		n += (size_t)sprintf(buf + n, " qid:%s",
				     rnd(100) < bad_rate ? "x" : "007");
	for (int i = 0; i < k; i++) {
		const char *sep = rnd(8) ? " " : (rnd(2) ? "\t" : "  \v");
		uint32_t r = rnd(100);
		char idx[32], val[32];

		snprintf(idx, sizeof(idx), "%u",
			 rnd(4) && k < 30 ? rnd(60) : rnd(100000));
		snprintf(val, sizeof(val), "%s", vals[rnd(8)]);
		if (r < 5)
			snprintf(val, sizeof(val), "%s", odd_vals[rnd(6)]);
		else if (r < 8)
			snprintf(idx, sizeof(idx), "%s", odd_idx[rnd(8)]);
		else if (rnd(100) < bad_rate)
			snprintf(idx, sizeof(idx), "%s", bad_idx[rnd(5)]);
		else if (rnd(100) < bad_rate)
			snprintf(val, sizeof(val), "%s", bad_vals[rnd(9)]);
		n += (size_t)sprintf(buf + n, "%s%s:%s", sep, idx, val);
	}
	if (rnd(10) == 0)
		n += (size_t)sprintf(buf + n, " # tail 3:x");
	if (rnd(200) == 0 && bad_rate && n)
		buf[rnd((uint32_t)n)] = '\0';
	if (rnd(5) == 0)
		buf[n++] = '\r';
	buf[n++] = '\n';
	return n;
}

static void write_pair(const char *path, const char *text, size_t n)
{
	char gz[600];
	FILE *f = fopen(path, "wb");
	gzFile g;

	snprintf(gz, sizeof(gz), "%s.gz", path);
	g = gzopen(gz, "wb");
	if (!f || !g || fwrite(text, 1, n, f) != n ||
	    (n && gzwrite(g, text, (unsigned)n) != (int)n)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	fclose(f);
	gzclose(g);
}

static void test_random_files(void)
{
	char *text = malloc(8 << 20);  /* > 400 lines of 330 tokens */
	char path[512], gz[600];

	REQUIRE(text);
	for (int seed = 0; seed < 24; seed++) {
		size_t n = 0;
		int lines = 1 + (int)rnd(seed < 12 ? 40 : 400);
		/* the first files are valid; later ones hold a bad token or
		 * a NUL somewhere (late, so most of the file parses) */
		uint32_t bad = seed < 8 ? 0 : (seed < 16 ? 1 : 4);

		rng_state = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 1;
		for (int i = 0; i < lines; i++)
			n += random_line(text + n, bad);
		if (seed % 3 == 0 && n > 1)
			n--;  /* a last line without '\\n' */
		snprintf(path, sizeof(path), "%s/r%d.svm", tmpdir, seed);
		write_pair(path, text, n);
		snprintf(gz, sizeof(gz), "%s.gz", path);
		compare(path, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
		compare(gz, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
		remove(path);
		remove(gz);
	}
	free(text);
}

/* The n bytes of text as the file name (and name.gz) in tmpdir, read
 * both ways (compare), then removed. */
static void compare_text(const char *name, const char *text, size_t n)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	write_pair(path, text, n);
	compare(path, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
	remove(path);
	snprintf(path, sizeof(path), "%s/%s.gz", tmpdir, name);
	compare(path, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
	remove(path);
}

/* Rows of 1 to 700 distinct indices in random order, some repeated: the
 * rank sort of short rows and the merge sort of long ones. */
static void test_long_rows(void)
{
	size_t n = 0;
	char *text = malloc(8 << 20);

	REQUIRE(text);
	rng_state = 12345;
	for (int i = 0; i < 60; i++) {
		int len = i < 40 ? i : 40 + (int)rnd(660);

		n += (size_t)sprintf(text + n, "%d", i % 2);
		for (int j = 0; j < len; j++)
			n += (size_t)sprintf(text + n, " %u:1",
					     rnd(i % 3 ? 100000 : 1000));
		text[n++] = '\n';
	}
	compare_text("long.svm", text, n);
	free(text);
}

/* Long rows over 100,000s of distinct features: chunks written through
 * their transpose, the keys' radix sort taking two passes (global ids
 * above 2^11 ... 2^22), beside chunks of short rows sorted row by row. */
static void test_wide_rows(void)
{
	size_t n = 0;
	char *text = malloc(8 << 20);

	REQUIRE(text);
	rng_state = 777;
	for (int i = 0; i < 260; i++) {
		int len = i % 50 < 5 ? (int)rnd(8) : 300 + (int)rnd(1200);

		n += (size_t)sprintf(text + n, "%d", i % 2);
		for (int j = 0; j < len; j++)
			n += (size_t)sprintf(text + n, " %u:1",
					     1 + rnd(j % 4 ? 400000 : 5000));
		text[n++] = '\n';
	}
	compare_text("wide.svm", text, n);
	free(text);
}

/* Examples without features for the first chunks (the CSR's columns are
 * not allocated yet when those chunks are written: no offset may be taken
 * from the null pointer, UBSan in make check), then some with, then none
 * again; and a file of such examples only. */
static void test_empty_rows_first(void)
{
	size_t n = 0;
	char *text = malloc(1 << 16);

	REQUIRE(text);
	for (int i = 0; i < 400; i++)
		n += (size_t)sprintf(text + n, "%d\n", i % 2 ? 1 : -1);
	compare_text("empty-only.svm", text, n);
	for (int i = 0; i < 50; i++)
		n += (size_t)sprintf(text + n, "1 %d:1 %d:2\n", i + 1, i + 7);
	for (int i = 0; i < 200; i++)
		n += (size_t)sprintf(text + n, "-1\n");
	compare_text("empty-first.svm", text, n);
	free(text);
}

/* A progress callback counting the calls during which the file named by
 * arg appears in /proc/self/maps. */
struct seen {
	const char *path;
	int calls, mapped;
};

static void on_progress_maps(void *arg, uint64_t done, uint64_t total)
{
	struct seen *sn = arg;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];

	(void)done;
	(void)total;
	sn->calls++;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, sn->path)) {
			sn->mapped++;
			break;
		}
	if (f)
		fclose(f);
}

/* A plain file is mapped while it is read (unless no_map); a gzipped one
 * never is; either way the result is the line reader's. */
static void test_mapped(void)
{
	char *text = malloc(1 << 20), path[512], gz[600];
	size_t n = 0;

	REQUIRE(text);
	rng_state = 77;
	while (n < (900u << 10)) { /* valid lines: 1-20 features */
		uint32_t k = 1 + rnd(20);

		n += (size_t)sprintf(text + n, "%d", rnd(2) ? 1 : -1);
		for (uint32_t i = 0; i < k; i++)
			n += (size_t)sprintf(text + n, " %u:%u.%u",
					     1 + rnd(5000), rnd(10), rnd(100));
		text[n++] = '\n';
	}
	snprintf(path, sizeof(path), "%s/mapped.svm", tmpdir);
	snprintf(gz, sizeof(gz), "%s.gz", path);
	write_pair(path, text, n);
	for (int g = 0; g < 2; g++) {
		for (int nm = 0; nm < 2; nm++) {
			struct part_read_opts o;
			struct part_dataset ds;
			struct parsa_err err;
			struct seen sn = { g ? gz : path, 0, 0 };

			memset(&o, 0, sizeof(o));
			o.threads = 2;
			o.chunk = 4096;
			o.no_map = nm;
			o.progress = on_progress_maps;
			o.progress_arg = &sn;
			part_dataset_init(&ds);
			parsa_err_clear(&err);
			if (part_preader_libsvm(sn.path, &o, &ds, &err)) {
				fprintf(stderr, "%s\n", err.msg);
				harness_cur_failed = 1;
			}
			CHECK_INT(sn.calls, >, 2);
			if (!g && !nm)
				CHECK_INT(sn.mapped, ==, sn.calls - 1);
			else
				CHECK_INT(sn.mapped, ==, 0);
			part_dataset_release(&ds);
		}
	}
	compare(path, PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
	remove(path);
	remove(gz);
	free(text);
}

/* The mapped path's edges: a file of one line without '\n' (only the
 * tail), with a bad one, of blank lines only, a NUL in the tail, CRLF
 * lines (cut in place: the mapping's pages copied), an empty file (not
 * mapped), each mapped and read (compare). */
static void test_mapped_edges(void)
{
#define EDGE(name, lit) { name, lit, sizeof(lit) - 1 }
	static const struct {
		const char *name, *text;
		size_t n;
	} t[] = {
		EDGE("tail-only.svm", "1 3:1 5:2"),
		EDGE("tail-bad.svm", "1 3:1\n-1 4:x"),
		EDGE("blank.svm", "\n\n \n\t\n"),
		EDGE("tail-nul.svm", "1 3:1\n1 4\0:1"),
		EDGE("crlf.svm", "1 3:1 4:2\r\n-1 5:1\r\n1 6:1"),
		EDGE("empty.svm", ""),
	};
#undef EDGE

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		compare_text(t[i].name, t[i].text, t[i].n);
}

/* A missing file and a directory: the line reader's I/O errors. */
static void test_open_errors(void)
{
	compare("tests/no-such-file.svm", PART_FMT_LIBSVM,
		PART_GRAPH_ADJACENCY, 1);
	compare("tests", PART_FMT_LIBSVM, PART_GRAPH_ADJACENCY, 1);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/parsa-preader-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	RUN(test_samples);
	RUN(test_bad_corpus);
	RUN(test_random_files);
	RUN(test_long_rows);
	RUN(test_wide_rows);
	RUN(test_empty_rows_first);
	RUN(test_open_errors);
	RUN(test_mapped);
	RUN(test_mapped_edges);
	printf("  %d comparisons\n", ncompared);
	rmdir(tmpdir);
	return harness_done();
}
