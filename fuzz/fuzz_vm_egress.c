/* libFuzzer target: the host's reading of the microVM's egress port
 * (src/vm/egress_mux.c, egress_mux_feed), the frames a guest taken over by
 * its program may write at will on it.
 *
 * The input: a byte choosing the size of every feed (1..64: QEMU's socket
 * may split a frame anywhere), then the bytes the host reads.
 *
 * What must hold: no crash, leak or undefined behaviour (ASan/UBSan); each
 * feed is taken (0) or refused with -EPROTO and a reason, after which the
 * port is over; no stream ever holds more than the window of the guest's
 * bytes, nor more credit than the window. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/vm/egress_mux.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The host's open: a socketpair, its far end closed at the input's end. */
static int far_ends[EGRESS_STREAMS * 64];
static size_t n_far;

static int open_pair(void *ctx, unsigned id)
{
	(void)ctx;
	(void)id;
	int sv[2];
	if (n_far == sizeof far_ends / sizeof far_ends[0] ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -EMFILE;
	far_ends[n_far++] = sv[1];
	return sv[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)(data[0] % 64) + 1;
	data++;
	size--;
	static struct egress_mux m;
	egress_mux_init(&m, -1, open_pair, NULL, true);
	n_far = 0;
	while (size > 0) {
		size_t n = size < step ? size : step;
		int rc = egress_mux_feed(&m, data, n);
		data += n;
		size -= n;
		if (rc == -EPROTO && m.why[0])
			break;
		if (rc)
			__builtin_trap();
		for (unsigned i = 0; i < EGRESS_STREAMS; i++)
			if (m.s[i].in_len > EGRESS_WINDOW || m.s[i].send_credit > EGRESS_WINDOW ||
			    m.s[i].recv_allow > EGRESS_WINDOW)
				__builtin_trap();
	}
	egress_mux_free(&m);
	for (size_t i = 0; i < n_far; i++)
		close(far_ends[i]);
	return 0;
}
