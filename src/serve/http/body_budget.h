/* The bytes request bodies may hold in memory at once: a budget for the
 * whole server and one for each key (body_budget.c).
 *
 * Why: every body is read whole before its route runs, up to its route's
 * cap (8 MiB of JSON, 16 MiB of a session file), so 512 connections could
 * make serve hold gigabytes before any of them is admitted, and one key
 * could take what every tenant's requests need. A body reserves its bytes
 * before they are read (its Content-Length, or its buffer as a chunked
 * body grows) and gives them back when its request ends; a body that does
 * not fit is refused: 503 body_budget (the server's), 429 key_body_budget
 * (the key's), Retry-After 1. */
#ifndef AJ_SERVE_BODY_BUDGET_H
#define AJ_SERVE_BODY_BUDGET_H

#include <stddef.h>

enum body_budget_verdict { BODY_BUDGET_OK, BODY_BUDGET_SERVER, BODY_BUDGET_KEY };

/* cap bytes for all bodies, key_cap for one key's; slots: the most bodies
 * in flight at once (one a connection). 0, or -ENOMEM. */
int body_budget_init(size_t cap, size_t key_cap, unsigned slots);
void body_budget_destroy(void);
/* n more bytes for a body of key (opaque; NULL: requests without one). */
enum body_budget_verdict body_budget_reserve(const void *key, size_t n);
/* Gives back n bytes key reserved. */
void body_budget_release(const void *key, size_t n);
/* The caps, for the refusal's message. */
size_t body_budget_cap(void);
size_t body_budget_key_cap(void);

#endif
