/* The library's own layer (src/api): aj_open / aj_run / sessions and the
 * run_python tool, above every tier. What the front ends (cli, mcp, serve)
 * need of it beyond include/agentjail.h, and what its files share. */
#ifndef AJ_API_H
#define AJ_API_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"

struct tier_ops;

/* The tier's runs made ahead (tier_ops.made_ahead), for tests: false, and
 * both 0, on a tier or sandbox that makes none. */
bool sandbox_made_ahead(struct aj_sandbox *sb, unsigned *ready, unsigned long *served);

/* Largest program accepted: agent code is small, and the source file lands in
 * the sandbox's own size-limited writable space. */
#define AJ_MAX_CODE_BYTES (4u << 20)

/* Code the sandbox refuses before starting anything (missing, too large, a
 * NUL byte): 0, or -errno with res a sandbox_error naming why. */
int code_check(const char *code, size_t len, struct aj_result *res);

/* The run_python tool (tool.c): its definition as an MCP Tool object, the
 * check of its arguments (0 with the code, or -1 with why), and the text a
 * model reads back (malloc'ed, valid UTF-8). */
#define AJ_TOOL_NAME "run_python"
/* Which notable packages (numpy, pandas, ...) a sandbox's interpreter has,
 * probed once per sandbox (tool.c) and kept in it: names, in the probe's
 * order, comma-separated; known is false until a probe succeeded. */
struct tool_packages {
	pthread_mutex_t lock;
	bool probed;
	bool known;
	uint32_t found;  /* a bit for each package of tool.c's list */
	char names[512];
};
struct tool_packages *sandbox_packages(struct aj_sandbox *sb);
/* packages: what the description names as installed; NULL when nothing
 * was probed (the words then promise only the standard library). */
json_t *tool_definition_object(const struct aj_config *cfg, bool sessions,
			       const struct tool_packages *packages);
/* The probe's verdict for sb (probing it on first use); NULL if unknown. */
const struct tool_packages *tool_packages_of(struct aj_sandbox *sb);
int tool_code_argument(json_t *args, const char **code, size_t *len, char *why, size_t n);
/* The outputSchema of a tool whose result is the contract's result object
 * (run_python's, run_command's); with sessions, its images too. */
json_t *tool_output_schema(bool sessions);
char *result_text(const struct aj_result *res, size_t *len);

/* A part of a session's workspace file, for a download that streams: at
 * most max bytes from offset in *data (malloc'ed; fewer only at the end),
 * and the file's whole size in *size. aj_session_get's answers, and its
 * -EFBIG for a file over the transfer cap, whatever the part. */
int session_get_part(struct aj_session *s, const char *path, uint64_t offset, size_t max,
		     void **data, size_t *len, uint64_t *size, struct aj_error *err);

/* One call of a session's interpreter, as every call kind makes it
 * (session.c): the session locked and checked open, req (without "seq")
 * sent, the reply handed to on_reply, the notes on lost state added. wall_sec:
 * the host's deadline for this call (0: the config's wall-clock limit). */
struct stream_tap;
typedef void (*session_reply_fn)(json_t *reply, const struct aj_config *cfg,
				 struct aj_result *res);
int session_call_streaming(struct aj_session *s, json_t *req, size_t reply_max, double wall_sec,
			   struct aj_cancel *cancel, struct stream_tap *tap,
			   session_reply_fn on_reply, struct aj_result *res);
/* One request whose reply is data, not a result (files, a background
 * command's ops): 0 with *reply, or -errno with err "WHAT: why" (the
 * interpreter's own error included, as -errno). */
int session_request(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
		    json_t **reply, struct aj_error *err);
/* A background command's start (req: exec_request's "spawn" or "pty",
 * taken): 0 with *pid from the interpreter's reply, or -errno with err
 * "WHAT: why". */
int session_proc_start(struct aj_session *s, const char *what, json_t *req, uint32_t *pid,
		       struct aj_error *err);
/* session_request for a background command's read (a poll): it takes the
 * session only when no other call waits for it. */
int session_poll_request(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
			 json_t **reply, struct aj_error *err);
/* How long a poll may wait inside the sandbox (most: the caller's bound):
 * POLL_BUSY_MS while the session is in use by other calls (one behind the
 * poll waits for it), else most. */
#define POLL_BUSY_MS 5
int session_poll_ms(struct aj_session *s, int most);
/* A background read begins (+1) or ends (-1): session_poll_ms keeps reads
 * short while more than one is under way. */
void session_readers(struct aj_session *s, int delta);
/* Whether the session's tier wakes a poll for a call that waits behind it
 * (tier_ops.session_nudge): the poll's request says so to repl.py. */
bool session_nudges(struct aj_session *s);
/* A background command's end (its reply, the result by the status rules):
 * a SIGKILL nobody here sent becomes status memory when the tier counts
 * OOM kills in the session's sandbox since since_ms (session.c). */
void session_command_oom(struct aj_session *s, json_t *reply, double since_ms,
			 struct aj_result *res);
/* A command's request (session_exec.c), every part checked: "exec", or
 * "spawn" for one in the background (its timeout may be 0, none, up to
 * the session's lifetime; its stdin a pipe, x->stdin_data left to the
 * caller), or "pty" for one on a terminal (as "spawn"; the caller adds
 * the terminal's size). 0, or -errno with res saying why. */
enum exec_kind {
	EXEC_RUN,
	EXEC_SPAWN,
	EXEC_PTY,   /* EXEC_SPAWN's rules, on a terminal ("pty": its stdin is the terminal) */
	EXEC_CHECK, /* EXEC_RUN's checks, stdin not encoded */
};
int exec_request(const struct aj_config *cfg, const struct aj_exec *x, enum exec_kind kind,
		 json_t **out, double *timeout, struct aj_result *res);
/* A sequence of requests that nothing else comes between: session_hold
 * takes the session (checked open, resumed if paused) or fails saying
 * why; session_request_held sends one request under it;
 * session_release lets it go. */
int session_hold(struct aj_session *s, struct aj_error *err);
int session_request_held(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
			 json_t **reply, struct aj_error *err);
void session_release(struct aj_session *s);
/* session_hold, but a paused session is held as it is, not resumed:
 * *paused is then its state's private file (the session's: read it, never
 * close it), else -1 and the session is held as session_hold holds it.
 * Not a call: its idle clock does not restart. */
int session_hold_asleep(struct aj_session *s, int *paused, struct aj_error *err);
/* Brings a paused session's state (fd, a private file) into the new
 * sandbox session_sandbox_reopen made, the session held: 0 or -errno and
 * err. */
typedef int (*session_wake_fn)(struct aj_session *s, int fd, struct aj_error *err);
/* Held: the session's workspace as the host sees it (tier.h's
 * session_workspace): an O_PATH directory fd, the caller's; or -errno
 * (-ENOTSUP: the tier has none). */
int session_workspace_held(struct aj_session *s, struct aj_error *err);
/* How many session states crossed through that view (a checkpoint's out,
 * a restore's in) in this process: for tests, that the path is taken. */
unsigned long session_state_direct_moves(void);
/* Held: ends the session's sandbox (its egress proxy stays, for the next)
 * and keeps fd, which wake brings back at the next call (or close
 * closes); or, with pause_keep_sec and a tier that can, freezes it for
 * that long first (the next call in the window thaws it). */
void session_suspend(struct aj_session *s, int fd, session_wake_fn wake);
/* Whether s is paused with its sandbox frozen (pause_keep_sec), and how
 * many resumes in this process thawed one: for tests. */
bool session_frozen(const struct aj_session *s);
unsigned long session_thaws(void);
/* Pauses a held session (its state out, its sandbox ended): 0, or -errno
 * with err. session_checkpoint.c registers the one aj_session_pause uses,
 * for the idle timeout's pause (aj_session_limits.idle_pause). */
typedef int (*session_pause_fn)(struct aj_session *s, struct aj_error *err);
void session_register_idle_pause(session_pause_fn fn);
/* Held, and suspended: a new sandbox for the session, empty. */
int session_sandbox_reopen(struct aj_session *s, struct aj_error *err);

/* Ends s's sandbox (or its paused state) now, keeping the handle: its
 * next call answers that it is closed, because why, as for its idle
 * timeout or lifetime (a session closed already keeps its reason). Waits
 * for a call under way to end. For a server's operator (serve's admin
 * keys): aj_session_close is the owner's, and frees the handle. */
void session_end(struct aj_session *s, const char *why);
/* The session's config (its sandbox's copy); NULL for no session. */
const struct aj_config *session_config(const struct aj_session *s);
/* sandbox_given_config of the session's sandbox. */
void session_given_config(const struct aj_session *s, struct aj_config *out);
/* to's egress rules and secrets narrowed as from's are now (a fork's
 * copies: a copy never regains what its session dropped). 0 or -errno. */
int session_narrow_like(struct aj_session *to, struct aj_session *from, struct aj_error *err);
/* A call's stream started (NULL stream: none): 0, or -errno with res
 * saying why. */
int session_stream_start(const struct aj_stream *stream, struct stream_tap **tap,
			 struct aj_result *res);
/* What aj_session_exec would refuse x for under cfg (a session's config),
 * checked without a session or a sandbox: for a front end that answers a
 * refusal before it starts a call (serve's 400 before a stream). 0, or
 * aj_session_exec's -errno with err in its words. */
int session_exec_check(const struct aj_config *cfg, const struct aj_exec *x,
		       struct aj_error *err);
/* The same for aj_session_spawn's x (a background command's timeout). */
int session_spawn_check(const struct aj_config *cfg, const struct aj_exec *x,
			struct aj_error *err);
/* A cell of code (Python's, or the JavaScript of language.c) as one call:
 * op is repl.py's ("run", "js"), on_reply reads its reply. The body of
 * aj_session_run_streaming. */
int session_run_op(struct aj_session *s, const char *op, session_reply_fn on_reply,
		   const char *code, size_t len, struct aj_cancel *cancel,
		   const struct aj_stream *stream, struct aj_result *res);
/* 0 if name may name a cell's context (aj_session_run_cell), else
 * -EINVAL with err saying the rule. */
int cell_context_check(const char *name, struct aj_error *err);
/* session_run_op with a notebook cell's asks (value, context, fresh) for
 * repl.py (cell NULL: none); aj_session_run_cell's body. */
int session_cell_op(struct aj_session *s, const char *op, const struct aj_cell *cell,
		    session_reply_fn on_reply, const char *code, size_t len,
		    struct aj_cancel *cancel, const struct aj_stream *stream,
		    struct aj_result *res);
/* A caller's path as one relative to the workspace (*rel, inside path):
 * valid UTF-8, no "..", absolute only under the workspace; the workspace
 * itself only if may_be_workspace. 0, or -errno with err naming why. */
int session_workspace_path(const char *path, bool may_be_workspace, const char **rel,
			   struct aj_error *err);
/* An open sandbox's tier, its state and its own copy of the config. */
const struct tier_ops *sandbox_ops(const struct aj_sandbox *sb);
void *sandbox_state(const struct aj_sandbox *sb);
const struct aj_config *sandbox_config(const struct aj_sandbox *sb);
/* The config as its caller gave it, with the sandbox's own copies of its
 * strings (valid while sb is open), without what open added to it (the
 * trust bundle's bind and path, the placeholders' variables): what a copy
 * of one of its sessions (a fork) is opened with. */
void sandbox_given_config(const struct aj_sandbox *sb, struct aj_config *out);
/* With secrets: the sandbox's interception CA its proxies mint from. */
struct mitm_ca *sandbox_mitm_ca(const struct aj_sandbox *sb);
/* The fd a cancel token makes readable; -1 for none. */
int cancel_fd(const struct aj_cancel *c);

#endif
