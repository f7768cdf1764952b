/* agentjail bench: what each tier costs, for print(1), beside bare Python and
 * the peers installed here, all measured in one run.
 *
 *   latency      every row once per round, rounds interleaved (bare, process,
 *                container, ..., peers, bare, ...) after warm-up rounds, so
 *                drift lands on every row alike; median, p95, p99 (nearest
 *                rank) and the ratio of medians to bare `python3 -I`. The
 *                tiers run through the library (aj_run on an open sandbox:
 *                what `agentjail mcp` pays per call); bare Python and the
 *                peers are spawned commands.
 *   throughput   runs per second with 1 and with 2 x cores calls at once.
 *   microvm      cold boot + snapshot (a memory size of its own), a restore
 *                per run (the latency row), and a warm pool of 2.
 *   gvisor       a sandbox started per run (the latency row), and a warm
 *                pool of 2 started ahead (vm_pool).
 *   warm         process and container in warm mode (a fork of a zygote per
 *                run) as latency rows beside their cold ones; and a program
 *                importing numpy and pandas: bare, a cold run and a warm run
 *                with those preloaded, interleaved, with the ratio of the
 *                warm run to the cold one.
 *
 * Figures only, never a verdict: latency depends on the machine. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/internal.h"
#include "../docker/api.h"
#include "../tiers/tier.h"
#include "bench_commands.h"
#include "bench_egress.h"
#include "bench_stream.h"
#include "cli.h"
#include "measure.h"

static const char usage[] =
	"usage: agentjail bench [--tier T ...] [--runs N] [--quick] [--no-peers] [--json]\n"
	"                       [--image NAME|DIR] [--docker-image I] [--docker-socket P]\n"
	"       agentjail bench --egress [--runs N] [--quick] [--json]\n"
	"       agentjail bench --stream [--tier T ...] [--runs N] [--quick] [--json]\n"
	"       agentjail bench --commands [--tier T ...] [--runs N] [--quick] [--json]\n"
	"\n"
	"Times print(1) in every tier available here (or each --tier), beside bare\n"
	"python3 -I and the peers installed (bwrap, nsjail, docker run with the seed's\n"
	"flags): median, p95, p99 and the ratio to bare Python, interleaved after\n"
	"warm-up; throughput at 1 and 2 x cores concurrent calls; for microvm, cold\n"
	"boot, restore per run and a warm pool; for gvisor, a warm pool. --runs N\n"
	"rounds (default 100; p95 needs 20 and p99 100, else they print as -);\n"
	"--quick: 5 rounds and small throughput runs.\n"
	"Then import numpy, pandas: bare, cold and warm, on process and container;\n"
	"the container runs --image if it has them, else the datascience image\n"
	"(agentjail image build --preset datascience), else another that has them.\n"
	"--egress: the egress proxy instead, from the host: a small GET's p50 and p95\n"
	"direct and through the proxy (10 x N rounds), and a 100 MiB download's\n"
	"MiB/s direct and through it (5 rounds), with the ratios.\n"
	"--stream: streaming output instead, on the process tier (or each --tier):\n"
	"the p50 and p95 from the program's write to the stream's fn, and\n"
	"aj_run against aj_run_streaming on print(1) and on 1 MiB of output,\n"
	"interleaved over N rounds: medians and the ratio.\n"
	"--commands: commands and JavaScript in a session instead, on process and\n"
	"container (or each --tier): exec of true against bare /bin/true, a\n"
	"background command's first byte, and console.log(1) one-shot and in a\n"
	"session against bare node -e, interleaved over N rounds: medians.\n";

#define PROGRAM "print(1)\n"
#define MAX_ROWS 14
#define IMPORTS "import numpy, pandas\nprint(1)\n"

extern char **environ;

struct row {
	char name[48];
	enum aj_tier tier;
	bool is_tier;
	struct aj_sandbox *sb;
	char **argv;          /* a command row */
	double *v;
	int n, failed;
	double tput1, tputn;  /* runs/s; 0 if not measured */
};

static double run_code_ms(struct aj_sandbox *sb, const char *code)
{
	struct aj_result r;
	double s = now_ms();
	aj_run(sb, code, strlen(code), &r);
	double t = now_ms() - s;
	bool ok = r.status == AJ_STATUS_OK;
	aj_result_free(&r);
	return ok ? t : -1;
}

static double run_ms(struct aj_sandbox *sb)
{
	return run_code_ms(sb, PROGRAM);
}

static double once(struct row *r)
{
	return r->is_tier ? run_ms(r->sb) : measure_spawn_ok_ms(r->argv);
}

static char **argv_of(const char *first, ...)
{
	char **v = calloc(40, sizeof *v);
	va_list ap;
	va_start(ap, first);
	int i = 0;
	for (const char *a = first; a && i < 39; a = va_arg(ap, const char *))
		v[i++] = strdup(a);
	va_end(ap);
	return v;
}

static void first_line(const char *cmd, char *out, size_t n)
{
	out[0] = 0;
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(out, (int)n, p))
		out[strcspn(out, "\n")] = 0;
	pclose(p);
}

/* ---- throughput ---- */

struct tput {
	struct aj_sandbox *sb;
	int runs;
	int ok;
};

static void *tput_worker(void *arg)
{
	struct tput *t = arg;
	for (int i = 0; i < t->runs; i++)
		t->ok += run_ms(t->sb) >= 0;
	return NULL;
}

static double throughput(struct aj_sandbox *sb, int conc, int per_thread)
{
	pthread_t th[64];
	struct tput w[64];
	double s = now_ms();
	int started = 0;
	for (int i = 0; i < conc && i < 64; i++) {
		w[i] = (struct tput){.sb = sb, .runs = per_thread};
		if (pthread_create(&th[i], NULL, tput_worker, &w[i]) == 0)
			started++;
	}
	int ok = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		ok += w[i].ok;
	}
	double sec = (now_ms() - s) / 1000.0;
	return sec > 0 ? ok / sec : 0;
}

/* ---- microvm's regimes ---- */

/* The image's vm/ directory, where the microvm tier keeps its snapshots. */
static void vm_dir(const struct aj_config *cfg, char *dir, size_t n)
{
	const char *img = cfg->image ? cfg->image : AJ_DEFAULT_IMAGE;
	const char *base = getenv("AGENTJAIL_IMAGES");
	if (img[0] == '/')
		snprintf(dir, n, "%s/vm", img);
	else
		snprintf(dir, n, "%s/%s/vm", base && base[0] == '/' ? base : AJ_DEFAULT_IMAGES_DIR,
			 img);
}

/* Snapshots for a guest of memory_mb (snapshot-ACCEL-MB): with remove,
 * deletes them; returns how many there were. */
static int snapshots(const struct aj_config *cfg, uint32_t memory_mb, bool remove)
{
	char dir[PATH_MAX];
	vm_dir(cfg, dir, sizeof dir);
	char suffix[32];
	/* The guest gets the program's memory plus the VM's own 192 MiB. */
	snprintf(suffix, sizeof suffix, "-%u", memory_mb + 192);
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name), sl = strlen(suffix);
		if (strncmp(de->d_name, "snapshot-", 9) || l < sl ||
		    strcmp(de->d_name + l - sl, suffix))
			continue;
		n++;
		if (!remove)
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		char *argv[] = {"/bin/rm", "-rf", "--", path, NULL};
		measure_spawn_ok_ms(argv);
	}
	if (d)
		closedir(d);
	return n;
}

struct regime {
	const char *name;
	double v[64];
	int n;
};

static void pool_regime(const struct aj_config *base, enum aj_tier tier, int runs,
			struct regime *pool);

static void microvm_regimes(const struct aj_config *base, int runs, struct regime *cold,
			    struct regime *pool)
{
	int ncold = runs >= 20 ? 3 : 1;
	uint32_t next = 200 + (uint32_t)(getpid() % 50);
	for (int i = 0; i < ncold; i++) {
		struct aj_config c = *base;
		c.tier = AJ_TIER_MICROVM;
		/* A memory size with no snapshot yet: aj_open boots and saves
		 * anew, and the snapshot removed afterwards is this run's own,
		 * never a deployer's. */
		do
			c.limits.memory_mb = next++;
		while (snapshots(&c, c.limits.memory_mb, false) && next < 1200);
		struct aj_sandbox *sb;
		struct aj_error err;
		double s = now_ms();
		if (aj_open(&c, &sb, &err) == 0) {
			cold->v[cold->n++] = now_ms() - s;
			aj_close(sb);
		}
		snapshots(&c, c.limits.memory_mb, true);
	}
	pool_regime(base, AJ_TIER_MICROVM, runs, pool);
}

/* A tier's warm pool of 2 (vm_pool): runs spaced as an agent's calls are,
 * so the pool refills between them. */
static void pool_regime(const struct aj_config *base, enum aj_tier tier, int runs,
			struct regime *pool)
{
	struct aj_config c = *base;
	c.tier = tier;
	c.vm_pool = 2;
	struct aj_sandbox *sb;
	struct aj_error err;
	if (aj_open(&c, &sb, &err))
		return;
	sleep(3); /* let the pool fill */
	int n = runs < 10 ? 3 : 10;
	for (int i = 0; i < n; i++) {
		double t = run_ms(sb);
		if (t >= 0)
			pool->v[pool->n++] = t;
		usleep(1500 * 1000); /* an agent's pause between calls: the pool refills */
	}
	aj_close(sb);
}

/* Runs, median, p95, p99 and the ratio to bare. A percentile that n runs
 * cannot tell apart from the maximum (p95 below 20 runs, p99 below 100) is
 * null rather than a maximum under another name; so is a ratio to a bare
 * row that has no runs. */
/* A program importing numpy and pandas on a tier: bare Python, a cold run
 * and a warm run with both preloaded, interleaved after one warm-up round.
 * v[0..2] get the samples; *why says why it was not measured. */
struct imports {
	enum aj_tier tier;
	const char *image;      /* container: the image with numpy; NULL: cfg's */
	struct regime r[3];     /* bare, cold, warm */
	char why[AJ_ERROR_MAX];
};

/* Whether image (a name, or an absolute path) lists numpy and pandas among
 * the packages its manifest says it was built with. */
static bool image_has_numpy(const struct aj_config *cfg, const char *image)
{
	struct aj_config c = *cfg;
	c.image = image;
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct aj_error err;
	if (image_dir(&c, dir, sizeof dir, &err))
		return false;
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	json_t *m = json_load_file(path, 0, NULL);
	json_t *pkgs = json_object_get(m, "packages"), *p;
	size_t i;
	int found = 0;
	json_array_foreach(pkgs, i, p) {
		const char *name = json_string_value(p);
		found |= name && !strcmp(name, "python3-numpy") ? 1 : 0;
		found |= name && !strcmp(name, "python3-pandas") ? 2 : 0;
	}
	json_decref(m);
	return found == 3;
}

/* The numpy + pandas row of the container tier needs an image that has
 * them, which the default one does not: --image if it has, else the
 * datascience preset's, else the first other image here that has them.
 * NULL if none: the row then says how to make one. */
static const char *numpy_image(const struct aj_config *cfg, char *name, size_t n)
{
	const char *given = cfg->image ? cfg->image : AJ_DEFAULT_IMAGE;
	name[0] = '\0';
	if (image_has_numpy(cfg, given))
		snprintf(name, n, "%s", given);
	else if (image_has_numpy(cfg, "datascience"))
		snprintf(name, n, "datascience");
	if (name[0])
		return name;
	const char *base = getenv("AGENTJAIL_IMAGES");
	struct dirent **list;
	int k = scandir(base && base[0] == '/' ? base : AJ_DEFAULT_IMAGES_DIR, &list, NULL,
			alphasort);
	for (int i = 0; i < k; i++) {
		if (!name[0] && list[i]->d_name[0] != '.' && image_has_numpy(cfg, list[i]->d_name))
			snprintf(name, n, "%s", list[i]->d_name);
		free(list[i]);
	}
	if (k >= 0)
		free(list);
	return name[0] ? name : NULL;
}

static void imports_regime(const struct aj_config *base, const char *python, int runs,
			   struct imports *im)
{
	struct aj_config cold = *base, warm = *base;
	cold.tier = warm.tier = im->tier;
	if (im->image)
		cold.image = warm.image = im->image;
	warm.warm = true;
	warm.preload = "numpy,pandas";
	struct aj_sandbox *cs = NULL, *ws = NULL;
	struct aj_error err;
	im->r[0].name = "bare python3 -I";
	im->r[1].name = "cold run";
	im->r[2].name = "warm run, preloaded";
	if (aj_open(&cold, &cs, &err) || aj_open(&warm, &ws, &err)) {
		snprintf(im->why, sizeof im->why, "%s", err.message);
		if (cs)
			aj_close(cs);
		return;
	}
	char **bare = argv_of(python, "-I", "-c", IMPORTS, NULL);
	if (runs > 64)
		runs = 64;
	for (int round = -1; round < runs; round++) {
		double t[3] = {measure_spawn_ok_ms(bare), run_code_ms(cs, IMPORTS),
			       run_code_ms(ws, IMPORTS)};
		for (int k = 0; k < 3 && round >= 0; k++)
			if (t[k] >= 0)
				im->r[k].v[im->r[k].n++] = t[k];
	}
	for (char **a = bare; *a; a++)
		free(*a);
	free(bare);
	aj_close(cs);
	aj_close(ws);
	for (int k = 0; k < 3; k++)
		measure_sort(im->r[k].v, (size_t)im->r[k].n);
	if (!im->r[2].n)
		snprintf(im->why, sizeof im->why, "every warm run failed");
}

static json_t *stats_json(const double *sorted, int n, double base)
{
	if (!n)
		return json_pack("{s:i}", "runs", 0);
	double med = measure_percentile(sorted, (size_t)n, 50);
	return json_pack("{s:i, s:f, s:o, s:o, s:o}", "runs", n, "median_ms", med, "p95_ms",
			 n >= 20 ? json_real(measure_percentile(sorted, (size_t)n, 95)) : json_null(),
			 "p99_ms",
			 n >= 100 ? json_real(measure_percentile(sorted, (size_t)n, 99)) : json_null(),
			 "vs_bare", base > 0 ? json_real(med / base) : json_null());
}

static void print_ms(json_t *v)
{
	if (json_is_real(v))
		printf(" %9.1f", json_real_value(v));
	else
		printf(" %9s", "-");
}

enum { OPT_JSON = 3100, OPT_QUICK, OPT_RUNS, OPT_NO_PEERS, OPT_EGRESS, OPT_STREAM,
       OPT_COMMANDS };

struct bench_args {
	bool json, quick, peers, egress, stream, commands;
	long runs;
};

static int bench_opt(int opt, const char *arg, void *ctx)
{
	struct bench_args *a = ctx;
	char *end;
	if (opt == OPT_JSON) {
		a->json = true;
	} else if (opt == OPT_QUICK) {
		a->quick = true;
	} else if (opt == OPT_NO_PEERS) {
		a->peers = false;
	} else if (opt == OPT_EGRESS) {
		a->egress = true;
	} else if (opt == OPT_STREAM) {
		a->stream = true;
	} else if (opt == OPT_COMMANDS) {
		a->commands = true;
	} else if (opt == OPT_RUNS) {
		a->runs = strtol(arg, &end, 10);
		if (*end || a->runs < 1 || a->runs > 10000) {
			cli_error("bench: --runs: expected 1 to 10000, got '%s'", arg);
			return -1;
		}
	}
	return 0;
}

/* One bench: what was asked, the machine, and every figure, filled step by
 * step (cmd_bench). */
struct bench {
	struct aj_config cfg;
	struct bench_args args;
	struct tier_choice choice;
	long runs;
	int warm;               /* warm-up rounds */
	long cores;
	const char *python;
	/* the machine */
	struct utsname u;
	char cpu[160], pyver[64], qemu[128], docker[128];
	char sock[108];         /* the Docker Engine's socket */
	/* latency and throughput rows */
	struct row rows[MAX_ROWS];
	int nr;
	int conc;               /* the throughput's calls at once */
	char unavailable[AJ_TIER_COUNT][AJ_ERROR_MAX];
	bool have_microvm, have_gvisor;
	struct regime cold, pool, gpool;
	/* numpy + pandas, on the tiers with a warm mode */
	struct imports imp[2];
	char numpy_name[256];
	int import_runs;
};

/* The machine, at the top of the table. */
static void bench_machine(struct bench *b)
{
	uname(&b->u);
	measure_cpu_model(b->cpu, sizeof b->cpu);
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "%s -I -c 'import platform; print(platform.python_version())'",
		 b->python);
	first_line(cmd, b->pyver, sizeof b->pyver);
	first_line("qemu-system-x86_64 --version 2>/dev/null", b->qemu, sizeof b->qemu);
	struct aj_error err;
	if (docker_socket_path(b->cfg.docker_socket, b->sock, sizeof b->sock, &err) ||
	    docker_version(b->sock, b->docker, sizeof b->docker, &err))
		snprintf(b->docker, sizeof b->docker, "none");
}

static void add_tier_row(struct bench *b, enum aj_tier t, struct aj_sandbox *sb, bool warm)
{
	struct row *r = &b->rows[b->nr++];
	snprintf(r->name, sizeof r->name, "agentjail %s%s", aj_tier_name(t),
		 warm ? " (warm)" : t == AJ_TIER_MICROVM ? " (restore)" : "");
	r->is_tier = true;
	r->tier = t;
	r->sb = sb;
}

/* Bare Python, then a row for each tier that opens here (and its warm
 * mode, where it has one); why the others could not. */
static void tier_rows(struct bench *b)
{
	snprintf(b->rows[b->nr].name, sizeof b->rows[b->nr].name, "bare python3 -I");
	b->rows[b->nr++].argv = argv_of(b->python, "-I", "-c", "print(1)", NULL);
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		if (b->choice.any && !b->choice.chosen[t])
			continue;
		struct aj_config tc = b->cfg;
		tc.tier = (enum aj_tier)t;
		struct aj_sandbox *sb;
		struct aj_error err;
		if (aj_check((enum aj_tier)t, &tc, &err) || aj_open(&tc, &sb, &err)) {
			snprintf(b->unavailable[t], sizeof b->unavailable[t], "%s", err.message);
			continue;
		}
		b->have_microvm |= t == AJ_TIER_MICROVM;
		b->have_gvisor |= t == AJ_TIER_GVISOR;
		add_tier_row(b, (enum aj_tier)t, sb, false);
		if (t != AJ_TIER_PROCESS && t != AJ_TIER_CONTAINER)
			continue;
		/* The same tier in warm mode: a fork of a zygote per run. */
		tc.warm = true;
		if (aj_open(&tc, &sb, &err)) {
			fprintf(stderr, "bench: %s warm: %s\n", aj_tier_name((enum aj_tier)t),
				err.message);
			continue;
		}
		add_tier_row(b, (enum aj_tier)t, sb, true);
	}
}

/* The docker peer's command: the seed's flags on the tier's image. */
static char **docker_peer(const struct bench *b, const char *dk)
{
	char image[300] = "";
	const char *img = b->cfg.docker_image;
	if (!img) {
		const char *n = b->cfg.image ? b->cfg.image : AJ_DEFAULT_IMAGE;
		const char *sl = strrchr(n, '/');
		snprintf(image, sizeof image, "agentjail/%s", sl ? sl + 1 : n);
		img = image;
	}
	char host_opt[140];
	snprintf(host_opt, sizeof host_opt, "unix://%s", b->sock);
	/* --pull never: a missing image is a failed row, never a download
	 * from a registry. */
	return argv_of(dk, "-H", host_opt, "run", "--rm", "--pull", "never", "--network", "none",
		       "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		       "-m", "256m", "--memory-swap", "256m", "--cpus", "1", "--pids-limit", "64",
		       "--user", "1000:1000", "--tmpfs", "/tmp:size=64m", img, "python3", "-I",
		       "-c", "print(1)", NULL);
}

/* A row for each peer installed here. */
static void peer_rows(struct bench *b)
{
	char *bwrap = measure_find_in_path("bwrap");
	char *nsjail = measure_find_in_path("nsjail");
	char *dk = measure_find_in_path("docker");
	struct row *rows = b->rows;
	if (bwrap) {
		snprintf(rows[b->nr].name, sizeof rows[b->nr].name, "peer: bwrap");
		rows[b->nr++].argv = argv_of(bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
					     "/proc", "--tmpfs", "/tmp", "--unshare-all",
					     "--die-with-parent", b->python, "-I", "-c", "print(1)",
					     NULL);
	}
	if (nsjail) {
		snprintf(rows[b->nr].name, sizeof rows[b->nr].name, "peer: nsjail");
		rows[b->nr++].argv = argv_of(nsjail, "-Mo", "--quiet", "-R", "/", "-T", "/tmp", "--",
					     b->python, "-I", "-c", "print(1)", NULL);
	}
	if (dk && strcmp(b->docker, "none")) {
		snprintf(rows[b->nr].name, sizeof rows[b->nr].name, "peer: docker run (seed flags)");
		rows[b->nr++].argv = docker_peer(b, dk);
	}
	free(bwrap);
	free(nsjail);
	free(dk);
}

/* Every row once per round, rounds interleaved after the warm-up. */
static void latency(struct bench *b)
{
	if (!b->args.json)
		fprintf(stderr, "bench: %ld rounds of %d rows after %d warm-up...\n", b->runs, b->nr,
			b->warm);
	for (int i = 0; i < b->nr; i++)
		b->rows[i].v = calloc((size_t)b->runs, sizeof(double));
	for (long round = -b->warm; round < b->runs; round++)
		for (int i = 0; i < b->nr; i++) {
			struct row *r = &b->rows[i];
			double t = once(r);
			if (round < 0)
				continue;
			if (t < 0)
				r->failed++;
			else
				r->v[r->n++] = t;
		}
}

/* Throughput: 1 call at a time, then 2 x cores at once. */
static void throughputs(struct bench *b)
{
	b->conc = (int)(2 * b->cores > 64 ? 64 : 2 * b->cores);
	int per = b->args.quick ? 1 : (int)(b->runs / 10 > 2 ? b->runs / 10 : 2);
	for (int i = 0; i < b->nr; i++) {
		if (!b->rows[i].is_tier)
			continue;
		b->rows[i].tput1 = throughput(b->rows[i].sb, 1, per * b->conc);
		b->rows[i].tputn = throughput(b->rows[i].sb, b->conc, per);
	}
}

/* numpy + pandas, cold and warm, on the tiers with a warm mode. */
static void imports_rows(struct bench *b)
{
	b->imp[0] = (struct imports){.tier = AJ_TIER_PROCESS};
	b->imp[1] = (struct imports){.tier = AJ_TIER_CONTAINER};
	b->import_runs = b->args.quick ? 3 : (int)(b->runs < 10 ? b->runs : 10);
	for (int k = 0; k < 2; k++) {
		struct imports *im = &b->imp[k];
		if ((b->choice.any && !b->choice.chosen[im->tier]) || b->unavailable[im->tier][0]) {
			snprintf(im->why, sizeof im->why, "tier not measured");
			continue;
		}
		if (im->tier == AJ_TIER_CONTAINER &&
		    !(im->image = numpy_image(&b->cfg, b->numpy_name, sizeof b->numpy_name))) {
			snprintf(im->why, sizeof im->why,
				 "no image here has numpy and pandas; make one with "
				 "'agentjail image build --preset datascience'");
			continue;
		}
		if (!b->args.json)
			fprintf(stderr, "bench: numpy + pandas on %s, cold and warm...\n",
				aj_tier_name(im->tier));
		imports_regime(&b->cfg, b->python, b->import_runs, im);
	}
}

/* Everything measured: runs, closes the rows' sandboxes and sorts each
 * row's samples once, in place, for its percentiles. */
static void measure_all(struct bench *b)
{
	latency(b);
	throughputs(b);
	b->cold.name = "cold boot + snapshot";
	b->pool.name = b->gpool.name = "warm pool (2)";
	if (b->have_microvm)
		microvm_regimes(&b->cfg, (int)b->runs, &b->cold, &b->pool);
	if (b->have_gvisor)
		pool_regime(&b->cfg, AJ_TIER_GVISOR, (int)b->runs, &b->gpool);
	imports_rows(b);
	for (int i = 0; i < b->nr; i++)
		if (b->rows[i].sb)
			aj_close(b->rows[i].sb);
	for (int i = 0; i < b->nr; i++)
		measure_sort(b->rows[i].v, (size_t)b->rows[i].n);
	measure_sort(b->cold.v, (size_t)b->cold.n);
	measure_sort(b->pool.v, (size_t)b->pool.n);
	measure_sort(b->gpool.v, (size_t)b->gpool.n);
}

static json_t *rows_json(const struct bench *b)
{
	const struct row *bare = &b->rows[0];
	double base = bare->n ? measure_percentile(bare->v, (size_t)bare->n, 50) : 0;
	json_t *jrows = json_array();
	for (int i = 0; i < b->nr; i++) {
		const struct row *r = &b->rows[i];
		json_t *j = stats_json(r->v, r->n, base);
		json_object_set_new(j, "row", json_string(r->name));
		json_object_set_new(j, "failed", json_integer(r->failed));
		if (r->is_tier) {
			json_object_set_new(j, "runs_per_s_1", json_real(r->tput1));
			json_object_set_new(j, "runs_per_s_n", json_real(r->tputn));
		}
		json_array_append_new(jrows, j);
	}
	return jrows;
}

static json_t *imports_json(const struct bench *b)
{
	json_t *jimp = json_object();
	for (int k = 0; k < 2; k++) {
		const struct imports *im = &b->imp[k];
		const struct regime *r = im->r;
		json_t *j = json_object();
		if (im->image)
			json_object_set_new(j, "image", json_string(im->image));
		if (im->why[0]) {
			json_object_set_new(j, "unavailable", json_string(im->why));
		} else {
			double bare_med = measure_percentile(r[0].v, (size_t)r[0].n, 50);
			double cold_med = measure_percentile(r[1].v, (size_t)r[1].n, 50);
			json_object_set_new(j, "bare", stats_json(r[0].v, r[0].n, 0));
			json_object_set_new(j, "cold", stats_json(r[1].v, r[1].n, bare_med));
			json_t *w = stats_json(r[2].v, r[2].n, bare_med);
			if (cold_med > 0)
				json_object_set_new(
					w, "vs_cold",
					json_real(measure_percentile(r[2].v, (size_t)r[2].n, 50) /
						  cold_med));
			json_object_set_new(j, "warm", w);
		}
		json_object_set_new(jimp, aj_tier_name(im->tier), j);
	}
	return jimp;
}

/* Every figure as one JSON object (--json prints it; the table reads it). */
static json_t *bench_json(const struct bench *b)
{
	json_t *jna = json_object();
	for (int t = 0; t < AJ_TIER_COUNT; t++)
		if (b->unavailable[t][0])
			json_object_set_new(jna, aj_tier_name((enum aj_tier)t),
					    json_string(b->unavailable[t]));
	json_t *root = json_pack(
		"{s:{s:s, s:s, s:I, s:s, s:s, s:s, s:s}, s:I, s:i, s:i, s:o, s:o}", "machine",
		"kernel", b->u.release, "cpu", b->cpu, "cores", (json_int_t)b->cores, "python",
		b->pyver, "agentjail", AGENTJAIL_VERSION, "docker", b->docker, "qemu",
		b->qemu[0] ? b->qemu : "none", "rounds", (json_int_t)b->runs, "warmup", b->warm,
		"concurrency", b->conc, "rows", rows_json(b), "unavailable", jna);
	if (b->have_microvm) {
		json_object_set_new(root, "microvm_cold", stats_json(b->cold.v, b->cold.n, 0));
		json_object_set_new(root, "microvm_pool", stats_json(b->pool.v, b->pool.n, 0));
	}
	if (b->have_gvisor)
		json_object_set_new(root, "gvisor_pool", stats_json(b->gpool.v, b->gpool.n, 0));
	json_object_set_new(root, "imports_numpy_pandas", imports_json(b));
	return root;
}

static void print_rows(const struct bench *b, json_t *jrows)
{
	printf("%-32s %5s %9s %9s %9s %8s %10s %10s\n", "row", "runs", "median", "p95", "p99",
	       "x bare", "runs/s @1", "runs/s @N");
	for (int i = 0; i < b->nr; i++) {
		const struct row *r = &b->rows[i];
		json_t *j = json_array_get(jrows, (size_t)i);
		if (!r->n) {
			printf("%-32s %5d  (every run failed)\n", r->name, 0);
			continue;
		}
		printf("%-32s %5d", r->name, r->n);
		print_ms(json_object_get(j, "median_ms"));
		print_ms(json_object_get(j, "p95_ms"));
		print_ms(json_object_get(j, "p99_ms"));
		json_t *ratio = json_object_get(j, "vs_bare");
		if (json_is_real(ratio))
			printf(" %7.2fx", json_real_value(ratio));
		else
			printf(" %8s", "-");
		if (r->is_tier)
			printf(" %10.1f %10.1f", r->tput1, r->tputn);
		printf("%s\n", r->failed ? "  (some runs failed)" : "");
	}
	printf("(ms; p95 needs 20 runs and p99 100, else -; N = %d concurrent calls: 2 x "
	       "cores, at most 64)\n",
	       b->conc);
}

/* A regime's line (microvm's cold boot and pool, gvisor's pool): its runs,
 * median and p95. */
static void print_regime(const char *tier, const struct regime *rg)
{
	json_t *j = stats_json(rg->v, rg->n, 0);
	printf("%s %-*s %5d", tier, 31 - (int)strlen(tier), rg->name, rg->n);
	print_ms(json_object_get(j, "median_ms"));
	print_ms(json_object_get(j, "p95_ms"));
	printf("\n");
	json_decref(j);
}

static void print_imports(const struct bench *b, json_t *jimp)
{
	printf("\n`import numpy, pandas; print(1)` (ms, median of %d; x bare and x cold "
	       "are ratios of medians):\n",
	       b->import_runs);
	for (int k = 0; k < 2; k++) {
		const struct imports *im = &b->imp[k];
		json_t *j = json_object_get(jimp, aj_tier_name(im->tier));
		if (im->why[0]) {
			printf("  %-10s not measured: %s\n", aj_tier_name(im->tier), im->why);
			continue;
		}
		json_t *bare = json_object_get(j, "bare"), *c = json_object_get(j, "cold"),
		       *w = json_object_get(j, "warm");
		printf("  %-10s bare %8.1f   cold run %8.1f (%.2fx bare)   warm run %7.1f "
		       "(%.3fx cold, %.3fx bare)",
		       aj_tier_name(im->tier), json_real_value(json_object_get(bare, "median_ms")),
		       json_real_value(json_object_get(c, "median_ms")),
		       json_real_value(json_object_get(c, "vs_bare")),
		       json_real_value(json_object_get(w, "median_ms")),
		       json_real_value(json_object_get(w, "vs_cold")),
		       json_real_value(json_object_get(w, "vs_bare")));
		if (im->image)
			printf("   [image %s]", im->image);
		printf("\n");
	}
}

/* The table: the machine, the rows, the regimes, the imports, and why any
 * tier was not measured. */
static void print_table(const struct bench *b, json_t *root)
{
	printf("agentjail %s bench: print(1), %ld interleaved rounds after %d warm-up\n",
	       AGENTJAIL_VERSION, b->runs, b->warm);
	printf("machine: %s, %ld cores, kernel %s, Python %s\n", b->cpu, b->cores, b->u.release,
	       b->pyver);
	printf("engines: Docker %s; %s\n\n", b->docker, b->qemu[0] ? b->qemu : "no QEMU");
	print_rows(b, json_object_get(root, "rows"));
	if (b->have_microvm) {
		if (b->cold.n)
			print_regime("microvm", &b->cold);
		if (b->pool.n)
			print_regime("microvm", &b->pool);
	}
	if (b->gpool.n)
		print_regime("gvisor", &b->gpool);
	print_imports(b, json_object_get(root, "imports_numpy_pandas"));
	for (int t = 0; t < AJ_TIER_COUNT; t++)
		if (b->unavailable[t][0])
			printf("%s: not measured: %s\n", aj_tier_name((enum aj_tier)t),
			       b->unavailable[t]);
}

static void bench_free(struct bench *b)
{
	for (int i = 0; i < b->nr; i++) {
		free(b->rows[i].v);
		for (char **a = b->rows[i].argv; a && *a; a++)
			free(*a);
		free(b->rows[i].argv);
	}
	free(b);
}

int cmd_bench(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof *b);
	if (!b) {
		cli_error("bench: out of memory");
		return EXIT_SANDBOX;
	}
	aj_config_init(&b->cfg);
	b->cfg.uid_base = 2060000000u;
	b->cfg.state_dir = "/run/agentjail-bench";
	b->args = (struct bench_args){.peers = true, .runs = 100};
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {"quick", no_argument, NULL, OPT_QUICK},
					    {"runs", required_argument, NULL, OPT_RUNS},
					    {"no-peers", no_argument, NULL, OPT_NO_PEERS},
					    {"egress", no_argument, NULL, OPT_EGRESS},
					    {"stream", no_argument, NULL, OPT_STREAM},
					    {"commands", no_argument, NULL, OPT_COMMANDS},
					    {NULL, 0, NULL, 0}};
	int done = parse_matrix_command(argc, argv, "bench", usage, own, &b->cfg, &b->choice,
					bench_opt, &b->args);
	if (done >= 0) {
		free(b);
		return done;
	}
	if (b->args.egress) {
		int rc = bench_egress(b->args.runs, b->args.quick, b->args.json);
		free(b);
		return rc ? EXIT_SANDBOX : 0;
	}
	if (b->args.stream) {
		int rc = bench_stream(&b->cfg, &b->choice, b->args.runs, b->args.quick,
				      b->args.json);
		free(b);
		return rc ? EXIT_SANDBOX : 0;
	}
	if (b->args.commands) {
		int rc = bench_commands(&b->cfg, &b->choice, b->args.runs, b->args.quick,
					b->args.json);
		free(b);
		return rc ? EXIT_SANDBOX : 0;
	}
	b->runs = b->args.quick && b->args.runs > 5 ? 5 : b->args.runs;
	b->warm = b->args.quick ? 1 : 5;
	b->cores = measure_usable_cpus();
	b->python = b->cfg.python ? b->cfg.python : AJ_DEFAULT_PYTHON;

	bench_machine(b);
	tier_rows(b);
	if (b->args.peers)
		peer_rows(b);
	measure_all(b);
	json_t *root = bench_json(b);
	if (b->args.json) {
		char *s = json_dumps(root, JSON_COMPACT);
		puts(s ? s : "{}");
		free(s);
	} else {
		print_table(b, root);
	}
	json_decref(root);
	bench_free(b);
	return 0;
}
