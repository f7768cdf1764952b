/* The deployer's egress rules (see egress_rule.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "egress_rule.h"

static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t n, const char *fmt, ...)
{
	if (why && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* "443" or "80,443": each 1 to 65535, at most EGRESS_MAX_PORTS; empty
 * (no ":PORTS" written) means 80 and 443. */
static int parse_ports(const char *s, struct egress_ports *p, char *why, size_t n)
{
	p->n = 0;
	if (!s) {
		p->port[p->n++] = 80;
		p->port[p->n++] = 443;
		return 0;
	}
	if (!*s)
		return refuse(why, n, "no port after ':'");
	while (*s) {
		if (*s < '0' || *s > '9')
			return refuse(why, n, "'%s' is not a port list (PORT or PORT,PORT,...)", s);
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (v < 1 || v > 65535 || end - s > 5)
			return refuse(why, n, "port %.*s is not from 1 to 65535", (int)(end - s), s);
		if (p->n == EGRESS_MAX_PORTS)
			return refuse(why, n, "more than %d ports", EGRESS_MAX_PORTS);
		p->port[p->n++] = (uint16_t)v;
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return refuse(why, n, "'%s' is not a port list (PORT or PORT,PORT,...)", s);
		s = end;
	}
	return 0;
}

static bool has_port(const struct egress_ports *p, uint16_t port)
{
	for (unsigned i = 0; i < p->n; i++)
		if (p->port[i] == port)
			return true;
	return false;
}

/* A DNS name in text form: labels of letters, digits and '-' (not first or
 * last), 1 to 63 each; at least two under "*." (a wildcard over a whole
 * top-level domain is a slip). A single label ("localhost", a service name
 * the host's resolver knows) is the deployer's to name. An IP literal is
 * refused: an address is a CIDR rule's. */
static const char *name_problem(const char *s, size_t len, bool below)
{
	if (len == 0)
		return "is empty";
	if (len > EGRESS_HOST_MAX)
		return "is longer than a DNS name can be";
	size_t label = 0, labels = 1;
	bool all_digits = true;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return "has an empty label or one ending in '-'";
			label = 0;
			labels++;
			continue;
		}
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '-';
		if (!ok)
			return "holds a character a host name cannot (letters, digits, '-', '.')";
		if (c == '-' && label == 0)
			return "has a label starting with '-'";
		if (++label > 63)
			return "has a label longer than 63 characters";
		if (c < '0' || c > '9')
			all_digits = false;
	}
	if (label == 0 || s[len - 1] == '-')
		return "ends with an empty label or one ending in '-'";
	if (labels < 2 && below)
		return "is a single label: '*.' over it would admit a whole top-level domain";
	if (all_digits)
		return "is an address: use --allow-cidr for addresses";
	return NULL;
}

int egress_host_rule_parse(const char *spec, struct egress_host_rule *r, char *why, size_t n)
{
	memset(r, 0, sizeof *r);
	if (!spec)
		return refuse(why, n, "no host rule");
	const char *name = spec;
	if (!strncmp(name, "*.", 2)) {
		r->below = true;
		name += 2;
	}
	const char *colon = strchr(name, ':');
	size_t len = colon ? (size_t)(colon - name) : strlen(name);
	if (memchr(name, '*', len))
		return refuse(why, n, "host rule '%s': '*' may only lead, as '*.example.org'", spec);
	const char *problem = name_problem(name, len, r->below);
	if (problem)
		return refuse(why, n, "host rule '%s': the name %s", spec, problem);
	for (size_t i = 0; i < len; i++)
		r->name[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
	r->name[len] = 0;
	char pw[160];
	if (parse_ports(colon ? colon + 1 : NULL, &r->ports, pw, sizeof pw))
		return refuse(why, n, "host rule '%s': %s", spec, pw);
	return 0;
}

static bool mask_equal(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned bytes = prefix / 8, bits = prefix % 8;
	if (memcmp(a, b, bytes))
		return false;
	if (!bits)
		return true;
	uint8_t m = (uint8_t)(0xff << (8 - bits));
	return (a[bytes] & m) == (b[bytes] & m);
}

int egress_cidr_rule_parse(const char *spec, struct egress_cidr_rule *r, char *why, size_t n)
{
	memset(r, 0, sizeof *r);
	if (!spec || !*spec)
		return refuse(why, n, "no CIDR rule");
	char addr[64];
	const char *slash = strchr(spec, '/');
	const char *ports = NULL;
	unsigned max;
	if (slash) {
		if ((size_t)(slash - spec) >= sizeof addr)
			return refuse(why, n, "CIDR rule '%s': the address is too long", spec);
		memcpy(addr, spec, (size_t)(slash - spec));
		addr[slash - spec] = 0;
		const char *p = slash + 1;
		if (*p < '0' || *p > '9')
			return refuse(why, n, "CIDR rule '%s': no prefix length after '/'", spec);
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end - p > 3)
			return refuse(why, n, "CIDR rule '%s': the prefix length is too long", spec);
		r->prefix = (unsigned)v;
		if (*end == ':')
			ports = end + 1;
		else if (*end)
			return refuse(why, n, "CIDR rule '%s': '%s' after the prefix length", spec, end);
	} else {
		/* A bare address: IPv4 may carry ":PORTS"; IPv6 (colons of its
		 * own) must write "/128:PORTS" to name ports. */
		const char *colon = strchr(spec, ':');
		bool v6 = colon && strchr(colon + 1, ':');
		size_t len = (!v6 && colon) ? (size_t)(colon - spec) : strlen(spec);
		if (len >= sizeof addr)
			return refuse(why, n, "CIDR rule '%s': the address is too long", spec);
		memcpy(addr, spec, len);
		addr[len] = 0;
		if (!v6 && colon)
			ports = colon + 1;
		r->prefix = 999; /* the whole address, set below */
	}
	if (inet_pton(AF_INET, addr, r->addr) == 1) {
		r->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, r->addr) == 1) {
		r->family = AF_INET6;
		max = 128;
	} else {
		return refuse(why, n, "CIDR rule '%s': '%s' is not an IPv4 or IPv6 address", spec, addr);
	}
	if (r->prefix == 999)
		r->prefix = max;
	if (r->prefix > max)
		return refuse(why, n, "CIDR rule '%s': a prefix length of %u is past %u", spec, r->prefix,
			      max);
	/* Host bits set ("10.0.0.5/8") is almost always a slip: refuse it
	 * rather than guess which of the two was meant. */
	uint8_t net[16] = {0};
	memcpy(net, r->addr, r->prefix / 8 + (r->prefix % 8 ? 1 : 0));
	if (r->prefix % 8)
		net[r->prefix / 8] &= (uint8_t)(0xff << (8 - r->prefix % 8));
	if (memcmp(net, r->addr, max / 8))
		return refuse(why, n, "CIDR rule '%s': the address has bits set past /%u", spec, r->prefix);
	char pw[160];
	if (parse_ports(ports, &r->ports, pw, sizeof pw))
		return refuse(why, n, "CIDR rule '%s': %s", spec, pw);
	return 0;
}

bool egress_host_matches(const struct egress_host_rule *r, const char *host, uint16_t port)
{
	if (!host || !has_port(&r->ports, port))
		return false;
	size_t len = strlen(host);
	if (len && host[len - 1] == '.')
		len--;
	size_t rl = strlen(r->name);
	if (r->below) {
		/* Strictly below: "a.example.org" for "*.example.org", never
		 * "example.org" itself nor "badexample.org". */
		if (len <= rl + 1 || host[len - rl - 1] != '.')
			return false;
		return strncasecmp(host + len - rl, r->name, rl) == 0;
	}
	return len == rl && strncasecmp(host, r->name, rl) == 0;
}

/* The IPv4 address an IPv6 one carries, where it does: mapped (::ffff:0:0/96),
 * NAT64 (64:ff9b::/96) and 6to4 (2002::/16). */
static const uint8_t *embedded_v4(const uint8_t *a)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
	if (!memcmp(a, mapped, 12) || !memcmp(a, nat64, 12))
		return a + 12;
	if (a[0] == 0x20 && a[1] == 0x02)
		return a + 2;
	return NULL;
}

bool egress_cidr_matches(const struct egress_cidr_rule *r, int family, const uint8_t *addr,
			 uint16_t port)
{
	if (!has_port(&r->ports, port))
		return false;
	if (family == AF_INET6 && r->family == AF_INET) {
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(addr, mapped, 12))
			return false;
		addr += 12;
		family = AF_INET;
	}
	return family == r->family && mask_equal(addr, r->addr, r->prefix);
}

static enum egress_class classify_v4(const uint8_t *a)
{
	if (a[0] == 169 && a[1] == 254 && a[2] == 169 && a[3] == 254)
		return EGRESS_METADATA;
	if (a[0] == 127)
		return EGRESS_LOOPBACK;
	if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) ||
	    (a[0] == 100 && (a[1] & 0xc0) == 64))
		return EGRESS_PRIVATE;
	if (a[0] == 169 && a[1] == 254)
		return EGRESS_LINK_LOCAL;
	/* This network, IETF protocol assignments, the documentation nets,
	 * benchmarking, multicast, reserved and broadcast: nothing to reach. */
	if (a[0] == 0 || (a[0] == 192 && a[1] == 0 && (a[2] == 0 || a[2] == 2)) ||
	    (a[0] == 198 && (a[1] & 0xfe) == 18) || (a[0] == 198 && a[1] == 51 && a[2] == 100) ||
	    (a[0] == 203 && a[1] == 0 && a[2] == 113) || a[0] >= 224)
		return EGRESS_SPECIAL;
	return EGRESS_PUBLIC;
}

enum egress_class egress_classify(int family, const uint8_t *a)
{
	if (family == AF_INET)
		return classify_v4(a);
	static const uint8_t zero[16], one[16] = {[15] = 1};
	static const uint8_t metadata[16] = {0xfd, 0, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54};
	if (!memcmp(a, metadata, 16))
		return EGRESS_METADATA;
	if (!memcmp(a, one, 16))
		return EGRESS_LOOPBACK;
	if (!memcmp(a, zero, 16) || a[0] == 0xff || (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d &&
						    a[3] == 0xb8))
		return EGRESS_SPECIAL; /* unspecified, multicast, documentation */
	const uint8_t *v4 = embedded_v4(a);
	if (v4)
		return classify_v4(v4);
	if ((a[0] & 0xfe) == 0xfc)
		return EGRESS_PRIVATE;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return EGRESS_LINK_LOCAL;
	/* Outside 2000::/3 nothing is assigned for the public Internet. */
	if ((a[0] & 0xe0) != 0x20)
		return EGRESS_SPECIAL;
	return EGRESS_PUBLIC;
}

const char *egress_class_name(enum egress_class c)
{
	switch (c) {
	case EGRESS_PUBLIC: return "public";
	case EGRESS_LOOPBACK: return "loopback";
	case EGRESS_PRIVATE: return "private";
	case EGRESS_LINK_LOCAL: return "link-local";
	case EGRESS_METADATA: return "cloud metadata";
	case EGRESS_SPECIAL: return "special-purpose";
	}
	return "unknown";
}
