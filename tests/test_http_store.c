/*
 * test_http_store: durable files of the HTTP service: atomic writes
 * (http_store.h), a placement saved and loaded back (http_place.h, the
 * CLI's file format plus the neighbor sets), and the /metrics text
 * (http_metrics.h).
 */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>

#include "part_io.h"
#include "part_reader.h"
#include "http_metrics.h"
#include "http_place.h"
#include "http_store.h"

static char dir[64];

static int count_tmp_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_atomic_json(void)
{
	char path[128];
	struct parsa_err err;
	json_t *j = json_pack("{s:s, s:i}", "state", "running", "k", 16), *back;

	parsa_err_clear(&err);
	snprintf(path, sizeof(path), "%s/a/b/job.json", dir);
	CHECK_INT(http_store_put_json(path, j, &err), !=, 0); /* no dir yet */
	snprintf(path, sizeof(path), "%s/a/b", dir);
	CHECK_INT(http_store_mkdirs(path, &err), ==, 0);
	snprintf(path, sizeof(path), "%s/a/b/job.json", dir);
	parsa_err_clear(&err);
	CHECK_INT(http_store_put_json(path, j, &err), ==, 0);
	json_object_set_new(j, "state", json_string("succeeded"));
	CHECK_INT(http_store_put_json(path, j, &err), ==, 0);
	back = http_store_get_json(path, &err);
	REQUIRE(back);
	CHECK_STR(json_string_value(json_object_get(back, "state")), "succeeded");
	CHECK_INT(count_tmp_files(), ==, 0);
	json_decref(back);
	json_decref(j);
	snprintf(path, sizeof(path), "%s/missing.json", dir);
	parsa_err_clear(&err);
	CHECK(http_store_get_json(path, &err) == NULL);
	CHECK_INT(err.code, ==, PARSA_EIO);
}

static const char data[] =
	"1 10:1 20:1\n0 20:1 30:1\n1 40:1\n0 10:1 50:1 60:1\n1 70:1\n";

static void test_place_roundtrip(void)
{
	struct part_lines *l = NULL;
	struct part_read_opts ro = {.format = PART_FMT_LIBSVM};
	struct part_dataset ds;
	struct http_place *p = NULL, *q = NULL;
	struct parsa_err err;
	uint32_t *part = malloc(5 * sizeof(uint32_t)), *owner = malloc(7 * sizeof(uint32_t));
	char prefix[128], path[160], *text;
	size_t len;
	uint32_t v;

	parsa_err_clear(&err);
	part_dataset_init(&ds);
	REQUIRE(part_lines_open_mem(&l, "t.svm", data, sizeof(data) - 1, &err) == 0);
	REQUIRE(part_read_lines(l, &ro, &ds, &err) == 0);
	part_lines_close(l);
	REQUIRE(ds.g.n_rows == 5 && ds.g.n_cols == 7);
	for (uint32_t i = 0; i < 5; i++)
		part[i] = i % 3;
	for (uint32_t i = 0; i < 7; i++)
		owner[i] = (i * 2) % 3;
	REQUIRE(http_place_build(&p, &ds, 3, part, owner, &err) == 0);
	CHECK_INT(p->count[0], ==, 2);
	CHECK_INT(p->count[2], ==, 1);
	/* feature 20 (compact 1) is used by examples 0 and 1: parts 0, 1 */
	CHECK_INT(p->bits[1], ==, 3);
	CHECK(part_idmap_find(&p->map, 70, &v) && v == 6);
	CHECK(!part_idmap_find(&p->map, 15, &v));
	snprintf(prefix, sizeof(prefix), "%s/placement", dir);
	CHECK_INT(http_place_save(p, prefix, &err), ==, 0);
	snprintf(path, sizeof(path), "%s.examples", prefix);
	REQUIRE(http_store_slurp(path, &text, &len, &err) == 0);
	CHECK_STR(text, "0\n1\n2\n0\n1\n");
	free(text);
	snprintf(path, sizeof(path), "%s.features", prefix);
	REQUIRE(http_store_slurp(path, &text, &len, &err) == 0);
	CHECK_STR(text, "10 0\n20 2\n30 1\n40 0\n50 2\n60 1\n70 0\n");
	free(text);
	REQUIRE(http_place_load(&q, prefix, &err) == 0);
	CHECK_INT(q->k, ==, 3);
	CHECK_INT(q->n_rows, ==, 5);
	CHECK_INT(q->n_cols, ==, 7);
	CHECK(memcmp(q->part, p->part, 5 * sizeof(uint32_t)) == 0);
	CHECK(memcmp(q->owner, p->owner, 7 * sizeof(uint32_t)) == 0);
	CHECK(memcmp(q->feat_id, p->feat_id, 7 * sizeof(uint64_t)) == 0);
	CHECK(memcmp(q->bits, p->bits, 7 * sizeof(uint64_t)) == 0);
	CHECK(memcmp(q->count, p->count, 3 * sizeof(uint64_t)) == 0);
	CHECK(part_idmap_find(&q->map, 50, &v) && v == 4);
	http_place_free(q);
	/* a damaged neighbor-set file is an error, not a crash */
	snprintf(path, sizeof(path), "%s.nbr", prefix);
	CHECK_INT(http_store_put(path, "PARSANB1xx", 10, &err), ==, 0);
	parsa_err_clear(&err);
	CHECK_INT(http_place_load(&q, prefix, &err), ==, PARSA_EPARSE);
	CHECK(q == NULL);
	http_place_free(p);
	part_dataset_release(&ds);
}

static void test_metrics_text(void)
{
	static const char *const names[HTTP_JOB_NSTATES] = {"queued", "running",
		"succeeded", "failed", "cancelled"};
	uint64_t jobs[HTTP_JOB_NSTATES] = {1, 2, 3, 0, 0};
	struct http_metrics *m = http_metrics_create();
	char *t;

	REQUIRE(m);
	http_metrics_request(m, HTTP_R_FEATURE, 200, 0.0004);
	http_metrics_request(m, HTTP_R_FEATURE, 200, 0.003);
	http_metrics_request(m, HTTP_R_JOBS, 422, 0.02);
	http_metrics_request(m, HTTP_R_NONE, 418, 0.02);
	http_metrics_partition(m, 1000, 2.0);
	t = http_metrics_text(m, jobs, names, 4);
	REQUIRE(t);
	CHECK_CONTAINS(t, "parsa_http_requests_total{route=\"/v1/jobs/{id}/features/{f}\",status=\"200\"} 2\n");
	CHECK_CONTAINS(t, "parsa_http_requests_total{route=\"/v1/jobs\",status=\"422\"} 1\n");
	CHECK_CONTAINS(t, "parsa_http_requests_total{route=\"other\",status=\"other\"} 1\n");
	CHECK_CONTAINS(t, "route=\"/v1/jobs/{id}/features/{f}\",le=\"0.0005\"} 1\n");
	CHECK_CONTAINS(t, "route=\"/v1/jobs/{id}/features/{f}\",le=\"0.005\"} 2\n");
	CHECK_CONTAINS(t, "parsa_http_request_duration_seconds_count{route=\"/v1/jobs\"} 1\n");
	CHECK_CONTAINS(t, "parsa_jobs{state=\"running\"} 2\n");
	CHECK_CONTAINS(t, "parsa_datasets 4\n");
	CHECK_CONTAINS(t, "parsa_partition_nonzeros_per_second 500.0\n");
	free(t);
	http_metrics_destroy(m);
}

int main(void)
{
	char cmd[96];

	snprintf(dir, sizeof(dir), "/tmp/test_http_store.%ld", (long)getpid());
	mkdir(dir, 0755);
	RUN(test_atomic_json);
	RUN(test_place_roundtrip);
	RUN(test_metrics_text);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return harness_done();
}
