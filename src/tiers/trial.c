/* What every tier's check ends with: the mechanisms exist, and a real run of
 * an empty program proves they combine on this machine. */
#include <errno.h>

#include "tier.h"

int tier_trial_run(const struct tier_ops *t, const struct aj_config *cfg, struct aj_error *err)
{
	void *state;
	int rc = t->open(cfg, &state, err);
	if (rc)
		return rc;
	struct aj_result res;
	result_init(&res);
	const struct run_request empty = {.code = "", .len = 0, .cancel_fd = -1};
	rc = t->run(state, cfg, &empty, &res);
	if (res.status != AJ_STATUS_OK)
		rc = error_set(err, rc ? rc : -EIO, "%s",
			       res.message ? res.message : "a trial run did not succeed");
	aj_result_free(&res);
	t->close(state);
	return rc;
}
