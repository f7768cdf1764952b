/* The proxy's decision log (see proxy_internal.h): each connection's
 * destination, verdict, reason and bytes, handed out as JSON by the run or
 * session call it belongs to. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_internal.h"

void egress_log_add(struct egress_log *l, const struct egress_entry *e)
{
	/* Failed is not denied: the rules let it through and the destination
	 * (or its name) did not answer, which the rules cannot help. */
	if (e->failure[0])
		l->failed++;
	else if (e->allowed)
		l->allowed++;
	else
		l->denied++;
	/* Bounded: a program opening connections in a loop must not grow the
	 * host's memory; the count still says how many there were. */
	if (l->n == EGRESS_LOG_MAX) {
		l->dropped++;
		return;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct egress_entry *ne = realloc(l->e, cap * sizeof *ne);
		if (!ne) {
			l->dropped++;
			return;
		}
		l->e = ne;
		l->cap = cap;
	}
	l->e[l->n++] = *e;
}

void egress_log_injected(struct egress_log *l, const char *name)
{
	for (unsigned i = 0; i < l->n_injections; i++)
		if (!strcmp(l->injections[i].name, name)) {
			l->injections[i].n++;
			return;
		}
	if (l->n_injections < AJ_MAX_SECRETS) {
		struct egress_injections *x = &l->injections[l->n_injections++];
		snprintf(x->name, sizeof x->name, "%s", name);
		x->n = 1;
	}
}

/* "GH,OPENAI" as ["GH", "OPENAI"]. */
static json_t *names_json(const char *csv)
{
	json_t *a = json_array();
	for (const char *p = csv; a && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		json_array_append_new(a, json_stringn(p, n));
		p += n + (comma ? 1 : 0);
	}
	return a;
}

static json_t *entry_json(const struct egress_entry *e, bool open)
{
	const char *verdict = e->failure[0] ? "failed" : e->allowed ? "allowed" : "denied";
	json_t *o = json_pack("{s:s, s:s?, s:i, s:s, s:b, s:s, s:s?, s:s, s:I, s:I, s:b}", "host",
			 e->host, "address", e->address[0] ? e->address : NULL, "port",
			 (int)e->port, "via", e->via, "allowed", e->allowed, "verdict", verdict,
			 "failure", e->failure[0] ? e->failure : NULL, "reason", e->reason,
			 "bytes_out", (json_int_t)e->bytes_out, "bytes_in", (json_int_t)e->bytes_in,
			 "open", open);
	if (o && e->secrets[0])
		json_object_set_new(o, "secrets", names_json(e->secrets));
	return o;
}

char *egress_log_take(struct egress_log *l, const struct egress_entry *live, size_t n_live,
		      uint64_t out_total, uint64_t in_total, const char *limit)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < l->n + n_live; i++)
		if (json_array_append_new(list, i < l->n ? entry_json(&l->e[i], false)
							 : entry_json(&live[i - l->n], true))) {
			json_decref(list);
			list = NULL;
		}
	json_t *o = list ? json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:s?}", "connections",
				     list, "allowed", (json_int_t)l->allowed, "denied",
				     (json_int_t)l->denied, "failed", (json_int_t)l->failed,
				     "dropped", (json_int_t)l->dropped,
				     "bytes_out", (json_int_t)out_total, "bytes_in",
				     (json_int_t)in_total, "limit",
				     limit && *limit ? limit : NULL)
			 : NULL;
	if (o && l->n_injections) {
		json_t *inj = json_object();
		for (unsigned i = 0; inj && i < l->n_injections; i++)
			json_object_set_new(inj, l->injections[i].name,
					    json_integer((json_int_t)l->injections[i].n));
		json_object_set_new(o, "injections", inj);
	}
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (s) {
		l->n = 0;
		l->allowed = l->denied = l->failed = l->dropped = 0;
		l->n_injections = 0;
	}
	return s;
}

void egress_log_free(struct egress_log *l)
{
	free(l->e);
	memset(l, 0, sizeof *l);
}
