/* SPDX-License-Identifier: Apache-2.0 */
/* NodePrepareResources and NodeUnprepareResources for one claim.
 *
 * Prepare: the claim from the API server (its uid must be the one the kubelet names), the
 * results allocated to this driver, each device still on this node; the GPUs of the same claim
 * (other drivers' results) by the PCI address their driver published; then, in this order, the
 * claim's state file (what will be made), NCCL's topology file and the CDI spec. The kubelet
 * retries a prepare until it answers: a claim with a state file is answered from it, and its
 * files are made again if they went away. Unprepare removes exactly the files the state file
 * names, then the state file, so that it works after a restart, and answers success for a claim
 * it never prepared. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/dispatch.h"
#include "dra/dra.h"
#include "k8s/client.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/strv.h"

#define STATE_MAX (1u << 20)
/* where the topology file is in the container */
#define TOPO_CONTAINER_PATH "/var/run/rdmak/nccl-topo.xml"

__attribute__((format(printf, 2, 3))) static void fail(char **error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(error, fmt, ap) < 0)
		*error = NULL;
	va_end(ap);
	if (!*error)
		*error = strdup("out of memory");
}

/* A claim's uid names its files: the API server's UIDs are UUIDs; anything else is refused. */
static bool uid_valid(const char *uid)
{
	size_t n = strlen(uid);

	return n > 0 && n <= 64 && strspn(uid, "0123456789abcdefABCDEF-") == n;
}

/* ---- the files of a claim --------------------------------------------------------------------- */

struct paths {
	char state[PATH_MAX], topo[PATH_MAX], cdi[PATH_MAX], cdi_name[NAME_MAX + 1];
};

static int paths_of(const struct dra_driver *d, const char *uid, struct paths *p)
{
	int a = snprintf(p->state, sizeof(p->state), "%s/claims/%s.json", d->state_dir, uid);
	int b = snprintf(p->topo, sizeof(p->topo), "%s/topology/%s.xml", d->state_dir, uid);
	int c = snprintf(p->cdi_name, sizeof(p->cdi_name), "k8s.%s-claim_%s.json", d->driver, uid);
	int e = snprintf(p->cdi, sizeof(p->cdi), "%s/%s", d->cdi_dir, p->cdi_name);

	return a < 0 || b < 0 || c < 0 || e < 0 || (size_t)a >= sizeof(p->state) ||
			       (size_t)b >= sizeof(p->topo) || (size_t)c >= sizeof(p->cdi_name) ||
			       (size_t)e >= sizeof(p->cdi)
		       ? -ENAMETOOLONG
		       : 0;
}

static int write_file(const char *path, const char *text, size_t len, mode_t mode)
{
	_cleanup_free_ char *dir = strdup(path);
	int r;

	if (!dir)
		return -ENOMEM;
	*strrchr(dir, '/') = '\0';
	if ((r = fileio_mkdir_p(dir, 0755, 0755)) < 0)
		return r;
	return fileio_write_atomic_at(AT_FDCWD, path, text, len, mode);
}

/* ---- the claim from the API server ------------------------------------------------------------ */

struct result {
	const char *request, *driver, *pool, *device;
};

static const struct dispatch_field result_fields[] = {
	DISPATCH_FIELD("request", JSON_STRING, NULL, offsetof(struct result, request),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	DISPATCH_FIELD("driver", JSON_STRING, NULL, offsetof(struct result, driver),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	DISPATCH_FIELD("pool", JSON_STRING, NULL, offsetof(struct result, pool),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	DISPATCH_FIELD("device", JSON_STRING, NULL, offsetof(struct result, device),
		       DISPATCH_MANDATORY | DISPATCH_NONEMPTY),
	{},
};

/* GET the claim; its allocation's results in *ret (borrowed from *doc). */
static int claim_results(struct dra_driver *d, const struct kubelet_dra_claim *c, json_t **doc,
			 json_t **ret, char **error)
{
	_cleanup_free_ char *path = NULL;
	char err[512];
	json_t *a = NULL, *results;
	const char *uid;
	int status = 0, r;

	if (asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s",
		     c->namespace_, c->name) < 0)
		return -ENOMEM;
	r = k8s_client_call(d->api, "GET", path, NULL, &status, &a, err, sizeof(err));
	if (r < 0) {
		fail(error, "getting ResourceClaim %s/%s: %s", c->namespace_, c->name, err);
		return r;
	}
	if (status != 200) {
		fail(error, "getting ResourceClaim %s/%s: HTTP %d %s", c->namespace_, c->name,
		     status, k8s_status_message(a));
		json_decref(a);
		return status == 404 ? -ENOENT : status == 403 ? -EACCES : -EIO;
	}
	uid = json_string_value(json_object_get(json_object_get(a, "metadata"), "uid"));
	if (!uid || strcmp(uid, c->uid)) {
		fail(error,
		     "ResourceClaim %s/%s is uid %s now, not %s: not preparing another claim",
		     c->namespace_, c->name, uid ? uid : "(none)", c->uid);
		json_decref(a);
		return -ESTALE;
	}
	results = json_object_get(
		json_object_get(json_object_get(json_object_get(a, "status"), "allocation"),
				"devices"),
		"results");
	if (!json_is_array(results)) {
		fail(error, "ResourceClaim %s/%s is not allocated", c->namespace_, c->name);
		json_decref(a);
		return -EINVAL;
	}
	*doc = a;
	*ret = results;
	return 0;
}

/* The PCI address another driver published for one of its devices (a GPU): its ResourceSlices on
 * this node, the device's resource.kubernetes.io/pciBusID, else its own domain's pciBusID. */
static int foreign_bdf(struct dra_driver *d, json_t **cache, const struct result *res,
		       char bdf[HW_BDF_MAX])
{
	json_t *items, *s;
	size_t i;

	const char *cached = json_string_value(json_object_get(*cache, "_driver"));

	if (!cached || strcmp(cached, res->driver)) {
		_cleanup_free_ char *path = NULL;
		char err[256];
		int status = 0;

		json_decref(*cache);
		*cache = NULL;
		if (asprintf(
			    &path,
			    "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%%3D%s"
			    "%%2Cspec.driver%%3D%s",
			    d->node_name, res->driver) < 0)
			return -ENOMEM;
		if (k8s_client_call(d->api, "GET", path, NULL, &status, cache, err, sizeof(err)) <
			    0 ||
		    status != 200 || !*cache) {
			json_decref(*cache);
			*cache = NULL;
			return 0;
		}
		json_object_set_new(*cache, "_driver", json_string(res->driver));
	}
	items = json_object_get(*cache, "items");
	json_array_foreach(items, i, s)
	{
		json_t *spec = json_object_get(s, "spec"), *dv;
		const char *pool =
			json_string_value(json_object_get(json_object_get(spec, "pool"), "name"));
		size_t k;

		if (!pool || strcmp(pool, res->pool))
			continue;
		json_array_foreach(json_object_get(spec, "devices"), k, dv)
		{
			json_t *attrs = json_object_get(dv, "attributes");
			const char *v, *name = json_string_value(json_object_get(dv, "name"));
			char own[300];

			if (!name || strcmp(name, res->device))
				continue;
			snprintf(own, sizeof(own), "%s/pciBusID", res->driver);
			v = json_string_value(json_object_get(
				json_object_get(attrs, "resource.kubernetes.io/pciBusID"),
				"string"));
			if (!v)
				v = json_string_value(
					json_object_get(json_object_get(attrs, own), "string"));
			if (!v)
				v = json_string_value(json_object_get(
					json_object_get(attrs, "pciBusID"), "string"));
			return v && hw_is_bdf(v) && str_copy(bdf, HW_BDF_MAX, v) >= 0 ? 1 : 0;
		}
	}
	return 0;
}

/* ---- the files' content ----------------------------------------------------------------------- */

static json_t *node_json(const struct hw_chardev *c)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/%s", c->node.path);
	return json_pack("{s:s, s:s, s:s}", "path", path, "hostPath", path, "permissions", "rw");
}

/* The CDI spec of a claim: a device per allocated device with its char devices, and the claim's
 * edits once (CDI applies a spec's containerEdits once for all of its devices a container gets):
 * rdma_cm, NCCL's environment, the topology file read-only. cdiVersion is the lowest that has
 * what the spec uses, 0.5.0: a reader refuses a version newer than it knows (podman 4.3's CDI
 * library stops at 0.5.0) and every newer one reads the older. */
static json_t *cdi_spec(const struct dra_driver *d, const char *uid, const struct dra_device **v,
			size_t n, const struct paths *p)
{
	_cleanup_free_ char *hca = NULL, *ifs = NULL, *hca_env = NULL, *if_env = NULL;
	json_t *spec, *devs = json_array(), *env = json_array(), *nodes = json_array();
	char kind[128];
	int r = 0;

	snprintf(kind, sizeof(kind), "k8s.%s/claim", d->driver);
	spec = json_pack("{s:s, s:s}", "cdiVersion", "0.5.0", "kind", kind);
	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct hw_rdma_dev *dev = v[i]->dev;
		json_t *dn = json_array();
		char name[160];

		if (!dn || json_array_append_new(dn, node_json(dev->uverbs)) < 0)
			r = -ENOMEM;
		HW_DEV_FOREACH_PORT(dev, port)
		{
			if (r >= 0)
				r = str_append_sep(&hca, ",", "%s:%u", dev->name, port->num);
			if (r >= 0 && port->netdev)
				r = str_append_sep(&ifs, ",", "%s", port->netdev->name);
			if (port->link_layer != HW_LINK_IB)
				continue;
			if (r >= 0 && port->umad &&
			    json_array_append_new(dn, node_json(port->umad)) < 0)
				r = -ENOMEM;
			if (r >= 0 && port->issm &&
			    json_array_append_new(dn, node_json(port->issm)) < 0)
				r = -ENOMEM;
		}
		snprintf(name, sizeof(name), "%s-%s", uid, v[i]->name);
		if (r >= 0 &&
		    json_array_append_new(devs, json_pack("{s:s, s:{s:o}}", "name", name,
							  "containerEdits", "deviceNodes", dn)) < 0)
			r = -ENOMEM;
	}
	/* exact names ('='), so that mlx5_1 never also means mlx5_10 */
	if (r >= 0 && hca && asprintf(&hca_env, "NCCL_IB_HCA==%s", hca) < 0)
		r = -ENOMEM;
	if (r >= 0 && ifs && asprintf(&if_env, "NCCL_SOCKET_IFNAME==%s", ifs) < 0)
		r = -ENOMEM;
	if (r < 0 || !spec || !devs || !env || !nodes) {
		json_decref(spec);
		json_decref(devs);
		json_decref(env);
		json_decref(nodes);
		return NULL;
	}
	if (hca_env)
		json_array_append_new(env, json_string(hca_env));
	if (if_env)
		json_array_append_new(env, json_string(if_env));
	json_array_append_new(env, json_string("NCCL_TOPO_FILE=" TOPO_CONTAINER_PATH));
	json_array_append_new(nodes, json_pack("{s:s, s:s, s:s}", "path", "/dev/infiniband/rdma_cm",
					       "hostPath", "/dev/infiniband/rdma_cm", "permissions",
					       "rw"));
	json_object_set_new(spec, "devices", devs);
	json_object_set_new(spec, "containerEdits",
			    json_pack("{s:o, s:o, s:[{s:s, s:s, s:[s, s, s, s]}]}", "env", env,
				      "deviceNodes", nodes, "mounts", "hostPath", p->topo,
				      "containerPath", TOPO_CONTAINER_PATH, "options", "ro",
				      "nosuid", "nodev", "bind"));
	return spec;
}

/* The state file: the claim, its devices and the files made for it. */
static json_t *state_json(const struct kubelet_dra_claim *c, const struct kubelet_dra_result *res,
			  const struct paths *p)
{
	json_t *devs = json_array();

	for (size_t i = 0; devs && i < res->n; i++)
		if (json_array_append_new(
			    devs, json_pack("{s:s, s:s, s:s, s:s}", "request",
					    res->v[i].requests[0], "pool", res->v[i].pool, "device",
					    res->v[i].device, "cdi", res->v[i].cdi_ids[0])) < 0) {
			json_decref(devs);
			return NULL;
		}
	return json_pack("{s:s, s:s, s:s, s:o, s:[s, s]}", "namespace", c->namespace_, "name",
			 c->name, "uid", c->uid, "devices", devs, "files", p->cdi, p->topo);
}

/* ---- prepare ---------------------------------------------------------------------------------- */

static int result_add(struct kubelet_dra_result *out, const char *request, const char *pool,
		      const char *device, const char *cdi_id)
{
	struct kubelet_dra_device *v = realloc(out->v, (out->n + 1) * sizeof(*v));
	struct kubelet_dra_device *dv;

	if (!v)
		return -ENOMEM;
	out->v = v;
	dv = &v[out->n];
	*dv = (struct kubelet_dra_device){ 0 };
	if (strv_extend(&dv->requests, &(size_t){ 0 }, request) < 0 ||
	    strv_extend(&dv->cdi_ids, &(size_t){ 0 }, cdi_id) < 0 || !(dv->pool = strdup(pool)) ||
	    !(dv->device = strdup(device))) {
		strv_free(dv->requests);
		strv_free(dv->cdi_ids);
		free(dv->pool);
		return -ENOMEM;
	}
	out->n++;
	return 0;
}

/* A state file's devices as the answer. */
static int answer_from_state(const json_t *st, struct kubelet_dra_result *out)
{
	json_t *dv;
	size_t i;

	json_array_foreach(json_object_get(st, "devices"), i, dv)
	{
		const char *rq = json_string_value(json_object_get(dv, "request"));
		const char *pool = json_string_value(json_object_get(dv, "pool"));
		const char *dev = json_string_value(json_object_get(dv, "device"));
		const char *cdi = json_string_value(json_object_get(dv, "cdi"));

		if (!rq || !pool || !dev || !cdi)
			return -EINVAL;
		if (result_add(out, rq, pool, dev, cdi) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int read_state(const struct paths *p, json_t **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = fileio_read_at(AT_FDCWD, p->state, STATE_MAX, &text, &len);

	if (r < 0)
		return r;
	*ret = json_loadb(text, len, 0, NULL);
	return *ret ? 0 : -EINVAL;
}

/* Make the topology and CDI files of a claim whose state is written. Caller holds d->lock. */
static int make_files(struct dra_driver *d, const char *uid, const struct dra_device **v, size_t n,
		      const struct hw_pci **gpus, size_t n_gpus, const struct paths *p,
		      char **error)
{
	_cleanup_free_ const struct hw_rdma_dev **nics = calloc(n + 1, sizeof(*nics));
	_cleanup_free_ char *xml = NULL, *text = NULL;
	json_t *spec;
	size_t len = 0;
	int r;

	if (!nics)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		nics[i] = v[i]->dev;
	r = dra_nccl_topology(d->ctx, d->node, nics, n, gpus, n_gpus, &xml, &len);
	if (r >= 0 && (r = write_file(p->topo, xml, len, 0644)) < 0)
		fail(error, "writing %s: %s", p->topo, strerror(-r));
	if (r < 0)
		return r;
	spec = cdi_spec(d, uid, v, n, p);
	text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
	json_decref(spec);
	if (!text)
		return -ENOMEM;
	if ((r = write_file(p->cdi, text, strlen(text), 0644)) < 0)
		fail(error, "writing %s: %s", p->cdi, strerror(-r));
	return r;
}

/* The claim's devices of this driver and its GPUs, checked against the node. Caller holds
 * d->lock. */
static int collect(struct dra_driver *d, const struct kubelet_dra_claim *c, json_t *results,
		   json_t **slices, const struct dra_device **v, size_t *n,
		   const struct hw_pci **gpus, size_t *n_gpus, struct kubelet_dra_result *out,
		   const char *uid, char **error)
{
	struct dispatch_ctx dc;
	char err[512], prefix[300];
	json_t *e;
	size_t i;
	int r;

	snprintf(prefix, sizeof(prefix), "%s/", d->node_name);
	json_array_foreach(results, i, e)
	{
		struct result res = { 0 };
		char path[64], cdi[320];
		const struct dra_device *dv;

		dc = (struct dispatch_ctx){ .err = err, .errlen = sizeof(err) };
		snprintf(path, sizeof(path), "status.allocation.devices.results[%zu]", i);
		if (dispatch_run(&dc, path, e, result_fields, DISPATCH_UNKNOWN_ALLOW, &res) < 0) {
			fail(error, "ResourceClaim %s/%s: %s", c->namespace_, c->name, err);
			return -EINVAL;
		}
		if (strcmp(res.driver, d->driver)) {
			char bdf[HW_BDF_MAX];
			const struct hw_pci *p;

			/* another driver's device: a GPU of this claim, if it names one of ours */
			r = foreign_bdf(d, slices, &res, bdf);
			if (r < 0)
				return r;
			p = r > 0 ? hw_node_pci(d->node, bdf) : NULL;
			if (p && p->is_gpu)
				gpus[(*n_gpus)++] = p;
			continue;
		}
		dv = str_startswith(res.pool, prefix) ? dra_inventory_find(&d->inv, res.device)
						      : NULL;
		if (!dv || strcmp(res.pool + strlen(prefix), dv->pool)) {
			fail(error,
			     "ResourceClaim %s/%s: device %s of pool %s is not on this node (%s) "
			     "any more",
			     c->namespace_, c->name, res.device, res.pool, d->node_name);
			return -ENODEV;
		}
		if (!dv->dev->uverbs) {
			fail(error, "ResourceClaim %s/%s: device %s (%s) has no uverbs device",
			     c->namespace_, c->name, res.device, dv->dev->name);
			return -ENODEV;
		}
		v[(*n)++] = dv;
		snprintf(cdi, sizeof(cdi), "k8s.%s/claim=%s-%s", d->driver, uid, dv->name);
		if ((r = result_add(out, res.request, res.pool, res.device, cdi)) < 0)
			return r;
	}
	return 0;
}

void dra_prepare(struct dra_driver *d, const struct kubelet_dra_claim *c,
		 struct kubelet_dra_result *out)
{
	_cleanup_free_ const struct dra_device **v = NULL;
	_cleanup_free_ const struct hw_pci **gpus = NULL;
	_cleanup_free_ char *text = NULL;
	json_t *doc = NULL, *results = NULL, *st = NULL, *slices = NULL;
	size_t n = 0, n_gpus = 0;
	struct paths p;
	int r;

	if (!uid_valid(c->uid) || paths_of(d, c->uid, &p) < 0) {
		fail(&out->error, "claim uid %s: not a UID", c->uid);
		return;
	}
	/* prepared before: the same answer, the files made again where they went away */
	if (read_state(&p, &st) >= 0) {
		r = answer_from_state(st, out);
		json_decref(st);
		if (r < 0) {
			kubelet_dra_result_clear(out);
			fail(&out->error, "%s: unreadable state: %s", p.state, strerror(-r));
			return;
		}
		if (access(p.cdi, F_OK) == 0 && access(p.topo, F_OK) == 0)
			return;
		/* made again from the claim as the API server has it now */
		kubelet_dra_result_clear(out);
	}
	if (claim_results(d, c, &doc, &results, &out->error) < 0)
		return;
	pthread_mutex_lock(&d->lock);
	v = calloc(json_array_size(results) + 1, sizeof(*v));
	gpus = calloc(json_array_size(results) + 1, sizeof(*gpus));
	r = v && gpus ? 0 : -ENOMEM;
	if (r >= 0)
		r = collect(d, c, results, &slices, v, &n, gpus, &n_gpus, out, c->uid, &out->error);
	if (r >= 0 && n == 0)
		goto unlock; /* nothing of ours in this claim: nothing to make */
	if (r >= 0) {
		st = state_json(c, out, &p);
		text = st ? json_dumps(st, JSON_INDENT(2)) : NULL;
		json_decref(st);
		r = text ? write_file(p.state, text, strlen(text), 0600) : -ENOMEM;
		if (r < 0 && !out->error)
			fail(&out->error, "writing %s: %s", p.state, strerror(-r));
	}
	if (r >= 0)
		r = make_files(d, c->uid, v, n, gpus, n_gpus, &p, &out->error);
	if (r < 0 && !out->error)
		fail(&out->error, "preparing ResourceClaim %s/%s: %s", c->namespace_, c->name,
		     strerror(-r));
unlock:
	pthread_mutex_unlock(&d->lock);
	json_decref(slices);
	json_decref(doc);
	if (out->error) {
		char *e = out->error;

		out->error = NULL;
		kubelet_dra_result_clear(out);
		out->error = e;
	}
}

void dra_unprepare(struct dra_driver *d, const struct kubelet_dra_claim *c, char **error)
{
	json_t *st = NULL, *f;
	struct paths p;
	size_t i;
	int r;

	*error = NULL;
	if (!uid_valid(c->uid) || paths_of(d, c->uid, &p) < 0) {
		fail(error, "claim uid %s: not a UID", c->uid);
		return;
	}
	r = read_state(&p, &st);
	if (r == -ENOENT)
		return; /* never prepared here, or unprepared already */
	if (r < 0) {
		fail(error, "%s: %s", p.state, strerror(-r));
		return;
	}
	/* the files the state names, and only those */
	json_array_foreach(json_object_get(st, "files"), i, f)
	{
		const char *path = json_string_value(f);

		if (path && (!strcmp(path, p.cdi) || !strcmp(path, p.topo)) && unlink(path) < 0 &&
		    errno != ENOENT) {
			fail(error, "removing %s: %s", path, strerror(errno));
			json_decref(st);
			return;
		}
	}
	json_decref(st);
	if (unlink(p.state) < 0 && errno != ENOENT)
		fail(error, "removing %s: %s", p.state, strerror(errno));
}
