/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak vf: the VF GUID derivation (docs/vf.md), the policy reader's documents, and the kubelet
 * checkpoint's two DeviceIDs shapes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vf/vf.h"

static void test_guid(void **state)
{
	uint64_t g;
	assert_int_equal(vf_guid_parse("e8eb:d303:0072:09f4", &g), 0);
	assert_true(g == UINT64_C(0xe8ebd303007209f4));
	/* 0x02 | index + 1 | the PF GUID's low 40 bits */
	assert_true(vf_guid(g, 0) == UINT64_C(0x02000103007209f4));
	assert_true(vf_guid(g, 126) == UINT64_C(0x02007f03007209f4));
	/* never 0, even from a PF GUID of 0; distinct per index */
	assert_true(vf_guid(0, 0) != 0);
	assert_true(vf_guid(g, 1) != vf_guid(g, 2));
	assert_int_equal(vf_guid_parse("e8eb:d303:0072", &g), -EINVAL);
	assert_int_equal(vf_guid_parse("e8eb:d303:0072:09f4x", &g), -EINVAL);
}

static void test_documents(void **state)
{
	static const char yaml[] = "---\n"
				   "apiVersion: sriovnetwork.openshift.io/v1\n"
				   "kind: SriovNetworkNodePolicy\n"
				   "metadata: {name: a}\n"
				   "spec: {nodeSelector: {}, resourceName: r, numVfs: 4, nicSelector: {vendor: \"15b3\"}}\n"
				   "---\n"
				   "kind: List\n"
				   "items:\n"
				   "- kind: SriovNetworkNodePolicy\n"
				   "  metadata: {name: b}\n"
				   "  spec: {nodeSelector: {}, resourceName: s, numVfs: 2, priority: 5,\n"
				   "         nicSelector: {pfNames: [\"ens1#0-1\"]}, linkType: IB}\n"
				   "---\n";
	struct vf_policies set = {};
	char err[256];
	assert_int_equal(vf_policies_parse(&set, "x", yaml, sizeof(yaml) - 1, err, sizeof(err)), 0);
	assert_int_equal(set.n, 2);
	assert_string_equal(set.p[0].name, "a");
	assert_string_equal(set.p[0].vendor, "15b3");
	assert_int_equal(set.p[1].priority, 5);
	assert_int_equal(set.p[1].link_type, VF_LINK_IB);
	assert_string_equal(set.p[1].pf_names[0], "ens1#0-1");
	vf_policies_clear(&set);

	static const char bad[] = "kind: SriovNetworkNodePolicy\nmetadata: {name: a}\n"
				  "spec: {nodeSelector: {}, resourceName: r, numVfs: 4, nicSelector: {}, deviceType: vfio-pci}\n";
	assert_int_equal(vf_policies_parse(&set, "y", bad, sizeof(bad) - 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "y: $.spec.deviceType: vfio-pci is not supported"));
	vf_policies_clear(&set);
	assert_int_equal(vf_policies_parse(&set, "z", "---\n", 4, err, sizeof(err)), -ENOENT);
	vf_policies_clear(&set);
}

static void test_checkpoint(void **state)
{
	static const char cp[] = "{\"Data\":{\"PodDeviceEntries\":["
				 "{\"PodUID\":\"u1\",\"ContainerName\":\"c\",\"ResourceName\":\"r\",\"DeviceIDs\":{\"0\":[\"A\"],\"1\":[\"B\"]}},"
				 "{\"PodUID\":\"u2\",\"ContainerName\":\"d\",\"ResourceName\":\"s\",\"DeviceIDs\":[\"C\"]}]},"
				 "\"Checksum\":1}";
	struct vf_holders h = {};
	char err[128];
	assert_int_equal(vf_holders_parse(cp, sizeof(cp) - 1, &h, err, sizeof(err)), 0);
	assert_int_equal(h.n, 3);
	assert_string_equal(h.h[1].device, "B");
	assert_string_equal(h.h[2].pod_uid, "u2");
	vf_holders_clear(&h);
	assert_int_equal(vf_holders_parse("{\"Data\":{\"PodDeviceEntries\":[{}]}}", 34, &h, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "PodUID"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guid),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_checkpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
