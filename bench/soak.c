/* soak: many runs on one open sandbox, then proof that nothing is left.
 *
 * Theory of operation. For each tier (and warm mode, where the tier has it):
 *
 *   census before ── aj_open ── sequential phase ── concurrent phase ── aj_close ── census after
 *                                 N runs, 1 thread    M runs, 4 threads
 *                                 one sandbox          the same sandbox
 *
 * Every run is one of the programs of soak_programs.c, benign and hostile
 * mixed on a fixed weighted schedule, and its outcome is checked against
 * what the contract promises (status, exit code, a marker in stdout): a
 * run that differs is a mismatch, counted and shown. aj_run is safe from
 * several threads on one sandbox (agentjail.h says so, and the tests'
 * concurrent cases rely on it), so the concurrent phase shares it.
 *
 * While the phases run, the host holds what an escape would disturb: a
 * secret file and the token in the environment, a TCP and a unix listener,
 * a sentinel process on each sandbox uid (kill(-1)); after each phase the
 * host looks for the evidence (soak_host_evidence). The census
 * (soak_census.c) counts processes, mounts, cgroups, containers, run
 * directories, held uid slot locks and the caller's fds and threads; any row
 * of ours that grew is a leftover and fails the soak.
 *
 * Then the long-lived caller: the MCP server (soak_mcp.c), driven with the
 * same programs, its memory sampled after a warm-up and at the end.
 *
 * The soak runs as root with a uid range and state directory of its own
 * (--uid-base, /run/agentjail-soak-BASE), so that neither the tests nor a
 * deployer's sandboxes on the same machine are counted as its leftovers.
 * Exit 0 only if no run mismatched and nothing was left. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

#define MAX_TIERS 8
#define EXAMPLES 5
#define THREADS 4
/* What the MCP server may grow by between the warm-up sample and the end.
 * 2 MiB over the default 1,800 calls: a leak of ~1.2 KiB a call (one
 * result's buffers, a JSON object) would pass it; the allocator's own slack
 * (arenas of 4 threads, freed chunks not returned) stays well under it. */
#define MCP_GROWTH_MAX_KB 2048

struct tier_spec {
	char name[32];
	enum aj_tier tier;
	bool warm;
	long seq, conc;
};

struct options {
	long seq, conc, mcp, mcp_warm;
	uint32_t uid_base;
	uint32_t docker_uid_base;
	const char *image;
	const char *docker_image;
	const char *agentjail;
	struct tier_spec tiers[MAX_TIERS];
	size_t ntiers;
	bool tiers_given;
};

struct phase {
	const char *name;
	long runs;
	_Atomic long next;
	_Atomic long mismatches;
	_Atomic long sandbox_errors;
	double *lat;             /* ms, one per run */
	double seconds;
	long per_prog[64], per_prog_bad[64];
	double per_prog_ms[64];
	bool stopped;            /* cut short by a signal */
	pthread_mutex_t mu;
	char examples[EXAMPLES][600];
	int nexamples;
	long rss_at_200, rss_end;
	struct aj_sandbox *sb;
	const struct aj_config *cfg;
	struct soak_host *host;
	uint64_t offset;         /* where in the schedule this phase starts */
};

/* SIGINT, SIGTERM or SIGUSR1 ends the phase under way early: the runs made
 * so far are reported, the next phase (or the census) follows, so a soak
 * cut short by its operator still says what it found and leaves nothing. */
static volatile sig_atomic_t stop_phase;

static void on_stop(int sig)
{
	(void)sig;
	stop_phase = 1;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *worker(void *arg)
{
	struct phase *ph = arg;
	for (;;) {
		if (stop_phase)
			break;
		long i = atomic_fetch_add(&ph->next, 1);
		if (i >= ph->runs)
			break;
		size_t p = soak_pick(ph->offset + (uint64_t)i);
		const char *code = ph->host->codes[p];
		struct aj_result r;
		double t0 = now_ms();
		aj_run(ph->sb, code, strlen(code), &r);
		ph->lat[i] = now_ms() - t0;
		char why[400] = "";
		bool ok = soak_programs[p].check(&r, ph->cfg, ph->host, why, sizeof why);
		if (r.status == AJ_STATUS_SANDBOX_ERROR)
			atomic_fetch_add(&ph->sandbox_errors, 1);
		pthread_mutex_lock(&ph->mu);
		ph->per_prog[p]++;
		ph->per_prog_ms[p] += ph->lat[i];
		if (!ok) {
			ph->per_prog_bad[p]++;
			atomic_fetch_add(&ph->mismatches, 1);
			if (ph->nexamples < EXAMPLES)
				snprintf(ph->examples[ph->nexamples++], sizeof ph->examples[0],
					 "run %ld %s: %s", i, soak_programs[p].name, why);
			fprintf(stderr, "soak: mismatch: %s run %ld %s: %s\n", ph->name, i,
				soak_programs[p].name, why);
		}
		if (i == 199)
			ph->rss_at_200 = census_rss_kb(getpid());
		if ((i + 1) % 1000 == 0)
			fprintf(stderr, "soak: %s: %ld of %ld runs, %ld mismatches\n", ph->name, i + 1,
				ph->runs, (long)ph->mismatches);
		pthread_mutex_unlock(&ph->mu);
		aj_result_free(&r);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, long n, double q)
{
	if (n <= 0)
		return 0;
	long k = (long)ceil(q * (double)n) - 1;
	return sorted[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void run_phase(struct phase *ph, int threads)
{
	ph->lat = calloc((size_t)(ph->runs ? ph->runs : 1), sizeof *ph->lat);
	pthread_mutex_init(&ph->mu, NULL);
	stop_phase = 0;
	double t0 = now_ms();
	pthread_t th[THREADS];
	for (int t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, worker, ph);
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	ph->seconds = (now_ms() - t0) / 1e3;
	ph->rss_end = census_rss_kb(getpid());
	if (stop_phase) {
		/* Cut short: the runs made are the ones that got a latency. */
		long made = 0;
		for (size_t p = 0; p < soak_program_count; p++)
			made += ph->per_prog[p];
		fprintf(stderr, "soak: %s phase stopped after %ld of %ld runs\n", ph->name, made,
			ph->runs);
		ph->runs = made;
		ph->stopped = true;
	}
	qsort(ph->lat, (size_t)ph->runs, sizeof *ph->lat, cmp_double);
}

static void print_phase(const struct phase *ph, int threads)
{
	printf("  %-10s %7ld %3d %9ld %8ld %9.1f %8.1f %9.1f %9.1f%s\n", ph->name, ph->runs, threads,
	       (long)ph->mismatches, (long)ph->sandbox_errors, ph->seconds,
	       ph->seconds > 0 ? (double)ph->runs / ph->seconds : 0, pct(ph->lat, ph->runs, 0.5),
	       pct(ph->lat, ph->runs, 0.99), ph->stopped ? "  (cut short)" : "");
}

static void print_examples(const struct phase *ph)
{
	for (int i = 0; i < ph->nexamples; i++)
		printf("    mismatch (%s) %s\n", ph->name, ph->examples[i]);
}

static struct census_scope_def scope_for(const struct aj_config *cfg, bool docker)
{
	return (struct census_scope_def){.state_dir = cfg->state_dir,
					 .uid_base = cfg->uid_base,
					 .slots = cfg->slots,
					 .owner = getpid(),
					 .docker = docker};
}

/* The census after a close, given the asynchronous teardowns (a QEMU's
 * exit, the engine's container removal) up to 10 s to finish; the first
 * census with nothing of ours grown is the one reported. */
static int settle_and_compare(const char *title, const struct census_scope_def *s,
			      struct census *before)
{
	struct census after;
	int grew = 0;
	for (int i = 0; i < 20; i++) {
		census_take(s, &after);
		int g = 0;
		for (size_t k = 0; k < after.count && k < before->count; k++)
			if (before->item[k].scope == SCOPE_OURS &&
			    after.item[k].value > before->item[k].value)
				g++;
		if (!g || i == 19)
			break;
		census_free(&after);
		usleep(500000);
	}
	grew = census_compare(title, before, &after);
	census_free(&after);
	return grew;
}

static int soak_tier(const struct options *o, const struct tier_spec *t, struct soak_host *h,
		     long *total_runs)
{
	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.tier = t->tier;
	cfg.warm = t->warm;
	/* The Docker Engine takes uids up to 2^31 - 1 only: the docker tier
	 * gets a range of its own below that. */
	cfg.uid_base = t->tier == AJ_TIER_DOCKER ? o->docker_uid_base : o->uid_base;
	cfg.slots = SOAK_SENTINELS;
	static char state_dir[64];
	snprintf(state_dir, sizeof state_dir, "/run/agentjail-soak-%u", cfg.uid_base);
	cfg.state_dir = state_dir;
	cfg.image = o->image;
	cfg.docker_image = o->docker_image;
	/* CPU 1 s: the CPU loop ends quickly. Wall: room for the slowest
	 * program, so that only the sleeping one meets it. Output 256 KiB:
	 * the flood is stopped without moving 1 MiB. Wall 8 s: on a machine
	 * shared with other work (load 20 on 2 cores here) 512 MB reaching
	 * the memory limit, or 16,000 files, took past 4 s. gVisor's CPU limit
	 * counts its sentry's time (every system call a trip through ptrace
	 * here), and the microVM's its whole VM's, under TCG an emulated CPU:
	 * print('hello') there takes more than 1 s, and 16,000 files or 64 MiB
	 * of writes more than 5 s of CPU and 10 of wall on a busy machine, so
	 * they get 15 s of CPU and 30 of wall. */
	bool emulated = t->tier == AJ_TIER_GVISOR || t->tier == AJ_TIER_MICROVM;
	cfg.limits.cpu_sec = emulated ? 15 : 1;
	cfg.limits.wall_sec = emulated ? 30 : 8;
	cfg.limits.output_kb = 256;
	/* 16 MiB of writable space (an inode cap of 4,160 files) and 8 MiB
	 * files: the disk, big-file and many-files programs meet their limit
	 * in a quarter of the work of the defaults, which on gVisor's ptrace
	 * platform (16,448 files: more than 15 s of CPU) and under TCG is
	 * what lets them end on the limit they test rather than on the CPU's. */
	cfg.limits.disk_mb = 16;
	cfg.limits.file_size_mb = 8;

	printf("\n== %s: %ld sequential runs, %ld at concurrency %d, on one sandbox (uid base %u, "
	       "CPU %u s, wall %.0f s, disk %u MiB, files %u MiB)\n",
	       t->name, t->seq, t->conc, THREADS, cfg.uid_base, cfg.limits.cpu_sec,
	       cfg.limits.wall_sec, cfg.limits.disk_mb, cfg.limits.file_size_mb);
	fflush(stdout);
	struct census_scope_def scope = scope_for(&cfg, t->tier == AJ_TIER_DOCKER);
	struct census before;
	census_take(&scope, &before);

	struct aj_error err = {0};
	struct aj_sandbox *sb = NULL;
	if (aj_open(&cfg, &sb, &err)) {
		printf("  aj_open failed: %s\n", err.message);
		census_free(&before);
		return 1;
	}
	h->uid_base = cfg.uid_base;
	if (soak_sentinels_start(h)) {
		printf("  could not start the sentinels: %s\n", strerror(errno));
		aj_close(sb);
		census_free(&before);
		return 1;
	}
	static struct phase seq, conc;
	memset(&seq, 0, sizeof seq);
	memset(&conc, 0, sizeof conc);
	seq = (struct phase){.name = "sequential", .runs = t->seq, .sb = sb, .cfg = &cfg,
			     .host = h, .offset = 0};
	conc = (struct phase){.name = "concurrent", .runs = t->conc, .sb = sb, .cfg = &cfg,
			      .host = h, .offset = (uint64_t)t->seq};
	run_phase(&seq, 1);
	run_phase(&conc, THREADS);
	/* A daemon of the last runs would act 1.5 s after its run. */
	sleep(2);
	char report[4096];
	int evidence = soak_host_evidence(h, report, sizeof report);
	int sentinels_dead = soak_sentinels_stop(h);
	h->uid_base = o->uid_base;
	aj_close(sb);

	printf("  %-10s %7s %3s %9s %8s %9s %8s %9s %9s\n", "phase", "runs", "thr", "mismatch",
	       "sbx_err", "wall s", "runs/s", "median ms", "p99 ms");
	print_phase(&seq, 1);
	print_phase(&conc, THREADS);
	printf("  programs (runs/mismatches/mean ms):");
	for (size_t p = 0; p < soak_program_count; p++) {
		long runs = seq.per_prog[p] + conc.per_prog[p];
		long bad = seq.per_prog_bad[p] + conc.per_prog_bad[p];
		double ms = seq.per_prog_ms[p] + conc.per_prog_ms[p];
		printf("%s %s %ld/%ld/%.0f", p % 5 ? "," : "\n   ", soak_programs[p].name, runs, bad,
		       runs ? ms / (double)runs : 0.0);
	}
	printf("\n");
	print_examples(&seq);
	print_examples(&conc);
	if (seq.runs > 200)
		printf("  caller VmRSS: %ld KiB after run 200, %ld KiB after run %ld of the "
		       "sequential phase (%+ld KiB), %ld KiB after the concurrent phase\n",
		       seq.rss_at_200, seq.rss_end, seq.runs, seq.rss_end - seq.rss_at_200,
		       conc.rss_end);
	if (evidence || sentinels_dead)
		printf("  ESCAPE EVIDENCE on the host:\n%s", report);
	else
		printf("  host evidence: none (listeners accepted nothing, no marker file, all %d "
		       "sentinels alive)\n", SOAK_SENTINELS);
	int grew = settle_and_compare(t->name, &scope, &before);
	census_free(&before);
	free(seq.lat);
	free(conc.lat);
	*total_runs += seq.runs + conc.runs;
	long bad = seq.mismatches + conc.mismatches;
	printf("  => %s: %ld runs, %ld mismatches, %d leftover rows%s\n", t->name,
	       seq.runs + conc.runs, bad, grew, evidence || sentinels_dead ? ", ESCAPE EVIDENCE" : "");
	fflush(stdout);
	return (bad || grew || evidence || sentinels_dead) ? 1 : 0;
}

static int soak_mcp_phase(const struct options *o, struct soak_host *h)
{
	printf("\n== mcp: agentjail mcp --tier process, %ld tools/call run_python, %d in flight\n",
	       o->mcp, 4);
	fflush(stdout);
	/* Anything the server leaves when it exits is re-parented here, where
	 * the census sees it as a descendant, rather than to init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	struct aj_config def;
	aj_config_init(&def);
	struct census_scope_def scope = {.state_dir = "/run/agentjail",
					 .uid_base = def.uid_base,
					 .slots = def.slots,
					 .owner = getpid(),
					 .docker = false};
	struct census before;
	census_take(&scope, &before);
	/* Another agentjail on this machine may use the default uid range and
	 * state directory too: those rows are shown, the descendants decide. */
	for (size_t i = 0; i < before.count; i++)
		if (strstr(before.item[i].name, "sandbox uids") ||
		    strstr(before.item[i].name, "slot locks held"))
			before.item[i].scope = SCOPE_SHARED;
	struct soak_mcp_result m;
	int rc = soak_mcp(o->agentjail, h, o->mcp, o->mcp_warm, &m);
	sleep(2);
	char report[4096];
	int evidence = soak_host_evidence(h, report, sizeof report);
	/* Its runs' cgroups are named for it: run-SERVERPID-*. */
	scope.owner = m.pid;
	int grew = settle_and_compare("mcp", &scope, &before);
	census_free(&before);
	/* Reap what was re-parented here (counted above), then stop being a
	 * subreaper. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	long growth = m.rss_end_kb - m.rss_warm_kb;
	long after_warm = m.calls - m.warm_at;
	printf("  calls %ld in %.1f s (%.1f calls/s), mismatches %ld%s%s\n", m.calls, m.seconds,
	       m.seconds > 0 ? (double)m.calls / m.seconds : 0, m.mismatches,
	       m.mismatches ? "; first: " : "", m.first_mismatch);
	printf("  server VmRSS: %ld KiB after call %ld, %ld KiB after call %ld: %+ld KiB "
	       "(%+.1f bytes a call; bound %d KiB)\n",
	       m.rss_warm_kb, m.warm_at, m.rss_end_kb, m.calls, growth,
	       after_warm > 0 ? (double)growth * 1024.0 / (double)after_warm : 0.0,
	       MCP_GROWTH_MAX_KB);
	printf("  on stdin's end: %s (exit status %d)\n",
	       m.clean_exit ? "exited 0 by itself" : "DID NOT EXIT CLEANLY", m.exit_status);
	if (evidence)
		printf("  ESCAPE EVIDENCE on the host:\n%s", report);
	bool bad = rc || m.mismatches || !m.clean_exit || growth > MCP_GROWTH_MAX_KB || grew ||
		   evidence || m.calls < o->mcp;
	printf("  => mcp: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

/* ---- options ---- */

static const char usage[] =
	"usage: soak [--seq N] [--conc N] [--tiers LIST] [--uid-base N] [--mcp N]\n"
	"            [--image DIR] [--docker-image I] [--agentjail PATH]\n"
	"\n"
	"  --seq N        sequential runs per tier (default 10000)\n"
	"  --conc N       runs at concurrency 4 per tier (default 1000)\n"
	"  --tiers LIST   comma-separated: process, container, microvm, docker, gvisor,\n"
	"                 process-warm, container-warm; each may carry its own counts,\n"
	"                 docker:500:200 (default: every tier aj_check finds available,\n"
	"                 and warm mode of process and container; none: the MCP\n"
	"                 server alone)\n"
	"  --uid-base N   first sandbox uid (default 2150000000); state in\n"
	"                 /run/agentjail-soak-N\n"
	"  --docker-uid-base N  the docker tier's (default 2145000000: the engine\n"
	"                 takes uids up to 2147483647 only)\n"
	"  --mcp N        tools/call run_python calls to agentjail mcp (default 2000;\n"
	"                 0: none); VmRSS sampled after 200 and at the end\n"
	"  --image DIR    the container, microvm and gvisor tiers' image\n"
	"  --docker-image I   the docker tier's engine image\n"
	"  --agentjail PATH   the command for the MCP phase (default build/agentjail)\n";

static long number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		fprintf(stderr, "soak: %s wants a whole number, not '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static int parse_tier(const char *s, struct tier_spec *t, long seq, long conc)
{
	char name[64];
	snprintf(name, sizeof name, "%s", s);
	t->seq = seq, t->conc = conc;
	char *c1 = strchr(name, ':');
	if (c1) {
		*c1++ = '\0';
		char *c2 = strchr(c1, ':');
		if (c2)
			*c2++ = '\0', t->conc = number(c2, "a tier's concurrent count");
		t->seq = number(c1, "a tier's sequential count");
	}
	snprintf(t->name, sizeof t->name, "%.31s", name);
	char *w = strstr(name, "-warm");
	t->warm = w && !w[5];
	if (w)
		*w = '\0';
	if (aj_tier_parse(name, &t->tier))
		return -1;
	return t->warm && t->tier != AJ_TIER_PROCESS && t->tier != AJ_TIER_CONTAINER ? -1 : 0;
}

static void parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.seq = 10000, .conc = 1000, .mcp = 2000, .mcp_warm = 200,
			      .uid_base = 2150000000u, .docker_uid_base = 2145000000u,
			      .agentjail = "build/agentjail"};
	const char *tiers = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		}
		if (!v) {
			fprintf(stderr, "soak: %s wants a value\n%s", a, usage);
			exit(2);
		}
		i++;
		if (!strcmp(a, "--seq"))
			o->seq = number(v, a);
		else if (!strcmp(a, "--conc"))
			o->conc = number(v, a);
		else if (!strcmp(a, "--mcp"))
			o->mcp = number(v, a);
		else if (!strcmp(a, "--uid-base"))
			o->uid_base = (uint32_t)number(v, a);
		else if (!strcmp(a, "--docker-uid-base"))
			o->docker_uid_base = (uint32_t)number(v, a);
		else if (!strcmp(a, "--tiers"))
			tiers = *v ? v : NULL;
		else if (!strcmp(a, "--image"))
			o->image = v;
		else if (!strcmp(a, "--docker-image"))
			o->docker_image = v;
		else if (!strcmp(a, "--agentjail"))
			o->agentjail = v;
		else {
			fprintf(stderr, "soak: unknown option %s\n%s", a, usage);
			exit(2);
		}
	}
	if (o->mcp_warm >= o->mcp)
		o->mcp_warm = o->mcp / 10;
	if (tiers && !strcmp(tiers, "none")) {
		o->tiers_given = true; /* the MCP server alone */
	} else if (tiers) {
		char *list = strdup(tiers), *save = NULL;
		for (char *t = strtok_r(list, ", ", &save); t && o->ntiers < MAX_TIERS;
		     t = strtok_r(NULL, ", ", &save)) {
			if (parse_tier(t, &o->tiers[o->ntiers], o->seq, o->conc)) {
				fprintf(stderr, "soak: no tier '%s'\n%s", t, usage);
				exit(2);
			}
			o->ntiers++;
		}
		free(list);
		o->tiers_given = true;
	}
}

/* Every tier aj_check finds available, and warm mode where it exists. */
static void default_tiers(struct options *o)
{
	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.image = o->image;
	cfg.docker_image = o->docker_image;
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		struct aj_error err = {0};
		cfg.tier = (enum aj_tier)t;
		if (aj_check((enum aj_tier)t, &cfg, &err)) {
			printf("soak: %s left out: %s\n", aj_tier_name((enum aj_tier)t), err.message);
			continue;
		}
		struct tier_spec *s = &o->tiers[o->ntiers++];
		*s = (struct tier_spec){.tier = (enum aj_tier)t, .seq = o->seq, .conc = o->conc};
		snprintf(s->name, sizeof s->name, "%s", aj_tier_name((enum aj_tier)t));
		if (t == AJ_TIER_PROCESS || t == AJ_TIER_CONTAINER) {
			s = &o->tiers[o->ntiers++];
			*s = (struct tier_spec){.tier = (enum aj_tier)t, .warm = true, .seq = o->seq,
						.conc = o->conc};
			snprintf(s->name, sizeof s->name, "%s-warm", aj_tier_name((enum aj_tier)t));
		}
	}
}

int main(int argc, char **argv)
{
	struct options o;
	parse(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		printf("soak: not root: the sandboxes run without uid slots, and the sentinels "
		       "share this uid\n");
	if (!o.tiers_given)
		default_tiers(&o);
	/* A run's sandbox reaches this process only through aj_run; a
	 * broken pipe to the MCP server must be an error, not a death. */
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_stop};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	struct soak_host host;
	int rc = soak_host_setup(&host, o.uid_base);
	if (rc) {
		fprintf(stderr, "soak: setting up the host's side: %s\n", strerror(-rc));
		return 1;
	}
	size_t hostile = 0;
	for (size_t p = 0; p < soak_program_count; p++)
		hostile += soak_programs[p].hostile;
	printf("soak: %zu tiers, uid base %u, image %s, docker image %s; %zu programs, %zu of "
	       "them hostile\n",
	       o.ntiers, o.uid_base, o.image ? o.image : "default",
	       o.docker_image ? o.docker_image : "default", soak_program_count, hostile);
	int failed = 0;
	long total = 0;
	double t0 = now_ms();
	for (size_t i = 0; i < o.ntiers; i++)
		failed += soak_tier(&o, &o.tiers[i], &host, &total);
	if (o.mcp > 0)
		failed += soak_mcp_phase(&o, &host);
	soak_host_teardown(&host);
	printf("\nsoak: %ld runs on %zu tiers%s in %.0f s: %s\n", total, o.ntiers,
	       o.mcp > 0 ? " and the MCP server" : "", (now_ms() - t0) / 1e3,
	       failed ? "FAILED" : "no mismatch, nothing left");
	return failed ? 1 : 0;
}
