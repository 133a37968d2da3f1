/*
 * train_data: LIBSVM reader with labels and values (train_data.h).
 *
 * One pass over the lines; rows are appended to growing arrays.  A
 * per-column stamp (the last row that used the column) drops repeated
 * indices within a row in O(1).
 */
#include "train_data.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "part_cache.h"
#include "part_io.h"

/* Growing arrays of the reader. */
struct builder {
	struct train_data *d;
	uint64_t y_cap, rp_cap, nnz_cap;
	uint32_t *stamp;       /* column -> 1 + last row using it */
	uint64_t stamp_cap;
	const struct train_data *ref;
	/* train_data_read_part: the map is fixed, only own examples parse */
	int fixed;
	const uint32_t *part;
	uint32_t n_part, rank, nranks;
	uint32_t seen;         /* example lines so far (own or not) */
};

void train_data_init(struct train_data *d)
{
	memset(d, 0, sizeof(*d));
	part_idmap_init(&d->map);
}

void train_data_release(struct train_data *d)
{
	if (!d)
		return;
	free(d->rowptr);
	free(d->col);
	free(d->val);
	free(d->y);
	free(d->feat_id);
	part_idmap_release(&d->map);
	train_data_init(d);
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t sz,
		struct parsa_err *err)
{
	uint64_t nc;
	void *q;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 1024;
	while (nc < need)
		nc *= 2;
	q = realloc(*p, (size_t)nc * sz);
	if (!q)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory reading "
				  "data (%llu entries)", (unsigned long long)nc);
	*p = q;
	*cap = nc;
	return 0;
}

static int add_row(struct builder *b, int8_t y, struct parsa_err *err)
{
	struct train_data *d = b->d;
	int rc;

	if (d->n_rows == UINT32_MAX - 1)
		return parsa_fail(err, PARSA_ERANGE, "too many examples");
	rc = grow((void **)&d->y, &b->y_cap, (uint64_t)d->n_rows + 1, 1, err);
	if (!rc)
		rc = grow((void **)&d->rowptr, &b->rp_cap,
			  (uint64_t)d->n_rows + 2, sizeof(uint64_t), err);
	if (rc)
		return rc;
	d->y[d->n_rows] = y;
	d->rowptr[d->n_rows] = d->nnz;
	d->n_rows++;
	d->rowptr[d->n_rows] = d->nnz;
	return 0;
}

/* Append (col, v) to the current row unless the row has col already. */
static int add_entry(struct builder *b, uint32_t col, double v,
		     struct parsa_err *err)
{
	struct train_data *d = b->d;
	uint64_t cap = b->nnz_cap;
	uint32_t row1 = d->n_rows; /* 1 + current row */
	int rc;

	if (col >= b->stamp_cap) {
		uint64_t old = b->stamp_cap;

		rc = grow((void **)&b->stamp, &b->stamp_cap, (uint64_t)col + 1,
			  sizeof(uint32_t), err);
		if (rc)
			return rc;
		memset(b->stamp + old, 0,
		       (size_t)(b->stamp_cap - old) * sizeof(uint32_t));
	}
	if (b->stamp[col] == row1)
		return 0;
	b->stamp[col] = row1;
	rc = grow((void **)&d->col, &cap, d->nnz + 1, sizeof(uint32_t), err);
	cap = b->nnz_cap;
	if (!rc)
		rc = grow((void **)&d->val, &cap, d->nnz + 1, sizeof(double),
			  err);
	if (rc)
		return rc;
	b->nnz_cap = cap;
	d->col[d->nnz] = col;
	d->val[d->nnz] = v;
	d->nnz++;
	d->rowptr[d->n_rows] = d->nnz;
	return 0;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Unsigned 64-bit decimal in s[0..n); -1 if not. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' ||
		    v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* strtod over exactly s[0..n) (copied: the token is not terminated). */
static int parse_num(const char *s, size_t n, double *out)
{
	char buf[128], *end;

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	return end == buf + n ? 0 : -1;
}

/* The feature's compact id; *skip for a test feature never trained. */
static int feature(struct builder *b, uint64_t id, uint32_t *col, int *skip,
		   struct parsa_err *err)
{
	*skip = 0;
	if (!b->ref)
		return part_idmap_get(&b->d->map, id, col, NULL, "features",
				      err);
	if (!part_idmap_find(&b->ref->map, id, col)) {
		*skip = 1;
		b->d->dropped++;
	}
	return 0;
}

#define FAIL_AT(code, p, ...)                                               \
	parsa_fail_at(err, code, part_lines_name(l), part_lines_lineno(l),   \
		      (unsigned long)((p) - line) + 1, __VA_ARGS__)

static int parse_line(struct builder *b, struct part_lines *l,
		      const char *line, size_t len, struct parsa_err *err)
{
	const char *p = line, *end = line + len, *t;
	double v;
	int rc;

	while (p < end && is_blank(*p))
		p++;
	for (t = p; t < end && !is_blank(*t); t++)
		;
	if (parse_num(p, (size_t)(t - p), &v) || isnan(v))
		return FAIL_AT(PARSA_EPARSE, p, "label is not a number: '%.*s'",
			       (int)(t - p > 40 ? 40 : t - p), p);
	rc = add_row(b, v > 0 ? 1 : -1, err);
	for (p = t; !rc; p = t) {
		const char *colon;
		uint64_t id;
		uint32_t col;
		int skip;

		while (p < end && is_blank(*p))
			p++;
		if (p >= end || *p == '#')
			break;
		for (t = p; t < end && !is_blank(*t); t++)
			;
		colon = memchr(p, ':', (size_t)(t - p));
		if (!colon)
			return FAIL_AT(PARSA_EPARSE, p, "expected 'index:value'"
				       ", got '%.*s'", (int)(t - p > 40 ? 40
							    : t - p), p);
		if (colon - p == 3 && memcmp(p, "qid", 3) == 0)
			continue;
		if (parse_u64(p, (size_t)(colon - p), &id))
			return FAIL_AT(PARSA_EPARSE, p, "bad feature index '%.*s'",
				       (int)(colon - p > 40 ? 40 : colon - p), p);
		if (parse_num(colon + 1, (size_t)(t - colon - 1), &v) ||
		    !isfinite(v))
			return FAIL_AT(PARSA_EPARSE, colon + 1,
				       "bad feature value '%.*s'",
				       (int)(t - colon - 1 > 40 ? 40
							       : t - colon - 1),
				       colon + 1);
		if (b->fixed) {
			if (!part_idmap_find(&b->d->map, id, &col))
				return FAIL_AT(PARSA_EPARSE, p, "feature %llu "
					       "(example %u) is not in the "
					       "placement", (unsigned long long)id,
					       b->seen - 1);
			skip = 0;
		} else {
			rc = feature(b, id, &col, &skip, err);
		}
		if (!rc && !skip)
			rc = add_entry(b, col, v, err);
	}
	return rc;
}

/* Example e is parsed by train_data_read_part. */
static int own(const struct builder *b, uint32_t e)
{
	return e < b->n_part && b->part[e] % b->nranks == b->rank;
}

static int read_all(struct builder *b, struct part_lines *l,
		    struct parsa_err *err)
{
	const char *line;
	size_t len;
	int eof = 0, rc = 0;

	while (!rc) {
		rc = part_lines_next(l, &line, &len, &eof, err);
		if (rc || eof)
			break;
		if (part_line_is_skippable(line, len))
			continue;
		if (b->seen == UINT32_MAX - 1)
			return parsa_fail(err, PARSA_ERANGE, "too many examples");
		b->seen++;
		if (b->fixed && !own(b, b->seen - 1))
			rc = add_row(b, -1, err); /* counted, not parsed */
		else
			rc = parse_line(b, l, line, len, err);
	}
	return rc;
}

/* A binary cache's rows (part_cache_read_values) through the same
 * builder as the text's lines: the same arrays as from the text. */
static int read_cache(struct builder *b, const char *path,
		      struct parsa_err *err)
{
	struct part_dataset ds;
	struct part_cache_values v;
	int rc;

	part_dataset_init(&ds);
	rc = part_cache_read_values(path, &ds, &v, err);
	for (uint32_t r = 0; !rc && r < ds.g.n_rows; r++) {
		b->seen++;
		if (b->fixed && !own(b, r)) {
			rc = add_row(b, -1, err); /* counted, not used */
			continue;
		}
		rc = add_row(b, v.y[r], err);
		for (uint64_t e = ds.g.row_ptr[r];
		     !rc && e < ds.g.row_ptr[r + 1]; e++) {
			uint64_t id = ds.feat_id[v.col[e]];
			uint32_t col;
			int skip = 0;

			if (!b->fixed)
				rc = feature(b, id, &col, &skip, err);
			else if (!part_idmap_find(&b->d->map, id, &col))
				rc = parsa_fail(err, PARSA_EPARSE,
						"%s: feature %llu (example %u) is not in the placement",
						path, (unsigned long long)id, r);
			if (!rc && !skip)
				rc = add_entry(b, col, v.val[e], err);
		}
	}
	part_dataset_release(&ds);
	return rc;
}

/* Open path and read its lines into b->d (rowptr started here). */
static int read_file(struct builder *b, const char *path,
		     struct parsa_err *err)
{
	struct part_lines *l = NULL;
	int rc = grow((void **)&b->d->rowptr, &b->rp_cap, 1, sizeof(uint64_t),
		      err);

	if (!rc) {
		b->d->rowptr[0] = 0;
		if (part_cache_probe(path))
			rc = read_cache(b, path, err);
		else
			rc = part_lines_open(&l, path, err);
	}
	if (!rc && l)
		rc = read_all(b, l, err);
	part_lines_close(l);
	free(b->stamp);
	b->stamp = NULL;
	return rc;
}

int train_data_read(const char *path, const struct train_data *ref,
		    struct train_data *d, struct parsa_err *err)
{
	struct builder b = {0};
	int rc;

	train_data_init(d);
	b.d = d;
	b.ref = ref;
	rc = read_file(&b, path, err);
	d->n_parsed = d->n_rows;
	if (!rc && ref) {
		d->n_cols = ref->n_cols;
	} else if (!rc) {
		d->n_cols = d->map.n;
		d->feat_id = malloc(((size_t)d->n_cols + 1) * sizeof(uint64_t));
		if (!d->feat_id)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
		else if (d->n_cols)
			memcpy(d->feat_id, d->map.ids,
			       (size_t)d->n_cols * sizeof(uint64_t));
	}
	if (rc)
		train_data_release(d);
	return rc;
}

int train_data_read_part(const char *path, const uint32_t *part,
			 uint32_t n_part, uint32_t rank, uint32_t nranks,
			 struct train_data *d, struct parsa_err *err)
{
	struct builder b = {0};
	uint32_t parsed = 0;
	int rc;

	if (nranks == 0 || rank >= nranks || (n_part && !part) ||
	    d->rowptr || (d->n_cols && !d->feat_id) || d->map.n != d->n_cols)
		return parsa_fail(err, PARSA_EINVAL, "train_data_read_part: "
				  "bad arguments");
	d->n_rows = 0;
	d->nnz = 0;
	b.d = d;
	b.fixed = 1;
	b.part = part;
	b.n_part = n_part;
	b.rank = rank;
	b.nranks = nranks;
	rc = read_file(&b, path, err);
	for (uint32_t e = 0; !rc && e < d->n_rows; e++)
		parsed += own(&b, e);
	d->n_parsed = parsed;
	if (rc) {
		free(d->rowptr);
		free(d->col);
		free(d->val);
		free(d->y);
		d->rowptr = NULL;
		d->col = NULL;
		d->val = NULL;
		d->y = NULL;
		d->n_rows = d->n_parsed = 0;
		d->nnz = 0;
	}
	return rc;
}
