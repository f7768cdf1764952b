/* One call into a session's interpreter (src/core/repl.py), as a tier
 * carries it: a request line out, a reply line back, the interpreter's
 * output captured in between. Tiers only move the lines; src/api/session.c
 * writes and reads them. */
#ifndef AJ_SESSION_CALL_H
#define AJ_SESSION_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct stream_tap;

struct session_call {
	const char *request;    /* one JSON object ending in '\n' */
	size_t len;
	uint64_t seq;           /* the reply must start with {"seq":SEQ */
	int cancel_fd;          /* readable: stop the call; -1: none */
	size_t reply_max;       /* a longer reply is a protocol error */
	/* Where the call's output goes as it is read (stream_tap.h); NULL:
	 * no streaming. The API pushes the images at the end. */
	struct stream_tap *tap;
};

struct session_answer {
	char *reply;            /* the reply line (malloc'ed, NUL-terminated), or NULL */
	size_t reply_len;
	bool restarted;         /* a fresh interpreter took this call: earlier state is gone */
	bool ended;             /* the interpreter ended during the call */
	/* It ended by itself before it acknowledged the request: the code
	 * never ran, so the call may be given to a fresh interpreter. (An
	 * interpreter that dies between calls is only found out by the next
	 * call.) A tier that sets it makes sure the fresh interpreter never
	 * sees the first copy of the request too: it would run twice. Tiers
	 * that cannot tell leave it false. */
	bool unread;
};

/* Whether line (len bytes, no newline) is the reply to seq: repl.py writes
 * the sequence number first, so a prefix test is exact. */
bool session_reply_matches(const char *line, size_t len, uint64_t seq);
/* Whether line is repl.py's {"ack":SEQ}: the request was taken. */
bool session_ack_matches(const char *line, size_t len, uint64_t seq);
/* rb holds what the reply pipe carried so far: notes this call's ack in
 * *acked, takes its reply into ans, and drops every other whole line
 * (stale or forged: the session's own doing), in one pass and one move
 * however many lines a flood brings. True once this call's reply is in. */
bool session_take_reply(struct capture *rb, uint64_t seq, struct session_answer *ans,
			bool *acked);

#endif
