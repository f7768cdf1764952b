/* A checkpoint's file: what a session's state (src/core/repl_state.py)
 * becomes on the host, authenticated. Any file a checkpoint id names may
 * have been changed by someone with the host's disk, so every byte of it
 * is covered by an HMAC-SHA256 under a key only the host holds, and
 * nothing of a file is used before its tag was checked over a private
 * copy (never the named file twice: it could change between).
 *
 *   "AJCHECK1"  u32 little-endian header length  header (JSON)
 *   payload (the state file, header "bytes" long)
 *   tag: HMAC-SHA256(key, all of the above), 32 bytes */
#ifndef AJ_CHECKPOINT_FILE_H
#define AJ_CHECKPOINT_FILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agentjail.h"

#define CKPT_MAGIC "AJCHECK1"
#define CKPT_TAG_BYTES 32
/* A header is a few hundred bytes; a larger one is no checkpoint's. */
#define CKPT_HEADER_MAX (64u << 10)

struct ckpt_writer {
	int fd;
	void *mac; /* EVP_MAC_CTX */
	uint64_t left; /* payload bytes still to come */
};

/* Starts a checkpoint on fd (empty, the caller's): the magic and header,
 * its "bytes" the payload's length that must follow. */
int ckpt_write_begin(struct ckpt_writer *w, int fd, const struct aj_checkpoint_key *key,
		     json_t *header, struct aj_error *err);
int ckpt_write(struct ckpt_writer *w, const void *p, size_t n, struct aj_error *err);
/* The tag, once every payload byte came; frees the writer either way. */
int ckpt_write_end(struct ckpt_writer *w, struct aj_error *err);
void ckpt_write_abort(struct ckpt_writer *w);

/* Copies src (from its start) into a private file while checking its tag
 * under key: 0 with *out (the copy, positioned at the payload), *header
 * and *payload_len; or -EBADMSG (changed, truncated, foreign, or not a
 * checkpoint at all), -errno, with err saying which. */
int ckpt_open_verified(int src, const struct aj_checkpoint_key *key, int *out, json_t **header,
		       uint64_t *payload_len, struct aj_error *err);

/* A private file for a checkpoint's bytes (unlinked, in TMPDIR or
 * /var/tmp: on disk, gone with the process). */
int ckpt_private_file(struct aj_error *err);

#endif
