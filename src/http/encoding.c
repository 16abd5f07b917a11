/* SPDX-License-Identifier: Apache-2.0 */
/* Accept-Encoding (RFC 9110 12.5.3): whether a client takes a gzip'd answer. The header comes
 * from anyone who can connect, so this reads bytes and nothing else: no allocation, each byte
 * looked at a bounded number of times, and an element it cannot read is ignored as if absent
 * (a client that garbles its header gets the answer uncompressed, which every client takes). */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "http/http.h"

/* RFC 9110 5.6.2 tchar */
static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static const char *token(const char *p, size_t *len)
{
	const char *s = p;

	while (is_tchar(*p))
		p++;
	*len = (size_t)(p - s);
	return p;
}

/* A parameter's value: a token or a quoted-string (its escapes skipped over). NULL: unterminated
 * quote. */
static const char *param_value(const char *p, const char **val, size_t *len)
{
	if (*p != '"') {
		*val = p;
		return token(p, len);
	}
	for (*val = ++p; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	if (*p != '"')
		return NULL;
	*len = (size_t)(p - *val);
	return p + 1;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths; -1: not one. */
static int qvalue(const char *s, size_t len)
{
	int q = 0, scale = 100;

	if (!len || (s[0] != '0' && s[0] != '1') || (len > 1 && s[1] != '.') || len > 5)
		return -1;
	for (size_t i = 2; i < len; i++, scale /= 10) {
		if (s[i] < '0' || s[i] > '9' || (s[0] == '1' && s[i] != '0'))
			return -1;
		q += (s[i] - '0') * scale;
	}
	return s[0] == '1' ? 1000 : q;
}

/* The element at p (its coding in *name, *name_len; its q in *q, -1 when it cannot be read);
 * returns where the next one starts (past its comma, or at the end). */
static const char *element(const char *p, const char **name, size_t *name_len, int *q)
{
	p = skip_ows(p);
	*name = p;
	p = token(p, name_len);
	*q = *name_len ? 1000 : -1;
	for (p = skip_ows(p); *p == ';' && *q >= 0;) {
		const char *key = skip_ows(p + 1), *val;
		size_t klen, vlen;

		p = skip_ows(token(key, &klen));
		if (!klen || *p != '=') {
			*q = -1;
			break;
		}
		p = param_value(skip_ows(p + 1), &val, &vlen);
		if (!p) {
			*q = -1; /* an unterminated quote runs to the end */
			return val + strlen(val);
		}
		if (klen == 1 && (*key == 'q' || *key == 'Q'))
			*q = qvalue(val, vlen);
		p = skip_ows(p);
	}
	if (*p != ',' && *p != '\0')
		*q = -1; /* something after the element: not one we read */
	while (*p && *p != ',')
		p++;
	return *p ? p + 1 : p;
}

bool http_accept_gzip(const char *value)
{
	int gzip = -1, identity = -1, star = -1, q;
	const char *p = value, *name;
	size_t len;

	if (!value)
		return false; /* no header: the identity coding, as node_exporter answers too */
	while (*p) {
		p = element(p, &name, &len, &q);
		if (q < 0)
			continue;
		if ((len == 4 && !strncasecmp(name, "gzip", 4)) ||
		    (len == 6 && !strncasecmp(name, "x-gzip", 6)))
			gzip = q > gzip ? q : gzip;
		else if (len == 8 && !strncasecmp(name, "identity", 8))
			identity = q > identity ? q : identity;
		else if (len == 1 && *name == '*')
			star = q > star ? q : star;
	}
	if (gzip < 0)
		gzip = star; /* "*" stands for every coding the header does not name */
	/* gzip taken, and not put below an identity the client named */
	return gzip > 0 && (identity < 0 || gzip >= identity);
}
