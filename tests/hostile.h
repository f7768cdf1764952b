/* The hostile-program table: every tier must contain every program here.
 * A tier's test file includes this header, sets fixture.tier, and turns the
 * table into cmocka tests (see test_process.c); nothing here names a tier.
 *
 * Each case asserts the outcome the contract promises AND checks the host
 * afterwards (a token not printed, a marker not written, a sentinel alive,
 * a listener that accepted nothing); the common teardown then checks that no
 * process of the sandbox uids and no new mount was left behind.
 *
 * Every program is bounded (loops have counts, sleeps are short) so that
 * even a broken tier could not run one forever. The hostile ones are the
 * table's in src/attack/programs.c, which the soak and agentjail attack run
 * too (run_program); the assertions here are this suite's own, finer than
 * what attack can see from the host. */
#ifndef AJ_TEST_HOSTILE_H
#define AJ_TEST_HOSTILE_H

#include <pthread.h>
#include <signal.h>
#include <linux/keyctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "src/attack/fixtures.h"
#include "src/attack/programs.h"
#include "src/core/contract.h"

struct fixture {
	enum aj_tier tier;
	const char *image;      /* for tiers that run an image */
	const char *docker_image; /* for the docker tier */
	/* What a tier's /dev holds, when it is not the jail engine's own
	 * (Docker adds tty and mqueue and cannot be told not to). */
	const char *dev_listing;
	/* session_charts: an image (and engine image) with matplotlib, where
	 * the tier's usual one lacks it; NULL: the usual one. */
	const char *chart_image;
	const char *chart_docker_image;
	/* How many open/run/close cycles session_cycles_leave_nothing takes. */
	int session_cycles;
	/* The tier offers no ptys at all, rather than a bounded pool. */
	bool no_ptys;
	/* Its ptys are its own kernel's (gVisor's sentry), not the host's
	 * shared pool: nothing of the host's to bound (RLIMIT_NOFILE does). */
	bool guest_ptys;
	/* Its terminals pass Ctrl-C, Ctrl-Z and Ctrl-\ on as bytes, not as
	 * signals to the foreground job (gVisor before 2023-02). */
	bool pty_keys_not_signals;
	/* Extra leftovers a tier can have (its engine's containers): counted
	 * after every case, which must leave none. NULL: none to count. */
	int (*count_leftovers)(void);
	/* The sandbox's processes on the host, where they do not run under
	 * the slot's uid (gVisor's runsc, gofer and sentry); NULL: those of
	 * the slot uids. */
	int (*count_sandbox_processes)(void);
	/* Warm mode (test_warm.c): every case's runs are forks of a zygote. */
	bool warm;
	/* cfg.ro_binds' SANDBOX paths must exist in the image already (the
	 * gvisor tier, whose runsc would make them in the image itself). */
	bool ro_bind_in_image_only;
	struct aj_config cfg;
	char *mountinfo;        /* the host's mounts before the case */
	char token[40];         /* fresh per case */
	char secret_dir[128];   /* 0700 dir with a 0600 secret file of the caller's */
	char secret_file[160];
};

static struct fixture fixture;

/* The image `make test` builds (--from-host) for the tiers that run one,
 * into dir; the fixture's runs use it. 0, or -1 without a cwd. */
static inline int use_test_image(char *dir, size_t n)
{
	char cwd[3000];
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	snprintf(dir, n, "%s/build/images/test", cwd);
	fixture.image = dir;
	return 0;
}

/* Processes of the fixture's sandboxes still on the host. */
static int sandbox_processes(const struct fixture *f)
{
	if (f->count_sandbox_processes)
		return f->count_sandbox_processes();
	return count_processes_with_uid(f->cfg.uid_base, f->cfg.uid_base + f->cfg.slots);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Runs the hostile table's program (src/attack/programs.h) with f's cfg,
 * its placeholders filled with the case's token, the working directory and
 * v's other values. */
static void run_program(struct fixture *f, struct aj_result *r, enum hostile_id id,
			struct hostile_values v)
{
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof cwd));
	v.token = f->token;
	v.cwd = cwd;
	char *code = hostile_fill(hostile_programs[id].code, &v);
	assert_non_null(code);
	run_code(&f->cfg, r, "%s", code);
	free(code);
}

/* No marker file of the case's (marker TOKEN) in any of the host's
 * writable places nor in the working directory. */
static void assert_no_markers(const struct fixture *f, const char *marker)
{
	char cwd[PATH_MAX], found[PATH_MAX + 128];
	assert_non_null(getcwd(cwd, sizeof cwd));
	if (hostile_markers_take(marker, f->token, cwd, found, sizeof found))
		fail_msg("the sandbox wrote %s on the host", found);
}

static int case_setup(void **state)
{
	struct fixture *f = &fixture;
	aj_config_init(&f->cfg);
	f->cfg.tier = f->tier;
	/* A uid range and lock directory of the suite's own: a deployer's
	 * sandboxes running on the same machine must not be counted as our
	 * leftovers, nor ours as theirs. */
	f->cfg.uid_base = 2100000000u;
	f->cfg.state_dir = "/run/agentjail-test";
	/* Test programs run side by side (two checkouts on one machine) each
	 * take a range of their own. */
	const char *base = getenv("AJ_TEST_UID_BASE");
	if (base && *base) {
		static char dir[64];
		f->cfg.uid_base = (uint32_t)strtoul(base, NULL, 10);
		snprintf(dir, sizeof dir, "/run/agentjail-test-%s", base);
		f->cfg.state_dir = dir;
	}
	f->cfg.image = f->image;
	f->cfg.docker_image = f->docker_image;
	f->cfg.warm = f->warm;
	/* Short limits keep the suite fast; each case widens what it needs. */
	f->cfg.limits.wall_sec = 10;
	f->cfg.limits.cpu_sec = 5;
	make_token(f->token, sizeof f->token);
	f->mountinfo = read_mountinfo();
	*state = f;
	return 0;
}

static int case_teardown(void **state)
{
	struct fixture *f = *state;
	harness_close_all(); /* what a failed case left open */
	/* The kernel tears a pid namespace down before its init is reaped, so
	 * nothing should be left even for a moment; allow a short grace for a
	 * tier whose teardown is asynchronous (a VM's process): up to 30 s, a
	 * deadline that only catches what is really left on a busy machine. */
	int left = 0;
	for (int i = 0; i < 300; i++) {
		left = sandbox_processes(f);
		if (!left)
			break;
		sleep_ms(100);
	}
	if (left && !f->count_sandbox_processes)
		list_processes_with_uid(f->cfg.uid_base, f->cfg.uid_base + f->cfg.slots, true);
	assert_int_equal(left, 0);
	char *now = read_mountinfo();
	const char *diff = mountinfo_diff(f->mountinfo, now);
	if (diff[0])
		fail_msg("the host's mount table changed:\n%s", diff);
	/* No run's cgroup outlives it, on either cgroup version. */
	assert_int_equal(count_run_cgroups(), 0);
	if (f->count_leftovers)
		assert_int_equal(f->count_leftovers(), 0);
	free(now);
	free(f->mountinfo);
	f->mountinfo = NULL;
	return 0;
}

/* The hostile table again, each program in a sandbox made ahead (the
 * process tier's pool, cold or warm): the same sandbox, built before its
 * run; each case checks that its run took one. */
static inline int ahead_setup(void **state)
{
	harness_via_ahead = true;
	return case_setup(state);
}

static inline int ahead_teardown(void **state)
{
	harness_via_ahead = false;
	return case_teardown(state);
}

#define HOSTILE_AHEAD_TEST(fn) {"made ahead: " #fn, fn, ahead_setup, ahead_teardown, NULL}

/* ---- the seed article's six ---- */

static void hostile_cpu_loop(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.cpu_sec = 1;
	run_program(f, &r, HOSTILE_CPU_LOOP, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_false(r.has_exit_code);
	assert_true(contains(r.message, "CPU") || contains(r.message, "wall-clock"));
	aj_result_free(&r);
}

static void hostile_memory_512mb(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_program(f, &r, HOSTILE_MEMORY_512MB, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_false(contains(r.stdout_buf, "allocated"));
	assert_true(contains(r.message, "memory"));
	aj_result_free(&r);
}

/* Any MemoryError that ends the program is memory, a subclass too (issue
 * 24 item 11): the interpreter says so on its verdict pipe on every tier
 * (AJ_VERDICT_FD, src/core/launch.py), not in the traceback's words, and
 * the exit code is Python's own 1 (issue 34). */
static void hostile_memory_error_subclass(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "class E(MemoryError):\n    pass\nraise E('mine')\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, "E: mine"));
	assert_false(contains(r.stderr_buf, "<string>")); /* the launcher's frame is not shown */
	aj_result_free(&r);
}

/* A program that exits 121 itself (the code that once carried the memory
 * verdict) ends with its own code and is an error, on every tier. */
static void hostile_exit_121_is_error(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "import sys\nsys.exit(121)\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 121);
	aj_result_free(&r);
}

/* numpy's own: numpy.zeros(10**10) raises _ArrayMemoryError. Where the
 * sandbox has no numpy (probed there), there is nothing to judge. */
static void hostile_numpy_memory_error(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* A working numpy: some images carry a bare numpy directory only. */
	run_code(&f->cfg, &r, "import numpy\nnumpy.zeros(1)\n");
	if (r.status == AJ_STATUS_ERROR &&
	    (contains(r.stderr_buf, "ModuleNotFoundError") || contains(r.stderr_buf, "AttributeError"))) {
		aj_result_free(&r);
		skip();
	}
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	run_code(&f->cfg, &r, "import numpy\nnumpy.zeros(10**10)\nprint('allocated')\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_false(contains(r.stdout_buf, "allocated"));
	assert_true(contains(r.stderr_buf, "MemoryError"));
	aj_result_free(&r);
}

/* "made N" in the output: how many processes a loop started, which the
 * first process alone can never take past the pids limit. */
static void assert_made_under_pids(const struct fixture *f, const struct aj_result *r)
{
	int made = -1;
	const char *p = strstr(r->stdout_buf, "made ");
	if (p)
		made = atoi(p + 5);
	assert_true(made >= 0);
	assert_true((uint32_t)made < f->cfg.limits.pids);
}

static void hostile_fork_bomb(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_program(f, &r, HOSTILE_FORK_BOMB, (struct hostile_values){0});
	if (r.status == AJ_STATUS_SANDBOX_ERROR)
		fail_msg("the sandbox failed: %s", r.message ? r.message : "-");
	/* Held by the memory limit instead: the copies of a session's
	 * interpreter (gVisor copies more of each on fork than Linux does)
	 * passed the sandbox's memory before its pids, and the kernel's OOM
	 * killer ended them, or the whole sandbox (gVisor's sentry holds all
	 * of its memory). Said as that, never as a failure of the sandbox. */
	if (r.status == AJ_STATUS_MEMORY && contains(r.message, "OOM killer"))
		print_message("    held by the memory limit: %s\n", r.message);
	else
		assert_made_under_pids(f, &r);
	aj_result_free(&r);
}

static void hostile_disk_fill(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.file_size_mb = 4096;  /* let the disk limit, not the file limit, stop it */
	run_program(f, &r, HOSTILE_DISK_FILL, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	unsigned mb = 0;
	char code[32] = "";
	assert_int_equal(sscanf(r.stdout_buf, "stopped %u %31s", &mb, code), 2);
	assert_string_equal(code, "ENOSPC");
	assert_true(mb <= f->cfg.limits.disk_mb);
	aj_result_free(&r);
}

static int make_secret(struct fixture *f)
{
	/* Where the program could name it: a caller's 0600 file in a 0700
	 * directory, as ~/.ssh/id_rsa is. */
	snprintf(f->secret_dir, sizeof f->secret_dir, "/var/lib/agentjail-test-XXXXXX");
	mkdir("/var/lib", 0755);
	if (hostile_secret_make(f->secret_dir, f->secret_file, sizeof f->secret_file, f->token)) {
		snprintf(f->secret_dir, sizeof f->secret_dir, "/root/agentjail-test-XXXXXX");
		assert_int_equal(hostile_secret_make(f->secret_dir, f->secret_file,
						     sizeof f->secret_file, f->token), 0);
	}
	return 0;
}

static void drop_secret(struct fixture *f)
{
	unlink(f->secret_file);
	rmdir(f->secret_dir);
}

static void hostile_read_secrets(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	make_secret(f);
	/* The caller's environment holds the token too, as an API key would. */
	setenv("AJ_TEST_API_KEY", f->token, 1);
	run_program(f, &r, HOSTILE_READ_SECRETS, (struct hostile_values){.secret = f->secret_file});
	unsetenv("AJ_TEST_API_KEY");
	drop_secret(f);
	assert_status(&r, AJ_STATUS_OK);
	/* It really tried the file, and got nothing. */
	assert_true(contains(r.stdout_buf, f->secret_file));
	assert_false(contains(r.stdout_buf, f->token));
	assert_false(contains(r.stderr_buf, f->token));
	assert_false(contains(r.stdout_buf, "AJ_TEST_API_KEY"));
	aj_result_free(&r);
}

static void hostile_network(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* A listener of the test's own on loopback: the program must not
	 * reach it, nor anything else. */
	int port = 0;
	int ls = hostile_tcp_listener("127.0.0.1", &port);
	assert_true(ls >= 0);
	run_program(f, &r, HOSTILE_NETWORK, (struct hostile_values){.port = port});
	int c = accept(ls, NULL, NULL);
	int accept_errno = errno;
	if (c >= 0)
		close(c);
	close(ls);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(c < 0 && (accept_errno == EAGAIN || accept_errno == EWOULDBLOCK));
	assert_false(contains(r.stdout_buf, "CONNECTED"));
	assert_false(contains(r.stdout_buf, "RESOLVED"));
	assert_true(contains(r.stdout_buf, "blocked 127.0.0.1"));
	aj_result_free(&r);
}

/* ---- the rest of the table ---- */

static void benign_hello(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "print('hello world')\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(r.has_exit_code);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.stdout_buf, "hello world\n");
	assert_int_equal(r.stderr_len, 0);
	assert_true(r.wall_ms > 0);
	assert_true(r.memory_kb > 0);
	assert_null(r.message);
	aj_result_free(&r);
}

static void benign_exit_code(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.stdout_buf, "out\n");
	assert_string_equal(r.stderr_buf, "err\n");
	aj_result_free(&r);
}

static void benign_exception(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "def f():\n    return 1 / 0\nf()\n");
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 1);
	assert_true(contains(r.stderr_buf, "ZeroDivisionError"));
	assert_true(contains(r.stderr_buf, "line 2"));
	aj_result_free(&r);
}

static void hostile_sleep_forever(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* The clock must pass while it sleeps, not before it has printed:
	 * 5 s, where 1 s left a busy machine's sandbox setup and interpreter
	 * start little room to print within it. */
	f->cfg.limits.wall_sec = 5;
	run_program(f, &r, HOSTILE_SLEEP_FOREVER, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_TIMEOUT);
	/* What it printed before the timeout is kept. */
	assert_string_equal(r.stdout_buf, "going to sleep\n");
	assert_true(contains(r.message, "wall-clock"));
	aj_result_free(&r);
}

static void hostile_thread_bomb(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* It ends by itself once its threads are refused: the wall clock and
	 * CPU only catch a hang. Under TCG on a busy machine the microvm's
	 * hundreds of thread starts took past the fixture's 10 s. */
	f->cfg.limits.wall_sec = 120;
	f->cfg.limits.cpu_sec = 60;
	run_program(f, &r, HOSTILE_THREAD_BOMB, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	int made = -1;
	assert_int_equal(sscanf(r.stdout_buf, "made %d", &made), 1);
	assert_true(made >= 0 && (uint32_t)made < f->cfg.limits.pids);
	aj_result_free(&r);
}

/* Not hostile: a daemon thread that wakes while the interpreter tears
 * down (a __del__ sleeping at exit) is ended with pthread_exit, which
 * glibc unwinds through a dlopened libgcc_s: an image without it aborts
 * the program (SIGABRT), as the thread bomb's threads once showed. */
static void benign_thread_ends(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import threading, time\n"
		 "class Slow:\n"
		 "    def __del__(self, sleep=time.sleep):\n"
		 "        sleep(0.5)\n"
		 "keep = Slow()\n"
		 "threading.Thread(target=time.sleep, args=(0.1,), daemon=True).start()\n"
		 "print('started')\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "started\n");
	aj_result_free(&r);
}

static void hostile_big_file(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.disk_mb = 512;  /* let the file-size limit, not the disk, stop it */
	run_program(f, &r, HOSTILE_BIG_FILE, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	unsigned mb = 0;
	char code[32] = "";
	assert_int_equal(sscanf(r.stdout_buf, "stopped %u %31s", &mb, code), 2);
	assert_string_equal(code, "EFBIG");
	assert_true(mb <= f->cfg.limits.file_size_mb);
	aj_result_free(&r);
}

static void hostile_fill_tmp_and_shm(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.file_size_mb = 4096;
	run_program(f, &r, HOSTILE_FILL_TMP_AND_SHM, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "/tmp ENOSPC"));
	assert_true(contains(r.stdout_buf, "/dev/shm ENOSPC"));
	const char *t = strstr(r.stdout_buf, "total ");
	assert_non_null(t);
	/* All writable places share one limit. */
	assert_true((unsigned)atoi(t + 6) <= f->cfg.limits.disk_mb);
	/* Nothing of it on the host: not in /tmp, /dev/shm, nor anywhere else. */
	assert_no_markers(f, "fill-");
	aj_result_free(&r);
}

static void hostile_daemon(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* setsid + double fork: the classic escape from a process-group kill.
	 * The daemon would write a marker after the run ended. */
	run_program(f, &r, HOSTILE_DAEMON, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	/* Give a surviving daemon the time to act, then look for it. */
	sleep_ms(2000);
	assert_int_equal(sandbox_processes(f),
			 0);
	assert_no_markers(f, "daemon-");
	aj_result_free(&r);
}

static void hostile_output_flood(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.output_kb = 256;
	/* 1 GB if nothing stopped it. */
	run_program(f, &r, HOSTILE_OUTPUT_FLOOD, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OUTPUT_LIMIT);
	assert_true(r.stdout_truncated);
	assert_int_equal(r.stdout_len, (size_t)f->cfg.limits.output_kb * 1024);
	assert_true(contains(r.message, "output"));
	aj_result_free(&r);
}

static void hostile_kill_all(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* A sentinel of the test's, running as the very uid the sandbox will
	 * get (one slot), so only the sandbox's own boundary can save it. */
	f->cfg.slots = 1;
	/* The sentinel says when it has the uid: the run starts after that
	 * event, not after a pause a busy machine may not honour. */
	int ready[2];
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid_t sentinel = fork();
	assert_true(sentinel >= 0);
	if (sentinel == 0) {
		close(ready[0]);
		if (geteuid() == 0 &&
		    (setresgid(f->cfg.uid_base, f->cfg.uid_base, f->cfg.uid_base) ||
		     setresuid(f->cfg.uid_base, f->cfg.uid_base, f->cfg.uid_base)))
			_exit(3);
		(void)!write(ready[1], "y", 1);
		close(ready[1]);
		for (int i = 0; i < 600; i++)
			sleep_ms(100);
		_exit(0);
	}
	close(ready[1]);
	char c = 0;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	run_program(f, &r, HOSTILE_KILL_ALL, (struct hostile_values){0});
	int ws = 0;
	pid_t w = waitpid(sentinel, &ws, WNOHANG);
	bool alive = w == 0 && kill(sentinel, 0) == 0;
	kill(sentinel, SIGKILL);
	waitpid(sentinel, &ws, 0);
	assert_true(alive);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
}

static void hostile_list_proc(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	char mypid[32];
	snprintf(mypid, sizeof mypid, "%d", (int)getpid());
	run_program(f, &r, HOSTILE_LIST_PROC, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	int n = -1;
	assert_int_equal(sscanf(r.stdout_buf, "%d", &n), 1);
	/* Its own process and at most the sandbox's init: no host process,
	 * and not even the supervisor's command line through init. */
	assert_true(n >= 1 && n <= 2);
	assert_false(contains(r.stdout_buf, "test_"));
	aj_result_free(&r);
}

static void hostile_write_everywhere(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_program(f, &r, HOSTILE_WRITE_EVERYWHERE, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	/* Its own scratch space takes writes; the host's files refuse them. */
	assert_true(contains(r.stdout_buf, "wrote /tmp"));
	assert_true(contains(r.stdout_buf, "wrote ."));
	assert_true(contains(r.stdout_buf, "refused /etc"));
	assert_no_markers(f, "w-");
	aj_result_free(&r);
}

struct concurrent_run {
	struct aj_config cfg;
	int index;
	struct aj_result res;
};

static void *concurrent_worker(void *arg)
{
	struct concurrent_run *c = arg;
	run_code(&c->cfg, &c->res,
		 "import os, time\n"
		 "open('mine-%d', 'w').write('x')\n"
		 "open('/tmp/mine-%d', 'w').write('x')\n"
		 "time.sleep(0.3)\n"
		 "print(sorted(os.listdir('.')), sorted(os.listdir('/tmp')))\n",
		 c->index, c->index);
	return NULL;
}

static void isolation_concurrent_runs(void **state)
{
	struct fixture *f = *state;
	enum { N = 8 };
	struct concurrent_run runs[N];
	pthread_t th[N];
	for (int i = 0; i < N; i++) {
		runs[i].cfg = f->cfg;
		runs[i].index = i;
		assert_int_equal(pthread_create(&th[i], NULL, concurrent_worker, &runs[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++) {
		struct aj_result *r = &runs[i].res;
		assert_status(r, AJ_STATUS_OK);
		for (int j = 0; j < N; j++) {
			char name[32];
			snprintf(name, sizeof name, "'mine-%d'", j);
			/* Its own files, in both places, and nobody else's. */
			if (contains(r->stdout_buf, name) != (i == j))
				fail_msg("run %d sees %s: %s", i, name, r->stdout_buf);
		}
		aj_result_free(r);
	}
}

static void isolation_sequential_runs(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "open('left-%s', 'w').write('x')\n"
		 "open('/tmp/left-%s', 'w').write('x')\n"
		 "open('/dev/shm/left-%s', 'w').write('x')\n",
		 f->token, f->token, f->token);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	run_code(&f->cfg, &r,
		 "import os\n"
		 "print(os.listdir('.'), os.listdir('/tmp'), os.listdir('/dev/shm'))\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_false(contains(r.stdout_buf, f->token));
	aj_result_free(&r);
}

/* ---- what a review found reachable without the filter and a /dev of its own ---- */

static void hostile_host_unix_socket(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	char dir[64], path[96];
	snprintf(dir, sizeof dir, "/run/agentjail-test-%.16s", f->token);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof path, "%s/service.sock", dir);
	int ls = hostile_unix_listener(path);
	assert_true(ls >= 0);
	run_program(f, &r, HOSTILE_HOST_UNIX_SOCKET, (struct hostile_values){.sock = path});
	int c = accept(ls, NULL, NULL);
	if (c >= 0)
		close(c);
	close(ls);
	unlink(path);
	rmdir(dir);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(c < 0);
	assert_false(contains(r.stdout_buf, "CREATED"));
	assert_false(contains(r.stdout_buf, "CONNECTED"));
	/* Its own processes can still talk over a socketpair. */
	assert_true(contains(r.stdout_buf, "pair ok"));
	aj_result_free(&r);
}

/* The caller's session keyring holds a secret, as a login keyring would. */
static int keyring_with_secret(void *ctx)
{
	const char *token = ctx;
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "agentjail-test") < 0)
		return -1;
	return syscall(SYS_add_key, "user", "agentjail-test-secret", token, strlen(token),
		       KEY_SPEC_SESSION_KEYRING) < 0 ? -1 : 0;
}

static void hostile_keyrings(void **state)
{
	struct fixture *f = *state;
	char buf[800];
	const char *code = hostile_programs[HOSTILE_KEYRINGS].code;
	run_in_child(keyring_with_secret, f->token, &f->cfg, code, buf, sizeof buf);
	assert_true(strncmp(buf, "ok|", 3) == 0);
	assert_false(contains(buf, f->token));
	assert_false(contains(buf, "agentjail-test-secret"));
	assert_true(contains(buf, "add_key -1 1\n"));   /* EPERM */
	assert_true(contains(buf, "keyctl -1 1\n"));
	/* Nothing planted survives into the next run. */
	run_in_child(keyring_with_secret, f->token, &f->cfg, code, buf, sizeof buf);
	assert_false(contains(buf, "planted"));
}

static void hostile_devices(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_program(f, &r, HOSTILE_DEVICES, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf,
			     f->dev_listing ? f->dev_listing
					    : "['fd', 'full', 'null', 'ptmx', 'pts', 'random', 'shm', "
					      "'stderr', 'stdin', 'stdout', 'urandom', 'zero']"));
	if (f->no_ptys) {
		assert_true(contains(r.stdout_buf, "no pty"));
		assert_true(contains(r.stdout_buf, "ptys stopped at 0"));
	} else {
		assert_true(contains(r.stdout_buf, "pty b'typed\\n'"));
		/* A private devpts, with a bound on the host's global pty pool. */
		if (!f->guest_ptys)
			assert_true(contains(r.stdout_buf, "ptys stopped at"));
	}
	/* No device of the host's; /dev/tty may be there (Docker's), but with no
	 * controlling terminal it cannot be opened. */
	assert_false(contains(r.stdout_buf, "OPENED"));
	const char *absent[] = {"/dev/kvm", "/dev/vda", "/dev/mem", "/dev/console"};
	for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "%s False", absent[i]);
		assert_true(contains(r.stdout_buf, line));
	}
	if (!f->dev_listing)
		assert_true(contains(r.stdout_buf, "/dev/tty False"));
	assert_true(contains(r.stdout_buf, "zero b'\\x00\\x00'"));
	aj_result_free(&r);
}

static void hostile_denied_syscalls(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* Each call an escape or a resource grab would start with, made with
	 * harmless arguments: the filter answers EPERM before the kernel looks
	 * at them. (x86-64 numbers.) */
	run_program(f, &r, HOSTILE_DENIED_SYSCALLS, (struct hostile_values){0});
	assert_status(&r, AJ_STATUS_OK);
	assert_false(contains(r.stdout_buf, "ALLOWED"));
	const char *names[] = {"mount", "umount2", "pivot_root", "chroot", "unshare_user",
			       "unshare_net", "setns", "ptrace", "process_vm_readv", "bpf",
			       "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
			       "io_uring_setup", "kexec_load", "init_module", "finit_module",
			       "delete_module", "open_by_handle_at", "reboot", "swapon",
			       "clock_settime", "settimeofday", "acct", "quotactl", "personality",
			       "shmget", "msgget", "semget", "memfd_create", "syslog",
			       "clone_newuser"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "%s EPERM\n", names[i]);
		if (!contains(r.stdout_buf, line))
			fail_msg("%s did not fail with EPERM:\n%s", names[i], r.stdout_buf);
	}
	/* clone3 is unavailable (so glibc uses clone, which is checked), and
	 * ordinary process creation is untouched. */
	assert_true(contains(r.stdout_buf, "clone3 ENOSYS"));
	assert_true(contains(r.stdout_buf, "fork still works 7"));
	aj_result_free(&r);
}

/* Rules E1 and E2 (docs/design.md): the program starts with exactly the
 * environment of the one table (src/core/contract.c) and every rlimit row
 * that applies to its tier at the table's values for the run's limits. The
 * expected values are read from that table, so a change to it moves this
 * case with it. Only the address space row depends on the tier (its row
 * says why): the process and gvisor tiers apply it. A session's
 * interpreter adds matplotlib's two variables (repl.py) and moves its
 * soft CPU limit to each call's share, so there the CPU row is the session
 * tests' to judge. */
/* The open-files limit is the deployer's on every tier (rule E2): past a
 * value other than the default, open() fails with EMFILE. (The microvm
 * guest once applied the default whatever the limits said.) */
static void contract_open_files_limit(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.open_files = 32;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import errno, os\n"
		 "fds = []\n"
		 "try:\n"
		 "    while len(fds) < 1000:\n"
		 "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
		 "    print('stopped', len(fds), 'never')\n"
		 "except OSError as e:\n"
		 "    print('stopped', len(fds), errno.errorcode.get(e.errno, e.errno))\n");
	assert_status(&r, AJ_STATUS_OK);
	unsigned opened = 0;
	char why[32] = "";
	if (sscanf(r.stdout_buf, "stopped %u %31s", &opened, why) != 2)
		fail_msg("no count in what the program printed: %s", r.stdout_buf);
	assert_string_equal(why, "EMFILE");
	assert_true(opened > 0);
	assert_true(opened < 32); /* stdio and the interpreter's own count too */
	aj_result_free(&r);
}

static void contract_environment_and_rlimits(void **state)
{
	struct fixture *f = *state;
	bool address_space = f->tier == AJ_TIER_PROCESS || f->tier == AJ_TIER_GVISOR;
	char ids[256] = "";
	size_t n = 0;
	for (size_t i = 0; i < contract_rlimit_count; i++)
		n += (size_t)snprintf(ids + n, sizeof ids - n, "%d, ", contract_rlimits[i].resource);
	assert_true(n < sizeof ids);
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os, resource\n"
		 "print('home-is-cwd', os.environ.get('HOME') == os.getcwd())\n"
		 "for k, v in sorted(os.environ.items()):\n"
		 "    print('env %%s=%%s' %% (k, v))\n"
		 "for r in [%s]:\n"
		 "    print('rlimit %%d %%d %%d' %% ((r,) + resource.getrlimit(r)))\n",
		 ids);
	assert_status(&r, AJ_STATUS_OK);
	const char *out = r.stdout_buf;
	int env_lines = 0;
	for (const char *p = out; (p = strstr(p, "env ")); p++)
		env_lines += p == out || p[-1] == '\n';
	char want[200];
	for (size_t i = 0; i < CONTRACT_ENVIRONMENT_COUNT; i++) {
		snprintf(want, sizeof want, "env %s\n", contract_environment[i]);
		if (!contains(out, want))
			fail_msg("the program's environment lacks %s: %s", contract_environment[i], out);
	}
	if (harness_via_session) {
		assert_true(contains(out, "env MPLBACKEND=Agg\n"));
		assert_true(contains(out, "env MPLCONFIGDIR=/tmp/.matplotlib\n"));
	}
	if (env_lines != CONTRACT_ENVIRONMENT_COUNT + (harness_via_session ? 2 : 0))
		fail_msg("the program's environment has more than the table: %s", out);
	assert_true(contains(out, "home-is-cwd True\n"));
	for (size_t i = 0; i < contract_rlimit_count; i++) {
		const struct contract_rlimit *row = &contract_rlimits[i];
		if (!contract_rlimit_applies(row, address_space, true) ||
		    (harness_via_session && row->resource == RLIMIT_CPU))
			continue;
		uint64_t soft, hard;
		contract_rlimit_values(row, &f->cfg.limits, &soft, &hard);
		snprintf(want, sizeof want, "rlimit %d %llu %llu\n", row->resource,
			 (unsigned long long)soft, (unsigned long long)hard);
		if (!contains(out, want))
			fail_msg("rlimit %s: want %s in %s", row->word, want, out);
	}
	aj_result_free(&r);
}

/* Rule E1 with the deployer's variables (cfg.env): the program sees them,
 * byte for byte, beside the table's rows, which stay the table's; a name
 * that would weaken the sandbox never opens one. Every tier hands them on
 * (the microvm's frames carry them to its guest). */
static void deployer_environment_reaches_the_program(void **state)
{
	struct fixture *f = *state;
	struct aj_config c = f->cfg;
	static const char *const env[] = {"AJ_DEPLOYER_VAR=one two=three ', \"$HOME\"",
					  "PYTHONDONTWRITEBYTECODE=1"};
	c.env = env;
	c.env_count = 2;
	struct aj_error err = {0};
	struct aj_result r;
	run_code(&c, &r,
		 "import os\n"
		 "for k, v in sorted(os.environ.items()):\n"
		 "    print('env %%s=%%s' %% (k, v))\n");
	assert_status(&r, AJ_STATUS_OK);
	for (size_t i = 0; i < 2; i++) {
		char want[200];
		snprintf(want, sizeof want, "env %s\n", env[i]);
		if (!contains(r.stdout_buf, want))
			fail_msg("the program's environment lacks %s: %s", env[i], r.stdout_buf);
	}
	for (size_t i = 0; i < CONTRACT_ENVIRONMENT_COUNT; i++) {
		char want[200];
		snprintf(want, sizeof want, "env %s\n", contract_environment[i]);
		if (!contains(r.stdout_buf, want))
			fail_msg("the table's %s is gone: %s", contract_environment[i], r.stdout_buf);
	}
	aj_result_free(&r);
	/* What would load code, move the proxy or the contract: never opens. */
	static const char *const weakening[] = {"LD_PRELOAD=/tmp/work/x.so", "HTTPS_PROXY=x",
						"PYTHONSTARTUP=/tmp/work/s.py", "HOME=/"};
	for (size_t i = 0; i < sizeof weakening / sizeof weakening[0]; i++) {
		c.env = &weakening[i];
		c.env_count = 1;
		struct aj_sandbox *sb = NULL;
		assert_int_equal(aj_open(&c, &sb, &err), -EINVAL);
		assert_null(sb);
		assert_true(contains(err.message, "may not be set"));
	}
}

/* An application that ignores SIGCHLD and blocks every signal it can, as
 * some servers do, around its call to aj_run. */
static int hostile_signal_state(void *ctx)
{
	(void)ctx;
	signal(SIGCHLD, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	sigset_t all;
	sigfillset(&all);
	return sigprocmask(SIG_BLOCK, &all, NULL);
}

static void caller_signal_state_is_not_inherited(void **state)
{
	struct fixture *f = *state;
	char buf[800];
	run_in_child(hostile_signal_state, NULL, &f->cfg,
		     "import signal\n"
		     "print('blocked', sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))\n"
		     "print('sigchld', signal.getsignal(signal.SIGCHLD))\n",
		     buf, sizeof buf);
	if (!contains(buf, "ok||blocked []\nsigchld 0\n")) /* 0: SIG_DFL */
		fail_msg("%s", buf);
	/* And the supervisor can still stop it. */
	struct aj_config c = f->cfg;
	c.limits.wall_sec = 0.5;
	run_in_child(hostile_signal_state, NULL, &c, "import time\ntime.sleep(30)\n", buf,
		     sizeof buf);
	if (!contains(buf, "timeout|wall-clock"))
		fail_msg("%s", buf);
}

struct cancelled_run {
	const struct aj_config *cfg;
	struct aj_cancel *cancel;
	struct aj_result res;
};

static void *cancelled_worker(void *arg)
{
	struct cancelled_run *c = arg;
	struct aj_sandbox *sb;
	struct aj_error err;
	if (aj_open(c->cfg, &sb, &err))
		return NULL;
	const char *code = "import time\nprint('started', flush=True)\ntime.sleep(30)\n";
	aj_run_cancellable(sb, code, strlen(code), c->cancel, &c->res);
	aj_close(sb);
	return NULL;
}

/* Makes *cancel, starts worker(ctx) (which runs with it into res), lets it
 * run ms, then withdraws it, as an MCP client's cancellation would: the run
 * ends killed, saying it was cancelled, long before its sleep ends. */
static void cancel_after(int ms, struct aj_cancel **cancel, void *(*worker)(void *), void *ctx,
			 struct aj_result *res)
{
	assert_int_equal(aj_cancel_new(cancel), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, worker, ctx), 0);
	sleep_ms(ms);
	aj_cancel_fire(*cancel);
	pthread_join(th, NULL);
	aj_cancel_free(*cancel);
	assert_status(res, AJ_STATUS_KILLED);
	assert_true(contains(res->message, "cancelled"));
}

static void cancel_stops_the_run(void **state)
{
	struct fixture *f = *state;
	struct cancelled_run c = {.cfg = &f->cfg};
	/* The whole sandbox stops, not only the program. */
	cancel_after(500, &c.cancel, cancelled_worker, &c, &c.res);
	aj_result_free(&c.res);
}

/* ---- the deployer's read-only host paths (cfg.ro_binds) ----
 * Not in the table: the microvm tier refuses them (no host path reaches
 * its guest). A directory and a file of the host's, under /var/tmp (which
 * no tier otherwise shows), appear at their SANDBOX paths, with mount
 * points made under /mnt (on the gvisor tier: the directory on the
 * image's empty /mnt itself, and no file); nothing in them can be written,
 * even a world-writable directory, and the host's copies are unchanged. */
__attribute__((unused)) /* test_microvm.c has no use for it */
static void ro_bind_shows_host_paths_read_only(void **state)
{
	struct fixture *f = *state;
	char dir[128], sub[160], file[160], single[160], d_bind[400], f_bind[400];
	char d_at[128], f_at[128];
	bool with_file = !f->ro_bind_in_image_only;
	snprintf(dir, sizeof dir, "/var/tmp/agentjail-robind-%s", f->token);
	snprintf(sub, sizeof sub, "%s/open", dir);
	snprintf(file, sizeof file, "%s/f", dir);
	snprintf(single, sizeof single, "/var/tmp/agentjail-robind-%s.txt", f->token);
	if (with_file)
		snprintf(d_at, sizeof d_at, "/mnt/aj-%s/data", f->token);
	else
		snprintf(d_at, sizeof d_at, "/mnt");
	snprintf(f_at, sizeof f_at, "/mnt/aj-%s-file", f->token);
	snprintf(d_bind, sizeof d_bind, "%s:%s", dir, d_at);
	snprintf(f_bind, sizeof f_bind, "%s:%s", single, f_at);
	bool made_mnt = mkdir("/mnt", 0755) == 0;
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(sub, 0777), 0);
	assert_int_equal(chmod(sub, 0777), 0);
	FILE *fh = fopen(file, "we");
	assert_non_null(fh);
	fprintf(fh, "dir-%s\n", f->token);
	fclose(fh);
	assert_non_null(fh = fopen(single, "we"));
	fprintf(fh, "file-%s\n", f->token);
	fclose(fh);
	chmod(file, 0666);
	chmod(single, 0666);

	const char *binds[] = {d_bind, f_bind};
	f->cfg.ro_binds = binds;
	f->cfg.ro_bind_count = with_file ? 2 : 1;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os\n"
		 "d, fp = '%s', '%s' if %d else None\n"
		 "print('mnt', sorted(x for x in os.listdir('/mnt') if x.startswith('aj-')))\n"
		 "print('data', sorted(os.listdir(d)))\n"
		 "print(open(d + '/f').read().strip(), fp and open(fp).read().strip())\n"
		 "def tried(what, fn, *a):\n"
		 "    try:\n"
		 "        fn(*a)\n"
		 "        print('CHANGED', what)\n"
		 "    except OSError as e:\n"
		 "        print('refused', what)\n"
		 "tried('create', lambda: open(d + '/open/new', 'w'))\n"
		 "tried('write', lambda: open(d + '/f', 'a'))\n"
		 "tried('write-file', lambda: open(fp or d + '/f', 'w'))\n"
		 "tried('unlink', os.unlink, d + '/f')\n"
		 "tried('rename', os.rename, d + '/f', d + '/g')\n"
		 "tried('chmod', os.chmod, d + '/f', 0o777)\n"
		 "tried('mkdir', os.mkdir, '/mnt/new')\n"
		 "tried('mkdir-in', os.mkdir, d + '/other')\n",
		 d_at, f_at, with_file);
	char line[128] = "", line2[128] = "", newp[200];
	assert_non_null(fh = fopen(file, "re"));
	(void)!fgets(line, sizeof line, fh);
	fclose(fh);
	assert_non_null(fh = fopen(single, "re"));
	(void)!fgets(line2, sizeof line2, fh);
	fclose(fh);
	snprintf(newp, sizeof newp, "%s/new", sub);
	bool new_file = access(newp, F_OK) == 0;
	unlink(newp);
	unlink(file);
	rmdir(sub);
	rmdir(dir);
	unlink(single);
	if (made_mnt)
		rmdir("/mnt");
	assert_status(&r, AJ_STATUS_OK);
	char want[256];
	if (with_file)
		snprintf(want, sizeof want, "mnt ['aj-%s', 'aj-%s-file']\n", f->token, f->token);
	else
		snprintf(want, sizeof want, "mnt []\n");
	assert_true(contains(r.stdout_buf, want));
	assert_true(contains(r.stdout_buf, "data ['f', 'open']\n"));
	snprintf(want, sizeof want, "dir-%s %s%s\n", f->token, with_file ? "file-" : "None",
		 with_file ? f->token : "");
	assert_true(contains(r.stdout_buf, want));
	assert_false(contains(r.stdout_buf, "CHANGED"));
	static const char *const tries[] = {"create", "write", "write-file", "unlink", "rename",
					    "chmod", "mkdir", "mkdir-in"};
	for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
		snprintf(want, sizeof want, "refused %s\n", tries[i]);
		assert_true(contains(r.stdout_buf, want));
	}
	snprintf(want, sizeof want, "dir-%s\n", f->token);
	assert_string_equal(line, want);
	snprintf(want, sizeof want, "file-%s\n", f->token);
	assert_string_equal(line2, want);
	assert_false(new_file);
	aj_result_free(&r);
}

#define HOSTILE_TEST(fn) cmocka_unit_test_setup_teardown(fn, case_setup, case_teardown)

/* The whole table, in the order a reader meets the threats; T makes a
 * cmocka test of each. */
#define HOSTILE_CASES(T)                                                                    \
	T(benign_hello), T(benign_exit_code), T(benign_exception), T(hostile_cpu_loop),     \
	T(hostile_memory_512mb), T(hostile_memory_error_subclass), T(hostile_exit_121_is_error), \
	T(hostile_numpy_memory_error), T(hostile_fork_bomb), T(hostile_disk_fill),          \
	T(hostile_read_secrets), T(hostile_network), T(hostile_sleep_forever),              \
	T(hostile_thread_bomb), T(benign_thread_ends), T(hostile_big_file), T(hostile_fill_tmp_and_shm),           \
	T(hostile_daemon), T(hostile_output_flood), T(hostile_kill_all), T(hostile_list_proc), \
	T(hostile_write_everywhere), T(isolation_concurrent_runs),                          \
	T(isolation_sequential_runs), T(hostile_host_unix_socket), T(hostile_keyrings),     \
	T(hostile_devices), T(hostile_denied_syscalls),                                     \
	T(contract_environment_and_rlimits), T(deployer_environment_reaches_the_program),      \
	T(contract_open_files_limit), T(caller_signal_state_is_not_inherited),                \
	T(cancel_stops_the_run)

#define HOSTILE_TABLE HOSTILE_CASES(HOSTILE_TEST)

#endif
