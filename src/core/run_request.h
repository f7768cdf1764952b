/* One run as the API hands it to a tier (tier.h) and a tier's parts take it. */
#ifndef AJ_RUN_REQUEST_H
#define AJ_RUN_REQUEST_H

#include <stddef.h>

struct egress_proxy;
struct stream_tap;

/* What one run is asked to do. */
struct run_request {
	const char *code;
	size_t len;
	int cancel_fd;  /* readable when the caller cancels; -1 if it cannot */
	/* The run's egress proxy (src/egress/proxy.h), started by the API for
	 * this run; NULL: no egress, no network at all. The tier connects the
	 * sandbox's 127.0.0.1:EGRESS_PORT to it, its own way. */
	struct egress_proxy *egress;
	/* Where the output goes as it is read (stream_tap.h), started and
	 * finished by the API; NULL: no streaming. The tier hands it to its
	 * supervisor (supervisor_stream_of). */
	struct stream_tap *tap;
};

#endif
