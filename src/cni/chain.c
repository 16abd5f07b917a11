/* SPDX-License-Identifier: Apache-2.0 */
/* The rdma link: rdma-cni's role after another plugin in a conflist. That plugin (sriov,
 * host-device, rdmak-cni hostdev) made the pod's interface; this one finds the interface in the
 * pod, the RDMA device of its PCI function, and moves that device into the pod's namespace
 * (exclusive mode), returning prevResult unchanged; DEL moves it back.
 *
 * Facts from rdma-cni (cmd/rdma/main.go) kept here: ADD without prevResult, a subsystem not in
 * exclusive mode, a function with no RDMA device or with more than one are errors; the record
 * names the device so that DEL gives back exactly it; DEL without a record or without a
 * namespace succeeds (the kernel returns a dead namespace's RDMA devices to the initial one).
 * Where rdmak differs: the PCI function is the pod interface's own (IFLA_PARENT_DEV_NAME), with
 * deviceID checked against it, instead of a search of the host's VFs by MAC; a child link
 * (macvlan, ipvlan, an IPoIB partition) is refused, since its parent's RDMA device is shared;
 * CHECK looks for the device in the pod where rdma-cni checks nothing; DEL fails, and keeps the
 * record, while the device cannot be moved back, so that the runtime retries it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cni/cni.h"
#include "log/log.h"
#include "util/cleanup.h"
#include "util/strv.h"

int cni_config_resolve_chain(struct cniconf *c, const struct cnispec_request *req)
{
	struct attach_record st;
	int r;

	if (!c->link_by_chain)
		return 0;
	c->link_by_chain = false;
	switch (req->env->cmd) {
	case CNISPEC_CMD_ADD:
		/* the first plugin of a list never gets a prevResult on ADD */
		if (req->conf->prev_result)
			c->link = CNICONF_LINK_RDMA;
		return 0;
	case CNISPEC_CMD_DEL:
	case CNISPEC_CMD_CHECK:
		/* libcni passes the list's final result to every plugin on DEL and CHECK: only the
		 * record says which role ADD took. One that cannot be read is still the rdma link's. */
		r = attach_record_load_rdma(c->state_dir, req->conf->name, req->env->container_id,
					    req->env->ifname, &st);
		if (r != 0)
			c->link = CNICONF_LINK_RDMA;
		return 0;
	default: return 0;
	}
}

/* Links whose RDMA device is their parent's, shared with every other child of it. */
static bool is_child(const struct nl_link *l)
{
	static const char *const kinds[] = { "macvlan", "macvtap", "ipvlan",
					     "ipvtap",	"ipoib",   "vlan" };

	if (l->link_ifindex <= 0)
		return false; /* an IPoIB netdev of its own port reports no IFLA_LINK */
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(l->kind, kinds[i]))
			return true;
	return false;
}

/* The pod's interface that prevResult names CNI_IFNAME, its PCI function and that function's
 * one RDMA device, into st. Changes nothing. */
static int find_device(struct cni_ctx *c, struct attach_record *st, struct cnispec_error *err)
{
	const struct cnispec_result *prev = c->req->conf->prev_result;
	const char *bdf = c->cfg->device_id[0] ? c->cfg->device_id : NULL;
	struct hw_pci_function f = { .vf_index = -1 };
	bool listed = false;
	struct nl_link l;
	int r;

	for (size_t i = 0; i < prev->n_interfaces && !listed; i++)
		listed = prev->interfaces[i].name && !strcmp(prev->interfaces[i].name, c->ifname) &&
			 prev->interfaces[i].sandbox && prev->interfaces[i].sandbox[0];
	if (!listed)
		return cnispec_fail(
			err, -ENODEV, CNI_E_DEVICE, "no interface to take the RDMA device of",
			"prevResult lists no interface %s in a sandbox: the rdma link follows the plugin that "
			"makes CNI_IFNAME in the pod (sriov, host-device, rdmak-cni hostdev)",
			c->ifname);
	r = nl_link_get(c->pod, c->ifname, &l);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "looking up %s in the pod",
				   c->ifname);
	if (r == 0)
		return cnispec_fail(
			err, -ENODEV, CNI_E_DEVICE,
			"the previous plugin's interface is not in the pod",
			"prevResult lists %s in the sandbox, the pod's namespace has no such link",
			c->ifname);
	log_debug("%s in the pod: kind %s, parent device %s, deviceID %s", c->ifname,
		  l.kind[0] ? l.kind : "-", l.parent_dev[0] ? l.parent_dev : "-", bdf ? bdf : "-");
	if (is_child(&l))
		return cnispec_fail(
			err, -EINVAL, CNI_E_RDMA,
			"rdma: the interface is a child of another netdev",
			"%s is a %s link: it shares its parent's RDMA device with every other child, and that "
			"device cannot move into one pod; give the pod a whole netdev (sriov, host-device, "
			"rdmak-cni hostdev) before the rdma link, or leave the rdma link out (RDMA shared mode)",
			c->ifname, l.kind);
	if (l.parent_dev[0] && !strcmp(l.parent_bus, "pci")) {
		/* Multus writes the device plugin's allocation as deviceID: it must be this netdev */
		if (bdf && strcmp(bdf, l.parent_dev))
			return cnispec_fail(err, -EINVAL, CNI_E_DEVICE,
					    "deviceID is not the interface's PCI function",
					    "%s in the pod is PCI function %s, deviceID says %s",
					    c->ifname, l.parent_dev, bdf);
		bdf = l.parent_dev;
	}
	if (bdf && !hw_is_bdf(bdf))
		return cnispec_fail(err, -EINVAL, CNI_E_DEVICE, "rdma: not a PCI address",
				    "%s's parent device is %s", c->ifname, bdf);
	if (!bdf)
		return cnispec_fail(
			err, -ENODEV, CNI_E_DEVICE, "rdma: no PCI function",
			"the kernel names no PCI function for %s in the pod (a virtual netdev, or a kernel "
			"before 5.16 without IFLA_PARENT_DEV_NAME) and the configuration has no deviceID "
			"(Multus writes the device plugin's allocation there)",
			c->ifname);
	r = hw_pci_read_function(c->hw, bdf, &f);
	if (r < 0)
		return cnispec_fail(err, r, CNI_E_DEVICE, "reading the PCI function failed",
				    "%s/bus/pci/devices/%s: %s", hw_ctx_sysfs(c->hw), bdf,
				    strerror(-r));
	if (f.n_rdma != 1) {
		r = f.n_rdma == 0
			    ? cnispec_fail(
				      err, -ENODEV, CNI_E_RDMA, "rdma: no RDMA device",
				      "%s (PCI %s) has no RDMA device under %s/bus/pci/devices/%s/infiniband",
				      c->ifname, bdf, hw_ctx_sysfs(c->hw), bdf)
			    : cnispec_fail(
				      err, -EINVAL, CNI_E_RDMA, "rdma: more than one RDMA device",
				      "PCI %s has %zu RDMA devices (%s, %s%s): which one to move is not known (rdma-cni: "
				      "\"discovered more than one RDMA device\")",
				      bdf, f.n_rdma, f.rdma[0], f.rdma[1],
				      f.n_rdma > 2 ? ", ..." : "");
		hw_pci_function_clear(&f);
		return r;
	}
	snprintf(st->netns, sizeof(st->netns), "%s", c->req->env->netns);
	snprintf(st->host_name, sizeof(st->host_name), "%s", l.name);
	st->host_ifindex = l.ifindex;
	memcpy(st->pci, bdf, strlen(bdf) + 1); /* hw_is_bdf: it fits */
	snprintf(st->rdma_dev, sizeof(st->rdma_dev), "%s", f.rdma[0]);
	hw_pci_function_clear(&f);
	return 0;
}

static int save(struct cni_ctx *c, const struct attach_record *st, struct cnispec_error *err)
{
	const struct cnispec_request *req = c->req;
	int r = attach_record_save_rdma(c->cfg->state_dir, req->conf->name, req->env->container_id,
					c->ifname, st);

	if (r < 0)
		return cnispec_fail(err, r, CNI_E_STATE, "writing the attachment record failed",
				    "%s/%s/%s:%s:rdma: %s", c->cfg->state_dir, req->conf->name,
				    req->env->container_id, c->ifname, strerror(-r));
	return 0;
}

static void forget(struct cni_ctx *c)
{
	(void)attach_record_remove_rdma(c->cfg->state_dir, c->req->conf->name,
					c->req->env->container_id, c->ifname);
}

/* After a failure, what it was about, so that the message names the device: " (moving ...)". */
static void add_context(struct cnispec_error *err, const struct attach_record *st)
{
	size_t n = strlen(err->details);

	snprintf(err->details + n, sizeof(err->details) - n,
		 " (moving %s, the RDMA device of %s, PCI %s, into the pod)", st->rdma_dev,
		 st->host_name, st->pci);
}

int cni_chain_add(const struct cniconf *cfg, const struct cnispec_request *req,
		  struct cnispec_result **ret, struct cnispec_error *err)
{
	struct attach_record st = { .vf_index = -1 };
	struct cni_ctx c;
	int r;

	if (!req->conf->prev_result)
		return cnispec_fail(
			err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration: prevResult",
			"missing: the rdma link runs after the plugin that makes the interface, in a conflist, "
			"and takes that plugin's result (rdma-cni: \"RDMA-CNI is expected to be called as part "
			"of a plugin chain\")");
	if ((r = cni_ctx_open(&c, cfg, req, req->env->ifname, err)) < 0 ||
	    (r = cni_ctx_open_pod(&c, req->env->netns, err)) < 0)
		goto out;
	if (!c.pod) {
		r = cni_pod_missing(req->env->netns, err);
		goto out;
	}
	/* the device first, then the kernel's mode: a refusal names the device it was for */
	if ((r = find_device(&c, &st, err)) < 0)
		goto out;
	if ((r = cni_rdma_check_mode(err)) < 0) {
		add_context(err, &st);
		goto out;
	}
	/* the record first: a plugin killed after the move still tells DEL what to give back */
	st.rdma_moved = true;
	if ((r = save(&c, &st, err)) < 0)
		goto out;
	if ((r = cni_rdma_move(st.rdma_dev, c.host_ns, c.pod_ns, err)) < 0) {
		add_context(err, &st);
		forget(&c);
		goto out;
	}
	if ((r = cnispec_result_dup(req->conf->prev_result, ret)) < 0) {
		struct cnispec_error e = { 0 };

		if (cni_rdma_move(st.rdma_dev, c.pod_ns, c.host_ns, &e) < 0)
			log_warning("rollback: moving %s back failed: %s (%s)", st.rdma_dev, e.msg,
				    e.details);
		else
			forget(&c);
		goto out;
	}
	log_info("%s: RDMA device %s (PCI %s) moved into the pod", c.ifname, st.rdma_dev, st.pci);
out:
	cni_ctx_close(&c);
	return r;
}

/* Give the record's device back from the namespace pod_ns: 0 when it is on the host. */
static int give_back(const struct attach_record *st, int pod_ns, int host_ns,
		     struct cnispec_error *err)
{
	int r = cni_rdma_move(st->rdma_dev, pod_ns, host_ns, err);

	if (r == -ENODEV && cni_rdma_visible(st->rdma_dev, host_ns, err) == 1)
		return 0; /* back already (a DEL run twice, or killed after the move) */
	return r;
}

int cni_chain_del(const struct cniconf *cfg, const struct cnispec_request *req,
		  struct cnispec_error *err)
{
	struct attach_record st = { .vf_index = -1 };
	struct cni_ctx c;
	int r;

	if ((r = cni_ctx_open(&c, cfg, req, req->env->ifname, err)) < 0 ||
	    (r = cni_ctx_open_pod(&c, req->env->netns, err)) < 0)
		goto out;
	r = attach_record_load_rdma(cfg->state_dir, req->conf->name, req->env->container_id,
				    c.ifname, &st);
	if (r <= 0) {
		if (r < 0)
			log_warning(
				"record of %s:%s unreadable (%s): the RDMA device cannot be given back",
				req->env->container_id, c.ifname, strerror(-r));
		else
			log_debug("no record of %s:%s: no RDMA device was moved",
				  req->env->container_id, c.ifname);
		r = 0;
		goto out;
	}
	/* without the namespace: the kernel gave its RDMA devices back to the initial one */
	if (c.pod && (r = give_back(&st, c.pod_ns, c.host_ns, err)) < 0)
		goto out;
	forget(&c);
	r = 0;
out:
	cni_ctx_close(&c);
	return r;
}

int cni_chain_check(const struct cniconf *cfg, const struct cnispec_request *req,
		    struct cnispec_error *err)
{
	struct attach_record st = { .vf_index = -1 };
	struct cni_ctx c;
	int r;

	if ((r = cni_ctx_open(&c, cfg, req, req->env->ifname, err)) < 0 ||
	    (r = cni_ctx_open_pod(&c, req->env->netns, err)) < 0)
		goto out;
	if (!c.pod) {
		r = cni_pod_missing(req->env->netns, err);
		goto out;
	}
	r = attach_record_load_rdma(cfg->state_dir, req->conf->name, req->env->container_id,
				    c.ifname, &st);
	if (r <= 0) {
		r = r < 0 ? cnispec_fail(err, r, CNI_E_STATE,
					 "reading the attachment record failed", "%s", strerror(-r))
			  : cni_check_fail(
				    err,
				    "no record of attachment %s:%s: the rdma link moved no RDMA device",
				    req->env->container_id, c.ifname);
		goto out;
	}
	r = cni_rdma_visible(st.rdma_dev, c.pod_ns, err);
	if (r == 0)
		r = cni_check_fail(err, "RDMA device %s is not in the pod's namespace",
				   st.rdma_dev);
	if (r > 0)
		r = 0;
out:
	cni_ctx_close(&c);
	return r;
}

int cni_chain_gc(const struct cniconf *cfg, const struct cnispec_request *req,
		 struct cnispec_error *err)
{
	_cleanup_strv_free_ char **ids = NULL, **ifnames = NULL;
	size_t n = 0;
	int r, first = 0;

	r = attach_record_list_rdma(cfg->state_dir, req->conf->name, &ids, &ifnames, &n);
	if (r < 0)
		return cnispec_fail(err, r, CNI_E_STATE, "listing attachment records failed",
				    "%s/%s: %s", cfg->state_dir, req->conf->name, strerror(-r));
	for (size_t i = 0; i < n; i++) {
		struct attach_record st = { .vf_index = -1 };
		struct cnispec_error e = { 0 };
		struct cni_ctx c;

		if (cnispec_conf_attachment_valid(req->conf, ids[i], ifnames[i]) ||
		    attach_record_load_rdma(cfg->state_dir, req->conf->name, ids[i], ifnames[i],
					    &st) <= 0)
			continue;
		if ((r = cni_ctx_open(&c, cfg, req, ifnames[i], &e)) == 0 &&
		    (r = cni_ctx_open_pod(&c, st.netns, &e)) == 0 && c.pod)
			r = give_back(&st, c.pod_ns, c.host_ns, &e);
		cni_ctx_close(&c);
		if (r < 0) {
			log_warning("GC: %s:%s: %s (%s)", ids[i], ifnames[i], e.msg, e.details);
			if (!first) {
				first = r;
				*err = e;
			}
			continue;
		}
		(void)attach_record_remove_rdma(cfg->state_dir, req->conf->name, ids[i],
						ifnames[i]);
	}
	return first;
}

int cni_chain_status(const struct cniconf *cfg, struct cnispec_error *err)
{
	struct cnispec_error e = { 0 };
	int r = cni_rdma_check_mode(&e);

	(void)cfg;
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_UNAVAILABLE, e.msg, "%s", e.details);
	return 0;
}
