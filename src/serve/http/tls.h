/* serve's TLS certificate and key, read and checked (tls.c). */
#ifndef AJ_SERVE_TLS_H
#define AJ_SERVE_TLS_H

#include "agentjail.h"

struct tls_files {
	char *cert_pem; /* the certificate (and its chain), NULL without TLS */
	char *key_pem;  /* its unencrypted private key */
};

/* Reads both files (none given: no TLS, 0) and checks that cert holds a
 * certificate, key an unencrypted private key, that they match and that
 * the certificate has not expired. 0 with t filled, or -errno with err
 * naming the option, the file and the fault. */
int tls_files_load(const char *cert_path, const char *key_path, struct tls_files *t,
		   struct aj_error *err);
/* Frees both, the key's bytes wiped first. */
void tls_files_free(struct tls_files *t);

#endif
