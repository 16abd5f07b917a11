/* SPDX-License-Identifier: Apache-2.0 */
/* The record a hostdev attachment leaves (attach.h): written before the first change, updated as
 * ADD goes, removed by DEL; and the walk over every record of a state dir. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <linux/if_ether.h>

#include "attach/attach.h"
#include "cnispec/cnispec.h"
#include "k8s/names.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

#define STATE_MAX 16384

static int str_field(const json_t *o, const char *k, char *out, size_t len, bool required);
static int int_field(const json_t *o, const char *k, long long lo, long long hi, long long *out);

static int net_dir(const char *dir, const char *network, bool create, int *ret_fd)
{
	_cleanup_free_ char *p = NULL;
	int fd;

	if (!cnispec_network_name_valid(network, NULL))
		return -EINVAL;
	if (asprintf(&p, "%s/%s", dir, network) < 0)
		return -ENOMEM;
	if (create) {
		/* 0700 for what it creates: the records name pods' devices */
		int r = fileio_mkdir_p(p, 0700, 0700);
		if (r < 0)
			return r;
	}
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

/* The record's file name: <id>:<ifname>, and <id>:<ifname>:rdma for the rdma link's (neither an
 * ID nor an ifname holds ':', so attach_record_list never reads the one for the other). */
static int key_name(const char *id, const char *ifname, bool rdma, char *buf, size_t len)
{
	if (!cnispec_container_id_valid(id, NULL) || !cnispec_ifname_valid(ifname, NULL))
		return -EINVAL;
	snprintf(buf, len, "%s:%s%s", id, ifname, rdma ? ":rdma" : "");
	return 0;
}

/* The VF's settings before ADD, as the PF reported them, and which ADD changed. */
static int vf_pack(json_t *o, const struct attach_record *st)
{
	const struct nl_vf_info *v = &st->vf_orig;
	char mac[3 * 6 + 1];
	json_t *vo;

	str_hwaddr(v->mac, 6, mac);
	vo = json_pack("{s:i, s:s, s:I, s:I, s:i, s:I, s:I, s:i, s:i, s:I}", "set", (int)st->vf_set,
		       "mac", mac, "vlan", (json_int_t)v->vlan, "qos", (json_int_t)v->qos, "proto",
		       (int)v->vlan_proto, "minTxRate", (json_int_t)v->min_tx_rate, "maxTxRate",
		       (json_int_t)v->max_tx_rate, "spoofchk", v->spoofchk, "trust", v->trust,
		       "linkState", (json_int_t)v->link_state);
	if (!vo)
		return -ENOMEM;
	return json_object_set_new(o, "vfOrig", vo) < 0 ? -ENOMEM : 0;
}

static int vf_unpack(const json_t *o, struct attach_record *st)
{
	const json_t *vo = json_object_get(o, "vfOrig");
	struct nl_vf_info v = { .vf = (uint32_t)st->vf_index };
	long long set = 0, vlan = 0, qos = 0, proto = 0, min = 0, max = 0, spoof = -1, trust = -1,
		  state = 0;
	char mac[3 * 6 + 1] = "";

	if (!vo)
		return 0;
	if (!json_is_object(vo) || int_field(vo, "set", 0, ATTACH_VF_BITS, &set) < 0 ||
	    str_field(vo, "mac", mac, sizeof(mac), true) < 0 ||
	    int_field(vo, "vlan", 0, 4095, &vlan) < 0 || int_field(vo, "qos", 0, 7, &qos) < 0 ||
	    int_field(vo, "proto", 0, 0xffff, &proto) < 0 ||
	    int_field(vo, "minTxRate", 0, UINT32_MAX, &min) < 0 ||
	    int_field(vo, "maxTxRate", 0, UINT32_MAX, &max) < 0 ||
	    int_field(vo, "spoofchk", -1, 1, &spoof) < 0 ||
	    int_field(vo, "trust", -1, 1, &trust) < 0 ||
	    int_field(vo, "linkState", 0, 2, &state) < 0 ||
	    (proto != ETH_P_8021Q && proto != ETH_P_8021AD) || st->vf_index < 0 ||
	    str_parse_hwaddr(mac, v.mac, 6) != 6)
		return -EBADMSG;
	v.vlan = (uint32_t)vlan;
	v.qos = (uint32_t)qos;
	v.vlan_proto = (uint16_t)proto;
	v.min_tx_rate = (uint32_t)min;
	v.max_tx_rate = (uint32_t)max;
	v.spoofchk = (int)spoof;
	v.trust = (int)trust;
	v.link_state = (uint32_t)state;
	st->vf_set = (unsigned)set;
	st->vf_orig = v;
	return 0;
}

/* "pod": {"mac": ..., "ips": [...]}: what ADD gave the pod, once it is done. */
static int pod_pack(json_t *o, const struct attach_record *st)
{
	json_t *ips = json_array(), *po;

	for (size_t i = 0; ips && i < st->n_pod_ips; i++)
		if (json_array_append_new(ips, json_string(st->pod_ips[i])) < 0) {
			json_decref(ips);
			return -ENOMEM;
		}
	po = json_pack("{s:s, s:o}", "mac", st->pod_mac, "ips", ips);
	if (!po)
		return -ENOMEM;
	return json_object_set_new(o, "pod", po) < 0 ? -ENOMEM : 0;
}

static int pod_unpack(const json_t *o, struct attach_record *st)
{
	const json_t *po = json_object_get(o, "pod"), *ips, *v;
	struct cnispec_prefix pfx;
	uint8_t raw[32];
	size_t i;

	if (!po)
		return 0;
	ips = json_object_get(po, "ips");
	if (!json_is_object(po) ||
	    str_field(po, "mac", st->pod_mac, sizeof(st->pod_mac), true) < 0 || !st->pod_mac[0] ||
	    !json_is_array(ips) || json_array_size(ips) > ATTACH_POD_IPS_MAX)
		return -EBADMSG;
	/* hex pairs joined by ':', as str_hwaddr writes them */
	if (str_parse_hwaddr(st->pod_mac, raw, sizeof(raw)) < 0)
		return -EBADMSG;
	json_array_foreach(ips, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) >= sizeof(st->pod_ips[0]) ||
		    cnispec_prefix_parse(json_string_value(v), &pfx) < 0)
			return -EBADMSG;
		memcpy(st->pod_ips[i], json_string_value(v), json_string_length(v) + 1);
	}
	st->n_pod_ips = i;
	return 0;
}

static int state_save(const char *dir, const char *network, const char *id, const char *ifname,
		      bool rdma, const struct attach_record *st)
{
	char key[CNISPEC_CONTAINER_ID_MAX + 20], mac[3 * 32 + 1], guid[20];
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *text = NULL;
	json_t *o;
	int r;

	if ((r = key_name(id, ifname, rdma, key, sizeof(key))) < 0)
		return r;
	str_hwaddr(st->host_mac, st->host_mac_len, mac);
	snprintf(guid, sizeof(guid), "%016" PRIx64, st->guid_orig);
	o = json_pack("{s:s, s:s, s:i, s:b, s:s, s:i, s:s, s:s, s:b, s:s, s:i, s:b, s:s}", "netns",
		      st->netns, "hostName", st->host_name, "hostIfindex", st->host_ifindex,
		      "hostUp", st->host_up, "hostMac", mac, "hostMtu", (int)st->host_mtu, "pci",
		      st->pci, "rdmaDevice", st->rdma_dev, "rdmaMoved", st->rdma_moved, "pf",
		      st->pf, "vfIndex", st->vf_index, "guidSet", st->guid_set, "guidOrig", guid);
	if (!o)
		return -ENOMEM;
	if (st->has_pkey && json_object_set_new(o, "pkey", json_integer(st->pkey)) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	if (st->fabric) {
		char fg[17];
		snprintf(fg, sizeof(fg), "%016" PRIx64, st->fabric_guid);
		if (json_object_set_new(o, "fabricGuid", json_string(fg)) < 0 ||
		    json_object_set_new(o, "fabricAdded", json_boolean(st->fabric_added)) < 0 ||
		    (st->fabric_name[0] &&
		     json_object_set_new(o, "fabric", json_string(st->fabric_name)) < 0)) {
			json_decref(o);
			return -ENOMEM;
		}
	}
	if ((st->vf_set && vf_pack(o, st) < 0) || (st->pod_mac[0] && pod_pack(o, st) < 0)) {
		json_decref(o);
		return -ENOMEM;
	}
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	if ((r = net_dir(dir, network, true, &dfd)) < 0)
		return r;
	return fileio_write_atomic_at(dfd, key, text, strlen(text), 0600);
}

static int str_field(const json_t *o, const char *k, char *out, size_t len, bool required)
{
	const json_t *v = json_object_get(o, k);

	if (!v)
		return required ? -EBADMSG : 0;
	if (!json_is_string(v) || json_string_length(v) >= len ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -EBADMSG;
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int int_field(const json_t *o, const char *k, long long lo, long long hi, long long *out)
{
	const json_t *v = json_object_get(o, k);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -EBADMSG;
	*out = json_integer_value(v);
	return 0;
}

/* A GUID as the record writes it: 16 hex digits, nothing else. */
static int hex16(const char *s, uint64_t *ret)
{
	unsigned long long v;

	if (strlen(s) != 16 || strspn(s, "0123456789abcdefABCDEF") != 16 ||
	    str_to_u64(s, 16, &v) < 0)
		return -EBADMSG;
	*ret = v;
	return 0;
}

int attach_record_parse(const char *buf, size_t len, struct attach_record *ret)
{
	struct attach_record st = { .vf_index = -1 };
	char mac[3 * 32 + 1] = "", guid[20] = "", fguid[20] = "";
	long long ifindex = 0, mtu = 0, vf = -1, pkey = -1;
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	int r = -EBADMSG;

	if (!o || !json_is_object(o))
		goto out;
	if (str_field(o, "netns", st.netns, sizeof(st.netns), false) < 0 ||
	    str_field(o, "hostName", st.host_name, sizeof(st.host_name), true) < 0 ||
	    str_field(o, "hostMac", mac, sizeof(mac), false) < 0 ||
	    str_field(o, "pci", st.pci, sizeof(st.pci), false) < 0 ||
	    str_field(o, "rdmaDevice", st.rdma_dev, sizeof(st.rdma_dev), false) < 0 ||
	    str_field(o, "pf", st.pf, sizeof(st.pf), false) < 0 ||
	    str_field(o, "guidOrig", guid, sizeof(guid), false) < 0 ||
	    str_field(o, "fabricGuid", fguid, sizeof(fguid), false) < 0 ||
	    str_field(o, "fabric", st.fabric_name, sizeof(st.fabric_name), false) < 0 ||
	    int_field(o, "hostIfindex", 0, INT32_MAX, &ifindex) < 0 ||
	    int_field(o, "hostMtu", 0, 65535 * 4, &mtu) < 0 ||
	    int_field(o, "vfIndex", -1, INT32_MAX, &vf) < 0 ||
	    int_field(o, "pkey", -1, 0xffff, &pkey) < 0)
		goto out;
	/* the names go back into netlink requests and sysfs paths: checked like any input */
	if (!cnispec_ifname_valid(st.host_name, NULL) ||
	    (st.pf[0] && !cnispec_ifname_valid(st.pf, NULL)) || (st.pci[0] && !hw_is_bdf(st.pci)) ||
	    strchr(st.rdma_dev, '/'))
		goto out;
	st.rdma_moved = json_is_true(json_object_get(o, "rdmaMoved"));
	st.host_up = json_is_true(json_object_get(o, "hostUp"));
	st.guid_set = json_is_true(json_object_get(o, "guidSet"));
	st.host_ifindex = (int)ifindex;
	st.host_mtu = (unsigned)mtu;
	st.vf_index = (int)vf;
	if (pkey >= 0) {
		st.has_pkey = true;
		st.pkey = (uint16_t)pkey;
	}
	/* the GUID this attachment may have put into pkey: a record that names one needs its pkey */
	if (fguid[0]) {
		const json_t *added = json_object_get(o, "fabricAdded");

		if (hex16(fguid, &st.fabric_guid) < 0 || !st.has_pkey ||
		    (st.fabric_name[0] && !k8s_dns1123_label(st.fabric_name, NULL)) ||
		    (added && !json_is_boolean(added)))
			goto out;
		st.fabric = true;
		/* a record from before "fabricAdded": that version added every GUID it named */
		st.fabric_added = !added || json_is_true(added);
	}
	if (vf_unpack(o, &st) < 0 || pod_unpack(o, &st) < 0)
		goto out;
	if (guid[0] && hex16(guid, &st.guid_orig) < 0)
		goto out;
	if (mac[0]) {
		int n = str_parse_hwaddr(mac, st.host_mac, sizeof(st.host_mac));

		if (n < 0)
			goto out;
		st.host_mac_len = (unsigned)n;
	}
	*ret = st;
	r = 0;
out:
	json_decref(o);
	return r;
}

static int state_load(const char *dir, const char *network, const char *id, const char *ifname,
		      bool rdma, struct attach_record *ret)
{
	char key[CNISPEC_CONTAINER_ID_MAX + 20];
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	if ((r = key_name(id, ifname, rdma, key, sizeof(key))) < 0)
		return r;
	r = net_dir(dir, network, false, &dfd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = fileio_read_at(dfd, key, STATE_MAX, &buf, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = attach_record_parse(buf, len, ret);
	return r < 0 ? r : 1;
}

static int state_remove(const char *dir, const char *network, const char *id, const char *ifname,
			bool rdma)
{
	char key[CNISPEC_CONTAINER_ID_MAX + 20];
	_cleanup_close_ int dfd = -1;
	int r;

	if ((r = key_name(id, ifname, rdma, key, sizeof(key))) < 0)
		return r;
	r = net_dir(dir, network, false, &dfd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (unlinkat(dfd, key, 0) < 0 && errno != ENOENT)
		return -errno;
	/* the rename is durable only once the directory is */
	(void)fsync(dfd);
	return 0;
}

int attach_record_tidy(const char *dir, const char *network, const char *id, const char *ifname,
		       size_t *ret_removed)
{
	char key[CNISPEC_CONTAINER_ID_MAX + 20];
	_cleanup_close_ int dfd = -1;
	int r;

	if (ret_removed)
		*ret_removed = 0;
	if (id && (r = key_name(id, ifname, false, key, sizeof(key))) < 0)
		return r;
	r = net_dir(dir, network, false, &dfd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	/* an ADD killed inside attach_record_save leaves its temp file; one still being written is
	 * locked by its live writer and stays (util/fileio.h says how) */
	return fileio_remove_stale_temps_at(dfd, id ? key : NULL, ret_removed);
}

int attach_record_save(const char *dir, const char *network, const char *id, const char *ifname,
		       const struct attach_record *st)
{
	return state_save(dir, network, id, ifname, false, st);
}

int attach_record_save_rdma(const char *dir, const char *network, const char *id,
			    const char *ifname, const struct attach_record *st)
{
	return state_save(dir, network, id, ifname, true, st);
}

int attach_record_load(const char *dir, const char *network, const char *id, const char *ifname,
		       struct attach_record *ret)
{
	return state_load(dir, network, id, ifname, false, ret);
}

int attach_record_load_rdma(const char *dir, const char *network, const char *id,
			    const char *ifname, struct attach_record *ret)
{
	return state_load(dir, network, id, ifname, true, ret);
}

int attach_record_remove(const char *dir, const char *network, const char *id, const char *ifname)
{
	return state_remove(dir, network, id, ifname, false);
}

int attach_record_remove_rdma(const char *dir, const char *network, const char *id,
			      const char *ifname)
{
	return state_remove(dir, network, id, ifname, true);
}

static int state_list(const char *dir, const char *network, bool rdma, char ***ret_ids,
		      char ***ret_ifnames, size_t *ret_n)
{
	_cleanup_strv_free_ char **ids = NULL, **ifnames = NULL, **names = NULL;
	_cleanup_close_ int dfd = -1;
	size_t n = 0, m = 0, n_names = 0;
	int r;

	r = net_dir(dir, network, false, &dfd);
	if (r == -ENOENT) {
		*ret_ids = *ret_ifnames = NULL;
		*ret_n = 0;
		return 0;
	}
	if (r < 0)
		return r;
	if ((r = fileio_list_dir(dfd, 0, &names, &n_names)) < 0)
		return r;
	for (size_t k = 0; k < n_names; k++) {
		const char *name = names[k];
		char *colon = strchr(name, ':'), *end;
		_cleanup_free_ char *id = NULL, *ifname = NULL;

		/* fileio_write_atomic_at's temp files and anything not ours have no valid key */
		if (!colon)
			continue;
		end = strchr(colon + 1, ':');
		if (rdma ? !end || strcmp(end, ":rdma") : !!end)
			continue;
		id = strndup(name, (size_t)(colon - name));
		ifname = end ? strndup(colon + 1, (size_t)(end - colon - 1)) : strdup(colon + 1);
		if (!id || !ifname)
			return -ENOMEM;
		if (!cnispec_container_id_valid(id, NULL) || !cnispec_ifname_valid(ifname, NULL))
			continue;
		if ((r = strv_push(&ids, &n, TAKE_PTR(id))) < 0 ||
		    (r = strv_push(&ifnames, &m, TAKE_PTR(ifname))) < 0)
			return r;
	}
	*ret_ids = TAKE_PTR(ids);
	*ret_ifnames = TAKE_PTR(ifnames);
	*ret_n = n;
	return 0;
}

int attach_record_list(const char *dir, const char *network, char ***ret_ids, char ***ret_ifnames,
		       size_t *ret_n)
{
	return state_list(dir, network, false, ret_ids, ret_ifnames, ret_n);
}

int attach_record_list_rdma(const char *dir, const char *network, char ***ret_ids,
			    char ***ret_ifnames, size_t *ret_n)
{
	return state_list(dir, network, true, ret_ids, ret_ifnames, ret_n);
}

int attach_walk(const char *dir, attach_walk_fn fn, void *userdata)
{
	_cleanup_strv_free_ char **nets = NULL;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t n_nets = 0;
	int r;

	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	if ((r = fileio_list_dir(dfd, FILEIO_LIST_NO_HIDDEN, &nets, &n_nets)) < 0)
		return r;
	for (size_t k = 0; k < n_nets; k++) {
		_cleanup_strv_free_ char **ids = NULL, **ifs = NULL;
		size_t n = 0;

		/* the state dir also holds the fabric journal and lock files: not networks */
		if (!cnispec_network_name_valid(nets[k], NULL) ||
		    attach_record_list(dir, nets[k], &ids, &ifs, &n) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			struct attach_record rec = { .vf_index = -1 };

			if (attach_record_load(dir, nets[k], ids[i], ifs[i], &rec) <= 0)
				continue;
			if ((r = fn(userdata, nets[k], ids[i], ifs[i], &rec)) != 0)
				return r;
		}
	}
	return 0;
}

/* the initial PID namespace's inode (the kernel's PROC_PID_INIT_INO) */
#define PID_NS_INIT_INO 0xEFFFFFFCu

int attach_netns_alive(const char *netns, char *why, size_t n)
{
	_cleanup_free_ char *dir = NULL;
	const char *what = NULL, *slash;
	struct stat st;
	int r;

	if (!netns[0])
		return 0;
	if (!strncmp(netns, "/proc/", 6)) {
		/* /proc/PID/ns/net: another PID namespace's /proc has no such PID, live or not */
		if (stat("/proc/self/ns/pid", &st) < 0 || st.st_ino != PID_NS_INIT_INO) {
			snprintf(why, n, "%s: /proc here is not the host's PID namespace's", netns);
			return -EXDEV;
		}
	} else {
		slash = strrchr(netns, '/');
		if (!slash) {
			snprintf(why, n, "%s: not an absolute path", netns);
			return -EINVAL;
		}
		if (!(dir = slash == netns ? strdup("/") : strndup(netns, (size_t)(slash - netns))))
			return -ENOMEM;
		if (stat(dir, &st) < 0)
			r = -errno;
		else if (!S_ISDIR(st.st_mode))
			r = -ENOTDIR;
		else
			r = access(dir, R_OK | X_OK) < 0 ? -errno : 0;
		if (r < 0) {
			snprintf(why, n, "folder %s: %s", dir,
				 r == -ENOENT ? "missing here (mount the host's)" : strerror(-r));
			return r;
		}
	}
	r = nl_netns_describe(netns, &what);
	if (r == 0)
		return 1;
	if (r == -ENOENT || r > 0)
		return 0;
	snprintf(why, n, "%s: %s", netns, strerror(-r));
	return r;
}
