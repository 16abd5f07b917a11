/* SPDX-License-Identifier: Apache-2.0 */
/* Inside of the ufm module: the HTTPS request client.c makes. */
#ifndef RDMAK_UFM_INTERNAL_H
#define RDMAK_UFM_INTERNAL_H

#include <stddef.h>

struct https_target {
	const char *host;    /* name or IP literal, as in the URL (no brackets) */
	const char *port;    /* "443" when the URL names none */
	const char *ca_file; /* NULL: the system's trust store */
	unsigned timeout_ms; /* the whole request: connect, handshake, send, receive */
};

struct https_answer {
	int status; /* HTTP status */
	char *body; /* NUL-terminated, malloc'd */
	size_t len;
};

/* One request over a new connection (Connection: close). The server's certificate must chain to
 * t->ca_file and name t->host; nothing can turn that off. headers: extra "Name: value\r\n"
 * lines. 0 with *ret filled (any status), else -ETIMEDOUT, -ECONNREFUSED and other connect
 * errors, -EPROTO (TLS or HTTP), -ENOENT (GnuTLS cannot be loaded), with a sentence in err. */
int ufm_https_request(const struct https_target *t, const char *method, const char *path,
		      const char *headers, const char *body, size_t body_len,
		      struct https_answer *ret, char *err, size_t errlen);
void ufm_https_answer_clear(struct https_answer *a);

#endif
