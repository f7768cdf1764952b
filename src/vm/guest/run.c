/* One run: a VM_RUN in, one VM_RESULT out (see agent.c's theory of
 * operation). The zygote forks the program, which becomes the agent's own
 * child; the one supervision loop, with watch.c's hooks, keeps its clock
 * and caps its output, which goes to the host as it is read; the result
 * carries facts only (how the program ended, its usage, the OOM kills): the
 * host decides the status with the rules every tier shares
 * (src/core/status.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

/* After a kill the agent waits at most this long before reporting anyway. */
#define REAP_WAIT_MS 5000

struct run {
	struct vm_run lim;
	char *code;
	char *env;              /* the deployer's variables, lines (frame.c) */
	int64_t start_us;
	struct zygote *z;
	struct capture out, err;
	struct watch w;
	bool control_open;
	pid_t program;          /* from the zygote's "pid N"; 0 until then */
	bool zygote_reaped;
	int zygote_status;
	bool program_reaped;
	int program_status;
	struct rusage program_usage;
	bool setup_failed;      /* the zygote's child could not apply a step */
	struct failure setup;
};

/* The run's clock starts as its frame is read. */
static int receive(const struct vm_frame_header *h, struct run *r, struct failure *f)
{
	r->start_us = now_us();
	return receive_run(port_read, h, &r->lim, &r->code, &r->env, f);
}

static void read_control(struct run *r)
{
	char line[512];
	int got;
	while ((got = zygote_control_line(r->z, line, sizeof line)) > 0) {
		int pid;
		if (sscanf(line, "pid %d", &pid) == 1 && pid > 1 && r->program == 0) {
			r->program = pid;
		} else if (strncmp(line, "fail ", 5) == 0 && !r->setup_failed) {
			r->setup_failed = true;
			fail(&r->setup, 0, "zygote: %s", line + 5);
		}
	}
	if (got < 0)
		r->control_open = false;
}

/* Reaps what has ended. The program is the zygote's child until the zygote
 * exits, and the zygote writes the program's pid before exiting: so reap the
 * zygote first and read its pid line before reaping anything else, or the
 * program could be reaped as an unknown orphan. */
static void reap_run(struct watch *w)
{
	struct run *r = w->owner;
	int st;
	if (!r->zygote_reaped) {
		pid_t p = waitpid(r->z->pid, &st, WNOHANG);
		if (p != r->z->pid)
			return; /* while it lives, it is our only child */
		r->zygote_reaped = true;
		r->zygote_status = st;
		read_control(r);
	}
	for (;;) {
		struct rusage ru;
		pid_t p = wait4(-1, &st, WNOHANG, &ru);
		if (p <= 0)
			return;
		if (p == r->program) {
			r->program_reaped = true;
			r->program_status = st;
			r->program_usage = ru;
		}
		/* anything else: an orphan of the program's, reparented to us */
	}
}

/* A step the zygote's child could not take: nothing runs with less than
 * was asked. */
static bool setup_failed_now(struct watch *w)
{
	const struct run *r = w->owner;
	return r->setup_failed;
}

static bool run_over(struct watch *w)
{
	const struct run *r = w->owner;
	if (r->program_reaped)
		return true;
	/* The zygote ended and can no longer say a pid: no program started. */
	return r->zygote_reaped && r->program == 0 && !r->control_open;
}

static void control_ready(struct supervisor *sv, struct supervisor_source *src, short revents)
{
	struct watch *w = sv->ctx;
	struct run *r = w->owner;
	(void)revents;
	read_control(r);
	if (!r->control_open)
		src->fd = -1; /* at EOF: polled no more */
	watch_settle(w);
}

static const struct watch_hooks run_hooks = {
	.reap = reap_run,
	.must_stop = setup_failed_now,
	.over = run_over,
};

/* The loop over the program: its clock from the frame's arrival, both
 * output streams, and the zygote's control pipe, read while stopping too:
 * its pid line tells the program's end apart, its EOF says none started. */
static void watch_over_run(struct run *r, int sigfd)
{
	struct watch *w = &r->w;
	watch_init(w, &run_hooks, r, sigfd, (double)r->start_us / 1000.0, r->lim.wall_ms, 0);
	w->sv.out_fd[0] = r->z->out_fd;
	w->sv.out_fd[1] = r->z->err_fd;
	w->sv.cap[0] = &r->out;
	w->sv.cap[1] = &r->err;
	w->sv.src[0] = (struct supervisor_source){.fd = r->z->control_fd, .while_stopping = true,
						  .ready = control_ready};
	watch_program(w);
}

/* The program has ended (or never started): end what it left behind, reap
 * everything, then take what is still in the pipes. Once nothing but us is
 * left, no write end of them is open and the reads end. Past the bound the
 * result goes anyway; the host destroys the VM. */
static void finish(struct run *r)
{
	watch_end_all(&r->w, REAP_WAIT_MS);
	supervisor_drain(&r->w.sv);
	read_control(r);
}

struct result {
	struct vm_result head;
	char message[MESSAGE_MAX];
};

/* Nothing of the program ran: the step that failed, for the host to quote. */
static void setup_failed(struct result *res, const char *message)
{
	res->head.flags |= VM_RUN_SETUP_FAILED;
	snprintf(res->message, sizeof res->message, "%s", message);
}

/* CPU from the run's cgroup: the whole tree's, killed processes included,
 * and none of the zygote's import time (spent before the child joined); the
 * program's own figure where that is larger. */
static void usage(const struct run *r, struct result *res)
{
	const struct rusage *ru = &r->program_usage;
	res->head.cpu_us = (uint64_t)ru->ru_utime.tv_sec * 1000000 + (uint64_t)ru->ru_utime.tv_usec +
			   (uint64_t)ru->ru_stime.tv_sec * 1000000 + (uint64_t)ru->ru_stime.tv_usec;
	res->head.memory_kb = (uint64_t)ru->ru_maxrss;
	uint64_t cpu = run_cgroup_value("cpu.stat", "usage_usec");
	if (cpu > res->head.cpu_us)
		res->head.cpu_us = cpu;
	/* The larger of the biggest process's resident set (which counts the
	 * interpreter's pages it shares with the zygote, as a fresh python3's
	 * would) and the whole tree's charge to the cgroup (which does not). */
	uint64_t peak_kb = run_cgroup_value("memory.peak", NULL) / 1024;
	if (peak_kb > res->head.memory_kb)
		res->head.memory_kb = peak_kb;
	res->head.oom_kills = run_cgroup_value("memory.events", "oom_kill");
}

/* The run's facts, never their reading: the host decides the status with
 * the rules every tier shares (src/core/status.h). */
static void gather_facts(const struct run *r, struct result *res)
{
	usage(r, res);
	res->head.flags |= (r->out.truncated ? VM_STDOUT_TRUNCATED : 0) |
			   (r->err.truncated ? VM_STDERR_TRUNCATED : 0) |
			   (r->w.o.output_overflow ? VM_RUN_OVERFLOW : 0) |
			   (r->w.o.timed_out ? VM_RUN_TIMED_OUT : 0);
	if (r->setup_failed) {
		setup_failed(res, r->setup.message);
		return;
	}
	if (r->program_reaped) {
		res->head.flags |= VM_RUN_ENDED;
		res->head.wstatus = r->program_status;
		/* The program's own word that a MemoryError ended it (zygote.py
		 * writes its verdict pipe): a fact for the host's rule S7. */
		char byte;
		if (read(r->z->verdict_fd, &byte, 1) == 1)
			res->head.flags |= VM_RUN_MEMORY_ERROR;
		return;
	}
	int zs = r->zygote_status;
	snprintf(res->message, sizeof res->message,
		 "guest: zygote ended without starting the program (%s %d)",
		 WIFEXITED(zs) ? "exit status" : "signal",
		 WIFEXITED(zs) ? WEXITSTATUS(zs) : WTERMSIG(zs));
}

static void send_run_result(struct run *r, struct result *res)
{
	/* Every byte of output before the result that counts them. */
	watch_flush(&r->w);
	res->head.stdout_len = (uint32_t)r->out.len;
	res->head.stderr_len = (uint32_t)r->err.len;
	res->head.message_len = (uint32_t)strlen(res->message);
	res->head.wall_us = (uint64_t)(now_us() - r->start_us);
	struct iovec parts[2] = {
		{.iov_base = &res->head, .iov_len = sizeof res->head},
		{.iov_base = res->message, .iov_len = res->head.message_len},
	};
	int rc = send_frame(VM_RESULT, parts, 2);
	if (rc)
		fprintf(stderr, "agentjail-guest: send VM_RESULT: %s\n", errname(-rc));
}

/* Every step before the program starts; the first failure ends the run. */
static int prepare(struct run *r, struct failure *f)
{
	int rc;
	if ((rc = check_run_limits(&r->lim, f)))
		return rc;
	refresh_clock();
	if ((rc = refresh_entropy(r->code, r->lim.code_len, f)) ||
	    (rc = make_workspace(r->lim.disk_mb, r->code, r->lim.code_len, f)) ||
	    (rc = run_cgroup_limit(r->lim.memory_mb, r->lim.pids, f)) ||
	    /* Listening before the program exists, so it never finds the
	     * port free or unanswered. */
	    (r->lim.egress && (rc = egress_start(f))) ||
	    (rc = zygote_release(r->z, &r->lim, r->env, f)))
		return rc;
	return 0;
}

void serve_run(const struct vm_frame_header *h, struct zygote *z, int sigfd)
{
	struct run r;
	struct result res;
	struct failure f;
	memset(&r, 0, sizeof r);
	memset(&res, 0, sizeof res);
	r.z = z;

	int rc = receive(h, &r, &f);
	if (rc == 0) {
		r.out.limit = r.err.limit = (size_t)r.lim.output_kb * 1024;
		rc = prepare(&r, &f);
	}
	if (rc) {
		/* Nothing of the program has run; make sure nothing will. */
		kill(-1, SIGKILL);
		setup_failed(&res, f.message);
		if (r.start_us == 0)
			r.start_us = now_us();
	} else {
		r.control_open = true;
		watch_over_run(&r, sigfd);
		finish(&r);
		gather_facts(&r, &res);
	}
	send_run_result(&r, &res);
	free(r.code);
	free(r.env);
	capture_free(&r.out);
	capture_free(&r.err);
}
