/*
 * base_io: whole writes, temporary files (see base_io.h).
 */
#include "base_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

int base_tmpfile(const char *dir)
{
	char path[4096];
	int fd;

	if (!dir || !*dir)
		dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
#endif
	if (snprintf(path, sizeof(path), "%s/parsa-tmp-XXXXXX", dir) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path); /* gone from the directory at once */
	return fd;
}
