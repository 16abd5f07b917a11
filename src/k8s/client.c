/* SPDX-License-Identifier: Apache-2.0 */
/* The API server's client: kubeconfig or in-cluster credentials, JSON calls, watches. A token
 * from a file (in a pod: the service account's, which the kubelet rotates about every hour) is
 * read again at every call. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "doc/yaml.h"
#include "httpc/httpc.h"
#include "k8s/client.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"

#define KUBECONFIG_MAX	   (1u << 20)
#define TOKEN_MAX	   (64u << 10)
#define PEM_MAX		   (1u << 20)
#define DEFAULT_TIMEOUT_MS 10000
/* the events of a watch: an object of ours is a ResourceClaim or a ResourceSlice */
#define EVENT_MAX (8u << 20)

struct k8s_client {
	struct httpc_target t;
	char *host, *port, *prefix; /* prefix: the server URL's path ("" or "/k8s") */
	char server[300];
	char *ca, *cert, *key; /* PEM */
	size_t ca_len, cert_len, key_len;
	char *ca_name;
	char *token;	  /* a fixed token; NULL */
	char *token_file; /* read at every call; NULL */
};

/* "https://host[:port][/prefix]": host and port apart, brackets off an IPv6 literal. */
static int parse_server(struct k8s_client *c, const char *url, char *err, size_t errlen)
{
	const char *h, *end, *colon;

	if (!str_startswith(url, "https://")) {
		snprintf(err, errlen, "server %s: not an https:// URL", url);
		return -EINVAL;
	}
	h = url + strlen("https://");
	end = h + strcspn(h, "/");
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb) {
			snprintf(err, errlen, "server %s: no ']' after an IPv6 address", url);
			return -EINVAL;
		}
		c->host = strndup(h + 1, (size_t)(rb - h - 1));
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		c->host = strndup(h, (size_t)((colon ? colon : end) - h));
	}
	c->port = colon ? strndup(colon + 1, (size_t)(end - colon - 1)) : strdup("443");
	c->prefix = strdup(*end ? end : "");
	if (!c->host || !c->port || !c->prefix)
		return -ENOMEM;
	if (!c->host[0] || !c->port[0] || strspn(c->port, "0123456789") != strlen(c->port)) {
		snprintf(err, errlen, "server %s: no host, or a port that is not a number", url);
		return -EINVAL;
	}
	/* the prefix is pasted before every path */
	while (*c->prefix && c->prefix[strlen(c->prefix) - 1] == '/')
		c->prefix[strlen(c->prefix) - 1] = '\0';
	snprintf(c->server, sizeof(c->server), "%s", url);
	return 0;
}

static int read_file(const char *base_dir, const char *path, size_t max, char **ret, size_t *len,
		     const char *what, char *err, size_t errlen)
{
	_cleanup_free_ char *full = NULL;
	int r;

	if (path[0] != '/' && base_dir && asprintf(&full, "%s/%s", base_dir, path) < 0)
		return -ENOMEM;
	r = fileio_read_at(AT_FDCWD, full ? full : path, max, ret, len);
	if (r < 0)
		snprintf(err, errlen, "%s %s: %s", what, full ? full : path,
			 r == -EFBIG ? "too large" : strerror(-r));
	return r;
}

/* ---- kubeconfig ----------------------------------------------------------------------------- */

struct kc_cluster {
	const char *server, *ca_file, *ca_data;
	bool insecure;
};

struct kc_user {
	const char *token, *token_file, *cert_file, *cert_data, *key_file, *key_data;
};

static const struct dispatch_field cluster_fields[] = {
	DISPATCH_FIELD("server", JSON_STRING, NULL, offsetof(struct kc_cluster, server),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	DISPATCH_FIELD("certificate-authority", JSON_STRING, NULL,
		       offsetof(struct kc_cluster, ca_file), DISPATCH_NONEMPTY),
	DISPATCH_FIELD("certificate-authority-data", JSON_STRING, NULL,
		       offsetof(struct kc_cluster, ca_data), DISPATCH_NONEMPTY),
	DISPATCH_FIELD("insecure-skip-tls-verify", DISPATCH_BOOL, NULL,
		       offsetof(struct kc_cluster, insecure), 0),
	DISPATCH_REFUSE("proxy-url", "rdmak talks to the API server directly"),
	DISPATCH_REFUSE("tls-server-name", "the certificate must name the server's host"),
	{},
};

static const struct dispatch_field user_fields[] = {
	DISPATCH_FIELD("token", JSON_STRING, NULL, offsetof(struct kc_user, token),
		       DISPATCH_NONEMPTY),
	DISPATCH_FIELD("tokenFile", JSON_STRING, NULL, offsetof(struct kc_user, token_file),
		       DISPATCH_NONEMPTY),
	DISPATCH_FIELD("client-certificate", JSON_STRING, NULL, offsetof(struct kc_user, cert_file),
		       DISPATCH_NONEMPTY),
	DISPATCH_FIELD("client-certificate-data", JSON_STRING, NULL,
		       offsetof(struct kc_user, cert_data), DISPATCH_NONEMPTY),
	DISPATCH_FIELD("client-key", JSON_STRING, NULL, offsetof(struct kc_user, key_file),
		       DISPATCH_NONEMPTY),
	DISPATCH_FIELD("client-key-data", JSON_STRING, NULL, offsetof(struct kc_user, key_data),
		       DISPATCH_NONEMPTY),
	DISPATCH_REFUSE("exec", "rdmak runs no credential plugin: give a token or a client "
				"certificate"),
	DISPATCH_REFUSE("auth-provider", "rdmak runs no credential plugin: give a token or a "
					 "client certificate"),
	DISPATCH_REFUSE("username", "the API server takes no basic authentication"),
	DISPATCH_REFUSE("password", "the API server takes no basic authentication"),
	{},
};

/* The entry of list (clusters, users, contexts) named name: its inner object (`key`). */
static json_t *named(struct dispatch_ctx *dc, json_t *doc, const char *list, const char *name,
		     const char *key, char *path, size_t pathlen)
{
	json_t *a = json_object_get(doc, list), *e;
	size_t i;

	json_array_foreach(a, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n && !strcmp(n, name) && json_is_object(json_object_get(e, key))) {
			snprintf(path, pathlen, "%s[%zu].%s", list, i, key);
			return json_object_get(e, key);
		}
	}
	dispatch_fail(dc, list, "no entry named \"%s\" with a %s", name, key);
	return NULL;
}

/* PEM from a -data field (base64) or a file. */
static int pem(const char *data, const char *file, const char *dir, const char *path, char **ret,
	       size_t *len, char *err, size_t errlen)
{
	if (data) {
		if (str_base64_decode(data, ret, len) < 0) {
			snprintf(err, errlen, "%s-data: not base64", path);
			return -EINVAL;
		}
		return 0;
	}
	return read_file(dir, file, PEM_MAX, ret, len, path, err, errlen);
}

static int from_kubeconfig(struct k8s_client *c, const char *file, char *err, size_t errlen)
{
	_cleanup_free_ char *text = NULL, *dir = NULL;
	struct dispatch_ctx dc = { .err = err, .errlen = errlen };
	struct kc_cluster cl = { 0 };
	struct kc_user u = { 0 };
	json_t *doc = NULL, *ctx, *obj;
	const char *current, *cluster, *user;
	char path[64], perr[256];
	size_t len = 0;
	int r;

	if ((r = read_file(NULL, file, KUBECONFIG_MAX, &text, &len, "kubeconfig", err, errlen)) < 0)
		return r;
	if ((r = doc_parse(text, len, &doc, NULL, perr, sizeof(perr))) < 0) {
		snprintf(err, errlen, "%s", perr);
		return r;
	}
	dir = strdup(file);
	if (!dir) {
		r = -ENOMEM;
		goto out;
	}
	*(strrchr(dir, '/') ? strrchr(dir, '/') : dir) = '\0';
	current = json_string_value(json_object_get(doc, "current-context"));
	if (!current) {
		r = dispatch_fail(&dc, "current-context", "missing: which context to use");
		goto out;
	}
	ctx = named(&dc, doc, "contexts", current, "context", path, sizeof(path));
	cluster = json_string_value(json_object_get(ctx, "cluster"));
	user = json_string_value(json_object_get(ctx, "user"));
	if (!ctx || !cluster || !user) {
		r = ctx ? dispatch_fail(&dc, path, "no cluster or user") : -EINVAL;
		goto out;
	}
	if (!(obj = named(&dc, doc, "clusters", cluster, "cluster", path, sizeof(path))) ||
	    (r = dispatch_run(&dc, path, obj, cluster_fields, DISPATCH_UNKNOWN_ALLOW, &cl)) < 0) {
		r = r < 0 ? r : -EINVAL;
		goto out;
	}
	if (cl.insecure) {
		r = dispatch_fail(&dc, "insecure-skip-tls-verify",
				  "refused: the server's certificate is always verified");
		goto out;
	}
	if (!(obj = named(&dc, doc, "users", user, "user", path, sizeof(path))) ||
	    (r = dispatch_run(&dc, path, obj, user_fields, DISPATCH_UNKNOWN_ALLOW, &u)) < 0) {
		r = r < 0 ? r : -EINVAL;
		goto out;
	}
	if ((r = parse_server(c, cl.server, err, errlen)) < 0)
		goto out;
	if ((cl.ca_data || cl.ca_file) &&
	    (r = pem(cl.ca_data, cl.ca_file, dir[0] ? dir : ".", "certificate-authority", &c->ca,
		     &c->ca_len, err, errlen)) < 0)
		goto out;
	c->ca_name = strdup(cl.ca_file ? cl.ca_file : "certificate-authority-data");
	if (!!(u.cert_data || u.cert_file) != !!(u.key_data || u.key_file)) {
		r = dispatch_fail(&dc, path, "client-certificate and client-key go together");
		goto out;
	}
	if ((u.cert_data || u.cert_file) &&
	    ((r = pem(u.cert_data, u.cert_file, dir[0] ? dir : ".", "client-certificate", &c->cert,
		      &c->cert_len, err, errlen)) < 0 ||
	     (r = pem(u.key_data, u.key_file, dir[0] ? dir : ".", "client-key", &c->key,
		      &c->key_len, err, errlen)) < 0))
		goto out;
	if (u.token && !(c->token = strdup(u.token)))
		r = -ENOMEM;
	if (u.token_file && !u.token) {
		if (u.token_file[0] != '/' && dir[0])
			r = asprintf(&c->token_file, "%s/%s", dir, u.token_file) < 0 ? -ENOMEM : 0;
		else if (!(c->token_file = strdup(u.token_file)))
			r = -ENOMEM;
	}
out:
	json_decref(doc);
	return r < 0 ? r : 0;
}

static int in_cluster(struct k8s_client *c, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"),
		   *port = getenv("KUBERNETES_SERVICE_PORT");
	char url[300];
	int r;

	if (!host || !host[0]) {
		snprintf(err, errlen,
			 "not in a pod (KUBERNETES_SERVICE_HOST is unset): give "
			 "--kubeconfig");
		return -ENOENT;
	}
	snprintf(url, sizeof(url), strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
		 port && port[0] ? port : "443");
	if ((r = parse_server(c, url, err, errlen)) < 0)
		return r;
	if ((r = read_file(NULL, K8S_SERVICE_ACCOUNT_DIR "/ca.crt", PEM_MAX, &c->ca, &c->ca_len,
			   "the service account's CA", err, errlen)) < 0)
		return r;
	c->ca_name = strdup(K8S_SERVICE_ACCOUNT_DIR "/ca.crt");
	c->token_file = strdup(K8S_SERVICE_ACCOUNT_DIR "/token");
	return c->ca_name && c->token_file ? 0 : -ENOMEM;
}

int k8s_client_new(const char *kubeconfig, struct k8s_client **ret, char *err, size_t errlen)
{
	struct k8s_client *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = kubeconfig ? from_kubeconfig(c, kubeconfig, err, errlen) : in_cluster(c, err, errlen);
	if (r < 0) {
		k8s_client_free(c);
		return r;
	}
	c->t = (struct httpc_target){
		.host = c->host,
		.port = c->port,
		.ca_pem = c->ca,
		.ca_len = c->ca_len,
		.ca_name = c->ca_name,
		.cert_pem = c->cert,
		.cert_len = c->cert_len,
		.key_pem = c->key,
		.key_len = c->key_len,
		.timeout_ms = DEFAULT_TIMEOUT_MS,
	};
	*ret = c;
	return 0;
}

void k8s_client_free(struct k8s_client *c)
{
	if (!c)
		return;
	free(c->host);
	free(c->port);
	free(c->prefix);
	free(c->ca);
	free(c->cert);
	free(c->key);
	free(c->ca_name);
	free(c->token);
	free(c->token_file);
	free(c);
}

const char *k8s_client_server(const struct k8s_client *c)
{
	return c->server;
}

void k8s_client_set_timeout(struct k8s_client *c, unsigned ms)
{
	c->t.timeout_ms = ms;
}

/* "Authorization: Bearer ...\r\n" or "" (malloc'd). */
static int auth_header(struct k8s_client *c, char **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *tok = NULL;
	size_t len = 0;
	int r;

	if (c->token_file) {
		r = read_file(NULL, c->token_file, TOKEN_MAX, &tok, &len, "token file", err,
			      errlen);
		if (r < 0)
			return r;
		str_rstrip(tok);
	} else if (c->token && !(tok = strdup(c->token))) {
		return -ENOMEM;
	}
	if (tok && (!tok[0] || strpbrk(tok, "\r\n"))) {
		snprintf(err, errlen, "the token is empty or not one line");
		return -EINVAL;
	}
	if (asprintf(ret, tok ? "Authorization: Bearer %s\r\n" : "%s", tok ? tok : "") < 0)
		return -ENOMEM;
	return 0;
}

int k8s_client_call(struct k8s_client *c, const char *method, const char *path, const json_t *body,
		    int *status, json_t **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *auth = NULL, *full = NULL, *text = NULL;
	struct httpc_answer a = { 0 };
	int r;

	if ((r = auth_header(c, &auth, err, errlen)) < 0)
		return r;
	if (asprintf(&full, "%s%s", c->prefix, path) < 0)
		return -ENOMEM;
	if (body && !(text = json_dumps(body, JSON_COMPACT)))
		return -ENOMEM;
	r = httpc_request(&c->t, method, full, auth, text, text ? strlen(text) : 0, &a, err,
			  errlen);
	if (r < 0)
		return r;
	*status = a.status;
	if (ret)
		*ret = json_loadb(a.body, a.len, 0, NULL);
	httpc_answer_clear(&a);
	return 0;
}

/* ---- watches -------------------------------------------------------------------------------- */

struct watch {
	int (*fn)(void *ud, const char *type, json_t *obj);
	void *ud;
	int status;
	char *line; /* the event so far: one JSON object per line */
	size_t len, cap;
	char *err;
	size_t errlen;
};

static int watch_head(void *ud, int status)
{
	struct watch *w = ud;

	w->status = status;
	return 0;
}

static int watch_event(struct watch *w)
{
	json_error_t je;
	json_t *ev = json_loadb(w->line, w->len, 0, &je);
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	int r;

	if (!type || !json_is_object(obj)) {
		snprintf(w->err, w->errlen, "a watch event that is not {type, object}: %s",
			 ev ? "fields missing" : je.text);
		json_decref(ev);
		return -EPROTO;
	}
	r = w->fn(w->ud, type, obj);
	json_decref(ev);
	return r;
}

static int watch_data(void *ud, const char *buf, size_t len)
{
	struct watch *w = ud;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n') {
			int r = w->status == 200 && w->len ? watch_event(w) : 0;

			if (r < 0)
				return r;
			if (w->status == 200)
				w->len = 0;
			continue;
		}
		if (w->len + 1 >= w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 65536;
			char *n;

			if (cap > EVENT_MAX) {
				snprintf(w->err, w->errlen, "a watch event larger than %u bytes",
					 EVENT_MAX);
				return -EPROTO;
			}
			if (!(n = realloc(w->line, cap)))
				return -ENOMEM;
			w->line = n;
			w->cap = cap;
		}
		w->line[w->len++] = buf[i];
	}
	return 0;
}

int k8s_client_watch(struct k8s_client *c, const char *path, int stop_fd, unsigned idle_ms,
		     int (*fn)(void *ud, const char *type, json_t *obj), void *ud, int *status,
		     char *err, size_t errlen)
{
	static const struct httpc_stream_ops ops = { watch_head, watch_data };
	_cleanup_free_ char *auth = NULL, *full = NULL;
	struct watch w = { .fn = fn, .ud = ud, .err = err, .errlen = errlen };
	int r;

	if ((r = auth_header(c, &auth, err, errlen)) < 0)
		return r;
	if (asprintf(&full, "%s%s", c->prefix, path) < 0)
		return -ENOMEM;
	r = httpc_stream(&c->t, "GET", full, auth, stop_fd, idle_ms, &ops, &w, err, errlen);
	*status = w.status;
	if (r >= 0 && w.status != 200) {
		json_t *a = json_loadb(w.line ? w.line : "", w.len, 0, NULL);

		snprintf(err, errlen, "HTTP %d: %s", w.status, k8s_status_message(a));
		json_decref(a);
		r = -EPROTO;
	} else if (r >= 0 && w.len) {
		r = watch_event(&w); /* a last line without its newline */
	}
	free(w.line);
	return r;
}

const char *k8s_status_message(const json_t *answer)
{
	const char *m = json_string_value(json_object_get(answer, "message"));

	return m ? m : "";
}
