/* The guest's hooks over the host's one supervision loop
 * (src/linux/supervisor.c): how the guest stops a program (kill(-1) from
 * PID 1, repeated until it is over), and SIGCHLD as the loop's source of
 * "something ended". The loop's clock, caps and input are the host's. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

/* The stop and the force alike: kill(-1) from PID 1 spares only the
 * caller, so a setsid() double fork escapes nothing. */
static void kill_all_but_us(struct supervisor *sv)
{
	(void)sv;
	kill(-1, SIGKILL);
}

/* SIGCHLD's signalfd has fired: empty it (the reap hook does the rest). */
static void drain_signals(int sigfd)
{
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
}

void watch_flush(struct watch *w)
{
	for (int i = 0; i < 2 && !w->held; i++) {
		const struct capture *c = w->sv.cap[i];
		while (c && c->len > w->sent[i]) {
			size_t n = c->len - w->sent[i];
			if (n > VM_OUTPUT_MAX)
				n = VM_OUTPUT_MAX;
			struct vm_output_head h = {.stream = (uint32_t)i, .seq = w->seq};
			struct iovec parts[2] = {{.iov_base = &h, .iov_len = sizeof h},
						 {.iov_base = c->buf + w->sent[i], .iov_len = n}};
			/* A write blocks while the host does not read: the loop
			 * stops reading the program, whose writes then block
			 * (backpressure), and the host's clock still runs. */
			int rc = send_frame(VM_OUTPUT, parts, 2);
			if (rc) {
				fprintf(stderr, "agentjail-guest: send VM_OUTPUT: %s\n", errname(-rc));
				w->sent[i] = c->len; /* the host is gone: its clock ends us */
				break;
			}
			w->sent[i] += n;
		}
	}
}

/* The supervisor's tap, at each read of the program's output (the part
 * within the cap, already in the capture): what it read goes to the host
 * at once, as a frame of its own, not on a timer, so a write reaches the
 * caller without waiting for more output. A write to the port blocks
 * while the host does not read: so does this loop, and the program's
 * writes then block (backpressure). */
static void send_as_read(void *arg, int stream, const char *p, size_t n)
{
	(void)stream, (void)p, (void)n;
	watch_flush(arg);
}

void watch_settle(struct watch *w)
{
	watch_flush(w);
	w->hooks->reap(w);
	if (w->hooks->must_stop && w->hooks->must_stop(w))
		watch_stop(w);
	if (w->hooks->over(w))
		w->sv.done = true;
}

static void child_ended(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	struct watch *w = sv->ctx;
	(void)src, (void)revents;
	drain_signals(w->sigfd);
	watch_settle(w);
}

void watch_init(struct watch *w, const struct watch_hooks *hooks, void *owner, int sigfd,
		double start_ms, double wall_ms, double give_up_ms)
{
	memset(&w->o, 0, sizeof w->o);
	supervisor_init(&w->sv, &w->o, start_ms, wall_ms / 1000.0);
	w->hooks = hooks;
	w->owner = owner;
	w->sigfd = sigfd;
	w->sv.ctx = w;
	w->sv.stop = kill_all_but_us;
	/* Again, for anything forked while the last kill ran, until the
	 * program is over. */
	w->sv.grace_ms = KILL_REPEAT_MS;
	w->sv.force = kill_all_but_us;
	w->sv.force_every_ms = KILL_REPEAT_MS;
	w->sv.give_up_ms = give_up_ms;
	w->seq = 0;
	w->sent[0] = w->sent[1] = 0;
	w->held = false;
	/* The output the loop reads goes to the host as it is read (and,
	 * held until a call's ack, at the ack, the end, and the result).
	 * Never paused here: the port's blocking write is the pause. */
	w->sv.stream = (struct supervisor_stream){.out_tap = send_as_read, .out_room_fd = -1,
						  .tap_arg = w};
	/* Watched while stopping too: the end of what was killed is what
	 * ends the loop. */
	w->sv.src[WATCH_SIGNALS] = (struct supervisor_source){
		.fd = sigfd, .while_stopping = true, .after_streams = true, .ready = child_ended};
}

void watch_program(struct watch *w)
{
	/* A child may have ended after the last reap with its SIGCHLD read
	 * already (a drain): look once before waiting. */
	watch_settle(w);
	supervisor_run(&w->sv);
}

void watch_stop(struct watch *w)
{
	supervisor_stop(&w->sv);
}

int watch_end_all(struct watch *w, int bound_ms)
{
	int64_t give_up = now_us() + (int64_t)bound_ms * 1000;
	for (;;) {
		kill_all_but_us(&w->sv);
		w->hooks->reap(w);
		/* WNOWAIT: only ask whether any child is left. */
		siginfo_t si;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
			return 0;
		if (now_us() >= give_up)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = w->sigfd, .events = POLLIN};
		poll(&p, 1, KILL_REPEAT_MS);
		drain_signals(w->sigfd);
	}
}
