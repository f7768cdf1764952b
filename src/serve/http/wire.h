/* A result as it travels from a worker to the server that asked: the
 * contract's JSON object (result_to_json_object), read back into an
 * aj_result. Output that was not UTF-8 arrives repaired, as every JSON
 * front end shows it anyway. */
#ifndef AJ_SERVE_WIRE_H
#define AJ_SERVE_WIRE_H

#include <jansson.h>

#include "agentjail.h"

/* 0, or -EPROTO with res a sandbox_error saying what was malformed. */
int result_from_json(json_t *o, struct aj_result *res, enum aj_tier *tier);

/* A session listing as [{"name", "type", "size"}] (type: file, directory,
 * symlink, other), as the API answers it and a worker sends it. Frees
 * entries. NULL on ENOMEM. */
json_t *file_list_to_json(struct aj_file_info *entries, size_t count);

#endif
