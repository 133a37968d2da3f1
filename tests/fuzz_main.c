/*
 * fuzz_main: a standalone driver for the libFuzzer targets (tests/fuzz_*.c)
 * when they are built without -fsanitize=fuzzer (gcc, `make`).
 *
 *   fuzz_xxx PATH...    PATH = a corpus directory (its regular files, sorted
 *                       by name, not recursing) or a single file
 *
 * Every file is read and passed once to LLVMFuzzerTestOneInput.  The program
 * prints "N passed, 0 failed" (N = files replayed) and exits 0; a crash or a
 * sanitizer report is the failure.  A missing or empty corpus gives
 * "0 passed, 0 failed" with a note.  A file that cannot be read is reported
 * and counted as failed.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int passed, failed;

/* Read the whole file (malloc'd; NULL on error). */
static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *nb;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*size = n;
	return buf;
}

static void replay_file(const char *path)
{
	size_t size = 0;
	uint8_t *buf = slurp(path, &size);

	if (!buf) {
		fprintf(stderr, "fuzz_main: cannot read %s\n", path);
		failed++;
		return;
	}
	/* a copy of exactly size bytes, so ASan sees reads past the end */
	uint8_t *exact = malloc(size ? size : 1);

	if (!exact) {
		free(buf);
		failed++;
		return;
	}
	memcpy(exact, buf, size);
	free(buf);
	LLVMFuzzerTestOneInput(exact, size);
	free(exact);
	passed++;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void replay_dir(const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name);

	if (n < 0) {
		printf("note: cannot read corpus directory %s\n", dir);
		return;
	}
	for (int i = 0; i < n; i++) {
		size_t len = strlen(dir) + strlen(ents[i]->d_name) + 2;
		char *path = malloc(len);
		struct stat st;

		if (path) {
			snprintf(path, len, "%s/%s", dir, ents[i]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
				replay_file(path);
			free(path);
		}
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	struct stat st;

	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0)
			printf("note: corpus %s not found\n", argv[i]);
		else if (S_ISDIR(st.st_mode))
			replay_dir(argv[i]);
		else
			replay_file(argv[i]);
	}
	if (passed + failed == 0)
		printf("note: no corpus files replayed (usage: %s DIR|FILE...)\n",
		       argv[0]);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
