/* SPDX-License-Identifier: Apache-2.0 */
/* The "fabric" object of a CNI network config, one table over src/dispatch:
 *   "fabric": {"ufm": "https://ufm.example.com", "credentials": "/etc/rdmak/ufm",
 *              "ca": "/etc/rdmak/ufm/ca.crt", "timeoutSeconds": 5,
 *              "membership": "full", "index0": false, "ipOverIb": true}
 * Paths are absolute (the plugin's working directory is the runtime's). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ufm/ufm.h"

struct reader {
	struct ufm_config *c;
	int membership;
	double timeout;
	bool has_timeout;
};

static int read_url(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	/* the credentials travel in every request: never in the clear */
	if (strncmp(s, "https://", 8) != 0 || !s[8] || s[8] == '/' || strlen(s) > 1024 ||
	    strpbrk(s, " \t\r\n?#@"))
		return dispatch_fail(
			d, path,
			"\"%.64s\" is not an https:// URL of the UFM (host[:port][/prefix], no "
			"user, query or fragment)",
			s);
	return dispatch_strdup(d, path, v, true, &rd->c->ufm);
}

static int read_path(struct dispatch_ctx *d, const char *path, json_t *v, char **ret)
{
	const char *s;
	int r = dispatch_string(d, path, v, true, &s);

	if (r < 0)
		return r;
	if (s[0] != '/' || strlen(s) >= 4096 || strstr(s, "/../") ||
	    !strcmp(s + strlen(s) - (strlen(s) >= 3 ? 3 : 0), "/.."))
		return dispatch_fail(d, path, "\"%.64s\" is not an absolute path without \"..\"",
				     s);
	return dispatch_strdup(d, path, v, true, ret);
}

static int read_credentials(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_path(d, path, v, &((struct reader *)t)->c->credentials);
}

static int read_ca(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_path(d, path, v, &((struct reader *)t)->c->ca_file);
}

static int read_timeout(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	struct reader *rd = t;
	double s = json_number_value(v);

	/* a CNI command waits for it: a minute is already more than a pod start should take */
	if (s < 0.01 || s > 60)
		return dispatch_fail(d, path, "%g is out of range (0.01 to 60 seconds)", s);
	rd->timeout = s;
	rd->has_timeout = true;
	return 0;
}

static int read_membership(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	static const char *const names[] = { "full", "limited", NULL };

	return dispatch_enum(d, path, v, names, &((struct reader *)t)->membership);
}

static int read_bool(struct dispatch_ctx *d, const char *path, json_t *v, bool *ret)
{
	return dispatch_bool(d, path, v, ret);
}

static int read_index0(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_bool(d, path, v, &((struct reader *)t)->c->index0);
}

static int read_ipoib(struct dispatch_ctx *d, const char *path, json_t *v, void *t)
{
	return read_bool(d, path, v, &((struct reader *)t)->c->ip_over_ib);
}

static const struct dispatch_field fabric_fields[] = {
	DISPATCH_FIELD_WHY("ufm", JSON_STRING, read_url, 0, DISPATCH_MANDATORY,
			   "the fabric manager's https:// URL"),
	DISPATCH_FIELD_WHY(
		"credentials", JSON_STRING, read_credentials, 0, DISPATCH_MANDATORY,
		"the directory of a mounted Secret with username and password, or token"),
	DISPATCH_FIELD("ca", JSON_STRING, read_ca, 0, 0),
	DISPATCH_FIELD("timeoutSeconds", DISPATCH_NUMBER, read_timeout, 0, 0),
	DISPATCH_FIELD("membership", JSON_STRING, read_membership, 0, 0),
	DISPATCH_FIELD("index0", DISPATCH_BOOL, read_index0, 0, 0),
	DISPATCH_FIELD("ipOverIb", DISPATCH_BOOL, read_ipoib, 0, 0),
	{ 0 },
};

int ufm_config_dispatch(struct dispatch_ctx *d, const char *path, json_t *v, void *target)
{
	struct ufm_config c = { .set = true,
				.ip_over_ib = true,
				.timeout_ms = UFM_DEFAULT_TIMEOUT_MS };
	struct reader rd = { .c = &c };
	int r;

	if (!json_is_object(v))
		return dispatch_fail(d, path, "expected an object, got %s", dispatch_type_name(v));
	r = dispatch_run(d, path, v, fabric_fields, DISPATCH_UNKNOWN_REFUSE, &rd);
	if (r < 0) {
		ufm_config_clear(&c);
		return r;
	}
	c.limited = rd.membership == 1;
	if (rd.has_timeout)
		c.timeout_ms = (unsigned)(rd.timeout * 1000 + 0.5);
	ufm_config_clear(target);
	*(struct ufm_config *)target = c;
	return 0;
}

void ufm_config_clear(struct ufm_config *c)
{
	free(c->ufm);
	free(c->credentials);
	free(c->ca_file);
	*c = (struct ufm_config){ 0 };
}
