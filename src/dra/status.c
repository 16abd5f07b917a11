/* SPDX-License-Identifier: Apache-2.0 */
/* The device status of the claims this driver prepared (KEP-4817): for each device that
 * rdmak-cni attached to the claim's pod, status.devices[] names it (driver, pool, device) with
 * networkData, the interface name, addresses and hardware address the pod got, read from the
 * attachment record rdmak-cni keeps for it.
 *
 * Written by the daemon's loop, not by prepare: the kubelet prepares a pod's claims before it
 * asks the runtime for the pod's sandbox, whose network the CNI attaches, so at prepare there is
 * nothing to report yet. A round reads the prepared claims' state files and the records, and
 * writes a claim only where what it would say differs from what it last wrote (or, after a
 * restart, from what the claim says): the claim as the API server has it, the other drivers'
 * entries kept, this driver's replaced, updated with the resourceVersion it read (a write that
 * lost a race is a 409 and is tried again at the next round). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/attach.h"
#include "dra/dra.h"
#include "k8s/client.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

#define STATE_MAX (1u << 20)

struct dra_status {
	json_t *written; /* claim uid -> this driver's entries as last written (an array) */
};

int dra_status_new(struct dra_status **ret)
{
	struct dra_status *s = calloc(1, sizeof(*s));

	if (!s || !(s->written = json_object())) {
		free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void dra_status_free(struct dra_status *s)
{
	if (!s)
		return;
	json_decref(s->written);
	free(s);
}

/* ---- the records: what each attached device's pod got ------------------------------------ */

struct attached {
	char pci[HW_BDF_MAX];
	char rdma[NL_RDMA_NAMSIZ];
	json_t *data; /* networkData */
};

struct attached_list {
	struct attached *v;
	size_t n;
};

static int attached_add(void *ud, const char *network, const char *id, const char *ifname,
			const struct attach_record *rec)
{
	struct attached_list *l = ud;
	struct attached *n, *a;
	char why[256];
	json_t *ips;

	(void)network, (void)id;
	/* a record from before ADD finished, or of a device without a PCI function or RDMA
	 * device: nothing to say of it */
	if (!rec->pod_mac[0] || (!rec->pci[0] && !rec->rdma_dev[0]))
		return 0;
	/* a record whose pod is gone (its network namespace removed, the record not yet taken by
	 * DEL or GC) names what an earlier pod got, perhaps another tenant's: never the status of
	 * the claim that holds the device now. Where this process cannot tell (the namespaces'
	 * folder not mounted here), nothing is said either: a status is only published for a pod
	 * seen alive. */
	if (attach_netns_alive(rec->netns, why, sizeof(why)) != 1)
		return 0;
	n = realloc(l->v, (l->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->v = n;
	a = &n[l->n];
	str_copy(a->pci, sizeof(a->pci), rec->pci);
	str_copy(a->rdma, sizeof(a->rdma), rec->rdma_dev);
	ips = json_array();
	for (size_t i = 0; ips && i < rec->n_pod_ips; i++)
		if (json_array_append_new(ips, json_string(rec->pod_ips[i])) < 0) {
			json_decref(ips);
			return -ENOMEM;
		}
	a->data = json_pack("{s:s, s:s}", "interfaceName", ifname, "hardwareAddress", rec->pod_mac);
	if (!ips || !a->data ||
	    (json_array_size(ips) && json_object_set(a->data, "ips", ips) < 0)) {
		json_decref(ips);
		json_decref(a->data);
		return -ENOMEM;
	}
	json_decref(ips);
	l->n++;
	return 0;
}

static void attached_clear(struct attached_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		json_decref(l->v[i].data);
	free(l->v);
}

/* The networkData of the record for dev (by its PCI function, else its RDMA device), or NULL. */
static json_t *attached_find(const struct attached_list *l, const struct hw_rdma_dev *dev)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct attached *a = &l->v[i];

		if (a->pci[0] ? dev->pci && !strcmp(a->pci, dev->pci->bdf)
			      : !strcmp(a->rdma, dev->name))
			return a->data;
	}
	return NULL;
}

/* ---- one claim ----------------------------------------------------------------------------- */

/* This driver's entries for a claim's state file: one per device with a record, in the state's
 * order. Caller holds d->lock (the inventory). */
static json_t *entries_of(const struct dra_driver *d, const json_t *state,
			  const struct attached_list *l)
{
	json_t *out = json_array(), *dv;
	size_t i;

	json_array_foreach(json_object_get(state, "devices"), i, dv)
	{
		const char *pool = json_string_value(json_object_get(dv, "pool"));
		const char *name = json_string_value(json_object_get(dv, "device"));
		const struct dra_device *x = name ? dra_inventory_find(&d->inv, name) : NULL;
		json_t *data = x ? attached_find(l, x->dev) : NULL;

		if (!out || !pool || !data)
			continue;
		if (json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:O}", "driver",
							 d->driver, "pool", pool, "device", name,
							 "networkData", data)) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

/* The claim's status.devices with this driver's entries replaced by ours (others kept, in their
 * order, ours after them). */
static json_t *merged(const json_t *have, const char *driver, const json_t *ours)
{
	json_t *out = json_array(), *e;
	size_t i;

	json_array_foreach(have, i, e)
	{
		const char *drv = json_string_value(json_object_get(e, "driver"));

		if (out && (!drv || strcmp(drv, driver)) && json_array_append(out, e) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	if (out && json_array_extend(out, (json_t *)ours) < 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* Write ours into the claim of state (its namespace, name, uid). 1 written, 0 nothing to write
 * (the claim says it already, or is gone), -errno with err. */
static int claim_write(struct dra_driver *d, const json_t *state, json_t *ours, char *err,
		       size_t errlen)
{
	const char *ns = json_string_value(json_object_get(state, "namespace"));
	const char *name = json_string_value(json_object_get(state, "name"));
	const char *uid = json_string_value(json_object_get(state, "uid"));
	_cleanup_free_ char *path = NULL, *status_path = NULL;
	json_t *claim = NULL, *status, *devs = NULL, *answer = NULL;
	const char *have_uid;
	int code = 0, r;

	if (!ns || !name || !uid)
		return 0; /* not a state file prepare wrote */
	if (asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns, name) <
	    0)
		return -ENOMEM;
	r = k8s_client_call(d->api, "GET", path, NULL, &code, &claim, err, errlen);
	if (r < 0)
		return r;
	have_uid = json_string_value(json_object_get(json_object_get(claim, "metadata"), "uid"));
	if (code == 404 || (code == 200 && (!have_uid || strcmp(have_uid, uid)))) {
		json_decref(claim);
		return 0; /* gone, or another claim now: the kubelet unprepares this one */
	}
	if (code != 200) {
		snprintf(err, errlen, "getting ResourceClaim %s/%s: HTTP %d %s", ns, name, code,
			 k8s_status_message(claim));
		r = code == 403 ? -EACCES : -EIO;
		goto out;
	}
	status = json_object_get(claim, "status");
	devs = merged(json_object_get(status, "devices"), d->driver, ours);
	if (!json_is_object(status) || !devs) {
		r = devs ? 0 : -ENOMEM;
		goto out;
	}
	if (json_array_size(devs) == 0 && !json_object_get(status, "devices")) {
		r = 0;
		goto out;
	}
	if (json_equal(devs, json_object_get(status, "devices"))) {
		r = 0;
		goto out;
	}
	/* no entry left: no list (an empty one reads back as none) */
	if (json_array_size(devs) ? json_object_set(status, "devices", devs) < 0
				  : json_object_del(status, "devices") < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (asprintf(&status_path, "%s/status", path) < 0) {
		status_path = NULL;
		r = -ENOMEM;
		goto out;
	}
	r = k8s_client_call(d->api, "PUT", status_path, claim, &code, &answer, err, errlen);
	if (r >= 0 && code != 200) {
		snprintf(err, errlen, "writing the status of ResourceClaim %s/%s: HTTP %d %s", ns,
			 name, code, k8s_status_message(answer));
		r = code == 409 ? -ESTALE : code == 403 ? -EACCES : code == 404 ? 0 : -EIO;
	} else if (r >= 0) {
		r = 1;
	}
out:
	json_decref(devs);
	json_decref(claim);
	json_decref(answer);
	return r;
}

/* ---- a round ------------------------------------------------------------------------------- */

static int read_state(int dfd, const char *file, json_t **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = fileio_read_at(dfd, file, STATE_MAX, &text, &len);

	if (r < 0)
		return r;
	*ret = json_loadb(text, len, 0, NULL);
	return *ret ? 0 : -EINVAL;
}

int dra_status_sync(struct dra_status *s, struct dra_driver *d, const char *cni_dir, char *err,
		    size_t errlen)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1;
	struct attached_list l = { 0 };
	json_t *seen = NULL;
	char **files = NULL, e[512];
	size_t n = 0;
	int r, first = 0, written = 0;

	err[0] = '\0';
	if (asprintf(&dir, "%s/claims", d->state_dir) < 0)
		return -ENOMEM;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT)
		return -errno;
	if (dfd >= 0 && (r = fileio_list_dir(dfd, 0, &files, &n)) < 0)
		return r;
	if (!n) {
		json_object_clear(s->written);
		strv_free(files);
		return 0; /* no claim prepared: not even a look at the records */
	}
	r = attach_walk(cni_dir, attached_add, &l);
	if (r < 0) {
		snprintf(err, errlen, "reading the attachment records in %s: %s", cni_dir,
			 strerror(-r));
		goto out;
	}
	if (!(seen = json_object())) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *state = NULL, *ours;
		const char *uid;
		const json_t *last;

		size_t len = strlen(files[i]);

		if (len <= 5 || strcmp(files[i] + len - 5, ".json") ||
		    read_state(dfd, files[i], &state) < 0)
			continue;
		pthread_mutex_lock(&d->lock);
		ours = entries_of(d, state, &l);
		pthread_mutex_unlock(&d->lock);
		uid = json_string_value(json_object_get(state, "uid"));
		last = uid ? json_object_get(s->written, uid) : NULL;
		/* unchanged since written; or nothing to say of a claim this process never wrote
		 * (a record gone while the driver was down leaves its entry: docs/dra.md) */
		if (!ours || !uid || (last ? json_equal(last, ours) : !json_array_size(ours))) {
			if (uid && last)
				json_object_set(seen, uid, (json_t *)last);
			json_decref(ours);
			json_decref(state);
			continue;
		}
		r = claim_write(d, state, ours, e, sizeof(e));
		if (r >= 0)
			json_object_set(seen, uid, ours);
		written += r > 0;
		if (r < 0 && !first) {
			first = r;
			str_copy(err, errlen, e);
		}
		json_decref(ours);
		json_decref(state);
	}
	/* claims no longer prepared are forgotten */
	json_object_clear(s->written);
	json_object_update(s->written, seen);
	r = first ? first : written;
out:
	json_decref(seen);
	attached_clear(&l);
	strv_free(files);
	return r;
}
