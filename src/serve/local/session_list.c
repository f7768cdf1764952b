/* GET /v1/sessions on this machine: the calling key's open sessions,
 * newest first, for a console's list. Only the key's own: the table is
 * read for its key_use alone, as sessions_get reads it, so another key's
 * sessions are never seen, not even as a count. With ?all=true, which the
 * route answers only for an admin key (keys.h), every key's, each row
 * naming its owner ("key": the key's name, as the access log names it;
 * never its token or hash): the operator's view. A session deleted, or
 * closed by the library (idle, lifetime, a failed sandbox), is not open
 * and not listed (sessions_each walks the live ones).
 *
 * A row is POST /v1/sessions' answer for the session (local_session_json,
 * under the config its sandbox was given), with when it was opened and
 * last used (the table's clock), whether it is paused, and the egress
 * rules and the secrets' names it keeps now: a POST .../egress since may
 * have dropped some, and the row says what is left. Never a secret's
 * value: names only, as the opening's answer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../api/api.h"
#include "../../core/internal.h"
#include "../admit/call_secrets.h"
#include "../admit/narrow.h"
#include "local_state.h"
#include "session_list.h"
#include "session_state.h"

/* The egress rules h keeps, as "allow_hosts" and "allow_cidrs" on row:
 * its sandbox's (cfg), less those a narrowing dropped since (the lists of
 * its terms, which sessions_narrowed keeps; a list the terms lack is all
 * of the sandbox's). Read by the opening's own reading of a body and
 * written by its own builder (narrow.h), in the deployer's order. 0, or
 * -1 (out of memory, or terms naming a rule the sandbox lacks, which a
 * session opened or narrowed by them cannot). */
static int rules_kept(const struct aj_config *cfg, json_t *terms, json_t *row)
{
	struct egress_keep k;
	struct aj_error err;
	if (egress_narrow(cfg, terms, &k, &err))
		return -1;
	k.named_hosts = k.named_cidrs = true; /* both lists, always: [] for none */
	return egress_keep_to_json(cfg, &k, row);
}

/* The names of the secrets h keeps: its sandbox's, less those a POST
 * .../egress dropped (its terms' "secrets_kept"), by the rule a restart
 * narrows them by (secrets_text_keep). The values pass through here only
 * in the sandbox's text and its narrowed copy, which is wiped. */
static json_t *secret_names_kept(const struct aj_config *cfg, json_t *terms)
{
	json_t *kept = json_object_get(terms, "secrets_kept");
	if (!json_is_array(kept))
		return secret_names_json(cfg->secrets);
	char *text = secrets_text_keep(cfg->secrets, kept);
	json_t *names = text ? secret_names_json(text) : NULL;
	call_secrets_free(text);
	return names;
}

/* One row for h (the table's lock held: h, its terms and its sandbox's
 * config stay as they are); NULL when out of memory. */
static json_t *session_row(const struct hsession *h)
{
	struct aj_config cfg;
	session_given_config(h->s, &cfg);
	json_t *row = local_session_json(&cfg, h);
	json_t *names = secret_names_kept(&cfg, h->terms);
	if (!row || !names) {
		json_decref(row);
		json_decref(names);
		return NULL;
	}
	if (json_object_set_new(row, "secrets", names) || rules_kept(&cfg, h->terms, row) ||
	    json_object_set_new(row, "created", json_real(h->created)) ||
	    json_object_set_new(row, "last_used", json_real(h->used)) ||
	    /* Without the session's lock, which a call may hold for
	     * minutes: a list never waits for a session's call. */
	    json_object_set_new(row, "paused", json_boolean(aj_session_paused(h->s)))) {
		json_decref(row);
		return NULL;
	}
	return row;
}

struct session_rows {
	const struct key_use *owner; /* NULL: every key's (an admin key asked) */
	json_t *rows; /* in the table's order: the last enlisted first */
	bool failed;
};

static void add_session_row(struct hsession *h, void *arg)
{
	struct session_rows *l = arg;
	if (l->failed || (l->owner && h->owner != l->owner))
		return; /* another key's: not even counted */
	json_t *row = session_row(h);
	/* Whose it is, for the operator's list only: a key's own list
	 * stays as it was. */
	if (row && !l->owner && json_object_set_new(row, "key", json_string(h->owner->key->name))) {
		json_decref(row);
		row = NULL;
	}
	if (!row || json_array_append_new(l->rows, row))
		l->failed = true;
}

struct dated_row {
	double created;
	size_t at; /* its place in the table's order, which breaks a tie */
	json_t *row;
};

static int newest_row_first(const void *a, const void *b)
{
	const struct dated_row *x = a, *y = b;
	if (x->created != y->created)
		return x->created < y->created ? 1 : -1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* rows sorted by "created", newest first, as a new array (NULL: out of
 * memory). The table holds them newest first already, bar two enlisted
 * at once; the clock is what the rows show, so it is what they follow. */
static json_t *newest_first_rows(json_t *rows)
{
	size_t n = json_array_size(rows);
	struct dated_row *v = n ? calloc(n, sizeof *v) : NULL;
	json_t *sorted = json_array();
	if ((n && !v) || !sorted) {
		free(v);
		json_decref(sorted);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(rows, i);
		v[i] = (struct dated_row){json_real_value(json_object_get(row, "created")), i, row};
	}
	if (n)
		qsort(v, n, sizeof *v, newest_row_first);
	for (size_t i = 0; i < n; i++)
		if (json_array_append(sorted, v[i].row)) {
			json_decref(sorted);
			sorted = NULL;
			break;
		}
	free(v);
	return sorted;
}

void local_session_list(struct service *svc, const struct http_request *rq,
			struct http_response *rs, bool all)
{
	struct session_rows l = {all ? NULL : admission_use(&svc->adm, rq->key), json_array(),
				 false};
	if (l.rows)
		sessions_each(&local_of(svc)->sessions, add_session_row, &l);
	json_t *sorted = l.rows && !l.failed ? newest_first_rows(l.rows) : NULL;
	json_decref(l.rows);
	if (!sorted)
		return respond_error(rs, 500, "internal", "out of memory");
	respond_json(rs, 200, json_pack("{s:o}", "sessions", sorted));
}
