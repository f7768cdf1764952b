/* /v1/sessions/ID[/runs|/exec|/egress|/files[/PATH]]: one parse for the local sessions
 * and the queue's, so both answer a route the same before either looks
 * the session up. */
#include <string.h>

#include "route.h"

int session_route_parse(const struct http_request *rq, struct http_response *rs,
			struct session_route *r)
{
	const char *rest = rq->path + strlen(SESSIONS_PREFIX);
	size_t n = strcspn(rest, "/");
	if (n == 0 || n >= sizeof r->id) {
		respond_error(rs, 404, "not_found", "no such session");
		return -1;
	}
	memcpy(r->id, rest, n);
	r->id[n] = '\0';
	const char *tail = rest + n; /* "", "/runs", "/exec", "/egress", "/files", "/files/PATH" */
	bool exec = !strcmp(tail, "/exec");
	bool runs = exec || !strcmp(tail, "/runs"), egress = !strcmp(tail, "/egress");
	bool files = !strcmp(tail, "/files") || !strncmp(tail, "/files/", 7);
	if (!runs && !egress && !files && *tail) {
		respond_error(rs, 404, "not_found", "no such route: %.200s", rq->path);
		return -1;
	}
	bool del = !*tail && !strcmp(rq->method, "DELETE");
	if (!del && (!*tail || ((runs || egress) && strcmp(rq->method, "POST")))) {
		respond_method(rs, rq->method, runs || egress ? "POST" : "DELETE");
		return -1;
	}
	r->path = NULL;
	r->allow = NULL;
	if (del) {
		r->op = SESSION_CLOSE;
		return 0;
	}
	if (runs || egress) {
		r->op = exec ? SESSION_EXEC : runs ? SESSION_RUN : SESSION_EGRESS;
		return 0;
	}
	r->path = tail[6] == '/' && tail[7] ? tail + 7 : NULL;
	if (!strcmp(rq->method, "PUT") && r->path) {
		r->op = SESSION_PUT;
	} else if (!strcmp(rq->method, "GET") && r->path) {
		r->op = SESSION_GET;
	} else if (!strcmp(rq->method, "GET")) {
		r->op = SESSION_LIST;
	} else {
		r->op = SESSION_FILES_METHOD;
		r->allow = r->path ? "GET, PUT" : "GET";
	}
	return 0;
}
