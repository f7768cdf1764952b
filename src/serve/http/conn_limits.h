/* Deadlines on a connection's requests, kept by a thread of their own
 * (conn_limits.c): libmicrohttpd's own timeout is idle-based, so a client
 * that sends one byte of its request head, or one digit of a chunk size,
 * every few seconds keeps its connection (and the thread serving it) for
 * ever, and 512 such clients hold every slot (issue 35: 520 sockets
 * without a key shut out every other client for as long as they wished).
 *
 * A connection is in one of three phases:
 *   head    from its accept, or from its previous answer's end (keep-alive):
 *           it has head_sec to send a whole request head;
 *   body    from its head: body_sec to send the whole body, chunked or not;
 *   answer  from its body's end to its answer's: no deadline here (a run
 *           lasts what its limits allow; a client that stops reading meets
 *           libmicrohttpd's idle timeout).
 * Past a deadline the thread writes a 408 to the socket and shuts it down:
 * the connection's own thread then reads the end and closes it. */
#ifndef AJ_SERVE_CONN_LIMITS_H
#define AJ_SERVE_CONN_LIMITS_H

#include <stdbool.h>

struct conn_watch;

/* Starts the thread: 0, or -errno. */
int conn_limits_start(unsigned head_sec, unsigned body_sec);
void conn_limits_stop(void);

/* A connection accepted on fd: watched from now, its head due in head_sec.
 * NULL when memory ran out (the connection is then not watched). */
struct conn_watch *conn_watch_add(int fd);
/* Unwatched: before its socket is closed, so the fd is never another's. */
void conn_watch_remove(struct conn_watch *w);
/* Its head is in: the body is due in body_sec. */
void conn_watch_body(struct conn_watch *w);
/* Its body is in: no deadline until the answer ends. */
void conn_watch_answer(struct conn_watch *w);
/* Its answer ended: the next head is due in head_sec. */
void conn_watch_next(struct conn_watch *w);

/* The URL of its request decoded to a NUL byte (%00), which the server
 * then refuses: set by the URL decoder, read and cleared once the head is
 * in. */
void conn_watch_mark_nul(struct conn_watch *w);
bool conn_watch_take_nul(struct conn_watch *w);

#endif
