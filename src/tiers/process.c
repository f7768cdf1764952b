/* The process tier: the seed article's restricted subprocess, hardened.
 *
 * Theory of operation
 * -------------------
 * Three processes take part in a run.
 *
 *  supervisor  the caller of aj_run, on the host. It takes a uid slot (when
 *              root), makes three pipes (stdout, stderr, report) and a life
 *              pipe, and clones init into new pid, mount, network, ipc and
 *              uts namespaces (and a user namespace when not root). Then it
 *              supervises (supervise.c): reads and caps both streams, keeps
 *              the wall clock, and stops the sandbox by signalling init.
 *
 *  init        PID 1 of the new pid namespace, still privileged there, never
 *              exec'ing. It applies the setup steps below in order, writes
 *              the program to the workspace, forks the inside process, then
 *              reaps every process of the namespace until the program ends,
 *              reports the program's wait status and usage on the report pipe,
 *              and exits. The kernel then SIGKILLs all that is left in the
 *              namespace (a setsid() double-forked daemon included) and frees
 *              its mounts, so nothing of the run outlives init. init dies
 *              with the supervisor (PDEATHSIG), so a killed supervisor leaves
 *              nothing behind either.
 *
 *  inside      init's child. Connects stdio (stdin /dev/null, stdout/stderr
 *              the pipes), applies the rlimits, drops to the run's uid with
 *              no groups, no capabilities and no_new_privs, loads the
 *              seccomp filter (seccomp.c: no mounts, namespaces, keyrings,
 *              ptrace, SysV IPC, memfds, or sockets but inet and routing
 *              netlink), and execs `python3 -I -u main.py` in the workspace
 *              with an environment built from nothing.
 *
 * Any failed setup step is reported on the report pipe as "step: ERRNO" and
 * the run is refused (sandbox_error): nothing runs with less than promised.
 *
 * What the program sees: the host's filesystem read-only (mount_setattr
 * recursive, so not even world-writable host directories take a write) and
 * nosuid; a /dev of its own (null, zero, full, random, urandom, a private
 * devpts); one size-limited tmpfs providing /tmp, /var/tmp, /dev/shm and the
 * workspace /tmp/work (cwd and HOME); a /proc of its own pid namespace; a
 * network namespace with only a down loopback; hostname "sandbox"; a fresh
 * session keyring. It can
 * read what the host lets any user read: this tier hides no world-readable
 * file (the container tier does).
 *
 * Started by a normal user there is no other uid to run as: the program has
 * the caller's uid inside a user namespace, so it could read the caller's
 * own files. The places those usually live (/home, /root, /run/user and the
 * caller's $HOME) are covered with empty read-only tmpfs; a file the caller
 * owns elsewhere stays readable. Run as root for a uid of the run's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/keyctl.h>
#include <unistd.h>

#include "../linux/creds.h"
#include "../linux/mounts.h"
#include "../linux/ns.h"
#include "../linux/rlimits.h"
#include "../linux/seccomp.h"
#include "../linux/spawn.h"
#include "../linux/supervise.h"
#include "tier.h"

#define WORKSPACE "/tmp/work"
#define PROGRAM "main.py"

/* Namespaces every run gets. A user namespace is added when not root. */
static const unsigned long base_namespaces =
	CLONE_NEWPID |  /* sees and signals only its own processes; init's end kills them all */
	CLONE_NEWNS |   /* its mounts (read-only host, private tmpfs, /proc) are its own */
	CLONE_NEWNET |  /* no interface but a down loopback: no network at all */
	CLONE_NEWIPC |  /* SysV IPC and POSIX queues apart from the host and other runs */
	CLONE_NEWUTS;   /* its own hostname */

/* Everything init and inside need, prepared before clone: after it they may
 * not allocate. */
struct plan {
	const struct aj_config *cfg;
	const char *code;
	size_t code_len;
	bool userns;            /* not root: a user namespace provides the privilege */
	uid_t uid;              /* the program's uid and gid */
	gid_t gid;
	uid_t outer_uid;        /* the caller's, for the user namespace map */
	gid_t outer_gid;
	char home[256];         /* the caller's $HOME, hidden in user-namespace mode */
	int out_w, err_w, report_w, life_r;
	char *argv[5];
	char *envp[6];
};

/* ---- inside: the program's process ---- */

static int setup_fds(const struct plan *p, int *report, struct setup_error *e)
{
	/* Lift the pipe ends above 2 first so no dup2 below can clobber one (a
	 * caller whose own 0-2 were closed gets pipes there). */
	int out = fcntl(p->out_w, F_DUPFD_CLOEXEC, 3);
	int err = fcntl(p->err_w, F_DUPFD_CLOEXEC, 3);
	int rep = fcntl(p->report_w, F_DUPFD_CLOEXEC, 3);
	if (out < 0 || err < 0 || rep < 0)
		return setup_fail(e, errno, "stdio: dup");
	*report = rep;
	/* stdin is /dev/null: the program cannot wait on or read the caller's. */
	int null = open("/dev/null", O_RDONLY);
	if (null < 0)
		return setup_fail(e, errno, "stdio: open /dev/null");
	if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		return setup_fail(e, errno, "stdio: dup2");
	/* Nothing else crosses exec: the report pipe is already close-on-exec. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return setup_fail(e, errno, "stdio: close_range");
	return 0;
}

__attribute__((noreturn)) static void inside_main(const struct plan *p)
{
	struct setup_error e;
	int report = p->report_w;
	int rc;

	if ((rc = setup_fds(p, &report, &e)) ||
	    /* RLIMIT_NPROC counts per uid: the run's own uid when root, and
	     * per user namespace (kernel ucounts) otherwise, so one run's
	     * count is its own either way. */
	    (rc = rlimits_apply(&p->cfg->limits, true, &e)) ||
	    (rc = creds_drop(p->uid, p->gid, p->userns, &e)))
		goto fail;
	if (chdir(WORKSPACE) < 0) {
		setup_fail(&e, errno, "chdir %s", WORKSPACE);
		goto fail;
	}
	/* Last, so that everything above could still use what it denies. */
	if ((rc = syscall_filter_apply(&e)))
		goto fail;
	execve(p->argv[0], p->argv, p->envp);
	setup_fail(&e, errno, "exec %s", p->argv[0]);
fail:
	report_setup_failed(report, &e);
	_exit(127);
}

/* ---- init: PID 1 of the sandbox ---- */

static int write_program(const struct plan *p, struct setup_error *e)
{
	int fd = open("/tmp/t/work/" PROGRAM, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0644);
	if (fd < 0)
		return setup_fail(e, errno, "workspace: create %s", PROGRAM);
	int rc = write_full(fd, p->code, p->code_len);
	if (rc) {
		close(fd);
		return setup_fail(e, -rc, "workspace: write %s", PROGRAM);
	}
	if (fchown(fd, p->userns ? (uid_t)-1 : p->uid, p->userns ? (gid_t)-1 : p->gid) < 0)
		rc = setup_fail(e, errno, "workspace: chown %s", PROGRAM);
	close(fd);
	return rc;
}

/* A real directory (not a symlink, which mount would follow) that exists. */
static bool is_plain_dir(const char *path)
{
	struct stat st;
	return path[0] && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int bind_if_present(const char *src, const char *dst, struct setup_error *e)
{
	/* Absent, or a symlink (/var/tmp -> /tmp): nothing of the host's own
	 * to shadow there. */
	if (!is_plain_dir(dst))
		return 0;
	return mount_bind(src, dst, e);
}

static int hide_if_present(const char *path, const char *python, struct setup_error *e)
{
	size_t n = strlen(path);
	if (!is_plain_dir(path))
		return 0;
	/* Never hide the interpreter itself (a Python under /home). */
	if (strncmp(python, path, n) == 0 && python[n] == '/')
		return 0;
	return mount_hide(path, e);
}

/* The filesystem view, in the order it is built. */
static int setup_root(const struct plan *p, struct setup_error *e)
{
	const uint32_t disk = p->cfg->limits.disk_mb;
	const uid_t keep = (uid_t)-1;
	int rc;

	if ((rc = mount_make_private(e)) || (rc = mount_tree_readonly("/", e)))
		return rc;
	/* Sharing the caller's uid, the program could read the caller's own
	 * files: cover where they usually are. */
	const char *py = p->cfg->python;
	if (p->userns &&
	    ((rc = hide_if_present("/home", py, e)) || (rc = hide_if_present("/root", py, e)) ||
	     (rc = hide_if_present("/run/user", py, e)) || (rc = hide_if_present(p->home, py, e))))
		return rc;
	/* Its own /dev, built on /tmp before the scratch space goes there. */
	if ((rc = mount_minimal_dev("/tmp", e)))
		return rc;
	/* One tmpfs holds all the run may write, so --disk bounds the sum. It
	 * goes on /tmp, gets a directory for each writable place, and its root
	 * is then covered by its own t/ so only those places are reachable. */
	if ((rc = mount_tmpfs("/tmp", disk, 0755, e)) ||
	    (rc = make_dir("/tmp/t", 01777, keep, keep, e)) ||
	    (rc = make_dir("/tmp/v", 01777, keep, keep, e)) ||
	    (rc = make_dir("/tmp/s", 01777, keep, keep, e)) ||
	    (rc = make_dir("/tmp/t/work", 0700, p->userns ? keep : p->uid,
			   p->userns ? keep : p->gid, e)) ||
	    (rc = write_program(p, e)) ||
	    (rc = bind_if_present("/tmp/v", "/var/tmp", e)) ||
	    (rc = mount_bind("/tmp/s", "/dev/shm", e)) ||
	    (rc = mount_bind("/tmp/t", "/tmp", e)))
		return rc;
	return mount_proc("/proc", e);
}

/* Returns 0 while the supervisor lives; it holds the life pipe's only write
 * end, so a hang-up means it is gone. */
static bool supervisor_gone(int life_r)
{
	struct pollfd pfd = {.fd = life_r, .events = POLLIN};
	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR));
}

__attribute__((noreturn)) static void init_main(const struct plan *p)
{
	struct setup_error e;
	int rc;

	/* Die with the supervisor; the check after it closes the race with a
	 * supervisor that died before the prctl. Init's death then ends the
	 * whole namespace. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || supervisor_gone(p->life_r))
		_exit(1);
	/* The application's signal mask and handlers are not init's. */
	if ((rc = child_reset_signals())) {
		setup_fail(&e, -rc, "signals: reset");
		goto fail;
	}
	int keep[] = {p->out_w, p->err_w, p->report_w, p->life_r};
	/* A copy of every fd the supervisor's process had (another thread's
	 * run, a server socket) must not stay open in here. */
	close_fds_except(keep, 4);

	/* A caller that changed uids is not dumpable, which makes its
	 * /proc/self files root's and the map unwritable: nothing runs in
	 * here yet, so being dumpable for the next three writes is safe. */
	if (p->userns) {
		prctl(PR_SET_DUMPABLE, 1);
		if ((rc = userns_map_self(p->outer_uid, p->outer_gid, &e)))
			goto fail;
	}
	/* init holds a copy of the supervisor's memory: a program sharing its
	 * uid (the user-namespace case) must not read it through ptrace or
	 * /proc/1/mem; and its command line, which anyone in the namespace can
	 * read, is the application's. */
	if (prctl(PR_SET_DUMPABLE, 0) < 0) {
		setup_fail(&e, errno, "prctl dumpable");
		goto fail;
	}
	child_scrub_args_and_env();
	/* A session keyring of its own: the caller's (and the secrets in it)
	 * is out of reach even before the filter denies keyctl. */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0) {
		setup_fail(&e, errno, "keyring: join a new session keyring");
		goto fail;
	}
	/* A session of its own: no controlling terminal to inject keystrokes
	 * into (TIOCSTI) or to send signals to the caller's job. */
	if (setsid() < 0) {
		setup_fail(&e, errno, "setsid");
		goto fail;
	}
	if (sethostname("sandbox", 7) < 0) {
		setup_fail(&e, errno, "uts namespace: sethostname");
		goto fail;
	}
	if ((rc = setup_root(p, &e)))
		goto fail;
	if ((rc = init_install_stop_handler())) {
		setup_fail(&e, -rc, "signals: stop handler");
		goto fail;
	}

	int fd = -1;
	pid_t pid = spawn_clone(0, &fd);
	if (pid < 0) {
		setup_fail(&e, -pid, "fork the program");
		goto fail;
	}
	if (pid == 0)
		inside_main(p);
	close(fd);
	close(p->out_w);
	close(p->err_w);
	init_wait_and_report(pid, p->report_w);
fail:
	report_setup_failed(p->report_w, &e);
	_exit(1);
}

/* ---- supervisor side ---- */

static int process_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	if (access(cfg->python, X_OK) < 0)
		return error_set(err, -errno, "python: %s: %s", cfg->python, errno_name(errno));
	return 0;
}

static void process_close(void *state)
{
	(void)state;
}

static int process_check(const struct aj_config *cfg, struct aj_error *err)
{
	unsigned long flags = base_namespaces | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
	void *state;
	int rc = process_open(cfg, &state, err);
	if (rc)
		return rc;
	if ((rc = ns_probe(flags, err)) == 0) {
		/* The mechanisms exist; a real run proves they combine. */
		struct aj_result res;
		result_init(&res);
		rc = process_tier.run(state, cfg, "", 0, &res);
		if (res.status != AJ_STATUS_OK)
			rc = error_set(err, rc ? rc : -EIO, "%s",
				       res.message ? res.message : "a trial run did not succeed");
		aj_result_free(&res);
	}
	process_close(state);
	return rc;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The caller's $HOME, if hiding it cannot hide the system: an absolute path
 * of its own, not /, and not above the interpreter or the libraries. */
static void caller_home(char *out, size_t n, const char *python)
{
	const char *h = getenv("HOME");
	static const char *const system_dirs[] = {"/usr/", "/lib", "/bin/", "/sbin/", "/etc/",
						  "/proc/", "/dev/", "/sys/", "/tmp/"};
	out[0] = '\0';
	if (!h || h[0] != '/' || strlen(h) < 2 || strlen(h) >= n || strstr(h, ".."))
		return;
	size_t hl = strlen(h);
	for (size_t i = 0; i < sizeof system_dirs / sizeof system_dirs[0]; i++)
		if (strncmp(system_dirs[i], h, hl) == 0 || strncmp(h, system_dirs[i], strlen(system_dirs[i])) == 0)
			return;
	if (strncmp(python, h, hl) == 0)
		return;
	memcpy(out, h, hl + 1);
}

static int process_run(void *state, const struct aj_config *cfg, const char *code, size_t len,
		       struct aj_result *res)
{
	(void)state;
	struct plan p = {
		.cfg = cfg,
		.code = code,
		.code_len = len,
		.userns = geteuid() != 0,
		.outer_uid = geteuid(),
		.outer_gid = getegid(),
		.argv = {(char *)cfg->python, "-I", "-u", PROGRAM, NULL},
		/* Built from nothing: no variable of the caller's (API keys
		 * least of all) reaches the program. MALLOC_ARENA_MAX: glibc
		 * reserves 64 MiB of address space per malloc arena, which
		 * under RLIMIT_AS would make a handful of threads fail. */
		.envp = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" WORKSPACE,
			 "TMPDIR=/tmp", "MALLOC_ARENA_MAX=2", NULL},
	};
	struct uid_slot slot = {.lock_fd = -1};
	struct aj_error err = {0};
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, rep[2] = {-1, -1}, life[2] = {-1, -1};
	int pidfd = -1;
	int rc;

	if (p.userns) {
		p.uid = p.outer_uid;
		p.gid = p.outer_gid;
		caller_home(p.home, sizeof p.home, cfg->python);
	} else {
		if ((rc = slot_acquire(cfg, &slot, &err))) {
			result_sandbox_error(res, "%s", err.message);
			return rc;
		}
		p.uid = slot.uid;
		p.gid = slot.gid;
	}
	if ((rc = pipe_cloexec(out, 1)) || (rc = pipe_cloexec(errp, 1)) ||
	    (rc = pipe_cloexec(rep, 1)) || (rc = pipe_cloexec(life, 0))) {
		result_sandbox_error(res, "pipes: %s", errno_name(-rc));
		goto done;
	}
	p.out_w = out[1];
	p.err_w = errp[1];
	p.report_w = rep[1];
	p.life_r = life[0];

	unsigned long flags = base_namespaces | (p.userns ? CLONE_NEWUSER : 0);
	double start = now_ms();
	pid_t pid = spawn_clone(flags, &pidfd);
	if (pid == 0)
		init_main(&p);
	if (pid < 0) {
		rc = pid;
		/* clone names no culprit when it fails: find out which
		 * namespace this machine refuses. */
		if (ns_probe(flags, &err) == 0)
			snprintf(err.message, sizeof err.message, "clone: %s", errno_name(-rc));
		result_sandbox_error(res, "%s", err.message);
		goto done;
	}
	close_fd(&out[1]);
	close_fd(&errp[1]);
	close_fd(&rep[1]);
	close_fd(&life[0]);

	struct capture cout, cerr;
	size_t cap = (size_t)cfg->limits.output_kb * 1024;
	capture_init(&cout, cap);
	capture_init(&cerr, cap);
	struct supervised s = {.pid = pid, .pidfd = pidfd, .out_fd = out[0], .err_fd = errp[0],
			       .report_fd = rep[0], .start_ms = start};
	struct outcome o;
	supervise(&s, &cfg->limits, &cout, &cerr, &o);
	outcome_to_result(&o, &cfg->limits, &cout, &cerr, res);
	capture_free(&cout);
	capture_free(&cerr);
	rc = res->status == AJ_STATUS_SANDBOX_ERROR ? -EPERM : 0;
done:
	close_fd(&pidfd);
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&errp[i]);
		close_fd(&rep[i]);
		close_fd(&life[i]);
	}
	slot_release(&slot);
	return rc;
}

const struct tier_ops process_tier = {
	.name = "process",
	.check = process_check,
	.open = process_open,
	.run = process_run,
	.close = process_close,
};
