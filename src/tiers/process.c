/* The process tier: the seed article's restricted subprocess, hardened. It
 * is the jail engine (src/linux/jail.c, whose theory of operation this
 * repeats in brief) with the host's own filesystem, read-only, as its view.
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
 * session keyring; a passwd and group of its own (root, nobody, its uid as
 * "sandbox"), read-only over the host's, which name the host's users. What people keep private by habit is covered with an
 * empty read-only tmpfs even where its mode is world-readable: /home, /root,
 * /run/user, /var/mail, /srv, /mnt, /media, the directory agentjail was
 * started from (unless it is the system's, or holds the interpreter), and
 * /sys (the host's devices and kernel state; no tier shows them). The
 * host's /tmp, /var/tmp and /dev/shm, where other users' temporary files
 * are, are the run's own tmpfs. Elsewhere the program can read what the
 * host lets any user read (the container tier shows only its image).
 *
 * Started by a normal user there is no other uid to run as: the program has
 * the caller's uid inside a user namespace, so it could read the caller's
 * own files. The caller's $HOME is covered too, wherever it is; a file the
 * caller owns elsewhere stays readable. Run as root for a uid of the run's
 * own.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../linux/binds.h"
#include "../linux/creds.h"
#include "../linux/jail.h"
#include "../linux/mounts.h"
#include "../linux/ns.h"
#include "../linux/session_io.h"
#include "../linux/stream_hooks.h"
#include "../warm/warm.h"
#include "egress_pair.h"
#include "tier.h"

/* What the process tier's view needs besides the spec. */
struct host_view {
	char home[256];         /* the caller's $HOME, hidden in user-namespace mode */
	char cwd[256];          /* the caller's working directory, hidden */
};

/* Where people keep what is theirs, world-readable or not by habit: each is
 * covered with an empty read-only tmpfs, for every run (root or not). /sys
 * too: the host's devices, firmware and kernel state are no program's
 * business, and no other tier shows them. */
static const char *const private_places[] = {"/home", "/root", "/run/user", "/var/mail",
					      "/srv",  "/mnt",  "/media",    "/sys"};

/* A real directory (not a symlink, which mount would follow) that exists. */
static bool is_plain_dir(const char *path)
{
	struct stat st;
	return path[0] && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
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

/* The filesystem view, in the order it is built: the host's, read-only. */
static int host_setup_root(const struct jail_spec *s, struct setup_error *e)
{
	const struct host_view *v = s->tier;
	const char *py = s->python;
	struct bind_trees binds;
	int rc;

	/* The deployer's paths first: one may lie in a place hidden below. */
	if ((rc = binds_open(s->cfg, &binds, e)))
		goto fail;
	if ((rc = mount_tree_readonly("/", e)))
		goto fail;
	for (size_t i = 0; i < sizeof private_places / sizeof private_places[0]; i++)
		if ((rc = hide_if_present(private_places[i], py, e)))
			goto fail;
	/* The directory agentjail was started from (a project, with its
	 * keys and data), and, sharing the caller's uid in a user namespace,
	 * the caller's $HOME wherever it is. */
	if ((rc = hide_if_present(v->cwd, py, e)) ||
	    (s->userns && (rc = hide_if_present(v->home, py, e))))
		goto fail;
	if ((rc = binds_attach("", s->cfg, &binds, e)))
		return rc;
	return jail_populate_root(s, "", e);
fail:
	binds_close(&binds);
	return rc;
}

/* A directory of the caller's (its $HOME, its cwd), if hiding it cannot hide
 * the system: an absolute path of its own, not /, and not above the
 * interpreter or the libraries. */
static void caller_dir(char *out, size_t n, const char *h, const char *python)
{
	static const char *const system_dirs[] = {"/usr/", "/lib", "/bin/", "/sbin/", "/etc/",
						  "/proc/", "/dev/", "/sys/", "/tmp/"};
	out[0] = '\0';
	if (!h || h[0] != '/' || strlen(h) < 2 || strlen(h) >= n || strstr(h, ".."))
		return;
	size_t hl = strlen(h);
	for (size_t i = 0; i < sizeof system_dirs / sizeof system_dirs[0]; i++)
		if (strncmp(system_dirs[i], h, hl) == 0 ||
		    strncmp(h, system_dirs[i], strlen(system_dirs[i])) == 0)
			return;
	if (strncmp(python, h, hl) == 0)
		return;
	/* Not a top-level directory (/var, /opt, /run): the system's, too. */
	if (!strchr(h + 1, '/'))
		return;
	memcpy(out, h, hl + 1);
}

/* The spec and view every sandbox of this tier shares (a zygote's too). */
static void process_spec_view(const struct aj_config *cfg, struct jail_spec *s,
			      struct host_view *view)
{
	*s = (struct jail_spec){
		.cfg = cfg,
		.cancel_fd = -1,
		.python = cfg->python,
		.userns = geteuid() != 0,
		/* No cgroup in this tier: the address space is the limit. */
		.address_space_limit = true,
		/* The view is the host's, whose passwd and group name its users. */
		.own_users = true,
		.outer_uid = geteuid(),
		.outer_gid = getegid(),
		.setup_root = host_setup_root,
		.tier = view,
		.egress_fd = -1,
	};
	view->home[0] = '\0';
	if (s->userns)
		caller_dir(view->home, sizeof view->home, getenv("HOME"), cfg->python);
	char cwd[256];
	caller_dir(view->cwd, sizeof view->cwd, getcwd(cwd, sizeof cwd), cfg->python);
}

/* The run's spec, uid and view: everything but the code. */
static int process_spec(const struct aj_config *cfg, struct jail_spec *s, struct host_view *view,
			struct uid_slot *slot, struct aj_error *err)
{
	process_spec_view(cfg, s, view);
	if (s->userns) {
		s->uid = s->outer_uid;
		s->gid = s->outer_gid;
		return 0;
	}
	int rc = slot_acquire(cfg, slot, err);
	s->uid = slot->uid;
	s->gid = slot->gid;
	return rc;
}

/* Warm mode's state (cfg.warm): the zygote, in the same view as a cold
 * run's. */
struct process_state {
	struct host_view view;
	struct warm warm;
};

static int process_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		       struct aj_result *res)
{
	struct process_state *ps = state;
	struct host_view view;
	struct jail_spec s;
	struct uid_slot slot = {.lock_fd = -1};
	struct aj_error err = {0};
	int rc;

	if ((rc = process_spec(cfg, &s, &view, &slot, &err))) {
		result_sandbox_error(res, "%s", err.message);
		return rc;
	}
	s.code = req->code;
	s.code_len = req->len;
	s.cancel_fd = req->cancel_fd;
	s.stream = supervisor_stream_of(req->tap);
	if ((rc = egress_pair_open(req->egress, &s.egress_fd, &err)))
		result_sandbox_error(res, "%s", err.message);
	else
		rc = ps ? warm_run(&ps->warm, &s, res) : jail_run(&s, res);
	if (s.egress_fd >= 0)
		close(s.egress_fd);
	slot_release(&slot);
	return rc;
}

/* A session: the same sandbox, kept with its uid slot until it closes. */
struct process_session {
	struct jail_session js;
	struct uid_slot slot;
	struct host_view view;
};

static int process_session_open(void *state, const struct aj_config *cfg,
				struct egress_proxy *egress, void **out,
				struct aj_error *err)
{
	(void)state;
	struct process_session *ps = calloc(1, sizeof *ps);
	if (!ps)
		return error_set(err, -ENOMEM, "session: out of memory");
	ps->slot.lock_fd = -1;
	struct jail_spec s;
	int rc = process_spec(cfg, &s, &ps->view, &ps->slot, err);
	if (!rc && !(rc = egress_pair_open(egress, &s.egress_fd, err))) {
		rc = jail_session_start(&s, &ps->js, err);
		if (s.egress_fd >= 0)
			close(s.egress_fd);
	}
	if (rc) {
		slot_release(&ps->slot);
		free(ps);
		return rc;
	}
	*out = ps;
	return 0;
}

static int process_session_call(void *session, const struct aj_config *cfg,
				const struct session_call *call, struct aj_result *res,
				struct session_answer *ans)
{
	struct process_session *ps = session;
	return jail_session_call(&ps->js, &cfg->limits, call, res, ans);
}

static void process_session_close(void *session)
{
	struct process_session *ps = session;
	if (!ps)
		return;
	jail_session_end(&ps->js);
	slot_release(&ps->slot);
	free(ps);
}

static int process_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	if (access(cfg->python, X_OK) < 0)
		return error_set(err, -errno, "python: %s: %s", cfg->python, errno_name(errno));
	if (!cfg->warm)
		return 0;
	/* The zygote makes each run's namespaces and gives it a uid of its
	 * own: both need root. */
	if (geteuid() != 0)
		return error_set(err, -EPERM, "warm: needs root, for the zygote to give each run "
					      "its own namespaces and uid (running as uid %u)",
				 (unsigned)geteuid());
	struct process_state *ps = calloc(1, sizeof *ps);
	if (!ps)
		return error_set(err, -ENOMEM, "open: out of memory");
	struct jail_spec base;
	process_spec_view(cfg, &base, &ps->view);
	base.preload = cfg->preload;
	warm_init(&ps->warm, &base);
	/* Started now, so that a preload that cannot be imported refuses the
	 * open rather than every run. */
	int rc = warm_prestart(&ps->warm, err);
	if (rc) {
		warm_destroy(&ps->warm);
		free(ps);
		return rc;
	}
	*state = ps;
	return 0;
}

static void process_close(void *state)
{
	struct process_state *ps = state;
	if (!ps)
		return;
	warm_destroy(&ps->warm);
	free(ps);
}

static int process_check(const struct aj_config *cfg, struct aj_error *err)
{
	unsigned long flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
			      CLONE_NEWUTS | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
	int rc;
	/* Which namespace this machine refuses, by name, before a trial run
	 * could only say that clone failed. */
	if (access(cfg->python, X_OK) < 0)
		return error_set(err, -errno, "python: %s: %s", cfg->python, errno_name(errno));
	if ((rc = ns_probe(flags, err)))
		return rc;
	return tier_trial_run(&process_tier, cfg, err);
}

/* The run sees the host's own tree (read-only, parts hidden). */
static int process_view_root(const struct aj_config *cfg, char *out, size_t n,
			     struct aj_error *err)
{
	(void)cfg, (void)err;
	snprintf(out, n, "/");
	return 0;
}

const struct tier_ops process_tier = {
	.name = "process",
	.check = process_check,
	.open = process_open,
	.run = process_run,
	.close = process_close,
	.session_open = process_session_open,
	.session_call = process_session_call,
	.session_close = process_session_close,
	.view_root = process_view_root,
};
