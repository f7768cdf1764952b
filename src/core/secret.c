/* Secrets: their checks and the interceptor's pure pieces (see secret.h). */
#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentjail.h"
#include "http_token.h"
#include "internal.h"
#include "secret.h"

static int secret_refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int secret_refuse(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool secret_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!http_tchar(*s))
			return false;
	return true;
}

/* What may stand in a header value: visible ASCII and spaces, so a value
 * can never end the header and start another (no CR, LF or NUL). */
static bool header_safe(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return false;
	return true;
}

/* Headers the proxy owns: the framing and routing the rules checked
 * (Host is the SNI's, the lengths are the program's body's), never a
 * secret's to set. */
static bool reserved_header(const char *h)
{
	static const char *const owned[] = {"host", "content-length", "transfer-encoding",
					    "connection", "keep-alive", "te", "upgrade", "trailer",
					    "expect"};
	for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
		if (!strcasecmp(h, owned[i]))
			return true;
	return !strncasecmp(h, "proxy-", 6);
}

static void secret_clear(struct secret *s)
{
	if (s->value) {
		OPENSSL_cleanse(s->value, s->value_len);
		free(s->value);
	}
	for (uint32_t i = 0; s->host_text && i < s->n_hosts; i++)
		free(s->host_text[i]);
	free(s->host_text);
	free(s->hosts);
	free(s->format);
	for (uint32_t i = 0; s->requests && i < s->n_requests; i++)
		free(s->requests[i].prefix);
	free(s->requests);
	memset(s, 0, sizeof *s);
}

void secret_set_free(struct secret_set *set)
{
	for (uint32_t i = 0; set->s && i < set->n; i++)
		secret_clear(&set->s[i]);
	free(set->s);
	set->s = NULL;
	set->n = 0;
}

static int parse_request_rule(const char *text, struct secret_request_rule *r, char *why,
			      size_t n, const char *where)
{
	const char *sp = strchr(text, ' ');
	if (!sp || sp == text || (size_t)(sp - text) >= sizeof r->method)
		return secret_refuse(why, n, "%s: '%s' is not \"METHOD /path-prefix\"", where, text);
	memcpy(r->method, text, (size_t)(sp - text));
	r->method[sp - text] = '\0';
	if (strcmp(r->method, "*") && !secret_token(r->method))
		return secret_refuse(why, n, "%s: '%s': the method is not a token", where, text);
	for (char *m = r->method; *m; m++)
		if (*m >= 'a' && *m <= 'z')
			return secret_refuse(why, n, "%s: '%s': methods are upper case (GET)", where, text);
	const char *path = sp + 1;
	size_t pl = strlen(path);
	if (pl && path[pl - 1] == '*') /* "/repos/acme/" then "*": the prefix without the star */
		pl--;
	if (!pl || path[0] != '/')
		return secret_refuse(why, n, "%s: '%s': the path prefix must start with '/'", where, text);
	for (size_t i = 0; i < pl; i++)
		if ((unsigned char)path[i] <= 0x20 || (unsigned char)path[i] >= 0x7f ||
		    path[i] == '*' || path[i] == '?' || path[i] == '#' || path[i] == '%')
			return secret_refuse(why, n,
				      "%s: '%s': a path prefix is plain path text (no space, '*' but "
				      "at its end, '?', '#' or '%%')",
				      where, text);
	if (!(r->prefix = strndup(path, pl)))
		return -ENOMEM;
	return 0;
}

static const char *const known_fields[] = {"name", "value", "hosts", "header", "format",
					   "placeholder", "plain_http", "requests"};

static int parse_hosts(json_t *o, struct secret *s, const char *where, char *why, size_t n)
{
	json_t *hosts = json_object_get(o, "hosts");
	if (!json_is_array(hosts) || !json_array_size(hosts))
		return secret_refuse(why, n, "%s: \"hosts\" must be a non-empty array of host rules", where);
	size_t nh = json_array_size(hosts);
	if (nh > AJ_MAX_EGRESS_RULES)
		return secret_refuse(why, n, "%s: at most %d hosts", where, AJ_MAX_EGRESS_RULES);
	if (!(s->hosts = calloc(nh, sizeof *s->hosts)) ||
	    !(s->host_text = calloc(nh, sizeof *s->host_text)))
		return -ENOMEM;
	for (; s->n_hosts < nh; s->n_hosts++) {
		json_t *h = json_array_get(hosts, s->n_hosts);
		char hw[200];
		if (!json_is_string(h))
			return secret_refuse(why, n, "%s: host %u is not a string", where, s->n_hosts + 1);
		if (egress_host_rule_parse(json_string_value(h), &s->hosts[s->n_hosts], hw, sizeof hw))
			return secret_refuse(why, n, "%s: %s", where, hw);
		if (!(s->host_text[s->n_hosts] = strdup(json_string_value(h))))
			return -ENOMEM;
	}
	return 0;
}

/* A header secret's header and format. */
static int parse_header(json_t *header, json_t *format, struct secret *s, const char *where,
			char *why, size_t n)
{
	if (!json_is_string(header))
		return secret_refuse(why, n,
			      "%s: give \"header\" (the header to set) or \"placeholder\": true",
			      where);
	const char *hn = json_string_value(header);
	if (strlen(hn) > SECRET_HEADER_MAX || !secret_token(hn))
		return secret_refuse(why, n, "%s: header '%.70s' is not a header name", where, hn);
	if (reserved_header(hn))
		return secret_refuse(why, n,
			      "%s: header '%s' is the proxy's own (Host, the body's framing, "
			      "hop-by-hop headers), never a secret's",
			      where, hn);
	snprintf(s->header, sizeof s->header, "%s", hn);
	const char *f = "{value}";
	if (format && !json_is_string(format))
		return secret_refuse(why, n, "%s: \"format\" must be a string", where);
	if (format)
		f = json_string_value(format);
	const char *at = strstr(f, "{value}"), *at64 = strstr(f, "{base64}");
	if ((at ? 1 : 0) + (at64 ? 1 : 0) != 1 || (at && strstr(at + 1, "{value}")) ||
	    (at64 && strstr(at64 + 1, "{base64}")))
		/* The format is not echoed: a value pasted into it by
		 * mistake must not reach an error message. */
		return secret_refuse(why, n,
			      "%s: the format must hold {value} or {base64} (Basic auth: "
			      "\"Basic {base64}\" of a value \"user:password\") exactly once",
			      where);
	if (!header_safe(f, strlen(f)) || strlen(f) > 256)
		return secret_refuse(why, n, "%s: the format holds a control character or is too long",
			      where);
	if (!(s->format = strdup(f)))
		return -ENOMEM;
	return 0;
}

static int parse_one(json_t *o, unsigned idx, struct secret *s, char *why, size_t n)
{
	char where[64];
	snprintf(where, sizeof where, "secrets: item %u", idx);
	if (!json_is_object(o))
		return secret_refuse(why, n, "%s is not an object", where);
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		bool known = false;
		for (size_t i = 0; i < sizeof known_fields / sizeof known_fields[0]; i++)
			known = known || !strcmp(key, known_fields[i]);
		if (!known)
			return secret_refuse(why, n, "%s: unknown field '%.40s'", where, key);
	}
	json_t *name = json_object_get(o, "name");
	if (!json_is_string(name))
		return secret_refuse(why, n, "%s: \"name\" must be a string", where);
	const char *nm = json_string_value(name);
	size_t nl = strlen(nm);
	bool name_ok = nl >= 1 && nl <= SECRET_NAME_MAX && nm[0] >= 'A' && nm[0] <= 'Z';
	for (size_t i = 0; name_ok && i < nl; i++)
		name_ok = (nm[i] >= 'A' && nm[i] <= 'Z') || (nm[i] >= '0' && nm[i] <= '9') ||
			  nm[i] == '_';
	if (!name_ok)
		return secret_refuse(why, n,
			      "%s: name '%.40s' must be 1 to %d of A-Z, 0-9 and _, starting with a "
			      "letter (it becomes AJ_SECRET_NAME)",
			      where, nm, SECRET_NAME_MAX);
	memcpy(s->name, nm, nl + 1);
	snprintf(s->placeholder_text, sizeof s->placeholder_text, SECRET_PLACEHOLDER_PREFIX "%s", nm);
	snprintf(where, sizeof where, "secrets: %s", s->name);

	json_t *value = json_object_get(o, "value");
	if (!json_is_string(value))
		return secret_refuse(why, n, "%s: \"value\" must be a string", where);
	size_t vl = json_string_length(value);
	if (!vl || vl > AJ_MAX_SECRET_BYTES)
		return secret_refuse(why, n, "%s: the value must be 1 to %d bytes", where, AJ_MAX_SECRET_BYTES);
	if (!header_safe(json_string_value(value), vl))
		return secret_refuse(why, n,
			      "%s: the value holds a control character (a CR, LF or NUL would end "
			      "the header it is sent in)",
			      where);
	if (!(s->value = malloc(vl + 1)))
		return -ENOMEM;
	memcpy(s->value, json_string_value(value), vl + 1);
	s->value_len = vl;

	int rc = parse_hosts(o, s, where, why, n);
	if (rc)
		return rc;

	json_t *ph = json_object_get(o, "placeholder"), *pl = json_object_get(o, "plain_http");
	if ((ph && !json_is_boolean(ph)) || (pl && !json_is_boolean(pl)))
		return secret_refuse(why, n, "%s: \"placeholder\" and \"plain_http\" are true or false", where);
	s->placeholder = json_is_true(ph);
	s->plain_http = json_is_true(pl);
	json_t *header = json_object_get(o, "header"), *format = json_object_get(o, "format");
	if (s->placeholder) {
		if (header || format)
			return secret_refuse(why, n,
				      "%s: a placeholder secret has no \"header\" or \"format\": the "
				      "program writes %s where the value goes",
				      where, s->placeholder_text);
	} else if ((rc = parse_header(header, format, s, where, why, n))) {
		return rc;
	}

	json_t *req = json_object_get(o, "requests");
	if (req) {
		if (!json_is_array(req) || !json_array_size(req) ||
		    json_array_size(req) > AJ_MAX_EGRESS_RULES)
			return secret_refuse(why, n, "%s: \"requests\" must be 1 to %d \"METHOD /path\" rules",
				      where, AJ_MAX_EGRESS_RULES);
		if (!(s->requests = calloc(json_array_size(req), sizeof *s->requests)))
			return -ENOMEM;
		for (; s->n_requests < json_array_size(req); s->n_requests++) {
			json_t *r = json_array_get(req, s->n_requests);
			if (!json_is_string(r))
				return secret_refuse(why, n, "%s: request rule %u is not a string", where,
					      s->n_requests + 1);
			rc = parse_request_rule(json_string_value(r), &s->requests[s->n_requests],
						    why, n, where);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int secret_set_parse(const char *json, struct secret_set *out, char *why, size_t n)
{
	memset(out, 0, sizeof *out);
	if (!json || !*json)
		return 0;
	json_error_t jerr;
	/* The text may hold values: jansson's error names a place, not text. */
	json_t *arr = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (!arr)
		return secret_refuse(why, n, "secrets: not JSON (line %d, column %d)", jerr.line, jerr.column);
	int rc = 0;
	if (!json_is_array(arr))
		rc = secret_refuse(why, n, "secrets: must be a JSON array of secrets");
	else if (json_array_size(arr) > AJ_MAX_SECRETS)
		rc = secret_refuse(why, n, "secrets: at most %d", AJ_MAX_SECRETS);
	else if (json_array_size(arr) && !(out->s = calloc(json_array_size(arr), sizeof *out->s)))
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < json_array_size(arr); i++) {
		out->n = (uint32_t)i + 1;
		rc = parse_one(json_array_get(arr, i), (unsigned)i + 1, &out->s[i], why, n);
		for (size_t k = 0; !rc && k < i; k++)
			if (!strcmp(out->s[k].name, out->s[i].name))
				rc = secret_refuse(why, n, "secrets: two secrets named %s", out->s[i].name);
	}
	if (rc == -ENOMEM)
		snprintf(why, n, "secrets: out of memory");
	/* jansson's copy of the text is gone with the array; wipe its strings. */
	for (size_t i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
		json_t *v = json_object_get(json_array_get(arr, i), "value");
		if (json_is_string(v))
			OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
	}
	json_decref(arr);
	if (rc)
		secret_set_free(out);
	return rc;
}

static int secret_copy(const struct secret *src, struct secret *d)
{
	*d = *src;
	d->value = NULL;
	d->hosts = NULL;
	d->host_text = NULL;
	d->format = NULL;
	d->requests = NULL;
	d->n_hosts = d->n_requests = 0;
	if (!(d->value = malloc(src->value_len + 1)))
		return -ENOMEM;
	memcpy(d->value, src->value, src->value_len + 1);
	if ((src->format && !(d->format = strdup(src->format))) ||
	    !(d->hosts = calloc(src->n_hosts, sizeof *d->hosts)) ||
	    !(d->host_text = calloc(src->n_hosts, sizeof *d->host_text)))
		return -ENOMEM;
	memcpy(d->hosts, src->hosts, src->n_hosts * sizeof *d->hosts);
	for (; d->n_hosts < src->n_hosts; d->n_hosts++)
		if (!(d->host_text[d->n_hosts] = strdup(src->host_text[d->n_hosts])))
			return -ENOMEM;
	if (src->n_requests && !(d->requests = calloc(src->n_requests, sizeof *d->requests)))
		return -ENOMEM;
	for (; d->n_requests < src->n_requests; d->n_requests++) {
		d->requests[d->n_requests] = src->requests[d->n_requests];
		if (!(d->requests[d->n_requests].prefix = strdup(src->requests[d->n_requests].prefix)))
			return -ENOMEM;
	}
	return 0;
}

int secret_set_keep(const struct secret_set *src, const char *const *names, uint32_t n_names,
		    struct secret_set *out, char *why, size_t n)
{
	memset(out, 0, sizeof *out);
	for (uint32_t i = 0; i < n_names; i++) {
		bool found = false;
		for (uint32_t k = 0; names[i] && k < src->n; k++)
			found = found || !strcmp(names[i], src->s[k].name);
		if (!found) {
			snprintf(why, n,
				 "secrets: '%.40s' is not one of the session's secrets; secrets can be "
				 "dropped, never added",
				 names[i] ? names[i] : "(null)");
			return -EPERM;
		}
	}
	if (src->n && !(out->s = calloc(src->n, sizeof *out->s)))
		goto oom;
	for (uint32_t k = 0; k < src->n; k++) {
		bool keep = false;
		for (uint32_t i = 0; i < n_names; i++)
			keep = keep || !strcmp(names[i], src->s[k].name);
		if (keep && secret_copy(&src->s[k], &out->s[out->n++]))
			goto oom;
	}
	return 0;
oom:
	secret_set_free(out);
	snprintf(why, n, "secrets: out of memory");
	return -ENOMEM;
}

bool secret_for_host(const struct secret *s, const char *host, uint16_t port)
{
	for (uint32_t i = 0; i < s->n_hosts; i++)
		if (egress_host_matches(&s->hosts[i], host, port))
			return true;
	return false;
}

char *secret_header_value(const struct secret *s, size_t *len)
{
	const char *at = strstr(s->format, "{value}");
	const char *tok = at ? "{value}" : "{base64}";
	if (!at)
		at = strstr(s->format, tok);
	size_t b64_len = 0;
	char *b64 = NULL;
	if (!strcmp(tok, "{base64}") && !(b64 = base64_encode(s->value, s->value_len, &b64_len)))
		return NULL;
	const char *ins = b64 ? b64 : s->value;
	size_t ins_len = b64 ? b64_len : s->value_len;
	size_t pre = (size_t)(at - s->format), post = strlen(at + strlen(tok));
	char *out = malloc(pre + ins_len + post + 1);
	if (out) {
		memcpy(out, s->format, pre);
		memcpy(out + pre, ins, ins_len);
		memcpy(out + pre + ins_len, at + strlen(tok), post + 1);
		*len = pre + ins_len + post;
	}
	if (b64) {
		OPENSSL_cleanse(b64, b64_len);
		free(b64);
	}
	return out;
}

/* A path whose prefix could be walked out of after the check: dot
 * segments and their encodings, an encoded slash or backslash. */
static bool path_plain(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\\' || p[i] == '#')
			return false;
		if (p[i] == '%' && i + 2 < len) {
			char a = p[i + 1], b = p[i + 2];
			if (a == '2' && (b == 'e' || b == 'E' || b == 'f' || b == 'F'))
				return false; /* %2e '.', %2f '/' */
			if (a == '5' && (b == 'c' || b == 'C'))
				return false; /* %5c '\\' */
		}
		if (p[i] == '/' && i + 1 < len && p[i + 1] == '.') {
			size_t k = i + 1;
			while (k < len && p[k] == '.')
				k++;
			if (k == len || p[k] == '/' || p[k] == '?')
				return false; /* "/." or "/.." as a segment */
		}
		if (p[i] == '/' && i + 1 < len && p[i + 1] == '/')
			return false;
		if (p[i] == '?')
			break; /* the query is the server's; the prefix is over the path */
	}
	return true;
}

bool secret_request_allowed(const struct secret *s, const char *method, const char *path,
			    size_t path_len, char *why, size_t n)
{
	if (!s->n_requests)
		return true;
	if (!path_plain(path, path_len)) {
		snprintf(why, n,
			 "secret %s: the path holds a dot segment, '//' or an encoded '.', '/' or "
			 "'\\', which its request rules do not admit",
			 s->name);
		return false;
	}
	for (uint32_t i = 0; i < s->n_requests; i++) {
		const struct secret_request_rule *r = &s->requests[i];
		size_t pl = strlen(r->prefix);
		if ((!strcmp(r->method, "*") || !strcmp(r->method, method)) && path_len >= pl &&
		    !memcmp(path, r->prefix, pl))
			return true;
	}
	snprintf(why, n, "secret %s: %.16s %.*s is not among its request rules", s->name, method,
		 (int)(path_len > 80 ? 80 : path_len), path);
	return false;
}

/* ---- the head the upstream gets ---- */

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static bool secret_hop_by_hop(const char *name, size_t nl)
{
	static const char *const hop[] = {"connection", "keep-alive", "te", "upgrade", "trailer"};
	for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
		if (strlen(hop[i]) == nl && !strncasecmp(name, hop[i], nl))
			return true;
	return nl >= 6 && !strncasecmp(name, "proxy-", 6);
}

char *secret_rewrite_head(const char *head, size_t len, const struct secret *const *apply,
			  uint32_t n, bool *used, size_t *out_len)
{
	struct buf b = {0};
	for (uint32_t i = 0; i < n; i++)
		used[i] = false;
	const char *end = head + len;
	const char *le = memmem(head, len, "\r\n", 2);
	if (!le)
		return NULL;
	buf_put(&b, head, (size_t)(le + 2 - head)); /* the request line */
	for (const char *l = le + 2; l < end - 2;) {
		const char *e = memmem(l, (size_t)(end - l), "\r\n", 2);
		if (!e)
			break;
		const char *colon = memchr(l, ':', (size_t)(e - l));
		size_t nl = colon ? (size_t)(colon - l) : 0;
		bool drop = !colon || secret_hop_by_hop(l, nl);
		for (uint32_t i = 0; !drop && i < n; i++)
			drop = apply[i]->header[0] && strlen(apply[i]->header) == nl &&
			       !strncasecmp(apply[i]->header, l, nl);
		if (!drop) {
			/* Placeholders swapped in the value, each secret's. */
			const char *p = colon + 1, *q;
			buf_put(&b, l, (size_t)(p - l));
			while (p < e) {
				const struct secret *hit = NULL;
				const char *at = e;
				for (uint32_t i = 0; i < n; i++) {
					if (!apply[i]->placeholder)
						continue;
					q = memmem(p, (size_t)(e - p), apply[i]->placeholder_text,
						   strlen(apply[i]->placeholder_text));
					/* The earliest, and the longest there: AJ_SECRET_GH
					 * is not the start of AJ_SECRET_GHX. */
					if (q && (q < at || (q == at && hit &&
							     strlen(apply[i]->placeholder_text) >
								     strlen(hit->placeholder_text)))) {
						at = q;
						hit = apply[i];
						for (uint32_t k = 0; k < n; k++)
							if (apply[k] == hit)
								used[k] = true;
					}
				}
				buf_put(&b, p, (size_t)(at - p));
				if (!hit)
					break;
				buf_put(&b, hit->value, hit->value_len);
				p = at + strlen(hit->placeholder_text);
			}
			buf_put(&b, "\r\n", 2);
		}
		l = e + 2;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!apply[i]->header[0])
			continue;
		size_t vl;
		char *v = secret_header_value(apply[i], &vl);
		if (!v) {
			b.oom = true;
			break;
		}
		buf_put(&b, apply[i]->header, strlen(apply[i]->header));
		buf_put(&b, ": ", 2);
		buf_put(&b, v, vl);
		buf_put(&b, "\r\n", 2);
		OPENSSL_cleanse(v, vl);
		free(v);
		used[i] = true;
	}
	buf_put(&b, "Connection: close\r\n\r\n", 21);
	if (b.oom) {
		if (b.p)
			OPENSSL_cleanse(b.p, b.cap);
		free(b.p);
		return NULL;
	}
	*out_len = b.len;
	return b.p;
}

void secret_mask(char *buf, size_t len, const struct secret *const *apply, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct secret *s = apply[i];
		char *p = buf;
		size_t left = len;
		char *hit;
		while (left >= s->value_len && (hit = memmem(p, left, s->value, s->value_len))) {
			memset(hit, '*', s->value_len);
			left -= (size_t)(hit + s->value_len - p);
			p = hit + s->value_len;
		}
	}
}

size_t secret_tail_hold(const char *buf, size_t len, const struct secret *const *apply,
			uint32_t n)
{
	size_t hold = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t most = apply[i]->value_len - 1 < len ? apply[i]->value_len - 1 : len;
		for (size_t k = most; k > hold; k--)
			if (!memcmp(buf + len - k, apply[i]->value, k)) {
				hold = k;
				break;
			}
	}
	return hold;
}
