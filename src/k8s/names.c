/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes' name rules and quantities (names.h). Written from the rules' definitions
 * (apimachinery's regular expressions and resource.Quantity's grammar), checked against
 * Kubernetes' own test cases in tests/unit/test_k8s_names.c. */
#include "k8s/names.h"

#include <errno.h>
#include <string.h>

/* Kubernetes' messages (validation.go, content/kube.go), so that an operator who searches for
 * one finds the rule. */
#define MSG_LABEL                                                                                  \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
	"and must start and end with an alphanumeric character"
#define MSG_SUBDOMAIN                                                                              \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
	"or '.', and must start and end with an alphanumeric character"
#define MSG_1035                                                                                   \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "  \
	"an alphabetic character, and end with an alphanumeric character"
#define MSG_QNAME                                                                                  \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "   \
	"an alphanumeric character"
#define MSG_MAX(n) "must be no more than " #n " characters"

static bool fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return false;
}

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static bool label_chars(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* label(\.label)* over s[0..n): no length limit per label, as in Kubernetes' expression */
static bool subdomain_chars(const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!label_chars(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n) */
static bool qname_chars(const char *s, size_t n)
{
	if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool k8s_dns1123_label(const char *s, const char **why)
{
	size_t n = strlen(s);

	if (n > K8S_DNS1123_LABEL_MAX)
		return fail(why, MSG_MAX(63));
	if (!label_chars(s, n))
		/* Kubernetes says so when the only fault is a dot */
		return fail(why, subdomain_chars(s, n) ? "must not contain dots" : MSG_LABEL);
	return true;
}

bool k8s_dns1123_subdomain(const char *s, const char **why)
{
	size_t n = strlen(s);

	if (n > K8S_DNS1123_SUBDOMAIN_MAX)
		return fail(why, MSG_MAX(253));
	if (!subdomain_chars(s, n))
		return fail(why, MSG_SUBDOMAIN);
	return true;
}

bool k8s_dns1035_label(const char *s, const char **why)
{
	size_t n = strlen(s);

	if (n > K8S_DNS1035_LABEL_MAX)
		return fail(why, MSG_MAX(63));
	if (!label_chars(s, n) || !(s[0] >= 'a' && s[0] <= 'z'))
		return fail(why, MSG_1035);
	return true;
}

bool k8s_qualified_name(const char *s, const char **why)
{
	const char *slash = strchr(s, '/');
	const char *name = s;

	if (slash) {
		size_t pl = (size_t)(slash - s);

		if (strchr(slash + 1, '/'))
			return fail(why, "a qualified name " MSG_QNAME " with an optional DNS "
					 "subdomain prefix and '/' (e.g. 'example.com/MyName')");
		if (pl == 0)
			return fail(why, "prefix part must be non-empty");
		if (pl > K8S_DNS1123_SUBDOMAIN_MAX)
			return fail(why, "prefix part " MSG_MAX(253));
		if (!subdomain_chars(s, pl))
			return fail(why, "prefix part " MSG_SUBDOMAIN);
		name = slash + 1;
	}
	if (!*name)
		return fail(why, "name part must be non-empty");
	if (strlen(name) > K8S_QUALIFIED_NAME_MAX)
		return fail(why, "name part " MSG_MAX(63));
	if (!qname_chars(name, strlen(name)))
		return fail(why, "name part " MSG_QNAME);
	return true;
}

bool k8s_label_value(const char *s, const char **why)
{
	size_t n = strlen(s);

	if (n > K8S_LABEL_VALUE_MAX)
		return fail(why, MSG_MAX(63));
	if (n && !qname_chars(s, n))
		return fail(why, "a valid label must be an empty string or " MSG_QNAME);
	return true;
}

bool k8s_extended_resource_name(const char *s, const char **why)
{
	const char *slash = strchr(s, '/');

	if (!slash)
		return fail(why, "must be domain/name, such as example.com/hca (a name without a "
				 "domain is a native Kubernetes resource)");
	/* IsNativeResource looks for the string anywhere, so "mykubernetes.io/x" is native too */
	if (strstr(s, "kubernetes.io/"))
		return fail(why, "the kubernetes.io domain is reserved for native Kubernetes "
				 "resources");
	if (!strncmp(s, "requests.", 9))
		return fail(why, "the requests. prefix is reserved (a resource quota names "
				 "requests.<resource>)");
	/* Kubernetes checks "requests." + s as a qualified name; with the domain not empty that is
	 * s a qualified name whose domain leaves room for the 9 bytes of "requests." */
	if (slash != s && (size_t)(slash - s) > K8S_EXTENDED_DOMAIN_MAX && !strchr(slash + 1, '/'))
		return fail(why, "the domain must be no more than 244 characters "
				 "(requests.<domain> is a DNS subdomain of at most 253)");
	return k8s_qualified_name(s, why);
}

/* ---- quantities --------------------------------------------------------------------------- */

struct suffix {
	const char *s;
	int exp10;
	int exp2;
};

static const struct suffix suffixes[] = {
	{ "", 0, 0 },	 { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },
	{ "k", 3, 0 },	 { "M", 6, 0 },	  { "G", 9, 0 },   { "T", 12, 0 },
	{ "P", 15, 0 },	 { "E", 18, 0 },  { "Ki", 0, 10 }, { "Mi", 0, 20 },
	{ "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
};

/* e<signed integer> or E<signed integer>, the integer within int32 as Kubernetes now requires
 * (it used to truncate 1e4294967297 to 1e1) */
static bool exponent(const char *s, int64_t *ret)
{
	bool neg = false;
	int64_t v = 0;

	if (*s != 'e' && *s != 'E')
		return false;
	s++;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > INT32_MAX)
			return false;
	}
	*ret = neg ? -v : v;
	return true;
}

/* A number's digits as written, the integer part's then the fraction's, without the point. */
struct digits {
	const char *a, *b;
	size_t na, nb;
};

static unsigned digit_at(const struct digits *d, size_t i)
{
	return (unsigned)((i < d->na ? d->a[i] : d->b[i - d->na]) - '0');
}

/* The value of d's digits from first on (first is not 0) with the decimal point after point
 * of them (which may lie outside the digits), times 2^exp2, rounded up. -ERANGE past int64.
 * Every digit counts: a 1 far after the point still rounds up, whatever the length. */
static int quantity_value(const struct digits *d, size_t first, int64_t point, int exp2,
			  uint64_t *ret)
{
	uint64_t mul = (uint64_t)1 << exp2, whole = 0, carry = 0;
	size_t n = d->na + d->nb - first;
	bool rest = false;
	int64_t lead;

	/* 10^19 > INT64_MAX: with a non-zero first digit, 20 digits before the point overflow */
	if (point > 19)
		return -ERANGE;
	for (int64_t i = 0; i < point; i++)
		whole = whole * 10 + ((size_t)i < n ? digit_at(d, first + (size_t)i) : 0);
	/* The fraction times mul, from its last digit: carry stays below mul (at most 2^60), so
	 * digit * mul + carry fits; the digits this leaves behind say whether to round up. */
	for (size_t i = n; i-- > (size_t)(point > 0 ? point : 0);) {
		uint64_t t = digit_at(d, first + i) * mul + carry;

		rest |= t % 10 != 0;
		carry = t / 10;
	}
	/* zeros between the point and the digits: after 19 of them carry is 0 whatever it was */
	for (lead = point < 0 ? -point : 0; lead > 0 && carry; lead--) {
		rest |= carry % 10 != 0;
		carry /= 10;
	}
	if (__builtin_mul_overflow(whole, mul, &whole) ||
	    __builtin_add_overflow(whole, carry, &whole) ||
	    __builtin_add_overflow(whole, (uint64_t)rest, &whole) || whole > INT64_MAX)
		return -ERANGE;
	*ret = whole;
	return 0;
}

int k8s_quantity_parse(const char *s, int64_t *ret, const char **why)
{
	struct digits d = { 0 };
	const char *p = s;
	int64_t exp10 = 0, point;
	size_t first = 0;
	int exp2 = 0, r;
	bool neg = false, found = false;
	uint64_t v;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	d.a = p;
	while (*p >= '0' && *p <= '9')
		p++;
	d.na = (size_t)(p - d.a);
	d.b = p;
	if (*p == '.') {
		d.b = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		d.nb = (size_t)(p - d.b);
	}
	/* the grammar's <number> has a digit; ParseQuantity's scanner also reads ".", "+" and "-"
	 * as 0, which no one writes on purpose */
	if (d.na + d.nb == 0) {
		if (why)
			*why = "a quantity starts with a number, such as 64Gi, 1.5 or 500m";
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]) && !found; i++)
		if (!strcmp(p, suffixes[i].s)) {
			exp10 = suffixes[i].exp10;
			exp2 = suffixes[i].exp2;
			found = true;
		}
	if (!found && !exponent(p, &exp10)) {
		if (why)
			*why = "the suffix after the number must be Ki, Mi, Gi, Ti, Pi, Ei, n, u, "
			       "m, k, M, G, T, P, E or an exponent (e3, E-6)";
		return -EINVAL;
	}
	/* the zeros in front carry no value: the point moves with them */
	point = (int64_t)d.na + exp10;
	while (first < d.na + d.nb && digit_at(&d, first) == 0)
		first++, point--;
	if (first == d.na + d.nb) {
		*ret = 0;
		return 0;
	}
	r = quantity_value(&d, first, point, exp2, &v);
	if (r < 0) {
		if (why)
			*why = "the value does not fit in 64 bits (at most 9223372036854775807, "
			       "8Ei - 1)";
		return r;
	}
	*ret = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}
