/* SPDX-License-Identifier: Apache-2.0 */
/* SriovNetworkNodePolicy objects (sriovnetwork.openshift.io/v1) read unchanged, through the
 * shared document reader and dispatch tables. The keys and their ranges are the operator's CRD's
 * (api/v1/sriovnetworknodepolicy_types.go); on top of them, what the operator's admission webhook
 * refuses (pkg/webhook/validate.go, staticValidateSriovNetworkNodePolicy and the numVfs checks of
 * validatePolicyForNodeState) is refused here too, by the field's path, so that a policy rdmak
 * takes is one the operator's cluster would have taken. What rdmak vf cannot do is refused by
 * name. */
#include "vf/vf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "util/strv.h"
#include "doc/yaml.h"

#define VF_MAX_DOCS 256

static int read_link_type(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	static const char *const names[] = { "eth", "ETH", "ib", "IB", NULL };
	int i, r = dispatch_enum(c, path, v, names, &i);
	if (r < 0)
		return r;
	*(enum vf_link_type *)target = i < 2 ? VF_LINK_ETH : VF_LINK_IB;
	return 0;
}

static int read_device_type(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	static const char *const names[] = { "netdevice", "vfio-pci", NULL };
	int i, r = dispatch_enum(c, path, v, names, &i);
	if (r < 0)
		return r;
	if (i != 0)
		return dispatch_refuse(
			c, path, v,
			"vfio-pci is not supported: rdmak vf makes RDMA netdevice VFs; a VF bound "
			"to vfio-pci has no RDMA device on the host");
	return 0;
}

static int read_eswitch(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	static const char *const names[] = { "legacy", "switchdev", NULL };
	int i, r = dispatch_enum(c, path, v, names, &i);
	if (r < 0)
		return r;
	if (i != 0)
		return dispatch_refuse(
			c, path, v,
			"switchdev is not supported: rdmak vf keeps the legacy eSwitch");
	return 0;
}

static int read_priority(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	return dispatch_int_range(c, path, v, 0, 99, target);
}

/* 0 is refused as the webhook refuses it ("numVfs(0) ... is not allowed"); the top is
 * sriov_numvfs_store's kstrtou16 */
static int read_num_vfs(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	if (json_is_integer(v) && json_integer_value(v) == 0)
		return dispatch_fail(
			c, path,
			"0 is refused by sriov-network-operator's webhook; to leave a PF as it is, "
			"write no policy for it (rdmak vf changes only the PFs a policy selects)");
	return dispatch_int_range(c, path, v, 1, 65535, target);
}

/* the webhook's ^[a-zA-Z0-9_]+$: the name becomes part of an extended resource name */
static int read_resource_name(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	const char *s = json_string_value(v);
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

	if (!*s || s[n])
		return dispatch_fail(c, path,
				     "\"%s\" has a character other than a letter, a digit or _ "
				     "(sriov-network-operator's webhook takes ^[a-zA-Z0-9_]+$): "
				     "write it with those only",
				     s);
	*(const char **)target = s;
	return 0;
}

/* A PCI vendor or device ID as sysfs and the operator's supported-NIC list write it: 4 lower-case
 * hex digits. The webhook refuses "15B3" and "0x15b3" (not in that list); a policy that wrote
 * them would select no PF. */
static int read_pci_id(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	const char *s = json_string_value(v), *hex = s;
	char want[5];
	size_t n;

	if (!strncmp(hex, "0x", 2) || !strncmp(hex, "0X", 2))
		hex += 2;
	n = strspn(hex, "0123456789abcdefABCDEF");
	if (n == 4 && !hex[n]) {
		for (size_t i = 0; i < 4; i++)
			want[i] = (char)(hex[i] >= 'A' && hex[i] <= 'F' ? hex[i] - 'A' + 'a'
									: hex[i]);
		want[4] = '\0';
		if (strcmp(s, want))
			return dispatch_fail(
				c, path,
				"\"%s\": write \"%s\" (4 lower-case hex digits, as sysfs "
				"and sriov-network-operator write it; its webhook refuses "
				"\"%s\")",
				s, want, s);
		*(const char **)target = s;
		return 0;
	}
	return dispatch_fail(c, path, "\"%s\" is not a PCI ID: expected 4 hex digits (\"15b3\")",
			     s);
}

/* externallyManaged: false is the CRD's default and asks nothing; true asks rdmak to leave the
 * VFs to someone else, which it does not do */
static int read_externally_managed(struct dispatch_ctx *c, const char *path, json_t *v,
				   void *target)
{
	bool b;
	int r = dispatch_bool(c, path, v, &b);

	if (r < 0)
		return r;
	if (b)
		return dispatch_refuse(
			c, path, v,
			"externallyManaged: true is not supported: rdmak vf makes the "
			"VFs itself; remove the key (or write false)");
	return 0;
}

static int read_mtu(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	return dispatch_int_range(c, path, v, 1, 65535, target);
}

static int read_node_selector(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	const char *k;
	json_t *val;
	char p[DISPATCH_PATH_MAX];
	json_object_foreach(v, k, val)
	{
		if (!json_is_string(val)) {
			dispatch_path_key(p, sizeof(p), path, k);
			return dispatch_fail(c, p, "expected a string, got %s",
					     dispatch_type_name(val));
		}
	}
	*(json_t **)target = v;
	return 0;
}

/* "name" or "name#first-last" with 0 <= first <= last (last < numVfs: checked with the spec);
 * [] is no selector, as for the operator (len() == 0) */
static int read_pf_names(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	char **names = NULL;
	int r = dispatch_strv(c, path, v, 0, true, &names);
	if (r < 0)
		return r;
	if (!names[0]) {
		strv_free(names);
		return 0;
	}
	for (size_t i = 0; names[i]; i++) {
		const char *hash = strchr(names[i], '#');
		unsigned a, b;
		char end;
		char p[DISPATCH_PATH_MAX];
		if (!hash)
			continue;
		if (sscanf(hash + 1, "%u-%u%c", &a, &b, &end) != 2 || a > b || hash == names[i]) {
			dispatch_path_idx(p, sizeof(p), path, i);
			strv_free(names);
			return dispatch_fail(c, p,
					     "expected \"<pf>#<first>-<last>\" with first <= last");
		}
	}
	*(char ***)target = names;
	return 0;
}

/* [] is no selector, as for the operator (len() == 0) */
static int read_strv(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	char **names = NULL;
	int r = dispatch_strv(c, path, v, 0, true, &names);

	if (r < 0)
		return r;
	if (!names[0]) {
		strv_free(names);
		names = NULL;
	}
	*(char ***)target = names;
	return 0;
}

static const struct dispatch_field nic_fields[] = {
	DISPATCH_FIELD("vendor", JSON_STRING, read_pci_id, offsetof(struct vf_policy, vendor),
		       DISPATCH_NONEMPTY),
	DISPATCH_FIELD("deviceID", JSON_STRING, read_pci_id, offsetof(struct vf_policy, device_id),
		       DISPATCH_NONEMPTY),
	DISPATCH_FIELD("rootDevices", JSON_ARRAY, read_strv,
		       offsetof(struct vf_policy, root_devices), 0),
	DISPATCH_FIELD("pfNames", JSON_ARRAY, read_pf_names, offsetof(struct vf_policy, pf_names),
		       0),
	DISPATCH_REFUSE(
		"pfName",
		"the CRD has no pfName (write pfNames): the API server drops the key, and the policy "
		"then selects every PF its vendor and deviceID match"),
	DISPATCH_REFUSE("netFilter", "netFilter (OpenStack networks) is not supported"),
	{}
};

/* An empty nicSelector selects no PF (the operator's Apply returns early), and its webhook
 * refuses it: so is it here. */
static int read_nic(struct dispatch_ctx *c, const char *path, json_t *v, void *target)
{
	struct vf_policy *p = target;
	int r = dispatch_run(c, path, v, nic_fields, DISPATCH_UNKNOWN_REFUSE, target);

	if (r < 0)
		return r;
	if (!p->vendor && !p->device_id && !p->root_devices && !p->pf_names)
		return dispatch_fail(
			c, path,
			"selects no PF: name at least one of vendor, deviceID, pfNames "
			"or rootDevices (sriov-network-operator's webhook refuses it too)");
	return 0;
}

static const struct dispatch_field spec_fields[] = {
	DISPATCH_FIELD("resourceName", JSON_STRING, read_resource_name,
		       offsetof(struct vf_policy, resource_name),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	DISPATCH_FIELD("nodeSelector", JSON_OBJECT, read_node_selector,
		       offsetof(struct vf_policy, node_selector), DISPATCH_MANDATORY),
	DISPATCH_FIELD("priority", JSON_INTEGER, read_priority,
		       offsetof(struct vf_policy, priority), 0),
	DISPATCH_FIELD("mtu", JSON_INTEGER, read_mtu, offsetof(struct vf_policy, mtu), 0),
	DISPATCH_FIELD("numVfs", JSON_INTEGER, read_num_vfs, offsetof(struct vf_policy, num_vfs),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("nicSelector", JSON_OBJECT, read_nic, 0, DISPATCH_MANDATORY),
	DISPATCH_FIELD("deviceType", JSON_STRING, read_device_type, 0, 0),
	DISPATCH_FIELD("isRdma", DISPATCH_BOOL, NULL, offsetof(struct vf_policy, is_rdma), 0),
	DISPATCH_FIELD("linkType", JSON_STRING, read_link_type,
		       offsetof(struct vf_policy, link_type), 0),
	DISPATCH_FIELD("eSwitchMode", JSON_STRING, read_eswitch, 0, 0),
	DISPATCH_IGNORE("excludeTopology", "a device plugin setting; rdmak vf makes the VFs only"),
	DISPATCH_REFUSE("needVhostNet", "needVhostNet (DPDK with vfio-pci) is not supported"),
	DISPATCH_REFUSE("vdpaType", "vDPA is not supported"),
	DISPATCH_REFUSE("bridge", "bridge (switchdev OVS) is not supported"),
	DISPATCH_FIELD("externallyManaged", DISPATCH_BOOL, read_externally_managed, 0, 0),
	{}
};

/* What the webhook checks across keys, once the spec is read. */
static int check_spec(struct dispatch_ctx *c, const char *spec, const struct vf_policy *pol)
{
	char p[DISPATCH_PATH_MAX], q[DISPATCH_PATH_MAX], nic[DISPATCH_PATH_MAX];

	for (size_t i = 0; pol->pf_names && pol->pf_names[i]; i++) {
		const char *hash = strchr(pol->pf_names[i], '#');
		unsigned first, last;

		if (!hash || sscanf(hash + 1, "%u-%u", &first, &last) != 2 ||
		    (long long)last < pol->num_vfs)
			continue;
		dispatch_path_key(nic, sizeof(nic), spec, "nicSelector");
		dispatch_path_key(q, sizeof(q), nic, "pfNames");
		dispatch_path_idx(p, sizeof(p), q, i);
		if ((long long)first >= pol->num_vfs)
			return dispatch_fail(
				c, p,
				"VF %u is not below numVfs %lld (VFs are numbered from "
				"0): write a range below it, or a larger numVfs",
				last, pol->num_vfs);
		return dispatch_fail(c, p,
				     "VF %u is not below numVfs %lld (VFs are numbered from 0): "
				     "write \"%.*s#%u-%lld\" or a larger numVfs",
				     last, pol->num_vfs, (int)(hash - pol->pf_names[i]),
				     pol->pf_names[i], first, pol->num_vfs - 1);
	}
	if (pol->link_type == VF_LINK_IB && !pol->is_rdma) {
		dispatch_path_key(p, sizeof(p), spec, "isRdma");
		return dispatch_fail(
			c, p,
			"linkType ib needs isRdma: true (sriov-network-operator's webhook "
			"refuses it without): add isRdma: true");
	}
	if (pol->vendor && !strcmp(pol->vendor, "15b3") && pol->num_vfs > VF_MLX_MAX_VFS) {
		dispatch_path_key(p, sizeof(p), spec, "numVfs");
		return dispatch_fail(c, p,
				     "%lld is above %d, the most sriov-network-operator's webhook "
				     "allows on a Mellanox/NVIDIA PF: write %d or fewer",
				     pol->num_vfs, VF_MLX_MAX_VFS, VF_MLX_MAX_VFS);
	}
	return 0;
}

struct envelope {
	const char *api_version, *kind;
	json_t *metadata, *spec, *items;
};

static const struct dispatch_field envelope_fields[] = {
	DISPATCH_FIELD("apiVersion", JSON_STRING, NULL, offsetof(struct envelope, api_version), 0),
	DISPATCH_FIELD("kind", JSON_STRING, NULL, offsetof(struct envelope, kind),
		       DISPATCH_MANDATORY),
	DISPATCH_FIELD("metadata", JSON_OBJECT, NULL, offsetof(struct envelope, metadata), 0),
	DISPATCH_FIELD("spec", JSON_OBJECT, NULL, offsetof(struct envelope, spec), 0),
	DISPATCH_FIELD("items", JSON_ARRAY, NULL, offsetof(struct envelope, items), 0),
	{}
};

static int add_policy(struct vf_policies *set, struct dispatch_ctx *c, const char *path,
		      json_t *obj)
{
	struct envelope e = {};
	char p[DISPATCH_PATH_MAX];
	int r = dispatch_run(c, path, obj, envelope_fields, DISPATCH_UNKNOWN_ALLOW, &e);
	if (r < 0)
		return r;
	if (e.items && (!strcmp(e.kind, "List") || !strcmp(e.kind, "SriovNetworkNodePolicyList"))) {
		json_t *it;
		size_t i;
		json_array_foreach(e.items, i, it)
		{
			dispatch_path_idx(p, sizeof(p), path, i);
			if (!json_is_object(it))
				return dispatch_fail(c, p, "expected an object, got %s",
						     dispatch_type_name(it));
			if ((r = add_policy(set, c, p, it)) < 0)
				return r;
		}
		return 0;
	}
	dispatch_path_key(p, sizeof(p), path, "kind");
	if (strcmp(e.kind, "SriovNetworkNodePolicy"))
		return dispatch_fail(
			c, p, "expected SriovNetworkNodePolicy (or a List of them), got \"%s\"",
			e.kind);
	if (e.api_version && strcmp(e.api_version, "sriovnetwork.openshift.io/v1")) {
		dispatch_path_key(p, sizeof(p), path, "apiVersion");
		return dispatch_fail(c, p, "expected sriovnetwork.openshift.io/v1");
	}
	json_t *name = e.metadata ? json_object_get(e.metadata, "name") : NULL;
	if (!json_is_string(name) || !*json_string_value(name)) {
		dispatch_path_key(p, sizeof(p), path, "metadata.name");
		return dispatch_fail(c, p,
				     "missing (the operator orders equal priorities by name)");
	}
	if (!e.spec) {
		dispatch_path_key(p, sizeof(p), path, "spec");
		return dispatch_fail(c, p, "missing");
	}
	struct vf_policy *grown = realloc(set->p, (set->n + 1) * sizeof(*set->p));
	if (!grown)
		return -ENOMEM;
	set->p = grown;
	struct vf_policy *pol = &set->p[set->n];
	*pol = (struct vf_policy){ .name = json_string_value(name) };
	dispatch_path_key(p, sizeof(p), path, "spec");
	r = dispatch_run(c, p, e.spec, spec_fields, DISPATCH_UNKNOWN_REFUSE, pol);
	if (r >= 0)
		r = check_spec(c, p, pol);
	if (r < 0) {
		strv_free(pol->root_devices);
		strv_free(pol->pf_names);
		return r;
	}
	set->n++;
	return 0;
}

static int add_doc(struct vf_policies *set, json_t *doc)
{
	json_t **grown = realloc(set->docs, (set->n_docs + 1) * sizeof(*set->docs));
	if (!grown)
		return -ENOMEM;
	set->docs = grown;
	set->docs[set->n_docs++] = doc;
	return 0;
}

int vf_policies_parse(struct vf_policies *set, const char *source, const char *buf, size_t len,
		      char *err, size_t errlen)
{
	char why[512], perr[256];
	struct dispatch_ctx c = { .err = why, .errlen = sizeof(why) };
	size_t before = set->n, n_docs, doc_no = 0;
	json_t *all = NULL, *doc;
	/* every document of the stream, by the one YAML reader (a `---` inside a block scalar is
	 * text, not a separator) */
	int r = doc_parse_all(buf, len, &all, perr, sizeof(perr));

	if (r < 0) {
		snprintf(err, errlen, "%s: %s", source, perr);
		return r;
	}
	n_docs = json_array_size(all);
	for (size_t i = 0; i < n_docs; i++) {
		doc = json_incref(json_array_get(all, i));
		doc_no++;
		if (json_is_null(doc)) {
			json_decref(doc);
			continue;
		}
		if ((r = add_doc(set, doc)) < 0) {
			json_decref(doc);
			break;
		}
		if (set->n_docs > VF_MAX_DOCS) {
			snprintf(err, errlen, "%s: more than %d documents", source, VF_MAX_DOCS);
			r = -E2BIG;
			break;
		}
		if (!json_is_object(doc)) {
			snprintf(err, errlen, "%s: document %zu: expected an object", source,
				 doc_no);
			r = -EINVAL;
			break;
		}
		char path[32];
		snprintf(path, sizeof(path), "$%zu", doc_no);
		r = add_policy(set, &c, n_docs == 1 ? "$" : path, doc);
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", source, why);
			break;
		}
	}
	json_decref(all);
	if (r < 0)
		return r;
	if (set->n == before) {
		snprintf(err, errlen, "%s: no SriovNetworkNodePolicy", source);
		return -ENOENT;
	}
	return 0;
}

void vf_policies_clear(struct vf_policies *set)
{
	for (size_t i = 0; i < set->n; i++) {
		strv_free(set->p[i].root_devices);
		strv_free(set->p[i].pf_names);
	}
	free(set->p);
	for (size_t i = 0; i < set->n_docs; i++)
		json_decref(set->docs[i]);
	free(set->docs);
	*set = (struct vf_policies){};
}

int vf_labels_parse(const char *s, json_t **ret)
{
	json_t *o = json_object();
	if (!o)
		return -ENOMEM;
	while (s && *s) {
		size_t n = strcspn(s, ",");
		const char *eq = memchr(s, '=', n);
		if (!eq || eq == s) {
			json_decref(o);
			return -EINVAL;
		}
		char *k = strndup(s, (size_t)(eq - s));
		json_t *v = json_stringn(eq + 1, n - (size_t)(eq - s) - 1);
		if (!k || !v || json_object_set_new(o, k, v) < 0) {
			free(k);
			json_decref(o);
			return -ENOMEM;
		}
		free(k);
		s += n;
		if (*s == ',')
			s++;
	}
	*ret = o;
	return 0;
}
