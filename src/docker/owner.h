/* Which process made a container, so that containers whose maker died
 * mid-run (SIGKILL, a crash, a power cut) are found and removed by the next
 * one to open the docker tier: nothing is left behind for long. */
#ifndef AJ_DOCKER_OWNER_H
#define AJ_DOCKER_OWNER_H

#include <stdbool.h>

#include "http.h"

#define DOCKER_OWNER_LABEL "org.agentjail.owner"

/* This process as "BOOT_ID:PIDNS:PID:STARTTIME" (the boot, so that a pid of
 * an earlier boot is not taken for a live one; the pid namespace, so that
 * another namespace's pids are not looked up in ours; the start time, so
 * that a reused pid is not taken for the owner either). */
void docker_owner_self(char *out, size_t n);

/* Whether an owner string names a process of this boot and pid namespace
 * that is gone. Owners of another boot or namespace (another host or
 * container sharing the engine, or before a reboot) are not judged: false. */
bool docker_owner_is_gone(const char *owner);

/* Removes every container of agentjail's whose owner is gone; returns how
 * many, or -errno. */
int docker_sweep_orphans(struct http_conn *c, struct aj_error *err);

#endif
