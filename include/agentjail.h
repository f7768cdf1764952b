/* agentjail — run untrusted Python in a sandbox and get back what it printed
 * and how it ended.
 *
 *   struct aj_config cfg;
 *   aj_config_init(&cfg);                 // the defaults of docs/design.md
 *   cfg.tier = AJ_TIER_PROCESS;
 *   struct aj_sandbox *sb;
 *   struct aj_error err;
 *   if (aj_open(&cfg, &sb, &err) != 0) { fprintf(stderr, "%s\n", err.message); ... }
 *   struct aj_result res;
 *   aj_run(sb, code, strlen(code), &res); // res.status, res.stdout_buf, ...
 *   aj_result_free(&res);
 *   aj_close(sb);
 *
 * Functions return 0 or a negative errno; failures carry a message naming the
 * step that failed. aj_run may be called from several threads at once on one
 * sandbox: each call is its own run, isolated from the others.
 */
#ifndef AGENTJAIL_H
#define AGENTJAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGENTJAIL_VERSION "0.5.0"

enum aj_tier {
	AJ_TIER_PROCESS = 0,
	AJ_TIER_CONTAINER,
	AJ_TIER_MICROVM,
	AJ_TIER_DOCKER,
	AJ_TIER_GVISOR,
	AJ_TIER_COUNT
};

enum aj_status {
	AJ_STATUS_OK = 0,        /* exit code 0 */
	AJ_STATUS_ERROR,         /* non-zero exit code */
	AJ_STATUS_TIMEOUT,       /* wall clock or CPU time limit */
	AJ_STATUS_MEMORY,        /* the memory limit stopped it */
	AJ_STATUS_OUTPUT_LIMIT,  /* stdout or stderr passed its cap; the run was stopped */
	AJ_STATUS_KILLED,        /* ended by another signal */
	AJ_STATUS_SANDBOX_ERROR, /* the sandbox itself failed; never the code's fault */
	AJ_STATUS_COUNT
};

/* Every limit a deployer sets. Zero never means "unlimited": aj_config_init
 * fills the defaults, and aj_config_validate rejects out-of-range values. */
struct aj_limits {
	double wall_sec;        /* wall clock, enforced by the supervisor */
	uint32_t cpu_sec;       /* CPU seconds (RLIMIT_CPU soft; hard = soft + 1) */
	uint32_t memory_mb;     /* memory (address space in the process tier) */
	uint32_t pids;          /* processes and threads */
	uint32_t file_size_mb;  /* largest file the program may write */
	uint32_t disk_mb;       /* all writable space: /tmp, /var/tmp, /dev/shm, cwd */
	uint32_t output_kb;     /* cap on each of stdout and stderr */
	uint32_t open_files;    /* RLIMIT_NOFILE */
};

#define AJ_DEFAULT_WALL_SEC 10.0
#define AJ_DEFAULT_CPU_SEC 10
#define AJ_DEFAULT_MEMORY_MB 256
#define AJ_DEFAULT_PIDS 64
#define AJ_DEFAULT_FILE_SIZE_MB 16
#define AJ_DEFAULT_DISK_MB 64
#define AJ_DEFAULT_OUTPUT_KB 1024
#define AJ_DEFAULT_OPEN_FILES 256
/* Runs started as root get uid/gid AJ_DEFAULT_UID_BASE + slot: a range no
 * distribution, systemd or subuid allocation hands out. */
#define AJ_DEFAULT_UID_BASE 2000000000u
#define AJ_DEFAULT_SLOTS 64
#define AJ_DEFAULT_PYTHON "/usr/bin/python3"
#define AJ_DEFAULT_IMAGE "default"
#define AJ_DEFAULT_IMAGES_DIR "/var/lib/agentjail/images"

/* What bounds a session (aj_session_open) beyond each call's own limits.
 * Memory, pids and disk (aj_limits) already hold for the session as a
 * whole: its processes and its one workspace live as long as it does. */
struct aj_session_limits {
	double idle_sec;        /* closed after this long without a call */
	double lifetime_sec;    /* closed this long after it opened, however busy */
	uint32_t cpu_sec;       /* CPU seconds of every call together */
	uint32_t max_sessions;  /* open at once in this process */
	uint32_t transfer_mb;   /* largest file put into or got out of it */
	uint32_t images;        /* most images one call returns */
	uint32_t image_kb;      /* largest image a call returns */
	/* At idle_sec: paused (aj_session_pause: its sandbox freed, its state
	 * kept, resumed by its next call, which is told) instead of closed. */
	bool idle_pause;
	/* A pause (aj_session_pause, or idle_pause's) first freezes the
	 * session's sandbox where the tier can (the container tier's
	 * cgroup): its CPU freed at once, its memory kept for up to this many
	 * seconds, and a resume within them thaws it instead of rebuilding
	 * it. Then the sandbox is ended as by a pause with 0 (the default:
	 * ended at once, memory freed). The state is written out either way,
	 * so a checkpoint of the paused session, or a thaw that fails, has it. */
	double pause_keep_sec;
};

#define AJ_DEFAULT_SESSION_IDLE_SEC 300.0
#define AJ_MAX_PAUSE_KEEP_SEC 86400.0
#define AJ_DEFAULT_SESSION_LIFETIME_SEC 3600.0
#define AJ_DEFAULT_SESSION_CPU_SEC 600
#define AJ_DEFAULT_MAX_SESSIONS 16
#define AJ_DEFAULT_TRANSFER_MB 16
#define AJ_DEFAULT_IMAGES 8
#define AJ_DEFAULT_IMAGE_KB 2048

/* What bounds the traffic egress rules let through, per run and per session
 * (docs/egress.md). Zero never means unlimited, but for kbps: 0 is no
 * bandwidth cap. */
struct aj_egress_limits {
	uint32_t out_mb;        /* bytes the code sends, all connections together */
	uint32_t in_mb;         /* bytes it receives */
	uint32_t connections;   /* connections it opens */
	uint32_t kbps;          /* each direction's rate; 0: no cap */
};

#define AJ_DEFAULT_EGRESS_OUT_MB 64
#define AJ_DEFAULT_EGRESS_IN_MB 1024
#define AJ_DEFAULT_EGRESS_CONNECTIONS 256

struct aj_config {
	enum aj_tier tier;
	struct aj_limits limits;
	const char *python;     /* interpreter path (absolute); NULL = default */
	uint32_t uid_base;      /* first sandbox uid when started as root */
	uint32_t slots;         /* how many runs may hold their own uid at once */
	const char *state_dir;  /* slot locks; NULL = /run/agentjail */
	/* container, microvm and gvisor tiers: the image, by name (in AJ_DEFAULT_IMAGES_DIR or
	 * $AGENTJAIL_IMAGES) or as an absolute path to an image directory;
	 * NULL = "default". */
	const char *image;
	const char *cgroup_root; /* NULL = /sys/fs/cgroup */
	/* microvm tier: "kvm", "tcg", or NULL to use KVM where a probe boot
	 * succeeds (the verdict is cached) and TCG elsewhere. gvisor tier:
	 * the platform, "kvm" or "ptrace", or NULL for KVM where a probe run
	 * succeeds (cached) and ptrace elsewhere. */
	const char *accel;
	/* microvm tier: VMs kept restored and ready, so a run skips QEMU's
	 * start and the restore; gvisor tier: sandboxes started ahead, boot.py
	 * in each waiting for its program, so a run skips runsc's start (0:
	 * none). Each still serves one run. */
	uint32_t vm_pool;
	/* docker tier: the engine's unix socket (NULL: $DOCKER_HOST when it is
	 * unix://PATH, else /var/run/docker.sock), and the engine image to run
	 * (NULL: agentjail/IMAGE, which `agentjail image build --docker`
	 * imports; any image with python3 on its PATH will do). */
	const char *docker_socket;
	const char *docker_image;
	struct aj_session_limits session;
	/* process and container tiers: warm mode. Each run is a fork of an
	 * interpreter started once (a zygote, src/warm/warm.c), still with
	 * its own namespaces, uid, tmpfs, limits and filter; the zygote is
	 * replaced after a number of runs or when it dies. preload: modules
	 * the zygote imports before its first run, comma-separated
	 * ("numpy,pandas"); NULL or "" for none. Only with warm. */
	bool warm;
	const char *preload;
	/* Host paths every run sees read-only (also nosuid and nodev), each
	 * "HOST" (shown at the same path) or "HOST:SANDBOX", both absolute;
	 * at most AJ_MAX_RO_BINDS. process, container, gvisor and docker
	 * tiers (the microvm guest has no host path to show). SANDBOX must
	 * be outside /proc, /dev, /sys, /tmp and /var/tmp (the run's own), and
	 * either exist in the tier's view or lie under an empty directory of
	 * it (such as /mnt), which then holds only the mount point. HOST must
	 * exist when the sandbox opens, and stays what it named then (its
	 * symlinks are resolved once). */
	const char *const *ro_binds;
	uint32_t ro_bind_count;
	/* Environment variables the program gets beside the contract's
	 * (docs/design.md rule E1), each "NAME=VALUE": at most AJ_MAX_ENV, of
	 * AJ_MAX_ENV_BYTES together, no newline in a value. A name the
	 * sandbox sets itself (PATH, HOME, ...), a proxy variable (egress owns
	 * them), LD_* and the PYTHON* that change what runs are refused, each
	 * with its reason (aj_config_validate). A session opened with the
	 * config has them too; every tier hands them on. */
	const char *const *env;
	uint32_t env_count;
	/* Egress (docs/egress.md): the destinations the code may reach,
	 * through agentjail's proxy outside the sandbox, and nothing else.
	 * None of either (the default): no network at all. allow_hosts:
	 * "PATTERN[:PORTS]" ("pypi.org", "*.pythonhosted.org:443");
	 * allow_cidrs: "CIDR[:PORTS]" ("10.1.0.0/16:5432"), the only way to
	 * reach loopback, private, link-local or metadata addresses. PORTS:
	 * "443" or "80,443", by default 80 and 443. At most AJ_MAX_EGRESS_RULES
	 * of each. */
	const char *const *allow_hosts;
	uint32_t allow_host_count;
	const char *const *allow_cidrs;
	uint32_t allow_cidr_count;
	struct aj_egress_limits egress;
	/* A PEM file of CA certificates the sandbox trusts beside its view's
	 * own bundle (docs/egress.md, "HTTPS"): a private index, an internal
	 * service, a TLS-inspecting proxy. When the sandbox opens, the image's
	 * /etc/ssl/certs/ca-certificates.crt (the host's, on the process
	 * tier) and this file's certificates are joined into one bundle that
	 * every tier shows read-only at that path. Certificates only (no key),
	 * at most AJ_MAX_TRUST_CA_KB. NULL: the view's bundle alone. */
	const char *trust_ca;
	/* Credentials the code can use but never see (docs/secrets.md): a JSON
	 * array, the text of the CLI's --secrets FILE, each item
	 *   {"name": "GH", "value": "...", "hosts": ["api.github.com:443"],
	 *    "header": "Authorization", "format": "Bearer {value}"}
	 * or {"name", "value", "hosts", "placeholder": true}: the program
	 * writes AJ_SECRET_GH (its environment's AJ_SECRET_GH holds only that
	 * text) in a header and the proxy swaps the value in. Optional:
	 * "plain_http": true (inject into plain HTTP too; off by default),
	 * "requests": ["GET /repos/acme/"] (method and path prefix: only those
	 * requests go to the secret's hosts). The egress proxy, outside the
	 * sandbox, adds the value to requests for the secret's own hosts once
	 * the allow rules admit them, terminating the program's TLS with a
	 * certificate from a CA made for this sandbox (its key never enters
	 * it) and verifying the upstream's. At most AJ_MAX_SECRETS, each value
	 * at most AJ_MAX_SECRET_BYTES. The value is never readable back: not
	 * in a result, a log, an error or a checkpoint. NULL: none. */
	const char *secrets;
	/* A PEM file of CA certificates the egress proxy trusts, beside the
	 * host's store, for the upstreams of intercepted (secret-bearing)
	 * connections: a private service's CA, a test's. NULL: the host's
	 * store alone. */
	const char *egress_ca;
	/* The names a command's own environment additions may set
	 * (aj_session_exec's and aj_session_spawn's x->env, and every front
	 * end's): each a name ("GREETING") or a prefix ending in '*'
	 * ("APP_*"), at most AJ_MAX_ENV. The variable rules of env above
	 * hold for them all the same. None (the default): any name those
	 * rules allow. */
	const char *const *exec_env_allow;
	uint32_t exec_env_allow_count;
};

#define AJ_MAX_RO_BINDS 16
#define AJ_MAX_TRUST_CA_KB 256
#define AJ_MAX_ENV 64
#define AJ_MAX_ENV_BYTES 32768
#define AJ_MAX_EGRESS_RULES 32
#define AJ_MAX_SECRETS 16
#define AJ_MAX_SECRET_BYTES 4096

#define AJ_ERROR_MAX 512
struct aj_error {
	int code;                    /* negative errno, 0 if none */
	char message[AJ_ERROR_MAX];  /* "step: reason" */
};

struct aj_result {
	enum aj_status status;
	int exit_code;          /* valid when has_exit_code */
	bool has_exit_code;
	int signal;             /* terminating signal, 0 if none */
	char *stdout_buf;       /* raw bytes, NUL-terminated for convenience */
	size_t stdout_len;
	bool stdout_truncated;
	char *stderr_buf;
	size_t stderr_len;
	bool stderr_truncated;
	double wall_ms;
	double cpu_ms;
	uint64_t memory_kb;     /* peak resident set */
	char *message;          /* why: for sandbox_error, memory, timeout, output_limit; else NULL */
	/* Sessions only: images the call produced (matplotlib figures it left
	 * open, new images in the workspace's outputs/), at most
	 * session.images of at most session.image_kb each; the rest are
	 * counted in images_dropped. */
	struct aj_image *images;
	size_t image_count;
	size_t images_dropped;
	/* With egress rules: the proxy's decisions during this run or call, a
	 * JSON object (docs/egress.md, "The decision log"); else NULL. */
	char *egress_log;
	/* Sessions only: the session's background commands (aj_session_spawn,
	 * aj_session_pty) still running when the call ended, by pid, at most
	 * AJ_MAX_BACKGROUND_LISTED; NULL and 0 when none. */
	uint32_t *background_pids;
	size_t background_count;
	/* A cell's with value (aj_session_run_cell): the value of its last bare
	 * expression, as a notebook's cell result (not printed): its repr(),
	 * and its HTML where the object offers one (_repr_html_: a pandas
	 * DataFrame), each UTF-8, NUL-terminated, at most the output limit;
	 * NULL when the cell ended without one (no bare expression last, its
	 * value None, or the cell failed). */
	char *value_text;
	char *value_html;
};
#define AJ_MAX_BACKGROUND_LISTED 256

struct aj_image {
	char *name;             /* "figure-1.png", "outputs/plot.png" */
	char *mime;             /* "image/png", ... */
	unsigned char *data;
	size_t len;
};

struct aj_sandbox;

void aj_config_init(struct aj_config *cfg);
/* 0, or -EINVAL with err naming the limit and its allowed range. */
int aj_config_validate(const struct aj_config *cfg, struct aj_error *err);

int aj_open(const struct aj_config *cfg, struct aj_sandbox **out, struct aj_error *err);
/* Runs code (Python source bytes) in a fresh sandbox. Always fills *res (a
 * failure of the sandbox is status AJ_STATUS_SANDBOX_ERROR with a message);
 * returns 0 when the program ran, -errno when it could not be started. */
int aj_run(struct aj_sandbox *sb, const char *code, size_t len, struct aj_result *res);
void aj_close(struct aj_sandbox *sb);
void aj_result_free(struct aj_result *res);

/* Cancelling a run from another thread (an MCP client's
 * notifications/cancelled, say): aj_cancel_fire stops the sandbox as a
 * timeout would, and the run ends with status killed and the message
 * "cancelled". A token serves one run; aj_cancel_fire is async-signal-safe. */
struct aj_cancel;
int aj_cancel_new(struct aj_cancel **out);
void aj_cancel_fire(struct aj_cancel *c);
void aj_cancel_free(struct aj_cancel *c);
int aj_run_cancellable(struct aj_sandbox *sb, const char *code, size_t len,
		       struct aj_cancel *cancel, struct aj_result *res);

/* ---- Streaming: output as it happens (docs/streaming.md) ----
 *
 * A run or a session call given a struct aj_stream reports the program's
 * output as the supervisor reads it, before the run ends, as events to
 * stream->fn: stdout and stderr chunks in the order they were read, then
 * (sessions) each image the call produced. aj_result is filled as without
 * streaming (the chunks are also in stdout_buf/stderr_buf, under the same
 * output caps: past a cap the run stops as it always does, and no chunk
 * past the cap is delivered).
 *
 * fn runs on a thread of the library's own, never the caller's, one event
 * at a time, and every event is delivered before the run's function
 * returns. Between the supervisor and fn is a buffer of buffer_kb KiB
 * (0: AJ_DEFAULT_STREAM_BUFFER_KB): while it is full, the supervisor
 * stops reading the program's output, so the program blocks in write()
 * (as it would on a full pipe), and its wall clock still runs: a consumer
 * slower than the program makes it slower, may make it time out, and never
 * grows memory past the buffer. */
enum aj_event_kind { AJ_EVENT_STDOUT, AJ_EVENT_STDERR, AJ_EVENT_IMAGE };

struct aj_event {
	enum aj_event_kind kind;
	const char *data;       /* raw bytes (not NUL-terminated); an image's bytes */
	size_t len;
	const char *name;       /* AJ_EVENT_IMAGE: "figure-1.png"; else NULL */
	const char *mime;       /* AJ_EVENT_IMAGE: "image/png"; else NULL */
	uint64_t offset;        /* bytes of this stream delivered before this chunk */
};

typedef void (*aj_event_fn)(void *arg, const struct aj_event *ev);

#define AJ_DEFAULT_STREAM_BUFFER_KB 1024

struct aj_stream {
	aj_event_fn fn;
	void *arg;
	uint32_t buffer_kb;     /* 0: the default; at most the output cap's worth is useful */
};

/* aj_run_cancellable, streaming to stream (NULL: as aj_run_cancellable). */
int aj_run_streaming(struct aj_sandbox *sb, const char *code, size_t len, struct aj_cancel *cancel,
		     const struct aj_stream *stream, struct aj_result *res);

/* ---- Sessions: one sandbox that lives across calls ----
 *
 * A session keeps an interpreter alive inside one sandbox of the configured
 * tier: globals, imports and workspace files persist from call to call. Each
 * call gets the per-call limits (wall clock, CPU, output) and returns the
 * same aj_result as aj_run, plus any images it produced. A call that ends
 * the interpreter (a crash, a timeout, a limit) ends with the usual status;
 * the next call gets a fresh interpreter in the same sandbox (files kept)
 * and says in its message that the state was lost. The session closes on
 * aj_session_close, its idle timeout or its lifetime; its sandbox is then
 * destroyed completely and every later call fails with the reason.
 *
 * Files: paths are relative to the workspace (or absolute under
 * AJ_SESSION_WORKSPACE); "..", symlinks and special files are refused. One
 * session is used by one call at a time (calls from several threads wait
 * their turn); sessions are independent of each other. */
#define AJ_SESSION_WORKSPACE "/tmp/work"

struct aj_session;

enum aj_file_type { AJ_FILE_REGULAR = 0, AJ_FILE_DIRECTORY, AJ_FILE_SYMLINK, AJ_FILE_OTHER };

struct aj_file_info {
	char *name;             /* valid UTF-8 (invalid bytes shown as U+FFFD) */
	enum aj_file_type type;
	uint64_t size;
};

int aj_session_open(const struct aj_config *cfg, struct aj_session **out, struct aj_error *err);
/* As aj_run: always fills *res; 0 when the code ran, -errno when it could
 * not (an unknown or closed session: -ESHUTDOWN with the reason). */
int aj_session_run(struct aj_session *s, const char *code, size_t len, struct aj_result *res);
int aj_session_run_cancellable(struct aj_session *s, const char *code, size_t len,
			       struct aj_cancel *cancel, struct aj_result *res);
/* As aj_session_run_cancellable, streaming the call's output and images
 * (see "Streaming" above; NULL stream: no streaming). */
int aj_session_run_streaming(struct aj_session *s, const char *code, size_t len,
			     struct aj_cancel *cancel, const struct aj_stream *stream,
			     struct aj_result *res);
/* ---- Languages: Python (the default) and JavaScript (docs/javascript.md)
 *
 * A session's JavaScript runs in one Node interpreter of the session's,
 * started on its first JavaScript call, as a child of the session's Python
 * interpreter (so in the same sandbox, under the same limits): top-level
 * let, const, class and function declarations persist from call to call,
 * top-level await works, the last expression's value is shown (not
 * undefined), an uncaught error prints its stack on stderr and exits 1. A
 * sandbox whose image has no node refuses with a sandbox_error naming the
 * package. A one-shot run (aj_run_lang) runs the JavaScript with node in a
 * fresh sandbox: the exit code, stdout and stderr are node's. */
/* TypeScript (AJ_LANG_TYPESCRIPT) runs as the JavaScript left once the
 * image's TypeScript compiler (Debian's node-typescript) has stripped its
 * types; types are not checked. A session's TypeScript cells share the
 * JavaScript cells' node and state; a syntax error exits 1 with the
 * compiler's FILE:LINE:COL lines on stderr. Without the compiler a session
 * call is a sandbox_error naming the package, a one-shot run exits 127
 * saying the same on stderr. */
/* A shell line (AJ_LANG_BASH: /bin/bash -c, AJ_LANG_SH: /bin/sh -c) runs
 * as a command does (docs/commands.md): one-shot, a fresh sandbox whose
 * program is the shell, its exit code and output the shell's; in a
 * session, aj_session_exec's command. An image without that shell ends
 * with exit 127, saying so. */
enum aj_language {
	AJ_LANG_PYTHON = 0,
	AJ_LANG_JAVASCRIPT = 1,
	AJ_LANG_BASH = 2,
	AJ_LANG_SH = 3,
	AJ_LANG_TYPESCRIPT = 4
};
#define AJ_LANGUAGE_NAMES "python, javascript (js), typescript (ts), bash, sh (shell)"
/* A name of AJ_LANGUAGE_NAMES: 0, else -EINVAL (out unchanged). */
int aj_language_parse(const char *name, enum aj_language *out);
const char *aj_language_name(enum aj_language lang);
/* aj_run_streaming in lang (cancel and stream may be NULL). */
int aj_run_lang(struct aj_sandbox *sb, enum aj_language lang, const char *code, size_t len,
		struct aj_cancel *cancel, const struct aj_stream *stream, struct aj_result *res);
/* aj_session_run_streaming in lang (cancel and stream may be NULL). */
int aj_session_run_lang(struct aj_session *s, enum aj_language lang, const char *code,
			size_t len, struct aj_cancel *cancel, const struct aj_stream *stream,
			struct aj_result *res);
/* A cell as a notebook runs it (the E2B-compatible API's code interpreter
 * does, docs/e2b.md). */
struct aj_cell {
	enum aj_language lang;  /* AJ_LANG_PYTHON, JAVASCRIPT or TYPESCRIPT */
	const char *code;
	size_t len;
	/* Python: a last bare expression's value is not printed; it comes
	 * back in res->value_text (and value_html). */
	bool value;
	/* Python: a namespace of its own by name, made on first use (its own
	 * variables; the interpreter's modules, the files and the working
	 * directory are the session's), at most AJ_MAX_CONTEXTS at once;
	 * NULL: __main__'s, which aj_session_run uses. 1 to 64 of
	 * [A-Za-z0-9_.-]. */
	const char *context;
	/* The context's variables (JavaScript and TypeScript: node's whole
	 * state) are forgotten before the cell runs: a kernel's restart. A
	 * fresh Python context given no code is dropped. */
	bool fresh;
};
#define AJ_MAX_CONTEXTS 32
/* cell in the session (cancel and stream may be NULL); fields another
 * language has not (value, context outside Python) are -EINVAL, res
 * naming them. */
int aj_session_run_cell(struct aj_session *s, const struct aj_cell *cell,
			struct aj_cancel *cancel, const struct aj_stream *stream,
			struct aj_result *res);
/* Writes (creates or replaces) a workspace file, making its directories. */
int aj_session_put(struct aj_session *s, const char *path, const void *data, size_t len,
		   struct aj_error *err);
/* Reads a workspace file: *data is malloc'ed (NUL-terminated past len). */
int aj_session_get(struct aj_session *s, const char *path, void **data, size_t *len,
		   struct aj_error *err);
/* The entries of a workspace directory ("" or "." for the workspace). */
int aj_session_list(struct aj_session *s, const char *dir, struct aj_file_info **entries,
		    size_t *count, struct aj_error *err);
void aj_file_list_free(struct aj_file_info *entries, size_t count);
/* A command in a session's sandbox (aj_session_exec): one more program of
 * the session, as its user, in its workspace, under the same limits, egress
 * rules and status ladder as a cell. Either command (run by /bin/sh -c) or
 * argv (argv[0] looked up on PATH), not both. */
struct aj_exec {
	const char *command;           /* a shell command line, or NULL */
	const char *const *argv;       /* NULL-terminated, or NULL */
	/* The working directory, relative to the workspace (or absolute under
	 * it); NULL or "": the workspace. "..", and a symlink anywhere on
	 * the way, are refused. */
	const char *cwd;
	/* NAME=VALUE additions to the session's environment, checked by the
	 * rules that check the deployer's own (docs/design.md, rule E1). */
	const char *const *env;
	uint32_t env_count;
	const void *stdin_data;        /* its stdin (NULL: /dev/null) */
	size_t stdin_len;              /* at most the session's transfer_mb */
	/* The command's own deadline in seconds: 0 for the wall-clock limit,
	 * never more than it. The command's whole process group is killed
	 * when it passes, and the session's interpreter keeps its state. */
	double timeout_sec;
};

/* Runs x in the session's sandbox and fills res as aj_session_run does:
 * its exit code or signal, its output (streamed to stream as it comes,
 * NULL: not streamed), the status by the same ladder. What the command
 * leaves running in its process group is killed when it ends. 0 when it
 * ran (whatever its status), -EINVAL with res saying why for a bad x,
 * -ESHUTDOWN for a closed session. */
int aj_session_exec(struct aj_session *s, const struct aj_exec *x, struct aj_cancel *cancel,
		    const struct aj_stream *stream, struct aj_result *res);
/* ---- Background commands: started now, waited on, fed and signalled later
 *
 * aj_session_spawn starts x in the background and returns its pid at once
 * (x->timeout_sec: 0 for none, at most the session's lifetime; x->stdin_data
 * is written to its stdin first, which then closes unless stdin_open). Its
 * output is kept in the sandbox, up to the output limit a stream (past it
 * its process group is killed: output_limit); it dies with the session and
 * with the session's interpreter (a call that ends it ends them too). Any
 * number of waits may follow, one after another or from another thread or
 * caller holding the session: aj_session_proc_wait streams its output from
 * the start and fills res as aj_session_exec does once it ended (cancel
 * stops the wait, not the command). Other calls of the session go on
 * between a wait's reads. */
struct aj_proc_info {
	uint32_t pid;
	char *command;          /* the shell line, or the argv joined by spaces */
	bool running;
};

int aj_session_spawn(struct aj_session *s, const struct aj_exec *x, bool stdin_open,
		     uint32_t *pid, struct aj_error *err);
int aj_session_proc_wait(struct aj_session *s, uint32_t pid, struct aj_cancel *cancel,
			 const struct aj_stream *stream, struct aj_result *res);
/* Writes data to its stdin (close: then closes it). -ESRCH: no such
 * command in this session; -EPIPE: its stdin is closed. */
int aj_session_proc_input(struct aj_session *s, uint32_t pid, const void *data, size_t len,
			  bool close, struct aj_error *err);
/* Sends signal (1 to 64) to its process group; nothing once it ended. */
int aj_session_proc_signal(struct aj_session *s, uint32_t pid, int signal, struct aj_error *err);
/* The session's background commands, running and recently ended. */
int aj_session_procs(struct aj_session *s, struct aj_proc_info **procs, size_t *count,
		     struct aj_error *err);
void aj_proc_list_free(struct aj_proc_info *procs, size_t count);
/* One read of its output from given offsets of its stdout and stderr (the
 * bytes a caller has already), without waiting for its end: a caller that
 * keeps its own place (serve's event stream, resumed after a dropped
 * connection) reads on from it. At most 256 KiB of each stream; wait_ms
 * (0 to 200) is how long the read waits inside the sandbox for a byte or
 * the end when none is there yet. ended: nothing follows these bytes and
 * the command ended (aj_session_proc_wait then gives its result at once).
 * 0; -ESRCH no such command in this session; -EINVAL an offset past what
 * the command printed, or a bad argument. */
struct aj_proc_output {
	char *out, *err; /* malloc'ed; NULL when nothing came */
	size_t out_len, err_len;
	bool ended;
	/* Where out starts: out_offset, or past it when a terminal's output
	 * (kept as a window, aj_session_pty) moved on; the bytes between
	 * are gone. The next read goes from out_from + out_len. */
	uint64_t out_from;
};
int aj_session_proc_read(struct aj_session *s, uint32_t pid, uint64_t out_offset,
			 uint64_t err_offset, int wait_ms, struct aj_proc_output *got,
			 struct aj_error *err);
void aj_proc_output_free(struct aj_proc_output *got);

/* ---- A terminal: a command on a pseudo-terminal of the session's own
 *
 * aj_session_pty starts x (NULL: /bin/bash) in the background as
 * aj_session_spawn does, but on a terminal: the pty's slave is its stdin,
 * stdout, stderr and controlling terminal, cols x rows its size (1 to
 * 4096 each). aj_session_proc_input types into it (bytes as keys: "\x03"
 * is Ctrl-C to its foreground job, close sends Ctrl-D), aj_session_proc_wait
 * streams what it shows (all of it on stdout; a terminal's output is kept
 * as a window of the last output-limit bytes and never ends it for
 * output_limit), aj_session_proc_signal signals it, and
 * aj_session_pty_resize changes its size (its foreground job gets
 * SIGWINCH). x->stdin_data, if any, is typed once it runs. The terminal
 * is the sandbox's own (a devpts instance of at most 16 ptys); the docker
 * tier offers none (-EOPNOTSUPP, err saying why). */
/* A terminal's side, columns or rows, at most: far past any screen,
 * small enough for a request. */
#define AJ_PTY_SIDE_MAX 4096
int aj_session_pty(struct aj_session *s, const struct aj_exec *x, uint16_t cols, uint16_t rows,
		   uint32_t *pid, struct aj_error *err);
/* -ENOTTY: pid has no terminal; nothing once it ended. */
int aj_session_pty_resize(struct aj_session *s, uint32_t pid, uint16_t cols, uint16_t rows,
			  struct aj_error *err);

/* An id naming the session (random, 32 hex digits), for front ends. */
const char *aj_session_id(const struct aj_session *s);
/* NULL while the session is open; else why it closed ("idle for 300 s"). */
const char *aj_session_closed_reason(const struct aj_session *s);
/* Destroys the sandbox (if a limit has not already) and frees s. */
void aj_session_close(struct aj_session *s);
/* Narrows the session's egress rules: only the listed ones (each as the
 * config gave it, "pypi.org:443") stay; every one must be a rule the
 * session has now, else -EPERM naming it and nothing changes. Open for
 * `pip install`, then lock with none. Connections open now are cut. */
int aj_session_egress_keep(struct aj_session *s, const char *const *hosts, uint32_t n_hosts,
			   const char *const *cidrs, uint32_t n_cidrs, struct aj_error *err);
/* Narrows the session's secrets: only the named ones stay (each must be one
 * the session has now, else -EPERM naming it and nothing changes); the
 * proxy sends the others no more, at once, and cuts the connections that
 * carry them. */
int aj_session_secrets_keep(struct aj_session *s, const char *const *names, uint32_t n_names,
			    struct aj_error *err);

/* ---- Checkpoints, pauses and forks (docs/checkpoints.md) ----
 *
 * A session's state is its workspace's files and what its Python cells'
 * namespaces (__main__'s and each context's) hold: variables, imports,
 * functions, lambdas and classes the cells defined, a DataFrame, an open
 * figure.
 * It is written by the interpreter inside the sandbox and read back by
 * another sandbox (never unpickled by the host), on every tier. Not
 * carried, and said in aj_checkpoint_info.note: a value that cannot be
 * pickled (a generator, an open file, a lock, an Enum a cell defined),
 * background commands (they are not
 * restarted), the session's JavaScript state, the egress proxy's open
 * connections. A restored or forked session runs under the config it is
 * given now: the limits and egress rules of the checkpoint's day are not
 * in the file. */
#define AJ_CHECKPOINT_KEY_BYTES 32
/* The host's key: every checkpoint file carries an HMAC-SHA256 under it,
 * and one that does not match is refused before any byte of it is used. */
struct aj_checkpoint_key {
	unsigned char bytes[AJ_CHECKPOINT_KEY_BYTES];
};
/* The key in the file at path (exactly 32 bytes, a regular file of mode
 * 0600 or stricter, owned by this uid); with create, one is made there
 * first when none is (random, mode 0600, created exclusively). */
int aj_checkpoint_key_load(const char *path, bool create, struct aj_checkpoint_key *key,
			   struct aj_error *err);

struct aj_checkpoint_info {
	uint64_t bytes;    /* the state's size (the file adds a header and tag) */
	uint32_t files;    /* workspace files carried */
	uint32_t left_out; /* variables that could not be written */
	/* What was not carried, in words (the variables by name and why,
	 * background commands by pid, JavaScript); "" when nothing. */
	char note[1024];
};

/* Writes s's state to path (a new file, mode 0600; replaced atomically if
 * one is there) under key. The session goes on as it was (a paused one
 * stays paused: the state its pause kept is copied, no sandbox woken). 0,
 * or -errno with err; info (may be NULL) says what was carried. */
int aj_session_checkpoint(struct aj_session *s, const struct aj_checkpoint_key *key,
			  const char *path, struct aj_checkpoint_info *info, struct aj_error *err);
/* A new session under cfg, with the state of the checkpoint at path: its
 * tag is checked under key first (-EBADMSG: changed, truncated, another
 * key's, or no checkpoint; nothing is opened). A state made by another
 * Python version is refused (-EPROTO), as its functions' code would not
 * load. */
int aj_session_restore(const struct aj_config *cfg, const struct aj_checkpoint_key *key,
		       const char *path, struct aj_session **out, struct aj_checkpoint_info *info,
		       struct aj_error *err);
/* n (1 to AJ_MAX_FORK) new sessions under s's config, each with s's state
 * now, independent of each other and of s (which goes on); out has room
 * for n. All or none: on failure none is left open. Each counts against
 * max_sessions. */
#define AJ_MAX_FORK 100
int aj_session_fork(struct aj_session *s, unsigned n, struct aj_session **out,
		    struct aj_checkpoint_info *info, struct aj_error *err);
/* Frees the session's sandbox (its CPU and memory) and keeps its state in
 * a private file of this process: the next call on it (or
 * aj_session_resume) brings it back in a new sandbox, as it was. A paused
 * session has no idle timeout; its lifetime still ends it. -EALREADY when
 * it is paused. */
int aj_session_pause(struct aj_session *s, struct aj_checkpoint_info *info, struct aj_error *err);
int aj_session_resume(struct aj_session *s, struct aj_error *err);
bool aj_session_paused(const struct aj_session *s);

/* Whether a tier can run on this machine; 0 if so, else -errno with the
 * precise reason in err ("network namespace: unshare: EPERM"). */
int aj_check(enum aj_tier tier, const struct aj_config *cfg, struct aj_error *err);

/* AGENTJAIL_VERSION of the library itself, for bindings that load it at
 * run time and must know its structures are the ones they declare. */
const char *aj_version(void);

const char *aj_tier_name(enum aj_tier tier);
int aj_tier_parse(const char *name, enum aj_tier *out);
const char *aj_status_name(enum aj_status status);

/* One JSON object of the command-line contract (docs/design.md), valid UTF-8,
 * malloc'ed; NULL on allocation failure. */
char *aj_result_to_json(const struct aj_result *res, enum aj_tier tier);

/* ---- The run_python tool, worded once for every front end ----
 *
 * The MCP server and the language bindings give a model the same tool and
 * the same words back. aj_tool_definition: the tool as an MCP Tool object
 * (name, title, description with cfg's limits in it, inputSchema,
 * outputSchema, annotations), its session form when session is true; JSON,
 * malloc'ed, NULL on ENOMEM. cfg NULL: the defaults. */
char *aj_tool_definition(const struct aj_config *cfg, bool session);
/* The tools to offer a model for sb, as a JSON array of MCP Tool objects
 * (what `agentjail mcp` lists): run_python, and with session its session
 * form and the file tools upload_file, download_file and list_files. Unlike
 * aj_tool_definition, run_python's description names the notable packages
 * (numpy, pandas, ...) sb's interpreter has, found by one probe run in sb
 * the first time (kept for sb's life). Malloc'ed; NULL on ENOMEM. */
char *aj_tool_list(struct aj_sandbox *sb, bool session);
/* One call of a session's file tool (name: upload_file, download_file or
 * list_files; args_json: its arguments) on s, as an MCP CallToolResult in
 * JSON: content (text, and an image block for an image downloaded),
 * structuredContent, isError. An unknown tool, arguments outside the
 * schema and what the library refuses are isError results with words for
 * the model. Malloc'ed; NULL on ENOMEM. */
char *aj_session_tool_call(struct aj_session *s, const char *name, const char *args_json,
			   size_t len);
/* A tool call's arguments (a JSON object) checked against the schema: 0
 * with *code malloc'ed (NUL-terminated), or -EINVAL with err saying what
 * does not fit, in words for the model. */
int aj_tool_arguments(const char *args_json, size_t len, char **code, size_t *code_len,
		      struct aj_error *err);
/* The result as the text a model reads well: status, message, both
 * streams labelled, the images' names. Malloc'ed, valid UTF-8. */
char *aj_result_text(const struct aj_result *res);
/* What a front end that opens a new session in place of a closed one
 * (reason: aj_session_closed_reason) puts first in the next result's
 * message. Malloc'ed; NULL on ENOMEM. */
char *aj_session_replaced_note(const char *reason);
/* Frees what the functions above and aj_result_to_json return. */
void aj_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
