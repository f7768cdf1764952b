/* The deployer's egress rules (src/core/egress_rule.c): their syntax, what
 * each admits, and the classing of addresses that keeps a host rule off the
 * host's own networks. No sandbox, no network. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "agentjail.h"
#include "src/core/egress_rule.h"

static void host_rule_ok(const char *spec, struct egress_host_rule *r)
{
	char why[256] = "";
	if (egress_host_rule_parse(spec, r, why, sizeof why))
		fail_msg("'%s' refused: %s", spec, why);
}

static void host_rule_refused(const char *spec, const char *word)
{
	struct egress_host_rule r;
	char why[256] = "";
	assert_int_equal(egress_host_rule_parse(spec, &r, why, sizeof why), -EINVAL);
	if (!strstr(why, word))
		fail_msg("'%s': the reason '%s' does not say '%s'", spec, why, word);
}

static void host_rules_parse_and_match(void **state)
{
	(void)state;
	struct egress_host_rule r;
	host_rule_ok("PyPI.org", &r);
	assert_string_equal(r.name, "pypi.org");
	assert_false(r.below);
	assert_int_equal(r.ports.n, 2); /* 80 and 443 by default */
	assert_true(egress_host_matches(&r, "pypi.org", 443));
	assert_true(egress_host_matches(&r, "PYPI.ORG.", 80));
	assert_false(egress_host_matches(&r, "pypi.org", 8080));
	assert_false(egress_host_matches(&r, "files.pypi.org", 443));
	assert_false(egress_host_matches(&r, "pypi.org.evil.example", 443));

	host_rule_ok("localhost:8080", &r); /* a single label: the deployer names it */
	assert_true(egress_host_matches(&r, "LOCALHOST", 8080));
	host_rule_ok("*.pythonhosted.org:443", &r);
	assert_true(r.below);
	assert_true(egress_host_matches(&r, "files.pythonhosted.org", 443));
	assert_true(egress_host_matches(&r, "a.b.pythonhosted.org", 443));
	assert_false(egress_host_matches(&r, "pythonhosted.org", 443));
	assert_false(egress_host_matches(&r, "evilpythonhosted.org", 443));
	assert_false(egress_host_matches(&r, "files.pythonhosted.org", 80));

	host_rule_ok("example.org:80,8080,443", &r);
	assert_int_equal(r.ports.n, 3);
	assert_true(egress_host_matches(&r, "example.org", 8080));
}

static void host_rules_refused_with_a_reason(void **state)
{
	(void)state;
	host_rule_refused("", "empty");
	host_rule_refused("*.com", "single label");
	host_rule_refused("10.0.0.1", "--allow-cidr");
	host_rule_refused("a..org", "empty label");
	host_rule_refused("-a.org", "starting with '-'");
	host_rule_refused("a_b.org", "character");
	host_rule_refused("a.*.org", "'*' may only lead");
	host_rule_refused("*.*.org", "'*' may only lead");
	host_rule_refused("pypi.org:", "no port");
	host_rule_refused("pypi.org:0", "from 1 to 65535");
	host_rule_refused("pypi.org:65536", "from 1 to 65535");
	host_rule_refused("pypi.org:80,", "port list");
	host_rule_refused("pypi.org:http", "port list");
	host_rule_refused("pypi.org:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16");
	char long_label[80];
	memset(long_label, 'a', 64);
	strcpy(long_label + 64, ".org");
	host_rule_refused(long_label, "longer than 63");
}

static void cidr_ok(const char *spec, struct egress_cidr_rule *r)
{
	char why[256] = "";
	if (egress_cidr_rule_parse(spec, r, why, sizeof why))
		fail_msg("'%s' refused: %s", spec, why);
}

static bool admits(const struct egress_cidr_rule *r, const char *addr, uint16_t port)
{
	uint8_t a[16];
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(family, addr, a), 1);
	return egress_cidr_matches(r, family, a, port);
}

static void cidr_rules_parse_and_match(void **state)
{
	(void)state;
	struct egress_cidr_rule r;
	cidr_ok("127.0.0.1/32:8080", &r);
	assert_true(admits(&r, "127.0.0.1", 8080));
	assert_false(admits(&r, "127.0.0.1", 80));
	assert_false(admits(&r, "127.0.0.2", 8080));
	/* The IPv4 address in its IPv6 mapped form is the same address. */
	assert_true(admits(&r, "::ffff:127.0.0.1", 8080));

	cidr_ok("10.1.0.0/16", &r);
	assert_true(admits(&r, "10.1.200.3", 443));
	assert_false(admits(&r, "10.2.0.1", 443));

	cidr_ok("172.16.0.0/12:5432", &r);
	assert_true(admits(&r, "172.31.255.255", 5432));
	assert_false(admits(&r, "172.32.0.0", 5432));

	cidr_ok("192.168.1.7:9000", &r); /* a bare address is /32 */
	assert_int_equal(r.prefix, 32);
	assert_true(admits(&r, "192.168.1.7", 9000));

	cidr_ok("fd00:ec2::254/128:80", &r);
	assert_true(admits(&r, "fd00:ec2::254", 80));
	assert_false(admits(&r, "fd00:ec2::255", 80));

	cidr_ok("fd00::1", &r); /* a bare IPv6 address: /128, default ports */
	assert_int_equal(r.prefix, 128);
	assert_true(admits(&r, "fd00::1", 443));

	cidr_ok("0.0.0.0/0:443", &r);
	assert_true(admits(&r, "8.8.8.8", 443));
	assert_false(admits(&r, "2001:4860::8888", 443));
}

static void cidr_rules_refused_with_a_reason(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *word;
	} bad[] = {
		{"", "no CIDR rule"},
		{"10.0.0.0/", "no prefix length"},
		{"10.0.0.0/33", "past 32"},
		{"fd00::/129", "past 128"},
		{"10.0.0.5/8", "bits set past /8"},
		{"10.0.0.0/8x", "after the prefix length"},
		{"example.org/32", "not an IPv4 or IPv6 address"},
		{"10.0.0.0/8:", "no port"},
		{"10.0.0.0/8:99999", "from 1 to 65535"},
		{"300.1.1.1", "not an IPv4 or IPv6 address"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct egress_cidr_rule r;
		char why[256] = "";
		assert_int_equal(egress_cidr_rule_parse(bad[i].spec, &r, why, sizeof why), -EINVAL);
		if (!strstr(why, bad[i].word))
			fail_msg("'%s': the reason '%s' does not say '%s'", bad[i].spec, why, bad[i].word);
	}
}

static enum egress_class class_of(const char *addr)
{
	uint8_t a[16];
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(family, addr, a), 1);
	return egress_classify(family, a);
}

/* Every address a host rule must not reach without a CIDR rule, in the
 * forms a resolver could hand back. */
static void addresses_are_classed(void **state)
{
	(void)state;
	static const struct {
		const char *addr;
		enum egress_class c;
	} cases[] = {
		{"93.184.216.34", EGRESS_PUBLIC},
		{"2606:2800:220:1:248:1893:25c8:1946", EGRESS_PUBLIC},
		{"127.0.0.1", EGRESS_LOOPBACK},
		{"127.255.0.9", EGRESS_LOOPBACK},
		{"::1", EGRESS_LOOPBACK},
		{"::ffff:127.0.0.1", EGRESS_LOOPBACK},
		{"64:ff9b::7f00:1", EGRESS_LOOPBACK},
		{"2002:7f00:1::", EGRESS_LOOPBACK},
		{"10.0.0.5", EGRESS_PRIVATE},
		{"172.16.0.1", EGRESS_PRIVATE},
		{"172.31.255.254", EGRESS_PRIVATE},
		{"192.168.0.1", EGRESS_PRIVATE},
		{"100.64.0.1", EGRESS_PRIVATE},
		{"::ffff:10.1.2.3", EGRESS_PRIVATE},
		{"fd12:3456::1", EGRESS_PRIVATE},
		{"fc00::1", EGRESS_PRIVATE},
		{"169.254.1.1", EGRESS_LINK_LOCAL},
		{"fe80::1", EGRESS_LINK_LOCAL},
		{"169.254.169.254", EGRESS_METADATA},
		{"::ffff:169.254.169.254", EGRESS_METADATA},
		{"fd00:ec2::254", EGRESS_METADATA},
		{"0.0.0.0", EGRESS_SPECIAL},
		{"::", EGRESS_SPECIAL},
		{"224.0.0.1", EGRESS_SPECIAL},
		{"255.255.255.255", EGRESS_SPECIAL},
		{"ff02::1", EGRESS_SPECIAL},
		{"192.0.2.1", EGRESS_SPECIAL},
		{"2001:db8::1", EGRESS_SPECIAL},
		{"172.32.0.1", EGRESS_PUBLIC},
		{"100.128.0.1", EGRESS_PUBLIC},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum egress_class c = class_of(cases[i].addr);
		if (c != cases[i].c)
			fail_msg("%s: %s, want %s", cases[i].addr, egress_class_name(c),
				 egress_class_name(cases[i].c));
	}
}

/* The config: rules validated with the option's name in the reason, the
 * caps' ranges; a sandbox with rules opens (the process tier carries the
 * proxy) and keeps its own copies of them. */
static void config_rules_and_caps(void **state)
{
	(void)state;
	struct aj_config cfg;
	struct aj_error err = {0};
	aj_config_init(&cfg);
	assert_int_equal(cfg.egress.connections, AJ_DEFAULT_EGRESS_CONNECTIONS);
	const char *hosts[] = {"pypi.org", "*.pythonhosted.org:443"};
	const char *cidrs[] = {"127.0.0.1/32:8080"};
	cfg.allow_hosts = hosts;
	cfg.allow_host_count = 2;
	cfg.allow_cidrs = cidrs;
	cfg.allow_cidr_count = 1;
	assert_int_equal(aj_config_validate(&cfg, &err), 0);
	struct aj_sandbox *sb = NULL;
	assert_int_equal(aj_open(&cfg, &sb, &err), 0);
	aj_close(sb);

	const char *bad_host[] = {"*.com"};
	cfg.allow_hosts = bad_host;
	cfg.allow_host_count = 1;
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.message, "allow-host: host rule '*.com'"));
	cfg.allow_host_count = 0;
	const char *bad_cidr[] = {"10.0.0.5/8"};
	cfg.allow_cidrs = bad_cidr;
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.message, "allow-cidr: CIDR rule '10.0.0.5/8'"));
	cfg.allow_cidr_count = 0;
	cfg.allow_cidrs = NULL;
	cfg.allow_cidr_count = 1;
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.message, "without its rules"));
	cfg.allow_cidr_count = 0;
	cfg.egress.connections = 0;
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.message, "egress-connections"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_rules_parse_and_match),
		cmocka_unit_test(host_rules_refused_with_a_reason),
		cmocka_unit_test(cidr_rules_parse_and_match),
		cmocka_unit_test(cidr_rules_refused_with_a_reason),
		cmocka_unit_test(addresses_are_classed),
		cmocka_unit_test(config_rules_and_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
