/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers shared by every module. */
#ifndef RDMAK_UTIL_STRUTIL_H
#define RDMAK_UTIL_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Copy src into dst (size n), always NUL-terminated. Returns -ENAMETOOLONG if truncated. */
int str_copy(char *dst, size_t n, const char *src);
/* a, b and c one after the other into dst (size n), as snprintf(dst, n, "%s%s%s", a, b, c)
 * writes them (cut short and NUL-terminated where n is too small) and its return value, without
 * printf's format machinery: a sysfs reader joins a path for each of tens of thousands of reads. */
size_t str_concat(char *dst, size_t n, const char *a, const char *b, const char *c);
/* v in decimal into buf (21 bytes hold any), NUL-terminated; returns the length. */
size_t str_from_u64(char buf[21], unsigned long long v);
/* Strip trailing whitespace (sysfs values end in '\n') in place; returns the new length. */
size_t str_rstrip(char *s);
bool str_startswith(const char *s, const char *prefix);
/* Parse a whole string as an unsigned/signed integer in the given base (0: auto). */
int str_to_u64(const char *s, int base, unsigned long long *ret);
int str_to_i64(const char *s, int base, long long *ret);
/* Each byte's value as a digit (0-9, then a-f and A-F as 10-15), STR_NOT_DIGIT for any other
 * byte: the digits strtoull and isxdigit take in the C locale, without a call through the
 * locale. STR_NOT_DIGIT stays above 0xffff shifted left by up to 12 bits, so that four digits
 * of hex are read and checked as one number. */
#define STR_NOT_DIGIT 0x10000u
extern const uint32_t str_digit_value[256];
/* The run of digits of base (2 to 16) that s starts with, as a number below 2^62: their count,
 * 0 when s starts with none or the number may not fit (then *ret is untouched). The sysfs
 * readers take their values with it, and strtoull's path (blanks, signs, overflow) after a 0. */
static inline size_t str_scan_digits(const char *s, unsigned base, unsigned long long *ret)
{
	unsigned long long v = 0;
	size_t i = 0;
	unsigned d;

	while ((d = str_digit_value[(unsigned char)s[i]]) < base) {
		if (v >> 58)
			return 0;
		v = v * base + d;
		i++;
	}
	if (i)
		*ret = v;
	return i;
}
/* Natural order ("mlx5_2" < "mlx5_10"), the order ibdev2netdev's `ls` does NOT use but humans expect. */
int str_natcmp(const char *a, const char *b);
/* One component of a path, naming an entry of its directory: non-empty, no '/', not "." nor
 * "..". Opened beneath a directory it leads nowhere else but through a link. */
bool str_is_path_name(const char *s);
/* A name that may become a path component: str_is_path_name, printable, <= max bytes. */
bool str_is_safe_name(const char *s, size_t max);
/* Append a printf-formatted item to the malloc'd string *s (NULL: empty), with sep before it
 * unless *s is empty: the one way to build "a, b, c" lists. 0 or -ENOMEM (*s unchanged). */
int str_append_sep(char **s, const char *sep, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Whether s is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
bool str_is_utf8(const char *s);
/* Length of the valid UTF-8 sequence at s (1 to 4) within its first max bytes, 0 if the byte
 * there does not start one that fits. Reads past the first byte only while the sequence is
 * still valid, so never past a NUL: a NUL-terminated string may pass SIZE_MAX. */
size_t str_utf8_seq_len(const unsigned char *s, size_t max);
/* A malloc'd copy of s in which every byte that is not part of a valid UTF-8 sequence is
 * written "\xHH" (lower-case hex); valid sequences are copied as they are. NULL: no memory. */
char *str_utf8_escape(const char *s);
/* RFC 4648 base64 (the standard alphabet, padding optional, no line breaks) of s into a malloc'd
 * buffer, NUL-terminated past its *ret_len bytes. -EINVAL for any other byte, -ENOMEM. */
int str_base64_decode(const char *s, char **ret, size_t *ret_len);
/* A hardware address as "aa:bb:..." into out (3 * n bytes at least; "" for n 0). */
void str_hwaddr(const uint8_t *a, unsigned n, char *out);
/* Its inverse: "aa:bb:..." (pairs of hex digits, either case, joined by single ':') into out.
 * The count of bytes (1 to max) or -EINVAL for anything else, "" included. */
int str_parse_hwaddr(const char *s, uint8_t *out, size_t max);
/* t in UTC as RFC 3339's "YYYY-MM-DDTHH:MM:SSZ" into out (a fraction of a second goes between
 * the first 19 bytes and the "Z"); a time outside the years 0000-9999 reads as their first or last second. Unlike
 * gmtime_r and strftime it never loads the time zone (/etc/localtime), which a plugin exec'd
 * per pod would read every time. */
#define STR_UTC_LEN 21
void str_utc(time_t t, char out[STR_UTC_LEN]);

#endif
