/*
 * part_preader: the fast, parallel LIBSVM reader behind part_read_file.
 *
 * The result is exactly that of the line-by-line reader (part_read_lines,
 * the contract of part_reader.h): the same rows in file order, the same
 * compact feature ids (order of first appearance), the same counters, and
 * on malformed input the same error (code and text, file:line:col of the
 * first bad line in file order).  tests/test_preader.c checks it on every
 * bundled sample and the whole bad-input corpus.
 *
 * How.  A plain regular file is mapped (private, so the parser may cut
 * the odd line in place): a batch is a range of whole lines of the map,
 * whose pages the reading thread reads in while the previous batch is
 * parsed, and which leave the resident set once parsed; the last line,
 * if no '\n' ends it, is a batch of its own.  Anything else (gzip, a
 * pipe, standard input, a file that cannot be mapped) is read: one
 * reading thread fills batches of whole lines (gzip inflated there), with
 * reads of the same sizes as part_lines' buffer makes, so a corrupt or
 * truncated gzip stream fails after the same lines.  A mapped file must
 * not shrink while it is read (the pages past its new end would fault:
 * SIGBUS), as with the binary cache.  Each batch
 * is cut at line boundaries into chunks that up to `threads` threads parse
 * at once (a hand-written integer parser: values are only checked, plain
 * decimals by hand, anything else through the full parser
 * part_libsvm_row); each chunk keeps its own row lengths, its columns as
 * chunk-local ids and its distinct features in order of first appearance,
 * with a row's repeated indices dropped there.  The calling thread then
 * merges the chunks in file order (global compact ids for each chunk's new
 * features, row offsets, the first error), and the threads write the
 * translated, sorted rows straight into the CSR.  The first bad line is
 * parsed again by part_libsvm_row with its file line number, so its message
 * is the line reader's own.
 *
 * Memory: the CSR (grown geometrically) plus two batches of text (the one
 * being parsed and the one being read or mapped) and their chunks' arrays, about
 * 16 MiB of text per thread by default (less for files under 384 MB per
 * thread: the batches then stay near 1/24 of the file, 1/96 where that
 * makes chunks under 1 MiB, with chunks of at least 64 KiB), and per
 * thread a direct array of
 * 8 bytes per feature index up to the largest one seen below 2^24 (at most
 * 128 MiB; larger indices go to a hash table).  Progress is reported after
 * each batch.
 */
#ifndef PART_PREADER_H
#define PART_PREADER_H

#include "part_reader.h"

/*
 * Read the LIBSVM file at path ("-" = stdin; gzip or plain) into *ds as
 * part_read_file does with format LIBSVM; o->threads (0 = part_pool_cpus())
 * and o->chunk (0 = default) are used, o->format is not looked at.
 */
int part_preader_libsvm(const char *path, const struct part_read_opts *o,
			struct part_dataset *ds, struct parsa_err *err);

#endif /* PART_PREADER_H */
