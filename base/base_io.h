/*
 * base_io: whole writes to a file descriptor.
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

#endif /* BASE_IO_H */
