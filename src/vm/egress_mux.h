/* The microVM's egress port (issue 26; docs/tiers/microvm.md, "Egress"): a
 * second virtio-serial port, beside the channel, that carries the program's
 * connections to 127.0.0.1:EGRESS_PORT in the guest out to the host's egress
 * proxy. The guest has no network device; this port is its only way out,
 * and only to the proxy.
 *
 * Many connections (streams) share the port, in frames:
 *
 *   struct egress_frame { u8 type; u8 zero; u16 id; u32 len; }  (8 bytes)
 *
 *   EGRESS_OPEN    guest -> host, len 0: the guest accepted connection id
 *   EGRESS_DATA    either way: len bytes (1..EGRESS_CHUNK) of stream id follow
 *   EGRESS_CREDIT  either way, no payload: the sender wrote len more of the
 *                  peer's bytes to its end of the stream; the peer may send
 *                  that many more
 *   EGRESS_CLOSE   either way, len 0: the sender is done with id and sends
 *                  nothing more for it
 *
 * Flow control: each side may have at most EGRESS_WINDOW bytes of a stream
 * sent and not yet credited, so neither side ever buffers more than that
 * per stream, nor more than EGRESS_STREAMS streams. A side closes
 * gracefully (its local end ended) only once all it sent was credited, so
 * the peer has delivered every byte; on a CLOSE the receiver drops what it
 * holds for id and closes its end. An id is in use from its OPEN until both
 * sides have sent CLOSE; only then may the guest open it again.
 *
 * One implementation for both ends (the guest agent is built with this
 * file): the guest accepts connections and opens streams; the host opens a
 * proxy connection for each OPEN. Both parse the peer's frames strictly,
 * and the host's parse is its trust boundary: the guest may be the
 * program's. Any frame out of these rules ends the whole port (the caller
 * stops relaying), never the process. libc only. */
#ifndef AJ_VM_EGRESS_MUX_H
#define AJ_VM_EGRESS_MUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_STREAMS 32
#define EGRESS_WINDOW (64u * 1024)
#define EGRESS_CHUNK (16u * 1024)

enum egress_frame_type {
	EGRESS_OPEN = 1,
	EGRESS_DATA = 2,
	EGRESS_CREDIT = 3,
	EGRESS_CLOSE = 4,
};

struct egress_frame {
	uint8_t type;
	uint8_t zero;
	uint16_t id;
	uint32_t len;
};
_Static_assert(sizeof(struct egress_frame) == 8, "egress frame header is 8 bytes");

struct egress_stream {
	int fd;                 /* our end of the connection; -1 once closed */
	bool used;              /* id in use: from its OPEN until both CLOSEs */
	bool open_pending;      /* guest: its OPEN not yet sent */
	bool local_done;        /* our end ended (EOF, or an error: abort) */
	bool abort;             /* close without waiting for credit */
	bool sent_close, got_close;
	uint32_t send_credit;   /* how much more we may send */
	uint32_t recv_allow;    /* how much more the peer may send */
	uint32_t grant;         /* written to fd, not yet credited */
	uint8_t *in;            /* the peer's bytes not yet written to fd */
	uint32_t in_len;
	uint8_t out[EGRESS_CHUNK]; /* read from fd, not yet sent */
	uint32_t out_len;
};

struct egress_mux;
/* The host's: a new stream id was opened; returns our end's fd
 * (non-blocking), or -errno (the stream is closed at once). */
typedef int egress_open_fn(void *ctx, unsigned id);

struct egress_mux {
	int port;               /* the port, non-blocking */
	egress_open_fn *open;   /* host: set; guest: NULL (an OPEN from the host is bad) */
	void *ctx;
	bool port_eof_ends;     /* host: EOF on the port is the end; guest: no host yet */
	bool port_is_socket;    /* QEMU's chardev socket (host): written with send */
	struct egress_stream s[EGRESS_STREAMS];
	/* the frame being read */
	uint8_t head[sizeof(struct egress_frame)];
	uint32_t head_got;
	struct egress_frame cur;
	uint32_t payload_left;
	/* the frame being written */
	uint8_t wbuf[sizeof(struct egress_frame) + EGRESS_CHUNK];
	uint32_t wlen, woff;
	unsigned next;          /* round robin over the streams */
	char why[160];          /* why the port was ended */
};

/* Ready m over port (non-blocking). */
void egress_mux_init(struct egress_mux *m, int port, egress_open_fn *open, void *ctx,
		     bool port_eof_ends);
/* The peer's bytes, in any split: 0, or -EPROTO with m->why naming the bad
 * frame (the port is then over), or -ENOMEM. */
int egress_mux_feed(struct egress_mux *m, const void *buf, size_t n);
/* Guest: a new local connection (non-blocking fd) becomes a stream; owns
 * fd. -EMFILE when every id is in use. */
int egress_mux_add(struct egress_mux *m, int fd);
/* Whether a new connection would find a free id. */
bool egress_mux_has_room(const struct egress_mux *m);
/* Relays until stop_fd (or -1) is readable, the port ends, or a bad frame:
 * 0 for the stop, else -errno with m->why. listen_fd (or -1): the guest's
 * listener, accepted from while an id is free. */
int egress_mux_run(struct egress_mux *m, int listen_fd, int stop_fd);
/* Closes every stream's fd and frees its buffers. */
void egress_mux_free(struct egress_mux *m);

#endif
