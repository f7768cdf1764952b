/* The leftover census: everything a run could leave on the host, counted
 * before a tier is opened and after it is closed. A row this soak alone can
 * make grow ("ours": its uid range, its state directory, its cgroups and
 * containers, its own process) fails the soak when it grows; a machine-wide
 * row (every QEMU, every agentjail container) is shown for the reader, since
 * other work on a shared machine moves it too. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "soak.h"

static const char zygote_mark[] = "# The agentjail zygote";

struct proc {
	pid_t pid, ppid;
	uid_t uid;
	char comm[32];
	char cmdline[512];
};

static void read_small(const char *path, char *buf, size_t n, bool nul_to_space)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r <= 0)
		return;
	for (ssize_t i = 0; nul_to_space && i < r; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[r] = '\0';
}

static size_t list_procs(struct proc **out)
{
	size_t cap = 1024, n = 0;
	struct proc *v = calloc(cap, sizeof *v);
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (v && d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == cap) {
			struct proc *nv = realloc(v, 2 * cap * sizeof *v);
			if (!nv)
				break;
			v = nv, cap *= 2;
		}
		struct proc *p = &v[n];
		memset(p, 0, sizeof *p);
		p->pid = atoi(de->d_name);
		char path[64], status[2048];
		snprintf(path, sizeof path, "/proc/%d/status", (int)p->pid);
		read_small(path, status, sizeof status, false);
		const char *s;
		if (!status[0])
			continue; /* gone meanwhile */
		if ((s = strstr(status, "PPid:")))
			p->ppid = atoi(s + 5);
		if ((s = strstr(status, "Uid:")))
			p->uid = (uid_t)strtoul(s + 4, NULL, 10);
		if (sscanf(status, "Name: %31s", p->comm) != 1)
			p->comm[0] = '\0';
		snprintf(path, sizeof path, "/proc/%d/cmdline", (int)p->pid);
		read_small(path, p->cmdline, sizeof p->cmdline, true);
		n++;
	}
	if (d)
		closedir(d);
	*out = v;
	return v ? n : 0;
}

static bool descends_from(const struct proc *v, size_t n, pid_t pid, pid_t root)
{
	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		pid_t parent = 0;
		for (size_t i = 0; i < n; i++)
			if (v[i].pid == pid) {
				parent = v[i].ppid;
				break;
			}
		if (parent == root)
			return true;
		pid = parent;
	}
	return false;
}

static struct census_item *add(struct census *c, const char *name, enum census_scope scope)
{
	struct census_item *it = &c->item[c->count++];
	it->name = name;
	it->scope = scope;
	it->value = 0;
	it->detail[0] = '\0';
	return it;
}

static void note(struct census_item *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct census_item *it, const char *fmt, ...)
{
	size_t used = strlen(it->detail);
	if (used + 80 >= sizeof it->detail)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->detail + used, sizeof it->detail - used, fmt, ap);
	va_end(ap);
}

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	if (d)
		closedir(d), n--; /* opendir's own */
	return n;
}

static long status_field(pid_t pid, const char *field)
{
	char path[64], status[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	read_small(path, status, sizeof status, false);
	const char *s = strstr(status, field);
	return s ? strtol(s + strlen(field), NULL, 10) : -1;
}

long census_rss_kb(pid_t pid)
{
	return status_field(pid, "VmRSS:");
}

/* Mount table lines the engine makes for its own containers (their
 * overlays, unmounted by dockerd in its own time) are not a sandbox's;
 * docker's containers are counted on their own row. */
static bool engine_line(const char *line, size_t n)
{
	char l[700];
	snprintf(l, sizeof l, "%.*s", (int)(n < 690 ? n : 690), line);
	return strstr(l, " /var/lib/docker/") || strstr(l, " /run/docker/");
}

static char *read_mountinfo(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t cap = 1 << 16, len = 0, r;
	char *buf = malloc(cap);
	while (f && buf && (r = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += r;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb, cap *= 2;
		}
	}
	if (f)
		fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

const char *census_mount_diff(const char *before, const char *after)
{
	static char out[4096];
	size_t used = 0;
	out[0] = '\0';
	if (!before || !after)
		return out;
	const char *tables[2] = {before, after}, *signs = "-+";
	for (int t = 0; t < 2; t++) {
		const char *p = tables[t], *other = tables[1 - t];
		while (*p) {
			size_t n = strcspn(p, "\n");
			char line[700];
			snprintf(line, sizeof line, "\n%.*s\n", (int)(n < 680 ? n : 680), p);
			bool found = strstr(other, line + 1) == other || strstr(other, line) ||
				     engine_line(p, n);
			if (!found && used + n + 4 < sizeof out)
				used += (size_t)snprintf(out + used, sizeof out - used, "%c %.*s\n",
							 signs[t], (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
	return out;
}

/* Entries of each hierarchy's agentjail/ (v1: one per controller; v2: the
 * unified tree) named run-PID-*: a run's cgroup, removed when it ends. */
static void count_cgroups(const struct census_scope_def *s, struct census_item *ours,
			  struct census_item *all)
{
	char mine[32];
	snprintf(mine, sizeof mine, "run-%d-", (int)s->owner);
	DIR *root = opendir("/sys/fs/cgroup");
	struct dirent *h;
	char parents[32][300];
	size_t np = 0;
	snprintf(parents[np++], sizeof parents[0], "/sys/fs/cgroup/agentjail");
	while (root && (h = readdir(root)) && np < 32)
		if (h->d_name[0] != '.')
			snprintf(parents[np++], sizeof parents[0], "/sys/fs/cgroup/%.100s/agentjail",
				 h->d_name);
	if (root)
		closedir(root);
	for (size_t i = 0; i < np; i++) {
		DIR *d = opendir(parents[i]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (strncmp(de->d_name, "run-", 4))
				continue;
			all->value++;
			if (strncmp(de->d_name, mine, strlen(mine)) == 0) {
				ours->value++;
				note(ours, "%s/%s ", parents[i], de->d_name);
			}
		}
		if (d)
			closedir(d);
	}
}

static long count_entries(const char *dir, const char *prefix, struct census_item *it)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long n = 0;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		n++;
		if (it)
			note(it, "%s/%s ", dir, de->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* A slot is held while some process keeps an flock on its file: taking
 * the lock ourselves, without waiting, says whether anyone does. */
static void count_slot_locks(const struct census_scope_def *s, struct census_item *held,
			     struct census_item *files)
{
	for (uint32_t i = 0; i < s->slots + 8; i++) {
		char path[600];
		snprintf(path, sizeof path, "%s/slot-%u", s->state_dir, i);
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		files->value++;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			held->value++;
			note(held, "slot-%u ", i);
		} else {
			flock(fd, LOCK_UN);
		}
		close(fd);
	}
}

static void count_containers(const struct census_scope_def *s, struct census_item *ours,
			     struct census_item *all)
{
	FILE *p = popen("docker ps -a --no-trunc --filter label=org.agentjail.run "
			"--format '{{.ID}} {{.Label \"org.agentjail.owner\"}}' 2>/dev/null",
			"re");
	char line[512], mine[32];
	snprintf(mine, sizeof mine, ":%d:", (int)s->owner);
	while (p && fgets(line, sizeof line, p)) {
		all->value++;
		if (strstr(line, mine)) {
			ours->value++;
			note(ours, "%.12s ", line);
		}
	}
	if (p)
		pclose(p);
}

void census_take(const struct census_scope_def *s, struct census *c)
{
	memset(c, 0, sizeof *c);
	pid_t self = getpid();
	/* The caller's own first, before this census opens anything. */
	struct census_item *fds = add(c, "fds of the caller", SCOPE_OURS);
	fds->value = count_fds();
	add(c, "threads of the caller", SCOPE_OURS)->value = status_field(self, "Threads:");

	struct proc *v = NULL;
	size_t n = list_procs(&v);
	struct census_item *desc = add(c, "processes: descendants of the soak", SCOPE_OURS);
	struct census_item *uids = add(c, "processes: on the sandbox uids", SCOPE_OURS);
	struct census_item *qemu = add(c, "qemu-system-* of ours", SCOPE_OURS);
	struct census_item *runsc = add(c, "runsc of ours", SCOPE_OURS);
	struct census_item *zyg = add(c, "zygotes of ours", SCOPE_OURS);
	struct census_item *qemu_all = add(c, "qemu-system-* (machine)", SCOPE_SHARED);
	struct census_item *runsc_all = add(c, "runsc (machine)", SCOPE_SHARED);
	struct census_item *zyg_all = add(c, "zygotes (machine)", SCOPE_SHARED);
	char gvisor_dir[600];
	snprintf(gvisor_dir, sizeof gvisor_dir, "%s-gvisor/", s->state_dir);
	for (size_t i = 0; i < n; i++) {
		const struct proc *p = &v[i];
		if (p->pid == self)
			continue;
		bool mine_desc = descends_from(v, n, p->pid, self);
		bool mine_uid = p->uid >= s->uid_base && p->uid < s->uid_base + s->slots;
		bool is_qemu = strncmp(p->comm, "qemu-system", 11) == 0;
		bool is_runsc = strstr(p->comm, "runsc") || strstr(p->cmdline, "runsc");
		bool is_zyg = strstr(p->cmdline, zygote_mark) != NULL;
		if (mine_desc)
			desc->value++, note(desc, "%d(%s) ", (int)p->pid, p->comm);
		if (mine_uid)
			uids->value++, note(uids, "%d(%s,uid %u) ", (int)p->pid, p->comm, p->uid);
		if (is_qemu) {
			qemu_all->value++;
			if (mine_desc || mine_uid || strstr(p->cmdline, s->state_dir))
				qemu->value++, note(qemu, "%d ", (int)p->pid);
		}
		if (is_runsc) {
			runsc_all->value++;
			if (mine_desc || strstr(p->cmdline, gvisor_dir))
				runsc->value++, note(runsc, "%d ", (int)p->pid);
		}
		if (is_zyg) {
			zyg_all->value++;
			if (mine_desc || mine_uid)
				zyg->value++, note(zyg, "%d ", (int)p->pid);
		}
	}
	free(v);

	c->mountinfo = read_mountinfo();
	struct census_item *mounts = add(c, "mounts: host table entries", SCOPE_OURS);
	struct census_item *under = add(c, "mounts: under the state dirs", SCOPE_OURS);
	for (const char *p = c->mountinfo ? c->mountinfo : ""; *p;) {
		size_t len = strcspn(p, "\n");
		if (!engine_line(p, len))
			mounts->value++;
		char l[700];
		snprintf(l, sizeof l, "%.*s", (int)(len < 690 ? len : 690), p);
		char needle[620];
		snprintf(needle, sizeof needle, " %s", s->state_dir);
		if (strstr(l, needle))
			under->value++, note(under, "%.200s | ", l);
		p += len + (p[len] == '\n');
	}

	struct census_item *cg = add(c, "cgroups: agentjail/run-PID-* of ours", SCOPE_OURS);
	struct census_item *cg_all = add(c, "cgroups: agentjail/run-* (machine)", SCOPE_SHARED);
	count_cgroups(s, cg, cg_all);

	if (s->docker) {
		struct census_item *ct = add(c, "docker containers of ours", SCOPE_OURS);
		struct census_item *ct_all = add(c, "docker containers agentjail's (machine)",
						 SCOPE_SHARED);
		count_containers(s, ct, ct_all);
	}

	struct census_item *runs = add(c, "run dirs: <state>-vm, <state>-gvisor", SCOPE_OURS);
	char dir[600];
	snprintf(dir, sizeof dir, "%s-vm", s->state_dir);
	runs->value += count_entries(dir, "", runs);
	snprintf(dir, sizeof dir, "%s-gvisor", s->state_dir);
	runs->value += count_entries(dir, "", runs);
	struct census_item *tmp = add(c, "temp: /tmp /var/tmp /dev/shm entries (machine)",
				      SCOPE_SHARED);
	tmp->value = count_entries("/tmp", "", NULL) + count_entries("/var/tmp", "", NULL) +
		     count_entries("/dev/shm", "", NULL);
	struct census_item *tmp_aj = add(c, "temp: *agentjail* in /tmp /var/tmp /dev/shm",
					 SCOPE_SHARED);
	tmp_aj->value = count_entries("/tmp", "agentjail", tmp_aj) +
			count_entries("/var/tmp", "agentjail", tmp_aj) +
			count_entries("/dev/shm", "agentjail", tmp_aj);

	struct census_item *held = add(c, "uid slot locks held", SCOPE_OURS);
	struct census_item *files = add(c, "uid slot lock files (kept by design)", SCOPE_SHARED);
	count_slot_locks(s, held, files);

	add(c, "caller VmRSS KiB", SCOPE_SHARED)->value = census_rss_kb(self);
}

void census_free(struct census *c)
{
	free(c->mountinfo);
	c->mountinfo = NULL;
}

int census_compare(const char *title, const struct census *before, const struct census *after)
{
	int grew = 0;
	printf("  census %s:\n", title);
	printf("    %-48s %8s %8s\n", "", "before", "after");
	for (size_t i = 0; i < after->count && i < before->count; i++) {
		/* The scope is the before census's: a caller may have marked a
		 * row shared (another agentjail's range) there. */
		const struct census_item *b = &before->item[i], *a = &after->item[i];
		bool bad = b->scope == SCOPE_OURS && a->value > b->value;
		printf("    %-48s %8ld %8ld%s\n", a->name, b->value, a->value,
		       bad ? "  LEFT OVER" : b->scope == SCOPE_SHARED ? "  (shared)" : "");
		if (bad) {
			grew++;
			if (a->detail[0])
				printf("      left: %s\n", a->detail);
		}
	}
	/* A mount that appeared counts even where another went. */
	const char *diff = census_mount_diff(before->mountinfo, after->mountinfo);
	if (diff[0]) {
		printf("    mount table changed:\n%s", diff);
		if (strstr(diff, "+ ") == diff || strstr(diff, "\n+ "))
			grew++;
	}
	return grew;
}
