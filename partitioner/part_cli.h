/*
 * part_cli: option-value parsers shared by the commands (partition, eval,
 * gen, serve, train).  Each returns 0 and sets *out, or -1 (out untouched)
 * for anything but the whole string being a valid value in range.
 */
#ifndef PART_CLI_H
#define PART_CLI_H

#include <stdint.h>

/* Decimal digits only (no sign, no blanks), lo <= value <= hi. */
int part_cli_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* A number as strtod reads it, finite or not, with lo <= value <= hi. */
int part_cli_dbl(const char *s, double lo, double hi, double *out);

/* A byte size: digits and an optional K, M, G or T suffix (powers of
 * 1024), optionally followed by "B" or "iB" ("64M", "2GiB", "512B"). */
int part_cli_size(const char *s, uint64_t *out);

#endif /* PART_CLI_H */
