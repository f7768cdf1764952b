/* The docker tier: the shared hostile table through a real Docker Engine,
 * then what is particular to it: no container left after any run (counted
 * through the engine's API after every case), the hardened create body, the
 * attach stream and boot.py's report, and a daemon that is not there.
 *
 * Runs the image `make test` imports (agentjail image import test, from
 * the --from-host test image) as agentjail/test. */
#include <jansson.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "boot_cases.h"
#include "session_cases.h"
#include "stream_cases.h"
#include "userland_cases.h"
#include "src/boot/run.h"
#include "src/boot/spec.h"
#include "src/docker/api.h"
#include "src/docker/owner.h"
#include "src/docker/spec.h"
#include "src/docker/stream.h"

#define TEST_DOCKER_IMAGE "agentjail/test"

static char image_dir[PATH_MAX];

/* Whether a container's owner label is this test's: this process, a child
 * of it (a case that forks one to kill it mid-run), or a process gone (a
 * leak, whoever made it). Another suite's live process sharing the engine
 * is not: its containers are its own business, and counting them made two
 * suites side by side fail each other. */
static bool owner_is_ours(const char *owner)
{
	char id[64];
	unsigned long long ns, started;
	long pid;
	if (!owner || sscanf(owner, "%63[^:]:%llu:%ld:%llu", id, &ns, &pid, &started) != 4)
		return true; /* not an owner of ours to tell apart: count it */
	if (pid == (long)getpid() || docker_owner_is_gone(owner))
		return true;
	return parent_pid(pid) == (long)getpid();
}

/* Asks the engine itself, with a plain HTTP/1.0 request of the test's own
 * (not the tier's client), how many containers carry agentjail's label
 * and are this test's (owner_is_ours). */
static int count_containers(bool all)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", DOCKER_DEFAULT_SOCKET);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	char req[300];
	snprintf(req, sizeof req,
		 "GET /containers/json?all=%d&filters=%%7B%%22label%%22%%3A%%5B%%22" DOCKER_LABEL
		 "%%22%%5D%%7D HTTP/1.0\r\nHost: docker\r\n\r\n",
		 all);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	static char buf[1 << 20];
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	assert_true(contains(buf, " 200 "));
	const char *body = strstr(buf, "\r\n\r\n");
	assert_non_null(body);
	json_t *list = json_loads(body + 4, 0, NULL);
	assert_true(json_is_array(list));
	int count = 0;
	size_t i;
	json_t *c;
	json_array_foreach(list, i, c) {
		json_t *owner = json_object_get(json_object_get(c, "Labels"), DOCKER_OWNER_LABEL);
		if (owner_is_ours(json_string_value(owner)))
			count++;
	}
	json_decref(list);
	return count;
}

static int count_labelled_containers(void)
{
	return count_containers(true);
}

/* ---- the container is gone, whatever way the run ended ---- */

/* The OOM killer's SIGKILL to the program is status memory, from Docker's
 * OOMKilled flag, with boot.py (PID 1) still there to report. */
static void oom_is_memory_with_a_report(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	f->cfg.limits.memory_mb = 64;
	run_code(&f->cfg, &r, "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n");
	assert_status(&r, AJ_STATUS_MEMORY);
	assert_int_equal(r.signal, SIGKILL);
	assert_true(r.memory_kb > 32 * 1024);
	aj_result_free(&r);
}

/* The caller dies mid-run (SIGKILL: no cleanup of its own runs). boot.py's
 * backstop stops the container soon after the wall clock, and the next
 * aj_open of the docker tier removes what is left. */

static void caller_killed_mid_run_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.wall_sec = 0.5; /* backstop: 10.5 s after start */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct aj_result r;
		run_code(&f->cfg, &r, "import time\ntime.sleep(60)\n");
		_exit(0);
	}
	/* Kill it once the container runs. */
	int running = 0;
	for (int i = 0; i < 100 && !running; i++) {
		sleep_ms(100);
		running = count_containers(false);
	}
	assert_int_equal(running, 1);
	kill(pid, SIGKILL);
	int ws;
	waitpid(pid, &ws, 0);
	assert_int_equal(count_containers(true), 1);
	/* The backstop ends it though nobody is there to. */
	for (int i = 0; i < 200 && count_containers(false); i++)
		sleep_ms(100);
	assert_int_equal(count_containers(false), 0);
	/* And the next one to open the tier removes it. */
	struct aj_sandbox *sb;
	struct aj_error err;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	aj_close(sb);
	assert_int_equal(count_containers(true), 0);
}

static void owners(void **state)
{
	(void)state;
	char me[160];
	docker_owner_self(me, sizeof me);
	assert_false(docker_owner_is_gone(me));
	/* A process that has ended. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int ws;
	waitpid(pid, &ws, 0);
	char boot[64], dead[200];
	unsigned long long ns;
	assert_int_equal(sscanf(me, "%63[^:]:%llu", boot, &ns), 2);
	snprintf(dead, sizeof dead, "%s:%llu:%d:12345", boot, ns, (int)pid);
	assert_true(docker_owner_is_gone(dead));
	/* Our pid, another start time: a reused pid is not us. */
	snprintf(dead, sizeof dead, "%s:%llu:%d:1", boot, ns, (int)getpid());
	assert_true(docker_owner_is_gone(dead));
	/* Another pid namespace (an agentjail in a container sharing the
	 * engine), another boot, or garbage: not judged. */
	snprintf(dead, sizeof dead, "%s:%llu:%d:12345", boot, ns + 1, (int)pid);
	assert_false(docker_owner_is_gone(dead));
	assert_false(docker_owner_is_gone("another-boot:1:1:1"));
	assert_false(docker_owner_is_gone("nonsense"));
	assert_false(docker_owner_is_gone(NULL));
}

/* PID 1 (boot.py) is out of the program's reach: SIGINT (Python's
 * KeyboardInterrupt) and SIGALRM (the backstop) sent early are ignored, and
 * its memory cannot be opened (it is not dumpable), so the report it makes
 * stays its own. */
static void pid1_out_of_reach(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os, signal, time\n"
		 "for s in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM, signal.SIGKILL):\n"
		 "    try:\n        os.kill(1, s)\n    except OSError as e:\n        print(s, e)\n"
		 "time.sleep(0.3)\n"
		 "for p in ['/proc/1/mem', '/proc/1/environ']:\n"
		 "    try:\n        open(p, 'rb').read(1)\n        print('READ', p)\n"
		 "    except OSError as e:\n        print('refused', p, e.errno)\n"
		 "print('still here')\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "still here"));
	assert_false(contains(r.stdout_buf, "READ"));
	assert_true(contains(r.stdout_buf, "refused /proc/1/mem"));
	aj_result_free(&r);
}

/* ---- sessions: one container across calls ---- */

static struct aj_session *docker_open_session(struct fixture *f)
{
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	int rc = aj_session_open(&f->cfg, &s, &err);
	if (rc)
		print_error("aj_session_open: %s\n", err.message);
	assert_int_equal(rc, 0);
	return s;
}

static int srun(struct aj_session *s, struct aj_result *r, const char *code)
{
	return aj_session_run(s, code, strlen(code), r);
}

/* Globals, imports and files persist; one container serves every call and
 * is gone after close. */
static void docker_session_keeps_state_in_one_container(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = docker_open_session(f);
	assert_int_equal(count_labelled_containers(), 1);
	struct aj_result r;
	assert_int_equal(srun(s, &r, "import math\nx = 41\nopen('f.txt', 'w').write('kept')\n"
				     "print('one')\n"), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "one\n");
	assert_null(r.message);
	aj_result_free(&r);
	assert_int_equal(srun(s, &r, "import sys\nprint(x + 1, math.pi > 3, open('f.txt').read())\n"
				     "print('err', file=sys.stderr)\nsys.exit(0)\n"), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_string_equal(r.stdout_buf, "42 True kept\n");
	assert_string_equal(r.stderr_buf, "err\n");
	aj_result_free(&r);
	/* An exception is the cell's error, not the interpreter's end. */
	assert_int_equal(srun(s, &r, "1 / 0\n"), 0);
	assert_status(&r, AJ_STATUS_ERROR);
	assert_true(contains(r.stderr_buf, "ZeroDivisionError"));
	aj_result_free(&r);
	assert_int_equal(srun(s, &r, "print(x)\n"), 0);
	assert_string_equal(r.stdout_buf, "41\n");
	assert_null(r.message);
	aj_result_free(&r);
	assert_int_equal(count_labelled_containers(), 1);
	aj_session_close(s);
	assert_int_equal(count_labelled_containers(), 0);
}

/* The interpreter ends (a crash): the call says so, the next one gets a
 * fresh interpreter in the same container, files kept, and says that. */
static void docker_session_crash_then_fresh(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = docker_open_session(f);
	struct aj_result r;
	assert_int_equal(srun(s, &r, "x = 1\nopen('f.txt', 'w').write('kept')\n"), 0);
	aj_result_free(&r);
	assert_int_equal(srun(s, &r, "import os, subprocess, sys\n"
				     "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'])\n"
				     "print('bye', flush=True)\nos._exit(3)\n"), 0);
	assert_status(&r, AJ_STATUS_ERROR);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.stdout_buf, "bye\n");
	assert_true(contains(r.message, "interpreter ended"));
	aj_result_free(&r);
	/* What the old interpreter left running went with it. */
	assert_int_equal(srun(s, &r, "import os\n"
				     "procs = [p for p in os.listdir('/proc') if p.isdigit()]\n"
				     "print(globals().get('x'), open('f.txt').read(), len(procs))\n"), 0);
	assert_status(&r, AJ_STATUS_OK);
	/* boot.py and this interpreter. */
	assert_string_equal(r.stdout_buf, "None kept 2\n");
	assert_true(contains(r.message, "restarted"));
	aj_result_free(&r);
	/* A signal ends it too. */
	assert_int_equal(srun(s, &r, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"), 0);
	assert_status(&r, AJ_STATUS_KILLED);
	assert_int_equal(r.signal, SIGSEGV);
	aj_result_free(&r);
	assert_int_equal(srun(s, &r, "print('fine')\n"), 0);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	aj_session_close(s);
}

/* Files in and out of the workspace. */
static void docker_session_files(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = docker_open_session(f);
	struct aj_error err = {0};
	/* Larger than a frame: the request goes out in several. */
	size_t n = 300000;
	char *big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 7);
	assert_int_equal(aj_session_put(s, "data/in.bin", big, n, &err), 0);
	struct aj_result r;
	assert_int_equal(srun(s, &r, "d = open('data/in.bin', 'rb').read()\n"
				     "print(len(d))\n_ = open('out.txt', 'w').write('made inside')\n"), 0);
	assert_string_equal(r.stdout_buf, "300000\n");
	aj_result_free(&r);
	void *data = NULL;
	size_t len = 0;
	assert_int_equal(aj_session_get(s, "data/in.bin", &data, &len, &err), 0);
	assert_int_equal(len, n);
	assert_memory_equal(data, big, n);
	free(data);
	assert_int_equal(aj_session_get(s, "out.txt", &data, &len, &err), 0);
	assert_string_equal(data, "made inside");
	free(data);
	struct aj_file_info *e = NULL;
	size_t count = 0;
	assert_int_equal(aj_session_list(s, "", &e, &count, &err), 0);
	bool seen_data = false, seen_out = false;
	for (size_t i = 0; i < count; i++) {
		seen_data |= !strcmp(e[i].name, "data") && e[i].type == AJ_FILE_DIRECTORY;
		seen_out |= !strcmp(e[i].name, "out.txt") && e[i].size == strlen("made inside");
	}
	assert_true(seen_data && seen_out);
	aj_file_list_free(e, count);
	assert_int_equal(aj_session_get(s, "missing", &data, &len, &err), -ENOENT);
	assert_int_equal(aj_session_get(s, "../etc/passwd", &data, &len, &err), -EACCES);
	free(big);
	aj_session_close(s);
}

/* The memory limit holds for the session as a whole: the OOM killer's
 * SIGKILL to the interpreter is status memory; the session goes on. */
static void docker_session_oom_is_memory(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.memory_mb = 64;
	struct aj_session *s = docker_open_session(f);
	struct aj_result r;
	assert_int_equal(srun(s, &r, "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n"), 0);
	assert_status(&r, AJ_STATUS_MEMORY);
	aj_result_free(&r);
	assert_int_equal(srun(s, &r, "print('alive')\n"), 0);
	assert_status(&r, AJ_STATUS_OK);
	aj_result_free(&r);
	aj_session_close(s);
}

/* PID 1 stays out of the cells' reach in a session too: signals from
 * inside are ignored, and its memory and stdout (where the frames go)
 * cannot be opened. */
static void docker_session_pid1_out_of_reach(void **state)
{
	struct fixture *f = *state;
	struct aj_session *s = docker_open_session(f);
	struct aj_result r;
	assert_int_equal(srun(s, &r,
			      "import os, signal, time\n"
			      "for sig in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM, signal.SIGCHLD,\n"
			      "            signal.SIGXCPU, signal.SIGKILL):\n"
			      "    try:\n        os.kill(1, sig)\n    except OSError as e:\n        pass\n"
			      "time.sleep(0.3)\n"
			      "for p in ['/proc/1/mem', '/proc/1/fd/1', '/proc/1/fd/0']:\n"
			      "    try:\n        open(p, 'wb').write(b'x')\n        print('OPENED', p)\n"
			      "    except OSError as e:\n        print('refused', p)\n"
			      "print('still here')\n"), 0);
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "still here"));
	assert_false(contains(r.stdout_buf, "OPENED"));
	aj_result_free(&r);
	assert_int_equal(srun(s, &r, "print('next')\n"), 0);
	assert_string_equal(r.stdout_buf, "next\n");
	assert_null(r.message);
	aj_result_free(&r);
	aj_session_close(s);
}

/* The caller dies with a session open (SIGKILL: no close). Docker closes
 * the container's stdin, boot.py ends the container, and the next aj_open
 * removes it. */
static void docker_session_caller_killed_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct aj_session *s;
		struct aj_error err;
		if (aj_session_open(&f->cfg, &s, &err) == 0) {
			struct aj_result r;
			aj_session_run(s, "x = 1\n", 6, &r);
			if (write(ready[1], "r", 1) < 0)
				_exit(1);
			aj_session_run(s, "import time\ntime.sleep(60)\n", 27, &r);
		}
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(count_containers(false), 1);
	kill(pid, SIGKILL);
	int ws;
	waitpid(pid, &ws, 0);
	for (int i = 0; i < 100 && count_containers(false); i++)
		sleep_ms(100);
	assert_int_equal(count_containers(false), 0);
	struct aj_sandbox *sb;
	struct aj_error err;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	aj_close(sb);
	assert_int_equal(count_containers(true), 0);
}

/* ---- the engine is not there ---- */

static void daemon_not_running_is_a_sandbox_error(void **state)
{
	struct fixture *f = *state;
	/* A socket file nobody listens on, as a crashed dockerd leaves. */
	char path[64];
	snprintf(path, sizeof path, "/run/agentjail-test/dead-%.8s.sock", f->token);
	mkdir("/run/agentjail-test", 0755);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	close(fd);
	f->cfg.docker_socket = path;
	struct aj_sandbox *sb;
	struct aj_error err = {0};
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ECONNREFUSED);
	assert_true(contains(err.message, "is dockerd running?"));
	assert_true(contains(err.message, path));
	unlink(path);
	/* And through the command line: status sandbox_error, exit 125. */
	char cmd[400];
	snprintf(cmd, sizeof cmd,
		 "echo 'print(1)' | build/test/agentjail run --tier docker --docker-socket %s "
		 "--json - 2>&1",
		 path);
	FILE *p = popen(cmd, "r");
	char out[2048] = "";
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	int ws = pclose(p);
	assert_int_equal(WEXITSTATUS(ws), 125);
	assert_true(contains(out, "\"status\":\"sandbox_error\""));
	assert_true(contains(out, "cannot reach the engine"));
}

static void missing_image_names_the_import(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb0;
	struct aj_error err0 = {0};
	/* A name that would change the request is refused before any. */
	f->cfg.docker_image = "agentjail/x?all=1 HTTP/1.1\r\n";
	assert_int_equal(aj_open(&f->cfg, &sb0, &err0), -EINVAL);
	assert_true(contains(err0.message, "is not an image reference"));
	f->cfg.docker_image = "agentjail/no-such-image";
	struct aj_sandbox *sb;
	struct aj_error err = {0};
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ENOENT);
	assert_true(contains(err.message, "no image agentjail/no-such-image"));
	assert_true(contains(err.message, "agentjail image build --docker"));
}

static void docker_host_is_honoured(void **state)
{
	(void)state;
	char out[108];
	struct aj_error err = {0};
	setenv("DOCKER_HOST", "unix:///run/other.sock", 1);
	assert_int_equal(docker_socket_path(NULL, out, sizeof out, &err), 0);
	assert_string_equal(out, "/run/other.sock");
	/* A configured socket wins over the environment. */
	assert_int_equal(docker_socket_path("/run/mine.sock", out, sizeof out, &err), 0);
	assert_string_equal(out, "/run/mine.sock");
	setenv("DOCKER_HOST", "tcp://10.0.0.1:2375", 1);
	assert_int_equal(docker_socket_path(NULL, out, sizeof out, &err), -EPROTONOSUPPORT);
	assert_true(contains(err.message, "only unix://"));
	unsetenv("DOCKER_HOST");
	assert_int_equal(docker_socket_path(NULL, out, sizeof out, &err), 0);
	assert_string_equal(out, "/var/run/docker.sock");
}

/* ---- the create body: every flag of the seed article's ---- */

static void spec_is_hardened(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.memory_mb = 300;
	f->cfg.limits.pids = 50;
	f->cfg.limits.disk_mb = 80;
	json_t *s = docker_container_spec(&f->cfg, "agentjail/x", 2100000005, 2100000005, "b:1:2", NULL);
	assert_non_null(s);
	json_t *h = json_object_get(s, "HostConfig");
	assert_string_equal(json_string_value(json_object_get(h, "NetworkMode")), "none");
	assert_true(json_is_true(json_object_get(h, "ReadonlyRootfs")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(h, "CapDrop"), 0)),
			    "ALL");
	json_t *so = json_object_get(h, "SecurityOpt");
	assert_string_equal(json_string_value(json_array_get(so, 0)), "no-new-privileges");
	const char *sc = json_string_value(json_array_get(so, 1));
	assert_true(sc && !strncmp(sc, "seccomp={", 9));
	/* The profile parses and denies what the policy denies. */
	json_t *prof = json_loads(sc + 8, 0, NULL);
	assert_non_null(prof);
	assert_true(contains(sc, "\"memfd_create\""));
	json_decref(prof);
	assert_int_equal(json_integer_value(json_object_get(h, "Memory")), 300ll << 20);
	assert_int_equal(json_integer_value(json_object_get(h, "MemorySwap")), 300ll << 20);
	assert_int_equal(json_integer_value(json_object_get(h, "NanoCpus")), 1000000000);
	assert_int_equal(json_integer_value(json_object_get(h, "PidsLimit")), 50);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(h, "LogConfig"), "Type")), "none");
	assert_string_equal(json_string_value(json_object_get(s, "User")),
			    "2100000005:2100000005");
	assert_false(json_is_true(json_object_get(h, "Privileged")));
	/* The writable space adds up to the disk limit. */
	struct boot_disk d;
	boot_disk_split(80, &d);
	assert_int_equal(d.tmp_kb + d.var_tmp_kb + d.shm_kb, 80 * 1024);
	/* Every writable place a tmpfs with a size and an inode cap, /dev/shm
	 * one of them (Docker's own would take no inode cap). */
	json_t *tmpfs = json_object_get(h, "Tmpfs");
	static const char *const places[] = {"/tmp", "/var/tmp", "/dev/shm"};
	for (size_t i = 0; i < 3; i++) {
		const char *o = json_string_value(json_object_get(tmpfs, places[i]));
		assert_non_null(o);
		assert_true(contains(o, "size="));
		assert_true(contains(o, "nr_inodes="));
	}
	char want[64];
	snprintf(want, sizeof want, "size=%lluk,nr_inodes=%llu,", (unsigned long long)d.shm_kb,
		 (unsigned long long)(d.shm_kb / 4 + 64));
	assert_true(contains(json_string_value(json_object_get(tmpfs, "/dev/shm")), want));
	assert_null(json_object_get(h, "ShmSize"));
	assert_string_equal(json_string_value(json_object_get(h, "IpcMode")), "none");
	json_decref(s);
}

/* 100,000 empty files (no bytes for size= to count) are stopped by the
 * tmpfs inode cap, in each writable place; a few thousand still fit. */
static void many_empty_files_are_stopped(void **state)
{
	struct fixture *f = *state;
	f->cfg.limits.wall_sec = 60;
	f->cfg.limits.cpu_sec = 30;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import errno, os\n"
		 "for place in ('/tmp', '/var/tmp', '/dev/shm'):\n"
		 "    d = os.path.join(place, 'many')\n"
		 "    os.mkdir(d)\n"
		 "    made = 0\n"
		 "    try:\n"
		 "        for i in range(100000):\n"
		 "            open(os.path.join(d, str(i)), 'w').close()\n"
		 "            made += 1\n"
		 "    except OSError as e:\n"
		 "        print(place, 'stopped', errno.errorcode[e.errno], made > 2000)\n"
		 "    else:\n"
		 "        print(place, 'MADE', made)\n");
	assert_status(&r, AJ_STATUS_OK);
	assert_true(contains(r.stdout_buf, "/tmp stopped ENOSPC True\n"));
	assert_true(contains(r.stdout_buf, "/var/tmp stopped ENOSPC True\n"));
	assert_true(contains(r.stdout_buf, "/dev/shm stopped ENOSPC True\n"));
	assert_false(contains(r.stdout_buf, "MADE"));
	aj_result_free(&r);
}

/* ---- the attach stream and the report, byte by byte ---- */

static void demux_in_any_split(void **state)
{
	(void)state;
	/* stdout "hello", stderr "oops\n", stdin echo "x" (skipped). */
	const unsigned char stream[] = {1, 0, 0, 0, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o',
					2, 0, 0, 0, 0, 0, 0, 5, 'o', 'o', 'p', 's', '\n',
					0, 0, 0, 0, 0, 0, 0, 1, 'x'};
	for (size_t split = 1; split <= sizeof stream; split++) {
		struct docker_demux d = {0};
		struct capture out, err;
		capture_init(&out, 100);
		capture_init(&err, 100);
		for (size_t i = 0; i < sizeof stream; i += split) {
			size_t n = sizeof stream - i < split ? sizeof stream - i : split;
			assert_false(docker_demux_feed(&d, (const char *)stream + i, n, &out, &err));
		}
		assert_int_equal(out.len, 5);
		assert_memory_equal(out.buf, "hello", 5);
		assert_int_equal(err.len, 5);
		assert_memory_equal(err.buf, "oops\n", 5);
		capture_free(&out);
		capture_free(&err);
	}
	/* Past a cap: reported. */
	struct docker_demux d = {0};
	struct capture out, err;
	capture_init(&out, 3);
	capture_init(&err, 3);
	assert_true(docker_demux_feed(&d, (const char *)stream, 13, &out, &err));
	assert_true(out.truncated);
	capture_free(&out);
	capture_free(&err);
}

static void take(struct capture *c, const char *bytes, size_t n)
{
	capture_init(c, 1000);
	capture_append(c, bytes, n);
}

/* What a streaming run's tap got of stderr (stdout passes straight on). */
struct boot_tap {
	char got[1024];
	size_t len;
};

static void boot_tap_take(void *arg, int stream, const char *p, size_t n)
{
	struct boot_tap *t = arg;
	assert_int_equal(stream, 1);
	assert_true(t->len + n <= sizeof t->got);
	memcpy(t->got + t->len, p, n);
	t->len += n;
}

static bool never_paused(void *arg)
{
	(void)arg;
	return false;
}

/* Streams bytes (n of them, NULs kept) as stderr pieces of `piece`
 * bytes through boot_stream's hooks, cap bytes the program's cap;
 * boot_finish_run, then boot_stream_finish. Returns what the tap had
 * before the finish in *before. */
static void boot_stream_case(const char *bytes, size_t n, size_t piece, size_t cap,
			     struct boot_tap *t, size_t *before)
{
	memset(t, 0, sizeof *t);
	struct capture err;
	capture_init(&err, cap + BOOT_REPORT_MAX);
	struct supervisor_stream inner = {.out_tap = boot_tap_take, .out_paused = never_paused,
					  .out_room_fd = -1, .tap_arg = t};
	struct boot_stream bs;
	struct supervisor_stream hooks = boot_stream_hooks(&bs, inner, &err, cap);
	for (size_t i = 0; i < n; i += piece) {
		size_t k = n - i < piece ? n - i : piece;
		size_t room = err.limit - err.len;
		capture_append(&err, bytes + i, k);
		if (room)
			hooks.out_tap(hooks.tap_arg, 1, bytes + i, k < room ? k : room);
	}
	*before = t->len;
	struct outcome o = {0};
	boot_finish_run(&err, "abc", 1, cap, &o);
	boot_stream_finish(&bs);
	assert_int_equal(t->len, err.len);
	assert_memory_equal(t->got, err.buf, err.len);
	capture_free(&err);
}

/* A streaming boot run's stderr: the program's bytes go on as they come,
 * boot's report never (held while it may be one, dropped once it was),
 * a NUL of the program's own goes on once it cannot be the report, and
 * nothing past the program's cap. */
static void boot_stream_holds_the_report(void **state)
{
	(void)state;
	struct boot_tap t;
	size_t before;
	const char run[] = "traceback\n\0agentjail-exit abc 256 1500 7000 0\n";
	boot_stream_case(run, sizeof run - 1, 3, 1000, &t, &before);
	assert_int_equal(before, strlen("traceback\n"));
	assert_int_equal(t.len, strlen("traceback\n"));
	/* The program's own NUL, then more than a report's worth after it. */
	char own[300];
	memset(own, 'y', sizeof own);
	own[5] = 0;
	boot_stream_case(own, sizeof own, 7, 1000, &t, &before);
	assert_true(before >= 6);
	assert_int_equal(t.len, sizeof own);
	/* Past the cap: the cap's worth, and the report still taken off. */
	char big[200];
	memset(big, 'z', sizeof big);
	memcpy(big + 200 - sizeof run + 1, run, sizeof run - 1);
	boot_stream_case(big, sizeof big, 16, 50, &t, &before);
	assert_int_equal(t.len, 50);
	assert_true(before <= 50);
}

static void report_only_at_the_end_with_the_nonce(void **state)
{
	(void)state;
	struct sandbox_report r;
	struct capture c;
	const char good[] = "traceback\n\0agentjail-exit abc 256 1500 7000 0\n";
	take(&c, good, sizeof good - 1);
	assert_true(boot_take_report(&c, "abc", &r));
	assert_int_equal(r.wstatus, 256);
	assert_int_equal(r.cpu_us, 1500);
	assert_int_equal(r.maxrss_kb, 7000);
	assert_int_equal(c.len, strlen("traceback\n"));
	capture_free(&c);
	/* Another nonce: the program's forgery. */
	take(&c, good, sizeof good - 1);
	assert_false(boot_take_report(&c, "abd", &r));
	assert_int_equal(c.len, sizeof good - 1);
	capture_free(&c);
	/* Followed by more bytes: not the report. */
	const char early[] = "\0agentjail-exit abc 0 1 1 0\nmore\n";
	take(&c, early, sizeof early - 1);
	assert_false(boot_take_report(&c, "abc", &r));
	capture_free(&c);
	/* A NUL near the end of a full capture: no reading past it. */
	struct capture full;
	capture_init(&full, 6);
	capture_append(&full, "xxxx\0\n", 6);
	assert_false(boot_take_report(&full, "abc", &r));
	capture_free(&full);
	/* Malformed figures. */
	const char bad[] = "\0agentjail-exit abc 0 x 1 0\n";
	take(&c, bad, sizeof bad - 1);
	assert_false(boot_take_report(&c, "abc", &r));
	capture_free(&c);
}

int main(void)
{
	if (getenv("AJ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AJ_TEST_FILTER"));
	if (use_test_image(image_dir, sizeof image_dir))
		return 1;
	fixture.tier = AJ_TIER_DOCKER;
	fixture.docker_image = TEST_DOCKER_IMAGE;
	/* Docker's /dev: its own tty (unopenable without a terminal) and
	 * mqueue (masked, empty) beside the usual nodes; no ptys (see
	 * spec.c). */
	fixture.dev_listing = "['fd', 'full', 'mqueue', 'null', 'ptmx', 'pts', 'random', 'shm', "
			      "'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero']";
	fixture.no_ptys = true;
	fixture.count_leftovers = count_labelled_containers;
	fixture.session_cycles = 1000;
	/* Charts need matplotlib: the test image with the datascience
	 * preset, imported by make test. */
	fixture.chart_docker_image = TEST_DOCKER_IMAGE "-ds";
	const struct CMUnitTest tests[] = {
		HOSTILE_TABLE,
		STREAM_TABLE,
		HOSTILE_TEST(userland_tools_run),
		HOSTILE_TEST(ro_bind_shows_host_paths_read_only),
		SESSION_TABLE,
		HOSTILE_SESSION_TABLE,
		HOSTILE_RESTORED_TABLE,
		HOSTILE_TEST(gone_after_timeout_and_flood),
		HOSTILE_TEST(oom_is_memory_with_a_report),
		HOSTILE_TEST(forged_report_is_output),
		HOSTILE_TEST(caller_killed_mid_run_leaves_nothing),
		HOSTILE_TEST(pid1_out_of_reach),
		HOSTILE_TEST(daemon_not_running_is_a_sandbox_error),
		HOSTILE_TEST(missing_image_names_the_import),
		HOSTILE_TEST(spec_is_hardened),
		HOSTILE_TEST(many_empty_files_are_stopped),
		BOOT_EGRESS_TABLE,
		HOSTILE_TEST(docker_session_keeps_state_in_one_container),
		HOSTILE_TEST(docker_session_crash_then_fresh),
		HOSTILE_TEST(docker_session_files),
		HOSTILE_TEST(docker_session_oom_is_memory),
		HOSTILE_TEST(docker_session_pid1_out_of_reach),
		HOSTILE_TEST(docker_session_caller_killed_leaves_nothing),
		cmocka_unit_test(docker_host_is_honoured),
		cmocka_unit_test(owners),
		cmocka_unit_test(demux_in_any_split),
		cmocka_unit_test(report_only_at_the_end_with_the_nonce),
		cmocka_unit_test(boot_stream_holds_the_report),
	};
	return cmocka_run_group_tests_name("docker tier", tests, NULL, NULL);
}
