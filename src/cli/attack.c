/* agentjail attack: the hostile-program matrix. Every program runs in every
 * tier available here; the host then looks for what would show an escape
 * (src/attack/verdict.c judges): the secret token in what came out, a marker
 * file on the host, a sentinel process killed, a listener that accepted, a
 * process left, the host's mounts changed, more processes or host disk than
 * the limits allow. What the program printed about itself counts for
 * nothing.
 *
 * Safe by construction: every program is bounded (loops have counts or
 * deadlines, sleeps are short), only ever runs inside a tier, and the
 * network programs aim at the host's own loopback listener. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <linux/keyctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../attack/egress_server.h"
#include "../attack/fixtures.h"
#include "../attack/isolation.h"
#include "../attack/languages.h"
#include "../attack/programs.h"
#include "../attack/verdict.h"
#include "../core/internal.h"
#include "../linux/report.h"
#include "../tiers/tier.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail attack [--tier T ...] [--lang L,...] [--quick] [--json] [--warm]\n"
	"                        [--image NAME|DIR] [--docker-image I] [--docker-socket P]\n"
	"       agentjail attack --list [--json]\n"
	"\n"
	"Runs the hostile-program matrix: the seed article's six (CPU loop, 512 MB,\n"
	"fork bomb, disk fill, reading a host secret, a network call), then the rest\n"
	"of the table, in every tier available here (or each --tier). Each cell is\n"
	"held, ESCAPED, n/a (tier not available, or the image lacks node or a tool the\n"
	"program needs: the reason is shown) or error, judged from checks on the host\n"
	"after the run. --lang python,shell,js (default: all) chooses the languages:\n"
	"the core attacks are written as a Python program, a shell line (run by\n"
	"/bin/sh -c) and JavaScript (run by node), each judged by the same checks.\n"
	"--quick runs the six only. --warm runs the tiers that have a warm mode\n"
	"(process, container) in it: each attack a fork of a zygote.\n"
	"Exits 1 if anything escaped or a sandbox failed, 0 otherwise.\n"
	"--list prints the hostile-program table instead (every program the tests,\n"
	"the soak and attack run: its name, its languages, what the host sets up for\n"
	"it, what counts as held; with --json, its code in each language too) and\n"
	"runs nothing.\n";

/* How attack runs and judges a program, beyond the needs the table gives
 * it (src/attack/programs.h). */
enum {
	SAMPLE = 1 << 0,         /* count processes and host disk during the run */
	SEED = 1 << 1,           /* one of the seed article's six */
};

struct attack {
	const char *name;
	enum hostile_id program;
	unsigned flags;
	/* Statuses that show a limit stopped the program. 0: none does; the
	 * program must then run to its own end (status ok), or the run proves
	 * nothing and is an error, not a pass. */
	uint32_t stopped_by;
	double wall_sec;      /* 0: the default */
	uint32_t cpu_sec;
};

#define S(x) (1u << AJ_STATUS_##x)

static const struct attack attacks[] = {
	{"cpu loop", HOSTILE_CPU_LOOP, SEED, S(TIMEOUT), 10, 1},
	{"512 MB allocation", HOSTILE_MEMORY_512MB, SEED, S(MEMORY), 0, 0},
	{"fork bomb", HOSTILE_FORK_FLAT, SEED | SAMPLE, 0, 0, 0},
	{"disk fill", HOSTILE_DISK_FILL_EVERYWHERE, SEED | SAMPLE, 0, 0, 0},
	{"host secret read", HOSTILE_READ_SECRETS, SEED, 0, 0, 0},
	{"network call", HOSTILE_NETWORK_HOST, SEED, 0, 0, 0},
	{"sleep forever", HOSTILE_SLEEP_FOREVER, 0, S(TIMEOUT), 1, 0},
	{"output flood", HOSTILE_OUTPUT_FLOOD, 0, S(OUTPUT_LIMIT), 0, 0},
	{"thread bomb", HOSTILE_THREAD_BOMB, SAMPLE, 0, 0, 0},
	{"setsid daemon", HOSTILE_DAEMON, 0, 0, 0, 0},
	{"kill a host process", HOSTILE_KILL_SENTINEL, 0, 0, 0, 0},
	{"host processes", HOSTILE_HOST_CMDLINE, 0, 0, 0, 0},
	{"write everywhere", HOSTILE_WRITE_EVERYWHERE, 0, 0, 0, 0},
	{"4 GB file", HOSTILE_BIG_FILE_EVERYWHERE, SAMPLE, 0, 0, 0},
	{"caller's keyring", HOSTILE_KEYRING_READ, 0, 0, 0, 0},
	{"host unix socket", HOSTILE_HOST_UNIX_SOCKET, 0, 0, 0, 0},
	{"mount and unshare", HOSTILE_MOUNT_UNSHARE, 0, 0, 0, 0},
	/* Run with a rule naming its own origin (docs/egress.md). */
	{"egress bypass", HOSTILE_EGRESS_BYPASS, 0, 0, 60, 0},
};

#define N_ATTACKS (sizeof attacks / sizeof attacks[0])

/* ---- host-side fixtures ---- */

struct host {
	char token[33];
	char dir[64];          /* 0700, holds the secret and the unix socket */
	char secret[96];
	char sock[96];
	char mnt[80];          /* an empty directory of ours, for the mount attack */
	char cwd[PATH_MAX];
	int listener;          /* TCP on 127.0.0.1, non-blocking */
	int port;
	int host_listener;     /* TCP on the host's own address (-1: none) */
	char host_ip[INET_ADDRSTRLEN];
	int host_port;
	int unix_listener;
	pid_t sentinel;        /* for the program to aim at; 0: none */
	uint32_t uid_lo, uid_hi;
	int range_lock;        /* holds this invocation's uid range (isolation.h) */
	char state_dir[64];    /* its runs' slot locks and run directories */
};

static void new_token(char *out)
{
	unsigned char b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, b, sizeof b) != (ssize_t)sizeof b)
		for (size_t i = 0; i < sizeof b; i++)
			b[i] = (unsigned char)rand();
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Tasks (threads included: a pids limit counts them) of the uids in
 * [lo, hi), from /proc. */
static int count_uid_tasks(uint32_t lo, uint32_t hi)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char p[300], line[256];
		snprintf(p, sizeof p, "/proc/%s/status", de->d_name);
		FILE *f = fopen(p, "re");
		if (!f)
			continue;
		bool ours = false;
		int threads = 1;
		while (fgets(line, sizeof line, f)) {
			unsigned uid;
			if (sscanf(line, "Uid:\t%u", &uid) == 1)
				ours = uid >= lo && uid < hi;
			sscanf(line, "Threads:\t%d", &threads);
		}
		if (ours)
			n += threads;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static int64_t free_mb(const char *path)
{
	struct statvfs s;
	return statvfs(path, &s) == 0 ? (int64_t)(s.f_bavail * s.f_frsize >> 20) : -1;
}

struct sampler {
	pthread_t thread;
	volatile int stop;
	uint32_t lo, hi;
	int max_procs;
	int64_t root0, tmp0, drop;
};

static void *sample_loop(void *arg)
{
	struct sampler *s = arg;
	while (!s->stop) {
		int n = count_uid_tasks(s->lo, s->hi);
		if (n > s->max_procs)
			s->max_procs = n;
		int64_t r = free_mb("/"), t = free_mb("/tmp");
		if (r >= 0 && s->root0 - r > s->drop)
			s->drop = s->root0 - r;
		if (t >= 0 && s->tmp0 - t > s->drop)
			s->drop = s->tmp0 - t;
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static char *read_mounts(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* The host's mounts a run of this attack could have made: on its fixtures'
 * directory (the mount attack's target among them), its run directories
 * and the image it runs. Other sandboxes beside it (a Docker engine's
 * overlays, another suite's runs) change the rest of the table in their
 * own time; they are not this run's doing. */
static char *own_mounts(const struct host *h, const struct aj_config *cfg)
{
	char image[PATH_MAX] = "";
	struct aj_error err;
	if (cfg->tier != AJ_TIER_PROCESS && image_dir(cfg, image, sizeof image, &err) < 0)
		image[0] = '\0';
	const char *dirs[] = {h->dir, h->state_dir, image};
	char *all = read_mounts();
	char *mine = all ? attack_mounts_within(all, dirs, sizeof dirs / sizeof dirs[0]) : NULL;
	free(all);
	return mine;
}

/* A process of the uid the run will get (as root; else the caller's), named
 * "aj-sentinel-TOKEN" (its argv[0]), alive until killed. Returns once it
 * has its uid and name, so the run cannot race it; -1 if it could not. */
static pid_t start_sentinel(uid_t uid, const char *token)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (geteuid() == 0 && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
			_exit(3);
		char name[64];
		snprintf(name, sizeof name, "aj-sentinel-%s", token);
		/* sleep(1) ignores its argv[0]; exec closes p[1]: the signal. */
		execl("/bin/sleep", name, "60", (char *)NULL);
		_exit(4);
	}
	close(p[1]);
	char c;
	while (pid > 0 && read(p[0], &c, 1) < 0 && errno == EINTR)
		;
	close(p[0]);
	int ws;
	if (pid > 0 && waitpid(pid, &ws, WNOHANG) != 0)
		return -1; /* it failed its setup and is gone */
	return pid;
}

/* ---- one attack in one tier ---- */

static bool output_has(const struct aj_result *r, const char *token)
{
	size_t n = strlen(token);
	return (r->stdout_buf && memmem(r->stdout_buf, r->stdout_len, token, n)) ||
	       (r->stderr_buf && memmem(r->stderr_buf, r->stderr_len, token, n));
}

/* The program of attack a in lang, filled with vals, as what the tier runs:
 * JavaScript as it is (aj_run_lang runs it with node), a shell line in the
 * launcher that hands it to /bin/sh (malloc'd; NULL: out of memory). */
static char *attack_code(const struct attack *a, enum hostile_lang lang,
			 const struct hostile_values *vals)
{
	const char *tools;
	char *code = hostile_fill_lang(hostile_code(a->program, lang, &tools), vals, lang);
	if (lang != HOSTILE_SHELL || !code)
		return code;
	char *program = hostile_shell_program(code, tools);
	free(code);
	return program;
}

/* What holding means for a in lang under cfg's limits. */
static void attack_expect_for(const struct attack *a, enum hostile_lang lang,
			      const struct aj_config *cfg, struct attack_expect *x)
{
	memset(x, 0, sizeof *x);
	x->stopped_by = a->stopped_by;
	x->must_finish = !a->stopped_by;
	x->max_output = (size_t)cfg->limits.output_kb * 1024;
	/* Where the memory limit is an address space (process, gvisor:
	 * RLIMIT_AS), an allocation past it fails inside the program: Python
	 * tells the host it was a MemoryError, but node and the shell only
	 * end with an error or an abort. For them the host's own figure
	 * decides: ended before its end, its peak within the limit. */
	if (lang != HOSTILE_PYTHON && (a->stopped_by & S(MEMORY))) {
		x->stopped_by |= S(ERROR) | S(KILLED);
		x->max_memory_kb = (uint64_t)cfg->limits.memory_mb * 1024;
	}
}

/* The reason in the run's own words where they say more than the verdict's:
 * a sandbox's failure, or (n/a: exit 127) the first line of stderr, which
 * names what the image lacks. */
static void verdict_reason(enum attack_verdict v, const struct attack_evidence *e,
			   const struct aj_result *r, char *why, size_t wn)
{
	if (v == VERDICT_ERROR && r->status == AJ_STATUS_SANDBOX_ERROR && r->message)
		snprintf(why, wn, "%s", r->message);
	size_t n = 0;
	while (v == VERDICT_NA && e->missing == 1 && r->stderr_buf && n < r->stderr_len &&
	       r->stderr_buf[n] != '\n')
		n++;
	if (n)
		snprintf(why, wn, "%.*s", (int)n, r->stderr_buf);
}

static void run_attack(const struct attack *a, enum hostile_lang lang,
		       const struct aj_config *base, struct host *h, struct attack_evidence *e,
		       struct attack_expect *x, char *why, size_t wn, enum attack_verdict *v)
{
	struct aj_config cfg = *base;
	if (a->wall_sec)
		cfg.limits.wall_sec = a->wall_sec;
	if (a->cpu_sec)
		cfg.limits.cpu_sec = a->cpu_sec;
	const struct hostile_program *p = &hostile_programs[a->program];
	if (p->needs & HOSTILE_NEEDS_SENTINEL)
		cfg.slots = 1; /* the sentinel has the very uid the run gets */
	attack_evidence_init(e);
	attack_expect_for(a, lang, &cfg, x);
	/* Counting the run's tasks on the host needs its uids, which only
	 * root's runs have: without root this check cannot be made, and the
	 * attack is not judged on its status alone. */
	if ((a->flags & SAMPLE) && geteuid() != 0) {
		e->ran = false;
		*v = VERDICT_NA;
		snprintf(why, wn, "needs root to count");
		return;
	}
	new_token(h->token);
	h->sentinel = 0;
	if (p->needs & (HOSTILE_NEEDS_SENTINEL | HOSTILE_NEEDS_CMDLINE)) {
		h->sentinel = start_sentinel(cfg.uid_base, h->token);
		if (h->sentinel <= 0) {
			*v = VERDICT_ERROR;
			snprintf(why, wn, "could not start the sentinel");
			h->sentinel = 0;
			return;
		}
	}
	if ((p->needs & HOSTILE_NEEDS_KEYRING) &&
	    (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "agentjail-attack") < 0 ||
	     syscall(SYS_add_key, "user", "agentjail-attack-secret", h->token, strlen(h->token),
		     KEY_SPEC_SESSION_KEYRING) < 0)) {
		/* Never into the caller's own keyring: a new one of ours, or
		 * nothing. */
		*v = VERDICT_ERROR;
		snprintf(why, wn, "keyring: %s", errno_name(errno));
		return;
	}
	struct hostile_values vals = {.token = h->token, .secret = h->secret, .sock = h->sock,
				      .cwd = h->cwd, .mnt = h->mnt, .host_ip = h->host_ip,
				      .port = h->port, .host_port = h->host_port,
				      .sentinel = h->sentinel};
	/* Egress: an origin the run's one rule allows, and a UDP socket,
	 * both of which must see nothing but the proxied request. */
	struct egress_server *origin = NULL;
	int udp = -1;
	char rule[40];
	const char *rules[] = {rule};
	if (p->needs & HOSTILE_NEEDS_EGRESS) {
		struct sockaddr_in ua = {.sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t ul = sizeof ua;
		udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (udp < 0 || bind(udp, (struct sockaddr *)&ua, sizeof ua) ||
		    getsockname(udp, (struct sockaddr *)&ua, &ul) ||
		    egress_server_start(&origin, &vals.port)) {
			if (udp >= 0)
				close(udp);
			*v = VERDICT_ERROR;
			snprintf(why, wn, "could not start the egress origin");
			return;
		}
		vals.host_port = ntohs(ua.sin_port);
		snprintf(rule, sizeof rule, "127.0.0.1/32:%d", vals.port);
		cfg.allow_cidrs = rules;
		cfg.allow_cidr_count = 1;
		cfg.allow_hosts = NULL;
		cfg.allow_host_count = 0;
	}
	char *code = attack_code(a, lang, &vals);
	if (p->needs & HOSTILE_NEEDS_SECRET) {
		int fd = open(h->secret, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			(void)!write(fd, h->token, strlen(h->token));
			close(fd);
		}
		setenv("AJ_ATTACK_API_KEY", h->token, 1);
	}
	hostile_drain(h->listener);
	hostile_drain(h->host_listener);
	hostile_drain(h->unix_listener);
	char *mounts = p->needs & HOSTILE_NEEDS_MOUNTS ? own_mounts(h, &cfg) : NULL;
	struct sampler s = {.lo = h->uid_lo, .hi = h->uid_hi, .root0 = free_mb("/"),
			    .tmp0 = free_mb("/tmp")};
	bool sampling = (a->flags & SAMPLE) && pthread_create(&s.thread, NULL, sample_loop, &s) == 0;

	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	struct aj_result r;
	result_init(&r);
	if (!code)
		result_sandbox_error(&r, "out of memory");
	else if (aj_open(&cfg, &sb, &err) == 0) {
		aj_run_lang(sb, lang == HOSTILE_JS ? AJ_LANG_JAVASCRIPT : AJ_LANG_PYTHON, code,
			    strlen(code), NULL, NULL, &r);
		aj_close(sb);
	} else {
		result_sandbox_error(&r, "%s", err.message);
	}
	if (sampling) {
		s.stop = 1;
		pthread_join(s.thread, NULL);
		e->max_procs = s.max_procs;
		e->disk_drop_mb = s.drop;
		/* The run's tasks, its init and (a VM) the VMM's threads. */
		x->max_procs = cfg.limits.pids + 16;
		x->max_disk_mb = 64; /* host disk the run may never take; slack for noise */
	}
	if (p->needs & HOSTILE_NEEDS_WAIT)
		sleep(2);
	e->status = r.status;
	e->output_bytes = r.stdout_len > r.stderr_len ? r.stdout_len : r.stderr_len;
	e->memory_kb = r.memory_kb;
	e->missing = r.status == AJ_STATUS_ERROR && r.has_exit_code && r.exit_code == 127;
	if (p->needs & (HOSTILE_NEEDS_SECRET | HOSTILE_NEEDS_CMDLINE | HOSTILE_NEEDS_LISTENER |
			 HOSTILE_NEEDS_KEYRING))
		e->token_seen = output_has(&r, h->token);
	if (p->needs & HOSTILE_NEEDS_SECRET)
		unsetenv("AJ_ATTACK_API_KEY");
	if (p->needs & HOSTILE_NEEDS_MARKERS)
		e->marker_written = hostile_markers_take(p->marker, h->token, h->cwd, NULL, 0) > 0;
	if (p->needs & HOSTILE_NEEDS_LISTENER)
		e->listener_accepted = hostile_drain(h->listener) | hostile_drain(h->host_listener);
	if (p->needs & HOSTILE_NEEDS_UNIX)
		e->listener_accepted = hostile_drain(h->unix_listener);
	if (origin) {
		char seen[64];
		snprintf(seen, sizeof seen, "/allowed-%s", h->token);
		e->egress_allowed_arrived = egress_server_saw(origin, seen);
		snprintf(seen, sizeof seen, "/direct-%s", h->token);
		char dgram[64];
		/* One connection, the proxied one: any other is a way around. */
		e->listener_accepted = egress_server_saw(origin, seen) ||
				       egress_server_connections(origin) > 1 ||
				       recv(udp, dgram, sizeof dgram, 0) >= 0;
		egress_server_stop(origin);
		close(udp);
	}
	if (h->sentinel > 0) {
		int ws;
		if (p->needs & HOSTILE_NEEDS_SENTINEL)
			e->sentinel_alive =
				waitpid(h->sentinel, &ws, WNOHANG) == 0 && kill(h->sentinel, 0) == 0;
		kill(h->sentinel, SIGKILL);
		waitpid(h->sentinel, &ws, 0);
		h->sentinel = 0;
	}
	if (mounts) {
		char *now = own_mounts(h, &cfg);
		e->mounts_changed = now && strcmp(now, mounts) != 0;
		/* An escape would have mounted on our directory: undo it. */
		if (e->mounts_changed)
			while (umount2(h->mnt, MNT_DETACH) == 0)
				;
		free(now);
		free(mounts);
	}
	if (geteuid() == 0) {
		/* A tier whose teardown is asynchronous (a VM, an engine) gets a
		 * moment; the sentinel above was ours and is gone. */
		int left = 0;
		for (int i = 0; i < 20; i++) {
			if (!(left = count_uid_tasks(h->uid_lo, h->uid_hi)))
				break;
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
		}
		e->procs_left = left;
	}
	*v = attack_judge(x, e, why, wn);
	verdict_reason(*v, e, &r, why, wn);
	aj_result_free(&r);
	free(code);
}

/* ---- the command ---- */

/* Whether any task runs with a uid in [lo, hi): a range another program's
 * sandboxes use now is not ours to count. */
static int uids_running(uint32_t lo, uint32_t hi)
{
	return count_uid_tasks(lo, hi) > 0;
}

/* Ctrl-C mid-matrix: the host's fixtures go, as after a complete run (only
 * async-signal-safe calls). */
static struct host *volatile cleanup_host;

static void on_interrupt(int sig)
{
	struct host *h = cleanup_host;
	if (h) {
		if (h->sentinel > 0)
			kill(h->sentinel, SIGKILL);
		umount2(h->mnt, MNT_DETACH);
		rmdir(h->mnt);
		unlink(h->sock);
		unlink(h->secret);
		rmdir(h->dir);
	}
	_exit(128 + sig);
}

/* The host's own address on its default route (no packet is sent: a UDP
 * connect only picks the source address). A sandbox with a network of its
 * own but a route out could reach the host there, where 127.0.0.1 would be
 * its own loopback. */
static bool host_address(char *out, size_t n)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9)};
	inet_pton(AF_INET, "192.0.2.1", &a.sin_addr); /* TEST-NET-1: never routed anywhere */
	socklen_t al = sizeof a;
	bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
		  getsockname(fd, (struct sockaddr *)&a, &al) == 0 &&
		  a.sin_addr.s_addr != htonl(INADDR_ANY) &&
		  inet_ntop(AF_INET, &a.sin_addr, out, (socklen_t)n) != NULL;
	if (fd >= 0)
		close(fd);
	return ok;
}

static int setup_host(struct host *h, const struct aj_config *cfg)
{
	memset(h, 0, sizeof *h);
	h->listener = h->host_listener = h->unix_listener = -1;
	if (!getcwd(h->cwd, sizeof h->cwd))
		return -1;
	snprintf(h->dir, sizeof h->dir, "/run/agentjail-attack-XXXXXX");
	if (!mkdtemp(h->dir)) {
		snprintf(h->dir, sizeof h->dir, "/tmp/agentjail-attack-XXXXXX");
		if (!mkdtemp(h->dir))
			return -1;
	}
	/* 0711: the sandbox could name the socket inside; only a boundary
	 * stops it connecting. The secret stays 0600. */
	chmod(h->dir, 0711);
	snprintf(h->secret, sizeof h->secret, "%s/secret", h->dir);
	snprintf(h->sock, sizeof h->sock, "%s/service.sock", h->dir);
	snprintf(h->mnt, sizeof h->mnt, "%s/mnt", h->dir);
	if (mkdir(h->mnt, 0755) < 0)
		return -1;
	if ((h->listener = hostile_tcp_listener("127.0.0.1", &h->port)) < 0)
		return -1;
	/* The host's own address, if it has one; else the loopback twice. */
	if (!host_address(h->host_ip, sizeof h->host_ip) ||
	    (h->host_listener = hostile_tcp_listener(h->host_ip, &h->host_port)) < 0) {
		snprintf(h->host_ip, sizeof h->host_ip, "127.0.0.1");
		h->host_port = h->port;
	}
	if ((h->unix_listener = hostile_unix_listener(h->sock)) < 0)
		return -1;
	h->uid_lo = cfg->uid_base;
	h->uid_hi = cfg->uid_base + cfg->slots;
	return 0;
}

static void teardown_host(struct host *h)
{
	if (h->listener >= 0)
		close(h->listener);
	if (h->host_listener >= 0)
		close(h->host_listener);
	if (h->mnt[0])
		rmdir(h->mnt);
	if (h->unix_listener >= 0)
		close(h->unix_listener);
	unlink(h->sock);
	unlink(h->secret);
	rmdir(h->dir);
}

enum { OPT_JSON = 3000, OPT_QUICK, OPT_WARM_TIERS, OPT_LIST, OPT_LANG, OPT_HELP };

struct attack_args {
	bool json, quick, warm, list;
	bool langs[HOSTILE_LANG_COUNT]; /* the languages --lang chose (none: all) */
	bool any_lang;
};

/* --lang python,shell,js: each name a language of the table's. */
static int parse_langs(const char *arg, struct attack_args *a)
{
	char copy[128];
	snprintf(copy, sizeof copy, "%s", arg);
	char *save = NULL;
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		enum hostile_lang lang;
		if (hostile_lang_parse(name, &lang)) {
			cli_error("attack: --lang: '%s' is not a language (python, shell, js)", name);
			return -1;
		}
		a->langs[lang] = a->any_lang = true;
	}
	if (!a->any_lang) {
		cli_error("attack: --lang: which languages? (python, shell, js)");
		return -1;
	}
	return 0;
}

static int attack_opt(int opt, const char *arg, void *ctx)
{
	struct attack_args *a = ctx;
	if (opt == OPT_JSON)
		a->json = true;
	else if (opt == OPT_QUICK)
		a->quick = true;
	else if (opt == OPT_WARM_TIERS)
		a->warm = true;
	else if (opt == OPT_LIST)
		a->list = true;
	else if (opt == OPT_LANG)
		return parse_langs(arg, a);
	return opt == OPT_HELP;
}

/* --list: the table, for a reader or (--json) for a program that runs it
 * another way (the binding's tests): each program's languages, and with
 * --json the code in each ("code" the Python). */
static int list_programs(bool json)
{
	json_t *all = json_array();
	for (size_t i = 0; i < HOSTILE_COUNT; i++) {
		const struct hostile_program *p = &hostile_programs[i];
		json_t *needs = json_array(), *langs = json_array();
		char line[160] = "", in[32] = "";
		for (unsigned b = 0; hostile_need_name(b); b++) {
			if (!(p->needs & (1u << b)))
				continue;
			json_array_append_new(needs, json_string(hostile_need_name(b)));
			snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s",
				 line[0] ? "," : "", hostile_need_name(b));
		}
		json_t *o = json_pack("{s:s, s:s, s:o, s:s?, s:s}", "id", p->id, "code", p->code,
				      "needs", needs, "marker", p->marker, "held", p->held);
		for (int l = 0; l < HOSTILE_LANG_COUNT; l++) {
			const char *code = hostile_code((enum hostile_id)i, (enum hostile_lang)l, NULL);
			if (!code)
				continue;
			const char *name = hostile_lang_name((enum hostile_lang)l);
			json_array_append_new(langs, json_string(name));
			snprintf(in + strlen(in), sizeof in - strlen(in), "%s%s", in[0] ? "," : "",
				 name);
			if (l != HOSTILE_PYTHON)
				json_object_set_new(o, name, json_string(code));
		}
		json_object_set_new(o, "languages", langs);
		if (!json)
			printf("%-22s %-18s %-30s %s\n", p->id, in, line[0] ? line : "-", p->held);
		json_array_append_new(all, o);
	}
	if (json) {
		char *s = json_dumps(all, JSON_COMPACT);
		puts(s ? s : "[]");
		free(s);
	}
	json_decref(all);
	return 0;
}

/* Every cell of the matrix: a tier, a language, an attack. */
struct matrix {
	enum attack_verdict v[AJ_TIER_COUNT][HOSTILE_LANG_COUNT][N_ATTACKS];
	char why[AJ_TIER_COUNT][HOSTILE_LANG_COUNT][N_ATTACKS][128];
	char na[AJ_TIER_COUNT][AJ_ERROR_MAX];
	int tiers[AJ_TIER_COUNT], nt;
	int tested, bad;
	json_t *jt;
};

/* Whether the matrix has attack i in lang: the table has it in that
 * language, and (--quick) it is one of the seed's six. */
static bool cell_wanted(const struct attack_args *args, size_t i, enum hostile_lang lang)
{
	return args->langs[lang] && hostile_code(attacks[i].program, lang, NULL) &&
	       (!args->quick || (attacks[i].flags & SEED));
}

/* One tier's column: every attack in every language chosen. */
static void run_tier(int t, const struct aj_config *cfg, const struct attack_args *args,
		     struct host *h, struct matrix *m)
{
	struct aj_config tc = *cfg;
	tc.tier = (enum aj_tier)t;
	/* --warm: the tiers with a warm mode run in it; the others as always
	 * (their column says which). */
	tc.warm = args->warm && (t == AJ_TIER_PROCESS || t == AJ_TIER_CONTAINER);
	struct aj_error why = {0};
	bool available = aj_check((enum aj_tier)t, &tc, &why) == 0;
	snprintf(m->na[t], sizeof m->na[t], "%s", available ? "" : why.message);
	json_t *jr = json_array();
	int held = 0, total = 0;
	if (!args->json)
		fprintf(stderr, "attack: %s...\n", aj_tier_name((enum aj_tier)t));
	for (int l = 0; l < HOSTILE_LANG_COUNT; l++)
		for (size_t i = 0; i < N_ATTACKS; i++) {
			if (!cell_wanted(args, i, (enum hostile_lang)l))
				continue;
			struct attack_evidence e;
			struct attack_expect x;
			enum attack_verdict *v = &m->v[t][l][i];
			char *reason = m->why[t][l][i];
			if (available) {
				run_attack(&attacks[i], (enum hostile_lang)l, &tc, h, &e, &x, reason,
					   sizeof m->why[t][l][i], v);
			} else {
				attack_evidence_init(&e);
				e.ran = false;
				memset(&x, 0, sizeof x);
				*v = attack_judge(&x, &e, reason, sizeof m->why[t][l][i]);
			}
			total++;
			held += *v == VERDICT_HELD;
			m->tested += *v != VERDICT_NA;
			m->bad |= *v == VERDICT_ESCAPED || *v == VERDICT_ERROR;
			json_array_append_new(
				jr, json_pack("{s:s, s:s, s:s, s:s?, s:s}", "attack", attacks[i].name,
					      "language", hostile_lang_name((enum hostile_lang)l),
					      "verdict", attack_verdict_name(*v), "status",
					      e.ran ? aj_status_name(e.status) : NULL, "reason",
					      reason));
		}
	json_array_append_new(m->jt, json_pack("{s:s, s:b, s:b, s:s?, s:i, s:i, s:o}", "tier",
					       aj_tier_name((enum aj_tier)t), "warm", tc.warm,
					       "available", available, "unavailable_reason",
					       available ? NULL : m->na[t], "held", held, "total",
					       total, "results", jr));
}

/* The matrix as text: a row per attack, grouped by language; a column per
 * tier. */
static void print_matrix(const struct matrix *m, const struct attack_args *args)
{
	printf("%-20s", "attack");
	for (int k = 0; k < m->nt; k++) {
		bool warm = args->warm &&
			    (m->tiers[k] == AJ_TIER_PROCESS || m->tiers[k] == AJ_TIER_CONTAINER);
		char head[48];
		snprintf(head, sizeof head, "%s%s", aj_tier_name((enum aj_tier)m->tiers[k]),
			 warm ? " (warm)" : "");
		printf(" %-30s", head);
	}
	printf("\n");
	for (int l = 0; l < HOSTILE_LANG_COUNT; l++) {
		if (!args->langs[l])
			continue;
		printf("[%s]\n", hostile_lang_name((enum hostile_lang)l));
		for (size_t i = 0; i < N_ATTACKS; i++) {
			if (!cell_wanted(args, i, (enum hostile_lang)l))
				continue;
			printf("%-20s", attacks[i].name);
			for (int k = 0; k < m->nt; k++) {
				char cell[80];
				enum attack_verdict v = m->v[m->tiers[k]][l][i];
				const char *why = m->why[m->tiers[k]][l][i];
				if (v == VERDICT_NA && !strcmp(why, "tier not available"))
					snprintf(cell, sizeof cell, "n/a");
				else if (v == VERDICT_NA)
					snprintf(cell, sizeof cell, "n/a (%.24s)", why);
				else
					snprintf(cell, sizeof cell, "%s (%.22s)",
						 attack_verdict_name(v), why);
				printf(" %-30s", cell);
			}
			printf("\n");
		}
	}
	printf("%-20s", "held");
	for (int k = 0; k < m->nt; k++) {
		json_t *o = json_array_get(m->jt, (size_t)k);
		char cell[40];
		if (!json_is_true(json_object_get(o, "available")))
			snprintf(cell, sizeof cell, "n/a");
		else
			snprintf(cell, sizeof cell, "%lld/%lld",
				 json_integer_value(json_object_get(o, "held")),
				 json_integer_value(json_object_get(o, "total")));
		printf(" %-30s", cell);
	}
	printf("\n");
	for (int k = 0; k < m->nt; k++)
		if (m->na[m->tiers[k]][0])
			printf("%s: n/a: %s\n", aj_tier_name((enum aj_tier)m->tiers[k]),
			       m->na[m->tiers[k]]);
	/* A cell n/a for want of a tool or of node says so in full here. */
	for (int k = 0; k < m->nt; k++)
		for (int l = 0; l < HOSTILE_LANG_COUNT; l++)
			for (size_t i = 0; i < N_ATTACKS; i++)
				if (cell_wanted(args, i, (enum hostile_lang)l) &&
				    m->v[m->tiers[k]][l][i] == VERDICT_NA && !m->na[m->tiers[k]][0])
					printf("%s, %s, %s: n/a: %s\n",
					       aj_tier_name((enum aj_tier)m->tiers[k]),
					       hostile_lang_name((enum hostile_lang)l), attacks[i].name,
					       m->why[m->tiers[k]][l][i]);
	if (!m->tested)
		printf("nothing could be tested here\n");
}

/* A uid range and lock directory of this invocation's own, taken under a
 * lock, and the host's fixtures: a deployer's sandboxes, a test suite or
 * another attack beside it are never counted as its runs or leftovers.
 * 0, else 1 (said). */
static int attack_begin(struct aj_config *cfg, struct host *h, char *state_dir, size_t sn)
{
	char what[256];
	uint32_t base;
	int range_lock;
	if (attack_range_take("/run/agentjail-attack", ATTACK_UID_FIRST, ATTACK_SLOTS,
			      ATTACK_RANGES, uids_running, &base, &range_lock, what, sizeof what)) {
		cli_error("attack: taking a uid range of its own: %s", what);
		return 1;
	}
	cfg->uid_base = base;
	cfg->slots = ATTACK_SLOTS;
	snprintf(state_dir, sn, "/run/agentjail-attack-%u", (unsigned)base);
	cfg->state_dir = state_dir;
	cleanup_host = h;
	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
	int setup = setup_host(h, cfg);
	h->range_lock = range_lock;
	snprintf(h->state_dir, sizeof h->state_dir, "%s", state_dir);
	if (setup) {
		cli_error("attack: setting up the host's fixtures: %s", strerror(errno));
		teardown_host(h);
		close(range_lock);
		return 1;
	}
	return 0;
}

int cmd_attack(int argc, char **argv)
{
	struct aj_config cfg;
	aj_config_init(&cfg);
	struct attack_args args = {0};
	struct tier_choice choice = {0};
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {"quick", no_argument, NULL, OPT_QUICK},
					    {"warm", no_argument, NULL, OPT_WARM_TIERS},
					    {"list", no_argument, NULL, OPT_LIST},
					    {"lang", required_argument, NULL, OPT_LANG},
					    {"help", no_argument, NULL, OPT_HELP},
					    {NULL, 0, NULL, 0}};
	int done = parse_matrix_command(argc, argv, "attack", usage, own, &cfg, &choice, attack_opt,
					&args);
	if (done >= 0)
		return done;
	if (args.list)
		return list_programs(args.json);
	if (!args.any_lang)
		for (int l = 0; l < HOSTILE_LANG_COUNT; l++)
			args.langs[l] = true;
	struct host h;
	char state_dir[64];
	if (attack_begin(&cfg, &h, state_dir, sizeof state_dir))
		return 1;
	struct matrix *m = calloc(1, sizeof *m);
	if (!m) {
		cli_error("attack: out of memory");
		teardown_host(&h);
		close(h.range_lock);
		return 1;
	}
	m->jt = json_array();
	for (int t = 0; t < AJ_TIER_COUNT; t++) {
		if (choice.any && !choice.chosen[t])
			continue;
		m->tiers[m->nt++] = t;
		run_tier(t, &cfg, &args, &h, m);
	}
	teardown_host(&h);
	cleanup_host = NULL;
	close(h.range_lock);
	/* Nothing tested is no evidence that anything held. */
	if (!m->tested)
		m->bad = 1;
	int bad = m->bad;
	if (args.json) {
		json_t *root = json_pack("{s:s, s:o, s:i, s:b}", "agentjail", AGENTJAIL_VERSION,
					 "tiers", m->jt, "tested", m->tested, "all_held", !bad);
		char *s = json_dumps(root, JSON_COMPACT);
		puts(s ? s : "{}");
		free(s);
		json_decref(root);
	} else {
		print_matrix(m, &args);
		json_decref(m->jt);
	}
	free(m);
	return bad ? 1 : 0;
}
