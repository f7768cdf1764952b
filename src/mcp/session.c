/* One session per MCP connection. stdio is one connection, so this server
 * holds at most one: opened at the first tool call (a client that only
 * lists tools costs no sandbox), closed when stdin ends.
 *
 * The server's lock is held across each whole call, not only while the
 * session is looked up: a session is replaced only when no call is using
 * it, so no thread is ever left holding a freed one. The library would
 * queue the calls one at a time anyway. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

void mcp_session_init(struct mcp_session *m, const struct aj_config *cfg)
{
	m->cfg = cfg;
	m->s = NULL;
	pthread_mutex_init(&m->lock, NULL);
}

int mcp_session_enter(struct mcp_session *m, struct aj_session **s, char **note,
		      struct aj_error *err)
{
	*s = NULL;
	*note = NULL;
	pthread_mutex_lock(&m->lock);
	const char *reason = m->s ? aj_session_closed_reason(m->s) : NULL;
	if (reason) {
		*note = aj_session_replaced_note(reason);
		fprintf(stderr, "agentjail mcp: session %s closed: %s\n", aj_session_id(m->s),
			reason);
		aj_session_close(m->s);
		m->s = NULL;
	}
	if (!m->s) {
		int rc = aj_session_open(m->cfg, &m->s, err);
		if (rc) {
			m->s = NULL;
			pthread_mutex_unlock(&m->lock);
			return rc;
		}
		fprintf(stderr, "agentjail mcp: session %s opened\n", aj_session_id(m->s));
	}
	*s = m->s;
	return 0;
}

void mcp_session_leave(struct mcp_session *m)
{
	pthread_mutex_unlock(&m->lock);
}

void mcp_session_end(struct mcp_session *m)
{
	pthread_mutex_lock(&m->lock);
	if (m->s) {
		fprintf(stderr, "agentjail mcp: session %s closed: the connection ended\n",
			aj_session_id(m->s));
		aj_session_close(m->s);
		m->s = NULL;
	}
	pthread_mutex_unlock(&m->lock);
	pthread_mutex_destroy(&m->lock);
}
