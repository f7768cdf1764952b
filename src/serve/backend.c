/* Where a run happens: this machine's sandbox, or a worker's through the
 * queue. Both end in the same aj_result, so the API and MCP are the same. */
#include <errno.h>
#include <string.h>

#include "../core/internal.h"
#include "narrow.h"
#include "remote.h"
#include "service.h"
#include "wire.h"

int service_run(struct service *svc, const struct aj_limits *limits, const char *code, size_t len,
		struct aj_cancel *cancel, struct aj_result *res, struct aj_error *err)
{
	if (!svc->queue) {
		local_run(&svc->local, limits, code, len, cancel, res);
		return 0;
	}
	json_t *req = json_pack("{s:s, s:s%, s:o}", "op", "run", "code", code, len, "limits",
				limits_to_json(limits));
	json_t *reply = NULL;
	enum remote_failure f =
		req ? remote_call(svc->queue, svc->cfg.sandbox.tier, NULL, req, svc->cfg.max_wait_sec,
				  limits->wall_sec, &reply, err)
		    : REMOTE_REDIS;
	json_decref(req);
	int rc = 0;
	if (f == REMOTE_OK) {
		result_from_json(json_object_get(reply, "result"), res, NULL);
	} else {
		result_init(res);
		result_sandbox_error(res, "%s", err->message);
		/* A worker lost mid-run is the run's end, told as a result; the
		 * rest never reached a sandbox and are the service's. */
		rc = f == REMOTE_LOST ? 0 : f == REMOTE_NO_WORKER ? -EAGAIN : -EIO;
		if (f == REMOTE_REFUSED)
			rc = -EINVAL;
	}
	json_decref(reply);
	return rc;
}
