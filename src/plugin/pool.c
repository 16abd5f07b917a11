/* Pools over one hardware load. No I/O here: members come from struct hw_node, health from
 * struct health_input values that health.c re-reads. */
#include "plugin/pool.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/select.h"
#include "util/cleanup.h"
#include "util/strv.h"

bool health_input_ok(const struct health_input *in)
{
	if (in->gone)
		return false;
	if (in->kind == HEALTH_PORT)
		return hw_port_state_is_active((enum hw_port_state)in->value);
	/* carrier -1: unreadable (an admin-down link answers EINVAL); its port state decides */
	return in->value != 0;
}

void health_input_describe(const struct health_input *in, char *buf, size_t n)
{
	if (in->gone)
		snprintf(buf, n, "%s gone", in->name);
	else if (in->kind == HEALTH_PORT)
		snprintf(buf, n, "%s port %u %s", in->name, in->port,
			 in->value >= HW_PORT_NOP && in->value <= HW_PORT_ACTIVE_DEFER
				 ? hw_port_state_name((enum hw_port_state)in->value) : "unknown");
	else
		snprintf(buf, n, "%s %s", in->name, in->value == 0 ? "no carrier" : "carrier");
}

/* ---- building: input table ---------------------------------------------------------- */

struct builder {
	struct health_input *in;
	size_t n, cap;
};

/* Index of an input, added if new. Linear search over a hash would matter only beyond a few
 * thousand inputs; cx7-rail-1016vf has ~3000 and the build runs at load time only. */
static int input_add(struct builder *b, enum health_kind kind, const char *name, unsigned port, int value,
		     size_t *ret)
{
	for (size_t i = b->n; i-- > 0;)
		if (b->in[i].kind == kind && b->in[i].port == port && strcmp(b->in[i].name, name) == 0) {
			*ret = i;
			return 0;
		}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct health_input *n = realloc(b->in, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->in = n;
		b->cap = cap;
	}
	b->in[b->n] = (struct health_input){ .kind = kind, .port = port, .value = value, .fd = -1 };
	snprintf(b->in[b->n].name, sizeof(b->in[b->n].name), "%s", name);
	*ret = b->n++;
	return 0;
}

static int member_input(struct builder *b, struct pool_member *m, enum health_kind kind, const char *name,
			unsigned port, int value)
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
	struct kl_device_spec *n;
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
	m->specs[m->n_specs] = (struct kl_device_spec){ .container_path = path, .host_path = strdup(path) };
	if (!m->specs[m->n_specs].host_path)
		return -ENOMEM;
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

static void list_append(char *buf, size_t n, const char *item)
{
	size_t l = strlen(buf);

	if (!item || !*item)
		return;
	/* no duplicates: "mlx5_0,mlx5_0" helps nobody */
	for (const char *c = buf; (c = strstr(c, item)); c++)
		if ((c == buf || c[-1] == ',') && (c[strlen(item)] == ',' || c[strlen(item)] == '\0'))
			return;
	snprintf(buf + l, n - l, "%s%s", l ? "," : "", item);
}

/* list_append() into a string allocated to size (*list may be NULL). */
static int member_list_add(char **list, const char *item)
{
	char buf[1024], *n;

	snprintf(buf, sizeof(buf), "%s", *list ? *list : "");
	list_append(buf, sizeof(buf), item);
	if (*list && !strcmp(buf, *list))
		return 0;
	n = strdup(buf);
	if (!n)
		return -ENOMEM;
	free(*list);
	*list = n;
	return 0;
}

/* Everything one RDMA device contributes to a member: char devices, health inputs, names. */
static int member_add_rdma(struct builder *b, struct pool_member *m, const struct hw_rdma_dev *dev,
			   const struct hw_node *node, json_t *info)
{
	int r;

	if ((r = member_list_add(&m->rdma, dev->name)) < 0)
		return r;
	if ((!dev->uverbs || !dev->uverbs->node.present) && !m->static_fault &&
	    asprintf(&m->static_fault, "%s has no /dev/infiniband/%s", dev->name,
		     dev->uverbs ? dev->uverbs->name : "uverbs node") < 0) {
		m->static_fault = NULL;
		return -ENOMEM;
	}
	if ((r = chardev_add(m, dev->uverbs, info)) < 0)
		return r;
	HW_DEV_FOREACH_PORT(dev, p) {
		if ((r = chardev_add(m, p->umad, info)) < 0 || (r = chardev_add(m, p->issm, info)) < 0)
			return r;
		if ((r = member_input(b, m, HEALTH_PORT, dev->name, p->num, p->state)) < 0)
			return r;
		if (p->netdev) {
			if ((r = member_list_add(&m->netdevs, p->netdev->name)) < 0)
				return r;
			if ((r = member_input(b, m, HEALTH_CARRIER, p->netdev->name, 0, p->netdev->carrier)) < 0)
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
	const struct plugin_resource *res = p->res;

	p->m = calloc(node->n_rdma + 1, sizeof(*p->m));
	if (!p->m)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &node->rdma[i];
		struct pool_member *m = &p->m[p->n_m];
		bool sel = false;
		int r;

		for (size_t s = 0; s < res->n_sels && !sel; s++)
			sel = select_rdma_dev(&res->sels[s], dev);
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
static const struct pool_member *prev_member(const struct pool_set *prev, const char *resource, const char *id)
{
	for (size_t i = 0; prev && i < prev->n; i++)
		if (!strcmp(prev->pools[i].res->full_name, resource))
			return pool_member_find(&prev->pools[i], id);
	return NULL;
}

/* An in-pod VF keeps what it had (char devices, _INFO) when the plugin saw it before. */
static int member_carry(struct pool_member *m, const struct pool_member *old)
{
	if (!old)
		return 0;
	free(m->rdma);
	if (!(m->rdma = strdup(old->rdma)))
		return -ENOMEM;
	for (size_t i = 0; i < old->n_specs; i++) {
		int r = spec_add(m, old->specs[i].host_path + strlen("/dev/"));

		if (r < 0)
			return r;
	}
	if (old->rdma_info && !(m->rdma_info = strdup(old->rdma_info)))
		return -ENOMEM;
	return 0;
}

/* The member's entry of PCIDEVICE_<..>_INFO as sriov-network-device-plugin writes it:
 * "<id>":{"extraInfo":{...},"generic":{"deviceID":"<id>"},"rdma":{...}}, keys sorted. */
static int member_info_prepare(const struct plugin_resource *res, struct pool_member *m)
{
	json_t *dev = json_pack("{s:{s:s}}", "generic", "deviceID", m->id), *key = json_string(m->id);
	_cleanup_free_ char *k = NULL, *v = NULL;

	if (!dev || !key)
		goto oom;
	if (m->rdma_info)
		json_object_set_new(dev, "rdma", json_loads(m->rdma_info, 0, NULL));
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

static int build_exclusive(struct builder *b, struct pool *p, const struct hw_node *node, bool *claimed,
			   const struct pool_set *ps)
{
	const struct plugin_resource *res = p->res;

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

		if (claimed[i] || !select_pci_candidate(pci))
			continue;
		in_pod = select_vf_in_pod(pci, ps->exclusive_netns);
		for (size_t s = 0; s < res->n_sels; s++)
			if (in_pod ? select_pci_assume_rdma(&res->sels[s], pci) : select_pci(&res->sels[s], pci)) {
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
			if ((r = member_list_add(&m->netdevs, pci->netdevs[j]->name)) < 0) {
				json_decref(info);
				return r;
			}
			if ((r = member_input(b, m, HEALTH_CARRIER, pci->netdevs[j]->name, 0, pci->netdevs[j]->carrier)) < 0) {
				json_decref(info);
				return r;
			}
		}
		/* a VF is only as good as its PF's uplink (sriov-network-device-plugin PR #640):
		 * the PF netdev's carrier and the PF's own RDMA ports */
		if (pci->physfn && pci->physfn->n_netdevs) {
			const struct hw_netdev *pfnd = pci->physfn->netdevs[0];

			if ((r = member_input(b, m, HEALTH_CARRIER, pfnd->name, 0, pfnd->carrier)) < 0) {
				json_decref(info);
				return r;
			}
		}
		for (size_t j = 0; pci->physfn && j < pci->physfn->n_rdma; j++) {
			const struct hw_rdma_dev *pfdev = pci->physfn->rdma[j];

			HW_DEV_FOREACH_PORT(pfdev, pfp)
				if ((r = member_input(b, m, HEALTH_PORT, pfdev->name, pfp->num, pfp->state)) < 0) {
					json_decref(info);
					return r;
				}
		}
		if (vhost && ((r = spec_add(m, "vhost-net")) < 0 || (r = spec_add(m, "net/tun")) < 0)) {
			json_decref(info);
			return r;
		}
		m->rdma_info = pci->n_rdma ? json_dumps(info, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(info);
		if (pci->n_rdma && !m->rdma_info)
			return -ENOMEM;
		if (in_pod && (r = member_carry(m, prev_member(ps->opts.prev, res->full_name, m->id))) < 0)
			return r;
		if ((r = member_info_prepare(res, m)) < 0)
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
		for (size_t j = 0; j < m->n_specs; j++) {
			free(m->specs[j].container_path);
			free(m->specs[j].host_path);
		}
		free(m->specs);
		free(m->rdma_info);
		free(m->info);
		free(m->rdma);
		free(m->netdevs);
		free(m->static_fault);
	}
	free(p->m);
	free(p->devs);
	kl_container_alloc_clear(&p->shared);
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

static void env_key(const struct plugin_resource *res, char *buf, size_t n)
{
	char *c;

	/* sriov-network-device-plugin: "PCIDEVICE_" + prefix + "_" + name, upper-cased, with
	 * '.' replaced; kept exactly so that existing consumers find the same variable */
	snprintf(buf, n, "PCIDEVICE_%s_%s", res->prefix, res->name);
	for (c = buf; *c; c++)
		*c = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
}

int pool_set_build(const struct plugin_config *cfg, const struct hw_node *node, const struct pool_opts *opts,
		   struct pool_set **ret)
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
		snprintf(p->socket_name, sizeof(p->socket_name), "rdmak-%s_%s.sock", p->res->prefix, p->res->name);
		env_key(p->res, p->env_key, sizeof(p->env_key));
		r = p->res->kind == PLUGIN_SHARED ? build_shared(&b, p, node) : build_exclusive(&b, p, node, claimed, ps);
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

/* ---- health and prepared answers ----------------------------------------------------- */

static void member_health(const struct pool_set *ps, struct pool_member *m)
{
	m->healthy = !m->static_fault;
	for (size_t i = 0; i < m->n_inputs && m->healthy; i++)
		if (!health_input_ok(&ps->inputs[m->inputs[i]])) {
			m->healthy = false;
			m->bad_input = i;
		}
}

void pool_member_reason(const struct pool_set *ps, const struct pool_member *m, char *buf, size_t n)
{
	if (m->healthy)
		snprintf(buf, n, "%s", "");
	else if (m->static_fault)
		snprintf(buf, n, "%s", m->static_fault);
	else
		health_input_describe(&ps->inputs[m->inputs[m->bad_input]], buf, n);
}

static char *expand(const char *tmpl, const char *hcas, const char *netdevs)
{
	size_t cap = strlen(tmpl) + 1, l = 0;
	char *out;

	for (const char *c = tmpl; (c = strstr(c, "${")); c++)
		cap += strlen(hcas) + strlen(netdevs);
	out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *c = tmpl; *c;) {
		if (!strncmp(c, "${hcas}", 7)) {
			l += (size_t)sprintf(out + l, "%s", hcas);
			c += 7;
		} else if (!strncmp(c, "${netdevs}", 10)) {
			l += (size_t)sprintf(out + l, "%s", netdevs);
			c += 10;
		} else {
			out[l++] = *c++;
		}
	}
	out[l] = '\0';
	return out;
}

static int kv_push(struct kl_kv **v, size_t *n, const char *k, char *val /* owned */)
{
	struct kl_kv *nv;

	if (!val)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, k)) {
			free((*v)[i].value);
			(*v)[i].value = val;
			return 0;
		}
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv) {
		free(val);
		return -ENOMEM;
	}
	*v = nv;
	nv[*n].key = strdup(k);
	nv[*n].value = val;
	if (!nv[*n].key)
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int specs_push(struct kl_container_alloc *a, const struct kl_device_spec *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct kl_device_spec *nd;
		bool dup = false;

		for (size_t j = 0; j < a->n_devices && !dup; j++)
			dup = !strcmp(a->devices[j].host_path, s[i].host_path);
		if (dup)
			continue;
		nd = realloc(a->devices, (a->n_devices + 1) * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		a->devices = nd;
		nd[a->n_devices] = (struct kl_device_spec){ .container_path = strdup(s[i].container_path),
							    .host_path = strdup(s[i].host_path) };
		memcpy(nd[a->n_devices].permissions, s[i].permissions, sizeof(s[i].permissions));
		a->n_devices++;
		if (!nd[a->n_devices - 1].container_path || !nd[a->n_devices - 1].host_path)
			return -ENOMEM;
	}
	return 0;
}

static int cdi_push(struct kl_container_alloc *a, const char *kind, const char *name)
{
	char **n = realloc(a->cdi_devices, (a->n_cdi_devices + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	a->cdi_devices = n;
	if (asprintf(&n[a->n_cdi_devices], "%s=%s", kind, name) < 0)
		return -ENOMEM;
	a->n_cdi_devices++;
	return 0;
}

static int envs_push(struct kl_container_alloc *a, const struct plugin_resource *res, const char *hcas,
		     const char *netdevs)
{
	for (size_t i = 0; i < res->n_envs; i++) {
		int r = kv_push(&a->envs, &a->n_envs, res->envs[i].name, expand(res->envs[i].value, hcas, netdevs));

		if (r < 0)
			return r;
	}
	return 0;
}

/* Shared pools answer every container alike: every char device of each healthy HCA. */
static int prepare_shared(const struct pool_set *ps, struct pool *p)
{
	char hcas[1024] = "", netdevs[1024] = "", why[160] = "";
	int r;

	kl_container_alloc_clear(&p->shared);
	p->shared_ok = false;
	for (size_t i = 0; i < p->n_m; i++) {
		const struct pool_member *m = &p->m[i];

		if (!m->healthy) {
			if (!why[0])
				pool_member_reason(ps, m, why, sizeof(why));
			continue;
		}
		list_append(hcas, sizeof(hcas), m->id);
		list_append(netdevs, sizeof(netdevs), m->netdevs);
		if (ps->opts.cdi) {
			if ((r = cdi_push(&p->shared, p->res->full_name, m->id)) < 0)
				return r;
		} else if ((r = specs_push(&p->shared, m->specs, m->n_specs)) < 0) {
			return r;
		}
	}
	if (!hcas[0]) {
		if (why[0])
			snprintf(p->shared_refusal, sizeof(p->shared_refusal), "%s: no healthy RDMA device (%s)",
				 p->res->full_name, why);
		else
			snprintf(p->shared_refusal, sizeof(p->shared_refusal), "%s: no RDMA device matches the selectors",
				 p->res->full_name);
		return 0;
	}
	if ((r = envs_push(&p->shared, p->res, hcas, netdevs)) < 0)
		return r;
	p->shared_ok = true;
	return 0;
}

static int shared_numa(const struct pool *p)
{
	int numa = -2;

	if (p->res->exclude_topology)
		return -1;
	for (size_t i = 0; i < p->n_m; i++) {
		if (!p->m[i].healthy)
			continue;
		if (numa == -2)
			numa = p->m[i].numa;
		else if (numa != p->m[i].numa)
			return -1; /* HCAs on several nodes: no single hint is true */
	}
	return numa < 0 ? -1 : numa;
}

static int prepare_devs(struct pool *p, bool *changed)
{
	size_t n = p->res->kind == PLUGIN_SHARED ? (p->n_healthy_members || p->n_m ? p->res->rdma_hca_max : 0) : p->n_m;
	struct kl_device *d = calloc(n + 1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	if (p->res->kind == PLUGIN_SHARED) {
		/* rdmaHcaMax ids, Healthy while one HCA is; an empty pool advertises nothing */
		int numa = shared_numa(p);

		for (size_t i = 0; i < n; i++) {
			snprintf(d[i].id, sizeof(d[i].id), "%zu", i);
			d[i].healthy = p->n_healthy_members > 0;
			d[i].numa_node = numa;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			snprintf(d[i].id, sizeof(d[i].id), "%s", p->m[i].id);
			d[i].healthy = p->m[i].healthy;
			d[i].numa_node = p->m[i].numa;
		}
	}
	if (changed)
		*changed = n != p->n_devs || (n && memcmp(d, p->devs, n * sizeof(*d)) != 0);
	free(p->devs);
	p->devs = d;
	p->n_devs = n;
	return 0;
}

int pool_set_refresh(struct pool_set *ps, bool *changed)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct pool *p = &ps->pools[i];
		int r;

		p->n_healthy_members = 0;
		for (size_t j = 0; j < p->n_m; j++) {
			member_health(ps, &p->m[j]);
			p->n_healthy_members += p->m[j].healthy;
		}
		if (p->res->kind == PLUGIN_SHARED && (r = prepare_shared(ps, p)) < 0)
			return r;
		if ((r = prepare_devs(p, changed ? &changed[i] : NULL)) < 0)
			return r;
	}
	return 0;
}

/* ---- hot path ----------------------------------------------------------------------- */

const struct pool_member *pool_member_find(const struct pool *p, const char *id)
{
	struct pool_member key;

	if (snprintf(key.id, sizeof(key.id), "%s", id) >= (int)sizeof(key.id))
		return NULL;
	return bsearch(&key, p->m, p->n_m, sizeof(*p->m), member_cmp);
}

static int copy_alloc(const struct kl_container_alloc *src, struct kl_container_alloc *out)
{
	int r;

	if ((r = specs_push(out, src->devices, src->n_devices)) < 0)
		return r;
	for (size_t i = 0; i < src->n_envs; i++)
		if ((r = kv_push(&out->envs, &out->n_envs, src->envs[i].key, strdup(src->envs[i].value))) < 0)
			return r;
	for (size_t i = 0; i < src->n_cdi_devices; i++) {
		char **n = realloc(out->cdi_devices, (out->n_cdi_devices + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		out->cdi_devices = n;
		if (!(n[out->n_cdi_devices] = strdup(src->cdi_devices[i])))
			return -ENOMEM;
		out->n_cdi_devices++;
	}
	return 0;
}

static int member_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct pool_member *const *)a)->id, (*(const struct pool_member *const *)b)->id);
}

/* _INFO: the members' prepared entries, by id (as JSON_SORT_KEYS would), each once. */
static char *info_join(const struct pool_member **ms, size_t n)
{
	size_t len = 3, l = 0;
	char *s;

	qsort(ms, n, sizeof(*ms), member_ptr_cmp);
	for (size_t i = 0; i < n; i++)
		len += strlen(ms[i]->info) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	s[l++] = '{';
	for (size_t i = 0; i < n; i++) {
		size_t il = strlen(ms[i]->info);

		if (i && ms[i] == ms[i - 1])
			continue;
		if (l > 1)
			s[l++] = ',';
		memcpy(s + l, ms[i]->info, il);
		l += il;
	}
	s[l++] = '}';
	s[l] = '\0';
	return s;
}

/* The hot path: lookups and copies of what the build prepared; no JSON, no I/O. */
static int allocate_exclusive(const struct pool *p, const char *const *ids, size_t n, bool cdi,
			      struct kl_container_alloc *out, char **msg)
{
	_cleanup_free_ char *list = NULL, *hcas = NULL, *netdevs = NULL;
	_cleanup_free_ const struct pool_member **ms = NULL;
	size_t ll = 0, cap = n * (HW_BDF_MAX + 1) + 1;
	char key[sizeof(p->env_key) + 8];
	int r;

	list = calloc(1, cap);
	hcas = calloc(1, n * 130 + 1);
	netdevs = calloc(1, n * 130 + 1);
	ms = calloc(n + 1, sizeof(*ms));
	if (!list || !hcas || !netdevs || !ms)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pool_member *m = pool_member_find(p, ids[i]);

		if (!m) {
			if (asprintf(msg, "%s: unknown device %s", p->res->full_name, ids[i]) < 0)
				*msg = NULL;
			return -ENOENT;
		}
		ms[i] = m;
		ll += (size_t)snprintf(list + ll, cap - ll, "%s%s", i ? "," : "", m->id);
		list_append(hcas, n * 130 + 1, m->rdma);
		list_append(netdevs, n * 130 + 1, m->netdevs);
		if (cdi) {
			if ((r = cdi_push(out, p->res->full_name, m->id)) < 0)
				return r;
		} else if ((r = specs_push(out, m->specs, m->n_specs)) < 0) {
			return r;
		}
	}
	if ((r = kv_push(&out->envs, &out->n_envs, p->env_key, strdup(list))) < 0)
		return r;
	snprintf(key, sizeof(key), "%s_INFO", p->env_key);
	if ((r = kv_push(&out->envs, &out->n_envs, key, info_join(ms, n))) < 0)
		return r;
	return envs_push(out, p->res, hcas, netdevs);
}

int pool_allocate(const struct pool *p, const char *const *ids, size_t n, struct kl_container_alloc *out, char **msg)
{
	int r;

	*msg = NULL;
	if (p->res->kind == PLUGIN_SHARED) {
		if (!p->shared_ok) {
			*msg = strdup(p->shared_refusal);
			return -ENODEV;
		}
		r = copy_alloc(&p->shared, out);
	} else {
		r = allocate_exclusive(p, ids, n, p->cdi, out, msg);
	}
	if (r < 0) {
		kl_container_alloc_clear(out);
		if (!*msg && r == -ENOMEM)
			*msg = strdup("out of memory");
	}
	return r;
}

/* ---- preferred allocation ------------------------------------------------------------ */

/* O((n + m) log (n + m)) for n available and m must_include ids: sorts and binary searches
 * throughout (rdmaHcaMax may be 100000; a quadratic answer took 22 s there). */

struct cand {
	const char *id;
	const struct pool_member *m;
	size_t pos;       /* in available: of duplicates, the first one counts */
	bool numa_miss;   /* not on the target NUMA node */
	size_t pf_rank;   /* 0: a PF must_include already uses; then by free functions, most first */
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool sorted_has(const char *const *v, size_t n, const char *x)
{
	return n && bsearch(&x, v, n, sizeof(*v), str_cmp) != NULL;
}

static int cand_id_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static const char *cand_pf(const struct cand *c)
{
	return c->m ? c->m->pf : "";
}

static int cand_pf_cmp(const void *a, const void *b)
{
	return strcmp(cand_pf(*(struct cand *const *)a), cand_pf(*(struct cand *const *)b));
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->numa_miss != y->numa_miss)
		return x->numa_miss - y->numa_miss;
	if (x->pf_rank != y->pf_rank)
		return x->pf_rank < y->pf_rank ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* must_include in order, each once, up to size. */
static int preferred_must(const char *const *must_include, size_t n_must, size_t size, char **res, size_t *nres)
{
	_cleanup_free_ struct cand *c = calloc(n_must + 1, sizeof(*c));
	_cleanup_free_ bool *first = calloc(n_must + 1, sizeof(bool));

	if (!c || !first)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++)
		c[i] = (struct cand){ .id = must_include[i], .pos = i };
	qsort(c, n_must, sizeof(*c), cand_id_cmp);
	for (size_t i = 0; i < n_must; i++)
		first[c[i].pos] = i == 0 || strcmp(c[i - 1].id, c[i].id) != 0;
	for (size_t i = 0; i < n_must && *nres < size; i++)
		if (first[i] && !(res[(*nres)++] = strdup(must_include[i])))
			return -ENOMEM;
	return 0;
}

/* The NUMA node with the most candidates (the lowest of equals), or -1. */
static int preferred_numa(const struct cand *c, size_t nc)
{
	_cleanup_free_ int *numa = calloc(nc + 1, sizeof(int));
	size_t n = 0, best = 0;
	int target = -1;

	if (!numa)
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++)
		if (c[i].m && c[i].m->numa >= 0)
			numa[n++] = c[i].m->numa;
	qsort(numa, n, sizeof(*numa), int_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && numa[j] == numa[i]; j++)
			;
		if (j - i > best) {
			best = j - i;
			target = numa[i];
		}
	}
	return target;
}

/* Rank each candidate's PF: one must_include uses, else by how many candidates share it. */
static int preferred_pf_rank(const struct pool *p, struct cand *c, size_t nc, const char *const *must_include,
			     size_t n_must, size_t n_available)
{
	_cleanup_free_ const char **used = calloc(n_must + 1, sizeof(*used));
	_cleanup_free_ struct cand **by_pf = calloc(nc + 1, sizeof(*by_pf));
	size_t n_used = 0, n = 0;

	if (!used || !by_pf)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++) {
		const struct pool_member *mm = pool_member_find(p, must_include[i]);

		if (mm && mm->pf[0])
			used[n_used++] = mm->pf;
	}
	qsort(used, n_used, sizeof(*used), str_cmp);
	for (size_t i = 0; i < nc; i++) {
		c[i].pf_rank = 1 + n_available; /* no PF: after every PF */
		if (cand_pf(&c[i])[0])
			by_pf[n++] = &c[i];
	}
	qsort(by_pf, n, sizeof(*by_pf), cand_pf_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		const char *pf = cand_pf(by_pf[i]);
		bool is_used = sorted_has(used, n_used, pf);

		for (j = i; j < n && strcmp(cand_pf(by_pf[j]), pf) == 0; j++)
			;
		for (size_t k = i; k < j; k++)
			by_pf[k]->pf_rank = is_used ? 0 : 1 + n_available - (j - i);
	}
	return 0;
}

/* must_include first; then the NUMA node of must_include (or the node with the most free
 * devices); then pack PFs: those must_include already uses, then the fullest ones, so that
 * one pod's VFs share a PF and the other PFs stay whole for the next pod (the anchors leave
 * the choice to the kubelet, which picks at random: sriov-network-device-plugin #255). */
int pool_preferred(const struct pool *p, const char *const *available, size_t n_available,
		   const char *const *must_include, size_t n_must, size_t size, char ***out, size_t *n_out)
{
	_cleanup_free_ struct cand *c = NULL;
	_cleanup_free_ const char **must_sorted = NULL;
	char **res;
	size_t nc = 0, nres = 0;
	int target = -1, r;

	res = calloc(size + 1, sizeof(*res));
	c = calloc(n_available + 1, sizeof(*c));
	must_sorted = calloc(n_must + 1, sizeof(*must_sorted));
	if (!res || !c || !must_sorted) {
		free(res);
		return -ENOMEM;
	}
	if ((r = preferred_must(must_include, n_must, size, res, &nres)) < 0)
		goto fail;
	for (size_t i = 0; i < n_must && target < 0; i++) {
		const struct pool_member *m = pool_member_find(p, must_include[i]);

		if (m && m->numa >= 0)
			target = m->numa;
	}
	for (size_t i = 0; i < n_must; i++)
		must_sorted[i] = must_include[i];
	qsort(must_sorted, n_must, sizeof(*must_sorted), str_cmp);
	/* candidates: available less must_include, each once */
	for (size_t i = 0; i < n_available; i++)
		if (!sorted_has(must_sorted, n_must, available[i]))
			c[nc++] = (struct cand){ .id = available[i], .pos = i };
	qsort(c, nc, sizeof(*c), cand_id_cmp);
	{
		size_t k = 0;

		for (size_t i = 0; i < nc; i++)
			if (i == 0 || strcmp(c[i - 1].id, c[i].id) != 0)
				c[k++] = c[i];
		nc = k;
	}
	for (size_t i = 0; i < nc; i++)
		c[i].m = pool_member_find(p, c[i].id);
	if (target < 0 && (target = preferred_numa(c, nc)) == -ENOMEM) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < nc; i++)
		c[i].numa_miss = target >= 0 && (!c[i].m || c[i].m->numa != target);
	if ((r = preferred_pf_rank(p, c, nc, must_include, n_must, n_available)) < 0)
		goto fail;
	qsort(c, nc, sizeof(*c), cand_cmp);
	for (size_t i = 0; i < nc && nres < size; i++)
		if (!(res[nres++] = strdup(c[i].id))) {
			r = -ENOMEM;
			goto fail;
		}
	*out = res;
	*n_out = nres;
	return 0;
fail:
	strv_free(res);
	return r;
}

/* ---- Multus device-info ------------------------------------------------------------- */

int pool_devinfo_name(const struct pool *p, const char *id, char *buf, size_t n)
{
	int l;

	/* the device-info spec's DP path: "<resource name with '/' as '-'>-<id>-device.json" */
	l = snprintf(buf, n, "%s-%s-%s-device.json", p->res->prefix, p->res->name, id);
	if (l < 0 || (size_t)l >= n)
		return -ENAMETOOLONG;
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '-';
	return 0;
}

char *pool_devinfo_json(const struct pool *p, const struct pool_member *m)
{
	json_t *doc;
	char *s;

	doc = json_pack("{s:s, s:s, s:{s:s}}", "type", "pci", "version", "1.1.0", "pci", "pci-address", m->id);
	if (!doc)
		return NULL;
	if (m->rdma[0])
		json_object_set_new(json_object_get(doc, "pci"), "rdma-device", json_string(m->rdma));
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}
