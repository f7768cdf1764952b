/* The code interpreter's contexts (contexts.c). */
#ifndef AJ_SERVE_E2B_CONTEXTS_H
#define AJ_SERVE_E2B_CONTEXTS_H

#include "common.h"

/* E2B's language name as agentjail's (NULL: not offered). */
const char *e2b_language(const char *name);
/* Where a cell of context id ctx (NULL: the language's own) runs: 0 with
 * *aj (agentjail's language) and *named (the session's context to name in
 * the v1 call, or NULL for the interpreter's own); else -1 with the answer
 * (404 for a context the sandbox has not, 400 for a language not offered)
 * in c->rs. */
int e2b_context_of(struct e2b_call *c, const char *ctx, const char *lang, const char **aj,
		   const char **named);
/* GET and POST /contexts, DELETE /contexts/ID, POST /contexts/ID/restart. */
void e2b_contexts(struct e2b_call *c);

#endif
