/* SPDX-License-Identifier: Apache-2.0 */
/* Numbers on the command line: one parser and one error line for every role's options, as
 * iproute2's get_unsigned() and invarg() are for its tools. */
#ifndef RDMAK_UTIL_OPT_H
#define RDMAK_UTIL_OPT_H

/* s as a decimal number in [min, max]: digits only (no sign, blank, "0x" or leading "+"; "010"
 * is ten). 0, -EINVAL (not such a number) or -ERANGE (outside [min, max]); *ret only on 0. */
int opt_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		   unsigned long long *ret);
/* The same, and on failure the one line "rdmak ROLE: --OPT: expected MIN to MAX UNIT, got 'S'"
 * on stderr (a role's usage error, for its main to turn into its exit code). unit: "s", "ms",
 * or "" for a count. */
int opt_uint(const char *role, const char *opt, const char *s, unsigned long long min,
	     unsigned long long max, const char *unit, unsigned long long *ret);

/* s as a decimal number with up to `decimals` digits after a '.', returned scaled by
 * 10^decimals ("0.5" with 3 decimals is 500), in [min, max] (scaled too): digits, then '.' and
 * at least one digit, nothing else (no sign, blank, exponent, "nan" or "inf", which strtod
 * takes). 0, -EINVAL or -ERANGE; *ret only on 0. decimals at most 9. */
int opt_parse_decimal(const char *s, unsigned decimals, unsigned long long min,
		      unsigned long long max, unsigned long long *ret);
/* The same, and on failure the one line "rdmak ROLE: --OPT: expected MIN to MAX UNIT (up to N
 * decimals), got 'S'" with MIN and MAX written as decimals ("0.1"). unit: "seconds", "%", "". */
int opt_decimal(const char *role, const char *opt, const char *s, unsigned decimals,
		unsigned long long min, unsigned long long max, const char *unit,
		unsigned long long *ret);

#endif
