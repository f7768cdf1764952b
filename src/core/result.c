#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

void result_init(struct aj_result *res)
{
	memset(res, 0, sizeof *res);
	res->status = AJ_STATUS_SANDBOX_ERROR;
}

void aj_result_free(struct aj_result *res)
{
	if (!res)
		return;
	free(res->stdout_buf);
	free(res->stderr_buf);
	free(res->message);
	for (size_t i = 0; i < res->image_count; i++) {
		free(res->images[i].name);
		free(res->images[i].mime);
		free(res->images[i].data);
	}
	free(res->images);
	free(res->egress_log);
	free(res->background_pids);
	free(res->value_text);
	free(res->value_html);
	memset(res, 0, sizeof *res);
}

static void set_message_v(struct aj_result *res, const char *fmt, va_list ap)
{
	char buf[1024];
	vsnprintf(buf, sizeof buf, fmt, ap);
	free(res->message);
	res->message = strdup(buf);
}

void result_ensure_streams(struct aj_result *res)
{
	if (!res->stdout_buf)
		res->stdout_buf = calloc(1, 1);
	if (!res->stderr_buf)
		res->stderr_buf = calloc(1, 1);
}

void result_set_message(struct aj_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_message_v(res, fmt, ap);
	va_end(ap);
}

void result_sandbox_error(struct aj_result *res, const char *fmt, ...)
{
	va_list ap;
	res->status = AJ_STATUS_SANDBOX_ERROR;
	res->has_exit_code = false;
	res->signal = 0;
	va_start(ap, fmt);
	set_message_v(res, fmt, ap);
	va_end(ap);
}

double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

void result_add_note(struct aj_result *res, const char *note, bool before)
{
	char *old = res->message;
	res->message = NULL;
	if (!old)
		result_set_message(res, "%s", note);
	else
		result_set_message(res, "%s; %s", before ? note : old, before ? old : note);
	free(old);
}
