/* The jail engine shared by the process and container tiers.
 *
 * Theory of operation
 * -------------------
 * Three processes take part in a run.
 *
 *  supervisor  the caller of aj_run, on the host. It makes three pipes
 *              (stdout, stderr, report) and a life pipe, and clones init into
 *              new pid, mount, network, ipc and uts namespaces (and a user
 *              namespace when not root), into the run's cgroup where the
 *              tier has one (cgroup v2), and says "go" on the life pipe. Then it
 *              supervises (supervise.c): reads and caps both streams, keeps
 *              the wall clock, and stops the sandbox by signalling init.
 *
 *  init        PID 1 of the new pid namespace, still privileged there, never
 *              exec'ing. It joins the run's cgroups itself (v1), resets what
 *              it inherited (signals, fds, keyring, session, its copy of the
 *              caller's argv), has the tier build
 *              the filesystem view (setup_root), waits for "go", forks the
 *              inside process, then reaps every process of the namespace
 *              until the program ends, reports the program's wait status and
 *              usage on the report pipe, and exits. The kernel then SIGKILLs
 *              all that is left in the namespace (a setsid() double-forked
 *              daemon included) and frees its mounts, so nothing of the run
 *              outlives init. init dies with the supervisor (PDEATHSIG), so a
 *              killed supervisor leaves nothing behind either.
 *
 *  inside      init's child. Connects stdio (stdin /dev/null, stdout/stderr
 *              the pipes), applies the rlimits, drops to the run's uid with
 *              no groups and no capabilities (bounding set emptied too) and
 *              no_new_privs, loads the seccomp filter (seccomp_policy.c), and
 *              execs `python3 -I -u main.py` in the workspace with an
 *              environment built from nothing.
 *
 * Any failed setup step is reported on the report pipe as "step: ERRNO" and
 * the run is refused (sandbox_error): nothing runs with less than promised.
 *
 * Sessions
 * --------
 * A session's sandbox is built the same way (jail_session_start) and lives
 * until the session closes. Init then does not wait for one "go": each 's'
 * on the life pipe starts a session interpreter (src/core/repl.py as
 * `python3 -I -u -c`) through exactly the inside steps above, with two more
 * pipes as its fds 3 (requests) and 4 (replies). While it runs, init reaps
 * orphans and watches the life pipe; when the interpreter ends (a crash, a
 * limit, or the supervisor's stop signal at a call's wall clock), init kills
 * whatever it left (its state is gone with it), reports its wait status and
 * waits for the next 's'. EOF on the life pipe (the session closed, or its
 * process died) ends init, and with it the whole sandbox. A session's init
 * has no PDEATHSIG: that fires when the creating *thread* exits, and a
 * session outlives the call that opened it; the life pipe's EOF stands in.
 * The per-call supervision is src/linux/session_io.c.
 *
 * Between clone and execve the code runs in a copy of a possibly
 * multi-threaded process: plain system calls only, no malloc, no locks, no
 * glibc wrapper that acts on "all threads" (see creds.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "creds.h"
#include "jail.h"
#include "mounts.h"
#include "ns.h"
#include "rlimits.h"
#include "../core/contract.h"
#include "seccomp.h"
#include "spawn.h"
#include "supervise.h"

/* Namespaces every run gets. A user namespace is added when not root. */
static const unsigned long base_namespaces =
	CLONE_NEWPID |  /* sees and signals only its own processes; init's end kills them all */
	CLONE_NEWNS |   /* its mounts (its view, private tmpfs, /proc) are its own */
	CLONE_NEWNET |  /* no interface but a down loopback: no network at all */
	CLONE_NEWIPC |  /* SysV IPC and POSIX queues apart from the host and other runs */
	CLONE_NEWUTS;   /* its own hostname */

/* The namespaces a zygote makes ahead of a warm run, in jail_spec.spare_ns
 * order. */
static const int spare_ns_types[3] = {CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS};
static const char *const spare_ns_names[3] = {"net", "ipc", "uts"};

/* Everything init and inside need, prepared before clone: after it they may
 * not allocate. */
struct plan {
	const struct jail_spec *s;
	int out_w, err_w, report_w, life_r;
	int req_r, rep_w;           /* sessions: the interpreter's fds 3 and 4 */
	struct aj_limits limits;    /* what the inside process gets */
	/* A warm run's: the zygote's Python's own handlers for these (as a
	 * cold Python sets them), which init's reset must not take from the
	 * program's process. */
	struct sigaction python_sigs[3];
	char *argv[8];
	char *envp[CONTRACT_ENVIRONMENT_COUNT + 1];
};

/* The session interpreter, as a C string (tools/c_string.py). */
#include "launch.inc"       /* launch_py: src/core/launch.py */
#include "session_repl.inc"

/* ---- inside: the program's process ---- */

static int setup_fds(const struct plan *p, int *report, struct setup_error *e)
{
	/* Lift the pipe ends above 4 first so no dup2 below can clobber one (a
	 * caller whose own 0-2 were closed gets pipes there; a session's
	 * interpreter gets its request and reply pipes at 3 and 4). */
	int out = fcntl(p->out_w, F_DUPFD_CLOEXEC, 5);
	int err = fcntl(p->err_w, F_DUPFD_CLOEXEC, 5);
	int rep = fcntl(p->report_w, F_DUPFD_CLOEXEC, 5);
	if (out < 0 || err < 0 || rep < 0)
		return setup_fail(e, errno, "stdio: dup");
	*report = rep;
	if (p->req_r >= 0) {
		/* The session interpreter's requests and replies at 3 and 4
		 * (the zygote's socket and helper library), lifted first like
		 * the others; dup2 clears close-on-exec. */
		int req = fcntl(p->req_r, F_DUPFD_CLOEXEC, 5);
		int repl = fcntl(p->rep_w, F_DUPFD_CLOEXEC, 5);
		if (req < 0 || repl < 0 || dup2(req, 3) < 0 || dup2(repl, 4) < 0)
			return setup_fail(e, errno, "session pipes: dup");
		close(req);
		close(repl);
	}
	/* stdin is /dev/null: the program cannot wait on or read the caller's. */
	int null = open("/dev/null", O_RDONLY);
	if (null < 0)
		return setup_fail(e, errno, "stdio: open /dev/null");
	if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		return setup_fail(e, errno, "stdio: dup2");
	/* Nothing else crosses exec: the report pipe is already close-on-exec.
	 * (A warm run has no exec: its process closes them all once set up.) */
	if (close_range(p->req_r >= 0 ? 5 : 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return setup_fail(e, errno, "stdio: close_range");
	return 0;
}

/* What the zygote (root, in the host's user namespace) keeps of root's
 * capabilities, each for a step of a run's init or program process; the
 * rest (modules, raw I/O, ptrace, open_by_handle_at, the clock, ...) leave
 * its bounding set, so nothing it runs can gain them. */
static const int zygote_caps[] = {
	CAP_SYS_ADMIN, /* namespaces, mounts, sethostname */
	CAP_MKNOD,     /* the run's /dev nodes */
	CAP_CHOWN,     /* the workspace and program for the run's uid */
	CAP_DAC_OVERRIDE, /* writing the program into the run's 0700 workspace */
	CAP_FOWNER,    /* their modes */
	CAP_SETUID,    /* the program's uid */
	CAP_SETGID,    /* its gid and groups */
	CAP_SETPCAP,   /* emptying the program's bounding set */
	CAP_KILL,      /* init stopping a program of another uid */
};

/* The inside steps up to the program: 0 with *report the lifted report
 * fd, or -errno with e filled (report it on *report). */
static int inside_prepare(const struct plan *p, int *report, struct setup_error *e)
{
	const struct jail_spec *s = p->s;
	int rc;

	/* The OOM killer takes the program and what it forks, never init: an
	 * init killed first ends the run as a sandbox failure instead of the
	 * memory limit at work (init is a copy of the caller, whose resident
	 * set can be large). Raising one's own score needs no privilege. (Not
	 * the zygote: every run's init is a copy of it, and its death would
	 * take every run on it.) */
	if (!s->zygote) {
		/* Opened while dumpable, then written. init made itself not
		 * dumpable (init_build), and this process inherited that: its
		 * /proc/self files then belong to the host's root, whom a
		 * user namespace does not map, so even its own
		 * oom_score_adj is EACCES to open there. The open is the only
		 * check (the write asks only that the score go up), so the
		 * process is dumpable for the open alone: nothing of the
		 * run's uid but init exists in the sandbox yet, and it is
		 * not dumpable again before anything of the program runs. */
		bool reopen = s->userns && prctl(PR_SET_DUMPABLE, 1) == 0;
		int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		int oerr = errno;
		if (reopen && prctl(PR_SET_DUMPABLE, 0) < 0) {
			if (adj >= 0)
				close(adj);
			return setup_fail(e, errno, "prctl dumpable");
		}
		int arc = adj < 0 ? -oerr : write_full(adj, "1000", 4);
		if (adj >= 0)
			close(adj);
		if (arc)
			return setup_fail(e, -arc, "oom_score_adj");
	}
	if ((rc = setup_fds(p, report, e)))
		return rc;
	if (s->zygote) {
		/* The zygote keeps root and the capabilities it needs to make
		 * each run's namespaces and mounts and give the run its uid;
		 * each run then applies every step below itself (warm.c). It
		 * execs nothing but its own Python, and never will. */
		if ((rc = creds_limit_bounding_set(zygote_caps, sizeof zygote_caps /
								     sizeof zygote_caps[0], e)))
			return rc;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			return setup_fail(e, errno, "zygote: no_new_privs");
		return chdir("/") < 0 ? setup_fail(e, errno, "chdir /") : 0;
	}
	/* RLIMIT_NPROC counts per uid: the run's own uid when root, and
	 * per user namespace (kernel ucounts) otherwise, so one run's
	 * count is its own either way. */
	if ((rc = rlimits_apply(&p->limits, true, s->address_space_limit, e)) ||
	    (rc = creds_drop(s->uid, s->gid, s->userns, e)))
		return rc;
	/* A warm run's process changed uid without exec, which left it not
	 * dumpable: its /proc/self would be root's, so it could not list its
	 * own fds. Dumpable again, as exec would make a cold run's; its
	 * memory is a copy of the zygote's, which holds nothing of another
	 * run's (warm.c), and the filter below denies ptrace anyway. */
	if (s->warm_child && prctl(PR_SET_DUMPABLE, 1) < 0)
		return setup_fail(e, errno, "prctl dumpable");
	if (chdir(JAIL_WORKSPACE) < 0)
		return setup_fail(e, errno, "chdir %s", JAIL_WORKSPACE);
	/* Last, so that everything above could still use what it denies. */
	return syscall_filter_apply(e);
}

__attribute__((noreturn)) static void inside_main(const struct plan *p)
{
	struct setup_error e;
	int report = p->report_w;
	if (inside_prepare(p, &report, &e) == 0) {
		execve(p->argv[0], p->argv, p->envp);
		setup_fail(&e, errno, "exec %s", p->argv[0]);
	}
	report_setup_failed(report, &e);
	_exit(127);
}

/* ---- init: PID 1 of the sandbox ---- */

/* A warm run's program, from the host's file (a stack buffer: init may not
 * allocate). The zygote never reads it: no run's code is ever in the
 * zygote's memory, which every later run gets a copy of. */
static int copy_code(int from, int to)
{
	char buf[16384];
	for (;;) {
		ssize_t n = read(from, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		int rc = write_full(to, buf, (size_t)n);
		if (rc)
			return rc;
	}
}

static int write_program(const struct jail_spec *s, const char *path, struct setup_error *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return setup_fail(e, errno, "workspace: create %s", JAIL_PROGRAM);
	int rc = s->warm_child ? copy_code(s->code_fd, fd) : write_full(fd, s->code, s->code_len);
	if (rc) {
		close(fd);
		return setup_fail(e, -rc, "workspace: write %s", JAIL_PROGRAM);
	}
	if (fchown(fd, s->userns ? (uid_t)-1 : s->uid, s->userns ? (gid_t)-1 : s->gid) < 0)
		rc = setup_fail(e, errno, "workspace: chown %s", JAIL_PROGRAM);
	close(fd);
	return rc;
}

/* A real directory (not a symlink, which mount would follow) that exists. */
static bool is_plain_dir(const char *path)
{
	struct stat st;
	return path[0] && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Who is who in the run, in an image's words (images/build-root.sh): root,
 * nobody, and the run's uid and gid as "sandbox", so that the program's
 * getpwuid and `id` resolve and ls shows a name. */
static void users_text(const struct jail_spec *s, char *passwd, size_t pn, char *group,
		       size_t gn)
{
	int n = snprintf(passwd, pn, "root:x:0:0:root:/root:/bin/sh\n"
				     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	if (s->uid != 0 && s->uid != 65534)
		snprintf(passwd + n, pn - (size_t)n, "sandbox:x:%u:%u:sandbox:" JAIL_WORKSPACE
			 ":/bin/sh\n", (unsigned)s->uid, (unsigned)s->gid);
	n = snprintf(group, gn, "root:x:0:\nnogroup:x:65534:\n");
	if (s->gid != 0 && s->gid != 65534)
		snprintf(group + n, gn - (size_t)n, "sandbox:x:%u:\n", (unsigned)s->gid);
}

static int write_new_file(const char *path, const char *text, struct setup_error *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return setup_fail(e, errno, "create %s", path);
	int rc = write_full(fd, text, strlen(text));
	close(fd);
	return rc ? setup_fail(e, -rc, "write %s", path) : 0;
}

/* The host's user and group files name its users (a login name is half of
 * a credential, and says whose machine this is): each is covered,
 * read-only, with the run's own, written to the run's tmpfs at `tmp`
 * (whose root the program never sees). The backups (passwd-, group-) are
 * as readable and get the same; subuid and subgid, naming users too, are
 * covered with an empty file. Absent ones stay absent. */
static int cover_user_files(const struct jail_spec *s, const char *root, const char *tmp,
			    struct setup_error *e)
{
	static const struct {
		const char *name;
		int text; /* 0 passwd, 1 group, 2 empty */
	} files[] = {{"passwd", 0}, {"passwd-", 0}, {"group", 1},
		     {"group-", 1}, {"subuid", 2},  {"subgid", 2}};
	static const char *const sources[] = {"users-passwd", "users-group", "users-empty"};
	char passwd[256], group[128], src[3][300], dst[300];
	users_text(s, passwd, sizeof passwd, group, sizeof group);
	const char *const texts[] = {passwd, group, ""};
	int rc;
	for (int i = 0; i < 3; i++) {
		snprintf(src[i], sizeof src[i], "%s/%s", tmp, sources[i]);
		if ((rc = write_new_file(src[i], texts[i], e)))
			return rc;
	}
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct stat st;
		snprintf(dst, sizeof dst, "%s/etc/%s", root, files[i].name);
		/* stat, not lstat: a symlinked file is covered at its target,
		 * which is what reading the link gives. */
		if (stat(dst, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if ((rc = mount_file_readonly(src[files[i].text], dst, e)))
			return rc;
	}
	return 0;
}

int jail_populate_root(const struct jail_spec *s, const char *root, struct setup_error *e)
{
	const uint32_t disk = s->cfg->limits.disk_mb;
	const uid_t keep = (uid_t)-1;
	char tmp[256], dev[256], p1[300], p2[300];
	int rc;

	snprintf(tmp, sizeof tmp, "%s/tmp", root);
	snprintf(dev, sizeof dev, "%s/dev", root);
	/* Its own /dev, built on /tmp before the scratch space goes there. */
	if ((rc = mount_minimal_dev(tmp, dev, e)))
		return rc;
	/* One tmpfs holds all the run may write, so --disk bounds the sum. It
	 * goes on /tmp, gets a directory for each writable place, and its root
	 * is then covered by its own t/ so only those places are reachable. */
	if ((rc = mount_tmpfs(tmp, disk, 0755, e)))
		return rc;
	static const char *const dirs[] = {"t", "v", "s"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p1, sizeof p1, "%s/%s", tmp, dirs[i]);
		if ((rc = make_dir(p1, 01777, keep, keep, e)))
			return rc;
	}
	snprintf(p1, sizeof p1, "%s/t/work", tmp);
	if ((rc = make_dir(p1, 0700, s->userns ? keep : s->uid, s->userns ? keep : s->gid, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/t/work/" JAIL_PROGRAM, tmp);
	if (!s->session && (rc = write_program(s, p1, e)))
		return rc;
	if (s->own_users && (rc = cover_user_files(s, root, tmp, e)))
		return rc;
	/* /var/tmp absent, or a symlink (to /tmp): nothing to shadow there. */
	snprintf(p2, sizeof p2, "%s/var/tmp", root);
	snprintf(p1, sizeof p1, "%s/v", tmp);
	if (is_plain_dir(p2) && (rc = mount_bind(p1, p2, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/s", tmp);
	snprintf(p2, sizeof p2, "%s/shm", dev);
	if ((rc = mount_bind(p1, p2, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/t", tmp);
	if ((rc = mount_bind(p1, tmp, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/proc", root);
	return mount_proc(p1, e);
}

/* Waits for the supervisor's "go". EOF means the supervisor is gone. */
static bool wait_for_go(int life_r)
{
	char c;
	ssize_t n;
	while ((n = read(life_r, &c, 1)) < 0 && errno == EINTR)
		;
	return n == 1;
}

/* A session's init, once the sandbox is built: one interpreter after
 * another, each on the supervisor's 's', until the life pipe's EOF. */
static void on_child(int sig)
{
	(void)sig; /* only interrupts ppoll */
}

/* SIGCHLD is taken only inside ppoll(..., during): a child that ends between
 * a reaping loop and ppoll still wakes it. 0, or -errno. */
static int sigchld_only_in_ppoll(sigset_t *during)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL) < 0 || sigprocmask(SIG_BLOCK, &chld, during) < 0)
		return -errno;
	sigdelset(during, SIGCHLD);
	return 0;
}

__attribute__((noreturn)) static void session_init_loop(const struct plan *p)
{
	struct setup_error e;
	sigset_t during;
	int rc = sigchld_only_in_ppoll(&during);
	if (rc) {
		setup_fail(&e, -rc, "signals: SIGCHLD");
		report_setup_failed(p->report_w, &e);
		_exit(1);
	}
	for (;;) {
		char c;
		ssize_t n;
		while ((n = read(p->life_r, &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			_exit(0); /* the session is over: the kernel ends the rest */
		int fd = -1;
		pid_t pid = spawn_clone(0, &fd);
		if (pid < 0) {
			setup_fail(&e, -pid, "start the session interpreter");
			report_setup_failed(p->report_w, &e);
			continue;
		}
		if (pid == 0) {
			sigprocmask(SIG_SETMASK, &during, NULL);
			signal(SIGCHLD, SIG_DFL);
			inside_main(p);
		}
		close(fd);
		int main_status = 0;
		bool done = false;
		while (!done) {
			int ws;
			pid_t r;
			while ((r = waitpid(-1, &ws, WNOHANG)) > 0) {
				if (r == pid) {
					main_status = ws;
					done = true;
				}
			}
			if (done)
				break;
			struct pollfd pf = {.fd = p->life_r, .events = POLLIN};
			if (ppoll(&pf, 1, NULL, &during) == 1 && pf.revents) {
				/* EOF (or a byte out of turn): the host is gone
				 * or closed the session mid-call. */
				kill(-1, SIGKILL);
				_exit(0);
			}
		}
		/* The interpreter's state is gone with it: so is what it left
		 * running. Then every child is reaped before the report: once
		 * the supervisor reads it, nothing in the sandbox reads the
		 * request pipe (init never does). What is left there the
		 * supervisor throws away before it asks for the next
		 * interpreter (session_io.c), not init here: a request written
		 * after init emptied the pipe and before the report was read
		 * would stay for the next interpreter, which the supervisor
		 * gives that request again: one call, run twice. */
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
		struct rusage ru;
		getrusage(RUSAGE_CHILDREN, &ru);
		report_exited(p->report_w, main_status, &ru);
	}
}

/* init's steps up to a built sandbox, shared by every kind of init. */
static int init_build(const struct plan *p, struct setup_error *e)
{
	const struct jail_spec *s = p->s;
	int rc;

	/* Die with the supervisor (a warm run's: with the zygote, which dies
	 * with the host). (A supervisor that died before this line is caught
	 * by wait_for_go: its end of the life pipe is closed.) Init's death
	 * then ends the whole namespace. A session's or a zygote's sandbox
	 * outlives the thread that made it: its life pipe or socket stands in. */
	if (!s->session && !s->zygote && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	/* The application's signal mask and handlers are not init's. */
	if ((rc = child_reset_signals()))
		return setup_fail(e, -rc, "signals: reset");
	/* Into the run's cgroups (v1) while the host's cgroupfs is in view,
	 * before anything is charged or forked (a warm run: through the
	 * files the host opened). */
	if ((rc = cgroup_join_self(s->join_cgroups, e)))
		return rc;
	for (int i = 0; i < s->n_join_cgroup_fds; i++)
		if ((rc = write_full(s->join_cgroup_fds[i], "0", 1)))
			return setup_fail(e, -rc, "cgroup: join");
	/* A warm run's network, ipc and uts namespaces, made ahead by the
	 * zygote (jail_warm_prepare_ns) and joined here, before anything
	 * uses them. */
	for (int i = 0; s->warm_child && i < 3; i++)
		if (s->spare_ns[i] >= 0 && setns(s->spare_ns[i], spare_ns_types[i]) < 0)
			return setup_fail(e, errno, "join the run's %s namespace",
					  spare_ns_names[i]);
	int keep[] = {p->out_w, p->err_w, p->report_w, p->life_r, p->req_r, p->rep_w,
		      s->warm_child ? s->code_fd : -1};
	/* A copy of every fd the supervisor's process had (another thread's
	 * run, a server socket; in a warm run, the zygote's socket) must not
	 * stay open in here. */
	close_fds_except(keep, 7);

	/* A caller that changed uids is not dumpable, which makes its
	 * /proc/self files root's and the map unwritable: nothing runs in
	 * here yet, so being dumpable for the next three writes is safe. */
	if (s->userns) {
		prctl(PR_SET_DUMPABLE, 1);
		if ((rc = userns_map_self(s->outer_uid, s->outer_gid, e)))
			return rc;
	}
	/* init holds a copy of the supervisor's memory: a program sharing its
	 * uid (the user-namespace case) must not read it through ptrace or
	 * /proc/1/mem; and its command line, which anyone in the namespace can
	 * read, is the application's. (A warm run's init is a copy of the
	 * zygote, whose command line and environment are the run's own and
	 * which its program process inherits: left as they are.) */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return setup_fail(e, errno, "prctl dumpable");
	if (!s->warm_child)
		child_scrub_args_and_env();
	/* A session keyring of its own: the caller's (and the secrets in it)
	 * is out of reach even before the filter denies keyctl. */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		return setup_fail(e, errno, "keyring: join a new session keyring");
	/* A session of its own: no controlling terminal to inject keystrokes
	 * into (TIOCSTI) or to send signals to the caller's job. */
	if (setsid() < 0)
		return setup_fail(e, errno, "setsid");
	if (sethostname("sandbox", 7) < 0)
		return setup_fail(e, errno, "uts namespace: sethostname");
	if ((rc = mount_make_private(e)) || (rc = s->setup_root(s, e)))
		return rc;
	if ((rc = init_install_stop_handler()))
		return setup_fail(e, -rc, "signals: stop handler");
	return 0;
}

/* Joined to the run's cgroup by now: root the program's view of cgroups
 * there, so /proc/self/cgroup shows no host path. */
static int init_cgroup_ns(const struct jail_spec *s, struct setup_error *e)
{
	if (s->cgroup_ns && unshare(CLONE_NEWCGROUP) < 0)
		return setup_fail(e, errno, "cgroup namespace: unshare");
	return 0;
}

/* The zygote's sandbox's init, once the view is built. */
__attribute__((noreturn)) static void zygote_init(const struct plan *p)
{
	struct setup_error e;
	int rc;
	/* The kernel's knobs stay the host's: the zygote is root in the host's
	 * user namespace, and /proc/sys and sysrq are writable by root. (Each
	 * run mounts a /proc of its own, whose init never writes there.) */
	struct stat st;
	bool sysrq = lstat("/proc/sysrq-trigger", &st) == 0; /* a kernel option */
	if ((rc = mount_bind("/proc/sys", "/proc/sys", &e)) ||
	    (rc = mount_tree_readonly("/proc/sys", &e)) ||
	    (sysrq && ((rc = mount_bind("/proc/sysrq-trigger", "/proc/sysrq-trigger", &e)) ||
		       (rc = mount_tree_readonly("/proc/sysrq-trigger", &e)))))
		goto fail;
	/* A throwaway first child, so the zygote is not pid 2: every run's
	 * program is pid 2 of its own namespace, and code that notices a fork
	 * by a change of pid (OpenSSL's random generator, tempfile's names)
	 * must see one between the zygote and a run. */
	int fd = -1;
	pid_t pid = spawn_clone(0, &fd);
	if (pid == 0)
		_exit(0);
	if (pid < 0) {
		setup_fail(&e, -pid, "fork");
		goto fail;
	}
	siginfo_t si;
	spawn_reap(fd, &si);
	close(fd);
	if ((pid = spawn_clone(0, &fd)) < 0) {
		setup_fail(&e, -pid, "fork the zygote");
		goto fail;
	}
	if (pid == 0)
		inside_main(p);
	close(fd);
	close(p->out_w);
	/* Until the zygote ends, or the host does (the life pipe's EOF: the
	 * zygote notices a closed socket only when it reads it, and a stopped
	 * or importing zygote does not read). */
	sigset_t during;
	if (sigchld_only_in_ppoll(&during)) {
		kill(-1, SIGKILL);
		_exit(1);
	}
	for (;;) {
		int ws;
		pid_t r;
		while ((r = waitpid(-1, &ws, WNOHANG)) > 0)
			if (r == pid) {
				struct rusage ru;
				getrusage(RUSAGE_CHILDREN, &ru);
				report_exited(p->report_w, ws, &ru);
				_exit(0); /* the kernel ends the rest */
			}
		struct pollfd pf = {.fd = p->life_r, .events = POLLIN};
		if (ppoll(&pf, 1, NULL, &during) == 1 && pf.revents) {
			kill(-1, SIGKILL);
			_exit(0);
		}
	}
fail:
	report_setup_failed(p->report_w, &e);
	_exit(1);
}

__attribute__((noreturn)) static void init_main(const struct plan *p)
{
	const struct jail_spec *s = p->s;
	struct setup_error e;

	if (init_build(p, &e))
		goto fail;
	if (s->session) {
		if (init_cgroup_ns(s, &e))
			goto fail;
		/* Built: the supervisor's start waits for this. */
		static const struct sandbox_report ready = {.kind = REPORT_READY};
		if (write_full(p->report_w, &ready, sizeof ready))
			_exit(1);
		session_init_loop(p);
	}
	if (!wait_for_go(p->life_r))
		_exit(1);
	if (init_cgroup_ns(s, &e))
		goto fail;
	if (s->zygote)
		zygote_init(p);

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

/* The signals whose handling CPython sets up at start: SIGINT raises
 * KeyboardInterrupt, SIGPIPE and SIGXFSZ are ignored (errors instead). */
static const int python_signals[3] = {SIGINT, SIGPIPE, SIGXFSZ};

/* A warm run's init (jail_warm_spawn): as init_main, but the program's
 * process returns (0) to the zygote's Python instead of exec'ing. Never
 * returns in init. */
static int init_main_no_exec(const struct plan *p)
{
	struct setup_error e;
	if (init_build(p, &e) || init_cgroup_ns(p->s, &e))
		goto fail;
	close(p->s->code_fd); /* written to the workspace */
	/* _Fork, not a raw clone: the program's process goes on running
	 * Python, and glibc's own record of the thread (its tid, which
	 * raise() and abort() use) must be this process's. It runs no atfork
	 * handler and takes no lock: init is single-threaded. */
	pid_t pid = _Fork();
	if (pid < 0) {
		setup_fail(&e, errno, "fork the program");
		goto fail;
	}
	if (pid == 0) {
		int report = p->report_w;
		for (int i = 0; i < 3; i++)
			sigaction(python_signals[i], &p->python_sigs[i], NULL);
		if (inside_prepare(p, &report, &e)) {
			report_setup_failed(report, &e);
			_exit(127);
		}
		/* No exec to close them: every fd above stdio goes now (the
		 * report pipe too: the program must not forge its result). */
		if (close_range(3, ~0U, 0) < 0)
			_exit(127);
		return 0;
	}
	close(p->out_w);
	close(p->err_w);
	init_wait_and_report(pid, p->report_w);
fail:
	report_setup_failed(p->report_w, &e);
	_exit(1);
}

int jail_warm_prepare_ns(int fds[3])
{
	static int own[3] = {-1, -1, -1}; /* the zygote's own, to go back to */
	static const char *const paths[3] = {"/proc/self/ns/net", "/proc/self/ns/ipc",
					     "/proc/self/ns/uts"};
	int rc = 0;
	for (int i = 0; i < 3; i++) {
		fds[i] = -1;
		if (own[i] < 0 && (own[i] = open(paths[i], O_RDONLY | O_CLOEXEC)) < 0)
			return -errno;
	}
	if (unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		return -errno;
	for (int i = 0; i < 3 && !rc; i++)
		if ((fds[i] = open(paths[i], O_RDONLY | O_CLOEXEC)) < 0)
			rc = -errno;
	/* Back to its own: the zygote itself never stays in a run's. */
	for (int i = 0; i < 3; i++)
		if (setns(own[i], spare_ns_types[i]) < 0)
			_exit(125); /* a zygote in the wrong namespace must not go on */
	if (rc)
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
	return rc;
}

pid_t jail_warm_spawn(const struct jail_spec *s, int out_w, int err_w, int report_w, int *pidfd)
{
	struct plan p = {
		.s = s,
		.limits = s->cfg->limits,
		.out_w = out_w,
		.err_w = err_w,
		.report_w = report_w,
		.life_r = -1,
		.req_r = -1,
		.rep_w = -1,
	};
	for (int i = 0; i < 3; i++)
		sigaction(python_signals[i], NULL, &p.python_sigs[i]);
	unsigned long flags = base_namespaces;
	for (int i = 0; i < 3; i++)
		if (s->spare_ns[i] >= 0)
			flags &= ~(unsigned long)spare_ns_types[i];
	pid_t pid = s->into_cgroup ? spawn_clone_into_cgroup(flags, s->cgroup_fd, pidfd)
				   : spawn_clone(flags, pidfd);
	if (pid == 0)
		return init_main_no_exec(&p);
	return pid;
}

/* ---- supervisor side ---- */

/* Clones a sandbox's init into new namespaces (a user namespace too when
 * not root), born in the run's v2 cgroup where the spec has one;
 * init_main(p) in the child. Returns the pid, or -errno with err naming the
 * namespace this machine refuses. */
static pid_t clone_init(const struct plan *p, int *pidfd, struct aj_error *err)
{
	const struct jail_spec *s = p->s;
	unsigned long flags = base_namespaces | (s->userns ? CLONE_NEWUSER : 0);
	pid_t pid = s->into_cgroup ? spawn_clone_into_cgroup(flags, s->cgroup_fd, pidfd)
				   : spawn_clone(flags, pidfd);
	if (pid == 0)
		init_main(p);
	/* clone names no culprit when it fails: find out which namespace this
	 * machine refuses. */
	if (pid < 0 && ns_probe(flags, err) == 0)
		error_set(err, pid, "clone: %s", errno_name(-pid));
	return pid;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int jail_run(const struct jail_spec *s, struct aj_result *res)
{
	struct plan p = {
		.s = s,
		.limits = s->cfg->limits,
		.req_r = -1,
		.rep_w = -1,
		/* main.py through the launcher, as `python3 -I -u main.py`
		 * but for a MemoryError's exit code (src/core/launch.py). */
		.argv = {(char *)s->python, "-I", "-u", "-c", (char *)launch_py, NULL},
	};
	memcpy(p.envp, contract_environment, sizeof contract_environment); /* rule E1 */
	struct aj_error err = {0};
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, rep[2] = {-1, -1}, life[2] = {-1, -1};
	int pidfd = -1;
	int rc;

	if ((rc = pipe_cloexec(out, 1)) || (rc = pipe_cloexec(errp, 1)) ||
	    (rc = pipe_cloexec(rep, 1)) || (rc = pipe_cloexec(life, 0))) {
		result_sandbox_error(res, "pipes: %s", errno_name(-rc));
		goto done;
	}
	p.out_w = out[1];
	p.err_w = errp[1];
	p.report_w = rep[1];
	p.life_r = life[0];

	double start = now_ms();
	pid_t pid = clone_init(&p, &pidfd, &err);
	if (pid < 0) {
		rc = pid;
		result_sandbox_error(res, "%s", err.message);
		goto done;
	}
	close_fd(&out[1]);
	close_fd(&errp[1]);
	close_fd(&rep[1]);
	close_fd(&life[0]);

	if (write_full(life[1], "g", 1) != 0) {
		/* init is gone already; supervise() reports how. */
	}

	struct supervised sv = {.pid = pid, .pidfd = pidfd, .out_fd = out[0], .err_fd = errp[0],
				.report_fd = rep[0], .cancel_fd = s->cancel_fd, .start_ms = start,
				.cgroup = s->cgroup};
	rc = supervise_run(&sv, &s->cfg->limits, res);
done:
	close_fd(&pidfd);
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&errp[i]);
		close_fd(&rep[i]);
		close_fd(&life[i]);
	}
	return rc;
}

/* ---- warm mode: the zygote's sandbox, supervisor side ---- */

int jail_zygote_start(const struct jail_spec *s, const char *zygote_py, struct jail_zygote *z,
		      struct aj_error *err)
{
	struct plan p = {
		.s = s,
		.limits = s->cfg->limits,
		.req_r = s->zygote_fd,
		.rep_w = s->helper_fd,
		.argv = {(char *)s->python, "-I", "-u", "-c", (char *)zygote_py,
			 (char *)(s->preload ? s->preload : ""), NULL},
	};
	memcpy(p.envp, contract_environment, sizeof contract_environment); /* rule E1 */
	int log[2] = {-1, -1}, rep[2] = {-1, -1}, life[2] = {-1, -1};
	int rc;

	memset(z, 0, sizeof *z);
	z->pidfd = z->log_r = z->report_r = z->life_w = -1;
	if ((rc = pipe_cloexec(log, 1)) || (rc = pipe_cloexec(rep, 1)) ||
	    (rc = pipe_cloexec(life, 0))) {
		error_set(err, rc, "warm: pipes: %s", errno_name(-rc));
		goto done;
	}
	/* The zygote's stdout and stderr are one pipe: what it says before it
	 * is ready (an import that failed) goes into the host's error. */
	p.out_w = p.err_w = log[1];
	p.report_w = rep[1];
	p.life_r = life[0];
	pid_t pid = clone_init(&p, &z->pidfd, err);
	if (pid < 0) {
		rc = pid;
		goto done;
	}
	z->pid = pid;
	/* Its init starts the zygote at once: nothing to wait for. The pipe
	 * stays open: its EOF (the host gone) ends the zygote's sandbox. */
	if ((rc = write_full(life[1], "g", 1))) {
		error_set(err, rc, "warm: the zygote's sandbox ended while it was being built");
		goto done;
	}
	z->log_r = log[0];
	z->report_r = rep[0];
	z->life_w = life[1];
	log[0] = rep[0] = life[1] = -1;
done:
	for (int i = 0; i < 2; i++) {
		close_fd(&log[i]);
		close_fd(&rep[i]);
		close_fd(&life[i]);
	}
	if (rc && z->pidfd >= 0) {
		pidfd_send_signal(z->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		while (waitid(P_PIDFD, (id_t)z->pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
		close_fd(&z->pidfd);
	}
	return rc;
}

/* ---- sessions, supervisor side ---- */

/* How long building a session's sandbox may take before it is refused. */
#define SESSION_START_MS 30000

/* Waits for init's first report: ready, or the protection it could not
 * apply. */
static int wait_ready(struct jail_session *js, struct aj_error *err)
{
	double until = now_ms() + SESSION_START_MS;
	for (;;) {
		struct pollfd p[2] = {{.fd = js->report_r, .events = POLLIN},
				      {.fd = js->pidfd, .events = POLLIN}};
		int n = poll(p, 2, (int)(until - now_ms()) > 0 ? (int)(until - now_ms()) : 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return error_set(err, -ETIMEDOUT, "session: the sandbox was not built "
							  "within %d s", SESSION_START_MS / 1000);
		struct sandbox_report r;
		ssize_t got = read(js->report_r, &r, sizeof r);
		if (got == (ssize_t)sizeof r && r.kind == REPORT_READY)
			return 0;
		if (got == (ssize_t)sizeof r && r.kind == REPORT_SETUP_FAILED) {
			r.message[sizeof r.message - 1] = '\0';
			return error_set(err, -EPERM, "%s", r.message);
		}
		if (got < 0 && errno == EAGAIN && !(p[1].revents & POLLIN))
			continue;
		return error_set(err, -EPIPE, "session: the sandbox's init ended while it was "
					      "being built");
	}
}

int jail_session_start(const struct jail_spec *s, struct jail_session *js, struct aj_error *err)
{
	struct plan p = {
		.s = s,
		.limits = s->cfg->limits,
		.argv = {(char *)s->python, "-I", "-u", "-c", (char *)session_repl_py, NULL},
	};
	memcpy(p.envp, contract_environment, sizeof contract_environment); /* rule E1 */
	/* The interpreter's hard CPU limit is the session's total; it moves
	 * the soft limit to each call's share itself (repl.py). */
	p.limits.cpu_sec = s->cfg->session.cpu_sec;
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, rep[2] = {-1, -1}, life[2] = {-1, -1},
	    req[2] = {-1, -1}, ans[2] = {-1, -1};
	int rc;

	memset(js, 0, sizeof *js);
	js->pidfd = -1;
	js->req_drain = -1;
	if ((rc = pipe_cloexec(out, 1)) || (rc = pipe_cloexec(errp, 1)) ||
	    (rc = pipe_cloexec(rep, 1)) || (rc = pipe_cloexec(life, 0)) ||
	    (rc = pipe_cloexec(req, 0)) || (rc = pipe_cloexec(ans, 1))) {
		error_set(err, rc, "session: pipes: %s", errno_name(-rc));
		goto fail;
	}
	/* The host never blocks writing a request: the supervisor's loop
	 * writes what the pipe takes while it keeps the clock. */
	if (fcntl(req[1], F_SETFL, O_NONBLOCK) < 0) {
		rc = error_set(err, -errno, "session: pipes: %s", errno_name(errno));
		goto fail;
	}
	p.out_w = out[1];
	p.err_w = errp[1];
	p.report_w = rep[1];
	p.life_r = life[0];
	p.req_r = req[0];
	p.rep_w = ans[1];
	pid_t pid = clone_init(&p, &js->pidfd, err);
	if (pid < 0) {
		rc = pid;
		goto fail;
	}
	js->pid = pid;
	js->out_r = out[0];
	js->err_r = errp[0];
	js->report_r = rep[0];
	js->life_w = life[1];
	js->req_w = req[1];
	js->rep_r = ans[0];
	out[0] = errp[0] = rep[0] = life[1] = req[1] = ans[0] = -1;
	/* The host's own read side of the request pipe, to empty it between
	 * interpreters. Opened anew through /proc, so that O_NONBLOCK is this
	 * description's alone: set on req[0] it would reach the interpreter's
	 * fd 3, whose reads must block. */
	char self_fd[40];
	snprintf(self_fd, sizeof self_fd, "/proc/self/fd/%d", req[0]);
	js->req_drain = open(self_fd, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (js->req_drain < 0) {
		rc = error_set(err, -errno, "session: pipes: reopen the request pipe: %s",
			       errno_name(errno));
		goto fail;
	}
	if ((rc = wait_ready(js, err)))
		goto fail;
fail:
	/* The child's ends (and, on failure, ours not yet handed over). */
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&errp[i]);
		close_fd(&rep[i]);
		close_fd(&life[i]);
		close_fd(&req[i]);
		close_fd(&ans[i]);
	}
	if (rc)
		jail_session_end(js);
	return rc;
}

void jail_session_end(struct jail_session *js)
{
	if (js->pidfd >= 0) {
		/* init's death takes the namespace, every process and mount of
		 * the session with it. */
		pidfd_send_signal(js->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		while (waitid(P_PIDFD, (id_t)js->pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
	}
	close_fd(&js->pidfd);
	close_fd(&js->req_drain);
	if (js->pid) {
		close_fd(&js->out_r);
		close_fd(&js->err_r);
		close_fd(&js->report_r);
		close_fd(&js->life_w);
		close_fd(&js->req_w);
		close_fd(&js->rep_r);
	}
	js->pid = 0;
}
