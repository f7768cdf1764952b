/* agentjail bench --commands: a command's and a JavaScript call's cost in a
 * session, beside the bare programs (bench_commands.c). */
#ifndef AJ_CLI_BENCH_COMMANDS_H
#define AJ_CLI_BENCH_COMMANDS_H

#include <stdbool.h>

#include "agentjail.h"
#include "cli.h"

/* Measures and prints (a table, or JSON with as_json) on each tier chosen
 * (none chosen: process and container), cfg's limits and image; rounds:
 * the interleaved rounds. 0, or 1 when a row could not be measured at all
 * (the reason on stderr or in the table). */
int bench_commands(const struct aj_config *cfg, const struct tier_choice *choice, long rounds,
		   bool quick, bool as_json);

#endif
