/* SPDX-License-Identifier: Apache-2.0 */
/* podres_list SOCKET [TIMEOUT_MS]: one List call through the kubelet module's PodResources
 * client, for tests/js/podresources.test.mjs. stdout: one line per row, tab-separated:
 * namespace, pod, container, resource, the device IDs joined by ','. Exit 0; or 1 with
 * "errno-name: reason" on stderr (ETIMEDOUT, ENOENT, ...). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubelet/kubelet.h"
#include "util/strv.h"

static const char *errname(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPROTO: return "EPROTO";
	case EBADMSG: return "EBADMSG";
	default: return "other";
	}
}

int main(int argc, char **argv)
{
	struct kubelet_pod_resources *c = NULL;
	struct kubelet_pod_devices d = { 0 };
	unsigned timeout =
		argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : KUBELET_POD_RESOURCES_TIMEOUT_MS;
	char why[512] = "";
	int r;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: podres_list SOCKET [TIMEOUT_MS]\n");
		return 2;
	}
	r = kubelet_pod_resources_new(argv[1], &c);
	if (r >= 0)
		r = kubelet_pod_resources_list(c, timeout, &d, why, sizeof(why));
	kubelet_pod_resources_free(c);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", errname(-r), why);
		return 1;
	}
	for (size_t i = 0; i < d.n; i++) {
		char *ids = strv_join(d.v[i].ids, ",");

		printf("%s\t%s\t%s\t%s\t%s\n", d.v[i].namespace_, d.v[i].pod, d.v[i].container,
		       d.v[i].resource, ids ? ids : "");
		free(ids);
	}
	kubelet_pod_devices_clear(&d);
	return 0;
}
