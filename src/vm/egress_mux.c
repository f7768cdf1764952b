/* The egress port's streams and frames, both ends (egress_mux.h). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress_mux.h"

__attribute__((format(printf, 2, 3)))
static int refuse_frame(struct egress_mux *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->why, sizeof m->why, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

void egress_mux_init(struct egress_mux *m, int port, egress_open_fn *open, void *ctx,
		     bool port_eof_ends)
{
	memset(m, 0, sizeof *m);
	m->port = port;
	m->open = open;
	m->ctx = ctx;
	m->port_eof_ends = port_eof_ends;
	/* On the host the port is QEMU's socket, which a VM that ends closes:
	 * a write there would raise SIGPIPE in the application that embeds
	 * the library (send's MSG_NOSIGNAL makes it EPIPE). The guest's port
	 * is a virtio-serial device, which send() cannot take. */
	struct stat st;
	m->port_is_socket = fstat(port, &st) == 0 && S_ISSOCK(st.st_mode);
	for (unsigned i = 0; i < EGRESS_STREAMS; i++)
		m->s[i].fd = -1;
}

static void close_local(struct egress_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->in);
	s->in = NULL;
	s->in_len = s->out_len = 0;
	s->local_done = true;
}

/* Both CLOSEs exchanged: the id is free again. */
static void maybe_release(struct egress_stream *s)
{
	if (s->sent_close && s->got_close) {
		close_local(s);
		memset(s, 0, sizeof *s);
		s->fd = -1;
	}
}

static int stream_start(struct egress_stream *s, int fd)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	/* The one buffer the peer fills: at most a window, by the credit
	 * rule, so it never grows. */
	s->in = malloc(EGRESS_WINDOW);
	if (!s->in) {
		s->fd = -1;
		return -ENOMEM;
	}
	s->used = true;
	s->send_credit = s->recv_allow = EGRESS_WINDOW;
	return 0;
}

bool egress_mux_has_room(const struct egress_mux *m)
{
	for (unsigned i = 0; i < EGRESS_STREAMS; i++)
		if (!m->s[i].used)
			return true;
	return false;
}

int egress_mux_add(struct egress_mux *m, int fd)
{
	for (unsigned i = 0; i < EGRESS_STREAMS; i++) {
		if (m->s[i].used)
			continue;
		int rc = stream_start(&m->s[i], fd);
		if (rc) {
			close(fd);
			return rc;
		}
		m->s[i].open_pending = true;
		return 0;
	}
	close(fd);
	return -EMFILE;
}

/* Writes what the peer sent to our end, as much as it takes now; what was
 * written becomes credit to grant. An error there aborts the stream. */
static void flush_in(struct egress_stream *s)
{
	while (s->in_len > 0 && s->fd >= 0) {
		ssize_t w = send(s->fd, s->in, s->in_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			s->abort = true;
			close_local(s);
			return;
		}
		memmove(s->in, s->in + w, s->in_len - (size_t)w);
		s->in_len -= (uint32_t)w;
		s->grant += (uint32_t)w;
	}
}

/* A frame's header, complete: checked against every rule before a byte of
 * its payload is taken. */
static int frame_begins(struct egress_mux *m)
{
	struct egress_frame *f = &m->cur;
	memcpy(f, m->head, sizeof *f);
	m->payload_left = 0;
	if (f->zero != 0)
		return refuse_frame(m, "a frame's reserved byte is %u, not 0", f->zero);
	if (f->id >= EGRESS_STREAMS)
		return refuse_frame(m, "stream id %u is not below %u", f->id, EGRESS_STREAMS);
	struct egress_stream *s = &m->s[f->id];
	switch (f->type) {
	case EGRESS_OPEN:
		if (!m->open)
			return refuse_frame(m, "OPEN of stream %u from the host", f->id);
		if (f->len)
			return refuse_frame(m, "OPEN of stream %u with length %u", f->id, f->len);
		if (s->used)
			return refuse_frame(m, "OPEN of stream %u, which is in use", f->id);
		int fd = m->open(m->ctx, f->id);
		int rc = stream_start(s, fd >= 0 ? fd : -1);
		if (rc) {
			if (fd >= 0)
				close(fd);
			return rc;
		}
		if (fd < 0) {
			/* No way on for it (the proxy is stopping): closed at once. */
			s->abort = true;
			close_local(s);
		}
		return 0;
	case EGRESS_DATA:
		if (!s->used || s->got_close)
			return refuse_frame(m, "DATA for stream %u, which is not open", f->id);
		if (f->len == 0 || f->len > EGRESS_CHUNK)
			return refuse_frame(m, "DATA of %u bytes (1..%u)", f->len, EGRESS_CHUNK);
		if (f->len > s->recv_allow)
			return refuse_frame(m, "DATA of %u bytes on stream %u, past its credit of %u", f->len,
				   f->id, s->recv_allow);
		s->recv_allow -= f->len;
		m->payload_left = f->len;
		return 0;
	case EGRESS_CREDIT:
		if (!s->used || s->got_close)
			return refuse_frame(m, "CREDIT for stream %u, which is not open", f->id);
		if (f->len == 0 || f->len > EGRESS_WINDOW - s->send_credit)
			return refuse_frame(m, "CREDIT of %u on stream %u, past its window", f->len, f->id);
		s->send_credit += f->len;
		return 0;
	case EGRESS_CLOSE:
		if (!s->used || s->got_close)
			return refuse_frame(m, "CLOSE of stream %u, which is not open", f->id);
		if (f->len)
			return refuse_frame(m, "CLOSE of stream %u with length %u", f->id, f->len);
		/* The peer is done: what we hold for it goes, and our end
		 * with it. */
		s->got_close = true;
		close_local(s);
		maybe_release(s);
		return 0;
	default:
		return refuse_frame(m, "frame type %u is not one of the egress port's", f->type);
	}
}

int egress_mux_feed(struct egress_mux *m, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n > 0) {
		if (m->payload_left == 0) {
			size_t take = sizeof m->head - m->head_got;
			take = take < n ? take : n;
			memcpy(m->head + m->head_got, p, take);
			m->head_got += (uint32_t)take;
			p += take;
			n -= take;
			if (m->head_got < sizeof m->head)
				break;
			m->head_got = 0;
			int rc = frame_begins(m);
			if (rc)
				return rc;
			continue;
		}
		struct egress_stream *s = &m->s[m->cur.id];
		size_t take = m->payload_left < n ? m->payload_left : n;
		/* A stream we closed locally takes its bytes into nothing:
		 * they were in flight before our CLOSE. */
		if (s->in) {
			memcpy(s->in + s->in_len, p, take);
			s->in_len += (uint32_t)take;
		}
		m->payload_left -= (uint32_t)take;
		p += take;
		n -= take;
		if (m->payload_left == 0)
			flush_in(s);
	}
	return 0;
}

/* The next frame to send, into wbuf: the streams in turn, so one busy
 * stream does not starve the rest. false if there is nothing to send. */
static bool compose(struct egress_mux *m)
{
	for (unsigned k = 0; k < EGRESS_STREAMS; k++) {
		unsigned id = (m->next + k) % EGRESS_STREAMS;
		struct egress_stream *s = &m->s[id];
		if (!s->used || s->sent_close)
			continue;
		struct egress_frame f = {.id = (uint16_t)id};
		uint32_t len = 0;
		if (s->open_pending) {
			f.type = EGRESS_OPEN;
			s->open_pending = false;
		} else if (s->got_close || (s->local_done && s->out_len == 0 &&
					    (s->abort || s->send_credit == EGRESS_WINDOW))) {
			f.type = EGRESS_CLOSE;
			s->sent_close = true;
		} else if (s->grant > 0) {
			f.type = EGRESS_CREDIT;
			f.len = s->grant;
			s->recv_allow += s->grant;
			s->grant = 0;
		} else if (s->out_len > 0) {
			f.type = EGRESS_DATA;
			f.len = len = s->out_len;
			memcpy(m->wbuf + sizeof f, s->out, len);
			s->out_len = 0;
		} else {
			continue;
		}
		memcpy(m->wbuf, &f, sizeof f);
		m->wlen = (uint32_t)sizeof f + len;
		m->woff = 0;
		m->next = id + 1;
		maybe_release(s);
		return true;
	}
	return false;
}

/* Writes frames while the port takes them. */
static int pump_out(struct egress_mux *m)
{
	for (;;) {
		if (m->woff == m->wlen && !compose(m))
			return 0;
		ssize_t w = m->port_is_socket
				    ? send(m->port, m->wbuf + m->woff, m->wlen - m->woff, MSG_NOSIGNAL)
				    : write(m->port, m->wbuf + m->woff, m->wlen - m->woff);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w <= 0) {
			snprintf(m->why, sizeof m->why, "writing the port: %s",
				 w < 0 ? strerror(errno) : "nothing written");
			return w < 0 ? -errno : -EPIPE;
		}
		m->woff += (uint32_t)w;
	}
}

/* Reads our end while the peer's credit allows, a chunk at a time. */
static void pull_local(struct egress_stream *s)
{
	uint32_t room = s->send_credit < EGRESS_CHUNK ? s->send_credit : EGRESS_CHUNK;
	if (s->out_len || !room || s->fd < 0 || s->local_done)
		return;
	ssize_t r = recv(s->fd, s->out, room, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) {
		/* EOF: a graceful close once all we sent is delivered. An
		 * error: at once. Either way no half-close: the peer's bytes
		 * still coming go to an end that has stopped. */
		s->abort = r < 0;
		s->local_done = true;
		return;
	}
	s->out_len = (uint32_t)r;
	s->send_credit -= (uint32_t)r;
}

static int read_port(struct egress_mux *m)
{
	uint8_t buf[EGRESS_CHUNK + sizeof(struct egress_frame)];
	ssize_t r = read(m->port, buf, sizeof buf);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (r == 0 && !m->port_eof_ends) {
		/* The guest's port reads 0 while no host is connected. */
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
		return 0;
	}
	if (r <= 0) {
		snprintf(m->why, sizeof m->why, "the port %s",
			 r == 0 ? "ended" : strerror(errno));
		return r == 0 ? -EPIPE : -errno;
	}
	return egress_mux_feed(m, buf, (size_t)r);
}

int egress_mux_run(struct egress_mux *m, int listen_fd, int stop_fd)
{
	struct pollfd p[3 + EGRESS_STREAMS];
	for (;;) {
		int rc = pump_out(m);
		if (rc)
			return rc;
		p[0] = (struct pollfd){.fd = m->port, .events = POLLIN};
		if (m->woff < m->wlen)
			p[0].events |= POLLOUT;
		p[1] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
		p[2] = (struct pollfd){.fd = egress_mux_has_room(m) ? listen_fd : -1,
				       .events = POLLIN};
		for (unsigned i = 0; i < EGRESS_STREAMS; i++) {
			struct egress_stream *s = &m->s[i];
			short ev = 0;
			if (s->used && !s->local_done && !s->out_len && s->send_credit)
				ev |= POLLIN;
			if (s->used && s->in_len)
				ev |= POLLOUT;
			p[3 + i] = (struct pollfd){.fd = ev ? s->fd : -1, .events = ev};
		}
		if (poll(p, 3 + EGRESS_STREAMS, -1) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(m->why, sizeof m->why, "poll: %s", strerror(errno));
			return -errno;
		}
		if (p[1].revents)
			return 0;
		if (p[0].revents & POLLIN || (p[0].revents & (POLLHUP | POLLERR) && m->port_eof_ends)) {
			if ((rc = read_port(m)))
				return rc;
		} else if (p[0].revents & POLLHUP) {
			/* The guest's port while no host is connected. */
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (p[2].revents) {
			int c = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (c >= 0 && (rc = egress_mux_add(m, c)) == -ENOMEM)
				return rc;
		}
		for (unsigned i = 0; i < EGRESS_STREAMS; i++) {
			struct egress_stream *s = &m->s[i];
			if (!p[3 + i].revents || !s->used)
				continue;
			if (s->in_len)
				flush_in(s);
			pull_local(s);
		}
	}
}

void egress_mux_free(struct egress_mux *m)
{
	for (unsigned i = 0; i < EGRESS_STREAMS; i++) {
		close_local(&m->s[i]);
		m->s[i].used = false;
	}
}
