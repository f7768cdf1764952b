/* The host side of boot.py's session mode, shared by the docker and gvisor
 * tiers.
 *
 * Theory of operation
 * -------------------
 * A session is one sandbox (a Docker container, a gVisor sandbox) whose
 * PID 1 is boot.py in its session mode (the word "session" in its stdin's
 * header), under a uid slot held until the session closes. Two processes
 * matter inside:
 *
 *  boot.py      PID 1. It never runs code of the agent's: it starts the
 *               interpreter, relays its streams, and kills what it leaves.
 *               Not dumpable, SIGINT and SIGXCPU ignored, so the code inside
 *               (same uid) can neither signal it off nor open its memory or
 *               its stdout.
 *  interpreter  boot's child, src/core/repl.py as `python3 -I -u -c`,
 *               with fd 0 /dev/null, 1 and 2 pipes to boot, 3 the requests,
 *               4 the replies. Its hard RLIMIT_CPU is the session's total
 *               (the sandbox's rlimit); repl.py moves the soft limit to each
 *               call's share.
 *
 * The host holds one stream for the session's life. Boot's stdin carries
 * the header, repl.py's source and then frames (kind byte, 32-bit
 * big-endian length, bytes): "s" start an interpreter, "q" request bytes,
 * "k" stop. boot's stdout carries frames back: "R" ready, "o" / "e" / "r"
 * the interpreter's stdout, stderr and reply bytes, "x" the interpreter
 * ended (wait status and usage), "f" it could not start. Only boot writes
 * its stdout (the interpreter's fds are pipes of boot's), so nothing inside
 * can forge a frame; what the interpreter writes on its own pipes is its own
 * output, capped here and parsed strictly by the core.
 *
 * A call (boot_session_call) is supervised by the one loop
 * (src/linux/supervisor.c), as a jail session's is: the request goes out
 * without ever blocking, in
 * frames of at most 64 KiB so that a stop can follow any of them; stdout and
 * stderr are capped as they arrive; the reply whose seq is the call's ends
 * it; the wall clock, a flood, a reply past its cap or the caller's cancel
 * stop it with "k": boot kills every process in the sandbox but itself,
 * reaps them, and sends "x" with the interpreter's wait status, which
 * becomes the status (outcome_to_result), memory where the tier saw the OOM
 * killer at work. The next call starts a fresh interpreter in the same
 * sandbox (its files kept) and says so. A boot that does not confirm a stop
 * within the grace, or a stream that ends, means the sandbox is broken: the
 * call fails with -EPIPE, the tier destroys the sandbox, and the session is
 * closed. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../linux/stream_hooks.h"
#include "../linux/supervise.h"
#include "../core/status.h"
#include "session.h"

/* The session interpreter, as a C string (tools/c_string.py). */
#include "session_repl.inc"

/* How long boot may take to stop a call and report before the sandbox is
 * taken for broken (the stop is a frame; boot is Python on a possibly
 * loaded machine). */
#define STOP_GRACE_MS 2000.0
/* How long the sandbox may take to come up before open gives up. */
#define SESSION_START_MS 30000.0
/* The largest request frame; boot's frames are no larger. */
#define FRAME_CHUNK 65536u
/* Room for boot's frames read but not yet parsed: one recv is at most
 * 64 KiB, and whole frames are taken after each. */
#define RAW_MAX (4u * FRAME_CHUNK)
/* How often a sandbox's CPU time is read where the tier watches it. */
#define BOOT_CPU_CHECK_MS 200.0
/* boot's own stderr: only its last words matter (why it failed). */
#define BOOT_ERR_MAX 4096u

/* One frame from boot. */
struct frame {
	char kind;
	const char *data;
	size_t len;
};

void boot_session_init(struct boot_session *bs)
{
	bs->out_fd = -1;
	/* -1 when it cannot be made: reads then wait their time. */
	bs->nudge_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	capture_init(&bs->raw, RAW_MAX);
	capture_init(&bs->boot_err, BOOT_ERR_MAX);
}

void boot_session_free(struct boot_session *bs)
{
	if (bs->nudge_fd >= 0)
		close(bs->nudge_fd);
	bs->nudge_fd = -1;
	capture_free(&bs->raw);
	capture_free(&bs->boot_err);
}

void boot_session_nudge(struct boot_session *bs)
{
	uint64_t one = 1;
	if (bs->nudge_fd >= 0 && write(bs->nudge_fd, &one, sizeof one) < 0) {
		/* The count is full: a nudge is pending anyway. */
	}
}

/* ---- the stream ---- */

/* boot's own stderr, where it is a pipe of its own: what is there now. */
static void drain_boot_err(struct boot_session *ds)
{
	char buf[4096];
	for (int i = 0; ds->err_fd >= 0 && i < 16; i++) {
		ssize_t n = read(ds->err_fd, buf, sizeof buf);
		if (n <= 0)
			return;
		capture_append(&ds->boot_err, buf, (size_t)n);
		ds->boot_err.truncated = false; /* its tail is dropped, as intended */
	}
}

static void take_bytes(struct boot_session *ds, const char *p, size_t n)
{
	if (ds->demux) {
		ds->demux(ds, p, n);
		ds->boot_err.truncated = false;
	} else {
		capture_append(&ds->raw, p, n);
	}
}

void boot_session_feed(struct boot_session *bs, const char *p, size_t n)
{
	take_bytes(bs, p, n);
}

/* Where boot's frames are read: fd, or a pipe of their own (non-blocking). */
static int in_fd(const struct boot_session *ds)
{
	return ds->out_fd >= 0 ? ds->out_fd : ds->fd;
}

/* Reads what is there now (at most `reads` recvs, and no more than ds->raw
 * has room for: the caller takes the frames, then reads again) into
 * ds->raw; false at EOF or on an error or a protocol violation (ds->dead
 * set). */
static bool pump(struct boot_session *ds, int reads)
{
	char buf[FRAME_CHUNK];
	drain_boot_err(ds);
	for (int i = 0; i < reads && ds->raw.len + sizeof buf <= RAW_MAX; i++) {
		/* A socket may be a blocking one (Docker's attach stream); the
		 * pipe is non-blocking. */
		ssize_t n = ds->out_fd >= 0 ? read(ds->out_fd, buf, sizeof buf)
					    : recv(ds->fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n > 0) {
			take_bytes(ds, buf, (size_t)n);
			/* A frame larger than boot ever sends: not boot talking. */
			if (ds->raw.truncated) {
				ds->dead = true;
				return false;
			}
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		drain_boot_err(ds);
		ds->dead = true;
		return false;
	}
	return true;
}

/* The next whole frame in ds->raw, if any; the caller drops it with
 * frame_done once handled. */
static bool next_frame(struct boot_session *ds, struct frame *f)
{
	if (ds->raw.len < 5)
		return false;
	const unsigned char *h = (const unsigned char *)ds->raw.buf;
	size_t n = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
	if (n > FRAME_CHUNK) {
		ds->dead = true; /* boot never sends one so large */
		return false;
	}
	if (ds->raw.len < 5 + n)
		return false;
	f->kind = (char)h[0];
	f->data = ds->raw.buf + 5;
	f->len = n;
	return true;
}

static void frame_done(struct boot_session *ds, const struct frame *f)
{
	size_t used = 5 + f->len;
	memmove(ds->raw.buf, ds->raw.buf + used, ds->raw.len - used);
	ds->raw.len -= used;
}

/* boot's "x" payload: "WSTATUS CPU_US MAXRSS_KB". */
static bool parse_exit(const struct frame *f, struct sandbox_report *r)
{
	char line[96];
	if (f->len >= sizeof line)
		return false;
	memcpy(line, f->data, f->len);
	line[f->len] = '\0';
	return report_parse_exited(line, 0, r);
}

/* Sends all of buf on the (non-blocking) stream by the deadline. */
static int send_all(int fd, const char *buf, size_t n, double until)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			buf += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		double left = until - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		poll(&p, 1, (int)ceil(left));
	}
	return 0;
}

static void frame_head(char head[5], char kind, size_t len)
{
	head[0] = kind;
	head[1] = (char)(len >> 24);
	head[2] = (char)(len >> 16);
	head[3] = (char)(len >> 8);
	head[4] = (char)len;
}

/* ---- start ---- */

/* Waits for boot's "R": the sandbox is up and the interpreter's source
 * arrived. */
static int wait_ready(struct boot_session *ds, struct aj_error *err)
{
	double until = now_ms() + SESSION_START_MS;
	for (;;) {
		struct frame f;
		if (next_frame(ds, &f)) {
			if (f.kind == 'R') {
				frame_done(ds, &f);
				return 0;
			}
			return error_set(err, -EPROTO,
					 "%s: session: boot said '%c' before it was ready", ds->tier,
					 f.kind);
		}
		size_t before = ds->raw.len;
		if (ds->dead || !pump(ds, 16)) {
			char why[200] = "";
			if (ds->boot_err.len)
				snprintf(why, sizeof why, ": %.*s", (int)strcspn(ds->boot_err.buf, "\n"),
					 ds->boot_err.buf);
			return error_set(err, -EPIPE,
					 "%s: session: the sandbox ended before it was ready%s", ds->tier,
					 why);
		}
		if (ds->raw.len != before)
			continue;
		double left = until - now_ms();
		if (left <= 0)
			return error_set(err, -ETIMEDOUT,
					 "%s: session: the sandbox was not ready within %.0f s", ds->tier,
					 SESSION_START_MS / 1000);
		struct pollfd p = {.fd = in_fd(ds), .events = POLLIN};
		poll(&p, 1, (int)ceil(left));
	}
}

int boot_session_start(struct boot_session *ds, double lifetime_sec, const char *egress_socket,
		       struct aj_error *err)
{
	/* boot's header: session mode, its backstop, and the interpreter's
	 * source, which follows; then "s": the first interpreter starts now,
	 * so that Python's start is not the first call's. */
	size_t repl_len = strlen(session_repl_py);
	char head[200];
	size_t hl = (size_t)snprintf(head, sizeof head, "session %.0f %zu%s%.100s\n", lifetime_sec,
				     repl_len, egress_socket ? " " : "",
				     egress_socket ? egress_socket : "");
	char *input = malloc(hl + repl_len + 5);
	if (!input)
		return error_set(err, -ENOMEM, "%s: session: out of memory", ds->tier);
	memcpy(input, head, hl);
	memcpy(input + hl, session_repl_py, repl_len);
	frame_head(input + hl + repl_len, 's', 0);
	ds->interpreter = ds->started_before = true;
	int rc = send_all(ds->fd, input, hl + repl_len + 5, now_ms() + SESSION_START_MS);
	free(input);
	if (rc)
		return error_set(err, rc, "%s: session: sending the interpreter: %s", ds->tier,
				 errno_name(-rc));
	return wait_ready(ds, err);
}

/* ---- one call ---- */

/* What the host still has to send in this call: whole frames only, so
 * that a stop can always follow. */
struct outgoing {
	const struct session_call *c;
	bool start;             /* an "s" first */
	bool stop;              /* a "k" is wanted: no more request frames */
	bool stop_sent;
	bool nudge;             /* a caller waits: an empty line after the request */
	bool closed;            /* the call is over: only the current frame is finished */
	size_t req_off;         /* request bytes put in frames so far */
	char head[5];
	const char *payload;
	size_t len, sent;       /* of the current frame: head + payload */
};

static bool outgoing_pending(struct outgoing *g)
{
	if (g->sent < g->len)
		return true;
	if (g->closed)
		return false;
	g->sent = g->len = 0;
	g->payload = NULL;
	size_t n = 0;
	char kind;
	if (g->start) {
		kind = 's';
		g->start = false;
	} else if (g->stop) {
		if (g->stop_sent)
			return false;
		kind = 'k';
		g->stop_sent = true;
	} else if (g->req_off < g->c->len) {
		kind = 'q';
		n = g->c->len - g->req_off;
		if (n > FRAME_CHUNK)
			n = FRAME_CHUNK;
		g->payload = g->c->request + g->req_off;
		g->req_off += n;
	} else if (g->nudge) {
		/* An empty line, which repl.py's watcher sees arrive and its
		 * main loop skips (no request): it wakes a read. */
		kind = 'q';
		n = 1;
		g->payload = "\n";
		g->nudge = false;
	} else {
		return false;
	}
	frame_head(g->head, kind, n);
	g->len = 5 + n;
	return true;
}

/* Writes what the stream takes now; -errno when it is gone. */
static int outgoing_write(struct outgoing *g, int fd)
{
	while (outgoing_pending(g)) {
		struct iovec v[2];
		int k = 0;
		if (g->sent < 5)
			v[k++] = (struct iovec){.iov_base = g->head + g->sent, .iov_len = 5 - g->sent};
		size_t off = g->sent > 5 ? g->sent - 5 : 0;
		if (g->len - 5 > off)
			v[k++] = (struct iovec){.iov_base = (char *)g->payload + off,
						.iov_len = g->len - 5 - off};
		struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)k};
		ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			g->sent += (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return w < 0 ? -errno : -EPIPE;
	}
	return 0;
}

/* Before a call: what boot sent since the last one. An "x" means the
 * interpreter ended between calls (a thread of a cell's called os._exit,
 * say): this call starts a fresh one. Output and replies from between
 * calls belong to no call and are dropped. */
static void take_leftovers(struct boot_session *ds)
{
	/* What is there now, up to a bound: a cell's thread may still be
	 * printing, and the call must start. */
	for (int i = 0; i < 64 && !ds->dead; i++) {
		/* Frames already read (the last call ended at its reply, and
		 * boot's report of the interpreter's end may have come with
		 * it), then what is new. */
		struct frame f;
		while (next_frame(ds, &f)) {
			if (f.kind == 'x' || f.kind == 'f')
				ds->interpreter = false;
			frame_done(ds, &f);
		}
		size_t before = ds->raw.len;
		pump(ds, 1);
		if (ds->raw.len == before)
			break;
	}
}

struct call {
	struct boot_session *ds;
	const struct session_call *c;
	struct session_answer *ans;
	struct capture out, err, rb;
	struct outcome o;
	bool replied, ended, bad_reply;
	bool acked;     /* the interpreter took the request: it may have run */
	double cpu_base, cpu_limit;
	struct outgoing g;
};

static void handle_frame(struct supervisor *sv, struct call *k, const struct frame *f)
{
	switch (f->kind) {
	case 'o':
	case 'e':
		supervisor_output(sv, f->kind == 'o' ? 0 : 1, f->data, f->len);
		break;
	case 'r':
		if (sv->stopping)
			break;
		bool too_long = capture_append(&k->rb, f->data, f->len);
		if (session_take_reply(&k->rb, k->c->seq, k->ans, &k->acked)) {
			k->replied = sv->done = true;
			k->g.closed = true;
		} else if (too_long) {
			k->bad_reply = true;
			supervisor_stop(sv);
		}
		break;
	case 'x':
		k->ended = sv->done = true;
		k->g.closed = true;
		k->o.exited_report = parse_exit(f, &k->o.report);
		if (!k->o.exited_report) {
			k->o.setup_failed = true;
			snprintf(k->o.setup_message, sizeof k->o.setup_message,
				 "session: boot's report is malformed");
		}
		break;
	case 'f':
		k->ended = sv->done = true;
		k->g.closed = true;
		k->o.setup_failed = true;
		snprintf(k->o.setup_message, sizeof k->o.setup_message,
			 "session: the interpreter could not be started: %.*s",
			 (int)(f->len < 300 ? f->len : 300), f->data);
		break;
	default:
		break; /* "R" or a kind of a later boot: nothing to do */
	}
}

/* boot's stream: its frames, until the call's reply or the interpreter's
 * end. */
static void on_frames(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)src;
	struct call *k = sv->ctx;
	struct boot_session *ds = k->ds;
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	/* One read per wake-up while streaming: the consumer may be behind. */
	bool alive = pump(ds, sv->stream.out_tap ? 1 : 16);
	struct frame f;
	while (!sv->done && next_frame(ds, &f)) {
		handle_frame(sv, k, &f);
		frame_done(ds, &f);
	}
	if (!alive || ds->dead)
		sv->broken = true;
}

/* A caller waits behind this call (boot_session_nudge): its wake goes as a
 * frame of this call's own, after the request, so that no frame is ever
 * cut by another's. */
static void on_nudge(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	(void)revents;
	struct call *k = sv->ctx;
	uint64_t n;
	if (read(src->fd, &n, sizeof n) == (ssize_t)sizeof n)
		k->g.nudge = true;
}

static bool call_wants_write(struct supervisor *sv)
{
	struct call *k = sv->ctx;
	return outgoing_pending(&k->g);
}

static int call_write(struct supervisor *sv)
{
	struct call *k = sv->ctx;
	int rc = outgoing_write(&k->g, k->ds->fd);
	if (rc < 0)
		k->ds->dead = true; /* its end on the stream tells the rest */
	return rc;
}

/* Where the sandbox counts RLIMIT_CPU on a clock of its own (gVisor's
 * sentry), its CPU time is also watched from here, on the host's count. */
static bool call_cpu(struct supervisor *sv)
{
	struct call *k = sv->ctx;
	if (k->ds->cpu_ms(k->ds) - k->cpu_base <= k->cpu_limit)
		return false;
	k->o.cpu_stopped = true; /* a fact for the status rules (src/core/status.h) */
	return true;
}

/* A stop is boot's "k" frame: it kills every process in the sandbox but
 * itself and reports the interpreter's end. */
static void stop_call(struct supervisor *sv)
{
	struct call *k = sv->ctx;
	k->g.stop = true;
}

/* The call under the one supervision loop: its request in frames, its
 * output and reply out, the stop a "k" frame, the CPU watched where the
 * sandbox's own RLIMIT_CPU is not the host's count. */
static void supervise_boot_call(struct boot_session *ds, const struct aj_limits *l, struct call *k,
			   struct supervisor *sv)
{
	supervisor_init(sv, &k->o, now_ms(), l->wall_sec);
	sv->grace_ms = STOP_GRACE_MS;
	sv->cancel_fd = k->c->cancel_fd;
	sv->cap[0] = &k->out;
	sv->cap[1] = &k->err;
	/* The frames carry the output: left unread while the consumer is
	 * behind. */
	sv->src[0] = (struct supervisor_source){
		.fd = in_fd(ds), .while_stopping = true, .carries_output = true,
		.ready = on_frames};
	sv->src[1] = (struct supervisor_source){.fd = ds->nudge_fd, .ready = on_nudge};
	sv->stream = supervisor_stream_of(k->c->tap);
	/* The request goes in frames, each sent whole: after the reply or
	 * the interpreter's end the loop goes on until the frame being sent
	 * is (the stream's framing must survive into the next call). */
	sv->in_fd = ds->fd;
	sv->wants_write = call_wants_write;
	sv->write = call_write;
	if (ds->cpu_ms && (k->cpu_base = ds->cpu_ms(ds)) >= 0) {
		k->cpu_limit = (double)l->cpu_sec * 1000.0 + ds->cpu_allowance_ms;
		sv->check = call_cpu;
		sv->check_every_ms = BOOT_CPU_CHECK_MS;
	}
	sv->stop = stop_call;
	/* No force: a boot that does not confirm a stop within the grace is
	 * a broken sandbox, destroyed by the caller. */
	sv->ctx = k;
	supervisor_run(sv);
}

/* The sandbox failed the call: the session is over, and its sandbox goes
 * now (the core's close would do it too). */
static int boot_call_broken(struct boot_session *ds, const struct aj_limits *l, struct call *k,
			    bool stopping, double since, struct aj_result *res)
{
	capture_free(&k->out);
	capture_free(&k->err);
	free(k->ans->reply);
	k->ans->reply = NULL;
	if (ds->dead && ds->oom_since && ds->oom_since(ds, since)) {
		/* The sandbox's memory backstop ended it (gVisor: its OOM
		 * killer can only take the sentry, which holds all of the
		 * sandbox's memory): the program's memory, not a failure of
		 * the sandbox (status rule 7). */
		struct end_facts f = {.ended = true, .wstatus = SIGKILL, .oom_kills = 1};
		status_decide(&f, l, res);
		result_add_note(res, "the whole sandbox ended with it: the session is closed", false);
	} else {
		result_sandbox_error(res, "%s: session: the sandbox %s; the session is closed",
				     ds->tier,
				     ds->dead ? "ended (its stream closed)"
				     : stopping ? "did not stop the call within 2 s"
						: "stopped taking requests");
	}
	ds->dead = true;
	res->wall_ms = k->o.wall_ms;
	ds->destroy(ds);
	return -EPIPE;
}

/* The interpreter ended: how, as a run's program would have. If it did so
 * by itself before it took the request, the core gives the request to a
 * fresh one. */
static void boot_call_ended(struct boot_session *ds, const struct aj_limits *l, struct call *k,
		       bool stopping, double since, struct aj_result *res)
{
	ds->interpreter = false;
	k->ans->ended = true;
	k->ans->unread = !k->acked && !stopping;
	/* The tier's word on its memory cgroup's OOM killer (a flag: one
	 * process at least); the status rules decide (src/core/status.h).
	 * Asked only when the end could be the OOM killer's (a SIGKILL none
	 * of ours sent, or no word at all): docker's answer takes a while. */
	const struct outcome *o = &k->o;
	const int ws = o->report.wstatus;
	if (ds->oom_since && !o->timed_out && !o->cpu_stopped && !o->cancelled &&
	    !o->output_overflow &&
	    (!o->exited_report || (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)) &&
	    ds->oom_since(ds, since))
		k->o.oom_kills = 1;
	if (k->bad_reply)
		outcome_reply_too_long(&k->o, k->c->reply_max);
	outcome_to_result(&k->o, l, &k->out, &k->err, res);
}

int boot_session_call(struct boot_session *ds, const struct aj_config *cfg,
		      const struct session_call *c, struct aj_result *res,
		      struct session_answer *ans)
{
	const struct aj_limits *l = &cfg->limits;
	const size_t cap = (size_t)l->output_kb * 1024;

	memset(ans, 0, sizeof *ans);
	if (ds->dead) {
		result_sandbox_error(res, "%s: session: the sandbox has ended", ds->tier);
		return -EPIPE;
	}
	take_leftovers(ds);
	if (ds->dead) {
		result_sandbox_error(res, "%s: session: the sandbox has ended; the session is closed",
				     ds->tier);
		return -EPIPE;
	}
	struct call k;
	memset(&k, 0, sizeof k);
	k.ds = ds;
	k.c = c;
	k.ans = ans;
	k.g.c = c;
	if (!ds->interpreter) {
		k.g.start = true;
		ds->interpreter = true;
		ans->restarted = ds->started_before;
		ds->started_before = true;
	}
	capture_init(&k.out, cap);
	capture_init(&k.err, cap);
	capture_init(&k.rb, c->reply_max + 1);
	const double since = now_ms();
	struct supervisor sv;
	supervise_boot_call(ds, l, &k, &sv);
	capture_free(&k.rb);
	if (sv.broken)
		return boot_call_broken(ds, l, &k, sv.stopping, since, res);
	if (k.replied) {
		/* It may have ended right after its reply (a cell closed its
		 * request pipe): boot's report came with it, and the next call
		 * starts a fresh interpreter. */
		if (k.ended)
			ds->interpreter = false;
		replied_to_result(k.o.wall_ms, &k.out, &k.err, res);
	} else {
		boot_call_ended(ds, l, &k, sv.stopping, since, res);
	}
	capture_free(&k.out);
	capture_free(&k.err);
	return 0;
}
