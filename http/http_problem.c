/*
 * http_problem: problem+json bodies and the parsa-status -> HTTP-status
 * table (see http_problem.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parsa_err.h"
#include "http_problem.h"

static const struct {
	int status;
	const char *phrase;
} phrases[] = {
	{200, "OK"}, {201, "Created"}, {202, "Accepted"}, {204, "No Content"},
	{304, "Not Modified"},
	{400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"},
	{404, "Not Found"}, {405, "Method Not Allowed"}, {409, "Conflict"},
	{411, "Length Required"}, {413, "Content Too Large"},
	{415, "Unsupported Media Type"}, {422, "Unprocessable Content"},
	{500, "Internal Server Error"}, {501, "Not Implemented"},
	{503, "Service Unavailable"}, {505, "HTTP Version Not Supported"},
	{507, "Insufficient Storage"},
};

const char *http_status_phrase(int status)
{
	for (size_t i = 0; i < sizeof(phrases) / sizeof(*phrases); i++)
		if (phrases[i].status == status)
			return phrases[i].phrase;
	return "Error";
}

int http_status_of_parsa(int code)
{
	switch (code) {
	case PARSA_EINVAL:
	case PARSA_ERANGE:
	case PARSA_EPARSE:
		return 422;
	case PARSA_ENOMEM:
		return 503;
	case PARSA_ESTATE:
	case PARSA_ECANCEL:
		return 409;
	default:
		return 500;
	}
}

/* "Not Found" -> "not-found" into buf. */
static void slugify(const char *title, char *buf, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; title[i] && j + 1 < len; i++)
		buf[j++] = title[i] == ' ' ? '-'
			   : (char)tolower((unsigned char)title[i]);
	buf[j] = '\0';
}

/* The length (1..4) of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0], cp, min;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		n = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	/* a NUL ends the check before reading past the string */
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

int http_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n)
		if (!(n = utf8_seq(p)))
			return 0;
	return 1;
}

json_t *http_json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *copy;
	json_t *j;
	size_t n, i = 0;

	if (http_utf8_valid(s))
		return json_string(s);
	if (!(copy = malloc(strlen(s) + 1)))
		return NULL;
	while (*p) {
		n = utf8_seq(p);
		if (n == 0) {
			copy[i++] = '?';
			p++;
			continue;
		}
		memcpy(copy + i, p, n);
		i += n;
		p += n;
	}
	copy[i] = '\0';
	j = json_string(copy);
	free(copy);
	return j;
}

json_t *http_problem_new(int status, const char *slug, const char *detail)
{
	const char *title = http_status_phrase(status);
	char s[64], type[96];

	if (!slug) {
		slugify(title, s, sizeof(s));
		slug = s;
	}
	snprintf(type, sizeof(type), "urn:parsa:problem:%s", slug);
	return json_pack("{s:s, s:s, s:i, s:o}", "type", type, "title", title,
			 "status", status, "detail",
			 http_json_text(detail ? detail : title));
}

char *http_problem_text(int status, const char *slug, const char *detail)
{
	json_t *j = http_problem_new(status, slug, detail);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}
