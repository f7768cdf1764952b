/* The agent's clock: monotonic, so a restored copy's wall-clock jump (restore.c
 * sets it from the RTC) never moves a run's deadline. */
#include <errno.h>
#include <time.h>

#include "agent.h"

int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
