/* call_secrets.h: the server's, a key's and a request's secrets joined. */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../../core/secret.h"
#include "call_secrets.h"
#include "service.h"

/* Wipes, then frees, a malloc'd text that may hold values. */
void call_secrets_free(char *text)
{
	key_secrets_free(text);
}

/* jansson frees its strings unwiped: the values are wiped first. */
static void wipe_values(json_t *arr)
{
	size_t i;
	json_t *item;
	json_array_foreach(arr, i, item) {
		json_t *v = json_object_get(item, "value");
		if (json_is_string(v))
			OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
	}
}

void call_secrets_forget(json_t *body)
{
	json_t *v = json_object_get(body, "secrets");
	if (json_is_array(v))
		wipe_values(v);
	json_object_del(body, "secrets");
}

static void array_free(json_t *arr)
{
	if (arr && arr->refcount == 1)
		wipe_values(arr);
	json_decref(arr);
}

/* v checked by the core's parser (the one every front end's secrets pass):
 * 0, or -EINVAL with why. The text handed to it is wiped. */
static int check_array(json_t *v, char *why, size_t n)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text) {
		snprintf(why, n, "secrets: out of memory");
		return -ENOMEM;
	}
	struct secret_set set;
	int rc = secret_set_parse(text, &set, why, n);
	if (!rc)
		secret_set_free(&set);
	call_secrets_free(text);
	return rc;
}

/* One source of secrets: its text parsed back to JSON (text NULL: none). */
static json_t *array_of(const char *text)
{
	if (!text || !*text)
		return json_array();
	json_t *a = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_array(a)) {
		array_free(a);
		return json_array();
	}
	return a;
}

static const char *name_of(json_t *item)
{
	const char *s = json_string_value(json_object_get(item, "name"));
	return s ? s : "";
}

/* into += from's items; a name already in into is refused, naming whose
 * both are (who[] by index of source). */
static int join_source(json_t *into, const char *const *whose, size_t *owner, json_t *from,
		      size_t me, struct aj_error *err)
{
	size_t i;
	json_t *item;
	json_array_foreach(from, i, item) {
		size_t k;
		json_t *had;
		json_array_foreach(into, k, had) {
			/* A second secret of one name would leave which value goes
			 * where to the order of a join: refused, named. */
			if (!strcmp(name_of(had), name_of(item)))
				return error_set(err, -EINVAL,
						 "secrets: %.40s is given twice (%s and %s); each "
						 "name once",
						 name_of(item), whose[owner[k]], whose[me]);
		}
		if (json_array_size(into) >= AJ_MAX_SECRETS)
			return error_set(err, -EINVAL,
					 "secrets: more than %d together (the server's, the key's "
					 "and the request's)",
					 AJ_MAX_SECRETS);
		owner[json_array_size(into)] = me;
		json_array_append(into, item);
	}
	return 0;
}

int call_secrets_join(const struct aj_config *base, const struct key *key, json_t *body,
		      char **text, struct aj_error *err)
{
	*text = NULL;
	json_t *mine = body ? json_object_get(body, "secrets") : NULL;
	bool asked = mine && !json_is_null(mine);
	if (!asked && !(key && key->secrets))
		return 0; /* the deployer's own, as the sandbox has them */
	char why[AJ_ERROR_MAX];
	if (asked && check_array(mine, why, sizeof why))
		return error_set(err, -EINVAL, "%s", why);
	static const char *const whose[] = {"the server's --secrets", "the key's",
					    "this request's"};
	size_t owner[AJ_MAX_SECRETS];
	json_t *all = json_array(), *srv = array_of(base->secrets),
	       *k = array_of(key ? key->secrets : NULL);
	int rc = all && srv && k ? 0 : error_set(err, -ENOMEM, "secrets: out of memory");
	if (!rc)
		rc = join_source(all, whose, owner, srv, 0, err);
	if (!rc)
		rc = join_source(all, whose, owner, k, 1, err);
	if (!rc && asked)
		rc = join_source(all, whose, owner, mine, 2, err);
	if (!rc && !(*text = json_dumps(all, JSON_COMPACT)))
		rc = error_set(err, -ENOMEM, "secrets: out of memory");
	/* all shares its items with the sources: wiped once, by the last. */
	json_decref(all);
	array_free(srv);
	array_free(k);
	if (rc)
		return rc;
	/* The library's own checks of the whole (egress rules to send them
	 * on, above all), in its words, before any sandbox is asked for. */
	struct aj_config c = *base;
	c.secrets = *text;
	struct aj_error verr;
	if (aj_config_validate(&c, &verr)) {
		call_secrets_free(*text);
		*text = NULL;
		return error_set(err, -EINVAL, "%s", verr.message);
	}
	return 0;
}

int call_secrets(struct service *svc, const struct key *key, json_t *body, char **text,
		 struct http_response *rs)
{
	*text = NULL;
	json_t *mine = body ? json_object_get(body, "secrets") : NULL;
	if (svc->cfg.queue_url && mine && !json_is_null(mine)) {
		/* A request to a worker travels through Redis, where anyone who
		 * can read the queue (or its persistence files) could read the
		 * values: the request's own secrets stay off it. */
		respond_error(rs, 501, "not_offered",
			      "secrets: not offered by a server with --queue: a request's secrets "
			      "would travel through Redis to the workers; give them to the "
			      "workers' own --secrets");
		return -1;
	}
	struct aj_error err = {0};
	if (call_secrets_join(&svc->cfg.sandbox, key, body, text, &err)) {
		respond_error(rs, err.code == -ENOMEM ? 500 : 400,
			      err.code == -ENOMEM ? "internal" : "bad_secrets", "%s", err.message);
		return -1;
	}
	return 0;
}

int keys_secrets_check(const struct keyring *kr, const struct aj_config *base, bool queue,
		       struct aj_error *err)
{
	for (size_t i = 0; i < kr->count; i++) {
		const struct key *k = &kr->keys[i];
		if (!k->secrets)
			continue;
		if (queue)
			return error_set(err, -EINVAL,
					 "key '%s': secrets are not offered with --queue (they "
					 "would travel through Redis to the workers); give them "
					 "to the workers' own --secrets",
					 k->name);
		char *text;
		struct aj_error why;
		if (call_secrets_join(base, k, NULL, &text, &why))
			return error_set(err, -EINVAL, "key '%s': %s", k->name, why.message);
		call_secrets_free(text);
	}
	return 0;
}

json_t *secret_names_json(const char *text)
{
	json_t *names = json_array(), *a = array_of(text);
	size_t i;
	json_t *item;
	json_array_foreach(a, i, item)
		json_array_append_new(names, json_string(name_of(item)));
	array_free(a);
	return names;
}

char *secrets_text_keep(const char *text, json_t *names)
{
	json_t *a = array_of(text), *kept = json_array();
	size_t i, j;
	json_t *item, *nm;
	json_array_foreach(a, i, item) {
		bool keep = false;
		json_array_foreach(names, j, nm)
			keep = keep || (json_is_string(nm) && !strcmp(json_string_value(nm),
								       name_of(item)));
		if (keep)
			json_array_append(kept, item);
	}
	char *out = kept ? json_dumps(kept, JSON_COMPACT) : NULL;
	json_decref(kept);
	array_free(a);
	return out;
}

int secrets_session_keep(struct aj_session *s, json_t *body, struct aj_error *err)
{
	json_t *v = json_object_get(body, "secrets");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > AJ_MAX_SECRETS)
		return error_set(err, -EINVAL,
				 "secrets: must be an array of at most %d names (the secrets to "
				 "keep)",
				 AJ_MAX_SECRETS);
	const char *names[AJ_MAX_SECRETS];
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) {
		if (!(names[i] = json_string_value(item)))
			return error_set(err, -EINVAL, "secrets: item %zu is not a name", i + 1);
	}
	return aj_session_secrets_keep(s, names, (uint32_t)json_array_size(v), err);
}
