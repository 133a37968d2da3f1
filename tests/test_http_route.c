/*
 * test_http_route: URL routing of the HTTP service (http_route.h): every
 * route, its parameters, bad ids and numbers, methods and Allow values,
 * and the problem+json builder and status table (http_problem.h).
 */
#include "harness.h"

#include "parsa_err.h"
#include "http_problem.h"
#include "http_route.h"

static void test_routes(void)
{
	struct http_route r;

	CHECK_INT(http_route_match("/healthz", &r), ==, HTTP_R_HEALTHZ);
	CHECK_INT(http_route_match("/metrics", &r), ==, HTTP_R_METRICS);
	CHECK_INT(http_route_match("/v1/datasets", &r), ==, HTTP_R_DATASETS);
	CHECK_INT(http_route_match("/v1/datasets/", &r), ==, HTTP_R_DATASETS);
	CHECK_INT(http_route_match("/v1/datasets/d12", &r), ==, HTTP_R_DATASET);
	CHECK_STR(r.rid, "d12");
	CHECK_INT(http_route_match("/v1/jobs", &r), ==, HTTP_R_JOBS);
	CHECK_INT(http_route_match("/v1/jobs/j3", &r), ==, HTTP_R_JOB);
	CHECK_STR(r.rid, "j3");
	CHECK_INT(http_route_match("/v1/jobs/j3/report", &r), ==, HTTP_R_REPORT);
	CHECK_INT(http_route_match("/v1/jobs/j3/assign", &r), ==, HTTP_R_ASSIGN);
	CHECK_INT(http_route_match("/v1/jobs/j3/events", &r), ==, HTTP_R_EVENTS);
	CHECK_STR(r.rid, "j3");
	CHECK_INT(http_route_match("/v1/jobs/j3/events/x", &r), ==, HTTP_R_NONE);
	CHECK_INT(http_route_match("/", &r), ==, HTTP_R_UI);
	CHECK_STR(r.asset, "");
	CHECK_INT(http_route_match("", &r), ==, HTTP_R_UI);
	CHECK_INT(http_route_match("/ui", &r), ==, HTTP_R_UI);
	CHECK_INT(http_route_match("/ui/", &r), ==, HTTP_R_UI);
	CHECK_STR(r.asset, "");
	CHECK_INT(http_route_match("/ui/app.js", &r), ==, HTTP_R_UI);
	CHECK_STR(r.asset, "app.js");
	CHECK_INT(http_route_match("/ui/..", &r), ==, HTTP_R_NONE);
	CHECK_INT(http_route_match("/ui/.hidden", &r), ==, HTTP_R_NONE);
	CHECK_INT(http_route_match("/ui/a/b", &r), ==, HTTP_R_NONE);
	CHECK_INT(http_route_match("/ui/a%2fb", &r), ==, HTTP_R_NONE);
	CHECK(http_route_methods(HTTP_R_EVENTS) == HTTP_M_GET);
	CHECK(http_route_methods(HTTP_R_UI) == (HTTP_M_GET | HTTP_M_HEAD));
	CHECK_INT(http_route_match("/v1/jobs/j3/placement/examples", &r), ==,
		  HTTP_R_PLACEMENT);
	CHECK_INT(r.features, ==, 0);
	CHECK_INT(http_route_match("/v1/jobs/j3/placement/features/", &r), ==,
		  HTTP_R_PLACEMENT);
	CHECK_INT(r.features, ==, 1);
	CHECK_INT(http_route_match("/v1/jobs/j3/examples/42", &r), ==, HTTP_R_EXAMPLE);
	CHECK_INT(r.index_ok, ==, 1);
	CHECK_INT(r.index, ==, 42);
	CHECK_INT(http_route_match("/v1/jobs/j3/features/18446744073709551615", &r),
		  ==, HTTP_R_FEATURE);
	CHECK(r.index_ok && r.index == UINT64_MAX);
	CHECK_INT(http_route_match("/v1/jobs/j3/examples", &r), ==,
		  HTTP_R_EXAMPLE_KEY);
	CHECK_STR(r.rid, "j3");
	CHECK_INT(http_route_match("/v1/jobs/j3/examples/", &r), ==,
		  HTTP_R_EXAMPLE_KEY);
	CHECK(http_route_methods(HTTP_R_EXAMPLE_KEY) == HTTP_M_GET);
	CHECK_STR(http_route_label(HTTP_R_EXAMPLE_KEY), "/v1/jobs/{id}/examples");
}

static void test_bad_paths(void)
{
	static const char *const bad[] = {
		"/v1", "/v2/jobs", "/uix", "/ui/a/b", "/v1/jobs/j1/placement",
		"/v1/jobs/j1/placement/both", "/v1/jobs/j1/x/1", "/v1//jobs",
		"/v1/jobs/j%201", "/v1/jobs/../etc", "/v1/jobs/j1/examples/1/2",
		"/healthz/x", "/v1/datasets/d1/x", "/v1/jobs/j1/report/x/y/z",
		"/v1/jobs/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	struct http_route r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK_INT(http_route_match(bad[i], &r), ==, HTTP_R_NONE);
		CHECK_STR(r.rid, "");
	}
	CHECK_INT(http_route_match(NULL, &r), ==, HTTP_R_UI); /* "/" */
	/* a bad number still routes (404 from the handler, not the router) */
	CHECK_INT(http_route_match("/v1/jobs/j1/examples/-1", &r), ==, HTTP_R_EXAMPLE);
	CHECK_INT(r.index_ok, ==, 0);
	CHECK_INT(http_route_match("/v1/jobs/j1/features/18446744073709551616", &r),
		  ==, HTTP_R_FEATURE);
	CHECK_INT(r.index_ok, ==, 0);
	CHECK_INT(http_route_match("/v1/jobs/j1/features/1x", &r), ==, HTTP_R_FEATURE);
	CHECK_INT(r.index_ok, ==, 0);
}

static void test_methods(void)
{
	CHECK(http_route_methods(HTTP_R_JOB) & HTTP_M_DELETE);
	CHECK(!(http_route_methods(HTTP_R_JOB) & HTTP_M_POST));
	CHECK(http_route_methods(HTTP_R_ASSIGN) == HTTP_M_POST);
	CHECK_INT(http_route_methods(HTTP_R_NONE), ==, 0);
	CHECK_STR(http_route_allow(HTTP_R_JOBS), "GET, POST");
	CHECK_STR(http_route_allow(HTTP_R_JOB), "GET, DELETE");
	CHECK_STR(http_route_label(HTTP_R_FEATURE), "/v1/jobs/{id}/features/{f}");
	CHECK_STR(http_route_label(HTTP_R_COUNT), "other");
}

static void test_parse_u64(void)
{
	uint64_t v = 7;

	CHECK_INT(http_parse_u64("0", 1, &v), ==, 0);
	CHECK_INT(v, ==, 0);
	CHECK_INT(http_parse_u64("123", 2, &v), ==, 0);
	CHECK_INT(v, ==, 12);
	CHECK_INT(http_parse_u64("", 0, &v), ==, -1);
	CHECK_INT(http_parse_u64("+1", 2, &v), ==, -1);
	CHECK_INT(http_parse_u64("99999999999999999999", 20, &v), ==, -1);
}

static void test_problem(void)
{
	json_t *j = http_problem_new(422, "invalid-parameter", "k must be >= 1");
	char *s;

	REQUIRE(j);
	CHECK_STR(json_string_value(json_object_get(j, "type")),
		  "urn:parsa:problem:invalid-parameter");
	CHECK_STR(json_string_value(json_object_get(j, "title")), "Unprocessable Content");
	CHECK_INT(json_integer_value(json_object_get(j, "status")), ==, 422);
	CHECK_STR(json_string_value(json_object_get(j, "detail")), "k must be >= 1");
	json_decref(j);
	s = http_problem_text(404, NULL, NULL);
	CHECK_CONTAINS(s, "\"type\":\"urn:parsa:problem:not-found\"");
	CHECK_CONTAINS(s, "\"detail\":\"Not Found\"");
	free(s);
	CHECK_STR(http_status_phrase(405), "Method Not Allowed");
	CHECK_STR(http_status_phrase(299), "Error");
	CHECK_INT(http_status_of_parsa(PARSA_EPARSE), ==, 422);
	CHECK_INT(http_status_of_parsa(PARSA_EINVAL), ==, 422);
	CHECK_INT(http_status_of_parsa(PARSA_ENOMEM), ==, 503);
	CHECK_INT(http_status_of_parsa(PARSA_EIO), ==, 500);
	CHECK_INT(http_status_of_parsa(PARSA_ECANCEL), ==, 409);
}

/* Client bytes echoed into JSON: invalid UTF-8 made jansson refuse the
 * reply, answered as 503 "out of memory" (found by tests/fuzz_http.c). */
static void test_utf8(void)
{
	json_t *j;

	CHECK(http_utf8_valid(""));
	CHECK(http_utf8_valid("plain /v1/jobs?x=1"));
	CHECK(http_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
	CHECK(!http_utf8_valid("a\xff" "b"));
	CHECK(!http_utf8_valid("\xc3"));             /* truncated */
	CHECK(!http_utf8_valid("\xc0\xaf"));         /* overlong '/' */
	CHECK(!http_utf8_valid("\xe0\x80\xaf"));     /* overlong */
	CHECK(!http_utf8_valid("\xed\xa0\x80"));     /* surrogate */
	CHECK(!http_utf8_valid("\xf4\x90\x80\x80")); /* above U+10FFFF */
	CHECK(!http_utf8_valid("\xe2\x82"));         /* truncated at the end */
	j = http_json_text("/v1/x\xff\xc3\xa9\xc3");
	REQUIRE(j);
	CHECK_STR(json_string_value(j), "/v1/x?\xc3\xa9?");
	json_decref(j);
	j = http_json_text("ok");
	REQUIRE(j);
	CHECK_STR(json_string_value(j), "ok");
	json_decref(j);
	j = http_problem_new(404, NULL, "no such resource: /\xff");
	REQUIRE(j);
	CHECK_STR(json_string_value(json_object_get(j, "detail")),
		  "no such resource: /?");
	json_decref(j);
	CHECK_STR(http_status_phrase(505), "HTTP Version Not Supported");
}

int main(void)
{
	RUN(test_routes);
	RUN(test_bad_paths);
	RUN(test_methods);
	RUN(test_parse_u64);
	RUN(test_problem);
	RUN(test_utf8);
	return harness_done();
}
