/* SPDX-License-Identifier: Apache-2.0 */
/* The node model as DRA devices. One device per RDMA device: a PF's, a VF's, a virtual one
 * (rxe, siw). Its name comes from its PCI address, which survives reboots and driver reloads
 * where mlx5_N numbering does not; its pool is its PF's, so that a port flap on one rail
 * changes one pool (docs/dra.md: the API asks for a new generation in every slice of a pool
 * that changed). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc.h"
#include "dra/dra.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

#define STD "resource.kubernetes.io/"

/* "0000:18:00.0" -> "pci-0000-18-00-0"; any other name -> "<prefix>-<it, lowercase, every
 * byte outside [a-z0-9] a '-'>", cut to a DNS label. */
static void label_of(const char *prefix, const char *s, char *out, size_t n)
{
	size_t k = 0;

	k = (size_t)snprintf(out, n, "%s-", prefix);
	for (; *s && k + 1 < n && k < 63; s++) {
		char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;

		out[k++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
	}
	while (k > 0 && out[k - 1] == '-')
		k--;
	out[k] = '\0';
}

__attribute__((format(printf, 3, 4))) static int note(struct dra_inventory *inv, const char *dev,
						      const char *fmt, ...)
{
	_cleanup_free_ char *line = NULL;
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (asprintf(&line, "%s: %s", dev, buf) < 0)
		return -ENOMEM;
	return strv_extend(&inv->notes, &inv->n_notes, line);
}

struct attrs {
	struct dra_inventory *inv;
	const char *dev;
	json_t *obj;
	int r;
};

static void put(struct attrs *a, const char *name, json_t *v)
{
	if (a->r < 0)
		return;
	if (!v || json_object_set_new(a->obj, name, v) < 0)
		a->r = -ENOMEM;
}

/* A string attribute; one the API would refuse (longer than 64 bytes) is left out, and said. */
static void put_str(struct attrs *a, const char *name, const char *s)
{
	json_t *v;

	if (a->r < 0 || !s || !s[0])
		return;
	if (strlen(s) > DRA_ATTR_STRING_MAX) {
		int r = note(a->inv, a->dev, "attribute %s left out: longer than 64 bytes", name);

		if (r < 0)
			a->r = r;
		return;
	}
	v = doc_string(s);
	put(a, name, v ? json_pack("{s:o}", "string", v) : NULL);
}

static void put_int(struct attrs *a, const char *name, long long i)
{
	put(a, name, json_pack("{s:I}", "int", (json_int_t)i));
}

/* The PF of a function: itself unless it is a VF. */
static const struct hw_pci *pf_of(const struct hw_pci *p)
{
	return p->physfn ? p->physfn : p;
}

static int bdf_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The rails: the node's physical functions of the same vendor and PCI class as an RDMA
 * device's PF, by PCI address. Counted over PCI functions rather than RDMA devices, so that a
 * device that goes away (its driver unbound, a VF destroyed) renumbers no other rail. */
static int rails(const struct hw_node *node, const char ***ret, size_t *ret_n)
{
	const char **v = calloc(node->n_pci + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_pci; i++) {
		const struct hw_pci *p = &node->pci[i];
		bool kin = false;

		if (p->physfn || p->is_gpu)
			continue;
		for (size_t k = 0; k < node->n_rdma && !kin; k++) {
			const struct hw_pci *q = node->rdma[k].pci;

			kin = q && pf_of(q)->vendor == p->vendor &&
			      pf_of(q)->class_code == p->class_code;
		}
		if (kin)
			v[n++] = p->bdf;
	}
	qsort(v, n, sizeof(*v), bdf_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* The GPU with the best PCIe relation to p (the lowest index among equals), or NULL. */
static const struct hw_gpu *nearest_gpu(const struct hw_node *node, const struct hw_pci *p,
					enum hw_topo *rel)
{
	const struct hw_gpu *best = NULL;

	for (size_t i = 0; i < node->n_gpus; i++) {
		enum hw_topo t = hw_topo_relation(node->gpus[i].pci, p);

		if (t != HW_TOPO_UNKNOWN && (!best || t < *rel)) {
			best = &node->gpus[i];
			*rel = t;
		}
	}
	return best;
}

static void pkeys_attr(struct attrs *a, const struct hw_port *port)
{
	_cleanup_free_ char *list = NULL;

	for (size_t i = 0; i < port->n_pkeys; i++)
		if (str_append_sep(&list, ",", "0x%04x", port->pkeys[i].pkey) < 0) {
			a->r = -ENOMEM;
			return;
		}
	put_str(a, "pkeys", list);
}

static int device_attrs(const struct hw_node *node, struct dra_inventory *inv, struct dra_device *d,
			const char *const *rail, size_t n_rails)
{
	const struct hw_rdma_dev *dev = d->dev;
	const struct hw_port *p1 = dev->n_ports ? &dev->ports[0] : NULL;
	struct attrs a = { inv, d->name, json_object(), 0 };

	if (!a.obj)
		return -ENOMEM;
	d->attrs = a.obj;
	if (dev->pci) {
		const struct hw_pci *pci = dev->pci;
		const struct hw_gpu *gpu;
		enum hw_topo rel = HW_TOPO_UNKNOWN;

		put_str(&a, STD "pcieRoot", pci->pcie_root);
		put_str(&a, STD "pciBusID", pci->bdf);
		put_str(&a, "function", pci->physfn ? "vf" : "pf");
		if (pci->physfn) {
			put_str(&a, "pf", pci->physfn->bdf);
			put_int(&a, "vfIndex", pci->vf_index);
		}
		if (pci->numa_node >= 0)
			put_int(&a, "numaNode", pci->numa_node);
		for (size_t i = 0; i < n_rails; i++)
			if (!strcmp(rail[i], pf_of(pci)->bdf))
				put_int(&a, "rail", (long long)i);
		if ((gpu = nearest_gpu(node, pci, &rel))) {
			put_str(&a, "nearestGPU", gpu->pci->bdf);
			put_str(&a, "gpuRelation", hw_topo_name(rel));
		}
	} else {
		put_str(&a, "function", "virtual");
	}
	put_str(&a, "rdmaDevice", dev->name);
	put_str(&a, "hcaType", dev->hca_type);
	put_str(&a, "firmware", dev->fw_ver);
	put_str(&a, "nodeGUID", dev->node_guid);
	put_int(&a, "ports", (long long)dev->n_ports);
	if (p1) {
		/* a device's other ports (mlx4's second one) are named by NCCL_IB_HCA when it is
		 * prepared; what a selector matches is the first's */
		put_str(&a, "linkLayer", hw_link_layer_name(p1->link_layer));
		put_str(&a, "portState", hw_port_state_name(p1->state));
		if (p1->rate.gbps > 0)
			put_int(&a, "rateGbps", (long long)p1->rate.gbps);
		put_str(&a, "portGUID", p1->port_guid);
		if (p1->netdev)
			put_str(&a, "netdev", p1->netdev->name);
		if (p1->link_layer == HW_LINK_IB)
			pkeys_attr(&a, p1);
	}
	if (a.r >= 0 && json_object_size(a.obj) > DRA_DEVICE_ATTRS_MAX)
		a.r = -E2BIG; /* a bug of this file: the list above is shorter */
	return a.r;
}

static int device_cmp(const void *a, const void *b)
{
	const struct dra_device *x = a, *y = b;
	int c = strcmp(x->pool, y->pool);

	return c ? c : strcmp(x->name, y->name);
}

static bool all_ports_active(const struct hw_rdma_dev *dev)
{
	HW_DEV_FOREACH_PORT(dev, p)
	if (!hw_port_state_is_active(p->state))
		return false;
	return dev->n_ports > 0;
}

int dra_inventory_build(const struct hw_node *node, char *const *only, struct dra_inventory *ret)
{
	struct dra_inventory inv = { 0 };
	_cleanup_free_ const char **rail = NULL;
	size_t n_rails = 0;
	int r;

	if ((r = rails(node, &rail, &n_rails)) < 0)
		return r;
	inv.v = calloc(node->n_rdma + 1, sizeof(*inv.v));
	if (!inv.v)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &node->rdma[i];
		struct dra_device *d = &inv.v[inv.n];

		if (only && !strv_contains(only, dev->name))
			continue;
		d->dev = dev;
		if (dev->pci) {
			label_of("pci", dev->pci->bdf, d->name, sizeof(d->name));
			label_of("pci", pf_of(dev->pci)->bdf, d->pool, sizeof(d->pool));
			/* one function, several RDMA devices: each its own name */
			if (dev->pci->n_rdma > 1) {
				char suffix[64];

				label_of(d->name, dev->name, suffix, sizeof(suffix));
				str_copy(d->name, sizeof(d->name), suffix);
			}
		} else {
			label_of("rdma", dev->name, d->name, sizeof(d->name));
			str_copy(d->pool, sizeof(d->pool), "virtual");
		}
		if (dra_inventory_find(&inv, d->name)) {
			r = note(&inv, dev->name, "not published: its DRA name %s is taken",
				 d->name);
			if (r < 0)
				goto fail;
			*d = (struct dra_device){ 0 };
			continue;
		}
		d->healthy = all_ports_active(dev);
		inv.n++;
		if ((r = device_attrs(node, &inv, d, rail, n_rails)) < 0)
			goto fail;
	}
	qsort(inv.v, inv.n, sizeof(*inv.v), device_cmp);
	*ret = inv;
	return 0;
fail:
	dra_inventory_clear(&inv);
	return r;
}

void dra_inventory_clear(struct dra_inventory *inv)
{
	if (!inv)
		return;
	for (size_t i = 0; i < inv->n; i++)
		json_decref(inv->v[i].attrs);
	free(inv->v);
	strv_free(inv->notes);
	*inv = (struct dra_inventory){ 0 };
}

const struct dra_device *dra_inventory_find(const struct dra_inventory *inv, const char *name)
{
	for (size_t i = 0; i < inv->n; i++)
		if (!strcmp(inv->v[i].name, name))
			return &inv->v[i];
	return NULL;
}
