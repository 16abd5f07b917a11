/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA isolation: the kernel's exclusive netns mode, and moving one function's RDMA device
 * between the host's namespace and the pod's (what rdma-cni does, in the same plugin as the
 * netdev so that the order is right and both come back on DEL). */
#include <errno.h>
#include <string.h>

#include "cni/cni.h"

#define FIX_SHARED                                                                                 \
	"run `rdma system set netns exclusive` on the node (persist it with "                      \
	"`options ib_core netns_mode=0` in /etc/modprobe.d/ib_core.conf), with no RDMA device in use by a pod"

int cni_rdma_check_mode(struct cnispec_error *err)
{
	struct nl_rdma *r;
	bool shared;
	int e;

	e = nl_rdma_open(-1, &r);
	if (e == -EPROTONOSUPPORT)
		return cnispec_fail(
			err, e, CNI_E_RDMA, "rdmaIsolation: this kernel has no RDMA subsystem",
			"RDMA netlink is not available (ib_core not loaded or not built): load the HCA's "
			"drivers (mlx5_ib, ib_core) or set rdmaIsolation to false");
	if (e < 0)
		return cnispec_fail(err, e, CNI_E_RDMA, "rdmaIsolation: RDMA netlink failed",
				    "opening NETLINK_RDMA: %s", strerror(-e));
	e = nl_rdma_netns_shared(r, &shared);
	if (e == -ENODATA || e == -EOPNOTSUPP || e == -EINVAL)
		e = cnispec_fail(
			err, -EOPNOTSUPP, CNI_E_RDMA,
			"rdmaIsolation: the kernel has no RDMA namespaces",
			"RDMA_NLDEV_CMD_SYS_GET gave no netns mode (kernels before 5.2 cannot isolate RDMA devices)");
	else if (e < 0)
		e = cnispec_fail(err, e, CNI_E_RDMA, "rdmaIsolation: RDMA netlink failed",
				 "reading the netns mode: %s%s%s", strerror(-e),
				 nl_rdma_errmsg(r)[0] ? ": " : "", nl_rdma_errmsg(r));
	else if (shared)
		e = cnispec_fail(
			err, -EOPNOTSUPP, CNI_E_RDMA,
			"rdmaIsolation: the RDMA subsystem is in shared mode",
			"in shared mode every namespace sees every RDMA device and none can be moved: " FIX_SHARED);
	nl_rdma_free(r);
	return e;
}

int cni_rdma_visible(const char *name, int ns, struct cnispec_error *err)
{
	struct nl_rdma *r;
	struct nl_rdma_dev d;
	int e = nl_rdma_open(ns, &r);

	if (e < 0)
		return cnispec_fail(err, e, CNI_E_RDMA, "RDMA netlink failed",
				    "opening NETLINK_RDMA: %s", strerror(-e));
	e = nl_rdma_dev_get(r, name, &d);
	if (e < 0)
		e = cnispec_fail(err, e, CNI_E_RDMA, "RDMA netlink failed",
				 "listing RDMA devices: %s", strerror(-e));
	nl_rdma_free(r);
	return e;
}

int cni_rdma_move(const char *name, int from_ns, int to_ns, struct cnispec_error *err)
{
	struct nl_rdma *r;
	struct nl_rdma_dev d;
	int e;

	/* sent from the namespace that sees the device: in exclusive mode no other does */
	e = nl_rdma_open(from_ns, &r);
	if (e < 0)
		return cnispec_fail(err, e, CNI_E_RDMA, "RDMA netlink failed",
				    "opening NETLINK_RDMA: %s", strerror(-e));
	e = nl_rdma_dev_get(r, name, &d);
	if (e == 0)
		e = -ENODEV;
	if (e > 0)
		e = nl_rdma_dev_set_netns(r, d.index, to_ns);
	if (e == -ENODEV)
		e = cnispec_fail(err, e, CNI_E_RDMA, "RDMA device not found",
				 "%s is not visible in the namespace it "
				 "should leave",
				 name);
	else if (e < 0)
		e = cnispec_fail(err, e, CNI_E_RDMA, "moving the RDMA device failed", "%s: %s%s%s",
				 name, strerror(-e), nl_rdma_errmsg(r)[0] ? ": " : "",
				 nl_rdma_errmsg(r));
	nl_rdma_free(r);
	return e;
}
