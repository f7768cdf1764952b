/* bench-session: what a session saves an agent, per tier, through the
 * library (no command start in the figures), all rows interleaved round by
 * round so the machine's drift lands on each alike:
 *
 *   fresh      aj_run of print(1): a new sandbox and interpreter per call
 *   open       aj_session_open + the first print(1) cell + close
 *   2nd call   print(1) as a later cell of one open session
 *   pandas     a cold run that imports pandas and sums a column, against
 *              the same sum as a cell of a session that imported pandas once
 *
 * Each row: runs, median, p95 (nearest rank), and the ratio of medians to
 * the fresh run. Figures only, never an assertion.
 *
 *   bench-session [RUNS] [TIER[:IMAGE]...]   (default: 30; process and
 *                                             container:datascience) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentjail.h"
#include "../src/cli/measure.h"

#define PRINT1 "print(1)\n"
#define PANDAS_IMPORT "import pandas\n"
#define PANDAS_USE "print(pandas.DataFrame({'a': range(100)}).a.sum())\n"

struct rows {
	double *fresh, *open, *second, *pandas_cold, *pandas_warm;
	int n[5];
};

static double timed_run(struct aj_sandbox *sb, const char *code)
{
	struct aj_result r;
	double s = measure_now_ms();
	aj_run(sb, code, strlen(code), &r);
	double t = measure_now_ms() - s;
	bool ok = r.status == AJ_STATUS_OK;
	if (!ok)
		fprintf(stderr, "bench-session: a run ended %s: %s %s\n", aj_status_name(r.status),
			r.message ? r.message : "", r.stderr_buf);
	aj_result_free(&r);
	return ok ? t : -1;
}

static double timed_cell(struct aj_session *s, const char *code)
{
	struct aj_result r;
	double t0 = measure_now_ms();
	aj_session_run(s, code, strlen(code), &r);
	double t = measure_now_ms() - t0;
	bool ok = r.status == AJ_STATUS_OK;
	if (!ok)
		fprintf(stderr, "bench-session: a cell ended %s: %s %s\n", aj_status_name(r.status),
			r.message ? r.message : "", r.stderr_buf);
	aj_result_free(&r);
	return ok ? t : -1;
}

static double open_and_first(const struct aj_config *cfg)
{
	struct aj_session *s;
	struct aj_error err = {0};
	double t0 = measure_now_ms();
	if (aj_session_open(cfg, &s, &err)) {
		fprintf(stderr, "bench-session: open: %s\n", err.message);
		return -1;
	}
	double cell = timed_cell(s, PRINT1);
	double t = measure_now_ms() - t0;
	aj_session_close(s);
	return cell < 0 ? -1 : t;
}

static void add(double *v, int *n, double t)
{
	if (t >= 0)
		v[(*n)++] = t;
}

static double median_of(double *v, int n)
{
	measure_sort(v, (size_t)n);
	return measure_percentile(v, (size_t)n, 50);
}

static void row(const char *name, double *v, int n, double base)
{
	if (!n) {
		printf("  %-22s %5s  (no runs)\n", name, "-");
		return;
	}
	double med = median_of(v, n), p95 = measure_percentile(v, (size_t)n, 95);
	printf("  %-22s %5d  %9.2f  %9.2f  %7.3fx\n", name, n, med, p95, base > 0 ? med / base : 0);
}

static int bench_tier(const char *spec, int runs)
{
	char tier_name[64];
	snprintf(tier_name, sizeof tier_name, "%s", spec);
	char *colon = strchr(tier_name, ':');
	const char *image = NULL;
	if (colon) {
		*colon = '\0';
		image = spec + (colon - tier_name) + 1;
	}
	struct aj_config cfg;
	aj_config_init(&cfg);
	if (aj_tier_parse(tier_name, &cfg.tier)) {
		fprintf(stderr, "bench-session: unknown tier '%s'\n", tier_name);
		return 1;
	}
	cfg.image = image;
	cfg.limits.memory_mb = 1024; /* pandas needs more than the default */
	cfg.limits.wall_sec = 60;
	struct aj_error err = {0};
	struct aj_sandbox *sb;
	struct aj_session *s;
	if (aj_open(&cfg, &sb, &err)) {
		printf("%s: not available here: %s\n\n", spec, err.message);
		return 0;
	}
	if (aj_session_open(&cfg, &s, &err)) {
		printf("%s: no session here: %s\n\n", spec, err.message);
		aj_close(sb);
		return 0;
	}
	struct rows r = {0};
	double *all = calloc((size_t)runs * 5, sizeof *all);
	r.fresh = all;
	r.open = all + runs;
	r.second = all + 2 * runs;
	r.pandas_cold = all + 3 * runs;
	r.pandas_warm = all + 4 * runs;
	bool pandas = timed_cell(s, PANDAS_IMPORT) >= 0;
	/* Warm-up: page cache, allocator, the session's first cells. */
	for (int i = 0; i < 3; i++) {
		timed_run(sb, PRINT1);
		timed_cell(s, PRINT1);
	}
	for (int i = 0; i < runs; i++) {
		add(r.fresh, &r.n[0], timed_run(sb, PRINT1));
		add(r.open, &r.n[1], open_and_first(&cfg));
		add(r.second, &r.n[2], timed_cell(s, PRINT1));
		if (pandas) {
			add(r.pandas_cold, &r.n[3], timed_run(sb, PANDAS_IMPORT PANDAS_USE));
			add(r.pandas_warm, &r.n[4], timed_cell(s, PANDAS_USE));
		}
	}
	printf("%s%s%s  (ms; ratio of medians to the fresh run of the same code)\n", tier_name,
	       image ? ", image " : "", image ? image : "");
	printf("  %-22s %5s  %9s  %9s  %8s\n", "row", "runs", "median", "p95", "ratio");
	double fresh = r.n[0] ? median_of(r.fresh, r.n[0]) : 0;
	row("fresh run print(1)", r.fresh, r.n[0], fresh);
	row("session open + 1st", r.open, r.n[1], fresh);
	row("session 2nd call", r.second, r.n[2], fresh);
	if (pandas) {
		double cold = r.n[3] ? median_of(r.pandas_cold, r.n[3]) : 0;
		row("fresh run pandas", r.pandas_cold, r.n[3], cold);
		row("session pandas cell", r.pandas_warm, r.n[4], cold);
	} else {
		printf("  (no pandas in this sandbox: the import-heavy rows are left out)\n");
	}
	printf("\n");
	free(all);
	aj_session_close(s);
	aj_close(sb);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 30;
	if (runs < 1 || runs > 10000) {
		fprintf(stderr, "usage: bench-session [RUNS (1-10000, default 30)] [TIER[:IMAGE]...]\n");
		return 2;
	}
	char cpu[128];
	measure_cpu_model(cpu, sizeof cpu);
	printf("bench-session: %d interleaved rounds, %ld CPUs (%s)\n\n", runs,
	       measure_usable_cpus(), cpu);
	int rc = 0;
	if (argc > 2) {
		for (int i = 2; i < argc; i++)
			rc |= bench_tier(argv[i], runs);
	} else {
		rc |= bench_tier("process", runs);
		rc |= bench_tier("container:datascience", runs);
	}
	return rc;
}
