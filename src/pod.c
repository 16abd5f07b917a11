/* SPDX-License-Identifier: Apache-2.0 */
/* The per-pod binary: rdmak-cni and rdmak-ipam as the runtime execs them, for every ADD, DEL,
 * CHECK, GC and STATUS of every pod. It links the CNI, the IPAM's file store, netlink and the
 * JSON reader, and nothing of the rest of rdmak (no gRPC, no C++ runtime, no OpenSSL, no YAML):
 * each exec then pays one small image's start, not the dynamic linking of the multi-call
 * binary (docs/cni.md, "One binary per pod start"). The etcd store is not here: rdmak-ipam
 * hands such a request to the full rdmak (src/ipam/plugin.c). This file is only the dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnispec/cnispec.h"
#include "ipam/cni.h"
#include "log/log.h"
#include "roles.h"

int main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/');

	self = self ? self + 1 : argv[0];
	if (log_parse_environment() < 0)
		log_warning("RDMAK_LOG_FORMAT=%s: expected text or json; writing text",
			    getenv("RDMAK_LOG_FORMAT"));
	/* rdmak-cni runs rdmak-ipam in its own process where it can */
	cnispec_plugin_register(&ipam_plugin_ops, ipam_plugin_runs_here);
	if (!strcmp(self, "rdmak-ipam"))
		return ipam_exec_main(argc, argv);
	if (!strcmp(self, "rdmak-cni"))
		return cni_main(argc, argv);
	fprintf(stderr,
		"%s: run as rdmak-cni or rdmak-ipam (the CNI plugins); the other roles are in rdmak\n",
		self);
	return 2;
}
