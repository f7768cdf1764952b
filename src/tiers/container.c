/* The container tier: the seed article's "Docker with strict flags", built
 * natively. It is the jail engine (src/linux/jail_plan.c: namespaces, init,
 * supervisor, rlimits, uid, capabilities, seccomp) with two differences:
 *
 *  view     the program sees an image root (agentjail image build), not the
 *           host: init bind-mounts the image read-only, nosuid, nodev, puts
 *           the run's /dev, scratch tmpfs and /proc inside it, and
 *           pivot_roots into it; the old root is detached, so no path leads
 *           back to the host. No /sys. Nothing of the host's files, its
 *           /etc/passwd, /root or /home, is there to read.
 *
 *  cgroup   init is born in a cgroup of the run's own (cgroup v2, clone3
 *           CLONE_INTO_CGROUP) or moves its own thread there first thing
 *           (v1) (cgroup.c): memory with no swap for
 *           the whole run (an OOM kill is reported as status `memory`), pids,
 *           one CPU's quota. init then roots a cgroup namespace there. The
 *           cgroup is removed after the run. If cgroups cannot be made, the
 *           run is refused, naming what to enable.
 *
 * Setup order, in init: join the run's cgroups (v1), private mount tree, bind
 * the image, make it
 * read-only, /dev, scratch tmpfs and program, /proc, pivot_root, detach the
 * old root; then (jail_plan.c) cgroup namespace, fork the
 * program: rlimits, uid, capabilities, no_new_privs, seccomp, exec.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../linux/binds.h"
#include "../linux/cgroup.h"
#include "../linux/creds.h"
#include "../linux/jail.h"
#include "../linux/report.h"
#include "../linux/session_io.h"
#include "../linux/stream_hooks.h"
#include "../warm/warm.h"
#include "egress_pair.h"
#include "tier.h"

struct container_state {
	struct cgroup_layout cgroups;
	char root[PATH_MAX];    /* the image's root directory on the host */
	struct warm *warm;      /* warm mode (cfg.warm): the zygote, in the image */
	/* Warm mode: the next run's cgroup, made ahead by the zygote's filler
	 * thread with the open's limits (a v1 cgroup's mkdirs and limits take
	 * about 0.3 ms here, a twentieth of a warm run). */
	pthread_mutex_t spare_lock;
	bool have_spare;
	struct cgroup_run spare;
	struct aj_limits spare_limits;
};

/* The image's root/. */
static int image_root(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err)
{
	char dir[PATH_MAX];
	int rc = image_dir(cfg, dir, sizeof dir, err);
	if (rc)
		return rc;
	if ((size_t)snprintf(out, n, "%s/root", dir) >= n)
		return error_set(err, -ENAMETOOLONG, "image: path too long");
	struct stat st;
	if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode))
		return error_set(err, -ENOENT, "image: %s has no root/ (rebuild it with "
					      "'agentjail image build --force')",
				 dir);
	return 0;
}

/* In init: the image becomes the root. */
static int image_setup_root(const struct jail_spec *s, struct setup_error *e)
{
	const struct container_state *st = s->tier;
	const char *root = st->root;
	struct bind_trees binds;
	int rc;

	/* The deployer's host paths, taken while the host is still in view. */
	if ((rc = binds_open(s->cfg, &binds, e)))
		goto fail;
	/* A mount of its own, so it can be made read-only and pivoted to. */
	if (mount(root, root, NULL, MS_BIND, NULL) < 0) {
		rc = setup_fail(e, errno, "image: bind %s", root);
		goto fail;
	}
	/* Read-only: the program changes nothing of the image the next run
	 * gets. nosuid, nodev: no setuid binary or device node in it counts. */
	if (mount("none", root, "none", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0) {
		rc = setup_fail(e, errno, "image: remount %s read-only", root);
		goto fail;
	}
	/* binds_attach closes the clones, attached or not. */
	if ((rc = binds_attach(root, s->cfg, &binds, e)) || (rc = jail_populate_root(s, root, e)))
		return rc;
	return jail_pivot_to(root, e);
fail:
	binds_close(&binds);
	return rc;
}

static int container_warm_open(const struct aj_config *cfg, struct container_state *st,
			       struct aj_error *err);

static int container_open(const struct aj_config *cfg, void **state, struct aj_error *err)
{
	*state = NULL;
	if (geteuid() != 0)
		return error_set(err, -EPERM,
				 "container: needs root, for the run's cgroups and uid (running "
				 "as uid %u)",
				 (unsigned)geteuid());
	struct container_state *st = calloc(1, sizeof *st);
	if (!st)
		return error_set(err, -ENOMEM, "open: out of memory");
	int rc;
	if ((rc = image_root(cfg, st->root, sizeof st->root, err)) ||
	    (rc = image_check_python(st->root, cfg->python, err)) ||
	    (rc = cgroup_prepare(cfg->cgroup_root, &st->cgroups, err))) {
		free(st);
		return rc;
	}
	if (cfg->warm && (rc = container_warm_open(cfg, st, err))) {
		free(st);
		return rc;
	}
	*state = st;
	return 0;
}

static void container_close(void *state)
{
	struct container_state *st = state;
	if (st && st->warm) {
		warm_destroy(st->warm); /* the filler is gone: the spare is ours */
		free(st->warm);
		struct aj_error err = {0};
		if (st->have_spare)
			cgroup_destroy(&st->spare, &err);
		pthread_mutex_destroy(&st->spare_lock);
	}
	free(state);
}

/* The filler's idle work: a cgroup ready for the next run. */
static void make_spare_cgroup(void *ctx)
{
	struct container_state *st = ctx;
	pthread_mutex_lock(&st->spare_lock);
	bool have = st->have_spare;
	pthread_mutex_unlock(&st->spare_lock);
	if (have)
		return;
	struct cgroup_run cg;
	struct aj_error err = {0};
	if (cgroup_create(&st->cgroups, &st->spare_limits, &cg, &err))
		return; /* the run makes its own, and says why if it cannot */
	pthread_mutex_lock(&st->spare_lock);
	have = st->have_spare;
	if (!have) {
		cgroup_run_copy(&st->spare, &cg);
		st->have_spare = true;
	}
	pthread_mutex_unlock(&st->spare_lock);
	if (have)
		cgroup_destroy(&cg, &err);
}

/* The spare cgroup, if it was made with these limits (the ones a cgroup
 * holds: memory and processes; CPU is one core for all). */
static bool take_spare_cgroup(struct container_state *st, const struct aj_limits *l,
			      struct cgroup_run *cg)
{
	bool took = false;
	pthread_mutex_lock(&st->spare_lock);
	if (st->have_spare && st->spare_limits.memory_mb == l->memory_mb &&
	    st->spare_limits.pids == l->pids) {
		cgroup_run_copy(cg, &st->spare);
		st->have_spare = false;
		took = true;
	}
	pthread_mutex_unlock(&st->spare_lock);
	return took;
}

/* The spec every container sandbox shares, run or session. */
static struct jail_spec container_spec(const struct aj_config *cfg, const struct container_state *st,
				       const struct uid_slot *slot)
{
	return (struct jail_spec){
		.cfg = cfg,
		.cancel_fd = -1,
		.python = cfg->python,
		.cgroup_ns = true,
		/* The memory cgroup bounds the whole run; RLIMIT_AS would
		 * only bound each process, and wrongly (it counts reserved,
		 * not used, memory). */
		.address_space_limit = false,
		.outer_uid = geteuid(),
		.outer_gid = getegid(),
		.uid = slot->uid,
		.gid = slot->gid,
		.setup_root = image_setup_root,
		.tier = st,
		.egress_fd = -1,
	};
}

/* Warm mode: the zygote's sandbox is a container of the image like a
 * run's (no uid slot or cgroup: it is not a run, and runs are limited by
 * their own). Started now, so that a preload that cannot be imported
 * refuses the open rather than every run. */
static int container_warm_open(const struct aj_config *cfg, struct container_state *st,
			       struct aj_error *err)
{
	struct uid_slot none = {.lock_fd = -1};
	struct jail_spec base = container_spec(cfg, st, &none);
	base.preload = cfg->preload;
	/* No cgroup namespace for the zygote: each run's init must move into
	 * its run's cgroup, which a cgroup namespace rooted at the caller's
	 * cgroup would put out of reach (v2 refuses a move outside the
	 * namespace's root). Each run's init makes its own once it is in. */
	base.cgroup_ns = false;
	if (!(st->warm = calloc(1, sizeof *st->warm)))
		return error_set(err, -ENOMEM, "open: out of memory");
	warm_init(st->warm, &base);
	pthread_mutex_init(&st->spare_lock, NULL);
	st->spare_limits = cfg->limits;
	st->warm->idle = make_spare_cgroup;
	st->warm->idle_ctx = st;
	int rc = warm_prestart(st->warm, err);
	if (rc) {
		image_lacks_module(cfg, err);
		warm_destroy(st->warm);
		free(st->warm);
		st->warm = NULL;
		struct aj_error e2 = {0};
		if (st->have_spare)
			cgroup_destroy(&st->spare, &e2);
		pthread_mutex_destroy(&st->spare_lock);
	}
	return rc;
}

/* A uid slot and a cgroup for one sandbox; on failure neither is held. */
static int take_slot_and_cgroup(const struct aj_config *cfg, const struct container_state *st,
				struct uid_slot *slot, struct cgroup_run *cg, struct aj_error *err)
{
	int rc = slot_acquire(cfg, slot, err);
	if (rc)
		return rc;
	if ((rc = cgroup_create(&st->cgroups, &cfg->limits, cg, err)))
		slot_release(slot);
	return rc;
}

/* cgroup v2: init is born in the sandbox's cgroup. v1 has no such thing:
 * init moves its own thread there first (cgroup_join_self), which unlike
 * moving another process takes no global lock. Returns the directory's fd
 * (v2) or -1. */
static int place_in_cgroup(struct jail_spec *s, const struct cgroup_run *cg)
{
	int cgfd = cgroup_open_dir(cg);
	s->into_cgroup = cgfd >= 0;
	s->cgroup_fd = cgfd;
	s->join_cgroups = cg->version == 1 ? cg->tasks_files : NULL;
	return cgfd;
}

static int container_run(void *state, const struct aj_config *cfg, const struct run_request *req,
			 struct aj_result *res)
{
	struct container_state *st = state;
	struct uid_slot slot = {.lock_fd = -1};
	struct cgroup_run cg;
	struct aj_error err = {0};
	int rc;

	if (st->warm && take_spare_cgroup(st, &cfg->limits, &cg)) {
		if ((rc = slot_acquire(cfg, &slot, &err))) {
			struct aj_error e2 = {0};
			cgroup_destroy(&cg, &e2);
			result_sandbox_error(res, "%s", err.message);
			return rc;
		}
	} else if ((rc = take_slot_and_cgroup(cfg, st, &slot, &cg, &err))) {
		result_sandbox_error(res, "%s", err.message);
		return rc;
	}
	struct jail_spec s = container_spec(cfg, st, &slot);
	s.code = req->code;
	s.code_len = req->len;
	s.cancel_fd = req->cancel_fd;
	s.stream = supervisor_stream_of(req->tap);
	int cgfd = place_in_cgroup(&s, &cg);
	s.cgroup = &cg; /* its OOM kills: status memory (src/core/status.h) */
	if ((rc = egress_pair_open(req->egress, &s.egress_fd, &err)))
		result_sandbox_error(res, "%s", err.message);
	else
		rc = st->warm ? warm_run(st->warm, &s, res) : jail_run(&s, res);
	if (s.egress_fd >= 0)
		close(s.egress_fd);
	if (cgfd >= 0)
		close(cgfd);

	uint64_t oom_kills = 0, peak_kb = 0;
	cgroup_usage(&cg, &oom_kills, &peak_kb);
	if (peak_kb)
		res->memory_kb = peak_kb; /* the whole run's, not one process's */
	if (cgroup_destroy(&cg, &err) && res->status != AJ_STATUS_SANDBOX_ERROR) {
		/* The run itself went fine, but the host kept something: say so
		 * rather than pretend nothing is left behind. */
		result_sandbox_error(res, "%s", err.message);
		rc = -EBUSY;
	}
	slot_release(&slot);
	if (st->warm)
		warm_kick(st->warm); /* the next run's cgroup */
	return rc;
}

/* A session: one sandbox, uid slot and cgroup for its whole life, so its
 * memory, pids and CPU are counted together. */
struct container_session {
	struct jail_session js;
	struct uid_slot slot;
	struct cgroup_run cg;
};

static int container_session_open(void *state, const struct aj_config *cfg,
				  struct egress_proxy *egress, void **out,
				  struct aj_error *err)
{
	struct container_state *st = state;
	struct container_session *cs = calloc(1, sizeof *cs);
	if (!cs)
		return error_set(err, -ENOMEM, "session: out of memory");
	cs->slot.lock_fd = -1;
	int rc = take_slot_and_cgroup(cfg, st, &cs->slot, &cs->cg, err);
	if (rc) {
		free(cs);
		return rc;
	}
	struct jail_spec s = container_spec(cfg, st, &cs->slot);
	int cgfd = place_in_cgroup(&s, &cs->cg);
	if (!(rc = egress_pair_open(egress, &s.egress_fd, err)))
		rc = jail_session_start(&s, &cs->js, err);
	if (s.egress_fd >= 0)
		close(s.egress_fd);
	if (cgfd >= 0)
		close(cgfd);
	if (rc) {
		struct aj_error e2 = {0};
		cgroup_destroy(&cs->cg, &e2);
		slot_release(&cs->slot);
		free(cs);
		return rc;
	}
	cs->js.cgroup = &cs->cg; /* its OOM kills: status memory (src/core/status.h) */
	*out = cs;
	return 0;
}

static int container_session_call(void *session, const struct aj_config *cfg,
				  const struct session_call *call, struct aj_result *res,
				  struct session_answer *ans)
{
	struct container_session *cs = session;
	int rc = jail_session_call(&cs->js, &cfg->limits, call, res, ans);
	uint64_t oom_kills = 0, peak_kb = 0;
	cgroup_usage(&cs->cg, &oom_kills, &peak_kb);
	if (peak_kb)
		res->memory_kb = peak_kb; /* the session's peak, all processes */
	return rc;
}

static void container_session_nudge(void *session)
{
	jail_session_nudge(&((struct container_session *)session)->js);
}

static uint64_t container_session_oom_kills(void *session, double since_ms)
{
	(void)since_ms; /* the cgroup's count: what no answer counted yet */
	return jail_session_oom_kills(&((struct container_session *)session)->js);
}

static int container_session_workspace(void *session, struct aj_error *err)
{
	return jail_session_workspace(&((struct container_session *)session)->js, err);
}

static int container_session_freeze(void *session, bool frozen, struct aj_error *err)
{
	return cgroup_freeze(&((struct container_session *)session)->cg, frozen, err);
}

static void container_session_close(void *session)
{
	struct container_session *cs = session;
	if (!cs)
		return;
	/* A frozen task cannot die (cgroup v1) until it is thawed: thawed
	 * first, then killed with the rest. */
	cgroup_thaw(&cs->cg);
	jail_session_end(&cs->js);
	/* Reaped: the cgroup is empty and can go. */
	struct aj_error err = {0};
	cgroup_destroy(&cs->cg, &err);
	slot_release(&cs->slot);
	free(cs);
}

static int container_check(const struct aj_config *cfg, struct aj_error *err)
{
	return tier_trial_run(&container_tier, cfg, err);
}

const struct tier_ops container_tier = {
	.name = "container",
	.check = container_check,
	.open = container_open,
	.run = container_run,
	.close = container_close,
	.session_open = container_session_open,
	.session_call = container_session_call,
	.session_oom_kills = container_session_oom_kills,
	.session_nudge = container_session_nudge,
	.session_close = container_session_close,
	.session_workspace = container_session_workspace,
	.session_freeze = container_session_freeze,
	.view_root = image_view_root,
};
