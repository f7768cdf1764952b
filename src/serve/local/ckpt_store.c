/* Serve's checkpoints on disk (ckpt_store.h). Layout under the store's
 * directory:
 *
 *   key                   the store's checkpoint key (0600)
 *   k-OWNER/              one key's (0700; OWNER: serve's hex name for the key)
 *     c-ID.ckpt c-ID.json   a checkpoint and its record
 *     p-ID.ckpt p-ID.json   a session paused when serve stopped, its terms
 *
 * A record is not authenticated: it says when the checkpoint expires and
 * what it held, for listing. What a session is made from is only ever the
 * .ckpt, whose tag the library checks before using a byte of it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../core/internal.h"
#include "../runs/runs.h"
#include "ckpt_store.h"

/* ---- names ---- */

/* An id from a URL names a file only if it is an id's shape: hex, short
 * (no "/", no "..", nothing that reaches another key's directory). */
static bool id_ok(const char *id)
{
	size_t n = strspn(id, "0123456789abcdef");
	return n >= 1 && n <= 64 && !id[n];
}

/* owner's directory, made (0700) if need be: 0 or -errno. An owner is
 * hex as an id is, so it names one directory of the store's and no
 * other. */
static int owner_dir(struct ckpt_store *st, const char *owner, char *out, size_t cap, bool make)
{
	if (!id_ok(owner))
		return -EINVAL;
	if (snprintf(out, cap, "%s/k-%s", st->dir, owner) >= (int)cap)
		return -ENAMETOOLONG;
	/* Only serve's uid reads a key's checkpoints: they hold its
	 * variables and files. */
	if (make && mkdir(out, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int file_of(struct ckpt_store *st, const char *owner, char kind, const char *id,
		   const char *ext, char *out, size_t cap)
{
	char d[PATH_MAX];
	int rc = owner_dir(st, owner, d, sizeof d, false);
	if (rc)
		return rc;
	if (!id_ok(id))
		return -ENOENT;
	return snprintf(out, cap, "%s/%c-%s.%s", d, kind, id, ext) >= (int)cap ? -ENAMETOOLONG : 0;
}

static void unlink_pair(struct ckpt_store *st, const char *owner, char kind, const char *id)
{
	char p[PATH_MAX];
	if (!file_of(st, owner, kind, id, "json", p, sizeof p))
		unlink(p);
	if (!file_of(st, owner, kind, id, "ckpt", p, sizeof p))
		unlink(p);
}

/* ---- records ---- */

static json_t *record_read(struct ckpt_store *st, const char *owner, char kind, const char *id)
{
	char p[PATH_MAX];
	if (file_of(st, owner, kind, id, "json", p, sizeof p))
		return NULL;
	json_t *o = json_load_file(p, JSON_REJECT_DUPLICATES, NULL);
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* Written whole or not at all (beside it, then renamed), mode 0600. */
static int record_write(struct ckpt_store *st, const char *owner, char kind, const char *id,
			json_t *o)
{
	char p[PATH_MAX], tmp[PATH_MAX + 8];
	int rc = file_of(st, owner, kind, id, "json", p, sizeof p);
	if (rc)
		return rc;
	snprintf(tmp, sizeof tmp, "%s.tmp", p);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	char *text = json_dumps(o, JSON_COMPACT);
	size_t n = text ? strlen(text) : 0;
	rc = !text ? -ENOMEM : write(fd, text, n) == (ssize_t)n ? 0 : -EIO;
	free(text);
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, p))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static bool expired(json_t *rec, time_t now)
{
	json_t *e = json_object_get(rec, "expires");
	return !json_is_integer(e) || json_integer_value(e) <= now;
}

/* Under the lock: owner's expired files gone; the bytes its live
 * checkpoints hold; each live record handed to each (may be NULL). */
static uint64_t store_sweep(struct ckpt_store *st, const char *owner,
		      void (*each)(json_t *rec, void *arg), void *arg)
{
	char d[PATH_MAX];
	if (owner_dir(st, owner, d, sizeof d, false))
		return 0;
	DIR *dir = opendir(d);
	if (!dir)
		return 0;
	uint64_t bytes = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(dir))) {
		char kind = e->d_name[0], id[80];
		size_t n = strlen(e->d_name);
		if ((kind != 'c' && kind != 'p') || e->d_name[1] != '-' || n < 8 ||
		    strcmp(e->d_name + n - 5, ".json") || n - 7 >= sizeof id)
			continue;
		memcpy(id, e->d_name + 2, n - 7);
		id[n - 7] = '\0';
		json_t *rec = record_read(st, owner, kind, id);
		if (!rec || expired(rec, now)) {
			unlink_pair(st, owner, kind, id);
		} else if (kind == 'c') {
			bytes += (uint64_t)json_integer_value(json_object_get(rec, "file_bytes"));
			if (each)
				each(rec, arg);
		}
		json_decref(rec);
	}
	closedir(dir);
	return bytes;
}

/* At start, under no save: each key's files whose writer died with an
 * earlier serve (".part", and the library's ".part.XXXXXX" beside it)
 * removed, and each key's expired ones swept. */
static void sweep_all(struct ckpt_store *st)
{
	DIR *top = opendir(st->dir);
	if (!top)
		return;
	struct dirent *e;
	while ((e = readdir(top))) {
		const char *owner = e->d_name + 2;
		if (strncmp(e->d_name, "k-", 2) || !id_ok(owner))
			continue;
		char d[PATH_MAX];
		if (owner_dir(st, owner, d, sizeof d, false))
			continue;
		DIR *dir = opendir(d);
		struct dirent *f;
		while (dir && (f = readdir(dir)))
			if (strstr(f->d_name, ".part") || strstr(f->d_name, ".json.tmp"))
				unlinkat(dirfd(dir), f->d_name, 0);
		if (dir)
			closedir(dir);
		store_sweep(st, owner, NULL, NULL);
	}
	closedir(top);
}

/* ---- the store ---- */

int ckpt_store_open(struct ckpt_store *st, const char *dir, double ttl_sec, unsigned quota_mb,
		    struct aj_error *err)
{
	memset(st, 0, sizeof *st);
	if (snprintf(st->dir, sizeof st->dir, "%s", dir) >= (int)sizeof st->dir)
		return error_set(err, -ENAMETOOLONG, "--checkpoint-dir %s: path too long", dir);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return error_set(err, -errno, "--checkpoint-dir %s: %s", dir, strerror(errno));
	struct stat sb;
	/* Another uid's directory, or one others may enter, could be read or
	 * swapped under us: refused, not fixed. */
	if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode))
		return error_set(err, -ENOTDIR, "--checkpoint-dir %s: not a directory", dir);
	if (sb.st_uid != geteuid() || (sb.st_mode & 077))
		return error_set(err, -EPERM, "--checkpoint-dir %s: must be this uid's and mode "
				 "0700 (it is %03o, uid %u)",
				 dir, (unsigned)(sb.st_mode & 0777), (unsigned)sb.st_uid);
	char key[PATH_MAX];
	snprintf(key, sizeof key, "%s/key", dir);
	int rc = aj_checkpoint_key_load(key, true, &st->key, err);
	if (rc)
		return rc;
	st->ttl_sec = ttl_sec;
	st->quota = (uint64_t)quota_mb << 20;
	pthread_mutex_init(&st->lock, NULL);
	sweep_all(st);
	return 0;
}

void ckpt_store_close(struct ckpt_store *st)
{
	pthread_mutex_destroy(&st->lock);
	memset(&st->key, 0, sizeof st->key);
}

static json_t *public_record(json_t *rec)
{
	json_t *o = json_deep_copy(rec);
	json_object_del(o, "file_bytes");
	return o;
}

int ckpt_store_save(struct ckpt_store *st, const char *owner, struct aj_session *s,
		    const char *from, const char *name, json_t **out, struct aj_error *err)
{
	*out = NULL;
	char d[PATH_MAX - 64], id[33], part[PATH_MAX], final[PATH_MAX];
	int rc = owner_dir(st, owner, d, sizeof d, true);
	if (rc)
		return error_set(err, rc, "checkpoint: the key's directory: %s", strerror(-rc));
	pthread_mutex_lock(&st->lock);
	uint64_t used = store_sweep(st, owner, NULL, NULL);
	pthread_mutex_unlock(&st->lock);
	/* Full already: refused before the session is asked for anything. */
	if (used >= st->quota)
		return error_set(err, -EDQUOT, "checkpoint: the key's checkpoints hold %llu MiB of "
				 "its %llu MiB; delete some first",
				 (unsigned long long)(used >> 20),
				 (unsigned long long)(st->quota >> 20));
	serve_id_new(id);
	snprintf(part, sizeof part, "%s/c-%s.part", d, id);
	snprintf(final, sizeof final, "%s/c-%s.ckpt", d, id);
	struct aj_checkpoint_info info;
	if ((rc = aj_session_checkpoint(s, &st->key, part, &info, err)))
		return rc;
	struct stat sb;
	time_t now = time(NULL);
	json_t *rec = json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:s, s:I}", "id", id, "session",
				from, "created", (json_int_t)now, "expires",
				(json_int_t)(now + (time_t)st->ttl_sec), "bytes",
				(json_int_t)info.bytes, "files", (int)info.files, "left_out",
				(int)info.left_out, "note", info.note, "file_bytes", (json_int_t)0);
	if (rec && name)
		json_object_set_new(rec, "name", json_string(name));
	pthread_mutex_lock(&st->lock);
	/* Counted again with the new file's size, under the lock: two made
	 * at once cannot both pass the quota. */
	used = store_sweep(st, owner, NULL, NULL);
	if (!rec || stat(part, &sb))
		rc = error_set(err, -EIO, "checkpoint: its file is gone");
	else if (used + (uint64_t)sb.st_size > st->quota)
		rc = error_set(err, -EDQUOT, "checkpoint: %llu MiB would take the key's checkpoints "
				 "past its quota of %llu MiB (%llu MiB held); delete some first",
				 (unsigned long long)(((uint64_t)sb.st_size + (1 << 20) - 1) >> 20),
				 (unsigned long long)(st->quota >> 20),
				 (unsigned long long)(used >> 20));
	else if (json_object_set_new(rec, "file_bytes", json_integer(sb.st_size)),
		 (rc = record_write(st, owner, 'c', id, rec)) || rename(part, final))
		rc = error_set(err, rc ? rc : -errno, "checkpoint: keeping it: %s",
			       strerror(rc ? -rc : errno));
	if (rc)
		unlink_pair(st, owner, 'c', id);
	pthread_mutex_unlock(&st->lock);
	unlink(part);
	if (!rc)
		*out = public_record(rec);
	json_decref(rec);
	return rc;
}

/* A kind's file opened as a session under cfg, if owner's record of it
 * is live. */
static int open_from(struct ckpt_store *st, const char *owner, char kind, const char *id,
		     const struct aj_config *cfg, struct aj_session **out,
		     struct aj_checkpoint_info *info, struct aj_error *err)
{
	*out = NULL;
	json_t *rec = record_read(st, owner, kind, id);
	bool live = rec && !expired(rec, time(NULL));
	json_decref(rec);
	char p[PATH_MAX];
	if (!live || file_of(st, owner, kind, id, "ckpt", p, sizeof p))
		return error_set(err, -ENOENT, "no such checkpoint");
	int rc = aj_session_restore(cfg, &st->key, p, out, info, err);
	/* Its file went between the record and the open: as if never kept. */
	return rc == -ENOENT ? error_set(err, -ENOENT, "no such checkpoint") : rc;
}

int ckpt_store_restore(struct ckpt_store *st, const char *owner, const char *id,
		       const struct aj_config *cfg, struct aj_session **out,
		       struct aj_checkpoint_info *info, struct aj_error *err)
{
	return open_from(st, owner, 'c', id, cfg, out, info, err);
}

struct listing {
	json_t *a;
};

static void list_one(json_t *rec, void *arg)
{
	struct listing *l = arg;
	json_array_append_new(l->a, public_record(rec));
}

static int newest_first(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "created"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "created"));
	return x < y ? 1 : x > y ? -1 : 0;
}

json_t *ckpt_store_list(struct ckpt_store *st, const char *owner)
{
	struct listing l = {json_array()};
	if (!l.a)
		return NULL;
	pthread_mutex_lock(&st->lock);
	uint64_t used = store_sweep(st, owner, list_one, &l);
	pthread_mutex_unlock(&st->lock);
	size_t n = json_array_size(l.a);
	json_t **v = n ? malloc(n * sizeof *v) : NULL;
	json_t *sorted = json_array();
	if (v && sorted) {
		for (size_t i = 0; i < n; i++)
			v[i] = json_array_get(l.a, i);
		qsort(v, n, sizeof *v, newest_first);
		for (size_t i = 0; i < n; i++)
			json_array_append(sorted, v[i]);
	}
	free(v);
	json_decref(l.a);
	return json_pack("{s:o, s:I, s:I}", "checkpoints", sorted ?: json_array(), "bytes",
			 (json_int_t)used, "quota", (json_int_t)st->quota);
}

json_t *ckpt_store_get(struct ckpt_store *st, const char *owner, const char *id)
{
	json_t *rec = record_read(st, owner, 'c', id);
	if (rec && expired(rec, time(NULL))) {
		json_decref(rec);
		return NULL;
	}
	json_t *o = rec ? public_record(rec) : NULL;
	json_decref(rec);
	return o;
}

int ckpt_store_delete(struct ckpt_store *st, const char *owner, const char *id)
{
	json_t *rec = ckpt_store_get(st, owner, id);
	if (!rec)
		return -ENOENT;
	json_decref(rec);
	pthread_mutex_lock(&st->lock);
	unlink_pair(st, owner, 'c', id);
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* ---- sessions paused over a stop ---- */

int ckpt_store_keep_paused(struct ckpt_store *st, const char *owner, const char *id,
			   struct aj_session *s, json_t *terms, struct aj_error *err)
{
	char d[PATH_MAX], p[PATH_MAX];
	int rc = owner_dir(st, owner, d, sizeof d, true);
	if (!rc)
		rc = file_of(st, owner, 'p', id, "ckpt", p, sizeof p);
	if (rc)
		return error_set(err, rc, "keeping session %s: %s", id, strerror(-rc));
	if ((rc = aj_session_checkpoint(s, &st->key, p, NULL, err)))
		return rc;
	time_t now = time(NULL);
	json_t *rec = json_pack("{s:s, s:O, s:I, s:I}", "id", id, "terms", terms, "created",
				(json_int_t)now, "expires", (json_int_t)(now + (time_t)st->ttl_sec));
	rc = rec ? record_write(st, owner, 'p', id, rec) : -ENOMEM;
	json_decref(rec);
	if (rc) {
		unlink_pair(st, owner, 'p', id);
		return error_set(err, rc, "keeping session %s: %s", id, strerror(-rc));
	}
	return 0;
}

int ckpt_store_paused(struct ckpt_store *st, const char *owner, const char *id, json_t **terms)
{
	*terms = NULL;
	json_t *rec = record_read(st, owner, 'p', id);
	json_t *t = json_object_get(rec, "terms");
	if (!rec || expired(rec, time(NULL)) || !json_is_object(t)) {
		json_decref(rec);
		return -ENOENT;
	}
	*terms = json_incref(t);
	json_decref(rec);
	return 0;
}

int ckpt_store_paused_open(struct ckpt_store *st, const char *owner, const char *id,
			   const struct aj_config *cfg, struct aj_session **out,
			   struct aj_error *err)
{
	return open_from(st, owner, 'p', id, cfg, out, NULL, err);
}

void ckpt_store_paused_done(struct ckpt_store *st, const char *owner, const char *id)
{
	pthread_mutex_lock(&st->lock);
	unlink_pair(st, owner, 'p', id);
	pthread_mutex_unlock(&st->lock);
}
