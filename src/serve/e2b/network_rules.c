/* E2B's network.rules as agentjail's secrets (see network_rules.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../core/egress_rule.h"
#include "../../core/secret.h"
#include "common.h"
#include "network_rules.h"

#define E2B_SECRET_REF "${e2b.secrets."

void e2b_rule_host(const char *rule, char *out, size_t n)
{
	/* An IPv6 CIDR holds colons: its ports follow the prefix length. */
	const char *slash = strchr(rule, '/');
	const char *colon = strrchr(slash ? slash : rule, ':');
	size_t len = colon ? (size_t)(colon - rule) : strlen(rule);
	snprintf(out, n, "%.*s", (int)len, rule);
}

/* The secret named name among the key's and then the server's, parsed into
 * set (the caller frees it): NULL if neither has it. */
static const struct secret *find_secret(const char *key_secrets, const char *server_secrets,
					const char *name, struct secret_set *set)
{
	const char *texts[2] = {key_secrets, server_secrets};
	char why[200];
	for (int t = 0; t < 2; t++) {
		if (!texts[t] || secret_set_parse(texts[t], set, why, sizeof why))
			continue;
		for (uint32_t i = 0; i < set->n; i++)
			if (!strcmp(set->s[i].name, name))
				return &set->s[i];
		secret_set_free(set);
	}
	return NULL;
}

/* Whether s is for host on every port of the deployer's rules in hosts
 * (the rules naming host): the deployer bound a secret to its hosts, and a
 * request may name it only there. */
static bool secret_covers(const struct secret *s, const char *host, json_t *hosts)
{
	size_t i;
	json_t *h;
	json_array_foreach(hosts, i, h) {
		struct egress_host_rule r;
		char why[200];
		if (egress_host_rule_parse(json_string_value(h), &r, why, sizeof why))
			return false;
		for (unsigned k = 0; k < r.ports.n; k++)
			if (!secret_for_host(s, host, r.ports.port[k]))
				return false;
	}
	return true;
}

/* One header's secret: its value as given, or with ${e2b.secrets.NAME}
 * (once) standing for that secret's value ({value} in the format). 0 with
 * the item appended to secrets, or -1 with the 400. */
static int header_secret(const struct aj_config *base, const char *key_secrets,
			 const char *host, const char *header, const char *val, json_t *hosts,
			 unsigned n, json_t *secrets, struct http_response *rs)
{
	char name[16];
	snprintf(name, sizeof name, "E2B_%u", n);
	const char *ref = strstr(val, E2B_SECRET_REF);
	const char *end = ref ? strchr(ref, '}') : NULL;
	if (!ref) {
		if (strstr(val, "${e2b.")) {
			e2b_error(rs, 400, "network.rules.%.100s: headers.%.60s: E2B's "
				  "${e2b.identity...} tokens are kept by E2B's cloud, which agentjail "
				  "does not have (docs/e2b.md)", host, header);
			return -1;
		}
		json_array_append_new(secrets, json_pack("{s:s, s:s, s:O, s:s, s:s}", "name", name,
							 "value", val, "hosts", hosts, "header",
							 header, "format", "{value}"));
		return 0;
	}
	char ref_name[SECRET_NAME_MAX + 1];
	size_t rl = end ? (size_t)(end - ref) - strlen(E2B_SECRET_REF) : 0;
	if (!end || !rl || rl > SECRET_NAME_MAX || strstr(end, "${e2b.")) {
		e2b_error(rs, 400, "network.rules.%.100s: headers.%.60s: one ${e2b.secrets.NAME} "
			  "at most, naming a secret", host, header);
		return -1;
	}
	snprintf(ref_name, sizeof ref_name, "%.*s", (int)rl, ref + strlen(E2B_SECRET_REF));
	struct secret_set set = {0};
	const struct secret *s = find_secret(key_secrets, base->secrets, ref_name, &set);
	int rc = 0;
	if (!s) {
		e2b_error(rs, 400, "network.rules.%.100s: headers.%.60s: no secret named %s among "
			  "the key's and the server's (docs/secrets.md)", host, header, ref_name);
		rc = -1;
	} else if (!secret_covers(s, host, hosts)) {
		e2b_error(rs, 400, "network.rules.%.100s: headers.%.60s: secret %s is not for "
			  "%.100s: a request may use a secret only on the hosts its deployer gave "
			  "it", host, header, ref_name, host);
		rc = -1;
	} else {
		char *format = NULL;
		if (asprintf(&format, "%.*s{value}%s", (int)(ref - val), val, end + 1) < 0)
			format = NULL;
		json_t *item = format ? json_pack("{s:s, s:s#, s:O, s:s, s:s}", "name", name,
						  "value", s->value, (int)s->value_len, "hosts",
						  hosts, "header", header, "format", format)
				      : NULL;
		free(format);
		if (!item) {
			e2b_error(rs, 500, "out of memory");
			rc = -1;
		} else {
			json_array_append_new(secrets, item);
		}
	}
	secret_set_free(&set);
	return rc;
}

int e2b_rules_secrets(const struct aj_config *base, const char *key_secrets, json_t *rules,
		      json_t *terms, struct http_response *rs)
{
	if (!rules || json_is_null(rules))
		return 0;
	if (!json_is_object(rules)) {
		e2b_error(rs, 400, "network.rules: expected an object of hosts");
		return -1;
	}
	json_t *secrets = json_array();
	json_object_set_new(terms, "secrets", secrets);
	unsigned n = 0;
	const char *host;
	json_t *list;
	json_object_foreach(rules, host, list) {
		if (!json_is_array(list)) {
			e2b_error(rs, 400, "network.rules.%.100s: expected an array of rules", host);
			return -1;
		}
		/* The deployer's host rules naming host: a transform never
		 * widens egress. */
		json_t *hosts = json_array();
		char h[300];
		for (uint32_t r = 0; r < base->allow_host_count; r++) {
			e2b_rule_host(base->allow_hosts[r], h, sizeof h);
			if (!strcasecmp(h, host))
				json_array_append_new(hosts, json_string(base->allow_hosts[r]));
		}
		size_t i;
		json_t *rule;
		int rc = 0;
		json_array_foreach(list, i, rule) {
			json_t *tf = json_object_get(rule, "transform");
			const char *k;
			json_t *v;
			json_object_foreach(tf, k, v) {
				if (!rc && strcmp(k, "headers")) {
					e2b_error(rs, 400, "network.rules.%.100s: transform.%.40s is not "
						  "supported (only headers)", host, k);
					rc = -1;
				}
			}
			json_object_foreach(json_object_get(tf, "headers"), k, v) {
				if (rc)
					break;
				if (!json_is_string(v)) {
					e2b_error(rs, 400, "network.rules.%.100s: headers.%.60s: expected "
						  "a string", host, k);
					rc = -1;
				} else if (!json_array_size(hosts)) {
					e2b_error(rs, 400, "network.rules: %.200s is not among the "
						  "destinations this deployment allows (a transform never "
						  "widens its egress rules)", host);
					rc = -1;
				} else {
					rc = header_secret(base, key_secrets, host, k, json_string_value(v),
							   hosts, ++n, secrets, rs);
				}
			}
		}
		json_decref(hosts);
		if (rc)
			return -1;
	}
	return 0;
}
