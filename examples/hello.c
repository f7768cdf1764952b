/* The smallest use of the library: run one program in the process tier and
 * print how it ended. Build: make; run: build/examples/hello */
#include <stdio.h>
#include <string.h>

#include "agentjail.h"

int main(void)
{
	const char *code = "import os, socket\n"
			   "print('hello from uid', os.getuid(), 'in', os.getcwd())\n"
			   "print('network:', socket.if_nameindex())\n";
	struct aj_config cfg;
	aj_config_init(&cfg);          /* 10 s, 256 MiB, 64 pids, no network */
	cfg.limits.wall_sec = 5;

	struct aj_sandbox *sb;
	struct aj_error err;
	if (aj_open(&cfg, &sb, &err) != 0) {
		fprintf(stderr, "cannot open the sandbox: %s\n", err.message);
		return 1;
	}
	struct aj_result res;
	aj_run(sb, code, strlen(code), &res);
	printf("status: %s, exit code %d, %.1f ms\n", aj_status_name(res.status),
	       res.has_exit_code ? res.exit_code : -1, res.wall_ms);
	printf("stdout: %s", res.stdout_buf);
	if (res.stderr_len)
		printf("stderr: %s", res.stderr_buf);
	if (res.message)
		printf("message: %s\n", res.message);
	int rc = res.status == AJ_STATUS_OK ? 0 : 1;
	aj_result_free(&res);
	aj_close(sb);
	return rc;
}
