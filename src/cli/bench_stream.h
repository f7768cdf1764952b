/* agentjail bench --stream: what streaming output costs (bench_stream.c). */
#ifndef AJ_CLI_BENCH_STREAM_H
#define AJ_CLI_BENCH_STREAM_H

#include <stdbool.h>

#include "agentjail.h"
#include "cli.h"

/* Measures and prints (a table, or JSON with as_json) on each tier chosen
 * (none chosen: the process tier), cfg's limits and image; rounds: the
 * interleaved rounds of the cost rows. 0, or 1 with the reason on stderr. */
int bench_stream(const struct aj_config *cfg, const struct tier_choice *choice, long rounds,
		 bool quick, bool as_json);

#endif
