/* The process tier: the seed article's restricted subprocess, hardened. It
 * is the jail engine (src/linux/jail_plan.c, whose theory of operation this
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
 * What the program sees (src/linux/host_root.c): an allow-list of the
 * host's files on a root of its own, as isolate and bubblewrap build
 * theirs. The host's /usr (and the merged-/usr links /bin, /sbin, /lib*),
 * a few /etc files (ld.so.cache, localtime, ssl, alternatives) and, where
 * the interpreter lies elsewhere, its prefix, all read-only and nosuid; its
 * own /etc/passwd, group, hosts and nsswitch.conf; a /dev of its own (null,
 * zero, full, random, urandom, a private devpts); one size-limited tmpfs
 * providing /tmp, /var/tmp, /dev/shm and the workspace /tmp/work (cwd and
 * HOME); a /proc of its own pid namespace; a network namespace with only a
 * down loopback; hostname "sandbox"; a fresh session keyring. Nothing else:
 * not the directory agentjail was started from or its parent, not /home,
 * /root, /opt, /var, /srv, /sys or another checkout's sources, whatever
 * their modes. A deployer adds a host path on purpose with --ro-bind.
 *
 * Started by a normal user there is no other uid to run as: the program has
 * the caller's uid inside a user namespace, with the same view, so of the
 * caller's own files it reaches only those under the view's few paths. Run
 * as root for a uid of the run's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/pool.h"
#include "../linux/creds.h"
#include "../linux/host_root.h"
#include "../linux/jail.h"
#include "../linux/ns.h"
#include "../linux/session_io.h"
#include "../linux/stream_hooks.h"
#include "../warm/warm.h"
#include "egress_pair.h"
#include "tier.h"

/* The filesystem view: an allow-list on a root of the run's own, built and
 * pivoted into by host_root_build. */
static int host_setup_root(const struct jail_spec *s, struct setup_error *e)
{
	return host_root_build(s, s->tier, e);
}

/* The spec and view every sandbox of this tier shares (a zygote's too). */
static int process_spec_view(const struct aj_config *cfg, struct jail_spec *s,
			     struct host_root *view, struct aj_error *err)
{
	*s = (struct jail_spec){
		.cfg = cfg,
		.cancel_fd = -1,
		.python = cfg->python,
		.userns = geteuid() != 0,
		/* No cgroup in this tier: the address space is the limit. */
		.address_space_limit = true,
		/* The run's own passwd and group: written into the view's /etc
		 * (host_root.c), and over it for each warm run, whose uid is
		 * not the zygote's. */
		.own_users = true,
		.outer_uid = geteuid(),
		.outer_gid = getegid(),
		.setup_root = host_setup_root,
		.tier = view,
		.egress_fd = -1,
	};
	return host_root_prepare(view, cfg->python, err);
}

/* The run's spec, uid and view: everything but the code. */
static int process_spec(const struct aj_config *cfg, struct jail_spec *s, struct host_root *view,
			struct uid_slot *slot, struct aj_error *err)
{
	int rc = process_spec_view(cfg, s, view, err);
	if (rc)
		return rc;
	if (s->userns) {
		s->uid = s->outer_uid;
		s->gid = s->outer_gid;
		return 0;
	}
	rc = slot_acquire(cfg, slot, err);
	s->uid = slot->uid;
	s->gid = slot->gid;
	return rc;
}

/* A cold run's network, ipc and uts namespaces, made ahead (root only: a
 * namespace the host owns is joined by an init of the host's user
 * namespace, never by one in a user namespace of its own). Two are kept:
 * from the third run of an open sandbox on, runs one after another each
 * find one ready, and the filler makes the next while the program runs. */
#define SPARE_NS 2

static int spare_make(void *ctx, void *item)
{
	(void)ctx;
	return jail_spare_ns_make(item);
}

static void spare_destroy(void *ctx, void *item)
{
	(void)ctx;
	int *fds = item;
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static const struct pool_ops spare_ops = {
	.item_size = 3 * sizeof(int),
	.size = SPARE_NS,
	.make = spare_make,
	.destroy = spare_destroy,
	.retry_ms = 1000,
	.block_signals = true,
};

/* A cold run's whole sandbox made ahead (jail_run_prepare): its init has
 * built the namespaces, the view and the workspace and waits for the
 * program, on a uid slot of its own. Root, no egress (a run with egress
 * joins its proxy in init before the program starts: those take spare
 * namespaces instead) and at least 4 x READY_RUNS slots only. Two are kept, as spare namespaces are; one
 * that waited READY_MAX_AGE_MS is made again, so that a view bound from
 * the host's files is never old (a file the host replaced since, such as
 * /etc/ld.so.cache after ldconfig, is bound anew). */
#define READY_RUNS 2
#define READY_MAX_AGE_MS 60000.0

struct ready_run {
	struct jail_ready r;    /* cold */
	struct warm_ready w;    /* warm: its init forked from the zygote */
	struct uid_slot slot;
	double made_ms;
};

/* An open sandbox's state: warm mode's zygote (cfg.warm), in the same
 * view as a cold run's; or, cold and root, runs made ahead (no egress) or
 * spare namespaces (egress). */
struct process_state {
	struct host_root view;
	const struct aj_config *cfg; /* the sandbox's, which outlives this */
	bool warm;
	struct warm zygote;
	bool ahead;             /* runs made ahead, not spare namespaces */
	struct pool spare;
	int spare_items[SPARE_NS][3];
	struct pool ready;
	struct ready_run ready_items[READY_RUNS];
	bool ran;               /* a run has ended: more are likely */
	unsigned long served;   /* runs that took a sandbox made ahead */
	/* The launcher compiled by the sandbox's interpreter (launcher_compile),
	 * once, by the filler thread; set once and read by every run after. */
	bool pyc_tried;
	unsigned char *pyc;
	size_t pyc_len;
};

/* Compiles the launcher with the sandbox's own interpreter (its bytecode and
 * magic are that interpreter's: another Python refuses a .pyc not its own),
 * as `python3 -I -S`: no site, so no .pth file of the host runs. The .pyc's
 * bytes: its magic, 12 bytes of flags and stamp the interpreter does not
 * read for a script, the marshalled code. 0, or -1 (runs then pass the
 * source, as before). */
static int launcher_compile(const char *python, unsigned char **out, size_t *len)
{
	static const char script[] =
		"import sys, marshal, importlib.util as u\n"
		"src = sys.stdin.buffer.read()\n"
		"code = compile(src, '<agentjail launcher>', 'exec', dont_inherit=True)\n"
		"sys.stdout.buffer.write(u.MAGIC_NUMBER + bytes(12) + marshal.dumps(code))\n";
	int in[2] = {-1, -1}, outp[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0) {
		for (int i = 0; i < 2; i++) {
			if (in[i] >= 0)
				close(in[i]);
			if (outp[i] >= 0)
				close(outp[i]);
		}
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	char *const argv[] = {(char *)python, "-I", "-S", "-c", (char *)script, NULL};
	char *const envp[] = {"LANG=C.UTF-8", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, python, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(outp[1]);
	const char *src = jail_launcher_source();
	if (!rc)
		(void)write_full(in[1], src, strlen(src)); /* under a pipe's 64 KiB */
	close(in[1]);
	char *buf = NULL;
	size_t n = 0;
	int got = rc ? -1 : read_fd_up_to(outp[0], 1 << 20, &buf, &n);
	close(outp[0]);
	int ws = 0;
	if (!rc)
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
	/* A .pyc's magic ends in \r\n; anything else is not one. */
	if (rc || got || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || n <= 16 || buf[2] != '\r' ||
	    buf[3] != '\n') {
		free(buf);
		return -1;
	}
	*out = (unsigned char *)buf;
	*len = n;
	return 0;
}

/* The compiled launcher, if there is one yet: into s. */
static void launcher_for(struct process_state *ps, struct jail_spec *s)
{
	if (ps && __atomic_load_n(&ps->pyc_tried, __ATOMIC_ACQUIRE) && ps->pyc) {
		s->launch_pyc = ps->pyc;
		s->launch_pyc_len = ps->pyc_len;
	}
}

/* A run's sandbox made by the filler thread, off every run's clock. Its
 * init dies with that thread (PDEATHSIG), which lives as long as the
 * sandbox: process_close ends the pool before anything else. */
static int ready_make(void *ctx, void *item)
{
	struct process_state *ps = ctx;
	struct ready_run *rr = item;
	struct jail_spec s;
	struct host_root view;
	struct aj_error err = {0};
	rr->slot = (struct uid_slot){.lock_fd = -1};
	if (!ps->warm && !ps->pyc_tried) {
		/* Once, here, off every run's clock (the filler is the only
		 * writer; runs read it only once pyc_tried says it is set). A
		 * warm run has no launcher: the zygote runs main.py. */
		if (launcher_compile(ps->cfg->python, &ps->pyc, &ps->pyc_len))
			ps->pyc = NULL;
		__atomic_store_n(&ps->pyc_tried, true, __ATOMIC_RELEASE);
	}
	rr->r.pidfd = rr->w.pidfd = -1;
	int rc = process_spec(ps->cfg, &s, &view, &rr->slot, &err);
	launcher_for(ps, &s);
	/* Warm: the zygote clones the run's init, which builds the same
	 * sandbox a warm run's builds, on this uid slot, and waits. */
	if (!rc)
		rc = ps->warm ? warm_prepare(&ps->zygote, &s, &rr->w, &err)
			      : jail_run_prepare(&s, &rr->r, &err);
	if (rc)
		slot_release(&rr->slot);
	rr->made_ms = now_ms();
	return rc;
}

static void ready_destroy(void *ctx, void *item)
{
	struct process_state *ps = ctx;
	struct ready_run *rr = item;
	if (ps->warm)
		warm_ready_discard(&ps->zygote, &rr->w);
	else
		jail_ready_discard(&rr->r);
	/* After its init is killed: the slot's uid runs nothing any more. */
	slot_release(&rr->slot);
}

/* Still waiting (its init alive) and not too old. */
static bool ready_usable(void *ctx, const void *item)
{
	struct process_state *ps = ctx;
	const struct ready_run *rr = item;
	/* (A warm one's init also dies with its zygote: one killed as
	 * broken takes every sandbox it made ahead with it.) */
	struct pollfd pf = {.fd = ps->warm ? rr->w.pidfd : rr->r.pidfd, .events = POLLIN};
	return now_ms() - rr->made_ms < READY_MAX_AGE_MS && poll(&pf, 1, 0) == 0 &&
	       (!ps->warm || warm_ready_usable(&ps->zygote, &rr->w));
}

static const struct pool_ops ready_ops = {
	.item_size = sizeof(struct ready_run),
	.size = READY_RUNS,
	.make = ready_make,
	.destroy = ready_destroy,
	.usable = ready_usable,
	.wake_ms = 10000, /* to make again what grew old */
	.retry_ms = 1000,
	.block_signals = true,
};

/* A run in a sandbox made ahead, if one is ready: 0 or jail_run's answer
 * with *ran set, or nothing done (*ran false). */
static int run_made_ahead(struct process_state *ps, const struct aj_config *cfg,
			  const struct run_request *req, struct aj_result *res, bool *ran)
{
	struct ready_run rr;
	*ran = false;
	/* The filler starts when a run follows one that ended: a one-shot
	 * caller (the CLI's run, check's trial) never pays for one. */
	if (__atomic_load_n(&ps->ran, __ATOMIC_ACQUIRE))
		(void)pool_start(&ps->ready);
	/* Made with the sandbox's limits (the tmpfs's size, the rlimits the
	 * program's process takes): a run asking other ones is made anew. */
	if (memcmp(&cfg->limits, &ps->cfg->limits, sizeof cfg->limits))
		return 0;
	if (!pool_take(&ps->ready, &rr))
		return 0;
	*ran = true;
	__atomic_add_fetch(&ps->served, 1, __ATOMIC_RELAXED);
	struct jail_spec s = {.cfg = cfg, .code = req->code, .code_len = req->len,
			      .cancel_fd = req->cancel_fd, .stream = supervisor_stream_of(req->tap),
			      .egress_fd = -1};
	int rc = ps->warm ? warm_run_ready(&ps->zygote, &rr.w, &s, res)
			  : jail_run_ready(&rr.r, &s, res);
	slot_release(&rr.slot);
	return rc;
}

static int process_run(void *state, const struct aj_config *cfg, const struct run_request *req,
		       struct aj_result *res)
{
	struct process_state *ps = state;
	struct host_root view;
	struct jail_spec s;
	struct uid_slot slot = {.lock_fd = -1};
	struct aj_error err = {0};
	int rc;

	if (ps && ps->ahead && !req->egress) {
		bool ran;
		rc = run_made_ahead(ps, cfg, req, res, &ran);
		if (ran) {
			__atomic_store_n(&ps->ran, true, __ATOMIC_RELEASE);
			return rc;
		}
	}
	if ((rc = process_spec(cfg, &s, &view, &slot, &err))) {
		result_sandbox_error(res, "%s", err.message);
		return rc;
	}
	s.code = req->code;
	s.code_len = req->len;
	s.cancel_fd = req->cancel_fd;
	if (ps && !ps->warm)
		launcher_for(ps, &s);
	s.stream = supervisor_stream_of(req->tap);
	/* Namespaces made ahead, if one is ready (else the clone makes
	 * them, as always): off this run's clock. The thread making them
	 * starts when a run follows one that ended: a one-shot caller (the
	 * CLI's run, check's trial) never pays for any. */
	if (ps && !ps->warm && !ps->ahead && __atomic_load_n(&ps->ran, __ATOMIC_ACQUIRE))
		(void)pool_start(&ps->spare); /* without it each run makes its own */
	s.join_spare_ns = ps && !ps->warm && !ps->ahead && pool_take(&ps->spare, s.spare_ns);
	if ((rc = egress_pair_open(req->egress, &s.egress_fd, &err)))
		result_sandbox_error(res, "%s", err.message);
	else
		rc = ps && ps->warm ? warm_run(&ps->zygote, &s, res) : jail_run(&s, res);
	if (s.join_spare_ns)
		spare_destroy(NULL, s.spare_ns); /* init holds them now, or the run failed */
	if (ps)
		__atomic_store_n(&ps->ran, true, __ATOMIC_RELEASE);
	if (s.egress_fd >= 0)
		close(s.egress_fd);
	slot_release(&slot);
	return rc;
}

/* A session: the same sandbox, kept with its uid slot until it closes. */
struct process_session {
	struct jail_session js;
	struct uid_slot slot;
	struct host_root view;
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

static void process_session_nudge(void *session)
{
	jail_session_nudge(&((struct process_session *)session)->js);
}

static int process_session_workspace(void *session, struct aj_error *err)
{
	return jail_session_workspace(&((struct process_session *)session)->js, err);
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

/* Runs made ahead hold a uid slot each while they wait: only where slots are
 * plenty, so that a run never finds them all held by the pool; and none for
 * a sandbox with egress rules (see READY_RUNS). */
static bool process_ahead_allowed(const struct aj_config *cfg)
{
	return !cfg->allow_host_count && !cfg->allow_cidr_count && cfg->slots >= 4 * READY_RUNS;
}

static int process_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	if (access(cfg->python, X_OK) < 0)
		return error_set(err, -errno, "python: %s: %s", cfg->python, errno_name(errno));
	if (!cfg->warm && geteuid() != 0)
		return 0;
	if (!cfg->warm) {
		struct process_state *ps = calloc(1, sizeof *ps);
		if (!ps)
			return error_set(err, -ENOMEM, "open: out of memory");
		/* Their threads start with a second run (process_run). */
		ps->cfg = cfg;
		ps->ahead = process_ahead_allowed(cfg);
		pool_init(&ps->spare, &spare_ops, ps, ps->spare_items);
		pool_init(&ps->ready, &ready_ops, ps, ps->ready_items);
		*state = ps;
		return 0;
	}
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
	int rc = process_spec_view(cfg, &base, &ps->view, err);
	if (rc) {
		free(ps);
		return rc;
	}
	base.preload = cfg->preload;
	ps->warm = true;
	ps->cfg = cfg;
	warm_init(&ps->zygote, &base);
	/* Warm runs made ahead too (without egress, on plenty of uid slots),
	 * as cold ones are: see above. Their pool starts with a second run. */
	ps->ahead = process_ahead_allowed(cfg);
	pool_init(&ps->ready, &ready_ops, ps, ps->ready_items);
	/* Started now, so that a preload that cannot be imported refuses the
	 * open rather than every run. */
	rc = warm_prestart(&ps->zygote, err);
	if (rc) {
		pool_destroy(&ps->ready);
		warm_destroy(&ps->zygote);
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
	/* The sandboxes made ahead first: a warm one holds its zygote. */
	pool_destroy(&ps->ready);
	if (ps->warm)
		warm_destroy(&ps->zygote);
	else
		pool_destroy(&ps->spare);
	free(ps->pyc);
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
static bool process_made_ahead(void *state, unsigned *ready, unsigned long *served)
{
	struct process_state *ps = state;
	*ready = ps->ahead ? pool_ready(&ps->ready) : 0;
	*served = __atomic_load_n(&ps->served, __ATOMIC_RELAXED);
	return ps->ahead;
}

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
	.session_nudge = process_session_nudge,
	.session_close = process_session_close,
	.session_workspace = process_session_workspace,
	.view_root = process_view_root,
	.made_ahead = process_made_ahead,
};
