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
 * is read and dropped under the same bounds, then answered. */
#include <arpa/inet.h>
#include <errno.h>
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
#include "http.h"
#include "../admit/service.h"

/* What a refused client's body may still cost once it is refused: the
 * bytes read and dropped, and the time, at most the idle timeout (a
 * client is never kept longer than a silent one would be). Past either,
 * the connection is closed, and a client still sending may see a reset
 * instead of its answer: the price of not reading its body for ever. */
#define DRAIN_BYTES ((size_t)64 << 20)
#define DRAIN_SEC 10u

struct conn_state {
	char *body;
	size_t len, cap, limit;
	bool too_big;
	bool refused;     /* an answer is queued before the body was read */
	bool has_body;    /* the request announced a body (length or chunked) */
	size_t dropped;   /* body bytes read and dropped after the refusal */
	double refused_ms; /* when it was refused (now_ms); 0: not refused */
	const struct key *key;
	double started_ms;     /* when its headers came (now_ms) */
	/* For the access log, once answered: */
	const char *method;    /* access_log_method's */
	const char *route;     /* access_log_route's */
	int status;            /* 0: never answered */
	char run_id[33];
	char verdict[32];
};

static struct MHD_Daemon *daemon_handle;
/* The routes, given at start (http_start). */
static const struct http_handlers *routes;

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

static enum MHD_Result reply(struct service *svc, struct MHD_Connection *conn,
			    struct conn_state *st, struct http_response *rs)
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
	if (rs->content_type && !strcmp(rs->content_type, "text/event-stream"))
		/* A buffering proxy in front would hold the events back. */
		MHD_add_response_header(r, "X-Accel-Buffering", "no");
	if (rs->code == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"agentjail\"");
	/* Answers hold program output and session files: no cache keeps them. */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (atomic_load(&svc->draining))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rs->code, r);
	MHD_destroy_response(r);
	/* Counted only when it will go out: libmicrohttpd takes no answer
	 * mid-body, and closes the connection instead. */
	if (ret == MHD_YES) {
		metrics_http(&svc->metrics, rs->code);
		/* Whatever was too large, a body or the code in it, nothing ran:
		 * a refusal, never a sandbox's failure. */
		if (rs->code == 413)
			metrics_too_large(&svc->metrics);
	}
	return ret;
}

/* The drain's time: the idle timeout when that is shorter. */
static double drain_ms(const struct service *svc)
{
	return (svc->cfg.idle_sec < DRAIN_SEC ? svc->cfg.idle_sec : DRAIN_SEC) * 1000.0;
}

/* Whether a refused request's body may still be read and dropped. */
static bool drain_allows(const struct service *svc, const struct conn_state *st)
{
	return st->dropped <= DRAIN_BYTES && now_ms() - st->refused_ms < drain_ms(svc);
}

/* After an answer sent before the body was read (the connection's last):
 * the FIN goes after the answer, then what the client still sends is read
 * and dropped until it closes or a bound is reached, so that the close
 * after it is no reset that would destroy the answer unread. */
static void drain_after_refusal(const struct service *svc, struct conn_state *st, int fd)
{
	shutdown(fd, SHUT_WR);
	char buf[16384];
	while (drain_allows(svc, st)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, (int)(drain_ms(svc) - (now_ms() - st->refused_ms)) + 1);
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

/* "Bearer TOKEN" → the key, or NULL. */
static const struct key *authenticate(struct service *svc, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return NULL;
	const char *token = h + 7;
	while (*token == ' ')
		token++;
	size_t n = strlen(token);
	while (n && token[n - 1] == ' ')
		n--;
	return keys_find(&svc->keys, token, n);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_data_size,
				      void **con_cls)
{
	(void)version;
	struct service *svc = cls;
	struct conn_state *st = *con_cls;
	struct http_response rs = {0};

	if (!st) {
		/* The headers are in: decide now whether to read the body at all. */
		st = calloc(1, sizeof *st);
		if (!st)
			return MHD_NO;
		*con_cls = st;
		pthread_mutex_lock(&inflight_lock);
		inflight++;
		pthread_mutex_unlock(&inflight_lock);
		st->started_ms = now_ms();
		st->method = access_log_method(method);
		st->route = access_log_route(url);
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		st->has_body = (cl && strtoull(cl, NULL, 10) > 0) ||
			       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							   MHD_HTTP_HEADER_TRANSFER_ENCODING);
		st->limit = !strcmp(url, "/mcp") ? svc->cfg.max_body
						 : routes->api_body_limit(svc, method, url);
		bool needs_key = !strcmp(url, "/mcp") || routes->api_needs_key(method, url);
		if (needs_key && !(st->key = authenticate(svc, conn))) {
			/* Nothing is read or run for a request without a valid key. */
			metrics_auth_failure(&svc->metrics);
			respond_error(&rs, 401, "unauthorized",
				      "a valid key is required: Authorization: Bearer KEY");
			st->refused = true;
			st->refused_ms = now_ms();
			return reply(svc, conn, st, &rs);
		}
		if (cl && strtoull(cl, NULL, 10) > st->limit) {
			respond_error(&rs, 413, "too_large",
				      "the body is %s bytes; this route takes at most %zu", cl,
				      st->limit);
			st->refused = true;
			st->refused_ms = now_ms();
			return reply(svc, conn, st, &rs);
		}
		return MHD_YES;
	}
	if (st->refused) {
		*upload_data_size = 0; /* the rest of the body is dropped */
		return MHD_YES;
	}
	if (*upload_data_size) {
		/* A body dribbled in slowly holds a thread: it has request_sec
		 * to arrive whole, whatever the idle timeout allows between
		 * its bytes. libmicrohttpd takes no answer mid-body, so the
		 * 408 is offered and the connection closed: waiting for the
		 * body's end to answer would defeat the bound. */
		if (now_ms() - st->started_ms > svc->cfg.request_sec * 1000.0) {
			respond_error(&rs, 408, "request_timeout",
				      "the body did not arrive within %u s", svc->cfg.request_sec);
			st->refused = true;
			*upload_data_size = 0;
			return reply(svc, conn, st, &rs);
		}
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (st->too_big || st->len + n > st->limit) {
			/* Past the cap mid-body (chunked, no length to refuse at the
			 * headers): the answer waits for the body's end, the rest
			 * dropped under the drain's bounds, past which the
			 * connection is closed. */
			if (!st->too_big)
				st->refused_ms = now_ms();
			st->too_big = true;
			st->dropped += n;
			return drain_allows(svc, st) ? MHD_YES : MHD_NO;
		}
		if (st->len + n + 1 > st->cap) {
			size_t cap = st->cap ? st->cap : 65536;
			while (cap < st->len + n + 1)
				cap *= 2;
			char *p = realloc(st->body, cap);
			if (!p) {
				st->too_big = true;
				st->refused_ms = now_ms();
				return MHD_YES;
			}
			st->body = p;
			st->cap = cap;
		}
		memcpy(st->body + st->len, upload_data, n);
		st->len += n;
		st->body[st->len] = '\0';
		return MHD_YES;
	}
	if (st->too_big) {
		respond_error(&rs, 413, "too_large", "the body is more than the %zu bytes this "
			      "route takes", st->limit);
		return reply(svc, conn, st, &rs);
	}
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
	};
	if (!strcmp(url, "/mcp"))
		routes->mcp(svc, &rq, &rs);
	else
		routes->api(svc, &rq, &rs);
	return reply(svc, conn, st, &rs);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct service *svc = cls;
	struct conn_state *st = *con_cls;
	if (!st)
		return;
	*con_cls = NULL;
	if (st->status)
		access_log_request(st->key ? st->key->name : NULL, st->method, st->route, st->status,
				   now_ms() - st->started_ms, st->run_id, svc->cfg.sandbox.tier,
				   st->verdict);
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
			drain_after_refusal(svc, st, ci->connect_fd);
	}
	free(st->body);
	free(st);
}

static void log_error(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	flockfile(stderr); /* one message at a time from the server's threads */
	fputs("agentjail serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
	funlockfile(stderr);
}

int http_start(struct service *svc, const struct http_handlers *h, struct aj_error *err)
{
	routes = h;
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	char port[16];
	snprintf(port, sizeof port, "%u", svc->cfg.port);
	int gai = getaddrinfo(svc->cfg.host, port, &hints, &ai);
	if (gai)
		return error_set(err, -EINVAL, "--listen: '%s' is not a numeric address: %s",
				 svc->cfg.host, gai_strerror(gai));
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_ERROR_LOG | MHD_USE_POLL;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	daemon_handle = MHD_start_daemon(
		flags, (uint16_t)svc->cfg.port, NULL, NULL, access_handler, svc,
		/* First: the options after it log through it. */
		MHD_OPTION_EXTERNAL_LOGGER, log_error, svc, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
		/* A client that goes quiet is cut off: it would hold a thread. */
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)svc->cfg.idle_sec,
		/* Each connection is a thread: bounded, so a flood of them cannot
		 * exhaust the machine. */
		MHD_OPTION_CONNECTION_LIMIT, svc->cfg.max_connections,
		MHD_OPTION_NOTIFY_COMPLETED, completed, svc, MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!daemon_handle)
		return error_set(err, -EADDRINUSE, "cannot listen on %s:%u (in use, or not an "
				 "address of this machine)",
				 svc->cfg.host, svc->cfg.port);
	if (svc->cfg.port == 0) {
		const union MHD_DaemonInfo *info =
			MHD_get_daemon_info(daemon_handle, MHD_DAEMON_INFO_BIND_PORT);
		if (info)
			svc->cfg.port = info->port;
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

void http_stop(struct service *svc)
{
	(void)svc;
	if (daemon_handle)
		MHD_stop_daemon(daemon_handle);
	daemon_handle = NULL;
}
