/* A caller's own limits for one run or session: each may only narrow the
 * deployer's, never widen it, and a value out of range is refused with its
 * name rather than quietly clamped. */
#ifndef AJ_SERVE_NARROW_H
#define AJ_SERVE_NARROW_H

#include <jansson.h>

#include "agentjail.h"
#include "request_env.h"

/* Fills *out from base and the JSON object obj (NULL: base as it is).
 * 0, or -EINVAL with err naming the field ("limits.memory_mb: ..."). */
int limits_narrow(const struct aj_config *base, json_t *obj, struct aj_limits *out,
		  struct aj_error *err);
/* The limits as a JSON object with the same field names. */
json_t *limits_to_json(const struct aj_limits *l);

/* Which of the deployer's egress rules a run or session keeps: bit i of
 * hosts is base->allow_hosts[i], of cidrs base->allow_cidrs[i]. A request
 * names rules only from the deployer's list, so it can drop some but
 * never add one. named_*: the request gave that list (a worker behind a
 * queue then narrows its own rules to the same names). */
struct egress_keep {
	uint32_t hosts, cidrs;
	bool named_hosts, named_cidrs;
};
/* From a request body's "allow_hosts" and "allow_cidrs" (each optional: an
 * array of rules, exactly as the deployer wrote them). 0, or -EINVAL with
 * err naming the field and the rule. */
int egress_narrow(const struct aj_config *base, json_t *body, struct egress_keep *out,
		  struct aj_error *err);
/* Every rule of base kept, as when a request names none. */
void egress_keep_all(const struct aj_config *base, struct egress_keep *out);
/* cfg (a copy of base) with only the kept rules; the lists are written
 * into hosts and cidrs, which must live as long as cfg is used. */
void egress_keep_apply(const struct aj_config *base, const struct egress_keep *k,
		       struct aj_config *cfg, const char *hosts[AJ_MAX_EGRESS_RULES],
		       const char *cidrs[AJ_MAX_EGRESS_RULES]);
/* A session's run-time narrowing (POST /v1/sessions/ID/egress): keeps
 * only the body's "allow_hosts" and "allow_cidrs", each an array of rules
 * (absent: none of that kind stays), through aj_session_egress_keep, which
 * checks them against the session's rules. 0; -EINVAL naming a bad field,
 * or aj_session_egress_keep's answer (-EPERM naming a rule it lacks,
 * -ESHUTDOWN once the session closed). */
int egress_session_keep(struct aj_session *s, json_t *body, struct aj_error *err);
/* The answer to that narrowing: {"allow_hosts": [...], "allow_cidrs":
 * [...]}, the rules the session keeps now (an absent list as []). */
json_t *egress_kept_json(json_t *body);
/* The lists the request named, set on obj (a request to a worker) as
 * "allow_hosts" and "allow_cidrs". 0, or -1 when out of memory. */
int egress_keep_to_json(const struct aj_config *base, const struct egress_keep *k, json_t *obj);

/* All a request may ask of one run or session, each within the deployer's
 * bounds: narrower limits, fewer egress rules, more environment variables
 * (request_env.h), and a run's language (a session's calls name their
 * own: call_body.h). A copy is a plain assignment. */
struct run_terms {
	struct aj_limits limits;
	struct egress_keep keep;
	struct request_env env;
	enum aj_language lang; /* the run's code: AJ_LANG_PYTHON unless named */
	/* The joined secrets (call_secrets.h) when the key or the request
	 * gave any; NULL: the deployer's own (base->secrets). Borrowed: the
	 * route that joined them frees them once the run or the opening is
	 * over, and a copy that outlives it (a recorded run's) takes its own.
	 * Never set by terms_narrow, which reads no secrets: a worker's
	 * request never has any. */
	const char *secrets;
};
/* A body's "language" (absent: Python), by aj_language_parse: 0, or
 * -EINVAL with err naming the field and the accepted names. The one
 * reading of it, for runs (terms_narrow) and session calls alike. */
int language_field(json_t *body, enum aj_language *out, struct aj_error *err);
/* The deployer's own: what a request that names none gets. */
void terms_default(const struct aj_config *base, struct run_terms *t);
/* From a request body's "limits", "allow_hosts", "allow_cidrs", "env" and
 * "language" (each optional). 0, or -EINVAL with err naming the field and
 * *code the answer's code: "bad_limits", "bad_egress", "bad_env" or
 * "bad_language". */
int terms_narrow(const struct aj_config *base, json_t *body, struct run_terms *t,
		 const char **code, struct aj_error *err);
/* What a config made from t points to; it must live as long as the config. */
struct terms_lists {
	const char *hosts[AJ_MAX_EGRESS_RULES], *cidrs[AJ_MAX_EGRESS_RULES];
	const char *env[AJ_MAX_ENV];
};
/* cfg: base under t. */
void terms_apply(const struct aj_config *base, const struct run_terms *t, struct aj_config *cfg,
		 struct terms_lists *lists);
/* t on obj, a request to a worker ("limits", the rules by name, "env"),
 * for the worker to narrow its own deployer's config the same way. 0, or
 * -1 when out of memory or when t has secrets (they never go in a request
 * to a worker: it travels through Redis). */
int terms_to_json(const struct aj_config *base, const struct run_terms *t, json_t *obj);
/* Whether a sandbox opened under a serves b too; never when either has
 * secrets of a key's or a request's (such a sandbox is not shared). */
bool terms_same(const struct run_terms *a, const struct run_terms *b);

#endif
