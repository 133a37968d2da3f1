/*
 * harness.h: the project's tiny test harness (one header, no framework).
 *
 * A test program defines `static void test_xxx(void)` functions and runs them
 * from main() with RUN(test_xxx); it ends with `return harness_done();`,
 * which prints "N passed, N failed" (tests, not checks) and returns the exit
 * status.  CHECK* macros record a failure with file:line and the values and
 * keep going; REQUIRE* also leave the current test function (it must then
 * clean up via a `goto end`-free design or accept a leak in the failing path).
 * A whole program is killed by alarm() after HARNESS_TIMEOUT seconds.
 */
#ifndef PARSA_TESTS_HARNESS_H
#define PARSA_TESTS_HARNESS_H

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef HARNESS_TIMEOUT
#define HARNESS_TIMEOUT 300
#endif

static int harness_passed, harness_failed, harness_skipped;
static int harness_cur_failed;
static const char *harness_cur_name;

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n",    \
				__FILE__, __LINE__, harness_cur_name, #cond);\
			harness_cur_failed = 1;                             \
		}                                                           \
	} while (0)

#define CHECK_INT(a, op, b)                                                 \
	do {                                                                \
		long long ha_ = (long long)(a), hb_ = (long long)(b);       \
		if (!(ha_ op hb_)) {                                        \
			fprintf(stderr,                                     \
				"%s:%d: %s: CHECK_INT(%s %s %s) failed: "   \
				"%lld vs %lld\n",                           \
				__FILE__, __LINE__, harness_cur_name, #a,   \
				#op, #b, ha_, hb_);                         \
			harness_cur_failed = 1;                             \
		}                                                           \
	} while (0)

#define CHECK_STR(a, b)                                                     \
	do {                                                                \
		const char *ha_ = (a), *hb_ = (b);                          \
		if (!ha_ || !hb_ || strcmp(ha_, hb_) != 0) {                \
			fprintf(stderr,                                     \
				"%s:%d: %s: CHECK_STR(%s, %s) failed: "     \
				"\"%s\" vs \"%s\"\n",                       \
				__FILE__, __LINE__, harness_cur_name, #a,   \
				#b, ha_ ? ha_ : "(null)",                   \
				hb_ ? hb_ : "(null)");                      \
			harness_cur_failed = 1;                             \
		}                                                           \
	} while (0)

/* Substring check: b must occur in a. */
#define CHECK_CONTAINS(a, b)                                                \
	do {                                                                \
		const char *ha_ = (a), *hb_ = (b);                          \
		if (!ha_ || !hb_ || !strstr(ha_, hb_)) {                    \
			fprintf(stderr,                                     \
				"%s:%d: %s: \"%s\" does not contain "       \
				"\"%s\"\n",                                 \
				__FILE__, __LINE__, harness_cur_name,       \
				ha_ ? ha_ : "(null)", hb_ ? hb_ : "(null)");\
			harness_cur_failed = 1;                             \
		}                                                           \
	} while (0)

#define REQUIRE(cond)                                                       \
	do {                                                                \
		CHECK(cond);                                                \
		if (harness_cur_failed)                                     \
			return;                                             \
	} while (0)

/* Mark the current test skipped (with a reason) and leave it. */
#define SKIP(...)                                                           \
	do {                                                                \
		printf("skip: %s: ", harness_cur_name);                     \
		printf(__VA_ARGS__);                                        \
		printf("\n");                                               \
		harness_cur_failed = -1;                                    \
		return;                                                     \
	} while (0)

static void harness_run(const char *name, void (*fn)(void))
{
	static int armed;

	if (!armed) {
		alarm(HARNESS_TIMEOUT);
		armed = 1;
	}
	harness_cur_name = name;
	harness_cur_failed = 0;
	fn();
	if (harness_cur_failed > 0) {
		harness_failed++;
		printf("FAIL %s\n", name);
	} else if (harness_cur_failed < 0) {
		harness_skipped++;
	} else {
		harness_passed++;
		printf("ok   %s\n", name);
	}
	fflush(stdout);
}

#define RUN(fn) harness_run(#fn, fn)

static inline int harness_done(void)
{
	if (harness_skipped)
		printf("%d passed, %d failed, %d skipped\n", harness_passed,
		       harness_failed, harness_skipped);
	else
		printf("%d passed, %d failed\n", harness_passed,
		       harness_failed);
	return harness_failed ? 1 : 0;
}

#endif /* PARSA_TESTS_HARNESS_H */
