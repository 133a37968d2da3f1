/*
 * part_gen: synthetic CTR-like LIBSVM generator (model in part_gen.h).
 *
 * Layout: a Zipf sampler (alias table + power-law tail), affine feature
 * permutations per topic, a stamped hash set that keeps each row's features
 * distinct, a stateless planted weight vector for labels, and a buffered
 * writer over stdio or zlib.  One pass, rows are never stored.
 */
#include "part_gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base_cmp.h"
#include "base_hash.h"
#include "parsa_rng.h"
#include "part_out.h"

#define ZIPF_TABLE_MAX (1u << 21) /* ranks with their own alias entry */
#define REDRAWS 8                 /* redraws of a duplicate before probing */
#define OUT_BUF (1u << 20)
#define PROGRESS_EVERY 65536u

void part_gen_opts_default(struct part_gen_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->examples = 100000;
	o->features = 100000;
	o->avg_nnz = 17.0;
	o->topics = 64;
	o->seed = 1;
	o->topic_frac = 0.8;
	o->zipf = 1.1;
}

int part_gen_validate(const struct part_gen_opts *o, struct parsa_err *err)
{
	if (!o)
		return parsa_fail(err, PARSA_EINVAL, "gen: no options");
	if (o->examples < 1)
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: examples must be >= 1");
	if (o->features < 1)
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: features must be >= 1");
	if (!(o->avg_nnz > 0) || !isfinite(o->avg_nnz))
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: avg_nnz must be > 0 (got %g)", o->avg_nnz);
	if (o->avg_nnz > (double)o->features)
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: avg_nnz %g exceeds features %llu",
				  o->avg_nnz, (unsigned long long)o->features);
	if (o->topics < 1)
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: topics must be >= 1");
	if (!(o->topic_frac >= 0 && o->topic_frac <= 1))
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: topic_frac must be in [0, 1] (got %g)",
				  o->topic_frac);
	if (!(o->zipf >= 0) || !isfinite(o->zipf))
		return parsa_fail(err, PARSA_EINVAL,
				  "gen: zipf exponent must be >= 0 (got %g)",
				  o->zipf);
	return 0;
}

/* ---- Zipf sampler ------------------------------------------------------ */

struct alias_ent {
	uint32_t thr;   /* keep own index when the low 32 random bits < thr */
	uint32_t alias; /* else this index */
};

/*
 * Invariant: ent has m entries; entries 0..m-1 are ranks 0..m-1, except that
 * when has_tail the last entry stands for ranks m-1..F-1, drawn from the
 * continuous power law x^-s on [tail_lo, tail_hi) of 1-based ranks.
 */
struct zipf {
	struct alias_ent *ent;
	uint32_t m;
	int has_tail;
	uint64_t F;
	double s, tail_lo, tail_hi;
};

/* Integral of x^-s over [lo, hi). */
static double powlaw_mass(double lo, double hi, double s)
{
	if (fabs(1.0 - s) < 1e-12)
		return log(hi / lo);
	return (pow(hi, 1.0 - s) - pow(lo, 1.0 - s)) / (1.0 - s);
}

/* Inverse CDF of the power law on [lo, hi) at u in [0, 1). */
static double powlaw_inv(double lo, double hi, double s, double u)
{
	double a = 1.0 - s;

	if (fabs(a) < 1e-12)
		return lo * exp(u * log(hi / lo));
	return pow(pow(lo, a) + u * (pow(hi, a) - pow(lo, a)), 1.0 / a);
}

/* Vose's alias method over the normalised weights p[0..m) (mean 1). */
static void alias_build(struct alias_ent *ent, double *p, uint32_t *stack,
			uint32_t m)
{
	uint32_t ns = 0, nl = m; /* small from the front, large from back */

	for (uint32_t i = 0; i < m; i++) {
		ent[i].alias = i;
		ent[i].thr = UINT32_MAX;
		if (p[i] < 1.0)
			stack[ns++] = i;
		else
			stack[--nl] = i;
	}
	while (ns > 0 && nl < m) {
		uint32_t s = stack[--ns], l = stack[nl];

		ent[s].thr = (uint32_t)(p[s] * 4294967296.0);
		ent[s].alias = l;
		p[l] -= 1.0 - p[s];
		if (p[l] < 1.0) {
			nl++;
			stack[ns++] = l;
		}
	}
}

static void zipf_release(struct zipf *z)
{
	free(z->ent);
	z->ent = NULL;
}

static int zipf_init(struct zipf *z, uint64_t F, double s,
		     struct parsa_err *err)
{
	uint64_t head = F < ZIPF_TABLE_MAX ? F : ZIPF_TABLE_MAX;
	double *p, sum = 0;
	uint32_t *stack;

	memset(z, 0, sizeof(*z));
	z->F = F;
	z->s = s;
	z->has_tail = F > head;
	z->m = (uint32_t)head + (z->has_tail ? 1 : 0);
	z->tail_lo = (double)head + 0.5;
	z->tail_hi = (double)F + 0.5;
	z->ent = malloc(z->m * sizeof(*z->ent));
	p = malloc(z->m * sizeof(*p));
	stack = malloc(z->m * sizeof(*stack));
	if (!z->ent || !p || !stack) {
		free(p);
		free(stack);
		zipf_release(z);
		return parsa_fail(err, PARSA_ENOMEM,
				  "gen: out of memory for the Zipf table");
	}
	for (uint64_t r = 0; r < head; r++)
		sum += p[r] = pow((double)(r + 1), -s);
	if (z->has_tail)
		sum += p[head] = powlaw_mass(z->tail_lo, z->tail_hi, s);
	for (uint32_t i = 0; i < z->m; i++)
		p[i] = p[i] * z->m / sum;
	alias_build(z->ent, p, stack, z->m);
	free(p);
	free(stack);
	return 0;
}

/* A Zipf rank in [0, F). */
static uint64_t zipf_draw(const struct zipf *z, struct parsa_rng *rng)
{
	uint64_t x = parsa_rng_next(rng);
	uint32_t i = (uint32_t)(((x >> 32) * z->m) >> 32);
	uint64_t r;
	double v;

	if ((uint32_t)x >= z->ent[i].thr)
		i = z->ent[i].alias;
	if (!z->has_tail || i + 1u < z->m)
		return i;
	v = powlaw_inv(z->tail_lo, z->tail_hi, z->s, parsa_rng_double(rng));
	r = (uint64_t)(v + 0.5); /* nearest 1-based rank */
	if (r < (uint64_t)z->m)
		r = z->m;
	return r > z->F ? z->F - 1 : r - 1;
}

/* ---- affine permutations of [0, F) -------------------------------------- */

struct perm {
	uint64_t a, b; /* r -> (a r + b) mod F, gcd(a, F) == 1 */
};

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static void perm_init(struct perm *p, uint64_t F, struct parsa_rng *rng)
{
	p->b = parsa_rng_below(rng, F);
	if (F <= 2) {
		p->a = 1;
		return;
	}
	do
		p->a = 1 + parsa_rng_below(rng, F - 1);
	while (gcd_u64(p->a, F) != 1);
}

static uint64_t perm_map(const struct perm *p, uint64_t F, uint64_t r)
{
	if (F <= (1ull << 32)) /* a, r, b < 2^32: no overflow */
		return (p->a * r + p->b) % F;
	return (uint64_t)(((unsigned __int128)p->a * r + p->b) % F);
}

/* ---- per-row distinct set ----------------------------------------------- */

/* Open addressing, cleared in O(1) by bumping the stamp. */
struct rowset {
	uint64_t *key;
	uint32_t *stamp;
	size_t mask; /* capacity - 1 (power of two) */
	uint32_t cur;
};

static void rowset_release(struct rowset *s)
{
	free(s->key);
	free(s->stamp);
	memset(s, 0, sizeof(*s));
}

/* Make room for n keys and clear the set. */
static int rowset_reset(struct rowset *s, uint64_t n, struct parsa_err *err)
{
	size_t cap = s->mask ? s->mask + 1 : 0;

	if (n > SIZE_MAX / 32)
		return parsa_fail(err, PARSA_ENOMEM, "gen: row of %llu too long",
				  (unsigned long long)n);
	if (cap == 0 || n * 2 > cap) {
		size_t nc = 64;

		while (nc < n * 2)
			nc *= 2;
		rowset_release(s);
		s->key = malloc(nc * sizeof(*s->key));
		s->stamp = calloc(nc, sizeof(*s->stamp));
		if (!s->key || !s->stamp) {
			rowset_release(s);
			return parsa_fail(err, PARSA_ENOMEM,
					  "gen: out of memory for a row of %llu",
					  (unsigned long long)n);
		}
		s->mask = nc - 1;
	}
	if (++s->cur == 0) {
		memset(s->stamp, 0, (s->mask + 1) * sizeof(*s->stamp));
		s->cur = 1;
	}
	return 0;
}

/* Insert f; returns 1 when new, 0 when already present. */
static int rowset_add(struct rowset *s, uint64_t f)
{
	size_t h = (size_t)base_mix64(f) & s->mask;

	while (s->stamp[h] == s->cur) {
		if (s->key[h] == f)
			return 0;
		h = (h + 1) & s->mask;
	}
	s->stamp[h] = s->cur;
	s->key[h] = f;
	return 1;
}

/* ---- random numbers ----------------------------------------------------- */

static double gauss(struct parsa_rng *rng)
{
	double u1 = 1.0 - parsa_rng_double(rng), u2 = parsa_rng_double(rng);

	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static uint64_t poisson(struct parsa_rng *rng, double lambda)
{
	if (lambda <= 0)
		return 0;
	if (lambda < 30) {
		double L = exp(-lambda), p = 1.0;
		uint64_t k = 0;

		do {
			k++;
			p *= parsa_rng_double(rng);
		} while (p > L);
		return k - 1;
	}
	double x = floor(lambda + sqrt(lambda) * gauss(rng) + 0.5);

	return x < 0 ? 0 : (uint64_t)x;
}

/* The planted weight of feature j (0-based): 0 for ~90% of features. */
static double planted_w(uint64_t wseed, double sigma, uint64_t j)
{
	uint64_t h = base_mix64(wseed + j * BASE_GOLDEN64);
	double u1, u2;

	if ((h & 0xffffffffu) >= 429496730u) /* ~10% */
		return 0;
	u1 = (double)((base_mix64(h) >> 11) + 1) * 0x1.0p-53;
	u2 = (double)(base_mix64(h ^ 0x5bd1e995u) >> 11) * 0x1.0p-53;
	return sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- output ------------------------------------------------------------- */

struct gen_out {
	FILE *f;      /* plain output, or NULL */
	gzFile gz;    /* gzip output, or NULL */
	struct part_out po; /* the file (see part_out.h); unused for stdout */
	const char *name;
	char *buf;
	size_t pos;
};

static int out_flush(struct gen_out *w, struct parsa_err *err)
{
	if (w->pos == 0)
		return 0;
	if (w->gz) {
		if (gzwrite(w->gz, w->buf, (unsigned)w->pos) != (int)w->pos) {
			int zerr;
			const char *m = gzerror(w->gz, &zerr);

			return parsa_fail(err, PARSA_EIO, "gen: writing %s: %s",
					  w->name,
					  zerr == Z_ERRNO ? strerror(errno) : m);
		}
	} else if (fwrite(w->buf, 1, w->pos, w->f) != w->pos) {
		return parsa_fail(err, PARSA_EIO, "gen: writing %s: %s",
				  w->name, strerror(errno));
	}
	w->pos = 0;
	return 0;
}

/* Room for one more token (<= 48 bytes). */
static int out_room(struct gen_out *w, struct parsa_err *err)
{
	return w->pos + 48 > OUT_BUF ? out_flush(w, err) : 0;
}

static void out_u64(struct gen_out *w, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n > 0)
		w->buf[w->pos++] = tmp[--n];
}

static int out_open(struct gen_out *w, const char *path,
		    struct parsa_err *err)
{
	size_t len = strlen(path);
	int rc, fd;

	memset(w, 0, sizeof(*w));
	w->name = path;
	w->buf = malloc(OUT_BUF);
	if (!w->buf)
		return parsa_fail(err, PARSA_ENOMEM, "gen: out of memory");
	if (strcmp(path, "-") == 0) {
		w->f = stdout;
		return 0;
	}
	rc = part_out_open(&w->po, path, err);
	if (rc)
		return rc;
	if (!(len > 3 && strcmp(path + len - 3, ".gz") == 0)) {
		w->f = w->po.f;
		return 0;
	}
	/* gzip through a copy of the descriptor; po.f stays empty */
	fd = dup(fileno(w->po.f));
	w->gz = fd >= 0 ? gzdopen(fd, "wb1") : NULL;
	if (!w->gz) {
		if (fd >= 0)
			close(fd);
		return parsa_fail(err, PARSA_EIO, "gen: cannot write %s: %s",
				  path, strerror(errno));
	}
	gzbuffer(w->gz, 1u << 18);
	return 0;
}

/* Flush and close; rc is the status so far (on error just clean up). */
static int out_close(struct gen_out *w, int rc, struct parsa_err *err)
{
	if (rc == 0)
		rc = out_flush(w, err);
	if (w->gz) {
		int zrc = gzclose(w->gz);

		if (rc == 0 && zrc != Z_OK)
			rc = parsa_fail(err, PARSA_EIO,
					"gen: closing %s: zlib error %d",
					w->name, zrc);
	} else if (w->f == stdout) {
		if (rc == 0 && fflush(stdout) != 0)
			rc = parsa_fail(err, PARSA_EIO,
					"gen: writing stdout: %s",
					strerror(errno));
	}
	if (w->po.name) {
		if (rc == 0)
			rc = part_out_commit(&w->po, err);
		else
			part_out_abort(&w->po);
	}
	free(w->buf);
	memset(w, 0, sizeof(*w));
	return rc;
}

/* ---- the generator ------------------------------------------------------ */

struct gen {
	const struct part_gen_opts *o;
	struct parsa_rng rng;
	struct zipf z;
	struct perm *topic; /* o->topics permutations */
	struct perm global;
	struct rowset set;
	uint64_t *row;
	uint64_t row_cap;
	uint64_t wseed;
	double wsigma;
};

static void gen_release(struct gen *g)
{
	zipf_release(&g->z);
	rowset_release(&g->set);
	free(g->topic);
	free(g->row);
	memset(g, 0, sizeof(*g));
}

static int gen_init(struct gen *g, const struct part_gen_opts *o,
		    struct parsa_err *err)
{
	struct parsa_rng setup;
	int rc;

	memset(g, 0, sizeof(*g));
	g->o = o;
	parsa_rng_seed(&g->rng, o->seed);
	parsa_rng_seed(&setup, o->seed ^ 0x7f4a7c159e3779b9ULL);
	g->wseed = parsa_rng_next(&setup);
	g->wsigma = 2.0 / sqrt(o->avg_nnz / 10 > 1 ? o->avg_nnz / 10 : 1);
	rc = zipf_init(&g->z, o->features, o->zipf, err);
	if (rc)
		return rc;
	g->topic = malloc((size_t)o->topics * sizeof(*g->topic));
	if (!g->topic) {
		gen_release(g);
		return parsa_fail(err, PARSA_ENOMEM,
				  "gen: out of memory for %u topics",
				  o->topics);
	}
	perm_init(&g->global, o->features, &setup);
	for (uint32_t t = 0; t < o->topics; t++)
		perm_init(&g->topic[t], o->features, &setup);
	return 0;
}

static uint64_t row_length(struct gen *g)
{
	double a = g->o->avg_nnz;
	uint64_t n = a >= 1 ? 1 + poisson(&g->rng, a - 1) : poisson(&g->rng, a);

	return n > g->o->features ? g->o->features : n;
}

/* One feature (0-based) not yet in the row. */
static uint64_t draw_feature(struct gen *g, const struct perm *tp)
{
	uint64_t F = g->o->features, f = 0;

	for (int t = 0; t <= REDRAWS; t++) {
		const struct perm *p =
			parsa_rng_double(&g->rng) < g->o->topic_frac ?
				tp : &g->global;

		f = perm_map(p, F, zipf_draw(&g->z, &g->rng));
		if (rowset_add(&g->set, f))
			return f;
	}
	do /* terminates: the row holds fewer than F features */
		f = f + 1 == F ? 0 : f + 1;
	while (!rowset_add(&g->set, f));
	return f;
}

static void sort_u64(uint64_t *a, uint64_t n)
{
	if (n > 32) {
		qsort(a, (size_t)n, sizeof(*a), base_cmp_u64);
		return;
	}
	for (uint64_t i = 1; i < n; i++) {
		uint64_t v = a[i], j = i;

		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/* Draw one example into g->row; returns its length via *n, label via *y. */
static int gen_example(struct gen *g, uint64_t *n, int *y,
		       struct parsa_err *err)
{
	const struct perm *tp = &g->topic[parsa_rng_below(&g->rng,
							  g->o->topics)];
	uint64_t len = row_length(g);
	double margin = 0;
	int rc = rowset_reset(&g->set, len, err);

	if (rc)
		return rc;
	if (len > g->row_cap) {
		uint64_t *nr = realloc(g->row, (size_t)len * sizeof(*nr));

		if (!nr)
			return parsa_fail(err, PARSA_ENOMEM,
					  "gen: out of memory for a row of %llu",
					  (unsigned long long)len);
		g->row = nr;
		g->row_cap = len;
	}
	for (uint64_t i = 0; i < len; i++) {
		g->row[i] = draw_feature(g, tp);
		margin += planted_w(g->wseed, g->wsigma, g->row[i]);
	}
	sort_u64(g->row, len);
	margin += 0.5 * gauss(&g->rng);
	*y = 1.0 / (1.0 + exp(-margin)) > parsa_rng_double(&g->rng) ? 1 : -1;
	*n = len;
	return 0;
}

static int write_example(struct gen_out *w, const uint64_t *row, uint64_t n,
			 int y, struct parsa_err *err)
{
	int rc = out_room(w, err);

	if (rc)
		return rc;
	memcpy(w->buf + w->pos, y > 0 ? "+1" : "-1", 2);
	w->pos += 2;
	for (uint64_t i = 0; i < n; i++) {
		if ((rc = out_room(w, err)) != 0)
			return rc;
		w->buf[w->pos++] = ' ';
		out_u64(w, row[i] + 1);
		memcpy(w->buf + w->pos, ":1", 2);
		w->pos += 2;
	}
	w->buf[w->pos++] = '\n';
	return 0;
}

static int gen_all(struct gen *g, struct gen_out *w, struct parsa_err *err)
{
	const struct part_gen_opts *o = g->o;

	for (uint64_t e = 0; e < o->examples; e++) {
		uint64_t n = 0;
		int y = 0, rc = gen_example(g, &n, &y, err);

		if (!rc)
			rc = write_example(w, g->row, n, y, err);
		if (rc)
			return rc;
		if (o->progress && ((e + 1) % PROGRESS_EVERY == 0 ||
				    e + 1 == o->examples))
			o->progress(o->progress_arg, e + 1, o->examples);
	}
	return 0;
}

int part_gen_write(const struct part_gen_opts *o, const char *path,
		   struct parsa_err *err)
{
	struct gen g;
	struct gen_out w;
	int rc = part_gen_validate(o, err);

	if (rc)
		return rc;
	if (!path || !*path)
		return parsa_fail(err, PARSA_EINVAL, "gen: no output path");
	rc = gen_init(&g, o, err);
	if (rc)
		return rc;
	rc = out_open(&w, path, err);
	if (!rc)
		rc = gen_all(&g, &w, err);
	rc = out_close(&w, rc, err);
	gen_release(&g);
	return rc;
}
