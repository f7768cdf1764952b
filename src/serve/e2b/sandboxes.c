/* sandboxes.h: one list under one lock (a serve holds tens, not
 * thousands: each is a live sandbox). */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "sandboxes.h"

struct e2b_sandboxes {
	pthread_mutex_t lock;
	struct e2b_sandbox *head;
};

struct e2b_sandboxes *e2b_sandboxes_new(void)
{
	struct e2b_sandboxes *t = calloc(1, sizeof *t);
	if (t)
		pthread_mutex_init(&t->lock, NULL);
	return t;
}

static void sandbox_free(struct e2b_sandbox *sb)
{
	json_decref(sb->metadata);
	json_decref(sb->contexts);
	free(sb);
}

void e2b_sandboxes_free(struct e2b_sandboxes *t)
{
	if (!t)
		return;
	for (struct e2b_sandbox *sb = t->head, *next; sb; sb = next) {
		next = sb->next;
		sandbox_free(sb);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int e2b_sandboxes_add(struct e2b_sandboxes *t, struct e2b_sandbox *sb)
{
	unsigned char raw[E2B_TOKEN_HEX / 2];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -EIO;
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(sb->token + 2 * i, 3, "%02x", raw[i]);
	OPENSSL_cleanse(raw, sizeof raw);
	struct e2b_sandbox *c = malloc(sizeof *c);
	if (!c)
		return -ENOMEM;
	*c = *sb;
	c->metadata = sb->metadata ? json_incref(sb->metadata) : json_object();
	/* A fork's copy starts with the contexts of the sandbox it copies
	 * (their namespaces came with its state). */
	c->contexts = sb->contexts ? json_deep_copy(sb->contexts) : json_array();
	pthread_mutex_lock(&t->lock);
	c->next = t->head;
	t->head = c;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* The one for id (NULL key: any key's); the lock held. */
static struct e2b_sandbox **find_sandbox(struct e2b_sandboxes *t, const char *id, const struct key *key)
{
	for (struct e2b_sandbox **p = &t->head; *p; p = &(*p)->next)
		if (!strcmp((*p)->id, id) && (!key || (*p)->key == key))
			return p;
	return NULL;
}

static void copy_out(const struct e2b_sandbox *sb, struct e2b_sandbox *out)
{
	*out = *sb;
	out->next = NULL;
	out->contexts = NULL;
	json_incref(out->metadata);
}

int e2b_sandboxes_get(struct e2b_sandboxes *t, const char *id, const struct key *key,
		      struct e2b_sandbox *out)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	if (p)
		copy_out(*p, out);
	pthread_mutex_unlock(&t->lock);
	return p ? 0 : -ENOENT;
}

const struct key *e2b_sandboxes_key(struct e2b_sandboxes *t, const char *id, const char *token)
{
	const struct key *k = NULL;
	size_t n = strlen(token);
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, NULL);
	/* The token's bytes are compared whole, whatever matched first. */
	if (p && n == E2B_TOKEN_HEX && !CRYPTO_memcmp((*p)->token, token, E2B_TOKEN_HEX))
		k = (*p)->key;
	pthread_mutex_unlock(&t->lock);
	return k;
}

int e2b_sandboxes_remove(struct e2b_sandboxes *t, const char *id, const struct key *key)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key), *gone = p ? *p : NULL;
	if (p)
		*p = gone->next;
	pthread_mutex_unlock(&t->lock);
	if (gone)
		sandbox_free(gone);
	return gone ? 0 : -ENOENT;
}

int e2b_sandboxes_set_end(struct e2b_sandboxes *t, const char *id, const struct key *key,
			  double end_unix)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	if (p)
		(*p)->end_unix = end_unix;
	pthread_mutex_unlock(&t->lock);
	return p ? 0 : -ENOENT;
}

int e2b_sandboxes_set_paused(struct e2b_sandboxes *t, const char *id, const struct key *key,
			     bool paused)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	if (p)
		(*p)->paused = paused;
	pthread_mutex_unlock(&t->lock);
	return p ? 0 : -ENOENT;
}

json_t *e2b_sandboxes_contexts(struct e2b_sandboxes *t, const char *id, const struct key *key)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	json_t *out = p ? json_deep_copy((*p)->contexts) : NULL;
	pthread_mutex_unlock(&t->lock);
	return out;
}

/* The index of the context named ctx in sb, or -1; the lock held. */
static ssize_t context_at(const struct e2b_sandbox *sb, const char *ctx)
{
	size_t i;
	json_t *c;
	json_array_foreach(sb->contexts, i, c) {
		const char *name = json_string_value(json_object_get(c, "id"));
		if (name && !strcmp(name, ctx))
			return (ssize_t)i;
	}
	return -1;
}

bool e2b_sandboxes_has_context(struct e2b_sandboxes *t, const char *id, const struct key *key,
			       const char *ctx)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	bool has = p && context_at(*p, ctx) >= 0;
	pthread_mutex_unlock(&t->lock);
	return has;
}

int e2b_sandboxes_add_context(struct e2b_sandboxes *t, const char *id, const struct key *key,
			      json_t *ctx, size_t most)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	int rc = !p ? -ENOENT
		 : json_array_size((*p)->contexts) >= most ? -EMFILE
		 : json_array_append((*p)->contexts, ctx) ? -ENOMEM
							  : 0;
	pthread_mutex_unlock(&t->lock);
	json_decref(ctx);
	return rc;
}

int e2b_sandboxes_remove_context(struct e2b_sandboxes *t, const char *id, const struct key *key,
				 const char *ctx)
{
	pthread_mutex_lock(&t->lock);
	struct e2b_sandbox **p = find_sandbox(t, id, key);
	ssize_t at = p ? context_at(*p, ctx) : -1;
	if (at >= 0)
		json_array_remove((*p)->contexts, (size_t)at);
	pthread_mutex_unlock(&t->lock);
	return at >= 0 ? 0 : -ENOENT;
}

/* Copies of the sandboxes that pick takes, and with take, takes them out
 * of the list. */
static int collect(struct e2b_sandboxes *t, bool (*pick)(const struct e2b_sandbox *, const void *),
		   const void *arg, bool take, struct e2b_sandbox **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&t->lock);
	size_t count = 0;
	for (struct e2b_sandbox *sb = t->head; sb; sb = sb->next)
		count += pick(sb, arg);
	struct e2b_sandbox *a = count ? calloc(count, sizeof *a) : NULL;
	if (count && !a) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	for (struct e2b_sandbox **p = &t->head; *p;) {
		struct e2b_sandbox *sb = *p;
		if (!pick(sb, arg)) {
			p = &sb->next;
			continue;
		}
		copy_out(sb, &a[(*n)++]);
		if (take) {
			*p = sb->next;
			sandbox_free(sb);
		} else {
			p = &sb->next;
		}
	}
	pthread_mutex_unlock(&t->lock);
	*out = a;
	return 0;
}

static bool of_key(const struct e2b_sandbox *sb, const void *key)
{
	return sb->key == key;
}

int e2b_sandboxes_list(struct e2b_sandboxes *t, const struct key *key, struct e2b_sandbox **out,
		       size_t *n)
{
	return collect(t, of_key, key, false, out, n);
}

static bool ended_by(const struct e2b_sandbox *sb, const void *now)
{
	return sb->end_unix <= *(const double *)now;
}

int e2b_sandboxes_expired(struct e2b_sandboxes *t, double now_unix, struct e2b_sandbox **out,
			  size_t *n)
{
	return collect(t, ended_by, &now_unix, true, out, n);
}
