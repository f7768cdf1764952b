#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../../core/internal.h"
#include "queue.h"

int queue_init(struct queue *q, const char *url, struct aj_error *err)
{
	memset(q, 0, sizeof *q);
	if (strncmp(url, "redis://", 8) != 0)
		return error_set(err, -EINVAL, "--queue: expected redis://HOST[:PORT][/DB], got '%.200s'",
				 url);
	snprintf(q->url, sizeof q->url, "%s", url);
	const char *h = url + 8;
	size_t n = strcspn(h, ":/");
	if (n == 0 || n >= sizeof q->host)
		return error_set(err, -EINVAL, "--queue: '%.200s' names no host", url);
	memcpy(q->host, h, n);
	q->host[n] = '\0';
	q->port = 6379;
	const char *p = h + n;
	char *end;
	if (*p == ':') {
		long port = strtol(p + 1, &end, 10);
		if (end == p + 1 || port < 1 || port > 65535 || (*end && *end != '/'))
			return error_set(err, -EINVAL, "--queue: '%.200s': the port is not 1 to 65535",
					 url);
		q->port = (int)port;
		p = end;
	}
	if (*p == '/' && p[1]) {
		long db = strtol(p + 1, &end, 10);
		if (*end || db < 0 || db > 15)
			return error_set(err, -EINVAL, "--queue: '%.200s': the database is not 0 to 15",
					 url);
		q->db = (int)db;
	} else if (*p && strcmp(p, "/")) {
		return error_set(err, -EINVAL, "--queue: '%.200s' is not redis://HOST[:PORT][/DB]",
				 url);
	}
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void queue_destroy(struct queue *q)
{
	for (unsigned i = 0; i < q->nidle; i++)
		redisFree(q->idle[i]);
	q->nidle = 0;
	pthread_mutex_destroy(&q->lock);
}

static struct timeval tv(double sec)
{
	return (struct timeval){.tv_sec = (time_t)sec,
				.tv_usec = (suseconds_t)((sec - (double)(time_t)sec) * 1e6)};
}

redisContext *queue_get(struct queue *q, double timeout_sec, struct aj_error *err)
{
	redisContext *c = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->nidle)
		c = q->idle[--q->nidle];
	pthread_mutex_unlock(&q->lock);
	if (!c) {
		/* Every wait is bounded: a Redis that stops answering makes an
		 * error, never a caller that hangs. */
		c = redisConnectWithTimeout(q->host, q->port, tv(2.0));
		if (!c || c->err) {
			/* Not the URL: these words may reach a client (503), and
			 * the queue's address is the operator's (serve's start
			 * line names it). */
			error_set(err, -ECONNREFUSED, "queue: cannot reach Redis: %s",
				  c ? c->errstr : "out of memory");
			if (c)
				redisFree(c);
			return NULL;
		}
		if (q->db) {
			redisReply *r = redisCommand(c, "SELECT %d", q->db);
			bool ok = r && r->type != REDIS_REPLY_ERROR;
			if (r)
				freeReplyObject(r);
			if (!ok) {
				error_set(err, -EIO, "queue: Redis: cannot select database %d", q->db);
				redisFree(c);
				return NULL;
			}
		}
	}
	redisSetTimeout(c, tv(timeout_sec));
	return c;
}

void queue_put(struct queue *q, redisContext *c, bool broken)
{
	if (!c)
		return;
	if (broken || c->err) {
		redisFree(c);
		/* One connection broke: the idle ones most likely went with the
		 * same Redis (a restart), and would each fail a caller once. */
		pthread_mutex_lock(&q->lock);
		unsigned n = q->nidle;
		redisContext *stale[QUEUE_POOL];
		memcpy(stale, q->idle, n * sizeof *stale);
		q->nidle = 0;
		pthread_mutex_unlock(&q->lock);
		for (unsigned i = 0; i < n; i++)
			redisFree(stale[i]);
		return;
	}
	pthread_mutex_lock(&q->lock);
	if (q->nidle < QUEUE_POOL) {
		q->idle[q->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&q->lock);
	if (c)
		redisFree(c);
}

redisReply *queue_cmd(redisContext *c, struct aj_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!r) {
		error_set(err, -EIO, "queue: Redis: %s", c->err ? c->errstr : "no reply");
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		error_set(err, -EIO, "queue: Redis: %.300s", r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

void queue_do(redisContext *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (r)
		freeReplyObject(r);
}
