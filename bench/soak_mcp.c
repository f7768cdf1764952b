/* The long-lived caller: `agentjail mcp --tier process` as a child, spoken
 * to as an MCP client would (JSON-RPC 2.0, one message a line on its stdin
 * and stdout): initialize, then tools/call run_python with the soak's
 * programs, four in flight (the server's default concurrency). Each answer's
 * structuredContent is checked as aj_run's result is. Its VmRSS is sampled
 * after a warm-up (allocator arenas, the first runs' one-time setup) and at
 * the end: growth between the two is what a leak per call would show. Then
 * stdin is closed, and the server must exit 0 on its own. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

#define IN_FLIGHT 4

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int send_line(FILE *to, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		return -1;
	int rc = fprintf(to, "%s\n", s) < 0 || fflush(to) ? -1 : 0;
	free(s);
	return rc;
}

static int send_call(FILE *to, long id, const char *code)
{
	return send_line(to, json_pack("{s:s, s:I, s:s, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0",
				       "id", (json_int_t)id, "method", "tools/call", "params",
				       "name", "run_python", "arguments", "code", code));
}

/* The answer's structuredContent as the aj_result the checks read. */
static bool to_result(json_t *sc, struct aj_result *r)
{
	memset(r, 0, sizeof *r);
	const char *status = json_string_value(json_object_get(sc, "status"));
	if (!status)
		return false;
	r->status = AJ_STATUS_SANDBOX_ERROR;
	for (int s = 0; s < AJ_STATUS_COUNT; s++)
		if (!strcmp(status, aj_status_name((enum aj_status)s)))
			r->status = (enum aj_status)s;
	json_t *code = json_object_get(sc, "exit_code");
	r->has_exit_code = json_is_integer(code);
	r->exit_code = (int)json_integer_value(code);
	r->signal = (int)json_integer_value(json_object_get(sc, "signal"));
	const char *out = json_string_value(json_object_get(sc, "stdout"));
	const char *err = json_string_value(json_object_get(sc, "stderr"));
	const char *msg = json_string_value(json_object_get(sc, "message"));
	r->stdout_buf = (char *)(out ? out : "");
	r->stdout_len = strlen(r->stdout_buf);
	r->stderr_buf = (char *)(err ? err : "");
	r->stderr_len = strlen(r->stderr_buf);
	r->stdout_truncated = json_is_true(json_object_get(sc, "stdout_truncated"));
	r->stderr_truncated = json_is_true(json_object_get(sc, "stderr_truncated"));
	r->message = (char *)msg;
	return true;
}

int soak_mcp(const char *agentjail, struct soak_host *h, long calls, long warm,
	     struct soak_mcp_result *out)
{
	memset(out, 0, sizeof *out);
	out->warm_at = warm;
	int in[2], outp[2];
	if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		int log = open("build/soak-mcp.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (log >= 0)
			dup2(log, 2);
		execl(agentjail, agentjail, "mcp", "--tier", "process", "--timeout", "4", "--cpu",
		      "1", "--output", "256", "--concurrency", "4", (char *)NULL);
		_exit(127);
	}
	out->pid = pid;
	close(in[0]);
	close(outp[1]);
	FILE *to = fdopen(in[1], "w");
	FILE *from = fdopen(outp[0], "r");
	if (!to || !from)
		return -1;
	/* The limits the server was given, for the checks. */
	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.limits.wall_sec = 4;
	cfg.limits.cpu_sec = 1;
	cfg.limits.output_kb = 256;

	char *line = NULL;
	size_t cap = 0;
	double t0 = now_s();
	int rc = send_line(to, json_pack("{s:s, s:i, s:s, s:{s:s, s:{}, s:{s:s, s:s}}}", "jsonrpc",
					 "2.0", "id", 0, "method", "initialize", "params",
					 "protocolVersion", "2025-11-25", "capabilities",
					 "clientInfo", "name", "agentjail-soak", "version", "1"));
	if (rc || getline(&line, &cap, from) < 0 || !strstr(line, "\"protocolVersion\"")) {
		fprintf(stderr, "soak: mcp: no answer to initialize\n");
		rc = -1;
		goto done;
	}
	send_line(to, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
				"notifications/initialized"));
	size_t *prog = calloc((size_t)calls + 1, sizeof *prog);
	long sent = 0, got = 0;
	while (prog && got < calls) {
		while (sent < calls && sent - got < IN_FLIGHT) {
			size_t p = soak_pick((uint64_t)sent);
			prog[sent] = p;
			if (send_call(to, sent + 1, h->codes[p]))
				break;
			sent++;
		}
		if (getline(&line, &cap, from) < 0) {
			fprintf(stderr, "soak: mcp: the server closed its stdout after %ld answers\n",
				got);
			rc = -1;
			break;
		}
		json_error_t jerr;
		json_t *msg = json_loads(line, 0, &jerr);
		json_int_t id = json_integer_value(json_object_get(msg, "id"));
		json_t *sc = json_object_get(json_object_get(msg, "result"), "structuredContent");
		got++;
		struct aj_result r;
		char why[300] = "";
		bool ok = false;
		const char *name = id >= 1 && id <= sent ? soak_programs[prog[id - 1]].name : "?";
		if (id < 1 || id > sent)
			snprintf(why, sizeof why, "an answer with an id never sent: %.200s", line);
		else if (!to_result(sc, &r))
			snprintf(why, sizeof why, "no structuredContent: %.200s", line);
		else
			ok = soak_programs[prog[id - 1]].check(&r, &cfg, h, why, sizeof why);
		if (!ok) {
			if (!out->mismatches++)
				snprintf(out->first_mismatch, sizeof out->first_mismatch, "%s: %s", name,
					 why);
		}
		json_decref(msg);
		if (got == warm)
			out->rss_warm_kb = census_rss_kb(pid);
	}
	out->calls = got;
	out->rss_end_kb = census_rss_kb(pid);
	free(prog);
done:
	out->seconds = now_s() - t0;
	/* stdin's end: the server must finish and exit 0 by itself. */
	fclose(to);
	int ws = 0;
	pid_t w = 0;
	for (int i = 0; i < 200 && w == 0; i++) {
		w = waitpid(pid, &ws, WNOHANG);
		if (w == 0)
			usleep(50000);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &ws, 0);
		out->clean_exit = false;
		out->exit_status = -1;
	} else {
		out->clean_exit = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
		out->exit_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	}
	fclose(from);
	free(line);
	return rc;
}
