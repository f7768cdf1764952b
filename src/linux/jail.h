/* The jail: one run of a program in a fresh set of namespaces on the host
 * kernel, supervised. The process and container tiers are this engine with a
 * different filesystem view (and, for the container, a cgroup); see jail_plan.c
 * for the theory of operation. */
#ifndef AJ_JAIL_H
#define AJ_JAIL_H

#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "report.h"
#include "supervisor.h"

struct cgroup_run;

/* The four sandboxes the jail builds. Each has an init body of its own
 * (jail_run.c, jail_session.c, jail_warm.c); the steps they share are
 * written once (jail_init.c, jail_inside.c). */
enum jail_mode {
	/* One run: init forks the program, which execs `python3 -I -u` on the
	 * launcher, and reports its end. */
	JAIL_RUN,
	/* A session: no program file; init stays and starts the session
	 * interpreter (src/core/repl.py) on each request, with the request
	 * and reply pipes as its fds 3 and 4. */
	JAIL_SESSION,
	/* Warm mode's zygote (src/warm/warm.c): the inside process keeps root
	 * and its capabilities and no filter (it makes each run's namespaces),
	 * and execs `python3 -I -u -c zygote.py PRELOAD` with zygote_fd at fd 3
	 * and helper_fd at fd 4. */
	JAIL_ZYGOTE,
	/* A run made by the zygote (jail_warm_spawn): init joins the run's v1
	 * cgroups through join_cgroup_fds; the inside process returns to the
	 * zygote's Python, which runs the program, instead of exec'ing. */
	JAIL_WARM_RUN,
};

/* Where the program runs and what it runs, as seen inside the sandbox. */
#define JAIL_WORKSPACE AJ_SESSION_WORKSPACE
#define JAIL_PROGRAM "main.py"

struct jail_spec {
	const struct aj_config *cfg;
	const char *code;
	size_t code_len;
	int cancel_fd;              /* readable: stop the run; -1: none */
	struct supervisor_stream stream; /* streaming hooks; zero: none */
	const char *python;         /* the interpreter's path inside the view */
	bool userns;                /* not root: a user namespace provides the privilege */
	bool cgroup_ns;             /* a cgroup namespace rooted at the run's cgroup */
	/* The view's /etc/passwd and /etc/group are the host's: cover them
	 * with the run's own (jail_populate_root). */
	bool own_users;
	bool address_space_limit;   /* RLIMIT_AS is the memory limit (no cgroup) */
	bool into_cgroup;           /* init is born in the cgroup v2 dir cgroup_fd */
	int cgroup_fd;
	const char *const *join_cgroups; /* v1 tasks files init joins first */
	const struct cgroup_run *cgroup; /* whose OOM kills decide `memory`; NULL: none */
	uid_t uid, outer_uid;       /* the program's uid; the caller's */
	gid_t gid, outer_gid;
	/* Builds the filesystem view, in init, in its own mount namespace, and
	 * leaves init's root and cwd at it. Runs after no allocation is allowed
	 * any more: stack buffers only. */
	int (*setup_root)(const struct jail_spec *s, struct setup_error *e);
	const void *tier;           /* the tier's own data for setup_root */
	/* Which of the four sandboxes this is: set by the entry point called
	 * (jail_run, jail_session_start, jail_zygote_start, jail_warm_spawn). */
	enum jail_mode mode;
	/* Warm mode (src/warm/warm.c), a zygote's sandbox: its socket to the
	 * host (fd 3 of the zygote) and the warm helper library (fd 4). */
	int zygote_fd, helper_fd;
	const char *preload;
	/* A warm run: its program, read from code_fd; the run's v1 cgroups'
	 * tasks files opened by the host (join_cgroup_fds below: the zygote's
	 * view has no cgroupfs). */
	int code_fd;
	/* A warm run made ahead (warm_prepare): code_fd is instead its life
	 * socket, on which "go", the source's length and the source come
	 * (jail_send_program) once a run takes it; init builds the whole
	 * sandbox before, and writes the program only after, "go". */
	bool code_after_go;
	/* Network, ipc and uts namespaces the zygote made ahead, while idle
	 * (jail_warm_prepare_ns), for init to join instead of making them
	 * in the clone: fresh and never used, and off the run's clock (a
	 * network namespace takes half a millisecond here). -1: none. */
	int spare_ns[3];
	/* A cold run's spare_ns, made ahead by the host (jail_spare_ns_make, the
	 * process tier's pool) and joined the same way; without it spare_ns is
	 * read in a warm run only. */
	bool join_spare_ns;
	/* Egress (docs/egress.md): a unix socket on which init sends the
	 * listener it made on the run's 127.0.0.1:CONTRACT_EGRESS_PORT
	 * (egress_door.c), and the program's environment names the proxy;
	 * -1: no egress, no network at all. */
	int egress_fd;
	const int *join_cgroup_fds;
	int n_join_cgroup_fds;
	/* A one-shot run's launcher compiled by the run's own interpreter
	 * (a .pyc's bytes: its magic, 12 bytes, the marshalled code), which
	 * the program's interpreter runs from a memfd at JAIL_LAUNCH_FD
	 * instead of compiling the launcher's source (half a millisecond of
	 * every run); NULL: the source, in argv. */
	const void *launch_pyc;
	size_t launch_pyc_len;
};

/* Where the program's process finds the compiled launcher (launch_pyc); the
 * launcher closes it before main.py runs. */
#define JAIL_LAUNCH_FD 4
/* The launcher's source (src/core/launch.py with exit_rule.py), for a tier
 * that compiles it ahead with the run's interpreter. */
const char *jail_launcher_source(void);
#define JAIL_LAUNCH_PATH "/dev/fd/4" /* the interpreter's argv: its script */

/* One run. Fills res fully; returns 0 if the program ran, -errno if the
 * sandbox could not be built (res says why). jail_run_prepare, then
 * jail_run_ready. */
int jail_run(const struct jail_spec *s, struct aj_result *res);

/* A one-shot run's sandbox, built and waiting for its program: its init
 * has made the namespaces and the view and reads "go" and then the
 * program's source on its life socket. The process tier keeps one made
 * ahead (process.c), so that a run's time is its program's. */
struct jail_ready {
	pid_t pid;
	int pidfd;                      /* init; -1 once reaped */
	int out_r, err_r, report_r;     /* the program's stdout, stderr; init's reports */
	int life_w;                     /* "go", then the source, then EOF */
};
/* Builds s's sandbox (s->code is not read: the run gives it). Its init
 * dies with the calling thread (PDEATHSIG), as a run's does. 0, or -errno
 * with err saying why. */
int jail_run_prepare(const struct jail_spec *s, struct jail_ready *r, struct aj_error *err);
/* Runs s->code in r, under s's limits, cancel_fd, stream and cgroup, and
 * uses r up (its fds closed, init reaped). jail_run's answers. */
int jail_run_ready(struct jail_ready *r, const struct jail_spec *s, struct aj_result *res);
/* Ends a sandbox that ran nothing: init killed and reaped, fds closed. */
void jail_ready_discard(struct jail_ready *r);
/* A sandbox made ahead's "go", the source's length (8 bytes, host order)
 * and the source, on its life socket fd, then the socket's end. A failure
 * means init is gone: the supervisor reports how. */
void jail_send_program(int fd, const char *code, size_t len);

/* A session's sandbox: init alive between calls, and the host's ends of
 * its pipes. See jail_plan.c's theory of operation, "Sessions". */
struct jail_session {
	pid_t pid;
	int pidfd;              /* init */
	int out_r, err_r;       /* the interpreter's stdout and stderr */
	int report_r;           /* init's reports: an interpreter ended */
	int life_w;             /* 's': start an interpreter; EOF: end the sandbox */
	int req_w, rep_r;       /* requests to and replies from the interpreter */
	/* The request pipe's read side, non-blocking and the host's own (a
	 * description of its own: the interpreter's fd 3 stays blocking).
	 * Before each fresh interpreter the supervisor empties the pipe
	 * through it: a request no interpreter took must not run in the
	 * next one, which is given it again (session_io.c). */
	int req_drain;
	bool interpreter;       /* one is running (or was asked for) */
	bool started_before;    /* an earlier interpreter ran: its state is gone */
	int64_t cpu_us_reported;
	const struct cgroup_run *cgroup; /* whose OOM kills decide `memory`; NULL: none */
	uint64_t oom_counted;   /* the cgroup's OOM kills some answer has counted */
};

/* Builds the session's sandbox (init, view, limits) and leaves it waiting
 * for its first interpreter; 0, or -errno with the reason in err. */
int jail_session_start(const struct jail_spec *s, struct jail_session *js, struct aj_error *err);
/* tier_ops.session_nudge: an empty line into the request pipe, which
 * wakes repl.py's wait for a background command's output (its nudge
 * watcher) and is no request. One byte, so never inside a request (pipe
 * writes up to PIPE_BUF are whole); never blocks (the pipe is the host's
 * non-blocking end), never SIGPIPE (the host holds a read end too). */
void jail_session_nudge(struct jail_session *js);
/* The OOM kills in the session's cgroup that no answer counted yet, now
 * counted (tier_ops.session_oom_kills); 0 without a cgroup. */
uint64_t jail_session_oom_kills(struct jail_session *js);
/* Kills init (and so everything in the sandbox), reaps it, closes the
 * pipes. The namespaces and mounts go with init. */
void jail_session_end(struct jail_session *js);
/* tier_ops.session_workspace: the session's workspace as this host sees
 * it, an O_PATH directory fd (the caller's), or -errno. */
int jail_session_workspace(const struct jail_session *js, struct aj_error *err);

/* The host side of a zygote's sandbox (warm.c): its init (pid, pidfd),
 * the zygote's stdout and stderr (one pipe), init's reports. */
struct jail_zygote {
	pid_t pid;
	int pidfd;
	int log_r;
	int report_r;
	int life_w;     /* its EOF ends the zygote's sandbox */
};
/* Builds the zygote's sandbox (JAIL_ZYGOTE) and starts the zygote in it:
 * zygote_py, the caller's program (warm.c's zygote.py, which this layer
 * below warm does not know), run as `python3 -I -u -c`. Its socket is
 * s->zygote_fd, handed over. 0, or -errno with err. */
int jail_zygote_start(const struct jail_spec *s, const char *zygote_py, struct jail_zygote *z,
		      struct aj_error *err);

/* In the zygote (JAIL_WARM_RUN): clones one run's init, which builds the
 * run's sandbox and forks the program's process. Returns init's pid (with
 * *pidfd) in the zygote; 0 in the program's process, which is then in the
 * run's namespaces with its uid, rlimits and filter applied, fds 0-2 set
 * and no other fd open, ready to run the program; -errno in the zygote
 * when the clone failed. A step that fails in init or in the program's
 * process is reported on report_w, as in a cold run. */
pid_t jail_warm_spawn(const struct jail_spec *s, int out_w, int err_w, int report_w, int *pidfd);

/* In a thread of the host (a pool's filler), root only: makes fresh
 * network, ipc and uts namespaces and returns the thread to its own, leaving
 * an fd for each in fds[3] (net, ipc, uts), for a cold run's init to join
 * (join_spare_ns). 0, or -errno (none made). */
int jail_spare_ns_make(int fds[3]);

/* In the zygote, between runs: makes fresh network, ipc and uts namespaces
 * and returns to its own, leaving an fd for each in fds[3] (net, ipc, uts).
 * 0, or -errno (none made). */
int jail_warm_prepare_ns(int fds[3]);

/* For setup_root: under `root` ("" for the host's /), mounts the run's own
 * /dev, one size-limited tmpfs for /tmp, /var/tmp, /dev/shm and the
 * workspace (with the program written into it), a /proc of the run's pid
 * namespace, and (own_users) the run's own passwd and group. */
int jail_populate_root(const struct jail_spec *s, const char *root, struct setup_error *e);
/* The run's own passwd and group (root, nobody, its uid as "sandbox"), as
 * new files in etc, the /etc of a root being built. */
int jail_write_users(const struct jail_spec *s, const char *etc, struct setup_error *e);
/* The program's file at path, new, the run's uid's: len bytes read from
 * from (UINT64_MAX: to its end; from -1: empty). In init, no allocation. */
int jail_write_program(const struct jail_spec *s, int from, uint64_t len, const char *path,
		       struct setup_error *e);
/* text as the new file path (0644); refuses to follow a symlink there. */
int jail_write_new_file(const char *path, const char *text, struct setup_error *e);
/* Makes root (a mount of its own, fully built) the root and detaches the
 * old one, leaving no path back to it; cwd is the new /. */
int jail_pivot_to(const char *root, struct setup_error *e);

#endif
