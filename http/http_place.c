/*
 * http_place: in-memory placements, saved and loaded (see http_place.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "part_placement.h"
#include "http_place.h"
#include "http_store.h"

static const char nbr_magic[8] = {'P', 'A', 'R', 'S', 'A', 'N', 'B', '1'};

void http_place_free(struct http_place *p)
{
	if (!p)
		return;
	free(p->part);
	free(p->feat_id);
	free(p->owner);
	free(p->count);
	free(p->bits);
	part_idmap_release(&p->map);
	free(p->ex_id);
	free(p->ex_row);
	part_idmap_release(&p->ex_map);
	free(p);
}

static struct http_place *place_new(uint32_t k, uint32_t n_rows,
				    uint32_t n_cols)
{
	struct http_place *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->k = k;
	p->n_rows = n_rows;
	p->n_cols = n_cols;
	p->words = (k + 63) / 64;
	part_idmap_init(&p->map);
	part_idmap_init(&p->ex_map);
	p->count = calloc(k ? k : 1, sizeof(uint64_t));
	p->bits = calloc((size_t)(n_cols ? n_cols : 1) * p->words,
			 sizeof(uint64_t));
	p->feat_id = malloc((n_cols ? n_cols : 1) * sizeof(uint64_t));
	if (!p->count || !p->bits || !p->feat_id) {
		http_place_free(p);
		return NULL;
	}
	return p;
}

/* The map from feat_id (distinct, in compact order). */
static int build_map(struct http_place *p, struct parsa_err *err)
{
	for (uint32_t v = 0; v < p->n_cols; v++) {
		uint32_t id;
		int isnew, rc;

		rc = part_idmap_get(&p->map, p->feat_id[v], &id, &isnew,
				    "features", err);
		if (rc)
			return rc;
		if (!isnew || id != v)
			return parsa_fail(err, PARSA_EPARSE, "duplicate feature "
					  "id %llu", (unsigned long long)p->feat_id[v]);
	}
	return 0;
}

/* The map from ex_id (set, n_rows entries); a repeated id keeps its first
 * example. */
static int build_ex_map(struct http_place *p, struct parsa_err *err)
{
	p->ex_row = malloc((p->n_rows ? p->n_rows : 1) * sizeof(uint32_t));
	if (!p->ex_row)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (example ids)");
	for (uint32_t r = 0; r < p->n_rows; r++) {
		uint32_t id;
		int isnew, rc;

		rc = part_idmap_get(&p->ex_map, p->ex_id[r], &id, &isnew,
				    "examples", err);
		if (rc)
			return rc;
		if (isnew)
			p->ex_row[id] = r;
	}
	return 0;
}

int http_place_find_example(const struct http_place *p, uint64_t key,
			    uint32_t *row)
{
	uint32_t id;

	if (!p->ex_id || !part_idmap_find(&p->ex_map, key, &id))
		return 0;
	*row = p->ex_row[id];
	return 1;
}

int http_place_build(struct http_place **out, const struct part_dataset *ds,
		     uint32_t k, uint32_t *part, uint32_t *owner,
		     struct parsa_err *err)
{
	const struct parsa_graph *g = &ds->g;
	struct http_place *p = place_new(k, g->n_rows, g->n_cols);
	int rc;

	*out = NULL;
	if (!p) {
		free(part);
		free(owner);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (placement)");
	}
	p->part = part;
	p->owner = owner;
	for (uint32_t v = 0; v < g->n_cols; v++)
		p->feat_id[v] = ds->feat_id ? ds->feat_id[v] : v;
	for (uint32_t r = 0; r < g->n_rows; r++) {
		uint32_t i = part[r];

		p->count[i]++;
		for (uint64_t e = g->row_ptr[r]; e < g->row_ptr[r + 1]; e++)
			p->bits[(uint64_t)g->col[e] * p->words + i / 64] |=
				1ULL << (i % 64);
	}
	rc = build_map(p, err);
	if (rc == 0 && ds->ex_id) {
		p->ex_id = malloc((g->n_rows ? g->n_rows : 1) * sizeof(uint64_t));
		if (!p->ex_id)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (example ids)");
		else
			memcpy(p->ex_id, ds->ex_id, g->n_rows * sizeof(uint64_t));
		if (rc == 0)
			rc = build_ex_map(p, err);
	}
	if (rc) {
		http_place_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* PREFIX.example_ids: "ID PART" per example (the CLI's --examples-ids). */
static int save_example_ids(const struct http_place *p, const char *path,
			    struct parsa_err *err)
{
	struct http_store_file f;
	char buf[65536];
	size_t n = 0;
	int rc = http_store_begin(&f, path, err);

	for (uint32_t r = 0; rc == 0 && r < p->n_rows; r++) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%llu %u\n",
				      (unsigned long long)p->ex_id[r], p->part[r]);
		if (n > sizeof(buf) - 64 || r + 1 == p->n_rows) {
			rc = http_store_write(&f, buf, n, err);
			n = 0;
		}
	}
	if (rc == 0)
		return http_store_commit(&f, err);
	http_store_abort(&f);
	return rc;
}

int http_place_save(const struct http_place *p, const char *prefix,
		    struct parsa_err *err)
{
	char path[4200];
	struct http_store_file f;
	uint32_t hdr[2] = {p->k, p->n_cols};
	int rc;

	rc = part_placement_write(prefix, p->part, p->n_rows, p->owner,
				  p->feat_id, p->n_cols, 0, err);
	snprintf(path, sizeof(path), "%s.examples", prefix);
	if (rc == 0)
		rc = http_store_sync(path, err);
	snprintf(path, sizeof(path), "%s.features", prefix);
	if (rc == 0)
		rc = http_store_sync(path, err);
	snprintf(path, sizeof(path), "%s.nbr", prefix);
	if (rc == 0)
		rc = http_store_begin(&f, path, err);
	if (rc)
		return rc;
	rc = http_store_write(&f, nbr_magic, sizeof(nbr_magic), err);
	if (rc == 0)
		rc = http_store_write(&f, hdr, sizeof(hdr), err);
	if (rc == 0)
		rc = http_store_write(&f, p->bits, (size_t)p->n_cols * p->words *
				      sizeof(uint64_t), err);
	if (rc == 0)
		rc = http_store_commit(&f, err);
	else
		http_store_abort(&f);
	snprintf(path, sizeof(path), "%s.example_ids", prefix);
	if (rc == 0 && p->ex_id)
		rc = save_example_ids(p, path, err);
	return rc;
}

/* Count '\n'-terminated lines (a last line without one counts too). */
static uint64_t count_lines(const char *s, size_t len)
{
	uint64_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n + (len > 0 && s[len - 1] != '\n');
}

/* Next unsigned decimal from *s (skipping blanks); -1 if none. */
static int next_u64(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	if (p == end || *p < '0' || *p > '9')
		return -1;
	while (p < end && *p >= '0' && *p <= '9')
		x = x * 10 + (uint64_t)(*p++ - '0');
	*s = p;
	*v = x;
	return 0;
}

static int load_examples(struct http_place *p, const char *buf, size_t len,
			 const char *path, struct parsa_err *err)
{
	const char *s = buf, *end = buf + len;

	for (uint32_t r = 0; r < p->n_rows; r++) {
		uint64_t v;

		if (next_u64(&s, end, &v) || v >= p->k)
			return parsa_fail(err, PARSA_EPARSE, "%s:%u: bad part",
					  path, r + 1);
		p->part[r] = (uint32_t)v;
		p->count[v]++;
	}
	return 0;
}

static int load_features(struct http_place *p, const char *buf, size_t len,
			 const char *path, struct parsa_err *err)
{
	const char *s = buf, *end = buf + len;

	for (uint32_t v = 0; v < p->n_cols; v++) {
		uint64_t id, o;

		if (next_u64(&s, end, &id) || next_u64(&s, end, &o) || o >= p->k)
			return parsa_fail(err, PARSA_EPARSE, "%s:%u: bad line",
					  path, v + 1);
		p->feat_id[v] = id;
		p->owner[v] = (uint32_t)o;
	}
	return build_map(p, err);
}

/* PREFIX.example_ids when there is one (else p keeps no example ids). */
static int load_example_ids(struct http_place *p, const char *path,
			    struct parsa_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	const char *s, *end;
	int rc;

	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	rc = http_store_slurp(path, &buf, &len, err);
	if (rc)
		return rc;
	p->ex_id = malloc((p->n_rows ? p->n_rows : 1) * sizeof(uint64_t));
	if (!p->ex_id)
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory (example ids)");
	s = buf;
	end = buf + len;
	for (uint32_t r = 0; rc == 0 && r < p->n_rows; r++) {
		uint64_t part;

		if (next_u64(&s, end, &p->ex_id[r]) || next_u64(&s, end, &part) ||
		    part != p->part[r])
			rc = parsa_fail(err, PARSA_EPARSE, "%s:%u: bad line",
					path, r + 1);
	}
	free(buf);
	if (rc == 0)
		rc = build_ex_map(p, err);
	return rc;
}

/* Read the .nbr header and masks of p (n_cols and k must match). */
static int load_nbr(const char *path, uint32_t *k, uint32_t *n_cols,
		    char **buf, size_t *len, struct parsa_err *err)
{
	uint32_t hdr[2];
	int rc = http_store_slurp(path, buf, len, err);

	if (rc)
		return rc;
	if (*len < 16 || memcmp(*buf, nbr_magic, 8) != 0)
		return parsa_fail(err, PARSA_EPARSE, "%s: not a parsa "
				  "neighbor-set file", path);
	memcpy(hdr, *buf + 8, sizeof(hdr));
	*k = hdr[0];
	*n_cols = hdr[1];
	if (*k == 0 || *len != 16 + (size_t)*n_cols * ((*k + 63) / 64) * 8)
		return parsa_fail(err, PARSA_EPARSE, "%s: bad size", path);
	return 0;
}

int http_place_load(struct http_place **out, const char *prefix,
		    struct parsa_err *err)
{
	char path[4200], *nb = NULL, *ex = NULL, *fe = NULL;
	size_t nlen, elen = 0, flen = 0;
	uint32_t k = 0, n_cols = 0;
	struct http_place *p = NULL;
	int rc;

	*out = NULL;
	snprintf(path, sizeof(path), "%s.nbr", prefix);
	rc = load_nbr(path, &k, &n_cols, &nb, &nlen, err);
	snprintf(path, sizeof(path), "%s.examples", prefix);
	if (rc == 0)
		rc = http_store_slurp(path, &ex, &elen, err);
	if (rc == 0 && count_lines(ex, elen) > UINT32_MAX - 1)
		rc = parsa_fail(err, PARSA_ERANGE, "%s: too many lines", path);
	if (rc == 0 && !(p = place_new(k, (uint32_t)count_lines(ex, elen), n_cols)))
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	if (rc == 0) {
		memcpy(p->bits, nb + 16, nlen - 16);
		p->part = malloc((p->n_rows ? p->n_rows : 1) * sizeof(uint32_t));
		p->owner = malloc((n_cols ? n_cols : 1) * sizeof(uint32_t));
		if (!p->part || !p->owner)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	if (rc == 0)
		rc = load_examples(p, ex, elen, path, err);
	snprintf(path, sizeof(path), "%s.features", prefix);
	if (rc == 0)
		rc = http_store_slurp(path, &fe, &flen, err);
	if (rc == 0)
		rc = load_features(p, fe, flen, path, err);
	snprintf(path, sizeof(path), "%s.example_ids", prefix);
	if (rc == 0)
		rc = load_example_ids(p, path, err);
	free(nb);
	free(ex);
	free(fe);
	if (rc) {
		http_place_free(p);
		return rc;
	}
	*out = p;
	return 0;
}
