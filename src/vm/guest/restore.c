/* What a copy restored from the snapshot refreshes before anything of the
 * host's runs: it wakes up with the snapshot's clock and the snapshot's
 * random generator. The devices it needs are opened at boot (boot.c's
 * minimal /dev hides them from the program). */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <linux/rtc.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "agent.h"

/* Devices the agent keeps open from boot: the program's /dev has neither. */
static int rtc_fd = -1, urandom_fd = -1;

int restore_keep_devices(struct failure *f)
{
	rtc_fd = open("/dev/rtc0", O_RDONLY | O_CLOEXEC);
	urandom_fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (urandom_fd < 0)
		return fail(f, errno, "open /dev/urandom");
	return 0;
}

/* A restored copy wakes up with the snapshot's clock. The RTC (QEMU's
 * follows the host clock) says what time it really is; a second's
 * resolution is what a VM without a time service gets anyway. */
void refresh_clock(void)
{
	int fd = rtc_fd;
	if (fd < 0)
		return; /* no RTC: the clock is stale, not a protection missing */
	struct rtc_time t;
	if (ioctl(fd, RTC_RD_TIME, &t) == 0) {
		struct tm tm = {.tm_sec = t.tm_sec, .tm_min = t.tm_min, .tm_hour = t.tm_hour,
				.tm_mday = t.tm_mday, .tm_mon = t.tm_mon, .tm_year = t.tm_year};
		struct timespec ts = {.tv_sec = timegm(&tm), .tv_nsec = 0};
		if (ts.tv_sec > 0)
			clock_settime(CLOCK_REALTIME, &ts);
	}
}

/* Every copy restored from one snapshot starts with the same CRNG state: two
 * runs would draw the same os.urandom() bytes, the same uuid4(), the same
 * secrets.token_hex(). Mix in what differs between copies (the cycle
 * counter, which under QEMU follows the host's, the clocks, the request) and
 * make the kernel reseed from its input pool, interrupts included, now. */
int refresh_entropy(const void *request, size_t len, struct failure *f)
{
	struct {
		uint64_t tsc;
		struct timespec mono, real, boot;
	} mix;
	memset(&mix, 0, sizeof mix);
	mix.tsc = __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &mix.mono);
	clock_gettime(CLOCK_REALTIME, &mix.real);
	clock_gettime(CLOCK_BOOTTIME, &mix.boot);
	int fd = urandom_fd;
	if (fd < 0)
		return fail(f, EBADF, "entropy: /dev/urandom was not opened at boot");
	int rc = write_full(fd, &mix, sizeof mix);
	if (rc == 0)
		rc = write_full(fd, request, len < 4096 ? len : 4096);
	if (rc == 0 && ioctl(fd, RNDRESEEDCRNG) < 0)
		rc = -errno;
	if (rc)
		return fail(f, -rc, "entropy: reseed the CRNG after restore");
	return 0;
}
