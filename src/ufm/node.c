/* SPDX-License-Identifier: Apache-2.0 */
/* The node's fabrics file (ufm.h): which fabric managers this node talks to, with what
 * credentials, and where its partition ledger lives. One table over src/dispatch; the file and
 * every secret it names are read by fileio_read_owned. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>

#include "attach/attach.h"
#include "dispatch/dispatch.h"
#include "k8s/names.h"
#include "ufm/ufm.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define FABRICS_MAX	 (1u << 20)
#define FABRICS_PER_NODE 64

struct reader {
	struct ufm_fabrics *f;
	struct ufm_fabric *cur;
	double timeout;
};

static int read_url(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	/* the credentials travel in every request: never in the clear */
	if (strncmp(s, "https://", 8) != 0 || !s[8] || s[8] == '/' || strlen(s) > UFM_URL_MAX ||
	    strpbrk(s, " \t\r\n?#@"))
		return dispatch_fail(
			d, path,
			"\"%.64s\" is not an https:// URL of the UFM (host[:port][/prefix], no "
			"user, query or fragment)",
			s);
	return dispatch_strdup(d, path, v, true, &rd->cur->ufm);
}

static int abs_path(struct dispatch_ctx *d, const char *path, json_t *v, char **ret)
{
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);
	size_t n;

	if (r < 0)
		return r;
	n = strlen(s);
	if (s[0] != '/' || n >= 4096 || strstr(s, "/../") || (n >= 3 && !strcmp(s + n - 3, "/..")))
		return dispatch_fail(d, path, "\"%.64s\" is not an absolute path without \"..\"",
				     s);
	return dispatch_strdup(d, path, v, true, ret);
}

static int read_credentials(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return abs_path(d, path, v, &((struct reader *)t)->cur->credentials);
}

static int read_ca(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return abs_path(d, path, v, &((struct reader *)t)->cur->ca_file);
}

static int read_timeout(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	double s = json_number_value(v);

	/* each call holds its fabric's lock: a minute is already more than a pod start should
	 * wait for one */
	if (!(s >= 0.01 && s <= 60))
		return dispatch_fail(d, path, "%g is out of range (0.01 to 60 seconds)", s);
	rd->cur->timeout_ms = (unsigned)(s * 1000 + 0.5);
	return 0;
}

static const struct dispatch_field fabric_fields[] = {
	DISPATCH_FIELD_WHY("ufm", JSON_STRING, read_url, 0, DISPATCH_MANDATORY,
			   "the fabric manager's https:// URL"),
	DISPATCH_FIELD_WHY("credentials", JSON_STRING, read_credentials, 0, DISPATCH_MANDATORY,
			   "a directory with files username and password, or token"),
	DISPATCH_FIELD("ca", JSON_STRING, read_ca, 0, 0),
	DISPATCH_FIELD("timeoutSeconds", DISPATCH_NUMBER, read_timeout, 0, 0),
	{},
};

static int read_fabrics(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	const char *name;
	json_t *one;
	size_t i = 0;

	if (json_object_size(v) > FABRICS_PER_NODE)
		return dispatch_fail(d, path, "more than %d fabrics", FABRICS_PER_NODE);
	rd->f->v = calloc(json_object_size(v) + 1, sizeof(*rd->f->v));
	if (!rd->f->v)
		return -ENOMEM;
	json_object_foreach(v, name, one)
	{
		char p[DISPATCH_PATH_MAX];
		const char *why = NULL;
		int r;

		dispatch_path_key(p, sizeof(p), path, name);
		/* the name becomes a folder of the ledger and is what a network names */
		if (!k8s_dns1123_label(name, &why))
			return dispatch_fail(d, p, "not a fabric name: %s", why);
		if (!json_is_object(one))
			return dispatch_fail(d, p, "expected an object, got %s",
					     dispatch_type_name(one));
		rd->cur = &rd->f->v[i];
		snprintf(rd->cur->name, sizeof(rd->cur->name), "%s", name);
		rd->cur->timeout_ms = UFM_DEFAULT_TIMEOUT_MS;
		rd->f->n = ++i;
		if ((r = dispatch_run(d, p, one, fabric_fields, DISPATCH_UNKNOWN_REFUSE, rd)) < 0)
			return r;
	}
	return 0;
}

static int read_state_dir(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return abs_path(d, path, v, &((struct reader *)t)->f->state_dir);
}

static const struct dispatch_field file_fields[] = {
	DISPATCH_FIELD("stateDir", JSON_STRING, read_state_dir, 0, 0),
	DISPATCH_FIELD_WHY("fabrics", JSON_OBJECT, read_fabrics, 0, DISPATCH_MANDATORY,
			   "the fabric managers by name"),
	{},
};

int ufm_fabrics_parse(const char *buf, size_t len, struct ufm_fabrics *ret, char *err,
		      size_t errlen)
{
	struct ufm_fabrics f = { 0 };
	struct reader rd = { .f = &f };
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
	if (r == 0 && !f.state_dir && !(f.state_dir = strdup(ATTACH_DEFAULT_DIR)))
		r = -ENOMEM;
	if (r < 0) {
		ufm_fabrics_clear(&f);
		return r;
	}
	*ret = f;
	return 0;
}

const char *ufm_fabrics_default_path(void)
{
	const char *path = getenv("RDMAK_FABRICS"); /* UFM_FABRICS_ENV */

	return path && *path ? path : UFM_FABRICS_FILE;
}

int ufm_fabrics_load(const char *path, struct ufm_fabrics *ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	char why[UFM_ERR_MAX];
	size_t len;
	int r;

	if (!path)
		path = ufm_fabrics_default_path();
	if ((r = fileio_read_owned(AT_FDCWD, path, FABRICS_MAX, &buf, &len, err, errlen)) < 0)
		return r;
	if ((r = ufm_fabrics_parse(buf, len, ret, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		return r;
	}
	if (!(ret->path = strdup(path))) {
		ufm_fabrics_clear(ret);
		return -ENOMEM;
	}
	return 0;
}

void ufm_fabrics_clear(struct ufm_fabrics *f)
{
	for (size_t i = 0; f->v && i < f->n; i++) {
		free(f->v[i].ufm);
		free(f->v[i].credentials);
		free(f->v[i].ca_file);
	}
	free(f->v);
	free(f->path);
	free(f->state_dir);
	*f = (struct ufm_fabrics){ 0 };
}

const struct ufm_fabric *ufm_fabrics_find(const struct ufm_fabrics *f, const char *name)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (!strcmp(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

const struct ufm_fabric *ufm_fabrics_find_url(const struct ufm_fabrics *f, const char *url)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (!strcmp(f->v[i].ufm, url))
			return &f->v[i];
	return NULL;
}

void ufm_fabrics_names(const struct ufm_fabrics *f, char *out, size_t n)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; f && i < f->n && o < n; i++)
		o += (size_t)snprintf(out + o, n - o, "%s%s", i ? ", " : "", f->v[i].name);
	if (!out[0])
		snprintf(out, n, "none");
}
