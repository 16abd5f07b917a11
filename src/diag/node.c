/* SPDX-License-Identifier: Apache-2.0 */
/* Node checks of the devices and the kernel: RDMA devices, kernel modules, SR-IOV, char devices
 * and the RDMA netns mode, with the evidence helpers the other check files share. Each reads the
 * hardware model and adds findings; none prints. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

bool diag_dev_usable(const struct hw_rdma_dev *dev)
{
	/* libibverbs stat()s /dev/infiniband/uverbsN and silently drops the device if absent */
	return dev->uverbs && dev->uverbs->node.present && dev->uverbs->node.is_char;
}

bool diag_dev_is_vf(const struct hw_rdma_dev *dev)
{
	return dev->pci && dev->pci->physfn;
}

bool diag_dev_in_scope(const struct diag *d, const struct hw_rdma_dev *dev)
{
	return d->scope == DIAG_POD ? diag_dev_usable(dev) : !diag_dev_is_vf(dev);
}

const char *diag_port_obj(const struct hw_port *p, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%u", p->dev->name, p->num);
	return buf;
}

void diag_ev_port(const struct diag *d, json_t *f, const struct hw_port *p, const char *attr,
		  const char *fmt_val)
{
	char path[PATH_MAX];

	diag_evidence(f,
		      diag_sys(d, path, sizeof(path), "/class/infiniband/%s/ports/%u/%s",
			       p->dev->name, p->num, attr),
		      "%s", fmt_val);
}

void diag_ev_state(const struct diag *d, json_t *f, const struct hw_port *p)
{
	char v[64];

	snprintf(v, sizeof(v), "%d: %s", p->state, p->state_name);
	diag_ev_port(d, f, p, "state", v);
	snprintf(v, sizeof(v), "%d: %s", p->phys_state, p->phys_state_name);
	diag_ev_port(d, f, p, "phys_state", v);
}

void diag_ev_netdev(const struct diag *d, json_t *f, const struct hw_netdev *n, const char *attr)
{
	char path[PATH_MAX];

	diag_sys(d, path, sizeof(path), "/class/net/%s/%s", n->name, attr);
	if (!strcmp(attr, "operstate"))
		diag_evidence(f, path, "%s", n->operstate);
	else if (!strcmp(attr, "carrier"))
		diag_evidence(f, path, "%s",
			      n->carrier < 0
				      ? "(unreadable: EINVAL, the link is administratively down)"
			      : n->carrier ? "1"
					   : "0");
	else if (!strcmp(attr, "mtu"))
		diag_evidence(f, path, "%u", n->mtu);
}

/* ---- rdma.devices --------------------------------------------------------------------------- */

static bool pci_is_rdma_nic(const struct hw_pci *p)
{
	/* 0x0207xx InfiniBand controller, or a Mellanox/NVIDIA network function (RoCE) */
	return (p->class_code >> 8) == 0x0207 ||
	       (p->vendor == 0x15b3 && (p->class_code >> 16) == 0x02);
}

void diag_check_rdma_devices(struct diag *d)
{
	const struct hw_node *n = d->node;
	char path[PATH_MAX];
	size_t unbound = 0, no_ib = 0, vfs = 0;
	json_t *f;

	for (size_t i = 0; i < n->n_pci; i++) {
		const struct hw_pci *p = &n->pci[i];

		if (!pci_is_rdma_nic(p))
			continue;
		if (!p->driver[0]) {
			/* an unbound VF is sriov.vfs' business */
			if (p->physfn)
				continue;
			unbound++;
			f = diag_add(d, DIAG_FAIL, p->bdf,
				     "PCI function %04x:%04x has no driver bound", p->vendor,
				     p->device);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s/driver",
					       p->bdf),
				      "(no such link)");
			diag_fix(
				f,
				"Load the NIC driver (modprobe mlx5_core) or bind it: echo %s > /sys/bus/pci/drivers/mlx5_core/bind; "
				"check dmesg for a probe error.",
				p->bdf);
		} else if (p->n_rdma == 0 && !p->physfn && d->scope == DIAG_NODE &&
			   /* exclusive mode: the device may live in a pod's namespace */
			   n->kernel.netns_mode != 0 &&
			   (!strcmp(p->driver, "mlx5_core") || !strcmp(p->driver, "mlx4_core"))) {
			/* A PF in a RoCE LAG has its RDMA device registered on PF0 as mlx5_bond_N. */
			bool in_lag = false;

			for (size_t k = 0; k < p->n_netdevs; k++)
				if (p->netdevs[k]->master) {
					for (size_t m = 0; m < n->n_rdma; m++)
						in_lag |= n->rdma[m].lag == p->netdevs[k]->master;
				}
			if (in_lag)
				continue;
			no_ib++;
			f = diag_add(d, DIAG_FAIL, p->bdf, "%s function without an RDMA device",
				     p->driver);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path),
					       "/bus/pci/devices/%s/infiniband", p->bdf),
				      "(absent)");
			diag_fix(
				f,
				"Load the RDMA half of the driver: modprobe %s (and make it persistent in /etc/modules-load.d).",
				!strcmp(p->driver, "mlx4_core") ? "mlx4_ib" : "mlx5_ib");
		}
	}
	if (n->n_rdma == 0) {
		if (unbound || no_ib)
			return;
		f = diag_add(d, DIAG_FAIL, NULL,
			     d->scope == DIAG_POD ? "no RDMA device visible in this container"
						  : "no RDMA device on this node");
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/class/infiniband"),
			      n->has_rdma_class ? "(empty)" : "(absent)");
		diag_fix(
			f,
			d->scope == DIAG_POD
				? "Schedule the pod on an RDMA node (nodeSelector rdmak.io/rdma.capable: \"true\", see --nfd) and, in "
				  "exclusive RDMA netns mode, chain the rdma CNI so a device is moved into the pod."
				: "This node has no RDMA-capable NIC or its driver is not loaded (modprobe mlx5_ib); keep RDMA pods off it "
				  "with the rdmak.io/rdma.capable label (rdmak doctor --nfd).");
		return;
	}
	for (size_t i = 0; i < n->n_rdma; i++)
		vfs += diag_dev_is_vf(&n->rdma[i]);
	f = diag_add(d, DIAG_OK, NULL, "%zu RDMA device%s (%zu PF/virtual, %zu VF): %s%s",
		     n->n_rdma, n->n_rdma == 1 ? "" : "s", n->n_rdma - vfs, vfs, n->rdma[0].name,
		     n->n_rdma > 1 ? ", ..." : "");
	diag_evidence(f, diag_sys(d, path, sizeof(path), "/class/infiniband"), "%zu entries",
		      n->n_rdma);
}

/* ---- kernel.modules ------------------------------------------------------------------------- */

static bool node_has_driver(const struct hw_node *n, const char *drv)
{
	for (size_t i = 0; i < n->n_pci; i++)
		if (!strcmp(n->pci[i].driver, drv))
			return true;
	return false;
}

void diag_check_kernel_modules(struct diag *d)
{
	static const struct {
		const char *name, *why, *fix;
		enum diag_status missing;
		const char *needs_driver; /* only when a function is bound to this driver */
	} mods[] = {
		{ "ib_uverbs",
		  "user verbs: without it no /dev/infiniband/uverbsN exists and libibverbs finds no device",
		  "modprobe ib_uverbs", DIAG_FAIL, NULL },
		{ "mlx5_ib",
		  "the RDMA driver of ConnectX-4 and later: without it mlx5_core functions have no RDMA device",
		  "modprobe mlx5_ib", DIAG_FAIL, "mlx5_core" },
		{ "mlx4_ib", "the RDMA driver of ConnectX-3", "modprobe mlx4_ib", DIAG_FAIL,
		  "mlx4_core" },
		{ "ib_umad",
		  "MAD access: ibstat, ibstatus, sminfo and the umadN/issmN nodes need it",
		  "modprobe ib_umad", DIAG_WARN, NULL },
		{ "rdma_ucm",
		  "RDMA CM from user space: /dev/infiniband/rdma_cm, rdma_cm tools and perftest -R need it",
		  "modprobe rdma_ucm", DIAG_WARN, NULL },
	};
	char path[PATH_MAX];

	if (d->node->n_rdma == 0 && !node_has_driver(d->node, "mlx5_core") &&
	    !node_has_driver(d->node, "mlx4_core"))
		return; /* nothing RDMA here: rdma.devices says so */
	for (size_t i = 0; i < ELEMENTSOF(mods); i++) {
		const struct hw_module *m = hw_node_module(d->node, mods[i].name);
		json_t *f;

		if (!m || (mods[i].needs_driver && !node_has_driver(d->node, mods[i].needs_driver)))
			continue;
		diag_sys(d, path, sizeof(path), "/module/%s", mods[i].name);
		if (m->state != HW_MOD_ABSENT) {
			f = diag_add(d, DIAG_OK, mods[i].name, "%s %s", mods[i].name,
				     hw_module_state_name(m->state));
			diag_evidence(f, path, "%s",
				      m->state == HW_MOD_LOADED ? "initstate: live" : "(built in)");
			continue;
		}
		f = diag_add(d, mods[i].missing, mods[i].name, "%s not loaded: %s", mods[i].name,
			     mods[i].why);
		diag_evidence(f, path, "(absent)");
		diag_fix(f, "%s, and list it in /etc/modules-load.d/rdma.conf so it loads at boot.",
			 mods[i].fix);
	}
}

/* ---- sriov.vfs ------------------------------------------------------------------------------- */

void diag_check_sriov(struct diag *d)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_pci; i++) {
		const struct hw_pci *p = &d->node->pci[i];
		size_t unbound = 0, no_rdma = 0;
		json_t *f;

		if (p->sriov_totalvfs <= 0 || p->physfn)
			continue;
		diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s/sriov_numvfs", p->bdf);
		if (p->sriov_numvfs > p->sriov_totalvfs) {
			f = diag_add(d, DIAG_FAIL, p->bdf,
				     "sriov_numvfs %d above sriov_totalvfs %d", p->sriov_numvfs,
				     p->sriov_totalvfs);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			diag_fix(f, "Reset it: echo 0 > %s, then write a count up to %d.", path,
				 p->sriov_totalvfs);
			continue;
		}
		if (p->sriov_numvfs == 0) {
			f = diag_add(d, DIAG_OK, p->bdf,
				     "SR-IOV capable (sriov_totalvfs %d), no VFs enabled",
				     p->sriov_totalvfs);
			diag_evidence(f, path, "0");
			continue;
		}
		if ((size_t)p->sriov_numvfs != p->n_vfs) {
			f = diag_add(d, DIAG_FAIL, p->bdf,
				     "sriov_numvfs %d but %zu virtfn links: VF creation failed",
				     p->sriov_numvfs, p->n_vfs);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			diag_fix(
				f,
				"Check dmesg for the mlx5_core error; re-create them: echo 0 > %s; echo %d > %s "
				"(firmware SRIOV_EN and NUM_OF_VFS via mlxconfig bound the total).",
				path, p->sriov_numvfs, path);
			continue;
		}
		for (size_t k = 0; k < p->n_vfs; k++) {
			unbound += !p->vfs[k]->driver[0];
			no_rdma += p->vfs[k]->driver[0] && p->vfs[k]->n_rdma == 0;
		}
		/* In exclusive mode a VF's RDMA device leaves the host's namespace with its pod. */
		if (d->node->kernel.netns_mode == 0 && no_rdma && !unbound) {
			f = diag_add(
				d, DIAG_OK, p->bdf,
				"%d of %d VFs enabled and bound; %zu RDMA devices are in pod namespaces "
				"(exclusive mode) or missing",
				p->sriov_numvfs, p->sriov_totalvfs, no_rdma);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			continue;
		}
		if (unbound || no_rdma) {
			f = diag_add(d, DIAG_WARN, p->bdf,
				     "%d VFs: %zu without a driver, %zu without an RDMA device",
				     p->sriov_numvfs, unbound, no_rdma);
			diag_evidence(f, path, "%d", p->sriov_numvfs);
			diag_fix(
				f,
				"Unbound VFs are invisible to the device plugin: bind them (echo <vf-bdf> > "
				"/sys/bus/pci/drivers/mlx5_core/bind) unless they are meant for VFIO; VFs without RDMA need "
				"mlx5_ib.");
			continue;
		}
		f = diag_add(d, DIAG_OK, p->bdf,
			     "%d of %d VFs enabled, all bound with an RDMA device", p->sriov_numvfs,
			     p->sriov_totalvfs);
		diag_evidence(f, path, "%d", p->sriov_numvfs);
	}
}

/* ---- chardev.nodes --------------------------------------------------------------------------- */

/* Whether a device node the model found absent is in fact hidden: stat says EACCES (a
 * directory on the way without search permission for this user). dir and its mode then. */
static bool devnode_denied(const struct diag *d, const char *path, char *dir, size_t n,
			   unsigned *mode)
{
	_cleanup_close_ int fd = diag_open(d, HW_ROOT_DEVFS, path, O_PATH), dfd = -1;
	struct stat st;
	char *slash;

	if (fd != -EACCES)
		return false;
	snprintf(dir, n, "%s", path);
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	dfd = diag_open(d, HW_ROOT_DEVFS, dir, O_PATH);
	*mode = dfd >= 0 && fstat(dfd, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
	return true;
}

void diag_check_chardevs(struct diag *d)
{
	const struct hw_node *n = d->node;
	size_t good = 0;
	unsigned dir_mode = 0;
	char path[PATH_MAX], sysp[PATH_MAX], dirp[PATH_MAX];
	json_t *f;

	for (size_t i = 0; i < n->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &n->rdma[i];

		if (dev->uverbs)
			continue;
		f = diag_add(
			d, DIAG_FAIL, dev->name,
			"%s has no uverbs device: libibverbs cannot list it (\"IB device %s not "
			"found\")",
			dev->name, dev->name);
		diag_evidence(f,
			      diag_sys(d, path, sizeof(path),
				       "/class/infiniband/%s/device/infiniband_verbs", dev->name),
			      "(absent)");
		diag_fix(
			f,
			"Load ib_uverbs (modprobe ib_uverbs); if it is loaded, the driver did not register user verbs "
			"for this device: check dmesg.");
	}
	for (size_t i = 0; i < n->n_chardevs; i++) {
		const struct hw_chardev *c = &n->chardevs[i];
		bool world = c->kind == HW_CHR_UVERBS || c->kind == HW_CHR_RDMA_CM;
		const char *obj = c->dev ? c->dev->name : c->name;

		diag_dev(d, path, sizeof(path), "/%s", c->node.path);
		diag_sys(d, sysp, sizeof(sysp), "/class/%s/%s/dev",
			 c->kind == HW_CHR_UVERBS    ? "infiniband_verbs"
			 : c->kind == HW_CHR_RDMA_CM ? "misc"
						     : "infiniband_mad",
			 c->name);
		if (!c->node.present && devnode_denied(d, path, dirp, sizeof(dirp), &dir_mode)) {
			/* not missing: this user may not look into the directory (mode 000 /dev/infiniband) */
			f = diag_add(
				d, c->kind == HW_CHR_UVERBS ? DIAG_FAIL : DIAG_WARN, obj,
				"%s: permission denied (its directory, mode %04o, cannot be searched by this user), not missing",
				c->node.path, dir_mode);
			diag_evidence(f, dirp, "mode %04o", dir_mode);
			diag_evidence(f, path, "(stat: Permission denied)");
			diag_fix(
				f,
				"Give the directory its usual mode (chmod 0755 %s); in a pod, check what mounted it.",
				dirp);
			continue;
		}
		if (!c->node.present) {
			f = diag_add(d, c->kind == HW_CHR_UVERBS ? DIAG_FAIL : DIAG_WARN, obj,
				     "%s missing from devfs%s", c->node.path,
				     c->kind == HW_CHR_UVERBS
					     ? ": libibverbs silently drops the device"
					     : "");
			diag_evidence(f, sysp, "%u:%u", c->major, c->minor);
			diag_evidence(f, path, "(absent)");
			diag_fix(
				f,
				"udev did not create it: udevadm trigger --subsystem-match=infiniband_verbs "
				"--subsystem-match=infiniband_mad --subsystem-match=misc, or mknod %s c %u %u.",
				path, c->major, c->minor);
			continue;
		}
		if (!c->matches) {
			f = diag_add(d, DIAG_FAIL, obj,
				     "%s is not the character device %u:%u the kernel registered",
				     c->node.path, c->major, c->minor);
			diag_evidence(f, sysp, "%u:%u", c->major, c->minor);
			diag_evidence(f, path,
				      c->node.is_char ? "char %u:%u" : "not a character device",
				      c->node.major, c->node.minor);
			diag_fix(
				f,
				"A stale node (copied /dev or a reused minor after hot-plug): rm %s and udevadm trigger.",
				path);
			continue;
		}
		if (world && (c->node.mode & 0666) != 0666) {
			f = diag_add(
				d, DIAG_WARN, obj,
				"%s mode %04o: non-root users (and pods running as non-root) cannot open it",
				c->node.path, c->node.mode);
			diag_evidence(f, path, "mode %04o uid %u gid %u", c->node.mode,
				      (unsigned)c->node.uid, (unsigned)c->node.gid);
			diag_fix(
				f,
				"rdma-core's udev rules make uverbs and rdma_cm 0666: chmod 0666 %s, and install rdma-core's "
				"udev rules (90-rdma-umad/91-ib-permissions) so it survives a reboot.",
				path);
			continue;
		}
		good++;
	}
	if (good) {
		f = diag_add(d, DIAG_OK, NULL,
			     "%zu of %zu character devices present with the kernel's numbers", good,
			     n->n_chardevs);
		diag_evidence(f, diag_dev(d, path, sizeof(path), "/infiniband"),
			      "%zu nodes checked", n->n_chardevs);
	}
}

/* ---- netns.mode ------------------------------------------------------------------------------ */

void diag_check_netns_mode(struct diag *d)
{
	int mode = d->node->kernel.netns_mode;
	char path[PATH_MAX];
	const char *name = mode == 1 ? "shared" : "exclusive";
	json_t *f;

	diag_sys(d, path, sizeof(path), "/module/ib_core/parameters/netns_mode");
	if (mode < 0) {
		if (d->node->n_rdma)
			diag_add(d, DIAG_SKIP, NULL,
				 "RDMA netns mode unknown (no ib_core parameters in sysfs)");
		return;
	}
	if (d->plugin_netns < 0 || d->plugin_netns == mode) {
		f = diag_add(d, DIAG_OK, NULL, "RDMA netns mode %s%s%s", name,
			     d->plugin_config ? "; plugin config: " : "",
			     d->plugin_config ? d->plugin_why : "");
		diag_evidence(f, path, "%s", mode ? "Y" : "N");
		if (d->plugin_config)
			diag_evidence(f, d->plugin_config, "%s", d->plugin_why);
		return;
	}
	f = diag_add(
		d, DIAG_FAIL, NULL, "RDMA netns mode is %s but the plugin config expects %s%s",
		name, d->plugin_netns ? "shared" : "exclusive",
		mode == 0
			? ": shared HCAs are not in the pods' network namespaces, so pods see no device "
			  "(k8s-rdma-shared-dev-plugin refuses to start)"
			: ": RDMA CNI refuses to move devices, per-VF pods are not isolated");
	diag_evidence(f, path, "%s", mode ? "Y" : "N");
	diag_evidence(f, d->plugin_config, "%s", d->plugin_why);
	diag_fix(
		f,
		"rdma system set netns %s (only while no other network namespace exists), or persist it: echo "
		"\"options ib_core netns_mode=%d\" > /etc/modprobe.d/ib_core.conf and reboot.",
		d->plugin_netns ? "shared" : "exclusive", d->plugin_netns);
}
