/* SPDX-License-Identifier: Apache-2.0 */
/* Loading and checking a key pair for the server. */
#include "http/tls.h"

#include <errno.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/dl.h"
#include "util/cleanup.h"
#include "util/strutil.h"

void http_tls_pair_free(struct tls_pair *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->n_pcerts; i++)
		gnutls_pcert_deinit(&p->pcerts[i]);
	if (p->key)
		gnutls_privkey_deinit(p->key);
	free(p->cert_pem);
	free(p->key_pem);
	free(p);
}

bool http_tls_pair_same_bytes(const struct tls_pair *p, const char *cert_pem, size_t cert_len,
			      const char *key_pem, size_t key_len)
{
	return p->cert_len == cert_len && p->key_len == key_len &&
	       memcmp(p->cert_pem, cert_pem, cert_len) == 0 &&
	       memcmp(p->key_pem, key_pem, key_len) == 0;
}

static int pubkey_der(gnutls_pubkey_t pk, gnutls_datum_t *out)
{
	return gnutls_pubkey_export2(pk, GNUTLS_X509_FMT_DER, out) < 0 ? -EINVAL : 0;
}

/* The key belongs to the certificate: their public keys are the same bytes. */
static int key_matches(struct tls_pair *p)
{
	gnutls_pubkey_t from_key = NULL;
	gnutls_datum_t a = { 0 }, b = { 0 };
	int r = -EINVAL;

	if (gnutls_pubkey_init(&from_key) < 0)
		return -ENOMEM;
	if (gnutls_pubkey_import_privkey(from_key, p->key, 0, 0) < 0)
		goto out;
	if (pubkey_der(from_key, &a) < 0 || pubkey_der(p->pcerts[0].pubkey, &b) < 0)
		goto out;
	r = a.size == b.size && memcmp(a.data, b.data, a.size) == 0 ? 0 : -EKEYREJECTED;
out:
	gnutls_free(a.data);
	gnutls_free(b.data);
	gnutls_pubkey_deinit(from_key);
	return r;
}

static void describe(struct tls_pair *p)
{
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t dn = { 0 };
	char names[256] = "", when[32] = "?";
	size_t used = 0;
	time_t exp;

	if (gnutls_x509_crt_init(&crt) < 0)
		return;
	if (gnutls_x509_crt_import(crt, &p->pcerts[0].cert, GNUTLS_X509_FMT_DER) < 0) {
		gnutls_x509_crt_deinit(crt);
		return;
	}
	gnutls_x509_crt_get_dn3(crt, &dn, 0);
	for (unsigned i = 0; i < 8; i++) {
		char san[256];
		size_t len = sizeof(san) - 1;
		int t = gnutls_x509_crt_get_subject_alt_name(crt, i, san, &len, NULL);
		int n;

		if (t < 0)
			break;
		if (t != GNUTLS_SAN_DNSNAME)
			continue;
		san[len] = '\0';
		n = snprintf(names + used, sizeof(names) - used, "%s%s", used ? " " : "", san);
		if (n < 0 || (size_t)n >= sizeof(names) - used)
			break;
		used += (size_t)n;
	}
	exp = gnutls_x509_crt_get_expiration_time(crt);
	if (exp != (time_t)-1)
		str_utc(exp, when);
	p->expired = exp != (time_t)-1 && exp < time(NULL);
	snprintf(p->summary, sizeof(p->summary), "%s%s%s, %s %s, %u certificate%s in the chain",
		 dn.data ? (const char *)dn.data : "(no subject)", used ? ", DNS " : "", names,
		 p->expired ? "EXPIRED" : "expires", when, p->n_pcerts,
		 p->n_pcerts == 1 ? "" : "s");
	gnutls_free(dn.data);
	gnutls_x509_crt_deinit(crt);
}

int http_tls_pair_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		       struct tls_pair **ret, char *err, size_t errlen)
{
	struct tls_pair *p;
	gnutls_datum_t cd = { (unsigned char *)cert_pem, (unsigned)cert_len };
	gnutls_datum_t kd = { (unsigned char *)key_pem, (unsigned)key_len };
	unsigned n = TLS_CHAIN_MAX;
	int g, r;

	if ((r = http_dl_load(err, errlen)) < 0)
		return r;
	if (cert_len > 1u << 20 || key_len > 1u << 20) {
		snprintf(err, errlen, "certificate or key file larger than 1 MiB");
		return -EFBIG;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	g = gnutls_pcert_list_import_x509_raw(p->pcerts, &n, &cd, GNUTLS_X509_FMT_PEM,
					      GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
	if (g < 0 || n == 0) {
		snprintf(err, errlen, "certificate: %s",
			 g < 0 ? gnutls_strerror(g) : "no PEM certificate in the file");
		r = -EINVAL;
		goto fail;
	}
	p->n_pcerts = n;
	if ((g = gnutls_privkey_init(&p->key)) < 0 ||
	    (g = gnutls_privkey_import_x509_raw(p->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		snprintf(err, errlen, "key: %s", gnutls_strerror(g));
		r = -EINVAL;
		goto fail;
	}
	r = key_matches(p);
	if (r < 0) {
		snprintf(err, errlen,
			 "the key is not the certificate's key (a rotation half done?)");
		goto fail;
	}
	p->cert_pem = malloc(cert_len + 1);
	p->key_pem = malloc(key_len + 1);
	if (!p->cert_pem || !p->key_pem) {
		r = -ENOMEM;
		goto fail;
	}
	memcpy(p->cert_pem, cert_pem, cert_len);
	memcpy(p->key_pem, key_pem, key_len);
	p->cert_len = cert_len;
	p->key_len = key_len;
	describe(p);
	*ret = p;
	return 0;
fail:
	http_tls_pair_free(p);
	return r;
}
