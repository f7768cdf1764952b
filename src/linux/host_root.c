/* The process tier's view, an allow-list, as isolate's rules.c and
 * bubblewrap build theirs: a tmpfs of the run's own becomes the root, and
 * only what is named below goes into it, read-only. A run started in a
 * project directory sees neither it, nor its parent, nor another checkout,
 * nor /opt, /var, /srv, /home or any world-readable file of the host's
 * outside these few: what is not named is not there. A deployer shows more
 * on purpose with --ro-bind (binds.c). Built in init, in the run's private
 * mount namespace, then pivoted into (jail_pivot_to), so no path leads back
 * to the host's tree. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binds.h"
#include "host_root.h"
#include "mounts.h"

/* Where the root is built: the host's /tmp, covered in this mount namespace
 * only (a directory every host has; no run sees the host's /tmp anyway).
 * What the view shows is cloned before the tmpfs covers it, so a source
 * under the host's /tmp is still reached. */
static const char root[] = "/tmp";

/* The host's paths the view shows, read-only, at the same path. One that is
 * absent stays absent; a symlink is made again as the same symlink
 * (merged-/usr Debian's /bin -> usr/bin, /etc/localtime -> the zone in
 * /usr/share/zoneinfo); a directory or file is a read-only clone. */
static const char *const shown[] = {
	/* The interpreter, its standard library and packages, the C libraries
	 * and the tools a program may start (sh, ls, pip's compilers). */
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	/* The dynamic linker's index of those libraries: without it each
	 * program searches only the default directories, slower and without
	 * what /etc/ld.so.conf.d adds. */
	"/etc/ld.so.cache",
	/* The machine's time zone, for time.localtime. */
	"/etc/localtime",
	/* CA certificates and openssl.cnf: OpenSSL's directory (/usr/lib/ssl)
	 * links here, so HTTPS through egress verifies as on the host. Its
	 * private/ keeps its mode (root only). */
	"/etc/ssl",
	/* Debian's alternatives: /usr/bin/awk, pager, editor and the like are
	 * links through here, to files in /usr; nothing /usr does not name. */
	"/etc/alternatives",
	/* Debian's matplotlib reads its defaults from here, not from its
	 * package's data directory. */
	"/etc/matplotlibrc",
};
#define SHOWN (sizeof shown / sizeof shown[0])

/* Not shown, and why: the host's passwd, group, shadow (they name its users:
 * the run's own instead, jail_write_users); hosts (names the machines of
 * the host's network: the run's own, below); resolv.conf (names the host's
 * DNS servers, and no resolver is reachable: the network namespace is
 * empty, and egress resolves names in the host's proxy); nsswitch.conf (may
 * name modules that ask a host daemon: systemd, sssd, LDAP); services,
 * protocols, mime.types (Python carries its own tables; a deployer may
 * --ro-bind them); and the rest of /etc, the host's configuration and keys. */
static const struct {
	const char *name, *text;
} own_etc[] = {
	/* localhost, and the run's hostname as Debian writes it. */
	{"hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
		  "127.0.1.1\tsandbox\n"},
	/* The run's own files answer every lookup; names go to DNS, which
	 * fails at once (no resolver), never to a host daemon. */
	{"nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\ngshadow: files\n"
			  "hosts: files dns\nnetworks: files\nprotocols: files\n"
			  "services: files\nethers: files\nrpc: files\n"},
};

/* The directories of the run's own, on which jail_populate_root mounts /tmp,
 * /var/tmp (a place of its own, as in an image, on the same tmpfs and
 * --disk bound as /tmp), /dev and /proc. */
static const char *const own_dirs[] = {"etc", "tmp", "dev", "proc", "var", "var/tmp"};

/* Places an interpreter's prefix may not lie in: each run gets them empty
 * or its own. */
static const char *const run_places[] = {"/tmp", "/var/tmp", "/dev", "/proc", "/sys"};

static bool in_system_dirs(const char *p)
{
	static const char *const dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32",
					   "/lib64", "/libx32"};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (path_is_under(p, dirs[i]))
			return true;
	return false;
}

/* The prefix of an interpreter at p: /opt/py for /opt/py/bin/python3, or
 * its directory where that would be /. */
static int prefix_of(const char *p, char *out, size_t n, struct aj_error *err)
{
	size_t len = strlen(p);
	if (len >= n)
		return error_set(err, -ENAMETOOLONG, "python: %s: path too long", p);
	memcpy(out, p, len + 1);
	char *slash = strrchr(out, '/');
	if (slash)
		*slash = '\0'; /* its directory: /opt/py/bin */
	slash = strrchr(out, '/');
	if (slash && slash != out)
		*slash = '\0'; /* and the one above: /opt/py */
	if (!out[0])
		return error_set(err, -EINVAL,
				 "python: %s: an interpreter in / has no directory of its own to "
				 "show",
				 p);
	for (size_t i = 0; i < sizeof run_places / sizeof run_places[0]; i++)
		if (path_is_under(out, run_places[i]))
			return error_set(err, -EINVAL,
					 "python: %s lies in %s, which every run gets empty or its "
					 "own: install it elsewhere",
					 p, run_places[i]);
	/* Shown whole, it would cover the run's own /etc (its passwd) or
	 * another of its places with the host's. */
	for (size_t i = 0; i < sizeof own_dirs / sizeof own_dirs[0]; i++) {
		char own[32];
		snprintf(own, sizeof own, "/%s", own_dirs[i]);
		if (path_is_under(own, out))
			return error_set(err, -EINVAL,
					 "python: %s: its prefix %s holds the run's own %s: "
					 "install it elsewhere",
					 p, out, own);
	}
	return 0;
}

int host_root_prepare(struct host_root *r, const char *python, struct aj_error *err)
{
	r->prefix[0][0] = r->prefix[1][0] = '\0';
	int rc;
	if (!in_system_dirs(python) &&
	    (rc = prefix_of(python, r->prefix[0], sizeof r->prefix[0], err)))
		return rc;
	/* A venv's python is a link to the system's: its prefix (pyvenv.cfg,
	 * site-packages) above, the file it leads to here. */
	char real[PATH_MAX];
	if (!realpath(python, real))
		return error_set(err, -errno, "python: %s: %s", python, errno_name(errno));
	if (in_system_dirs(real) || (r->prefix[0][0] && path_is_under(real, r->prefix[0])))
		return 0;
	return prefix_of(real, r->prefix[1], sizeof r->prefix[1], err);
}

/* One path of the view, taken from the host before anything covers it: a
 * symlink's target in link, else a read-only clone in *fd. Absent: neither. */
struct taken {
	int fd;
	bool dir;
	char link[256];
};

static int take_path(const char *path, struct taken *t, struct setup_error *e)
{
	struct stat st;
	t->fd = -1;
	t->link[0] = '\0';
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : setup_fail(e, errno, "view: %s", path);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(path, t->link, sizeof t->link - 1);
		if (n < 0 || (size_t)n >= sizeof t->link - 1)
			return setup_fail(e, n < 0 ? errno : ENAMETOOLONG, "view: readlink %s",
					  path);
		t->link[n] = '\0';
		return 0;
	}
	t->dir = S_ISDIR(st.st_mode);
	if (!t->dir && !S_ISREG(st.st_mode))
		return 0; /* a device or socket is no part of a view */
	return bind_clone_readonly(path, "view", &t->fd, e);
}

/* Makes root + path in the new root (its own tmpfs, nothing of the host's
 * in it): the directories on the way, then a directory, a file or a link. */
static int make_in_root(const char *path, const struct taken *t, struct setup_error *e)
{
	char at[PATH_MAX];
	int n = snprintf(at, sizeof at, "%s%s", root, path);
	if (n < 0 || (size_t)n >= sizeof at)
		return setup_fail(e, ENAMETOOLONG, "view: %s", path);
	for (char *c = at + sizeof root; (c = strchr(c, '/')); c++) {
		*c = '\0';
		int rc = mkdir(at, 0755);
		*c = '/';
		if (rc < 0 && errno != EEXIST)
			return setup_fail(e, errno, "view: mkdir %s", at + sizeof root - 1);
	}
	if (t->link[0])
		return symlink(t->link, at) < 0 ? setup_fail(e, errno, "view: symlink %s", path)
						 : 0;
	if (t->dir)
		return mkdir(at, 0755) < 0 && errno != EEXIST
			       ? setup_fail(e, errno, "view: mkdir %s", path)
			       : 0;
	int fd = open(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return setup_fail(e, errno, "view: create %s", path);
	close(fd);
	return 0;
}

/* The root's own skeleton: its directories and /etc's files. */
static int make_skeleton(const struct jail_spec *s, struct setup_error *e)
{
	char p[PATH_MAX];
	int rc;
	for (size_t i = 0; i < sizeof own_dirs / sizeof own_dirs[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", root, own_dirs[i]);
		if (mkdir(p, 0755) < 0)
			return setup_fail(e, errno, "view: mkdir %s", p);
	}
	snprintf(p, sizeof p, "%s/etc", root);
	if ((rc = jail_write_users(s, p, e)))
		return rc;
	for (size_t i = 0; i < sizeof own_etc / sizeof own_etc[0]; i++) {
		snprintf(p, sizeof p, "%s/etc/%s", root, own_etc[i].name);
		if ((rc = jail_write_new_file(p, own_etc[i].text, e)))
			return rc;
	}
	return 0;
}

static int build(const struct jail_spec *s, struct taken *t,
		 const char *const *paths, size_t n, struct bind_trees *binds,
		 struct setup_error *e)
{
	int rc;
	/* Everything shown is taken while the host's paths still resolve:
	 * the deployer's first, then the system's. */
	if ((rc = binds_open(s->cfg, binds, e)))
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((rc = take_path(paths[i], &t[i], e)))
			return rc;
	/* Bounded: it holds a few small files and mount points. nosuid and
	 * nodev: nothing in it may count as either. */
	if (mount("agentjail", root, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=256k,nr_inodes=1024,mode=755") < 0)
		return setup_fail(e, errno, "view: tmpfs on %s", root);
	if ((rc = make_skeleton(s, e)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (t[i].fd < 0 && !t[i].link[0])
			continue;
		if ((rc = make_in_root(paths[i], &t[i], e)))
			return rc;
		char at[PATH_MAX];
		snprintf(at, sizeof at, "%s%s", root, paths[i]);
		if (t[i].fd >= 0 && move_mount(t[i].fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return setup_fail(e, errno, "view: mount %s", paths[i]);
	}
	if ((rc = binds_attach_own_root(root, s->cfg, binds, e)))
		return rc;
	/* The root itself read-only (its /etc files are the run's identity),
	 * nosuid and nodev, and again every mount in it: no way to write a byte
	 * of the view, only in the run's own places mounted next. */
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	};
	if (mount_setattr(AT_FDCWD, root, AT_RECURSIVE, &attr, sizeof attr) < 0)
		return setup_fail(e, errno, "view: make %s read-only", root);
	/* The run's /tmp, /dev and /proc. Its passwd and group are written
	 * above, as files of the root: no mount over them. */
	struct jail_spec own = *s;
	own.own_users = false;
	if ((rc = jail_populate_root(&own, root, e)))
		return rc;
	return jail_pivot_to(root, e);
}

int host_root_build(const struct jail_spec *s, const struct host_root *r, struct setup_error *e)
{
	const char *paths[SHOWN + 2];
	struct taken t[SHOWN + 2];
	size_t n = 0;
	for (size_t i = 0; i < SHOWN; i++)
		paths[n++] = shown[i];
	for (size_t i = 0; i < 2; i++)
		if (r->prefix[i][0])
			paths[n++] = r->prefix[i];
	for (size_t i = 0; i < n; i++)
		t[i].fd = -1;
	struct bind_trees binds = {.n = 0};
	int rc = build(s, t, paths, n, &binds, e);
	for (size_t i = 0; i < n; i++)
		if (t[i].fd >= 0)
			close(t[i].fd);
	binds_close(&binds);
	return rc;
}
