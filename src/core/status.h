/* The status ladder: the one place where the raw facts of a program's end
 * become its status and message, for every tier, runs and session calls.
 *
 * A tier (or the microvm's guest) only gathers facts: what the host saw
 * (its own clock, its output caps, a cancel), how the program ended (a
 * wait status), the CPU time it used, and the kernel's OOM kills in its
 * memory cgroup. Nothing a program says decides its status, except that it
 * may make its own end look like a MemoryError (rule 7 below), which it
 * could do by raising one anyway.
 *
 * The rules, in order; the first that applies decides:
 *   1. a protection could not be applied            sandbox_error
 *   2. the host stopped it: output cap passed        output_limit
 *   3.                      the caller cancelled     killed
 *   4.                      its wall clock ran out   timeout
 *                          or the CPU time it counts
 *                          itself passed the limit  timeout
 *   5. the end is unknown (no report) and the kernel's OOM killer ended
 *      something in its cgroup                       memory
 *      the end is unknown otherwise                  sandbox_error
 *   6. ended by SIGXCPU, or by SIGKILL with the CPU limit's hard second
 *      used                                          timeout
 *   7. the memory rule (status_is_memory): the OOM killer ended something
 *      in its cgroup and it did not exit 0, or its interpreter said that
 *      an uncaught MemoryError (any subclass) ended it and it exited with
 *      a code other than 0 (the memory_error fact: the verdict pipe of
 *      every tier's interpreter, read by the sandbox's init and carried
 *      in its report; a session's reply)                  memory
 *   8. exit 0                                        ok
 *      any other exit                                error
 *      any other signal                              killed */
#ifndef AJ_STATUS_H
#define AJ_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "agentjail.h"

/* The fd on which every one-shot tier's interpreter (src/core/launch.py,
 * src/warm/zygote.py, src/vm/guest/zygote.py) writes one byte when an
 * uncaught MemoryError (or a subclass: numpy's _ArrayMemoryError) ends the
 * program, before it exits with Python's own 1: the write end of a pipe
 * whose read end only the sandbox's init (boot.py, the guest agent) holds.
 * It is the program's own process, so the program can write the byte too:
 * it can label only its own run `memory` (never another's, never a
 * sandbox_error), which it could do by raising a MemoryError anyway. */
#define AJ_VERDICT_FD 3

struct end_facts {
	bool setup_failed;          /* rule 1 */
	const char *setup_message;
	bool output_overflow;       /* rule 2: which stream is res's *_truncated */
	bool cancelled;             /* rule 3 */
	bool timed_out;             /* rule 4 */
	bool cpu_stopped;           /* rule 4: the host stopped it for the CPU time it
				     * counted itself (gVisor enforces no RLIMIT_CPU) */
	bool ended;                 /* wstatus is the program's (else rule 5) */
	int wstatus;
	const char *unknown_end;    /* rule 5's sandbox_error message */
	double cpu_ms;              /* the program's, for rule 6 */
	uint64_t oom_kills;         /* the kernel's, in the run's cgroup; 0 without one */
	bool memory_error;          /* rule 7: the interpreter's verdict pipe, or reply */
};

/* Sets res's status, exit code or signal and message from the facts, by
 * the rules above. Leaves streams and usage figures alone. */
void status_decide(const struct end_facts *f, const struct aj_limits *l, struct aj_result *res);

#endif
