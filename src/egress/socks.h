/* SOCKS5 as the egress proxy speaks it (RFC 1928): no authentication, the
 * CONNECT command only, the destination as a name (resolved by the proxy,
 * never in the sandbox) or an address. Pure parsers over the bytes the
 * sandbox sent; the fuzzer drives them. */
#ifndef AJ_EGRESS_SOCKS_H
#define AJ_EGRESS_SOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum socks_result {
	SOCKS_DONE,         /* parsed; *used bytes taken */
	SOCKS_MORE,         /* a valid start: more bytes are needed */
	SOCKS_INVALID,      /* not SOCKS5, or malformed: close */
	SOCKS_UNSUPPORTED,  /* well formed, but a command or address type we refuse */
};

/* The reply codes the proxy sends (RFC 1928 6). */
#define SOCKS_REP_OK 0x00
#define SOCKS_REP_NOT_ALLOWED 0x02
#define SOCKS_REP_HOST_UNREACHABLE 0x04
#define SOCKS_REP_CONNECTION_REFUSED 0x05
#define SOCKS_REP_COMMAND_UNSUPPORTED 0x07
#define SOCKS_REP_ADDRESS_UNSUPPORTED 0x08

/* The greeting: VER 5, the methods offered. *no_auth: whether method 0 (no
 * authentication), the only one the proxy accepts, is among them. */
enum socks_result socks_greeting_parse(const unsigned char *buf, size_t len, size_t *used,
				       bool *no_auth);

struct socks_request {
	bool by_name;          /* a name: host; else an address: family, addr */
	char host[256];
	int family;            /* AF_INET, AF_INET6 */
	uint8_t addr[16];
	uint16_t port;
	uint8_t refusal;       /* with SOCKS_UNSUPPORTED: the reply code to send */
};

/* The request: VER 5, CMD, RSV 0, the destination and port. */
enum socks_result socks_request_parse(const unsigned char *buf, size_t len, size_t *used,
				      struct socks_request *r);

#endif
