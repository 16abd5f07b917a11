/* SPDX-License-Identifier: Apache-2.0 */
/* One PCI function read on demand (the CNI plugin's question for a deviceID: which netdev and
 * RDMA device it carries, its PF and VF index, its driver), and the function behind a netdev.
 * A node with a thousand VFs is not loaded for it: a few reads under one function's directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw-internal.h"
#include "util/strutil.h"
#include "util/strv.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Entries of an optional subdirectory: none when absent. */
static int list_opt(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char ***ret,
		    size_t *n)
{
	int r = hw_dir_list(ctx, d, name, ret, n);

	if (r == -ENOENT || r == -ENOTDIR) {
		*ret = NULL;
		*n = 0;
		return 0;
	}
	return r;
}

/* N of the PF's virtfnN link that points at bdf; -1 when none does. */
static int vf_index(struct hw_ctx *ctx, const struct hw_dir *pf, const char *bdf)
{
	char **v = NULL, link[PATH_MAX];
	size_t n = 0;
	int found = -1;
	unsigned long long idx;

	if (hw_dir_list(ctx, pf, NULL, &v, &n) < 0)
		return -1;
	for (size_t i = 0; i < n && found < 0; i++)
		if (str_startswith(v[i], "virtfn") && str_to_u64(v[i] + 6, 10, &idx) == 0 &&
		    hw_dir_readlink(ctx, pf, v[i], link, sizeof(link)) > 0 &&
		    !strcmp(base_name(link), bdf))
			found = (int)idx;
	strv_free(v);
	return found;
}

int hw_pci_read_function(struct hw_ctx *ctx, const char *bdf, struct hw_pci_function *ret)
{
	struct hw_pci_function f = { .vf_index = -1 };
	struct hw_dir d, pf;
	char path[64], link[PATH_MAX];
	int r;

	if (!hw_is_bdf(bdf))
		return -EINVAL;
	snprintf(path, sizeof(path), "bus/pci/devices/%s", bdf);
	if ((r = hw_dir_open(ctx, NULL, path, &d)) < 0)
		return r;
	str_copy(f.bdf, sizeof(f.bdf), bdf);
	if (hw_dir_readlink(ctx, &d, "driver", link, sizeof(link)) > 0)
		str_copy(f.driver, sizeof(f.driver), base_name(link));
	if ((r = list_opt(ctx, &d, "net", &f.netdevs, &f.n_netdevs)) < 0 ||
	    (r = list_opt(ctx, &d, "infiniband", &f.rdma, &f.n_rdma)) < 0)
		goto fail;
	/* a VF: physfn points at its PF, whose virtfnN links give its index */
	if (hw_dir_readlink(ctx, &d, "physfn", link, sizeof(link)) > 0 &&
	    hw_is_bdf(base_name(link))) {
		str_copy(f.physfn, sizeof(f.physfn), base_name(link));
		if (hw_dir_open(ctx, &d, "physfn", &pf) == 0) {
			f.vf_index = vf_index(ctx, &pf, bdf);
			r = list_opt(ctx, &pf, "net", &f.pf_netdevs, &f.n_pf_netdevs);
			hw_dir_close(&pf);
			if (r < 0)
				goto fail;
		}
	}
	hw_dir_close(&d);
	*ret = f;
	return 0;
fail:
	hw_dir_close(&d);
	hw_pci_function_clear(&f);
	return r;
}

void hw_pci_function_clear(struct hw_pci_function *f)
{
	strv_free(f->netdevs);
	strv_free(f->rdma);
	strv_free(f->pf_netdevs);
	f->netdevs = f->rdma = f->pf_netdevs = NULL;
	f->n_netdevs = f->n_rdma = f->n_pf_netdevs = 0;
}

int hw_netdev_read_pci(struct hw_ctx *ctx, const char *ifname, char bdf[HW_BDF_MAX])
{
	char path[64], link[PATH_MAX];
	int r;

	if (!str_is_safe_name(ifname, HW_IFNAME_MAX - 1))
		return -EINVAL;
	snprintf(path, sizeof(path), "class/net/%s", ifname);
	if (!hw_dir_exists(ctx, NULL, path))
		return -ENOENT;
	snprintf(path, sizeof(path), "class/net/%s/device", ifname);
	r = hw_dir_readlink(ctx, NULL, path, link, sizeof(link));
	if (r == -ENOENT)
		return 0; /* a virtual netdev (veth, bond, macvlan) has no device link */
	if (r < 0)
		return r;
	/* "../../../0000:1b:00.2": the function itself is the link's last component */
	if (!hw_is_bdf(base_name(link)))
		return 0;
	str_copy(bdf, HW_BDF_MAX, base_name(link));
	return 1;
}

int hw_netdev_read_soft_rdma(struct hw_ctx *ctx, const char *ifname, char name[HW_NAME_MAX])
{
	char **devs = NULL, path[HW_NAME_MAX + 32], parent[HW_IFNAME_MAX + 2];
	size_t n = 0;
	int r;

	if (!str_is_safe_name(ifname, HW_IFNAME_MAX - 1))
		return -EINVAL;
	r = list_opt(ctx, NULL, "class/infiniband", &devs, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "class/infiniband/%s/parent", devs[i]);
		/* only rxe and siw publish "parent": a hardware device has none (-ENOENT) */
		if (hw_read_opt(ctx, NULL, path, parent, sizeof(parent)) < 0 ||
		    strcmp(parent, ifname))
			continue;
		str_copy(name, HW_NAME_MAX, devs[i]);
		r = 1;
		break;
	}
	strv_free(devs);
	return r;
}
