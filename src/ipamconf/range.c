/* SPDX-License-Identifier: Apache-2.0 */
/* Range arithmetic on 128-bit integers, so IPv4 and IPv6 are one code path: an IPv4 address
 * is its 32-bit value, an IPv6 address its 128-bit value, and a range is [start, end] minus a
 * sorted list of excluded spans. Nothing here walks a range address by address: sizes and
 * "next free" are computed from the spans, so a /64 costs what a /24 does (whereabouts
 * counts offsets in a uint64 and can address only the first /65 of a /64; issue §1.2). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ipamconf/ipamconf.h"
#include "util/cleanup.h"

ipamconf_u128 ipamconf_u128_from_addr(const struct cnispec_addr *a)
{
	size_t n = a->family == AF_INET ? 4 : 16;
	ipamconf_u128 v = 0;

	for (size_t i = 0; i < n; i++)
		v = (v << 8) | a->a[i];
	return v;
}

void ipamconf_addr_from_u128(int family, ipamconf_u128 v, struct cnispec_addr *ret)
{
	size_t n = family == AF_INET ? 4 : 16;

	memset(ret, 0, sizeof(*ret));
	ret->family = family;
	for (size_t i = n; i-- > 0;) {
		ret->a[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

const char *ipamconf_u128_str(ipamconf_u128 v, char *buf)
{
	char tmp[40];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + (int)(v % 10));
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

const char *ipamconf_range_addr_str(const struct ipamconf_range *r, ipamconf_u128 v, char *buf)
{
	struct cnispec_addr a;

	ipamconf_addr_from_u128(r->family, v, &a);
	return cnispec_addr_str(&a, buf);
}

/* The mask of the host part of a prefix of len bits in a family of bits. */
static ipamconf_u128 host_mask(unsigned bits, unsigned len)
{
	unsigned host = bits - len;

	return host >= 128 ? ~(ipamconf_u128)0 : (((ipamconf_u128)1 << host) - 1);
}

bool ipamconf_prefix_contains(const struct cnispec_prefix *p, const struct cnispec_addr *a)
{
	unsigned bits = p->addr.family == AF_INET ? 32 : 128;
	ipamconf_u128 m = ~host_mask(bits, p->len);

	return a->family == p->addr.family &&
	       (ipamconf_u128_from_addr(a) & m) == (ipamconf_u128_from_addr(&p->addr) & m);
}

ipamconf_u128 ipamconf_range_size(const struct ipamconf_range *r)
{
	ipamconf_u128 excluded = 0;

	for (size_t i = 0; i < r->n_excl; i++)
		excluded += r->excl[i].hi - r->excl[i].lo + 1;
	/* (end - start + 1) - excluded, ordered so that no step overflows: a range always
	 * excludes at least its network address when it spans a whole family */
	return r->end - r->start - excluded + 1;
}

/* The excluded span holding a, or NULL (binary search: spans are sorted and disjoint). */
static const struct ipamconf_span *span_of(const struct ipamconf_range *r, ipamconf_u128 a)
{
	size_t lo = 0, hi = r->n_excl;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < r->excl[mid].lo)
			hi = mid;
		else if (a > r->excl[mid].hi)
			lo = mid + 1;
		else
			return &r->excl[mid];
	}
	return NULL;
}

bool ipamconf_range_usable(const struct ipamconf_range *r, ipamconf_u128 a)
{
	return a >= r->start && a <= r->end && !span_of(r, a);
}

int ipamconf_range_next(const struct ipamconf_range *r, ipamconf_u128 from, ipamconf_u128 *ret)
{
	const struct ipamconf_span *sp;

	if (from < r->start)
		from = r->start;
	if (from > r->end)
		return 0;
	/* spans are merged, so one jump lands on a usable address or past the end */
	sp = span_of(r, from);
	if (sp) {
		if (sp->hi >= r->end)
			return 0;
		from = sp->hi + 1;
	}
	*ret = from;
	return 1;
}

int ipamconf_range_advance(const struct ipamconf_range *r, ipamconf_u128 a, ipamconf_u128 k,
			   ipamconf_u128 *ret)
{
	ipamconf_u128 target;

	if (k > r->end - a)
		return 0;
	target = a + k;
	/* every excluded span after a that starts at or before the target pushes it on by its
	 * length; spans are sorted, so one pass */
	for (size_t i = 0; i < r->n_excl; i++) {
		ipamconf_u128 len = r->excl[i].hi - r->excl[i].lo + 1;

		if (r->excl[i].hi <= a)
			continue;
		if (r->excl[i].lo > target)
			break;
		if (len > r->end - target)
			return 0;
		target += len;
	}
	if (target > r->end)
		return 0;
	*ret = target;
	return 1;
}

static int span_cmp(const void *a, const void *b)
{
	const struct ipamconf_span *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Add [lo, hi] clipped to [start, end]. */
static void span_add(struct ipamconf_range *r, ipamconf_u128 lo, ipamconf_u128 hi)
{
	if (hi < r->start || lo > r->end)
		return;
	r->excl[r->n_excl].lo = lo < r->start ? r->start : lo;
	r->excl[r->n_excl].hi = hi > r->end ? r->end : hi;
	r->n_excl++;
}

static void spans_merge(struct ipamconf_range *r)
{
	size_t out = 0;

	if (!r->n_excl)
		return;
	qsort(r->excl, r->n_excl, sizeof(*r->excl), span_cmp);
	for (size_t i = 1; i < r->n_excl; i++) {
		struct ipamconf_span *last = &r->excl[out];

		/* overlapping or adjacent: one span (hi + 1 cannot wrap: hi <= end < max, or the
		 * span reaches end and absorbs every later one) */
		if (r->excl[i].lo <= last->hi ||
		    (last->hi != ~(ipamconf_u128)0 && r->excl[i].lo == last->hi + 1)) {
			if (r->excl[i].hi > last->hi)
				last->hi = r->excl[i].hi;
		} else {
			r->excl[++out] = r->excl[i];
		}
	}
	r->n_excl = out + 1;
}

static void defaults(struct ipamconf_range *r, ipamconf_u128 last)
{
	unsigned len = r->subnet.len;

	/* IPv4: the network and broadcast addresses are not hosts, except on /31 (RFC 3021) and
	 * /32. IPv6: the subnet-router anycast address (all host bits zero, RFC 4291 2.6.1) is
	 * not a host, except on /127 (RFC 6164) and /128; there is no broadcast. */
	if (r->family == AF_INET && len <= 30) {
		r->start = r->net + 1;
		r->end = last - 1;
	} else if (r->family == AF_INET6 && len <= 126) {
		r->start = r->net + 1;
		r->end = last;
	} else {
		r->start = r->net;
		r->end = last;
	}
}

int ipamconf_range_build(struct ipamconf_range *r, const struct cnispec_prefix *subnet,
			 const struct cnispec_addr *start, const struct cnispec_addr *end,
			 const struct cnispec_addr *gateway, const struct cnispec_prefix *excl,
			 size_t n_excl, const char *network_name)
{
	char a[CNISPEC_PREFIX_STRLEN], b[CNISPEC_PREFIX_STRLEN], c[CNISPEC_PREFIX_STRLEN];
	ipamconf_u128 hm, last, def_start, def_end;

	memset(r, 0, sizeof(*r));
	r->family = subnet->addr.family;
	r->bits = r->family == AF_INET ? 32 : 128;
	hm = host_mask(r->bits, subnet->len);
	r->net = ipamconf_u128_from_addr(&subnet->addr) & ~hm;
	last = r->net | hm;
	r->subnet.len = subnet->len;
	ipamconf_addr_from_u128(r->family, r->net, &r->subnet.addr);
	defaults(r, last);
	def_start = r->start;
	def_end = r->end;
	if (start)
		r->start = ipamconf_u128_from_addr(start);
	if (end)
		r->end = ipamconf_u128_from_addr(end);
	r->excl = calloc(n_excl + 3, sizeof(*r->excl));
	if (!r->excl)
		return -ENOMEM;
	if (r->family == AF_INET && subnet->len <= 30) {
		span_add(r, r->net, r->net);
		span_add(r, last, last);
	} else if (r->family == AF_INET6 && subnet->len <= 126) {
		span_add(r, r->net, r->net);
	}
	if (gateway) {
		r->has_gateway = true;
		r->gateway = ipamconf_u128_from_addr(gateway);
		span_add(r, r->gateway, r->gateway);
	}
	for (size_t i = 0; i < n_excl; i++) {
		unsigned ebits = excl[i].addr.family == AF_INET ? 32 : 128;
		ipamconf_u128 em = host_mask(ebits, excl[i].len),
			      lo = ipamconf_u128_from_addr(&excl[i].addr) & ~em;

		if (excl[i].addr.family == r->family)
			span_add(r, lo, lo | em);
	}
	spans_merge(r);

	cnispec_prefix_str(&r->subnet, a);
	snprintf(r->pool, sizeof(r->pool), "%s%s%s", network_name ? network_name : "",
		 network_name ? "_" : "", a);
	*strchr(r->pool, '/') = '_';
	if (r->start == def_start && r->end == def_end)
		snprintf(r->text, sizeof(r->text), "%s", a);
	else
		snprintf(r->text, sizeof(r->text), "%s (%s-%s)", a,
			 ipamconf_range_addr_str(r, r->start, b),
			 ipamconf_range_addr_str(r, r->end, c));
	return 0;
}

void ipamconf_range_clear(struct ipamconf_range *r)
{
	free(r->excl);
	r->excl = NULL;
	r->n_excl = 0;
}
