/*
 * http_ui: the web page of `parsa serve` (GET / and /ui/{asset}), served
 * from files built into the binary: http/ui/ is turned into a C file of
 * const byte arrays at build time (scripts/embed-ui.py, the Makefile), so
 * the page needs no file, CDN or network at run time.  Immutable data.
 */
#ifndef HTTP_UI_H
#define HTTP_UI_H

#include <stddef.h>

struct http_ui_asset {
	const char *name;          /* "index.html", "app.js", ... */
	const char *type;          /* Content-Type */
	const unsigned char *data;
	size_t len;
	const char *etag;          /* quoted: a hash of the content */
};

/* The generated table (http_ui_assets.c in the build directory). */
extern const struct http_ui_asset http_ui_assets[];
extern const unsigned http_ui_nassets;

/* The asset called name ("" = index.html), or NULL. */
const struct http_ui_asset *http_ui_find(const char *name);

/*
 * index.html as served when the API needs a token: without the region
 * between "<!--preload-->" and "<!--/preload-->" (the API fetches a page
 * without the token may start early) and with <body data-auth="1">.  Fills
 * up to 4 segments (seg[i], len[i]) whose concatenation is that page;
 * returns how many, or 0 when a is not such a page (serve it as is).
 */
unsigned http_ui_auth_page(const struct http_ui_asset *a,
			   const unsigned char *seg[4], size_t len[4]);

#endif /* HTTP_UI_H */
