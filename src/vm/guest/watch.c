/* The one loop that watches a program in the guest: a run's (run.c) and a
 * session's interpreter through one call (session.c). It keeps the wall
 * clock, reads and caps both output streams, writes the input as the
 * program takes it, and hands the owner's own fds (the zygote's control
 * pipe; the port and the reply pipe) to the owner's hooks. A timeout, a
 * flood, or the owner's word stops everything the owner's way (in the
 * guest: kill(-1) from PID 1, so a setsid() double fork escapes nothing),
 * repeated until everything is reaped: a process forked while the last
 * kill ran gets the next. The loop ends when the owner says the program
 * is over, or (give_up_ms) when what was stopped does not end. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

void watch_kill_all_but_us(struct watch *w)
{
	(void)w;
	kill(-1, SIGKILL);
}

void watch_stop(struct watch *w)
{
	if (w->stopping)
		return;
	w->ops->kill(w);
	w->stopping = true;
	w->stop_us = now_us();
	w->next_kill_us = w->stop_us + KILL_REPEAT_MS * 1000;
}

/* SIGCHLD's signalfd has fired: empty it (the reap hook does the rest). */
static void drain_signals(int sigfd)
{
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
}

static void write_input(struct watch_input *in)
{
	ssize_t n = write(in->fd, in->buf + in->sent, in->len - in->sent);
	if (n > 0)
		in->sent += (size_t)n;
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		in->sent = in->len; /* gone: its status says how */
}

static void handle_own(struct watch *w, const struct watch_fd *own, const struct pollfd *p,
		       bool late)
{
	for (int i = 0; i < WATCH_OWN_FDS; i++)
		if (own[i].late == late && own[i].fd >= 0 && p[i].revents)
			own[i].ready(w, p[i].revents);
}

enum { P_SIG, P_OUT, P_ERR, P_INPUT, P_OWN, P_COUNT = P_OWN + WATCH_OWN_FDS };

void watch_program(struct watch *w)
{
	while (!w->ops->over(w)) {
		int64_t now = now_us();
		if (w->ops->check)
			w->ops->check(w, now);
		if (!w->stopping && now >= w->deadline_us) {
			w->timed_out = true;
			watch_stop(w);
		}
		if (w->stopping && w->give_up_ms && now >= w->stop_us + w->give_up_ms * 1000LL) {
			w->gave_up = true;
			break;
		}
		if (w->stopping && now >= w->next_kill_us) {
			/* Again, for anything forked while the last one ran. */
			w->ops->kill(w);
			w->next_kill_us = now + KILL_REPEAT_MS * 1000;
		}
		int64_t until = w->stopping ? w->next_kill_us : w->deadline_us;
		int timeout = until > now ? (int)((until - now + 999) / 1000) : 0;
		struct watch_fd own[WATCH_OWN_FDS];
		for (int i = 0; i < WATCH_OWN_FDS; i++)
			own[i] = (struct watch_fd){.fd = -1};
		if (w->ops->own_fds)
			w->ops->own_fds(w, own);
		struct watch_input *in = w->input;
		bool writing = in && in->sent < in->len && !w->stopping;
		struct pollfd p[P_COUNT] = {
			[P_SIG] = {.fd = w->sigfd, .events = POLLIN},
			/* Once stopping, output no longer matters: full pipes
			 * left alone cannot spin this loop. */
			[P_OUT] = {.fd = w->out->open && !w->stopping ? w->out->fd : -1, .events = POLLIN},
			[P_ERR] = {.fd = w->err->open && !w->stopping ? w->err->fd : -1, .events = POLLIN},
			[P_INPUT] = {.fd = writing ? in->fd : -1, .events = POLLOUT},
		};
		for (int i = 0; i < WATCH_OWN_FDS; i++)
			p[P_OWN + i] = (struct pollfd){.fd = own[i].fd, .events = own[i].events};
		int n = poll(p, P_COUNT, timeout);
		if (n < 0 && errno != EINTR)
			watch_stop(w); /* never leave the program unwatched */
		if (n > 0) {
			if (p[P_SIG].revents)
				drain_signals(w->sigfd);
			handle_own(w, own, p + P_OWN, false);
			for (int i = 0; i < 2; i++) {
				struct stream *s = i ? w->err : w->out;
				if (!p[P_OUT + i].revents)
					continue;
				bool overflow = false;
				/* At EOF (a closed stdout) it is polled no more. */
				s->open = stream_drain(s, &overflow);
				if (overflow && !w->stopping) {
					/* Stop a flood at once rather than read
					 * (and drop) it until the wall clock runs
					 * out. */
					w->overflow = true;
					watch_stop(w);
				}
			}
			handle_own(w, own, p + P_OWN, true);
			if (p[P_INPUT].revents & (POLLOUT | POLLERR | POLLHUP))
				write_input(in);
		}
		w->ops->reap(w);
	}
}

int watch_end_all(struct watch *w, int bound_ms)
{
	int64_t give_up = now_us() + (int64_t)bound_ms * 1000;
	for (;;) {
		w->ops->kill(w);
		w->ops->reap(w);
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
