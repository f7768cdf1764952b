/* Checkpoints, pauses and forks of sessions (docs/checkpoints.md), on
 * every tier alike: the session's interpreter writes its state as one file
 * in the sandbox (src/core/repl_state.py), this file carries it out in
 * parts into a checkpoint file (src/core/checkpoint_file.c: authenticated),
 * and carries one back into a new sandbox, whose interpreter loads it. The
 * host only moves bytes: it never unpickles what a sandbox wrote.
 *
 * A pause is a checkpoint into a private file of this process and the end
 * of the sandbox; the session's next call brings it back (session.c calls
 * wake). A fork is one checkpoint loaded into n new sessions at once. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../core/checkpoint_file.h"
#include "../core/internal.h"
#include "../tiers/tier.h"
#include "api.h"

/* The state's name in the workspace while it is made or read (repl_state.py). */
#define STATE_FILE ".agentjail-state"
/* Bytes a part carries each way: well under a request's or reply's line. */
#define PART_BYTES (4u << 20)
#define REPLY_ROOM (64u << 10)
/* Sessions a fork opens at once (each open is mostly waiting: a microVM's
 * restore, runsc's start). */
#define FORK_AT_ONCE 8

/* ---- what was carried, in words ---- */

static void note_add(char *note, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note_add(char *note, size_t cap, const char *fmt, ...)
{
	size_t used = strlen(note);
	if (used + 4 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(note + used, cap - used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - used)
		strcpy(note + cap - 4, "...");
}

/* info from save's reply (or a header, which keeps the same fields). */
static void info_from(json_t *o, struct aj_checkpoint_info *info)
{
	if (!info)
		return;
	memset(info, 0, sizeof *info);
	info->bytes = (uint64_t)json_integer_value(json_object_get(o, "bytes"));
	info->files = (uint32_t)json_integer_value(json_object_get(o, "files"));
	json_t *left = json_object_get(o, "left_out");
	info->left_out = (uint32_t)json_array_size(left);
	snprintf(info->note, sizeof info->note, "%s",
		 json_string_value(json_object_get(o, "note")) ?: "");
}

/* The words of what save's reply says was not carried. */
static char *note_of(json_t *reply)
{
	const size_t cap = sizeof ((struct aj_checkpoint_info *)0)->note;
	char *out = calloc(1, cap);
	if (!out)
		return NULL;
	json_t *left = json_object_get(reply, "left_out"), *v;
	size_t i;
	json_array_foreach(left, i, v)
	{
		const char *ctx = json_string_value(json_array_get(v, 0));
		note_add(out, cap, "%svariable %s%s%s not carried (%s)", *out ? "; " : "",
			 json_string_value(json_array_get(v, 1)) ?: "?", ctx ? " of context " : "",
			 ctx ? ctx : "", json_string_value(json_array_get(v, 2)) ?: "");
	}
	json_t *procs = json_object_get(reply, "procs");
	json_array_foreach(procs, i, v)
		note_add(out, cap, "%s%s %lld", *out ? (i ? "," : "; ") : "",
			 i ? "" : "background commands not carried (they are not restarted): pid",
			 (long long)json_integer_value(v));
	if (json_is_true(json_object_get(reply, "javascript")))
		note_add(out, cap, "%sthe JavaScript state not carried (its next cell "
					   "starts a new node)",
			 *out ? "; " : "");
	return out;
}

/* ---- a verified file's payload, in parts ---- */

typedef int (*part_fn)(void *arg, const char *buf, size_t n, uint64_t at, struct aj_error *err);

/* fn on each part of the len bytes at off in fd, in order (at: the part's
 * offset in the payload): 0, fn's -errno, or -EIO when fd reads short. */
static int each_part(int fd, off_t off, uint64_t len, const char *what, part_fn fn, void *arg,
		     struct aj_error *err)
{
	char *buf = malloc(PART_BYTES);
	if (!buf)
		return error_set(err, -ENOMEM, "%s: out of memory", what);
	int rc = 0;
	for (uint64_t done = 0; !rc && done < len; done += PART_BYTES) {
		size_t n = len - done < PART_BYTES ? (size_t)(len - done) : PART_BYTES;
		ssize_t k = pread(fd, buf, n, off + (off_t)done);
		rc = k == (ssize_t)n ? fn(arg, buf, n, done, err)
				     : error_set(err, -EIO, "%s: reading the checkpoint: %s", what,
						 k < 0 ? strerror(errno) : "short");
	}
	free(buf);
	return rc;
}

static int part_into_writer(void *arg, const char *buf, size_t n, uint64_t at,
			    struct aj_error *err)
{
	(void)at;
	return ckpt_write(arg, buf, n, err);
}

/* ---- the host's view of the workspace ---- */

/* States moved through the host's view, either way (for tests: that the
 * path is taken where the tier has it). */
static atomic_ulong direct_moves;

unsigned long session_state_direct_moves(void)
{
	return atomic_load(&direct_moves);
}

/* The state file in s's workspace (s held) opened by the host itself,
 * where the tier lets it see the workspace: the bytes cross as they are,
 * not as base64 in the session's JSON lines. -ENOTSUP where it cannot
 * (the tier has no view, or this process may not open the file): the
 * caller then moves the state through the interpreter. */
static int state_open_host(struct aj_session *s, int flags, struct stat *dir)
{
	struct aj_error ignored;
	int ws = session_workspace_held(s, &ignored);
	if (ws < 0)
		return -ENOTSUP;
	/* Beneath the workspace, no link followed, on its own mount: the
	 * program owns the directory and may have put anything there. A
	 * FIFO must not hold the host: O_NONBLOCK, and the caller checks the
	 * file is a regular one. */
	struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
			       .mode = flags & O_CREAT ? 0600 : 0,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, ws, STATE_FILE, &how, sizeof how);
	if (fd >= 0 && dir && fstat(ws, dir)) {
		close(fd);
		fd = -1;
	}
	close(ws);
	return fd >= 0 ? fd : -ENOTSUP;
}

/* The state (size bytes, just written by the interpreter) into w from
 * the host's view: 0 when all came; -ENOTSUP when there is no view (w
 * untouched); else -errno with err. */
static int state_read_host(struct aj_session *s, struct ckpt_writer *w, uint64_t size,
			   struct aj_error *err)
{
	int fd = state_open_host(s, O_RDONLY, NULL);
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		rc = error_set(err, -EPROTO, "checkpoint: the state changed or ended while it "
					     "was read");
	char *buf = rc ? NULL : malloc(PART_BYTES);
	if (!rc && !buf)
		rc = error_set(err, -ENOMEM, "checkpoint: out of memory");
	for (uint64_t done = 0; !rc && done < size;) {
		size_t n = size - done < PART_BYTES ? (size_t)(size - done) : PART_BYTES;
		ssize_t k = pread(fd, buf, n, (off_t)done);
		if (k <= 0)
			rc = error_set(err, -EPROTO, "checkpoint: the state changed or ended while "
						     "it was read");
		else
			rc = ckpt_write(w, buf, (size_t)k, err);
		done += k > 0 ? (uint64_t)k : 0;
	}
	free(buf);
	close(fd);
	if (!rc)
		atomic_fetch_add(&direct_moves, 1);
	return rc;
}

static int part_to_fd(void *arg, const char *buf, size_t n, uint64_t at, struct aj_error *err)
{
	(void)at;
	int fd = *(int *)arg;
	for (size_t put = 0; put < n;) {
		ssize_t w = write(fd, buf + put, n - put);
		if (w > 0)
			put += (size_t)w;
		else if (errno == ENOSPC || errno == EDQUOT)
			return error_set(err, -ENOSPC, "restore: the session's state passed the "
						       "sandbox's disk (--disk)");
		else if (errno != EINTR)
			return error_set(err, -errno, "restore: %s", strerror(errno));
	}
	return 0;
}

/* The payload (len bytes at off in src) written as the new session's
 * state file from the host's view, owned by the workspace's owner (the
 * sandbox's uid): 0; -ENOTSUP (nothing written); else -errno with err. */
static int state_write_host(struct aj_session *s, int src, off_t off, uint64_t len,
			    struct aj_error *err)
{
	struct stat dir;
	int fd = state_open_host(s, O_WRONLY | O_CREAT | O_EXCL, &dir);
	if (fd < 0)
		return fd;
	int rc = 0;
	if (fchown(fd, dir.st_uid, dir.st_gid))
		rc = -ENOTSUP; /* not root here: through the interpreter, then */
	else
		rc = each_part(src, off, len, "restore", part_to_fd, &fd, err);
	close(fd);
	if (!rc)
		atomic_fetch_add(&direct_moves, 1);
	return rc;
}

/* ---- out of the sandbox ---- */

/* s held: its state into w's file (the header made here), and its state
 * file in the sandbox removed. */
static int save_into(struct aj_session *s, const struct aj_checkpoint_key *key, int fd,
		     struct aj_checkpoint_info *info, struct aj_error *err)
{
	json_t *reply = NULL, *req = json_pack("{s:s}", "op", "save");
	int rc = req ? session_request_held(s, "checkpoint", req, REPLY_ROOM, &reply, err)
		     : error_set(err, -ENOMEM, "checkpoint: out of memory");
	json_decref(req);
	if (rc)
		goto drop;
	const struct aj_config *cfg = session_config(s);
	json_int_t size = json_integer_value(json_object_get(reply, "size"));
	/* The state was made on the sandbox's own disk: it cannot be larger
	 * than that, and a reply that says so is not believed. */
	if (size <= 0 || (uint64_t)size > (uint64_t)cfg->limits.disk_mb << 20) {
		rc = error_set(err, -EPROTO, "checkpoint: the interpreter's state of %lld bytes is "
					     "not within the sandbox's disk of %u MiB",
			       (long long)size, cfg->limits.disk_mb);
		goto drop;
	}
	char *note = note_of(reply);
	json_t *header = json_pack("{s:i, s:I, s:I, s:s, s:I, s:O, s:s}", "v", 1, "bytes",
				   (json_int_t)size, "created", (json_int_t)time(NULL), "tier",
				   aj_tier_name(cfg->tier), "files",
				   json_integer_value(json_object_get(reply, "files")), "left_out",
				   json_object_get(reply, "left_out") ?: json_null(), "note",
				   note ? note : "");
	free(note);
	struct ckpt_writer w;
	if (!header)
		rc = error_set(err, -ENOMEM, "checkpoint: out of memory");
	else if (!(rc = ckpt_write_begin(&w, fd, key, header, err))) {
		rc = state_read_host(s, &w, (uint64_t)size, err);
		json_int_t off = rc == -ENOTSUP ? 0 : size;
		if (rc == -ENOTSUP)
			rc = 0;
		for (; !rc && off < size;) {
			json_t *part = NULL;
			req = json_pack("{s:s, s:s, s:I, s:I}", "op", "get", "path", STATE_FILE, "max",
					(json_int_t)PART_BYTES, "offset", (json_int_t)off);
			rc = req ? session_request_held(s, "checkpoint", req,
							PART_BYTES / 3 * 4 + 4 + REPLY_ROOM, &part, err)
				 : error_set(err, -ENOMEM, "checkpoint: out of memory");
			json_decref(req);
			json_t *d = json_object_get(part, "data");
			unsigned char *buf = NULL;
			size_t n = 0;
			if (!rc && (json_integer_value(json_object_get(part, "size")) != size ||
				    !json_is_string(d) ||
				    base64_decode(json_string_value(d), json_string_length(d), &buf,
						  &n) ||
				    !n || n > PART_BYTES))
				rc = error_set(err, -EPROTO, "checkpoint: the state changed or ended "
							     "while it was read");
			if (!rc)
				rc = ckpt_write(&w, buf, n, err);
			free(buf);
			json_decref(part);
			off += (json_int_t)n;
		}
		if (rc)
			ckpt_write_abort(&w);
		else
			rc = ckpt_write_end(&w, err);
	}
	if (!rc)
		info_from(header, info);
	json_decref(header);
drop:;
	/* Never left in the workspace for the agent to find. */
	json_t *gone = NULL, *dreq = json_pack("{s:s}", "op", "state_drop");
	struct aj_error ignored;
	if (dreq)
		(void)session_request_held(s, "checkpoint", dreq, REPLY_ROOM, &gone, &ignored);
	json_decref(dreq);
	json_decref(gone);
	json_decref(reply);
	return rc;
}

/* ---- into a sandbox ---- */

/* s held, new: the payload (len bytes at off in fd, a verified private
 * copy) written into its sandbox and loaded there. */
static int part_to_interpreter(void *arg, const char *buf, size_t n, uint64_t at,
			       struct aj_error *err)
{
	char *b64 = base64_encode(buf, n, NULL);
	json_t *reply = NULL,
	       *req = b64 ? json_pack("{s:s, s:I, s:s}", "op", "state_write", "offset",
				      (json_int_t)at, "data", b64)
			  : NULL;
	free(b64);
	int rc = req ? session_request_held(arg, "restore", req, REPLY_ROOM, &reply, err)
		     : error_set(err, -ENOMEM, "restore: out of memory");
	json_decref(req);
	json_decref(reply);
	return rc;
}

static int load_into(struct aj_session *s, int fd, off_t off, uint64_t len, struct aj_error *err)
{
	const struct aj_config *cfg = session_config(s);
	/* The interpreter could not write a larger file (RLIMIT_FSIZE), and
	 * the host writing it must not do what the sandbox may not. */
	if (len > (uint64_t)cfg->limits.file_size_mb << 20)
		return error_set(err, -EFBIG, "restore: the session's state of %llu bytes passes "
				 "the sandbox's largest file (--file-size) of %u MiB",
				 (unsigned long long)len, cfg->limits.file_size_mb);
	int rc = state_write_host(s, fd, off, len, err);
	if (rc == -ENOTSUP)
		rc = each_part(fd, off, len, "restore", part_to_interpreter, s, err);
	if (rc)
		return rc;
	json_t *reply = NULL, *req = json_pack("{s:s}", "op", "load");
	rc = req ? session_request_held(s, "restore", req, REPLY_ROOM, &reply, err)
		 : error_set(err, -ENOMEM, "restore: out of memory");
	json_decref(req);
	if (!rc && !json_is_true(json_object_get(reply, "loaded")))
		rc = error_set(err, -EPROTO, "restore: the session's variables could not be "
					     "loaded: %.300s",
			       json_string_value(json_object_get(reply, "why")) ?: "no reason given");
	json_decref(reply);
	return rc;
}

/* ---- keys ---- */

/* The process's own key, for the files only it reads (pause, fork). */
static struct aj_checkpoint_key process_key;
static int process_key_rc;
static pthread_once_t process_key_once = PTHREAD_ONCE_INIT;

static void process_key_make(void)
{
	if (getrandom(process_key.bytes, sizeof process_key.bytes, 0) !=
	    (ssize_t)sizeof process_key.bytes)
		process_key_rc = -EIO;
}

static int own_key(const struct aj_checkpoint_key **key, struct aj_error *err)
{
	pthread_once(&process_key_once, process_key_make);
	*key = &process_key;
	return process_key_rc ? error_set(err, process_key_rc, "checkpoint: no random key") : 0;
}

int aj_checkpoint_key_load(const char *path, bool create, struct aj_checkpoint_key *key,
			   struct aj_error *err)
{
	if (!path || !key)
		return error_set(err, -EINVAL, "checkpoint key: no path given");
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		struct aj_checkpoint_key made;
		int wfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (wfd >= 0) {
			int rc = getrandom(made.bytes, sizeof made.bytes, 0) == (ssize_t)sizeof made.bytes
					 ? write_full(wfd, made.bytes, sizeof made.bytes)
					 : -EIO;
			if (!rc && fsync(wfd))
				rc = -errno;
			close(wfd);
			if (rc) {
				unlink(path);
				return error_set(err, rc, "checkpoint key: %s: %s", path, strerror(-rc));
			}
		} else if (errno != EEXIST) {
			return error_set(err, -errno, "checkpoint key: %s: %s", path, strerror(errno));
		}
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return error_set(err, -errno, "checkpoint key: %s: %s", path, strerror(errno));
	struct stat st;
	int rc = fstat(fd, &st) ? -errno : 0;
	/* A key another user could read or replace authenticates nothing. */
	if (!rc && (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)))
		rc = error_set(err, -EPERM, "checkpoint key: %s must be a regular file of this "
					    "user's, mode 0600 (it is %o, owner %u)",
			       path, (unsigned)st.st_mode & 07777, (unsigned)st.st_uid);
	else if (!rc && st.st_size != AJ_CHECKPOINT_KEY_BYTES)
		rc = error_set(err, -EINVAL, "checkpoint key: %s holds %lld bytes, not %d", path,
			       (long long)st.st_size, AJ_CHECKPOINT_KEY_BYTES);
	else if (!rc && (rc = read_full(fd, key->bytes, sizeof key->bytes)))
		error_set(err, rc, "checkpoint key: %s: %s", path, strerror(-rc));
	else if (rc)
		error_set(err, rc, "checkpoint key: %s: %s", path, strerror(-rc));
	close(fd);
	return rc;
}

/* ---- the calls ---- */

/* The verified private copy of the checkpoint in src: its fd, payload
 * offset and length, header. */
static int verified(int src, const struct aj_checkpoint_key *key, int *fd, off_t *off,
		    uint64_t *len, json_t **header, struct aj_error *err)
{
	int rc = ckpt_open_verified(src, key, fd, header, len, err);
	if (rc)
		return rc;
	*off = lseek(*fd, 0, SEEK_CUR);
	return 0;
}

/* A paused session's state (paused, the process's file) into fd under
 * key: the same header and payload, its tag checked under the process's
 * key first and made anew under key. The session stays paused. */
static int copy_paused(int paused, const struct aj_checkpoint_key *key, int out,
		       struct aj_checkpoint_info *info, struct aj_error *err)
{
	const struct aj_checkpoint_key *own;
	int fd = -1;
	off_t off = 0;
	uint64_t len = 0;
	json_t *header = NULL;
	struct ckpt_writer w;
	int rc = own_key(&own, err);
	if (rc || (rc = verified(paused, own, &fd, &off, &len, &header, err)) ||
	    (rc = ckpt_write_begin(&w, out, key, header, err)))
		goto out;
	rc = each_part(fd, off, len, "checkpoint", part_into_writer, &w, err);
	if (rc)
		ckpt_write_abort(&w);
	else if (!(rc = ckpt_write_end(&w, err)))
		info_from(header, info);
out:
	json_decref(header);
	if (fd >= 0)
		close(fd);
	return rc;
}

int aj_session_checkpoint(struct aj_session *s, const struct aj_checkpoint_key *key,
			  const char *path, struct aj_checkpoint_info *info, struct aj_error *err)
{
	if (!key || !path || !*path)
		return error_set(err, -EINVAL, "checkpoint: a key and a path are needed");
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
		return error_set(err, -ENAMETOOLONG, "checkpoint: %s: path too long", path);
	/* A paused session is checkpointed as it sleeps: its state is the
	 * file its pause wrote, and waking it would spend a sandbox. */
	int paused;
	int rc = session_hold_asleep(s, &paused, err);
	if (rc)
		return rc;
	/* Written beside it and renamed: a reader sees the old file or the
	 * whole new one, never a part. mkostemp makes it 0600. */
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		rc = error_set(err, -errno, "checkpoint: %s: %s", path, strerror(errno));
	else if (paused >= 0)
		rc = copy_paused(paused, key, fd, info, err);
	else
		rc = save_into(s, key, fd, info, err);
	if (!rc && rename(tmp, path))
		rc = error_set(err, -errno, "checkpoint: %s: %s", path, strerror(errno));
	session_release(s);
	if (fd >= 0) {
		close(fd);
		if (rc)
			unlink(tmp);
	}
	return rc;
}

/* A new session under cfg with the verified payload of fd loaded. */
static int open_loaded(const struct aj_config *cfg, int fd, off_t off, uint64_t len,
		       struct aj_session **out, struct aj_error *err)
{
	struct aj_session *s = NULL;
	int rc = aj_session_open(cfg, &s, err);
	if (rc)
		return rc;
	if (!(rc = session_hold(s, err))) {
		rc = load_into(s, fd, off, len, err);
		session_release(s);
	}
	if (rc)
		aj_session_close(s);
	else
		*out = s;
	return rc;
}

int aj_session_restore(const struct aj_config *cfg, const struct aj_checkpoint_key *key,
		       const char *path, struct aj_session **out, struct aj_checkpoint_info *info,
		       struct aj_error *err)
{
	*out = NULL;
	if (!key || !path || !*path)
		return error_set(err, -EINVAL, "restore: a key and a path are needed");
	int src = open(path, O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return error_set(err, -errno, "restore: %s: %s", path, strerror(errno));
	int fd = -1;
	off_t off = 0;
	uint64_t len = 0;
	json_t *header = NULL;
	int rc = verified(src, key, &fd, &off, &len, &header, err);
	close(src);
	if (!rc && !(rc = open_loaded(cfg, fd, off, len, out, err)))
		info_from(header, info);
	json_decref(header);
	if (fd >= 0)
		close(fd);
	return rc;
}

struct fork_job {
	const struct aj_config *cfg;
	int fd;
	off_t off;
	uint64_t len;
	struct aj_session **out;
	int *rcs;
	struct aj_error *errs;
	unsigned n;
	pthread_mutex_t m;
	unsigned next;
};

static void *fork_worker(void *arg)
{
	struct fork_job *j = arg;
	for (;;) {
		pthread_mutex_lock(&j->m);
		unsigned i = j->next < j->n ? j->next++ : j->n;
		pthread_mutex_unlock(&j->m);
		if (i >= j->n)
			return NULL;
		j->rcs[i] = open_loaded(j->cfg, j->fd, j->off, j->len, &j->out[i], &j->errs[i]);
	}
}

int aj_session_fork(struct aj_session *s, unsigned n, struct aj_session **out,
		    struct aj_checkpoint_info *info, struct aj_error *err)
{
	if (!out || n < 1 || n > AJ_MAX_FORK)
		return error_set(err, -EINVAL, "fork: %u copies is not within 1 to %d", n,
				 AJ_MAX_FORK);
	memset(out, 0, n * sizeof *out);
	const struct aj_checkpoint_key *key;
	int rc = own_key(&key, err);
	if (rc || (rc = session_hold(s, err)))
		return rc;
	/* The copies' config is the session's own as its caller gave it,
	 * read while it is held (what open added, each copy's open adds
	 * again: a trust bundle of its own, its placeholders). */
	struct aj_config cfg;
	session_given_config(s, &cfg);
	int tmp = ckpt_private_file(err);
	if (tmp < 0)
		rc = tmp;
	else
		rc = save_into(s, key, tmp, info, err);
	session_release(s);
	int fd = -1;
	off_t off = 0;
	uint64_t len = 0;
	json_t *header = NULL;
	if (!rc)
		rc = verified(tmp, key, &fd, &off, &len, &header, err);
	if (tmp >= 0)
		close(tmp);
	json_decref(header);
	if (rc)
		return rc;
	struct fork_job j = {.cfg = &cfg, .fd = fd, .off = off, .len = len, .out = out, .n = n,
			     .rcs = calloc(n, sizeof(int)), .errs = calloc(n, sizeof(struct aj_error))};
	pthread_mutex_init(&j.m, NULL);
	pthread_t threads[FORK_AT_ONCE];
	unsigned started = 0;
	if (!j.rcs || !j.errs)
		rc = error_set(err, -ENOMEM, "fork: out of memory");
	for (; !rc && started < FORK_AT_ONCE && started < n; started++)
		if (pthread_create(&threads[started], NULL, fork_worker, &j))
			break;
	if (!rc && !started)
		fork_worker(&j); /* no thread to be had: one after another, here */
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	for (unsigned i = 0; !rc && i < n; i++)
		if (j.rcs[i]) {
			rc = j.rcs[i];
			*err = j.errs[i];
		}
	/* Each copy under the rules and secrets its session has now: one it
	 * narrowed (a pip install's host dropped, a secret let go) stays
	 * dropped in every copy. */
	for (unsigned i = 0; !rc && i < n; i++)
		rc = session_narrow_like(out[i], s, err);
	if (rc) /* all or none */
		for (unsigned i = 0; i < n; i++) {
			aj_session_close(out[i]);
			out[i] = NULL;
		}
	pthread_mutex_destroy(&j.m);
	free(j.rcs);
	free(j.errs);
	close(fd);
	return rc;
}

/* session.c's wake for a paused session: a new sandbox, the state back. */
static int wake_paused(struct aj_session *s, int paused, struct aj_error *err)
{
	const struct aj_checkpoint_key *key;
	int fd = -1;
	off_t off = 0;
	uint64_t len = 0;
	json_t *header = NULL;
	int rc = own_key(&key, err);
	if (!rc)
		rc = verified(paused, key, &fd, &off, &len, &header, err);
	json_decref(header);
	if (!rc && !(rc = session_sandbox_reopen(s, err)))
		rc = load_into(s, fd, off, len, err);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* s held: its state into a private file, its sandbox ended. */
static int pause_held(struct aj_session *s, struct aj_checkpoint_info *info,
		      struct aj_error *err)
{
	const struct aj_checkpoint_key *key;
	int rc = own_key(&key, err);
	if (rc)
		return rc;
	int fd = ckpt_private_file(err);
	if (fd < 0)
		return fd;
	if ((rc = save_into(s, key, fd, info, err)))
		close(fd);
	else
		session_suspend(s, fd, wake_paused);
	return rc;
}

static int idle_pause(struct aj_session *s, struct aj_error *err)
{
	return pause_held(s, NULL, err);
}

/* The idle timeout's pause, registered as the library loads (session.c
 * sits below this file and calls it only through the hook). */
__attribute__((constructor)) static void register_idle_pause(void)
{
	session_register_idle_pause(idle_pause);
}

int aj_session_pause(struct aj_session *s, struct aj_checkpoint_info *info, struct aj_error *err)
{
	if (aj_session_paused(s))
		return error_set(err, -EALREADY, "pause: the session is paused already");
	int rc = session_hold(s, err);
	if (rc)
		return rc;
	rc = pause_held(s, info, err);
	session_release(s);
	return rc;
}

int aj_session_resume(struct aj_session *s, struct aj_error *err)
{
	int rc = session_hold(s, err);
	if (!rc)
		session_release(s);
	return rc;
}
