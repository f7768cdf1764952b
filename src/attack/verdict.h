/* `agentjail attack`: whether a tier held a hostile program, judged from
 * what the host saw after the run (a secret token that came out, a marker
 * file written on the host, a sentinel process killed, a listener that
 * accepted, processes that outlived the run, the host's mounts changed) and
 * from the supervisor's verdict on the run — never from what the program
 * printed about itself. Pure logic: unit-tested on fabricated evidence. */
#ifndef AJ_ATTACK_VERDICT_H
#define AJ_ATTACK_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentjail.h"

enum attack_verdict { VERDICT_HELD, VERDICT_ESCAPED, VERDICT_NA, VERDICT_ERROR };

/* What the host observed. A check that was not made for this attack is -1. */
struct attack_evidence {
	bool ran;                 /* false: the tier is not available here */
	enum aj_status status;    /* the supervisor's verdict on the run */
	int token_seen;           /* the secret token in stdout or stderr */
	int marker_written;       /* a marker file found on the host */
	int sentinel_alive;       /* a host process the program tried to kill */
	int listener_accepted;    /* a host TCP or unix listener got a connection */
	int procs_left;           /* sandbox-uid processes after the run */
	int max_procs;            /* most sandbox-uid processes seen during it */
	int mounts_changed;       /* the host's mount table differs */
	/* Egress: the request the rules allow reached its server (through
	 * the proxy); without it the bypasses after it prove nothing. */
	int egress_allowed_arrived;
	int64_t disk_drop_mb;     /* most host free space lost during the run */
	size_t output_bytes;      /* the larger of stdout and stderr, as captured */
	uint64_t memory_kb;       /* the run's peak memory as the host measured it (0: none) */
	/* It exited 127, as a shell does for a command not found: the image
	 * lacks the interpreter or a tool the program is written with (the
	 * shell launcher's and a JavaScript run's words for it). */
	int missing;
};

/* What holding means for one attack, beyond the evidence checks. */
struct attack_expect {
	/* If non-zero: the statuses (1 << AJ_STATUS_x) that show the limit
	 * stopped the program; any other (say ok: it ran to its end) is an
	 * escape from that limit. */
	uint32_t stopped_by;
	/* The program must run to its own end (status ok): a program that
	 * crashed or was stopped proved nothing, so that is an error, not a
	 * pass. */
	bool must_finish;
	uint32_t max_procs;       /* tasks allowed at once (pids, init, a VMM) */
	uint32_t max_disk_mb;     /* host free space the run may take */
	size_t max_output;        /* bytes of either stream */
	uint64_t max_memory_kb;   /* the run's peak memory (0: not checked) */
};

void attack_evidence_init(struct attack_evidence *e);

/* The verdict and a short reason ("token not seen", "timeout"). */
enum attack_verdict attack_judge(const struct attack_expect *x, const struct attack_evidence *e,
				 char *why, size_t n);

const char *attack_verdict_name(enum attack_verdict v);

#endif
