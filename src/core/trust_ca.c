/* cfg.trust_ca: the deployer's CA certificates, and the one bundle a
 * sandbox trusts (docs/egress.md, "HTTPS"). This file owns the file's
 * checks (aj_config_validate), and the bundle made when a sandbox opens:
 * the view's own /etc/ssl/certs/ca-certificates.crt (the image's; the
 * host's on the process tier) followed by the deployer's certificates, in
 * a directory of the sandbox's own. src/api/sandbox.c makes it; every tier
 * shows it read-only at CONTRACT_CA_BUNDLE (the host tiers as a bind, the
 * microvm guest in a tmpfs of its agent's), and rule E1's rows name that
 * path for the clients that carry a bundle of their own. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contract.h"
#include "internal.h"

#define CA_MAX ((size_t)AJ_MAX_TRUST_CA_KB * 1024)
/* An image's bundle is about 220 KB; this bounds a silly one. */
#define BUNDLE_MAX ((size_t)16 << 20)

/* The whole of fd, at most max bytes: 0, -EFBIG past max, or -errno. */
static int read_bounded(int fd, size_t max, char **out, size_t *len)
{
	int rc = read_fd_up_to(fd, max, out, len);
	if (!rc && *len > max) {
		free(*out);
		*out = NULL;
		return -EFBIG;
	}
	return rc;
}

/* One PEM block's body (its base64 lines, joined) is a DER certificate:
 * canonical base64 of a SEQUENCE. */
static bool der_certificate(const char *b64, size_t n)
{
	unsigned char *der = NULL;
	size_t len = 0;
	bool ok = base64_decode(b64, n, &der, &len) == 0 && len > 2 && der[0] == 0x30;
	free(der);
	return ok;
}

/* pem[0..len) holds PEM certificates and nothing a sandbox must not see:
 * 0 and *certs, or -EINVAL with why (what the deployer reads after the
 * file's name). Text between blocks (comments, openssl's "subject=" lines)
 * is allowed, as bundles carry it; any block but a certificate is refused,
 * a private key above all. */
static int pem_certificates(const char *pem, size_t len, unsigned *certs, char *why, size_t wn)
{
	static const char begin[] = "-----BEGIN ", end[] = "-----END ", dashes[] = "-----";
	if (memchr(pem, '\0', len)) {
		snprintf(why, wn, "is not PEM (it holds binary data; a DER certificate converts "
				  "with 'openssl x509 -inform der -in FILE')");
		return -EINVAL;
	}
	char label[64] = "";
	char *body = malloc(len + 1);
	if (!body) {
		snprintf(why, wn, "out of memory");
		return -ENOMEM;
	}
	size_t body_n = 0;
	bool inside = false;
	unsigned line_no = 0;
	*certs = 0;
	for (const char *p = pem; p < pem + len;) {
		const char *nl = memchr(p, '\n', (size_t)(pem + len - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(pem + len - p);
		const char *next = nl ? nl + 1 : pem + len;
		while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		line_no++;
		bool is_begin = n > sizeof begin - 1 && !strncmp(p, begin, sizeof begin - 1);
		bool is_end = n > sizeof end - 1 && !strncmp(p, end, sizeof end - 1);
		if (!inside && is_begin) {
			const char *l = p + sizeof begin - 1;
			size_t ln = n - (sizeof begin - 1);
			if (ln < sizeof dashes || strncmp(l + ln - 5, dashes, 5) || ln - 5 >= sizeof label) {
				snprintf(why, wn, "line %u: a malformed BEGIN line", line_no);
				goto bad;
			}
			snprintf(label, sizeof label, "%.*s", (int)(ln - 5), l);
			if (strcmp(label, "CERTIFICATE") && strcmp(label, "TRUSTED CERTIFICATE")) {
				snprintf(why, wn,
					 "line %u: holds a '%s' block; only CERTIFICATE blocks may "
					 "be trusted%s",
					 line_no, label,
					 strstr(label, "PRIVATE KEY")
						 ? " (a private key must never reach a sandbox)"
						 : "");
				goto bad;
			}
			inside = true;
			body_n = 0;
		} else if (inside && is_end) {
			const char *l = p + sizeof end - 1;
			size_t ln = n - (sizeof end - 1);
			if (ln != strlen(label) + 5 || strncmp(l, label, strlen(label)) ||
			    strncmp(l + ln - 5, dashes, 5)) {
				snprintf(why, wn, "line %u: the END line does not close '%s'", line_no,
					 label);
				goto bad;
			}
			if (!der_certificate(body, body_n)) {
				snprintf(why, wn, "line %u: the '%s' block ending here is not a "
						  "base64 DER certificate", line_no, label);
				goto bad;
			}
			(*certs)++;
			inside = false;
		} else if (inside) {
			if (is_begin) {
				snprintf(why, wn, "line %u: a BEGIN inside the '%s' block", line_no,
					 label);
				goto bad;
			}
			/* Headers (Proc-Type, DEK-Info) mark an encrypted key. */
			if (memchr(p, ':', n)) {
				snprintf(why, wn, "line %u: a header inside the '%s' block", line_no,
					 label);
				goto bad;
			}
			memcpy(body + body_n, p, n);
			body_n += n;
		}
		p = next;
	}
	free(body);
	if (inside) {
		snprintf(why, wn, "the '%s' block has no END line", label);
		return -EINVAL;
	}
	if (*certs == 0) {
		snprintf(why, wn, "is not PEM: no '-----BEGIN CERTIFICATE-----' block in it");
		return -EINVAL;
	}
	return 0;
bad:
	free(body);
	return -EINVAL;
}

int trust_ca_read(const char *what, const char *path, char **pem, size_t *len, unsigned *certs,
		  struct aj_error *err)
{
	*pem = NULL;
	if (!path[0])
		return error_set(err, -EINVAL, "%s: the path is empty", what);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return error_set(err, -errno, "%s: %s: %s", what, path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return error_set(err, -EINVAL, "%s: %s is not a regular file", what, path);
	}
	int rc = read_bounded(fd, CA_MAX, pem, len);
	close(fd);
	if (rc == -EFBIG)
		return error_set(err, -EFBIG, "%s: %s is larger than %d KiB (a CA bundle is "
					      "a few KiB; name only the certificates to add)",
				 what, path, AJ_MAX_TRUST_CA_KB);
	if (rc)
		return error_set(err, rc, "%s: %s: %s", what, path, strerror(-rc));
	char why[200];
	if ((rc = pem_certificates(*pem, *len, certs, why, sizeof why))) {
		free(*pem);
		*pem = NULL;
		return error_set(err, rc, "%s: %s %s", what, path, why);
	}
	return 0;
}

int trust_ca_check(const struct aj_config *cfg, struct aj_error *err)
{
	if (!cfg->trust_ca)
		return 0;
	/* The bundle's path is the sandbox's own: a deployer's path there
	 * would be covered, or cover it. */
	for (uint32_t i = 0; cfg->ro_binds && i < cfg->ro_bind_count; i++) {
		char host[RO_BIND_PATH_MAX], target[RO_BIND_PATH_MAX];
		if (cfg->ro_binds[i] && !ro_bind_split(cfg->ro_binds[i], host, target) &&
		    !strcmp(target, CONTRACT_CA_BUNDLE))
			return error_set(err, -EINVAL,
					 "trust_ca: ro_bind '%s' shows a file at %s too, where the "
					 "sandbox's CA bundle goes",
					 cfg->ro_binds[i], CONTRACT_CA_BUNDLE);
	}
	char *pem;
	size_t len;
	unsigned certs;
	int rc = trust_ca_read("trust_ca", cfg->trust_ca, &pem, &len, &certs, err);
	free(pem);
	return rc;
}

/* The bundle at CONTRACT_CA_BUNDLE in the tree under view_root, resolved
 * inside it (an image's absolute symlink must not lead to the host's). */
static int read_view_bundle(const char *view_root, char **out, size_t *len, struct aj_error *err)
{
	int rfd = open(view_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return error_set(err, -errno, "trust_ca: open %s: %s", view_root, strerror(errno));
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
			       .resolve = RESOLVE_IN_ROOT};
	int fd = (int)syscall(SYS_openat2, rfd, &CONTRACT_CA_BUNDLE[1], &how, sizeof how);
	int e = errno;
	close(rfd);
	if (fd < 0)
		return error_set(err, -e,
				 "trust_ca: the sandbox's view has no CA bundle to add to: %s%s: %s "
				 "(an image built before images carried one: rebuild it with "
				 "'agentjail image build --force'; on the process tier, apt-get "
				 "install ca-certificates)",
				 strcmp(view_root, "/") ? view_root : "", CONTRACT_CA_BUNDLE,
				 strerror(e));
	struct stat st;
	int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read_bounded(fd, BUNDLE_MAX, out, len)
							    : -EINVAL;
	close(fd);
	if (rc)
		return error_set(err, rc, "trust_ca: the view's %s: %s", CONTRACT_CA_BUNDLE,
				 rc == -EINVAL ? "not a regular file" : strerror(-rc));
	return 0;
}

/* Where this process keeps its sandboxes' bundles: beside the state
 * directory (as the microvm tier's runs are), root's and private. */
static void trust_base(const struct aj_config *cfg, char *out, size_t n)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (cfg->state_dir || geteuid() == 0)
		snprintf(out, n, "%s-trust", cfg->state_dir ? cfg->state_dir : "/run/agentjail");
	else if (xdg && xdg[0] == '/')
		snprintf(out, n, "%s/agentjail-trust", xdg);
	else
		snprintf(out, n, "/tmp/agentjail-trust-%u", (unsigned)geteuid());
}

void trust_bundle_remove(char *dir)
{
	if (!dir)
		return;
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/ca-certificates.crt", dir);
	unlink(path);
	rmdir(dir);
	free(dir);
}

/* Bundles whose process died with them (PID-XXXXXX): nothing else removes
 * them. A pid reused since costs a leftover of a few hundred KB, never a
 * bundle in use, as its owner's pid is alive. */
static void sweep_dead_bundles(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		int pid;
		char rest[16];
		if (sscanf(de->d_name, "%d-%15s", &pid, rest) != 2 || pid <= 0 || pid == getpid() ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%.3000s/%.200s", base, de->d_name);
		trust_bundle_remove(strdup(path));
	}
	if (d)
		closedir(d);
}

static int write_bundle(const char *path, const char *base, size_t base_len, const char *ca,
			size_t ca_len)
{
	/* 0644: the sandbox's uid reads it (through the bind); nobody writes it. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	static const char mark[] = "\n# agentjail: the deployer's CA certificates (trust_ca) and the "
				   "sandbox's egress CA (secrets)\n";
	bool nl = base_len && base[base_len - 1] != '\n';
	int rc = write_full(fd, base, base_len);
	if (!rc && nl)
		rc = write_full(fd, "\n", 1);
	if (!rc)
		rc = write_full(fd, mark, sizeof mark - 1);
	if (!rc)
		rc = write_full(fd, ca, ca_len);
	if (!rc && ca_len && ca[ca_len - 1] != '\n')
		rc = write_full(fd, "\n", 1);
	if (fchmod(fd, 0644) < 0 && !rc)
		rc = -errno;
	close(fd);
	return rc;
}

int trust_bundle_load(const char *file, size_t max, char **out, size_t *len,
		      struct aj_error *err)
{
	*out = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, -errno, "trust_ca: %s: %s", file, strerror(errno));
	int rc = read_bounded(fd, max, out, len);
	close(fd);
	if (rc)
		return error_set(err, rc, "trust_ca: the bundle %s: %s", file,
				 rc == -EFBIG ? "larger than this tier carries" : strerror(-rc));
	return 0;
}

int trust_bundle_make(const struct aj_config *cfg, const char *view_root, const char *extra,
		      size_t extra_len, char **dir, char **file, struct aj_error *err)
{
	*dir = *file = NULL;
	char *ca = NULL, *base = NULL;
	size_t ca_len = 0, base_len;
	unsigned certs;
	int rc;
	if ((cfg->trust_ca &&
	     (rc = trust_ca_read("trust_ca", cfg->trust_ca, &ca, &ca_len, &certs, err))) ||
	    (rc = read_view_bundle(view_root, &base, &base_len, err)))
		goto out;
	/* The sandbox's interception CA (secrets) after the deployer's. */
	if (extra_len) {
		char *joined = realloc(ca, ca_len + extra_len + 1);
		if (!joined) {
			rc = error_set(err, -ENOMEM, "trust_ca: out of memory");
			goto out;
		}
		ca = joined;
		memcpy(ca + ca_len, extra, extra_len);
		ca_len += extra_len;
		ca[ca_len] = '\0';
	}
	char path[PATH_MAX];
	trust_base(cfg, path, sizeof path);
	/* 0700 and ours: the mounts read the file, no other user does. One
	 * that was there must be ours and writable by no one else (not a
	 * link), or another user could change what the sandbox trusts. */
	struct stat st;
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		rc = error_set(err, -errno, "trust_ca: mkdir %s: %s", path, strerror(errno));
		goto out;
	}
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		rc = error_set(err, -EPERM,
			       "trust_ca: %s must be a directory owned by uid %u and writable by "
			       "no one else",
			       path, (unsigned)geteuid());
		goto out;
	}
	sweep_dead_bundles(path);
	size_t n = strlen(path);
	snprintf(path + n, sizeof path - n, "/%d-XXXXXX", (int)getpid());
	if (!mkdtemp(path)) {
		rc = error_set(err, -errno, "trust_ca: mkdtemp %s: %s", path, strerror(errno));
		goto out;
	}
	if (!(*dir = strdup(path))) {
		rmdir(path);
		rc = error_set(err, -ENOMEM, "trust_ca: out of memory");
		goto out;
	}
	n = strlen(path);
	snprintf(path + n, sizeof path - n, "/ca-certificates.crt");
	if ((rc = write_bundle(path, base, base_len, ca, ca_len))) {
		error_set(err, rc, "trust_ca: write %s: %s", path, strerror(-rc));
		goto out;
	}
	if (!(*file = strdup(path)))
		rc = error_set(err, -ENOMEM, "trust_ca: out of memory");
out:
	if (rc) {
		trust_bundle_remove(*dir);
		*dir = NULL;
	}
	free(ca);
	free(base);
	return rc;
}
