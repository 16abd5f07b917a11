/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-cni's pure parts: the table number of an interface name (what ADD, CHECK, DEL and GC
 * must agree on without state), the configuration parser on a few accepted shapes (defaults,
 * Multus' deviceID and pciBusID, runtimeConfig winning), and the hostdev record written,
 * listed, read back and removed, with a fileio_write_atomic_at temp file left beside it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/if_link.h>

#include "cni/cni.h"
#include "nodeconf/nodeconf.h"
#include "util/strv.h"

static void test_route_table(void **st)
{
	assert_int_equal(cni_route_table(100, "net1"), 101);
	assert_int_equal(cni_route_table(100, "net8"), 108);
	assert_int_equal(cni_route_table(100, "eth0"), 100);
	assert_int_equal(cni_route_table(1000, "rdma12"), 1012);
	/* no number, or one past 65535: a hashed slot above every numbered one, stable */
	uint32_t h = cni_route_table(100, "rdma");
	assert_true(h >= 100 + 65536 && h < 100 + 131072);
	assert_int_equal(cni_route_table(100, "rdma"), h);
	assert_true(cni_route_table(100, "net99999") >= 100 + 65536);
	assert_int_not_equal(cni_route_table(100, "rdmb"), h);
	/* main, local, default and past 2^31 are refused */
	assert_int_equal(cni_route_table(253, "net1"), 0);
	assert_int_equal(cni_route_table(250, "net2"), 252);
	assert_int_equal(cni_route_table(250, "net3"), 0);
	assert_int_equal(cni_route_table(250, "net5"), 0);
	assert_int_equal(cni_route_table(0x7fff0000, "net65535"), 0x7fffffff);
	assert_int_equal(cni_route_table(0x7fff0000, "x"), 0);
}

static int parse(const char *json, struct cniconf *cfg, struct cnispec_error *err)
{
	struct cnispec_conf *conf = NULL;
	int r = cnispec_conf_parse(json, strlen(json), CNISPEC_CMD_ADD, &conf, err);

	if (r == 0)
		r = cniconf_parse(conf, cfg, err);
	cnispec_conf_free(conf);
	return r;
}

static void test_config(void **st)
{
	struct cnispec_error err = { 0 };
	struct cniconf c;

	assert_int_equal(
		parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":"
		      "\"macvlan\","
		      "\"master\":\"bond0\",\"deviceID\":\"0000:1b:00.2\"}",
		      &c, &err),
		0);
	assert_int_equal(c.link, CNICONF_LINK_MACVLAN);
	assert_string_equal(c.master, "bond0");
	assert_int_equal(c.macvlan_mode, MACVLAN_MODE_BRIDGE);
	assert_true(c.policy_routing);
	assert_int_equal(c.table_base, 100);
	assert_int_equal(c.rule_priority, 30000);
	assert_string_equal(c.state_dir, CNICONF_DEFAULT_STATE_DIR);
	assert_null(c.sysfs);
	cniconf_clear(&c);

	assert_int_equal(
		parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":"
		      "\"hostdev\","
		      "\"deviceID\":\"0000:1b:00.2\",\"pciBusID\":\"0000:1b:00.2\",\"guid\":"
		      "\"00:02:c9:03:00:21:6e:70\","
		      "\"pkey\":32769,\"runtimeConfig\":{\"deviceID\":\"1b:00.3\",\"mac\":\"02:"
		      "00:00:00:00:07\"}}",
		      &c, &err),
		0);
	assert_string_equal(c.device_id, "0000:1b:00.3");
	assert_true(c.has_guid);
	assert_true(c.guid == 0x0002c90300216e70ull);
	assert_int_equal(c.pkey, 0x8001);
	assert_true(c.has_mac);
	assert_int_equal(c.mac[5], 7);
	cniconf_clear(&c);

	assert_int_equal(
		parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":"
		      "\"ipoib\","
		      "\"master\":\"ib0\",\"pkey\":\"0x7fff\",\"mtu\":65535}",
		      &c, &err),
		0);
	assert_int_equal(c.pkey, 0x7fff);
	assert_int_equal(c.mtu, 65535);
	cniconf_clear(&c);

	memset(&err, 0, sizeof(err));
	assert_int_equal(
		parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":"
		      "\"macvlan\","
		      "\"master\":\"ens1\",\"vlan\":100}",
		      &c, &err),
		-EINVAL);
	assert_int_equal(err.code, 7);
	assert_non_null(strstr(
		err.details,
		"vlan: only for link hostdev: a setting of an SR-IOV VF, set through its PF"));
}

/* Refusals: a key rdmak-cni does not take is code 2 with its value (and the reason for one it
 * refuses by name), a bad value code 7 with the path in msg and "path: reason" in details. */
static void test_config_refusals(void **st)
{
	static const struct {
		const char *keys;
		unsigned code;
		const char *msg, *details;
	} cases[] = {
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"ipMasq\":true", 2,
		  "unsupported field ipMasq",
		  "ipMasq: unsupported key (value: true); rdmak-cni sets up no masquerading: "
		  "RDMA traffic is not NATed" },
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"bridge\":[1]", 2,
		  "unsupported field bridge",
		  "bridge: unsupported key (value: [1]); docs/cni.md lists the keys rdmak-cni "
		  "accepts" },
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"mtu\":\"9000\"", 7,
		  "invalid network configuration: mtu",
		  "mtu: expected an integer from 68 to 65535, got a string" },
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"runtimeConfig\":{\"mac\":\"03:00:"
		  "00:00:00:01\",\"ips\":[]}",
		  7, "invalid network configuration: runtimeConfig.mac",
		  "runtimeConfig.mac: 03:00:00:00:00:01 is a multicast address" },
		{ "\"link\":\"hostdev\",\"pciBusID\":\"0000:1b:00.3\",\"deviceID\":\"1b:00.2\"", 7,
		  "invalid network configuration: pciBusID",
		  "pciBusID: 0000:1b:00.3 differs from the other PCI address given "
		  "(0000:1b:00.2)" },
		{ "\"link\":\"hostdev\",\"device\":\"vf0\",\"runtimeConfig\":{\"deviceID\":"
		  "\"0000:1b:00.2\"}",
		  7, "invalid network configuration: device",
		  "device: give device or deviceID, not both (deviceID 0000:1b:00.2 is also set)" },
		{ "\"link\":\"ipoib\",\"master\":\"ib0\",\"mode\":\"vepa\"", 7,
		  "invalid network configuration: mode", "mode: only for link macvlan" },
		/* the rdma link makes no interface: the keys of one are refused */
		{ "\"link\":\"rdma\",\"master\":\"ens1\"", 7,
		  "invalid network configuration: master",
		  "master: a key of a link that makes an interface: the rdma link moves the RDMA "
		  "device of the interface "
		  "the plugin before it made, and changes nothing else" },
		{ "\"link\":\"rdma\",\"ipam\":{\"type\":\"host-local\"}", 7,
		  "invalid network configuration: ipam",
		  "ipam: the rdma link adds no interface to address: give ipam to the plugin "
		  "before it in the chain" },
		{ "\"rdmaIsolation\":false", 7, "invalid network configuration: rdmaIsolation",
		  "rdmaIsolation: false leaves the rdma link nothing to do: remove the plugin "
		  "from the chain instead" },
		{ "\"master\":\"ens1\",\"device\":\"vf0\"", 7,
		  "invalid network configuration: link",
		  "link: missing, and master (macvlan or ipoib) and device (hostdev) name "
		  "different kinds: set link to "
		  "macvlan, ipoib or hostdev" },
		{ "\"master\":\"ib0\",\"mode\":\"bridge\",\"pkey\":\"0x8001\"", 7,
		  "invalid network configuration: link",
		  "link: missing, and mode (macvlan) and pkey (ipoib) name different kinds: set "
		  "link to macvlan or ipoib" },
		{ "\"mtu\":9000", 7, "invalid network configuration: link",
		  "link: missing, and nothing names one: set link (macvlan, ipoib, hostdev or "
		  "rdma), or give master "
		  "(macvlan, ipoib) or deviceID or device (hostdev)" },
		{ "\"link\":\"hostdev\",\"device\":\"vf0\",\"rdmaIsolation\":null", 7,
		  "invalid network configuration: rdmaIsolation",
		  "rdmaIsolation: expected true or false, got null" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cnispec_error err = { 0 };
		struct cniconf c;
		char json[512];

		snprintf(json, sizeof(json),
			 "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",%s}",
			 cases[i].keys);
		assert_int_equal(parse(json, &c, &err), -EINVAL);
		assert_int_equal(err.code, cases[i].code);
		assert_string_equal(err.msg, cases[i].msg);
		assert_string_equal(err.details, cases[i].details);
	}
}

/* Without link, the kind from the configuration's shape (docs/cni.md's table). */
static void test_config_infer_link(void **st)
{
	static const struct {
		const char *keys;
		int link;      /* -1: decided by the master's type (link_by_master) */
		bool by_chain; /* hostdev, or rdma when the command shows a chain */
	} cases[] = {
		{ "\"master\":\"eth1\",\"mode\":\"bridge\"", CNICONF_LINK_MACVLAN, false },
		{ "\"master\":\"eth1\",\"mac\":\"02:00:00:00:00:01\"", CNICONF_LINK_MACVLAN,
		  false },
		{ "\"master\":\"ib0\",\"pkey\":\"0x8001\"", CNICONF_LINK_IPOIB, false },
		{ "\"master\":\"ib0\"", -1, false },
		/* Multus writes deviceID into every plugin of a resource's network: master wins */
		{ "\"master\":\"ib0\",\"deviceID\":\"0000:1b:00.2\"", -1, false },
		/* deviceID alone: sriov-cni's config as Multus passes it, or rdma-cni's after it */
		{ "\"deviceID\":\"0000:03:02.0\"", CNICONF_LINK_HOSTDEV, true },
		{ "\"pciBusID\":\"0000:3d:00.1\"", CNICONF_LINK_HOSTDEV, true },
		{ "\"device\":\"enp0s1\"", CNICONF_LINK_HOSTDEV, false },
		{ "\"runtimeConfig\":{\"deviceID\":\"0000:03:02.0\"}", CNICONF_LINK_HOSTDEV, true },
		{ "\"deviceID\":\"0000:03:02.0\",\"mtu\":9000", CNICONF_LINK_HOSTDEV, false },
		{ "\"deviceID\":\"0000:03:02.0\",\"ipam\":{\"type\":\"host-local\"}",
		  CNICONF_LINK_HOSTDEV, false },
		{ "\"deviceID\":\"0000:03:02.0\",\"rdmaIsolation\":false", CNICONF_LINK_HOSTDEV,
		  false },
		{ "\"link\":\"macvlan\",\"master\":\"ib0\"", CNICONF_LINK_MACVLAN, false },
		/* rdma-cni's config: nothing that names a netdev */
		{ "\"args\":{\"cni\":{\"debug\":true}}", CNICONF_LINK_RDMA, false },
		{ "\"rdmaIsolation\":true", CNICONF_LINK_RDMA, false },
		{ "\"link\":\"rdma\",\"deviceID\":\"0000:03:02.0\"", CNICONF_LINK_RDMA, false },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cnispec_error err = { 0 };
		struct cniconf c;
		char json[512];

		snprintf(json, sizeof(json),
			 "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",%s}",
			 cases[i].keys);
		if (parse(json, &c, &err) != 0)
			fail_msg("%s: %s", cases[i].keys, err.details);
		if (cases[i].link < 0) {
			assert_true(c.link_by_master);
		} else {
			assert_false(c.link_by_master);
			assert_int_equal(c.link, cases[i].link);
			if (c.link_by_chain != cases[i].by_chain)
				fail_msg("%s: link_by_chain %d", cases[i].keys, c.link_by_chain);
		}
		cniconf_clear(&c);
	}
}

struct warned {
	char text[1024];
	unsigned n;
};

static void warn_cb(void *userdata, const char *path, const char *why)
{
	struct warned *w = userdata;
	size_t len = strlen(w->text);

	snprintf(w->text + len, sizeof(w->text) - len, "%s: %s\n", path, why);
	w->n++;
}

/* The anchors' keys: a value asking for nothing rdmak-cni would not do is accepted and named
 * through the warning callback, any other refused (code 2) naming the key and why. */
static void test_config_anchor_keys(void **st)
{
	static const struct {
		const char *keys;
		const char *warned;  /* NULL: refused */
		const char *details; /* the refusal */
	} cases[] = {
		{ "\"master\":\"eth1\",\"mode\":\"bridge\",\"linkInContainer\":false",
		  "linkInContainer: accepted: false", NULL },
		{ "\"deviceID\":\"0000:03:02.0\",\"ibKubernetesEnabled\":false",
		  "ibKubernetesEnabled: accepted: false", NULL },
		{ "\"master\":\"eth1\",\"linkInContainer\":true", NULL,
		  "linkInContainer: unsupported key (value: true); rdmak-cni "
		  "makes the child on a master in the host's network namespace, not on one "
		  "inside the pod" },
		{ "\"deviceID\":\"0000:03:02.0\",\"ibKubernetesEnabled\":true", NULL,
		  "ibKubernetesEnabled: unsupported key "
		  "(value: true); rdmak-cni does not wait for ib-kubernetes" },
		{ "\"hwaddr\":\"02:00:00:00:00:01\"", NULL,
		  "hwaddr: unsupported key (value: \"02:00:00:00:00:01\"); rdmak-cni finds" },
		{ "\"kernelpath\":\"/sys/devices/pci0000:00/0000:00:1f.6\"", NULL,
		  "kernelpath: unsupported key" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cnispec_error err = { 0 };
		struct cnispec_conf *conf = NULL;
		struct warned w = { .n = 0 };
		struct cniconf c;
		char json[512];
		int r;

		snprintf(json, sizeof(json),
			 "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",%s}",
			 cases[i].keys);
		assert_int_equal(
			cnispec_conf_parse(json, strlen(json), CNISPEC_CMD_ADD, &conf, &err), 0);
		r = cniconf_parse_warn(conf, &c, warn_cb, &w, &err);
		cnispec_conf_free(conf);
		if (cases[i].warned) {
			if (r != 0)
				fail_msg("%s: %s", cases[i].keys, err.details);
			if (strncmp(w.text, cases[i].warned, strlen(cases[i].warned)))
				fail_msg("%s\n  warned: %s  want: %s", cases[i].keys, w.text,
					 cases[i].warned);
			cniconf_clear(&c);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_int_equal(err.code, 2);
			if (strncmp(err.details, cases[i].details, strlen(cases[i].details)))
				fail_msg("%s\n  got:  %s\n  want: %s", cases[i].keys, err.details,
					 cases[i].details);
		}
	}
}

/* sriov-cni's VF settings: read as its LoadConf reads them (ranges, vlanQoS and vlanProto only
 * with vlan, 802.1ad and a priority only with a VLAN other than 0), for hostdev only. */
static void test_config_vf_keys(void **st)
{
	static const struct {
		const char *keys;
		const char *details; /* NULL: accepted */
	} bad[] = {
		{ "\"vlan\":4095", "vlan: 4095 is out of range (0 to 4094)" },
		{ "\"vlan\":-1", "vlan: -1 is out of range (0 to 4094)" },
		{ "\"vlan\":\"10\"", "vlan: expected an integer from 0 to 4094" },
		{ "\"vlan\":10,\"vlanQoS\":8", "vlanQoS: 8 is out of range (0 to 7)" },
		{ "\"vlanQoS\":1", "vlanQoS: needs vlan" },
		{ "\"vlanProto\":\"802.1q\"", "vlanProto: needs vlan" },
		{ "\"vlan\":0,\"vlanQoS\":3", "vlanQoS: 3 needs a VLAN other than 0" },
		{ "\"vlan\":0,\"vlanProto\":\"802.1ad\"",
		  "vlanProto: 802.1ad needs a VLAN other than 0" },
		{ "\"vlan\":5,\"vlanProto\":\"802.1x\"",
		  "vlanProto: \"802.1x\" is not a VLAN protocol (802.1Q or 802.1ad)" },
		{ "\"spoofchk\":true", "spoofchk: expected a string" },
		{ "\"trust\":\"yes\"", "trust: \"yes\" is neither \"on\" nor \"off\"" },
		{ "\"link_state\":\"up\"",
		  "link_state: \"up\" is not a link state (auto, enable or disable)" },
		{ "\"min_tx_rate\":-5", "min_tx_rate: -5 is out of range (0 to 4294967295)" },
	};
	struct cnispec_error err = { 0 };
	struct cniconf c;

	(void)st;
	assert_int_equal(
		parse("{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"rdmak-cni\","
		      "\"deviceID\":\"0000:03:02.0\","
		      "\"mac\":\"CA:FE:C0:FF:EE:00\",\"vlan\":1000,\"vlanQoS\":4,\"vlanProto\":"
		      "\"802.1AD\",\"min_tx_rate\":100,"
		      "\"max_tx_rate\":200,\"spoofchk\":\"off\",\"trust\":\"on\",\"link_state\":"
		      "\"enable\"}",
		      &c, &err),
		0);
	assert_int_equal(c.link, CNICONF_LINK_HOSTDEV);
	assert_int_equal(c.vf_keys, CNICONF_VF_VLAN | CNICONF_VF_RATE | CNICONF_VF_SPOOFCHK |
					    CNICONF_VF_TRUST | CNICONF_VF_LINK_STATE);
	assert_int_equal(c.vlan, 1000);
	assert_int_equal(c.vlan_qos, 4);
	assert_int_equal(c.vlan_proto, 0x88a8);
	assert_int_equal(c.min_tx_rate, 100);
	assert_int_equal(c.max_tx_rate, 200);
	assert_false(c.spoofchk);
	assert_true(c.trust);
	assert_int_equal(c.link_state, 1); /* IFLA_VF_LINK_STATE_ENABLE */
	cniconf_clear(&c);
	/* vlan alone: priority 0, 802.1Q; one rate alone: the other 0 */
	assert_int_equal(parse("{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"rdmak-cni\","
			       "\"deviceID\":\"0000:03:02.0\","
			       "\"vlan\":0,\"max_tx_rate\":100,\"link_state\":\"auto\"}",
			       &c, &err),
			 0);
	assert_int_equal(c.vf_keys, CNICONF_VF_VLAN | CNICONF_VF_RATE | CNICONF_VF_LINK_STATE);
	assert_int_equal(c.vlan_proto, 0x8100);
	assert_int_equal(c.vlan_qos, 0);
	assert_int_equal(c.min_tx_rate, 0);
	assert_int_equal(c.max_tx_rate, 100);
	assert_int_equal(c.link_state, 0);
	cniconf_clear(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char json[512];

		snprintf(json, sizeof(json),
			 "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\","
			 "\"deviceID\":\"0000:03:02.0\",%s}",
			 bad[i].keys);
		memset(&err, 0, sizeof(err));
		assert_int_equal(parse(json, &c, &err), -EINVAL);
		assert_int_equal(err.code, 7);
		if (strncmp(err.details, bad[i].details, strlen(bad[i].details)))
			fail_msg("%s\n  got:  %s\n  want: %s", bad[i].keys, err.details,
				 bad[i].details);
	}
	/* a macvlan has no VF settings: the key is named */
	memset(&err, 0, sizeof(err));
	assert_int_equal(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\","
			       "\"master\":\"eth1\","
			       "\"max_tx_rate\":10}",
			       &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.details, "max_tx_rate: only for link hostdev"));
}

static void test_state(void **st)
{
	char dir[] = "/tmp/rdmak-cni-state.XXXXXX", path[256];
	struct attach_record s = { .host_ifindex = 12,
				   .host_mtu = 1500,
				   .host_up = true,
				   .vf_index = 3,
				   .rdma_moved = true,
				   .guid_set = true,
				   .guid_orig = 0x0002c90300216e70ull,
				   .has_pkey = true,
				   .pkey = 0x8001 };
	struct attach_record back;
	char **ids = NULL, **ifs = NULL;
	size_t n = 0;
	int fd;

	assert_non_null(mkdtemp(dir));
	strcpy(s.netns, "/run/netns/p");
	strcpy(s.host_name, "enp27s0f0v3");
	strcpy(s.pci, "0000:1b:00.5");
	strcpy(s.rdma_dev, "mlx5_5");
	strcpy(s.pf, "enp27s0f0np0");
	memcpy(s.host_mac, "\x02\x00\x00\x00\x00\x05", 6);
	s.host_mac_len = 6;
	assert_int_equal(attach_record_load(dir, "net", "c1", "net1", &back), 0);
	assert_int_equal(attach_record_save(dir, "net", "c1", "net1", &s), 0);
	assert_int_equal(attach_record_save(dir, "net", "c2", "net3", &s), 0);
	assert_int_equal(attach_record_load(dir, "net", "c1", "net1", &back), 1);
	assert_string_equal(back.netns, s.netns);
	assert_string_equal(back.host_name, s.host_name);
	assert_string_equal(back.pci, s.pci);
	assert_string_equal(back.rdma_dev, s.rdma_dev);
	assert_string_equal(back.pf, s.pf);
	assert_int_equal(back.host_mac_len, 6);
	assert_memory_equal(back.host_mac, s.host_mac, 6);
	assert_int_equal(back.host_ifindex, 12);
	assert_int_equal(back.host_mtu, 1500);
	assert_true(back.host_up && back.rdma_moved && back.guid_set && back.has_pkey);
	assert_int_equal(back.vf_index, 3);
	assert_true(back.guid_orig == s.guid_orig);
	assert_int_equal(back.pkey, 0x8001);
	assert_int_equal(back.vf_set, 0);
	/* the VF's settings before ADD, and which ADD changed */
	s.vf_set = CNICONF_VF_VLAN | CNICONF_VF_TRUST;
	s.vf_orig = (struct nl_vf_info){ .vf = 3,
					 .mac = { 0x02, 0, 0, 0, 0, 0x33 },
					 .vlan = 7,
					 .qos = 2,
					 .vlan_proto = 0x88a8,
					 .min_tx_rate = 10,
					 .max_tx_rate = 4000000000u,
					 .spoofchk = -1,
					 .trust = 0,
					 .link_state = 2 };
	assert_int_equal(attach_record_save(dir, "net", "c4", "net1", &s), 0);
	assert_int_equal(attach_record_load(dir, "net", "c4", "net1", &back), 1);
	assert_int_equal(back.vf_set, CNICONF_VF_VLAN | CNICONF_VF_TRUST);
	assert_memory_equal(back.vf_orig.mac, s.vf_orig.mac, 6);
	assert_int_equal(back.vf_orig.vf, 3);
	assert_int_equal(back.vf_orig.vlan, 7);
	assert_int_equal(back.vf_orig.qos, 2);
	assert_int_equal(back.vf_orig.vlan_proto, 0x88a8);
	assert_int_equal(back.vf_orig.min_tx_rate, 10);
	assert_true(back.vf_orig.max_tx_rate == 4000000000u);
	assert_int_equal(back.vf_orig.spoofchk, -1);
	assert_int_equal(back.vf_orig.trust, 0);
	assert_int_equal(back.vf_orig.link_state, 2);
	assert_int_equal(attach_record_remove(dir, "net", "c4", "net1"), 0);
	s.vf_set = 0;
	/* what the pod got, once ADD is done (rdmak dra's networkData); none before */
	assert_int_equal(back.n_pod_ips, 0);
	assert_string_equal(back.pod_mac, "");
	strcpy(s.pod_mac, "02:00:00:00:00:05");
	strcpy(s.pod_ips[0], "10.56.217.2/24");
	strcpy(s.pod_ips[1], "fd00::2/64");
	s.n_pod_ips = 2;
	assert_int_equal(attach_record_save(dir, "net", "c5", "net1", &s), 0);
	assert_int_equal(attach_record_load(dir, "net", "c5", "net1", &back), 1);
	assert_string_equal(back.pod_mac, "02:00:00:00:00:05");
	assert_int_equal(back.n_pod_ips, 2);
	assert_string_equal(back.pod_ips[0], "10.56.217.2/24");
	assert_string_equal(back.pod_ips[1], "fd00::2/64");
	assert_int_equal(attach_record_remove(dir, "net", "c5", "net1"), 0);
	s.pod_mac[0] = '\0';
	s.n_pod_ips = 0;
	{
		static const char *const bad[] = {
			"{\"hostName\":\"vf0\",\"pod\":{\"mac\":\"zz:00\",\"ips\":[]}}",
			"{\"hostName\":\"vf0\",\"pod\":{\"mac\":\"\",\"ips\":[]}}",
			"{\"hostName\":\"vf0\",\"pod\":{\"mac\":\"02:00:\",\"ips\":[]}}",
			"{\"hostName\":\"vf0\",\"pod\":{\"mac\":\"02:00\",\"ips\":"
			"[\"10.0.0.300/24\"]}}",
			"{\"hostName\":\"vf0\",\"pod\":{\"mac\":\"02:00\",\"ips\":"
			"\"10.0.0.3/24\"}}",
			"{\"hostName\":\"vf0\",\"pod\":{\"mac\":\"02:00\",\"ips\":"
			"[\"1.0.0.1/8\",\"1.0.0.2/8\","
			"\"1.0.0.3/8\",\"1.0.0.4/8\",\"1.0.0.5/8\",\"1.0.0.6/8\",\"1.0.0.7/8\","
			"\"1.0.0.8/8\",\"1.0.0.9/8\","
			"\"1.0.0.10/8\",\"1.0.0.11/8\",\"1.0.0.12/8\",\"1.0.0.13/8\","
			"\"1.0.0.14/8\",\"1.0.0.15/8\","
			"\"1.0.0.16/8\",\"1.0.0.17/8\"]}}",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(attach_record_parse(bad[i], strlen(bad[i]), &back),
					 -EBADMSG);
	}
	/* a damaged VF part is refused, not read as "nothing to put back" */
	{
		static const char bad[] =
			"{\"hostName\":\"vf0\",\"vfIndex\":1,\"vfOrig\":{\"set\":1,\"mac\":\"02:"
			"00:00:00:00:01\","
			"\"vlan\":5000,\"proto\":33024}}";
		assert_int_equal(attach_record_parse(bad, sizeof(bad) - 1, &back), -EBADMSG);
	}
	/* a temp file a killed writer left, and a foreign file: not records */
	snprintf(path, sizeof(path), "%s/net/.c3:net1.0badf00d.tmp", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/net/README", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	assert_int_equal(attach_record_list(dir, "net", &ids, &ifs, &n), 0);
	assert_int_equal(n, 2);
	strv_sort(ids);
	assert_string_equal(ids[0], "c1");
	assert_string_equal(ids[1], "c2");
	strv_free(ids);
	strv_free(ifs);
	/* the rdma link's record of the same attachment (a chain of hostdev then rdma keeps both):
	 * its own name, listed apart */
	strcpy(s.host_name, "net1");
	assert_int_equal(attach_record_load_rdma(dir, "net", "c1", "net1", &back), 0);
	assert_int_equal(attach_record_save_rdma(dir, "net", "c1", "net1", &s), 0);
	assert_int_equal(attach_record_list(dir, "net", &ids, &ifs, &n), 0);
	assert_int_equal(n, 2);
	strv_free(ids);
	strv_free(ifs);
	assert_int_equal(attach_record_list_rdma(dir, "net", &ids, &ifs, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ids[0], "c1");
	assert_string_equal(ifs[0], "net1");
	strv_free(ids);
	strv_free(ifs);
	assert_int_equal(attach_record_load(dir, "net", "c1", "net1", &back), 1);
	assert_string_equal(back.host_name, "enp27s0f0v3");
	assert_int_equal(attach_record_load_rdma(dir, "net", "c1", "net1", &back), 1);
	assert_string_equal(back.host_name, "net1");
	assert_int_equal(attach_record_remove_rdma(dir, "net", "c1", "net1"), 0);
	assert_int_equal(attach_record_load_rdma(dir, "net", "c1", "net1", &back), 0);
	assert_int_equal(attach_record_load(dir, "net", "c1", "net1", &back), 1);
	assert_int_equal(attach_record_remove(dir, "net", "c1", "net1"), 0);
	assert_int_equal(attach_record_remove(dir, "net", "c1", "net1"), 0);
	assert_int_equal(attach_record_load(dir, "net", "c1", "net1", &back), 0);
	/* names from outside never become paths unchecked */
	assert_int_equal(attach_record_save(dir, "../net", "c1", "net1", &s), -EINVAL);
	assert_int_equal(attach_record_save(dir, "net", "c1/..", "net1", &s), -EINVAL);
	assert_int_equal(attach_record_load(dir, "net", "c1", "a/b", &back), -EINVAL);
	/* a record naming a host interface with a slash is refused when read */
	assert_int_equal(attach_record_parse("{\"hostName\":\"../x\"}", 19, &back), -EBADMSG);
	assert_int_equal(
		attach_record_parse("{\"hostName\":\"vf0\",\"hostMac\":\"02:0\"}", 35, &back),
		-EBADMSG);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static int parse_cmd(const char *json, enum cnispec_cmd cmd, struct cniconf *cfg,
		     struct cnispec_error *err)
{
	struct cnispec_conf *conf = NULL;
	int r = cnispec_conf_parse(json, strlen(json), cmd, &conf, err);

	if (r == 0)
		r = cniconf_parse_cmd(conf, cmd, cfg, NULL, NULL, err);
	cnispec_conf_free(conf);
	return r;
}

/* "fabric": one of the node's fabrics by name, how the GUID joins; the keys that named a fabric
 * manager from the network config refused by path, saying what to write instead (DEL and GC take
 * them, for attachments made before); a record naming a GUID, its fabric and who added it. */
static void test_fabric(void **st)
{
#define HD                                                                                         \
	"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\","    \
	"\"deviceID\":\"0000:1b:00.2\","
	struct cnispec_error err = { 0 };
	struct cniconf c;
	struct attach_record s;
	uint64_t g;

	assert_int_equal(parse(HD "\"pkey\":\"0x8101\",\"fabric\":\"rail0\"}", &c, &err), 0);
	assert_true(c.fabric.set && cni_partition_wanted(&c));
	assert_string_equal(c.fabric.name, "rail0");
	assert_true(c.fabric.join.ip_over_ib && !c.fabric.join.limited && !c.fabric.join.index0);
	assert_null(c.fabric.legacy_url);
	cniconf_clear(&c);
	assert_int_equal(
		parse(HD "\"pkey\":257,\"fabric\":{\"name\":\"rail-1\",\"membership\":\"limited\","
			 "\"index0\":true,\"ipOverIb\":false}}",
		      &c, &err),
		0);
	assert_string_equal(c.fabric.name, "rail-1");
	assert_true(c.fabric.join.limited && c.fabric.join.index0 && !c.fabric.join.ip_over_ib);
	cniconf_clear(&c);
	/* the fabric manager's address, credentials, CA and timeout are the node's: refused by
	 * path, with what to write instead */
	static const char *const node_keys[] = { "ufm\":\"https://evil.example\"",
						 "credentials\":\"/var/run/secrets\"",
						 "ca\":\"/etc/ssl/c.pem\"", "timeoutSeconds\":60" };
	static const char *const node_paths[] = { "fabric.ufm", "fabric.credentials", "fabric.ca",
						  "fabric.timeoutSeconds" };
	for (size_t i = 0; i < 4; i++) {
		char conf[512];

		snprintf(conf, sizeof(conf), HD "\"pkey\":1,\"fabric\":{\"name\":\"rail0\",\"%s}}",
			 node_keys[i]);
		err = (struct cnispec_error){ 0 };
		assert_int_equal(parse(conf, &c, &err), -EINVAL);
		assert_int_equal(err.code, 2);
		assert_non_null(strstr(err.details, node_paths[i]));
		assert_non_null(strstr(err.details, "belongs to the node"));
		assert_non_null(strstr(err.details, "write \"fabric\": \"NAME\""));
	}
	/* the old shape, whole: refused on ADD, taken on DEL and GC (the URL only kept) */
	const char *old =
		HD "\"pkey\":1,\"fabric\":{\"ufm\":\"https://u\",\"credentials\":\"/s\",\"ca\":"
		   "\"/c\",\"timeoutSeconds\":1}}";
	assert_int_equal(parse(old, &c, &err), -EINVAL);
	assert_non_null(strstr(err.details, "fabric.ufm"));
	assert_int_equal(parse_cmd(old, CNISPEC_CMD_CHECK, &c, &err), -EINVAL);
	assert_int_equal(parse_cmd(old, CNISPEC_CMD_DEL, &c, &err), 0);
	assert_true(c.fabric.set && !c.fabric.name[0]);
	assert_string_equal(c.fabric.legacy_url, "https://u");
	cniconf_clear(&c);
	assert_int_equal(parse_cmd(old, CNISPEC_CMD_GC, &c, &err), 0);
	cniconf_clear(&c);
	/* other refusals, each naming its path */
	assert_int_equal(parse(HD "\"fabric\":\"rail0\"}", &c, &err), -EINVAL);
	assert_non_null(strstr(err.details, "fabric: needs pkey"));
	assert_int_equal(parse(HD "\"pkey\":1,\"fabric\":\"Rail_0\"}", &c, &err), -EINVAL);
	assert_non_null(strstr(err.details, "fabric: \"Rail_0\" is not a fabric name"));
	assert_int_equal(parse(HD "\"pkey\":1,\"fabric\":{\"membership\":\"full\"}}", &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.details, "fabric.name: missing"));
	assert_int_equal(parse(HD "\"pkey\":1,\"fabric\":7}", &c, &err), -EINVAL);
	assert_non_null(
		strstr(err.details, "fabric: expected the name of one of the node's fabrics"));
	assert_int_equal(parse(HD "\"pkey\":1,\"fabric\":{\"name\":\"r\",\"membership\":\"half\"}}",
			       &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.details, "fabric.membership: "));
	assert_int_equal(
		parse(HD "\"pkey\":1,\"fabric\":{\"name\":\"r\",\"verify\":false}}", &c, &err),
		-EINVAL);
	assert_int_equal(err.code, 2); /* no key turns verification off: unknown */
	assert_int_equal(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\","
			       "\"master\":\"ib0\",\"link\":\"ipoib\","
			       "\"pkey\":1,\"fabric\":\"rail0\"}",
			       &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err.details, "fabric: only for link hostdev"));
	/* where a guid came from, for the refusal of one that is not the VF's own */
	assert_int_equal(
		parse(HD "\"pkey\":1,\"fabric\":\"r\",\"runtimeConfig\":{\"infinibandGUID\":\"00:"
			 "02:c9:03:00:aa:bb:cc\"}}",
		      &c, &err),
		0);
	assert_string_equal(c.guid_key, "runtimeConfig.infinibandGUID");
	cniconf_clear(&c);
	/* the record: the GUID's fabric and whether this node added it */
	const char *rec =
		"{\"hostName\":\"vf1\",\"pkey\":33025,\"fabricGuid\":\"0002c90300216e70\","
		"\"fabric\":\"rail0\",\"fabricAdded\":false}";
	assert_int_equal(attach_record_parse(rec, strlen(rec), &s), 0);
	assert_true(s.fabric && !s.fabric_added);
	assert_string_equal(s.fabric_name, "rail0");
	rec = "{\"hostName\":\"vf1\",\"pkey\":1,\"fabricGuid\":\"0002c90300216e70\",\"fabric\":"
	      "\"../x\"}";
	assert_int_equal(attach_record_parse(rec, strlen(rec), &s), -EBADMSG);
	rec = "{\"hostName\":\"vf1\",\"pkey\":1,\"fabricGuid\":\"0002c90300216e70\","
	      "\"fabricAdded\":1}";
	assert_int_equal(attach_record_parse(rec, strlen(rec), &s), -EBADMSG);
	/* the record: fabricGuid needs its pkey */
	rec = "{\"hostName\":\"vf1\",\"pkey\":33025,\"fabricGuid\":\"0002c90300216e70\"}";
	assert_int_equal(attach_record_parse(rec, strlen(rec), &s), 0);
	/* a record of the version before: it added every GUID it named, of no named fabric */
	assert_true(s.fabric && s.fabric_added && !s.fabric_name[0]);
	assert_true(s.fabric_guid == 0x0002c90300216e70ull);
	rec = "{\"hostName\":\"vf1\",\"fabricGuid\":\"0002c90300216e70\"}";
	assert_int_equal(attach_record_parse(rec, strlen(rec), &s), -EBADMSG);
	rec = "{\"hostName\":\"vf1\",\"pkey\":1,\"fabricGuid\":\"02c90300216e70\"}";
	assert_int_equal(attach_record_parse(rec, strlen(rec), &s), -EBADMSG);
	/* GUIDs as UFM and ib-kubernetes write them */
	assert_int_equal(ufm_guid_parse("0x0002C90300216E70", &g), 0);
	assert_true(g == 0x0002c90300216e70ull);
	assert_int_equal(ufm_guid_parse("00:02:c9:03:00:21:6e:70", &g), 0);
	assert_true(g == 0x0002c90300216e70ull);
	assert_int_equal(ufm_guid_parse("0002c90300216e7", &g), -EINVAL);
	assert_int_equal(ufm_guid_parse("0002c90300216e7g", &g), -EINVAL);
#undef HD
}

/* What a network names of the node's (its CNI settings, src/nodeconf): the node's sysfs root
 * only, a stateDir beneath the node's, a logFile beneath its logDir; DEL and GC warn where ADD
 * refuses, but for stateDir (DEL acts on what a record says). */
static void warn_count(void *ud, const char *path, const char *why)
{
	(void)path;
	(void)why;
	(*(int *)ud)++;
}

static int resolved(const char *keys, enum cnispec_cmd cmd, const struct nodeconf *n,
		    struct cniconf *c, struct cnispec_error *err, int *warned)
{
	char json[1024];
	int r;

	snprintf(json, sizeof(json),
		 "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":"
		 "\"macvlan\","
		 "\"master\":\"rdma0\"%s}",
		 keys);
	if ((r = parse_cmd(json, cmd, c, err)) < 0)
		return r;
	*warned = 0;
	r = cniconf_resolve(c, n, cmd, warn_count, warned, err);
	if (r < 0)
		cniconf_clear(c);
	return r;
}

static void test_resolve(void **st)
{
	static const char node_text[] = "{\"sysfs\":\"/host/sys\",\"stateDir\":\"/var/lib/rdmak\","
					"\"logDir\":\"/var/log/rdmak\"}";
	struct cnispec_error err = { 0 };
	struct nodeconf n;
	struct cniconf c;
	char why[NODECONF_ERR_MAX];
	int warned;

	(void)st;
	assert_int_equal(nodeconf_parse(node_text, strlen(node_text), &n, why, sizeof(why)), 0);
	free(n.path);
	n.path = strdup("/etc/rdmak/cni.json");
	/* nothing named: the node's */
	assert_int_equal(resolved("", CNISPEC_CMD_ADD, &n, &c, &err, &warned), 0);
	assert_string_equal(c.sysfs, "/host/sys");
	assert_string_equal(c.state_dir, "/var/lib/rdmak");
	assert_string_equal(c.state_base, "/var/lib/rdmak");
	assert_null(c.log_file);
	cniconf_clear(&c);
	/* the node's own root, and folders beneath the node's */
	assert_int_equal(resolved(",\"sysfs\":\"/host/sys/\",\"stateDir\":\"/var/lib/rdmak/t\","
				  "\"logFile\":\"/var/log/rdmak/a/n.log\"",
				  CNISPEC_CMD_ADD, &n, &c, &err, &warned),
			 0);
	assert_string_equal(c.state_dir, "/var/lib/rdmak/t");
	assert_string_equal(c.log_file, "/var/log/rdmak/a/n.log");
	assert_int_equal(warned, 0);
	cniconf_clear(&c);
	/* another sysfs root: refused on ADD, warned about and the node's taken on DEL */
	assert_true(resolved(",\"sysfs\":\"/tmp/sys\"", CNISPEC_CMD_ADD, &n, &c, &err, &warned) <
		    0);
	assert_int_equal(err.code, 7);
	assert_string_equal(err.msg, "invalid network configuration: sysfs");
	assert_string_equal(
		err.details,
		"sysfs: /tmp/sys is not the node's sysfs root (/host/sys, /etc/rdmak/cni.json "
		"\"sysfs\"): rdmak-cni moves, renames and rebinds the devices it finds there, so "
		"the root is the node's owner's: remove the key");
	assert_int_equal(
		resolved(",\"sysfs\":\"/tmp/sys\"", CNISPEC_CMD_DEL, &n, &c, &err, &warned), 0);
	assert_string_equal(c.sysfs, "/host/sys");
	assert_int_equal(warned, 1);
	cniconf_clear(&c);
	/* a stateDir elsewhere, or in the ledger's dot folders: refused whatever the command */
	for (int cmd = CNISPEC_CMD_ADD; cmd <= CNISPEC_CMD_GC; cmd++) {
		if (cmd == CNISPEC_CMD_CHECK || cmd == CNISPEC_CMD_STATUS)
			continue;
		assert_true(resolved(",\"stateDir\":\"/home/u/state\"", (enum cnispec_cmd)cmd, &n,
				     &c, &err, &warned) < 0);
		assert_int_equal(err.code, 7);
		assert_non_null(
			strstr(err.details, "stateDir: /home/u/state is not the node's stateDir"));
	}
	assert_true(resolved(",\"stateDir\":\"/var/lib/rdmak/.fabric\"", CNISPEC_CMD_ADD, &n, &c,
			     &err, &warned) < 0);
	assert_true(resolved(",\"stateDir\":\"/var/lib/rdmak2\"", CNISPEC_CMD_ADD, &n, &c, &err,
			     &warned) < 0);
	/* a logFile elsewhere: refused on ADD, saying what to write; left out, warned of, on GC */
	assert_true(resolved(",\"logFile\":\"/etc/ld.so.preload\"", CNISPEC_CMD_ADD, &n, &c, &err,
			     &warned) < 0);
	assert_string_equal(
		err.details,
		"logFile: /etc/ld.so.preload is not beneath the node's logDir (/var/log/rdmak, "
		"/etc/rdmak/cni.json \"logDir\"): rdmak-cni appends to it as root, so only there: "
		"write \"/var/log/rdmak/ld.so.preload\", or leave the key out (stderr has every "
		"line)");
	assert_int_equal(resolved(",\"logFile\":\"/etc/ld.so.preload\"", CNISPEC_CMD_GC, &n, &c,
				  &err, &warned),
			 0);
	assert_null(c.log_file);
	assert_int_equal(warned, 1);
	cniconf_clear(&c);
	nodeconf_clear(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_table),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_refusals),
		cmocka_unit_test(test_config_infer_link),
		cmocka_unit_test(test_config_anchor_keys),
		cmocka_unit_test(test_config_vf_keys),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_fabric),
		cmocka_unit_test(test_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
