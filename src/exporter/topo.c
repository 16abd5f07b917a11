/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's cached topology: from the hardware model, the ports and devices, the folders
 * their counters are in (opened once, O_PATH), which counter files each has, and the doctor's
 * findings. A scrape then opens each counter by its name under a folder fd: one openat of one
 * path component per counter, no path walk from the root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/diag.h"
#include "exporter/internal.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/inroot.h"
#include "util/strutil.h"

#define C(file, name, help)                                                                        \
	{                                                                                          \
		"node_infiniband_" name, help, file, EXP_DIR_COUNTERS, 1                           \
	}
#define C4(file, name, help)                                                                       \
	{                                                                                          \
		"node_infiniband_" name, help, file, EXP_DIR_COUNTERS, 4                           \
	}
#define L(file, name, help, scale)                                                                 \
	{                                                                                          \
		"node_infiniband_" name, help, file, EXP_DIR_COUNTERS_EXT, scale                   \
	}

/* node_exporter's names, helps and scaling (collector/infiniband_linux.go over procfs'
 * sysfs/class_infiniband.go): the data counters count 4-byte words, so they are multiplied by 4. */
const struct exp_family exporter_node_families[] = {
	L("port_multicast_rcv_packets", "legacy_multicast_packets_received_total",
	  "Number of multicast packets received", 1),
	L("port_multicast_xmit_packets", "legacy_multicast_packets_transmitted_total",
	  "Number of multicast packets transmitted", 1),
	L("port_rcv_data_64", "legacy_data_received_bytes_total",
	  "Number of data octets received on all links", 4),
	L("port_rcv_packets_64", "legacy_packets_received_total",
	  "Number of data packets received on all links", 1),
	L("port_unicast_rcv_packets", "legacy_unicast_packets_received_total",
	  "Number of unicast packets received", 1),
	L("port_unicast_xmit_packets", "legacy_unicast_packets_transmitted_total",
	  "Number of unicast packets transmitted", 1),
	L("port_xmit_data_64", "legacy_data_transmitted_bytes_total",
	  "Number of data octets transmitted on all links", 4),
	L("port_xmit_packets_64", "legacy_packets_transmitted_total",
	  "Number of data packets received on all links", 1),
	C("excessive_buffer_overrun_errors", "excessive_buffer_overrun_errors_total",
	  "Number of times that OverrunErrors consecutive flow control update periods occurred, "
	  "each having at least one overrun error."),
	C("link_downed", "link_downed_total",
	  "Number of times the link failed to recover from an error state and went down"),
	C("link_error_recovery", "link_error_recovery_total",
	  "Number of times the link successfully recovered from an error state"),
	C("local_link_integrity_errors", "local_link_integrity_errors_total",
	  "Number of times that the count of local physical errors exceeded the threshold "
	  "specified by LocalPhyErrors."),
	C("multicast_rcv_packets", "multicast_packets_received_total",
	  "Number of multicast packets received (including errors)"),
	C("multicast_xmit_packets", "multicast_packets_transmitted_total",
	  "Number of multicast packets transmitted (including errors)"),
	C("port_rcv_constraint_errors", "port_constraint_errors_received_total",
	  "Number of packets received on the switch physical port that are discarded"),
	C("port_xmit_constraint_errors", "port_constraint_errors_transmitted_total",
	  "Number of packets not transmitted from the switch physical port"),
	C4("port_rcv_data", "port_data_received_bytes_total",
	   "Number of data octets received on all links"),
	C4("port_xmit_data", "port_data_transmitted_bytes_total",
	   "Number of data octets transmitted on all links"),
	C("port_rcv_discards", "port_discards_received_total",
	  "Number of inbound packets discarded by the port because the port is down or congested"),
	C("port_xmit_discards", "port_discards_transmitted_total",
	  "Number of outbound packets discarded by the port because the port is down or congested"),
	C("port_rcv_errors", "port_errors_received_total",
	  "Number of packets containing an error that were received on this port"),
	C("port_rcv_packets", "port_packets_received_total",
	  "Number of packets received on all VLs by this port (including errors)"),
	C("port_xmit_packets", "port_packets_transmitted_total",
	  "Number of packets transmitted on all VLs from this port (including errors)"),
	C("port_xmit_wait", "port_transmit_wait_total",
	  "Number of ticks during which the port had data to transmit but no data was sent during "
	  "the entire tick"),
	C("unicast_rcv_packets", "unicast_packets_received_total",
	  "Number of unicast packets received (including errors)"),
	C("unicast_xmit_packets", "unicast_packets_transmitted_total",
	  "Number of unicast packets transmitted (including errors)"),
	C("port_rcv_remote_physical_errors", "port_receive_remote_physical_errors_total",
	  "Number of packets marked with the EBP (End of Bad Packet) delimiter received on the "
	  "port."),
	C("port_rcv_switch_relay_errors", "port_receive_switch_relay_errors_total",
	  "Number of packets that could not be forwarded by the switch."),
	C("symbol_error", "symbol_error_total",
	  "Number of minor link errors detected on one or more physical lanes."),
	C("VL15_dropped", "vl15_dropped_total",
	  "Number of incoming VL15 packets dropped due to resource limitations."),
};
const size_t exporter_n_node_families = ELEMENTSOF(exporter_node_families);

static const char *const dir_names[EXP_DIR_N] = { "", "counters", "counters_ext", "hw_counters" };

/* ---- the device set --------------------------------------------------------------------- */

void exporter_devset_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The regular files (or, with dirs, the entries) of a folder opened O_PATH, sorted; hidden
 * names left out. */
static int list_dir(int dirfd, bool regular_only, char ***ret, size_t *ret_n)
{
	_cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return fileio_list_dir(fd, FILEIO_LIST_NO_HIDDEN | (regular_only ? FILEIO_LIST_REGULAR : 0),
			       ret, ret_n);
}

int exporter_devset_read_at(int sysfs_fd, char ***ret, size_t *ret_n)
{
	_cleanup_close_ int fd = inroot_openat(sysfs_fd, "class/infiniband", O_PATH | O_DIRECTORY);

	if (fd == -ENOENT) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (fd < 0)
		return fd;
	return list_dir(fd, false, ret, ret_n);
}

int exporter_devset_read(struct hw_ctx *ctx, char ***ret, size_t *ret_n)
{
	return exporter_devset_read_at(hw_ctx_root_fd(ctx, HW_ROOT_SYSFS), ret, ret_n);
}

bool exporter_devset_equal(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return true;
}

/* ---- families ------------------------------------------------------------------------------ */

/* The kernel's counter names become metric names: anything outside [a-zA-Z0-9_] is '_'. */
static char *metric_name(const char *prefix, const char *file)
{
	char *s = NULL;

	if (asprintf(&s, "%s%s_total", prefix, file) < 0)
		return NULL;
	for (char *p = s + strlen(prefix); *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			*p = '_';
	return s;
}

/* hw_counters' "lifespan" is no counter: the milliseconds the driver caches the values. */
static bool hw_counter_is_counter(const char *file)
{
	return strcmp(file, "lifespan") != 0;
}

static int family_find(const struct exp_topo *t, size_t from, size_t to, enum exp_dir dir,
		       const char *file)
{
	for (size_t i = from; i < to; i++)
		if (t->families[i].dir == dir && !strcmp(t->families[i].file, file))
			return (int)i;
	return -1;
}

static int own(struct exp_topo *t, char *s)
{
	if (!s)
		return -ENOMEM;
	t->owned[t->n_owned++] = s;
	return 0;
}

/* A family for a hw_counters file: found, or added at the end (names sorted by the caller). */
static int family_add_hw(struct exp_topo *t, size_t from, const char *prefix, const char *help,
			 const char *file, size_t *cap)
{
	struct exp_family *f;
	int i = family_find(t, from, t->n_families, EXP_DIR_HW, file);

	if (i >= 0)
		return i;
	if (t->n_families == *cap) {
		size_t ncap = *cap * 2;
		struct exp_family *nf = realloc(t->families, ncap * sizeof(*nf));
		char **no = realloc(t->owned, 2 * ncap * sizeof(*no));

		if (nf)
			t->families = nf;
		if (no)
			t->owned = no;
		if (!nf || !no)
			return -ENOMEM;
		*cap = ncap;
	}
	f = &t->families[t->n_families];
	*f = (struct exp_family){ .help = help, .dir = EXP_DIR_HW, .scale = 1 };
	if (own(t, metric_name(prefix, file)) < 0)
		return -ENOMEM;
	f->name = t->owned[t->n_owned - 1];
	if (own(t, strdup(file)) < 0)
		return -ENOMEM;
	f->file = t->owned[t->n_owned - 1];
	return (int)t->n_families++;
}

/* ---- loading --------------------------------------------------------------------------------- */

static int open_dir(struct hw_ctx *ctx, const char *rel)
{
	return hw_ctx_open(ctx, HW_ROOT_SYSFS, rel, O_PATH | O_DIRECTORY);
}

struct pending {
	char **files[EXP_DIR_N];
	size_t n_files[EXP_DIR_N];
};

static void pending_clear(struct pending *p)
{
	for (int d = 0; d < EXP_DIR_N; d++)
		exporter_devset_free(p->files[d], p->n_files[d]);
	memset(p, 0, sizeof(*p));
}

static void port_close(struct exp_port *p)
{
	for (int d = 0; d < EXP_DIR_N; d++)
		if (p->fd[d] >= 0)
			close(p->fd[d]);
	free(p->slots);
}

static void idle_free(struct exp_idle *x, size_t n_families)
{
	for (size_t f = 0; x->names && f < n_families; f++)
		free(x->names[f]);
	free(x->names);
	free(x->key);
	free(x->keys);
	free(x->last);
	free(x->seen);
	free(x->was_idle);
	free(x->sum);
	free(x->has);
	memset(x, 0, sizeof(*x));
}

void exporter_topo_free(struct exp_topo *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_ports; i++)
		port_close(&t->ports[i]);
	for (size_t i = 0; i < t->n_devs; i++) {
		if (t->devs[i].hw_fd >= 0)
			close(t->devs[i].hw_fd);
		free(t->devs[i].slots);
	}
	for (size_t i = 0; i < t->n_findings; i++) {
		free(t->findings[i].check);
		free(t->findings[i].object);
	}
	for (size_t i = 0; i < t->n_skipped; i++)
		free(t->skipped[i].path);
	free(t->skipped);
	for (size_t i = 0; i < t->n_owned; i++)
		free(t->owned[i]);
	exporter_devset_free(t->devset, t->n_devset);
	exporter_devset_free(t->ns_devset, t->n_ns_devset);
	exporter_devset_free(t->ns_names, t->n_ns);
	idle_free(&t->idle, t->n_families);
	free(t->kdevs);
	free(t->kidx);
	free(t->findings);
	free(t->owned);
	free(t->families);
	free(t->ports);
	free(t->devs);
	free(t);
}

static void port_from_model(struct exp_port *p, const struct hw_port *hp)
{
	str_copy(p->dev, sizeof(p->dev), hp->dev->name);
	p->num = hp->num;
	snprintf(p->num_s, sizeof(p->num_s), "%u", hp->num);
	str_copy(p->link_layer, sizeof(p->link_layer), hw_link_layer_name(hp->link_layer));
	str_copy(p->netdev, sizeof(p->netdev), hp->netdev ? hp->netdev->name : "");
	str_copy(p->gid, sizeof(p->gid),
		 hp->n_gids && hp->gids[0].index == 0 ? hp->gids[0].gid : "");
	str_copy(p->port_guid, sizeof(p->port_guid), hp->port_guid);
}

int exporter_row_open(struct hw_ctx *ctx, const char *dev, unsigned port, enum exp_dir d)
{
	char rel[PATH_MAX];

	if (port)
		snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%u%s%s", dev, port,
			 d ? "/" : "", dir_names[d]);
	else
		snprintf(rel, sizeof(rel), "class/infiniband/%s/hw_counters", dev);
	return open_dir(ctx, rel);
}

/* Descriptors kept for the process beyond the topology's: connections (256), the HTTP workers'
 * epoll sets, a scrape's io_uring and the folders it opens, a load's own. */
#define FD_RESERVE 2048

/* How many folder descriptors a topology may hold: half of what is left past FD_RESERVE, since
 * a reload holds the old topology's until the new one is in. A node with 1024 ports holds ~3000
 * (every one, under the usual limits); one with 10 000 would have run out of descriptors, and
 * then had none for a connection either. */
static size_t fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX / 2;
	return rl.rlim_cur > FD_RESERVE ? (size_t)(rl.rlim_cur - FD_RESERVE) / 2 : 0;
}

/* A folder the load could not open or list (but absent, or out of memory): left out, counted in
 * rdmak_exporter_read_errors_total by its path. */
static int skip(struct exp_topo *t, const char *path, const char *netns)
{
	struct exp_skipped *v = realloc(t->skipped, (t->n_skipped + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->skipped = v;
	v[t->n_skipped].netns = netns;
	if (!(v[t->n_skipped].path = strdup(path)))
		return -ENOMEM;
	t->n_skipped++;
	return 0;
}

/* A row's folder opened and, for a counter folder, listed. 1: there, in *fd; 0: absent (counters_ext on any
 * kernel since 4.5, hw_counters on most drivers but mlx5) or unreadable (counted); -ENOMEM. */
static int row_folder(struct exp_topo *t, struct hw_ctx *ctx, const char *dev, unsigned port,
		      enum exp_dir d, const char *netns, struct pending *pend, int *fd)
{
	char rel[PATH_MAX];
	int r;

	*fd = exporter_row_open(ctx, dev, port, d);
	if (*fd == -ENOENT || *fd == -ENOTDIR)
		return 0;
	if (*fd == -ENOMEM)
		return -ENOMEM;
	if (*fd >= 0 && d != EXP_DIR_NONE) {
		r = list_dir(*fd, true, &pend->files[d], &pend->n_files[d]);
		if (r >= 0)
			return 1;
		close(*fd);
		*fd = r;
		if (r == -ENOMEM)
			return r;
	}
	if (*fd >= 0)
		return 1;
	if (port)
		snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%u%s%s", dev, port,
			 d ? "/" : "", dir_names[d]);
	else
		snprintf(rel, sizeof(rel), "class/infiniband/%s/hw_counters", dev);
	return skip(t, rel, netns);
}

/* Open a port's folders and list their counter files; the folders stay open while the topology
 * has descriptors to spare. */
static int port_open(struct exp_topo *t, struct hw_ctx *ctx, struct exp_port *p,
		     struct pending *pend)
{
	p->fds_held = t->n_fds + EXP_DIR_N <= t->fd_budget;
	for (int d = 0; d < EXP_DIR_N; d++) {
		int fd, r = row_folder(t, ctx, p->dev, p->num, (enum exp_dir)d, p->netns, pend,
				       &fd);

		if (r < 0)
			return r;
		if (r == 0)
			continue;
		p->dirs |= 1u << d;
		if (p->fds_held) {
			p->fd[d] = fd;
			t->n_fds++;
		} else {
			close(fd);
		}
	}
	return 0;
}

static int slots_fill(struct exp_topo *t, struct exp_slot **ret, struct pending *pend, size_t from,
		      size_t to)
{
	struct exp_slot *s = calloc(t->n_families ? t->n_families : 1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (int d = EXP_DIR_COUNTERS; d < EXP_DIR_N; d++)
		for (size_t i = 0; i < pend->n_files[d]; i++) {
			int f = d == EXP_DIR_HW
					? family_find(t, from, to, EXP_DIR_HW, pend->files[d][i])
					: family_find(t, 0, exporter_n_node_families,
						      (enum exp_dir)d, pend->files[d][i]);

			if (f >= 0)
				s[f].dir = (enum exp_dir)d;
		}
	*ret = s;
	return 0;
}

struct finding_sink {
	struct exp_topo *t;
	size_t cap;
	int err;
};

static int status_rank(enum diag_status s)
{
	return s == DIAG_FAIL ? 3 : s == DIAG_WARN ? 2 : s == DIAG_OK ? 1 : 0;
}

/* One series per (check, object): a check that says several things about one object is its worst.
 */
static void on_finding(void *ud, const struct diag_finding *f)
{
	struct finding_sink *k = ud;
	struct exp_topo *t = k->t;
	const char *obj = f->object ? f->object : "";
	struct exp_finding *e;

	for (size_t i = 0; i < t->n_findings; i++) {
		e = &t->findings[i];
		if (!strcmp(e->check, f->id) && !strcmp(e->object, obj)) {
			if (status_rank(f->status) > status_rank(e->status))
				e->status = f->status;
			return;
		}
	}
	if (t->n_findings == k->cap) {
		size_t ncap = k->cap ? 2 * k->cap : 16;
		struct exp_finding *n = realloc(t->findings, ncap * sizeof(*n));

		if (!n) {
			k->err = -ENOMEM;
			return;
		}
		t->findings = n;
		k->cap = ncap;
	}
	e = &t->findings[t->n_findings];
	e->check = strdup(f->id);
	e->object = strdup(obj);
	e->status = f->status;
	if (!e->check || !e->object) {
		free(e->check);
		free(e->object);
		k->err = -ENOMEM;
		return;
	}
	t->n_findings++;
}

static int doctor_findings(struct hw_ctx *ctx, const struct hw_node *node, struct exp_topo *t)
{
	static char *const no_env[] = { NULL };
	struct finding_sink k = { .t = t };
	struct diag *d = NULL;
	enum diag_scope scope;
	const char *id;
	int r;

	r = diag_new(ctx, node, DIAG_NODE, no_env, &d);
	if (r < 0)
		return r;
	for (size_t i = 0; (id = diag_check_id(i, &scope)) && k.err == 0; i++) {
		if (!(scope & DIAG_NODE))
			continue;
		r = diag_run_check_each(d, id, on_finding, &k);
		if (r < 0 && r != -ENOENT) {
			k.err = r;
			break;
		}
	}
	diag_free(d);
	return k.err;
}

/* Where the topology's devices come from: the host's model, then each pod namespace's view. */
struct source {
	struct hw_ctx *ctx;
	struct hw_node *node;
	const char *netns; /* NULL: the host */
};

/* A device of src already loaded from an earlier source: its name was taken there (kernels with
 * per-namespace device names). Left out: two series sets with one device label would clash. */
static bool dev_taken(const struct source *src, size_t k, const char *name)
{
	for (size_t i = 0; i < k; i++)
		if (hw_node_rdma(src[i].node, name))
			return true;
	return false;
}

static int load_ports(const struct source *src, size_t n_src, struct exp_topo *t, size_t *fcap)
{
	struct pending *pend;
	size_t n = 0;
	int r = 0;

	for (size_t k = 0; k < n_src; k++)
		HW_NODE_FOREACH_PORT(src[k].node, hp)
	n++;
	t->ports = calloc(n ? n : 1, sizeof(*t->ports));
	pend = calloc(n ? n : 1, sizeof(*pend));
	if (!t->ports || !pend) {
		free(pend);
		return -ENOMEM;
	}
	/* first every port's files, so that the families are known before any slot table */
	for (size_t k = 0; k < n_src; k++)
		HW_NODE_FOREACH_PORT(src[k].node, hp)
		{
			struct exp_port *p = &t->ports[t->n_ports];

			if (dev_taken(src, k, hp->dev->name))
				continue;
			for (int d = 0; d < EXP_DIR_N; d++)
				p->fd[d] = -1;
			t->n_ports++;
			port_from_model(p, hp);
			p->netns = src[k].netns;
			r = port_open(t, src[k].ctx, p, &pend[t->n_ports - 1]);
			if (r < 0)
				goto out;
		}
	for (size_t i = 0; i < t->n_ports; i++)
		for (size_t j = 0; j < pend[i].n_files[EXP_DIR_HW]; j++) {
			if (!hw_counter_is_counter(pend[i].files[EXP_DIR_HW][j]))
				continue;
			r = family_add_hw(t, exporter_n_node_families, "rdmak_port_hw_",
					  "A port's hw_counters file (docs/exporter.md)",
					  pend[i].files[EXP_DIR_HW][j], fcap);
			if (r < 0)
				goto out;
		}
	t->n_port_families = t->n_families;
	for (size_t i = 0; i < t->n_ports && r >= 0; i++)
		r = slots_fill(t, &t->ports[i].slots, &pend[i], exporter_n_node_families,
			       t->n_port_families);
out:
	for (size_t i = 0; i < n; i++)
		pending_clear(&pend[i]);
	free(pend);
	return r < 0 ? r : 0;
}

static int load_devices(const struct source *src, size_t n_src, struct exp_topo *t, size_t *fcap)
{
	struct pending *pend;
	size_t n = 0;
	int r = 0;

	for (size_t k = 0; k < n_src; k++)
		n += src[k].node->n_rdma;
	t->devs = calloc(n ? n : 1, sizeof(*t->devs));
	pend = calloc(n ? n : 1, sizeof(*pend));
	if (!t->devs || !pend) {
		free(pend);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n_src; k++)
		for (size_t i = 0; i < src[k].node->n_rdma; i++) {
			const struct hw_rdma_dev *hd = &src[k].node->rdma[i];
			struct exp_device *d = &t->devs[t->n_devs];
			struct pending *pd = &pend[t->n_devs];
			int fd;

			if (dev_taken(src, k, hd->name))
				continue;
			t->n_devs++;
			str_copy(d->name, sizeof(d->name), hd->name);
			str_copy(d->board_id, sizeof(d->board_id), hd->board_id);
			str_copy(d->fw_ver, sizeof(d->fw_ver), hd->fw_ver);
			str_copy(d->hca_type, sizeof(d->hca_type), hd->hca_type);
			str_copy(d->node_guid, sizeof(d->node_guid), hd->node_guid);
			str_copy(d->bdf, sizeof(d->bdf), hd->pci ? hd->pci->bdf : "");
			d->pcie_link = hd->pci && !hd->pci->physfn;
			d->netns = src[k].netns;
			d->pf = SIZE_MAX;
			/* a VF in the host's view: its PF's RDMA device, where its idle series are
			 * summed (a VF in a pod's namespace is that pod's) */
			if (!d->netns && hd->pci && hd->pci->physfn && hd->pci->physfn->n_rdma)
				str_copy(d->pf_name, sizeof(d->pf_name),
					 hd->pci->physfn->rdma[0]->name);
			d->hw_fd = -1;
			r = row_folder(t, src[k].ctx, hd->name, 0, EXP_DIR_HW, d->netns, pd, &fd);
			if (r < 0)
				goto out;
			d->has_hw = r > 0;
			d->hw_held = d->has_hw && t->n_fds < t->fd_budget;
			if (d->hw_held) {
				d->hw_fd = fd;
				t->n_fds++;
			} else if (d->has_hw) {
				close(fd);
			}
		}
	for (size_t i = 0; i < t->n_devs; i++)
		for (size_t j = 0; j < pend[i].n_files[EXP_DIR_HW]; j++) {
			if (!hw_counter_is_counter(pend[i].files[EXP_DIR_HW][j]))
				continue;
			r = family_add_hw(t, t->n_port_families, "rdmak_device_hw_",
					  "A device's hw_counters file (docs/exporter.md)",
					  pend[i].files[EXP_DIR_HW][j], fcap);
			if (r < 0)
				goto out;
		}
	for (size_t i = 0; i < t->n_devs && r >= 0; i++)
		r = slots_fill(t, &t->devs[i].slots, &pend[i], t->n_port_families, t->n_families);
out:
	for (size_t i = 0; i < n; i++)
		pending_clear(&pend[i]);
	free(pend);
	return r < 0 ? r : 0;
}

/* The port families' slot tables were sized before the device families were added: grow them. */
static int ports_grow_slots(struct exp_topo *t)
{
	for (size_t i = 0; i < t->n_ports; i++) {
		struct exp_slot *s = realloc(t->ports[i].slots, t->n_families * sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (size_t f = t->n_port_families; f < t->n_families; f++)
			s[f] = (struct exp_slot){ 0 };
		t->ports[i].slots = s;
	}
	return 0;
}

/* The pod namespaces' names and devices, as exporter_views_match() compares them. */
static int keep_views(const struct exp_views *views, struct exp_topo *t)
{
	size_t n = 0;

	for (size_t i = 0; i < views->n; i++)
		n += views->v[i].n_devset;
	t->ns_names = calloc(views->n + 1, sizeof(*t->ns_names));
	t->ns_devset = calloc(n + 1, sizeof(*t->ns_devset));
	if (!t->ns_names || !t->ns_devset)
		return -ENOMEM;
	for (size_t i = 0; i < views->n; i++) {
		if (!(t->ns_names[t->n_ns++] = strdup(views->v[i].name)))
			return -ENOMEM;
		for (size_t j = 0; j < views->v[i].n_devset; j++)
			if (asprintf(&t->ns_devset[t->n_ns_devset++], "%s/%s", views->v[i].name,
				     views->v[i].devset[j]) < 0) {
				t->ns_devset[--t->n_ns_devset] = NULL;
				return -ENOMEM;
			}
	}
	return 0;
}

/* The topology's own copy of a namespace's name (the views' go after the load). */
static const char *ns_name(const struct exp_topo *t, const char *name)
{
	for (size_t k = 0; k < t->n_ns; k++)
		if (!strcmp(t->ns_names[k], name))
			return t->ns_names[k];
	return name;
}

/* What the sources' loads left out, after what the folders' did. */
static int keep_skipped(const struct source *src, size_t n_src, struct exp_topo *t)
{
	int r;

	for (size_t k = 0; k < n_src; k++)
		for (size_t i = 0; i < src[k].node->n_skipped; i++)
			if ((r = skip(t, src[k].node->skipped[i].path, src[k].netns)) < 0)
				return r;
	return 0;
}

/* The skipped rows' namespaces, the topology's own copies (after keep_views). */
static void skipped_detach(struct exp_topo *t)
{
	for (size_t i = 0; i < t->n_skipped; i++)
		if (t->skipped[i].netns)
			t->skipped[i].netns = ns_name(t, t->skipped[i].netns);
}

static void fd_drop(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The rows of pods' namespaces: their netns the topology's, their folders closed (a scrape opens
 * them in its own views). */
static void rows_detach(struct exp_topo *t)
{
	for (size_t i = 0; i < t->n_ports; i++) {
		struct exp_port *p = &t->ports[i];

		if (!p->netns)
			continue;
		p->netns = ns_name(t, p->netns);
		for (int d = 0; d < EXP_DIR_N; d++)
			fd_drop(&p->fd[d]);
		p->fds_held = false;
	}
	for (size_t i = 0; i < t->n_devs; i++) {
		struct exp_device *d = &t->devs[i];

		if (!d->netns)
			continue;
		d->netns = ns_name(t, d->netns);
		fd_drop(&d->hw_fd);
		d->hw_held = false;
	}
}

/* ---- which device, which PF ------------------------------------------------------------ */

struct name_row {
	const char *name;
	unsigned port; /* 0: a device's row */
	size_t row;
};

static int name_row_cmp(const void *a, const void *b)
{
	const struct name_row *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->port < y->port ? -1 : x->port > y->port;
}

/* Every row of t by device name and port (devices: port 0), sorted. NULL: no memory. */
static struct name_row *rows_by_name(const struct exp_topo *t)
{
	size_t rows = t->n_ports + t->n_devs;
	struct name_row *v = calloc(rows ? rows : 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t r = 0; r < rows; r++)
		v[r] = r < t->n_ports ? (struct name_row){ t->ports[r].dev, t->ports[r].num, r }
				      : (struct name_row){ t->devs[r - t->n_ports].name, 0, r };
	qsort(v, rows, sizeof(*v), name_row_cmp);
	return v;
}

static size_t row_find(const struct name_row *v, size_t n, const char *name, unsigned port)
{
	struct name_row k = { name, port, 0 };
	const struct name_row *hit = bsearch(&k, v, n, sizeof(*v), name_row_cmp);

	return hit ? hit->row : SIZE_MAX;
}

/* Each port's device, each VF's PF, by index. -ENOMEM. */
static int link_rows(struct exp_topo *t)
{
	struct name_row *v = rows_by_name(t);
	size_t rows = t->n_ports + t->n_devs, r;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_ports; i++) {
		r = row_find(v, rows, t->ports[i].dev, 0);
		t->ports[i].dev_idx = r == SIZE_MAX ? SIZE_MAX : r - t->n_ports;
	}
	for (size_t i = 0; i < t->n_devs; i++) {
		struct exp_device *d = &t->devs[i];

		r = d->pf_name[0] ? row_find(v, rows, d->pf_name, 0) : SIZE_MAX;
		/* a PF that is itself a VF's would chain: none does, but never sum into one */
		d->pf = r != SIZE_MAX && !t->devs[r - t->n_ports].pf_name[0] ? r - t->n_ports
									     : SIZE_MAX;
	}
	free(v);
	return 0;
}

/* ---- the idle VFs' sums --------------------------------------------------------------- */

/* The sum's name of a family: rdmak_idle_vfs_ and the family's name past its own prefix
 * (node_infiniband_port_data_received_bytes_total: rdmak_idle_vfs_port_data_received_bytes_total,
 * rdmak_port_hw_out_of_buffer_total: rdmak_idle_vfs_port_hw_out_of_buffer_total). */
static char *idle_name(const char *family)
{
	const char *tail = !strncmp(family, "node_infiniband_", 16) ? family + 16
			   : !strncmp(family, "rdmak_", 6)	    ? family + 6
								    : family;
	char *s = NULL;

	return asprintf(&s, "rdmak_idle_vfs_%s", tail) < 0 ? NULL : s;
}

static int key_cmp(const void *a, const void *b)
{
	const struct exp_idle_key *x = a, *y = b;

	if (x->pf != y->pf)
		return x->pf < y->pf ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

/* The row's key as a value (pf SIZE_MAX: none). */
static struct exp_idle_key row_key(const struct exp_topo *t, size_t r)
{
	struct exp_idle_key k = { .pf = SIZE_MAX };

	if (r < t->n_ports) {
		const struct exp_port *p = &t->ports[r];

		if (p->dev_idx != SIZE_MAX && t->devs[p->dev_idx].pf != SIZE_MAX)
			k = (struct exp_idle_key){ t->devs[p->dev_idx].pf, p->num, "" };
	} else if (t->devs[r - t->n_ports].pf != SIZE_MAX && t->devs[r - t->n_ports].has_hw) {
		k = (struct exp_idle_key){ t->devs[r - t->n_ports].pf, 0, "" };
	}
	return k;
}

static int idle_init(struct exp_topo *t)
{
	struct exp_idle *x = &t->idle;
	size_t rows = t->n_ports + t->n_devs, nf = t->n_families ? t->n_families : 1, k = 0;

	x->key = malloc((rows ? rows : 1) * sizeof(*x->key));
	x->keys = calloc(rows ? rows : 1, sizeof(*x->keys));
	x->names = calloc(nf, sizeof(*x->names));
	if (!x->key || !x->keys || !x->names)
		return -ENOMEM;
	for (size_t r = 0; r < rows; r++) {
		struct exp_idle_key key = row_key(t, r);

		if (key.pf != SIZE_MAX)
			x->keys[k++] = key;
	}
	qsort(x->keys, k, sizeof(*x->keys), key_cmp);
	for (size_t i = 0; i < k; i++)
		if (!x->n_keys || key_cmp(&x->keys[x->n_keys - 1], &x->keys[i]))
			x->keys[x->n_keys++] = x->keys[i];
	for (size_t i = 0; i < x->n_keys; i++)
		snprintf(x->keys[i].port_s, sizeof(x->keys[i].port_s), "%u", x->keys[i].port);
	x->last = calloc(rows * nf + 1, sizeof(*x->last));
	x->seen = calloc(rows * nf + 1, 1);
	x->was_idle = calloc(rows + 1, 1);
	x->sum = calloc(x->n_keys * nf + 1, sizeof(*x->sum));
	x->has = calloc(x->n_keys * nf + 1, 1);
	if (!x->last || !x->seen || !x->was_idle || !x->sum || !x->has)
		return -ENOMEM;
	for (size_t f = 0; f < t->n_families; f++)
		if (!(x->names[f] = idle_name(t->families[f].name)))
			return -ENOMEM;
	for (size_t r = 0; r < rows; r++) {
		struct exp_idle_key key = row_key(t, r);
		const struct exp_idle_key *hit =
			key.pf == SIZE_MAX
				? NULL
				: bsearch(&key, x->keys, x->n_keys, sizeof(key), key_cmp);
		const struct exp_slot *slots =
			r < t->n_ports ? t->ports[r].slots : t->devs[r - t->n_ports].slots;

		x->key[r] = hit ? (size_t)(hit - x->keys) : SIZE_MAX;
		for (size_t f = 0; hit && f < t->n_families; f++)
			if (slots[f].dir != EXP_DIR_NONE)
				x->has[x->key[r] * nf + f] = 1;
	}
	return 0;
}

void exporter_idle_carry(const struct exp_topo *old, struct exp_topo *t)
{
	const struct exp_idle *o = &old->idle;
	struct exp_idle *x = &t->idle;
	size_t onf = old->n_families ? old->n_families : 1, nf = t->n_families ? t->n_families : 1;
	size_t rows = t->n_ports + t->n_devs, orows = old->n_ports + old->n_devs;
	struct name_row *by_name = rows_by_name(old);
	ssize_t *fam = calloc(nf, sizeof(*fam));

	if (!by_name || !fam || !o->key || !x->key)
		goto out; /* out of memory: the sums start again, as at a restart */
	/* the same family is the same folder's file of the same name */
	for (size_t f = 0; f < t->n_families; f++) {
		fam[f] = -1;
		for (size_t g = 0; g < old->n_families; g++)
			if (old->families[g].dir == t->families[f].dir &&
			    !strcmp(old->families[g].file, t->families[f].file) &&
			    (old->families[g].dir != EXP_DIR_HW ||
			     (f < t->n_port_families) == (g < old->n_port_families)))
				fam[f] = (ssize_t)g;
	}
	for (size_t r = 0; r < rows; r++) {
		size_t orow, ok, k = x->key[r];
		unsigned port = r < t->n_ports ? t->ports[r].num : 0;

		if (k == SIZE_MAX)
			continue;
		orow = row_find(by_name, orows,
				r < t->n_ports ? t->ports[r].dev : t->devs[r - t->n_ports].name,
				port);
		if (orow == SIZE_MAX || (ok = o->key[orow]) == SIZE_MAX ||
		    strcmp(old->devs[o->keys[ok].pf].name, t->devs[x->keys[k].pf].name))
			continue; /* a new VF, or one moved to another PF: it starts here */
		x->was_idle[r] = o->was_idle[orow];
		for (size_t f = 0; f < t->n_families; f++) {
			if (fam[f] < 0)
				continue;
			x->last[r * nf + f] = o->last[orow * onf + (size_t)fam[f]];
			x->seen[r * nf + f] = o->seen[orow * onf + (size_t)fam[f]];
		}
	}
	for (size_t k = 0; k < x->n_keys; k++)
		for (size_t ok = 0; ok < o->n_keys; ok++) {
			if (o->keys[ok].port != x->keys[k].port ||
			    strcmp(old->devs[o->keys[ok].pf].name, t->devs[x->keys[k].pf].name))
				continue;
			for (size_t f = 0; f < t->n_families; f++)
				if (fam[f] >= 0)
					x->sum[k * nf + f] = o->sum[ok * onf + (size_t)fam[f]];
		}
out:
	free(by_name);
	free(fam);
}

int exporter_topo_load(struct hw_ctx *ctx, const struct exp_views *views, struct exp_topo **ret,
		       struct hw_error *err)
{
	struct exp_topo *t = calloc(1, sizeof(*t));
	size_t n_views = views ? views->n : 0, n_src = 0;
	struct source *src = calloc(n_views + 1, sizeof(*src));
	size_t fcap = exporter_n_node_families + 64;
	int r;

	if (!t || !src) {
		r = -ENOMEM;
		goto fail;
	}
	/* the device set first: a device that comes meanwhile makes the next scrape reload again */
	r = exporter_devset_read(ctx, &t->devset, &t->n_devset);
	if (r < 0)
		goto fail;
	src[0].ctx = ctx;
	/* a device or port that cannot be read is left out, and counted (write_errors), rather than
	 * costing every other one its series; the RoCE ports' GID tables: the doctor's roce.gids
	 * and bond.lag read them */
	r = hw_load(ctx, HW_LOAD_PARTIAL | HW_LOAD_ROCE_GIDS, &src[0].node, err);
	if (r < 0)
		goto fail;
	n_src = 1;
	for (size_t i = 0; i < n_views; i++) {
		/* a namespace whose view cannot be loaded now is left out, as if it had no device;
		 * its devices stay in ns_devset, so that the next scrape tries again */
		if (hw_load(views->v[i].ctx, HW_LOAD_NETNS | HW_LOAD_PARTIAL, &src[n_src].node,
			    NULL) < 0)
			continue;
		src[n_src].ctx = views->v[i].ctx;
		src[n_src].netns = views->v[i].name;
		n_src++;
	}
	t->families = malloc(fcap * sizeof(*t->families));
	t->owned = malloc(2 * fcap * sizeof(*t->owned));
	if (!t->families || !t->owned) {
		r = -ENOMEM;
		goto fail;
	}
	memcpy(t->families, exporter_node_families,
	       exporter_n_node_families * sizeof(*t->families));
	t->fd_budget = fd_budget();
	t->n_families = exporter_n_node_families;
	if ((r = load_ports(src, n_src, t, &fcap)) < 0 ||
	    (r = load_devices(src, n_src, t, &fcap)) < 0 || (r = ports_grow_slots(t)) < 0 ||
	    (r = link_rows(t)) < 0 || (r = idle_init(t)) < 0 ||
	    (r = doctor_findings(ctx, src[0].node, t)) < 0 ||
	    (views && (r = keep_views(views, t)) < 0) || (r = keep_skipped(src, n_src, t)) < 0)
		goto fail;
	rows_detach(t);
	skipped_detach(t);
	for (size_t i = 0; i < n_src; i++)
		hw_node_free(src[i].node);
	free(src);
	*ret = t;
	return 0;
fail:
	for (size_t i = 0; src && i < n_views + 1; i++)
		hw_node_free(src[i].node);
	free(src);
	exporter_topo_free(t);
	return r;
}
