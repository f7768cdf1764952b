/* The host's end of the virtio-serial channel: QEMU's chardev socket,
 * carrying the frames of protocol.h. Every read has a deadline. */
#ifndef AJ_VM_CHANNEL_H
#define AJ_VM_CHANNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Connects to QEMU's listening socket, retrying until it exists or the
 * deadline (monotonic ms) passes; -ECHILD at once if the process behind
 * alive_pidfd (or -1) has ended. fd or -errno. */
int channel_connect(const char *path, double deadline_ms, int alive_pidfd);
int channel_send(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
/* Reads one frame; *payload is malloc'ed. 0, -ETIMEDOUT, -EPIPE (QEMU or
 * the guest went away), -EPROTO (a frame over VM_MAX_FRAME), -errno. A
 * cancel_fd (or -1) that becomes readable ends the wait with -ECANCELED. */
int channel_recv(int fd, double deadline_ms, int cancel_fd, uint32_t *type, void **payload,
		 uint32_t *len);

/* One read of at most n bytes: how many came (at least one), 0 at the end
 * of the stream, or -errno. */
typedef ssize_t channel_read_fn(void *ctx, void *buf, size_t n);
/* channel_recv's decoding, over any reads (QEMU's socket; the fuzz target's
 * input): one frame, its payload malloc'ed and NUL-terminated. 0, -EPIPE
 * (the stream ended, within a frame or before one), -EPROTO (a frame over
 * VM_MAX_FRAME), -ENOMEM, or a read's -errno. */
int channel_decode(channel_read_fn *read_some, void *ctx, uint32_t *type, void **payload,
		   uint32_t *len);

#endif
