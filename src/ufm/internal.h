/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of the ufm module: the HTTPS request client.c makes. */
#ifndef RDMAK_UFM_INTERNAL_H
#define RDMAK_UFM_INTERNAL_H

#include <stddef.h>

struct https_target {
	const char *host;   /* name or IP literal, as in the URL (no brackets) */
	const char *port;   /* "443" when the URL names none */
	const char *ca_pem; /* the PEM bundle the certificate must chain to; NULL: the system's */
	size_t ca_len;
	const char *ca_name; /* where ca_pem came from, for messages */
	unsigned timeout_ms; /* the whole request: connect, handshake, send, receive */
};

struct https_answer {
	int status; /* HTTP status */
	char *body; /* NUL-terminated, malloc'd */
	size_t len;
};

/* One request over a new connection (Connection: close). The server's certificate must chain to
 * t->ca_pem and name t->host; nothing can turn that off. headers: extra "Name: value\r\n"
 * lines. 0 with *ret filled (any status), else -ETIMEDOUT, -ECONNREFUSED and other connect
 * errors, -EPROTO (TLS or HTTP), -ENOENT (GnuTLS cannot be loaded), with a sentence in err. */
int ufm_https_request(const struct https_target *t, const char *method, const char *path,
		      const char *headers, const char *body, size_t body_len,
		      struct https_answer *ret, char *err, size_t errlen);
void ufm_https_answer_clear(struct https_answer *a);

/* The answer's bytes as they came (buf[len] is a NUL the caller put there; the head and body
 * are read in place): the status line, Content-Length or chunked Transfer-Encoding, at most max
 * bytes of body. 0 with *ret filled (its body a copy), else -EPROTO with a sentence in err
 * (cut short, malformed, not HTTP, larger than max) or -ENOMEM. For the fuzzer as for the
 * request. */
int ufm_https_parse_answer(char *buf, size_t len, size_t max, struct https_answer *ret, char *err,
			   size_t errlen);

/* UFM's answer to GET /resources/pkeys/<pkey>?guids_data=true: 1 and its members (malloc'd,
 * only the entries that name a GUID), 0 for the empty object some versions give for a pkey
 * they do not know, -EPROTO when it has no "guids" list, -ENOMEM. */
struct ufm_member;
int ufm_members_parse(const char *body, size_t len, struct ufm_member **ret, size_t *ret_n);

#endif
