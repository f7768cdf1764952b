/* The deployer's egress rules (issue 26): which destinations a sandbox's
 * code may reach through agentjail's proxy, and nothing else. This file owns
 * their syntax and their matching (what an address is: addr_class.h); libc only (the
 * proxy and every front end read the same rules, and the fuzzer drives the
 * parsers).
 *
 *   --allow-host PATTERN[:PORTS]   "pypi.org", "*.pythonhosted.org:443"
 *   --allow-cidr CIDR[:PORTS]      "10.1.0.0/16:5432", "127.0.0.1/32:8080",
 *                                  "fd00:ec2::254/128:80"
 *
 * PORTS is one port or a comma list ("80,443"); without it, 80 and 443.
 * A host rule matches its name exactly, or with "*." any name below it (not
 * the name itself). A host rule never admits an address that is not public
 * (loopback, private, link-local, metadata, ...): only a CIDR rule reaches
 * those, which is what stops a listed name from resolving into the host's
 * own network (DNS rebinding). */
#ifndef AJ_EGRESS_RULE_H
#define AJ_EGRESS_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_MAX_PORTS 16
#define EGRESS_HOST_MAX 253   /* a DNS name's longest text form */

struct egress_ports {
	uint16_t port[EGRESS_MAX_PORTS];
	unsigned n;
};

struct egress_host_rule {
	char name[EGRESS_HOST_MAX + 1];  /* lower case, without "*." */
	bool below;                      /* "*.name": any name below name */
	struct egress_ports ports;
};

struct egress_cidr_rule {
	int family;           /* AF_INET or AF_INET6 */
	uint8_t addr[16];     /* network order; 4 bytes used for AF_INET */
	unsigned prefix;
	struct egress_ports ports;
};

/* Parse a rule: 0, or -EINVAL with why (n bytes) naming what is wrong. */
int egress_host_rule_parse(const char *spec, struct egress_host_rule *r, char *why, size_t n);
int egress_cidr_rule_parse(const char *spec, struct egress_cidr_rule *r, char *why, size_t n);

/* Whether the rule admits a connection to host (any case, a trailing dot
 * ignored) on port. */
bool egress_host_matches(const struct egress_host_rule *r, const char *host, uint16_t port);
/* Whether the rule admits a connection to addr (family's length, network
 * order) on port: egress_rule.c says exactly when (a v4 rule matches the
 * v4-mapped form; a v6 rule no form that carries IPv4 unless it lies in
 * that range; a non-public address only a rule that lies inside its block,
 * src/core/addr_class.h). */
bool egress_cidr_matches(const struct egress_cidr_rule *r, int family, const uint8_t *addr,
			 uint16_t port);

/* The rules together: refuses (-EINVAL, why) a host rule that can never
 * match. "localhost" and names below it are always loopback (RFC 6761),
 * which a host rule never reaches: such a rule needs an allow-cidr rule
 * that reaches 127.0.0.1 or ::1 on one of its ports. Names below "invalid"
 * never resolve (RFC 6761). */
int egress_rules_check(const char *const *hosts, uint32_t n_hosts, const char *const *cidrs,
		       uint32_t n_cidrs, char *why, size_t n);

#endif
