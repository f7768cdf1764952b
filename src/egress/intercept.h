/* TLS interception of the hosts that carry a secret (issue 39,
 * docs/secrets.md): the egress proxy ends the program's TLS with a leaf
 * minted for the tunnel's name by the sandbox's CA, reads one HTTP/1.1
 * request, checks it (Host is the SNI and the tunnel's name; the secret's
 * request rules), opens its own TLS to the address the rules checked,
 * verified against the host's store and the deployer's egress_ca for that
 * name, and sends the request on with the secrets put in; the answer comes
 * back with any value it echoes masked. Every failure refuses the request
 * with its reason, in the log and (where TLS stands) in a 403 or 502 the
 * program reads: nothing is ever sent without the credential or with it
 * anywhere else. */
#ifndef AJ_EGRESS_INTERCEPT_H
#define AJ_EGRESS_INTERCEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"

/* Whether a connection to host:port carries a secret: a name (never an
 * address) one of the rules' secrets is for. */
bool intercept_wanted(struct egress_proxy *p, const char *host, uint16_t port);

/* A tunnel (CONNECT or SOCKS) to such a host, allowed and answered (200 or
 * SOCKS OK); its bytes start at c->buf + from. Logs the connection. */
void intercept_tunnel(struct conn *c, size_t from);

/* A plain-HTTP forward request to such a host (h parsed from c->buf, used
 * bytes of head): refused unless each of its secrets allows plain HTTP,
 * else sent as a tunnel's request would be. Logs the connection. */
void intercept_plain(struct conn *c, const struct http_head *h, size_t used);

#endif
