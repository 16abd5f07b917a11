/* SPDX-License-Identifier: Apache-2.0 */
/* Node checks of GPUDirect RDMA: GPU memory registration (nvidia_peermem or dma-buf, from two
 * version files), GPU-HCA distance on PCIe, and ACS on the bridges between them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* ---- gpudirect.driver ------------------------------------------------------------------------- */

void diag_check_gpudirect_driver(struct diag *d)
{
	const struct hw_module *peermem = hw_node_module(d->node, "nvidia_peermem");
	const struct hw_module *legacy = hw_node_module(d->node, "nv_peer_mem");
	const struct hw_module *nv = hw_node_module(d->node, "nvidia");
	char path[PATH_MAX], vpath[PATH_MAX], buf[512];
	unsigned kmaj = 0, kmin = 0, nvmaj = 0;
	bool open_mod = false, have_kernel = false, have_nv = false;
	json_t *f;

	if (d->node->n_gpus == 0)
		return;
	if (d->node->n_rdma == 0) {
		diag_add(d, DIAG_SKIP, NULL,
			 "%zu GPUs but no RDMA device: GPUDirect RDMA has nothing to pair with",
			 d->node->n_gpus);
		return;
	}
	if (nv && nv->state == HW_MOD_ABSENT) {
		f = diag_add(d, DIAG_FAIL, "nvidia", "%zu GPUs but the nvidia driver is not loaded",
			     d->node->n_gpus);
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/module/nvidia"), "(absent)");
		diag_fix(
			f,
			"Install and load the NVIDIA driver (GPU Operator, or the distribution's package).");
		return;
	}
	if ((peermem && peermem->state != HW_MOD_ABSENT) ||
	    (legacy && legacy->state != HW_MOD_ABSENT)) {
		const struct hw_module *m =
			peermem && peermem->state != HW_MOD_ABSENT ? peermem : legacy;

		f = diag_add(
			d, DIAG_OK, m->name,
			"%s loaded: GPU memory can be registered (ibv_reg_mr on cudaMalloc memory)",
			m->name);
		diag_evidence(f, diag_sys(d, path, sizeof(path), "/module/%s/initstate", m->name),
			      "live");
		return;
	}
	/* dma-buf: ibv_reg_dmabuf_mr needs kernel >= 5.12 (ib_umem_dmabuf) and the NVIDIA open kernel
	 * modules >= 515; the proprietary module does not export dma-buf for device memory. */
	if (diag_read(d, HW_ROOT_PROCFS, diag_proc(d, path, sizeof(path), "/sys/kernel/osrelease"),
		      buf, sizeof(buf)) > 0 &&
	    diag_kernel_release_parse(buf, strlen(buf), &kmaj, &kmin) == 0)
		have_kernel = true;
	if (diag_read(d, HW_ROOT_PROCFS,
		      diag_proc(d, vpath, sizeof(vpath), "/driver/nvidia/version"), buf,
		      sizeof(buf)) > 0 &&
	    diag_nvidia_version_parse(buf, strlen(buf), &nvmaj, &open_mod) > 0)
		have_nv = true;
	if (have_kernel && have_nv && (kmaj > 5 || (kmaj == 5 && kmin >= 12)) && open_mod &&
	    nvmaj >= 515) {
		f = diag_add(
			d, DIAG_OK, "dma-buf",
			"no nvidia_peermem, but dma-buf works: kernel %u.%u, NVIDIA open kernel "
			"module %u (NCCL >= 2.13 and perftest --use_cuda_dmabuf use it)",
			kmaj, kmin, nvmaj);
		diag_evidence(f, path, "%u.%u", kmaj, kmin);
		diag_evidence(f, vpath, "Open Kernel Module %u", nvmaj);
		return;
	}
	f = diag_add(
		d, have_kernel && have_nv ? DIAG_FAIL : DIAG_WARN, "nvidia_peermem",
		"%s: registering GPU memory fails (perftest \"Couldn't allocate MR with error=14\"; NCCL falls back "
		"to staging through host memory)",
		have_kernel && have_nv
			? "neither nvidia_peermem nor dma-buf (needs kernel >= 5.12 and the open module >= 515)"
			: "nvidia_peermem not loaded and dma-buf support unknown");
	diag_evidence(f, diag_sys(d, path, sizeof(path), "/module/nvidia_peermem"), "(absent)");
	if (have_kernel)
		diag_evidence(f, diag_proc(d, path, sizeof(path), "/sys/kernel/osrelease"), "%u.%u",
			      kmaj, kmin);
	if (have_nv)
		diag_evidence(f, vpath, "%s kernel module %u", open_mod ? "open" : "proprietary",
			      nvmaj);
	else
		diag_evidence(f, vpath, "(unreadable)");
	diag_fix(
		f,
		"modprobe nvidia-peermem (GPU Operator: driver.rdma.enabled=true), or use the NVIDIA open kernel "
		"modules >= 515 on a kernel >= 5.12 so NCCL can use dma-buf (NCCL_DMABUF_ENABLE=1).");
}

static bool dev_has_active_port(const struct hw_rdma_dev *dev)
{
	HW_DEV_FOREACH_PORT(dev, p)
	if (hw_port_state_is_active(p->state))
		return true;
	return false;
}

/* ---- gpudirect.topology ----------------------------------------------------------------------- */

void diag_check_gpudirect_topology(struct diag *d)
{
	char obj[32], path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_gpus; i++) {
		const struct hw_gpu *g = &d->node->gpus[i];
		json_t *f;

		snprintf(obj, sizeof(obj), "GPU%u", g->index);
		diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s", g->pci ? g->pci->bdf : "?");
		if (!g->nearest) {
			if (d->node->n_rdma)
				diag_add(d, DIAG_SKIP, obj, "no HCA with a known PCIe relation");
			continue;
		}
		if (!dev_has_active_port(g->nearest)) {
			f = diag_add(
				d, DIAG_WARN, obj,
				"nearest HCA %s (%s) has no ACTIVE port: this GPU's traffic goes to a "
				"farther HCA",
				g->nearest->name, hw_topo_name(g->nearest_rel));
			diag_fix(
				f,
				"Fix %s's port (see port.state); until then expect lower GPUDirect bandwidth for %s.",
				g->nearest->name, obj);
		} else {
			switch (g->nearest_rel) {
			case HW_TOPO_PIX:
			case HW_TOPO_PXB:
				f = diag_add(
					d, DIAG_OK, obj,
					"nearest HCA %s is %s (same PCIe switch): GPUDirect RDMA at full speed",
					g->nearest->name, hw_topo_name(g->nearest_rel));
				break;
			case HW_TOPO_PHB:
			case HW_TOPO_NODE:
				f = diag_add(
					d, DIAG_OK, obj,
					"nearest HCA %s is %s (through the CPU, same socket): NCCL's default "
					"NCCL_NET_GDR_LEVEL (PXB) stages GPU buffers through host memory",
					g->nearest->name, hw_topo_name(g->nearest_rel));
				break;
			case HW_TOPO_SYS:
				f = diag_add(
					d, DIAG_WARN, obj,
					"nearest HCA %s is SYS (across sockets): GPU buffers may reach half "
					"the host-memory bandwidth (perftest#241)",
					g->nearest->name);
				diag_fix(
					f,
					"Give the pod's GPUs HCAs on the same socket (device plugin topology hints with the kubelet "
					"Topology Manager, policy single-numa-node); with no HCA on that socket, expect staging.");
				break;
			default:
				f = diag_add(d, DIAG_SKIP, obj, "PCIe relation to %s unknown",
					     g->nearest->name);
			}
		}
		diag_evidence(f, path, "%s -> %s: %s", g->pci ? g->pci->bdf : "?",
			      g->nearest->pci ? g->nearest->pci->bdf : g->nearest->name,
			      hw_topo_name(g->nearest_rel));
	}
}

/* ---- gpudirect.acs ---------------------------------------------------------------------------- */

/* The downstream ports between a GPU and its HCA are where ACS redirects peer-to-peer
 * requests up to the root complex: GPUDirect RDMA then crosses the CPU (or fails under an
 * IOMMU), although nvidia-smi topo still says PIX. */
void diag_check_gpudirect_acs(struct diag *d)
{
	char obj[32], path[PATH_MAX];

	for (size_t i = 0; i < d->node->n_gpus; i++) {
		const struct hw_gpu *g = &d->node->gpus[i];
		const struct hw_pci *a = g->pci, *b = g->nearest ? g->nearest->pci : NULL;
		size_t common, checked = 0, hidden = 0, absent = 0, shortest = SIZE_MAX;
		char first_hidden[PATH_MAX] = "";
		json_t *f = NULL;

		if (!b || (g->nearest_rel != HW_TOPO_PIX && g->nearest_rel != HW_TOPO_PXB))
			continue; /* traffic crosses the host bridge anyway: ACS changes nothing */
		snprintf(obj, sizeof(obj), "GPU%u", g->index);
		common = hw_pci_common_path(a, b);
		for (int side = 0; side < 2; side++) {
			const struct hw_pci *p = side ? b : a;

			for (size_t k = common; k < p->path_len; k++) {
				uint8_t cfg[4096 + 1];
				ssize_t n;
				int ctl;

				/* through the context: a snapshot records it, and replays this check */
				diag_sys(d, path, sizeof(path), "/bus/pci/devices/%s/config",
					 p->path[k]);
				n = diag_sys_read(d, path, (char *)cfg, sizeof(cfg));
				ctl = n < 0 ? -2 : hw_pci_acs_control(cfg, (size_t)n);
				if (ctl == -2) {
					/* why it is hidden: no file (a snapshot or copied tree), or a dump cut at
					 * 64 bytes (the kernel's answer to non-root) or short for another reason */
					hidden++;
					if (n < 0)
						absent++;
					else if ((size_t)n < shortest)
						shortest = (size_t)n;
					if (!first_hidden[0])
						str_copy(first_hidden, sizeof(first_hidden), path);
					continue;
				}
				checked++;
				if (ctl < 0 || !(ctl & (HW_PCI_ACS_P2P_REQUEST_REDIRECT |
							HW_PCI_ACS_P2P_COMPLETION_REDIRECT)))
					continue;
				f = diag_add(
					d, DIAG_WARN, obj,
					"ACS on bridge %s redirects peer-to-peer traffic to the root complex: "
					"GPUDirect RDMA between %s and %s crosses the CPU",
					p->path[k], obj, g->nearest->name);
				diag_evidence(
					f, path,
					"ACS Control 0x%04x (P2P Request Redirect %s, Completion Redirect %s)",
					(unsigned)ctl,
					ctl & HW_PCI_ACS_P2P_REQUEST_REDIRECT ? "on" : "off",
					ctl & HW_PCI_ACS_P2P_COMPLETION_REDIRECT ? "on" : "off");
				diag_fix(
					f,
					"Disable ACS redirect on the switch ports between them (BIOS \"ACS\" setting, or "
					"setpci -s %s ECAP_ACS+0x6.w=0000 at boot) and run the IOMMU in passthrough (iommu=pt).",
					p->path[k]);
			}
		}
		if (f)
			continue;
		if (checked)
			diag_add(d, DIAG_OK, obj,
				 "no ACS redirect on the %zu bridge(s) between %s and %s", checked,
				 obj, g->nearest->name);
		else if (hidden && absent)
			f = diag_add(
				d, DIAG_SKIP, obj,
				"ACS not visible on the %zu bridge(s) to %s: %zu have no PCI config file "
				"in this tree (a snapshot or copy without config space)",
				hidden, g->nearest->name, absent);
		else if (hidden && geteuid() != 0)
			f = diag_add(
				d, DIAG_SKIP, obj,
				"ACS not visible on the %zu bridge(s) to %s: PCI extended config space "
				"needs root (run doctor as root)",
				hidden, g->nearest->name);
		else if (hidden)
			f = diag_add(
				d, DIAG_SKIP, obj,
				"ACS not visible on the %zu bridge(s) to %s: their config files hold "
				"%zu bytes or fewer, not the extended space (4096) that root reads on a live node",
				hidden, g->nearest->name, shortest);
		if (hidden)
			diag_evidence(f, first_hidden, "%s", absent ? "(absent)" : "(short)");
	}
}
