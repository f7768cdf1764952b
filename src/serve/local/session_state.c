/* POST /v1/sessions/ID/pause, /resume and /fork on this machine's sessions
 * (docs/checkpoints.md): the library's aj_session_pause, _resume and
 * _fork, and their answers. */
#include <errno.h>
#include <stdlib.h>

#include "../../core/internal.h"
#include "local_state.h"
#include "session_state.h"

/* What a pause or fork carried, as JSON: its size, files, what it could
 * not carry. */
static json_t *carried_json(const struct aj_checkpoint_info *info)
{
	return json_pack("{s:I, s:i, s:i, s:s}", "bytes", (json_int_t)info->bytes, "files",
			 (int)info->files, "left_out", (int)info->left_out, "note", info->note);
}

static void state_refused(struct http_response *rs, struct hsession *h, int rc,
		    const struct aj_error *err)
{
	if (rc == -ESHUTDOWN)
		respond_error(rs, 410, "session_closed", "the session is closed, because %s",
			      aj_session_closed_reason(h->s) ? aj_session_closed_reason(h->s)
							     : "it was deleted");
	else if (rc == -EALREADY)
		respond_error(rs, 409, "already_paused", "%s", err->message);
	else if (rc == -EDQUOT)
		respond_error(rs, 429, "session_limit", "%s", err->message);
	else if (rc == -EMFILE)
		respond_error(rs, 503, "session_limit", "%s", err->message);
	else if (rc == -EFBIG)
		respond_error(rs, 413, "state_too_large", "%s", err->message);
	else
		respond_error(rs, 500, "checkpoint_failed", "%s", err->message);
	if (rc == -EDQUOT || rc == -EMFILE)
		rs->retry_after = 5;
}

void local_session_pause(struct http_response *rs, struct hsession *h)
{
	struct aj_checkpoint_info info;
	struct aj_error err = {0};
	int rc = aj_session_pause(h->s, &info, &err);
	if (rc)
		return state_refused(rs, h, rc, &err);
	json_t *o = carried_json(&info);
	if (o)
		json_object_set_new(o, "paused", json_true());
	respond_json(rs, 200, o);
}

void local_session_resume(struct http_response *rs, struct hsession *h)
{
	struct aj_error err = {0};
	bool was = aj_session_paused(h->s);
	int rc = aj_session_resume(h->s, &err);
	if (rc)
		return state_refused(rs, h, rc, &err);
	respond_json(rs, 200, json_pack("{s:b, s:b}", "paused", false, "resumed", was));
}

void local_session_fork(struct service *svc, const struct http_request *rq,
			struct http_response *rs, struct hsession *h)
{
	static const char *const allowed[] = {"count", NULL};
	json_t *o = rq->body_len ? request_body(rq, rs, allowed) : json_object();
	if (!o)
		return;
	json_t *count = json_object_get(o, "count");
	json_int_t n = count ? json_integer_value(count) : 1;
	if ((count && !json_is_integer(count)) || n < 1 || n > AJ_MAX_FORK) {
		json_decref(o);
		return respond_error(rs, 400, "bad_request", "count: a whole number of copies from 1 "
				     "to %d",
				     AJ_MAX_FORK);
	}
	json_decref(o);
	struct hsession **made = calloc((size_t)n, sizeof *made);
	struct aj_checkpoint_info info;
	struct aj_error err = {0};
	int rc = made ? sessions_fork(&local_of(svc)->sessions, h, (unsigned)n, made, &info, &err)
		      : error_set(&err, -ENOMEM, "fork: out of memory");
	if (rc) {
		free(made);
		return state_refused(rs, h, rc, &err);
	}
	json_t *ids = json_array();
	for (json_int_t i = 0; i < n; i++)
		json_array_append_new(ids, json_string(made[i]->id));
	free(made);
	json_t *answer = carried_json(&info);
	if (answer)
		json_object_set_new(answer, "sessions", ids);
	else
		json_decref(ids);
	respond_json(rs, 201, answer);
}
