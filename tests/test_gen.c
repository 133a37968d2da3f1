/*
 * test_gen: the synthetic LIBSVM generator (partitioner/part_gen).
 *
 * Determinism by seed, gzip output equal to plain output, the LIBSVM
 * format (labels +-1, 1-based ascending ids within 1..features, value 1),
 * the mean row length, extreme feature spaces, and option validation.
 */
#include <errno.h>
#include <math.h>
#include <zlib.h>

#include "harness.h"
#include "part_gen.h"

static const char *tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

static void tmp_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/parsa_test_gen_%ld_%s", tmpdir(), (long)getpid(),
		 name);
}

/* Whole file (gzip or plain) into a NUL-terminated buffer; NULL on error. */
static char *slurp(const char *path, size_t *len)
{
	gzFile gz = gzopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	int r;

	if (!gz || !buf) {
		if (gz)
			gzclose(gz);
		free(buf);
		return NULL;
	}
	while ((r = gzread(gz, buf + n, (unsigned)(cap - n))) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	gzclose(gz);
	buf[n] = 0;
	*len = n;
	return buf;
}

struct stats {
	uint64_t rows, nnz, pos, neg, bad, max_id;
};

/* Check every line of a LIBSVM buffer; bad counts malformed lines. */
static struct stats check_libsvm(const char *s, uint64_t features)
{
	struct stats st = { 0 };

	while (*s) {
		const char *eol = strchr(s, '\n');
		uint64_t prev = 0;
		int ok = 1;

		if (!eol)
			eol = s + strlen(s), ok = 0; /* no final newline */
		if (strncmp(s, "+1", 2) == 0)
			st.pos++;
		else if (strncmp(s, "-1", 2) == 0)
			st.neg++;
		else
			ok = 0;
		for (s += 2; s < eol;) {
			char *end;
			uint64_t id;

			if (*s++ != ' ') {
				ok = 0;
				break;
			}
			errno = 0;
			id = strtoull(s, &end, 10);
			if (errno || end == s || strncmp(end, ":1", 2) != 0 ||
			    id < 1 || id > features || id <= prev) {
				ok = 0;
				break;
			}
			prev = id;
			st.max_id = id > st.max_id ? id : st.max_id;
			st.nnz++;
			s = end + 2;
		}
		st.bad += !ok;
		st.rows++;
		s = *eol ? eol + 1 : eol;
	}
	return st;
}

static int gen(const struct part_gen_opts *o, const char *path)
{
	struct parsa_err e;
	int rc;

	parsa_err_clear(&e);
	rc = part_gen_write(o, path, &e);
	if (rc)
		fprintf(stderr, "part_gen_write: %s\n", e.msg);
	return rc;
}

static void small_opts(struct part_gen_opts *o)
{
	part_gen_opts_default(o);
	o->examples = 3000;
	o->features = 2000;
	o->avg_nnz = 12;
	o->topics = 8;
	o->seed = 7;
}

static void test_same_seed_same_bytes(void)
{
	struct part_gen_opts o;
	char a[512], b[512];
	char *x, *y;
	size_t nx = 0, ny = 0;

	small_opts(&o);
	tmp_path(a, sizeof(a), "a.svm");
	tmp_path(b, sizeof(b), "b.svm");
	REQUIRE(gen(&o, a) == 0 && gen(&o, b) == 0);
	x = slurp(a, &nx);
	y = slurp(b, &ny);
	CHECK(x && y && nx == ny && nx > 0 && memcmp(x, y, nx) == 0);
	free(y);
	o.seed = 8;
	REQUIRE(gen(&o, b) == 0);
	y = slurp(b, &ny);
	CHECK(x && y && (nx != ny || memcmp(x, y, nx) != 0));
	free(x);
	free(y);
	remove(a);
	remove(b);
}

static void test_gzip_equals_plain(void)
{
	struct part_gen_opts o;
	char a[512], b[512], tmp[600], magic[2] = { 0 };
	char *x, *y;
	size_t nx = 0, ny = 0;
	FILE *f;

	small_opts(&o);
	tmp_path(a, sizeof(a), "p.svm");
	tmp_path(b, sizeof(b), "p.svm.gz");
	REQUIRE(gen(&o, a) == 0 && gen(&o, b) == 0);
	f = fopen(b, "rb");
	REQUIRE(f != NULL);
	CHECK(fread(magic, 1, 2, f) == 2);
	fclose(f);
	CHECK((unsigned char)magic[0] == 0x1f && (unsigned char)magic[1] == 0x8b);
	x = slurp(a, &nx);
	y = slurp(b, &ny);
	CHECK(x && y && nx == ny && memcmp(x, y, nx) == 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", b);
	CHECK(access(tmp, F_OK) != 0); /* renamed away */
	free(x);
	free(y);
	remove(a);
	remove(b);
}

/* Generate, check the format, return the stats. */
static struct stats gen_and_check(const struct part_gen_opts *o)
{
	struct stats st = { 0 };
	char p[512];
	char *x;
	size_t n = 0;

	tmp_path(p, sizeof(p), "c.svm");
	if (gen(o, p) != 0) {
		st.bad = 1;
		return st;
	}
	x = slurp(p, &n);
	if (x)
		st = check_libsvm(x, o->features);
	else
		st.bad = 1;
	free(x);
	remove(p);
	return st;
}

static void check_mean(const struct part_gen_opts *o)
{
	struct stats st = gen_and_check(o);
	double mean = st.rows ? (double)st.nnz / (double)st.rows : 0;

	CHECK_INT(st.bad, ==, 0);
	CHECK_INT(st.rows, ==, o->examples);
	CHECK_INT(st.max_id, <=, o->features);
	CHECK(st.pos > 0 && st.neg > 0);
	if (mean < 0.9 * o->avg_nnz || mean > 1.1 * o->avg_nnz) {
		fprintf(stderr, "mean nnz %.3f vs avg_nnz %.3f\n", mean,
			o->avg_nnz);
		CHECK(0);
	}
}

static void test_format_and_mean(void)
{
	struct part_gen_opts o;

	small_opts(&o);
	o.examples = 20000;
	o.features = 50000;
	o.avg_nnz = 17;
	check_mean(&o);
	o.avg_nnz = 0.6; /* Poisson(0.6): empty rows happen */
	check_mean(&o);
	o.avg_nnz = 45; /* normal approximation of the Poisson */
	o.topics = 1;
	check_mean(&o);
	o.zipf = 0; /* uniform */
	o.topic_frac = 1;
	check_mean(&o);
	o.zipf = 3; /* very skewed: many redraws */
	o.topic_frac = 0;
	o.features = 300;
	check_mean(&o);
}

static void test_tiny_feature_space(void)
{
	struct part_gen_opts o;
	struct stats st;

	small_opts(&o);
	o.features = 5;
	o.avg_nnz = 5; /* rows capped at 5 distinct features */
	o.zipf = 2;
	st = gen_and_check(&o);
	CHECK_INT(st.bad, ==, 0);
	CHECK_INT(st.rows, ==, o.examples);
	CHECK_INT(st.max_id, <=, 5);
	o.features = 1;
	o.avg_nnz = 1;
	st = gen_and_check(&o);
	CHECK_INT(st.bad, ==, 0);
	CHECK_INT(st.nnz, ==, o.examples); /* every row is "y 1:1" */
}

static void test_huge_feature_space(void)
{
	struct part_gen_opts o;
	struct stats st;

	small_opts(&o);
	o.features = 1000000000000ull; /* > 2^32: 128-bit mapping, tail */
	o.zipf = 0.5;
	st = gen_and_check(&o);
	CHECK_INT(st.bad, ==, 0);
	CHECK_INT(st.rows, ==, o.examples);
	CHECK(st.max_id > (1ull << 32));
}

static void expect_einval(const struct part_gen_opts *o, const char *word)
{
	struct parsa_err e;
	char p[512];

	tmp_path(p, sizeof(p), "bad.svm");
	parsa_err_clear(&e);
	CHECK_INT(part_gen_write(o, p, &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, word);
	CHECK(access(p, F_OK) != 0);
}

static void test_bad_options(void)
{
	struct part_gen_opts o;
	struct parsa_err e;

	small_opts(&o);
	o.examples = 0;
	expect_einval(&o, "examples");
	small_opts(&o);
	o.features = 0;
	expect_einval(&o, "features");
	small_opts(&o);
	o.avg_nnz = 0;
	expect_einval(&o, "avg_nnz");
	o.avg_nnz = -1;
	expect_einval(&o, "avg_nnz");
	o.avg_nnz = NAN;
	expect_einval(&o, "avg_nnz");
	o.avg_nnz = 2001;
	expect_einval(&o, "avg_nnz");
	small_opts(&o);
	o.topics = 0;
	expect_einval(&o, "topics");
	small_opts(&o);
	o.topic_frac = 1.5;
	expect_einval(&o, "topic_frac");
	small_opts(&o);
	o.zipf = -0.1;
	expect_einval(&o, "zipf");
	small_opts(&o);
	parsa_err_clear(&e);
	CHECK_INT(part_gen_write(&o, NULL, &e), ==, PARSA_EINVAL);
	CHECK_INT(part_gen_write(NULL, "x", NULL), ==, PARSA_EINVAL);
}

static void test_unwritable_path(void)
{
	struct part_gen_opts o;
	struct parsa_err e;

	small_opts(&o);
	parsa_err_clear(&e);
	CHECK_INT(part_gen_write(&o, "/nonexistent-dir/x/y.svm", &e), ==,
		  PARSA_EIO);
	CHECK_CONTAINS(e.msg, "/nonexistent-dir/x/y.svm");
}

struct prog {
	uint64_t calls, last_done, last_total;
};

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	p->calls++;
	p->last_done = done;
	p->last_total = total;
}

static void test_progress(void)
{
	struct part_gen_opts o;
	struct prog p = { 0 };
	char path[512];

	small_opts(&o);
	o.examples = 70000;
	o.avg_nnz = 2;
	o.progress = on_progress;
	o.progress_arg = &p;
	tmp_path(path, sizeof(path), "prog.svm");
	REQUIRE(gen(&o, path) == 0);
	CHECK_INT(p.calls, ==, 2);
	CHECK_INT(p.last_done, ==, 70000);
	CHECK_INT(p.last_total, ==, 70000);
	remove(path);
}

int main(void)
{
	RUN(test_same_seed_same_bytes);
	RUN(test_gzip_equals_plain);
	RUN(test_format_and_mean);
	RUN(test_tiny_feature_space);
	RUN(test_huge_feature_space);
	RUN(test_bad_options);
	RUN(test_unwritable_path);
	RUN(test_progress);
	return harness_done();
}
