/* Warm mode (cfg.warm) for the process and container tiers.
 *
 * Theory of operation
 * -------------------
 * A cold run starts Python for every run: 10-30 ms here, and hundreds more
 * for a program that imports numpy or pandas. In warm mode one interpreter,
 * the zygote, is started ahead and imports the deployer's preload list once;
 * each run is then a fork of it, which has all of that already.
 *
 *  host      the caller of aj_run. It starts the zygote on the first run
 *            (or at open, with a preload list, so that an import that
 *            fails refuses the open), and for each run makes the pipes, a
 *            memfd holding the program, and the run's uid slot and cgroup
 *            as for a cold run, and sends the zygote one request with
 *            those fds (protocol.h). The zygote answers with the run's
 *            init's pidfd; from there the host supervises exactly as in a
 *            cold run (supervise.c: wall clock, output caps, cancel, kill).
 *
 *  zygote    zygote.py, in a sandbox of its own built by jail_plan.c like a
 *            cold run's (the tier's view: the host's / read-only, or the
 *            image as root; an empty network namespace; a clean
 *            environment; no fd of the caller's) but keeping root and its
 *            capabilities, which it needs to make each run's namespaces.
 *            It runs no code but its own and the preload imports, and
 *            never reads anything of a run's.
 *
 *  init      cloned by the zygote (helper.c, jail_warm_spawn) into new pid,
 *            mount, network, ipc and uts namespaces, born in the run's
 *            cgroup (v2) or joining it (v1, through the tasks files the
 *            host opened). It does a cold init's steps (jail_plan.c: signals,
 *            fds, keyring, session, hostname, the run's own /dev, tmpfs and
 *            /proc over the zygote's view, the program copied into the
 *            workspace, the cgroup namespace), forks the program's process
 *            and reaps and reports exactly as a cold init does. It dies
 *            with the zygote (PDEATHSIG), which dies with the host.
 *
 *  program   init's child, a copy of the zygote. It takes a cold run's
 *            inside steps (stdio, rlimits, the run's uid with no groups or
 *            capabilities, no_new_privs, the seccomp filter), closes every
 *            other fd, and returns into the zygote's Python, which runs
 *            main.py as `python3 -I -u main.py` would.
 *
 * What a run gets is a cold run's: its own pid, mount, net, ipc and uts
 * namespaces, uid, tmpfs, /dev and /proc, filter, rlimits, cgroup limits,
 * clean environment, and the same result contract. What it shares with the
 * zygote, and why nothing of a run reaches the zygote or a later run:
 *
 *  - memory: the program's process is a copy-on-write copy. What it writes
 *    (a monkey-patched module, a changed global) is its own page; the
 *    zygote's and every later run's copy are untouched. The zygote never
 *    holds a run's data (the program goes from the host's memfd straight
 *    into the run's tmpfs, copied by the run's init), so a run cannot find
 *    an earlier run's code or output in the memory it copied.
 *  - files: every writable place is the run's own tmpfs, in its own mount
 *    namespace, gone with it; the view under it is read-only.
 *  - processes: the run's pid namespace ends with its init, taking every
 *    process the program left (a setsid daemon included). The zygote is
 *    not in it: the program cannot see, signal or trace it (other uid, not
 *    dumpable, filter denies ptrace and process_vm_*).
 *  - fds: init closes every fd the zygote had (its socket above all), and
 *    the program's process closes all above stdio.
 *  - randomness: random is reseeded in CPython's after-fork hook, numpy's
 *    global generator before main.py; os.urandom and secrets read the
 *    kernel per call; and the zygote is not pid 2, as every run's program
 *    is, so code that notices a fork by a change of pid (OpenSSL) does. The hash secret (PYTHONHASHSEED) cannot change in a forked
 *    interpreter (every str caches its hash), nor the address-space layout
 *    of what the zygote had mapped: both are shared by the runs of one
 *    zygote. That is bounded by replacing the zygote after WARM_RUNS runs
 *    or WARM_AGE_MS, and by the README.
 *
 * A zygote that dies, stops answering within WARM_REPLY_MS, or answers out
 * of protocol is killed (its sandbox, with any run on it) and replaced, and
 * the run is given to the new zygote once; if that fails too the run is a
 * sandbox_error. A warm run never falls back to a cold one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../linux/spawn.h"
#include "../linux/supervise.h"
#include "protocol.h"
#include "warm.h"

/* The helper library the zygote loads, as bytes (tools/c_bytes.py). */
#include "warm_helper.inc"
/* The zygote, as a C string (tools/c_string.py), for jail_zygote_start to
 * run in the sandbox it builds. */
#include "warm_zygote.inc"

/* A zygote serves at most this many runs, and for at most this long, so
 * that the hash secret and address-space layout runs share are those of
 * a bounded set of runs. */
#define WARM_RUNS 100
#define WARM_AGE_MS (600.0 * 1000.0)
/* The replacement is started this many runs, or this long, before the
 * current zygote retires (a start with numpy and pandas takes about a
 * second here). */
#define WARM_AHEAD_RUNS 10
#define WARM_AHEAD_MS (60.0 * 1000.0)
/* Starting the zygote: a preload of numpy and pandas takes about a second
 * here; a slow machine (a microvm under TCG) many. */
#define WARM_START_MS 120000
/* Answering a request is a clone: milliseconds. */
#define WARM_REPLY_MS 5000

struct warm_zygote {
	struct jail_zygote jz;
	int sock;
	uint32_t runs;          /* requests it was given */
	double started_ms;
	uint32_t refs;          /* runs going on it, and the current pointer */
	bool broken;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Kills the zygote's sandbox: its init's death takes every process in it,
 * the runs' nested namespaces included. Reaped before this returns. */
static void zygote_kill(struct warm_zygote *z)
{
	close_fd(&z->sock);
	if (z->jz.pidfd >= 0) {
		pidfd_send_signal(z->jz.pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		while (waitid(P_PIDFD, (id_t)z->jz.pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
	}
	close_fd(&z->jz.pidfd);
	close_fd(&z->jz.life_w);
}

static void zygote_free(struct warm_zygote *z)
{
	zygote_kill(z);
	close_fd(&z->jz.log_r);
	close_fd(&z->jz.report_r);
	free(z);
}

static void zygote_put(struct warm_zygote *z)
{
	if (--z->refs == 0)
		zygote_free(z);
}

/* Waits until fd is readable or ms pass: true if readable. */
static bool wait_readable(int fd, double ms)
{
	double until = now_ms() + ms;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = (int)(until - now_ms());
		int n = poll(&p, 1, left > 0 ? left : 0);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0;
	}
}

/* As much of text as fits in out[n]. */
static void copy_text(char *out, size_t n, const char *text)
{
	size_t k = strnlen(text, n - 1);
	memcpy(out, text, k);
	out[k] = '\0';
}

/* What the zygote said before it failed: its last line, for the error. */
static void zygote_last_words(struct warm_zygote *z, char *out, size_t n)
{
	char buf[2048];
	ssize_t len = 0, got;
	out[0] = '\0';
	while (len < (ssize_t)sizeof buf - 1 &&
	       (got = read(z->jz.log_r, buf + len, sizeof buf - 1 - (size_t)len)) > 0)
		len += got;
	struct sandbox_report r;
	if (read(z->jz.report_r, &r, sizeof r) == (ssize_t)sizeof r && r.kind == REPORT_SETUP_FAILED) {
		r.message[sizeof r.message - 1] = '\0';
		copy_text(out, n, r.message);
		return;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	char *last = strrchr(buf, '\n');
	copy_text(out, n, last ? last + 1 : buf);
}

/* The helper library as a sealed memfd: the zygote loads it from its fd 4,
 * in whatever view it has. */
static int helper_memfd(struct aj_error *err)
{
	int fd = memfd_create("agentjail-warm-helper", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return error_set(err, -errno, "warm: memfd: %s", errno_name(errno));
	int rc = write_full(fd, warm_helper_so, sizeof warm_helper_so);
	if (!rc && fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return error_set(err, rc, "warm: the helper library: %s", errno_name(-rc));
	}
	return fd;
}

static int zygote_start(struct warm *w, struct warm_zygote **out, struct aj_error *err)
{
	struct warm_zygote *z = calloc(1, sizeof *z);
	if (!z)
		return error_set(err, -ENOMEM, "warm: out of memory");
	z->sock = -1;
	z->jz.pidfd = z->jz.log_r = z->jz.report_r = -1;
	int sv[2] = {-1, -1};
	int helper = helper_memfd(err);
	int rc = helper < 0 ? helper : 0;
	if (!rc && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		rc = error_set(err, -errno, "warm: socketpair: %s", errno_name(errno));
	if (!rc) {
		struct jail_spec s = w->base;
		s.zygote_fd = sv[1];
		s.helper_fd = helper;
		rc = jail_zygote_start(&s, warm_zygote_py, &z->jz, err);
	}
	close_fd(&sv[1]);
	if (helper >= 0)
		close(helper);
	z->sock = sv[0];
	if (rc) {
		zygote_free(z);
		return rc;
	}
	/* Ready ("R"), or why not ("E..."), or the end of the zygote. */
	char msg[4096];
	ssize_t got = 0;
	if (!wait_readable(z->sock, WARM_START_MS)) {
		rc = error_set(err, -ETIMEDOUT, "warm: the zygote was not ready within %d s",
			       WARM_START_MS / 1000);
	} else if ((got = recv(z->sock, msg, sizeof msg - 1, 0)) > 1 && msg[0] == 'E') {
		msg[got] = '\0';
		rc = error_set(err, -EINVAL, "warm: %s", msg + 1);
	} else if (got != 1 || msg[0] != 'R') {
		char why[400];
		zygote_last_words(z, why, sizeof why);
		rc = error_set(err, -EPIPE, "warm: the zygote ended before it was ready%s%s",
			       why[0] ? ": " : "", why);
	}
	if (rc) {
		zygote_free(z);
		return rc;
	}
	/* It says nothing more: what it would say now would only fill a pipe. */
	close_fd(&z->jz.log_r);
	z->started_ms = now_ms();
	z->refs = 1; /* w->current's (or the pool's) */
	*out = z;
	return 0;
}

/* Under w->lock: whether z is past its span (or broken), and whether it is
 * near enough the end that its replacement should start. */
static bool zygote_retired(const struct warm_zygote *z)
{
	return z->broken || z->runs >= WARM_RUNS || now_ms() - z->started_ms >= WARM_AGE_MS;
}

static bool zygote_ending(const struct warm_zygote *z)
{
	/* (A broken one is replaced by the run that found it, at once.) */
	return z->runs + WARM_AHEAD_RUNS >= WARM_RUNS ||
	       now_ms() - z->started_ms + WARM_AHEAD_MS >= WARM_AGE_MS;
}

/* The pool of one (src/core/pool.c): the next zygote, started by the
 * pool's thread while the current one still serves, outside the lock (a
 * start takes tens of milliseconds to seconds). A start that fails is left
 * to the run that needs the zygote, which then starts one itself and
 * reports why it could not; the thread tries again after 5 s. */
static int next_make(void *ctx, void *item)
{
	struct warm *w = ctx;
	struct warm_zygote *z = NULL;
	struct aj_error err = {0};
	int rc = zygote_start(w, &z, &err);
	if (rc)
		return rc;
	pthread_mutex_lock(&w->lock);
	w->started++;
	pthread_mutex_unlock(&w->lock);
	memcpy(item, &z, sizeof z);
	return 0;
}

/* Not under w->lock (a take calls it with w->lock held): the zygote is the
 * pool's alone, its one reference the pool's. */
static void next_end(void *ctx, void *item)
{
	(void)ctx;
	struct warm_zygote *z;
	memcpy(&z, item, sizeof z);
	zygote_put(z);
}

static bool next_usable(void *ctx, const void *item)
{
	(void)ctx;
	const struct warm_zygote *z;
	memcpy(&z, item, sizeof z);
	return !zygote_retired(z);
}

/* One is wanted once the current zygote nears its retirement. */
static unsigned next_wanted(void *ctx)
{
	struct warm *w = ctx;
	pthread_mutex_lock(&w->lock);
	unsigned n = w->current && zygote_ending(w->current);
	pthread_mutex_unlock(&w->lock);
	return n;
}

static void next_idle(void *ctx)
{
	struct warm *w = ctx;
	if (w->idle)
		w->idle(w->idle_ctx);
}

static const struct pool_ops next_ops = {
	.item_size = sizeof(struct warm_zygote *), .size = 1, .make = next_make,
	.destroy = next_end, .usable = next_usable, .wanted = next_wanted, .idle = next_idle,
	.wake_ms = 1000, .retry_ms = 5000,
	/* The application's signals are not the filler's to take. */
	.block_signals = true};

void warm_kick(struct warm *w)
{
	pool_kick(&w->pool);
}

void warm_init(struct warm *w, const struct jail_spec *base)
{
	memset(w, 0, sizeof *w);
	pthread_mutex_init(&w->lock, NULL);
	pool_init(&w->pool, &next_ops, w, w->next);
	w->base = *base;
}

void warm_destroy(struct warm *w)
{
	/* The thread first: then nothing starts a zygote any more. */
	pool_destroy(&w->pool);
	pthread_mutex_lock(&w->lock);
	if (w->current)
		zygote_put(w->current);
	w->current = NULL;
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_destroy(&w->lock);
}

/* Under w->lock (let go of while it waits for a replacement still
 * starting): the zygote a run goes to, with a reference for it. */
static int zygote_get(struct warm *w, struct warm_zygote **out, struct aj_error *err)
{
	struct warm_zygote *z = w->current;
	if (z && zygote_retired(z)) {
		/* Retired: it ends once its last run has. */
		w->current = NULL;
		zygote_put(z);
		z = NULL;
	}
	if (!z && pool_take(&w->pool, &z))
		w->current = z; /* started ahead by the pool's thread */
	if (!z) {
		/* Its replacement is still starting (a busy machine: the start
		 * took longer than the last WARM_AHEAD_RUNS runs): waited for,
		 * not started twice. A second start costs as much as the wait
		 * and would leave the first idle in the pool, a zygote nobody
		 * uses. The lock is not held meanwhile: the pool's thread
		 * takes it to finish the start. */
		pthread_mutex_unlock(&w->lock);
		struct warm_zygote *made = NULL;
		bool got = pool_take_wait(&w->pool, &made, WARM_START_MS);
		pthread_mutex_lock(&w->lock);
		if (got && w->current)
			zygote_put(made); /* another run's wait took the current one's place */
		else if (got)
			w->current = made;
		z = w->current;
		if (z && zygote_retired(z)) {
			w->current = NULL;
			zygote_put(z);
			z = NULL;
		}
	}
	if (!z) {
		int rc = zygote_start(w, &z, err);
		if (rc)
			return rc;
		w->started++;
		w->current = z;
	}
	if (zygote_ending(z))
		pool_kick(&w->pool);
	z->refs++;
	*out = z;
	return 0;
}

int warm_prestart(struct warm *w, struct aj_error *err)
{
	struct warm_zygote *z;
	pthread_mutex_lock(&w->lock);
	int rc = zygote_get(w, &z, err);
	if (!rc)
		zygote_put(z);
	/* The pool's thread replaces it ahead of its retirement from now on
	 * (none if it cannot start: each run then starts its own). */
	if (!rc)
		pool_start(&w->pool);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/* zygote_ask's answer for a zygote that failed (not an errno: the zygote's
 * own -EAGAIN from a clone under pid pressure is the run's failure). */
#define ZYGOTE_BROKEN 1

/* Under w->lock: one request and its reply. 0 with *pidfd, ZYGOTE_BROKEN if
 * the zygote failed (it is killed and marked broken: the caller may retry on
 * a new one), or -errno for the run's own failure. */
static int zygote_ask(struct warm_zygote *z, const struct warm_request *q,
		      const int *fds, int nfds, int *pidfd, struct aj_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * WARM_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct iovec iov = {.iov_base = (void *)q, .iov_len = sizeof *q};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			   .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	z->runs++;
	if (sendmsg(z->sock, &m, MSG_NOSIGNAL) != (ssize_t)sizeof *q) {
		error_set(err, -EPIPE, "warm: the zygote is gone (%s)", errno_name(errno));
		goto broken;
	}
	if (!wait_readable(z->sock, WARM_REPLY_MS)) {
		error_set(err, -ETIMEDOUT, "warm: the zygote did not answer within %d s",
			  WARM_REPLY_MS / 1000);
		goto broken;
	}
	struct warm_reply r;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} rctl;
	iov = (struct iovec){.iov_base = &r, .iov_len = sizeof r};
	m = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1, .msg_control = rctl.buf,
			    .msg_controllen = sizeof rctl.buf};
	ssize_t got = recvmsg(z->sock, &m, MSG_CMSG_CLOEXEC);
	int fd = -1;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
	if (got <= 0) {
		close_fd(&fd);
		error_set(err, -EPIPE, "warm: the zygote is gone");
		goto broken;
	}
	if (got != (ssize_t)sizeof r || r.magic != WARM_MAGIC || r.seq != q->seq ||
	    (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (r.err == 0) != (fd >= 0) ||
	    r.err > 0 || r.err < -4095) {
		/* Out of protocol: whatever it is now, it is not ours. */
		error_set(err, -EPROTO, "warm: the zygote answered out of protocol");
		close_fd(&fd);
		goto broken;
	}
	if (r.err) {
		r.message[sizeof r.message - 1] = '\0';
		return error_set(err, r.err, "%s: %s", r.message, errno_name(-r.err));
	}
	*pidfd = fd;
	return 0;
broken:
	/* Killed now, with whatever it started (a run it did not answer for
	 * included: its whole sandbox goes), and reaped, so nothing of it is
	 * running when the run is given to a new one. */
	z->broken = true;
	zygote_kill(z);
	return ZYGOTE_BROKEN;
}

/* One attempt's fds: the pipes' both ends and the program's memfd (or, made
 * ahead, the socket its "go" and program come on: go[0] init's, go[1] the
 * host's). */
struct run_fds {
	int out[2], err[2], rep[2], go[2];
	int code;
};

#define RUN_FDS_NONE {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, -1}

static void run_fds_close(struct run_fds *f)
{
	for (int i = 0; i < 2; i++) {
		close_fd(&f->out[i]);
		close_fd(&f->err[i]);
		close_fd(&f->rep[i]);
		close_fd(&f->go[i]);
	}
	close_fd(&f->code);
}

static int run_fds_make(struct run_fds *f, const struct jail_spec *s, bool ahead,
			struct aj_result *res)
{
	int rc;
	if ((rc = pipe_cloexec(f->out, 1)) || (rc = pipe_cloexec(f->err, 1)) ||
	    (rc = pipe_cloexec(f->rep, 1))) {
		result_sandbox_error(res, "pipes: %s", errno_name(-rc));
		return rc;
	}
	if (ahead) {
		/* A socket, not a pipe: a send to an init that is gone fails
		 * (send_full's MSG_NOSIGNAL) instead of raising SIGPIPE. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->go) < 0) {
			rc = -errno;
			result_sandbox_error(res, "warm: socketpair: %s", errno_name(errno));
		}
		return rc;
	}
	/* The program travels as a file the run's init copies: never through
	 * the zygote's memory. */
	f->code = memfd_create("agentjail-program", MFD_CLOEXEC);
	if (f->code < 0 || (rc = write_full(f->code, s->code, s->code_len)) ||
	    lseek(f->code, 0, SEEK_SET) < 0) {
		rc = rc ? rc : -errno;
		result_sandbox_error(res, "warm: the program's file: %s", errno_name(-rc));
		return rc;
	}
	return 0;
}

/* The run's cgroup, as the zygote's view cannot name it: the v2 directory's
 * fd (the caller's), or each v1 hierarchy's tasks file opened here. */
static int cgroup_fds(const struct jail_spec *s, int *fds, int *nfds, int *opened,
		      struct aj_result *res)
{
	*opened = 0;
	if (s->into_cgroup) {
		fds[(*nfds)++] = s->cgroup_fd;
		return 0;
	}
	for (const char *const *f = s->join_cgroups; f && *f; f++) {
		if (*nfds == WARM_MAX_FDS) {
			result_sandbox_error(res, "warm: more cgroup hierarchies than %d",
					     WARM_MAX_CGROUP_FDS);
			return -E2BIG;
		}
		int fd = open(*f, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int rc = -errno;
			result_sandbox_error(res, "cgroup: open %s: %s", *f, errno_name(errno));
			return rc;
		}
		fds[(*nfds)++] = fd;
		(*opened)++;
	}
	return 0;
}

/* A run's request to the zygote, for s. Zeroed padding and all: no byte of
 * the host's stack goes to the zygote, whose memory every later run copies. */
static void request_make(struct warm_request *q, const struct jail_spec *s, bool ahead)
{
	memset(q, 0, sizeof *q);
	q->magic = WARM_MAGIC;
	q->uid = s->uid;
	q->gid = s->gid;
	q->limits = s->cfg->limits;
	q->address_space_limit = s->address_space_limit;
	q->cgroup_ns = s->cgroup_ns;
	q->cgroup_v2 = s->into_cgroup;
	q->own_users = s->own_users;
	q->ahead = ahead;
}

/* A run's init, started by the zygote for s (ahead: built, waiting for
 * "go"). 0 with *f's host ends, *pidfd, *zp (a reference on the zygote)
 * and *start (when init was asked for), or -errno with res filled. */
static int warm_start(struct warm *w, const struct jail_spec *s, bool ahead, struct run_fds *f,
		      int *pidfd, struct warm_zygote **zp, double *start, struct aj_result *res)
{
	struct aj_error err = {0};
	int fds[WARM_MAX_FDS], nfds = WARM_FD_CGROUP, opened = 0;
	struct warm_zygote *z = NULL;
	struct warm_request q;
	int rc;

	request_make(&q, s, ahead);
	if ((rc = cgroup_fds(s, fds, &nfds, &opened, res)))
		goto done;
	q.n_cgroup_fds = (uint8_t)(nfds - WARM_FD_CGROUP);
	if (s->egress_fd >= 0) {
		q.egress = 1;
		fds[nfds++] = s->egress_fd; /* the caller's: it closes it */
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		/* Fresh pipes and program file for each attempt: a broken
		 * zygote may have started the run it did not answer for. */
		run_fds_close(f);
		if ((rc = run_fds_make(f, s, ahead, res)))
			goto done;
		fds[WARM_FD_OUT] = f->out[1];
		fds[WARM_FD_ERR] = f->err[1];
		fds[WARM_FD_REPORT] = f->rep[1];
		fds[WARM_FD_CODE] = ahead ? f->go[0] : f->code;
		pthread_mutex_lock(&w->lock);
		if (!(rc = zygote_get(w, &z, &err))) {
			q.seq = ++w->seq;
			/* The run's clock starts as its init is asked for: a
			 * zygote's start or a broken one's replacement is not
			 * the program's time. */
			*start = now_ms();
			rc = zygote_ask(z, &q, fds, nfds, pidfd, &err);
			if (rc == ZYGOTE_BROKEN) {
				/* Broken (zygote_ask killed it): no run goes to it
				 * again, and this one goes to a new one. */
				w->replaced++;
				if (w->current == z) {
					w->current = NULL;
					zygote_put(z);
				}
				zygote_put(z);
				z = NULL;
			}
		}
		pthread_mutex_unlock(&w->lock);
		if (rc != ZYGOTE_BROKEN)
			break;
	}
	if (rc == ZYGOTE_BROKEN)
		rc = -EPIPE;
	if (rc)
		result_sandbox_error(res, "%s", err.message[0] ? err.message : "warm: no zygote");
	/* init has its ends now (or there is no init): the host must not hold
	 * a write end of what it reads to EOF. */
	close_fd(&f->out[1]);
	close_fd(&f->err[1]);
	close_fd(&f->rep[1]);
	close_fd(&f->go[0]);
	close_fd(&f->code);
done:
	for (int i = 0; i < opened; i++)
		close(fds[WARM_FD_CGROUP + i]);
	if (rc && z) {
		pthread_mutex_lock(&w->lock);
		zygote_put(z);
		pthread_mutex_unlock(&w->lock);
		z = NULL;
	}
	*zp = z;
	return rc;
}

/* Supervises the run on init's pidfd and f's host ends, as a cold run is
 * supervised, from start. */
static int warm_supervise(const struct jail_spec *s, int pidfd, const struct run_fds *f,
			  double start, struct aj_result *res)
{
	struct supervised sv = {.pidfd = pidfd, .out_fd = f->out[0], .err_fd = f->err[0],
				.report_fd = f->rep[0], .cancel_fd = s->cancel_fd, .start_ms = start,
				.cgroup = s->cgroup, .stream = s->stream, .clock_at_start = true};
	return supervise_run(&sv, &s->cfg->limits, res);
}

static void zygote_put_locking(struct warm *w, struct warm_zygote *z)
{
	if (!z)
		return;
	pthread_mutex_lock(&w->lock);
	zygote_put(z);
	pthread_mutex_unlock(&w->lock);
}

int warm_run(struct warm *w, const struct jail_spec *s, struct aj_result *res)
{
	struct run_fds f = RUN_FDS_NONE;
	struct warm_zygote *z = NULL;
	int pidfd = -1;
	double start = 0;
	int rc = warm_start(w, s, false, &f, &pidfd, &z, &start, res);
	if (!rc)
		rc = warm_supervise(s, pidfd, &f, start, res);
	zygote_put_locking(w, z);
	close_fd(&pidfd);
	run_fds_close(&f);
	return rc;
}

int warm_prepare(struct warm *w, const struct jail_spec *s, struct warm_ready *r,
		 struct aj_error *err)
{
	struct run_fds f = RUN_FDS_NONE;
	struct aj_result res;
	memset(&res, 0, sizeof res);
	double start;
	*r = (struct warm_ready){.pidfd = -1, .out_r = -1, .err_r = -1, .report_r = -1,
				 .go_w = -1};
	int rc = warm_start(w, s, true, &f, &r->pidfd, &r->zygote, &start, &res);
	if (rc) {
		error_set(err, rc, "%s", res.message ? res.message : "warm: made ahead");
		aj_result_free(&res);
		run_fds_close(&f);
		return rc;
	}
	r->out_r = f.out[0];
	r->err_r = f.err[0];
	r->report_r = f.rep[0];
	r->go_w = f.go[1];
	return 0;
}

int warm_run_ready(struct warm *w, struct warm_ready *r, const struct jail_spec *s,
		   struct aj_result *res)
{
	/* The program's clock starts now (and, as for every run, again when
	 * init reports it started): the wait before was no run's. */
	double start = now_ms();
	jail_send_program(r->go_w, s->code, s->code_len);
	struct run_fds f = RUN_FDS_NONE;
	f.out[0] = r->out_r;
	f.err[0] = r->err_r;
	f.rep[0] = r->report_r;
	int rc = warm_supervise(s, r->pidfd, &f, start, res);
	warm_ready_discard(w, r);
	return rc;
}

bool warm_ready_usable(struct warm *w, const struct warm_ready *r)
{
	/* Only on the zygote that serves now: one that retired (its span of
	 * runs or time, which bounds the runs sharing its hash secret and
	 * layout) or broke serves no more runs, and ends once what it made
	 * ahead is discarded. */
	pthread_mutex_lock(&w->lock);
	bool ok = r->zygote == w->current && !zygote_retired(r->zygote);
	pthread_mutex_unlock(&w->lock);
	return ok;
}

void warm_ready_discard(struct warm *w, struct warm_ready *r)
{
	/* init first (the zygote reaps it): a sandbox made ahead that is
	 * discarded unused serves no run. */
	if (r->pidfd >= 0)
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
	close_fd(&r->pidfd);
	close_fd(&r->out_r);
	close_fd(&r->err_r);
	close_fd(&r->report_r);
	close_fd(&r->go_w);
	zygote_put_locking(w, r->zygote);
	r->zygote = NULL;
}
