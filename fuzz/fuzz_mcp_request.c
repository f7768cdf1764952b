/* libFuzzer target: the MCP server's request handling (src/mcp/server.c), as
 * a client (an AI agent, or whoever reaches the stdio server) drives it. The
 * input is what arrives on stdin: any number of lines, each read, parsed and
 * dispatched by the server's own loop (mcp_server_read): initialize, ping,
 * tools/list, server/discover, tools/call, notifications/cancelled, and every
 * malformed, mistyped or unknown message.
 *
 * What must hold: no crash, leak or undefined behaviour (ASan/UBSan), and
 * every message the server sends is one line of JSON-RPC 2.0: an object with
 * "jsonrpc": "2.0", an "id" (a string, an integer or null) and exactly one of
 * "result" or "error" (the latter with an integer code and a string message);
 * every notification (a call's output, when the input asked for it with a
 * progressToken or logging/setLevel) one line with a method and params, no id.
 *
 * No sandbox is started: the link's run operation (the seam agentjail serve's
 * /mcp uses too) is this file's fake, which answers at once with a result made
 * from the code it was given (its bytes as the output, a status picked by its
 * first byte), so the CallToolResult is built from bytes the input chose. The
 * server runs without --sessions: a session's call needs a live sandbox
 * session, which the fuzzer does not start. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/mcp/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *copy(const char *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* What a run of code would come back as, without running it. */
static void fake_run(struct mcp_link *link, const char *code, size_t len, struct aj_cancel *cancel,
		     const struct aj_stream *stream, struct aj_result *res)
{
	(void)link;
	(void)cancel;
	/* The code's bytes as the output while it "runs", in two chunks that
	 * may split a character: the notifications are made of them. */
	for (int half = 0; stream && half < 2; half++) {
		struct aj_event ev = {.kind = half ? AJ_EVENT_STDERR : AJ_EVENT_STDOUT,
				      .data = code + (half ? len / 2 : 0),
				      .len = half ? len - len / 2 : len / 2};
		stream->fn(stream->arg, &ev);
	}
	memset(res, 0, sizeof *res);
	unsigned char pick = len ? (unsigned char)code[0] : 0;
	res->status = (enum aj_status)(pick % AJ_STATUS_COUNT);
	res->has_exit_code = res->status == AJ_STATUS_OK || res->status == AJ_STATUS_ERROR;
	res->exit_code = res->status == AJ_STATUS_ERROR ? pick : 0;
	res->signal = res->status == AJ_STATUS_KILLED ? 9 : 0;
	/* The code's bytes as both streams: whatever a program may print. */
	res->stdout_buf = copy(code, len);
	res->stdout_len = res->stdout_buf ? len : 0;
	res->stdout_truncated = pick & 0x40;
	res->stderr_buf = copy(code, len / 2);
	res->stderr_len = res->stderr_buf ? len / 2 : 0;
	res->stderr_truncated = pick & 0x80;
	res->wall_ms = (double)len;
	res->cpu_ms = (double)len / 2;
	res->memory_kb = len;
	if (res->status != AJ_STATUS_OK && res->status != AJ_STATUS_ERROR)
		res->message = copy(code, len < 64 ? len : 64);
}

static bool bad_id(json_t *id)
{
	return !id || !(json_is_string(id) || json_is_integer(id) || json_is_null(id));
}

/* Every message the server sends: checked, then dropped. */
static void check_emit(struct mcp_link *link, const char *msg)
{
	(void)link;
	if (strchr(msg, '\n'))
		__builtin_trap(); /* would break the one-message-a-line framing */
	json_error_t je;
	/* JSON_ALLOW_NUL: a result's output may hold a \u0000 (a program's
	 * NUL byte, or this fake's echo of code the server now takes with
	 * one), which is valid JSON. */
	json_t *m = json_loads(msg, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!json_is_object(m))
		__builtin_trap();
	json_t *v = json_object_get(m, "jsonrpc");
	json_t *result = json_object_get(m, "result"), *error = json_object_get(m, "error");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0 ||
	    bad_id(json_object_get(m, "id")) || !result == !error ||
	    (result && !json_is_object(result)) ||
	    (error && (!json_is_integer(json_object_get(error, "code")) ||
		       !json_is_string(json_object_get(error, "message")))))
		__builtin_trap();
	json_decref(m);
}

/* A notification: one line, a method and params, never an id. */
static void check_note(struct mcp_link *link, const char *msg)
{
	(void)link;
	if (strchr(msg, '\n'))
		__builtin_trap();
	json_t *m = json_loads(msg, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	if (!json_is_object(m) || !json_is_string(json_object_get(m, "method")) ||
	    !json_is_object(json_object_get(m, "params")) || json_object_get(m, "id"))
		__builtin_trap();
	json_decref(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 1 << 20)
		return 0;
	struct mcp_config cfg;
	mcp_config_init(&cfg);
	/* A process tier that is never opened: the fake runs every call. */
	struct mcp_server *s = mcp_server_start(&cfg, NULL);
	if (!s)
		__builtin_trap();
	struct mcp_link link = {.emit = check_emit, .notify = check_note, .run = fake_run};
	link.owner = &link;
	FILE *in = fmemopen((void *)data, size, "r");
	if (in) {
		mcp_server_read(s, &link, in);
		fclose(in);
	}
	/* As at EOF on stdin: every call still going is cancelled and waited
	 * for (each fake run's thread answers or is told it was cancelled). */
	mcp_server_stop(s);
	mcp_config_free(&cfg);
	return 0;
}
