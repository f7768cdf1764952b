/* Starting a sandbox's first process and keeping fds from leaking into it. */
#ifndef AJ_SPAWN_H
#define AJ_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/* fork-like clone with namespace flags. In the parent returns the child's pid
 * and a pidfd for it (*pidfd, O_CLOEXEC), which stays valid however the child
 * ends; returns 0 in the child; -errno on failure. No atfork handlers and no
 * locks are taken, so it is safe from a multi-threaded process as long as the
 * child keeps to async-signal-safe calls. */
pid_t spawn_clone(unsigned long flags, int *pidfd);

/* The same, with the child born inside the cgroup v2 directory cgroup_fd
 * (clone3 CLONE_INTO_CGROUP): no migration afterwards, which would take the
 * kernel's global cgroup lock and can wait for an RCU grace period. */
pid_t spawn_clone_into_cgroup(unsigned long flags, int cgroup_fd, int *pidfd);

/* A child with no exit signal, born in cgroup_fd (v2) unless it is -1: the
 * kernel never reaps it on its own, even in an application that ignores
 * SIGCHLD, so its exit status is always there to collect (waitid on the
 * pidfd with __WALL). Only while it does not exec: exec resets the exit
 * signal to SIGCHLD. For a keeper whose status is the answer (gvisor). */
pid_t spawn_clone_quiet(int cgroup_fd, int *pidfd);

/* Waits (through EINTR) for the child behind pidfd to end, whatever its
 * exit signal (__WALL), and reaps it: 0 with *si filled, or -errno (si
 * zeroed) if it cannot be waited for. */
int spawn_reap(int pidfd, siginfo_t *si);

/* Closes every fd except those in keep[0..n) (n <= 8). */
void close_fds_except(const int *keep, int n);

/* For a child of a raw clone, before anything else: every signal back to
 * its default action and unblocked. The child inherits the calling thread's
 * mask and the application's dispositions (an ignored SIGCHLD would make the
 * kernel reap the program before init could see how it ended). */
int child_reset_signals(void);

/* For a child that never execs: zero its copy of the caller's command line
 * and environment, which /proc/<pid>/cmdline would show anyone who can see
 * the process. */
void child_scrub_args_and_env(void);

/* A pipe with both ends O_CLOEXEC; the read end non-blocking if asked. */
int pipe_cloexec(int fds[2], int nonblocking_read);

#endif
