/* Watching one gVisor run from the host: the wall clock, the CPU time of
 * the sandbox's cgroup, the output caps, the program's input and the
 * caller's cancel. */
#ifndef AJ_GVISOR_WATCH_H
#define AJ_GVISOR_WATCH_H

#include "../gvisor/sandbox.h"
#include "../linux/supervise.h"
#include "../linux/supervisor.h"

/* gVisor's sentry enforces RLIMIT_CPU on a clock of its own (a task's time
 * in the application as the sentry sees it: on the ptrace platform under
 * load, close to wall time; 2026-12-05, runsc 2022-12: SIGXCPU at 1.0 and
 * 2.0 s of it), which is no bound on what the sandbox takes of the host.
 * So the supervisor also reads the CPU time of the run's cgroup every
 * CPU_CHECK_MS and stops the sandbox past the limit.
 * The cgroup's time includes runsc's, the gofer's and the sentry's own
 * (starting them and the interpreter takes 0.3-0.6 s of CPU here), hence
 * the allowance on top of the program's limit. */
#define CPU_CHECK_MS 200.0
#define CPU_ALLOWANCE_MS 1500.0

struct watch {
	int pidfd, in_fd, out_fd, err_fd, cancel_fd;
	double cpu_used;        /* its CPU time since the program went in, last read */
	double cpu_base, cpu_limit;
	const struct gvisor_sandbox *sb;
	const char *input;
	size_t input_len;
	struct capture out, err;
	struct supervisor_stream stream; /* streaming hooks; zero: none */
	struct supervisor sv;
};

/* From runsc's start until it has ended; a timeout, a flood or a cancel
 * kills the whole cgroup. Fills o's flags and wall_ms. */
void watch_run(struct watch *w, const struct gvisor_sandbox *sb, const struct aj_limits *l,
	       double start_ms, struct outcome *o);

#endif
