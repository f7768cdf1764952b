/* The gvisor tier: the shared hostile table under Debian's runsc, then what
 * is particular to it: the program meets gVisor's kernel, not the host's;
 * none of the host's /proc or /sys is there; and nothing (processes, run
 * directories, cgroups) is left after a timeout, a flood, the OOM killer or
 * a caller that dies mid-run. Every gVisor process of a run is born in the
 * run's cgroup, but a dead one (a zombie stub of the ptrace platform) is no
 * longer listed there: nothing_alive_when_the_result_returns counts them as
 * the test's own orphans.
 *
 * Runs the test image that `make test` builds (--from-host). */
#include <limits.h>
#include <sys/prctl.h>
#include <sys/utsname.h>

#include "boot_cases.h"
#include "session_cases.h"
#include "stream_cases.h"
#include "userland_cases.h"
#include "src/core/internal.h"

static char image_dir[PATH_MAX], chart_dir[PATH_MAX + 4];

/* Where the tier keeps its run directories for the fixture's state dir. */
static void run_base(const struct fixture *f, char *out, size_t n)
{
	snprintf(out, n, "%s-gvisor", f->cfg.state_dir);
}

/* Processes whose command line names a run directory of ours: runsc, the
 * sentry and the gofer carry it in --root and --bundle. */
static int count_runsc_processes(const char *needle)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[300], buf[4096];
		snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
		FILE *fh = fopen(path, "re");
		if (!fh)
			continue;
		size_t len = fread(buf, 1, sizeof buf - 1, fh);
		fclose(fh);
		for (size_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = 0;
		if (strstr(buf, needle))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static int count_gvisor_leftovers(void)
{
	char base[PATH_MAX], mine[64];
	run_base(&fixture, base, sizeof base);
	snprintf(mine, sizeof mine, "run-%d-", (int)getpid());
	char needle[PATH_MAX + 80];
	snprintf(needle, sizeof needle, "%s/%s", base, mine);
	return count_dir_entries(base, mine) + count_runsc_processes(needle);
}

/* Any run's or session's runsc, gofer or sentry of this suite (a session
 * made in a forked child included). */
static int count_gvisor_processes(void)
{
	char base[PATH_MAX], needle[PATH_MAX + 8];
	run_base(&fixture, base, sizeof base);
	snprintf(needle, sizeof needle, "%s/run-", base);
	return count_runsc_processes(needle);
}

/* This test process's children, whatever their state (a zombie is a
 * process not yet gone), but for the nold in old (left by an earlier case
 * that failed): their pids, up to n, and how many. */
static int list_children(const pid_t *old, int nold, pid_t *pids, int n)
{
	DIR *d = opendir("/proc");
	int count = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (parent_pid(atol(de->d_name)) != (long)getpid())
			continue;
		pid_t pid = atoi(de->d_name);
		bool known = false;
		for (int i = 0; i < nold; i++)
			known |= old[i] == pid;
		if (known)
			continue;
		if (count < n)
			pids[count] = pid;
		count++;
	}
	if (d)
		closedir(d);
	return count;
}

/* What this test's runs left at one moment: processes (children of the
 * test, the sandboxes' subreaper), run cgroups, and run directories or
 * runsc command lines of ours. */
struct census {
	int processes, cgroups, leftovers;
};

static struct census take_census(const pid_t *old, int nold)
{
	return (struct census){.processes = list_children(old, nold, NULL, 0),
			       .cgroups = count_run_cgroups(),
			       .leftovers = count_gvisor_leftovers()};
}

/* A result means its sandbox is gone: every process of it (runsc, sentry,
 * gofer and the ptrace platform's stubs), its cgroup and its run
 * directory, at the moment the result returns, with no wait. The stubs are
 * orphans (on the host, children of PID 1, where another suite's could
 * not be told from ours): for this case the test is its own descendants'
 * subreaper, so a process of the sandbox that outlives what ran it comes
 * here, as a child of the test, zombie or not. A fork bomb's timeout, a
 * plain run, and a session's close. */
static void nothing_alive_when_the_result_returns(void **state)
{
	struct fixture *f = *state;
	pid_t old[64];
	int nold = list_children(NULL, 0, old, 64);
	assert_true(nold <= 64);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	struct census at[3];
	struct aj_result bomb, plain, cell;
	f->cfg.limits.wall_sec = 2;
	run_code(&f->cfg, &bomb,
		 "import os\n"
		 "while True:\n"
		 "    try:\n"
		 "        os.fork()\n"
		 "    except OSError:\n"
		 "        pass\n");
	at[0] = take_census(old, nold);
	f->cfg.limits.wall_sec = 10;
	run_code(&f->cfg, &plain, "print(6 * 7)\n");
	at[1] = take_census(old, nold);
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	int opened = aj_session_open(&f->cfg, &s, &err);
	if (opened == 0) {
		aj_session_run(s, "print(7)\n", strlen("print(7)\n"), &cell);
		aj_session_close(s);
	}
	at[2] = take_census(old, nold);
	/* What came here is ours to end and reap, before any assertion
	 * leaves the case. */
	pid_t pids[256];
	int n = list_children(old, nold, pids, 256);
	for (int i = 0; i < n && i < 256; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, __WALL);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	assert_status(&bomb, AJ_STATUS_TIMEOUT);
	assert_status(&plain, AJ_STATUS_OK);
	assert_string_equal(plain.stdout_buf, "42\n");
	assert_int_equal(opened, 0);
	assert_status(&cell, AJ_STATUS_OK);
	assert_string_equal(cell.stdout_buf, "7\n");
	aj_result_free(&bomb);
	aj_result_free(&plain);
	aj_result_free(&cell);
	const char *after[] = {"the fork bomb's timeout", "a plain run", "the session's close"};
	for (int i = 0; i < 3; i++)
		if (at[i].processes || at[i].cgroups || at[i].leftovers)
			fail_msg("after %s: %d processes, %d run cgroups, %d run directories or "
				 "runsc processes left",
				 after[i], at[i].processes, at[i].cgroups, at[i].leftovers);
}

static void guest_kernel_is_gvisors(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	struct utsname host;
	assert_int_equal(uname(&host), 0);
	run_code(&f->cfg, &r,
		 "import os\n"
		 "u = os.uname()\n"
		 "print('release', u.release)\n"
		 "print('node', u.nodename)\n"
		 "print('version', open('/proc/version').read().strip())\n"
		 "try:\n"
		 "    open('/dev/kmsg').read(1)\n"
		 "    print('KMSG')\n"
		 "except OSError as e:\n"
		 "    print('kmsg', e.errno)\n");
	assert_status(&r, AJ_STATUS_OK);
	/* gVisor's kernel answers as Linux 4.4.0; the host's is other. */
	assert_true(contains(r.stdout_buf, "release 4.4.0\n"));
	assert_false(contains(r.stdout_buf, host.release));
	assert_false(contains(r.stdout_buf, host.nodename));
	assert_true(contains(r.stdout_buf, "node sandbox\n"));
	assert_false(contains(r.stdout_buf, "KMSG"));
	aj_result_free(&r);
}

static void host_proc_and_sys_are_not_there(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	char code[2048];
	/* The host's pid of this test, which the host's /proc has. */
	snprintf(code, sizeof code,
		 "import os\n"
		 "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
		 "print('pids', pids)\n"
		 "print('host pid seen', os.path.exists('/proc/%d'))\n"
		 "print('sys', os.path.exists('/sys') and os.listdir('/sys'))\n"
		 "mounts = open('/proc/mounts').read()\n"
		 "print('cgroup mounted', 'cgroup' in mounts)\n"
		 "print('host root in mounts', '/dev/vda' in mounts or 'ext4' in mounts)\n"
		 "print('cmdline1', open('/proc/1/cmdline').read().split('\\0')[:2])\n",
		 (int)getpid());
	run_code(&f->cfg, &r, "%s", code);
	assert_status(&r, AJ_STATUS_OK);
	/* Only the sandbox's processes: boot.py (1) and the program. */
	assert_true(contains(r.stdout_buf, "pids [1, "));
	assert_true(contains(r.stdout_buf, "host pid seen False"));
	/* gVisor's own sysfs is replaced by an empty read-only tmpfs. */
	assert_true(contains(r.stdout_buf, "sys []"));
	assert_true(contains(r.stdout_buf, "cgroup mounted False"));
	assert_true(contains(r.stdout_buf, "host root in mounts False"));
	aj_result_free(&r);
}

/* Nothing is left after memory stops a run, either way it can (timeouts
 * and floods are boot_cases.h's). One process meets RLIMIT_AS (MemoryError); eight
 * of them together meet the cgroup, whose OOM killer takes the sentry: the
 * whole sandbox ends, and that is status memory too. */
static void nothing_left_after_memory_limits(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.memory_mb = 64;
	run_code(&f->cfg, &r, "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_true(contains(r.stderr_buf, "MemoryError"));
	aj_result_free(&r);
	run_code(&f->cfg, &r,
		 "import os, time\n"
		 "for i in range(8):\n"
		 "    if os.fork() == 0:\n"
		 "        b = bytearray(40 << 20)\n"
		 "        for j in range(0, len(b), 4096):\n"
		 "            b[j] = 1\n"
		 "        time.sleep(5)\n"
		 "        os._exit(0)\n"
		 "time.sleep(6)\n"
		 "print('all of them fitted')\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_int_equal(r.signal, SIGKILL);
	assert_true(contains(r.message, "OOM killer"));
	aj_result_free(&r);
	assert_int_equal(count_gvisor_leftovers(), 0);
	assert_int_equal(count_run_cgroups(), 0);
}

/* The caller dies mid-run (SIGKILL: no cleanup of its own). runsc dies with
 * it (PDEATHSIG) and the sandbox with runsc at once; the next open of the
 * tier removes the run directory, and the cgroup sweep the cgroup. */
static void caller_killed_mid_run_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	char base[PATH_MAX];
	run_base(f, base, sizeof base);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct aj_result r;
		run_code(&f->cfg, &r, "import time\ntime.sleep(60)\n");
		_exit(0);
	}
	char mine[64], needle[PATH_MAX + 80];
	snprintf(mine, sizeof mine, "run-%d-", (int)pid);
	snprintf(needle, sizeof needle, "%s/%s", base, mine);
	/* Kill it once its sandbox runs: runsc, gofer and sentry. */
	int running = 0;
	for (int i = 0; i < 100 && running < 3; i++) {
		sleep_ms(100);
		running = count_runsc_processes(needle);
	}
	assert_true(running >= 3);
	double killed_at = now_ms();
	kill(pid, SIGKILL);
	int ws;
	waitpid(pid, &ws, 0);
	/* Every process of the sandbox goes with its caller. */
	for (int i = 0; i < 100 && count_runsc_processes(needle); i++)
		sleep_ms(100);
	assert_int_equal(count_runsc_processes(needle), 0);
	assert_int_equal(count_dir_entries(base, mine), 1);
	/* The sweeps take what is at least ten seconds old. */
	while (now_ms() - killed_at < 11000)
		sleep_ms(200);
	struct aj_sandbox *sb;
	struct aj_error err;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	aj_close(sb);
	assert_int_equal(count_dir_entries(base, mine), 0);
	assert_int_equal(count_cgroups_named(mine), 0);
}

static void check_names_version_and_platform(void **state)
{
	struct fixture *f = *state;
	struct aj_error err = {0};
	assert_int_equal(aj_check(AJ_TIER_GVISOR, &f->cfg, &err), 0);
	assert_true(contains(err.message, "runsc version "));
	assert_true(contains(err.message, "platform ptrace") ||
		    contains(err.message, "platform kvm"));
}

static void unknown_platform_is_refused(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	f->cfg.accel = "tcg";
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -EINVAL);
	assert_null(sb);
	assert_true(contains(err.message, "kvm or ptrace"));
	/* Named outright, ptrace runs. */
	f->cfg.accel = "ptrace";
	struct aj_result r;
	run_code(&f->cfg, &r, "print(6 * 7)\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "42\n");
	aj_result_free(&r);
}

/* gVisor's pids count is the host's, where the sentry's threads are: the
 * program's own bound is RLIMIT_NPROC inside, and it does not take the
 * sandbox down with it. */
static void process_limit_is_the_programs(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.pids = 16;
	run_code(&f->cfg, &r,
		 "import os\n"
		 "made = 0\n"
		 "for i in range(40):\n"
		 "    try:\n"
		 "        pid = os.fork()\n"
		 "    except OSError as e:\n"
		 "        print('stopped', e.errno)\n"
		 "        break\n"
		 "    if pid == 0:\n"
		 "        import time\n        time.sleep(2)\n        os._exit(0)\n"
		 "    made += 1\n"
		 "print('made', made)\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "stopped 11\n"));
	int made = -1;
	const char *m = strstr(r.stdout_buf, "made ");
	assert_non_null(m);
	made = atoi(m + 5);
	assert_true(made >= 10 && made < 16);
	aj_result_free(&r);
}

/* gVisor ignores RLIMIT_CPU: the supervisor reads the sandbox cgroup's CPU
 * time and stops a run, or a session's call, past the limit (plus an
 * allowance for gVisor's own), well before a long wall clock. */
static void cpu_limit_is_watched_from_the_host(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.cpu_sec = 1;
	f->cfg.limits.wall_sec = 60;
	run_code(&f->cfg, &r, "while True:\n    pass\n");
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.message, "CPU time limit of 1 s"));
	assert_int_equal(r.signal, SIGKILL);
	aj_result_free(&r);
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	assert_int_equal(aj_session_open(&f->cfg, &s, &err), 0);
	const char *loop = "while True:\n    pass\n";
	aj_session_run(s, loop, strlen(loop), &r);
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.message, "CPU time limit of 1 s"));
	aj_result_free(&r);
	/* The session goes on, with a fresh interpreter. */
	aj_session_run(s, "print(3)\n", strlen("print(3)\n"), &r);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "3\n");
	aj_result_free(&r);
	aj_session_close(s);
}

/* vm_pool: sandboxes started ahead, each serving one run: a run sees
 * nothing of another, and closing leaves nothing (the teardown counts
 * processes, run directories and cgroups). */
static void pool_runs_are_fresh(void **state)
{
	struct fixture *f = *state;
	f->cfg.vm_pool = 2;
	/* Its runs must finish within it, and one must not: 15 s only
	 * catches a hang of a run that should end (3 s was tight for a
	 * sandbox started cold on a busy machine). */
	f->cfg.limits.wall_sec = 15;
	struct aj_sandbox *sb;
	struct aj_error err;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	const char *code = "import os\n"
			   "print('seen', os.path.exists('/tmp/mark'))\n"
			   "open('/tmp/mark', 'w').write('x')\n";
	for (int i = 0; i < 4; i++) {
		if (i == 2)
			sleep_ms(3000); /* the pool refills: these come from it */
		struct aj_result r;
		aj_run(sb, code, strlen(code), &r);
		assert_status(&r, AJ_STATUS_OK);
		assert_string_equal(r.stdout_buf, "seen False\n");
		aj_result_free(&r);
	}
	/* A run the wall clock stops, from the pool, then one more. */
	sleep_ms(2000);
	struct aj_result r;
	const char *sleeper = "import time\ntime.sleep(3600)\n";
	aj_run(sb, sleeper, strlen(sleeper), &r);
	assert_status(&r, AJ_STATUS_TIMEOUT);
	aj_result_free(&r);
	aj_run(sb, "print(2)\n", strlen("print(2)\n"), &r);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	/* A session under the same config works, and starts no pool of
	 * its own (the teardown would count its sandboxes). */
	struct aj_session *s = NULL;
	assert_int_equal(aj_session_open(&f->cfg, &s, &err), 0);
	aj_session_run(s, "x = 6 * 7\n", strlen("x = 6 * 7\n"), &r);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	sleep_ms(2000);
	char base[PATH_MAX];
	run_base(f, base, sizeof base);
	/* The sandbox's pool (2, refilled) and the session's one sandbox. */
	int dirs = count_dir_entries(base, "run-");
	assert_true(dirs <= 3);
	aj_session_run(s, "print(x)\n", strlen("print(x)\n"), &r);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "42\n");
	aj_result_free(&r);
	aj_session_close(s);
	aj_close(sb);
	assert_int_equal(count_gvisor_leftovers(), 0);
}

/* runsc's gofer would make a missing mount point in the image directory
 * itself, so a SANDBOX the image lacks is refused when the sandbox opens,
 * naming it, and the image is left as it was. */
static void ro_bind_mount_point_must_be_in_the_image(void **state)
{
	struct fixture *f = *state;
	char target[96], made[4200], bind[200];
	snprintf(target, sizeof target, "/mnt/aj-%s", f->token);
	snprintf(bind, sizeof bind, "/usr/share:%s", target);
	snprintf(made, sizeof made, "%s/root%s", f->image, target);
	const char *binds[] = {bind};
	f->cfg.ro_binds = binds;
	f->cfg.ro_bind_count = 1;
	struct aj_sandbox *sb = NULL;
	struct aj_error err;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ENOENT);
	assert_null(sb);
	char want[300];
	snprintf(want, sizeof want,
		 "ro_bind: %s is not in the image, and the gvisor tier cannot make it (runsc "
		 "would write it into the image); choose a path the image has, such as /mnt",
		 target);
	assert_string_equal(err.message, want);
	assert_int_equal(access(made, F_OK), -1);
}

/* Whether this machine's runsc turns Ctrl-C typed into a terminal into
 * SIGINT: gVisor does since 2023-02-19 ("Support some PTY control
 * characters"); Debian 12's runsc is 0.0~20221219. From its version's
 * date; a version without one is taken as new. */
static bool runsc_pty_keys_are_bytes(void)
{
	FILE *p = popen("runsc --version 2>/dev/null", "re");
	char line[256] = "";
	long date = 0;
	if (p) {
		if (fgets(line, sizeof line, p)) {
			const char *d = strpbrk(line, "~-");
			date = d ? strtol(d + 1, NULL, 10) : 0;
		}
		pclose(p);
	}
	return date > 20000000 && date < 20230219;
}

int main(void)
{
	if (getenv("AJ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AJ_TEST_FILTER"));
	if (use_test_image(image_dir, sizeof image_dir))
		return 1;
	fixture.tier = AJ_TIER_GVISOR;
	fixture.count_leftovers = count_gvisor_leftovers;
	fixture.count_sandbox_processes = count_gvisor_processes;
	/* gVisor makes its own /dev: fuse and net/tun are there but need
	 * capabilities the program has none of, and tty needs a controlling
	 * terminal it has not. */
	fixture.guest_ptys = true;
	fixture.pty_keys_not_signals = runsc_pty_keys_are_bytes();
	fixture.ro_bind_in_image_only = true;
	/* A session's sandbox takes a few tenths of a second to make. */
	fixture.session_cycles = 40;
	/* Charts need matplotlib: the test image with the datascience
	 * preset (make test builds it). */
	snprintf(chart_dir, sizeof chart_dir, "%s-ds", image_dir);
	fixture.chart_image = chart_dir;
	/* And the statx shim (src/gvisor/bundle.c), read-only. */
	fixture.dev_listing = "['agentjail-no-automount.so', 'fd', 'full', 'fuse', 'net', 'null', 'ptmx', 'pts', 'random', 'shm', "
			      "'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero']";
	const struct CMUnitTest tests[] = {
		HOSTILE_TABLE,
		STREAM_TABLE,
		HOSTILE_TEST(ro_bind_shows_host_paths_read_only),
		HOSTILE_TEST(ro_bind_mount_point_must_be_in_the_image),
		HOSTILE_TEST(userland_tools_run),
		SESSION_TABLE,
		HOSTILE_SESSION_TABLE,
		HOSTILE_RESTORED_TABLE,
		HOSTILE_TEST(guest_kernel_is_gvisors),
		HOSTILE_TEST(host_proc_and_sys_are_not_there),
		HOSTILE_TEST(gone_after_timeout_and_flood),
		HOSTILE_TEST(nothing_alive_when_the_result_returns),
		HOSTILE_TEST(nothing_left_after_memory_limits),
		HOSTILE_TEST(forged_report_is_output),
		BOOT_EGRESS_TABLE,
		HOSTILE_TEST(caller_killed_mid_run_leaves_nothing),
		HOSTILE_TEST(check_names_version_and_platform),
		HOSTILE_TEST(unknown_platform_is_refused),
		HOSTILE_TEST(process_limit_is_the_programs),
		HOSTILE_TEST(pool_runs_are_fresh),
		HOSTILE_TEST(cpu_limit_is_watched_from_the_host),
	};
	return cmocka_run_group_tests_name("gvisor tier", tests, NULL, NULL);
}
