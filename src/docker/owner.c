/* Containers' owners, and the sweep of orphans (see owner.h). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "owner.h"

static void boot_id(char *out, size_t n)
{
	out[0] = 0;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (fgets(out, (int)n, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
}

/* Field 22 of /proc/PID/stat: when the process started, in clock ticks
 * since boot. 0 if the process is not there. */
static unsigned long long start_time(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = 0;
	/* The command name may hold spaces and parentheses: count from the
	 * last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long t = 0;
	int field = 2;
	char *save = NULL;
	for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (++field == 22) {
			t = strtoull(tok, NULL, 10);
			break;
		}
	return t;
}

/* The pid namespace pids are counted in: a pid means something only
 * there (an agentjail in a container sharing the engine has its own). */
static unsigned long long pid_ns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void docker_owner_self(char *out, size_t n)
{
	char id[64];
	boot_id(id, sizeof id);
	snprintf(out, n, "%s:%llu:%ld:%llu", id, pid_ns(), (long)getpid(), start_time(getpid()));
}

bool docker_owner_is_gone(const char *owner)
{
	char id[64], mine[64];
	long pid;
	unsigned long long ns, started;
	if (!owner || sscanf(owner, "%63[^:]:%llu:%ld:%llu", id, &ns, &pid, &started) != 4 ||
	    pid <= 0)
		return false;
	boot_id(mine, sizeof mine);
	if (!mine[0] || strcmp(id, mine) || !ns || ns != pid_ns())
		return false;
	return start_time(pid) != started;
}

int docker_sweep_orphans(struct http_conn *c, struct aj_error *err)
{
	json_t *list = NULL;
	int rc = docker_call(c, "GET",
			     "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22" DOCKER_OWNER_LABEL
			     "%22%5D%7D",
			     NULL, "list containers", NULL, &list, err);
	if (rc)
		return rc;
	int removed = 0;
	size_t i;
	json_t *ct;
	json_array_foreach(list, i, ct) {
		const char *id = json_string_value(json_object_get(ct, "Id"));
		const char *owner = json_string_value(
			json_object_get(json_object_get(ct, "Labels"), DOCKER_OWNER_LABEL));
		if (!id || strspn(id, "0123456789abcdef") != strlen(id) ||
		    !docker_owner_is_gone(owner))
			continue;
		char path[128];
		snprintf(path, sizeof path, "/containers/%.64s?force=1&v=1", id);
		struct aj_error e = {0};
		if (docker_call(c, "DELETE", path, NULL, "remove an orphan", NULL, NULL, &e) == 0)
			removed++;
	}
	json_decref(list);
	return removed;
}
