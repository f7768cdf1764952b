/* What the agent reads from a run's program and a session's interpreter:
 * its pipes, capped as they are read (the host's capture.c holds the
 * bytes); a session call's reply lines are then scanned by the host's own
 * scan (src/core/session_scan.c). */
#include <errno.h>
#include <unistd.h>

#include "agent.h"

bool stream_drain(struct stream *s, bool *overflow)
{
	char buf[65536];
	for (int i = 0; i < READS_PER_WAKE; i++) {
		ssize_t n = read(s->fd, buf, sizeof buf);
		if (n > 0) {
			if (capture_append(&s->cap, buf, (size_t)n))
				*overflow = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN;
	}
	return true;
}
