/* Internal interfaces shared by the core, the tiers and the front ends. */
#ifndef AJ_INTERNAL_H
#define AJ_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentjail.h"

/* Fills err (if any) and returns code, so callers can `return error_set(...)`. */
int error_set(struct aj_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A stream read by the supervisor, capped at `limit` bytes. */
struct capture {
	char *buf;
	size_t len;
	size_t alloc;
	size_t limit;
	bool truncated;
	/* session_take_reply: how many bytes from the start are known to hold
	 * no newline (a reply of many megabytes is not scanned again from
	 * its start at each read). */
	size_t scanned;
};
void capture_init(struct capture *c, size_t limit);
/* Appends what fits; returns true when bytes had to be dropped (the cap was
 * passed), -ENOMEM is reported as truncation too so a run never crashes. */
bool capture_append(struct capture *c, const char *data, size_t n);
/* Appends keeping the last `limit` bytes: what falls off the front is
 * dropped (truncated), as a terminal's window does. */
void capture_append_tail(struct capture *c, const char *data, size_t n);
/* Moves the bytes out as a NUL-terminated malloc'ed string (never NULL). */
char *capture_take(struct capture *c, size_t *len);
void capture_free(struct capture *c);

/* Returns a malloc'ed copy of s[0..n) in which every invalid UTF-8 sequence
 * is replaced by U+FFFD (one per maximal invalid subpart, as the Unicode
 * standard recommends) and NUL bytes are kept as is. NULL on ENOMEM. */
char *utf8_repair(const char *s, size_t n, size_t *out_len);

/* Whether s[0..n) is valid UTF-8 (NUL bytes count as valid). */
bool utf8_valid(const char *s, size_t n);

/* cfg.env (env.c), for aj_config_validate: 0, or -EINVAL naming the
 * variable and why it may not be set. */
int env_check(const struct aj_config *cfg, struct aj_error *err);
/* cfg->exec_env_allow's entries checked (aj_config_validate), and whether
 * it lets a command's env set name[0..n) (none given: every name). */
int exec_env_allow_check(const struct aj_config *cfg, struct aj_error *err);
bool exec_env_allowed(const struct aj_config *cfg, const char *name, size_t n);

/* cfg.ro_binds (ro_bind.c). A path in one is shorter than this. */
#define RO_BIND_PATH_MAX 256
/* Their syntax and bounds, for aj_config_validate: 0, or -EINVAL naming
 * the entry and what is wrong with it. */
int ro_bind_check(const struct aj_config *cfg, struct aj_error *err);
/* When a sandbox opens: a malloc'ed "REALHOST:SANDBOX" for a checked
 * entry, HOST resolved and found to be a directory or a regular file. */
int ro_bind_resolve(const char *spec, char **out, struct aj_error *err);
/* A checked or resolved entry's two paths (SANDBOX = HOST when only HOST
 * is given); -ENAMETOOLONG if either does not fit. */
int ro_bind_split(const char *spec, char host[RO_BIND_PATH_MAX], char target[RO_BIND_PATH_MAX]);
/* Whether path p is dir or lies below it ("/tmpfoo" is not under "/tmp"). */
bool path_is_under(const char *p, const char *dir);
/* What a jail's view mounts from cfg.ro_binds: the deployer's paths and,
 * with trust_ca, the sandbox's CA bundle (trust_ca.c). */
#define RO_BIND_SLOTS (AJ_MAX_RO_BINDS + 1)

/* cfg.trust_ca or cfg.egress_ca (trust_ca.c), what names which in an
 * error. The file: a regular file of at most AJ_MAX_TRUST_CA_KB holding
 * PEM certificates and no other block; 0 with *pem (malloc'ed,
 * NUL-terminated) and *certs, or -errno with err naming the file and its
 * problem. */
int trust_ca_read(const char *what, const char *path, char **pem, size_t *len, unsigned *certs,
		  struct aj_error *err);
/* For aj_config_validate: the file, when one is named, passes trust_ca_read. */
int trust_ca_check(const struct aj_config *cfg, struct aj_error *err);
/* When a sandbox opens: the view's bundle (CONTRACT_CA_BUNDLE under
 * view_root, resolved inside it), then cfg.trust_ca's certificates (if it
 * names a file) and extra[0..extra_len) (the sandbox's interception CA),
 * written to *file in *dir, a directory of this sandbox's own (both
 * malloc'ed); bundles of dead processes are swept first. */
int trust_bundle_make(const struct aj_config *cfg, const char *view_root, const char *extra,
		      size_t extra_len, char **dir, char **file, struct aj_error *err);
/* The bundle trust_bundle_make wrote, for a tier that carries its bytes:
 * *out malloc'ed, at most max bytes (else -EFBIG, named). */
int trust_bundle_load(const char *file, size_t max, char **out, size_t *len,
		      struct aj_error *err);
/* Removes the directory and its bundle, and frees dir; NULL is none. */
void trust_bundle_remove(char *dir);

/* The contract's result object (docs/design.md), for callers that embed it in
 * JSON of their own (MCP's structuredContent). NULL on ENOMEM. */
typedef struct json_t json_t;
json_t *result_to_json_object(const struct aj_result *res, enum aj_tier tier);
/* res->background_pids from o's "background" (a session's reply, or the
 * contract object a worker sent): pids from 2 to INT32_MAX, at most
 * AJ_MAX_BACKGROUND_LISTED; anything else in it is not taken. */
void result_background_from_json(json_t *o, struct aj_result *res);

/* The session interpreter's reply line (session_reply.c), which the code in
 * the session can forge: each reader checks every field it takes.
 * session_reply_json: the line as a JSON object, or NULL with res a sandbox
 * error. session_run_reply: a run's reply into res (exit code, usage, the
 * images within cfg's caps). session_file_reply_error: 0, or the file
 * operation's own error as -errno with err "WHAT: why". session_get_reply:
 * the data (malloc'ed, at most cap bytes) or -EPROTO / -EFBIG with err.
 * session_list_reply: the entries (aj_file_list_free) or -EPROTO / -ENOMEM
 * with err. */
json_t *session_reply_json(const char *line, size_t len, struct aj_result *res);
void session_run_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res);
/* session_run_reply, and a notebook cell's value (aj_session_run_value):
 * the reply's "value": {"text", "html"?}, each a string within the output
 * limit, else left out. */
void session_value_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res);
/* An exec call's reply ({"exit": code} or {"signal": n}, "timed_out" when
 * its own deadline killed it, "cpu_us", "rss_kb") as res's status by the
 * same rules; cfg's wall_sec is the command's own deadline. */
void session_exec_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res);
/* A JavaScript cell's reply (repl.py's op "js"): as an exec's, its "error"
 * (node missing, or unable to start under the memory limit) a
 * sandbox_error in its words, and "js_restarted" a note that the state of
 * earlier JavaScript calls is gone. */
void session_js_reply(json_t *reply, const struct aj_config *cfg, struct aj_result *res);
int session_file_reply_error(const char *what, json_t *reply, struct aj_error *err);
int session_get_reply(json_t *reply, size_t cap, const char *path, void **data, size_t *len,
		      struct aj_error *err);
int session_list_reply(json_t *reply, struct aj_file_info **entries, size_t *count,
		       struct aj_error *err);

/* Result helpers. */
void result_init(struct aj_result *res);
/* Adds note to res's message ("a; b"), before or after what it says. */
void result_add_note(struct aj_result *res, const char *note, bool before);
void result_set_message(struct aj_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Every result carries both streams, even a refused one, so front ends
 * never test for NULL: empty strings where nothing was captured. */
void result_ensure_streams(struct aj_result *res);
/* Marks res as a sandbox failure with a message, keeping nothing else. */
void result_sandbox_error(struct aj_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Writes all n bytes, retrying short writes and EINTR: 0 or -errno. Only
 * write(2) inside, so a sandbox child may use it between clone and exec. */
int write_full(int fd, const void *buf, size_t n);
/* write_full on a socket, with MSG_NOSIGNAL: a peer that is gone is
 * -EPIPE, never SIGPIPE in the application that embeds the library. */
int send_full(int fd, const void *buf, size_t n);
/* Reads exactly n bytes: 0, -EIO at an end before them, or -errno. */
int read_full(int fd, void *buf, size_t n);
/* Reads fd to its end, or until it holds more than max bytes (so a caller
 * tells a larger input by *len > max): 0 with *out malloc'ed and
 * NUL-terminated past *len, or -errno. */
int read_fd_up_to(int fd, size_t max, char **out, size_t *len);
/* A small file (a /proc or /sys one) into buf, NUL-terminated, at most
 * n - 1 bytes: its length, or -errno. */
ssize_t read_small_file(const char *path, char *buf, size_t n);

/* Base64 with padding. encode: malloc'ed, NUL-terminated, NULL on ENOMEM.
 * decode: 0, -EINVAL for anything but canonical base64, or -ENOMEM; *out
 * is malloc'ed and NUL-terminated past *out_len. */
char *base64_encode(const void *data, size_t len, size_t *out_len);
int base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len);

/* Monotonic clock in milliseconds. */
double now_ms(void);

#endif
