/* A snapshot of a booted, ready VM, and fresh VMs restored from it.
 *
 * Made once per image, accelerator and memory size: boot the image's kernel
 * and initramfs with its RAM in a file (share=on), wait for the guest
 * agent's VM_READY, and migrate the device state to a file with
 * x-ignore-shared (the RAM file itself is the memory image). Each run then
 * starts a new QEMU mapping that RAM file privately, copy-on-write
 * (share=off: the file is never changed), with the device state streamed in
 * on fd 3; the guest resumes blocked on its port, ready for the run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../linux/creds.h"
#include "../linux/report.h"
#include "answer.h"
#include "channel.h"
#include "protocol.h"
#include "qemu.h"
#include "snapshot.h"

static void remove_run_dir(const char *dir)
{
	static const char *const files[] = {"chan.sock", "egress.sock", "mon.sock",
					    "console.log", "qemu.log", "ram"};
	char p[PATH_MAX + 32];
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

int vm_run_dir(const char *base, char *out, size_t n, uid_t uid, struct aj_error *err)
{
	/* Traversable by the jailed QEMUs (each run's own dir is 0700 and
	 * theirs); the slot locks' directory stays root's only. */
	if (mkdir(base, 0711) < 0 && errno != EEXIST)
		return error_set(err, -errno, "microvm: mkdir %s: %s", base, errno_name(errno));
	snprintf(out, n, "%s/run-XXXXXX", base);
	if (!mkdtemp(out))
		return error_set(err, -errno, "microvm: mkdtemp %s: %s", out, errno_name(errno));
	/* The jailed QEMU's own: its sockets and console log go here. */
	if (chown(out, uid, (gid_t)-1) < 0 || chmod(out, 0700) < 0) {
		int e = errno;
		rmdir(out);
		return error_set(err, -e, "microvm: chown %s: %s", out, errno_name(e));
	}
	return 0;
}

void vm_run_dir_remove(const char *dir)
{
	remove_run_dir(dir);
}

/* Waits for the guest agent's VM_READY on the channel. */
static int wait_ready(int chan, double deadline_ms, struct aj_error *err)
{
	uint32_t type, len;
	void *payload;
	int rc = channel_recv(chan, deadline_ms, -1, &type, &payload, &len);
	if (rc)
		return error_set(err, rc, "microvm: the guest never became ready (%s)",
				 rc == -ETIMEDOUT ? "timed out" : errno_name(-rc));
	rc = vm_ready_answer(type, payload, len, err);
	free(payload);
	return rc;
}

int vm_boot_probe(const struct vm_image *img, const char *run_base, const char *accel, uid_t uid,
		  gid_t gid, double timeout_ms, struct aj_error *err)
{
	char run[PATH_MAX], ram[PATH_MAX + 16], chan[PATH_MAX + 16], egress[PATH_MAX + 16],
		log[PATH_MAX + 16];
	int rc = vm_run_dir(run_base, run, sizeof run, uid, err);
	if (rc)
		return rc;
	snprintf(ram, sizeof ram, "%s/ram", run);
	snprintf(chan, sizeof chan, "%s/chan.sock", run);
	snprintf(egress, sizeof egress, "%s/egress.sock", run);
	snprintf(log, sizeof log, "%s/console.log", run);
	struct vm_launch l = {.accel = accel, .memory_mb = 256, .kernel = img->kernel,
			      .initrd = img->initrd,
			      .rootfs = img->rootfs, .ram_path = ram, .share = false,
			      .ram_dir = NULL, .run_dir = run, .chan_sock = chan,
			      .egress_sock = egress, .console_log = log, .incoming_fd = -1, .uid = uid, .gid = gid};
	pid_t pid;
	int pidfd = -1;
	double deadline = now_ms() + timeout_ms;
	rc = vm_launch(&l, &pid, &pidfd, err);
	if (!rc) {
		int ch = channel_connect(chan, deadline, pidfd);
		rc = ch < 0 ? error_set(err, ch, "microvm: connect: %s", errno_name(-ch))
			    : wait_ready(ch, deadline, err);
		if (rc) {
			char words[600];
			vm_last_words(run, words, sizeof words);
			if (words[0])
				error_set(err, rc, "%s (QEMU: %s)", err->message, words);
		}
		if (ch >= 0)
			close(ch);
		vm_destroy(pid, pidfd);
	}
	unlink(ram);
	remove_run_dir(run);
	return rc;
}

static int make_snapshot(const struct vm_image *img, const char *accel, unsigned mem_mb,
			 const char *dir, uid_t uid, gid_t gid, struct aj_error *err)
{
	char tmp[PATH_MAX], ram[PATH_MAX + 16], run[PATH_MAX + 16], chan[PATH_MAX + 32],
		mon[PATH_MAX + 32], log[PATH_MAX + 32], state[PATH_MAX + 16], cmd[PATH_MAX + 64],
		egress[PATH_MAX + 32], out[4096];
	int rc;

	snprintf(tmp, sizeof tmp, "%s.tmp-%d", dir, (int)getpid());
	snprintf(ram, sizeof ram, "%s/ram", tmp);
	snprintf(state, sizeof state, "%s/state", tmp);
	snprintf(run, sizeof run, "%s/run", tmp);
	snprintf(chan, sizeof chan, "%s/chan.sock", run);
	snprintf(mon, sizeof mon, "%s/mon.sock", run);
	snprintf(egress, sizeof egress, "%s/egress.sock", run);
	snprintf(log, sizeof log, "%s/console.log", run);
	/* root's, group the VMs' gid: they may read the state and map the
	 * RAM (QEMU 7.2 opens it read-write even to map it privately). */
	if (mkdir(tmp, 0770) < 0 || chown(tmp, 0, gid) < 0 || chmod(tmp, 0770) < 0 ||
	    mkdir(run, 0700) < 0 || chown(run, uid, gid) < 0)
		return error_set(err, -errno, "microvm: snapshot dir %s: %s", tmp, errno_name(errno));
	int fd = open(ram, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
	if (fd < 0 || ftruncate(fd, (off_t)mem_mb << 20) < 0 || fchown(fd, 0, gid) < 0 ||
	    fchmod(fd, 0660) < 0) {
		rc = error_set(err, -errno, "microvm: RAM file %s: %s", ram, errno_name(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	struct vm_launch l = {.accel = accel, .memory_mb = mem_mb, .kernel = img->kernel,
			      .initrd = img->initrd,
			      .rootfs = img->rootfs, .ram_path = ram, .share = true, .ram_dir = tmp,
			      .run_dir = run, .chan_sock = chan, .egress_sock = egress,
			      .mon_sock = mon, .console_log = log, .incoming_fd = -1,
			      /* exec: migration writes the state through cat. */
			      .allow_spawn = true, .uid = uid, .gid = gid};
	pid_t pid;
	int pidfd = -1;
	double deadline = now_ms() + 120000;
	if ((rc = vm_launch(&l, &pid, &pidfd, err)))
		goto out;
	int ch = channel_connect(chan, deadline, pidfd);
	int mfd = ch < 0 ? ch : monitor_open(mon, deadline, pidfd);
	if (ch < 0 || mfd < 0) {
		char words[600];
		vm_last_words(run, words, sizeof words);
		rc = error_set(err, ch < 0 ? ch : mfd, "microvm: connect to the new VM: %s%s%s",
			       errno_name(-(ch < 0 ? ch : mfd)), words[0] ? "; QEMU: " : "", words);
	} else if (!(rc = wait_ready(ch, deadline, err))) {
		snprintf(cmd, sizeof cmd, "migrate -d \"exec:cat > %s\"", state);
		const char *const steps[] = {"migrate_set_capability x-ignore-shared on",
					     "migrate_set_parameter max-bandwidth 100G", cmd};
		for (size_t i = 0; !rc && i < 3; i++)
			if ((rc = monitor_command(mfd, steps[i], out, sizeof out, deadline)))
				error_set(err, rc, "microvm: monitor '%s': %s (said: %.200s)",
					  steps[i], errno_name(-rc), out);
		/* Until the state is written: a few hundred ms. */
		while (!rc) {
			if ((rc = monitor_command(mfd, "info migrate", out, sizeof out, deadline))) {
				error_set(err, rc, "microvm: monitor 'info migrate': %s (said: %.300s)",
					  errno_name(-rc), out);
				break;
			}
			if (strstr(out, "Migration status: completed"))
				break;
			if (strstr(out, "Migration status: failed")) {
				rc = error_set(err, -EIO, "microvm: saving the VM failed: %.300s", out);
				break;
			}
			usleep(20000);
		}
	}
	if (mfd >= 0)
		close(mfd);
	if (ch >= 0)
		close(ch);
	vm_destroy(pid, pidfd);
	if (rc)
		goto out;
	if (chown(state, 0, gid) < 0 || chmod(state, 0640) < 0 || chmod(tmp, 0750) < 0) {
		rc = error_set(err, -errno, "microvm: snapshot permissions: %s", errno_name(errno));
		goto out;
	}
	remove_run_dir(run);
	if (rename(tmp, dir) < 0)
		rc = error_set(err, -errno, "microvm: rename %s: %s", tmp, errno_name(errno));
out:
	if (rc) {
		remove_run_dir(run);
		unlink(ram);
		unlink(state);
		rmdir(tmp);
	}
	return rc;
}

/* A snapshot made for another configuration's VM group (another uid range)
 * is handed to this one's: the jailed QEMUs reach it through the group. */
static int hand_over(const char *dir, gid_t gid, struct aj_error *err)
{
	static const char *const parts[] = {"", "/ram", "/state"};
	for (size_t i = 0; i < 3; i++) {
		char p[PATH_MAX + 16];
		struct stat st;
		snprintf(p, sizeof p, "%s%s", dir, parts[i]);
		if (lstat(p, &st) == 0 && st.st_gid != gid && chown(p, 0, gid) < 0)
			return error_set(err, -errno, "microvm: chown %s: %s", p, errno_name(errno));
	}
	return 0;
}

int vm_snapshot_ensure(const struct vm_image *img, const char *accel, unsigned mem_mb,
		       uid_t uid, gid_t gid, char *dir, size_t n, struct aj_error *err)
{
	snprintf(dir, n, "%s/snapshot-%s-%u", img->vm_dir, accel, mem_mb);
	char state[PATH_MAX + 16], lockp[PATH_MAX + 16];
	snprintf(state, sizeof state, "%s/state", dir);
	if (access(state, R_OK) == 0)
		return hand_over(dir, gid, err);
	/* One maker at a time; the others wait and then find it made. */
	snprintf(lockp, sizeof lockp, "%s/.snapshot.lock", img->vm_dir);
	int lock = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		int e = errno;
		if (lock >= 0)
			close(lock);
		return error_set(err, -e, "microvm: lock %s: %s", lockp, errno_name(e));
	}
	int rc = 0;
	if (access(state, R_OK) != 0)
		rc = make_snapshot(img, accel, mem_mb, dir, uid, gid, err);
	close(lock);
	return rc ? rc : hand_over(dir, gid, err);
}

void vm_run_dirs_sweep(const struct aj_config *cfg, const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "run-", 4))
			continue;
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof path, "%.3000s/%.200s", base, de->d_name);
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid < cfg->uid_base ||
		    st.st_uid - cfg->uid_base >= cfg->slots)
			continue;
		struct uid_slot slot = {.lock_fd = -1};
		struct aj_error e = {0};
		if (slot_acquire_nr(cfg, st.st_uid - cfg->uid_base, &slot, &e) == 0) {
			vm_run_dir_remove(path);
			slot_release(&slot);
		}
	}
	if (d)
		closedir(d);
}
