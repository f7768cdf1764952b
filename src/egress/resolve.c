/* Names resolved for the proxy (see proxy_internal.h), with c-ares: the
 * lookup runs in the connection's thread under its poll, so stopping the
 * proxy ends it at once (a blocking getaddrinfo would hold stop for the
 * resolver's timeouts). /etc/hosts is read first, as the host's own
 * programs would. */
#include <ares.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "proxy_internal.h"

static pthread_once_t ares_once = PTHREAD_ONCE_INIT;
static int ares_ready;

static void ares_start(void)
{
	ares_ready = ares_library_init(ARES_LIB_INIT_ALL);
}

struct lookup {
	bool done;
	int status;
	struct egress_addrs *out;
};

static void on_answer(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	(void)timeouts;
	struct lookup *l = arg;
	l->done = true;
	l->status = status;
	for (struct ares_addrinfo_node *a = res ? res->nodes : NULL;
	     a && l->out->n < EGRESS_MAX_ADDRS; a = a->ai_next)
		if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
		    (size_t)a->ai_addrlen <= sizeof l->out->a[0])
			memcpy(&l->out->a[l->out->n++], a->ai_addr, a->ai_addrlen);
	if (res)
		ares_freeaddrinfo(res);
}

int egress_resolve(const char *host, int stop_fd, struct egress_addrs *out, char *why, size_t n)
{
	out->n = 0;
	pthread_once(&ares_once, ares_start);
	if (ares_ready != ARES_SUCCESS) {
		snprintf(why, n, "resolver: %s", ares_strerror(ares_ready));
		return -EIO;
	}
	ares_channel ch;
	/* No search list: the name the rules checked is the name looked up,
	 * never "NAME.corp.example" from the host's resolv.conf or
	 * LOCALDOMAIN (issue 35: a rule means exactly what it says). The flag
	 * says so, and an empty list of domains too: c-ares 1.18's getaddrinfo
	 * walks the search list whatever the flag says, and a list given here
	 * is one resolv.conf and LOCALDOMAIN do not replace. (A trailing '.'
	 * would skip the search too, but also /etc/hosts.) */
	struct ares_options o = {.timeout = 2000, .tries = 2, .flags = ARES_FLAG_NOSEARCH,
				 .domains = NULL, .ndomains = 0};
	int rc = ares_init_options(&ch, &o,
				   ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_FLAGS |
					   ARES_OPT_DOMAINS);
	if (rc != ARES_SUCCESS) {
		snprintf(why, n, "resolver: %s", ares_strerror(rc));
		return -EIO;
	}
	struct lookup l = {.out = out};
	/* No sorting: c-ares would probe routes with UDP sockets to sort. */
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_flags = ARES_AI_NOSORT};
	ares_getaddrinfo(ch, host, NULL, &hints, on_answer, &l);
	bool stopped = false;
	while (!l.done) {
		ares_socket_t socks[ARES_GETSOCK_MAXNUM];
		/* Unsigned: ARES_GETSOCK_WRITABLE's 1 << 31 for the last socket
		 * overflows an int (UBSan stopped the first lookup that asked a
		 * DNS server). */
		unsigned bits = (unsigned)ares_getsock(ch, socks, ARES_GETSOCK_MAXNUM);
		struct pollfd pf[ARES_GETSOCK_MAXNUM + 1];
		int np = 0;
		for (unsigned i = 0; i < ARES_GETSOCK_MAXNUM; i++) {
			short ev = (short)((bits & (1u << i) ? POLLIN : 0) |
					   (bits & (1u << (i + ARES_GETSOCK_MAXNUM)) ? POLLOUT : 0));
			if (ev)
				pf[np++] = (struct pollfd){.fd = socks[i], .events = ev};
		}
		pf[np] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
		struct timeval tv, *t = ares_timeout(ch, NULL, &tv);
		int ms = t ? (int)(t->tv_sec * 1000 + t->tv_usec / 1000) + 1 : 1000;
		if (poll(pf, (nfds_t)np + 1, ms) < 0 && errno != EINTR)
			break;
		if (pf[np].revents) {
			stopped = true;
			break;
		}
		bool any = false;
		for (int i = 0; i < np; i++)
			if (pf[i].revents) {
				any = true;
				ares_process_fd(ch, pf[i].revents & (POLLIN | POLLERR | POLLHUP) ? pf[i].fd : ARES_SOCKET_BAD,
						pf[i].revents & POLLOUT ? pf[i].fd : ARES_SOCKET_BAD);
			}
		if (!any)
			ares_process_fd(ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts */
	}
	ares_destroy(ch); /* a lookup still pending is answered ARES_EDESTRUCTION */
	if (stopped) {
		snprintf(why, n, "the proxy stopped during the lookup of %s", host);
		return -ECANCELED;
	}
	if (l.status != ARES_SUCCESS || out->n == 0) {
		snprintf(why, n, "%s does not resolve: %s", host,
			 l.status != ARES_SUCCESS ? ares_strerror(l.status) : "no address");
		out->n = 0;
		return -EHOSTUNREACH;
	}
	return 0;
}
