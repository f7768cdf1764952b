/* The host side of boot.py's session mode (boot.py, beside it), over one
 * stream: the docker tier's attach stream, or the gvisor tier's socket to
 * runsc's stdio. The theory of operation is at the top of session.c; a tier
 * supplies the stream, how to end its sandbox, and how to ask whether the
 * OOM killer struck. */
#ifndef AJ_SESSION_BOOT_H
#define AJ_SESSION_BOOT_H

#include <stdbool.h>

#include "../core/internal.h"
#include "../core/session_call.h"

struct boot_session {
	const char *tier;           /* "docker", "gvisor": messages name it */
	int fd;                     /* non-blocking socket: frames out (and in) */
	/* Where boot's stdout is read, when it is not fd (a pipe): -1 for fd. */
	int out_fd;
	/* Where fd carries boot's stdout and stderr in frames of the tier's
	 * (Docker's attach stream): sorts bytes read from fd into raw (stdout)
	 * and boot_err; NULL: fd carries stdout alone, err_fd boot's stderr. */
	void (*demux)(struct boot_session *bs, const char *p, size_t n);
	int err_fd;                 /* -1 when demux is set */
	struct capture raw;         /* boot's stdout: frames not yet parsed */
	struct capture boot_err;    /* boot's own stderr */
	bool interpreter;           /* one runs (boot started it and it has not ended) */
	bool started_before;
	bool dead;                  /* the stream ended: the sandbox is gone */
	/* The tier's: end the sandbox now, nothing of it left (called once
	 * the session is broken, and again on close: must be idempotent). */
	void (*destroy)(struct boot_session *bs);
	/* Whether the OOM killer struck in the sandbox since `since` (now_ms
	 * of the call's start); NULL: it cannot be told. */
	bool (*oom_since)(struct boot_session *bs, double since);
	/* Where the sandbox's RLIMIT_CPU is counted on a clock not the
	 * host's (gVisor's sentry): the CPU time its whole sandbox has used,
	 * in ms (-1: unknown), watched against each call's limit plus
	 * cpu_allowance_ms; NULL: not needed. */
	double (*cpu_ms)(struct boot_session *bs);
	double cpu_allowance_ms;
	/* An eventfd a caller waiting behind a call rings (boot_session_nudge);
	 * the call's own loop sends the wake frame. -1: none. */
	int nudge_fd;
};

/* tier_ops.session_nudge for docker (gvisor does not wake: tiers/gvisor.c): rings nudge_fd, and the
 * call in flight sends an empty line after its request (a frame of its
 * own, so the stream's framing holds), which wakes repl.py's read. */
void boot_session_nudge(struct boot_session *bs);
/* Sets up the buffers, and out_fd -1 (fd, out_fd, err_fd, demux, tier
 * and the hooks are the caller's to fill). */
void boot_session_init(struct boot_session *bs);
/* Feeds bytes that arrived before the stream was handed over (Docker's,
 * with its 101 reply). */
void boot_session_feed(struct boot_session *bs, const char *p, size_t n);
/* Sends the header (session mode, boot's backstop of lifetime_sec, the
 * interpreter's source; with egress, the proxy's socket inside the
 * sandbox, as a run's) and starts the first interpreter; waits for boot's
 * "ready". */
int boot_session_start(struct boot_session *bs, double lifetime_sec, const char *egress_socket,
		       struct aj_error *err);
/* One call (tier.h's session_call). */
int boot_session_call(struct boot_session *bs, const struct aj_config *cfg,
		      const struct session_call *c, struct aj_result *res,
		      struct session_answer *ans);
/* Frees the buffers (the tier has destroyed the sandbox). */
void boot_session_free(struct boot_session *bs);

#endif
