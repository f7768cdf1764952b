/* libFuzzer target: the host's reading of the session interpreter's reply
 * pipe, which the code in a session can write anything on (repl.py runs in
 * the same interpreter as the cells). Two readers, in the order a call uses
 * them:
 *
 *  lines  session_take_reply (src/core/session_scan.c, every tier's scan, the
 *         microvm guest agent's too): the bytes arrive in reads of an
 *         input-chosen size into a buffer capped at the call's reply_max + 1
 *         bytes, as src/linux/session_io.c and src/boot/session.c keep it;
 *         the scan runs after each read. A read that passes the cap without
 *         the call's reply stops the call (its reply is too long); the end
 *         of the input is the interpreter's end, with a last scan.
 *  reply  the reply line found, read by src/core/session_reply.c as the op
 *         the input chose would read it: a run's (exit code, usage, images),
 *         or a file operation's (its error, get's data, list's entries).
 *
 * The input: a byte for the read size (1..64), a byte for the op and the
 * call's sequence number (1..64), a byte for reply_max (64..16 KiB), then
 * the pipe's bytes.
 *
 * What must hold: no crash, leak or undefined behaviour (ASan/UBSan); the
 * buffers never hold more than their cap; a reply taken is one whole line, no
 * newline in it, that starts with {"seq":SEQ followed by ',' or '}', and is
 * within reply_max; what it says ends in a result or a refusal with a
 * message: a run's images no more than session.images, each within the
 * image cap with an "image/" type,
 * get's data within its cap, every list entry named. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/internal.h"
#include "src/core/session_call.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* jansson's hash seed from the clock otherwise: a run replays. */
	json_object_seed(1);
	return 0;
}

static void check_reply_line(const struct session_answer *ans, uint64_t seq, size_t reply_max)
{
	if (!ans->reply)
		return;
	if (ans->reply_len > reply_max || ans->reply[ans->reply_len] != '\0' ||
	    memchr(ans->reply, '\n', ans->reply_len) ||
	    !session_reply_matches(ans->reply, ans->reply_len, seq))
		__builtin_trap();
}

static void check_refusal(int rc, const struct aj_error *err, const char *what)
{
	if (rc >= 0 || strncmp(err->message, what, strlen(what)) != 0)
		__builtin_trap();
}

static void read_run(json_t *reply, const struct aj_config *cfg)
{
	struct aj_result res;
	result_init(&res);
	session_run_reply(reply, cfg, &res);
	if ((unsigned)res.status >= AJ_STATUS_COUNT ||
	    (res.status == AJ_STATUS_SANDBOX_ERROR && !res.message))
		__builtin_trap();
	if (res.image_count > cfg->session.images)
		__builtin_trap();
	for (size_t i = 0; i < res.image_count; i++) {
		const struct aj_image *im = &res.images[i];
		if (im->len > (size_t)cfg->session.image_kb * 1024 || !im->mime ||
		    strncmp(im->mime, "image/", 6) != 0 || !im->name)
			__builtin_trap();
	}
	aj_result_free(&res);
}

static void read_file_op(json_t *reply, unsigned op)
{
	static const char *const what[] = {"put", "get", "list"};
	struct aj_error err = {0};
	int rc = session_file_reply_error(what[op], reply, &err);
	if (rc) {
		check_refusal(rc, &err, what[op]);
		return;
	}
	if (op == 1) {
		const size_t cap = 4096;
		void *got = NULL;
		size_t len = 0;
		rc = session_get_reply(reply, cap, "out.bin", &got, &len, &err);
		if (rc)
			check_refusal(rc, &err, "get: ");
		else if (len > cap || (len && !got))
			__builtin_trap();
		free(got);
	} else if (op == 2) {
		struct aj_file_info *entries = NULL;
		size_t count = 0;
		rc = session_list_reply(reply, &entries, &count, &err);
		if (rc)
			check_refusal(rc, &err, "list: ");
		for (size_t i = 0; i < count; i++)
			if (!entries[i].name || (unsigned)entries[i].type > AJ_FILE_OTHER)
				__builtin_trap();
		aj_file_list_free(entries, count);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	const size_t step = (size_t)data[0] % 64 + 1;
	const unsigned op = data[1] % 4; /* run, put, get, list */
	const uint64_t seq = (uint64_t)(data[1] / 4) + 1;
	const size_t reply_max = (size_t)data[2] * 64 + 64;
	data += 3;
	size -= 3;

	struct capture rb;
	capture_init(&rb, reply_max + 1);
	struct session_answer ans;
	memset(&ans, 0, sizeof ans);
	bool acked = false, replied = false, too_long = false;
	size_t off = 0;
	while (off < size && !replied && !too_long) {
		size_t n = size - off < step ? size - off : step;
		too_long = capture_append(&rb, (const char *)data + off, n);
		off += n;
		if (rb.len > reply_max + 1)
			__builtin_trap();
		replied = session_take_reply(&rb, seq, &ans, &acked);
	}
	if (!replied && !too_long) {
		/* The interpreter ended: a last look, as session_io.c takes. */
		session_take_reply(&rb, seq, &ans, &acked);
	}
	capture_free(&rb);
	check_reply_line(&ans, seq, reply_max);
	if (!replied) {
		free(ans.reply);
		return 0;
	}

	struct aj_config cfg;
	aj_config_init(&cfg);
	cfg.session.images = 1;
	cfg.session.image_kb = 1;
	struct aj_result res;
	result_init(&res);
	json_t *reply = session_reply_json(ans.reply, ans.reply_len, &res);
	free(ans.reply);
	if (!reply) {
		if (res.status != AJ_STATUS_SANDBOX_ERROR || !res.message)
			__builtin_trap();
		aj_result_free(&res);
		return 0;
	}
	aj_result_free(&res);
	if (op == 0)
		read_run(reply, &cfg);
	else
		read_file_op(reply, op - 1);
	json_decref(reply);
	return 0;
}
