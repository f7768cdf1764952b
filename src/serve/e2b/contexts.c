/* The code interpreter's contexts, as E2B's SDKs create, list, restart and
 * remove them:
 *
 *   the built-in ones, by language: "python" (the session's interpreter's
 *   own namespace), "javascript" and "typescript" (the session's node: one
 *   JavaScript state a session), "bash" (commands: no state);
 *   POST /contexts {"language": "python"} makes a context of its own: a
 *   namespace of the session's interpreter by name (aj_session_run_cell's
 *   context), recorded with the sandbox, at most AJ_MAX_CONTEXTS less the
 *   built-in one; for another language it answers that language's one.
 *
 * A restart forgets a context's state through the v1 API (a cell with
 * "fresh": true and no code: a Python context's namespace is dropped and
 * made anew by its next cell, __main__'s emptied, node ended); removing a
 * context of its own drops its namespace too. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "../../core/internal.h"
#include "contexts.h"
#include "sandboxes.h"
#include "v1_client.h"

const char *e2b_language(const char *name)
{
	static const struct {
		const char *e2b, *aj;
	} names[] = {{"python", "python"},   {"py", "python"},         {"python3", "python"},
		     {"js", "javascript"},   {"javascript", "javascript"}, {"ts", "typescript"},
		     {"typescript", "typescript"}, {"bash", "bash"},       {"sh", "sh"}};
	for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(names[i].e2b, name))
			return names[i].aj;
	return NULL;
}

static struct e2b_sandboxes *records(struct e2b_call *c)
{
	return e2b_of(c->svc)->sandboxes;
}

int e2b_context_of(struct e2b_call *c, const char *ctx, const char *lang, const char **aj,
		   const char **named)
{
	*named = NULL;
	if (ctx && e2b_sandboxes_has_context(records(c), c->sb.id, c->rq->key, ctx)) {
		*aj = "python";
		*named = ctx;
		return 0;
	}
	if (ctx && !e2b_language(ctx)) {
		e2b_error(c->rs, 404, "context %.64s not found", ctx);
		return -1;
	}
	*aj = e2b_language(ctx ? ctx : lang ? lang : "python");
	if (!*aj) {
		e2b_error(c->rs, 400, "language %.40s is not supported by agentjail: python, "
			  "javascript, typescript and bash are", lang);
		return -1;
	}
	return 0;
}

static json_t *context_json(const char *id, const char *lang)
{
	return json_pack("{s:s, s:s, s:s}", "id", id, "language", lang, "cwd", E2B_HOME);
}

/* A cell with "fresh": true and no code in the context: its state
 * forgotten (a Python context's namespace dropped). 0, or -1 with the
 * answer in c->rs. */
static int forget_state(struct e2b_call *c, const char *aj, const char *named)
{
	char path[128];
	snprintf(path, sizeof path, "/v1/sessions/%s/runs", c->sb.id);
	json_t *body = json_pack("{s:s, s:s, s:b}", "code", "", "language", aj, "fresh", 1);
	if (named)
		json_object_set_new(body, "context", json_string(named));
	struct http_response v1;
	v1_call(c->svc, c->rq->key, "POST", path, body, NULL, &v1);
	json_t *o = v1.code == 200 ? v1_body(&v1) : NULL;
	const char *status = json_string_value(json_object_get(o, "status"));
	int rc = 0;
	if (!status || strcmp(status, "ok")) {
		char m[400];
		if (!o)
			v1_error_message(&v1, m, sizeof m);
		else
			snprintf(m, sizeof m, "%s", json_string_value(json_object_get(o, "message"))
							    ?: "the context's state was not forgotten");
		e2b_error(c->rs, v1.code == 200 ? 500 : v1.code == 410 ? 404 : v1.code, "%s", m);
		rc = -1;
	}
	json_decref(o);
	v1_free(&v1);
	return rc;
}

static void create_context(struct e2b_call *c)
{
	json_t *o = c->rq->body_len ? json_loadb(c->rq->body, c->rq->body_len, 0, NULL) : NULL;
	const char *lang = json_string_value(json_object_get(o, "language"));
	const char *cwd = json_string_value(json_object_get(o, "cwd"));
	const char *aj = e2b_language(lang ? lang : "python");
	unsigned char raw[8];
	char id[3 + 2 * sizeof raw + 1] = "py-";
	if (!aj) {
		e2b_error(c->rs, 400, "language %.40s is not supported by agentjail: python, "
			  "javascript, typescript and bash are", lang);
	} else if (cwd && strcmp(cwd, E2B_HOME) && strcmp(cwd, AJ_SESSION_WORKSPACE)) {
		e2b_error(c->rs, 400, "cwd: a context's directory is the sandbox's home, %s",
			  E2B_HOME);
	} else if (strcmp(aj, "python")) {
		/* One state a session for node, none for commands. */
		respond_json(c->rs, 200, context_json(aj, aj));
	} else if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
		e2b_error(c->rs, 500, "no random bytes for a context's id");
	} else {
		for (size_t i = 0; i < sizeof raw; i++)
			snprintf(id + 3 + 2 * i, 3, "%02x", raw[i]);
		/* The interpreter's own namespace is one of its contexts. */
		int rc = e2b_sandboxes_add_context(records(c), c->sb.id, c->rq->key,
						   context_json(id, "python"), AJ_MAX_CONTEXTS - 1);
		if (rc == -EMFILE)
			e2b_error(c->rs, 429, "the sandbox has %d code contexts, the most it keeps: "
				  "remove one first", AJ_MAX_CONTEXTS - 1);
		else if (rc)
			e2b_error(c->rs, rc == -ENOENT ? 404 : 500, "the context could not be made");
		else
			respond_json(c->rs, 200, context_json(id, "python"));
	}
	json_decref(o);
}

static void list_contexts(struct e2b_call *c)
{
	json_t *made = e2b_sandboxes_contexts(records(c), c->sb.id, c->rq->key);
	json_t *all = json_pack("[o, o]", context_json("python", "python"),
				context_json("javascript", "javascript"));
	json_array_extend(all, made);
	json_decref(made);
	respond_json(c->rs, 200, all);
}

/* DELETE /contexts/ID or POST /contexts/ID/restart. */
static void one(struct e2b_call *c, const char *id, bool restart)
{
	const char *aj, *named;
	if (e2b_context_of(c, id, NULL, &aj, &named))
		return;
	bool stateless = !strcmp(aj, "bash") || !strcmp(aj, "sh");
	if (!restart && !named) {
		/* A built-in context is the interpreter's own: it stays. */
		return respond_json(c->rs, 204, NULL);
	}
	if (!stateless && forget_state(c, aj, named))
		return;
	if (!restart)
		e2b_sandboxes_remove_context(records(c), c->sb.id, c->rq->key, named);
	respond_json(c->rs, 204, NULL);
}

void e2b_contexts(struct e2b_call *c)
{
	const char *p = c->rq->path + strlen("/contexts"), *m = c->rq->method;
	if (!*p) {
		if (!strcmp(m, "GET"))
			return list_contexts(c);
		if (!strcmp(m, "POST"))
			return create_context(c);
		return respond_method(c->rs, m, "GET, POST");
	}
	char id[80];
	const char *slash = strchr(p + 1, '/');
	size_t n = slash ? (size_t)(slash - (p + 1)) : strlen(p + 1);
	if (*p != '/' || !n || n >= sizeof id)
		return e2b_error(c->rs, 404, "no such route: %.200s", c->rq->path);
	memcpy(id, p + 1, n);
	id[n] = '\0';
	if (slash && !strcmp(slash, "/restart")) {
		if (strcmp(m, "POST"))
			return respond_method(c->rs, m, "POST");
		return one(c, id, true);
	}
	if (slash)
		return e2b_error(c->rs, 404, "no such route: %.200s", c->rq->path);
	if (strcmp(m, "DELETE"))
		return respond_method(c->rs, m, "DELETE");
	one(c, id, false);
}
