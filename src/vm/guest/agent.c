/* agentjail guest agent: /init of the microVM.
 *
 * Theory of operation
 * -------------------
 * The microvm tier runs each program in a VM of its own. This file's main,
 * with the files agent.h lists (one concern each), is that VM's init: PID 1,
 * root, built static so the initramfs needs no loader for it. Two processes
 * of ours exist in the guest:
 *
 *  agent    PID 1 (these files). Talks to the host over the virtio-serial port
 *           in the frames of ../protocol.h; keeps the wall clock; reads and
 *           caps both output streams; kills, reaps and reports.
 *
 *  zygote   `/usr/bin/python3 -I -u /.agentjail/zygote.py`, started by the agent
 *           at boot as root: an interpreter with the common standard library
 *           already imported, waiting for one request. Its fds: 0 /dev/null,
 *           1 and 2 the stdout and stderr pipes (the agent holds the read
 *           ends), 3 the request pipe (agent -> zygote), 4 the control pipe
 *           (zygote -> agent: "ready", "pid N", "fail STEP: ERRNO"), 5 the
 *           run cgroup's directory (O_PATH).
 *
 * Once per image (the host boots one VM, then snapshots it):
 *   mount /proc, /dev (and no sysfs) -> load the virtio modules -> open the
 *   ports -> mount the image's root (a read-only disk) and make it / ->
 *   make the run cgroup (in a cgroup2 hierarchy mounted nowhere) ->
 *   start the zygote and wait for "ready" -> / read-only -> VM_READY ->
 *   block reading VM_RUN.
 * The host snapshots the VM in that read and restores a copy per run, so
 * everything after VM_READY happens in a copy that wakes up with the clock,
 * the kernel's random generator and every address exactly as they were at
 * the snapshot. Nothing after VM_READY may depend on time having passed; the
 * clock and the random generator are refreshed first thing in a run.
 *
 * With trust_ca, a VM_TRUST first: its bundle is mounted read-only at the
 * CA bundle's path (trust.c) before the run or session begins.
 *
 * Once per run (one VM_RUN; the host destroys the VM after the result):
 *   refresh clock and entropy -> tmpfs /tmp (the disk limit) with
 *   /tmp/work/main.py -> cgroup limits (memory, swap, pids) -> the request
 *   line to the zygote. The zygote forks: the parent writes the child's pid on
 *   the control pipe and exits, so the child (the program) becomes the
 *   agent's own child: its wait status and usage come from the kernel, and
 *   its CPU clock (RLIMIT_CPU) starts at zero instead of at the zygote's
 *   import time. The child joins the run cgroup, applies its rlimits, drops
 *   to uid/gid 1000, closes the control pipe and runs main.py.
 *   Meanwhile the agent reads both streams, keeps the wall clock and, on a
 *   timeout or a flood, kills every process in the VM (kill(-1) from PID 1:
 *   only the agent survives it, so a setsid() double fork escapes nothing).
 *   When the program ends, whatever it left behind is killed too, everything
 *   is reaped, and one VM_RESULT goes back. Then the agent idles.
 *
 * Once per session (VM_SESSION_START instead of VM_RUN): the zygote is
 *   ended, and session.c keeps a session interpreter alive across calls in
 *   the same /tmp, cgroup and protections; see its theory of operation.
 *
 * Failures: before VM_READY they go to the console (PID 1's stdout/stderr)
 * and the VM powers off; if the interpreter is what failed and the port is
 * open, a VM_READY with python_ok 0 goes first so the host need not wait for
 * a timeout to know. During a run any step that fails is reported as a
 * VM_RESULT with VM_RUN_SETUP_FAILED and "guest: STEP: ERRNO" (the host
 * makes it a sandbox_error, quoting it), and nothing runs with less than
 * was asked. A run's VM_RESULT carries facts only (how the program ended,
 * its usage, the OOM kills): the host decides its status.
 */

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent.h"

int main(void)
{
	struct zygote z;
	int sigfd;

	boot(&z, &sigfd);
	/* The snapshot is taken here, while this reads. */
	struct vm_frame_header h;
	if (port_read(&h, sizeof h))
		power_off("guest: read the host's first frame");
	if (h.type == VM_TRUST) {
		/* trust_ca: the sandbox's CA bundle, in place before anything
		 * of the run or session starts. The host sent it and nothing
		 * runs without it: a failure ends the VM, which the host
		 * reports with these words. */
		struct failure f;
		char *pem = NULL;
		if (receive_trust(port_read, &h, &pem, &f) || trust_install(pem, h.length, &f))
			power_off(f.message);
		free(pem);
		if (port_read(&h, sizeof h))
			power_off("guest: read the host's frame after VM_TRUST");
	}
	if (h.type == VM_SESSION_START) {
		/* A session: the zygote's one interpreter is not the session's
		 * (see session.c); it goes, and calls follow until the host
		 * destroys the VM. */
		zygote_end(&z);
		serve_session(&h, sigfd);
	} else {
		serve_run(&h, &z, sigfd);
	}
	/* One run (or session) per VM: the host destroys it now. Idle, never
	 * exit. */
	for (;;)
		pause();
}
