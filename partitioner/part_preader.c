/*
 * part_preader: the parallel LIBSVM reader (see part_preader.h).
 *
 * A read is a loop over batches:
 *   1. the reading thread hands over a batch: whole lines in one buffer,
 *      or a range of the mapped file (its own thread reads the next one,
 *      or the next range's pages, meanwhile);
 *   2. the batch is cut into chunks at line boundaries and `threads` tasks
 *      parse them, each taking the next chunk with its own id map and row
 *      scratch;
 *   3. one task at a time merges the parsed chunks in order: global
 *      compact ids for each chunk's distinct features (in its order of
 *      first appearance, so the global order is the file's), row offsets
 *      (growing the CSR), line numbers, the first error;
 *   4. the tasks write each merged chunk's rows into the CSR, translated
 *      and sorted.
 * Steps 2-4 overlap (batch_task): the serial merge of a chunk runs while
 * the other tasks parse the next ones or write the merged ones.
 * The reading thread mirrors part_io's buffer: it asks for exactly the
 * bytes part_lines_next would ask for (the first read 1 MiB, then its
 * buffer size minus the partial line, the buffer doubling when the partial
 * line takes more than half of it), so a failing read fails after the same
 * lines.
 */
#include "part_preader.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_prefetch.h"
#include "base_cmp.h"
#include "base_huge.h"
#include "part_hash.h"
#include "part_io.h"
#include "part_pool.h"

#define PR_BLOCK PART_LINES_CHUNK  /* part_io's first read */
#define PR_CHUNK (2u << 20)        /* bytes per parse chunk by default */
#define PR_CHUNK_SMALL (1u << 20)  /* below: small files (pr_auto_chunk) */
#define PR_CHUNK_MIN (64u << 10)   /* ... and at least, for small files */
#define PR_CHUNKS_PER_THREAD 4     /* chunks per thread in a batch */
#define PR_MIN_BATCH (16u << 10)   /* smallest batch (tests' tiny chunks) */
#define PR_RANK_MAX 32             /* rows up to this length: rank sort */
#define PR_DIRECT_MAX (1u << 24)   /* keys below: a worker's direct array */

/*
 * Grow the array *a of *cap elements of elt bytes to hold need (doubling,
 * from first): 0 or PARSA_ENOMEM (then *a is unchanged).
 */
static int grow_arr(void **a, size_t *cap, size_t need, size_t elt,
		    size_t first)
{
	size_t ncap = *cap ? *cap : first;
	void *na;

	while (ncap < need)
		ncap *= 2;
	if (ncap == *cap)
		return 0;
	if (ncap > SIZE_MAX / elt || !(na = realloc(*a, ncap * elt)))
		return PARSA_ENOMEM;
	*a = na;
	*cap = ncap;
	return 0;
}

/* ---- batches: the reading thread ---------------------------------------- */

struct pr_batch {
	char *buf;               /* whole lines in buf[0..len), buf[len] free */
	size_t len, cap;
	int last;                /* nothing follows */
	int io_rc;               /* reading failed after these lines */
	struct parsa_err io_err;
	uint64_t bytes;          /* part_lines_bytes after its reads */
	int mapped;              /* buf lies in pr_src.map (not freed) */
};

struct pr_src {
	struct part_lines *l;
	size_t sim_cap;          /* part_io's buffer size, simulated */
	size_t target;           /* bytes of whole lines per batch */
	char *carry;             /* the partial line after the last batch */
	size_t carry_len;
	int done;                /* the end or a failure was reached */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pr_batch *ready;  /* handed over, not taken yet */
	struct pr_batch *spare;  /* done with: its buffer is reused */
	int stop;                /* the consumer quits */
	int threaded;
	pthread_t th;
	/* a plain file mapped (map_open) instead of read: batches are
	 * ranges of the map, the last line without a '\n' a batch of its
	 * own (tail, with the '\n') */
	char *map;
	size_t map_size;         /* the file's bytes (the mapping's length) */
	size_t map_len;          /* up to and with its last '\n' */
	size_t map_at;           /* the next batch's first byte */
	size_t map_dropped;      /* pages before this offset released */
	size_t map_pg;           /* the page size */
	char *tail;
	size_t tail_len;
};

static void batch_free(struct pr_batch *b)
{
	if (b) {
		if (!b->mapped)
			free(b->buf);
		free(b);
	}
}


/* The consumer is done with b: keep one for its buffer (a mapped
 * batch's whole pages leave the resident set instead). */
static void give_back(struct pr_src *s, struct pr_batch *b)
{
	if (b && b->mapped) {
		size_t pg = s->map_pg;
		size_t end = (size_t)(b->buf + b->len - s->map) / pg * pg;

		if (end > s->map_dropped) {
			(void)madvise(s->map + s->map_dropped,
				      end - s->map_dropped, MADV_DONTNEED);
			s->map_dropped = end;
		}
		free(b);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (!s->spare) {
		s->spare = b;
		b = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	batch_free(b);
}

/* The next batch of a mapped file: about s->target bytes of whole lines
 * (a longer line whole), its pages read in here, on the reading thread;
 * then the tail, if any (NULL: out of memory). */
static struct pr_batch *produce_mapped(struct pr_src *s)
{
	struct pr_batch *b = calloc(1, sizeof(*b));
	size_t at = s->map_at, end;

	if (!b)
		return NULL;
	if (at < s->map_len) {
		size_t pg = s->map_pg, a0 = at / pg * pg;

		end = s->map_len - at > s->target ? at + s->target : s->map_len;
		if (end < s->map_len) {
			const char *q = memrchr(s->map + at, '\n', end - at);

			if (!q) /* (map_len ends with one) */
				q = memchr(s->map + end, '\n', s->map_len - end);
			end = (size_t)(q - s->map) + 1;
		}
#ifdef MADV_POPULATE_READ
		if (madvise(s->map + a0, end - a0, MADV_POPULATE_READ) != 0)
#endif
			for (size_t i = a0; i < end; i += pg)
				(void)*(volatile const char *)(s->map + i);
		b->buf = s->map + at;
		b->len = end - at;
		b->mapped = 1;
		b->last = end == s->map_len && !s->tail_len;
		s->map_at = end;
		b->bytes = end;
		return b;
	}
	b->buf = s->tail; /* tail_len + 1 bytes: the '\n' added */
	b->len = s->tail_len;
	b->cap = s->tail_len + 1;
	b->last = 1;
	b->bytes = s->map_size;
	s->tail = NULL;
	s->tail_len = 0;
	return b;
}

/* Read the next batch (NULL: out of memory). */
static struct pr_batch *produce(struct pr_src *s)
{
	struct pr_batch *b;
	size_t len, nl_end = 0, cap;
	int eof = 0;

	if (s->map)
		return produce_mapped(s);

	pthread_mutex_lock(&s->mu);
	b = s->spare;
	s->spare = NULL;
	pthread_mutex_unlock(&s->mu);
	if (b) {
		char *buf = b->buf;

		cap = b->cap;
		memset(b, 0, sizeof(*b));
		b->buf = buf;
	} else {
		b = calloc(1, sizeof(*b));
		cap = 0;
	}
	if (!b)
		return NULL;
	if (grow_arr((void **)&b->buf, &cap, s->carry_len + s->target + 1, 1,
		     4096)) {
		batch_free(b);
		return NULL;
	}
	if (s->carry_len)
		memcpy(b->buf, s->carry, s->carry_len);
	len = s->carry_len;
	while (!s->done && nl_end < s->target) {
		size_t p = len - nl_end, req;
		long got;
		char *q;

		if (p + 1 > s->sim_cap / 2)
			s->sim_cap *= 2;
		req = s->sim_cap - 1 - p;
		if (grow_arr((void **)&b->buf, &cap, len + req + 1, 1, 4096)) {
			b->io_rc = parsa_fail(&b->io_err, PARSA_ENOMEM,
					      "%s: out of memory for %zu bytes",
					      part_lines_name(s->l), len + req);
			s->done = 1;
			break;
		}
		got = part_lines_read_raw(s->l, b->buf + len, req, &b->io_err);
		if (got < 0) {
			b->io_rc = b->io_err.code ? b->io_err.code : PARSA_EIO;
			s->done = 1;
			break;
		}
		if (got == 0) {
			s->done = eof = 1;
			break;
		}
		q = memrchr(b->buf + len, '\n', (size_t)got);
		len += (size_t)got;
		if (q)
			nl_end = (size_t)(q - b->buf) + 1;
	}
	b->bytes = part_lines_bytes(s->l);
	b->cap = cap;
	b->buf[len] = '\n';  /* a last line without one ends here too */
	if (eof) {
		b->len = len;
		b->last = 1;
		s->carry_len = 0;
		return b;
	}
	b->len = nl_end;
	b->last = s->done;
	s->carry_len = 0;
	if (!s->done && len > nl_end) {
		char *c = realloc(s->carry, len - nl_end);

		if (!c) {
			b->io_rc = parsa_fail(&b->io_err, PARSA_ENOMEM,
					      "%s: out of memory for a line",
					      part_lines_name(s->l));
			b->last = s->done = 1;
			return b;
		}
		s->carry = c;
		s->carry_len = len - nl_end;
		memcpy(c, b->buf + nl_end, s->carry_len);
	}
	return b;
}

static void *reader_main(void *arg)
{
	struct pr_src *s = arg;

	for (;;) {
		struct pr_batch *b;
		int last;

		pthread_mutex_lock(&s->mu);
		while (s->ready && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		pthread_mutex_unlock(&s->mu);
		b = produce(s);
		last = !b || b->last;
		pthread_mutex_lock(&s->mu);
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			batch_free(b);
			return NULL;
		}
		/* NULL (out of memory) is handed over as a sentinel */
		s->ready = b ? b : (struct pr_batch *)s;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		if (last)
			return NULL;
	}
}

/* The next batch, or NULL when out of memory. */
static struct pr_batch *next_batch(struct pr_src *s)
{
	struct pr_batch *b;

	if (!s->threaded)
		return produce(s);
	pthread_mutex_lock(&s->mu);
	while (!s->ready)
		pthread_cond_wait(&s->cv, &s->mu);
	b = s->ready;
	s->ready = NULL;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return b == (struct pr_batch *)s ? NULL : b;
}

static void src_stop(struct pr_src *s)
{
	if (s->threaded) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->th, NULL);
		s->threaded = 0;
		if (s->ready != (struct pr_batch *)s)
			batch_free(s->ready);
		s->ready = NULL;
	}
	batch_free(s->spare);
	s->spare = NULL;
	free(s->carry);
	s->carry = NULL;
	free(s->tail);
	s->tail = NULL;
	if (s->map)
		munmap(s->map, s->map_size);
	s->map = NULL;
}

/* ---- chunks: parsing ------------------------------------------------------ */

enum { PR_OK = 0, PR_BAD_NUL, PR_BAD_LINE, PR_BAD_OTHER };

struct pr_chunk {
	char *s;
	size_t len;
	uint64_t *keys;          /* distinct features, first appearance */
	uint32_t nkeys;
	size_t keys_cap;
	uint32_t *xl;            /* keys' global compact ids (merge) */
	size_t xl_cap;
	uint32_t *col;           /* rows' chunk-local ids, repeats dropped */
	size_t ncol, col_cap;
	uint32_t *rlen;          /* row lengths */
	uint32_t nrows;
	size_t rlen_cap;
	uint64_t col_at;         /* the chunk's first entry in the CSR */
	int parsed;              /* step 2 done (under pr_ctx.mu) */
	uint64_t lines, entries, dups, empty;
	int bad;                 /* PR_BAD_*: parsing stopped at bad_line */
	uint64_t bad_line;       /* 1-based, in the chunk */
	const char *bad_text;    /* the line (NUL-terminated) */
	unsigned long bad_col;   /* PR_BAD_NUL: the NUL's column */
	struct parsa_err err;    /* PR_BAD_OTHER */
};

/*
 * A worker's chunk-local id map: keys below PR_DIRECT_MAX in a direct array
 * grown to cover them, others in an open-addressing table whose slots
 * belong to the current chunk when their gen is the worker's.  keys[lid]
 * is the key of local id lid.  Each slot also holds the stamp of the last
 * row that had the key (rows drop repeated indices with it), on the same
 * cache line as the id.  Stamps grow through the chunks, so a direct slot
 * belongs to the current chunk when its stamp is at least gen0, the
 * chunk's first row's (nothing to reset after a chunk: those random writes
 * took a sixth of a 2-thread read at 100M); they start again from 0 (the
 * array cleared) at a chunk's start past 2^31 (restart), and a chunk has
 * fewer rows than that (at most one per byte of its first pr_read.chunk
 * bytes, at most 2^30, then one).
 */
struct pr_dslot {
	uint32_t lid, stamp;
};

struct pr_hslot {
	uint64_t key;
	uint32_t gen, lid, stamp;
};

struct pr_worker {
	struct pr_dslot *dir;    /* dcap entries */
	size_t dcap;
	struct pr_hslot *tab;    /* hcap entries (0 or a power of two) */
	size_t hcap, hn;         /* hn: the chunk's keys in tab */
	uint32_t cgen;           /* the current chunk's generation (tab) */
	uint32_t gen;            /* the current row's stamp */
	uint32_t gen0;           /* the current chunk's first row's */
	uint32_t restart;        /* stamps start again past this */
	uint64_t *keys;          /* keys[lid] */
	uint32_t nkeys;
	size_t keys_cap;
	uint64_t *ids[2];        /* two rows' indices (parse_chunk) */
	size_t ids_cap[2];
	int cur;                 /* the one being parsed */
	char pad[64];            /* workers' hot fields on their own lines */
};

struct pr_read;

/*
 * One batch's pipeline (batch_task).  Under mu: the next chunk to parse,
 * the chunks merged (in order, one merge at a time), the next merged chunk
 * to write, the first failure.  The merge grows the CSR's col under the
 * write side of grow; the writes into it hold its read side.
 */
struct pr_ctx {
	const char *name;
	struct pr_chunk *ch;
	uint32_t nch;
	struct pr_worker *w;     /* one per task */
	struct pr_read *r;
	struct parsa_err *err;   /* the merge's failure */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_rwlock_t grow;
	uint32_t pnext, mdone, wnext;
	int merging, rc;
};

/* Character classes of the fast line parser, one table load a byte:
 * whitespace (not '\n'), decimal digit, a line's end (its NUL, for lines
 * cut by the slow path, or its '\n'). */
enum { PR_WS = 1, PR_DIG = 2, PR_END = 4 };

static const unsigned char pr_class[256] = {
	['\0'] = PR_END, ['\n'] = PR_END,
	[' '] = PR_WS, ['\t'] = PR_WS, ['\r'] = PR_WS, ['\v'] = PR_WS,
	['\f'] = PR_WS,
	['0'] = PR_DIG, ['1'] = PR_DIG, ['2'] = PR_DIG, ['3'] = PR_DIG,
	['4'] = PR_DIG, ['5'] = PR_DIG, ['6'] = PR_DIG, ['7'] = PR_DIG,
	['8'] = PR_DIG, ['9'] = PR_DIG,
};

static inline int is_ws(char c)
{
	return pr_class[(unsigned char)c] & PR_WS;
}

static inline int is_dig(char c)
{
	return pr_class[(unsigned char)c] & PR_DIG;
}

static inline int is_end(char c)
{
	return pr_class[(unsigned char)c] & PR_END;
}

/* A token's end: whitespace or the line's end. */
static inline int is_sep(char c)
{
	return pr_class[(unsigned char)c] & (PR_WS | PR_END);
}

/*
 * The common LIBSVM line: a label, then `idx:val` tokens with idx of at
 * most 19 digits and val a plain decimal; the indices in ids (at most cap).
 * The line ends at a NUL or a '\n' (then '\r' before it is whitespace, as
 * for the line reader).  Returns their count (*end: where it stopped, at
 * the line's end or a '#'), or -1 for anything else (a blank or comment
 * line (a qid, "inf", an error ...): then
 * the full parser decides.  Accepts only lines part_libsvm_row accepts,
 * with the same indices.  Reads no byte at or after lim (the line's NUL
 * + 1: the bytes after it belong to other lines, maybe other threads').
 */
/*
 * The leading decimal digits of the 8 bytes at p (at most 8): their count,
 * their value in *v (eight bytes at once: the digits' mask, then pairs,
 * quads and octets of digits combined by multiplications).
 */
static inline unsigned swar_digits(const char *p, uint64_t *v)
{
	const uint64_t ones = 0x0101010101010101ULL;
	uint64_t x, m, d;
	unsigned n;

	memcpy(&x, p, 8);
	m = ((x & 0xf0 * ones) ^ 0x30 * ones) |
	    (((x + 0x06 * ones) & 0xf0 * ones) ^ 0x30 * ones);
	n = m ? (unsigned)__builtin_ctzll(m) / 8 : 8;
	if (n == 0) {
		*v = 0;
		return 0;
	}
	d = (x - 0x30 * ones) << (8 * (8 - n));  /* little-endian */
	d = (d * 10 + (d >> 8)) & 0x00ff00ff00ff00ffULL;
	d = (d * 100 + (d >> 16)) & 0x0000ffff0000ffffULL;
	d = (d * 10000 + (d >> 32)) & 0xffffffffULL;
	*v = d;
	return n;
}

static long fast_line(const char *p, const char *lim, uint64_t *ids,
		      size_t cap, const char **end)
{
	static const uint64_t pow10[9] = { 1, 10, 100, 1000, 10000, 100000,
					   1000000, 10000000, 100000000 };
	long n = 0;

	while (is_ws(*p))
		p++;
	if (is_end(*p) || *p == '#')  /* blank or comment: not here */
		return -1;
	for (; !is_sep(*p); p++)
		if (*p == ':')
			return -1;
	while (is_ws(*p))
		p++;
	if (p[0] == 'q' && p[1] == 'i' && p[2] == 'd' && p[3] == ':')
		return -1;
	while (!is_end(*p) && *p != '#') {
		const char *s = p;
		uint64_t x = 0;
		int dig = 0;

		unsigned k0 = lim - p >= 8 ? swar_digits(p, &x) : 8;

		/* the most common token, "idx:d " followed by the next one's
		 * digit (idx of 1-7 digits, d one digit), in one step; the
		 * 8 bytes read are below lim, so p[k0 + 3] is too */
		while (k0 - 1 < 7 && p[k0] == ':' && is_dig(p[k0 + 1]) &&
		       p[k0 + 2] == ' ' && is_dig(p[k0 + 3])) {
			if ((size_t)n == cap)
				return -1;
			ids[n++] = x;
			p += k0 + 3;
			if (lim - p < 8) {
				k0 = 8;
				break;
			}
			k0 = swar_digits(p, &x);
		}
		s = p;

		p += k0 < 8 ? k0 : 0;
		if (k0 == 0)
			return -1;
		/* the common index (1-7 digits) is x; else 8 bytes at a time
		 * while the line has them */
		for (x = k0 < 8 ? x : 0; k0 == 8;) {
			uint64_t v;
			unsigned k;

			if (lim - p < 8) {
				for (; is_dig(*p); p++)
					x = x * 10 + (uint64_t)(*p - '0');
				break;
			}
			k = swar_digits(p, &v);
			x = x * pow10[k] + v;  /* > 19 digits: refused below */
			p += k;
			if (k < 8)
				break;
		}
		if (*p != ':' || p == s || p - s > 19)
			return -1;
		p++;
		if (is_dig(p[0]) && is_sep(p[1])) {  /* one digit: "1", "3" */
			if ((size_t)n == cap)
				return -1;
			ids[n++] = x;
			for (p++; is_ws(*p); p++)
				;
			continue;
		}
		if (*p == '+' || *p == '-')
			p++;
		for (s = p; is_dig(*p); p++)
			dig = 1;
		if (p - s > 200)  /* maybe not finite: the full parser decides */
			return -1;
		if (*p == '.')
			for (p++; is_dig(*p); p++)
				dig = 1;
		if (!dig)
			return -1;
		if (*p == 'e' || *p == 'E') {
			p++;
			if (*p == '+' || *p == '-')
				p++;
			if (!is_dig(*p))
				return -1;
			for (s = p; is_dig(*p); p++)
				;
			if (p - s > 2)  /* |e| >= 100: maybe inf, as above */
				return -1;
		}
		if (!is_sep(*p))
			return -1;
		if ((size_t)n == cap)
			return -1;
		ids[n++] = x;
		while (is_ws(*p))
			p++;
	}
	*end = p;
	return n;
}


static int chunk_oom(struct pr_chunk *c)
{
	c->bad = PR_BAD_OTHER;
	return parsa_fail(&c->err, PARSA_ENOMEM,
			  "out of memory reading a chunk of %zu bytes", c->len);
}

static inline uint64_t pr_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* Start a chunk: every slot becomes stale. */
static void wmap_clear(struct pr_worker *w)
{
	w->nkeys = 0;
	w->hn = 0;
	if (++w->cgen == 0) {  /* wrapped: really clear */
		for (size_t i = 0; i < w->hcap; i++)
			w->tab[i].gen = 0;
		w->cgen = 1;
	}
	if (w->gen >= w->restart) {  /* the stamps start again */
		if (w->dcap)
			memset(w->dir, 0, w->dcap * sizeof(*w->dir));
		w->gen = 0;
	}
	w->gen0 = w->gen + 1;
}

/* The next row: a new stamp (no wrap within a chunk: see pr_dslot). */
static void wmap_next_row(struct pr_worker *w)
{
	w->gen++;
}

static int wmap_new_id(struct pr_worker *w, uint64_t key, uint32_t *lid)
{
	if (w->nkeys == w->keys_cap) {
		size_t nc = w->keys_cap ? w->keys_cap * 2 : 4096;
		uint64_t *k = realloc(w->keys, nc * sizeof(uint64_t));

		if (!k)
			return PARSA_ENOMEM;
		w->keys = k;
		w->keys_cap = nc;
	}
	w->keys[w->nkeys] = key;
	*lid = w->nkeys++;
	return 0;
}

static int wmap_rehash(struct pr_worker *w)
{
	size_t nc = w->hcap ? w->hcap * 2 : 4096, mask = nc - 1;
	struct pr_hslot *t = calloc(nc, sizeof(*t));

	if (!t)
		return PARSA_ENOMEM;
	for (size_t i = 0; i < w->hcap; i++) {
		size_t h;

		if (w->tab[i].gen != w->cgen)
			continue;
		for (h = pr_mix(w->tab[i].key) & mask; t[h].gen == w->cgen;
		     h = (h + 1) & mask)
			;
		t[h] = w->tab[i];
	}
	free(w->tab);
	w->tab = t;
	w->hcap = nc;
	return 0;
}

static int wmap_grow_dir(struct pr_worker *w, uint64_t key)
{
	size_t nc = w->dcap ? w->dcap : 1u << 16;
	struct pr_dslot *nd;

	while (nc <= key)
		nc *= 2;
	nd = base_huge_grow(w->dir, w->dcap * sizeof(*nd), nc * sizeof(*nd));
	if (!nd)
		return PARSA_ENOMEM;
	w->dir = nd;
	w->dcap = nc;
	return 0;
}

/*
 * The chunk-local id of key (new keys get the next id) in *lid and its
 * row stamp in *st: 0 or ENOMEM.
 */
static inline int wmap_get(struct pr_worker *w, uint64_t key, uint32_t *lid,
			   uint32_t **st)
{
	size_t h, mask;

	if (key >= w->dcap && key < PR_DIRECT_MAX && wmap_grow_dir(w, key))
		return PARSA_ENOMEM;
	if (key < w->dcap) {
		struct pr_dslot *d = &w->dir[key];

		if (d->stamp < w->gen0) { /* not the chunk's yet */
			if (wmap_new_id(w, key, lid))
				return PARSA_ENOMEM;
			d->lid = *lid;
		}
		*lid = d->lid;
		*st = &d->stamp;
		return 0;
	}
	if ((w->hn + 1) * 2 > w->hcap && wmap_rehash(w))
		return PARSA_ENOMEM;
	mask = w->hcap - 1;
	for (h = pr_mix(key) & mask; w->tab[h].gen == w->cgen;
	     h = (h + 1) & mask) {
		if (w->tab[h].key == key) {
			*lid = w->tab[h].lid;
			*st = &w->tab[h].stamp;
			return 0;
		}
	}
	if (wmap_new_id(w, key, lid))
		return PARSA_ENOMEM;
	w->tab[h].key = key;
	w->tab[h].gen = w->cgen;
	w->tab[h].lid = *lid;
	w->tab[h].stamp = 0;
	w->hn++;
	*st = &w->tab[h].stamp;
	return 0;
}

/*
 * The slots of a row's indices, for map_row: the direct array's, or for
 * keys beyond it the table's first probe (base_prefetch: GCC kept no bare
 * prefetch of this loop).
 */
static inline void prefetch_row(const struct pr_worker *w,
				const uint64_t *ids, long k)
{
	const struct pr_dslot *d = w->dir;
	uint64_t cap = w->dcap, mask = w->hcap ? w->hcap - 1 : 0;

	for (long i = 0; i < k; i++) {
		if (ids[i] < cap)
			base_prefetch(&d[ids[i]]);
		else if (mask) /* keys beyond the direct array: their slot */
			base_prefetch(&w->tab[pr_mix(ids[i]) & mask]);
	}
}

/*
 * The indices of one data line (NUL-terminated, n bytes) into
 * w->ids[w->cur]: their count, or -1 with the chunk's error set.
 */
static long parse_ids(const struct pr_ctx *cx, struct pr_worker *w,
		      struct pr_chunk *c, const char *line, size_t n)
{
	const char *end;
	uint64_t *ids;
	long k;

	if (n / 2 + 2 > w->ids_cap[w->cur]) {
		size_t nc = n / 2 + 2;
		uint64_t *q = realloc(w->ids[w->cur], nc * sizeof(uint64_t));

		if (!q) {
			chunk_oom(c);
			return -1;
		}
		w->ids[w->cur] = q;
		w->ids_cap[w->cur] = nc;
	}
	ids = w->ids[w->cur];
	k = fast_line(line, line + n + 1, ids, w->ids_cap[w->cur], &end);
	if (k < 0 || end != line + n) {  /* a NUL inside, a comment, ... */
		const char *z = memchr(line, '\0', n);

		if (z) {
			c->bad = PR_BAD_NUL;
			c->bad_col = (unsigned long)(z - line) + 1;
			return -1;
		}
	}
	if (k < 0) {
		struct parsa_err e;
		size_t kn = 0;
		int rc;

		parsa_err_clear(&e);
		rc = part_libsvm_row(cx->name, 0, line, &w->ids[w->cur], &kn,
				     &w->ids_cap[w->cur], &e);
		if (rc == PARSA_EPARSE) {
			c->bad = PR_BAD_LINE;
			c->bad_text = line;
			return -1;
		}
		if (rc) {
			c->bad = PR_BAD_OTHER;
			c->err = e;
			return -1;
		}
		ids = w->ids[w->cur];
		k = (long)kn;
	}
	prefetch_row(w, ids, k);
	return k;
}

/* The row of k indices in w->ids[b]: local ids, repeats dropped. */
static int map_row(struct pr_worker *w, struct pr_chunk *c, int b, long k)
{
	const uint64_t *ids = w->ids[b];
	uint32_t m = 0;

	if (grow_arr((void **)&c->col, &c->col_cap, c->ncol + (size_t)k,
		     sizeof(uint32_t), 1024) ||
	    grow_arr((void **)&c->rlen, &c->rlen_cap, (size_t)c->nrows + 1,
		     sizeof(uint32_t), 1024))
		return chunk_oom(c);
	wmap_next_row(w);
	for (long i = 0; i < k; i++) {
		uint32_t lid, *st;

		if (wmap_get(w, ids[i], &lid, &st))
			return chunk_oom(c);
		if (*st == w->gen)
			continue;
		*st = w->gen;
		c->col[c->ncol + m++] = lid;
	}
	c->ncol += m;
	c->rlen[c->nrows++] = m;
	c->entries += (uint64_t)k;
	c->dups += (uint64_t)k - m;
	if (k == 0)
		c->empty++;
	return 0;
}

/*
 * The lines of chunk c.  A row is mapped after the next data line has been
 * parsed (its slots prefetched meanwhile: the lookups find them in cache).
 */
static void parse_chunk(const struct pr_ctx *cx, struct pr_worker *w,
			struct pr_chunk *c)
{
	char *p = c->s, *e = c->s + c->len;
	long pending = -1;  /* indices of the row in w->ids[!w->cur] */

	wmap_clear(w);
	while (p < e) {
		const char *end;
		char *next;
		long k;

		c->lines++;
		/* the common line, parsed where it lies up to its '\n' (the
		 * chunk's last line at the end of the input: up to the '\n'
		 * the batch has after it) */
		k = fast_line(p, e, w->ids[w->cur], w->ids_cap[w->cur], &end);
		if (k >= 0 && *end == '\n') {
			prefetch_row(w, w->ids[w->cur], k);
			next = (char *)end + 1;
		} else {  /* anything else: cut the line first */
			char *nl = memchr(p, '\n', (size_t)(e - p));
			size_t n = (size_t)((nl ? nl : e) - p);

			next = nl ? nl + 1 : e;
			if (n > 0 && p[n - 1] == '\r')
				n--;
			p[n] = '\0';
			if (part_line_is_skippable(p, n)) {
				char *z = memchr(p, '\0', n);

				if (z) {
					c->bad = PR_BAD_NUL;
					c->bad_col = (unsigned long)(z - p) + 1;
					break;
				}
				p = next;
				continue;
			}
			k = parse_ids(cx, w, c, p, n);
			if (k < 0)
				break;
		}
		if (pending >= 0 && map_row(w, c, !w->cur, pending))
			break;
		pending = k;
		w->cur = !w->cur;
		p = next;
	}
	/* the last row (before a bad line: the rows before it are kept) */
	if (pending >= 0 && c->bad != PR_BAD_OTHER)
		map_row(w, c, !w->cur, pending);
	if (c->bad)
		c->bad_line = c->lines;
	if (w->nkeys) {  /* the chunk and the worker swap keys arrays */
		uint64_t *k = c->keys;
		size_t kc = c->keys_cap;

		c->keys = w->keys;
		c->keys_cap = w->keys_cap;
		c->nkeys = w->nkeys;
		w->keys = k;
		w->keys_cap = kc;
	}
}

/* Four ids at once (GCC/Clang vector extensions: SSE2 on x86-64, NEON on
 * arm64, plain code elsewhere), as signed numbers with the top bit
 * flipped, which order as the ids do (SSE2 compares signed numbers only). */
typedef int32_t pr_v4 __attribute__((vector_size(16)));
#define PR_FLIP INT32_MIN

/*
 * rank_sort for rows of G groups of four (G a constant in each caller, so
 * the counts stay in registers): every id of the row, broadcast, is
 * compared with each group; r[i] counts, lane by lane, the ids below.
 */
static inline __attribute__((always_inline)) void
rank_groups(const int32_t *tmp, const uint32_t *src, uint32_t *dst,
	    uint32_t n, const uint32_t G)
{
	pr_v4 x[PR_RANK_MAX / 4], r[PR_RANK_MAX / 4];

#pragma GCC unroll 8
	for (uint32_t i = 0; i < G; i++) {
		memcpy(&x[i], tmp + 4 * i, sizeof(x[i]));
		r[i] = (pr_v4){ 0, 0, 0, 0 };
	}
	for (uint32_t j = 0; j < n; j++) {
		pr_v4 b = { tmp[j], tmp[j], tmp[j], tmp[j] };

#pragma GCC unroll 8
		for (uint32_t i = 0; i < G; i++)
			r[i] -= b < x[i];  /* -1 where tmp[j] is below */
	}
	for (uint32_t j = 0; j < n; j++)
		dst[r[j / 4][j % 4]] = src[j];
}

/*
 * Sort the n distinct ids of src into dst (n <= PR_RANK_MAX): each goes to
 * its rank, the number of ids below it, counted for four ids at once over
 * the row rounded up to 4 (padded with ids above any); no branches to
 * mispredict, no sums across lanes.
 */
static void rank_sort(const uint32_t *src, uint32_t *dst, uint32_t n)
{
	int32_t tmp[PR_RANK_MAX] __attribute__((aligned(16)));
	uint32_t m = (n + 3) & ~3u, j;

	for (j = 0; j < n; j++)
		tmp[j] = (int32_t)(src[j] ^ (uint32_t)PR_FLIP);
	for (; j < m; j++)
		tmp[j] = INT32_MAX;
	switch (m / 4) {
	case 0:
		break;
	case 1:
		rank_groups(tmp, src, dst, n, 1);
		break;
	case 2:
		rank_groups(tmp, src, dst, n, 2);
		break;
	case 3:
		rank_groups(tmp, src, dst, n, 3);
		break;
	case 4:
		rank_groups(tmp, src, dst, n, 4);
		break;
	case 5:
		rank_groups(tmp, src, dst, n, 5);
		break;
	case 6:
		rank_groups(tmp, src, dst, n, 6);
		break;
	case 7:
		rank_groups(tmp, src, dst, n, 7);
		break;
	default:
		rank_groups(tmp, src, dst, n, PR_RANK_MAX / 4);
		break;
	}
}

/* Merge the sorted a[0..na) and b[0..nb) into out (selects, no jumps). */
static void merge_runs(const uint32_t *a, size_t na, const uint32_t *b,
		       size_t nb, uint32_t *out)
{
	size_t i = 0, j = 0, k = 0;

	while (i < na && j < nb) {
		uint32_t x = a[i], y = b[j];
		int t = y < x;

		out[k++] = t ? y : x;
		j += (size_t)t;
		i += (size_t)!t;
	}
	while (i < na)
		out[k++] = a[i++];
	while (j < nb)
		out[k++] = b[j++];
}

/*
 * Sort the n distinct ids a[0..n) in place, buf having room for n: runs
 * of PR_RANK_MAX rank-sorted, then merged bottom-up.
 */
static void long_sort(uint32_t *a, uint32_t *buf, size_t n)
{
	uint32_t *from = a, *to = buf, *t;

	for (size_t i = 0; i < n; i += PR_RANK_MAX) {
		uint32_t m = n - i < PR_RANK_MAX ? (uint32_t)(n - i)
						 : PR_RANK_MAX;

		memcpy(buf, a + i, m * sizeof(uint32_t));
		rank_sort(buf, a + i, m);
	}
	for (size_t w = PR_RANK_MAX; w < n; w *= 2) {
		for (size_t i = 0; i < n; i += 2 * w) {
			size_t na = n - i < w ? n - i : w;
			size_t nb = n - i - na < w ? n - i - na : w;

			merge_runs(from + i, na, from + i + na, nb, to + i);
		}
		t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, n * sizeof(uint32_t));
}

/*
 * Sort a[0..n) by their top 32 bits, below 2^bits (LSD radix, at most 11
 * bits a pass, tmp having room for n); the result in a.
 */
static void radix_hi(uint64_t *a, uint64_t *tmp, uint32_t n, unsigned bits)
{
	unsigned passes = (bits + 10) / 11;
	unsigned w = passes ? (bits + passes - 1) / passes : 0;
	uint32_t cnt[1u << 11];
	uint64_t *from = a, *to = tmp, *t, mask = ((uint64_t)1 << w) - 1;

	for (unsigned p = 0, sh = 32; p < passes; p++, sh += w) {
		uint32_t acc = 0;

		memset(cnt, 0, ((size_t)1 << w) * sizeof(cnt[0]));
		for (uint32_t i = 0; i < n; i++)
			cnt[(from[i] >> sh) & mask]++;
		for (uint32_t d = 0; d < (1u << w); d++) {
			uint32_t x = cnt[d];

			cnt[d] = acc;
			acc += x;
		}
		for (uint32_t i = 0; i < n; i++)
			to[cnt[(from[i] >> sh) & mask]++] = from[i];
		t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, (size_t)n * sizeof(uint64_t));
}

/*
 * Chunk c's rows into dst, global ids, each row sorted, through the
 * chunk's transpose (for long rows, where sorting each row costs more):
 * the entries are bucketed by key with the buckets in the order of the
 * keys' global ids, then each bucket's rows receive its id in turn, so
 * every row is filled in increasing order.  Linear in the entries, plus a
 * radix sort of the chunk's distinct keys.  0, or PARSA_ENOMEM with dst
 * untouched (the caller then sorts row by row).
 */
static int write_transposed(const struct pr_chunk *c, uint32_t *dst)
{
	uint32_t nk = c->nkeys, nr = c->nrows, top = 0, e, q;
	size_t nc = c->ncol, i;
	uint64_t *ord = malloc(2 * (size_t)nk * sizeof(uint64_t));
	uint32_t *end = calloc(nk ? nk : 1, sizeof(uint32_t));
	uint32_t *ent = malloc((nc ? nc : 1) * sizeof(uint32_t));
	uint32_t *pos = malloc((nr ? nr : 1) * sizeof(uint32_t));
	unsigned bits = 0;

	if (!ord || !end || !ent || !pos || nc > UINT32_MAX) {
		free(ord);
		free(end);
		free(ent);
		free(pos);
		return PARSA_ENOMEM;
	}
	for (q = 0; q < nk; q++) {  /* the keys in global id order */
		ord[q] = (uint64_t)c->xl[q] << 32 | q;
		top |= c->xl[q];
	}
	while (bits < 32 && top >> bits)
		bits++;
	radix_hi(ord, ord + nk, nk, bits);
	for (i = 0; i < nc; i++)  /* bucket sizes, by key */
		end[c->col[i]]++;
	for (e = 0, q = 0; q < nk; q++) {  /* bucket starts, in that order */
		uint32_t *x = &end[(uint32_t)ord[q]], n = *x;

		*x = e;
		e += n;
	}
	for (i = 0, q = 0; q < nr; q++) {  /* each entry's row into its bucket */
		pos[q] = (uint32_t)i;
		for (uint32_t j = c->rlen[q]; j; j--, i++)
			ent[end[c->col[i]]++] = q;  /* end[k]: its bucket's end */
	}
	for (e = 0, q = 0; q < nk; q++) {
		uint32_t id = (uint32_t)(ord[q] >> 32), stop = end[(uint32_t)ord[q]];

		for (; e < stop; e++)
			dst[pos[ent[e]]++] = id;
	}
	free(ord);
	free(end);
	free(ent);
	free(pos);
	return 0;
}

/* Step 4: chunk c's rows into the CSR's col (from dst), global ids,
 * sorted. */
static void write_chunk(const struct pr_chunk *c, uint32_t *dst)
{
	const uint32_t *src = c->col;
	uint32_t longest = 0, *buf = NULL;

	if (c->ncol == 0)
		return; /* (dst, src may be NULL: no offset taken from them) */
	/* rows longer than a rank sort's on average: the transpose */
	if (c->ncol > (size_t)PR_RANK_MAX * c->nrows &&
	    write_transposed(c, dst) == 0)
		return;
	for (uint32_t r = 0; r < c->nrows; r++)
		if (c->rlen[r] > longest)
			longest = c->rlen[r];
	if (longest > PR_RANK_MAX)  /* without it: quicksort, slower */
		buf = malloc((size_t)longest * sizeof(uint32_t));
	for (uint32_t r = 0; r < c->nrows; r++) {
		uint32_t n = c->rlen[r], tmp[PR_RANK_MAX];

		if (n <= PR_RANK_MAX) {
			for (uint32_t j = 0; j < n; j++)
				tmp[j] = c->xl[src[j]];
			rank_sort(tmp, dst, n);
		} else {
			for (uint32_t j = 0; j < n; j++)
				dst[j] = c->xl[src[j]];
			if (buf)
				long_sort(dst, buf, n);
			else
				base_sort_u32(dst, n);
		}
		dst += n;
		src += n;
	}
	free(buf);
}

/* ---- the read ------------------------------------------------------------- */

struct pr_read {
	const char *name;
	struct part_dataset ds;
	struct part_idmap fmap;
	uint64_t lines;
	uint32_t threads;
	size_t chunk;
	struct pr_worker *w;
	struct pr_chunk *ch;     /* chunks, reused from batch to batch */
	uint32_t nch_cap;
};

/* row_ptr and col for rows and nnz; col moves only under the write side
 * of grow (the other chunks' writes into it hold the read side). */
static int grow_graph(struct pr_read *r, uint64_t rows, uint64_t nnz,
		      pthread_rwlock_t *grow, struct parsa_err *err)
{
	struct parsa_graph *g = &r->ds.g;
	size_t rcap = (size_t)g->row_cap, ccap = (size_t)g->col_cap;
	int first = !g->row_ptr, bad;

	bad = rows > SIZE_MAX || nnz > SIZE_MAX ||
	      grow_arr((void **)&g->row_ptr, &rcap, (size_t)rows,
		       sizeof(uint64_t), 1024);
	if (!bad && nnz > ccap) {
		pthread_rwlock_wrlock(grow);
		bad = grow_arr((void **)&g->col, &ccap, (size_t)nnz,
			       sizeof(uint32_t), 4096);
		pthread_rwlock_unlock(grow);
	}
	if (bad)
		return parsa_fail(err, PARSA_ENOMEM,
				  "out of memory for %llu rows of %llu entries",
				  (unsigned long long)rows,
				  (unsigned long long)nnz);
	if (first)
		g->row_ptr[0] = 0;
	g->row_cap = rcap;
	g->col_cap = ccap;
	return 0;
}

/* Step 3 for chunk c: ids, rows, counters; its error if it has one. */
static int merge_chunk(struct pr_read *r, struct pr_chunk *c,
		       pthread_rwlock_t *grow, struct parsa_err *err)
{
	struct parsa_graph *g = &r->ds.g;
	uint64_t nnz = g->row_ptr ? g->row_ptr[g->n_rows] : 0;
	int rc;

	if (grow_arr((void **)&c->xl, &c->xl_cap, c->nkeys, sizeof(uint32_t),
		     1024))
		return parsa_fail(err, PARSA_ENOMEM, "out of memory merging");
	for (uint32_t k = 0; k < c->nkeys; k++) {
		/* the map's entry (dense or table), a few keys ahead */
		if (k + 16 < c->nkeys)
			part_idmap_prefetch(&r->fmap, c->keys[k + 16]);
		rc = part_idmap_get(&r->fmap, c->keys[k], &c->xl[k], NULL,
				    "features", err);
		if (rc)
			return rc;
	}
	if ((uint64_t)g->n_rows + c->nrows > UINT32_MAX - 1u)
		return parsa_fail(err, PARSA_ERANGE, "more than %u examples",
				  UINT32_MAX - 1u);
	rc = grow_graph(r, (uint64_t)g->n_rows + c->nrows + 1, nnz + c->ncol,
			grow, err);
	if (rc)
		return rc;
	c->col_at = nnz;
	for (uint32_t i = 0; i < c->nrows; i++) {
		nnz += c->rlen[i];
		g->row_ptr[++g->n_rows] = nnz;
	}
	r->ds.entries += c->entries;
	r->ds.duplicates += c->dups;
	r->ds.empty_rows += c->empty;
	if (c->bad == PR_BAD_NUL)
		return parsa_fail_at(err, PARSA_EPARSE, r->name,
				     (unsigned long)(r->lines + c->bad_line),
				     c->bad_col,
				     "NUL byte in the line (binary data?)");
	if (c->bad == PR_BAD_LINE) {
		uint64_t *ids = NULL;
		size_t n = 0, cap = 0;

		rc = part_libsvm_row(r->name,
				     (unsigned long)(r->lines + c->bad_line),
				     c->bad_text, &ids, &n, &cap, err);
		free(ids);
		return rc ? rc : parsa_fail(err, PARSA_EPARSE,
					    "%s: internal: a line parsed twice "
					    "differently", r->name);
	}
	if (c->bad) {
		if (err && !err->code)
			*err = c->err;
		return c->err.code ? c->err.code : PARSA_ENOMEM;
	}
	r->lines += c->lines;
	return 0;
}

static void chunks_free(struct pr_chunk *ch, uint32_t n)
{
	for (uint32_t i = 0; ch && i < n; i++) {
		free(ch[i].keys);
		free(ch[i].xl);
		free(ch[i].col);
		free(ch[i].rlen);
	}
	free(ch);
}

/*
 * Cut b into chunks of about r->chunk bytes of whole lines, in r->ch (kept
 * from batch to batch with their arrays); their number in *n.
 */
static int cut(struct pr_read *r, struct pr_batch *b, uint32_t *n)
{
	size_t at = 0;

	*n = 0;
	while (at < b->len) {
		size_t from = at + r->chunk - 1, end = b->len;
		struct pr_chunk *c;
		char *q;

		if (from < b->len &&
		    (q = memchr(b->buf + from, '\n', b->len - from)) != NULL)
			end = (size_t)(q - b->buf) + 1;
		if (*n == r->nch_cap) {
			uint32_t nc = r->nch_cap ? 2 * r->nch_cap : 16;
			struct pr_chunk *p = nc < UINT32_MAX / 2
				? realloc(r->ch, nc * sizeof(*p)) : NULL;

			if (!p)
				return PARSA_ENOMEM;
			memset(p + r->nch_cap, 0,
			       (nc - r->nch_cap) * sizeof(*p));
			r->ch = p;
			r->nch_cap = nc;
		}
		c = &r->ch[(*n)++];
		c->s = b->buf + at;
		c->len = end - at;
		c->nkeys = 0;
		c->ncol = 0;
		c->nrows = 0;
		c->col_at = c->lines = c->entries = c->dups = c->empty = 0;
		c->bad = PR_OK;
		c->parsed = 0;
		c->bad_line = 0;
		c->bad_text = NULL;
		c->bad_col = 0;
		parsa_err_clear(&c->err);
		at = end;
	}
	return 0;
}

/*
 * Steps 2-4 for one batch's chunks, as a pipeline: each task takes, in
 * this order, the merge of the next chunk once it is parsed (the merge is
 * serial, so it never waits for a parse or a write that could wait), the
 * parse of the next chunk, the write of the next merged chunk; it sleeps
 * when there is none, and stops when every write is taken or a merge
 * failed (the first failure in the file's order: merges go in order).
 */
static int batch_task(void *arg, uint32_t t, struct parsa_err *err)
{
	struct pr_ctx *cx = arg;

	(void)err;
	pthread_mutex_lock(&cx->mu);
	while (!cx->rc && cx->wnext < cx->nch) {
		uint32_t i;

		if (!cx->merging && cx->mdone < cx->nch &&
		    cx->ch[cx->mdone].parsed) {
			int rc;

			i = cx->mdone;
			cx->merging = 1;
			pthread_mutex_unlock(&cx->mu);
			rc = merge_chunk(cx->r, &cx->ch[i], &cx->grow, cx->err);
			pthread_mutex_lock(&cx->mu);
			cx->merging = 0;
			if (rc)
				cx->rc = rc;
			else
				cx->mdone++;
			pthread_cond_broadcast(&cx->cv);
		} else if (cx->pnext < cx->nch) {
			i = cx->pnext++;
			pthread_mutex_unlock(&cx->mu);
			parse_chunk(cx, &cx->w[t], &cx->ch[i]);
			pthread_mutex_lock(&cx->mu);
			cx->ch[i].parsed = 1;
			if (i == cx->mdone)
				pthread_cond_broadcast(&cx->cv);
		} else if (cx->wnext < cx->mdone) {
			struct pr_chunk *c = &cx->ch[cx->wnext++];

			pthread_mutex_unlock(&cx->mu);
			pthread_rwlock_rdlock(&cx->grow);
			if (c->ncol) /* (col is NULL before any nonzero) */
				write_chunk(c, cx->r->ds.g.col + c->col_at);
			pthread_rwlock_unlock(&cx->grow);
			pthread_mutex_lock(&cx->mu);
		} else {
			pthread_cond_wait(&cx->cv, &cx->mu);
		}
	}
	pthread_cond_broadcast(&cx->cv);
	pthread_mutex_unlock(&cx->mu);
	return 0;
}

/* Steps 2-4 for one batch. */
static int do_batch(struct pr_read *r, struct pr_batch *b,
		    struct parsa_err *err)
{
	struct pr_ctx cx;
	uint32_t n, tasks;
	int rc = 0;

	memset(&cx, 0, sizeof(cx));
	cx.name = r->name;
	if (cut(r, b, &n))
		return parsa_fail(err, PARSA_ENOMEM, "out of memory for chunks");
	cx.ch = r->ch;
	cx.nch = n;
	cx.w = r->w;
	cx.r = r;
	cx.err = err;
	tasks = r->threads < n ? r->threads : n;
	if (n) {
		if (pthread_mutex_init(&cx.mu, NULL))
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		if (pthread_cond_init(&cx.cv, NULL)) {
			pthread_mutex_destroy(&cx.mu);
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		}
		if (pthread_rwlock_init(&cx.grow, NULL)) {
			pthread_cond_destroy(&cx.cv);
			pthread_mutex_destroy(&cx.mu);
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		}
		rc = part_pool_run(tasks, tasks, batch_task, &cx, err);
		if (!rc)
			rc = cx.rc;
		pthread_rwlock_destroy(&cx.grow);
		pthread_cond_destroy(&cx.cv);
		pthread_mutex_destroy(&cx.mu);
	}
	if (!rc && b->io_rc) {
		if (err && !err->code)
			*err = b->io_err;
		rc = b->io_rc;
	}
	return rc;
}

static int read_all(struct pr_read *r, struct pr_src *s,
		    const struct part_read_opts *o, struct parsa_err *err)
{
	for (;;) {
		struct pr_batch *b = next_batch(s);
		int rc, last;

		if (!b)
			return parsa_fail(err, PARSA_ENOMEM,
					  "%s: out of memory reading",
					  r->name);
		rc = do_batch(r, b, err);
		last = b->last;
		if (!rc && o->progress)
			o->progress(o->progress_arg, b->bytes,
				    part_lines_size(s->l));
		give_back(s, b);
		if (rc || last)
			return rc;
	}
}

static void pr_release(struct pr_read *r)
{
	part_dataset_release(&r->ds);
	part_idmap_release(&r->fmap);
	for (uint32_t t = 0; r->w && t < r->threads; t++) {
		free(r->w[t].dir);
		free(r->w[t].tab);
		free(r->w[t].keys);
		free(r->w[t].ids[0]);
		free(r->w[t].ids[1]);
	}
	free(r->w);
	chunks_free(r->ch, r->nch_cap);
}

/*
 * The default chunk for a file of `size` bytes (0: unknown): PR_CHUNK, or
 * less for small files, so that the two batches in flight (the one parsed
 * and the one read meanwhile) stay near 1/24 of the file, about 1/10 of
 * its CSR; and where that makes chunks under 1 MiB (files under 384 MB
 * per thread, whose CSR is small beside the fixed costs), near 1/96 of
 * the file, down to PR_CHUNK_MIN (smaller chunks cost about 9% more
 * instructions: each chunk maps and merges its own distinct features; a
 * batch still takes at least one read, 1 MiB).  Measured at 10M nonzeros
 * (86 MB of text), the load's peak: 61.6 MiB instead of 68.5 on 2
 * threads, 58.5 instead of 62.0 on 1; at 100M the chunks stay 2 MiB
 * (1/96 there cost 5% more CPU).
 */
static size_t pr_auto_chunk(uint64_t size, uint32_t threads)
{
	uint64_t c = size / ((uint64_t)threads * PR_CHUNKS_PER_THREAD * 48);

	if (size == 0 || c >= PR_CHUNK)
		return PR_CHUNK;
	if (c >= PR_CHUNK_SMALL)
		return (size_t)c;
	c /= 4;
	return c < PR_CHUNK_MIN ? PR_CHUNK_MIN : (size_t)c;
}

/*
 * Map the plain (not gzip) regular file at path for s, if it can be: 1
 * when mapped, 0 when it is to be read instead (anything else, or any
 * failure here: the read path then reports what it finds), -1 when out of
 * memory.  The mapping is private and writable (the parser cuts the odd
 * line in place: those pages are copied), without reserving swap.
 */
static int map_open(struct pr_src *s, const char *path)
{
	unsigned char magic[2];
	struct stat st;
	const char *q;
	void *m;
	int fd;

	if (strcmp(path, "-") == 0 || (fd = open(path, O_RDONLY)) < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > SIZE_MAX ||
	    pread(fd, magic, 2, 0) != 2 ||
	    (magic[0] == 0x1f && magic[1] == 0x8b)) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	(void)madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
	s->map = m;
	s->map_size = (size_t)st.st_size;
	s->map_pg = (size_t)sysconf(_SC_PAGESIZE);
	q = memrchr(s->map, '\n', s->map_size);
	s->map_len = q ? (size_t)(q - s->map) + 1 : 0;
	s->tail_len = s->map_size - s->map_len;
	if (s->tail_len) {
		s->tail = malloc(s->tail_len + 1);
		if (!s->tail)
			return -1;
		memcpy(s->tail, s->map + s->map_len, s->tail_len);
		s->tail[s->tail_len] = '\n';
	}
	return 1;
}

int part_preader_libsvm(const char *path, const struct part_read_opts *o,
			struct part_dataset *ds, struct parsa_err *err)
{
	static const struct part_read_opts defaults;
	struct pr_read r;
	struct pr_src s;
	size_t block;
	uint32_t n_feat;
	int rc, mapped;

	if (!o)
		o = &defaults;
	memset(&r, 0, sizeof(r));
	memset(&s, 0, sizeof(s));
	rc = part_lines_open(&s.l, path, err);
	if (rc)
		return rc;
	r.name = part_lines_name(s.l);
	r.threads = o->threads ? o->threads : part_pool_cpus();
	if (r.threads > PART_POOL_MAX_THREADS)
		r.threads = PART_POOL_MAX_THREADS;
	r.chunk = o->chunk ? o->chunk : pr_auto_chunk(part_lines_size(s.l),
						     r.threads);
	if (r.chunk > (size_t)1 << 30) /* (rows per chunk: pr_dslot) */
		r.chunk = (size_t)1 << 30;
	block = o->chunk ? o->chunk : PR_BLOCK;
	s.sim_cap = block + 1;
	s.target = r.chunk * r.threads * PR_CHUNKS_PER_THREAD;
	if (s.target < PR_MIN_BATCH)
		s.target = PR_MIN_BATCH;
	part_dataset_init(&r.ds);
	r.w = calloc(r.threads, sizeof(*r.w));
	if (!r.w) {
		part_lines_close(s.l);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	for (uint32_t t = 0; t < r.threads; t++)
		r.w[t].restart = o->stamp_restart && o->stamp_restart < 1u << 31
					 ? o->stamp_restart : 1u << 31;
	mapped = o->no_map ? 0 : map_open(&s, path);
	if (mapped < 0) {
		src_stop(&s);
		part_lines_close(s.l);
		free(r.w);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	s.threaded = pthread_create(&s.th, NULL, reader_main, &s) == 0;
	rc = read_all(&r, &s, o, err);
	src_stop(&s);
	pthread_cond_destroy(&s.cv);
	pthread_mutex_destroy(&s.mu);
	if (!rc && o->progress)
		o->progress(o->progress_arg, mapped ? part_lines_size(s.l)
						    : part_lines_bytes(s.l),
			    part_lines_size(s.l));
	part_lines_close(s.l);
	if (rc) {
		pr_release(&r);
		return rc;
	}
	n_feat = r.fmap.n;
	r.ds.feat_id = part_idmap_take_ids(&r.fmap);
	if (r.ds.g.n_rows == 0) {
		/* no examples: no arrays either */
		free(r.ds.feat_id);
		r.ds.feat_id = NULL;
		parsa_graph_release(&r.ds.g);
	} else {
		r.ds.g.n_cols = n_feat;
		parsa_graph_trim(&r.ds.g);
	}
	r.ds.format = PART_FMT_LIBSVM;
	r.ds.graph = o->graph;
	r.ds.lines = r.lines;
	part_dataset_release(ds);
	*ds = r.ds;
	part_dataset_init(&r.ds);
	pr_release(&r);
	return 0;
}
