/* The Redis that spreads runs over workers: the connection pool, and the
 * names and message shapes serve and workers agree on.
 *
 *   agentjail:runs:TIER          a stream, consumer group "workers": runs and
 *                                session opens for any worker of TIER
 *   agentjail:worker:W:ops       a list: calls for the sessions worker W holds
 *   agentjail:claim:ID           who took request ID: a worker's name, or
 *                                "abandoned" (SET NX: exactly one wins, so a
 *                                run is never started twice, nor after its
 *                                caller gave up)
 *   agentjail:reply:ID           a list the answer is pushed to
 *   agentjail:worker:W:alive     set every second with a 3 s expiry: W lives;
 *                                its value is the run slots W offers (0
 *                                while it stops), which serve's admission
 *                                sums: a dead worker's go with its key
 *   agentjail:workers            a hash, worker W -> tier
 *   agentjail:workername:NAME    W, while the worker started under NAME
 *                                lives (3 s expiry): one live worker a name
 *
 * W is a worker's instance, NAME@START: its --name and 16 random hex digits
 * new at each start. Claims, heartbeats, consumers and sessions name W, so
 * a worker restarted under the same name is another W: its predecessor's
 * runs are found lost (their W has no heartbeat) and buried, never taken
 * for the new one's own.
 *   agentjail:session:SID        a hash: worker, owner (key name), closed
 *   agentjail:key:NAME:sessions  a set of the key's open sessions
 *
 * A request is JSON: {"id", "op", "reply", ...}; an answer is {"ok": true,
 * ...} or {"ok": false, "code", "error"}. */
#ifndef AJ_SERVE_QUEUE_H
#define AJ_SERVE_QUEUE_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>

#include "agentjail.h"

#define QUEUE_POOL 64
#define QUEUE_GROUP "workers"
#define QUEUE_ALIVE_MS 3000
#define QUEUE_STREAM_MAX 100000 /* XADD MAXLEN ~: a bound if nobody reads */

struct queue {
	char url[300];
	char host[256];
	int port;
	int db;
	pthread_mutex_t lock;
	redisContext *idle[QUEUE_POOL];
	unsigned nidle;
};

/* Parses redis://HOST[:PORT][/DB]; connects nowhere yet. */
int queue_init(struct queue *q, const char *url, struct aj_error *err);
void queue_destroy(struct queue *q);
/* A connection (pooled, else new; every command times out after
 * timeout_sec): NULL with err when Redis cannot be reached. */
redisContext *queue_get(struct queue *q, double timeout_sec, struct aj_error *err);
/* Back to the pool, or closed when it failed (c->err) or broken is set. */
void queue_put(struct queue *q, redisContext *c, bool broken);
/* A command's reply, or NULL with err ("queue: ...") on any Redis error,
 * an error reply included. */
redisReply *queue_cmd(redisContext *c, struct aj_error *err, const char *fmt, ...);
/* A command whose answer nobody reads (a bookkeeping write that, failed,
 * leaves nothing to undo). */
void queue_do(redisContext *c, const char *fmt, ...);

#endif
