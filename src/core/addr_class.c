/* What an IP address is (see addr_class.h). */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "addr_class.h"

/* One special IPv4 block: the first prefix bits of net, and its class. The
 * narrower blocks come first (the metadata address before link-local). */
static const struct v4_block {
	uint8_t net[4];
	unsigned prefix;
	enum addr_class cls;
} v4_blocks[] = {
	{{169, 254, 169, 254}, 32, ADDR_METADATA},
	{{127, 0, 0, 0}, 8, ADDR_LOOPBACK},
	{{10, 0, 0, 0}, 8, ADDR_PRIVATE},
	{{172, 16, 0, 0}, 12, ADDR_PRIVATE},
	{{192, 168, 0, 0}, 16, ADDR_PRIVATE},
	{{100, 64, 0, 0}, 10, ADDR_PRIVATE},   /* shared address space (carrier NAT) */
	{{169, 254, 0, 0}, 16, ADDR_LINK_LOCAL},
	/* This network (Linux connects 0.0.0.0 to the host itself), IETF
	 * protocol assignments, the documentation nets, benchmarking,
	 * multicast, reserved and broadcast: nothing to reach. */
	{{0, 0, 0, 0}, 8, ADDR_SPECIAL},
	{{192, 0, 0, 0}, 24, ADDR_SPECIAL},
	{{192, 0, 2, 0}, 24, ADDR_SPECIAL},
	{{198, 18, 0, 0}, 15, ADDR_SPECIAL},
	{{198, 51, 100, 0}, 24, ADDR_SPECIAL},
	{{203, 0, 113, 0}, 24, ADDR_SPECIAL},
	{{224, 0, 0, 0}, 4, ADDR_SPECIAL},
	{{240, 0, 0, 0}, 4, ADDR_SPECIAL},
};

/* Whether the first prefix bits of a and b agree. */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned bytes = prefix / 8, bits = prefix % 8;
	if (memcmp(a, b, bytes))
		return false;
	uint8_t m = (uint8_t)(0xff << (8 - bits));
	return !bits || (a[bytes] & m) == (b[bytes] & m);
}

static void classify_v4(const uint8_t *a, struct addr_info *out)
{
	for (size_t i = 0; i < sizeof v4_blocks / sizeof v4_blocks[0]; i++)
		if (prefix_equal(a, v4_blocks[i].net, v4_blocks[i].prefix)) {
			out->cls = v4_blocks[i].cls;
			out->block = v4_blocks[i].prefix;
			return;
		}
	out->cls = ADDR_PUBLIC;
	out->block = 0;
}

/* The IPv4 address an IPv6 one carries: where it sits and the wrapping
 * range's prefix, or ADDR_PLAIN. */
static enum addr_wrap unwrap(const uint8_t *a, unsigned *offset, unsigned *prefix)
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t compat[12];
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
	*offset = 12;
	*prefix = 96;
	if (!memcmp(a, mapped, 12))
		return ADDR_V4_MAPPED;
	if (!memcmp(a, nat64, 12))
		return ADDR_NAT64;
	/* :: and ::1 are IPv6's own unspecified and loopback addresses. */
	if (!memcmp(a, compat, 12) && !(a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] <= 1))
		return ADDR_V4_COMPAT;
	if (a[0] == 0x20 && a[1] == 0x02) {
		*offset = 2;
		*prefix = 16;
		return ADDR_6TO4;
	}
	*offset = *prefix = 0;
	return ADDR_PLAIN;
}

/* One special IPv6 block, as v4_blocks. */
static const struct v6_block {
	uint8_t net[16];
	unsigned prefix;
	enum addr_class cls;
} v6_blocks[] = {
	{{0xfd, 0, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, ADDR_METADATA},
	{{[15] = 1}, 128, ADDR_LOOPBACK},
	{{0}, 128, ADDR_SPECIAL},                           /* unspecified */
	{{0xff}, 8, ADDR_SPECIAL},                          /* multicast */
	{{0x20, 0x01, 0x0d, 0xb8}, 32, ADDR_SPECIAL},       /* documentation */
	{{0xfc}, 7, ADDR_PRIVATE},                          /* unique local */
	{{0xfe, 0x80}, 10, ADDR_LINK_LOCAL},
};

static void classify_v6(const uint8_t *a, struct addr_info *out)
{
	for (size_t i = 0; i < sizeof v6_blocks / sizeof v6_blocks[0]; i++)
		if (prefix_equal(a, v6_blocks[i].net, v6_blocks[i].prefix)) {
			out->cls = v6_blocks[i].cls;
			out->block = v6_blocks[i].prefix;
			return;
		}
	unsigned offset;
	out->wrap = unwrap(a, &offset, &out->wrap_prefix);
	if (out->wrap != ADDR_PLAIN) {
		/* Classed by the IPv4 address inside; its block in IPv6
		 * terms is the wrapping range's bits and the IPv4 block's. */
		memcpy(out->v4, a + offset, 4);
		classify_v4(out->v4, out);
		if (out->cls != ADDR_PUBLIC)
			out->block += offset * 8;
		return;
	}
	/* Outside 2000::/3 nothing is assigned for the public Internet: the
	 * /3 that holds the address is its block. */
	if ((a[0] & 0xe0) != 0x20) {
		out->cls = ADDR_SPECIAL;
		out->block = 3;
		return;
	}
	out->cls = ADDR_PUBLIC;
	out->block = 0;
}

void addr_classify(int family, const uint8_t *addr, struct addr_info *out)
{
	memset(out, 0, sizeof *out);
	if (family == AF_INET)
		classify_v4(addr, out);
	else if (family == AF_INET6)
		classify_v6(addr, out);
	else
		out->cls = ADDR_SPECIAL;
}

int addr_classify_sockaddr(const struct sockaddr *sa, socklen_t len, struct addr_info *out)
{
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		addr_classify(AF_INET, (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr,
			      out);
		return 0;
	}
	if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		addr_classify(AF_INET6,
			      (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr, out);
		return 0;
	}
	memset(out, 0, sizeof *out);
	out->cls = ADDR_SPECIAL;
	return -EAFNOSUPPORT;
}

const char *addr_class_name(enum addr_class c)
{
	switch (c) {
	case ADDR_PUBLIC: return "public";
	case ADDR_LOOPBACK: return "loopback";
	case ADDR_PRIVATE: return "private";
	case ADDR_LINK_LOCAL: return "link-local";
	case ADDR_METADATA: return "cloud metadata";
	case ADDR_SPECIAL: return "special-purpose";
	}
	return "unknown";
}
