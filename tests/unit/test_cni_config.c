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

static int parse(const char *json, struct cni_config *cfg, struct cnispec_error *err)
{
	struct cnispec_conf *conf = NULL;
	int r = cnispec_conf_parse(json, strlen(json), CNISPEC_CMD_ADD, &conf, err);

	if (r == 0)
		r = cni_config_parse(conf, cfg, err);
	cnispec_conf_free(conf);
	return r;
}

static void test_config(void **st)
{
	struct cnispec_error err = { 0 };
	struct cni_config c;

	assert_int_equal(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\","
			       "\"master\":\"bond0\",\"deviceID\":\"0000:1b:00.2\"}", &c, &err), 0);
	assert_int_equal(c.link, CNI_LINK_MACVLAN);
	assert_string_equal(c.master, "bond0");
	assert_int_equal(c.macvlan_mode, MACVLAN_MODE_BRIDGE);
	assert_true(c.policy_routing);
	assert_int_equal(c.table_base, 100);
	assert_int_equal(c.rule_priority, 30000);
	assert_string_equal(c.state_dir, CNI_DEFAULT_STATE_DIR);
	assert_null(c.sysfs);
	cni_config_clear(&c);

	assert_int_equal(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":\"hostdev\","
			       "\"deviceID\":\"0000:1b:00.2\",\"pciBusID\":\"0000:1b:00.2\",\"guid\":\"00:02:c9:03:00:21:6e:70\","
			       "\"pkey\":32769,\"runtimeConfig\":{\"deviceID\":\"1b:00.3\",\"mac\":\"02:00:00:00:00:07\"}}",
			       &c, &err), 0);
	assert_string_equal(c.device_id, "0000:1b:00.3");
	assert_true(c.has_guid);
	assert_true(c.guid == 0x0002c90300216e70ull);
	assert_int_equal(c.pkey, 0x8001);
	assert_true(c.has_mac);
	assert_int_equal(c.mac[5], 7);
	cni_config_clear(&c);

	assert_int_equal(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":\"ipoib\","
			       "\"master\":\"ib0\",\"pkey\":\"0x7fff\",\"mtu\":65535}", &c, &err), 0);
	assert_int_equal(c.pkey, 0x7fff);
	assert_int_equal(c.mtu, 65535);
	cni_config_clear(&c);

	memset(&err, 0, sizeof(err));
	assert_int_equal(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",\"link\":\"macvlan\","
			       "\"master\":\"ens1\",\"vlan\":100}", &c, &err), -EINVAL);
	assert_int_equal(err.code, 2);
	assert_non_null(strstr(err.details, "vlan: unsupported key (value: 100)"));
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
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"ipMasq\":true", 2, "unsupported field ipMasq",
		  "ipMasq: unsupported key (value: true); rdmak-cni sets up no masquerading: RDMA traffic is not NATed" },
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"vlan\":[1]", 2, "unsupported field vlan",
		  "vlan: unsupported key (value: [1]); docs/cni.md lists the keys rdmak-cni accepts" },
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"mtu\":\"9000\"", 7, "invalid network configuration: mtu",
		  "mtu: expected an integer from 68 to 65535, got a string" },
		{ "\"link\":\"macvlan\",\"master\":\"ens1\",\"runtimeConfig\":{\"mac\":\"03:00:00:00:00:01\",\"ips\":[]}", 7,
		  "invalid network configuration: runtimeConfig.mac", "runtimeConfig.mac: 03:00:00:00:00:01 is a multicast address" },
		{ "\"link\":\"hostdev\",\"pciBusID\":\"0000:1b:00.3\",\"deviceID\":\"1b:00.2\"", 7,
		  "invalid network configuration: pciBusID",
		  "pciBusID: 0000:1b:00.3 differs from the other PCI address given (0000:1b:00.2)" },
		{ "\"link\":\"hostdev\",\"device\":\"vf0\",\"runtimeConfig\":{\"deviceID\":\"0000:1b:00.2\"}", 7,
		  "invalid network configuration: device",
		  "device: give device or deviceID, not both (deviceID 0000:1b:00.2 is also set)" },
		{ "\"link\":\"ipoib\",\"master\":\"ib0\",\"mode\":\"vepa\"", 7, "invalid network configuration: mode",
		  "mode: only for link macvlan" },
		{ "\"link\":\"hostdev\",\"device\":\"vf0\",\"rdmaIsolation\":null", 7,
		  "invalid network configuration: rdmaIsolation", "rdmaIsolation: expected true or false, got null" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cnispec_error err = { 0 };
		struct cni_config c;
		char json[512];

		snprintf(json, sizeof(json), "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"rdmak-cni\",%s}", cases[i].keys);
		assert_int_equal(parse(json, &c, &err), -EINVAL);
		assert_int_equal(err.code, cases[i].code);
		assert_string_equal(err.msg, cases[i].msg);
		assert_string_equal(err.details, cases[i].details);
	}
}

static void test_state(void **st)
{
	char dir[] = "/tmp/rdmak-cni-state.XXXXXX", path[256];
	struct cni_state s = { .host_ifindex = 12, .host_mtu = 1500, .host_up = true, .vf_index = 3, .rdma_moved = true,
			       .guid_set = true, .guid_orig = 0x0002c90300216e70ull, .has_pkey = true, .pkey = 0x8001 };
	struct cni_state back;
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
	assert_int_equal(cni_state_load(dir, "net", "c1", "net1", &back), 0);
	assert_int_equal(cni_state_save(dir, "net", "c1", "net1", &s), 0);
	assert_int_equal(cni_state_save(dir, "net", "c2", "net3", &s), 0);
	assert_int_equal(cni_state_load(dir, "net", "c1", "net1", &back), 1);
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
	/* a temp file a killed writer left, and a foreign file: not records */
	snprintf(path, sizeof(path), "%s/net/.c3:net1.0badf00d.tmp", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/net/README", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	assert_int_equal(cni_state_list(dir, "net", &ids, &ifs, &n), 0);
	assert_int_equal(n, 2);
	strv_sort(ids);
	assert_string_equal(ids[0], "c1");
	assert_string_equal(ids[1], "c2");
	strv_free(ids);
	strv_free(ifs);
	assert_int_equal(cni_state_remove(dir, "net", "c1", "net1"), 0);
	assert_int_equal(cni_state_remove(dir, "net", "c1", "net1"), 0);
	assert_int_equal(cni_state_load(dir, "net", "c1", "net1", &back), 0);
	/* names from outside never become paths unchecked */
	assert_int_equal(cni_state_save(dir, "../net", "c1", "net1", &s), -EINVAL);
	assert_int_equal(cni_state_save(dir, "net", "c1/..", "net1", &s), -EINVAL);
	assert_int_equal(cni_state_load(dir, "net", "c1", "a/b", &back), -EINVAL);
	/* a record naming a host interface with a slash is refused when read */
	assert_int_equal(cni_state_parse("{\"hostName\":\"../x\"}", 19, &back), -EBADMSG);
	assert_int_equal(cni_state_parse("{\"hostName\":\"vf0\",\"hostMac\":\"02:0\"}", 35, &back), -EBADMSG);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_table),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_refusals),
		cmocka_unit_test(test_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
