/* SPDX-License-Identifier: Apache-2.0 */
/* Selectors: whether one RDMA device (shared pools) or one PCI function (exclusive pools)
 * matches a selector object. Within a list any value matches (OR), across lists all must
 * (AND), as both anchors do; an absent or empty list does not filter. */
#ifndef RDMAK_POOL_SELECT_H
#define RDMAK_POOL_SELECT_H

#include <stdbool.h>

#include "hw/hw.h"
#include "pool/config.h"

bool pool_select_rdma_dev(const struct pool_selector *s, const struct hw_rdma_dev *dev);
/* A PCI function that may be an exclusive resource at all: a network function that is not a
 * PF with VFs configured (its VFs are the resources, as sriov-network-device-plugin does). */
bool pool_select_pci_candidate(const struct hw_pci *pci);
bool pool_select_pci(const struct pool_selector *s, const struct hw_pci *pci);
/* The same, counting pci as RDMA-capable whatever its RDMA devices (a VF whose RDMA device is in
 * a pod's namespace: see pool_select_vf_in_pod). */
bool pool_select_pci_assume_rdma(const struct pool_selector *s, const struct hw_pci *pci);
/* In the RDMA subsystem's exclusive netns mode, rdma-cni (or ib-sriov-cni's rdmaIsolation) moves
 * an allocated VF's RDMA device and netdev into the pod: the host then shows the VF bound to its
 * driver with neither. Such a VF of an RDMA PF is in use, not gone; dropping it from the pool
 * under-reports capacity after every plugin restart (sriov-network-device-plugin #565). */
bool pool_select_vf_in_pod(const struct hw_pci *pci, bool exclusive_netns);

#endif
