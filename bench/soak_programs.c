/* The soak's programs: benign ones an agent writes every day, and the
 * hostile table's (src/attack/programs.h), each with the outcome the
 * contract promises (status, exit code, what it printed), checked on every
 * run.
 *
 * The hostile programs run many times on one open sandbox with one
 * configuration (the soak's: CPU 1 s, wall 8 s or more, output 256 KiB,
 * disk 16 MiB, files 8 MiB, the other limits the defaults); the evidence an
 * escape would leave on the host (a listener that accepted, a marker file,
 * a dead sentinel) is looked for after each phase, since it does not go
 * away. Every program is bounded, and only ever runs inside a sandbox.
 * The keyring, signal-state and cancel cases of tests/hostile.h need a
 * forked caller each and are left to the tests. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/attack/fixtures.h"
#include "soak.h"

static bool has(const char *hay, const char *needle)
{
	return hay && needle && strstr(hay, needle);
}

#define FAIL(...) (snprintf(why, n, __VA_ARGS__), false)

static bool want_status(const struct aj_result *r, enum aj_status s, char *why, size_t n)
{
	if (r->status == s)
		return true;
	return FAIL("status %s, want %s (%s)", aj_status_name(r->status), aj_status_name(s),
		    r->message ? r->message : "no message");
}

#define UNUSED_CHECK_ARGS (void)cfg, (void)h

/* ---- benign ---- */

static bool check_hello(const struct aj_result *r, const struct aj_config *cfg,
			const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (!r->has_exit_code || r->exit_code != 0)
		return FAIL("no exit code 0");
	if (strcmp(r->stdout_buf, "hello soak\n") || r->stderr_len)
		return FAIL("stdout %.60s, stderr %zu bytes", r->stdout_buf, r->stderr_len);
	return true;
}

static bool check_compute(const struct aj_result *r, const struct aj_config *cfg,
			  const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (strcmp(r->stdout_buf, "333328333350000 3.14159\n"))
		return FAIL("stdout %.60s", r->stdout_buf);
	return true;
}

/* A fresh workspace and /tmp every run: a file an earlier run left would
 * show as True before this run writes its own. */
static bool check_workspace(const struct aj_result *r, const struct aj_config *cfg,
			    const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (strcmp(r->stdout_buf, "fresh False False\n100000 True\n"))
		return FAIL("stdout %.80s", r->stdout_buf);
	return true;
}

static bool check_exit_code(const struct aj_result *r, const struct aj_config *cfg,
			    const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_ERROR, why, n))
		return false;
	if (!r->has_exit_code || r->exit_code != 3)
		return FAIL("exit code %d, want 3", r->exit_code);
	if (strcmp(r->stdout_buf, "out\n") || strcmp(r->stderr_buf, "err\n"))
		return FAIL("stdout %.40s stderr %.40s", r->stdout_buf, r->stderr_buf);
	return true;
}

static bool check_exception(const struct aj_result *r, const struct aj_config *cfg,
			    const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_ERROR, why, n))
		return false;
	if (!r->has_exit_code || r->exit_code != 1)
		return FAIL("exit code %d, want 1", r->exit_code);
	if (!has(r->stderr_buf, "ZeroDivisionError") || !has(r->stderr_buf, "line 2"))
		return FAIL("no traceback: %.100s", r->stderr_buf);
	return true;
}

static bool check_flood(const struct aj_result *r, const struct aj_config *cfg,
			const struct soak_host *h, char *why, size_t n)
{
	(void)h;
	if (!want_status(r, AJ_STATUS_OUTPUT_LIMIT, why, n))
		return false;
	if (!r->stdout_truncated || r->stdout_len != (size_t)cfg->limits.output_kb * 1024)
		return FAIL("stdout %zu bytes, truncated %d", r->stdout_len, r->stdout_truncated);
	if (!has(r->message, "output"))
		return FAIL("message %s", r->message ? r->message : "none");
	return true;
}

/* ---- hostile: the seed article's six ---- */

static bool check_cpu_loop(const struct aj_result *r, const struct aj_config *cfg,
			   const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_TIMEOUT, why, n))
		return false;
	if (r->has_exit_code)
		return FAIL("an exit code after a timeout");
	if (!has(r->message, "CPU") && !has(r->message, "wall-clock"))
		return FAIL("message %s", r->message ? r->message : "none");
	return true;
}

static bool check_memory(const struct aj_result *r, const struct aj_config *cfg,
			 const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_MEMORY, why, n))
		return false;
	if (has(r->stdout_buf, "allocated") || !has(r->message, "memory"))
		return FAIL("allocated, or message %s", r->message ? r->message : "none");
	return true;
}

static bool check_fork_bomb(const struct aj_result *r, const struct aj_config *cfg,
			    const struct soak_host *h, char *why, size_t n)
{
	(void)h;
	if (r->status == AJ_STATUS_SANDBOX_ERROR)
		return FAIL("sandbox_error: %s", r->message ? r->message : "");
	const char *p = strstr(r->stdout_buf, "made ");
	int made = p ? atoi(p + 5) : -1;
	if (made < 0 || (uint32_t)made >= cfg->limits.pids)
		return FAIL("made %d processes, pids limit %u (status %s, %s)", made, cfg->limits.pids,
			    aj_status_name(r->status), r->message ? r->message : "no message");
	return true;
}

static bool check_stopped(const struct aj_result *r, const char *want_errno, uint32_t max,
			  const char *unit, char *why, size_t n)
{
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	unsigned mb = 0;
	char code[32] = "";
	if (sscanf(r->stdout_buf, "stopped %u %31s", &mb, code) != 2 || strcmp(code, want_errno))
		return FAIL("stdout %.80s, want stopped N %s", r->stdout_buf, want_errno);
	if (mb > max)
		return FAIL("wrote %u %s, limit %u", mb, unit, max);
	return true;
}

static bool check_disk_fill(const struct aj_result *r, const struct aj_config *cfg,
			    const struct soak_host *h, char *why, size_t n)
{
	(void)h;
	return check_stopped(r, "ENOSPC", cfg->limits.disk_mb, "MiB", why, n);
}

static bool check_big_file(const struct aj_result *r, const struct aj_config *cfg,
			   const struct soak_host *h, char *why, size_t n)
{
	(void)h;
	return check_stopped(r, "EFBIG", cfg->limits.file_size_mb, "MiB", why, n);
}

/* The inode cap: one per 4 KiB of writable space, and 64 for the
 * directories every tier makes in it (src/linux/mounts.c). gVisor's
 * tmpfs has none (runsc 20221219 ignores nr_inodes: 52,069 empty files in
 * 20 s in a 16 MiB /tmp, measured here); its files live in the sentry's
 * memory, which the sandbox's memory limit counts, and the program ends on
 * the CPU limit instead. */
static bool check_many_files(const struct aj_result *r, const struct aj_config *cfg,
			     const struct soak_host *h, char *why, size_t n)
{
	(void)h;
	if (cfg->tier == AJ_TIER_GVISOR && r->status == AJ_STATUS_TIMEOUT &&
	    (has(r->message, "CPU") || has(r->message, "wall-clock")))
		return true;
	return check_stopped(r, "ENOSPC", cfg->limits.disk_mb * 256 + 64, "files", why, n);
}

static bool check_secrets(const struct aj_result *r, const struct aj_config *cfg,
			  const struct soak_host *h, char *why, size_t n)
{
	(void)cfg;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (!has(r->stdout_buf, h->secret_file))
		return FAIL("did not try the secret: %.80s", r->stdout_buf);
	if (has(r->stdout_buf, h->token) || has(r->stderr_buf, h->token))
		return FAIL("THE SECRET TOKEN CAME OUT");
	if (has(r->stdout_buf, "AJ_SOAK_API_KEY"))
		return FAIL("the caller's environment came in");
	return true;
}

static bool check_network(const struct aj_result *r, const struct aj_config *cfg,
			  const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (has(r->stdout_buf, "CONNECTED") || has(r->stdout_buf, "RESOLVED"))
		return FAIL("REACHED THE NETWORK: %.120s", r->stdout_buf);
	if (!has(r->stdout_buf, "blocked 127.0.0.1"))
		return FAIL("stdout %.120s", r->stdout_buf);
	return true;
}

/* ---- hostile: the rest of the table ---- */

static bool check_ok_with(const struct aj_result *r, const char *want, char *why, size_t n)
{
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (!has(r->stdout_buf, want))
		return FAIL("no '%s' in stdout: %.100s", want, r->stdout_buf);
	return true;
}

static bool check_kill_all(const struct aj_result *r, const struct aj_config *cfg,
			   const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	return check_ok_with(r, "still here", why, n);
}

static bool check_daemon(const struct aj_result *r, const struct aj_config *cfg,
			 const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	return check_ok_with(r, "parent done", why, n);
}

/* The table's threads all wait until the count is printed: 'made' counts
 * threads alive at once, even on an emulated CPU. */
static bool check_thread_bomb(const struct aj_result *r, const struct aj_config *cfg,
			      const struct soak_host *h, char *why, size_t n)
{
	(void)h;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	int made = -1;
	if (sscanf(r->stdout_buf, "made %d", &made) != 1 || made < 0 ||
	    (uint32_t)made >= cfg->limits.pids)
		return FAIL("stdout %.60s, pids limit %u", r->stdout_buf, cfg->limits.pids);
	return true;
}

static bool check_list_proc(const struct aj_result *r, const struct aj_config *cfg,
			    const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	int count = -1;
	if (sscanf(r->stdout_buf, "%d", &count) != 1 || count < 1 || count > 2)
		return FAIL("sees %d processes: %.100s", count, r->stdout_buf);
	if (has(r->stdout_buf, "build/soak"))
		return FAIL("sees the soak's command line");
	return true;
}

static bool check_write_everywhere(const struct aj_result *r, const struct aj_config *cfg,
				   const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (!has(r->stdout_buf, "wrote /tmp") || !has(r->stdout_buf, "wrote .") ||
	    !has(r->stdout_buf, "refused /etc"))
		return FAIL("stdout %.200s", r->stdout_buf);
	return true;
}

static bool check_unix_socket(const struct aj_result *r, const struct aj_config *cfg,
			      const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (has(r->stdout_buf, "CREATED") || has(r->stdout_buf, "CONNECTED"))
		return FAIL("made a socket it must not: %.120s", r->stdout_buf);
	if (!has(r->stdout_buf, "pair ok"))
		return FAIL("no socketpair: %.120s", r->stdout_buf);
	return true;
}

static bool check_syscalls(const struct aj_result *r, const struct aj_config *cfg,
			   const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (has(r->stdout_buf, "ALLOWED"))
		return FAIL("a denied system call was allowed: %.300s", r->stdout_buf);
	static const char *const names[] = {
		"mount", "umount2", "pivot_root", "chroot", "unshare_user", "unshare_net", "setns",
		"ptrace", "process_vm_readv", "bpf", "perf_event_open", "keyctl", "add_key",
		"request_key", "userfaultfd", "io_uring_setup", "kexec_load", "init_module",
		"finit_module", "delete_module", "open_by_handle_at", "reboot", "swapon",
		"clock_settime", "settimeofday", "acct", "quotactl", "personality", "shmget",
		"msgget", "semget", "memfd_create", "syslog", "clone_newuser"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "%s EPERM\n", names[i]);
		if (!has(r->stdout_buf, line))
			return FAIL("%s did not fail with EPERM", names[i]);
	}
	if (!has(r->stdout_buf, "clone3 ENOSYS") || !has(r->stdout_buf, "fork still works 7"))
		return FAIL("clone3 or fork: %.200s", r->stdout_buf);
	return true;
}

static bool check_sleep(const struct aj_result *r, const struct aj_config *cfg,
			const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_TIMEOUT, why, n))
		return false;
	if (strcmp(r->stdout_buf, "going to sleep\n") || !has(r->message, "wall-clock"))
		return FAIL("stdout %.40s, message %s", r->stdout_buf, r->message ? r->message : "");
	return true;
}

static bool check_devices(const struct aj_result *r, const struct aj_config *cfg,
			  const struct soak_host *h, char *why, size_t n)
{
	UNUSED_CHECK_ARGS;
	if (!want_status(r, AJ_STATUS_OK, why, n))
		return false;
	if (has(r->stdout_buf, "OPENED"))
		return FAIL("opened a host device: %.300s", r->stdout_buf);
	if (!has(r->stdout_buf, "zero b'\\x00\\x00'") || !has(r->stdout_buf, "/dev/kvm False"))
		return FAIL("stdout %.300s", r->stdout_buf);
	return true;
}

/* Weights: runs per 1000. About half the runs are benign; the slow
 * programs (a CPU loop and a sleep that end on a limit, a second or more
 * each) are rare, so the soak measures the sandbox, not waiting. */
const struct soak_program soak_programs[] = {
	{"hello", false, 125, "print('hello soak')\n", 0, check_hello},
	{"compute", false, 100,
	 "import math\n"
	 "print(sum(i * i for i in range(100000)), round(math.pi, 5))\n",
	 0, check_compute},
	{"workspace-file", false, 120,
	 "import os\n"
	 "print('fresh', os.path.exists('data.txt'), os.path.exists('/tmp/left-{TOKEN}'))\n"
	 "with open('data.txt', 'w') as f:\n    f.write('x' * 100000)\n"
	 "open('/tmp/left-{TOKEN}', 'w').write('x')\n"
	 "os.makedirs('sub', exist_ok=True)\n"
	 "open('sub/y', 'w').write('y')\n"
	 "print(len(open('data.txt').read()), os.path.exists('sub/y'))\n",
	 0, check_workspace},
	{"stderr-exit-3", false, 80,
	 "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n", 0, check_exit_code},
	{"exception", false, 80, "def f():\n    return 1 / 0\nf()\n", 0, check_exception},
	{"stdout-flood", true, 30, NULL, HOSTILE_OUTPUT_FLOOD, check_flood},
	{"cpu-loop", true, 4, NULL, HOSTILE_CPU_LOOP, check_cpu_loop},
	{"memory-512mb", true, 40, NULL, HOSTILE_MEMORY_512MB, check_memory},
	{"fork-bomb", true, 20, NULL, HOSTILE_FORK_BOMB, check_fork_bomb},
	{"disk-fill", true, 25, NULL, HOSTILE_DISK_FILL, check_disk_fill},
	{"big-file", true, 25, NULL, HOSTILE_BIG_FILE, check_big_file},
	{"many-files", true, 15, NULL, HOSTILE_MANY_FILES, check_many_files},
	{"read-secrets", true, 40, NULL, HOSTILE_READ_SECRETS, check_secrets},
	{"loopback-network", true, 40, NULL, HOSTILE_NETWORK, check_network},
	{"kill-all", true, 40, NULL, HOSTILE_KILL_ALL, check_kill_all},
	{"daemon", true, 20, NULL, HOSTILE_DAEMON, check_daemon},
	{"thread-bomb", true, 25, NULL, HOSTILE_THREAD_BOMB, check_thread_bomb},
	{"list-proc", true, 40, NULL, HOSTILE_LIST_PROC, check_list_proc},
	{"write-everywhere", true, 40, NULL, HOSTILE_WRITE_EVERYWHERE, check_write_everywhere},
	{"host-unix-socket", true, 30, NULL, HOSTILE_HOST_UNIX_SOCKET, check_unix_socket},
	{"denied-syscalls", true, 30, NULL, HOSTILE_DENIED_SYSCALLS, check_syscalls},
	{"sleep-forever", true, 1, NULL, HOSTILE_SLEEP_FOREVER, check_sleep},
	{"devices", true, 30, NULL, HOSTILE_DEVICES_BRIEF, check_devices},
};

const size_t soak_program_count = sizeof soak_programs / sizeof soak_programs[0];

/* A fixed schedule over blocks of 1000: run i of a block is program p for
 * the weight[p] slots that a stride walk gives it, so every block has the
 * same counts and a program's runs are spread out, not bunched. */
size_t soak_pick(uint64_t i)
{
	static size_t table[1000];
	static bool made;
	if (!made) {
		size_t k = 0;
		for (size_t p = 0; p < soak_program_count; p++)
			for (unsigned w = 0; w < soak_programs[p].weight && k < 1000; w++)
				table[k++] = p;
		while (k < 1000)
			table[k++] = 0;
		made = true;
	}
	/* 1000 and 379 are coprime: i -> i * 379 mod 1000 visits every slot
	 * once per block, scattering each program's run of slots. */
	return table[(i * 379) % 1000];
}

/* ---- the host's side ---- */

int soak_host_setup(struct soak_host *h, uint32_t uid_base)
{
	memset(h, 0, sizeof *h);
	h->tcp_fd = h->unix_fd = -1;
	h->uid_base = uid_base;
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		return -errno;
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(h->token + 2 * i, 3, "%02x", rnd[i]);
	if (!getcwd(h->cwd, sizeof h->cwd))
		return -errno;
	/* The caller's secret, as ~/.ssh/id_rsa is: 0600 in a 0700 directory,
	 * and the token in its environment, as an API key would be. */
	snprintf(h->secret_dir, sizeof h->secret_dir, "/var/lib/agentjail-soak-XXXXXX");
	mkdir("/var/lib", 0755);
	if (hostile_secret_make(h->secret_dir, h->secret_file, sizeof h->secret_file, h->token))
		return -errno;
	setenv("AJ_SOAK_API_KEY", h->token, 1);
	/* A TCP listener on loopback, non-blocking: after a phase, accept()
	 * must find nobody. */
	if ((h->tcp_fd = hostile_tcp_listener("127.0.0.1", &h->tcp_port)) < 0)
		return -errno;
	/* A world-connectable unix socket, as a host service's would be. */
	snprintf(h->unix_dir, sizeof h->unix_dir, "/run/agentjail-soak-%.16s", h->token);
	if (mkdir(h->unix_dir, 0755))
		return -errno;
	snprintf(h->unix_path, sizeof h->unix_path, "%s/service.sock", h->unix_dir);
	if ((h->unix_fd = hostile_unix_listener(h->unix_path)) < 0)
		return -errno;
	const struct hostile_values vals = {.token = h->token, .secret = h->secret_file,
					    .sock = h->unix_path, .cwd = h->cwd,
					    .port = h->tcp_port};
	for (size_t i = 0; i < soak_program_count; i++) {
		const char *code = soak_programs[i].code;
		if (!code)
			code = hostile_programs[soak_programs[i].program].code;
		if (!(h->codes[i] = hostile_fill(code, &vals)))
			return -ENOMEM;
	}
	return 0;
}

int soak_sentinels_start(struct soak_host *h)
{
	pid_t parent = getpid();
	for (int i = 0; i < SOAK_SENTINELS; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return -errno;
		if (pid == 0) {
			uid_t u = h->uid_base + (uint32_t)i;
			if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(u, u, u) ||
					       setresuid(u, u, u)))
				_exit(3);
			/* A soak stopped midway takes its sentinels with it (set
			 * after the uid change, which clears it). */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			/* Bounded: an hour, far past any phase. */
			for (int s = 0; s < 3600; s++)
				sleep(1);
			_exit(0);
		}
		h->sentinels[i] = pid;
	}
	return 0;
}

int soak_sentinels_stop(struct soak_host *h)
{
	int dead = 0;
	for (int i = 0; i < SOAK_SENTINELS; i++) {
		if (h->sentinels[i] <= 0)
			continue;
		int ws = 0;
		if (waitpid(h->sentinels[i], &ws, WNOHANG) != 0)
			dead++;
		else
			kill(h->sentinels[i], SIGKILL), waitpid(h->sentinels[i], &ws, 0);
		h->sentinels[i] = 0;
	}
	return dead;
}

__attribute__((format(printf, 3, 4)))
static int addf(char *report, size_t n, const char *fmt, ...)
{
	size_t used = strlen(report);
	va_list ap;
	va_start(ap, fmt);
	if (used < n)
		vsnprintf(report + used, n - used, fmt, ap);
	va_end(ap);
	return 1;
}

int soak_host_evidence(struct soak_host *h, char *report, size_t n)
{
	int found = 0;
	report[0] = '\0';
	int c;
	while ((c = accept(h->tcp_fd, NULL, NULL)) >= 0)
		close(c), found += addf(report, n, "  a run reached the host's TCP listener%s\n", "");
	while ((c = accept(h->unix_fd, NULL, NULL)) >= 0)
		close(c), found += addf(report, n, "  a run reached the host's unix socket%s\n", "");
	for (int i = 0; i < SOAK_SENTINELS; i++) {
		int ws;
		if (h->sentinels[i] > 0 && waitpid(h->sentinels[i], &ws, WNOHANG) != 0) {
			char what[80];
			snprintf(what, sizeof what, "%d (uid base + %d)", (int)h->sentinels[i], i);
			found += addf(report, n, "  sentinel %s was killed\n", what);
			h->sentinels[i] = 0;
		}
	}
	/* The markers the programs would leave: the table's hostile ones,
	 * and the workspace program's, which a run must keep to itself. */
	const char *names[] = {"daemon-", "w-", "left-", "fill-"};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		char p[1200];
		int got = hostile_markers_take(names[k], h->token, h->cwd, p, sizeof p);
		if (got) {
			addf(report, n, "  marker on the host: %s%s\n", p,
			     got > 1 ? " (and more of its name)" : "");
			found += got;
		}
	}
	return found;
}

void soak_host_teardown(struct soak_host *h)
{
	soak_sentinels_stop(h);
	if (h->tcp_fd >= 0)
		close(h->tcp_fd);
	if (h->unix_fd >= 0)
		close(h->unix_fd);
	if (h->unix_path[0])
		unlink(h->unix_path);
	if (h->unix_dir[0])
		rmdir(h->unix_dir);
	if (h->secret_file[0])
		unlink(h->secret_file);
	if (h->secret_dir[0])
		rmdir(h->secret_dir);
	unsetenv("AJ_SOAK_API_KEY");
	for (size_t i = 0; i < soak_program_count; i++)
		free(h->codes[i]);
}
