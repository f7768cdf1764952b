/* agentjail bench --egress: what the egress proxy costs (bench_egress.c). */
#ifndef AJ_CLI_BENCH_EGRESS_H
#define AJ_CLI_BENCH_EGRESS_H

#include <stdbool.h>

/* Measures and prints (a table, or JSON with as_json); rounds: the small
 * GETs per path. 0, or 1 with the reason on stderr. */
int bench_egress(long rounds, bool quick, bool as_json);

#endif
