/* SPDX-License-Identifier: Apache-2.0 */
/* The client: endpoints, credentials, and one unary call with failover over the gRPC C core.
 *
 * Each call is synchronous: it starts one batch (send the request, half-close, receive the
 * answer and the status) on the client's own completion queue and plucks that batch's tag.
 * gRPC guarantees the batch completes by the call's deadline, so nothing here waits longer
 * than timeout_ms per endpoint tried.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "etcd/internal.h"
#include "log/log.h"
#include "util/cleanup.h"
#include "util/fileio.h"

/* A PEM file larger than this is not a certificate bundle. */
#define ETCD_PEM_MAX (1u << 20)
/* How much of one endpoint's gRPC status text goes into the error message. */
#define ETCD_DETAIL_MAX 240

static const char *const method_path[ETCD_M__MAX] = {
	[ETCD_M_RANGE] = "/etcdserverpb.KV/Range",
	[ETCD_M_PUT] = "/etcdserverpb.KV/Put",
	[ETCD_M_DELETE_RANGE] = "/etcdserverpb.KV/DeleteRange",
	[ETCD_M_TXN] = "/etcdserverpb.KV/Txn",
	[ETCD_M_STATUS] = "/etcdserverpb.Maintenance/Status",
	[ETCD_M_LEASE_GRANT] = "/etcdserverpb.Lease/LeaseGrant",
	[ETCD_M_LEASE_TTL] = "/etcdserverpb.Lease/LeaseTimeToLive",
};

struct etcd_endpoint {
	char *given;	  /* as configured, for messages */
	char *target;	  /* host:port, for gRPC */
	grpc_channel *ch; /* created on first use */
};

struct etcd_client {
	struct etcd_endpoint *eps;
	size_t n_eps;
	size_t cur;
	unsigned timeout_ms;
	bool tls;
	grpc_channel_credentials *creds;
	grpc_completion_queue *cq;
	char *err;			  /* NULL: "" */
	unsigned long calls[ETCD_M__MAX]; /* requests made, per method (failover counts once) */
};

/* --- gRPC's own log lines ----------------------------------------------------------------- */

/* gRPC core writes its errors to stderr through one process-wide hook without user data, and
 * a TLS failure's best words are often only there ("sslv3 alert bad certificate", while the
 * call's status says "Endpoint read failed"). So the client takes the hook (kubelet.c does
 * the same for the device plugin; no role uses both) and keeps the last error line, which a
 * failed attempt adds to its message when it says more than the status. Nothing is printed
 * but at the logger's debug level. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_last[ETCD_DETAIL_MAX + 1];
static unsigned log_seq;
static bool log_hooked;

static void log_capture(gpr_log_func_args *args)
{
	const char *m = args->message;

	/* at debug level (an IPAM config's logLevel), gRPC's own lines are logged as they come */
	log_debug("grpc: %s", m);
	if (args->severity < GPR_LOG_SEVERITY_ERROR)
		return;
	pthread_mutex_lock(&log_lock);
	/* Of several lines about one failure, an OpenSSL reason says the most: keep it. */
	if (strstr(m, "routines::") || !strstr(log_last, "routines::") || log_seq == 0) {
		snprintf(log_last, sizeof(log_last), "%s", m);
		log_seq++;
	}
	pthread_mutex_unlock(&log_lock);
}

static void log_hook(void)
{
	pthread_mutex_lock(&log_lock);
	if (!log_hooked) {
		gpr_set_log_function(log_capture);
		log_hooked = true;
	}
	pthread_mutex_unlock(&log_lock);
}

static unsigned log_mark(void)
{
	unsigned seq;

	pthread_mutex_lock(&log_lock);
	seq = log_seq;
	log_last[0] = '\0';
	pthread_mutex_unlock(&log_lock);
	return seq;
}

/* The line gRPC logged since mark, malloc'd, or NULL. */
static char *log_since(unsigned mark)
{
	char *line = NULL;

	pthread_mutex_lock(&log_lock);
	if (log_seq != mark && log_last[0])
		line = strdup(log_last);
	pthread_mutex_unlock(&log_lock);
	return line;
}

/* --- errors ------------------------------------------------------------------------------- */

static void set_error(struct etcd_client *c, char *msg)
{
	free(c->err);
	c->err = msg;
}

int etcd_fail(struct etcd_client *c, int r, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	set_error(c, msg);
	return r;
}

const char *etcd_client_error(const struct etcd_client *c)
{
	return c && c->err ? c->err : "";
}

/* etcd's answers that another member may not give: the member is cut off from the leader,
 * mid-election, or gone; gRPC's own for a dead or hung connection. */
static bool status_retryable(grpc_status_code code)
{
	return code == GRPC_STATUS_UNAVAILABLE || code == GRPC_STATUS_DEADLINE_EXCEEDED;
}

static int errno_from_status(grpc_status_code code)
{
	switch (code) {
	case GRPC_STATUS_INVALID_ARGUMENT: return -EINVAL;
	case GRPC_STATUS_OUT_OF_RANGE: /* "mvcc: required revision has been compacted" */
		return -ERANGE;
	case GRPC_STATUS_RESOURCE_EXHAUSTED: /* "mvcc: database space exceeded" */ return -ENOSPC;
	case GRPC_STATUS_PERMISSION_DENIED:
	case GRPC_STATUS_UNAUTHENTICATED: return -EACCES;
	case GRPC_STATUS_UNIMPLEMENTED: return -EOPNOTSUPP;
	case GRPC_STATUS_NOT_FOUND: return -ENOENT;
	case GRPC_STATUS_UNAVAILABLE:
	case GRPC_STATUS_DEADLINE_EXCEEDED: return -EHOSTUNREACH;
	default: return -EIO;
	}
}

/* --- configuration ------------------------------------------------------------------------ */

enum scheme { SCHEME_NONE, SCHEME_HTTP, SCHEME_HTTPS };

/* "http://h:p", "https://h:p", "h:p", "[v6]:p"; a trailing "/" is allowed, a path is not. */
static int parse_endpoint(const char *s, enum scheme *ret_scheme, char **ret_target)
{
	enum scheme sch = SCHEME_NONE;
	const char *hp = s, *colon, *end;
	char *t;
	size_t len;
	unsigned long port;
	char *pe;

	if (strncmp(s, "http://", 7) == 0)
		sch = SCHEME_HTTP, hp = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		sch = SCHEME_HTTPS, hp = s + 8;
	else if (strstr(s, "://"))
		return -EPROTONOSUPPORT;
	len = strlen(hp);
	if (len > 0 && hp[len - 1] == '/')
		len--;
	end = hp + len;
	if (memchr(hp, '/', len) || len == 0 || len > 255)
		return -EINVAL;
	if (hp[0] == '[') {
		const char *rb = memchr(hp, ']', len);

		if (!rb || rb + 1 >= end || rb[1] != ':' || rb == hp + 1)
			return -EINVAL;
		colon = rb + 1;
	} else {
		colon = memrchr(hp, ':', len);
		if (!colon || colon == hp || memchr(hp, ':', (size_t)(colon - hp)))
			return -EINVAL;
	}
	if (colon + 1 >= end || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &pe, 10);
	if (errno || pe != end || port == 0 || port > 65535)
		return -EINVAL;
	t = strndup(hp, len);
	if (!t)
		return -ENOMEM;
	*ret_scheme = sch;
	*ret_target = t;
	return 0;
}

static int fail_new(char **ret_error, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_new(char **ret_error, int r, const char *fmt, ...)
{
	va_list ap;

	if (!ret_error)
		return r;
	va_start(ap, fmt);
	if (vasprintf(ret_error, fmt, ap) < 0)
		*ret_error = NULL;
	va_end(ap);
	return r;
}

/* The node's client certificate, key and CA: a root process must not read a file someone else
 * could have swapped or linked (a user's file taken for the node's key, a FIFO that never ends),
 * so each is read as the node's secrets are. */
static int read_pem(const char *what, const char *path, char **ret, char **ret_error)
{
	char why[512];
	int r = fileio_read_owned(AT_FDCWD, path, ETCD_PEM_MAX, ret, NULL, why, sizeof(why));

	if (r < 0)
		return fail_new(ret_error, r, "etcd tls: %s %s", what, why);
	return 0;
}

static int make_tls_creds(const struct etcd_config *cfg, grpc_channel_credentials **ret,
			  char **ret_error)
{
	_cleanup_free_ char *ca = NULL, *cert = NULL, *key = NULL;
	grpc_ssl_pem_key_cert_pair pair;
	int r;

	if (!!cfg->cert_file != !!cfg->key_file)
		return fail_new(
			ret_error, -EINVAL,
			"etcd tls: a client certificate needs its key and a key its certificate (%s given)",
			cfg->cert_file ? "cert only" : "key only");
	if ((cfg->ca_file && (r = read_pem("ca", cfg->ca_file, &ca, ret_error)) < 0) ||
	    (cfg->cert_file && (r = read_pem("cert", cfg->cert_file, &cert, ret_error)) < 0) ||
	    (cfg->key_file && (r = read_pem("key", cfg->key_file, &key, ret_error)) < 0))
		return r;
	if (ca && !strstr(ca, "-----BEGIN CERTIFICATE-----"))
		return fail_new(ret_error, -EINVAL, "etcd tls: ca %s: no PEM certificate in it",
				cfg->ca_file);
	if (cert && !strstr(cert, "-----BEGIN CERTIFICATE-----"))
		return fail_new(ret_error, -EINVAL, "etcd tls: cert %s: no PEM certificate in it",
				cfg->cert_file);
	if (key && !strstr(key, "PRIVATE KEY-----"))
		return fail_new(ret_error, -EINVAL, "etcd tls: key %s: no PEM private key in it",
				cfg->key_file);
	pair.private_key = key;
	pair.cert_chain = cert;
	*ret = grpc_ssl_credentials_create(ca, cert ? &pair : NULL, NULL, NULL);
	if (!*ret)
		return fail_new(ret_error, -EINVAL,
				"etcd tls: gRPC refused the CA, certificate or key");
	return 0;
}

int etcd_client_new(const struct etcd_config *cfg, struct etcd_client **ret, char **ret_error)
{
	struct etcd_client *c;
	enum scheme first = SCHEME_NONE;
	bool want_tls = cfg->ca_file || cfg->cert_file || cfg->key_file;
	int r;

	if (ret_error)
		*ret_error = NULL;
	if (cfg->n_endpoints == 0)
		return fail_new(ret_error, -EINVAL, "etcd: no endpoints");
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->eps = calloc(cfg->n_endpoints, sizeof(*c->eps));
	if (!c->eps) {
		free(c);
		return -ENOMEM;
	}
	c->n_eps = cfg->n_endpoints;
	c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : ETCD_DEFAULT_TIMEOUT_MS;
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		const char *e = cfg->endpoints[i];
		enum scheme sch;

		r = e ? parse_endpoint(e, &sch, &c->eps[i].target) : -EINVAL;
		if (r == -ENOMEM)
			goto fail;
		if (r < 0) {
			r = fail_new(
				ret_error, -EINVAL, "etcd endpoint \"%s\": %s", e ? e : "(null)",
				r == -EPROTONOSUPPORT ? "scheme is not http:// or https://"
						      : "not host:port (port 1-65535, no path)");
			goto fail;
		}
		c->eps[i].given = strdup(e);
		if (!c->eps[i].given) {
			r = -ENOMEM;
			goto fail;
		}
		if (sch == SCHEME_HTTP && want_tls) {
			r = fail_new(
				ret_error, -EINVAL,
				"etcd endpoint \"%s\": http:// with TLS files given (use https://)",
				e);
			goto fail;
		}
		if (sch != SCHEME_NONE && first != SCHEME_NONE && sch != first) {
			r = fail_new(ret_error, -EINVAL,
				     "etcd endpoint \"%s\": mixes http:// and https:// endpoints",
				     e);
			goto fail;
		}
		if (sch != SCHEME_NONE)
			first = sch;
	}
	c->tls = want_tls || first == SCHEME_HTTPS;

	grpc_init();
	log_hook();
	if (c->tls)
		r = make_tls_creds(cfg, &c->creds, ret_error);
	else
		r = (c->creds = grpc_insecure_credentials_create()) ? 0 : -ENOMEM;
	if (r < 0) {
		grpc_shutdown();
		goto fail;
	}
	c->cq = grpc_completion_queue_create_for_pluck(NULL);
	c->cur = 0; /* the first endpoint listed; failover moves on from there */
	*ret = c;
	return 0;
fail:
	for (size_t i = 0; i < c->n_eps; i++) {
		free(c->eps[i].given);
		free(c->eps[i].target);
	}
	free(c->eps);
	free(c);
	return r;
}

void etcd_client_calls(const struct etcd_client *c, struct etcd_calls *ret)
{
	*ret = (struct etcd_calls){ .range = c->calls[ETCD_M_RANGE],
				    .put = c->calls[ETCD_M_PUT],
				    .delete_range = c->calls[ETCD_M_DELETE_RANGE],
				    .txn = c->calls[ETCD_M_TXN],
				    .lease = c->calls[ETCD_M_LEASE_GRANT] +
					     c->calls[ETCD_M_LEASE_TTL] };
}

void etcd_client_free(struct etcd_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_eps; i++) {
		if (c->eps[i].ch)
			grpc_channel_destroy(c->eps[i].ch);
		free(c->eps[i].given);
		free(c->eps[i].target);
	}
	free(c->eps);
	grpc_completion_queue_shutdown(c->cq);
	while (grpc_completion_queue_pluck(c->cq, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
		       .type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(c->cq);
	grpc_channel_credentials_release(c->creds);
	grpc_shutdown();
	free(c->err);
	free(c);
}

size_t etcd_client_n_endpoints(const struct etcd_client *c)
{
	return c->n_eps;
}

const char *etcd_client_endpoint(const struct etcd_client *c, size_t i)
{
	return i < c->n_eps ? c->eps[i].given : NULL;
}

size_t etcd_client_current(const struct etcd_client *c)
{
	return c->cur;
}

/* --- one call ----------------------------------------------------------------------------- */

static grpc_channel *endpoint_channel(struct etcd_client *c, struct etcd_endpoint *ep)
{
	grpc_arg args[] = {
		/* A restarted member must be tried again soon, not after gRPC's 1 s..120 s back-off. */
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
		  .value.integer = 100 },
		/* Despite its name, gRPC's minimum time a connection attempt (TCP, TLS, HTTP/2
		 * SETTINGS) may take: at 100 ms a member slowed by a busy node failed every call at
		 * once ("timed out before receiving SETTINGS frame"). The call's deadline bounds it. */
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
		  .value.integer = (int)c->timeout_ms },
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
		  .value.integer = 1000 },
		/* We fail over ourselves, to another member; gRPC's retries would stay on this one. */
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_RETRIES, .value.integer = 0 },
		/* A whole pool's reservations in one Range can pass gRPC's 4 MiB default; etcd itself
		 * sends up to 2 GiB. Pages of etcd_range_prefix_all keep each answer far smaller. */
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
		  .value.integer = 64 << 20 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_CHANNELZ, .value.integer = 0 },
		{ .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_HTTP2_BDP_PROBE, .value.integer = 0 },
	};
	grpc_channel_args ca = { .num_args = ELEMENTSOF(args), .args = args };

	if (!ep->ch)
		ep->ch = grpc_channel_create(ep->target, c->creds, &ca);
	return ep->ch;
}

struct attempt {
	grpc_status_code status;
	char *details; /* malloc'd */
	char *logged;  /* what gRPC logged meanwhile, malloc'd or NULL */
};

static int reply_take(grpc_byte_buffer *bb, struct etcd_reply *ret)
{
	grpc_byte_buffer_reader rd;
	grpc_slice s;
	size_t len;

	if (!grpc_byte_buffer_reader_init(&rd, bb))
		return -EIO;
	s = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	len = GRPC_SLICE_LENGTH(s);
	ret->data = malloc(len ? len : 1);
	if (!ret->data) {
		grpc_slice_unref(s);
		return -ENOMEM;
	}
	memcpy(ret->data, GRPC_SLICE_START_PTR(s), len);
	ret->len = len;
	grpc_slice_unref(s);
	return 0;
}

/* One attempt on one endpoint: 0 with *ret filled, or <0 with *at saying what gRPC or etcd
 * answered. */
static int attempt(struct etcd_client *c, struct etcd_endpoint *ep, enum etcd_method m,
		   grpc_slice req, struct etcd_reply *ret, struct attempt *at)
{
	grpc_channel *ch = endpoint_channel(c, ep);
	gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
					     gpr_time_from_millis(c->timeout_ms, GPR_TIMESPAN));
	grpc_byte_buffer *out = NULL, *in = NULL;
	grpc_metadata_array init_md, trailing_md;
	grpc_slice details = grpc_empty_slice();
	grpc_op ops[6] = { 0 };
	grpc_call *call;
	grpc_event ev;
	unsigned mark;
	int r = -EIO;

	at->status = GRPC_STATUS_UNKNOWN;
	at->details = NULL;
	at->logged = NULL;
	mark = log_mark();
	if (!ch)
		return -ENOMEM;
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq,
					grpc_slice_from_static_string(method_path[m]), NULL,
					deadline, NULL);
	if (!call)
		return -ENOMEM;
	grpc_metadata_array_init(&init_md);
	grpc_metadata_array_init(&trailing_md);
	out = grpc_raw_byte_buffer_create(&req, 1);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = out;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &in;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
	ops[5].data.recv_status_on_client.status = &at->status;
	ops[5].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(call, ops, ELEMENTSOF(ops), call, NULL) != GRPC_CALL_OK)
		goto out;
	ev = grpc_completion_queue_pluck(c->cq, call, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
	if (ev.type != GRPC_OP_COMPLETE)
		goto out;
	at->details = grpc_slice_to_c_string(details);
	/* etcd answers a request whose deadline (ours, sent along) passed inside the server with
	 * its context's error as status UNKNOWN: it is our deadline, and another member may do. */
	if (at->status == GRPC_STATUS_UNKNOWN && at->details &&
	    strstr(at->details, "context deadline exceeded"))
		at->status = GRPC_STATUS_DEADLINE_EXCEEDED;
	if (at->status != GRPC_STATUS_OK)
		r = errno_from_status(at->status);
	else if (!in)
		r = -EPROTO;
	else
		r = reply_take(in, ret);
	if (r < 0)
		at->logged = log_since(mark);
out:
	if (in)
		grpc_byte_buffer_destroy(in);
	grpc_byte_buffer_destroy(out);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&init_md);
	grpc_metadata_array_destroy(&trailing_md);
	grpc_call_unref(call);
	return r;
}

static grpc_slice pack(const ProtobufCMessage *m)
{
	grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));

	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
	return s;
}

/* gRPC's text for a failed connection, "failed to connect to all addresses; last error:
 * UNKNOWN: ipv4:127.0.0.1:2379: Failed to connect to remote host: Connection refused", without
 * the parts that repeat what the message already says (the endpoint). */
static const char *tidy_details(const char *d)
{
	const char *p = strstr(d, "last error: ");

	if (!p)
		return d;
	p += strlen("last error: ");
	if (strncmp(p, "UNKNOWN: ", 9) == 0)
		p += 9;
	else if (strncmp(p, "UNAVAILABLE: ", 13) == 0)
		p += 13;
	if (strncmp(p, "ipv4:", 5) == 0 || strncmp(p, "ipv6:", 5) == 0 ||
	    strncmp(p, "unix:", 5) == 0) {
		const char *q = strstr(p, ": ");

		if (q)
			p = q + 2;
	}
	return p;
}

/* "<endpoint>: <what>" for one failed attempt, appended to *buf. */
static void describe(char **buf, const struct etcd_endpoint *ep, int r, struct attempt *at,
		     unsigned timeout_ms)
{
	char *old = *buf, *line = NULL;
	const char *what;
	char tmp[64];

	if (at->status == GRPC_STATUS_DEADLINE_EXCEEDED) {
		snprintf(tmp, sizeof(tmp), "no answer within %u ms", timeout_ms);
		what = tmp;
	} else if (at->details && at->details[0]) {
		what = tidy_details(at->details);
	} else {
		what = strerror(-r);
	}
	/* gRPC's log line, when it says what the status does not ("...: bad certificate"). */
	if (at->logged) {
		char *l = strstr(at->logged, "error:") ? strstr(at->logged, "error:") : at->logged;
		size_t n = strlen(l);

		while (n > 0 && (l[n - 1] == '.' || l[n - 1] == ' ' || l[n - 1] == '\n'))
			l[--n] = '\0';
		if (n > 0 && !strstr(what, l) &&
		    asprintf(&line, "%s%s%s: %.*s (%.*s)", old ? old : "", old ? "; " : "",
			     ep->given, ETCD_DETAIL_MAX, what, ETCD_DETAIL_MAX, l) < 0)
			line = NULL;
	}
	if (!line && asprintf(&line, "%s%s%s: %.*s", old ? old : "", old ? "; " : "", ep->given,
			      ETCD_DETAIL_MAX, what) < 0)
		line = NULL;
	if (line) {
		free(old);
		*buf = line;
	}
}

static int call_one(struct etcd_client *c, size_t i, enum etcd_method m, grpc_slice req,
		    struct etcd_reply *ret, char **tried, bool *retryable)
{
	struct attempt at;
	int r = attempt(c, &c->eps[i], m, req, ret, &at);

	*retryable = r < 0 && r != -ENOMEM && status_retryable(at.status);
	if (r < 0)
		describe(tried, &c->eps[i], r, &at, c->timeout_ms);
	free(at.details);
	free(at.logged);
	return r;
}

int etcd_call(struct etcd_client *c, enum etcd_method m, const ProtobufCMessage *req,
	      struct etcd_reply *ret)
{
	grpc_slice s = pack(req);
	_cleanup_free_ char *tried = NULL;
	bool retryable = false;
	int r = -EHOSTUNREACH;

	c->calls[m]++;

	for (size_t k = 0; k < c->n_eps; k++) {
		size_t i = (c->cur + k) % c->n_eps;

		r = call_one(c, i, m, s, ret, &tried, &retryable);
		if (r >= 0) {
			c->cur = i;
			set_error(c, NULL);
			break;
		}
		if (!retryable) {
			set_error(c, TAKE_PTR(tried));
			break;
		}
	}
	grpc_slice_unref(s);
	if (r < 0 && retryable) {
		r = -EHOSTUNREACH;
		etcd_fail(c, r, "no etcd endpoint answered (%zu tried): %s", c->n_eps,
			  tried ? tried : "");
	}
	return r;
}

int etcd_call_at(struct etcd_client *c, size_t i, enum etcd_method m, const ProtobufCMessage *req,
		 struct etcd_reply *ret)
{
	grpc_slice s;
	_cleanup_free_ char *tried = NULL;
	bool retryable;
	int r;

	if (i >= c->n_eps)
		return etcd_fail(c, -EINVAL, "no endpoint %zu (%zu configured)", i, c->n_eps);
	s = pack(req);
	c->calls[m]++;
	r = call_one(c, i, m, s, ret, &tried, &retryable);
	grpc_slice_unref(s);
	if (r < 0)
		set_error(c, TAKE_PTR(tried));
	else
		set_error(c, NULL);
	return r;
}

void etcd_reply_clear(struct etcd_reply *r)
{
	free(r->data);
	r->data = NULL;
	r->len = 0;
}
