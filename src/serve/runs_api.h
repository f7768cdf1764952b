/* The routes of runs (runs_api.c):
 *
 *   POST   /v1/runs                  a run: plain JSON (today's answer, not
 *                                    recorded), Accept: text/event-stream
 *                                    (SSE, recorded), or "background": true
 *                                    (202 with its id, recorded)
 *   GET    /v1/runs[?limit&before]   the key's recorded runs, newest first
 *   GET    /v1/runs/ID               its state, and its result once done
 *   GET    /v1/runs/ID/events        SSE from Last-Event-ID (or ?after=),
 *                                    or JSON with Accept: application/json
 *   DELETE /v1/runs/ID               cancel */
#ifndef AJ_SERVE_RUNS_API_H
#define AJ_SERVE_RUNS_API_H

#include "http/respond.h"

#define RUNS_PATH "/v1/runs"

struct service;

/* rq->path is RUNS_PATH or under it. */
void runs_api_handle(struct service *svc, const struct http_request *rq,
		     struct http_response *rs);

#endif
