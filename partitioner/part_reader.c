/*
 * part_reader: LIBSVM, SNAP and pairs readers into the parsa CSR (see
 * part_reader.h for the contract).
 *
 * One loop reads the lines, skips blank and comment lines, resolves AUTO on
 * the first data line and hands each data line to the format's handler.
 * Numbers are parsed by hand; LIBSVM values are checked by a small decimal
 * recogniser with strtod as the fallback for the rest of its grammar.
 */
#include "part_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base_cmp.h"
#include "base_io.h"
#include "part_cache.h"
#include "part_hash.h"
#include "part_preader.h"

#define PROGRESS_MASK 0xffffUL  /* progress every 64Ki lines */
#define TOK_SHOW 40             /* bytes of a bad token quoted in messages */

struct pairbuf {                /* collected (example, feature) pairs */
	uint32_t *ex, *ft;
	size_t n, cap;
};

struct rd {                     /* the state of one read */
	struct part_lines *l;
	const char *name;
	enum part_format fmt;
	enum part_graph_mode mode;
	struct part_dataset ds;     /* being built */
	struct part_idmap fmap;     /* features: LIBSVM idx, items, vertices */
	struct part_idmap xmap;     /* pairs: users; edges mode: edge keys */
	uint32_t *row;              /* LIBSVM: the current row */
	size_t row_cap;
	struct pairbuf pb;
	unsigned long lineno;       /* line number when l is NULL */
	int seen_data;              /* a data line was handled */
	int user_header;            /* the last comment before the data
				     * names a user column (format guess) */
	unsigned long header_line;  /* pairs: the header's line, 0 if none */
	int have_last;              /* first column's last id is cached: */
	uint64_t last_key;          /* (SNAP and pairs files are often */
	uint32_t last_id;           /* sorted by their first column) */
	struct parsa_err *err;
};

/* ---- small helpers ---------------------------------------------------- */

static inline int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static inline const char *skip_ws(const char *p)
{
	while (is_ws(*p))
		p++;
	return p;
}

static inline const char *tok_end(const char *p)
{
	while (*p && !is_ws(*p))
		p++;
	return p;
}

/*
 * Quote the token at tok (up to whitespace, the end, or stop when stop is
 * not 0) into out, at most TOK_SHOW bytes, non-printable bytes as \xHH.
 */
static const char *show_tok(char *out, size_t cap, const char *tok, char stop)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	for (i = 0; tok[i] && !is_ws(tok[i]) && tok[i] != stop; i++) {
		unsigned char c = (unsigned char)tok[i];

		if (i == TOK_SHOW || o + 8 >= cap) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\'') {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

/* Report a parse error at byte `at` of `line` (the current line). */
static int perr(struct rd *r, const char *line, const char *at,
		const char *fmt, ...) PARSA_PRINTF(4, 5);

static int perr(struct rd *r, const char *line, const char *at,
		const char *fmt, ...)
{
	char msg[PARSA_ERR_MSG];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return parsa_fail_at(r->err, PARSA_EPARSE, r->name,
			     r->l ? part_lines_lineno(r->l) : r->lineno,
			     (unsigned long)(at - line) + 1, "%s", msg);
}

/*
 * Parse an unsigned decimal at p: 0 = ok, 1 = no digit, 2 = more than 64
 * bits.  *end is set after the digits in every case.
 */
static inline int parse_u64(const char *p, const char **end, uint64_t *v)
{
	const char *s = p;
	uint64_t x = 0;
	int over = 0;

	for (;; p++) {
		unsigned d = (unsigned)(unsigned char)*p - (unsigned)'0';

		if (d > 9)
			break;
		if (x > (UINT64_MAX - d) / 10)
			over = 1;
		x = x * 10 + d;
	}
	*end = p;
	*v = x;
	if (p == s)
		return 1;
	return over ? 2 : 0;
}

static inline int is_digit(char c)
{
	return (unsigned)(unsigned char)c - (unsigned)'0' <= 9;
}

/* [+-]? (d+ (. d*)? | . d+) ([eE] [+-]? d+)? filling exactly [p, e)? */
static int is_plain_decimal(const char *p, const char *e)
{
	int digits = 0;

	if (p < e && (*p == '+' || *p == '-'))
		p++;
	for (; p < e && is_digit(*p); p++)
		digits++;
	if (p < e && *p == '.')
		for (p++; p < e && is_digit(*p); p++)
			digits++;
	if (!digits)
		return 0;
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p == e || !is_digit(*p))
			return 0;
		while (p < e && is_digit(*p))
			p++;
	}
	return p == e;
}

/* Is [p, e) (non-empty, no whitespace, followed by ws or NUL) a number? */
static int is_number(const char *p, const char *e)
{
	char *end;

	if (is_plain_decimal(p, e))
		return 1;
	strtod(p, &end);  /* inf, nan, hex floats ... */
	return end == e;
}

/* A number [p, e) that is finite (no nan, inf or overflow to inf)? */
static int is_finite_number(const char *p, const char *e)
{
	if (e - p < 300 && !memchr(p, 'e', (size_t)(e - p)) &&
	    !memchr(p, 'E', (size_t)(e - p)) && is_plain_decimal(p, e))
		return 1;  /* under 300 digits, no exponent: finite */
	return isfinite(strtod(p, NULL));
}

static int grow_pairs(struct pairbuf *pb, struct parsa_err *err)
{
	size_t ncap = pb->cap ? pb->cap + pb->cap / 2 : 4096;
	uint32_t *a, *b;

	if (ncap > SIZE_MAX / sizeof(uint32_t))
		return parsa_fail(err, PARSA_ENOMEM, "too many entries");
	a = realloc(pb->ex, ncap * sizeof(uint32_t));
	if (a)
		pb->ex = a;
	b = a ? realloc(pb->ft, ncap * sizeof(uint32_t)) : NULL;
	if (!b)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %zu entries", ncap);
	pb->ft = b;
	pb->cap = ncap;
	return 0;
}

static inline int push_pair(struct rd *r, uint32_t ex, uint32_t ft)
{
	int rc;

	if (r->pb.n == r->pb.cap && (rc = grow_pairs(&r->pb, r->err)) != 0)
		return rc;
	r->pb.ex[r->pb.n] = ex;
	r->pb.ft[r->pb.n] = ft;
	r->pb.n++;
	return 0;
}

/* ---- LIBSVM ----------------------------------------------------------- */

static int push_row(struct rd *r, size_t n, uint32_t c)
{
	if (n == r->row_cap) {
		size_t ncap = r->row_cap ? r->row_cap * 2 : 256;
		uint32_t *nr = ncap < SIZE_MAX / sizeof(uint32_t)
			? realloc(r->row, ncap * sizeof(uint32_t)) : NULL;

		if (!nr)
			return parsa_fail(r->err, PARSA_ENOMEM,
					  "out of memory for a row of %zu entries",
					  n);
		r->row = nr;
		r->row_cap = ncap;
	}
	r->row[n] = c;
	return 0;
}

/* The label: any token without ':'; then an optional qid:N. */
static int libsvm_head(struct rd *r, const char *line, const char **pp)
{
	const char *p = *pp, *tok = p, *e;
	char show[TOK_SHOW * 4 + 8];
	uint64_t q;

	for (; *p && !is_ws(*p); p++)
		if (*p == ':')
			return perr(r, line, tok,
				    "expected a label before the features, got '%s'",
				    show_tok(show, sizeof(show), tok, 0));
	p = skip_ws(p);
	if (strncmp(p, "qid:", 4) == 0) {
		if (parse_u64(p + 4, &e, &q) != 0 || (*e && !is_ws(*e)))
			return perr(r, line, p,
				    "expected 'qid:N' (N unsigned), got '%s'",
				    show_tok(show, sizeof(show), p, 0));
		p = skip_ws(e);
	}
	*pp = p;
	return 0;
}

/* One `idx:val` token at *pp: its index in *idx. */
static int libsvm_index(struct rd *r, const char *line, const char **pp,
			uint64_t *idx)
{
	const char *tok = *pp, *p, *v;
	char show[TOK_SHOW * 4 + 8];
	int rc = parse_u64(tok, &p, idx);

	if (rc == 2)
		return perr(r, line, tok,
			    "feature index out of range (more than 64 bits)");
	if (rc == 1 || *p != ':')
		return perr(r, line, tok, "expected 'index:value', got '%s'",
			    show_tok(show, sizeof(show), tok, 0));
	v = p + 1;
	p = tok_end(v);
	if (p == v)
		return perr(r, line, tok, "expected 'index:value', got '%s'",
			    show_tok(show, sizeof(show), tok, 0));
	if (!is_number(v, p))
		return perr(r, line, v, "value is not a number in '%s'",
			    show_tok(show, sizeof(show), tok, 0));
	if (!is_finite_number(v, p)) /* the trainer's rule too */
		return perr(r, line, v, "value is not finite in '%s'",
			    show_tok(show, sizeof(show), tok, 0));
	*pp = p;
	return 0;
}

/* One `idx:val` token at *pp: its compact feature id in *c. */
static int libsvm_entry(struct rd *r, const char *line, const char **pp,
			uint32_t *c)
{
	uint64_t idx;
	int rc = libsvm_index(r, line, pp, &idx);

	return rc ? rc : part_idmap_get(&r->fmap, idx, c, NULL, "features",
					r->err);
}

static int libsvm_line(struct rd *r, const char *line)
{
	const char *p = skip_ws(line);
	struct parsa_graph *g = &r->ds.g;
	size_t n = 0;
	uint32_t c;
	int rc = libsvm_head(r, line, &p);

	while (!rc && *p && *p != '#') {
		rc = libsvm_entry(r, line, &p, &c);
		if (!rc)
			rc = push_row(r, n++, c);
		p = skip_ws(p);
	}
	if (!rc)
		rc = parsa_graph_add_row(g, r->row, n, r->err);
	if (rc)
		return rc;
	r->ds.entries += n;
	r->ds.duplicates += n - parsa_graph_degree(g, g->n_rows - 1);
	if (n == 0)
		r->ds.empty_rows++;
	return 0;
}

/* ---- SNAP ------------------------------------------------------------- */

/*
 * An unsigned id field at *pp ending at whitespace, the end, or (when comma)
 * a ','; what names it in messages ("vertex id", "user id" ...).  With
 * quiet set, fail without a message.
 */
static int id_field(struct rd *r, const char *line, const char **pp,
		    uint64_t *v, const char *what, int comma, int quiet)
{
	const char *tok = *pp, *e;
	char show[TOK_SHOW * 4 + 8];
	int rc = parse_u64(tok, &e, v);

	if (rc == 0 && (!*e || is_ws(*e) || (comma && *e == ','))) {
		*pp = e;
		return 0;
	}
	if (quiet)
		return PARSA_EPARSE;
	if (rc == 2 && (!*e || is_ws(*e) || (comma && *e == ',')))
		return perr(r, line, tok, "%s out of range (more than 64 bits)",
			    what);
	return perr(r, line, tok, "%s is not an unsigned integer, got '%s'",
		    what, show_tok(show, sizeof(show), tok, comma ? ',' : 0));
}

static int snap_ids(struct rd *r, const char *line, uint64_t *a, uint64_t *b)
{
	const char *p = skip_ws(line);
	int rc = id_field(r, line, &p, a, "vertex id", 0, 0);

	if (rc)
		return rc;
	p = skip_ws(p);
	if (!*p)
		return perr(r, line, p, "expected two vertex ids, got one");
	return id_field(r, line, &p, b, "vertex id", 0, 0);
}

/* The compact id of the first column's key, through the one-entry cache. */
static inline int first_col_id(struct rd *r, struct part_idmap *m,
			       uint64_t key, uint32_t *id, const char *what)
{
	int rc;

	if (r->have_last && r->last_key == key) {
		*id = r->last_id;
		return 0;
	}
	rc = part_idmap_get(m, key, id, NULL, what, r->err);
	if (!rc) {
		r->have_last = 1;
		r->last_key = key;
		r->last_id = *id;
	}
	return rc;
}

static int snap_adjacency(struct rd *r, uint64_t a, uint64_t b)
{
	uint32_t ca, cb;
	int rc = first_col_id(r, &r->fmap, a, &ca, "vertices");

	if (!rc)
		rc = part_idmap_get(&r->fmap, b, &cb, NULL, "vertices", r->err);
	if (rc)
		return rc;
	if (a == b) {
		r->ds.self_loops++;
		return 0;
	}
	r->ds.entries += 2;
	rc = push_pair(r, ca, cb);
	return rc ? rc : push_pair(r, cb, ca);
}

static int snap_edge(struct rd *r, uint64_t a, uint64_t b)
{
	uint32_t c[2], e;
	int isnew, rc;

	if (a == b) {
		r->ds.self_loops++;
		return 0;
	}
	rc = first_col_id(r, &r->fmap, a, &c[0], "vertices");
	if (!rc)
		rc = part_idmap_get(&r->fmap, b, &c[1], NULL, "vertices",
				    r->err);
	if (!rc) {
		uint64_t lo = c[0] < c[1] ? c[0] : c[1];
		uint64_t hi = c[0] < c[1] ? c[1] : c[0];

		rc = part_idmap_get(&r->xmap, lo << 32 | hi, &e, &isnew,
				    "edges", r->err);
	}
	if (rc)
		return rc;
	r->ds.entries += 2;
	if (!isnew) {
		r->ds.duplicates++;
		return 0;
	}
	return parsa_graph_add_row(&r->ds.g, c, 2, r->err);
}

static int snap_line(struct rd *r, const char *line)
{
	uint64_t a, b;
	int rc = snap_ids(r, line, &a, &b);

	if (rc)
		return rc;
	if (r->mode == PART_GRAPH_EDGES)
		return snap_edge(r, a, b);
	return snap_adjacency(r, a, b);
}

/* ---- pairs ------------------------------------------------------------ */

static int pairs_fields(struct rd *r, const char *line, uint64_t *u,
			uint64_t *i, int quiet)
{
	const char *p = skip_ws(line);
	int rc = id_field(r, line, &p, u, "user id", 1, quiet);

	if (rc)
		return rc;
	p = skip_ws(p);
	if (*p == ',')
		p = skip_ws(p + 1);
	if (!*p)
		return quiet ? PARSA_EPARSE
			     : perr(r, line, p,
				    "expected two fields 'user item', got one");
	return id_field(r, line, &p, i, "item id", 1, quiet);
}

/*
 * Can line only be a header: none of its fields (split at blanks and
 * commas) is a number?  A line with a number is data, and a malformed one
 * an error ("1,-2" is no header).
 */
static int pairs_is_header(const char *line)
{
	const char *p = line;

	while (*p) {
		const char *s, *d;
		int digit = 0;

		while (*p && (is_ws(*p) || *p == ','))
			p++;
		for (s = p; *p && !is_ws(*p) && *p != ','; p++)
			;
		for (d = s; d < p && !digit; d++)
			digit = *d >= '0' && *d <= '9';
		if (digit && is_number(s, p))
			return 0;
	}
	return 1;
}

static int pairs_line(struct rd *r, const char *line)
{
	uint64_t u, i;
	uint32_t cu, ci;
	int rc;

	if (!r->seen_data && pairs_is_header(line)) {
		/* the optional header line */
		r->header_line = r->l ? part_lines_lineno(r->l) : r->lineno;
		return 0;
	}
	rc = pairs_fields(r, line, &u, &i, 0);
	if (!rc)
		rc = first_col_id(r, &r->xmap, u, &cu, "users");
	if (!rc)
		rc = part_idmap_get(&r->fmap, i, &ci, NULL, "items", r->err);
	if (rc)
		return rc;
	r->ds.entries++;
	return push_pair(r, cu, ci);
}

/* ---- building rows from collected pairs --------------------------------- */

#define FLAG_BUCKETS 1024u  /* buckets of the first bucketing pass */

/*
 * American flag sort of the pairs by (ex >> shift) into nb buckets whose
 * final ranges are bstart[b]..bstart[b+1]; next[] is scratch.  In place,
 * not stable.
 */
static void flag_sort(struct pairbuf *pb, const uint64_t *bstart,
		      uint64_t *next, uint32_t nb, unsigned shift)
{
	for (uint32_t b = 0; b < nb; b++)
		next[b] = bstart[b];
	for (uint32_t b = 0; b < nb; b++) {
		while (next[b] < bstart[b + 1]) {
			uint64_t i = next[b], j;
			uint32_t e = pb->ex[i], k = e >> shift, t;

			if (k == b) {
				next[b]++;
				continue;
			}
			j = next[k]++;
			pb->ex[i] = pb->ex[j];
			pb->ex[j] = e;
			t = pb->ft[i];
			pb->ft[i] = pb->ft[j];
			pb->ft[j] = t;
		}
	}
}

/*
 * Sort the pairs by example in place and fill start[0..n_ex] (the row
 * offsets).  Two passes keep the writes local: first into at most
 * FLAG_BUCKETS ranges of examples, then into single examples.
 */
static void bucket_pairs(struct pairbuf *pb, uint64_t *start, uint64_t *next,
			 uint32_t n_ex)
{
	uint64_t hstart[FLAG_BUCKETS + 1], hnext[FLAG_BUCKETS];
	unsigned shift = 0;
	uint32_t nb;

	for (size_t i = 0; i < pb->n; i++)
		start[pb->ex[i] + 1]++;
	for (uint32_t b = 0; b < n_ex; b++)
		start[b + 1] += start[b];
	if (n_ex == 0)
		return;
	while (((uint64_t)(n_ex - 1) >> shift) >= FLAG_BUCKETS)
		shift++;
	if (shift > 0) {
		nb = ((n_ex - 1) >> shift) + 1;
		for (uint32_t h = 0; h <= nb; h++) {
			uint64_t b = (uint64_t)h << shift;

			hstart[h] = start[b < n_ex ? b : n_ex];
		}
		flag_sort(pb, hstart, hnext, nb, shift);
	}
	flag_sort(pb, start, next, n_ex, 0);
}

/* Preallocate g for n_ex rows and at most nnz entries. */
static int reserve_graph(struct parsa_graph *g, uint32_t n_ex, size_t nnz,
			 struct parsa_err *err)
{
	g->row_ptr = malloc(((size_t)n_ex + 1) * sizeof(uint64_t));
	g->col = malloc((nnz ? nnz : 1) * sizeof(uint32_t));
	if (!g->row_ptr || !g->col)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for a graph of %zu entries",
				  nnz);
	g->row_cap = (uint64_t)n_ex + 1;
	g->col_cap = nnz ? nnz : 1;
	return 0;
}

/* Turn the collected pairs into n_ex rows of r->ds.g (frees the pairs). */
static int build_from_pairs(struct rd *r, uint32_t n_ex)
{
	struct pairbuf *pb = &r->pb;
	struct parsa_graph *g = &r->ds.g;
	uint64_t *start = calloc((size_t)n_ex + 1, sizeof(uint64_t));
	uint64_t *next = malloc(((size_t)n_ex + 1) * sizeof(uint64_t));
	int rc = 0;

	if (!start || !next) {
		rc = parsa_fail(r->err, PARSA_ENOMEM,
				"out of memory for %u rows", n_ex);
		goto out;
	}
	bucket_pairs(pb, start, next, n_ex);
	free(next);
	next = NULL;
	free(pb->ex);
	pb->ex = NULL;
	rc = reserve_graph(g, n_ex, pb->n, r->err);
	for (uint32_t b = 0; !rc && b < n_ex; b++) {
		uint64_t n = start[b + 1] - start[b];
		uint32_t *row = n ? pb->ft + start[b] : NULL;

		base_sort_u32(row, (size_t)n);  /* add_row is fast on sorted rows */
		rc = parsa_graph_add_row(g, row, (size_t)n, r->err);
		if (!rc && n == 0)
			r->ds.empty_rows++;
	}
	if (!rc)
		r->ds.duplicates += pb->n - parsa_graph_nnz(g);
out:
	free(start);
	free(next);
	free(pb->ft);
	pb->ft = NULL;
	pb->n = pb->cap = 0;
	return rc;
}

/*
 * Adjacency mode: vertices without a neighbour are no features; renumber
 * the columns of the others (monotone, so rows stay sorted).
 */
static int drop_isolated_columns(struct rd *r)
{
	struct parsa_graph *g = &r->ds.g;
	uint32_t n = g->n_rows, c = 0;
	uint32_t *newid;
	uint64_t nnz = parsa_graph_nnz(g);

	if (r->ds.empty_rows == 0) {
		g->n_cols = n;
		return 0;
	}
	newid = malloc(((size_t)n + 1) * sizeof(uint32_t));
	if (!newid)
		return parsa_fail(r->err, PARSA_ENOMEM,
				  "out of memory renumbering %u vertices", n);
	for (uint32_t v = 0; v < n; v++) {
		newid[v] = c;
		if (parsa_graph_degree(g, v) > 0)
			r->ds.feat_id[c++] = r->ds.feat_id[v];
	}
	for (uint64_t e = 0; e < nnz; e++)
		g->col[e] = newid[g->col[e]];
	g->n_cols = c;
	free(newid);
	return 0;
}

/* ---- the read loop ---------------------------------------------------- */

static void report_progress(const struct rd *r, const struct part_read_opts *o)
{
	if (o->progress)
		o->progress(o->progress_arg, part_lines_bytes(r->l),
			    part_lines_size(r->l));
}

/* Does the text (a comment without its '#', or a header line) begin
 * with a column named user..., as "UserId<TAB>ItemId" or "userId,movieId"? */
static int names_user(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && (line[i] == '#' || line[i] == ' ' || line[i] == '\t'))
		i++;
	return len - i >= 4 && strncasecmp(line + i, "user", 4) == 0;
}

/* The guess by content (PART_FMT_AUTO, the name said nothing), from the
 * first data line: ':' -> LIBSVM; ',' or a first column named user...
 * (in that line, a header, or the last comment before it) -> pairs;
 * else SNAP. */
static enum part_format guess_by_content(const struct rd *r,
					 const char *line, size_t len)
{
	if (memchr(line, ':', len))
		return PART_FMT_LIBSVM;
	if (memchr(line, ',', len) || r->user_header || names_user(line, len))
		return PART_FMT_PAIRS;
	return PART_FMT_SNAP;
}

static int handle_line(struct rd *r, const char *line, size_t len)
{
	if (r->fmt == PART_FMT_AUTO)
		r->fmt = guess_by_content(r, line, len);
	switch (r->fmt) {
	case PART_FMT_LIBSVM:
		return libsvm_line(r, line);
	case PART_FMT_SNAP:
		return snap_line(r, line);
	default:
		return pairs_line(r, line);
	}
}

static int read_loop(struct rd *r, const struct part_read_opts *o)
{
	const char *line;
	size_t len;
	int eof, rc;

	for (;;) {
		rc = part_lines_next(r->l, &line, &len, &eof, r->err);
		if (rc || eof)
			return rc;
		if ((part_lines_lineno(r->l) & PROGRESS_MASK) == 0)
			report_progress(r, o);
		if (part_line_is_skippable(line, len)) {
			if (r->fmt == PART_FMT_AUTO && !r->seen_data &&
			    memchr(line, '#', len))
				r->user_header = names_user(line, len);
			continue;
		}
		rc = handle_line(r, line, len);
		if (rc)
			return rc;
		r->seen_data = 1;
	}
}

/* After the loop: build what was collected and fill feat_id. */
static int finish(struct rd *r)
{
	uint32_t n_feat = r->fmap.n;
	int rc = 0;

	if (r->fmt == PART_FMT_PAIRS) {
		rc = build_from_pairs(r, r->xmap.n);
		r->ds.feat_id = part_idmap_take_ids(&r->fmap);
		r->ds.ex_id = part_idmap_take_ids(&r->xmap); /* the users */
	} else if (r->fmt == PART_FMT_SNAP &&
		   r->mode == PART_GRAPH_ADJACENCY) {
		rc = build_from_pairs(r, r->fmap.n);
		r->ds.feat_id = part_idmap_take_ids(&r->fmap);
		if (!rc && r->ds.g.n_rows) { /* the vertices, before compaction */
			r->ds.ex_id = malloc((size_t)r->ds.g.n_rows *
					     sizeof(uint64_t));
			if (!r->ds.ex_id)
				rc = parsa_fail(r->err, PARSA_ENOMEM,
						"out of memory for %u vertex ids",
						r->ds.g.n_rows);
			else
				memcpy(r->ds.ex_id, r->ds.feat_id,
				       (size_t)r->ds.g.n_rows * sizeof(uint64_t));
		}
		if (!rc)
			rc = drop_isolated_columns(r);
	} else {
		r->ds.feat_id = part_idmap_take_ids(&r->fmap);
	}
	part_idmap_release(&r->xmap);
	if (rc)
		return rc;
	if (r->ds.g.n_rows == 0 && r->header_line)
		return parsa_fail_at(r->err, PARSA_EPARSE, r->name,
				     r->header_line, 1,
				     "only a header line (no field is a number), no data");
	if (r->ds.g.n_rows == 0) {
		/* no examples: no arrays either */
		free(r->ds.feat_id);
		r->ds.feat_id = NULL;
		free(r->ds.ex_id);
		r->ds.ex_id = NULL;
		parsa_graph_release(&r->ds.g);
		return 0;
	}
	if (r->fmt != PART_FMT_SNAP || r->mode != PART_GRAPH_ADJACENCY)
		r->ds.g.n_cols = n_feat;
	parsa_graph_trim(&r->ds.g);
	return 0;
}

static void rd_release(struct rd *r)
{
	part_dataset_release(&r->ds);
	part_idmap_release(&r->fmap);
	part_idmap_release(&r->xmap);
	free(r->row);
	free(r->pb.ex);
	free(r->pb.ft);
}

int part_read_lines(struct part_lines *l, const struct part_read_opts *o,
		    struct part_dataset *ds, struct parsa_err *err)
{
	static const struct part_read_opts defaults;
	struct rd r;
	int rc;

	if (!o)
		o = &defaults;
	if (!l || !ds)
		return parsa_fail(err, PARSA_EINVAL, "no input or dataset");
	if ((unsigned)o->format > PART_FMT_PAIRS ||
	    (unsigned)o->graph > PART_GRAPH_EDGES)
		return parsa_fail(err, PARSA_EINVAL,
				  "bad format or graph mode (%d, %d)",
				  (int)o->format, (int)o->graph);
	memset(&r, 0, sizeof(r));
	r.l = l;
	r.name = part_lines_name(l);
	r.err = err;
	r.fmt = o->format ? o->format : part_format_guess(r.name);
	r.mode = o->graph;
	part_dataset_init(&r.ds);
	rc = read_loop(&r, o);
	if (!rc)
		rc = finish(&r);
	if (rc) {
		rd_release(&r);
		return rc;
	}
	report_progress(&r, o);
	r.ds.format = r.fmt;
	r.ds.graph = r.mode;
	r.ds.lines = part_lines_lineno(l);
	part_dataset_release(ds);
	*ds = r.ds;
	part_dataset_init(&r.ds);
	rd_release(&r);
	return 0;
}

int part_read_file(const char *path, const struct part_read_opts *o,
		   struct part_dataset *ds, struct parsa_err *err)
{
	struct part_lines *l;
	int rc;

	if (part_cache_probe(path))
		return part_cache_read(path, o, ds, err);
	/* LIBSVM files: the parallel reader (same result, part_preader.h) */
	if ((!o || (unsigned)o->graph <= PART_GRAPH_EDGES) && ds &&
	    (o && o->format ? o->format : part_format_guess(path)) ==
		    PART_FMT_LIBSVM)
		return part_preader_libsvm(path, o, ds, err);
	rc = part_lines_open(&l, path, err);
	if (rc)
		return rc;
	rc = part_read_lines(l, o, ds, err);
	part_lines_close(l);
	return rc;
}

/* ---- dataset and names -------------------------------------------------- */

int part_libsvm_row(const char *name, unsigned long lineno, const char *line,
		    uint64_t **ids, size_t *n, size_t *cap,
		    struct parsa_err *err)
{
	struct rd r;
	const char *p = skip_ws(line);
	int rc;

	memset(&r, 0, sizeof(r));
	r.name = name ? name : "<input>";
	r.lineno = lineno;
	r.err = err;
	*n = 0;
	rc = libsvm_head(&r, line, &p);
	while (!rc && *p && *p != '#') {
		uint64_t idx;

		rc = libsvm_index(&r, line, &p, &idx);
		if (!rc && *n == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			uint64_t *q = realloc(*ids, nc * sizeof(**ids));

			if (!q)
				return parsa_fail(err, PARSA_ENOMEM,
						  "out of memory for a row");
			*ids = q;
			*cap = nc;
		}
		if (!rc)
			(*ids)[(*n)++] = idx;
		p = skip_ws(p);
	}
	return rc;
}

void part_dataset_init(struct part_dataset *ds)
{
	memset(ds, 0, sizeof(*ds));
	parsa_graph_init(&ds->g);
}

uint64_t part_dataset_csr_bytes(const struct part_dataset *ds)
{
	return parsa_graph_bytes(&ds->g) +
	       (uint64_t)ds->g.n_cols * sizeof(uint64_t);
}

void part_dataset_release(struct part_dataset *ds)
{
	if (!ds)
		return;
	part_cache_check_stop(ds->check); /* it reads the mapping */
	if (ds->ids_map) { /* feat_id and ex_id live there */
		munmap(ds->ids_map, ds->ids_map_len);
		ds->feat_id = NULL;
		ds->ex_id = NULL;
	}
	if (ds->map) {
		part_cache_unmap(ds->map, ds->map_len);
	} else {
		parsa_graph_release(&ds->g);
		free(ds->feat_id);
	}
	free(ds->ex_id); /* never in a cache's mapping */
	part_dataset_init(ds);
}

int part_dataset_spill_ids(struct part_dataset *ds, const char *dir,
			   size_t min_bytes)
{
	size_t nf = ds ? (size_t)ds->g.n_cols * sizeof(uint64_t) : 0;
	size_t nx = ds && ds->ex_id ? (size_t)ds->g.n_rows * sizeof(uint64_t)
				    : 0;
	void *m;
	int fd;

	if (!ds || ds->map || ds->ids_map || !ds->feat_id || nf + nx == 0 ||
	    nf + nx < min_bytes)
		return 0;
	fd = base_tmpfile(dir);
	if (fd < 0)
		return 0;
	if (base_write_all(fd, ds->feat_id, nf) ||
	    base_write_all(fd, ds->ex_id, nx)) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, nf + nx, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd); /* the mapping keeps the file */
	if (m == MAP_FAILED)
		return 0;
	free(ds->feat_id);
	free(ds->ex_id);
	ds->feat_id = m;
	ds->ex_id = nx ? (uint64_t *)((char *)m + nf) : NULL;
	ds->ids_map = m;
	ds->ids_map_len = nf + nx;
	return 1;
}

int part_dataset_verify(struct part_dataset *ds, struct parsa_err *err)
{
	struct part_cache_check *c = ds ? ds->check : NULL;

	if (!c)
		return 0;
	ds->check = NULL;
	return part_cache_check_wait(c, err);
}

static const char *const format_names[] = {
	[PART_FMT_AUTO] = "auto",
	[PART_FMT_LIBSVM] = "libsvm",
	[PART_FMT_SNAP] = "snap",
	[PART_FMT_PAIRS] = "pairs",
};

int part_format_parse(const char *s, enum part_format *f)
{
	static const struct {
		const char *name;
		enum part_format f;
	} names[] = {
		{ "auto", PART_FMT_AUTO },     { "libsvm", PART_FMT_LIBSVM },
		{ "svmlight", PART_FMT_LIBSVM }, { "svm", PART_FMT_LIBSVM },
		{ "snap", PART_FMT_SNAP },     { "edgelist", PART_FMT_SNAP },
		{ "pairs", PART_FMT_PAIRS },   { "tsv", PART_FMT_PAIRS },
		{ "csv", PART_FMT_PAIRS },
	};

	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*f = names[i].f;
			return 0;
		}
	}
	return PARSA_EINVAL;
}

const char *part_format_name(enum part_format f)
{
	if ((unsigned)f > PART_FMT_PAIRS)
		return "unknown";
	return format_names[f];
}

int part_graph_mode_parse(const char *s, enum part_graph_mode *m)
{
	if (s && strcasecmp(s, "adjacency") == 0)
		*m = PART_GRAPH_ADJACENCY;
	else if (s && strcasecmp(s, "edges") == 0)
		*m = PART_GRAPH_EDGES;
	else
		return PARSA_EINVAL;
	return 0;
}

const char *part_graph_mode_name(enum part_graph_mode m)
{
	if (m == PART_GRAPH_ADJACENCY)
		return "adjacency";
	if (m == PART_GRAPH_EDGES)
		return "edges";
	return "unknown";
}

/* Does s[0..n) end with the suffix suf (case-insensitive)? */
static int ends_with(const char *s, size_t n, const char *suf)
{
	size_t m = strlen(suf);

	return n >= m && strncasecmp(s + n - m, suf, m) == 0;
}

enum part_format part_format_guess(const char *path)
{
	static const struct {
		const char *ext;
		enum part_format f;
	} exts[] = {
		{ ".svm", PART_FMT_LIBSVM },  { ".libsvm", PART_FMT_LIBSVM },
		{ ".svmlight", PART_FMT_LIBSVM }, { ".csv", PART_FMT_PAIRS },
		{ ".tsv", PART_FMT_PAIRS },    { ".txt", PART_FMT_SNAP },
		{ ".edges", PART_FMT_SNAP },   { ".el", PART_FMT_SNAP },
		{ ".snap", PART_FMT_SNAP },
	};
	size_t n;

	if (!path)
		return PART_FMT_AUTO;
	n = strlen(path);
	if (ends_with(path, n, ".gz"))
		n -= 3;
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (ends_with(path, n, exts[i].ext))
			return exts[i].f;
	return PART_FMT_AUTO;
}
