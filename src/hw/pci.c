/* SPDX-License-Identifier: Apache-2.0 */
/* PCI functions: the RDMA devices' parents, every network function, GPUs; their place in the
 * PCIe tree (for the GPU relation), NUMA node and SR-IOV relations. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

#define PCI_VENDOR_NVIDIA 0x10de

static int cmp_bdf(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* v sorted by cmp_bdf */
static bool in_list(char (*v)[HW_BDF_MAX], size_t n, const char *bdf)
{
	return n && bsearch(bdf, v, n, sizeof(*v), cmp_bdf);
}

/* The functions of the RDMA devices and netdevs read so far, sorted: asked for each entry of
 * bus/pci/devices, a list searched in order would cost a thousand VFs a million strcmp. */
static int own_functions(struct hw_build *b, char (**ret)[HW_BDF_MAX], size_t *ret_n)
{
	size_t n_rdma = b->node->n_rdma, n = 0;
	char(*v)[HW_BDF_MAX] = calloc(n_rdma + b->node->n_netdevs + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n_rdma + b->node->n_netdevs; i++) {
		const char *fn = i < n_rdma ? b->rdma_bdf[i] : b->netdev_bdf[i - n_rdma];

		if (fn[0])
			memcpy(v[n++], fn, HW_BDF_MAX);
	}
	qsort(v, n, sizeof(*v), cmp_bdf);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* HW_LOAD_NETNS: the PFs of the namespace's functions (its RDMA devices' and netdevs' VFs), read
 * once: *ret_n of them in *ret. */
static int netns_pfs(struct hw_build *b, const struct hw_dir *bus, char (**ret)[HW_BDF_MAX],
		     size_t *ret_n)
{
	size_t n_rdma = b->node->n_rdma, n = 0;
	char(*pfs)[HW_BDF_MAX] = calloc(n_rdma + b->node->n_netdevs + 1, sizeof(*pfs));
	char buf[PATH_MAX], path[64];

	if (!pfs)
		return -ENOMEM;
	for (size_t i = 0; i < n_rdma + b->node->n_netdevs; i++) {
		const char *fn = i < n_rdma ? b->rdma_bdf[i] : b->netdev_bdf[i - n_rdma];

		snprintf(path, sizeof(path), "%s/physfn", fn);
		if (fn[0] && hw_dir_readlink(b->ctx, bus, path, buf, sizeof(buf)) >= 0 &&
		    hw_path_parent_bdf(buf, pfs[n]) >= 0)
			n++;
	}
	qsort(pfs, n, sizeof(*pfs), cmp_bdf);
	*ret = pfs;
	*ret_n = n;
	return 0;
}

/* own: own_functions(); pfs (HW_LOAD_NETNS only; else NULL): the only functions wanted beside
 * the namespace's own. */
static bool wanted(struct hw_build *b, const struct hw_dir *bus, const char *bdf,
		   char (*own)[HW_BDF_MAX], size_t n_own, char (*pfs)[HW_BDF_MAX], size_t n_pfs)
{
	char buf[32], path[64];
	unsigned long long cls, vendor;

	if (in_list(own, n_own, bdf))
		return true;
	if (b->flags & HW_LOAD_NETNS)
		return in_list(pfs, n_pfs, bdf);
	snprintf(path, sizeof(path), "%s/class", bdf);
	if (hw_dir_read(b->ctx, bus, path, buf, sizeof(buf)) < 0 || str_to_u64(buf, 16, &cls) < 0)
		return false;
	if ((cls >> 16) == 0x02) /* every network function: NICs, their VFs bound or not */
		return true;
	if ((cls >> 16) != 0x03)
		return false;
	snprintf(path, sizeof(path), "%s/vendor", bdf);
	return hw_dir_read(b->ctx, bus, path, buf, sizeof(buf)) >= 0 &&
	       str_to_u64(buf, 16, &vendor) >= 0 && vendor == PCI_VENDOR_NVIDIA;
}

static uint32_t read_hex(struct hw_build *b, const struct hw_dir *d, const char *name)
{
	long long v;
	return hw_read_int(b->ctx, d, name, 16, &v) >= 0 ? (uint32_t)v : 0;
}

/* c[0..len) into dst of size n, cut to n - 1 bytes as str_copy cuts */
static void comp_copy(char *dst, size_t n, const char *c, size_t len)
{
	if (len >= n)
		len = n - 1;
	memcpy(dst, c, len);
	dst[len] = '\0';
}

/* deviceattribute's rule (resolveSysDevicesPath), on the link as read: bus/pci/devices/<bdf>
 * joined with its target and cleaned (filepath.Join), then devices/pci... ending in the BDF. */
static void pcie_root(struct hw_pci *p, const char *link)
{
	struct {
		const char *s;
		size_t len;
	} stack[64];
	const char *c;
	size_t n = 0, l;

	if (link[0] == '/') { /* absolute: under the sysfs root itself ("/sys/devices/...") */
		if (!str_startswith(link, "/sys/"))
			return;
		link += strlen("/sys/");
	} else {
		stack[n].s = "bus", stack[n++].len = 3;
		stack[n].s = "pci", stack[n++].len = 3;
		stack[n].s = "devices", stack[n++].len = 7;
	}
	while ((c = hw_path_next(&link, &l))) {
		if (hw_comp_is(c, l, "."))
			continue;
		if (hw_comp_is(c, l, "..")) {
			if (n == 0)
				return; /* above the sysfs root: not under devices/ */
			n--;
			continue;
		}
		if (n == ELEMENTSOF(stack))
			return;
		stack[n].s = c, stack[n++].len = l;
	}
	if (n < 3 || !hw_comp_is(stack[0].s, stack[0].len, "devices") ||
	    !hw_comp_starts(stack[1].s, stack[1].len, "pci") ||
	    !hw_comp_is(stack[n - 1].s, stack[n - 1].len, p->bdf))
		return;
	comp_copy(p->pcie_root, sizeof(p->pcie_root), stack[1].s, stack[1].len);
}

/* "../../../devices/pci0000:36/0000:36:02.0/0000:37:00.0" -> root and bridges. */
static int parse_path(struct hw_pci *p, const char *link)
{
	const char *s = strstr(link, "devices/pci"), *c;
	size_t cap = 0, l;

	pcie_root(p, link);
	if (!s)
		return 0;
	s += strlen("devices/");
	while ((c = hw_path_next(&s, &l))) {
		char comp[HW_BDF_MAX];

		if (hw_comp_starts(c, l, "pci")) {
			comp_copy(p->root, sizeof(p->root), c, l);
			continue;
		}
		if (!hw_comp_bdf(c, l, comp) || !strcmp(comp, p->bdf))
			continue;
		if (p->path_len == cap) {
			void *np = realloc(p->path, (cap = cap ? cap * 2 : 4) * sizeof(*p->path));
			if (!np)
				return -ENOMEM;
			p->path = np;
		}
		memcpy(p->path[p->path_len++], comp, HW_BDF_MAX - 3);
	}
	return 0;
}

/* A VF as its PF's virtfnN link names it, read while the PF's directory is open */
struct vf_named {
	char bdf[HW_BDF_MAX];
	size_t pf; /* index in node->pci */
	int index;
};

struct pci_job {
	const struct hw_dir *bus;
	char **names;
	struct vf_named *vfs;	    /* in the order read */
	char (*vf_set)[HW_BDF_MAX]; /* their BDFs, sorted */
	size_t n_vfs;
};

/* set[0..old) sorted and set[old..n) added: the whole sorted. The new run is sorted alone;
 * when it comes after the rest (a PF's VFs follow the VFs of the PFs before it in BDF order, most
 * often) that is all, where sorting the whole set after each PF would cost every PF all the VFs
 * before it again. Interleaved routing IDs (two PFs with a stride of 2) take the whole sort. */
static void sort_added(char (*set)[HW_BDF_MAX], size_t old, size_t n)
{
	qsort(set + old, n - old, sizeof(*set), cmp_bdf);
	if (old && n > old && cmp_bdf(set[old - 1], set[old]) > 0)
		qsort(set, n, sizeof(*set), cmp_bdf);
}

/* PF i's virtfnN links, beneath its directory d: a VF follows its PF in BDF order (its routing
 * ID is the PF's plus First VF Offset, at least 1), so the functions loaded after it know
 * themselves VFs before asking for an SR-IOV capability that a VF never has */
static int read_virtfns(struct hw_build *b, struct pci_job *j, size_t i, const struct hw_dir *d)
{
	struct hw_pci *pf = &b->node->pci[i];
	size_t max = j->n_vfs + (size_t)pf->sriov_numvfs;
	struct vf_named *vfs = realloc(j->vfs, max * sizeof(*vfs));
	char(*set)[HW_BDF_MAX];
	size_t old = j->n_vfs;

	if (!vfs)
		return -ENOMEM;
	j->vfs = vfs;
	if (!(set = realloc(j->vf_set, max * sizeof(*set))))
		return -ENOMEM;
	j->vf_set = set;
	for (int k = 0; k < pf->sriov_numvfs; k++) {
		char buf[PATH_MAX], name[48], num[21];
		struct vf_named *v = &j->vfs[j->n_vfs];

		str_from_u64(num, (unsigned)k);
		str_concat(name, sizeof(name), "virtfn", num, "");
		if (hw_dir_readlink(b->ctx, d, name, buf, sizeof(buf)) < 0 ||
		    hw_path_parent_bdf(buf, v->bdf) < 0)
			continue;
		v->pf = i;
		v->index = k;
		memcpy(j->vf_set[j->n_vfs++], v->bdf, HW_BDF_MAX);
	}
	sort_added(j->vf_set, old, j->n_vfs);
	return 0;
}

static int load_function(struct hw_build *b, size_t i, struct pci_job *j, const char *bdf)
{
	struct hw_pci *p = &b->node->pci[i];
	const struct hw_dir *bus = j->bus;
	struct hw_dir d;
	char buf[PATH_MAX];
	long long v;
	int r;

	str_copy(p->bdf, sizeof(p->bdf), bdf);
	p->numa_node = p->sriov_totalvfs = p->sriov_numvfs = p->vf_index = -1;
	if ((r = hw_dir_open_link(b->ctx, bus, bdf, buf, sizeof(buf), &d)) < 0)
		return hw_fail(b->err, bus, bdf, r);
	if (buf[0] && (r = parse_path(p, buf)) < 0) {
		hw_dir_close(&d);
		return r;
	}
	p->vendor = (uint16_t)read_hex(b, &d, "vendor");
	p->device = (uint16_t)read_hex(b, &d, "device");
	p->sub_vendor = (uint16_t)read_hex(b, &d, "subsystem_vendor");
	p->sub_device = (uint16_t)read_hex(b, &d, "subsystem_device");
	p->class_code = read_hex(b, &d, "class");
	p->is_gpu = p->vendor == PCI_VENDOR_NVIDIA && (p->class_code >> 16) == 0x03;
	if (hw_read_int(b->ctx, &d, "numa_node", 10, &v) >= 0)
		p->numa_node = (int)v;
	hw_read_opt(b->ctx, &d, "local_cpulist", p->local_cpulist, sizeof(p->local_cpulist));
	if (hw_dir_readlink(b->ctx, &d, "driver", buf, sizeof(buf)) >= 0) {
		const char *slash = strrchr(buf, '/');
		str_copy(p->driver, sizeof(p->driver), slash ? slash + 1 : buf);
	}
	r = 0;
	if (!p->is_gpu && !in_list(j->vf_set, j->n_vfs, bdf)) {
		if (hw_read_int(b->ctx, &d, "sriov_totalvfs", 10, &v) >= 0)
			p->sriov_totalvfs = (int)v;
		if (p->sriov_totalvfs >= 0 && hw_read_int(b->ctx, &d, "sriov_numvfs", 10, &v) >= 0)
			p->sriov_numvfs = (int)v;
		if (p->sriov_numvfs > 0)
			r = read_virtfns(b, j, i, &d);
	}
	hw_dir_close(&d);
	return r;
}

/* PF <-> VF: virtfnN on the PF (N is the VF index), as read_virtfns found them */
static int link_sriov(struct hw_build *b, const struct pci_job *j)
{
	struct hw_node *node = b->node;

	for (size_t i = 0; i < node->n_pci; i++) {
		struct hw_pci *pf = &node->pci[i];

		if (pf->sriov_numvfs > 0 &&
		    !(pf->vfs = calloc((size_t)pf->sriov_numvfs, sizeof(*pf->vfs))))
			return -ENOMEM;
	}
	for (size_t k = 0; k < j->n_vfs; k++) {
		struct hw_pci *pf = &node->pci[j->vfs[k].pf],
			      *vf = hw_node_pci(node, j->vfs[k].bdf);

		if (!vf)
			continue;
		vf->physfn = pf;
		vf->vf_index = j->vfs[k].index;
		pf->vfs[pf->n_vfs++] = vf;
	}
	return 0;
}

static int push_ptr(void *arrp, size_t *n, void *ptr)
{
	void ***arr = arrp;
	void **na = realloc(*arr, (*n + 1) * sizeof(void *));

	if (!na)
		return -ENOMEM;
	na[(*n)++] = ptr;
	*arr = na;
	return 0;
}

static int pci_job(struct hw_build *b, size_t i, void *ud)
{
	struct pci_job *j = ud;
	return load_function(b, i, j, j->names[i]);
}

int hw_load_pci(struct hw_build *b)
{
	struct hw_node *node = b->node;
	struct hw_dir bus;
	char **names = NULL;
	_cleanup_free_ char(*pfs)[HW_BDF_MAX] = NULL, (*own)[HW_BDF_MAX] = NULL;
	size_t n = 0, kept = 0, n_pfs = 0, n_own = 0;
	struct pci_job job = { .bus = &bus };
	int r;

	r = hw_dir_open_links(b->ctx, "bus/pci/devices", &bus);
	if (r == -ENOENT)
		return 0; /* no PCI (an s390 or a stripped container sysfs) */
	if (r < 0)
		return hw_fail(b->err, NULL, "bus/pci/devices", r);
	if ((r = hw_dir_list(b->ctx, &bus, "", &names, &n)) < 0) {
		hw_dir_close(&bus);
		return hw_fail(b->err, &bus, NULL, r);
	}
	node->pci = calloc(n ? n : 1, sizeof(*node->pci));
	if (!node->pci)
		r = -ENOMEM;
	if (r >= 0)
		r = own_functions(b, &own, &n_own);
	if (r >= 0 && (b->flags & HW_LOAD_NETNS))
		r = netns_pfs(b, &bus, &pfs, &n_pfs);
	/* which functions, in BDF order, then their details */
	for (size_t i = 0; i < n; i++) {
		if (r < 0 || !hw_is_bdf(names[i]) ||
		    !wanted(b, &bus, names[i], own, n_own, pfs, n_pfs)) {
			free(names[i]);
			continue;
		}
		names[kept++] = names[i];
	}
	if (names)
		names[kept] = NULL;
	n = kept;
	job.names = names;
	if (r >= 0) {
		node->n_pci = kept;
		r = hw_for_items(b, kept, pci_job, &job);
	}
	if (r >= 0)
		r = link_sriov(b, &job);
	free(job.vfs);
	free(job.vf_set);
	strv_free(names);
	hw_dir_close(&bus);
	for (size_t i = 0; r >= 0 && i < node->n_rdma; i++) {
		struct hw_rdma_dev *d = &node->rdma[i];

		if (b->rdma_bdf[i][0] && (d->pci = hw_node_pci(node, b->rdma_bdf[i])))
			r = push_ptr(&d->pci->rdma, &d->pci->n_rdma, d);
	}
	for (size_t i = 0; r >= 0 && i < node->n_netdevs; i++) {
		struct hw_pci *p = b->netdev_bdf[i][0] ? hw_node_pci(node, b->netdev_bdf[i]) : NULL;

		if (p)
			r = push_ptr(&p->netdevs, &p->n_netdevs, &node->netdevs[i]);
	}
	return r < 0 ? r : 0;
}

int hw_pci_read_link(struct hw_ctx *ctx, const char *bdf, struct hw_pci_link *ret)
{
	static const char *const attr[4] = { "current_link_speed", "max_link_speed",
					     "current_link_width", "max_link_width" };
	struct hw_pci_link l = { 0 };
	struct hw_dir d;
	char path[64], buf[64];
	long long w;
	int r;

	if (!hw_is_bdf(bdf))
		return -EINVAL;
	snprintf(path, sizeof(path), "bus/pci/devices/%s", bdf);
	if ((r = hw_dir_open(ctx, NULL, path, &d)) < 0)
		return r;
	/* a missing or "Unknown" speed leaves 0: VFs have no link files, a link that is down
	 * reads "Unknown" */
	for (int i = 0; i < 2; i++)
		if (hw_read_opt(ctx, &d, attr[i], buf, sizeof(buf)) >= 0 && buf[0])
			(void)hw_parse_link_speed(buf, i == 0 ? &l.cur_gts : &l.max_gts);
	for (int i = 2; i < 4; i++)
		if (hw_read_int(ctx, &d, attr[i], 10, &w) >= 0 && w > 0 && w <= 32)
			*(i == 2 ? &l.cur_width : &l.max_width) = (unsigned)w;
	hw_dir_close(&d);
	*ret = l;
	return 0;
}

int hw_pci_acs_control(const uint8_t *cfg, size_t len)
{
	size_t off = 0x100;

	if (!cfg || len < 0x104)
		return -2;
	/* each header: capability id (15:0), version (19:16), next offset (31:20, dword aligned);
	 * a next offset below 0x100 ends the list, and the hop count bounds a looping one */
	for (int hops = 0; off >= 0x100 && off + 8 <= len && hops < 64; hops++) {
		uint32_t hdr = (uint32_t)cfg[off] | (uint32_t)cfg[off + 1] << 8 |
			       (uint32_t)cfg[off + 2] << 16 | (uint32_t)cfg[off + 3] << 24;

		if (hdr == 0 || hdr == 0xffffffffu)
			return -1;
		if ((hdr & 0xffff) == 0x000d) /* ACS: Capability at +4, Control at +6 */
			return cfg[off + 6] | cfg[off + 7] << 8;
		off = (hdr >> 20) & 0xffc;
	}
	return -1;
}
