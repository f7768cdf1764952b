#include <errno.h>
#include <sys/resource.h>

#include "../core/contract.h"
#include "rlimits.h"

/* Sets soft and hard. Without CAP_SYS_RESOURCE a hard limit can only be
 * lowered, so a value above the current hard limit is clamped to it: the
 * result is never looser than asked. */
static int set_limit(int resource, const char *name, rlim_t soft, rlim_t hard,
		     struct setup_error *e)
{
	struct rlimit cur;
	if (getrlimit(resource, &cur) < 0)
		return setup_fail(e, errno, "rlimit %s: get", name);
	if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
		hard = cur.rlim_max;
	if (soft > hard)
		soft = hard;
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
	if (setrlimit(resource, &rl) < 0)
		return setup_fail(e, errno, "rlimit %s", name);
	return 0;
}

static int set_row(const struct contract_rlimit *row, uint64_t soft, uint64_t hard, void *e)
{
	return set_limit(row->resource, row->word, soft, hard, e);
}

/* A walk over the rlimit table every tier reads (rule E2, src/core/contract.c). */
int rlimits_apply(const struct aj_limits *l, bool limit_procs, bool address_space,
		  struct setup_error *e)
{
	return contract_rlimits_each(l, address_space, limit_procs, set_row, e);
}
