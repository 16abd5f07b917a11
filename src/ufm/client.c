/* SPDX-License-Identifier: Apache-2.0 */
/* UFM's PKey GUIDs REST API, the endpoints NVIDIA's "UFM Enterprise REST API Guide" names as
 * current (under /ufmRest/resources/; the /ufmRest/actions/ ones are deprecated there, and
 * ib-kubernetes still removes GUIDs through actions/remove_guids_from_pkey):
 *   GET    <prefix>/app/ufm_version
 *   POST   <prefix>/resources/pkeys                 {"pkey","guids","membership","index0","ip_over_ib"}
 *   DELETE <prefix>/resources/pkeys/<pkey>/guids/<guid>,<guid>
 *   GET    <prefix>/resources/pkeys/<pkey>?guids_data=true
 * <prefix> is /ufmRest with HTTP Basic (username and password), /ufmRestV3 with an access token
 * sent as "Authorization: Basic <token>" (UFM's token-based authentication). UFM's pkey is the
 * partition's 15 bits; the full/limited bit (0x8000 in a port's pkey table) is "membership". */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "ufm/ufm.h"
#include "httpc/httpc.h"
#include "ufm/internal.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define SECRET_MAX 4096
/* a CA bundle: the system's whole trust store is about 200 KiB */
#define CA_MAX (1u << 20)

struct ufm_client {
	struct httpc_target t;
	char *host, *port, *path; /* path: the URL's own prefix ("" or "/ufm"), then /ufmRest[V3] */
	const char *api;
	char *auth;   /* "Authorization: Basic ...\r\n" */
	char *ca_pem; /* the fabric's CA bundle, read as the credentials are; NULL: the system's */
	size_t ca_len;
	char err[UFM_ERR_MAX];
};

static void b64(const unsigned char *in, size_t n, char *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
}

/* One file of the credentials directory, its trailing newline dropped (kubectl create secret
 * --from-file keeps the file's). 0 when absent. A symbolic link, a FIFO (which would block ADD
 * forever), a device, or a file another user owns or may write is refused by name. */
static int secret_file(int dfd, const char *dir, const char *name, char **ret, char *err,
		       size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	char why[UFM_ERR_MAX - 64];
	size_t len;
	int r;

	r = fileio_read_owned(dfd, name, SECRET_MAX, &buf, &len, why, sizeof(why));
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "credentials %s: %s", dir, why);
		return r;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	if (len == 0 || memchr(buf, '\0', len) || strpbrk(buf, "\r\n")) {
		snprintf(err, errlen, "credentials %s/%s: empty, or more than one line", dir, name);
		return -EINVAL;
	}
	*ret = TAKE_PTR(buf);
	return 1;
}

static int load_auth(struct ufm_client *c, const char *dir, char *err, size_t errlen)
{
	_cleanup_free_ char *token = NULL, *user = NULL, *pass = NULL, *pair = NULL, *enc = NULL;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (dfd < 0) {
		r = -errno;
		snprintf(err, errlen, "credentials %s: %s", dir, strerror(-r));
		return r;
	}
	if ((r = secret_file(dfd, dir, "token", &token, err, errlen)) < 0)
		return r;
	if (r > 0) {
		c->api = "/ufmRestV3";
		return asprintf(&c->auth, "Authorization: Basic %s\r\n", token) < 0 ? -ENOMEM : 0;
	}
	if ((r = secret_file(dfd, dir, "username", &user, err, errlen)) < 0 ||
	    (r > 0 && (r = secret_file(dfd, dir, "password", &pass, err, errlen)) < 0))
		return r;
	if (!user || !pass) {
		snprintf(err, errlen,
			 "credentials %s: neither a token file nor username and password files",
			 dir);
		return -ENOENT;
	}
	if (asprintf(&pair, "%s:%s", user, pass) < 0 || !(enc = malloc(strlen(pair) / 3 * 4 + 5)))
		return -ENOMEM;
	b64((const unsigned char *)pair, strlen(pair), enc);
	c->api = "/ufmRest";
	return asprintf(&c->auth, "Authorization: Basic %s\r\n", enc) < 0 ? -ENOMEM : 0;
}

static int load_ca(struct ufm_client *c, const char *path, char *err, size_t errlen)
{
	char why[UFM_ERR_MAX - 16];
	int r;

	if (!path)
		return 0;
	r = fileio_read_owned(AT_FDCWD, path, CA_MAX, &c->ca_pem, &c->ca_len, why, sizeof(why));
	if (r < 0)
		snprintf(err, errlen, "ca %s", why);
	return r;
}

/* https://host[:port][/path], host possibly [v6] */
static int parse_url(struct ufm_client *c, const char *url, char *err, size_t errlen)
{
	const char *h = url + strlen("https://"), *end, *slash;

	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			goto bad;
		c->host = strndup(h + 1, (size_t)(end - h - 1));
		end++;
	} else {
		end = h + strcspn(h, ":/");
		c->host = strndup(h, (size_t)(end - h));
	}
	if (!c->host)
		return -ENOMEM;
	slash = strchr(end, '/');
	if (*end == ':') {
		size_t n = (size_t)((slash ? slash : end + strlen(end)) - end - 1);
		c->port = strndup(end + 1, n);
		if (!c->port)
			return -ENOMEM;
		if (n == 0 || n > 5 || strspn(c->port, "0123456789") != n || atoi(c->port) == 0 ||
		    atoi(c->port) > 65535)
			goto bad;
	} else if (*end && *end != '/') {
		goto bad;
	} else if (!(c->port = strdup("443"))) {
		return -ENOMEM;
	}
	c->path = strdup(slash ? slash : "");
	if (!c->path)
		return -ENOMEM;
	if (c->path[0] && c->path[strlen(c->path) - 1] == '/')
		c->path[strlen(c->path) - 1] = '\0';
	return 0;
bad:
	snprintf(err, errlen, "ufm \"%s\": not https://host[:port][/path]", url);
	return -EINVAL;
}

int ufm_client_new(const struct ufm_fabric *f, struct ufm_client **ret, char *err, size_t errlen)
{
	struct ufm_client *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	if ((r = parse_url(c, f->ufm, err, errlen)) < 0 ||
	    (r = load_auth(c, f->credentials, err, errlen)) < 0 ||
	    (r = load_ca(c, f->ca_file, err, errlen)) < 0) {
		ufm_client_free(c);
		return r;
	}
	c->t = (struct httpc_target){ .host = c->host,
				      .port = c->port,
				      .ca_pem = c->ca_pem,
				      .ca_len = c->ca_len,
				      .ca_name = f->ca_file,
				      .timeout_ms = f->timeout_ms ? f->timeout_ms
								  : UFM_DEFAULT_TIMEOUT_MS };
	*ret = c;
	return 0;
}

void ufm_client_free(struct ufm_client *c)
{
	if (!c)
		return;
	free(c->host);
	free(c->port);
	free(c->path);
	free(c->auth);
	free(c->ca_pem);
	free(c);
}

const char *ufm_client_error(const struct ufm_client *c)
{
	return c->err;
}

/* One call; 2xx is 0, the rest an -errno with c->err saying what UFM answered. 404 is -ENOENT. */
static int call(struct ufm_client *c, const char *method, const char *rel, const char *body,
		struct httpc_answer *ret)
{
	_cleanup_free_ char *path = NULL;
	char why[UFM_ERR_MAX - 128];
	struct httpc_answer a = { 0 };
	int r;

	if (asprintf(&path, "%s%s%s", c->path, c->api, rel) < 0)
		return -ENOMEM;
	r = httpc_request(&c->t, method, path, c->auth, body, body ? strlen(body) : 0, &a, why,
			  sizeof(why));
	if (r < 0) {
		snprintf(c->err, sizeof(c->err), "UFM https://%s:%s: %s", c->host, c->port, why);
		return r;
	}
	if (a.status >= 200 && a.status < 300) {
		if (ret)
			*ret = a;
		else
			httpc_answer_clear(&a);
		return 0;
	}
	snprintf(c->err, sizeof(c->err), "UFM https://%s:%s: %s %s: HTTP %d%s%.160s", c->host,
		 c->port, method, path, a.status, a.len ? ": " : "", a.len ? a.body : "");
	r = a.status == 401 || a.status == 403 ? -EACCES
	    : a.status == 404		       ? -ENOENT
	    : a.status >= 500		       ? -EIO
					       : -EINVAL;
	httpc_answer_clear(&a);
	return r;
}

int ufm_version(struct ufm_client *c, char *out, size_t n)
{
	struct httpc_answer a = { 0 };
	json_t *o, *v;
	int r = call(c, "GET", "/app/ufm_version", NULL, &a);

	if (r < 0)
		return r;
	o = json_loadb(a.body, a.len, 0, NULL);
	v = json_object_get(o, "ufm_release_version");
	if (json_is_string(v))
		snprintf(out, n, "%s", json_string_value(v));
	else
		snprintf(c->err, sizeof(c->err),
			 "UFM https://%s:%s: version: no ufm_release_version in the answer",
			 c->host, c->port);
	r = json_is_string(v) ? 0 : -EPROTO;
	json_decref(o);
	httpc_answer_clear(&a);
	return r;
}

void ufm_guid_format(uint64_t guid, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, guid);
}

int ufm_guid_parse(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	int digits = 0;

	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		s += 2;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;
		if (*s == ':')
			continue;
		if (d < 0 || ++digits > 16)
			return -EINVAL;
		v = v << 4 | (unsigned)d;
	}
	if (digits != 16)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int guid_list(const uint64_t *guids, size_t n, const char *sep, const char *quote,
		     char **ret)
{
	size_t cap = n * 24 + 1, o = 0;
	char *s = malloc(cap);

	if (!s)
		return -ENOMEM;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char g[17];
		ufm_guid_format(guids[i], g);
		o += (size_t)snprintf(s + o, cap - o, "%s%s%s%s", i ? sep : "", quote, g, quote);
	}
	*ret = s;
	return 0;
}

int ufm_add(struct ufm_client *c, uint16_t pkey, const uint64_t *guids, size_t n,
	    const struct ufm_join *j)
{
	_cleanup_free_ char *list = NULL, *body = NULL;
	int r;

	if ((pkey & 0x7fff) == 0 || (pkey & 0x7fff) == 0x7fff || n == 0)
		return -EINVAL;
	if ((r = guid_list(guids, n, ",", "\"", &list)) < 0)
		return r;
	if (asprintf(
		    &body,
		    "{\"pkey\":\"0x%04x\",\"guids\":[%s],\"membership\":\"%s\",\"index0\":%s,\"ip_over_ib\":%s}",
		    pkey & 0x7fff, list, j->limited ? "limited" : "full",
		    j->index0 ? "true" : "false", j->ip_over_ib ? "true" : "false") < 0)
		return -ENOMEM;
	return call(c, "POST", "/resources/pkeys", body, NULL);
}

int ufm_remove(struct ufm_client *c, uint16_t pkey, const uint64_t *guids, size_t n)
{
	_cleanup_free_ char *list = NULL, *rel = NULL;
	int r;

	if (n == 0)
		return 0;
	if ((r = guid_list(guids, n, ",", "", &list)) < 0)
		return r;
	if (asprintf(&rel, "/resources/pkeys/0x%04x/guids/%s", pkey & 0x7fff, list) < 0)
		return -ENOMEM;
	r = call(c, "DELETE", rel, NULL, NULL);
	/* no such pkey: nothing of ours is in it */
	return r == -ENOENT ? 0 : r;
}

int ufm_members_parse(const char *body, size_t len, struct ufm_member **ret, size_t *ret_n)
{
	_cleanup_free_ struct ufm_member *v = NULL;
	json_t *o = json_loadb(body, len, 0, NULL), *guids = json_object_get(o, "guids");
	size_t n = 0;

	/* an empty object is what some UFM versions answer for a pkey they do not know */
	if (json_is_object(o) && !guids) {
		json_decref(o);
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (!json_is_array(guids)) {
		json_decref(o);
		return -EPROTO;
	}
	if (!(v = calloc(json_array_size(guids) + 1, sizeof(*v)))) {
		json_decref(o);
		return -ENOMEM;
	}
	for (size_t i = 0; i < json_array_size(guids); i++) {
		json_t *e = json_array_get(guids, i),
		       *g = json_is_object(e) ? json_object_get(e, "guid") : e;
		const char *m = json_string_value(json_object_get(e, "membership"));

		/* an entry that names no GUID this client could have sent is not one of ours */
		if (!json_is_string(g) || ufm_guid_parse(json_string_value(g), &v[n].guid) < 0)
			continue;
		v[n].limited = m && !strcmp(m, "limited");
		v[n].index0 = json_is_true(json_object_get(e, "index0"));
		n++;
	}
	json_decref(o);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 1;
}

int ufm_members(struct ufm_client *c, uint16_t pkey, struct ufm_member **ret, size_t *ret_n)
{
	char rel[64];
	struct httpc_answer a = { 0 };
	int r;

	snprintf(rel, sizeof(rel), "/resources/pkeys/0x%04x?guids_data=true", pkey & 0x7fff);
	r = call(c, "GET", rel, NULL, &a);
	if (r == -ENOENT) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (r < 0)
		return r;
	r = ufm_members_parse(a.body, a.len, ret, ret_n);
	httpc_answer_clear(&a);
	if (r == -EPROTO)
		snprintf(c->err, sizeof(c->err),
			 "UFM https://%s:%s: pkey 0x%04x: no guids list in the answer", c->host,
			 c->port, pkey & 0x7fff);
	return r;
}

bool ufm_error_unanswered(int err)
{
	switch (err < 0 ? -err : err) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EPIPE: return true;
	default: return false;
	}
}
