/* The egress proxy's own pieces, shared by its files and no one else:
 *
 *   proxy.c    the proxy: its rules, its sources (listeners), its
 *              connections' threads, keep, stop
 *   ledger.c   what connections count and register under the proxy's lock
 *              (rules held, bytes against the caps, buffers, live entries):
 *              below proxy.c and conn.c, so neither calls the other back
 *   conn.c     one connection: the request (HTTP or SOCKS5), the decision,
 *              the upstream connection, the relay under the caps
 *   decide.c   the rules applied to a name or an address (no I/O)
 *   resolve.c  names resolved with c-ares, stoppable
 *   log.c      the decision log and its JSON
 */
#ifndef AJ_EGRESS_PROXY_INTERNAL_H
#define AJ_EGRESS_PROXY_INTERNAL_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/egress_rule.h"
#include "../core/secret.h"
#include "proxy.h"

/* The rules in force: parsed, with the text each came from (keep names
 * rules by it). */
struct egress_rules {
	struct egress_host_rule *hosts;
	char **host_text;
	uint32_t n_hosts;
	struct egress_cidr_rule *cidrs;
	char **cidr_text;
	uint32_t n_cidrs;
	/* Secrets (issue 39): added to requests for their own hosts by the
	 * interceptor (intercept.c); narrowed like the rules, by name. */
	struct secret_set secrets;
	unsigned refs;           /* the proxy's and each decision's (proxy.c) */
	uint64_t generation;     /* 0 at the start, one more at each keep */
};

/* One decision, as the log keeps it. */
struct egress_entry {
	char host[256];          /* the name or address asked for */
	char address[48];        /* the address connected to (or refused); "" if none */
	uint16_t port;
	const char *via;         /* "http", "connect", "socks" */
	bool allowed;            /* by the rules */
	/* "" unless the rules allowed it and it still was not reached: the
	 * cause ("ECONNREFUSED", "ETIMEDOUT", "DNS"), its verdict "failed". */
	char failure[24];
	char reason[200];
	uint64_t bytes_out, bytes_in;
	/* The secrets this connection carried to its host, by name
	 * ("GH,OPENAI"): never a value. "" for none. */
	char secrets[160];
};

struct egress_injections {
	char name[SECRET_NAME_MAX + 1];
	uint64_t n;
};

struct egress_log {
	struct egress_entry *e;
	size_t n, cap;
	uint64_t allowed, denied, failed, dropped; /* since the last take */
	/* Requests each secret went out with, since the last take. */
	struct egress_injections injections[AJ_MAX_SECRETS];
	unsigned n_injections;
};

/* A connection's thread, registered so stop and keep can cut it. */
struct egress_conn {
	struct egress_proxy *p;
	int client, upstream;    /* -1 when not open */
	uint64_t accepted_ns;    /* CLOCK_MONOTONIC at accept: the head's deadline runs from it */
	/* While it relays: its log entry, bytes counted under the lock, so a
	 * session call that ends meanwhile reports it ("open"). */
	bool relaying;
	struct egress_entry live;
	struct egress_conn *next;
};

#define EGRESS_MAX_SOURCES 16

struct egress_proxy {
	pthread_mutex_t lock;    /* everything below but the constants */
	pthread_cond_t idle;     /* live reached 0 */
	int stop_fd;             /* an eventfd, readable once stopping */
	int wake_fd;             /* an eventfd: a source was added */
	bool stopping, stopped, accept_running;
	pthread_t accept_thread;
	struct egress_rules *rules;
	struct aj_egress_limits limits;
	unsigned head_ms, idle_ms; /* EGRESS_HEAD_MS, EGRESS_IDLE_MS unless the deployer set others */
	/* Sources: listening sockets, and unix sockets a listener will come
	 * on. Owned. */
	int listeners[EGRESS_MAX_SOURCES];
	unsigned n_listeners;
	int receivers[EGRESS_MAX_SOURCES];
	unsigned n_receivers;
	struct egress_conn *conns;
	unsigned live;
	/* Totals since the start (the caps are over these). */
	uint64_t out_total, in_total;
	uint32_t connections;
	char limit[160];         /* the cap reached, "" if none */
	/* The bandwidth cap's clocks: when each direction may send next. */
	uint64_t next_out_ns, next_in_ns;
	unsigned big_buffers;    /* relay buffers grown for bulk (conn.c) */
	/* Interception (issue 39), with secrets: the sandbox's CA the
	 * program's TLS is terminated with, and the context upstreams are
	 * verified with (the host's store and the deployer's egress_ca).
	 * Constant from the start. */
	struct mitm_ca *ca;
	struct ssl_ctx_st *up_ctx;
	struct egress_log log;
};

/* ---- decide.c ---- */

/* Whether a name may be looked up at all (a host rule names it with this
 * port): true with why naming the rule, or false with why. */
bool egress_name_listed(const struct egress_rules *r, const char *host, uint16_t port,
			char *why, size_t n);
/* Whether a connection to addr (AF_INET/AF_INET6, network order) on port
 * is allowed: by a CIDR rule (why names it), or (by_listed_name) because it
 * is public (why untouched). true, or false with why. */
bool egress_address_allowed(const struct egress_rules *r, int family, const uint8_t *addr,
			    uint16_t port, bool by_listed_name, char *why, size_t n);

/* ---- resolve.c ---- */

#define EGRESS_MAX_ADDRS 16
struct egress_addrs {
	struct sockaddr_storage a[EGRESS_MAX_ADDRS];
	unsigned n;
};
/* Resolves host (A and AAAA) with c-ares, giving up when stop_fd becomes
 * readable. 0, or -errno with why. */
int egress_resolve(const char *host, int stop_fd, struct egress_addrs *out, char *why, size_t n);

/* ---- conn.c ---- */

/* Serves one accepted connection; its thread's body. Frees c. */
void *egress_conn_main(void *c);

/* ---- ledger.c, for proxy.c and conn.c ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t egress_now_ns(void);

/* The rules in force, held for one decision (keep may replace them
 * meanwhile); given back with egress_rules_drop. */
struct egress_rules *egress_rules_take(struct egress_proxy *p);
void egress_rules_drop(struct egress_proxy *p, struct egress_rules *r);
void egress_rules_free(struct egress_rules *r);
/* Drops one reference (freeing the rules at the last); the lock held. */
void egress_rules_unref(struct egress_rules *r);
/* Counts n bytes one way against the caps (and, if live is not NULL, in
 * that relaying connection's entry); false (with p->limit set) when a cap is
 * passed, and the connection must end. Waits for the bandwidth cap first,
 * if there is one (false if stopped meanwhile). */
bool egress_account(struct egress_proxy *p, struct egress_entry *live, bool out, size_t n);
/* Takes (more) one of the proxy's bulk relay buffers, if fewer than
 * EGRESS_BIG_BUFFERS are taken: true if it may grow one; or gives one back
 * (more false). */
#define EGRESS_BIG_BUFFERS 16
bool egress_big_buffer(struct egress_proxy *p, bool more);
/* A connection starts relaying (its entry e becomes live) or ends it (e
 * gets the live entry's bytes back; it stays listed live until
 * egress_record). */
void egress_conn_relaying(struct egress_conn *c, struct egress_entry *e, bool start);
/* A connection ended (or was refused): its log entry. */
void egress_record(struct egress_conn *c, const struct egress_entry *e);
/* One request went out with secret name in it (the log's "injections"). */
void egress_injected(struct egress_proxy *p, const char *name);
/* Registers c's upstream fd so that stop and keep can cut it. */
void egress_conn_set_upstream(struct egress_conn *c, int fd);

/* ---- log.c ---- */

void egress_log_add(struct egress_log *l, const struct egress_entry *e);
/* One request went out with secret name in it. */
void egress_log_injected(struct egress_log *l, const char *name);
/* The entries as JSON (proxy.h's shape), then live[0..n_live) (connections
 * still open, marked "open": true, counted again in a later take); clears
 * the entries. NULL on ENOMEM. */
char *egress_log_take(struct egress_log *l, const struct egress_entry *live, size_t n_live,
		      uint64_t out_total, uint64_t in_total, const char *limit);
void egress_log_free(struct egress_log *l);

#endif
