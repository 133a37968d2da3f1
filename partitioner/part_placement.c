/*
 * part_placement: write and read PREFIX.examples / PREFIX.features
 * (format in part_placement.h).
 *
 * The reader is a byte-at-a-time lexer over zlib's gzread (which passes
 * plain files through), tracking line and column so every error points at
 * the offending byte.  Dataset feature ids are mapped to compact ids with an
 * open-addressing hash map.
 */
#include "part_placement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base_hash.h"
#include "part_out.h"
#include "part_pool.h"

/* ---- names ---------------------------------------------------------------- */

/* prefix + suffix, malloc'ed; NULL on OOM. */
static char *path_join(const char *prefix, const char *suffix)
{
	size_t a = strlen(prefix), b = strlen(suffix);
	char *p = malloc(a + b + 1);

	if (p) {
		memcpy(p, prefix, a);
		memcpy(p + a, suffix, b + 1);
	}
	return p;
}

/* ---- writing -------------------------------------------------------------- */

static size_t fmt_u64(char *s, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n > 0)
		s[i++] = tmp[--n];
	return i;
}

/* Lines are formatted into a buffer of BUF_LEN bytes written whole: one
 * fwrite per 64 KiB instead of one per line (tens of millions at 1B
 * nonzeros). */
#define BUF_LEN (1u << 16)
#define LINE_MAX_LEN 48u

static int flush_buf(FILE *f, const char *buf, size_t *n)
{
	int bad = *n && fwrite(buf, 1, *n, f) != *n;

	*n = 0;
	return bad ? -1 : 0;
}

static int write_examples(FILE *f, const uint32_t *part, uint32_t n)
{
	char buf[BUF_LEN];
	size_t len = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (len > BUF_LEN - LINE_MAX_LEN && flush_buf(f, buf, &len))
			return -1;
		len += fmt_u64(buf + len, part[i]);
		buf[len++] = '\n';
	}
	return flush_buf(f, buf, &len);
}

static int write_features(FILE *f, const uint32_t *owner,
			  const uint64_t *feat_id, uint32_t n)
{
	char buf[BUF_LEN];
	size_t len = 0;

	for (uint32_t j = 0; j < n; j++) {
		if (len > BUF_LEN - LINE_MAX_LEN && flush_buf(f, buf, &len))
			return -1;
		len += fmt_u64(buf + len, feat_id ? feat_id[j] : j);
		buf[len++] = ' ';
		len += fmt_u64(buf + len, owner[j]);
		buf[len++] = '\n';
	}
	return flush_buf(f, buf, &len);
}

/* Write one file (kind 0 = examples, 1 = features) through o. */
static int write_one(struct part_out *o, const char *name, int kind,
		     const uint32_t *part, uint32_t n_rows,
		     const uint32_t *owner, const uint64_t *feat_id,
		     uint32_t n_cols, struct parsa_err *err)
{
	int rc = part_out_open(o, name, err), bad;

	if (rc)
		return rc;
	setvbuf(o->f, NULL, _IOFBF, 1u << 16);
	bad = kind == 0 ? write_examples(o->f, part, n_rows) :
			  write_features(o->f, owner, feat_id, n_cols);
	if (bad)
		return parsa_fail(err, PARSA_EIO, "placement: writing %s: %s",
				  name, strerror(errno));
	return part_out_close(o, err);
}

/* part_placement_write's two files as tasks of part_pool_run: each task
 * opens, fills and closes (fsyncs) its own file. */
struct write_task {
	struct part_out *o;
	char *const *name;
	const uint32_t *part, *owner;
	const uint64_t *feat_id;
	uint32_t n_rows, n_cols;
};

static int write_task(void *arg, uint32_t k, struct parsa_err *err)
{
	const struct write_task *w = arg;

	return write_one(&w->o[k], w->name[k], (int)k, w->part, w->n_rows,
			 w->owner, w->feat_id, w->n_cols, err);
}

/* below this many lines in all, one thread writes both files (a thread
 * costs more than it saves) */
#define PAR_LINES (1u << 20)

int part_placement_write(const char *prefix, const uint32_t *part,
			 uint32_t n_rows, const uint32_t *owner,
			 const uint64_t *feat_id, uint32_t n_cols,
			 uint32_t threads, struct parsa_err *err)
{
	static const char *const ext[2] = { ".examples", ".features" };
	char *name[2] = { NULL, NULL };
	struct part_out o[2];
	struct write_task w = { o, name, part, owner, feat_id, n_rows, n_cols };
	int rc = 0, k;

	memset(o, 0, sizeof(o));
	if (!prefix || !*prefix || (n_rows && !part) || (n_cols && !owner))
		return parsa_fail(err, PARSA_EINVAL,
				  "placement: missing prefix or arrays");
	for (k = 0; k < 2; k++) {
		name[k] = path_join(prefix, ext[k]);
		if (!name[k])
			rc = parsa_fail(err, PARSA_ENOMEM, "placement: out of memory");
	}
	/* both files complete before either replaces an old one; written
	 * side by side with two threads and enough lines (the error
	 * reported is the examples file's when both fail, as in order) */
	if (threads == 0)
		threads = part_pool_cpus();
	if (!rc)
		rc = part_pool_run(2,
				   (uint64_t)n_rows + n_cols >= PAR_LINES ?
					   threads : 1,
				   write_task, &w, err);
	for (k = 0; k < 2 && !rc; k++)
		rc = part_out_commit(&o[k], err);
	for (k = 0; k < 2; k++) {
		part_out_abort(&o[k]);
		free(name[k]);
	}
	return rc;
}

/* ---- lexer ---------------------------------------------------------------- */

#define LX_EOF (-1)

/* Invariant: buf[pos..len) unread; line/col are those of buf[pos]. */
struct lex {
	gzFile gz;
	const char *name;
	unsigned char buf[1 << 16];
	int len, pos;
	int ioerr;           /* a read failed (then treated as EOF) */
	unsigned long line, col;
};

static int lx_open(struct lex *l, const char *name, struct parsa_err *err)
{
	l->name = name;
	l->len = l->pos = 0;
	l->ioerr = 0;
	l->line = l->col = 1;
	errno = 0;
	l->gz = gzopen(name, "rb");
	if (!l->gz)
		return parsa_fail(err, PARSA_EIO, "placement: cannot open %s: %s",
				  name, errno ? strerror(errno) : "zlib error");
	gzbuffer(l->gz, 1u << 17);
	return 0;
}

static void lx_close(struct lex *l)
{
	if (l->gz)
		gzclose(l->gz);
	l->gz = NULL;
}

static int lx_peek(struct lex *l)
{
	if (l->pos == l->len) {
		int n = l->ioerr ? 0 : gzread(l->gz, l->buf, sizeof(l->buf));

		if (n < 0)
			l->ioerr = 1;
		if (n <= 0)
			return LX_EOF;
		l->len = n;
		l->pos = 0;
	}
	return l->buf[l->pos];
}

static void lx_next(struct lex *l)
{
	if (lx_peek(l) == LX_EOF)
		return;
	if (l->buf[l->pos++] == '\n') {
		l->line++;
		l->col = 1;
	} else {
		l->col++;
	}
}

static void lx_blanks(struct lex *l)
{
	int c;

	while ((c = lx_peek(l)) == ' ' || c == '\t')
		lx_next(l);
}

/* A short description of byte c for messages. */
static const char *lx_describe(int c, char *buf, size_t n)
{
	if (c == LX_EOF)
		return "end of file";
	if (c == '\n' || c == '\r')
		return "end of line";
	if (c > 32 && c < 127)
		snprintf(buf, n, "'%c'", c);
	else
		snprintf(buf, n, "byte 0x%02x", (unsigned)c);
	return buf;
}

/* An error at the current position (or EIO if a read failed). */
static int lx_fail(struct lex *l, unsigned long col, struct parsa_err *err,
		   const char *what, int c)
{
	char d[16];

	if (l->ioerr)
		return parsa_fail(err, PARSA_EIO, "placement: reading %s failed",
				  l->name);
	return parsa_fail_at(err, PARSA_EPARSE, l->name, l->line, col,
			     "%s, got %s", what, lx_describe(c, d, sizeof(d)));
}

/* An unsigned decimal number; *col0 = its column. */
static int lx_number(struct lex *l, const char *what, uint64_t *v,
		     unsigned long *col0, struct parsa_err *err)
{
	char msg[64];
	int c = lx_peek(l);

	*col0 = l->col;
	*v = 0;
	if (c == '-')
		return parsa_fail_at(err, PARSA_EPARSE, l->name, l->line, l->col,
				     "negative %s", what);
	if (c < '0' || c > '9') {
		snprintf(msg, sizeof(msg), "expected a %s (non-negative integer)",
			 what);
		return lx_fail(l, l->col, err, msg, c);
	}
	for (; c >= '0' && c <= '9'; c = lx_peek(l)) {
		if (*v > (UINT64_MAX - (uint64_t)(c - '0')) / 10)
			return parsa_fail_at(err, PARSA_EPARSE, l->name,
					     l->line, *col0, "%s too large",
					     what);
		*v = *v * 10 + (uint64_t)(c - '0');
		lx_next(l);
	}
	return 0;
}

/* Blanks, optional '\r', then '\n' or end of file. */
static int lx_end_line(struct lex *l, const char *after,
		       struct parsa_err *err)
{
	char msg[64];
	int c;

	lx_blanks(l);
	c = lx_peek(l);
	if (c == '\r') {
		lx_next(l);
		c = lx_peek(l);
	}
	if (c == '\n' || c == LX_EOF) {
		lx_next(l);
		return l->ioerr ? lx_fail(l, l->col, err, "", c) : 0;
	}
	snprintf(msg, sizeof(msg), "expected end of line after %s", after);
	return lx_fail(l, l->col, err, msg, c);
}

/* ---- reading PREFIX.examples ---------------------------------------------- */

struct rd_state {
	uint32_t k_max;
	uint64_t max_part; /* largest part id seen */
	int any;           /* a part id was seen */
};

static int check_part(struct lex *l, struct rd_state *s, uint64_t v,
		      unsigned long col, struct parsa_err *err)
{
	if (s->k_max && v >= s->k_max)
		return parsa_fail_at(err, PARSA_EPARSE, l->name, l->line, col,
				     "part id %llu out of range (k = %u)",
				     (unsigned long long)v, s->k_max);
	if (v >= UINT32_MAX)
		return parsa_fail_at(err, PARSA_EPARSE, l->name, l->line, col,
				     "part id %llu too large",
				     (unsigned long long)v);
	if (!s->any || v > s->max_part)
		s->max_part = v;
	s->any = 1;
	return 0;
}

static int read_examples(struct lex *l, uint32_t n_rows, uint32_t *part,
			 struct rd_state *s, struct parsa_err *err)
{
	unsigned long col;
	uint64_t v;
	char msg[96];
	int rc;

	for (uint32_t i = 0; i < n_rows; i++) {
		if (lx_peek(l) == LX_EOF) {
			snprintf(msg, sizeof(msg),
				 "file has %u lines, expected %u (one per "
				 "example)", i, n_rows);
			return lx_fail(l, l->col, err, msg, LX_EOF);
		}
		lx_blanks(l);
		if ((rc = lx_number(l, "part id", &v, &col, err)) != 0 ||
		    (rc = check_part(l, s, v, col, err)) != 0 ||
		    (rc = lx_end_line(l, "the part id", err)) != 0)
			return rc;
		part[i] = (uint32_t)v;
	}
	if (lx_peek(l) != LX_EOF)
		return parsa_fail_at(err, PARSA_EPARSE, l->name, l->line, l->col,
				     "more lines than the %u examples of the "
				     "dataset", n_rows);
	return l->ioerr ? lx_fail(l, l->col, err, "", LX_EOF) : 0;
}

/* ---- feature id map ------------------------------------------------------- */

/* id -> compact index; val == UINT32_MAX marks an empty slot. */
struct idmap {
	uint64_t *key;
	uint32_t *val;
	size_t mask;
	const uint64_t *ids; /* NULL: identity map over [0, n) */
	uint32_t n;
};

static size_t idmap_slot(const struct idmap *m, uint64_t id)
{
	return (size_t)base_mix64(id) & m->mask;
}

static void idmap_release(struct idmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static int idmap_build(struct idmap *m, const uint64_t *ids, uint32_t n,
		       struct parsa_err *err)
{
	size_t cap = 16;

	memset(m, 0, sizeof(*m));
	m->ids = ids;
	m->n = n;
	if (!ids)
		return 0;
	while (cap < (size_t)n * 2)
		cap *= 2;
	m->key = malloc(cap * sizeof(*m->key));
	m->val = malloc(cap * sizeof(*m->val));
	if (!m->key || !m->val) {
		idmap_release(m);
		return parsa_fail(err, PARSA_ENOMEM,
				  "placement: out of memory for %u feature ids",
				  n);
	}
	memset(m->val, 0xff, cap * sizeof(*m->val));
	m->mask = cap - 1;
	for (uint32_t j = 0; j < n; j++) {
		size_t h = idmap_slot(m, ids[j]);

		for (; m->val[h] != UINT32_MAX; h = (h + 1) & m->mask) {
			uint32_t first = m->val[h];

			if (m->key[h] != ids[j])
				continue;
			idmap_release(m);
			return parsa_fail(err, PARSA_EINVAL,
					  "placement: dataset feature id %llu "
					  "appears twice (compact %u and %u)",
					  (unsigned long long)ids[j], first, j);
		}
		m->key[h] = ids[j];
		m->val[h] = j;
	}
	return 0;
}

/* Compact index of id, or UINT32_MAX when not in the dataset. */
static uint32_t idmap_find(const struct idmap *m, uint64_t id)
{
	if (!m->ids)
		return id < m->n ? (uint32_t)id : UINT32_MAX;
	for (size_t h = idmap_slot(m, id); m->val[h] != UINT32_MAX;
	     h = (h + 1) & m->mask)
		if (m->key[h] == id)
			return m->val[h];
	return UINT32_MAX;
}

/* ---- reading PREFIX.features ---------------------------------------------- */

/* One "feature_id part" line; seen[j] = its line (0 = not yet). */
static int read_feature_line(struct lex *l, const struct idmap *m,
			     uint32_t *owner, uint32_t *seen,
			     struct rd_state *s, struct parsa_err *err)
{
	unsigned long cid, cpart, line = l->line;
	uint64_t id, v;
	uint32_t j;
	int c, rc;

	lx_blanks(l);
	if ((rc = lx_number(l, "feature id", &id, &cid, err)) != 0)
		return rc;
	c = lx_peek(l);
	if (c != ' ' && c != '\t')
		return lx_fail(l, l->col, err,
			       "expected a blank and a part id after the "
			       "feature id", c);
	lx_blanks(l);
	if ((rc = lx_number(l, "part id", &v, &cpart, err)) != 0 ||
	    (rc = check_part(l, s, v, cpart, err)) != 0)
		return rc;
	j = idmap_find(m, id);
	if (j == UINT32_MAX)
		return parsa_fail_at(err, PARSA_EPARSE, l->name, line, cid,
				     "feature %llu is not in the dataset",
				     (unsigned long long)id);
	if (seen[j])
		return parsa_fail_at(err, PARSA_EPARSE, l->name, line, cid,
				     "feature %llu listed twice (first on "
				     "line %u)", (unsigned long long)id,
				     seen[j]);
	seen[j] = (uint32_t)line;
	owner[j] = (uint32_t)v;
	return lx_end_line(l, "the part id", err);
}

static int read_features(struct lex *l, const struct idmap *m,
			 uint32_t *owner, struct rd_state *s,
			 struct parsa_err *err)
{
	uint32_t *seen = calloc((size_t)m->n + 1, sizeof(*seen));
	int rc = 0;

	if (!seen)
		return parsa_fail(err, PARSA_ENOMEM, "placement: out of memory");
	/* Each good line marks a new feature, so at most n + 1 lines are
	 * read before an error: line numbers fit in seen[]. */
	while (!rc && lx_peek(l) != LX_EOF)
		rc = read_feature_line(l, m, owner, seen, s, err);
	if (!rc && l->ioerr)
		rc = lx_fail(l, l->col, err, "", LX_EOF);
	for (uint32_t j = 0; !rc && j < m->n; j++)
		if (!seen[j])
			rc = parsa_fail_at(err, PARSA_EPARSE, l->name, l->line,
					   l->col, "feature %llu of the "
					   "dataset has no part (missing "
					   "from the file)",
					   (unsigned long long)(m->ids ?
								m->ids[j] : j));
	free(seen);
	return rc;
}

/* ---- entry point ---------------------------------------------------------- */

static int read_file(const char *prefix, const char *ext, int kind,
		     uint32_t n_rows, const struct idmap *m, uint32_t *part,
		     uint32_t *owner, struct rd_state *s,
		     struct parsa_err *err)
{
	char *name = path_join(prefix, ext);
	struct lex *l = malloc(sizeof(*l));
	int rc;

	if (!name || !l) {
		free(name);
		free(l);
		return parsa_fail(err, PARSA_ENOMEM, "placement: out of memory");
	}
	rc = lx_open(l, name, err);
	if (!rc) {
		rc = kind == 0 ? read_examples(l, n_rows, part, s, err) :
				 read_features(l, m, owner, s, err);
		lx_close(l);
	}
	free(l);
	free(name);
	return rc;
}

int part_placement_read(const char *prefix, uint32_t n_rows,
			const uint64_t *feat_id, uint32_t n_cols,
			uint32_t k_max, uint32_t *part, uint32_t *owner,
			uint32_t *k_out, struct parsa_err *err)
{
	struct rd_state s = { k_max, 0, 0 };
	struct idmap m;
	int rc;

	if (!prefix || !*prefix || (n_rows && !part) || (n_cols && !owner))
		return parsa_fail(err, PARSA_EINVAL,
				  "placement: missing prefix or arrays");
	rc = idmap_build(&m, feat_id, n_cols, err);
	if (rc)
		return rc;
	rc = read_file(prefix, ".examples", 0, n_rows, &m, part, owner, &s,
		       err);
	if (!rc)
		rc = read_file(prefix, ".features", 1, n_rows, &m, part, owner,
			       &s, err);
	idmap_release(&m);
	if (!rc && k_out)
		*k_out = s.any ? (uint32_t)s.max_part + 1 : 1;
	return rc;
}
