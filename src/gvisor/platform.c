/* The gVisor platform and its cache: see platform.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gvisor/platform.h"
#include "../gvisor/run.h"

/* How long a KVM probe run may take before KVM is judged unusable. */
#define KVM_PROBE_SEC 15.0
#define PLATFORM_CACHE "/var/lib/agentjail/gvisor-platform"

/* The cache's key: a verdict holds for this runsc on this boot. */
static void cache_key(const struct gvisor_host *st, char *out, size_t n)
{
	char boot[64] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, boot, sizeof boot - 1);
		boot[r > 0 ? r : 0] = 0;
		boot[strcspn(boot, "\n")] = 0;
		close(fd);
	}
	snprintf(out, n, "%s %s", st->version, boot);
}

/* KVM where a probe run finishes and succeeds, else ptrace (which works on
 * any host); the verdict is cached per runsc version and boot. */
void gvisor_choose_platform(struct gvisor_host *st, const struct aj_config *cfg)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(st->platform, sizeof st->platform, "ptrace");
		snprintf(st->why, sizeof st->why, "no usable /dev/kvm (%s)", errno_name(errno));
		return;
	}
	close(fd);
	char key[256], cached[1024] = "";
	cache_key(st, key, sizeof key);
	if ((fd = open(PLATFORM_CACHE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		ssize_t r = read(fd, cached, sizeof cached - 1);
		cached[r > 0 ? r : 0] = 0;
		close(fd);
		/* key, platform, why: a line each. */
		char *plat = strchr(cached, '\n');
		char *why = plat ? strchr(plat + 1, '\n') : NULL;
		if (plat && why) {
			*plat++ = 0;
			*why++ = 0;
			why[strcspn(why, "\n")] = 0;
			if (!strcmp(cached, key) && (!strcmp(plat, "kvm") || !strcmp(plat, "ptrace"))) {
				snprintf(st->platform, sizeof st->platform, "%s", plat);
				snprintf(st->why, sizeof st->why, "%s", why);
				return;
			}
		}
	}
	struct aj_config probe = *cfg;
	probe.limits.wall_sec = KVM_PROBE_SEC;
	struct aj_result res;
	result_init(&res);
	const struct run_request req = {.code = "print(1)", .len = 8, .cancel_fd = -1};
	gvisor_run_with(st, "kvm", &probe, &req, &res);
	if (res.status == AJ_STATUS_OK && res.stdout_len == 2) {
		snprintf(st->platform, sizeof st->platform, "kvm");
		snprintf(st->why, sizeof st->why, "a probe run under /dev/kvm succeeded");
	} else {
		snprintf(st->platform, sizeof st->platform, "ptrace");
		if (res.status == AJ_STATUS_TIMEOUT)
			snprintf(st->why, sizeof st->why,
				 "kvm: a probe run under /dev/kvm did not finish in %.0f s (a nested or "
				 "paravirtual KVM the sentry cannot use)",
				 KVM_PROBE_SEC);
		else
			snprintf(st->why, sizeof st->why, "kvm: a probe run under /dev/kvm failed: %.300s",
				 res.message ? res.message : aj_status_name(res.status));
	}
	aj_result_free(&res);
	mkdir("/var/lib/agentjail", 0755);
	if ((fd = open(PLATFORM_CACHE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		       0644)) >= 0) {
		dprintf(fd, "%s\n%s\n%s\n", key, st->platform, st->why);
		close(fd);
		rename(PLATFORM_CACHE ".tmp", PLATFORM_CACHE);
	}
}
