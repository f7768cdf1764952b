/* The container of one run (see spec.h): the seed article's hardened
 * `docker run` flags, each with its reason, plus what makes the container
 * hold the same hostile programs as the container tier. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../boot/egress.h"
#include "../boot/spec.h"
#include "../core/internal.h"
#include "owner.h"
#include "spec.h"

/* An image reference goes into request paths: only the characters
 * Docker's reference grammar has (no space, ?, # or CRLF). */
static int valid_reference(const char *s, struct aj_error *err)
{
	if (!*s || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@") !=
			   strlen(s))
		return error_set(err, -EINVAL, "docker: '%s' is not an image reference", s);
	return 0;
}

int docker_image_name(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err)
{
	if (cfg->docker_image && *cfg->docker_image) {
		if ((size_t)snprintf(out, n, "%s", cfg->docker_image) >= n)
			return error_set(err, -ENAMETOOLONG, "docker: image name too long");
		return valid_reference(out, err);
	}
	const char *name = cfg->image && *cfg->image ? cfg->image : AJ_DEFAULT_IMAGE;
	const char *slash = strrchr(name, '/');
	if (slash)
		name = slash + 1;
	if (!*name)
		return error_set(err, -EINVAL, "docker: no image name in '%s'", cfg->image);
	if ((size_t)snprintf(out, n, "agentjail/%s", name) >= n)
		return error_set(err, -ENAMETOOLONG, "docker: image name too long");
	return valid_reference(out, err);
}

static json_t *tmpfs_opts(uint64_t kb)
{
	char o[128];
	/* nosuid, nodev, noexec: scratch space holds data, not programs.
	 * nr_inodes caps the files, whose inodes cost kernel memory that
	 * size= does not count (one per 4 KiB, as the other tiers). */
	snprintf(o, sizeof o, "rw,nosuid,nodev,noexec,size=%lluk,nr_inodes=%llu,mode=1777",
		 (unsigned long long)kb, (unsigned long long)(kb / 4 + 64));
	return json_string(o);
}

/* The deployer's host paths (cfg.ro_binds, resolved when the sandbox
 * opened): bind mounts, read-only. NonRecursive: a mount below HOST is not
 * carried along, because the engine would leave it writable (its ReadOnly
 * covers the top mount only). Docker makes the mount point in the
 * container's own layer, so SANDBOX need not exist in the image. */
static int add_ro_binds(json_t *mounts, const struct aj_config *cfg)
{
	for (uint32_t i = 0; i < cfg->ro_bind_count; i++) {
		char from[RO_BIND_PATH_MAX], to[RO_BIND_PATH_MAX];
		if (ro_bind_split(cfg->ro_binds[i], from, to))
			return -1;
		json_t *m = json_pack("{s:s, s:s, s:s, s:b, s:{s:s, s:b}}", "Type", "bind", "Source",
				      from, "Target", to, "ReadOnly", 1, "BindOptions",
				      "Propagation", "rprivate", "NonRecursive", 1);
		if (!m || json_array_append_new(mounts, m))
			return -1;
	}
	return 0;
}

/* The egress proxy's socket directory (src/boot/egress.h), read-only: the
 * program connects through it (boot.py forwards 127.0.0.1:3128 to it) but
 * writes nothing to the host's disk there. */
static int add_egress_bind(json_t *mounts, const char *dir)
{
	json_t *m = json_pack("{s:s, s:s, s:s, s:b, s:{s:s}}", "Type", "bind", "Source", dir,
			      "Target", BOOT_EGRESS_DIR, "ReadOnly", 1, "BindOptions",
			      "Propagation", "rprivate");
	return !m || json_array_append_new(mounts, m) ? -1 : 0;
}

/* The HostConfig: the container's protections and limits (l: the
 * program's, with room for boot.py's forwarder), its mounts. NULL on
 * ENOMEM. */
static json_t *host_config(const struct aj_config *cfg, const struct aj_limits *l,
			   const char *egress_dir)
{
	bool egress = egress_dir != NULL;
	const uint64_t mib = 1024 * 1024;
	struct boot_disk disk;
	boot_disk_split(l->disk_mb, &disk);
	json_t *profile = boot_seccomp(egress);
	char *profile_text = profile ? json_dumps(profile, JSON_COMPACT) : NULL;
	json_decref(profile);
	json_t *seccomp = profile_text ? json_sprintf("seccomp=%s", profile_text) : NULL;
	free(profile_text);

	json_t *host = json_pack(
		"{s:s, s:b, s:[s], s:[s, o], s:I, s:I, s:I, s:I,"
		" s:o, s:{s:o, s:o, s:o}, s:{s:s, s:{}},"
		" s:[s, s, s, s, s, s, s, s, s, s, s, s, s, s], s:s, s:s, s:b, s:b}",
		/* No network at all: only a loopback of its own. With egress
		 * too: the proxy is reached through a unix socket (Mounts). */
		"NetworkMode", "none",
		/* The image cannot be changed by the program, for this run or
		 * the next. */
		"ReadonlyRootfs", 1,
		/* Root in the container could still matter (the program runs as
		 * a non-root uid anyway); no capability survives. */
		"CapDrop", "ALL",
		/* no setuid gain; and the filter every tier runs under, instead
		 * of Docker's default profile, which allows SysV IPC, memfd,
		 * unix sockets and more (see src/linux/seccomp_policy.c). With
		 * egress, unix sockets are refused to the program by boot.py's
		 * own filter instead, so that boot.py can reach the proxy
		 * (boot_seccomp). */
		"SecurityOpt", "no-new-privileges", seccomp,
		/* Memory with no swap on top: the OOM killer at the limit. */
		"Memory", (json_int_t)(l->memory_mb * mib), "MemorySwap",
		(json_int_t)(l->memory_mb * mib),
		/* One CPU's worth of time, as the seed's --cpus 1. */
		"NanoCpus", (json_int_t)1000000000,
		"PidsLimit", (json_int_t)l->pids,
		/* The rlimits every tier sets (rule E2). No address space:
		 * Docker has no such ulimit, and the memory cgroup bounds the
		 * container. The run's uid is its own (a slot), so nproc counts
		 * its processes only: a second bound beside PidsLimit. */
		"Ulimits", boot_rlimits(l, false),
		/* Each writable place with its share of the disk limit and an
		 * inode cap; /dev/shm is one of them (IpcMode none below), since
		 * Docker's own takes a size but no inode cap. */
		"Tmpfs", "/tmp", tmpfs_opts(disk.tmp_kb), "/var/tmp", tmpfs_opts(disk.var_tmp_kb),
		"/dev/shm", tmpfs_opts(disk.shm_kb),
		/* Docker keeps every byte a container prints in its log,
		 * unbounded: the output goes only to the attach stream, where
		 * the supervisor caps it. */
		"LogConfig", "Type", "none", "Config",
		/* Docker's default masks, plus /sys (the other tiers have
		 * none), /dev/mqueue, and the pty multiplexer: Docker mounts
		 * devpts without max=, so ptys would come from the host's
		 * shared pool without a bound of the run's own. */
		"MaskedPaths", "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys", "/sys/firmware", "/dev/mqueue", "/dev/pts/ptmx", "/dev/ptmx",
		/* A private IPC namespace all the same, without Docker's own
		 * /dev/shm (the Tmpfs above is the run's). */
		"IpcMode", "none",
		"CgroupnsMode", "private",
		/* Removed by the tier after it has read the exit state. */
		"AutoRemove", 0,
		"Privileged", 0);
	json_t *mounts = json_array();
	if (!host || !mounts || add_ro_binds(mounts, cfg) ||
	    (egress && add_egress_bind(mounts, egress_dir)) ||
	    (json_array_size(mounts) && json_object_set(host, "Mounts", mounts))) {
		json_decref(mounts);
		json_decref(host);
		return NULL;
	}
	json_decref(mounts);
	return host;
}

json_t *docker_container_spec(const struct aj_config *cfg, const char *image, uid_t uid,
			      gid_t gid, const char *owner, const char *egress_dir)
{
	bool egress = egress_dir != NULL;
	/* The program's limits, with room for boot.py's forwarder. */
	const struct aj_limits bl = boot_limits(&cfg->limits, egress);
	char user[32];
	snprintf(user, sizeof user, "%u:%u", (unsigned)uid, (unsigned)gid);
	/* The interpreter the image's PATH finds (an image of Docker Hub's has
	 * it in /usr/local/bin), unless another than the default was named. */
	const char *python = cfg->python && *cfg->python && strcmp(cfg->python, AJ_DEFAULT_PYTHON)
				     ? cfg->python
				     : "python3";
	json_t *host = host_config(cfg, &bl, egress_dir);
	if (!host)
		return NULL;
	json_t *spec = json_pack(
		"{s:s, s:o, s:[], s:s, s:s, s:b, s:b, s:b, s:b, s:b, s:b, s:b,"
		" s:o, s:{s:s, s:s}, s:s, s:s, s:i, s:o}",
		"Image", image,
		/* PID 1: boot.py, which writes the program and runs it. */
		"Entrypoint", boot_argv(python, egress, cfg),
		"Cmd",
		/* A non-root uid of the run's own (a slot, as in every tier). */
		"User", user,
		"WorkingDir", "/tmp",
		"AttachStdin", 1, "AttachStdout", 1, "AttachStderr", 1,
		/* The program arrives on stdin, which closes after it. */
		"OpenStdin", 1, "StdinOnce", 1,
		"Tty", 0,
		"NetworkDisabled", 1,
		/* PID 1's: the program's, nothing of the deployer's (rule E1). */
		"Env", boot_environment(egress, cfg),
		/* Ours, and by whom: a maker that died is found by the next
		 * sweep (owner.c) and its container removed. */
		"Labels", DOCKER_LABEL, AGENTJAIL_VERSION, DOCKER_OWNER_LABEL, owner,
		"Hostname", "sandbox",
		/* Python as PID 1 ignores SIGTERM: stopping means SIGKILL. */
		"StopSignal", "SIGKILL",
		"StopTimeout", 0,
		"HostConfig", host);
	return spec;
}
