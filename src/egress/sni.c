/* The ClientHello's server name (see sni.h). Every length is checked against
 * what encloses it before it is used: the bytes are the sandbox's. */
#include <stdint.h>
#include <string.h>

#include "sni.h"

/* A ClientHello larger than this is refused: real ones are a few KiB (a
 * post-quantum key share adds ~1.2 KiB), and the proxy must not buffer an
 * unbounded prefix of a tunnel. */
#define HELLO_MAX 16384

struct reader {
	const unsigned char *p;
	size_t left;
};

static int read_bytes(struct reader *r, size_t n, const unsigned char **out)
{
	if (r->left < n)
		return -1;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

static int u8(struct reader *r, unsigned *v)
{
	const unsigned char *p;
	if (read_bytes(r, 1, &p))
		return -1;
	*v = p[0];
	return 0;
}

static int u16(struct reader *r, unsigned *v)
{
	const unsigned char *p;
	if (read_bytes(r, 2, &p))
		return -1;
	*v = (unsigned)p[0] << 8 | p[1];
	return 0;
}

/* A vector with a length prefix of w bytes (1 or 2): its body as a reader. */
static int vec(struct reader *r, int w, struct reader *body)
{
	unsigned n;
	if ((w == 1 ? u8(r, &n) : u16(r, &n)))
		return -1;
	const unsigned char *p;
	if (read_bytes(r, n, &p))
		return -1;
	body->p = p;
	body->left = n;
	return 0;
}

/* The server_name extension's body: a list of (type, name); host_name is
 * type 0, and a valid name is letters, digits, '-' and '.' only. */
static enum sni_result server_name(struct reader *ext, char name[SNI_NAME_MAX + 1])
{
	struct reader list;
	if (vec(ext, 2, &list) || ext->left)
		return SNI_INVALID;
	while (list.left) {
		unsigned type;
		struct reader host;
		if (u8(&list, &type) || vec(&list, 2, &host))
			return SNI_INVALID;
		if (type != 0)
			continue;
		if (host.left == 0 || host.left > SNI_NAME_MAX)
			return SNI_INVALID;
		for (size_t i = 0; i < host.left; i++) {
			unsigned char c = host.p[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			      c == '-' || c == '.'))
				return SNI_INVALID;
		}
		memcpy(name, host.p, host.left);
		name[host.left] = 0;
		return SNI_FOUND;
	}
	return SNI_NONE;
}

static enum sni_result client_hello(struct reader *h, char name[SNI_NAME_MAX + 1])
{
	const unsigned char *skip;
	unsigned ignored;
	struct reader v;
	/* legacy_version, random, legacy_session_id, cipher_suites,
	 * legacy_compression_methods. */
	if (u16(h, &ignored) || read_bytes(h, 32, &skip) || vec(h, 1, &v) || vec(h, 2, &v) || vec(h, 1, &v))
		return SNI_INVALID;
	if (h->left == 0)
		return SNI_NONE; /* no extensions at all */
	struct reader exts;
	if (vec(h, 2, &exts) || h->left)
		return SNI_INVALID;
	while (exts.left) {
		unsigned type;
		struct reader body;
		if (u16(&exts, &type) || vec(&exts, 2, &body))
			return SNI_INVALID;
		if (type == 0)
			return server_name(&body, name);
	}
	return SNI_NONE;
}

enum sni_result sni_parse(const unsigned char *buf, size_t len, char name[SNI_NAME_MAX + 1])
{
	/* Gather the handshake bytes out of the records (a ClientHello may
	 * span several). */
	static _Thread_local unsigned char hs[HELLO_MAX + 4];
	size_t have = 0, need = 0;
	size_t at = 0;
	name[0] = 0;
	while (at < len) {
		if (len - at < 5)
			return SNI_MORE;
		const unsigned char *rec = buf + at;
		/* handshake (22), a TLS 1.x record version (3, 1..4). */
		if (rec[0] != 22 || rec[1] != 3 || rec[2] > 4)
			return SNI_INVALID;
		size_t rlen = (size_t)rec[3] << 8 | rec[4];
		if (rlen == 0 || rlen > 16384)
			return SNI_INVALID;
		size_t got = len - at - 5 < rlen ? len - at - 5 : rlen;
		if (have + got > sizeof hs)
			return SNI_INVALID;
		memcpy(hs + have, rec + 5, got);
		have += got;
		if (need == 0 && have >= 4) {
			if (hs[0] != 1) /* client_hello */
				return SNI_INVALID;
			need = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
			if (need > HELLO_MAX)
				return SNI_INVALID;
		}
		if (need && have >= need) {
			struct reader h = {hs + 4, need - 4};
			return client_hello(&h, name);
		}
		if (got < rlen)
			return SNI_MORE;
		at += 5 + rlen;
	}
	return SNI_MORE;
}
