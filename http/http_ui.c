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
