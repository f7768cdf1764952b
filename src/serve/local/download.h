/* GET /v1/sessions/ID/files/PATH on the local backend: the file streamed
 * from the session in parts, so serve holds a part at a time, never the
 * whole file (a file as one reply held it about five times over: the
 * interpreter's base64 line, its parse, the bytes, the answer). */
#ifndef AJ_SERVE_DOWNLOAD_H
#define AJ_SERVE_DOWNLOAD_H

#include "../http/respond.h"
#include "sessions.h"

/* The bytes a part holds: what serve keeps of a download at once (times
 * about four, as the part's reply goes from base64 to bytes). */
#define DOWNLOAD_PART (1u << 20)

/* Answers path of h's workspace in rs: 0 (the file whole when it fits in
 * one part, else a stream that holds a reference on h until it ends), or
 * aj_session_get's -errno with err saying why and rs untouched. */
int download_answer(struct session_table *t, struct hsession *h, const char *path,
		    struct http_response *rs, struct aj_error *err);

#endif
