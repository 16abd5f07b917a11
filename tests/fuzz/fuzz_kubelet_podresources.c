/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for the kubelet's PodResources answer as rdmak reads it (the exporter's pod
 * attribution, the vf role's "held" devices): the pod, namespace and container names in it are
 * pods' authors', the device IDs the device plugins'. Arbitrary bytes are a ListPodResources-
 * Response or -EBADMSG; what parses has every name and ID as a string and nothing on failure.
 *   build/fuzz/fuzz_kubelet_podresources -max_total_time=60 \
 *     tests/fuzz/corpus/kubelet_podresources */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kubelet/kubelet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubelet_pod_devices d = { 0 };
	size_t ids = 0;
	int r = kubelet_pod_resources_parse(data, size, &d);

	if (r < 0) {
		if ((r != -EBADMSG && r != -ENOMEM) || d.v || d.n)
			__builtin_trap();
		return 0;
	}
	for (size_t i = 0; i < d.n; i++) {
		const struct kubelet_pod_device *p = &d.v[i];

		if (!p->namespace_ || !p->pod || !p->container || !p->resource)
			__builtin_trap();
		for (size_t k = 0; k < p->n_ids; k++)
			if (!p->ids[k])
				__builtin_trap();
		if (p->n_ids && p->ids[p->n_ids])
			__builtin_trap();
		ids += p->n_ids;
	}
	/* each row and ID took at least two bytes of the message */
	if (d.n > size || ids > size)
		__builtin_trap();
	kubelet_pod_devices_clear(&d);
	return 0;
}
