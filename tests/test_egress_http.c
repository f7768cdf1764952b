/* HTTP request heads as the egress proxy reads them (src/egress/http_head.c):
 * CONNECT and forward requests, every prefix "more", the cap, and each
 * ambiguity refused with a reason. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "src/egress/http_head.h"

static enum http_head_result parse(const char *s, struct http_head *h, char *why)
{
	size_t used = 0;
	return http_head_parse(s, strlen(s), &used, h, why, 200);
}

static void connect_and_forward(void **state)
{
	(void)state;
	struct http_head h;
	char why[200];
	const char *c = "CONNECT files.pythonhosted.org:443 HTTP/1.1\r\n"
			"Host: files.pythonhosted.org:443\r\nUser-Agent: pip\r\n\r\n";
	size_t used = 0;
	for (size_t n = 0; n < strlen(c); n++)
		assert_int_equal(http_head_parse(c, n, &used, &h, why, sizeof why), HTTP_HEAD_MORE);
	assert_int_equal(http_head_parse(c, strlen(c), &used, &h, why, sizeof why), HTTP_HEAD_DONE);
	assert_int_equal(used, strlen(c));
	assert_true(h.connect);
	assert_string_equal(h.host, "files.pythonhosted.org");
	assert_int_equal(h.port, 443);

	const char *f = "GET http://127.0.0.1:8080/simple/pkg/?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
	assert_int_equal(parse(f, &h, why), HTTP_HEAD_DONE);
	assert_false(h.connect);
	assert_string_equal(h.method, "GET");
	assert_string_equal(h.host, "127.0.0.1");
	assert_int_equal(h.port, 8080);
	assert_int_equal(h.path_len, strlen("/simple/pkg/?x=1"));
	assert_memory_equal(f + h.path_at, "/simple/pkg/?x=1", h.path_len);

	assert_int_equal(parse("GET http://example.org HTTP/1.0\r\n\r\n", &h, why), HTTP_HEAD_DONE);
	assert_int_equal(h.port, 80);
	assert_int_equal(parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", &h, why), HTTP_HEAD_DONE);
	assert_string_equal(h.host, "::1");
	assert_int_equal(h.port, 8443);
	assert_int_equal(parse("POST http://a.org/x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", &h, why),
			 HTTP_HEAD_DONE);
	assert_true(h.has_body_length);
}

static void refusals_say_why(void **state)
{
	(void)state;
	static const struct {
		const char *head, *word;
	} bad[] = {
		{"CONNECT example.org HTTP/1.1\r\n\r\n", "host:port"},
		{"CONNECT example.org:0 HTTP/1.1\r\n\r\n", "host:port"},
		{"CONNECT example.org:99999 HTTP/1.1\r\n\r\n", "host:port"},
		{"GET /path HTTP/1.1\r\nHost: a.org\r\n\r\n", "absolute http://"},
		{"GET https://a.org/ HTTP/1.1\r\n\r\n", "absolute http://"},
		{"GET http://user:pw@a.org/ HTTP/1.1\r\n\r\n", "user information"},
		{"GET http://a.org/ HTTP/2.0\r\n\r\n", "HTTP/1.0 or HTTP/1.1"},
		{"G(T http://a.org/ HTTP/1.1\r\n\r\n", "token"},
		{"GET http://a.org/ HTTP/1.1\r\nHost: b.org\r\n\r\n", "another host"},
		{"CONNECT a.org:443 HTTP/1.1\r\nHost: b.org:443\r\n\r\n", "another host"},
		{"GET http://a.org/ HTTP/1.1\r\nHost: a.org\r\nHost: a.org\r\n\r\n", "two Host"},
		{"GET http://a.org/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", "folding"},
		{"GET http://a.org/ HTTP/1.1\r\nX: 1\nY: 2\r\n\r\n", "bare CR or LF"},
		{"GET http://a.org/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		 "two Content-Length"},
		{"POST http://a.org/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		 "both Content-Length"},
		{"GET http://a.org/ HTTP/1.1\r\n: x\r\n\r\n", "without a name"},
		{"GET http://a_b.org/ HTTP/1.1\r\n\r\n", "host name or address"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct http_head h;
		char why[200] = "";
		assert_int_equal(parse(bad[i].head, &h, why), HTTP_HEAD_INVALID);
		if (!strstr(why, bad[i].word))
			fail_msg("'%s': the reason '%s' does not say '%s'", bad[i].head, why, bad[i].word);
	}
	/* A NUL inside the head. */
	struct http_head h;
	char why[200];
	size_t used;
	const char nul[] = "GET http://a.org/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
	assert_int_equal(http_head_parse(nul, sizeof nul - 1, &used, &h, why, sizeof why),
			 HTTP_HEAD_INVALID);
}

static void the_head_is_capped(void **state)
{
	(void)state;
	static char big[HTTP_HEAD_MAX + 64];
	strcpy(big, "GET http://a.org/ HTTP/1.1\r\nX: ");
	size_t at = strlen(big);
	memset(big + at, 'a', sizeof big - at);
	struct http_head h;
	char why[200];
	size_t used;
	assert_int_equal(http_head_parse(big, HTTP_HEAD_MAX - 1, &used, &h, why, sizeof why),
			 HTTP_HEAD_MORE);
	assert_int_equal(http_head_parse(big, sizeof big, &used, &h, why, sizeof why),
			 HTTP_HEAD_TOO_LARGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(connect_and_forward),
		cmocka_unit_test(refusals_say_why),
		cmocka_unit_test(the_head_is_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
