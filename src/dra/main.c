/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak dra`: the role. Options, --dry-run (the ResourceSlices it would publish, as YAML), and
 * the daemon: the kubelet's calls (src/kubelet/dra.c) answered by prepare.c, the slices kept
 * at the API server by publish.c, the node looked at every --interval, a watch on the slices
 * so that someone else's change is written over. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/attach.h"
#include "daemon/daemon.h"
#include "doc/doc.h"
#include "doc/yaml.h"
#include "dra/dra.h"
#include "hw/hw.h"
#include "k8s/client.h"
#include "kubelet/kubelet.h"
#include "log/log.h"
#include "pool/config.h"
#include "pool/pool.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"
#include "util/strv.h"

/* Exit codes, as --help and docs/dra.md name them. */
enum { DRA_EXIT_OK = 0, DRA_EXIT_RUNTIME = 1, DRA_EXIT_USAGE = 2 };

struct opts {
	struct hw_roots roots;
	const char *node_name, *driver;
	const char *topology; /* --nccl-topology LIST */
	const char *kubeconfig, *registry_dir, *plugin_dir, *cdi_dir, *state_dir, *alive_file;
	const char *device_plugins_dir;
	const char *config;	   /* --config: the device plugin's configuration */
	const char *cni_state_dir; /* rdmak-cni's attachment records */
	unsigned interval_s;
	bool dry_run, json, once, uninstall;
	int verbose;
	char hostname[HOST_NAME_MAX + 1];
};

static void usage(FILE *f)
{
	fputs("Usage: rdmak dra --node-name NAME [--kubeconfig FILE] [options]\n"
	      "       rdmak dra --dry-run [--node-name NAME] [--json | --nccl-topology LIST] "
	      "[--root DIR]\n"
	      "A kubelet DRA plugin: this node's RDMA devices as ResourceSlices "
	      "(resource.k8s.io/v1), with the\n"
	      "PCIe root each one shares with a GPU; claims prepared as CDI devices with NCCL's "
	      "environment and\n"
	      "topology file. See docs/dra.md.\n\n"
	      "      --node-name NAME   the Node's name (--dry-run: default this host's name)\n"
	      "      --driver-name NAME the DRA driver's name (default " DRA_DRIVER_DEFAULT ")\n"
	      "      --kubeconfig FILE  the API server and credentials (default: the pod's "
	      "service account)\n"
	      "      --registry-dir DIR the kubelet's plugin registry (default "
	      "/var/lib/kubelet/plugins_registry)\n"
	      "      --plugin-dir DIR   where the endpoint DIR/<driver>/dra.sock is made (default "
	      "/var/lib/kubelet/plugins)\n"
	      "      --cdi-dir DIR      CDI specs of prepared claims (default /var/run/cdi)\n"
	      "      --state-dir DIR    what was prepared, and the topology files (default "
	      "/var/lib/rdmak/dra)\n"
	      "      --interval S       look at the ports and devices every S seconds (default "
	      "10)\n"
	      "      --config FILE      the device plugin's config: publish only the devices of its "
	      "resources with\n"
	      "                         \"servedBy\": \"dra\" (default: every RDMA device of the "
	      "node)\n"
	      "      --cni-state-dir DIR  rdmak-cni's attachment records: what a claim's pod got, "
	      "written into the\n"
	      "                         claim's device status (default " ATTACH_DEFAULT_DIR ")\n"
	      "      --device-plugins-dir DIR  refuse to start while rdmak plugin serves a socket "
	      "there (default\n"
	      "                         /var/lib/kubelet/device-plugins): of a resource the config "
	      "gives the driver,\n"
	      "                         or any without --config\n"
	      "      --alive-file FILE  touched every second (`rdmak probe FILE`)\n"
	      "      --once             publish the slices and exit\n"
	      "      --uninstall        delete this node's slices of the driver and exit\n"
	      "      --dry-run          print the ResourceSlices it would publish, as a YAML "
	      "stream, and exit\n"
	      "      --json             with --dry-run: one JSON List instead\n"
	      "      --nccl-topology LIST  with --dry-run: the NCCL topology file a claim of these "
	      "devices would\n"
	      "                         get, LIST comma-separated DRA device names of this node "
	      "and GPUs' PCI\n"
	      "                         addresses\n" HW_ROOT_USAGE
	      "  -v, --verbose          log debug lines too\n"
	      "  -h, --help             this text\n\n"
	      "Exit: 0 done or stopped by SIGTERM or SIGINT, 1 runtime failure (the sysfs root "
	      "missing, stdout\n"
	      "unwritable, the API server unreachable or refusing with --once or --uninstall, a "
	      "socket in use), 2 bad\n"
	      "usage, kubeconfig, or a node or driver name that makes no valid object name.\n",
	      f);
}

/* 1: --help printed; 0: go on; -EINVAL: usage printed. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_NODE = 256,
		O_DRIVER,
		O_DRY_RUN,
		O_JSON,
		O_TOPO,
		O_KUBECONFIG,
		O_REGISTRY,
		O_PLUGIN_DIR,
		O_CDI,
		O_STATE,
		O_INTERVAL,
		O_ALIVE,
		O_ONCE,
		O_UNINSTALL,
		O_DEVICE_PLUGINS,
		O_CONFIG,
		O_CNI_STATE
	};
	static const struct option longopts[] = {
		HW_ROOT_LONGOPTS,
		{ "node-name", required_argument, NULL, O_NODE },
		{ "driver-name", required_argument, NULL, O_DRIVER },
		{ "dry-run", no_argument, NULL, O_DRY_RUN },
		{ "json", no_argument, NULL, O_JSON },
		{ "nccl-topology", required_argument, NULL, O_TOPO },
		{ "kubeconfig", required_argument, NULL, O_KUBECONFIG },
		{ "registry-dir", required_argument, NULL, O_REGISTRY },
		{ "plugin-dir", required_argument, NULL, O_PLUGIN_DIR },
		{ "cdi-dir", required_argument, NULL, O_CDI },
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "alive-file", required_argument, NULL, O_ALIVE },
		{ "once", no_argument, NULL, O_ONCE },
		{ "uninstall", no_argument, NULL, O_UNINSTALL },
		{ "device-plugins-dir", required_argument, NULL, O_DEVICE_PLUGINS },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "cni-state-dir", required_argument, NULL, O_CNI_STATE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		if (hw_roots_option(&o->roots, c, optarg))
			continue;
		switch (c) {
		case O_NODE: o->node_name = optarg; break;
		case O_DRIVER: o->driver = optarg; break;
		case O_DRY_RUN: o->dry_run = true; break;
		case O_JSON: o->json = true; break;
		case O_TOPO: o->topology = optarg; break;
		case O_KUBECONFIG: o->kubeconfig = optarg; break;
		case O_REGISTRY: o->registry_dir = optarg; break;
		case O_PLUGIN_DIR: o->plugin_dir = optarg; break;
		case O_CDI: o->cdi_dir = optarg; break;
		case O_STATE: o->state_dir = optarg; break;
		case O_ALIVE: o->alive_file = optarg; break;
		case O_ONCE: o->once = true; break;
		case O_UNINSTALL: o->uninstall = true; break;
		case O_DEVICE_PLUGINS: o->device_plugins_dir = optarg; break;
		case O_CONFIG: o->config = optarg; break;
		case O_CNI_STATE: o->cni_state_dir = optarg; break;
		case O_INTERVAL: {
			unsigned long long v;

			if (opt_uint("dra", "interval", optarg, 1, 3600, "s", &v) < 0)
				return -EINVAL;
			o->interval_s = (unsigned)v;
			break;
		}
		case 'v': o->verbose++; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak dra: unexpected argument '%s'\n\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	if ((o->json || o->topology) && !o->dry_run) {
		fprintf(stderr, "rdmak dra: --json and --nccl-topology go with --dry-run\n");
		return -EINVAL;
	}
	if (o->json && o->topology) {
		fprintf(stderr, "rdmak dra: --nccl-topology writes XML, not JSON\n");
		return -EINVAL;
	}
	if (o->dry_run + o->once + o->uninstall > 1) {
		fprintf(stderr, "rdmak dra: --dry-run, --once and --uninstall: one of them\n");
		return -EINVAL;
	}
	if (!o->dry_run && !o->node_name) {
		fprintf(stderr, "rdmak dra: --node-name is needed (the chart passes the Pod's "
				"spec.nodeName)\n");
		return -EINVAL;
	}
	if (!o->node_name) {
		if (gethostname(o->hostname, sizeof(o->hostname) - 1) < 0) {
			fprintf(stderr, "rdmak dra: no --node-name, and no host name: %s\n",
				strerror(errno));
			return -EINVAL;
		}
		o->node_name = o->hostname;
	}
	return 0;
}

static int load(const struct opts *o, struct hw_ctx **ret_ctx, struct hw_node **ret)
{
	struct hw_ctx *ctx = NULL;
	struct hw_error herr = { 0 };
	char missing[PATH_MAX];
	int r;

	r = hw_ctx_new_roots(&o->roots, &ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak dra: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		return r;
	}
	r = hw_load(ctx, HW_LOAD_PKEYS, ret, &herr);
	if (r < 0) {
		fprintf(stderr, "rdmak dra: reading the node: %s: %s\n", herr.path,
			hw_strerror(herr.err ? herr.err : -r));
		hw_ctx_free(ctx);
		return r;
	}
	*ret_ctx = ctx;
	return 0;
}

/* --config: the device plugin's file, read as the plugin reads it (its reader, its parser, its
 * refusals; a pipe only where the driver reads it once and exits). *ret NULL without --config.
 * -EINVAL (refused) or -errno with "<path>: <why>" in err. */
static int config_load(const struct opts *o, struct pool_config **ret, char **ret_text, char *err,
		       size_t errlen)
{
	bool once = o->dry_run || o->once || o->uninstall;
	int r;

	*ret = NULL;
	if (!o->config)
		return 0;
	r = pool_config_load(o->config, once ? POOL_CONFIG_ONCE : 0, ret, ret_text, err, errlen);
	if (r < 0)
		return r;
	for (size_t i = 0; i < (*ret)->warnings.n; i++)
		log_warning("%s: %s", o->config, (*ret)->warnings.v[i]);
	return 0;
}

/* The devices of node the driver publishes: with --config those of the resources it is given,
 * split from the plugin's as the plugin splits them (pool_set_build: a device of both is
 * refused, -EINVAL with the reason in err). */
static int inventory(const struct pool_config *cfg, const struct hw_node *node,
		     struct dra_inventory *ret, char *err, size_t errlen)
{
	struct pool_opts po = { .served = POOL_BY_DRA, .err = err, .errlen = errlen };
	struct pool_set *ps = NULL;
	char **only = NULL;
	size_t n = 0;
	int r;

	err[0] = '\0';
	if (!cfg)
		return dra_inventory_build(node, NULL, ret);
	r = pool_set_build(cfg, node, &po, &ps);
	if (r < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < ps->n; i++)
		for (size_t j = 0; r >= 0 && j < ps->pools[i].n_m; j++) {
			const char *t;
			size_t l;

			for (const char *s = ps->pools[i].m[j].rdma;
			     r >= 0 && pool_list_next(&s, &t, &l);) {
				char *dev = strndup(t, l);

				if (dev && strv_contains(only, dev))
					free(dev);
				else
					r = strv_push(&only, &n, dev);
			}
		}
	pool_set_free(ps);
	/* a config that gives the driver nothing (yet) publishes nothing: not every device */
	if (r >= 0 && !only && !(only = calloc(1, sizeof(*only))))
		r = -ENOMEM;
	if (r >= 0)
		r = dra_inventory_build(node, only, ret);
	strv_free(only);
	return r;
}

/* --nccl-topology: the file a claim of these devices would get. */
static int topology(const struct opts *o, struct hw_ctx *ctx, const struct hw_node *node,
		    const struct dra_inventory *inv)
{
	_cleanup_free_ char *list = strdup(o->topology), *xml = NULL;
	_cleanup_free_ const struct hw_rdma_dev **nics = NULL;
	_cleanup_free_ const struct hw_pci **gpus = NULL;
	size_t n_nics = 0, n_gpus = 0, len = 0;
	char *save = NULL;
	int r;

	if (!list)
		return -ENOMEM;
	nics = calloc(inv->n + 1, sizeof(*nics));
	gpus = calloc(node->n_gpus + 1, sizeof(*gpus));
	if (!nics || !gpus)
		return -ENOMEM;
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct dra_device *d = dra_inventory_find(inv, tok);
		const struct hw_pci *p = hw_node_pci(node, tok);

		if (d)
			nics[n_nics++] = d->dev;
		else if (p && p->is_gpu && n_gpus < node->n_gpus)
			gpus[n_gpus++] = p;
		else {
			fprintf(stderr,
				"rdmak dra: --nccl-topology: %s is neither a DRA device of this node "
				"nor a GPU's PCI address\n",
				tok);
			return -EINVAL;
		}
	}
	r = dra_nccl_topology(ctx, node, nics, n_nics, gpus, n_gpus, &xml, &len);
	if (r < 0)
		return r;
	return fwrite(xml, 1, len, stdout) == len ? 0 : -errno;
}

static int dry_run(const struct opts *o, const struct pool_config *cfg)
{
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL;
	struct dra_inventory inv = { 0 };
	struct dra_slice_meta m = { .driver = o->driver, .node_name = o->node_name };
	json_t *pools = NULL, *items = NULL;
	char err[512];
	int r, ret = DRA_EXIT_RUNTIME;

	if (load(o, &ctx, &node) < 0)
		return DRA_EXIT_RUNTIME;
	r = inventory(cfg, node, &inv, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rdmak dra: %s%s\n", err[0] ? "--config: " : "",
			err[0] ? err : strerror(-r));
		ret = err[0] ? DRA_EXIT_USAGE : DRA_EXIT_RUNTIME;
		goto out;
	}
	for (size_t i = 0; i < inv.n_notes; i++)
		log_warning("%s", inv.notes[i]);
	if (o->topology) {
		r = topology(o, ctx, node, &inv);
		if (r < 0 && r != -EINVAL)
			fprintf(stderr, "rdmak dra: writing the topology: %s\n", strerror(-r));
		ret = r == -EINVAL ? DRA_EXIT_USAGE : r < 0 ? DRA_EXIT_RUNTIME : DRA_EXIT_OK;
		goto out;
	}
	r = dra_slices_build(&inv, &m, NULL, NULL, &pools, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rdmak dra: %s\n", r == -EINVAL ? err : strerror(-r));
		ret = r == -EINVAL ? DRA_EXIT_USAGE : DRA_EXIT_RUNTIME;
		goto out;
	}
	items = json_array();
	for (size_t i = 0; items && i < json_array_size(pools); i++)
		json_array_extend(items, json_object_get(json_array_get(pools, i), "slices"));
	if (!items) {
		fprintf(stderr, "rdmak dra: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (o->json) {
		json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List",
					 "items", items);

		r = list ? doc_json(stdout, list) : -ENOMEM;
		json_decref(list);
	} else {
		r = 0;
		for (size_t i = 0; r >= 0 && i < json_array_size(items); i++) {
			fputs("---\n", stdout);
			r = doc_write_yaml(stdout, json_array_get(items, i));
		}
	}
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "rdmak dra: writing the slices: %s\n",
			strerror(r < 0 ? -r : errno));
		goto out;
	}
	ret = DRA_EXIT_OK;
out:
	json_decref(items);
	json_decref(pools);
	dra_inventory_clear(&inv);
	hw_node_free(node);
	hw_ctx_free(ctx);
	return ret;
}

/* ---- the daemon --------------------------------------------------------------------------- */

/* What the watch thread hands the loop. */
struct watch_event {
	json_t *obj; /* NULL: the watch asks for a list (410 Gone) */
	struct watch_event *next;
};

struct daemon {
	const struct opts *o;
	struct dra_driver drv;
	struct dra_publisher *pub;
	struct dra_status *status;
	char last_status_err[512];
	/* --config: the running one and its text, and the last refusal of a new one said */
	struct pool_config *cfg;
	char *cfg_text;
	struct daemon_refusal refusal;
	struct kubelet_dra *kd;
	int64_t next_check_ms, next_sync_ms, next_health_ms;
	unsigned sync_backoff_s;
	bool sync_needed;
	char last_sync_err[512];
	/* the watch thread's */
	pthread_t watch_thread;
	bool watch_up;
	int stop_fd, event_fd;
	pthread_mutex_t wlock; /* events, list_rv */
	struct watch_event *events, **events_tail;
	char list_rv[64];
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void transport_log(int level, const char *msg, void *ud)
{
	log_full((enum log_level)level, "kubelet: %s", msg);
}

static void on_prepare(void *ud, const struct kubelet_dra_claim *c, struct kubelet_dra_result *out)
{
	struct daemon *d = ud;

	dra_prepare(&d->drv, c, out);
	if (out->error)
		log_warning("prepare %s/%s (%s): %s", c->namespace_, c->name, c->uid, out->error);
	else
		log_info("prepared %s/%s (%s): %zu device(s)", c->namespace_, c->name, c->uid,
			 out->n);
}

static void on_unprepare(void *ud, const struct kubelet_dra_claim *c, char **error)
{
	struct daemon *d = ud;

	dra_unprepare(&d->drv, c, error);
	if (*error)
		log_warning("unprepare %s/%s (%s): %s", c->namespace_, c->name, c->uid, *error);
	else
		log_info("unprepared %s/%s (%s)", c->namespace_, c->name, c->uid);
}

static void on_registered(void *ud, bool ok, const char *error)
{
	if (ok)
		log_info("the kubelet registered the plugin");
	else
		log_error("the kubelet refused the plugin: %s", error);
}

static const struct kubelet_dra_ops dra_ops = { on_prepare, on_unprepare, on_registered };

/* Whether the node differs from the model: a device more or less, a port's state. */
static bool node_changed(struct daemon *d)
{
	struct hw_ctx *ctx = d->drv.ctx;
	const struct hw_node *node = d->drv.node;
	_cleanup_close_ int fd = hw_ctx_open(ctx, HW_ROOT_SYSFS, "class/infiniband",
					     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names = NULL;
	size_t n = 0;

	if (fd >= 0 && fileio_list_dir(fd, 0, &names, &n) >= 0) {
		strv_free(names);
		if (n != node->n_rdma)
			return true;
	} else if (node->n_rdma) {
		return true;
	}
	HW_NODE_FOREACH_PORT(node, p)
	{
		enum hw_port_state st;
		enum hw_phys_state ph;

		if (hw_port_read_state(ctx, p->dev->name, p->num, &st, &ph) < 0 || st != p->state)
			return true;
	}
	return false;
}

static int reload(struct daemon *d)
{
	struct hw_node *node = NULL;
	struct dra_inventory inv = { 0 };
	struct hw_error herr = { 0 };
	char err[512];
	int r;

	r = hw_load(d->drv.ctx, HW_LOAD_PKEYS, &node, &herr);
	if (r < 0)
		return log_warning_errno(r, "reading the node: %s: %m; keeping the previous model",
					 herr.path);
	r = inventory(d->cfg, node, &inv, err, sizeof(err));
	if (r < 0) {
		hw_node_free(node);
		if (err[0])
			return log_warning_errno(r, "--config %s: %s; keeping the previous model",
						 d->o->config, err);
		return log_warning_errno(r, "building the devices: %m");
	}
	for (size_t i = 0; i < inv.n_notes; i++)
		log_warning("%s", inv.notes[i]);
	pthread_mutex_lock(&d->drv.lock);
	hw_node_free(d->drv.node);
	dra_inventory_clear(&d->drv.inv);
	d->drv.node = node;
	d->drv.inv = inv;
	pthread_mutex_unlock(&d->drv.lock);
	return 0;
}

/* The devices' health to the kubelet's NodeWatchResources streams, from the model the slices'
 * taints come from: a device is healthy while every port of it passes traffic. Called when the
 * model changes, and every KUBELET_DRA_HEALTH_RESEND_S whatever --interval is: the kubelet
 * forgets a health it has not heard again within 30 s. */
static void report_health(struct daemon *d)
{
	struct kubelet_dra_device_health *v;
	char(*pools)[DRA_POOL_NAME_MAX + 1];
	size_t n;
	int r = -ENOMEM;

	if (!d->kd)
		return;
	d->next_health_ms = now_ms() + 1000 * KUBELET_DRA_HEALTH_RESEND_S;
	pthread_mutex_lock(&d->drv.lock);
	n = d->drv.inv.n;
	v = calloc(n + 1, sizeof(*v));
	pools = calloc(n + 1, sizeof(*pools));
	if (v && pools) {
		for (size_t i = 0; i < n; i++) {
			const struct dra_device *dev = &d->drv.inv.v[i];

			snprintf(pools[i], sizeof(pools[i]), "%s/%s", d->o->node_name, dev->pool);
			v[i] = (struct kubelet_dra_device_health){
				.pool = pools[i],
				.device = dev->name,
				.health = dev->healthy ? KUBELET_DRA_HEALTH_HEALTHY
						       : KUBELET_DRA_HEALTH_UNHEALTHY,
			};
		}
		r = kubelet_dra_set_health(d->kd, v, n);
	}
	pthread_mutex_unlock(&d->drv.lock);
	free(v);
	free(pools);
	if (r < 0)
		log_warning_errno(r, "reporting the devices' health to the kubelet: %m");
}

static int sync_slices(struct daemon *d)
{
	char err[512];
	int r;

	pthread_mutex_lock(&d->drv.lock);
	r = dra_publisher_sync(d->pub, &d->drv.inv, err, sizeof(err));
	pthread_mutex_unlock(&d->drv.lock);
	if (r < 0) {
		/* said once per distinct failure, retried with a back-off */
		if (strcmp(err, d->last_sync_err))
			log_error("publishing the ResourceSlices: %s", err);
		snprintf(d->last_sync_err, sizeof(d->last_sync_err), "%s", err);
		d->sync_backoff_s = d->sync_backoff_s ? d->sync_backoff_s * 2 : 1;
		if (d->sync_backoff_s > 60)
			d->sync_backoff_s = 60;
		d->next_sync_ms = now_ms() + 1000 * (int64_t)d->sync_backoff_s;
		d->sync_needed = true;
		return r;
	}
	if (d->last_sync_err[0])
		log_info("publishing the ResourceSlices works again");
	d->last_sync_err[0] = '\0';
	d->sync_backoff_s = 0;
	d->sync_needed = false;
	pthread_mutex_lock(&d->wlock);
	snprintf(d->list_rv, sizeof(d->list_rv), "%s", dra_publisher_list_rv(d->pub));
	pthread_mutex_unlock(&d->wlock);
	if (r > 0)
		log_info("published %d pool(s) of %zu device(s)", r, d->drv.inv.n);
	return 0;
}

/* ---- the watch on our slices: someone else's change is written over ---- */

static int watch_fn(void *ud, const char *type, json_t *obj)
{
	struct daemon *d = ud;
	struct watch_event *e;
	uint64_t one = 1;

	if (!strcmp(type, "BOOKMARK"))
		goto rv;
	if (!strcmp(type, "ERROR")) {
		/* 410 Gone: the resourceVersion is too old; the loop lists again */
		obj = NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->obj = obj ? json_incref(obj) : NULL;
	pthread_mutex_lock(&d->wlock);
	*d->events_tail = e;
	d->events_tail = &e->next;
	pthread_mutex_unlock(&d->wlock);
	if (write(d->event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	if (!obj)
		return -ESTALE;
rv:
	pthread_mutex_lock(&d->wlock);
	snprintf(d->list_rv, sizeof(d->list_rv), "%s",
		 json_string_value(
			 json_object_get(json_object_get(obj, "metadata"), "resourceVersion"))
			 ?: d->list_rv);
	pthread_mutex_unlock(&d->wlock);
	return 0;
}

static void *watch_thread(void *arg)
{
	struct daemon *d = arg;
	unsigned backoff_ms = 0;

	for (;;) {
		_cleanup_free_ char *path = NULL;
		char rv[64], err[512];
		struct pollfd pfd = { .fd = d->stop_fd, .events = POLLIN };
		int status = 0, r;

		pthread_mutex_lock(&d->wlock);
		snprintf(rv, sizeof(rv), "%s", d->list_rv);
		pthread_mutex_unlock(&d->wlock);
		if (rv[0] &&
		    asprintf(
			    &path,
			    "/apis/resource.k8s.io/v1/resourceslices?watch=1&allowWatchBookmarks=true"
			    "&resourceVersion=%s&fieldSelector=spec.nodeName%%3D%s%%2Cspec.driver%%3D%s",
			    rv, d->o->node_name, d->o->driver) < 0)
			break;
		if (path) {
			/* a watch the server ends after its timeout (5 to 10 min) is started again;
			 * nothing in 10 minutes is a dead connection */
			r = k8s_client_watch(d->drv.api, path, d->stop_fd, 600000, watch_fn, d,
					     &status, err, sizeof(err));
			if (r == -ECANCELED)
				break;
			if (r == 0) {
				backoff_ms = 0;
				continue;
			}
			if (status == 410)
				watch_fn(d, "ERROR", NULL);
			else if (r != -ESTALE)
				log_debug("watching the ResourceSlices: %s", err);
		}
		backoff_ms = backoff_ms ? backoff_ms * 2 : 500;
		if (backoff_ms > 30000)
			backoff_ms = 30000;
		if (poll(&pfd, 1, (int)backoff_ms) > 0)
			break;
	}
	return NULL;
}

static void on_events(void *ud)
{
	struct daemon *d = ud;
	struct watch_event *e;
	uint64_t v;

	if (read(d->event_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warning("reading the watch's eventfd: %s", strerror(errno));
	pthread_mutex_lock(&d->wlock);
	e = d->events;
	d->events = NULL;
	d->events_tail = &d->events;
	pthread_mutex_unlock(&d->wlock);
	while (e) {
		struct watch_event *next = e->next;

		if (!e->obj || !dra_publisher_owns(d->pub, e->obj)) {
			const char *name = json_string_value(
				json_object_get(json_object_get(e->obj, "metadata"), "name"));

			log_info("ResourceSlice %s changed by someone else: writing ours again",
				 name ? name : "(watch expired)");
			dra_publisher_invalidate(d->pub);
			d->sync_needed = true;
			d->next_sync_ms = 0;
		}
		json_decref(e->obj);
		free(e);
		e = next;
	}
}

/* The prepared claims' device status, once a round: a failure is said once, and the round
 * after tries again. */
static void status_round(struct daemon *d)
{
	char err[512];
	int r = dra_status_sync(d->status, &d->drv, d->o->cni_state_dir, err, sizeof(err));

	if (r < 0) {
		if (!err[0])
			snprintf(err, sizeof(err), "%s", strerror(-r));
		if (strcmp(err, d->last_status_err))
			log_warning("claim status: %s", err);
		snprintf(d->last_status_err, sizeof(d->last_status_err), "%s", err);
		return;
	}
	if (d->last_status_err[0])
		log_info("claim status: writing works again");
	d->last_status_err[0] = '\0';
	if (r > 0)
		log_info("claim status: %d claim(s) written", r);
}

static int on_tick(void *ud)
{
	struct daemon *d = ud;
	int64_t now = now_ms(), wait;

	if (now >= d->next_check_ms) {
		int r = kubelet_dra_check(d->kd);

		if (r < 0)
			log_error_errno(r, "re-creating the kubelet sockets: %m");
		if (node_changed(d) && reload(d) >= 0) {
			log_info("the node's RDMA devices or ports changed");
			report_health(d);
			d->sync_needed = true;
			d->next_sync_ms = 0;
		}
		status_round(d);
		d->next_check_ms = now_ms() + 1000 * (int64_t)d->o->interval_s;
	}
	if (now_ms() >= d->next_health_ms)
		report_health(d);
	if (d->sync_needed && now_ms() >= d->next_sync_ms)
		sync_slices(d);
	wait = d->next_check_ms - now_ms();
	if (d->sync_needed && d->next_sync_ms - now_ms() < wait)
		wait = d->next_sync_ms - now_ms();
	return (int)(wait < 0 ? 0 : wait > 1000 ? 1000 : wait);
}

static int plugin_serves(const struct opts *o, const struct pool_config *cfg, char *err,
			 size_t errlen);

/* --config changed (a ConfigMap swaps it; checked every second too): the new split, refused as
 * at start (a device of both, the plugin still serving a resource now given to the driver) and
 * then the running one kept, said once per content; taken, the devices published again. The
 * plugin reloads the same file itself: where a resource moves back to the plugin, the driver
 * stops publishing it while the plugin, seeing no socket of the driver's to wait for, may
 * already serve it; docs/dra.md says to drain the resource's pods first. */
static void on_reload(void *ud, enum daemon_reload_reason why)
{
	struct daemon *d = ud;
	struct pool_config *cfg = NULL;
	struct dra_inventory inv = { 0 };
	char *text = NULL, err[512];
	int r;

	if (!d->o->config)
		return;
	r = config_load(d->o, &cfg, &text, err, sizeof(err));
	if (r >= 0 && d->cfg_text && !strcmp(text, d->cfg_text)) {
		pool_config_free(cfg);
		free(text);
		return;
	}
	if (r >= 0 && (r = inventory(cfg, d->drv.node, &inv, err, sizeof(err))) < 0 && !err[0])
		snprintf(err, sizeof(err), "%s", strerror(-r));
	if (r >= 0 && plugin_serves(d->o, cfg, err, sizeof(err)))
		r = -EBUSY;
	if (r < 0) {
		if (daemon_refusal_is_new(&d->refusal, err, text))
			log_error("%s: new config refused, keeping the running one: %s",
				  daemon_reload_reason_to_string(why), err);
		dra_inventory_clear(&inv);
		pool_config_free(cfg);
		free(text);
		return;
	}
	daemon_refusal_clear(&d->refusal);
	pthread_mutex_lock(&d->drv.lock);
	dra_inventory_clear(&d->drv.inv);
	d->drv.inv = inv;
	pthread_mutex_unlock(&d->drv.lock);
	pool_config_free(d->cfg);
	free(d->cfg_text);
	d->cfg = cfg;
	d->cfg_text = text;
	log_info("%s: config %s reloaded: %zu device(s)", daemon_reload_reason_to_string(why),
		 d->o->config, inv.n);
	report_health(d);
	d->sync_needed = true;
	d->next_sync_ms = 0;
}

static const struct daemon_ops loop_ops = { .reload = on_reload, .tick = on_tick };

/* Whether socket (a name in device-plugins) is the plugin's for a resource the driver serves:
 * any of rdmak's without --config, else one of a resource given to the driver
 * (pool_socket_name). */
static bool socket_ours(const struct pool_config *cfg, const char *socket)
{
	if (!str_startswith(socket, "rdmak-") || !strstr(socket, ".sock"))
		return false;
	if (!cfg)
		return true;
	for (size_t i = 0; i < cfg->n_res; i++) {
		const struct pool_resource *res = &cfg->res[i];
		char name[512];

		if (res->served_by == POOL_BY_DRA &&
		    pool_socket_name(res, name, sizeof(name)) >= 0 && !strcmp(socket, name))
			return true;
	}
	return false;
}

/* A device is handed out by the device plugin or by the DRA driver: both would give it to two
 * pods. 1 (said) when a live rdmak plugin serves a socket in the kubelet's device-plugins folder
 * that the driver's devices would be in (a plugin still running with the config from before a
 * resource moved), 0 when none does. */
static int plugin_serves(const struct opts *o, const struct pool_config *cfg, char *err,
			 size_t errlen)
{
	_cleanup_close_ int fd = open(o->device_plugins_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names = NULL;
	size_t n = 0;
	int found = 0;

	if (fd < 0 || fileio_list_dir(fd, 0, &names, &n) < 0)
		return 0; /* no folder: no device plugin on this node */
	for (size_t i = 0; i < n && !found; i++) {
		char path[PATH_MAX];
		int pid = 0;

		if (!socket_ours(cfg, names[i]))
			continue;
		snprintf(path, sizeof(path), "%s/%s", o->device_plugins_dir, names[i]);
		if (kubelet_socket_live(path, &pid) > 0) {
			snprintf(
				err, errlen,
				"rdmak plugin serves %s (%.256s, pid %d): a device is handed out by the "
				"device plugin or by the DRA driver, never both (docs/dra.md)",
				cfg ? "a resource the config gives the driver" : "this node", path,
				pid);
			found = 1;
		}
	}
	strv_free(names);
	return found;
}

/* cfg and text (the config's, NULL without --config) are the daemon's from here on. */
static int dra_daemon(const struct opts *o, struct pool_config *cfg, char *text)
{
	struct daemon d = { .o = o, .cfg = cfg, .cfg_text = text, .stop_fd = -1, .event_fd = -1 };
	struct kubelet_dra_config kc = {
		.driver = o->driver,
		.registry_dir = o->registry_dir,
		.plugin_dir = o->plugin_dir,
		.ops = &dra_ops,
		.userdata = &d,
		.log = transport_log,
	};
	struct daemon_loop *loop = NULL;
	char err[512];
	int r, ret = DRA_EXIT_RUNTIME;

	d.drv = (struct dra_driver){ .driver = o->driver,
				     .node_name = o->node_name,
				     .cdi_dir = o->cdi_dir,
				     .state_dir = o->state_dir };
	pthread_mutex_init(&d.drv.lock, NULL);
	pthread_mutex_init(&d.wlock, NULL);
	d.events_tail = &d.events;
	/* the loop first: it blocks the signals that every thread started later inherits */
	if (!o->once && !o->uninstall && (r = daemon_loop_new(&loop_ops, &d, &loop)) < 0) {
		fprintf(stderr, "rdmak dra: the daemon loop: %s\n", strerror(-r));
		goto out;
	}
	r = k8s_client_new(o->kubeconfig, &d.drv.api, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rdmak dra: %s%s\n", o->kubeconfig ? "--kubeconfig: " : "", err);
		ret = o->kubeconfig ? DRA_EXIT_USAGE : DRA_EXIT_RUNTIME;
		goto out;
	}
	if (dra_publisher_new(d.drv.api, o->driver, o->node_name, &d.pub) < 0 ||
	    dra_status_new(&d.status) < 0)
		goto out;
	if (o->uninstall) {
		r = dra_publisher_delete_all(d.pub, err, sizeof(err));
		if (r < 0)
			fprintf(stderr, "rdmak dra: deleting the ResourceSlices: %s\n", err);
		else
			log_info("deleted %llu ResourceSlice(s) of %s on %s",
				 dra_publisher_stats(d.pub)->deletes, o->driver, o->node_name);
		ret = r < 0 ? DRA_EXIT_RUNTIME : DRA_EXIT_OK;
		goto out;
	}
	if (plugin_serves(o, d.cfg, err, sizeof(err))) {
		fprintf(stderr, "rdmak dra: %s\n", err);
		goto out;
	}
	if (load(o, &d.drv.ctx, &d.drv.node) < 0)
		goto out;
	if ((r = inventory(d.cfg, d.drv.node, &d.drv.inv, err, sizeof(err))) < 0) {
		fprintf(stderr, "rdmak dra: %s%s\n", err[0] ? "--config: " : "",
			err[0] ? err : strerror(-r));
		ret = err[0] ? DRA_EXIT_USAGE : DRA_EXIT_RUNTIME;
		goto out;
	}
	for (size_t i = 0; i < d.drv.inv.n_notes; i++)
		log_warning("%s", d.drv.inv.notes[i]);
	if (o->once) {
		r = dra_publisher_sync(d.pub, &d.drv.inv, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "rdmak dra: publishing the ResourceSlices: %s\n", err);
			ret = r == -EINVAL ? DRA_EXIT_USAGE : DRA_EXIT_RUNTIME;
			goto out;
		}
		log_info("published %d pool(s) of %zu device(s) (%llu request(s))", r, d.drv.inv.n,
			 dra_publisher_stats(d.pub)->requests);
		ret = DRA_EXIT_OK;
		goto out;
	}
	if (o->config && (r = daemon_loop_watch(loop, o->config)) < 0)
		log_warning("watching %s: %s (a change is seen within a second all the same)",
			    o->config, strerror(-r));
	if (o->alive_file && (r = daemon_loop_alive_file(loop, o->alive_file)) < 0) {
		fprintf(stderr, "rdmak dra: --alive-file %s: %s\n", o->alive_file, strerror(-r));
		ret = DRA_EXIT_USAGE;
		goto out;
	}
	if ((r = kubelet_dra_start(&kc, &d.kd)) < 0) {
		fprintf(stderr, "rdmak dra: serving the kubelet: %s\n", strerror(-r));
		goto out;
	}
	log_info("driver %s on node %s: %zu device(s), registration %s, endpoint %s", o->driver,
		 o->node_name, d.drv.inv.n, kubelet_dra_registration_socket(d.kd),
		 kubelet_dra_endpoint(d.kd));
	report_health(&d);
	sync_slices(&d);
	d.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d.event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d.stop_fd < 0 || d.event_fd < 0)
		r = -errno;
	else if ((r = daemon_loop_add_fd(loop, d.event_fd, on_events, &d)) >= 0)
		r = -pthread_create(&d.watch_thread, NULL, watch_thread, &d);
	if (r < 0) {
		log_error("starting the watch: %s", strerror(-r));
		goto out;
	}
	d.watch_up = true;
	d.next_check_ms = now_ms() + 1000 * (int64_t)o->interval_s;
	r = daemon_loop_run(loop);
	if (r < 0) {
		log_error_errno(r, "poll: %m");
		goto out;
	}
	log_info("%s: stopping (the slices stay: the kubelet removes a driver's slices when it "
		 "is gone for good)",
		 strsignal(r));
	ret = DRA_EXIT_OK;
out:
	if (d.watch_up) {
		uint64_t one = 1;

		if (write(d.stop_fd, &one, sizeof(one)) < 0)
			log_warning("stopping the watch: %s", strerror(errno));
		pthread_join(d.watch_thread, NULL);
	}
	kubelet_dra_free(d.kd);
	while (d.events) {
		struct watch_event *e = d.events;

		d.events = e->next;
		json_decref(e->obj);
		free(e);
	}
	closep(&d.stop_fd);
	closep(&d.event_fd);
	dra_publisher_free(d.pub);
	dra_status_free(d.status);
	k8s_client_free(d.drv.api);
	dra_inventory_clear(&d.drv.inv);
	hw_node_free(d.drv.node);
	hw_ctx_free(d.drv.ctx);
	daemon_loop_free(loop);
	pool_config_free(d.cfg);
	free(d.cfg_text);
	daemon_refusal_clear(&d.refusal);
	pthread_mutex_destroy(&d.drv.lock);
	pthread_mutex_destroy(&d.wlock);
	return ret;
}

int dra_main(int argc, char **argv)
{
	struct opts o = {
		.driver = DRA_DRIVER_DEFAULT,
		.registry_dir = "/var/lib/kubelet/plugins_registry",
		.plugin_dir = "/var/lib/kubelet/plugins",
		.cdi_dir = "/var/run/cdi",
		.state_dir = "/var/lib/rdmak/dra",
		.interval_s = 10,
		.device_plugins_dir = "/var/lib/kubelet/device-plugins",
		.cni_state_dir = ATTACH_DEFAULT_DIR,
	};
	struct pool_config *cfg = NULL;
	char *text = NULL, err[512];
	int r;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? DRA_EXIT_OK : DRA_EXIT_USAGE;
	log_set_program("dra");
	log_set_max_level(o.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (!o.dry_run)
		log_set_time(!o.once && !o.uninstall);
	if (config_load(&o, &cfg, &text, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmak dra: --config %s\n", err);
		free(text);
		return DRA_EXIT_USAGE;
	}
	if (o.dry_run) {
		r = dry_run(&o, cfg);
		pool_config_free(cfg);
		free(text);
		return r;
	}
	return dra_daemon(&o, cfg, text);
}
