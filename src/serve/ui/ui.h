/* The web console at /ui (docs/console.md): static files built into the
 * binary (tools/ui_assets.py), served without a key: the page asks for
 * the key and sends it with each API call as any client does. */
#ifndef AJ_SERVE_UI_H
#define AJ_SERVE_UI_H

#include <stdbool.h>

#include "../http/respond.h"

/* Whether path is the console's: /ui or under /ui/. */
bool ui_is(const char *path);
/* GET (or HEAD) of one of its files; 404 for a name it does not have, 405
 * for another method. */
void ui_handle(const struct http_request *rq, struct http_response *rs);

#endif
