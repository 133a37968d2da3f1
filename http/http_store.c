/*
 * http_store: atomic, durable files (see http_store.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_store.h"

#include "base_io.h"

static atomic_uint tmp_counter;

int http_store_mkdirs(const char *path, struct parsa_err *err)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return parsa_fail(err, PARSA_EIO, "bad directory name '%s'", path);
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];

		buf[i] = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return parsa_fail(err, PARSA_EIO, "%s: cannot create "
					  "directory: %s", buf, strerror(errno));
		buf[i] = c;
	}
	return 0;
}

static int sync_dir_of(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd, rc;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + (slash == path)), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int http_store_begin(struct http_store_file *f, const char *path,
		     struct parsa_err *err)
{
	unsigned n = atomic_fetch_add(&tmp_counter, 1);

	f->fd = -1;
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s", path) >= sizeof(f->path))
		return parsa_fail(err, PARSA_EIO, "path too long: %s", path);
	snprintf(f->tmp, sizeof(f->tmp), "%s.tmp.%ld.%u", path, (long)getpid(), n);
	f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return parsa_fail(err, PARSA_EIO, "%s: cannot create: %s",
				  f->tmp, strerror(errno));
	return 0;
}

int http_store_write(struct http_store_file *f, const void *buf, size_t len,
		     struct parsa_err *err)
{
	if (base_write_all(f->fd, buf, len))
		return parsa_fail(err, PARSA_EIO, "%s: write failed: %s",
				  f->tmp, strerror(errno));
	return 0;
}

void http_store_abort(struct http_store_file *f)
{
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
		unlink(f->tmp);
	}
}

int http_store_commit(struct http_store_file *f, struct parsa_err *err)
{
	int rc = 0;

	if (fsync(f->fd) != 0)
		rc = parsa_fail(err, PARSA_EIO, "%s: fsync failed: %s", f->tmp,
				strerror(errno));
	if (close(f->fd) != 0 && rc == 0)
		rc = parsa_fail(err, PARSA_EIO, "%s: close failed: %s", f->tmp,
				strerror(errno));
	f->fd = -1;
	if (rc == 0 && rename(f->tmp, f->path) != 0)
		rc = parsa_fail(err, PARSA_EIO, "%s: rename failed: %s",
				f->path, strerror(errno));
	if (rc) {
		unlink(f->tmp);
		return rc;
	}
	sync_dir_of(f->path);
	return 0;
}

int http_store_put(const char *path, const void *buf, size_t len,
		   struct parsa_err *err)
{
	struct http_store_file f;
	int rc = http_store_begin(&f, path, err);

	if (rc == 0)
		rc = http_store_write(&f, buf, len, err);
	if (rc == 0)
		return http_store_commit(&f, err);
	http_store_abort(&f);
	return rc;
}

int http_store_put_json(const char *path, const json_t *j,
			struct parsa_err *err)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	int rc;

	if (!s)
		return parsa_fail(err, PARSA_ENOMEM, "out of memory (json)");
	rc = http_store_put(path, s, strlen(s), err);
	free(s);
	return rc;
}

json_t *http_store_get_json(const char *path, struct parsa_err *err)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);

	if (!j) {
		parsa_fail(err, access(path, R_OK) ? PARSA_EIO : PARSA_EPARSE,
			   "%s:%d:%d: %s", path, je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		parsa_fail(err, PARSA_EPARSE, "%s: not a JSON object", path);
		return NULL;
	}
	return j;
}

int http_store_sync(const char *path, struct parsa_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return parsa_fail(err, PARSA_EIO, "%s: %s", path, strerror(errno));
	rc = fsync(fd);
	close(fd);
	if (rc != 0)
		return parsa_fail(err, PARSA_EIO, "%s: fsync: %s", path,
				  strerror(errno));
	sync_dir_of(path);
	return 0;
}

int http_store_slurp(const char *path, char **buf, size_t *len,
		     struct parsa_err *err)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	*buf = NULL;
	*len = 0;
	if (!f)
		return parsa_fail(err, PARSA_EIO, "%s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return parsa_fail(err, PARSA_EIO, "%s: cannot seek", path);
	}
	p = malloc((size_t)n + 1);
	if (!p) {
		fclose(f);
		return parsa_fail(err, PARSA_ENOMEM, "%s: out of memory", path);
	}
	if (fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		fclose(f);
		return parsa_fail(err, PARSA_EIO, "%s: read failed", path);
	}
	fclose(f);
	p[n] = '\0';
	*buf = p;
	*len = (size_t)n;
	return 0;
}

/* NAME.tmp.PID.N: a temporary file of http_store_begin; .NAME.tmp.PID
 * or .NAME.tmp.PID.I: one of part_out's (partitioner/part_out.c: the
 * placement files a job writes). */
static int is_tmp_name(const char *name)
{
	const char *t = NULL, *p = name;
	unsigned dots = 0;

	while ((p = strstr(p, ".tmp.")) != NULL) /* the last ".tmp." */
		t = p++;
	if (!t || t == name)
		return 0;
	for (p = t + 5; *p; p++) {
		if (*p == '.')
			dots++;
		else if (*p < '0' || *p > '9')
			return 0;
	}
	if (p[-1] == '.' || t[5] == '.' || t[5] == '\0')
		return 0;
	return dots == 1 || (dots == 0 && name[0] == '.' && t > name + 1);
}

int http_store_sweep(const char *dir, unsigned *files, uint64_t *bytes,
		     struct parsa_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned nf = 0;
	uint64_t nb = 0;

	if (!d)
		return parsa_fail(err, PARSA_EIO, "%s: cannot open: %s", dir,
				  strerror(errno));
	while ((e = readdir(d)) != NULL) {
		char path[4400];
		struct stat sb;

		if (!is_tmp_name(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
		    unlink(path) != 0)
			continue;
		nf++;
		nb += (uint64_t)sb.st_size;
	}
	closedir(d);
	if (files)
		*files = nf;
	if (bytes)
		*bytes = nb;
	return 0;
}

uint64_t http_store_get_last_id(const char *dir)
{
	char path[4400], *buf = NULL;
	size_t len = 0;
	unsigned long long v = 0;
	struct parsa_err err;

	snprintf(path, sizeof(path), "%s/last-id", dir);
	parsa_err_clear(&err);
	if (http_store_slurp(path, &buf, &len, &err) == 0 &&
	    sscanf(buf, "%llu", &v) != 1)
		v = 0;
	free(buf);
	return (uint64_t)v;
}

int http_store_put_last_id(const char *dir, uint64_t v, struct parsa_err *err)
{
	char path[4400], text[32];
	int n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v);

	snprintf(path, sizeof(path), "%s/last-id", dir);
	return http_store_put(path, text, (size_t)n, err);
}

int http_store_full(const struct parsa_err *err)
{
	return err && err->code == PARSA_EIO &&
	       (strstr(err->msg, strerror(ENOSPC)) != NULL ||
		strstr(err->msg, strerror(EDQUOT)) != NULL);
}
