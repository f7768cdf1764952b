#include <stdio.h>

#include "internal.h"

int error_set(struct aj_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}
