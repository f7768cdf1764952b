/* The accelerator probe and its cache: see accel.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel.h"

/* The cache's text (the verdict, then its reason, a line each), "" when
 * there is none. */
static void read_cache(char *out, size_t n)
{
	out[0] = '\0';
	int fd = open(VM_ACCEL_CACHE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t got = read(fd, out, n - 1);
	close(fd);
	out[got > 0 ? got : 0] = '\0';
}

static void write_cache(const char *verdict, const char *reason)
{
	mkdir("/var/lib/agentjail", 0755);
	int fd = open(VM_ACCEL_CACHE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char line[700];
	int len = snprintf(line, sizeof line, "%s\n%s\n", verdict, reason);
	(void)!write(fd, line, (size_t)len);
	close(fd);
}

int vm_accel_choose(const struct vm_image *img, const char *run_base, const char *forced,
		    uid_t uid, char *accel, size_t n, struct aj_error *err)
{
	if (forced) {
		if (strcmp(forced, "kvm") && strcmp(forced, "tcg"))
			return error_set(err, -EINVAL, "accel: '%s' is not kvm or tcg", forced);
		snprintf(accel, n, "%s", forced);
		return 0;
	}
	char cached[64];
	read_cache(cached, sizeof cached);
	if (!strncmp(cached, "kvm", 3) || !strncmp(cached, "tcg", 3)) {
		snprintf(accel, n, "%.3s", cached);
		return 0;
	}
	/* /dev/kvm existing proves little (here it is PVM, which cannot run a
	 * stock kernel): only a real boot decides. */
	struct aj_error why = {0};
	const char *verdict = "tcg";
	struct stat kvm;
	if (stat("/dev/kvm", &kvm) < 0)
		snprintf(why.message, sizeof why.message, "no /dev/kvm");
	else if (!(kvm.st_mode & S_IRGRP) || !(kvm.st_mode & S_IWGRP))
		/* The jailed QEMU is not root: it reaches KVM through the
		 * device's group only. */
		snprintf(why.message, sizeof why.message,
			 "/dev/kvm is mode %03o: the jailed QEMU (not root) can use it only "
			 "through its group (Debian's default is 0660 root:kvm)",
			 (unsigned)(kvm.st_mode & 0777));
	else if (vm_boot_probe(img, run_base, "kvm", uid, kvm.st_gid, 20000, &why) == 0)
		verdict = "kvm";
	snprintf(accel, n, "%s", verdict);
	write_cache(verdict, !strcmp(verdict, "kvm") ? "a KVM probe boot succeeded" : why.message);
	return 0;
}

gid_t vm_accel_group(const char *accel, gid_t fallback)
{
	struct stat kvm;
	return !strcmp(accel, "kvm") && stat("/dev/kvm", &kvm) == 0 ? kvm.st_gid : fallback;
}

void vm_accel_describe(const char *forced, struct aj_error *err)
{
	char cached[256];
	read_cache(cached, sizeof cached);
	char *reason = strchr(cached, '\n');
	if (reason) {
		*reason++ = '\0';
		reason[strcspn(reason, "\n")] = '\0';
	}
	if (forced)
		error_set(err, 0, "accelerator: %s, as configured", forced);
	else
		error_set(err, 0, "accelerator: %s%s%s", cached, reason && *reason ? "; " : "",
			  reason ? reason : "");
}
