/* SPDX-License-Identifier: Apache-2.0 */
/* Building pools over one hardware load: members, their char devices, health inputs and _INFO
 * entries. No I/O here: members come from struct hw_node, health from struct pool_health_input
 * values that health.c re-reads and judges; allocate.c prepares the answers. */
#include "pool/pool.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/allocate.h"
#include "pool/select.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* ---- building: input table ---------------------------------------------------------- */

struct builder {
	struct pool_health_input *in;
	size_t n, cap;
};

/* Index of an input, added if new. Linear search over a hash would matter only beyond a few
 * thousand inputs; cx7-rail-1016vf has ~3000 and the build runs at load time only. */
static int input_add(struct builder *b, enum pool_health_kind kind, const char *name, unsigned port,
		     int value, size_t *ret)
{
	for (size_t i = b->n; i-- > 0;)
		if (b->in[i].kind == kind && b->in[i].port == port &&
		    strcmp(b->in[i].name, name) == 0) {
			*ret = i;
			return 0;
		}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct pool_health_input *n = realloc(b->in, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->in = n;
		b->cap = cap;
	}
	b->in[b->n] =
		(struct pool_health_input){ .kind = kind, .port = port, .value = value, .fd = -1 };
	snprintf(b->in[b->n].name, sizeof(b->in[b->n].name), "%s", name);
	*ret = b->n++;
	return 0;
}

static int member_input(struct builder *b, struct pool_member *m, enum pool_health_kind kind,
			const char *name, unsigned port, int value)
{
	size_t idx, *n;
	int r;

	r = input_add(b, kind, name, port, value, &idx);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m->n_inputs; i++)
		if (m->inputs[i] == idx)
			return 0;
	n = realloc(m->inputs, (m->n_inputs + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->inputs = n;
	m->inputs[m->n_inputs++] = idx;
	return 0;
}

/* ---- building: char devices --------------------------------------------------------- */

static int spec_add(struct pool_member *m, const char *rel)
{
	struct kubelet_device_spec *n;
	char *path;

	if (asprintf(&path, "/dev/%s", rel) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_specs; i++)
		if (strcmp(m->specs[i].host_path, path) == 0) {
			free(path);
			return 0;
		}
	n = realloc(m->specs, (m->n_specs + 1) * sizeof(*n));
	if (!n) {
		free(path);
		return -ENOMEM;
	}
	m->specs = n;
	/* one string for both (host path == container path): a 1016-VF pool's three nodes each */
	m->specs[m->n_specs] =
		(struct kubelet_device_spec){ .container_path = path, .host_path = path };
	strcpy(m->specs[m->n_specs].permissions, "rw");
	m->n_specs++;
	return 0;
}

/* Only nodes present in devfs: a DeviceSpec whose host path is missing makes the runtime
 * fail the container (the anchors' "issm not found" / "rdma_cm not found" issues are the
 * opposite failure: the whole device dropped for one optional node). */
static int chardev_add(struct pool_member *m, const struct hw_chardev *c, json_t *info)
{
	if (!c || !c->node.present)
		return 0;
	if (info) {
		char path[64];

		snprintf(path, sizeof(path), "/dev/%s", c->node.path);
		/* the anchor's _INFO map has one key per kind; multi-port devices keep the first */
		if (!json_object_get(info, hw_chardev_kind_name(c->kind)))
			json_object_set_new(info, hw_chardev_kind_name(c->kind), json_string(path));
	}
	return spec_add(m, c->node.path);
}

static const struct hw_chardev *rdma_cm_of(const struct hw_node *node)
{
	for (size_t i = 0; i < node->n_chardevs; i++)
		if (node->chardevs[i].kind == HW_CHR_RDMA_CM)
			return &node->chardevs[i];
	return NULL;
}

bool pool_list_next(const char **s, const char **item, size_t *len)
{
	*s += strspn(*s, ",");
	if (!**s)
		return false;
	*item = *s;
	*len = strcspn(*s, ",");
	*s += *len;
	return true;
}

int pool_list_add(char **list, const char *item)
{
	size_t il;

	if (!item || !*item)
		return 0;
	il = strlen(item);
	/* no duplicates: "mlx5_0,mlx5_0" helps nobody */
	for (const char *c = *list; c && (c = strstr(c, item)); c++)
		if ((c == *list || c[-1] == ',') && (c[il] == ',' || c[il] == '\0'))
			return 0;
	return str_append_sep(list, ",", "%s", item);
}

/* Everything one RDMA device contributes to a member: char devices, health inputs, names. */
static int member_add_rdma(struct builder *b, struct pool_member *m, const struct hw_rdma_dev *dev,
			   const struct hw_node *node, json_t *info)
{
	int r;

	if ((r = pool_list_add(&m->rdma, dev->name)) < 0)
		return r;
	if ((!dev->uverbs || !dev->uverbs->node.present) && !m->static_fault &&
	    asprintf(&m->static_fault, "%s has no /dev/infiniband/%s", dev->name,
		     dev->uverbs ? dev->uverbs->name : "uverbs node") < 0) {
		m->static_fault = NULL;
		return -ENOMEM;
	}
	if ((r = chardev_add(m, dev->uverbs, info)) < 0)
		return r;
	HW_DEV_FOREACH_PORT(dev, p)
	{
		if ((r = chardev_add(m, p->umad, info)) < 0 ||
		    (r = chardev_add(m, p->issm, info)) < 0)
			return r;
		if ((r = member_input(b, m, POOL_HEALTH_PORT, dev->name, p->num, p->state)) < 0)
			return r;
		if (p->netdev) {
			if ((r = pool_list_add(&m->netdevs, p->netdev->name)) < 0)
				return r;
			if ((r = member_input(b, m, POOL_HEALTH_CARRIER, p->netdev->name, 0,
					      p->netdev->carrier)) < 0)
				return r;
		}
	}
	if (info)
		json_object_set_new(info, "rdma_dev", json_string(dev->name));
	return chardev_add(m, rdma_cm_of(node), info);
}

/* ---- shared pools -------------------------------------------------------------------- */

static int build_shared(struct builder *b, struct pool *p, const struct hw_node *node)
{
	const struct pool_resource *res = p->res;

	p->m = calloc(node->n_rdma + 1, sizeof(*p->m));
	if (!p->m)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &node->rdma[i];
		struct pool_member *m = &p->m[p->n_m];
		bool sel = false;
		int r;

		for (size_t s = 0; s < res->n_sels && !sel; s++)
			sel = pool_select_rdma_dev(&res->sels[s], dev);
		if (!sel)
			continue;
		snprintf(m->id, sizeof(m->id), "%s", dev->name);
		m->numa = dev->pci ? dev->pci->numa_node : -1;
		m->vf_index = -1;
		p->n_m++;
		if ((r = member_add_rdma(b, m, dev, node, NULL)) < 0)
			return r;
	}
	return 0;
}

/* ---- exclusive pools ----------------------------------------------------------------- */

/* The member a previous set had for id in the resource of the same name, or NULL. */
static const struct pool_member *prev_member(const struct pool_set *prev, const char *resource,
					     const char *id)
{
	for (size_t i = 0; prev && i < prev->n; i++)
		if (!strcmp(prev->pools[i].res->full_name, resource))
			return pool_member_find(&prev->pools[i], id);
	return NULL;
}

/* The "rdma" object of a member's prepared _INFO entry: <0 error, 0 none, 1 found (*ret). The
 * entry is kept, not the object apart: that copy was a fifth of a 1016-VF pool's memory. */
static int info_rdma(const struct pool_member *m, json_t **ret)
{
	_cleanup_free_ char *doc = NULL;
	json_t *o, *rdma;

	if (!m->info)
		return 0;
	if (asprintf(&doc, "{%s}", m->info) < 0)
		return -ENOMEM;
	o = json_loads(doc, 0, NULL);
	if (!o)
		return -ENOMEM; /* we wrote it: only memory can fail */
	rdma = json_object_get(json_object_get(o, m->id), "rdma");
	if (rdma)
		*ret = json_incref(rdma);
	json_decref(o);
	return rdma ? 1 : 0;
}

/* An in-pod VF keeps what it had (char devices, _INFO's rdma object in *rdma) when the plugin
 * saw it before. */
static int member_carry(struct pool_member *m, const struct pool_member *old, json_t **rdma)
{
	int r;

	if (!old)
		return 0;
	free(m->rdma);
	if (!(m->rdma = strdup(old->rdma)))
		return -ENOMEM;
	for (size_t i = 0; i < old->n_specs; i++)
		if ((r = spec_add(m, old->specs[i].host_path + strlen("/dev/"))) < 0)
			return r;
	return info_rdma(old, rdma);
}

/* The member's entry of PCIDEVICE_<..>_INFO as sriov-network-device-plugin writes it:
 * "<id>":{"extraInfo":{...},"generic":{"deviceID":"<id>"},"rdma":{...}}, keys sorted. */
static int member_info_prepare(const struct pool_resource *res, struct pool_member *m, json_t *rdma)
{
	json_t *dev = json_pack("{s:{s:s}}", "generic", "deviceID", m->id),
	       *key = json_string(m->id);
	_cleanup_free_ char *k = NULL, *v = NULL;

	if (!dev || !key)
		goto oom;
	if (rdma && json_object_set(dev, "rdma", rdma) < 0)
		goto oom;
	if (res->additional_info) {
		json_t *ai = json_loads(res->additional_info, 0, NULL), *extra = json_object();

		if (ai && extra) {
			json_object_update(extra, json_object_get(ai, "*"));
			json_object_update(extra, json_object_get(ai, m->id));
			if (json_object_size(extra))
				json_object_set(dev, "extraInfo", extra);
		}
		json_decref(ai);
		json_decref(extra);
	}
	k = json_dumps(key, JSON_ENCODE_ANY);
	v = json_dumps(dev, JSON_COMPACT | JSON_SORT_KEYS);
	if (!k || !v || asprintf(&m->info, "%s:%s", k, v) < 0) {
		m->info = NULL;
		goto oom;
	}
	json_decref(dev);
	json_decref(key);
	return 0;
oom:
	json_decref(dev);
	json_decref(key);
	return -ENOMEM;
}

static int build_exclusive(struct builder *b, struct pool *p, const struct hw_node *node,
			   bool *claimed, const struct pool_set *ps)
{
	const struct pool_resource *res = p->res;

	p->m = calloc(node->n_pci + 1, sizeof(*p->m));
	if (!p->m)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_pci; i++) {
		const struct hw_pci *pci = &node->pci[i];
		struct pool_member *m = &p->m[p->n_m];
		bool sel = false, vhost = false;
		json_t *info;
		int r;

		/* like sriov-network-device-plugin, a function belongs to the first resource that
		 * selects it: two pools advertising one VF would let the kubelet hand it out twice */
		bool in_pod;

		if (claimed[i] || !pool_select_pci_candidate(pci))
			continue;
		in_pod = pool_select_vf_in_pod(pci, ps->exclusive_netns);
		for (size_t s = 0; s < res->n_sels; s++)
			if (in_pod ? pool_select_pci_assume_rdma(&res->sels[s], pci)
				   : pool_select_pci(&res->sels[s], pci)) {
				sel = true;
				vhost |= res->sels[s].need_vhost_net;
			}
		if (!sel)
			continue;
		claimed[i] = true;
		m->in_pod = in_pod;
		snprintf(m->id, sizeof(m->id), "%s", pci->bdf);
		snprintf(m->pf, sizeof(m->pf), "%s", pci->physfn ? pci->physfn->bdf : pci->bdf);
		m->vf_index = pci->physfn ? pci->vf_index : -1;
		m->numa = res->exclude_topology ? -1 : pci->numa_node;
		p->n_m++;
		info = json_object();
		if (!info)
			return -ENOMEM;
		for (size_t j = 0; j < pci->n_rdma; j++)
			if ((r = member_add_rdma(b, m, pci->rdma[j], node, info)) < 0) {
				json_decref(info);
				return r;
			}
		for (size_t j = 0; j < pci->n_netdevs; j++) {
			if ((r = pool_list_add(&m->netdevs, pci->netdevs[j]->name)) < 0) {
				json_decref(info);
				return r;
			}
			if ((r = member_input(b, m, POOL_HEALTH_CARRIER, pci->netdevs[j]->name, 0,
					      pci->netdevs[j]->carrier)) < 0) {
				json_decref(info);
				return r;
			}
		}
		/* a VF is only as good as its PF's uplink (sriov-network-device-plugin PR #640):
		 * the PF netdev's carrier and the PF's own RDMA ports */
		if (pci->physfn && pci->physfn->n_netdevs) {
			const struct hw_netdev *pfnd = pci->physfn->netdevs[0];

			if ((r = member_input(b, m, POOL_HEALTH_CARRIER, pfnd->name, 0,
					      pfnd->carrier)) < 0) {
				json_decref(info);
				return r;
			}
		}
		for (size_t j = 0; pci->physfn && j < pci->physfn->n_rdma; j++) {
			const struct hw_rdma_dev *pfdev = pci->physfn->rdma[j];

			HW_DEV_FOREACH_PORT(pfdev, pfp)
			if ((r = member_input(b, m, POOL_HEALTH_PORT, pfdev->name, pfp->num,
					      pfp->state)) < 0) {
				json_decref(info);
				return r;
			}
		}
		if (vhost &&
		    ((r = spec_add(m, "vhost-net")) < 0 || (r = spec_add(m, "net/tun")) < 0)) {
			json_decref(info);
			return r;
		}
		r = 0;
		if (in_pod) {
			json_t *carried = NULL;

			r = member_carry(m, prev_member(ps->opts.prev, res->full_name, m->id),
					 &carried);
			if (r > 0) {
				json_decref(info);
				info = carried;
			}
		}
		if (r >= 0)
			r = member_info_prepare(res, m, json_object_size(info) ? info : NULL);
		json_decref(info);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- set --------------------------------------------------------------------------- */

static void pool_clear(struct pool *p)
{
	for (size_t i = 0; i < p->n_m; i++) {
		struct pool_member *m = &p->m[i];

		free(m->inputs);
		for (size_t j = 0; j < m->n_specs; j++)
			free(m->specs[j].host_path); /* container_path is the same string */
		free(m->specs);
		free(m->info);
		free(m->rdma);
		free(m->netdevs);
		free(m->static_fault);
	}
	free(p->m);
	free(p->devs);
	kubelet_container_alloc_clear(&p->shared);
}

void pool_set_free(struct pool_set *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n; i++)
		pool_clear(&ps->pools[i]);
	free(ps->pools);
	for (size_t i = 0; i < ps->n_inputs; i++)
		if (ps->inputs[i].fd >= 0)
			close(ps->inputs[i].fd);
	free(ps->inputs);
	free(ps);
}

static int member_cmp(const void *a, const void *b)
{
	const struct pool_member *x = a, *y = b;

	return strcmp(x->id, y->id);
}

static void env_key(const struct pool_resource *res, char *buf, size_t n)
{
	char *c;

	/* sriov-network-device-plugin: "PCIDEVICE_" + prefix + "_" + name, upper-cased, with
	 * '.' replaced; kept exactly so that existing consumers find the same variable */
	snprintf(buf, n, "PCIDEVICE_%s_%s", res->prefix, res->name);
	for (c = buf; *c; c++)
		*c = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
}

/* The first RDMA device of list a (comma-separated) that list b has, into buf. */
static bool lists_share(const char *a, const char *b, char *buf, size_t n)
{
	const char *x, *y;
	size_t l, k;

	for (const char *s = a; pool_list_next(&s, &x, &l);)
		for (const char *t = b; pool_list_next(&t, &y, &k);)
			if (k == l && !memcmp(x, y, l)) {
				snprintf(buf, n, "%.*s", (int)l, x);
				return true;
			}
	return false;
}

/* The first RDMA device that a member of p and a member of q both hold, into dev. */
static bool pools_share(const struct pool *p, const struct pool *q, char *dev, size_t n)
{
	for (size_t a = 0; a < p->n_m; a++)
		for (size_t b = 0; b < q->n_m; b++)
			if (lists_share(p->m[a].rdma, q->m[b].rdma, dev, n))
				return true;
	return false;
}

/* The device plugin and the DRA driver keep no common account: an RDMA device in a pool of each
 * could go to two pods. Exclusive pools never share a function (the first resource takes it);
 * a shared pool's members are RDMA devices, which any other pool may also hold. */
static int split_check(const struct pool_set *ps, char *err, size_t errlen)
{
	char dev[HW_NAME_MAX];

	for (size_t i = 0; i < ps->n; i++)
		for (size_t j = 0; j < ps->n; j++) {
			const struct pool *p = &ps->pools[i], *q = &ps->pools[j];

			if (p->res->served_by != POOL_BY_PLUGIN ||
			    q->res->served_by != POOL_BY_DRA ||
			    !pools_share(p, q, dev, sizeof(dev)))
				continue;
			if (err && errlen)
				snprintf(
					err, errlen,
					"%s (%s, the device plugin's) and %s (%s, servedBy \"dra\") "
					"both select %s: a device is handed out by one of them, never "
					"both; narrow one resource's selectors",
					p->res->full_name, p->res->path, q->res->full_name,
					q->res->path, dev);
			return -EINVAL;
		}
	return 0;
}

/* Keep the pools of who (every pool for POOL_BY_ANY). The others' health inputs stay in the
 * set, unused. */
static void keep_served(struct pool_set *ps, int who)
{
	size_t k = 0;

	if (who == POOL_BY_ANY)
		return;
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->pools[i].res->served_by != who) {
			pool_clear(&ps->pools[i]);
			continue;
		}
		if (k != i)
			ps->pools[k] = ps->pools[i];
		k++;
	}
	ps->n = k;
}

int pool_socket_name(const struct pool_resource *res, char *buf, size_t n)
{
	int l = snprintf(buf, n, "rdmak-%s_%s.sock", res->prefix, res->name);

	return l < 0 || (size_t)l >= n ? -ENAMETOOLONG : l;
}

int pool_set_build(const struct pool_config *cfg, const struct hw_node *node,
		   const struct pool_opts *opts, struct pool_set **ret)
{
	struct pool_set *ps;
	struct builder b = { 0 };
	_cleanup_free_ bool *claimed = NULL;
	int r = 0;

	ps = calloc(1, sizeof(*ps));
	claimed = calloc(node->n_pci + 1, sizeof(bool));
	if (!ps || !claimed || !(ps->pools = calloc(cfg->n_res + 1, sizeof(*ps->pools)))) {
		free(ps);
		return -ENOMEM;
	}
	if (opts)
		ps->opts = *opts;
	ps->exclusive_netns = node->kernel.netns_mode == 0;
	for (size_t i = 0; i < cfg->n_res; i++) {
		struct pool *p = &ps->pools[ps->n++];

		p->res = &cfg->res[i];
		p->cdi = ps->opts.cdi;
		/* cut short only where no socket could have it: the plugin refuses such a name
		 * first (check_paths: a unix socket's path) */
		(void)pool_socket_name(p->res, p->socket_name, sizeof(p->socket_name));
		env_key(p->res, p->env_key, sizeof(p->env_key));
		r = p->res->kind == POOL_SHARED ? build_shared(&b, p, node)
						: build_exclusive(&b, p, node, claimed, ps);
		if (r < 0)
			goto fail;
		qsort(p->m, p->n_m, sizeof(*p->m), member_cmp);
		for (size_t j = 0; j < p->n_m; j++)
			if ((!p->m[j].rdma && !(p->m[j].rdma = strdup(""))) ||
			    (!p->m[j].netdevs && !(p->m[j].netdevs = strdup("")))) {
				r = -ENOMEM;
				goto fail;
			}
	}
	ps->opts.prev = NULL;
	ps->opts.err = NULL;
	r = split_check(ps, opts ? opts->err : NULL, opts ? opts->errlen : 0);
	if (r < 0)
		goto fail;
	keep_served(ps, ps->opts.served);
	ps->inputs = b.in;
	ps->n_inputs = b.n;
	b.in = NULL;
	r = pool_set_refresh(ps, NULL);
	if (r < 0)
		goto fail;
	*ret = ps;
	return 0;
fail:
	free(b.in);
	pool_set_free(ps);
	return r;
}

int pool_set_refresh(struct pool_set *ps, bool *changed)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct pool *p = &ps->pools[i];
		int r;

		p->n_healthy_members = 0;
		for (size_t j = 0; j < p->n_m; j++) {
			pool_health_member_judge(ps, &p->m[j]);
			p->n_healthy_members += p->m[j].healthy;
		}
		if ((r = pool_allocate_prepare(ps, p, changed ? &changed[i] : NULL)) < 0)
			return r;
	}
	return 0;
}

const struct pool_member *pool_member_find(const struct pool *p, const char *id)
{
	struct pool_member key;

	if (snprintf(key.id, sizeof(key.id), "%s", id) >= (int)sizeof(key.id))
		return NULL;
	return bsearch(&key, p->m, p->n_m, sizeof(*p->m), member_cmp);
}
