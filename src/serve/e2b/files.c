/* E2B's files: envd's HTTP routes and its filesystem service, each call
 * through the v1 API as the sandbox's key.
 *
 *   GET  /files?path=P          the file's bytes (v1 GET .../files/P)
 *   POST /files?path=P          multipart/form-data, each part "file" named by
 *                               its filename (or P), or one application/
 *                               octet-stream body for P (v1 PUT each): the
 *                               written files' [{"path","name","type"}]
 *   filesystem.Filesystem/      Stat, ListDir (with depth), MakeDir, Move,
 *                               Remove: a small Python program run in the
 *                               sandbox as the session's user (v1 exec), so
 *                               every path means what it means to the code
 *                               there, and nothing reaches past what the
 *                               sandbox lets the code reach. WatchDir and
 *                               the watcher calls: unimplemented, named.
 *
 * E2B's home (/home/user) is agentjail's workspace; answers give paths
 * back in E2B's terms. A gzip body (Content-Encoding: gzip, the SDKs'
 * files.write(..., {gzip: true})) is inflated first, bounded by the
 * session's transfer limit; a read with Accept-Encoding: gzip is answered
 * plain (identity is always acceptable). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../core/internal.h"
#include "../admit/service.h"
#include "../http/gunzip.h"
#include "connect_rpc.h"
#include "common.h"
#include "files.h"
#include "v1_client.h"

/* The workspace's paths as E2B's (its home). */
static const char *e2b_view(const char *path, char *out, size_t n)
{
	size_t w = strlen(AJ_SESSION_WORKSPACE);
	if (!strncmp(path, AJ_SESSION_WORKSPACE, w) && (!path[w] || path[w] == '/'))
		snprintf(out, n, "%s%s", E2B_HOME, path + w);
	else
		snprintf(out, n, "%s", path);
	return out;
}

static void e2b_file_error(struct http_response *rs, struct http_response *v1, const char *path)
{
	char m[400];
	v1_error_message(v1, m, sizeof m);
	int code = v1->code;
	v1_free(v1);
	e2b_error(rs, code == 410 ? 404 : code, "%s: %s", path, m[0] ? m : "refused");
}

static void read_e2b_file(struct e2b_call *c, const char *path)
{
	char p[E2B_PATH_MAX + 64], url[E2B_PATH_MAX + 160];
	if (!e2b_path(path, p, sizeof p))
		return e2b_error(c->rs, 400, "path: longer than %d bytes", E2B_PATH_MAX);
	snprintf(url, sizeof url, "/v1/sessions/%s/files/%s", c->sb.id, p);
	struct http_response v1;
	v1_call(c->svc, c->rq->key, "GET", url, NULL, NULL, &v1);
	if (v1.code != 200)
		return e2b_file_error(c->rs, &v1, path);
	/* The v1 answer as it is: its bytes, whole or streamed. */
	*c->rs = v1;
	c->rs->content_type = "application/octet-stream";
}

/* PUT one file; its entry appended to out. 0, or -1 with the error. */
static int put_one(struct e2b_call *c, const char *path, const char *data, size_t len,
		   json_t *out)
{
	char p[E2B_PATH_MAX + 64], url[E2B_PATH_MAX + 160];
	if (!e2b_path(path, p, sizeof p)) {
		e2b_error(c->rs, 400, "path: longer than %d bytes", E2B_PATH_MAX);
		return -1;
	}
	snprintf(url, sizeof url, "/v1/sessions/%s/files/%s", c->sb.id, p);
	struct http_response v1;
	v1_call_raw(c->svc, c->rq->key, "PUT", url, data, len, &v1);
	if (v1.code >= 300) {
		e2b_file_error(c->rs, &v1, path);
		return -1;
	}
	v1_free(&v1);
	const char *slash = strrchr(path, '/');
	char view[2 * E2B_PATH_MAX + 64];
	json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "path",
					     e2b_view(p, view, sizeof view), "name",
					     slash ? slash + 1 : path, "type", "file"));
	return 0;
}

/* multipart/form-data's boundary from its Content-Type, or NULL. */
static const char *boundary_of(const char *ct, char *out, size_t n)
{
	const char *b = ct ? strcasestr(ct, "boundary=") : NULL;
	if (!b)
		return NULL;
	b += 9;
	size_t len = strcspn(b, "; \t");
	if (*b == '"') {
		b++;
		len = strcspn(b, "\"");
	}
	if (!len || len + 4 >= n)
		return NULL;
	snprintf(out, n, "--%.*s", (int)len, b);
	return out;
}

/* A part's header value of name (its Content-Disposition's filename=...),
 * copied into out. */
static bool part_filename(const char *head, size_t n, char *out, size_t cap)
{
	const char *end = head + n;
	for (const char *p = head; p < end; p++) {
		if (strncasecmp(p, "filename=\"", 10))
			continue;
		p += 10;
		const char *q = memchr(p, '"', (size_t)(end - p));
		if (!q || (size_t)(q - p) >= cap)
			return false;
		memcpy(out, p, (size_t)(q - p));
		out[q - p] = '\0';
		return true;
	}
	return false;
}

/* Each part of a multipart body, PUT as its own file. */
static void write_multipart(struct e2b_call *c, const char *path, const char *ct,
			    const char *body, size_t body_len, json_t *out)
{
	char delim[200];
	if (!boundary_of(ct, delim, sizeof delim))
		return e2b_error(c->rs, 400, "multipart/form-data without a boundary");
	size_t dl = strlen(delim);
	const char *end = body + body_len;
	const char *p = memmem(body, body_len, delim, dl);
	while (p && p + dl + 2 <= end && strncmp(p + dl, "--", 2)) {
		const char *head = p + dl;
		const char *hend = memmem(head, (size_t)(end - head), "\r\n\r\n", 4);
		if (!hend)
			break;
		const char *data = hend + 4;
		char next_delim[204];
		snprintf(next_delim, sizeof next_delim, "\r\n%s", delim);
		const char *next = memmem(data, (size_t)(end - data), next_delim, dl + 2);
		if (!next)
			break;
		/* Each part to its filename (the SDKs name it by its whole
		 * path), else to ?path=. */
		char name[E2B_PATH_MAX + 1];
		if (!part_filename(head, (size_t)(hend - head), name, sizeof name)) {
			if (!path)
				return e2b_error(c->rs, 400, "a part names no file (its filename) "
						 "and ?path= is not given");
			snprintf(name, sizeof name, "%s", path);
		}
		if (put_one(c, name, data, (size_t)(next - data), out))
			return;
		p = next + 2;
	}
	if (!json_array_size(out))
		return e2b_error(c->rs, 400, "the multipart body holds no file part");
	respond_json(c->rs, 200, json_incref(out));
}

static void write_files(struct e2b_call *c, const char *path)
{
	const char *enc = http_header(c->rq, "Content-Encoding");
	const char *body = c->rq->body;
	size_t body_len = c->rq->body_len;
	char *inflated = NULL;
	if (enc && !strcasecmp(enc, "gzip")) {
		char why[200];
		/* Never more than a file may be: the session's transfer limit
		 * (a multipart body's headers fit in the slack). */
		size_t cap = ((size_t)c->svc->cfg.sandbox.session.transfer_mb << 20) + 65536;
		int rc = http_gunzip(body, body_len, cap, &inflated, &body_len, why, sizeof why);
		if (rc == -ENOMEM)
			return e2b_error(c->rs, 500, "out of memory");
		if (rc)
			return e2b_error(c->rs, rc == -EFBIG ? 413 : 400, "%s", why);
		body = inflated;
	} else if (enc && strcasecmp(enc, "identity")) {
		return e2b_error(c->rs, 415, "Content-Encoding %.40s is not supported: send the "
				 "file gzip or plain", enc);
	}
	const char *ct = c->rq->content_type ? c->rq->content_type : "";
	json_t *out = json_array();
	if (!strncasecmp(ct, "multipart/form-data", 19)) {
		write_multipart(c, path, ct, body, body_len, out);
	} else if (!path) {
		e2b_error(c->rs, 400, "?path= is required for an application/octet-stream body");
	} else if (!put_one(c, path, body, body_len, out)) {
		respond_json(c->rs, 200, json_incref(out));
	}
	json_decref(out);
	free(inflated);
}

void e2b_files(struct e2b_call *c)
{
	const char *path = http_query(c->rq, "path");
	if (!strcmp(c->rq->method, "GET")) {
		if (!path)
			return e2b_error(c->rs, 400, "?path= is required");
		return read_e2b_file(c, path);
	}
	if (!strcmp(c->rq->method, "POST"))
		return write_files(c, path);
	respond_method(c->rs, c->rq->method, "GET, POST");
}

/* ---- the filesystem service ---- */

/* Run in the sandbox as its user: op and paths in argv, one JSON line out:
 * {"entry": ...}, {"entries": [...]}, {} or {"error": code, "message"}.
 * Paths in and out are the sandbox's own. */
static const char fs_program[] =
	"import json, os, stat, sys, shutil, datetime, pwd, grp\n"
	"def name(f, i):\n"
	"    try: return f(i)[0]\n"
	"    except KeyError: return str(i)\n"
	"def entry(p):\n"
	"    st = os.lstat(p)\n"
	"    t = 'FILE_TYPE_DIRECTORY' if stat.S_ISDIR(st.st_mode) else 'FILE_TYPE_FILE'\n"
	"    e = {'name': os.path.basename(p.rstrip('/')) or '/', 'type': t, 'path': p,\n"
	"         'size': str(st.st_size), 'mode': st.st_mode & 0o7777,\n"
	"         'permissions': stat.filemode(st.st_mode), 'owner': name(pwd.getpwuid, st.st_uid),\n"
	"         'group': name(grp.getgrgid, st.st_gid),\n"
	"         'modifiedTime': datetime.datetime.fromtimestamp(st.st_mtime,\n"
	"             datetime.timezone.utc).isoformat().replace('+00:00', 'Z')}\n"
	"    if stat.S_ISLNK(st.st_mode):\n"
	"        e['symlinkTarget'] = os.path.realpath(p)\n"
	"        if os.path.isdir(p): e['type'] = 'FILE_TYPE_DIRECTORY'\n"
	"    return e\n"
	"def walk(d, depth):\n"
	"    out = []\n"
	"    for n in sorted(os.listdir(d)):\n"
	"        p = os.path.join(d, n)\n"
	"        out.append(entry(p))\n"
	"        if depth > 1 and os.path.isdir(p) and not os.path.islink(p):\n"
	"            out += walk(p, depth - 1)\n"
	"    return out\n"
	"op, a = sys.argv[1], sys.argv[2:]\n"
	"try:\n"
	"    if op == 'stat': r = {'entry': entry(a[0])}\n"
	"    elif op == 'list':\n"
	"        if not os.path.isdir(a[0]): raise NotADirectoryError(a[0])\n"
	"        r = {'entries': walk(a[0], int(a[1]))}\n"
	"    elif op == 'mkdir':\n"
	"        if os.path.lexists(a[0]): r = {'error': 'already_exists', 'message': a[0] + ' exists'}\n"
	"        else: os.makedirs(a[0]); r = {'entry': entry(a[0])}\n"
	"    elif op == 'move':\n"
	"        d = os.path.dirname(a[1])\n"
	"        if d: os.makedirs(d, exist_ok=True)\n"
	"        shutil.move(a[0], a[1]); r = {'entry': entry(a[1])}\n"
	"    elif op == 'remove':\n"
	"        if os.path.isdir(a[0]) and not os.path.islink(a[0]): shutil.rmtree(a[0])\n"
	"        else: os.remove(a[0])\n"
	"        r = {}\n"
	"except FileNotFoundError as e: r = {'error': 'not_found', 'message': str(e)}\n"
	"except FileExistsError as e: r = {'error': 'already_exists', 'message': str(e)}\n"
	"except NotADirectoryError as e: r = {'error': 'invalid_argument', 'message': 'not a directory: ' + str(e)}\n"
	"except PermissionError as e: r = {'error': 'permission_denied', 'message': str(e)}\n"
	"except OSError as e: r = {'error': 'internal', 'message': str(e)}\n"
	"print(json.dumps(r))\n";

/* The program's answer for op on args, or NULL with the error answered. */
static json_t *fs_run(struct e2b_call *c, const char *op, const char *a, const char *b)
{
	json_t *argv = json_pack("[s, s, s, s, s]", "python3", "-I", "-c", fs_program, op);
	json_array_append_new(argv, json_string(a));
	if (b)
		json_array_append_new(argv, json_string(b));
	char url[128];
	snprintf(url, sizeof url, "/v1/sessions/%s/exec", c->sb.id);
	struct http_response v1;
	v1_call(c->svc, c->rq->key, "POST", url, json_pack("{s:o}", "argv", argv), NULL, &v1);
	json_t *res = v1.code == 200 ? v1_body(&v1) : NULL;
	if (!res) {
		char m[400];
		v1_error_message(&v1, m, sizeof m);
		connect_error(c->rq, c->rs, connect_code_of_http(v1.code), "%s",
			      m[0] ? m : "the sandbox's session refused the call");
		v1_free(&v1);
		return NULL;
	}
	v1_free(&v1);
	const char *out = json_string_value(json_object_get(res, "stdout"));
	json_t *ans = out ? json_loads(out, 0, NULL) : NULL;
	if (!json_is_object(ans)) {
		const char *m = json_string_value(json_object_get(res, "message"));
		connect_error(c->rq, c->rs, "internal", "the filesystem call did not answer (%s)",
			      m ? m : json_string_value(json_object_get(res, "status")));
		json_decref(res);
		json_decref(ans);
		return NULL;
	}
	json_decref(res);
	const char *code = json_string_value(json_object_get(ans, "error"));
	if (code) {
		const char *m = json_string_value(json_object_get(ans, "message"));
		connect_error(c->rq, c->rs, code, "%s", m ? m : code);
		json_decref(ans);
		return NULL;
	}
	return ans;
}

/* An entry's path back in E2B's terms. */
static void entry_view(json_t *e)
{
	char view[2 * E2B_PATH_MAX + 64];
	const char *p = json_string_value(json_object_get(e, "path"));
	if (p)
		json_object_set_new(e, "path", json_string(e2b_view(p, view, sizeof view)));
}

/* msg's string field key as a sandbox path, or NULL with the error. */
static const char *path_field(struct e2b_call *c, json_t *msg, const char *key, char *out,
			      size_t n)
{
	const char *p = json_string_value(json_object_get(msg, key));
	if (!p || !*p) {
		connect_error(c->rq, c->rs, "invalid_argument", "%s: expected a path", key);
		return NULL;
	}
	if (!e2b_path(p, out, n)) {
		connect_error(c->rq, c->rs, "invalid_argument", "%s: longer than %d bytes", key,
			      E2B_PATH_MAX);
		return NULL;
	}
	return out;
}

void e2b_filesystem(struct e2b_call *c, const char *method)
{
	json_t *msg = connect_request(c->rq, c->rs);
	if (!msg)
		return;
	char a[E2B_PATH_MAX + 64], b[E2B_PATH_MAX + 64];
	json_t *ans = NULL;
	if (!strcmp(method, "Stat") || !strcmp(method, "MakeDir") || !strcmp(method, "Remove")) {
		const char *op = method[0] == 'S' ? "stat" : method[0] == 'M' ? "mkdir" : "remove";
		if (path_field(c, msg, "path", a, sizeof a))
			ans = fs_run(c, op, a, NULL);
	} else if (!strcmp(method, "ListDir")) {
		json_int_t depth = json_integer_value(json_object_get(msg, "depth"));
		char d[24];
		snprintf(d, sizeof d, "%lld", depth > 0 ? (long long)depth : 1LL);
		if (path_field(c, msg, "path", a, sizeof a))
			ans = fs_run(c, "list", a, d);
	} else if (!strcmp(method, "Move")) {
		if (path_field(c, msg, "source", a, sizeof a) &&
		    path_field(c, msg, "destination", b, sizeof b))
			ans = fs_run(c, "move", a, b);
	} else {
		connect_error(c->rq, c->rs, "unimplemented",
			      "filesystem.Filesystem/%.60s is not supported by agentjail yet "
			      "(docs/e2b.md)", method);
	}
	if (ans) {
		entry_view(json_object_get(ans, "entry"));
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(ans, "entries"), i, e)
			entry_view(e);
		connect_unary(c->rs, ans);
	}
	json_decref(msg);
}
