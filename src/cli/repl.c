/* agentjail repl: a session a person (or a script) can drive: cells in,
 * results out, files both ways, images saved where a person can open them. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail repl [options]\n"
	"\n"
	"Opens a session: one sandbox whose interpreter stays alive, so variables,\n"
	"imports and workspace files persist from cell to cell. Figures left open in\n"
	"matplotlib, and images saved under outputs/, come back after each cell.\n"
	"\n"
	"From a terminal, a one-line statement runs at once and a block (a line\n"
	"ending in ':') runs at an empty line. From a pipe, cells are separated by\n"
	"lines that start with '# %%' (Jupyter's percent format). In both:\n"
	"  !LINE               run LINE with /bin/sh -c in the session's sandbox\n"
	"  %js CODE            run CODE as JavaScript in the session's node, whose\n"
	"                      variables persist from call to call as Python's do\n"
	"  %ts CODE            run CODE as TypeScript (its types stripped, not\n"
	"                      checked) in the same node, sharing its variables\n"
	"  %put LOCAL [PATH]   copy a host file into the workspace\n"
	"  %get PATH [LOCAL]   copy a workspace file out (default: its base name)\n"
	"  %ls [DIR]           list a workspace directory\n"
	"  %checkpoint FILE    write the session's state to FILE (docs/checkpoints.md);\n"
	"                      `agentjail repl --restore FILE` opens it again\n"
	"  %quit               end the session (so does end of input)\n"
	"\n"
	"With --json, each input line is one request and each answer one line:\n"
	"  {\"run\": CODE, \"language\"?}         the result object (\"images\" when any);\n"
	"                                      \"language\": \"python\" or \"javascript\"\n"
	"  {\"put\": PATH, \"data\": TEXT}         or \"base64\": B64 instead of \"data\"\n"
	"  {\"get\": PATH}                       {\"path\": PATH, \"base64\": B64}\n"
	"  {\"list\": DIR}                       {\"entries\": [{\"name\", \"type\", \"size\"}]}\n"
	"  {\"exec\": LINE|[ARGV], \"cwd\"?, \"stdin\"?}  a command: the result object\n"
	"  what fails                          {\"error\": MESSAGE}\n"
	"\n"
	"options:\n" LIMIT_OPTIONS_HELP SESSION_OPTIONS_HELP EGRESS_OPTIONS_HELP
	"  --images DIR      save every image a cell returns into DIR as N-NAME\n"
	"  --restore FILE    open the session from a checkpoint (%checkpoint FILE),\n"
	"                    under these options' limits, not the checkpoint's\n"
	"  --checkpoint-key FILE  the key checkpoints are authenticated with (32\n"
	"                    bytes, mode 0600); default $XDG_STATE_HOME/agentjail/\n"
	"                    checkpoint.key, made on first use\n"
	"  --json            JSON lines in and out, for scripts (a usage error:\n"
	"                    {\"status\": \"usage_error\", \"message\": ...})\n"
	"  -h, --help        this help\n"
	"\n"
	"It exits 0 when the input ends, 125 when the session could not be opened or\n"
	"a limit closed it, 2 on a usage error.\n";

enum { OPT_JSON = 2000, OPT_IMAGES, OPT_RESTORE, OPT_KEY };

struct repl {
	struct aj_session *s;
	enum aj_tier tier;
	const char *images_dir;
	const char *key_file;   /* the checkpoint key's (--checkpoint-key) */
	unsigned images_saved;
	unsigned cells;
	bool closed;            /* a limit closed the session */
};

static const char *type_name(enum aj_file_type t)
{
	static const char *const names[] = {"file", "directory", "symlink", "other"};
	return (unsigned)t < 4 ? names[t] : "other";
}

/* images_dir/N-NAME, with NAME's directories flattened. */
static void save_image(struct repl *r, const struct aj_image *im, char *saved, size_t n)
{
	saved[0] = '\0';
	if (!r->images_dir)
		return;
	if (mkdir(r->images_dir, 0755) < 0 && errno != EEXIST) {
		cli_error("--images: %s: %s", r->images_dir, strerror(errno));
		return;
	}
	char name[256];
	snprintf(name, sizeof name, "%s", im->name);
	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '-';
	snprintf(saved, n, "%s/%u-%s", r->images_dir, ++r->images_saved, name);
	int fd = open(saved, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write_full(fd, im->data, im->len)) {
		cli_error("--images: %s: %s", saved, strerror(errno));
		saved[0] = '\0';
	}
	if (fd >= 0)
		close(fd);
}

/* What a cell ended with; its output went out while it ran (run_cell). */
static void report_cell(struct repl *r, const struct aj_result *res)
{
	if (res->status == AJ_STATUS_SANDBOX_ERROR)
		cli_error("sandbox error: %s", res->message ? res->message : "unknown");
	else if (res->status == AJ_STATUS_OK && res->message)
		cli_error("note: %s", res->message);
	else if (res->status != AJ_STATUS_OK && res->message)
		cli_error("%s: %s", aj_status_name(res->status), res->message);
	for (size_t i = 0; i < res->image_count; i++) {
		char saved[4200];
		save_image(r, &res->images[i], saved, sizeof saved);
		if (saved[0])
			cli_error("image %s (%s, %zu bytes) saved as %s", res->images[i].name,
				  res->images[i].mime, res->images[i].len, saved);
		else
			cli_error("image %s (%s, %zu bytes); --images DIR saves it",
				  res->images[i].name, res->images[i].mime, res->images[i].len);
	}
	if (res->images_dropped)
		cli_error("%zu more image%s over the session's image limits", res->images_dropped,
			  res->images_dropped == 1 ? "" : "s");
}

/* A call's end, a cell's or a command's: the session closed by a limit
 * is noted, and the result reported (its output went out as it came) or
 * made the JSON answer. */
static int call_done(struct repl *r, int rc, struct aj_result *res, json_t **as_json)
{
	if (rc == -ESHUTDOWN)
		r->closed = true;
	if (as_json)
		*as_json = result_to_json_object(res, r->tier);
	else
		report_cell(r, res);
	aj_result_free(res);
	return rc;
}

/* A person watches a long call's output as it comes; a script's JSON
 * answer is one line at the end. */
static const struct aj_stream pass = {cli_pass_output, NULL, 0};

static int run_cell_in(struct repl *r, enum aj_language lang, const char *code, size_t len,
		       json_t **as_json)
{
	struct aj_result res;
	int rc = aj_session_run_lang(r->s, lang, code, len, NULL, as_json ? NULL : &pass, &res);
	r->cells++;
	return call_done(r, rc, &res, as_json);
}

static int run_cell(struct repl *r, const char *code, size_t len, json_t **as_json)
{
	return run_cell_in(r, AJ_LANG_PYTHON, code, len, as_json);
}

/* A command in the session (!LINE, or {"exec"}). */
static int exec_command(struct repl *r, const struct aj_exec *x, json_t **as_json)
{
	struct aj_result res;
	int rc = aj_session_exec(r->s, x, NULL, as_json ? NULL : &pass, &res);
	return call_done(r, rc, &res, as_json);
}

static int read_file(const char *path, char **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return -EIO;
	}
	*data = buf;
	*len = (size_t)n;
	return 0;
}

/* The checkpoint key: --checkpoint-key's file, or one made on first use
 * under $XDG_STATE_HOME (or ~/.local/state)/agentjail. */
static int repl_key(const char *given, struct aj_checkpoint_key *key, struct aj_error *err)
{
	if (given)
		return aj_checkpoint_key_load(given, false, key, err);
	char dir[4096], path[4200];
	if (cli_state_dir(false, dir, sizeof dir))
		return aj_checkpoint_key_load("", false, key, err);
	snprintf(path, sizeof path, "%s/checkpoint.key", dir);
	return aj_checkpoint_key_load(path, true, key, err);
}

/* %put, %get, %ls, %checkpoint, %quit. Returns 1 to quit, 0 to go on. */
static int magic(struct repl *r, char *line)
{
	if (line[0] == '!') {
		line[strcspn(line, "\r\n")] = '\0';
		const struct aj_exec x = {.command = line + 1};
		exec_command(r, &x, NULL);
		return 0;
	}
	bool ts = !strncmp(line, "%ts", 3);
	if ((ts || !strncmp(line, "%js", 3)) && (line[3] == ' ' || line[3] == '\t')) {
		/* The rest of the line, as one JavaScript or TypeScript cell. */
		char *code = line + 4;
		code[strcspn(code, "\r\n")] = '\0';
		if (code[strspn(code, " \t")])
			run_cell_in(r, ts ? AJ_LANG_TYPESCRIPT : AJ_LANG_JAVASCRIPT, code,
				    strlen(code), NULL);
		return 0;
	}
	char *save = NULL;
	char *cmd = strtok_r(line, " \t\n", &save);
	char *a = strtok_r(NULL, " \t\n", &save);
	char *b = strtok_r(NULL, " \t\n", &save);
	struct aj_error err = {0};
	if (!strcmp(cmd, "%quit") || !strcmp(cmd, "%exit"))
		return 1;
	if (!strcmp(cmd, "%put") && a) {
		char *data = NULL;
		size_t len = 0;
		int rc = read_file(a, &data, &len);
		const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
		if (rc)
			cli_error("%%put: %s: %s", a, strerror(-rc));
		else if (aj_session_put(r->s, b ? b : base, data, len, &err))
			cli_error("%s", err.message);
		else
			cli_error("put %s (%zu bytes)", b ? b : base, len);
		free(data);
	} else if (!strcmp(cmd, "%get") && a) {
		void *data = NULL;
		size_t len = 0;
		const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
		const char *to = b ? b : base;
		if (aj_session_get(r->s, a, &data, &len, &err)) {
			cli_error("%s", err.message);
		} else {
			int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0 || write_full(fd, data, len))
				cli_error("%%get: %s: %s", to, strerror(errno));
			else
				cli_error("got %s (%zu bytes) into %s", a, len, to);
			if (fd >= 0)
				close(fd);
		}
		free(data);
	} else if (!strcmp(cmd, "%checkpoint") && a) {
		struct aj_checkpoint_key key;
		struct aj_checkpoint_info info;
		if (repl_key(r->key_file, &key, &err) ||
		    aj_session_checkpoint(r->s, &key, a, &info, &err))
			cli_error("%s", err.message);
		else
			cli_error("checkpoint %s (%llu bytes, %u files)%s%s", a,
				  (unsigned long long)info.bytes, info.files, info.note[0] ? ": " : "",
				  info.note);
	} else if (!strcmp(cmd, "%ls")) {
		struct aj_file_info *e = NULL;
		size_t n = 0;
		if (aj_session_list(r->s, a ? a : "", &e, &n, &err))
			cli_error("%s", err.message);
		for (size_t i = 0; i < n; i++)
			printf("%-9s %10llu  %s\n", type_name(e[i].type),
			       (unsigned long long)e[i].size, e[i].name);
		fflush(stdout);
		aj_file_list_free(e, n);
	} else {
		cli_error("%s: unknown command (%%put LOCAL [PATH], %%get PATH [LOCAL], %%ls [DIR], "
			  "%%checkpoint FILE, %%quit)",
			  cmd);
	}
	if (err.code == -ESHUTDOWN)
		r->closed = true;
	return 0;
}

struct cell {
	char *buf;
	size_t len, alloc;
};

static int cell_add(struct cell *c, const char *line, size_t n)
{
	if (c->len + n + 1 > c->alloc) {
		size_t alloc = (c->len + n + 1) * 2;
		char *p = realloc(c->buf, alloc);
		if (!p)
			return -ENOMEM;
		c->buf = p;
		c->alloc = alloc;
	}
	memcpy(c->buf + c->len, line, n);
	c->len += n;
	c->buf[c->len] = '\0';
	return 0;
}

static bool blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == '\0';
}

/* People and pipes: cells, % commands. */
static void text_loop(struct repl *r)
{
	const bool tty = isatty(0);
	struct cell c = {0};
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	for (;;) {
		if (tty)
			fputs(c.len ? "... " : ">>> ", stderr);
		n = getline(&line, &cap, stdin);
		bool eof = n < 0;
		bool boundary = eof;
		if (!eof) {
			if (tty) {
				/* A one-line statement runs at once; a block runs at
				 * the empty line that ends it. */
				if (!c.len && (line[0] == '%' || line[0] == '!')) {
					if (magic(r, line))
						break;
					continue;
				}
				if (blank(line)) {
					boundary = c.len > 0;
				} else {
					cell_add(&c, line, (size_t)n);
					size_t k = strcspn(line, "\r\n");
					boundary = !strchr(c.buf, '\n') ||
						   (c.len == (size_t)n && k && line[k - 1] != ':' &&
						    line[k - 1] != '\\');
				}
			} else if (!strncmp(line, "# %%", 4)) {
				boundary = true;
			} else if (line[0] == '%' || line[0] == '!') {
				/* A command ends the cell before it. */
				if (c.len && !blank(c.buf))
					run_cell(r, c.buf, c.len, NULL);
				c.len = 0;
				if (r->closed || magic(r, line))
					break;
			} else {
				cell_add(&c, line, (size_t)n);
			}
		}
		if (boundary && c.len && !blank(c.buf)) {
			run_cell(r, c.buf, c.len, NULL);
			c.len = 0;
		} else if (boundary) {
			c.len = 0;
		}
		if (eof || r->closed)
			break;
	}
	if (tty && n < 0)
		fputc('\n', stderr);
	free(line);
	free(c.buf);
}

static json_t *error_json(const char *msg)
{
	return json_pack("{s:s}", "error", msg);
}

/* {"exec": LINE or [ARGV], "cwd"?, "stdin"? (text)}: the result object. */
static json_t *json_exec(struct repl *r, json_t *req)
{
	json_t *cmd = json_object_get(req, "exec"), *stdin_text = json_object_get(req, "stdin");
	struct aj_exec x = {.cwd = json_string_value(json_object_get(req, "cwd"))};
	const char *argv[257] = {0};
	size_t i, n = json_array_size(cmd);
	json_t *e, *out = NULL;
	if (json_is_string(cmd))
		x.command = json_string_value(cmd);
	else if (json_is_array(cmd) && n && n < 257) {
		json_array_foreach(cmd, i, e) {
			if (!(argv[i] = json_string_value(e)))
				return error_json("exec: an argv holds only strings");
		}
		x.argv = argv;
	} else {
		return error_json("exec: give a command line (a string) or an argv (1 to 256 strings)");
	}
	if (stdin_text && !json_is_string(stdin_text))
		return error_json("exec: \"stdin\" is text (a string)");
	x.stdin_data = json_string_value(stdin_text);
	x.stdin_len = json_string_length(stdin_text);
	exec_command(r, &x, &out);
	return out ? out : error_json("out of memory");
}

static json_t *json_request(struct repl *r, json_t *req)
{
	struct aj_error err = {0};
	const char *code = json_string_value(json_object_get(req, "run"));
	const char *put = json_string_value(json_object_get(req, "put"));
	const char *get = json_string_value(json_object_get(req, "get"));
	json_t *list = json_object_get(req, "list");
	json_t *out = NULL;
	if (code) {
		const char *language = json_string_value(json_object_get(req, "language"));
		enum aj_language lang = AJ_LANG_PYTHON;
		if (json_object_get(req, "language") &&
		    (!language || aj_language_parse(language, &lang)))
			return error_json("run: \"language\" is \"python\" or \"javascript\" (or \"js\")");
		run_cell_in(r, lang, code, json_string_length(json_object_get(req, "run")), &out);
		return out ? out : error_json("out of memory");
	}
	if (json_object_get(req, "exec"))
		return json_exec(r, req);
	if (put) {
		json_t *text = json_object_get(req, "data"), *b64 = json_object_get(req, "base64");
		unsigned char *bytes = NULL;
		size_t len = 0;
		if (json_is_string(text)) {
			bytes = (unsigned char *)strndup(json_string_value(text), json_string_length(text));
			len = json_string_length(text);
		} else if (!json_is_string(b64) ||
			   base64_decode(json_string_value(b64), json_string_length(b64), &bytes, &len)) {
			return error_json("put: give \"data\" (text) or \"base64\" (valid base64)");
		}
		int rc = aj_session_put(r->s, put, bytes, len, &err);
		free(bytes);
		if (rc == -ESHUTDOWN)
			r->closed = true;
		return rc ? error_json(err.message) : json_pack("{s:b}", "ok", 1);
	}
	if (get) {
		void *data = NULL;
		size_t len = 0;
		int rc = aj_session_get(r->s, get, &data, &len, &err);
		if (rc) {
			r->closed |= rc == -ESHUTDOWN;
			return error_json(err.message);
		}
		char *b64 = base64_encode(data, len, NULL);
		free(data);
		out = b64 ? json_pack("{s:s, s:s}", "path", get, "base64", b64) : NULL;
		free(b64);
		return out ? out : error_json("out of memory");
	}
	if (json_is_string(list) || json_is_null(list)) {
		struct aj_file_info *e = NULL;
		size_t n = 0;
		int rc = aj_session_list(r->s, json_string_value(list), &e, &n, &err);
		if (rc) {
			r->closed |= rc == -ESHUTDOWN;
			return error_json(err.message);
		}
		json_t *arr = json_array();
		for (size_t i = 0; arr && i < n; i++)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:I}", "name", e[i].name, "type",
							     type_name(e[i].type), "size",
							     (json_int_t)e[i].size));
		aj_file_list_free(e, n);
		return json_pack("{s:o}", "entries", arr);
	}
	return error_json("request: expected one of \"run\", \"exec\", \"put\", \"get\", \"list\"");
}

static void json_loop(struct repl *r)
{
	char *line = NULL;
	size_t cap = 0;
	while (!r->closed && getline(&line, &cap, stdin) >= 0) {
		if (blank(line))
			continue;
		json_error_t je;
		json_t *req = json_loads(line, 0, &je);
		json_t *out;
		if (!json_is_object(req)) {
			char msg[300];
			snprintf(msg, sizeof msg, "request: not a JSON object (%s)", je.text);
			out = error_json(msg);
		} else {
			out = json_request(r, req);
		}
		json_decref(req);
		/* As aj_result_to_json prints: one decimal stays one decimal. */
		char *s = out ? json_dumps(out, JSON_PRESERVE_ORDER | JSON_COMPACT |
						   JSON_REAL_PRECISION(12))
			      : NULL;
		puts(s ? s : "{\"error\":\"out of memory\"}");
		fflush(stdout);
		free(s);
		json_decref(out);
	}
	free(line);
}

/* What repl's arguments give beyond the config. */
struct repl_args {
	bool *json;
	struct repl_files *files;
};

static void repl_opt(int opt, const char *arg, void *ctx)
{
	struct repl_args *a = ctx;
	if (opt == OPT_JSON)
		*a->json = true;
	else if (opt == OPT_IMAGES)
		a->files->images_dir = arg;
	else if (opt == OPT_RESTORE)
		a->files->restore = arg;
	else if (opt == OPT_KEY)
		a->files->key = arg;
}

static int repl_operands(int argc, char **argv, struct aj_config *cfg, void *ctx)
{
	(void)ctx;
	if (optind != argc) {
		cli_error("repl: unexpected argument '%s' (cells come on stdin)", argv[optind]);
		return EXIT_USAGE;
	}
	struct aj_error err = {0};
	if (aj_config_validate(cfg, &err)) {
		cli_config_error("repl", &err);
		return EXIT_USAGE;
	}
	return -1;
}

int repl_arguments(int argc, char **argv, struct aj_config *cfg, bool *json,
		   struct repl_files *files)
{
	static const struct option own[] = {{"json", no_argument, NULL, OPT_JSON},
					    {"images", required_argument, NULL, OPT_IMAGES},
					    {"restore", required_argument, NULL, OPT_RESTORE},
					    {"checkpoint-key", required_argument, NULL, OPT_KEY},
					    {NULL, 0, NULL, 0}};
	struct repl_args a = {json, files};
	const struct command_parse cp = {"repl", usage, own, session_options, repl_opt,
					 repl_operands, &a};
	*json = false;
	*files = (struct repl_files){0};
	return parse_command(argc, argv, &cp, cfg);
}

int cmd_repl(int argc, char **argv)
{
	struct aj_config cfg;
	bool json;
	struct repl r = {0};
	struct repl_files files;
	int done = repl_arguments(argc, argv, &cfg, &json, &files);
	if (done >= 0)
		return done;
	r.images_dir = files.images_dir;
	r.key_file = files.key;
	struct aj_error err = {0};
	struct aj_checkpoint_key key;
	struct aj_checkpoint_info info;
	int orc = files.restore ? repl_key(files.key, &key, &err) : 0;
	if (!orc)
		orc = files.restore ? aj_session_restore(&cfg, &key, files.restore, &r.s, &info, &err)
				    : aj_session_open(&cfg, &r.s, &err);
	if (!orc && files.restore && !json)
		cli_error("restored %s (%u files)%s%s", files.restore, info.files,
			  info.note[0] ? ": " : "", info.note);
	if (orc) {
		if (json) {
			json_t *o = error_json(err.message);
			char *s = json_dumps(o, JSON_COMPACT);
			puts(s ? s : "{}");
			free(s);
			json_decref(o);
		} else {
			cli_error("sandbox error: %s", err.message);
		}
		return EXIT_SANDBOX;
	}
	r.tier = cfg.tier;
	if (json)
		json_loop(&r);
	else
		text_loop(&r);
	int rc = r.closed ? EXIT_SANDBOX : 0;
	if (r.closed && !json)
		cli_error("the session was closed: %s", aj_session_closed_reason(r.s));
	aj_session_close(r.s);
	return rc;
}
