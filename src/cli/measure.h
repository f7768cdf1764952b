/* What every latency measurement here shares: `agentjail bench` and the
 * benchmark programs in bench/ (which include this header by path). A
 * monotonic clock, a program found on PATH, a command timed with its
 * streams on /dev/null, nearest-rank percentiles, and the machine's CPUs. Header-only and free of
 * the library, so a benchmark stays one program. */
#ifndef AJ_MEASURE_H
#define AJ_MEASURE_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double measure_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Runs argv (argv[0] a path, or a name found on PATH) once with all three standard
 * streams on /dev/null, so terminal or pipe speed is not measured, timed
 * from just before posix_spawn to just after waitpid. Returns 0 with *ms and
 * the wait status, or -errno when it could not be spawned at all. */
static inline int measure_spawn(char *const argv[], double *ms, int *wstatus)
{
	extern char **environ;
	posix_spawn_file_actions_t fa;
	int rc = posix_spawn_file_actions_init(&fa);
	if (rc)
		return -rc;
	for (int fd = 0; fd <= 2 && !rc; fd++)
		rc = posix_spawn_file_actions_addopen(&fa, fd, "/dev/null",
						      fd == 0 ? O_RDONLY : O_WRONLY, 0);
	pid_t pid = -1;
	double start = measure_now_ms();
	if (!rc)
		rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -rc;
	while (waitpid(pid, wstatus, 0) < 0)
		if (errno != EINTR)
			return -errno;
	*ms = measure_now_ms() - start;
	return 0;
}

/* The same, for a row that only counts successes: ms, or -1 if it could not
 * be spawned or did not exit 0. */
static inline double measure_spawn_ok_ms(char *const argv[])
{
	double ms = 0;
	int ws = 0;
	return measure_spawn(argv, &ms, &ws) == 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? ms
												: -1;
}

/* Absolute path of an executable named on PATH, or NULL. Resolved here, not
 * by posix_spawnp, so that "not installed" can be told from "failed". */
static inline char *measure_find_in_path(const char *name)
{
	const char *env = getenv("PATH");
	char *dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
	if (!dirs)
		return NULL;
	char *found = NULL, *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *p;
		if (asprintf(&p, "%s/%s", *d ? d : ".", name) < 0)
			break;
		if (access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(dirs);
	return found;
}

static inline int measure_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static inline void measure_sort(double *v, size_t n)
{
	qsort(v, n, sizeof *v, measure_cmp);
}

/* Nearest-rank percentile of a sorted array: the smallest sample with at
 * least p percent of the samples at or below it. It is always a measured
 * value, never an interpolation between two runs. */
static inline double measure_percentile(const double *sorted, size_t n, double p)
{
	if (n == 0)
		return NAN;
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* CPUs this process may run on, as nproc(1) counts them. */
static inline long measure_usable_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? n : 1;
}

/* /proc/cpuinfo's first "model name", or "unknown". */
static inline void measure_cpu_model(char *out, size_t len)
{
	snprintf(out, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && colon) {
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(out, len, "%s", colon + 1 + strspn(colon + 1, " \t"));
			break;
		}
	}
	fclose(f);
}

#endif
