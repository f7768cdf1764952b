/* agentjail guest agent: /init of the microVM.
 *
 * Theory of operation
 * -------------------
 * The microvm tier runs each program in a VM of its own. This file is that
 * VM's init: PID 1, root, built static so the initramfs needs no loader for
 * it. Two processes of ours exist in the guest:
 *
 *  agent    PID 1 (this file). Talks to the host over the virtio-serial port
 *           in the frames of ../protocol.h; keeps the wall clock; reads and
 *           caps both output streams; kills, reaps and reports.
 *
 *  zygote   `/usr/bin/python3 -I -u /agent/zygote.py`, started by the agent
 *           at boot as root: an interpreter with the common standard library
 *           already imported, waiting for one request. Its fds: 0 /dev/null,
 *           1 and 2 the stdout and stderr pipes (the agent holds the read
 *           ends), 3 the request pipe (agent -> zygote), 4 the control pipe
 *           (zygote -> agent: "ready", "pid N", "fail STEP: ERRNO"), 5 the
 *           run cgroup's directory (O_PATH).
 *
 * Once per image (the host boots one VM, then snapshots it):
 *   mount /proc, /dev (and no sysfs) -> load the virtio modules -> open the
 *   port -> make the run cgroup (in a cgroup2 hierarchy mounted nowhere) ->
 *   start the zygote and wait for "ready" -> / read-only -> VM_READY ->
 *   block reading VM_RUN.
 * The host snapshots the VM in that read and restores a copy per run, so
 * everything after VM_READY happens in a copy that wakes up with the clock,
 * the kernel's random generator and every address exactly as they were at
 * the snapshot. Nothing after VM_READY may depend on time having passed; the
 * clock and the random generator are refreshed first thing in a run.
 *
 * Once per run (one VM_RUN; the host destroys the VM after the result):
 *   refresh clock and entropy -> tmpfs /tmp (the disk limit) with
 *   /tmp/work/main.py -> cgroup limits (memory, swap, pids) -> the request
 *   line to the zygote. The zygote forks: the parent writes the child's pid on
 *   the control pipe and exits, so the child (the program) becomes the
 *   agent's own child: its wait status and usage come from the kernel, and
 *   its CPU clock (RLIMIT_CPU) starts at zero instead of at the zygote's
 *   import time. The child joins the run cgroup, applies its rlimits, drops
 *   to uid/gid 1000, closes the control pipe and runs main.py.
 *   Meanwhile the agent reads both streams, keeps the wall clock and, on a
 *   timeout or a flood, kills every process in the VM (kill(-1) from PID 1:
 *   only the agent survives it, so a setsid() double fork escapes nothing).
 *   When the program ends, whatever it left behind is killed too, everything
 *   is reaped, and one VM_RESULT goes back. Then the agent idles.
 *
 * Once per session (VM_SESSION_START instead of VM_RUN): the zygote is
 *   ended, and session.c keeps a session interpreter alive across calls in
 *   the same /tmp, cgroup and protections; see its theory of operation.
 *
 * Failures: before VM_READY they go to the console (PID 1's stdout/stderr)
 * and the VM powers off; if the interpreter is what failed and the port is
 * open, a VM_READY with python_ok 0 goes first so the host need not wait for
 * a timeout to know. During a run any step that fails is reported as a
 * VM_RESULT with VM_RUN_SETUP_FAILED and "guest: STEP: ERRNO" (the host
 * makes it a sandbox_error, quoting it), and nothing runs with less than
 * was asked. A run's VM_RESULT carries facts only (how the program ended,
 * its usage, the OOM kills): the host decides its status.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <linux/rtc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include "../../../include/agentjail.h"
#include "../../core/contract.h"
#include "../protocol.h"
#include "agent.h"
/* The host tiers' system-call policy, compiled to BPF by build-vm.sh from
 * src/linux/seccomp_policy.c: policy_insns[]. */
#include "seccomp_filter.inc"

#define ZYGOTE "/agent/zygote.py"
#define MODULE_DIR "/lib/modules"
#define PROGRAM WORKSPACE "/main.py"

/* The zygote's fds, as zygote.py expects them. */
#define ZYGOTE_REQUEST_FD 3
#define ZYGOTE_CONTROL_FD 4
#define ZYGOTE_CGROUP_FD 5
#define ZYGOTE_FDS 6

/* Boot bounds. Under TCG module probing and Python's imports are slow, so
 * these are generous; they only exist so a broken image powers off instead
 * of hanging the host's boot. */
#define PORT_WAIT_MS 5000
#define ZYGOTE_READY_MS 60000
/* After a kill the agent waits at most this long before reporting anyway. */
#define REAP_WAIT_MS 5000

static const char *const modules[] = {
	/* The order is the dependency order: virtio_console needs virtio,
	 * which needs virtio_ring; virtio_mmio finds microvm's devices. */
	"virtio_ring.ko", "virtio.ko", "virtio_mmio.ko", "virtio_console.ko",
};

/* ---- small helpers ---- */

int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes a short text (a cgroup knob: name in the directory dir) in one
 * write, as the kernel wants it. */
int write_text(int dir, const char *name, const char *text)
{
	int fd = openat(dir, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	int rc = write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* Reads a small text file (name in the directory dir); 0 or -errno. */
int read_text(int dir, const char *name, char *buf, size_t size)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ssize_t n;
	while ((n = read(fd, buf, size - 1)) < 0 && errno == EINTR)
		;
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return 0;
}

/* "key value" lines (memory.events, cpu.stat): the value of key, 0 if none. */
uint64_t keyed_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = text; *line;) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return strtoull(line + klen + 1, NULL, 10);
		const char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	return 0;
}

/* ---- the channel to the host ---- */

int port_fd = -1;

/* Reads exactly n bytes from the port. A read of 0 means no host is
 * connected (virtio_console's answer while the host end is closed, as it is
 * between the snapshot and a restore's connect): wait and try again. The
 * agent has nothing to do but wait for the host, so no bound here. */
int port_read(void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = read(port_fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			sleep_ms(5);
			continue;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* One frame: header, then the parts. A write blocks while no host is
 * connected, which is what we want. */
int send_frame(uint32_t type, const struct iovec *parts, int count)
{
	struct vm_frame_header h = {.type = type, .length = 0};
	for (int i = 0; i < count; i++)
		h.length += (uint32_t)parts[i].iov_len;
	int rc = write_all(port_fd, &h, sizeof h);
	for (int i = 0; i < count && rc == 0; i++)
		rc = write_all(port_fd, parts[i].iov_base, parts[i].iov_len);
	return rc;
}

/* ---- boot: once per image ---- */

__attribute__((noreturn)) static void power_off(const char *message)
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
 * the initramfs's empty directory, read-only with the rest of / from before
 * VM_READY: the view the other tiers' empty read-only /sys gives. The program
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

/* The port appears once virtio_console has talked to the device, which
 * happens after finit_module returns: wait for it, bounded. */
static int open_port(struct failure *f)
{
	int64_t give_up = now_us() + (int64_t)PORT_WAIT_MS * 1000;
	for (;;) {
		/* O_CLOEXEC: the zygote, and so the program, never holds it. */
		port_fd = open(VM_GUEST_PORT, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (port_fd >= 0)
			return 0;
		if (errno != ENOENT && errno != ENXIO)
			return fail(f, errno, "open %s", VM_GUEST_PORT);
		if (now_us() >= give_up)
			return fail(f, errno, "%s did not appear within %d ms", VM_GUEST_PORT,
				    PORT_WAIT_MS);
		sleep_ms(5);
	}
}

int run_cgroup = -1;

/* The run's cgroup, made at boot: only its limits depend on the request.
 * The cgroup2 hierarchy is mounted nowhere: fsmount gives a mount attached
 * to no directory, reached only through the agent's fds, so no path in the
 * guest leads to it and the program (which could read a mounted one, every
 * process's cgroup and every knob) sees none, as on the other tiers. The
 * agent keeps the run cgroup's directory open, close-on-exec; the zygote gets
 * it as its fd 5 and closes it once its child has joined. Enabling the
 * controllers in the root hands them to children. */
static int make_run_cgroup(struct failure *f)
{
	int rc;
	int fs = fsopen("cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return fail(f, errno, "cgroup: fsopen cgroup2");
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		rc = errno;
		close(fs);
		return fail(f, rc, "cgroup: create the cgroup2 superblock");
	}
	int root = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						       MOUNT_ATTR_NOEXEC);
	rc = errno;
	close(fs);
	if (root < 0)
		return fail(f, rc, "cgroup: fsmount cgroup2");
	if ((rc = write_text(root, "cgroup.subtree_control", "+memory +pids"))) {
		close(root);
		return fail(f, -rc, "cgroup: enable +memory +pids");
	}
	if (mkdirat(root, RUN_CGROUP, 0755) < 0 && errno != EEXIST) {
		rc = errno;
		close(root);
		return fail(f, rc, "cgroup: mkdir %s", RUN_CGROUP);
	}
	/* O_PATH: only a place to open the knobs from. Holding it holds the
	 * mount, which the root's close would otherwise take down. */
	run_cgroup = openat(root, RUN_CGROUP, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = errno;
	close(root);
	if (run_cgroup < 0)
		return fail(f, rc, "cgroup: open %s", RUN_CGROUP);
	/* No oom_score_adj for the agent: the OOM killer never picks PID 1,
	 * and a value set here would be inherited by the zygote and so the
	 * program, which the memory cgroup's OOM killer must be able to kill
	 * (with -1000 a run at its limit spins in reclaim instead). */
	return 0;
}

/* Devices the agent keeps open from boot: the program's /dev has neither. */
static int rtc_fd = -1, urandom_fd = -1;

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
	rtc_fd = open("/dev/rtc0", O_RDONLY | O_CLOEXEC);
	urandom_fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (urandom_fd < 0)
		return fail(f, errno, "open /dev/urandom");
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

int apply_policy(void)
{
	const struct sock_fprog prog = {
		.len = sizeof policy_insns / sizeof policy_insns[0],
		.filter = (struct sock_filter *)policy_insns,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

struct zygote {
	pid_t pid;
	int request_fd;   /* write end of its fd 3 */
	int control_fd;   /* read end of its fd 4, non-blocking */
	int out_fd;       /* read ends of its fd 1 and 2, non-blocking */
	int err_fd;
	char line[512];   /* partial control line */
	size_t line_len;
};

static int start_zygote(struct zygote *z, struct failure *f)
{
	int req[2], ctl[2], out[2], err[2];
	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(ctl, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0)
		return fail(f, errno, "zygote: pipe");
	/* Its environment from nothing: what the program is promised (rule
	 * E1, the table every tier reads), set before Python starts so the
	 * interpreter's own choices (the locale, hence the encoding of stdio)
	 * are the ones `python3 main.py` makes. zygote.py hands it on. */
	char *const argv[] = {PYTHON, "-I", "-u", ZYGOTE, NULL};
	char *const *envp = contract_environment;
	pid_t pid = fork();
	if (pid < 0)
		return fail(f, errno, "zygote: fork");
	if (pid == 0) {
		/* Move the fds the zygote keeps clear of 0..5 before
		 * placing them, so no dup2 overwrites another. The run
		 * cgroup's directory is how its child joins that cgroup,
		 * which no path leads to; the child closes it. */
		int keep[ZYGOTE_FDS] = {
			[0] = open("/dev/null", O_RDONLY | O_CLOEXEC), [1] = out[1], [2] = err[1],
			[ZYGOTE_REQUEST_FD] = req[0], [ZYGOTE_CONTROL_FD] = ctl[1],
			[ZYGOTE_CGROUP_FD] = run_cgroup,
		};
		for (int i = 0; i < ZYGOTE_FDS; i++)
			keep[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 16);
		for (int i = 0; i < ZYGOTE_FDS; i++) {
			if (keep[i] < 0 || dup2(keep[i], i) < 0) {
				dprintf(keep[ZYGOTE_CONTROL_FD], "fail zygote fd %d: %s\n", i,
					errname(errno));
				_exit(127);
			}
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL); /* exec keeps the mask */
		signal(SIGPIPE, SIG_DFL);
		/* The same seccomp policy as the host tiers, on the zygote and so
		 * on every program it forks: no mounts, namespaces, keyrings,
		 * ptrace, SysV IPC, memfds, or sockets but inet and routing
		 * netlink. A guest kernel is one more boundary, not a reason to
		 * offer it more surface. no_new_privs first, as the kernel asks. */
		if (apply_policy() < 0) {
			dprintf(ZYGOTE_CONTROL_FD, "fail seccomp: %s\n", errname(errno));
			_exit(127);
		}
		execve(argv[0], argv, envp);
		dprintf(ZYGOTE_CONTROL_FD, "fail exec %s: %s\n", argv[0], errname(errno));
		_exit(127);
	}
	close(req[0]);
	close(ctl[1]);
	close(out[1]);
	close(err[1]);
	z->pid = pid;
	z->request_fd = req[1];
	z->control_fd = ctl[0];
	z->out_fd = out[0];
	z->err_fd = err[0];
	z->line_len = 0;
	fcntl(z->control_fd, F_SETFL, O_NONBLOCK);
	fcntl(z->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(z->err_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* One complete line from the control pipe into out (no newline): 1 if one
 * was there, 0 if none yet, -1 at EOF with nothing pending. */
static int control_line(struct zygote *z, char *out, size_t size)
{
	for (;;) {
		char *nl = memchr(z->line, '\n', z->line_len);
		if (nl) {
			size_t n = (size_t)(nl - z->line);
			snprintf(out, size, "%.*s", (int)n, z->line);
			memmove(z->line, nl + 1, z->line_len - n - 1);
			z->line_len -= n + 1;
			return 1;
		}
		if (z->line_len == sizeof z->line) /* no newline in 512 bytes */
			z->line_len = 0;
		ssize_t r = read(z->control_fd, z->line + z->line_len, sizeof z->line - z->line_len);
		if (r > 0) {
			z->line_len += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		return -1;
	}
}

/* Whatever the zygote printed, to the console: at boot it is diagnostics,
 * never the program's output. */
static void echo_to_console(int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		write_all(2, buf, (size_t)n);
}

/* Waits for "ready"; fills f with why not. */
static int await_zygote(struct zygote *z, struct failure *f)
{
	int64_t give_up = now_us() + (int64_t)ZYGOTE_READY_MS * 1000;
	char line[512];
	for (;;) {
		int got = control_line(z, line, sizeof line);
		if (got > 0 && strcmp(line, "ready") == 0)
			return 0;
		if (got > 0 && strncmp(line, "fail ", 5) == 0)
			return fail(f, 0, "zygote: %s", line + 5);
		if (got < 0)
			return fail(f, 0, "zygote: %s ended before it was ready", ZYGOTE);
		int64_t left = give_up - now_us();
		if (left <= 0)
			return fail(f, ETIMEDOUT, "zygote: not ready within %d ms", ZYGOTE_READY_MS);
		struct pollfd p = {.fd = z->control_fd, .events = POLLIN};
		poll(&p, 1, (int)(left / 1000) + 1);
	}
}

/* ---- a run ---- */

/* Reads what is there now. Sets *overflow if the cap was passed; returns
 * false at EOF or on an error. */
bool stream_drain(struct stream *s, bool *overflow)
{
	char buf[65536];
	for (int i = 0; i < READS_PER_WAKE; i++) {
		ssize_t n = read(s->fd, buf, sizeof buf);
		if (n > 0) {
			if (stream_append(s, buf, (size_t)n))
				*overflow = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN;
	}
	return true;
}

struct run {
	struct vm_run lim;
	char *code;
	int64_t start_us;
	struct zygote *z;
	int sigfd;
	struct stream out, err;
	bool control_open;
	pid_t program;          /* from the zygote's "pid N"; 0 until then */
	bool zygote_reaped;
	int zygote_status;
	bool program_reaped;
	int program_status;
	struct rusage program_usage;
	bool stopping;          /* everything has been sent SIGKILL */
	int64_t next_kill_us;
	bool timed_out;
	bool overflow;
	bool setup_failed;      /* the zygote's child could not apply a step */
	struct failure setup;
};

/* The run's clock starts as its frame is read. */
static int receive(const struct vm_frame_header *h, struct run *r, struct failure *f)
{
	r->start_us = now_us();
	return receive_run(port_read, h, &r->lim, &r->code, f);
}

/* A restored copy wakes up with the snapshot's clock. The RTC (QEMU's
 * follows the host clock) says what time it really is; a second's
 * resolution is what a VM without a time service gets anyway. */
void refresh_clock(void)
{
	int fd = rtc_fd;
	if (fd < 0)
		return; /* no RTC: the clock is stale, not a protection missing */
	struct rtc_time t;
	if (ioctl(fd, RTC_RD_TIME, &t) == 0) {
		struct tm tm = {.tm_sec = t.tm_sec, .tm_min = t.tm_min, .tm_hour = t.tm_hour,
				.tm_mday = t.tm_mday, .tm_mon = t.tm_mon, .tm_year = t.tm_year};
		struct timespec ts = {.tv_sec = timegm(&tm), .tv_nsec = 0};
		if (ts.tv_sec > 0)
			clock_settime(CLOCK_REALTIME, &ts);
	}
}

/* Every copy restored from one snapshot starts with the same CRNG state: two
 * runs would draw the same os.urandom() bytes, the same uuid4(), the same
 * secrets.token_hex(). Mix in what differs between copies (the cycle
 * counter, which under QEMU follows the host's, the clocks, the request) and
 * make the kernel reseed from its input pool, interrupts included, now. */
int refresh_entropy(const void *request, size_t len, struct failure *f)
{
	struct {
		uint64_t tsc;
		struct timespec mono, real, boot;
	} mix;
	memset(&mix, 0, sizeof mix);
	mix.tsc = __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &mix.mono);
	clock_gettime(CLOCK_REALTIME, &mix.real);
	clock_gettime(CLOCK_BOOTTIME, &mix.boot);
	int fd = urandom_fd;
	if (fd < 0)
		return fail(f, EBADF, "entropy: /dev/urandom was not opened at boot");
	int rc = write_all(fd, &mix, sizeof mix);
	if (rc == 0)
		rc = write_all(fd, request, len < 4096 ? len : 4096);
	if (rc == 0 && ioctl(fd, RNDRESEEDCRNG) < 0)
		rc = -errno;
	if (rc)
		return fail(f, -rc, "entropy: reseed the CRNG after restore");
	return 0;
}

/* /tmp: one size-limited tmpfs for all the program may write (/tmp, /var/tmp,
 * /dev/shm and the workspace), like the other tiers. */
int make_workspace(uint32_t disk_mb, const char *code, size_t code_len, struct failure *f)
{
	char opts[96];
	/* size= caps the bytes; nr_inodes caps the files, whose inodes would
	 * otherwise cost kernel memory that size= does not count. nosuid and
	 * nodev: nothing the program writes can raise privilege or reach a
	 * device. */
	snprintf(opts, sizeof opts, "size=%um,nr_inodes=%u,mode=1777", disk_mb,
		 disk_mb * 256u + 64u);
	if (mount("agentjail", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return fail(f, errno, "tmpfs on /tmp");
	/* A directory of it for each writable place (distinct, as in the host
	 * tiers), then its root covered by its own t/, so that only those
	 * places are reachable and all share the one size limit. */
	static const struct {
		const char *dir, *target;
	} places[] = {{"/tmp/v", "/var/tmp"}, {"/tmp/s", "/dev/shm"}, {"/tmp/t", "/tmp"}};
	for (size_t i = 0; i < 3; i++)
		if (mkdir(places[i].dir, 01777) < 0 || chmod(places[i].dir, 01777) < 0)
			return fail(f, errno, "mkdir %s", places[i].dir);
	if (mkdir("/tmp/t/work", 0700) < 0)
		return fail(f, errno, "mkdir %s", WORKSPACE);
	for (size_t i = 0; i < 3; i++) {
		if (mount(places[i].dir, places[i].target, NULL, MS_BIND, NULL) < 0)
			return fail(f, errno, "bind %s on %s", places[i].dir, places[i].target);
		/* A bind keeps the source's flags; restate the safe ones. */
		if (mount("none", places[i].target, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV,
			  NULL) < 0)
			return fail(f, errno, "remount %s nosuid,nodev", places[i].target);
	}
	/* 0700: the workspace is the program's alone. */
	if (chown(WORKSPACE, VM_GUEST_UID, VM_GUEST_UID) < 0)
		return fail(f, errno, "chown %s", WORKSPACE);
	if (!code)
		return 0; /* a session: files come through the interpreter */
	int fd = open(PROGRAM, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(f, errno, "create %s", PROGRAM);
	int rc = write_all(fd, code, code_len);
	if (rc == 0 && fchown(fd, VM_GUEST_UID, VM_GUEST_UID) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		return fail(f, -rc, "write %s", PROGRAM);
	return 0;
}

/* The cgroup bounds the whole run, every process the program makes included;
 * rlimits (set by the zygote) only bound each process. */
int set_cgroup_limits(uint32_t memory_mb, uint32_t pids, struct failure *f)
{
	char v[32];
	int rc;
	snprintf(v, sizeof v, "%llu", (unsigned long long)memory_mb << 20);
	if ((rc = write_text(run_cgroup, "memory.max", v)))
		return fail(f, -rc, "cgroup: memory.max");
	/* No swap: the memory limit is the memory the run gets. The VM has no
	 * swap device, but a kernel that grows one must not loosen this. */
	rc = write_text(run_cgroup, "memory.swap.max", "0");
	if (rc && rc != -ENOENT)
		return fail(f, -rc, "cgroup: memory.swap.max");
	snprintf(v, sizeof v, "%u", pids);
	if ((rc = write_text(run_cgroup, "pids.max", v)))
		return fail(f, -rc, "cgroup: pids.max");
	return 0;
}

/* zygote.py's request, as it is written. */
struct zygote_request {
	char text[1024];
	size_t n;
};

static int add_row(const struct contract_rlimit *row, uint64_t soft, uint64_t hard, void *ctx)
{
	struct zygote_request *q = ctx;
	int n = snprintf(q->text + q->n, sizeof q->text - q->n, "rlimit %d %llu %llu %s\n",
			 row->resource, (unsigned long long)soft, (unsigned long long)hard,
			 row->word);
	if (n < 0 || (size_t)n >= sizeof q->text - q->n)
		return -1;
	q->n += (size_t)n;
	return 0;
}

/* The request zygote.py parses: the rlimit table every tier reads (rule
 * E2), with this run's values, a row a line, then an empty line. No address
 * space row: the run's memory cgroup bounds it; uid 1000 is the program's
 * own (nothing else in the VM runs as it). Closing the pipe after it means
 * the zygote can never be asked twice. */
static int release_zygote(struct run *r, struct failure *f)
{
	/* The frames carry no open-file limit: the default every tier uses. */
	const struct aj_limits l = {.cpu_sec = r->lim.cpu_sec, .memory_mb = r->lim.memory_mb,
				    .pids = r->lim.pids, .file_size_mb = r->lim.file_size_mb,
				    .open_files = OPEN_FILES};
	struct zygote_request req = {.n = 0};
	if (contract_rlimits_each(&l, false, true, add_row, &req) || req.n + 1 >= sizeof req.text)
		return fail(f, ENOBUFS, "the request to the zygote");
	req.text[req.n++] = '\n'; /* the empty line that ends it */
	int rc = write_all(r->z->request_fd, req.text, req.n);
	close(r->z->request_fd);
	r->z->request_fd = -1;
	if (rc)
		return fail(f, -rc, "send the request to the zygote");
	return 0;
}

/* Everything but us, now: on a timeout, a flood, or the program's end. */
static void stop_everything(struct run *r)
{
	kill(-1, SIGKILL);
	r->stopping = true;
	r->next_kill_us = now_us() + KILL_REPEAT_MS * 1000;
}

static void read_control(struct run *r)
{
	char line[512];
	int got;
	while ((got = control_line(r->z, line, sizeof line)) > 0) {
		int pid;
		if (sscanf(line, "pid %d", &pid) == 1 && pid > 1 && r->program == 0) {
			r->program = pid;
		} else if (strncmp(line, "fail ", 5) == 0 && !r->setup_failed) {
			r->setup_failed = true;
			fail(&r->setup, 0, "zygote: %s", line + 5);
		}
	}
	if (got < 0)
		r->control_open = false;
}

/* Reaps what has ended. The program is the zygote's child until the zygote
 * exits, and the zygote writes the program's pid before exiting: so reap the
 * zygote first and read its pid line before reaping anything else, or the
 * program could be reaped as an unknown orphan. */
static void reap(struct run *r)
{
	int st;
	if (!r->zygote_reaped) {
		pid_t p = waitpid(r->z->pid, &st, WNOHANG);
		if (p != r->z->pid)
			return; /* while it lives, it is our only child */
		r->zygote_reaped = true;
		r->zygote_status = st;
		read_control(r);
	}
	for (;;) {
		struct rusage ru;
		pid_t p = wait4(-1, &st, WNOHANG, &ru);
		if (p <= 0)
			return;
		if (p == r->program) {
			r->program_reaped = true;
			r->program_status = st;
			r->program_usage = ru;
		}
		/* anything else: an orphan of the program's, reparented to us */
	}
}

static bool run_over(const struct run *r)
{
	if (r->program_reaped)
		return true;
	/* The zygote ended and can no longer say a pid: no program started. */
	return r->zygote_reaped && r->program == 0 && !r->control_open;
}

static void supervise_program(struct run *r)
{
	const int64_t deadline = r->start_us + (int64_t)r->lim.wall_ms * 1000;
	r->control_open = true;
	while (!run_over(r)) {
		int64_t now = now_us();
		if (!r->stopping && now >= deadline) {
			r->timed_out = true;
			stop_everything(r);
		}
		if (r->stopping && now >= r->next_kill_us) {
			/* Again, for anything forked while the last one ran. */
			kill(-1, SIGKILL);
			r->next_kill_us = now + KILL_REPEAT_MS * 1000;
		}
		int64_t until = r->stopping ? r->next_kill_us : deadline;
		int timeout = until > now ? (int)((until - now + 999) / 1000) : 0;
		struct pollfd p[4] = {
			{.fd = r->sigfd, .events = POLLIN},
			{.fd = r->control_open ? r->z->control_fd : -1, .events = POLLIN},
			/* Once stopping, output no longer matters: leave full
			 * pipes alone so they cannot spin this loop. */
			{.fd = r->out.open && !r->stopping ? r->out.fd : -1, .events = POLLIN},
			{.fd = r->err.open && !r->stopping ? r->err.fd : -1, .events = POLLIN},
		};
		int n = poll(p, 4, timeout);
		if (n < 0 && errno != EINTR && !r->stopping)
			stop_everything(r); /* never run the program unwatched */
		if (n <= 0) {
			reap(r);
			continue;
		}
		if (p[0].revents) {
			struct signalfd_siginfo si;
			while (read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
				;
		}
		if (p[1].revents)
			read_control(r);
		if (r->setup_failed && !r->stopping)
			stop_everything(r);
		for (int i = 0; i < 2; i++) {
			struct stream *s = i ? &r->err : &r->out;
			if (!p[2 + i].revents)
				continue;
			bool overflow = false;
			s->open = stream_drain(s, &overflow);
			if (overflow && !r->stopping) {
				/* Stop a flood at once rather than read (and
				 * drop) it until the wall clock runs out. */
				r->overflow = true;
				stop_everything(r);
			}
		}
		reap(r);
	}
}

/* The program has ended (or never started): end what it left behind, reap
 * everything, then take what is still in the pipes. Once nothing but us is
 * left, no write end of them is open and the reads end. */
static void finish(struct run *r)
{
	int64_t give_up = now_us() + (int64_t)REAP_WAIT_MS * 1000;
	kill(-1, SIGKILL);
	for (;;) {
		reap(r);
		/* WNOWAIT: only ask whether any child is left. */
		siginfo_t si;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
			break;
		if (now_us() >= give_up)
			break; /* report anyway; the host destroys the VM */
		struct pollfd p = {.fd = r->sigfd, .events = POLLIN};
		poll(&p, 1, KILL_REPEAT_MS);
		struct signalfd_siginfo ssi;
		while (read(r->sigfd, &ssi, sizeof ssi) == (ssize_t)sizeof ssi)
			;
		kill(-1, SIGKILL);
	}
	bool ignored = false;
	bool *overflow = r->overflow ? &ignored : &r->overflow;
	if (r->out.open)
		stream_drain(&r->out, overflow);
	if (r->err.open)
		stream_drain(&r->err, overflow);
	read_control(r);
}

struct result {
	struct vm_result head;
	char message[MESSAGE_MAX];
};

/* Nothing of the program ran: the step that failed, for the host to quote. */
static void setup_failed(struct result *res, const char *message)
{
	res->head.flags |= VM_RUN_SETUP_FAILED;
	snprintf(res->message, sizeof res->message, "%s", message);
}

/* CPU from the run's cgroup: the whole tree's, killed processes included,
 * and none of the zygote's import time (spent before the child joined); the
 * program's own figure where that is larger. */
static void usage(const struct run *r, struct result *res)
{
	char buf[1024];
	const struct rusage *ru = &r->program_usage;
	res->head.cpu_us = (uint64_t)ru->ru_utime.tv_sec * 1000000 + (uint64_t)ru->ru_utime.tv_usec +
			   (uint64_t)ru->ru_stime.tv_sec * 1000000 + (uint64_t)ru->ru_stime.tv_usec;
	res->head.memory_kb = (uint64_t)ru->ru_maxrss;
	if (read_text(run_cgroup, "cpu.stat", buf, sizeof buf) == 0 &&
	    keyed_value(buf, "usage_usec") > res->head.cpu_us)
		res->head.cpu_us = keyed_value(buf, "usage_usec");
	/* The larger of the biggest process's resident set (which counts the
	 * interpreter's pages it shares with the zygote, as a fresh python3's
	 * would) and the whole tree's charge to the cgroup (which does not). */
	if (read_text(run_cgroup, "memory.peak", buf, sizeof buf) == 0 &&
	    strtoull(buf, NULL, 10) / 1024 > res->head.memory_kb)
		res->head.memory_kb = strtoull(buf, NULL, 10) / 1024;
	if (read_text(run_cgroup, "memory.events", buf, sizeof buf) == 0)
		res->head.oom_kills = keyed_value(buf, "oom_kill");
}

/* The run's facts, never their reading: the host decides the status with
 * the rules every tier shares (src/core/status.h). */
static void gather_facts(const struct run *r, struct result *res)
{
	usage(r, res);
	res->head.flags |= (r->out.truncated ? VM_STDOUT_TRUNCATED : 0) |
			   (r->err.truncated ? VM_STDERR_TRUNCATED : 0) |
			   (r->overflow ? VM_RUN_OVERFLOW : 0) | (r->timed_out ? VM_RUN_TIMED_OUT : 0);
	if (r->setup_failed) {
		setup_failed(res, r->setup.message);
		return;
	}
	if (r->program_reaped) {
		res->head.flags |= VM_RUN_ENDED;
		res->head.wstatus = r->program_status;
		return;
	}
	int zs = r->zygote_status;
	snprintf(res->message, sizeof res->message,
		 "guest: zygote ended without starting the program (%s %d)",
		 WIFEXITED(zs) ? "exit status" : "signal",
		 WIFEXITED(zs) ? WEXITSTATUS(zs) : WTERMSIG(zs));
}

static void send_result(const struct run *r, struct result *res)
{
	res->head.stdout_len = (uint32_t)r->out.len;
	res->head.stderr_len = (uint32_t)r->err.len;
	res->head.message_len = (uint32_t)strlen(res->message);
	res->head.wall_us = (uint64_t)(now_us() - r->start_us);
	struct iovec parts[4] = {
		{.iov_base = &res->head, .iov_len = sizeof res->head},
		{.iov_base = r->out.buf, .iov_len = r->out.len},
		{.iov_base = r->err.buf, .iov_len = r->err.len},
		{.iov_base = res->message, .iov_len = res->head.message_len},
	};
	int rc = send_frame(VM_RESULT, parts, 4);
	if (rc)
		fprintf(stderr, "agentjail-guest: send VM_RESULT: %s\n", errname(-rc));
}

/* Every step before the program starts; the first failure ends the run. */
static int prepare(struct run *r, struct failure *f)
{
	int rc;
	if ((rc = check_run_limits(&r->lim, f)))
		return rc;
	refresh_clock();
	if ((rc = refresh_entropy(r->code, r->lim.code_len, f)) ||
	    (rc = make_workspace(r->lim.disk_mb, r->code, r->lim.code_len, f)) ||
	    (rc = set_cgroup_limits(r->lim.memory_mb, r->lim.pids, f)) ||
	    (rc = release_zygote(r, f)))
		return rc;
	return 0;
}

static void serve_one_run(const struct vm_frame_header *h, struct zygote *z, int sigfd)
{
	struct run r;
	struct result res;
	struct failure f;
	memset(&r, 0, sizeof r);
	memset(&res, 0, sizeof res);
	r.z = z;
	r.sigfd = sigfd;
	r.out = (struct stream){.fd = z->out_fd, .open = true};
	r.err = (struct stream){.fd = z->err_fd, .open = true};

	int rc = receive(h, &r, &f);
	if (rc == 0) {
		r.out.limit = r.err.limit = (size_t)r.lim.output_kb * 1024;
		rc = prepare(&r, &f);
	}
	if (rc) {
		/* Nothing of the program has run; make sure nothing will. */
		kill(-1, SIGKILL);
		setup_failed(&res, f.message);
		if (r.start_us == 0)
			r.start_us = now_us();
	} else {
		supervise_program(&r);
		finish(&r);
		gather_facts(&r, &res);
	}
	send_result(&r, &res);
	free(r.code);
}

int main(void)
{
	struct failure f;
	struct zygote z;

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
	int sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	/* A write to a pipe whose reader died returns EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	if (sigfd < 0)
		power_off("guest: signalfd: cannot watch children");
	if (load_modules(&f) || open_port(&f) || make_run_cgroup(&f) ||
	    start_zygote(&z, &f))
		power_off(f.message);
	if (await_zygote(&z, &f)) {
		echo_to_console(z.err_fd);
		/* Tell the host at once that this image cannot run Python. */
		struct vm_ready ready = {.version = VM_PROTOCOL_VERSION, .python_ok = 0};
		struct iovec part = {.iov_base = &ready, .iov_len = sizeof ready};
		send_frame(VM_READY, &part, 1);
		power_off(f.message);
	}
	/* Whatever the interpreter said while starting is not the program's. */
	echo_to_console(z.out_fd);
	echo_to_console(z.err_fd);
	if (minimal_dev(&f))
		power_off(f.message);
	/* The initramfs holds nothing the run may change: read-only, so no
	 * directory an image brought (world-writable or not) can hold bytes
	 * outside the disk limit, and nosuid, nodev for anything it carries. */
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
	/* The snapshot is taken here, while this reads. */
	struct vm_frame_header h;
	if ((rc = port_read(&h, sizeof h)))
		power_off("guest: read the host's first frame");
	if (h.type == VM_SESSION_START) {
		/* A session: the zygote's one interpreter is not the session's
		 * (see session.c); it goes, and calls follow until the host
		 * destroys the VM. */
		kill(z.pid, SIGKILL);
		waitpid(z.pid, NULL, 0);
		close(z.request_fd);
		close(z.control_fd);
		close(z.out_fd);
		close(z.err_fd);
		serve_session(&h, sigfd);
	} else {
		serve_one_run(&h, &z, sigfd);
	}
	/* One run (or session) per VM: the host destroys it now. Idle, never
	 * exit. */
	for (;;)
		pause();
}
