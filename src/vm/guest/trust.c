/* trust_ca in the guest (docs/egress.md, "HTTPS"): the bundle the host made
 * when the sandbox opened (the image's and the deployer's certificates:
 * src/core/trust_ca.c) arrives in VM_TRUST and is shown where every client
 * looks, CONTRACT_CA_BUNDLE, read-only, as the host tiers show it with a
 * bind of that one file. The guest has no host file to bind: it writes the
 * bundle into a tmpfs of its own, mounted for a moment on STAGE_DIR (the
 * guest's directory on the image's disk, build-vm.sh; the zygote started
 * from it at boot), binds the file over the image's bundle, and detaches the
 * tmpfs from STAGE_DIR (the bound file keeps it alive). Only that file is
 * covered: the image's /etc/ssl/certs, its hashed links included, stays as
 * every other tier shows it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "../../core/contract.h"
#include "agent.h"

#define STAGE_DIR "/.agentjail"
#define STAGED STAGE_DIR "/ca-certificates.crt"

int trust_install(const char *pem, size_t len, struct failure *f)
{
	char opts[64];
	/* Sized to the bundle; nosuid, nodev, noexec: it holds one text file. */
	snprintf(opts, sizeof opts, "size=%zuk,nr_inodes=8,mode=0755", len / 1024 + 64);
	if (mount("agentjail", STAGE_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		return fail(f, errno, "trust: tmpfs on %s", STAGE_DIR);
	/* Root's and 0444: the program (uid 1000) reads it and cannot change it. */
	int fd = open(STAGED, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return fail(f, errno, "trust: create %s", STAGED);
	int rc = write_full(fd, pem, len);
	close(fd);
	if (rc)
		return fail(f, -rc, "trust: write %s", STAGED);
	if (mount(STAGED, CONTRACT_CA_BUNDLE, NULL, MS_BIND, NULL) < 0)
		return fail(f, errno, "trust: bind over %s (does the image have its CA bundle?)",
			    CONTRACT_CA_BUNDLE);
	/* Read-only before anything of the run starts: root in the guest is the
	 * agent alone, and not even it writes here again. */
	if (mount(NULL, CONTRACT_CA_BUNDLE, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return fail(f, errno, "trust: remount %s read-only", CONTRACT_CA_BUNDLE);
	/* STAGE_DIR shows the image's disk again (the zygote's script). */
	if (umount2(STAGE_DIR, MNT_DETACH) < 0)
		return fail(f, errno, "trust: detach the tmpfs from %s", STAGE_DIR);
	return 0;
}
