/* A deployer's secrets file, read whole and checked (secrets_file.h). What
 * it holds are credentials: nothing here prints, logs or quotes the text;
 * an error names the file and the problem, and secret_set_parse's words
 * name an item and a field, never a value. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"
#include "../core/secret.h"
#include "secrets_file.h"

void secrets_text_free(char *text)
{
	if (!text)
		return;
	/* The values must not outlive their use in freed heap memory. */
	explicit_bzero(text, strlen(text));
	free(text);
}

/* The file's bytes, up to SECRETS_FILE_MAX, from fd (a regular file of
 * size bytes by fstat): one past the bound is read to see a file that grew
 * since. */
static int read_whole(int fd, const char *path, off_t size, char **text, struct aj_error *err)
{
	if (size > SECRETS_FILE_MAX)
		return error_set(err, -EFBIG, "%s is larger than %d KiB (a secrets file is a few KiB)",
				 path, SECRETS_FILE_MAX / 1024);
	char *buf = malloc(SECRETS_FILE_MAX + 2);
	if (!buf)
		return error_set(err, -ENOMEM, "%s: out of memory", path);
	size_t len = 0;
	while (len <= SECRETS_FILE_MAX) {
		ssize_t n = read(fd, buf + len, SECRETS_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			explicit_bzero(buf, len);
			free(buf);
			return error_set(err, -e, "%s: cannot read: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	const char *why = len > SECRETS_FILE_MAX ? "grew past the bound while it was read" :
			  !len ? "is empty (a secrets file is a JSON array: [] for none)" :
			  /* A NUL would end the text the JSON parser sees: what
			   * follows it would be silently dropped. */
			  memchr(buf, '\0', len) ? "holds a NUL byte" : NULL;
	if (why) {
		explicit_bzero(buf, len);
		free(buf);
		return error_set(err, -EINVAL, "%s %s", path, why);
	}
	*text = buf;
	return 0;
}

int secrets_file_read(const char *path, char **text, struct aj_error *err)
{
	*text = NULL;
	/* O_NONBLOCK: a FIFO put at the path must not hang the start; it is
	 * refused below as not a regular file. Symlinks are followed: secret
	 * stores mount files through them (Kubernetes' ..data). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return error_set(err, -errno, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	int rc = 0;
	/* The checks are of the file opened (fstat), not of the path, which
	 * could be swapped between a stat and the open. */
	if (fstat(fd, &st))
		rc = error_set(err, -errno, "%s: cannot stat: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = error_set(err, -EINVAL, "%s is not a regular file", path);
	/* As ssh refuses a private key others can read: a credential in a
	 * file other users can read is already given away, and one they can
	 * write can be pointed at their hosts. Refused, not warned: a warning
	 * scrolls past, and the deployer fixes it once with chmod. */
	else if (st.st_mode & 077)
		rc = error_set(err, -EPERM,
			       "%s is %s by other users (mode %04o); chmod 600 it", path,
			       st.st_mode & 044 ? "readable" : "writable or executable",
			       (unsigned)(st.st_mode & 07777));
	else
		rc = read_whole(fd, path, st.st_size, text, err);
	close(fd);
	if (rc)
		return rc;
	/* Checked here as aj_config_validate checks it, so that what is wrong
	 * is said with the file's name: "PATH: item 2: ...". */
	struct secret_set set;
	char why[AJ_ERROR_MAX];
	rc = secret_set_parse(*text, &set, why, sizeof why);
	if (rc) {
		const char *w = !strncmp(why, "secrets: ", 9) ? why + 9 : why;
		error_set(err, rc, "%s: %s", path, w);
		secrets_text_free(*text);
		*text = NULL;
		return rc;
	}
	secret_set_free(&set);
	return 0;
}
