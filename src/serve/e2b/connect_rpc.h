/* The Connect protocol (connectrpc.com) in its JSON codec, as E2B's envd
 * serves its process and filesystem services and E2B's SDKs call them:
 *
 *   unary          POST /SERVICE/METHOD, Content-Type application/json, a
 *                  JSON message each way; an error is an HTTP status by its
 *                  code with {"code": "not_found", "message": ...}
 *   server stream  Content-Type application/connect+json; the request and
 *                  each answer an envelope (a flags byte, a big-endian
 *                  32-bit length, the JSON), the last answer one with flag
 *                  0x02 (end of stream): {} or {"error": {"code", "message"}},
 *                  HTTP 200 whatever happened. */
#ifndef AJ_SERVE_E2B_CONNECT_RPC_H
#define AJ_SERVE_E2B_CONNECT_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../http/respond.h"

#define CONNECT_STREAM_TYPE "application/connect+json"
#define CONNECT_END_STREAM 0x02

/* Whether rq is a streaming call (its Content-Type). */
bool connect_is_stream(const struct http_request *rq);
/* The request's message: the JSON body of a unary call, the one envelope
 * of a streaming one. NULL with the error answered in rs (unary shape, or
 * for a stream an end-of-stream envelope). */
json_t *connect_request(const struct http_request *rq, struct http_response *rs);
/* The HTTP status of a Connect error code ("not_found": 404, ...). */
int connect_http_status(const char *code);
/* An error answer: unary {"code", "message"} with its status, or for a
 * streaming call a 200 whose one envelope ends the stream with it. */
void connect_error(const struct http_request *rq, struct http_response *rs, const char *code,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A unary answer: 200 and msg (the reference taken). */
void connect_unary(struct http_response *rs, json_t *msg);
/* msg in an envelope with flags appended to *buf (*len, *cap grown): 0 or
 * -1 (out of memory). The reference to msg is taken. */
int connect_envelope(char **buf, size_t *len, size_t *cap, int flags, json_t *msg);
/* The end-of-stream envelope: {} (code NULL) or the error. */
int connect_end(char **buf, size_t *len, size_t *cap, const char *code, const char *message);
/* A v1 answer's failure as a Connect code: 404 not_found, 400
 * invalid_argument, 401 unauthenticated, 403 permission_denied, 409
 * already_exists, 410 not_found (the session is closed), 413
 * resource_exhausted, 429 resource_exhausted, 501 unimplemented, 503
 * unavailable, else internal. */
const char *connect_code_of_http(int status);

#endif
