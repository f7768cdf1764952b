/* The container tier: the shared hostile table, then what is particular to
 * it (the image as the whole view, a read-only root, cgroup limits, and
 * failing closed without cgroups). Runs the test image that `make test`
 * builds with `agentjail image build --from-host --name test`. */
#include <limits.h>

#include "egress_cases.h"
#include "session_cases.h"
#include "stream_cases.h"
#include "userland_cases.h"
#include "src/linux/spawn.h"

static char image_dir[PATH_MAX], chart_dir[PATH_MAX + 4];

/* The image's own copy of a file, as the test reads it from the host. */
static char *image_file(const char *rel)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/root%s", image_dir, rel);
	FILE *fh = fopen(path, "re");
	assert_non_null(fh);
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof buf - 1, fh);
	buf[n] = '\0';
	fclose(fh);
	return buf;
}

static void view_is_the_image(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	make_secret(f);
	run_code(&f->cfg, &r,
		 "import os\n"
		 "print('PASSWD', open('/etc/passwd').read(), 'END')\n"
		 "for p in ['/root', '/home', '/work', '%s', '/sys/fs/cgroup', '/etc/shadow']:\n"
		 "    print(p, os.path.exists(p) and (os.listdir(p) if os.path.isdir(p) else 'file'))\n"
		 "print('sys', os.listdir('/sys'))\n"
		 "print('cgroup', open('/proc/self/cgroup').read().split())\n"
		 "for p in ['/usr/x', '/etc/x', '/x']:\n"
		 "    try:\n"
		 "        open(p, 'w')\n"
		 "        print('WROTE', p)\n"
		 "    except OSError as e:\n"
		 "        print('refused', p, e.errno)\n"
		 "print('host', os.uname().nodename)\n"
		 "print('mounts', len(open('/proc/self/mountinfo').read().splitlines()))\n",
		 f->secret_dir);
	drop_secret(f);
	assert_status(&r, AJ_STATUS_OK);
	/* The image's /etc/passwd, not the host's. */
	char want[9000];
	snprintf(want, sizeof want, "PASSWD %s END", image_file("/etc/passwd"));
	assert_true(contains(r.stdout_buf, want));
	/* Nothing of the host's: its secrets' directory, /root, /home. */
	char line[200];
	snprintf(line, sizeof line, "%s False", f->secret_dir);
	assert_true(contains(r.stdout_buf, line));
	assert_false(contains(r.stdout_buf, "/root ["));
	assert_false(contains(r.stdout_buf, "/home ["));
	assert_true(contains(r.stdout_buf, "/sys/fs/cgroup False"));
	assert_true(contains(r.stdout_buf, "sys []"));
	/* The cgroup namespace is rooted at the run's cgroup: no host path. */
	assert_true(contains(r.stdout_buf, "cgroup ['"));
	assert_false(contains(r.stdout_buf, "run-"));
	/* Read-only image: EROFS (30). */
	assert_true(contains(r.stdout_buf, "refused /usr/x 30"));
	assert_true(contains(r.stdout_buf, "refused /etc/x 30"));
	assert_true(contains(r.stdout_buf, "refused /x 30"));
	assert_false(contains(r.stdout_buf, "WROTE"));
	assert_true(contains(r.stdout_buf, "host sandbox"));
	/* Its own few mounts (image, /dev, pts, shm, /tmp, /var/tmp, /proc):
	 * the host's old root is detached, not merely covered. */
	const char *m = strstr(r.stdout_buf, "mounts ");
	assert_non_null(m);
	assert_true(atoi(m + 7) <= 12);
	aj_result_free(&r);
}

static void cgroup_stops_what_rlimits_would_not(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	/* Four processes of 100 MiB each: every one under any per-process
	 * limit, 400 MiB together. Only a cgroup sees the sum. */
	run_code(&f->cfg, &r,
		 "import os, time\n"
		 "kids = []\n"
		 "for i in range(4):\n"
		 "    pid = os.fork()\n"
		 "    if pid == 0:\n"
		 "        b = bytearray(100 * 1024 * 1024)\n"
		 "        for j in range(0, len(b), 4096):\n"
		 "            b[j] = 1\n"
		 "        time.sleep(3)\n"
		 "        os._exit(0)\n"
		 "    kids.append(pid)\n"
		 "codes = [os.waitstatus_to_exitcode(os.waitpid(k, 0)[1]) for k in kids]\n"
		 "print('children', codes)\n"
		 "import sys\n"
		 "sys.exit(0 if all(c == 0 for c in codes) else 1)\n");
	/* At least one child was OOM-killed (-9): the run reports memory. */
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_true(contains(r.stdout_buf, "-9"));
	assert_true(contains(r.message, "OOM"));
	/* The peak is the whole run's, capped by the limit. */
	assert_true(r.memory_kb <= (uint64_t)f->cfg.limits.memory_mb * 1024);
	assert_true(r.memory_kb > 100 * 1024);
	aj_result_free(&r);
}

static void missing_cgroup_controller_fails_closed(void **state)
{
	struct fixture *f = *state;
	char fake[] = "/tmp/aj-fake-cgroup-XXXXXX", path[300];
	assert_non_null(mkdtemp(fake));
	/* A cgroup v2 host whose memory controller is not enabled. */
	snprintf(path, sizeof path, "%s/cgroup.controllers", fake);
	FILE *fh = fopen(path, "we");
	fputs("cpuset cpu io pids\n", fh);
	fclose(fh);
	f->cfg.cgroup_root = fake;
	struct aj_error err;
	assert_int_equal(aj_check(AJ_TIER_CONTAINER, &f->cfg, &err), -ENOTSUP);
	assert_true(contains(err.message, "cgroup v2: the memory controller is not available"));
	struct aj_sandbox *sb;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ENOTSUP);
	unlink(path);

	/* A cgroup v1 host without a pids hierarchy. */
	char mem[220];
	snprintf(mem, sizeof mem, "%s/memory", fake);
	mkdir(mem, 0755);
	snprintf(path, sizeof path, "%s/cgroup.procs", mem);
	fclose(fopen(path, "we"));
	assert_int_equal(aj_check(AJ_TIER_CONTAINER, &f->cfg, &err), -ENOTSUP);
	assert_true(contains(err.message, "cgroup v1"));
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake);
	assert_int_equal(system(cmd), 0);
}

static void missing_image_is_refused(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb;
	struct aj_error err;
	f->cfg.image = "/nonexistent/image";
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ENOENT);
	assert_true(contains(err.message, "agentjail image build"));
	f->cfg.image = "../escape";
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -EINVAL);
	f->cfg.image = image_dir;
	f->cfg.python = "/usr/bin/python9";
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ENOENT);
	assert_true(contains(err.message, "no /usr/bin/python9"));
}

/* cgroup v2's clone3(CLONE_INTO_CGROUP), on whichever v2 hierarchy this host
 * has (all of /sys/fs/cgroup, or the hybrid layout's unified/ part): the
 * child must be born in the cgroup, not moved there. */
static void born_into_a_v2_cgroup(void **state)
{
	struct fixture *f = *state;
	const char *roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	const char *root = NULL;
	char path[300];
	for (size_t i = 0; i < 2 && !root; i++) {
		snprintf(path, sizeof path, "%s/cgroup.controllers", roots[i]);
		if (access(path, F_OK) == 0)
			root = roots[i];
	}
	if (!root)
		skip();
	char dir[300];
	snprintf(dir, sizeof dir, "%s/agentjail-test-%.16s", root, f->token);
	assert_int_equal(mkdir(dir, 0755), 0);
	int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cg >= 0);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	int pidfd = -1;
	pid_t pid = spawn_clone_into_cgroup(0, cg, &pidfd);
	if (pid == 0) {
		char buf[512];
		int fd = open("/proc/self/cgroup", O_RDONLY);
		ssize_t n = read(fd, buf, sizeof buf);
		(void)!write(fds[1], buf, n > 0 ? (size_t)n : 0);
		_exit(0);
	}
	assert_true(pid > 0);
	close(fds[1]);
	char buf[512] = {0};
	assert_true(read(fds[0], buf, sizeof buf - 1) > 0);
	close(fds[0]);
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	close(pidfd);
	close(cg);
	assert_int_equal(rmdir(dir), 0);
	char want[100];
	snprintf(want, sizeof want, "0::/agentjail-test-%.16s\n", f->token);
	if (!contains(buf, want))
		fail_msg("child's cgroups: %s", buf);
}

/* A checkpoint is the interpreter's state, not the tier's: one made in a
 * process-tier session (the host's Python, which the test image copies)
 * opens in a container session, with its functions and files. */
static void checkpoint_from_another_tier(void **state)
{
	struct fixture *f = *state;
	struct aj_config process = f->cfg;
	process.tier = AJ_TIER_PROCESS;
	process.image = NULL;
	struct aj_checkpoint_key key;
	char path[128];
	ckpt_made_of(&process,
		     "import os\ndef twice(v):\n    return 2 * v\nopen('note', 'w').write('kept')\n"
		     "print('made on', os.environ.get('AJ_TIER', 'the process tier'))",
		     "made on", &key, path, sizeof path);
	struct aj_session *r = NULL;
	struct aj_error err = {0};
	if (aj_session_restore(&f->cfg, &key, path, &r, NULL, &err))
		fail_msg("aj_session_restore: %s", err.message);
	track(r);
	cell_expect(r, "print(twice(21), open('note').read())", AJ_STATUS_OK, "42 kept");
	close_session(r);
	ckpt_dir_remove();
}

int main(void)
{
	if (getenv("AJ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AJ_TEST_FILTER"));
	if (use_test_image(image_dir, sizeof image_dir))
		return 1;
	fixture.tier = AJ_TIER_CONTAINER;
	fixture.session_cycles = 1000;
	/* Charts need matplotlib: the test image with the datascience
	 * preset (make test builds it). */
	snprintf(chart_dir, sizeof chart_dir, "%s-ds", image_dir);
	fixture.chart_image = chart_dir;
	const struct CMUnitTest tests[] = {
		HOSTILE_TABLE,
		STREAM_TABLE,
		HOSTILE_TEST(ro_bind_shows_host_paths_read_only),
		HOSTILE_TEST(userland_tools_run),
		SESSION_TABLE,
		SESSION_TEST(checkpoint_from_another_tier),
		HOSTILE_SESSION_TABLE,
		HOSTILE_RESTORED_TABLE,
		EGRESS_TABLE,
		HOSTILE_TEST(view_is_the_image),
		HOSTILE_TEST(cgroup_stops_what_rlimits_would_not),
		HOSTILE_TEST(missing_cgroup_controller_fails_closed),
		HOSTILE_TEST(missing_image_is_refused),
		HOSTILE_TEST(born_into_a_v2_cgroup),
	};
	return cmocka_run_group_tests_name("container tier", tests, NULL, NULL);
}
