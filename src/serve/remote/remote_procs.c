/* remote_procs.h: a proc_source whose calls go through the queue to the
 * session's worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../admit/proc_call.h"
#include "../admit/proc_route.h"
#include "remote.h"
#include "remote_procs.h"
#include "remote_runs.h"
#include "remote_state.h"

struct proc_via {
	struct service *svc;
	char session[40];
	char worker[128];
};

static json_t *proc_call_there(void *arg, json_t *req)
{
	struct proc_via *v = arg;
	struct aj_error err = {0};
	json_t *reply = NULL;
	bool taken;
	/* A long-poll's wait, and a margin for the queue, on top. */
	double run_sec = json_number_value(json_object_get(req, "wait")) + 30.0;
	if (json_object_set_new(req, "session", json_string(v->session)))
		return NULL;
	enum remote_failure f = remote_call(&remote_of(v->svc)->queue, v->svc->cfg.sandbox.tier,
					    v->worker, NULL, req, SESSION_TAKE_SEC, run_sec, &reply,
					    &taken, &err);
	json_t *ans = NULL;
	if (f == REMOTE_OK) {
		ans = json_incref(json_object_get(reply, "answer"));
	} else if (f == REMOTE_REFUSED || f == REMOTE_LOST) {
		const char *code = json_string_value(json_object_get(reply, "code"));
		bool gone = f == REMOTE_LOST || (code && (!strcmp(code, "closed") ||
							  !strcmp(code, "not_found")));
		ans = gone ? proc_answer_error(410, "session_closed", "the session is closed, "
					       "because %s",
					       code && !strcmp(code, "not_found")
						       ? "its worker no longer holds it"
						       : err.message)
			   : proc_answer_error(400, code ? code : "refused", "%s", err.message);
	} else {
		ans = proc_answer_error(503, "queue_unavailable", "%s", err.message);
	}
	json_decref(reply);
	return ans;
}

void remote_session_proc(struct service *svc, const struct http_request *rq,
			 struct http_response *rs, const char *session, const char *worker,
			 const struct session_route *r)
{
	struct proc_via *v = calloc(1, sizeof *v);
	if (!v)
		return respond_error(rs, 500, "internal", "out of memory");
	v->svc = svc;
	snprintf(v->session, sizeof v->session, "%s", session);
	snprintf(v->worker, sizeof v->worker, "%s", worker);
	const struct proc_source src = {proc_call_there, free, v};
	proc_route(svc, rq, rs, r, &src);
}
