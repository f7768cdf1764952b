/* What the benchmark programs share: a monotonic clock and nearest-rank
 * percentiles. Header-only: each benchmark stays one program. */
#ifndef AJ_BENCH_STATS_H
#define AJ_BENCH_STATS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The p-th percentile (nearest rank) of v[0..n), which is left as it was. */
static inline double bench_pct(const double *v, int n, double p)
{
	if (n <= 0)
		return NAN;
	double *s = malloc(sizeof *s * (size_t)n);
	if (!s)
		return NAN;
	memcpy(s, v, sizeof *s * (size_t)n);
	qsort(s, (size_t)n, sizeof *s, bench_cmp);
	int k = (int)ceil(p / 100.0 * n);
	double r = s[k < 1 ? 0 : k - 1];
	free(s);
	return r;
}

#endif
