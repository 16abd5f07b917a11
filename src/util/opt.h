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

#endif
