/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's topology file (NCCL_TOPO_FILE) for one claim: its NICs and GPUs under the PCIe switches
 * they really hang from, so that NCCL in a container whose /sys is partial or masked (NVIDIA/nccl
 * #1102) still pairs each GPU with the NIC on its switch.
 *
 * Written for NCCL's own reader (src/graph/xml.cc): one element per line, attributes separated
 * by exactly one space and always double-quoted (a newline or tab inside a tag ends its
 * attributes there), only spaces and newlines between elements, no entities; system > cpu >
 * pci > (pci | nic > net); at most 16 attributes of at most 255 bytes. The tree is NCCL's: it
 * walks a function's sysfs path up two levels at a time (skipping a switch's downstream port
 * and the root port), so only endpoints and switch upstream ports appear, children by bus ID.
 * GPUs get their pci element without a <gpu> child: NCCL adds it under the element of that bus
 * ID when it finds the GPU, with its own CUDA index. A <net>'s dev is NCCL's to number (it
 * replaces it); speed, port, guid and gdr it keeps from the file, so they are what its IB
 * transport would say: Mb/s, the port number, the system image GUID as a host-order integer
 * (ibv_device_attr's big-endian bytes read on a little-endian machine), and gdr only where
 * nvidia_peermem is loaded (without it NCCL decides itself). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/dra.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* One element of the tree: a switch upstream port or an endpoint. */
struct tnode {
	char bdf[HW_BDF_MAX];
	char parent[HW_BDF_MAX]; /* "" : under the CPU */
	int numa;
	const struct hw_pci *fn;	 /* an endpoint; NULL for a bridge */
	const struct hw_rdma_dev **nics; /* the endpoint's RDMA devices of the claim */
	size_t n_nics;
	char cpulist[128];
};

struct tree {
	struct tnode *v;
	size_t n, cap;
};

static struct tnode *tree_get(struct tree *t, const char *bdf)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].bdf, bdf))
			return &t->v[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct tnode *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct tnode){ .numa = -1 };
	str_copy(t->v[t->n].bdf, HW_BDF_MAX, bdf);
	return &t->v[t->n++];
}

/* NCCL's parent of the element at path index j (j == path_len: the function itself). */
static const char *nccl_parent(const struct hw_pci *p, size_t j)
{
	return j >= 2 ? p->path[j - 2] : "";
}

/* The function and its NCCL ancestors into t. */
static int add_function(struct tree *t, const struct hw_pci *p, const struct hw_rdma_dev *nic)
{
	struct tnode *n = tree_get(t, p->bdf);
	size_t j = p->path_len;

	if (!n)
		return -ENOMEM;
	n->fn = p;
	n->numa = p->numa_node;
	str_copy(n->cpulist, sizeof(n->cpulist), p->local_cpulist);
	str_copy(n->parent, HW_BDF_MAX, nccl_parent(p, j));
	if (nic) {
		const struct hw_rdma_dev **v = realloc(n->nics, (n->n_nics + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		n->nics = v;
		n->nics[n->n_nics++] = nic;
	}
	for (; j >= 2; j -= 2) {
		struct tnode *b = tree_get(t, p->path[j - 2]);

		if (!b)
			return -ENOMEM;
		b->numa = p->numa_node;
		str_copy(b->cpulist, sizeof(b->cpulist), p->local_cpulist);
		str_copy(b->parent, HW_BDF_MAX, nccl_parent(p, j - 2));
	}
	return 0;
}

/* "0-3,8" -> "00000000,0000010f": the kernel's cpumap, 32-bit words, most significant first. */
static int affinity(const char *list, char **ret)
{
	uint32_t words[64] = { 0 };
	int top = 0;
	const char *s = list;
	_cleanup_free_ char *out = NULL;

	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s || a < 0)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a)
				return -EINVAL;
		}
		if (b >= 64 * 32)
			return -ERANGE;
		for (long c = a; c <= b; c++)
			words[c / 32] |= 1u << (c % 32);
		top = (int)(b / 32) > top ? (int)(b / 32) : top;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	for (int i = top; i >= 0; i--)
		if (str_append_sep(&out, ",", "%08x", words[i]) < 0)
			return -ENOMEM;
	*ret = TAKE_PTR(out);
	return 0;
}

static void attr(FILE *f, const char *key, const char *value)
{
	if (value && value[0])
		fprintf(f, " %s=\"%s\"", key, value);
}

/* A bridge's own attribute from sysfs ("0x060400"), or "" when unreadable. */
static void read_hex_attr(struct hw_ctx *ctx, const char *bdf, const char *name, char *out,
			  size_t n)
{
	char path[96], buf[32];
	ssize_t l;

	out[0] = '\0';
	snprintf(path, sizeof(path), "bus/pci/devices/%s/%s", bdf, name);
	l = hw_ctx_read(ctx, HW_ROOT_SYSFS, path, buf, sizeof(buf) - 1);
	if (l <= 0)
		return;
	buf[l] = '\0';
	str_rstrip(buf);
	if (str_startswith(buf, "0x") &&
	    strspn(buf + 2, "0123456789abcdefABCDEF") == strlen(buf + 2))
		str_copy(out, n, buf);
}

/* link_speed and link_width as NCCL reads them: the lower of the function's maximum and its
 * upstream port's. A VF has no link of its own: its PF's is the link it uses. */
static void link_attrs(FILE *f, struct hw_ctx *ctx, const char *bdf, const char *up)
{
	struct hw_pci_link a = { 0 }, b = { 0 };
	double gts;
	unsigned width;
	char buf[32];

	if (hw_pci_read_link(ctx, bdf, &a) < 0)
		return;
	if (up && up[0])
		(void)hw_pci_read_link(ctx, up, &b);
	gts = b.max_gts > 0 && (a.max_gts == 0 || b.max_gts < a.max_gts) ? b.max_gts : a.max_gts;
	width = b.max_width > 0 && (a.max_width == 0 || b.max_width < a.max_width) ? b.max_width
										   : a.max_width;
	if (gts > 0) {
		snprintf(buf, sizeof(buf), "%.1f GT/s PCIe", gts);
		attr(f, "link_speed", buf);
	}
	if (width > 0) {
		snprintf(buf, sizeof(buf), "%u", width);
		attr(f, "link_width", buf);
	}
}

/* The system image GUID "b859:9f03:00a1:b2c4" as NCCL prints ibv_device_attr.sys_image_guid
 * on a little-endian host: the 8 bytes in reverse, "0xc4b2a100039f59b8". */
static bool nccl_guid(const char *s, char out[20])
{
	uint8_t b[8];
	uint64_t v = 0;

	if (sscanf(s, "%2hhx%2hhx:%2hhx%2hhx:%2hhx%2hhx:%2hhx%2hhx", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &b[6], &b[7]) != 8)
		return false;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	snprintf(out, 20, "0x%" PRIx64, v);
	return true;
}

struct writer {
	FILE *f;
	struct hw_ctx *ctx;
	const struct tree *t;
	bool gdr;
	unsigned net_dev;
};

static int node_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct tnode *const *)a)->bdf,
		      (*(const struct tnode *const *)b)->bdf);
}

static void indent(FILE *f, int depth)
{
	for (int i = 0; i < depth; i++)
		fputs("  ", f);
}

static int write_pci(struct writer *w, const struct tnode *n, int depth);

/* The elements whose parent is `parent` ("" : the CPU's of numa), by bus ID. */
static int write_children(struct writer *w, const char *parent, int numa, int depth)
{
	_cleanup_free_ const struct tnode **kids = calloc(w->t->n + 1, sizeof(*kids));
	size_t k = 0;
	int r = 0;

	if (!kids)
		return -ENOMEM;
	for (size_t i = 0; i < w->t->n; i++)
		if (!strcmp(w->t->v[i].parent, parent) && (parent[0] || w->t->v[i].numa == numa))
			kids[k++] = &w->t->v[i];
	qsort(kids, k, sizeof(*kids), node_cmp);
	for (size_t i = 0; i < k && r >= 0; i++)
		r = write_pci(w, kids[i], depth);
	return r;
}

static void write_nets(struct writer *w, const struct tnode *n, int depth)
{
	indent(w->f, depth);
	fputs("<nic>\n", w->f);
	for (size_t i = 0; i < n->n_nics; i++) {
		const struct hw_rdma_dev *d = n->nics[i];
		char guid[20];

		HW_DEV_FOREACH_PORT(d, p)
		{
			char num[24];

			indent(w->f, depth + 1);
			fprintf(w->f, "<net name=\"%s\" dev=\"%u\"", d->name, w->net_dev++);
			if (p->rate.gbps > 0) {
				snprintf(num, sizeof(num), "%.0f", p->rate.gbps * 1000);
				attr(w->f, "speed", num);
			}
			snprintf(num, sizeof(num), "%u", p->num);
			attr(w->f, "port", num);
			if (nccl_guid(d->sys_image_guid, guid))
				attr(w->f, "guid", guid);
			if (w->gdr)
				attr(w->f, "gdr", "1");
			fputs("/>\n", w->f);
		}
	}
	indent(w->f, depth);
	fputs("</nic>\n", w->f);
}

static int write_pci(struct writer *w, const struct tnode *n, int depth)
{
	char buf[32];
	bool kids = n->n_nics > 0;

	for (size_t i = 0; i < w->t->n && !kids; i++)
		kids = !strcmp(w->t->v[i].parent, n->bdf);
	indent(w->f, depth);
	fprintf(w->f, "<pci busid=\"%s\"", n->bdf);
	if (n->fn) {
		const struct hw_pci *p = n->fn, *link = p->physfn ? p->physfn : p;

		snprintf(buf, sizeof(buf), "0x%06x", p->class_code);
		attr(w->f, "class", buf);
		snprintf(buf, sizeof(buf), "0x%04x", p->vendor);
		attr(w->f, "vendor", buf);
		snprintf(buf, sizeof(buf), "0x%04x", p->device);
		attr(w->f, "device", buf);
		snprintf(buf, sizeof(buf), "0x%04x", p->sub_vendor);
		attr(w->f, "subsystem_vendor", buf);
		snprintf(buf, sizeof(buf), "0x%04x", p->sub_device);
		attr(w->f, "subsystem_device", buf);
		link_attrs(w->f, w->ctx, link->bdf,
			   link->path_len ? link->path[link->path_len - 1] : NULL);
	} else {
		static const char *const names[] = { "class", "vendor", "device",
						     "subsystem_vendor", "subsystem_device" };
		const struct hw_pci *below = NULL;

		for (size_t i = 0; i < ELEMENTSOF(names); i++) {
			read_hex_attr(w->ctx, n->bdf, names[i], buf, sizeof(buf));
			attr(w->f, names[i], buf);
		}
		/* its upstream port: the bridge above it on any function's path below it */
		for (size_t i = 0; i < w->t->n && !below; i++) {
			const struct hw_pci *p = w->t->v[i].fn;

			for (size_t j = 1; p && j < p->path_len && !below; j++)
				if (!strcmp(p->path[j], n->bdf))
					below = p;
		}
		if (below) {
			size_t j = 1;

			while (strcmp(below->path[j], n->bdf))
				j++;
			link_attrs(w->f, w->ctx, n->bdf, below->path[j - 1]);
		}
	}
	if (!kids) {
		fputs("/>\n", w->f);
		return 0;
	}
	fputs(">\n", w->f);
	if (n->n_nics)
		write_nets(w, n, depth + 1);
	if (write_children(w, n->bdf, n->numa, depth + 1) < 0)
		return -ENOMEM;
	indent(w->f, depth);
	fputs("</pci>\n", w->f);
	return 0;
}

int dra_nccl_topology(struct hw_ctx *ctx, const struct hw_node *node,
		      const struct hw_rdma_dev *const *nics, size_t n_nics,
		      const struct hw_pci *const *gpus, size_t n_gpus, char **ret, size_t *ret_len)
{
	struct tree t = { 0 };
	struct writer w = { .ctx = ctx, .t = &t };
	const struct hw_module *peermem = hw_node_module(node, "nvidia_peermem");
	char *buf = NULL;
	size_t len = 0;
	int numas[64], n_numas = 0, r = 0;

	w.gdr = peermem && peermem->state != HW_MOD_ABSENT;
	for (size_t i = 0; i < n_nics && r >= 0; i++)
		if (nics[i]->pci)
			r = add_function(&t, nics[i]->pci, nics[i]);
	for (size_t i = 0; i < n_gpus && r >= 0; i++)
		r = add_function(&t, gpus[i], NULL);
	if (r < 0)
		goto out;
	/* the CPUs, by NUMA id */
	for (size_t i = 0; i < t.n; i++) {
		bool seen = false;

		for (int k = 0; k < n_numas; k++)
			seen |= numas[k] == t.v[i].numa;
		if (!seen && !t.v[i].parent[0] && n_numas < (int)ELEMENTSOF(numas))
			numas[n_numas++] = t.v[i].numa;
	}
	for (int a = 1; a < n_numas; a++)
		for (int b = a; b > 0 && numas[b - 1] > numas[b]; b--) {
			int x = numas[b];

			numas[b] = numas[b - 1];
			numas[b - 1] = x;
		}
	w.f = open_memstream(&buf, &len);
	if (!w.f) {
		r = -ENOMEM;
		goto out;
	}
	fputs("<system version=\"1\">\n", w.f);
	for (int k = 0; k < n_numas && r >= 0; k++) {
		_cleanup_free_ char *aff = NULL;
		const char *cpus = NULL;

		for (size_t i = 0; i < t.n && !cpus; i++)
			if (t.v[i].numa == numas[k] && !t.v[i].parent[0] && t.v[i].cpulist[0])
				cpus = t.v[i].cpulist;
		fprintf(w.f, "  <cpu numaid=\"%d\"", numas[k]);
		if (cpus && affinity(cpus, &aff) >= 0)
			attr(w.f, "affinity", aff);
		fputs(">\n", w.f);
		r = write_children(&w, "", numas[k], 2);
		fputs("  </cpu>\n", w.f);
	}
	fputs("</system>\n", w.f);
	if (fclose(w.f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r >= 0) {
		*ret = buf;
		*ret_len = len;
		buf = NULL;
	}
out:
	free(buf);
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i].nics);
	free(t.v);
	return r;
}
