/* bench-docker: the docker tier beside `docker run --rm` with the same
 * hardening, for print(1), measured interleaved in one run:
 *
 *   docker-cli  docker run --rm with the seed article's flags, plus the
 *               tier's seccomp profile, no log driver and the tmpfs: the
 *               command a team would otherwise run
 *   agentjail   agentjail run --tier docker (a command, like the row above)
 *   library     aj_run on an open docker-tier sandbox (what `agentjail mcp`
 *               and an embedding server pay per call)
 *
 * Then where the library's time goes (create, attach, start, the program,
 * wait/inspect, remove; medians), and what a pool of pre-created containers
 * would take off each run (create + attach, done ahead of time).
 *
 * Each row: runs, median, p95 (nearest rank), and the ratio of medians to
 * docker-cli. No assertion: figures only. */
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentjail.h"
#include "../src/cli/measure.h"
#include "src/docker/phases.h"

#include "docker_seccomp.inc"

extern char **environ;

int main(int argc, char **argv)
{
	int runs = 30;
	const char *image = "agentjail/default";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--docker-image") && i + 1 < argc)
			image = argv[++i];
		else {
			fprintf(stderr, "usage: bench-docker [--runs N] [--docker-image NAME]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 10000) {
		fprintf(stderr, "bench-docker: --runs must be 1 to 10000\n");
		return 2;
	}

	/* The profile the tier sends, as a file for the CLI. */
	char prof[] = "/tmp/agentjail-bench-seccomp-XXXXXX";
	int pf = mkstemp(prof);
	if (pf < 0 || write(pf, docker_seccomp_profile, strlen(docker_seccomp_profile)) < 0) {
		perror("bench-docker: profile");
		return 1;
	}
	close(pf);
	char secopt[80];
	snprintf(secopt, sizeof secopt, "seccomp=%s", prof);
	char *cli[] = {"docker", "run", "--rm", "--network", "none", "--read-only", "--cap-drop",
		       "ALL", "--security-opt", "no-new-privileges", "--security-opt", secopt,
		       "-m", "256m", "--memory-swap", "256m", "--cpus", "1", "--pids-limit", "64",
		       "--user", "2000000000:2000000000", "--tmpfs", "/tmp:size=56m",
		       "--log-driver", "none", (char *)image, "python3", "-I", "-c", "print(1)",
		       NULL};
	char aj[4096];
	ssize_t l = readlink("/proc/self/exe", aj, sizeof aj - 32);
	if (l < 0)
		return 1;
	aj[l] = 0;
	strcpy(strrchr(aj, '/') + 1, "agentjail");
	char img_opt[300];
	snprintf(img_opt, sizeof img_opt, "--docker-image=%s", image);
	char prog[] = "/tmp/agentjail-bench-print-XXXXXX";
	int fd = mkstemp(prog);
	if (fd < 0 || write(fd, "print(1)\n", 9) != 9)
		return 1;
	close(fd);
	char *ajrun[] = {aj, "run", "--tier", "docker", img_opt, prog, NULL};

	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.tier = AJ_TIER_DOCKER;
	cfg.docker_image = image;
	struct aj_sandbox *sb;
	struct aj_error err;
	if (aj_open(&cfg, &sb, &err)) {
		fprintf(stderr, "bench-docker: %s\n", err.message);
		return 1;
	}

	double *v[3], *ph[6];
	int n[3] = {0};
	for (int i = 0; i < 3; i++)
		v[i] = calloc((size_t)runs, sizeof(double));
	for (int i = 0; i < 6; i++)
		ph[i] = calloc((size_t)runs, sizeof(double));
	int warm = 3, failed[3] = {0};
	for (int round = -warm; round < runs; round++) {
		double t[3];
		t[0] = measure_spawn_ok_ms(cli);
		t[1] = measure_spawn_ok_ms(ajrun);
		struct aj_result r;
		double s = measure_now_ms();
		aj_run(sb, "print(1)\n", 9, &r);
		t[2] = r.status == AJ_STATUS_OK ? measure_now_ms() - s : -1;
		aj_result_free(&r);
		if (round < 0)
			continue;
		for (int i = 0; i < 3; i++) {
			if (t[i] < 0)
				failed[i]++;
			else
				v[i][n[i]++] = t[i];
		}
		if (t[2] >= 0) {
			struct docker_phases p = docker_last_phases;
			double parts[6] = {p.create, p.attach, p.start, p.run, p.wait, p.remove};
			for (int i = 0; i < 6; i++)
				ph[i][n[2] - 1] = parts[i];
		}
	}
	aj_close(sb);
	unlink(prof);
	unlink(prog);

	/* Sorted once, for the percentiles below; each phase on its own. */
	for (int i = 0; i < 3; i++)
		measure_sort(v[i], (size_t)n[i]);
	for (int i = 0; i < 6; i++)
		measure_sort(ph[i], (size_t)n[2]);
	const char *names[3] = {"docker-cli", "agentjail", "library"};
	printf("docker tier, print(1), %d runs after %d warm-up, image %s\n\n", runs, warm, image);
	printf("%-11s %5s  %9s  %9s  %s\n", "row", "runs", "median ms", "p95 ms", "vs docker-cli");
	double base = n[0] ? measure_percentile(v[0], (size_t)n[0], 50) : NAN;
	for (int i = 0; i < 3; i++) {
		if (!n[i]) {
			printf("%-11s %5d  (every run failed)\n", names[i], 0);
			continue;
		}
		double m = measure_percentile(v[i], (size_t)n[i], 50);
		printf("%-11s %5d  %9.1f  %9.1f  %.2fx%s\n", names[i], n[i], m, measure_percentile(v[i], (size_t)n[i], 95),
		       m / base, failed[i] ? "  (some runs failed)" : "");
	}
	if (n[2]) {
		const char *pn[6] = {"create", "attach", "start", "program", "wait+inspect",
				     "remove"};
		printf("\nwhere the library's time goes (medians, ms):\n");
		double pre = 0;
		for (int i = 0; i < 6; i++) {
			double m = measure_percentile(ph[i], (size_t)n[2], 50);
			printf("  %-13s %7.1f\n", pn[i], m);
			if (i < 2)
				pre += m;
		}
		printf("a pool of pre-created, pre-attached containers would take %.1f ms (create + "
		       "attach) off a %.1f ms run\n",
		       pre, measure_percentile(v[2], (size_t)n[2], 50));
	}
	return 0;
}
