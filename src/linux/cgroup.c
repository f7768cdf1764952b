#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/keyed.h"
#include "cgroup.h"
#include "report.h"

static const char *const names[CG_COUNT] = {"memory", "pids", "cpu"};

static int write_knob(const char *dir, const char *file, const char *text, struct aj_error *err)
{
	char path[512];
	snprintf(path, sizeof path, "%.400s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, -errno, "cgroup: open %s: %s", path, errno_name(errno));
	int rc = write_full(fd, text, strlen(text));
	close(fd);
	if (rc)
		return error_set(err, rc, "cgroup: write '%s' to %s: %s", text, path, errno_name(-rc));
	return 0;
}

static int read_knob(const char *dir, const char *file, char *buf, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%.400s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	return 0;
}

static bool exists(const char *dir, const char *file)
{
	char path[512];
	snprintf(path, sizeof path, "%.400s/%s", dir, file);
	return access(path, F_OK) == 0;
}

/* Whether a space-separated list (cgroup.controllers) holds word. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

static int make_parent(const char *path, struct aj_error *err)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return error_set(err, -errno, "cgroup: mkdir %s: %s", path, errno_name(errno));
	return 0;
}

static int prepare_v2(const char *root, struct cgroup_layout *lay, struct aj_error *err)
{
	char list[512];
	int rc;

	lay->version = 2;
	if ((rc = read_knob(root, "cgroup.controllers", list, sizeof list)))
		return error_set(err, rc, "cgroup v2: read %s/cgroup.controllers: %s", root,
				 errno_name(-rc));
	for (int c = 0; c < CG_COUNT; c++)
		if (!has_word(list, names[c]))
			return error_set(err, -ENOTSUP,
					 "cgroup v2: the %s controller is not available in %s "
					 "(cgroup.controllers: %s); enable it on the host",
					 names[c], root, list[0] ? list : "empty");
	/* Controllers must be enabled for the children of every level down to
	 * our runs: the root's (systemd usually has) and agentjail's own. */
	char parent[300];
	snprintf(parent, sizeof parent, "%.256s/%s", root, CGROUP_PARENT);
	if ((rc = make_parent(parent, err)))
		return rc;
	const char *levels[2] = {root, parent};
	for (int i = 0; i < 2; i++) {
		if ((rc = read_knob(levels[i], "cgroup.subtree_control", list, sizeof list)))
			return error_set(err, rc, "cgroup v2: read %s/cgroup.subtree_control: %s",
					 levels[i], errno_name(-rc));
		for (int c = 0; c < CG_COUNT; c++) {
			if (has_word(list, names[c]))
				continue;
			char add[32];
			snprintf(add, sizeof add, "+%s", names[c]);
			struct aj_error why = {0};
			if ((rc = write_knob(levels[i], "cgroup.subtree_control", add, &why)))
				return error_set(err, rc,
						 "cgroup v2: the %s controller is not enabled in "
						 "%s/cgroup.subtree_control and enabling it failed "
						 "(%s); delegate a cgroup subtree with it enabled",
						 names[c], levels[i], errno_name(-rc));
		}
	}
	for (int c = 0; c < CG_COUNT; c++)
		memcpy(lay->parent[c], parent, sizeof parent);
	/* cgroup.freeze: every non-root cgroup of a 5.2+ kernel. */
	lay->freezer = exists(parent, "cgroup.freeze");
	return 0;
}

static int prepare_v1(const char *root, struct cgroup_layout *lay, struct aj_error *err)
{
	/* The file each v1 hierarchy must offer for what we set in it. */
	static const char *const probe[CG_COUNT] = {"memory.limit_in_bytes", "pids.max",
						    "cpu.cfs_quota_us"};
	lay->version = 1;
	for (int c = 0; c < CG_COUNT; c++) {
		char dir[280];
		snprintf(dir, sizeof dir, "%.256s/%s", root, names[c]);
		/* A hierarchy's root has no limit files; a child cgroup of a
		 * hierarchy with the controller always does. */
		if (!exists(dir, "cgroup.procs"))
			return error_set(err, -ENOTSUP,
					 "cgroup v1: no %s hierarchy mounted at %s; mount the "
					 "%s controller there, or use cgroup v2",
					 names[c], dir, names[c]);
		snprintf(lay->parent[c], sizeof lay->parent[c], "%.280s/%s", dir, CGROUP_PARENT);
		int rc = make_parent(lay->parent[c], err);
		if (rc)
			return rc;
		if (!exists(lay->parent[c], probe[c]))
			return error_set(err, -ENOTSUP,
					 "cgroup v1: the hierarchy at %s has no %s controller (%s "
					 "missing in %s)",
					 dir, names[c], probe[c], lay->parent[c]);
	}
	/* The freezer is no limit: where it is not mounted, a session's pause
	 * ends its sandbox instead of freezing it. */
	char dir[280];
	snprintf(dir, sizeof dir, "%.256s/freezer", root);
	if (exists(dir, "cgroup.procs")) {
		struct aj_error why = {0};
		snprintf(lay->parent[CG_FREEZER], sizeof lay->parent[CG_FREEZER], "%.280s/%s", dir,
			 CGROUP_PARENT);
		lay->freezer = !make_parent(lay->parent[CG_FREEZER], &why) &&
			       exists(lay->parent[CG_FREEZER], "freezer.state");
	}
	return 0;
}

bool cgroup_run_orphaned(const char *dir, const char *name, char *path, size_t n)
{
	int pid = 0;
	struct stat st;
	if (sscanf(name, "run-%d-", &pid) != 1 || pid <= 0)
		return false;
	if ((size_t)snprintf(path, n, "%s/%s", dir, name) >= n)
		return false;
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || time(NULL) - st.st_mtime < 10)
		return false;
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* Run cgroups whose maker died before it could remove them (a caller
 * SIGKILLed mid-run or with a session open): their processes died with the
 * sandbox's init, and an empty cgroup left behind is removed here. Only
 * directories at least ten seconds old, of a pid no process of this pid
 * namespace has: a live run's cgroup is never touched (and rmdir refuses a
 * cgroup that still has a process). Ten seconds is far more than the
 * moment between a run making its cgroup and its init joining it. */
static void sweep_orphans(const struct cgroup_layout *lay)
{
	int n = lay->version == 2 ? 1 : CG_COUNT + lay->freezer;
	for (int i = 0; i < n; i++) {
		DIR *d = opendir(lay->parent[i]);
		struct dirent *de;
		char path[700];
		while (d && (de = readdir(d)))
			if (cgroup_run_orphaned(lay->parent[i], de->d_name, path, sizeof path))
				rmdir(path);
		if (d)
			closedir(d);
	}
}

int cgroup_prepare(const char *root, struct cgroup_layout *lay, struct aj_error *err)
{
	if (!root)
		root = CGROUP_DEFAULT_ROOT;
	memset(lay, 0, sizeof *lay);
	if (geteuid() != 0)
		return error_set(err, -EPERM,
				 "cgroup: creating cgroups needs root (running as uid %u)",
				 (unsigned)geteuid());
	/* A v2 mount's root always has cgroup.controllers; a v1 layout never. */
	int rc = exists(root, "cgroup.controllers") ? prepare_v2(root, lay, err)
						     : prepare_v1(root, lay, err);
	if (!rc)
		sweep_orphans(lay);
	return rc;
}

void cgroup_run_copy(struct cgroup_run *dst, const struct cgroup_run *src)
{
	*dst = *src;
	for (int i = 0; i < CG_DIRS; i++)
		if (src->tasks_files[i])
			dst->tasks_files[i] = dst->tasks_file[i];
}

int cgroup_create(const struct cgroup_layout *lay, const struct aj_limits *l,
		  struct cgroup_run *run, struct aj_error *err)
{
	static atomic_uint counter;
	struct timespec ts;
	char name[64], num[64];
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(name, sizeof name, "run-%d-%u-%ld", (int)getpid(), atomic_fetch_add(&counter, 1),
		 ts.tv_nsec);
	memset(run, 0, sizeof *run);
	run->version = lay->version;
	run->ndirs = lay->version == 2 ? 1 : CG_COUNT + lay->freezer;
	run->can_freeze = lay->freezer;
	for (int i = 0; i < run->ndirs; i++) {
		snprintf(run->dir[i], sizeof run->dir[i], "%.300s/%s", lay->parent[i], name);
		if (mkdir(run->dir[i], 0755) < 0) {
			rc = error_set(err, -errno, "cgroup: mkdir %s: %s", run->dir[i],
				       errno_name(errno));
			run->ndirs = i;
			cgroup_destroy(run, NULL);
			return rc;
		}
	}
	const char *mem = run->dir[run->version == 2 ? 0 : CG_MEMORY];
	const char *pids = run->dir[run->version == 2 ? 0 : CG_PIDS];
	const char *cpu = run->dir[run->version == 2 ? 0 : CG_CPU];
	memcpy(run->memory_dir, mem, strlen(mem) + 1); /* same size as dir[] */
	if (run->version == 1) {
		for (int i = 0; i < run->ndirs; i++) {
			size_t dl = strlen(run->dir[i]);
			memcpy(run->tasks_file[i], run->dir[i], dl);
			memcpy(run->tasks_file[i] + dl, "/tasks", sizeof "/tasks");
			run->tasks_files[i] = run->tasks_file[i];
		}
		run->tasks_files[run->ndirs] = NULL;
	}
	snprintf(num, sizeof num, "%llu", (unsigned long long)l->memory_mb * 1024 * 1024);

	if (run->version == 2) {
		/* The whole run's memory, its tmpfs pages included; no swap to
		 * spill into; the pids limit counts threads too; one CPU. */
		if ((rc = write_knob(mem, "memory.max", num, err)) ||
		    (exists(mem, "memory.swap.max") &&
		     (rc = write_knob(mem, "memory.swap.max", "0", err))))
			goto fail;
		snprintf(num, sizeof num, "%u", l->pids);
		if ((rc = write_knob(pids, "pids.max", num, err)) ||
		    (rc = write_knob(cpu, "cpu.max", "100000 100000", err)))
			goto fail;
		return 0;
	}
	/* v1: swappiness 0 and, where the kernel accounts swap, memory+swap
	 * equal to memory: no swap. */
	if ((rc = write_knob(mem, "memory.limit_in_bytes", num, err)) ||
	    (exists(mem, "memory.memsw.limit_in_bytes") &&
	     (rc = write_knob(mem, "memory.memsw.limit_in_bytes", num, err))) ||
	    (exists(mem, "memory.swappiness") &&
	     (rc = write_knob(mem, "memory.swappiness", "0", err))))
		goto fail;
	snprintf(num, sizeof num, "%u", l->pids);
	if ((rc = write_knob(pids, "pids.max", num, err)) ||
	    (rc = write_knob(cpu, "cpu.cfs_period_us", "100000", err)) ||
	    (rc = write_knob(cpu, "cpu.cfs_quota_us", "100000", err)))
		goto fail;
	return 0;
fail:
	cgroup_destroy(run, NULL);
	return rc;
}

int cgroup_join_self(const char *const *files, struct setup_error *e)
{
	for (; files && *files; files++) {
		int fd = open(*files, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return setup_fail(e, errno, "cgroup: open %s", *files);
		/* "0": the writing thread itself. */
		int rc = write_full(fd, "0", 1);
		close(fd);
		if (rc)
			return setup_fail(e, -rc, "cgroup: join %s", *files);
	}
	return 0;
}

int cgroup_open_dir(const struct cgroup_run *run)
{
	if (run->version != 2)
		return -EOPNOTSUPP;
	int fd = open(run->dir[0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* "key value" lines (memory.events, memory.oom_control): value of key. */
void cgroup_usage(const struct cgroup_run *run, uint64_t *oom_kills, uint64_t *peak_kb)
{
	char buf[1024];
	*oom_kills = 0;
	*peak_kb = 0;
	const char *mem = run->memory_dir;
	if (run->version == 2) {
		if (!read_knob(mem, "memory.events", buf, sizeof buf))
			*oom_kills = keyed_value(buf, "oom_kill");
		if (!read_knob(mem, "memory.peak", buf, sizeof buf))
			*peak_kb = strtoull(buf, NULL, 10) / 1024;
		return;
	}
	if (!read_knob(mem, "memory.oom_control", buf, sizeof buf))
		*oom_kills = keyed_value(buf, "oom_kill");
	if (!read_knob(mem, "memory.max_usage_in_bytes", buf, sizeof buf))
		*peak_kb = strtoull(buf, NULL, 10) / 1024;
}

/* utime + stime + cutime + cstime of one process, in clock ticks. */
static long long proc_cpu_ticks(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone meanwhile */
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The command name may hold spaces and parentheses: fields start
	 * after the last ')'. utime is field 14, so the 12th after it. */
	char *p = strrchr(buf, ')');
	long long v[4] = {0};
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld",
			 &v[0], &v[1], &v[2], &v[3]) != 4)
		return 0;
	return v[0] + v[1] + v[2] + v[3];
}

double cgroup_cpu_ms(const struct cgroup_run *run)
{
	char buf[1024];
	if (run->version == 2) {
		if (read_knob(run->dir[0], "cpu.stat", buf, sizeof buf))
			return -1;
		return (double)keyed_value(buf, "usage_usec") / 1000.0;
	}
	char path[512];
	snprintf(path, sizeof path, "%.400s/cgroup.procs", run->dir[CG_PIDS]);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long long ticks = 0;
	int pid;
	while (fscanf(f, "%d", &pid) == 1)
		ticks += proc_cpu_ticks(pid);
	fclose(f);
	return (double)ticks * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

int cgroup_kill_all(const struct cgroup_run *run)
{
	/* The pids hierarchy (v1) or the one directory (v2) lists them all. */
	const char *dir = run->dir[run->version == 2 ? 0 : CG_PIDS];
	if (run->version == 2 && exists(dir, "cgroup.kill")) {
		/* Linux 5.14+: one write, and a fork racing it cannot escape. */
		struct aj_error e = {0};
		write_knob(dir, "cgroup.kill", "1", &e);
	}
	char path[512];
	snprintf(path, sizeof path, "%.400s/cgroup.procs", dir);
	/* A process forked between the read and the kill is in the cgroup
	 * too (children are born in their parent's) and is caught by the
	 * next pass; SIGKILL cannot be caught or ignored. */
	for (int pass = 0; pass < 400; pass++) {
		FILE *f = fopen(path, "re");
		if (!f)
			return errno == ENOENT ? 0 : -errno;
		int pid, alive = 0;
		while (fscanf(f, "%d", &pid) == 1) {
			alive++;
			kill(pid, SIGKILL);
		}
		fclose(f);
		if (!alive)
			return 0;
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

static int freeze_knob(const struct cgroup_run *run, bool frozen, struct aj_error *err)
{
	if (!run->can_freeze || run->ndirs == 0)
		return error_set(err, -ENOTSUP, "cgroup: this run's cgroup cannot be frozen");
	bool v2 = run->version == 2;
	const char *dir = run->dir[v2 ? 0 : CG_FREEZER];
	int rc = write_knob(dir, v2 ? "cgroup.freeze" : "freezer.state",
			    v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED"), err);
	if (rc)
		return rc;
	/* Done when the kernel says so (a task in the middle of a syscall
	 * is frozen when it leaves it); the deadline only catches a hang. */
	char buf[512];
	for (int i = 0; i < 10000; i++) {
		if (v2 ? !read_knob(dir, "cgroup.events", buf, sizeof buf) &&
				 keyed_value(buf, "frozen") == (frozen ? 1 : 0)
		       : !read_knob(dir, "freezer.state", buf, sizeof buf) &&
				 !strncmp(buf, frozen ? "FROZEN" : "THAWED", 6))
			return 0;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return error_set(err, -ETIMEDOUT, "cgroup: %s did not become %s within 10 s", dir,
			 frozen ? "frozen" : "thawed");
}

int cgroup_freeze(struct cgroup_run *run, bool frozen, struct aj_error *err)
{
	int rc = freeze_knob(run, frozen, err);
	if (!rc)
		run->frozen = frozen;
	else if (frozen && !freeze_knob(run, false, &(struct aj_error){0}))
		run->frozen = false;
	return rc;
}

void cgroup_thaw(struct cgroup_run *run)
{
	if (run->frozen)
		cgroup_freeze(run, false, &(struct aj_error){0});
}

int cgroup_destroy(struct cgroup_run *run, struct aj_error *err)
{
	int rc = 0;
	for (int i = 0; i < run->ndirs; i++) {
		/* Empty by now: the run's init has been reaped and the kernel
		 * took every process of its namespace with it. A moment's
		 * retry covers a v1 hierarchy still noting an exit. */
		int tries = 0;
		while (rmdir(run->dir[i]) < 0) {
			if (errno == ENOENT)
				break;
			if (errno == EBUSY && tries++ < 50) {
				struct timespec ts = {0, 2000000};
				nanosleep(&ts, NULL);
				continue;
			}
			if (!rc)
				rc = error_set(err, -errno, "cgroup: rmdir %s: %s", run->dir[i],
					       errno_name(errno));
			break;
		}
	}
	run->ndirs = 0;
	return rc;
}
