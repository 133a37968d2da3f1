/*
 * test_base_io: base_write_all writes everything or says why not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base_io.h"
#include "harness.h"

static void test_whole_file(void)
{
	size_t n = (3u << 20) + 7; /* several pipe-sized writes' worth */
	unsigned char *a = malloc(n), *b = malloc(n);
	char path[] = "/tmp/parsa-base-io-XXXXXX";
	int fd = mkstemp(path);
	size_t got = 0;

	REQUIRE(a && b && fd >= 0);
	unlink(path);
	for (size_t i = 0; i < n; i++)
		a[i] = (unsigned char)(i * 131u + 7u);
	CHECK_INT(base_write_all(fd, a, n), ==, 0);
	CHECK_INT(base_write_all(fd, a, 0), ==, 0);
	CHECK_INT(lseek(fd, 0, SEEK_SET), ==, 0);
	while (got < n) {
		ssize_t r = read(fd, b + got, n - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	CHECK_INT(got, ==, n);
	CHECK(memcmp(a, b, n) == 0);
	close(fd);
	free(a);
	free(b);
}

static void test_errors(void)
{
	char c = 'x';
	int fd = open("/dev/full", O_WRONLY);

	errno = 0;
	CHECK_INT(base_write_all(-1, &c, 1), ==, -1);
	CHECK_INT(errno, ==, EBADF);
	if (fd >= 0) { /* a device that is always full */
		errno = 0;
		CHECK_INT(base_write_all(fd, &c, 1), ==, -1);
		CHECK_INT(errno, ==, ENOSPC);
		close(fd);
	}
}

int main(void)
{
	RUN(test_whole_file);
	RUN(test_errors);
	return harness_done();
}
