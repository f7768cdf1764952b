/* What the agent reads from a run's program and a session's interpreter:
 * output streams capped as they are read, and a session call's reply lines.
 * The interpreter shares its process with the code of the cells, so
 * whatever it writes on the reply pipe may be forged: the scan only picks
 * the one line that answers this call and drops the rest, and the buffer
 * never holds more than its cap. Pure (no reads of its own), so the host's
 * fuzz target can drive it (fuzz/fuzz_session_reply.c). */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

bool stream_append(struct stream *s, const char *data, size_t n)
{
	size_t take = n < s->limit - s->len ? n : s->limit - s->len;
	if (take > 0 && s->len + take > s->alloc) {
		/* Grow geometrically, never past the cap: a flood costs the
		 * agent at most `limit` bytes. */
		size_t want = s->alloc ? s->alloc * 2 : 16384;
		while (want < s->len + take)
			want *= 2;
		if (want > s->limit)
			want = s->limit;
		char *p = realloc(s->buf, want);
		if (!p) {
			s->truncated = true;
			return true;
		}
		s->buf = p;
		s->alloc = want;
	}
	if (take > 0) {
		memcpy(s->buf + s->len, data, take);
		s->len += take;
	}
	if (take < n)
		s->truncated = true;
	return take < n;
}

void scan_reply(struct stream *rep, const char *reply_prefix, const char *ack_line, bool *acked,
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

