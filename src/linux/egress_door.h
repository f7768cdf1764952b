/* The sandbox's end of the egress proxy on the jail's tiers (process,
 * container, warm; docs/egress.md): init, privileged in the run's network
 * namespace, brings its loopback up and makes the socket that listens on
 * 127.0.0.1:CONTRACT_EGRESS_PORT there, before any program runs, and sends
 * it to the host's proxy. A socket keeps the namespace it was made in: the
 * proxy, on the host, accepts the sandbox's connections on it, and the
 * namespace itself still has no route out. */
#ifndef AJ_EGRESS_DOOR_H
#define AJ_EGRESS_DOOR_H

#include "report.h"

/* In init (no allocation): makes the listener, sends it over the unix
 * socket send_fd (SCM_RIGHTS), and closes both. 0, or -1 with e. */
int egress_door_open(int send_fd, struct setup_error *e);

#endif
