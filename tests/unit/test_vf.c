/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak vf: the VF GUID derivation (docs/vf.md), the policy reader's documents, the kubelet
 * checkpoint's two DeviceIDs shapes, and which VFs the plan's single-VF steps list. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <stdlib.h>

#include "hw/hw.h"
#include "nl/nl.h"
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
	static const char yaml[] =
		"---\n"
		"apiVersion: sriovnetwork.openshift.io/v1\n"
		"kind: SriovNetworkNodePolicy\n"
		"metadata: {name: a}\n"
		"spec: {nodeSelector: {}, resourceName: r, "
		"numVfs: 4, nicSelector: {vendor: \"15b3\"}}\n"
		"---\n"
		"kind: List\n"
		"items:\n"
		"- kind: SriovNetworkNodePolicy\n"
		"  metadata: {name: b}\n"
		"  spec: {nodeSelector: {}, resourceName: s, numVfs: 2, priority: 5,\n"
		"         nicSelector: {pfNames: [\"ens1#0-1\"]}, linkType: IB, isRdma: true}\n"
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
				  "spec: {nodeSelector: {}, resourceName: r, numVfs: 4, "
				  "nicSelector: {vendor: \"15b3\"}, deviceType: vfio-pci}\n";
	assert_int_equal(vf_policies_parse(&set, "y", bad, sizeof(bad) - 1, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "y: $.spec.deviceType: vfio-pci is not supported"));
	vf_policies_clear(&set);
	assert_int_equal(vf_policies_parse(&set, "z", "---\n", 4, err, sizeof(err)), -ENOENT);
	vf_policies_clear(&set);
}

static void test_checkpoint(void **state)
{
	static const char cp[] = "{\"Data\":{\"PodDeviceEntries\":["
				 "{\"PodUID\":\"u1\",\"ContainerName\":\"c\","
				 "\"ResourceName\":\"r\",\"DeviceIDs\":{\"0\":[\"A\"],"
				 "\"1\":[\"B\"]}},"
				 "{\"PodUID\":\"u2\",\"ContainerName\":\"d\","
				 "\"ResourceName\":\"s\",\"DeviceIDs\":"
				 "[\"C\"]}]},"
				 "\"Checksum\":1}";
	struct vf_holders h = {};
	char err[128];
	assert_int_equal(vf_holders_parse(cp, sizeof(cp) - 1, &h, err, sizeof(err)), 0);
	assert_int_equal(h.n, 3);
	assert_string_equal(h.h[1].device, "B");
	assert_string_equal(h.h[2].pod_uid, "u2");
	vf_holders_clear(&h);
	assert_int_equal(vf_holders_parse("{\"Data\":{\"PodDeviceEntries\":[{}]}}", 34, &h, err,
					  sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "PodUID"));
}

static struct hw_pci *vf_of(struct hw_pci *pf, int index)
{
	for (size_t k = 0; k < pf->n_vfs; k++)
		if (pf->vfs[k]->vf_index == index)
			return pf->vfs[k];
	fail_msg("no VF %d", index);
	return NULL;
}

static json_t *step_of(const json_t *plan, const char *action)
{
	size_t i;
	json_t *s;
	json_array_foreach(
		json_object_get(json_array_get(json_object_get(plan, "pfs"), 0), "steps"), i, s)
	{
		if (!strcmp(json_string_value(json_object_get(s, "action")), action))
			return s;
	}
	return NULL;
}

static bool lists(const json_t *step, long long i)
{
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(step, "vf_indices"), k, v)
	{
		if (json_integer_value(v) == i)
			return true;
	}
	return false;
}

/* cx7-rail-1016vf's PF 0000:18:00.0: 127 InfiniBand VFs, bound, with GUIDs 0200:0000:0000:000N
 * that another tool set (not rdmak's derivation), as a node moved from sriov-network-operator
 * or ib-kubernetes has them. The plan's vf-guids and vf-bind list only the VFs whose GUIDs
 * differ: VF 5 shows its derived GUID on its RDMA device; VF 7's and VF 9's are in a pod's
 * namespace (the host shows neither RDMA device nor netdev), and the PF reports the derived
 * GUIDs for VF 7, others for VF 9. vf-mtu lists the VFs whose netdev's MTU differs or which are
 * bound again (a new netdev). */
static void test_plan_vfs(void **state)
{
	const char *nodes = getenv("NODES") ? getenv("NODES") : "examples/nodes";
	static const char pol[] =
		"{\"kind\":\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"ib\"},\"spec\":{"
		"\"nodeSelector\":{},\"resourceName\":\"ibvf\",\"numVfs\":127,\"mtu\":2044,"
		"\"linkType\":\"ib\",\"isRdma\":true,"
		"\"nicSelector\":{\"rootDevices\":[\"0000:18:"
		"00.0\"]}}}";
	char sys[512], err[256];
	struct hw_ctx *ctx;
	struct hw_node *node;
	struct hw_error herr = { 0 };
	struct vf_policies set = {};
	struct vf_resolved res = {};
	json_t *labels = json_object(), *plan;
	uint64_t pg;

	snprintf(sys, sizeof(sys), "%s/cx7-rail-1016vf/sys", nodes);
	assert_int_equal(hw_ctx_new(sys, "/nonexistent", &ctx), 0);
	assert_int_equal(hw_load(ctx, 0, &node, &herr), 0);
	assert_int_equal(vf_policies_parse(&set, "p", pol, sizeof(pol) - 1, err, sizeof(err)), 0);
	assert_int_equal(vf_resolve(node, &set, labels, &res, err, sizeof(err)), 0);
	assert_int_equal(res.n, 1);
	struct hw_pci *pf = (struct hw_pci *)res.t[0].pf;
	assert_string_equal(pf->bdf, "0000:18:00.0");
	assert_int_equal(vf_guid_parse(pf->rdma[0]->node_guid, &pg), 0);

	struct hw_pci *v5 = vf_of(pf, 5), *v7 = vf_of(pf, 7), *v9 = vf_of(pf, 9);
	uint64_t g5 = vf_guid(pg, 5);
	snprintf(v5->rdma[0]->node_guid, sizeof(v5->rdma[0]->node_guid), "%04x:%04x:%04x:%04x",
		 (unsigned)(g5 >> 48), (unsigned)(g5 >> 32) & 0xffff, (unsigned)(g5 >> 16) & 0xffff,
		 (unsigned)g5 & 0xffff);
	v5->netdevs[0]->mtu = 2044;
	size_t r7 = v7->n_rdma, n7 = v7->n_netdevs, r9 = v9->n_rdma, n9 = v9->n_netdevs;
	v7->n_rdma = v7->n_netdevs = v9->n_rdma = v9->n_netdevs = 0;
	res.t[0].reported = calloc(2, sizeof(*res.t[0].reported));
	assert_non_null(res.t[0].reported);
	res.t[0].reported[0] = (struct nl_vf_guid){ .vf = 7,
						    .node_guid = vf_guid(pg, 7),
						    .port_guid = vf_guid(pg, 7) };
	res.t[0].reported[1] = (struct nl_vf_guid){ .vf = 9, .node_guid = 0x99, .port_guid = 0x99 };
	res.t[0].n_reported = 2;
	res.t[0].autoprobe = 1;

	assert_int_equal(vf_plan_build(node, &res, NULL, &plan), 0);
	json_t *g = step_of(plan, "vf-guids"), *b = step_of(plan, "vf-bind"),
	       *m = step_of(plan, "vf-mtu");
	assert_non_null(g);
	assert_non_null(b);
	assert_non_null(m);
	assert_null(step_of(plan, "sriov_numvfs"));
	assert_int_equal(json_integer_value(json_object_get(g, "vfs")), 125);
	assert_int_equal(json_array_size(json_object_get(g, "vf_indices")), 125);
	assert_false(lists(g, 5));
	assert_false(lists(g, 7));
	assert_true(lists(g, 9) && lists(g, 0) && lists(g, 126));
	/* the bound VFs whose GUIDs change are bound again: the same list */
	assert_true(json_equal(json_object_get(g, "vf_indices"), json_object_get(b, "vf_indices")));
	/* every VF's netdev has 4092 but VF 5's; VF 7's netdev is not the host's to see, and VF 7
	 * is not bound again */
	assert_int_equal(json_integer_value(json_object_get(m, "to")), 2044);
	assert_int_equal(json_integer_value(json_object_get(m, "vfs")), 125);
	assert_false(lists(m, 5));
	assert_false(lists(m, 7));
	assert_true(lists(m, 9));
	json_decref(plan);

	/* nothing reported (no PF netdev here): VF 7's GUIDs are unknown, so they are set */
	res.t[0].n_reported = 0;
	assert_int_equal(vf_plan_build(node, &res, NULL, &plan), 0);
	assert_true(lists(step_of(plan, "vf-guids"), 7));
	json_decref(plan);

	v7->n_rdma = r7, v7->n_netdevs = n7, v9->n_rdma = r9, v9->n_netdevs = n9;
	vf_resolved_clear(&res);
	vf_policies_clear(&set);
	json_decref(labels);
	hw_node_free(node);
	hw_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guid),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_checkpoint),
		cmocka_unit_test(test_plan_vfs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
