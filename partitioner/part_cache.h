/*
 * part_cache: the binary dataset cache (`.pcsr`), a versioned, checksummed
 * file holding everything a struct part_dataset holds after reading, laid
 * out so that it is used in place through mmap (README "Input formats",
 * `parsa convert`).
 *
 * Layout (version 1; every integer in the byte order of the machine that
 * wrote it, which the endianness marker records):
 *
 *   offset  size  field
 *   0       8     magic "PCSR\r\n\x1a\n"
 *   8       4     format version (1)
 *   12      4     endianness marker 0x01020304
 *   16      4     header size: 128 + 32 * number of sections
 *   20      4     number of sections (3, + 2 with the transpose, + 3
 *                 with the values)
 *   24      8     file size in bytes
 *   32      4,4   n_rows (examples), n_cols (features)
 *   40      8     nnz
 *   48      4,4   format (enum part_format), graph mode (part_graph_mode)
 *   56      5x8   lines, entries, duplicates, self_loops, empty_rows
 *   96      4     flags (bit 0: the transpose, bit 1: the values)
 *   100     20    zero
 *   120     8     checksum of bytes [0, header size) with this field zero
 *   128     32 x  section table: id, element size (4 bytes each), offset,
 *                 length, checksum (8 bytes each)
 *
 * Sections, in this order, each starting at the next multiple of 64 bytes
 * after the previous one ends (the first after the table), the gaps zero,
 * the file ending where the last section ends:
 *   1 row_ptr    uint64 x (n_rows + 1)   (empty when n_rows == 0)
 *   2 col        uint32 x nnz            (sorted within each row)
 *   3 feat_id    uint64 x n_cols         (the input's own feature ids)
 *   4 t_row_ptr  uint64 x (n_cols + 1)   (the transpose: features as rows;
 *   5 t_col      uint32 x nnz             present when flags bit 0 is set)
 *   6 y          int8 x n_rows           (the trainer's labels, +1/-1;
 *   7 line_col   uint32 x nnz             each row's columns in line order;
 *   8 val        float64 x nnz            their values: present when flags
 *                                         bit 1 is set, LIBSVM only)
 * Any other section id, a section out of this order or missing is refused.
 * Example ids are not stored: examples are rows, in the order of README
 * "Input formats", which is all a placement needs.
 *
 * Checksum: a 4-lane chain of base_mix64 over the 8-byte words (the tail
 * zero-padded), seeded with the length; a single changed word always
 * changes it.  Together with the header checksum and the zero gaps, every
 * byte of a valid file is covered: a flipped byte anywhere is refused.
 *
 * Reading (part_cache_read) maps the whole file (MAP_PRIVATE, read/write so
 * that a stray write copies a page instead of faulting), checks the header
 * (magic, endianness, version, then its checksum), every section's bounds,
 * length and checksum, and the CSR's invariants (parsa_graph_validate),
 * then points ds->g.row_ptr,
 * ds->g.col and ds->feat_id into the mapping: nothing is copied.  The
 * counts are copied from the header.  The transpose and the values are
 * not used by the dataset: their checksums are checked and their pages are
 * given back as that goes (madvise MADV_DONTNEED), so they do not stay in
 * the resident set.  With part_read_opts.verify_later those checksums are
 * computed on a thread of their own while the caller works (at 1B
 * nonzeros they cover 16 of the file's 20.8 GB), 1 MiB at a time: a chunk
 * whose pages are all in the page cache through the mapping, any other
 * read with O_DIRECT on the mapped file's descriptor, so that the check
 * does not fill the page cache (where O_DIRECT cannot be had, through the
 * mapping, as before): part_dataset_verify
 * waits for it and gives its verdict, which the partition and eval
 * commands ask for before they write anything, so a corrupt file is still
 * refused; part_cache_read_transpose and part_cache_read_values
 * check their invariants too (the values: labels +1/-1, finite, each row's
 * line_col a permutation of its CSR columns).  The feature ids' pages are
 * given back the same way after their checksum (computed while reading,
 * not on the thread): a partition reads them
 * only to write its .features file, and they come back from the page
 * cache then (8 |V| bytes less resident while it works: 15 MiB at 100M
 * nonzeros).  The mapping belongs to the dataset
 * (ds->map) and part_dataset_release unmaps it.  A file truncated or
 * rewritten in place while mapped would fault on access: writers (including
 * part_cache_write) replace the file by rename, which leaves a mapping of
 * the old file intact.  part_cache_read_mem reads a buffer (the fuzz
 * target; the HTTP service writes uploads to a file first) and copies the
 * arrays into malloc'ed ones, checking the transpose's invariants too.
 *
 * Errors: a file that is not a cache at all, too short, truncated or with
 * trailing bytes, of another version, written on a machine of the other
 * byte order, or whose header, table or a section is corrupt (checksum,
 * bounds, CSR invariants) gives PARSA_EPARSE with "path: what is wrong"
 * (I/O errors PARSA_EIO).  No allocation depends on a number read from the
 * file before that number is checked against the file's size.
 */
#ifndef PART_CACHE_H
#define PART_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "parsa_err.h"
#include "parsa_graph.h"
#include "part_reader.h"

#define PART_CACHE_VERSION 1u
#define PART_CACHE_MAGIC_LEN 8

/* The magic as bytes (8, not NUL-terminated). */
extern const unsigned char part_cache_magic[PART_CACHE_MAGIC_LEN];

/* The trainer's view of a LIBSVM dataset (train_data.h), aligned with the
 * CSR's rows: label (+1/-1) of each example; each row's columns in line
 * order (a permutation of the CSR row's sorted columns) and their values. */
struct part_cache_values {
	const int8_t *y;     /* n_rows */
	const uint32_t *col; /* nnz, row r at [row_ptr[r], row_ptr[r+1]) */
	const double *val;   /* nnz, with col */
};

struct part_cache_write_opts {
	int no_transpose;  /* 1: leave the transpose out */
	const struct part_cache_values *values; /* NULL: none (flags bit 1) */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
};

/*
 * Recompute the checksums of buf[0..len) in place: those of the sections
 * whose place the section table gives inside buf, then the header's.
 * For testing the checks past the checksums (the fuzzer of the reader
 * reseals each input it mutates; a hostile file can carry right
 * checksums, they are not a signature).  1 when buf was resealed, 0 when
 * its header or section table is not usable (too short, no magic, a
 * foreign byte order, a bad section count): buf is then unchanged.
 */
int part_cache_reseal(void *buf, size_t len);

/* 1 when buf[0..len) starts with the cache's magic. */
int part_cache_is_magic(const void *buf, size_t len);

/*
 * 1 when the file at path is a regular file starting with the magic, 0
 * otherwise (also when it cannot be opened: the caller's reader says why).
 * "-" (stdin) is never a cache.
 */
int part_cache_probe(const char *path);

/*
 * Write ds to path: to a temporary file in the same directory (path +
 * ".PID.tmp"), renamed over path when complete (removed on error).  The
 * transpose is computed here (parsa_graph_transpose) unless o says not to.
 * o may be NULL.  0, PARSA_EIO "path: reason", PARSA_ENOMEM.
 */
int part_cache_write(const char *path, const struct part_dataset *ds,
		     const struct part_cache_write_opts *o,
		     struct parsa_err *err);

/*
 * Read the cache at path into *ds (initialised; its old content is
 * released on success only), mapped in place (see above).  o may be NULL;
 * o->format, when not AUTO, must be the cache's format, and a SNAP cache
 * must have been made in o->graph's mode (else PARSA_EINVAL saying so).
 * o->progress is called with (bytes checked, file size).
 */
int part_cache_read(const char *path, const struct part_read_opts *o,
		    struct part_dataset *ds, struct parsa_err *err);

/* As part_cache_read from buf[0..len) (copied; name used in messages). */
int part_cache_read_mem(const char *name, const void *buf, size_t len,
			const struct part_read_opts *o,
			struct part_dataset *ds, struct parsa_err *err);

/*
 * The transpose stored in the cache at path, into *t (initialised;
 * malloc'ed copy).  PARSA_EINVAL when the cache was written without it.
 */
int part_cache_read_transpose(const char *path, struct parsa_graph *t,
			      struct parsa_err *err);

/*
 * The cache at path mapped into *ds (as part_cache_read, any format and
 * mode) and *vals pointing into the same mapping (valid until ds is
 * released).  PARSA_EINVAL when the cache holds no values.
 */
int part_cache_read_values(const char *path, struct part_dataset *ds,
			   struct part_cache_values *vals,
			   struct parsa_err *err);

/* Unmap a mapping made by part_cache_read (part_dataset_release). */
void part_cache_unmap(void *map, size_t len);

/* The deferred check of part_read_opts.verify_later (part_dataset_verify,
 * part_dataset_release): wait for it, free it and return its result (err
 * filled on a mismatch); or stop it early and free it.  c may be NULL. */
int part_cache_check_wait(struct part_cache_check *c, struct parsa_err *err);
void part_cache_check_stop(struct part_cache_check *c);

#endif /* PART_CACHE_H */
