/* The HTTP server: libmicrohttpd, a thread per connection (a run blocks
 * its handler for as long as it lasts, and admission bounds how many run),
 * every request's body read whole under a cap that depends on its route,
 * and the key checked before any of the body is read.
 *
 * A request refused before its body is read (no key, or a Content-Length
 * over the cap) is answered at once, and the client may still be sending:
 * libmicrohttpd then closes the socket with the body unread, and a close
 * with unread data makes the kernel send a reset, which makes the client's
 * send fail before it reads the answer (urllib reads only once all is
 * sent). So after such an answer the server half-closes and drains what
 * still comes, bounded in bytes and time (drain_after_refusal). A refusal
 * found only mid-body (a chunked body past the cap) cannot be answered
 * until the body ends (libmicrohttpd queues no answer mid-body): the rest
 * is read and dropped under the same bounds, then answered.
 *
 * Before a body is read it must also fit the body budget (body_budget.h)
 * and its route's pre-check (may_buffer: a session file goes into memory
 * only for a session the key holds); every phase of a request but its
 * answer has a deadline (conn_limits.h); a client address has at most
 * per_ip_connections connections. */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../../core/internal.h"
#include "access_log.h"
#include "body_budget.h"
#include "conn_limits.h"
#include "http.h"

/* What a refused client's body may still cost once it is refused: the
 * bytes read and dropped, and the time, at most the idle timeout (a
 * client is never kept longer than a silent one would be). Past either,
 * the connection is closed, and a client still sending may see a reset
 * instead of its answer: the price of not reading its body for ever. */
#define DRAIN_BYTES ((size_t)64 << 20)
#define DRAIN_SEC 10u
/* A body at least this large is followed by malloc_trim (completed). */
#define TRIM_AFTER ((size_t)1 << 20)

struct conn_state {
	char *body;
	size_t len, cap, limit;
	size_t length;    /* its Content-Length; 0: none, or chunked */
	size_t reserved;  /* of the body budget, given back when the request ends */
	int late;         /* a refusal found mid-body (413, 429, 503), answered
			   * once the body ends; 0: none */
	bool refused;     /* an answer is queued before the body was read */
	bool has_body;    /* the request announced a body (length or chunked) */
	char *path;       /* the request's, for the words of a refusal (reword) */
	size_t dropped;   /* body bytes read and dropped after the refusal */
	double refused_ms; /* when it was refused (now_ms); 0: not refused */
	const struct key *key;
	const char *key_name;
	struct conn_watch *watch; /* the connection's deadlines */
	double started_ms;     /* when its headers came (now_ms) */
	/* For the access log, once answered: */
	const char *method;    /* access_log_method's */
	const char *route;     /* access_log_route's */
	int status;            /* 0: never answered */
	char run_id[33];
	char verdict[32];
};

static struct MHD_Daemon *daemon_handle;
/* The routes and the config, given at start (http_start). */
static const struct http_handlers *routes;
static const struct http_config *config;

/* Requests between their headers and the end of their answer's sending:
 * shutdown waits for these, not only for the runs, so an answer that is
 * ready is not cut off with its connection. */
static pthread_mutex_t inflight_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t inflight_done = PTHREAD_COND_INITIALIZER;
static unsigned inflight;

/* A streamed answer's body, pulled by libmicrohttpd on the connection's
 * own thread only when the socket takes more: a client that does not read
 * holds nothing but the reader's own bounded buffer. */
struct stream_body {
	long (*read)(void *arg, char *buf, size_t max);
	void (*done)(void *arg);
	void *arg;
};

static ssize_t stream_body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct stream_body *b = cls;
	long n = b->read(b->arg, buf, max);
	if (n > 0)
		return (ssize_t)n;
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_body_free(void *cls)
{
	struct stream_body *b = cls;
	if (b->done)
		b->done(b->arg);
	free(b);
}

/* The answer's body as libmicrohttpd takes it: the buffer, or the stream. */
static struct MHD_Response *response_of(struct http_response *rs)
{
	if (rs->stream_read) {
		struct stream_body *b = malloc(sizeof *b);
		if (!b) {
			if (rs->stream_done)
				rs->stream_done(rs->stream_arg);
			return NULL;
		}
		*b = (struct stream_body){rs->stream_read, rs->stream_done, rs->stream_arg};
		rs->stream_read = NULL;
		/* Its size unknown: chunked; the reader's answers are at most
		 * a block each. */
		struct MHD_Response *r = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 16384, stream_body_read, b, stream_body_free);
		if (!r)
			stream_body_free(b);
		return r;
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(
		rs->len, rs->body ? rs->body : (char *)"", rs->body ? MHD_RESPMEM_MUST_FREE
								   : MHD_RESPMEM_PERSISTENT);
	if (!r)
		free(rs->body);
	rs->body = NULL;
	return r;
}

static enum MHD_Result reply(struct MHD_Connection *conn, struct conn_state *st,
			     struct http_response *rs)
{
	/* Kept for the access log line written when the answer is sent. */
	st->status = rs->code;
	snprintf(st->run_id, sizeof st->run_id, "%s", rs->log_run[0] ? rs->log_run : rs->run_id);
	snprintf(st->verdict, sizeof st->verdict, "%s", rs->log_verdict);
	struct MHD_Response *r = response_of(rs);
	if (!r)
		return MHD_NO;
	if (rs->content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs->content_type);
	if (rs->retry_after) {
		char v[16];
		snprintf(v, sizeof v, "%u", rs->retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
	}
	if (rs->allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rs->allow);
	if (rs->run_id[0])
		MHD_add_response_header(r, "X-Run-Id", rs->run_id);
	if (rs->location[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, rs->location);
	if (rs->header_name)
		MHD_add_response_header(r, rs->header_name, rs->header_value);
	if (rs->content_type && !strcmp(rs->content_type, "text/event-stream"))
		/* A buffering proxy in front would hold the events back. */
		MHD_add_response_header(r, "X-Accel-Buffering", "no");
	if (rs->code == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"agentjail\"");
	if (rs->console) {
		/* The console shows what sandboxes printed, which is hostile:
		 * only the console's own scripts may run (no inline script, no
		 * eval), it talks only to this server, images only as data: PNGs
		 * it checked, and no other site may frame it (clickjacking).
		 * Inline styles are allowed for xterm.js, which styles its
		 * terminal with <style> elements it makes; a style cannot run
		 * code. */
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'none'; script-src 'self'; "
					"style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
					"connect-src 'self'; font-src 'self'; base-uri 'none'; "
					"form-action 'none'; frame-ancestors 'none'");
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
		MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
		MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	}
	/* Answers hold program output and session files: no cache keeps them. */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (routes->draining(routes->ctx))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rs->code, r);
	MHD_destroy_response(r);
	/* Counted only when it will go out: libmicrohttpd takes no answer
	 * mid-body, and closes the connection instead. */
	if (ret == MHD_YES)
		routes->count(routes->ctx, HTTP_ANSWERED, rs->code);
	return ret;
}

/* The drain's time: the idle timeout when that is shorter. */
static double drain_ms(void)
{
	return (config->idle_sec < DRAIN_SEC ? config->idle_sec : DRAIN_SEC) * 1000.0;
}

/* Whether a refused request's body may still be read and dropped. */
static bool drain_allows(const struct conn_state *st)
{
	return st->dropped <= DRAIN_BYTES && now_ms() - st->refused_ms < drain_ms();
}

/* After an answer sent before the body was read (the connection's last):
 * the FIN goes after the answer, then what the client still sends is read
 * and dropped until it closes or a bound is reached, so that the close
 * after it is no reset that would destroy the answer unread. */
static void drain_after_refusal(struct conn_state *st, int fd)
{
	shutdown(fd, SHUT_WR);
	char buf[16384];
	while (drain_allows(st)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, (int)(drain_ms() - (now_ms() - st->refused_ms)) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			break; /* the client closed, or is gone */
		st->dropped += (size_t)r;
	}
}

const char *http_header(const struct http_request *rq, const char *name)
{
	return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name) : NULL;
}

const char *http_query(const struct http_request *rq, const char *name)
{
	return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name)
			: NULL;
}

/* The token with spaces around it trimmed: its length, from *t on. */
static size_t trimmed(const char **t)
{
	while (**t == ' ')
		(*t)++;
	size_t n = strlen(*t);
	while (n && (*t)[n - 1] == ' ')
		n--;
	return n;
}

/* The request's key, or NULL: "Authorization: Bearer KEY"; else
 * "X-API-KEY: KEY" (the E2B SDKs' control plane); else, for a request to
 * one sandbox ("E2b-Sandbox-Id", the E2B SDKs' data plane), the key that
 * owns the sandbox whose own access token "X-Access-Token" carries (or
 * "E2B-Traffic-Access-Token", which the SDKs send on the code
 * interpreter's context calls, the same token here). */
static const struct key *request_key(struct MHD_Connection *conn, const char **name)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	if (h && !strncasecmp(h, "Bearer ", 7)) {
		const char *token = h + 7;
		size_t n = trimmed(&token);
		return routes->authenticate(routes->ctx, token, n, name);
	}
	if ((h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-API-KEY"))) {
		size_t n = trimmed(&h);
		return routes->authenticate(routes->ctx, h, n, name);
	}
	const char *sandbox = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	const char *token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Access-Token");
	if (!token)
		token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    "E2B-Traffic-Access-Token");
	if (sandbox && token && routes->sandbox_key)
		return routes->sandbox_key(routes->ctx, sandbox, token, name);
	return NULL;
}

/* The connection's deadlines (NULL: not watched). */
static struct conn_watch *watch_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* A refusal this server makes itself, in the words of the request's API
 * (the E2B API's error shape on its paths). */
static void reword(const struct conn_state *st, struct http_response *rs)
{
	if (routes->reword && st->path)
		routes->reword(routes->ctx, st->path, rs);
}

/* An answer sent before the body is read: what the client still sends is
 * dropped, under the drain's bounds. */
static enum MHD_Result refuse_early(struct MHD_Connection *conn, struct conn_state *st,
			      struct http_response *rs)
{
	st->refused = true;
	st->refused_ms = now_ms();
	reword(st, rs);
	return reply(conn, st, rs);
}

/* The refusal of a body the budget cannot take (v: which budget). */
static void refuse_body_budget(struct http_response *rs, enum body_budget_verdict v)
{
	if (v == BODY_BUDGET_KEY)
		respond_error(rs, 429, "key_body_budget",
			      "this key's requests hold %zu MiB of bodies already (its body "
			      "budget); retry when they end", body_budget_key_cap() >> 20);
	else
		respond_error(rs, 503, "body_budget",
			      "the server holds %zu MiB of request bodies already (its body "
			      "budget); retry shortly", body_budget_cap() >> 20);
	rs->retry_after = 1;
}

/* Reserves n more bytes of the budget for st's body: 0, or the refusal in
 * rs. */
static int reserve(struct conn_state *st, size_t n, struct http_response *rs)
{
	enum body_budget_verdict v = body_budget_reserve(st->key, n);
	if (v != BODY_BUDGET_OK) {
		refuse_body_budget(rs, v);
		return -1;
	}
	st->reserved += n;
	return 0;
}

/* The headers are in: decides whether to read the body at all, and
 * reserves what a body of known length will hold. */
static enum MHD_Result on_head(struct MHD_Connection *conn, struct conn_state *st,
			       const char *url, const char *method)
{
	struct http_response rs = {0};
	st->watch = watch_of(conn);
	conn_watch_body(st->watch);
	st->started_ms = now_ms();
	st->method = access_log_method(method);
	st->route = access_log_route(url);
	st->path = strdup(url); /* NULL: refusals keep the v1 words */
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	size_t length = st->length = cl ? strtoull(cl, NULL, 10) : 0;
	st->has_body = length > 0 || MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								  MHD_HTTP_HEADER_TRANSFER_ENCODING);
	/* libmicrohttpd decodes %00 in the path as any byte, and the path
	 * then ends there: a/%00b would be answered as the file a. */
	if (conn_watch_take_nul(st->watch)) {
		respond_error(&rs, 400, "bad_path", "the URL holds a NUL byte (%%00)");
		return refuse_early(conn, st, &rs);
	}
	bool mcp = !strcmp(url, "/mcp");
	st->limit = mcp ? config->mcp_body : routes->body_limit(routes->ctx, method, url);
	bool needs_key = mcp || routes->needs_key(method, url);
	if (needs_key && !(st->key = request_key(conn, &st->key_name))) {
		/* Nothing is read or run for a request without a valid key. */
		routes->count(routes->ctx, HTTP_AUTH_FAILED, 0);
		respond_error(&rs, 401, "unauthorized",
			      "a valid key is required: Authorization: Bearer KEY");
		return refuse_early(conn, st, &rs);
	}
	if (length > st->limit) {
		respond_error(&rs, 413, "too_large",
			      "the body is %s bytes; this route takes at most %zu", cl, st->limit);
		return refuse_early(conn, st, &rs);
	}
	if (!st->has_body)
		return MHD_YES;
	struct http_request head = {.method = method, .path = url, .key = st->key, .conn = conn};
	if (routes->may_buffer && routes->may_buffer(routes->ctx, &head, &rs))
		return refuse_early(conn, st, &rs);
	/* A body of known length is reserved whole, before a byte of it is
	 * read, and held in a buffer of exactly its size. */
	if (length && reserve(st, length + 1, &rs))
		return refuse_early(conn, st, &rs);
	return MHD_YES;
}

/* The buffer grown to hold n more bytes (a chunked body's growth reserved
 * from the budget as it comes): 0, or the refusal (413, 429, 503) for
 * once the body ends. */
static int grow(struct conn_state *st, size_t n)
{
	if (st->len + n > st->limit)
		return 413;
	if (st->len + n + 1 <= st->cap)
		return 0;
	/* Exactly the length when it is known (reserved at the head), else
	 * doubling up to the route's cap. */
	size_t cap = st->length ? st->length + 1 : st->cap ? st->cap : 65536;
	while (cap < st->len + n + 1)
		cap *= 2;
	if (cap > st->limit + 1)
		cap = st->limit + 1;
	if (cap > st->reserved) {
		struct http_response rs = {0};
		if (reserve(st, cap - st->reserved, &rs)) {
			free(rs.body);
			return rs.code;
		}
	}
	char *p = realloc(st->body, cap);
	if (!p)
		return 503;
	st->body = p;
	st->cap = cap;
	return 0;
}

/* A piece of the body. */
static enum MHD_Result on_body(struct MHD_Connection *conn, struct conn_state *st,
			       const char *data, size_t *size)
{
	struct http_response rs = {0};
	/* A body dribbled in slowly holds a thread: it has body_sec to
	 * arrive whole, whatever the idle timeout allows between its bytes
	 * (conn_limits.c also cuts a body whose pieces never come).
	 * libmicrohttpd takes no answer mid-body, so the 408 is offered and
	 * the connection closed: waiting for the body's end to answer would
	 * defeat the bound. */
	if (now_ms() - st->started_ms > config->body_sec * 1000.0) {
		respond_error(&rs, 408, "request_timeout", "the body did not arrive within %u s",
			      config->body_sec);
		st->refused = true;
		*size = 0;
		reword(st, &rs);
		return reply(conn, st, &rs);
	}
	size_t n = *size;
	*size = 0;
	int late = st->late ? st->late : grow(st, n);
	if (late) {
		/* Refused mid-body (chunked, no length to refuse at the
		 * headers): the answer waits for the body's end, the rest
		 * dropped under the drain's bounds, past which the connection
		 * is closed. */
		if (!st->late)
			st->refused_ms = now_ms();
		st->late = late;
		st->dropped += n;
		return drain_allows(st) ? MHD_YES : MHD_NO;
	}
	memcpy(st->body + st->len, data, n);
	st->len += n;
	st->body[st->len] = '\0';
	return MHD_YES;
}

/* The refusal found mid-body, answered now that the body ended. */
static enum MHD_Result late_refusal(struct MHD_Connection *conn, struct conn_state *st)
{
	struct http_response rs = {0};
	if (st->late == 413)
		respond_error(&rs, 413, "too_large",
			      "the body is more than the %zu bytes this route takes", st->limit);
	else
		refuse_body_budget(&rs, st->late == 429 ? BODY_BUDGET_KEY : BODY_BUDGET_SERVER);
	reword(st, &rs);
	return reply(conn, st, &rs);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_data_size,
				      void **con_cls)
{
	(void)cls;
	(void)version;
	struct conn_state *st = *con_cls;
	if (!st) {
		st = calloc(1, sizeof *st);
		if (!st)
			return MHD_NO;
		*con_cls = st;
		pthread_mutex_lock(&inflight_lock);
		inflight++;
		pthread_mutex_unlock(&inflight_lock);
		return on_head(conn, st, url, method);
	}
	if (st->refused) {
		*upload_data_size = 0; /* the rest of the body is dropped */
		return MHD_YES;
	}
	if (*upload_data_size)
		return on_body(conn, st, upload_data, upload_data_size);
	conn_watch_answer(st->watch);
	if (st->late)
		return late_refusal(conn, st);
	struct http_response rs = {0};
	struct http_request rq = {
		.method = method,
		.path = url,
		.query_dir = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "dir"),
		.body = st->body ? st->body : "",
		.body_len = st->len,
		.key = st->key,
		.accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
		.origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"),
		.protocol_version =
			MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "MCP-Protocol-Version"),
		.content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							    MHD_HTTP_HEADER_CONTENT_TYPE),
		.last_event_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID"),
		.query_after = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after"),
		.query_limit = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limit"),
		.query_before = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "before"),
		.query_wait = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "wait"),
		.conn = conn,
	};
	if (!strcmp(url, "/mcp"))
		routes->mcp(routes->ctx, &rq, &rs);
	else
		routes->api(routes->ctx, &rq, &rs);
	return reply(conn, st, &rs);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	struct conn_state *st = *con_cls;
	if (!st)
		return;
	*con_cls = NULL;
	if (st->status)
		access_log_request(st->key_name, st->method, st->route, st->status,
				   now_ms() - st->started_ms, st->run_id, config->tier, st->verdict);
	pthread_mutex_lock(&inflight_lock);
	if (--inflight == 0)
		pthread_cond_broadcast(&inflight_done);
	pthread_mutex_unlock(&inflight_lock);
	/* The answer went out before a body the client may still be sending.
	 * This runs on the connection's own thread before libmicrohttpd closes
	 * the socket, and nothing else reads it now. */
	if (st->refused && st->has_body && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci)
			drain_after_refusal(st, ci->connect_fd);
	}
	conn_watch_next(st->watch);
	free(st->body);
	free(st->path);
	body_budget_release(st->key, st->reserved);
	/* A large body (and what its route parsed from it) was freed into
	 * this thread's malloc arena, which keeps it: after a burst of them
	 * serve stayed at hundreds of MiB while its keep-alive connections
	 * idled (issue 35). Handing the free pages back costs a walk of the
	 * arenas, paid only after a body this large. */
	if (st->cap >= TRIM_AFTER)
		malloc_trim(0);
	free(st);
}

/* Each connection watched from its accept to its close (conn_limits.h). */
static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = ci ? conn_watch_add(ci->connect_fd) : NULL;
	} else {
		/* Called before libmicrohttpd closes the socket. */
		conn_watch_remove(*socket_context);
		*socket_context = NULL;
	}
}

/* The URL's %HH decoded as libmicrohttpd would, noting a NUL it yields
 * (on_head refuses the request). */
static size_t unescape_url(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	size_t n = MHD_http_unescape(s);
	if (memchr(s, '\0', n))
		conn_watch_mark_nul(watch_of(conn));
	return n;
}

static void log_error(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	flockfile(stderr); /* one message at a time from the server's threads */
	fputs("agentjail serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
	funlockfile(stderr);
}

/* The daemon on ai's address. */
static struct MHD_Daemon *daemon_on(const struct addrinfo *ai)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_ERROR_LOG | MHD_USE_POLL;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* TLS where the deployer gave a certificate: every route, /mcp too. */
	struct MHD_OptionItem tls[] = {
		{MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)config->tls_cert_pem},
		{MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)config->tls_key_pem},
		{MHD_OPTION_END, 0, NULL}};
	if (config->tls_cert_pem)
		flags |= MHD_USE_TLS;
	else
		tls[0].option = MHD_OPTION_END;
	return MHD_start_daemon(
		flags, (uint16_t)config->port, NULL, NULL, access_handler, NULL,
		/* First: the options after it log through it. */
		MHD_OPTION_EXTERNAL_LOGGER, log_error, NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
		/* A client that goes quiet is cut off: it would hold a thread. */
		MHD_OPTION_CONNECTION_TIMEOUT, config->idle_sec,
		/* Each connection is a thread: bounded, so a flood of them cannot
		 * exhaust the machine. */
		MHD_OPTION_CONNECTION_LIMIT, config->max_connections,
		/* ...and one address cannot take them all (0: behind a proxy,
		 * where every client has the proxy's address). */
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_connections,
		MHD_OPTION_NOTIFY_CONNECTION, notify_connection, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, NULL,
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_ARRAY, tls,
		MHD_OPTION_END);
}

int http_start(struct http_config *cfg, const struct http_handlers *h, struct aj_error *err)
{
	routes = h;
	config = cfg;
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	char port[16];
	snprintf(port, sizeof port, "%u", cfg->port);
	int gai = getaddrinfo(cfg->host, port, &hints, &ai);
	if (gai)
		return error_set(err, -EINVAL, "--listen: '%s' is not a numeric address: %s",
				 cfg->host, gai_strerror(gai));
	if (body_budget_init(cfg->body_budget, cfg->key_body_budget, cfg->max_connections) ||
	    conn_limits_start(cfg->head_sec, cfg->body_sec)) {
		freeaddrinfo(ai);
		body_budget_destroy();
		return error_set(err, -ENOMEM, "cannot start the HTTP server: out of memory");
	}
	daemon_handle = daemon_on(ai);
	freeaddrinfo(ai);
	if (!daemon_handle) {
		conn_limits_stop();
		body_budget_destroy();
		return error_set(err, -EADDRINUSE, "cannot listen on %s:%u (in use, or not an "
				 "address of this machine)",
				 cfg->host, cfg->port);
	}
	if (cfg->port == 0) {
		const union MHD_DaemonInfo *info =
			MHD_get_daemon_info(daemon_handle, MHD_DAEMON_INFO_BIND_PORT);
		if (info)
			cfg->port = info->port;
	}
	return 0;
}

void http_quiesce(double timeout_sec)
{
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += (time_t)timeout_sec;
	pthread_mutex_lock(&inflight_lock);
	while (inflight > 0)
		if (pthread_cond_timedwait(&inflight_done, &inflight_lock, &end) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&inflight_lock);
}

void http_stop(void)
{
	if (daemon_handle)
		MHD_stop_daemon(daemon_handle);
	daemon_handle = NULL;
	conn_limits_stop();
	body_budget_destroy();
}
