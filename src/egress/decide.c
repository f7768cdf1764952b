/* The rules applied to one destination (see proxy_internal.h). The order is
 * the promise of docs/egress.md: a name is looked up only if a host rule
 * lists it; an address is reached only if a CIDR rule names it, or it is
 * public and came from a listed name. */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>

#include "../core/addr_class.h"
#include "proxy_internal.h"

bool egress_name_listed(const struct egress_rules *r, const char *host, uint16_t port,
			char *why, size_t n)
{
	bool name_seen = false;
	for (uint32_t i = 0; i < r->n_hosts; i++) {
		if (egress_host_matches(&r->hosts[i], host, port)) {
			snprintf(why, n, "allow-host %s", r->host_text[i]);
			return true;
		}
		/* The same name on any port: to say which way it failed. */
		for (unsigned k = 0; k < r->hosts[i].ports.n && !name_seen; k++)
			name_seen = egress_host_matches(&r->hosts[i], host, r->hosts[i].ports.port[k]);
	}
	if (name_seen)
		snprintf(why, n, "port %u is not among %s's allowed ports", port, host);
	else
		snprintf(why, n, "no allow-host rule names %s", host);
	return false;
}

bool egress_address_allowed(const struct egress_rules *r, int family, const uint8_t *addr,
			    uint16_t port, bool by_listed_name, char *why, size_t n)
{
	const char *other_port = NULL; /* a rule naming the address, on other ports */
	for (uint32_t i = 0; i < r->n_cidrs; i++) {
		if (egress_cidr_matches(&r->cidrs[i], family, addr, port)) {
			snprintf(why, n, "allow-cidr %s", r->cidr_text[i]);
			return true;
		}
		for (unsigned k = 0; k < r->cidrs[i].ports.n && !other_port; k++)
			if (egress_cidr_matches(&r->cidrs[i], family, addr, r->cidrs[i].ports.port[k]))
				other_port = r->cidr_text[i];
	}
	struct addr_info ai;
	addr_classify(family, addr, &ai);
	char text[INET6_ADDRSTRLEN];
	inet_ntop(family, addr, text, sizeof text);
	if (by_listed_name && ai.cls == ADDR_PUBLIC)
		return true; /* why keeps the host rule's name */
	if (other_port)
		/* Only the port is wrong: say so, not that no rule reaches it. */
		snprintf(why, n, "%s: port %u is not among allow-cidr %s's ports", text, port,
			 other_port);
	else if (ai.cls != ADDR_PUBLIC) {
		/* A listed name pointing into the host's own networks (DNS
		 * rebinding, a record aimed at 10.0.0.5) stops here, and so
		 * does a wide rule (0.0.0.0/0) over them: only a rule inside
		 * the address's block names it. */
		uint8_t net[16] = {0};
		unsigned len = family == AF_INET ? 4 : 16;
		for (unsigned i = 0; i < len && i * 8 < ai.block; i++)
			net[i] = (uint8_t)(addr[i] & (ai.block - i * 8 >= 8 ? 0xff
									   : 0xff << (8 - (ai.block - i * 8))));
		char block[INET6_ADDRSTRLEN];
		inet_ntop(family, net, block, sizeof block);
		snprintf(why, n, "%s is a %s address: only an allow-cidr rule within %s/%u reaches it",
			 text, addr_class_name(ai.cls), block, ai.block);
	} else
		snprintf(why, n, "no allow-cidr rule names %s port %u", text, port);
	return false;
}
