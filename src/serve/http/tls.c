/* serve's TLS certificate and key (--tls-cert, --tls-key): read whole,
 * then checked with OpenSSL before libmicrohttpd (which serves TLS through
 * GnuTLS) is given them, so that a wrong file is refused at start in words
 * that name it, never as a listener that fails each handshake. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../core/internal.h"
#include "tls.h"

/* A chain and a key are a few KiB; more is not a PEM file of either. */
#define TLS_FILE_MAX ((size_t)1 << 20)

static int read_pem(const char *what, const char *path, char **out, struct aj_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "re");
	if (!f)
		return error_set(err, -errno, "%s: %s: %s", what, path, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode))
		rc = error_set(err, -EINVAL, "%s: %s is not a regular file", what, path);
	else if ((size_t)st.st_size > TLS_FILE_MAX || st.st_size == 0)
		rc = error_set(err, -EINVAL, "%s: %s is %s", what, path,
			       st.st_size ? "larger than 1 MiB: not a PEM file" : "empty");
	char *buf = rc ? NULL : malloc((size_t)st.st_size + 1);
	if (!rc && !buf)
		rc = error_set(err, -ENOMEM, "%s: out of memory", what);
	if (!rc && fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		rc = error_set(err, -EIO, "%s: %s: cannot read it whole", what, path);
	fclose(f);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[st.st_size] = '\0';
	if (strlen(buf) != (size_t)st.st_size) {
		free(buf);
		return error_set(err, -EINVAL, "%s: %s holds a NUL byte: not a PEM file", what, path);
	}
	*out = buf;
	return 0;
}

/* OpenSSL's own words for the last error, for a message. */
static const char *ssl_reason(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	return r ? r : "no PEM block of that kind";
}

int tls_files_load(const char *cert_path, const char *key_path, struct tls_files *t,
		   struct aj_error *err)
{
	memset(t, 0, sizeof *t);
	if (!cert_path != !key_path)
		return error_set(err, -EINVAL, "--tls-cert and --tls-key go together: %s is missing",
				 cert_path ? "--tls-key" : "--tls-cert");
	if (!cert_path)
		return 0;
	int rc;
	if ((rc = read_pem("--tls-cert", cert_path, &t->cert_pem, err)) ||
	    (rc = read_pem("--tls-key", key_path, &t->key_pem, err))) {
		tls_files_free(t);
		return rc;
	}
	ERR_clear_error();
	BIO *cb = BIO_new_mem_buf(t->cert_pem, -1), *kb = BIO_new_mem_buf(t->key_pem, -1);
	X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	if (!cert) {
		rc = error_set(err, -EINVAL, "--tls-cert: %s holds no PEM certificate (%s)",
			       cert_path, ssl_reason());
		goto out;
	}
	ERR_clear_error();
	/* No passphrase callback: an encrypted key would wait for a terminal. */
	EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, (void *)"") : NULL;
	if (!key) {
		rc = error_set(err, -EINVAL, "--tls-key: %s holds no unencrypted PEM private key (%s)",
			       key_path, ssl_reason());
	} else if (X509_check_private_key(cert, key) != 1) {
		rc = error_set(err, -EINVAL, "--tls-key: %s is not the key of the certificate in %s",
			       key_path, cert_path);
	} else if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
		rc = error_set(err, -EINVAL, "--tls-cert: the certificate in %s has expired",
			       cert_path);
	}
	EVP_PKEY_free(key);
	X509_free(cert);
out:
	BIO_free(cb);
	BIO_free(kb);
	ERR_clear_error();
	if (rc)
		tls_files_free(t);
	return rc;
}

void tls_files_free(struct tls_files *t)
{
	free(t->cert_pem);
	if (t->key_pem) {
		/* The key leaves no copy behind in freed memory. */
		OPENSSL_cleanse(t->key_pem, strlen(t->key_pem));
		free(t->key_pem);
	}
	t->cert_pem = t->key_pem = NULL;
}
