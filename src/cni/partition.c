/* SPDX-License-Identifier: Apache-2.0 */
/* The pod's InfiniBand partition, node-side and synchronous: on ADD of a hostdev VF on a network
 * with a pkey and a "fabric" (one of the node's fabrics, by name), the VF's GUID joins the pkey
 * at that fabric's manager before ADD returns; on DEL (and GC, and ADD's rollback) it leaves, or,
 * when the fabric manager cannot take it now, the removal is journaled under that fabric and
 * retried against it by the next DEL or GC and by `rdmak fabric gc`. The attachment's record
 * names the GUID, its fabric and whether this node added it before the fabric manager hears of
 * it, so a plugin killed at any point leaves it written down (src/ufm/journal.c).
 *
 * Whose GUID it is (docs/fabric.md, "What it trusts"): a GUID that was a member of the pkey
 * before this node added it is someone else's (an administrator's, another node's port) and is
 * never removed by this node; a GUID a pod or network asks for (runtimeConfig.infinibandGUID,
 * guid) that is not the VF's own is refused when another attachment of this node holds it or
 * when it is a member this node did not add. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni/cni.h"
#include "http/dl.h"
#include "log/log.h"
#include "ufm/ufm.h"
#include "util/cleanup.h"

bool cni_partition_wanted(const struct cniconf *cfg)
{
	return cfg->link == CNICONF_LINK_HOSTDEV && cfg->has_pkey && cfg->fabric.set;
}

bool cni_partition_here(const struct cniconf *cfg)
{
	return !cfg->fabrics || http_dl_possible();
}

int cni_partition_setup(struct cniconf *cfg)
{
	struct ufm_fabrics *f;
	char why[UFM_ERR_MAX];
	int r;

	if (!cfg->fabric.set)
		return 0;
	if (!(f = calloc(1, sizeof(*f))))
		return -ENOMEM;
	r = ufm_fabrics_load(NULL, f, why, sizeof(why));
	if (r < 0) {
		free(f);
		if (r == -ENOENT)
			snprintf(why, sizeof(why),
				 "this node has no fabrics file (%s): its owner names the fabric "
				 "managers there (docs/fabric.md)",
				 ufm_fabrics_default_path());
		return (cfg->fabrics_err = strdup(why)) ? 0 : -ENOMEM;
	}
	cfg->fabrics = f;
	/* the records of a network with a fabric are the node's ledger: in its state dir */
	if (!cfg->state_dir_set) {
		char *d = strdup(f->state_dir), *b = strdup(f->state_dir);

		if (!d || !b) {
			free(d);
			free(b);
			return -ENOMEM;
		}
		free(cfg->state_dir);
		free(cfg->state_base);
		cfg->state_dir = d;
		cfg->state_base = b; /* the owner's, from the fabrics file */
	}
	return 0;
}

/* Where the node's ledger is: the fabrics file's stateDir (journal, locks, the records of
 * networks with a fabric), or without a readable file the network's own. */
static const char *ledger_dir(const struct cniconf *cfg)
{
	return cfg->fabrics ? cfg->fabrics->state_dir : cfg->state_dir;
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

/* The GUID the VF has now: its port's (sysfs GID 0, else the IPoIB hardware address). */
static uint64_t vf_own_guid(struct cni_ctx *c)
{
	uint64_t g = sysfs_port_guid(c);

	return g ? g : c->st->guid_orig;
}

static int client_open(const struct ufm_fabric *f, struct ufm_client **ret,
		       struct cnispec_error *err)
{
	char why[UFM_ERR_MAX];
	int r = ufm_client_new(f, ret, why, sizeof(why));

	if (r < 0)
		return cnispec_fail(err, r, CNI_E_FABRIC,
				    "the fabric manager's settings are unusable", "fabric %s: %s",
				    f->name, why);
	return 0;
}

static int lock_fabric(const char *dir, const char *name, struct cnispec_error *err)
{
	int fd = ufm_lock(dir, name);

	if (fd < 0)
		return cnispec_fail(err, fd, CNI_E_STATE, "locking the fabric ledger failed",
				    "%s/.fabric/%s/lock: %s", dir, name, strerror(-fd));
	return fd;
}

/* What the node's records say of one GUID, the asking attachment left out. */
struct scan {
	const char *fabric; /* the fabric asked about */
	uint16_t pkey;
	uint64_t guid;
	const char *net, *id, *ifname; /* the attachment asking; NULL: none */
	bool held;	 /* a record of this fabric (or of none named) holds it in pkey */
	bool ours;	 /* ... and says this node added it */
	char other[300]; /* a record holding the GUID, in any fabric or pkey */
};

static int scan_one(void *userdata, const char *network, const char *id, const char *ifname,
		    const struct attach_record *rec)
{
	struct scan *s = userdata;

	if (!rec->fabric || rec->fabric_guid != s->guid ||
	    (s->net && !strcmp(network, s->net) && !strcmp(id, s->id) &&
	     !strcmp(ifname, s->ifname)))
		return 0;
	if (!s->other[0])
		snprintf(s->other, sizeof(s->other), "%s/%s:%s", network, id, ifname);
	/* a record written before fabrics were named may be of any fabric: it holds the GUID */
	if ((rec->pkey & 0x7fff) == (s->pkey & 0x7fff) &&
	    (!rec->fabric_name[0] || !strcmp(rec->fabric_name, s->fabric))) {
		s->held = true;
		s->ours |= rec->fabric_added;
	}
	return 0;
}

/* The node's records (the ledger's and, where the network keeps its own, those) about guid. */
static void scan_records(const struct cniconf *cfg, struct scan *s)
{
	(void)attach_walk(ledger_dir(cfg), scan_one, s);
	if (strcmp(ledger_dir(cfg), cfg->state_dir))
		(void)attach_walk(cfg->state_dir, scan_one, s);
}

/* Journaled removals of fabric f that nothing holds any more, retried against f only: 0 when its
 * journal is empty after, 1 when some stay (its manager still refuses, or the entry was
 * journaled for another URL of the fabric), <0 on error. Called with f's lock held. */
static int retry_journal(const struct cniconf *cfg, const struct ufm_fabric *f,
			 struct ufm_client *fc, size_t *ret_done)
{
	_cleanup_free_ struct ufm_journal_entry *v = NULL;
	size_t n = 0, done = 0;
	int r, left = 0;

	if ((r = ufm_journal_list(ledger_dir(cfg), f->name, &v, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct scan s = { .fabric = f->name, .pkey = v[i].pkey, .guid = v[i].guid };
		char g[17];

		scan_records(cfg, &s);
		if (!s.held) {
			/* the fabric's manager moved: this one never had the GUID from us */
			if (v[i].url[0] && strcmp(v[i].url, f->ufm)) {
				ufm_guid_format(v[i].guid, g);
				log_warning(
					"journaled removal of GUID %s from pkey 0x%04x was for %s, "
					"fabric %s is %s now: left (rdmak fabric check lists it)",
					g, v[i].pkey, v[i].url, f->name, f->ufm);
				left = 1;
				continue;
			}
			if (ufm_remove(fc, v[i].pkey, &v[i].guid, 1) < 0) {
				left = 1;
				break; /* down still: the rest waits for the next DEL or GC */
			}
		}
		(void)ufm_journal_remove(ledger_dir(cfg), f->name, v[i].pkey, v[i].guid);
		done++;
	}
	if (ret_done)
		*ret_done = done;
	return left;
}

/* The node's fabric this attachment's GUID is in: its record's, else the config's by name, else
 * (a config from before fabrics were named) the node's fabric of the config's URL. */
static const struct ufm_fabric *fabric_of(const struct cniconf *cfg,
					  const struct attach_record *rec, const char **ret_name)
{
	const char *name = rec && rec->fabric_name[0] ? rec->fabric_name
			   : cfg->fabric.name[0]      ? cfg->fabric.name
						      : NULL;
	const struct ufm_fabric *f = NULL;

	if (name)
		f = ufm_fabrics_find(cfg->fabrics, name);
	else if (cfg->fabric.legacy_url &&
		 (f = ufm_fabrics_find_url(cfg->fabrics, cfg->fabric.legacy_url)))
		name = f->name;
	*ret_name = name;
	return f;
}

int cni_partition_join(struct cni_ctx *c, struct cnispec_error *err)
{
	const struct cniconf *cfg = c->cfg;
	struct ufm_client *fc = NULL;
	_cleanup_free_ struct ufm_member *m = NULL;
	_cleanup_close_ int lock = -1;
	const struct ufm_fabric *f;
	uint16_t pkey = cfg->pkey & 0x7fff;
	uint64_t own, guid;
	bool chosen, added = true;
	char g[17], names[256];
	size_t n = 0;
	int r;

	if (!cni_partition_wanted(cfg))
		return 0;
	if (!cfg->fabrics)
		return cnispec_fail(err, -ENOENT, CNI_E_FABRIC,
				    "the node's fabric settings are unusable", "%s",
				    cfg->fabrics_err ? cfg->fabrics_err : "no fabrics file");
	if (!(f = ufm_fabrics_find(cfg->fabrics, cfg->fabric.name))) {
		ufm_fabrics_names(cfg->fabrics, names, sizeof(names));
		return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG,
				    "invalid network configuration: fabric",
				    "\"%s\" is not a fabric of this node (%s names: %s)",
				    cfg->fabric.name[0] ? cfg->fabric.name : cfg->fabric.legacy_url,
				    cfg->fabrics->path, names);
	}
	if (strcmp(cfg->state_dir, cfg->fabrics->state_dir))
		return cnispec_fail(
			err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration: stateDir",
			"a network with a fabric keeps its records in the node's state dir (%s, the "
			"stateDir of %s), the one ledger of every GUID this node put into a "
			"partition: remove stateDir",
			cfg->fabrics->state_dir, cfg->fabrics->path);
	own = vf_own_guid(c);
	guid = cfg->has_guid ? cfg->guid : own;
	chosen = cfg->has_guid && guid != own;
	if (!guid)
		return cnispec_fail(
			err, -ENODATA, CNI_E_FABRIC, "no GUID to add to the partition",
			"%s: no guid configured and no port GUID readable (RDMA device %s): the fabric manager "
			"needs the VF's GUID",
			c->st->host_name, c->st->rdma_dev[0] ? c->st->rdma_dev : "none");
	ufm_guid_format(guid, g);
	if ((r = client_open(f, &fc, err)) < 0)
		return r;
	if ((lock = lock_fabric(ledger_dir(cfg), f->name, err)) < 0) {
		r = lock;
		goto out;
	}
	struct scan s = { .fabric = f->name,
			  .pkey = pkey,
			  .guid = guid,
			  .net = c->req->conf->name,
			  .id = c->req->env->container_id,
			  .ifname = c->ifname };
	scan_records(cfg, &s);
	/* a GUID is one port's: one that another VF of this node holds is not this one's to take */
	if (chosen && s.other[0]) {
		char key[64];

		snprintf(key, sizeof(key), "invalid network configuration: %s", cfg->guid_key);
		r = cnispec_fail(err, -EEXIST, CNISPEC_E_CONFIG, key,
				 "%s is held by attachment %s of this node, and is not VF %s's own "
				 "GUID: a GUID belongs to one port",
				 g, s.other, c->st->host_name);
		goto out;
	}
	if (!s.ours) {
		_cleanup_free_ struct ufm_journal_entry *j = NULL;
		size_t nj = 0;

		/* a removal of ours still journaled: the GUID is this node's */
		if (ufm_journal_list(ledger_dir(cfg), f->name, &j, &nj) == 0)
			for (size_t i = 0; i < nj; i++)
				s.ours |= j[i].guid == guid && j[i].pkey == pkey;
	}
	if (!s.ours) {
		/* whether it was a member before: then it is someone else's, and stays theirs */
		r = ufm_members(fc, pkey, &m, &n);
		if (r < 0) {
			r = cnispec_fail(err, r, CNI_E_FABRIC,
					 "the fabric manager did not add the VF to the partition",
					 "asking whether GUID %s is in pkey 0x%04x: %s", g, pkey,
					 ufm_client_error(fc));
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			added &= m[i].guid != guid;
		if (!added && chosen) {
			char key[64];

			snprintf(key, sizeof(key), "invalid network configuration: %s",
				 cfg->guid_key);
			r = cnispec_fail(
				err, -EEXIST, CNISPEC_E_CONFIG, key,
				"%s is a member of pkey 0x%04x that this node did not add, and is not "
				"VF %s's own GUID: another port's (a VF takes its own GUID, or one "
				"no other port has)",
				g, pkey, c->st->host_name);
			goto out;
		}
	}
	/* written down first: a plugin killed during the call leaves the GUID named (ADD's first
	 * write of the record: the device is untouched until this returns) */
	c->st->fabric = true;
	c->st->fabric_guid = guid;
	c->st->fabric_added = added;
	snprintf(c->st->fabric_name, sizeof(c->st->fabric_name), "%s", f->name);
	if ((r = cni_ctx_save_state(c, err)) < 0)
		goto out;
	/* the record holds it now: a journaled removal of it is void */
	(void)ufm_journal_remove(ledger_dir(cfg), f->name, pkey, guid);
	if (!added) {
		log_info("%s: GUID %s is in partition 0x%04x already (not this node's: left as it "
			 "is, never removed)",
			 c->st->host_name, g, pkey);
	} else if ((r = ufm_add(fc, cfg->pkey, &guid, 1, &cfg->fabric.join)) < 0) {
		c->fabric_unanswered = ufm_error_unanswered(r);
		r = cnispec_fail(
			err, r, CNI_E_FABRIC,
			"the fabric manager did not add the VF to the partition",
			"adding GUID %s to pkey 0x%04x: %s (the pod cannot use the partition without it)",
			g, pkey, ufm_client_error(fc));
		goto out;
	} else {
		log_info("%s: GUID %s joined partition 0x%04x of fabric %s (%s)", c->st->host_name,
			 g, pkey, f->name, cfg->fabric.join.limited ? "limited" : "full");
	}
	/* the fabric manager answers: journaled removals of earlier DELs can go now */
	(void)retry_journal(cfg, f, fc, NULL);
	r = 0;
out:
	ufm_client_free(fc);
	return r;
}

int cni_partition_leave(struct cni_ctx *c, const char *network, const char *id, const char *ifname,
			struct cnispec_error *err)
{
	const struct cniconf *cfg = c->cfg;
	struct ufm_client *fc = NULL;
	_cleanup_close_ int lock = -1;
	const struct ufm_fabric *f;
	struct ufm_fabric nowhere = { 0 };
	const char *name = NULL;
	uint16_t pkey = c->st->pkey & 0x7fff;
	char g[17];
	int r;

	if (!c->st->fabric)
		return 0;
	ufm_guid_format(c->st->fabric_guid, g);
	if (!c->st->fabric_added) {
		log_info(
			"GUID %s stays in partition 0x%04x: it was a member before this attachment",
			g, pkey);
		c->st->fabric = false;
		return 0;
	}
	f = fabric_of(cfg, c->st, &name);
	if (name && (lock = lock_fabric(ledger_dir(cfg), name, err)) < 0)
		return lock;
	struct scan s = { .fabric = name ? name : "",
			  .pkey = pkey,
			  .guid = c->st->fabric_guid,
			  .net = network,
			  .id = id,
			  .ifname = ifname };
	scan_records(cfg, &s);
	if (s.held) {
		log_info("GUID %s stays in partition 0x%04x: another attachment holds it", g, pkey);
		r = 0;
	} else if (!f) {
		/* the node does not know the fabric (now): the journal keeps the removal for it */
		log_warning(
			"GUID %s, partition 0x%04x: fabric %s is not in the node's fabrics file "
			"(%s); the removal is journaled",
			g, pkey, name ? name : "(unnamed)",
			cfg->fabrics_err ? cfg->fabrics_err
					 : (cfg->fabrics ? cfg->fabrics->path : "?"));
		r = -EAGAIN;
	} else if (c->fabric_unanswered) {
		/* ADD's call went unanswered: a second one would wait as long; the journal retries */
		r = -EAGAIN;
	} else if ((r = client_open(f, &fc, err)) < 0) {
		log_warning("GUID %s, partition 0x%04x: %s (%s); the removal is journaled", g, pkey,
			    err->msg, err->details);
		*err = (struct cnispec_error){ 0 };
	} else {
		r = ufm_remove(fc, pkey, &c->st->fabric_guid, 1);
		if (r == 0)
			(void)retry_journal(cfg, f, fc, NULL);
		else
			log_warning(
				"GUID %s, partition 0x%04x: %s; the removal is journaled for the next DEL or GC",
				g, pkey, ufm_client_error(fc));
	}
	if (r < 0) {
		int j;

		if (!f) {
			snprintf(nowhere.name, sizeof(nowhere.name), "%s", name ? name : "");
			nowhere.ufm = (char *)"";
		}
		j = ufm_journal_add(ledger_dir(cfg), f ? f : &nowhere, pkey, c->st->fabric_guid);
		if (j < 0) {
			ufm_client_free(fc);
			return cnispec_fail(err, j, CNI_E_STATE,
					    "journaling the partition removal failed", "%s: %s",
					    ledger_dir(cfg), strerror(-j));
		}
	} else if (!s.held) {
		log_info("GUID %s left partition 0x%04x", g, pkey);
	}
	ufm_client_free(fc);
	c->st->fabric = false;
	return 0;
}

int cni_partition_gc(const struct cniconf *cfg)
{
	struct ufm_client *fc = NULL;
	struct cnispec_error e = { 0 };
	_cleanup_close_ int lock = -1;
	const struct ufm_fabric *f;
	const char *name;
	size_t done = 0;
	int r;

	if (!cni_partition_wanted(cfg) || !(f = fabric_of(cfg, NULL, &name)) ||
	    client_open(f, &fc, &e) < 0)
		return 0;
	if ((lock = ufm_lock(ledger_dir(cfg), f->name)) < 0) {
		ufm_client_free(fc);
		return lock;
	}
	r = retry_journal(cfg, f, fc, &done);
	if (done)
		log_info("GC: %zu journaled partition removal(s) of fabric %s done", done, f->name);
	if (r > 0)
		log_warning("GC: fabric %s: removals left in the journal: %s", f->name,
			    ufm_client_error(fc));
	ufm_client_free(fc);
	return r < 0 ? r : 0;
}
