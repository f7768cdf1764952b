/* config.json for runsc. What each field keeps out is said beside it; the
 * sentry (gVisor's kernel) enforces everything here except the memory,
 * pids and CPU limits, which the host's cgroup around the whole sandbox
 * holds (src/tiers/gvisor.c). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../boot/egress.h"
#include "../boot/spec.h"
#include "../core/contract.h"
#include "../linux/report.h"
#include "bundle.h"
#include "gvisor_preload.inc" /* gvisor_preload_so: src/gvisor/preload/no_automount.c */

/* Where the shim is inside: under the sandbox's own /dev tmpfs, where the
 * sentry makes the mount point (never in the image). */
#define PRELOAD_AT "/dev/agentjail-no-automount.so"

static json_t *tmpfs(const char *where, uint64_t kb)
{
	char size[48];
	snprintf(size, sizeof size, "size=%lluk", (unsigned long long)kb);
	/* Scratch space holds data, not programs or devices; its size is
	 * the run's share of disk_mb (runsc's log calls size= unknown, but
	 * the sentry's tmpfs enforces it: ENOSPC at exactly the size). */
	return json_pack("{s:s, s:s, s:s, s:[s, s, s, s, s]}", "destination", where, "type",
			 "tmpfs", "source", "tmpfs", "options", "nosuid", "nodev", "noexec",
			 "mode=1777", size);
}

static json_t *spec_base(const struct gvisor_bundle *b)
{
	const struct aj_limits *l = b->limits;
	struct boot_disk disk;
	boot_disk_split(l->disk_mb, &disk);
	/* The same policy as every other tier's filter, applied by the sentry
	 * to the program's calls (runsc --oci-seccomp): the gVisor kernel
	 * would refuse most of them anyway, but memfd, SysV IPC and the
	 * others the policy names stay as unavailable as elsewhere. */
	bool egress = b->egress_dir != NULL;
	/* The program's limits, with room for boot.py's forwarder. */
	const struct aj_limits bl = boot_limits(l, egress);
	json_t *seccomp = boot_seccomp(egress);
	json_t *rules = json_object_get(seccomp, "syscalls");
	if (!json_is_array(rules)) {
		json_decref(seccomp);
		return NULL;
	}
	/* runsc of Debian 12 ignores errnoRet and answers EPERM: the one
	 * rule that asks for another errno (clone3: ENOSYS, so that glibc
	 * falls back to clone) would break every thread. gVisor's kernel of
	 * that release has no clone3 and answers ENOSYS itself. */
	for (size_t i = json_array_size(rules); i-- > 0;) {
		json_t *e = json_object_get(json_array_get(rules, i), "errnoRet");
		if (e && json_integer_value(e) != EPERM)
			json_array_remove(rules, i);
	}
	return json_pack(
		"{s:s, s:{s:s, s:b}, s:s,"
		" s:{s:{s:I, s:I}, s:o, s:o, s:s,"
		"    s:{s:[], s:[], s:[], s:[], s:[]}, s:b, s:o},"
		" s:[{s:s, s:s, s:s, s:[s, s, s]}, {s:s, s:s, s:s, s:[s, s, s, s]},"
		"    {s:s, s:s, s:s, s:[s, s, s, s, s]}, o, o, o],"
		" s:{s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}], s:o}}",
		"ociVersion", "1.0.2",
		/* The image, read-only: nothing the program does reaches the
		 * next run. The image directory itself is only read. */
		"root", "path", b->root, "readonly", 1,
		"hostname", "sandbox",
		"process",
		/* A uid of the run's own, not root even in gVisor's kernel. */
		"user", "uid", (json_int_t)b->uid, "gid", (json_int_t)b->gid,
		/* PID 1 is boot.py (the docker tier's): it takes the program on
		 * stdin, runs it as its child, reaps orphans and reports the
		 * program's end at the end of stderr. */
		"args", boot_argv(b->python, egress, b->cfg),
		/* Nothing of the deployer's environment but cfg's checked
		 * variables (rule E1). */
		"env", boot_environment(egress, b->cfg),
		"cwd", "/",
		/* No capability in any set, and none to gain (no_new_privs). */
		"capabilities", "bounding", "effective", "inheritable", "permitted", "ambient",
		"noNewPrivileges", 1,
		/* The rlimit table (rule E2), enforced by the sentry:
		 * RLIMIT_CPU on the sentry's own clock (watch.h), so the host's
		 * count of the sandbox's cgroup stops a CPU loop as well.
		 * Address space, per process, as on the process tier: an
		 * allocation past the limit is Python's MemoryError inside the
		 * sandbox, where the host's OOM killer (the cgroup, the whole
		 * sandbox's backstop) would take gVisor's sentry and so the
		 * whole sandbox, a session's included. RLIMIT_NPROC, counted by
		 * the sentry, is the program's process bound: the host's pids
		 * cgroup counts gVisor's own threads too (tiers/gvisor.c). */
		"rlimits", boot_rlimits(&bl, true),
		"mounts",
		/* gVisor's own /proc: the sandbox's processes only. No /sys. */
		"destination", "/proc", "type", "proc", "source", "proc", "options", "nosuid",
		"nodev", "noexec",
		/* A /dev of gVisor's (null, zero, random, urandom, tty, pts). */
		"destination", "/dev", "type", "tmpfs", "source", "tmpfs", "options", "nosuid",
		"noexec", "mode=755", "size=64k",
		/* gVisor mounts a sysfs of its own where the spec has none; an
		 * empty read-only tmpfs instead keeps the view every tier
		 * gives (no /sys to learn the machine from). */
		"destination", "/sys", "type", "tmpfs", "source", "tmpfs", "options", "ro",
		"nosuid", "nodev", "noexec", "size=4k",
		tmpfs("/tmp", disk.tmp_kb), tmpfs("/var/tmp", disk.var_tmp_kb),
		tmpfs("/dev/shm", disk.shm_kb),
		"linux",
		/* Its own pid, ipc, uts and mount namespaces in the sentry, and
		 * a network namespace with loopback only (runsc
		 * --network=none). */
		"namespaces", "type", "pid", "type", "ipc", "type", "uts", "type", "mount", "type",
		"network",
		"seccomp", seccomp);
}

/* SANDBOX must exist in the image (root), as a directory or file like
 * HOST, reached through no symlink: runsc's gofer makes a missing mount
 * point in the image directory itself, on the host (the read-only root
 * binds the sentry, not the gofer), which would change the image every
 * later run and tier sees. The jail tiers make one in an empty directory
 * of the run's own view (src/linux/binds.c); this tier cannot. */
static int check_mount_point(const char *root, const char *target, bool dir,
			     struct aj_error *err)
{
	char path[RO_BIND_PATH_MAX + 4200];
	size_t rl = (size_t)snprintf(path, sizeof path, "%.4000s", root);
	for (const char *c = target; *c;) {
		const char *next = strchr(c + 1, '/');
		size_t len = next ? (size_t)(next - c) : strlen(c);
		size_t pl = strlen(path);
		struct stat st;
		memcpy(path + pl, c, len);
		path[pl + len] = '\0';
		c += len;
		if (lstat(path, &st) < 0)
			return error_set(err, -ENOENT,
					 "ro_bind: %s is not in the image, and the gvisor tier "
					 "cannot make it (runsc would write it into the image); "
					 "choose a path the image has, such as /mnt",
					 target);
		if (S_ISLNK(st.st_mode) || (*c && !S_ISDIR(st.st_mode)) ||
		    (!*c && dir != S_ISDIR(st.st_mode)))
			return error_set(err, -EINVAL,
					 "ro_bind: %s: %s in the image is a symlink or not a %s",
					 target, path + rl, (*c || dir) ? "directory" : "file");
	}
	return 0;
}

/* The deployer's host paths (cfg.ro_binds): bind mounts the gofer serves
 * read-only; nosuid and nodev as everywhere. */
int gvisor_bundle_check_binds(const struct gvisor_bundle *b, struct aj_error *err)
{
	for (uint32_t i = 0; i < b->ro_bind_count; i++) {
		char from[RO_BIND_PATH_MAX], to[RO_BIND_PATH_MAX];
		struct stat st;
		ro_bind_split(b->ro_binds[i], from, to);
		if (stat(from, &st) < 0)
			return error_set(err, -errno, "ro_bind: %s: %s", from, strerror(errno));
		int rc = check_mount_point(b->root, to, S_ISDIR(st.st_mode), err);
		if (rc)
			return rc;
	}
	return 0;
}

static int add_ro_binds(json_t *mounts, const struct gvisor_bundle *b, struct aj_error *err)
{
	int rc = gvisor_bundle_check_binds(b, err);
	for (uint32_t i = 0; !rc && i < b->ro_bind_count; i++) {
		char from[RO_BIND_PATH_MAX], to[RO_BIND_PATH_MAX];
		ro_bind_split(b->ro_binds[i], from, to);
		json_t *m = json_pack("{s:s, s:s, s:s, s:[s, s, s, s]}", "destination", to, "type",
				      "bind", "source", from, "options", "bind", "ro", "nosuid", "nodev");
		if (!m || json_array_append_new(mounts, m))
			return error_set(err, -ENOMEM, "gvisor: out of memory");
	}
	return rc;
}

/* The egress proxy's socket directory, read-only (the program writes
 * nothing to the host's disk through it), under the sandbox's own /dev
 * tmpfs, where the sentry makes the mount point (never in the image). */
static int add_egress_mount(json_t *mounts, const char *dir, struct aj_error *err)
{
	json_t *m = json_pack("{s:s, s:s, s:s, s:[s, s, s, s, s]}", "destination", BOOT_EGRESS_DIR,
			      "type", "bind", "source", dir, "options", "bind", "ro", "nosuid",
			      "nodev", "noexec");
	if (!m || json_array_append_new(mounts, m))
		return error_set(err, -ENOMEM, "gvisor: out of memory");
	return 0;
}

static int write_bundle_file(const char *path, const void *data, size_t n,
			     struct aj_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return error_set(err, -errno, "gvisor: create %s: %s", path, errno_name(errno));
	int rc = write_full(fd, data, n);
	close(fd);
	return rc ? error_set(err, rc, "gvisor: write %s: %s", path, errno_name(-rc)) : 0;
}

/* runsc 20221219 (Debian 12's) refuses AT_NO_AUTOMOUNT in statx and
 * newfstatat with EINVAL, which coreutils passes on every statx: `ls /` and
 * `stat /` failed. A shim that drops the flag (it asks for nothing where no
 * automount exists) is preloaded into every program through the sandbox's
 * own /etc/ld.so.preload, read-only; not through LD_PRELOAD, which would be
 * in the program's environment (rule E1). Only where the image carries that
 * file as a mount point (images/build-root.sh makes it empty): runsc's
 * gofer would otherwise make it in the image itself. */
static int add_preload(json_t *mounts, const char *dir, const char *root, struct aj_error *err)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%.4000s/etc/ld.so.preload", root);
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	char so[4200], list[4200];
	snprintf(so, sizeof so, "%.4000s/no-automount.so", dir);
	snprintf(list, sizeof list, "%.4000s/ld.so.preload", dir);
	int rc;
	if ((rc = write_bundle_file(so, gvisor_preload_so, sizeof gvisor_preload_so, err)) ||
	    (rc = write_bundle_file(list, PRELOAD_AT "\n", strlen(PRELOAD_AT "\n"), err)))
		return rc;
	json_t *m1 = json_pack("{s:s, s:s, s:s, s:[s, s, s, s]}", "destination", PRELOAD_AT,
			       "type", "bind", "source", so, "options", "bind", "ro", "nosuid",
			       "nodev");
	json_t *m2 = json_pack("{s:s, s:s, s:s, s:[s, s, s, s, s]}", "destination",
			       "/etc/ld.so.preload", "type", "bind", "source", list, "options",
			       "bind", "ro", "nosuid", "nodev", "noexec");
	if (!m1 || !m2 || json_array_append_new(mounts, m1) || json_array_append_new(mounts, m2))
		return error_set(err, -ENOMEM, "gvisor: out of memory");
	return 0;
}

static json_t *spec_json(const char *dir, const struct gvisor_bundle *b, struct aj_error *err)
{
	json_t *spec = spec_base(b);
	if (!spec) {
		error_set(err, -ENOMEM, "gvisor: building config.json: out of memory");
		return NULL;
	}
	json_t *mounts = json_object_get(spec, "mounts");
	if (add_ro_binds(mounts, b, err) ||
	    (b->egress_dir && add_egress_mount(mounts, b->egress_dir, err)) ||
	    add_preload(mounts, dir, b->root, err)) {
		json_decref(spec);
		return NULL;
	}
	return spec;
}

int gvisor_bundle_write(const char *dir, const struct gvisor_bundle *b, struct aj_error *err)
{
	json_t *spec = spec_json(dir, b, err);
	if (!spec)
		return err->code;
	char path[4200];
	snprintf(path, sizeof path, "%.4000s/config.json", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		json_decref(spec);
		return error_set(err, -e, "gvisor: create %s: %s", path, errno_name(e));
	}
	int rc = json_dumpfd(spec, fd, JSON_COMPACT) ? -EIO : 0;
	json_decref(spec);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc)
		return error_set(err, rc, "gvisor: write %s: %s", path, errno_name(-rc));
	return 0;
}
