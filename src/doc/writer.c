/* SPDX-License-Identifier: Apache-2.0 */
/* The one JSON writer of documents out: values are written as they are made, into one buffer,
 * in the text jansson's json_dumps(JSON_INDENT(2) | JSON_PRESERVE_ORDER) gives for the same
 * values (what `--json` printed before, and what scripts and golden files hold). A document
 * that is first built as a jansson tree goes through doc_put_json, so there is one writer. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "util/strutil.h"

/* Deeper than any document rdmak prints; the bit stack below holds one bit per level. */
#define DOC_DEPTH_MAX 64

struct doc_writer {
	char *buf;
	size_t len, cap;
	int err;	    /* the first failure; every later call does nothing */
	unsigned depth;	    /* open containers */
	bool empty;	    /* the innermost container has no member yet */
	uint64_t is_object; /* bit d: the container at depth d+1 is an object */
};

struct doc_writer *doc_writer_new(void)
{
	return calloc(1, sizeof(struct doc_writer));
}

void doc_writer_free(struct doc_writer *w)
{
	if (!w)
		return;
	free(w->buf);
	free(w);
}

int doc_writer_error(const struct doc_writer *w)
{
	return w->err;
}

static bool grow(struct doc_writer *w, size_t n)
{
	size_t cap = w->cap ? w->cap : 4096;
	char *b;

	if (w->err)
		return false;
	while (cap - w->len < n) {
		if (cap > SIZE_MAX / 2) {
			w->err = -ENOMEM;
			return false;
		}
		cap *= 2;
	}
	b = realloc(w->buf, cap);
	if (!b) {
		w->err = -ENOMEM;
		return false;
	}
	w->buf = b, w->cap = cap;
	return true;
}

/* Room for n more bytes. Called for every value: the common case stays inline. */
static inline bool reserve(struct doc_writer *w, size_t n)
{
	return (w->cap - w->len >= n && !w->err) || grow(w, n);
}

/* inline: most calls put one to five constant bytes, which the compiler then stores directly */
static inline void put(struct doc_writer *w, const char *s, size_t n)
{
	if (reserve(w, n)) {
		memcpy(w->buf + w->len, s, n);
		w->len += n;
	}
}

/* Indentation for the usual depths, copied with a constant length (one or two vector stores)
 * instead of a memset of the depth's: a newline comes before every value. */
static const char spaces[32] = "                                ";

/* A newline and n spaces at o, which has room for 1 + max(n, sizeof(spaces)) bytes: past them. */
static inline __attribute__((always_inline)) char *indent_at(char *o, size_t n)
{
	*o++ = '\n';
	if (n <= sizeof(spaces))
		memcpy(o, spaces, sizeof(spaces));
	else
		memset(o, ' ', n);
	return o + n;
}

/* The room indent_at needs for depth. */
static inline size_t indent_room(unsigned depth)
{
	size_t n = 2 * (size_t)depth;

	return 1 + (n > sizeof(spaces) ? n : sizeof(spaces));
}

/* A newline and two spaces per level, as JSON_INDENT(2). */
static void newline(struct doc_writer *w, unsigned depth)
{
	if (reserve(w, indent_room(depth)))
		w->len = (size_t)(indent_at(w->buf + w->len, 2 * (size_t)depth) - w->buf);
}

static const char hexdigits[] = "0123456789abcdef";

/* The bytes that stand for themselves in a JSON string: printable ASCII and DEL, but '"' and
 * '\\'. NUL is not one, which ends the copying loop below at s[len]. */
static const bool plain[256] = { [0x20 ... 0x21] = true,
				 [0x23 ... 0x5b] = true,
				 [0x5d ... 0x7f] = true };

/* s[0..len) as a JSON string, s[len] being NUL (a sequence therefore never runs past len).
 * Escaped as jansson escapes: '"', '\\', the control characters (\b \f \n \r \t by name, the
 * rest \u00XX in upper-case hex); the rest of valid UTF-8 as it is. A byte that is not part of
 * valid UTF-8 (text read from the system is bytes) is written as str_utf8_escape writes it,
 * "\xHH", whose backslash JSON escapes in turn. */
static void put_string(struct doc_writer *w, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	char *o;

	/* at most 6 bytes out per byte in ("\u001F"), and the quotes */
	if (len > (SIZE_MAX - 2) / 6 || !reserve(w, 6 * len + 2))
		return;
	o = w->buf + w->len;
	*o++ = '"';
	for (;;) {
		unsigned char c;
		size_t n;

		/* the common case, a run of plain bytes, in a loop of its own: the writer's cost */
		while (plain[*p])
			*o++ = (char)*p++;
		if (p >= end)
			break;
		c = *p;
		if (c >= 0x80) {
			n = str_utf8_seq_len(p, (size_t)(end - p));
			if (n) {
				memcpy(o, p, n);
				o += n, p += n;
			} else {
				*o++ = '\\', *o++ = '\\', *o++ = 'x';
				*o++ = hexdigits[c >> 4], *o++ = hexdigits[c & 15];
				p++;
			}
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			*o++ = 'u', *o++ = '0', *o++ = '0';
			*o++ = "0123456789ABCDEF"[c >> 4], *o++ = "0123456789ABCDEF"[c & 15];
		}
		p++;
	}
	*o++ = '"';
	w->len = (size_t)(o - w->buf);
}

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t load32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#define BYTES64(c) (UINT64_C(0x0101010101010101) * (c))
#define BYTES32(c) (UINT32_C(0x01010101) * (c))

/* A byte's high bit set where that byte of v is not plain: below 0x20, '"', '\\' or 0x80 and
 * above. A subtraction borrows out of a byte only when that byte is one looked for, so a word is
 * flagged exactly when one of its bytes is not plain (the flag may sit on a later byte than
 * that one: put_string then takes the whole string anyway). */
static inline uint64_t special64(uint64_t v)
{
	return ((v - BYTES64(0x20)) | ((v ^ BYTES64('"')) - BYTES64(1)) |
		((v ^ BYTES64('\\')) - BYTES64(1)) | v) &
	       BYTES64(0x80);
}

static inline uint32_t special32(uint32_t v)
{
	return ((v - BYTES32(0x20)) | ((v ^ BYTES32('"')) - BYTES32(1)) |
		((v ^ BYTES32('\\')) - BYTES32(1)) | v) &
	       BYTES32(0x80);
}

/* s[0..len) copied to o when every byte is plain (true); otherwise false, o holding some of it.
 * Words are read only inside s: a string shorter than a word is read as two words of half its
 * size or less that overlap, as is the last word of a longer one. */
static inline __attribute__((always_inline)) bool copy_plain(char *o, const unsigned char *s,
							     size_t len)
{
	if (len >= 8) {
		uint64_t bad = 0, v;
		size_t i;

		for (i = 0; i + 8 < len; i += 8) {
			v = load64(s + i);
			bad |= special64(v);
			memcpy(o + i, &v, 8);
		}
		v = load64(s + len - 8);
		memcpy(o + len - 8, &v, 8);
		return !(bad | special64(v));
	}
	if (len >= 4) {
		uint32_t a = load32(s), b = load32(s + len - 4);

		memcpy(o, &a, 4);
		memcpy(o + len - 4, &b, 4);
		return !(special32(a) | special32(b));
	}
	for (size_t i = 0; i < len; i++) {
		if (!plain[s[i]])
			return false;
		o[i] = (char)s[i];
	}
	return true;
}

/* s[0..len) quoted at o, which has room for len + 2 bytes, when every byte is plain: past it;
 * NULL otherwise (put_string's then). */
static inline __attribute__((always_inline)) char *quote_plain_at(char *o, const char *s,
								  size_t len)
{
	if (!copy_plain(o + 1, (const unsigned char *)s, len))
		return NULL;
	o[0] = '"';
	o[len + 1] = '"';
	return o + len + 2;
}

/* s, NUL-terminated, as a JSON string. Nearly every key and value is short and plain: copied
 * a word at a time; anything else is put_string's. */
static inline void put_cstring(struct doc_writer *w, const char *s)
{
	size_t len = strlen(s);
	char *o;

	if (!reserve(w, len + 2))
		return;
	if ((o = quote_plain_at(w->buf + w->len, s, len)))
		w->len = (size_t)(o - w->buf);
	else
		put_string(w, s, len);
}

/* What comes before a value: the separator and indentation of its container, and its key in an
 * object. A key in an array, or none in an object, is the caller's mistake: -EINVAL. */
static bool member(struct doc_writer *w, const char *key)
{
	bool in_object = w->depth && (w->is_object >> (w->depth - 1) & 1);
	size_t indent = 2 * (size_t)w->depth, klen;
	char *o, *q;

	if (w->err)
		return false;
	if (in_object != (key != NULL) || (!w->depth && w->len)) {
		w->err = -EINVAL;
		return false;
	}
	/* the separator, the indentation and a plain key in one reservation: this runs before
	 * every value */
	klen = key ? strlen(key) : 0;
	if (!reserve(w, 1 + indent_room(w->depth) + klen + 4))
		return false;
	o = w->buf + w->len;
	if (w->depth) {
		if (!w->empty)
			*o++ = ',';
		o = indent_at(o, indent);
		w->empty = false;
	}
	if (key && (q = quote_plain_at(o, key, klen))) {
		memcpy(q, ": ", 2);
		o = q + 2;
	} else if (key) {
		w->len = (size_t)(o - w->buf);
		put_string(w, key, klen);
		put(w, ": ", 2);
		return !w->err;
	}
	w->len = (size_t)(o - w->buf);
	return true;
}

static void begin(struct doc_writer *w, const char *key, bool object)
{
	if (!member(w, key))
		return;
	if (w->depth == DOC_DEPTH_MAX) {
		w->err = -E2BIG;
		return;
	}
	put(w, object ? "{" : "[", 1);
	w->is_object = (w->is_object & ~(UINT64_C(1) << w->depth)) | ((uint64_t)object << w->depth);
	w->depth++;
	w->empty = true;
}

static void end(struct doc_writer *w, bool object)
{
	if (w->err)
		return;
	if (!w->depth || (bool)(w->is_object >> (w->depth - 1) & 1) != object) {
		w->err = -EINVAL;
		return;
	}
	w->depth--;
	if (!w->empty)
		newline(w, w->depth);
	put(w, object ? "}" : "]", 1);
	w->empty = false;
}

void doc_begin_object(struct doc_writer *w, const char *key)
{
	begin(w, key, true);
}

void doc_end_object(struct doc_writer *w)
{
	end(w, true);
}

void doc_begin_array(struct doc_writer *w, const char *key)
{
	begin(w, key, false);
}

void doc_end_array(struct doc_writer *w)
{
	end(w, false);
}

void doc_put_null(struct doc_writer *w, const char *key)
{
	if (member(w, key))
		put(w, "null", 4);
}

void doc_put_bool(struct doc_writer *w, const char *key, bool v)
{
	if (member(w, key))
		put(w, v ? "true" : "false", v ? 4 : 5);
}

void doc_put_int(struct doc_writer *w, const char *key, long long v)
{
	char buf[22];
	unsigned long long u = v < 0 ? -(unsigned long long)v : (unsigned long long)v;

	if (!member(w, key))
		return;
	buf[0] = '-';
	put(w, v < 0 ? buf : buf + 1, (v < 0) + str_from_u64(buf + 1, u));
}

/* jansson's jsonp_dtostr: "%.17g", ".0" added when that reads as an integer, the exponent
 * without '+' and leading zeros. JSON has no NaN or infinity: -EDOM. */
void doc_put_real(struct doc_writer *w, const char *key, double v)
{
	char buf[40], *e;
	int n;

	if (!member(w, key))
		return;
	if (!isfinite(v)) {
		w->err = -EDOM;
		return;
	}
	n = snprintf(buf, sizeof(buf) - 2, "%.17g", v);
	if (!strchr(buf, '.') && !strchr(buf, 'e')) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	e = strchr(buf, 'e');
	if (e) {
		char *start = e + 1, *from = e + 2;

		if (*start == '-')
			start++;
		while (*from == '0')
			from++;
		memmove(start, from, strlen(from) + 1);
		n = (int)strlen(buf);
	}
	put(w, buf, (size_t)n);
}

void doc_put_string(struct doc_writer *w, const char *key, const char *s)
{
	if (!s)
		doc_put_null(w, key);
	else if (member(w, key))
		put_cstring(w, s);
}

void doc_put_json(struct doc_writer *w, const char *key, const json_t *v)
{
	const char *k;
	json_t *m;
	size_t i;

	if (!v) {
		/* a tree whose construction failed somewhere */
		if (!w->err)
			w->err = -ENOMEM;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		doc_begin_object(w, key);
		json_object_foreach((json_t *)v, k, m) doc_put_json(w, k, m);
		doc_end_object(w);
		break;
	case JSON_ARRAY:
		doc_begin_array(w, key);
		json_array_foreach(v, i, m) doc_put_json(w, NULL, m);
		doc_end_array(w);
		break;
	case JSON_STRING:
		if (member(w, key))
			put_string(w, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: doc_put_int(w, key, json_integer_value(v)); break;
	case JSON_REAL: doc_put_real(w, key, json_real_value(v)); break;
	case JSON_TRUE: doc_put_bool(w, key, true); break;
	case JSON_FALSE: doc_put_bool(w, key, false); break;
	default: doc_put_null(w, key); break;
	}
}

int doc_writer_print(const struct doc_writer *w, FILE *f)
{
	if (w->err)
		return w->err;
	if (w->depth || !w->len)
		return -EINVAL;
	if (fwrite(w->buf, 1, w->len, f) != w->len || fputc('\n', f) == EOF)
		return -EIO;
	return ferror(f) ? -EIO : 0;
}
