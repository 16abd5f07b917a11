/* SPDX-License-Identifier: Apache-2.0 */
#include "util/strutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int str_copy(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);

	if (n == 0)
		return -ENAMETOOLONG;
	if (l >= n) {
		memcpy(dst, src, n - 1);
		dst[n - 1] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, l + 1);
	return 0;
}

/* strlen and mempcpy for the short parts a join takes ("/", ""), without a call for them */
static size_t part_len(const char *s)
{
	return !s[0] ? 0 : !s[1] ? 1 : strlen(s);
}

static char *part_copy(char *dst, const char *s, size_t l)
{
	if (l > 1)
		return mempcpy(dst, s, l);
	if (l)
		*dst++ = *s;
	return dst;
}

/* str_concat where the parts do not fit: as much as does, as snprintf cuts it */
static __attribute__((noinline)) size_t concat_cut(char *dst, size_t n, const char *a,
						   const char *b, const char *c)
{
	const char *part[3] = { a, b, c };
	size_t len = 0;

	for (int i = 0; i < 3; i++) {
		size_t l = strlen(part[i]);

		if (len < n) {
			size_t k = n - 1 - len < l ? n - 1 - len : l;

			memcpy(dst + len, part[i], k);
		}
		len += l;
	}
	if (n)
		dst[len < n ? len : n - 1] = '\0';
	return len;
}

size_t str_concat(char *dst, size_t n, const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = part_len(b), lc = part_len(c), len = la + lb + lc;

	/* what the callers' buffers are sized for: all of it fits */
	if (len >= n)
		return concat_cut(dst, n, a, b, c);
	dst = part_copy(part_copy(mempcpy(dst, a, la), b, lb), c, lc);
	*dst = '\0';
	return len;
}

size_t str_from_u64(char buf[21], unsigned long long v)
{
	/* the length first, then the digits from the end, two at a time: a sysfs reader names
	 * each entry of a table (gids/0, pkeys/1) with it */
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";
	size_t n = 1;
	char *p;

	for (unsigned long long t = v; t >= 10; t /= 10)
		n++;
	p = buf + n;
	*p = '\0';
	for (; v >= 100; v /= 100) {
		p -= 2;
		memcpy(p, pairs + v % 100 * 2, 2);
	}
	if (v >= 10)
		memcpy(p - 2, pairs + v * 2, 2);
	else
		p[-1] = (char)('0' + v);
	return n;
}

size_t str_rstrip(char *s)
{
	size_t l = strlen(s);

	/* isspace's set in the C locale, the one rdmak runs in, without a call for each byte */
	while (l > 0 && (s[l - 1] == ' ' || (unsigned char)(s[l - 1] - '\t') <= '\r' - '\t'))
		s[--l] = '\0';
	return l;
}

bool str_startswith(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return false;
	return true;
}

/* clang-format off */
#define X STR_NOT_DIGIT
const uint32_t str_digit_value[256] = {
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, X, X, X, X, X, X,
	X, 10, 11, 12, 13, 14, 15, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, 10, 11, 12, 13, 14, 15, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
};
#undef X
/* clang-format on */

/* s as nothing but digits of base 10 or 16 ("0x" before these, as strtoull takes them), few
 * enough to fit: true and the number in *ret. False for anything else (a sign, a blank, octal,
 * another base, a long number), which strtoull's path then decides; *ret may be spoilt. */
static inline bool plain_number(const char *s, int base, unsigned long long *ret)
{
	size_t k;

	if ((base == 0 || base == 16) && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
	} else if (base == 0) {
		if (s[0] == '0' && s[1])
			return false;
		base = 10;
	} else if (base != 10 && base != 16) {
		return false;
	}
	k = str_scan_digits(s, (unsigned)base, ret);
	return k && !s[k];
}

/* strtoull's answer for what plain_number leaves, apart so that the common case needs no frame
 * for its end pointer */
static int u64_strtoull(const char *s, int base, unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno)
		return -errno;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int str_to_u64(const char *s, int base, unsigned long long *ret)
{
	unsigned long long v;

	if (s && plain_number(s, base, &v)) {
		*ret = v;
		return 0;
	}
	return u64_strtoull(s, base, ret);
}

/* strtoll's, as u64_strtoull */
static int i64_strtoll(const char *s, int base, long long *ret)
{
	char *end;
	long long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, base);
	if (errno)
		return -errno;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int str_to_i64(const char *s, int base, long long *ret)
{
	unsigned long long u;

	if (s && plain_number(s + (*s == '-'), base, &u)) {
		*ret = *s == '-' ? -(long long)u : (long long)u;
		return 0;
	}
	return i64_strtoll(s, base, ret);
}

int str_natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			char *ea, *eb;
			unsigned long long na = strtoull(a, &ea, 10), nb = strtoull(b, &eb, 10);

			if (na != nb)
				return na < nb ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

bool str_is_path_name(const char *s)
{
	if (!s || !s[0] || (s[0] == '.' && (!s[1] || (s[1] == '.' && !s[2]))))
		return false;
	return !strchr(s, '/');
}

bool str_is_safe_name(const char *s, size_t max)
{
	if (!str_is_path_name(s) || strlen(s) > max)
		return false;
	for (; *s; s++)
		if (*s == '/' || !isgraph((unsigned char)*s))
			return false;
	return true;
}

int str_append_sep(char **s, const char *sep, const char *fmt, ...)
{
	size_t have = *s ? strlen(*s) : 0, sl = have ? strlen(sep) : 0;
	va_list ap;
	char *item, *n;
	int l;

	va_start(ap, fmt);
	l = vasprintf(&item, fmt, ap);
	va_end(ap);
	if (l < 0)
		return -ENOMEM;
	n = realloc(*s, have + sl + (size_t)l + 1);
	if (!n) {
		free(item);
		return -ENOMEM;
	}
	memcpy(n + have, sep, sl);
	memcpy(n + have + sl, item, (size_t)l + 1);
	free(item);
	*s = n;
	return 0;
}

/* RFC 3629's table: the second byte's range is narrower after E0, ED, F0 and F4. */
size_t str_utf8_seq_len(const unsigned char *s, size_t max)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (max < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

bool str_is_utf8(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = str_utf8_seq_len(p, SIZE_MAX);

		if (!n)
			return false;
		p += n;
	}
	return true;
}

char *str_utf8_escape(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *ret = malloc(4 * strlen(s) + 1), *o = ret;

	if (!ret)
		return NULL;
	while (*p) {
		size_t n = str_utf8_seq_len(p, SIZE_MAX);

		if (n) {
			memcpy(o, p, n);
			o += n, p += n;
		} else {
			o += sprintf(o, "\\x%02x", *p++);
		}
	}
	*o = '\0';
	return ret;
}

void str_hwaddr(const uint8_t *a, unsigned n, char *out)
{
	out[0] = '\0';
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 3 * i, i + 1 < n ? "%02x:" : "%02x", a[i]);
}

int str_parse_hwaddr(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	for (;;) {
		unsigned hi = str_digit_value[(unsigned char)s[0]],
			 lo = hi > 15 ? STR_NOT_DIGIT : str_digit_value[(unsigned char)s[1]];

		if (lo > 15 || n == max)
			return -EINVAL;
		out[n++] = (uint8_t)(hi << 4 | lo);
		if (!s[2])
			return (int)n;
		if (s[2] != ':')
			return -EINVAL;
		s += 3;
	}
}

void str_utc(time_t t, char out[STR_UTC_LEN])
{
	/* days since 1970-01-01 to the civil date (the proleptic Gregorian calendar, in 400-year
	 * eras from 0000-03-01), by arithmetic: glibc's gmtime_r loads the time zone on its first
	 * call, which is the read this avoids */
	long long days = t / 86400, secs = t % 86400, era, doe, yoe, doy, mp, d, m, y;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	days += 719468;
	era = (days >= 0 ? days : days - 146096) / 146097;
	doe = days - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = yoe + era * 400 + (m <= 2);
	/* the field's four digits: a clock that far off is wrong already */
	if (y < 0) {
		y = secs = 0;
		m = d = 1;
	} else if (y > 9999) {
		y = 9999;
		m = 12;
		d = 31;
		secs = 86399;
	}
	/* the remainders only tell the compiler the widths the arithmetic guarantees */
	snprintf(out, STR_UTC_LEN, "%04u-%02u-%02uT%02u:%02u:%02uZ", (unsigned)(y % 10000),
		 (unsigned)(m % 100), (unsigned)(d % 100), (unsigned)(secs / 3600 % 100),
		 (unsigned)(secs / 60 % 60), (unsigned)(secs % 60));
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int str_base64_decode(const char *s, char **ret, size_t *ret_len)
{
	size_t n = strlen(s), o = 0;
	unsigned acc = 0, bits = 0;
	char *out;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (strlen(s) - n > 2 || n % 4 == 1)
		return -EINVAL;
	out = malloc(n / 4 * 3 + 3);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value(s[i]);

		if (v < 0) {
			free(out);
			return -EINVAL;
		}
		acc = acc << 6 | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}
