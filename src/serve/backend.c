/* Where a run happens: this machine's sandbox, or a worker's through the
 * queue. Both end in the same aj_result, so the API and MCP are the same. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../core/internal.h"
#include "narrow.h"
#include "remote.h"
#include "service.h"
#include "wire.h"

int service_run_fate(struct service *svc, const struct aj_limits *limits, const char *code,
		     size_t len, struct aj_cancel *cancel, struct run_fate *fate,
		     struct aj_result *res, struct aj_error *err)
{
	fate->may_have_started = false;
	if (!svc->queue) {
		local_run(&svc->local, limits, code, len, cancel, res);
		return 0;
	}
	json_t *req = json_pack("{s:s, s:s%, s:o}", "op", "run", "code", code, len, "limits",
				limits_to_json(limits));
	json_t *reply = NULL;
	bool taken = true;
	enum remote_failure f =
		req ? remote_call(svc->queue, svc->cfg.sandbox.tier, NULL, fate->id, req,
				  svc->cfg.max_wait_sec, limits->wall_sec, &reply, &taken, err)
		    : REMOTE_REDIS;
	json_decref(req);
	int rc = 0;
	if (f == REMOTE_OK) {
		result_from_json(json_object_get(reply, "result"), res, NULL);
	} else {
		result_init(res);
		result_sandbox_error(res, "%s", err->message);
		rc = f == REMOTE_NO_WORKER ? -EAGAIN : f == REMOTE_REFUSED ? -EINVAL : -EIO;
		/* Lost: no result will come. Not a sandbox's failure nor the
		 * service's refusal, but a third answer: whether the code may
		 * have run is what its caller needs to decide on a retry. */
		if (f == REMOTE_LOST || f == REMOTE_UNKNOWN) {
			fate->may_have_started = f == REMOTE_UNKNOWN || taken;
			metrics_lost(&svc->metrics, fate->may_have_started);
			fprintf(stderr, "agentjail serve: run %s lost (%s): %s\n", fate->id,
				fate->may_have_started ? "it may have started" : "it never started",
				err->message);
			rc = -ECONNRESET;
		}
	}
	json_decref(reply);
	return rc;
}

int service_run(struct service *svc, const struct aj_limits *limits, const char *code, size_t len,
		struct aj_cancel *cancel, struct aj_result *res, struct aj_error *err)
{
	struct run_fate fate;
	queue_new_id(fate.id);
	int rc = service_run_fate(svc, limits, code, len, cancel, &fate, res, err);
	/* A lost run is the run's end, told as a sandbox_error result to a
	 * caller with no other way to say it (MCP's run_python). */
	return rc == -ECONNRESET ? 0 : rc;
}

void respond_run_failure(struct http_response *rs, int status, const char *code,
			 const char *id, bool lost, bool may_have_started, const char *message)
{
	json_t *o = json_pack("{s:{s:s, s:s}, s:s}", "error", "code", code, "message", message,
			      "run_id", id);
	if (o && lost) {
		json_object_set_new(o, "lost", json_true());
		json_object_set_new(o, "may_have_started", json_boolean(may_have_started));
		/* Safe only when no worker ever took it: agent code is not
		 * idempotent, and one that may have started may have acted. */
		json_object_set_new(o, "retry_safe", json_boolean(!may_have_started));
	}
	respond_json(rs, status, o);
}
