/* SPDX-License-Identifier: Apache-2.0 */
/* Which pod holds a device: the kubelet's PodResources List, cached, turned into a map from RDMA
 * device name to the containers that hold it.
 *
 * A device ID that is a PCI address (how rdmak plugin and sriov-network-device-plugin name an
 * exclusive VF or PF) is the RDMA device(s) of that function: the container holds it alone, and
 * its series carry the pod's labels (internal.h). A shared resource's IDs ("0".."N-1") name no
 * HCA: with the plugin's config (rdmak plugin's --config), the pool that config builds on this
 * node says which HCAs every holder of the resource shares; each such holder is a
 * rdmak_device_pod_info series. Without it shared resources are not attributed.
 *
 * Cost: a scrape calls List only when the cached answer is older than max_age_ms (one scrape
 * at a time does; the others use the cache), so never more than once per max_age_ms, and not
 * at all while nobody scrapes. The map is rebuilt only when the answer or the topology changed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/internal.h"
#include "kubelet/kubelet.h"
#include "pool/pool.h"
#include "pool/config.h"
#include "util/strv.h"

/* A shared resource and the HCAs its pool covers on this node. */
struct shared_res {
	char *resource;
	struct strv_list hcas;
};

struct exp_pods {
	struct kubelet_pod_resources *client;
	unsigned max_age_ms, timeout_ms;
	struct pool_config *cfg; /* NULL: no shared pools known */

	pthread_mutex_t lock; /* everything below */
	bool fetching;	      /* a scrape is calling List: the others use the cache */
	struct kubelet_pod_devices rows;
	bool have_rows;
	int64_t fetched_ms;
	unsigned long rows_gen;
	int status; /* 1 the last List answered, 0 none yet, -errno its failure */
	char why[256];
	unsigned long n_calls, n_failures;
	unsigned long shared_loads; /* e->loads the shared pools were computed for; 0 none */
	struct shared_res *shared;
	size_t n_shared;
	struct exp_podmap *map;
};

struct exp_owner {
	const char *ns, *pod, *container, *resource; /* in the map's rows */
};

/* device -> holder, sorted by device: one entry per (device, holder) */
struct exp_hold {
	char dev[HW_NAME_MAX];
	size_t owner;
	bool exclusive;
};

struct exp_podmap {
	unsigned refs; /* under exp_pods.lock */
	unsigned long rows_gen, loads;
	struct kubelet_pod_devices rows; /* a copy: the map outlives a refresh */
	struct exp_owner *owners;	 /* one per row */
	struct exp_hold *holds;
	size_t n_holds;
};

static int64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void shared_free(struct shared_res *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].resource);
		strv_list_clear(&s[i].hcas);
	}
	free(s);
}

static void podmap_free(struct exp_podmap *m)
{
	if (!m)
		return;
	kubelet_pod_devices_clear(&m->rows);
	free(m->owners);
	free(m->holds);
	free(m);
}

void exporter_podmap_unref(struct exporter *e, struct exp_podmap *m)
{
	bool last;

	if (!m)
		return;
	pthread_mutex_lock(&e->pods->lock);
	last = --m->refs == 0;
	pthread_mutex_unlock(&e->pods->lock);
	if (last)
		podmap_free(m);
}

int exporter_pods_enable(struct exporter *e, const struct exporter_pods_config *c, char *err,
			 size_t errlen)
{
	struct exp_pods *p;
	int r;

	if (e->pods)
		return -EALREADY;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->max_age_ms = c->max_age_ms ? c->max_age_ms : EXPORTER_PODS_MAX_AGE_MS;
	p->timeout_ms = c->timeout_ms ? c->timeout_ms : KUBELET_POD_RESOURCES_TIMEOUT_MS;
	pthread_mutex_init(&p->lock, NULL);
	r = kubelet_pod_resources_new(c->socket, &p->client);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s",
			 c->socket ? c->socket : KUBELET_POD_RESOURCES_SOCKET, strerror(-r));
		goto fail;
	}
	p->cfg = c->plugin_config;
	e->pods = p;
	return 0;
fail:
	kubelet_pod_resources_free(p->client);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return r;
}

void exporter_pods_free(struct exp_pods *p)
{
	if (!p)
		return;
	kubelet_pod_resources_free(p->client);
	pool_config_free(p->cfg);
	kubelet_pod_devices_clear(&p->rows);
	shared_free(p->shared, p->n_shared);
	if (p->map && --p->map->refs == 0)
		podmap_free(p->map);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int exporter_pods_status(struct exporter *e, unsigned long *failures, char *why, size_t len)
{
	int s;

	if (!e->pods)
		return 0;
	pthread_mutex_lock(&e->pods->lock);
	s = e->pods->status;
	if (failures)
		*failures = e->pods->n_failures;
	if (why && len)
		snprintf(why, len, "%s", e->pods->why);
	pthread_mutex_unlock(&e->pods->lock);
	return s;
}

/* ---- the shared pools ----------------------------------------------------------------------- */

/* The shared pools the plugin's config builds on this node now: one more load of the model,
 * done only when the topology was reloaded. */
static int shared_build(struct exporter *e, const struct pool_config *cfg, struct shared_res **ret,
			size_t *ret_n)
{
	struct hw_node *node = NULL;
	struct pool_set *ps = NULL;
	struct pool_opts opts = { 0 };
	struct shared_res *v = NULL;
	size_t n = 0;
	struct hw_error err;
	int r;

	r = hw_load(e->ctx, 0, &node, &err);
	if (r < 0)
		return r;
	r = pool_set_build(cfg, node, &opts, &ps);
	if (r < 0)
		goto out;
	v = calloc(ps->n ? ps->n : 1, sizeof(*v));
	if (!v) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ps->n; i++) {
		const struct pool *p = &ps->pools[i];

		if (p->res->kind != POOL_SHARED)
			continue;
		v[n].resource = strdup(p->res->full_name);
		n++;
		if (!v[n - 1].resource) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t m = 0; m < p->n_m; m++) {
			const char *t;
			size_t l;

			for (const char *s = p->m[m].rdma; r >= 0 && pool_list_next(&s, &t, &l);)
				r = strv_push(&v[n - 1].hcas.v, &v[n - 1].hcas.n, strndup(t, l));
			if (r < 0)
				goto out;
		}
	}
	*ret = v;
	*ret_n = n;
	v = NULL;
	n = 0;
	r = 0;
out:
	shared_free(v, n);
	pool_set_free(ps);
	hw_node_free(node);
	return r;
}

/* ---- refresh -------------------------------------------------------------------------------- */

void exporter_pods_refresh(struct exporter *e)
{
	struct exp_pods *p = e->pods;
	unsigned long loads = atomic_load(&e->loads);
	struct kubelet_pod_devices rows = { 0 };
	struct shared_res *sh = NULL;
	size_t n_sh = 0;
	bool list, shared;
	char why[256] = "";
	int r = 0, rs = 0;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	list = !p->fetching &&
	       (!p->have_rows && !p->status ? true : mono_ms() - p->fetched_ms >= p->max_age_ms);
	shared = !p->fetching && p->cfg && p->shared_loads != loads;
	if (list || shared)
		p->fetching = true;
	pthread_mutex_unlock(&p->lock);
	if (!list && !shared)
		return;
	if (list)
		r = kubelet_pod_resources_list(p->client, p->timeout_ms, &rows, why, sizeof(why));
	if (shared)
		rs = shared_build(e, p->cfg, &sh, &n_sh);
	pthread_mutex_lock(&p->lock);
	p->fetching = false;
	if (list) {
		p->n_calls++;
		p->fetched_ms = mono_ms();
		if (r < 0) {
			/* attribution off until the kubelet answers again: no stale pod labels */
			p->n_failures++;
			p->status = r;
			snprintf(p->why, sizeof(p->why), "%s", why);
			if (p->have_rows) {
				kubelet_pod_devices_clear(&p->rows);
				p->have_rows = false;
				p->rows_gen++;
			}
		} else {
			p->status = 1;
			p->why[0] = '\0';
			kubelet_pod_devices_clear(&p->rows);
			p->rows = rows;
			p->have_rows = true;
			p->rows_gen++;
		}
	}
	if (shared && rs == 0) {
		shared_free(p->shared, p->n_shared);
		p->shared = sh;
		p->n_shared = n_sh;
		p->shared_loads = loads;
		p->rows_gen++; /* the map depends on it */
	}
	pthread_mutex_unlock(&p->lock);
}

/* ---- the map -------------------------------------------------------------------------------- */

static bool is_bdf(const char *s)
{
	unsigned dom, bus, dev, fn;
	int n = -1;

	return sscanf(s, "%4x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &n) == 4 &&
	       n == (int)strlen(s) && n == 12;
}

static int hold_add(struct exp_podmap *m, size_t *cap, const char *dev, size_t owner,
		    bool exclusive)
{
	for (size_t i = 0; i < m->n_holds; i++)
		if (m->holds[i].owner == owner && !strcmp(m->holds[i].dev, dev))
			return 0; /* several IDs of one container on one HCA */
	if (m->n_holds == *cap) {
		size_t ncap = *cap ? 2 * *cap : 16;
		struct exp_hold *v = realloc(m->holds, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->holds = v;
		*cap = ncap;
	}
	snprintf(m->holds[m->n_holds].dev, sizeof(m->holds[0].dev), "%s", dev);
	m->holds[m->n_holds].owner = owner;
	m->holds[m->n_holds].exclusive = exclusive;
	m->n_holds++;
	return 0;
}

static int hold_cmp(const void *a, const void *b)
{
	const struct exp_hold *x = a, *y = b;
	int c = strcmp(x->dev, y->dev);

	if (c)
		return c;
	return x->owner < y->owner ? -1 : x->owner > y->owner;
}

static int copy_rows(const struct kubelet_pod_devices *src, struct kubelet_pod_devices *dst)
{
	dst->v = calloc(src->n ? src->n : 1, sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	for (size_t i = 0; i < src->n; i++) {
		const struct kubelet_pod_device *s = &src->v[i];
		struct kubelet_pod_device *d = &dst->v[dst->n++];

		d->namespace_ = strdup(s->namespace_);
		d->pod = strdup(s->pod);
		d->container = strdup(s->container);
		d->resource = strdup(s->resource);
		if (!d->namespace_ || !d->pod || !d->container || !d->resource)
			return -ENOMEM;
	}
	return 0;
}

/* Caller holds p->lock and e->lock (read): t is the topology in use. */
static int podmap_build(const struct exp_pods *p, const struct exp_topo *t, unsigned long loads,
			struct exp_podmap **ret)
{
	struct exp_podmap *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	int r;

	if (!m)
		return -ENOMEM;
	m->refs = 1;
	m->rows_gen = p->rows_gen;
	m->loads = loads;
	r = copy_rows(&p->rows, &m->rows);
	if (r < 0)
		goto fail;
	m->owners = calloc(p->rows.n ? p->rows.n : 1, sizeof(*m->owners));
	if (!m->owners) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->rows.n; i++) {
		const struct kubelet_pod_device *row = &p->rows.v[i];
		const struct shared_res *sh = NULL;

		m->owners[i] = (struct exp_owner){ m->rows.v[i].namespace_, m->rows.v[i].pod,
						   m->rows.v[i].container, m->rows.v[i].resource };
		for (size_t k = 0; k < p->n_shared && !sh; k++)
			if (!strcmp(p->shared[k].resource, row->resource))
				sh = &p->shared[k];
		if (sh) {
			for (size_t k = 0; k < sh->hcas.n && r == 0; k++)
				r = hold_add(m, &cap, sh->hcas.v[k], i, false);
			if (r < 0)
				goto fail;
			continue;
		}
		for (size_t k = 0; k < row->n_ids; k++) {
			if (!is_bdf(row->ids[k]))
				continue;
			for (size_t d = 0; d < t->n_devs && r == 0; d++)
				if (!strcmp(t->devs[d].bdf, row->ids[k]))
					r = hold_add(m, &cap, t->devs[d].name, i, true);
			if (r < 0)
				goto fail;
		}
	}
	if (m->n_holds)
		qsort(m->holds, m->n_holds, sizeof(*m->holds), hold_cmp);
	*ret = m;
	return 0;
fail:
	podmap_free(m);
	return r;
}

struct exp_podmap *exporter_podmap_get(struct exporter *e, const struct exp_topo *t)
{
	struct exp_pods *p = e->pods;
	unsigned long loads = atomic_load(&e->loads);
	struct exp_podmap *m = NULL;

	if (!p)
		return NULL;
	pthread_mutex_lock(&p->lock);
	if (!p->map || p->map->rows_gen != p->rows_gen || p->map->loads != loads) {
		struct exp_podmap *n = NULL;

		/* out of memory: no attribution in this scrape, the counters still go out */
		if (podmap_build(p, t, loads, &n) == 0) {
			if (p->map && --p->map->refs == 0)
				podmap_free(p->map);
			p->map = n;
		}
	}
	if (p->map && p->map->rows_gen == p->rows_gen) {
		m = p->map;
		m->refs++;
	}
	pthread_mutex_unlock(&p->lock);
	return m;
}

/* The holds of dev: [*first, *first + n) */
static size_t holds_of(const struct exp_podmap *m, const char *dev, size_t *first)
{
	size_t lo = 0, hi = m ? m->n_holds : 0, n = 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(m->holds[mid].dev, dev) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (m && lo + n < m->n_holds && !strcmp(m->holds[lo + n].dev, dev))
		n++;
	return n;
}

size_t exporter_podmap_labels(const struct exp_podmap *m, const char *dev, const char **l, size_t n)
{
	size_t first, k = holds_of(m, dev, &first);

	/* a device held alone by one container: its series are that container's */
	if (k == 1 && m->holds[first].exclusive) {
		const struct exp_owner *o = &m->owners[m->holds[first].owner];

		l[n++] = EXPORTER_LABEL_NAMESPACE;
		l[n++] = o->ns;
		l[n++] = EXPORTER_LABEL_POD;
		l[n++] = o->pod;
		l[n++] = EXPORTER_LABEL_CONTAINER;
		l[n++] = o->container;
	}
	l[n] = NULL;
	return n;
}

bool exporter_podmap_held(const struct exp_podmap *m, const char *dev)
{
	size_t first;

	return holds_of(m, dev, &first) > 0;
}

size_t exporter_podmap_holders(const struct exp_podmap *m, const char *dev, size_t i,
			       const char **l)
{
	size_t first, k = holds_of(m, dev, &first);
	const struct exp_owner *o;

	if (i >= k)
		return 0;
	o = &m->owners[m->holds[first + i].owner];
	l[0] = "device";
	l[1] = dev;
	l[2] = EXPORTER_LABEL_NAMESPACE;
	l[3] = o->ns;
	l[4] = EXPORTER_LABEL_POD;
	l[5] = o->pod;
	l[6] = EXPORTER_LABEL_CONTAINER;
	l[7] = o->container;
	l[8] = "resource";
	l[9] = o->resource;
	l[10] = NULL;
	return k;
}
