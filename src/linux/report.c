#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/internal.h"
#include "report.h"

const char *errno_name(int err)
{
	/* strerrorname_np reads a static table: no locale, no allocation. */
	const char *name = strerrorname_np(err);
	return name ? name : "unknown error";
}

int setup_fail(struct setup_error *e, int err, const char *fmt, ...)
{
	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (err)
		snprintf(e->message, sizeof e->message, "%s: %s", what, errno_name(err));
	else
		snprintf(e->message, sizeof e->message, "%s", what);
	return err ? -err : -EPERM;
}

void report_setup_failed(int fd, const struct setup_error *e)
{
	struct sandbox_report r;
	memset(&r, 0, sizeof r);
	r.kind = REPORT_SETUP_FAILED;
	/* Only the string: the bytes after its end were never written. */
	snprintf(r.message, sizeof r.message, "%s", e->message);
	(void)write_full(fd, &r, sizeof r);
}

void report_exited(int fd, int wstatus, const struct rusage *ru, bool memory_error)
{
	struct sandbox_report r;
	memset(&r, 0, sizeof r);
	r.kind = REPORT_EXITED;
	r.wstatus = wstatus;
	r.flags = memory_error ? REPORT_MEMORY_ERROR : 0;
	r.cpu_us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec +
		   (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
	r.maxrss_kb = ru->ru_maxrss;
	(void)write_full(fd, &r, sizeof r);
}

void report_started(int fd)
{
	struct sandbox_report r;
	memset(&r, 0, sizeof r);
	r.kind = REPORT_STARTED;
	(void)write_full(fd, &r, sizeof r);
}

bool report_read_verdict(int verdict_r)
{
	char byte;
	ssize_t n;
	if (verdict_r < 0)
		return false;
	while ((n = read(verdict_r, &byte, 1)) < 0 && errno == EINTR)
		;
	return n == 1;
}

bool report_parse_exited(const char *line, char end, struct sandbox_report *r)
{
	int wstatus, memory_error;
	int64_t cpu_us, rss_kb;
	char last = 0;
	int n = sscanf(line, "%d %" SCNd64 " %" SCNd64 " %d%c", &wstatus, &cpu_us, &rss_kb,
		       &memory_error, &last);
	if (n != (end ? 5 : 4) || last != end || cpu_us < 0 || rss_kb < 0 ||
	    (memory_error != 0 && memory_error != 1))
		return false;
	memset(r, 0, sizeof *r);
	r->kind = REPORT_EXITED;
	r->wstatus = wstatus;
	r->flags = memory_error ? REPORT_MEMORY_ERROR : 0;
	r->cpu_us = cpu_us;
	r->maxrss_kb = rss_kb;
	return true;
}
