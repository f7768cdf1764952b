/* The origin server the egress cases reach through the proxy (the tier
 * tests' tests/egress_cases.h and `agentjail attack`'s egress row): a small
 * HTTP/1.x server on 127.0.0.1, in threads of the host process, that
 * records what reached it, so a case can tell the proxied request (which
 * must arrive) from a bypass (which must not).
 *
 *   GET /big/N     N bytes of 'x'
 *   GET /slow      1 KiB every 100 ms, for at most 30 s
 *   POST ...       reads the body (Content-Length), answers "got N"
 *   anything else  "egress-ok PATH"
 *
 * Every connection is closed after one answer. */
#ifndef AJ_ATTACK_EGRESS_SERVER_H
#define AJ_ATTACK_EGRESS_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct egress_server;

/* 0 with *port, or -errno. */
int egress_server_start(struct egress_server **out, int *port);
/* Connections accepted so far. */
unsigned egress_server_connections(struct egress_server *s);
/* Connections the server saw end (the peer closed, or an answer was
 * sent). */
unsigned egress_server_closed(struct egress_server *s);
/* Whether the bytes any connection sent (request heads and bodies, up to
 * 64 KiB in all) contain needle. */
bool egress_server_saw(struct egress_server *s, const char *needle);
/* Stops it, closing every connection, and frees it. */
void egress_server_stop(struct egress_server *s);

#endif
