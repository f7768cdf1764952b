/* What the guest agent's files share: agent.c (boot, and one run),
 * session.c (a session's interpreter, across calls), frame.c (the host's
 * frames, decoded), stream.c (capped streams, the reply lines) and
 * failure.c (the wording of a failed step). */
#ifndef AJ_GUEST_AGENT_H
#define AJ_GUEST_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../protocol.h"

#define PYTHON "/usr/bin/python3"
/* The run's cgroup: this directory of a cgroup2 hierarchy that is mounted
 * nowhere (agent.c make_run_cgroup); run_cgroup is its fd. */
#define RUN_CGROUP "run"
#define WORKSPACE VM_GUEST_WORKSPACE
/* After a kill, SIGKILL is repeated this often until everything is reaped. */
#define KILL_REPEAT_MS 100
/* Reads per stream per wake-up: a flood cannot starve the clock check. */
#define READS_PER_WAKE 16
/* The program's open-file limit: the frames carry none, so the default
 * every tier uses. */
#define OPEN_FILES AJ_DEFAULT_OPEN_FILES
#define MESSAGE_MAX 256

/* A failed step: "guest: STEP: ERRNO", the wording the host passes on. */
struct failure {
	char message[MESSAGE_MAX];
};

const char *errname(int err);
/* Fills f with "guest: " fmt [": " ERRNO] (cut to fit) and returns -err. */
__attribute__((format(printf, 3, 4)))
int fail(struct failure *f, int err, const char *fmt, ...);
int64_t now_us(void);
void sleep_ms(int ms);
int write_all(int fd, const void *buf, size_t n);
int write_text(int dir, const char *name, const char *text);
int read_text(int dir, const char *name, char *buf, size_t size);
uint64_t keyed_value(const char *text, const char *key);

/* The run cgroup's directory (O_PATH, close-on-exec), opened at boot. */
extern int run_cgroup;

/* The channel to the host. */
extern int port_fd;
int port_read(void *buf, size_t n);
int send_frame(uint32_t type, const struct iovec *parts, int count);

/* One output stream, capped while it is read. */
struct stream {
	int fd;
	bool open;
	bool truncated;
	char *buf;
	size_t len, alloc, limit;
};
/* Reads what is there now. Sets *overflow if the cap was passed; returns
 * false at EOF or on an error. */
bool stream_drain(struct stream *s, bool *overflow);
/* stream.c: appends what fits under the cap; true when anything had to be
 * dropped. */
bool stream_append(struct stream *s, const char *data, size_t n);
/* stream.c: the whole lines in a session call's reply stream. Notes the
 * call's ack line in *acked; stops at the line that starts with
 * reply_prefix followed by ',' or '}' (the reply: *replied, its length in
 * *reply_len, kept at the buffer's start); drops every other whole line
 * (stale or forged: the session's own doing), in one pass and one move
 * however many a flood brings. */
void scan_reply(struct stream *rep, const char *reply_prefix, const char *ack_line, bool *acked,
		bool *replied, size_t *reply_len);

/* The steps a restored copy takes before anything of the host's runs. */
void refresh_clock(void);
int refresh_entropy(const void *request, size_t len, struct failure *f);
/* /tmp and the workspace; code (or NULL) becomes the workspace's main.py. */
int make_workspace(uint32_t disk_mb, const char *code, size_t code_len, struct failure *f);
int set_cgroup_limits(uint32_t memory_mb, uint32_t pids, struct failure *f);
/* no_new_privs and the host tiers' seccomp policy: 0 or -errno. */
int apply_policy(void);

/* frame.c: the host's frames, the header already read, the rest read
 * through read_fn (port_read; the fuzz target's own input). Each returns 0,
 * or -errno with f saying what is wrong; what it allocated (*code, *repl,
 * *request: code_len, repl_len or request_len bytes and one more) is the
 * caller's to free, on a refusal too. */
typedef int frame_read(void *buf, size_t n);
int receive_run(frame_read *read_fn, const struct vm_frame_header *h, struct vm_run *lim,
		char **code, struct failure *f);
/* VM_RUN's limits: none zero, the output caps within one VM_RESULT. */
int check_run_limits(const struct vm_run *l, struct failure *f);
/* The limits checked too; *repl NUL-terminated, and holds no other NUL. */
int receive_session_start(frame_read *read_fn, const struct vm_frame_header *h,
			  struct vm_session_start *l, char **repl, struct failure *f);
/* A session's VM_CALL, its streams capped at output_kb each. */
int receive_call(frame_read *read_fn, const struct vm_frame_header *h, uint32_t output_kb,
		 struct vm_call *req, char **request, struct failure *f);
/* Reads past a frame's payload: 0, or read_fn's -errno. */
int skip_frame(frame_read *read_fn, const struct vm_frame_header *h);

/* session.c: serves a session from its VM_SESSION_START (header read) until
 * the host destroys the VM. */
void serve_session(const struct vm_frame_header *h, int sigfd);

#endif
