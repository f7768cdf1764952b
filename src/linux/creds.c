#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "creds.h"

#define DEFAULT_STATE_DIR "/run/agentjail"

/* Slot i's lock, taken without waiting: 0, -EBUSY when another holds it,
 * or another -errno (err says why). dfd: the state directory. */
static int slot_take(int dfd, const char *dir, const struct aj_config *cfg, uint32_t i,
		     struct uid_slot *s, struct aj_error *err)
{
	char name[32];
	snprintf(name, sizeof name, "slot-%u", i);
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_set(err, -errno, "uid slots: open %s/%s: %s", dir, name,
				 errno_name(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -EBUSY;
	}
	s->slot = i;
	s->uid = cfg->uid_base + i;
	s->gid = cfg->uid_base + i;
	s->lock_fd = fd;
	return 0;
}

int slot_acquire(const struct aj_config *cfg, struct uid_slot *s, struct aj_error *err)
{
	return slot_acquire_nr(cfg, UINT32_MAX, s, err);
}

int slot_acquire_nr(const struct aj_config *cfg, uint32_t only, struct uid_slot *s,
		    struct aj_error *err)
{
	const char *dir = cfg->state_dir ? cfg->state_dir : DEFAULT_STATE_DIR;

	/* 0700 and root's: another user must not hold our slots' locks. */
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return error_set(err, -errno, "uid slots: mkdir %s: %s", dir, errno_name(errno));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return error_set(err, -errno, "uid slots: open %s: %s", dir, errno_name(errno));
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(dfd);
		return error_set(err, -EPERM,
				 "uid slots: %s must be a directory owned by uid %u and "
				 "writable by no one else", dir, (unsigned)geteuid());
	}
	for (uint32_t i = only == UINT32_MAX ? 0 : only; i < cfg->slots; i++) {
		int rc = slot_take(dfd, dir, cfg, i, s, err);
		if (rc != -EBUSY || only != UINT32_MAX) {
			close(dfd);
			return rc == -EBUSY ? error_set(err, -EBUSY, "uid slots: slot %u is in use", i)
					    : rc;
		}
	}
	close(dfd);
	return error_set(err, -EBUSY, "uid slots: all %u sandbox uids are in use", cfg->slots);
}

void slot_release(struct uid_slot *s)
{
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* closing drops the flock */
	s->lock_fd = -1;
}

/* Raw system calls, not glibc's wrappers: in a multi-threaded process glibc
 * makes setresuid() and friends apply to every thread (__nptl_setxid), and a
 * child made by a raw clone still believes it has its parent's threads, so
 * the wrapper waits for threads that do not exist. The child is one thread;
 * the plain system call is exactly right for it. */
static int raw_setgroups0(void)
{
	return (int)syscall(SYS_setgroups, 0, NULL);
}

static int raw_setresgid(gid_t g)
{
	return (int)syscall(SYS_setresgid, g, g, g);
}

static int raw_setresuid(uid_t u)
{
	return (int)syscall(SYS_setresuid, u, u, u);
}

int creds_limit_bounding_set(const int *keep, size_t n, struct setup_error *e)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break; /* past the last capability this kernel knows */
		bool kept = false;
		for (size_t i = 0; i < n; i++)
			kept |= keep[i] == cap;
		if (!kept && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return setup_fail(e, errno, "credentials: drop bounding capability %d", cap);
	}
	return 0;
}

/* Empties the capability bounding set: nothing exec'd later, setuid binary or
 * file capability, can bring a capability back. Needs CAP_SETPCAP, so it goes
 * before the uid changes. */
static int drop_bounding_set(struct setup_error *e)
{
	return creds_limit_bounding_set(NULL, 0, e);
}

/* Clears effective, permitted and inheritable sets outright (the uid change
 * clears the first two from root, never the inheritable one). */
static int clear_capability_sets(struct setup_error *e)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return setup_fail(e, errno, "credentials: capset");
	return 0;
}

int creds_drop(uid_t uid, gid_t gid, bool in_userns, struct setup_error *e)
{
	int rc;
	if ((rc = drop_bounding_set(e)))
		return rc;
	/* Supplementary groups first, while we still may: root's groups (disk,
	 * adm, ...) would otherwise follow the program. */
	errno = 0;
	if (!in_userns && (raw_setgroups0() < 0 || getgroups(0, NULL) != 0))
		return setup_fail(e, errno ? errno : EPERM, "credentials: setgroups");
	if (raw_setresgid(gid) < 0)
		return setup_fail(e, errno, "credentials: setresgid %u", (unsigned)gid);
	/* From root, all three uids non-zero: the kernel clears the permitted
	 * and effective capability sets here. In a user namespace the uid does
	 * not change and the capabilities go at execve, which grants a non-root
	 * uid none (ambient cleared below, no file capabilities honoured). */
	if (raw_setresuid(uid) < 0)
		return setup_fail(e, errno, "credentials: setresuid %u", (unsigned)uid);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return setup_fail(e, errno, "credentials: clear ambient capabilities");
	if ((rc = clear_capability_sets(e)))
		return rc;
	/* Nothing the program execs can gain privileges: setuid binaries and
	 * file capabilities are ignored from here on. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return setup_fail(e, errno, "credentials: no_new_privs");
	/* Fail closed if any of it did not take. */
	uid_t r, ef, sv;
	if (getresuid(&r, &ef, &sv) < 0 || r != uid || ef != uid || sv != uid)
		return setup_fail(e, EPERM, "credentials: uid is not %u after setresuid",
				  (unsigned)uid);
	return 0;
}

static int write_file(const char *path, const char *text, struct setup_error *e)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return setup_fail(e, errno, "user namespace: open %s", path);
	ssize_t n = write(fd, text, strlen(text));
	int err = n < 0 ? errno : 0;
	close(fd);
	if (n != (ssize_t)strlen(text))
		return setup_fail(e, err ? err : EIO, "user namespace: write %s", path);
	return 0;
}

int userns_map_self(uid_t outer_uid, gid_t outer_gid, struct setup_error *e)
{
	char map[64];
	int rc;

	/* setgroups must be denied before an unprivileged gid_map is accepted;
	 * it also stops the program dropping a group that denies it access. */
	if ((rc = write_file("/proc/self/setgroups", "deny", e)))
		return rc;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)outer_uid, (unsigned)outer_uid);
	if ((rc = write_file("/proc/self/uid_map", map, e)))
		return rc;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)outer_gid, (unsigned)outer_gid);
	return write_file("/proc/self/gid_map", map, e);
}
