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

int mount_file_readonly(const char *src, const char *dst, struct setup_error *e)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return setup_fail(e, errno, "bind %s on %s", src, dst);
	/* Read-only: the program may not rewrite who it is (its source lies
	 * in the run's writable tmpfs). */
	if (mount("none", dst, "none",
		  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return setup_fail(e, errno, "remount %s read-only", dst);
	return 0;
}

static int bind_device(const char *name, const char *staging, struct setup_error *e)
{
	char host[64], dst[128];
	snprintf(host, sizeof host, "/dev/%s", name);
	snprintf(dst, sizeof dst, "%s/%s", staging, name);
	struct stat st;
	/* Only the real device node: a symlink or a file planted there is not
	 * what the program is promised. */
	if (lstat(host, &st) < 0 || !S_ISCHR(st.st_mode))
		return setup_fail(e, ENODEV, "/dev: %s is not a character device", host);
	/* A node of our own where we may make one (root): no mount at all.
	 * In a user namespace mknod is refused, and a bind of the host's node
	 * takes its place. */
	if (mknod(dst, S_IFCHR | 0666, st.st_rdev) == 0) {
		if (chmod(dst, 0666) < 0) /* past the umask */
			return setup_fail(e, errno, "/dev: chmod %s", dst);
		return 0;
	}
	if (errno != EPERM)
		return setup_fail(e, errno, "/dev: mknod %s", dst);
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return setup_fail(e, errno, "/dev: create %s", dst);
	close(fd);
	if (mount(host, dst, NULL, MS_BIND, NULL) < 0)
		return setup_fail(e, errno, "/dev: bind %s", host);
	/* Writable (the host /dev is read-only here by now), never setuid or
	 * executable; nodev would make it useless. */
	if (mount("none", dst, "none", MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NOEXEC, NULL) < 0)
		return setup_fail(e, errno, "/dev: remount %s", dst);
	return 0;
}

int mount_minimal_dev(const char *staging, const char *target, struct setup_error *e)
{
	static const char *const devices[] = {"null", "zero", "full", "random", "urandom"};
	static const char *const links[][2] = {
		{"pts/ptmx", "ptmx"},       {"/proc/self/fd", "fd"},
		{"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
		{"/proc/self/fd/2", "stderr"},
	};
	char path[128];
	int rc;

	if (mount("agentjail", staging, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755") < 0)
		return setup_fail(e, errno, "/dev: tmpfs");
	for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
		if ((rc = bind_device(devices[i], staging, e)))
			return rc;
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", staging, links[i][1]);
		if (symlink(links[i][0], path) < 0)
			return setup_fail(e, errno, "/dev: symlink %s", links[i][1]);
	}
	snprintf(path, sizeof path, "%s/shm", staging);
	if (mkdir(path, 01777) < 0)
		return setup_fail(e, errno, "/dev: mkdir shm");
	snprintf(path, sizeof path, "%s/pts", staging);
	if (mkdir(path, 0755) < 0)
		return setup_fail(e, errno, "/dev: mkdir pts");
	/* A devpts instance of its own: the host's terminals are not in it, and
	 * max= bounds how many of the host's ptys (a global pool) it can take. */
	if (mount("devpts", path, "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620,max=16") < 0)
		return setup_fail(e, errno, "/dev: devpts");
	if (mount("none", staging, "none", MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		  "size=64k,nr_inodes=64,mode=755") < 0)
		return setup_fail(e, errno, "/dev: remount read-only");
	if (mount(staging, target, NULL, MS_MOVE, NULL) < 0)
		return setup_fail(e, errno, "/dev: move into place");
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
