/* A run's answer and the admission's refusals (answer.c). */
#ifndef AJ_SERVE_ANSWER_H
#define AJ_SERVE_ANSWER_H

#include <jansson.h>

#include "admit.h"
#include "agentjail.h"
#include "../http/respond.h"

struct service;

/* A run's result as the contract object with its "run_id", counted in the
 * metrics (t0: when it was admitted, now_ms() / 1e3); frees res. NULL
 * only when memory ran out. What respond_run answers, and a recorded run's
 * result event. */
json_t *run_answer(struct service *svc, const char *id, struct aj_result *res, double t0);
/* run_answer as the 200 answer. */
void respond_run(struct service *svc, struct http_response *rs, const char *id,
		 struct aj_result *res, double t0);
/* A queue place, then the run's turn (admit.h): 0, or -1 with the
 * refusal (429 or 503, Retry-After) in rs. admit_finish after the run. */
int service_admit(struct service *svc, struct key_use *u, struct http_response *rs);
/* Its two halves, for a run that waits for its turn on a thread of its
 * own: the queue place (admit_abandon if the run goes no further), then
 * the turn; each 0, or -1 with the refusal in rs; the turn 1 when t (NULL:
 * none) was called off meanwhile: it left the queue. */
int service_admit_enter(struct service *svc, struct key_use *u, struct http_response *rs);
int service_admit_start(struct service *svc, struct key_use *u, struct admit_ticket *t,
			struct http_response *rs);

#endif
