/* SPDX-License-Identifier: Apache-2.0 */
/* Selectors: whether one RDMA device (shared pools) or one PCI function (exclusive pools)
 * matches a selector object. Within a list any value matches (OR), across lists all must
 * (AND), as both anchors do; an absent or empty list does not filter. */
#ifndef RDMAK_PLUGIN_SELECT_H
#define RDMAK_PLUGIN_SELECT_H

#include <stdbool.h>

#include "hw/hw.h"
#include "plugin/pluginconf.h"

bool plugin_select_rdma_dev(const struct plugin_selector *s, const struct hw_rdma_dev *dev);
/* A PCI function that may be an exclusive resource at all: a network function that is not a
 * PF with VFs configured (its VFs are the resources, as sriov-network-device-plugin does). */
bool plugin_select_pci_candidate(const struct hw_pci *pci);
bool plugin_select_pci(const struct plugin_selector *s, const struct hw_pci *pci);
/* The same, counting pci as RDMA-capable whatever its RDMA devices (a VF whose RDMA device is in
 * a pod's namespace: see plugin_select_vf_in_pod). */
bool plugin_select_pci_assume_rdma(const struct plugin_selector *s, const struct hw_pci *pci);
/* In the RDMA subsystem's exclusive netns mode, rdma-cni (or ib-sriov-cni's rdmaIsolation) moves
 * an allocated VF's RDMA device and netdev into the pod: the host then shows the VF bound to its
 * driver with neither. Such a VF of an RDMA PF is in use, not gone; dropping it from the pool
 * under-reports capacity after every plugin restart (sriov-network-device-plugin #565). */
bool plugin_select_vf_in_pod(const struct hw_pci *pci, bool exclusive_netns);

#endif
