/*
 * base_io: whole writes (see base_io.h).
 */
#include "base_io.h"

#include <errno.h>
#include <unistd.h>

int base_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		size_t chunk = n > (1u << 30) ? (1u << 30) : n;
		ssize_t w = write(fd, p, chunk);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = ENOSPC;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}
