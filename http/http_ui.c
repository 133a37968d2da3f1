/*
 * http_ui: lookup of the embedded web page's files (see http_ui.h).
 */
#include <string.h>

#include "http_ui.h"

const struct http_ui_asset *http_ui_find(const char *name)
{
	if (!name || !name[0])
		name = "index.html";
	for (unsigned i = 0; i < http_ui_nassets; i++)
		if (strcmp(http_ui_assets[i].name, name) == 0)
			return &http_ui_assets[i];
	return NULL;
}

static const unsigned char *find(const struct http_ui_asset *a, size_t from,
				 const char *what)
{
	return from > a->len ? NULL
			     : memmem(a->data + from, a->len - from, what, strlen(what));
}

unsigned http_ui_auth_page(const struct http_ui_asset *a,
			   const unsigned char *seg[4], size_t len[4])
{
	static const char one[] = "1";
	const unsigned char *p0, *p1, *f;
	size_t e1, at;

	if (!a || strcmp(a->name, "index.html") != 0)
		return 0;
	p0 = find(a, 0, "<!--preload-->");
	p1 = p0 ? find(a, (size_t)(p0 - a->data), "<!--/preload-->") : NULL;
	if (!p1)
		return 0;
	e1 = (size_t)(p1 - a->data) + strlen("<!--/preload-->");
	f = find(a, e1, "data-auth=\"0\"");
	if (!f)
		return 0;
	at = (size_t)(f - a->data) + strlen("data-auth=\"");
	seg[0] = a->data;
	len[0] = (size_t)(p0 - a->data);
	seg[1] = a->data + e1;
	len[1] = at - e1;
	seg[2] = (const unsigned char *)one;
	len[2] = 1;
	seg[3] = a->data + at + 1;
	len[3] = a->len - at - 1;
	return 4;
}
