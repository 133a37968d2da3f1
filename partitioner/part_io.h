/*
 * part_io: a buffered line reader over plain or gzip files and over memory.
 *
 * Files go through zlib's gzopen/gzread, which reads gzip and plain files
 * alike (a plain file is passed through unchanged), with a 1 MiB zlib buffer
 * and a line buffer of at least 1 MiB that grows to hold a line of any
 * length.  part_lines_open_mem reads an in-memory buffer the same way (the
 * fuzz targets and uploads use it); the buffer is not copied and must stay
 * valid until part_lines_close.
 *
 * part_lines_next returns one line at a time, without its '\n' and without a
 * trailing '\r' (CRLF files read like LF files), NUL-terminated, valid until
 * the next call.  A last line without '\n' is returned as well.
 *
 * Errors:
 *   - a file that cannot be opened, a read error, a corrupt or truncated
 *     gzip stream: PARSA_EIO with "path: reason";
 *   - a NUL byte inside a line: PARSA_EPARSE with "path:line:col: ..." (col
 *     is the 1-based byte column of the NUL);
 *   - out of memory: PARSA_ENOMEM.
 * After an error every further part_lines_next fails the same way.
 *
 * Not thread-safe: one reader per thread.
 */
#ifndef PART_IO_H
#define PART_IO_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"

/* The line buffer's first size for files: also the first read's size. */
#define PART_LINES_CHUNK (1u << 20)

struct part_lines;

/*
 * Open path for reading lines ("-" = standard input, named "<stdin>").
 * On success *out is the reader (free with part_lines_close) and 0 is
 * returned; on failure *out is NULL.
 */
int part_lines_open(struct part_lines **out, const char *path,
		    struct parsa_err *err);

/*
 * Read lines from buf[0..len) (not copied; may contain anything).  name is
 * copied and used in error messages (NULL = "<memory>").  Gzip data in
 * memory is not decompressed.
 */
int part_lines_open_mem(struct part_lines **out, const char *name,
			const char *buf, size_t len, struct parsa_err *err);

/*
 * Next line: on success returns 0 and either sets *line and *len (and *eof = 0)
 * or, at the end of the input, *eof = 1 (and *line = NULL, *len = 0).
 */
int part_lines_next(struct part_lines *l, const char **line, size_t *len,
		    int *eof, struct parsa_err *err);

/*
 * Raw bytes instead of lines, for a reader that splits lines itself (the
 * parallel LIBSVM reader, part_preader.h): read up to n bytes (gzip
 * decompressed) into dst with one read of the source, as part_lines_next
 * does when it refills its buffer.  Returns the count, 0 at the end (after
 * checking that a gzip stream ended cleanly), or -1 with *err set (PARSA_EIO,
 * the same message part_lines_next gives).  Do not mix with part_lines_next
 * on one reader.
 */
long part_lines_read_raw(struct part_lines *l, char *dst, size_t n,
			 struct parsa_err *err);

/* 1-based number of the line last returned (0 before the first). */
unsigned long part_lines_lineno(const struct part_lines *l);

/* Compressed (or raw) bytes consumed so far, for progress reports. */
uint64_t part_lines_bytes(const struct part_lines *l);

/* Size of the file in bytes (of the buffer for memory), 0 if unknown. */
uint64_t part_lines_size(const struct part_lines *l);

/* The name used in messages: the path, "<stdin>" or the memory name. */
const char *part_lines_name(const struct part_lines *l);

/* Close and free (l may be NULL). */
void part_lines_close(struct part_lines *l);

/*
 * 1 when line[0..len) is blank (only spaces, tabs, '\r', '\v', '\f') or a
 * comment (its first non-blank byte is '#'), else 0.  Every reader skips
 * such lines; part_shards uses the same rule to find LIBSVM data lines.
 */
int part_line_is_skippable(const char *line, size_t len);

#endif /* PART_IO_H */
