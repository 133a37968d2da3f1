/*
 * base_io: whole writes to a file descriptor; unlinked temporary files.
 */
#ifndef BASE_IO_H
#define BASE_IO_H

#include <stddef.h>

/*
 * Write all n bytes of buf to fd, retrying short writes and EINTR, in
 * pieces of at most 1 GiB.  Returns 0, or -1 with errno set (ENOSPC when
 * a write wrote nothing without an error).
 */
int base_write_all(int fd, const void *buf, size_t n);

/*
 * An unlinked temporary file in dir (NULL or "": $TMPDIR, else /tmp),
 * open for reading and writing, close-on-exec: O_TMPFILE where the file
 * system has it, else mkstemp and unlink at once, so the file disappears
 * with its last descriptor or mapping, also after a crash.  -1 with errno
 * when dir cannot take one.
 */
int base_tmpfile(const char *dir);

#endif /* BASE_IO_H */
