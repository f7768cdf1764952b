/* Watching one gVisor run: see watch.h. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../gvisor/watch.h"

/* From runsc's start until it has ended; a timeout, a flood or a cancel
 * kills the whole cgroup. Fills o's flags and wall_ms. */
void watch_run(struct watch *w, const struct gvisor_sandbox *sb, const struct aj_limits *l,
	       double start_ms, struct outcome *o)
{
	const double deadline = start_ms + l->wall_sec * 1000.0;
	/* The CPU the sandbox used before the program went in (a pooled one
	 * started earlier) is not the program's. */
	double cpu_base = cgroup_cpu_ms(&sb->cg);
	const double cpu_limit = (double)l->cpu_sec * 1000.0 + CPU_ALLOWANCE_MS;
	double next_cpu_check = now_ms() + CPU_CHECK_MS;
	bool open_fds[2] = {true, true}, stopping = false;
	for (;;) {
		if (!stopping && now_ms() >= deadline) {
			o->timed_out = true;
			stopping = true;
		}
		if (!stopping && cpu_base >= 0 && now_ms() >= next_cpu_check) {
			next_cpu_check = now_ms() + CPU_CHECK_MS;
			w->cpu_used = cgroup_cpu_ms(&sb->cg) - cpu_base;
			if (w->cpu_used > cpu_limit) {
				w->cpu_exceeded = true;
				stopping = true;
			}
		}
		if (stopping) {
			/* runsc, sentry, gofer and the program: all of them, at
			 * once; the end (started_end) waits for them, bounded.
			 * runsc's state is removed with the run directory. */
			cgroup_kill_all(&sb->cg);
			break;
		}
		bool writing = w->input_sent < w->input_len;
		struct pollfd p[5] = {
			{.fd = w->pidfd, .events = POLLIN},
			{.fd = writing ? w->in_fd : -1, .events = POLLOUT},
			{.fd = open_fds[0] ? w->out_fd : -1, .events = POLLIN},
			{.fd = open_fds[1] ? w->err_fd : -1, .events = POLLIN},
			{.fd = w->cancel_fd, .events = POLLIN},
		};
		double until = deadline < next_cpu_check ? deadline : next_cpu_check;
		double left = until - now_ms();
		int n = poll(p, 5, left < 0 ? 0 : (int)left + 1);
		if (n < 0 && errno != EINTR) {
			stopping = true; /* never run unwatched */
			continue;
		}
		if (n <= 0)
			continue;
		if (p[1].revents) {
			ssize_t wr = send(w->in_fd, w->input + w->input_sent,
					  w->input_len - w->input_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (wr > 0)
				w->input_sent += (size_t)wr;
			else if (wr < 0 && errno != EAGAIN && errno != EINTR)
				w->input_sent = w->input_len; /* stdin gone: the end says why */
			if (w->input_sent == w->input_len) {
				/* The whole program is in: boot.py reads to EOF. */
				close(w->in_fd);
				w->in_fd = -1;
			}
		}
		for (int i = 0; i < 2; i++) {
			if (!p[2 + i].revents)
				continue;
			bool overflow = false;
			open_fds[i] = supervise_drain(i ? w->err_fd : w->out_fd, i ? &w->err : &w->out,
						      &overflow);
			if (overflow) {
				o->output_overflow = true;
				stopping = true;
			}
		}
		if (p[4].revents & POLLIN) {
			o->cancelled = true;
			stopping = true;
		} else if (p[4].revents) {
			w->cancel_fd = -1; /* hung up: can never fire */
		}
		if (p[0].revents)
			break;
	}
	o->wall_ms = now_ms() - start_ms;
}

/* Once the sandbox has ended: what it wrote is in the pipes. Non-blocking
 * reads stop at EAGAIN. */
void watch_drain(struct watch *w, struct outcome *o)
{
	bool ignored = false;
	supervise_drain(w->out_fd, &w->out, o->output_overflow ? &ignored : &o->output_overflow);
	supervise_drain(w->err_fd, &w->err, o->output_overflow ? &ignored : &o->output_overflow);
}
