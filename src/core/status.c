#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "internal.h"
#include "status.h"

/* Rule 7 on its own: whether a program that ended (not stopped by the host,
 * not by the CPU limit) ended by running out of memory. memory_error: its
 * interpreter said a MemoryError ended it (AJ_VERDICT_FD). */
static bool status_is_memory(int wstatus, uint64_t oom_kills, bool memory_error)
{
	/* The OOM killer's SIGKILL (to the program or to a process of its
	 * tree) is the memory limit at work, not a crash; a program that still
	 * exited 0 did what it was asked. */
	if (oom_kills)
		return !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
	/* The interpreter's own word that a MemoryError ended the program,
	 * which then exited with Python's 1 (the exit code stays the
	 * program's): a program can only claim it for itself, never hide an
	 * OOM kill (the kernel's count above comes first) nor reach any other
	 * status; one that exits 0 did not end by it. */
	return memory_error && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0;
}

/* Status memory, and the message that says why: the OOM killer's count,
 * or (none) a MemoryError. */
static void status_set_memory(struct aj_result *res, uint64_t oom_kills, const struct aj_limits *l)
{
	res->status = AJ_STATUS_MEMORY;
	if (oom_kills)
		result_set_message(res,
				   "memory limit of %u MiB reached: the kernel's OOM killer "
				   "ended %llu process%s",
				   l->memory_mb, (unsigned long long)oom_kills,
				   oom_kills == 1 ? "" : "es");
	else
		result_set_message(res, "memory limit of %u MiB reached (MemoryError)",
				   l->memory_mb);
}

void status_decide(const struct end_facts *f, const struct aj_limits *l, struct aj_result *res)
{
	const int ws = f->wstatus;
	res->has_exit_code = false;
	res->exit_code = 0;
	res->signal = 0;
	if (f->setup_failed) {
		result_sandbox_error(res, "%s", f->setup_message ? f->setup_message : "setup failed");
		return;
	}
	/* Stopped by the host: the program was SIGKILLed (or its sandbox
	 * was). One that had already exited keeps its own exit code. */
	if (f->output_overflow || f->timed_out || f->cpu_stopped || f->cancelled) {
		if (f->ended && WIFEXITED(ws)) {
			res->has_exit_code = true;
			res->exit_code = WEXITSTATUS(ws);
		} else {
			res->signal = f->ended && WIFSIGNALED(ws) ? WTERMSIG(ws) : SIGKILL;
		}
	}
	if (f->output_overflow) {
		res->status = AJ_STATUS_OUTPUT_LIMIT;
		result_set_message(res, "output passed the %u KiB limit on %s; the run was stopped",
				   l->output_kb, res->stdout_truncated ? "stdout" : "stderr");
		return;
	}
	if (f->cancelled) {
		res->status = AJ_STATUS_KILLED;
		result_set_message(res, "cancelled by the caller; the run was stopped");
		return;
	}
	if (f->cpu_stopped) {
		/* Rule 6's limit, kept by the host where the sandbox has no
		 * RLIMIT_CPU of its own: the figure is the whole sandbox's. */
		res->status = AJ_STATUS_TIMEOUT;
		result_set_message(res, "CPU time limit of %u s reached (the sandbox's CPU time, "
					"its runtime's own included, counted by the host)",
				   l->cpu_sec);
		return;
	}
	if (f->timed_out) {
		res->status = AJ_STATUS_TIMEOUT;
		result_set_message(res, "wall-clock limit of %g s reached; the run was stopped",
				   l->wall_sec);
		return;
	}
	if (!f->ended) {
		/* The sandbox itself ended with no word of the program: the
		 * OOM killer may have taken its init (or gVisor's sentry). */
		if (f->oom_kills) {
			res->signal = SIGKILL;
			status_set_memory(res, f->oom_kills, l);
			return;
		}
		result_sandbox_error(res, "%s",
				     f->unknown_end ? f->unknown_end
						    : "the sandbox ended without reporting");
		return;
	}
	if (WIFEXITED(ws)) {
		res->has_exit_code = true;
		res->exit_code = WEXITSTATUS(ws);
	} else {
		res->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
		/* SIGXCPU at the soft CPU limit, or SIGKILL at the hard one
		 * (soft + 1 s) for a program that ignored SIGXCPU. The figure
		 * is the whole tree's, so a program could earn this label for a
		 * SIGKILL it sent itself: it only mislabels its own run. */
		if (res->signal == SIGXCPU ||
		    (res->signal == SIGKILL && f->cpu_ms >= (double)(l->cpu_sec + 1) * 1000.0)) {
			res->status = AJ_STATUS_TIMEOUT;
			result_set_message(res, "CPU time limit of %u s reached", l->cpu_sec);
			return;
		}
	}
	if (status_is_memory(ws, f->oom_kills, f->memory_error)) {
		status_set_memory(res, f->oom_kills, l);
		return;
	}
	if (res->has_exit_code) {
		res->status = res->exit_code == 0 ? AJ_STATUS_OK : AJ_STATUS_ERROR;
		return;
	}
	res->status = AJ_STATUS_KILLED;
	result_set_message(res, "killed by signal %d (%s)", res->signal,
			   sigabbrev_np(res->signal) ? sigabbrev_np(res->signal) : "?");
}
