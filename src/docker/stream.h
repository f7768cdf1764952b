/* The attach stream of a container without a tty: stdout and stderr
 * multiplexed in frames (an 8-byte header: stream, 0, 0, 0, size as 32-bit
 * big-endian; then the bytes), and the report boot.py ends stderr with. */
#ifndef AJ_DOCKER_STREAM_H
#define AJ_DOCKER_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"
#include "../linux/report.h"
#include "../linux/supervise.h"

/* Room kept on stderr for boot.py's report beyond the program's cap. */
#define DOCKER_REPORT_MAX 128

struct docker_demux {
	unsigned char head[8];
	size_t head_len;
	int stream;       /* of the frame being read: 1 stdout, 2 stderr */
	uint32_t left;    /* its bytes still to come */
};

/* Payload bytes of one stream, as the demux found them. */
struct docker_piece {
	int stream;       /* 1 stdout, 2 stderr; another: not the program's */
	const char *data;
	size_t len;       /* 0: the bytes taken were a header's */
};

/* Takes the next piece of n (> 0) bytes of the stream, in any split:
 * returns how many bytes it used; *piece says which stream's payload they
 * were, if any. */
size_t docker_demux_next(struct docker_demux *d, const char *p, size_t n,
			 struct docker_piece *piece);

/* Feeds n bytes of the stream, in any split. Returns true once a capture
 * had to drop bytes (its cap was passed). A frame for another stream
 * (stdin echo) is skipped. */
bool docker_demux_feed(struct docker_demux *d, const char *p, size_t n, struct capture *out,
		       struct capture *err);

/* If err ends with boot.py's report for this nonce, removes it and fills r
 * (kind REPORT_EXITED). A report that is not the last bytes is the
 * program's own printing and is left alone. */
bool docker_take_report(struct capture *err, const char *nonce, struct sandbox_report *r);

/* Whether boot.py's report agrees with the exit code its container (docker
 * or gvisor) ended with: the program's code, or 128 + the signal that ended
 * it. */
bool docker_report_matches(const struct sandbox_report *r, int exit_code);

/* boot.py's stdin for a run (docker and gvisor tiers): "NONCE DEADLINE\n"
 * and the program. nonce (at least 25 bytes) receives a fresh one; boot's
 * own backstop deadline is 10 s past the wall clock the host enforces, so
 * the sandbox stops should the host die mid-run. NULL on ENOMEM. */
char *docker_run_input(const char *code, size_t len, double wall_sec, char *nonce,
		       size_t nonce_size, size_t *out_len);

/* After a run: boot's report taken off the end of err when it is there
 * for this nonce and agrees with the sandbox's exit code (o->report,
 * o->exited_report); then the program's own stderr capped at cap bytes, a
 * longer one an output overflow (err had room for the report past it). */
void docker_finish_run(struct capture *err, const char *nonce, int exit_code, size_t cap,
		       struct outcome *o);

/* The last non-empty line of c (boot's or the runtime's last words). */
void docker_last_line(const struct capture *c, char *out, size_t n);

#endif
