/* The microvm tier: the shared hostile table, each case in a fresh VM under
 * its own kernel, then what is particular to it: the VMM runs jailed, a VMM
 * that dies is the sandbox's failure, and no VM or file outlives its run.
 * Sized for TCG (software emulation), where each run costs 0.2-2 s. */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>

#include "egress_cases.h"
#include "stream_cases.h"
#include "userland_cases.h"
#include "session_cases.h"

static char image_dir[PATH_MAX], chart_dir[PATH_MAX + 4];

/* QEMUs of the sandbox uids (the runs' jailed VMMs): how many, and the pid
 * of one in *first. */
static int qemus(const struct aj_config *cfg, pid_t *first)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	if (first)
		*first = 0;
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[300], comm[64] = "", line[256];
		snprintf(path, sizeof path, "/proc/%s/comm", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool qemu = fgets(comm, sizeof comm, f) && !strncmp(comm, "qemu-system", 11);
		fclose(f);
		snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
		unsigned uid = 0;
		FILE *s = qemu ? fopen(path, "re") : NULL;
		while (s && fgets(line, sizeof line, s))
			sscanf(line, "Uid: %u", &uid);
		if (s)
			fclose(s);
		if (qemu && uid >= cfg->uid_base && uid < cfg->uid_base + cfg->slots) {
			if (first && !*first)
				*first = atoi(de->d_name);
			n++;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static pid_t find_qemu(const struct aj_config *cfg)
{
	pid_t p;
	qemus(cfg, &p);
	return p;
}

struct background_run {
	struct aj_config cfg;
	const char *code;
	struct aj_result res;
};

static void *background(void *arg)
{
	struct background_run *b = arg;
	struct aj_sandbox *sb;
	struct aj_error err;
	if (aj_open(&b->cfg, &sb, &err) == 0) {
		aj_run(sb, b->code, strlen(b->code), &b->res);
		aj_close(sb);
	}
	return NULL;
}

/* Starts b in a thread and waits (bounded) for its VM's QEMU to appear. */
static pid_t start_and_find_qemu(struct background_run *b, pthread_t *th)
{
	assert_int_equal(pthread_create(th, NULL, background, b), 0);
	pid_t q = 0;
	for (int i = 0; i < 200 && !q; i++) {
		q = find_qemu(&b->cfg);
		if (!q)
			sleep_ms(20);
	}
	assert_true(q > 0);
	return q;
}

static void vmm_is_jailed(void **state)
{
	struct fixture *f = *state;
	struct background_run b = {.cfg = f->cfg, .code = "import time\ntime.sleep(3)\n"};
	pthread_t th;
	pid_t q = start_and_find_qemu(&b, &th);
	char path[64], line[256];
	int seccomp = -1, nnp = -1;
	unsigned uid = 0;
	char capeff[32] = "";
	/* QEMU turns its sandbox on early in its start-up: look until it has
	 * (bounded), then insist. */
	for (int i = 0; i < 100 && seccomp != 2; i++) {
		snprintf(path, sizeof path, "/proc/%d/status", (int)q);
		FILE *s = fopen(path, "re");
		assert_non_null(s);
		while (fgets(line, sizeof line, s)) {
			sscanf(line, "Seccomp: %d", &seccomp);
			sscanf(line, "NoNewPrivs: %d", &nnp);
			sscanf(line, "Uid: %u", &uid);
			sscanf(line, "CapEff: %31s", capeff);
		}
		fclose(s);
		if (seccomp != 2)
			sleep_ms(20);
	}
	/* Not root, no capabilities, QEMU's seccomp filter on (mode 2). */
	assert_int_not_equal(uid, 0);
	assert_string_equal(capeff, "0000000000000000");
	assert_int_equal(seccomp, 2);
	assert_int_equal(nnp, 1);
	/* And in namespaces of its own: not the host's network or pids. */
	char mine[64], theirs[64];
	snprintf(path, sizeof path, "/proc/%d/ns/net", (int)q);
	ssize_t n = readlink(path, theirs, sizeof theirs - 1);
	assert_true(n > 0);
	theirs[n] = '\0';
	n = readlink("/proc/self/ns/net", mine, sizeof mine - 1);
	mine[n] = '\0';
	assert_string_not_equal(mine, theirs);
	pthread_join(th, NULL);
	assert_status(&b.res, AJ_STATUS_OK);
	aj_result_free(&b.res);
}

static void killed_vmm_is_a_sandbox_error(void **state)
{
	struct fixture *f = *state;
	struct background_run b = {.cfg = f->cfg, .code = "import time\ntime.sleep(5)\n"};
	pthread_t th;
	pid_t q = start_and_find_qemu(&b, &th);
	sleep_ms(300);
	kill(q, SIGKILL);
	pthread_join(th, NULL);
	/* Not the program's fault: the sandbox failed, and says how. */
	assert_status(&b.res, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(b.res.message, "VM ended before answering"));
	aj_result_free(&b.res);
}

/* Run directories (STATE_DIR-vm/run-*) still on the host. */
static int run_dirs_left(const struct aj_config *cfg)
{
	char base[PATH_MAX];
	snprintf(base, sizeof base, "%s-vm", cfg->state_dir);
	DIR *d = opendir(base);
	struct dirent *de;
	int left = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "run-", 4))
			left++;
	if (d)
		closedir(d);
	return left;
}

/* Leftovers counted after every case: run directories of this suite. */
static int count_run_dirs(void)
{
	return run_dirs_left(&fixture.cfg);
}

static void no_run_directory_outlives_its_run(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "print('in a VM')\n");
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	assert_int_equal(run_dirs_left(&f->cfg), 0);
}

static void its_own_kernel(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os\n"
		 "print(os.uname().release, os.getuid())\n"
		 "print(open('/proc/cmdline').read())\n");
	assert_status(&r, AJ_STATUS_OK);
	/* Debian's cloud kernel, whatever the host runs, as uid 1000. */
	assert_true(contains(r.stdout_buf, "-cloud-amd64 1000"));
	assert_true(contains(r.stdout_buf, "console=ttyS0"));
	aj_result_free(&r);
}

/* What a program sees of /sys, in a run and in a session call: it should see
 * nothing, as on every other tier (the guest kernel's sysfs names the
 * machine: its devices, DMI, CPUs, the cgroup tree). It tries to mount its
 * way back too. */
static const char sys_probe[] =
	"import os, ctypes\n"
	"print('sys', os.listdir('/sys'))\n"
	"for p in ['/sys/kernel/notes', '/sys/devices/system/cpu/online',\n"
	"          '/sys/class/dmi/id/sys_vendor', '/sys/fs/cgroup/cgroup.procs']:\n"
	"    try:\n"
	"        open(p, 'rb').read()\n"
	"        print('READ', p)\n"
	"    except OSError as e:\n"
	"        print('absent', p, e.errno)\n"
	"print('read-only', bool(os.statvfs('/sys').f_flag & os.ST_RDONLY))\n"
	"try:\n"
	"    open('/sys/x', 'w')\n"
	"    print('WROTE')\n"
	"except OSError as e:\n"
	"    print('refused', e.errno)\n"
	"mounts = open('/proc/self/mountinfo').read()\n"
	"print('sysfs mounted', ' - sysfs ' in mounts)\n"
	"print('cgroup mounted', 'cgroup' in mounts)\n"
	"print('in', open('/proc/self/cgroup').read().strip())\n"
	"links = []\n"
	"for d in os.listdir('/proc/self/fd'):\n"
	"    try:\n"
	"        links.append(os.readlink('/proc/self/fd/' + d))\n"
	"    except OSError:\n"
	"        pass\n"
	"print('other fds', [l for l in links if l != '/dev/null' and not l.startswith('pipe:')])\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"os.makedirs('/tmp/m', exist_ok=True)\n"
	"for fs in (b'sysfs', b'cgroup2'):\n"
	"    rc = libc.mount(fs, b'/tmp/m', fs, 0, None)\n"
	"    print('mount', fs.decode(), rc, ctypes.get_errno(), os.listdir('/tmp/m'))\n";

static void assert_sys_is_empty(const char *out)
{
	static const char *const wanted[] = {
		"sys []\n",
		"absent /sys/kernel/notes 2\n", /* ENOENT */
		"absent /sys/devices/system/cpu/online 2\n",
		"absent /sys/class/dmi/id/sys_vendor 2\n",
		"absent /sys/fs/cgroup/cgroup.procs 2\n",
		"read-only True\n",
		/* No hierarchy of the guest's is mounted where the program
		 * could look. */
		"sysfs mounted False\n",
		"cgroup mounted False\n",
		/* Yet the program is in the run's cgroup, whose limits hold
		 * (the hostile table's memory and fork cases). */
		"in 0::/run\n",
		/* Nor holds an fd of it: stdio and the session's pipes only. */
		"other fds []\n",
		/* EPERM: no capability, and the seccomp policy refuses mount. */
		"mount sysfs -1 1 []\n",
		"mount cgroup2 -1 1 []\n",
	};
	for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
		if (!contains(out, wanted[i]))
			fail_msg("no \"%s\" in what the program printed:\n%s", wanted[i], out);
	if (contains(out, "READ") || contains(out, "WROTE"))
		fail_msg("the program read or wrote in /sys:\n%s", out);
}

static void guest_sys_is_empty(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r, "%s", sys_probe);
	assert_status(&r, AJ_STATUS_OK);
	assert_sys_is_empty(r.stdout_buf);
	aj_result_free(&r);
}

/* The guest runs the image's own root, whole, as every other tier shows it:
 * what the program lists of /, /etc, /usr/bin and /usr/lib is what the image
 * holds on the host (before, the guest had a copy of the image's Python and
 * nothing else: no /bin/sh, no ls). Read-only, as the disk QEMU attaches. */
static void host_listing(const char *root, const char *dir, char *out, size_t n)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s%s", root, dir);
	struct dirent **names;
	int count = scandir(path, &names, NULL, alphasort);
	assert_true(count >= 0);
	size_t used = (size_t)snprintf(out, n, "%s:", dir);
	for (int i = 0; i < count; i++) {
		const char *name = names[i]->d_name;
		if (strcmp(name, ".") && strcmp(name, "..") && used < n)
			used += (size_t)snprintf(out + used, n - used, " %s", name);
		free(names[i]);
	}
	free(names);
	if (used < n)
		snprintf(out + used, n - used, "\n");
}

static void guest_runs_the_images_root(void **state)
{
	struct fixture *f = *state;
	static const char *const dirs[] = {"/", "/etc", "/usr/bin", "/usr/lib"};
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os, errno\n"
		 "for d in %s:\n"
		 "    names = [n for n in sorted(os.listdir(d)) if d != '/' or n != '.agentjail']\n"
		 "    print(d + ':', ' '.join(names))\n"
		 "print('read-only', bool(os.statvfs('/usr').f_flag & os.ST_RDONLY))\n"
		 "try:\n"
		 "    os.mkdir('/usr/x')\n"
		 "except OSError as e:\n"
		 "    print('mkdir /usr/x', errno.errorcode[e.errno])\n",
		 "['/', '/etc', '/usr/bin', '/usr/lib']");
	assert_status(&r, AJ_STATUS_OK);
	char root[PATH_MAX + 8], want[8192];
	snprintf(root, sizeof root, "%s/root", image_dir);
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		host_listing(root, dirs[i], want, sizeof want);
		if (!contains(r.stdout_buf, want))
			fail_msg("the guest's %s is not the image's:\nwant %s\ngot %s", dirs[i], want,
				 r.stdout_buf);
	}
	assert_true(contains(r.stdout_buf, "read-only True\n"));
	assert_true(contains(r.stdout_buf, "mkdir /usr/x EROFS\n"));
	aj_result_free(&r);
}

static void warm_pool_serves_fresh_vms(void **state)
{
	struct fixture *f = *state;
	f->cfg.vm_pool = 2;
	struct aj_sandbox *sb;
	struct aj_error err;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	/* The pool fills in the background (bounded wait). */
	for (int i = 0; i < 300 && qemus(&f->cfg, NULL) < 2; i++)
		sleep_ms(20);
	assert_int_equal(qemus(&f->cfg, NULL), 2);
	char seen[3][80];
	const char *code = "import os\nprint(os.urandom(16).hex())\n"
			   "open('/tmp/mark', 'w').write('x')\nprint(os.listdir('/tmp'))\n";
	for (int i = 0; i < 3; i++) {
		struct aj_result r;
		aj_run(sb, code, strlen(code), &r);
		assert_status(&r, AJ_STATUS_OK);
		/* A pooled VM has run nothing: no file of the one before. */
		assert_true(contains(r.stdout_buf, "['mark', 'work']"));
		snprintf(seen[i], sizeof seen[i], "%.32s", r.stdout_buf);
		aj_result_free(&r);
	}
	/* Copies of one snapshot, yet each draws its own random numbers. */
	assert_string_not_equal(seen[0], seen[1]);
	assert_string_not_equal(seen[1], seen[2]);
	assert_string_not_equal(seen[0], seen[2]);
	aj_close(sb);
	/* Closing the sandbox takes its waiting VMs with it. */
	assert_int_equal(qemus(&f->cfg, NULL), 0);
}

/* ---- sessions: one VM kept across calls ---- */

static void vm_session_call(struct aj_session *s, struct aj_result *r, const char *code)
{
	int rc = aj_session_run(s, code, strlen(code), r);
	if (rc)
		fail_msg("aj_session_run: %d: %s", rc, r->message ? r->message : "-");
}

static struct aj_session *vm_session_open(struct fixture *f)
{
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(&f->cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	return s;
}

/* State and files persist across calls, in one VM that close destroys. */
static void vm_session_keeps_state_and_files(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = vm_session_open(f);
	assert_int_equal(qemus(&f->cfg, NULL), 1);
	struct aj_result r;
	vm_session_call(s, &r, "import os\nx = 41\nopen('note.txt', 'w').write('kept')\n");
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	vm_session_call(s, &r, "x += 1\nprint(x, os.getuid(), open('note.txt').read())\nx");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "42 1000 kept\n42\n"));
	assert_null(r.message);
	aj_result_free(&r);

	struct aj_error err = {0};
	static const char data[] = "a,b\n1,2\n";
	assert_int_equal(aj_session_put(s, "in/data.csv", data, sizeof data - 1, &err), 0);
	vm_session_call(s, &r, "print(open('in/data.csv').read().split()[1])\n"
			    "open('out.bin', 'wb').write(bytes(range(256)))\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "1,2"));
	aj_result_free(&r);
	void *got = NULL;
	size_t len = 0;
	assert_int_equal(aj_session_get(s, "out.bin", &got, &len, &err), 0);
	assert_int_equal(len, 256);
	assert_int_equal(((unsigned char *)got)[255], 255);
	free(got);
	struct aj_file_info *e = NULL;
	size_t n = 0;
	assert_int_equal(aj_session_list(s, "", &e, &n, &err), 0);
	bool saw_in = false, saw_note = false;
	for (size_t i = 0; i < n; i++) {
		saw_in |= !strcmp(e[i].name, "in") && e[i].type == AJ_FILE_DIRECTORY;
		saw_note |= !strcmp(e[i].name, "note.txt") && e[i].size == 4;
	}
	aj_file_list_free(e, n);
	assert_true(saw_in && saw_note);
	assert_true(aj_session_get(s, "../etc/passwd", &got, &len, &err) < 0);

	aj_session_close(s);
	/* Nothing of the session remains: no QEMU, no run directory. */
	assert_int_equal(qemus(&f->cfg, NULL), 0);
	assert_int_equal(run_dirs_left(&f->cfg), 0);
}

/* The per-call limits, with the jail tiers' statuses; the session lives on. */
static void vm_session_timeout_and_flood(void **state)
{
	struct fixture *f = *state;
	/* The last call starts a fresh interpreter under TCG and must finish
	 * within the wall clock too: 15 s only catches a hang there (3 s was
	 * tight on a busy machine). */
	f->cfg.limits.wall_sec = 15;
	/* The wall clock is what this call meets: the session's CPU (the
	 * fixture's 5 s) would end the busy loop first on a quiet machine. */
	f->cfg.limits.cpu_sec = 60;
	f->cfg.limits.output_kb = 64;
	struct aj_session *s = vm_session_open(f);
	struct aj_result r;
	vm_session_call(s, &r, "import os\nif os.fork() == 0:\n    os.setsid()\n"
			    "    while True: pass\nwhile True: pass\n");
	assert_status(&r, AJ_STATUS_TIMEOUT);
	assert_true(contains(r.message, "wall-clock limit of 15 s"));
	aj_result_free(&r);
	vm_session_call(s, &r, "import sys\nwhile True: sys.stdout.write('x' * 65536)\n");
	assert_status(&r, AJ_STATUS_OUTPUT_LIMIT);
	assert_true(r.stdout_truncated);
	assert_int_equal(r.stdout_len, 64 * 1024);
	assert_true(contains(r.message, "64 KiB"));
	aj_result_free(&r);
	/* Nothing of the stopped calls runs on: only this interpreter. */
	vm_session_call(s, &r, "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.message, "restarted"));
	assert_string_equal(r.stdout_buf, "1\n");
	aj_result_free(&r);
	aj_session_close(s);
}

/* The session's memory cgroup: the OOM killer's end is status memory, and
 * the session goes on with a fresh interpreter. */
static void vm_session_memory_limit(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = vm_session_open(f);
	struct aj_result r;
	vm_session_call(s, &r, "b = bytearray(512 << 20)\nprint(len(b))\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_true(contains(r.message, "memory limit of 256 MiB"));
	aj_result_free(&r);
	vm_session_call(s, &r, "print('alive')\n");
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	aj_session_close(s);
}

/* The session interpreter sees the same empty /sys. */
static void vm_session_sys_is_empty(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = vm_session_open(f);
	struct aj_result r;
	vm_session_call(s, &r, sys_probe);
	/* Closed before the checks, so a failing one leaves no VM behind. */
	aj_session_close(s);
	assert_status(&r, AJ_STATUS_OK);
	assert_sys_is_empty(r.stdout_buf);
	aj_result_free(&r);
}

/* ---- egress: the proxy, reached through the VM's egress port ----
 * The cases every tier runs are egress_cases.h's (EGRESS_TABLE); these are
 * the microvm's own. */

/* Without rules the same VM (one snapshot serves both, its egress port
 * unused) has no way out and no proxy in its environment. */
static void no_rules_no_egress(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os, socket\n"
		 "print('proxy', os.environ.get('HTTP_PROXY'))\n"
		 "try:\n"
		 "    socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
		 "    print('connected')\n"
		 "except OSError as e:\n"
		 "    print('failed', type(e).__name__)\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "proxy None\n"));
	assert_true(contains(r.stdout_buf, "failed "));
	assert_null(r.egress_log);
	aj_result_free(&r);
}

/* The guest's forwarder is a thread of PID 1's, not a process: a session
 * call stopped by a flood (every process but the agent's is killed) leaves
 * the next call its way out. */
static void egress_session_keeps_its_port(void **state)
{
	struct fixture *f = *state;
	struct egress_case *e = &egress_case;
	f->cfg.limits.output_kb = 64;
	struct aj_session *s = vm_session_open(f);
	struct aj_result r;
	char code[300], want[120];
	for (int call = 0; call < 2; call++) {
		snprintf(code, sizeof code,
			 "import urllib.request\n"
			 "print(urllib.request.urlopen('http://127.0.0.1:%d/call%d-%s', timeout=20)"
			 ".read().decode().strip())\n",
			 e->port, call, f->token);
		vm_session_call(s, &r, code);
		snprintf(want, sizeof want, "egress-ok /call%d-%s", call, f->token);
		if (!contains(r.stdout_buf, want))
			fail_msg("call %d: no '%s' in: %s %s", call, want, r.stdout_buf, r.stderr_buf);
		aj_result_free(&r);
		if (call == 1)
			break;
		vm_session_call(s, &r, "import sys\nwhile True: sys.stdout.write('x' * 65536)\n");
		assert_status(&r, AJ_STATUS_OUTPUT_LIMIT);
		aj_result_free(&r);
	}
	aj_session_close(s);
	assert_int_equal(egress_server_connections(e->server), 2);
}

int main(void)
{
	if (getenv("AJ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AJ_TEST_FILTER"));
	if (use_test_image(image_dir, sizeof image_dir))
		return 1;
	fixture.tier = AJ_TIER_MICROVM;
	fixture.session_cycles = 100;
	fixture.count_leftovers = count_run_dirs;
	/* Charts need matplotlib: the test image with the datascience
	 * preset (make test builds it). */
	snprintf(chart_dir, sizeof chart_dir, "%s-ds", image_dir);
	fixture.chart_image = chart_dir;
	const struct CMUnitTest tests[] = {
		HOSTILE_TABLE,
		SESSION_TABLE,
		HOSTILE_SESSION_TABLE,
		HOSTILE_RESTORED_TABLE,
		HOSTILE_TEST(its_own_kernel),
		HOSTILE_TEST(guest_sys_is_empty),
		HOSTILE_TEST(guest_runs_the_images_root),
		HOSTILE_TEST(userland_tools_run),
		HOSTILE_TEST(vmm_is_jailed),
		HOSTILE_TEST(killed_vmm_is_a_sandbox_error),
		HOSTILE_TEST(no_run_directory_outlives_its_run),
		HOSTILE_TEST(warm_pool_serves_fresh_vms),
		HOSTILE_TEST(vm_session_keeps_state_and_files),
		HOSTILE_TEST(vm_session_timeout_and_flood),
		HOSTILE_TEST(vm_session_memory_limit),
		HOSTILE_TEST(vm_session_sys_is_empty),
		EGRESS_TABLE,
		STREAM_TABLE,
		HOSTILE_TEST(no_rules_no_egress),
		EGRESS_TEST(egress_session_keeps_its_port),
	};
	return cmocka_run_group_tests_name("microvm tier", tests, NULL, NULL);
}
