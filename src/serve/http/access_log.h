/* serve's access log: one JSON line per request, and one per recorded run
 * or MCP call when it ends, for the operator: who (the key's name, never
 * the key), which route (its shape, ids left out), what status, which run,
 * on which tier, how long, and how the run ended. Request bodies, files and
 * output are never written. Lines go to stderr unless --access-log says a
 * FILE (appended), - (stdout) or off; each is one write(), whole. */
#ifndef AJ_SERVE_ACCESS_LOG_H
#define AJ_SERVE_ACCESS_LOG_H

#include "agentjail.h"

/* --access-log's value (NULL: stderr): 0, or -errno with err naming it. */
int access_log_open(const char *spec, struct aj_error *err);
void access_log_close(void);

/* The route's shape for the log: "/v1/runs/{id}/events", "/v1/sessions/{id}/files/{path}"
 * ...; "(unknown)" for a path no route takes. A static string. */
const char *access_log_route(const char *path);

/* The method for the log (a static string): one HTTP defines, else
 * "(other)". */
const char *access_log_method(const char *method);

/* A request answered: key (NULL: none), method and route (as the two
 * above give them), HTTP status, ms
 * from its headers to the end of its answer; run_id and verdict ("" or
 * NULL: none) when the answer is about a run, tier then named. */
void access_log_request(const char *key, const char *method, const char *route, int status,
			double ms, const char *run_id, enum aj_tier tier, const char *verdict);
/* A run that ended apart from its request (a recorded run, an MCP call):
 * route its shape, ms from when it was asked for. */
void access_log_run(const char *key, const char *route, const char *run_id, enum aj_tier tier,
		    double ms, const char *verdict);

#endif
