/* Serve's checkpoints on disk (docs/checkpoints.md#serve): a directory
 * per key under --checkpoint-dir, mode 0700, each checkpoint a file of the
 * library's (authenticated under the store's own key, DIR/key) beside a
 * small record of it; and the sessions that were paused when serve
 * stopped, kept the same way until their key next asks for them.
 *
 * A key reaches only its own directory: the id of another key's
 * checkpoint is looked up where it is not, and answers as a missing one.
 * Every checkpoint expires ttl seconds after it was made, and one that
 * would take a key past quota bytes is not kept. */
#ifndef AJ_SERVE_CKPT_STORE_H
#define AJ_SERVE_CKPT_STORE_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "agentjail.h"

struct ckpt_store {
	char dir[PATH_MAX - 128];
	struct aj_checkpoint_key key;
	double ttl_sec;
	uint64_t quota; /* bytes per key */
	pthread_mutex_t lock; /* a key's count against its quota, and its files */
};

/* Makes dir (0700) if need be and its key (DIR/key, made once); an
 * existing dir must be a directory of this uid's, 0700 or stricter. */
int ckpt_store_open(struct ckpt_store *st, const char *dir, double ttl_sec, unsigned quota_mb,
		    struct aj_error *err);
void ckpt_store_close(struct ckpt_store *st);

/* owner, below: serve's name for a key, lowercase hex of 1 to 64 digits
 * (session_state.c gives its hash's); anything else is refused (-EINVAL).
 *
 * A checkpoint of s for the key named owner, from the session named
 * from, named name (NULL: no name): its record ({"id", "session",
 * "name"?, "created", "expires", "bytes", "files", "left_out", "note"}) in
 * *out. -EDQUOT when it would take the key
 * past its quota (none is kept), or the library's -errno; err says why. */
int ckpt_store_save(struct ckpt_store *st, const char *owner, struct aj_session *s,
		    const char *from, const char *name, json_t **out, struct aj_error *err);
/* A new session under cfg from owner's checkpoint id: -ENOENT when the
 * key has none of that id (or it expired), else as aj_session_restore. */
int ckpt_store_restore(struct ckpt_store *st, const char *owner, const char *id,
		       const struct aj_config *cfg, struct aj_session **out,
		       struct aj_checkpoint_info *info, struct aj_error *err);
/* owner's records, newest first: {"checkpoints": [...], "bytes", "quota"}. */
json_t *ckpt_store_list(struct ckpt_store *st, const char *owner);
/* One record (NULL: none of owner's); deletes one (-ENOENT: none). */
json_t *ckpt_store_get(struct ckpt_store *st, const char *owner, const char *id);
int ckpt_store_delete(struct ckpt_store *st, const char *owner, const char *id);

/* A paused session kept over serve's stop: s (paused; it is not woken)
 * under its id, with terms (the body that opened it, its egress as it
 * was narrowed) to open it again by. */
int ckpt_store_keep_paused(struct ckpt_store *st, const char *owner, const char *id,
			   struct aj_session *s, json_t *terms, struct aj_error *err);
/* owner's paused session id, if serve kept one: 0 with *terms (the
 * caller's) and the files left until ckpt_store_paused_done; -ENOENT. */
int ckpt_store_paused(struct ckpt_store *st, const char *owner, const char *id, json_t **terms);
/* Opens it under cfg (-ENOENT as above). */
int ckpt_store_paused_open(struct ckpt_store *st, const char *owner, const char *id,
			   const struct aj_config *cfg, struct aj_session **out,
			   struct aj_error *err);
/* Forgets it: opened again, or deleted. */
void ckpt_store_paused_done(struct ckpt_store *st, const char *owner, const char *id);

#endif
