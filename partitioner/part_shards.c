/*
 * part_shards: per-part example files and per-server feature lists (see
 * part_shards.h).
 */
#include "part_shards.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_cmp.h"
#include "part_cache.h"
#include "part_io.h"
#include "part_out.h"

#define SHARD_OPEN_MAX 256u

struct outfile {
	char *final;        /* the file's name */
	struct part_out o;  /* its temporary file until the commit (part_out.h) */
	FILE *f;            /* open while its group is written */
};

struct shards {
	const char *dir;
	const struct part_dataset *ds;
	const uint32_t *part, *owner;
	uint32_t k;
	struct outfile *ex;    /* k part-<i>.libsvm files */
	struct outfile *ft;    /* k features-<i>.txt files */
	struct parsa_err *err;
};

/* ---- paths and directories ---------------------------------------------- */

static int mkdir_one(char *path, struct parsa_err *err)
{
	struct stat st;

	if (mkdir(path, 0777) == 0)
		return 0;
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		return parsa_fail(err, PARSA_EIO, "%s: exists and is not a directory",
				  path);
	return parsa_fail(err, PARSA_EIO, "%s: cannot create directory: %s",
			  path, strerror(errno));
}

/* mkdir -p */
static int make_dirs(const char *dir, struct parsa_err *err)
{
	size_t n = strlen(dir);
	char *p = malloc(n + 1);
	int rc = 0;

	if (!p)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i < n && !rc; i++) {
		if (p[i] != '/' || p[i - 1] == '/')
			continue;
		p[i] = '\0';
		rc = mkdir_one(p, err);
		p[i] = '/';
	}
	if (!rc)
		rc = mkdir_one(p, err);
	free(p);
	return rc;
}

/* dir/<prefix>name<i><ext>[suffix] in a new string (NULL: out of memory). */
static char *make_name(const char *dir, const char *prefix, const char *name,
		       uint32_t i, const char *ext, const char *suffix)
{
	int n = snprintf(NULL, 0, "%s/%s%s%u%s%s", dir, prefix, name, i, ext,
			 suffix);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;

	if (s)
		snprintf(s, (size_t)n + 1, "%s/%s%s%u%s%s", dir, prefix, name,
			 i, ext, suffix);
	return s;
}

static int name_files(struct shards *s)
{
	s->ex = calloc(s->k, sizeof(*s->ex));
	s->ft = calloc(s->k, sizeof(*s->ft));
	if (!s->ex || !s->ft)
		return parsa_fail(s->err, PARSA_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < s->k; i++) {
		s->ex[i].final = make_name(s->dir, "", "part-", i, ".libsvm", "");
		s->ft[i].final = make_name(s->dir, "", "features-", i, ".txt",
					   "");
		if (!s->ex[i].final || !s->ft[i].final)
			return parsa_fail(s->err, PARSA_ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- output files --------------------------------------------------------- */

static int out_open(struct outfile *o, struct parsa_err *err)
{
	int rc = part_out_open(&o->o, o->final, err);

	o->f = rc ? NULL : o->o.f;
	return rc;
}

static int out_close(struct outfile *o, struct parsa_err *err)
{
	if (!o->f)
		return 0;
	o->f = NULL;
	return part_out_close(&o->o, err);
}

static int out_write(struct outfile *o, const char *buf, size_t n,
		     struct parsa_err *err)
{
	if (n && fwrite(buf, 1, n, o->f) != n)
		return parsa_fail(err, PARSA_EIO, "%s: write error: %s",
				  o->final, strerror(errno));
	return 0;
}

/* Unsigned decimal of v at p; returns the number of bytes (<= 20). */
static size_t put_u64(char *p, uint64_t v)
{
	char t[24];
	size_t n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = t[n - 1 - i];
	return n;
}

/* ---- examples ------------------------------------------------------------- */

/* LIBSVM input: copy the data lines of parts [g0, g1) from data_path. */
static int copy_lines(struct shards *s, const char *data_path, uint32_t g0,
		      uint32_t g1)
{
	struct part_lines *l;
	const char *line;
	size_t len;
	uint64_t e = 0, n = s->ds->g.n_rows;
	int eof = 0, rc = part_lines_open(&l, data_path, s->err);

	while (!rc) {
		rc = part_lines_next(l, &line, &len, &eof, s->err);
		if (rc || eof)
			break;
		if (part_line_is_skippable(line, len))
			continue;
		if (e == n)
			break;
		if (s->part[e] >= g0 && s->part[e] < g1) {
			struct outfile *o = &s->ex[s->part[e]];

			rc = out_write(o, line, len, s->err);
			if (!rc)
				rc = out_write(o, "\n", 1, s->err);
		}
		e++;
	}
	if (!rc && (e != n || !eof))
		rc = parsa_fail(s->err, PARSA_EIO,
				"%s: holds %s data lines than the dataset's %llu examples (changed since it was read?)",
				data_path, e < n ? "fewer" : "more",
				(unsigned long long)n);
	part_lines_close(l);
	return rc;
}

/* One example as `0 f1:1 f2:1 ...` with original ids ascending. */
static int gen_line(struct shards *s, uint32_t e, uint64_t *ids, char *buf)
{
	const struct parsa_graph *g = &s->ds->g;
	uint64_t a = g->row_ptr[e], d = g->row_ptr[e + 1] - a;
	struct outfile *o = &s->ex[s->part[e]];
	size_t n = 1;
	int rc = 0;

	for (uint64_t j = 0; j < d; j++)
		ids[j] = s->ds->feat_id[g->col[a + j]];
	qsort(ids, (size_t)d, sizeof(uint64_t), base_cmp_u64);
	buf[0] = '0';
	for (uint64_t j = 0; j < d && !rc; j++) {
		buf[n++] = ' ';
		n += put_u64(buf + n, ids[j]);
		buf[n++] = ':';
		buf[n++] = '1';
		if (n > 4000) {
			rc = out_write(o, buf, n, s->err);
			n = 0;
		}
	}
	if (s->ds->ex_id) { /* the example's own id, as a comment */
		memcpy(buf + n, " # ", 3);
		n += 3;
		n += put_u64(buf + n, s->ds->ex_id[e]);
	}
	buf[n++] = '\n';
	return rc ? rc : out_write(o, buf, n, s->err);
}

/* SNAP or pairs input: generate the lines of parts [g0, g1). */
static int gen_lines(struct shards *s, uint32_t g0, uint32_t g1)
{
	const struct parsa_graph *g = &s->ds->g;
	uint32_t maxdeg = 0;
	uint64_t *ids;
	char buf[4096 + 64];
	int rc = 0;

	for (uint32_t e = 0; e < g->n_rows; e++)
		if (parsa_graph_degree(g, e) > maxdeg)
			maxdeg = parsa_graph_degree(g, e);
	ids = malloc(((size_t)maxdeg + 1) * sizeof(uint64_t));
	if (!ids)
		return parsa_fail(s->err, PARSA_ENOMEM, "out of memory");
	for (uint32_t e = 0; e < g->n_rows && !rc; e++)
		if (s->part[e] >= g0 && s->part[e] < g1)
			rc = gen_line(s, e, ids, buf);
	free(ids);
	return rc;
}

static int write_examples(struct shards *s, const char *data_path)
{
	int rc = 0;

	for (uint32_t g0 = 0; g0 < s->k && !rc; g0 += SHARD_OPEN_MAX) {
		uint32_t g1 = s->k - g0 > SHARD_OPEN_MAX ? g0 + SHARD_OPEN_MAX
							 : s->k;

		for (uint32_t i = g0; i < g1 && !rc; i++)
			rc = out_open(&s->ex[i], s->err);
		if (!rc && s->ds->format == PART_FMT_LIBSVM)
			rc = copy_lines(s, data_path, g0, g1);
		else if (!rc)
			rc = gen_lines(s, g0, g1);
		for (uint32_t i = g0; i < g1; i++) {
			int rc2 = out_close(&s->ex[i], s->err);

			rc = rc ? rc : rc2;
		}
	}
	return rc;
}

/* ---- features --------------------------------------------------------------- */

static int write_id_list(struct outfile *o, const uint64_t *ids, uint64_t n,
			 struct parsa_err *err)
{
	char buf[4096 + 32];
	size_t m = 0;
	int rc = out_open(o, err);

	for (uint64_t j = 0; j < n && !rc; j++) {
		m += put_u64(buf + m, ids[j]);
		buf[m++] = '\n';
		if (m > 4096) {
			rc = out_write(o, buf, m, err);
			m = 0;
		}
	}
	if (!rc)
		rc = out_write(o, buf, m, err);
	if (o->f) {
		int rc2 = out_close(o, err);

		rc = rc ? rc : rc2;
	}
	return rc;
}

static int write_features(struct shards *s)
{
	uint32_t nc = s->ds->g.n_cols;
	uint64_t *start = calloc((size_t)s->k + 1, sizeof(uint64_t));
	uint64_t *ids = malloc(((size_t)nc + 1) * sizeof(uint64_t));
	int rc = 0;

	if (!start || !ids) {
		rc = parsa_fail(s->err, PARSA_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t f = 0; f < nc; f++)
		start[s->owner[f] + 1]++;
	for (uint32_t i = 0; i < s->k; i++)
		start[i + 1] += start[i];
	for (uint32_t f = 0; f < nc; f++)
		ids[start[s->owner[f]]++] = s->ds->feat_id[f];
	for (uint32_t i = s->k; i > 0; i--)
		start[i] = start[i - 1];
	start[0] = 0;
	for (uint32_t i = 0; i < s->k && !rc; i++) {
		uint64_t n = start[i + 1] - start[i];

		qsort(ids + start[i], (size_t)n, sizeof(uint64_t), base_cmp_u64);
		rc = write_id_list(&s->ft[i], ids + start[i], n, s->err);
	}
out:
	free(start);
	free(ids);
	return rc;
}

/* ---- driver ------------------------------------------------------------------ */

static int check_args(const char *dir, const char *data_path,
		      const struct part_dataset *ds, const uint32_t *part,
		      const uint32_t *owner, uint32_t k, struct parsa_err *err)
{
	if (!dir || !*dir || !ds || k == 0)
		return parsa_fail(err, PARSA_EINVAL,
				  "shards: need a directory, a dataset and k >= 1");
	if ((ds->g.n_rows && !part) || (ds->g.n_cols && (!owner || !ds->feat_id)))
		return parsa_fail(err, PARSA_EINVAL,
				  "shards: missing placement arrays");
	if (ds->format == PART_FMT_LIBSVM && ds->g.n_rows && !data_path)
		return parsa_fail(err, PARSA_EINVAL,
				  "shards: LIBSVM lines are copied from the data file, which needs a path");
	if (ds->format == PART_FMT_LIBSVM && ds->g.n_rows &&
	    part_cache_probe(data_path))
		return parsa_fail(err, PARSA_EINVAL,
				  "shards: LIBSVM lines are copied as written from the text file, and %s is a binary cache: give the text file",
				  data_path);
	for (uint32_t e = 0; e < ds->g.n_rows; e++)
		if (part[e] >= k)
			return parsa_fail(err, PARSA_EINVAL,
					  "shards: example %u has part %u >= k = %u",
					  e, part[e], k);
	for (uint32_t f = 0; f < ds->g.n_cols; f++)
		if (owner[f] >= k)
			return parsa_fail(err, PARSA_EINVAL,
					  "shards: feature %u has owner %u >= k = %u",
					  f, owner[f], k);
	return 0;
}

/* Rename every file (all written), or remove every temporary file. */
static int finish_files(struct shards *s, int ok)
{
	int rc = 0;

	for (uint32_t i = 0; s->ex && s->ft && i < s->k; i++) {
		struct outfile *o[2] = { &s->ex[i], &s->ft[i] };

		for (int j = 0; j < 2; j++) {
			if (ok && !rc && o[j]->o.name)
				rc = part_out_commit(&o[j]->o, s->err);
			part_out_abort(&o[j]->o);
			free(o[j]->final);
		}
	}
	free(s->ex);
	free(s->ft);
	return rc;
}

int part_write_shards(const char *dir, const char *data_path,
		      const struct part_dataset *ds, const uint32_t *part,
		      const uint32_t *owner, uint32_t k, struct parsa_err *err)
{
	struct shards s = { dir, ds, part, owner, k, NULL, NULL, err };
	int rc = check_args(dir, data_path, ds, part, owner, k, err), rc2;

	if (rc)
		return rc;
	rc = make_dirs(dir, err);
	if (!rc)
		rc = name_files(&s);
	if (!rc)
		rc = write_examples(&s, data_path);
	if (!rc)
		rc = write_features(&s);
	rc2 = finish_files(&s, rc == 0);
	return rc ? rc : rc2;
}
