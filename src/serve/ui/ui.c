/* The console's files (ui.h), from the table tools/ui_assets.py makes. */
#include <stdlib.h>
#include <string.h>

#include "ui.h"

struct ui_asset {
	const char *url, *type, *data;
	size_t len;
};

#include "ui_assets.inc"

bool ui_is(const char *path)
{
	return !strcmp(path, "/ui") || !strncmp(path, "/ui/", 4);
}

static const struct ui_asset *asset_at(const char *path)
{
	/* /ui is the page as /ui/ is: its links are absolute. */
	if (!strcmp(path, "/ui"))
		path = "/ui/";
	for (size_t i = 0; i < sizeof ui_assets / sizeof ui_assets[0]; i++)
		if (!strcmp(ui_assets[i].url, path))
			return &ui_assets[i];
	return NULL;
}

void ui_handle(const struct http_request *rq, struct http_response *rs)
{
	if (strcmp(rq->method, "GET") && strcmp(rq->method, "HEAD"))
		return respond_method(rs, rq->method, "GET, HEAD");
	const struct ui_asset *a = asset_at(rq->path);
	if (!a)
		return respond_error(rs, 404, "not_found", "the console has no %.200s", rq->path);
	if (!(rs->body = malloc(a->len ? a->len : 1)))
		return respond_error(rs, 500, "internal", "out of memory");
	memcpy(rs->body, a->data, a->len);
	rs->len = a->len;
	rs->code = 200;
	rs->content_type = a->type;
	/* Its own policy on every file (http.c): nothing but its own
	 * scripts runs, nothing loads from elsewhere. */
	rs->console = true;
}
