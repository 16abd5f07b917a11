/* SPDX-License-Identifier: Apache-2.0 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "hw/hw-json.h"
#include "doc/doc.h"
#include "util/strutil.h"

/* Every string here was read from sysfs or devfs: the writer escapes what is not UTF-8, and a
 * failure anywhere fails the whole document instead of dropping an entry. */

static void str_or_null(struct doc_writer *w, const char *key, const char *s)
{
	doc_put_string(w, key, s && *s ? s : NULL);
}

static void int_or_null(struct doc_writer *w, const char *key, bool present, long long v)
{
	if (present)
		doc_put_int(w, key, v);
	else
		doc_put_null(w, key);
}

/* printf's "0x%0*x" (at least width digits) without printf: a node has thousands of PCI
 * functions with five IDs each, and printf's format machinery costs far more than the digits. */
static void hex(struct doc_writer *w, const char *key, unsigned v, int width)
{
	char buf[2 + 8 + 1];
	int n = 1;

	while (n < 8 && v >> (4 * n))
		n++;
	if (n < width)
		n = width;
	buf[0] = '0', buf[1] = 'x', buf[2 + n] = '\0';
	for (int i = n - 1; i >= 0; i--, v >>= 4)
		buf[2 + i] = "0123456789abcdef"[v & 15];
	doc_put_string(w, key, buf);
}

/* "major:minor", and below the mode's "%04o", without printf either: a node with a thousand VFs
 * has three thousand char devices */
static void devnum(struct doc_writer *w, const char *key, unsigned major, unsigned minor)
{
	char buf[2 * 21];
	size_t n = str_from_u64(buf, major);

	buf[n++] = ':';
	str_from_u64(buf + n, minor);
	doc_put_string(w, key, buf);
}

static void chardev_json(struct doc_writer *w, const struct hw_chardev *c)
{
	char mode[8], path[64];
	unsigned m = c->node.mode & 07777;

	for (int i = 0; i < 4; i++)
		mode[i] = (char)('0' + (m >> (3 * (3 - i)) & 7));
	mode[4] = '\0';
	str_concat(path, sizeof(path), "/dev/", c->node.path, "");
	doc_begin_object(w, NULL);
	doc_put_string(w, "name", c->name);
	doc_put_string(w, "kind", hw_chardev_kind_name(c->kind));
	str_or_null(w, "rdma_device", c->dev ? c->dev->name : NULL);
	int_or_null(w, "port", c->port != 0, c->port);
	devnum(w, "dev", c->major, c->minor);
	doc_put_string(w, "path", path);
	doc_begin_object(w, "devfs");
	doc_put_bool(w, "present", c->node.present);
	doc_put_bool(w, "char_device", c->node.is_char);
	if (c->node.is_char)
		devnum(w, "dev", c->node.major, c->node.minor);
	else
		doc_put_null(w, "dev");
	doc_put_string(w, "mode", c->node.present ? mode : NULL);
	int_or_null(w, "uid", c->node.present, c->node.uid);
	int_or_null(w, "gid", c->node.present, c->node.gid);
	doc_end_object(w);
	doc_put_bool(w, "usable", c->matches);
	doc_end_object(w);
}

static void port_json(struct doc_writer *w, const struct hw_port *p)
{
	const struct hw_netdev *n = p->netdev;
	char msg[PATH_MAX];

	doc_begin_object(w, NULL);
	doc_put_int(w, "port", p->num);
	doc_put_int(w, "state_id", p->state);
	doc_put_string(w, "state", p->state_name);
	doc_put_int(w, "phys_state_id", p->phys_state);
	doc_put_string(w, "phys_state", p->phys_state_name);
	if (p->rate.raw[0]) {
		doc_begin_object(w, "rate");
		doc_put_string(w, "text", p->rate.raw);
		doc_put_real(w, "gbps", p->rate.gbps);
		int_or_null(w, "width", p->rate.width != 0, p->rate.width);
		str_or_null(w, "speed", p->rate.speed);
		doc_end_object(w);
	} else {
		doc_put_null(w, "rate");
	}
	doc_put_string(w, "link_layer", hw_link_layer_name(p->link_layer));
	doc_put_int(w, "lid", p->lid);
	doc_put_int(w, "sm_lid", p->sm_lid);
	doc_put_int(w, "lmc", p->lmc);
	hex(w, "cap_mask", p->cap_mask, 8);
	doc_put_string(w, "port_guid", p->port_guid);
	doc_put_int(w, "gid_tbl_len", p->gid_tbl_len);
	doc_begin_array(w, "gids");
	for (size_t i = 0; i < p->n_gids; i++) {
		const struct hw_gid *g = &p->gids[i];

		doc_begin_object(w, NULL);
		doc_put_int(w, "index", g->index);
		doc_put_string(w, "gid", g->gid);
		str_or_null(w, "type", g->type);
		str_or_null(w, "netdev", g->ndev);
		doc_put_bool(w, "ipv4", g->ipv4);
		doc_end_object(w);
	}
	doc_end_array(w);
	int_or_null(w, "pkey_tbl_len", p->pkeys != NULL, p->pkey_tbl_len);
	if (p->pkeys) {
		doc_begin_array(w, "pkeys");
		for (size_t i = 0; i < p->n_pkeys; i++) {
			doc_begin_object(w, NULL);
			doc_put_int(w, "index", p->pkeys[i].index);
			hex(w, "pkey", p->pkeys[i].pkey, 4);
			doc_end_object(w);
		}
		doc_end_array(w);
	} else {
		doc_put_null(w, "pkeys"); /* not read (rdmak list --json --pkeys reads them) */
	}
	if (n) {
		doc_begin_object(w, "netdev");
		doc_put_string(w, "name", n->name);
		doc_put_string(w, "via", hw_ndev_via_name(p->netdev_via));
		if (n->carrier < 0)
			doc_put_null(w, "carrier");
		else
			doc_put_bool(w, "carrier", n->carrier);
		doc_put_string(w, "operstate", n->operstate);
		doc_end_object(w);
	} else {
		doc_put_null(w, "netdev");
	}
	str_or_null(w, "umad", p->umad ? p->umad->name : NULL);
	str_or_null(w, "issm", p->issm ? p->issm->name : NULL);
	doc_begin_array(w, "errors");
	for (size_t i = 0; i < p->n_errors; i++)
		doc_put_string(w, NULL,
			       hw_attr_error_str(p, &p->errors[i], NULL, msg, sizeof(msg)));
	doc_end_array(w);
	doc_end_object(w);
}

static void rdma_json(struct doc_writer *w, const struct hw_rdma_dev *d)
{
	doc_begin_object(w, NULL);
	doc_put_string(w, "name", d->name);
	str_or_null(w, "node_type", d->node_type_name);
	str_or_null(w, "node_guid", d->node_guid);
	str_or_null(w, "sys_image_guid", d->sys_image_guid);
	str_or_null(w, "fw_ver", d->fw_ver);
	str_or_null(w, "hca_type", d->hca_type);
	str_or_null(w, "hw_rev", d->hw_rev);
	str_or_null(w, "board_id", d->board_id);
	str_or_null(w, "node_desc", d->node_desc);
	str_or_null(w, "pci", d->pci ? d->pci->bdf : NULL);
	str_or_null(w, "lag_bond", d->lag ? d->lag->name : NULL);
	str_or_null(w, "uverbs", d->uverbs ? d->uverbs->name : NULL);
	doc_begin_array(w, "ports");
	HW_DEV_FOREACH_PORT(d, p)
	port_json(w, p);
	doc_end_array(w);
	doc_end_object(w);
}

static void names_of_netdevs(struct doc_writer *w, const char *key, struct hw_netdev *const *v,
			     size_t n)
{
	doc_begin_array(w, key);
	for (size_t i = 0; i < n; i++)
		doc_put_string(w, NULL, v[i]->name);
	doc_end_array(w);
}

static void pci_json(struct doc_writer *w, const struct hw_pci *p)
{
	doc_begin_object(w, NULL);
	doc_put_string(w, "bdf", p->bdf);
	hex(w, "vendor", p->vendor, 4);
	hex(w, "device", p->device, 4);
	hex(w, "subsystem_vendor", p->sub_vendor, 4);
	hex(w, "subsystem_device", p->sub_device, 4);
	hex(w, "class", p->class_code, 6);
	str_or_null(w, "driver", p->driver);
	int_or_null(w, "numa_node", p->numa_node >= 0, p->numa_node);
	str_or_null(w, "local_cpulist", p->local_cpulist);
	doc_put_string(w, "root", p->root);
	doc_begin_array(w, "path");
	for (size_t i = 0; i < p->path_len; i++)
		doc_put_string(w, NULL, p->path[i]);
	doc_end_array(w);
	if (p->sriov_totalvfs >= 0) {
		doc_begin_object(w, "sriov");
		doc_put_int(w, "totalvfs", p->sriov_totalvfs);
		doc_put_int(w, "numvfs", p->sriov_numvfs);
		doc_begin_array(w, "vfs");
		for (size_t i = 0; i < p->n_vfs; i++) {
			doc_begin_object(w, NULL);
			doc_put_int(w, "index", p->vfs[i]->vf_index);
			doc_put_string(w, "pci", p->vfs[i]->bdf);
			doc_end_object(w);
		}
		doc_end_array(w);
		doc_end_object(w);
	} else {
		doc_put_null(w, "sriov");
	}
	if (p->physfn) {
		doc_begin_object(w, "physfn");
		doc_put_string(w, "pci", p->physfn->bdf);
		doc_put_int(w, "vf_index", p->vf_index);
		doc_end_object(w);
	} else {
		doc_put_null(w, "physfn");
	}
	names_of_netdevs(w, "netdevs", p->netdevs, p->n_netdevs);
	doc_begin_array(w, "rdma_devices");
	for (size_t i = 0; i < p->n_rdma; i++)
		doc_put_string(w, NULL, p->rdma[i]->name);
	doc_end_array(w);
	doc_put_bool(w, "gpu", p->is_gpu);
	doc_end_object(w);
}

static void netdev_json(struct doc_writer *w, const struct hw_netdev *n)
{
	doc_begin_object(w, NULL);
	doc_put_string(w, "name", n->name);
	doc_put_int(w, "ifindex", n->ifindex);
	doc_put_string(w, "kind", hw_netdev_kind_name(n->kind));
	doc_put_int(w, "type", n->type);
	doc_put_string(w, "operstate", n->operstate);
	if (n->carrier < 0)
		doc_put_null(w, "carrier");
	else
		doc_put_bool(w, "carrier", n->carrier);
	doc_put_int(w, "mtu", n->mtu);
	doc_put_string(w, "address", n->address);
	int_or_null(w, "dev_port", n->dev_port >= 0, n->dev_port);
	str_or_null(w, "pci", n->pci ? n->pci->bdf : NULL);
	str_or_null(w, "master", n->master ? n->master->name : NULL);
	if (n->bond) {
		doc_begin_object(w, "bond");
		doc_put_string(w, "mode", n->bond->mode);
		doc_put_int(w, "mode_id", n->bond->mode_id);
		names_of_netdevs(w, "slaves", n->bond->slaves, n->bond->n_slaves);
		str_or_null(w, "active_slave", n->bond->active ? n->bond->active->name : NULL);
		doc_end_object(w);
	} else {
		doc_put_null(w, "bond");
	}
	int_or_null(w, "dev_id", n->dev_id >= 0, n->dev_id);
	doc_end_object(w);
}

static void gpu_json(struct doc_writer *w, const struct hw_node *node, const struct hw_gpu *g)
{
	char name[16];

	snprintf(name, sizeof(name), "GPU%u", g->index);
	doc_begin_object(w, NULL);
	doc_put_string(w, "name", name);
	doc_put_string(w, "pci", g->pci->bdf);
	hex(w, "device", g->pci->device, 4);
	int_or_null(w, "numa_node", g->pci->numa_node >= 0, g->pci->numa_node);
	str_or_null(w, "nearest_rdma_device", g->nearest ? g->nearest->name : NULL);
	doc_put_string(w, "nearest_relation", g->nearest ? hw_topo_name(g->nearest_rel) : NULL);
	/* The relation to every RDMA device that is not a VF: VFs share their PF's place. A key
	 * that is not UTF-8 is escaped as a string is. */
	doc_begin_object(w, "relations");
	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *d = &node->rdma[i];

		if (d->pci && !d->pci->physfn)
			doc_put_string(w, d->name, hw_topo_name(hw_topo_relation(g->pci, d->pci)));
	}
	doc_end_object(w);
	doc_end_object(w);
}

void hw_node_write_json(struct doc_writer *w, const struct hw_node *node, const struct hw_ctx *ctx)
{
	doc_begin_object(w, NULL);
	doc_put_string(w, "schema", HW_JSON_SCHEMA);
	doc_put_string(w, "sysfs", hw_ctx_sysfs(ctx));
	doc_put_string(w, "devfs", hw_ctx_devfs(ctx));
	doc_put_bool(w, "rdma_present", node->n_rdma > 0);
	doc_begin_object(w, "kernel");
	if (node->kernel.netns_mode < 0)
		doc_put_null(w, "netns_mode");
	else
		doc_put_string(w, "netns_mode", node->kernel.netns_mode ? "shared" : "exclusive");
	int_or_null(w, "uverbs_abi", node->kernel.uverbs_abi >= 0, node->kernel.uverbs_abi);
	doc_begin_object(w, "modules");
	for (size_t i = 0; i < node->kernel.n_modules; i++)
		doc_put_string(w, node->kernel.modules[i].name,
			       hw_module_state_name(node->kernel.modules[i].state));
	doc_end_object(w);
	doc_end_object(w);
	doc_begin_array(w, "rdma_devices");
	for (size_t i = 0; i < node->n_rdma; i++)
		rdma_json(w, &node->rdma[i]);
	doc_end_array(w);
	doc_begin_array(w, "pci");
	for (size_t i = 0; i < node->n_pci; i++)
		pci_json(w, &node->pci[i]);
	doc_end_array(w);
	doc_begin_array(w, "netdevs");
	for (size_t i = 0; i < node->n_netdevs; i++)
		netdev_json(w, &node->netdevs[i]);
	doc_end_array(w);
	doc_begin_array(w, "char_devices");
	for (size_t i = 0; i < node->n_chardevs; i++)
		chardev_json(w, &node->chardevs[i]);
	doc_end_array(w);
	doc_begin_array(w, "gpus");
	for (size_t i = 0; i < node->n_gpus; i++)
		gpu_json(w, node, &node->gpus[i]);
	doc_end_array(w);
	doc_end_object(w);
}
