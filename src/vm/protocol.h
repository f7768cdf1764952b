/* The microVM channel: what the host driver and the guest agent (/init in
 * the VM) say to each other over the virtio-serial port, in frames:
 *
 *   struct vm_frame_header { u32 type; u32 length; }  then `length` bytes
 *
 * all little-endian (both ends are x86-64). The guest sends VM_READY once
 * it can take a run (before the snapshot is taken, so a restored VM is
 * ready at once); the host sends one VM_RUN; the guest answers one
 * VM_RESULT. A VM serves one run and is then destroyed, so no state can pass
 * from one run to the next. */
#ifndef AJ_VM_PROTOCOL_H
#define AJ_VM_PROTOCOL_H

#include <stdint.h>

#define VM_PROTOCOL_VERSION 1
/* The guest's port name (QEMU virtserialport name=...), and the device
 * the guest opens: the first port of the first virtio-serial device. */
#define VM_PORT_NAME "agent0"
#define VM_GUEST_PORT "/dev/vport0p1"
/* The program runs as this uid/gid in the guest: never root. */
#define VM_GUEST_UID 1000
#define VM_GUEST_WORKSPACE "/tmp/work"
/* Largest frame either side accepts: the largest program or the largest
 * output cap, twice, and room. */
#define VM_MAX_FRAME (64u << 20)

enum vm_frame_type {
	VM_READY = 1,   /* guest -> host: payload struct vm_ready */
	VM_RUN = 2,     /* host -> guest: struct vm_run, then code_len bytes of code */
	VM_RESULT = 3,  /* guest -> host: struct vm_result, then stdout, stderr, message */
};

struct vm_frame_header {
	uint32_t type;
	uint32_t length;
};

struct vm_ready {
	uint32_t version;       /* VM_PROTOCOL_VERSION */
	uint32_t python_ok;     /* the zygote interpreter is up */
};

struct vm_run {
	uint32_t wall_ms;       /* the guest's own clock; the host keeps one too */
	uint32_t cpu_sec;
	uint32_t memory_mb;     /* for the guest's memory cgroup */
	uint32_t pids;
	uint32_t file_size_mb;
	uint32_t disk_mb;       /* size of the guest's /tmp tmpfs */
	uint32_t output_kb;     /* cap on each stream */
	uint32_t code_len;
};

struct vm_result {
	int32_t status;         /* enum aj_status */
	int32_t exit_code;
	int32_t has_exit_code;
	int32_t signal;
	uint32_t stdout_len;
	uint32_t stderr_len;
	uint32_t message_len;   /* 0: no message */
	uint32_t flags;         /* VM_STDOUT_TRUNCATED | VM_STDERR_TRUNCATED */
	uint64_t wall_us;       /* inside the guest, request to result */
	uint64_t cpu_us;
	uint64_t memory_kb;     /* peak */
};

#define VM_STDOUT_TRUNCATED 1u
#define VM_STDERR_TRUNCATED 2u

_Static_assert(sizeof(struct vm_frame_header) == 8, "frame header is 8 bytes");
_Static_assert(sizeof(struct vm_run) == 32, "vm_run has no padding");
_Static_assert(sizeof(struct vm_result) == 56, "vm_result has no padding");

#endif
