/* boot.py's run mode, host side (the docker and gvisor tiers): the program
 * and a nonce on boot's stdin, and the report boot ends its stderr with. */
#ifndef AJ_BOOT_RUN_H
#define AJ_BOOT_RUN_H

#include <stdbool.h>

#include "../core/internal.h"
#include "../linux/report.h"
#include "../linux/supervise.h"

/* Room kept on stderr for boot.py's report beyond the program's cap. */
#define BOOT_REPORT_MAX 128

/* If err ends with boot.py's report for this nonce, removes it and fills r
 * (kind REPORT_EXITED). A report that is not the last bytes is the
 * program's own printing and is left alone. */
bool boot_take_report(struct capture *err, const char *nonce, struct sandbox_report *r);

/* Whether boot.py's report agrees with the exit code its container (docker
 * or gvisor) ended with: the program's code, or 128 + the signal that ended
 * it. */
bool boot_report_matches(const struct sandbox_report *r, int exit_code);

/* The last non-empty line of c (boot's or the runtime's last words). */
void boot_last_line(const struct capture *c, char *out, size_t n);

/* boot.py's stdin for a run (docker and gvisor tiers): "NONCE DEADLINE\n"
 * and the program; with egress ("NONCE DEADLINE SOCKET\n"), the proxy's
 * socket inside the sandbox, which boot.py forwards 127.0.0.1:3128 to.
 * nonce (at least 25 bytes) receives a fresh one; boot's own backstop
 * deadline is 10 s past the wall clock the host enforces, so the sandbox
 * stops should the host die mid-run. NULL on ENOMEM. */
char *boot_run_input(const char *code, size_t len, double wall_sec, char *nonce,
		     size_t nonce_size, const char *egress_socket, size_t *out_len);

/* After a run: boot's report taken off the end of err when it is there
 * for this nonce and agrees with the sandbox's exit code (o->report,
 * o->exited_report); then the program's own stderr capped at cap bytes, a
 * longer one an output overflow (err had room for the report past it). */
void boot_finish_run(struct capture *err, const char *nonce, int exit_code, size_t cap,
		     struct outcome *o);

/* Streaming a boot.py run: stdout goes to the tier's hooks as it is read;
 * stderr too, but for the bytes that may yet turn out to be boot's report
 * (from a NUL within the last BOOT_REPORT_MAX bytes) and those past the
 * program's cap, which wait for boot_stream_finish. */
struct boot_stream {
	struct supervisor_stream inner;
	const struct capture *err;  /* the run's stderr capture */
	size_t cap;                 /* the program's own stderr cap */
	size_t sent;                /* err's bytes handed on */
};

/* The hooks to give the supervisor for bs (all zero when inner is none). */
struct supervisor_stream boot_stream_hooks(struct boot_stream *bs, struct supervisor_stream inner,
					   const struct capture *err, size_t cap);
/* After boot_finish_run: hands on the rest of the program's stderr. */
void boot_stream_finish(struct boot_stream *bs);

#endif
