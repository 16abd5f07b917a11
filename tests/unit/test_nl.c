/* SPDX-License-Identifier: Apache-2.0 */
/* src/nl against this kernel, in network namespaces of the test's own (unshare: the machine's
 * namespaces are never touched): links (veth made with ip(8), macvlan made in another
 * namespace, moves with rename, MTU, MAC, up), addresses, routes in a table, rules with a
 * priority, per-interface IPv4 settings, the kernel's extended-ack text; and, for what this
 * kernel lacks (IPoIB, SR-IOV GUIDs, RDMA netlink), the exact request read back attribute by
 * attribute plus the error the kernel gives for it. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "nl/nl-internal.h"
#include "unit/nldev_replies.h"

static int host_fd = -1, pod_fd = -1;
static bool have_netns;

static void need_netns(void)
{
	if (!have_netns)
		skip();
}

static void sh(const char *cmd)
{
	assert_int_equal(system(cmd), 0);
}

static void test_netns_files(void **st)
{
	char path[] = "/tmp/rdmak-nl.XXXXXX";
	int fd, plain;

	need_netns();
	assert_int_equal(nl_netns_same(host_fd, host_fd), 1);
	assert_int_equal(nl_netns_same(host_fd, pod_fd), 0);
	plain = mkstemp(path);
	assert_true(plain >= 0);
	close(plain);
	/* what a runtime leaves after unmounting a namespace: a plain file */
	assert_int_equal(nl_netns_open(path, &fd), -EINVAL);
	unlink(path);
	assert_int_equal(nl_netns_open(path, &fd), -ENOENT);
	assert_int_equal(nl_netns_open("/proc/self/ns/net", &fd), 0);
	assert_int_equal(nl_netns_same(fd, host_fd), 1);
	close(fd);
	assert_int_equal(nl_netns_open("/proc/self/ns/uts", &fd), -EINVAL);
}

static void test_link_get_list(void **st)
{
	struct nl_rt *rt;
	struct nl_link l, *v = NULL;
	size_t n = 0;
	bool saw_h0 = false;

	need_netns();
	sh("ip link add h0 type veth peer name h1");
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_get(rt, "h0", &l), 1);
	assert_string_equal(l.name, "h0");
	assert_string_equal(l.kind, "veth");
	assert_int_equal(l.mtu, 1500);
	assert_int_equal(l.addr_len, 6);
	assert_int_equal(l.type, 1);
	assert_int_equal(nl_link_get(rt, "nothere", &l), 0);
	assert_int_equal(nl_link_get(rt, "a-name-too-long-for-ifnamsiz", &l), -EINVAL);
	assert_int_equal(nl_link_get(rt, "lo", &l), 1);
	assert_int_equal(nl_link_get_by_index(rt, l.ifindex, &l), 1);
	assert_string_equal(l.name, "lo");
	assert_int_equal(nl_link_get_by_index(rt, 99999, &l), 0);
	assert_int_equal(nl_link_list(rt, &v, &n), 0);
	assert_true(n >= 3);
	for (size_t i = 0; i < n; i++)
		saw_h0 |= !strcmp(v[i].name, "h0");
	assert_true(saw_h0);
	free(v);
	nl_rt_free(rt);
}

static void test_macvlan_in_pod(void **st)
{
	struct nl_rt *host, *pod;
	struct nl_link master, l;

	need_netns();
	assert_int_equal(nl_rt_open(-1, &host), 0);
	assert_int_equal(nl_rt_open(pod_fd, &pod), 0);
	assert_int_equal(nl_link_get(host, "h0", &master), 1);
	assert_int_equal(nl_link_add_macvlan(host, "net1", master.ifindex, MACVLAN_MODE_PRIVATE,
					     pod_fd, NULL, NULL),
			 0);
	assert_int_equal(nl_link_get(host, "net1", &l), 0); /* never on the host */
	assert_int_equal(nl_link_get(pod, "net1", &l), 1);
	assert_string_equal(l.kind, "macvlan");
	assert_int_equal(l.macvlan_mode, MACVLAN_MODE_PRIVATE);
	assert_int_equal(l.link_ifindex, master.ifindex);
	assert_true(l.link_netnsid >= 0);
	assert_int_equal(nl_link_add_macvlan(host, "net1", master.ifindex, MACVLAN_MODE_BRIDGE,
					     pod_fd, NULL, NULL),
			 -EEXIST);
	assert_int_equal(
		nl_link_add_macvlan(host, "net9", 99999, MACVLAN_MODE_BRIDGE, pod_fd, NULL, NULL),
		-ENODEV);
	assert_int_equal(nl_link_del(pod, l.ifindex), 0);
	assert_int_equal(nl_link_get(pod, "net1", &l), 0);
	nl_rt_free(host);
	nl_rt_free(pod);
}

/* A sysfs mounted in the pod's namespace shows the pod's interfaces and not the host's, one
 * mounted in the host's the reverse; the thread is back in its namespace after each. */
static void test_netns_sysfs(void **st)
{
	struct nl_rt *host;
	struct nl_link master;
	struct stat sb;
	int pod_sys = -1, host_sys = -1, self = -1, r;

	need_netns();
	assert_int_equal(nl_rt_open(-1, &host), 0);
	assert_int_equal(nl_link_get(host, "h0", &master), 1);
	assert_int_equal(nl_link_add_macvlan(host, "net7", master.ifindex, MACVLAN_MODE_PRIVATE,
					     pod_fd, NULL, NULL),
			 0);
	r = nl_netns_sysfs(pod_fd, &pod_sys);
	if (r == -ENOSYS || r == -EPERM) {
		nl_rt_free(host);
		skip(); /* a kernel before 5.2, or no CAP_SYS_ADMIN */
	}
	assert_int_equal(r, 0);
	assert_int_equal(nl_netns_open_self(&self), 0);
	assert_int_equal(nl_netns_same(self, host_fd), 1);
	close(self);
	assert_int_equal(nl_netns_sysfs(host_fd, &host_sys), 0);
	assert_int_equal(fstatat(pod_sys, "class/net/net7", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(pod_sys, "class/net/h0", &sb, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fstatat(host_sys, "class/net/h0", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(host_sys, "class/net/net7", &sb, AT_SYMLINK_NOFOLLOW), -1);
	/* read-only */
	assert_int_equal(openat(pod_sys, "class/net/net7/mtu", O_WRONLY), -1);
	assert_int_equal(errno, EROFS);
	/* not a namespace (an O_PATH mount root): refused by setns, nothing entered */
	r = nl_netns_sysfs(host_sys, &self);
	assert_true(r == -EBADF || r == -EINVAL);
	assert_int_equal(nl_netns_open_self(&self), 0);
	assert_int_equal(nl_netns_same(self, host_fd), 1);
	close(self);
	close(pod_sys);
	close(host_sys);
	nl_rt_free(host);
}

/* MTU, MAC and up in the creating request, and the kernel's echo of the new link heard in the
 * pod by the handle holding the host handle's port id (what lets ADD skip a GETLINK). */
static void test_macvlan_settings_echo(void **st)
{
	static const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x43 };
	struct nl_link_new set = { .mtu = 1400, .addr = mac, .addr_len = 6, .up = true };
	struct nl_rt *host, *pod;
	struct nl_link master, l, e;
	int r;

	need_netns();
	assert_int_equal(nl_rt_open(-1, &host), 0);
	assert_int_equal(nl_rt_open_peer(pod_fd, host, &pod), 0);
	set.echo = pod;
	assert_int_equal(nl_link_get(host, "h0", &master), 1);
	r = nl_link_add_macvlan(host, "net5", master.ifindex, MACVLAN_MODE_BRIDGE, pod_fd, &set,
				&e);
	assert_true(r == 0 || r == 1);
	assert_int_equal(nl_link_get(pod, "net5", &l), 1);
	assert_int_equal(l.mtu, 1400);
	assert_memory_equal(l.addr, mac, 6);
	assert_true(l.flags & IFF_UP);
	if (r == 1) { /* kernel 6.3 and later */
		assert_int_equal(e.ifindex, l.ifindex);
		assert_string_equal(e.name, "net5");
		assert_int_equal(e.mtu, 1400);
		assert_memory_equal(e.addr, mac, 6);
		assert_true(e.flags & IFF_UP);
	} else {
		print_message("# no NEWLINK echo on this kernel\n");
	}
	/* refused as a whole: nothing made */
	set.mtu = 65000;
	assert_true(nl_link_add_macvlan(host, "net6", master.ifindex, MACVLAN_MODE_BRIDGE, pod_fd,
					&set, &e) < 0);
	assert_int_equal(nl_link_get(pod, "net6", &l), 0);
	assert_int_equal(nl_link_get(pod, "net5", &l), 1);
	assert_int_equal(nl_link_del(pod, l.ifindex), 0);
	nl_rt_free(host);
	nl_rt_free(pod);
}

static void test_move_rename_settings(void **st)
{
	static const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x42 };
	struct nl_rt *host, *pod;
	struct nl_link l;
	struct nl_link_change c;

	need_netns();
	sh("ip link add vf0 type veth peer name vf0p");
	assert_int_equal(nl_rt_open(-1, &host), 0);
	assert_int_equal(nl_rt_open(pod_fd, &pod), 0);
	assert_int_equal(nl_link_get(host, "vf0", &l), 1);
	nl_link_change_init(&c);
	c.netns_fd = pod_fd;
	c.name = "net2";
	assert_int_equal(nl_link_change(host, l.ifindex, &c), 0);
	assert_int_equal(nl_link_get(host, "vf0", &l), 0);
	assert_int_equal(nl_link_get(pod, "net2", &l), 1);
	nl_link_change_init(&c);
	c.mtu = 9000;
	c.addr = mac;
	c.addr_len = sizeof(mac);
	c.up = 1;
	assert_int_equal(nl_link_change(pod, l.ifindex, &c), 0);
	assert_int_equal(nl_link_get(pod, "net2", &l), 1);
	assert_int_equal(l.mtu, 9000);
	assert_memory_equal(l.addr, mac, 6);
	assert_true(l.flags & IFF_UP);
	nl_link_change_init(&c);
	c.mtu = 70000; /* past veth's maximum: the kernel says why */
	assert_int_equal(nl_link_change(pod, l.ifindex, &c), -EINVAL);
	assert_string_not_equal(nl_rt_errmsg(pod), "");
	/* back to the host under the old name, down */
	nl_link_change_init(&c);
	c.up = 0;
	assert_int_equal(nl_link_change(pod, l.ifindex, &c), 0);
	nl_link_change_init(&c);
	c.netns_fd = host_fd;
	c.name = "vf0";
	assert_int_equal(nl_link_change(pod, l.ifindex, &c), 0);
	assert_int_equal(nl_link_get(host, "vf0", &l), 1);
	assert_false(l.flags & IFF_UP);
	nl_rt_free(host);
	nl_rt_free(pod);
}

static void parse4(const char *s, uint8_t *out)
{
	assert_int_equal(inet_pton(AF_INET, s, out), 1);
}

static void parse6(const char *s, uint8_t *out)
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

static void test_addr_route_rule(void **st)
{
	struct nl_rt *host, *pod;
	struct nl_link master, l;
	struct nl_ipaddr a4 = { .family = AF_INET, .prefixlen = 24 },
			 a6 = { .family = AF_INET6, .prefixlen = 64, .flags = IFA_F_NODAD };
	struct nl_ipaddr *av = NULL;
	struct nl_route sub = { .family = AF_INET,
				.dst_len = 24,
				.table = 101,
				.scope = RT_SCOPE_LINK,
				.has_src = true };
	struct nl_route def4 = { .family = AF_INET, .table = 101, .has_gw = true },
			def6 = { .family = AF_INET6, .table = 101, .has_gw = true };
	struct nl_route bad = { .family = AF_INET, .table = 101, .has_gw = true }, *rv = NULL;
	struct nl_rule r4 = { .family = AF_INET, .priority = 30000, .table = 101, .src_len = 32 };
	struct nl_rule r6 = { .family = AF_INET6, .priority = 30000, .table = 101, .src_len = 128 },
		       *uv = NULL;
	size_t n = 0, found = 0;
	struct nl_link_change c;

	need_netns();
	assert_int_equal(nl_rt_open(-1, &host), 0);
	assert_int_equal(nl_rt_open(pod_fd, &pod), 0);
	assert_int_equal(nl_link_get(host, "h0", &master), 1);
	assert_int_equal(nl_link_add_macvlan(host, "net3", master.ifindex, MACVLAN_MODE_BRIDGE,
					     pod_fd, NULL, NULL),
			 0);
	assert_int_equal(nl_link_get(pod, "net3", &l), 1);
	nl_link_change_init(&c);
	c.up = 1;
	assert_int_equal(nl_link_change(pod, l.ifindex, &c), 0);

	a4.ifindex = a6.ifindex = l.ifindex;
	parse4("192.168.50.10", a4.addr);
	parse6("2001:db8:50::10", a6.addr);
	assert_int_equal(nl_ipaddr_add(pod, &a4), 0);
	assert_int_equal(nl_ipaddr_add(pod, &a4), -EEXIST);
	assert_int_equal(nl_ipaddr_add(pod, &a6), 0);
	assert_int_equal(nl_ipaddr_list(pod, l.ifindex, AF_UNSPEC, &av, &n), 0);
	for (size_t i = 0; i < n; i++)
		if ((av[i].family == AF_INET && !memcmp(av[i].addr, a4.addr, 4) &&
		     av[i].prefixlen == 24) ||
		    (av[i].family == AF_INET6 && !memcmp(av[i].addr, a6.addr, 16) &&
		     av[i].prefixlen == 64))
			found++;
	assert_int_equal(found, 2);
	free(av);

	sub.ifindex = def4.ifindex = def6.ifindex = bad.ifindex = l.ifindex;
	parse4("192.168.50.0", sub.dst);
	parse4("192.168.50.10", sub.src);
	parse4("192.168.50.254", def4.gw);
	parse6("2001:db8:50::1", def6.gw);
	parse4("10.99.0.1", bad.gw);
	assert_int_equal(nl_route_add(pod, &sub), 0);
	assert_int_equal(nl_route_add(pod, &def4), 0);
	assert_int_equal(nl_route_add(pod, &def6), 0);
	assert_int_equal(nl_route_add(pod, &sub), -EEXIST);
	/* a gateway off every subnet: refused, and the kernel's reason comes back as text */
	assert_true(nl_route_add(pod, &bad) < 0);
	assert_string_not_equal(nl_rt_errmsg(pod), "");
	assert_int_equal(nl_route_list(pod, AF_UNSPEC, 101, &rv, &n), 0);
	found = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rv[i].table, 101);
		if (rv[i].family == AF_INET && rv[i].dst_len == 24 && rv[i].has_src &&
		    !memcmp(rv[i].src, sub.src, 4) && rv[i].scope == RT_SCOPE_LINK &&
		    rv[i].ifindex == l.ifindex)
			found++;
		if (rv[i].family == AF_INET && rv[i].dst_len == 0 && rv[i].has_gw &&
		    !memcmp(rv[i].gw, def4.gw, 4))
			found++;
		if (rv[i].family == AF_INET6 && rv[i].dst_len == 0 && rv[i].has_gw &&
		    !memcmp(rv[i].gw, def6.gw, 16))
			found++;
	}
	assert_int_equal(found, 3);
	free(rv);

	memcpy(r4.src, a4.addr, 4);
	memcpy(r6.src, a6.addr, 16);
	assert_int_equal(nl_rule_add(pod, &r4), 0);
	assert_int_equal(nl_rule_add(pod, &r4), -EEXIST);
	assert_int_equal(nl_rule_add(pod, &r6), 0);
	assert_int_equal(nl_rule_list(pod, AF_UNSPEC, &uv, &n), 0);
	found = 0;
	for (size_t i = 0; i < n; i++)
		if (uv[i].priority == 30000 && uv[i].table == 101 &&
		    ((uv[i].family == AF_INET && uv[i].src_len == 32 &&
		      !memcmp(uv[i].src, a4.addr, 4)) ||
		     (uv[i].family == AF_INET6 && uv[i].src_len == 128 &&
		      !memcmp(uv[i].src, a6.addr, 16))))
			found++;
	assert_int_equal(found, 2);
	free(uv);

	assert_int_equal(nl_rule_del(pod, &r4), 0);
	assert_int_equal(nl_rule_del(pod, &r4), -ENOENT);
	assert_int_equal(nl_rule_del(pod, &r6), 0);
	assert_int_equal(nl_route_del(pod, &def4), 0);
	assert_int_equal(nl_route_del(pod, &def4), -ESRCH);
	assert_int_equal(nl_ipaddr_del(pod, &a4), 0);
	assert_int_equal(nl_ipaddr_del(pod, &a4), -EADDRNOTAVAIL);
	assert_int_equal(nl_link_del(pod, l.ifindex), 0);
	/* the table's remaining routes went with the link */
	assert_int_equal(nl_route_list(pod, AF_UNSPEC, 101, &rv, &n), 0);
	assert_int_equal(n, 0);
	free(rv);
	nl_rt_free(host);
	nl_rt_free(pod);
}

static void test_ipv4_conf(void **st)
{
	static const int ids[] = { IPV4_DEVCONF_ARP_IGNORE, IPV4_DEVCONF_ARP_ANNOUNCE,
				   IPV4_DEVCONF_RP_FILTER };
	static const uint32_t values[] = { 1, 2, 2 };
	struct nl_rt *rt;
	struct nl_link l;
	uint32_t v;

	need_netns();
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_get(rt, "h1", &l), 1);
	assert_int_equal(nl_link_get_ipv4_conf(rt, l.ifindex, IPV4_DEVCONF_ARP_IGNORE, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(nl_link_set_ipv4_conf(rt, l.ifindex, ids, values, 3), 0);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nl_link_get_ipv4_conf(rt, l.ifindex, ids[i], &v), 0);
		assert_int_equal(v, values[i]);
	}
	nl_rt_free(rt);
}

static void test_ipoib_request(void **st)
{
	struct nl_msg *msg;
	struct nlattr *tb[IFLA_MAX + 1], *info[IFLA_INFO_MAX + 1], *data[IFLA_IPOIB_MAX + 1];
	struct nlmsghdr *h;
	struct nl_rt *rt;
	struct nl_link parent;

	assert_int_equal(nl_build_ipoib_add("net4", 7, 0x8001, 9, NULL, &msg), 0);
	h = nlmsg_hdr(msg);
	assert_int_equal(h->nlmsg_type, RTM_NEWLINK);
	assert_int_equal(h->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK),
			 NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
	assert_int_equal(nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
	assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), "net4");
	assert_int_equal(nla_get_u32(tb[IFLA_LINK]), 7);
	assert_int_equal(nla_get_u32(tb[IFLA_NET_NS_FD]), 9);
	assert_int_equal(nla_parse_nested(info, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL), 0);
	assert_string_equal(nla_get_string(info[IFLA_INFO_KIND]), "ipoib");
	assert_int_equal(nla_parse_nested(data, IFLA_IPOIB_MAX, info[IFLA_INFO_DATA], NULL), 0);
	assert_int_equal(nla_get_u16(data[IFLA_IPOIB_PKEY]), 0x8001);
	nlmsg_free(msg);
	/* pkey 0: the parent's partition, no attribute */
	assert_int_equal(nl_build_ipoib_add("net4", 7, 0, -1, NULL, &msg), 0);
	assert_int_equal(nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL),
			 0);
	assert_null(tb[IFLA_NET_NS_FD]);
	assert_int_equal(nla_parse_nested(info, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL), 0);
	assert_string_equal(nla_get_string(info[IFLA_INFO_KIND]), "ipoib");
	assert_null(info[IFLA_INFO_DATA]); /* libnl drops an empty nest, as the kernel wants */
	nlmsg_free(msg);
	assert_int_equal(nl_build_ipoib_add("", 7, 0, -1, NULL, &msg), -EINVAL);

	/* the kernel's answer: without the ipoib module "Unknown device type"; with it, a veth
	 * parent is refused. Either way nothing is created. */
	need_netns();
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_get(rt, "h0", &parent), 1);
	assert_true(nl_link_add_ipoib(rt, "ib9", parent.ifindex, 0x8001, -1, NULL, NULL) < 0);
	print_message("# ipoib on this kernel: \"%s\"\n", nl_rt_errmsg(rt));
	assert_int_equal(nl_link_get(rt, "ib9", &parent), 0);
	nl_rt_free(rt);
}

static void test_vf_guid_request(void **st)
{
	struct nl_msg *msg;
	struct nlattr *tb[IFLA_MAX + 1], *vf[IFLA_VF_MAX + 1], *info;
	struct ifla_vf_guid g;
	struct nl_rt *rt;
	struct nl_link pf;
	int rem, n = 0;

	assert_int_equal(nl_build_vf_guid(5, IFLA_VF_IB_PORT_GUID, 3, 0x0002c90300216e78ull, &msg),
			 0);
	assert_int_equal(nlmsg_hdr(msg)->nlmsg_type, RTM_SETLINK);
	assert_int_equal(((struct ifinfomsg *)nlmsg_data(nlmsg_hdr(msg)))->ifi_index, 5);
	assert_int_equal(nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL),
			 0);
	nla_for_each_nested(info, tb[IFLA_VFINFO_LIST], rem)
	{
		assert_int_equal(nla_type(info), IFLA_VF_INFO);
		assert_int_equal(nla_parse_nested(vf, IFLA_VF_MAX, info, NULL), 0);
		assert_null(vf[IFLA_VF_IB_NODE_GUID]);
		assert_int_equal(nla_len(vf[IFLA_VF_IB_PORT_GUID]), sizeof(g));
		memcpy(&g, nla_data(vf[IFLA_VF_IB_PORT_GUID]), sizeof(g));
		assert_int_equal(g.vf, 3);
		assert_true(g.guid == 0x0002c90300216e78ull);
		n++;
	}
	assert_int_equal(n, 1);
	nlmsg_free(msg);
	assert_int_equal(nl_build_vf_guid(5, IFLA_VF_MAC, 3, 1, &msg), -EINVAL);

	/* a PF without SR-IOV GUID support (every non-IB device) refuses */
	need_netns();
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_get(rt, "h0", &pf), 1);
	assert_int_equal(nl_link_set_vf_guid(rt, pf.ifindex, 0, 1, 2), -EOPNOTSUPP);
	nl_rt_free(rt);
}

/* Leave the stack below the caller full of non-zero bytes, as a long call chain before a
 * request would: what a callee then leaves uninitialised shows. */
static __attribute__((noinline)) void dirty_stack(void)
{
	volatile unsigned char junk[16384];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xa5;
}

static void test_vf_guid_request_bytes(void **st)
{
	/* struct ifla_vf_guid is a u32 then a u64: four bytes of padding between them, which go
	 * to the kernel with the rest. They are zero, not what the stack held before. */
	static const uint8_t want[] = { 3,    0,    0,	  0,	0,    0,    0,	  0,
					0x78, 0x6e, 0x21, 0x00, 0x03, 0xc9, 0x02, 0x00 };
	static const int types[] = { IFLA_VF_IB_NODE_GUID, IFLA_VF_IB_PORT_GUID };

	for (size_t i = 0; i < 2; i++) {
		struct nlattr *tb[IFLA_MAX + 1], *vf[IFLA_VF_MAX + 1];
		struct nl_msg *msg;

		dirty_stack();
		assert_int_equal(nl_build_vf_guid(5, types[i], 3, 0x0002c90300216e78ull, &msg), 0);
		assert_int_equal(
			nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL),
			0);
		assert_int_equal(
			nla_parse_nested(vf, IFLA_VF_MAX, nla_data(tb[IFLA_VFINFO_LIST]), NULL), 0);
		assert_non_null(vf[types[i]]);
		assert_int_equal(nla_len(vf[types[i]]), sizeof(want));
		assert_memory_equal(nla_data(vf[types[i]]), want, sizeof(want));
		nlmsg_free(msg);
	}
}

/* The attributes of a request in order: type and u32 value. */
static unsigned attrs_u32(const struct nl_msg *msg, uint16_t *types, uint32_t *values, unsigned max)
{
	struct nlattr *a;
	unsigned n = 0;
	int rem;

	nlmsg_for_each_attr(a, nlmsg_hdr((struct nl_msg *)msg), 0, rem)
	{
		assert_true(n < max);
		assert_int_equal(nla_len(a), 4);
		types[n] = (uint16_t)nla_type(a);
		values[n++] = nla_get_u32(a);
	}
	assert_int_equal(rem, 0);
	return n;
}

static void test_rdma_requests(void **st)
{
	struct nl_msg *msg;
	struct nlmsghdr *h;
	uint16_t t[8];
	uint32_t v[8];

	assert_int_equal(nl_rdma_build_set_netns(3, 17, &msg), 0);
	h = nlmsg_hdr(msg);
	assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SET));
	assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	assert_int_equal(attrs_u32(msg, t, v, 8), 2);
	assert_int_equal(t[0], RDMA_NLDEV_ATTR_DEV_INDEX);
	assert_int_equal(v[0], 3);
	assert_int_equal(t[1], RDMA_NLDEV_NET_NS_FD);
	assert_int_equal(v[1], 17);
	nlmsg_free(msg);
	assert_int_equal(nl_rdma_build_sys_get(&msg), 0);
	h = nlmsg_hdr(msg);
	assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET));
	assert_int_equal(h->nlmsg_len, NLMSG_HDRLEN);
	nlmsg_free(msg);
	assert_int_equal(nl_rdma_build_dev_dump(&msg), 0);
	h = nlmsg_hdr(msg);
	assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
	assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	assert_int_equal(h->nlmsg_len, NLMSG_HDRLEN);
	nlmsg_free(msg);
}

/* What iproute2's `rdma statistic show link DEV/PORT` and `rdma statistic qp show` send. */
static void test_rdma_stat_requests(void **st)
{
	struct nl_msg *msg;
	struct nlmsghdr *h;
	uint16_t t[8];
	uint32_t v[8];

	assert_int_equal(nl_rdma_build_stat_get(3, 1, &msg), 0);
	h = nlmsg_hdr(msg);
	assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET));
	assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	/* no RDMA_NLDEV_ATTR_STAT_RES: the kernel answers the port's default counters */
	assert_int_equal(attrs_u32(msg, t, v, 8), 2);
	assert_int_equal(t[0], RDMA_NLDEV_ATTR_DEV_INDEX);
	assert_int_equal(v[0], 3);
	assert_int_equal(t[1], RDMA_NLDEV_ATTR_PORT_INDEX);
	assert_int_equal(v[1], 1);
	assert_int_equal(h->nlmsg_len, NLMSG_HDRLEN + 2 * 8);
	nlmsg_free(msg);

	assert_int_equal(nl_rdma_build_stat_qp_dump(5, 0, &msg), 0);
	h = nlmsg_hdr(msg);
	assert_int_equal(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET));
	assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	assert_int_equal(attrs_u32(msg, t, v, 8), 2);
	assert_int_equal(t[0], RDMA_NLDEV_ATTR_DEV_INDEX);
	assert_int_equal(v[0], 5);
	assert_int_equal(t[1], RDMA_NLDEV_ATTR_STAT_RES);
	assert_int_equal(v[1], RDMA_NLDEV_ATTR_RES_QP);
	nlmsg_free(msg);

	assert_int_equal(nl_rdma_build_stat_qp_dump(5, 2, &msg), 0);
	assert_int_equal(attrs_u32(msg, t, v, 8), 3);
	assert_int_equal(t[1], RDMA_NLDEV_ATTR_PORT_INDEX);
	assert_int_equal(v[1], 2);
	assert_int_equal(t[2], RDMA_NLDEV_ATTR_STAT_RES);
	nlmsg_free(msg);
}

/* A dump the kernel could not do ends in an NLMSG_DONE carrying its -errno and, with extended
 * ACKs, the reason after it (what RDMA_NLDEV_CMD_STAT_GET of an unknown device answers). */
static void test_done_error(void **st)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
	struct nlmsghdr *h;
	char msg[64];
	int *e;

	assert_non_null(m);
	e = nlmsg_reserve(m, sizeof(int), NLMSG_ALIGNTO);
	assert_non_null(e);
	h = nlmsg_hdr(m);
	*e = 0;
	assert_int_equal(nl_done_error(h), 0);
	*e = -EINVAL;
	assert_int_equal(nl_done_error(h), -EINVAL);
	nl_extack_msg(h, msg, sizeof(msg));
	assert_string_equal(msg, "");
	h->nlmsg_flags |= NLM_F_ACK_TLVS;
	assert_int_equal(nla_put_string(m, NLMSGERR_ATTR_MSG, "no such device"), 0);
	nl_extack_msg(h, msg, sizeof(msg));
	assert_string_equal(msg, "no such device");
	nlmsg_free(m);
}

static void test_rdma_stat_parse(void **st)
{
	static const struct nldev_hw hw[] = {
		{ "rx_write_requests", 12 },
		{ "out_of_sequence", 0 },
		{ "np_cnp_sent", 0x1234567890abcdefULL }, /* past 2^53: kept exact */
	};
	struct nl_rdma_stat s = { 0 };
	struct nlattr *name;
	struct nlmsghdr *h;
	struct nl_msg *m;

	for (int pad = 0; pad < 2; pad++) {
		m = nldev_port_stat(1, 4, "mlx5_3", 1, hw, 3, pad);
		h = nlmsg_hdr(m);
		assert_int_equal(nl_rdma_stat_parse(h, h->nlmsg_len, &s), 0);
		assert_int_equal(s.dev_index, 4);
		assert_string_equal(s.dev, "mlx5_3");
		assert_int_equal(s.port, 1);
		assert_int_equal(s.n_hw, 3);
		for (int i = 0; i < 3; i++) {
			assert_string_equal(s.hw[i].name, hw[i].name);
			assert_true(s.hw[i].value == hw[i].value);
		}
		nl_rdma_stat_clear(&s);
		nlmsg_free(m);
	}

	/* another command's answer, a truncated one */
	m = nldev_port_stat(1, 4, "mlx5_3", 1, hw, 3, false);
	h = nlmsg_hdr(m);
	assert_int_equal(nl_rdma_stat_parse(h, h->nlmsg_len - 1, &s), -EBADMSG);
	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
	assert_int_equal(nl_rdma_stat_parse(h, h->nlmsg_len, &s), -EBADMSG);
	assert_null(s.hw);
	nlmsg_free(m);

	/* the device's name without its NUL: refused (nldev_policy), not read past */
	m = nldev_port_stat(1, 4, "mlx5_3", 1, hw, 3, false);
	h = nlmsg_hdr(m);
	name = nlmsg_find_attr(h, 0, RDMA_NLDEV_ATTR_DEV_NAME);
	assert_non_null(name);
	assert_int_equal(nla_len(name), 7);
	((char *)nla_data(name))[6] = 'x'; /* "mlx5_3x" and the padding after it */
	assert_int_equal(nl_rdma_stat_parse(h, h->nlmsg_len, &s), -EBADMSG);
	assert_null(s.hw);
	nlmsg_free(m);

	/* an entry without its value (iproute2 refuses it too) */
	m = nldev_stat_header(1, 0);
	nldev_handle(m, 4, "mlx5_3");
	assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1), 0);
	{
		struct nlattr *t = nldev_nest(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
		struct nlattr *e = nldev_nest(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);

		assert_int_equal(nla_put_string(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
						"rx_write_requests"),
				 0);
		nldev_nest_end(m, e);
		nldev_nest_end(m, t);
	}
	h = nlmsg_hdr(m);
	assert_int_equal(nl_rdma_stat_parse(h, h->nlmsg_len, &s), -EBADMSG);
	assert_null(s.hw);
	nlmsg_free(m);
}

static void test_rdma_counters_parse(void **st)
{
	static const uint32_t qps_a[] = { 178, 179 }, qps_b[] = { 4000 };
	static const struct nldev_hw hw_a[] = { { "rx_write_requests", 7 },
						{ "out_of_sequence", 2 } };
	static const struct nldev_hw hw_b[] = { { "rx_write_requests", 70 } };
	static const struct nldev_counter c[] = {
		/* auto mode by type and process: `rdma statistic qp set link mlx5_0/1 auto
		 * type,pid on` */
		{ .port = 1,
		  .id = 3,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = 2,
		  .pid = 4242,
		  .qpns = qps_a,
		  .n_qpns = 2,
		  .hw = hw_a,
		  .n_hw = 2 },
		/* bound by hand: `rdma statistic qp bind link mlx5_0/2 lqpn 4000` */
		{ .port = 2,
		  .id = 4,
		  .mode = RDMA_COUNTER_MODE_MANUAL,
		  .qp_type = -1,
		  .pid = -1,
		  .qpns = qps_b,
		  .n_qpns = 1,
		  .hw = hw_b,
		  .n_hw = 1 },
		/* auto per process for a kernel consumer: its name instead of a pid; no QP left */
		{ .port = 1,
		  .id = 5,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = -1,
		  .pid = -1,
		  .kern = "rdma_cm" },
	};
	struct nl_rdma_counter *v = NULL;
	struct nlmsghdr *h;
	struct nl_msg *m;
	size_t n = 0;

	m = nldev_counter_dump(1, NLM_F_MULTI, 0, "mlx5_0", c, 2);
	h = nlmsg_hdr(m);
	assert_int_equal(nl_rdma_counters_parse(h, h->nlmsg_len, &v, &n), 0);
	nlmsg_free(m);
	/* a dump's next message appends */
	m = nldev_counter_dump(1, NLM_F_MULTI, 0, "mlx5_0", c + 2, 1);
	h = nlmsg_hdr(m);
	assert_int_equal(nl_rdma_counters_parse(h, h->nlmsg_len, &v, &n), 0);
	nlmsg_free(m);
	assert_int_equal(n, 3);

	assert_int_equal(v[0].port, 1);
	assert_int_equal(v[0].id, 3);
	assert_int_equal(v[0].mode, RDMA_COUNTER_MODE_AUTO);
	assert_int_equal(v[0].qp_type, 2);
	assert_string_equal(nl_rdma_qp_type_name(v[0].qp_type), "RC");
	assert_int_equal(v[0].pid, 4242);
	assert_string_equal(v[0].comm, "");
	assert_int_equal(v[0].n_qpns, 2);
	assert_int_equal(v[0].qpns[0], 178);
	assert_int_equal(v[0].qpns[1], 179);
	assert_int_equal(v[0].n_hw, 2);
	assert_string_equal(v[0].hw[1].name, "out_of_sequence");
	assert_int_equal(v[0].hw[1].value, 2);

	assert_int_equal(v[1].port, 2);
	assert_int_equal(v[1].mode, RDMA_COUNTER_MODE_MANUAL);
	assert_int_equal(v[1].qp_type, -1);
	assert_int_equal(v[1].pid, -1);
	assert_int_equal(v[1].n_qpns, 1);
	assert_int_equal(v[1].qpns[0], 4000);
	assert_int_equal(v[1].hw[0].value, 70);

	assert_int_equal(v[2].id, 5);
	assert_int_equal(v[2].pid, -1);
	assert_string_equal(v[2].comm, "rdma_cm");
	assert_int_equal(v[2].n_qpns, 0);
	assert_int_equal(v[2].n_hw, 0);

	/* a counter without its id: refused, and what was there stays as it was */
	m = nldev_stat_header(1, NLM_F_MULTI);
	nldev_handle(m, 0, "mlx5_0");
	{
		struct nlattr *t = nldev_nest_noflag(m, RDMA_NLDEV_ATTR_STAT_COUNTER);
		struct nlattr *e = nldev_nest_noflag(m, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY);

		assert_int_equal(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1), 0);
		nldev_nest_end(m, e);
		nldev_nest_end(m, t);
	}
	h = nlmsg_hdr(m);
	assert_int_equal(nl_rdma_counters_parse(h, h->nlmsg_len, &v, &n), -EBADMSG);
	assert_int_equal(n, 3);
	nlmsg_free(m);
	/* a u32 attribute two bytes short */
	m = nldev_counter_dump(1, NLM_F_MULTI, 0, "mlx5_0", c, 1);
	h = nlmsg_hdr(m);
	{
		struct nlattr *t = nlmsg_find_attr(h, 0, RDMA_NLDEV_ATTR_STAT_COUNTER);
		struct nlattr *e = nla_data(t), *port = nla_data(e);

		assert_int_equal(nla_type(e), RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY);
		assert_int_equal(nla_type(port), RDMA_NLDEV_ATTR_PORT_INDEX);
		port->nla_len = NLA_HDRLEN + 2;
	}
	assert_int_equal(nl_rdma_counters_parse(h, h->nlmsg_len, &v, &n), -EBADMSG);
	assert_int_equal(n, 3);
	nlmsg_free(m);
	nl_rdma_counters_free(v, n);

	assert_null(nl_rdma_qp_type_name(7));
	assert_string_equal(nl_rdma_qp_type_name(0xff), "DRIVER");
	assert_string_equal(nl_rdma_qp_type_name(4), "UD");
}

static void test_rdma_live(void **st)
{
	struct nl_rdma *r;
	struct nl_rdma_dev d;
	bool shared;
	int e;

	need_netns();
	e = nl_rdma_open(pod_fd, &r);
	if (e == -EPROTONOSUPPORT) {
		/* this kernel has no RDMA subsystem: what the plugin turns into "no RDMA
		 * subsystem" */
		print_message("# NETLINK_RDMA: protocol not supported here\n");
		skip();
	}
	assert_int_equal(e, 0);
	assert_int_equal(nl_rdma_netns_shared(r, &shared), 0);
	assert_int_equal(nl_rdma_dev_get(r, "rdmak-none", &d), 0);
	assert_true(nl_rdma_dev_set_netns(r, 999999, host_fd) < 0);
	{
		/* a device index the kernel does not know: refused (res_get_common_dumpit), and
		 * the socket still answers the next request */
		struct nl_rdma_counter *v = NULL;
		struct nl_rdma_stat s;
		size_t n = 0;

		assert_true(nl_rdma_counters(r, 999999, &v, &n) < 0);
		assert_true(nl_rdma_port_stat(r, 999999, 1, &s) < 0);
		assert_int_equal(nl_rdma_netns_shared(r, &shared), 0);
	}
	nl_rdma_free(r);
}

static int setup(void **st)
{
	/* our own "host" namespace, and a "pod" one beside it held by its fd */
	if (unshare(CLONE_NEWNET) < 0)
		return 0;
	if (nl_netns_open_self(&host_fd) < 0 || unshare(CLONE_NEWNET) < 0 ||
	    nl_netns_open_self(&pod_fd) < 0 || setns(host_fd, CLONE_NEWNET) < 0)
		return -1;
	have_netns = true;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netns_files),
		cmocka_unit_test(test_link_get_list),
		cmocka_unit_test(test_macvlan_in_pod),
		cmocka_unit_test(test_netns_sysfs),
		cmocka_unit_test(test_macvlan_settings_echo),
		cmocka_unit_test(test_move_rename_settings),
		cmocka_unit_test(test_addr_route_rule),
		cmocka_unit_test(test_ipv4_conf),
		cmocka_unit_test(test_ipoib_request),
		cmocka_unit_test(test_vf_guid_request),
		cmocka_unit_test(test_vf_guid_request_bytes),
		cmocka_unit_test(test_rdma_requests),
		cmocka_unit_test(test_rdma_stat_requests),
		cmocka_unit_test(test_done_error),
		cmocka_unit_test(test_rdma_stat_parse),
		cmocka_unit_test(test_rdma_counters_parse),
		cmocka_unit_test(test_rdma_live),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
