/* SPDX-License-Identifier: Apache-2.0 */
/* The pod's InfiniBand partition, node-side and synchronous: on ADD of a hostdev VF on a network
 * with a pkey and a "fabric", the VF's GUID joins the pkey at the fabric manager before ADD
 * returns; on DEL (and GC, and ADD's rollback) it leaves, or, when the fabric manager cannot
 * take it now, the removal is journaled in the state dir and retried by the next DEL or GC and
 * by `rdmak fabric gc`. The attachment's record names the GUID before the fabric manager hears
 * of it, so a plugin killed at any point leaves it written down (src/fabric/journal.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni/cni.h"
#include "ufm/ufm.h"
#include "log/log.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

bool cni_partition_wanted(const struct cni_config *cfg)
{
	return cfg->link == CNI_LINK_HOSTDEV && cfg->has_pkey && cfg->fabric.set;
}

/* The GID 0 of the VF's RDMA device, port 1, as sysfs prints it: its low 64 bits are the port
 * GUID ("fe80:0000:0000:0000:0002:c903:0021:6e70"). 0 when there is none to read. */
static uint64_t sysfs_port_guid(struct cni_ctx *c)
{
	char rel[NL_RDMA_NAMSIZ + 64], buf[64] = "";
	_cleanup_close_ int fd = -1;
	unsigned g[8];
	ssize_t n;

	if (!c->st->rdma_dev[0] || !c->hw)
		return 0;
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/gids/0", c->st->rdma_dev);
	fd = hw_ctx_open(c->hw, HW_ROOT_SYSFS, rel, O_RDONLY);
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
		   &g[6], &g[7]) != 8)
		return 0;
	return (uint64_t)g[4] << 48 | (uint64_t)g[5] << 32 | (uint64_t)g[6] << 16 | g[7];
}

/* The GUID the VF will have in the pod: the one rdmak-cni sets (guid, runtimeConfig's
 * infinibandGUID), else the port's own (sysfs GID 0, else the IPoIB hardware address). */
static uint64_t vf_guid(struct cni_ctx *c)
{
	uint64_t g;

	if (c->cfg->has_guid)
		return c->cfg->guid;
	g = sysfs_port_guid(c);
	return g ? g : c->st->guid_orig;
}

static int client_open(const struct cni_config *cfg, struct ufm_client **ret,
		       struct cnispec_error *err)
{
	char why[UFM_ERR_MAX];
	int r = ufm_client_new(&cfg->fabric, ret, why, sizeof(why));

	if (r < 0)
		return cnispec_fail(err, r, CNI_E_FABRIC,
				    "the fabric manager's settings are unusable", "fabric: %s",
				    why);
	return 0;
}

struct holder {
	uint16_t pkey;
	uint64_t guid;
	const char *net, *id, *ifname; /* the attachment asking; NULL: none */
};

static int holds(void *userdata, const char *network, const char *id, const char *ifname,
		 const struct attach_record *rec)
{
	const struct holder *h = userdata;

	if (h->net && !strcmp(network, h->net) && !strcmp(id, h->id) && !strcmp(ifname, h->ifname))
		return 0;
	return rec->fabric && rec->fabric_guid == h->guid &&
	       (rec->pkey & 0x7fff) == (h->pkey & 0x7fff);
}

/* Whether another attachment's record (any network of this state dir) holds guid in pkey:
 * then its removal is that attachment's to make. self_* name the attachment asking. */
static bool held_elsewhere(const char *state_dir, uint16_t pkey, uint64_t guid,
			   const char *self_net, const char *self_id, const char *self_if)
{
	struct holder h = { pkey, guid, self_net, self_id, self_if };

	return attach_walk(state_dir, holds, &h) > 0;
}

/* Journaled removals of this fabric manager that nothing holds any more, retried: 0 when the
 * journal is empty after, 1 when some stay (the fabric manager still refuses), <0 on error.
 * Called with the lock held. */
static int retry_journal(const struct cni_config *cfg, struct ufm_client *fc, size_t *ret_done)
{
	_cleanup_free_ struct ufm_journal_entry *v = NULL;
	size_t n = 0, done = 0;
	int r, left = 0;

	if ((r = ufm_journal_list(cfg->state_dir, &v, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (!held_elsewhere(cfg->state_dir, v[i].pkey, v[i].guid, NULL, NULL, NULL)) {
			r = ufm_remove(fc, v[i].pkey, &v[i].guid, 1);
			if (r < 0) {
				left = 1;
				break; /* down still: the rest waits for the next DEL or GC */
			}
		}
		(void)ufm_journal_remove(cfg->state_dir, v[i].pkey, v[i].guid);
		done++;
	}
	if (ret_done)
		*ret_done = done;
	return left;
}

int cni_partition_join(struct cni_ctx *c, struct cnispec_error *err)
{
	struct ufm_client *fc = NULL;
	_cleanup_close_ int lock = -1;
	char g[17];
	int r;

	if (!cni_partition_wanted(c->cfg))
		return 0;
	c->st->fabric_guid = vf_guid(c);
	if (!c->st->fabric_guid)
		return cnispec_fail(
			err, -ENODATA, CNI_E_FABRIC, "no GUID to add to the partition",
			"%s: no guid configured and no port GUID readable (RDMA device %s): the fabric manager "
			"needs the VF's GUID",
			c->st->host_name, c->st->rdma_dev[0] ? c->st->rdma_dev : "none");
	ufm_guid_format(c->st->fabric_guid, g);
	if ((r = client_open(c->cfg, &fc, err)) < 0)
		return r;
	if ((lock = ufm_lock(c->cfg->state_dir)) < 0) {
		ufm_client_free(fc);
		return cnispec_fail(err, lock, CNI_E_STATE, "locking the fabric ledger failed",
				    "%s/fabric.lock: %s", c->cfg->state_dir, strerror(-lock));
	}
	/* written down first: a plugin killed during the call leaves the GUID named (ADD's first
	 * write of the record: the device is untouched until this returns) */
	c->st->fabric = true;
	if ((r = cni_ctx_save_state(c, err)) < 0)
		goto out;
	r = ufm_add(fc, c->cfg->pkey, &c->st->fabric_guid, 1);
	if (r < 0) {
		r = cnispec_fail(
			err, r, CNI_E_FABRIC,
			"the fabric manager did not add the VF to the partition",
			"adding GUID %s to pkey 0x%04x: %s (the pod cannot use the partition without it)",
			g, c->cfg->pkey & 0x7fff, ufm_client_error(fc));
		goto out;
	}
	/* the fabric manager answers: journaled removals of earlier DELs can go now */
	(void)retry_journal(c->cfg, fc, NULL);
	log_info("%s: GUID %s joined partition 0x%04x (%s)", c->st->host_name, g,
		 c->cfg->pkey & 0x7fff, c->cfg->fabric.limited ? "limited" : "full");
out:
	ufm_client_free(fc);
	return r;
}

int cni_partition_leave(struct cni_ctx *c, const char *network, const char *id, const char *ifname,
			struct cnispec_error *err)
{
	struct ufm_client *fc = NULL;
	_cleanup_close_ int lock = -1;
	const char *state_dir = c->cfg->state_dir;
	uint16_t pkey = c->st->pkey;
	char g[17];
	int r;

	if (!c->st->fabric)
		return 0;
	ufm_guid_format(c->st->fabric_guid, g);
	if ((lock = ufm_lock(state_dir)) < 0)
		return cnispec_fail(err, lock, CNI_E_STATE, "locking the fabric ledger failed",
				    "%s/fabric.lock: %s", state_dir, strerror(-lock));
	if (held_elsewhere(state_dir, pkey, c->st->fabric_guid, network, id, ifname)) {
		log_info("GUID %s stays in partition 0x%04x: another attachment holds it", g,
			 pkey & 0x7fff);
		r = 0;
	} else if (!c->cfg->fabric.set || client_open(c->cfg, &fc, err) < 0) {
		/* the network lost its fabric settings: the journal keeps it for `rdmak fabric gc` */
		r = -EAGAIN;
	} else {
		r = ufm_remove(fc, pkey, &c->st->fabric_guid, 1);
		if (r == 0)
			(void)retry_journal(c->cfg, fc, NULL);
		else
			log_warning(
				"GUID %s, partition 0x%04x: %s; the removal is journaled for the next DEL or GC",
				g, pkey & 0x7fff, ufm_client_error(fc));
	}
	if (r < 0) {
		int j = ufm_journal_add(state_dir, pkey, c->st->fabric_guid);
		if (j < 0) {
			ufm_client_free(fc);
			return cnispec_fail(err, j, CNI_E_STATE,
					    "journaling the partition removal failed", "%s: %s",
					    state_dir, strerror(-j));
		}
	} else {
		log_info("GUID %s left partition 0x%04x", g, pkey & 0x7fff);
	}
	ufm_client_free(fc);
	c->st->fabric = false;
	return 0;
}

int cni_partition_gc(const struct cni_config *cfg)
{
	struct ufm_client *fc = NULL;
	struct cnispec_error e = { 0 };
	_cleanup_close_ int lock = -1;
	size_t done = 0;
	int r;

	if (!cni_partition_wanted(cfg) || client_open(cfg, &fc, &e) < 0)
		return 0;
	if ((lock = ufm_lock(cfg->state_dir)) < 0) {
		ufm_client_free(fc);
		return lock;
	}
	r = retry_journal(cfg, fc, &done);
	if (done)
		log_info("GC: %zu journaled partition removal(s) done", done);
	if (r > 0)
		log_warning("GC: the fabric manager still refuses: %s", ufm_client_error(fc));
	ufm_client_free(fc);
	return r < 0 ? r : 0;
}
