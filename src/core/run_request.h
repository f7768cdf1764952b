/* One run as the API hands it to a tier (tier.h) and a tier's parts take it. */
#ifndef AJ_RUN_REQUEST_H
#define AJ_RUN_REQUEST_H

#include <stddef.h>

/* What one run is asked to do. */
struct run_request {
	const char *code;
	size_t len;
	int cancel_fd;  /* readable when the caller cancels; -1 if it cannot */
};

#endif
