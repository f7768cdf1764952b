/* The one wording of a failed step in the guest, "guest: STEP: ERRNO", which
 * the host passes on to the caller as the sandbox error. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

const char *errname(int err)
{
	const char *n = strerrorname_np(err);
	return n ? n : "unknown error";
}

/* Fills f with "guest: " fmt [": " ERRNO] (cut to fit) and returns -err. */
int fail(struct failure *f, int err, const char *fmt, ...)
{
	static const char prefix[] = "guest: ";
	size_t size = sizeof f->message;
	memcpy(f->message, prefix, sizeof prefix);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->message + sizeof prefix - 1, size - (sizeof prefix - 1), fmt, ap);
	va_end(ap);
	size_t len = strlen(f->message);
	if (err && len < size)
		snprintf(f->message + len, size - len, ": %s", errname(err));
	return err ? -err : -EIO;
}
