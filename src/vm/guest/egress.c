/* The program's way out when the host carries egress (docs/tiers/microvm.md,
 * "Egress"): the guest has no network device, only its loopback, and on it
 * 127.0.0.1:EGRESS_PORT, whose connections this forwards as streams over
 * the egress port (../egress_mux.h) to the host's proxy, which decides.
 *
 * A thread of PID 1's, not a process: kill(-1), with which the agent ends a
 * program (a run's, or a session call's), reaches every process but the
 * caller's, so the forwarder outlives every call of a session; and the
 * program (uid 1000) can neither signal nor trace it. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../core/contract.h"
#include "../../linux/egress_listen.h"
#include "../egress_mux.h"
#include "agent.h"
#include "../../core/thread.h"

int egress_port_fd = -1;
static int listener = -1;
static struct egress_mux mux;

/* Root's socket on the loopback it brings up (written once with the
 * jail's door: src/linux/egress_listen.c), bound before the program
 * starts, so the program can neither take the port first nor listen in
 * its place. */
static int listen_proxy_port(struct failure *f)
{
	const char *step = "";
	listener = egress_listen_loopback(SOCK_NONBLOCK, &step);
	return listener < 0 ? fail(f, -listener, "egress: %s", step) : 0;
}

static void *forward(void *arg)
{
	(void)arg;
	egress_mux_run(&mux, listener, -1);
	/* The host ended the port, or sent what the rules forbid: no more
	 * connections (they would be refused by nothing listening). */
	fprintf(stderr, "agentjail-guest: egress port ended: %s\n", mux.why);
	close(listener);
	listener = -1;
	egress_mux_free(&mux);
	return NULL;
}

int egress_start(struct failure *f)
{
	if (egress_port_fd < 0)
		return fail(f, ENODEV, "egress: the VM has no egress port");
	int rc = listen_proxy_port(f);
	if (rc)
		return rc;
	egress_mux_init(&mux, egress_port_fd, NULL, NULL, false);
	/* SIGCHLD stays blocked in the thread (inherited): its signalfd is
	 * the main thread's. */
	rc = thread_start_detached(forward, NULL, 0);
	if (rc)
		return fail(f, rc, "egress: start the forwarder");
	return 0;
}

void egress_environment(bool on, char *lines, char **env)
{
	const char *vars[AJ_MAX_ENV];
	struct aj_config cfg = {.env = vars};
	for (char *p = lines, *nl; p && (nl = strchr(p, '\n')) && cfg.env_count < AJ_MAX_ENV;
	     p = nl + 1) {
		*nl = '\0';
		vars[cfg.env_count++] = p;
	}
	contract_environment_fill(env, on, &cfg);
}
