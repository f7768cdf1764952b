/* Where a configured image lives (IMAGES/NAME, or the absolute path given),
 * and whether its interpreter is there. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../linux/report.h"
#include "tier.h"

int image_dir(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err)
{
	const char *image = cfg->image ? cfg->image : AJ_DEFAULT_IMAGE;
	const char *dir = getenv("AGENTJAIL_IMAGES");
	if (image[0] != '/' && dir && dir[0] && dir[0] != '/')
		return error_set(err, -EINVAL, "image: AGENTJAIL_IMAGES must be an absolute path "
					       "(it is '%s')",
				 dir);
	int w = image[0] == '/'
			? snprintf(out, n, "%s", image)
			: snprintf(out, n, "%s/%s", dir && dir[0] == '/' ? dir : AJ_DEFAULT_IMAGES_DIR,
				   image);
	if (w < 0 || (size_t)w >= n)
		return error_set(err, -ENAMETOOLONG, "image: path too long");
	struct stat st;
	if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode))
		return error_set(err, -ENOENT,
				 "image: no image '%s' (%s missing); build it with "
				 "'agentjail image build%s%s'",
				 image, out, cfg->image ? " --name " : "", cfg->image ? image : "");
	return 0;
}

int image_view_root(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err)
{
	char dir[PATH_MAX];
	int rc = image_dir(cfg, dir, sizeof dir, err);
	if (rc)
		return rc;
	int w = snprintf(out, n, "%s/root", dir);
	if (w < 0 || (size_t)w >= n)
		return error_set(err, -ENAMETOOLONG, "image: path too long");
	return 0;
}

/* The interpreter must be in the image. Resolved inside the image root only
 * (RESOLVE_IN_ROOT), as it will be after pivot_root: an absolute symlink in
 * the image must not be checked against the host. */
int image_check_python(const char *root, const char *python, struct aj_error *err)
{
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return error_set(err, -errno, "image: open %s: %s", root, errno_name(errno));
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	int fd = (int)syscall(SYS_openat2, rfd, python, &how, sizeof how);
	int e = errno;
	close(rfd);
	if (fd < 0)
		return error_set(err, -e, "image: no %s in %s: %s", python, root, errno_name(e));
	struct stat st;
	int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) ? 0 : -ENOEXEC;
	close(fd);
	if (rc)
		return error_set(err, rc, "image: %s in %s is not an executable file", python, root);
	return 0;
}

void image_lacks_module(const struct aj_config *cfg, struct aj_error *err)
{
	if (!strstr(err->message, ": ModuleNotFoundError: "))
		return;
	char was[AJ_ERROR_MAX];
	snprintf(was, sizeof was, "%s", err->message);
	/* Cut, if need be, at the message's size: what it says first matters most. */
	if (snprintf(err->message, sizeof err->message,
		 "%.200s; image '%.160s' does not have it: run an image that does (--image "
		 "datascience has numpy, pandas and matplotlib; agentjail image build --preset "
		 "datascience makes it)",
		 was, cfg->image ? cfg->image : AJ_DEFAULT_IMAGE) >= (int)sizeof err->message)
		err->message[sizeof err->message - 1] = '\0';
}
