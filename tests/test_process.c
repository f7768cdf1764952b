/* The process tier: the shared hostile table, then what is particular to it
 * (its identity inside, failing closed, dying with its supervisor). */
#include <grp.h>
#include <sched.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/prctl.h>

#include "egress_cases.h"
#include "end_programs.h"
#include "session_cases.h"
#include "stream_cases.h"
#include "userland_cases.h"

/* The view's top level and /etc, as host_root.c names them: a walk from
 * inside must find nothing outside these (and /var holds only the run's
 * own tmp). */
#define VIEW_ALLOWED                                                                        \
	"top = {'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'usr', 'etc', 'tmp', "     \
	"'dev', 'proc', 'var'}\n"                                                            \
	"etc = {'passwd', 'group', 'hosts', 'nsswitch.conf', 'ld.so.cache', 'localtime', "   \
	"'ssl', 'alternatives', 'matplotlibrc'}\n"                                                           \
	"def outside(p):\n"                                                                  \
	"    parts = p.split('/')\n"                                                         \
	"    return (parts[1] not in top or (parts[1] == 'etc' and parts[2:3] and\n"         \
	"            parts[2] not in etc) or (parts[1] == 'var' and parts[2:3] not in ([], ['tmp'])))\n"

static void identity_inside(void **state)
{
	struct fixture *f = *state;
	struct aj_result r;
	setenv("AJ_TEST_LEAK", f->token, 1);
	run_code(&f->cfg, &r,
		 "import os, socket\n"
		 "st = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
		 "print('uid', os.getuid(), os.geteuid(), 'gid', os.getgid())\n"
		 "print('groups', os.getgroups())\n"
		 "print('capeff', st['CapEff'].strip(), 'capprm', st['CapPrm'].strip(),\n"
		 "      'capbnd', st['CapBnd'].strip(), 'capinh', st['CapInh'].strip(),\n"
		 "      'capamb', st['CapAmb'].strip())\n"
		 "print('nnp', st['NoNewPrivs'].strip())\n"
		 "print('host', socket.gethostname())\n"
		 "print('cwd', os.getcwd(), 'home', os.environ.get('HOME'))\n"
		 "print('env', sorted(os.environ))\n"
		 "print('ifaces', socket.if_nameindex())\n"
		 "print('stdin', repr(os.read(0, 10)))\n"
		 "try:\n"
		 "    open('/dev/tty')\n"
		 "    print('TTY OPEN')\n"
		 "except OSError as e:\n"
		 "    print('no tty')\n");
	unsetenv("AJ_TEST_LEAK");
	assert_status(&r, AJ_STATUS_OK);
	const char *o = r.stdout_buf;
	unsigned uid = 0, euid = 0, gid = 0;
	assert_int_equal(sscanf(o, "uid %u %u gid %u", &uid, &euid, &gid), 3);
	assert_int_not_equal(uid, 0);
	assert_int_equal(uid, euid);
	if (geteuid() == 0) {
		/* A uid of the run's own, from the slot range. */
		assert_true(uid >= f->cfg.uid_base && uid < f->cfg.uid_base + f->cfg.slots);
		assert_int_equal(gid, uid);
		assert_true(contains(o, "groups []"));
	}
	assert_true(contains(o, "capeff 0000000000000000 capprm 0000000000000000 "
				"capbnd 0000000000000000 capinh 0000000000000000 "
				"capamb 0000000000000000"));
	assert_true(contains(o, "nnp 1"));
	assert_true(contains(o, "host sandbox"));
	assert_true(contains(o, "cwd /tmp/work home /tmp/work"));
	assert_true(contains(o, "env ['CURL_CA_BUNDLE', 'HOME', 'LANG', 'MALLOC_ARENA_MAX', 'PATH', 'PIP_CERT', "
				"'PIP_TARGET', 'REQUESTS_CA_BUNDLE', 'SSL_CERT_FILE', 'TMPDIR']"));
	assert_true(contains(o, "ifaces [(1, 'lo')]"));
	assert_true(contains(o, "stdin b''"));
	assert_true(contains(o, "no tty"));
	assert_false(contains(o, f->token));
	aj_result_free(&r);
}

static void supervisor_death_kills_sandbox(void **state)
{
	struct fixture *f = *state;
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	/* A supervisor of its own, killed mid-run: its sandbox must go too. */
	pid_t sup = fork();
	assert_true(sup >= 0);
	if (sup == 0) {
		close(ready[0]);
		struct aj_result r;
		const char *code = "import time\ntime.sleep(30)\n";
		f->cfg.limits.wall_sec = 60;
		struct aj_sandbox *sb;
		struct aj_error err;
		if (aj_open(&f->cfg, &sb, &err))
			_exit(2);
		(void)!write(ready[1], "s", 1);
		aj_run(sb, code, strlen(code), &r);
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	/* Wait (bounded) until the sandboxed program exists, then kill the
	 * supervisor outright: no chance to clean up. */
	int seen = 0;
	for (int i = 0; i < 100 && !seen; i++) {
		seen = count_processes_with_uid(f->cfg.uid_base, f->cfg.uid_base + f->cfg.slots);
		if (!seen)
			sleep_ms(20);
	}
	if (geteuid() == 0)
		assert_true(seen > 0);
	kill(sup, SIGKILL);
	int ws;
	waitpid(sup, &ws, 0);
	/* case_teardown now checks that no process of the run is left. */
}

/* This child's kernel refuses network namespaces, as a locked-down host
 * might. */
static int refuse_netns(void *ctx)
{
	(void)ctx;
	scmp_filter_ctx sc = seccomp_init(SCMP_ACT_ALLOW);
	if (!sc ||
	    seccomp_rule_add(sc, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWNET, CLONE_NEWNET)) ||
	    seccomp_rule_add(sc, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWNET, CLONE_NEWNET)))
		return -1;
	return seccomp_load(sc);
}

static void netns_refused_fails_closed(void **state)
{
	struct fixture *f = *state;
	char buf[800];
	/* The run must be refused, never run with the network open. */
	run_in_child(refuse_netns, NULL, &f->cfg, "print('ran with the network open')\n", buf,
		     sizeof buf);
	assert_true(contains(buf, "sandbox_error|network namespace: unshare: EPERM|"));
	assert_false(contains(buf, "ran with"));
}

/* A caller on a terminal, as someone running agentjail by hand is. */
static int take_controlling_terminal(void *ctx)
{
	(void)ctx;
	if (setsid() < 0)
		return -1;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m))
		return -1;
	/* A session leader without a terminal acquires the first it opens. */
	int s = open(ptsname(m), O_RDWR);
	if (s < 0)
		return -1;
	/* Prove the premise: this process really has one now. */
	int t = open("/dev/tty", O_RDWR);
	if (t < 0)
		return -1;
	close(t);
	return 0;
}

static void caller_terminal_out_of_reach(void **state)
{
	struct fixture *f = *state;
	char buf[800];
	/* With the caller's terminal a program could type into the caller's
	 * shell (TIOCSTI) or stop its job. */
	run_in_child(take_controlling_terminal, NULL, &f->cfg,
		     "import os\n"
		     "stat = open('/proc/self/stat').read()\n"
		     "print('tty_nr', stat[stat.rindex(')') + 2:].split()[4])\n"
		     "try:\n"
		     "    os.open('/dev/tty', os.O_RDWR)\n"
		     "    print('TTY OPEN')\n"
		     "except OSError as e:\n"
		     "    print('no tty')\n",
		     buf, sizeof buf);
	/* No controlling terminal at all (tty_nr 0), and no way to open one. */
	if (!contains(buf, "ok||tty_nr 0\nno tty\n"))
		fail_msg("%s", buf);
}

static void bad_code_is_refused(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb;
	struct aj_error err;
	struct aj_result r;
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	assert_int_equal(aj_run(sb, "print(1)\0print(2)", 17, &r), -EINVAL);
	assert_status(&r, AJ_STATUS_SANDBOX_ERROR);
	assert_true(contains(r.message, "NUL byte at offset 8"));
	assert_non_null(r.stdout_buf);
	aj_result_free(&r);
	assert_int_equal(aj_run(sb, NULL, 0, &r), -EINVAL);
	aj_result_free(&r);
	aj_close(sb);
}

static void missing_python_is_refused(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb;
	struct aj_error err;
	f->cfg.python = "/nonexistent/python3";
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -ENOENT);
	assert_true(contains(err.message, "/nonexistent/python3: ENOENT"));
	f->cfg.python = "python3";
	assert_int_equal(aj_open(&f->cfg, &sb, &err), -EINVAL);
	assert_true(contains(err.message, "absolute"));
}

struct unprivileged {
	const char *home;
	const char *token;
};

/* A normal user with no privilege at all, whose home and environment hold
 * secrets. */
static int become_unprivileged(void *ctx)
{
	const struct unprivileged *u = ctx;
	const uid_t nobody = 65534;
	setenv("HOME", u->home, 1);
	setenv("AJ_TEST_API_KEY", u->token, 1);
	if (setgroups(0, NULL) || setresgid(nobody, nobody, nobody) ||
	    setresuid(nobody, nobody, nobody))
		return -1;
	return 0;
}

/* The machine fact an unprivileged run depends on: may uid 65534 make a user
 * namespace, and in it the run's others? Probed with an unshare of the
 * test's own, never judged from the tier's answer. */
static bool nobody_may_make_namespaces(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const uid_t nobody = 65534;
		if (setgroups(0, NULL) || setresgid(nobody, nobody, nobody) ||
		    setresuid(nobody, nobody, nobody))
			_exit(2);
		if (unshare(CLONE_NEWUSER) < 0 ||
		    unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
			_exit(1);
		_exit(0);
	}
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) != 2); /* the probe's own setup */
	return WEXITSTATUS(ws) == 0;
}

/* Run as uid 65534 needs root to become it, and a kernel that lets it make
 * user namespaces: both probed, nothing else skips. */
static void skip_unless_nobody_may_run(void)
{
	if (geteuid() != 0) {
		print_message("skipped: becoming uid 65534 needs root\n");
		skip();
	}
	if (!nobody_may_make_namespaces()) {
		print_message("skipped: this kernel refuses uid 65534 a user namespace\n");
		skip();
	}
}

static void unprivileged_caller_uses_userns(void **state)
{
	struct fixture *f = *state;
	skip_unless_nobody_may_run();
	const uid_t nobody = 65534;
	/* The caller's home, holding a 0600 secret of the caller's: with no
	 * other uid to run as, the sandbox must hide it. */
	char home[64] = "/home/agentjail-test-XXXXXX", secret[96];
	bool made_home = mkdir("/home", 0755) == 0;
	assert_non_null(mkdtemp(home));
	snprintf(secret, sizeof secret, "%s/id_rsa", home);
	int sfd = open(secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(sfd >= 0);
	assert_int_equal(write(sfd, f->token, strlen(f->token)), (ssize_t)strlen(f->token));
	close(sfd);
	assert_int_equal(chown(secret, nobody, nobody), 0);
	assert_int_equal(chown(home, nobody, nobody), 0);

	char code[2000], buf[800];
	snprintf(code, sizeof code,
		 "import os, socket, pwd\n" VIEW_ALLOWED
		 "print(os.getuid(), socket.if_nameindex())\n"
		 "for p in ['%s', '/proc/1/environ']:\n"
		 "    try:\n"
		 "        print(p, open(p).read())\n"
		 "    except OSError as e:\n"
		 "        print(p, type(e).__name__)\n"
		 "print('outside', [p for p in os.listdir('/') if outside('/' + p)],\n"
		 "      [p for p in os.listdir('/etc') if outside('/etc/' + p)])\n"
		 "print('oom', open('/proc/self/oom_score_adj').read().strip())\n"
		 "print('user', pwd.getpwuid(os.getuid()).pw_name)\n"
		 "try:\n"
		 "    open('/etc/passwd', 'a').write('x:x:0:0::/:/bin/sh\\n')\n"
		 "except OSError as e:\n"
		 "    print('passwd', e.strerror)\n",
		 secret);
	struct unprivileged u = {.home = home, .token = f->token};
	run_in_child(become_unprivileged, &u, &f->cfg, code, buf, sizeof buf);
	unlink(secret);
	rmdir(home);
	if (made_home)
		rmdir("/home");
	if (!contains(buf, "ok||65534 [(1, 'lo')]"))
		fail_msg("%s", buf);
	assert_true(contains(buf, "id_rsa FileNotFoundError"));
	/* The same allow-list as root's: nothing of the host's but it. */
	assert_true(contains(buf, "\noutside [] []\n"));
	/* init's environment (the caller's, API keys and all) is not readable
	 * even by a program of the same uid: init is not dumpable. */
	assert_true(contains(buf, "/proc/1/environ PermissionError"));
	/* The OOM killer's first pick is the program, in this mode too. */
	assert_true(contains(buf, "oom 1000\n"));
	/* Its own passwd, which the program's uid owns here, read-only all the
	 * same. */
	assert_true(contains(buf, "user nobody\npasswd Read-only file system\n"));
	assert_false(contains(buf, f->token));
}

/* The rest of the unprivileged path: the tier's check, a session that keeps
 * its state between calls, and warm mode refused naming why. */
static void unprivileged_check_session_and_warm(void **state)
{
	struct fixture *f = *state;
	skip_unless_nobody_may_run();
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char line[900];
		struct aj_error err = {0}, werr = {0};
		struct aj_session *s = NULL;
		struct aj_result a = {0}, b = {0};
		struct aj_sandbox *sb = NULL;
		struct unprivileged u = {.home = "/nonexistent", .token = f->token};
		if (become_unprivileged(&u)) {
			snprintf(line, sizeof line, "prepare failed");
		} else if (aj_check(AJ_TIER_PROCESS, &f->cfg, &err)) {
			snprintf(line, sizeof line, "check failed: %s", err.message);
		} else if (aj_session_open(&f->cfg, &s, &err)) {
			snprintf(line, sizeof line, "session failed: %s", err.message);
		} else {
			aj_session_run(s, "x = 41\n", 7, &a);
			aj_session_run(s, "import os\nprint(x + 1, os.getuid())\n", 36, &b);
			struct aj_config w = f->cfg;
			w.warm = true;
			int wrc = aj_open(&w, &sb, &werr);
			snprintf(line, sizeof line, "%s %s|%s|warm %s %s", aj_status_name(a.status),
				 aj_status_name(b.status), b.stdout_buf,
				 wrc == -EPERM ? "EPERM" : "not EPERM", werr.message);
			if (sb)
				aj_close(sb);
			aj_result_free(&a);
			aj_result_free(&b);
			aj_session_close(s);
		}
		(void)!write(fds[1], line, strlen(line));
		_exit(0);
	}
	close(fds[1]);
	char buf[1000] = {0};
	assert_true(read(fds[0], buf, sizeof buf - 1) > 0);
	close(fds[0]);
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	if (!contains(buf, "ok ok|42 65534\n|warm EPERM warm: needs root, for the zygote to give "
			   "each run its own namespaces and uid (running as uid 65534)"))
		fail_msg("%s", buf);
}

/* The names in a host file of name:...: lines, but those the run's own
 * files share by design, as a Python list literal. */
static void host_names(const char *path, char *out, size_t n)
{
	FILE *fh = fopen(path, "re");
	snprintf(out, n, "[");
	char line[512];
	while (fh && fgets(line, sizeof line, fh)) {
		char *colon = strchr(line, ':');
		if (!colon || colon == line)
			continue;
		*colon = '\0';
		if (!strcmp(line, "root") || !strcmp(line, "nobody") || !strcmp(line, "nogroup") ||
		    !strcmp(line, "sandbox"))
			continue;
		size_t used = strlen(out);
		snprintf(out + used, n - used, "'%s',", line);
	}
	if (fh)
		fclose(fh);
	size_t used = strlen(out);
	snprintf(out + used, n - used, "]");
}

/* The program's view of who is who is the run's own, in an image's words:
 * root, nobody and its own uid as "sandbox". Not one of the host's names
 * (its login users, its services) is in the files or resolves, and the
 * files cannot be rewritten. Through a one-shot run and a session. */
static void users_are_the_runs_own(void **state)
{
	struct fixture *f = *state;
	static char users[8192], groups[8192], code[20000];
	host_names("/etc/passwd", users, sizeof users);
	host_names("/etc/group", groups, sizeof groups);
	/* The premise: the host has names of its own to leak. */
	assert_true(strlen(users) > 3);
	snprintf(code, sizeof code,
		 "import errno, os, pwd, grp\n"
		 "uid, gid = os.getuid(), os.getgid()\n"
		 "print('ids', uid, gid)\n"
		 "print(open('/etc/passwd').read() + '--\\n' + open('/etc/group').read() + '--')\n"
		 "print('me', pwd.getpwuid(uid).pw_name, grp.getgrgid(gid).gr_name,\n"
		 "      pwd.getpwuid(uid).pw_dir)\n"
		 "files = ''.join(open(p).read() for p in ['/etc/passwd', '/etc/group', '/etc/passwd-',\n"
		 "                '/etc/group-', '/etc/subuid', '/etc/subgid'] if os.path.exists(p))\n"
		 "for kind, names, look in [('user', %s, pwd.getpwnam), ('group', %s, grp.getgrnam)]:\n"
		 "    for n in names:\n"
		 "        if n + ':' in files:\n"
		 "            print('LEAK in a file', kind, n)\n"
		 "        try:\n"
		 "            look(n)\n"
		 "            print('LEAK resolves', kind, n)\n"
		 "        except KeyError:\n"
		 "            pass\n"
		 "for p in ['/etc/passwd', '/etc/group']:\n"
		 "    try:\n"
		 "        open(p, 'a').write('x:x:0:0::/:/bin/sh\\n')\n"
		 "        print('WROTE', p)\n"
		 "    except OSError as e:\n"
		 "        print('refused', p, e.errno in (errno.EACCES, errno.EROFS))\n",
		 users, groups);
	for (int via_session = 0; via_session < 2; via_session++) {
		struct aj_result r;
		harness_via_session = via_session;
		run_code(&f->cfg, &r, "%s", code);
		harness_via_session = false;
		assert_status(&r, AJ_STATUS_OK);
		unsigned uid = 0, gid = 0;
		assert_int_equal(sscanf(r.stdout_buf, "ids %u %u", &uid, &gid), 2);
		char want[1024];
		snprintf(want, sizeof want,
			 "ids %u %u\n"
			 "root:x:0:0:root:/root:/bin/sh\n"
			 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
			 "sandbox:x:%u:%u:sandbox:/tmp/work:/bin/sh\n"
			 "--\n"
			 "root:x:0:\n"
			 "nogroup:x:65534:\n"
			 "sandbox:x:%u:\n"
			 "--\n"
			 "me sandbox sandbox /tmp/work\n"
			 "refused /etc/passwd True\n"
			 "refused /etc/group True\n",
			 uid, gid, uid, gid, gid);
		assert_string_equal(r.stdout_buf, want);
		aj_result_free(&r);
	}
}

/* The view is an allow-list: a walk of / from inside (bounded, errors
 * counted, not fatal) finds only the system directories, the few /etc files
 * and the run's own places. World-readable files the host holds elsewhere
 * (in /home, /root, /var/mail, /srv, /mnt, /media, /opt, the directory
 * agentjail was started from and its parent) are not there, and neither is
 * /sys. */
static void view_is_an_allow_list(void **state)
{
	struct fixture *f = *state;
	static const char *const places[] = {"/home", "/root", "/var/mail", "/srv", "/mnt",
					     "/media", "/opt"};
	char made_dir[8][160], file[8][200], cwd[PATH_MAX], start[220];
	bool made[8] = {false};
	assert_non_null(getcwd(cwd, sizeof cwd));
	for (size_t i = 0; i < 7; i++) {
		made[i] = mkdir(places[i], 0755) == 0;
		snprintf(made_dir[i], sizeof made_dir[i], "%s/agentjail-test-%s", places[i], f->token);
		assert_int_equal(mkdir(made_dir[i], 0755), 0);
		snprintf(file[i], sizeof file[i], "%s/readable", made_dir[i]);
		FILE *fh = fopen(file[i], "we");
		assert_non_null(fh);
		fprintf(fh, "%s\n", f->token);
		fclose(fh);
		chmod(file[i], 0644);
	}
	/* agentjail started from a project directory below the last one (in
	 * /opt), whose parent holds a world-readable file too. */
	snprintf(start, sizeof start, "%s/project", made_dir[6]);
	assert_int_equal(mkdir(start, 0755), 0);
	assert_int_equal(chdir(start), 0);
	struct aj_result r;
	char list[2048] = "[";
	for (size_t i = 0; i < 7; i++) {
		strncat(list, "'", sizeof list - strlen(list) - 1);
		strncat(list, file[i], sizeof list - strlen(list) - 1);
		strncat(list, "',", sizeof list - strlen(list) - 1);
	}
	strncat(list, "]", sizeof list - strlen(list) - 1);
	run_code(&f->cfg, &r,
		 "import os\n" VIEW_ALLOWED
		 "for p in %s:\n"
		 "    try:\n"
		 "        print('READ', p, open(p).read().strip())\n"
		 "    except OSError as e:\n"
		 "        print('absent', p, e.errno)\n"
		 "errors, seen, out, token = [], 0, [], '%s'\n"
		 "for d, dirs, files in os.walk('/', onerror=errors.append):\n"
		 "    if d in ('/proc', '/usr'):\n"
		 "        dirs[:] = []  # the run's processes; the system's files\n"
		 "    for n in dirs + files:\n"
		 "        p = os.path.join(d, n)\n"
		 "        seen += 1\n"
		 "        if outside(p) or token in p:\n"
		 "            out.append(p)\n"
		 "    if seen > 50000:\n"
		 "        print('UNBOUNDED')\n"
		 "        break\n"
		 "print('walked', seen > 10, 'outside', out)\n"
		 "print('errors', sorted(set(type(e).__name__ for e in errors)))\n"
		 "print('sys', os.path.exists('/sys'), 'home', os.path.exists('/home'))\n"
		 "print('cwd', os.getcwd())\n",
		 list, f->token);
	assert_int_equal(chdir(cwd), 0);
	rmdir(start);
	for (size_t i = 0; i < 7; i++) {
		unlink(file[i]);
		rmdir(made_dir[i]);
		if (made[i])
			rmdir(places[i]);
	}
	assert_status(&r, AJ_STATUS_OK);
	assert_false(contains(r.stdout_buf, "READ")); /* no file's content */
	for (size_t i = 0; i < 7; i++) {
		char want[256];
		snprintf(want, sizeof want, "absent %s 2\n", file[i]); /* ENOENT */
		assert_true(contains(r.stdout_buf, want));
	}
	if (!contains(r.stdout_buf, "walked True outside []\n"))
		fail_msg("%s", r.stdout_buf);
	/* Only what a mode keeps out (the root-only /etc/ssl/private). */
	assert_true(contains(r.stdout_buf, "errors [] ") || contains(r.stdout_buf, "errors []\n") ||
		    contains(r.stdout_buf, "errors ['PermissionError']\n"));
	assert_true(contains(r.stdout_buf, "sys False home False\ncwd /tmp/work\n"));
	aj_result_free(&r);
}

/* An interpreter outside the system directories (a venv in /opt) runs: its
 * prefix is shown, read-only, and nothing else of /opt; one in /tmp, which
 * every run gets empty, is refused naming why. */
static void interpreter_prefix_is_shown(void **state)
{
	struct fixture *f = *state;
	char venv[160], cmd[400], py[200];
	snprintf(venv, sizeof venv, "/opt/agentjail-venv-%s", f->token);
	bool made_opt = mkdir("/opt", 0755) == 0;
	/* The venv module is the host's Python's: probed, as a machine fact. */
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 -m venv --without-pip %s 2>/dev/null", venv);
	if (system(cmd) != 0) {
		if (made_opt)
			rmdir("/opt");
		print_message("skipped: /usr/bin/python3 cannot make a venv here\n");
		skip();
	}
	snprintf(py, sizeof py, "%s/bin/python3", venv);
	f->cfg.python = py;
	struct aj_result r, r2;
	run_code(&f->cfg, &r,
		 "import os, sys\n"
		 "print(sys.prefix, os.listdir('/opt'))\n"
		 "try:\n"
		 "    open(sys.prefix + '/x', 'w')\n"
		 "except OSError as e:\n"
		 "    print('refused', e.errno)\n");
	/* One in /tmp: a link to the system's, which the run's own /tmp
	 * would cover. */
	char tmpdir[160], tmppy[200];
	snprintf(tmpdir, sizeof tmpdir, "/tmp/agentjail-py-%s", f->token);
	snprintf(tmppy, sizeof tmppy, "%s/python3", tmpdir);
	assert_int_equal(mkdir(tmpdir, 0755), 0);
	assert_int_equal(symlink("/usr/bin/python3", tmppy), 0);
	f->cfg.python = tmppy;
	run_code(&f->cfg, &r2, "print('ran')\n");
	unlink(tmppy);
	rmdir(tmpdir);
	snprintf(cmd, sizeof cmd, "rm -rf %s", venv);
	(void)!system(cmd);
	if (made_opt)
		rmdir("/opt");
	assert_status(&r, AJ_STATUS_OK);
	char want[400];
	snprintf(want, sizeof want, "%s ['agentjail-venv-%s']\nrefused 30\n", venv, f->token);
	assert_string_equal(r.stdout_buf, want);
	aj_result_free(&r);
	assert_status(&r2, AJ_STATUS_SANDBOX_ERROR);
	snprintf(want, sizeof want,
		 "python: %s lies in /tmp, which every run gets empty or its own: install it "
		 "elsewhere",
		 tmppy);
	assert_true(contains(r2.message, want));
	aj_result_free(&r2);
}

/* Runs on one open sandbox, whose later runs join network, ipc and uts
 * namespaces made ahead by a thread of the host (process.c's pool, root
 * only): each is a run's own, never the host's (which a thread that made
 * them wrongly would hand on: /proc/self/ns names the main thread's), with
 * only a down loopback and the hostname "sandbox". */
static void each_run_has_fresh_namespaces(void **state)
{
	struct fixture *f = *state;
	struct aj_sandbox *sb;
	struct aj_error err;
	char host[160] = "", want[200];
	static const char *const ns[] = {"net", "ipc", "uts"};
	for (int k = 0; k < 3; k++) {
		char path[64], link[64];
		snprintf(path, sizeof path, "/proc/self/ns/%s", ns[k]);
		ssize_t n = readlink(path, link, sizeof link - 1);
		assert_true(n > 0);
		link[n] = '\0';
		snprintf(host + strlen(host), sizeof host - strlen(host), "'%s',", link);
	}
	assert_int_equal(aj_open(&f->cfg, &sb, &err), 0);
	char code[600];
	snprintf(code, sizeof code,
		 "import os, socket\n"
		 "mine = [os.readlink('/proc/self/ns/' + n) for n in ('net', 'ipc', 'uts')]\n"
		 "print('shared', [m for m in mine if m in (%s)], socket.if_nameindex(),\n"
		 "      socket.gethostname())\n",
		 host);
	snprintf(want, sizeof want, "shared [] [(1, 'lo')] sandbox\n");
	for (int i = 0; i < 6; i++) {
		struct aj_result r;
		aj_run(sb, code, strlen(code), &r);
		assert_status(&r, AJ_STATUS_OK);
		assert_string_equal(r.stdout_buf, want);
		aj_result_free(&r);
		sleep_ms(50); /* time for the pool to make the next */
	}
	aj_close(sb);
}

/* A deployer's path inside a place the tier hides (/home) is shown at its
 * own path while the rest stays hidden; a SANDBOX whose mount point would
 * have to be made among the host's own files is refused, naming it. */
static void ro_bind_reaches_into_hidden_places(void **state)
{
	struct fixture *f = *state;
	char home_dir[160], other[160], shown[200], hidden[200], want[400];
	bool made_home = mkdir("/home", 0755) == 0;
	snprintf(home_dir, sizeof home_dir, "/home/agentjail-robind-%s", f->token);
	snprintf(other, sizeof other, "/home/agentjail-other-%s", f->token);
	assert_int_equal(mkdir(home_dir, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	snprintf(shown, sizeof shown, "%s/shown", home_dir);
	snprintf(hidden, sizeof hidden, "%s/hidden", other);
	FILE *fh = fopen(shown, "we");
	assert_non_null(fh);
	fputs("shown\n", fh);
	fclose(fh);
	assert_non_null(fh = fopen(hidden, "we"));
	fputs("hidden\n", fh);
	fclose(fh);
	chmod(shown, 0644);
	chmod(hidden, 0644);
	const char *binds[] = {home_dir};
	f->cfg.ro_binds = binds;
	f->cfg.ro_bind_count = 1;
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import os\n"
		 "print(open('%s').read().strip())\n"
		 "print('home', os.listdir('/home'))\n"
		 "print('other', os.path.exists('%s'))\n",
		 shown, hidden);
	char bad[260];
	snprintf(bad, sizeof bad, "%s:/usr/share/agentjail-%s", home_dir, f->token);
	binds[0] = bad;
	struct aj_result r2;
	run_code(&f->cfg, &r2, "print('ran')\n");
	unlink(shown);
	unlink(hidden);
	rmdir(home_dir);
	rmdir(other);
	if (made_home)
		rmdir("/home");
	assert_status(&r, AJ_STATUS_OK);
	snprintf(want, sizeof want, "shown\nhome ['agentjail-robind-%s']\nother False\n", f->token);
	assert_string_equal(r.stdout_buf, want);
	assert_status(&r2, AJ_STATUS_SANDBOX_ERROR);
	snprintf(want, sizeof want,
		 "ro_bind: /usr/share/agentjail-%s is not in the view, and /usr/share holds files of "
		 "its own (choose a path that exists there, or one under an empty directory such "
		 "as /mnt)",
		 f->token);
	assert_true(contains(r2.message, want));
	aj_result_free(&r);
	aj_result_free(&r2);
}

/* `python3 -I -u main.py` as a user runs it, in dir, stdin empty: its
 * stdout, stderr (each read whole: the programs write little) and wait
 * status. */
static void bare_python(const char *python, const char *dir, char **out, char **err, int *ws)
{
	int o[2], e[2];
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A user's shell starts Python with every signal at its default
		 * and none blocked, as the sandbox's init does; this test may run
		 * with SIGINT ignored (a background job of make), which Python
		 * would then leave ignored. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(o[1], 1) < 0 || dup2(e[1], 2) < 0 ||
		    chdir(dir) < 0)
			_exit(126);
		char *const argv[] = {(char *)python, "-I", "-u", "main.py", NULL};
		char *const envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL};
		execve(python, argv, envp);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	size_t n;
	assert_int_equal(read_fd_up_to(o[0], 1 << 20, out, &n), 0);
	assert_int_equal(read_fd_up_to(e[0], 1 << 20, err, &n), 0);
	close(o[0]);
	close(e[0]);
	assert_int_equal(waitpid(pid, ws, 0), pid);
}

/* s with every from replaced by to, in a string of its own. */
static char *replaced(const char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0;
	for (const char *p = s; (p = strstr(p, from)); p += fl)
		n++;
	char *out = malloc(strlen(s) + n * (tl > fl ? tl - fl : 0) + 1), *w = out;
	assert_non_null(out);
	for (const char *p = s, *q; ; p = q + fl) {
		q = strstr(p, from);
		size_t k = q ? (size_t)(q - p) : strlen(p);
		memcpy(w, p, k);
		w += k;
		if (!q)
			break;
		memcpy(w, to, tl);
		w += tl;
	}
	*w = '\0';
	return out;
}

/* What an agent sees of a program's end, byte for byte what `python3 -I -u
 * main.py` gives on the host: the launcher ends the program itself
 * (src/core/exit_rule.py's finish, without the interpreter's teardown), and
 * this is what says that end is Python's (the warm tests hold warm runs to
 * cold ones). Benign programs only: they run bare as well. */
static void end_is_bare_pythons(void **state)
{
	struct fixture *f = *state;
	const char *python = f->cfg.python ? f->cfg.python : "/usr/bin/python3";
	char dir[] = "/tmp/agentjail-end-XXXXXX", path[64], here[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/main.py", dir);
	snprintf(here, sizeof here, "%s/", dir);
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (aj_open(&f->cfg, &sb, &err))
		fail_msg("aj_open: %s", err.message);
	for (size_t i = 0; i < END_PROGRAMS; i++) {
		FILE *fp = fopen(path, "w");
		assert_non_null(fp);
		fputs(end_programs[i], fp);
		fclose(fp);
		char *out, *errs;
		int ws;
		bare_python(python, dir, &out, &errs, &ws);
		/* The one difference that is not the end's: where main.py is. */
		char *bout = replaced(out, here, "/tmp/work/"), *berr = replaced(errs, here, "/tmp/work/");
		struct aj_result r;
		aj_run(sb, end_programs[i], strlen(end_programs[i]), &r);
		bool same_end = WIFEXITED(ws) ? r.has_exit_code && r.exit_code == WEXITSTATUS(ws)
					      : !r.has_exit_code && r.signal == WTERMSIG(ws);
		if (!same_end || strcmp(r.stdout_buf, bout) || strcmp(r.stderr_buf, berr))
			fail_msg("program %zu:\n%s\nbare: wait status 0x%x\nout %s\nerr %s\n"
				 "run: %s exit %d signal %d\nout %s\nerr %s",
				 i, end_programs[i], ws, bout, berr, aj_status_name(r.status),
				 r.exit_code, r.signal, r.stdout_buf, r.stderr_buf);
		aj_result_free(&r);
		free(out);
		free(errs);
		free(bout);
		free(berr);
	}
	aj_close(sb);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	fixture.tier = AJ_TIER_PROCESS;
	fixture.session_cycles = 1000;
	if (getenv("AJ_TEST_FILTER"))
		cmocka_set_test_filter(getenv("AJ_TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		HOSTILE_TABLE,
		STREAM_TABLE,
		HOSTILE_TEST(ro_bind_shows_host_paths_read_only),
		HOSTILE_TEST(ro_bind_reaches_into_hidden_places),
		SESSION_TABLE,
		HOSTILE_SESSION_TABLE,
		HOSTILE_RESTORED_TABLE,
		HOSTILE_CASES(HOSTILE_AHEAD_TEST),
		EGRESS_TABLE,
		HOSTILE_TEST(identity_inside),
		HOSTILE_TEST(users_are_the_runs_own),
		HOSTILE_TEST(view_is_an_allow_list),
		HOSTILE_TEST(userland_tools_run),
		HOSTILE_TEST(interpreter_prefix_is_shown),
		HOSTILE_TEST(each_run_has_fresh_namespaces),
		HOSTILE_TEST(end_is_bare_pythons),
		HOSTILE_TEST(supervisor_death_kills_sandbox),
		HOSTILE_TEST(netns_refused_fails_closed),
		HOSTILE_TEST(caller_terminal_out_of_reach),
		HOSTILE_TEST(bad_code_is_refused),
		HOSTILE_TEST(missing_python_is_refused),
		HOSTILE_TEST(unprivileged_caller_uses_userns),
		HOSTILE_TEST(unprivileged_check_session_and_warm),
	};
	return cmocka_run_group_tests_name("process tier", tests, NULL, NULL);
}
