#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isolation.h"

int attack_range_take(const char *lock_dir, uint32_t first, uint32_t slots, uint32_t ranges,
		      int (*in_use)(uint32_t lo, uint32_t hi), uint32_t *base, int *lock_fd,
		      char *what, size_t what_n)
{
	*lock_fd = -1;
	if (mkdir(lock_dir, 0700) < 0 && errno != EEXIST) {
		int err = errno;
		snprintf(what, what_n, "mkdir %s: %s", lock_dir, strerror(err));
		return -err;
	}
	for (uint32_t k = 0; k < ranges; k++) {
		uint32_t b = first + k * slots;
		char path[512];
		snprintf(path, sizeof path, "%s/range-%u", lock_dir, (unsigned)b);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			int err = errno;
			snprintf(what, what_n, "open %s: %s", path, strerror(err));
			return -err;
		}
		/* Another attack holds this range: its runs' uids are its own. */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			/* Ours, unless something else already runs there:
			 * its processes would read as our leftovers. */
			if (in_use && in_use(b, b + slots)) {
				close(fd);
				continue;
			}
			*base = b;
			*lock_fd = fd;
			return 0;
		}
		int err = errno;
		close(fd);
		if (err != EWOULDBLOCK) {
			snprintf(what, what_n, "flock %s: %s", path, strerror(err));
			return -err;
		}
	}
	snprintf(what, what_n,
		 "all %u uid ranges of %s are held by other attacks or have processes running",
		 (unsigned)ranges, lock_dir);
	return -EBUSY;
}

/* mountinfo's mount point field, its \ooo escapes (space, tab, newline,
 * backslash) read back. */
static void unescape(const char *s, size_t n, char *out, size_t out_n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < out_n; i++) {
		if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

static bool path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n > 0 && strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

char *attack_mounts_within(const char *mountinfo, const char *const *dirs, size_t n)
{
	size_t cap = strlen(mountinfo) + 1, len = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *line = mountinfo; *line;) {
		size_t ll = strcspn(line, "\n");
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ...: the fifth field. */
		const char *f = line, *end = line + ll;
		for (int k = 0; k < 4 && f < end; k++) {
			const char *sp = memchr(f, ' ', (size_t)(end - f));
			f = sp ? sp + 1 : end;
		}
		const char *sp = memchr(f, ' ', (size_t)(end - f));
		size_t fl = (size_t)((sp ? sp : end) - f);
		char point[4096];
		unescape(f, fl, point, sizeof point);
		bool keep = false;
		for (size_t i = 0; i < n && !keep; i++)
			keep = dirs[i] && dirs[i][0] && path_under(point, dirs[i]);
		if (keep && f < end) {
			memcpy(out + len, line, ll);
			len += ll;
			out[len++] = '\n';
		}
		line += ll + (line[ll] == '\n');
	}
	out[len] = '\0';
	return out;
}
