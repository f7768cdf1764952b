/* Where a configured image lives: IMAGES/NAME, or the absolute path given. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tier.h"

int image_dir(const struct aj_config *cfg, char *out, size_t n, struct aj_error *err)
{
	const char *image = cfg->image ? cfg->image : AJ_DEFAULT_IMAGE;
	const char *dir = getenv("AGENTJAIL_IMAGES");
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
