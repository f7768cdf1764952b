/* cfg.ro_binds: host paths a deployer shows every run, read-only. This file
 * owns their syntax (aj_config_validate), their resolution when a sandbox
 * opens, and the split the tiers read back; src/linux/binds.c mounts them for
 * the jail-based tiers, and the docker and gvisor tiers put them in their
 * specs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* What the tiers make for the run itself, which a bind must not cover or
 * land in: /proc, /dev and /sys are built for each run, and /tmp and
 * /var/tmp are its writable space (the workspace is /tmp/work), whose
 * --disk bound a bind in it would confuse. */
static const char *const run_owned[] = {"/proc", "/dev", "/sys", "/tmp", "/var/tmp"};

/* An absolute path with no empty, "." or ".." component and no trailing
 * slash (but "/"): the form in which the path the deployer wrote is the
 * path the mount lands on. The colon separates HOST from SANDBOX. */
static const char *path_problem(const char *p, size_t n)
{
	if (n == 0 || p[0] != '/')
		return "is not an absolute path";
	if (n >= RO_BIND_PATH_MAX)
		return "is too long";
	if (memchr(p, ':', n))
		return "has a colon (one separates HOST from SANDBOX)";
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && p[j] != '/')
			j++;
		size_t c = j - i - 1; /* the component after p[i] == '/' */
		if ((c == 0 && !(n == 1)) || (c == 1 && p[i + 1] == '.') ||
		    (c == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
			return "is not in plain form (an empty, '.' or '..' part, or a trailing '/')";
		i = j;
	}
	return NULL;
}

bool path_is_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int ro_bind_split(const char *spec, char host[RO_BIND_PATH_MAX], char target[RO_BIND_PATH_MAX])
{
	const char *colon = strchr(spec, ':');
	size_t hn = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *t = colon ? colon + 1 : spec;
	size_t tn = strlen(t);
	if (hn >= RO_BIND_PATH_MAX || tn >= RO_BIND_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(host, spec, hn);
	host[hn] = '\0';
	memcpy(target, t, tn + 1);
	return 0;
}

static int check_one(const char *spec, struct aj_error *err)
{
	if (!spec)
		return error_set(err, -EINVAL, "ro_bind: an entry is missing (NULL)");
	const char *colon = strchr(spec, ':');
	size_t hn = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *t = colon ? colon + 1 : spec;
	const char *why;
	if ((why = path_problem(spec, hn)))
		return error_set(err, -EINVAL, "ro_bind: '%s': HOST %s", spec, why);
	if ((why = path_problem(t, strlen(t))))
		return error_set(err, -EINVAL, "ro_bind: '%s': SANDBOX %s", spec, why);
	if (strcmp(t, "/") == 0)
		return error_set(err, -EINVAL, "ro_bind: '%s': SANDBOX cannot be / (the whole view)",
				 spec);
	for (size_t i = 0; i < sizeof run_owned / sizeof run_owned[0]; i++)
		if (path_is_under(t, run_owned[i]))
			return error_set(err, -EINVAL,
					 "ro_bind: '%s': SANDBOX is under %s, which each run makes "
					 "for itself (choose a path such as /mnt/NAME)",
					 spec, run_owned[i]);
	return 0;
}

int ro_bind_check(const struct aj_config *cfg, struct aj_error *err)
{
	if (cfg->ro_bind_count == 0)
		return 0;
	if (!cfg->ro_binds)
		return error_set(err, -EINVAL, "ro_bind: %u entries given but no list",
				 cfg->ro_bind_count);
	if (cfg->ro_bind_count > AJ_MAX_RO_BINDS)
		return error_set(err, -EINVAL, "ro_bind: %u paths is more than %d", cfg->ro_bind_count,
				 AJ_MAX_RO_BINDS);
	/* The guest runs on its own kernel from its image: no host filesystem
	 * reaches it, and making one reach it is what the tier is for not
	 * doing. Refused rather than silently missing. */
	if (cfg->tier == AJ_TIER_MICROVM)
		return error_set(err, -EINVAL,
				 "ro_bind: the microvm tier shows no host path (its guest sees only "
				 "its image; put files into a session instead)");
	int rc;
	for (uint32_t i = 0; i < cfg->ro_bind_count; i++) {
		if ((rc = check_one(cfg->ro_binds[i], err)))
			return rc;
		char hi[RO_BIND_PATH_MAX], ti[RO_BIND_PATH_MAX], hj[RO_BIND_PATH_MAX],
			tj[RO_BIND_PATH_MAX];
		ro_bind_split(cfg->ro_binds[i], hi, ti);
		for (uint32_t j = 0; j < i; j++) {
			ro_bind_split(cfg->ro_binds[j], hj, tj);
			if (strcmp(ti, tj) == 0)
				return error_set(err, -EINVAL,
						 "ro_bind: '%s' and '%s' both go to %s", cfg->ro_binds[j],
						 cfg->ro_binds[i], ti);
		}
	}
	return 0;
}

int ro_bind_resolve(const char *spec, char **out, struct aj_error *err)
{
	char host[RO_BIND_PATH_MAX], target[RO_BIND_PATH_MAX], real[PATH_MAX];
	*out = NULL;
	ro_bind_split(spec, host, target);
	/* Resolved once, here: a symlink swapped later changes nothing of what
	 * the runs see, and the mount never follows a link at run time. */
	if (!realpath(host, real))
		return error_set(err, -errno, "ro_bind: %s: %s", host, strerror(errno));
	struct stat st;
	if (stat(real, &st) < 0)
		return error_set(err, -errno, "ro_bind: %s: %s", host, strerror(errno));
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return error_set(err, -EINVAL,
				 "ro_bind: %s is neither a directory nor a regular file", host);
	if (strlen(real) >= RO_BIND_PATH_MAX || strchr(real, ':'))
		return error_set(err, -EINVAL,
				 "ro_bind: %s resolves to %.300s, too long or holding a colon", host,
				 real);
	size_t rn = strlen(real), tn = strlen(target);
	if (!(*out = malloc(rn + 1 + tn + 1)))
		return error_set(err, -ENOMEM, "ro_bind: out of memory");
	memcpy(*out, real, rn);
	(*out)[rn] = ':';
	memcpy(*out + rn + 1, target, tn + 1);
	return 0;
}
