/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak-ipam as a CNI IPAM plugin: cnispec runs the exchange, this file maps each command to
 * the allocator. The request's state (its configuration and the open store) is the context that
 * setup makes and done frees: nothing here outlives a request, in its own process or in
 * rdmak-cni's (cnispec_delegate_in_process). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipam/ipam.h"
#include "ipam/cni.h"
#include "log/log.h"
#include "nodeconf/nodeconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"

struct call {
	struct ipamconf *cfg;
	struct ipam_store *store;
};

static void done(void *ctx)
{
	struct call *p = ctx;

	if (!p)
		return;
	ipam_store_close(p->store);
	ipamconf_free(p->cfg);
	free(p);
}

static void donep(struct call **p)
{
	done(*p);
}

/* The per-pod binary holds no etcd store (ipam_store_etcd_linked): its rdmak-ipam becomes the
 * full rdmak (cnispec_exec_full). Returns only on failure. */
static int exec_full(const struct cnispec_request *req, struct cnispec_error *err)
{
	return cnispec_exec_full(req, "rdmak-ipam", "the etcd store needs the full rdmak", err);
}

/* DEL and GC delete what ADD made, with the config of its ADD (a runtime keeps it): they take
 * the shape it may have had (IPAMCONF_LEGACY). */
static unsigned ipam_parse_flags(const struct cnispec_request *req)
{
	return req->env->cmd == CNISPEC_CMD_DEL || req->env->cmd == CNISPEC_CMD_GC ? IPAMCONF_LEGACY
										   : 0;
}

bool ipam_plugin_runs_here(const struct cnispec_request *req)
{
	struct cnispec_error e = { 0 };
	struct ipamconf *cfg = NULL;
	bool here;

	if (ipam_store_etcd_linked() || !req->conf->ipam)
		return true;
	/* a config that does not parse is refused in process, as anywhere */
	if (ipamconf_parse_flags(req->conf->ipam, req->conf->name, ipam_parse_flags(req), &cfg,
				 &e) < 0)
		return true;
	here = cfg->store.kind != IPAMCONF_STORE_ETCD;
	ipamconf_free(cfg);
	return here;
}

/* Parse the ipam block, resolve what it names of the node's (its CNI settings: the etcd store,
 * the dataDir, the log file), set up logging, open the store. */
static int setup(const struct cnispec_request *req, void **ret_ctx, struct cnispec_error *err)
{
	_cleanup_(donep) struct call *p = NULL;
	unsigned flags = ipam_parse_flags(req);
	struct nodeconf node = { 0 };
	char why[600];
	int r;

	if (!req->conf->ipam)
		return cnispec_fail(
			err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
			"ipam: missing (rdmak-ipam reads its ranges from the \"ipam\" object)");
	if (!(p = calloc(1, sizeof(*p))))
		return cnispec_fail(err, -ENOMEM, CNISPEC_E_INTERNAL, "out of memory", NULL);
	r = ipamconf_parse_flags(req->conf->ipam, req->conf->name, flags, &p->cfg, err);
	if (r < 0)
		return r;
	if ((r = nodeconf_load(NULL, &node, why, sizeof(why))) < 0)
		return cnispec_fail(err, r, CNISPEC_E_CONFIG,
				    "the node's CNI settings cannot be read", "%s", why);
	r = ipamconf_resolve(p->cfg, &node, flags, err);
	nodeconf_clear(&node);
	if (r < 0)
		return r;
	/* the log file's folder beneath the node's logDir, never through a link: DEL and GC go on
	 * without it (stderr has every line) */
	if (p->cfg->log_file && p->cfg->log_dir &&
	    (r = nodeconf_log_folder(p->cfg->log_dir, p->cfg->log_file, why, sizeof(why))) < 0) {
		if (!(flags & IPAMCONF_LEGACY))
			return cnispec_fail(err, r, CNISPEC_E_CONFIG, "invalid IPAM configuration",
					    "%s: %s", p->cfg->log_key, why);
		log_warning("%s: %s: not written, lines go to stderr only", p->cfg->log_key, why);
		free(p->cfg->log_file);
		p->cfg->log_file = NULL;
	}
	if (p->cfg->log_file && (r = log_open_file(p->cfg->log_file)) < 0)
		log_warning("cannot open log file %s: %s", p->cfg->log_file,
			    r == -FILEIO_ENOTREG ? "not a regular file" : strerror(-r));
	if (p->cfg->has_log_level)
		log_set_max_level(p->cfg->log_level);
	for (size_t i = 0; i < p->cfg->n_warnings; i++)
		log_warning("%s", p->cfg->warnings[i]);
	/* with per-node blocks the etcd module is needed only for a new block (add() below) and GC,
	 * which gives empty blocks back */
	if (p->cfg->store.kind == IPAMCONF_STORE_ETCD && !ipam_store_etcd_linked() &&
	    (!p->cfg->store.block_size || req->env->cmd == CNISPEC_CMD_GC))
		return exec_full(req, err);
	r = ipam_store_open(&p->cfg->store, &p->store, why, sizeof(why));
	if (r < 0) {
		bool status = req->env->cmd == CNISPEC_CMD_STATUS;

		if (ipam_store_unreachable(r) || status)
			return cnispec_fail(err, r,
					    status ? CNISPEC_E_UNAVAILABLE : CNISPEC_E_TRY_AGAIN,
					    "the IPAM store cannot be reached", "%s", why);
		return cnispec_fail(err, r, r == -EOPNOTSUPP ? CNISPEC_E_CONFIG : CNISPEC_E_IO,
				    "cannot open the IPAM store", "%s", why);
	}
	*ret_ctx = TAKE_PTR(p);
	return 0;
}

static int add(void *ctx, const struct cnispec_request *req, struct cnispec_result **ret,
	       struct cnispec_error *err)
{
	struct call *p = ctx;
	const struct cnispec_env *e = req->env;
	struct ipam_owner o = { .container_id = e->container_id,
				.ifname = e->ifname,
				.pod_namespace = e->pod_namespace,
				.pod_name = e->pod_name,
				.pod_uid = e->pod_uid };
	struct cnispec_addr want;
	int r;

	/* IP= (the environment checked it is an address) */
	if (e->ip && cnispec_addr_parse(e->ip, &want) == 0)
		o.requested = &want;
	r = ipam_add(p->store, p->cfg, &o, ret, err);
	/* a new block, and this binary has no etcd store: the full rdmak does the whole ADD again
	 * (ipam_add() rolled this one back) */
	if (r == -ENOPKG && !ipam_store_etcd_linked())
		return exec_full(req, err);

	if (r == 0) {
		char a[CNISPEC_PREFIX_STRLEN];

		for (size_t i = 0; i < (*ret)->n_ips; i++)
			log_info("%s: %s for pod %s/%s", p->cfg->network,
				 cnispec_prefix_str(&(*ret)->ips[i].address, a),
				 e->pod_namespace ? e->pod_namespace : "-",
				 e->pod_name ? e->pod_name : "-");
	}
	return r;
}

static int del(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	struct call *p = ctx;
	int r = ipam_del(p->store, p->cfg, req->env->container_id, req->env->ifname, err);

	if (r == 0)
		log_debug("%s: released", p->cfg->network);
	return r;
}

static int check(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	struct call *p = ctx;

	return ipam_check(p->store, p->cfg, req->env->container_id, req->env->ifname,
			  req->conf->prev_result, err);
}

static bool valid_attachment(void *ud, const char *container_id, const char *ifname)
{
	return cnispec_conf_attachment_valid(ud, container_id, ifname);
}

static int gc(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	struct call *p = ctx;
	struct ipam_gc_stats st = { 0 };
	int r;

	/* without the list, "not valid" would mean every reservation of the network */
	if (!req->conf->has_valid_attachments)
		return cnispec_fail(
			err, -EINVAL, CNISPEC_E_CONFIG, "invalid network configuration",
			"cni.dev/valid-attachments: missing; GC without it would release every reservation");
	r = ipam_gc(p->store, p->cfg, valid_attachment, (void *)req->conf, &st, err);
	log_info("%s: GC kept %zu, released %zu attachments and %zu orphan claims (%zu errors)",
		 p->cfg->network, st.kept, st.released, st.orphans, st.errors);
	return r;
}

static int status(void *ctx, const struct cnispec_request *req, struct cnispec_error *err)
{
	struct call *p = ctx;

	return ipam_status(p->store, p->cfg, err);
}

const struct cnispec_plugin_ops ipam_plugin_ops = {
	.name = "rdmak-ipam",
	.setup = setup,
	.add = add,
	.del = del,
	.check = check,
	.gc = gc,
	.status = status,
	.done = done,
};

int ipam_plugin_main(char *const *envp, int in_fd, FILE *out)
{
	int rc = cnispec_plugin_main(&ipam_plugin_ops, envp, in_fd, out);

	log_close_file();
	return rc;
}
