/* Once per image: the steps from the kernel's start to VM_READY (see
 * agent.c's theory of operation). A failure here goes to the console and
 * powers the VM off: PID 1 must never end (the kernel would panic). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent.h"

#define MODULE_DIR "/lib/modules"

/* Under TCG module probing is slow, so this is generous; it only exists so
 * a broken image powers off instead of hanging the host's boot. */
#define PORT_WAIT_MS 5000

/* The image's root: the disk QEMU attaches read-only (images/build-vm.sh's
 * root.ext4), mounted here in the initramfs and then made /. */
#define ROOT_DISK "/dev/vda"
#define ROOT_MOUNT "/root"

static const char *const modules[] = {
	/* The order is the dependency order: virtio_blk and virtio_console
	 * need virtio, which needs virtio_ring; virtio_mmio finds microvm's
	 * devices. */
	"virtio_ring.ko", "virtio.ko", "virtio_mmio.ko", "virtio_blk.ko", "virtio_console.ko",
};

__attribute__((noreturn)) void power_off(const char *message)
{
	fprintf(stderr, "agentjail-guest: %s\n", message);
	fflush(stderr);
	sync();
	reboot(RB_POWER_OFF);
	/* Not PID 1 (a test run outside a VM): just end. PID 1 never
	 * returns from reboot(), and must never exit (the kernel panics). */
	_exit(1);
}

/* No sysfs, ever: nothing the agent does needs it (finit_module takes an fd,
 * devtmpfs makes the port's node, the cgroup hierarchy is held by fd), and
 * it would show the program the machine it runs on (devices, CPUs, firmware,
 * the kernel's modules and tunables), which no other tier shows. /sys stays
 * the image's empty directory, read-only with the rest of the image's root:
 * the view the other tiers' empty read-only /sys gives. The program
 * cannot mount one there, nor remount / writable: as uid 1000 it has no
 * capability, and the seccomp policy refuses mount, fsopen and the rest. */
static int mount_filesystems(struct failure *f)
{
	static const struct {
		const char *source, *target, *type;
		unsigned long flags;
		const char *data;
	} table[] = {
		/* hidepid=invisible: the program (uid 1000) sees only its own
		 * processes, as it would in the other tiers' pid namespace. */
		{"proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible"},
		/* devtmpfs: the kernel makes the nodes (the port among them)
		 * with root-only modes unless a driver says otherwise, so the
		 * program cannot open the channel to the host. */
		{"devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755"},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (mount(table[i].source, table[i].target, table[i].type, table[i].flags,
			  table[i].data) < 0)
			return fail(f, errno, "mount %s on %s", table[i].type, table[i].target);
	}
	return 0;
}

/* The initramfs has no /dev/console, so the kernel started us without
 * stdio; devtmpfs has one. stdin is /dev/null: nothing reads the console. */
static void open_console(void)
{
	int con = open("/dev/console", O_RDWR | O_NOCTTY);
	int null = open("/dev/null", O_RDWR);
	if (null >= 0)
		dup2(null, 0);
	if (con >= 0) {
		dup2(con, 1);
		dup2(con, 2);
	}
	if (con > 2)
		close(con);
	if (null > 2)
		close(null);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static int load_modules(struct failure *f)
{
	char path[128];
	for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
		snprintf(path, sizeof path, MODULE_DIR "/%s", modules[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail(f, errno, "open %s", path);
		int rc = (int)syscall(SYS_finit_module, fd, "", 0);
		int err = errno;
		close(fd);
		/* EEXIST: built in, or loaded already. Either way it is there. */
		if (rc < 0 && err != EEXIST)
			return fail(f, err, "finit_module %s", modules[i]);
	}
	return 0;
}

/* The ports appear once virtio_console has talked to the device, which
 * happens after finit_module returns: wait for each, bounded. */
static int open_port(const char *path, int flags, int *fd, struct failure *f)
{
	int64_t give_up = now_us() + (int64_t)PORT_WAIT_MS * 1000;
	for (;;) {
		/* O_CLOEXEC: the zygote, and so the program, never holds it. */
		*fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | flags);
		if (*fd >= 0)
			return 0;
		if (errno != ENOENT && errno != ENXIO)
			return fail(f, errno, "open %s", path);
		if (now_us() >= give_up)
			return fail(f, errno, "%s did not appear within %d ms", path, PORT_WAIT_MS);
		sleep_ms(5);
	}
}

/* The image's root becomes /, as on every other tier: the program runs the
 * image's own userland (its shell, coreutils, certificates, Python and
 * packages), not a copy of part of it. The disk appears once virtio_blk has
 * probed it, after finit_module returns: wait for it, bounded. Read-only
 * (QEMU's end is read-only too), nosuid and nodev: nothing the image
 * carries can raise privilege or reach a device, and nothing a run does
 * reaches the next run through it. /proc and /dev move along; the
 * initramfs (the agent and its modules) stays below, out of every path. */
static int switch_root(struct failure *f)
{
	int64_t give_up = now_us() + (int64_t)PORT_WAIT_MS * 1000;
	while (mount(ROOT_DISK, ROOT_MOUNT, "ext4", MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0) {
		if (errno != ENOENT && errno != ENXIO)
			return fail(f, errno, "mount the image's root (%s, ext4)", ROOT_DISK);
		if (now_us() >= give_up)
			return fail(f, errno, "%s did not appear within %d ms", ROOT_DISK,
				    PORT_WAIT_MS);
		sleep_ms(5);
	}
	if (mount("/proc", ROOT_MOUNT "/proc", NULL, MS_MOVE, NULL) < 0)
		return fail(f, errno, "move /proc onto the image's root");
	if (mount("/dev", ROOT_MOUNT "/dev", NULL, MS_MOVE, NULL) < 0)
		return fail(f, errno, "move /dev onto the image's root");
	if (chdir(ROOT_MOUNT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	    chdir("/") < 0)
		return fail(f, errno, "make the image's root /");
	return 0;
}

/* The program's /dev, as the host tiers give it: null, zero, full, random,
 * urandom, a devpts instance of its own (max 16 ptys), an shm directory, and
 * the fd links; on a read-only tmpfs over devtmpfs, whose port, console,
 * RTC, /dev/mem and the rest are out of sight from here on (the agent keeps
 * what it needs open). Built on /tmp, which is free until a run. */
static int minimal_dev(struct failure *f)
{
	static const struct {
		const char *name;
		unsigned minor;
	} nodes[] = {{"null", 3}, {"zero", 5}, {"full", 7}, {"random", 8}, {"urandom", 9}};
	static const char *const links[][2] = {
		{"pts/ptmx", "/tmp/ptmx"},     {"/proc/self/fd", "/tmp/fd"},
		{"/proc/self/fd/0", "/tmp/stdin"}, {"/proc/self/fd/1", "/tmp/stdout"},
		{"/proc/self/fd/2", "/tmp/stderr"},
	};
	int rc = restore_keep_devices(f);
	if (rc)
		return rc;
	if (mount("agentjail", "/tmp", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755") < 0)
		return fail(f, errno, "/dev: tmpfs");
	char path[64];
	for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
		snprintf(path, sizeof path, "/tmp/%s", nodes[i].name);
		if (mknod(path, S_IFCHR | 0666, makedev(1, nodes[i].minor)) < 0 || chmod(path, 0666) < 0)
			return fail(f, errno, "/dev: mknod %s", nodes[i].name);
	}
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return fail(f, errno, "/dev: symlink %s", links[i][1]);
	if (mkdir("/tmp/shm", 01777) < 0 || mkdir("/tmp/pts", 0755) < 0)
		return fail(f, errno, "/dev: mkdir");
	if (mount("devpts", "/tmp/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620,max=16") < 0)
		return fail(f, errno, "/dev: devpts");
	if (mount("none", "/tmp", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		  "size=64k,mode=755") < 0)
		return fail(f, errno, "/dev: remount read-only");
	if (mount("/tmp", "/dev", NULL, MS_MOVE, NULL) < 0)
		return fail(f, errno, "/dev: move into place");
	return 0;
}

void boot(struct zygote *z, int *sigfd)
{
	struct failure f;

	/* Boot failures must never end PID 1 (the kernel would panic): every
	 * one goes through power_off. */
	if (mount_filesystems(&f)) {
		open_console();
		power_off(f.message);
	}
	open_console();
	/* SIGCHLD through a signalfd: the supervisor's one poll loop sees
	 * children end together with output and the clock. Blocked before the
	 * first fork so no exit is missed; the zygote unblocks it. */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	*sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	/* A write to a pipe whose reader died returns EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	if (*sigfd < 0)
		power_off("guest: signalfd: cannot watch children");
	/* Both ports at boot, before /dev is hidden: the egress port
	 * (non-blocking, for the forwarder's one poll loop) is used only in
	 * a run or session that carries egress. */
	if (load_modules(&f) || open_port(VM_GUEST_PORT, 0, &port_fd, &f) ||
	    open_port(VM_GUEST_EGRESS_PORT, O_NONBLOCK, &egress_port_fd, &f) ||
	    switch_root(&f) || run_cgroup_make(&f) || zygote_spawn(z, &f))
		power_off(f.message);
	if (zygote_await(z, &f)) {
		zygote_echo(z->err_fd);
		/* Tell the host at once that this image cannot run Python. */
		struct vm_ready ready = {.version = VM_PROTOCOL_VERSION, .python_ok = 0};
		struct iovec part = {.iov_base = &ready, .iov_len = sizeof ready};
		send_frame(VM_READY, &part, 1);
		power_off(f.message);
	}
	/* Whatever the interpreter said while starting is not the program's. */
	zygote_echo(z->out_fd);
	zygote_echo(z->err_fd);
	if (minimal_dev(&f))
		power_off(f.message);
	/* The image's root is read-only from its mount (switch_root); said
	 * again here as the invariant a run relies on: no directory the image
	 * brought (world-writable or not) can hold bytes outside the disk
	 * limit, and nothing it carries is setuid or a device. */
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0) {
		fail(&f, errno, "remount / read-only");
		power_off(f.message);
	}

	struct vm_ready ready = {.version = VM_PROTOCOL_VERSION, .python_ok = 1};
	struct iovec part = {.iov_base = &ready, .iov_len = sizeof ready};
	int rc = send_frame(VM_READY, &part, 1);
	if (rc) {
		fail(&f, -rc, "send VM_READY");
		power_off(f.message);
	}
}
