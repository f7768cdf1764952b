/* MCP's Streamable HTTP transport on /mcp: each POST carries one JSON-RPC
 * message and, for a request, gets its answer as application/json; the
 * same keys guard it as the JSON API, and a tools/call counts against the
 * key's limits like POST /v1/runs. */
#ifndef AJ_SERVE_MCP_HTTP_H
#define AJ_SERVE_MCP_HTTP_H

#include "admit/service.h"

int mcp_http_init(struct service *svc);
void mcp_http_handle(struct service *svc, const struct http_request *rq, struct http_response *rs);
/* Cancels the calls in flight and waits for them. */
void mcp_http_stop(struct service *svc);

#endif
