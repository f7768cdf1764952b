/* E2B's snapshots, as the key's checkpoints (snapshots.c). */
#ifndef AJ_SERVE_E2B_SNAPSHOTS_H
#define AJ_SERVE_E2B_SNAPSHOTS_H

#include <stddef.h>

#include "common.h"

/* POST /sandboxes/ID/snapshots. */
void e2b_snapshot_create(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const char *id);
/* GET /snapshots, DELETE /templates/ID. */
void e2b_snapshots(struct service *svc, const struct http_request *rq, struct http_response *rs);
/* The checkpoint a create's templateID names (a snapshot's id or name, a
 * ":tag" after it or not), as the key's: 0 with its id in id; 1: none;
 * -1 with the refusal answered. */
int e2b_snapshot_of(struct service *svc, const struct http_request *rq, struct http_response *rs,
		    const char *template_id, char *id, size_t n);

#endif
