/* SPDX-License-Identifier: Apache-2.0 */
/* The one HTTPS client: a request with a deadline over a new connection, or a long answer read
 * as it comes (a Kubernetes watch), over GnuTLS loaded on first use (src/http/dl.c). The
 * fabric manager's client (src/ufm) and the API server's (src/k8s/client.c) use it. The
 * server's certificate is always verified: there is no option to skip it. */
#ifndef RDMAK_HTTPC_H
#define RDMAK_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

struct httpc_target {
	const char *host;   /* name or IP literal, as in the URL (no brackets) */
	const char *port;   /* "443" when the URL names none */
	const char *ca_pem; /* the PEM bundle the certificate must chain to; NULL: the system's */
	size_t ca_len;
	const char *ca_name; /* where ca_pem came from, for messages */
	/* A client certificate and its key (PEM), or NULL: a kubeconfig's client-certificate */
	const char *cert_pem, *key_pem;
	size_t cert_len, key_len;
	unsigned timeout_ms; /* httpc_request: the whole request; httpc_stream: connecting, the
			      * handshake, sending and the answer's head */
};

struct httpc_answer {
	int status; /* HTTP status */
	char *body; /* NUL-terminated, malloc'd */
	size_t len;
};

/* One request over a new connection (Connection: close). The server's certificate must chain to
 * t->ca_pem and name t->host. headers: extra "Name: value\r\n" lines; a body is sent as
 * application/json. 0 with *ret filled (any status), else -ETIMEDOUT, -ECONNREFUSED and other
 * connect errors, -EPROTO (TLS or HTTP), -ENOENT (GnuTLS cannot be loaded), with a sentence in
 * err. */
int httpc_request(const struct httpc_target *t, const char *method, const char *path,
		  const char *headers, const char *body, size_t body_len, struct httpc_answer *ret,
		  char *err, size_t errlen);
void httpc_answer_clear(struct httpc_answer *a);

/* The answer's bytes as they came (buf[len] is a NUL the caller put there; the head and body
 * are read in place): the status line, Content-Length or chunked Transfer-Encoding, at most max
 * bytes of body. 0 with *ret filled (its body a copy), else -EPROTO with a sentence in err
 * (cut short, malformed, not HTTP, larger than max) or -ENOMEM. For the fuzzer as for the
 * request. */
int httpc_parse_answer(char *buf, size_t len, size_t max, struct httpc_answer *ret, char *err,
		       size_t errlen);

/* A long answer (a watch): head(ud, status) once the head is in, then data(ud, bytes, n) for
 * the body's bytes as they come, chunked encoding taken off. A callback's negative return
 * stops the read and is returned. Returns 0 when the server ended the answer, -ECANCELED when
 * stop_fd (>= 0) became readable, -ETIMEDOUT when nothing came for idle_ms (0: no limit) or
 * the head not within t->timeout_ms, else as httpc_request, with a sentence in err. */
struct httpc_stream_ops {
	int (*head)(void *ud, int status);
	int (*data)(void *ud, const char *buf, size_t len);
};
int httpc_stream(const struct httpc_target *t, const char *method, const char *path,
		 const char *headers, int stop_fd, unsigned idle_ms,
		 const struct httpc_stream_ops *ops, void *ud, char *err, size_t errlen);

/* How httpc_stream takes an answer apart, bytes in as they came (for the fuzzer as for the
 * stream): feed returns 1 once the answer's body ended (its last chunk, or its Content-Length),
 * 0 for more, or a callback's -errno, or -EPROTO with a sentence in err (not HTTP, a head past
 * 16 KiB, a malformed chunk). complete: whether the bytes so far are a whole answer if the
 * connection ends now. */
struct httpc_reader;
int httpc_reader_new(struct httpc_reader **ret);
void httpc_reader_free(struct httpc_reader *rd);
int httpc_reader_feed(struct httpc_reader *rd, const char *buf, size_t len,
		      const struct httpc_stream_ops *ops, void *ud, char *err, size_t errlen);
bool httpc_reader_complete(const struct httpc_reader *rd);

#endif
