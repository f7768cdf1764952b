/* Putting an agentjail image root into a Docker Engine as a tagged image
 * (the engine's equivalent of `docker import`). */
#ifndef AJ_DOCKER_IMAGE_H
#define AJ_DOCKER_IMAGE_H

#include <stdbool.h>

#include "../core/internal.h"

/* Imports the directory root as the engine image `repo`:latest, labelled
 * with stamp (the image's build time). An engine image with the same stamp
 * is kept as it is unless force. *imported tells which happened. */
int docker_image_import(const char *socket_path, const char *root, const char *repo,
			const char *stamp, bool force, bool *imported, struct aj_error *err);

#endif
