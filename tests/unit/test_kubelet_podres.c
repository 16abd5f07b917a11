/* SPDX-License-Identifier: Apache-2.0 */
/* The PodResources answer's reader (kubelet_pod_resources_parse) on bytes packed here, and the
 * client's refusals that need no kubelet. The wire side is tests/js/podresources.test.mjs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kubelet/kubelet.h"
#include "kubelet/podresources.pb-c.h"

static void test_parse_rows(void **st)
{
	char *ids_a[] = { "0000:1b:00.2", "0000:1b:00.3" }, *ids_b[] = { "7" };
	V1__ContainerDevices da = V1__CONTAINER_DEVICES__INIT, db = V1__CONTAINER_DEVICES__INIT;
	V1__ContainerDevices *devs[] = { &da, &db };
	V1__ContainerResources c = V1__CONTAINER_RESOURCES__INIT,
			       bare = V1__CONTAINER_RESOURCES__INIT;
	V1__ContainerResources *cs[] = { &bare, &c };
	V1__PodResources p = V1__POD_RESOURCES__INIT, *ps[] = { &p };
	V1__ListPodResourcesResponse m = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
	struct kubelet_pod_devices d = { 0 };
	uint8_t buf[512];
	size_t len;

	da.resource_name = "nvidia.com/cx5_vf";
	da.n_device_ids = 2;
	da.device_ids = ids_a;
	db.resource_name = "rdma/shared_cx5";
	db.n_device_ids = 1;
	db.device_ids = ids_b;
	c.name = "trainer";
	c.n_devices = 2;
	c.devices = devs;
	bare.name = "sidecar";
	p.name = "trainer-0";
	p.namespace_ = "ml";
	p.n_containers = 2;
	p.containers = cs;
	m.n_pod_resources = 1;
	m.pod_resources = ps;
	len = v1__list_pod_resources_response__get_packed_size(&m);
	assert_true(len < sizeof(buf));
	v1__list_pod_resources_response__pack(&m, buf);

	assert_int_equal(kubelet_pod_resources_parse(buf, len, &d), 0);
	assert_int_equal(d.n, 2); /* the container without devices gives no row */
	assert_string_equal(d.v[0].namespace_, "ml");
	assert_string_equal(d.v[0].pod, "trainer-0");
	assert_string_equal(d.v[0].container, "trainer");
	assert_string_equal(d.v[0].resource, "nvidia.com/cx5_vf");
	assert_int_equal(d.v[0].n_ids, 2);
	assert_string_equal(d.v[0].ids[1], "0000:1b:00.3");
	assert_null(d.v[0].ids[2]);
	assert_string_equal(d.v[1].resource, "rdma/shared_cx5");
	assert_string_equal(d.v[1].ids[0], "7");
	kubelet_pod_devices_clear(&d);
	assert_int_equal(d.n, 0);

	/* an empty answer (no pods) is a valid message */
	assert_int_equal(kubelet_pod_resources_parse(buf, 0, &d), 0);
	assert_int_equal(d.n, 0);
	kubelet_pod_devices_clear(&d);
}

static void test_parse_garbage(void **st)
{
	static const uint8_t truncated[] = { 0x0a, 0x20, 0x0a, 0x05, 'a' };
	static const uint8_t bad_wire[] = { 0x0f, 0xff };
	struct kubelet_pod_devices d = { .n = 99 };

	assert_int_equal(kubelet_pod_resources_parse(truncated, sizeof(truncated), &d), -EBADMSG);
	assert_int_equal(kubelet_pod_resources_parse(bad_wire, sizeof(bad_wire), &d), -EBADMSG);
	assert_int_equal(d.n, 99); /* not written on failure */
}

static void test_new_refuses_long_path(void **st)
{
	char path[200];
	struct kubelet_pod_resources *c = NULL;

	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(kubelet_pod_resources_new(path, &c), -ENAMETOOLONG);
	assert_int_equal(kubelet_pod_resources_new("", &c), -ENAMETOOLONG);
	assert_int_equal(kubelet_pod_resources_new(NULL, &c), 0);
	assert_string_equal(kubelet_pod_resources_socket(c), KUBELET_POD_RESOURCES_SOCKET);
	kubelet_pod_resources_free(c);
	kubelet_pod_resources_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_rows),
		cmocka_unit_test(test_parse_garbage),
		cmocka_unit_test(test_new_refuses_long_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
