/* The bounded queue between the supervisor, which reads the program's
 * output, and the caller's aj_stream fn, which may be slow: a delivery
 * thread of the library's own calls fn one event at a time, in the order
 * the events were pushed. The supervisor never waits for fn: it asks
 * stream_tap_over before it reads more and, while that says so, polls
 * stream_tap_room_fd instead of the program's output, so a slow consumer
 * slows the program (blocked in write) and never grows memory past the
 * buffer and one read. */
#ifndef AJ_STREAM_TAP_H
#define AJ_STREAM_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentjail.h"

struct stream_tap;

/* Starts the delivery thread for stream (its fn, arg and buffer_kb):
 * 0, or -EINVAL (no fn), -ENOMEM, -errno of eventfd or pthread_create. */
int stream_tap_start(const struct aj_stream *stream, struct stream_tap **out);

/* Queues a copy of p[0..n) as a stdout (stream 0) or stderr (1) chunk.
 * Always takes what it is given, even past the high-water mark: the
 * caller has read it already, and asks stream_tap_over before reading
 * more. A copy that cannot be allocated is lost (counted). */
void stream_tap_push(struct stream_tap *t, int stream, const char *p, size_t n);

/* After the tier: whatever of the result's streams the tap was not given
 * as it was read (a tier that does not stream yet: the microvm's output
 * comes in its result frame), so that every byte of the result reaches fn. */
void stream_tap_catch_up(struct stream_tap *t, const struct aj_result *res);

/* Queues an image (session calls, at the end of the call). */
void stream_tap_image(struct stream_tap *t, const char *name, const char *mime,
		      const void *data, size_t len);

/* Whether the queue holds its buffer's worth or more: the reader should
 * pause. While it does, stream_tap_room_fd becomes readable once the
 * delivery thread has brought the queue under half the buffer. */
bool stream_tap_over(struct stream_tap *t);
int stream_tap_room_fd(const struct stream_tap *t);

/* The most bytes the queue held at once (chunks being delivered count
 * until fn returns), and the chunks lost to a failed allocation. */
void stream_tap_stats(struct stream_tap *t, size_t *peak, uint64_t *lost);

/* Delivers every queued event, ends the thread and frees t. NULL: nothing. */
void stream_tap_finish(struct stream_tap *t);

#endif
