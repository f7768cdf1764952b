/* Warm mode, host side: one zygote per open sandbox of the process or
 * container tier, and the runs forked from it. See warm.c. */
#ifndef AJ_WARM_H
#define AJ_WARM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"
#include "../core/pool.h"
#include "../linux/jail.h"

struct warm_zygote;

struct warm {
	pthread_mutex_t lock;
	struct warm_zygote *current;   /* NULL: none yet, or retired */
	/* The one that replaces current when it retires, started ahead by
	 * the pool's thread so that no run waits for a zygote to start: a
	 * pool of one (its slot, next). */
	struct pool pool;
	struct warm_zygote *next[1];
	/* The tier's own work ahead of the next run (the container tier's
	 * next cgroup): called by the pool's thread, outside the lock, each
	 * time it wakes (warm_kick, or once a second). NULL: none. Set
	 * before warm_prestart. */
	void (*idle)(void *ctx);
	void *idle_ctx;
	struct jail_spec base;         /* the zygote's sandbox: view, python, preload */
	uint32_t seq;
	/* For tests and bench (agentjail's own): zygotes started, and how
	 * many of them were replaced because they died or broke. */
	uint32_t started, replaced;
};

/* The zygote's sandbox is built from base (its setup_root and tier data
 * must outlive w); none is started until the first run. */
void warm_init(struct warm *w, const struct jail_spec *base);
/* Ends the zygote (and any run still going on it). */
void warm_destroy(struct warm *w);

/* Starts the zygote now (an open that must fail early if the preload
 * cannot be imported): 0, or -errno with err. */
int warm_prestart(struct warm *w, struct aj_error *err);

/* Wakes the filler: a run has ended, so the tier's idle work may be due. */
void warm_kick(struct warm *w);

/* One warm run of s->code, with s's uid, limits and cgroup (join_cgroups
 * for v1 or cgroup_fd for v2): fills res fully; 0 if the program ran,
 * -errno if the sandbox could not be built. */
int warm_run(struct warm *w, const struct jail_spec *s, struct aj_result *res);

/* A warm run's sandbox made ahead (warm_prepare): its init, cloned by the
 * zygote, has built the namespaces, view and workspace on the uid slot of
 * the spec it was made for, and waits for "go" and the program on go_w.
 * It holds a reference on its zygote, which its init dies with. */
struct warm_ready {
	int pidfd;                      /* init (the zygote's child, not ours) */
	int out_r, err_r, report_r;
	int go_w;                       /* "go", then the source, then EOF */
	struct warm_zygote *zygote;
};
/* Makes s's sandbox ahead (s->code is not read). 0, or -errno with err. */
int warm_prepare(struct warm *w, const struct jail_spec *s, struct warm_ready *r,
		 struct aj_error *err);
/* Runs s->code in r under s's limits, cancel_fd and stream: as warm_run,
 * then discards r (one sandbox made ahead serves exactly one run). */
int warm_run_ready(struct warm *w, struct warm_ready *r, const struct jail_spec *s,
		   struct aj_result *res);
/* Whether r is still to be used: made on the zygote that serves now. */
bool warm_ready_usable(struct warm *w, const struct warm_ready *r);
/* Ends r's init unused (if it is still there) and frees what r holds. */
void warm_ready_discard(struct warm *w, struct warm_ready *r);

#endif
