/* aj_session_secrets_keep until the library's lands (issue 39: the egress
 * proxy's side is written beside this branch). Weak: the library's own
 * definition, once src/api has it, is the one linked, and this file goes.
 * Until then a narrowing by secret names is refused, never quietly taken
 * as done: a caller who drops a secret must not believe it dropped. */
#include <errno.h>

#include "../../core/internal.h"

__attribute__((weak)) int aj_session_secrets_keep(struct aj_session *s, const char *const *names,
						  uint32_t n_names, struct aj_error *err)
{
	(void)s;
	(void)names;
	(void)n_names;
	return error_set(err, -ENOSYS,
			 "secrets: this build's library cannot narrow a session's secrets yet");
}
