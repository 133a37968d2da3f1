/*
 * test_opts: the option table (partitioner/part_opts.h) and what is made
 * from it: the table's own consistency, the command-line parser (values,
 * ranges, words, the preset's order, usage errors), the HTTP job's JSON
 * (ranges of its own, a round trip through the stored params, unknown
 * members), --help (every option, every default), the report's params.
 *
 * `test_opts --schema` prints part_opts_schema() instead: the JSON schema
 * tests/options/test_options.py checks docs/openapi.yaml's JobParams
 * against.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "part_opts.h"

static void noop_help(void)
{
}

/* Parse "partition DATA args..." (NULL-ended); the exit status (-1: go
 * on).  stderr of usage errors goes to /dev/null. */
static int parse(struct part_opts *o, unsigned cmd, const char *const *args)
{
	char *argv[64];
	const char *data;
	int argc = 0, rc;
	FILE *saved = stderr;

	argv[argc++] = (char *)"partition";
	argv[argc++] = (char *)"DATA";
	while (*args && argc < 63)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	stderr = fopen("/dev/null", "w");
	rc = part_opts_parse_argv(argc, argv, cmd, o, &data, noop_help);
	fclose(stderr);
	stderr = saved;
	if (rc < 0)
		CHECK_STR(data, "DATA");
	return rc;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_table_is_consistent(void)
{
	for (size_t i = 0; i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];

		CHECK(e->name || e->key);
		CHECK(e->off + e->size <= sizeof(struct part_opts));
		if (e->name)
			CHECK(part_opts_find(e->name, 0) == e);
		if (e->key)
			CHECK(part_opts_find(e->key, 1) == e);
		if (e->where & PART_OPT_HTTP)
			CHECK(e->key != NULL);
		if (e->name)
			CHECK(e->help != NULL);
		if (e->type == PART_OPT_ENUM)
			CHECK(e->choices && e->enum_parse && e->enum_name &&
			      e->size == sizeof(int));
		if (e->type == PART_OPT_NUM)
			CHECK(e->size == sizeof(double) && e->dlo <= e->dhi);
		if (e->type == PART_OPT_UINT)
			CHECK((e->size == 4 || e->size == 8) && e->lo <= e->hi);
		/* the report reads a bare struct part_run_opts */
		if (e->report_when != PART_REP_NO && !e->report) {
			CHECK(e->key != NULL);
			CHECK(e->off + e->size <= sizeof(struct part_run_opts));
		}
	}
}

static void test_defaults(void)
{
	struct part_opts o;
	struct part_run_opts r;

	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("-k", "4")), ==, -1);
	part_run_opts_default(&r);
	CHECK_INT(o.run.pu.k, ==, 4);
	CHECK_INT(o.run.method, ==, r.method);
	CHECK_INT(o.run.refine_passes, ==, r.refine_passes);
	CHECK(o.run.guard_slack == r.guard_slack);
	CHECK_INT(o.par.tau, ==, PART_PAR_DEFAULT_TAU);
	CHECK_INT(o.par.syncs, ==, -1);
	CHECK(!o.parallel && !o.stream);
	CHECK(part_opts_given(&o, "k") && !part_opts_given(&o, "seed"));
}

static void test_values_and_words(void)
{
	struct part_opts o;

	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "8", "--method", "metis", "--seed",
			     "18446744073709551615", "--imbalance", "1.1",
			     "--multilevel", "on", "--blocks", "4294967295",
			     "--out", "x", "--json", "-q")), ==, -1);
	CHECK_INT(o.run.method, ==, PART_METHOD_METIS);
	CHECK(o.run.pu.seed == UINT64_MAX);
	CHECK(o.run.pu.imbalance == 1.1);
	CHECK_INT(o.run.ml_scratch, ==, 1);
	CHECK(o.run.pu.blocks == UINT32_MAX);
	CHECK_STR(o.out, "x");
	CHECK(o.json && o.quiet);
	/* words: tau inf, block-imbalance off */
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--tau", "inf", "--block-imbalance",
			     "off")), ==, -1);
	CHECK_INT(o.par.tau, ==, PART_PAR_TAU_INF);
	CHECK(isinf(o.run.pu.block_imbalance));
	CHECK(o.parallel);
	/* -1 is refused, as by the HTTP job and train (one rule: 0.. or inf) */
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("-k", "2", "--tau", "-1")),
		  ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("-k", "2", "--tau", "3")),
		  ==, -1);
	CHECK_INT(o.par.tau, ==, 3);
	/* 0 beside the range */
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--param-imbalance", "0")), ==, -1);
	CHECK(o.run.param_imbalance == 0);
	/* sizes imply --stream */
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--mem-limit", "64M")), ==, -1);
	CHECK(o.mem_limit == 64u << 20 && o.stream && o.parallel);
}

static void test_guard_slack_values(void)
{
	static const char *const good[] = {"1", "2.5", "inf", "1e6"};
	static const char *const bad[] = {"0.99", "nan", "1e7", "", "2x", "-1",
					  "0", "infinity"};
	struct part_opts o;

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		CHECK_INT(parse(&o, PART_OPT_PARTITION,
				ARGS("-k", "2", "--guard-slack", good[i])), ==, -1);
	CHECK(o.run.guard_slack == 1e6);
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--guard-slack", "inf")), ==, -1);
	CHECK(isinf(o.run.guard_slack));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECK_INT(parse(&o, PART_OPT_PARTITION,
				ARGS("-k", "2", "--guard-slack", bad[i])), ==, 2);
}

static void test_preset_before_explicit(void)
{
	struct part_opts o;

	/* explicit options win whatever their order */
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--refine-passes", "3", "--quality",
			     "fast", "--sweeps", "7")), ==, -1);
	CHECK_INT(o.run.quality, ==, PART_QUALITY_FAST);
	CHECK_INT(o.run.refine_passes, ==, 3);
	CHECK_INT(o.run.sweeps, ==, 7);
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--quality", "best")), ==, -1);
	CHECK(o.run.fm_passes > 0 && o.run.ml_scratch == 1);
	/* the last --quality counts */
	CHECK_INT(parse(&o, PART_OPT_PARTITION,
			ARGS("-k", "2", "--quality", "best", "--quality=fast")),
		  ==, -1);
	CHECK_INT(o.run.quality, ==, PART_QUALITY_FAST);
	CHECK_INT(o.run.fm_passes, ==, 0);
}

static void test_usage_errors(void)
{
	struct part_opts o;

	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("-k", "0")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("-k", "65537")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("--method", "foo")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("--bogus")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("--blocks")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("--multilevel", "yes")),
		  ==, 2);
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("--mem-limit", "12")),
		  ==, 2);
	/* another command's option */
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("--placement", "p")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_EVAL, ARGS("--blocks", "3")), ==, 2);
	CHECK_INT(parse(&o, PART_OPT_EVAL,
			ARGS("--placement", "p", "-k", "3", "--seed", "2")), ==, -1);
	CHECK_STR(o.placement, "p");
	CHECK_INT(parse(&o, PART_OPT_PARTITION, ARGS("-k", "2", "extra")), ==, 2);
}

static json_t *body(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	CHECK(j != NULL);
	return j;
}

static const char *const skip_dataset[] = {"dataset", NULL};

/* part_opts_from_json of text: 0 or PARSA_EINVAL with *field set. */
static int from_json(const char *text, struct part_opts *o, char *field)
{
	struct parsa_err err;
	json_t *j = body(text);
	int rc;

	parsa_err_clear(&err);
	rc = part_opts_from_json(j, skip_dataset, o, field, &err);
	if (rc)
		CHECK_CONTAINS(err.msg, field);
	json_decref(j);
	return rc;
}

static void test_json_members(void)
{
	struct part_opts o;
	char field[64];

	CHECK_INT(from_json("{\"dataset\": \"d1\", \"k\": 4, \"quality\": \"best\","
			    " \"guard_slack\": \"inf\", \"tau\": \"inf\", "
			    "\"time_limit\": 0.5, \"threads\": 3}", &o, field),
		  ==, 0);
	CHECK_INT(o.run.pu.k, ==, 4);
	CHECK_INT(o.run.quality, ==, PART_QUALITY_BEST);
	CHECK(isinf(o.run.guard_slack) && o.run.time_limit == 0.5);
	CHECK_INT(o.par.tau, ==, PART_PAR_TAU_INF);
	CHECK(o.parallel && o.run.threads == 3);
	/* HTTP's bound on workers is the CLI's; strings are not numbers */
	static const struct {
		const char *body, *field;
	} bad[] = {
		{"{\"k\": 4, \"workers\": 4097}", "workers"},
		{"{\"k\": 0}", "k"},
		{"{\"k\": 4.0}", "k"},
		{"{\"k\": 4, \"time_limit\": \"1\"}", "time_limit"},
		{"{\"k\": 4, \"guard_slack\": 0.5}", "guard_slack"},
		{"{\"k\": 4, \"guard_slack\": true}", "guard_slack"},
		{"{\"k\": 4, \"guard_slack\": \"lots\"}", "guard_slack"},
		{"{\"k\": 4, \"tau\": \"-1\"}", "tau"},
		{"{\"k\": 4, \"seed\": -1}", "seed"},
		{"{\"k\": 4, \"method\": 3}", "method"},
		{"{\"k\": 4, \"sweeps\": 3}", "sweeps"},
		{"{\"k\": 4, \"bogus\": 1}", "bogus"},
		{"[1, 2]", "(body)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK_INT(from_json(bad[i].body, &o, field), ==, PARSA_EINVAL);
		CHECK_STR(field, bad[i].field);
	}
	CHECK_INT(from_json("{\"k\": 4, \"workers\": 4096}", &o, field), ==, 0);
}

/* {"k": 4, "<key>": <value>} through part_opts_from_json: 0 or not. */
static int member(const char *key, const char *value)
{
	char text[256], field[64];
	struct part_opts o;

	snprintf(text, sizeof(text), "{\"k\": 4, \"%s\": %s}", key, value);
	if (strcmp(key, "k") == 0)
		snprintf(text, sizeof(text), "{\"k\": %s}", value);
	return from_json(text, &o, field);
}

/* Every HTTP member at and beyond its bounds, from the table: what the
 * schema (part_opts_schema, docs/openapi.yaml) promises. */
static void test_json_bounds(void)
{
	for (size_t i = 0; i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];
		uint64_t hi = e->http_hi ? e->http_hi : e->hi;
		char v[64];

		if (!(e->where & PART_OPT_HTTP))
			continue;
		if (e->type == PART_OPT_UINT) {
			snprintf(v, sizeof(v), "%" PRIu64, e->lo);
			CHECK_INT(member(e->key, v), ==, 0);
			if (e->lo > 0) {
				snprintf(v, sizeof(v), "%" PRIu64, e->lo - 1);
				CHECK_INT(member(e->key, v), !=, 0);
			}
			if (hi < (uint64_t)INT64_MAX) {
				snprintf(v, sizeof(v), "%" PRIu64, hi);
				CHECK_INT(member(e->key, v), ==, 0);
				snprintf(v, sizeof(v), "%" PRIu64, hi + 1);
				CHECK_INT(member(e->key, v), !=, 0);
			}
			CHECK_INT(member(e->key, "\"1\""), !=, 0);
			CHECK_INT(member(e->key, "1.5"), !=, 0);
		} else if (e->type == PART_OPT_NUM) {
			snprintf(v, sizeof(v), "%.17g", e->dlo);
			CHECK_INT(member(e->key, v), ==, 0);
			snprintf(v, sizeof(v), "%.17g", e->dhi);
			CHECK_INT(member(e->key, v), ==, 0);
			snprintf(v, sizeof(v), "%.17g", e->dlo - (e->dlo ? e->dlo / 2 : 1));
			CHECK_INT(member(e->key, v), !=, 0);
			snprintf(v, sizeof(v), "%.17g", e->dhi * 2);
			CHECK_INT(member(e->key, v), !=, 0);
			CHECK_INT(member(e->key, "\"1\""), !=, 0);
		} else if (e->type == PART_OPT_ENUM) {
			snprintf(v, sizeof(v), "\"%.*s\"",
				 (int)strcspn(e->choices, ","), e->choices);
			CHECK_INT(member(e->key, v), ==, 0);
			CHECK_INT(member(e->key, "\"nope\""), !=, 0);
		}
		if (e->words) {
			snprintf(v, sizeof(v), "\"%.*s\"",
				 (int)strcspn(e->words, "|"), e->words);
			CHECK_INT(member(e->key, v), ==, 0);
		}
		CHECK_INT(member(e->key, "null"), !=, 0);
	}
}

/* The stored params read back to the same options. */
static void test_json_round_trip(void)
{
	struct part_opts a, b;
	struct parsa_err err;
	char field[64], *text;
	json_t *j;

	CHECK_INT(from_json("{\"k\": 5, \"method\": \"parsa\", \"blocks\": 7, "
			    "\"init_blocks\": 2, \"seed\": 9, \"imbalance\": 1.2,"
			    " \"rule\": \"round-robin\", \"quality\": \"fast\", "
			    "\"guard_slack\": 1.5, \"syncs\": 2, \"threads\": 2}",
			    &a, field), ==, 0);
	j = part_opts_to_json(&a);
	REQUIRE(j != NULL);
	text = json_dumps(j, JSON_SORT_KEYS);
	CHECK_CONTAINS(text, "\"guard_slack\": 1.5");
	CHECK_CONTAINS(text, "\"syncs\": 2");
	CHECK(strstr(text, "\"workers\"") == NULL); /* not given */
	parsa_err_clear(&err);
	CHECK_INT(part_opts_from_json(j, NULL, &b, field, &err), ==, 0);
	CHECK(memcmp(&a.run, &b.run, sizeof(a.run)) == 0);
	CHECK(memcmp(&a.par, &b.par, sizeof(a.par)) == 0);
	CHECK(a.parallel == b.parallel);
	free(text);
	json_decref(j);
}

static void test_help_lists_every_option(void)
{
	static const unsigned cmds[] = {PART_OPT_PARTITION, PART_OPT_EVAL};
	char *buf = NULL;
	size_t len = 0;

	for (size_t c = 0; c < 2; c++) {
		FILE *f = open_memstream(&buf, &len);

		REQUIRE(f != NULL);
		part_opts_help(f, cmds[c]);
		fclose(f);
		for (size_t i = 0; i < part_opts_count; i++) {
			const struct part_opt *e = &part_opts_table[i];
			char want[64];

			if (!e->name)
				continue;
			snprintf(want, sizeof(want), "--%s", e->name);
			if (e->where & cmds[c])
				CHECK_CONTAINS(buf, want);
		}
		CHECK(strstr(buf, "{}") == NULL);
		if (cmds[c] == PART_OPT_EVAL)
			CHECK(strstr(buf, "--blocks") == NULL);
		else
			CHECK_CONTAINS(buf, "(default 16)"); /* --refine */
		free(buf);
		buf = NULL;
	}
}

static void test_report_params(void)
{
	struct part_run_opts o;
	struct part_opts_facts f = {.examples = 100000, .blocks = 0};
	json_t *p;

	part_run_opts_default(&o);
	p = part_opts_report(&o, &f);
	REQUIRE(p != NULL);
	for (size_t i = 0; i < part_opts_count; i++) {
		const struct part_opt *e = &part_opts_table[i];

		if (e->report_when != PART_REP_NO)
			CHECK(json_object_get(p, e->key) != NULL);
	}
	CHECK_INT(json_integer_value(json_object_get(p, "blocks")), ==,
		  parsa_partu_blocks(&o.pu, 100000));
	CHECK(json_is_null(json_object_get(p, "time_limit")));
	CHECK(json_real_value(json_object_get(p, "guard_slack")) == 1.0);
	json_decref(p);
	/* random: the Parsa-only ones are left out */
	o.method = PART_METHOD_RANDOM;
	o.guard_slack = INFINITY;
	p = part_opts_report(&o, &f);
	REQUIRE(p != NULL);
	CHECK(json_object_get(p, "seed") && !json_object_get(p, "sweeps") &&
	      !json_object_get(p, "blocks"));
	json_decref(p);
	o.method = PART_METHOD_PARSA;
	p = part_opts_report(&o, &f);
	CHECK_STR(json_string_value(json_object_get(p, "guard_slack")), "inf");
	json_decref(p);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--schema") == 0) {
		json_t *s = part_opts_schema();

		if (!s)
			return 1;
		json_dumpf(s, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(s);
		return 0;
	}
	RUN(test_table_is_consistent);
	RUN(test_defaults);
	RUN(test_values_and_words);
	RUN(test_guard_slack_values);
	RUN(test_preset_before_explicit);
	RUN(test_usage_errors);
	RUN(test_json_members);
	RUN(test_json_bounds);
	RUN(test_json_round_trip);
	RUN(test_help_lists_every_option);
	RUN(test_report_params);
	return harness_done();
}
