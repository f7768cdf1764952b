/* Where a docker-tier run's time went, for the benchmark (bench/docker.c):
 * the calling thread's last run, in ms. */
#ifndef AJ_DOCKER_PHASES_H
#define AJ_DOCKER_PHASES_H

struct docker_phases {
	double create;   /* POST /containers/create */
	double attach;   /* connect + the 101 upgrade */
	double start;    /* POST /containers/{id}/start */
	double run;      /* start's reply to the stream's end: the program */
	double wait;     /* kill if needed, wait, inspect (and events) */
	double remove;   /* DELETE /containers/{id} */
};

extern _Thread_local struct docker_phases docker_last_phases;

#endif
