/* What the guest agent's files share, one concern a file, each calling only
 * files listed above it here (none calls back):
 *
 *   failure.c   the wording of a failed step
 *   clock.c     the monotonic clock, a sleep
 *   port.c      the channel to the host: frames out, bytes in
 *   egress.c    the egress port: 127.0.0.1:EGRESS_PORT forwarded to the host
 *   frame.c     the host's frames, decoded
 *   run_cgroup.c  the run's cgroup: made at boot, its limits, its figures
 *   restore.c   what a restored copy refreshes first (clock, entropy)
 *   workspace.c /tmp and the workspace
 *   trust.c     the CA bundle of VM_TRUST, shown at CONTRACT_CA_BUNDLE
 *   policy.c    no_new_privs and the host tiers' seccomp policy
 *   watch.c     the guest's hooks over the host's one supervision loop
 *   zygote.c    the zygote: started at boot, released by a run
 *   boot.c      once per image, up to VM_READY
 *   run.c       one run (VM_RUN)
 *   session.c   a session (VM_SESSION_START, then VM_CALLs)
 *   agent.c     main: boot, then the one run or session
 *
 * The host's own sources the agent is built with (images/build-vm.sh):
 * src/core/io.c (write_full), src/core/capture.c (struct capture),
 * src/core/session_scan.c (a session call's reply lines), src/core/result.c
 * (now_ms), src/linux/supervisor.c (the one supervision loop) and
 * src/vm/egress_mux.c (the egress port's streams, the host's frames). */
#ifndef AJ_GUEST_AGENT_H
#define AJ_GUEST_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "../../core/internal.h"
#include "../../linux/supervisor.h"
#include "../protocol.h"

#define PYTHON "/usr/bin/python3"
/* The run's cgroup: this directory of a cgroup2 hierarchy that is mounted
 * nowhere (run_cgroup.c run_cgroup_make); run_cgroup is its fd. */
#define RUN_CGROUP "run"
#define WORKSPACE VM_GUEST_WORKSPACE
/* After a kill, SIGKILL is repeated this often until everything is reaped. */
#define KILL_REPEAT_MS 100
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

/* egress.c: the egress port (boot opens it; VM_GUEST_EGRESS_PORT). */
extern int egress_port_fd;
/* lo up, 127.0.0.1:EGRESS_PORT listening, the forwarder running: before the
 * program starts, only when the host carries egress. */
int egress_start(struct failure *f);
/* The program's environment (rule E1) into env (n entries with the NULL):
 * with the egress rows when on, then the deployer's variables (lines, "NAME=VALUE\n"
 * each, which this cuts into strings), through contract_environment_fill:
 * env holds CONTRACT_ENVIRONMENT_MAX + 1. */
void egress_environment(bool on, char *lines, char **env);

/* frame.c: the host's frames, the header already read, the rest read
 * through read_fn (port_read; the fuzz target's own input). Each returns 0,
 * or -errno with f saying what is wrong; what it allocated (*code, *repl,
 * *request: code_len, repl_len or request_len bytes and one more; *env:
 * env_len and one more, "NAME=VALUE\n" lines, NUL-terminated) is the
 * caller's to free, on a refusal too. */
typedef int frame_read(void *buf, size_t n);
int receive_run(frame_read *read_fn, const struct vm_frame_header *h, struct vm_run *lim,
		char **code, char **env, struct failure *f);
/* VM_RUN's limits: none zero, the output caps within one VM_RESULT. */
int check_run_limits(const struct vm_run *l, struct failure *f);
/* The limits checked too; *repl NUL-terminated, and holds no other NUL. */
int receive_session_start(frame_read *read_fn, const struct vm_frame_header *h,
			  struct vm_session_start *l, char **repl, char **env, struct failure *f);
/* A session's VM_CALL, its reply line within one VM_CALL_RESULT. */
int receive_call(frame_read *read_fn, const struct vm_frame_header *h, struct vm_call *req,
		 char **request, struct failure *f);
/* VM_TRUST's bundle: 1..VM_TRUST_MAX bytes, no NUL; *pem NUL-terminated. */
int receive_trust(frame_read *read_fn, const struct vm_frame_header *h, char **pem,
		  struct failure *f);
/* Reads past a frame's payload: 0, or read_fn's -errno. */
int skip_frame(frame_read *read_fn, const struct vm_frame_header *h);

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

/* trust.c: the bundle (len bytes) read-only at CONTRACT_CA_BUNDLE, for
 * every process started after it, the zygote's children included. */
int trust_install(const char *pem, size_t len, struct failure *f);

/* policy.c: no_new_privs and the host tiers' seccomp policy: 0 or -errno. */
int apply_policy(void);

/* watch.c: the guest's hooks over the host's one supervision loop
 * (src/linux/supervisor.c, built into the agent), for a run's program or a
 * session's interpreter through one call. The loop keeps the wall clock,
 * reads and caps both output streams, writes the input without blocking
 * and hands the owner's fds to the owner's sources; the guest stops the
 * program its way: kill(-1) from PID 1 (a setsid() double fork escapes
 * nothing), repeated every KILL_REPEAT_MS until the program is over (a
 * process forked while the last kill ran gets the next). SIGCHLD's
 * signalfd is the loop's last source: it reaps, and ends the loop when
 * the owner says the program is over. */
struct watch;
struct watch_hooks {
	/* Collects what has ended, without waiting. */
	void (*reap)(struct watch *w);
	/* Optional: a reason found while reaping to stop the program now. */
	bool (*must_stop)(struct watch *w);
	/* The loop's end: the program is over. */
	bool (*over)(struct watch *w);
};
/* The source the watch takes for SIGCHLD (after the output streams and
 * the owner's own: a reply read in the same wake-up is seen first); the
 * owner's sources are sv.src[0 .. WATCH_SIGNALS - 1]. */
#define WATCH_SIGNALS (SUPERVISOR_SOURCES - 1)
struct watch {
	struct supervisor sv;       /* sv.ctx is this watch */
	struct outcome o;           /* timed_out, output_overflow: the loop's */
	const struct watch_hooks *hooks;
	void *owner;
	int sigfd;                  /* SIGCHLD's signalfd: a child ended */
	/* The output sent to the host so far (VM_OUTPUT frames, the call's
	 * seq in each; 0 in a run): the captures' bytes past sent[] go next. */
	uint64_t seq;
	size_t sent[2];
	bool held;                  /* nothing sent yet (the owner's reason) */
};
/* Readies w: the wall clock wall_ms from start_ms (now_ms()'s), and, after
 * a stop, give_up_ms before the loop ends broken (0: no bound). The owner
 * then sets sv.out_fd, sv.cap, its sources and its input. */
void watch_init(struct watch *w, const struct watch_hooks *hooks, void *owner, int sigfd,
		double start_ms, double wall_ms, double give_up_ms);
/* The loop, until the program is over or (give_up_ms) does not end. */
void watch_program(struct watch *w);
/* For an owner's source that changed what over reads: reaps, stops if
 * must_stop says so, ends the loop if over. */
void watch_settle(struct watch *w);
/* Stops everything (once; the loop repeats the kill). */
void watch_stop(struct watch *w);
/* Sends the host what the captures took since the last flush, in VM_OUTPUT
 * frames of at most VM_OUTPUT_MAX bytes: the loop does it as it reads, the
 * owner once more after its last reads, before the result. */
void watch_flush(struct watch *w);
/* Kills and reaps until no child is left: 0, or -ETIMEDOUT after bound_ms. */
int watch_end_all(struct watch *w, int bound_ms);

/* zygote.c: the zygote (see agent.c's theory of operation). */
struct zygote {
	pid_t pid;
	int request_fd;   /* write end of its fd 3 */
	int control_fd;   /* read end of its fd 4, non-blocking */
	int verdict_fd;   /* read end of its fd 6, the program's verdict pipe, non-blocking */
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
int zygote_release(struct zygote *z, const struct vm_run *lim, const char *env,
		   struct failure *f);
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
