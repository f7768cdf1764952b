/* agentjail worker: takes runs and session calls from Redis (queue.h) and
 * runs them here, under this machine's tier and this deployer's limits.
 *
 * Threads: `concurrency` readers of the tier's stream (one run each at a
 * time), as many for the calls of the sessions this worker holds, and one
 * that keeps the worker's heartbeat, reports sessions the library closed,
 * and closes what dead workers left behind: their taken runs are answered
 * "worker lost" and never run again; their sessions are marked closed.
 * One more polls the records of the recorded runs under way for a cancel.
 *
 * SIGTERM: no new request is taken; runs in progress finish and are
 * answered; sessions are closed; then the worker leaves. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cli/cli.h"
#include "../admit/options.h"
#include "worker.h"

int cmd_worker(int argc, char **argv);

#define MAX_THREADS 256

static const char usage[] =
	"usage: agentjail worker --queue redis://HOST[:PORT][/DB] [options]\n"
	"\n"
	"Takes runs from the queue agentjail serve --queue puts them on, and runs\n"
	"them here in the given tier, under this worker's limits (a run asking\n"
	"for more is refused). Any number of workers, on any machines.\n"
	"\n"
	"  --queue URL        the Redis (required)\n"
	"  --name NAME        this worker's name (default: HOSTNAME-PID); unique\n"
	"  --concurrency N    runs at once (default: the CPUs), advertised as this\n"
	"                     worker's slots: serve admits up to the live workers' sum\n"
	SERVICE_OPTIONS_HELP SESSION_OPTIONS_HELP
		LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP EGRESS_OPTIONS_HELP;

enum { OPT_QUEUE = 6000, OPT_NAME, OPT_CONC };

/* What the command line asked for beyond the worker's config. */
struct worker_args {
	struct worker *w;
	const char *url, *name;
};

static int worker_option(int o, const char *arg, void *ctx)
{
	struct worker_args *a = ctx;
	if (o == OPT_QUEUE)
		a->url = arg;
	else if (o == OPT_NAME)
		a->name = arg;
	else if (o == OPT_CONC)
		return parse_count_u("concurrency", arg, 1, MAX_THREADS / 2, &a->w->concurrency);
	return 0;
}

/* This worker's name: --name, else HOSTNAME-PID. 0, or -1 after saying
 * what is wrong with it. */
static int name_worker(struct worker *w, const char *name)
{
	if (name) {
		struct aj_error nerr;
		if (key_name_check(name, &nerr)) {
			cli_error("worker: --name: %s", nerr.message + strlen("key name: "));
			return -1;
		}
		snprintf(w->name, sizeof w->name, "%s", name);
	} else {
		char host[64] = "worker";
		gethostname(host, sizeof host - 1);
		host[strcspn(host, ".")] = '\0';
		snprintf(w->name, sizeof w->name, "%s-%d", host, (int)getpid());
	}
	char start[33];
	serve_id_new(start);
	/* '@' is in no name (key_name_check): the start is told apart. */
	snprintf(w->id, sizeof w->id, "%s@%.16s", w->name, start);
	snprintf(w->name_key, sizeof w->name_key, "agentjail:workername:%s", w->name);
	snprintf(w->stream, sizeof w->stream, "agentjail:runs:%s", aj_tier_name(w->cfg.tier));
	snprintf(w->ops, sizeof w->ops, "agentjail:worker:%s:ops", w->id);
	return 0;
}

/* The group exists before the first read, and the name is this start's,
 * not a live worker's: 0, or -1 when it is. A predecessor under the name
 * that died (its key not yet expired) is waited out, so a restart goes
 * on; its runs are another instance's, found lost by their readers and
 * buried by a survivor (this one too). A Redis not reachable yet is no
 * error (the readers keep trying). */
static int join_the_queue(struct worker *w)
{
	struct aj_error err = {0};
	redisContext *c = queue_get(&w->q, 5.0, &err);
	if (!c) {
		worker_log(w, "%s; will keep trying", err.message);
		return 0;
	}
	queue_do(c, "XGROUP CREATE %s %s 0 MKSTREAM", w->stream, QUEUE_GROUP);
	bool taken = true, broken = false;
	/* A live holder renews it every second: past its expiry and a
	 * second more, it is alive. */
	for (int waited = 0; taken && waited <= QUEUE_ALIVE_MS + 1000; waited += 250) {
		redisReply *r = queue_cmd(c, &err, "SET %s %s NX PX %d", w->name_key, w->id,
					  QUEUE_ALIVE_MS);
		if (!r) {
			/* Redis went: the readers keep trying. */
			taken = false;
			broken = true;
			break;
		}
		taken = r->type != REDIS_REPLY_STATUS;
		freeReplyObject(r);
		if (taken)
			worker_pause_ms(250);
	}
	queue_put(&w->q, c, broken);
	if (taken) {
		cli_error("worker: the name '%s' is in use by a live worker", w->name);
		return -1;
	}
	return 0;
}

/* Runs the threads until SIGTERM or SIGINT (blocked by the caller), then
 * lets the runs in progress finish and the keeper leave. */
static void work(struct worker *w, const sigset_t *stop, const char *url)
{
	pthread_t keeper, canceller, th[MAX_THREADS];
	unsigned n = 0;
	pthread_create(&keeper, NULL, worker_keeper_loop, w);
	pthread_create(&canceller, NULL, worker_canceller_loop, w);
	for (unsigned i = 0; i < w->concurrency; i++) {
		pthread_create(&th[n++], NULL, worker_stream_loop, w);
		pthread_create(&th[n++], NULL, worker_ops_loop, w);
	}
	printf("AGENTJAIL_WORKER=%s\n", w->name);
	fflush(stdout);
	worker_log(w, "taking %s runs from %s, %u at once, as %s", aj_tier_name(w->cfg.tier), url,
		   w->concurrency, w->id);
	int sig;
	sigwait(stop, &sig);
	worker_log(w, "%s: finishing the runs in progress, taking no new ones", strsignal(sig));
	atomic_store(&w->stopping, true);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	atomic_store(&w->keeper_stop, true);
	pthread_join(keeper, NULL);
	pthread_join(canceller, NULL);
}

int cmd_worker(int argc, char **argv)
{
	/* The worker's state, passed to every thread; they are joined before
	 * it goes. */
	struct worker w = {0};
	static const struct option own[] = {{"queue", required_argument, NULL, OPT_QUEUE},
					    {"name", required_argument, NULL, OPT_NAME},
					    {"concurrency", required_argument, NULL, OPT_CONC},
					    {NULL, 0, NULL, 0}};
	aj_config_init(&w.cfg);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	w.concurrency = cpus > 0 ? (unsigned)cpus : 1;
	struct worker_args a = {.w = &w};
	int rc = service_parse(argc, argv, "worker", usage, own, &w.cfg, worker_option, &a);
	if (rc >= 0)
		return rc;
	if (!a.url) {
		cli_error("worker: --queue redis://HOST[:PORT][/DB] is required");
		return EXIT_USAGE;
	}
	struct aj_error err = {0};
	if (queue_init(&w.q, a.url, &err)) {
		cli_error("worker: %s", err.message);
		return EXIT_USAGE;
	}
	if (name_worker(&w, a.name))
		return EXIT_USAGE;
	pthread_mutex_init(&w.lock, NULL);
	pthread_mutex_init(&w.rec_lock, NULL);
	/* serve's keep time comes with each recorded run; the budget is
	 * serve's to hold, when it creates the record. */
	if (remote_store_open(&w.runs, &w.q, 0, 0, &err)) {
		cli_error("worker: %s", err.message);
		return EXIT_SANDBOX;
	}

	sigset_t stop;
	service_block_signals(&stop);
	if (local_open(&w.local, &w.cfg, &err)) {
		cli_error("worker: the %s tier cannot run here: %s", aj_tier_name(w.cfg.tier),
			  err.message);
		return EXIT_SANDBOX;
	}
	if (join_the_queue(&w)) {
		local_close(&w.local);
		w.runs.ops->close(&w.runs);
		queue_destroy(&w.q);
		return EXIT_USAGE;
	}
	work(&w, &stop, a.url);
	worker_sessions_end(&w);
	local_close(&w.local);
	w.runs.ops->close(&w.runs);
	queue_destroy(&w.q);
	worker_log(&w, "stopped");
	return 0;
}
