/* The egress proxy: its rules, sources, connection threads, keep and stop
 * (see proxy.h; the pieces are listed in proxy_internal.h).
 *
 * Threads: one accepts on every source; each connection then has a thread
 * of its own, which blocks only in poll() on its sockets and the stop
 * eventfd (resolve.c's lookup included), so stop ends them all at once.
 * The lock guards the rules, the counters, the log and the list of live
 * connections. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/internal.h"
#include "mitm_ca.h"
#include "proxy_internal.h"
#include "../core/thread.h"

#include <openssl/ssl.h>

bool egress_wanted(const struct aj_config *cfg)
{
	return cfg->allow_host_count || cfg->allow_cidr_count;
}


/* Parses the rules from their text (already validated by the config). */
static int rules_parse(struct egress_rules *r, const char *const *hosts, uint32_t nh,
		       const char *const *cidrs, uint32_t nc, struct aj_error *err)
{
	memset(r, 0, sizeof *r);
	if ((nh && (!(r->hosts = calloc(nh, sizeof *r->hosts)) ||
		    !(r->host_text = calloc(nh, sizeof *r->host_text)))) ||
	    (nc && (!(r->cidrs = calloc(nc, sizeof *r->cidrs)) ||
		    !(r->cidr_text = calloc(nc, sizeof *r->cidr_text))))) {
		egress_rules_free(r);
		return error_set(err, -ENOMEM, "egress: out of memory");
	}
	char why[200];
	for (; r->n_hosts < nh; r->n_hosts++) {
		const char *t = hosts[r->n_hosts];
		if (egress_host_rule_parse(t, &r->hosts[r->n_hosts], why, sizeof why)) {
			egress_rules_free(r);
			return error_set(err, -EINVAL, "allow-host '%s': %s", t, why);
		}
		if (!(r->host_text[r->n_hosts] = strdup(t))) {
			egress_rules_free(r);
			return error_set(err, -ENOMEM, "egress: out of memory");
		}
	}
	for (; r->n_cidrs < nc; r->n_cidrs++) {
		const char *t = cidrs[r->n_cidrs];
		if (egress_cidr_rule_parse(t, &r->cidrs[r->n_cidrs], why, sizeof why)) {
			egress_rules_free(r);
			return error_set(err, -EINVAL, "allow-cidr '%s': %s", t, why);
		}
		if (!(r->cidr_text[r->n_cidrs] = strdup(t))) {
			egress_rules_free(r);
			return error_set(err, -ENOMEM, "egress: out of memory");
		}
	}
	return 0;
}

/* Parsed rules on the heap, held by the proxy and by each decision under
 * way (refs): a connection takes the rules in force, never a re-parse. */
static int rules_new(struct egress_rules **out, const char *const *hosts, uint32_t nh,
		     const char *const *cidrs, uint32_t nc, struct aj_error *err)
{
	struct egress_rules *r = malloc(sizeof *r);
	if (!r)
		return error_set(err, -ENOMEM, "egress: out of memory");
	int rc = rules_parse(r, hosts, nh, cidrs, nc, err);
	if (rc) {
		free(r);
		return rc;
	}
	r->refs = 1;
	*out = r;
	return 0;
}




static void *proxy_accept_main(void *arg);

/* The names of every secret in set, for a keep that changes only the
 * other half of the rules. */
static int keep_all_secrets(const struct secret_set *set, struct secret_set *out,
			    struct aj_error *err)
{
	const char *names[AJ_MAX_SECRETS];
	for (uint32_t i = 0; i < set->n && i < AJ_MAX_SECRETS; i++)
		names[i] = set->s[i].name;
	char why[200];
	int rc = secret_set_keep(set, names, set->n, out, why, sizeof why);
	return rc ? error_set(err, rc, "%s", why) : 0;
}

/* The context every intercepted connection's upstream is verified with:
 * the host's trust store (OpenSSL's default paths, as curl on the host
 * would), and the deployer's egress_ca; the upstream's name is checked
 * per connection (intercept.c). TLS 1.2 at least. */
static int upstream_ctx(const struct aj_config *cfg, struct ssl_ctx_st **out, struct aj_error *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1) {
		SSL_CTX_free(ctx);
		return error_set(err, -EIO, "secrets: cannot make the upstream TLS context");
	}
	if (cfg->egress_ca && SSL_CTX_load_verify_locations(ctx, cfg->egress_ca, NULL) != 1) {
		SSL_CTX_free(ctx);
		return error_set(err, -EINVAL, "egress_ca: %s: OpenSSL cannot load its certificates",
				 cfg->egress_ca);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	static const unsigned char alpn[] = "\x08http/1.1";
	SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	*out = ctx;
	return 0;
}

int egress_proxy_start(const struct aj_config *cfg, struct mitm_ca *ca,
		       struct egress_proxy **out, struct aj_error *err)
{
	*out = NULL;
	struct egress_proxy *p = calloc(1, sizeof *p);
	if (!p)
		return error_set(err, -ENOMEM, "egress: out of memory");
	p->limits = cfg->egress;
	p->head_ms = EGRESS_HEAD_MS;
	p->idle_ms = EGRESS_IDLE_MS;
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->idle, NULL);
	int rc;
	if (p->stop_fd < 0 || p->wake_fd < 0)
		rc = error_set(err, -errno, "egress: eventfd: %s", strerror(errno));
	else
		rc = rules_new(&p->rules, cfg->allow_hosts, cfg->allow_host_count,
			       cfg->allow_cidrs, cfg->allow_cidr_count, err);
	char why[AJ_ERROR_MAX];
	if (!rc && cfg->secrets && (rc = secret_set_parse(cfg->secrets, &p->rules->secrets, why,
							  sizeof why)))
		error_set(err, rc, "%s", why);
	/* Secrets need the sandbox's CA: without it nothing is intercepted,
	 * and a secret would never be sent (fail closed, said at start). */
	if (!rc && p->rules->secrets.n && !ca)
		rc = error_set(err, -EINVAL, "secrets: the sandbox has no interception CA");
	if (!rc && p->rules->secrets.n && !(rc = upstream_ctx(cfg, &p->up_ctx, err))) {
		mitm_ca_ref(ca);
		p->ca = ca;
	}
	if (!rc && (rc = -pthread_create(&p->accept_thread, NULL, proxy_accept_main, p)))
		error_set(err, rc, "egress: cannot start the proxy's thread: %s", strerror(-rc));
	if (rc) {
		p->stopped = true;
		egress_proxy_free(p);
		return rc;
	}
	p->accept_running = true;
	*out = p;
	return 0;
}

static void wake(int fd)
{
	uint64_t one = 1;
	(void)!write(fd, &one, sizeof one);
}

static int add_source(struct egress_proxy *p, int fd, bool receiver)
{
	int rc = 0;
	pthread_mutex_lock(&p->lock);
	unsigned *n = receiver ? &p->n_receivers : &p->n_listeners;
	if (p->stopping)
		rc = -ESHUTDOWN;
	else if (*n == EGRESS_MAX_SOURCES)
		rc = -EMFILE;
	else
		(receiver ? p->receivers : p->listeners)[(*n)++] = fd;
	pthread_mutex_unlock(&p->lock);
	if (rc)
		close(fd);
	else
		wake(p->wake_fd);
	return rc;
}

int egress_proxy_add_listener(struct egress_proxy *p, int fd)
{
	if (fcntl(fd, F_SETFL, O_NONBLOCK)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return add_source(p, fd, false);
}

int egress_proxy_add_listener_from(struct egress_proxy *p, int fd)
{
	return add_source(p, fd, true);
}

void egress_proxy_set_timeouts(struct egress_proxy *p, unsigned head_ms, unsigned idle_ms)
{
	pthread_mutex_lock(&p->lock);
	p->head_ms = head_ms ? head_ms : 1;
	p->idle_ms = idle_ms ? idle_ms : 1;
	pthread_mutex_unlock(&p->lock);
}

/* A connection past a cap, refused before a thread is spent on it: closed
 * at once, and logged. Caller holds the lock. */
static void refuse_at_accept(struct egress_proxy *p, int fd, const char *reason)
{
	close(fd);
	struct egress_entry e = {.via = "http", .allowed = false};
	snprintf(e.host, sizeof e.host, "(any)");
	snprintf(e.reason, sizeof e.reason, "%s", reason);
	egress_log_add(&p->log, &e);
}

/* Whether one more connection may be served: at most EGRESS_CONCURRENT at
 * once, and limits.connections over the proxy's life (that cap, once
 * reached, is the log's "limit"). Else fd is refused. Caller holds the
 * lock. */
static bool admit(struct egress_proxy *p, int fd)
{
	char why[120];
	if (p->live >= EGRESS_CONCURRENT) {
		snprintf(why, sizeof why,
			 "the proxy serves at most %u connections at once; this one was closed",
			 EGRESS_CONCURRENT);
		refuse_at_accept(p, fd, why);
		return false;
	}
	if (p->connections >= p->limits.connections) {
		if (!p->limit[0])
			snprintf(p->limit, sizeof p->limit,
				 "connections: the sandbox opened %u connections through the proxy, its cap",
				 p->limits.connections);
		snprintf(why, sizeof why, "the cap of %u connections is reached", p->limits.connections);
		refuse_at_accept(p, fd, why);
		return false;
	}
	p->connections++;
	return true;
}

/* Starts a connection's thread; owns fd. Caller holds the lock. */
static void start_conn(struct egress_proxy *p, int fd)
{
	if (!admit(p, fd))
		return;
	struct egress_conn *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return;
	}
	c->p = p;
	c->client = fd;
	c->upstream = -1;
	c->accepted_ns = egress_now_ns();
	c->next = p->conns;
	p->conns = c;
	p->live++;
	/* 256 KiB of stack: a connection's thread only relays and parses a
	 * head; the host pays this for each connection a sandbox holds. */
	if (thread_start_detached(egress_conn_main, c, 256 << 10)) {
		p->conns = c->next;
		p->live--;
		close(fd);
		free(c);
	}
}

int egress_proxy_add_connection(struct egress_proxy *p, int fd)
{
	pthread_mutex_lock(&p->lock);
	int rc = p->stopping ? -ESHUTDOWN : 0;
	if (rc)
		close(fd);
	else
		start_conn(p, fd);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* A listening socket sent over a receiver (SCM_RIGHTS): -1 when none came
 * (EOF, or not a message with one fd). */
static int receive_listener(int sock)
{
	char byte;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			   .msg_controllen = sizeof u.buf};
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) <= 0)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	/* Only a listening stream socket is served; anything else is closed. */
	int listening = 0;
	socklen_t len = sizeof listening;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) || !listening) {
		close(fd);
		return -1;
	}
	return fd;
}

static void source_remove(int *arr, unsigned *n, unsigned i)
{
	arr[i] = arr[--*n];
}

static void *proxy_accept_main(void *arg)
{
	struct egress_proxy *p = arg;
	for (;;) {
		struct pollfd pf[2 + 2 * EGRESS_MAX_SOURCES];
		unsigned nl, nr;
		pthread_mutex_lock(&p->lock);
		nl = p->n_listeners;
		nr = p->n_receivers;
		for (unsigned i = 0; i < nl; i++)
			pf[2 + i] = (struct pollfd){.fd = p->listeners[i], .events = POLLIN};
		for (unsigned i = 0; i < nr; i++)
			pf[2 + nl + i] = (struct pollfd){.fd = p->receivers[i], .events = POLLIN};
		pthread_mutex_unlock(&p->lock);
		pf[0] = (struct pollfd){.fd = p->stop_fd, .events = POLLIN};
		pf[1] = (struct pollfd){.fd = p->wake_fd, .events = POLLIN};
		if (poll(pf, 2 + nl + nr, -1) < 0) {
			if (errno == EINTR)
				continue;
			break; /* fails closed: no source is served any more */
		}
		if (pf[0].revents)
			break;
		uint64_t v;
		bool out_of_fds = false;
		if (pf[1].revents)
			(void)!read(p->wake_fd, &v, sizeof v);
		pthread_mutex_lock(&p->lock);
		/* Only this thread removes sources, so indexes up to nl and nr
		 * still name the fds polled (sources added since are after). */
		for (unsigned i = nr; i-- > 0;) {
			if (!pf[2 + nl + i].revents)
				continue;
			int fd = receive_listener(p->receivers[i]);
			close(p->receivers[i]);
			source_remove(p->receivers, &p->n_receivers, i);
			if (fd >= 0 && p->n_listeners < EGRESS_MAX_SOURCES &&
			    fcntl(fd, F_SETFL, O_NONBLOCK) == 0)
				p->listeners[p->n_listeners++] = fd;
			else if (fd >= 0)
				close(fd);
		}
		for (unsigned i = nl; i-- > 0;) {
			if (pf[2 + i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				close(p->listeners[i]);
				source_remove(p->listeners, &p->n_listeners, i);
			} else if (pf[2 + i].revents) {
				/* Non-blocking: a connection reset before this
				 * accept must not hang the thread. */
				int c = accept4(pf[2 + i].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (c >= 0)
					start_conn(p, c);
				else if (errno == EMFILE || errno == ENFILE)
					out_of_fds = true;
			}
		}
		pthread_mutex_unlock(&p->lock);
		/* Out of fds: the pending connection stays in the backlog, and
		 * polling at once again would spin; wait a moment (or the stop). */
		if (out_of_fds) {
			struct pollfd sp = {.fd = p->stop_fd, .events = POLLIN};
			poll(&sp, 1, 100);
		}
	}
	return NULL;
}

/* Cuts every live connection (their threads see it and end); lock held. */
static void cut_all(struct egress_proxy *p)
{
	for (struct egress_conn *c = p->conns; c; c = c->next) {
		shutdown(c->client, SHUT_RDWR);
		if (c->upstream >= 0)
			shutdown(c->upstream, SHUT_RDWR);
	}
}


/* Whether text is one of the rules in texts[0..n). */
static bool among(const char *text, char *const *texts, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(text, texts[i]))
			return true;
	return false;
}

int egress_proxy_keep(struct egress_proxy *p, const char *const *hosts, uint32_t n_hosts,
		      const char *const *cidrs, uint32_t n_cidrs, struct aj_error *err)
{
	struct egress_rules *kept = NULL;
	pthread_mutex_lock(&p->lock);
	int rc = 0;
	/* Narrowing only: a rule the session does not have now cannot be
	 * kept, so no call can widen what the deployer allowed. */
	for (uint32_t i = 0; !rc && i < n_hosts; i++)
		if (!hosts[i] || !among(hosts[i], p->rules->host_text, p->rules->n_hosts))
			rc = error_set(err, -EPERM,
				       "egress: allow-host '%s' is not one of the session's rules; "
				       "rules can be dropped, never added",
				       hosts[i] ? hosts[i] : "(null)");
	for (uint32_t i = 0; !rc && i < n_cidrs; i++)
		if (!cidrs[i] || !among(cidrs[i], p->rules->cidr_text, p->rules->n_cidrs))
			rc = error_set(err, -EPERM,
				       "egress: allow-cidr '%s' is not one of the session's rules; "
				       "rules can be dropped, never added",
				       cidrs[i] ? cidrs[i] : "(null)");
	if (!rc && !(rc = rules_new(&kept, hosts, n_hosts, cidrs, n_cidrs, err)) &&
	    (rc = keep_all_secrets(&p->rules->secrets, &kept->secrets, err))) {
		egress_rules_unref(kept);
	} else if (!rc) {
		/* A connection decided under the old rules sees the new
		 * generation before its first byte goes up (conn.c). */
		kept->generation = p->rules->generation + 1;
		egress_rules_unref(p->rules); /* a decision under way keeps its own */
		p->rules = kept;
		/* What is open now was allowed by the wider rules. */
		cut_all(p);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}







int egress_proxy_keep_secrets(struct egress_proxy *p, const char *const *names, uint32_t n,
			      struct aj_error *err)
{
	struct egress_rules *kept = NULL;
	char why[200];
	pthread_mutex_lock(&p->lock);
	struct egress_rules *r = p->rules;
	int rc = rules_new(&kept, (const char *const *)r->host_text, r->n_hosts,
			   (const char *const *)r->cidr_text, r->n_cidrs, err);
	if (!rc && (rc = secret_set_keep(&r->secrets, names, n, &kept->secrets, why, sizeof why)))
		error_set(err, rc, "%s", why);
	if (rc) {
		egress_rules_unref(kept);
	} else {
		kept->generation = r->generation + 1;
		egress_rules_unref(r);
		p->rules = kept;
		/* A connection carrying a dropped secret ends now. */
		cut_all(p);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int egress_proxy_narrow_like(struct egress_proxy *to, struct egress_proxy *from,
			     struct aj_error *err)
{
	struct egress_rules *r = egress_rules_take(from);
	const char *names[AJ_MAX_SECRETS];
	uint32_t n = 0;
	for (; n < r->secrets.n && n < AJ_MAX_SECRETS; n++)
		names[n] = r->secrets.s[n].name;
	int rc = egress_proxy_keep(to, (const char *const *)r->host_text, r->n_hosts,
				   (const char *const *)r->cidr_text, r->n_cidrs, err);
	if (!rc)
		rc = egress_proxy_keep_secrets(to, names, n, err);
	egress_rules_drop(from, r);
	return rc;
}

char *egress_proxy_take_log(struct egress_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	size_t n = 0;
	for (struct egress_conn *c = p->conns; c; c = c->next)
		n += c->relaying;
	struct egress_entry *live = n ? calloc(n, sizeof *live) : NULL;
	size_t k = 0;
	for (struct egress_conn *c = p->conns; live && c; c = c->next)
		if (c->relaying)
			live[k++] = c->live;
	char *s = n && !live ? NULL
			     : egress_log_take(&p->log, live, k, p->out_total, p->in_total, p->limit);
	pthread_mutex_unlock(&p->lock);
	free(live);
	return s;
}

void egress_proxy_stop(struct egress_proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->stopped) {
		pthread_mutex_unlock(&p->lock);
		return;
	}
	p->stopping = true;
	wake(p->stop_fd);
	cut_all(p);
	pthread_mutex_unlock(&p->lock);
	if (p->accept_running)
		pthread_join(p->accept_thread, NULL);
	p->accept_running = false;
	pthread_mutex_lock(&p->lock);
	/* Every connection's thread polls the stop fd: each ends now. */
	while (p->live)
		pthread_cond_wait(&p->idle, &p->lock);
	for (unsigned i = 0; i < p->n_listeners; i++)
		close(p->listeners[i]);
	for (unsigned i = 0; i < p->n_receivers; i++)
		close(p->receivers[i]);
	p->n_listeners = p->n_receivers = 0;
	p->stopped = true;
	pthread_mutex_unlock(&p->lock);
}

void egress_proxy_free(struct egress_proxy *p)
{
	if (!p)
		return;
	egress_proxy_stop(p);
	egress_rules_unref(p->rules); /* the last: every connection's thread is done */
	SSL_CTX_free(p->up_ctx);
	mitm_ca_unref(p->ca);
	egress_log_free(&p->log);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->idle);
	free(p);
}
