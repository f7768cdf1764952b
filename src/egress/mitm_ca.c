/* A sandbox's interception CA (see mitm_ca.h), with OpenSSL. */
#include <errno.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/internal.h"
#include "mitm_ca.h"

/* Leaf contexts kept per host name: a sandbox's secrets name a few hosts,
 * and a program that asks for more names than this only costs a re-mint. */
#define LEAF_CACHE 32
/* How long the CA and its leaves are valid: a sandbox lives hours at most
 * (a session's idle and life limits); a day, and an hour back for a clock
 * a little behind the host's. */
#define VALID_SEC (24 * 3600)
#define BACKDATE_SEC 3600

struct leaf {
	char host[256];
	SSL_CTX *ctx;
};

struct mitm_ca {
	atomic_uint refs;
	EVP_PKEY *key;        /* the CA's */
	EVP_PKEY *leaf_key;   /* every leaf's: one key, many names */
	X509 *cert;
	char *pem;
	size_t pem_len;
	pthread_mutex_t lock; /* the cache */
	struct leaf leaves[LEAF_CACHE];
	unsigned next;        /* the slot the next leaf takes, round robin */
};

static int random_serial(X509 *x)
{
	unsigned char b[16];
	if (RAND_bytes(b, sizeof b) != 1)
		return -1;
	b[0] &= 0x7f; /* positive */
	BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
	int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	int ok = e && X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

/* A certificate for key under name, signed by issuer's key (itself when
 * issuer is NULL: the CA). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
		       const char *san)
{
	X509 *x = X509_new();
	if (!x || !X509_set_version(x, 2) || random_serial(x) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_SEC) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), VALID_SEC) || !X509_set_pubkey(x, key))
		goto fail;
	X509_NAME *name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"agentjail",
					-1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
					0) ||
	    !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name))
		goto fail;
	X509 *iss = issuer ? issuer : x;
	if (!issuer) {
		/* A CA for server certificates of this one sandbox and
		 * nothing under it: no intermediate (pathlen 0). */
		if (add_ext(x, iss, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
		    add_ext(x, iss, NID_key_usage, "critical,keyCertSign,cRLSign") ||
		    add_ext(x, iss, NID_subject_key_identifier, "hash"))
			goto fail;
	} else if (add_ext(x, iss, NID_basic_constraints, "critical,CA:FALSE") ||
		   add_ext(x, iss, NID_key_usage, "critical,digitalSignature") ||
		   add_ext(x, iss, NID_ext_key_usage, "serverAuth") ||
		   add_ext(x, iss, NID_subject_alt_name, san) ||
		   add_ext(x, iss, NID_authority_key_identifier, "keyid:always")) {
		goto fail;
	}
	if (!X509_sign(x, issuer_key, EVP_sha256()))
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

int mitm_ca_new(struct mitm_ca **out, struct aj_error *err)
{
	*out = NULL;
	struct mitm_ca *ca = calloc(1, sizeof *ca);
	if (!ca)
		return error_set(err, -ENOMEM, "secrets: out of memory");
	atomic_init(&ca->refs, 1);
	pthread_mutex_init(&ca->lock, NULL);
	char cn[64];
	unsigned char id[6];
	RAND_bytes(id, sizeof id);
	snprintf(cn, sizeof cn, "agentjail egress CA %02x%02x%02x%02x%02x%02x", id[0], id[1], id[2],
		 id[3], id[4], id[5]);
	BIO *b = NULL;
	if (!(ca->key = EVP_EC_gen("P-256")) || !(ca->leaf_key = EVP_EC_gen("P-256")) ||
	    !(ca->cert = make_cert(ca->key, cn, NULL, ca->key, NULL)) ||
	    !(b = BIO_new(BIO_s_mem())) || !PEM_write_bio_X509(b, ca->cert))
		goto fail;
	char *data;
	long n = BIO_get_mem_data(b, &data);
	if (n <= 0 || !(ca->pem = malloc((size_t)n + 1)))
		goto fail;
	memcpy(ca->pem, data, (size_t)n);
	ca->pem[n] = '\0';
	ca->pem_len = (size_t)n;
	BIO_free(b);
	*out = ca;
	return 0;
fail:
	BIO_free(b);
	mitm_ca_unref(ca);
	return error_set(err, -EIO, "secrets: cannot make the sandbox's interception CA (OpenSSL)");
}

void mitm_ca_ref(struct mitm_ca *ca)
{
	atomic_fetch_add(&ca->refs, 1);
}

void mitm_ca_unref(struct mitm_ca *ca)
{
	if (!ca || atomic_fetch_sub(&ca->refs, 1) != 1)
		return;
	for (unsigned i = 0; i < LEAF_CACHE; i++)
		SSL_CTX_free(ca->leaves[i].ctx);
	EVP_PKEY_free(ca->key); /* OpenSSL cleanses a key's memory as it frees it */
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	free(ca->pem);
	pthread_mutex_destroy(&ca->lock);
	free(ca);
}

const char *mitm_ca_pem(const struct mitm_ca *ca, size_t *len)
{
	*len = ca->pem_len;
	return ca->pem;
}

/* The program must speak HTTP/1.1 to the interceptor (it reads one request
 * head at a time): h2 alone is refused, no ALPN at all is HTTP/1.1. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	for (unsigned i = 0; i < inlen;) {
		unsigned l = in[i];
		if (i + 1 + l > inlen)
			break;
		if (l == 8 && !memcmp(in + i + 1, "http/1.1", 8)) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + l;
	}
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static SSL_CTX *leaf_ctx(struct mitm_ca *ca, const char *host)
{
	/* A DNS name only: the text goes into OpenSSL's extension syntax,
	 * where a ',' or ':' would add names or options of the program's
	 * choosing (the parsers already refuse them; this holds whatever
	 * calls it). */
	if (!*host || strlen(host) > 253 || strspn(host, "abcdefghijklmnopqrstuvwxyz"
							  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
							  strlen(host))
		return NULL;
	char san[300];
	snprintf(san, sizeof san, "DNS:%s", host);
	X509 *leaf = make_cert(ca->leaf_key, host, ca->cert, ca->key, san);
	SSL_CTX *ctx = leaf ? SSL_CTX_new(TLS_server_method()) : NULL;
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    !SSL_CTX_use_certificate(ctx, leaf) || !SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) ||
	    !SSL_CTX_add1_chain_cert(ctx, ca->cert)) {
		SSL_CTX_free(ctx);
		ctx = NULL;
	} else {
		SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
		/* No tickets or resumption: each connection is checked whole. */
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	}
	X509_free(leaf);
	return ctx;
}

SSL_CTX *mitm_ca_server_ctx(struct mitm_ca *ca, const char *host)
{
	pthread_mutex_lock(&ca->lock);
	SSL_CTX *ctx = NULL;
	for (unsigned i = 0; i < LEAF_CACHE && !ctx; i++)
		if (ca->leaves[i].ctx && !strcasecmp(ca->leaves[i].host, host))
			ctx = ca->leaves[i].ctx;
	if (!ctx && (ctx = leaf_ctx(ca, host))) {
		struct leaf *l = &ca->leaves[ca->next++ % LEAF_CACHE];
		SSL_CTX_free(l->ctx);
		l->ctx = ctx;
		snprintf(l->host, sizeof l->host, "%s", host);
	}
	if (ctx)
		SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&ca->lock);
	return ctx;
}
