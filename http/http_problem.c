/*
 * http_problem: problem+json bodies and the parsa-status -> HTTP-status
 * table (see http_problem.h).
 */
#include <ctype.h>
#include <stdio.h>
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

json_t *http_problem_new(int status, const char *slug, const char *detail)
{
	const char *title = http_status_phrase(status);
	char s[64], type[96];

	if (!slug) {
		slugify(title, s, sizeof(s));
		slug = s;
	}
	snprintf(type, sizeof(type), "urn:parsa:problem:%s", slug);
	return json_pack("{s:s, s:s, s:i, s:s}", "type", type, "title", title,
			 "status", status, "detail", detail ? detail : title);
}

char *http_problem_text(int status, const char *slug, const char *detail)
{
	json_t *j = http_problem_new(status, slug, detail);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}
