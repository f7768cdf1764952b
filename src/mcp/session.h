/* The one session an MCP connection keeps (agentjail mcp --sessions). */
#ifndef AJ_MCP_SESSION_H
#define AJ_MCP_SESSION_H

#include <pthread.h>

#include "agentjail.h"

struct mcp_session {
	const struct aj_config *cfg;
	pthread_mutex_t lock;     /* held for a whole call: one at a time */
	struct aj_session *s;     /* NULL until the first call */
};

void mcp_session_init(struct mcp_session *m, const struct aj_config *cfg);
/* Takes the lock and makes sure the connection has an open session,
 * opening it at the first call, or anew when a limit (idle, lifetime, a
 * failed sandbox) closed the last one. 0 with *s, and *note (malloc'ed,
 * else NULL) telling the model the earlier session and its state are gone;
 * or -errno with err, the lock released (*note may be set then too). */
int mcp_session_enter(struct mcp_session *m, struct aj_session **s, char **note,
		      struct aj_error *err);
void mcp_session_leave(struct mcp_session *m);
/* Closes the session (the connection ended): its sandbox is destroyed. */
void mcp_session_end(struct mcp_session *m);

#endif
