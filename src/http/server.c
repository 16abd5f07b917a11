/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTPS server over libmicrohttpd. Three things here are ours rather than MHD's:
 *
 * Key pair rotation. MHD asks GnuTLS for the certificate through a callback
 * (MHD_OPTION_HTTPS_CERT_CALLBACK), which hands out the current pair. GnuTLS never frees what
 * the callback returns and may use it for as long as the session lives, so a superseded pair
 * must outlive every connection that could have picked it up. Pairs form a list, oldest first,
 * each with a generation number; a connection pins the pair that is current when it starts
 * (MHD's STARTED notice comes before the first byte of its handshake), and its handshake can
 * only pick that pair or a newer one. So a pair can go once it is no longer current and no
 * connection pins it or anything older: we free from the head of the list only. The
 * alternative, a second daemon taking over the listening socket, drops every keep-alive
 * connection of the first when it stops; this drops none.
 *
 * Deadlines. MHD's own timeout is an idle timeout, which a client sending one byte every few
 * seconds never meets. A reaper thread holds every connection to a wall-clock deadline (see
 * http.h) and shuts its socket down when it passes; MHD then closes it as if the peer had.
 * The first deadline is the handshake's: the end of it is GnuTLS's hook on the client's
 * Finished message, set on each session when MHD announces the connection.
 *
 * The connection limit. At its limit MHD stops polling the listening socket, and new clients
 * wait in the kernel's queue, neither served nor refused: a client holding every slot with
 * sockets that never start TLS blocked all admission for the idle timeout. MHD's own limit is
 * set well above ours, and ours is kept when MHD announces a connection: the oldest connection
 * that is not being served is closed to make room (one in its handshake first, then one idle
 * between requests, then one whose headers are still coming), or, when every one has a
 * request being answered, the new one is. Either way MHD sees a socket shut down and frees it
 * on its next turn. Idle ones must go too: on plain HTTP there is no handshake, and 256
 * sockets that never send a byte held every slot until the idle timeout, again and again.
 *
 * Answers. MHD keeps each answer until its client has read it, so clients that ask and never
 * read held one answer each until the request timeout: a scrape of a big node is megabytes.
 * Answers are counted against answers_max from the moment a handler is called (its route's
 * previous answer's size, the best guess before it is built) until MHD is done with them; a new
 * one that would pass the bound takes the room of the answers that have waited longest on
 * their clients, whose connections are shut down. Answers still being built cannot be taken
 * back: past them the request is answered 503. MHD reads an answer through our callback rather
 * than from a buffer it owns, so that one taken back is freed at once: a buffer of MHD's went
 * only when the connection's worker thread got to the closed socket, and a worker building a
 * scrape meanwhile let the freed room fill again while the memory was still held.
 *
 * Failed handshakes. MHD logs them as one sentence without the client or the reason. GnuTLS
 * reads each connection through our pull function, which keeps the first bytes the client
 * sent: enough to tell plain HTTP, a TLS 1.0/1.1 client and another failure apart, logged with
 * the client's address when MHD closes the connection.
 * The connection list is under the same lock as the pairs, and MHD's CLOSED notice (which
 * unlinks it) comes before MHD closes the descriptor, so the reaper never shuts down a
 * descriptor number that was reused.
 *
 * Bodies. The handler sees a whole body or none: 413 as soon as Content-Length or the bytes
 * received pass the limit.
 *
 * Client certificates. MHD can take a CA (MHD_OPTION_HTTPS_MEM_TRUST) but only asks for a
 * certificate (GNUTLS_CERT_REQUEST), verifies nothing itself and cannot change the CA while it
 * runs. So each session is set, when MHD announces it, to require a certificate and to verify
 * it in the handshake through our function against our own trust list, which a reload swaps
 * under a lock like the key pair: a client without a certificate, or with one no CA of the file
 * signed (or not meant for TLS clients), fails its handshake and never reaches a handler.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "http/dl.h"
#include "http/tls.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define PEM_MAX	       (1u << 20)
#define REAPER_TICK_MS 100
#define LIMIT_LOG_MS   1000 /* at most one line a second about the connection limit */

struct conn {
	struct conn *prev, *next;
	int fd;
	struct tls_pair *pair;		 /* pinned */
	int64_t started_ms, deadline_ms; /* CLOCK_MONOTONIC */
	bool cut;
	bool in_request;
	bool handshake_done;
	bool answering;	   /* its request's headers are in: a handler runs or its answer is sent */
	struct answer *a;  /* its answer, queued: MHD sends it as the client reads (lock) */
	size_t held;	   /* bytes of answers_max this connection holds (lock) */
	int64_t queued_ms; /* when a was queued */
	char peer[64];
	char refused[200]; /* why its client certificate was refused; "" when it was not */
	/* the client's first bytes (the TLS record header and the ClientHello's version): the
	 * connection's worker thread alone writes and reads them */
	unsigned char first[11];
	size_t n_first;
};

/* An answer MHD sends through answer_read(); body NULL once taken back (lock). */
struct answer {
	struct http_server *s;
	struct conn *k; /* NULL once the request is over */
	char *body;
	size_t len;
	size_t built; /* the handler's bytes, before gzip: its route's next guess */
	bool gzip;    /* body is gzip'd */
};

/* The server's two lists under its lock, connections and handler threads: x goes first; x goes
 * out (nothing when it is in neither: a job that jobs_abandon() took out already). */
#define LIST_PUSH(head, x)                                                                         \
	do {                                                                                       \
		(x)->prev = NULL;                                                                  \
		(x)->next = (head);                                                                \
		if (head)                                                                          \
			(head)->prev = (x);                                                        \
		(head) = (x);                                                                      \
	} while (0)
#define LIST_UNLINK(head, x)                                                                       \
	do {                                                                                       \
		if ((x)->prev)                                                                     \
			(x)->prev->next = (x)->next;                                               \
		else if ((head) == (x))                                                            \
			(head) = (x)->next;                                                        \
		if ((x)->next)                                                                     \
			(x)->next->prev = (x)->prev;                                               \
		(x)->prev = (x)->next = NULL;                                                      \
	} while (0)

/* A request of a route whose handler runs on a thread of its own (http_route.own_thread), its
 * connection suspended meanwhile. Freed by whichever ends last: the thread or the request. */
struct job {
	struct job *prev, *next; /* s->jobs while the handler runs (lock) */
	struct http_server *s;
	struct MHD_Connection *c;
	const struct http_route *route;
	bool gzip_ok; /* the client takes gzip */
	/* the request, copied: MHD's strings go with the connection, which may close first */
	struct http_request hr;
	char *strings, *body;
	/* lock: */
	bool finished;	/* the handler returned: r, resp and a are its result */
	bool abandoned; /* the server stops: the connection was resumed without an answer */
	bool orphan;	/* the request is over: the thread frees the job */
	int r;
	struct http_response resp;
	struct answer *a;
};

struct req {
	struct conn *conn;
	const struct http_route *route;
	char *body;
	size_t len, cap;
	size_t hint;	       /* Content-Length, when given */
	unsigned early_status; /* an answer decided before the body was read (404, 405, 413) */
	bool headers_done;
	struct job *job; /* its handler's thread, running or with its answer to give */
};

struct http_server {
	struct MHD_Daemon *mhd;
	struct http_limits lim;
	const struct http_route *routes;
	size_t n_routes;
	void *userdata;
	http_log_fn log;
	char *cert_file, *key_file;
	char *ca_file;		  /* client certificates: NULL when none are asked for */
	pthread_rwlock_t ca_lock; /* ca: verifications read, a reload swaps */
	gnutls_x509_trust_list_t ca;
	char *ca_pem; /* the bytes loaded, to tell an unchanged file */
	size_t ca_len;
	uint16_t port;

	pthread_mutex_t lock; /* conns, pairs, the counts below */
	struct conn *conns;
	struct tls_pair *oldest, *current;
	uint64_t gen;
	unsigned open;
	unsigned open_cut;	 /* of them, shut down by us and not yet closed by MHD */
	size_t held;		 /* bytes of answers, built or being sent */
	size_t *route_len;	 /* per route, its previous answer's size */
	int64_t limit_logged_ms; /* the last line about the connection limit */
	unsigned limit_quiet;	 /* events since that line, not logged */

	pthread_t reaper;
	pthread_cond_t wake;
	bool reaper_running, stopping;

	struct job *jobs;	  /* running (lock) */
	unsigned n_threads;	  /* handler threads not yet gone (lock) */
	pthread_cond_t jobs_gone; /* n_threads went down */

	atomic_uint_fast64_t n_connections, n_requests, n_cut, n_refused, n_idle_cut;
	atomic_uint_fast64_t n_answers_cut, n_answers_refused, n_gzipped;
	atomic_uint inflight;
	atomic_bool closing;  /* MHD_stop_daemon closes the connections left: no reasons to log,
			       * no handler thread started */
	atomic_bool draining; /* http_server_stop began: new connections closed at accept */
	atomic_uint_fast64_t n_drain_refused; /* ... how many */
};

/* GnuTLS's certificate callback carries no user pointer: the one server of the process. */
static struct http_server *the_server;

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

__attribute__((format(printf, 3, 4))) static void
slog(struct http_server *s, enum http_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!s->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->log(s->userdata, level, msg);
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *s = cls;
	char msg[512];
	size_t n;

	if (!s->log)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = '\0';
	/* MHD reports every client that hangs up mid-handshake; that is the client's business */
	s->log(s->userdata, HTTP_LOG_DEBUG, msg);
}

/* ---- listen address ------------------------------------------------------------------------ */

int http_listen_parse(const char *s, void *storage, unsigned *ret_len, const char **why)
{
	struct sockaddr_storage *ss = storage;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hl;
	unsigned long port;
	char *end;

	colon = strrchr(s, ':');
	if (!colon) {
		*why = "expected ADDR:PORT, [ADDR]:PORT or :PORT";
		return -EINVAL;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+') {
		*why = "the port is not a number from 0 to 65535";
		return -EINVAL;
	}
	hl = (size_t)(colon - s);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= sizeof(host)) {
		*why = "the address is not a numeric IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (hl == 0) {
		/* every address: [::] with IPv4 mapped in (MHD_USE_DUAL_STACK) */
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		a->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*a);
		return 0;
	}
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1 && s[0] != '[') {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(*a);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*a);
		return 0;
	}
	*why = "the address is not a numeric IPv4 or IPv6 address ([...] around IPv6)";
	return -EINVAL;
}

/* ---- client certificates ----------------------------------------------------------------- */

/* 0: unchanged, 1: loaded into s->ca, <0: refused with err (the CAs in use stay). */
static int ca_reload(struct http_server *s, char *err, size_t errlen)
{
	_cleanup_free_ char *pem = NULL;
	gnutls_x509_trust_list_t tl = NULL, old;
	gnutls_datum_t d;
	size_t len = 0;
	int r, g;

	if (!s->ca_file)
		return 0;
	r = fileio_read_regular_at(AT_FDCWD, s->ca_file, PEM_MAX, &pem, &len);
	if (r < 0) {
		snprintf(err, errlen, "client CA %s: %s", s->ca_file, fileio_strerror(r));
		return r;
	}
	if (s->ca && s->ca_len == len && memcmp(s->ca_pem, pem, len) == 0)
		return 0;
	if (gnutls_x509_trust_list_init(&tl, 0) < 0)
		return -ENOMEM;
	d = (gnutls_datum_t){ (unsigned char *)pem, (unsigned)len };
	g = gnutls_x509_trust_list_add_trust_mem(tl, &d, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
	if (g <= 0) {
		snprintf(err, errlen, "client CA %s: %s", s->ca_file,
			 g < 0 ? gnutls_strerror(g) : "no PEM certificate in the file");
		gnutls_x509_trust_list_deinit(tl, 1);
		return -EINVAL;
	}
	pthread_rwlock_wrlock(&s->ca_lock);
	old = s->ca;
	s->ca = tl;
	free(s->ca_pem);
	s->ca_pem = TAKE_PTR(pem);
	s->ca_len = len;
	pthread_rwlock_unlock(&s->ca_lock);
	if (old)
		gnutls_x509_trust_list_deinit(old, 1);
	return 1;
}

/* GnuTLS's verify function of a session, in the handshake: 0 lets it go on, anything else ends
 * it. The chain the client sent, against the CAs of the file, for a TLS client. */
static int verify_client(gnutls_session_t session)
{
	struct http_server *s = the_server;
	struct conn *k = gnutls_transport_get_ptr(session);
	gnutls_x509_crt_t crts[TLS_CHAIN_MAX];
	const gnutls_datum_t *peers;
	gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
					  .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT };
	unsigned n = 0, n_crts = 0, status = 0;
	int g = -1;

	if (!s || !k)
		return -1;
	peers = gnutls_certificate_get_peers(session, &n);
	if (!peers || n == 0) {
		snprintf(k->refused, sizeof(k->refused), "no client certificate");
		return -1;
	}
	for (; n_crts < n && n_crts < TLS_CHAIN_MAX; n_crts++) {
		if (gnutls_x509_crt_init(&crts[n_crts]) < 0)
			goto out;
		if (gnutls_x509_crt_import(crts[n_crts], &peers[n_crts], GNUTLS_X509_FMT_DER) < 0) {
			snprintf(k->refused, sizeof(k->refused),
				 "a client certificate that does not parse");
			n_crts++;
			goto out;
		}
	}
	pthread_rwlock_rdlock(&s->ca_lock);
	g = gnutls_x509_trust_list_verify_crt2(s->ca, crts, n_crts, &purpose, 1, 0, &status, NULL);
	pthread_rwlock_unlock(&s->ca_lock);
	if (g < 0)
		snprintf(k->refused, sizeof(k->refused), "client certificate: %s",
			 gnutls_strerror(g));
	else if (status) {
		gnutls_datum_t why = { 0 };

		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
		snprintf(k->refused, sizeof(k->refused), "client certificate refused: %s",
			 why.data ? (const char *)why.data : "not verified");
		gnutls_free(why.data);
		for (size_t l = strlen(k->refused); l && k->refused[l - 1] == ' '; l--)
			k->refused[l - 1] = '\0'; /* GnuTLS ends each sentence with a space */
		g = -1;
	}
out:
	for (unsigned i = 0; i < n_crts; i++)
		gnutls_x509_crt_deinit(crts[i]);
	return g < 0 ? -1 : 0;
}

/* ---- key pairs --------------------------------------------------------------------------- */

static void pairs_collect(struct http_server *s)
{
	while (s->oldest && s->oldest != s->current && s->oldest->refs == 0) {
		struct tls_pair *p = s->oldest;

		s->oldest = p->newer;
		http_tls_pair_free(p);
	}
}

static int cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			 gnutls_pcert_st **pcert, unsigned int *pcert_length,
			 gnutls_privkey_t *pkey)
{
	struct http_server *s = the_server;
	struct tls_pair *p;

	if (!s)
		return -1;
	pthread_mutex_lock(&s->lock);
	p = s->current;
	pthread_mutex_unlock(&s->lock);
	*pcert = p->pcerts;
	*pcert_length = p->n_pcerts;
	*pkey = p->key;
	return 0;
}

static int load_pair(struct http_server *s, struct tls_pair **ret, bool *unchanged, char *err,
		     size_t errlen)
{
	_cleanup_free_ char *cert = NULL, *key = NULL;
	size_t cl = 0, kl = 0;
	int r;

	r = fileio_read_regular_at(AT_FDCWD, s->cert_file, PEM_MAX, &cert, &cl);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", s->cert_file, fileio_strerror(r));
		return r;
	}
	r = fileio_read_regular_at(AT_FDCWD, s->key_file, PEM_MAX, &key, &kl);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", s->key_file, fileio_strerror(r));
		return r;
	}
	if (s->current && http_tls_pair_same_bytes(s->current, cert, cl, key, kl)) {
		*unchanged = true;
		return 0;
	}
	*unchanged = false;
	r = http_tls_pair_load(cert, cl, key, kl, ret, err, errlen);
	if (r < 0) {
		_cleanup_free_ char *why = strdup(err);

		snprintf(err, errlen, "%s, %s: %s", s->cert_file, s->key_file,
			 why ? why : "invalid");
	}
	return r;
}

int http_server_reload_tls(struct http_server *s, char *err, size_t errlen)
{
	struct tls_pair *p = NULL;
	bool unchanged = false;
	char ca_err[512] = "";
	int r, ca;

	if (!s->cert_file)
		return 0;
	ca = ca_reload(s, ca_err, sizeof(ca_err));
	r = load_pair(s, &p, &unchanged, err, errlen);
	if (r < 0)
		return r;
	if (ca < 0)
		snprintf(err, errlen, "%s", ca_err);
	if (unchanged)
		return ca;
	pthread_mutex_lock(&s->lock);
	p->gen = ++s->gen;
	s->current->newer = p;
	s->current = p;
	pairs_collect(s);
	pthread_mutex_unlock(&s->lock);
	return ca < 0 ? ca : 1;
}

const char *http_server_tls_summary(const struct http_server *s)
{
	return s->current ? s->current->summary : "plain HTTP";
}

/* ---- connections ------------------------------------------------------------------------- */

static void conn_hold(struct http_server *s, struct conn *k, size_t n);

/* Free the answer k is sending (lock held): MHD's next read of it ends the connection. */
static void answer_take_back(struct http_server *s, struct conn *k)
{
	if (!k->a)
		return;
	free(k->a->body);
	k->a->body = NULL;
	k->a->k = NULL;
	k->a = NULL;
	conn_hold(s, k, 0);
}

/* Shut a connection's socket down (lock held): MHD sees the peer gone and closes it; its answer
 * goes at once. */
static void conn_cut(struct http_server *s, struct conn *k)
{
	k->cut = true;
	s->open_cut++;
	answer_take_back(s, k);
	if (k->fd >= 0)
		shutdown(k->fd, SHUT_RDWR);
}

static const char *conn_peer(const struct conn *k)
{
	return k->peer[0] ? k->peer : "?";
}

/* GnuTLS reads the socket through this for the connection's life (the transport's receive
 * pointer is the connection; the sending side keeps the descriptor and GnuTLS's own writer). */
static ssize_t conn_pull(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
	struct conn *k = ptr;
	ssize_t n = recv(k->fd, buf, len, 0);

	if (n > 0 && k->n_first < sizeof(k->first)) {
		size_t m = sizeof(k->first) - k->n_first;

		if ((size_t)n < m)
			m = (size_t)n;
		memcpy(k->first + k->n_first, buf, m);
		k->n_first += m;
	}
	return n;
}

static int conn_pull_timeout(gnutls_transport_ptr_t ptr, unsigned ms)
{
	const struct conn *k = ptr;

	return gnutls_system_recv_timeout((gnutls_transport_ptr_t)(intptr_t)k->fd, ms);
}

/* The client's Finished message: the handshake is over (TLS 1.2 and 1.3 alike, the server
 * receives it last); the connection now has the idle + request timeout for its first request. */
static int on_handshake_message(gnutls_session_t session, unsigned htype, unsigned when,
				unsigned incoming, const gnutls_datum_t *msg)
{
	struct http_server *s = the_server;
	struct conn *k = gnutls_transport_get_ptr(session);

	if (!s || !k || htype != GNUTLS_HANDSHAKE_FINISHED || !incoming)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (!k->handshake_done && !k->in_request)
		k->deadline_ms = now_ms() + (int64_t)s->lim.idle_timeout_s * 1000 +
				 s->lim.request_timeout_ms;
	k->handshake_done = true;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void conn_watch_tls(struct MHD_Connection *c, struct conn *k)
{
	const union MHD_ConnectionInfo *ti =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session = ti ? ti->tls_session : NULL;

	if (!session || k->fd < 0) {
		k->handshake_done = true; /* unseen: held to the idle + request timeout only */
		return;
	}
	gnutls_transport_set_ptr2(session, k, (gnutls_transport_ptr_t)(intptr_t)k->fd);
	gnutls_transport_set_pull_function(session, conn_pull);
	gnutls_transport_set_pull_timeout_function(session, conn_pull_timeout);
	gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_POST,
					   on_handshake_message);
	if (the_server && the_server->ca_file) {
		gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_function(session, verify_client);
	}
}

/* A line about a limit (lock held): a flood of connections or requests is one line a second,
 * not one each. what: "connection limit (256) reached" and the like. */
__attribute__((format(printf, 3, 4))) static void log_limit(struct http_server *s, const char *what,
							    const char *fmt, ...)
{
	int64_t now = now_ms();
	char msg[384];
	va_list ap;

	if (s->limit_logged_ms && now - s->limit_logged_ms < LIMIT_LOG_MS) {
		s->limit_quiet++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->limit_quiet)
		slog(s, HTTP_LOG_WARNING, "%s: %s (and %u more since the last line)", what, msg,
		     s->limit_quiet);
	else
		slog(s, HTTP_LOG_WARNING, "%s: %s", what, msg);
	s->limit_logged_ms = now;
	s->limit_quiet = 0;
}

/* What a connection is doing, in the order a full server takes slots back: the first that is
 * not serving a request goes before a newer one, a handshake before an idle connection. */
enum conn_phase {
	PHASE_HANDSHAKE, /* TLS not done yet */
	PHASE_IDLE,	 /* between requests (plain HTTP: maybe not a byte sent yet) */
	PHASE_HEADERS,	 /* its request line is in, its headers are still coming */
	PHASE_SERVED,	 /* a handler runs, its body comes, or its answer is being sent */
};

static enum conn_phase conn_phase(const struct conn *k)
{
	return !k->handshake_done ? PHASE_HANDSHAKE
	       : !k->in_request	  ? PHASE_IDLE
	       : !k->answering	  ? PHASE_HEADERS
				  : PHASE_SERVED;
}

/* A new connection k, not yet in the list (lock held): keep the limit. The oldest connection
 * that is not being served makes room, a handshake first, then an idle one, then one whose
 * headers are still coming; when every one is being served, the new one is closed at once. */
static void make_room(struct http_server *s, struct conn *k)
{
	static const char *const why[] = {
		[PHASE_HANDSHAKE] = "still in its TLS handshake",
		[PHASE_IDLE] = "idle",
		[PHASE_HEADERS] = "still sending its request's headers",
	};
	char what[64];

	if (s->open - s->open_cut < s->lim.max_connections)
		return;
	snprintf(what, sizeof(what), "connection limit (%u) reached", s->lim.max_connections);
	for (enum conn_phase ph = PHASE_HANDSHAKE; ph < PHASE_SERVED; ph++) {
		struct conn *oldest = NULL;

		for (struct conn *o = s->conns; o; o = o->next)
			if (!o->cut && conn_phase(o) == ph)
				oldest = o; /* newest first: the last one found is the oldest */
		if (!oldest)
			continue;
		conn_cut(s, oldest);
		atomic_fetch_add(ph == PHASE_HANDSHAKE ? &s->n_cut : &s->n_idle_cut, 1);
		log_limit(s, what, "closed a connection from %s %s after %lld ms, for one from %s",
			  conn_peer(oldest), why[ph], (long long)(now_ms() - oldest->started_ms),
			  conn_peer(k));
		return;
	}
	conn_cut(s, k);
	atomic_fetch_add(&s->n_refused, 1);
	log_limit(s, what,
		  "refused a connection from %s: every connection has a request being answered",
		  conn_peer(k));
}

/* ---- answers_max --------------------------------------------------------------------------- */

/* k holds n bytes of answers from now on (lock held). */
static void conn_hold(struct http_server *s, struct conn *k, size_t n)
{
	s->held = s->held - k->held + n;
	k->held = n;
}

/* Room for n more bytes of answers (lock held): the connections whose answers have waited
 * longest on their clients are shut down until there is (their bytes go when MHD frees them).
 * One answer alone always fits. false: the answers in the way are being built. */
static bool answers_room(struct http_server *s, const struct conn *k, size_t n)
{
	char what[64];

	snprintf(what, sizeof(what), "answer limit (%zu bytes) reached", s->lim.answers_max);
	while (s->held > 0 && s->held + n > s->lim.answers_max) {
		struct conn *oldest = NULL;
		size_t len;

		for (struct conn *o = s->conns; o; o = o->next)
			if (o->a && (!oldest || o->queued_ms <= oldest->queued_ms))
				oldest = o;
		if (!oldest) {
			atomic_fetch_add(&s->n_answers_refused, 1);
			log_limit(s, what,
				  "answered 503 to %s: %zu bytes of answers are being built",
				  conn_peer(k), s->held);
			return false;
		}
		len = oldest->held;
		answer_take_back(s, oldest);
		if (!oldest->cut)
			conn_cut(s, oldest);
		atomic_fetch_add(&s->n_answers_cut, 1);
		log_limit(s, what,
			  "closed a connection from %s whose client had not read its answer of "
			  "%zu bytes after %lld ms, for %s",
			  conn_peer(oldest), len, (long long)(now_ms() - oldest->queued_ms),
			  conn_peer(k));
	}
	return true;
}

/* Before a handler runs: room for its route's previous answer. false: answer 503. */
static bool answer_reserve(struct http_server *s, struct conn *k, size_t route)
{
	bool ok;

	if (!k)
		return true;
	pthread_mutex_lock(&s->lock);
	ok = answers_room(s, k, s->route_len[route]);
	if (ok)
		conn_hold(s, k, k->held + s->route_len[route]);
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* The handler failed: nothing held. */
static void answer_drop(struct http_server *s, struct conn *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&s->lock);
	conn_hold(s, k, 0);
	pthread_mutex_unlock(&s->lock);
}

/* The answer a is built (built bytes, before any compression: the next build's guess) and held
 * in place of the guess until MHD is done with it. false: no room for it (answer 503; a is the
 * caller's still). */
static bool answer_settle(struct http_server *s, struct conn *k, size_t route, size_t built,
			  struct answer *a)
{
	bool ok = true;

	pthread_mutex_lock(&s->lock);
	s->route_len[route] = built;
	if (k) {
		conn_hold(s, k, 0);
		ok = answers_room(s, k, a->len);
	}
	if (k && ok) {
		conn_hold(s, k, a->len);
		k->a = a;
		a->k = k;
		k->queued_ms = now_ms();
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

static ssize_t answer_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct answer *a = cls;
	ssize_t n = MHD_CONTENT_READER_END_WITH_ERROR;

	pthread_mutex_lock(&a->s->lock);
	if (a->body && pos <= a->len) {
		n = (ssize_t)(a->len - pos < max ? a->len - pos : max);
		memcpy(buf, a->body + pos, (size_t)n);
	}
	pthread_mutex_unlock(&a->s->lock);
	return n;
}

static void answer_free(void *cls)
{
	struct answer *a = cls;

	pthread_mutex_lock(&a->s->lock);
	if (a->k)
		answer_take_back(a->s, a->k);
	pthread_mutex_unlock(&a->s->lock);
	free(a->body);
	free(a);
}

/* MHD closes a connection whose handshake failed with one sentence and neither the client nor
 * the reason: say both. Plain HTTP and old TLS are what a misconfigured client sends. */
static void log_failed_handshake(struct http_server *s, const struct conn *k)
{
	static const char *const old[] = { "SSL 3.0", "TLS 1.0", "TLS 1.1" };
	const unsigned char *b = k->first;
	char text[sizeof(k->first) + 1];
	bool printable = true;
	unsigned version;

	if (k->refused[0]) {
		slog(s, HTTP_LOG_INFO, "closed a connection from %s: %s", conn_peer(k), k->refused);
		return;
	}
	if (k->n_first == 0) {
		/* a TCP probe (kubelet's tcpSocket, a load balancer's check) */
		slog(s, HTTP_LOG_DEBUG,
		     "a connection from %s closed before its TLS handshake began", conn_peer(k));
		return;
	}
	if (b[0] != 0x16) { /* not a TLS handshake record */
		for (size_t i = 0; i < k->n_first; i++) {
			printable &= b[i] >= 0x20 && b[i] < 0x7f;
			text[i] = (char)b[i];
		}
		text[k->n_first] = '\0';
		if (printable)
			slog(s, HTTP_LOG_INFO,
			     "closed a connection from %s: plain HTTP on the HTTPS port (it began \"%s\")",
			     conn_peer(k), text);
		else
			slog(s, HTTP_LOG_INFO,
			     "closed a connection from %s: not TLS (its first byte is 0x%02x)",
			     conn_peer(k), b[0]);
		return;
	}
	/* record header (5 bytes), handshake type 1 ClientHello, length (3), client_version */
	version = k->n_first >= 11 && b[5] == 1 ? (unsigned)b[9] << 8 | b[10] : 0;
	if (version >= 0x0300 && version < 0x0303)
		slog(s, HTTP_LOG_INFO,
		     "closed a connection from %s: its client offers %s at most; this server speaks "
		     "TLS 1.2 and 1.3",
		     conn_peer(k), old[version - 0x0300]);
	else
		slog(s, HTTP_LOG_INFO,
		     "closed a connection from %s: TLS handshake failed (a client that does not trust "
		     "this certificate, a wrong caBundle, %sends here too)",
		     conn_peer(k), s->ca_file ? "a client without a certificate " : "");
}

/* MHD's accept policy: once the server stops, a new connection is closed as soon as it is
 * accepted. This, not MHD_quiesce_daemon, is how the server stops taking clients: libmicrohttpd
 * 0.9.75's quiesce takes the listening socket out of each epoll worker's set while the worker
 * may be doing the same, and whichever loses aborts the process ("Failed to remove listen FD
 * from epoll set", daemon.c:4976 and 5531); the socket it hands back may not be closed before
 * MHD_stop_daemon either (its threads may still use it; microhttpd.h), so clients would wait in
 * the listen queue for the whole grace. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct http_server *s = cls;

	(void)addr;
	(void)len;
	if (!atomic_load(&s->draining))
		return MHD_YES;
	atomic_fetch_add(&s->n_drain_refused, 1);
	return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	struct conn *k;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *addr =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		k = calloc(1, sizeof(*k));
		if (!k) {
			/* untracked, it could pick a pair nobody pins: refuse it instead */
			if (fd)
				shutdown(fd->connect_fd, SHUT_RDWR);
			*socket_context = NULL;
			return;
		}
		k->fd = fd ? fd->connect_fd : -1;
		if (addr && addr->client_addr) {
			const struct sockaddr *sa = addr->client_addr;
			char ip[INET6_ADDRSTRLEN] = "?";

			if (sa->sa_family == AF_INET)
				inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip,
					  sizeof(ip));
			else if (sa->sa_family == AF_INET6)
				inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
					  ip, sizeof(ip));
			snprintf(k->peer, sizeof(k->peer), "%s", ip);
		}
		conn_watch_tls(c, k);
		pthread_mutex_lock(&s->lock);
		k->pair = s->current; /* NULL: plain HTTP */
		if (k->pair)
			k->pair->refs++;
		k->started_ms = now_ms();
		k->deadline_ms =
			k->started_ms + (k->handshake_done ? (int64_t)s->lim.idle_timeout_s * 1000 +
								     s->lim.request_timeout_ms
							   : (int64_t)s->lim.handshake_timeout_ms);
		make_room(s, k);
		LIST_PUSH(s->conns, k);
		s->open++;
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_add(&s->n_connections, 1);
		*socket_context = k;
		return;
	}
	/* MHD_CONNECTION_NOTIFY_CLOSED */
	k = *socket_context;
	if (!k)
		return;
	pthread_mutex_lock(&s->lock);
	LIST_UNLINK(s->conns, k);
	if (k->pair)
		k->pair->refs--;
	s->open--;
	if (k->cut)
		s->open_cut--;
	pairs_collect(s);
	pthread_mutex_unlock(&s->lock);
	if (!k->cut && !k->handshake_done && !atomic_load(&s->closing))
		log_failed_handshake(s, k);
	free(k);
	*socket_context = NULL;
}

static void *reaper_main(void *arg)
{
	struct http_server *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		struct timespec until;
		int64_t now = now_ms();

		for (struct conn *k = s->conns; k; k = k->next) {
			if (k->cut || k->deadline_ms > now || k->fd < 0)
				continue;
			conn_cut(s, k);
			atomic_fetch_add(&s->n_cut, 1);
			slog(s, HTTP_LOG_INFO, "closed a connection from %s: %s", conn_peer(k),
			     k->in_request ? "its request took longer than the request timeout"
			     : !k->handshake_done
				     ? "no TLS handshake within the handshake timeout"
				     : "no request line within the idle + request timeout");
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += REAPER_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->wake, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- requests ---------------------------------------------------------------------------- */

static void job_release(struct http_server *s, struct job *j);

/* Called when a request's first line is in: the request's own state, and its deadline. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct http_server *s = cls;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;
	struct req *rq = calloc(1, sizeof(*rq));

	atomic_fetch_add(&s->inflight, 1);
	if (!rq)
		return NULL;
	rq->conn = k;
	if (k) {
		pthread_mutex_lock(&s->lock);
		k->deadline_ms = now_ms() + s->lim.request_timeout_ms;
		k->in_request = true;
		pthread_mutex_unlock(&s->lock);
	}
	return rq;
}

static void on_request_done(void *cls, struct MHD_Connection *c, void **con_cls,
			    enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct req *rq = *con_cls;

	atomic_fetch_sub(&s->inflight, 1);
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		atomic_fetch_add(&s->n_requests, 1);
	if (!rq)
		return;
	if (rq->job)
		job_release(s, rq->job);
	if (rq->conn) {
		pthread_mutex_lock(&s->lock);
		rq->conn->deadline_ms = now_ms() + (int64_t)s->lim.idle_timeout_s * 1000 +
					s->lim.request_timeout_ms;
		rq->conn->in_request = false;
		rq->conn->answering = false;
		answer_take_back(s, rq->conn);
		conn_hold(s, rq->conn, 0);
		pthread_mutex_unlock(&s->lock);
	}
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, const char *content_type,
			     char *body, size_t len, const char *allow, bool close,
			     unsigned retry_after_s)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!body) {
		len = 0;
		body = strdup("");
		if (!body)
			return MHD_NO;
	}
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type ? content_type : "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	if (close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (retry_after_s) {
		char v[16];

		snprintf(v, sizeof(v), "%u", retry_after_s);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v);
	}
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result queue_text(struct MHD_Connection *c, unsigned status, const char *text,
				  const char *allow)
{
	char *b = strdup(text);

	return b ? queue(c, status, NULL, b, strlen(b), allow, status == MHD_HTTP_BAD_REQUEST,
			 status == MHD_HTTP_SERVICE_UNAVAILABLE ? 1 : 0)
		 : MHD_NO;
}

static const struct http_route *route_find(struct http_server *s, const char *path,
					   const char *method, const char **allow)
{
	*allow = NULL;
	for (size_t i = 0; i < s->n_routes; i++) {
		const struct http_route *r = &s->routes[i];

		if (strcmp(r->path, path) != 0)
			continue;
		*allow = r->method;
		if (!strcmp(r->method, method) ||
		    (!strcmp(r->method, "GET") && !strcmp(method, "HEAD")))
			return r;
	}
	return NULL;
}

static enum MHD_Result count_content_length(void *cls, enum MHD_ValueKind kind, const char *key,
					    const char *value)
{
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
		(*(unsigned *)cls)++;
	return MHD_YES;
}

/* First call for a request (its headers are in): check its framing, route it and check the
 * announced length. */
static void request_begin(struct http_server *s, struct MHD_Connection *c, const char *url,
			  const char *method, struct req *rq, const char **allow)
{
	unsigned n_cl = 0;
	const char *cl;

	rq->headers_done = true;
	if (rq->conn) {
		pthread_mutex_lock(&s->lock);
		rq->conn->answering = true;
		pthread_mutex_unlock(&s->lock);
	}
	/* RFC 9112 6.3: with two lengths the body's end is ambiguous (MHD reads the first, a proxy
	 * in front may have read the other: request smuggling); 400, and the connection closes */
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_content_length, &n_cl);
	if (n_cl > 1) {
		rq->early_status = MHD_HTTP_BAD_REQUEST;
		slog(s, HTTP_LOG_INFO,
		     "%s %s from %s: %u Content-Length headers; answered 400 and closed", method,
		     url, rq->conn ? conn_peer(rq->conn) : "?", n_cl);
		return;
	}
	rq->route = route_find(s, url, method, allow);
	if (!rq->route) {
		rq->early_status = *allow ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_NOT_FOUND;
		return;
	}
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		unsigned long long n;
		char *end;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno || *end || n > s->lim.body_max) {
			rq->early_status = MHD_HTTP_CONTENT_TOO_LARGE;
			return;
		}
		rq->hint = (size_t)n;
	}
}

static int body_append(struct http_server *s, struct req *rq, const char *data, size_t n)
{
	size_t need;

	if (n > s->lim.body_max - rq->len)
		return -EFBIG;
	need = rq->len + n;
	if (need + 1 > rq->cap) {
		/* the announced length at once, else doubling: a few reallocs per body at most */
		size_t cap = rq->hint > need ? rq->hint : need;
		char *b;

		if (cap < 2 * rq->cap)
			cap = 2 * rq->cap;
		if (cap < 4096)
			cap = 4096;
		if (cap > s->lim.body_max)
			cap = s->lim.body_max;
		b = realloc(rq->body, cap + 1);
		if (!b)
			return -ENOMEM;
		rq->body = b;
		rq->cap = cap + 1;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len = need;
	return 0;
}

/* body gzip'd (RFC 1952, as `gzip -1` writes it) into *ret: -ENOMEM. zlib's fastest level: on
 * a scrape of a node with 1016 VFs (3.5 MB) it took half the time of its default level for a
 * tenth more bytes (168 KB against 155 KB). */
static int gzip_body(const char *body, size_t len, char **ret, size_t *ret_len)
{
	z_stream z = { 0 };
	size_t cap = len / 8 + 1024;
	char *out = malloc(cap), *grown;
	int zr;

	if (!out || deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)body;
	for (;;) {
		size_t in = len - (size_t)((const char *)z.next_in - body);

		z.avail_in = in > UINT_MAX ? UINT_MAX : (uInt)in;
		z.next_out = (Bytef *)out + z.total_out;
		z.avail_out = cap - z.total_out > UINT_MAX ? UINT_MAX : (uInt)(cap - z.total_out);
		zr = deflate(&z, z.avail_in == in ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK && (zr != Z_BUF_ERROR || z.avail_out))
			goto fail;
		if (z.avail_out == 0) {
			if (!(grown = realloc(out, cap * 2)))
				goto fail;
			out = grown;
			cap *= 2;
		}
	}
	*ret_len = z.total_out;
	deflateEnd(&z);
	*ret = out;
	return 0;
fail:
	deflateEnd(&z);
	free(out);
	return -ENOMEM;
}

/* The handler's answer as MHD reads it (answer_read()), gzip'd when the route and the client take
 * it; resp's body moves into it. NULL: out of memory (the body freed). */
static struct answer *answer_new(struct http_server *s, struct http_response *resp, bool gzip)
{
	struct answer *a = calloc(1, sizeof(*a));
	size_t zlen;
	char *z;

	if (!a) {
		free(resp->body);
		resp->body = NULL;
		return NULL;
	}
	*a = (struct answer){ .s = s, .body = resp->body, .len = resp->body ? resp->body_len : 0 };
	a->built = a->len;
	resp->body = NULL;
	/* out of memory for the compressed copy: the plain answer, which every client takes */
	if (gzip && gzip_body(a->body ? a->body : "", a->len, &z, &zlen) == 0) {
		free(a->body);
		a->body = z;
		a->len = zlen;
		a->gzip = true;
	}
	return a;
}

/* An answer MHD never saw. NULL is fine. */
static void answer_discard(struct answer *a)
{
	if (!a)
		return;
	free(a->body);
	free(a);
}

/* Hand an answer to MHD (see the top of this file); none (out of memory) closes the connection. */
static enum MHD_Result queue_answer(struct http_server *s, struct MHD_Connection *c, struct req *rq,
				    struct answer *a, const struct http_response *resp)
{
	size_t route = (size_t)(rq->route - s->routes);
	struct MHD_Response *m;
	enum MHD_Result ret;

	if (!a) {
		answer_drop(s, rq->conn);
		return MHD_NO;
	}
	if (!answer_settle(s, rq->conn, route, a->built, a)) {
		answer_discard(a);
		return queue_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "too many answers held at once; try again\n", NULL);
	}
	/* MHD copies 64 KiB at a time into a buffer of the response's and sends from there */
	m = MHD_create_response_from_callback(a->len, 64u << 10, answer_read, a, answer_free);
	if (!m) {
		answer_free(a);
		return MHD_NO;
	}
	MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp->content_type ? resp->content_type
						   : "text/plain; charset=utf-8");
	if (resp->gzip)
		MHD_add_response_header(m, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	if (a->gzip) {
		MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
		atomic_fetch_add(&s->n_gzipped, 1);
	}
	if (resp->retry_after_s) {
		char v[16];

		snprintf(v, sizeof(v), "%u", resp->retry_after_s);
		MHD_add_response_header(m, MHD_HTTP_HEADER_RETRY_AFTER, v);
	}
	ret = MHD_queue_response(c, resp->status ? resp->status : MHD_HTTP_OK, m);
	MHD_destroy_response(m);
	return ret;
}

/* A handler's result answered: its answer, or 500 for its error (logged). */
static enum MHD_Result request_answer(struct http_server *s, struct MHD_Connection *c,
				      const char *url, const char *method, struct req *rq, int r,
				      struct http_response *resp, struct answer *a)
{
	if (r < 0) {
		answer_discard(a);
		free(resp->body);
		answer_drop(s, rq->conn);
		slog(s, HTTP_LOG_ERROR, "%s %s: %s", method, url, strerror(-r));
		return queue_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n", NULL);
	}
	return queue_answer(s, c, rq, a, resp);
}

/* ---- handlers on threads of their own ------------------------------------------------------ */

/* A worker thread serves every connection it accepted, one at a time: a handler that waits (a
 * scrape whose sysfs read does not return) would hold the others, a liveness probe among them.
 * Such a route's handler runs on a thread of its own while MHD suspends the connection; the
 * thread resumes it when the answer is built, and the worker answers it then (job_answer). */

static void job_free(struct job *j)
{
	answer_discard(j->a);
	free(j->resp.body);
	free(j->strings);
	free(j->body);
	free(j);
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct http_server *s = j->s;
	struct http_response resp = { 0 };
	struct answer *a = NULL;
	int r = j->route->handler(s->userdata, &j->hr, &resp);

	if (r >= 0)
		a = answer_new(s, &resp, resp.gzip && j->gzip_ok);
	pthread_mutex_lock(&s->lock);
	LIST_UNLINK(s->jobs, j);
	j->finished = true;
	j->r = r;
	j->resp = resp;
	j->a = a;
	if (j->orphan)
		job_free(j);
	else if (!j->abandoned)
		/* under the lock, so that http_server_stop never finds it suspended with nobody left
		 * to resume it; MHD calls back into none of ours while it holds its own lock */
		MHD_resume_connection(j->c);
	s->n_threads--;
	pthread_cond_broadcast(&s->jobs_gone);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The request's strings and body, which its handler may read after MHD freed them. */
static struct job *job_new(struct http_server *s, struct MHD_Connection *c, struct req *rq,
			   const struct http_request *hr, bool gzip_ok)
{
	struct job *j = calloc(1, sizeof(*j));
	const char *const *from[] = { &hr->method, &hr->path, &hr->content_type, &hr->accept,
				      &hr->authorization };
	const char **to[ELEMENTSOF(from)];
	size_t n = 1;
	char *p;

	if (!j)
		return NULL;
	*j = (struct job){ .s = s, .c = c, .route = rq->route, .gzip_ok = gzip_ok };
	to[0] = &j->hr.method;
	to[1] = &j->hr.path;
	to[2] = &j->hr.content_type;
	to[3] = &j->hr.accept;
	to[4] = &j->hr.authorization;
	for (size_t i = 0; i < ELEMENTSOF(from); i++)
		n += *from[i] ? strlen(*from[i]) + 1 : 0;
	p = j->strings = malloc(n);
	if (!p) {
		free(j);
		return NULL;
	}
	for (size_t i = 0; i < ELEMENTSOF(from); i++) {
		size_t l;

		if (!*from[i])
			continue;
		l = strlen(*from[i]) + 1;
		memcpy(p, *from[i], l);
		*to[i] = p;
		p += l;
	}
	j->body = TAKE_PTR(rq->body);
	j->hr.body = j->body ? j->body : "";
	j->hr.body_len = hr->body_len;
	return j;
}

/* Run the route's handler on a thread of its own, the connection suspended until it is done. */
static enum MHD_Result job_start(struct http_server *s, struct MHD_Connection *c, struct req *rq,
				 const struct http_request *hr, bool gzip_ok)
{
	struct job *j = job_new(s, c, rq, hr, gzip_ok);
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!j) {
		answer_drop(s, rq->conn);
		return MHD_NO;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* the thread's end takes the lock too: it cannot resume the connection before it is
	 * suspended. The thread inherits this one's signal mask: the role's signals blocked */
	pthread_mutex_lock(&s->lock);
	/* one suspended after jobs_abandon() would be there when MHD stops, which it refuses:
	 * closing is set before jobs_abandon() takes the lock */
	r = atomic_load(&s->closing) ? ESHUTDOWN : pthread_create(&t, &attr, job_main, j);
	if (r == 0) {
		MHD_suspend_connection(c);
		LIST_PUSH(s->jobs, j);
		s->n_threads++;
		rq->job = j;
	}
	pthread_mutex_unlock(&s->lock);
	pthread_attr_destroy(&attr);
	if (r == ESHUTDOWN) {
		job_free(j);
		answer_drop(s, rq->conn);
		return queue_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is stopping\n",
				  NULL);
	}
	if (r != 0) {
		job_free(j);
		answer_drop(s, rq->conn);
		slog(s, HTTP_LOG_WARNING,
		     "%s %s from %s: no thread for its handler (%s); answered 503", hr->method,
		     hr->path, rq->conn ? conn_peer(rq->conn) : "?", strerror(r));
		return queue_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too busy; try again\n", NULL);
	}
	return MHD_YES;
}

/* Called again once the thread resumed the connection: its answer. */
static enum MHD_Result job_answer(struct http_server *s, struct MHD_Connection *c, const char *url,
				  const char *method, struct req *rq)
{
	struct job *j = rq->job;
	enum MHD_Result ret;
	bool finished;

	pthread_mutex_lock(&s->lock);
	finished = j->finished;
	pthread_mutex_unlock(&s->lock);
	if (!finished)
		return MHD_NO; /* resumed by http_server_stop: close (on_request_done lets it go) */
	rq->job = NULL;
	ret = request_answer(s, c, url, method, rq, j->r, &j->resp, j->a);
	j->a = NULL;
	j->resp.body = NULL;
	job_free(j);
	return ret;
}

/* The request is over with its handler's thread maybe still running: who frees the job. */
static void job_release(struct http_server *s, struct job *j)
{
	bool finished;

	pthread_mutex_lock(&s->lock);
	LIST_UNLINK(s->jobs, j); /* http_server_stop must not resume a connection that is gone */
	finished = j->finished;
	j->orphan = true;
	pthread_mutex_unlock(&s->lock);
	if (finished)
		job_free(j);
}

/* The server stops: every connection whose handler still runs is resumed, to be closed without
 * an answer (MHD must not be stopped with one suspended). The count. */
static unsigned jobs_abandon(struct http_server *s)
{
	unsigned n = 0;

	pthread_mutex_lock(&s->lock);
	while (s->jobs) {
		struct job *j = s->jobs;

		LIST_UNLINK(s->jobs, j);
		j->abandoned = true;
		MHD_resume_connection(j->c);
		n++;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

static enum MHD_Result request_finish(struct http_server *s, struct MHD_Connection *c,
				      const char *url, const char *method, struct req *rq)
{
	struct http_request hr = {
		.method = method,
		.path = url,
		.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							    MHD_HTTP_HEADER_CONTENT_TYPE),
		.accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
		.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_AUTHORIZATION),
		.body = rq->body ? rq->body : "",
		.body_len = rq->len,
	};
	bool gzip_ok = http_accept_gzip(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
	struct http_response resp = { 0 };
	int r;

	if (rq->body)
		rq->body[rq->len] = '\0';
	if (!answer_reserve(s, rq->conn, (size_t)(rq->route - s->routes)))
		return queue_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "too many answers held at once; try again\n", NULL);
	if (rq->route->own_thread)
		return job_start(s, c, rq, &hr, gzip_ok);
	r = rq->route->handler(s->userdata, &hr, &resp);
	return request_answer(s, c, url, method, rq, r, &resp,
			      r < 0 ? NULL : answer_new(s, &resp, resp.gzip && gzip_ok));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct req *rq = *con_cls;
	const char *allow = NULL;

	if (!rq)
		return MHD_NO; /* out of memory when the request line came in */
	if (rq->job)
		return job_answer(s, c, url, method, rq);
	if (!rq->headers_done) {
		request_begin(s, c, url, method, rq, &allow);
		if (rq->early_status == MHD_HTTP_BAD_REQUEST)
			return queue_text(c, MHD_HTTP_BAD_REQUEST, "two Content-Length headers\n",
					  NULL);
		if (rq->early_status == MHD_HTTP_NOT_FOUND)
			return queue_text(c, MHD_HTTP_NOT_FOUND, "no such path\n", NULL);
		if (rq->early_status == MHD_HTTP_METHOD_NOT_ALLOWED)
			return queue_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
					  allow);
		if (rq->early_status == MHD_HTTP_CONTENT_TOO_LARGE)
			return queue_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n",
					  NULL);
		return MHD_YES;
	}
	if (*upload_data_size) {
		int r = rq->early_status ? 0 : body_append(s, rq, upload_data, *upload_data_size);

		*upload_data_size = 0;
		if (r == -EFBIG) {
			/* no Content-Length (chunked) and past the limit. MHD cannot answer in the
			 * middle of a body, and reading the rest to answer 413 at its end would let a
			 * client keep us busy: close now */
			slog(s, HTTP_LOG_WARNING,
			     "%s %s from %s: body over %zu bytes without Content-Length; connection closed",
			     method, url, rq->conn && rq->conn->peer[0] ? rq->conn->peer : "?",
			     s->lim.body_max);
			return MHD_NO;
		}
		return r < 0 ? MHD_NO : MHD_YES;
	}
	if (rq->early_status)
		return MHD_YES; /* answered already */
	return request_finish(s, c, url, method, rq);
}

/* ---- life cycle ---------------------------------------------------------------------------- */

uint16_t http_server_port(const struct http_server *s)
{
	return s->port;
}

void http_server_stats(struct http_server *s, struct http_stats *ret)
{
	unsigned retired = 0;

	pthread_mutex_lock(&s->lock);
	for (struct tls_pair *p = s->oldest; p && p != s->current; p = p->newer)
		retired++;
	ret->open = s->open;
	ret->answers_held = s->held;
	pthread_mutex_unlock(&s->lock);
	ret->tls_retired = retired;
	ret->connections = atomic_load(&s->n_connections);
	ret->requests = atomic_load(&s->n_requests);
	ret->cut = atomic_load(&s->n_cut);
	ret->refused = atomic_load(&s->n_refused);
	ret->idle_cut = atomic_load(&s->n_idle_cut);
	ret->answers_cut = atomic_load(&s->n_answers_cut);
	ret->answers_refused = atomic_load(&s->n_answers_refused);
	ret->gzipped = atomic_load(&s->n_gzipped);
}

static int limits_check(const struct http_limits *l, char *err, size_t errlen)
{
	if (l->workers < 1 || l->workers > 64)
		snprintf(err, errlen, "workers: expected 1 to 64, got %u", l->workers);
	else if (l->body_max < 1024 || l->body_max > (64u << 20))
		snprintf(err, errlen, "body limit: expected 1 KiB to 64 MiB, got %zu bytes",
			 l->body_max);
	else if (l->header_max < 4096 || l->header_max > (1u << 20))
		snprintf(err, errlen, "header limit: expected 4 KiB to 1 MiB, got %zu bytes",
			 l->header_max);
	else if (l->idle_timeout_s < 1 || l->idle_timeout_s > 3600)
		snprintf(err, errlen, "idle timeout: expected 1 to 3600 s, got %u",
			 l->idle_timeout_s);
	else if (l->request_timeout_ms < 100 || l->request_timeout_ms > 600000)
		snprintf(err, errlen, "request timeout: expected 0.1 to 600 s, got %u ms",
			 l->request_timeout_ms);
	else if (l->handshake_timeout_ms < 100 || l->handshake_timeout_ms > 60000)
		snprintf(err, errlen, "handshake timeout: expected 0.1 to 60 s, got %u ms",
			 l->handshake_timeout_ms);
	else if (l->max_connections < 1 || l->max_connections > 65536)
		snprintf(err, errlen, "connection limit: expected 1 to 65536, got %u",
			 l->max_connections);
	else if (l->answers_max < (64u << 10) || l->answers_max > ((size_t)4 << 30))
		snprintf(err, errlen, "answer limit: expected 64 KiB to 4 GiB, got %zu bytes",
			 l->answers_max);
	else
		return 0;
	return -EINVAL;
}

static void server_release(struct http_server *s)
{
	while (s->oldest) {
		struct tls_pair *p = s->oldest;

		s->oldest = p->newer;
		http_tls_pair_free(p);
	}
	pthread_cond_destroy(&s->jobs_gone);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	if (s->ca)
		gnutls_x509_trust_list_deinit(s->ca, 1);
	pthread_rwlock_destroy(&s->ca_lock);
	free(s->route_len);
	free(s->ca_pem);
	free(s->ca_file);
	free(s->cert_file);
	free(s->key_file);
	free(s);
}

int http_server_start(const struct http_server_config *cfg, struct http_server **ret, char *err,
		      size_t errlen)
{
	struct sockaddr_storage ss;
	struct http_server *s;
	unsigned sl = 0, flags;
	const char *why = NULL;
	struct tls_pair *p = NULL;
	bool unchanged;
	const union MHD_DaemonInfo *di;
	int r;

	if (the_server) {
		snprintf(err, errlen, "one server per process");
		return -EBUSY;
	}
	if ((r = http_dl_load(err, errlen)) < 0)
		return r;
	if ((r = limits_check(&cfg->limits, err, errlen)) < 0)
		return r;
	if (http_listen_parse(cfg->listen, &ss, &sl, &why) < 0) {
		snprintf(err, errlen, "listen address %s: %s", cfg->listen, why);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->jobs_gone, NULL);
	pthread_rwlock_init(&s->ca_lock, NULL);
	s->lim = cfg->limits;
	s->routes = cfg->routes;
	s->n_routes = cfg->n_routes;
	s->route_len = calloc(cfg->n_routes ? cfg->n_routes : 1, sizeof(*s->route_len));
	if (!s->route_len) {
		server_release(s);
		return -ENOMEM;
	}
	s->userdata = cfg->userdata;
	s->log = cfg->log;
	if (cfg->client_ca_file && !cfg->cert_file) {
		snprintf(err, errlen,
			 "client certificates need TLS: a client CA without a certificate");
		server_release(s);
		return -EINVAL;
	}
	if (!cfg->cert_file != !cfg->key_file) {
		snprintf(err, errlen, "a certificate needs its key and a key its certificate");
		server_release(s);
		return -EINVAL;
	}
	if (cfg->cert_file) {
		s->cert_file = strdup(cfg->cert_file);
		s->key_file = strdup(cfg->key_file);
		if (!s->cert_file || !s->key_file) {
			server_release(s);
			return -ENOMEM;
		}
		if (cfg->client_ca_file) {
			s->ca_file = strdup(cfg->client_ca_file);
			if (!s->ca_file || (r = ca_reload(s, err, errlen)) == -ENOMEM) {
				server_release(s);
				return -ENOMEM;
			}
			if (r < 0) {
				server_release(s);
				return -EINVAL;
			}
		}
		r = load_pair(s, &p, &unchanged, err, errlen);
		if (r < 0 || !p) {
			server_release(s);
			/* unreadable, missing or mismatched: the caller's input, not a runtime failure */
			return r == -ENOMEM ? r : -EINVAL;
		}
		p->gen = s->gen = 1;
		s->oldest = s->current = p;
	}
	the_server = s;

	/* plain HTTP: no handshake, so a connection is held to the idle + request timeout from
	 * accept (conn_watch_tls finds no TLS session) and make_room never finds one to cut */
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG |
		MHD_ALLOW_SUSPEND_RESUME | (s->cert_file ? MHD_USE_TLS : 0);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6 |
			 (IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr)
				  ? MHD_USE_DUAL_STACK
				  : 0);
	{
		struct MHD_OptionItem opts[] = {
			/* first, or MHD says so on stderr past us */
			{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s },
			{ MHD_OPTION_SOCK_ADDR, 0, &ss },
			/* ours is kept in make_room(); MHD's, above it, only bounds the sockets
			 * shut down and not yet freed (each worker thread gets its share) */
			{ MHD_OPTION_CONNECTION_LIMIT,
			  (intptr_t)s->lim.max_connections * 2 + s->lim.workers, NULL },
			{ MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->lim.max_per_ip, NULL },
			{ MHD_OPTION_CONNECTION_TIMEOUT, s->lim.idle_timeout_s, NULL },
			{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)s->lim.header_max, NULL },
			{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s },
			{ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, s },
			{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_request_done, s },
			{ s->lim.workers > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END,
			  s->lim.workers, NULL },
			{ MHD_OPTION_END, 0, NULL },
			{ MHD_OPTION_END, 0, NULL },
			{ MHD_OPTION_END, 0, NULL },
		};
		size_t n = ELEMENTSOF(opts) - 3;

		if (s->lim.workers <= 1)
			n--; /* the pool's row ends the list: the TLS rows go in its place */
		if (s->cert_file) {
			opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
							     (void *)cert_callback };
			/* TLS 1.2 and 1.3 only: the API server speaks both */
			opts[n++] = (struct MHD_OptionItem){
				MHD_OPTION_HTTPS_PRIORITIES, 0,
				(void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
			};
		}
		opts[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };

		s->mhd = MHD_start_daemon(flags, 0, on_accept, s, on_request, s, MHD_OPTION_ARRAY,
					  opts, MHD_OPTION_END);
	}
	if (!s->mhd) {
		r = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot serve on %s: %s", cfg->listen,
			 r == -EADDRINUSE ? "the address is in use" : strerror(-r));
		the_server = NULL;
		server_release(s);
		return r;
	}
	di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : 0;
	if (pthread_create(&s->reaper, NULL, reaper_main, s) == 0)
		s->reaper_running = true;
	else
		slog(s, HTTP_LOG_WARNING,
		     "no reaper thread: slow clients are held to the idle timeout only");
	*ret = s;
	return 0;
}

void http_server_stop(struct http_server *s, unsigned grace_ms)
{
	unsigned n;

	if (!s || !s->mhd)
		return;
	atomic_store(&s->draining, true);
	if (grace_ms) {
		int64_t until = now_ms() + grace_ms;
		unsigned busy = atomic_load(&s->inflight);

		if (busy)
			slog(s, HTTP_LOG_INFO,
			     "stopping: up to %u ms for %u requests in progress; new connections are "
			     "closed at accept",
			     grace_ms, busy);
		while (atomic_load(&s->inflight) > 0 && now_ms() < until)
			usleep(10000);
	}
	atomic_store(&s->closing, true);
	if (atomic_load(&s->n_drain_refused))
		slog(s, HTTP_LOG_INFO, "new connections closed at accept while stopping: %llu",
		     (unsigned long long)atomic_load(&s->n_drain_refused));
	n = jobs_abandon(s);
	if (n)
		slog(s, HTTP_LOG_INFO,
		     "stopping with %u requests whose handlers still run: their connections closed",
		     n);
	MHD_stop_daemon(s->mhd);
	s->mhd = NULL;
	/* the handlers use what the caller frees once this returns */
	pthread_mutex_lock(&s->lock);
	if (s->n_threads)
		slog(s, HTTP_LOG_INFO, "waiting for %u handlers to return", s->n_threads);
	while (s->n_threads)
		pthread_cond_wait(&s->jobs_gone, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->reaper_running) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->reaper, NULL);
		s->reaper_running = false;
	}
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	http_server_stop(s, 0);
	if (the_server == s)
		the_server = NULL;
	server_release(s);
}
