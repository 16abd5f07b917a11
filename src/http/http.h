/* SPDX-License-Identifier: Apache-2.0 */
/* A small HTTPS (or plain HTTP, for a Prometheus scrape on the node) server behind an interface of our own, over libmicrohttpd (HTTP/1.1, keep-alive,
 * a fixed pool of worker threads) and GnuTLS. The webhook deals in these plain structs and never
 * sees an MHD or GnuTLS type, as the plugin never sees gRPC.
 *
 * What it promises, whatever the clients do:
 *   - a fixed number of worker threads, each serving its share of the connections; a route's
 *     handler that may wait runs on a thread of its own (http_route.own_thread), so that it
 *     never holds a worker's other connections (a liveness probe);
 *   - at most limits.max_connections connections (and max_per_ip from one address); when they
 *     are all taken, a new connection closes the oldest one that is not being served: first
 *     one still in its TLS handshake, then one idle between requests (or, on plain HTTP, one
 *     that never sent a byte), then one whose request's headers are still coming; it is closed
 *     at once only when every connection has a request being answered. Never left waiting in
 *     the listen queue, where clients holding every slot with idle sockets would block all the
 *     others;
 *   - at most limits.answers_max bytes of answers at once, over all connections: an answer
 *     being built counts its route's previous answer's size, one built or being sent its own.
 *     A new answer that would pass the bound closes the connections whose answers have waited
 *     longest on their clients (a client that asks and never reads), oldest first; when the
 *     answers in the way are all still being built, the request is answered 503 with
 *     Retry-After. One answer alone always goes, whatever its size. Per connection, MHD reads
 *     the next request only once an answer is sent: one answer and header_max bytes each;
 *   - request line and headers within limits.header_max bytes, bodies within limits.body_max
 *     (413 past it, before the handler runs);
 *   - every connection makes progress or is closed: limits.handshake_timeout_ms from accept to
 *     the end of the TLS handshake, limits.idle_timeout_s between requests,
 *     limits.request_timeout_ms from a request's first line to the end of its answer (a slow
 *     writer or a slow reader is cut there), and idle + request timeout for the first line of
 *     the next request (a client trickling it byte by byte);
 *   - the certificate and key are re-read by http_server_reload_tls() and swapped without
 *     dropping a connection: handshakes after the swap get the new pair, connections that
 *     started before it keep theirs until they close.
 */
#ifndef RDMAK_HTTP_HTTP_H
#define RDMAK_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_server;

struct http_request {
	const char *method;
	const char *path;	   /* without the query string */
	const char *content_type;  /* NULL when absent */
	const char *accept;	   /* the Accept header; NULL when absent */
	const char *authorization; /* the Authorization header; NULL when absent */
	const char *body;	   /* NUL-terminated (the NUL is not counted in body_len) */
	size_t body_len;
};

struct http_response {
	unsigned status;
	unsigned retry_after_s;	  /* a Retry-After header (with 503, 429); 0: none */
	const char *content_type; /* static text; NULL: "text/plain; charset=utf-8" */
	char *body;		  /* malloc'd; the server frees it */
	size_t body_len;
	/* The answer goes gzip'd (Content-Encoding: gzip, zlib's fastest level) to a request whose
	 * Accept-Encoding takes gzip (http_accept_gzip), and says Vary: Accept-Encoding either
	 * way. The handler builds it plain; it is compressed once built, and from then on its
	 * compressed bytes are what answers_max counts. */
	bool gzip;
};

/* Fills resp (status 0 counts as 200) and returns 0; a negative errno is answered with 500.
 * Runs on a worker thread (or its own, http_route.own_thread), concurrently with other calls of
 * the same handler. */
typedef int (*http_handler_fn)(void *userdata, const struct http_request *req,
			       struct http_response *resp);

struct http_route {
	const char *path;
	const char *method; /* "GET" routes answer HEAD too */
	http_handler_fn handler;
	/* The handler runs on a thread of its own, started per request, and the worker thread
	 * serves its other connections meanwhile: for a handler that may wait (a scrape whose read
	 * does not return). false: on the worker thread, which answers nobody else until it
	 * returns. http_server_stop waits for such threads to return. */
	bool own_thread;
};

/* One element of a header list with quality values (RFC 9110 12.4.2): Accept's media ranges,
 * Accept-Encoding's codings. */
struct http_qlist_elem {
	const char *name; /* "gzip", "text/plain", "*": name_len bytes, not NUL-terminated */
	size_t name_len;
	unsigned q; /* its weight in thousandths, 0..1000; 1000 when it gives none */
};

/* The next element of the list at *pos (a header's value, NUL-terminated) that can be read, and
 * *pos past it; false at the end. An element is a token, or token "/" token, with parameters
 * (5.6.6); a parameter named q (either case) is its weight, a qvalue (up to three decimals,
 * 0 to 1). Elements that cannot be read (no name, a malformed parameter, a weight that is no
 * qvalue or given twice, an unclosed quote) are skipped as if absent, as are empty ones. The
 * other parameters are not given: no caller needs them. */
bool http_qlist_next(const char **pos, struct http_qlist_elem *ret);
/* Whether e is name ("gzip", "application/openmetrics-text"), compared without case as RFC
 * 9110 compares codings and media types. */
bool http_qlist_is(const struct http_qlist_elem *e, const char *name);

/* Whether an Accept-Encoding header's value (RFC 9110 12.5.3; NULL when absent) takes gzip:
 * "gzip" or "x-gzip" (or, when neither is named, "*") with a q above 0, and not below a q the
 * client gave "identity". An element that cannot be read is ignored; no header: no. */
bool http_accept_gzip(const char *value);

struct http_limits {
	unsigned workers;	       /* threads; 1..64 */
	size_t body_max;	       /* bytes of request body */
	size_t header_max;	       /* bytes of request line + headers (per connection memory) */
	unsigned idle_timeout_s;       /* a keep-alive connection idle this long is closed */
	unsigned request_timeout_ms;   /* see above */
	unsigned handshake_timeout_ms; /* from accept to the end of the TLS handshake; 100..60000 */
	unsigned max_connections;
	unsigned max_per_ip; /* 0: no limit */
	size_t answers_max;  /* bytes of answers held at once (see above); 64 KiB..4 GiB */
};

enum http_log_level { HTTP_LOG_ERROR, HTTP_LOG_WARNING, HTTP_LOG_INFO, HTTP_LOG_DEBUG };
typedef void (*http_log_fn)(void *userdata, enum http_log_level level, const char *msg);

struct http_server_config {
	const char
		*listen; /* "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (every address); port 0: any */
	const char *cert_file; /* PEM: the certificate, then its chain; NULL: plain HTTP (no TLS) */
	const char *key_file;  /* PEM: the private key, unencrypted; NULL with cert_file */
	/* PEM: one or more CA certificates. With it every TLS client must present a certificate
	 * that one of them signed (TLS client authentication, checked in the handshake: a client
	 * without one, or with another CA's, never reaches a handler). Re-read with the key pair
	 * by http_server_reload_tls(). NULL: no client certificate asked for. TLS only. */
	const char *client_ca_file;
	struct http_limits limits;
	const struct http_route *routes;
	size_t n_routes;
	void *userdata;	 /* handed to the handlers and to log */
	http_log_fn log; /* may be NULL; called from any thread */
};

/* Defaults a caller starts from. */
#define HTTP_DEFAULT_LIMITS                                                                        \
	((struct http_limits){ .workers = 4,                                                       \
			       .body_max = 3u << 20,                                               \
			       .header_max = 32u << 10,                                            \
			       .idle_timeout_s = 60,                                               \
			       .request_timeout_ms = 10000,                                        \
			       .max_connections = 256,                                             \
			       .max_per_ip = 0,                                                    \
			       .answers_max = 64u << 20,                                           \
			       .handshake_timeout_ms = 5000 })

/* Parse "ADDR:PORT" as http_server_config.listen takes it; -EINVAL with a reason in why. */
int http_listen_parse(const char *s, void *sockaddr_storage, unsigned *ret_len, const char **why);

/* Load the key pair and listen. Errors come back with a sentence in err: -EINVAL for a bad address,
 * limits or key pair (unreadable, missing, not PEM, key not the certificate's), another -errno when
 * it cannot listen (-EADDRINUSE). The server serves until http_server_free(). */
int http_server_start(const struct http_server_config *cfg, struct http_server **ret, char *err,
		      size_t errlen);

/* Re-read cert_file and key_file, and client_ca_file. 0: unchanged (same bytes, or a plain HTTP
 * server), 1: swapped (new handshakes use the new pair or CAs), <0: refused, err says why, and
 * what was running stays (a refused CA file does not hold back a good key pair, nor the reverse). */
int http_server_reload_tls(struct http_server *s, char *err, size_t errlen);

/* The port it listens on (the one the kernel chose for port 0). */
uint16_t http_server_port(const struct http_server *s);

/* A sentence about the pair in use: "CN=..., expires 2026-01-01T00:00:00Z" (static per server,
 * valid until the next reload); "plain HTTP" without TLS. */
const char *http_server_tls_summary(const struct http_server *s);

struct http_stats {
	uint64_t connections; /* accepted since start */
	uint64_t requests;    /* answered */
	uint64_t cut;	      /* connections closed for being too slow (a handshake past its
				 * timeout, or still in it when a new client needed the slot) */
	uint64_t refused;     /* closed at accept: every slot taken by a request being answered */
	uint64_t idle_cut;    /* idle connections closed to make room for a new one */
	uint64_t answers_cut; /* connections closed mid-answer to make room for a new answer */
	uint64_t
		answers_refused; /* requests answered 503: answers_max held by answers being built */
	uint64_t gzipped;     /* answers sent gzip'd (routes with gzip, to clients that take it) */
	size_t answers_held;  /* bytes of answers now */
	unsigned open;	      /* connections now */
	unsigned tls_retired; /* superseded key pairs still held by their connections */
};
void http_server_stats(struct http_server *s, struct http_stats *ret);

/* Close each new connection as it is accepted, let requests in progress finish (up to grace_ms),
 * then close everything: a connection whose handler still runs on its own thread is closed
 * without an answer, and this returns once every such handler has returned (a handler stuck in
 * a read holds it there). */
void http_server_stop(struct http_server *s, unsigned grace_ms);
/* Stops (without grace) if still running, and frees. NULL is fine. */
void http_server_free(struct http_server *s);

#endif
