/* The CA a sandbox's egress proxy mints leaf certificates from, to
 * terminate the program's TLS to hosts that carry a secret (issue 39,
 * docs/secrets.md). Made when a sandbox with secrets opens: an EC P-256 key
 * that lives only in the host's memory (never in a file, never in the
 * sandbox), and a certificate the sandbox's CA bundle gains. One CA per
 * sandbox, so a certificate minted for one sandbox is trusted by no other.
 * Held by reference: the sandbox and each proxy it starts. */
#ifndef AJ_EGRESS_MITM_CA_H
#define AJ_EGRESS_MITM_CA_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "agentjail.h"

struct mitm_ca;

/* A new CA: 0, or -errno with err. */
int mitm_ca_new(struct mitm_ca **out, struct aj_error *err);
void mitm_ca_ref(struct mitm_ca *ca);
/* Drops a reference; the last wipes the keys. NULL is fine. */
void mitm_ca_unref(struct mitm_ca *ca);
/* The CA's certificate, PEM (what the sandbox's bundle gains). */
const char *mitm_ca_pem(const struct mitm_ca *ca, size_t *len);
/* A server context whose leaf is minted for host (a DNS name, as the SNI
 * said), cached per name; speaks HTTP/1.1 only (ALPN). A new reference
 * (SSL_CTX_free it); NULL if it cannot be made. */
SSL_CTX *mitm_ca_server_ctx(struct mitm_ca *ca, const char *host);

#endif
