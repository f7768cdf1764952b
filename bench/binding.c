/* bench-binding-c: the baseline for bench/binding.py, which measures what
 * the Python binding adds to a run. This program makes the same library
 * calls the binding makes for Sandbox(tier="process").run("print(1)"), from
 * C and nothing else:
 *
 *   aj_config_init, tier process, aj_open     once, not timed
 *   one run of print(1)                        a warm-up, not printed
 *   RUNS times: aj_cancel_new, then            timed: from before
 *     aj_run_cancellable(print(1)),            aj_cancel_new to after
 *     aj_result_free, aj_cancel_free           aj_cancel_free
 *
 * A fresh cancel token per run, as the binding takes one for every run, so
 * the two sides compare like with like. Each run's wall time in ms is
 * printed on a line of its own to stdout, in run order, for the script to
 * parse; a run that does not end ok is reported on stderr and printed as -1
 * (the script leaves it out). Figures only, never an assertion.
 *
 *   bench-binding-c RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentjail.h"
#include "../src/cli/measure.h"

#define PRINT1 "print(1)"

/* One run as the binding makes it; its wall ms, or -1 if it did not end ok. */
static double timed_run(struct aj_sandbox *sb)
{
	struct aj_result r;
	struct aj_cancel *c;
	double s = measure_now_ms();
	int rc = aj_cancel_new(&c);
	if (rc) {
		fprintf(stderr, "bench-binding-c: aj_cancel_new: %s\n", strerror(-rc));
		return -1;
	}
	aj_run_cancellable(sb, PRINT1, strlen(PRINT1), c, &r);
	bool ok = r.status == AJ_STATUS_OK;
	if (!ok)
		fprintf(stderr, "bench-binding-c: a run ended %s: %s %s\n", aj_status_name(r.status),
			r.message ? r.message : "", r.stderr_buf ? r.stderr_buf : "");
	aj_result_free(&r);
	aj_cancel_free(c);
	double t = measure_now_ms() - s;
	return ok ? t : -1;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 0;
	if (argc != 2 || runs < 1 || runs > 100000) {
		fprintf(stderr, "usage: bench-binding-c RUNS (1-100000)\n");
		return 2;
	}
	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.tier = AJ_TIER_PROCESS;
	struct aj_error err = {0};
	struct aj_sandbox *sb;
	if (aj_open(&cfg, &sb, &err)) {
		fprintf(stderr, "bench-binding-c: the process tier cannot start: %s\n", err.message);
		return 1;
	}
	/* Warm-up: this process's first clone and the allocator's first
	 * pages, which the binding's long-lived process has already paid. */
	timed_run(sb);
	double *t = calloc((size_t)runs, sizeof *t);
	if (!t) {
		aj_close(sb);
		return 1;
	}
	/* All runs first, printed after: no stdio between two runs. */
	for (int i = 0; i < runs; i++)
		t[i] = timed_run(sb);
	for (int i = 0; i < runs; i++)
		printf("%.6f\n", t[i]);
	free(t);
	aj_close(sb);
	return 0;
}
