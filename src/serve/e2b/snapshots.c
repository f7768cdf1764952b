/* E2B's snapshots over agentjail's checkpoints (docs/e2b.md), each call
 * through the v1 API as the caller's key:
 *
 *   POST   /sandboxes/ID/snapshots  {"name"?}  POST /v1/sessions/ID/checkpoint:
 *                                              201 {"snapshotID", "names"}
 *   GET    /snapshots ?sandboxID= ?name=       GET /v1/checkpoints, filtered
 *   DELETE /templates/ID                       DELETE /v1/checkpoints/ID
 *   POST   /sandboxes {"templateID": ID|NAME}  a sandbox from a snapshot
 *                                              (control.c asks e2b_snapshot_of)
 *
 * A snapshot is the key's own, as a checkpoint is: another key's id or
 * name answers as none. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../../core/internal.h"
#include "../admit/service.h"
#include "snapshots.h"
#include "v1_client.h"

/* E2B's SnapshotInfo of a checkpoint's record. */
static json_t *snapshot_json(json_t *rec)
{
	const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
	const char *name = json_string_value(json_object_get(rec, "name"));
	return json_pack("{s:s, s:[s]}", "snapshotID", id, "names", name ? name : id);
}

void e2b_snapshot_create(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const char *id)
{
	json_t *o = e2b_body_object(rq, rs);
	if (!o)
		return;
	json_t *name = json_object_get(o, "name"), *req = json_object();
	if (name && !json_is_null(name))
		json_object_set(req, "name", name);
	json_decref(o);
	char path[96];
	snprintf(path, sizeof path, "/v1/sessions/%s/checkpoint", id);
	struct http_response v1;
	v1_call(svc, rq->key, "POST", path, req, NULL, &v1);
	if (v1.code == 404) {
		v1_free(&v1);
		return e2b_error(rs, 404, "sandbox %.40s not found", id);
	}
	if (v1.code != 201)
		return v1_refusal(rs, &v1, "the snapshot could not be made");
	json_t *rec = v1_body(&v1);
	v1_free(&v1);
	respond_json(rs, 201, snapshot_json(rec));
	json_decref(rec);
}

/* The key's checkpoints' records (a new reference), or NULL with the
 * refusal answered; with none_if_not_kept, a server that keeps none
 * (--queue: 501) has an empty list. */
static json_t *snapshot_records(struct service *svc, const struct http_request *rq,
				struct http_response *rs, bool none_if_not_kept)
{
	struct http_response v1;
	v1_call(svc, rq->key, "GET", "/v1/checkpoints", NULL, NULL, &v1);
	if (v1.code == 501 && none_if_not_kept) {
		v1_free(&v1);
		return json_array();
	}
	if (v1.code != 200) {
		v1_refusal(rs, &v1, "the snapshots could not be listed");
		return NULL;
	}
	json_t *b = v1_body(&v1);
	v1_free(&v1);
	json_t *a = json_incref(json_object_get(b, "checkpoints"));
	json_decref(b);
	return a ? a : json_array();
}

static void snapshot_list(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	json_t *all = snapshot_records(svc, rq, rs, false);
	if (!all)
		return;
	const char *sandbox = http_query(rq, "sandboxID"), *name = http_query(rq, "name");
	json_t *out = json_array();
	size_t i;
	json_t *rec;
	json_array_foreach(all, i, rec) {
		const char *from = json_string_value(json_object_get(rec, "session")) ?: "";
		const char *id = json_string_value(json_object_get(rec, "id")) ?: "";
		const char *its = json_string_value(json_object_get(rec, "name")) ?: "";
		if (sandbox && strcmp(sandbox, from))
			continue;
		if (name && strcmp(name, id) && strcmp(name, its))
			continue;
		json_array_append_new(out, snapshot_json(rec));
	}
	json_decref(all);
	respond_json(rs, 200, out);
}

void e2b_snapshots(struct service *svc, const struct http_request *rq, struct http_response *rs)
{
	if (!strcmp(rq->path, "/snapshots")) {
		if (strcmp(rq->method, "GET"))
			return respond_method(rs, rq->method, "GET");
		return snapshot_list(svc, rq, rs);
	}
	/* DELETE /templates/ID: E2B's SDK deletes a snapshot as a template. */
	const char *id = rq->path + strlen("/templates/");
	if (strcmp(rq->method, "DELETE"))
		return respond_method(rs, rq->method, "DELETE");
	char path[160];
	if (!*id || strchr(id, '/') ||
	    snprintf(path, sizeof path, "/v1/checkpoints/%s", id) >= (int)sizeof path)
		return e2b_error(rs, 404, "snapshot not found");
	struct http_response v1;
	v1_call(svc, rq->key, "DELETE", path, NULL, NULL, &v1);
	if (v1.code == 404) {
		v1_free(&v1);
		return e2b_error(rs, 404, "snapshot %.64s not found", id);
	}
	if (v1.code != 204)
		return v1_refusal(rs, &v1, "the snapshot could not be deleted");
	v1_free(&v1);
	respond_json(rs, 204, NULL);
}

int e2b_snapshot_of(struct service *svc, const struct http_request *rq, struct http_response *rs,
		    const char *template_id, char *id, size_t n)
{
	json_t *all = snapshot_records(svc, rq, rs, true);
	if (!all)
		return -1;
	/* "ID" or "NAME", with E2B's ":tag" after it or not; the newest of a
	 * name. */
	char want[128];
	snprintf(want, sizeof want, "%s", template_id);
	want[strcspn(want, ":")] = '\0';
	int rc = 1;
	size_t i;
	json_t *rec;
	json_array_foreach(all, i, rec) {
		const char *cid = json_string_value(json_object_get(rec, "id")) ?: "";
		const char *its = json_string_value(json_object_get(rec, "name")) ?: "";
		if (!strcmp(want, cid) || !strcmp(want, its)) {
			snprintf(id, n, "%s", cid);
			rc = 0;
			break;
		}
	}
	json_decref(all);
	return rc;
}
