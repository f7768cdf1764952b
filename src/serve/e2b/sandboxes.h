/* The E2B API's sandboxes (e2b.h): each one an agentjail session of the
 * same id, opened through the v1 API as its key's, with what E2B keeps
 * beside it: the template it was asked for, its metadata, its own access
 * token (the data plane's X-Access-Token) and when it ends (E2B's
 * timeout). In serve's memory: a restart forgets them (their sessions end
 * with serve anyway, on the local backend). */
#ifndef AJ_SERVE_E2B_SANDBOXES_H
#define AJ_SERVE_E2B_SANDBOXES_H

#include <jansson.h>
#include <stdbool.h>

struct key;

#define E2B_TOKEN_HEX 64 /* an access token: 256 random bits in hex */

struct e2b_sandbox {
	char id[40];                /* the session's */
	char token[E2B_TOKEN_HEX + 1];
	const struct key *key;      /* whose it is (the keyring lives as long as serve) */
	char template_id[64];
	json_t *metadata;           /* an object of strings; never NULL */
	double started_unix, end_unix;
	/* The code contexts created in it ([{"id", "language", "cwd"}]):
	 * the record's own, never in a copy (NULL there: e2b_sandboxes_contexts
	 * reads them). */
	json_t *contexts;
	bool paused;                /* its session paused (POST .../pause) */
	struct e2b_sandbox *next;
};

struct e2b_sandboxes;

struct e2b_sandboxes *e2b_sandboxes_new(void);
void e2b_sandboxes_free(struct e2b_sandboxes *t);
/* Adds sb (copied; its metadata reference taken), a fresh token made
 * here into sb->token first. 0, or -EIO (no random bytes), -ENOMEM. */
int e2b_sandboxes_add(struct e2b_sandboxes *t, struct e2b_sandbox *sb);
/* A copy of key's sandbox id (metadata with a reference of its own), for
 * key only: another key's answers as none (key NULL: any key's, for the
 * calls that carry none). 0, or -ENOENT. */
int e2b_sandboxes_get(struct e2b_sandboxes *t, const char *id, const struct key *key,
		      struct e2b_sandbox *out);
/* The key owning sandbox id if token is its token (compared in constant
 * time), else NULL. */
const struct key *e2b_sandboxes_key(struct e2b_sandboxes *t, const char *id, const char *token);
/* Forgets id (key's only): 0, or -ENOENT. */
int e2b_sandboxes_remove(struct e2b_sandboxes *t, const char *id, const struct key *key);
/* Sets key's sandbox id to end at end_unix: 0, or -ENOENT. */
/* Whether id's session is paused, as its state (info, list). */
int e2b_sandboxes_set_paused(struct e2b_sandboxes *t, const char *id, const struct key *key,
			     bool paused);
int e2b_sandboxes_set_end(struct e2b_sandboxes *t, const char *id, const struct key *key,
			  double end_unix);
/* Copies of key's sandboxes, newest first, into a malloc'ed array (*n):
 * free each's metadata and the array. 0, or -ENOMEM. */
int e2b_sandboxes_list(struct e2b_sandboxes *t, const struct key *key, struct e2b_sandbox **out,
		       size_t *n);
/* The code contexts of key's sandbox id: a copy (a new reference), or
 * NULL when there is no such sandbox. */
json_t *e2b_sandboxes_contexts(struct e2b_sandboxes *t, const char *id, const struct key *key);
/* Whether key's sandbox id has the context named ctx. */
bool e2b_sandboxes_has_context(struct e2b_sandboxes *t, const char *id, const struct key *key,
			       const char *ctx);
/* Adds ctx (its reference taken) to key's sandbox id: 0, -ENOENT, or
 * -EMFILE past most (a sandbox's contexts are its interpreter's
 * namespaces, which it bounds). */
int e2b_sandboxes_add_context(struct e2b_sandboxes *t, const char *id, const struct key *key,
			      json_t *ctx, size_t most);
/* Forgets the context named ctx of key's sandbox id: 0, or -ENOENT. */
int e2b_sandboxes_remove_context(struct e2b_sandboxes *t, const char *id, const struct key *key,
				 const char *ctx);
/* Takes out the sandboxes whose end has passed by now_unix (their ids and
 * keys into a malloc'ed array, *n): the caller closes their sessions. */
int e2b_sandboxes_expired(struct e2b_sandboxes *t, double now_unix, struct e2b_sandbox **out,
			  size_t *n);

#endif
