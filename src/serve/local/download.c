/* The download of download.h: its first part read before the answer (so a
 * missing file or one over the cap is its error, not a cut stream), the
 * rest pulled part by part as the client reads. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../api/api.h"
#include "download.h"

struct download {
	struct session_table *t;
	struct hsession *h;   /* held: the session stays until the stream ends */
	char *path;
	uint64_t size;        /* the file's, as its first part said */
	uint64_t next;        /* the offset of the part after buf */
	unsigned char *buf;   /* the current part */
	size_t len, pos;
};

static void download_done(void *arg)
{
	struct download *d = arg;
	sessions_put(d->t, d->h);
	free(d->buf);
	free(d->path);
	free(d);
}

static long download_read(void *arg, char *out, size_t max)
{
	struct download *d = arg;
	if (d->pos == d->len) {
		if (d->next >= d->size)
			return 0;
		free(d->buf);
		d->buf = NULL;
		d->len = d->pos = 0;
		void *data;
		size_t len;
		uint64_t size;
		struct aj_error err = {0};
		/* A file that shrank, or changed size, or a session that closed
		 * meanwhile: the connection is cut, so the client cannot take a
		 * short file for the whole one. */
		if (session_get_part(d->h->s, d->path, d->next, DOWNLOAD_PART, &data, &len, &size,
				     &err) ||
		    size != d->size || !len) {
			free(len ? data : NULL);
			return -1;
		}
		d->buf = data;
		d->len = len;
		d->next += len;
	}
	size_t n = d->len - d->pos < max ? d->len - d->pos : max;
	memcpy(out, d->buf + d->pos, n);
	d->pos += n;
	return (long)n;
}

int download_answer(struct session_table *t, struct hsession *h, const char *path,
		    struct http_response *rs, struct aj_error *err)
{
	void *data;
	size_t len;
	uint64_t size;
	int rc = session_get_part(h->s, path, 0, DOWNLOAD_PART, &data, &len, &size, err);
	if (rc)
		return rc;
	rs->code = 200;
	rs->content_type = "application/octet-stream";
	if (len >= size) {
		rs->body = data;
		rs->len = len;
		return 0;
	}
	struct download *d = calloc(1, sizeof *d);
	char *p = strdup(path);
	if (!d || !p) {
		free(d);
		free(p);
		free(data);
		return error_set(err, -ENOMEM, "get: out of memory");
	}
	sessions_hold(t, h);
	*d = (struct download){.t = t, .h = h, .path = p, .size = size, .next = len,
			       .buf = data, .len = len};
	rs->stream_read = download_read;
	rs->stream_done = download_done;
	rs->stream_arg = d;
	return 0;
}
