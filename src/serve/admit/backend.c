/* A run through whichever backend main.c chose: both end in the same
 * aj_result, so the API and MCP are the same over either. */
#include <errno.h>

#include "service.h"

int service_run_fate(struct service *svc, const struct run_terms *t, const char *code,
		     size_t len, struct aj_cancel *cancel, struct run_fate *fate,
		     struct aj_result *res, struct aj_error *err)
{
	fate->may_have_started = false;
	return svc->backend->run(svc, t, code, len, cancel, fate, res, err);
}

int service_run(struct service *svc, const char *code, size_t len,
		struct aj_cancel *cancel, const struct aj_stream *stream, struct aj_result *res,
		struct aj_error *err)
{
	struct run_fate fate;
	serve_id_new(fate.id);
	int rc;
	if (stream && svc->backend->run_streaming) {
		fate.may_have_started = false;
		rc = svc->backend->run_streaming(svc, NULL, code, len, cancel, stream, &fate, res,
						 err);
	} else {
		rc = service_run_fate(svc, NULL, code, len, cancel, &fate, res, err);
	}
	/* A lost run is the run's end, told as a sandbox_error result to a
	 * caller with no other way to say it (MCP's run_python). */
	return rc == -ECONNRESET ? 0 : rc;
}
