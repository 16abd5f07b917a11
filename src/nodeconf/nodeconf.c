/* SPDX-License-Identifier: Apache-2.0 */
/* The node's CNI settings file (nodeconf.h): one table over src/dispatch, read by
 * fileio_read_owned (a regular file of root's that nobody else may write, never through a link). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "dispatch/dispatch.h"
#include "k8s/names.h"
#include "nodeconf/nodeconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

#define NODECONF_MAX (1u << 20)

struct reader {
	struct nodeconf *n;
	struct nodeconf_etcd *cur;
};

static bool has_dotdot(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

/* An absolute path without "..": a host path a root process opens or writes beneath. */
static int abs_path(struct dispatch_ctx *d, const char *path, json_t *v, char **ret)
{
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	if (s[0] != '/' || strlen(s) >= 4096 || has_dotdot(s))
		return dispatch_fail(d, path, "\"%.64s\" is not an absolute path without \"..\"",
				     s);
	return dispatch_strdup(d, path, v, true, ret);
}

static int data_dir_one(struct dispatch_ctx *d, const char *path, json_t *v, size_t i, void *ud)
{
	struct nodeconf *n = ud;
	int r = abs_path(d, path, v, &n->data_dirs[i]);

	n->n_data_dirs += r == 0;
	return r;
}

static int read_data_dirs(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct nodeconf *n = ((struct reader *)t)->n;

	if (json_array_size(v) == 0 || json_array_size(v) > NODECONF_DIRS_MAX)
		return dispatch_fail(d, path, "expected 1 to %d folders", NODECONF_DIRS_MAX);
	strv_free(n->data_dirs);
	n->n_data_dirs = 0;
	if (!(n->data_dirs = calloc(json_array_size(v) + 1, sizeof(char *))))
		return -ENOMEM;
	return dispatch_array(d, path, v, NODECONF_DIRS_MAX, data_dir_one, n);
}

static int endpoint_one(struct dispatch_ctx *d, const char *path, json_t *v, size_t i, void *ud)
{
	struct nodeconf_etcd *e = ud;
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	/* the etcd client checks the address itself (etcd_client_new); here only what would make
	 * it another kind of thing */
	if (strpbrk(s, " \t\r\n,"))
		return dispatch_fail(d, path, "\"%.64s\" is not one endpoint (host:port or a URL)",
				     s);
	if ((r = dispatch_strdup(d, path, v, true, &e->endpoints[i])) == 0)
		e->n_endpoints++;
	return r;
}

static int read_endpoints(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct nodeconf_etcd *e = ((struct reader *)t)->cur;

	if (json_array_size(v) == 0 || json_array_size(v) > 64)
		return dispatch_fail(d, path, "expected 1 to 64 endpoints");
	if (!(e->endpoints = calloc(json_array_size(v) + 1, sizeof(char *))))
		return -ENOMEM;
	return dispatch_array(d, path, v, 64, endpoint_one, e);
}

static int read_prefix(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct nodeconf_etcd *e = ((struct reader *)t)->cur;
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	if (s[0] != '/' || strlen(s) > 256)
		return dispatch_fail(d, path, "\"%.64s\" does not start with '/'", s);
	return dispatch_strdup(d, path, v, true, &e->prefix);
}

static int read_tls_file(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct nodeconf_etcd *e = ((struct reader *)t)->cur;
	const char *key = strrchr(path, '.') + 1;

	return abs_path(d, path, v,
			!strcmp(key, "ca")     ? &e->tls_ca
			: !strcmp(key, "cert") ? &e->tls_cert
					       : &e->tls_key);
}

static const struct dispatch_field tls_fields[] = {
	DISPATCH_FIELD("ca", JSON_STRING, read_tls_file, 0, 0),
	DISPATCH_FIELD("cert", JSON_STRING, read_tls_file, 0, 0),
	DISPATCH_FIELD("key", JSON_STRING, read_tls_file, 0, 0),
	{},
};

static int read_tls(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct nodeconf_etcd *e = ((struct reader *)t)->cur;
	int r = dispatch_run(d, path, v, tls_fields, DISPATCH_UNKNOWN_REFUSE, t);

	if (r == 0 && !e->tls_cert != !e->tls_key)
		return dispatch_fail(d, path, "\"cert\" and \"key\" go together");
	return r;
}

static const struct dispatch_field etcd_fields[] = {
	DISPATCH_FIELD_WHY("endpoints", JSON_ARRAY, read_endpoints, 0, DISPATCH_MANDATORY,
			   "the members' addresses"),
	DISPATCH_FIELD("prefix", JSON_STRING, read_prefix, 0, 0),
	DISPATCH_FIELD("tls", JSON_OBJECT, read_tls, 0, 0),
	{},
};

static int read_etcd(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	const char *name;
	json_t *one;

	if (json_object_size(v) > NODECONF_STORES_MAX)
		return dispatch_fail(d, path, "more than %d stores", NODECONF_STORES_MAX);
	if (!(rd->n->etcd = calloc(json_object_size(v) + 1, sizeof(*rd->n->etcd))))
		return -ENOMEM;
	json_object_foreach(v, name, one)
	{
		char p[DISPATCH_PATH_MAX];
		const char *why = NULL;
		int r;

		dispatch_path_key(p, sizeof(p), path, name);
		/* what a network names, and a folder of the installer's (/etc/rdmak/etcd/NAME) */
		if (!k8s_dns1123_label(name, &why))
			return dispatch_fail(d, p, "not a store name: %s", why);
		if (!json_is_object(one))
			return dispatch_fail(d, p, "expected an object, got %s",
					     dispatch_type_name(one));
		rd->cur = &rd->n->etcd[rd->n->n_etcd++];
		snprintf(rd->cur->name, sizeof(rd->cur->name), "%s", name);
		if ((r = dispatch_run(d, p, one, etcd_fields, DISPATCH_UNKNOWN_REFUSE, rd)) < 0)
			return r;
		if (!rd->cur->prefix && !(rd->cur->prefix = strdup(NODECONF_PREFIX)))
			return -ENOMEM;
	}
	return 0;
}

static int read_n_path(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct nodeconf *n = ((struct reader *)t)->n;
	const char *key = path;

	return abs_path(d, path, v,
			!strcmp(key, "sysfs")	   ? &n->sysfs
			: !strcmp(key, "stateDir") ? &n->state_dir
						   : &n->log_dir);
}

static const struct dispatch_field file_fields[] = {
	DISPATCH_FIELD("sysfs", JSON_STRING, read_n_path, 0, 0),
	DISPATCH_FIELD("stateDir", JSON_STRING, read_n_path, 0, 0),
	DISPATCH_FIELD("logDir", JSON_STRING, read_n_path, 0, 0),
	DISPATCH_FIELD("dataDirs", JSON_ARRAY, read_data_dirs, 0, 0),
	DISPATCH_FIELD("etcd", JSON_OBJECT, read_etcd, 0, 0),
	{},
};

static int set_default(char **p, const char *v)
{
	return *p || (*p = strdup(v)) ? 0 : -ENOMEM;
}

/* What the file did not say, as a node without it has it. */
static int fill_defaults(struct nodeconf *n)
{
	if (set_default(&n->sysfs, NODECONF_SYSFS) < 0 ||
	    set_default(&n->state_dir, NODECONF_STATE_DIR) < 0 ||
	    set_default(&n->log_dir, NODECONF_LOG_DIR) < 0)
		return -ENOMEM;
	if (!n->data_dirs) {
		n->data_dirs = calloc(3, sizeof(char *));
		if (!n->data_dirs || !(n->data_dirs[0] = strdup(NODECONF_DATA_DIR)) ||
		    !(n->data_dirs[1] = strdup(NODECONF_HL_DIR)))
			return -ENOMEM;
		n->n_data_dirs = 2;
	}
	return 0;
}

int nodeconf_parse(const char *buf, size_t len, struct nodeconf *ret, char *err, size_t errlen)
{
	struct nodeconf n = { 0 };
	struct reader rd = { .n = &n };
	struct dispatch_ctx d = { .err = err, .errlen = errlen };
	json_error_t je;
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	int r;

	if (!doc || !json_is_object(doc)) {
		snprintf(err, errlen, "not a JSON object%s%s", doc ? "" : ": ", doc ? "" : je.text);
		json_decref(doc);
		return -EINVAL;
	}
	r = dispatch_run(&d, "", doc, file_fields, DISPATCH_UNKNOWN_REFUSE, &rd);
	json_decref(doc);
	if (r == 0)
		r = fill_defaults(&n);
	if (r < 0) {
		nodeconf_clear(&n);
		return r;
	}
	*ret = n;
	return 0;
}

/* The owner's path from the environment, or NULL. */
static const char *env_path(void)
{
	const char *path = getenv("RDMAK_CNI_CONFIG"); /* NODECONF_ENV */

	return path && *path ? path : NULL;
}

const char *nodeconf_default_path(void)
{
	return env_path() ? env_path() : NODECONF_FILE;
}

int nodeconf_defaults(struct nodeconf *ret)
{
	struct nodeconf n = { 0 };

	if (fill_defaults(&n) < 0 || !(n.path = strdup(NODECONF_FILE))) {
		nodeconf_clear(&n);
		return -ENOMEM;
	}
	*ret = n;
	return 0;
}

int nodeconf_load(const char *path, struct nodeconf *ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	char why[NODECONF_ERR_MAX];
	bool named = path || env_path();
	struct nodeconf n = { 0 };
	size_t len;
	int r;

	if (!path)
		path = nodeconf_default_path();
	r = fileio_read_owned(AT_FDCWD, path, NODECONF_MAX, &buf, &len, err, errlen);
	if (r == -ENOENT && !named) {
		if ((r = nodeconf_defaults(&n)) < 0)
			return r;
		*ret = n;
		return 0;
	}
	if (r < 0)
		return r;
	if ((r = nodeconf_parse(buf, len, &n, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		return r;
	}
	if (!(n.path = strdup(path))) {
		nodeconf_clear(&n);
		return -ENOMEM;
	}
	n.found = true;
	*ret = n;
	return 0;
}

void nodeconf_clear(struct nodeconf *n)
{
	for (size_t i = 0; n->etcd && i < n->n_etcd; i++) {
		strv_free(n->etcd[i].endpoints);
		free(n->etcd[i].prefix);
		free(n->etcd[i].tls_ca);
		free(n->etcd[i].tls_cert);
		free(n->etcd[i].tls_key);
	}
	free(n->etcd);
	strv_free(n->data_dirs);
	free(n->path);
	free(n->sysfs);
	free(n->state_dir);
	free(n->log_dir);
	*n = (struct nodeconf){ 0 };
}

const struct nodeconf_etcd *nodeconf_etcd_find(const struct nodeconf *n, const char *name)
{
	for (size_t i = 0; n && i < n->n_etcd; i++)
		if (!strcmp(n->etcd[i].name, name))
			return &n->etcd[i];
	return NULL;
}

static bool all_in(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	for (size_t i = 0; i < na; i++) {
		bool found = false;

		for (size_t j = 0; j < nb && !found; j++)
			found = !strcmp(a[i], b[j]);
		if (!found)
			return false;
	}
	return true;
}

static bool same_set(char *const *a, size_t na, const char *const *b, size_t nb)
{
	return all_in((const char *const *)a, na, b, nb) &&
	       all_in(b, nb, (const char *const *)a, na);
}

const struct nodeconf_etcd *nodeconf_etcd_find_endpoints(const struct nodeconf *n,
							 const char *const *endpoints, size_t n_ep,
							 const char *prefix)
{
	if (!prefix)
		prefix = NODECONF_PREFIX;
	for (size_t i = 0; n && i < n->n_etcd; i++)
		if (!strcmp(n->etcd[i].prefix, prefix) &&
		    same_set(n->etcd[i].endpoints, n->etcd[i].n_endpoints, endpoints, n_ep))
			return &n->etcd[i];
	return NULL;
}

void nodeconf_etcd_names(const struct nodeconf *n, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; n && i < n->n_etcd && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s", i ? ", " : "", n->etcd[i].name);
	if (!out[0])
		snprintf(out, len, "none");
}

int nodeconf_log_folder(const char *log_dir, const char *log_file, char *err, size_t errlen)
{
	const char *slash = strrchr(log_file, '/');
	_cleanup_free_ char *dir = slash ? strndup(log_file, (size_t)(slash - log_file)) : NULL;
	int fd;

	if (!dir)
		return -ENOMEM;
	fd = fileio_open_dir_beneath(log_dir, *dir ? dir : "/", true, 0755, err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
