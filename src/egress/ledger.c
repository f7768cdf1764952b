/* The egress proxy's ledger (see proxy_internal.h): what its connections
 * (conn.c) count and register under the proxy's lock, the rules they take
 * for a decision, the bytes against the caps, the bulk buffers, the live
 * log entries. Below both proxy.c and conn.c, so that neither calls the
 * other back: proxy.c starts connections' threads (conn.c), and both
 * keep their books here. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy_internal.h"

void egress_rules_free(struct egress_rules *r)
{
	for (uint32_t i = 0; r->host_text && i < r->n_hosts; i++)
		free(r->host_text[i]);
	for (uint32_t i = 0; r->cidr_text && i < r->n_cidrs; i++)
		free(r->cidr_text[i]);
	free(r->hosts);
	free(r->host_text);
	free(r->cidrs);
	free(r->cidr_text);
	secret_set_free(&r->secrets);
	memset(r, 0, sizeof *r);
}

void egress_rules_unref(struct egress_rules *r)
{
	if (r && --r->refs == 0) {
		egress_rules_free(r);
		free(r);
	}
}

struct egress_rules *egress_rules_take(struct egress_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	struct egress_rules *r = p->rules;
	r->refs++;
	pthread_mutex_unlock(&p->lock);
	return r;
}

void egress_rules_drop(struct egress_proxy *p, struct egress_rules *r)
{
	pthread_mutex_lock(&p->lock);
	egress_rules_unref(r);
	pthread_mutex_unlock(&p->lock);
}

void egress_conn_set_upstream(struct egress_conn *c, int fd)
{
	pthread_mutex_lock(&c->p->lock);
	c->upstream = fd;
	pthread_mutex_unlock(&c->p->lock);
}

uint64_t egress_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

bool egress_account(struct egress_proxy *p, struct egress_entry *live, bool out, size_t n)
{
	uint64_t wait_until = 0;
	pthread_mutex_lock(&p->lock);
	uint64_t *total = out ? &p->out_total : &p->in_total;
	uint64_t cap = (uint64_t)(out ? p->limits.out_mb : p->limits.in_mb) << 20;
	bool ok = *total + n <= cap;
	if (ok) {
		*total += n;
		if (live)
			*(out ? &live->bytes_out : &live->bytes_in) += n;
	}
	else if (!p->limit[0])
		snprintf(p->limit, sizeof p->limit,
			 "%s: the sandbox %s %u MiB through the proxy, its cap; the transfer was cut",
			 out ? "out_mb" : "in_mb", out ? "sent" : "received",
			 out ? p->limits.out_mb : p->limits.in_mb);
	if (ok && p->limits.kbps) {
		/* The bandwidth cap: each direction's bytes leave no faster
		 * than kbps, all connections together. */
		uint64_t *next = out ? &p->next_out_ns : &p->next_in_ns;
		uint64_t now = egress_now_ns(), start = *next > now ? *next : now;
		*next = start + (uint64_t)n * 8u * 1000000u / p->limits.kbps;
		wait_until = start;
	}
	pthread_mutex_unlock(&p->lock);
	while (ok && wait_until) {
		uint64_t now = egress_now_ns();
		if (now >= wait_until)
			break;
		struct pollfd pf = {.fd = p->stop_fd, .events = POLLIN};
		int ms = (int)((wait_until - now) / 1000000u) + 1;
		if (poll(&pf, 1, ms) > 0)
			return false;
	}
	return ok;
}

static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e || *s == '"' || *s == '\\')
			*s = '?';
}

bool egress_big_buffer(struct egress_proxy *p, bool more)
{
	pthread_mutex_lock(&p->lock);
	bool ok = !more || p->big_buffers < EGRESS_BIG_BUFFERS;
	if (more && ok)
		p->big_buffers++;
	else if (!more)
		p->big_buffers--;
	pthread_mutex_unlock(&p->lock);
	return ok;
}

void egress_conn_relaying(struct egress_conn *c, struct egress_entry *e, bool start)
{
	pthread_mutex_lock(&c->p->lock);
	if (start) {
		c->live = *e;
		/* The name is the sandbox's bytes: printable ASCII only in
		 * the log. */
		sanitize(c->live.host);
		c->relaying = true;
	} else {
		/* Still listed live until egress_record takes it over, so no
		 * take of the log misses it in between. */
		e->bytes_out = c->live.bytes_out;
		e->bytes_in = c->live.bytes_in;
	}
	pthread_mutex_unlock(&c->p->lock);
}

void egress_record(struct egress_conn *c, const struct egress_entry *e)
{
	struct egress_entry copy = *e;
	sanitize(copy.host);
	pthread_mutex_lock(&c->p->lock);
	egress_log_add(&c->p->log, &copy);
	c->relaying = false; /* final now: in the log, not listed live */
	pthread_mutex_unlock(&c->p->lock);
}

void egress_injected(struct egress_proxy *p, const char *name)
{
	pthread_mutex_lock(&p->lock);
	egress_log_injected(&p->log, name);
	pthread_mutex_unlock(&p->lock);
}
