/* SPDX-License-Identifier: Apache-2.0 */
/* HTTPS requests with a deadline, over GnuTLS loaded on first use through src/http/dl.c.
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
#include "httpc/httpc.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* an answer larger than this is none that rdmak asks for: a pkey's GUID list, a claim */
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
static int tcp_connect(const struct httpc_target *t, long long deadline, char *err, size_t errlen)
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

int httpc_parse_answer(char *buf, size_t len, size_t max, struct httpc_answer *ret, char *err,
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

/* A TLS session to t, the request sent: what both ways of reading an answer start with. */
struct conn {
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	int fd;
};

static void conn_close(struct conn *c)
{
	if (c->s)
		gnutls_deinit(c->s);
	if (c->cred)
		gnutls_certificate_free_credentials(c->cred);
	if (c->fd >= 0)
		close(c->fd);
	*c = (struct conn){ .fd = -1 };
}

static int credentials(const struct httpc_target *t, gnutls_certificate_credentials_t cred,
		       char *err, size_t errlen)
{
	int e = t->ca_pem ? gnutls_certificate_set_x509_trust_mem(
				    cred,
				    &(gnutls_datum_t){ .data = (unsigned char *)t->ca_pem,
						       .size = (unsigned)t->ca_len },
				    GNUTLS_X509_FMT_PEM)
			  : gnutls_certificate_set_x509_system_trust(cred);

	if (e <= 0) {
		snprintf(err, errlen, "CA %s: %s", t->ca_pem ? t->ca_name : "(the system's)",
			 e == 0 ? "no certificate in it" : gnutls_strerror(e));
		return -EINVAL;
	}
	if (!t->cert_pem)
		return 0;
	e = gnutls_certificate_set_x509_key_mem(
		cred,
		&(gnutls_datum_t){ .data = (unsigned char *)t->cert_pem,
				   .size = (unsigned)t->cert_len },
		&(gnutls_datum_t){ .data = (unsigned char *)t->key_pem,
				   .size = (unsigned)t->key_len },
		GNUTLS_X509_FMT_PEM);
	if (e < 0) {
		snprintf(err, errlen, "client certificate and key: %s", gnutls_strerror(e));
		return -EINVAL;
	}
	return 0;
}

static int conn_open(struct conn *c, const struct httpc_target *t, long long deadline,
		     const char *method, const char *path, const char *headers, const char *body,
		     size_t body_len, char *err, size_t errlen)
{
	_cleanup_free_ char *req = NULL;
	int e, r, n_req;

	*c = (struct conn){ .fd = -1 };
	if ((r = http_dl_load_gnutls(err, errlen)) < 0)
		return r;
	if (gnutls_certificate_allocate_credentials(&c->cred) < 0)
		return -ENOMEM;
	if ((r = credentials(t, c->cred, err, errlen)) < 0)
		return r;
	if ((c->fd = tcp_connect(t, deadline, err, errlen)) < 0)
		return c->fd;
	/* GNUTLS_NO_SIGNAL: a server that resets the connection while the request goes out must
	 * fail the call (EPIPE), not kill rdmak-cni with SIGPIPE */
	if (gnutls_init(&c->s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL) < 0 ||
	    gnutls_set_default_priority(c->s) < 0 ||
	    gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, c->cred) < 0)
		return -ENOMEM;
	/* SNI carries names only (RFC 6066); the certificate check takes both */
	if (!is_ip_literal(t->host))
		(void)gnutls_server_name_set(c->s, GNUTLS_NAME_DNS, t->host, strlen(t->host));
	gnutls_session_set_verify_cert(c->s, t->host, 0);
	gnutls_transport_set_int2(c->s, c->fd, c->fd);
	gnutls_handshake_set_timeout(c->s, (unsigned)left_ms(deadline) + 1);
	do
		e = gnutls_handshake(c->s);
	while (e < 0 && !gnutls_error_is_fatal(e) && left_ms(deadline) > 0);
	if (e < 0)
		return tls_fail(c->s, e, "TLS handshake", err, errlen);
	if ((n_req = asprintf(
		     &req,
		     "%s %s HTTP/1.1\r\nHost: %s%s%s\r\nAccept: application/json\r\nConnection: close\r\n%s"
		     "Content-Length: %zu\r\n%s\r\n",
		     method, path, t->host, strcmp(t->port, "443") ? ":" : "",
		     strcmp(t->port, "443") ? t->port : "", headers ? headers : "", body_len,
		     body ? "Content-Type: application/json\r\n" : "")) < 0)
		return -ENOMEM;
	/* the head and the body in one record, so in one segment */
	if (body && body_len > 0) {
		char *nr = realloc(req, (size_t)n_req + body_len);

		if (!nr)
			return -ENOMEM;
		req = nr;
		memcpy(req + n_req, body, body_len);
	}
	return send_all(c->s, req, (size_t)n_req + (body ? body_len : 0), err, errlen);
}

/* One record into buf, waiting at most ms (and for stop_fd, when >= 0): its length, 0 at the
 * end, -ECANCELED, -ETIMEDOUT or a TLS failure. */
static ssize_t recv_some(struct conn *c, char *buf, size_t n, int ms, int stop_fd, bool any,
			 char *err, size_t errlen)
{
	for (;;) {
		ssize_t got;

		/* a record begun is waited for as long as the caller waits for the next one */
		gnutls_record_set_timeout(c->s, ms < 0 ? GNUTLS_INDEFINITE_TIMEOUT : (unsigned)ms);
		if (stop_fd >= 0 && gnutls_record_check_pending(c->s) == 0) {
			struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
					       { .fd = stop_fd, .events = POLLIN } };
			int r = poll(p, 2, ms);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (p[1].revents)
				return -ECANCELED;
			if (r == 0) {
				snprintf(err, errlen, "waiting for the answer: timed out");
				return -ETIMEDOUT;
			}
		} else if (ms == 0) {
			snprintf(err, errlen, "waiting for the answer: timed out");
			return -ETIMEDOUT;
		}
		got = gnutls_record_recv(c->s, buf, n);
		/* AGAIN also comes after a TLS 1.3 post-handshake message (a session ticket) was
		 * consumed: try again, the caller's deadline still bounds it */
		if (got == GNUTLS_E_INTERRUPTED || got == GNUTLS_E_AGAIN)
			continue;
		/* a server that closes without close_notify after Connection: close is common */
		if (got == 0 || (got == GNUTLS_E_PREMATURE_TERMINATION && any))
			return 0;
		if (got < 0)
			return tls_fail(c->s, (int)got, "receiving the answer", err, errlen);
		return got;
	}
}

int httpc_request(const struct httpc_target *t, const char *method, const char *path,
		  const char *headers, const char *body, size_t body_len, struct httpc_answer *ret,
		  char *err, size_t errlen)
{
	long long deadline = now_ms() + t->timeout_ms;
	struct conn c;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	int r;

	r = conn_open(&c, t, deadline, method, path, headers, body, body_len, err, errlen);
	while (r >= 0) {
		ssize_t n;

		if (cap - len < 4096) {
			char *nb;
			if (cap >= HTTPS_ANSWER_MAX) {
				snprintf(err, errlen, "the answer is larger than %u bytes",
					 HTTPS_ANSWER_MAX);
				r = -EPROTO;
				break;
			}
			cap = cap ? cap * 2 : 16384;
			if (!(nb = realloc(buf, cap + 1))) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = recv_some(&c, buf + len, cap - len, left_ms(deadline), -1, len > 0, err,
			      errlen);
		if (n < 0)
			r = (int)n;
		else if (n == 0)
			break;
		len += (size_t)n;
	}
	if (r >= 0) {
		buf[len] = '\0';
		r = httpc_parse_answer(buf, len, HTTPS_ANSWER_MAX, ret, err, errlen);
	}
	conn_close(&c);
	return r;
}

/* ---- a long answer ------------------------------------------------------------------------ */

/* The body of a chunked answer taken apart as it comes: where we are in the current chunk. */
struct unchunk {
	enum { U_SIZE, U_DATA, U_CRLF, U_TRAILER, U_DONE } st;
	char line[32]; /* the size line so far */
	size_t line_len;
	unsigned long long left; /* of the chunk's data, or of its CRLF */
};

/* Feed n bytes; data goes to ops->data. 1 when the last chunk was seen, 0 for more, <0 error. */
static int unchunk_feed(struct unchunk *u, const char *b, size_t n,
			const struct httpc_stream_ops *ops, void *ud, char *err, size_t errlen)
{
	size_t i = 0;

	while (i < n && u->st != U_DONE) {
		switch (u->st) {
		case U_SIZE:
		case U_TRAILER:
			if (b[i] != '\n') {
				if (u->line_len + 1 < sizeof(u->line))
					u->line[u->line_len++] = b[i];
				else if (u->st == U_SIZE)
					goto bad;
				i++;
				break;
			}
			i++;
			u->line[u->line_len] = '\0';
			if (u->st == U_TRAILER) {
				/* trailer lines, ignored, up to the empty one */
				if (u->line_len == 0 || !strcmp(u->line, "\r"))
					u->st = U_DONE;
				u->line_len = 0;
				break;
			}
			{
				size_t next = 0;
				long long sz;

				u->line[u->line_len++] = '\n';
				sz = chunk_size(u->line, u->line_len, &next);
				u->line_len = 0;
				if (sz < 0)
					goto bad;
				u->left = (unsigned long long)sz;
				u->st = sz ? U_DATA : U_TRAILER;
			}
			break;
		case U_DATA: {
			size_t k = n - i < u->left ? n - i : (size_t)u->left;
			int r = ops->data(ud, b + i, k);

			if (r < 0)
				return r;
			i += k;
			u->left -= k;
			if (!u->left) {
				u->st = U_CRLF;
				u->left = 2;
			}
			break;
		}
		case U_CRLF:
			if (b[i] != (u->left == 2 ? '\r' : '\n'))
				goto bad;
			i++;
			if (--u->left == 0)
				u->st = U_SIZE;
			break;
		case U_DONE: break;
		}
	}
	return u->st == U_DONE;
bad:
	snprintf(err, errlen, "the answer's chunked body is malformed");
	return -EPROTO;
}

/* A long answer taken apart as its bytes come: the head (at most HEAD_MAX bytes), then the body,
 * its chunks taken off or up to its Content-Length. */
#define HEAD_MAX 16384

struct httpc_reader {
	char head[HEAD_MAX + 1];
	size_t head_len;
	bool in_body, chunked, ended;
	long long left; /* Content-Length: the body's bytes still to come; -1 none */
	struct unchunk u;
};

int httpc_reader_new(struct httpc_reader **ret)
{
	struct httpc_reader *rd = calloc(1, sizeof(*rd));

	if (!rd)
		return -ENOMEM;
	rd->left = -1;
	*ret = rd;
	return 0;
}

void httpc_reader_free(struct httpc_reader *rd)
{
	free(rd);
}

bool httpc_reader_complete(const struct httpc_reader *rd)
{
	return rd->ended || (rd->in_body && !rd->chunked && rd->left < 0);
}

/* The head is in: its status and how its body comes. */
static int reader_head(struct httpc_reader *rd, const struct httpc_stream_ops *ops, void *ud,
		       char *err, size_t errlen)
{
	const char *te, *cl;
	int status;

	if (rd->head_len < 12 || memcmp(rd->head, "HTTP/1.", 7) || rd->head[8] != ' ' ||
	    sscanf(rd->head + 9, "%3d", &status) != 1 || status < 100) {
		snprintf(err, errlen, "the answer is not HTTP/1.x");
		return -EPROTO;
	}
	te = header_value(rd->head, "Transfer-Encoding");
	cl = header_value(rd->head, "Content-Length");
	rd->chunked = te && !strncasecmp(te, "chunked", 7);
	if (!rd->chunked && cl) {
		size_t digits = strspn(cl, "0123456789");
		unsigned long long v;

		if (digits == 0 || digits > 12 || str_to_u64(strndupa(cl, digits), 10, &v) < 0) {
			snprintf(err, errlen, "the answer's Content-Length is not a number");
			return -EPROTO;
		}
		rd->left = (long long)v;
	}
	rd->in_body = true;
	rd->ended = !rd->chunked && rd->left == 0;
	return ops->head(ud, status);
}

int httpc_reader_feed(struct httpc_reader *rd, const char *buf, size_t len,
		      const struct httpc_stream_ops *ops, void *ud, char *err, size_t errlen)
{
	int r;

	if (rd->ended)
		return 1;
	if (!rd->in_body) {
		size_t from = rd->head_len > 3 ? rd->head_len - 3 : 0, take;
		char *sep;

		take = len < HEAD_MAX - rd->head_len ? len : HEAD_MAX - rd->head_len;
		memcpy(rd->head + rd->head_len, buf, take);
		rd->head_len += take;
		rd->head[rd->head_len] = '\0';
		sep = memmem(rd->head + from, rd->head_len - from, "\r\n\r\n", 4);
		if (!sep) {
			if (rd->head_len < HEAD_MAX)
				return 0;
			snprintf(err, errlen, "the answer's head is larger than %d bytes",
				 HEAD_MAX);
			return -EPROTO;
		}
		/* what came after the head in this buffer is the body's */
		{
			size_t used = (size_t)(sep + 4 - rd->head) - (rd->head_len - take);

			*sep = '\0';
			rd->head_len = (size_t)(sep - rd->head);
			if ((r = reader_head(rd, ops, ud, err, errlen)) < 0)
				return r;
			buf += used;
			len -= used;
		}
	}
	if (rd->ended || !len)
		return rd->ended;
	if (rd->chunked) {
		r = unchunk_feed(&rd->u, buf, len, ops, ud, err, errlen);
		if (r > 0)
			rd->ended = true;
		return r;
	}
	if (rd->left >= 0 && (long long)len > rd->left)
		len = (size_t)rd->left;
	if ((r = ops->data(ud, buf, len)) < 0)
		return r;
	if (rd->left >= 0 && (rd->left -= (long long)len) == 0)
		rd->ended = true;
	return rd->ended;
}

int httpc_stream(const struct httpc_target *t, const char *method, const char *path,
		 const char *headers, int stop_fd, unsigned idle_ms,
		 const struct httpc_stream_ops *ops, void *ud, char *err, size_t errlen)
{
	long long deadline = now_ms() + t->timeout_ms;
	struct httpc_reader *rd = NULL;
	struct conn c;
	char buf[16384];
	int r;

	if ((r = httpc_reader_new(&rd)) < 0)
		return r;
	r = conn_open(&c, t, deadline, method, path, headers, NULL, 0, err, errlen);
	while (r == 0) {
		/* the head within the deadline, the body as it comes */
		int ms = !rd->in_body ? left_ms(deadline) : idle_ms ? (int)idle_ms : -1;
		ssize_t n = recv_some(&c, buf, sizeof(buf), ms, stop_fd, true, err, errlen);

		if (n == 0 && !httpc_reader_complete(rd)) {
			snprintf(err, errlen, "the answer was cut short");
			r = -ECONNRESET;
		} else if (n <= 0) {
			r = (int)n;
			break;
		} else {
			r = httpc_reader_feed(rd, buf, (size_t)n, ops, ud, err, errlen);
		}
	}
	if (r > 0)
		r = 0;
	conn_close(&c);
	httpc_reader_free(rd);
	return r;
}

void httpc_answer_clear(struct httpc_answer *a)
{
	free(a->body);
	*a = (struct httpc_answer){ 0 };
}
