/* agentjail bench --stream: what streaming output costs, through the
 * library (aj_run_streaming on an open sandbox), per tier:
 *
 *   latency   from the program's write to the stream's fn: the program
 *             writes LINES lines, each its CLOCK_MONOTONIC in ns, one
 *             write and a pause apart; fn compares each with its own
 *             clock as it gets it. p50 and p95 (nearest rank). Where the
 *             sandbox keeps a clock of its own (a VM's), the absolute
 *             figure means nothing: each line is then counted from the
 *             fastest line of its run (its spread, which is what a
 *             batching of the output would show).
 *   cost      aj_run against aj_run_streaming (fn only counts bytes) on
 *             print(1) and on a program writing 1 MiB, the four rows
 *             interleaved round by round after warm-up, so drift lands on
 *             each alike: medians and the ratio streaming / plain.
 *
 * Figures only, never a verdict (issue 27's goals: p50 <= 5 ms, cost <= 5%). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stream.h"
#include "measure.h"

#define LINES 20
#define PAUSE "0.02"
#define MIB_PROGRAM "import sys\nsys.stdout.write('x' * 1048576)\n"
#define SMALL_PROGRAM "print(1)\n"

static int64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One latency run's lines as fn saw them. */
struct lines {
	char part[32];          /* a line split between chunks */
	size_t part_len;
	double ms[LINES];       /* arrival - write, in ms */
	int n;
};

static void take_line(struct lines *l, const char *s)
{
	char *end;
	long long sent = strtoll(s, &end, 10);
	if (end != s && l->n < LINES)
		l->ms[l->n++] = (double)(clock_ns() - sent) / 1e6;
}

static void on_lines(void *arg, const struct aj_event *ev)
{
	struct lines *l = arg;
	if (ev->kind != AJ_EVENT_STDOUT)
		return;
	for (size_t i = 0; i < ev->len; i++) {
		if (ev->data[i] != '\n') {
			if (l->part_len + 1 < sizeof l->part)
				l->part[l->part_len++] = ev->data[i];
			continue;
		}
		l->part[l->part_len] = 0;
		take_line(l, l->part);
		l->part_len = 0;
	}
}

static void count_bytes(void *arg, const struct aj_event *ev)
{
	*(size_t *)arg += ev->len;
}

/* Whether the sandbox reads the host's CLOCK_MONOTONIC: the jail tiers
 * and the Docker Engine's containers share the host's kernel clock; a VM
 * (microvm) and gVisor's Sentry keep their own. */
static bool host_clock(enum aj_tier t)
{
	return t == AJ_TIER_PROCESS || t == AJ_TIER_CONTAINER || t == AJ_TIER_DOCKER;
}

struct tier_figures {
	enum aj_tier tier;
	double *abs, *rel;      /* latency samples */
	int n;
	double *v[4];           /* plain print(1), streamed, plain 1 MiB, streamed */
	int nv[4];
	char error[AJ_ERROR_MAX];
};

static const char *const cost_names[4] = {"print1_plain", "print1_stream", "mib_plain",
					  "mib_stream"};

/* One run, timed; -1 with f->error on a failure. */
static double timed_run(struct aj_sandbox *sb, int row, struct tier_figures *f)
{
	const char *code = row < 2 ? SMALL_PROGRAM : MIB_PROGRAM;
	size_t seen = 0;
	struct aj_stream st = {.fn = count_bytes, .arg = &seen};
	struct aj_result r;
	double t0 = measure_now_ms();
	int rc = aj_run_streaming(sb, code, strlen(code), NULL, row % 2 ? &st : NULL, &r);
	double ms = measure_now_ms() - t0;
	bool ok = !rc && r.status == AJ_STATUS_OK && (row % 2 == 0 || seen == r.stdout_len);
	if (!ok)
		snprintf(f->error, sizeof f->error, "%s: %s", cost_names[row],
			 rc ? strerror(-rc) : r.message ? r.message : aj_status_name(r.status));
	aj_result_free(&r);
	return ok ? ms : -1;
}

static int write_to_fn_latency(struct aj_sandbox *sb, int runs, struct tier_figures *f)
{
	char code[160];
	snprintf(code, sizeof code,
		 "import os, time\n"
		 "for i in range(%d):\n"
		 "    os.write(1, b'%%d\\n' %% time.monotonic_ns())\n"
		 "    time.sleep(%s)\n",
		 LINES, PAUSE);
	for (int k = 0; k < runs; k++) {
		struct lines l = {0};
		struct aj_stream st = {.fn = on_lines, .arg = &l};
		struct aj_result r;
		int rc = aj_run_streaming(sb, code, strlen(code), NULL, &st, &r);
		bool ok = !rc && r.status == AJ_STATUS_OK && l.n == LINES;
		if (!ok)
			snprintf(f->error, sizeof f->error, "latency: %s (%d lines seen)",
				 rc ? strerror(-rc) : r.message ? r.message : aj_status_name(r.status),
				 l.n);
		aj_result_free(&r);
		if (!ok)
			return -1;
		double fastest = l.ms[0];
		for (int i = 1; i < l.n; i++)
			if (l.ms[i] < fastest)
				fastest = l.ms[i];
		for (int i = 0; i < l.n; i++) {
			f->abs[f->n] = l.ms[i];
			f->rel[f->n++] = l.ms[i] - fastest;
		}
	}
	return 0;
}

static int cost(struct aj_sandbox *sb, int rounds, int warm, struct tier_figures *f)
{
	for (int k = -warm; k < rounds; k++)
		for (int j = 0; j < 4; j++) {
			/* Every other round the other way round: neither row of a
			 * pair always runs first. */
			int row = k % 2 ? j ^ 1 : j;
			double ms = timed_run(sb, row, f);
			if (ms < 0)
				return -1;
			if (k >= 0)
				f->v[row][f->nv[row]++] = ms;
		}
	return 0;
}

static double median(double *v, int n)
{
	measure_sort(v, (size_t)n);
	return measure_percentile(v, (size_t)n, 50);
}

static json_t *tier_json(struct tier_figures *f)
{
	json_t *o = json_pack("{s:s}", "tier", aj_tier_name(f->tier));
	if (f->error[0]) {
		json_object_set_new(o, "error", json_string(f->error));
		return o;
	}
	measure_sort(f->abs, (size_t)f->n);
	measure_sort(f->rel, (size_t)f->n);
	json_t *lat = json_pack("{s:i, s:b, s:f, s:f}", "samples", f->n, "host_clock",
				host_clock(f->tier), "spread_p50_ms",
				measure_percentile(f->rel, (size_t)f->n, 50), "spread_p95_ms",
				measure_percentile(f->rel, (size_t)f->n, 95));
	if (host_clock(f->tier)) {
		json_object_set_new(lat, "p50_ms",
				    json_real(measure_percentile(f->abs, (size_t)f->n, 50)));
		json_object_set_new(lat, "p95_ms",
				    json_real(measure_percentile(f->abs, (size_t)f->n, 95)));
	}
	json_object_set_new(o, "write_to_fn", lat);
	json_t *c = json_pack("{s:i}", "rounds", f->nv[0]);
	double med[4];
	for (int j = 0; j < 4; j++) {
		med[j] = median(f->v[j], f->nv[j]);
		json_object_set_new(c, cost_names[j], json_real(med[j]));
	}
	json_object_set_new(c, "print1_ratio", json_real(med[1] / med[0]));
	json_object_set_new(c, "mib_ratio", json_real(med[3] / med[2]));
	json_object_set_new(o, "cost_median_ms", c);
	return o;
}

static void print_tier(json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "tier"));
	json_t *e = json_object_get(t, "error");
	if (e) {
		printf("%-10s not measured: %s\n", name, json_string_value(e));
		return;
	}
	json_t *lat = json_object_get(t, "write_to_fn"), *c = json_object_get(t, "cost_median_ms");
#define R(o, k) json_real_value(json_object_get(o, k))
	if (json_object_get(lat, "p50_ms"))
		printf("%-10s write -> fn: p50 %.2f ms, p95 %.2f ms (%d lines)\n", name,
		       R(lat, "p50_ms"), R(lat, "p95_ms"),
		       (int)json_integer_value(json_object_get(lat, "samples")));
	else
		printf("%-10s write -> fn: its own clock; above each run's fastest line: "
		       "p50 %.2f ms, p95 %.2f ms (%d lines)\n",
		       name, R(lat, "spread_p50_ms"), R(lat, "spread_p95_ms"),
		       (int)json_integer_value(json_object_get(lat, "samples")));
	printf("%-10s print(1): %.1f ms plain, %.1f ms streamed (x%.3f); "
	       "1 MiB: %.1f ms plain, %.1f ms streamed (x%.3f); median of %d rounds\n",
	       name, R(c, "print1_plain"), R(c, "print1_stream"), R(c, "print1_ratio"),
	       R(c, "mib_plain"), R(c, "mib_stream"), R(c, "mib_ratio"),
	       (int)json_integer_value(json_object_get(c, "rounds")));
#undef R
}

static json_t *measure_tier(const struct aj_config *base, enum aj_tier t, int runs, int rounds,
			    int warm)
{
	struct tier_figures f = {.tier = t};
	struct aj_config cfg = *base;
	cfg.tier = t;
	/* The 1 MiB program's output whole, with room to spare. */
	if (cfg.limits.output_kb < 2048)
		cfg.limits.output_kb = 2048;
	f.abs = calloc((size_t)runs * LINES, sizeof *f.abs);
	f.rel = calloc((size_t)runs * LINES, sizeof *f.rel);
	for (int j = 0; j < 4; j++)
		f.v[j] = calloc((size_t)rounds, sizeof *f.v[j]);
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (!f.abs || !f.rel || !f.v[0] || !f.v[1] || !f.v[2] || !f.v[3])
		snprintf(f.error, sizeof f.error, "out of memory");
	else if (aj_open(&cfg, &sb, &err))
		snprintf(f.error, sizeof f.error, "%s", err.message);
	else if (!write_to_fn_latency(sb, runs, &f))
		cost(sb, rounds, warm, &f);
	aj_close(sb);
	json_t *o = tier_json(&f);
	free(f.abs);
	free(f.rel);
	for (int j = 0; j < 4; j++)
		free(f.v[j]);
	return o;
}

int bench_stream(const struct aj_config *cfg, const struct tier_choice *choice, long rounds,
		 bool quick, bool as_json)
{
	int cost_rounds = quick && rounds > 5 ? 5 : (int)rounds;
	int runs = quick ? 2 : 5;
	int warm = quick ? 1 : 3;
	json_t *tiers = json_array();
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		bool want = choice->any ? choice->chosen[t] : t == AJ_TIER_PROCESS;
		if (want)
			json_array_append_new(tiers, measure_tier(cfg, (enum aj_tier)t, runs,
								  cost_rounds, warm));
	}
	json_t *root = json_pack("{s:o}", "stream", tiers);
	if (as_json) {
		char *s = json_dumps(root, JSON_COMPACT);
		puts(s ? s : "{}");
		free(s);
	} else {
		printf("streaming (aj_run_streaming), %d latency runs of %d lines; cost rows "
		       "interleaved, %d rounds\n",
		       runs, LINES, cost_rounds);
		size_t i;
		json_t *t;
		json_array_foreach(tiers, i, t)
			print_tier(t);
	}
	bool failed = false;
	size_t i;
	json_t *t;
	json_array_foreach(tiers, i, t)
		failed |= json_object_get(t, "error") != NULL;
	json_decref(root);
	return failed ? 1 : 0;
}
