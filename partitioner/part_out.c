/*
 * part_out: atomic replacement of regular files, direct writes to special
 * files (see part_out.h).
 */
#include "part_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_MAX_LINKS 40
#define OUT_TMP_TRIES 100

enum out_kind { OUT_REPLACE, OUT_FD, OUT_SPECIAL };

struct resolved {
	enum out_kind kind;
	char *path;       /* OUT_REPLACE: the target; OUT_SPECIAL: the file */
	int fd;           /* OUT_FD: the descriptor to copy */
	int exists;       /* OUT_REPLACE: the target exists (st is valid) */
	struct stat st;
};

/* "DIGITS" of at most 9 digits as an int, or -1. */
static int small_uint(const char *s)
{
	int v = 0, n = 0;

	for (; *s; s++, n++) {
		if (*s < '0' || *s > '9' || n == 9)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return n ? v : -1;
}

/* The descriptor a path names (/dev/stdout, /proc/self/fd/3 ...), or -1. */
static int fd_alias(const char *p)
{
	char own[48];

	if (strcmp(p, "/dev/stdout") == 0)
		return 1;
	if (strcmp(p, "/dev/stderr") == 0)
		return 2;
	if (strncmp(p, "/dev/fd/", 8) == 0)
		return small_uint(p + 8);
	if (strncmp(p, "/proc/self/fd/", 14) == 0)
		return small_uint(p + 14);
	snprintf(own, sizeof(own), "/proc/%ld/fd/", (long)getpid());
	if (strncmp(p, own, strlen(own)) == 0)
		return small_uint(p + strlen(own));
	return -1;
}

/* The directory part of p ("." when none), in a new string. */
static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');
	size_t n;
	char *d;

	if (!s)
		return strdup(".");
	n = s == p ? 1 : (size_t)(s - p);
	d = malloc(n + 1);
	if (d) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

/* Follow links from path to what is written (see part_out.h). */
static int resolve(const char *path, struct resolved *r,
		   struct parsa_err *err)
{
	char *p = strdup(path);
	int hops;

	memset(r, 0, sizeof(*r));
	if (!p)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	for (hops = 0; hops <= OUT_MAX_LINKS; hops++) {
		int fd = fd_alias(p);
		char link[4096];
		ssize_t n;

		if (fd >= 0) {
			r->kind = OUT_FD;
			r->fd = fd;
			free(p);
			return 0;
		}
		if (lstat(p, &r->st) != 0) {
			if (errno != ENOENT) {
				int e = errno;

				free(p);
				return parsa_fail(err, PARSA_EIO, "%s: %s",
						  path, strerror(e));
			}
			r->kind = OUT_REPLACE;
			r->path = p;
			return 0;
		}
		if (S_ISDIR(r->st.st_mode)) {
			free(p);
			return parsa_fail(err, PARSA_EIO,
					  "%s: is a directory (a file name is needed)",
					  path);
		}
		if (S_ISREG(r->st.st_mode)) {
			r->kind = OUT_REPLACE;
			r->exists = 1;
			r->path = p;
			return 0;
		}
		if (!S_ISLNK(r->st.st_mode)) {
			r->kind = OUT_SPECIAL;
			r->path = p;
			return 0;
		}
		n = readlink(p, link, sizeof(link) - 1);
		if (n < 0 || (size_t)n >= sizeof(link) - 1) {
			int e = n < 0 ? errno : ENAMETOOLONG;

			free(p);
			return parsa_fail(err, PARSA_EIO, "%s: %s", path,
					  strerror(e));
		}
		link[n] = '\0';
		if (link[0] == '/') {
			free(p);
			p = strdup(link);
		} else {
			char *d = dir_of(p);
			size_t dn = d ? strlen(d) : 0;
			char *q = d ? malloc(dn + (size_t)n + 2) : NULL;

			if (q)
				snprintf(q, dn + (size_t)n + 2, "%s/%s", d,
					 link);
			free(d);
			free(p);
			p = q;
		}
		if (!p)
			return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	free(p);
	return parsa_fail(err, PARSA_EIO, "%s: %s", path, strerror(ELOOP));
}

/* Create target's temporary file: its dir, ".<base>.tmp.<pid>[.<i>]". */
static int make_tmp(struct part_out *o, const struct resolved *r,
		    struct parsa_err *err)
{
	const char *t = r->path, *s = strrchr(t, '/');
	size_t dn = s ? (size_t)(s - t) + 1 : 0, n = strlen(t) + 48;
	int fd = -1;

	o->tmp = malloc(n);
	if (!o->tmp)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	for (int i = 0; i < OUT_TMP_TRIES && fd < 0; i++) {
		int m = snprintf(o->tmp, n, "%.*s.%s.tmp.%ld", (int)dn, t,
				 t + dn, (long)getpid());

		if (i)
			snprintf(o->tmp + m, n - (size_t)m, ".%d", i);
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			  0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int e = errno;

		free(o->tmp);
		o->tmp = NULL;
		return parsa_fail(err, PARSA_EIO, "%s: cannot create: %s",
				  o->name, strerror(e));
	}
	if (r->exists) {
		/* keep the replaced file's owner and mode (best effort) */
		if (fchown(fd, r->st.st_uid, r->st.st_gid) != 0) {
			/* not root: the file becomes ours */
		}
		if (fchmod(fd, r->st.st_mode & 07777) != 0) {
			/* the umask's mode stays */
		}
	}
	o->f = fdopen(fd, "wb");
	if (!o->f) {
		int e = errno;

		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return parsa_fail(err, PARSA_ENOMEM, "%s: %s", o->name,
				  strerror(e));
	}
	return 0;
}

int part_out_open(struct part_out *o, const char *path,
		  struct parsa_err *err)
{
	struct resolved r;
	int rc, fd = -1;

	memset(o, 0, sizeof(*o));
	if (!path || !*path)
		return parsa_fail(err, PARSA_EINVAL, "no output path");
	rc = resolve(path, &r, err);
	if (rc)
		return rc;
	o->name = strdup(path);
	if (!o->name) {
		free(r.path);
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	}
	if (r.kind == OUT_REPLACE) {
		o->target = r.path;
		rc = make_tmp(o, &r, err);
	} else {
		if (r.kind == OUT_FD)
			fd = fcntl(r.fd, F_DUPFD_CLOEXEC, 3);
		else
			fd = open(r.path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			rc = parsa_fail(err, PARSA_EIO, "%s: cannot write: %s",
					path, strerror(errno));
		else if (!(o->f = fdopen(fd, "wb"))) {
			rc = parsa_fail(err, PARSA_ENOMEM, "%s: %s", path,
					strerror(errno));
			close(fd);
		}
		free(r.path);
	}
	if (rc)
		part_out_abort(o);
	return rc;
}

int part_out_close(struct part_out *o, struct parsa_err *err)
{
	int bad, e = 0;

	if (!o->f)
		return 0;
	bad = fflush(o->f) != 0 || ferror(o->f);
	if (bad)
		e = errno;
	if (!bad && o->tmp && fsync(fileno(o->f)) != 0) {
		bad = 1;
		e = errno;
	}
	if (fclose(o->f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	o->f = NULL;
	if (bad)
		return parsa_fail(err, PARSA_EIO, "%s: write error: %s",
				  o->name ? o->name : "output",
				  strerror(e ? e : EIO));
	return 0;
}

/* fsync the directory holding path, so the rename is durable (best effort). */
static void sync_dir(const char *path)
{
	char *d = dir_of(path);
	int fd = d ? open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (fd >= 0) {
		if (fsync(fd) != 0) {
			/* some file systems refuse it; the data is synced */
		}
		close(fd);
	}
	free(d);
}

int part_out_commit(struct part_out *o, struct parsa_err *err)
{
	int rc = part_out_close(o, err);

	if (!rc && o->tmp) {
		if (rename(o->tmp, o->target) != 0)
			rc = parsa_fail(err, PARSA_EIO, "%s: cannot replace: %s",
					o->name, strerror(errno));
		else {
			sync_dir(o->target);
			free(o->tmp);
			o->tmp = NULL;
		}
	}
	part_out_abort(o);
	return rc;
}

void part_out_abort(struct part_out *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->target);
	free(o->name);
	memset(o, 0, sizeof(*o));
}

int part_out_check(const char *path, struct parsa_err *err)
{
	struct resolved r;
	int rc;

	if (!path || !*path)
		return parsa_fail(err, PARSA_EINVAL, "no output path");
	rc = resolve(path, &r, err);
	if (rc)
		return rc;
	if (r.kind == OUT_REPLACE) {
		char *d = dir_of(r.path);
		struct stat st;

		if (!d)
			rc = parsa_fail(err, PARSA_ENOMEM, "out of memory");
		else if (stat(d, &st) != 0)
			rc = parsa_fail(err, PARSA_EIO, "%s: directory %s: %s",
					path, d, strerror(errno));
		else if (!S_ISDIR(st.st_mode))
			rc = parsa_fail(err, PARSA_EIO,
					"%s: %s is not a directory", path, d);
		else if (access(d, W_OK | X_OK) != 0)
			rc = parsa_fail(err, PARSA_EIO,
					"%s: directory %s is not writable: %s",
					path, d, strerror(errno));
		free(d);
	} else if (r.kind == OUT_SPECIAL && access(r.path, W_OK) != 0) {
		rc = parsa_fail(err, PARSA_EIO, "%s: cannot write: %s", path,
				strerror(errno));
	}
	free(r.path);
	return rc;
}

int part_out_check_dir(const char *dir, struct parsa_err *err)
{
	char *p;
	struct stat st;
	int rc = 0;

	if (!dir || !*dir)
		return parsa_fail(err, PARSA_EINVAL, "no output directory");
	p = strdup(dir);
	if (!p)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory");
	/* climb to the nearest existing ancestor */
	while (stat(p, &st) != 0) {
		char *s;

		if (errno != ENOENT) {
			rc = parsa_fail(err, PARSA_EIO, "%s: %s", dir,
					strerror(errno));
			break;
		}
		s = strrchr(p, '/');
		while (s && s > p && s[-1] == '/')
			s--;
		if (strcmp(p, ".") == 0 || strcmp(p, "/") == 0) {
			rc = parsa_fail(err, PARSA_EIO, "%s: %s", dir,
					strerror(ENOENT));
			break;
		}
		if (!s) {
			p[0] = '.';
			p[1] = '\0';
		} else if (s == p) {
			p[1] = '\0';
		} else {
			*s = '\0';
		}
	}
	if (!rc && !S_ISDIR(st.st_mode))
		rc = parsa_fail(err, PARSA_EIO, "%s: %s is not a directory", dir,
				p);
	else if (!rc && access(p, W_OK | X_OK) != 0)
		rc = parsa_fail(err, PARSA_EIO, "%s: %s is not writable: %s",
				dir, strcmp(p, dir) == 0 ? "the directory" : p,
				strerror(errno));
	free(p);
	return rc;
}
