/* Run directories and their sweep: see rundir.h. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundir.h"
#include "../linux/cgroup.h"
#include "../linux/tree.h"

/* Run directories whose maker died: on gvisor its runsc died with it
 * (PDEATHSIG) and its sandbox with runsc, so only runsc's state files are
 * left; on docker the container is the engine's sweep's (owner.c), and the
 * egress socket's directory is left. Named run-PID-...; only those at least
 * ten seconds old whose pid is gone. */
void boot_sweep_run_dirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	char path[PATH_MAX];
	while (d && (de = readdir(d)))
		if (cgroup_run_orphaned(base, de->d_name, path, sizeof path))
			tree_remove(path);
	if (d)
		closedir(d);
}
