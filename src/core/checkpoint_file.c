/* A checkpoint's file, authenticated (checkpoint_file.h). OpenSSL's
 * HMAC-SHA256 (EVP_MAC): the library the project already trusts for TLS,
 * never a hand-written MAC. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_file.h"
#include "internal.h"

static EVP_MAC_CTX *mac_new(const struct aj_checkpoint_key *key)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac);
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
			       OSSL_PARAM_construct_end()};
	if (ctx && !EVP_MAC_init(ctx, key->bytes, sizeof key->bytes, params)) {
		EVP_MAC_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

static int mac_final(EVP_MAC_CTX *ctx, unsigned char tag[CKPT_TAG_BYTES])
{
	size_t n = 0;
	int ok = EVP_MAC_final(ctx, tag, &n, CKPT_TAG_BYTES) && n == CKPT_TAG_BYTES;
	EVP_MAC_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

/* Writes n bytes to w's file and its MAC. */
static int put(struct ckpt_writer *w, const void *p, size_t n, struct aj_error *err)
{
	int rc = write_full(w->fd, p, n);
	if (rc)
		return error_set(err, rc, "checkpoint: writing it: %s", strerror(-rc));
	if (!EVP_MAC_update(w->mac, p, n))
		return error_set(err, -EIO, "checkpoint: its tag could not be computed");
	return 0;
}

int ckpt_write_begin(struct ckpt_writer *w, int fd, const struct aj_checkpoint_key *key,
		     json_t *header, struct aj_error *err)
{
	*w = (struct ckpt_writer){.fd = fd};
	json_int_t bytes = json_integer_value(json_object_get(header, "bytes"));
	char *text = json_dumps(header, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text || bytes < 0) {
		free(text);
		return error_set(err, -ENOMEM, "checkpoint: out of memory");
	}
	size_t len = strlen(text);
	if (!(w->mac = mac_new(key))) {
		free(text);
		return error_set(err, -EIO, "checkpoint: OpenSSL has no HMAC-SHA256 here");
	}
	unsigned char n[4] = {(unsigned char)len, (unsigned char)(len >> 8),
			      (unsigned char)(len >> 16), (unsigned char)(len >> 24)};
	int rc = put(w, CKPT_MAGIC, 8, err);
	if (!rc)
		rc = put(w, n, sizeof n, err);
	if (!rc)
		rc = put(w, text, len, err);
	free(text);
	w->left = (uint64_t)bytes;
	if (rc)
		ckpt_write_abort(w);
	return rc;
}

int ckpt_write(struct ckpt_writer *w, const void *p, size_t n, struct aj_error *err)
{
	if (n > w->left)
		return error_set(err, -EPROTO, "checkpoint: the session's state grew past the %llu "
					       "bytes it said it had",
				 (unsigned long long)w->left);
	w->left -= n;
	return put(w, p, n, err);
}

int ckpt_write_end(struct ckpt_writer *w, struct aj_error *err)
{
	unsigned char tag[CKPT_TAG_BYTES];
	if (w->left) {
		ckpt_write_abort(w);
		return error_set(err, -EPROTO, "checkpoint: the session's state ended %llu bytes "
					       "short of what it said",
				 (unsigned long long)w->left);
	}
	EVP_MAC_CTX *ctx = w->mac;
	w->mac = NULL;
	if (mac_final(ctx, tag))
		return error_set(err, -EIO, "checkpoint: its tag could not be computed");
	int rc = write_full(w->fd, tag, sizeof tag);
	if (!rc && fsync(w->fd))
		rc = -errno;
	return rc ? error_set(err, rc, "checkpoint: writing it: %s", strerror(-rc)) : 0;
}

void ckpt_write_abort(struct ckpt_writer *w)
{
	EVP_MAC_CTX_free(w->mac);
	w->mac = NULL;
}

int ckpt_private_file(struct aj_error *err)
{
	const char *dirs[] = {getenv("TMPDIR"), "/var/tmp", "/tmp"};
	int last = ENOENT;
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		if (!dirs[i] || dirs[i][0] != '/')
			continue;
		/* Unlinked from its making: no other process can open it by a
		 * name, and it is gone when the last fd closes. */
		int fd = open(dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0)
			return fd;
		last = errno;
	}
	return error_set(err, -last, "checkpoint: no private file can be made in TMPDIR, /var/tmp "
				     "or /tmp: %s",
			 strerror(last));
}

static int refuse_checkpoint(struct aj_error *err, const char *why)
{
	return error_set(err, -EBADMSG, "checkpoint: refused, %s: it was changed, cut short, made "
					"under another key, or is no checkpoint",
			 why);
}

int ckpt_open_verified(int src, const struct aj_checkpoint_key *key, int *out, json_t **header,
		       uint64_t *payload_len, struct aj_error *err)
{
	*out = -1;
	*header = NULL;
	struct stat st;
	if (fstat(src, &st))
		return error_set(err, -errno, "checkpoint: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return refuse_checkpoint(err, "not a regular file");
	int fd = ckpt_private_file(err);
	if (fd < 0)
		return fd;
	EVP_MAC_CTX *mac = mac_new(key);
	if (!mac) {
		close(fd);
		return error_set(err, -EIO, "checkpoint: OpenSSL has no HMAC-SHA256 here");
	}
	/* Copied whole, tagged as it goes; the last 32 bytes read are the
	 * tag, kept back from the MAC. */
	static const size_t chunk = 1u << 20;
	char *buf = malloc(chunk + CKPT_TAG_BYTES);
	unsigned char tail[CKPT_TAG_BYTES];
	size_t held = 0;
	uint64_t total = 0;
	int rc = buf ? 0 : -ENOMEM;
	if (!rc && lseek(src, 0, SEEK_SET) < 0)
		rc = -errno;
	while (!rc) {
		ssize_t k = read(src, buf + held, chunk);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = -errno;
			break;
		}
		size_t have = held + (size_t)k;
		if (k == 0) {
			if (have < CKPT_TAG_BYTES)
				rc = -EBADMSG;
			else
				memcpy(tail, buf + have - CKPT_TAG_BYTES, CKPT_TAG_BYTES);
			held = have;
			break;
		}
		/* All but the last 32 bytes seen so far are the file's body. */
		size_t body = have > CKPT_TAG_BYTES ? have - CKPT_TAG_BYTES : 0;
		if (body && (!EVP_MAC_update(mac, (unsigned char *)buf, body) ||
			     write_full(fd, buf, body))) {
			rc = -EIO;
			break;
		}
		total += body;
		memmove(buf, buf + body, have - body);
		held = have - body;
	}
	free(buf);
	unsigned char want[CKPT_TAG_BYTES];
	if (rc) {
		EVP_MAC_CTX_free(mac);
		close(fd);
		return rc == -EBADMSG ? refuse_checkpoint(err, "shorter than a tag")
				      : error_set(err, rc, "checkpoint: reading it: %s", strerror(-rc));
	}
	if (mac_final(mac, want)) {
		close(fd);
		return error_set(err, -EIO, "checkpoint: its tag could not be computed");
	}
	if (CRYPTO_memcmp(want, tail, sizeof want)) {
		close(fd);
		return refuse_checkpoint(err, "its tag does not match");
	}
	/* Authentic: what follows is the host's own writing. */
	char head[12];
	uint32_t hlen = 0;
	if (lseek(fd, 0, SEEK_SET) < 0 || read_full(fd, head, sizeof head) ||
	    memcmp(head, CKPT_MAGIC, 8) ||
	    (hlen = (uint32_t)(unsigned char)head[8] | (uint32_t)(unsigned char)head[9] << 8 |
		    (uint32_t)(unsigned char)head[10] << 16 | (uint32_t)(unsigned char)head[11] << 24,
	     hlen > CKPT_HEADER_MAX) ||
	    12 + (uint64_t)hlen > total) {
		close(fd);
		return refuse_checkpoint(err, "its header is not one");
	}
	char *text = malloc(hlen + 1);
	json_t *h = NULL;
	if (text && !read_full(fd, text, hlen)) {
		text[hlen] = '\0';
		h = json_loads(text, 0, NULL);
	}
	free(text);
	json_t *bytes = json_object_get(h, "bytes");
	if (!json_is_object(h) || !json_is_integer(bytes) ||
	    (uint64_t)json_integer_value(bytes) != total - 12 - hlen) {
		json_decref(h);
		close(fd);
		return refuse_checkpoint(err, "its header is not one");
	}
	*out = fd;
	*header = h;
	*payload_len = total - 12 - hlen;
	return 0;
}
