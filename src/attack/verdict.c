/* attack_judge (see verdict.h). */
#include <stdio.h>

#include "verdict.h"

void attack_evidence_init(struct attack_evidence *e)
{
	*e = (struct attack_evidence){
		.ran = true,
		.status = AJ_STATUS_OK,
		.token_seen = -1,
		.marker_written = -1,
		.sentinel_alive = -1,
		.listener_accepted = -1,
		.procs_left = -1,
		.max_procs = -1,
		.mounts_changed = -1,
		.egress_allowed_arrived = -1,
		.disk_drop_mb = -1,
		.missing = -1,
	};
}

const char *attack_verdict_name(enum attack_verdict v)
{
	switch (v) {
	case VERDICT_HELD: return "held";
	case VERDICT_ESCAPED: return "ESCAPED";
	case VERDICT_NA: return "n/a";
	case VERDICT_ERROR: return "error";
	}
	return "?";
}

enum attack_verdict attack_judge(const struct attack_expect *x, const struct attack_evidence *e,
				 char *why, size_t n)
{
	if (!e->ran) {
		snprintf(why, n, "tier not available");
		return VERDICT_NA;
	}
	/* The escapes first: any one of them outweighs how the run ended. */
	if (e->token_seen == 1)
		return snprintf(why, n, "secret token came out"), VERDICT_ESCAPED;
	if (e->marker_written == 1)
		return snprintf(why, n, "wrote on the host"), VERDICT_ESCAPED;
	if (e->sentinel_alive == 0)
		return snprintf(why, n, "killed a host process"), VERDICT_ESCAPED;
	if (e->listener_accepted == 1)
		return snprintf(why, n, "reached a host listener"), VERDICT_ESCAPED;
	if (e->procs_left > 0)
		return snprintf(why, n, "%d process(es) outlived it", e->procs_left), VERDICT_ESCAPED;
	if (e->mounts_changed == 1)
		return snprintf(why, n, "changed the host's mounts"), VERDICT_ESCAPED;
	if (x->max_procs && e->max_procs > (int)x->max_procs)
		return snprintf(why, n, "%d processes at once", e->max_procs), VERDICT_ESCAPED;
	if (x->max_disk_mb && e->disk_drop_mb > (int64_t)x->max_disk_mb)
		return snprintf(why, n, "took %lld MiB of host disk", (long long)e->disk_drop_mb),
		       VERDICT_ESCAPED;
	if (x->max_output && e->output_bytes > x->max_output)
		return snprintf(why, n, "%zu bytes of output", e->output_bytes), VERDICT_ESCAPED;
	/* (Ended by the memory limit, as the tier saw it, it held: a peak
	 * counted as RSS can pass the limit by file pages charged elsewhere,
	 * such as node's binary, cached before the container started.) */
	if (x->max_memory_kb && e->status != AJ_STATUS_MEMORY && e->memory_kb > x->max_memory_kb)
		return snprintf(why, n, "held %llu MiB", (unsigned long long)(e->memory_kb >> 10)),
		       VERDICT_ESCAPED;
	/* What the image does not have, the program could not run: nothing
	 * is known of the tier either way (the escapes above still count). */
	if (e->missing == 1)
		return snprintf(why, n, "not in the image"), VERDICT_NA;
	/* A sandbox that failed proves nothing either way. */
	if (e->status == AJ_STATUS_SANDBOX_ERROR)
		return snprintf(why, n, "sandbox_error"), VERDICT_ERROR;
	if (x->stopped_by && !(x->stopped_by & (1u << e->status)))
		return snprintf(why, n, "not stopped: %s", aj_status_name(e->status)), VERDICT_ESCAPED;
	if (x->must_finish && e->status != AJ_STATUS_OK)
		return snprintf(why, n, "did not finish: %s", aj_status_name(e->status)), VERDICT_ERROR;
	if (e->egress_allowed_arrived == 0)
		return snprintf(why, n, "the allowed request never arrived"), VERDICT_ERROR;
	/* Held: say by what. */
	if (e->egress_allowed_arrived == 1 && e->listener_accepted == 0)
		snprintf(why, n, "only proxied arrived");
	else if (e->listener_accepted == 0)
		snprintf(why, n, "nothing accepted");
	else if (e->sentinel_alive == 1)
		snprintf(why, n, "sentinel alive");
	else if (e->token_seen == 0)
		snprintf(why, n, "token not seen");
	else if (e->marker_written == 0 && !x->stopped_by)
		snprintf(why, n, "no marker on host");
	else if (x->max_procs && e->max_procs >= 0)
		snprintf(why, n, "at most %d tasks", e->max_procs);
	else if (e->mounts_changed == 0)
		snprintf(why, n, "host mounts unchanged");
	else
		snprintf(why, n, "%s", aj_status_name(e->status));
	return VERDICT_HELD;
}
