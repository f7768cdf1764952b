/* Webhook destinations (webhook_dest.h): an in-flight bound and a circuit
 * breaker per scheme://host:port. */
#include <stdlib.h>
#include <string.h>

#include "webhook.h"
#include "webhook_dest.h"

struct webhook_dest *webhook_dest_get(struct webhook_dests *ds, const char *where)
{
	for (struct webhook_dest *d = ds->head; d; d = d->next)
		if (!strcmp(d->where, where))
			return d;
	struct webhook_dest *d = calloc(1, sizeof *d);
	if (!d || !(d->where = strdup(where))) {
		free(d);
		return NULL;
	}
	d->next = ds->head;
	ds->head = d;
	return d;
}

bool webhook_dest_ready(const struct webhook_dest *d, double now, double *until)
{
	*until = 0;
	if (d->failures >= WEBHOOK_BREAK_AFTER) {
		/* Open: nothing until the cool-off ends; then half-open, one
		 * attempt alone, whose outcome closes or opens it again. */
		if (now < d->open_until) {
			*until = d->open_until;
			return false;
		}
		return d->inflight == 0;
	}
	/* A receiver that hangs holds this many delivery threads, no more:
	 * the others go on to other destinations. */
	return d->inflight < WEBHOOK_DEST_INFLIGHT;
}

void webhook_dest_begin(struct webhook_dest *d)
{
	d->inflight++;
}

bool webhook_dest_end(struct webhook_dest *d, bool ok, double now)
{
	if (d->inflight)
		d->inflight--;
	if (ok) {
		d->failures = 0;
		return false;
	}
	/* Failing fast for a while spares the delivery threads, and the
	 * receiver, attempts that would only time out too. */
	if (++d->failures < WEBHOOK_BREAK_AFTER || now < d->open_until)
		return false;
	d->open_until = now + WEBHOOK_BREAK_SEC * 1e3;
	return true;
}

void webhook_dests_free(struct webhook_dests *ds)
{
	while (ds->head) {
		struct webhook_dest *d = ds->head;
		ds->head = d->next;
		free(d->where);
		free(d);
	}
}
