/* The microVM channel: what the host driver and the guest agent (/init in
 * the VM) say to each other over the virtio-serial port, in frames:
 *
 *   struct vm_frame_header { u32 type; u32 length; }  then `length` bytes
 *
 * all little-endian (both ends are x86-64). The guest sends VM_READY once
 * it can take a run (before the snapshot is taken, so a restored VM is
 * ready at once); the host sends one VM_RUN; the guest answers one
 * VM_RESULT. A VM serves one run and is then destroyed, so no state can pass
 * from one run to the next. While the program runs, the guest sends its
 * output as it reads it, in VM_OUTPUT frames (each at most VM_OUTPUT_MAX
 * bytes, the streams within their caps); the result then carries only the
 * streams' lengths, which must equal what the frames brought.
 *
 * With trust_ca, a VM_TRUST comes first (before VM_RUN or VM_SESSION_START):
 * the bundle the guest shows at the CA bundle's path, read-only.
 *
 * A session's VM instead gets one VM_SESSION_START (the limits and the
 * session interpreter's source), answers VM_SESSION_READY, then serves any
 * number of VM_CALL, one at a time, each answered by VM_OUTPUT frames (the
 * call's seq in each) and one VM_CALL_RESULT. A
 * VM_CALL_STOP during a call stops it (the caller cancelled). The session's
 * VM too is destroyed at its end and never serves anything else. */
#ifndef AJ_VM_PROTOCOL_H
#define AJ_VM_PROTOCOL_H

#include <stdint.h>

#include "../../include/agentjail.h"

#define VM_PROTOCOL_VERSION 8
/* The guest's port name (QEMU virtserialport name=...), and the device
 * the guest opens: the first port of the first virtio-serial device. */
#define VM_PORT_NAME "agent0"
#define VM_GUEST_PORT "/dev/vport0p1"
/* The egress port (egress_mux.h), the device's second port (nr=2): every VM
 * has it, so one snapshot serves runs with egress and without; the guest
 * uses it only when VM_RUN or VM_SESSION_START says egress. */
#define VM_EGRESS_PORT_NAME "egress0"
#define VM_GUEST_EGRESS_PORT "/dev/vport0p2"
/* The program runs as this uid/gid in the guest: never root. */
#define VM_GUEST_UID 1000
#define VM_GUEST_WORKSPACE AJ_SESSION_WORKSPACE
/* Largest frame either side accepts: the largest program or the largest
 * output cap, twice, and room. */
#define VM_MAX_FRAME (64u << 20)
/* Most bytes of output one VM_OUTPUT carries: one read of the supervision
 * loop's, so a frame is sent as soon as its bytes are read. */
#define VM_OUTPUT_MAX 65536u

enum vm_frame_type {
	VM_READY = 1,   /* guest -> host: payload struct vm_ready */
	VM_RUN = 2,     /* host -> guest: struct vm_run, then code_len bytes of code */
	VM_RESULT = 3,  /* guest -> host: struct vm_result, then the message */
	VM_SESSION_START = 4, /* host -> guest: struct vm_session_start, then repl_len bytes */
	VM_SESSION_READY = 5, /* guest -> host: struct vm_session_ready, then its message */
	VM_CALL = 6,          /* host -> guest: struct vm_call, then request_len bytes */
	VM_CALL_STOP = 7,     /* host -> guest, during a call, no payload: stop it */
	VM_CALL_RESULT = 8,   /* guest -> host: struct vm_call_result, then the reply
			       * line (no newline), the message */
	VM_OUTPUT = 9,        /* guest -> host, during a run or call: struct
			       * vm_output_head, then 1..VM_OUTPUT_MAX bytes of it */
	VM_TRUST = 10,        /* host -> guest, with trust_ca only, just before VM_RUN
			       * or VM_SESSION_START: the sandbox's CA bundle (PEM,
			       * 1..VM_TRUST_MAX bytes), which the guest shows at
			       * CONTRACT_CA_BUNDLE (guest/trust.c) */
};

/* The largest CA bundle VM_TRUST carries: an image's is about 220 KB. */
#define VM_TRUST_MAX (4u << 20)

struct vm_frame_header {
	uint32_t type;
	uint32_t length;
};

/* A piece of the program's output, as the guest read it: the host hands it
 * on at once (streaming) and keeps it for the result. A piece past its
 * stream's cap, an empty or too long one, or one that is not of the call
 * under way (a late one: its seq) fails the run or call as malformed. */
struct vm_output_head {
	uint32_t stream;        /* 0 stdout, 1 stderr */
	uint32_t reserved;      /* 0 */
	uint64_t seq;           /* the call's (struct vm_call); 0 in a run */
};

struct vm_ready {
	uint32_t version;       /* VM_PROTOCOL_VERSION */
	uint32_t python_ok;     /* the zygote interpreter is up */
};

struct vm_run {
	uint32_t wall_ms;       /* the guest's own clock, from the ack; the host keeps one too */
	uint32_t cpu_sec;
	uint32_t memory_mb;     /* for the guest's memory cgroup */
	uint32_t pids;
	uint32_t file_size_mb;
	uint32_t disk_mb;       /* size of the guest's /tmp tmpfs */
	uint32_t output_kb;     /* cap on each stream */
	uint32_t code_len;
	uint32_t egress;        /* 1: 127.0.0.1:EGRESS_PORT reaches the host's proxy */
	/* After the code: the deployer's variables (cfg.env, which
	 * aj_config_validate checked), "NAME=VALUE\n" each (rule E1). */
	uint32_t env_len;
	uint32_t open_files;    /* RLIMIT_NOFILE, as every tier's (rule E2) */
	uint32_t reserved;      /* 0 */
};

/* The facts of a run, not their reading: the host decides the status with
 * the status rules every tier uses (src/core/status.h), as it does for a
 * session's call. A guest taken over by its program can lie about these
 * facts, but no fact is a status or a message of its choosing. */
struct vm_result {
	uint32_t flags;         /* VM_RUN_* and VM_STDOUT/STDERR_TRUNCATED */
	int32_t wstatus;        /* the program's, when VM_RUN_ENDED */
	uint32_t stdout_len;    /* what the VM_OUTPUT frames brought, for checking */
	uint32_t stderr_len;
	uint32_t message_len;   /* VM_RUN_SETUP_FAILED or no VM_RUN_ENDED: why (quoted by the host) */
	uint32_t reserved;
	uint64_t wall_us;       /* inside the guest, request to result */
	uint64_t cpu_us;
	uint64_t memory_kb;     /* peak */
	uint64_t oom_kills;     /* the run's memory cgroup's OOM kills */
};

#define VM_STDOUT_TRUNCATED 1u
#define VM_STDERR_TRUNCATED 2u
#define VM_RUN_ENDED 0x04u         /* the program was reaped: wstatus is its */
#define VM_RUN_TIMED_OUT 0x20u     /* the guest's wall clock stopped it */
#define VM_RUN_OVERFLOW 0x40u      /* output passed its cap */
#define VM_RUN_SETUP_FAILED 0x200u /* a protection could not be applied: nothing ran */
#define VM_RUN_MEMORY_ERROR 0x400u /* the zygote's verdict pipe: a MemoryError ended it */

struct vm_session_start {
	uint32_t cpu_sec;       /* the session's total: the interpreter's hard RLIMIT_CPU */
	uint32_t memory_mb;     /* the session's memory cgroup */
	uint32_t pids;
	uint32_t file_size_mb;
	uint32_t disk_mb;       /* the one /tmp tmpfs the session keeps */
	uint32_t output_kb;     /* cap on each stream, per call */
	uint32_t repl_len;      /* src/core/repl.py, run as python3 -I -u -c */
	uint32_t egress;        /* 1: 127.0.0.1:EGRESS_PORT reaches the host's proxy */
	uint32_t env_len;       /* after repl.py: as VM_RUN's */
	uint32_t open_files;    /* RLIMIT_NOFILE, as every tier's (rule E2) */
	uint32_t reserved;      /* 0 */
};

struct vm_session_ready {
	int32_t ok;             /* 1: the interpreter started; 0: message says why not */
	uint32_t message_len;
};

/* A session call's wall clock starts when the interpreter takes the request
 * (its ack line): a fresh interpreter's start, most of a second under TCG,
 * is not the code's time. Until the ack, the start has this much beyond
 * the wall clock; the host waits for it too. */
#define VM_SESSION_START_MS 10000

struct vm_call {
	uint64_t seq;           /* the reply line starts with {"seq":SEQ */
	uint32_t wall_ms;       /* the guest's own clock, from the ack; the host keeps one too */
	uint32_t reply_max;     /* a longer reply line stops the call */
	uint32_t request_len;   /* one JSON line, newline included */
	uint32_t reserved;
};

/* The facts of a call, not their reading: the host turns them into a status
 * with the same function as the process and container tiers. */
struct vm_call_result {
	uint32_t flags;         /* VM_CALL_* and VM_STDOUT/STDERR_TRUNCATED */
	int32_t wstatus;        /* the interpreter's, when VM_CALL_ENDED */
	uint64_t cpu_us;        /* VM_CALL_ENDED: the session's CPU since the last report */
	uint64_t memory_kb;     /* the session's peak */
	uint64_t oom_kills;     /* the memory cgroup's OOM kills during this call */
	uint32_t stdout_len;    /* what the call's VM_OUTPUT frames brought */
	uint32_t stderr_len;
	uint32_t reply_len;     /* 0 unless VM_CALL_REPLIED */
	uint32_t message_len;   /* VM_CALL_SETUP_FAILED or VM_CALL_BROKEN: why */
};

#define VM_CALL_REPLIED 0x04u      /* this call's reply line came */
#define VM_CALL_ENDED 0x08u        /* the interpreter ended; the next call starts another */
#define VM_CALL_RESTARTED 0x10u    /* a fresh interpreter took this call */
#define VM_CALL_TIMED_OUT 0x20u
#define VM_CALL_OVERFLOW 0x40u     /* output passed its cap */
#define VM_CALL_CANCELLED 0x80u    /* VM_CALL_STOP */
#define VM_CALL_BAD_REPLY 0x100u   /* a reply line past reply_max */
#define VM_CALL_SETUP_FAILED 0x200u /* a protection could not be applied: none ran */
#define VM_CALL_BROKEN 0x400u      /* the guest cannot go on: the host ends the VM */

_Static_assert(sizeof(struct vm_frame_header) == 8, "frame header is 8 bytes");
_Static_assert(sizeof(struct vm_output_head) == 16, "vm_output_head has no padding");
_Static_assert(sizeof(struct vm_run) == 48, "vm_run has no padding");
_Static_assert(sizeof(struct vm_result) == 56, "vm_result has no padding");
_Static_assert(sizeof(struct vm_session_start) == 44, "vm_session_start has no padding");
_Static_assert(sizeof(struct vm_call) == 24, "vm_call has no padding");
_Static_assert(sizeof(struct vm_call_result) == 48, "vm_call_result has no padding");

#endif
