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
#include "src/core/addr_class.h"
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
	host_rule_ok("intranet:8080", &r);
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
	assert_true(admits(&r, "::ffff:8.8.8.8", 443));
	assert_false(admits(&r, "2001:4860::8888", 443));
}

/* Issue 35: a rule means what it says. The IPv4 Internet is not the host's
 * own loopback, link-local or metadata addresses (nor private ones); the
 * IPv6 Internet is not IPv4 in any IPv6 form; a rule inside a block names
 * it. */
static void wide_rules_do_not_open_special_addresses(void **state)
{
	(void)state;
	struct egress_cidr_rule r;
	static const char *const v4_not_by_wide[] = {
		"127.0.0.1", "169.254.169.254", "169.254.1.1", "10.0.0.5", "192.168.1.1",
		"0.0.0.0", "::ffff:127.0.0.1", "::ffff:169.254.169.254"};
	cidr_ok("0.0.0.0/0:8080", &r);
	for (size_t i = 0; i < sizeof v4_not_by_wide / sizeof v4_not_by_wide[0]; i++)
		if (admits(&r, v4_not_by_wide[i], 8080))
			fail_msg("0.0.0.0/0 admits %s", v4_not_by_wide[i]);
	static const char *const v6_not_by_wide[] = {
		"::ffff:169.254.169.254", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1",
		"64:ff9b::a9fe:a9fe", "64:ff9b::808:808", "2002:7f00:1::1", "2002:808:808::1",
		"::1", "::", "fe80::1", "fd00:ec2::254", "fd00::1"};
	cidr_ok("::/0:8080", &r);
	assert_true(admits(&r, "2606:2800:220:1::1", 8080));
	for (size_t i = 0; i < sizeof v6_not_by_wide / sizeof v6_not_by_wide[0]; i++)
		if (admits(&r, v6_not_by_wide[i], 8080))
			fail_msg("::/0 admits %s", v6_not_by_wide[i]);
	cidr_ok("2000::/3:8080", &r);
	assert_false(admits(&r, "2002:808:808::1", 8080)); /* 6to4 lies in 2000::/3 */

	/* A rule inside the block names it. */
	cidr_ok("127.0.0.0/8:8080", &r);
	assert_true(admits(&r, "127.0.0.1", 8080));
	assert_true(admits(&r, "::ffff:127.0.0.1", 8080));
	cidr_ok("169.254.0.0/16:80", &r);
	assert_true(admits(&r, "169.254.1.1", 80));
	assert_false(admits(&r, "169.254.169.254", 80)); /* the metadata address: by name only */
	cidr_ok("169.254.169.254/32:80", &r);
	assert_true(admits(&r, "169.254.169.254", 80));
	cidr_ok("10.0.0.0/8:80", &r);
	assert_true(admits(&r, "10.9.8.7", 80));
	cidr_ok("::1/128:80", &r);
	assert_true(admits(&r, "::1", 80));
	assert_false(admits(&r, "127.0.0.1", 80));
	/* A v6 rule inside a wrapping range matches it, under the same class
	 * rule for the IPv4 address inside. */
	cidr_ok("64:ff9b::/96:80", &r);
	assert_true(admits(&r, "64:ff9b::808:808", 80));
	assert_false(admits(&r, "64:ff9b::7f00:1", 80));
	cidr_ok("::ffff:127.0.0.0/104:80", &r);
	assert_true(admits(&r, "::ffff:127.0.0.1", 80));
	cidr_ok("fc00::/7:80", &r);
	assert_true(admits(&r, "fd12::1", 80));
	assert_false(admits(&r, "fd00:ec2::254", 80));
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
		{"10.0.0.0/999", "past 32"},   /* not the whole address (issue 35) */
		{"1.2.3.4/999:80", "past 32"},
		{"fd00::/999", "past 128"},
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

static void class_of(const char *addr, struct addr_info *ai)
{
	uint8_t a[16];
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(family, addr, a), 1);
	addr_classify(family, a, ai);
}

/* Every address a host rule must not reach without a CIDR rule, in the
 * forms a resolver could hand back: its class, its block, and how it wraps
 * IPv4 (src/core/addr_class.h). */
static void addresses_are_classed(void **state)
{
	(void)state;
	static const struct {
		const char *addr;
		enum addr_class c;
		unsigned block;
		enum addr_wrap wrap;
	} cases[] = {
		{"93.184.216.34", ADDR_PUBLIC, 0, ADDR_PLAIN},
		{"2606:2800:220:1:248:1893:25c8:1946", ADDR_PUBLIC, 0, ADDR_PLAIN},
		{"127.0.0.1", ADDR_LOOPBACK, 8, ADDR_PLAIN},
		{"127.255.0.9", ADDR_LOOPBACK, 8, ADDR_PLAIN},
		{"::1", ADDR_LOOPBACK, 128, ADDR_PLAIN},
		{"::ffff:127.0.0.1", ADDR_LOOPBACK, 104, ADDR_V4_MAPPED},
		{"::127.0.0.1", ADDR_LOOPBACK, 104, ADDR_V4_COMPAT},
		{"64:ff9b::7f00:1", ADDR_LOOPBACK, 104, ADDR_NAT64},
		{"2002:7f00:1::", ADDR_LOOPBACK, 24, ADDR_6TO4},
		{"10.0.0.5", ADDR_PRIVATE, 8, ADDR_PLAIN},
		{"172.16.0.1", ADDR_PRIVATE, 12, ADDR_PLAIN},
		{"172.31.255.254", ADDR_PRIVATE, 12, ADDR_PLAIN},
		{"192.168.0.1", ADDR_PRIVATE, 16, ADDR_PLAIN},
		{"100.64.0.1", ADDR_PRIVATE, 10, ADDR_PLAIN},
		{"::ffff:10.1.2.3", ADDR_PRIVATE, 104, ADDR_V4_MAPPED},
		{"fd12:3456::1", ADDR_PRIVATE, 7, ADDR_PLAIN},
		{"fc00::1", ADDR_PRIVATE, 7, ADDR_PLAIN},
		{"169.254.1.1", ADDR_LINK_LOCAL, 16, ADDR_PLAIN},
		{"fe80::1", ADDR_LINK_LOCAL, 10, ADDR_PLAIN},
		{"169.254.169.254", ADDR_METADATA, 32, ADDR_PLAIN},
		{"::ffff:169.254.169.254", ADDR_METADATA, 128, ADDR_V4_MAPPED},
		{"64:ff9b::a9fe:a9fe", ADDR_METADATA, 128, ADDR_NAT64},
		{"2002:a9fe:a9fe::1", ADDR_METADATA, 48, ADDR_6TO4},
		{"fd00:ec2::254", ADDR_METADATA, 128, ADDR_PLAIN},
		{"0.0.0.0", ADDR_SPECIAL, 8, ADDR_PLAIN},
		{"::", ADDR_SPECIAL, 128, ADDR_PLAIN},
		{"224.0.0.1", ADDR_SPECIAL, 4, ADDR_PLAIN},
		{"255.255.255.255", ADDR_SPECIAL, 4, ADDR_PLAIN},
		{"ff02::1", ADDR_SPECIAL, 8, ADDR_PLAIN},
		{"192.0.2.1", ADDR_SPECIAL, 24, ADDR_PLAIN},
		{"2001:db8::1", ADDR_SPECIAL, 32, ADDR_PLAIN},
		{"4000::1", ADDR_SPECIAL, 3, ADDR_PLAIN},
		{"172.32.0.1", ADDR_PUBLIC, 0, ADDR_PLAIN},
		{"100.128.0.1", ADDR_PUBLIC, 0, ADDR_PLAIN},
		{"::ffff:8.8.8.8", ADDR_PUBLIC, 0, ADDR_V4_MAPPED},
		{"2002:808:808::1", ADDR_PUBLIC, 0, ADDR_6TO4},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct addr_info ai;
		class_of(cases[i].addr, &ai);
		if (ai.cls != cases[i].c || ai.block != cases[i].block || ai.wrap != cases[i].wrap)
			fail_msg("%s: %s /%u wrap %d, want %s /%u wrap %d", cases[i].addr,
				 addr_class_name(ai.cls), ai.block, (int)ai.wrap,
				 addr_class_name(cases[i].c), cases[i].block, (int)cases[i].wrap);
	}
	struct addr_info ai;
	class_of("::ffff:169.254.169.254", &ai);
	assert_memory_equal(ai.v4, ((uint8_t[]){169, 254, 169, 254}), 4);
	struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &sa6.sin6_addr);
	assert_int_equal(addr_classify_sockaddr((struct sockaddr *)&sa6, sizeof sa6, &ai), 0);
	assert_int_equal(ai.cls, ADDR_LOOPBACK);
	struct sockaddr_un_like { sa_family_t f; char p[8]; } su = {AF_UNIX, ""};
	assert_int_equal(addr_classify_sockaddr((struct sockaddr *)&su, sizeof su, &ai),
			 -EAFNOSUPPORT);
	assert_int_equal(ai.cls, ADDR_SPECIAL);
}

/* A host rule that can never match is a usage error naming why: localhost
 * (RFC 6761: always loopback) without a CIDR rule that reaches loopback on
 * its port, a name below "invalid". */
static void never_matching_host_rules_refused(void **state)
{
	(void)state;
	char why[400];
	const char *lh[] = {"localhost:8080"}, *star[] = {"*.localhost"}, *inv[] = {"db.invalid"};
	const char *loop[] = {"127.0.0.1/32:8080"}, *other_port[] = {"127.0.0.1/32:9090"},
		   *wide[] = {"0.0.0.0/0:8080"};
	assert_int_equal(egress_rules_check(lh, 1, NULL, 0, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "localhost is always a loopback address"));
	assert_non_null(strstr(why, "127.0.0.1/32:8080"));
	assert_int_equal(egress_rules_check(lh, 1, other_port, 1, why, sizeof why), -EINVAL);
	assert_int_equal(egress_rules_check(lh, 1, wide, 1, why, sizeof why), -EINVAL);
	assert_int_equal(egress_rules_check(star, 1, NULL, 0, why, sizeof why), -EINVAL);
	assert_int_equal(egress_rules_check(inv, 1, NULL, 0, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "never resolve"));
	assert_int_equal(egress_rules_check(lh, 1, loop, 1, why, sizeof why), 0);
	const char *v6rule[] = {"::1/128:8080"};
	assert_int_equal(egress_rules_check(lh, 1, v6rule, 1, why, sizeof why), 0);
	const char *fine[] = {"notlocalhost.example", "localhost.example.org"};
	assert_int_equal(egress_rules_check(fine, 2, NULL, 0, why, sizeof why), 0);

	struct aj_config cfg;
	struct aj_error err = {0};
	aj_config_init(&cfg);
	cfg.allow_hosts = lh;
	cfg.allow_host_count = 1;
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.message, "allow-host: host rule 'localhost:8080': localhost"));
	cfg.allow_cidrs = loop;
	cfg.allow_cidr_count = 1;
	assert_int_equal(aj_config_validate(&cfg, &err), 0);
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
	cfg.egress.connections = 100000; /* a typo's extra 0 (issue 35) */
	assert_int_equal(aj_config_validate(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.message, "egress-connections: 100000 is out of range"));
	cfg.egress.connections = 10000;
	assert_int_equal(aj_config_validate(&cfg, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_rules_parse_and_match),
		cmocka_unit_test(host_rules_refused_with_a_reason),
		cmocka_unit_test(cidr_rules_parse_and_match),
		cmocka_unit_test(cidr_rules_refused_with_a_reason),
		cmocka_unit_test(wide_rules_do_not_open_special_addresses),
		cmocka_unit_test(addresses_are_classed),
		cmocka_unit_test(never_matching_host_rules_refused),
		cmocka_unit_test(config_rules_and_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
