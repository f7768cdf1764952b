/* The host's end of a VM's egress port (egress_mux.h): a thread relaying
 * the guest's streams, each to a connection the tier opens (to its egress
 * proxy), for as long as the VM runs. */
#ifndef AJ_VM_EGRESS_RELAY_H
#define AJ_VM_EGRESS_RELAY_H

#include "egress_mux.h"

struct egress_relay;

/* Starts relaying over port (QEMU's egress socket, connected; owned from
 * here on, even on failure); open makes each stream's connection. 0 or
 * -errno. */
int egress_relay_start(int port, egress_open_fn *open, void *ctx, struct egress_relay **out);
/* Stops the thread, closes the port and every stream, frees r. NULL is
 * fine. why (or NULL) gets what ended the port early, "" if nothing did. */
void egress_relay_stop(struct egress_relay *r, char *why, size_t n);

#endif
