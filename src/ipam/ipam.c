/* SPDX-License-Identifier: Apache-2.0 */
/* The ipam role: run as rdmak-ipam (argv[0], what a runtime or a main plugin execs from
 * CNI_PATH) it is the CNI IPAM plugin; run as `rdmak ipam ...` it is the operator CLI. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ipam/cni.h"
#include "roles.h"

extern char **environ;

int ipam_exec_main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("rdmak-ipam: a CNI IPAM plugin, run by a container runtime or a main CNI plugin with\n"
		       "CNI_COMMAND (ADD, DEL, CHECK, GC, STATUS, VERSION) and the network configuration on\n"
		       "stdin. Its configuration and the operator commands: `rdmak ipam --help`, docs/ipam.md.\n");
		return 0;
	}
	return ipam_plugin_main(environ, STDIN_FILENO, stdout);
}

int ipam_main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/');

	self = self ? self + 1 : argv[0];
	if (strcmp(self, "rdmak-ipam") == 0)
		return ipam_exec_main(argc, argv);
	return ipam_cli_main(argc, argv);
}
