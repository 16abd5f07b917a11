/* SPDX-License-Identifier: Apache-2.0 */
/* Commands, versions, error objects, the names that come from outside, addresses. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cnispec/cnispec.h"
#include "util/cleanup.h"

static const char *const cmd_names[] = {
	[CNISPEC_CMD_NONE] = "",	   [CNISPEC_CMD_ADD] = "ADD",
	[CNISPEC_CMD_DEL] = "DEL",	   [CNISPEC_CMD_CHECK] = "CHECK",
	[CNISPEC_CMD_GC] = "GC",	   [CNISPEC_CMD_STATUS] = "STATUS",
	[CNISPEC_CMD_VERSION] = "VERSION",
};

const char *cnispec_cmd_name(enum cnispec_cmd cmd)
{
	return (unsigned)cmd < ELEMENTSOF(cmd_names) ? cmd_names[cmd] : "";
}

int cnispec_cmd_parse(const char *s, enum cnispec_cmd *ret)
{
	for (size_t i = 1; s && i < ELEMENTSOF(cmd_names); i++)
		if (strcmp(s, cmd_names[i]) == 0) {
			*ret = (enum cnispec_cmd)i;
			return 0;
		}
	return -EINVAL;
}

static const char *const version_names[CNISPEC_V_COUNT] = {
	[CNISPEC_V0_3_0] = "0.3.0", [CNISPEC_V0_3_1] = "0.3.1", [CNISPEC_V0_4_0] = "0.4.0",
	[CNISPEC_V1_0_0] = "1.0.0", [CNISPEC_V1_1_0] = "1.1.0",
};

const char *cnispec_version_str(enum cnispec_version v)
{
	return (unsigned)v < CNISPEC_V_COUNT ? version_names[v] : "?";
}

int cnispec_version_parse(const char *s, enum cnispec_version *ret)
{
	for (int i = 0; s && i < CNISPEC_V_COUNT; i++)
		if (strcmp(s, version_names[i]) == 0) {
			*ret = (enum cnispec_version)i;
			return 0;
		}
	return -ENOTSUP;
}

bool cnispec_cmd_allowed(enum cnispec_cmd cmd, enum cnispec_version v)
{
	switch (cmd) {
	case CNISPEC_CMD_CHECK: return v >= CNISPEC_V0_4_0;
	case CNISPEC_CMD_GC:
	case CNISPEC_CMD_STATUS: return v >= CNISPEC_V1_1_0;
	default: return true;
	}
}

int cnispec_fail(struct cnispec_error *err, int ret, unsigned code, const char *msg,
		 const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return ret;
	err->code = code;
	snprintf(err->msg, sizeof(err->msg), "%s", msg ? msg : "");
	err->details[0] = '\0';
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(err->details, sizeof(err->details), fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* o as one compact line on f; consumes o. */
static int print_line(FILE *f, json_t *o)
{
	_cleanup_free_ char *text = NULL;

	if (!o)
		return -ENOMEM;
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	if (fprintf(f, "%s\n", text) < 0 || fflush(f) != 0)
		return -EIO;
	return 0;
}

int cnispec_error_print(FILE *f, const char *version, const struct cnispec_error *err)
{
	json_t *o = json_pack("{s:s, s:I, s:s}", "cniVersion",
			      version ? version : cnispec_version_str(CNISPEC_V_LATEST), "code",
			      (json_int_t)(err->code ? err->code : CNISPEC_E_INTERNAL), "msg",
			      err->msg[0] ? err->msg : "error");

	if (o && err->details[0])
		json_object_set_new(o, "details", json_string(err->details));
	return print_line(f, o);
}

int cnispec_version_print(FILE *f, const char *version)
{
	json_t *list = json_array();

	for (int i = 0; list && i < CNISPEC_V_COUNT; i++)
		json_array_append_new(list, json_string(version_names[i]));
	return print_line(f, json_pack("{s:s, s:o}", "cniVersion",
				       version ? version : cnispec_version_str(CNISPEC_V_LATEST),
				       "supportedVersions", list));
}

/* ---- names ------------------------------------------------------------------------------ */

static bool id_like(const char *s, size_t max, const char *what_max, const char **why)
{
	size_t l;

	if (!s || !*s) {
		*why = "is empty";
		return false;
	}
	if (!isalnum((unsigned char)s[0])) {
		*why = "must start with a letter or digit";
		return false;
	}
	for (l = 0; s[l]; l++)
		if (!isalnum((unsigned char)s[l]) && s[l] != '_' && s[l] != '.' && s[l] != '-') {
			*why = "may hold only letters, digits, '_', '.' and '-'";
			return false;
		}
	if (l > max) {
		*why = what_max;
		return false;
	}
	return true;
}

bool cnispec_container_id_valid(const char *s, const char **why)
{
	const char *dummy;

	return id_like(s, CNISPEC_CONTAINER_ID_MAX, "is longer than 239 characters",
		       why ? why : &dummy);
}

bool cnispec_network_name_valid(const char *s, const char **why)
{
	const char *dummy;

	return id_like(s, 255, "is longer than 255 characters", why ? why : &dummy);
}

bool cnispec_ifname_valid(const char *s, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (!s || !*s)
		*why = "is empty";
	else if (strlen(s) > CNISPEC_IFNAME_MAX)
		*why = "is longer than 15 bytes (IFNAMSIZ - 1)";
	else if (!strcmp(s, ".") || !strcmp(s, ".."))
		*why = "is \".\" or \"..\"";
	for (; !*why && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '/')
			*why = "contains '/'";
		else if (c == ':')
			*why = "contains ':'";
		else if (isspace(c))
			*why = "contains a blank";
		else if (c == '%')
			*why = "contains '%' (the kernel would pick another name for \"%d\")";
		else if (c < 0x20 || c == 0x7f)
			*why = "contains a control character";
	}
	return !*why;
}

bool cnispec_plugin_type_valid(const char *s, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	if (!s || !*s) {
		*why = "is empty";
		return false;
	}
	if (strlen(s) > 255) {
		*why = "is longer than 255 characters";
		return false;
	}
	if (!strcmp(s, ".") || !strcmp(s, "..")) {
		*why = "may not be \".\" or \"..\"";
		return false;
	}
	for (; *s; s++)
		if (*s == '/' || *s == '\\' || !isgraph((unsigned char)*s)) {
			*why = "must be a file name: no '/', '\\', white space or control characters";
			return false;
		}
	return true;
}

/* ---- addresses -------------------------------------------------------------------------- */

int cnispec_addr_parse(const char *s, struct cnispec_addr *ret)
{
	struct cnispec_addr a = { 0 };

	if (!s)
		return -EINVAL;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, a.a) != 1)
			return -EINVAL;
		a.family = AF_INET6;
	} else {
		if (inet_pton(AF_INET, s, a.a) != 1)
			return -EINVAL;
		a.family = AF_INET;
	}
	*ret = a;
	return 0;
}

int cnispec_prefix_parse(const char *s, struct cnispec_prefix *ret)
{
	char buf[CNISPEC_PREFIX_STRLEN];
	const char *slash;
	struct cnispec_prefix p = { 0 };
	unsigned long len = 0;
	size_t n;

	if (!s)
		return -EINVAL;
	slash = strchr(s, '/');
	if (!slash)
		return -EINVAL;
	n = (size_t)(slash - s);
	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (cnispec_addr_parse(buf, &p.addr) < 0)
		return -EINVAL;
	slash++;
	/* decimal digits only, no sign, no leading zero: "/024" is a typo, not 24 */
	if (!*slash || strlen(slash) > 3 || (slash[0] == '0' && slash[1]))
		return -EINVAL;
	for (const char *c = slash; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return -EINVAL;
		len = len * 10 + (unsigned long)(*c - '0');
	}
	if (len > (p.addr.family == AF_INET ? 32u : 128u))
		return -EINVAL;
	p.len = (unsigned)len;
	*ret = p;
	return 0;
}

const char *cnispec_addr_str(const struct cnispec_addr *a, char *buf)
{
	if (!inet_ntop(a->family == AF_INET ? AF_INET : AF_INET6, a->a, buf, CNISPEC_PREFIX_STRLEN))
		snprintf(buf, CNISPEC_PREFIX_STRLEN, "?");
	return buf;
}

const char *cnispec_prefix_str(const struct cnispec_prefix *p, char *buf)
{
	size_t l;

	cnispec_addr_str(&p->addr, buf);
	l = strlen(buf);
	snprintf(buf + l, CNISPEC_PREFIX_STRLEN - l, "/%u", p->len);
	return buf;
}

bool cnispec_addr_equal(const struct cnispec_addr *a, const struct cnispec_addr *b)
{
	return a->family == b->family && memcmp(a->a, b->a, sizeof(a->a)) == 0;
}
