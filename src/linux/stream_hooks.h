/* The supervisor's streaming hooks (supervisor.h) for a stream_tap: what
 * every tier sets from its run request or session call. Apart from
 * supervisor.c, which the microvm guest builds with libc alone. */
#ifndef AJ_STREAM_HOOKS_H
#define AJ_STREAM_HOOKS_H

#include "../core/stream_tap.h"
#include "supervisor.h"

/* Hooks that push to tap and pause while it is over; tap NULL: none. */
struct supervisor_stream supervisor_stream_of(struct stream_tap *tap);

#endif
