/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak plugin`: the kubelet device plugin. This file is the role's entry point and the
 * daemon loop, the only place that logs; pools, health, files and the report are modules. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "hw/hw.h"
#include "kubelet/kubelet.h"
#include "log/log.h"
#include "doc/doc.h"
#include "pool/allocate.h"
#include "pool/config.h"
#include "plugin/files.h"
#include "pool/health.h"
#include "pool/pool.h"
#include "plugin/report.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strv.h"

/* Exit codes (usage text and docs/plugin.md). */
enum { PLUGIN_EXIT_OK = 0, PLUGIN_EXIT_RUNTIME = 1, PLUGIN_EXIT_USAGE = 2 };

struct opts {
	const char *config;
	const char *kubelet_dir;
	struct hw_roots roots;
	const char *devinfo_dir;
	const char *cdi_dir;
	bool cdi, dry_run, json;
	int health_ms; /* 0: from the config */
	int verbose;
	const char *wait_for;	/* read the node only once this file exists (the vf ready marker) */
	const char *alive_file; /* touched by the daemon loop for the liveness probe */
	int wait_timeout_s;
};

/* One kubelet server per resource name; it lives across reloads while its resource does. */
struct slot {
	struct daemon *d;
	char *full_name;
	struct kubelet_server *srv;
	const struct pool *pool; /* in d->ps; NULL while the resource is gone (under d->lock) */
	bool seen;
	bool quiet; /* a retry in progress: its failure was logged the first time */
};

/* A pool build on the builder thread (rescan or reload): a full hardware load of a
 * 1016-VF node takes seconds, and the loop keeps polling health meanwhile. */
struct build_job {
	struct pool_config *cfg; /* reload: the new config, owned until applied; rescan: d->cfg */
	char *text;		 /* reload: its text */
	const struct pool_set *prev; /* d->ps, which stays until the result is applied */
	char why[64];
	bool reload;
	struct pool_set *ps; /* the result, when r >= 0 */
	int r;
};

struct daemon {
	struct opts *o;
	struct hw_ctx *ctx;
	struct kubelet *k;     /* the transport every slot's server shares */
	pthread_rwlock_t lock; /* d->ps and slot->pool, read by the transport's threads */
	struct pool_config *cfg;
	char *cfg_text;
	struct pool_set *ps;
	struct slot **slots;
	size_t n_slots;
	uint64_t fingerprint;
	struct plugin_files_written devinfo;   /* device-info files we wrote in o->devinfo_dir */
	struct plugin_files_written cdi_files; /* CDI specs we wrote in o->cdi_dir */
	struct daemon_refusal refusal;	       /* the last config refusal logged, and its content */
	double last_rescan, last_fp;	       /* when the last rescan and topology check ran */
	bool netns_warned;		       /* the rdmaNetnsMode mismatch was logged */
	struct strv_list attr_errors; /* the port files the last build could not read, as logged */
	/* The builder: at most one build at a time. Only the loop's thread starts, joins and
	 * applies it; the builder writes only job and build()'s own fields above. */
	pthread_t builder;
	bool building;
	int build_done_fd; /* eventfd: the builder finished */
	struct build_job job;
	bool rescan_pending; /* a rescan was asked for while building */
	char rescan_why[64];
	bool sighup_pending; /* a SIGHUP came while building */
};

/* ---- logging: the transport's events, through the one logger ---------------------------- */

static void hub_log(int level, const char *msg, void *ud)
{
	log_full((enum log_level)level, "kubelet: %s", msg);
}

static void transport_log(int level, const char *msg, void *ud)
{
	const struct slot *s = ud;

	if (!s->quiet)
		log_full((enum log_level)level, "%s: %s", s->full_name, msg);
}

/* ---- config --------------------------------------------------------------------------- */

/* The keys the config has that the anchors ignore, accepted: named once per loaded content,
 * on stderr for --dry-run, in the log for the daemon. */
static void config_warnings(const struct opts *o, const struct pool_config *cfg)
{
	for (size_t i = 0; i < cfg->warnings.n; i++) {
		if (o->dry_run)
			fprintf(stderr, "rdmak plugin: %s: %s\n", o->config, cfg->warnings.v[i]);
		else
			log_warning("%s: %s", o->config, cfg->warnings.v[i]);
	}
}

/* ---- building pools ------------------------------------------------------------------- */

/* The port attributes the load could not read or parse: the report only says "unknown", so
 * --dry-run names each file and why on stderr, as `rdmak list` does. The daemon logs each
 * once, at the build that first meets it: a periodic rescan of a node with a broken file
 * would otherwise repeat the same warnings every periodicUpdate. (The health poll re-reads
 * the state files every interval and logs the members' state changes.) */
static void attr_errors(struct daemon *d, const struct hw_node *node)
{
	struct strv_list now = { 0 };
	char msg[PATH_MAX + 128];

	HW_NODE_FOREACH_PORT(node, p)
	for (size_t i = 0; i < p->n_errors; i++) {
		hw_attr_error_str(p, &p->errors[i], hw_ctx_sysfs(d->ctx), msg, sizeof(msg));
		if (d->o->dry_run) {
			fprintf(stderr, "rdmak plugin: %s (shown as unknown)\n", msg);
			continue;
		}
		if (!strv_contains(d->attr_errors.v, msg))
			log_warning("%s (shown as unknown)", msg);
		/* out of memory: it may be logged again at the next build */
		(void)strv_extend(&now.v, &now.n, msg);
	}
	strv_free(d->attr_errors.v);
	d->attr_errors = now;
}

/* prev: the set the result replaces (in-pod VFs keep their answers), NULL at start-up. Runs
 * on the builder thread, after start-up: it touches no field the loop's thread writes.
 * *refused (may be NULL) says whether the config was refused (its split between the plugin and
 * the DRA driver), rather than the node unreadable: start-up exits 2 for the one, 1 for the
 * other. */
static int build(struct daemon *d, const struct pool_config *cfg, const struct pool_set *prev,
		 struct pool_set **ret, bool *refused)
{
	char err[512] = "";
	struct pool_opts po = { .cdi = d->o->cdi, .prev = prev, .err = err, .errlen = sizeof(err) };
	struct hw_node *node = NULL;
	struct hw_error herr = { 0 };
	int r;

	r = hw_load(d->ctx, 0, &node, &herr);
	if (r < 0) {
		log_error("reading the hardware: %s: %s",
			  herr.path[0] ? herr.path : hw_ctx_sysfs(d->ctx),
			  hw_strerror(herr.err ? herr.err : -r));
		return r;
	}
	attr_errors(d, node);
	/* the doctor's netns.mode check fails on this too; the plugin serves anyway and says so,
	 * once (every rescan comes here) */
	if (cfg->rdma_netns_mode >= 0 && node->kernel.netns_mode >= 0 &&
	    cfg->rdma_netns_mode != node->kernel.netns_mode) {
		if (!d->netns_warned)
			log_warning(
				"the config's rdmaNetnsMode is %s but the node's RDMA netns mode is %s (rdmak doctor "
				"--check netns.mode says what to do)",
				cfg->rdma_netns_mode ? "shared" : "exclusive",
				node->kernel.netns_mode ? "shared" : "exclusive");
		d->netns_warned = true;
	} else {
		d->netns_warned = false;
	}
	r = pool_set_build(cfg, node, &po, ret);
	hw_node_free(node);
	if (r < 0)
		log_error("building the pools: %s", err[0] ? err : strerror(-r));
	if (refused)
		*refused = r < 0 && err[0];
	return r;
}

/* ---- transport callbacks (any server's thread) ------------------------------------------ */

static int cb_allocate(void *ud, const char *const *ids, size_t n,
		       struct kubelet_container_alloc *out, char **msg)
{
	struct slot *s = ud;
	int r;

	pthread_rwlock_rdlock(&s->d->lock);
	if (s->pool) {
		r = pool_allocate_container(s->pool, ids, n, out, msg);
	} else {
		r = -ENODEV;
		if (asprintf(msg, "%s is no longer configured", s->full_name) < 0)
			*msg = NULL;
	}
	pthread_rwlock_unlock(&s->d->lock);
	if (r < 0)
		log_warning("%s: Allocate(%zu) refused: %s", s->full_name, n,
			    *msg ? *msg : strerror(-r));
	else
		log_debug("%s: Allocate(%zu): %zu device nodes, %zu envs", s->full_name, n,
			  out->n_devices, out->n_envs);
	return r;
}

static int cb_preferred(void *ud, const char *const *available, size_t n_available,
			const char *const *must_include, size_t n_must, size_t size, char ***out,
			size_t *n_out)
{
	struct slot *s = ud;
	int r = -ENODEV;

	pthread_rwlock_rdlock(&s->d->lock);
	if (s->pool)
		r = pool_allocate_preferred(s->pool, available, n_available, must_include, n_must,
					    size, out, n_out);
	pthread_rwlock_unlock(&s->d->lock);
	return r;
}

static const struct kubelet_ops plugin_ops = {
	.allocate = cb_allocate,
	.preferred = cb_preferred,
	.prestart = NULL,
};

/* ---- files for others ------------------------------------------------------------------- */

static struct slot *slot_find(struct daemon *d, const char *name);

/* Files are written for the pools we serve only: a second plugin on this node that may not
 * take the sockets over must not replace, nor remove at its exit, the serving one's files. */
static bool served(void *ud, const struct pool *p)
{
	return slot_find(ud, p->res->full_name) != NULL;
}

static void removing_failed(void *ud, const char *path, int err)
{
	log_warning("removing %s: %s", path, strerror(-err));
}

static void devinfo_failed(void *ud, const char *path, int err)
{
	log_warning("writing %s: %s", path, strerror(-err));
}

static void cdi_failed(void *ud, const char *path, int err)
{
	log_error("writing CDI spec %s: %s", path, strerror(-err));
}

static void write_devinfo(struct daemon *d)
{
	int r;

	r = plugin_files_devinfo_update(d->ps, served, d->o->devinfo_dir, &d->devinfo,
					devinfo_failed, removing_failed, d);
	if (r < 0)
		log_warning("device-info folder %s: %s", d->o->devinfo_dir, strerror(-r));
	else if (r > 0)
		log_info("wrote %d device-info files in %s", r, d->o->devinfo_dir);
}

static void write_cdi(struct daemon *d)
{
	int r;

	if (!d->o->cdi)
		return;
	r = plugin_files_cdi_update(d->ps, served, d->o->cdi_dir, &d->cdi_files, cdi_failed,
				    removing_failed, d);
	if (r < 0)
		log_error("CDI folder %s: %s", d->o->cdi_dir, strerror(-r));
}

/* ---- servers ------------------------------------------------------------------------------ */

static void log_pool(const struct pool *p, const char *what)
{
	size_t healthy = 0;

	for (size_t i = 0; i < p->n_devs; i++)
		healthy += p->devs[i].healthy;
	log_info("%s %s: %zu devices advertised (%zu healthy) over %zu %s", what, p->res->full_name,
		 p->n_devs, healthy, p->n_m,
		 p->res->kind == POOL_SHARED ? "RDMA devices" : "PCI functions");
}

static struct slot *slot_find(struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->n_slots; i++)
		if (!strcmp(d->slots[i]->full_name, name))
			return d->slots[i];
	return NULL;
}

static void slot_free(struct slot *s)
{
	if (!s)
		return;
	kubelet_server_free(s->srv);
	free(s->full_name);
	free(s);
}

static int slot_start(struct daemon *d, const struct pool *p, bool quiet)
{
	struct kubelet_server_config kc = {
		.resource_name = p->res->full_name,
		.socket_name = p->socket_name,
		.preferred_allocation = true,
		.prestart_required = false,
		.ops = &plugin_ops,
	};
	struct slot *s, **v;
	int r;

	s = calloc(1, sizeof(*s));
	v = realloc(d->slots, (d->n_slots + 1) * sizeof(*v));
	if (!s || !v) {
		free(s);
		return -ENOMEM;
	}
	d->slots = v;
	s->d = d;
	s->full_name = strdup(p->res->full_name);
	s->pool = p;
	s->quiet = quiet;
	kc.userdata = s;
	r = s->full_name ? kubelet_server_new(d->k, &kc, transport_log, s, &s->srv) : -ENOMEM;
	if (r < 0) {
		free(s->full_name);
		free(s);
		return r;
	}
	r = kubelet_server_set_devices(s->srv, p->devs, p->n_devs);
	if (r >= 0)
		r = kubelet_server_listen(
			s->srv); /* registered by register_all(), after the files */
	if (r < 0) {
		if (!quiet)
			log_error("%s: starting its server: %s", p->res->full_name, strerror(-r));
		slot_free(s);
		return r;
	}
	s->quiet = false;
	d->slots[d->n_slots++] = s;
	return 0;
}

/* Start servers for pools that have none (new resources, or an earlier start that failed).
 * Returns how many started, or -EIO when one did not. */
static int start_missing(struct daemon *d, bool quiet)
{
	int r = 0, started = 0;

	for (size_t i = 0; i < d->ps->n; i++) {
		if (slot_find(d, d->ps->pools[i].res->full_name))
			continue;
		/* a retry every second must not flood the log: the first failure was logged */
		if (slot_start(d, &d->ps->pools[i], quiet) < 0) {
			r = -EIO;
			continue;
		}
		started++;
		if (quiet)
			log_info("%s: serving after a retry", d->ps->pools[i].res->full_name);
	}
	return r < 0 ? r : started;
}

/* Register the servers that listen and have not registered yet: after their device-info and
 * CDI files are written, which the kubelet's first Allocate may already need. */
static void register_all(struct daemon *d)
{
	for (size_t i = 0; i < d->n_slots; i++) {
		int r = kubelet_server_start(d->slots[i]->srv);

		if (r < 0 && r != -EALREADY)
			log_error("%s: registering: %s", d->slots[i]->full_name, strerror(-r));
	}
}

/* Point every slot at the new set, start servers for new resources and stop the ones whose
 * resource left the config. Called with the write lock held only around pointer swaps. */
static int apply(struct daemon *d, struct pool_set *ps, struct pool_config *cfg, char *text)
{
	struct pool_set *old_ps;
	struct pool_config *old_cfg;
	size_t kept = 0;
	int r = 0;

	pthread_rwlock_wrlock(&d->lock);
	old_ps = d->ps;
	old_cfg = d->cfg;
	d->ps = ps;
	if (cfg) {
		d->cfg = cfg;
		free(d->cfg_text);
		d->cfg_text = text;
	}
	for (size_t i = 0; i < d->n_slots; i++) {
		d->slots[i]->seen = false;
		d->slots[i]->pool = NULL;
	}
	for (size_t i = 0; i < ps->n; i++) {
		struct slot *s = slot_find(d, ps->pools[i].res->full_name);

		if (s) {
			s->pool = &ps->pools[i];
			s->seen = true;
		}
	}
	pthread_rwlock_unlock(&d->lock);
	if (old_ps != ps)
		pool_set_free(old_ps);
	if (cfg && old_cfg != cfg)
		pool_config_free(old_cfg);

	for (size_t i = 0; i < d->n_slots;) {
		struct slot *s = d->slots[i];

		if (s->seen) {
			kubelet_server_set_devices(s->srv, s->pool->devs, s->pool->n_devs);
			i++;
			kept++;
			continue;
		}
		log_info("%s: no longer configured, stopping its server", s->full_name);
		slot_free(s);
		d->slots[i] = d->slots[--d->n_slots];
	}
	r = start_missing(d, false);
	for (size_t i = 0; i < ps->n; i++)
		if (served(d, &ps->pools[i]))
			log_pool(&ps->pools[i], "serving");
	write_devinfo(d);
	write_cdi(d);
	register_all(d);
	return r < 0 ? r : 0;
}

/* ---- health tick ---------------------------------------------------------------------- */

static void log_member_changes(const struct pool_set *ps, const struct pool *p, const bool *before)
{
	for (size_t i = 0; i < p->n_m; i++) {
		const struct pool_member *m = &p->m[i];
		char reason[160];

		if (m->healthy == before[i])
			continue;
		pool_health_member_reason(ps, m, reason, sizeof(reason));
		if (m->healthy)
			log_info("%s: %s is Healthy again", p->res->full_name, m->id);
		else
			log_warning("%s: %s is Unhealthy: %s", p->res->full_name, m->id, reason);
	}
}

static void health_tick(struct daemon *d)
{
	struct pool_set *ps = d->ps;
	_cleanup_free_ bool *changed = NULL;
	int n;

	/* Only this thread writes inputs and refreshes; readers take the lock for the swap of
	 * prepared answers inside pool_set_refresh. */
	n = pool_health_poll(ps, d->ctx);
	if (n <= 0)
		return;
	changed = calloc(ps->n + 1, sizeof(bool));
	if (!changed)
		return;
	{
		size_t total = 0, k = 0;
		_cleanup_free_ bool *before = NULL;

		for (size_t i = 0; i < ps->n; i++)
			total += ps->pools[i].n_m;
		before = calloc(total + 1, sizeof(bool));
		if (!before)
			return;
		for (size_t i = 0; i < ps->n; i++)
			for (size_t j = 0; j < ps->pools[i].n_m; j++)
				before[k++] = ps->pools[i].m[j].healthy;
		pthread_rwlock_wrlock(&d->lock);
		pool_set_refresh(ps, changed);
		pthread_rwlock_unlock(&d->lock);
		k = 0;
		for (size_t i = 0; i < ps->n; i++) {
			log_member_changes(ps, &ps->pools[i], before + k);
			k += ps->pools[i].n_m;
		}
	}
	for (size_t i = 0; i < ps->n; i++) {
		struct slot *s;

		if (!changed[i] || !(s = slot_find(d, ps->pools[i].res->full_name)))
			continue;
		kubelet_server_set_devices(s->srv, ps->pools[i].devs, ps->pools[i].n_devs);
		log_pool(&ps->pools[i], "updated");
	}
}

/* ---- rescans and reloads on the builder thread -------------------------------------- */

static void *builder_main(void *ud)
{
	struct daemon *d = ud;
	uint64_t one = 1;

	d->job.r = build(d, d->job.cfg, d->job.prev, &d->job.ps, NULL);
	/* cannot fail: the loop reads the counter before the next build */
	(void)!write(d->build_done_fd, &one, sizeof(one));
	return NULL;
}

/* Start a build of cfg on the builder thread; the loop applies it (build_finished). cfg and
 * text (a reload's) are the job's from here on, whatever happens. */
static int build_start(struct daemon *d, const char *why, struct pool_config *cfg, char *text)
{
	int r;

	d->job = (struct build_job){
		.cfg = cfg ? cfg : d->cfg, .text = text, .prev = d->ps, .reload = cfg != NULL
	};
	snprintf(d->job.why, sizeof(d->job.why), "%s", why);
	r = -pthread_create(&d->builder, NULL, builder_main, d);
	if (r < 0) {
		log_error("%s: starting the builder thread: %s", why, strerror(-r));
		if (cfg) {
			pool_config_free(cfg);
			free(text);
		}
		d->job = (struct build_job){ 0 };
		return r;
	}
	d->building = true;
	return 0;
}

/* Rebuild from a fresh hardware load (devices came or went) with the same config. While a
 * build runs, one more rescan is remembered: it starts when this one is applied. */
static void rescan(struct daemon *d, const char *why)
{
	if (d->building) {
		d->rescan_pending = true;
		snprintf(d->rescan_why, sizeof(d->rescan_why), "%s", why);
		return;
	}
	log_info("rescanning the hardware: %s", why);
	if (build_start(d, why, NULL, NULL) < 0)
		d->fingerprint = 0; /* try again at the next check */
}

static void reload(struct daemon *d, const char *why)
{
	struct pool_config *cfg = NULL;
	char *text = NULL, err[512];

	/* one build at a time: the config is checked again every second, a SIGHUP is kept */
	if (d->building) {
		if (!strcmp(why, "SIGHUP"))
			d->sighup_pending = true;
		return;
	}
	if (pool_config_load(d->o->config, 0, &cfg, &text, err, sizeof(err)) < 0) {
		/* The file is re-checked every second, and an operator who edits it may send SIGHUP
		 * too: one line per refused content (or unreadable file), however often it is read. */
		if (daemon_refusal_is_new(&d->refusal, err, text))
			log_error("%s: new config refused, keeping the running one: %s", why, err);
		else if (!strcmp(why, "SIGHUP"))
			log_debug("SIGHUP: %s is still the refused one", d->o->config);
		free(text);
		return;
	}
	daemon_refusal_clear(&d->refusal);
	if (d->cfg_text && !strcmp(text, d->cfg_text) && strcmp(why, "SIGHUP")) {
		pool_config_free(cfg);
		free(text);
		return;
	}
	config_warnings(d->o, cfg);
	build_start(d, why, cfg, text);
}

/* Wait for the builder and take its job. */
static struct build_job build_join(struct daemon *d)
{
	struct build_job job;
	uint64_t n;

	pthread_join(d->builder, NULL);
	job = d->job; /* after the join: the builder writes job.ps and job.r */
	if (read(d->build_done_fd, &n, sizeof(n)) < 0)
		n = 0; /* nothing to reset */
	d->building = false;
	d->job = (struct build_job){ 0 };
	return job;
}

/* The builder is done: apply its set (or keep the running one), then start what was asked for
 * meanwhile. The set's health inputs were read at load time, up to a build ago, while the loop
 * kept polling the running set: re-read them first, so that a change seen meanwhile is not
 * undone for one interval by the new set. */
static void build_finished(struct daemon *d)
{
	struct build_job job = build_join(d);

	if (job.r < 0) {
		if (job.reload) {
			pool_config_free(job.cfg);
			free(job.text);
		} else {
			d->fingerprint = 0; /* sysfs mid-change: try again at the next check */
		}
	} else {
		if (pool_health_poll(job.ps, d->ctx) > 0)
			pool_set_refresh(job.ps, NULL);
		if (job.reload) {
			log_info("%s: config %s reloaded (%zu resources)", job.why, d->o->config,
				 job.cfg->n_res);
			apply(d, job.ps, job.cfg, job.text);
		} else {
			log_info("rescan done: %s", job.why);
			apply(d, job.ps, NULL, NULL);
		}
	}
	if (d->sighup_pending) {
		d->sighup_pending = false;
		reload(d, "SIGHUP");
	}
	if (d->rescan_pending && !d->building) {
		d->rescan_pending = false;
		rescan(d, d->rescan_why);
	}
}

/* At exit: a build in progress is waited for (a hardware load cannot be interrupted) and
 * its result dropped. */
static void build_discard(struct daemon *d)
{
	struct build_job job;

	if (!d->building)
		return;
	log_info("waiting for the build in progress (%s) to finish", d->job.why);
	job = build_join(d);
	if (job.r >= 0)
		pool_set_free(job.ps);
	if (job.reload) {
		pool_config_free(job.cfg);
		free(job.text);
	}
}

/* ---- the loop --------------------------------------------------------------------------- */

/* The kubelet creates <kubelet-dir>/device-plugins; before it has run once there is nowhere
 * to listen. Wait (answering SIGTERM) instead of exiting into a crash loop. */
static int wait_for_kubelet_dir(struct daemon *d, struct daemon_loop *loop)
{
	_cleanup_free_ char *dir = NULL;
	bool logged = false;
	struct stat st;

	if (asprintf(&dir, "%s/device-plugins", d->o->kubelet_dir) < 0)
		return -ENOMEM;
	while (stat(dir, &st) < 0) {
		int sig;

		if (!logged) {
			log_info("waiting for %s (is the kubelet running?)", dir);
			logged = true;
		}
		sig = daemon_loop_wait_stop(loop, 250);
		if (sig > 0) {
			log_info("%s: shutting down", strsignal(sig));
			return -EINTR;
		}
	}
	return 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void config_dir_changed(void *ud)
{
	daemon_loop_notify_changed(ud);
}

/* The folder, not the file: a ConfigMap update swaps the ..data symlink and never writes the
 * file we opened. On the transport's inotify instance: one for the whole plugin. */
static int watch_config(struct daemon *d, struct daemon_loop *loop)
{
	_cleanup_free_ char *dir = daemon_config_dir(d->o->config);

	if (!dir)
		return -ENOMEM;
	return kubelet_watch_dir(d->k, dir, config_dir_changed, loop);
}

static void on_reload(void *ud, enum daemon_reload_reason why)
{
	struct daemon *d = ud;

	if (why == DAEMON_RELOAD_SIGNAL) {
		reload(d, "SIGHUP");
		return;
	}
	reload(d, "config changed");
	if (d->n_slots < d->ps->n && start_missing(d, true) > 0) {
		write_devinfo(d);
		write_cdi(d);
		register_all(d);
	}
}

static void on_build_done(void *ud)
{
	build_finished(ud);
}

/* After every wake-up of the loop: topology, periodic rescans, health. */
static int on_tick(void *ud)
{
	struct daemon *d = ud;
	uint64_t fp;

	/* Three directory listings: every 2 s is enough for hot-plug and driver reloads. The
	 * rescan runs on the builder thread: this loop goes on polling health meanwhile. */
	if (now_s() - d->last_fp >= 2.0 &&
	    (d->last_fp = now_s(), pool_health_topology_fingerprint(d->ctx, &fp) >= 0) &&
	    fp != d->fingerprint) {
		d->fingerprint = fp;
		rescan(d, "RDMA devices or netdevs appeared or disappeared");
		d->last_rescan = now_s();
	} else if (d->cfg->periodic_update_s > 0 &&
		   now_s() - d->last_rescan >= d->cfg->periodic_update_s) {
		d->last_rescan = now_s();
		rescan(d, "periodic update");
	}
	health_tick(d);
	return d->o->health_ms ? d->o->health_ms : d->cfg->health_interval_ms;
}

static const struct daemon_ops loop_ops = { .reload = on_reload, .tick = on_tick };

static int run_daemon(struct daemon *d)
{
	struct daemon_loop *loop = NULL;
	int r, ret = PLUGIN_EXIT_RUNTIME;

	/* before any thread starts, so that the transport's threads inherit its signal mask */
	r = daemon_loop_new(&loop_ops, d, &loop);
	if (r < 0) {
		log_error_errno(r, "the daemon loop: %m");
		return PLUGIN_EXIT_RUNTIME;
	}
	if (d->o->alive_file && (r = daemon_loop_alive_file(loop, d->o->alive_file)) < 0) {
		log_error_errno(r, "--alive-file %s: %m", d->o->alive_file);
		goto out;
	}
	d->last_rescan = d->last_fp = now_s();
	d->build_done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->build_done_fd < 0 ||
	    daemon_loop_add_fd(loop, d->build_done_fd, on_build_done, d) < 0) {
		log_error("eventfd: %m");
		goto out;
	}
	r = kubelet_new(d->o->kubelet_dir, hub_log, NULL, &d->k);
	if (r < 0) {
		log_error("starting the kubelet transport for %s: %s", d->o->kubelet_dir,
			  strerror(-r));
		goto out;
	}
	r = watch_config(d, loop);
	if (r < 0)
		log_warning("watching %s: %s; changes are noticed by a check every second",
			    d->o->config, strerror(-r));
	if (pool_health_topology_fingerprint(d->ctx, &d->fingerprint) < 0)
		d->fingerprint = 0;
	if (wait_for_kubelet_dir(d, loop) < 0) {
		ret = PLUGIN_EXIT_OK; /* SIGTERM while waiting */
		goto out;
	}
	r = apply(d, d->ps, NULL, NULL);
	if (r < 0)
		log_warning("some resources are not served yet; retrying every second");
	log_info("running: health every %d ms, rescan every %d s, kubelet %s",
		 d->o->health_ms ? d->o->health_ms : d->cfg->health_interval_ms,
		 d->cfg->periodic_update_s, d->o->kubelet_dir);
	r = daemon_loop_run(loop);
	if (r < 0) {
		log_error_errno(r, "poll: %m");
		goto out;
	}
	log_info("%s: shutting down", strsignal(r));
	ret = PLUGIN_EXIT_OK;
out:
	daemon_loop_free(loop);
	return ret;
}

static void daemon_done(struct daemon *d)
{
	build_discard(d); /* it reads d->ps */
	for (size_t i = 0; i < d->n_slots; i++)
		slot_free(d->slots[i]);
	free(d->slots);
	kubelet_free(d->k); /* after its servers */
	if (d->build_done_fd >= 0)
		close(d->build_done_fd);
	if (d->devinfo.n)
		log_info("removing %zu device-info files", d->devinfo.n);
	plugin_files_remove(d->o->devinfo_dir, &d->devinfo, removing_failed, d);
	if (d->o->cdi)
		plugin_files_remove(d->o->cdi_dir, &d->cdi_files, removing_failed, d);
	pool_set_free(d->ps);
	pool_config_free(d->cfg);
	free(d->cfg_text);
	daemon_refusal_clear(&d->refusal);
	strv_free(d->attr_errors.v);
	pthread_rwlock_destroy(&d->lock);
}

/* ---- role entry --------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("Usage: rdmak plugin [options]\n"
	      "Serve RDMA devices to the kubelet: shared HCAs (k8s-rdma-shared-dev-plugin's configList)\n"
	      "and exclusive PCI functions (sriov-network-device-plugin's resourceList). See docs/plugin.md.\n\n"
	      "  -c, --config FILE         config file (default /etc/rdmak/plugin/config.json)\n"
	      "      --kubelet-dir DIR     kubelet root (default /var/lib/kubelet)\n" HW_ROOT_USAGE
	      "      --device-info-dir DIR Multus device-info folder\n"
	      "                            (default /var/run/k8s.cni.cncf.io/devinfo/dp)\n"
	      "      --cdi                 write CDI specs and answer Allocate with cdi_devices\n"
	      "      --cdi-dir DIR         CDI spec folder (default /var/run/cdi)\n"
	      "      --health-interval MS  port/carrier poll period (default: config, else 250)\n"
	      "      --wait-for FILE       read the node and advertise only once FILE exists (the\n"
	      "                            chart's vf DaemonSet writes it when its VFs are made)\n"
	      "      --wait-timeout S      give up (exit 1) after S seconds of --wait-for (default 600)\n"
	      "      --alive-file FILE     touch FILE every second while the loop runs (the container's\n"
	      "                            livenessProbe: `rdmak probe FILE`)\n"
	      "      --dry-run             print the resources and the AllocateResponse a container\n"
	      "                            would get, then exit\n"
	      "  -j, --json                with --dry-run: JSON (docs/plugin.md)\n"
	      "  -v, --verbose             log every Allocate\n"
	      "  -h, --help                this text\n\n"
	      "Exit: 0 done, 1 runtime failure (sysfs unreadable, stdout not writable), 2 bad usage or bad config.\n"
	      "SIGHUP or a changed config file reloads; SIGTERM removes sockets and device-info files.\n",
	      f);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	enum {
		O_KUBELET = 256,
		O_DEVINFO,
		O_CDI,
		O_CDIDIR,
		O_HEALTH,
		O_DRY,
		O_WAIT,
		O_WAIT_TIMEOUT,
		O_ALIVE
	};
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "kubelet-dir", required_argument, NULL, O_KUBELET },
		HW_ROOT_LONGOPTS,
		{ "device-info-dir", required_argument, NULL, O_DEVINFO },
		{ "cdi", no_argument, NULL, O_CDI },
		{ "cdi-dir", required_argument, NULL, O_CDIDIR },
		{ "health-interval", required_argument, NULL, O_HEALTH },
		{ "wait-for", required_argument, NULL, O_WAIT },
		{ "wait-timeout", required_argument, NULL, O_WAIT_TIMEOUT },
		{ "alive-file", required_argument, NULL, O_ALIVE },
		{ "dry-run", no_argument, NULL, O_DRY },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:jvh", longopts, NULL)) != -1) {
		if (hw_roots_option(&o->roots, c, optarg))
			continue;
		switch (c) {
		case 'c': o->config = optarg; break;
		case O_KUBELET: o->kubelet_dir = optarg; break;
		case O_DEVINFO: o->devinfo_dir = optarg; break;
		case O_CDI: o->cdi = true; break;
		case O_CDIDIR: o->cdi_dir = optarg; break;
		case O_HEALTH:
			if (opt_uint("plugin", "--health-interval", optarg, 10, 60000, "ms", &v) <
			    0)
				return -EINVAL;
			o->health_ms = (int)v;
			break;
		case O_WAIT: o->wait_for = optarg; break;
		case O_WAIT_TIMEOUT:
			if (opt_uint("plugin", "--wait-timeout", optarg, 1, 86400, "s", &v) < 0)
				return -EINVAL;
			o->wait_timeout_s = (int)v;
			break;
		case O_ALIVE: o->alive_file = optarg; break;
		case O_DRY: o->dry_run = true; break;
		case 'j': o->json = true; break;
		case 'v': o->verbose++; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak plugin: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (o->json && !o->dry_run) {
		fprintf(stderr, "rdmak plugin: --json goes with --dry-run\n");
		return -EINVAL;
	}
	if (o->alive_file && o->dry_run) {
		fprintf(stderr, "rdmak plugin: --alive-file goes without --dry-run\n");
		return -EINVAL;
	}
	if (o->wait_for && (o->dry_run || !*o->wait_for)) {
		fprintf(stderr, "rdmak plugin: --wait-for FILE goes without --dry-run\n");
		return -EINVAL;
	}
	return 0;
}

/* The VFs' ready marker: `rdmak vf apply` (the chart's vf DaemonSet) writes it once the node's
 * VFs are made, bound and have their GUIDs. The node is read, and the kubelet told about its
 * devices, only after it exists, so that no pod is scheduled on a VF that is still being made.
 * Polled (10 per second) rather than watched: the folder may not exist yet when the plugin
 * starts, and the wait happens once per start. */
static int wait_for_file(const char *path, int timeout_s)
{
	struct timespec tick = { .tv_nsec = 100 * 1000 * 1000 };
	int waited_ms = 0;

	if (access(path, F_OK) == 0)
		return 0;
	log_info(
		"waiting for %s (the vf ready marker: rdmak vf apply writes it once this node's VFs "
		"are made) before advertising anything, up to %d s",
		path, timeout_s);
	while (access(path, F_OK) != 0) {
		if (waited_ms >= timeout_s * 1000)
			return -ETIMEDOUT;
		nanosleep(&tick, NULL);
		waited_ms += 100;
	}
	log_info("%s is there after %d.%d s: reading the node", path, waited_ms / 1000,
		 waited_ms % 1000 / 100);
	return 0;
}

static int check_paths(const struct opts *o, const struct pool_config *cfg)
{
	for (size_t i = 0; i < cfg->n_res; i++) {
		char name[512], path[sizeof(((struct sockaddr_un *)0)->sun_path) + 512];
		int l;

		/* a name cut short (-ENAMETOOLONG) is still longer than any socket path */
		(void)pool_socket_name(&cfg->res[i], name, sizeof(name));
		l = snprintf(path, sizeof(path), "%s/device-plugins/%s", o->kubelet_dir, name);
		if (l >= (int)sizeof(((struct sockaddr_un *)0)->sun_path)) {
			fprintf(stderr,
				"rdmak plugin: %s: socket path %s is longer than a unix socket allows\n",
				cfg->res[i].path, path);
			return -ENAMETOOLONG;
		}
		if (o->cdi && strchr(cfg->res[i].name, '.')) {
			fprintf(stderr,
				"rdmak plugin: %s.resourceName: a CDI class may not contain '.'\n",
				cfg->res[i].path);
			return -EINVAL;
		}
	}
	return 0;
}

static int dry_run(struct daemon *d)
{
	json_t *doc;
	int r;

	doc = plugin_report_build(d->ps);
	if (!doc) {
		fprintf(stderr, "rdmak plugin: building the report: %s\n", strerror(ENOMEM));
		return PLUGIN_EXIT_RUNTIME;
	}
	errno = 0;
	r = d->o->json ? doc_json(stdout, doc) : plugin_report_print_text(stdout, doc);
	json_decref(doc);
	/* stdout is a pipe or a file here: the write (and its ENOSPC, EPIPE) may come at the flush */
	if (fflush(stdout) != 0 || r < 0 || ferror(stdout)) {
		fprintf(stderr, "rdmak plugin: writing the report to stdout: %s\n",
			strerror(errno ? errno : EIO));
		return PLUGIN_EXIT_RUNTIME;
	}
	return PLUGIN_EXIT_OK;
}

int plugin_main(int argc, char **argv)
{
	struct opts o = {
		.config = "/etc/rdmak/plugin/config.json",
		.kubelet_dir = "/var/lib/kubelet",
		.devinfo_dir = "/var/run/k8s.cni.cncf.io/devinfo/dp",
		.cdi_dir = "/var/run/cdi",
		.wait_timeout_s = 600,
	};
	struct daemon d = { .o = &o, .build_done_fd = -1 };
	char err[512];
	char missing[PATH_MAX];
	bool refused = false;
	int r, ret;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? PLUGIN_EXIT_OK : PLUGIN_EXIT_USAGE;
	log_set_program("plugin");
	log_set_time(true);
	log_set_max_level(o.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	{
		/* health.c keeps one sysfs attribute open per port and netdev (~3000 on a 1016-VF node) */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (pool_config_load(o.config, o.dry_run ? POOL_CONFIG_ONCE : 0, &d.cfg, &d.cfg_text, err,
			     sizeof(err)) < 0) {
		fprintf(stderr, "rdmak plugin: %s\n", err);
		free(d.cfg_text);
		return PLUGIN_EXIT_USAGE;
	}
	config_warnings(&o, d.cfg);
	if (check_paths(&o, d.cfg) < 0) {
		pool_config_free(d.cfg);
		free(d.cfg_text);
		return PLUGIN_EXIT_USAGE;
	}
	r = hw_ctx_new_roots(&o.roots, &d.ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak plugin: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		pool_config_free(d.cfg);
		free(d.cfg_text);
		return PLUGIN_EXIT_RUNTIME;
	}
	if (o.wait_for && wait_for_file(o.wait_for, o.wait_timeout_s) < 0) {
		log_error(
			"%s did not appear within %d s: exiting without advertising (VFs may be half "
			"made; the pod restarts and waits again)",
			o.wait_for, o.wait_timeout_s);
		pool_config_free(d.cfg);
		free(d.cfg_text);
		hw_ctx_free(d.ctx);
		return PLUGIN_EXIT_RUNTIME;
	}
	pthread_rwlock_init(&d.lock, NULL);
	r = build(&d, d.cfg, NULL, &d.ps, &refused);
	if (r < 0) {
		ret = refused ? PLUGIN_EXIT_USAGE : PLUGIN_EXIT_RUNTIME;
		goto out;
	}
	if (o.dry_run) {
		ret = dry_run(&d);
		goto out;
	}
	log_info("rdmak plugin starting: config %s, %zu resources, sysfs %s", o.config,
		 d.cfg->n_res, hw_ctx_sysfs(d.ctx));
	ret = run_daemon(&d);
out:
	daemon_done(&d);
	hw_ctx_free(d.ctx);
	return ret;
}
