/* SPDX-License-Identifier: Apache-2.0 */
/* GPU <-> HCA PCIe relations, named as `nvidia-smi topo -m` names them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"

static int numa_of(const struct hw_pci *p)
{
	/* -1 (firmware did not say) means a single-node box in practice */
	return p->numa_node < 0 ? 0 : p->numa_node;
}

/* Walking from one function to the other: both under one PCIe switch (a switch shows up in
 * sysfs as its upstream port plus one downstream port per link, so "one bridge" is at most
 * the downstream port on each side) is PIX; more switches without crossing the host bridge
 * is PXB; the host bridge of one root complex is PHB; two root complexes on one NUMA node
 * is NODE; across the SMP interconnect is SYS. */
size_t hw_pci_common_path(const struct hw_pci *a, const struct hw_pci *b)
{
	size_t common = 0;

	if (strcmp(a->root, b->root))
		return 0;
	while (common < a->path_len && common < b->path_len &&
	       !strcmp(a->path[common], b->path[common]))
		common++;
	return common;
}

enum hw_topo hw_topo_relation(const struct hw_pci *a, const struct hw_pci *b)
{
	size_t common, side_a, side_b;

	if (!a || !b)
		return HW_TOPO_UNKNOWN;
	if (!a->root[0] || !b->root[0] || strcmp(a->root, b->root))
		return numa_of(a) == numa_of(b) ? HW_TOPO_NODE : HW_TOPO_SYS;
	common = hw_pci_common_path(a, b);
	if (common == 0)
		return HW_TOPO_PHB;
	side_a = a->path_len - common;
	side_b = b->path_len - common;
	return side_a <= 1 && side_b <= 1 ? HW_TOPO_PIX : HW_TOPO_PXB;
}

static bool better(const struct hw_rdma_dev *cand, enum hw_topo rel, const struct hw_rdma_dev *best,
		   enum hw_topo best_rel)
{
	if (!best)
		return true;
	if (rel != best_rel)
		return rel < best_rel;
	/* same relation: a PF before its VFs (the VFs share its path) */
	return best->pci->physfn && !cand->pci->physfn;
}

void hw_load_gpus_topology(struct hw_node *node)
{
	size_t n = 0;

	for (size_t i = 0; i < node->n_pci; i++)
		n += node->pci[i].is_gpu;
	node->gpus = calloc(n ? n : 1, sizeof(*node->gpus));
	if (!node->gpus)
		return;
	for (size_t i = 0; i < node->n_pci; i++) {
		struct hw_gpu *g;

		if (!node->pci[i].is_gpu)
			continue;
		g = &node->gpus[node->n_gpus];
		g->index = (unsigned)node->n_gpus++;
		g->pci = &node->pci[i];
		for (size_t k = 0; k < node->n_rdma; k++) {
			struct hw_rdma_dev *d = &node->rdma[k];
			enum hw_topo rel;

			if (!d->pci)
				continue;
			rel = hw_topo_relation(g->pci, d->pci);
			if (better(d, rel, g->nearest, g->nearest_rel)) {
				g->nearest = d;
				g->nearest_rel = rel;
			}
		}
	}
}

int hw_gpu_read_devnode(struct hw_ctx *ctx, const struct hw_gpu *gpu, struct hw_devnode *ret)
{
	char path[32];

	/* the nvidia driver numbers its minors in probe order, which is the PCI order GPU<index>
	 * follows; a container gets only the nodes of the GPUs it was given */
	snprintf(path, sizeof(path), "nvidia%u", gpu->index);
	hw_devnode_stat(ctx, path, ret);
	return 0;
}
