/* SPDX-License-Identifier: Apache-2.0 */
#include "pool/select.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool hex_match(const struct strv_list *list, unsigned v)
{
	char buf[8];

	if (list->n == 0)
		return true;
	snprintf(buf, sizeof(buf), "%04x", v);
	return strv_contains(list->v, buf);
}

static bool str_match(const struct strv_list *list, const char *v)
{
	return list->n == 0 || strv_contains(list->v, v);
}

/* A netdev is named by ifNames directly, or through the bond it is enslaved to. */
static bool netdev_named(const struct strv_list *names, const struct hw_netdev *nd)
{
	return nd && (strv_contains(names->v, nd->name) ||
		      (nd->master && strv_contains(names->v, nd->master->name)));
}

static bool rdma_dev_if_match(const struct strv_list *names, const struct hw_rdma_dev *dev)
{
	if (names->n == 0)
		return true;
	/* RoCE LAG: the bond master owns the device (k8s-rdma-shared-dev-plugin #62: a bond in
	 * ifNames never matched there, since it scans PCI functions' netdevs only). */
	if (dev->lag && strv_contains(names->v, dev->lag->name))
		return true;
	/* ... and so does any of the bond's slaves, whichever PF the device sits on */
	if (dev->lag && dev->lag->bond)
		for (size_t i = 0; i < dev->lag->bond->n_slaves; i++)
			if (strv_contains(names->v, dev->lag->bond->slaves[i]->name))
				return true;
	HW_DEV_FOREACH_PORT(dev, p)
	if (netdev_named(names, p->netdev))
		return true;
	if (dev->pci)
		for (size_t i = 0; i < dev->pci->n_netdevs; i++)
			if (netdev_named(names, dev->pci->netdevs[i]))
				return true;
	return false;
}

static const char *link_code(enum hw_link_layer ll)
{
	return ll == HW_LINK_IB ? "ib" : ll == HW_LINK_ETH ? "eth" : "";
}

static bool rdma_dev_link_match(const struct strv_list *types, const struct hw_rdma_dev *dev)
{
	if (types->n == 0)
		return true;
	HW_DEV_FOREACH_PORT(dev, p)
	if (strv_contains(types->v, link_code(p->link_layer)))
		return true;
	return false;
}

bool pool_select_rdma_dev(const struct pool_selector *s, const struct hw_rdma_dev *dev)
{
	const struct hw_pci *pci = dev->pci;

	if ((s->vendors.n || s->devices.n || s->drivers.n) && !pci)
		return false; /* rxe/siw: nothing to compare PCI IDs with */
	if (pci && (!hex_match(&s->vendors, pci->vendor) || !hex_match(&s->devices, pci->device) ||
		    !str_match(&s->drivers, pci->driver)))
		return false;
	return rdma_dev_if_match(&s->if_names, dev) && rdma_dev_link_match(&s->link_types, dev);
}

bool pool_select_pci_candidate(const struct hw_pci *pci)
{
	if (pci->is_gpu || (pci->class_code >> 16) != 0x02)
		return false;
	return !(pci->sriov_numvfs > 0);
}

static const struct hw_pci *pf_of(const struct hw_pci *pci)
{
	return pci->physfn ? pci->physfn : pci;
}

static const char *first_netdev(const struct hw_pci *pci)
{
	return pci->n_netdevs ? pci->netdevs[0]->name : NULL;
}

/* pfNames (by_name) and rootDevices: "<PF>" selects every function of the PF (the PF itself
 * when it has no VFs: candidates never include a PF that has some), "<PF>#0-1,3" those VFs
 * (sriov-network-device-plugin's isSelected: inclusive ranges of VF indexes). The PF compares
 * case-insensitively, as its getItem (EqualFold) does; pfNames also takes the PF's address. */
static bool pf_list_match(const struct pool_pf_list *list, const struct hw_pci *pci, bool by_name)
{
	const struct hw_pci *pf = pf_of(pci);
	const char *pfname = by_name ? first_netdev(pf) : NULL;

	if (list->n == 0)
		return true;
	for (size_t i = 0; i < list->n; i++) {
		const struct pool_pf_sel *p = &list->v[i];
		bool named = (pfname && strcasecmp(p->pf, pfname) == 0) ||
			     strcasecmp(p->pf, pf->bdf) == 0;

		if (!named)
			continue;
		if (p->all || (pci->physfn && pool_pf_sel_has_vf(p, pci->vf_index)))
			return true;
	}
	return false;
}

static const char *pci_link(const struct hw_pci *pci)
{
	const struct hw_pci *pf = pf_of(pci);

	/* the VF's netdev, else the PF's (what the anchor's EncapType lookup does), else the
	 * RDMA port's link layer for a VF bound without a netdev */
	for (const struct hw_pci *p = pci;; p = pf) {
		if (p->n_netdevs) {
			unsigned t = p->netdevs[0]->type;

			return t == 32 ? "ib" : t == 1 ? "eth" : "";
		}
		if (p == pf)
			break;
	}
	if (pci->n_rdma && pci->rdma[0]->n_ports)
		return link_code(pci->rdma[0]->ports[0].link_layer);
	return "";
}

static bool match_pci(const struct pool_selector *s, const struct hw_pci *pci, bool assume_rdma)
{
	if (!hex_match(&s->vendors, pci->vendor) || !hex_match(&s->devices, pci->device) ||
	    !str_match(&s->drivers, pci->driver))
		return false;
	if (s->pci_addresses.n && !strv_contains(s->pci_addresses.v, pci->bdf))
		return false;
	if (!pf_list_match(&s->pf_names, pci, true) || !pf_list_match(&s->root_devices, pci, false))
		return false;
	if (s->link_types.n && !strv_contains(s->link_types.v, pci_link(pci)))
		return false;
	/* isRdma: false means "do not filter", as a Go bool's zero value does in the anchor */
	if (s->is_rdma == 1 && pci->n_rdma == 0 && !assume_rdma)
		return false;
	return true;
}

bool pool_select_pci(const struct pool_selector *s, const struct hw_pci *pci)
{
	return match_pci(s, pci, false);
}

bool pool_select_pci_assume_rdma(const struct pool_selector *s, const struct hw_pci *pci)
{
	return match_pci(s, pci, true);
}

bool pool_select_vf_in_pod(const struct hw_pci *pci, bool exclusive_netns)
{
	return exclusive_netns && pci->physfn && pci->n_rdma == 0 && pci->n_netdevs == 0 &&
	       pci->driver[0] && pci->physfn->n_rdma > 0 &&
	       strcmp(pci->driver, pci->physfn->driver) == 0;
}
