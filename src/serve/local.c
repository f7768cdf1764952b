#include <string.h>

#include "../core/internal.h"
#include "local.h"

int local_open(struct local *l, const struct aj_config *base, struct aj_error *err)
{
	memset(l, 0, sizeof *l);
	l->base = *base;
	pthread_mutex_init(&l->lock, NULL);
	l->runners = (struct runners)RUNNERS_INIT;
	l->entries[0].limits = base->limits;
	egress_keep_all(base, &l->entries[0].keep);
	return aj_open(base, &l->entries[0].sb, err);
}

static bool same(const struct aj_limits *a, const struct aj_limits *b,
		 const struct egress_keep *ka, const struct egress_keep *kb)
{
	return ka->hosts == kb->hosts && ka->cidrs == kb->cidrs && a->wall_sec == b->wall_sec && a->cpu_sec == b->cpu_sec &&
	       a->memory_mb == b->memory_mb && a->pids == b->pids &&
	       a->file_size_mb == b->file_size_mb && a->disk_mb == b->disk_mb &&
	       a->output_kb == b->output_kb && a->open_files == b->open_files;
}

static struct local_entry *find(struct local *l, const struct aj_limits *limits,
				const struct egress_keep *keep)
{
	for (int i = 0; i < LOCAL_SANDBOXES; i++)
		if (l->entries[i].sb && same(&l->entries[i].limits, limits, &l->entries[i].keep, keep))
			return &l->entries[i];
	return NULL;
}

void local_run(struct local *l, const struct aj_limits *limits, const struct egress_keep *keep,
	       const char *code, size_t len, struct aj_cancel *cancel, struct aj_result *res)
{
	local_run_streaming(l, limits, keep, code, len, cancel, NULL, res);
}

void local_run_streaming(struct local *l, const struct aj_limits *limits,
			 const struct egress_keep *keep, const char *code, size_t len,
			 struct aj_cancel *cancel, const struct aj_stream *stream,
			 struct aj_result *res)
{
	struct egress_keep all;
	if (!keep) {
		egress_keep_all(&l->base, &all);
		keep = &all;
	}
	pthread_mutex_lock(&l->lock);
	struct local_entry *e = find(l, limits, keep);
	if (e) {
		e->refs++;
		e->used = ++l->tick;
	}
	pthread_mutex_unlock(&l->lock);

	if (!e) {
		/* Opened outside the lock: a tier's open can take a while, and
		 * other runs should not wait for it. */
		struct aj_config cfg = l->base;
		cfg.limits = *limits;
		const char *hosts[AJ_MAX_EGRESS_RULES], *cidrs[AJ_MAX_EGRESS_RULES];
		egress_keep_apply(&l->base, keep, &cfg, hosts, cidrs);
		struct aj_sandbox *sb;
		struct aj_error err = {0};
		if (aj_open(&cfg, &sb, &err)) {
			result_init(res);
			result_sandbox_error(res, "%s", err.message);
			return;
		}
		pthread_mutex_lock(&l->lock);
		e = find(l, limits, keep);
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
				*e = (struct local_entry){
					.limits = *limits, .keep = *keep, .sb = sb, .refs = 1};
				sb = NULL;
			}
		}
		if (e)
			e->used = ++l->tick;
		pthread_mutex_unlock(&l->lock);
		if (!e) {
			/* Every place is busy: this one serves one run. */
			aj_run_streaming(sb, code, len, cancel, stream, res);
			aj_close(sb);
			return;
		}
		if (sb)
			aj_close(sb);
	}
	aj_run_streaming(e->sb, code, len, cancel, stream, res);
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
