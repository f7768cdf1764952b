/* The VMM: QEMU's microvm machine, started jailed. */
#ifndef AJ_VM_QEMU_H
#define AJ_VM_QEMU_H

#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"

#define QEMU_BINARY "/usr/bin/qemu-system-x86_64"

struct vm_launch {
	const char *accel;          /* "tcg" or "kvm" */
	unsigned memory_mb;
	const char *kernel;         /* vmlinux (PVH entry) */
	const char *initrd;
	const char *rootfs;         /* the image's root, attached read-only */
	const char *ram_path;       /* the guest's RAM, a file */
	bool share;                 /* share=on: writes reach the file (snapshot making) */
	const char *ram_dir;        /* the directory holding it, writable inside the jail */
	const char *run_dir;        /* sockets, the console log, QEMU's own log */
	const char *chan_sock;
	const char *egress_sock;    /* the egress port's socket (egress_mux.h) */
	const char *mon_sock;       /* NULL: no monitor */
	const char *console_log;
	int incoming_fd;            /* -1, or the migration stream to restore from */
	bool allow_spawn;           /* -sandbox spawn=allow (exec: migration, snapshot only) */
	uid_t uid;
	gid_t gid;
};

/* Starts QEMU: its own pid, network, ipc, uts and mount namespaces, the host
 * read-only but for run_dir and ram_dir, its own uid and gid with no
 * capabilities and no_new_privs, QEMU's own seccomp sandbox on, dying with
 * the caller. */
int vm_launch(const struct vm_launch *l, pid_t *pid, int *pidfd, struct aj_error *err);
/* SIGKILL and reap: the VM is gone when this returns. */
void vm_destroy(pid_t pid, int pidfd);

/* QEMU's human monitor (HMP) over its unix socket: a command, its output. */
int monitor_open(const char *path, double deadline_ms, int alive_pidfd);
/* For a QEMU started with incoming_fd: restores the VM from that stream
 * (the guest then resumes on its own). why names a failed step. */
int vm_restore(int mon, double deadline_ms, char *why, size_t n);
/* The last lines QEMU wrote to stderr (run_dir/qemu.log), for messages. */
void vm_last_words(const char *run_dir, char *out, size_t n);
int monitor_command(int fd, const char *cmd, char *out, size_t n, double deadline_ms);

#endif
