/*
 * part_cache: write and read the binary dataset cache (format and rules in
 * part_cache.h).
 */
#include "part_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#include <unistd.h>

#include "base_hash.h"
#include "base_huge.h"
#include "base_io.h"

const unsigned char part_cache_magic[PART_CACHE_MAGIC_LEN] = {
	'P', 'C', 'S', 'R', '\r', '\n', 0x1a, '\n'
};

#define ENDIAN_MARK 0x01020304u
#define ENDIAN_FOREIGN 0x04030201u
#define HDR_SIZE 128u
#define SECT_SIZE 32u
#define ALIGN 64u
#define FLAG_TRANSPOSE 1u
#define FLAG_VALUES 2u

enum { S_ROW_PTR = 1, S_COL, S_FEAT_ID, S_T_ROW_PTR, S_T_COL, S_Y, S_LCOL,
       S_VAL, S_MAX };

/* The header as it is on disk (naturally aligned, no padding). */
struct hdr {
	unsigned char magic[8];
	uint32_t version, endian, header_size, n_sections;
	uint64_t file_size;
	uint32_t n_rows, n_cols;
	uint64_t nnz;
	uint32_t format, graph;
	uint64_t lines, entries, duplicates, self_loops, empty_rows;
	uint32_t flags, zero0;
	uint64_t zero1, zero2;
	uint64_t hash;
};

struct sect {
	uint32_t id, elem;
	uint64_t offset, length, hash;
};

_Static_assert(sizeof(struct hdr) == HDR_SIZE, "pcsr header is 128 bytes");
_Static_assert(sizeof(struct sect) == SECT_SIZE, "pcsr section entry");

static const char *const sect_name[S_MAX] = {
	"?", "row_ptr", "col", "feat_id", "t_row_ptr", "t_col", "y",
	"line_col", "val"
};

/* ---- checksum -------------------------------------------------------------- */

struct hasher {
	uint64_t h[4];
	uint64_t len;
	unsigned char tail[32];
	size_t ntail;
};

static void hash_init(struct hasher *s, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s->h[i] = base_mix64(seed + (uint64_t)(i + 1) * BASE_GOLDEN64);
	s->len = 0;
	s->ntail = 0;
}

static void hash_block(struct hasher *s, const unsigned char *p)
{
	uint64_t w[4];

	memcpy(w, p, 32);
	s->h[0] = base_mix64(s->h[0] ^ w[0]);
	s->h[1] = base_mix64(s->h[1] ^ w[1]);
	s->h[2] = base_mix64(s->h[2] ^ w[2]);
	s->h[3] = base_mix64(s->h[3] ^ w[3]);
}

static void hash_add(struct hasher *s, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	if (!n)
		return;
	s->len += n;
	if (s->ntail) {
		size_t m = 32 - s->ntail < n ? 32 - s->ntail : n;

		memcpy(s->tail + s->ntail, p, m);
		s->ntail += m;
		p += m;
		n -= m;
		if (s->ntail < 32)
			return;
		hash_block(s, s->tail);
		s->ntail = 0;
	}
	for (; n >= 32; p += 32, n -= 32)
		hash_block(s, p);
	if (n)
		memcpy(s->tail, p, n);
	s->ntail = n;
}

static uint64_t hash_end(struct hasher *s)
{
	uint64_t r;

	if (s->ntail) {
		memset(s->tail + s->ntail, 0, 32 - s->ntail);
		hash_block(s, s->tail);
	}
	r = base_mix64(s->len);
	for (int i = 0; i < 4; i++)
		r = base_mix64(r ^ s->h[i]);
	return r;
}

static uint64_t hash_buf(const void *buf, size_t n)
{
	struct hasher s;

	hash_init(&s, n);
	hash_add(&s, buf, n);
	return hash_end(&s);
}

/* The header checksum: bytes [0, size) with the hash field taken as 0. */
static uint64_t hash_header(const unsigned char *p, size_t size)
{
	struct hasher s;
	uint64_t zero = 0;

	hash_init(&s, size);
	hash_add(&s, p, offsetof(struct hdr, hash));
	hash_add(&s, &zero, sizeof(zero));
	hash_add(&s, p + HDR_SIZE, size - HDR_SIZE);
	return hash_end(&s);
}

static uint64_t align_up(uint64_t x)
{
	return (x + ALIGN - 1) / ALIGN * ALIGN;
}

int part_cache_reseal(void *buf, size_t len)
{
	unsigned char *p = buf;
	struct hdr h;

	if (!p || len < HDR_SIZE || !part_cache_is_magic(p, len))
		return 0;
	memcpy(&h, p, sizeof(h));
	if (h.endian != ENDIAN_MARK || h.n_sections < 1 ||
	    h.n_sections > S_MAX - 1 ||
	    h.header_size != HDR_SIZE + SECT_SIZE * h.n_sections ||
	    h.header_size > len)
		return 0;
	for (uint32_t i = 0; i < h.n_sections; i++) {
		unsigned char *e = p + HDR_SIZE + (size_t)i * SECT_SIZE;
		struct sect s;

		memcpy(&s, e, sizeof(s));
		if (s.offset <= len && s.length <= len - s.offset) {
			s.hash = hash_buf(p + s.offset, (size_t)s.length);
			memcpy(e, &s, sizeof(s));
		}
	}
	h.hash = hash_header(p, h.header_size);
	memcpy(p + offsetof(struct hdr, hash), &h.hash, sizeof(h.hash));
	return 1;
}

/* ---- probing ------------------------------------------------------------------ */

int part_cache_is_magic(const void *buf, size_t len)
{
	return len >= PART_CACHE_MAGIC_LEN &&
	       memcmp(buf, part_cache_magic, PART_CACHE_MAGIC_LEN) == 0;
}

int part_cache_probe(const char *path)
{
	unsigned char b[PART_CACHE_MAGIC_LEN];
	struct stat st;
	ssize_t n;
	int fd;

	if (!path || strcmp(path, "-") == 0)
		return 0;
	/* stat first: opening a FIFO would wait for (and race with) its
	 * writer */
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) ? read(fd, b, sizeof(b))
							  : -1;
	close(fd);
	return n == (ssize_t)sizeof(b) && part_cache_is_magic(b, sizeof(b));
}

/* ---- writing -------------------------------------------------------------------- */

struct wsect {
	uint32_t id, elem;
	const void *data;
	uint64_t length;
};

static int write_file(int fd, const struct part_dataset *ds,
		      const struct wsect *ws, uint32_t ns, uint32_t flags,
		      const struct part_cache_write_opts *o)
{
	static const unsigned char zeros[ALIGN];
	uint64_t header_size = HDR_SIZE + (uint64_t)SECT_SIZE * ns, pos;
	unsigned char *head = calloc(1, header_size);
	struct sect *tab = (struct sect *)(head + HDR_SIZE);
	struct hdr h;
	uint64_t total = 0, done = 0;
	int rc = 0;

	if (!head)
		return -2;
	pos = header_size;
	for (uint32_t i = 0; i < ns; i++) {
		pos = align_up(pos);
		tab[i].id = ws[i].id;
		tab[i].elem = ws[i].elem;
		tab[i].offset = pos;
		tab[i].length = ws[i].length;
		pos += ws[i].length;
		total += ws[i].length;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, part_cache_magic, sizeof(h.magic));
	h.version = PART_CACHE_VERSION;
	h.endian = ENDIAN_MARK;
	h.header_size = (uint32_t)header_size;
	h.n_sections = ns;
	h.file_size = pos;
	h.n_rows = ds->g.n_rows;
	h.n_cols = ds->g.n_cols;
	h.nnz = parsa_graph_nnz(&ds->g);
	h.format = (uint32_t)ds->format;
	h.graph = (uint32_t)ds->graph;
	h.lines = ds->lines;
	h.entries = ds->entries;
	h.duplicates = ds->duplicates;
	h.self_loops = ds->self_loops;
	h.empty_rows = ds->empty_rows;
	h.flags = flags;
	for (uint32_t i = 0; i < ns; i++) {
		tab[i].hash = hash_buf(ws[i].data, ws[i].length);
		done += ws[i].length;
		if (o->progress)
			o->progress(o->progress_arg, done / 2, total);
	}
	memcpy(head, &h, sizeof(h));
	h.hash = hash_header(head, header_size);
	memcpy(head, &h, sizeof(h));
	rc = base_write_all(fd, head, header_size);
	pos = header_size;
	done = 0;
	for (uint32_t i = 0; i < ns && !rc; i++) {
		uint64_t gap = tab[i].offset - pos;

		rc = base_write_all(fd, zeros, (size_t)gap);
		if (!rc && ws[i].length)
			rc = base_write_all(fd, ws[i].data, (size_t)ws[i].length);
		pos = tab[i].offset + ws[i].length;
		done += ws[i].length;
		if (o->progress)
			o->progress(o->progress_arg, total / 2 + done / 2, total);
	}
	free(head);
	return rc;
}

int part_cache_write(const char *path, const struct part_dataset *ds,
		     const struct part_cache_write_opts *o,
		     struct parsa_err *err)
{
	static const struct part_cache_write_opts defaults;
	const struct parsa_graph *g;
	struct parsa_graph t;
	struct wsect ws[S_MAX];
	uint32_t ns = 0, flags = 0;
	uint64_t nnz;
	char *tmp = NULL;
	size_t tmp_len;
	int rc, fd, wr;

	if (!o)
		o = &defaults;
	if (!path || !*path || !ds)
		return parsa_fail(err, PARSA_EINVAL, "cache: no path or dataset");
	g = &ds->g;
	nnz = parsa_graph_nnz(g);
	if (g->n_cols && !ds->feat_id)
		return parsa_fail(err, PARSA_EINVAL, "%s: the dataset has no feature ids", path);
	parsa_graph_init(&t);
	if (!o->no_transpose) {
		rc = g->n_rows ? parsa_graph_transpose(g, &t, err) : 0;
		if (rc)
			return rc;
		flags |= FLAG_TRANSPOSE;
	}
	ws[ns++] = (struct wsect){S_ROW_PTR, 8, g->row_ptr,
				  g->row_ptr && g->n_rows ? ((uint64_t)g->n_rows + 1) * 8 : 0};
	ws[ns++] = (struct wsect){S_COL, 4, g->col, nnz * 4};
	ws[ns++] = (struct wsect){S_FEAT_ID, 8, ds->feat_id,
				  (uint64_t)g->n_cols * 8};
	if (flags & FLAG_TRANSPOSE) {
		ws[ns++] = (struct wsect){S_T_ROW_PTR, 8, t.row_ptr,
					  t.row_ptr && g->n_rows ? ((uint64_t)g->n_cols + 1) * 8 : 0};
		ws[ns++] = (struct wsect){S_T_COL, 4, t.col, t.row_ptr && g->n_rows ? nnz * 4 : 0};
	}
	if (o->values) {
		flags |= FLAG_VALUES;
		ws[ns++] = (struct wsect){S_Y, 1, o->values->y, g->n_rows};
		ws[ns++] = (struct wsect){S_LCOL, 4, o->values->col, nnz * 4};
		ws[ns++] = (struct wsect){S_VAL, 8, o->values->val, nnz * 8};
	}
	tmp_len = strlen(path) + 32;
	tmp = malloc(tmp_len);
	if (!tmp) {
		parsa_graph_release(&t);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	snprintf(tmp, tmp_len, "%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = parsa_fail(err, PARSA_EIO, "%s: cannot create %s: %s", path,
				tmp, strerror(errno));
		goto out;
	}
	wr = write_file(fd, ds, ws, ns, flags, o);
	if (wr == -2) {
		close(fd);
		rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
	} else if (wr != 0) {
		rc = parsa_fail(err, PARSA_EIO, "%s: writing %s: %s", path, tmp,
				strerror(errno));
		close(fd);
	} else if (close(fd) != 0) {
		rc = parsa_fail(err, PARSA_EIO, "%s: writing %s: %s", path, tmp,
				strerror(errno));
	} else if (rename(tmp, path) != 0) {
		rc = parsa_fail(err, PARSA_EIO, "%s: renaming %s to it: %s",
				path, tmp, strerror(errno));
	} else {
		rc = 0;
	}
	if (rc)
		unlink(tmp);
out:
	free(tmp);
	parsa_graph_release(&t);
	return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

struct view {
	struct hdr h;
	const uint64_t *row_ptr, *feat_id, *t_row_ptr;
	const uint32_t *col, *t_col, *lcol;
	const int8_t *y;
	const double *val;
};

/* The id of the i-th section of a file with h's flags. */
static uint32_t sect_id(const struct hdr *h, uint32_t i)
{
	if (i < 3)
		return i + 1;
	if (h->flags & FLAG_TRANSPOSE) {
		if (i < 5)
			return i + 1;
		i -= 2;
	}
	return i + 3; /* 3, 4, 5 -> S_Y, S_LCOL, S_VAL */
}

static uint32_t sect_elem(uint32_t id)
{
	return id == S_Y ? 1u :
	       (id == S_COL || id == S_T_COL || id == S_LCOL) ? 4u : 8u;
}

/* hash_section's chunk: 256 KiB, what is resident of a section at a time,
 * and the deferred check's direct-read buffer (with 8 MiB, the check held
 * 7.6 MiB more in every phase it overlapped at 100M nonzeros; with 1 MiB,
 * at 10M on a busy machine where it overlaps U and the refinement, their
 * peaks were 1-3 MiB above those of a run whose check did no hashing). */
#define HASH_CHUNK (1u << 18)

/* Reading with pread (the deferred check): the mapped file's own
 * descriptor, O_DIRECT set when od (past the page cache), a page-aligned
 * buffer of HASH_CHUNK + 2 pages, and where the hashed bytes start in the
 * file. */
struct direct_read {
	int fd;
	int od;
	unsigned char *buf;
	uint64_t off;
};

/* d's descriptor with O_DIRECT set (od 1) or cleared (od 0): 0, or -1 when
 * fcntl fails.  The descriptor is the check's alone. */
static int direct_mode(struct direct_read *d, int od)
{
	int fl;

	if (d->od == od)
		return 0;
	fl = fcntl(d->fd, F_GETFL);
	if (fl == -1 ||
	    fcntl(d->fd, F_SETFL, od ? fl | O_DIRECT : fl & ~O_DIRECT) != 0)
		return -1;
	d->od = od;
	return 0;
}

/* 1 when every page of the mapping under p[0..m) is in the page cache
 * (m <= HASH_CHUNK). */
static int cached(const unsigned char *p, uint64_t m, uintptr_t pg)
{
	unsigned char vec[HASH_CHUNK / 512 + 2];
	uintptr_t a = (uintptr_t)p / pg * pg;
	uintptr_t b = ((uintptr_t)(p + m) + pg - 1) / pg * pg;

	if ((b - a) / pg > sizeof(vec) || mincore((void *)a, b - a, vec) != 0)
		return 1;
	for (uintptr_t q = 0; q < (b - a) / pg; q++)
		if (!(vec[q] & 1))
			return 0;
	return 1;
}

/* The file's bytes [off, off + m) read with d (m <= HASH_CHUNK): their
 * address in d->buf, or NULL when the read fails. */
static const unsigned char *read_direct(const struct direct_read *d,
					uint64_t off, uint64_t m,
					uintptr_t pg)
{
	uint64_t fa = off / pg * pg, fb = (off + m + pg - 1) / pg * pg;
	uint64_t got = 0;

	while (got < fb - fa) {
		ssize_t r = pread(d->fd, d->buf + got, (size_t)(fb - fa - got),
				  (off_t)(fa + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* the end of the file, or not readable so */
		got += (uint64_t)r;
	}
	return got >= off + m - fa ? d->buf + (off - fa) : NULL;
}

/* The checksum of p[0..n) into *out; drop: p is mapped and its pages are
 * given back as they are hashed (the sections a dataset does not use).
 * direct (may be NULL; with drop): every chunk is read with it instead of
 * through the mapping.  A chunk not wholly in the page cache (mincore)
 * past it (O_DIRECT), so the check does not fill the page cache: at 1B
 * nonzeros these sections are 16 GB of a 20.8 GB file that does not fit
 * in it beside the partition, and read page by page through the mapping
 * they cost the check 3.4 CPU-s at 100M where this takes 0.47
 * (BENCHMARKS.md, "The cache's check past the page cache").  A cached
 * chunk through the page cache (O_DIRECT cleared): hashed through the
 * mapping, the check raised the peaks of the phases it overlapped (10M
 * nonzeros from the cache on 2 threads: U or the refinement 3.5-5 MiB
 * higher in about half the runs; read into the buffer, in none).  After a
 * failed read the rest goes through the mapping.
 * stop (may be NULL): checked between chunks; 1 when it was set (*out
 * then undefined). */
static int hash_section(const unsigned char *p, uint64_t n, int drop,
			struct direct_read *direct,
			const atomic_int *stop, uint64_t *out)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct hasher s;

	if (!drop || pg <= 0) {
		*out = hash_buf(p, (size_t)n);
		return 0;
	}
	hash_init(&s, n);
	/* the pages from lo on are not given back yet: the first whole page
	 * of the section, then each page once all its bytes are hashed (a
	 * page across two chunks goes with the second; cut at the chunks'
	 * whole pages, one page a chunk stayed resident: 1.5 MiB of a 381
	 * MiB section with 1 MiB chunks) */
	uintptr_t lo = ((uintptr_t)p + (uintptr_t)pg - 1) / (uintptr_t)pg *
		       (uintptr_t)pg;
	for (uint64_t i = 0; i < n; i += HASH_CHUNK) {
		uint64_t m = n - i < HASH_CHUNK ? n - i : HASH_CHUNK;
		uintptr_t hi = ((uintptr_t)(p + i) + m) / (uintptr_t)pg *
			       (uintptr_t)pg;
		const unsigned char *q = NULL;

		if (stop && atomic_load_explicit(stop, memory_order_relaxed))
			return 1;
		if (direct &&
		    (direct_mode(direct, !cached(p + i, m, (uintptr_t)pg)) ||
		     !(q = read_direct(direct, direct->off + i, m,
				       (uintptr_t)pg))))
			direct = NULL;
		hash_add(&s, q ? q : p + i, (size_t)m);
		if (hi > lo) {
			madvise((void *)lo, hi - lo, MADV_DONTNEED);
			lo = hi;
		}
	}
	*out = hash_end(&s);
	return 0;
}

/* ---- deferred checksums (part_read_opts.verify_later) ---------------------- */

/* The sections a mapped dataset does not use, checked on a thread of their
 * own while the command works; the mapping outlives the thread
 * (part_dataset_release joins it before unmapping). */
struct part_cache_check {
	pthread_t th;
	atomic_int stop;
	int fd; /* the mapped file, read past the page cache; -1: none */
	uint32_t n;
	struct {
		const unsigned char *p;
		uint64_t off, len, hash; /* off: in the file */
		uint32_t id;
	} s[S_MAX];
	struct parsa_err e;
	int rc;
	char name[];
};

static void *check_main(void *arg)
{
	struct part_cache_check *c = arg;
	long pg = sysconf(_SC_PAGESIZE);
	struct direct_read d = { c->fd, 1, NULL, 0 };

	if (c->fd >= 0 && pg > 0 &&
	    posix_memalign((void **)&d.buf, (size_t)pg,
			   HASH_CHUNK + 2 * (size_t)pg) != 0)
		d.buf = NULL;
	for (uint32_t i = 0; i < c->n && !c->rc; i++) {
		uint64_t h;

		d.off = c->s[i].off;
		if (hash_section(c->s[i].p, c->s[i].len, 1, d.buf ? &d : NULL,
				 &c->stop, &h))
			break; /* stopped: the dataset is being released */
		if (h != c->s[i].hash)
			c->rc = parsa_fail(&c->e, PARSA_EPARSE,
					   "%s: corrupt pcsr file (checksum mismatch in section %s)",
					   c->name, sect_name[c->s[i].id]);
	}
	free(d.buf);
	return NULL;
}

/* check_main on a thread of its own, at the lowest priority: the
 * command's threads come first, this one mostly fills the cores' idle
 * moments (a thread's nice value is its own on Linux). */
static void *check_thread(void *arg)
{
#ifdef __linux__
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
#endif
	return check_main(arg);
}

/* A check's memory and descriptor (NULL: nothing). */
static void check_free(struct part_cache_check *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

int part_cache_check_wait(struct part_cache_check *c, struct parsa_err *err)
{
	int rc;

	if (!c)
		return 0;
	pthread_join(c->th, NULL);
	rc = c->rc;
	if (rc && err)
		*err = c->e;
	check_free(c);
	return rc;
}

void part_cache_check_stop(struct part_cache_check *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, 1);
	pthread_join(c->th, NULL);
	check_free(c);
}

/* a * b into *r unless it overflows (then 0 is returned). */
static int mul_ok(uint64_t a, uint64_t b, uint64_t *r)
{
	if (a && b > UINT64_MAX / a)
		return 0;
	*r = a * b;
	return 1;
}

static int bad(struct parsa_err *err, const char *name, const char *what)
{
	return parsa_fail(err, PARSA_EPARSE, "%s: %s", name, what);
}

static int check_header(const char *name, const unsigned char *p,
			uint64_t size, struct hdr *h, struct parsa_err *err)
{
	if (!part_cache_is_magic(p, size))
		return bad(err, name, "not a parsa dataset cache (no pcsr magic)");
	if (size < HDR_SIZE)
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: truncated pcsr file (%llu bytes, shorter than its %u-byte header)",
				  name, (unsigned long long)size, HDR_SIZE);
	memcpy(h, p, sizeof(*h));
	if (h->endian == ENDIAN_FOREIGN)
		return bad(err, name, "pcsr file written on a machine of the other byte order (foreign endianness); convert the text file again on this machine");
	if (h->endian != ENDIAN_MARK)
		return bad(err, name, "corrupt pcsr header (bad endianness marker)");
	if (h->version != PART_CACHE_VERSION)
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: pcsr format version %u, this parsa reads version %u; convert the text file again",
				  name, h->version, PART_CACHE_VERSION);
	if (h->n_sections < 1 || h->n_sections > S_MAX - 1 ||
	    h->header_size != HDR_SIZE + SECT_SIZE * h->n_sections)
		return bad(err, name, "corrupt pcsr header (section count)");
	if (size < h->header_size)
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: truncated pcsr file (%llu bytes, shorter than its %u-byte header)",
				  name, (unsigned long long)size, h->header_size);
	if (hash_header(p, h->header_size) != h->hash)
		return bad(err, name, "corrupt pcsr header (checksum mismatch)");
	if (h->file_size > size)
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: truncated pcsr file (%llu bytes, the header says %llu)",
				  name, (unsigned long long)size,
				  (unsigned long long)h->file_size);
	if (h->file_size < size)
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: pcsr file has %llu bytes after its end (%llu bytes, the header says %llu)",
				  name, (unsigned long long)(size - h->file_size),
				  (unsigned long long)size,
				  (unsigned long long)h->file_size);
	if (h->format > PART_FMT_PAIRS || h->graph > PART_GRAPH_EDGES ||
	    (h->flags & ~(FLAG_TRANSPOSE | FLAG_VALUES)) || h->zero0 || h->zero1 ||
	    h->zero2)
		return bad(err, name, "corrupt pcsr header (bad format, mode or flags)");
	if (h->n_sections != 3u + ((h->flags & FLAG_TRANSPOSE) ? 2u : 0u) +
			      ((h->flags & FLAG_VALUES) ? 3u : 0u))
		return bad(err, name, "corrupt pcsr header (section count)");
	if (h->n_rows == 0 && h->nnz)
		return bad(err, name, "corrupt pcsr header (nonzeros without examples)");
	return 0;
}

/* The length section id must have, or 0 when the counts overflow. */
static int want_len(const struct hdr *h, uint32_t id, uint64_t *len)
{
	switch (id) {
	case S_ROW_PTR:
		*len = h->n_rows ? ((uint64_t)h->n_rows + 1) * 8 : 0;
		return 1;
	case S_COL:
	case S_T_COL:
		return mul_ok(h->nnz, 4, len);
	case S_FEAT_ID:
		*len = (uint64_t)h->n_cols * 8;
		return 1;
	case S_T_ROW_PTR:
		*len = h->n_rows ? ((uint64_t)h->n_cols + 1) * 8 : 0;
		return 1;
	case S_Y:
		*len = h->n_rows;
		return 1;
	case S_LCOL:
		return mul_ok(h->nnz, 4, len);
	case S_VAL:
		return mul_ok(h->nnz, 8, len);
	}
	return 0;
}

static int check_sections(const char *name, const unsigned char *p,
			  const struct hdr *h, struct view *v,
			  const struct part_read_opts *o, int drop,
			  struct part_cache_check *later,
			  struct parsa_err *err)
{
	const struct sect *tab = (const struct sect *)(p + HDR_SIZE);
	uint64_t pos = h->header_size, done = h->header_size;

	for (uint32_t i = 0; i < h->n_sections; i++) {
		struct sect s;
		uint64_t want = 0;
		const void *data;

		memcpy(&s, &tab[i], sizeof(s));
		if (s.id != sect_id(h, i) || s.elem != sect_elem(s.id))
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr section table (entry %u)",
					  name, i);
		if (s.offset != align_up(pos) || s.offset > h->file_size ||
		    s.length > h->file_size - s.offset)
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr section table (%s out of bounds)",
					  name, sect_name[s.id]);
		if (!want_len(h, s.id, &want) || want != s.length)
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr file (%s holds %llu bytes, the counts need %llu)",
					  name, sect_name[s.id],
					  (unsigned long long)s.length,
					  (unsigned long long)want);
		for (uint64_t b = pos; b < s.offset; b++)
			if (p[b])
				return parsa_fail(err, PARSA_EPARSE,
						  "%s: corrupt pcsr file (non-zero padding at byte %llu)",
						  name, (unsigned long long)b);
		data = p + s.offset;
		if (later && s.id >= S_T_ROW_PTR) {
			/* not used by the dataset: checked on a thread */
			later->s[later->n].p = data;
			later->s[later->n].off = s.offset;
			later->s[later->n].len = s.length;
			later->s[later->n].hash = s.hash;
			later->s[later->n++].id = s.id;
		} else {
			uint64_t hv;

			hash_section(data, s.length,
				     drop && (s.id >= S_T_ROW_PTR ||
					      s.id == S_FEAT_ID),
				     NULL, NULL, &hv);
			if (hv != s.hash)
				return parsa_fail(err, PARSA_EPARSE,
						  "%s: corrupt pcsr file (checksum mismatch in section %s)",
						  name, sect_name[s.id]);
		}
		done += s.length;
		if (o->progress)
			o->progress(o->progress_arg, done, h->file_size);
		pos = s.offset + s.length;
		switch (s.id) {
		case S_ROW_PTR: v->row_ptr = s.length ? data : NULL; break;
		case S_COL: v->col = s.length ? data : NULL; break;
		case S_FEAT_ID: v->feat_id = s.length ? data : NULL; break;
		case S_T_ROW_PTR: v->t_row_ptr = s.length ? data : NULL; break;
		case S_T_COL: v->t_col = s.length ? data : NULL; break;
		case S_Y: v->y = s.length ? data : NULL; break;
		case S_LCOL: v->lcol = s.length ? data : NULL; break;
		case S_VAL: v->val = s.length ? data : NULL; break;
		}
	}
	if (pos != h->file_size)
		return bad(err, name, "corrupt pcsr file (its size does not match its sections)");
	return 0;
}

/* A graph over the view's arrays (not owned). */
static void view_graph(const struct view *v, int transpose,
		       struct parsa_graph *g)
{
	parsa_graph_init(g);
	g->n_rows = transpose ? v->h.n_cols : v->h.n_rows;
	g->n_cols = transpose ? v->h.n_rows : v->h.n_cols;
	g->row_ptr = (uint64_t *)(transpose ? v->t_row_ptr : v->row_ptr);
	g->col = (uint32_t *)(transpose ? v->t_col : v->col);
	g->row_cap = g->row_ptr ? (uint64_t)g->n_rows + 1 : 0;
	g->col_cap = v->h.nnz;
}

static int check_graphs(const char *name, const struct view *v, int drop,
			struct parsa_err *err)
{
	struct parsa_graph g;
	struct parsa_err e;

	for (int t = 0; t < ((v->h.flags & FLAG_TRANSPOSE) && !drop ? 2 : 1); t++) {
		view_graph(v, t, &g);
		parsa_err_clear(&e);
		if (g.row_ptr && parsa_graph_nnz(&g) != v->h.nnz)
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr file (%s: %llu nonzeros, the header says %llu)",
					  name, t ? "transpose" : "CSR",
					  (unsigned long long)parsa_graph_nnz(&g),
					  (unsigned long long)v->h.nnz);
		if (g.row_ptr && parsa_graph_validate(&g, &e) != 0)
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr file (%s: %s)", name,
					  t ? "transpose" : "CSR", e.msg);
	}
	return 0;
}

/*
 * The feature ids distinct (no convert writes a repeated one, but a file
 * from anyone can hold one: its placement would give one id two servers).
 * Ids all below 64 times the number of features (LIBSVM's dense indices,
 * most SNAP and pairs files' ids): a bitmap of them, a bit tested and set per id (at
 * 2M features of ids under 2^21: 256 KiB, in the caches).  Else a copy
 * sorted by 11-bit digits, least significant first, up to the highest bit
 * any id has, the digits' counts taken in one pass, then neighbours
 * compared (16 bytes a feature for a moment).  Either way the memory is
 * freed before the command goes on; a table of the ids cost 4x the sort's
 * time at 2M features, its probes cache misses.  drop: the section's
 * pages are given back after (as its checksum does).
 */
#define IDS_DIGIT 11
#define IDS_RADIX (1u << IDS_DIGIT)
#define IDS_MAX_DIGITS ((64 + IDS_DIGIT - 1) / IDS_DIGIT)

static int check_ids(const char *name, const struct view *v, int drop,
		     struct parsa_err *err)
{
	const uint64_t *id = v->feat_id;
	uint32_t n = v->h.n_cols, digits = 0;
	uint64_t *a, *b, *t, *cnt, dup = 0, any = 0;
	int found = 0;

	if (!id || n < 2)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		any = id[i] > any ? id[i] : any;
	if (any < (uint64_t)n * 64) {
		uint64_t *bits = calloc((size_t)(any >> 6) + 1, sizeof(*bits));

		if (!bits)
			return parsa_fail(err, PARSA_ENOMEM,
					  "%s: out of memory (checking %u feature ids)",
					  name, n);
		for (uint32_t i = 0; i < n && !found; i++) {
			uint64_t *w = &bits[id[i] >> 6], m = 1ULL << (id[i] & 63);

			if (*w & m) {
				dup = id[i];
				found = 1;
			}
			*w |= m;
		}
		free(bits);
		goto done;
	}
	any = 0;
	a = malloc((size_t)n * sizeof(*a));
	b = malloc((size_t)n * sizeof(*b));
	cnt = calloc((size_t)IDS_MAX_DIGITS * IDS_RADIX, sizeof(*cnt));
	if (!a || !b || !cnt) {
		free(a);
		free(b);
		free(cnt);
		return parsa_fail(err, PARSA_ENOMEM,
				  "%s: out of memory (checking %u feature ids)",
				  name, n);
	}
	for (uint32_t i = 0; i < n; i++)
		any |= a[i] = id[i];
	while (digits < IDS_MAX_DIGITS && (any >> (digits * IDS_DIGIT)))
		digits++;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t d = 0; d < digits; d++)
			cnt[d * IDS_RADIX + ((a[i] >> (d * IDS_DIGIT)) & (IDS_RADIX - 1))]++;
	for (uint32_t d = 0; d < digits; d++) {
		uint64_t *c = cnt + (size_t)d * IDS_RADIX, pos = 0;
		unsigned sh = d * IDS_DIGIT;

		for (uint32_t x = 0; x < IDS_RADIX; x++) {
			uint64_t k = c[x];

			c[x] = pos;
			pos += k;
		}
		for (uint32_t i = 0; i < n; i++)
			b[c[(a[i] >> sh) & (IDS_RADIX - 1)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	free(cnt);
	for (uint32_t i = 1; i < n && !found; i++)
		if (a[i] == a[i - 1]) {
			dup = a[i];
			found = 1;
		}
	free(a);
	free(b);
done:
	if (drop)
		base_huge_drop((void *)(uintptr_t)id, (size_t)n * sizeof(*id));
	if (found) { /* (only now: which columns) */
		uint32_t c0 = 0, c1 = 0;

		while (id[c0] != dup)
			c0++;
		c1 = c0 + 1;
		while (id[c1] != dup)
			c1++;
		return parsa_fail(err, PARSA_EPARSE,
				  "%s: corrupt pcsr file (feature id %llu appears twice: columns %u and %u)",
				  name, (unsigned long long)dup, c0, c1);
	}
	return 0;
}

/* The trainer's sections: labels +1/-1, each row's line-order columns a
 * permutation of its CSR columns, finite values. */
static int check_values(const char *name, const struct view *v,
			struct parsa_err *err)
{
	uint64_t *stamp;
	int rc = 0;

	if (!(v->h.flags & FLAG_VALUES) || v->h.n_rows == 0)
		return 0;
	for (uint32_t r = 0; r < v->h.n_rows; r++)
		if (v->y[r] != 1 && v->y[r] != -1)
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr file (label of example %u is %d, not +1 or -1)",
					  name, r, (int)v->y[r]);
	for (uint64_t e = 0; e < v->h.nnz; e++)
		if (!isfinite(v->val[e]))
			return parsa_fail(err, PARSA_EPARSE,
					  "%s: corrupt pcsr file (value %llu is not finite)",
					  name, (unsigned long long)e);
	stamp = calloc((size_t)v->h.n_cols + 1, sizeof(*stamp));
	if (!stamp)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	for (uint32_t r = 0; r < v->h.n_rows && !rc; r++) {
		uint64_t a = v->row_ptr[r], b = v->row_ptr[r + 1];

		for (uint64_t e = a; e < b; e++)
			stamp[v->col[e]] = 2 * (uint64_t)r + 2;
		for (uint64_t e = a; e < b && !rc; e++) {
			uint32_t c = v->lcol[e];

			if (c >= v->h.n_cols || stamp[c] != 2 * (uint64_t)r + 2)
				rc = parsa_fail(err, PARSA_EPARSE,
						"%s: corrupt pcsr file (line_col of example %u does not match its row)",
						name, r);
			else
				stamp[c]++;
		}
	}
	free(stamp);
	return rc;
}

static int check_opts(const char *name, const struct hdr *h,
		      const struct part_read_opts *o, struct parsa_err *err)
{
	enum part_format f = (enum part_format)h->format;
	enum part_graph_mode m = (enum part_graph_mode)h->graph;

	if (o->format != PART_FMT_AUTO && f != PART_FMT_AUTO && o->format != f)
		return parsa_fail(err, PARSA_EINVAL,
				  "%s: a cache of %s data, not %s (convert the text file with --format %s)",
				  name, part_format_name(f),
				  part_format_name(o->format),
				  part_format_name(o->format));
	if (f == PART_FMT_SNAP && o->graph != m)
		return parsa_fail(err, PARSA_EINVAL,
				  "%s: a cache of a SNAP edge list read in %s mode, not %s (give --graph %s, or convert the text file with --graph %s)",
				  name, part_graph_mode_name(m),
				  part_graph_mode_name(o->graph),
				  part_graph_mode_name(m),
				  part_graph_mode_name(o->graph));
	return 0;
}

/* Check everything of p[0..size) (8-byte aligned) and fill *v (o NULL:
 * any format and mode).  drop (a mapped dataset, which does not use the
 * transpose and reads the feature ids only at the end): the checksums of
 * the transpose and the feature ids are checked and their pages given back
 * as they go (the ids' pages come back from the file when read); the
 * transpose's CSR invariants are checked only when it is read
 * (part_cache_read_transpose). */
static int parse(const char *name, const unsigned char *p, uint64_t size,
		 const struct part_read_opts *o, int drop,
		 struct part_cache_check *later, struct view *v,
		 struct parsa_err *err)
{
	static const struct part_read_opts defaults;
	const struct part_read_opts *po = o ? o : &defaults;

	int rc;

	memset(v, 0, sizeof(*v));
	rc = check_header(name, p, size, &v->h, err);
	if (!rc)
		rc = check_sections(name, p, &v->h, v, po, drop, later, err);
	if (!rc)
		rc = check_graphs(name, v, drop, err);
	if (!rc)
		rc = check_ids(name, v, drop, err);
	if (!rc && !drop)
		rc = check_values(name, v, err);
	if (!rc && o)
		rc = check_opts(name, &v->h, o, err);
	return rc;
}

static void fill_counts(const struct view *v, struct part_dataset *ds)
{
	ds->g.n_rows = v->h.n_rows;
	ds->g.n_cols = v->h.n_cols;
	ds->format = (enum part_format)v->h.format;
	ds->graph = (enum part_graph_mode)v->h.graph;
	ds->lines = v->h.lines;
	ds->entries = v->h.entries;
	ds->duplicates = v->h.duplicates;
	ds->self_loops = v->h.self_loops;
	ds->empty_rows = v->h.empty_rows;
}

/* Map path read-only-ish (MAP_PRIVATE); *size its size.  keep (may be
 * NULL): gets the file's descriptor when it was mapped (else -1). */
static int map_file(const char *path, void **map, uint64_t *size, int *keep,
		    struct parsa_err *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*map = NULL;
	if (keep)
		*keep = -1;
	if (fd < 0)
		return parsa_fail(err, PARSA_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return parsa_fail(err, PARSA_EIO, "%s: not a regular file", path);
	}
	*size = (uint64_t)st.st_size;
	if (*size < HDR_SIZE) {
		/* too short to map usefully: let parse() say what it is */
		unsigned char *b = malloc(HDR_SIZE);
		ssize_t n = b ? read(fd, b, HDR_SIZE) : -1;

		close(fd);
		if (!b)
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		*size = n > 0 ? (uint64_t)n : 0;
		*map = b;
		return 1; /* malloc'ed */
	}
	*map = mmap(NULL, (size_t)*size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		    fd, 0);
	if (keep && *map != MAP_FAILED)
		*keep = fd;
	else
		close(fd);
	if (*map == MAP_FAILED) {
		*map = NULL;
		return parsa_fail(err, PARSA_EIO, "%s: mmap: %s", path,
				  strerror(errno));
	}
	return 0;
}

/* part_cache_read; o NULL: any format and mode. */
static int read_mapped(const char *path, const struct part_read_opts *o,
		       struct part_dataset *ds, struct parsa_err *err)
{
	struct part_cache_check *later = NULL;
	int later_wanted = o && o->verify_later;
	struct view v;
	uint64_t size = 0;
	void *map;
	int rc, fd = -1;

	if (!path || !ds)
		return parsa_fail(err, PARSA_EINVAL, "no input or dataset");
	rc = map_file(path, &map, &size, later_wanted ? &fd : NULL, err);
	if (rc == 1) {
		rc = parse(path, map, size, o, 0, NULL, &v, err);
		free(map);
		return rc ? rc : bad(err, path, "truncated pcsr file");
	}
	if (rc)
		return rc;
	if (later_wanted) {
		later = calloc(1, sizeof(*later) + strlen(path) + 1);
		if (!later) {
			close(fd);
			munmap(map, (size_t)size);
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
		}
		memcpy(later->name, path, strlen(path) + 1);
		/* the same open file, read past the page cache (where the
		 * file system cannot, the check reads through the mapping) */
		if (fcntl(fd, F_SETFL, O_DIRECT) != 0) {
			close(fd);
			fd = -1;
		}
		later->fd = fd;
	}
	madvise(map, (size_t)size, MADV_SEQUENTIAL);
	rc = parse(path, map, size, o, o != NULL, later, &v, err);
	if (rc) {
		check_free(later);
		munmap(map, (size_t)size);
		return rc;
	}
	madvise(map, (size_t)size, MADV_NORMAL);
	if (later && later->n == 0) {
		check_free(later);
		later = NULL;
	} else if (later &&
		   pthread_create(&later->th, NULL, check_thread, later) != 0) {
		/* no thread: check them now */
		check_main(later);
		rc = later->rc;
		if (rc)
			*err = later->e;
		check_free(later);
		later = NULL;
		if (rc) {
			munmap(map, (size_t)size);
			return rc;
		}
	}
	part_dataset_release(ds);
	fill_counts(&v, ds);
	ds->g.row_ptr = (uint64_t *)v.row_ptr;
	ds->g.col = (uint32_t *)v.col;
	ds->g.row_cap = v.row_ptr ? (uint64_t)v.h.n_rows + 1 : 0;
	ds->g.col_cap = v.h.nnz;
	ds->feat_id = (uint64_t *)v.feat_id;
	ds->map = map;
	ds->map_len = (size_t)size;
	ds->check = later;
	return 0;
}

int part_cache_read(const char *path, const struct part_read_opts *o,
		    struct part_dataset *ds, struct parsa_err *err)
{
	static const struct part_read_opts defaults;

	return read_mapped(path, o ? o : &defaults, ds, err);
}

/* buf[0..len) copied into 8-byte aligned memory. */
static unsigned char *copy_aligned(const void *buf, size_t len)
{
	unsigned char *p = malloc(len ? len : 1);

	if (p && len)
		memcpy(p, buf, len);
	return p;
}

static void *dup_arr(const void *src, uint64_t bytes, int *oom)
{
	void *p;

	if (!src || !bytes)
		return NULL;
	p = malloc((size_t)bytes);
	if (!p)
		*oom = 1;
	else
		memcpy(p, src, (size_t)bytes);
	return p;
}

int part_cache_read_mem(const char *name, const void *buf, size_t len,
			const struct part_read_opts *o,
			struct part_dataset *ds, struct parsa_err *err)
{
	static const struct part_read_opts defaults;
	struct part_dataset nd;
	unsigned char *p;
	struct view v;
	int rc, oom = 0;

	if (!o)
		o = &defaults;
	if (!name)
		name = "<memory>";
	if ((!buf && len) || !ds)
		return parsa_fail(err, PARSA_EINVAL, "no input or dataset");
	p = copy_aligned(buf, len);
	if (!p)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	rc = parse(name, p, len, o, 0, NULL, &v, err);
	if (rc) {
		free(p);
		return rc;
	}
	part_dataset_init(&nd);
	fill_counts(&v, &nd);
	nd.g.row_ptr = dup_arr(v.row_ptr, v.row_ptr ? ((uint64_t)v.h.n_rows + 1) * 8 : 0, &oom);
	nd.g.col = dup_arr(v.col, v.h.nnz * 4, &oom);
	nd.g.row_cap = nd.g.row_ptr ? (uint64_t)v.h.n_rows + 1 : 0;
	nd.g.col_cap = nd.g.col ? v.h.nnz : 0;
	nd.feat_id = dup_arr(v.feat_id, (uint64_t)v.h.n_cols * 8, &oom);
	free(p);
	if (oom) {
		part_dataset_release(&nd);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	part_dataset_release(ds);
	*ds = nd;
	return 0;
}

int part_cache_read_transpose(const char *path, struct parsa_graph *t,
			      struct parsa_err *err)
{
	struct part_dataset ds;
	struct parsa_graph vg;
	struct view v;
	int rc, oom = 0;

	/* map, check everything, then copy the transpose out */
	memset(&v, 0, sizeof(v));
	part_dataset_init(&ds);
	rc = read_mapped(path, NULL, &ds, err);
	if (rc)
		return rc;
	memcpy(&v.h, ds.map, sizeof(v.h));
	if (!(v.h.flags & FLAG_TRANSPOSE)) {
		part_dataset_release(&ds);
		return parsa_fail(err, PARSA_EINVAL,
				  "%s: the cache was written without the transpose",
				  path);
	}
	{
		const struct sect *tab = (const struct sect *)
			((const unsigned char *)ds.map + HDR_SIZE);
		struct sect a, b;

		memcpy(&a, &tab[3], sizeof(a));
		memcpy(&b, &tab[4], sizeof(b));
		v.t_row_ptr = a.length ? (const uint64_t *)((const unsigned char *)ds.map + a.offset) : NULL;
		v.t_col = b.length ? (const uint32_t *)((const unsigned char *)ds.map + b.offset) : NULL;
	}
	view_graph(&v, 1, &vg);
	parsa_graph_release(t);
	t->n_rows = vg.n_rows;
	t->n_cols = vg.n_cols;
	t->row_ptr = dup_arr(vg.row_ptr, vg.row_ptr ? ((uint64_t)vg.n_rows + 1) * 8 : 0, &oom);
	t->col = dup_arr(vg.col, v.h.nnz * 4, &oom);
	t->row_cap = t->row_ptr ? (uint64_t)vg.n_rows + 1 : 0;
	t->col_cap = t->col ? v.h.nnz : 0;
	part_dataset_release(&ds);
	if (oom) {
		parsa_graph_release(t);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	return 0;
}

int part_cache_read_values(const char *path, struct part_dataset *ds,
			   struct part_cache_values *vals,
			   struct parsa_err *err)
{
	struct part_dataset nd;
	const struct sect *tab;
	const unsigned char *p;
	struct hdr h;
	struct sect sy, sc, sv;
	int rc;

	part_dataset_init(&nd);
	rc = read_mapped(path, NULL, &nd, err);
	if (rc)
		return rc;
	p = nd.map;
	memcpy(&h, p, sizeof(h));
	if (!(h.flags & FLAG_VALUES)) {
		part_dataset_release(&nd);
		return parsa_fail(err, PARSA_EINVAL,
				  "%s: the cache holds no labels or values, which the trainer needs (convert the LIBSVM text again, without --no-values)",
				  path);
	}
	tab = (const struct sect *)(p + HDR_SIZE);
	memcpy(&sy, &tab[h.n_sections - 3], sizeof(sy));
	memcpy(&sc, &tab[h.n_sections - 2], sizeof(sc));
	memcpy(&sv, &tab[h.n_sections - 1], sizeof(sv));
	vals->y = sy.length ? (const int8_t *)(p + sy.offset) : NULL;
	vals->col = sc.length ? (const uint32_t *)(p + sc.offset) : NULL;
	vals->val = sv.length ? (const double *)(p + sv.offset) : NULL;
	part_dataset_release(ds);
	*ds = nd;
	return 0;
}

void part_cache_unmap(void *map, size_t len)
{
	if (map)
		munmap(map, len);
}
