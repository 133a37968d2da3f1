/*
 * http_data: dataset registry, persistence and cache (see http_data.h).
 * Datasets live in an array indexed by id number - 1, so lookups are O(1).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base_time.h"
#include "part_io.h"
#include "http_data.h"
#include "http_store.h"

struct http_datasets {
	pthread_mutex_t mu;
	char dir[4096];             /* STATE/datasets */
	struct http_dataset **v;    /* v[n-1] = dataset "dn", NULL if none */
	uint64_t n, cap;            /* slots used (= last id), allocated */
	uint64_t next;              /* last reserved id number */
	unsigned cache_max;
	uint64_t clock;             /* for LRU */
};

uint64_t http_id_number(const char *id, char prefix)
{
	uint64_t v;

	if (!id || id[0] != prefix || id[1] == '0' ||
	    http_parse_u64(id + 1, strlen(id + 1), &v) != 0)
		return 0;
	return v;
}

void http_now_iso(char *buf)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void dataset_free(struct http_dataset *d)
{
	if (!d)
		return;
	if (d->ds) {
		part_dataset_release(d->ds);
		free(d->ds);
	}
	free(d->name);
	free(d->path);
	free(d);
}

/* Put d at its slot (under mu).  0 or PARSA_ENOMEM. */
static int put_locked(struct http_datasets *r, struct http_dataset *d,
		      struct parsa_err *err)
{
	uint64_t i = http_id_number(d->id, 'd');

	if (i == 0)
		return parsa_fail(err, PARSA_EINVAL, "bad dataset id '%s'", d->id);
	if (i > r->cap) {
		uint64_t cap = r->cap ? r->cap : 16;
		struct http_dataset **v;

		while (cap < i)
			cap *= 2;
		v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		memset(v + r->cap, 0, (cap - r->cap) * sizeof(*v));
		r->v = v;
		r->cap = cap;
	}
	dataset_free(r->v[i - 1]);
	r->v[i - 1] = d;
	if (i > r->n)
		r->n = i;
	if (i > r->next)
		r->next = i;
	return 0;
}

json_t *http_dataset_json(const struct http_dataset *d)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:s}",
			 "id", d->id, "name", d->name,
			 "source", d->uploaded ? "upload" : "path",
			 "format", part_format_name(d->format),
			 "format_from", d->format_from,
			 "graph", part_graph_mode_name(d->graph),
			 "examples", (json_int_t)d->examples,
			 "features", (json_int_t)d->features,
			 "nonzeros", (json_int_t)d->nonzeros,
			 "bytes", (json_int_t)d->bytes,
			 "load_seconds", d->load_seconds, "created", d->created);
}

/* The stored description: the public one plus the file path. */
static int save(struct http_datasets *r, const struct http_dataset *d,
		struct parsa_err *err)
{
	char path[4200];
	json_t *j = http_dataset_json(d);
	int rc;

	if (!j || json_object_set_new(j, "path", json_string(d->path)))
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	else {
		snprintf(path, sizeof(path), "%s/%s.json", r->dir, d->id);
		rc = http_store_put_json(path, j, err);
	}
	json_decref(j);
	return rc;
}

static struct http_dataset *from_json(json_t *j)
{
	struct http_dataset *d = calloc(1, sizeof(*d));
	const char *id = NULL, *name = NULL, *path = NULL, *src = NULL;
	const char *fmt = NULL, *graph = NULL, *created = NULL, *from = NULL;
	json_int_t ex = 0, fe = 0, nz = 0, by = 0;
	double ls = 0;

	if (!d || json_unpack(j, "{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s?I, s?F, s?s, s?s}",
			      "id", &id, "name", &name, "path", &path,
			      "source", &src, "format", &fmt, "graph", &graph,
			      "examples", &ex, "features", &fe, "nonzeros", &nz,
			      "bytes", &by, "load_seconds", &ls,
			      "created", &created, "format_from", &from) != 0 ||
	    strlen(id) >= HTTP_ID_MAX) {
		free(d);
		return NULL;
	}
	snprintf(d->id, sizeof(d->id), "%s", id);
	d->name = strdup(name);
	d->path = strdup(path);
	d->uploaded = strcmp(src, "upload") == 0;
	part_format_parse(fmt, &d->format);
	snprintf(d->format_from, sizeof(d->format_from), "%s",
		 from ? from : "request");
	part_graph_mode_parse(graph, &d->graph);
	d->examples = (uint64_t)ex;
	d->features = (uint64_t)fe;
	d->nonzeros = (uint64_t)nz;
	d->bytes = (uint64_t)by;
	d->load_seconds = ls;
	snprintf(d->created, sizeof(d->created), "%s", created ? created : "");
	if (!d->name || !d->path) {
		dataset_free(d);
		return NULL;
	}
	return d;
}

/* Start-up recovery of STATE/datasets (after load_all): remove the
 * temporary files of writes a kill interrupted, and every upload dN.data
 * without its dN.json (its registration never finished, so no client was
 * given its id); say what went on stderr. */
static void recover(struct http_datasets *r)
{
	DIR *dir;
	struct dirent *e;
	struct parsa_err err;
	unsigned files = 0;
	uint64_t bytes = 0;

	parsa_err_clear(&err);
	if (http_store_sweep(r->dir, &files, &bytes, &err) == 0 && files)
		fprintf(stderr, "parsa serve: recovery: removed %u unfinished "
			"temporary file%s (%llu bytes) in %s\n", files,
			files == 1 ? "" : "s", (unsigned long long)bytes, r->dir);
	if (!(dir = opendir(r->dir)))
		return;
	while ((e = readdir(dir))) {
		char id[HTTP_ID_MAX], path[4400];
		size_t n = strlen(e->d_name);
		struct stat sb;

		if (n < 6 || n - 5 >= HTTP_ID_MAX ||
		    strcmp(e->d_name + n - 5, ".data") != 0)
			continue;
		snprintf(id, sizeof(id), "%.*s", (int)(n - 5), e->d_name);
		if (http_id_number(id, 'd') == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s.json", r->dir, id);
		if (stat(path, &sb) == 0) /* described (maybe unreadably): kept */
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->dir, e->d_name);
		if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
		    unlink(path) != 0)
			continue;
		fprintf(stderr, "parsa serve: recovery: removed %s (%llu "
			"bytes): an upload whose registration never finished\n",
			path, (unsigned long long)sb.st_size);
	}
	closedir(dir);
}

/* Load every STATE/datasets/dN.json; unreadable ones are reported on
 * stderr and skipped (their id is not reused). */
static int load_all(struct http_datasets *r, struct parsa_err *err)
{
	DIR *dir = opendir(r->dir);
	struct dirent *e;
	int rc = 0;

	if (!dir)
		return parsa_fail(err, PARSA_EIO, "%s: cannot open", r->dir);
	while (rc == 0 && (e = readdir(dir))) {
		char path[4400], id[HTTP_ID_MAX];
		size_t n = strlen(e->d_name);
		struct parsa_err e2;
		struct http_dataset *d;
		json_t *j;

		if (n < 6 || n - 5 >= HTTP_ID_MAX ||
		    strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(id, sizeof(id), "%.*s", (int)(n - 5), e->d_name);
		if (http_id_number(id, 'd') == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->dir, e->d_name);
		parsa_err_clear(&e2);
		j = http_store_get_json(path, &e2);
		d = j ? from_json(j) : NULL;
		json_decref(j);
		if (!d) {
			fprintf(stderr, "parsa serve: skipping dataset %s: %s\n",
				path, e2.msg[0] ? e2.msg : "bad description");
			if (http_id_number(id, 'd') > r->next)
				r->next = http_id_number(id, 'd');
			continue;
		}
		rc = put_locked(r, d, err);
		if (rc)
			dataset_free(d);
	}
	closedir(dir);
	return rc;
}

int http_datasets_open(struct http_datasets **out, const char *state_dir,
		       unsigned cache_max, struct parsa_err *err)
{
	struct http_datasets *r = calloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	if (!r)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	pthread_mutex_init(&r->mu, NULL);
	r->cache_max = cache_max;
	snprintf(r->dir, sizeof(r->dir), "%s/datasets", state_dir);
	rc = http_store_mkdirs(r->dir, err);
	if (rc == 0)
		rc = load_all(r, err);
	if (rc == 0) {
		uint64_t last = http_store_get_last_id(r->dir);

		if (last > r->next)
			r->next = last;
		recover(r);
	}
	if (rc) {
		http_datasets_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

void http_datasets_close(struct http_datasets *r)
{
	if (!r)
		return;
	for (uint64_t i = 0; i < r->n; i++)
		dataset_free(r->v[i]);
	free(r->v);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void http_datasets_new_id(struct http_datasets *r, char *id)
{
	pthread_mutex_lock(&r->mu);
	r->next++;
	snprintf(id, HTTP_ID_MAX, "d%llu", (unsigned long long)r->next);
	pthread_mutex_unlock(&r->mu);
}

void http_datasets_upload_path(const struct http_datasets *r, const char *id,
			       char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.data", r->dir, id);
}

/* Drop unreferenced cached data beyond cache_max, oldest first (under mu). */
static void evict_locked(struct http_datasets *r)
{
	for (;;) {
		struct http_dataset *old = NULL;
		unsigned cached = 0;

		for (uint64_t i = 0; i < r->n; i++) {
			struct http_dataset *d = r->v[i];

			if (!d || !d->ds || d->refs)
				continue;
			cached++;
			if (!old || d->last_use < old->last_use)
				old = d;
		}
		if (cached <= r->cache_max || !old)
			return;
		part_dataset_release(old->ds);
		free(old->ds);
		old->ds = NULL;
	}
}

/* Read path into a new part_dataset. */
static int read_data(const char *path, enum part_format format,
		     enum part_graph_mode graph, struct part_dataset **out,
		     struct parsa_err *err)
{
	struct part_read_opts ro = {.format = format, .graph = graph};
	struct part_dataset *ds = malloc(sizeof(*ds));
	int rc;

	*out = NULL;
	if (!ds)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	part_dataset_init(ds);
	rc = part_read_file(path, &ro, ds, err);
	if (rc == 0 && ds->g.n_rows == 0)
		rc = parsa_fail(err, PARSA_EINVAL, "%s: empty dataset: no "
				"examples to partition", path);
	if (rc) {
		part_dataset_release(ds);
		free(ds);
		return rc;
	}
	*out = ds;
	return 0;
}

static uint64_t file_size(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n = -1;

	if (f && fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (f)
		fclose(f);
	return n > 0 ? (uint64_t)n : 0;
}

int http_datasets_register(struct http_datasets *r, const char *id,
			   const char *name, const char *path, int uploaded,
			   enum part_format format, const char *format_from,
			   enum part_graph_mode graph, int *input_fault,
			   struct parsa_err *err)
{
	struct http_dataset *d = calloc(1, sizeof(*d));
	double t0 = base_now();
	int rc;

	if (!d)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	snprintf(d->id, sizeof(d->id), "%s", id);
	d->name = strdup(name);
	d->path = strdup(path);
	d->uploaded = uploaded;
	snprintf(d->format_from, sizeof(d->format_from), "%s",
		 format == PART_FMT_AUTO ? "content" : format_from);
	http_now_iso(d->created);
	rc = d->name && d->path ? 0 : parsa_fail(err, PARSA_ENOMEM, "out of memory");
	*input_fault = 0;
	if (rc == 0) {
		rc = read_data(path, format, graph, &d->ds, err);
		*input_fault = rc != 0 && rc != PARSA_ENOMEM;
	}
	if (rc == 0) {
		d->load_seconds = base_now() - t0;
		d->format = d->ds->format;
		d->graph = d->ds->graph;
		d->examples = d->ds->g.n_rows;
		d->features = d->ds->g.n_cols;
		d->nonzeros = d->ds->g.row_ptr[d->ds->g.n_rows];
		d->bytes = file_size(path);
		rc = save(r, d, err);
	}
	if (rc == 0) {
		pthread_mutex_lock(&r->mu);
		d->last_use = ++r->clock;
		rc = put_locked(r, d, err);
		if (rc == 0)
			evict_locked(r);
		pthread_mutex_unlock(&r->mu);
	}
	if (rc)
		dataset_free(d);
	return rc;
}

const struct http_dataset *http_datasets_find(struct http_datasets *r,
					      const char *id)
{
	uint64_t i = http_id_number(id, 'd');
	const struct http_dataset *d = NULL;

	pthread_mutex_lock(&r->mu);
	if (i >= 1 && i <= r->n)
		d = r->v[i - 1];
	pthread_mutex_unlock(&r->mu);
	return d;
}

uint64_t http_datasets_count(struct http_datasets *r)
{
	uint64_t c = 0;

	pthread_mutex_lock(&r->mu);
	for (uint64_t i = 0; i < r->n; i++)
		c += r->v[i] != NULL;
	pthread_mutex_unlock(&r->mu);
	return c;
}

json_t *http_datasets_list_json(struct http_datasets *r, uint64_t after,
				unsigned limit)
{
	json_t *a = json_array(), *out;
	const char *next = NULL;
	unsigned n = 0;

	pthread_mutex_lock(&r->mu);
	for (uint64_t i = after; a && i < r->n; i++) {
		if (!r->v[i])
			continue;
		if (limit && n == limit) {
			next = json_string_value(json_object_get(
				json_array_get(a, n - 1), "id"));
			break;
		}
		json_array_append_new(a, http_dataset_json(r->v[i]));
		n++;
	}
	pthread_mutex_unlock(&r->mu);
	if (!a)
		return NULL;
	out = json_pack("{s:o}", "datasets", a);
	if (out && next)
		json_object_set_new(out, "next", json_string(next));
	return out;
}

int http_datasets_remove(struct http_datasets *r, const char *id)
{
	uint64_t i = http_id_number(id, 'd');
	struct http_dataset *d = NULL;
	char path[4400];

	int busy = 0;

	pthread_mutex_lock(&r->mu);
	if (i >= 1 && i <= r->n && r->v[i - 1]) {
		busy = r->v[i - 1]->refs > 0;
		if (!busy) {
			d = r->v[i - 1];
			r->v[i - 1] = NULL;
		}
	}
	pthread_mutex_unlock(&r->mu);
	if (!d)
		return busy ? 409 : 404;
	{
		struct parsa_err err;
		uint64_t last;

		pthread_mutex_lock(&r->mu);
		last = r->next;
		pthread_mutex_unlock(&r->mu);
		parsa_err_clear(&err);
		if (http_store_put_last_id(r->dir, last, &err)) {
			/* kept: deleted without this record, a restart would
			 * give its id again */
			fprintf(stderr, "parsa serve: %s not deleted: %s\n",
				d->id, err.msg);
			pthread_mutex_lock(&r->mu);
			r->v[i - 1] = d;
			pthread_mutex_unlock(&r->mu);
			return http_store_full(&err) ? 507 : 500;
		}
	}
	/* the description first: a kill between the two leaves an upload
	 * without description, which start-up recovery removes */
	snprintf(path, sizeof(path), "%s/%s.json", r->dir, d->id);
	unlink(path);
	if (d->uploaded)
		unlink(d->path);
	dataset_free(d);
	return 0;
}

int http_datasets_acquire(struct http_datasets *r, const char *id,
			  const struct part_dataset **out, double *t_load,
			  struct parsa_err *err)
{
	uint64_t i = http_id_number(id, 'd');
	struct http_dataset *d = NULL;
	struct part_dataset *ds;
	double t0 = base_now();
	int rc;

	*out = NULL;
	*t_load = 0;
	pthread_mutex_lock(&r->mu);
	if (i >= 1 && i <= r->n)
		d = r->v[i - 1];
	if (d) {
		d->refs++;
		d->last_use = ++r->clock;
	}
	if (d && d->ds) {
		*out = d->ds;
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	pthread_mutex_unlock(&r->mu);
	if (!d)
		return parsa_fail(err, PARSA_EINVAL, "no dataset '%s'", id);
	/* not cached: read it here (d's path and format never change) */
	rc = read_data(d->path, d->format, d->graph, &ds, err);
	pthread_mutex_lock(&r->mu);
	if (rc) {
		d->refs--;
	} else if (d->ds) { /* another job read it meanwhile */
		part_dataset_release(ds);
		free(ds);
	} else {
		d->ds = ds;
	}
	if (rc == 0)
		*out = d->ds;
	pthread_mutex_unlock(&r->mu);
	*t_load = base_now() - t0;
	return rc;
}

void http_datasets_release(struct http_datasets *r, const char *id)
{
	uint64_t i = http_id_number(id, 'd');

	pthread_mutex_lock(&r->mu);
	if (i >= 1 && i <= r->n && r->v[i - 1] && r->v[i - 1]->refs) {
		r->v[i - 1]->refs--;
		evict_locked(r);
	}
	pthread_mutex_unlock(&r->mu);
}
