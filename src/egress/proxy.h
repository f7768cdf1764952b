/* The egress proxy (issue 26, docs/egress.md): the one way out of a sandbox
 * whose deployer named allow-host or allow-cidr rules. It runs on the host,
 * outside the sandbox, as threads of the process that opened it: one proxy
 * per run, or per session for the session's life.
 *
 * It speaks, on one port, an HTTP forward proxy (GET http://host/...),
 * CONNECT (TLS and any other TCP) and SOCKS5 (names resolved here, never in
 * the sandbox). For every connection it checks the name against the host
 * rules before resolving it (an unlisted name is never looked up, so no
 * answer leaks), resolves it itself, checks each address (a host rule
 * reaches only public addresses; loopback, private, link-local and metadata
 * addresses only through a CIDR rule), and connects to the address it
 * checked. A CONNECT to port 443 must carry a TLS ClientHello whose server
 * name is the CONNECT host. Every decision goes to the log.
 *
 * How connections reach it is each tier's business; it takes:
 *   - a listening stream socket (a TCP socket on 127.0.0.1 made inside the
 *     run's network namespace, or a unix socket on the host);
 *   - a unix socket on which one such listening socket will arrive
 *     (SCM_RIGHTS), sent by the sandbox's init, which made it in its network
 *     namespace before the program started (jail, warm);
 *   - one connected stream (a socketpair end the microvm's channel feeds).
 *
 * Stopping it closes every listener and connection it holds and joins its
 * threads: nothing of it outlives the run or session. */
#ifndef AJ_EGRESS_PROXY_H
#define AJ_EGRESS_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentjail.h"

/* Where the proxy listens as seen from inside every sandbox, and what the
 * program's environment says: contract.h (rule E1 when egress is on). */
#include "../core/contract.h"
#define EGRESS_PORT CONTRACT_EGRESS_PORT

/* The most log entries one run or session call returns; the rest are
 * counted ("dropped"). */
#define EGRESS_LOG_MAX 1000

/* The connections one proxy serves at once, whatever --egress-connections
 * (the total over its life) says: each costs the host a thread (256 KiB
 * of stack), two fds and up to 2 x 256 KiB of buffers, none of it the
 * sandbox's own limits (issue 35). One past it is accepted and closed at
 * once, before any thread is spent, and logged as a refusal. */
#define EGRESS_CONCURRENT 64
/* The deadline for a connection's whole request (an HTTP head, a SOCKS5
 * greeting and request, a tunnel's TLS ClientHello), from its accept: a
 * client trickling a byte at a time holds its thread no longer. */
#define EGRESS_HEAD_MS (30 * 1000)
/* How long an established tunnel or forward request may carry nothing
 * either way before the proxy ends it. */
#define EGRESS_IDLE_MS (300 * 1000)

struct egress_proxy;

/* Whether cfg asks for egress at all. */
bool egress_wanted(const struct aj_config *cfg);

struct mitm_ca;
/* Starts a proxy with cfg's rules, egress limits and secrets (already
 * validated); ca: the sandbox's interception CA (mitm_ca.h), which cfg's
 * secrets need (NULL without secrets). 0, or -errno with err. */
int egress_proxy_start(const struct aj_config *cfg, struct mitm_ca *ca,
		       struct egress_proxy **out, struct aj_error *err);

/* The deployer's own timeouts instead of EGRESS_HEAD_MS and EGRESS_IDLE_MS
 * (milliseconds, each at least 1), for connections accepted from now on.
 * Not a sandbox's to ask for: no front end passes one through. */
void egress_proxy_set_timeouts(struct egress_proxy *p, unsigned head_ms, unsigned idle_ms);

/* Serves a listening stream socket; the proxy owns fd from here on, even on
 * failure. 0 or -errno. */
int egress_proxy_add_listener(struct egress_proxy *p, int fd);
/* Receives one listening socket over the unix socket fd (SCM_RIGHTS) when it
 * comes, then serves it; owns fd. EOF without one: nothing to serve (the
 * sandbox failed before making it; its run says why). */
int egress_proxy_add_listener_from(struct egress_proxy *p, int fd);
/* Serves one connected stream as if it had been accepted; owns fd. */
int egress_proxy_add_connection(struct egress_proxy *p, int fd);

/* A session's rules narrowed: keep only the listed rules (their text as
 * the deployer gave it), each of which must be one of the proxy's rules now,
 * else -EPERM naming it and nothing changes. Connections open now are cut;
 * later ones are checked against what is left. */
int egress_proxy_keep(struct egress_proxy *p, const char *const *hosts, uint32_t n_hosts,
		      const char *const *cidrs, uint32_t n_cidrs, struct aj_error *err);

/* A session's secrets narrowed to the named ones (each must be one of the
 * proxy's, else -EPERM naming it and nothing changes); open connections
 * are cut, later requests carry only what is left. */
int egress_proxy_keep_secrets(struct egress_proxy *p, const char *const *names, uint32_t n,
			      struct aj_error *err);

/* to's rules and secrets narrowed to from's as they are now (a fork
 * keeps what its session narrowed: a copy never regains a dropped rule or
 * secret). Each of from's must be one of to's, as keep asks. */
int egress_proxy_narrow_like(struct egress_proxy *to, struct egress_proxy *from,
			     struct aj_error *err);

/* The decisions since the last take (or the start), as a JSON object:
 *   {"connections": [{"host", "address", "port", "via", "allowed",
 *                     "reason", "bytes_out", "bytes_in"}, ...],
 *    "allowed": N, "denied": N, "dropped": N,
 *    "bytes_out": N, "bytes_in": N,        (these, since the proxy started)
 *    "limit": null | "out_mb: ..."}        (a cap that ended a transfer)
 * malloc'd; NULL when out of memory. */
char *egress_proxy_take_log(struct egress_proxy *p);

/* Stops serving: closes every listener and connection and joins its
 * threads. The log can still be taken. Idempotent. */
void egress_proxy_stop(struct egress_proxy *p);
/* Stops it and frees it. NULL is fine. */
void egress_proxy_free(struct egress_proxy *p);

#endif
