/* What an IP address is, for every check on the host that must keep a
 * sandbox's traffic (or a webhook's) out of the host's own networks: written
 * once here, so the egress proxy and serve's webhook delivery class an
 * address the same way (issue 35). libc only; no I/O.
 *
 *   struct addr_info ai;
 *   addr_classify(AF_INET6, addr, &ai);      // addr: 16 bytes, network order
 *   if (ai.cls != ADDR_PUBLIC) refuse(addr_class_name(ai.cls));
 *
 * or, for the address a socket is connected to (getpeername):
 *
 *   if (addr_classify_sockaddr(sa, len, &ai) || ai.cls != ADDR_PUBLIC) refuse;
 *
 * An IPv6 address that carries an IPv4 one (v4-mapped ::ffff:0:0/96,
 * v4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) is classed by the
 * IPv4 address inside: ::ffff:127.0.0.1 is loopback, 64:ff9b::a9fe:a9fe is
 * the metadata address. ai.wrap says which form it was. */
#ifndef AJ_CORE_ADDR_CLASS_H
#define AJ_CORE_ADDR_CLASS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

enum addr_class {
	ADDR_PUBLIC,
	ADDR_LOOPBACK,      /* 127.0.0.0/8, ::1 */
	ADDR_PRIVATE,       /* RFC 1918, shared 100.64.0.0/10, IPv6 ULA fc00::/7 */
	ADDR_LINK_LOCAL,    /* 169.254.0.0/16, fe80::/10 */
	ADDR_METADATA,      /* 169.254.169.254, fd00:ec2::254: the cloud's metadata service */
	ADDR_SPECIAL,       /* unspecified (0.0.0.0/8, ::), multicast, broadcast, reserved,
			     * documentation, benchmarking; IPv6 outside 2000::/3 */
};

/* How an IPv6 address carries an IPv4 one, if it does. */
enum addr_wrap {
	ADDR_PLAIN,         /* it does not (every IPv4 address, most IPv6 ones) */
	ADDR_V4_MAPPED,     /* ::ffff:a.b.c.d */
	ADDR_V4_COMPAT,     /* ::a.b.c.d (not :: or ::1) */
	ADDR_NAT64,         /* 64:ff9b::a.b.c.d */
	ADDR_6TO4,          /* 2002:aabb:ccdd::/48 */
};

struct addr_info {
	enum addr_class cls;
	/* The prefix length, in the address's own family, of the special
	 * block that holds it: 8 for 127.0.0.1 (127.0.0.0/8), 32 for
	 * 169.254.169.254, 104 for ::ffff:127.0.0.1, 128 for ::1; 0 for a
	 * public address. A rule that reaches a non-public address only when
	 * it names it explicitly tests that the rule's prefix is at least
	 * this (the rule lies inside the block). */
	unsigned block;
	enum addr_wrap wrap;
	/* The wrapping range's prefix length (96 mapped, compatible and NAT64;
	 * 16 6to4), 0 for ADDR_PLAIN; and the IPv4 address inside. */
	unsigned wrap_prefix;
	uint8_t v4[4];
};

/* Classes addr (AF_INET: 4 bytes, AF_INET6: 16, network order). Any other
 * family is ADDR_SPECIAL. */
void addr_classify(int family, const uint8_t *addr, struct addr_info *out);

/* Classes the address of sa (AF_INET or AF_INET6, len its length): 0, or
 * -EAFNOSUPPORT (another family, or len too short; out is ADDR_SPECIAL). */
int addr_classify_sockaddr(const struct sockaddr *sa, socklen_t len, struct addr_info *out);

/* "public", "loopback", "private", "link-local", "cloud metadata",
 * "special-purpose". */
const char *addr_class_name(enum addr_class c);

#endif
