/* agentjail-serve: the service commands, a binary of their own because they
 * link an HTTP server, a Redis client and libcrypto that every one-shot
 * `agentjail run` should not load (that one is static). `agentjail serve`,
 * `agentjail keys` and `agentjail worker` run this.
 *
 *   agentjail serve [--listen HOST:PORT] [--keys FILE] [limits...]
 *   agentjail keys add|list|remove --file FILE ...
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "api_v1.h"
#include "http/http.h"
#include "http/tls.h"
#include "http_wiring.h"
#include "e2b/e2b.h"
#include "mcp_http.h"
#include "tier_probe.h"
#include "admit/call_secrets.h"
#include "admit/options.h"
#include "admit/service.h"
#include "http/access_log.h"
#include "webhook/webhook.h"
#include "admit/webhook_run.h"

int cmd_keys(int argc, char **argv);
int cmd_worker(int argc, char **argv);

static const char serve_usage[] =
	"usage: agentjail serve [options]\n"
	"\n"
	"Serves run_python to many agents over HTTP: a JSON API (/v1/...), MCP's\n"
	"Streamable HTTP transport (/mcp) and Prometheus metrics (/metrics). Every\n"
	"request but GET /v1/health needs a key (Authorization: Bearer KEY).\n"
	"\n"
	"  --listen HOST:PORT   address to listen on (default 127.0.0.1:8910; port 0\n"
	"                       picks a free one, printed as AGENTJAIL_URL)\n"
	"  --keys FILE          the keys file (agentjail keys add); without it one\n"
	"                       key is made and printed once, as AGENTJAIL_KEY\n"
	"  --concurrency N      runs at once, whatever the key (default: the CPUs;\n"
	"                       with --queue, the live workers' slots, below)\n"
	"  --queue-size N       runs waiting beyond those; more get 429 (default 64)\n"
	"  --max-wait SEC       the longest a run waits for a slot (default 30)\n"
	"  --max-body-kb N      largest JSON request body (default 8192)\n"
	"  --idle-timeout SEC   close a connection silent this long (default 30)\n"
	"  --head-timeout SEC   a request's head must arrive within this of the\n"
	"                       connection's start or its previous answer (default 20)\n"
	"  --body-timeout SEC   a request's body must arrive within this of its head\n"
	"                       (default 60)\n"
	"  --per-ip-connections N  connections one client address may hold (default\n"
	"                       64; 0: no limit, behind a reverse proxy)\n"
	"  --body-budget-mb N   request bodies held in memory at once, all keys\n"
	"                       (default 64); more get 503 body_budget\n"
	"  --key-body-budget-mb N  the same for one key's requests (default 32, or\n"
	"                       the largest body a route takes); more get 429\n"
	"  --origin ORIGIN      the one browser Origin /mcp accepts (default none)\n"
	"  --queue redis://HOST[:PORT][/DB]\n"
	"                       run nothing here: put runs on Redis for agentjail\n"
	"                       worker processes (any number, any machines) of --tier.\n"
	"                       Runs at once are then the sum of the slots the live\n"
	"                       workers advertise (each its --concurrency), re-counted\n"
	"                       every second, and at most --concurrency if given; with\n"
	"                       no live worker a run waits up to --max-wait for one,\n"
	"                       then gets 503 no_worker\n"
	"  --keep-runs SEC      how long a run's events and result stay readable\n"
	"                       after it ends (GET /v1/runs/ID; default 3600)\n"
	"  --runs-budget-mb N   the bytes of kept runs' events and results one key\n"
	"                       may hold; its oldest ended runs go first (default 256)\n"
	"  --webhook-allow URL  a prefix a run's completion webhook must start with\n"
	"                       (repeat for more; none: webhooks are refused;\n"
	"                       NAME=URL: for key NAME's runs only)\n"
	"  --access-log FILE|-|off  a JSON line per request and per recorded run: to\n"
	"                       FILE (appended), - (stdout), off (default: stderr)\n"
	"  --checkpoint-dir DIR  sessions' checkpoints, and sessions paused when serve\n"
	"                       stops (default /var/lib/agentjail/checkpoints as root,\n"
	"                       else $XDG_STATE_HOME/agentjail/checkpoints)\n"
	"  --checkpoint-ttl SEC  a checkpoint is deleted this long after it was made\n"
	"                       (default 604800: a week)\n"
	"  --checkpoint-quota-mb N  the bytes of checkpoints one key may keep\n"
	"                       (default 2048)\n"
	"  --tls-cert FILE --tls-key FILE  serve HTTPS on --listen (every route, /mcp\n"
	"                       too): FILE a PEM certificate (its chain after it) and\n"
	"                       its unencrypted PEM key; AGENTJAIL_URL is https://\n"
	SERVICE_OPTIONS_HELP SESSION_OPTIONS_HELP
		LIMIT_OPTIONS_HELP ONE_TIER_OPTIONS_HELP EGRESS_OPTIONS_HELP
	"\n"
	"SIGTERM or SIGINT: runs in progress and queued finish, new ones get 503,\n"
	"then the server exits.\n";

enum { OPT_LISTEN = 4000, OPT_KEYS, OPT_CONCURRENCY, OPT_QUEUE_SIZE, OPT_MAX_WAIT,
       OPT_MAX_BODY, OPT_IDLE, OPT_ORIGIN, OPT_QUEUE, OPT_KEEP_RUNS, OPT_RUNS_BUDGET,
       OPT_WEBHOOK_ALLOW, OPT_ACCESS_LOG, OPT_HEAD_TIMEOUT, OPT_BODY_TIMEOUT, OPT_PER_IP,
       OPT_BODY_BUDGET, OPT_KEY_BODY_BUDGET, OPT_TLS_CERT, OPT_TLS_KEY, OPT_CKPT_DIR,
       OPT_CKPT_TTL, OPT_CKPT_QUOTA };

static int parse_listen(const char *arg, struct serve_config *c)
{
	static char host[256];
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof host) {
		cli_error("--listen: expected HOST:PORT, got '%s'", arg);
		return -1;
	}
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 0 || port > 65535) {
		cli_error("--listen: '%s' is not a port (0 to 65535)", colon + 1);
		return -1;
	}
	size_t n = (size_t)(colon - arg);
	/* [::1]:8910 */
	if (arg[0] == '[' && colon[-1] == ']')
		memcpy(host, arg + 1, n - 2), host[n - 2] = '\0';
	else
		memcpy(host, arg, n), host[n] = '\0';
	c->host = host;
	c->port = (unsigned)port;
	return 0;
}

static int parse_secs(const char *name, const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(arg, &end);
	if (*end || end == arg || !(v >= lo && v <= hi)) {
		cli_error("--%s: expected %g to %g seconds, got '%s'", name, lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

/* One of serve's own options into c: 0, or -1 after saying what is wrong. */
static int serve_option(int o, const char *arg, void *ctx)
{
	struct serve_config *c = ctx;
	long v;
	double d;
	switch (o) {
	case OPT_LISTEN:
		if (parse_listen(arg, c))
			return -1;
		break;
	case OPT_KEYS:
		c->keys_path = arg;
		break;
	case OPT_CONCURRENCY:
		c->concurrency_set = true;
		return parse_count_u("concurrency", arg, 1, 1024, &c->concurrency);
	case OPT_QUEUE_SIZE:
		return parse_count_u("queue-size", arg, 0, 100000, &c->queue_size);
	case OPT_MAX_WAIT:
		if (parse_secs("max-wait", arg, 0.1, 3600, &d))
			return -1;
		c->max_wait_sec = d;
		break;
	case OPT_MAX_BODY:
		if (parse_count("max-body-kb", arg, 1, 1 << 20, &v))
			return -1;
		c->max_body = (size_t)v << 10;
		break;
	case OPT_IDLE:
		return parse_count_u("idle-timeout", arg, 1, 3600, &c->idle_sec);
	case OPT_HEAD_TIMEOUT:
		return parse_count_u("head-timeout", arg, 1, 3600, &c->head_sec);
	case OPT_BODY_TIMEOUT:
		return parse_count_u("body-timeout", arg, 1, 3600, &c->request_sec);
	case OPT_PER_IP:
		return parse_count_u("per-ip-connections", arg, 0, 100000, &c->per_ip_connections);
	case OPT_BODY_BUDGET:
	case OPT_KEY_BODY_BUDGET:
		if (parse_count(o == OPT_BODY_BUDGET ? "body-budget-mb" : "key-body-budget-mb", arg,
				1, 1 << 20, &v))
			return -1;
		*(o == OPT_BODY_BUDGET ? &c->body_budget : &c->key_body_budget) = (size_t)v << 20;
		break;
	case OPT_ORIGIN:
		c->origin = arg;
		break;
	case OPT_QUEUE:
		c->queue_url = arg;
		break;
	case OPT_KEEP_RUNS:
		if (parse_secs("keep-runs", arg, 1, 30 * 86400, &d))
			return -1;
		c->keep_runs_sec = d;
		break;
	case OPT_RUNS_BUDGET:
		if (parse_count("runs-budget-mb", arg, 1, 1 << 20, &v))
			return -1;
		c->runs_budget = (size_t)v << 20;
		break;
	case OPT_ACCESS_LOG:
		c->access_log = arg;
		break;
	case OPT_CKPT_DIR:
		c->checkpoint_dir = arg;
		break;
	case OPT_CKPT_TTL:
		if (parse_secs("checkpoint-ttl", arg, 1, 365 * 86400.0, &d))
			return -1;
		c->checkpoint_ttl_sec = d;
		break;
	case OPT_CKPT_QUOTA:
		return parse_count_u("checkpoint-quota-mb", arg, 1, 1 << 24, &c->checkpoint_quota_mb);
	case OPT_TLS_CERT:
		c->tls_cert = arg;
		break;
	case OPT_TLS_KEY:
		c->tls_key = arg;
		break;
	case OPT_WEBHOOK_ALLOW:
		/* A webhook goes only where the deployer said: without this,
		 * a key could make serve send requests to any address it can
		 * reach (its own metadata service, an internal admin port). */
		if (strncmp(arg, "https://", 8) && strncmp(arg, "http://", 7) && !strchr(arg, '=')) {
			cli_error("--webhook-allow: expected a URL prefix starting with http:// "
				  "or https:// (or NAME=URL), got '%s'", arg);
			return -1;
		}
		if (c->webhook_allow_count >= SERVE_MAX_WEBHOOK_ALLOW) {
			cli_error("--webhook-allow: at most %d prefixes", SERVE_MAX_WEBHOOK_ALLOW);
			return -1;
		}
		c->webhook_allow[c->webhook_allow_count++] = arg;
		break;
	}
	return 0;
}

/* Parses serve's options into c. Returns -1 to go on, else an exit code. */
static int parse_serve(int argc, char **argv, struct serve_config *c)
{
	static const struct option own[] = {
		{"listen", required_argument, NULL, OPT_LISTEN},
		{"keys", required_argument, NULL, OPT_KEYS},
		{"concurrency", required_argument, NULL, OPT_CONCURRENCY},
		{"queue-size", required_argument, NULL, OPT_QUEUE_SIZE},
		{"max-wait", required_argument, NULL, OPT_MAX_WAIT},
		{"max-body-kb", required_argument, NULL, OPT_MAX_BODY},
		{"idle-timeout", required_argument, NULL, OPT_IDLE},
		{"head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT},
		{"body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT},
		{"per-ip-connections", required_argument, NULL, OPT_PER_IP},
		{"body-budget-mb", required_argument, NULL, OPT_BODY_BUDGET},
		{"key-body-budget-mb", required_argument, NULL, OPT_KEY_BODY_BUDGET},
		{"origin", required_argument, NULL, OPT_ORIGIN},
		{"queue", required_argument, NULL, OPT_QUEUE},
		{"keep-runs", required_argument, NULL, OPT_KEEP_RUNS},
		{"runs-budget-mb", required_argument, NULL, OPT_RUNS_BUDGET},
		{"webhook-allow", required_argument, NULL, OPT_WEBHOOK_ALLOW},
		{"access-log", required_argument, NULL, OPT_ACCESS_LOG},
		{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
		{"checkpoint-dir", required_argument, NULL, OPT_CKPT_DIR},
		{"checkpoint-ttl", required_argument, NULL, OPT_CKPT_TTL},
		{"checkpoint-quota-mb", required_argument, NULL, OPT_CKPT_QUOTA},
		{"tls-key", required_argument, NULL, OPT_TLS_KEY},
		{NULL, 0, NULL, 0}};
	return service_parse(argc, argv, "serve", serve_usage, own, &c->sandbox, serve_option, c);
}

static void serve_config_init(struct serve_config *c)
{
	*c = (struct serve_config){.host = "127.0.0.1",
				   .port = SERVE_DEFAULT_PORT,
				   .queue_size = SERVE_DEFAULT_QUEUE,
				   .max_wait_sec = SERVE_DEFAULT_MAX_WAIT_SEC,
				   .max_body = (size_t)SERVE_DEFAULT_BODY_KB << 10,
				   .idle_sec = SERVE_DEFAULT_IDLE_SEC,
				   .keep_runs_sec = SERVE_DEFAULT_KEEP_RUNS_SEC,
				   .runs_budget = SERVE_DEFAULT_RUNS_BUDGET,
				   .request_sec = SERVE_DEFAULT_REQUEST_SEC,
				   .max_connections = SERVE_MAX_CONNECTIONS,
				   .head_sec = SERVE_DEFAULT_HEAD_SEC,
				   .per_ip_connections = SERVE_DEFAULT_PER_IP,
				   .checkpoint_ttl_sec = CKPT_DEFAULT_TTL_SEC,
				   .checkpoint_quota_mb = CKPT_DEFAULT_QUOTA_MB};
	aj_config_init(&c->sandbox);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	c->concurrency = cpus > 0 ? (unsigned)cpus : 1;
}

/* Without a keys file: one key, made now, known only to this process and
 * to whoever reads its stdout. */
static int one_time_key(struct keyring *kr)
{
	kr->keys = calloc(1, sizeof *kr->keys);
	if (!kr->keys)
		return -1;
	struct key *k = &kr->keys[0];
	char token[KEY_TOKEN_MAX + 1];
	if (key_generate(k, false, token) || key_webhook_secret_generate(k)) {
		free(kr->keys);
		return -1;
	}
	snprintf(k->name, sizeof k->name, "default");
	k->concurrency = KEY_MAX_LIMIT; /* the server's own bound holds */
	k->runs_per_minute = KEY_MAX_LIMIT;
	k->sessions = KEY_MAX_LIMIT;
	k->metrics = true; /* the only key: the deployer's own */
	k->admin = true;   /* and so are all the sessions there are */
	kr->count = 1;
	printf("AGENTJAIL_KEY=%s\n", token);
	printf("AGENTJAIL_WEBHOOK_SECRET=%s\n", k->webhook_secret);
	return 0;
}

/* --keys: the file read and checked, its errors said. 0, or -1. */
static int keys_read(struct service *svc)
{
	struct aj_error err = {0};
	if (keys_load(&svc->keys, svc->cfg.keys_path, &err)) {
		cli_error("serve: --keys: %s", err.message);
		return -1;
	}
	if (!svc->keys.count) {
		cli_error("serve: --keys: %s holds no key (agentjail keys add)", svc->cfg.keys_path);
		return -1;
	}
	/* A key's secrets with the server's, checked whole now: a name given
	 * twice, or no egress rule to send one on, is the deployer's to fix
	 * before any request finds it. */
	if (keys_secrets_check(&svc->keys, &svc->cfg.sandbox, svc->cfg.queue_url != NULL, &err)) {
		cli_error("serve: --keys: %s: %s", svc->cfg.keys_path, err.message);
		return -1;
	}
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	static struct service svc; /* connection threads may read it to the end */
	serve_config_init(&svc.cfg);
	int rc = parse_serve(argc, argv, &svc.cfg);
	if (rc >= 0)
		return rc;
	if (http_wiring_budgets(&svc.cfg))
		return EXIT_USAGE;
	struct aj_error err = {0};
	/* Checked before anything starts: a wrong file is the deployer's to
	 * fix, never a listener whose every handshake fails. */
	static struct tls_files tls;
	if (tls_files_load(svc.cfg.tls_cert, svc.cfg.tls_key, &tls, &err)) {
		cli_error("serve: %s", err.message);
		return EXIT_USAGE;
	}
	if (svc.cfg.keys_path && keys_read(&svc))
		return EXIT_USAGE;
	/* SIGTERM and SIGINT are taken by sigwait below, in this thread only:
	 * blocked before any thread starts, so every thread inherits it. */
	sigset_t stop;
	service_block_signals(&stop);

	svc.backend = svc.cfg.queue_url ? &remote_backend : &local_backend;
	rc = svc.backend->open(&svc, &err);
	if (rc) {
		cli_error("%s", err.message);
		svc.backend->close(&svc);
		return rc;
	}
	if (!svc.cfg.keys_path && one_time_key(&svc.keys)) {
		cli_error("serve: cannot make a key");
		return 1;
	}
	rc = 1;
	metrics_init(&svc.metrics);
	if (admission_init(&svc.adm, &svc.keys, svc.cfg.concurrency, svc.cfg.queue_size,
			   svc.cfg.max_wait_sec) ||
	    mcp_http_init(&svc) || e2b_open(&svc, api_handle)) {
		cli_error("serve: out of memory");
		return 1;
	}
	if (access_log_open(svc.cfg.access_log, &err)) {
		cli_error("serve: %s", err.message);
		return EXIT_USAGE;
	}
	if (webhooks_open(&svc.webhooks, &svc.cfg, &svc.keys, &err)) {
		cli_error("serve: %s", err.message);
		return EXIT_USAGE;
	}
	if (svc.backend->start(&svc)) {
		cli_error("serve: cannot start the thread that counts the workers");
		goto out;
	}
	if (tier_probe_start(&svc, &svc.tier_probe)) {
		cli_error("serve: cannot start the thread that checks the tiers");
		goto out;
	}
	/* The server reaches the routes only through these. */
	static struct http_config http_cfg;
	static struct http_handlers routes;
	http_wiring(&svc, &http_cfg, &routes);
	http_cfg.tls_cert_pem = tls.cert_pem;
	http_cfg.tls_key_pem = tls.key_pem;
	if (http_start(&http_cfg, &routes, &err)) {
		cli_error("serve: %s", err.message);
		goto out;
	}
	svc.cfg.port = http_cfg.port;
	const char *h = svc.cfg.host;
	const char *scheme = tls.cert_pem ? "https" : "http";
	printf(strchr(h, ':') ? "AGENTJAIL_URL=%s://[%s]:%u\n" : "AGENTJAIL_URL=%s://%s:%u\n",
	       scheme, h, svc.cfg.port);
	fflush(stdout);
	fprintf(stderr,
		"agentjail serve: listening on %s:%u%s, tier %s%s%s, %u runs at once%s, %u queued, "
		"%zu key(s)\n",
		h, svc.cfg.port, tls.cert_pem ? " (TLS)" : "", aj_tier_name(svc.cfg.sandbox.tier),
		svc.cfg.queue_url ? " on the workers of " : "",
		svc.cfg.queue_url ? svc.cfg.queue_url : "",
		admission_concurrency(&svc.adm),
		svc.cfg.queue_url ? " (the live workers' slots, counted every second)" : "",
		svc.cfg.queue_size, svc.keys.count);

	/* Waits for the signal, dropping expired recorded runs each second. */
	int sig;
	while ((sig = sigtimedwait(&stop, NULL, &(struct timespec){.tv_sec = 1})) < 0) {
		svc.runs.ops->sweep(&svc.runs);
		e2b_sweep(&svc);
	}
	fprintf(stderr, "agentjail serve: %s: finishing the runs in progress, refusing new ones\n",
		strsignal(sig));
	/* Drain first, with the listener up: a request arriving now gets a
	 * 503 that says why, not a refused connection. */
	atomic_store(&svc.draining, true);
	admission_drain(&svc.adm);
	/* The last answers are sent before their connections close; a client
	 * too slow to read one gets idle_sec. */
	http_quiesce(svc.cfg.idle_sec);
	http_stop();
	rc = 0;
out:
	tier_probe_stop(svc.tier_probe);
	svc.backend->stop(&svc);
	mcp_http_stop(&svc);
	e2b_close(&svc);
	webhooks_close(svc.webhooks);
	svc.backend->close(&svc);
	svc.runs.ops->close(&svc.runs);
	admission_destroy(&svc.adm);
	metrics_destroy(&svc.metrics);
	keys_free(&svc.keys);
	tls_files_free(&tls);
	access_log_close();
	fprintf(stderr, "agentjail serve: stopped\n");
	return rc;
}

static const char usage[] = "usage: agentjail-serve serve|keys|worker [options]\n"
			    "       agentjail-serve --version\n"
			    "(run as agentjail serve, agentjail keys, agentjail worker; each\n"
			    "COMMAND --help gives its options)\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	/* agentjail-serve --version, and agentjail serve|keys|worker --version
	 * (agentjail runs this binary for them). */
	if (!strcmp(argv[1], "--version") || (argc == 3 && !strcmp(argv[2], "--version")))
		return cli_version("agentjail-serve");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "keys"))
		return cmd_keys(argc - 1, argv + 1);
	if (!strcmp(argv[1], "worker"))
		return cmd_worker(argc - 1, argv + 1);
	cli_error("unknown command '%s'", argv[1]);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
