/* One connection through the egress proxy, as its pieces share it (see
 * proxy_internal.h): conn.c serves the request and the plain relay,
 * intercept.c the TLS interception of hosts that carry a secret; both use
 * the waits, writes, decision and upstream connect of conn_io.c, below
 * them. */
#ifndef AJ_EGRESS_CONN_H
#define AJ_EGRESS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_head.h"
#include "proxy_internal.h"

/* How long an answer to the client may wait for room, and an upstream to
 * accept. The request's own deadline is the proxy's head_ms, from the
 * accept (EGRESS_HEAD_MS); a quiet tunnel ends after its idle_ms. */
#define WRITE_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
/* Each direction's buffer: 64 KiB, grown to 256 KiB for a bulk transfer
 * (a read that filled half of it) while the proxy has fewer than EGRESS_BIG_BUFFERS
 * grown: a 100 MiB download goes at 0.65-0.79 of direct with 256 KiB and
 * 0.43-0.61 with 64 KiB (agentjail bench --egress, 2026-12-02), and the
 * bound keeps 256 connections from holding 128 MiB. */
#define RELAY_BUF (64u << 10)
#define RELAY_BIG (256u << 10)
/* After a refusal the proxy reads and drops what the client still sends
 * for at most this long and this much (conn_linger). */
#define LINGER_MS 5000
#define LINGER_BYTES (1u << 20)

struct conn {
	struct egress_conn *ec;
	struct egress_proxy *p;
	int client, up;
	char buf[HTTP_HEAD_MAX + 1];   /* what the client sent before the relay */
	size_t have;
	struct egress_entry e;
	struct egress_addrs addrs;     /* the addresses the rules allowed */
	unsigned head_ms, idle_ms;     /* the proxy's, when this connection came */
	uint64_t generation;           /* of the rules decide() applied */
};

/* Waits for fd to be ready (events) or the proxy to stop: 1 ready, 0 timed
 * out or stopped, -1 error. */
int conn_wait(struct conn *c, int fd, short events, int ms);
/* What is left of the request's deadline (from the accept): 0 once past. */
int conn_head_ms_left(struct conn *c);
/* Reads more of the client's request into c->buf before the deadline. */
bool conn_read_more(struct conn *c);
bool conn_write_all(struct conn *c, int fd, const void *data, size_t len);
/* After an answer that ends the connection, sent while the client may
 * still be sending (a refusal before its body): the FIN goes after the
 * answer, then what still comes is read and dropped until the client
 * closes, LINGER_BYTES came, LINGER_MS (or its idle_ms, if shorter) passed
 * or the proxy stops. Closing with bytes unread sends a reset, which a
 * client still sending meets before it reads the answer, and a forwarder
 * between (boot.py's, on docker and gvisor) passes on as the end of the
 * connection: the program read "closed without response" instead of the
 * refusal's reason. */
void conn_linger(struct conn *c);
/* The entry becomes a refusal with this reason. */
void conn_deny(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An address literal: 0 with family and addr, else -1. */
int conn_parse_literal(const char *host, int *family, uint8_t addr[16]);
/* The rules applied to c->e.host and port: true with c->addrs the
 * addresses allowed, else false with the reason. */
bool conn_decide(struct conn *c);
/* Connects to the first allowed address that answers (c->up): 0 or -errno,
 * the reason set. */
int conn_connect_up(struct conn *c);
/* DNS names equal, any case, a trailing dot ignored. */
bool conn_same_name(const char *a, const char *b);

#endif
