/* Selectors: whether one RDMA device (shared pools) or one PCI function (exclusive pools)
 * matches a selector object. Within a list any value matches (OR), across lists all must
 * (AND), as both anchors do; an absent or empty list does not filter. */
#ifndef RDMAK_PLUGIN_SELECT_H
#define RDMAK_PLUGIN_SELECT_H

#include <stdbool.h>

#include "hw/hw.h"
#include "plugin/config.h"

bool select_rdma_dev(const struct plugin_selector *s, const struct hw_rdma_dev *dev);
/* A PCI function that may be an exclusive resource at all: a network function that is not a
 * PF with VFs configured (its VFs are the resources, as sriov-network-device-plugin does). */
bool select_pci_candidate(const struct hw_pci *pci);
bool select_pci(const struct plugin_selector *s, const struct hw_pci *pci);

#endif
