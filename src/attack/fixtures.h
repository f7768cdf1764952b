/* The host's side of the hostile-program table (programs.h): the fixtures a
 * program's needs name, made the same way for the tests, the soak and
 * `agentjail attack`, and the evidence an escape would leave in them. */
#ifndef AJ_ATTACK_FIXTURES_H
#define AJ_ATTACK_FIXTURES_H

#include <stddef.h>

/* A non-blocking TCP listener on ip (port 0: any), its port in *port; the
 * fd, or -1 with errno set. */
int hostile_tcp_listener(const char *ip, int *port);

/* A non-blocking, world-connectable (0666) unix listener at path; the fd,
 * or -1 with errno set. */
int hostile_unix_listener(const char *path);

/* 1 if connections were waiting on the listener (each is taken, so none
 * is charged to the next run), else 0. */
int hostile_drain(int fd);

/* The caller's secret, as ~/.ssh/id_rsa is: a 0600 file "secret" holding
 * token in a fresh 0700 directory made from the mkdtemp template dir (its
 * XXXXXX filled in); file gets its path. 0, or -1 with errno set. */
int hostile_secret_make(char *dir, char *file, size_t file_n, const char *token);

/* Marker files named MARKER TOKEN in hostile_marker_dirs and cwd: how many
 * there were, each removed (evidence taken; the host left clean); the
 * first one's path in first (if non-NULL). */
int hostile_markers_take(const char *marker, const char *token, const char *cwd, char *first,
			 size_t first_n);

#endif
