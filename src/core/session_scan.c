/* The host's side of the session protocol's reply lines, shared by every
 * tier that reads them on the host (the jail's pipes, the docker tier's
 * frames): which line answers which call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_call.h"

bool session_reply_matches(const char *line, size_t len, uint64_t seq)
{
	char head[40];
	int n = snprintf(head, sizeof head, "{\"seq\":%llu", (unsigned long long)seq);
	return len > (size_t)n && memcmp(line, head, (size_t)n) == 0 &&
	       (line[n] == ',' || line[n] == '}');
}

bool session_ack_matches(const char *line, size_t len, uint64_t seq)
{
	char want[40];
	int n = snprintf(want, sizeof want, "{\"ack\":%llu}", (unsigned long long)seq);
	return len == (size_t)n && memcmp(line, want, len) == 0;
}

bool session_take_reply(struct capture *rb, uint64_t seq, struct session_answer *ans,
			bool *acked)
{
	size_t pos = 0, from = rb->scanned < rb->len ? rb->scanned : 0;
	bool found = false;
	while (rb->buf && from < rb->len && !found) {
		char *nl = memchr(rb->buf + from, '\n', rb->len - from);
		if (!nl) {
			from = rb->len; /* none up to here: the next read scans on */
			break;
		}
		const char *line = rb->buf + pos;
		size_t n = (size_t)(nl - line);
		if (session_ack_matches(line, n, seq))
			*acked = true;
		if (session_reply_matches(line, n, seq)) {
			ans->reply = malloc(n + 1);
			if (ans->reply) {
				memcpy(ans->reply, line, n);
				ans->reply[n] = '\0';
				ans->reply_len = n;
			}
			found = true;
		}
		pos += n + 1;
		from = pos;
	}
	if (pos) {
		memmove(rb->buf, rb->buf + pos, rb->len - pos);
		rb->len -= pos;
		from -= pos;
	}
	rb->scanned = from;
	return found;
}
