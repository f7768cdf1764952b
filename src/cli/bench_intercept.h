/* agentjail bench --egress, the interception rows (bench_intercept.c). */
#ifndef AJ_CLI_BENCH_INTERCEPT_H
#define AJ_CLI_BENCH_INTERCEPT_H

#include <jansson.h>
#include <stdbool.h>

struct bench_intercept {
	int small_rounds, big_rounds, failed;
	double tunnel_p50_ms, intercept_p50_ms;   /* a small HTTPS GET */
	double direct_mib_s, intercept_mib_s;     /* a 100 MiB download */
	double tunnel_kb_per_conn, intercept_kb_per_conn; /* the host's, held mid-download */
};

/* Measures; rounds as bench_egress's. 0, or 1 with the reason on stderr. */
int bench_intercept(long rounds, bool quick, struct bench_intercept *out);
/* The figures as the --json answer's "intercept" object, and as rows. */
json_t *bench_intercept_json(const struct bench_intercept *ic);
void bench_intercept_print(const struct bench_intercept *ic);

#endif
