/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-cni's commands. ADD undoes every step it made when a later one fails; DEL works with
 * or without the pod's namespace, prevResult or record, twice; CHECK compares the live state
 * with prevResult; GC gives back what dead attachments left; STATUS asks the kernel and IPAM. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni/cni.h"
#include "nodeconf/nodeconf.h"
#include "log/log.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

extern char **environ;

/* The request's context (cnispec_plugin_ops): its configuration, parsed once by setup for the
 * operation that follows and freed by done. */
static void op_done(void *ctx)
{
	struct cniconf *cfg = ctx;

	if (!cfg)
		return;
	cniconf_clear(cfg);
	free(cfg);
}

/* The keys accepted but not applied, kept until logLevel and logFile are in force, so that the
 * warnings reach the log file too. */
struct warnings {
	char **v;
	size_t n;
};

static void keep_warning(void *userdata, const char *path, const char *why)
{
	struct warnings *w = userdata;
	char *line = NULL;

	if (asprintf(&line, "%s: %s", path, why) >= 0)
		(void)strv_push(&w->v, &w->n, line); /* out of memory: one warning less */
}

/* link absent and only master given: macvlan or ipoib by the master's type on the host. */
static int resolve_link(struct cniconf *cfg, struct cnispec_error *err)
{
	struct nl_rt *rt = NULL;
	int r;

	if (!cfg->link_by_master)
		return 0;
	r = nl_rt_open(-1, &rt);
	if (r == 0)
		r = cni_config_resolve_link(cfg, rt);
	nl_rt_free(rt);
	if (r < 0)
		return cni_fail_nl(err, r, NULL, "looking up master %s for its link type",
				   cfg->master);
	log_debug("link %s, by master %s's link type (the configuration has no link)",
		  cniconf_link_name(cfg->link), cfg->master);
	return 0;
}

static int op_setup(const struct cnispec_request *req, void **ret_ctx, struct cnispec_error *err)
{
	struct cniconf *cfg = calloc(1, sizeof(*cfg));
	struct warnings w = { 0 };
	struct nodeconf node = { 0 };
	char why[NODECONF_ERR_MAX];
	int r;

	if (!cfg)
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	r = cniconf_parse_cmd(req->conf, req->env->cmd, cfg, keep_warning, &w, err);
	if (r < 0) {
		strv_free(w.v);
		free(cfg);
		return r;
	}
	/* what the network names of the node's: the node's CNI settings say what it may name */
	if ((r = nodeconf_load(NULL, &node, why, sizeof(why))) < 0)
		r = cnispec_fail(err, r, CNISPEC_E_CONFIG, "the node's CNI settings cannot be read",
				 "%s", why);
	else
		r = cniconf_resolve(cfg, &node, req->env->cmd, keep_warning, &w, err);
	nodeconf_clear(&node);
	if (r == 0 && (r = cni_partition_setup(cfg)) < 0)
		r = cnispec_fail(err, r, CNISPEC_E_INTERNAL, "out of memory", NULL);
	if (r == 0 && !cni_partition_here(cfg))
		r = cnispec_exec_full(req, "rdmak-cni",
				      "a network with a fabric needs the full rdmak", err);
	/* DEL and GC go on without a log file they cannot have: stderr has every line */
	if (r == 0 && (r = cniconf_open_dirs(cfg, false, err)) < 0 &&
	    (req->env->cmd == CNISPEC_CMD_DEL || req->env->cmd == CNISPEC_CMD_GC)) {
		keep_warning(&w, "not written", err->details);
		free(cfg->log_file);
		cfg->log_file = NULL;
		r = 0;
	}
	if (r < 0) {
		strv_free(w.v);
		op_done(cfg);
		return r;
	}
	if (cfg->has_log_level)
		log_set_max_level(cfg->log_level);
	if (cfg->log_file && (r = log_open_file(cfg->log_file)) < 0)
		log_warning("logFile %s: %s, logging to stderr only", cfg->log_file,
			    r == -FILEIO_ENOTREG ? "not a regular file" : strerror(-r));
	for (size_t i = 0; i < w.n; i++)
		log_warning("%s", w.v[i]);
	strv_free(w.v);
	if ((r = resolve_link(cfg, err)) < 0 || (r = cni_config_resolve_chain(cfg, req)) < 0 ||
	    ((cfg->link == CNICONF_LINK_HOSTDEV || cfg->link == CNICONF_LINK_RDMA) &&
	     (r = cniconf_open_dirs(cfg, true, err)) < 0)) {
		op_done(cfg);
		return r;
	}
	/* rdma-cni's own switch for its debug log ("args": {"cni": {"debug": true}}) */
	if (cfg->link == CNICONF_LINK_RDMA && !cfg->has_log_level &&
	    json_is_true(json_object_get(json_object_get(req->conf->args, "cni"), "debug")))
		log_set_max_level(LOG_LEVEL_DEBUG);
	*ret_ctx = cfg;
	return 0;
}

int cni_ctx_save_state(struct cni_ctx *c, struct cnispec_error *err)
{
	int r = attach_record_save(c->cfg->state_dir, c->req->conf->name, c->req->env->container_id,
				   c->ifname, c->st);

	if (r < 0)
		return cnispec_fail(err, r, CNI_E_STATE, "writing the attachment record failed",
				    "%s/%s/%s:%s: %s", c->cfg->state_dir, c->req->conf->name,
				    c->req->env->container_id, c->ifname, strerror(-r));
	return 0;
}

void cni_ctx_close(struct cni_ctx *c)
{
	nl_rt_free(c->pod);
	nl_rt_free(c->host);
	hw_ctx_free(c->hw);
	if (c->pod_ns >= 0)
		close(c->pod_ns);
	if (c->host_ns >= 0)
		close(c->host_ns);
	c->pod = c->host = NULL;
	c->hw = NULL;
	c->pod_ns = c->host_ns = -1;
}

/* Open the pod's namespace at `netns` (may be NULL or ""): 0 and c->pod when it is there,
 * 0 without it when it is gone, <0 with err for anything else. */
int cni_ctx_open_pod(struct cni_ctx *c, const char *netns, struct cnispec_error *err)
{
	int r;

	if (!netns || !*netns)
		return 0;
	r = nl_netns_open(netns, &c->pod_ns);
	if (r == -ENOENT || r == -EINVAL)
		return 0; /* gone, or a file left where it was mounted */
	if (r < 0)
		return cnispec_fail(err, r, CNISPEC_E_IO,
				    "opening the pod's network namespace failed", "%s: %s", netns,
				    strerror(-r));
	r = nl_netns_same(c->pod_ns, c->host_ns);
	if (r != 0)
		return cnispec_fail(
			err, r < 0 ? r : -EINVAL, CNISPEC_E_ENV,
			"invalid environment variables: CNI_NETNS",
			"CNI_NETNS %s is the plugin's own network namespace, not a pod's", netns);
	/* bound to the host handle's port id: it hears the echo of the link ADD makes in the pod */
	r = nl_rt_open_peer(c->pod_ns, c->host, &c->pod);
	if (r < 0)
		return cni_fail_nl(err, r, NULL, "opening rtnetlink in %s", netns);
	return 0;
}

/* ADD and CHECK without the pod's namespace: gone (code 3), or a path that is something else,
 * named as what it is (code 4: the runtime gave a wrong CNI_NETNS). DEL and GC take both as
 * gone, since there is nothing in them to undo. */
int cni_pod_missing(const char *netns, struct cnispec_error *err)
{
	const char *what = NULL;
	int r = nl_netns_describe(netns, &what);

	if (r == 1)
		return cnispec_fail(
			err, -EINVAL, CNISPEC_E_ENV, "invalid environment variables: CNI_NETNS",
			"CNI_NETNS %s is %s, not a network namespace (nsfs)", netns, what);
	return cnispec_fail(err, -ENOENT, CNISPEC_E_UNKNOWN_CONTAINER,
			    "the pod's network namespace does not exist",
			    "CNI_NETNS %s: no such network namespace", netns);
}

int cni_ctx_open(struct cni_ctx *c, const struct cniconf *cfg, const struct cnispec_request *req,
		 const char *ifname, struct cnispec_error *err)
{
	int r;

	*c = (struct cni_ctx){
		.req = req, .cfg = cfg, .ifname = ifname, .host_ns = -1, .pod_ns = -1
	};
	if (cfg->link == CNICONF_LINK_HOSTDEV || cfg->link == CNICONF_LINK_RDMA) {
		r = hw_ctx_new(cfg->sysfs, NULL, &c->hw);
		if (r < 0)
			return cnispec_fail(err, r, CNISPEC_E_CONFIG,
					    "invalid network configuration: sysfs", "sysfs: %s: %s",
					    cfg->sysfs ? cfg->sysfs : "/sys", strerror(-r));
	}
	if ((r = nl_netns_open_self(&c->host_ns)) < 0)
		return cnispec_fail(err, r, CNISPEC_E_IO,
				    "opening the plugin's network namespace failed", "%s",
				    strerror(-r));
	if ((r = nl_rt_open(-1, &c->host)) < 0)
		return cni_fail_nl(err, r, NULL, "opening rtnetlink");
	if (cfg->policy_routing && ifname && cfg->link != CNICONF_LINK_RDMA) {
		c->table = cni_route_table(cfg->table_base, ifname);
		/* ADD refused it, so DEL and GC have no table to clean: they go on without one */
		if (!c->table &&
		    (req->env->cmd == CNISPEC_CMD_DEL || req->env->cmd == CNISPEC_CMD_GC))
			return 0;
		if (!c->table)
			return cnispec_fail(
				err, -EINVAL, CNISPEC_E_CONFIG,
				"invalid network configuration: tableBase",
				"tableBase %u gives interface %s a reserved or too large table number (0, 253-255 "
				"or past 2^31)",
				cfg->table_base, ifname);
	}
	return 0;
}

/* ADD's first check: the interface's table holds nothing of another interface. */
static int table_free(struct cni_ctx *c, struct cnispec_error *err)
{
	struct nl_route *v = NULL;
	size_t n = 0;
	int r;

	if (!c->table)
		return 0;
	r = nl_route_list(c->pod, AF_UNSPEC, c->table, &v, &n);
	if (r < 0)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "listing table %u", c->table);
	for (size_t i = 0; i < n; i++) {
		struct nl_link l;
		if (v[i].ifindex > 0 && nl_link_get_by_index(c->pod, v[i].ifindex, &l) > 0) {
			free(v);
			return cnispec_fail(
				err, -EEXIST, CNI_E_TABLE, "routing table in use",
				"table %u (from interface name %s and tableBase %u) already routes through %s: give "
				"the pod's interfaces names that end in different numbers, or networks different "
				"tableBase values",
				c->table, c->ifname, c->cfg->table_base, l.name);
		}
	}
	free(v);
	return 0;
}

int cni_link_settings(struct cni_ctx *c, struct nl_link *l, struct cnispec_error *err)
{
	struct nl_link_change ch;
	int r;

	nl_link_change_init(&ch);
	ch.mtu = c->cfg->mtu;
	if (c->cfg->has_mac) {
		ch.addr = c->cfg->mac;
		ch.addr_len = 6;
	}
	ch.up = 1;
	if ((r = nl_link_change(c->pod, l->ifindex, &ch)) < 0 && !ch.mtu && !ch.addr)
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "setting %s up", c->ifname);
	if (r < 0) /* the flags come last: a refusal is the MTU's or the address's */
		return cni_fail_nl(err, r, nl_rt_errmsg(c->pod), "setting %s%s%s of %s",
				   ch.mtu ? "the MTU" : "", ch.mtu && ch.addr ? " and " : "",
				   ch.addr ? "the MAC address" : "", c->ifname);
	if (ch.mtu)
		l->mtu = ch.mtu;
	if (ch.addr) {
		memcpy(l->addr, ch.addr, ch.addr_len);
		l->addr_len = ch.addr_len;
	}
	l->flags |= IFF_UP;
	return 0;
}

/* The IPAM plugin, as the spec delegates it: exec'd from CNI_PATH. When the plugin found there
 * is this binary (rdmak-ipam: the links `make install` and the DaemonSet make) and this process
 * can serve the request, it runs here instead (a plugin main() registered): the same code on the
 * same request, two execs fewer per ADD+DEL. */
static int ipam_call(const struct cnispec_request *req, enum cnispec_cmd cmd,
		     struct cnispec_result **ret, struct cnispec_error *err)
{
	const struct cnispec_plugin_ops *ops = cnispec_plugin_in_process(req, req->conf->ipam_type);

	if (ops) {
		log_debug("%s %s in this process (CNI_PATH's %s is this binary)", ops->name,
			  cnispec_cmd_name(cmd), ops->name);
		return cnispec_delegate_in_process(ops, req, cmd, ret, err);
	}
	return cnispec_delegate(req->conf->ipam_type, cmd, req->env->path, req->envp, req->buf,
				req->len, req->conf->version, ret, err);
}

static void log_undo(const char *what, const struct cnispec_error *e)
{
	log_warning("rollback: %s failed: %s (%s)", what, e->msg, e->details);
}

/* Undo what ADD did, in reverse, after a failure (logged, never replacing ADD's error). */
static void add_rollback(struct cni_ctx *c, const struct cni_link_ops *ops, bool attached,
			 bool ipam_done)
{
	struct cnispec_error e = { 0 };
	int r;

	if (attached && cni_routing_teardown(c, false, &e) < 0)
		log_undo("removing the rules", &e);
	if (ipam_done) {
		e = (struct cnispec_error){ 0 };
		if (ipam_call(c->req, CNISPEC_CMD_DEL, NULL, &e) < 0)
			log_undo("releasing the IPAM address", &e);
	}
	e = (struct cnispec_error){ 0 };
	/* the partition first: the GUID leaves while the VF is still this attachment's */
	if (c->st && cni_partition_leave(c, c->req->conf->name, c->req->env->container_id,
					 c->ifname, &e) < 0) {
		log_undo("leaving the partition", &e);
		return; /* the record stays, naming the GUID */
	}
	e = (struct cnispec_error){ 0 };
	r = ops->detach(c, &e);
	if (r != 0) {
		if (r < 0)
			log_undo("giving the device back", &e);
		return; /* the record stays: DEL or GC will finish the job */
	}
	if (c->st)
		(void)attach_record_remove(c->cfg->state_dir, c->req->conf->name,
					   c->req->env->container_id, c->ifname);
}

/* What the pod got, into the record: `rdmak dra` publishes it as the claim's networkData. */
static void record_pod(struct attach_record *st, const char *mac, const struct cnispec_result *res,
		       size_t idx)
{
	snprintf(st->pod_mac, sizeof(st->pod_mac), "%s", mac);
	st->n_pod_ips = 0;
	for (size_t i = 0; i < res->n_ips && st->n_pod_ips < ATTACH_POD_IPS_MAX; i++)
		if (res->ips[i].interface == (int)idx)
			cnispec_prefix_str(&res->ips[i].address, st->pod_ips[st->n_pod_ips++]);
}

static int op_add(void *ctx, const struct cnispec_request *req, struct cnispec_result **ret,
		  struct cnispec_error *err)
{
	const struct cniconf *cfg = ctx;
	const struct cni_link_ops *ops = cni_link_ops_get(cfg->link);
	struct attach_record st = { .vf_index = -1 };
	struct cnispec_result *ipam = NULL, *res = NULL;
	struct cnispec_interface iface = { 0 };
	struct cni_ctx c;
	struct nl_link l;
	bool attached = false, ipam_done = false;
	char mac[3 * 32 + 1];
	size_t idx;
	int ifindex = 0, r;

	/* the rdma link makes no interface (chain.c) */
	if (cfg->link == CNICONF_LINK_RDMA)
		return cni_chain_add(cfg, req, ret, err);

	/* IP= is for the IPAM plugin, which gets CNI_ARGS as they are; without one, the address
	 * asked for would silently not be given */
	if (req->env->ip && !req->conf->ipam_type)
		return cnispec_fail(err, -EINVAL, CNISPEC_E_ENV,
				    "invalid environment variables: CNI_ARGS",
				    "IP=%s: network %s has no ipam to give an address",
				    req->env->ip, req->conf->name);
	if ((r = cni_ctx_open(&c, cfg, req, req->env->ifname, err)) < 0)
		goto out;
	if ((r = cni_ctx_open_pod(&c, req->env->netns, err)) < 0)
		goto out;
	if (!c.pod) {
		r = cni_pod_missing(req->env->netns, err);
		goto out;
	}
	if (!ops->creates_by_name && (r = nl_link_get(c.pod, c.ifname, &l)) != 0) {
		r = r < 0 ? cni_fail_nl(err, r, nl_rt_errmsg(c.pod), "looking up %s in the pod",
					c.ifname)
			  : cnispec_fail(err, -EEXIST, CNI_E_IFNAME_TAKEN, "interface name taken",
					 "%s already exists in the pod", c.ifname);
		goto out;
	}
	if ((r = table_free(&c, err)) < 0) {
		/* the table is most often taken by an interface of the same name: say so (a GETLINK
		 * on this path only, where ADD asked none before making the link) */
		if (ops->creates_by_name && err->code == CNI_E_TABLE &&
		    nl_link_get(c.pod, c.ifname, &l) > 0)
			r = cnispec_fail(err, -EEXIST, CNI_E_IFNAME_TAKEN, "interface name taken",
					 "%s already exists in the pod", c.ifname);
		goto out;
	}
	if (cfg->link == CNICONF_LINK_HOSTDEV) {
		c.st = &st;
		snprintf(st.netns, sizeof(st.netns), "%s", req->env->netns);
	}
	if ((r = ops->prepare(&c, err)) < 0)
		goto out;
	if (cfg->rdma_isolation && (r = cni_rdma_check_mode(err)) < 0)
		goto out;
	/* the record first: a plugin killed from here on still tells DEL what to give back; with a
	 * partition, cni_partition_join writes it, the GUID in it, before the fabric manager hears
	 * of it (one write less: two fsyncs) */
	if (c.st && !cni_partition_wanted(cfg) && (r = cni_ctx_save_state(&c, err)) < 0)
		goto out;
	/* before the device moves: a fabric manager that is down fails ADD with the least to undo */
	if (c.st && (r = cni_partition_join(&c, err)) < 0) {
		attached = false;
		goto fail;
	}
	r = ops->attach(&c, &l, err);
	/* detach is idempotent: it also undoes a partial attach; but a name the kernel found taken
	 * is another attachment's interface, and nothing was made */
	attached = !(ops->creates_by_name && r == -EEXIST);
	if (r < 0)
		goto fail;
	ifindex = l.ifindex;
	if (req->conf->ipam_type) {
		r = ipam_call(req, CNISPEC_CMD_ADD, &ipam, err);
		if (r < 0)
			goto fail;
		ipam_done = true;
	} else if (!(ipam = cnispec_result_new())) {
		r = -ENOMEM;
		goto fail;
	}
	/* chained after another plugin: its result goes on, with ours added */
	r = req->conf->prev_result ? cnispec_result_dup(req->conf->prev_result, &res) : 0;
	if (r < 0 || (!res && !(res = cnispec_result_new()))) {
		r = r < 0 ? r : -ENOMEM;
		goto fail;
	}
	/* the link as attach made it, configured and up: no GETLINK to read it back */
	str_hwaddr(l.addr, l.addr_len, mac);
	iface.name = (char *)c.ifname;
	iface.mac = mac;
	iface.mtu = l.mtu;
	iface.sandbox = req->env->netns;
	iface.pci_id = (char *)ops->pci_id(&c);
	if ((r = cnispec_result_add_interface(res, &iface, &idx)) < 0)
		goto fail;
	if ((r = cni_routing_setup(&c, ifindex, ipam, res, idx, err)) < 0)
		goto fail;
	if ((r = cnispec_result_set_dns(res, &ipam->dns)) < 0)
		goto fail;
	if (c.st)
		record_pod(&st, mac, res, idx);
	if (c.st && (r = cni_ctx_save_state(&c, err)) < 0)
		goto fail;
	log_info("%s: %s%s%s in the pod, %zu address(es)%s", c.ifname, cniconf_link_name(cfg->link),
		 c.st ? " " : "", c.st ? st.host_name : "", ipam->n_ips,
		 c.table ? ", with its own routing table" : "");
	*ret = TAKE_PTR(res);
	r = 0;
	goto out;
fail:
	add_rollback(&c, ops, attached, ipam_done);
out:
	cnispec_result_free(ipam);
	cnispec_result_free(res);
	cni_ctx_close(&c);
	return r;
}

/* Give one attachment back: routing in the pod, the link, and the record. keep: the record
 * must stay (the device is not back on the host yet). */
static int teardown(struct cni_ctx *c, const struct cni_link_ops *ops, bool *keep,
		    struct cnispec_error *err)
{
	struct cnispec_error e = { 0 };
	int r, first = 0;

	*keep = false;
	if (c->pod) {
		/* the link first: its table's routes go with it (or with its move out of the pod), so
		 * only the rules, which outlive it, are left to find and remove */
		bool link_gone = false;
		if (c->cfg->link != CNICONF_LINK_HOSTDEV || c->st) {
			r = ops->detach(c, &e);
			if (r > 0)
				*keep = true;
			else if (r < 0) {
				first = r;
				*err = e;
			}
			link_gone = r == 0;
		}
		e = (struct cnispec_error){ 0 };
		if ((r = cni_routing_teardown(c, link_gone, &e)) < 0 && !first) {
			first = r;
			*err = e;
		}
	} else if (c->cfg->link != CNICONF_LINK_HOSTDEV || c->st) {
		r = ops->reclaim(c, &e);
		if (r > 0)
			*keep = true;
		else if (r < 0 && !first) {
			first = r;
			*err = e;
		}
	}
	if (first < 0)
		*keep = true;
	return first;
}

static int op_del(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	const struct cniconf *cfg = ctx;
	const struct cni_link_ops *ops = cni_link_ops_get(cfg->link);
	struct attach_record st = { .vf_index = -1 };
	struct cnispec_error e = { 0 };
	struct cni_ctx c;
	bool keep = false;
	int r, first = 0;

	if (cfg->link == CNICONF_LINK_RDMA)
		return cni_chain_del(cfg, req, err);

	if ((r = cni_ctx_open(&c, cfg, req, req->env->ifname, err)) < 0)
		goto out;
	if ((r = cni_ctx_open_pod(&c, req->env->netns, err)) < 0)
		goto out;
	if (cfg->link == CNICONF_LINK_HOSTDEV) {
		r = attach_record_load(cfg->state_dir, req->conf->name, req->env->container_id,
				       c.ifname, &st);
		if (r < 0)
			log_warning(
				"record of %s:%s unreadable (%s): the device cannot be given back",
				req->env->container_id, c.ifname, strerror(-r));
		else if (r == 0)
			log_debug("no record of %s:%s: nothing was moved", req->env->container_id,
				  c.ifname);
		else
			c.st = &st;
	}
	/* the partition first, while the VF is still this attachment's: a fabric manager that does
	 * not answer gets the removal journaled; only a journal that cannot be written fails DEL */
	if (c.st && st.fabric) {
		if ((r = cni_partition_leave(&c, req->conf->name, req->env->container_id, c.ifname,
					     err)) < 0)
			goto out;
		(void)attach_record_save(cfg->state_dir, req->conf->name, req->env->container_id,
					 c.ifname, &st);
	} else if (cni_partition_wanted(cfg) && (r = cni_partition_gc(cfg)) < 0) {
		log_warning("retrying journaled partition removals: %s", strerror(-r));
	}
	first = teardown(&c, ops, &keep, err);
	/* IPAM is released whatever happened above: an address must not leak because a device did */
	/* A failure, an IPAM plugin missing from CNI_PATH included (a DaemonSet upgrade half-way),
	 * fails DEL: the runtime retries it, where succeeding would leak the address for good. */
	if (req->conf->ipam_type && (r = ipam_call(req, CNISPEC_CMD_DEL, NULL, &e)) < 0 && !first) {
		first = r;
		*err = e;
	}
	if (c.st && !keep)
		(void)attach_record_remove(cfg->state_dir, req->conf->name, req->env->container_id,
					   c.ifname);
	/* what an ADD killed while writing the record left, with or without a record */
	if (cfg->link == CNICONF_LINK_HOSTDEV &&
	    (r = attach_record_tidy(cfg->state_dir, req->conf->name, req->env->container_id,
				    c.ifname, NULL)) < 0)
		log_warning("removing %s:%s's stale temp files: %s", req->env->container_id,
			    c.ifname, strerror(-r));
	r = first;
out:
	cni_ctx_close(&c);
	return r;
}

static int op_check(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	const struct cniconf *cfg = ctx;
	const struct cni_link_ops *ops = cni_link_ops_get(cfg->link);
	const struct cnispec_result *prev = req->conf->prev_result;
	const struct cnispec_interface *pi = NULL;
	struct attach_record st = { .vf_index = -1 };
	struct cni_ctx c;
	struct nl_link l;
	char mac[3 * 32 + 1];
	int r;

	if (cfg->link == CNICONF_LINK_RDMA)
		return cni_chain_check(cfg, req, err);

	if (!prev)
		return cnispec_fail(err, -EINVAL, CNISPEC_E_CONFIG,
				    "invalid network configuration: prevResult",
				    "CHECK needs prevResult: the result of the ADD it checks");
	if ((r = cni_ctx_open(&c, cfg, req, req->env->ifname, err)) < 0 ||
	    (r = cni_ctx_open_pod(&c, req->env->netns, err)) < 0)
		goto out;
	if (!c.pod) {
		r = cni_pod_missing(req->env->netns, err);
		goto out;
	}
	for (size_t i = 0; i < prev->n_interfaces && !pi; i++)
		if (prev->interfaces[i].name && !strcmp(prev->interfaces[i].name, c.ifname) &&
		    prev->interfaces[i].sandbox && prev->interfaces[i].sandbox[0])
			pi = &prev->interfaces[i];
	if (!pi) {
		r = cni_check_fail(err, "prevResult lists no interface %s in a sandbox", c.ifname);
		goto out;
	}
	if (cfg->link == CNICONF_LINK_HOSTDEV) {
		r = attach_record_load(cfg->state_dir, req->conf->name, req->env->container_id,
				       c.ifname, &st);
		if (r <= 0) {
			r = r < 0 ? cnispec_fail(err, r, CNI_E_STATE,
						 "reading the attachment record failed", "%s",
						 strerror(-r))
				  : cni_check_fail(
					    err,
					    "no record of attachment %s:%s: the device was not moved by this plugin",
					    req->env->container_id, c.ifname);
			goto out;
		}
		c.st = &st;
	}
	r = nl_link_get(c.pod, c.ifname, &l);
	if (r <= 0) {
		r = r < 0 ? cni_fail_nl(err, r, nl_rt_errmsg(c.pod), "looking up %s", c.ifname)
			  : cni_check_fail(err, "%s is missing from the pod", c.ifname);
		goto out;
	}
	if ((r = ops->check(&c, &l, err)) < 0)
		goto out;
	str_hwaddr(l.addr, l.addr_len, mac);
	if (pi->mac && *pi->mac && strcasecmp(pi->mac, mac)) {
		r = cni_check_fail(err, "%s has MAC %s, prevResult says %s", c.ifname, mac,
				   pi->mac);
		goto out;
	}
	if (!(l.flags & IFF_UP)) {
		r = cni_check_fail(err, "%s is down", c.ifname);
		goto out;
	}
	if (cfg->mtu && l.mtu != cfg->mtu) {
		r = cni_check_fail(err, "%s has MTU %u, the configuration says %u", c.ifname, l.mtu,
				   cfg->mtu);
		goto out;
	}
	if ((r = cni_routing_check(&c, l.ifindex, prev, err)) < 0)
		goto out;
	if (req->conf->ipam_type)
		r = ipam_call(req, CNISPEC_CMD_CHECK, NULL, err);
out:
	cni_ctx_close(&c);
	return r;
}

static int op_gc(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	const struct cniconf *cfg = ctx;
	const struct cni_link_ops *ops = cni_link_ops_get(cfg->link);
	_cleanup_strv_free_ char **ids = NULL, **ifnames = NULL;
	struct cnispec_error e = { 0 };
	size_t n = 0, done = 0;
	int r, first = 0;

	if (cfg->link == CNICONF_LINK_RDMA)
		return cni_chain_gc(cfg, req, err);

	/* only hostdev leaves something on the host (its record and a device the kernel gave
	 * back under another name); macvlan and IPoIB children die with their namespace */
	if (cfg->link == CNICONF_LINK_HOSTDEV) {
		r = attach_record_list(cfg->state_dir, req->conf->name, &ids, &ifnames, &n);
		if (r < 0)
			first = cnispec_fail(err, r, CNI_E_STATE,
					     "listing attachment records failed", "%s/%s: %s",
					     cfg->state_dir, req->conf->name, strerror(-r));
	}
	for (size_t i = 0; i < n; i++) {
		struct attach_record st = { .vf_index = -1 };
		struct cnispec_request one = *req;
		struct cnispec_env env = *req->env;
		struct cni_ctx c;
		bool keep = false;

		if (cnispec_conf_attachment_valid(req->conf, ids[i], ifnames[i]))
			continue;
		env.container_id = ids[i];
		env.ifname = ifnames[i];
		one.env = &env;
		r = attach_record_load(cfg->state_dir, req->conf->name, ids[i], ifnames[i], &st);
		if (r <= 0) {
			if (r < 0)
				log_warning("GC: record %s:%s unreadable: %s", ids[i], ifnames[i],
					    strerror(-r));
			continue;
		}
		if ((r = cni_ctx_open(&c, cfg, &one, ifnames[i], &e)) == 0 &&
		    (r = cni_ctx_open_pod(&c, st.netns, &e)) == 0) {
			c.st = &st;
			if (st.fabric && (r = cni_partition_leave(&c, req->conf->name, ids[i],
								  ifnames[i], &e)) == 0)
				(void)attach_record_save(cfg->state_dir, req->conf->name, ids[i],
							 ifnames[i], &st);
			if (r == 0)
				r = teardown(&c, ops, &keep, &e);
		}
		cni_ctx_close(&c);
		if (r < 0) {
			log_warning("GC: %s:%s: %s (%s)", ids[i], ifnames[i], e.msg, e.details);
			if (!first) {
				first = r;
				*err = e;
			}
			continue;
		}
		if (!keep) {
			(void)attach_record_remove(cfg->state_dir, req->conf->name, ids[i],
						   ifnames[i]);
			done++;
		}
	}
	if (done)
		log_info("GC: gave back %zu stale attachment(s)", done);
	if (cfg->link == CNICONF_LINK_HOSTDEV) {
		size_t tidied = 0;

		/* records half-written by killed ADDs (attach_record_list skips their names) */
		r = attach_record_tidy(cfg->state_dir, req->conf->name, NULL, NULL, &tidied);
		if (r < 0)
			log_warning("GC: removing stale temp files in %s/%s: %s", cfg->state_dir,
				    req->conf->name, strerror(-r));
		if (tidied)
			log_info("GC: removed %zu temp file(s) of killed writers", tidied);
	}
	if (cni_partition_wanted(cfg) && (r = cni_partition_gc(cfg)) < 0)
		log_warning("GC: retrying journaled partition removals: %s", strerror(-r));
	/* IPAM's own reservations: passed on whatever happened above */
	if (req->conf->ipam_type && (r = ipam_call(req, CNISPEC_CMD_GC, NULL, &e)) < 0 && !first) {
		first = r;
		*err = e;
	}
	return first;
}

static int op_status(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	const struct cniconf *cfg = ctx;
	const struct cni_link_ops *ops = cni_link_ops_get(cfg->link);
	struct cni_ctx c;
	int r;

	if (cfg->link == CNICONF_LINK_RDMA)
		return cni_chain_status(cfg, err);

	if ((r = cni_ctx_open(&c, cfg, req, NULL, err)) == 0 && (r = ops->status(&c, err)) == 0 &&
	    req->conf->ipam_type)
		r = ipam_call(req, CNISPEC_CMD_STATUS, NULL, err);
	cni_ctx_close(&c);
	return r;
}

static const struct cnispec_plugin_ops cni_plugin_ops = {
	.name = "rdmak-cni",
	.setup = op_setup,
	.add = op_add,
	.del = op_del,
	.check = op_check,
	.gc = op_gc,
	.status = op_status,
	.done = op_done,
};

static void usage(FILE *f)
{
	fputs("Usage: rdmak-cni    (a CNI plugin: the runtime runs it with CNI_COMMAND and the config on stdin)\n"
	      "       rdmak cni --help\n\n"
	      "Gives a pod a secondary RDMA interface: \"link\": \"macvlan\" (a child of \"master\", \"mode\"\n"
	      "bridge|private|vepa|passthru), \"ipoib\" (a child of \"master\", \"pkey\") or \"hostdev\" (the\n"
	      "netdev of PCI function \"deviceID\" or named \"device\" moves in, with its RDMA device when\n"
	      "\"rdmaIsolation\" is true); after another plugin in a conflist, \"rdma\" moves the RDMA device of\n"
	      "the interface that plugin made (rdma-cni's role). Keys: sysfs, mtu, mac, guid, pkey, fabric\n"
	      "(hostdev: one of the node's fabrics, whose manager puts the VF's GUID into pkey; docs/fabric.md),\n"
	      "rdmaIsolation, policyRouting (default true: a table per interface), tableBase (100),\n"
	      "rulePriority (30000),\n"
	      "for a VF sriov-cni's vlan, vlanQoS, vlanProto, min_tx_rate, max_tx_rate, spoofchk, trust and\n"
	      "link_state (set through the PF, put back on DEL),\n"
	      "stateDir, logFile, logLevel, ipam. CNI 1.1.0 (ADD DEL CHECK GC STATUS VERSION) and 1.0.0,\n"
	      "0.4.0, 0.3.1, 0.3.0. Result or error JSON on stdout, logs on stderr. See docs/cni.md.\n",
	      f);
}

int cni_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, r;

	/* a runtime passes no arguments; a person asking for help passes --help */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak-cni: unexpected argument '%s'\n\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	r = cnispec_plugin_main(&cni_plugin_ops, environ, STDIN_FILENO, stdout);
	log_close_file();
	return r;
}
