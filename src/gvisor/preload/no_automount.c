/* Loaded into every dynamically linked program of the gvisor tier, through
 * the sandbox's /etc/ld.so.preload (src/gvisor/bundle.c): runsc 20221219,
 * Debian 12's, refuses the flag AT_NO_AUTOMOUNT in statx and newfstatat
 * with EINVAL, and coreutils 9.1 passes it on every statx, so `ls /` and
 * `stat /` failed ("Invalid argument"). No automount exists in gVisor: the
 * flag asks for nothing there, and dropping it changes no answer. Only
 * these two calls, only that flag; every other argument and the errno pass
 * through unchanged. (Built with libc only; never part of libagentjail.) */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask,
	  struct statx *restrict buf)
{
	return (int)syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}

int fstatat(int dirfd, const char *restrict path, struct stat *restrict buf, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}

/* The same call under its large-file name (struct stat64 is struct stat on
 * 64-bit Linux, the only kind runsc runs on). */
int fstatat64(int dirfd, const char *restrict path, struct stat64 *restrict buf, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~AT_NO_AUTOMOUNT);
}
