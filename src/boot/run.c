/* boot.py's run mode, host side (see run.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>

#include "run.h"

bool boot_take_report(struct capture *err, const char *nonce, struct sandbox_report *r)
{
	static const char mark[] = "agentjail-exit ";
	char prefix[96];
	int pl = snprintf(prefix, sizeof prefix, "%c%s%s ", 0, mark, nonce);
	if (pl <= 0 || (size_t)pl >= sizeof prefix || err->len < (size_t)pl + 1 ||
	    err->buf[err->len - 1] != '\n')
		return false;
	/* The report is the stream's last line: find where that line starts. */
	size_t start = err->len - 1;
	while (start > 0 && err->buf[start - 1] != 0)
		start--;
	if (start == 0 || err->len - (start - 1) > BOOT_REPORT_MAX)
		return false;
	start--; /* at the report's NUL */
	if (err->len - start < (size_t)pl + 1 || memcmp(err->buf + start, prefix, (size_t)pl) != 0)
		return false;
	char line[BOOT_REPORT_MAX + 1];
	size_t ll = err->len - start - (size_t)pl;
	memcpy(line, err->buf + start + pl, ll);
	line[ll] = 0;
	/* One line: its only newline is the stream's last byte. */
	if (strchr(line, '\n') != line + ll - 1)
		return false;
	if (!report_parse_exited(line, '\n', r))
		return false;
	err->len = start;
	err->buf[start] = 0;
	return true;
}

static void boot_stream_take(void *arg, int stream, const char *p, size_t n)
{
	struct boot_stream *bs = arg;
	if (stream == 0) {
		bs->inner.out_tap(bs->inner.tap_arg, 0, p, n);
		return;
	}
	/* The supervisor appended p to err already: hand on from err what
	 * can no longer be boot's report, within the program's cap. */
	const struct capture *e = bs->err;
	size_t safe = e->len < bs->cap ? e->len : bs->cap;
	size_t from = e->len > BOOT_REPORT_MAX ? e->len - BOOT_REPORT_MAX : 0;
	if (from < bs->sent)
		from = bs->sent;
	const char *nul = from < e->len ? memrchr(e->buf + from, 0, e->len - from) : NULL;
	if (nul && (size_t)(nul - e->buf) < safe)
		safe = (size_t)(nul - e->buf);
	if (safe > bs->sent) {
		bs->inner.out_tap(bs->inner.tap_arg, 1, e->buf + bs->sent, safe - bs->sent);
		bs->sent = safe;
	}
}

static bool boot_stream_paused(void *arg)
{
	struct boot_stream *bs = arg;
	return bs->inner.out_paused(bs->inner.tap_arg);
}

struct supervisor_stream boot_stream_hooks(struct boot_stream *bs, struct supervisor_stream inner,
					   const struct capture *err, size_t cap)
{
	*bs = (struct boot_stream){.inner = inner, .err = err, .cap = cap};
	if (!inner.out_tap)
		return inner;
	return (struct supervisor_stream){.out_tap = boot_stream_take,
					  .out_paused = boot_stream_paused,
					  .out_room_fd = inner.out_room_fd, .tap_arg = bs};
}

void boot_stream_finish(struct boot_stream *bs)
{
	const struct capture *e = bs->err;
	if (bs->inner.out_tap && e->len > bs->sent)
		bs->inner.out_tap(bs->inner.tap_arg, 1, e->buf + bs->sent, e->len - bs->sent);
	bs->sent = e->len;
}

bool boot_report_matches(const struct sandbox_report *r, int exit_code)
{
	int ws = r->wstatus;
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws) == exit_code;
	return WIFSIGNALED(ws) && 128 + WTERMSIG(ws) == exit_code;
}

void boot_last_line(const struct capture *c, char *out, size_t n)
{
	out[0] = 0;
	if (!c->len)
		return;
	size_t end = c->len;
	while (end > 0 && c->buf[end - 1] == '\n')
		end--;
	size_t start = end;
	while (start > 0 && c->buf[start - 1] != '\n')
		start--;
	snprintf(out, n, "%.*s", (int)(end - start), c->buf + start);
}

char *boot_run_input(const char *code, size_t len, double wall_sec, char *nonce,
		     size_t nonce_size, const char *egress_socket, size_t *out_len)
{
	unsigned char b[12];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
		for (size_t i = 0; i < sizeof b; i++)
			b[i] = (unsigned char)rand();
	nonce[0] = 0;
	for (size_t i = 0; i < sizeof b && 2 * i + 2 < nonce_size; i++)
		snprintf(nonce + 2 * i, 3, "%02x", b[i]);
	char head[200];
	size_t hl = (size_t)snprintf(head, sizeof head, "%s %.0f%s%.100s\n", nonce, wall_sec + 10,
				     egress_socket ? " " : "", egress_socket ? egress_socket : "");
	char *input = malloc(hl + len);
	if (!input)
		return NULL;
	memcpy(input, head, hl);
	memcpy(input + hl, code, len);
	*out_len = hl + len;
	return input;
}

void boot_finish_run(struct capture *err, const char *nonce, int exit_code, size_t cap,
		     struct outcome *o)
{
	o->exited_report = boot_take_report(err, nonce, &o->report) &&
			   boot_report_matches(&o->report, exit_code);
	if (err->len > cap) {
		err->len = cap;
		err->buf[err->len] = 0;
		err->truncated = true;
		o->output_overflow = true;
	} else if (err->truncated) {
		err->truncated = false; /* only the report's room was passed */
	}
}
