/* SPDX-License-Identifier: Apache-2.0 */
/* Header lists with quality values (RFC 9110 12.4.2): Accept's media ranges and
 * Accept-Encoding's codings, read once here for both. The header comes from anyone who can
 * connect, so this reads bytes and nothing else: no allocation, each byte looked at a bounded
 * number of times, and an element it cannot read is skipped as if absent (what a client that
 * garbles its header gets is what a client that sent none gets: text, uncompressed, which every
 * client takes). */
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

/* Past the quoted-string at p (its escapes skipped over); false, with *end at the string's
 * end, when it is not closed. */
static bool quoted(const char *p, const char **end)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	*end = *p ? p + 1 : p;
	return *p == '"';
}

/* Where the element at p ends: its comma (one inside a quoted string is not), or the end. */
static const char *element_end(const char *p)
{
	while (*p && *p != ',')
		if (*p != '"')
			p++;
		else if (!quoted(p, &p))
			break;
	return p;
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

/* The element at p (past its OWS): the name, then parameters, each OWS ";" OWS token "=" (token
 * or quoted-string), no space around the "=" (5.6.6). Every parameter is read the same way, so
 * that a "q=0" inside a quoted value or a "seq=0" is never a weight. Filled in *ret when it is
 * one we read; *end is where it ends either way. */
static bool element(const char *p, const char **end, struct http_qlist_elem *ret)
{
	const char *name = p;
	size_t len, sub;
	int q = -1;

	p = token(p, &len);
	if (len && *p == '/') {
		p = token(p + 1, &sub);
		len = sub ? (size_t)(p - name) : 0;
	}
	if (!len)
		goto unread;
	for (p = skip_ows(p); *p == ';'; p = skip_ows(p)) {
		const char *key = skip_ows(p + 1), *val;
		size_t klen, vlen = 0;

		/* An empty parameter (a trailing ";"), which 5.6.6 allows in a media type but
		 * Accept-Encoding's grammar has no room for, is not read in either: one grammar for
		 * both lists, and no client we know of sends one. */
		p = token(key, &klen);
		if (!klen || *p != '=')
			goto unread;
		val = ++p;
		if (*val == '"') {
			if (!quoted(val, &p)) {
				*end = p; /* an unclosed quote runs to the end */
				return false;
			}
		} else {
			p = token(val, &vlen);
			if (!vlen)
				goto unread;
		}
		/* 12.4.2: a parameter named "q" (names are case-insensitive) is the weight
		 * wherever it stands. A weight that is no qvalue (above 1, more than three
		 * decimals, quoted: the weight's grammar is "q=" qvalue) or one given twice makes
		 * the element unread: the RFC gives it no meaning, and guessing one could put a
		 * coding or a type the client refused above one it asked for. */
		if (klen == 1 && (*key == 'q' || *key == 'Q')) {
			if (q >= 0 || *val == '"' || (q = qvalue(val, vlen)) < 0)
				goto unread;
		}
	}
	if (*p != ',' && *p != '\0')
		goto unread; /* something after the element: not one we read */
	*end = p;
	*ret = (struct http_qlist_elem){ .name = name, .name_len = len, .q = q < 0 ? 1000 : q };
	return true;
unread:
	*end = element_end(p);
	return false;
}

bool http_qlist_next(const char **pos, struct http_qlist_elem *ret)
{
	const char *p = *pos, *end;
	bool ok = false;

	/* 5.6.1: empty elements (",,", a leading or trailing comma) are ignored */
	while (!ok && *(p = skip_ows(p))) {
		if (*p == ',') {
			p++;
			continue;
		}
		ok = element(p, &end, ret);
		p = *end ? end + 1 : end;
	}
	*pos = p;
	return ok;
}

bool http_qlist_is(const struct http_qlist_elem *e, const char *name)
{
	size_t n = strlen(name);

	return e->name_len == n && !strncasecmp(e->name, name, n);
}
