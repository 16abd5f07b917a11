/* SPDX-License-Identifier: Apache-2.0 */
/* One certificate + key pair as GnuTLS serves it. Internal to src/http. */
#ifndef RDMAK_HTTP_TLS_H
#define RDMAK_HTTP_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLS_CHAIN_MAX 16

struct tls_pair {
	gnutls_pcert_st pcerts[TLS_CHAIN_MAX];
	unsigned n_pcerts;
	gnutls_privkey_t key;
	char *cert_pem, *key_pem; /* the bytes loaded, to tell an unchanged file from a new one */
	size_t cert_len, key_len;
	char summary[512]; /* "CN=..., DNS names ..., expires ..." */
	bool expired;
	/* owned by the server: the generation list */
	uint64_t gen;
	unsigned long refs; /* connections that started while this pair was the current one */
	struct tls_pair *newer;
};

/* Parse PEM buffers. The key must be the certificate's (the first of the chain): a mismatch is
 * what a half-finished rotation looks like (new certificate, old key), so it is refused.
 * -EINVAL with a sentence in err. */
int http_tls_pair_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		       struct tls_pair **ret, char *err, size_t errlen);
bool http_tls_pair_same_bytes(const struct tls_pair *p, const char *cert_pem, size_t cert_len,
			      const char *key_pem, size_t key_len);
void http_tls_pair_free(struct tls_pair *p);

#endif
