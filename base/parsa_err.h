/*
 * parsa_err: the one error type of the project.
 *
 * Every fallible function returns an int status: 0 (PARSA_OK) on success, one
 * of enum parsa_status otherwise.  It may also fill a caller-provided
 * struct parsa_err (which may be NULL) with a message; the first error wins,
 * later ones are ignored, so the message names the root cause.  Input errors
 * carry the file, line and column (1-based; 0 = unknown).
 */
#ifndef PARSA_ERR_H
#define PARSA_ERR_H

#include <stddef.h>

enum parsa_status {
	PARSA_OK = 0,
	PARSA_ENOMEM,   /* allocation failed */
	PARSA_EINVAL,   /* bad argument or option */
	PARSA_EIO,      /* file or stream error */
	PARSA_EPARSE,   /* malformed input (file:line:col in the message) */
	PARSA_ERANGE,   /* a number or size out of range */
	PARSA_EMPI,     /* transport / MPI failure */
	PARSA_ESTATE,   /* call not valid in the current state */
	PARSA_ECANCEL,  /* operation cancelled */
	PARSA_NSTATUS
};

#define PARSA_ERR_MSG 512

struct parsa_err {
	int code;               /* 0 until the first error */
	unsigned long line;     /* input line of the error, 0 if none */
	unsigned long col;      /* input column of the error, 0 if none */
	char msg[PARSA_ERR_MSG];
};

#if defined(__GNUC__)
#define PARSA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PARSA_PRINTF(a, b)
#endif

/* Reset *err to "no error".  err may be NULL. */
void parsa_err_clear(struct parsa_err *err);

/*
 * Record an error (if err is non-NULL and holds none yet) and return code,
 * so callers can write `return parsa_fail(err, PARSA_EINVAL, "k=%d", k);`.
 */
int parsa_fail(struct parsa_err *err, int code, const char *fmt, ...)
	PARSA_PRINTF(3, 4);

/* As parsa_fail, with an input position: msg becomes "file:line:col: ...". */
int parsa_fail_at(struct parsa_err *err, int code, const char *file,
		  unsigned long line, unsigned long col, const char *fmt, ...)
	PARSA_PRINTF(6, 7);

/* A static, human-readable name of a status code (never NULL). */
const char *parsa_strerror(int code);

#endif /* PARSA_ERR_H */
