/* Shared test helpers: running code through a tier, and checking that the
 * host is as it was. Header-only so each test program stays one file. */
#ifndef AJ_TEST_HARNESS_H
#define AJ_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentjail.h"
#include "src/api/api.h"

/* A random token: what a hostile program must never get to print, or the
 * name of a marker it must never get to write on the host. */
/* The parent of process pid ("pid (comm) state ppid" in /proc/PID/stat,
 * comm holding anything but its last ')'); -1 if it is gone. */
static inline long parent_pid(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *fh = fopen(path, "re");
	if (!fh)
		return -1;
	size_t len = fread(buf, 1, sizeof buf - 1, fh);
	fclose(fh);
	buf[len] = 0;
	const char *rp = strrchr(buf, ')');
	char st;
	long ppid;
	return rp && sscanf(rp + 1, " %c %ld", &st, &ppid) == 2 ? ppid : -1;
}

static inline void make_token(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, raw, sizeof raw), (ssize_t)sizeof raw);
	close(fd);
	size_t i = 0;
	for (; i < sizeof raw && 2 * i + 2 < n; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[2 * i] = '\0';
}

/* Set while the hostile table runs in session mode (session_cases.h):
 * run_code then runs each program as a cell of a fresh session and checks
 * that the session is still usable after it, or was closed cleanly. */
static bool harness_via_session;
/* With harness_via_session: the program runs in a session restored from
 * a checkpoint of one that was paused and resumed, so the hostile table
 * holds there too. */
static bool harness_via_restore;

/* Sandboxes a case opened and has not closed yet (harness_track): a case
 * that fails midway leaves its sandbox here, and the teardown closes it
 * (harness_close_all) before it counts what is left, so one failure does
 * not fail every case after it. */
#define HARNESS_OPEN_MAX 8
static struct aj_sandbox *harness_open[HARNESS_OPEN_MAX];

static inline struct aj_sandbox *harness_track(struct aj_sandbox *sb)
{
	for (int i = 0; i < HARNESS_OPEN_MAX; i++)
		if (!harness_open[i]) {
			harness_open[i] = sb;
			break;
		}
	return sb;
}

static inline void harness_close(struct aj_sandbox *sb)
{
	for (int i = 0; i < HARNESS_OPEN_MAX; i++)
		if (harness_open[i] == sb)
			harness_open[i] = NULL;
	aj_close(sb);
}

static inline void harness_close_all(void)
{
	for (int i = 0; i < HARNESS_OPEN_MAX; i++)
		if (harness_open[i]) {
			aj_close(harness_open[i]);
			harness_open[i] = NULL;
		}
}

/* Set while the hostile table runs through sandboxes made ahead (the
 * process tier's pool, process.c): run_code then opens a sandbox, runs
 * twice so that its pool starts, waits until a sandbox made ahead is
 * ready, and runs the program in it, checking that it did. */
static bool harness_via_ahead;

static inline void run_made_ahead(const struct aj_config *cfg, struct aj_result *res,
				  const char *code)
{
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	if (aj_open(cfg, &sb, &err))
		fail_msg("aj_open: %s", err.message);
	harness_track(sb);
	for (int i = 0; i < 2; i++) {
		struct aj_result warmup;
		aj_run(sb, "pass\n", 5, &warmup);
		assert_int_equal(warmup.status, AJ_STATUS_OK);
		aj_result_free(&warmup);
	}
	unsigned ready = 0;
	unsigned long served = 0, after = 0;
	/* A case whose config has none made ahead (one uid slot, egress
	 * rules) runs as it would: the library makes none for it either. */
	bool ahead = sandbox_made_ahead(sb, &ready, &served);
	/* A deadline only against a filler that never makes one (the
	 * filler builds a sandbox in milliseconds; a busy machine's seconds). */
	for (int i = 0; ahead && i < 6000 && !ready; i++) {
		usleep(10000);
		sandbox_made_ahead(sb, &ready, &served);
	}
	if (ahead && !ready)
		fail_msg("no sandbox made ahead within 60 s");
	aj_run(sb, code, strlen(code), res);
	sandbox_made_ahead(sb, &ready, &after);
	assert_int_equal(after, served + (ahead ? 1 : 0));
	harness_close(sb);
}

static inline void run_in_session(const struct aj_config *cfg, struct aj_result *res,
				  const char *code)
{
	struct aj_session *s = NULL;
	struct aj_error err = {0};
	if (aj_session_open(cfg, &s, &err))
		fail_msg("aj_session_open: %s", err.message);
	if (harness_via_restore) {
		/* Paused, checkpointed as it sleeps, closed, restored; or, every
		 * other case where the config has a second uid slot and
		 * session, paused and forked (the fork wakes it), then closed:
		 * the copy runs in a sandbox of its own. */
		struct aj_session *original = s;
		static const char before[] = "carried = 'from the original'\n";
		struct aj_result r0;
		if (aj_session_run(original, before, strlen(before), &r0) ||
		    r0.status != AJ_STATUS_OK)
			fail_msg("the original's cell: %s", r0.message ? r0.message : "-");
		aj_result_free(&r0);
		struct aj_checkpoint_key key;
		memset(key.bytes, 0x5a, sizeof key.bytes);
		char path[64];
		static atomic_uint made;
		unsigned n = atomic_fetch_add(&made, 1);
		snprintf(path, sizeof path, "/tmp/aj-harness-%d-%u.ckpt", (int)getpid(), n);
		bool by_fork = (n & 1) && cfg->slots >= 2 && cfg->session.max_sessions >= 2;
		if (aj_session_pause(original, NULL, &err))
			fail_msg("pause: %s", err.message);
		if (by_fork) {
			s = NULL;
			int frc = aj_session_fork(original, 1, &s, NULL, &err);
			aj_session_close(original);
			if (frc)
				fail_msg("aj_session_fork: %s", err.message);
		} else {
			if (aj_session_checkpoint(original, &key, path, NULL, &err))
				fail_msg("checkpoint: %s", err.message);
			aj_session_close(original);
			s = NULL;
			int rrc = aj_session_restore(cfg, &key, path, &s, NULL, &err);
			unlink(path);
			if (rrc)
				fail_msg("aj_session_restore: %s", err.message);
		}
	}
	aj_session_run(s, code, strlen(code), res);
	/* Usable after the cell (a fresh interpreter if the cell ended its
	 * own), or closed with a reason: never a broken half-open session. */
	struct aj_result after;
	static const char probe[] = "print('session-alive')\n";
	int rc = aj_session_run(s, probe, strlen(probe), &after);
	if (rc == 0) {
		if (after.status != AJ_STATUS_OK || !strstr(after.stdout_buf, "session-alive"))
			fail_msg("session unusable after the cell: %s; %s; %s",
				 aj_status_name(after.status), after.message ? after.message : "-",
				 after.stderr_buf);
	} else if (!aj_session_closed_reason(s)) {
		/* Closed, by this probe's call or before it (what the cell left
		 * running may end the sandbox while the probe runs): with a
		 * reason, never half-open. */
		fail_msg("session neither usable nor closed after the cell: %s",
			 after.message ? after.message : "-");
	}
	aj_result_free(&after);
	aj_session_close(s);
}

/* Runs printf-formatted code with cfg; asserts the sandbox itself worked
 * unless the caller expects otherwise. */
static inline void run_code(const struct aj_config *cfg, struct aj_result *res, const char *fmt,
			    ...) __attribute__((format(printf, 3, 4)));
static inline void run_code(const struct aj_config *cfg, struct aj_result *res, const char *fmt,
			    ...)
{
	char *code = NULL;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&code, fmt, ap) >= 0);
	va_end(ap);
	if (harness_via_session) {
		run_in_session(cfg, res, code);
		free(code);
		return;
	}
	if (harness_via_ahead) {
		run_made_ahead(cfg, res, code);
		free(code);
		return;
	}
	struct aj_sandbox *sb = NULL;
	struct aj_error err = {0};
	int rc = aj_open(cfg, &sb, &err);
	if (rc)
		fail_msg("aj_open: %s", err.message);
	aj_run(sb, code, strlen(code), res);
	aj_close(sb);
	free(code);
}

/* The fds this process holds now. */
static inline int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static inline bool contains(const char *hay, const char *needle)
{
	return hay && needle && strstr(hay, needle) != NULL;
}

#define assert_status(res, want)                                                          \
	do {                                                                              \
		if ((res)->status != (want))                                              \
			fail_msg("status %s, want %s; message: %s\nstdout: %.2000s\n"     \
				 "stderr: %.2000s",                                       \
				 aj_status_name((res)->status), aj_status_name(want),     \
				 (res)->message ? (res)->message : "-", (res)->stdout_buf, \
				 (res)->stderr_buf);                                      \
	} while (0)

/* One leftover process, for a failed teardown's message. */
static inline void say_process(const char *pid, unsigned uid)
{
	char path[300], cmd[200] = "", stat[300] = "";
	snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
	FILE *f = fopen(path, "re");
	if (f) {
		size_t n = fread(cmd, 1, sizeof cmd - 1, f);
		for (size_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	if ((f = fopen(path, "re"))) {
		if (!fgets(stat, sizeof stat, f))
			stat[0] = '\0';
		fclose(f);
	}
	stat[strcspn(stat, "\n")] = '\0';
	print_message("left: pid %s uid %u: %s [%.120s]\n", pid, uid, cmd, stat);
}

/* Processes whose real uid lies in [lo, hi): a sandbox's leftovers. With
 * say, each is printed (pid, uid, state, command line), so that a failed
 * teardown names what was left. */
static inline int list_processes_with_uid(uint32_t lo, uint32_t hi, bool say);
static inline int count_processes_with_uid(uint32_t lo, uint32_t hi)
{
	return list_processes_with_uid(lo, hi, false);
}

static inline int list_processes_with_uid(uint32_t lo, uint32_t hi, bool say)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[300], line[256];
		snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* exited meanwhile */
		while (fgets(line, sizeof line, f)) {
			unsigned uid;
			if (sscanf(line, "Uid: %u", &uid) == 1) {
				if (uid >= lo && uid < hi) {
					n++;
					if (say)
						say_process(de->d_name, uid);
				}
				break;
			}
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Run cgroups (agentjail/run-*) under /sys/fs/cgroup whose name starts
 * with prefix. */
/* Entries of dir whose name starts with prefix (0 if dir is missing). */
static inline int count_dir_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	if (d)
		closedir(d);
	return n;
}

static inline int count_cgroups_named(const char *prefix)
{
	static const char *const parents[] = {
		"/sys/fs/cgroup/agentjail", "/sys/fs/cgroup/memory/agentjail",
		"/sys/fs/cgroup/pids/agentjail", "/sys/fs/cgroup/cpu/agentjail"};
	int n = 0;
	for (size_t i = 0; i < sizeof parents / sizeof parents[0]; i++)
		n += count_dir_entries(parents[i], prefix);
	return n;
}

/* Cgroups of this process's runs (agentjail/run-PID-*): another test
 * program running beside this one has its own. */
static inline int count_run_cgroups(void)
{
	char mine[32];
	snprintf(mine, sizeof mine, "run-%d-", (int)getpid());
	return count_cgroups_named(mine);
}

/* The host's mount table as this process sees it. */
static inline char *read_mountinfo(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	assert_non_null(f);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	size_t n;
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* The lines of one mount table missing from the other, each way, for a
 * failure message (a static buffer: tests run one at a time); "" when the
 * tables agree. The Docker Engine's own mounts (its containers' overlays,
 * unmounted by the engine in its own time) are not a sandbox's: a tier's
 * containers are counted by the docker tests themselves. */
static inline const char *mountinfo_diff(const char *before, const char *after)
{
	static char out[4096];
	size_t used = 0;
	const char *tables[2] = {before, after}, *signs = "-+";
	out[0] = '\0';
	for (int t = 0; t < 2; t++) {
		const char *p = tables[t], *other = tables[1 - t];
		while (*p) {
			size_t n = strcspn(p, "\n");
			char line[600];
			snprintf(line, sizeof line, "\n%.*s\n", (int)(n < 580 ? n : 580), p);
			/* Whole-line match: the table's first line has no '\n' before it. */
			bool found = strstr(other, line + 1) == other || strstr(other, line) ||
				     strstr(line, " /var/lib/docker/") || strstr(line, " /run/docker/");
			if (!found && used + n + 4 < sizeof out)
				used += (size_t)snprintf(out + used, sizeof out - used, "%c %.*s\n",
							 signs[t], (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
	return out;
}

static inline bool path_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* A run from a forked child that prepare() first changes (a seccomp filter,
 * another uid), so the change cannot touch the test process. In the child
 * cmocka's asserts must not be used (a failure would longjmp into the
 * child's copy of the test runner): it reports "status|message|stdout" on a
 * pipe instead, or "prepare failed". */
static inline void run_in_child(int (*prepare)(void *ctx), void *ctx, const struct aj_config *cfg,
			 const char *code, char *out, size_t outlen)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char line[800];
		struct aj_sandbox *sb;
		struct aj_error err = {0};
		if (prepare(ctx) != 0) {
			snprintf(line, sizeof line, "prepare failed||");
		} else if (aj_open(cfg, &sb, &err)) {
			snprintf(line, sizeof line, "open failed|%s|", err.message);
		} else {
			struct aj_result r;
			aj_run(sb, code, strlen(code), &r);
			snprintf(line, sizeof line, "%s|%s|%s", aj_status_name(r.status),
				 r.message ? r.message : "", r.stdout_buf);
			aj_result_free(&r);
			aj_close(sb);
		}
		(void)!write(fds[1], line, strlen(line));
		_exit(0);
	}
	close(fds[1]);
	memset(out, 0, outlen);
	ssize_t n = read(fds[0], out, outlen - 1);
	close(fds[0]);
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(n > 0);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

#endif
