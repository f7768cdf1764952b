/* The run_python tool as a model sees it, in one place for every front end
 * (the MCP server, the Python package): its definition with the limits in
 * its description, the check of its arguments, and the text a model reads
 * back. The wording lives here so that a model gets the same words however
 * the sandbox is reached. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "api.h"

/* The packages a model most often reaches for, by the name it imports, and
 * the name it is known by when that differs. */
static const struct notable {
	const char *module;
	const char *label;
} notable[] = {
	{"numpy", NULL},         {"pandas", NULL},        {"scipy", NULL},
	{"matplotlib", NULL},    {"seaborn", NULL},       {"sklearn", "scikit-learn"},
	{"statsmodels", NULL},   {"sympy", NULL},         {"networkx", NULL},
	{"PIL", "Pillow"},       {"polars", NULL},        {"pyarrow", NULL},
	{"bs4", "beautifulsoup4"}, {"lxml", NULL},        {"yaml", "PyYAML"},
	{"requests", NULL},
};
#define NOTABLE (sizeof notable / sizeof notable[0])
_Static_assert(NOTABLE <= 32, "tool_packages.found has a bit for each");

/* find_spec locates a module without importing it: the probe runs none of
 * the packages' code and costs one interpreter start. */
static const char probe_code[] =
	"import importlib.util\n"
	"for m in %s:\n"
	"    try:\n"
	"        if importlib.util.find_spec(m):\n"
	"            print(m)\n"
	"    except Exception:\n"
	"        pass\n";

/* Runs the probe in a fresh run of sb and fills p. Why its answer can be
 * put in front of a model: it runs before the agent's first call, in a run
 * of its own (a fresh sandbox, as every aj_run is), so what it sees is what
 * the deployer installed (the host interpreter as the process tier shows
 * it, the image of the other tiers), not anything an agent's code left
 * behind. Only names from the list above are taken from its output, so an
 * interpreter that printed anything else could not put words of its own
 * into the description. */
static void probe(struct aj_sandbox *sb, struct tool_packages *p)
{
	char list[600] = "(", code[1200];
	for (size_t i = 0; i < NOTABLE; i++) {
		strcat(list, "'");
		strcat(list, notable[i].module);
		strcat(list, "',");
	}
	strcat(list, ")");
	snprintf(code, sizeof code, probe_code, list);
	struct aj_result res;
	aj_run(sb, code, strlen(code), &res);
	if (res.status == AJ_STATUS_OK) {
		bool found[NOTABLE] = {0};
		for (char *line = res.stdout_buf; line && *line;) {
			char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line) : strlen(line);
			for (size_t i = 0; i < NOTABLE; i++)
				if (strlen(notable[i].module) == len &&
				    !memcmp(notable[i].module, line, len))
					found[i] = true;
			line = nl ? nl + 1 : NULL;
		}
		p->names[0] = '\0';
		for (size_t i = 0; i < NOTABLE; i++) {
			if (!found[i])
				continue;
			p->found |= 1u << i;
			size_t used = strlen(p->names);
			snprintf(p->names + used, sizeof p->names - used, "%s%s%s%s%s",
				 used ? ", " : "", notable[i].module,
				 notable[i].label ? " (" : "",
				 notable[i].label ? notable[i].label : "",
				 notable[i].label ? ")" : "");
		}
		p->known = true;
	}
	aj_result_free(&res);
}

const struct tool_packages *tool_packages_of(struct aj_sandbox *sb)
{
	if (!sb)
		return NULL;
	struct tool_packages *p = sandbox_packages(sb);
	pthread_mutex_lock(&p->lock);
	/* Once per sandbox: its interpreter or image does not change while it
	 * is open. A probe that failed is not retried on every list. */
	if (!p->probed) {
		probe(sb, p);
		p->probed = true;
	}
	pthread_mutex_unlock(&p->lock);
	return p->known ? p : NULL;
}

static bool has_package(const struct tool_packages *p, const char *module)
{
	for (size_t i = 0; i < NOTABLE; i++)
		if (!strcmp(notable[i].module, module))
			return p->found & (1u << i);
	return false;
}

/* What the model can import: the probe's findings, and only those. */
static void packages_sentence(const struct tool_packages *p, char *out, size_t n)
{
	if (!p)
		snprintf(out, n, "The Python standard library is available; whether other packages "
			 "are depends on the deployment (import one to find out). There is no "
			 "network, so nothing can be installed.");
	else if (!p->names[0])
		snprintf(out, n, "Only the Python standard library is available (no numpy, pandas, "
			 "matplotlib or scipy); there is no network, so nothing can be installed.");
	else
		snprintf(out, n, "Installed besides the Python standard library: %s. There is no "
			 "network, so nothing else can be installed.", p->names);
}

/* In a session the model must know what it can count on keeping, and what
 * can take it away (a crash, a limit, the session's end). */
static void session_description(const struct aj_config *cfg, const struct tool_packages *p,
				char *desc, size_t n)
{
	const struct aj_limits *l = &cfg->limits;
	const struct aj_session_limits *sl = &cfg->session;
	char packages[700];
	packages_sentence(p, packages, sizeof packages);
	snprintf(desc, n,
		 "Run Python 3 code in a persistent sandbox session and get back its stdout, "
		 "stderr and exit status. State persists between calls, like cells of a notebook: "
		 "variables, functions, imports, and files in the workspace " AJ_SESSION_WORKSPACE
		 " (the working directory) are there for the next call, so send only the new "
		 "code. %s saved under outputs/ in the workspace come back as images (at most %u "
		 "per call). %s Limits per call: %g s of "
		 "wall-clock time, %u s of CPU, %u KiB of output per stream (more is cut and "
		 "stops the call). For the whole session: %u MiB of memory, %u processes and "
		 "threads, %u MiB of disk, files up to %u MiB. A call that crashes the "
		 "interpreter or hits a limit loses the variables and imports (workspace files "
		 "are kept), and the next result says so. The session closes after %g s without "
		 "a call or %g s in all; everything in it is then gone, and the next call starts "
		 "a new one and says so. Read the result's status: ok, error (non-zero exit or an "
		 "exception; see stderr), timeout, memory or output_limit.",
		 /* Figures only where matplotlib is, or may be. */
		 !p || has_package(p, "matplotlib") ? "Matplotlib figures left open and images"
						     : "Images",
		 sl->images, packages, l->wall_sec, l->cpu_sec, l->output_kb, l->memory_mb,
		 l->pids, l->disk_mb, l->file_size_mb, sl->idle_sec, sl->lifetime_sec);
}

static void run_description(const struct aj_config *cfg, const struct tool_packages *p,
			    char *desc, size_t n)
{
	const struct aj_limits *l = &cfg->limits;
	char packages[700];
	packages_sentence(p, packages, sizeof packages);
	snprintf(desc, n,
		 "Run a Python 3 program in an isolated sandbox and get back its stdout, stderr "
		 "and exit status. Every call starts from a clean state: nothing persists between "
		 "calls, so include everything the program needs. %s Limits: %g s of wall-clock "
		 "time, %u s of CPU, %u MiB of memory, %u processes and threads, %u MiB of disk "
		 "(the working directory and /tmp), files up to %u MiB, %u KiB of output per "
		 "stream (more is cut and stops the run). Read the result's status: ok, error "
		 "(non-zero exit; see stderr), timeout, memory or output_limit.",
		 packages, l->wall_sec, l->cpu_sec, l->memory_mb, l->pids, l->disk_mb,
		 l->file_size_mb, l->output_kb);
}

json_t *tool_output_schema(bool sessions)
{
	json_t *nullable_int = json_pack("{s:[s,s]}", "type", "integer", "null");
	json_t *output = json_pack(
		"{s:s, s:{s:{s:s}, s:{s:s, s:[s,s,s,s,s,s,s]}, s:O, s:O, s:{s:s}, s:{s:s}, "
		"s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}}, s:[s,s,s,s,s,s,s,s,s,s,"
		"s,s]}",
		"type", "object", "properties",
		"tier", "type", "string",
		"status", "type", "string", "enum", "ok", "error", "timeout", "memory",
		"output_limit", "killed", "sandbox_error",
		"exit_code", nullable_int,
		"signal", nullable_int,
		"stdout", "type", "string",
		"stderr", "type", "string",
		"stdout_truncated", "type", "boolean",
		"stderr_truncated", "type", "boolean",
		"wall_ms", "type", "number",
		"cpu_ms", "type", "number",
		"memory_kb", "type", "integer",
		"message", "type", "string", "null",
		"required", "tier", "status", "exit_code", "signal", "stdout", "stderr",
		"stdout_truncated", "stderr_truncated", "wall_ms", "cpu_ms", "memory_kb", "message");
	json_decref(nullable_int);
	if (sessions && output)
		/* What a session's call adds: its images, base64 (also sent as
		 * image content blocks). */
		json_object_update_new(
			json_object_get(output, "properties"),
			json_pack("{s:{s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}}, "
				  "s:{s:s}}",
				  "images", "type", "array", "items", "type", "object", "properties",
				  "name", "type", "string", "mime", "type", "string", "data", "type",
				  "string", "bytes", "type", "integer", "images_dropped", "type",
				  "integer"));
	return output;
}

json_t *tool_definition_object(const struct aj_config *cfg, bool sessions,
			       const struct tool_packages *packages)
{
	char desc[2600];
	/* The limits in the description, so the model writes code that fits
	 * them instead of learning them by failing. */
	if (sessions)
		session_description(cfg, packages, desc, sizeof desc);
	else
		run_description(cfg, packages, desc, sizeof desc);
	json_t *input = json_pack(
		"{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object", "properties", "code", "type",
		"string", "description",
		sessions ? "Python code to run in the session; it sees what earlier calls left."
			 : "The complete Python program to run.",
		"required", "code",
		/* Nothing but the code: no limit, tier or path the agent could widen. */
		"additionalProperties", 0);
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
			 AJ_TOOL_NAME, "title", "Run Python in a sandbox", "description", desc,
			 "inputSchema", input, "outputSchema", tool_output_schema(sessions),
			 "annotations", "title", "Run Python in a sandbox",
			 /* Without sessions nothing outside the sandbox changes, and
			  * the sandbox is gone after the call. In a session the code
			  * may change or delete the session's files. */
			 "readOnlyHint", !sessions, "destructiveHint", sessions,
			 /* The same code may print differently (time, randomness). */
			 "idempotentHint", 0,
			 /* No network: it reaches no outside system. */
			 "openWorldHint", 0);
}

char *aj_tool_definition(const struct aj_config *cfg, bool session)
{
	struct aj_config c;
	if (cfg)
		c = *cfg;
	else
		aj_config_init(&c);
	json_t *def = tool_definition_object(&c, session, NULL);
	char *out = def ? json_dumps(def, JSON_COMPACT) : NULL;
	json_decref(def);
	return out;
}

int tool_code_argument(json_t *args, const char **code, size_t *len, char *why, size_t n)
{
	if (!json_is_object(args)) {
		snprintf(why, n, "arguments must be an object with a string 'code'");
		return -1;
	}
	const char *key;
	json_t *v;
	json_object_foreach(args, key, v) {
		if (strcmp(key, "code") != 0) {
			snprintf(why, n, "unexpected argument '%.64s': " AJ_TOOL_NAME
				 " takes only 'code'", key);
			return -1;
		}
	}
	json_t *c = json_object_get(args, "code");
	if (!json_is_string(c)) {
		snprintf(why, n, "'code' must be a string holding the Python program");
		return -1;
	}
	*code = json_string_value(c);
	*len = json_string_length(c);
	return 0;
}

int aj_tool_arguments(const char *args_json, size_t len, char **code, size_t *code_len,
		      struct aj_error *err)
{
	*code = NULL;
	*code_len = 0;
	json_error_t jerr;
	/* JSON_ALLOW_NUL: a NUL in the code reaches the run's own check, which
	 * tells the model at which offset it is. */
	json_t *args = args_json ? json_loadb(args_json, len,
					      JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr)
				 : NULL;
	if (!args)
		return error_set(err, -EINVAL,
				 "Invalid arguments for " AJ_TOOL_NAME ": not a JSON object (%s)",
				 args_json ? jerr.text : "missing");
	const char *c;
	size_t n;
	char why[200];
	int rc = 0;
	if (tool_code_argument(args, &c, &n, why, sizeof why))
		rc = error_set(err, -EINVAL, "Invalid arguments for " AJ_TOOL_NAME ": %s", why);
	else if (!(*code = malloc(n + 1)))
		rc = error_set(err, -ENOMEM, "arguments: out of memory");
	else {
		memcpy(*code, c, n);
		(*code)[n] = '\0';
		*code_len = n;
	}
	json_decref(args);
	return rc;
}

/* stdout/stderr as the model reads them: repaired to UTF-8, labelled. */
static void append_stream(struct capture *t, const char *label, const char *buf, size_t len,
			  bool truncated)
{
	char head[96];
	snprintf(head, sizeof head, "\n--- %s%s ---\n", label,
		 truncated ? " (cut at the output limit)" : "");
	capture_append(t, head, strlen(head));
	size_t fixed_len;
	char *fixed = utf8_repair(buf ? buf : "", buf ? len : 0, &fixed_len);
	if (fixed) {
		capture_append(t, fixed, fixed_len);
		free(fixed);
	}
	if (len == 0)
		capture_append(t, "(empty)", 7);
}

/* The images' names in the text, so a model that cannot see images still
 * knows they were made (and what was left out). */
static void append_image_names(struct capture *t, const struct aj_result *res)
{
	char line[400];
	if (!res->image_count && !res->images_dropped)
		return;
	capture_append(t, "\n--- images ---", 15);
	for (size_t i = 0; i < res->image_count; i++) {
		const struct aj_image *im = &res->images[i];
		snprintf(line, sizeof line, "\n%.200s (%s, %zu bytes)", im->name, im->mime, im->len);
		capture_append(t, line, strlen(line));
	}
	if (res->images_dropped) {
		snprintf(line, sizeof line,
			 "\n%zu more not returned (over the number or size allowed per call)",
			 res->images_dropped);
		capture_append(t, line, strlen(line));
	}
}

/* What the model should know of the run's egress: a cap that cut a
 * transfer, and the first refusals with their reasons (so it does not
 * retry what the rules forbid). Nothing without rules or refusals. */
static void append_egress(struct capture *t, const struct aj_result *res)
{
	json_t *log = res->egress_log ? json_loads(res->egress_log, 0, NULL) : NULL;
	const char *limit = json_string_value(json_object_get(log, "limit"));
	char line[700];
	if (limit) {
		snprintf(line, sizeof line, "\negress: %s", limit);
		capture_append(t, line, strlen(line));
	}
	size_t i, shown = 0;
	json_t *c;
	json_array_foreach(json_object_get(log, "connections"), i, c) {
		const char *failure = json_string_value(json_object_get(c, "failure"));
		if ((json_is_true(json_object_get(c, "allowed")) && !failure) || shown == 3)
			continue;
		/* A failure is the destination's, not the rules': retrying later
		 * may work, where a refusal never will. */
		snprintf(line, sizeof line, failure ? "\negress: %s:%lld was allowed but not reached: %s"
						    : "\negress: refused %s:%lld: %s",
			 json_string_value(json_object_get(c, "host")),
			 (long long)json_integer_value(json_object_get(c, "port")),
			 json_string_value(json_object_get(c, "reason")));
		capture_append(t, line, strlen(line));
		shown++;
	}
	json_decref(log);
}

char *result_text(const struct aj_result *res, size_t *len)
{
	struct capture t;
	char line[700];
	capture_init(&t, (size_t)8 << 20);
	if (res->has_exit_code)
		snprintf(line, sizeof line, "status: %s (exit code %d)", aj_status_name(res->status),
			 res->exit_code);
	else if (res->signal)
		snprintf(line, sizeof line, "status: %s (signal %d)", aj_status_name(res->status),
			 res->signal);
	else
		snprintf(line, sizeof line, "status: %s", aj_status_name(res->status));
	capture_append(&t, line, strlen(line));
	if (res->message) {
		/* The message is whole: a note on lost state can be long. */
		capture_append(&t, "\n", 1);
		size_t n;
		char *fixed = utf8_repair(res->message, strlen(res->message), &n);
		if (fixed) {
			capture_append(&t, fixed, n);
			free(fixed);
		}
	}
	append_egress(&t, res);
	append_stream(&t, "stdout", res->stdout_buf, res->stdout_len, res->stdout_truncated);
	append_stream(&t, "stderr", res->stderr_buf, res->stderr_len, res->stderr_truncated);
	append_image_names(&t, res);
	return capture_take(&t, len);
}

char *aj_result_text(const struct aj_result *res)
{
	size_t len;
	return res ? result_text(res, &len) : NULL;
}

char *aj_session_replaced_note(const char *reason)
{
	char *note;
	/* The model built state it can no longer reach: say so before it
	 * relies on a variable or a file that is gone. */
	if (asprintf(&note,
		     "note: a new session was started, because the previous one closed (%s): "
		     "its variables, imports and workspace files are gone.",
		     reason ? reason : "closed") < 0)
		return NULL;
	return note;
}

void aj_free(void *p)
{
	free(p);
}
