/* The runs budget's rule, one for both stores (local/store.c in memory,
 * remote/store.c in Redis, where it runs inside one Lua script).
 *
 * A key's recorded runs together hold at most `budget` bytes. A new record
 * costs budget_cost(): its fixed cost and what it reserves while live
 * (run_info.reserve), a run alone at most the whole budget. To make room,
 * the key's ended records go, oldest first, while the total and the cost
 * do not fit (budget_fits); its runs still going are never cut (their
 * output caps bound them). Still no room: the record is refused
 * (budget_refusal, -EDQUOT, 429 runs_budget), in the same words from
 * either store.
 *
 * The Lua half of the rule is BUDGET_FITS_LUA below, written beside the
 * C it mirrors; tests/serve/test_budget_rule.py runs one table of cases
 * through both stores and compares what each kept and refused. */
#ifndef AJ_SERVE_BUDGET_H
#define AJ_SERVE_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

#include "agentjail.h"

/* What a record costs beyond its events and result: the structures and
 * the allocator's share (Redis's keys), so the budget holds in memory. */
#define BUDGET_RECORD_COST 512

/* The cost of a new record that reserves `reserve` bytes while live. */
size_t budget_cost(size_t budget, size_t reserve);

/* Whether a key that holds `used` bytes has room for `cost` more. */
static inline bool budget_fits(size_t used, size_t cost, size_t budget)
{
	return used + cost <= budget;
}
#define BUDGET_FITS_LUA                                                                       \
	"local function fits(used, cost, budget) return used + cost <= budget end\n"

/* The refusal: -EDQUOT, err naming the key and its budget. */
int budget_refusal(struct aj_error *err, const char *owner, size_t budget);

#endif
