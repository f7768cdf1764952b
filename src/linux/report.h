/* What a sandbox's init tells its supervisor, over one pipe, in fixed-size
 * records (each smaller than PIPE_BUF, so a write is atomic and whole).
 *
 * Code in this file and in every "apply in the child" function runs between
 * clone() and execve() in a copy of a possibly multi-threaded process: it may
 * not malloc, take locks or call anything that is not async-signal-safe in
 * practice (vsnprintf into a stack buffer is, for the formats used here). */
#ifndef AJ_REPORT_H
#define AJ_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

enum report_kind {
	REPORT_SETUP_FAILED = 1, /* a protection could not be applied: refuse */
	REPORT_EXITED = 2,       /* the program ended; wstatus and usage follow */
	REPORT_READY = 3,        /* a session's sandbox is built and waits for calls */
	REPORT_STARTED = 4,      /* the sandbox is built and its program forked: the
				  * program's wall clock starts (supervisor.h) */
};

/* sandbox_report.flags */
#define REPORT_MEMORY_ERROR 1 /* the program's interpreter wrote its verdict pipe (status.h) */

struct sandbox_report {
	int32_t kind;
	int32_t wstatus;
	int32_t flags;       /* REPORT_EXITED: REPORT_MEMORY_ERROR */
	int32_t reserved;
	int64_t cpu_us;      /* the program and every descendant it reaped */
	int64_t maxrss_kb;   /* largest resident set among them */
	char message[456];
};

/* A failed setup step: "network namespace: unshare: EPERM". */
struct setup_error {
	char message[456];
};

/* Records the failure and returns -err (err is a positive errno). */
int setup_fail(struct setup_error *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The errno's symbolic name ("EPERM"), never translated, lock-free. */
const char *errno_name(int err);

void report_setup_failed(int fd, const struct setup_error *e);
void report_exited(int fd, int wstatus, const struct rusage *ru, bool memory_error);
void report_started(int fd);

/* Whether the program's interpreter wrote a byte on its verdict pipe
 * (AJ_VERDICT_FD, src/core/status.h) before it ended: read, without
 * blocking, from the read end init kept (-1: none). */
bool report_read_verdict(int verdict_r);

/* boot.py's word on the program's end, "WSTATUS CPU_US MAXRSS_KB MEMERR"
 * (MEMERR 0, or 1: the verdict pipe's byte came) and then exactly `end`
 * ('\0': nothing), into r (kind REPORT_EXITED); false if line is anything
 * else. Not for the child's side: it uses sscanf. */
bool report_parse_exited(const char *line, char end, struct sandbox_report *r);

#endif
