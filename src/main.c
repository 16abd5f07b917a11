/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak: one binary, many roles. The role comes from argv[0] ("rdmak-<role>" symlinks)
 * or from the first argument. This file is only the dispatch table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnispec/cnispec.h"
#include "ipam/cni.h"
#include "log/log.h"
#include "roles.h"
#include "util/cleanup.h"

/* -DRDMAK_VERSION: tools/version.sh, through the Makefile */
#ifndef RDMAK_VERSION
#error "RDMAK_VERSION is given by the Makefile (tools/version.sh)"
#endif

struct role {
	const char *name;
	const char *summary;
	int (*main)(int argc, char **argv);
};

static const struct role roles[] = {
	{ "list", "show this node's RDMA hardware (table, ibdev2netdev, ibstat, rdma-link or JSON)",
	  list_main },
	{ "snapshot", "capture the files `list` reads into a tarball for another machine",
	  snapshot_main },
	{ "plugin",
	  "kubelet device plugin: shared HCAs and exclusive VFs/PFs as Kubernetes resources",
	  plugin_main },
	{ "doctor", "say why RDMA does not work on this node or in this pod, and how to fix it",
	  doctor_main },
	{ "cni",
	  "CNI plugin (run as rdmak-cni): secondary RDMA interfaces, RDMA netns isolation, policy routing",
	  cni_cli_main },
	{ "ipam", "CNI IPAM plugin (run as rdmak-ipam) and its operator CLI: list, release, gc",
	  ipam_main },
	{ "webhook",
	  "mutating admission webhook: one annotation gives a pod its RDMA networks and settings",
	  webhook_main },
	{ "bench",
	  "run perftest between pods and judge the result against what the hardware allows",
	  bench_main },
	{ "vf",
	  "plan a node's SR-IOV VFs from SriovNetworkNodePolicy objects: live steps vs reboot",
	  vf_main },
	{ "exporter",
	  "Prometheus metrics: RDMA port and hw counters, PCIe links, the doctor's findings",
	  exporter_main },
	{ "convert",
	  "Network Operator's, Spiderpool's and the SR-IOV operator's resources as rdmak's",
	  convert_main },
	{ "fabric",
	  "InfiniBand partitions of rdmak-cni's VFs at the fabric manager (UFM): gc, list, check",
	  fabric_main },
	{ "dra",
	  "kubelet DRA plugin: RDMA devices as ResourceSlices, claims prepared with NCCL's topology",
	  dra_main },
	{ "probe", "a container's liveness probe: is a daemon's loop still turning (--alive-file)",
	  probe_main },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rdmak <role> [options]    (or run as rdmak-<role>)\n\nRoles:\n");
	for (size_t i = 0; i < ELEMENTSOF(roles); i++)
		fprintf(f, "  %-10s %s\n", roles[i].name, roles[i].summary);
	fprintf(f, "\n`rdmak <role> --help` describes each role. rdmak %s\n", RDMAK_VERSION);
}

static const struct role *role_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(roles); i++)
		if (strcmp(roles[i].name, name) == 0)
			return &roles[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/');
	const struct role *r;

	self = self ? self + 1 : argv[0];
	/* a CNI plugin must answer on stdout whatever its environment says: warn, never exit */
	if (log_parse_environment() < 0)
		log_warning("RDMAK_LOG_FORMAT=%s: expected text or json; writing text",
			    getenv("RDMAK_LOG_FORMAT"));
	/* rdmak-cni runs rdmak-ipam in its own process where it can (src/cnispec) */
	cnispec_plugin_register(&ipam_plugin_ops, ipam_plugin_runs_here);
	if (strncmp(self, "rdmak-", 6) == 0) {
		r = role_find(self + 6);
		if (!r) {
			fprintf(stderr, "rdmak: unknown role '%s' (from program name %s)\n",
				self + 6, self);
			return 2;
		}
		return r->main(argc, argv);
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("rdmak %s\n", RDMAK_VERSION);
		return 0;
	}
	r = role_find(argv[1]);
	if (!r) {
		fprintf(stderr, "rdmak: unknown role '%s'\n\n", argv[1]);
		usage(stderr);
		return 2;
	}
	return r->main(argc - 1, argv + 1);
}
