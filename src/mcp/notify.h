/* A tools/call's output as MCP notifications while it runs: each chunk the
 * library streams (include/agentjail.h, "Streaming") becomes a
 * notifications/progress when the client gave a progressToken, and a
 * notifications/message (logger "stdout" or "stderr", level info) when it
 * asked for log messages at info or below. The result is unchanged. */
#ifndef AJ_MCP_NOTIFY_H
#define AJ_MCP_NOTIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agentjail.h"

/* RFC 5424's severities, as MCP names them; OFF: no log messages. */
enum mcp_log_level {
	MCP_LOG_OFF = 0,
	MCP_LOG_DEBUG,
	MCP_LOG_INFO,
	MCP_LOG_NOTICE,
	MCP_LOG_WARNING,
	MCP_LOG_ERROR,
	MCP_LOG_CRITICAL,
	MCP_LOG_ALERT,
	MCP_LOG_EMERGENCY,
};

/* "debug" ... "emergency": 0, or -1 for anything else. */
int mcp_log_level_parse(const char *name, enum mcp_log_level *out);

/* The progress message carries at most this many bytes of a chunk: it is a
 * status line for a person, while the log message and the result carry the
 * output whole. */
#define MCP_PROGRESS_MESSAGE_MAX 1024

struct mcp_notifier {
	json_t *progress_token;     /* owned; NULL: no progress notifications */
	enum mcp_log_level level;   /* what the client asked for; OFF: none */
	/* Sends one notification (takes the reference), on the library's
	 * streaming thread. */
	void (*send)(void *arg, json_t *msg);
	void *arg;
	uint64_t progress;          /* bytes of output so far, both streams */
	/* A chunk may end inside a UTF-8 character: its first bytes wait
	 * here for the rest, per stream, so no character is split in two
	 * replacement characters. */
	unsigned char carry[2][4];
	size_t carry_len[2];
};

/* Whether any notification would be sent: if not, the call runs without
 * a stream, as before streaming existed. */
bool mcp_notifier_active(const struct mcp_notifier *n);
/* An aj_event_fn: arg is the struct mcp_notifier. */
void mcp_notifier_event(void *arg, const struct aj_event *ev);
/* After the run: bytes still waiting for the rest of a character never
 * get it, and go to the log as a replacement character. */
void mcp_notifier_finish(struct mcp_notifier *n);
void mcp_notifier_free(struct mcp_notifier *n);

#endif
