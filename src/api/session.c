/* Sessions: aj_session_* over the tiers' session ops. This file owns what
 * every tier shares: the session's limits (idle timeout, lifetime, how many
 * at once), its id, one call at a time, the request and reply lines of
 * src/core/repl.py, the checks on paths and sizes, and the words an
 * agent reads when a session's state was lost or the session closed. It
 * never branches on the tier.
 *
 * Each session has a keeper thread that opens its sandbox, waits, and
 * closes it: a parent-death signal (which the microvm tier's QEMU carries,
 * so that it dies with its caller) fires when the *thread* that started the
 * process exits, and a session must outlive the call that opened it.
 *
 * A session whose idle timeout or lifetime passes is closed by the first of
 * its next call or the reaper thread (one per process, started with the
 * first session, waking every second): its sandbox is destroyed then and
 * there, and the handle stays valid (every call fails with the reason)
 * until aj_session_close frees it. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tiers/tier.h"
#include "../core/internal.h"
#include "../core/status.h"
#include "../core/stream_tap.h"
#include "../egress/proxy.h"
#include "api.h"
#include "../core/thread.h"

/* Room in a reply line beyond its base64 payload. */
#define REPLY_SLACK (64u << 10)
/* A listing's reply: repl.py lists at most 10,000 entries. */
#define LIST_REPLY_MAX (32u << 20)
#define PATH_MAX_BYTES 4096
/* How long after a call's own deadline the host stops it (above). */
#define OWN_DEADLINE_GRACE_SEC 2.0

/* The thread that opens a session's sandbox and, when told, closes it. */
struct keeper {
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool opened, close_asked;
	int rc;
	struct aj_error err;
	struct aj_session *s;
};

struct aj_session {
	pthread_mutex_t lock;       /* one call at a time */
	/* Calls waiting for the lock, besides background reads (polls):
	 * a poll lets them go first (session_poll_request). */
	atomic_uint callers;
	_Atomic double last_call_ms; /* when such a call last took the lock */
	/* A poll holds the lock, its small request sent or being sent whole
	 * (polling, under nudge_lock): a caller that comes may wake it
	 * (nudge_poll). */
	pthread_mutex_t nudge_lock;
	bool polling;
	atomic_uint readers;        /* background reads under way (session_readers) */
	struct keeper keeper;
	struct aj_sandbox *sb;      /* the tier, opened for this session */
	void *tier_session;         /* NULL once the sandbox is destroyed */
	/* The session's egress proxy, for its whole life (NULL: no rules);
	 * stopped with its sandbox. Its log is taken by each call. */
	struct egress_proxy *egress;
	char id[33];
	char *closed_reason;
	double opened_ms, last_ms;
	uint64_t seq;
	bool state_lost;            /* the next call is told: its interpreter is fresh */
	/* Paused (session_suspend): no sandbox, its state in paused_fd (a
	 * private file), which wake brings back into a new one at the next
	 * call. -1 when not paused. */
	int paused_fd;
	session_wake_fn wake;
	/* Paused with its sandbox frozen (tier_session kept: pause_keep_sec)
	 * until this time; a call before it thaws the sandbox instead. */
	double frozen_until_ms;
	bool idle_paused;           /* paused by its idle timeout ... */
	bool tell_resumed;          /* ... and resumed: the next run is told */
	struct aj_session *next;    /* the registry */
};

/* ---- the registry: how many are open, and the reaper ---- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct aj_session *registry;
static atomic_uint open_sessions;
static pthread_once_t reaper_once = PTHREAD_ONCE_INIT;

static void *keeper_main(void *arg)
{
	struct keeper *k = arg;
	struct aj_session *s = k->s;
	const struct tier_ops *ops = sandbox_ops(s->sb);
	void *ts = NULL;
	int rc = ops->session_open(sandbox_state(s->sb), sandbox_config(s->sb), s->egress, &ts,
				   &k->err);
	pthread_mutex_lock(&k->m);
	k->rc = rc;
	s->tier_session = rc ? NULL : ts;
	k->opened = true;
	pthread_cond_broadcast(&k->c);
	while (!rc && !k->close_asked)
		pthread_cond_wait(&k->c, &k->m);
	pthread_mutex_unlock(&k->m);
	if (!rc)
		ops->session_close(ts);
	return NULL;
}

/* Opens the tier's session on a keeper thread of its own. */
static int keeper_start(struct aj_session *s, struct aj_error *err)
{
	struct keeper *k = &s->keeper;
	k->s = s;
	pthread_mutex_init(&k->m, NULL);
	pthread_cond_init(&k->c, NULL);
	if (pthread_create(&k->thread, NULL, keeper_main, k)) {
		pthread_mutex_destroy(&k->m);
		pthread_cond_destroy(&k->c);
		return error_set(err, -EAGAIN, "session: cannot start its keeper thread");
	}
	pthread_mutex_lock(&k->m);
	while (!k->opened)
		pthread_cond_wait(&k->c, &k->m);
	int rc = k->rc;
	pthread_mutex_unlock(&k->m);
	if (rc) {
		pthread_join(k->thread, NULL);
		pthread_mutex_destroy(&k->m);
		pthread_cond_destroy(&k->c);
		*err = k->err;
	}
	return rc;
}

/* The keeper closes the sandbox and ends; returns once it has. */
static void keeper_stop(struct keeper *k)
{
	pthread_mutex_lock(&k->m);
	k->close_asked = true;
	pthread_cond_broadcast(&k->c);
	pthread_mutex_unlock(&k->m);
	pthread_join(k->thread, NULL);
	pthread_mutex_destroy(&k->m);
	pthread_cond_destroy(&k->c);
}

/* Resumes that thawed a frozen sandbox (for tests: that the path is taken). */
static atomic_ulong thaws;

unsigned long session_thaws(void)
{
	return atomic_load(&thaws);
}

/* A paused session's frozen sandbox ended, its memory freed (the state
 * file stays, for the next call); s->lock held. */
static void drop_frozen(struct aj_session *s)
{
	if (s->paused_fd < 0 || !s->tier_session)
		return;
	keeper_stop(&s->keeper);
	s->tier_session = NULL;
}

/* A paused session brought back, s->lock held: thawed where its sandbox
 * is frozen, exactly as it was (its processes too), else rebuilt from its
 * state file by wake; a thaw that fails ends the frozen sandbox, and the
 * file brings it back. 0, or wake's -errno with err. */
static int resume_paused(struct aj_session *s, struct aj_error *err)
{
	struct aj_error why = {0};
	if (s->tier_session && sandbox_ops(s->sb)->session_freeze(s->tier_session, false, &why))
		drop_frozen(s);
	else if (s->tier_session)
		atomic_fetch_add(&thaws, 1);
	int rc = s->tier_session ? 0 : s->wake(s, s->paused_fd, err);
	if (rc)
		return rc;
	close(s->paused_fd);
	s->paused_fd = -1;
	s->tell_resumed = s->idle_paused;
	s->idle_paused = false;
	return 0;
}

/* Destroys the sandbox, keeping the handle; s->lock held. */
static void end_sandbox(struct aj_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void end_sandbox(struct aj_session *s, const char *fmt, ...)
{
	if (!s->tier_session && s->paused_fd < 0)
		return;
	if (s->tier_session)
		keeper_stop(&s->keeper);
	if (s->paused_fd >= 0)
		close(s->paused_fd);
	s->paused_fd = -1;
	s->tier_session = NULL;
	egress_proxy_stop(s->egress);
	atomic_fetch_sub(&open_sessions, 1);
	char buf[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	free(s->closed_reason);
	s->closed_reason = strdup(buf);
}

/* How an idle session is paused (session_checkpoint.c registers it): its
 * sandbox ended and its state kept, s->lock held. 0, or -errno with err. */
static session_pause_fn idle_pauser;

void session_register_idle_pause(session_pause_fn fn)
{
	idle_pauser = fn;
}

/* Closes s if a session limit has passed (pauses it, at its idle timeout,
 * where its config says so; not for a call that has come: it would only
 * resume it); s->lock held. */
static void enforce_limits(struct aj_session *s, double now, bool for_call)
{
	const struct aj_session_limits *sl = &sandbox_config(s->sb)->session;
	if (!s->tier_session && s->paused_fd < 0)
		return;
	if (now - s->opened_ms > sl->lifetime_sec * 1000.0)
		end_sandbox(s, "its lifetime of %g s ended", sl->lifetime_sec);
	/* A paused session holds no sandbox to idle in: only its lifetime
	 * bounds it. */
	else if (s->paused_fd >= 0 && s->tier_session && now > s->frozen_until_ms)
		drop_frozen(s); /* its window passed: memory freed, the state on disk */
	else if (s->paused_fd < 0 && s->tier_session && now - s->last_ms > sl->idle_sec * 1000.0) {
		struct aj_error err = {0};
		if (!sl->idle_pause)
			end_sandbox(s, "it was idle for more than %g s", sl->idle_sec);
		else if (for_call)
			; /* used again before the reaper paused it: as it is */
		else if (idle_pauser(s, &err))
			end_sandbox(s, "it was idle for more than %g s and could not be paused: %s",
				    sl->idle_sec, err.message);
		else
			s->idle_paused = true;
	}
}

static void *reaper_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec second = {1, 0};
		nanosleep(&second, NULL);
		pthread_mutex_lock(&registry_lock);
		for (struct aj_session *s = registry; s; s = s->next) {
			/* A session in a call is checked when the call ends (its
			 * own wall clock bounds it) or on the next pass. */
			if (pthread_mutex_trylock(&s->lock) == 0) {
				enforce_limits(s, now_ms(), false);
				pthread_mutex_unlock(&s->lock);
			}
		}
		pthread_mutex_unlock(&registry_lock);
	}
	return NULL;
}

static void start_reaper(void)
{
	/* Without it, limits still hold at each call; only an abandoned
	 * session would wait for its handle to be closed. */
	(void)thread_start_detached(reaper_main, NULL, 0);
}

/* ---- open and close ---- */

static void make_id(char *out)
{
	unsigned char b[16];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof b; i++)
			b[i] = (unsigned char)((uint64_t)ts.tv_nsec >> (i % 8) ^ (uint64_t)getpid() >> i);
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int aj_session_open(const struct aj_config *cfg, struct aj_session **out, struct aj_error *err)
{
	int rc;

	*out = NULL;
	if ((rc = aj_config_validate(cfg, err)))
		return rc;
	unsigned now_open = atomic_fetch_add(&open_sessions, 1) + 1;
	if (now_open > cfg->session.max_sessions) {
		atomic_fetch_sub(&open_sessions, 1);
		return error_set(err, -EMFILE,
				 "session: %u sessions are open already, the most allowed "
				 "(max-sessions); close one first",
				 cfg->session.max_sessions);
	}
	struct aj_session *s = calloc(1, sizeof *s);
	if (!s) {
		atomic_fetch_sub(&open_sessions, 1);
		return error_set(err, -ENOMEM, "session: out of memory");
	}
	s->paused_fd = -1;
	/* The tier's state opened here serves this one session: a pool of
	 * sandboxes started ahead (vm_pool) would fill only after the session
	 * took its own, and then wait, holding uid slots and memory, for runs
	 * that never come. */
	if (cfg->session.idle_pause && !idle_pauser) {
		atomic_fetch_sub(&open_sessions, 1);
		free(s);
		return error_set(err, -ENOTSUP, "session: idle_pause: this program was built "
						"without the library's checkpoints "
						"(src/api/session_checkpoint.c)");
	}
	struct aj_config scfg = *cfg;
	scfg.vm_pool = 0;
	/* Nor a zygote: a session keeps one interpreter of its own. */
	scfg.warm = false;
	scfg.preload = NULL;
	if ((rc = aj_open(&scfg, &s->sb, err))) {
		atomic_fetch_sub(&open_sessions, 1);
		free(s);
		return rc;
	}
	const struct tier_ops *ops = sandbox_ops(s->sb);
	if (!ops->session_open)
		rc = error_set(err, -ENOTSUP, "session: the %s tier does not offer sessions",
			       ops->name);
	else if (!egress_wanted(cfg) || !(rc = egress_proxy_start(sandbox_config(s->sb), sandbox_mitm_ca(s->sb),
								  &s->egress, err)))
		rc = keeper_start(s, err);
	if (rc) {
		atomic_fetch_sub(&open_sessions, 1);
		egress_proxy_free(s->egress);
		aj_close(s->sb);
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->nudge_lock, NULL);
	make_id(s->id);
	s->opened_ms = s->last_ms = now_ms();
	pthread_once(&reaper_once, start_reaper);
	pthread_mutex_lock(&registry_lock);
	s->next = registry;
	registry = s;
	pthread_mutex_unlock(&registry_lock);
	*out = s;
	return 0;
}

void aj_session_close(struct aj_session *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&registry_lock);
	for (struct aj_session **p = &registry; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_lock(&s->lock);
	end_sandbox(s, "it was closed");
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->nudge_lock);
	egress_proxy_free(s->egress);
	aj_close(s->sb);
	free(s->closed_reason);
	free(s);
}

const char *aj_session_id(const struct aj_session *s)
{
	return s ? s->id : "";
}

const char *aj_session_closed_reason(const struct aj_session *s)
{
	return s ? s->closed_reason : "no session";
}

/* ---- one call ---- */

/* Takes the lock and makes sure the session is open; on failure the lock
 * is released and err (or res) says why. */
static int enter_locked(struct aj_session *s, struct aj_error *err);

/* A caller wants the lock while a poll may hold it: the tier wakes the
 * poll's wait inside the sandbox, where it can (tier.h, session_nudge).
 * Safe without the session's lock: the sandbox cannot go while a poll
 * holds that lock, and polling is true only then. */
static void nudge_poll(struct aj_session *s)
{
	const struct tier_ops *ops = sandbox_ops(s->sb);
	if (!ops->session_nudge)
		return;
	pthread_mutex_lock(&s->nudge_lock);
	if (s->polling)
		ops->session_nudge(s->tier_session);
	pthread_mutex_unlock(&s->nudge_lock);
}

static void set_polling(struct aj_session *s, bool on)
{
	pthread_mutex_lock(&s->nudge_lock);
	s->polling = on;
	pthread_mutex_unlock(&s->nudge_lock);
}

/* A caller's turn at the lock: ahead of background reads (it wakes one
 * that waits on the sandbox for it). */
static void take_lock(struct aj_session *s)
{
	atomic_fetch_add(&s->callers, 1);
	nudge_poll(s);
	pthread_mutex_lock(&s->lock);
	atomic_fetch_sub(&s->callers, 1);
}

void session_end(struct aj_session *s, const char *why)
{
	/* A caller's turn at the lock: a call under way ends first (its own
	 * limits bound it), a background read lets this go ahead. */
	take_lock(s);
	end_sandbox(s, "%s", why);
	pthread_mutex_unlock(&s->lock);
}

static int enter(struct aj_session *s, struct aj_error *err)
{
	if (!s)
		return error_set(err, -EINVAL, "session: no session given");
	take_lock(s);
	atomic_store(&s->last_call_ms, now_ms());
	return enter_locked(s, err);
}

/* A background read's enter: after every other call waiting for the lock
 * (a wait's reads follow one another, and a mutex goes back to the thread
 * that just let it go: typed input would wait behind read after read). */
static int enter_poll(struct aj_session *s, struct aj_error *err)
{
	if (!s)
		return error_set(err, -EINVAL, "session: no session given");
	for (;;) {
		while (atomic_load(&s->callers))
			usleep(200);
		pthread_mutex_lock(&s->lock);
		if (!atomic_load(&s->callers))
			break;
		pthread_mutex_unlock(&s->lock);
	}
	return enter_locked(s, err);
}

/* The rest of enter, with the lock taken. */
static int enter_locked(struct aj_session *s, struct aj_error *err)
{
	enforce_limits(s, now_ms(), true);
	/* The next call resumes a paused session (the call is told: res.resumed
	 * is not a thing; the session's state is as it was). */
	if (s->paused_fd >= 0) {
		int rc = resume_paused(s, err);
		if (rc) {
			end_sandbox(s, "it could not be resumed: %s", err->message);
			pthread_mutex_unlock(&s->lock);
			return rc;
		}
	}
	if (!s->tier_session) {
		int rc = error_set(err, -ESHUTDOWN, "session: closed, because %s",
				   s->closed_reason ? s->closed_reason : "it was closed");
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	return 0;
}

/* Sends one request (a JSON object without "seq", which this adds first)
 * and returns the parsed reply (NULL when the interpreter gave none: res
 * says how the call ended). 0, or -errno when the session's sandbox failed
 * (it is closed then). */
static int call(struct aj_session *s, const struct aj_config *cfg, json_t *request,
		size_t reply_max, int cancel, struct stream_tap *tap, struct aj_result *res,
		json_t **reply, struct session_answer *ans)
{
	*reply = NULL;
	uint64_t seq = ++s->seq;
	json_t *o = json_object();
	char *line = NULL;
	if (!o || json_object_set_new(o, "seq", json_integer((json_int_t)seq)) ||
	    json_object_update(o, request) ||
	    !(line = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_ENSURE_ASCII))) {
		json_decref(o);
		result_sandbox_error(res, "session: out of memory");
		return -ENOMEM;
	}
	json_decref(o);
	size_t n = strlen(line);
	char *req = realloc(line, n + 2);
	if (!req) {
		free(line);
		result_sandbox_error(res, "session: out of memory");
		return -ENOMEM;
	}
	req[n] = '\n';
	req[n + 1] = '\0';
	const struct session_call c = {.request = req, .len = n + 1, .seq = seq,
				       .cancel_fd = cancel, .reply_max = reply_max, .tap = tap};
	const struct tier_ops *ops = sandbox_ops(s->sb);
	int rc = ops->session_call(s->tier_session, cfg, &c, res, ans);
	/* What the dying interpreter printed (a thread a cell left, as it
	 * ended) reached the stream as it was read: the tiers that find an
	 * unread request stream each byte they capture. fn cannot take it
	 * back, and the stream must be the result's bytes, no more: so no
	 * second attempt once any of it was streamed. */
	bool streamed = tap && (res->stdout_len || res->stderr_len);
	if (!rc && ans->unread && !streamed) {
		/* The interpreter had ended before it took the request (a cell
		 * closed its pipes, a thread it left crashed it): the code never
		 * ran, so a fresh interpreter gets it, once. */
		aj_result_free(res);
		result_init(res);
		rc = ops->session_call(s->tier_session, cfg, &c, res, ans);
		ans->restarted = true;
	} else if (!rc && ans->unread) {
		result_sandbox_error(res, "session: the interpreter had ended before it took this "
					  "call (its last output is this result's, streamed "
					  "already); the code did not run: call again");
	}
	free(req);
	s->last_ms = now_ms();
	if (s->egress)
		res->egress_log = egress_proxy_take_log(s->egress);
	if (rc) {
		end_sandbox(s, "%s: %s",
			    res->status == AJ_STATUS_MEMORY ? "its sandbox's memory limit ended it"
							    : "its sandbox failed",
			    res->message ? res->message : "?");
		return rc;
	}
	if (ans->reply)
		*reply = session_reply_json(ans->reply, ans->reply_len, res);
	free(ans->reply);
	ans->reply = NULL;
	return 0;
}

/* What the agent reads when its idle session was paused and came back. */
#define RESUMED "the session was paused while idle and resumed for this call: its variables " \
		"and files are as they were (background commands were not carried)"

/* What the agent reads when the state it built is gone. */
#define STATE_LOST "the session's interpreter was restarted: variables and imports from " \
		   "earlier calls are gone (workspace files are kept)"
#define STATE_ENDING "the session's interpreter ended: the next call starts a fresh one " \
		     "(workspace files are kept)"

/* The call's images, after its output (and the rest of its output a tier
 * did not stream): the interpreter hands them over only in its reply. */
static void stream_images(struct stream_tap *tap, const struct aj_result *res)
{
	stream_tap_catch_up(tap, res);
	for (size_t i = 0; tap && i < res->image_count; i++)
		stream_tap_image(tap, res->images[i].name, res->images[i].mime,
				 res->images[i].data, res->images[i].len);
}

const struct aj_config *session_config(const struct aj_session *s)
{
	return s ? sandbox_config(s->sb) : NULL;
}

void session_given_config(const struct aj_session *s, struct aj_config *out)
{
	sandbox_given_config(s->sb, out);
}

int session_narrow_like(struct aj_session *to, struct aj_session *from, struct aj_error *err)
{
	if (!to->egress || !from->egress)
		return 0;
	return egress_proxy_narrow_like(to->egress, from->egress, err);
}

/* A command (or node) that ended by a SIGKILL nobody here asked for, or
 * exited 137 (128 + SIGKILL: a shell's word that its child was so killed):
 * not by its own deadline ("timed_out"), a signal a caller sent
 * ("signalled") or the output cap ("output_limit"), each in the
 * interpreter's reply. What is left is the kernel's OOM killer or a kill
 * of its own doing: the tier is asked for OOM kills in the session's
 * sandbox since the command began, and any makes the status memory (rule
 * 7, src/core/status.h). Only these ends: docker's answer takes a while.
 * A cell could forge those words only to keep its own command's status
 * what it was. The session is locked. */
static void oom_ended(struct aj_session *s, json_t *reply, double since_ms,
		      const struct aj_config *cfg, struct aj_result *res)
{
	const struct tier_ops *ops = sandbox_ops(s->sb);
	const bool sigkill = res->status == AJ_STATUS_KILLED && res->signal == SIGKILL;
	const bool shell_137 = res->status == AJ_STATUS_ERROR && res->has_exit_code &&
			       res->exit_code == 128 + SIGKILL;
	if (!(sigkill || shell_137) || !s->tier_session || !ops->session_oom_kills ||
	    json_is_true(json_object_get(reply, "signalled")) ||
	    json_is_true(json_object_get(reply, "timed_out")) ||
	    json_is_true(json_object_get(reply, "output_limit")))
		return;
	uint64_t kills = ops->session_oom_kills(s->tier_session, since_ms);
	if (!kills)
		return;
	struct end_facts f = {.ended = true,
			      .wstatus = sigkill ? SIGKILL : W_EXITCODE(128 + SIGKILL, 0),
			      .cpu_ms = res->cpu_ms,
			      .oom_kills = kills};
	status_decide(&f, &cfg->limits, res);
}

void session_command_oom(struct aj_session *s, json_t *reply, double since_ms,
			 struct aj_result *res)
{
	pthread_mutex_lock(&s->lock);
	oom_ended(s, reply, since_ms, session_config(s), res);
	pthread_mutex_unlock(&s->lock);
}

int session_call_streaming(struct aj_session *s, json_t *req, size_t reply_max, double wall_sec,
			   struct aj_cancel *cancel, struct stream_tap *tap,
			   session_reply_fn on_reply, struct aj_result *res)
{
	struct aj_error err = {0};
	int rc;
	if ((rc = enter(s, &err))) {
		result_sandbox_error(res, "%s", err.message);
		return rc;
	}
	/* A call with a deadline of its own (an exec's, kept inside the
	 * sandbox, which kills the command and keeps the interpreter): the
	 * host's comes OWN_DEADLINE_GRACE_SEC after it, for the interpreter's
	 * kill and answer on a busy machine, and the result's words name the
	 * call's own. */
	struct aj_config own = *sandbox_config(s->sb), host = own;
	if (wall_sec > 0) {
		own.limits.wall_sec = wall_sec;
		host.limits.wall_sec = wall_sec + OWN_DEADLINE_GRACE_SEC;
	}
	struct session_answer ans;
	json_t *reply = NULL;
	const double started = now_ms();
	rc = call(s, &host, req, reply_max, cancel_fd(cancel), tap, res, &reply, &ans);
	if (!rc && reply) {
		on_reply(reply, &own, res);
		oom_ended(s, reply, started, &own, res);
		result_background_from_json(reply, res);
	}
	json_decref(reply);
	stream_images(tap, res);
	if (!rc) {
		if (ans.restarted || s->state_lost)
			result_add_note(res, STATE_LOST, true);
		else if (s->tell_resumed)
			result_add_note(res, RESUMED, true);
		s->state_lost = s->tell_resumed = false;
		if (ans.ended) {
			s->state_lost = true;
			result_add_note(res, STATE_ENDING, false);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int session_cell_op(struct aj_session *s, const char *op, const struct aj_cell *cell,
		    session_reply_fn on_reply, const char *code, size_t len,
		    struct aj_cancel *cancel, const struct aj_stream *stream,
		    struct aj_result *res)
{
	struct stream_tap *tap = NULL;
	json_t *req = NULL;
	int rc;

	result_init(res);
	if ((rc = session_stream_start(stream, &tap, res)) || (rc = code_check(code, len, res)))
		goto out;
	if (!s) {
		rc = -EINVAL;
		result_sandbox_error(res, "session: no session given");
		goto out;
	}
	const struct aj_config *cfg = sandbox_config(s->sb);
	const struct aj_session_limits *sl = &cfg->session;
	char *b64 = base64_encode(code, len, NULL);
	/* memory_mb: the session's, under which repl.py keeps its own data
	 * (a MemoryError keeps the state an OOM kill would take). */
	req = b64 ? json_pack("{s:s, s:s, s:i, s:i, s:I, s:i}", "op", op, "code", b64, "cpu",
			      (int)cfg->limits.cpu_sec, "images", (int)sl->images, "image_bytes",
			      (json_int_t)sl->image_kb * 1024, "memory_mb",
			      (int)cfg->limits.memory_mb)
		  : NULL;
	free(b64);
	/* A notebook cell's asks (aj_session_run_cell), for repl.py. */
	if (req && cell &&
	    ((cell->value && (json_object_set_new(req, "value", json_true()) ||
			      json_object_set_new(req, "value_max",
						  json_integer((json_int_t)cfg->limits.output_kb *
							       1024)))) ||
	     (cell->context && json_object_set_new(req, "context", json_string(cell->context))) ||
	     (cell->fresh && json_object_set_new(req, "fresh", json_true())))) {
		json_decref(req);
		req = NULL;
	}
	if (!req) {
		result_sandbox_error(res, "session: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	size_t image_bytes = (size_t)sl->image_kb * 1024;
	size_t reply_max = (size_t)sl->images * (image_bytes / 3 * 4 + 4 + 256) + REPLY_SLACK;
	rc = session_call_streaming(s, req, reply_max, 0, cancel, tap, on_reply, res);
out:
	json_decref(req);
	/* Every event is delivered before the call returns. */
	stream_tap_finish(tap);
	result_ensure_streams(res);
	return rc;
}

int session_run_op(struct aj_session *s, const char *op, session_reply_fn on_reply,
		   const char *code, size_t len, struct aj_cancel *cancel,
		   const struct aj_stream *stream, struct aj_result *res)
{
	return session_cell_op(s, op, NULL, on_reply, code, len, cancel, stream, res);
}

int aj_session_run_streaming(struct aj_session *s, const char *code, size_t len,
			     struct aj_cancel *cancel, const struct aj_stream *stream,
			     struct aj_result *res)
{
	return session_run_op(s, "run", session_run_reply, code, len, cancel, stream, res);
}


int session_stream_start(const struct aj_stream *stream, struct stream_tap **tap,
			 struct aj_result *res)
{
	*tap = NULL;
	if (stream && !stream->fn) {
		result_sandbox_error(res, "session: the stream has no fn to deliver events to");
		return -EINVAL;
	}
	int rc = stream ? stream_tap_start(stream, tap) : 0;
	if (rc)
		result_sandbox_error(res, "session: the stream's delivery thread: %s", strerror(-rc));
	return rc;
}

int aj_session_run_cancellable(struct aj_session *s, const char *code, size_t len,
			       struct aj_cancel *cancel, struct aj_result *res)
{
	return aj_session_run_streaming(s, code, len, cancel, NULL, res);
}

int aj_session_run(struct aj_session *s, const char *code, size_t len, struct aj_result *res)
{
	return aj_session_run_cancellable(s, code, len, NULL, res);
}

/* ---- files ---- */

/* A caller's path as one relative to the workspace: valid UTF-8, no "..",
 * absolute only under the workspace. */
int session_workspace_path(const char *path, bool may_be_workspace, const char **rel,
			   struct aj_error *err)
{
	static const char ws[] = AJ_SESSION_WORKSPACE;
	if (!path)
		return error_set(err, -EINVAL, "path: missing");
	size_t n = strlen(path);
	if (n > PATH_MAX_BYTES)
		return error_set(err, -ENAMETOOLONG, "path: %zu bytes is longer than the %u allowed",
				 n, PATH_MAX_BYTES);
	if (!utf8_valid(path, n))
		return error_set(err, -EILSEQ, "path: not valid UTF-8");
	const char *p = path;
	if (p[0] == '/') {
		if (strncmp(p, ws, sizeof ws - 1) || (p[sizeof ws - 1] && p[sizeof ws - 1] != '/'))
			return error_set(err, -EACCES,
					 "path: %.300s is outside the workspace (%s); use a path "
					 "relative to it",
					 path, ws);
		p += sizeof ws - 1;
	}
	for (const char *c = p; *c;) {
		while (*c == '/')
			c++;
		size_t k = strcspn(c, "/");
		if (k == 2 && c[0] == '.' && c[1] == '.')
			return error_set(err, -EACCES, "path: %.300s: '..' is not allowed", path);
		c += k;
	}
	bool empty = p[strspn(p, "/.")] == '\0' && !strstr(p, "..");
	if (empty && !may_be_workspace)
		return error_set(err, -EISDIR, "path: %.300s names the workspace itself, not a file",
				 path);
	*rel = p;
	return 0;
}

/* A file operation's call: 0 with *reply the interpreter's answer, or
 * -errno with err saying why (the interpreter's own error included). */
static int file_call(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
		     json_t **reply, struct aj_error *err)
{
	struct aj_result res;
	struct session_answer ans;
	result_init(&res);
	int rc = call(s, sandbox_config(s->sb), req, reply_max, -1, NULL, &res, reply, &ans);
	if (ans.restarted)
		s->state_lost = true; /* told at the next run */
	if (ans.ended)
		s->state_lost = true;
	if (rc || !*reply) {
		if (!rc && res.status == AJ_STATUS_TIMEOUT)
			rc = error_set(err, -ETIMEDOUT, "%s: the interpreter did not answer within the "
							"wall-clock limit and was restarted",
				       what);
		else
			rc = error_set(err, rc ? rc : -EIO, "%s: %s", what,
				       res.message ? res.message : "the interpreter gave no answer");
		json_decref(*reply);
		*reply = NULL;
		aj_result_free(&res);
		return rc;
	}
	aj_result_free(&res);
	if ((rc = session_file_reply_error(what, *reply, err))) {
		json_decref(*reply);
		*reply = NULL;
	}
	return rc;
}

/* One request whose reply is data, entered by enter_fn (a call's, or a
 * poll's that lets every other call go first). */
static int request_entered(int (*enter_fn)(struct aj_session *, struct aj_error *),
			   struct aj_session *s, const char *what, json_t *req, size_t reply_max,
			   json_t **reply, struct aj_error *err)
{
	*reply = NULL;
	int rc = enter_fn(s, err);
	if (!rc) {
		const bool poll = enter_fn == enter_poll;
		if (poll)
			set_polling(s, true);
		rc = file_call(s, what, req, reply_max, reply, err);
		if (poll)
			set_polling(s, false);
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

int session_poll_request(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
			 json_t **reply, struct aj_error *err)
{
	return request_entered(enter_poll, s, what, req, reply_max, reply, err);
}

void session_readers(struct aj_session *s, int delta)
{
	if (delta > 0)
		atomic_fetch_add(&s->readers, (unsigned)delta);
	else
		atomic_fetch_sub(&s->readers, (unsigned)-delta);
}

int session_workspace_held(struct aj_session *s, struct aj_error *err)
{
	const struct tier_ops *ops = sandbox_ops(s->sb);
	if (!ops->session_workspace || !s->tier_session)
		return error_set(err, -ENOTSUP, "workspace: the tier has no host view of it");
	return ops->session_workspace(s->tier_session, err);
}

bool session_nudges(struct aj_session *s)
{
	return sandbox_ops(s->sb)->session_nudge != NULL;
}

int session_poll_ms(struct aj_session *s, int most)
{
	/* Another call (typed input, a signal) in the last 2 s: the session
	 * is in use, and a call behind a read waits for the read's end,
	 * unless the tier wakes the read for it (nudge_poll). */
	if (session_nudges(s)) {
		/* A call behind a read wakes it; another read does not (two
		 * reads would wake each other for ever): with two or more
		 * reads under way they take turns in short reads. */
		return atomic_load(&s->readers) > 1 && most > POLL_BUSY_MS ? POLL_BUSY_MS : most;
	}
	return now_ms() - atomic_load(&s->last_call_ms) < 2000.0 && most > POLL_BUSY_MS
		       ? POLL_BUSY_MS
		       : most;
}

int session_request(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
		    json_t **reply, struct aj_error *err)
{
	return request_entered(enter, s, what, req, reply_max, reply, err);
}

int session_hold(struct aj_session *s, struct aj_error *err)
{
	return enter(s, err);
}

int session_hold_asleep(struct aj_session *s, int *paused, struct aj_error *err)
{
	*paused = -1;
	if (!s)
		return error_set(err, -EINVAL, "session: no session given");
	take_lock(s);
	enforce_limits(s, now_ms(), true);
	if (s->paused_fd >= 0) {
		*paused = s->paused_fd;
		return 0;
	}
	return enter_locked(s, err);
}

void session_release(struct aj_session *s)
{
	pthread_mutex_unlock(&s->lock);
}

int session_request_held(struct aj_session *s, const char *what, json_t *req, size_t reply_max,
			 json_t **reply, struct aj_error *err)
{
	*reply = NULL;
	return file_call(s, what, req, reply_max, reply, err);
}

void session_suspend(struct aj_session *s, int fd, session_wake_fn wake)
{
	const struct aj_session_limits *sl = &sandbox_config(s->sb)->session;
	const struct tier_ops *ops = sandbox_ops(s->sb);
	struct aj_error why = {0};
	/* Frozen first where the deployer keeps paused memory for a while
	 * and the tier can freeze: its CPU is free at once, and a resume in
	 * the window is a thaw. Else (or when freezing fails) ended now. */
	if (sl->pause_keep_sec > 0 && ops->session_freeze &&
	    !ops->session_freeze(s->tier_session, true, &why)) {
		s->frozen_until_ms = now_ms() + sl->pause_keep_sec * 1000.0;
	} else {
		keeper_stop(&s->keeper);
		s->tier_session = NULL;
	}
	s->paused_fd = fd;
	s->wake = wake;
	/* The next interpreter is new: nothing of the old one's calls (seq)
	 * or its lost state carries over. */
	s->state_lost = false;
}

int session_sandbox_reopen(struct aj_session *s, struct aj_error *err)
{
	memset(&s->keeper, 0, sizeof s->keeper);
	int rc = keeper_start(s, err);
	if (!rc)
		s->last_ms = now_ms();
	return rc;
}

bool session_frozen(const struct aj_session *s)
{
	return s && s->paused_fd >= 0 && s->tier_session;
}

bool aj_session_paused(const struct aj_session *s)
{
	return s && s->paused_fd >= 0;
}

int aj_session_put(struct aj_session *s, const char *path, const void *data, size_t len,
		   struct aj_error *err)
{
	const char *rel;
	int rc = session_workspace_path(path, false, &rel, err);
	if (rc)
		return rc;
	if (!data && len)
		return error_set(err, -EINVAL, "put: no data");
	if ((rc = enter(s, err)))
		return rc;
	size_t cap = (size_t)sandbox_config(s->sb)->session.transfer_mb << 20;
	if (len > cap) {
		pthread_mutex_unlock(&s->lock);
		return error_set(err, -EFBIG, "put: %s: %zu bytes is more than the %zu MiB allowed "
					      "(transfer limit)",
				 path, len, cap >> 20);
	}
	char *b64 = base64_encode(data ? data : "", len, NULL);
	json_t *req = b64 ? json_pack("{s:s, s:s, s:s}", "op", "put", "path", rel, "data", b64) : NULL;
	free(b64);
	json_t *reply = NULL;
	if (!req)
		rc = error_set(err, -ENOMEM, "put: out of memory");
	else
		rc = file_call(s, "put", req, REPLY_SLACK, &reply, err);
	json_decref(req);
	json_decref(reply);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int aj_session_get(struct aj_session *s, const char *path, void **data, size_t *len,
		   struct aj_error *err)
{
	const char *rel;
	*data = NULL;
	*len = 0;
	int rc = session_workspace_path(path, false, &rel, err);
	if (rc || (rc = enter(s, err)))
		return rc;
	size_t cap = (size_t)sandbox_config(s->sb)->session.transfer_mb << 20;
	json_t *req = json_pack("{s:s, s:s, s:I}", "op", "get", "path", rel, "max", (json_int_t)cap);
	json_t *reply = NULL;
	if (!req)
		rc = error_set(err, -ENOMEM, "get: out of memory");
	else
		rc = file_call(s, "get", req, cap / 3 * 4 + 4 + REPLY_SLACK, &reply, err);
	json_decref(req);
	if (!rc)
		rc = session_get_reply(reply, cap, path, data, len, err);
	json_decref(reply);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int session_get_part(struct aj_session *s, const char *path, uint64_t offset, size_t max,
		     void **data, size_t *len, uint64_t *size, struct aj_error *err)
{
	const char *rel;
	*data = NULL;
	*len = 0;
	int rc = session_workspace_path(path, false, &rel, err);
	if (rc || (rc = enter(s, err)))
		return rc;
	size_t cap = (size_t)sandbox_config(s->sb)->session.transfer_mb << 20;
	json_t *req = json_pack("{s:s, s:s, s:I, s:I}", "op", "get", "path", rel, "max",
				(json_int_t)max, "offset", (json_int_t)offset);
	json_t *reply = NULL;
	if (!req)
		rc = error_set(err, -ENOMEM, "get: out of memory");
	else
		rc = file_call(s, "get", req, max / 3 * 4 + 4 + REPLY_SLACK, &reply, err);
	json_decref(req);
	json_t *sz = json_object_get(reply, "size");
	if (!rc && (!json_is_integer(sz) || json_integer_value(sz) < 0))
		rc = error_set(err, -EPROTO, "get: the interpreter's reply holds no size");
	else if (!rc && (uint64_t)json_integer_value(sz) > cap)
		/* The whole file's cap, as aj_session_get's, before any part. */
		rc = error_set(err, -EFBIG, "get: %s is more than the %zu MiB allowed", path,
			       cap >> 20);
	if (!rc && !(rc = session_get_reply(reply, max, path, data, len, err)))
		*size = (uint64_t)json_integer_value(sz);
	json_decref(reply);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int aj_session_list(struct aj_session *s, const char *dir, struct aj_file_info **entries,
		    size_t *count, struct aj_error *err)
{
	const char *rel;
	*entries = NULL;
	*count = 0;
	int rc = session_workspace_path(dir ? dir : "", true, &rel, err);
	if (rc || (rc = enter(s, err)))
		return rc;
	json_t *req = json_pack("{s:s, s:s}", "op", "list", "path", rel);
	json_t *reply = NULL;
	if (!req)
		rc = error_set(err, -ENOMEM, "list: out of memory");
	else
		rc = file_call(s, "list", req, LIST_REPLY_MAX, &reply, err);
	json_decref(req);
	if (!rc)
		rc = session_list_reply(reply, entries, count, err);
	json_decref(reply);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void aj_file_list_free(struct aj_file_info *entries, size_t count)
{
	for (size_t i = 0; entries && i < count; i++)
		free(entries[i].name);
	free(entries);
}

int aj_session_secrets_keep(struct aj_session *s, const char *const *names, uint32_t n_names,
			    struct aj_error *err)
{
	int rc;
	if ((rc = enter(s, err)))
		return rc;
	if (!s->egress)
		rc = error_set(err, -EPERM, "secrets: the session has no secrets to narrow");
	else
		rc = egress_proxy_keep_secrets(s->egress, names, n_names, err);
	s->last_ms = now_ms();
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int aj_session_egress_keep(struct aj_session *s, const char *const *hosts, uint32_t n_hosts,
			   const char *const *cidrs, uint32_t n_cidrs, struct aj_error *err)
{
	int rc;
	if ((rc = enter(s, err)))
		return rc;
	if (!s->egress)
		rc = error_set(err, -EPERM, "egress: the session has no egress rules to narrow");
	else
		rc = egress_proxy_keep(s->egress, hosts, n_hosts, cidrs, n_cidrs, err);
	s->last_ms = now_ms();
	pthread_mutex_unlock(&s->lock);
	return rc;
}
