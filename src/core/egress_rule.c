/* The deployer's egress rules (see egress_rule.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "addr_class.h"
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
	bool has_prefix = slash != NULL;
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
	/* A bare address is the whole address; a prefix past its length is
	 * a slip, never taken as the whole address. */
	if (!has_prefix)
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

/* A CIDR rule means exactly what it says (issue 35):
 *   - an IPv4 rule matches an IPv4 address, or the same address in its
 *     v4-mapped form (what a v6 socket connects to as IPv4);
 *   - an IPv6 rule never matches an IPv6 address that carries an IPv4 one
 *     (mapped, compatible, NAT64, 6to4) unless the rule lies inside that
 *     range: ::/0 is the IPv6 Internet, not ::ffff:169.254.169.254;
 *   - a rule reaches a non-public address (loopback, private, link-local,
 *     metadata, special) only if it lies inside that address's block: it
 *     names it. 0.0.0.0/0 is the IPv4 Internet, not the host's own
 *     127.0.0.1 nor 169.254.169.254; 127.0.0.0/8 reaches 127.0.0.1, and
 *     only 169.254.169.254/32 reaches the metadata address. */
bool egress_cidr_matches(const struct egress_cidr_rule *r, int family, const uint8_t *addr,
			 uint16_t port)
{
	if (!has_port(&r->ports, port))
		return false;
	struct addr_info ai;
	addr_classify(family, addr, &ai);
	unsigned block = ai.block;
	if (family == AF_INET6 && r->family == AF_INET) {
		if (ai.wrap != ADDR_V4_MAPPED)
			return false;
		addr = ai.v4;
		family = AF_INET;
		if (ai.cls != ADDR_PUBLIC)
			block -= 96;
	} else if (family == AF_INET6 && ai.wrap != ADDR_PLAIN && r->prefix < ai.wrap_prefix) {
		return false;
	}
	if (family != r->family || !mask_equal(addr, r->addr, r->prefix))
		return false;
	return ai.cls == ADDR_PUBLIC || r->prefix >= block;
}

/* Whether name is special or below it ("localhost", "a.localhost"). */
static bool at_or_below(const struct egress_host_rule *r, const char *special)
{
	size_t len = strlen(r->name), sl = strlen(special);
	if (!r->below && len == sl)
		return !strcmp(r->name, special);
	return len >= sl && !strcmp(r->name + len - sl, special) &&
	       (len == sl || r->name[len - sl - 1] == '.');
}

/* Whether some CIDR rule reaches a loopback address on one of h's ports. */
static bool loopback_reached(const struct egress_host_rule *h, const char *const *cidrs,
			     uint32_t n_cidrs)
{
	static const uint8_t v4[4] = {127, 0, 0, 1}, v6[16] = {[15] = 1};
	for (uint32_t i = 0; i < n_cidrs; i++) {
		struct egress_cidr_rule c;
		if (egress_cidr_rule_parse(cidrs[i], &c, NULL, 0))
			continue;
		for (unsigned k = 0; k < h->ports.n; k++)
			if (egress_cidr_matches(&c, AF_INET, v4, h->ports.port[k]) ||
			    egress_cidr_matches(&c, AF_INET6, v6, h->ports.port[k]))
				return true;
	}
	return false;
}

int egress_rules_check(const char *const *hosts, uint32_t n_hosts, const char *const *cidrs,
		       uint32_t n_cidrs, char *why, size_t n)
{
	for (uint32_t i = 0; i < n_hosts; i++) {
		struct egress_host_rule h;
		if (egress_host_rule_parse(hosts[i], &h, why, n))
			return -EINVAL;
		/* A rule that can never match is a slip the deployer should
		 * hear of, not a silent refusal of every connection. */
		if (at_or_below(&h, "invalid"))
			return refuse(why, n, "host rule '%s': names below 'invalid' never resolve "
					      "(RFC 6761): the rule can never match", hosts[i]);
		if (at_or_below(&h, "localhost") && !loopback_reached(&h, cidrs, n_cidrs))
			return refuse(why, n,
				      "host rule '%s': localhost is always a loopback address (RFC 6761), "
				      "which a host rule never reaches: the rule can never match without "
				      "an allow-cidr rule naming 127.0.0.1 on its port (such as "
				      "127.0.0.1/32:%u)",
				      hosts[i], h.ports.port[0]);
	}
	return 0;
}
