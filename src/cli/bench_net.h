/* The loopback sockets the egress benches (bench_egress.c,
 * bench_intercept.c) serve and connect with. */
#ifndef AJ_CLI_BENCH_NET_H
#define AJ_CLI_BENCH_NET_H

#include <stdint.h>

/* A listening TCP socket on 127.0.0.1, its port in *port; -1 if none. */
int bench_listen_loopback(uint16_t *port);
/* A 30 s bound on every read and write of fd: a stuck peer ends a round,
 * not the bench. */
void bench_bounded(int fd);
/* The next connection on lfd, bounded (bench_bounded), past an interrupted
 * or aborted accept; -1 once lfd is shut down. */
int bench_accept(int lfd);

#endif
