/* trust_ca in the guest (docs/egress.md, "HTTPS"): the bundle the host made
 * when the sandbox opened (the image's, which is also this initramfs's, and
 * the deployer's certificates: src/core/trust_ca.c) arrives in VM_TRUST and
 * is shown where every client looks, CONTRACT_CA_BUNDLE, read-only, as the
 * host tiers show it with a bind. The guest has no host file to bind: a
 * tmpfs of its own covers the bundle's directory, which in the initramfs
 * holds only the image's bundle (images/build-vm.sh). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "../../core/contract.h"
#include "agent.h"

#define CA_DIR "/etc/ssl/certs"
_Static_assert(sizeof CA_DIR "/ca-certificates.crt" == sizeof CONTRACT_CA_BUNDLE,
	       "CA_DIR is the bundle's directory");

int trust_install(const char *pem, size_t len, struct failure *f)
{
	char opts[64];
	/* Sized to the bundle; nosuid, nodev, noexec: it holds one text file. */
	snprintf(opts, sizeof opts, "size=%zuk,nr_inodes=8,mode=0755", len / 1024 + 64);
	if (mount("agentjail", CA_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		return fail(f, errno, "trust: tmpfs on %s", CA_DIR);
	/* Root's and 0444: the program (uid 1000) reads it and cannot change it. */
	int fd = open(CONTRACT_CA_BUNDLE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0444);
	if (fd < 0)
		return fail(f, errno, "trust: create %s", CONTRACT_CA_BUNDLE);
	int rc = write_full(fd, pem, len);
	close(fd);
	if (rc)
		return fail(f, -rc, "trust: write %s", CONTRACT_CA_BUNDLE);
	/* Read-only before anything of the run starts: root in the guest is the
	 * agent alone, and not even it writes here again. */
	if (mount("none", CA_DIR, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return fail(f, errno, "trust: remount %s read-only", CA_DIR);
	return 0;
}
