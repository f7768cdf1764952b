/* SOCKS5's greeting and request (see socks.h). */
#include <string.h>
#include <sys/socket.h>

#include "socks.h"

enum socks_result socks_greeting_parse(const unsigned char *buf, size_t len, size_t *used,
				       bool *no_auth)
{
	*no_auth = false;
	if (len >= 1 && buf[0] != 5)
		return SOCKS_INVALID;
	if (len < 2)
		return SOCKS_MORE;
	size_t n = buf[1];
	if (n == 0)
		return SOCKS_INVALID;
	if (len < 2 + n)
		return SOCKS_MORE;
	for (size_t i = 0; i < n; i++)
		*no_auth |= buf[2 + i] == 0;
	*used = 2 + n;
	return SOCKS_DONE;
}

enum socks_result socks_request_parse(const unsigned char *buf, size_t len, size_t *used,
				      struct socks_request *r)
{
	memset(r, 0, sizeof *r);
	if (len >= 1 && buf[0] != 5)
		return SOCKS_INVALID;
	if (len >= 3 && buf[2] != 0)
		return SOCKS_INVALID;
	if (len < 4)
		return SOCKS_MORE;
	size_t at = 4, alen;
	switch (buf[3]) {
	case 1:
		alen = 4;
		break;
	case 4:
		alen = 16;
		break;
	case 3:
		if (len < 5)
			return SOCKS_MORE;
		alen = buf[4];
		if (alen == 0)
			return SOCKS_INVALID;
		at = 5;
		break;
	default:
		r->refusal = SOCKS_REP_ADDRESS_UNSUPPORTED;
		return SOCKS_UNSUPPORTED;
	}
	if (len < at + alen + 2)
		return SOCKS_MORE;
	if (buf[3] == 3) {
		/* A name goes to the resolver and the rules as text: a NUL or
		 * any byte outside a host name's alphabet is refused here. */
		for (size_t i = 0; i < alen; i++) {
			unsigned char c = buf[at + i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			      c == '-' || c == '.'))
				return SOCKS_INVALID;
		}
		memcpy(r->host, buf + at, alen);
		r->host[alen] = 0;
		r->by_name = true;
	} else {
		r->family = alen == 4 ? AF_INET : AF_INET6;
		memcpy(r->addr, buf + at, alen);
	}
	r->port = (uint16_t)(buf[at + alen] << 8 | buf[at + alen + 1]);
	*used = at + alen + 2;
	/* CONNECT only: BIND and UDP ASSOCIATE would open paths the rules do
	 * not describe (inbound connections, datagrams). */
	if (buf[1] != 1) {
		r->refusal = SOCKS_REP_COMMAND_UNSUPPORTED;
		return SOCKS_UNSUPPORTED;
	}
	if (r->port == 0)
		return SOCKS_INVALID;
	return SOCKS_DONE;
}
