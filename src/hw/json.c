/* SPDX-License-Identifier: Apache-2.0 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "hw/hw-json.h"
#include "doc/doc.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* Every string here was read from sysfs or devfs: doc_string() escapes what is not UTF-8 and
 * every construction is checked, so that a strange name or a failed allocation makes the whole
 * document fail (NULL, which each json_pack "o" passes up) instead of dropping an entry. */
#define S(s) doc_string(s)

static json_t *str_or_null(const char *s)
{
	return s && *s ? doc_string(s) : json_null();
}

/* Append v to *a; on failure free the array and leave NULL there, for the caller's pack to fail. */
static void push(json_t **a, json_t *v)
{
	if (!*a) {
		json_decref(v);
		return;
	}
	if (doc_append(*a, v) < 0) {
		json_decref(*a);
		*a = NULL;
	}
}

/* json_object_set_new that gives up the whole object when the value could not be built. */
static void set(json_t **o, const char *key, json_t *v)
{
	if (!*o) {
		json_decref(v);
		return;
	}
	if (!v || json_object_set_new(*o, key, v) < 0) {
		json_decref(*o);
		*o = NULL;
	}
}

static json_t *hex(unsigned v, int width)
{
	char buf[16];
	snprintf(buf, sizeof(buf), "0x%0*x", width, v);
	return json_string(buf);
}

static json_t *devnum(unsigned major, unsigned minor)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%u:%u", major, minor);
	return json_string(buf);
}

json_t *hw_chardev_to_json(const struct hw_chardev *c)
{
	char mode[8], path[64];
	json_t *node = json_object();

	if (!c)
		return json_null();
	snprintf(mode, sizeof(mode), "%04o", c->node.mode);
	set(&node, "present", json_boolean(c->node.present));
	set(&node, "char_device", json_boolean(c->node.is_char));
	set(&node, "dev", c->node.is_char ? devnum(c->node.major, c->node.minor) : json_null());
	set(&node, "mode", c->node.present ? json_string(mode) : json_null());
	set(&node, "uid", c->node.present ? json_integer(c->node.uid) : json_null());
	set(&node, "gid", c->node.present ? json_integer(c->node.gid) : json_null());
	snprintf(path, sizeof(path), "/dev/%s", c->node.path);
	return json_pack("{s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:b}", "name", S(c->name), "kind",
			 hw_chardev_kind_name(c->kind), "rdma_device",
			 str_or_null(c->dev ? c->dev->name : NULL), "port",
			 c->port ? json_integer(c->port) : json_null(), "dev",
			 devnum(c->major, c->minor), "path", S(path), "devfs", node, "usable",
			 c->matches);
}

static json_t *gids_json(const struct hw_port *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->n_gids; i++) {
		const struct hw_gid *g = &p->gids[i];
		push(&a, json_pack("{s:I, s:o, s:o, s:o, s:b}", "index", (json_int_t)g->index,
				   "gid", S(g->gid), "type", str_or_null(g->type), "netdev",
				   str_or_null(g->ndev), "ipv4", g->ipv4));
	}
	return a;
}

static json_t *pkeys_json(const struct hw_port *p)
{
	json_t *a;

	if (!p->pkeys)
		return json_null(); /* not read (rdmak list --json --pkeys reads them) */
	a = json_array();
	for (size_t i = 0; i < p->n_pkeys; i++)
		push(&a, json_pack("{s:I, s:o}", "index", (json_int_t)p->pkeys[i].index, "pkey",
				   hex(p->pkeys[i].pkey, 4)));
	return a;
}

static json_t *attr_errors_json(const struct hw_port *p)
{
	json_t *a = json_array();
	char msg[PATH_MAX];

	for (size_t i = 0; i < p->n_errors; i++)
		push(&a, S(hw_attr_error_str(p, &p->errors[i], NULL, msg, sizeof(msg))));
	return a;
}

json_t *hw_port_to_json(const struct hw_port *p)
{
	const struct hw_netdev *n = p->netdev;
	json_t *rate = p->rate.raw[0] ? json_pack("{s:o, s:f, s:o, s:o}", "text", S(p->rate.raw),
						  "gbps", p->rate.gbps, "width",
						  p->rate.width ? json_integer(p->rate.width)
								: json_null(),
						  "speed", str_or_null(p->rate.speed))
				      : json_null();
	json_t *nd = n ? json_pack("{s:o, s:s, s:o, s:o}", "name", S(n->name), "via",
				   hw_ndev_via_name(p->netdev_via), "carrier",
				   n->carrier < 0 ? json_null() : json_boolean(n->carrier),
				   "operstate", S(n->operstate))
		       : json_null();

	return json_pack(
		"{s:I, s:i, s:o, s:i, s:o, s:o, s:s, s:I, s:I, s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
		"port", (json_int_t)p->num, "state_id", p->state, "state", S(p->state_name),
		"phys_state_id", p->phys_state, "phys_state", S(p->phys_state_name), "rate", rate,
		"link_layer", hw_link_layer_name(p->link_layer), "lid", (json_int_t)p->lid,
		"sm_lid", (json_int_t)p->sm_lid, "lmc", (json_int_t)p->lmc, "cap_mask",
		hex(p->cap_mask, 8), "port_guid", S(p->port_guid), "gid_tbl_len",
		(json_int_t)p->gid_tbl_len, "gids", gids_json(p), "pkey_tbl_len",
		p->pkeys ? json_integer((json_int_t)p->pkey_tbl_len) : json_null(), "pkeys",
		pkeys_json(p), "netdev", nd, "umad", str_or_null(p->umad ? p->umad->name : NULL),
		"issm", str_or_null(p->issm ? p->issm->name : NULL), "errors", attr_errors_json(p));
}

static json_t *rdma_json(const struct hw_rdma_dev *d)
{
	json_t *ports = json_array();

	HW_DEV_FOREACH_PORT(d, p)
	push(&ports, hw_port_to_json(p));
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "name", S(d->name), "node_type", str_or_null(d->node_type_name),
			 "node_guid", str_or_null(d->node_guid), "sys_image_guid",
			 str_or_null(d->sys_image_guid), "fw_ver", str_or_null(d->fw_ver),
			 "hca_type", str_or_null(d->hca_type), "hw_rev", str_or_null(d->hw_rev),
			 "board_id", str_or_null(d->board_id), "node_desc",
			 str_or_null(d->node_desc), "pci", str_or_null(d->pci ? d->pci->bdf : NULL),
			 "lag_bond", str_or_null(d->lag ? d->lag->name : NULL), "uverbs",
			 str_or_null(d->uverbs ? d->uverbs->name : NULL), "ports", ports);
}

static json_t *names_of_netdevs(struct hw_netdev *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		push(&a, S(v[i]->name));
	return a;
}

static json_t *pci_json(const struct hw_pci *p)
{
	json_t *path = json_array(), *rdma = json_array(), *sriov = json_null();

	for (size_t i = 0; i < p->path_len; i++)
		push(&path, S(p->path[i]));
	for (size_t i = 0; i < p->n_rdma; i++)
		push(&rdma, S(p->rdma[i]->name));
	if (p->sriov_totalvfs >= 0) {
		json_t *vfs = json_array();
		for (size_t i = 0; i < p->n_vfs; i++)
			push(&vfs, json_pack("{s:i, s:o}", "index", p->vfs[i]->vf_index, "pci",
					     S(p->vfs[i]->bdf)));
		sriov = json_pack("{s:i, s:i, s:o}", "totalvfs", p->sriov_totalvfs, "numvfs",
				  p->sriov_numvfs, "vfs", vfs);
	}
	return json_pack(
		"{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}",
		"bdf", S(p->bdf), "vendor", hex(p->vendor, 4), "device", hex(p->device, 4),
		"subsystem_vendor", hex(p->sub_vendor, 4), "subsystem_device",
		hex(p->sub_device, 4), "class", hex(p->class_code, 6), "driver",
		str_or_null(p->driver), "numa_node",
		p->numa_node < 0 ? json_null() : json_integer(p->numa_node), "local_cpulist",
		str_or_null(p->local_cpulist), "root", S(p->root), "path", path, "sriov", sriov,
		"physfn",
		p->physfn
			? json_pack("{s:o, s:i}", "pci", S(p->physfn->bdf), "vf_index", p->vf_index)
			: json_null(),
		"netdevs", names_of_netdevs(p->netdevs, p->n_netdevs), "rdma_devices", rdma, "gpu",
		p->is_gpu);
}

static json_t *netdev_json(const struct hw_netdev *n)
{
	json_t *bond = json_null();

	if (n->bond)
		bond = json_pack("{s:o, s:i, s:o, s:o}", "mode", S(n->bond->mode), "mode_id",
				 n->bond->mode_id, "slaves",
				 names_of_netdevs(n->bond->slaves, n->bond->n_slaves),
				 "active_slave",
				 str_or_null(n->bond->active ? n->bond->active->name : NULL));
	return json_pack("{s:o, s:i, s:s, s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "name", S(n->name), "ifindex", n->ifindex, "kind",
			 hw_netdev_kind_name(n->kind), "type", (json_int_t)n->type, "operstate",
			 S(n->operstate), "carrier",
			 n->carrier < 0 ? json_null() : json_boolean(n->carrier), "mtu",
			 (json_int_t)n->mtu, "address", S(n->address), "dev_port",
			 n->dev_port < 0 ? json_null() : json_integer(n->dev_port), "pci",
			 str_or_null(n->pci ? n->pci->bdf : NULL), "master",
			 str_or_null(n->master ? n->master->name : NULL), "bond", bond, "dev_id",
			 n->dev_id < 0 ? json_null() : json_integer(n->dev_id));
}

static json_t *gpu_json(const struct hw_node *node, const struct hw_gpu *g)
{
	char name[16];
	json_t *rel = json_object();

	snprintf(name, sizeof(name), "GPU%u", g->index);
	/* The relation to every RDMA device that is not a VF: VFs share their PF's place. */
	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *d = &node->rdma[i];
		_cleanup_free_ char *key = NULL;

		if (!d->pci || d->pci->physfn)
			continue;
		key = str_utf8_escape(d->name); /* an object key must be UTF-8 too */
		set(&rel, key ? key : "",
		    key ? json_string(hw_topo_name(hw_topo_relation(g->pci, d->pci))) : NULL);
	}
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "name", name, "pci", S(g->pci->bdf),
			 "device", hex(g->pci->device, 4), "numa_node",
			 g->pci->numa_node < 0 ? json_null() : json_integer(g->pci->numa_node),
			 "nearest_rdma_device", str_or_null(g->nearest ? g->nearest->name : NULL),
			 "nearest_relation",
			 g->nearest ? json_string(hw_topo_name(g->nearest_rel)) : json_null(),
			 "relations", rel);
}

json_t *hw_node_to_json(const struct hw_node *node, const struct hw_ctx *ctx)
{
	json_t *rdma = json_array(), *pci = json_array(), *netdevs = json_array(),
	       *chardevs = json_array(), *gpus = json_array(), *modules = json_object();

	for (size_t i = 0; i < node->n_rdma; i++)
		push(&rdma, rdma_json(&node->rdma[i]));
	for (size_t i = 0; i < node->n_pci; i++)
		push(&pci, pci_json(&node->pci[i]));
	for (size_t i = 0; i < node->n_netdevs; i++)
		push(&netdevs, netdev_json(&node->netdevs[i]));
	for (size_t i = 0; i < node->n_chardevs; i++)
		push(&chardevs, hw_chardev_to_json(&node->chardevs[i]));
	for (size_t i = 0; i < node->n_gpus; i++)
		push(&gpus, gpu_json(node, &node->gpus[i]));
	for (size_t i = 0; i < node->kernel.n_modules; i++)
		set(&modules, node->kernel.modules[i].name,
		    json_string(hw_module_state_name(node->kernel.modules[i].state)));
	return json_pack(
		"{s:s, s:o, s:o, s:b, s:{s:o, s:o, s:o}, s:o, s:o, s:o, s:o, s:o}", "schema",
		HW_JSON_SCHEMA, "sysfs", S(hw_ctx_sysfs(ctx)), "devfs", S(hw_ctx_devfs(ctx)),
		"rdma_present", node->n_rdma > 0, "kernel", "netns_mode",
		node->kernel.netns_mode < 0
			? json_null()
			: json_string(node->kernel.netns_mode ? "shared" : "exclusive"),
		"uverbs_abi",
		node->kernel.uverbs_abi < 0 ? json_null() : json_integer(node->kernel.uverbs_abi),
		"modules", modules, "rdma_devices", rdma, "pci", pci, "netdevs", netdevs,
		"char_devices", chardevs, "gpus", gpus);
}
