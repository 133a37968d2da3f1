/*
 * part_io: buffered line reader over gzip/plain files and memory (see
 * part_io.h).
 *
 * The buffer holds the bytes buf[beg..end); bytes before `scan` are known
 * to hold no '\n'.  When no '\n' is left, the partial line is moved to the
 * front and the rest of the buffer is filled; when the partial line takes
 * more than half of the buffer, the buffer doubles first, so each fill reads
 * at least half a buffer.  buf[end] is always reserved for the NUL that
 * terminates a last line without '\n'.
 */
#include "part_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IO_GZBUF (1u << 20)    /* zlib's input buffer */
#define IO_CHUNK PART_LINES_CHUNK /* initial line buffer for files */
#define IO_MEM_MIN 16u         /* smallest line buffer for memory input */

struct part_lines {
	gzFile gz;              /* NULL for memory input */
	const char *mem;        /* memory input */
	size_t mem_len, mem_pos;
	char *name;
	char *buf;
	size_t cap;             /* allocated bytes of buf */
	size_t beg, end, scan;  /* see the file comment */
	int in_eof;             /* the source has no more bytes */
	int failed;             /* sticky error code, 0 if none */
	unsigned long lineno;
	uint64_t size;
};

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

static int lines_alloc(struct part_lines **out, const char *name, size_t cap,
		       struct parsa_err *err)
{
	struct part_lines *l = calloc(1, sizeof(*l));

	if (l) {
		l->name = dup_str(name);
		l->buf = malloc(cap);
		l->cap = cap;
	}
	if (!l || !l->name || !l->buf) {
		if (l) {
			free(l->name);
			free(l->buf);
			free(l);
		}
		return parsa_fail(err, PARSA_ENOMEM,
				  "%s: out of memory for the line buffer",
				  name);
	}
	*out = l;
	return 0;
}

/* Open the gzip stream of path (or stdin); errno describes a failure. */
static gzFile open_gz(const char *path, int is_stdin)
{
	int fd;
	gzFile gz;

	if (!is_stdin)
		return gzopen(path, "rb");
	fd = dup(STDIN_FILENO);
	if (fd < 0)
		return NULL;
	gz = gzdopen(fd, "rb");
	if (!gz)
		close(fd);
	return gz;
}

int part_lines_open(struct part_lines **out, const char *path,
		    struct parsa_err *err)
{
	int is_stdin;
	struct stat st;
	struct part_lines *l;
	int rc;

	*out = NULL;
	if (!path || !*path)
		return parsa_fail(err, PARSA_EINVAL, "empty input path");
	is_stdin = strcmp(path, "-") == 0;
	if (!is_stdin) {
		if (stat(path, &st) != 0)
			return parsa_fail(err, PARSA_EIO, "%s: %s", path,
					  strerror(errno));
		if (S_ISDIR(st.st_mode))
			return parsa_fail(err, PARSA_EIO,
					  "%s: is a directory", path);
	}
	rc = lines_alloc(&l, is_stdin ? "<stdin>" : path, IO_CHUNK + 1, err);
	if (rc)
		return rc;
	if (!is_stdin && S_ISREG(st.st_mode))
		l->size = (uint64_t)st.st_size;
	errno = 0;
	l->gz = open_gz(path, is_stdin);
	if (!l->gz) {
		rc = parsa_fail(err, PARSA_EIO, "%s: %s", l->name,
				errno ? strerror(errno) : "cannot open");
		part_lines_close(l);
		return rc;
	}
	gzbuffer(l->gz, IO_GZBUF);
	*out = l;
	return 0;
}

int part_lines_open_mem(struct part_lines **out, const char *name,
			const char *buf, size_t len, struct parsa_err *err)
{
	size_t cap = len / 4;
	int rc;

	*out = NULL;
	/* small inputs get a small buffer (so the fuzzers reach the code
	 * that moves and grows it); large ones the usual chunk */
	if (cap < IO_MEM_MIN)
		cap = IO_MEM_MIN;
	if (cap > IO_CHUNK)
		cap = IO_CHUNK;
	rc = lines_alloc(out, name ? name : "<memory>", cap + 1, err);
	if (rc)
		return rc;
	(*out)->mem = buf;
	(*out)->mem_len = buf ? len : 0;
	(*out)->size = (*out)->mem_len;
	return 0;
}

static int fail_sticky(struct part_lines *l, int code)
{
	l->failed = code;
	return code;
}

/* zlib's message without the "path: " prefix it adds. */
static const char *gz_msg(const struct part_lines *l, const char *msg)
{
	size_t n = strlen(l->name);
	const char *p;

	if (!msg)
		return "unknown error";
	if (strncmp(msg, l->name, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		return msg + n + 2;
	if (strncmp(msg, "<fd:", 4) == 0 && (p = strstr(msg, ">: ")) != NULL)
		return p + 3;
	return msg;
}

/*
 * Where the gzip data of the file at fd ends when something else follows
 * its last member: 0 when nothing does (or on a read error, which gzread
 * reported), else the byte offset + 1 of the trailing data.  zlib's gzread
 * skips such data silently.
 */
static uint64_t gz_trailing_at(int fd)
{
	unsigned char in[1 << 16], out[1 << 16];
	z_stream z;
	uint64_t pos = 0, at = 0;
	int zrc = Z_OK;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return 0;
	for (;;) {
		if (z.avail_in == 0) {
			ssize_t n = pread(fd, in, sizeof(in), (off_t)pos);

			if (n <= 0)
				break;
			pos += (uint64_t)n;
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		if (zrc == Z_STREAM_END) {
			/* between members: another gzip header or the end */
			unsigned char two[2] = { 0, 0 };
			uint64_t off = pos - z.avail_in;

			if (z.avail_in >= 2)
				memcpy(two, z.next_in, 2);
			else if (pread(fd, two, 2, (off_t)off) != 2)
				two[0] = 0; /* one byte left: not a member */
			if (two[0] != 0x1f || two[1] != 0x8b) {
				at = off + 1;
				break;
			}
			inflateReset(&z);
		}
		z.next_out = out;
		z.avail_out = sizeof(out);
		zrc = inflate(&z, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR)
			break;
	}
	inflateEnd(&z);
	return at;
}

/*
 * A gzip file whose last member's ISIZE (its last 4 bytes) is not the
 * total read may have trailing data or more members: look (once, only
 * then: a single-member file costs 4 bytes).
 */
static int check_gz_tail(struct part_lines *l, struct parsa_err *err)
{
	unsigned char t[4];
	uint32_t isize;
	uint64_t at;
	int fd;

	if (!l->size || l->size < 18 || gzdirect(l->gz))
		return 0;
	fd = open(l->name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, t, 4, (off_t)(l->size - 4)) == 4) {
		isize = (uint32_t)t[0] | (uint32_t)t[1] << 8 |
			(uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
		if (isize == (uint32_t)gztell(l->gz)) {
			close(fd);
			return 0;
		}
	}
	at = gz_trailing_at(fd);
	close(fd);
	if (!at)
		return 0;
	parsa_fail(err, PARSA_EIO,
		   "%s: trailing data after the gzip stream (at byte %llu of %llu)",
		   l->name, (unsigned long long)(at - 1),
		   (unsigned long long)l->size);
	return fail_sticky(l, PARSA_EIO);
}

/* After the gzip stream ended: report a truncated or failed stream, or
 * data after it. */
static int check_gz_end(struct part_lines *l, struct parsa_err *err)
{
	int errnum = Z_OK;
	const char *msg = gzerror(l->gz, &errnum);

	if (errnum == Z_OK || errnum == Z_STREAM_END)
		return check_gz_tail(l, err);
	if (errnum == Z_BUF_ERROR)
		msg = "truncated gzip file (unexpected end of file)";
	parsa_fail(err, PARSA_EIO, "%s: %s", l->name, gz_msg(l, msg));
	return fail_sticky(l, PARSA_EIO);
}

/* Read up to n bytes into dst; returns the count (0 = end) or -1. */
static long fill_from(struct part_lines *l, char *dst, size_t n,
		      struct parsa_err *err)
{
	int got, errnum = Z_OK;
	const char *msg;

	if (!l->gz) {
		size_t left = l->mem_len - l->mem_pos;

		if (n > left)
			n = left;
		if (n)
			memcpy(dst, l->mem + l->mem_pos, n);
		l->mem_pos += n;
		return (long)n;
	}
	if (n > INT_MAX)
		n = INT_MAX;
	got = gzread(l->gz, dst, (unsigned)n);
	if (got >= 0)
		return got;
	msg = gzerror(l->gz, &errnum);
	if (errnum == Z_ERRNO)
		parsa_fail(err, PARSA_EIO, "%s: read error: %s", l->name,
			   strerror(errno));
	else
		parsa_fail(err, PARSA_EIO, "%s: corrupt gzip data: %s",
			   l->name, gz_msg(l, msg));
	fail_sticky(l, PARSA_EIO);
	return -1;
}

long part_lines_read_raw(struct part_lines *l, char *dst, size_t n,
			 struct parsa_err *err)
{
	long got;

	if (l->failed) {
		parsa_fail(err, l->failed, "%s: read after an error", l->name);
		return -1;
	}
	if (l->in_eof)
		return 0;
	got = fill_from(l, dst, n, err);
	if (got == 0) {
		l->in_eof = 1;
		if (l->gz && check_gz_end(l, err))
			return -1;
	}
	return got;
}

/* Make room after the partial line and read more input. */
static int refill(struct part_lines *l, struct parsa_err *err)
{
	long got;

	if (l->beg > 0) {
		memmove(l->buf, l->buf + l->beg, l->end - l->beg);
		l->end -= l->beg;
		l->beg = 0;
	}
	l->scan = l->end;
	if (l->end + 1 > l->cap / 2) {
		size_t ncap = l->cap * 2;
		char *nb = ncap > l->cap ? realloc(l->buf, ncap) : NULL;

		if (!nb) {
			parsa_fail(err, PARSA_ENOMEM,
				   "%s:%lu: out of memory for a line of %zu bytes",
				   l->name, l->lineno + 1, l->end);
			return fail_sticky(l, PARSA_ENOMEM);
		}
		l->buf = nb;
		l->cap = ncap;
	}
	got = fill_from(l, l->buf + l->end, l->cap - 1 - l->end, err);
	if (got < 0)
		return l->failed;
	if (got == 0) {
		l->in_eof = 1;
		return l->gz ? check_gz_end(l, err) : 0;
	}
	l->end += (size_t)got;
	return 0;
}

/* Find the next line in the buffer, reading more as needed; 1 at the end. */
static int find_line(struct part_lines *l, char **line, size_t *len,
		     struct parsa_err *err)
{
	for (;;) {
		char *nl = memchr(l->buf + l->scan, '\n', l->end - l->scan);
		int rc;

		if (nl) {
			*line = l->buf + l->beg;
			*len = (size_t)(nl - *line);
			l->beg = l->scan = (size_t)(nl - l->buf) + 1;
			return 0;
		}
		if (l->in_eof) {
			if (l->beg == l->end)
				return 1;
			*line = l->buf + l->beg;
			*len = l->end - l->beg;
			l->beg = l->scan = l->end;
			return 0;
		}
		rc = refill(l, err);
		if (rc)
			return -rc;
	}
}

int part_lines_next(struct part_lines *l, const char **line, size_t *len,
		    int *eof, struct parsa_err *err)
{
	char *p = NULL, *nul;
	size_t n = 0;
	int rc;

	*line = NULL;
	*len = 0;
	*eof = 0;
	if (l->failed)
		return parsa_fail(err, l->failed, "%s: read after an error",
				  l->name);
	rc = find_line(l, &p, &n, err);
	if (rc < 0)
		return -rc;
	if (rc > 0) {
		*eof = 1;
		return 0;
	}
	l->lineno++;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	p[n] = '\0';
	nul = memchr(p, '\0', n);
	if (nul) {
		parsa_fail_at(err, PARSA_EPARSE, l->name, l->lineno,
			      (unsigned long)(nul - p) + 1,
			      "NUL byte in the line (binary data?)");
		return fail_sticky(l, PARSA_EPARSE);
	}
	*line = p;
	*len = n;
	return 0;
}

unsigned long part_lines_lineno(const struct part_lines *l)
{
	return l->lineno;
}

uint64_t part_lines_bytes(const struct part_lines *l)
{
	z_off_t off;

	if (!l->gz)
		return l->mem_pos;
	off = gzoffset(l->gz);
	return off > 0 ? (uint64_t)off : 0;
}

uint64_t part_lines_size(const struct part_lines *l)
{
	return l->size;
}

const char *part_lines_name(const struct part_lines *l)
{
	return l->name;
}

void part_lines_close(struct part_lines *l)
{
	if (!l)
		return;
	if (l->gz)
		gzclose(l->gz);
	free(l->buf);
	free(l->name);
	free(l);
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int part_line_is_skippable(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && is_blank(line[i]))
		i++;
	return i == len || line[i] == '#';
}
