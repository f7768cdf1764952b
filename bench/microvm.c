/* bench-microvm: what the microvm tier costs, in its three regimes, for
 * print(1), through the library (no command start in the figures):
 *
 *   cold      boot an image to ready and save the snapshot: what the first
 *             aj_open of an image pays (a memory size of its own forces a new
 *             snapshot, removed afterwards);
 *   restore   a fresh VM restored from the snapshot for every run;
 *   pool      the same with vm_pool VMs kept restored and waiting.
 *
 * Each row: runs, median, p95 (nearest rank). No assertion: figures only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentjail.h"
#include "../src/cli/measure.h"

static void row(const char *name, double *v, int n)
{
	if (n == 0) {
		printf("%-9s %5s  (no runs)\n", name, "-");
		return;
	}
	measure_sort(v, (size_t)n);
	double median = measure_percentile(v, (size_t)n, 50),
	       p95 = measure_percentile(v, (size_t)n, 95);
	printf("%-9s %5d  %9.1f  %9.1f\n", name, n, median, p95);
}

/* Times n runs of print(1) on sb; pause_ms between them (so a pool can
 * refill, as it would between an agent's calls). */
static int time_runs(struct aj_sandbox *sb, double *v, int n, int pause_ms)
{
	int got = 0;
	for (int i = 0; i < n; i++) {
		struct aj_result r;
		double s = measure_now_ms();
		aj_run(sb, "print(1)\n", 9, &r);
		double t = measure_now_ms() - s;
		if (r.status == AJ_STATUS_OK)
			v[got++] = t;
		else
			fprintf(stderr, "bench-microvm: a run ended %s: %s\n", aj_status_name(r.status),
				r.message ? r.message : "");
		aj_result_free(&r);
		if (pause_ms)
			usleep((useconds_t)pause_ms * 1000);
	}
	return got;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 15;
	const char *image = argc > 2 ? argv[2] : NULL;
	if (runs < 1 || runs > 1000) {
		fprintf(stderr, "usage: bench-microvm [RUNS (1-1000, default 15)] [IMAGE]\n");
		return 2;
	}
	struct aj_config cfg;
	struct aj_sandbox *sb;
	struct aj_error err;
	double *v = calloc((size_t)runs, sizeof *v);
	if (!v)
		return 1;

	aj_config_init(&cfg);
	cfg.tier = AJ_TIER_MICROVM;
	cfg.image = image;
	if (aj_check(AJ_TIER_MICROVM, &cfg, &err)) {
		fprintf(stderr, "bench-microvm: the microvm tier cannot run here: %s\n", err.message);
		return 1;
	}
	printf("microvm tier, print(1), %s\n", err.message[0] ? err.message : "");
	printf("%-9s %5s  %9s  %9s\n", "regime", "runs", "median ms", "p95 ms");

	/* cold: a memory size no one uses, so aj_open boots and saves anew. */
	int cold_n = runs < 3 ? runs : 3;
	double cold[3];
	int cold_got = 0;
	for (int i = 0; i < cold_n; i++) {
		struct aj_config c = cfg;
		c.limits.memory_mb = 200 + (uint32_t)i + (uint32_t)(getpid() % 50);
		double s = measure_now_ms();
		if (aj_open(&c, &sb, &err)) {
			fprintf(stderr, "bench-microvm: cold open: %s\n", err.message);
			continue;
		}
		cold[cold_got++] = measure_now_ms() - s;
		aj_close(sb);
		/* Remove the snapshot this made: it is the benchmark's own. */
		char cmd[256];
		snprintf(cmd, sizeof cmd,
			 "rm -rf %s/%s/vm/snapshot-*-%u", getenv("AGENTJAIL_IMAGES") ?
			 getenv("AGENTJAIL_IMAGES") : AJ_DEFAULT_IMAGES_DIR,
			 image ? image : AJ_DEFAULT_IMAGE, c.limits.memory_mb + 192);
		if (!image || image[0] != '/')
			(void)!system(cmd);
	}
	row("cold", cold, cold_got);

	if (aj_open(&cfg, &sb, &err)) {
		fprintf(stderr, "bench-microvm: %s\n", err.message);
		return 1;
	}
	time_runs(sb, v, 2, 0); /* warm-up: page cache, the snapshot's files */
	row("restore", v, time_runs(sb, v, runs, 0));
	aj_close(sb);

	cfg.vm_pool = 2;
	if (aj_open(&cfg, &sb, &err)) {
		fprintf(stderr, "bench-microvm: %s\n", err.message);
		return 1;
	}
	sleep(4); /* let the pool fill */
	row("pool", v, time_runs(sb, v, runs, 1500));
	aj_close(sb);
	free(v);
	return 0;
}
