#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../linux/creds.h"
#include "../linux/mounts.h"
#include "../linux/report.h"
#include "../linux/spawn.h"
#include "channel.h"
#include "protocol.h"
#include "qemu.h"

/* Kernel arguments that boot Debian's cloud kernel under microvm quickly
 * (measured: NOTES-microvm.md). tsc_early_khz: TCG hangs without it.
 * panic=-1 reboot=t with -no-reboot: a guest panic ends QEMU at once. */
static const char kernel_args[] =
	"console=ttyS0 quiet tsc_early_khz=2600000 tsc=reliable cryptomgr.notests nokaslr "
	"mitigations=off audit=0 lsm= reboot=t panic=-1 i8042.noaux i8042.nomux i8042.nopnp "
	"i8042.dumbkbd";

struct argv_builder {
	char *argv[64];
	int n;
	char store[4096];
	size_t used;
};

static void add(struct argv_builder *b, const char *s)
{
	if (b->n < 63)
		b->argv[b->n++] = (char *)s;
}

static void addf(struct argv_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct argv_builder *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(b->store + b->used, sizeof b->store - b->used, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof b->store - b->used)
		return;
	add(b, b->store + b->used);
	b->used += (size_t)w + 1;
}

/* A value inside one of QEMU's comma-separated options, where a comma is
 * written twice (an image directory may hold one). */
static const char *qemu_option_value(const char *value, char *out, size_t n)
{
	size_t used = 0;
	for (const char *c = value; *c && used + 2 < n; c++) {
		out[used++] = *c;
		if (*c == ',')
			out[used++] = ',';
	}
	out[used] = '\0';
	return out;
}

static void build_argv(const struct vm_launch *l, struct argv_builder *b)
{
	add(b, QEMU_BINARY);
	/* The microvm machine: no PCI, no firmware, no legacy devices beyond
	 * what its boot needs (ACPI on: the virtio-mmio devices are found
	 * through it). Guest RAM is a file, so a booted VM can be saved and
	 * restored copy-on-write. */
	add(b, "-M");
	add(b, "microvm,memory-backend=mem");
	add(b, "-accel");
	add(b, l->accel);
	add(b, "-cpu");
	/* kvm: the host's CPU, less the MSR this host's KVM refuses. tcg: max,
	 * whose RDRAND seeds the guest's random generator at once (ready ~0.9
	 * s sooner) and reseeds it with real entropy after each restore. */
	add(b, !strcmp(l->accel, "kvm") ? "host,-arch-capabilities" : "max");
	add(b, "-m");
	addf(b, "%u", l->memory_mb);
	add(b, "-smp");
	add(b, "1");
	addf(b, "-object");
	addf(b, "memory-backend-file,id=mem,size=%uM,mem-path=%s,share=%s", l->memory_mb,
	     l->ram_path, l->share ? "on" : "off");
	/* No default devices, no user config, no display: and above all no
	 * network device of any kind. */
	add(b, "-nodefaults");
	add(b, "-no-user-config");
	add(b, "-display");
	add(b, "none");
	add(b, "-no-reboot");
	add(b, "-kernel");
	add(b, l->kernel);
	add(b, "-initrd");
	add(b, l->initrd);
	add(b, "-append");
	add(b, kernel_args);
	add(b, "-serial");
	addf(b, "file:%s", l->console_log);
	/* The one channel: a virtio-serial port behind a unix socket. */
	add(b, "-device");
	add(b, "virtio-serial-device");
	add(b, "-chardev");
	addf(b, "socket,id=ch0,path=%s,server=on,wait=off", l->chan_sock);
	add(b, "-device");
	add(b, "virtserialport,chardev=ch0,name=agent0");
	/* The egress port (egress_mux.h), in every VM so one snapshot serves
	 * runs with egress and without: a byte stream to the host's relay,
	 * never a network device. Unused (no host end connected) without
	 * egress. */
	add(b, "-chardev");
	addf(b, "socket,id=eg0,path=%s,server=on,wait=off", l->egress_sock);
	add(b, "-device");
	add(b, "virtserialport,chardev=eg0,name=" VM_EGRESS_PORT_NAME ",nr=2");
	/* After the serial device, which must stay the guest's virtio0: the
	 * agent opens its ports as /dev/vport0pN (protocol.h).
	 * The image's root (build-vm.sh's root.ext4), the guest's / : read-only
	 * at QEMU's end as well as the guest's, so no guest, however taken
	 * over, writes a byte of the image every run shares. No cache of
	 * QEMU's own (cache=none would need O_DIRECT); the host's page cache
	 * serves every VM of the image. */
	char file[2 * PATH_MAX + 1];
	add(b, "-drive");
	addf(b, "if=none,id=root,format=raw,readonly=on,file=%s",
	     qemu_option_value(l->rootfs, file, sizeof file));
	add(b, "-device");
	add(b, "virtio-blk-device,drive=root");
	if (l->mon_sock) {
		add(b, "-monitor");
		addf(b, "unix:%s,server=on,wait=off", l->mon_sock);
	}
	if (l->incoming_fd >= 0) {
		/* Restored over the monitor (vm_restore): QEMU 7.2 cannot set
		 * x-ignore-shared on its command line. */
		add(b, "-incoming");
		add(b, "defer");
	}
	/* QEMU's own seccomp filter: no obsolete calls, no setuid, no
	 * resource control, and no spawning except to write a snapshot. */
	add(b, "-sandbox");
	addf(b, "on,obsolete=deny,elevateprivileges=deny,resourcecontrol=deny,spawn=%s",
	     l->allow_spawn ? "allow" : "deny");
	b->argv[b->n] = NULL;
}

/* In the jail's own mount namespace: the host read-only, but for the
 * directories QEMU must write in (its sockets and log; the RAM file, opened
 * read-write by QEMU 7.2 even when mapped private). */
static int jail_mounts(const struct vm_launch *l, struct setup_error *e)
{
	int rc;
	if ((rc = mount_make_private(e)) || (rc = mount_tree_readonly("/", e)) ||
	    (rc = mount_bind(l->run_dir, l->run_dir, e)) ||
	    (l->ram_dir && (rc = mount_bind(l->ram_dir, l->ram_dir, e))))
		return rc;
	return 0;
}

__attribute__((noreturn)) static void qemu_child(const struct vm_launch *l, int report_w)
{
	struct setup_error e;
	int rc;
	struct argv_builder b = {.n = 0, .used = 0};
	build_argv(l, &b);
	static char *envp[] = {"PATH=/usr/bin:/bin", NULL};

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || (rc = child_reset_signals())) {
		setup_fail(&e, errno, "qemu jail: prctl");
		goto fail;
	}
	if ((rc = jail_mounts(l, &e)))
		goto fail;
	/* The migration stream becomes fd 3; all else but the report pipe
	 * (close-on-exec) goes. */
	if (l->incoming_fd >= 0) {
		/* Via a high fd: dup2 onto itself (when it already is 3)
		 * would keep its close-on-exec flag. */
		int high = fcntl(l->incoming_fd, F_DUPFD_CLOEXEC, 64);
		if (high < 0 || dup2(high, 3) < 0) {
			setup_fail(&e, errno, "qemu jail: dup2");
			goto fail;
		}
		int keep[] = {0, 1, 2, 3, report_w};
		close_fds_except(keep, 5);
	} else {
		int keep[] = {0, 1, 2, report_w};
		close_fds_except(keep, 4);
	}
	/* stdin and stdout nothing; stderr a log beside the sockets, which
	 * the driver quotes when QEMU fails. */
	char logp[PATH_MAX + 16];
	snprintf(logp, sizeof logp, "%s/qemu.log", l->run_dir);
	int null = open("/dev/null", O_RDWR);
	int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0 ||
	    fchown(2, l->uid, l->gid) < 0) {
		setup_fail(&e, errno, "qemu jail: stdio");
		goto fail;
	}
	if (setsid() < 0 || (rc = creds_drop(l->uid, l->gid, false, &e)))
		goto fail;
	/* Again: changing the uid cleared the parent-death signal, and a VM
	 * must not outlive the process that drives it (a session's VM lives
	 * for many calls, and would otherwise survive its host's crash). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		setup_fail(&e, errno, "qemu jail: prctl after the uid change");
		goto fail;
	}
	execve(QEMU_BINARY, b.argv, envp);
	setup_fail(&e, errno, "qemu jail: exec %s", QEMU_BINARY);
fail:
	report_setup_failed(report_w, &e);
	_exit(127);
}

int vm_launch(const struct vm_launch *l, pid_t *pid, int *pidfd, struct aj_error *err)
{
	int rep[2];
	int rc = pipe_cloexec(rep, 0);
	if (rc)
		return error_set(err, rc, "qemu: pipe: %s", errno_name(-rc));
	/* Its own pid namespace (it sees no host process), network namespace
	 * (nothing to reach even if the guest took QEMU over), ipc, uts and
	 * mounts. */
	pid_t p = spawn_clone(CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS,
			      pidfd);
	if (p == 0)
		qemu_child(l, rep[1]);
	close(rep[1]);
	if (p < 0) {
		close(rep[0]);
		return error_set(err, p, "qemu: clone: %s", errno_name(-p));
	}
	/* A setup failure arrives before exec closes the pipe; exec success
	 * closes it with nothing written. */
	struct sandbox_report r;
	ssize_t n;
	while ((n = read(rep[0], &r, sizeof r)) < 0 && errno == EINTR)
		;
	close(rep[0]);
	if (n == (ssize_t)sizeof r && r.kind == REPORT_SETUP_FAILED) {
		vm_destroy(p, *pidfd);
		r.message[sizeof r.message - 1] = '\0';
		return error_set(err, -EPERM, "%s", r.message);
	}
	*pid = p;
	return 0;
}

void vm_destroy(pid_t pid, int pidfd)
{
	(void)pid;
	if (pidfd < 0)
		return;
	pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	while (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL) < 0 && errno == EINTR)
		;
	close(pidfd);
}

int vm_restore(int mon, double deadline_ms, char *why, size_t n)
{
	char out[4096];
	/* The snapshot's RAM is the file QEMU mapped privately: only the
	 * device state comes through the stream on fd 3. */
	static const char *const steps[] = {"migrate_set_capability x-ignore-shared on",
					    "migrate_incoming fd:3"};
	for (size_t i = 0; i < 2; i++) {
		int rc = monitor_command(mon, steps[i], out, sizeof out, deadline_ms);
		if (rc) {
			snprintf(why, n, "monitor '%s': %s", steps[i], errno_name(-rc));
			return rc;
		}
		if (strstr(out, "rror")) {
			snprintf(why, n, "monitor '%s': %.200s", steps[i], out);
			return -EIO;
		}
	}
	return 0;
}

/* ---- the monitor ---- */

static int read_until_prompt(int fd, char *out, size_t n, double deadline_ms)
{
	size_t len = 0;
	out[0] = '\0';
	for (;;) {
		double left = deadline_ms - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int r = poll(&pfd, 1, (int)left + 1);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		char buf[1024];
		ssize_t got = read(fd, buf, sizeof buf);
		if (got <= 0)
			return got == 0 ? -EPIPE : -errno;
		/* The monitor echoes every typed character with terminal
		 * escapes: keep the tail, where the answer and the prompt are. */
		if (len + (size_t)got + 1 > n) {
			size_t keep = n / 2 > (size_t)got ? n / 2 - (size_t)got : 0;
			keep = keep < len ? keep : len;
			memmove(out, out + len - keep, keep);
			len = keep;
		}
		memcpy(out + len, buf, (size_t)got < n - 1 - len ? (size_t)got : n - 1 - len);
		len += (size_t)got < n - 1 - len ? (size_t)got : n - 1 - len;
		out[len] = '\0';
		if (len >= 7 && strstr(out, "(qemu) "))
			return 0;
	}
}

void vm_last_words(const char *run_dir, char *out, size_t n)
{
	char p[PATH_MAX + 16], buf[2048];
	snprintf(p, sizeof p, "%s/qemu.log", run_dir);
	out[0] = '\0';
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
	ssize_t got = pread(fd, buf, sizeof buf - 1, from);
	close(fd);
	if (got <= 0)
		return;
	buf[got] = '\0';
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == '\n')
			*c = ' ';
	snprintf(out, n, "%s", buf);
}

int monitor_open(const char *path, double deadline_ms, int alive_pidfd)
{
	int fd = channel_connect(path, deadline_ms, alive_pidfd);
	if (fd < 0)
		return fd;
	char banner[512];
	int rc = read_until_prompt(fd, banner, sizeof banner, deadline_ms);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int monitor_command(int fd, const char *cmd, char *out, size_t n, double deadline_ms)
{
	int rc = write_full(fd, cmd, strlen(cmd));
	if (!rc)
		rc = write_full(fd, "\n", 1);
	if (!rc)
		rc = read_until_prompt(fd, out, n, deadline_ms);
	return rc;
}
