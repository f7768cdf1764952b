/* The one supervision loop: what the host does while a sandbox works on a
 * run or a session's call, for every tier. It keeps the wall clock, reads
 * and caps both output streams as they arrive, writes the input without
 * ever blocking, honours a cancel, and stops the sandbox on a timeout, a
 * flood or a cancel. What differs between tiers comes in as hooks: how to
 * stop the sandbox (signal its init, kill its cgroup, send boot.py a stop
 * frame, kill the container), what to do when a stop is not confirmed in
 * time, the input writer, a periodic check, and fds the tier reads itself
 * (a report pipe, a reply pipe, a framed stream).
 *
 * libc and the capture only: no jansson, no tier's headers, so that the
 * microvm guest can build the same source. */
#ifndef AJ_SUPERVISOR_H
#define AJ_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "../core/internal.h"
#include "report.h"

/* How a run or a call ended, as the supervisor and the sandbox's report
 * saw it: what the status rules read (outcome_to_result). */
struct outcome {
	bool timed_out;
	bool cpu_stopped;           /* a check hook stopped it for its CPU time */
	bool cancelled;
	bool output_overflow;
	bool exited_report;         /* init reported the program's end */
	bool setup_failed;          /* init reported a protection it could not apply */
	bool setup_stalled;         /* not built by the setup deadline: never started
				     * (setup_message says so) */
	bool forced_kill;           /* init did not stop in time and was SIGKILLed */
	struct sandbox_report report;
	char setup_message[sizeof(struct sandbox_report){0}.message];
	int init_wstatus;
	bool init_reaped;           /* init was ours to reap (not a warm run's) */
	struct rusage init_rusage;
	double wall_ms;
	uint64_t oom_kills;         /* the kernel's, in the run's memory cgroup */
	const char *unknown_end;    /* what the tier saw of an end init did not
				     * report (NULL: init's wait status) */
};

struct supervisor;

/* An fd the tier reads itself (a report pipe, a reply pipe, a stream of
 * frames). ready runs when it polls ready; it may set fd to -1 to stop
 * watching it, end the loop (done), or call supervisor_stop. */
struct supervisor_source {
	int fd;
	bool while_stopping;        /* still read once a stop is under way */
	bool after_streams;         /* handled after the output streams' bytes
				     * of the same wake-up, not before */
	bool carries_output;        /* brings the program's output (frames):
				     * not read while the output is paused */
	void (*ready)(struct supervisor *sv, struct supervisor_source *src, short revents);
};

#define SUPERVISOR_SOURCES 3

/* Streaming, optional (out_tap NULL: none). out_tap gets each piece of
 * output within the cap as it is read. While out_paused says so (the
 * consumer is behind), neither out_fd[] nor the sources that carry output
 * are read, so the program blocks in write(), and the loop polls
 * out_room_fd instead, readable once there is room again; the wall clock
 * runs on. Hooks, not the queue's type: the microvm guest builds this file
 * with libc alone (supervisor_stream_of makes them for a stream_tap). */
struct supervisor_stream {
	void (*out_tap)(void *arg, int stream, const char *p, size_t n);
	bool (*out_paused)(void *arg);
	int out_room_fd;
	void *tap_arg;
};

struct supervisor {
	/* ---- filled in by the tier ---- */
	struct outcome *o;          /* flags set here: timed_out, cancelled,
				     * output_overflow, forced_kill; wall_ms */
	double start_ms;            /* now_ms() when the program went in */
	double deadline_ms;         /* the wall clock's end */
	double wall_ms_limit;       /* the wall clock's length */
	bool awaiting_start;        /* supervisor_await_start, not yet started */
	/* How long the sandbox has to confirm a stop; 0: the loop ends at
	 * the stop (the stop hook has ended the sandbox, or the caller will). */
	double grace_ms;
	int cancel_fd;              /* readable when the caller cancels; -1: none */
	/* The program's stdout and stderr, read here into cap[i]; fd -1 where
	 * they come another way (frames): the tier hands their bytes to
	 * supervisor_output. */
	int out_fd[2];
	struct capture *cap[2];
	struct supervisor_stream stream;
	struct supervisor_source src[SUPERVISOR_SOURCES]; /* fd -1: unused */
	/* The input, optional: written whole without ever blocking, while
	 * output is read, to in_fd (send() where input_is_socket: no
	 * SIGPIPE), then input_end runs (close it, shut down its write side).
	 * A reader that is gone ends the writing: the sandbox's end says how. */
	int in_fd;
	const char *input;
	size_t input_len, input_sent;
	bool input_is_socket;
	void (*input_end)(struct supervisor *sv);
	/* Or a writer of the tier's own (boot.py's frames): fd polled for
	 * POLLOUT while wants_write says so; write sends what the fd takes
	 * now, -errno: the sandbox is gone (the loop ends, broken). After
	 * done, the loop goes on only while wants_write still says so (a
	 * frame half sent), each wait bounded by the grace. */
	bool (*wants_write)(struct supervisor *sv);
	int (*write)(struct supervisor *sv);
	/* A periodic check, optional (a CPU clock the sandbox does not keep):
	 * true stops the sandbox (the hook sets the outcome's flags). */
	double check_every_ms;
	bool (*check)(struct supervisor *sv);
	/* Stops the sandbox (called once). */
	void (*stop)(struct supervisor *sv);
	/* The stop was not confirmed within the grace (or the loop cannot
	 * watch any more): forces the end, and the loop waits on. NULL: the
	 * loop ends, broken. */
	void (*force)(struct supervisor *sv);
	/* 0: force once. Otherwise force again this often until the end: a
	 * stop that reaches only the processes there as it runs (the guest's
	 * kill(-1)) misses one forked meanwhile, which the next one gets. */
	double force_every_ms;
	/* After a stop, how long the loop waits for the end before it ends,
	 * broken (what was stopped does not end); 0: no bound. */
	double give_up_ms;
	void *ctx;                  /* the tier's, for its hooks */

	/* ---- the loop's state, read by the tier after it ---- */
	bool done;                  /* a source said the run or call is over */
	bool broken;                /* the sandbox is gone or would not stop */
	bool stopping;              /* a stop was asked for */
	bool forced;
	int poll_errno;             /* poll failed (it cannot with valid fds) */
	double stop_ms;             /* when the stop was asked for */
	double kill_at;             /* when the grace ends, or the next force is due */
	bool finished;              /* the loop is over: no more stops */
	bool stream_open[2];
};

/* Sets the fields to "none": no fds, no hooks. */
void supervisor_init(struct supervisor *sv, struct outcome *o, double start_ms,
		     double wall_sec);
/* For a tier that learns when its program starts: until supervisor_started,
 * the deadline is setup_sec from start_ms and passing it is
 * o->setup_stalled, not a timeout; then the wall clock starts afresh. */
void supervisor_await_start(struct supervisor *sv, double setup_sec);
void supervisor_started(struct supervisor *sv);

/* Runs until a source says done, the sandbox is stopped (grace 0) or
 * broken (or, with give_up_ms, not ended in time after a stop). Sets o->wall_ms. */
void supervisor_run(struct supervisor *sv);

/* Asks the sandbox to stop (once): the stop hook, and the grace starts. */
void supervisor_stop(struct supervisor *sv);

/* Where the program's output arrives, whichever way it came: appended to
 * its capture and handed to out_tap (the part within the cap); a passed
 * cap is an output overflow, and stops the sandbox while it runs.
 * stream: 0 stdout, 1 stderr. */
void supervisor_output(struct supervisor *sv, int stream, const char *p, size_t n);

/* Whether the output is paused now (out_paused says the consumer is
 * behind). A source that carries output reads no more while it is. */
bool supervisor_output_paused(struct supervisor *sv);

/* Once the sandbox has ended: what is left in the output pipes.
 * Non-blocking reads stop at EAGAIN, so a pipe end that a concurrent clone
 * briefly copied cannot hang us waiting for EOF. */
void supervisor_drain(struct supervisor *sv);

/* Reads what fd has now into c, a bounded number of reads (a flood cannot
 * starve the caller's clock): sets *overflow when c's cap was passed;
 * false at EOF or on an error. */
bool supervise_drain(int fd, struct capture *c, bool *overflow);

#endif
