/* The server name a TLS ClientHello asks for (RFC 8446 4.1.2, RFC 6066 3),
 * read by the egress proxy from the first bytes a CONNECT tunnel to port 443
 * carries, to refuse a tunnel whose TLS names another host than CONNECT did.
 * Pure: the bytes in, a verdict out (the fuzzer drives it). */
#ifndef AJ_EGRESS_SNI_H
#define AJ_EGRESS_SNI_H

#include <stddef.h>

#define SNI_NAME_MAX 253

enum sni_result {
	SNI_FOUND,      /* name holds the host_name, NUL-terminated */
	SNI_MORE,       /* a valid start: more bytes are needed */
	SNI_NONE,       /* a whole ClientHello without a server_name */
	SNI_INVALID,    /* not a TLS ClientHello, or malformed */
};

/* Reads the ClientHello at the start of buf[0..len) (possibly across TLS
 * records of type handshake). */
enum sni_result sni_parse(const unsigned char *buf, size_t len, char name[SNI_NAME_MAX + 1]);

#endif
