/* Removing a directory tree (see tree.h). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <unistd.h>

#include "tree.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

int tree_remove(const char *path)
{
	return nftw(path, remove_entry, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT
		       ? -errno
		       : 0;
}
