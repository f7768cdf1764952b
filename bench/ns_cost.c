/* bench/ns_cost.c: what each kind of namespace costs the machine in CPU,
 * made and torn down once per process, as a sandbox's run makes its own.
 * Figures only. For each kind: N children that unshare it and exit, one
 * after another; the machine's busy CPU (/proc/stat, every core: the
 * kernel's deferred cleanup in kworkers included, counted after a 2 s
 * settle) per child, and that minus the bare fork-and-exit row measured in
 * the same run. Root only (unshare of these needs CAP_SYS_ADMIN).
 *
 *   cc -O2 -o build/ns_cost bench/ns_cost.c && build/ns_cost [N]  */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static double busy_ms(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &v[6], &v[7]) != 8) {
		perror("/proc/stat");
		exit(1);
	}
	fclose(f);
	/* user nice system (idle iowait) irq softirq steal */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000.0 / sysconf(_SC_CLK_TCK);
}

static double per_child(int flags, int n)
{
	double b0 = busy_ms();
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			exit(1);
		}
		if (!p)
			_exit(flags && unshare(flags) ? 1 : 0);
		int st;
		if (waitpid(p, &st, 0) < 0 || st) {
			fprintf(stderr, "ns_cost: unshare(%#x) failed\n", flags);
			exit(1);
		}
	}
	sleep(2); /* the deferred cleanup (a network namespace's) lands */
	return (busy_ms() - b0) / n;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	static const struct {
		int flag;
		const char *name;
	} kinds[] = {{CLONE_NEWNET, "network"}, {CLONE_NEWNS, "mount"}, {CLONE_NEWIPC, "ipc"},
		     {CLONE_NEWUTS, "uts"}, {CLONE_NEWPID, "pid (made, never entered)"}};
	double bare = per_child(0, n);
	printf("%d children each, %ld CPUs; machine CPU per child (ms), and beyond a bare fork+exit\n",
	       n, sysconf(_SC_NPROCESSORS_ONLN));
	printf("  %-28s %6.3f\n", "fork + exit, no namespace", bare);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		double c = per_child(kinds[i].flag, n);
		printf("  %-28s %6.3f  %+.3f\n", kinds[i].name, c, c - bare);
	}
	return 0;
}
