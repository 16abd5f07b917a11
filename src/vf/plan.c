/* SPDX-License-Identifier: Apache-2.0 */
/* Policies → targets (the operator's Apply and mergeConfigs) → steps, and who holds the VFs. */
#include "vf/vf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "doc/doc.h"
#include "kubelet/kubelet.h"
#include "nl/nl.h"
#include "util/strv.h"

/* ---- selection (api/v1/helper.go: Selected, SriovNetworkNicSelector.Selected) --------------- */

static bool node_selected(const struct vf_policy *p, const json_t *labels)
{
	const char *k;
	json_t *v;
	json_object_foreach(p->node_selector, k, v)
	{
		json_t *have = labels ? json_object_get(labels, k) : NULL;
		if (!have || strcmp(json_string_value(have), json_string_value(v)))
			return false;
	}
	return true;
}

static bool in_strv(char **v, const char *s)
{
	for (size_t i = 0; v && v[i]; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

static const char *pf_name(const struct hw_pci *pf)
{
	return pf->n_netdevs ? pf->netdevs[0]->name : "";
}

/* pfNames entry for this PF: 1 with its range (first/last -1 without one), 0 none */
static int pf_name_entry(const struct vf_policy *p, const char *name, int *first, int *last)
{
	for (size_t i = 0; p->pf_names && p->pf_names[i]; i++) {
		const char *e = p->pf_names[i], *hash = strchr(e, '#');
		size_t n = hash ? (size_t)(hash - e) : strlen(e);
		if (strlen(name) != n || strncmp(e, name, n))
			continue;
		*first = *last = -1;
		if (hash)
			sscanf(hash + 1, "%d-%d", first, last);
		return 1;
	}
	return 0;
}

static bool nic_selected(const struct vf_policy *p, const struct hw_pci *pf)
{
	char id[8];
	int a, b;
	/* An empty nicSelector selects nothing (the operator's Apply returns early). */
	if (!p->vendor && !p->device_id && !p->root_devices && !p->pf_names)
		return false;
	snprintf(id, sizeof(id), "%04x", pf->vendor);
	if (p->vendor && strcmp(p->vendor, id))
		return false;
	snprintf(id, sizeof(id), "%04x", pf->device);
	if (p->device_id && strcmp(p->device_id, id))
		return false;
	if (p->root_devices && !in_strv(p->root_devices, pf->bdf))
		return false;
	if (p->pf_names && !pf_name_entry(p, pf_name(pf), &a, &b))
		return false;
	return true;
}

static int cmp_policy(const void *a, const void *b)
{
	const struct vf_policy *x = *(const struct vf_policy *const *)a,
			       *y = *(const struct vf_policy *const *)b;
	if (x->priority != y->priority)
		return x->priority > y->priority
			       ? -1
			       : 1; /* the lowest priority first: the last one wins */
	return strcmp(x->name, y->name);
}

static bool overlaps(const struct vf_group *a, const struct vf_group *b)
{
	return a->first <= b->last && b->first <= a->last;
}

/* mergeConfigs: keep the earlier groups of other resources that do not overlap the new one */
static void merge(const struct vf_target *old, struct vf_target *t, bool equal_priority)
{
	bool merged = false;
	for (size_t i = 0;
	     i < old->n_groups && t->n_groups < sizeof(t->groups) / sizeof(t->groups[0]); i++) {
		const struct vf_group *g = &old->groups[i];
		if (!strcmp(g->resource_name, t->groups[0].resource_name) ||
		    overlaps(g, &t->groups[0])) {
			if (strcmp(g->policy, t->groups[0].policy) &&
			    t->n_overridden < sizeof(t->overridden) / sizeof(t->overridden[0]))
				t->overridden[t->n_overridden++] = g->policy;
			continue;
		}
		t->groups[t->n_groups++] = *g;
		merged = true;
	}
	for (size_t i = 0; i < old->n_overridden &&
			   t->n_overridden < sizeof(t->overridden) / sizeof(t->overridden[0]);
	     i++)
		t->overridden[t->n_overridden++] = old->overridden[i];
	if (!equal_priority && !merged)
		return;
	if (t->mtu < old->mtu)
		t->mtu = old->mtu;
	if (t->num_vfs < old->num_vfs)
		t->num_vfs = old->num_vfs;
}

int vf_resolve(const struct hw_node *node, const struct vf_policies *set, const json_t *labels,
	       struct vf_resolved *ret, char *err, size_t errlen)
{
	const struct vf_policy **sorted = calloc(set->n ? set->n : 1, sizeof(*sorted));
	const char **unselected = calloc(set->n ? set->n : 1, sizeof(*unselected));
	struct vf_target *t = calloc(node->n_pci ? node->n_pci : 1, sizeof(*t));
	size_t n = 0, ns = 0, nu = 0;
	if (!sorted || !t || !unselected) {
		free(sorted);
		free(unselected);
		free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < set->n; i++)
		if (node_selected(&set->p[i], labels))
			sorted[ns++] = &set->p[i];
	qsort(sorted, ns, sizeof(*sorted), cmp_policy);
	for (size_t i = 0; i < ns; i++) {
		const struct vf_policy *p = sorted[i];
		bool equal = i > 0 && sorted[i - 1]->priority == p->priority, any = false;
		for (size_t k = 0; k < node->n_pci; k++) {
			const struct hw_pci *pf = &node->pci[k];
			if (pf->sriov_totalvfs < 0 || pf->physfn || !nic_selected(p, pf))
				continue;
			any = true;
			/* the webhook's check against the PF it selects (validatePolicyForNodeState) */
			if (pf->vendor == 0x15b3 && p->num_vfs > VF_MLX_MAX_VFS) {
				snprintf(
					err, errlen,
					"policy %s: spec.numVfs: %lld is above %d, the most "
					"sriov-network-operator's webhook allows on a Mellanox/NVIDIA "
					"PF (%s): write %d or fewer",
					p->name, p->num_vfs, VF_MLX_MAX_VFS, pf->bdf,
					VF_MLX_MAX_VFS);
				free(sorted);
				free(unselected);
				free(t);
				return -EINVAL;
			}
			struct vf_target nt = { .pf = pf,
						.pf_name = pf_name(pf),
						.policy = p->name,
						.num_vfs = p->num_vfs,
						.mtu = p->mtu,
						.link_type = p->link_type,
						.n_groups = 1,
						.autoprobe = -1 };
			int first = 0, last = (int)p->num_vfs - 1;
			if (pf_name_entry(p, nt.pf_name, &first, &last) && first < 0) {
				first = 0;
				last = (int)p->num_vfs - 1;
			}
			nt.groups[0] = (struct vf_group){ .policy = p->name,
							  .resource_name = p->resource_name,
							  .first = first,
							  .last = last,
							  .is_rdma = p->is_rdma,
							  .mtu = p->mtu };
			size_t j;
			for (j = 0; j < n && t[j].pf != pf; j++)
				;
			if (j < n)
				merge(&t[j], &nt, equal);
			else
				n++;
			t[j] = nt;
		}
		if (!any)
			unselected[nu++] = p->name;
	}
	free(sorted);
	*ret = (struct vf_resolved){ .t = t, .n = n, .unselected = unselected, .n_unselected = nu };
	return 0;
}

void vf_resolved_clear(struct vf_resolved *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->t[i].reported);
	free(r->t);
	free(r->unselected);
	*r = (struct vf_resolved){};
}

enum vf_link_type vf_pf_link(const struct hw_pci *pf)
{
	for (size_t i = 0; i < pf->n_rdma; i++)
		for (size_t k = 0; k < pf->rdma[i]->n_ports; k++) {
			enum hw_link_layer ll = pf->rdma[i]->ports[k].link_layer;
			if (ll != HW_LINK_UNKNOWN)
				return ll == HW_LINK_IB ? VF_LINK_IB : VF_LINK_ETH;
		}
	if (pf->n_netdevs)
		return pf->netdevs[0]->type == 32 ? VF_LINK_IB
						  : VF_LINK_ETH; /* ARPHRD_INFINIBAND */
	return VF_LINK_UNSET;
}

int vf_observe(struct hw_ctx *ctx, struct vf_resolved *r)
{
	struct nl_rt *rt = NULL;
	int ret = 0;

	for (size_t i = 0; i < r->n; i++) {
		struct vf_target *t = &r->t[i];
		char path[96], text[8] = "";
		struct nl_link l;

		snprintf(path, sizeof(path), "bus/pci/devices/%s/sriov_drivers_autoprobe",
			 t->pf->bdf);
		if (hw_ctx_read(ctx, HW_ROOT_SYSFS, path, text, sizeof(text) - 1) > 0 &&
		    (text[0] == '0' || text[0] == '1'))
			t->autoprobe = text[0] - '0';
		/* only an InfiniBand PF's VFs have GUIDs to compare; the PF's netdev must be in
		 * this namespace (a --root of another node's tree names none here) */
		if ((t->link_type == VF_LINK_IB ||
		     (t->link_type == VF_LINK_UNSET && vf_pf_link(t->pf) == VF_LINK_IB)) &&
		    t->pf_name[0] && (rt || nl_rt_open(-1, &rt) >= 0) &&
		    nl_link_get(rt, t->pf_name, &l) > 0 &&
		    nl_link_get_vf_guids(rt, l.ifindex, &t->reported, &t->n_reported) == -ENOMEM)
			ret = -ENOMEM;
	}
	nl_rt_free(rt);
	return ret;
}

/* ---- the kubelet's device-manager checkpoint ------------------------------------------------ */

struct entry {
	const char *pod, *container, *resource;
	json_t *ids;
};

static const struct dispatch_field entry_fields[] = {
	DISPATCH_FIELD("PodUID", JSON_STRING, NULL, offsetof(struct entry, pod),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("ContainerName", JSON_STRING, NULL, offsetof(struct entry, container), 0),
	DISPATCH_FIELD("ResourceName", JSON_STRING, NULL, offsetof(struct entry, resource), 0),
	DISPATCH_FIELD("DeviceIDs", DISPATCH_ANY, NULL, offsetof(struct entry, ids), 0),
	{}
};

static int add_holder(struct vf_holders *h, const struct entry *e, const char *dev)
{
	struct vf_holder *g = realloc(h->h, (h->n + 1) * sizeof(*h->h));
	if (!g)
		return -ENOMEM;
	h->h = g;
	struct vf_holder *x = &h->h[h->n];
	*x = (struct vf_holder){};
	x->pod_uid = strdup(e->pod);
	x->container = strdup(e->container ? e->container : "");
	x->resource = strdup(e->resource ? e->resource : "");
	x->device = strdup(dev);
	h->n++;
	return x->pod_uid && x->container && x->resource && x->device ? 0 : -ENOMEM;
}

static int add_ids(struct vf_holders *h, const struct entry *e, json_t *ids)
{
	json_t *v;
	size_t i;
	json_array_foreach(ids, i, v)
	{
		if (json_is_string(v)) {
			int r = add_holder(h, e, json_string_value(v));
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int read_entry(struct dispatch_ctx *c, const char *path, json_t *elem, size_t i,
		      void *userdata)
{
	struct entry e = {};
	int r = dispatch_run(c, path, elem, entry_fields, DISPATCH_UNKNOWN_ALLOW, &e);
	if (r < 0)
		return r;
	if (json_is_array(e.ids)) /* kubelet before 1.20: a list */
		return add_ids(userdata, &e, e.ids);
	const char *numa;
	json_t *list;
	json_object_foreach(e.ids, numa, list) /* since 1.20: by NUMA node */
		if ((r = add_ids(userdata, &e, list)) < 0) return r;
	return 0;
}

int vf_holders_from_pod_resources(const struct kubelet_pod_devices *d, struct vf_holders *ret)
{
	struct vf_holders h = {};
	for (size_t i = 0; i < d->n; i++)
		for (size_t k = 0; k < d->v[i].n_ids; k++) {
			struct vf_holder *g = realloc(h.h, (h.n + 1) * sizeof(*h.h));
			if (!g) {
				vf_holders_clear(&h);
				return -ENOMEM;
			}
			h.h = g;
			struct vf_holder *x = &h.h[h.n++];
			*x = (struct vf_holder){ .ns = strdup(d->v[i].namespace_),
						 .pod = strdup(d->v[i].pod),
						 .container = strdup(d->v[i].container),
						 .resource = strdup(d->v[i].resource),
						 .device = strdup(d->v[i].ids[k]) };
			if (!x->ns || !x->pod || !x->container || !x->resource || !x->device) {
				vf_holders_clear(&h);
				return -ENOMEM;
			}
		}
	*ret = h;
	return 0;
}

int vf_holders_parse(const char *buf, size_t len, struct vf_holders *ret, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loadb(buf, len, 0, &je);
	if (!doc) {
		snprintf(err, errlen, "line %d: %s", je.line, je.text);
		return -EINVAL;
	}
	struct dispatch_ctx c = { .err = err, .errlen = errlen };
	json_t *data = json_object_get(doc, "Data");
	json_t *entries = data ? json_object_get(data, "PodDeviceEntries") : NULL;
	struct vf_holders h = {};
	int r = 0;
	if (json_is_array(entries))
		r = dispatch_array(&c, "$.Data.PodDeviceEntries", entries, 0, read_entry, &h);
	else if (entries && !json_is_null(entries))
		r = dispatch_fail(&c, "$.Data.PodDeviceEntries", "expected an array");
	json_decref(doc);
	if (r < 0) {
		vf_holders_clear(&h);
		return r;
	}
	*ret = h;
	return 0;
}

void vf_holders_clear(struct vf_holders *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->h[i].pod_uid);
		free(h->h[i].ns);
		free(h->h[i].pod);
		free(h->h[i].container);
		free(h->h[i].resource);
		free(h->h[i].device);
	}
	free(h->h);
	*h = (struct vf_holders){};
}

uint64_t vf_guid(uint64_t pf_guid, unsigned index)
{
	return (UINT64_C(0x02) << 56) | ((uint64_t)((index + 1) & 0xffff) << 40) |
	       (pf_guid & UINT64_C(0xffffffffff));
}

int vf_guid_parse(const char *s, uint64_t *ret)
{
	unsigned a, b, c, d;
	char end;
	if (sscanf(s, "%4x:%4x:%4x:%4x%c", &a, &b, &c, &d, &end) != 4)
		return -EINVAL;
	*ret = ((uint64_t)a << 48) | ((uint64_t)b << 32) | ((uint64_t)c << 16) | d;
	return 0;
}

/* The VFs one step touches, by index below the target's numVfs. */
struct vfset {
	bool *in;
	long long n;
	size_t count;
};

static int vfset_new(struct vfset *v, long long n)
{
	*v = (struct vfset){ .in = calloc(n > 0 ? (size_t)n : 1, sizeof(bool)), .n = n };
	return v->in ? 0 : -ENOMEM;
}

static void vfset_add(struct vfset *v, long long i)
{
	if (i >= 0 && i < v->n && !v->in[i]) {
		v->in[i] = true;
		v->count++;
	}
}

/* {"vfs": count, "vf_indices": [...]} plus extra's members (consumed) */
static json_t *vfset_json(const struct vfset *v, json_t *extra)
{
	json_t *a = json_array(), *o = extra ? extra : json_object();
	for (long long i = 0; a && i < v->n; i++)
		if (v->in[i] && json_array_append_new(a, json_integer(i)) < 0) {
			json_decref(a);
			a = NULL;
		}
	if (!a || !o || json_object_set_new(o, "vf_indices", a) < 0 ||
	    json_object_set_new(o, "vfs", json_integer((json_int_t)v->count)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static const struct hw_pci *vf_at(const struct hw_pci *pf, long long i)
{
	for (size_t k = 0; k < pf->n_vfs; k++)
		if (pf->vfs[k]->vf_index == i)
			return pf->vfs[k];
	return NULL;
}

/* Whether VF i lacks its derived GUIDs: from its RDMA device where the host shows one (what its
 * driver read at probe), else from what the PF reports (vf_observe), else not known: set them. */
static bool guid_stale(const struct vf_target *t, uint64_t pf_guid, long long i)
{
	const struct hw_pci *v = vf_at(t->pf, i);
	uint64_t want = vf_guid(pf_guid, (unsigned)i), g;

	if (!v)
		return true;
	if (v->n_rdma)
		return vf_guid_parse(v->rdma[0]->node_guid, &g) < 0 || g != want;
	for (size_t k = 0; k < t->n_reported; k++)
		if (t->reported[k].vf == (uint32_t)i)
			return t->reported[k].node_guid != want || t->reported[k].port_guid != want;
	return true;
}

/* ---- steps ----------------------------------------------------------------------------------- */

int vf_mlxconfig_command(const struct vf_target *t, bool need_vfs, bool need_link, char *buf,
			 size_t len)
{
	int n = snprintf(buf, len, "mlxconfig -d %s set", t->pf->bdf);
	if (need_vfs)
		n += snprintf(buf + n, len - (size_t)n, " SRIOV_EN=1 NUM_OF_VFS=%lld", t->num_vfs);
	if (need_link) {
		/* a dual-port ConnectX has one PF per port: function 0 is port 1 */
		unsigned fn = (unsigned)(t->pf->bdf[strlen(t->pf->bdf) - 1] - '0');
		n += snprintf(buf + n, len - (size_t)n, " LINK_TYPE_P%u=%d", fn + 1,
			      t->link_type == VF_LINK_IB ? 1 : 2);
	}
	if (!need_vfs && !need_link)
		buf[0] = '\0';
	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

static int step(json_t *steps, const char *when, const char *action, const char *reason,
		json_t *extra)
{
	json_t *s = json_pack("{s:s, s:s, s:s}", "when", when, "action", action, "reason", reason);
	if (s && extra && json_object_update(s, extra) < 0) {
		json_decref(s);
		s = NULL;
	}
	json_decref(extra);
	return doc_append(steps, s);
}

static int holders_of(const struct hw_pci *pf, const struct vf_holders *h, json_t **ret)
{
	json_t *a = json_array();
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; h && i < h->n; i++)
		for (size_t k = 0; k < pf->n_vfs; k++) {
			if (strcmp(h->h[i].device, pf->vfs[k]->bdf))
				continue;
			int r = doc_append(
				a, json_pack("{s:o?, s:o?, s:o?, s:o, s:o, s:s, s:i}", "pod_uid",
					     doc_string(h->h[i].pod_uid), "namespace",
					     doc_string(h->h[i].ns), "pod", doc_string(h->h[i].pod),
					     "container", doc_string(h->h[i].container), "resource",
					     doc_string(h->h[i].resource), "vf", pf->vfs[k]->bdf,
					     "vf_index", pf->vfs[k]->vf_index));
			if (r < 0) {
				json_decref(a);
				return r;
			}
		}
	*ret = a;
	return 0;
}

static const char *autoprobe_text(const struct vf_target *t)
{
	return t->autoprobe == 1 ? "1" : t->autoprobe == 0 ? "0" : "unreadable";
}

/* vf-bind's reason, with the PF's real sriov_drivers_autoprobe: bind VFs without a driver,
 * rebind bound VFs whose GUIDs change */
static void bind_reason(const struct vf_target *t, bool renew, size_t bind, size_t rebind,
			char *buf, size_t len)
{
	int n = 0;

	if (renew) {
		snprintf(buf, len, "sriov_drivers_autoprobe is %s on this PF: %s%s",
			 autoprobe_text(t),
			 t->autoprobe == 1   ? "the kernel binds each new VF"
			 : t->autoprobe == 0 ? "the kernel binds no new VF, each is bound here"
					     : "a new VF left without a driver is bound here",
			 rebind ? "; each is bound again once its GUIDs are set (its driver reads "
				  "them at probe)"
				: "");
		return;
	}
	buf[0] = '\0';
	if (bind)
		n = snprintf(
			buf, len,
			"%zu VFs without a driver (sriov_drivers_autoprobe is %s): bound to it",
			bind, autoprobe_text(t));
	if (rebind && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n,
			 "%s%zu VFs whose GUIDs change: bound again after them (the driver reads "
			 "them at probe)",
			 n ? "; " : "", rebind);
}

/* The steps on single VFs, in the order the driver needs them: their GUIDs, their driver (which
 * reads the GUIDs at probe and makes the netdev anew), their netdevs' MTU. Each lists only the VFs
 * whose state differs from what the policy wants; every VF when the VFs are made anew. */
static int vf_steps(const struct vf_target *t, const char *after, json_t *steps, int *live)
{
	const struct hw_pci *pf = t->pf;
	enum vf_link_type cur = vf_pf_link(pf);
	long long n = t->num_vfs;
	bool renew = n != pf->sriov_numvfs ||
		     (t->link_type != VF_LINK_UNSET && cur != VF_LINK_UNSET && t->link_type != cur);
	bool ib =
		t->link_type == VF_LINK_IB || (t->link_type == VF_LINK_UNSET && cur == VF_LINK_IB);
	uint64_t pg = 0;
	bool pg_known = pf->n_rdma && vf_guid_parse(pf->rdma[0]->node_guid, &pg) >= 0;
	struct vfset gs = {}, bs = {}, ms = {};
	char reason[320];
	json_t *x;
	int r;

	if ((r = vfset_new(&gs, n)) < 0 || (r = vfset_new(&bs, n)) < 0 ||
	    (r = vfset_new(&ms, n)) < 0)
		goto out;
	for (long long i = 0; ib && i < n; i++)
		if (renew || !pg_known || guid_stale(t, pg, i))
			vfset_add(&gs, i);
	if (gs.count) {
		if (!(x = vfset_json(&gs, NULL))) {
			r = -ENOMEM;
			goto out;
		}
		r = step(
			steps, after, "vf-guids",
			!pg_known ? "the PF's GUID is unreadable: the VFs' GUIDs cannot be derived"
			: renew	  ? "new InfiniBand VFs: their GUIDs are 0 until set"
				: "InfiniBand VFs without the GUIDs derived from the PF's GUID and "
				  "their index",
			x);
		(*live)++;
		if (r < 0)
			goto out;
	}
	size_t bind = 0, rebind = 0;
	for (long long i = 0; i < n; i++) {
		const struct hw_pci *v = renew ? NULL : vf_at(pf, i);
		bool unbound = renew ? t->autoprobe != 1 : v && !v->driver[0];
		if (!unbound && !gs.in[i])
			continue;
		vfset_add(&bs, i);
		if (unbound)
			bind++;
		else
			rebind++;
	}
	if (bs.count) {
		bind_reason(t, renew, bind, rebind, reason, sizeof(reason));
		if (!(x = vfset_json(&bs, NULL))) {
			r = -ENOMEM;
			goto out;
		}
		r = step(steps, after, "vf-bind", reason, x);
		(*live)++;
		if (r < 0)
			goto out;
	}
	/* the operator sets each VF group's MTU on its VFs' netdevs, with their kernel driver
	 * (configSriovVFDevices); one step per MTU */
	for (size_t g = 0; g < t->n_groups; g++) {
		long long mtu = t->groups[g].mtu;
		bool seen = mtu <= 0;
		for (size_t e = 0; e < g && !seen; e++)
			seen = t->groups[e].mtu == mtu;
		if (seen)
			continue;
		memset(ms.in, 0, (size_t)(n > 0 ? n : 1) * sizeof(bool));
		ms.count = 0;
		for (size_t e = g; e < t->n_groups; e++) {
			if (t->groups[e].mtu != mtu)
				continue;
			for (long long i = t->groups[e].first; i <= t->groups[e].last && i < n;
			     i++) {
				const struct hw_pci *v = renew ? NULL : vf_at(pf, i);
				const struct hw_netdev *nd =
					v && v->n_netdevs ? v->netdevs[0] : NULL;
				if (renew || bs.in[i] || (nd && nd->mtu != (unsigned)mtu))
					vfset_add(&ms, i);
			}
		}
		if (!ms.count)
			continue;
		snprintf(reason, sizeof(reason),
			 "policy %s's MTU on its VFs' netdevs, as sriov-network-operator sets it%s",
			 t->groups[g].policy,
			 bs.count ? " (a VF bound here gets a new netdev, with the driver's MTU)"
				  : "");
		x = json_pack("{s:I}", "to", (json_int_t)mtu);
		if (!x || !(x = vfset_json(&ms, x))) {
			r = -ENOMEM;
			goto out;
		}
		r = step(steps, after, "vf-mtu", reason, x);
		(*live)++;
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	free(gs.in);
	free(bs.in);
	free(ms.in);
	return r;
}

static int target_json(const struct vf_target *t, const struct vf_holders *holders, json_t **ret,
		       int *live, int *reboot)
{
	const struct hw_pci *pf = t->pf;
	const struct hw_netdev *nd = pf->n_netdevs ? pf->netdevs[0] : NULL;
	enum vf_link_type cur_link = vf_pf_link(pf);
	bool need_vfs = t->num_vfs > pf->sriov_totalvfs;
	bool need_link = t->link_type != VF_LINK_UNSET && cur_link != VF_LINK_UNSET &&
			 t->link_type != cur_link;
	bool is_mlx = pf->vendor == 0x15b3;
	const char *after = need_vfs || need_link ? "after-reboot" : "live";
	char cmd[160], reason[256];
	json_t *steps = json_array(), *held = NULL;
	int r = steps ? holders_of(pf, holders, &held) : -ENOMEM;
	if (r < 0)
		goto fail;
	if (need_vfs || need_link) {
		vf_mlxconfig_command(t, need_vfs, need_link, cmd, sizeof(cmd));
		if (need_vfs)
			snprintf(
				reason, sizeof(reason),
				"numVfs %lld is above sriov_totalvfs %d, the most the firmware allows now; a "
				"firmware setting, read at boot",
				t->num_vfs, pf->sriov_totalvfs);
		else
			snprintf(reason, sizeof(reason),
				 "the port is %s, the policy asks for %s; the link type is a "
				 "firmware setting, read at boot",
				 cur_link == VF_LINK_IB ? "ib" : "eth",
				 t->link_type == VF_LINK_IB ? "ib" : "eth");
		r = step(steps, "reboot", "firmware", reason,
			 is_mlx ? json_pack("{s:s}", "command", cmd)
				: json_pack("{s:s}", "note",
					    "not a Mellanox/NVIDIA NIC: see its vendor's tool"));
		(*reboot)++;
		if (r < 0)
			goto fail;
	}
	if (t->num_vfs != pf->sriov_numvfs) {
		if (pf->sriov_numvfs > 0) {
			snprintf(
				reason, sizeof(reason),
				"the kernel refuses a new number while %d VFs are enabled (EBUSY): 0 first%s",
				pf->sriov_numvfs,
				json_array_size(held) ? "; removes VFs that pods hold" : "");
			r = step(steps, after, "sriov_numvfs", reason,
				 json_pack("{s:i, s:i}", "from", pf->sriov_numvfs, "to", 0));
			(*live)++;
			if (r < 0)
				goto fail;
		}
		if (t->num_vfs > 0) {
			snprintf(reason, sizeof(reason), "policy %s asks for %lld VFs", t->policy,
				 t->num_vfs);
			r = step(steps, after, "sriov_numvfs", reason,
				 json_pack("{s:i, s:I}", "from", 0, "to", (json_int_t)t->num_vfs));
			(*live)++;
			if (r < 0)
				goto fail;
		}
	}
	if (nd && t->num_vfs > 0 && strcmp(nd->operstate, "up") &&
	    strcmp(nd->operstate, "unknown")) {
		r = step(steps, after, "link-up", "a VF passes no traffic while its PF is down",
			 json_pack("{s:o}", "netdev", doc_string(nd->name)));
		(*live)++;
		if (r < 0)
			goto fail;
	}
	if (nd && t->mtu > 0 && (unsigned)t->mtu != nd->mtu) {
		snprintf(reason, sizeof(reason), "policy MTU %lld, the PF has %u", t->mtu, nd->mtu);
		r = step(steps, after, "mtu", reason,
			 json_pack("{s:o, s:i, s:I}", "netdev", doc_string(nd->name), "from",
				   nd->mtu, "to", (json_int_t)t->mtu));
		(*live)++;
		if (r < 0)
			goto fail;
	}
	if ((r = vf_steps(t, after, steps, live)) < 0)
		goto fail;
	json_t *groups = json_array();
	for (size_t i = 0; groups && i < t->n_groups; i++) {
		const struct vf_group *g = &t->groups[i];
		if (doc_append(groups, json_pack("{s:o, s:o, s:i, s:i, s:b}", "policy",
						 doc_string(g->policy), "resourceName",
						 doc_string(g->resource_name), "first", g->first,
						 "last", g->last, "isRdma", g->is_rdma)) < 0) {
			json_decref(groups);
			groups = NULL;
		}
	}
	json_t *lost = json_array();
	for (size_t i = 0; lost && i < t->n_overridden; i++)
		if (doc_append(lost, doc_string(t->overridden[i])) < 0) {
			json_decref(lost);
			lost = NULL;
		}
	char dev[10];
	snprintf(dev, sizeof(dev), "%04x:%04x", pf->vendor, pf->device);
	json_t *o =
		json_pack("{s:s, s:o, s:o, s:s, s:i, s:i, s:I, s:I, s:o, s:o, s:o, s:o}", "pf",
			  pf->bdf, "netdev", doc_string(t->pf_name), "policy",
			  doc_string(t->policy), "device", dev, "totalvfs", pf->sriov_totalvfs,
			  "numvfs", pf->sriov_numvfs, "want_numvfs", (json_int_t)t->num_vfs,
			  "want_mtu", (json_int_t)t->mtu, "groups", groups ? groups : json_null(),
			  "steps", steps, "holders", held, "overridden", lost ? lost : json_null());
	if (!o)
		return -ENOMEM;
	if (pf->n_rdma &&
	    json_object_set_new(o, "pf_guid", json_string(pf->rdma[0]->node_guid)) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	*ret = o;
	return 0;
fail:
	json_decref(steps);
	json_decref(held);
	return r;
}

int vf_plan_build(const struct hw_node *node, const struct vf_resolved *res,
		  const struct vf_holders *holders, json_t **ret)
{
	json_t *pfs = json_array(), *unsel = json_array();
	int live = 0, reboot = 0;
	if (!pfs || !unsel) {
		json_decref(pfs);
		json_decref(unsel);
		return -ENOMEM;
	}
	for (size_t i = 0; i < res->n; i++) {
		json_t *o;
		int r = target_json(&res->t[i], holders, &o, &live, &reboot);
		if (r < 0 || (r = doc_append(pfs, o)) < 0) {
			json_decref(pfs);
			json_decref(unsel);
			return r;
		}
	}
	for (size_t i = 0; i < res->n_unselected; i++)
		if (doc_append(unsel, doc_string(res->unselected[i])) < 0) {
			json_decref(pfs);
			json_decref(unsel);
			return -ENOMEM;
		}
	json_t *doc = json_pack("{s:o, s:o, s:i, s:i}", "pfs", pfs, "unselected", unsel, "live",
				live, "reboot", reboot);
	if (!doc)
		return -ENOMEM;
	*ret = doc;
	return 0;
}
