/* The egress proxy's readers of what the sandbox sends it, which the code in
 * the sandbox chooses byte for byte: an HTTP request head
 * (src/egress/http_head.c), SOCKS5's greeting and request (socks.c) and a
 * TLS ClientHello's server name (sni.c). The first input byte picks the
 * reader; the rest is fed to it whole and at every tenth prefix. Each must
 * end in a verdict within the bytes it was given, and a name it returns is
 * a NUL-terminated host name within its bound. */
#include <stdint.h>
#include <string.h>

#include "src/egress/http_head.h"
#include "src/egress/sni.h"
#include "src/egress/socks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(uint8_t which, const uint8_t *p, size_t n)
{
	size_t used = 0;
	switch (which % 3) {
	case 0: {
		struct http_head h;
		char why[200];
		if (http_head_parse((const char *)p, n, &used, &h, why, sizeof why) == HTTP_HEAD_DONE) {
			if (used > n || !h.host[0] || h.port == 0 || strlen(h.host) >= sizeof h.host ||
			    h.path_at + h.path_len > n)
				__builtin_trap();
		}
		break;
	}
	case 1: {
		bool no_auth;
		struct socks_request r;
		if (socks_greeting_parse(p, n, &used, &no_auth) == SOCKS_DONE && used > n)
			__builtin_trap();
		if (socks_request_parse(p, n, &used, &r) == SOCKS_DONE &&
		    (used > n || r.port == 0 || (r.by_name && !r.host[0])))
			__builtin_trap();
		break;
	}
	default: {
		char name[SNI_NAME_MAX + 1];
		if (sni_parse(p, n, name) == SNI_FOUND && (!name[0] || strlen(name) > SNI_NAME_MAX))
			__builtin_trap();
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	one(data[0], p, n);
	for (size_t cut = 0; cut < n; cut += 10 + n / 16)
		one(data[0], p, cut);
	return 0;
}
