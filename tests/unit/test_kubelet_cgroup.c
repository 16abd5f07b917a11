/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet_cgroup_pod(): a process's pod UID and container ID from /proc/PID/cgroup, in the forms
 * the kubelet and the runtimes write them (pkg/kubelet/cm's pod cgroup names; runc's systemd
 * scopes "<prefix>-<id>.scope" for containerd, CRI-O and docker), under cgroup v1 and v2 and
 * seen through a cgroup namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kubelet/cgroup.h"

#define CID "2cf7b0992492cfc7b4c473e2d022758ee09be9dd3761b3ee2d87598eec9a045a"

static int parse(const char *text, char *uid, char *cid)
{
	return kubelet_cgroup_pod(text, strlen(text), uid, cid);
}

static void test_v2_systemd(void **st)
{
	char uid[KUBELET_UID_LEN], cid[KUBELET_CONTAINER_LEN];

	assert_int_equal(parse("0::/kubepods.slice/kubepods-besteffort.slice/"
			       "kubepods-besteffort-pod5759a1ae_36ca_48a8_b20a_b0b5c8a90fb8.slice/"
			       "cri-containerd-" CID ".scope\n",
			       uid, cid),
			 1);
	assert_string_equal(uid, "5759a1ae-36ca-48a8-b20a-b0b5c8a90fb8");
	assert_string_equal(cid, CID);
	/* a Guaranteed pod has no QoS level; CRI-O's scope */
	assert_int_equal(
		parse("0::/kubepods.slice/kubepods-podf3807a4b_0e6b_4a2c_9d6e_0123456789ab.slice/"
		      "crio-" CID ".scope\n",
		      uid, cid),
		1);
	assert_string_equal(uid, "f3807a4b-0e6b-4a2c-9d6e-0123456789ab");
	assert_string_equal(cid, CID);
	/* seen from the exporter's own cgroup namespace: relative, climbing */
	assert_int_equal(parse("0::/../../kubepods-burstable.slice/"
			       "kubepods-burstable-pod12345678_1234_1234_1234_123456789012.slice/"
			       "docker-" CID ".scope\n",
			       uid, cid),
			 1);
	assert_string_equal(uid, "12345678-1234-1234-1234-123456789012");
	assert_string_equal(cid, CID);
}

static void test_v1_cgroupfs(void **st)
{
	char uid[KUBELET_UID_LEN], cid[KUBELET_CONTAINER_LEN];

	assert_int_equal(
		parse("13:memory:/kubepods/pod8c52fb9d-0a0c-4e4b-bea2-8da0ed0870c5/" CID "\n"
		      "12:perf_event:/kubepods/pod8c52fb9d-0a0c-4e4b-bea2-8da0ed0870c5/" CID "\n"
		      "0::/\n",
		      uid, cid),
		1);
	assert_string_equal(uid, "8c52fb9d-0a0c-4e4b-bea2-8da0ed0870c5");
	assert_string_equal(cid, CID);
	/* the first lines name no pod (a hybrid host's systemd line), a later one does */
	assert_int_equal(parse("1:name=systemd:/system.slice/containerd.service\n"
			       "4:cpu,cpuacct:"
			       "/kubepods/besteffort/pod91a8fc3a-0ecf-"
			       "48b4-81bf-78a7275d348c/" CID,
			       uid, cid),
			 1);
	assert_string_equal(uid, "91a8fc3a-0ecf-48b4-81bf-78a7275d348c");
	assert_string_equal(cid, CID);
	/* a process in the pod's own cgroup: the pod, no container */
	assert_int_equal(parse("0::/kubepods/besteffort/pod91a8fc3a-0ecf-48b4-81bf-78a7275d348c\n",
			       uid, cid),
			 1);
	assert_string_equal(uid, "91a8fc3a-0ecf-48b4-81bf-78a7275d348c");
	assert_string_equal(cid, "");
}

static void test_not_a_pod(void **st)
{
	char uid[KUBELET_UID_LEN] = "x", cid[KUBELET_CONTAINER_LEN] = "y";

	assert_int_equal(parse("0::/system.slice/kubelet.service\n", uid, cid), 0);
	assert_string_equal(uid, "");
	assert_string_equal(cid, "");
	assert_int_equal(parse("0::/user.slice/user-0.slice/session-1.scope\n", uid, cid), 0);
	/* near misses: a short UID, the wrong separator for the driver, no ".slice", no kubepods */
	assert_int_equal(parse("0::/kubepods/pod8c52fb9d-0a0c-4e4b-bea2-8da0ed0870c\n", uid, cid),
			 0);
	assert_int_equal(parse("0::/kubepods/pod8c52fb9d_0a0c_4e4b_bea2_8da0ed0870c5\n", uid, cid),
			 0);
	assert_int_equal(
		parse("0::/kubepods.slice/kubepods-pod5759a1ae_36ca_48a8_b20a_b0b5c8a90fb8\n", uid,
		      cid),
		0);
	assert_int_equal(
		parse("0::/other-pod5759a1ae_36ca_48a8_b20a_b0b5c8a90fb8.slice\n", uid, cid), 0);
	assert_int_equal(parse("", uid, cid), 0);
	assert_int_equal(parse("garbage without colons\n", uid, cid), 0);
	/* a container segment that is no ID is left out, the pod still named */
	assert_int_equal(
		parse("0::/kubepods/pod8c52fb9d-0a0c-4e4b-bea2-8da0ed0870c5/notanid\n", uid, cid),
		1);
	assert_string_equal(cid, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v2_systemd),
		cmocka_unit_test(test_v1_cgroupfs),
		cmocka_unit_test(test_not_a_pod),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
