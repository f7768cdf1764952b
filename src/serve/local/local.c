#include <string.h>

#include "../../core/internal.h"
#include "local.h"

int local_open(struct local *l, const struct aj_config *base, struct aj_error *err)
{
	memset(l, 0, sizeof *l);
	l->base = *base;
	pthread_mutex_init(&l->lock, NULL);
	l->runners = (struct runners)RUNNERS_INIT;
	terms_default(base, &l->entries[0].terms);
	return aj_open(base, &l->entries[0].sb, err);
}

static struct local_entry *find(struct local *l, const struct run_terms *t)
{
	for (int i = 0; i < LOCAL_SANDBOXES; i++)
		if (l->entries[i].sb && terms_same(&l->entries[i].terms, t))
			return &l->entries[i];
	return NULL;
}

void local_run(struct local *l, const struct run_terms *t, const char *code, size_t len,
	       struct aj_cancel *cancel, struct aj_result *res)
{
	local_run_streaming(l, t, code, len, cancel, NULL, res);
}

void local_run_streaming(struct local *l, const struct run_terms *t, const char *code,
			 size_t len, struct aj_cancel *cancel, const struct aj_stream *stream,
			 struct aj_result *res)
{
	if (!t)
		t = &l->entries[0].terms; /* the deployer's, set once at open */
	pthread_mutex_lock(&l->lock);
	struct local_entry *e = find(l, t);
	if (e) {
		e->refs++;
		e->used = ++l->tick;
	}
	pthread_mutex_unlock(&l->lock);

	if (!e) {
		/* Opened outside the lock: a tier's open can take a while, and
		 * other runs should not wait for it. */
		struct aj_config cfg;
		struct terms_lists lists;
		terms_apply(&l->base, t, &cfg, &lists);
		struct aj_sandbox *sb;
		struct aj_error err = {0};
		if (aj_open(&cfg, &sb, &err)) {
			result_init(res);
			result_sandbox_error(res, "%s", err.message);
			return;
		}
		if (t->secrets) {
			/* A sandbox with a key's or a request's secrets serves this
			 * run and is closed: no credential stays in serve past the
			 * request that brought it, nor reaches another's run. */
			aj_run_lang(sb, t->lang, code, len, cancel, stream, res);
			aj_close(sb);
			return;
		}
		pthread_mutex_lock(&l->lock);
		e = find(l, t);
		if (e) {
			e->refs++; /* another thread opened the same meanwhile */
		} else {
			/* A free place, else the least recently used idle one. */
			for (int i = 1; i < LOCAL_SANDBOXES; i++) {
				struct local_entry *c = &l->entries[i];
				if (!c->sb) {
					e = c;
					break;
				}
				if (!c->refs && (!e || c->used < e->used))
					e = c;
			}
			if (e && e->sb)
				aj_close(e->sb);
			if (e) {
				e->terms = *t;
				e->sb = sb;
				e->refs = 1;
				sb = NULL;
			}
		}
		if (e)
			e->used = ++l->tick;
		pthread_mutex_unlock(&l->lock);
		if (!e) {
			/* Every place is busy: this one serves one run. */
			aj_run_lang(sb, t->lang, code, len, cancel, stream, res);
			aj_close(sb);
			return;
		}
		if (sb)
			aj_close(sb);
	}
	aj_run_lang(e->sb, t->lang, code, len, cancel, stream, res);
	pthread_mutex_lock(&l->lock);
	e->refs--;
	pthread_mutex_unlock(&l->lock);
}

void local_close(struct local *l)
{
	for (int i = 0; i < LOCAL_SANDBOXES; i++)
		if (l->entries[i].sb)
			aj_close(l->entries[i].sb);
	pthread_mutex_destroy(&l->lock);
	memset(l->entries, 0, sizeof l->entries);
}
