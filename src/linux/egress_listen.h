/* The sandbox's side of the egress door, where the proxy is reached inside
 * every sandbox that runs on a Linux kernel of its own namespace or VM
 * (docs/egress.md): the loopback brought up, and a socket listening on
 * 127.0.0.1:CONTRACT_EGRESS_PORT, made by the sandbox's privileged side
 * before any program runs (so no program can take the port first). Written
 * once for the jail's init (egress_door.c) and the microvm guest's PID 1
 * (src/vm/guest/egress.c). libc only, no allocation: it runs in the jail's
 * init, and the guest's static agent builds it. */
#ifndef AJ_EGRESS_LISTEN_H
#define AJ_EGRESS_LISTEN_H

/* The listening socket (close-on-exec; flags adds e.g. SOCK_NONBLOCK), or
 * -errno with *step naming what failed. */
int egress_listen_loopback(int flags, const char **step);

#endif
