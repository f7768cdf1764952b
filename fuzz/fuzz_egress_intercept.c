/* What the egress proxy's interceptor adds (issue 39, src/egress/
 * intercept.c): the origin-form request head a program sends inside an
 * intercepted tunnel, the head rewritten with the secrets put in, a
 * chunked body's end, the answer's masking, and the secrets' own JSON.
 * Invariants: a rewritten head is one head with exactly one Authorization
 * and one Connection line and no placeholder left; a chunked body's end is
 * the same however the bytes are split; masking leaves no value and the
 * length alone. (The TLS ClientHello is OpenSSL's to parse; the proxy's own
 * reading of it, sni.c, is fuzz_egress_parse's.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/core/secret.h"
#include "src/egress/chunked.h"
#include "src/egress/http_head.h"

#include "head_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char secrets_json[] =
	"[{\"name\": \"GH\", \"value\": \"VALUE-123\", \"hosts\": [\"api.example\"],"
	" \"header\": \"Authorization\", \"format\": \"Bearer {value}\","
	" \"requests\": [\"GET /repos/\"]},"
	" {\"name\": \"PH\", \"value\": \"PV-9\", \"hosts\": [\"api.example\"], \"placeholder\": true}]";

/* Whether a header's value (after its colon) still holds the placeholder:
 * the names and the request line keep what the program wrote. */
static bool placeholder_in_a_value(const char *out, size_t n)
{
	const char *l = memmem(out, n, "\r\n", 2);
	for (l = l ? l + 2 : out + n; l < out + n;) {
		const char *e = memmem(l, (size_t)(out + n - l), "\r\n", 2);
		if (!e)
			return false;
		const char *colon = memchr(l, ':', (size_t)(e - l));
		if (colon && memmem(colon, (size_t)(e - colon), "AJ_SECRET_PH", 12))
			return true;
		l = e + 2;
	}
	return false;
}

static void rewrite(const char *buf, size_t size, const struct secret_set *set)
{
	struct http_head h;
	size_t used = 0;
	char why[200];
	if (http_origin_parse(buf, size, &used, &h, 443, why, sizeof why) != HTTP_HEAD_DONE)
		return;
	const struct secret *apply[2] = {&set->s[0], &set->s[1]};
	(void)secret_request_allowed(apply[0], h.method, buf + h.path_at, h.path_len, why,
				     sizeof why);
	bool used_flags[2];
	size_t n;
	char *out = secret_rewrite_head(buf, used, apply, 2, used_flags, &n);
	if (!out)
		return;
	const char *end = n >= 4 ? memmem(out, n, "\r\n\r\n", 4) : NULL;
	if (end != out + n - 4 || lines_named(out, n - 2, "authorization:") != 1 ||
	    lines_named(out, n - 2, "connection:") != 1 || placeholder_in_a_value(out, n) ||
	    memchr(out, '\0', n) || !used_flags[0])
		__builtin_trap();
	free(out);
}

static void chunks(const char *buf, size_t size)
{
	struct chunked whole = {0}, parts = {0};
	size_t a = chunked_scan(&whole, buf, size);
	size_t cut = size ? (unsigned char)buf[0] % (size + 1) : 0;
	size_t b = chunked_scan(&parts, buf, cut);
	if (b == cut && parts.st != CHUNK_DONE && parts.st != CHUNK_BAD)
		b += chunked_scan(&parts, buf + cut, size - cut);
	if (a != b || whole.st != parts.st || a > size)
		__builtin_trap();
}

/* As intercept.c's relay streams an answer: cut where the input says,
 * masked piece by piece with the tail that could start a value held back.
 * What comes out is as long as what went in and holds no value. */
static void mask_streamed(const char *buf, size_t size, const struct secret_set *set)
{
	const struct secret *apply[2] = {&set->s[0], &set->s[1]};
	char *out = malloc(size + 1), *work = malloc(size + 16);
	if (!out || !work) {
		free(out);
		free(work);
		return;
	}
	size_t sent = 0, held = 0, at = 0;
	while (at < size) {
		size_t piece = 1 + (unsigned char)buf[at] % 7;
		if (piece > size - at)
			piece = size - at;
		memcpy(work + held, buf + at, piece);
		at += piece;
		size_t have = held + piece;
		secret_mask(work, have, apply, 2);
		size_t now = have - secret_tail_hold(work, have, apply, 2);
		memcpy(out + sent, work, now);
		sent += now;
		memmove(work, work + now, have - now);
		held = have - now;
	}
	secret_mask(work, held, apply, 2);
	memcpy(out + sent, work, held);
	sent += held;
	if (sent != size || memmem(out, size, "VALUE-123", 9) || memmem(out, size, "PV-9", 4))
		__builtin_trap();
	free(out);
	free(work);
}

static void mask(const char *buf, size_t size, const struct secret_set *set)
{
	const struct secret *apply[2] = {&set->s[0], &set->s[1]};
	char *copy = malloc(size + 1);
	if (!copy)
		return;
	memcpy(copy, buf, size);
	secret_mask(copy, size, apply, 2);
	if (memmem(copy, size, "VALUE-123", 9) || memmem(copy, size, "PV-9", 4))
		__builtin_trap();
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct secret_set set;
	static bool ready;
	char why[300];
	if (!ready) {
		if (secret_set_parse(secrets_json, &set, why, sizeof why))
			__builtin_trap();
		ready = true;
	}
	const char *buf = (const char *)data;
	rewrite(buf, size, &set);
	chunks(buf, size);
	mask(buf, size, &set);
	mask_streamed(buf, size, &set);
	/* The secrets' JSON itself: refused or parsed, never a crash. */
	char *text = malloc(size + 1);
	if (text) {
		memcpy(text, data, size);
		text[size] = '\0';
		struct secret_set other;
		if (secret_set_parse(text, &other, why, sizeof why) == 0)
			secret_set_free(&other);
		free(text);
	}
	return 0;
}
