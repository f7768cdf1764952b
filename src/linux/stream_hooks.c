/* The supervisor's streaming hooks for a stream_tap (stream_hooks.h). */
#include "stream_hooks.h"

static void tap_push(void *arg, int stream, const char *p, size_t n)
{
	stream_tap_push(arg, stream, p, n);
}

static bool tap_over(void *arg)
{
	return stream_tap_over(arg);
}

struct supervisor_stream supervisor_stream_of(struct stream_tap *tap)
{
	if (!tap)
		return (struct supervisor_stream){.out_room_fd = -1};
	return (struct supervisor_stream){.out_tap = tap_push, .out_paused = tap_over,
					  .out_room_fd = stream_tap_room_fd(tap), .tap_arg = tap};
}
