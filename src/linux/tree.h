/* Removing a directory tree the sandbox's host side made (run directories,
 * image builds), written once. */
#ifndef AJ_TREE_H
#define AJ_TREE_H

/* rm -rf path: stays on path's filesystem (a mount left inside is not
 * entered) and never follows a symlink, so a tree the sandbox could write
 * into cannot steer the removal outside it. An entry already gone is not an
 * error. 0 or -errno. */
int tree_remove(const char *path);

#endif
