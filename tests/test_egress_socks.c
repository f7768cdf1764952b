/* SOCKS5 as the egress proxy reads it (src/egress/socks.c): the greeting,
 * a CONNECT by name, by IPv4 and IPv6 address, every prefix "more", and the
 * refusals (another version, BIND and UDP ASSOCIATE, a name with a NUL). */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "src/egress/socks.h"

static void greeting(void **state)
{
	(void)state;
	const unsigned char g[] = {5, 2, 2, 0};
	size_t used = 0;
	bool no_auth;
	for (size_t n = 0; n < sizeof g; n++)
		assert_int_equal(socks_greeting_parse(g, n, &used, &no_auth), SOCKS_MORE);
	assert_int_equal(socks_greeting_parse(g, sizeof g, &used, &no_auth), SOCKS_DONE);
	assert_int_equal(used, 4);
	assert_true(no_auth);
	const unsigned char only_password[] = {5, 1, 2};
	assert_int_equal(socks_greeting_parse(only_password, 3, &used, &no_auth), SOCKS_DONE);
	assert_false(no_auth);
	const unsigned char socks4[] = {4, 1, 0, 80};
	assert_int_equal(socks_greeting_parse(socks4, 4, &used, &no_auth), SOCKS_INVALID);
	const unsigned char none[] = {5, 0};
	assert_int_equal(socks_greeting_parse(none, 2, &used, &no_auth), SOCKS_INVALID);
}

static void connect_by_name_and_address(void **state)
{
	(void)state;
	const unsigned char by_name[] = {5, 1, 0, 3, 8, 'p', 'y', 'p', 'i', '.', 'o', 'r', 'g', 1, 187};
	struct socks_request r;
	size_t used = 0;
	for (size_t n = 0; n < sizeof by_name; n++)
		assert_int_equal(socks_request_parse(by_name, n, &used, &r), SOCKS_MORE);
	assert_int_equal(socks_request_parse(by_name, sizeof by_name, &used, &r), SOCKS_DONE);
	assert_int_equal(used, sizeof by_name);
	assert_true(r.by_name);
	assert_string_equal(r.host, "pypi.org");
	assert_int_equal(r.port, 443);

	const unsigned char v4[] = {5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90};
	assert_int_equal(socks_request_parse(v4, sizeof v4, &used, &r), SOCKS_DONE);
	assert_false(r.by_name);
	assert_int_equal(r.family, AF_INET);
	assert_int_equal(r.port, 8080);
	assert_memory_equal(r.addr, ((const unsigned char[]){127, 0, 0, 1}), 4);

	unsigned char v6[4 + 16 + 2] = {5, 1, 0, 4};
	assert_int_equal(inet_pton(AF_INET6, "::1", v6 + 4), 1);
	v6[20] = 0, v6[21] = 80;
	assert_int_equal(socks_request_parse(v6, sizeof v6, &used, &r), SOCKS_DONE);
	assert_int_equal(r.family, AF_INET6);
	assert_int_equal(r.port, 80);
}

static void refusals(void **state)
{
	(void)state;
	struct socks_request r;
	size_t used;
	const unsigned char bind_cmd[] = {5, 2, 0, 1, 1, 2, 3, 4, 0, 80};
	assert_int_equal(socks_request_parse(bind_cmd, sizeof bind_cmd, &used, &r), SOCKS_UNSUPPORTED);
	assert_int_equal(r.refusal, SOCKS_REP_COMMAND_UNSUPPORTED);
	const unsigned char udp[] = {5, 3, 0, 1, 1, 2, 3, 4, 0, 53};
	assert_int_equal(socks_request_parse(udp, sizeof udp, &used, &r), SOCKS_UNSUPPORTED);
	const unsigned char atyp[] = {5, 1, 0, 9, 0};
	assert_int_equal(socks_request_parse(atyp, sizeof atyp, &used, &r), SOCKS_UNSUPPORTED);
	assert_int_equal(r.refusal, SOCKS_REP_ADDRESS_UNSUPPORTED);
	const unsigned char nul[] = {5, 1, 0, 3, 5, 'a', 0, 'b', '.', 'c', 0, 80};
	assert_int_equal(socks_request_parse(nul, sizeof nul, &used, &r), SOCKS_INVALID);
	const unsigned char empty_name[] = {5, 1, 0, 3, 0, 0, 80};
	assert_int_equal(socks_request_parse(empty_name, sizeof empty_name, &used, &r), SOCKS_INVALID);
	const unsigned char rsv[] = {5, 1, 7, 1, 1, 2, 3, 4, 0, 80};
	assert_int_equal(socks_request_parse(rsv, sizeof rsv, &used, &r), SOCKS_INVALID);
	const unsigned char port0[] = {5, 1, 0, 1, 1, 2, 3, 4, 0, 0};
	assert_int_equal(socks_request_parse(port0, sizeof port0, &used, &r), SOCKS_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(greeting),
		cmocka_unit_test(connect_by_name_and_address),
		cmocka_unit_test(refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
