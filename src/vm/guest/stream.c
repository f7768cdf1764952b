/* What the agent reads from a run's program and a session's interpreter:
 * output streams capped as they are read (the host's capture.c holds the
 * bytes), and a session call's reply lines. The interpreter shares its
 * process with the code of the cells, so whatever it writes on the reply
 * pipe may be forged: the scan only picks the one line that answers this
 * call and drops the rest, and the buffer never holds more than its cap.
 * scan_reply is pure (no reads of its own), so the host's fuzz target can
 * drive it (fuzz/fuzz_session_reply.c). */
#include <errno.h>
#include <string.h>
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

void scan_reply(struct capture *rep, const char *reply_prefix, const char *ack_line, bool *acked,
		bool *replied, size_t *reply_len)
{
	size_t plen = strlen(reply_prefix), pos = 0;
	while (rep->buf && pos < rep->len) {
		char *nl = memchr(rep->buf + pos, '\n', rep->len - pos);
		if (!nl)
			break;
		const char *line = rep->buf + pos;
		size_t n = (size_t)(nl - line);
		if (n == strlen(ack_line) && memcmp(line, ack_line, n) == 0)
			*acked = true;
		if (n > plen && memcmp(line, reply_prefix, plen) == 0 &&
		    (line[plen] == ',' || line[plen] == '}')) {
			*replied = true;
			*reply_len = n;
			break;
		}
		pos += n + 1;
	}
	if (pos) {
		memmove(rep->buf, rep->buf + pos, rep->len - pos);
		rep->len -= pos;
	}
}
