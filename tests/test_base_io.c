/*
 * test_base_io: base_write_all writes everything or says why not;
 * base_tmpfile gives an unlinked file in the directory asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base_io.h"
#include "harness.h"
#include "testutil.h"

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

static void test_tmpfile(void)
{
	char dir[] = "/tmp/parsa-tmpf-XXXXXX", back[8] = "", *old;
	struct stat st, sd;
	int fd;

	REQUIRE(mkdtemp(dir) != NULL);
	fd = base_tmpfile(dir);
	REQUIRE(fd >= 0);
	/* in dir (same file system), unlinked, nothing left in dir */
	CHECK_INT(fstat(fd, &st), ==, 0);
	CHECK_INT(stat(dir, &sd), ==, 0);
	CHECK(st.st_dev == sd.st_dev);
	CHECK_INT(st.st_nlink, ==, 0);
	CHECK_INT(tu_dir_entries(dir), ==, 0);
	CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	CHECK_INT(base_write_all(fd, "spill", 5), ==, 0);
	CHECK_INT(pread(fd, back, 5, 0), ==, 5);
	CHECK_STR(back, "spill");
	close(fd);
	/* NULL: $TMPDIR */
	old = getenv("TMPDIR");
	old = old ? strdup(old) : NULL;
	setenv("TMPDIR", dir, 1);
	fd = base_tmpfile(NULL);
	CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == sd.st_dev &&
	      st.st_nlink == 0);
	if (fd >= 0)
		close(fd);
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
	/* a directory that is not there: -1, nothing made */
	CHECK_INT(base_tmpfile("/nonexistent/parsa-dir"), ==, -1);
	CHECK_INT(tu_dir_entries(dir), ==, 0);
	rmdir(dir);
}

int main(void)
{
	RUN(test_whole_file);
	RUN(test_errors);
	RUN(test_tmpfile);
	return harness_done();
}
