/* What a sandbox whose PID 1 is boot.py is made of (see spec.h). */
#include <jansson.h>
#include <string.h>
#include <sys/socket.h>

#include "../core/contract.h"
#include "spec.h"

#include "docker_boot.inc"     /* docker_boot_py: boot.py, beside this file */
#include "launch.inc"          /* launch_py: src/core/launch.py, boot.py's argv[1] */
#include "docker_seccomp.inc"  /* docker_seccomp_profile: src/linux/seccomp_policy.c */

/* Rule E1's environment as JSON strings, appended to arr (an array): the
 * table, its egress rows with egress, the deployer's variables. */
static json_t *append_environment(json_t *arr, bool egress, const struct aj_config *cfg)
{
	char *envp[CONTRACT_ENVIRONMENT_MAX + 1];
	size_t n = contract_environment_fill(envp, egress, cfg);
	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, json_string(envp[i]))) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

json_t *boot_argv(const char *python, bool egress, const struct aj_config *cfg)
{
	return append_environment(
		json_pack("[s, s, s, s, s, s]", python, "-I", "-S", "-c", docker_boot_py, launch_py),
		egress, cfg);
}

json_t *boot_environment(bool egress, const struct aj_config *cfg)
{
	return append_environment(json_array(), egress, cfg);
}

static bool string_is(json_t *j, const char *want)
{
	const char *s = json_string_value(j);
	return s && !strcmp(s, want);
}

/* Whether a profile's rule is the policy's refusal of socket(AF_UNIX). */
static bool is_unix_socket_rule(json_t *rule)
{
	json_t *names = json_object_get(rule, "names");
	json_t *args = json_object_get(rule, "args");
	json_t *arg = json_array_get(args, 0);
	return json_array_size(names) == 1 &&
	       string_is(json_array_get(names, 0), "socket") &&
	       json_array_size(args) == 1 &&
	       json_integer_value(json_object_get(arg, "index")) == 0 &&
	       json_integer_value(json_object_get(arg, "value")) == AF_UNIX &&
	       string_is(json_object_get(arg, "op"), "SCMP_CMP_EQ");
}

json_t *boot_seccomp(bool egress)
{
	json_t *profile = json_loads(boot_seccomp_json(), 0, NULL);
	json_t *rules = json_object_get(profile, "syscalls");
	if (!json_is_array(rules)) {
		json_decref(profile);
		return NULL;
	}
	if (!egress)
		return profile;
	for (size_t i = 0; i < json_array_size(rules); i++)
		if (is_unix_socket_rule(json_array_get(rules, i))) {
			json_array_remove(rules, i);
			return profile;
		}
	json_decref(profile);
	return NULL;
}

struct rlimit_list {
	json_t *arr;
	bool oci;
};

static int append_rlimit(const struct contract_rlimit *row, uint64_t soft, uint64_t hard,
			 void *ctx)
{
	struct rlimit_list *list = ctx;
	const char *name = list->oci ? row->oci : row->docker;
	if (!name)
		return 0;
	json_t *item = list->oci ? json_pack("{s:s, s:I, s:I}", "type", name, "soft",
					     (json_int_t)soft, "hard", (json_int_t)hard)
				 : json_pack("{s:s, s:I, s:I}", "Name", name, "Soft",
					     (json_int_t)soft, "Hard", (json_int_t)hard);
	return json_array_append_new(list->arr, item);
}

struct aj_limits boot_limits(const struct aj_limits *l, bool egress)
{
	struct aj_limits bl = *l;
	if (egress)
		bl.pids += BOOT_EGRESS_TASKS;
	return bl;
}

json_t *boot_rlimits(const struct aj_limits *l, bool oci)
{
	/* The address space row on gvisor only (see its row). */
	struct rlimit_list list = {json_array(), oci};
	if (list.arr && contract_rlimits_each(l, oci, true, append_rlimit, &list)) {
		json_decref(list.arr);
		return NULL;
	}
	return list.arr;
}

const char *boot_seccomp_json(void)
{
	return docker_seccomp_profile;
}

void boot_disk_split(uint32_t disk_mb, struct boot_disk *d)
{
	uint64_t total = (uint64_t)disk_mb * 1024;
	/* /tmp holds the workspace and gets most; /dev/shm and /var/tmp an
	 * eighth each, so that together they never pass the limit. */
	d->shm_kb = total / 8;
	d->var_tmp_kb = total / 8;
	d->tmp_kb = total - d->shm_kb - d->var_tmp_kb;
}
