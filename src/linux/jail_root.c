/* jail_populate_root: the run's own writable places, /dev, /proc and user
 * files, under a tier's view (each tier's setup_root calls it), and the
 * pivot into a view built under a directory. Runs in
 * init, after no allocation is allowed any more: stack buffers only. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jail.h"
#include "mounts.h"

/* The program, from a file or socket of the host's (a stack buffer: init
 * may not allocate): len bytes, or to the end (UINT64_MAX). The zygote
 * never reads it: no run's code is ever in the zygote's memory, which
 * every later run gets a copy of. */
static int copy_code(int from, int to, uint64_t len)
{
	char buf[16384];
	while (len > 0) {
		ssize_t n = read(from, buf, len < sizeof buf ? (size_t)len : sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return len == UINT64_MAX ? 0 : -EIO; /* ended before its length */
		int rc = write_full(to, buf, (size_t)n);
		if (rc)
			return rc;
		if (len != UINT64_MAX)
			len -= (uint64_t)n;
	}
	return 0;
}

int jail_write_program(const struct jail_spec *s, int from, uint64_t len, const char *path,
		       struct setup_error *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return setup_fail(e, errno, "workspace: create %s", JAIL_PROGRAM);
	int rc = from >= 0 ? copy_code(from, fd, len) : 0;
	if (rc) {
		close(fd);
		return setup_fail(e, -rc, "workspace: write %s", JAIL_PROGRAM);
	}
	if (fchown(fd, s->userns ? (uid_t)-1 : s->uid, s->userns ? (gid_t)-1 : s->gid) < 0)
		rc = setup_fail(e, errno, "workspace: chown %s", JAIL_PROGRAM);
	close(fd);
	return rc;
}

/* A real directory (not a symlink, which mount would follow) that exists. */
static bool is_plain_dir(const char *path)
{
	struct stat st;
	return path[0] && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Who is who in the run, in an image's words (images/build-root.sh): root,
 * nobody, and the run's uid and gid as "sandbox", so that the program's
 * getpwuid and `id` resolve and ls shows a name. */
static void users_text(const struct jail_spec *s, char *passwd, size_t pn, char *group,
		       size_t gn)
{
	int n = snprintf(passwd, pn, "root:x:0:0:root:/root:/bin/sh\n"
				     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	if (s->uid != 0 && s->uid != 65534)
		snprintf(passwd + n, pn - (size_t)n, "sandbox:x:%u:%u:sandbox:" JAIL_WORKSPACE
			 ":/bin/sh\n", (unsigned)s->uid, (unsigned)s->gid);
	n = snprintf(group, gn, "root:x:0:\nnogroup:x:65534:\n");
	if (s->gid != 0 && s->gid != 65534)
		snprintf(group + n, gn - (size_t)n, "sandbox:x:%u:\n", (unsigned)s->gid);
}

int jail_write_new_file(const char *path, const char *text, struct setup_error *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return setup_fail(e, errno, "create %s", path);
	int rc = write_full(fd, text, strlen(text));
	close(fd);
	return rc ? setup_fail(e, -rc, "write %s", path) : 0;
}

/* The host's user and group files name its users (a login name is half of
 * a credential, and says whose machine this is): each is covered,
 * read-only, with the run's own, written to the run's tmpfs at `tmp`
 * (whose root the program never sees). The backups (passwd-, group-) are
 * as readable and get the same; subuid and subgid, naming users too, are
 * covered with an empty file. Absent ones stay absent. */
static int cover_user_files(const struct jail_spec *s, const char *root, const char *tmp,
			    struct setup_error *e)
{
	static const struct {
		const char *name;
		int text; /* 0 passwd, 1 group, 2 empty */
	} files[] = {{"passwd", 0}, {"passwd-", 0}, {"group", 1},
		     {"group-", 1}, {"subuid", 2},  {"subgid", 2}};
	static const char *const sources[] = {"users-passwd", "users-group", "users-empty"};
	char passwd[256], group[128], src[3][300], dst[300];
	users_text(s, passwd, sizeof passwd, group, sizeof group);
	const char *const texts[] = {passwd, group, ""};
	int rc;
	for (int i = 0; i < 3; i++) {
		snprintf(src[i], sizeof src[i], "%s/%s", tmp, sources[i]);
		if ((rc = jail_write_new_file(src[i], texts[i], e)))
			return rc;
	}
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct stat st;
		snprintf(dst, sizeof dst, "%s/etc/%s", root, files[i].name);
		/* stat, not lstat: a symlinked file is covered at its target,
		 * which is what reading the link gives. */
		if (stat(dst, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if ((rc = mount_file_readonly(src[files[i].text], dst, e)))
			return rc;
	}
	return 0;
}

int jail_write_users(const struct jail_spec *s, const char *etc, struct setup_error *e)
{
	char passwd[256], group[128], path[300];
	int rc;
	users_text(s, passwd, sizeof passwd, group, sizeof group);
	snprintf(path, sizeof path, "%s/passwd", etc);
	if ((rc = jail_write_new_file(path, passwd, e)))
		return rc;
	snprintf(path, sizeof path, "%s/group", etc);
	return jail_write_new_file(path, group, e);
}

int jail_pivot_to(const char *root, struct setup_error *e)
{
	/* pivot_root(".", ".") stacks the old root under the new one; detaching
	 * it then leaves no path back to the host. */
	if (chdir(root) < 0)
		return setup_fail(e, errno, "view: chdir %s", root);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return setup_fail(e, errno, "view: pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return setup_fail(e, errno, "view: detach the old root");
	if (chdir("/") < 0)
		return setup_fail(e, errno, "view: chdir /");
	return 0;
}

int jail_populate_root(const struct jail_spec *s, const char *root, struct setup_error *e)
{
	const uint32_t disk = s->cfg->limits.disk_mb;
	const uid_t keep = (uid_t)-1;
	char tmp[256], dev[256], p1[300], p2[300];
	int rc;

	snprintf(tmp, sizeof tmp, "%s/tmp", root);
	snprintf(dev, sizeof dev, "%s/dev", root);
	/* Its own /dev, built on /tmp before the scratch space goes there. */
	if ((rc = mount_minimal_dev(tmp, dev, e)))
		return rc;
	/* One tmpfs holds all the run may write, so --disk bounds the sum. It
	 * goes on /tmp, gets a directory for each writable place, and its root
	 * is then covered by its own t/ so only those places are reachable. */
	if ((rc = mount_tmpfs(tmp, disk, 0755, e)))
		return rc;
	static const char *const dirs[] = {"t", "v", "s"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p1, sizeof p1, "%s/%s", tmp, dirs[i]);
		if ((rc = make_dir(p1, 01777, keep, keep, e)))
			return rc;
	}
	snprintf(p1, sizeof p1, "%s/t/work", tmp);
	if ((rc = make_dir(p1, 0700, s->userns ? keep : s->uid, s->userns ? keep : s->gid, e)))
		return rc;
	/* A warm run's program now, from the host's file; a one-shot run's
	 * and a warm run made ahead's after "go" (jail_run.c, jail_warm.c);
	 * the zygote's workspace holds an empty one. */
	snprintf(p1, sizeof p1, "%s/t/work/" JAIL_PROGRAM, tmp);
	if (((s->mode == JAIL_WARM_RUN && !s->code_after_go) || s->mode == JAIL_ZYGOTE) &&
	    (rc = jail_write_program(s, s->mode == JAIL_WARM_RUN ? s->code_fd : -1, UINT64_MAX,
				     p1, e)))
		return rc;
	if (s->own_users && (rc = cover_user_files(s, root, tmp, e)))
		return rc;
	/* /var/tmp absent, or a symlink (to /tmp): nothing to shadow there. */
	snprintf(p2, sizeof p2, "%s/var/tmp", root);
	snprintf(p1, sizeof p1, "%s/v", tmp);
	if (is_plain_dir(p2) && (rc = mount_bind(p1, p2, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/s", tmp);
	snprintf(p2, sizeof p2, "%s/shm", dev);
	if ((rc = mount_bind(p1, p2, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/t", tmp);
	if ((rc = mount_bind(p1, tmp, e)))
		return rc;
	snprintf(p1, sizeof p1, "%s/proc", root);
	return mount_proc(p1, e);
}
