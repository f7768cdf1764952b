#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/internal.h"
#include "keys.h"
#include "../../core/secret.h"

static void sha256(const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 32;
	EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

int key_name_check(const char *name, struct aj_error *err)
{
	size_t n = strlen(name);
	if (n == 0 || n > KEY_NAME_MAX)
		return error_set(err, -EINVAL, "key name: 1 to %d characters, got %zu",
				 KEY_NAME_MAX, n);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
		/* The name shows in logs and in /metrics labels: nothing that
		 * could forge a line or a label there. */
		if (!ok)
			return error_set(err, -EINVAL,
					 "key name: '%.64s' may hold only letters, digits, '.', "
					 "'_' and '-'",
					 name);
	}
	return 0;
}

static int hex_decode(const char *hex, unsigned char out[32])
{
	if (strlen(hex) != 64)
		return -1;
	for (int i = 0; i < 32; i++) {
		unsigned v = 0;
		for (int j = 0; j < 2; j++) {
			char c = hex[2 * i + j];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				return -1;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

static int limit_field(json_t *e, const char *field, uint32_t def, uint32_t *out,
		       const char *path, size_t i, struct aj_error *err)
{
	json_t *v = json_object_get(e, field);
	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > KEY_MAX_LIMIT)
		return error_set(err, -EINVAL, "%s: keys[%zu].%s: a whole number from 1 to %d",
				 path, i, field, KEY_MAX_LIMIT);
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* A power the entry may give its key ("metrics", "admin"): absent is
 * false, and anything but true or false is refused, never read as either. */
static int flag_field(json_t *e, const char *field, bool *out, const char *path, size_t i,
		      struct aj_error *err)
{
	json_t *v = json_object_get(e, field);
	if (v && !json_is_boolean(v))
		return error_set(err, -EINVAL, "%s: keys[%zu].%s: true or false", path, i, field);
	*out = json_is_true(v);
	return 0;
}

/* The entry's webhook secret, if it has one: ours (ajwh_...) or the
 * deployer's own, which may be shared with receivers already. */
static int webhook_secret_field(json_t *e, struct key *key, const char *path, size_t i,
				struct aj_error *err)
{
	json_t *v = json_object_get(e, "webhook_secret");
	if (!v)
		return 0;
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	bool ok = n >= KEY_WEBHOOK_SECRET_MIN && n <= KEY_WEBHOOK_SECRET_MAX;
	for (size_t j = 0; ok && j < n; j++) {
		char c = s[j];
		/* What travels unquoted in a shell line and an env file. */
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		     c == '.' || c == '_' || c == '-' || c == '~';
	}
	if (!ok)
		return error_set(err, -EINVAL,
				 "%s: keys[%zu].webhook_secret: %d to %d of [A-Za-z0-9._~-] "
				 "expected",
				 path, i, KEY_WEBHOOK_SECRET_MIN, KEY_WEBHOOK_SECRET_MAX);
	memcpy(key->webhook_secret, s, n + 1);
	return 0;
}

/* A key's "secrets" (absent, null or []: none), checked by the core's own
 * parser, the one every front end's secrets pass: 0 with key->secrets its
 * compact JSON, or -EINVAL with why naming the key. */
static int secrets_field(json_t *v, struct key *key, const char *path, struct aj_error *err)
{
	if (!v || json_is_null(v) || (json_is_array(v) && !json_array_size(v)))
		return 0;
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	struct secret_set set;
	char why[AJ_ERROR_MAX] = "secrets: out of memory";
	int rc = text ? secret_set_parse(text, &set, why, sizeof why) : -ENOMEM;
	if (!rc) {
		secret_set_free(&set);
		key->secrets = text;
		return 0;
	}
	key_secrets_free(text);
	/* Named by the key's name (never its hash or a value): the deployer
	 * finds the entry, and a log of the error shows no credential. */
	return error_set(err, rc, "%s: key '%s': %s", path, key->name, why);
}

/* keys[i] an object of known fields only: 0, or -EINVAL naming one. */
static int entry_fields_known(json_t *e, const char *path, size_t i, struct aj_error *err)
{
	static const char *const fields[] = {"name",	     "sha256",
					     "concurrency",  "runs_per_minute",
					     "sessions",     "webhook_secret",
					     "metrics",      "secrets",
					     "admin"};
	if (!json_is_object(e))
		return error_set(err, -EINVAL, "%s: keys[%zu] must be an object", path, i);
	const char *k;
	json_t *v;
	json_object_foreach(e, k, v)
	{
		bool known = false;
		for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
			known |= !strcmp(k, fields[f]);
		if (!known)
			return error_set(err, -EINVAL, "%s: keys[%zu]: unknown field '%.100s'", path,
					 i, k);
	}
	return 0;
}

void key_secrets_free(char *text)
{
	if (text) {
		OPENSSL_cleanse(text, strlen(text));
		free(text);
	}
}

int keys_load(struct keyring *kr, const char *path, struct aj_error *err)
{
	*kr = (struct keyring){0};
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		/* jansson quotes the text near the fault, which may be a key's
		 * secret's value: only the place is said. */
		char *near = strstr(je.text, " near ");
		if (near)
			*near = '\0';
		return error_set(err, -EINVAL, "%s: %s (line %d, column %d)", path, je.text, je.line,
				 je.column);
	}
	int rc = 0;
	json_t *arr = json_object_get(root, "keys");
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v)
	{
		if (strcmp(k, "keys") != 0) {
			rc = error_set(err, -EINVAL, "%s: unknown key '%.100s' (only \"keys\")",
				       path, k);
			goto out;
		}
	}
	if (!json_is_array(arr)) {
		rc = error_set(err, -EINVAL, "%s: \"keys\" must be an array", path);
		goto out;
	}
	kr->keys = calloc(json_array_size(arr) + 1, sizeof *kr->keys);
	if (!kr->keys) {
		rc = error_set(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
	{
		struct key *key = &kr->keys[i];
		if ((rc = entry_fields_known(e, path, i, err)))
			goto out;
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *hex = json_string_value(json_object_get(e, "sha256"));
		if (!name) {
			rc = error_set(err, -EINVAL, "%s: keys[%zu].name: missing", path, i);
			goto out;
		}
		struct aj_error nerr;
		if (key_name_check(name, &nerr)) {
			rc = error_set(err, -EINVAL, "%s: keys[%zu]: %s", path, i, nerr.message);
			goto out;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(kr->keys[j].name, name)) {
				rc = error_set(err, -EINVAL, "%s: keys[%zu]: the name '%s' is used twice",
					       path, i, name);
				goto out;
			}
		if (!hex || hex_decode(hex, key->hash)) {
			rc = error_set(err, -EINVAL,
				       "%s: keys[%zu].sha256: 64 lowercase hex digits expected", path,
				       i);
			goto out;
		}
		snprintf(key->name, sizeof key->name, "%s", name);
		if ((rc = limit_field(e, "concurrency", KEY_DEFAULT_CONCURRENCY, &key->concurrency,
				      path, i, err)) ||
		    (rc = limit_field(e, "runs_per_minute", KEY_DEFAULT_RUNS_PER_MINUTE,
				      &key->runs_per_minute, path, i, err)) ||
		    (rc = limit_field(e, "sessions", KEY_DEFAULT_SESSIONS, &key->sessions, path, i,
				      err)))
			goto out;
		if ((rc = webhook_secret_field(e, key, path, i, err)))
			goto out;
		if ((rc = flag_field(e, "metrics", &key->metrics, path, i, err)) ||
		    (rc = flag_field(e, "admin", &key->admin, path, i, err)))
			goto out;
		kr->count++;
		if ((rc = secrets_field(json_object_get(e, "secrets"), key, path, err)))
			goto out;
	}
out:
	json_decref(root);
	if (rc)
		keys_free(kr);
	return rc;
}

int keys_save(const struct keyring *kr, const char *path, struct aj_error *err)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < kr->count; i++) {
		const struct key *k = &kr->keys[i];
		char hex[65];
		for (int j = 0; j < 32; j++)
			snprintf(hex + 2 * j, 3, "%02x", k->hash[j]);
		json_t *e = json_pack("{s:s, s:s, s:i, s:i, s:i}", "name", k->name, "sha256", hex,
				      "concurrency", k->concurrency, "runs_per_minute",
				      k->runs_per_minute, "sessions", k->sessions);
		if (e && k->webhook_secret[0])
			json_object_set_new(e, "webhook_secret", json_string(k->webhook_secret));
		if (e && k->metrics)
			json_object_set_new(e, "metrics", json_true());
		if (e && k->admin)
			json_object_set_new(e, "admin", json_true());
		/* A key's secrets are kept as they were: keys add and remove
		 * rewrite the file, and must not drop another key's. */
		if (e && k->secrets) {
			json_t *sv = json_loads(k->secrets, 0, NULL);
			if (!sv) {
				json_decref(e);
				json_decref(arr);
				return error_set(err, -ENOMEM, "%s: out of memory", path);
			}
			json_object_set_new(e, "secrets", sv);
		}
		json_array_append_new(arr, e);
	}
	json_t *root = json_pack("{s:o}", "keys", arr);
	char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (!text)
		return error_set(err, -ENOMEM, "%s: out of memory", path);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	/* 0600: the hashes let no one in, but the webhook secrets would let
	 * anyone sign a webhook as serve, and which names hold keys, and their
	 * limits, are the deployer's business. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = 0;
	if (fd < 0) {
		rc = error_set(err, -errno, "%s: %s", tmp, strerror(errno));
		key_secrets_free(text); /* it may hold keys' secrets: wiped */
		return rc;
	}
	size_t len = strlen(text);
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
		rc = error_set(err, -EIO, "%s: cannot write: %s", tmp, strerror(errno));
	close(fd);
	key_secrets_free(text);
	/* rename: a server reading the file sees the old one or the new one,
	 * never half of either. */
	if (!rc && rename(tmp, path) < 0)
		rc = error_set(err, -errno, "%s: %s", path, strerror(errno));
	if (rc)
		unlink(tmp);
	return rc;
}

void keys_free(struct keyring *kr)
{
	for (size_t i = 0; kr->keys && i < kr->count; i++)
		key_secrets_free(kr->keys[i].secrets);
	free(kr->keys);
	*kr = (struct keyring){0};
}

/* prefix and 256 random bits in base64url (43 characters) into out. */
static int random_token(const char *prefix, char *out)
{
	unsigned char raw[32];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -EIO;
	unsigned char b64[48];
	EVP_EncodeBlock(b64, raw, sizeof raw); /* 44 chars, the last '=' */
	size_t p = strlen(prefix);
	memcpy(out, prefix, p);
	for (int i = 0; i < 43; i++) {
		/* base64url: a token travels in headers and shell commands. */
		char c = (char)b64[i];
		out[p + i] = c == '+' ? '-' : c == '/' ? '_' : c;
	}
	out[p + 43] = '\0';
	OPENSSL_cleanse(raw, sizeof raw);
	OPENSSL_cleanse(b64, sizeof b64);
	return 0;
}

/* "e2b_" and 256 random bits as 64 hex digits into out. */
static int e2b_token(char *out)
{
	unsigned char raw[32];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -EIO;
	memcpy(out, "e2b_", 4);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 4 + 2 * i, 3, "%02x", raw[i]);
	OPENSSL_cleanse(raw, sizeof raw);
	return 0;
}

int key_generate(struct key *k, bool e2b_shape, char token[KEY_TOKEN_MAX + 1])
{
	if (e2b_shape ? e2b_token(token) : random_token("aj_", token))
		return -EIO;
	sha256(token, strlen(token), k->hash);
	return 0;
}

int key_webhook_secret_generate(struct key *k)
{
	/* Its own prefix: a secret pasted where a key goes (or the other
	 * way) is told apart at a glance. */
	return random_token("ajwh_", k->webhook_secret);
}

const struct key *keys_find(const struct keyring *kr, const char *token, size_t len)
{
	unsigned char h[32];
	sha256(token, len, h);
	const struct key *found = NULL;
	for (size_t i = 0; i < kr->count; i++) {
		/* CRYPTO_memcmp takes the same time wherever the bytes differ,
		 * and no comparison is skipped once one has matched. */
		bool match = CRYPTO_memcmp(h, kr->keys[i].hash, sizeof h) == 0;
		if (match)
			found = &kr->keys[i];
	}
	return found;
}
