/* The program's writable places: one size-limited tmpfs (the disk limit)
 * for /tmp, /var/tmp, /dev/shm and the workspace, as on the other tiers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

#define PROGRAM WORKSPACE "/main.py"

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
	int rc = write_full(fd, code, code_len);
	if (rc == 0 && fchown(fd, VM_GUEST_UID, VM_GUEST_UID) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		return fail(f, -rc, "write %s", PROGRAM);
	return 0;
}
