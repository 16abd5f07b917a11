/* SPDX-License-Identifier: Apache-2.0 */
/* The counters that exist only over RDMA netlink: counter objects bound to QPs
 * (RDMA_NLDEV_CMD_STAT_GET with RDMA_NLDEV_ATTR_STAT_RES = QP, what `rdma statistic qp show`
 * reads), by hand or by a port's auto mode, which gives each QP type or each process its own
 * counter. Read in-process through src/nl on every scrape: one dump of counters per device, no
 * process spawned, over a socket kept between scrapes and the host's device list read with the
 * topology (docs/exporter.md "Counter objects over RDMA netlink"). A device without counter
 * objects answers an empty dump and adds no series. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_netlink.h>

#include "exporter/internal.h"
#include "nl/nl.h"
#include "util/fileio.h"

int exporter_rdma_enable(struct exporter *e)
{
	struct nl_rdma *r = NULL;
	struct nl_rdma *none = NULL;
	int x = nl_rdma_open(-1, &r);

	/* tried once, when the exporter starts: a kernel without ib_core answers EPROTONOSUPPORT,
	 * and the role says so once instead of at every scrape */
	if (x < 0)
		return x;
	if (!atomic_compare_exchange_strong(&e->rdma_sock, &none, r))
		nl_rdma_free(r);
	atomic_store(&e->rdma_netlink, true);
	/* the topology loaded before netlink was known: its devices' indices now */
	pthread_rwlock_wrlock(&e->lock);
	exporter_rdma_resolve(e, e->topo);
	pthread_rwlock_unlock(&e->lock);
	return 0;
}

int exporter_rdma_procfs(struct exporter *e, const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (e->rdma_procfs)
		close(e->rdma_procfs_fd);
	e->rdma_procfs_fd = fd;
	e->rdma_procfs = true;
	return 0;
}

int exporter_rdma_owners(struct exporter *e, struct exp_rdma_dev *d, size_t n)
{
	if (!e->rdma_procfs)
		return 0;
	for (size_t i = 0; i < n; i++) {
		free(d[i].owner);
		d[i].owner = calloc(d[i].n ? d[i].n : 1, sizeof(*d[i].owner));
		if (!d[i].owner)
			return -ENOMEM;
		for (size_t j = 0; j < d[i].n; j++) {
			struct exp_rdma_owner *o = &d[i].owner[j];
			char path[32], *text = NULL;
			size_t len = 0;

			if (d[i].v[j].pid <= 0)
				continue;
			snprintf(path, sizeof(path), "%" PRId64 "/cgroup", d[i].v[j].pid);
			/* a process gone since the dump: no owner, not an error */
			if (fileio_read_at(e->rdma_procfs_fd, path, 1 << 16, &text, &len) == 0)
				kubelet_cgroup_pod(text, len, o->pod_uid, o->container_id);
			free(text);
		}
	}
	return 0;
}

static void devs_clear(struct exp_rdma_dev *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		nl_rdma_counters_free(d[i].v, d[i].n);
		free(d[i].owner);
	}
}

void exporter_rdma_devs_free(struct exp_rdma_dev *d, size_t n)
{
	devs_clear(d, n);
	free(d);
}

/* ---- a port's hw_counters in one request ------------------------------------------------ */

struct hw_name {
	const char *file;
	size_t family;
};

static int hw_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct hw_name *)a)->file, ((const struct hw_name *)b)->file);
}

static int dev_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nl_rdma_dev *)a)->name, ((const struct nl_rdma_dev *)b)->name);
}

/* The kernel's device by name, when it is the topology's (the same node GUID): a --root tree
 * of another node may name its devices as this kernel does. NULL: not this kernel's. */
static const struct nl_rdma_dev *kernel_dev(const struct nl_rdma_dev *devs, size_t n,
					    const struct exp_device *d)
{
	struct nl_rdma_dev key = { 0 };
	const struct nl_rdma_dev *k;
	char guid[20];

	snprintf(key.name, sizeof(key.name), "%s", d->name);
	k = bsearch(&key, devs, n, sizeof(*devs), dev_name_cmp);
	if (!k || !k->node_guid)
		return NULL;
	snprintf(guid, sizeof(guid), "%04x:%04x:%04x:%04x", (unsigned)(k->node_guid >> 48) & 0xffff,
		 (unsigned)(k->node_guid >> 32) & 0xffff, (unsigned)(k->node_guid >> 16) & 0xffff,
		 (unsigned)k->node_guid & 0xffff);
	return strcmp(guid, d->node_guid) ? NULL : k;
}

/* ---- the kernel's devices, read with the topology ------------------------------------------ */

/* The idle socket of the host's namespace, or a new one while another scrape holds it: the
 * scrapes that run at once each have their own, and none waits for another. */
static struct nl_rdma *sock_take(struct exporter *e, int *err)
{
	struct nl_rdma *r = atomic_exchange(&e->rdma_sock, NULL);

	*err = r ? 0 : nl_rdma_open(-1, &r);
	return *err < 0 ? NULL : r;
}

static void sock_give(struct exporter *e, struct nl_rdma *r)
{
	struct nl_rdma *none = NULL;

	if (r && !atomic_compare_exchange_strong(&e->rdma_sock, &none, r))
		nl_rdma_free(r);
}

void exporter_rdma_close(struct exporter *e)
{
	nl_rdma_free(atomic_exchange(&e->rdma_sock, NULL));
}

/* The devices r's kernel has, sorted by name, and (t not NULL) the index of each of t's
 * devices there, UINT32_MAX where the kernel has none of that name and node GUID. */
static int kdevs_read(struct nl_rdma *r, const struct exp_topo *t, struct nl_rdma_dev **ret,
		      size_t *ret_n, uint32_t **ret_idx)
{
	struct nl_rdma_dev *v = NULL;
	uint32_t *idx = NULL;
	size_t n = 0;
	int x = nl_rdma_dev_list(r, &v, &n);

	if (x < 0)
		return x;
	if (t && !(idx = malloc((t->n_devs ? t->n_devs : 1) * sizeof(*idx)))) {
		free(v);
		return -ENOMEM;
	}
	if (n)
		qsort(v, n, sizeof(*v), dev_name_cmp);
	for (size_t i = 0; t && i < t->n_devs; i++) {
		const struct nl_rdma_dev *k = kernel_dev(v, n, &t->devs[i]);

		idx[i] = k ? k->index : UINT32_MAX;
	}
	*ret = v;
	*ret_n = n;
	*ret_idx = idx;
	return 0;
}

void exporter_rdma_resolve(struct exporter *e, struct exp_topo *t)
{
	struct nl_rdma *r;
	int x;

	free(t->kdevs);
	free(t->kidx);
	t->kdevs = NULL;
	t->kidx = NULL;
	t->n_kdevs = 0;
	t->kdevs_read = false;
	if (!atomic_load(&e->rdma_netlink) || !(r = sock_take(e, &x)))
		return;
	x = kdevs_read(r, t, &t->kdevs, &t->n_kdevs, &t->kidx);
	t->kdevs_read = x == 0;
	if (x < 0)
		nl_rdma_free(r); /* what is left of a failed dump would answer the next request */
	else
		sock_give(e, r);
}

/* After a dump that failed: what is left of its answer would answer the next request. */
static int kview_renew(struct exp_kview *k)
{
	nl_rdma_free(k->r);
	k->r = NULL;
	return nl_rdma_open(k->netns_fd, &k->r);
}

static bool kdevs_equal(const struct nl_rdma_dev *a, size_t na, const struct nl_rdma_dev *b,
			size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i].index != b[i].index || a[i].node_guid != b[i].node_guid ||
		    strcmp(a[i].name, b[i].name))
			return false;
	return true;
}

/* The list asked for (once per view): 1 it differs from the one the view had, 0 the same or
 * asked already, -errno. A host's list that differs from the topology's marks the topology
 * stale: the next scrape loads it again, which reads the list again. */
static int kview_ask(struct exp_kview *k)
{
	struct nl_rdma_dev *v = NULL;
	uint32_t *idx = NULL;
	size_t n = 0;
	bool had = k->t && k->t->kdevs_read;
	int x;

	if (k->asked)
		return 0;
	k->asked = true;
	x = kdevs_read(k->r, k->t, &v, &n, &idx);
	if (x < 0) {
		/* what is left of a failed dump would answer the next request */
		if (x != -ENOMEM && kview_renew(k) < 0)
			return -EPROTO;
		return x;
	}
	if (had && kdevs_equal(v, n, k->v, k->n)) {
		free(v);
		free(idx);
		return 0;
	}
	if (had && k->t)
		atomic_store(&k->e->stale, true);
	free(k->own);
	free(k->own_idx);
	k->v = k->own = v;
	k->n = n;
	k->idx = k->own_idx = idx;
	return had;
}

/* A socket of the view's namespace and its list: the topology's for the host when it has one,
 * else asked now. -errno when netlink cannot be asked. */
static int kview_open(struct exp_kview *k, struct exporter *e, const struct exp_topo *t,
		      int netns_fd)
{
	int x;

	if (k->r)
		return 0; /* the host's, opened by the scrape's first use */
	if (t && k->e) {
		/* the scrape's first use lost its socket: another, and the list it had */
		k->r = sock_take(e, &x);
		if (x == 0 && !k->asked && !t->kdevs_read)
			x = kview_ask(k);
		return x < 0 ? x : 0;
	}
	*k = (struct exp_kview){ .e = e, .t = t, .netns_fd = netns_fd };
	if (t) {
		k->r = sock_take(e, &x);
		k->v = t->kdevs;
		k->n = t->n_kdevs;
		k->idx = t->kidx;
	} else {
		x = nl_rdma_open(netns_fd, &k->r);
	}
	if (x == 0 && !(t && t->kdevs_read))
		x = kview_ask(k);
	return x < 0 ? x : 0;
}

static void kview_close(struct exp_kview *k)
{
	if (!k->e)
		return;
	if (k->t)
		sock_give(k->e, k->r);
	else
		nl_rdma_free(k->r);
	free(k->own);
	free(k->own_idx);
	*k = (struct exp_kview){ 0 };
}

void exporter_rdma_view_close(struct exp_kview *k)
{
	kview_close(k);
}

/* The counter objects of the devices of k's namespace, appended to out[*n_out..). A device
 * the kernel no longer knows by the list's index (gone, or registered again under another)
 * has the list asked again, once, and the namespace read again over it. */
static int read_devs(struct exp_kview *k, const char *netns, struct exp_rdma_dev **out,
		     size_t *n_out)
{
	size_t first = *n_out;
	struct exp_rdma_dev *o;

again:
	if (!(o = realloc(*out, (*n_out + k->n + 1) * sizeof(*o))))
		return -ENOMEM;
	*out = o;
	for (size_t i = 0; k->r && i < k->n; i++) {
		struct exp_rdma_dev *d = &o[*n_out];
		int x;

		memset(d, 0, sizeof(*d));
		x = nl_rdma_counters(k->r, k->v[i].index, &d->v, &d->n);
		if (x < 0) {
			/* a device gone between the two dumps, a kernel before 5.3 (no counter
			 * objects): counted, the scrape goes on */
			atomic_fetch_add(&k->e->rdma_errors, 1);
			if (kview_renew(k) < 0)
				break;
			if ((x == -EINVAL || x == -ENODEV) && kview_ask(k) > 0) {
				devs_clear(o + first, *n_out - first);
				*n_out = first;
				goto again;
			}
			continue;
		}
		if (!d->n)
			continue;
		snprintf(d->name, sizeof(d->name), "%s", k->v[i].name);
		d->netns = netns;
		(*n_out)++;
	}
	return 0;
}

int exporter_rdma_read(struct exporter *e, const struct exp_topo *t, struct exp_kview *host,
		       const struct exp_views *views, struct exp_rdma_dev **ret, size_t *ret_n)
{
	struct exp_rdma_dev *out = calloc(1, sizeof(*out));
	size_t n_out = 0;
	struct exp_kview k = { 0 };
	int x;

	if (!out)
		return -ENOMEM;
	x = kview_open(host, e, t, -1);
	if (x == 0)
		x = read_devs(host, NULL, &out, &n_out);
	else if (x != -ENOMEM)
		atomic_fetch_add(&e->rdma_errors, 1);
	/* each pod namespace that holds devices (exclusive mode): a socket opened in it */
	for (size_t i = 0; x >= 0 && views && i < views->n; i++) {
		int y;

		if (views->v[i].netns_fd < 0)
			continue;
		y = kview_open(&k, e, NULL, views->v[i].netns_fd);
		if (y == 0)
			y = read_devs(&k, views->v[i].name, &out, &n_out);
		else if (y != -ENOMEM)
			atomic_fetch_add(&e->rdma_errors, 1);
		kview_close(&k);
		if (y == -ENOMEM)
			x = y;
	}
	if (x < 0) {
		exporter_rdma_devs_free(out, n_out);
		return x;
	}
	*ret = out;
	*ret_n = n_out;
	return 0;
}

static void port_hw_take(const struct exp_topo *t, size_t row, const struct nl_rdma_stat *s,
			 const struct hw_name *names, size_t n_names, uint64_t *v,
			 unsigned char *ok, size_t stride)
{
	const struct exp_slot *slots = t->ports[row].slots;

	for (size_t i = 0; i < s->n_hw; i++) {
		struct hw_name key = { s->hw[i].name, 0 };
		const struct hw_name *hit = bsearch(&key, names, n_names, sizeof(key), hw_name_cmp);

		/* a counter the port's folder has no file for (an optional one turned on with
		 * `rdma statistic set`) has no family: left out as the files leave it out */
		if (!hit || slots[hit->family].dir != EXP_DIR_HW)
			continue;
		v[row * stride + hit->family] = s->hw[i].value * t->families[hit->family].scale;
		ok[row * stride + hit->family] = 1;
	}
}

/* A port's counters by the index k has for its device. One the kernel no longer knows by that
 * index (EINVAL, as nldev answers an unknown index; ENODEV), or that another device answers, may
 * have been registered again: the list is asked again, once, and the port asked again when its
 * device's index changed. */
static int port_stat(struct exp_kview *k, const struct exp_port *p, struct nl_rdma_stat *s)
{
	uint32_t idx = k->idx[p->dev_idx];
	int x;

	for (;;) {
		x = nl_rdma_port_stat(k->r, idx, p->num, s);
		if (x == 0 && s->dev[0] && strcmp(s->dev, p->dev)) {
			nl_rdma_stat_clear(s);
			x = -ENODEV;
		}
		if ((x != -EINVAL && x != -ENODEV) || kview_ask(k) <= 0 ||
		    k->idx[p->dev_idx] == idx || k->idx[p->dev_idx] == UINT32_MAX)
			return x;
		idx = k->idx[p->dev_idx];
	}
}

int exporter_rdma_port_hw(struct exporter *e, const struct exp_topo *t, struct exp_kview *host,
			  uint64_t *v, unsigned char *ok, size_t stride)
{
	size_t n_names = 0, first = exporter_n_node_families;
	struct hw_name *names = NULL;
	int x, answered = 0;

	if (!atomic_load(&e->rdma_netlink))
		return -EOPNOTSUPP;
	if (t->n_port_families <= first)
		return 0; /* no port has a hw_counters file */
	names = calloc(t->n_port_families - first, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (size_t f = first; f < t->n_port_families; f++)
		if (t->families[f].dir == EXP_DIR_HW)
			names[n_names++] = (struct hw_name){ t->families[f].file, f };
	qsort(names, n_names, sizeof(*names), hw_name_cmp);
	x = kview_open(host, e, t, -1);
	/* a socket lost with its renewal (kview_renew): the rest are read from their files */
	for (size_t i = 0; x == 0 && host->r && i < t->n_ports; i++) {
		const struct exp_port *p = &t->ports[i];
		struct nl_rdma_stat s = { 0 };

		/* a pod's namespace is asked through its own files: its socket is not this one */
		if (p->netns || p->dev_idx == SIZE_MAX || !(p->dirs & (1u << EXP_DIR_HW)) ||
		    host->idx[p->dev_idx] == UINT32_MAX)
			continue;
		/* a device gone since the list, a driver without counters: its files are read */
		if (port_stat(host, p, &s) < 0)
			continue;
		port_hw_take(t, i, &s, names, n_names, v, ok, stride);
		nl_rdma_stat_clear(&s);
		answered++;
	}
	free(names);
	return x < 0 ? x : answered;
}

static const char *mode_name(uint32_t mode, char *buf, size_t len)
{
	if (mode == RDMA_COUNTER_MODE_AUTO)
		return "auto";
	if (mode == RDMA_COUNTER_MODE_MANUAL)
		return "manual";
	snprintf(buf, len, "%" PRIu32, mode);
	return buf;
}

/* A hardware counter's name as a metric name's tail: what is not [a-zA-Z0-9_] becomes '_'. */
static void metric_tail(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++) {
		char c = name[i];

		buf[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
				 ? c
				 : '_';
	}
	buf[i] = '\0';
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The hardware counters' names over every counter, sorted, each once (borrowed pointers). */
static int hw_names(const struct exp_rdma_dev *d, size_t n, const char ***ret, size_t *ret_n)
{
	const char **v = NULL;
	size_t nv = 0, cap = 0, k = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < d[i].n; j++)
			for (size_t h = 0; h < d[i].v[j].n_hw; h++) {
				if (nv == cap) {
					const char **nb =
						realloc(v, (cap ? cap * 2 : 32) * sizeof(*v));

					if (!nb) {
						free(v);
						return -ENOMEM;
					}
					v = nb;
					cap = cap ? cap * 2 : 32;
				}
				v[nv++] = d[i].v[j].hw[h].name;
			}
	if (nv)
		qsort(v, nv, sizeof(*v), cmp_str);
	for (size_t i = 0; i < nv; i++)
		if (!k || strcmp(v[k - 1], v[i]))
			v[k++] = v[i];
	*ret = v;
	*ret_n = k;
	return 0;
}

int exporter_rdma_write(struct exporter_buf *b, enum exporter_format fmt,
			const struct exp_rdma_dev *d, size_t n)
{
	const char **names = NULL;
	size_t n_names = 0;
	char port[12], id[12], pid[24], qpn[12], mode[12], metric[128], tail[NL_RDMA_STAT_NAMSIZ];
	bool any_owner = false;
	int r;

	if (!n)
		return 0;
	r = hw_names(d, n, &names, &n_names);
	if (r < 0)
		return r;
	exporter_out_family(
		b, fmt, "rdmak_rdma_counter_info", EXP_GAUGE,
		"A counter object bound to QPs (rdma statistic qp): its mode, and in auto mode the QP "
		"type and the process it counts for; value is always 1.");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < d[i].n; j++) {
			const struct nl_rdma_counter *c = &d[i].v[j];
			const char *qpt = c->qp_type >= 0 ? nl_rdma_qp_type_name(c->qp_type) : "";
			char qpt_num[8];
			const char *l[17] = { "device",	    d[i].name,
					      "port",	    port,
					      "counter_id", id,
					      "mode",	    mode_name(c->mode, mode, sizeof(mode)),
					      "qp_type",    qpt,
					      "pid",	    pid,
					      "comm",	    c->comm,
					      NULL };

			if (!qpt) {
				snprintf(qpt_num, sizeof(qpt_num), "%d", c->qp_type);
				l[9] = qpt_num;
			}
			exporter_labels_netns(d[i].netns, l, 14);
			snprintf(port, sizeof(port), "%" PRIu32, c->port);
			snprintf(id, sizeof(id), "%" PRIu32, c->id);
			if (c->pid >= 0)
				snprintf(pid, sizeof(pid), "%" PRId64, c->pid);
			else
				pid[0] = '\0';
			exporter_out_sample(b, "rdmak_rdma_counter_info", l, 1);
		}
	for (size_t i = 0; i < n && !any_owner; i++)
		for (size_t j = 0; d[i].owner && j < d[i].n; j++)
			any_owner |= d[i].owner[j].pod_uid[0] != '\0';
	if (any_owner)
		exporter_out_family(
			b, fmt, "rdmak_rdma_counter_pod_info", EXP_GAUGE,
			"The pod (its UID, as kube_pod_info's uid) and container whose process a "
			"per-process counter object counts for, from the process's cgroup; value is "
			"always 1.");
	for (size_t i = 0; i < n && any_owner; i++)
		for (size_t j = 0; d[i].owner && j < d[i].n; j++) {
			const struct nl_rdma_counter *c = &d[i].v[j];
			const struct exp_rdma_owner *o = &d[i].owner[j];
			const char *l[15] = {
				"device",     d[i].name,  "port",	  port,
				"counter_id", id,	  "pid",	  pid,
				"pod_uid",    o->pod_uid, "container_id", o->container_id,
				NULL
			};

			if (!o->pod_uid[0])
				continue;
			exporter_labels_netns(d[i].netns, l, 12);
			snprintf(port, sizeof(port), "%" PRIu32, c->port);
			snprintf(id, sizeof(id), "%" PRIu32, c->id);
			snprintf(pid, sizeof(pid), "%" PRId64, c->pid);
			exporter_out_sample(b, "rdmak_rdma_counter_pod_info", l, 1);
		}
	exporter_out_family(b, fmt, "rdmak_rdma_counter_qps", EXP_GAUGE,
			    "QPs bound to the counter object now");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < d[i].n; j++) {
			const struct nl_rdma_counter *c = &d[i].v[j];
			const char *l[9] = { "device",	   d[i].name, "port", port,
					     "counter_id", id,	      NULL };

			exporter_labels_netns(d[i].netns, l, 6);
			snprintf(port, sizeof(port), "%" PRIu32, c->port);
			snprintf(id, sizeof(id), "%" PRIu32, c->id);
			exporter_out_sample(b, "rdmak_rdma_counter_qps", l, c->n_qpns);
		}
	exporter_out_family(
		b, fmt, "rdmak_rdma_counter_qp_info", EXP_GAUGE,
		"A QP (its local number, lqpn) bound to the counter object; value is always 1.");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < d[i].n; j++) {
			const struct nl_rdma_counter *c = &d[i].v[j];
			const char *l[11] = { "device", d[i].name, "port", port, "counter_id",
					      id,	"lqpn",	   qpn,	   NULL };

			exporter_labels_netns(d[i].netns, l, 8);
			snprintf(port, sizeof(port), "%" PRIu32, c->port);
			snprintf(id, sizeof(id), "%" PRIu32, c->id);
			for (size_t q = 0; q < c->n_qpns; q++) {
				snprintf(qpn, sizeof(qpn), "%" PRIu32, c->qpns[q]);
				exporter_out_sample(b, "rdmak_rdma_counter_qp_info", l, 1);
			}
		}
	for (size_t k = 0; k < n_names; k++) {
		metric_tail(names[k], tail, sizeof(tail));
		snprintf(metric, sizeof(metric), "rdmak_rdma_counter_%s_total", tail);
		exporter_out_family(
			b, fmt, metric, EXP_COUNTER,
			"The hardware counter of the same name, counted for the QPs bound to the counter "
			"object only (RDMA netlink)");
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < d[i].n; j++) {
				const struct nl_rdma_counter *c = &d[i].v[j];
				const char *l[9] = { "device",	   d[i].name, "port", port,
						     "counter_id", id,	      NULL };

				exporter_labels_netns(d[i].netns, l, 6);
				snprintf(port, sizeof(port), "%" PRIu32, c->port);
				snprintf(id, sizeof(id), "%" PRIu32, c->id);
				for (size_t h = 0; h < c->n_hw; h++)
					if (!strcmp(c->hw[h].name, names[k]))
						exporter_out_sample(b, metric, l, c->hw[h].value);
			}
	}
	free(names);
	return 0;
}

void exporter_rdma_scrape(struct exporter *e, const struct exp_topo *t, struct exp_kview *host,
			  const struct exp_views *views, struct exporter_buf *b,
			  enum exporter_format fmt)
{
	struct exp_rdma_dev *d = NULL;
	size_t n = 0;
	const char *none[] = { NULL };

	if (!atomic_load(&e->rdma_netlink))
		return; /* absent at start: nothing from it, said once by the role */
	if (exporter_rdma_read(e, t, host, views, &d, &n) == 0 &&
	    exporter_rdma_owners(e, d, n) == 0)
		exporter_rdma_write(b, fmt, d, n);
	exporter_rdma_devs_free(d, n);
	exporter_out_family(
		b, fmt, "rdmak_exporter_rdma_netlink_errors_total", EXP_COUNTER,
		"RDMA netlink requests for counter objects that failed (their series were left out)");
	exporter_out_sample(b, "rdmak_exporter_rdma_netlink_errors_total", none,
			    atomic_load(&e->rdma_errors));
}
