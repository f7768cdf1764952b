/* The zygote: `/usr/bin/python3 -I -u /.agentjail/zygote.py` (build-vm.sh
 * puts the script on the image's disk), started at boot
 * (see agent.c's theory of operation), released once by a run with its
 * request line, or ended for a session. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../include/agentjail.h"
#include "../../core/contract.h"
#include "agent.h"

#define ZYGOTE "/.agentjail/zygote.py"

/* The zygote's fds, as zygote.py expects them. */
#define ZYGOTE_REQUEST_FD 3
#define ZYGOTE_CONTROL_FD 4
#define ZYGOTE_CGROUP_FD 5
/* The program's verdict pipe (AJ_VERDICT_FD, src/core/status.h): the
 * child moves it to fd 3 (the request pipe's, closed by then). */
#define ZYGOTE_VERDICT_FD 6
#define ZYGOTE_FDS 7

/* Under TCG Python's imports are slow, so this is generous; it only exists
 * so a broken image powers off instead of hanging the host's boot. */
#define ZYGOTE_READY_MS 60000

int zygote_spawn(struct zygote *z, struct failure *f)
{
	int req[2], ctl[2], out[2], err[2], verdict[2];
	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(ctl, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0 || pipe2(verdict, O_CLOEXEC) < 0)
		return fail(f, errno, "zygote: pipe");
	/* Its environment from nothing: what the program is promised (rule
	 * E1, the table every tier reads), set before Python starts so the
	 * interpreter's own choices (the locale, hence the encoding of stdio)
	 * are the ones `python3 main.py` makes. zygote.py hands it on. */
	char *const argv[] = {PYTHON, "-I", "-u", ZYGOTE, NULL};
	char *const *envp = contract_environment;
	pid_t pid = fork();
	if (pid < 0)
		return fail(f, errno, "zygote: fork");
	if (pid == 0) {
		/* Move the fds the zygote keeps clear of 0..5 before
		 * placing them, so no dup2 overwrites another. The run
		 * cgroup's directory is how its child joins that cgroup,
		 * which no path leads to; the child closes it. */
		int keep[ZYGOTE_FDS] = {
			[0] = open("/dev/null", O_RDONLY | O_CLOEXEC), [1] = out[1], [2] = err[1],
			[ZYGOTE_REQUEST_FD] = req[0], [ZYGOTE_CONTROL_FD] = ctl[1],
			[ZYGOTE_CGROUP_FD] = run_cgroup, [ZYGOTE_VERDICT_FD] = verdict[1],
		};
		for (int i = 0; i < ZYGOTE_FDS; i++)
			keep[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 16);
		for (int i = 0; i < ZYGOTE_FDS; i++) {
			if (keep[i] < 0 || dup2(keep[i], i) < 0) {
				dprintf(keep[ZYGOTE_CONTROL_FD], "fail zygote fd %d: %s\n", i,
					errname(errno));
				_exit(127);
			}
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL); /* exec keeps the mask */
		signal(SIGPIPE, SIG_DFL);
		/* The same seccomp policy as the host tiers, on the zygote and so
		 * on every program it forks: no mounts, namespaces, keyrings,
		 * ptrace, SysV IPC, memfds, or sockets but inet and routing
		 * netlink. A guest kernel is one more boundary, not a reason to
		 * offer it more surface. no_new_privs first, as the kernel asks. */
		if (apply_policy() < 0) {
			dprintf(ZYGOTE_CONTROL_FD, "fail seccomp: %s\n", errname(errno));
			_exit(127);
		}
		execve(argv[0], argv, envp);
		dprintf(ZYGOTE_CONTROL_FD, "fail exec %s: %s\n", argv[0], errname(errno));
		_exit(127);
	}
	close(req[0]);
	close(ctl[1]);
	close(out[1]);
	close(err[1]);
	close(verdict[1]);
	z->pid = pid;
	z->verdict_fd = verdict[0];
	z->request_fd = req[1];
	z->control_fd = ctl[0];
	z->out_fd = out[0];
	z->err_fd = err[0];
	z->line_len = 0;
	fcntl(z->control_fd, F_SETFL, O_NONBLOCK);
	fcntl(z->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(z->err_fd, F_SETFL, O_NONBLOCK);
	fcntl(z->verdict_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

int zygote_control_line(struct zygote *z, char *out, size_t size)
{
	for (;;) {
		char *nl = memchr(z->line, '\n', z->line_len);
		if (nl) {
			size_t n = (size_t)(nl - z->line);
			snprintf(out, size, "%.*s", (int)n, z->line);
			memmove(z->line, nl + 1, z->line_len - n - 1);
			z->line_len -= n + 1;
			return 1;
		}
		if (z->line_len == sizeof z->line) /* no newline in 512 bytes */
			z->line_len = 0;
		ssize_t r = read(z->control_fd, z->line + z->line_len, sizeof z->line - z->line_len);
		if (r > 0) {
			z->line_len += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		return -1;
	}
}

/* Whatever the zygote printed, to the console: at boot it is diagnostics,
 * never the program's output. */
void zygote_echo(int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		write_full(2, buf, (size_t)n);
}

int zygote_await(struct zygote *z, struct failure *f)
{
	int64_t give_up = now_us() + (int64_t)ZYGOTE_READY_MS * 1000;
	char line[512];
	for (;;) {
		int got = zygote_control_line(z, line, sizeof line);
		if (got > 0 && strcmp(line, "ready") == 0)
			return 0;
		if (got > 0 && strncmp(line, "fail ", 5) == 0)
			return fail(f, 0, "zygote: %s", line + 5);
		if (got < 0)
			return fail(f, 0, "zygote: %s ended before it was ready", ZYGOTE);
		int64_t left = give_up - now_us();
		if (left <= 0)
			return fail(f, ETIMEDOUT, "zygote: not ready within %d ms", ZYGOTE_READY_MS);
		struct pollfd p = {.fd = z->control_fd, .events = POLLIN};
		poll(&p, 1, (int)(left / 1000) + 1);
	}
}

/* zygote.py's request, as it is written. */
struct zygote_request {
	char text[1024 + AJ_MAX_ENV_BYTES + 5 * AJ_MAX_ENV]; /* the rows, the variables as "env " lines */
	size_t n;
};

static int add_row(const struct contract_rlimit *row, uint64_t soft, uint64_t hard, void *ctx)
{
	struct zygote_request *q = ctx;
	int n = snprintf(q->text + q->n, sizeof q->text - q->n, "rlimit %d %llu %llu %s\n",
			 row->resource, (unsigned long long)soft, (unsigned long long)hard,
			 row->word);
	if (n < 0 || (size_t)n >= sizeof q->text - q->n)
		return -1;
	q->n += (size_t)n;
	return 0;
}

/* The request zygote.py parses: the rlimit table every tier reads (rule
 * E2), with this run's values, a row a line, then with egress the
 * environment rows it adds (rule E1), then an empty line. No address
 * space row: the run's memory cgroup bounds it; uid 1000 is the program's
 * own (nothing else in the VM runs as it). Closing the pipe after it means
 * the zygote can never be asked twice. */
int zygote_release(struct zygote *z, const struct vm_run *lim, const char *env,
		   struct failure *f)
{
	const struct aj_limits l = {.cpu_sec = lim->cpu_sec, .memory_mb = lim->memory_mb,
				    .pids = lim->pids, .file_size_mb = lim->file_size_mb,
				    .open_files = lim->open_files};
	struct zygote_request req = {.n = 0};
	if (contract_rlimits_each(&l, false, true, add_row, &req))
		return fail(f, ENOBUFS, "the request to the zygote");
	/* With egress, the proxy's rows of rule E1 too: the zygote's own
	 * environment (made at boot, in the snapshot) has none. */
	for (size_t i = 0; lim->egress && contract_egress_environment[i]; i++) {
		int n = snprintf(req.text + req.n, sizeof req.text - req.n, "env %s\n",
				 contract_egress_environment[i]);
		if (n < 0 || (size_t)n >= sizeof req.text - req.n)
			return fail(f, ENOBUFS, "the request to the zygote");
		req.n += (size_t)n;
	}
	/* Then the deployer's variables, as rows of the same kind: lines
	 * already, each checked on the host (rule E1). */
	for (const char *p = env, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		int n = snprintf(req.text + req.n, sizeof req.text - req.n, "env %.*s\n",
				 (int)(nl - p), p);
		if (n < 0 || (size_t)n >= sizeof req.text - req.n)
			return fail(f, ENOBUFS, "the request to the zygote");
		req.n += (size_t)n;
	}
	if (req.n + 1 >= sizeof req.text)
		return fail(f, ENOBUFS, "the request to the zygote");
	req.text[req.n++] = '\n'; /* the empty line that ends it */
	int rc = write_full(z->request_fd, req.text, req.n);
	close(z->request_fd);
	z->request_fd = -1;
	if (rc)
		return fail(f, -rc, "send the request to the zygote");
	return 0;
}

/* A session: the zygote's one interpreter is not the session's (see
 * session.c); it goes before anything of the session's starts. */
void zygote_end(struct zygote *z)
{
	kill(z->pid, SIGKILL);
	waitpid(z->pid, NULL, 0);
	close(z->request_fd);
	close(z->control_fd);
	close(z->out_fd);
	close(z->err_fd);
	close(z->verdict_fd);
}
