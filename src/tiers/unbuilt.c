/* Tiers whose issues have not landed yet. They answer every call with the
 * same plain reason instead of being absent, so `agentjail check` can list
 * every tier and a deployer who asks for one learns why it is refused. */
#include <errno.h>

#include "tier.h"

static int unbuilt_check(const struct aj_config *cfg, struct aj_error *err)
{
	return error_set(err, -ENOSYS, "%s: not built yet", aj_tier_name(cfg->tier));
}

static int unbuilt_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	return unbuilt_check(cfg, err);
}

static int unbuilt_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		       struct aj_result *res)
{
	(void)state, (void)req;
	result_sandbox_error(res, "%s: not built yet", aj_tier_name(cfg->tier));
	return -ENOSYS;
}

static void unbuilt_close(void *state)
{
	(void)state;
}

#define UNBUILT(var, tier_name)                                                    \
	const struct tier_ops var = {.name = tier_name, .check = unbuilt_check,   \
				     .open = unbuilt_open, .run = unbuilt_run,    \
				     .close = unbuilt_close}
UNBUILT(docker_tier, "docker");
