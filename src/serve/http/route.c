/* /v1/sessions/ID[/runs|/exec|/egress|/pause|/resume|/fork|/files[/PATH]|/processes[/PID[/...]]]: one parse for the local sessions
 * and the queue's, so both answer a route the same before either looks
 * the session up. */
#include <stdlib.h>
#include <string.h>

#include "route.h"

/* tail after "/processes": "", "/PID", "/PID/events|stdin|signal|resize". 0, or
 * -1 with the 404 or 405 in rs. */
static int processes_route(const struct http_request *rq, struct http_response *rs,
			   const char *tail, struct session_route *r)
{
	static const struct {
		const char *tail, *method;
		enum proc_action a;
	} routes[] = {{"", "GET", PROC_STATE},
		      {"/events", "GET", PROC_EVENTS},
		      {"/stdin", "POST", PROC_STDIN},
		      {"/signal", "POST", PROC_SIGNAL},
		      {"/resize", "POST", PROC_RESIZE}};
	r->op = SESSION_PROC;
	if (!*tail) {
		bool post = !strcmp(rq->method, "POST");
		if (!post && strcmp(rq->method, "GET")) {
			respond_method(rs, rq->method, "GET, POST");
			return -1;
		}
		r->proc = post ? PROC_SPAWN : PROC_LIST;
		return 0;
	}
	char *end;
	unsigned long pid = tail[0] == '/' && tail[1] >= '1' && tail[1] <= '9'
				    ? strtoul(tail + 1, &end, 10) : 0;
	if (!pid || pid > INT32_MAX || (*end && *end != '/')) {
		respond_error(rs, 404, "not_found", "no process %.40s in this session: a pid is a "
			      "number that POST .../processes gave", tail + 1);
		return -1;
	}
	r->pid = (uint32_t)pid;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(end, routes[i].tail))
			continue;
		if (strcmp(rq->method, routes[i].method)) {
			respond_method(rs, rq->method, routes[i].method);
			return -1;
		}
		r->proc = routes[i].a;
		return 0;
	}
	respond_error(rs, 404, "not_found", "no such route: %.200s", rq->path);
	return -1;
}

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
	r->path = NULL;
	r->allow = NULL;
	if (!strcmp(tail, "/processes") || !strncmp(tail, "/processes/", 11))
		return processes_route(rq, rs, tail + 10, r);
	static const struct {
		const char *tail;
		enum session_op op;
	} posts[] = {{"/pause", SESSION_PAUSE}, {"/resume", SESSION_RESUME}, {"/fork", SESSION_FORK},
		       {"/checkpoint", SESSION_CHECKPOINT}};
	for (size_t i = 0; i < sizeof posts / sizeof posts[0]; i++) {
		if (strcmp(tail, posts[i].tail))
			continue;
		if (strcmp(rq->method, "POST")) {
			respond_method(rs, rq->method, "POST");
			return -1;
		}
		r->op = posts[i].op;
		return 0;
	}
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
