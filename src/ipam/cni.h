/* SPDX-License-Identifier: Apache-2.0 */
/* The two faces of the ipam role (src/ipam/ipam.c dispatches). */
#ifndef RDMAK_IPAM_CNI_H
#define RDMAK_IPAM_CNI_H

#include <stdbool.h>
#include <stdio.h>

#include "cnispec/cnispec.h"

/* The plugin's operations, for rdmak-cni to run them in its own process
 * (cnispec_delegate_in_process) when CNI_PATH's rdmak-ipam is the running binary. */
extern const struct cnispec_plugin_ops ipam_plugin_ops;
/* Whether this process can serve the request's IPAM itself: false for an etcd store in the
 * per-pod binary, which has none (then exec CNI_PATH's rdmak-ipam, which hands it on). */
bool ipam_plugin_runs_here(const struct cnispec_request *req);

/* rdmak-ipam, the CNI IPAM plugin: the environment envp, the request on in_fd, the answer on
 * out. Returns the exit code (0 or 1). */
int ipam_plugin_main(char *const *envp, int in_fd, FILE *out);
/* rdmak ipam list|release|gc: the operator CLI. Returns the exit code. */
int ipam_cli_main(int argc, char **argv);
/* rdmak-ipam as a runtime execs it (--help, or the CNI exchange on stdin): the multi-call rdmak
 * and the per-pod binary share it. */
int ipam_exec_main(int argc, char **argv);

#endif
