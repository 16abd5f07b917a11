/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's config parser: both anchors' formats unchanged (seed 003's configs verbatim),
 * rdmak's extras, and every kind of bad input refused with the JSON path of the field. */
#include <errno.h>
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

#include "pool/config.h"
#include "util/fileio.h"

static struct pool_config *parse_ok(const char *text)
{
	struct pool_config *cfg = NULL;
	char err[512];
	int r = pool_config_parse(text, strlen(text), &cfg, err, sizeof(err));

	if (r < 0)
		fail_msg("refused: %s\n%s", err, text);
	return cfg;
}

/* The message for text must be exactly want. */
static void parse_bad(const char *text, const char *want)
{
	struct pool_config *cfg = NULL;
	char err[512];
	int r = pool_config_parse(text, strlen(text), &cfg, err, sizeof(err));

	if (r != -EINVAL)
		fail_msg("accepted (r=%d): %s", r, text);
	assert_null(cfg);
	if (strcmp(err, want))
		fail_msg("message\n  got:  %s\n  want: %s", err, want);
}

/* seed 003: the two-resource shared config as the users deployed it */
static const char seed003_shared[] = "{\n"
				     "  \"configList\": [\n"
				     "    {\n"
				     "      \"resourceName\": \"rdma_v100\",\n"
				     "      \"rdmaHcaMax\": 63,\n"
				     "      \"selectors\": {\n"
				     "        \"ifNames\": [\"ibxxxxxx0\",\"ibxxxxxx1\"],\n"
				     "        \"linkTypes\": [\"infiniband\"]\n"
				     "      }\n"
				     "    },\n"
				     "    {\n"
				     "      \"resourceName\": \"rdma_a100\",\n"
				     "      \"rdmaHcaMax\": 63,\n"
				     "      \"selectors\": {\n"
				     "        \"ifNames\": [\"ibxxxx0\",\"ibxxxxx0\"],\n"
				     "        \"linkTypes\": [\"infiniband\"]\n"
				     "      }\n"
				     "    }\n"
				     "  ]\n"
				     "}\n";

/* seed 003: the sriov-network-device-plugin hostdev config, empty lists included */
static const char seed003_hostdev[] = "{\n"
				      "  \"resourceList\": [\n"
				      "    {\n"
				      "      \"resourcePrefix\": \"nvidia.com\",\n"
				      "      \"resourceName\": \"hostdev\",\n"
				      "      \"selectors\": {\n"
				      "        \"vendors\": [\"15b3\"],\n"
				      "        \"devices\": [],\n"
				      "        \"drivers\": [],\n"
				      "        \"pfNames\": [],\n"
				      "        \"pciAddresses\": [],\n"
				      "        \"rootDevices\": [],\n"
				      "        \"linkTypes\": [],\n"
				      "        \"isRdma\": true\n"
				      "      }\n"
				      "    }\n"
				      "  ]\n"
				      "}\n";

static void test_seed003_shared(void **st)
{
	struct pool_config *cfg = parse_ok(seed003_shared);

	assert_int_equal(cfg->n_res, 2);
	assert_int_equal(cfg->periodic_update_s, POOL_DEFAULT_RESCAN_S);
	assert_string_equal(cfg->res[0].full_name, "rdma/rdma_v100");
	assert_string_equal(cfg->res[1].full_name, "rdma/rdma_a100");
	assert_int_equal(cfg->res[1].kind, POOL_SHARED);
	assert_int_equal(cfg->res[1].rdma_hca_max, 63);
	assert_int_equal(cfg->res[1].n_sels, 1);
	assert_int_equal(cfg->res[1].sels[0].if_names.n, 2);
	assert_string_equal(cfg->res[1].sels[0].if_names.v[1], "ibxxxxx0");
	/* normalised: "infiniband" and "ether"/"ethernet" compare as link codes */
	assert_string_equal(cfg->res[1].sels[0].link_types.v[0], "ib");
	assert_string_equal(cfg->res[1].path, "configList[1]");
	pool_config_free(cfg);
}

static void test_seed003_hostdev(void **st)
{
	struct pool_config *cfg = parse_ok(seed003_hostdev);
	const struct pool_resource *r = &cfg->res[0];

	assert_int_equal(cfg->n_res, 1);
	assert_int_equal(r->kind, POOL_EXCLUSIVE);
	assert_string_equal(r->full_name, "nvidia.com/hostdev");
	assert_int_equal(r->sels[0].is_rdma, 1);
	assert_int_equal(r->sels[0].vendors.n, 1);
	assert_int_equal(r->sels[0].pf_names.n, 0);
	pool_config_free(cfg);
}

static void test_legacy_devices_and_defaults(void **st)
{
	/* the anchor README's example: legacy "devices" and a selectors entry,
	 * periodicUpdateInterval */
	struct pool_config *cfg = parse_ok("{\"periodicUpdateInterval\":300,\"configList\":"
					   "[{\"resourceName\":\"hca_shared_devices_a\","
					   "\"rdmaHcaMax\":1000,"
					   "\"devices\":[\"ib0\",\"ib1\"]},{\"resourceName\":"
					   "\"hca_shared_devices_b\",\"rdmaHcaMax\":500,"
					   "\"selectors\":"
					   "{\"vendors\":[\"15B3\"],\"deviceIDs\":"
					   "[\"1017\"],\"ifNames\":[\"ib3\","
					   "\"ib4\"]}}]}");

	assert_int_equal(cfg->periodic_update_s, 300);
	assert_int_equal(cfg->res[0].sels[0].if_names.n, 2);
	assert_string_equal(cfg->res[0].sels[0].if_names.v[0], "ib0");
	assert_string_equal(cfg->res[1].sels[0].vendors.v[0], "15b3"); /* lowercased like sysfs */
	assert_string_equal(cfg->res[1].prefix, "rdma");
	pool_config_free(cfg);
}

static void test_sriov_forms(void **st)
{
	struct pool_config *cfg =
		parse_ok("{\"resourceList\":[{\"resourceName\":\"gpu1sriov\","
			 "\"resourcePrefix\":\"spidernet.io\",\"deviceType\":"
			 "\"netDevice\","
			 "\"excludeTopology\":true,\"selectors\":[{\"pfNames\":"
			 "[\"ens1f0#0-3,7\",\"0000:86:00.0#1\"],\"IsRdma\":true},"
			 "{\"rootDevices\":[\"0000:86:00.1\"],"
			 "\"linkTypes\":[\"ether\"],\"needVhostNet\":"
			 "true}],"
			 "\"additionalInfo\":{\"*\":{\"k\":\"v\"}}},"
			 "{\"resourceName\":\"pfs\",\"selectors\":{\"pciAddresses\":"
			 "[\"0000:37:00.0\"],\"acpiIndexes\":[],\"vdpaType\":"
			 "\"\"}}]}");
	const struct pool_resource *r = &cfg->res[0];

	assert_int_equal(r->n_sels, 2);
	assert_true(r->exclude_topology);
	/* Go's encoding/json matches keys case-insensitively; so do we for anchor keys */
	assert_int_equal(r->sels[0].is_rdma, 1);
	assert_int_equal(r->sels[0].pf_names.n, 2);
	assert_string_equal(r->sels[0].pf_names.v[0].pf, "ens1f0");
	assert_true(pool_pf_sel_has_vf(&r->sels[0].pf_names.v[0], 7));
	assert_false(pool_pf_sel_has_vf(&r->sels[0].pf_names.v[0], 4));
	assert_string_equal(r->sels[0].pf_names.v[1].pf, "0000:86:00.0");
	assert_string_equal(r->sels[1].link_types.v[0], "eth");
	assert_true(r->sels[1].need_vhost_net);
	assert_string_equal(r->additional_info, "{\"*\":{\"k\":\"v\"}}");
	assert_string_equal(cfg->res[1].full_name,
			    "intel.com/pfs"); /* the anchor's default prefix */
	pool_config_free(cfg);
}

static void test_rdmak_extras(void **st)
{
	struct pool_config *cfg = parse_ok("{\"healthIntervalMs\":100,\"configList\":"
					   "[{\"resourceName\":\"rdma_a100\","
					   "\"rdmaHcaMax\":8,"
					   "\"selectors\":{\"ifNames\":[\"bond0\"]},\"envs\":"
					   "{\"NCCL_IB_HCA\":\"=${hcas}\",\"NCCL_SOCKET_IFNAME\":"
					   "\"${netdevs}\"}}],"
					   "\"resourceList\":[{\"resourceName\":\"vf\","
					   "\"resourcePrefix\":\"rdma\",\"selectors\":"
					   "{\"isRdma\":true}}]}");

	assert_int_equal(cfg->health_interval_ms, 100);
	assert_int_equal(cfg->rdma_netns_mode, -1);
	assert_int_equal(cfg->n_res, 2);
	assert_int_equal(cfg->res[0].n_envs, 2);
	assert_string_equal(cfg->res[0].envs[0].name, "NCCL_IB_HCA");
	assert_string_equal(cfg->res[0].envs[0].value, "=${hcas}");
	assert_string_equal(cfg->res[1].path, "resourceList[0]");
	pool_config_free(cfg);
}

/* docs/doctor.md documents rdmaNetnsMode as rdmak's own key: the plugin used to refuse it as
 * unknown while `doctor --plugin-config` read it (issue 11). */
static void test_rdma_netns_mode(void **st)
{
	struct pool_config *cfg = parse_ok("{\"rdmaNetnsMode\":\"exclusive\",\"resourceList\":"
					   "[{\"resourceName\":\"vf\",\"selectors\":{\"isRdma\":"
					   "true}}]}");

	assert_int_equal(cfg->rdma_netns_mode, 0);
	pool_config_free(cfg);
	cfg = parse_ok("{\"rdmaNetnsMode\":\"shared\",\"configList\":"
		       "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,\"devices\":"
		       "[\"ib0\"]}]}");
	assert_int_equal(cfg->rdma_netns_mode, 1);
	pool_config_free(cfg);
	parse_bad("{\"rdmaNetnsMode\":\"Shared\",\"configList\":"
		  "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,\"devices\":"
		  "[\"ib0\"]}]}",
		  "rdmaNetnsMode: \"Shared\" is not one of \"exclusive\", \"shared\"");
	/* who serves a resource: the plugin unless it says the DRA driver */
	cfg = parse_ok("{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		       "\"devices\":[\"ib0\"],\"servedBy\":\"dra\"},{\"resourceName\":\"b\","
		       "\"rdmaHcaMax\":1,\"devices\":[\"ib1\"],\"servedBy\":\"plugin\"}],"
		       "\"resourceList\":[{\"resourceName\":\"vf\",\"selectors\":{}}]}");
	assert_int_equal(cfg->res[0].served_by, POOL_BY_DRA);
	assert_int_equal(cfg->res[1].served_by, POOL_BY_PLUGIN);
	assert_int_equal(cfg->res[2].served_by, POOL_BY_PLUGIN);
	pool_config_free(cfg);
	parse_bad("{\"resourceList\":[{\"resourceName\":\"vf\",\"selectors\":{},"
		  "\"servedBy\":\"both\"}]}",
		  "resourceList[0].servedBy: \"both\" is not one of \"plugin\", \"dra\"");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		  "\"devices\":[\"ib0\"],\"servedby\":\"dra\"}]}",
		  "configList[0].servedby: unknown key (did you mean \"servedBy\"?)");
	parse_bad("{\"rdmaNetnsMode\":1,\"configList\":"
		  "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		  "\"devices\":[\"ib0\"]}]}",
		  "rdmaNetnsMode: expected a string, got an integer");
	/* a mode alone is no config */
	parse_bad("{\"rdmaNetnsMode\":\"shared\"}",
		  "expected \"configList\" (shared HCAs) or \"resourceList\" (VFs/PFs)");
}

static void test_pf_ranges(void **st)
{
	struct pool_pf_sel p;
	const char *why;

	assert_int_equal(pool_pf_sel_parse("ens1f0#0-3,7", &p, &why), 0);
	assert_string_equal(p.pf, "ens1f0");
	assert_false(p.all);
	assert_int_equal(p.n_ranges, 2);
	for (int i = 0; i < 4; i++)
		assert_true(pool_pf_sel_has_vf(&p, i));
	assert_false(pool_pf_sel_has_vf(&p, 4));
	assert_true(pool_pf_sel_has_vf(&p, 7));
	assert_false(pool_pf_sel_has_vf(&p, 8));
	assert_false(pool_pf_sel_has_vf(&p, -1)); /* the PF itself is not one of its VFs */
	pool_pf_sel_clear(&p);

	assert_int_equal(pool_pf_sel_parse("netpf0#0,2-7,9", &p, &why), 0);
	assert_true(pool_pf_sel_has_vf(&p, 0) && !pool_pf_sel_has_vf(&p, 1) &&
		    pool_pf_sel_has_vf(&p, 5) && pool_pf_sel_has_vf(&p, 9));
	pool_pf_sel_clear(&p);

	assert_int_equal(pool_pf_sel_parse("ens1f0", &p, &why), 0);
	assert_true(p.all);
	assert_true(pool_pf_sel_has_vf(&p, -1) && pool_pf_sel_has_vf(&p, 100));
	pool_pf_sel_clear(&p);

	assert_int_equal(pool_pf_sel_parse("0000:86:00.0#0-1,3,4", &p, &why), 0);
	assert_string_equal(p.pf, "0000:86:00.0");
	pool_pf_sel_clear(&p);

	static const char *const bad[] = { "ens1f0#",
					   "#0-3",
					   "ens1f0#3-1",
					   "ens1f0#a",
					   "ens1f0#1,",
					   "ens1f0#1-",
					   "ens1f0#1--2",
					   "ens1f0#99999999",
					   "",
					   "averyveryverylongname#1",
					   "ens1f0#1 ,2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (pool_pf_sel_parse(bad[i], &p, &why) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_non_null(why);
	}
}

/* The keys always joined with "; " */
static char *warnings_of(const struct pool_config *cfg, char *buf, size_t n)
{
	buf[0] = '\0';
	for (size_t i = 0; i < cfg->warnings.n; i++)
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "; " : "",
			 cfg->warnings.v[i]);
	return buf;
}

/* Keys the Go plugins ignore (encoding/json drops unknown keys) are accepted and named, never a
 * refusal: sriov-network-device-plugin's own docs print "SelectorObj": null (issue 17). rdmak's
 * own keys still refuse their typos, and selector objects still refuse unknown keys. */
static void test_ignored_keys(void **st)
{
	char buf[1024];
	/* docs/config-file/README.md of sriov-network-device-plugin, verbatim */
	struct pool_config *cfg =
		parse_ok("{\"resourceList\":[{\"resourceName\":\"sriovnics\","
			 "\"selectors\":{\"pfNames\":[\"ens785f0#0-4\","
			 "\"ens785f1#0-9\"],"
			 "\"IsRdma\":false,\"NeedVhostNet\":false},\"SelectorObj\":null}]}");

	(void)st;
	assert_int_equal(cfg->res[0].sels[0].pf_names.n, 2);
	assert_string_equal(warnings_of(cfg, buf, sizeof(buf)),
			    "resourceList[0].SelectorObj: "
			    "sriov-network-device-plugin's own field (its "
			    "docs print it as "
			    "null); ignored, as it is there");
	pool_config_free(cfg);

	cfg = parse_ok("{\"junk\":1,\"configList\":[{\"resourceName\":"
		       "\"a\",\"rdmaHcaMax\":1,\"devices\":[\"ib0\"],"
		       "\"extra\":{}}],\"resourceList\":"
		       "[{\"resourceName\":\"b\",\"selectors\":{},"
		       "\"comment\":\"x\"}]}");
	assert_string_equal(
		warnings_of(cfg, buf, sizeof(buf)),
		"junk: unknown key, ignored; configList[0].extra: unknown key, ignored; "
		"resourceList[0].comment: unknown key, ignored");
	pool_config_free(cfg);

	/* Go reads null as the zero value */
	cfg = parse_ok("{\"periodicUpdateInterval\":null,\"resourceList\":"
		       "[{\"resourceName\":\"b\",\"resourcePrefix\":null,"
		       "\"selectors\":{\"vendors\":null,\"isRdma\":null}}]}");
	assert_int_equal(cfg->periodic_update_s, POOL_DEFAULT_RESCAN_S);
	assert_string_equal(cfg->res[0].full_name, "intel.com/b");
	assert_int_equal(cfg->res[0].sels[0].is_rdma, -1);
	assert_int_equal(cfg->warnings.n, 0);
	pool_config_free(cfg);

	/* rdmak's own keys: matched exactly, a near miss refused */
	parse_bad("{\"HealthIntervalMs\":100,\"configList\":"
		  "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "HealthIntervalMs: unknown key (did you mean \"healthIntervalMs\"?)");
	parse_bad("{\"rdmaNetnsMod\":\"shared\",\"configList\":"
		  "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "rdmaNetnsMod: unknown key (did you mean \"rdmaNetnsMode\"?)");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[],\"env\":"
		  "{}}]}",
		  "configList[0].env: unknown key (did you mean \"envs\"?)");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[],"
		  "\"excludeTopolgy\":true}]}",
		  "configList[0].excludeTopolgy: unknown key (did you mean \"excludeTopology\"?)");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"b\",\"selectors\":{},\"Envs\":{}}]}",
		  "resourceList[0].Envs: unknown key (did you mean \"envs\"?)");
	/* selectors: an ignored one would widen the pool */
	parse_bad("{\"resourceList\":[{\"resourceName\":"
		  "\"b\",\"selectors\":{\"SelectorObj\":"
		  "null}}]}",
		  "resourceList[0].selectors.SelectorObj: unknown key");
}

/* rootDevices takes sriov-network-device-plugin's VF ranges (README: "0000:86:00.0#0-1,3,4") */
static void test_root_devices(void **st)
{
	struct pool_config *cfg =
		parse_ok("{\"resourceList\":[{\"resourceName\":\"x\",\"selectors\":"
			 "{\"rootDevices\":[\"0000:86:00.0#0-1,3,4\",\"0000:AF:"
			 "00.1\"]}}]}");
	const struct pool_pf_list *l = &cfg->res[0].sels[0].root_devices;

	(void)st;
	assert_int_equal(l->n, 2);
	assert_string_equal(l->v[0].pf, "0000:86:00.0");
	assert_false(l->v[0].all);
	for (int i = 0; i < 6; i++)
		assert_true(pool_pf_sel_has_vf(&l->v[0], i) == (i != 2 && i != 5));
	assert_false(pool_pf_sel_has_vf(&l->v[0], -1));
	assert_string_equal(l->v[1].pf, "0000:af:00.1"); /* sysfs prints lowercase */
	assert_true(l->v[1].all);
	pool_config_free(cfg);
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{\"rootDevices\":[\"0000:86:"
		  "00.0#3-1\"]}}]}",
		  "resourceList[0].selectors.rootDevices[0]: "
		  "\"0000:86:00.0#3-1\": range end is before its "
		  "start "
		  "(expected \"0000:86:00.0\" or \"0000:86:00.0#0-1,3,4\")");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{\"rootDevices\":"
		  "[\"ens1f0#1\"]}}]}",
		  "resourceList[0].selectors.rootDevices[0]: "
		  "\"ens1f0#1\": \"ens1f0\" is not a PCI "
		  "address "
		  "(expected \"0000:86:00.0\" or \"0000:86:00.0#0-1,3,4\")");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{\"rootDevices\":[\"0000:86:"
		  "00.0#\"]}}]}",
		  "resourceList[0].selectors.rootDevices[0]: "
		  "\"0000:86:00.0#\": no VF range after '#' "
		  "(expected \"0000:86:00.0\" or \"0000:86:00.0#0-1,3,4\")");
}

static void test_bad_syntax(void **st)
{
	parse_bad("", "line 1 column 0: '[' or '{' expected near end of file");
	parse_bad("{\"configList\": [}", "line 1 column 17: unexpected token near '}'");
	parse_bad("[]", "expected a JSON object with \"configList\" or \"resourceList\"");
	parse_bad("{}", "expected \"configList\" (shared HCAs) or \"resourceList\" (VFs/PFs)");
	parse_bad("{\"configList\":[]}", "configList: expected at least one resource");
	parse_bad("{\"configList\":{}}", "configList: expected an array of objects, got an object");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[\"ib0\"]}],"
		  "\"configList\":[]}",
		  "line 1 column 82: duplicate object key near '\"configList\"'");
}

static void test_bad_fields(void **st)
{
	parse_bad("{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,\"selectors\":{}},"
		  "{\"resourceName\":\"b\",\"rdmaHcaMax\":1,\"selectors\":{\"ifNames\":\"ib0\"}}]}",
		  "configList[1].selectors.ifNames: expected an array of strings, got a string");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"selectors\":{\"ifNames\":"
		  "[\"ib0\",3]}}]}",
		  "configList[0].selectors.ifNames[1]: expected a string, got an integer");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"selectors\":{\"ifname\":"
		  "[\"ib0\"]}}]}",
		  "configList[0].selectors.ifname: unknown key");
	/* a key the anchors ignore (top level, resources) is warned about: test_ignored_keys */
	parse_bad("{\"configlist\":[],\"junk\":1}", "configlist: expected at least one resource");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[\"ib0\"],"
		  "\"ResourceName\":\"b\"}]}",
		  "configList[0].ResourceName: duplicate of key \"resourceName\"");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":-1,\"devices\":"
		  "[\"ib0\"]}]}",
		  "configList[0].rdmaHcaMax: -1 is out of range (0 to 100000)");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":\"63\",\"devices\":"
		  "[\"ib0\"]}]}",
		  "configList[0].rdmaHcaMax: expected an integer from 0 to 100000, got a string");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\",\"devices\":[\"ib0\"]}]}",
		  "configList[0].rdmaHcaMax: missing (how many containers may share the pool)");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1}]}",
		  "configList[0].selectors: missing (or the deprecated \"devices\" list)");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[\"ib0\"],"
		  "\"selectors\":{}}]}",
		  "configList[0].devices: give either "
		  "\"selectors\" or the deprecated \"devices\", "
		  "not both");
	parse_bad("{\"configList\":[{\"rdmaHcaMax\":1,\"devices\":[\"ib0\"]}]}",
		  "configList[0].resourceName: missing");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"selectors\":{\"linkTypes\":"
		  "[\"eth0\"]}}]}",
		  "configList[0].selectors.linkTypes[0]: unknown link type "
		  "\"eth0\" (expected \"infiniband\", \"ether\" or "
		  "\"ethernet\")");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"selectors\":{\"vendors\":"
		  "[\"0x15b3\"]}}]}",
		  "configList[0].selectors.vendors[0]: \"0x15b3\" "
		  "is not a PCI ID (4 hex digits, e.g. \"15b3\")");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"selectors\":{\"ifNames\":"
		  "[\"../etc\"]}}]}",
		  "configList[0].selectors.ifNames[0]: \"../etc\" is not an interface name: "
		  "contains '/'");
	/* a name no netdev can have (an alias's "eth0:1" is an address label) */
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"selectors\":{\"ifNames\":"
		  "[\"eth0:1\"]}}]}",
		  "configList[0].selectors.ifNames[0]: \"eth0:1\" is not an interface name: "
		  "contains ':'");
	parse_bad("{\"periodicUpdateInterval\":-5,\"configList\":"
		  "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "periodicUpdateInterval: -5 is out of range (0 to 31536000)");
	parse_bad("{\"healthIntervalMs\":1,\"configList\":"
		  "[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "healthIntervalMs: 1 is out of range (10 to 60000)");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{\"pfNames\":"
		  "[\"ens1f0#3-1\"]}}]}",
		  "resourceList[0].selectors.pfNames[0]: \"ens1f0#3-1\": range "
		  "end is before its start (expected \"ens1f0\" or "
		  "\"ens1f0#0-3,7\")");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{\"rootDevices\":[\"86:"
		  "00.0\"]}}]}",
		  "resourceList[0].selectors.rootDevices[0]: \"86:"
		  "00.0\" is not a PCI address (\"0000:37:00.0\")");
	parse_bad(
		"{\"resourceList\":[{\"resourceName\":\"x\",\"selectors\":{\"isRdma\":\"true\"}}]}",
		"resourceList[0].selectors.isRdma: expected true or false, got a string");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{\"ddpProfiles\":"
		  "[\"GTP\"]}}]}",
		  "resourceList[0].selectors.ddpProfiles: not "
		  "supported by rdmak (netDevice pools of RDMA "
		  "functions only)");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"deviceType\":\"accelerator\",\"selectors\":"
		  "{}}]}",
		  "resourceList[0].deviceType: \"accelerator\" "
		  "is not supported by rdmak (only "
		  "\"netDevice\")");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\"}]}",
		  "resourceList[0].selectors: missing");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\",\"selectors\":[]}]}",
		  "resourceList[0].selectors: expected at least one selector object");
	parse_bad("{\"resourceList\":[{\"resourceName\":"
		  "\"x\",\"selectors\":[{},{\"drivers\":"
		  "[1]}]}]}",
		  "resourceList[0].selectors[1].drivers[0]: expected a string, got an integer");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"x\","
		  "\"selectors\":{},\"additionalInfo\":{\"eth0\":"
		  "{}}}]}",
		  "resourceList[0].additionalInfo.eth0: expected \"*\" or a PCI address");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[],\"envs\":{\"1X\":"
		  "\"y\"}}]}",
		  "configList[0].envs.1X: not an environment variable name");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[],\"envs\":{\"X\":"
		  "\"${gpus}\"}}]}",
		  "configList[0].envs.X: unknown placeholder "
		  "in \"${gpus}\" (known: ${hcas}, "
		  "${netdevs})");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"rdmaHcaMax\":1,\"devices\":[],\"envs\":"
		  "{\"PCIDEVICE_X\":\"y\"}}]}",
		  "configList[0].envs.PCIDEVICE_X: PCIDEVICE_* is set by the plugin itself");
}

static void test_names(void **st)
{
	/* duplicates: across both lists, by the full name */
	parse_bad("{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,\"devices\":[]},"
		  "{\"resourceName\":\"a\",\"rdmaHcaMax\":2,\"devices\":[]}]}",
		  "configList[1].resourceName: duplicate resource \"rdma/a\" (also configList[0])");
	parse_bad("{\"configList\":[{\"resourceName\":\"hostdev\","
		  "\"resourcePrefix\":\"nvidia.com\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}],"
		  "\"resourceList\":[{\"resourceName\":\"hostdev\","
		  "\"resourcePrefix\":\"nvidia.com\",\"selectors\":"
		  "{}}]}",
		  "resourceList[0].resourceName: duplicate "
		  "resource \"nvidia.com/hostdev\" (also "
		  "configList[0])");
	/* the anchors' own patterns */
	parse_bad(
		"{\"configList\":[{\"resourceName\":\"rdma-a\",\"rdmaHcaMax\":1,\"devices\":[]}]}",
		"configList[0].resourceName: \"rdma-a\" may only contain letters, digits, '_'");
	parse_bad("{\"resourceList\":[{\"resourceName\":\"a/b\",\"selectors\":{}}]}",
		  "resourceList[0].resourceName: \"a/b\" may "
		  "only contain letters, digits, '_' and '-'");
	/* names the anchors accept but the kubelet rejects */
	parse_bad("{\"configList\":[{\"resourceName\":\"_a\",\"rdmaHcaMax\":1,\"devices\":[]}]}",
		  "configList[0].resourceName: the kubelet would reject "
		  "\"rdma/_a\": name part must consist of alphanumeric "
		  "characters, '-', '_' or '.', and must "
		  "start and end with an alphanumeric "
		  "character");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"resourcePrefix\":\"Mellanox.com\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "configList[0].resourcePrefix: the kubelet would reject "
		  "\"Mellanox.com/a\": prefix part a lowercase RFC 1123 "
		  "subdomain must consist of lower case alphanumeric "
		  "characters, '-' or '.', and must start and end with "
		  "an "
		  "alphanumeric character");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"resourcePrefix\":\"kubernetes.io\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "configList[0].resourcePrefix: the kubelet would reject "
		  "\"kubernetes.io/a\": the kubernetes.io domain is "
		  "reserved "
		  "for native Kubernetes resources");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"resourcePrefix\":\"\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "configList[0].resourcePrefix: the kubelet "
		  "would reject \"/a\": prefix part must be "
		  "non-empty");
	parse_bad("{\"configList\":[{\"resourceName\":"
		  "\"a23456789012345678901234567890123456789012345678901"
		  "2345678901234\","
		  "\"rdmaHcaMax\":1,\"devices\":[]}]}",
		  "configList[0].resourceName: the kubelet would reject "
		  "\"rdma/a23456789012345678901234567890123456789012345678"
		  "9012345678901234\": name part must be no more than 63 "
		  "characters");

	/* the prefix's faults (k8s_extended_resource_name has the rules; test_k8s_names.c the
	 * cases) */
	parse_bad("{\"configList\":[{\"resourceName\":\"a\",\"resourcePrefix\":"
		  "\"requests.example.com\",\"rdmaHcaMax\":1,\"devices\":[]}]}",
		  "configList[0].resourcePrefix: the kubelet would "
		  "reject \"requests.example.com/a\": the requests. "
		  "prefix is "
		  "reserved (a resource quota names requests.<resource>)");
	parse_bad("{\"configList\":[{\"resourceName\":\"a\","
		  "\"resourcePrefix\":\"a/b\",\"rdmaHcaMax\":1,"
		  "\"devices\":[]}]}",
		  "configList[0].resourcePrefix: the kubelet would "
		  "reject \"a/b/a\": a qualified name must consist "
		  "of "
		  "alphanumeric characters, '-', '_' or '.', and must "
		  "start and end with an alphanumeric character with an "
		  "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
}

static void test_nul_and_garbage(void **st)
{
	static const char with_nul[] = "{\"configList\":[{\"resourceName\":"
				       "\"a\\u0000b\",\"rdmaHcaMax\":1,"
				       "\"devices\":[]}]}";
	struct pool_config *cfg = NULL;
	char err[64];

	parse_bad(with_nul, "line 1 column 41: \\u0000 is not allowed "
			    "without JSON_ALLOW_NUL near "
			    "'\"a\\u0000b\"'");
	/* a short error buffer truncates the message, never overflows */
	assert_int_equal(pool_config_parse(seed003_shared, 20, &cfg, err, sizeof(err)), -EINVAL);
	assert_null(cfg);
	assert_int_equal(
		pool_config_parse(
			"{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,\"selectors\":"
			"{\"ifNames\":[\"ib0\"],\"linkTypes\":[\"infiniband\",\"xx\"]}}]}",
			110, &cfg, err, 8),
		-EINVAL);
	assert_int_equal(strlen(err), 7);
}

/* pool_config_load: one size limit and one rule for the kind of file, for every role. A FIFO
 * refused without POOL_CONFIG_ONCE is refused before its open waits for a writer (this test
 * would hang otherwise); a pipe is read to its end with it. */
static void test_load_kinds(void **st)
{
	static const char text[] =
		"{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1,\"selectors\":{}}]}";
	char dir[] = "/tmp/test_pool_config.XXXXXX", path[64], want[256], err[512];
	struct pool_config *cfg = NULL;
	char *big, *got = NULL;
	int fds[2];
	FILE *f;

	(void)st;
	assert_non_null(mkdtemp(dir));
	/* a regular file, either way; its text kept for the caller */
	snprintf(path, sizeof(path), "%s/config.json", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	for (unsigned flags = 0; flags <= POOL_CONFIG_ONCE; flags += POOL_CONFIG_ONCE) {
		assert_int_equal(pool_config_load(path, flags, &cfg, &got, err, sizeof(err)), 0);
		assert_string_equal(got, text);
		assert_int_equal(cfg->n_res, 1);
		pool_config_free(cfg);
		free(got);
		cfg = NULL, got = NULL;
	}
	/* more than 4 MiB: refused by size, either way */
	big = malloc((4u << 20) + 1);
	assert_non_null(big);
	memset(big, ' ', (4u << 20) + 1);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(big, 1, (4u << 20) + 1, f), (4u << 20) + 1);
	assert_int_equal(fclose(f), 0);
	free(big);
	snprintf(want, sizeof(want), "%s: larger than 4 MiB", path);
	for (unsigned flags = 0; flags <= POOL_CONFIG_ONCE; flags += POOL_CONFIG_ONCE) {
		assert_int_equal(pool_config_load(path, flags, &cfg, NULL, err, sizeof(err)),
				 -EFBIG);
		assert_string_equal(err, want);
		assert_null(cfg);
	}
	assert_int_equal(unlink(path), 0);
	/* a FIFO (no writer): refused by name for a role that keeps running */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(pool_config_load(path, 0, &cfg, NULL, err, sizeof(err)), -FILEIO_ENOTREG);
	snprintf(want, sizeof(want), "%s: not a regular file (a FIFO, device or socket): ", path);
	assert_memory_equal(err, want, strlen(want));
	assert_non_null(strstr(err, "--dry-run"));
	assert_null(cfg);
	assert_int_equal(unlink(path), 0);
	/* a pipe: read to its end when read once, refused otherwise */
	for (unsigned flags = 0; flags <= POOL_CONFIG_ONCE; flags += POOL_CONFIG_ONCE) {
		assert_int_equal(pipe(fds), 0);
		assert_int_equal(write(fds[1], text, strlen(text)), (ssize_t)strlen(text));
		close(fds[1]);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
		assert_int_equal(pool_config_load(path, flags, &cfg, NULL, err, sizeof(err)),
				 flags ? 0 : -FILEIO_ENOTREG);
		assert_int_equal(cfg ? cfg->n_res : 0, flags ? 1 : 0);
		pool_config_free(cfg);
		cfg = NULL;
		close(fds[0]);
	}
	/* a folder: refused, naming it */
	assert_int_equal(pool_config_load(dir, 0, &cfg, NULL, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: %s", dir, strerror(EISDIR));
	assert_string_equal(err, want);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed003_shared),
		cmocka_unit_test(test_seed003_hostdev),
		cmocka_unit_test(test_legacy_devices_and_defaults),
		cmocka_unit_test(test_sriov_forms),
		cmocka_unit_test(test_rdmak_extras),
		cmocka_unit_test(test_rdma_netns_mode),
		cmocka_unit_test(test_pf_ranges),
		cmocka_unit_test(test_ignored_keys),
		cmocka_unit_test(test_root_devices),
		cmocka_unit_test(test_bad_syntax),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_nul_and_garbage),
		cmocka_unit_test(test_load_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
