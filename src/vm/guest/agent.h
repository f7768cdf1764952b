/* What the guest agent's files share, one concern a file, each calling only
 * files listed above it here (none calls back):
 *
 *   failure.c   the wording of a failed step
 *   clock.c     the monotonic clock, a sleep
 *   port.c      the channel to the host: frames out, bytes in
 *   frame.c     the host's frames, decoded
 *   stream.c    capped output streams
 *   run_cgroup.c  the run's cgroup: made at boot, its limits, its figures
 *   restore.c   what a restored copy refreshes first (clock, entropy)
 *   workspace.c /tmp and the workspace
 *   policy.c    no_new_privs and the host tiers' seccomp policy
 *   watch.c     the one loop that watches a program: clock, caps, kill, reap
 *   zygote.c    the zygote: started at boot, released by a run
 *   boot.c      once per image, up to VM_READY
 *   run.c       one run (VM_RUN)
 *   session.c   a session (VM_SESSION_START, then VM_CALLs)
 *   agent.c     main: boot, then the one run or session
 *
 * The host's own sources the agent is built with (images/build-vm.sh):
 * src/core/io.c (write_full), src/core/capture.c (struct capture) and
 * src/core/session_scan.c (a session call's reply lines). */
#ifndef AJ_GUEST_AGENT_H
#define AJ_GUEST_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "../../core/internal.h"
#include "../protocol.h"

#define PYTHON "/usr/bin/python3"
/* The run's cgroup: this directory of a cgroup2 hierarchy that is mounted
 * nowhere (run_cgroup.c run_cgroup_make); run_cgroup is its fd. */
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

/* failure.c: a failed step, "guest: STEP: ERRNO", the wording the host
 * passes on. */
struct failure {
	char message[MESSAGE_MAX];
};
const char *errname(int err);
/* Fills f with "guest: " fmt [": " ERRNO] (cut to fit) and returns -err. */
__attribute__((format(printf, 3, 4)))
int fail(struct failure *f, int err, const char *fmt, ...);

/* clock.c */
int64_t now_us(void);
void sleep_ms(int ms);

/* port.c: the channel to the host. */
extern int port_fd;
int port_read(void *buf, size_t n);
int send_frame(uint32_t type, const struct iovec *parts, int count);

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

/* stream.c: one output stream (a non-blocking pipe's read end), capped
 * while it is read, as the host's supervisor caps its own (capture.c). */
struct stream {
	int fd;
	bool open;
	struct capture cap;
};
/* Reads what is there now. Sets *overflow if the cap was passed; returns
 * false at EOF or on an error. */
bool stream_drain(struct stream *s, bool *overflow);

/* run_cgroup.c: the run's cgroup directory (O_PATH, close-on-exec). */
extern int run_cgroup;
/* At boot: the cgroup2 hierarchy, mounted nowhere, and its run cgroup. */
int run_cgroup_make(struct failure *f);
/* Memory (no swap) and pids for the run or the session as a whole. */
int run_cgroup_limit(uint32_t memory_mb, uint32_t pids, struct failure *f);
/* The calling process into the run cgroup: 0 or -errno. */
int run_cgroup_join(void);
/* A figure of the run cgroup's: the value of key in file's "key value"
 * lines, or (key NULL) the file's one number; 0 if unreadable. */
uint64_t run_cgroup_value(const char *file, const char *key);

/* restore.c: the steps a restored copy takes before anything of the host's
 * runs, with the devices boot kept open for them. */
int restore_keep_devices(struct failure *f);
void refresh_clock(void);
int refresh_entropy(const void *request, size_t len, struct failure *f);

/* workspace.c: /tmp and the workspace; code (or NULL) becomes the
 * workspace's main.py. */
int make_workspace(uint32_t disk_mb, const char *code, size_t code_len, struct failure *f);

/* policy.c: no_new_privs and the host tiers' seccomp policy: 0 or -errno. */
int apply_policy(void);

/* watch.c: the one loop that watches a program (a run's, or a session's
 * interpreter through a call): its wall clock, its output streams and
 * their caps, an input written without blocking, the owner's own fds; a
 * timeout or a flood stops everything the owner's way, repeated until the
 * owner says the program is over. Libc only, and nothing of the guest's
 * but the hooks: the host's supervisor can stand on the same loop. */
struct watch;
#define WATCH_OWN_FDS 2
struct watch_fd {
	int fd;                 /* -1: not polled this time */
	short events;
	bool late;              /* handled after the output streams */
	void (*ready)(struct watch *w, short revents);
};
struct watch_ops {
	/* The loop's end: the program is over. */
	bool (*over)(struct watch *w);
	/* How to stop: every process of the program's, now. Repeated every
	 * KILL_REPEAT_MS while stopping. */
	void (*kill)(struct watch *w);
	/* Collects what has ended, without waiting. */
	void (*reap)(struct watch *w);
	/* Optional, once per wake-up before the clock is judged: may move
	 * deadline_us, or stop. */
	void (*check)(struct watch *w, int64_t now);
	/* Optional: the owner's fds for this wake-up. */
	void (*own_fds)(struct watch *w, struct watch_fd fds[WATCH_OWN_FDS]);
};
/* Bytes for the program's fd (non-blocking), written as it takes them; a
 * write error ends the writing (the program's status says how). */
struct watch_input {
	int fd;
	const char *buf;
	size_t len, sent;
};
struct watch {
	const struct watch_ops *ops;
	void *owner;
	int sigfd;                  /* SIGCHLD's signalfd: a child ended */
	struct stream *out, *err;   /* a pass of either cap stops everything */
	struct watch_input *input;  /* NULL: none */
	int64_t deadline_us;
	int give_up_ms;             /* after the stop; 0: no bound in the loop */
	bool stopping, timed_out, overflow, gave_up;
	int64_t stop_us, next_kill_us;
};
void watch_program(struct watch *w);
/* The kill hook of a watcher that is PID 1: kill(-1) spares only the
 * caller, so a setsid() double fork escapes nothing. */
void watch_kill_all_but_us(struct watch *w);
/* Stops everything (once; the loop repeats the kill). */
void watch_stop(struct watch *w);
/* Kills and reaps until no child is left: 0, or -ETIMEDOUT after bound_ms. */
int watch_end_all(struct watch *w, int bound_ms);

/* zygote.c: the zygote (see agent.c's theory of operation). */
struct zygote {
	pid_t pid;
	int request_fd;   /* write end of its fd 3 */
	int control_fd;   /* read end of its fd 4, non-blocking */
	int out_fd;       /* read ends of its fd 1 and 2, non-blocking */
	int err_fd;
	char line[512];   /* partial control line */
	size_t line_len;
};
int zygote_spawn(struct zygote *z, struct failure *f);
/* Waits for "ready"; fills f with why not. */
int zygote_await(struct zygote *z, struct failure *f);
/* One complete line from the control pipe into out (no newline): 1 if one
 * was there, 0 if none yet, -1 at EOF with nothing pending. */
int zygote_control_line(struct zygote *z, char *out, size_t size);
/* Whatever the zygote printed on fd, to the console. */
void zygote_echo(int fd);
/* The run's request line; the zygote can never be asked twice. */
int zygote_release(struct zygote *z, const struct vm_run *lim, struct failure *f);
/* A session needs no zygote: it goes. */
void zygote_end(struct zygote *z);

/* boot.c: once per image, up to VM_READY sent; powers off on a failure.
 * *sigfd: SIGCHLD's signalfd, SIGCHLD blocked before the first fork. */
void boot(struct zygote *z, int *sigfd);
__attribute__((noreturn)) void power_off(const char *message);

/* run.c: one run from its VM_RUN (header read) to its VM_RESULT. */
void serve_run(const struct vm_frame_header *h, struct zygote *z, int sigfd);

/* session.c: serves a session from its VM_SESSION_START (header read) until
 * the host destroys the VM. */
void serve_session(const struct vm_frame_header *h, int sigfd);

#endif
