/*
 * part_out: the one way every command writes a file the user named.
 *
 * part_out_open(o, path) decides what writing path means, before anything
 * is written:
 *
 *   - a regular file, or no file: written to a temporary file in the same
 *     directory (".<name>.tmp.<pid>", created exclusively, with the old
 *     file's mode), which part_out_commit fsyncs and renames onto path, so
 *     path is at every moment either the old file or the whole new one;
 *   - a symbolic link: followed (up to 40 links, relative ones from their
 *     own directory) and its final target replaced as above; the link
 *     stays a link;
 *   - /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N (and the
 *     process's own /proc/PID/fd/N): the open descriptor N is written
 *     (a copy of it), whatever it is (terminal, pipe, redirected file);
 *   - a character or block device, a FIFO, a socket or any other special
 *     file: opened and written directly (never replaced, never created);
 *     a FIFO's open waits for its reader as with any Unix writer;
 *   - a directory: refused, PARSA_EIO "PATH: is a directory (a file name
 *     is needed)".
 *
 * Then write through o->f (a stdio stream; gzip writers can gzdopen a
 * dup() of fileno(o->f)) and end with exactly one of:
 *
 *   part_out_commit  flush, fsync and close; rename the temporary file
 *                    onto the target (and fsync the directory); free;
 *   part_out_abort   close, remove the temporary file, free (the target
 *                    is left as it was; a direct write cannot be undone).
 *
 * part_out_close (optional, before commit) flushes, fsyncs and closes the
 * stream without renaming, for writers that complete many files before
 * publishing any of them (shards, placement files): commit later renames.
 *
 * Errors name the path as the user gave it: PARSA_EIO "PATH: reason",
 * PARSA_ENOMEM.  Not thread-safe per object; distinct objects may be used
 * from different threads (temporary names never collide: O_EXCL, retried).
 */
#ifndef PART_OUT_H
#define PART_OUT_H

#include <stdio.h>

#include "parsa_err.h"

struct part_out {
	FILE *f;        /* write here (NULL after close) */
	char *name;     /* the path as given, for messages */
	char *target;   /* the file replaced; NULL for a direct write */
	char *tmp;      /* its temporary file; NULL for a direct write */
};

/* Open path for writing as described above.  On failure *o is zeroed. */
int part_out_open(struct part_out *o, const char *path,
		  struct parsa_err *err);

/* Flush, fsync (temporary files) and close o->f; no rename yet. */
int part_out_close(struct part_out *o, struct parsa_err *err);

/* Close (if open), rename onto the target, free.  On failure as abort. */
int part_out_commit(struct part_out *o, struct parsa_err *err);

/* Close (if open), remove the temporary file, free.  o may be zeroed. */
void part_out_abort(struct part_out *o);

/*
 * Check, without writing, that part_out_open(path) could succeed: path is
 * not a directory, and for a file to be replaced its directory exists and
 * is writable (a special file must be writable).  For checks before long
 * work; PARSA_EIO "PATH: reason".
 */
int part_out_check(const char *path, struct parsa_err *err);

/*
 * Check that files can be created in dir: it is a writable directory, or
 * it does not exist and its nearest existing ancestor is one (mkdir -p
 * would create it).  PARSA_EIO "DIR: reason".
 */
int part_out_check_dir(const char *dir, struct parsa_err *err);

#endif /* PART_OUT_H */
