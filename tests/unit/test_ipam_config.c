/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-ipam's configuration and range arithmetic: whereabouts' and host-local's forms, IPv4
 * and IPv6, exclusions, the FIRST-LAST/LEN form, /31 /32 /127 /128, ranges that exclude
 * everything, and every refusal with its exact message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "ipamconf/ipamconf.h"
#include "nodeconf/nodeconf.h"

static struct ipamconf *parse_ok_flags(const char *ipam, unsigned flags)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;
	json_error_t je;
	json_t *o = json_loads(ipam, 0, &je);

	if (!o)
		fail_msg("test JSON: %s: %s", je.text, ipam);
	if (ipamconf_parse_flags(o, "rdma-net", flags, &c, &err) < 0)
		fail_msg("refused: %s: %s\n%s", err.msg, err.details, ipam);
	json_decref(o);
	return c;
}

static struct ipamconf *parse_ok(const char *ipam)
{
	return parse_ok_flags(ipam, 0);
}

static void parse_bad_flags(const char *ipam, unsigned flags, unsigned code, const char *details)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;
	json_t *o = json_loads(ipam, 0, NULL);

	assert_non_null(o);
	assert_true(ipamconf_parse_flags(o, "rdma-net", flags, &c, &err) < 0);
	assert_null(c);
	if (err.code != code || strcmp(err.details, details))
		fail_msg("for %s\n  got:  %u %s\n  want: %u %s", ipam, err.code, err.details, code,
			 details);
	json_decref(o);
}

static void parse_bad(const char *ipam, unsigned code, const char *details)
{
	parse_bad_flags(ipam, 0, code, details);
}

static const char *str(const struct ipamconf_range *r, ipamconf_u128 v)
{
	static char buf[4][CNISPEC_PREFIX_STRLEN];
	static int i;

	i = (i + 1) % 4;
	return ipamconf_range_addr_str(r, v, buf[i]);
}

static const char *size_str(const struct ipamconf_range *r)
{
	static char buf[40];

	return ipamconf_u128_str(ipamconf_range_size(r), buf);
}

static ipamconf_u128 next(const struct ipamconf_range *r, const char *from)
{
	struct cnispec_addr a;
	ipamconf_u128 v = 0;

	assert_int_equal(cnispec_addr_parse(from, &a), 0);
	if (ipamconf_range_next(r, ipamconf_u128_from_addr(&a), &v) != 1)
		return 0;
	return v;
}

/* ---- arithmetic ---------------------------------------------------------------------------- */

static void test_ipv4_subnet(void **state)
{
	struct ipamconf *c = parse_ok("{\"type\":\"rdmak-ipam\",\"range\":\"10.56.0.0/27\"}");
	const struct ipamconf_range *r = &c->sets[0].r[0];

	assert_int_equal(c->n_sets, 1);
	assert_string_equal(str(r, r->start), "10.56.0.1");
	assert_string_equal(str(r, r->end), "10.56.0.30");
	assert_string_equal(size_str(r), "30");
	assert_string_equal(r->pool, "10.56.0.0_27");
	assert_string_equal(r->text, "10.56.0.0/27");
	assert_false(r->has_gateway);
	ipamconf_free(c);

	/* a gateway is never handed out */
	c = parse_ok("{\"range\":\"10.56.0.0/27\",\"gateway\":\"10.56.0.1\"}");
	r = &c->sets[0].r[0];
	assert_string_equal(size_str(r), "29");
	assert_string_equal(str(r, next(r, "10.56.0.0")), "10.56.0.2");
	ipamconf_free(c);
}

static void test_first_last_form(void **state)
{
	/* whereabouts' FIRST-IP-CIDR form: the bounds from the text, the subnet from /len */
	struct ipamconf *c = parse_ok("{\"range\":\"192.168.2.225-192.168.2.230/28\"}");
	const struct ipamconf_range *r = &c->sets[0].r[0];

	assert_string_equal(str(r, r->start), "192.168.2.225");
	assert_string_equal(str(r, r->end), "192.168.2.230");
	assert_string_equal(size_str(r), "6");
	assert_string_equal(r->text, "192.168.2.224/28 (192.168.2.225-192.168.2.230)");
	assert_string_equal(r->pool, "192.168.2.224_28");
	assert_int_equal(c->n_warnings, 0);
	ipamconf_free(c);
}

static void test_host_bits(void **state)
{
	/* seed 003's "192.168.x.152/27": whereabouts uses the whole /27; so do we, and say so */
	struct ipamconf *c =
		parse_ok("{\"range\":\"192.168.7.152/27\",\"exclude\":[\"192.168.7.151/32\"]}");
	const struct ipamconf_range *r = &c->sets[0].r[0];

	assert_string_equal(str(r, r->start), "192.168.7.129");
	assert_string_equal(str(r, r->end), "192.168.7.158");
	assert_string_equal(size_str(r), "29");
	assert_int_equal(c->n_warnings, 1);
	assert_string_equal(
		c->warnings[0],
		"ipam.range: 192.168.7.152/27 has host bits set; like whereabouts, rdmak-ipam "
		"uses all of 192.168.7.128/27 (write 192.168.7.152-192.168.7.159/27 for a range "
		"that starts there)");
	ipamconf_free(c);
}

static void test_exclude(void **state)
{
	struct ipamconf *c =
		parse_ok("{\"range\":\"10.0.0.0/24\",\"exclude\":[\"10.0.0.0/28\",\"10.0.0.100\","
			 "\"10.0.0.96/30\","
			 "\"10.0.1.0/24\"],\"range_end\":\"10.0.0.200\"}");
	const struct ipamconf_range *r = &c->sets[0].r[0];

	/* .1-.200 = 200, minus .1-.15 (15), .96-.99 (4), .100 (1, merged with the /30) */
	assert_string_equal(size_str(r), "180");
	assert_string_equal(str(r, next(r, "10.0.0.0")), "10.0.0.16");
	assert_string_equal(str(r, next(r, "10.0.0.96")), "10.0.0.101");
	assert_string_equal(str(r, next(r, "10.0.0.200")), "10.0.0.200");
	assert_true(next(r, "10.0.0.201") == 0);
	assert_int_equal(r->n_excl, 2);
	assert_false(ipamconf_range_usable(r, r->start + 98));
	/* an exclusion outside the range excludes nothing: accepted, and said */
	assert_int_equal(c->n_warnings, 1);
	assert_string_equal(
		c->warnings[0],
		"ipam.exclude[3]: 10.0.1.0/24 is outside the range 10.0.0.1-10.0.0.200: "
		"it excludes nothing");
	/* jumps count usable addresses: from .16, 80 ahead skips .96-.100 */
	{
		ipamconf_u128 a = next(r, "10.0.0.16"), b;

		assert_int_equal(ipamconf_range_advance(r, a, 79, &b), 1);
		assert_string_equal(str(r, b), "10.0.0.95");
		assert_int_equal(ipamconf_range_advance(r, a, 80, &b), 1);
		assert_string_equal(str(r, b), "10.0.0.101");
		assert_int_equal(ipamconf_range_advance(r, a, 179, &b), 1);
		assert_string_equal(str(r, b), "10.0.0.200");
		assert_int_equal(ipamconf_range_advance(r, a, 180, &b), 0);
	}
	ipamconf_free(c);
}

static void test_idle_excludes(void **state)
{
	/* in the subnet but past range_end, in another subnet, and (host-local form has none) in
	 * an ipRanges element; one that overlaps the range's edge is no warning */
	struct ipamconf *c =
		parse_ok("{\"ipRanges\":[{\"range\":\"10.0.0.0/24\",\"range_end\":\"10.0.0.99\","
			 "\"exclude\":[\"10.0.0.200\",\"10.0.0.96/27\",\"192.168.0.0/16\"]},"
			 "{\"range\":\"fd00::/120\",\"exclude\":[\"fd00::1:0/112\"]}]}");

	assert_int_equal(c->n_warnings, 3);
	assert_string_equal(c->warnings[0],
			    "ipam.ipRanges[0].exclude[0]: 10.0.0.200/32 is outside the range "
			    "10.0.0.1-10.0.0.99: it excludes nothing");
	assert_string_equal(c->warnings[1],
			    "ipam.ipRanges[0].exclude[2]: 192.168.0.0/16 is outside the range "
			    "10.0.0.1-10.0.0.99: it excludes nothing");
	assert_string_equal(c->warnings[2],
			    "ipam.ipRanges[1].exclude[0]: fd00::1:0/112 is outside the range "
			    "fd00::1-fd00::ff: it excludes nothing");
	ipamconf_free(c);
}

static void test_tiny_subnets(void **state)
{
	struct ipamconf *c =
		parse_ok("{\"ipRanges\":[{\"range\":\"10.9.0.4/31\"},{\"range\":\"10.9.0.7/32\"},"
			 "{\"range\":\"fd00::a/127\"},{\"range\":\"fd00::1:1/128\"}]}");

	assert_int_equal(c->n_sets, 4);
	/* /31 (RFC 3021) and /127 (RFC 6164): both addresses; /32 and /128: the one */
	assert_string_equal(size_str(&c->sets[0].r[0]), "2");
	assert_string_equal(str(&c->sets[0].r[0], c->sets[0].r[0].start), "10.9.0.4");
	assert_string_equal(size_str(&c->sets[1].r[0]), "1");
	assert_string_equal(str(&c->sets[1].r[0], c->sets[1].r[0].start), "10.9.0.7");
	assert_string_equal(size_str(&c->sets[2].r[0]), "2");
	assert_string_equal(str(&c->sets[2].r[0], c->sets[2].r[0].end), "fd00::b");
	assert_string_equal(size_str(&c->sets[3].r[0]), "1");
	assert_string_equal(c->sets[3].r[0].pool, "fd00::1:1_128");
	ipamconf_free(c);
}

static void test_ipv6(void **state)
{
	struct ipamconf *c =
		parse_ok("{\"range\":\"fd00:10::/64\",\"exclude\":[\"fd00:10::/120\"]}");
	const struct ipamconf_range *r = &c->sets[0].r[0];

	/* 2^64 addresses, minus the first 256 (the subnet-router anycast address among them) */
	assert_string_equal(size_str(r), "18446744073709551360");
	assert_string_equal(str(r, next(r, "fd00:10::")), "fd00:10::100");
	assert_string_equal(str(r, r->end), "fd00:10::ffff:ffff:ffff:ffff");
	ipamconf_free(c);

	/* the widest ranges a configuration may give */
	c = parse_ok("{\"range\":\"::/1\"}");
	assert_string_equal(size_str(&c->sets[0].r[0]), "170141183460469231731687303715884105727");
	ipamconf_free(c);
	c = parse_ok("{\"range\":\"0.0.0.0/1\"}");
	assert_string_equal(size_str(&c->sets[0].r[0]), "2147483646");
	ipamconf_free(c);
	/* the whole family (refused as a configuration): no step of the arithmetic overflows */
	{
		static const char *const whole[] = { "::/0", "0.0.0.0/0" };
		static const char *const sizes[] = { "340282366920938463463374607431768211455",
						     "4294967294" };

		for (size_t i = 0; i < 2; i++) {
			struct cnispec_prefix p;
			struct ipamconf_range w;

			assert_int_equal(cnispec_prefix_parse(whole[i], &p), 0);
			assert_int_equal(
				ipamconf_range_build(&w, &p, NULL, NULL, NULL, NULL, 0, NULL), 0);
			assert_string_equal(size_str(&w), sizes[i]);
			ipamconf_range_clear(&w);
		}
	}
}

static void test_all_excluded(void **state)
{
	struct ipamconf *c = parse_ok(
		"{\"ipRanges\":[{\"range\":\"10.0.0.0/30\",\"exclude\":[\"10.0.0.0/30\"]},"
		"{\"range\":\"fd00::/126\",\"exclude\":[\"fd00::1\",\"fd00::2\",\"fd00::3\"]},"
		"{\"range\":\"10.1.0.0/32\",\"exclude\":[\"10.1.0.0\"]}]}");

	for (size_t i = 0; i < 3; i++) {
		const struct ipamconf_range *r = &c->sets[i].r[0];
		ipamconf_u128 v;

		assert_string_equal(size_str(r), "0");
		assert_int_equal(ipamconf_range_next(r, r->start, &v), 0);
	}
	ipamconf_free(c);
}

static void test_host_local(void **state)
{
	struct ipamconf *c = parse_ok(
		"{\"type\":\"rdmak-ipam\",\"ranges\":[[{\"subnet\":\"10.56.0.0/27\"},"
		"{\"subnet\":\"10.57.0.0/24\","
		"\"rangeStart\":\"10.57.0.10\",\"rangeEnd\":\"10.57.0.20\",\"gateway\":"
		"\"10.57.0.254\"}],"
		"[{\"subnet\":\"fd00::/64\"}]],\"routes\":[{\"dst\":\"0.0.0.0/0\"},{\"dst\":"
		"\"192.168.0.0/16\","
		"\"gw\":\"10.56.0.254\",\"table\":107}],\"dns\":{\"nameservers\":"
		"[\"10.56.0.1\"]}}");

	assert_int_equal(c->n_sets, 2);
	assert_int_equal(c->sets[0].n, 2);
	/* host-local's default gateway .1: 29 addresses, as its users count them */
	assert_true(c->sets[0].r[0].has_gateway);
	assert_string_equal(str(&c->sets[0].r[0], c->sets[0].r[0].gateway), "10.56.0.1");
	assert_string_equal(size_str(&c->sets[0].r[0]), "29");
	assert_string_equal(size_str(&c->sets[0].r[1]), "11");
	assert_string_equal(c->sets[0].r[1].text, "10.57.0.0/24 (10.57.0.10-10.57.0.20)");
	assert_string_equal(c->sets[0].r[1].path, "ipam.ranges[0][1]");
	assert_string_equal(str(&c->sets[1].r[0], c->sets[1].r[0].gateway), "fd00::1");
	assert_int_equal(c->routes_dns->n_routes, 2);
	assert_int_equal(c->routes_dns->routes[1].table, 107);
	assert_string_equal(c->routes_dns->dns.nameservers[0], "10.56.0.1");
	ipamconf_free(c);
	/* exclude in a host-local range (rdmak's: what `rdmak convert` writes a SpiderIPPool's
	 * excludeIPs and held addresses into): 10.57.0.10-20 less .12/31 and .20 */
	c = parse_ok(
		"{\"ranges\":[[{\"subnet\":\"10.57.0.0/24\",\"rangeStart\":\"10.57.0.10\","
		"\"rangeEnd\":\"10.57.0.20\",\"exclude\":[\"10.57.0.12/31\",\"10.57.0.20\"]}]]}");
	assert_string_equal(size_str(&c->sets[0].r[0]), "8");
	assert_string_equal(str(&c->sets[0].r[0], next(&c->sets[0].r[0], "10.57.0.12")),
			    "10.57.0.14");
	assert_int_equal(next(&c->sets[0].r[0], "10.57.0.20"), 0);
	ipamconf_free(c);
	parse_bad("{\"ranges\":[[{\"subnet\":\"10.57.0.0/24\",\"exclude\":[\"fd00::1\"]}]]}", 7,
		  "ipam.ranges[0][0].exclude[0]: \"fd00::1\" is not of the range's address family");
}

/* issue 17 §2: host-local's refusals, whereabouts' acceptances. */
static void test_anchor_parsing(void **state)
{
	struct ipamconf *c;
	const struct ipamconf_range *r;

	/* host-local's range.go: a subnet with host bits set is refused, naming the network */
	parse_bad("{\"ranges\":[[{\"subnet\":\"192.0.2.12/24\"}]]}", 7,
		  "ipam.ranges[0][0].subnet: \"192.0.2.12/24\" has host bits set: for a subnet "
		  "mask of length 24 the "
		  "network address is 192.0.2.0 (write 192.0.2.0/24, and \"rangeStart\" for where "
		  "to start)");
	parse_bad("{\"ranges\":[[{\"subnet\":\"2001:db8:1::1/64\"}]]}", 7,
		  "ipam.ranges[0][0].subnet: \"2001:db8:1::1/64\" has host bits set: for a subnet "
		  "mask of length 64 the "
		  "network address is 2001:db8:1:: (write 2001:db8:1::/64, and \"rangeStart\" for "
		  "where to start)");
	/* host-local's config.go: range sets that overlap */
	parse_bad("{\"ranges\":[[{\"subnet\":\"10.0.0.0/24\"}],[{\"subnet\":\"10.0.0.0/24\"}]]}", 7,
		  "ipam.ranges: range set 0 overlaps with 1 (ipam.ranges[0][0] 10.0.0.0/24 and "
		  "ipam.ranges[1][0] "
		  "10.0.0.0/24)");
	parse_bad("{\"ranges\":[[{\"subnet\":\"192.168.0.0/24\"}],[{\"subnet\":\"10.0.0.0/24\"}],"
		  "[{\"subnet\":\"10.0.0.0/16\"}]]}",
		  7,
		  "ipam.ranges: range set 1 overlaps with 2 (ipam.ranges[1][0] 10.0.0.0/24 and "
		  "ipam.ranges[2][0] "
		  "10.0.0.0/16)");
	/* whereabouts' ipRanges in one subnet: one pool, one attachment, one address twice */
	parse_bad("{\"ipRanges\":[{\"range\":\"10.0.0.0/24\"},{\"range\":\"10.0.0.0/24\","
		  "\"range_start\":"
		  "\"10.0.0.100\"}]}",
		  7,
		  "ipam.ipRanges[1]: 10.0.0.0/24 (10.0.0.100-10.0.0.254) overlaps ipam.ipRanges[0] "
		  "10.0.0.0/24 in the "
		  "same subnet: one attachment would get one address twice");
	/* ... across subnets the allocator keeps them apart */
	c = parse_ok("{\"ipRanges\":[{\"range\":\"10.0.0.0/24\"},{\"range\":\"10.0.0.0/28\"}]}");
	assert_int_equal(c->n_sets, 2);
	ipamconf_free(c);

	/* whereabouts' config tests: leading zeros are decimal, in range, range_start, range_end */
	c = parse_ok("{\"range\":\"00192.00168.1.5-000000192.168.1.25/24\"}");
	r = &c->sets[0].r[0];
	assert_string_equal(c->sets[0].r[0].text, "192.168.1.0/24 (192.168.1.5-192.168.1.25)");
	ipamconf_free(c);
	c = parse_ok("{\"range\":\"00192.00168.1.0/24\",\"range_start\":\"00192.00168.1.44\","
		     "\"range_end\":\"00192.00168.01.209\"}");
	r = &c->sets[0].r[0];
	assert_string_equal(str(r, r->start), "192.168.1.44");
	assert_string_equal(str(r, r->end), "192.168.1.209");
	ipamconf_free(c);
	/* 0 alone, and a zero part, stay */
	c = parse_ok("{\"range\":\"010.0.00.0/16\"}");
	assert_string_equal(c->sets[0].r[0].text, "10.0.0.0/16");
	ipamconf_free(c);
	/* never octal, never past 255 */
	parse_bad("{\"range\":\"00256.0.0.0/24\"}", 7,
		  "ipam.range: \"00256.0.0.0/24\" is not a subnet in CIDR notation (like "
		  "10.56.0.0/24) or FIRST-LAST/LEN");
	/* whereabouts' datastore defaults to etcd: etcd_host alone names the etcd store, of the
	 * shape DEL and GC still take (its endpoints find the node's store) */
	c = parse_ok_flags("{\"range\":\"192.168.1.5-192.168.1.25/24\",\"etcd_host\":\"foo\"}",
			   IPAMCONF_LEGACY);
	assert_int_equal(c->store.kind, IPAMCONF_STORE_ETCD);
	assert_int_equal(c->store.n_endpoints, 1);
	assert_string_equal(c->store.endpoints[0], "foo");
	assert_true(c->store.legacy);
	ipamconf_free(c);
	/* whereabouts' and host-local's routes go out as given (CNI's types.ParseCIDR) */
	c = parse_ok(
		"{\"range\":\"192.168.1.44/28\",\"routes\":[{\"dst\":\"0.0.0.0/0\"},{\"dst\":"
		"\"192.168.0.0/16\",\"gw\":\"10.10.5.1\"},{\"dst\":\"3ffe:ffff:0:01ff::1/64\"}]}");
	{
		char a[CNISPEC_PREFIX_STRLEN];

		assert_int_equal(c->routes_dns->n_routes, 3);
		assert_string_equal(cnispec_prefix_str(&c->routes_dns->routes[2].dst, a),
				    "3ffe:ffff:0:1ff::1/64");
		assert_string_equal(cnispec_prefix_str(&c->routes_dns->routes[1].dst, a),
				    "192.168.0.0/16");
	}
	ipamconf_free(c);
	/* host-local reads addresses as Go's net.ParseIP: no leading zeros there */
	parse_bad("{\"ranges\":[[{\"subnet\":\"010.0.0.0/24\"}]]}", 7,
		  "ipam.ranges[0][0].subnet: \"010.0.0.0/24\" is not a subnet in CIDR notation "
		  "(like 10.56.0.0/24)");
}

/* ---- stores --------------------------------------------------------------------------------- */

static void test_stores(void **state)
{
	/* seed 003's block with only the store changed (and its Kubernetes settings gone) */
	struct ipamconf *c = parse_ok(
		"{\"type\":\"rdmak-ipam\",\"store\":\"file\",\"range\":\"192.168.7.152/27\","
		"\"exclude\":[\"192.168.7.151/32\"],\"log_file\":\"/var/log/whereabouts.log\","
		"\"log_level\":\"info\"}");

	assert_int_equal(c->store.kind, IPAMCONF_STORE_FILE);
	assert_null(c->store.data_dir);
	assert_string_equal(c->log_file, "/var/log/whereabouts.log");
	assert_true(c->has_log_level);
	ipamconf_free(c);

	/* a store of the node's, by name */
	c = parse_ok("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		     "\"network_name\":\"tenant-a\"}");
	assert_int_equal(c->store.kind, IPAMCONF_STORE_ETCD);
	assert_string_equal(c->store.etcd_name, "cluster");
	assert_int_equal(c->store.n_endpoints, 0);
	assert_null(c->store.tls_key);
	assert_string_equal(c->sets[0].r[0].pool, "tenant-a_10.0.0.0_24");
	ipamconf_free(c);
	/* whereabouts' "datastore": "etcd" is "store": "etcd" */
	c = parse_ok("{\"range\":\"10.0.0.0/24\",\"datastore\":\"etcd\",\"etcd\":\"cluster\"}");
	assert_int_equal(c->store.kind, IPAMCONF_STORE_ETCD);
	ipamconf_free(c);

	/* the shapes before, as DEL and GC take them: endpoints and prefix kept to find the node's
	 * store of them, the files never kept (nor read) */
	c = parse_ok_flags(
		"{\"range\":\"10.0.0.0/24\",\"datastore\":\"etcd\",\"etcd_host\":\"10.0.0.1:"
		"2379, 10.0.0.2:2379\","
		"\"etcd_ca_cert_file\":\"/ca.pem\",\"etcd_cert_file\":\"/c.pem\","
		"\"etcd_key_file\":\"/k.pem\"}",
		IPAMCONF_LEGACY);
	assert_int_equal(c->store.kind, IPAMCONF_STORE_ETCD);
	assert_int_equal(c->store.n_endpoints, 2);
	assert_string_equal(c->store.endpoints[1], "10.0.0.2:2379");
	assert_null(c->store.tls_key);
	assert_true(c->store.legacy);
	ipamconf_free(c);
	c = parse_ok_flags(
		"{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"https:"
		"//e1:2379\"],"
		"\"prefix\":\"/x\",\"tls\":{\"ca\":\"/ca\",\"cert\":\"/c\",\"key\":\"/k\"}}}",
		IPAMCONF_LEGACY);
	assert_string_equal(c->store.prefix, "/x");
	assert_null(c->store.tls_ca);
	assert_true(c->store.legacy);
	ipamconf_free(c);
	parse_bad_flags(
		"{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"a\"],"
		"\"tls\":{\"cert\":\"/c\"}}}",
		IPAMCONF_LEGACY, 7, "ipam.etcd.tls: \"cert\" and \"key\" go together");
}

/* ---- what a network names of the node's ------------------------------------------------------ */

static void node_parse(const char *text, struct nodeconf *n)
{
	char why[NODECONF_ERR_MAX];

	if (nodeconf_parse(text, strlen(text), n, why, sizeof(why)) < 0)
		fail_msg("node settings refused: %s", why);
	free(n->path);
	n->path = strdup("/etc/rdmak/cni.json");
}

static struct ipamconf *resolved(const char *ipam, unsigned flags, const struct nodeconf *n)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = parse_ok_flags(ipam, flags);

	if (ipamconf_resolve(c, n, flags, &err) < 0)
		fail_msg("refused: %s: %s\n%s", err.msg, err.details, ipam);
	return c;
}

static void resolve_bad(const char *ipam, unsigned flags, const struct nodeconf *n,
			const char *details)
{
	struct cnispec_error err = { 0 };
	struct ipamconf *c = parse_ok_flags(ipam, flags);

	assert_true(ipamconf_resolve(c, n, flags, &err) < 0);
	if (err.code != 7 || strcmp(err.details, details))
		fail_msg("for %s\n  got:  %u %s\n  want: 7 %s", ipam, err.code, err.details,
			 details);
	ipamconf_free(c);
}

static void test_resolve(void **state)
{
	struct nodeconf n = { 0 }, def = { 0 };
	struct ipamconf *c;

	node_parse("{\"logDir\":\"/var/log/rdmak\",\"dataDirs\":[\"/var/lib/cni/rdmak-ipam\","
		   "\"/var/lib/cni/networks\"],"
		   "\"etcd\":{\"cluster\":{\"endpoints\":[\"https://10.0.0.1:2379\",\"https:"
		   "//10.0.0.2:2379\"],"
		   "\"tls\":{\"ca\":\"/etc/rdmak/etcd/cluster/ca.crt\",\"cert\":"
		   "\"/etc/rdmak/etcd/cluster/tls.crt\","
		   "\"key\":\"/etc/rdmak/etcd/cluster/tls.key\"}}}}",
		   &n);
	/* the named store: the node's endpoints, prefix and files */
	c = resolved("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\"}", 0, &n);
	assert_int_equal(c->store.n_endpoints, 2);
	assert_string_equal(c->store.endpoints[1], "https://10.0.0.2:2379");
	assert_string_equal(c->store.prefix, "/rdmak/ipam");
	assert_string_equal(c->store.tls_key, "/etc/rdmak/etcd/cluster/tls.key");
	ipamconf_free(c);
	resolve_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"rail9\"}", 0, &n,
		    "ipam.etcd: \"rail9\" is not an etcd store of this node (/etc/rdmak/cni.json "
		    "names: cluster)");
	/* the shape before, on DEL: found by its endpoints (any order), its files never taken */
	c = resolved(
		"{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"https:"
		"//10.0.0.2:2379\","
		"\"https://10.0.0.1:2379\"],\"tls\":{\"key\":\"/home/u/k\",\"cert\":"
		"\"/home/u/c\"}}}",
		IPAMCONF_LEGACY, &n);
	assert_string_equal(c->store.etcd_name, "cluster");
	assert_string_equal(c->store.tls_key, "/etc/rdmak/etcd/cluster/tls.key");
	ipamconf_free(c);
	resolve_bad(
		"{\"range\":\"10.0.0.0/24\",\"etcd_host\":\"evil.example.com:2379\"}",
		IPAMCONF_LEGACY, &n,
		"ipam.etcd: this configuration names etcd by its endpoints "
		"(evil.example.com:2379) and prefix "
		"/rdmak/ipam, the shape before etcd stores were the node's, and no etcd store of "
		"this node "
		"(/etc/rdmak/cni.json \"etcd\") has them: the node's owner adds one, and the "
		"network writes "
		"\"etcd\": \"NAME\"");
	/* dataDir: the node's first without one; one of them or beneath one; host-local default */
	c = resolved("{\"range\":\"10.0.0.0/24\"}", 0, &n);
	assert_string_equal(c->store.data_dir, "/var/lib/cni/rdmak-ipam");
	assert_string_equal(c->store.data_base, "/var/lib/cni/rdmak-ipam");
	ipamconf_free(c);
	c = resolved("{\"range\":\"10.0.0.0/24\",\"dataDir\":\"/var/lib/cni/networks\"}", 0, &n);
	assert_string_equal(c->store.data_base, "/var/lib/cni/networks");
	ipamconf_free(c);
	c = resolved("{\"range\":\"10.0.0.0/24\",\"dataDir\":\"/var/lib/cni/rdmak-ipam/tenant-a\"}",
		     0, &n);
	assert_string_equal(c->store.data_base, "/var/lib/cni/rdmak-ipam");
	ipamconf_free(c);
	resolve_bad("{\"range\":\"10.0.0.0/24\",\"dataDir\":\"/etc/cron.d\"}", 0, &n,
		    "ipam.dataDir: /etc/cron.d is none of the node's dataDirs nor beneath one "
		    "(/etc/rdmak/cni.json "
		    "\"dataDirs\": /var/lib/cni/rdmak-ipam, /var/lib/cni/networks): rdmak-ipam "
		    "writes its store there as "
		    "root, so only where the node's owner allows: leave dataDir out "
		    "(/var/lib/cni/rdmak-ipam), or name one "
		    "of them or a folder beneath one");
	resolve_bad(
		"{\"range\":\"10.0.0.0/24\",\"dataDir\":\"/var/lib/cni/rdmak-ipam/../../../etc\"}",
		0, &n,
		"ipam.dataDir: /var/lib/cni/rdmak-ipam/../../../etc is none of the node's "
		"dataDirs nor beneath one "
		"(/etc/rdmak/cni.json \"dataDirs\": /var/lib/cni/rdmak-ipam, "
		"/var/lib/cni/networks): rdmak-ipam writes "
		"its store there as root, so only where the node's owner allows: leave dataDir out "
		"(/var/lib/cni/rdmak-ipam), or name one of them or a folder beneath one");
	resolve_bad(
		"{\"range\":\"10.0.0.0/24\",\"dataDir\":"
		"\"/var/lib/cni/rdmak-ipam/networks/other\"}",
		0, &n,
		"ipam.dataDir: /var/lib/cni/rdmak-ipam/networks/other lies inside the folders of "
		"the store at "
		"/var/lib/cni/rdmak-ipam (pools, networks, blocks or a name starting with '.'): "
		"name "
		"/var/lib/cni/rdmak-ipam itself, or another folder beneath it");
	/* logFile: beneath the node's logDir; DEL and GC leave it out with a warning */
	c = resolved("{\"range\":\"10.0.0.0/24\",\"log_file\":\"/var/log/rdmak/wb.log\"}", 0, &n);
	assert_string_equal(c->log_file, "/var/log/rdmak/wb.log");
	ipamconf_free(c);
	resolve_bad(
		"{\"range\":\"10.0.0.0/24\",\"log_file\":\"/etc/ld.so.preload\"}", 0, &n,
		"ipam.log_file: /etc/ld.so.preload is not beneath the node's logDir "
		"(/var/log/rdmak, "
		"/etc/rdmak/cni.json \"logDir\"): rdmak-ipam appends to it as root, so only "
		"there: write "
		"\"/var/log/rdmak/ld.so.preload\", or leave the key out (stderr has every line)");
	c = resolved("{\"range\":\"10.0.0.0/24\",\"logFile\":\"/tmp/whereabouts.log\"}",
		     IPAMCONF_LEGACY, &n);
	assert_null(c->log_file);
	assert_int_equal(c->n_warnings, 1);
	assert_string_equal(c->warnings[0],
			    "ipam.logFile: /tmp/whereabouts.log is not beneath the node's logDir "
			    "(/var/log/rdmak): not written, lines go to stderr only");
	ipamconf_free(c);
	nodeconf_clear(&n);

	/* a node without the file: the defaults, no etcd store */
	assert_int_equal(nodeconf_defaults(&def), 0);
	assert_false(def.found);
	c = resolved("{\"range\":\"10.0.0.0/24\",\"dataDir\":\"/var/lib/cni/networks\"}", 0, &def);
	ipamconf_free(c);
	resolve_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\"}", 0, &def,
		    "ipam.etcd: \"cluster\" is not an etcd store of this node (/etc/rdmak/cni.json "
		    "names: none)");
	nodeconf_clear(&def);
}

/* ---- refusals -------------------------------------------------------------------------------- */

#define KUBE_REFUSAL                                                                               \
	"ipam.datastore: unsupported key (value: \"kubernetes\"); rdmak-ipam keeps no state in "   \
	"Kubernetes objects: replace \"datastore\" and \"kubernetes\" with \"store\": \"etcd\", "  \
	"\"etcd\": \"NAME\" (one of the node's etcd stores, /etc/rdmak/cni.json \"etcd\") for a "  \
	"cluster-wide range (or \"store\": \"file\" for a range of this node only)"

#define WB_ETCD_WHY                                                                                \
	"whereabouts' etcd address and certificate files are the node's, not a network's: the "    \
	"node's CNI settings (/etc/rdmak/cni.json \"etcd\", docs/ipam.md) hold them; write "       \
	"\"store\": \"etcd\", \"etcd\": \"NAME\" naming one of the node's etcd stores"

static void test_refusals(void **state)
{
	parse_bad("{\"range\":\"10.0.0.0/24\",\"bogus\":1}", 2,
		  "ipam.bogus: unsupported key (value: 1)");
	parse_bad("{\"Range\":\"10.0.0.0/24\"}", 2,
		  "ipam.Range: unsupported key (value: \"10.0.0.0/24\"); did you mean \"range\"?");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"datastore\":\"kubernetes\"}", 2, KUBE_REFUSAL);
	/* seed 003's block with only "type" changed: one refusal, of datastore, whatever other
	 * whereabouts keys come first (issue 17 §2) */
	parse_bad("{\"type\":\"rdmak-ipam\",\"kubernetes\":{\"kubeconfig\":"
		  "\"/etc/cni/net.d/whereabouts.d/"
		  "whereabouts.kubeconfig\"},\"leader_lease_duration\":1500,\"datastore\":"
		  "\"kubernetes\","
		  "\"range\":\"192.168.7.152/27\",\"exclude\":[\"192.168.7.151/32\"],"
		  "\"log_file\":\"/var/log/whereabouts.log\",\"log_level\":\"info\"}",
		  2, KUBE_REFUSAL);
	parse_bad("{\"range\":\"10.0.0.0/24\",\"kubernetes\":{\"kubeconfig\":\"/x\"}}", 2,
		  "ipam.kubernetes: unsupported key (value: {\"kubeconfig\":\"/x\"}); rdmak-ipam "
		  "keeps no state in "
		  "Kubernetes objects: remove it and use \"store\": \"file\" (a node-local range) "
		  "or \"store\": \"etcd\", "
		  "\"etcd\": \"NAME\" (cluster-wide, one of the node's etcd stores)");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"etcd_password\":\"x\"}", 2,
		  "ipam.etcd_password: unsupported key (value: \"x\"); rdmak-ipam authenticates to "
		  "etcd with the node's "
		  "client certificate: the node's etcd store (/etc/rdmak/cni.json \"etcd\") names "
		  "it");
	/* the etcd store's address, prefix and certificates are the node's: a network config that
	 * sends root's etcd client (with the node's certificate) elsewhere, or makes it read a host
	 * file as a key, is refused naming the key and what to write instead */
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[\"https:"
		  "//evil:2379\"],"
		  "\"tls\":{\"ca\":\"/ca\",\"cert\":\"/c\",\"key\":\"/k\"}}}",
		  2,
		  "ipam.etcd.endpoints: unsupported key (value: [\"https://evil:2379\"]); the etcd "
		  "store's address "
		  "belongs to the node, not to a network: the node's CNI settings "
		  "(/etc/rdmak/cni.json \"etcd\", "
		  "docs/ipam.md) hold it; write \"etcd\": \"NAME\" naming one of the node's etcd "
		  "stores");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"tls\":{\"key\":"
		  "\"/etc/shadow\"}}}",
		  2,
		  "ipam.etcd.tls: unsupported key (value: {\"key\":\"/etc/shadow\"}); the etcd "
		  "store's certificate, key "
		  "and CA belongs to the node, not to a network: the node's CNI settings "
		  "(/etc/rdmak/cni.json \"etcd\", "
		  "docs/ipam.md) hold it; write \"etcd\": \"NAME\" naming one of the node's etcd "
		  "stores");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"prefix\":"
		  "\"/registry\"}}",
		  2,
		  "ipam.etcd.prefix: unsupported key (value: \"/registry\"); the etcd store's "
		  "prefix belongs to the "
		  "node, not to a network: the node's CNI settings (/etc/rdmak/cni.json \"etcd\", "
		  "docs/ipam.md) hold "
		  "it; write \"etcd\": \"NAME\" naming one of the node's etcd stores");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"etcd_host\":\"evil:2379\"}", 2,
		  "ipam.etcd_host: unsupported key (value: \"evil:2379\"); " WB_ETCD_WHY);
	parse_bad("{\"range\":\"10.0.0.0/24\",\"datastore\":\"etcd\",\"etcd_key_file\":"
		  "\"/etc/shadow\"}",
		  2, "ipam.etcd_key_file: unsupported key (value: \"/etc/shadow\"); " WB_ETCD_WHY);
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"Not_A_Name\"}", 7,
		  "ipam.etcd: \"Not_A_Name\" is not a store's name: a lowercase RFC 1123 label "
		  "must consist of lower "
		  "case alphanumeric characters or '-', and must start and end with an "
		  "alphanumeric character");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"enable_overlapping_ranges\":false}", 2,
		  "ipam.enable_overlapping_ranges: unsupported key (value: false); rdmak-ipam "
		  "never hands out an address "
		  "twice, whichever networks share its subnet; give each tenant its own "
		  "\"network_name\" to keep them apart");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"leader_lease_duration\":1500}", 2,
		  "ipam.leader_lease_duration: unsupported key (value: 1500); whereabouts' leader "
		  "election: rdmak-ipam "
		  "takes no cluster-wide lock; remove it");
	/* host-local's legacy form: refused naming what to write instead */
	parse_bad("{\"subnet\":\"10.10.0.0/16\",\"rangeStart\":\"10.10.1.20\"}", 2,
		  "ipam.subnet: unsupported key (value: \"10.10.0.0/16\"); host-local's legacy "
		  "top-level range: "
		  "write it as \"ranges\": [[{\"subnet\", \"rangeStart\", \"rangeEnd\", "
		  "\"gateway\"}]] "
		  "(whereabouts' \"range\" also works)");
	parse_bad("{}", 7, "ipam: no range: give \"range\", \"ipRanges\" or \"ranges\"");
	/* a /0 handed out 0.0.0.1/0: every destination on the link */
	parse_bad("{\"range\":\"10.9.0.0/0\"}", 7,
		  "ipam.range: \"10.9.0.0/0\" is the whole address family: give a subnet (a /0 "
		  "would hand out addresses "
		  "that put every destination on the link)");
	parse_bad("{\"ipRanges\":[{\"range\":\"0.0.0.1-0.0.0.9/0\"}]}", 7,
		  "ipam.ipRanges[0].range: \"0.0.0.1-0.0.0.9/0\" is the whole address family: give "
		  "a subnet (a /0 would "
		  "hand out addresses that put every destination on the link)");
	parse_bad("{\"ranges\":[[{\"subnet\":\"::/0\"}]]}", 7,
		  "ipam.ranges[0][0].subnet: \"::/0\" is the whole address family: give a subnet "
		  "(a /0 would hand out "
		  "addresses that put every destination on the link)");
	parse_bad("{\"range\":\"10.0.0.0\"}", 7,
		  "ipam.range: \"10.0.0.0\" is not a subnet in CIDR notation (like 10.56.0.0/24) "
		  "or FIRST-LAST/LEN");
	parse_bad("{\"range\":\"10.0.0.9-10.0.0.2/24\"}", 7,
		  "ipam.range: 10.0.0.9 comes after the last address 10.0.0.2");
	parse_bad("{\"range\":\"10.0.1.9-10.0.0.20/24\"}", 7,
		  "ipam.range: 10.0.1.9 is not in 10.0.0.0/24");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"range_start\":\"10.0.1.1\"}", 7,
		  "ipam.range_start: 10.0.1.1 is not in 10.0.0.0/24");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"range_start\":\"10.0.0.50\",\"range_end\":"
		  "\"10.0.0.40\"}",
		  7, "ipam.range_start: 10.0.0.50 comes after the last address 10.0.0.40");
	parse_bad("{\"range\":\"10.0.0.1-10.0.0.9/24\",\"range_start\":\"10.0.0.2\"}", 7,
		  "ipam.range_start: the range already gives its first address (FIRST-LAST/LEN)");
	parse_bad("{\"range_start\":\"10.0.0.2\",\"ipRanges\":[{\"range\":\"10.0.0.0/24\"}]}", 7,
		  "ipam.range_start: only with \"range\"");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"exclude\":[\"10.0.0.0/33\"]}", 7,
		  "ipam.exclude[0]: \"10.0.0.0/33\" is not a CIDR or an address");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"exclude\":[\"fd00::/64\"]}", 7,
		  "ipam.exclude[0]: \"fd00::/64\" is not of the range's address family");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"gateway\":\"10.0.1.1\"}", 7,
		  "ipam.gateway: 10.0.1.1 is in none of the ranges' subnets");
	parse_bad("{\"ipRanges\":[{\"range\":\"10.0.0.0/24\",\"gw\":\"10.0.0.1\"}]}", 2,
		  "ipam.ipRanges[0].gw: unsupported key (value: \"10.0.0.1\")");
	parse_bad("{\"ipRanges\":[{\"range\":\"10.0.0.0/24\",\"gateway\":\"10.1.0.1\"}]}", 7,
		  "ipam.ipRanges[0].gateway: 10.1.0.1 is not in 10.0.0.0/24");
	parse_bad("{\"ranges\":[[{\"subnet\":\"10.0.0.0/24\"},{\"subnet\":\"10.0.0.128/25\"}]]}", 7,
		  "ipam.ranges[0][1]: overlaps ipam.ranges[0][0]");
	parse_bad("{\"ranges\":[[{\"subnet\":\"10.0.0.0/24\"},{\"subnet\":\"fd00::/64\"}]]}", 7,
		  "ipam.ranges[0][1]: not of the address family of ipam.ranges[0][0]");
	parse_bad("{\"ranges\":[[{\"subnet\":\"10.0.0.0/24\",\"rangeStart\":\"10.0.0.300\"}]]}", 7,
		  "ipam.ranges[0][0].rangeStart: \"10.0.0.300\" is not an IP address");
	parse_bad("{\"ranges\":[[]]}", 7, "ipam.ranges[0]: expected a non-empty array of ranges");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"routes\":[{\"dst\":\"0.0.0.0/0\",\"via\":\"x\"}]}",
		  2, "ipam.routes[0].via: unsupported key (value: \"x\")");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"routes\":[{\"dst\":\"0.0.0.0\"}]}", 7,
		  "ipam.routes[0].dst: \"0.0.0.0\" is not an address in CIDR notation");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"consul\"}", 7,
		  "ipam.store: \"consul\" is not \"file\" or \"etcd\"");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\"}", 7,
		  "ipam.etcd: missing; \"store\": \"etcd\" needs \"etcd\": \"NAME\", one of the "
		  "node's etcd stores "
		  "(/etc/rdmak/cni.json \"etcd\")");
	parse_bad_flags(
		"{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{\"endpoints\":[]}}",
		IPAMCONF_LEGACY, 7, "ipam.etcd.endpoints: expected 1 to 64 strings");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":{}}", 7,
		  "ipam.etcd: expected the name of one of the node's etcd stores");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"datastore\":\"etcd\"}", 7,
		  "ipam.etcd: missing; \"store\": \"etcd\" needs \"etcd\": \"NAME\", one of the "
		  "node's etcd stores "
		  "(/etc/rdmak/cni.json \"etcd\")");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"file\",\"datastore\":\"etcd\"}", 7,
		  "ipam.datastore: give \"store\" or whereabouts' \"datastore\", not both");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"dataDir\":\"var/lib\"}", 7,
		  "ipam.dataDir: \"var/lib\" is not an absolute path");
	/* per-node blocks */
	parse_bad("{\"range\":\"10.0.0.0/24\",\"perNodeBlockSize\":32}", 7,
		  "ipam.perNodeBlockSize: only with \"store\": \"etcd\" (the file store is one "
		  "node's already)");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		  "\"perNodeBlockSize\":0}",
		  7, "ipam.perNodeBlockSize: 0 is out of range (1 to 1048576)");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		  "\"nodeName\":\"Node_1\"}",
		  7,
		  "ipam.nodeName: \"Node_1\" is not a node name (lower-case letters, digits, '-' "
		  "and '.', at most 253)");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		  "\"blockReleaseAfter\":5}",
		  7, "ipam.blockReleaseAfter: only with \"perNodeBlockSize\"");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\",\"dataDir\":"
		  "\"/d\"}",
		  7, "ipam.dataDir: only with \"store\": \"file\" or with \"perNodeBlockSize\"");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"log_level\":\"loud\"}", 7,
		  "ipam.log_level: \"loud\" is not error, warning, info or debug");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"network_name\":\"a/b\"}", 7,
		  "ipam.network_name: \"a/b\" may hold only letters, digits, '_', '.' and '-'");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"network_name\":"
		  "\"a123456789b123456789c123456789d123456789e123456789\"}",
		  7,
		  "ipam.network_name: \"a123456789b123456789c123456789d123456789e123456789\" is "
		  "longer than 48 characters");
	parse_bad("{\"ipRanges\":[{\"range\":\"10.0.0.0/24\"},{\"range\":\"10.0.1.0/24\"},"
		  "{\"range\":\"10.0.2.0/24\"},"
		  "{\"range\":\"10.0.3.0/24\"},{\"range\":\"10.0.4.0/24\"},{\"range\":"
		  "\"10.0.5.0/24\"},{\"range\":\"10.0.6.0/24\"},"
		  "{\"range\":\"10.0.7.0/24\"},{\"range\":\"10.0.8.0/24\"}]}",
		  7, "ipam.ipRanges[8]: more than 8 ranges to take an address from");
}

static void test_blocks(void **state)
{
	struct ipamconf *c =
		parse_ok("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
			 "\"nodeName\":\"node-1.rack2\",\"dataDir\":\"/var/lib/x\"}");

	/* nodeName alone turns blocks on, with nv-ipam's default size and the default grace */
	assert_int_equal(c->store.block_size, IPAMCONF_BLOCK_DEFAULT_SIZE);
	assert_int_equal(c->store.block_grace_s, IPAMCONF_BLOCK_DEFAULT_GRACE);
	assert_string_equal(c->store.node_name, "node-1.rack2");
	assert_string_equal(c->store.data_dir, "/var/lib/x");
	ipamconf_free(c);
	c = parse_ok("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		     "\"perNodeBlockSize\":8,"
		     "\"blockReleaseAfter\":0}");
	assert_int_equal(c->store.block_size, 8);
	assert_int_equal(c->store.block_grace_s, 0);
	assert_int_equal(c->store.lease_ttl_s, IPAMCONF_LEASE_DEFAULT_TTL);
	assert_null(c->store.node_name);
	ipamconf_free(c);
	c = parse_ok("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		     "\"perNodeBlockSize\":8,"
		     "\"nodeLeaseTTL\":30}");
	assert_int_equal(c->store.lease_ttl_s, 30);
	ipamconf_free(c);
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		  "\"nodeLeaseTTL\":30}",
		  7, "ipam.nodeLeaseTTL: only with \"perNodeBlockSize\"");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"nodeLeaseTTL\":30}", 7,
		  "ipam.nodeLeaseTTL: only with \"store\": \"etcd\" (the file store is one node's "
		  "already)");
	parse_bad("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\","
		  "\"perNodeBlockSize\":8,"
		  "\"nodeLeaseTTL\":1}",
		  7, "ipam.nodeLeaseTTL: 1 is out of range (2 to 604800)");
	c = parse_ok("{\"range\":\"10.0.0.0/24\",\"store\":\"etcd\",\"etcd\":\"cluster\"}");
	assert_int_equal(c->store.block_size, 0); /* per-address claims, as before */
	ipamconf_free(c);
	assert_true(ipamconf_node_name_valid("a"));
	assert_false(ipamconf_node_name_valid("-a"));
	assert_false(ipamconf_node_name_valid("a."));
	assert_false(ipamconf_node_name_valid(""));
}

static void test_load(void **state)
{
	static const char list[] =
		"{\"cniVersion\":\"1.0.0\",\"name\":\"rdma-net\",\"plugins\":[{\"type\":"
		"\"macvlan\","
		"\"ipam\":{\"type\":\"rdmak-ipam\",\"range\":\"10.0.0.0/24\"}},{\"type\":"
		"\"tuning\"}]}";
	static const char none[] =
		"{\"name\":\"n\",\"plugins\":[{\"type\":\"macvlan\",\"ipam\":{\"type\":"
		"\"host-local\"}}]}";
	struct cnispec_error err = { 0 };
	struct ipamconf *c = NULL;

	assert_int_equal(ipamconf_load(list, strlen(list), 0, &c, &err), 0);
	assert_string_equal(c->network, "rdma-net");
	ipamconf_free(c);
	assert_true(ipamconf_load(none, strlen(none), 0, &c, &err) < 0);
	assert_string_equal(err.details, "plugins: none has \"ipam\": {\"type\": \"rdmak-ipam\"}");
	assert_true(ipamconf_load("{\"ipam\":{}}", 11, 0, &c, &err) < 0);
	assert_string_equal(err.details, "name: missing (the network's name)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_subnet),    cmocka_unit_test(test_first_last_form),
		cmocka_unit_test(test_host_bits),      cmocka_unit_test(test_exclude),
		cmocka_unit_test(test_resolve),	       cmocka_unit_test(test_tiny_subnets),
		cmocka_unit_test(test_ipv6),	       cmocka_unit_test(test_all_excluded),
		cmocka_unit_test(test_host_local),     cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_stores),	       cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_load),	       cmocka_unit_test(test_idle_excludes),
		cmocka_unit_test(test_anchor_parsing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
