/* The deployer's read-only host paths (cfg.ro_binds, src/core/ro_bind.c),
 * mounted into a jail's view by its init. Two steps, because the view hides
 * places a HOST may lie in (the process tier covers /home, a container's
 * root replaces the host's): each HOST is first cloned as a detached mount
 * tree while the host's paths still resolve, then attached where the run
 * sees it once the view is built. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"
#include "binds.h"

int bind_clone_readonly(const char *host, const char *what, int *fd, struct setup_error *e)
{
	/* A copy of what is mounted at host and below it (AT_RECURSIVE: a
	 * directory's submounts show as on the host, not the empty
	 * directories under them). */
	*fd = open_tree(AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (*fd < 0)
		return setup_fail(e, errno, "%s: clone %s", what, host);
	/* Read-only, every mount in it: nothing the program does reaches the
	 * host's files. nosuid and nodev: a setuid binary or device node there
	 * gives nothing. Set on the clone, so the run's copy alone changes. */
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	};
	if (mount_setattr(*fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
		return setup_fail(e, errno, "%s: make %s read-only", what, host);
	return 0;
}

int binds_open(const struct aj_config *cfg, struct bind_trees *t, struct setup_error *e)
{
	t->n = 0;
	for (uint32_t i = 0; i < cfg->ro_bind_count && i < RO_BIND_SLOTS; i++) {
		char host[RO_BIND_PATH_MAX], target[RO_BIND_PATH_MAX];
		ro_bind_split(cfg->ro_binds[i], host, target);
		int rc = bind_clone_readonly(host, "ro_bind", &t->fd[t->n], e);
		if (t->fd[t->n] >= 0)
			t->n++;
		if (rc)
			return rc;
	}
	return 0;
}

void binds_close(struct bind_trees *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		close(t->fd[i]);
	t->n = 0;
}

static bool dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	struct dirent *de;
	int entries = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries++;
	closedir(d);
	return entries == 0;
}

/* Staged directories: empty ones of the view covered with a tmpfs that
 * holds only mount points, made read-only once every bind is in. own_dev:
 * the filesystem of a root the run builds for itself (the process tier's
 * tmpfs, binds_attach_own_root), whose directories take mount points as
 * they are; 0: none. */
struct staging {
	char dir[RO_BIND_SLOTS][2 * RO_BIND_PATH_MAX];
	uint32_t n;
	dev_t own_dev;
};

static bool is_staged(const struct staging *s, const char *path)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (path_is_under(path, s->dir[i]))
			return true;
	struct stat st;
	/* lstat: a symlink is never the run's own directory. */
	return s->own_dev && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_dev == s->own_dev;
}

/* Makes at (root + target) a mount point for a directory or a file. The
 * view's own paths are never followed through a symlink (an image's link
 * would resolve on the host before the pivot), and a missing one is made
 * only where nothing of the view is covered: in an empty directory, which
 * gets a tmpfs of its own. */
static int make_mount_point(const char *root, const char *target, bool dir, struct staging *s,
			    struct setup_error *e)
{
	char path[2 * RO_BIND_PATH_MAX];
	size_t rl = strlen(root);
	memcpy(path, root, rl + 1);
	const char *c = target;
	while (*c) {
		const char *next = strchr(c + 1, '/');
		size_t n = next ? (size_t)(next - c) : strlen(c);
		bool last = !next;
		char parent[sizeof path];
		memcpy(parent, path, sizeof parent);
		if (!parent[0])
			strcpy(parent, "/");
		size_t pl = strlen(path);
		memcpy(path + pl, c, n);
		path[pl + n] = '\0';
		c += n;

		struct stat st;
		if (lstat(path, &st) == 0) {
			if (S_ISLNK(st.st_mode))
				return setup_fail(e, ELOOP, "ro_bind: %s: %s is a symlink in the view",
						  target, path + rl);
			if (!last && !S_ISDIR(st.st_mode))
				return setup_fail(e, ENOTDIR, "ro_bind: %s: %s is not a directory",
						  target, path + rl);
			if (last && dir != S_ISDIR(st.st_mode))
				return setup_fail(e, dir ? ENOTDIR : EISDIR,
						  "ro_bind: %s is a %s in the view, HOST a %s", target,
						  dir ? "file" : "directory", dir ? "directory" : "file");
			continue;
		}
		if (errno != ENOENT)
			return setup_fail(e, errno, "ro_bind: %s: %s", target, path + rl);
		if (!is_staged(s, parent)) {
			if (!dir_is_empty(parent) || s->n == RO_BIND_SLOTS)
				return setup_fail(e, ENOENT,
						  "ro_bind: %s is not in the view, and %s holds files "
						  "of its own (choose a path that exists there, or one "
						  "under an empty directory such as /mnt)",
						  target, parent[rl] ? parent + rl : "/");
			/* Covers nothing (the directory is empty); bounded, and
			 * read-only before the program starts. */
			if (mount("agentjail", parent, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "size=16k,nr_inodes=64,mode=755") < 0)
				return setup_fail(e, errno, "ro_bind: tmpfs on %s", parent);
			snprintf(s->dir[s->n++], sizeof s->dir[0], "%s", parent);
		}
		int rc = (!last || dir) ? mkdir(path, 0755) : mknod(path, S_IFREG | 0444, 0);
		if (rc < 0)
			return setup_fail(e, errno, "ro_bind: make %s", path + rl);
	}
	return 0;
}

static int attach(const char *root, const struct aj_config *cfg, struct bind_trees *t,
		  struct staging *s, struct setup_error *e)
{
	int rc = 0;
	for (uint32_t i = 0; i < t->n && !rc; i++) {
		char host[RO_BIND_PATH_MAX], target[RO_BIND_PATH_MAX], at[2 * RO_BIND_PATH_MAX];
		ro_bind_split(cfg->ro_binds[i], host, target);
		snprintf(at, sizeof at, "%s%s", root, target);
		struct stat st;
		if (fstat(t->fd[i], &st) < 0)
			return setup_fail(e, errno, "ro_bind: stat %s", host);
		if ((rc = make_mount_point(root, target, S_ISDIR(st.st_mode), s, e)))
			break;
		if (move_mount(t->fd[i], "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			rc = setup_fail(e, errno, "ro_bind: mount %s on %s", host, target);
	}
	for (uint32_t i = 0; i < s->n && !rc; i++) {
		/* The staging tmpfs takes no file of the program's. */
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
		if (mount_setattr(AT_FDCWD, s->dir[i], 0, &attr, sizeof attr) < 0)
			rc = setup_fail(e, errno, "ro_bind: make %s read-only", s->dir[i]);
	}
	binds_close(t);
	return rc;
}

int binds_attach(const char *root, const struct aj_config *cfg, struct bind_trees *t,
		 struct setup_error *e)
{
	struct staging s = {.n = 0, .own_dev = 0};
	return attach(root, cfg, t, &s, e);
}

int binds_attach_own_root(const char *root, const struct aj_config *cfg, struct bind_trees *t,
			  struct setup_error *e)
{
	struct staging s = {.n = 0};
	struct stat st;
	if (stat(root, &st) < 0) {
		binds_close(t);
		return setup_fail(e, errno, "ro_bind: stat %s", root);
	}
	s.own_dev = st.st_dev;
	return attach(root, cfg, t, &s, e);
}
