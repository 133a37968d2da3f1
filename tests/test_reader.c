/*
 * test_reader: the dataset readers (part_io, part_reader) and the shard
 * writer (part_shards).
 *
 * Small inputs are written to a mkdtemp directory (plain and gzipped) and
 * the exact rows, feature ids and counters are checked; the bad-input
 * corpus in tests/bad (see tests/bad/README) is replayed; when the shared
 * datasets exist ($PARSA_SHARED_DATA, default ../shared/data) their counts
 * are checked against the data README.  Run from the repository root.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "harness.h"
#include "testutil.h"
#include "part_hash.h"
#include "part_io.h"
#include "part_reader.h"
#include "part_shards.h"

static char tmpdir[256];

/* ---- helpers ---------------------------------------------------------- */

static const char *tpath(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static void write_gz(const char *path, const char *data, size_t n)
{
	gzFile g = gzopen(path, "wb");

	if (!g || (n && gzwrite(g, data, (unsigned)n) != (int)n)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	gzclose(g);
}

/* Write name (plain) and name.gz in the temp dir; returns the plain path. */
static const char *put(const char *name, const char *text)
{
	char gzname[256];

	snprintf(gzname, sizeof(gzname), "%s.gz", name);
	write_gz(tpath(gzname), text, strlen(text));
	tu_write_file(tpath(name), text, strlen(text));
	return tpath(name);
}

static int read_as(const char *path, enum part_format f,
		   enum part_graph_mode m, struct part_dataset *ds,
		   struct parsa_err *err)
{
	struct part_read_opts o;

	memset(&o, 0, sizeof(o));
	o.format = f;
	o.graph = m;
	parsa_err_clear(err);
	return part_read_file(path, &o, ds, err);
}

/*
 * Render ds as text: one line per example with the original feature ids in
 * the row's (compact) order, e.g. "5 3|7|" ; easy to compare exactly.
 */
static char *render(const struct part_dataset *ds)
{
	size_t cap = 64 + parsa_graph_nnz(&ds->g) * 22 + ds->g.n_rows * 2;
	char *s = malloc(cap), *p = s;

	if (!s)
		exit(2);
	*p = '\0';
	for (uint32_t r = 0; r < ds->g.n_rows; r++) {
		for (uint64_t e = ds->g.row_ptr[r]; e < ds->g.row_ptr[r + 1];
		     e++)
			p += snprintf(p, cap - (size_t)(p - s), "%s%" PRIu64,
				      e > ds->g.row_ptr[r] ? " " : "",
				      ds->feat_id[ds->g.col[e]]);
		p += snprintf(p, cap - (size_t)(p - s), "|");
	}
	return s;
}

static void check_render(const struct part_dataset *ds, const char *want)
{
	char *got = render(ds);

	CHECK_STR(got, want);
	free(got);
}

static char *feat_list(const struct part_dataset *ds)
{
	size_t cap = 32 + (size_t)ds->g.n_cols * 22;
	char *s = malloc(cap), *p = s;

	if (!s)
		exit(2);
	*p = '\0';
	for (uint32_t c = 0; c < ds->g.n_cols; c++)
		p += snprintf(p, cap - (size_t)(p - s), "%s%" PRIu64,
			      c ? " " : "", ds->feat_id[c]);
	return s;
}

static void check_feats(const struct part_dataset *ds, const char *want)
{
	char *got = feat_list(ds);

	CHECK_STR(got, want);
	free(got);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

static void check_file(const char *path, const char *want)
{
	char *got = slurp(path);

	CHECK_STR(got, want);
	free(got);
}

/* ---- the line reader -------------------------------------------------- */

static void test_lines_mem(void)
{
	static const char text[] = "a\r\n\nlong line here\r\r\nlast";
	const char *want[] = { "a", "", "long line here\r", "last" };
	struct part_lines *l;
	struct parsa_err err;
	const char *line;
	size_t len;
	int eof, i = 0;

	parsa_err_clear(&err);
	REQUIRE(part_lines_open_mem(&l, "m", text, sizeof(text) - 1, &err) ==
		0);
	CHECK_STR(part_lines_name(l), "m");
	CHECK_INT(part_lines_size(l), ==, sizeof(text) - 1);
	while (part_lines_next(l, &line, &len, &eof, &err) == 0 && !eof) {
		REQUIRE(i < 4);
		CHECK_STR(line, want[i]);
		CHECK_INT(len, ==, strlen(want[i]));
		CHECK_INT(part_lines_lineno(l), ==, i + 1);
		i++;
	}
	CHECK_INT(i, ==, 4);
	CHECK(eof);
	CHECK_INT(part_lines_bytes(l), ==, sizeof(text) - 1);
	/* eof is sticky */
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==, 0);
	CHECK(eof);
	part_lines_close(l);

	/* empty input: eof at once */
	REQUIRE(part_lines_open_mem(&l, NULL, "", 0, &err) == 0);
	CHECK_STR(part_lines_name(l), "<memory>");
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==, 0);
	CHECK(eof);
	CHECK_INT(part_lines_lineno(l), ==, 0);
	part_lines_close(l);
	part_lines_close(NULL);
}

static void test_lines_nul_and_long(void)
{
	size_t big = (3u << 20) + 17, n = big + 64;
	char *text = malloc(n);
	struct part_lines *l;
	struct parsa_err err;
	const char *line;
	size_t len;
	int eof;

	REQUIRE(text);
	memset(text, 'x', big);
	memcpy(text + big, "\nab\0c\n", 6);
	parsa_err_clear(&err);
	REQUIRE(part_lines_open_mem(&l, "big", text, big + 6, &err) == 0);
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==, 0);
	CHECK_INT(len, ==, big);
	CHECK_INT(strlen(line), ==, big);
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==,
		  PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "big:2:3: NUL byte");
	CHECK_INT(err.line, ==, 2);
	CHECK_INT(err.col, ==, 3);
	/* errors are sticky */
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==,
		  PARSA_EPARSE);
	part_lines_close(l);

	/* the same long line through a gzip file */
	write_gz(tpath("long.txt.gz"), text, big + 2);
	REQUIRE(part_lines_open(&l, tpath("long.txt.gz"), &err) == 0);
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==, 0);
	CHECK_INT(len, ==, big);
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==, 0);
	CHECK_STR(line, "a");
	CHECK_INT(part_lines_next(l, &line, &len, &eof, &err), ==, 0);
	CHECK(eof);
	CHECK(part_lines_size(l) > 0);
	CHECK_INT(part_lines_bytes(l), ==, part_lines_size(l));
	part_lines_close(l);
	free(text);
}

static void test_lines_open_errors(void)
{
	struct part_lines *l = (struct part_lines *)&l;
	struct parsa_err err;
	char path[600];

	parsa_err_clear(&err);
	snprintf(path, sizeof(path), "%s/no-such-file.svm", tmpdir);
	CHECK_INT(part_lines_open(&l, path, &err), ==, PARSA_EIO);
	CHECK(l == NULL);
	CHECK_CONTAINS(err.msg, "no-such-file.svm: No such file or directory");
	parsa_err_clear(&err);
	CHECK_INT(part_lines_open(&l, tmpdir, &err), ==, PARSA_EIO);
	CHECK_CONTAINS(err.msg, "is a directory");
	parsa_err_clear(&err);
	CHECK_INT(part_lines_open(&l, "", &err), ==, PARSA_EINVAL);
}

/* ---- the id map ----------------------------------------------------- */

static uint64_t key_of(uint32_t i)
{
	/* a mix of keys that start in the table and are later covered by
	 * the growing dense range, small keys, and huge keys */
	switch (i % 4) {
	case 0:
		return 70000 + (uint64_t)i * 3;
	case 1:
		return i / 4;
	case 2:
		return UINT64_MAX - i;
	default:
		return (uint64_t)i * 0x9E3779B97F4A7C15ULL;
	}
}

static void test_idmap(void)
{
	struct part_idmap m;
	struct parsa_err err;
	uint32_t id, n = 200000;
	int isnew;
	uint64_t *ids;

	part_idmap_init(&m);
	parsa_err_clear(&err);
	for (uint32_t i = 0; i < n; i++) {
		REQUIRE(part_idmap_get(&m, key_of(i), &id, &isnew, "keys",
				       &err) == 0);
		if (!isnew || id != i) {
			CHECK_INT(i, ==, id);
			CHECK(isnew);
			break;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!part_idmap_find(&m, key_of(i), &id) || id != i) {
			CHECK_INT(id, ==, i);
			break;
		}
		REQUIRE(part_idmap_get(&m, key_of(i), &id, &isnew, "keys",
				       &err) == 0);
		if (isnew || id != i) {
			CHECK(!isnew);
			break;
		}
	}
	CHECK(!part_idmap_find(&m, 12345678901ULL, &id));
	CHECK(!part_idmap_find(&m, n, &id));
	CHECK_INT(m.n, ==, n);
	ids = part_idmap_take_ids(&m);
	REQUIRE(ids);
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] != key_of(i)) {
			CHECK_INT(i, <, 0);
			break;
		}
	free(ids);
	CHECK(part_idmap_take_ids(&m) == NULL);
	part_idmap_release(&m);
}

/* part_idmap_clear: a reused map (dense and hashed keys) forgets every
 * key and numbers the next keys from 0 again. */
static void test_idmap_clear(void)
{
	struct part_idmap m;
	uint32_t id;
	int isnew;

	part_idmap_init(&m);
	for (int round = 0; round < 3; round++) {
		uint64_t salt = (uint64_t)round * 1000003;

		for (uint32_t i = 0; i < 5000; i++) {
			uint64_t key = (i % 2 ? (i + 1) * 0x9E3779B97F4A7C15ULL : i) +
				       salt;

			REQUIRE(part_idmap_get(&m, key, &id, &isnew, "keys",
					       NULL) == 0);
			CHECK(isnew && id == i);
		}
		CHECK_INT(m.n, ==, 5000);
		part_idmap_clear(&m);
		CHECK_INT(m.n, ==, 0);
		for (uint32_t i = 0; i < 5000; i += 97)
			CHECK(!part_idmap_find(
				&m, (i % 2 ? (i + 1) * 0x9E3779B97F4A7C15ULL : i) +
					    salt, &id));
	}
	part_idmap_release(&m);
}

/* ---- LIBSVM ------------------------------------------------------------- */

static const char libsvm_text[] =
	"# a comment line\n"
	"+1 7:1 3:0.5 7:2 0:1e-3\n"   /* decreasing, duplicate, index 0 */
	"\n"
	"   \t\n"
	"-1 qid:4 3:1e300 9:-.5 # trailing comment 1:1\n"
	"0\n"                         /* label only: empty example */
	"2.5 18446744073709551615:-0 5:+1\t3:0x1p3\n"
	"  -1 9:1";                   /* no final newline */

static void check_libsvm(const struct part_dataset *ds)
{
	check_render(ds, "7 3 0|3 9||3 18446744073709551615 5|9|");
	check_feats(ds, "7 3 0 9 18446744073709551615 5");
	CHECK_INT(ds->g.n_rows, ==, 5);
	CHECK_INT(ds->g.n_cols, ==, 6);
	CHECK_INT(ds->format, ==, PART_FMT_LIBSVM);
	CHECK_INT(ds->lines, ==, 8);
	CHECK_INT(ds->entries, ==, 4 + 2 + 3 + 1);
	CHECK_INT(ds->duplicates, ==, 1);
	CHECK_INT(ds->empty_rows, ==, 1);
	CHECK_INT(ds->self_loops, ==, 0);
}

static void test_libsvm(void)
{
	const char *path = put("a.svm", libsvm_text);
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, PART_FMT_AUTO, 0, &ds, &err) == 0);
	check_libsvm(&ds);
	CHECK_INT(parsa_graph_validate(&ds.g, &err), ==, 0);
	/* gzip: the same dataset; reading into a used ds replaces it */
	REQUIRE(read_as(tpath("a.svm.gz"), PART_FMT_AUTO, 0, &ds, &err) ==
		0);
	check_libsvm(&ds);
	/* AUTO by content (no known extension) */
	tu_write_file(tpath("a.data"), libsvm_text, strlen(libsvm_text));
	REQUIRE(read_as(tpath("a.data"), PART_FMT_AUTO, 0, &ds, &err) == 0);
	check_libsvm(&ds);
	part_dataset_release(&ds);
	part_dataset_release(&ds);  /* twice is fine */
}

static void test_libsvm_crlf(void)
{
	const char *path = put("crlf.svm", "1 1:1 2:1\r\n\r\n-1 2:0.5\r\n");
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, PART_FMT_LIBSVM, 0, &ds, &err) == 0);
	check_render(&ds, "1 2|2|");
	CHECK_INT(ds.lines, ==, 3);
	part_dataset_release(&ds);
}

/* ---- SNAP --------------------------------------------------------------- */

static const char snap_text[] =
	"# Directed graph\r\n"
	"# FromNodeId\tToNodeId\r\n"
	"10\t20\r\n"
	"20\t10\r\n"             /* reverse duplicate */
	"30 30\r\n"              /* self-loop, new vertex 30 without neighbours */
	"\r\n"
	"10   40 extra columns\r\n"
	"40\t10\r\n"             /* duplicate */
	"50\t50\r\n"             /* self-loop only: vertex 50 */
	"20 40\r\n"
	"18446744073709551615 10";

static void test_snap_adjacency(void)
{
	const char *path = put("g.txt", snap_text);
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, PART_FMT_AUTO, PART_GRAPH_ADJACENCY, &ds,
			&err) == 0);
	/* examples 10 20 30 40 50 max; columns: 10 20 40 max (30, 50 none) */
	CHECK_INT(ds.format, ==, PART_FMT_SNAP);
	CHECK_INT(ds.graph, ==, PART_GRAPH_ADJACENCY);
	CHECK_INT(ds.g.n_rows, ==, 6);
	CHECK_INT(ds.g.n_cols, ==, 4);
	check_feats(&ds, "10 20 40 18446744073709551615");
	check_render(&ds, "20 40 18446744073709551615|10 40||10 20||10|");
	CHECK_INT(ds.self_loops, ==, 2);
	CHECK_INT(ds.empty_rows, ==, 2);
	CHECK_INT(ds.entries, ==, 2 * 6);
	CHECK_INT(ds.duplicates, ==, 4);
	CHECK_INT(ds.lines, ==, 11);
	CHECK_INT(parsa_graph_validate(&ds.g, &err), ==, 0);
	REQUIRE(read_as(tpath("g.txt.gz"), PART_FMT_SNAP, 0, &ds, &err) ==
		0);
	check_render(&ds, "20 40 18446744073709551615|10 40||10 20||10|");
	part_dataset_release(&ds);
}

static void test_spill_ids(void)
{
	const char *path = put("sp.txt", snap_text);
	struct part_dataset ds;
	struct parsa_err err;
	uint64_t feat[4], ex[6];
	char dir[300];

	snprintf(dir, sizeof(dir), "%s/spill", tmpdir);
	REQUIRE(mkdir(dir, 0700) == 0);
	part_dataset_init(&ds);
	REQUIRE(read_as(path, PART_FMT_SNAP, PART_GRAPH_ADJACENCY, &ds,
			&err) == 0);
	REQUIRE(ds.g.n_cols == 4 && ds.g.n_rows == 6 && ds.ex_id);
	memcpy(feat, ds.feat_id, sizeof(feat));
	memcpy(ex, ds.ex_id, sizeof(ex));
	/* below the size floor, into a missing directory: stays on the heap */
	CHECK_INT(part_dataset_spill_ids(&ds, dir, 10 * 8 + 1), ==, 0);
	CHECK(ds.ids_map == NULL);
	snprintf(dir + strlen(dir), 40, "/none");
	CHECK_INT(part_dataset_spill_ids(&ds, dir, 0), ==, 0);
	CHECK(ds.ids_map == NULL);
	dir[strlen(dir) - 5] = '\0';
	/* moved: the same ids, read from the mapping; no file left behind */
	CHECK_INT(part_dataset_spill_ids(&ds, dir, 10 * 8), ==, 1);
	CHECK(ds.ids_map != NULL);
	CHECK_INT(ds.ids_map_len, ==, 10 * 8);
	CHECK(memcmp(ds.feat_id, feat, sizeof(feat)) == 0);
	CHECK(memcmp(ds.ex_id, ex, sizeof(ex)) == 0);
	CHECK_INT(tu_dir_entries(dir), ==, 0);
	check_feats(&ds, "10 20 40 18446744073709551615");
	CHECK_INT(part_dataset_spill_ids(&ds, dir, 0), ==, 0); /* once */
	ds.feat_id[0] = 7; /* private: writable, the file unchanged */
	CHECK_INT(ds.feat_id[0], ==, 7);
	part_dataset_release(&ds);
	CHECK(ds.feat_id == NULL && ds.ex_id == NULL && ds.ids_map == NULL);
	/* LIBSVM: no example ids */
	path = put("sp.svm", "1 3:1 9:1\n0 9:1 4:1\n");
	REQUIRE(read_as(path, PART_FMT_LIBSVM, 0, &ds, &err) == 0);
	CHECK_INT(part_dataset_spill_ids(&ds, dir, 0), ==, 1);
	CHECK(ds.ex_id == NULL);
	check_feats(&ds, "3 9 4");
	part_dataset_release(&ds);
	rmdir(dir);
}

static void test_snap_adjacency_shared_ids(void)
{
	/* no isolated vertex: feature id c is the vertex of example c */
	const char *path = put("g2.txt", "5 3\n3 8\n8 5\n9 3\n");
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, PART_FMT_SNAP, 0, &ds, &err) == 0);
	check_feats(&ds, "5 3 8 9");
	check_render(&ds, "3 8|5 8 9|5 3|3|");
	CHECK_INT(ds.empty_rows, ==, 0);
	part_dataset_release(&ds);
}

static void test_snap_edges(void)
{
	const char *path = put("e.edges", snap_text);
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, PART_FMT_AUTO, PART_GRAPH_EDGES, &ds, &err) ==
		0);
	CHECK_INT(ds.format, ==, PART_FMT_SNAP);
	CHECK_INT(ds.graph, ==, PART_GRAPH_EDGES);
	/* edges {10,20} {10,40} {20,40} {max,10} */
	CHECK_INT(ds.g.n_rows, ==, 4);
	check_feats(&ds, "10 20 40 18446744073709551615");
	check_render(&ds, "10 20|10 40|20 40|10 18446744073709551615|");
	CHECK_INT(ds.self_loops, ==, 2);
	CHECK_INT(ds.duplicates, ==, 2);
	CHECK_INT(ds.entries, ==, 12);
	CHECK_INT(ds.empty_rows, ==, 0);
	part_dataset_release(&ds);
}

/* ---- pairs -------------------------------------------------------------- */

static void test_pairs(void)
{
	const char *tsv = put("p.tsv", "# comment\n"
				       "7\t100\t0\n"
				       "3\t200\n"
				       "7\t300\t1\n"
				       "7\t100\t1\n"     /* duplicate pair */
				       "\n"
				       "3 100\n"         /* spaces */
				       "18446744073709551615\t18446744073709551615\n");
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(tsv, PART_FMT_AUTO, 0, &ds, &err) == 0);
	CHECK_INT(ds.format, ==, PART_FMT_PAIRS);
	check_feats(&ds, "100 200 300 18446744073709551615");
	check_render(&ds, "100 300|100 200|18446744073709551615|");
	CHECK_INT(ds.entries, ==, 6);
	CHECK_INT(ds.duplicates, ==, 1);
	CHECK_INT(ds.lines, ==, 8);
	REQUIRE(read_as(tpath("p.tsv.gz"), PART_FMT_AUTO, 0, &ds, &err) ==
		0);
	check_render(&ds, "100 300|100 200|18446744073709551615|");
	part_dataset_release(&ds);
}

static void test_pairs_movielens_header(void)
{
	const char *csv = put("ratings.csv",
			      "userId,movieId,rating,timestamp\r\n"
			      "1,31,2.5,1260759144\r\n"
			      "1,1029,3.0,1260759179\r\n"
			      "2, 31 ,4.0,1\r\n"
			      "1,31,5,2\r\n");
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	REQUIRE(read_as(csv, PART_FMT_AUTO, 0, &ds, &err) == 0);
	check_render(&ds, "31 1029|31|");
	CHECK_INT(ds.duplicates, ==, 1);
	REQUIRE(ds.ex_id != NULL); /* the users, in order of appearance */
	CHECK(ds.ex_id[0] == 1 && ds.ex_id[1] == 2);
	CHECK_INT(ds.lines, ==, 5);
	/* a header is only the first data line */
	csv = put("late.csv", "1,2\nuser,item\n");
	CHECK_INT(read_as(csv, PART_FMT_AUTO, 0, &ds, &err), ==,
		  PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "late.csv:2:1: user id is not an unsigned integer, got 'user'");
	/* the failed read kept the previous dataset */
	check_render(&ds, "31 1029|31|");
	part_dataset_release(&ds);
}

/* ---- AUTO, empty inputs, names ------------------------------------------- */

static void test_empty_inputs(void)
{
	const char *texts[] = { "", "\n\n", "# only\r\n# comments\n", "   " };
	struct part_dataset ds;
	struct parsa_err err;

	part_dataset_init(&ds);
	for (int i = 0; i < 4; i++) {
		const char *path = put("empty.dat", texts[i]);

		REQUIRE(read_as(path, PART_FMT_AUTO, 0, &ds, &err) == 0);
		CHECK_INT(ds.g.n_rows, ==, 0);
		CHECK_INT(ds.g.n_cols, ==, 0);
		CHECK_INT(parsa_graph_nnz(&ds.g), ==, 0);
		CHECK(ds.feat_id == NULL);
		CHECK_INT(ds.format, ==, PART_FMT_AUTO);
		for (int f = PART_FMT_LIBSVM; f <= PART_FMT_PAIRS; f++) {
			REQUIRE(read_as(tpath("empty.dat.gz"), f,
					PART_GRAPH_EDGES, &ds, &err) == 0);
			CHECK_INT(ds.g.n_rows, ==, 0);
			CHECK_INT(ds.format, ==, f);
		}
	}
	/* examples without features are kept */
	REQUIRE(read_as(put("labels.svm", "1\n-1\n"), 0, 0, &ds, &err) == 0);
	CHECK_INT(ds.g.n_rows, ==, 2);
	CHECK_INT(ds.g.n_cols, ==, 0);
	CHECK_INT(ds.empty_rows, ==, 2);
	REQUIRE(read_as(put("loops.txt", "4 4\n2 2\n4 4\n"), 0, 0, &ds,
			&err) == 0);
	CHECK_INT(ds.g.n_rows, ==, 2);
	CHECK_INT(ds.g.n_cols, ==, 0);
	CHECK_INT(ds.self_loops, ==, 3);
	REQUIRE(read_as(tpath("loops.txt"), 0, PART_GRAPH_EDGES, &ds, &err) ==
		0);
	CHECK_INT(ds.g.n_rows, ==, 0);
	part_dataset_release(&ds);
}

/*
 * part_libsvm_row (the streaming mode's parser): the same rules and
 * messages as the dataset reader, ids in line order with repeats kept.
 */
static void test_libsvm_row(void)
{
	static const struct {
		const char *line;
		int ok;
		size_t n;
		uint64_t ids[4];
		const char *msg; /* expected prefix of the message */
	} cases[] = {
		{ "+1 3:1 1:0.5 3:2", 1, 3, { 3, 1, 3 }, NULL },
		{ "  -1 qid:7 18446744073709551615:1e-3 # c", 1, 1,
		  { 18446744073709551615ULL }, NULL },
		{ "0", 1, 0, { 0 }, NULL },
		{ "1 0:1\t5:0x1p3", 1, 2, { 0, 5 }, NULL },
		/* nan and inf values are refused, as by the trainer */
		{ "1 0:1\t5:nan", 0, 0, { 0 }, "f.svm:9:9: value is not finite" },
		{ "1 5:-inf", 0, 0, { 0 }, "f.svm:9:5: value is not finite" },
		{ "1 5:1e999", 0, 0, { 0 }, "f.svm:9:5: value is not finite" },
		{ "1 x:1", 0, 0, { 0 }, "f.svm:9:3: expected 'index:value'" },
		{ "1 2:abc", 0, 0, { 0 }, "f.svm:9:5: value is not a number" },
		{ "3:1 4:1", 0, 0, { 0 }, "f.svm:9:1: expected a label" },
		{ "1 18446744073709551616:1", 0, 0, { 0 },
		  "f.svm:9:3: feature index out of range" },
	};
	uint64_t *ids = NULL;
	size_t cap = 0;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct parsa_err err = { 0 };
		size_t n = 99;
		int rc = part_libsvm_row("f.svm", 9, cases[c].line, &ids, &n,
					 &cap, &err);

		if (cases[c].ok) {
			CHECK_INT(rc, ==, 0);
			CHECK_INT(n, ==, cases[c].n);
			for (size_t j = 0; rc == 0 && j < n && j < 4; j++)
				CHECK_INT(ids[j], ==, cases[c].ids[j]);
		} else {
			CHECK_INT(rc, ==, PARSA_EPARSE);
			CHECK(strncmp(err.msg, cases[c].msg,
				      strlen(cases[c].msg)) == 0);
			if (strncmp(err.msg, cases[c].msg,
				    strlen(cases[c].msg)) != 0)
				fprintf(stderr, "  got: %s\n", err.msg);
		}
	}
	free(ids);
}

static void test_names(void)
{
	enum part_format f = PART_FMT_AUTO;
	enum part_graph_mode m = PART_GRAPH_ADJACENCY;

	CHECK_INT(part_format_guess("x/a9a.train.svm.gz"), ==, PART_FMT_LIBSVM);
	CHECK_INT(part_format_guess("A.LIBSVM"), ==, PART_FMT_LIBSVM);
	CHECK_INT(part_format_guess("b.svmlight"), ==, PART_FMT_LIBSVM);
	CHECK_INT(part_format_guess("r.csv.gz"), ==, PART_FMT_PAIRS);
	CHECK_INT(part_format_guess("g.tsv"), ==, PART_FMT_PAIRS);
	CHECK_INT(part_format_guess("wiki-Vote.txt.gz"), ==, PART_FMT_SNAP);
	CHECK_INT(part_format_guess("x.el"), ==, PART_FMT_SNAP);
	CHECK_INT(part_format_guess("x.edges"), ==, PART_FMT_SNAP);
	CHECK_INT(part_format_guess("x.snap"), ==, PART_FMT_SNAP);
	CHECK_INT(part_format_guess("x.gz"), ==, PART_FMT_AUTO);
	CHECK_INT(part_format_guess("svm"), ==, PART_FMT_AUTO);
	CHECK_INT(part_format_guess("x.svm/data"), ==, PART_FMT_AUTO);
	CHECK_INT(part_format_guess(NULL), ==, PART_FMT_AUTO);
	CHECK_INT(part_format_parse("snap", &f), ==, 0);
	CHECK_INT(f, ==, PART_FMT_SNAP);
	CHECK_INT(part_format_parse("LibSVM", &f), ==, 0);
	CHECK_INT(f, ==, PART_FMT_LIBSVM);
	CHECK_INT(part_format_parse("pairs", &f), ==, 0);
	CHECK_INT(f, ==, PART_FMT_PAIRS);
	CHECK_INT(part_format_parse("auto", &f), ==, 0);
	CHECK_INT(f, ==, PART_FMT_AUTO);
	CHECK_INT(part_format_parse("xml", &f), ==, PARSA_EINVAL);
	CHECK_INT(part_format_parse(NULL, &f), ==, PARSA_EINVAL);
	CHECK_STR(part_format_name(PART_FMT_PAIRS), "pairs");
	CHECK_STR(part_format_name(PART_FMT_LIBSVM), "libsvm");
	CHECK_STR(part_format_name((enum part_format)42), "unknown");
	CHECK_INT(part_graph_mode_parse("edges", &m), ==, 0);
	CHECK_INT(m, ==, PART_GRAPH_EDGES);
	CHECK_INT(part_graph_mode_parse("adjacency", &m), ==, 0);
	CHECK_INT(m, ==, PART_GRAPH_ADJACENCY);
	CHECK_INT(part_graph_mode_parse("vertex", &m), ==, PARSA_EINVAL);
	CHECK_STR(part_graph_mode_name(PART_GRAPH_EDGES), "edges");
	CHECK_STR(part_graph_mode_name(PART_GRAPH_ADJACENCY), "adjacency");
}

static void test_bad_args(void)
{
	struct part_read_opts o;
	struct part_dataset ds;
	struct parsa_err err;

	memset(&o, 0, sizeof(o));
	o.format = (enum part_format)9;
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	CHECK_INT(part_read_file(tpath("a.svm"), &o, &ds, &err), ==,
		  PARSA_EINVAL);
	parsa_err_clear(&err);
	CHECK_INT(part_read_file(tpath("missing.svm"), NULL, &ds, &err), ==,
		  PARSA_EIO);
	CHECK_CONTAINS(err.msg, "missing.svm: No such file");
}

struct prog {
	int calls;
	uint64_t done, total;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	CHECK(p->calls == 0 || done >= p->done);
	p->calls++;
	p->done = done;
	p->total = total;
}

static void test_progress(void)
{
	size_t n = 200000, len = 0;
	char *text = malloc(n * 16);
	struct part_read_opts o;
	struct part_dataset ds;
	struct parsa_err err;
	struct prog p = { 0, 0, 0 };

	REQUIRE(text);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, 16, "%zu %zu\n", i % 1000,
					i % 777);
	write_gz(tpath("prog.txt.gz"), text, len);
	free(text);
	memset(&o, 0, sizeof(o));
	o.progress = on_progress;
	o.progress_arg = &p;
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	REQUIRE(part_read_file(tpath("prog.txt.gz"), &o, &ds, &err) == 0);
	CHECK(p.calls >= 3);
	CHECK(p.total > 0);
	CHECK_INT(p.done, ==, p.total);
	CHECK_INT(ds.g.n_rows, ==, 1000);
	part_dataset_release(&ds);
}

/* ---- the bad-input corpus (tests/bad/README) ----------------------------- */

static int code_of(const char *name)
{
	if (strcmp(name, "EIO") == 0)
		return PARSA_EIO;
	if (strcmp(name, "ERANGE") == 0)
		return PARSA_ERANGE;
	if (strcmp(name, "ENOMEM") == 0)
		return PARSA_ENOMEM;
	return PARSA_EPARSE;
}

/* The input file of case stem: tests/bad/<stem>.<ext> other than .err. */
static int find_case_input(const char *stem, char *out, size_t cap)
{
	DIR *d = opendir("tests/bad");
	struct dirent *de;
	size_t n = strlen(stem);
	int found = 0;

	while (d && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, stem, n) != 0 || de->d_name[n] != '.' ||
		    strcmp(de->d_name + n, ".err") == 0)
			continue;
		snprintf(out, cap, "tests/bad/%s", de->d_name);
		found++;
	}
	if (d)
		closedir(d);
	return found == 1;
}

static void run_bad_case(const char *stem, int *ncases)
{
	char errpath[512], input[512], *spec, *line, *save = NULL;
	const char *want = NULL;
	struct part_read_opts o;
	struct part_dataset ds;
	struct parsa_err err;
	int code = PARSA_EPARSE, rc;

	snprintf(errpath, sizeof(errpath), "tests/bad/%s.err", stem);
	spec = slurp(errpath);
	CHECK(spec != NULL);
	if (!spec)
		return;
	if (!find_case_input(stem, input, sizeof(input))) {
		fprintf(stderr, "bad case %s: no single input file\n", stem);
		harness_cur_failed = 1;
		free(spec);
		return;
	}
	memset(&o, 0, sizeof(o));
	o.format = part_format_guess(input);
	for (line = strtok_r(spec, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "format=", 7) == 0)
			CHECK_INT(part_format_parse(line + 7, &o.format), ==, 0);
		else if (strncmp(line, "graph=", 6) == 0)
			CHECK_INT(part_graph_mode_parse(line + 6, &o.graph), ==,
				  0);
		else if (strncmp(line, "code=", 5) == 0)
			code = code_of(line + 5);
		else if (*line)
			want = line;
	}
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	rc = part_read_file(input, &o, &ds, &err);
	if (rc != code || !want || !strstr(err.msg, want)) {
		fprintf(stderr, "bad case %s: rc %d (want %d), message:\n  %s\n"
				"  want: %s\n",
			input, rc, code, err.msg, want ? want : "(none)");
		harness_cur_failed = 1;
	}
	CHECK_INT(ds.g.n_rows, ==, 0);
	CHECK(ds.feat_id == NULL);
	part_dataset_release(&ds);
	free(spec);
	(*ncases)++;
}

static void test_bad_corpus(void)
{
	DIR *d = opendir("tests/bad");
	struct dirent *de;
	int ncases = 0;

	if (!d)
		SKIP("tests/bad not found (run from the repository root)");
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		char stem[256];

		if (n < 5 || n >= sizeof(stem) ||
		    strcmp(de->d_name + n - 4, ".err") != 0)
			continue;
		memcpy(stem, de->d_name, n - 4);
		stem[n - 4] = '\0';
		run_bad_case(stem, &ncases);
	}
	closedir(d);
	printf("  %d bad-input cases\n", ncases);
	CHECK(ncases >= 20);
}

/* ---- shards ----------------------------------------------------------------- */

static void test_shards_libsvm(void)
{
	const char *path = put("s.svm", "# head\n"
					"1 5:1 2:0.5\r\n"
					"-1 2:1\n"
					"\n"
					"1 9:2 5:1\n"
					"0\n");
	uint32_t part[4] = { 1, 0, 1, 2 }, owner[3];
	struct part_dataset ds;
	struct parsa_err err;
	char dir[600], *sub;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, 0, 0, &ds, &err) == 0);
	REQUIRE(ds.g.n_cols == 3);  /* 5 2 9 */
	owner[0] = 2;
	owner[1] = 0;
	owner[2] = 2;
	snprintf(dir, sizeof(dir), "%s/shards/a/b", tmpdir);
	REQUIRE(part_write_shards(dir, path, &ds, part, owner, 4, &err) == 0);
	sub = dir + strlen(dir);
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/part-0.libsvm");
	check_file(dir, "-1 2:1\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/part-1.libsvm");
	check_file(dir, "1 5:1 2:0.5\n1 9:2 5:1\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/part-2.libsvm");
	check_file(dir, "0\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/part-3.libsvm");
	check_file(dir, "");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/features-0.txt");
	check_file(dir, "2\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/features-1.txt");
	check_file(dir, "");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/features-2.txt");
	check_file(dir, "5\n9\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/features-3.txt");
	check_file(dir, "");
	*sub = '\0';

	/* bad placement: nothing written */
	part[0] = 4;
	parsa_err_clear(&err);
	CHECK_INT(part_write_shards(dir, path, &ds, part, owner, 4, &err), ==,
		  PARSA_EINVAL);
	part[0] = 1;
	/* the data file changed: error and no file left behind */
	tu_write_file(tpath("s2.svm"), "1 1:1\n", 6);
	snprintf(dir, sizeof(dir), "%s/shards/changed", tmpdir);
	parsa_err_clear(&err);
	CHECK_INT(part_write_shards(dir, tpath("s2.svm"), &ds, part, owner, 4,
				    &err), ==, PARSA_EIO);
	CHECK_CONTAINS(err.msg, "fewer data lines");
	{
		DIR *d = opendir(dir);
		struct dirent *de;
		int files = 0;

		while (d && (de = readdir(d)) != NULL)
			files += de->d_name[0] != '.' ||
				 strstr(de->d_name, ".tmp.") != NULL;
		if (d)
			closedir(d);
		CHECK_INT(files, ==, 0);
	}
	part_dataset_release(&ds);
}

static void test_shards_snap(void)
{
	const char *path = put("sg.txt", "30 10\n10 20\n40 40\n");
	uint32_t part[4] = { 0, 1, 0, 1 }, owner[3] = { 1, 1, 0 };
	struct part_dataset ds;
	struct parsa_err err;
	char dir[600], *sub;

	part_dataset_init(&ds);
	REQUIRE(read_as(path, 0, 0, &ds, &err) == 0);
	/* examples 30 10 20 40; features 30 10 20 */
	check_render(&ds, "10|30 20|10||");
	REQUIRE(ds.ex_id != NULL);
	CHECK(ds.ex_id[0] == 30 && ds.ex_id[1] == 10 && ds.ex_id[2] == 20 &&
	      ds.ex_id[3] == 40);
	snprintf(dir, sizeof(dir), "%s/shards/snap", tmpdir);
	REQUIRE(part_write_shards(dir, NULL, &ds, part, owner, 2, &err) == 0);
	sub = dir + strlen(dir);
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/part-0.libsvm");
	/* each line keeps its example's own id as a comment */
	check_file(dir, "0 10:1 # 30\n0 10:1 # 20\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/part-1.libsvm");
	check_file(dir, "0 20:1 30:1 # 10\n0 # 40\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/features-0.txt");
	check_file(dir, "20\n");
	snprintf(sub, sizeof(dir) - (size_t)(sub - dir), "%s", "/features-1.txt");
	check_file(dir, "10\n30\n");
	part_dataset_release(&ds);
}

/* ---- the shared datasets -------------------------------------------------- */

struct shared_case {
	const char *file;
	enum part_graph_mode mode;
	uint32_t rows, cols;
	uint64_t nnz;           /* 0 = not checked */
	enum part_format fmt;
};

static void test_shared_data(void)
{
	static const struct shared_case cases[] = {
		{ "libsvm/a9a.train.svm.gz", 0, 32561, 123, 451592, PART_FMT_LIBSVM },
		{ "libsvm/a9a.test.svm.gz", 0, 16281, 123, 225732, PART_FMT_LIBSVM },
		{ "libsvm/reuters_lasvm.train.svm.gz", 0, 7770, 8156, 339837, PART_FMT_LIBSVM },
		{ "libsvm/reuters_lasvm.test.svm.gz", 0, 3299, 6955, 136821, PART_FMT_LIBSVM },
		{ "libsvm/ap_blei.svm.gz", 0, 2246, 10473, 302031, PART_FMT_LIBSVM },
		/* adjacency: nnz = 2 x distinct undirected non-loop pairs */
		{ "graphs/email-Enron.txt.gz", 0, 36692, 36692, 367662, PART_FMT_SNAP },
		{ "graphs/wiki-Vote.txt.gz", 0, 7115, 7115, 201524, PART_FMT_SNAP },
		{ "graphs/wiki-Vote.txt.gz", PART_GRAPH_EDGES, 100762, 7115, 201524, PART_FMT_SNAP },
		{ "graphs/facebook_combined.txt.gz", 0, 4039, 4039, 176468, PART_FMT_SNAP },
		{ "graphs/facebook_combined.txt.gz", PART_GRAPH_EDGES, 88234, 4039, 176468, PART_FMT_SNAP },
		{ "graphs/soc-Slashdot0902.txt.gz", 0, 82168, 82168, 0, PART_FMT_SNAP },
		/* 582,533 distinct pairs include the self-loops: 78,303 */
		{ "graphs/soc-Slashdot0902.txt.gz", PART_GRAPH_EDGES, 582533 - 78303, 0, 0, PART_FMT_SNAP },
		{ "bipartite/gowalla_lightgcn.tsv.gz", 0, 29858, 40981, 1027370, PART_FMT_PAIRS },
		{ "bipartite/movielens-latest-small_ratings.csv.gz", 0, 610, 9724, 100836, PART_FMT_PAIRS },
	};
	const char *dir = getenv("PARSA_SHARED_DATA");
	char path[1024];
	struct stat st;
	struct part_dataset ds;
	struct parsa_err err;

	if (!dir || !*dir)
		dir = "../shared/data";
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		SKIP("shared data not found at %s (set PARSA_SHARED_DATA)", dir);
	part_dataset_init(&ds);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct shared_case *c = &cases[i];

		snprintf(path, sizeof(path), "%s/%s", dir, c->file);
		if (read_as(path, PART_FMT_AUTO, c->mode, &ds, &err) != 0) {
			fprintf(stderr, "%s: %s\n", path, err.msg);
			harness_cur_failed = 1;
			continue;
		}
		CHECK_INT(ds.format, ==, c->fmt);
		CHECK_INT(ds.g.n_rows, ==, c->rows);
		if (c->cols)
			CHECK_INT(ds.g.n_cols, ==, c->cols);
		if (c->nnz)
			CHECK_INT(parsa_graph_nnz(&ds.g), ==, c->nnz);
		CHECK_INT(parsa_graph_validate(&ds.g, &err), ==, 0);
		if (strstr(c->file, "Slashdot"))
			CHECK_INT(ds.self_loops, ==, 78303);
		if (strstr(c->file, "gowalla"))
			CHECK_INT(ds.duplicates, ==, 0);
		printf("  %s (%s): %u x %u, %" PRIu64 " nonzeros\n", c->file,
		       part_graph_mode_name(c->mode), ds.g.n_rows, ds.g.n_cols,
		       parsa_graph_nnz(&ds.g));
	}
	part_dataset_release(&ds);
}

/* ---- main ------------------------------------------------------------------- */

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char sub[1024];
	struct stat st;

	while (d && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(sub);
		else
			unlink(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/parsa-reader-XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	RUN(test_lines_mem);
	RUN(test_lines_nul_and_long);
	RUN(test_lines_open_errors);
	RUN(test_idmap);
	RUN(test_libsvm);
	RUN(test_libsvm_crlf);
	RUN(test_snap_adjacency);
	RUN(test_snap_adjacency_shared_ids);
	RUN(test_snap_edges);
	RUN(test_pairs);
	RUN(test_pairs_movielens_header);
	RUN(test_empty_inputs);
	RUN(test_names);
	RUN(test_idmap_clear);
	RUN(test_libsvm_row);
	RUN(test_bad_args);
	RUN(test_progress);
	RUN(test_bad_corpus);
	RUN(test_spill_ids);
	RUN(test_shards_libsvm);
	RUN(test_shards_snap);
	RUN(test_shared_data);
	remove_tree(tmpdir);
	return harness_done();
}
