/* bench: what does a sandbox cost on top of starting Python at all?
 *
 * Theory of operation. Every row is one command that runs `print(1)`:
 *
 *   bare      /usr/bin/python3 -I -c 'print(1)'      the floor no sandbox can beat
 *   process   agentjail run --tier process FILE      the row this project answers for
 *   unshare   unshare ... python3 -I -c 'print(1)'   peer: namespaces alone (root)
 *   bwrap     bwrap ... python3 -I -c 'print(1)'     peer: bubblewrap
 *
 * The peers are added only when found on PATH. Each command is spawned with
 * stdin, stdout and stderr on /dev/null (so terminal or pipe speed is not
 * measured), and timed with CLOCK_MONOTONIC from just before posix_spawn to
 * just after waitpid: the latency a caller waiting for the result sees.
 *
 * Rounds are interleaved — bare, process, unshare, bwrap, bare, process, … —
 * so that drift over the run (CPU frequency, page cache, a noisy neighbour)
 * lands on every row alike instead of on whichever ran last. Warmup rounds run
 * the same way and are not recorded; they also prove each command works: one
 * that exits non-zero, ever, is dropped and reported as skipped with its exit
 * status, because timing a command that fails measures its error path.
 *
 * The figures are reported, never judged: there is no timing assertion here,
 * since latency depends on the machine and a benchmark that fails on a slow
 * one tells nobody anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/cli/measure.h"

extern char **environ;

#define PYTHON "/usr/bin/python3"
#define PROGRAM "print(1)"
#define MAX_ARGS 24
#define NOTE_MAX 256

struct command {
	const char *name;
	char *argv[MAX_ARGS];   /* argv[0] is an absolute path */
	const char *hint;       /* the likely cause, added when it fails */
	bool skipped;
	char note[NOTE_MAX];    /* why it was skipped */
	double *samples;        /* ms, one per timed round */
	size_t count;
};

struct options {
	long runs;
	long warmup;
	bool json;
	bool no_peers;          /* leave out unshare and bwrap */
	const char *agentjail;  /* NULL: next to this binary */
};

struct stats {
	double median, p95, p99;
};

static const char usage[] =
	"usage: bench [--runs N] [--warmup N] [--json] [--no-peers] [AGENTJAIL]\n"
	"\n"
	"Measures the latency of print(1) under bare python3, agentjail's process\n"
	"and container tiers, python3 started bare in the container's image, and,\n"
	"when on PATH, unshare and bwrap. AGENTJAIL defaults to the agentjail next to\n"
	"this binary.\n"
	"\n"
	"  --runs N      timed rounds (default 200)\n"
	"  --warmup N    untimed rounds first (default 10)\n"
	"  --json        one JSON object instead of the table\n"
	"  --no-peers    leave out unshare and bwrap: the namespaces they leave for\n"
	"                the kernel to tear down slow the next run's cgroup move on\n"
	"                cgroup v1, which agentjail's own runs alone do not\n";

/* ---- options ------------------------------------------------------------ */

static int parse_count(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 1000000)
		return -1;
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){.runs = 200, .warmup = 10};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			o->json = true;
		} else if (strcmp(a, "--no-peers") == 0) {
			o->no_peers = true;
		} else if (strcmp(a, "--runs") == 0 || strcmp(a, "--warmup") == 0) {
			long *dst = a[2] == 'r' ? &o->runs : &o->warmup;
			if (i + 1 >= argc || parse_count(argv[++i], dst) < 0) {
				fprintf(stderr, "bench: %s wants a whole number up to 1000000\n", a);
				return -1;
			}
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			exit(0);
		} else if (a[0] == '-' || o->agentjail) {
			fprintf(stderr, "bench: unexpected argument '%s'\n", a);
			return -1;
		} else {
			o->agentjail = a;
		}
	}
	if (o->runs == 0) {
		fputs("bench: --runs must be at least 1: a median of nothing is not a figure\n",
		      stderr);
		return -1;
	}
	return 0;
}

/* ---- locating the commands --------------------------------------------- */

/* The agentjail next to this binary: `make bench` builds both into build/,
 * and resolving through /proc/self/exe makes it work from any cwd. */
static char *default_agentjail(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		return strdup("build/agentjail");
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	char *path;
	if (asprintf(&path, "%s/agentjail", self) < 0)
		return NULL;
	return path;
}

/* Writes the program for agentjail, which takes a file, not -c. The file
 * stays on the host; agentjail reads it before the sandbox starts. */
static char *write_program(void)
{
	char tmpl[] = "/tmp/agentjail-bench-XXXXXX.py";
	int fd = mkstemps(tmpl, 3);
	if (fd < 0)
		return NULL;
	static const char code[] = PROGRAM "\n";
	bool ok = write(fd, code, sizeof code - 1) == (ssize_t)(sizeof code - 1);
	close(fd);
	if (!ok) {
		unlink(tmpl);
		return NULL;
	}
	return strdup(tmpl);
}

static void set_argv(struct command *c, const char *name, const char *const *args)
{
	c->name = name;
	size_t i = 0;
	for (; args[i] && i < MAX_ARGS - 1; i++)
		c->argv[i] = (char *)args[i];
	c->argv[i] = NULL;
}

/* Fills cmds with every row this machine can attempt; rows that cannot even
 * be attempted come back skipped with the reason. Returns how many. */
static size_t build_commands(struct command *cmds, const char *agentjail, const char *file,
			     char *unshare, char *bwrap)
{
	size_t n = 0;
	set_argv(&cmds[n++], "bare python3",
		 (const char *const[]){PYTHON, "-I", "-c", PROGRAM, NULL});

	set_argv(&cmds[n], "agentjail process",
		 (const char *const[]){agentjail, "run", "--tier", "process", file, NULL});
	if (access(agentjail, X_OK) != 0) {
		cmds[n].skipped = true;
		snprintf(cmds[n].note, NOTE_MAX, "%s: %s (run make all)", agentjail,
			 strerror(errno));
	}
	n++;

	/* Namespaces alone, the nearest thing to the process tier's isolation
	 * without its rlimits, uid switch and supervisor. */
	set_argv(&cmds[n], "unshare (root)",
		 (const char *const[]){unshare ? unshare : "unshare", "-n", "-p", "-f", "-m",
				       "-i", "-u", "--mount-proc", PYTHON, "-I", "-c",
				       PROGRAM, NULL});
	cmds[n].hint = "new pid and mount namespaces need root";
	if (!unshare) {
		cmds[n].skipped = true;
		snprintf(cmds[n].note, NOTE_MAX, "not on PATH");
	}
	n++;

	set_argv(&cmds[n], "bwrap",
		 (const char *const[]){bwrap ? bwrap : "bwrap", "--ro-bind", "/", "/", "--dev",
				       "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
				       "--unshare-all", "--die-with-parent", PYTHON, "-I",
				       "-c", PROGRAM, NULL});
	if (!bwrap) {
		cmds[n].skipped = true;
		snprintf(cmds[n].note, NOTE_MAX, "not installed (not on PATH)");
	}
	n++;

	/* The container tier, and Python started bare in the same image root:
	 * the image's Python may start faster or slower than the host's, so the
	 * fair measure of the tier's own cost is against the image's. */
	static char image_root[PATH_MAX];
	const char *images = getenv("AGENTJAIL_IMAGES");
	snprintf(image_root, sizeof image_root, "%s/default/root",
		 images && images[0] == '/' ? images : "/var/lib/agentjail/images");
	set_argv(&cmds[n], "python3 in the image",
		 (const char *const[]){"/usr/sbin/chroot", image_root, PYTHON, "-I", "-c", PROGRAM,
				       NULL});
	cmds[n].hint = "needs root and an image: agentjail image build";
	n++;
	set_argv(&cmds[n], "agentjail container",
		 (const char *const[]){agentjail, "run", "--tier", "container", file, NULL});
	cmds[n].hint = "needs an image: agentjail image build";
	n++;
	return n;
}

/* ---- timing ------------------------------------------------------------- */

/* Runs c once; a failure of any kind drops it from all later rounds and
 * says why in its note. Records the time only when record is set. */
static void run_round_for(struct command *c, bool record, const char *phase, long round)
{
	double ms = 0;
	int ws = 0;
	int rc = measure_spawn(c->argv, &ms, &ws);
	if (rc < 0) {
		c->skipped = true;
		snprintf(c->note, NOTE_MAX, "cannot spawn %s: %s", c->argv[0], strerror(-rc));
	} else if (WIFEXITED(ws) && WEXITSTATUS(ws) != 0) {
		c->skipped = true;
		snprintf(c->note, NOTE_MAX, "exited with status %d in %s round %ld%s%s",
			 WEXITSTATUS(ws), phase, round + 1, c->hint ? ": " : "",
			 c->hint ? c->hint : "");
	} else if (WIFSIGNALED(ws)) {
		c->skipped = true;
		snprintf(c->note, NOTE_MAX, "killed by signal %d (%s) in %s round %ld",
			 WTERMSIG(ws), strsignal(WTERMSIG(ws)), phase, round + 1);
	} else if (record) {
		c->samples[c->count++] = ms;
	}
}

/* One round: every live command once, in a fixed order. */
static void run_round(struct command *cmds, size_t n, bool record, const char *phase,
		      long round)
{
	for (size_t i = 0; i < n; i++)
		if (!cmds[i].skipped)
			run_round_for(&cmds[i], record, phase, round);
}

/* ---- statistics --------------------------------------------------------- */

static struct stats summarize(struct command *c)
{
	measure_sort(c->samples, c->count);
	return (struct stats){
		.median = measure_percentile(c->samples, c->count, 50),
		.p95 = measure_percentile(c->samples, c->count, 95),
		.p99 = measure_percentile(c->samples, c->count, 99),
	};
}

/* ---- the machine -------------------------------------------------------- */

struct machine {
	char kernel[128];
	long cpus;
	char cpu_model[128];
	char python[64];
};

static void strip_newline(char *s)
{
	s[strcspn(s, "\n")] = '\0';
}

/* The version of the interpreter every row runs, asked of it once. */
static void read_python_version(char *out, size_t len)
{
	snprintf(out, len, "unknown");
	FILE *p = popen(PYTHON " -V 2>&1", "re");
	if (!p)
		return;
	if (fgets(out, (int)len, p))
		strip_newline(out);
	else
		snprintf(out, len, "unknown");
	pclose(p);
}

static void describe_machine(struct machine *m)
{
	struct utsname u;
	snprintf(m->kernel, sizeof m->kernel, "%s", uname(&u) == 0 ? u.release : "unknown");
	m->cpus = measure_usable_cpus();
	measure_cpu_model(m->cpu_model, sizeof m->cpu_model);
	read_python_version(m->python, sizeof m->python);
}

/* ---- output ------------------------------------------------------------- */

static void print_table(const struct machine *m, const struct options *o,
			struct command *cmds, size_t n)
{
	printf("kernel   %s\n", m->kernel);
	printf("cpus     %ld\n", m->cpus);
	printf("cpu      %s\n", m->cpu_model);
	printf("python   %s (%s)\n", m->python, PYTHON);
	printf("program  %s, %ld timed rounds after %ld warmup, interleaved\n\n", PROGRAM,
	       o->runs, o->warmup);

	printf("%-20s %6s %10s %10s %10s %8s\n", "name", "runs", "median ms", "p95 ms",
	       "p99 ms", "x bare");
	double bare = cmds[0].skipped ? NAN : summarize(&cmds[0]).median;
	for (size_t i = 0; i < n; i++) {
		struct command *c = &cmds[i];
		if (c->skipped) {
			printf("%-20s %6s   skipped: %s\n", c->name, "-", c->note);
			continue;
		}
		struct stats s = summarize(c);
		printf("%-20s %6zu %10.2f %10.2f %10.2f %8.2f\n", c->name, c->count, s.median,
		       s.p95, s.p99, s.median / bare);
	}
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* JSON has no NaN: a figure that does not exist is null. */
static void json_number(double v)
{
	if (isnan(v))
		fputs("null", stdout);
	else
		printf("%.3f", v);
}

static void print_json(const struct machine *m, const struct options *o,
		       struct command *cmds, size_t n)
{
	fputs("{\"machine\":{\"kernel\":", stdout);
	json_string(m->kernel);
	printf(",\"cpus\":%ld,\"cpu_model\":", m->cpus);
	json_string(m->cpu_model);
	fputs(",\"python\":", stdout);
	json_string(m->python);
	printf("},\"program\":\"%s\",\"runs\":%ld,\"warmup\":%ld,\"results\":[", PROGRAM,
	       o->runs, o->warmup);
	double bare = cmds[0].skipped ? NAN : summarize(&cmds[0]).median;
	for (size_t i = 0; i < n; i++) {
		struct command *c = &cmds[i];
		struct stats s = c->skipped ? (struct stats){NAN, NAN, NAN} : summarize(c);
		printf("%s{\"name\":", i ? "," : "");
		json_string(c->name);
		printf(",\"skipped\":%s,\"runs\":%zu,\"median_ms\":", c->skipped ? "true" : "false",
		       c->skipped ? (size_t)0 : c->count);
		json_number(s.median);
		fputs(",\"p95_ms\":", stdout);
		json_number(s.p95);
		fputs(",\"p99_ms\":", stdout);
		json_number(s.p99);
		fputs(",\"ratio_to_bare\":", stdout);
		json_number(s.median / bare);
		fputs(",\"note\":", stdout);
		if (c->skipped)
			json_string(c->note);
		else
			fputs("null", stdout);
		putchar('}');
	}
	puts("]}");
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct options o;
	if (parse_options(argc, argv, &o) < 0) {
		fputs(usage, stderr);
		return 2;
	}
	char *agentjail = o.agentjail ? strdup(o.agentjail) : default_agentjail();
	char *file = write_program();
	if (!agentjail || !file) {
		fprintf(stderr, "bench: cannot write the program file in /tmp: %s\n",
			strerror(errno));
		return 1;
	}
	char *unshare = measure_find_in_path("unshare");
	char *bwrap = measure_find_in_path("bwrap");

	struct command cmds[6] = {0};
	size_t n = build_commands(cmds, agentjail, file, unshare, bwrap);
	if (o.no_peers)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(cmds[i].name, "unshare (root)") || !strcmp(cmds[i].name, "bwrap")) {
				cmds[i].skipped = true;
				snprintf(cmds[i].note, NOTE_MAX, "left out (--no-peers)");
			}
	for (size_t i = 0; i < n; i++) {
		cmds[i].samples = calloc((size_t)o.runs, sizeof *cmds[i].samples);
		if (!cmds[i].samples) {
			fputs("bench: out of memory\n", stderr);
			return 1;
		}
	}

	struct machine m;
	describe_machine(&m);

	for (long r = 0; r < o.warmup; r++)
		run_round(cmds, n, false, "warmup", r);
	for (long r = 0; r < o.runs; r++)
		run_round(cmds, n, true, "timed", r);

	if (o.json)
		print_json(&m, &o, cmds, n);
	else
		print_table(&m, &o, cmds, n);

	unlink(file);
	for (size_t i = 0; i < n; i++)
		free(cmds[i].samples);
	free(file);
	free(agentjail);
	free(unshare);
	free(bwrap);
	return 0;
}
