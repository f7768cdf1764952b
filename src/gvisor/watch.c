/* Watching one gVisor run: see watch.h. The loop is the one supervisor's
 * (src/linux/supervisor.c); this file gives it gVisor's hooks. */
#include <unistd.h>

#include "../linux/cgroup.h"
#include "watch.h"

static void run_ended(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src, (void)revents;
	sv->done = true;
}

static void run_input_end(struct supervisor *sv)
{
	struct watch *w = sv->ctx;
	/* The whole program is in: boot.py reads to EOF. */
	close(w->in_fd);
	w->in_fd = sv->in_fd = -1;
}

/* The host's count of the sandbox's CPU (its cgroup), whatever the sentry's
 * own RLIMIT_CPU counts (watch.h). */
static bool run_cpu_check(struct supervisor *sv)
{
	struct watch *w = sv->ctx;
	w->cpu_used = cgroup_cpu_ms(&w->sb->cg) - w->cpu_base;
	if (w->cpu_used <= w->cpu_limit)
		return false;
	sv->o->cpu_stopped = true; /* a fact for the status rules (src/core/status.h) */
	return true;
}

static void run_kill_all(struct supervisor *sv)
{
	const struct watch *w = sv->ctx;
	/* runsc, sentry, gofer and the program: all of them, at once; the
	 * end (gvisor_started_end) waits for them, bounded. runsc's state is
	 * removed with the run directory. */
	cgroup_kill_all(&w->sb->cg);
}

void watch_run(struct watch *w, const struct gvisor_sandbox *sb, const struct aj_limits *l,
	       double start_ms, struct outcome *o)
{
	struct supervisor *sv = &w->sv;
	supervisor_init(sv, o, start_ms, l->wall_sec);
	w->sb = sb;
	/* The CPU the sandbox used before the program went in (a pooled one
	 * started earlier) is not the program's. */
	w->cpu_base = cgroup_cpu_ms(&sb->cg);
	w->cpu_limit = (double)l->cpu_sec * 1000.0 + CPU_ALLOWANCE_MS;
	sv->grace_ms = 0; /* the stop ends the sandbox */
	sv->cancel_fd = w->cancel_fd;
	sv->out_fd[0] = w->out_fd;
	sv->out_fd[1] = w->err_fd;
	sv->cap[0] = &w->out;
	sv->cap[1] = &w->err;
	if (w->stream.out_tap)
		sv->stream = w->stream;
	sv->src[0] = (struct supervisor_source){.fd = w->pidfd, .ready = run_ended};
	sv->in_fd = w->in_fd;
	sv->input = w->input;
	sv->input_len = w->input_len;
	sv->input_is_socket = true;
	sv->input_end = run_input_end;
	if (w->cpu_base >= 0) {
		sv->check = run_cpu_check;
		sv->check_every_ms = CPU_CHECK_MS;
	}
	sv->stop = run_kill_all;
	sv->ctx = w;
	supervisor_run(sv);
}
