/* The runs budget's rule (budget.h). */
#include <errno.h>

#include "../../core/internal.h"
#include "budget.h"

size_t budget_cost(size_t budget, size_t reserve)
{
	/* A run alone may hold the whole budget, no more. */
	size_t room = budget > BUDGET_RECORD_COST ? budget - BUDGET_RECORD_COST : 0;
	return BUDGET_RECORD_COST + (reserve < room ? reserve : room);
}

int budget_refusal(struct aj_error *err, const char *owner, size_t budget)
{
	return error_set(err, -EDQUOT,
			 "key '%s' holds its runs budget (%zu MiB) in runs still going; retry "
			 "when one ends",
			 owner, budget >> 20);
}
