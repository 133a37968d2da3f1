/*
 * parsa_err: first-error-wins status recording (see parsa_err.h).
 */
#include "parsa_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void parsa_err_clear(struct parsa_err *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
}

static void err_vset(struct parsa_err *err, int code, const char *prefix,
		     const char *fmt, va_list ap)
{
	size_t n;

	if (!err || err->code != 0)
		return;
	err->code = code;
	n = (size_t)snprintf(err->msg, sizeof(err->msg), "%s", prefix);
	if (n >= sizeof(err->msg))
		return;
	vsnprintf(err->msg + n, sizeof(err->msg) - n, fmt, ap);
}

int parsa_fail(struct parsa_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, code, "", fmt, ap);
	va_end(ap);
	return code;
}

int parsa_fail_at(struct parsa_err *err, int code, const char *file,
		  unsigned long line, unsigned long col, const char *fmt, ...)
{
	char prefix[PARSA_ERR_MSG / 2];
	va_list ap;

	if (err && err->code == 0) {
		err->line = line;
		err->col = col;
	}
	snprintf(prefix, sizeof(prefix), "%s:%lu:%lu: ", file ? file : "<input>",
		 line, col);
	va_start(ap, fmt);
	err_vset(err, code, prefix, fmt, ap);
	va_end(ap);
	return code;
}

const char *parsa_strerror(int code)
{
	static const char *const names[PARSA_NSTATUS] = {
		[PARSA_OK] = "success",
		[PARSA_ENOMEM] = "out of memory",
		[PARSA_EINVAL] = "invalid argument",
		[PARSA_EIO] = "input/output error",
		[PARSA_EPARSE] = "malformed input",
		[PARSA_ERANGE] = "value out of range",
		[PARSA_EMPI] = "transport error",
		[PARSA_ESTATE] = "invalid state",
		[PARSA_ECANCEL] = "cancelled",
	};

	if (code < 0 || code >= PARSA_NSTATUS)
		return "unknown error";
	return names[code];
}
