/*
 * test_cache: the binary dataset cache (partitioner/part_cache.h).
 *
 * Round trips of random small datasets of every format kind (LIBSVM, SNAP
 * adjacency and edges, pairs) read from text, written and read back (mapped
 * and from memory): every array and count equal, the stored transpose equal
 * to parsa_graph_transpose; an empty dataset; truncation at every section
 * boundary and at random points; every byte of a small file flipped (each
 * one refused, never a crash), and flipped with the checksums recomputed
 * (refused or sound, never a read past the file: a hostile file carries
 * right checksums); rows whose offsets run past the nonzeros; repeated
 * feature ids; trailing bytes; a wrong version; a foreign
 * byte order; a file that is no cache; format and graph-mode mismatches.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"
#include "parsa_rng.h"
#include "part_cache.h"
#include "part_reader.h"

static char tmpdir[256];

static const char *tpath(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b;
	long len;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(2);
	}
	rewind(f);
	b = malloc((size_t)len + 1);
	if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*n = (size_t)len;
	return b;
}

/* ---- random text datasets ------------------------------------------------ */

enum kind { K_LIBSVM, K_SNAP_ADJ, K_SNAP_EDGES, K_PAIRS, K_N };

static const char *const kind_file[K_N] = {"r.svm", "r.txt", "r.txt",
					   "r.tsv"};

/* A random text file of kind k (duplicates, self-loops, empty rows,
 * big ids included); returns its path. */
static const char *random_text(enum kind k, struct parsa_rng *r)
{
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	uint32_t rows = 1 + (uint32_t)parsa_rng_below(r, 40);
	uint64_t idspace = 2 + parsa_rng_below(r, 60);
	uint64_t big = parsa_rng_below(r, 2) ? UINT64_C(1) << 50 : 0;

	if (!s)
		exit(2);
	for (uint32_t i = 0; i < rows; i++) {
		uint32_t d = (uint32_t)parsa_rng_below(r, 6);

		if (n + 512 > cap)
			break;
		if (k == K_LIBSVM) {
			n += (size_t)sprintf(s + n, "%d", (int)parsa_rng_below(r, 2));
			for (uint32_t j = 0; j < d; j++) {
				/* (the order gcc evaluated them as arguments) */
				double x = parsa_rng_double(r);
				uint64_t id = big + parsa_rng_below(r, idspace);

				n += (size_t)sprintf(s + n, " %llu:%.2f",
						     (unsigned long long)id, x);
			}
			s[n++] = '\n';
		} else {
			n += (size_t)sprintf(s + n, "%llu%s%llu\n",
					     (unsigned long long)(big + parsa_rng_below(r, idspace)),
					     k == K_PAIRS ? "\t" : " ",
					     (unsigned long long)(big + parsa_rng_below(r, idspace)));
		}
		if (parsa_rng_below(r, 8) == 0)
			n += (size_t)sprintf(s + n, "# comment\n");
	}
	tu_write_file(tpath(kind_file[k]), s, n);
	free(s);
	return tpath(kind_file[k]);
}

static int read_text(const char *path, enum kind k, struct part_dataset *ds)
{
	struct part_read_opts o;
	struct parsa_err err;

	memset(&o, 0, sizeof(o));
	o.format = k == K_LIBSVM ? PART_FMT_LIBSVM :
		   k == K_PAIRS ? PART_FMT_PAIRS : PART_FMT_SNAP;
	o.graph = k == K_SNAP_EDGES ? PART_GRAPH_EDGES : PART_GRAPH_ADJACENCY;
	parsa_err_clear(&err);
	return part_read_file(path, &o, ds, &err);
}

static struct part_read_opts opts_of(enum kind k)
{
	struct part_read_opts o;

	memset(&o, 0, sizeof(o));
	o.graph = k == K_SNAP_EDGES ? PART_GRAPH_EDGES : PART_GRAPH_ADJACENCY;
	return o;
}

/* ---- comparisons --------------------------------------------------------- */

static int same_graph(const struct parsa_graph *a, const struct parsa_graph *b)
{
	uint64_t nnz = parsa_graph_nnz(a);

	if (a->n_rows != b->n_rows || a->n_cols != b->n_cols ||
	    nnz != parsa_graph_nnz(b) || (!a->row_ptr) != (!b->row_ptr))
		return 0;
	if (a->row_ptr &&
	    (memcmp(a->row_ptr, b->row_ptr, ((size_t)a->n_rows + 1) * 8) ||
	     (nnz && memcmp(a->col, b->col, (size_t)nnz * 4))))
		return 0;
	return 1;
}

static int same_ds(const struct part_dataset *a, const struct part_dataset *b)
{
	return same_graph(&a->g, &b->g) && a->format == b->format &&
	       a->graph == b->graph && a->lines == b->lines &&
	       a->entries == b->entries && a->duplicates == b->duplicates &&
	       a->self_loops == b->self_loops && a->empty_rows == b->empty_rows &&
	       (a->g.n_cols == 0 ||
		memcmp(a->feat_id, b->feat_id, (size_t)a->g.n_cols * 8) == 0);
}

/* Write ds to name, read it back both ways and compare. */
static void round_trip(const struct part_dataset *ds, const char *name,
		       const struct part_read_opts *o, int no_transpose)
{
	struct part_cache_write_opts wo;
	struct part_dataset back, mem;
	struct parsa_graph t, want;
	struct parsa_err err;
	unsigned char *buf;
	size_t n;

	memset(&wo, 0, sizeof(wo));
	wo.no_transpose = no_transpose;
	parsa_err_clear(&err);
	CHECK_INT(part_cache_write(tpath(name), ds, &wo, &err), ==, 0);
	CHECK_INT(part_cache_probe(tpath(name)), ==, 1);
	part_dataset_init(&back);
	part_dataset_init(&mem);
	CHECK_INT(part_cache_read(tpath(name), o, &back, &err), ==, 0);
	if (err.msg[0])
		fprintf(stderr, "  %s\n", err.msg);
	CHECK(same_ds(ds, &back));
	CHECK(back.g.n_rows == 0 || back.map != NULL);
	/* part_read_file takes the cache too, by its content */
	CHECK_INT(part_read_file(tpath(name), o, &back, &err), ==, 0);
	CHECK(same_ds(ds, &back));
	buf = slurp(tpath(name), &n);
	CHECK_INT(part_cache_read_mem(name, buf, n, o, &mem, &err), ==, 0);
	CHECK(same_ds(ds, &mem));
	CHECK(mem.map == NULL);
	free(buf);
	parsa_graph_init(&t);
	parsa_graph_init(&want);
	if (no_transpose) {
		CHECK_INT(part_cache_read_transpose(tpath(name), &t, &err), ==,
			  PARSA_EINVAL);
	} else {
		CHECK_INT(part_cache_read_transpose(tpath(name), &t, &err), ==, 0);
		if (ds->g.n_rows)
			CHECK_INT(parsa_graph_transpose(&ds->g, &want, &err), ==, 0);
		CHECK(same_graph(&t, &want) ||
		      (ds->g.n_rows == 0 && t.row_ptr == NULL));
	}
	parsa_graph_release(&t);
	parsa_graph_release(&want);
	part_dataset_release(&back);
	part_dataset_release(&back);  /* twice is fine */
	part_dataset_release(&mem);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_round_trip_random(void)
{
	struct parsa_rng r;

	parsa_rng_seed(&r, 17);
	for (int trial = 0; trial < 200; trial++) {
		enum kind k = (enum kind)(trial % K_N);
		struct part_dataset ds;
		struct part_read_opts o = opts_of(k);
		const char *path = random_text(k, &r);

		part_dataset_init(&ds);
		REQUIRE(read_text(path, k, &ds) == 0);
		round_trip(&ds, "r.pcsr", &o, trial % 7 == 3);
		part_dataset_release(&ds);
		if (harness_cur_failed) {
			fprintf(stderr, "  trial %d kind %d\n", trial, (int)k);
			return;
		}
	}
}

static void test_empty_dataset(void)
{
	struct part_dataset ds, back;
	struct part_read_opts o;
	struct parsa_err err;

	memset(&o, 0, sizeof(o));
	tu_write_file(tpath("empty.svm"), "# nothing\n\n", 11);
	part_dataset_init(&ds);
	REQUIRE(read_text(tpath("empty.svm"), K_LIBSVM, &ds) == 0);
	CHECK_INT(ds.g.n_rows, ==, 0);
	round_trip(&ds, "empty.pcsr", &o, 0);
	round_trip(&ds, "empty.pcsr", &o, 1);
	/* a dataset that never saw anything (format AUTO) */
	part_dataset_release(&ds);
	round_trip(&ds, "empty.pcsr", &o, 0);
	part_dataset_init(&back);
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read(tpath("empty.pcsr"), &o, &back, &err), ==, 0);
	CHECK_INT(back.g.n_rows, ==, 0);
	CHECK(back.g.row_ptr == NULL);
	part_dataset_release(&back);
}

/* A small cache of a fixed SNAP graph; its bytes in *n. */
static unsigned char *small_cache(const char *name, size_t *n)
{
	static const char text[] = "1 2\n2 3\n3 1\n4 4\n5 1\n2 1\n";
	struct part_dataset ds;
	struct parsa_err err;

	tu_write_file(tpath("small.txt"), text, sizeof(text) - 1);
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	if (read_text(tpath("small.txt"), K_SNAP_ADJ, &ds) ||
	    part_cache_write(tpath(name), &ds, NULL, &err)) {
		fprintf(stderr, "small_cache: %s\n", err.msg);
		exit(2);
	}
	part_dataset_release(&ds);
	return slurp(tpath(name), n);
}

/* Read the cache bytes b[0..n) from a file and from memory: both must fail
 * with PARSA_EPARSE and a message naming the file; want (if any) in it. */
static int refused(const unsigned char *b, size_t n, const char *want)
{
	struct part_dataset ds;
	struct parsa_err err;
	const char *path = tpath("bad.pcsr");
	int ok = 1, rc;

	tu_write_file(path, b, n);
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	rc = part_cache_read(path, NULL, &ds, &err);
	if (rc != PARSA_EPARSE || !strstr(err.msg, path) ||
	    (want && !strstr(err.msg, want))) {
		fprintf(stderr, "  file of %zu bytes: rc %d '%s' (want '%s')\n",
			n, rc, err.msg, want ? want : "");
		ok = 0;
	}
	CHECK(ds.g.row_ptr == NULL && ds.map == NULL);
	parsa_err_clear(&err);
	rc = part_cache_read_mem("mem.pcsr", b, n, NULL, &ds, &err);
	if (rc != PARSA_EPARSE || !strstr(err.msg, "mem.pcsr") ||
	    (want && !strstr(err.msg, want))) {
		fprintf(stderr, "  memory of %zu bytes: rc %d '%s'\n", n, rc,
			err.msg);
		ok = 0;
	}
	part_dataset_release(&ds);
	return ok;
}

/* The section table entry i of a cache: offset and length. */
static void section(const unsigned char *b, int i, uint64_t *off,
		    uint64_t *len)
{
	memcpy(off, b + 128 + 32 * i + 8, 8);
	memcpy(len, b + 128 + 32 * i + 16, 8);
}

static void test_truncated(void)
{
	size_t n;
	unsigned char *b = small_cache("t.pcsr", &n);
	uint32_t ns;
	struct parsa_rng r;

	memcpy(&ns, b + 20, 4);
	CHECK_INT(ns, ==, 5);
	CHECK(refused(b, 0, "not a parsa dataset cache"));
	CHECK(refused(b, 4, "not a parsa dataset cache"));
	CHECK(refused(b, 8, "truncated"));
	CHECK(refused(b, 127, "truncated"));
	CHECK(refused(b, 128, "truncated"));
	CHECK(refused(b, 128 + 32 * ns - 1, "truncated"));
	for (uint32_t i = 0; i < ns; i++) {
		uint64_t off, len;

		section(b, (int)i, &off, &len);
		for (int d = -1; d <= 1; d++) {
			if (off + d < n)
				CHECK(refused(b, (size_t)(off + d), "truncated"));
			if (off + len + d < n)
				CHECK(refused(b, (size_t)(off + len + d), "truncated"));
		}
	}
	parsa_rng_seed(&r, 5);
	for (int i = 0; i < 50; i++)
		CHECK(refused(b, (size_t)parsa_rng_below(&r, n), NULL));
	free(b);
}

static void test_trailing_bytes(void)
{
	size_t n;
	unsigned char *b = small_cache("t.pcsr", &n), *c = malloc(n + 64);

	REQUIRE(c);
	memcpy(c, b, n);
	memset(c + n, 0, 64);
	CHECK(refused(c, n + 1, "after its end"));
	CHECK(refused(c, n + 64, "after its end"));
	free(b);
	free(c);
}

static void test_every_byte_flipped(void)
{
	struct part_dataset ds;
	struct parsa_err err;
	size_t n, bad = 0;
	unsigned char *b = small_cache("f.pcsr", &n);

	CHECK(n < 2048);
	part_dataset_init(&ds);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			int rc;

			b[i] ^= (unsigned char)(1u << bit);
			parsa_err_clear(&err);
			rc = part_cache_read_mem("flip.pcsr", b, n, NULL, &ds, &err);
			if (rc != PARSA_EPARSE || !strstr(err.msg, "flip.pcsr")) {
				if (bad++ < 5)
					fprintf(stderr, "  byte %zu bit %d: rc %d '%s'\n",
						i, bit, rc, err.msg);
			}
			b[i] ^= (unsigned char)(1u << bit);
		}
	}
	CHECK_INT(bad, ==, 0);
	/* whole bytes through the file path, a few positions */
	for (size_t i = 0; i < n; i += 37) {
		b[i] ^= 0xff;
		CHECK(refused(b, n, NULL));
		b[i] ^= 0xff;
	}
	/* and the original still reads */
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read_mem("ok.pcsr", b, n, NULL, &ds, &err), ==, 0);
	part_dataset_release(&ds);
	free(b);
}

static void test_wrong_version_and_endianness(void)
{
	size_t n;
	unsigned char *b = small_cache("v.pcsr", &n);
	uint32_t v = 2, e;

	memcpy(b + 8, &v, 4);
	CHECK(refused(b, n, "version 2, this parsa reads version 1"));
	v = 1;
	memcpy(b + 8, &v, 4);
	memcpy(&e, b + 12, 4);
	e = __builtin_bswap32(e);
	memcpy(b + 12, &e, 4);
	CHECK(refused(b, n, "foreign endianness"));
	/* a whole header in the other byte order */
	v = __builtin_bswap32(1);
	memcpy(b + 8, &v, 4);
	CHECK(refused(b, n, "foreign endianness"));
	free(b);
}

static void test_not_a_cache(void)
{
	struct part_dataset ds;
	struct parsa_err err;
	static const char text[] = "1 1:1 2:1\n";

	tu_write_file(tpath("plain.svm"), text, sizeof(text) - 1);
	CHECK_INT(part_cache_probe(tpath("plain.svm")), ==, 0);
	CHECK_INT(part_cache_probe(tpath("missing")), ==, 0);
	CHECK_INT(part_cache_probe("-"), ==, 0);
	CHECK_INT(part_cache_probe(tmpdir), ==, 0);
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read(tpath("plain.svm"), NULL, &ds, &err), ==,
		  PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "not a parsa dataset cache");
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read(tpath("missing"), NULL, &ds, &err), ==,
		  PARSA_EIO);
	CHECK_CONTAINS(err.msg, "missing");
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read(tmpdir, NULL, &ds, &err), ==, PARSA_EIO);
	/* a file with the magic and garbage after it: the cache's error, by
	 * content, whatever the name */
	tu_write_file(tpath("garbage.svm"), "PCSR\r\n\x1a\nxxxxxxxxxxxxxxxxxxxxxx",
		   30);
	parsa_err_clear(&err);
	CHECK_INT(part_read_file(tpath("garbage.svm"), NULL, &ds, &err), ==,
		  PARSA_EPARSE);
	CHECK_CONTAINS(err.msg, "truncated pcsr file");
	part_dataset_release(&ds);
}

static void test_mode_mismatch(void)
{
	struct part_dataset ds;
	struct part_read_opts o;
	struct parsa_err err;
	size_t n;
	unsigned char *b = small_cache("m.pcsr", &n);

	part_dataset_init(&ds);
	memset(&o, 0, sizeof(o));
	o.format = PART_FMT_LIBSVM;
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read(tpath("m.pcsr"), &o, &ds, &err), ==,
		  PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "a cache of snap data, not libsvm");
	o.format = PART_FMT_SNAP;
	o.graph = PART_GRAPH_EDGES;
	parsa_err_clear(&err);
	CHECK_INT(part_cache_read(tpath("m.pcsr"), &o, &ds, &err), ==,
		  PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "adjacency mode, not edges");
	o.graph = PART_GRAPH_ADJACENCY;
	CHECK_INT(part_cache_read(tpath("m.pcsr"), &o, &ds, &err), ==, 0);
	CHECK_INT(ds.g.n_rows, ==, 5);
	part_dataset_release(&ds);
	free(b);
}

/* Values for ds: labels alternating, each row's columns reversed, values
 * 1 + e / 8; *bad_y, *bad_col, *bad_val plant one broken invariant. */
static void make_values(const struct part_dataset *ds, int8_t **y,
			uint32_t **col, double **val, int bad)
{
	uint64_t nnz = parsa_graph_nnz(&ds->g);

	*y = malloc((size_t)ds->g.n_rows + 1);
	*col = malloc((size_t)nnz * 4 + 4);
	*val = malloc((size_t)nnz * 8 + 8);
	if (!*y || !*col || !*val)
		exit(2);
	for (uint32_t r = 0; r < ds->g.n_rows; r++) {
		uint64_t a = ds->g.row_ptr[r], b = ds->g.row_ptr[r + 1];

		(*y)[r] = r % 2 ? 1 : -1;
		for (uint64_t e = a; e < b; e++) {
			(*col)[e] = ds->g.col[a + b - 1 - e];
			(*val)[e] = 1.0 + (double)e / 8;
		}
	}
	if (bad == 1)
		(*y)[ds->g.n_rows - 1] = 0;
	if (bad == 2) /* a column twice in a row with two entries */
		for (uint32_t r = 0; r < ds->g.n_rows; r++)
			if (ds->g.row_ptr[r + 1] - ds->g.row_ptr[r] >= 2) {
				(*col)[ds->g.row_ptr[r]] = (*col)[ds->g.row_ptr[r] + 1];
				break;
			}
	if (bad == 3)
		(*val)[nnz / 2] = 0.0 / 0.0;
}

static void test_values(void)
{
	static const char text[] = "1 5:1 3:2 9:3\n-1 3:1\n1\n1 9:1 4:2\n";
	static const char *const want[] = {NULL, "label of example 3 is 0",
					   "does not match its row",
					   "is not finite"};
	struct part_cache_write_opts wo;
	struct part_cache_values v, back;
	struct part_dataset ds, rd;
	struct parsa_err err;
	int8_t *y;
	uint32_t *col;
	double *val;
	size_t n, bad = 0;
	unsigned char *b;

	tu_write_file(tpath("v.svm"), text, sizeof(text) - 1);
	part_dataset_init(&ds);
	part_dataset_init(&rd);
	REQUIRE(read_text(tpath("v.svm"), K_LIBSVM, &ds) == 0);
	for (int planted = 0; planted < 4; planted++) {
		make_values(&ds, &y, &col, &val, planted);
		v = (struct part_cache_values){y, col, val};
		memset(&wo, 0, sizeof(wo));
		wo.values = &v;
		parsa_err_clear(&err);
		CHECK_INT(part_cache_write(tpath("v.pcsr"), &ds, &wo, &err), ==, 0);
		parsa_err_clear(&err);
		if (planted == 0) {
			CHECK_INT(part_cache_read_values(tpath("v.pcsr"), &rd, &back, &err), ==, 0);
			CHECK(same_ds(&ds, &rd));
			CHECK(memcmp(back.y, y, ds.g.n_rows) == 0);
			CHECK(memcmp(back.col, col, (size_t)parsa_graph_nnz(&ds.g) * 4) == 0);
			CHECK(memcmp(back.val, val, (size_t)parsa_graph_nnz(&ds.g) * 8) == 0);
		} else {
			CHECK_INT(part_cache_read_values(tpath("v.pcsr"), &rd, &back, &err), ==, PARSA_EPARSE);
			CHECK_CONTAINS(err.msg, want[planted]);
			b = slurp(tpath("v.pcsr"), &n);
			parsa_err_clear(&err);
			CHECK_INT(part_cache_read_mem("m", b, n, NULL, &rd, &err), ==, PARSA_EPARSE);
			CHECK_CONTAINS(err.msg, want[planted]);
			free(b);
		}
		/* the dataset reads the same either way (it does not use them) */
		parsa_err_clear(&err);
		CHECK_INT(part_cache_read(tpath("v.pcsr"), NULL, &rd, &err), ==, 0);
		CHECK(same_ds(&ds, &rd));
		free(y);
		free(col);
		free(val);
	}
	/* a cache without values says so */
	parsa_err_clear(&err);
	CHECK_INT(part_cache_write(tpath("nv.pcsr"), &ds, NULL, &err), ==, 0);
	CHECK_INT(part_cache_read_values(tpath("nv.pcsr"), &rd, &back, &err), ==, PARSA_EINVAL);
	CHECK_CONTAINS(err.msg, "holds no labels or values");
	parsa_err_clear(&err);
	/* every byte of the valid file with values flipped */
	make_values(&ds, &y, &col, &val, 0);
	v = (struct part_cache_values){y, col, val};
	wo.values = &v;
	CHECK_INT(part_cache_write(tpath("v.pcsr"), &ds, &wo, &err), ==, 0);
	b = slurp(tpath("v.pcsr"), &n);
	for (size_t i = 0; i < n; i++) {
		b[i] ^= 0x20;
		parsa_err_clear(&err);
		if (part_cache_read_mem("flip", b, n, NULL, &rd, &err) != PARSA_EPARSE)
			bad++;
		b[i] ^= 0x20;
	}
	CHECK_INT(bad, ==, 0);
	free(b);
	free(y);
	free(col);
	free(val);
	part_dataset_release(&rd);
	part_dataset_release(&ds);
}

/* A dataset read back from a file that passed every check: the invariants
 * the callers rely on (as the fuzzer checks them). */
static int sound(const struct part_dataset *ds)
{
	struct parsa_err e;

	parsa_err_clear(&e);
	for (uint32_t i = 0; ds->feat_id && i < ds->g.n_cols; i++)
		for (uint32_t j = i + 1; j < ds->g.n_cols; j++)
			if (ds->feat_id[i] == ds->feat_id[j])
				return 0;
	return parsa_graph_validate(&ds->g, &e) == 0 &&
	       (ds->g.n_cols == 0 || ds->feat_id) &&
	       ds->format <= PART_FMT_PAIRS && ds->graph <= PART_GRAPH_EDGES;
}

/* b[0..n) with byte i's bits `mask` flipped and the checksums recomputed
 * (a hostile file carries right checksums): refused with a message
 * naming it, or read as a sound dataset; never a crash or a read past
 * the buffer (ASan in make check).  Returns 1 when that held. */
static int flip_resealed(const unsigned char *b, size_t n, size_t i,
			 unsigned mask, int values)
{
	unsigned char *c = malloc(n);
	struct part_dataset ds;
	struct parsa_err err;
	int rc, ok;

	if (!c)
		exit(2);
	memcpy(c, b, n);
	c[i] ^= (unsigned char)mask;
	part_cache_reseal(c, n);
	part_dataset_init(&ds);
	parsa_err_clear(&err);
	rc = part_cache_read_mem("sealed.pcsr", c, n, NULL, &ds, &err);
	ok = rc == 0 ? sound(&ds)
		     : (err.code == rc && strstr(err.msg, "sealed.pcsr") != NULL);
	if (rc == 0 && values) { /* and the trainer's and the transpose's */
		struct part_cache_values v;
		struct part_dataset vd;
		struct parsa_graph t;

		tu_write_file(tpath("sealed.pcsr"), c, n);
		part_dataset_init(&vd);
		parsa_err_clear(&err);
		rc = part_cache_read_values(tpath("sealed.pcsr"), &vd, &v, &err);
		ok = ok && (rc == 0 ? sound(&vd) : err.msg[0] != '\0');
		part_dataset_release(&vd);
		parsa_graph_init(&t);
		parsa_err_clear(&err);
		rc = part_cache_read_transpose(tpath("sealed.pcsr"), &t, &err);
		ok = ok && (rc == 0 ? parsa_graph_validate(&t, &err) == 0
				    : err.msg[0] != '\0');
		parsa_graph_release(&t);
	}
	if (!ok)
		fprintf(stderr, "  byte %zu mask %#x: rc %d '%s'\n", i, mask, rc,
			err.msg);
	part_dataset_release(&ds);
	free(c);
	return ok;
}

static void test_every_byte_flipped_resealed(void)
{
	static const char text[] = "1 5:1 3:2 9:3\n-1 3:1\n1\n1 9:1 4:2\n";
	struct part_cache_write_opts wo;
	struct part_cache_values v;
	struct part_dataset ds;
	struct parsa_err err;
	int8_t *y;
	uint32_t *col;
	double *val;
	size_t n, bad = 0;
	unsigned char *b = small_cache("rs.pcsr", &n);

	/* the small SNAP cache (with its transpose) */
	CHECK_INT(part_cache_reseal(b, n), ==, 1);
	for (size_t i = 0; i < n; i++)
		for (unsigned m = 1; m < 256; m <<= 3)
			bad += !flip_resealed(b, n, i, m, 0);
	free(b);
	/* a LIBSVM one with the trainer's labels and values */
	tu_write_file(tpath("rs.svm"), text, sizeof(text) - 1);
	part_dataset_init(&ds);
	REQUIRE(read_text(tpath("rs.svm"), K_LIBSVM, &ds) == 0);
	make_values(&ds, &y, &col, &val, 0);
	v = (struct part_cache_values){y, col, val};
	memset(&wo, 0, sizeof(wo));
	wo.values = &v;
	parsa_err_clear(&err);
	REQUIRE(part_cache_write(tpath("rsv.pcsr"), &ds, &wo, &err) == 0);
	b = slurp(tpath("rsv.pcsr"), &n);
	for (size_t i = 0; i < n; i++)
		for (unsigned m = 1; m < 256; m <<= 3)
			bad += !flip_resealed(b, n, i, m, 1);
	CHECK_INT(bad, ==, 0);
	/* resealing what is not a cache changes nothing */
	b[0] ^= 1;
	CHECK_INT(part_cache_reseal(b, n), ==, 0);
	CHECK_INT(part_cache_reseal(b, 16), ==, 0);
	free(b);
	free(y);
	free(col);
	free(val);
	part_dataset_release(&ds);
}

/* Rows of one column each whose offsets climb past the nonzeros and come
 * back at the last row, with right checksums: checked row by row from row
 * 0, such rows read columns past the column section (past the file, in
 * the end); they must be refused at the first row that ends past the
 * nonzeros, before any of its columns is read. */
static void test_rows_past_the_nonzeros(void)
{
	enum { N = 5000 };
	static uint64_t rp[N + 1];
	static uint32_t colv[3] = {0, 1, 2};
	static uint64_t fid[3] = {0, 1, 2};
	struct part_cache_write_opts wo;
	struct part_dataset ds;
	struct parsa_err err;
	unsigned char *b;
	size_t n;

	for (uint32_t i = 0; i < N; i++)
		rp[i] = i;
	rp[N] = 3;
	part_dataset_init(&ds);
	ds.g.n_rows = N;
	ds.g.n_cols = 3;
	ds.g.row_ptr = rp;
	ds.g.col = colv;
	ds.g.row_cap = N + 1;
	ds.g.col_cap = 3;
	ds.feat_id = fid;
	memset(&wo, 0, sizeof(wo));
	wo.no_transpose = 1;
	parsa_err_clear(&err);
	REQUIRE(part_cache_write(tpath("past.pcsr"), &ds, &wo, &err) == 0);
	b = slurp(tpath("past.pcsr"), &n);
	CHECK(refused(b, n, "row 3 ends at 4, past the 3 nonzeros"));
	free(b);
}

/* A sound CSR whose feature ids repeat (ids small, then large: the
 * bitmap's and the sort's way) is refused, naming the id and its two
 * columns; the same with distinct ids reads. */
static void test_repeated_feature_ids(void)
{
	static uint64_t rp[5] = {0, 2, 4, 5, 6};
	static uint32_t colv[6] = {0, 1, 1, 2, 0, 2};
	uint64_t fid[3];
	struct part_dataset ds, rd;
	struct parsa_err err;
	unsigned char *b;
	size_t n;

	part_dataset_init(&ds);
	part_dataset_init(&rd);
	ds.g.n_rows = 4;
	ds.g.n_cols = 3;
	ds.g.row_ptr = rp;
	ds.g.col = colv;
	ds.g.row_cap = 5;
	ds.g.col_cap = 6;
	ds.feat_id = fid;
	ds.format = PART_FMT_LIBSVM;
	for (int big = 0; big < 2; big++) {
		uint64_t base = big ? UINT64_C(1) << 50 : 0;

		fid[0] = base + 7;
		fid[1] = base + 3;
		fid[2] = base + 7;
		parsa_err_clear(&err);
		REQUIRE(part_cache_write(tpath("dup.pcsr"), &ds, NULL, &err) == 0);
		b = slurp(tpath("dup.pcsr"), &n);
		CHECK(refused(b, n, big ? "feature id 1125899906842631 appears twice: columns 0 and 2"
					: "feature id 7 appears twice: columns 0 and 2"));
		free(b);
		fid[2] = base + 9;
		parsa_err_clear(&err);
		REQUIRE(part_cache_write(tpath("dup.pcsr"), &ds, NULL, &err) == 0);
		parsa_err_clear(&err);
		CHECK_INT(part_cache_read(tpath("dup.pcsr"), NULL, &rd, &err), ==, 0);
		CHECK(rd.feat_id && rd.feat_id[2] == base + 9);
	}
	part_dataset_release(&rd);
}

static void test_write_errors(void)
{
	struct part_dataset ds;
	struct parsa_err err;
	char path[600];

	part_dataset_init(&ds);
	snprintf(path, sizeof(path), "%s/no/such/dir/x.pcsr", tmpdir);
	parsa_err_clear(&err);
	CHECK_INT(part_cache_write(path, &ds, NULL, &err), ==, PARSA_EIO);
	CHECK_CONTAINS(err.msg, "x.pcsr");
	/* a directory in the way: the temp file is removed again */
	mkdir(tpath("adir"), 0755);
	parsa_err_clear(&err);
	CHECK_INT(part_cache_write(tpath("adir"), &ds, NULL, &err), ==,
		  PARSA_EIO);
	{
		char tmp[600];

		snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", tpath("adir"),
			 (long)getpid());
		CHECK(access(tmp, F_OK) != 0);
	}
	rmdir(tpath("adir"));
}

int main(void)
{
	const char *t = getenv("TMPDIR");
	char cmd[400];

	snprintf(tmpdir, sizeof(tmpdir), "%s/parsa-cache-XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	RUN(test_round_trip_random);
	RUN(test_empty_dataset);
	RUN(test_truncated);
	RUN(test_trailing_bytes);
	RUN(test_every_byte_flipped);
	RUN(test_every_byte_flipped_resealed);
	RUN(test_rows_past_the_nonzeros);
	RUN(test_repeated_feature_ids);
	RUN(test_wrong_version_and_endianness);
	RUN(test_not_a_cache);
	RUN(test_mode_mismatch);
	RUN(test_values);
	RUN(test_write_errors);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return harness_done();
}
