/* The sessions a server holds, each owned by the key that opened it: no
 * other key can use, see or close it (it answers 404, as if it did not
 * exist), but an admin key may list and end it (sessions_end). A session the library closed (idle, lifetime, a failed sandbox)
 * stays listed until it is next asked for, so its caller learns why. */
#ifndef AJ_SERVE_SESSIONS_H
#define AJ_SERVE_SESSIONS_H

#include <pthread.h>
#include <jansson.h>
#include <stdbool.h>

#include "../admit/admit.h"
#include "agentjail.h"

struct hsession {
	char id[40];
	struct key_use *owner;
	struct aj_session *s;
	/* The body that opened it, its egress as narrowed since: what opens
	 * it again after serve's restart (ckpt_store.h), under the limits
	 * then in force. */
	json_t *terms;
	/* When it joined the table and when its key last asked for it
	 * (sessions_get: a call, a file, a pause), epoch seconds: what GET
	 * /v1/sessions shows. The table's own clock: the library keeps its
	 * session's times to itself, on a monotonic clock. */
	double created, used;
	unsigned refs;
	bool deleted;
	struct hsession *next;
};

struct session_table {
	pthread_mutex_t lock;
	struct hsession *head;
};

void sessions_init(struct session_table *t);
/* n copies of from's state (aj_session_fork), each a session of from's
 * key in out: 0; -EDQUOT when the key's sessions and n would pass its
 * limit (none is made); or the library's -errno. All or none. */
int sessions_fork(struct session_table *t, struct hsession *from, unsigned n,
		  struct hsession **out, struct aj_checkpoint_info *info, struct aj_error *err);
/* How a session is opened under cfg: aj_session_open's shape. */
typedef int (*session_opener)(void *arg, const struct aj_config *cfg, struct aj_session **out,
			      struct aj_error *err);
struct session_make {
	const struct aj_config *cfg;
	json_t *terms;        /* kept (a reference taken) */
	const char *id;       /* NULL: the library's id for it */
	session_opener open;  /* NULL: aj_session_open */
	void *arg;
};
/* Opens a session for owner: 0, -EDQUOT (the key holds its sessions
 * already), or the opener's -errno; err says why. */
int sessions_create(struct session_table *t, const struct session_make *m, struct key_use *owner,
		    struct hsession **out, struct aj_error *err);
/* Calls fn on each live session (the table's lock held: fn must not
 * call into the table). */
void sessions_each(struct session_table *t, void (*fn)(struct hsession *h, void *arg), void *arg);
/* Sets h's terms' lists to those kept holds (after a narrowing): its
 * "allow_hosts" and "allow_cidrs", and "secrets_kept", the names of the
 * secrets it keeps (never a value: what a restart narrows them to). */
void sessions_narrowed(struct session_table *t, struct hsession *h, json_t *kept);
/* The session id names, if owner holds it, with a reference (and its
 * last use now); else NULL. */
struct hsession *sessions_get(struct session_table *t, const char *id, const struct key_use *owner);
void sessions_put(struct session_table *t, struct hsession *h);
/* One more reference on h, which the caller holds already (a download
 * that outlives its request); sessions_put ends it. */
void sessions_hold(struct session_table *t, struct hsession *h);
/* Closes it (once the calls using it end); -ENOENT if owner holds none. */
int sessions_delete(struct session_table *t, const char *id, const struct key_use *owner);
/* Ends the open session id, whichever key holds it, for the operator (an
 * admin key's DELETE): its sandbox destroyed now (after a call under way),
 * the entry kept for its owner, whose next call is told it is closed
 * because why, and who may still delete it. 0, or -ENOENT when no open
 * session has that id. */
int sessions_end(struct session_table *t, const char *id, const char *why);
/* Whether h, which the caller holds, was deleted meanwhile (a stream that
 * holds it ends then, so the session closes). */
bool sessions_deleted(struct session_table *t, struct hsession *h);
unsigned sessions_open(struct session_table *t);
void sessions_close_all(struct session_table *t);

#endif
