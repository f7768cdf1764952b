/* The userland a program starts, the same on every tier that has it: a
 * shell, ls, stat and find, through subprocess. A tier's test file includes
 * this header and lists userland_tools_run with HOSTILE_TEST; a tier whose
 * view is an image sets fixture.image (the tools are probed there, else on
 * the host). */
#ifndef AJ_TEST_USERLAND_CASES_H
#define AJ_TEST_USERLAND_CASES_H

#include <limits.h>

#include "hostile.h"

/* ls / and stat / (coreutils 9.1 runs both through statx with
 * AT_NO_AUTOMOUNT, which the gvisor tier works around), find in the run's
 * /tmp and a shell; an error stays the error it is. Skipped only where the
 * view lacks a tool, probed first. */
static void userland_tools_run(void **state)
{
	struct fixture *f = *state;
	static const char *const tools[] = {"/bin/sh", "/usr/bin/ls", "/usr/bin/stat",
					    "/usr/bin/find"};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof path, "%s%s%s", f->image ? f->image : "",
			 f->image ? "/root" : "", tools[i]);
		if (access(path, F_OK) != 0) {
			print_message("skipped: %s is not there (an image: rebuild it)\n", path);
			skip();
		}
	}
	struct aj_result r;
	run_code(&f->cfg, &r,
		 "import subprocess\n"
		 "def run(*a, **k):\n"
		 "    p = subprocess.run(*a, capture_output=True, text=True, **k)\n"
		 "    print(p.returncode, p.stdout.split(), p.stderr.strip())\n"
		 "open('/tmp/marker', 'w').close()\n"
		 "run(['ls', '/'])\n"
		 "run(['stat', '-c', '%%F', '/'])\n"
		 "run(['find', '/tmp', '-name', 'marker'])\n"
		 "run('echo $0', shell=True)\n"
		 "run(['stat', '/nonexistent'])\n");
	assert_status(&r, AJ_STATUS_OK);
	if (!contains(r.stdout_buf, "0 ['directory'] \n0 ['/tmp/marker'] \n0 ['/bin/sh'] \n1 [] "
				    "stat: cannot statx '/nonexistent': No such file or directory\n") ||
	    !contains(r.stdout_buf, "'tmp', 'usr'"))
		fail_msg("%s", r.stdout_buf);
	aj_result_free(&r);
}

#endif
