#ifndef AJ_MCP_SERVER_H
#define AJ_MCP_SERVER_H

#include <stdio.h>

#include "agentjail.h"
#include "config.h"
#include "notify.h"

/* Serves MCP on in/out until EOF; every run goes through sandbox. Returns
 * the process exit code. */
int mcp_serve(const struct mcp_config *cfg, struct aj_sandbox *sandbox, FILE *in, FILE *out);

/* For other transports (agentjail serve's /mcp): a link carries one
 * client's messages to the server and its answers back. */
struct mcp_link {
	/* One whole JSON-RPC message from the server, under its lock. */
	void (*emit)(struct mcp_link *link, const char *msg);
	/* One notification sent while a tools/call runs (its output), under
	 * the same lock as emit (optional: a link without it gets none, and
	 * its calls run as they did before streaming). */
	void (*notify)(struct mcp_link *link, const char *msg);
	/* A tools/call has ended, answered or cancelled (optional). */
	void (*done)(struct mcp_link *link);
	/* Runs run_python's code instead of the server's own sandbox and
	 * concurrency (optional): must fill *res, and give stream (NULL: no
	 * notifications wanted) each chunk before it returns. */
	void (*run)(struct mcp_link *link, const char *code, size_t len, struct aj_cancel *cancel,
		    const struct aj_stream *stream, struct aj_result *res);
	/* The level logging/setLevel chose on this link (the 2025 era's
	 * connection-wide setting; OFF until then). Set by the server. */
	enum mcp_log_level log_level;
	/* Whose messages these are: notifications/cancelled reaches only
	 * calls whose link has the same owner. */
	const void *owner;
	/* tools/call threads started for this link (set by the server). */
	unsigned calls_started;
	/* Set by the server when a call it started will send notifications
	 * (its client asked, and notify is set): a transport that can answer
	 * either way (/mcp) then answers with a stream. */
	bool notifying;
};

struct mcp_server;
/* The process's one server (NULL if the tool list cannot be built). */
struct mcp_server *mcp_server_start(const struct mcp_config *cfg, struct aj_sandbox *sandbox);
/* One message (without framing) from link's client. Answers that need no
 * run are emitted before it returns; a tools/call's comes from its thread. */
void mcp_server_message(struct mcp_server *s, struct mcp_link *link, const char *msg, size_t len);
/* Reads messages from in, one a line, until EOF, and serves each through
 * link: the stdio transport's loop (fuzz/fuzz_mcp_request.c drives it with a
 * link of its own). */
void mcp_server_read(struct mcp_server *s, struct mcp_link *link, FILE *in);
/* The parse error for a message longer than the transport accepts. */
void mcp_server_too_long(struct mcp_server *s, struct mcp_link *link);
/* Cancels every call, waits for them, ends the session. */
void mcp_server_stop(struct mcp_server *s);

#endif
