/* The gvisor tier's run directories: see rundir.h. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gvisor/rundir.h"
#include "../linux/cgroup.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

int gvisor_remove_tree(const char *path)
{
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT
		       ? -errno
		       : 0;
}

/* Run directories whose maker died: its runsc died with it (PDEATHSIG) and
 * its sandbox with runsc, so only runsc's state files are left. Named
 * run-PID-...; only those at least ten seconds old whose pid is gone. */
void gvisor_sweep_run_dirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	char path[PATH_MAX];
	while (d && (de = readdir(d)))
		if (cgroup_run_orphaned(base, de->d_name, path, sizeof path))
			gvisor_remove_tree(path);
	if (d)
		closedir(d);
}
