/* `agentjail attack` beside other sandboxes: its own uid range, taken per
 * invocation under a lock, and a mount check that looks only where its own
 * runs could have mounted. What it counts is then its own, whatever runs
 * beside it (a deployer's sandboxes, a test suite, another attack). */
#ifndef AJ_ATTACK_ISOLATION_H
#define AJ_ATTACK_ISOLATION_H

#include <stddef.h>
#include <stdint.h>

/* The attack's uid ranges: ATTACK_RANGES of ATTACK_SLOTS uids from
 * ATTACK_UID_FIRST, a block no default uses (the tiers' 2000000000, the
 * suites' 2100000000 and up, bench's 2060000000), below 2147483647 for the
 * docker tier. */
#define ATTACK_UID_FIRST 2070000000u
#define ATTACK_SLOTS 8u
#define ATTACK_RANGES 64u

/* Takes the first free range: one no other attack holds (an exclusive flock
 * on lock_dir/range-BASE, held by *lock_fd until it is closed or the
 * process ends, however) and, where in_use is given, in which no process
 * runs now (another program's sandboxes may have chosen the same uids). 0
 * with *base; -EBUSY when every range is taken, or -errno with what naming
 * the step that failed. */
int attack_range_take(const char *lock_dir, uint32_t first, uint32_t slots, uint32_t ranges,
		      int (*in_use)(uint32_t lo, uint32_t hi), uint32_t *base, int *lock_fd,
		      char *what, size_t what_n);

/* The lines of a /proc/self/mountinfo text whose mount point lies in one of
 * dirs (the directory itself or below it; mountinfo's octal escapes read
 * back), in order, as a new string; NULL when out of memory. The mounts a
 * run of this attack could have made on the host; the rest of the table is
 * its neighbours'. */
char *attack_mounts_within(const char *mountinfo, const char *const *dirs, size_t n);

#endif
