/* Sessions on the gvisor tier: see session.h. */
#include <errno.h>
#include <stdlib.h>

#include "../gvisor/session.h"
#include "../gvisor/watch.h"
#include "../boot/egress.h"
#include "../boot/session.h"

/* ---- sessions: one sandbox for the session's life ---- */

/* boot.py's own backstop: this long past the session's lifetime (which the
 * core enforces) the sandbox ends even if the host never closes it. */
#define BACKSTOP_MARGIN_SEC 60.0

/* One gVisor sandbox with boot.py in its session mode; the calls are
 * src/boot/session.c's: frames go in on runsc's stdin (a socket: a send to
 * a sandbox that is gone fails with EPIPE, never SIGPIPE in the caller)
 * and come back on its stdout. The sandbox is started as a run's is. */
struct gvisor_session {
	struct boot_session bs;     /* first: boot.c's hooks get it back */
	struct gvisor_started s;
	uint64_t oom_before;        /* the cgroup's OOM kills when the call began */
	bool destroyed;
};

static void session_destroy(struct boot_session *bs)
{
	struct gvisor_session *gs = (struct gvisor_session *)bs;
	if (gs->destroyed)
		return;
	gs->destroyed = true;
	/* Frozen tasks take no kill (cgroup v1) until thawed. */
	cgroup_thaw(&gs->s.sb.cg);
	/* The stream's fds are the started sandbox's: closed with it. */
	bs->fd = bs->out_fd = bs->err_fd = -1;
	struct aj_error e = {0};
	gvisor_started_destroy(&gs->s, &e);
}

static bool session_oom_since(struct boot_session *bs, double since)
{
	(void)since; /* the count at the call's start stands for it */
	struct gvisor_session *gs = (struct gvisor_session *)bs;
	uint64_t kills = 0, peak = 0;
	cgroup_usage(&gs->s.sb.cg, &kills, &peak);
	return kills > gs->oom_before;
}

static double session_cpu_ms(struct boot_session *bs)
{
	return cgroup_cpu_ms(&((struct gvisor_session *)bs)->s.sb.cg);
}

int gvisor_session_freeze(void *session, bool frozen, struct aj_error *err)
{
	struct gvisor_session *gs = session;
	/* The sandbox's cgroup holds runsc's sentry and gofer and all they
	 * run: frozen, the whole of it stops, its memory kept. */
	return gs->s.sb.have_cg ? cgroup_freeze(&gs->s.sb.cg, frozen, err)
				: error_set(err, -ENOTSUP, "gvisor: the sandbox has no cgroup");
}

void gvisor_session_close(void *session)
{
	struct gvisor_session *gs = session;
	if (!gs)
		return;
	session_destroy(&gs->bs);
	boot_session_free(&gs->bs);
	free(gs);
}

int gvisor_session_open(const struct gvisor_host *st, const struct aj_config *cfg,
			struct egress_proxy *egress, void **out, struct aj_error *err)
{
	struct gvisor_session *gs = calloc(1, sizeof *gs);
	if (!gs)
		return error_set(err, -ENOMEM, "gvisor: session: out of memory");
	boot_session_init(&gs->bs);
	gs->bs.tier = "gvisor";
	gs->bs.fd = gs->bs.err_fd = -1;
	gs->bs.destroy = session_destroy;
	gs->bs.oom_since = session_oom_since;
	gs->bs.cpu_ms = session_cpu_ms;
	gs->bs.cpu_allowance_ms = CPU_ALLOWANCE_MS;
	/* RLIMIT_CPU, the interpreter's hard limit under which repl.py sets
	 * each call's soft one, is counted by the sentry on its own clock:
	 * each call's CPU is also watched on the host's count (boot/session.c,
	 * src/gvisor/watch.h), so a run's sandbox serves as well. */
	/* The sandbox of a run, with the session's total CPU as its RLIMIT_CPU
	 * (soft; hard a second later), as the docker tier's: the interpreter's
	 * hard limit, under which repl.py sets each call's soft one. With the
	 * call's own limit there instead, the sentry killed the interpreter
	 * once its whole life's CPU (its start included, and on ptrace under
	 * load the sentry's clock runs near the wall clock) reached one call's
	 * limit plus a second: a SIGKILL the status rules could not tell from
	 * the program's own (status killed instead of timeout, and the state
	 * lost after calls that each kept their budget). */
	struct aj_config scfg = *cfg;
	scfg.limits.cpu_sec = cfg->session.cpu_sec;
	int rc = gvisor_start(st, st->platform, &scfg, egress, &gs->s, err);
	if (rc) {
		gs->destroyed = true; /* start_sandbox left nothing */
		goto fail;
	}
	gs->bs.fd = gs->s.in_fd;
	gs->bs.out_fd = gs->s.out_fd;
	gs->bs.err_fd = gs->s.err_fd;
	if ((rc = boot_session_start(&gs->bs, cfg->session.lifetime_sec + BACKSTOP_MARGIN_SEC,
				     egress ? BOOT_EGRESS_SOCKET : NULL, err)))
		goto fail;
	*out = gs;
	return 0;
fail:
	gvisor_session_close(gs);
	return rc;
}

int gvisor_session_call(void *session, const struct aj_config *cfg,
			const struct session_call *call, struct aj_result *res,
			struct session_answer *ans)
{
	struct gvisor_session *gs = session;
	uint64_t peak = 0;
	cgroup_usage(&gs->s.sb.cg, &gs->oom_before, &peak);
	return boot_session_call(&gs->bs, cfg, call, res, ans);
}
