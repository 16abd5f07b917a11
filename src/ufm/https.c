/* SPDX-License-Identifier: Apache-2.0 */
/* One HTTPS request with a deadline, over GnuTLS loaded on first use through src/http/dl.c.
 * rdmak-cni is exec'd for every CNI command and links no TLS library (Makefile, POD_LIBS;
 * docs/cni.md): a network with a fabric manager pays GnuTLS's loading, the others nothing. The
 * certificate is always verified (gnutls_session_set_verify_cert): there is no
 * option to skip it, and a failure says what GnuTLS found wrong. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <gnutls/gnutls.h>

#include "http/dl.h"
#include "ufm/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* an answer larger than this is not a pkey's GUID list */
#define HTTPS_ANSWER_MAX (16u << 20)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(long long deadline)
{
	long long l = deadline - now_ms();

	return l > 0 ? (int)l : 0;
}

/* A TCP connection to host:port within the deadline, trying each address getaddrinfo gives. */
static int tcp_connect(const struct https_target *t, long long deadline, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV },
			*ai = NULL;
	int r, last = -ECONNREFUSED;

	r = getaddrinfo(t->host, t->port, &hints, &ai);
	if (r != 0) {
		snprintf(err, errlen, "%s: %s", t->host, gai_strerror(r));
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	}
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				a->ai_protocol);
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		socklen_t sl = sizeof(r);

		if (fd < 0) {
			last = -errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			last = -errno;
			close(fd);
			continue;
		}
		r = poll(&pfd, 1, left_ms(deadline));
		if (r == 0) {
			last = -ETIMEDOUT;
			close(fd);
			break;
		}
		if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &sl) < 0 || r != 0) {
			last = r > 0 ? -r : -errno;
			close(fd);
			continue;
		}
		/* blocking from here: GnuTLS's timeouts bound the handshake and each receive */
		(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		/* Nagle would hold the request back until the server ACKs the handshake's last
		 * flight, and servers delay that ACK (40 ms on Linux): each call took 40 ms more */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		freeaddrinfo(ai);
		return fd;
	}
	freeaddrinfo(ai);
	snprintf(err, errlen, "connecting to %s port %s: %s", t->host, t->port,
		 last == -ETIMEDOUT ? "timed out" : strerror(-last));
	return last;
}

static bool is_ip_literal(const char *h)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
}

/* GnuTLS's error as a sentence; a certificate that did not verify says why. */
static int tls_fail(gnutls_session_t s, int e, const char *what, char *err, size_t errlen)
{
	if (e == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t out = { 0 };
		unsigned status = gnutls_session_get_verify_cert_status(s);

		if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out,
								 0) == 0) {
			snprintf(err, errlen, "%s: the server's certificate did not verify: %s",
				 what, (char *)out.data);
			gnutls_free(out.data);
			return -EPROTO;
		}
	}
	if (e == GNUTLS_E_TIMEDOUT || e == GNUTLS_E_AGAIN) {
		snprintf(err, errlen, "%s: timed out", what);
		return -ETIMEDOUT;
	}
	snprintf(err, errlen, "%s: %s", what, gnutls_strerror(e));
	return e == GNUTLS_E_PREMATURE_TERMINATION || e == GNUTLS_E_PUSH_ERROR ||
			       e == GNUTLS_E_PULL_ERROR
		       ? -ECONNRESET
		       : -EPROTO;
}

static int send_all(gnutls_session_t s, const char *buf, size_t len, char *err, size_t errlen)
{
	while (len > 0) {
		ssize_t n = gnutls_record_send(s, buf, len);
		if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_AGAIN)
			continue;
		if (n < 0)
			return tls_fail(s, (int)n, "sending the request", err, errlen);
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A chunk's size line: hex digits (at most 8: no chunk of ours is 4 GiB), an extension after ';'
 * ignored, CRLF. The size, and *next past the CRLF; -1 when malformed or cut short. */
static long long chunk_size(const char *b, size_t len, size_t *next)
{
	unsigned long long n = 0;
	size_t i = 0;
	const char *eol;

	for (; i < len && i < 9 && isxdigit((unsigned char)b[i]); i++)
		n = n << 4 | (unsigned)(isdigit((unsigned char)b[i]) ? b[i] - '0'
								     : (b[i] | 0x20) - 'a' + 10);
	if (i == 0 || i > 8 || (i < len && b[i] != ';' && b[i] != '\r'))
		return -1;
	eol = memmem(b + i, len - i, "\r\n", 2);
	if (!eol)
		return -1;
	*next = (size_t)(eol - b) + 2;
	return (long long)n;
}

/* The body of a "Transfer-Encoding: chunked" answer, decoded in place (the decoded bytes never
 * overtake the ones still to read). Trailers after the last chunk are ignored. */
static int dechunk(char *b, size_t len, size_t max, size_t *ret_len, char *err, size_t errlen)
{
	size_t in = 0, out = 0;

	for (;;) {
		size_t next = 0;
		long long n = chunk_size(b + in, len - in, &next);

		if (n < 0) {
			snprintf(err, errlen,
				 "the answer's chunked body is cut short or malformed");
			return -EPROTO;
		}
		in += next;
		if (n == 0)
			break;
		if ((size_t)n > max - out) {
			snprintf(err, errlen, "the answer is larger than %zu bytes", max);
			return -EPROTO;
		}
		if ((size_t)n > len - in || len - in - (size_t)n < 2 ||
		    memcmp(b + in + n, "\r\n", 2)) {
			snprintf(err, errlen,
				 "the answer's chunked body is cut short or malformed");
			return -EPROTO;
		}
		memmove(b + out, b + in, (size_t)n);
		out += (size_t)n;
		in += (size_t)n + 2;
	}
	*ret_len = out;
	return 0;
}

static const char *header_value(const char *head, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n"))
		if (!strncasecmp(p + 2, name, nl) && p[2 + nl] == ':')
			return p + 3 + nl + strspn(p + 3 + nl, " \t");
	return NULL;
}

int ufm_https_parse_answer(char *buf, size_t len, size_t max, struct https_answer *ret, char *err,
			   size_t errlen)
{
	char *sep = memmem(buf, len, "\r\n\r\n", 4), *body, *copy;
	const char *te, *cl;
	size_t blen;
	int status = 0, r;

	if (!sep || len < 12 || memcmp(buf, "HTTP/1.", 7) || (buf[7] != '0' && buf[7] != '1') ||
	    buf[8] != ' ' || !isdigit((unsigned char)buf[9]) || !isdigit((unsigned char)buf[10]) ||
	    !isdigit((unsigned char)buf[11]) || (len > 12 && buf[12] != ' ' && buf[12] != '\r')) {
		snprintf(err, errlen, "the answer is not HTTP/1.x");
		return -EPROTO;
	}
	status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (status < 100) {
		snprintf(err, errlen, "the answer is not HTTP/1.x (status %d)", status);
		return -EPROTO;
	}
	*sep = '\0';
	body = sep + 4;
	blen = len - (size_t)(body - buf);
	te = header_value(buf, "Transfer-Encoding");
	cl = header_value(buf, "Content-Length");
	if (te && !strncasecmp(te, "chunked", 7)) {
		if ((r = dechunk(body, blen, max, &blen, err, errlen)) < 0)
			return r;
	} else if (cl) {
		size_t digits = strspn(cl, "0123456789");
		unsigned long long n;

		if (digits == 0 || digits > 12 || (cl[digits] && !strchr(" \t\r", cl[digits])) ||
		    str_to_u64(strndupa(cl, digits), 10, &n) < 0) {
			snprintf(err, errlen, "the answer's Content-Length is not a number");
			return -EPROTO;
		}
		if (n > max) {
			snprintf(err, errlen, "the answer is larger than %zu bytes (%llu)", max, n);
			return -EPROTO;
		}
		if (n > blen) {
			snprintf(err, errlen, "the answer is cut short (%zu of %llu bytes)", blen,
				 n);
			return -EPROTO;
		}
		blen = (size_t)n;
	} else if (blen > max) {
		snprintf(err, errlen, "the answer is larger than %zu bytes", max);
		return -EPROTO;
	}
	/* the body may hold NUL bytes: its length is len, never strlen */
	if (!(copy = malloc(blen + 1)))
		return -ENOMEM;
	memcpy(copy, body, blen);
	copy[blen] = '\0';
	ret->status = status;
	ret->body = copy;
	ret->len = blen;
	return 0;
}

int ufm_https_request(const struct https_target *t, const char *method, const char *path,
		      const char *headers, const char *body, size_t body_len,
		      struct https_answer *ret, char *err, size_t errlen)
{
	long long deadline = now_ms() + t->timeout_ms;
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_session_t s = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *req = NULL, *buf = NULL;
	size_t len = 0, cap = 0;
	int e, r, n_req;

	if ((r = http_dl_load_gnutls(err, errlen)) < 0)
		return r;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return -ENOMEM;
	e = t->ca_pem ? gnutls_certificate_set_x509_trust_mem(
				cred,
				&(gnutls_datum_t){ .data = (unsigned char *)t->ca_pem,
						   .size = (unsigned)t->ca_len },
				GNUTLS_X509_FMT_PEM)
		      : gnutls_certificate_set_x509_system_trust(cred);
	if (e <= 0) {
		snprintf(err, errlen, "CA %s: %s", t->ca_pem ? t->ca_name : "(the system's)",
			 e == 0 ? "no certificate in it" : gnutls_strerror(e));
		r = -EINVAL;
		goto out;
	}
	if ((fd = tcp_connect(t, deadline, err, errlen)) < 0) {
		r = fd;
		goto out;
	}
	/* GNUTLS_NO_SIGNAL: a UFM that resets the connection while the request goes out must fail the
	 * call (EPIPE), not kill rdmak-cni with SIGPIPE */
	if (gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL) < 0 ||
	    gnutls_set_default_priority(s) < 0 ||
	    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred) < 0) {
		r = -ENOMEM;
		goto out;
	}
	/* SNI carries names only (RFC 6066); the certificate check takes both */
	if (!is_ip_literal(t->host))
		(void)gnutls_server_name_set(s, GNUTLS_NAME_DNS, t->host, strlen(t->host));
	gnutls_session_set_verify_cert(s, t->host, 0);
	gnutls_transport_set_int2(s, fd, fd);
	gnutls_handshake_set_timeout(s, (unsigned)left_ms(deadline) + 1);
	do
		e = gnutls_handshake(s);
	while (e < 0 && !gnutls_error_is_fatal(e) && left_ms(deadline) > 0);
	if (e < 0) {
		r = tls_fail(s, e, "TLS handshake", err, errlen);
		goto out;
	}
	if ((n_req = asprintf(
		     &req,
		     "%s %s HTTP/1.1\r\nHost: %s%s%s\r\nAccept: application/json\r\nConnection: close\r\n%s"
		     "Content-Length: %zu\r\n%s\r\n",
		     method, path, t->host, strcmp(t->port, "443") ? ":" : "",
		     strcmp(t->port, "443") ? t->port : "", headers ? headers : "", body_len,
		     body ? "Content-Type: application/json\r\n" : "")) < 0) {
		r = -ENOMEM;
		goto out;
	}
	/* the head and the body in one record, so in one segment */
	if (body && body_len > 0) {
		char *nr = realloc(req, (size_t)n_req + body_len);

		if (!nr) {
			r = -ENOMEM;
			goto out;
		}
		req = nr;
		memcpy(req + n_req, body, body_len);
	}
	if ((r = send_all(s, req, (size_t)n_req + (body ? body_len : 0), err, errlen)) < 0)
		goto out;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *nb;
			if (cap >= HTTPS_ANSWER_MAX) {
				snprintf(err, errlen, "the answer is larger than %u bytes",
					 HTTPS_ANSWER_MAX);
				r = -EPROTO;
				goto out;
			}
			cap = cap ? cap * 2 : 16384;
			if (!(nb = realloc(buf, cap + 1))) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		if (left_ms(deadline) == 0) {
			snprintf(err, errlen, "waiting for the answer: timed out");
			r = -ETIMEDOUT;
			goto out;
		}
		gnutls_record_set_timeout(s, (unsigned)left_ms(deadline));
		n = gnutls_record_recv(s, buf + len, cap - len);
		/* AGAIN also comes after a TLS 1.3 post-handshake message (a session ticket) was
		 * consumed: try again, the deadline above still bounds it */
		if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_AGAIN)
			continue;
		/* a server that closes without close_notify after Connection: close is common */
		if (n == 0 || (n == GNUTLS_E_PREMATURE_TERMINATION && len > 0))
			break;
		if (n < 0) {
			r = tls_fail(s, (int)n, "receiving the answer", err, errlen);
			goto out;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	r = ufm_https_parse_answer(buf, len, HTTPS_ANSWER_MAX, ret, err, errlen);
out:
	if (s)
		gnutls_deinit(s);
	if (cred)
		gnutls_certificate_free_credentials(cred);
	return r;
}

void ufm_https_answer_clear(struct https_answer *a)
{
	free(a->body);
	*a = (struct https_answer){ 0 };
}
