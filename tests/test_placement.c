/*
 * test_placement: PREFIX.examples / PREFIX.features writing and reading
 * (partitioner/part_placement).
 *
 * Round trips (64-bit ids, identity ids, gzip, shuffled lines, CRLF and
 * blanks), a corpus of bad files each with its expected file:line:col and
 * reason, bad arguments, and random garbage that must never crash.
 */
#include <sys/stat.h>
#include <zlib.h>

#include "harness.h"
#include "parsa_rng.h"
#include "part_placement.h"

static char prefix[400];

static void set_prefix(const char *name)
{
	const char *t = getenv("TMPDIR");

	snprintf(prefix, sizeof(prefix), "%s/parsa_test_placement_%ld_%s",
		 t && *t ? t : "/tmp", (long)getpid(), name);
}

/* Write len bytes of s to PREFIX + ext (gzip when gz). */
static int put_file(const char *ext, const char *s, size_t len, int gz)
{
	char path[512];
	int ok;

	snprintf(path, sizeof(path), "%s%s", prefix, ext);
	if (gz) {
		gzFile f = gzopen(path, "wb");

		if (!f)
			return -1;
		ok = len == 0 || gzwrite(f, s, (unsigned)len) == (int)len;
		return gzclose(f) == Z_OK && ok ? 0 : -1;
	}
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	ok = fwrite(s, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void remove_files(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s.examples", prefix);
	remove(path);
	snprintf(path, sizeof(path), "%s.features", prefix);
	remove(path);
}

static void test_round_trip(void)
{
	enum { NR = 2000, NC = 700 };
	uint32_t part[NR], owner[NC], p2[NR], o2[NC], k = 0;
	uint64_t ids[NC];
	struct parsa_rng r;
	struct parsa_err e;
	char path[512];

	set_prefix("rt");
	parsa_rng_seed(&r, 1);
	for (uint32_t i = 0; i < NR; i++)
		part[i] = (uint32_t)parsa_rng_below(&r, 13);
	for (uint32_t j = 0; j < NC; j++) {
		owner[j] = (uint32_t)parsa_rng_below(&r, 13);
		ids[j] = j == 0 ? UINT64_MAX : (parsa_rng_next(&r) | 1) * j;
	}
	part[5] = 16; /* k_out = 17 */
	parsa_err_clear(&e);
	REQUIRE(part_placement_write(prefix, part, NR, owner, ids, NC, 0, &e) == 0);
	snprintf(path, sizeof(path), "%s.examples.tmp", prefix);
	CHECK(access(path, F_OK) != 0);
	CHECK_INT(part_placement_read(prefix, NR, ids, NC, 0, p2, o2, &k, &e),
		  ==, 0);
	CHECK_STR(e.msg, "");
	CHECK(memcmp(part, p2, sizeof(part)) == 0);
	CHECK(memcmp(owner, o2, sizeof(owner)) == 0);
	CHECK_INT(k, ==, 17);
	/* k_max: 17 is fine, 16 is not */
	CHECK_INT(part_placement_read(prefix, NR, ids, NC, 17, p2, o2, &k, NULL),
		  ==, 0);
	CHECK_INT(part_placement_read(prefix, NR, ids, NC, 16, p2, o2, &k, NULL),
		  ==, PARSA_EPARSE);
	/* identity ids */
	REQUIRE(part_placement_write(prefix, part, NR, owner, NULL, NC, 0, &e) == 0);
	memset(o2, 0, sizeof(o2));
	CHECK_INT(part_placement_read(prefix, NR, NULL, NC, 0, p2, o2, &k, &e),
		  ==, 0);
	CHECK(memcmp(owner, o2, sizeof(owner)) == 0);
	/* wrong dataset size */
	CHECK_INT(part_placement_read(prefix, NR - 1, NULL, NC, 0, p2, o2, &k,
				      NULL), ==, PARSA_EPARSE);
	remove_files();
}

/* PREFIX + ext's bytes into *buf (malloc'ed, NULL on failure), *len. */
static void slurp(const char *ext, char **buf, size_t *len)
{
	char path[512];
	FILE *f;
	long n;

	*buf = NULL;
	*len = 0;
	snprintf(path, sizeof(path), "%s%s", prefix, ext);
	f = fopen(path, "rb");
	if (!f)
		return;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (*buf = malloc((size_t)n)) &&
	    fread(*buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	fclose(f);
}

/* Over a million lines the two files are written side by side: the same
 * files; when one of them cannot be written neither replaces the old one
 * and the error names the first in order (the examples) when both fail. */
static void test_round_trip_two_threads(void)
{
	const uint32_t NR = 1u << 20, NC = 70001, k = 61;
	uint32_t *part = malloc(NR * sizeof(*part));
	uint32_t *p2 = malloc(NR * sizeof(*p2));
	uint32_t *owner = malloc(NC * sizeof(*owner));
	uint32_t *o2 = malloc(NC * sizeof(*o2));
	uint64_t *ids = malloc(NC * sizeof(*ids));
	uint32_t k_out = 0;
	struct parsa_rng r;
	struct parsa_err e;
	char path[512], old[] = "3\n", *one[2], *two[2];
	size_t len1[2], len2[2];

	REQUIRE(part && p2 && owner && o2 && ids);
	set_prefix("rt2");
	parsa_rng_seed(&r, 2);
	for (uint32_t i = 0; i < NR; i++)
		part[i] = (uint32_t)parsa_rng_below(&r, k);
	for (uint32_t j = 0; j < NC; j++) {
		owner[j] = (uint32_t)parsa_rng_below(&r, k);
		ids[j] = (uint64_t)j * 7919u + 3;
	}
	parsa_err_clear(&e);
	REQUIRE(part_placement_write(prefix, part, NR, owner, ids, NC, 1, &e) == 0);
	slurp(".examples", &one[0], &len1[0]);
	slurp(".features", &one[1], &len1[1]);
	REQUIRE(part_placement_write(prefix, part, NR, owner, ids, NC, 2, &e) == 0);
	slurp(".examples", &two[0], &len2[0]);
	slurp(".features", &two[1], &len2[1]);
	for (int f = 0; f < 2; f++) { /* byte for byte those of one thread */
		REQUIRE(one[f] && two[f]);
		CHECK(len1[f] == len2[f] && len1[f] > 0 &&
		      memcmp(one[f], two[f], len1[f]) == 0);
		free(one[f]);
		free(two[f]);
	}
	CHECK_INT(part_placement_read(prefix, NR, ids, NC, 0, p2, o2, &k_out,
				      &e), ==, 0);
	CHECK_STR(e.msg, "");
	CHECK(memcmp(part, p2, NR * sizeof(*part)) == 0);
	CHECK(memcmp(owner, o2, NC * sizeof(*owner)) == 0);
	CHECK_INT(k_out, <=, k);
	remove_files();
	/* the features' path is a directory: the examples, written, are not
	 * committed, and an old examples file stays */
	REQUIRE(put_file(".examples", old, strlen(old), 0) == 0);
	snprintf(path, sizeof(path), "%s.features", prefix);
	REQUIRE(mkdir(path, 0700) == 0);
	parsa_err_clear(&e);
	CHECK(part_placement_write(prefix, part, NR, owner, ids, NC, 2, &e) != 0);
	CHECK_CONTAINS(e.msg, ".features");
	snprintf(path, sizeof(path), "%s.examples", prefix);
	{
		FILE *f = fopen(path, "rb");
		char buf[8] = { 0 };

		CHECK(f != NULL);
		if (f) {
			CHECK_INT((int)fread(buf, 1, sizeof(buf), f), ==, 2);
			fclose(f);
		}
		CHECK_STR(buf, "3\n");
	}
	snprintf(path, sizeof(path), "%s.features", prefix);
	rmdir(path);
	remove_files();
	/* both fail: the examples' error */
	parsa_err_clear(&e);
	CHECK_INT(part_placement_write("/nonexistent-dir/p", part, NR, owner,
				       NULL, NC, 2, &e), ==, PARSA_EIO);
	CHECK_CONTAINS(e.msg, "/nonexistent-dir/p.examples: cannot create");
	free(part);
	free(p2);
	free(owner);
	free(o2);
	free(ids);
}

static void test_lenient_forms(void)
{
	static const uint64_t ids[3] = { 10, 20, 30 };
	static const char ex[] = " 0 \r\n\t1\r\n2";
	static const char fe[] = "30 2\r\n10\t0\n 20  1 ";
	uint32_t part[3], owner[3], k = 0;
	struct parsa_err e;

	set_prefix("lenient");
	for (int gz = 0; gz < 2; gz++) {
		REQUIRE(put_file(".examples", ex, sizeof(ex) - 1, gz) == 0);
		REQUIRE(put_file(".features", fe, sizeof(fe) - 1, gz) == 0);
		parsa_err_clear(&e);
		CHECK_INT(part_placement_read(prefix, 3, ids, 3, 0, part, owner,
					      &k, &e), ==, 0);
		CHECK_STR(e.msg, "");
		CHECK(part[0] == 0 && part[1] == 1 && part[2] == 2);
		CHECK(owner[0] == 0 && owner[1] == 1 && owner[2] == 2);
		CHECK_INT(k, ==, 3);
	}
	/* empty dataset, empty files */
	REQUIRE(put_file(".examples", "", 0, 0) == 0);
	REQUIRE(put_file(".features", "", 0, 0) == 0);
	CHECK_INT(part_placement_read(prefix, 0, NULL, 0, 0, NULL, NULL, &k,
				      NULL), ==, 0);
	CHECK_INT(k, ==, 1);
	remove_files();
}

struct bad_case {
	const char *examples;
	size_t ex_len;     /* 0: strlen */
	const char *features;
	uint32_t k_max;
	const char *expect; /* substring of the message */
};

static const char good_ex[] = "0\n1\n2\n";
static const char good_fe[] = "10 0\n20 1\n30 2\n";

static const struct bad_case bad_cases[] = {
	{ "0\n1\n", 0, good_fe, 0,
	  ".examples:3:1: file has 2 lines, expected 3 (one per example), "
	  "got end of file" },
	{ "0\n1\n2\n3\n", 0, good_fe, 0,
	  ".examples:4:1: more lines than the 3 examples" },
	{ "0\n1\n2\n\n", 0, good_fe, 0,
	  ".examples:4:1: more lines than the 3 examples" },
	{ "0\nabc\n2\n", 0, good_fe, 0,
	  ".examples:2:1: expected a part id (non-negative integer), got 'a'" },
	{ "0\n\n2\n", 0, good_fe, 0,
	  ".examples:2:1: expected a part id (non-negative integer), got end "
	  "of line" },
	{ "0\n-1\n2\n", 0, good_fe, 0, ".examples:2:1: negative part id" },
	{ "0\n  1x\n2\n", 0, good_fe, 0,
	  ".examples:2:4: expected end of line after the part id, got 'x'" },
	{ "0\n1.5\n2\n", 0, good_fe, 0,
	  ".examples:2:2: expected end of line after the part id, got '.'" },
	{ "0\n1 2\n2\n", 0, good_fe, 0,
	  ".examples:2:3: expected end of line after the part id, got '2'" },
	{ "0\n99999999999999999999999\n2\n", 0, good_fe, 0,
	  ".examples:2:1: part id too large" },
	{ "0\n4294967295\n2\n", 0, good_fe, 0,
	  ".examples:2:1: part id 4294967295 too large" },
	{ "0\n7\n2\n", 0, good_fe, 4,
	  ".examples:2:1: part id 7 out of range (k = 4)" },
	{ "0\n\0\n2\n", 6, good_fe, 0,
	  ".examples:2:1: expected a part id (non-negative integer), got byte "
	  "0x00" },
	{ "0\n1\r2\n", 0, good_fe, 0,
	  ".examples:2:3: expected end of line after the part id, got '2'" },
	{ good_ex, 0, "10 0\n30 2\n", 0,
	  ".features:3:1: feature 20 of the dataset has no part" },
	{ good_ex, 0, "", 0,
	  ".features:1:1: feature 10 of the dataset has no part" },
	{ good_ex, 0, "10 0\n25 1\n30 2\n", 0,
	  ".features:2:1: feature 25 is not in the dataset" },
	{ good_ex, 0, "10 0\n20 1\n 10 2\n", 0,
	  ".features:3:2: feature 10 listed twice (first on line 1)" },
	{ good_ex, 0, "10 0\n20\n30 2\n", 0,
	  ".features:2:3: expected a blank and a part id after the feature "
	  "id, got end of line" },
	{ good_ex, 0, "10 0\n20 \n30 2\n", 0,
	  ".features:2:4: expected a part id (non-negative integer), got end "
	  "of line" },
	{ good_ex, 0, "10 0\n20 1 x\n30 2\n", 0,
	  ".features:2:6: expected end of line after the part id, got 'x'" },
	{ good_ex, 0, "10 0\n20 -1\n30 2\n", 0,
	  ".features:2:4: negative part id" },
	{ good_ex, 0, "10 0\nfoo 1\n30 2\n", 0,
	  ".features:2:1: expected a feature id (non-negative integer), got "
	  "'f'" },
	{ good_ex, 0, "-10 0\n20 1\n30 2\n", 0,
	  ".features:1:1: negative feature id" },
	{ good_ex, 0, "10 0\n20x 1\n30 2\n", 0,
	  ".features:2:3: expected a blank and a part id after the feature "
	  "id, got 'x'" },
	{ good_ex, 0, "10 0\n20 1\n30 9\n", 5,
	  ".features:3:4: part id 9 out of range (k = 5)" },
	{ good_ex, 0, "10 0\n\n20 1\n30 2\n", 0,
	  ".features:2:1: expected a feature id (non-negative integer), got "
	  "end of line" },
	{ good_ex, 0, "10 0\n20 1\n30 2\n# comment\n", 0,
	  ".features:4:1: expected a feature id (non-negative integer), got "
	  "'#'" },
	{ good_ex, 0, "10 0\n20 1\n30 2\n40 1\n", 0,
	  ".features:4:1: feature 40 is not in the dataset" },
	{ good_ex, 0, "18446744073709551616 1\n", 0,
	  ".features:1:1: feature id too large" },
};

static void run_bad_case(const struct bad_case *c, size_t i)
{
	static const uint64_t ids[3] = { 10, 20, 30 };
	uint32_t part[3], owner[3], k = 0;
	size_t ex_len = c->ex_len ? c->ex_len : strlen(c->examples);
	struct parsa_err e;
	char want[600];

	REQUIRE(put_file(".examples", c->examples, ex_len, 0) == 0);
	REQUIRE(put_file(".features", c->features, strlen(c->features), 0) ==
		0);
	parsa_err_clear(&e);
	CHECK_INT(part_placement_read(prefix, 3, ids, 3, c->k_max, part, owner,
				      &k, &e), ==, PARSA_EPARSE);
	snprintf(want, sizeof(want), "%s%s", prefix, c->expect);
	if (!strstr(e.msg, want))
		fprintf(stderr, "bad case %zu\n", i);
	CHECK_CONTAINS(e.msg, want);
	CHECK(e.line > 0 && e.col > 0);
}

static void test_bad_corpus(void)
{
	set_prefix("bad");
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		run_bad_case(&bad_cases[i], i);
	remove_files();
}

static void test_missing_files_and_args(void)
{
	static const uint64_t dup[3] = { 10, 20, 10 };
	uint32_t part[3], owner[3], k;
	struct parsa_err e;

	set_prefix("missing");
	remove_files();
	parsa_err_clear(&e);
	CHECK_INT(part_placement_read(prefix, 3, NULL, 3, 0, part, owner, &k,
				      &e), ==, PARSA_EIO);
	CHECK_CONTAINS(e.msg, ".examples");
	REQUIRE(put_file(".examples", good_ex, strlen(good_ex), 0) == 0);
	parsa_err_clear(&e);
	CHECK_INT(part_placement_read(prefix, 3, NULL, 3, 0, part, owner, &k,
				      &e), ==, PARSA_EIO);
	CHECK_CONTAINS(e.msg, ".features");
	REQUIRE(put_file(".features", good_fe, strlen(good_fe), 0) == 0);
	parsa_err_clear(&e);
	CHECK_INT(part_placement_read(prefix, 3, dup, 3, 0, part, owner, &k,
				      &e), ==, PARSA_EINVAL);
	CHECK_CONTAINS(e.msg, "appears twice");
	CHECK_INT(part_placement_read(NULL, 3, NULL, 3, 0, part, owner, &k,
				      NULL), ==, PARSA_EINVAL);
	CHECK_INT(part_placement_read(prefix, 3, NULL, 3, 0, NULL, owner, &k,
				      NULL), ==, PARSA_EINVAL);
	CHECK_INT(part_placement_write(prefix, NULL, 3, owner, NULL, 3, 0, NULL),
		  ==, PARSA_EINVAL);
	parsa_err_clear(&e);
	CHECK_INT(part_placement_write("/nonexistent-dir/p", part, 3, owner,
				       NULL, 3, 0, &e), ==, PARSA_EIO);
	CHECK_CONTAINS(e.msg, "/nonexistent-dir/p.examples: cannot create");
	remove_files();
}

/* Random bytes from a small alphabet: must fail cleanly or succeed. */
static void test_garbage_never_crashes(void)
{
	static const char alpha[] = "0123456789 \t\r\n-+x#\0\xff";
	static const uint64_t ids[4] = { 1, 2, 3, 0 };
	char buf[64];
	uint32_t part[4], owner[4], k;
	struct parsa_rng r;

	set_prefix("garbage");
	parsa_rng_seed(&r, 123);
	for (int it = 0; it < 400; it++) {
		size_t n = (size_t)parsa_rng_below(&r, sizeof(buf));
		struct parsa_err e;
		int rc;

		for (size_t i = 0; i < n; i++)
			buf[i] = alpha[parsa_rng_below(&r, sizeof(alpha) - 1)];
		REQUIRE(put_file(it % 2 ? ".examples" : ".features", buf, n,
				 it % 4 == 3) == 0);
		if (it < 2)
			continue;
		parsa_err_clear(&e);
		rc = part_placement_read(prefix, 4, ids, 4, 0, part, owner, &k,
					 &e);
		CHECK(rc == 0 || rc == PARSA_EPARSE);
		CHECK(rc == 0 || strstr(e.msg, prefix) != NULL);
	}
	remove_files();
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_round_trip_two_threads);
	RUN(test_lenient_forms);
	RUN(test_bad_corpus);
	RUN(test_missing_files_and_args);
	RUN(test_garbage_never_crashes);
	return harness_done();
}
