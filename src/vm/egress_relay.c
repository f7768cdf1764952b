/* The host's relay of a VM's egress port (egress_relay.h). The guest is not
 * trusted: its frames are read by egress_mux.c's strict parser, and a frame
 * out of the rules ends this port only (fail closed: no stream goes on,
 * nothing reaches the proxy any more), never the host. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress_relay.h"

struct egress_relay {
	struct egress_mux mux;
	int stop;               /* eventfd: readable once stop is asked */
	pthread_t thread;
	int rc;                 /* how the loop ended */
};

static void *relay_port(void *arg)
{
	struct egress_relay *r = arg;
	r->rc = egress_mux_run(&r->mux, -1, r->stop);
	/* Ended early (the VM went, or a bad frame): every stream goes now,
	 * so the proxy's ends see EOF instead of waiting for the VM's end. */
	egress_mux_free(&r->mux);
	/* And the port: the guest's forwarder sees no host any more. */
	shutdown(r->mux.port, SHUT_RDWR);
	return NULL;
}

int egress_relay_start(int port, egress_open_fn *open, void *ctx, struct egress_relay **out)
{
	*out = NULL;
	struct egress_relay *r = calloc(1, sizeof *r);
	int flags = fcntl(port, F_GETFL);
	if (!r || flags < 0 || fcntl(port, F_SETFL, flags | O_NONBLOCK) < 0) {
		int e = r ? errno : ENOMEM;
		free(r);
		close(port);
		return -e;
	}
	egress_mux_init(&r->mux, port, open, ctx, true);
	r->stop = eventfd(0, EFD_CLOEXEC);
	int rc = r->stop < 0 ? errno : pthread_create(&r->thread, NULL, relay_port, r);
	if (rc) {
		if (r->stop >= 0)
			close(r->stop);
		close(port);
		free(r);
		return -rc;
	}
	*out = r;
	return 0;
}

void egress_relay_stop(struct egress_relay *r, char *why, size_t n)
{
	if (!r)
		return;
	uint64_t one = 1;
	(void)!write(r->stop, &one, sizeof one);
	pthread_join(r->thread, NULL);
	if (why)
		snprintf(why, n, "%s", r->rc ? r->mux.why : "");
	egress_mux_free(&r->mux);
	close(r->mux.port);
	close(r->stop);
	free(r);
}
