"""The C library, loaded with cffi in ABI mode (no compiler needed), or
with ctypes from the standard library where cffi is not installed (a Python
that is not Debian's; _ctypes_ffi.py offers the same calls).
$AGENTJAIL_BINDING=cffi or =ctypes picks one; a missing cffi is then an
error, not a fallback.

The declarations below are include/agentjail.h's, field for field; the
layouts are checked against a compiled program in tests/test_abi.py, for
both backends, so a change to the header that is not made here fails the
tests instead of reading the wrong bytes.

Where the library is found, first match wins:
  1. $AGENTJAIL_LIBRARY, a path to libagentjail.so
  2. the copy installed inside this package (pip install ./python)
  3. build/libagentjail.so of the source tree this package sits in
  4. libagentjail.so.0 on the system's library path
"""
import os

CDEF = """
enum aj_tier { AJ_TIER_PROCESS = 0, AJ_TIER_CONTAINER, AJ_TIER_MICROVM, AJ_TIER_DOCKER,
               AJ_TIER_GVISOR, AJ_TIER_COUNT };
enum aj_status { AJ_STATUS_OK = 0, AJ_STATUS_ERROR, AJ_STATUS_TIMEOUT, AJ_STATUS_MEMORY,
                 AJ_STATUS_OUTPUT_LIMIT, AJ_STATUS_KILLED, AJ_STATUS_SANDBOX_ERROR,
                 AJ_STATUS_COUNT };
struct aj_limits {
    double wall_sec; uint32_t cpu_sec; uint32_t memory_mb; uint32_t pids;
    uint32_t file_size_mb; uint32_t disk_mb; uint32_t output_kb; uint32_t open_files;
};
struct aj_session_limits {
    double idle_sec; double lifetime_sec; uint32_t cpu_sec; uint32_t max_sessions;
    uint32_t transfer_mb; uint32_t images; uint32_t image_kb; bool idle_pause;
    double pause_keep_sec;
};
struct aj_egress_limits {
    uint32_t out_mb; uint32_t in_mb; uint32_t connections; uint32_t kbps;
};
struct aj_config {
    enum aj_tier tier;
    struct aj_limits limits;
    const char *python;
    uint32_t uid_base;
    uint32_t slots;
    const char *state_dir;
    const char *image;
    const char *cgroup_root;
    const char *accel;
    uint32_t vm_pool;
    const char *docker_socket;
    const char *docker_image;
    struct aj_session_limits session;
    bool warm;
    const char *preload;
    const char *const *ro_binds;
    uint32_t ro_bind_count;
    const char *const *env;
    uint32_t env_count;
    const char *const *allow_hosts;
    uint32_t allow_host_count;
    const char *const *allow_cidrs;
    uint32_t allow_cidr_count;
    struct aj_egress_limits egress;
    const char *trust_ca;
    const char *secrets;
    const char *egress_ca;
    const char *const *exec_env_allow;
    uint32_t exec_env_allow_count;
};
struct aj_error { int code; char message[512]; };
struct aj_image { char *name; char *mime; unsigned char *data; size_t len; };
struct aj_result {
    enum aj_status status;
    int exit_code;
    bool has_exit_code;
    int signal;
    char *stdout_buf; size_t stdout_len; bool stdout_truncated;
    char *stderr_buf; size_t stderr_len; bool stderr_truncated;
    double wall_ms; double cpu_ms; uint64_t memory_kb;
    char *message;
    struct aj_image *images; size_t image_count; size_t images_dropped;
    char *egress_log;
    uint32_t *background_pids; size_t background_count;
    char *value_text; char *value_html;
};
enum aj_event_kind { AJ_EVENT_STDOUT = 0, AJ_EVENT_STDERR, AJ_EVENT_IMAGE };
struct aj_event {
    enum aj_event_kind kind;
    const char *data; size_t len;
    const char *name; const char *mime;
    uint64_t offset;
};
typedef void (*aj_event_fn)(void *arg, const struct aj_event *ev);
struct aj_stream { aj_event_fn fn; void *arg; uint32_t buffer_kb; };
enum aj_file_type { AJ_FILE_REGULAR = 0, AJ_FILE_DIRECTORY, AJ_FILE_SYMLINK, AJ_FILE_OTHER };
struct aj_file_info { char *name; enum aj_file_type type; uint64_t size; };
struct aj_sandbox;
struct aj_cancel;
struct aj_session;

void aj_config_init(struct aj_config *cfg);
int aj_config_validate(const struct aj_config *cfg, struct aj_error *err);
int aj_open(const struct aj_config *cfg, struct aj_sandbox **out, struct aj_error *err);
int aj_run(struct aj_sandbox *sb, const char *code, size_t len, struct aj_result *res);
void aj_close(struct aj_sandbox *sb);
void aj_result_free(struct aj_result *res);
int aj_cancel_new(struct aj_cancel **out);
void aj_cancel_fire(struct aj_cancel *c);
void aj_cancel_free(struct aj_cancel *c);
int aj_run_cancellable(struct aj_sandbox *sb, const char *code, size_t len,
                       struct aj_cancel *cancel, struct aj_result *res);
int aj_run_streaming(struct aj_sandbox *sb, const char *code, size_t len, struct aj_cancel *cancel,
                     const struct aj_stream *stream, struct aj_result *res);
int aj_session_open(const struct aj_config *cfg, struct aj_session **out, struct aj_error *err);
int aj_session_run_cancellable(struct aj_session *s, const char *code, size_t len,
                               struct aj_cancel *cancel, struct aj_result *res);
int aj_session_run_streaming(struct aj_session *s, const char *code, size_t len,
                             struct aj_cancel *cancel, const struct aj_stream *stream,
                             struct aj_result *res);
int aj_language_parse(const char *name, int *out);
int aj_run_lang(struct aj_sandbox *sb, int lang, const char *code, size_t len,
                struct aj_cancel *cancel, const struct aj_stream *stream, struct aj_result *res);
int aj_session_run_lang(struct aj_session *s, int lang, const char *code, size_t len,
                        struct aj_cancel *cancel, const struct aj_stream *stream,
                        struct aj_result *res);
struct aj_cell {
    int lang; const char *code; size_t len; bool value; const char *context; bool fresh;
};
int aj_session_run_cell(struct aj_session *s, const struct aj_cell *cell,
                        struct aj_cancel *cancel, const struct aj_stream *stream,
                        struct aj_result *res);
struct aj_exec {
    const char *command; const char *const *argv; const char *cwd;
    const char *const *env; uint32_t env_count;
    const void *stdin_data; size_t stdin_len; double timeout_sec;
};
int aj_session_exec(struct aj_session *s, const struct aj_exec *x, struct aj_cancel *cancel,
                    const struct aj_stream *stream, struct aj_result *res);
struct aj_proc_info { uint32_t pid; char *command; bool running; };
int aj_session_spawn(struct aj_session *s, const struct aj_exec *x, bool stdin_open,
                     uint32_t *pid, struct aj_error *err);
int aj_session_proc_wait(struct aj_session *s, uint32_t pid, struct aj_cancel *cancel,
                         const struct aj_stream *stream, struct aj_result *res);
int aj_session_proc_input(struct aj_session *s, uint32_t pid, const void *data, size_t len,
                          bool close, struct aj_error *err);
int aj_session_proc_signal(struct aj_session *s, uint32_t pid, int signal, struct aj_error *err);
int aj_session_procs(struct aj_session *s, struct aj_proc_info **procs, size_t *count,
                     struct aj_error *err);
void aj_proc_list_free(struct aj_proc_info *procs, size_t count);
int aj_session_pty(struct aj_session *s, const struct aj_exec *x, uint16_t cols, uint16_t rows,
                   uint32_t *pid, struct aj_error *err);
int aj_session_pty_resize(struct aj_session *s, uint32_t pid, uint16_t cols, uint16_t rows,
                          struct aj_error *err);
int aj_session_put(struct aj_session *s, const char *path, const void *data, size_t len,
                   struct aj_error *err);
int aj_session_get(struct aj_session *s, const char *path, void **data, size_t *len,
                   struct aj_error *err);
int aj_session_list(struct aj_session *s, const char *dir, struct aj_file_info **entries,
                    size_t *count, struct aj_error *err);
void aj_file_list_free(struct aj_file_info *entries, size_t count);
const char *aj_session_id(const struct aj_session *s);
const char *aj_session_closed_reason(const struct aj_session *s);
void aj_session_close(struct aj_session *s);
int aj_session_secrets_keep(struct aj_session *s, const char *const *names, uint32_t n_names,
                            struct aj_error *err);
int aj_session_egress_keep(struct aj_session *s, const char *const *hosts, uint32_t n_hosts,
                           const char *const *cidrs, uint32_t n_cidrs, struct aj_error *err);
struct aj_checkpoint_key { unsigned char bytes[32]; };
int aj_checkpoint_key_load(const char *path, bool create, struct aj_checkpoint_key *key,
                           struct aj_error *err);
struct aj_checkpoint_info { uint64_t bytes; uint32_t files; uint32_t left_out; char note[1024]; };
int aj_session_checkpoint(struct aj_session *s, const struct aj_checkpoint_key *key,
                          const char *path, struct aj_checkpoint_info *info, struct aj_error *err);
int aj_session_restore(const struct aj_config *cfg, const struct aj_checkpoint_key *key,
                       const char *path, struct aj_session **out, struct aj_checkpoint_info *info,
                       struct aj_error *err);
int aj_session_fork(struct aj_session *s, unsigned n, struct aj_session **out,
                    struct aj_checkpoint_info *info, struct aj_error *err);
int aj_session_pause(struct aj_session *s, struct aj_checkpoint_info *info, struct aj_error *err);
int aj_session_resume(struct aj_session *s, struct aj_error *err);
bool aj_session_paused(const struct aj_session *s);
int aj_check(enum aj_tier tier, const struct aj_config *cfg, struct aj_error *err);
const char *aj_version(void);
const char *aj_tier_name(enum aj_tier tier);
int aj_tier_parse(const char *name, enum aj_tier *out);
const char *aj_status_name(enum aj_status status);
char *aj_result_to_json(const struct aj_result *res, enum aj_tier tier);
char *aj_tool_definition(const struct aj_config *cfg, bool session);
char *aj_tool_list(struct aj_sandbox *sb, bool session);
char *aj_session_tool_call(struct aj_session *s, const char *name, const char *args_json,
                           size_t len);
int aj_tool_arguments(const char *args_json, size_t len, char **code, size_t *code_len,
                      struct aj_error *err);
char *aj_result_text(const struct aj_result *res);
char *aj_session_replaced_note(const char *reason);
void aj_free(void *p);
"""

# The library version these declarations were written from: a library of
# another major.minor may lay its structures out differently.
API_VERSION = "0.5"


def _ffi():
    """(ffi, "cffi" or "ctypes"): cffi where it is installed."""
    choice = os.environ.get("AGENTJAIL_BINDING", "")
    if choice not in ("", "cffi", "ctypes"):
        raise ImportError(f"agentjail: AGENTJAIL_BINDING={choice!r} is neither cffi nor ctypes")
    if choice != "ctypes":
        try:
            import cffi
        except ImportError:
            if choice == "cffi":
                raise
        else:
            return cffi.FFI(), "cffi"
    from . import _ctypes_ffi
    return _ctypes_ffi.FFI(), "ctypes"


ffi, BINDING = _ffi()
ffi.cdef(CDEF)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("AGENTJAIL_LIBRARY")
    if env:
        # An explicit choice is the only one: falling back would hide a typo.
        return [env]
    return [
        os.path.join(_HERE, "_lib", "libagentjail.so.0"),
        os.path.normpath(os.path.join(_HERE, "..", "..", "build", "libagentjail.so.0")),
        "libagentjail.so.0",
    ]


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            return ffi.dlopen(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "agentjail: libagentjail.so not found; build it with `make` in the agentjail "
        "source tree, install the package with `pip install ./python`, or set "
        "AGENTJAIL_LIBRARY to its path. Tried: " + "; ".join(tried))


lib, LIBRARY_PATH = _load()

try:
    VERSION = ffi.string(lib.aj_version()).decode()
except AttributeError:
    VERSION = "older than 0.5"
if VERSION.rsplit(".", 1)[0] != API_VERSION:
    raise ImportError(
        f"agentjail: {LIBRARY_PATH} is version {VERSION}; this package declares the "
        f"structures of {API_VERSION}.x: rebuild the library or reinstall the package")
