/* SPDX-License-Identifier: Apache-2.0 */
/* Which pod and container a process belongs to, read from its /proc/PID/cgroup as the kubelet
 * names the cgroups it makes (pkg/kubelet/cm): a pod's is "pod<UID>" under kubepods (cgroupfs
 * driver: /kubepods/besteffort/pod1b0e...-.../<container id>) or
 * "kubepods-<qos>-pod<UID with _ for ->.slice" (systemd driver, where the container's is
 * "<runtime>-<container id>.scope": cri-containerd-, crio-, docker-). */
#ifndef RDMAK_KUBELET_CGROUP_H
#define RDMAK_KUBELET_CGROUP_H

#include <stddef.h>

#define KUBELET_UID_LEN	      37 /* 36 characters of a UUID and the NUL */
#define KUBELET_CONTAINER_LEN 65 /* 64 hex digits of a container ID and the NUL */

/* text: the contents of /proc/PID/cgroup (v1's lines or v2's "0::" line). 1 when a line names a
 * pod: uid its UID in the API's form (with -), container the container's ID or "" when the
 * path stops at the pod (a process in the pod's own cgroup). 0 when no line does (a process
 * outside Kubernetes' pods): uid and container "". */
int kubelet_cgroup_pod(const char *text, size_t len, char uid[KUBELET_UID_LEN],
		       char container[KUBELET_CONTAINER_LEN]);

#endif
