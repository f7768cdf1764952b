#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mounts.h"

int mount_make_private(struct setup_error *e)
{
	/* Without this, mounts made in the sandbox would propagate back to a
	 * shared host tree (systemd makes / shared), and host mounts would
	 * appear inside mid-run. */
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		return setup_fail(e, errno, "mount namespace: make / private");
	return 0;
}

int mount_tree_readonly(const char *path, struct setup_error *e)
{
	/* Every mount below path becomes read-only and nosuid in this
	 * namespace only: the program cannot write a byte to the host's
	 * filesystems even where permissions would let its uid (world-writable
	 * directories such as /run/lock), and no setuid binary elevates. nodev
	 * is left off because /dev/null must stay usable. */
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
	};
	if (mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof attr) < 0)
		return setup_fail(e, errno, "read-only host: mount_setattr %s", path);
	return 0;
}

int mount_tmpfs(const char *path, uint32_t size_mb, uint32_t mode, struct setup_error *e)
{
	char opts[96];
	/* size= caps the bytes; nr_inodes caps the files, whose inodes would
	 * otherwise cost kernel memory that size= does not count. */
	snprintf(opts, sizeof opts, "size=%um,nr_inodes=%u,mode=%o", size_mb,
		 size_mb * 256u + 64u, mode);
	if (mount("agentjail", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return setup_fail(e, errno, "tmpfs on %s", path);
	return 0;
}

int mount_hide(const char *path, struct setup_error *e)
{
	if (mount("agentjail", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=4k,nr_inodes=8,mode=755") < 0)
		return setup_fail(e, errno, "hide %s", path);
	return 0;
}

int mount_bind(const char *src, const char *dst, struct setup_error *e)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return setup_fail(e, errno, "bind %s on %s", src, dst);
	/* A bind mount keeps the source's flags; restate the safe ones. */
	if (mount("none", dst, "none", MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, NULL) < 0)
		return setup_fail(e, errno, "remount %s nosuid,nodev", dst);
	return 0;
}

int mount_proc(const char *path, struct setup_error *e)
{
	/* A procfs of the sandbox's own pid namespace: the program sees its own
	 * processes and none of the host's. */
	if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return setup_fail(e, errno, "mount /proc");
	return 0;
}

int make_dir(const char *path, uint32_t mode, uid_t uid, gid_t gid, struct setup_error *e)
{
	if (mkdir(path, 0700) < 0)
		return setup_fail(e, errno, "mkdir %s", path);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return setup_fail(e, errno, "open %s", path);
	int rc = 0;
	if (fchown(fd, uid, gid) < 0)
		rc = setup_fail(e, errno, "chown %s", path);
	else if (fchmod(fd, mode) < 0)
		rc = setup_fail(e, errno, "chmod %s", path);
	close(fd);
	return rc;
}
