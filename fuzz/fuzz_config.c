/* libFuzzer target: the MCP server's JSON config file reader
 * (src/mcp/config.c), as a deployer's file or a hostile one would reach it.
 * Any input must end in a loaded config or an error naming the problem,
 * never a crash, a leak or undefined behaviour (ASan/UBSan). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/mcp/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-config", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct mcp_config c;
	struct aj_error err = {0};
	mcp_config_init(&c);
	if (mcp_config_load(&c, path, &err) == 0) {
		/* What the library would then be given must validate or be
		 * refused with a reason, never crash. */
		aj_config_validate(&c.sandbox, &err);
	}
	mcp_config_free(&c);
	close(fd);
	return 0;
}
