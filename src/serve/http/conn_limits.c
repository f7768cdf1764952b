/* The connections' deadlines (conn_limits.h): a list of the open
 * connections under one lock, walked twice a second. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "../../core/internal.h"
#include "conn_limits.h"

struct conn_watch {
	int fd;
	double due_ms; /* 0: no deadline (answering) */
	bool cut;      /* its 408 is sent: never again */
	atomic_bool nul;
	struct conn_watch *prev, *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct conn_watch *head;
static double head_ms, body_ms;
static bool running, stopping;
static pthread_t thread;

/* What a client past its deadline reads, if it still reads. */
static const char timeout_answer[] =
	"HTTP/1.1 408 Request Timeout\r\n"
	"Content-Type: application/json\r\n"
	"Connection: close\r\n"
	"Content-Length: 88\r\n"
	"\r\n"
	"{\"error\": {\"code\": \"request_timeout\", \"message\": \"the request did not arrive in time\"}}\n";

static void cut_overdue(double now)
{
	for (struct conn_watch *w = head; w; w = w->next) {
		if (w->cut || !w->due_ms || now < w->due_ms)
			continue;
		w->cut = true;
		/* The connection's thread only reads in these phases, so the
		 * answer cannot interleave with one of its own; under the lock,
		 * the fd is still this connection's (remove comes before close). */
		(void)!send(w->fd, timeout_answer, sizeof timeout_answer - 1,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		shutdown(w->fd, SHUT_RDWR);
	}
}

static void *watch_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		cut_overdue(now_ms());
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 500 * 1000000L; /* a deadline is kept to half a second */
		if (t.tv_nsec >= 1000000000L)
			t.tv_sec++, t.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&wake, &lock, &t);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int conn_limits_start(unsigned head_sec, unsigned body_sec)
{
	head_ms = head_sec * 1000.0;
	body_ms = body_sec * 1000.0;
	stopping = false;
	int rc = pthread_create(&thread, NULL, watch_main, NULL);
	if (rc)
		return -rc;
	running = true;
	return 0;
}

void conn_limits_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	running = false;
}

static void set_due(struct conn_watch *w, double ms)
{
	if (!w)
		return;
	pthread_mutex_lock(&lock);
	w->due_ms = ms ? now_ms() + ms : 0;
	pthread_mutex_unlock(&lock);
}

struct conn_watch *conn_watch_add(int fd)
{
	struct conn_watch *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->fd = fd;
	pthread_mutex_lock(&lock);
	w->due_ms = now_ms() + head_ms;
	w->next = head;
	if (head)
		head->prev = w;
	head = w;
	pthread_mutex_unlock(&lock);
	return w;
}

void conn_watch_remove(struct conn_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&lock);
	free(w);
}

void conn_watch_body(struct conn_watch *w)
{
	set_due(w, body_ms);
}

void conn_watch_answer(struct conn_watch *w)
{
	set_due(w, 0);
}

void conn_watch_next(struct conn_watch *w)
{
	set_due(w, head_ms);
}

void conn_watch_mark_nul(struct conn_watch *w)
{
	if (w)
		atomic_store(&w->nul, true);
}

bool conn_watch_take_nul(struct conn_watch *w)
{
	return w && atomic_exchange(&w->nul, false);
}
