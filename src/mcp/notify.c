/* Output chunks as MCP notifications (MCP 2025-06-18: utilities/progress
 * and server/utilities/logging; 2026-07-28 keeps both shapes).
 *
 * progress is the count of output bytes so far, stdout and stderr
 * together: it increases with every chunk, as the specification requires
 * of a progress value, and no total is given because none is known. The
 * text of a chunk is valid UTF-8 (JSON strings must be): a character split
 * between two chunks is joined, and invalid bytes become U+FFFD. */
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "notify.h"

static const char *const level_names[] = {
	[MCP_LOG_DEBUG] = "debug",   [MCP_LOG_INFO] = "info",         [MCP_LOG_NOTICE] = "notice",
	[MCP_LOG_WARNING] = "warning", [MCP_LOG_ERROR] = "error",     [MCP_LOG_CRITICAL] = "critical",
	[MCP_LOG_ALERT] = "alert",   [MCP_LOG_EMERGENCY] = "emergency",
};

int mcp_log_level_parse(const char *name, enum mcp_log_level *out)
{
	for (int i = MCP_LOG_DEBUG; i <= MCP_LOG_EMERGENCY; i++)
		if (name && !strcmp(name, level_names[i])) {
			*out = (enum mcp_log_level)i;
			return 0;
		}
	return -1;
}

/* Output is logged at info: a client that asked for notice or above wants
 * only what matters more than a program's prints. */
static bool logs_output(const struct mcp_notifier *n)
{
	return n->level != MCP_LOG_OFF && n->level <= MCP_LOG_INFO;
}

bool mcp_notifier_active(const struct mcp_notifier *n)
{
	return n->progress_token || logs_output(n);
}

/* How many bytes at the end of buf[0..len) begin a character whose rest has
 * not come yet (0 to 3). An invalid lead byte waits for nothing: the
 * repair turns it into U+FFFD at once. */
static size_t incomplete_tail(const unsigned char *buf, size_t len)
{
	for (size_t back = 1; back <= 3 && back <= len; back++) {
		unsigned char b = buf[len - back];
		if ((b & 0xC0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t need = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
		return need > back ? back : 0;
	}
	return 0;
}

/* The chunk as valid UTF-8 text, the carried bytes first; malloc'ed. */
static char *chunk_text(struct mcp_notifier *n, int which, const char *data, size_t len,
			size_t *text_len)
{
	size_t carried = n->carry_len[which];
	unsigned char *buf = malloc(carried + len);
	if (!buf)
		return NULL;
	memcpy(buf, n->carry[which], carried);
	memcpy(buf + carried, data, len);
	size_t all = carried + len;
	size_t tail = incomplete_tail(buf, all);
	memcpy(n->carry[which], buf + all - tail, tail);
	n->carry_len[which] = tail;
	char *text = utf8_repair((const char *)buf, all - tail, text_len);
	free(buf);
	return text;
}

static void send_log(struct mcp_notifier *n, const char *logger, const char *text, size_t len)
{
	json_t *msg = json_pack("{s:s, s:s, s:{s:s, s:s, s:s%}}", "jsonrpc", "2.0", "method",
				"notifications/message", "params", "level", level_names[MCP_LOG_INFO],
				"logger", logger, "data", text, len);
	if (msg)
		n->send(n->arg, msg);
}

static void send_progress(struct mcp_notifier *n, const char *text, size_t len)
{
	json_t *params = json_pack("{s:O, s:I}", "progressToken", n->progress_token, "progress",
				   (json_int_t)n->progress);
	if (!params)
		return;
	if (len > 0) {
		size_t cut = len;
		if (cut > MCP_PROGRESS_MESSAGE_MAX) {
			/* Cut at a character's start, and say that it was cut. */
			cut = MCP_PROGRESS_MESSAGE_MAX;
			while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
				cut--;
		}
		char *message = malloc(cut + 4);
		if (message) {
			memcpy(message, text, cut);
			size_t mlen = cut;
			if (cut < len) {
				memcpy(message + cut, "\xE2\x80\xA6", 3); /* U+2026 */
				mlen += 3;
			}
			json_object_set_new(params, "message", json_stringn(message, mlen));
			free(message);
		}
	}
	json_t *msg = json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method",
				"notifications/progress", "params", params);
	if (msg)
		n->send(n->arg, msg);
}

void mcp_notifier_event(void *arg, const struct aj_event *ev)
{
	struct mcp_notifier *n = arg;
	/* Images come whole in the result, as image content blocks. */
	if (ev->kind == AJ_EVENT_IMAGE || ev->len == 0)
		return;
	int which = ev->kind == AJ_EVENT_STDERR;
	size_t len;
	char *text = chunk_text(n, which, ev->data, ev->len, &len);
	if (!text)
		return; /* out of memory: a notification is lost, the result is not */
	n->progress += ev->len;
	if (n->progress_token)
		send_progress(n, text, len);
	if (logs_output(n) && len > 0)
		send_log(n, which ? "stderr" : "stdout", text, len);
	free(text);
}

void mcp_notifier_finish(struct mcp_notifier *n)
{
	for (int which = 0; which < 2; which++) {
		size_t len;
		char *text = n->carry_len[which] && logs_output(n)
				     ? utf8_repair((const char *)n->carry[which], n->carry_len[which], &len)
				     : NULL;
		n->carry_len[which] = 0;
		if (text)
			send_log(n, which ? "stderr" : "stdout", text, len);
		free(text);
	}
}

void mcp_notifier_free(struct mcp_notifier *n)
{
	json_decref(n->progress_token);
	n->progress_token = NULL;
}
