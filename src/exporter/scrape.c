/* SPDX-License-Identifier: Apache-2.0 */
/* One scrape: read every counter of the cached topology, then write the families one after the
 * other (the text format wants a family's samples together), in the Prometheus text format
 * 0.0.4 or OpenMetrics 1.0.0 (text.c writes them). Values are printed as exact integers: the
 * kernel's counters are 64-bit, and a float's 17 digits would round them past 2^53. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "exporter/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"

struct out {
	struct exporter_buf *b;
	enum exporter_format fmt;
	const struct exp_podmap *pods; /* which pod holds a device (pods.c); NULL none */
	/* each row's label set (the ports', then the devices'), rendered once per scrape:
	 * row r's is lab.p[off[r] .. off[r + 1]) */
	struct exporter_buf lab;
	size_t *off;
	/* per row: an idle VF (--vf-series held), whose own series are left out; NULL: none */
	unsigned char *idle;
};

static bool row_idle(const struct out *o, size_t r)
{
	return o->idle && o->idle[r];
}

static void family(struct out *o, const char *name, enum exp_type type, const char *help)
{
	exporter_out_family(o->b, o->fmt, name, type, help);
}

static void sample_u64(struct out *o, const char *name, const char *const *labels, uint64_t v)
{
	exporter_out_sample(o->b, name, labels, v);
}

/* A sample of row r (a port, or n_ports + a device) with the row's label set. */
static void row_sample(struct out *o, const char *name, size_t name_len, size_t r, uint64_t v)
{
	exporter_out_sample_pre(o->b, name, name_len, o->lab.p + o->off[r],
				o->off[r + 1] - o->off[r], v);
}

/* ---- reading ------------------------------------------------------------------------------------
 */

int exporter_counter_parse(const char *s, uint64_t *ret)
{
	unsigned long long v;

	if (!strncmp(s, "N/A", 3))
		return 0;
	if (str_to_u64(s, 10, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 1;
}

/* What one scrape read: per port (then per device) and family, a value or none. */
struct values {
	struct exp_kview rdma; /* the host's RDMA netlink socket and device list, for the scrape */
	uint64_t *v;
	unsigned char *ok;
	size_t stride;
	/* state_id, physical_state_id, rate_bytes_per_second per port */
	uint64_t (*st)[3];
	unsigned char (*st_ok)[3];
	unsigned char *gone;	   /* per port: its state files said ENOENT */
	struct hw_pci_link *links; /* per device */
	unsigned char *link_ok;
	int nl_ports; /* ports whose hw_counters came through RDMA netlink; <0: not asked */
};

static void values_free(struct values *v)
{
	exporter_rdma_view_close(&v->rdma);
	free(v->v);
	free(v->ok);
	free(v->st);
	free(v->st_ok);
	free(v->gone);
	free(v->links);
	free(v->link_ok);
}

/* "200 Gb/sec (4X HDR)" in bytes per second, as procfs parses it: the number as a 32-bit float,
 * times 125000000 (the same rounding, so that the values are equal). */
static int parse_rate(const char *s, uint64_t *ret)
{
	char *end;
	float g;

	errno = 0;
	g = strtof(s, &end);
	if (end == s || errno || *end != ' ' || g < 0)
		return -EINVAL;
	*ret = (uint64_t)((double)g * 125000000.0);
	return 0;
}

/* Where a file's value goes: the row (a port, or n_ports + a device) and the family, or
 * FILE_STATE + k for the port's state (0), phys_state (1) or rate (2). */
#define FILE_STATE (-3)
struct job {
	size_t row;
	int what;
};

/* The folders a batch may keep open: those of every row it holds files of, and a few rows
 * without files (flushed past it) */
#define BATCH_FDS (EXPORTER_READER_BATCH * EXP_DIR_N + 64)

/* A batch of files being queued for the reader, and what to do with each once read. */
struct batch {
	struct exporter *e;
	const struct exp_topo *t;
	const struct exp_views *views;
	struct values *val;
	struct exporter_reader *rd;
	struct exporter_file *files;
	struct job job[EXPORTER_READER_BATCH];
	size_t n;
	size_t first_gone; /* the first port whose state files said ENOENT; SIZE_MAX none */
	/* the folders this scrape opened (rows of pods' namespaces, rows the topology holds no
	 * descriptors for): the row's being queued, and those of rows queued whole, closed once
	 * their batch is read */
	int cur[EXP_DIR_N], done[BATCH_FDS];
	size_t n_cur, n_done;
};

static void take_state(struct batch *b, const struct job *j, const struct exporter_file *f)
{
	struct exp_port *p = &b->t->ports[j->row];
	int k = j->what - FILE_STATE, num;

	if (b->val->gone[j->row])
		return;
	if (f->n == -ENOENT) {
		/* the port's folder is gone with its device: drop its series, reload */
		atomic_store(&b->e->stale, true);
		b->val->gone[j->row] = 1; /* its other state files are not looked at */
		if (j->row < b->first_gone)
			b->first_gone = j->row;
		return;
	}
	if (f->n >= 0 && k < 2 && (num = hw_parse_attr_num(f->buf)) >= 0) {
		b->val->st[j->row][k] = (uint64_t)num;
		b->val->st_ok[j->row][k] = 1;
	} else if (f->n >= 0 && k == 2 && parse_rate(f->buf, &b->val->st[j->row][k]) == 0) {
		b->val->st_ok[j->row][k] = 1;
	} else {
		atomic_fetch_add(&p->state_errors, 1);
	}
}

static void take_counter(struct batch *b, const struct job *j, const struct exporter_file *f)
{
	const struct exp_family *fam = &b->t->families[j->what];
	bool port = j->row < b->t->n_ports;
	struct exp_slot *slot = port ? &b->t->ports[j->row].slots[j->what]
				     : &b->t->devs[j->row - b->t->n_ports].slots[j->what];
	size_t at = j->row * b->val->stride + (size_t)j->what;
	int r = f->n < 0 ? (int)f->n : exporter_counter_parse(f->buf, &b->val->v[at]);

	if (r < 0)
		atomic_fetch_add(&slot->errors, 1);
	else if (r > 0) {
		b->val->v[at] *= fam->scale;
		b->val->ok[at] = 1;
	}
}

static void batch_flush(struct batch *b)
{
	exporter_reader_read(b->rd, b->n);
	for (size_t i = 0; i < b->n; i++) {
		if (b->job[i].what < 0)
			take_state(b, &b->job[i], &b->files[i]);
		else
			take_counter(b, &b->job[i], &b->files[i]);
	}
	b->n = 0;
	for (size_t i = 0; i < b->n_done; i++)
		close(b->done[i]);
	b->n_done = 0;
}

static void batch_add(struct batch *b, int dirfd, const char *name, size_t row, int what)
{
	b->files[b->n].dirfd = dirfd;
	b->files[b->n].name = name;
	b->job[b->n] = (struct job){ .row = row, .what = what };
	if (++b->n == EXPORTER_READER_BATCH)
		batch_flush(b);
}

static void batch_slots(struct batch *b, size_t row, const int *fds, const struct exp_slot *slots)
{
	const unsigned char *ok = b->val->ok + row * b->val->stride;

	/* a value there already came through RDMA netlink */
	for (size_t f = 0; f < b->t->n_families; f++)
		if (slots[f].dir != EXP_DIR_NONE && fds[slots[f].dir] >= 0 && !ok[f])
			batch_add(b, fds[slots[f].dir], b->t->families[f].file, row, (int)f);
}

/* Row r's folders (a port, or n_ports + a device) into f, -1 where there is none: the
 * port's own (counters false: its state files) or its counter folders (true). The topology's
 * where it holds them; else opened now, in the row's view for a pod's namespace, and closed
 * once the row's files are read (row_done). false: the row's namespace is gone (reload). */
static bool row_dirs(struct batch *b, size_t r, bool counters, int f[EXP_DIR_N])
{
	const struct exp_topo *t = b->t;
	const struct exp_port *p = r < t->n_ports ? &t->ports[r] : NULL;
	const struct exp_device *d = p ? NULL : &t->devs[r - t->n_ports];
	const char *netns = p ? p->netns : d->netns;
	unsigned dirs = p ? p->dirs : d->has_hw ? 1u << EXP_DIR_HW : 0;
	struct hw_ctx *ctx = b->e->ctx;

	for (int k = 0; k < EXP_DIR_N; k++)
		f[k] = p && p->fds_held ? p->fd[k] : -1;
	if (d && d->hw_held)
		f[EXP_DIR_HW] = d->hw_fd;
	if ((p && p->fds_held) || (d && d->hw_held))
		return true;
	if (netns) {
		const struct exp_view *v = exporter_views_find(b->views, netns);

		if (!v) {
			atomic_store(&b->e->stale, true);
			return false;
		}
		ctx = v->ctx;
	}
	for (int k = 0; k < EXP_DIR_N; k++) {
		if (!(dirs & (1u << k)) || (k != EXP_DIR_NONE) != counters)
			continue;
		f[k] = exporter_row_open(ctx, p ? p->dev : d->name, p ? p->num : 0,
					 (enum exp_dir)k);
		if (f[k] < 0)
			f[k] = -1;
		else
			b->cur[b->n_cur++] = f[k];
	}
	return true;
}

/* The row's files are queued: its folders close once their batch is read. */
static void row_done(struct batch *b)
{
	memcpy(b->done + b->n_done, b->cur, b->n_cur * sizeof(*b->cur));
	b->n_done += b->n_cur;
	b->n_cur = 0;
	if (b->n_done > BATCH_FDS - EXP_DIR_N)
		batch_flush(b);
}

/* Every file of the scrape, in two passes: the ports' state files first, so that a port whose
 * folder is gone (its state ENOENT) has its counters neither read nor counted as errors; then
 * the counters of the ports there are and of the devices. */
static int read_all(struct exporter *e, const struct exp_topo *t, const struct exp_views *views,
		    struct values *val)
{
	static const char *const state_files[3] = { "state", "phys_state", "rate" };
	size_t rows = t->n_ports + t->n_devs;
	struct batch *b = calloc(1, sizeof(*b));
	bool stale = atomic_load(&e->stale);
	int f[EXP_DIR_N];

	val->stride = t->n_families ? t->n_families : 1;
	val->v = calloc(rows ? rows * val->stride : 1, sizeof(*val->v));
	val->ok = calloc(rows ? rows * val->stride : 1, 1);
	val->st = calloc(t->n_ports ? t->n_ports : 1, sizeof(*val->st));
	val->st_ok = calloc(t->n_ports ? t->n_ports : 1, sizeof(*val->st_ok));
	val->gone = calloc(t->n_ports ? t->n_ports : 1, 1);
	val->links = calloc(t->n_devs ? t->n_devs : 1, sizeof(*val->links));
	val->link_ok = calloc(t->n_devs ? t->n_devs : 1, 1);
	if (!b || !val->v || !val->ok || !val->st || !val->st_ok || !val->gone || !val->links ||
	    !val->link_ok || !(b->rd = exporter_reader_new(atomic_load(&e->io_uring), NULL))) {
		free(b);
		return -ENOMEM;
	}
	b->e = e;
	b->t = t;
	b->views = views;
	b->first_gone = SIZE_MAX;
	b->val = val;
	b->files = exporter_reader_files(b->rd);
	for (size_t i = 0; i < t->n_ports; i++) {
		/* a port of a namespace gone since the views were taken: nothing to read */
		if (!row_dirs(b, i, false, f) || (f[EXP_DIR_NONE] < 0 && t->ports[i].netns)) {
			val->gone[i] = 1;
			row_done(b);
			continue;
		}
		for (int k = 0; k < 3; k++)
			batch_add(b, f[EXP_DIR_NONE], state_files[k], i, FILE_STATE + k);
		row_done(b);
	}
	batch_flush(b);
	val->nl_ports = exporter_rdma_port_hw(e, t, &val->rdma, val->v, val->ok, val->stride);
	for (size_t i = 0; i < t->n_ports; i++) {
		/* a port none of whose state could be read, once this port or one before it was
		 * seen gone (or the topology was stale already), is taken for gone: as when each
		 * port's files were read in turn */
		if (val->gone[i] || (!val->st_ok[i][0] && !val->st_ok[i][1] && !val->st_ok[i][2] &&
				     (stale || b->first_gone <= i)))
			continue;
		if (row_dirs(b, i, true, f))
			batch_slots(b, i, f, t->ports[i].slots);
		row_done(b);
	}
	for (size_t i = 0; i < t->n_devs; i++) {
		if (row_dirs(b, t->n_ports + i, true, f))
			batch_slots(b, t->n_ports + i, f, t->devs[i].slots);
		row_done(b);
	}
	batch_flush(b);
	exporter_reader_free(b->rd);
	free(b);
	for (size_t i = 0; i < t->n_devs; i++) {
		const struct exp_device *d = &t->devs[i];

		if (d->pcie_link && hw_pci_read_link(e->ctx, d->bdf, &val->links[i]) == 0 &&
		    val->links[i].max_gts > 0)
			val->link_ok[i] = 1;
	}
	return 0;
}

/* ---- writing
 * ------------------------------------------------------------------------------------- */

static void write_state(struct out *o, const struct exp_topo *t, const struct values *val)
{
	static const struct {
		const char *name, *help;
	} st[3] = {
		{ "node_infiniband_state_id",
		  "State of the InfiniBand port (0: no change, 1: down, "
		  "2: init, 3: armed, 4: active, 5: act defer)" },
		{ "node_infiniband_physical_state_id",
		  "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: "
		  "disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)" },
		{ "node_infiniband_rate_bytes_per_second", "Maximum signal transfer rate" },
	};

	family(o, "node_infiniband_info", EXP_GAUGE,
	       "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.");
	for (size_t i = 0; i < t->n_devs; i++) {
		const struct exp_device *d = &t->devs[i];
		const char *l[18] = {
			"device",  d->name,    "board_id",  d->board_id, "firmware_version",
			d->fw_ver, "hca_type", d->hca_type, NULL
		};

		if (row_idle(o, t->n_ports + i))
			continue;
		exporter_podmap_labels(o->pods, d->name, l, exporter_labels_netns(d->netns, l, 8));
		sample_u64(o, "node_infiniband_info", l, 1);
	}
	for (int k = 0; k < 3; k++) {
		size_t len = strlen(st[k].name);

		family(o, st[k].name, EXP_GAUGE, st[k].help);
		for (size_t i = 0; i < t->n_ports; i++)
			if (val->st_ok[i][k] && !row_idle(o, i))
				row_sample(o, st[k].name, len, i, val->st[i][k]);
	}
}

static void write_families(struct out *o, const struct exp_topo *t, const struct values *val,
			   size_t from, size_t to, bool devices)
{
	size_t first = devices ? t->n_ports : 0,
	       end = devices ? t->n_ports + t->n_devs : t->n_ports;

	for (size_t f = from; f < to; f++) {
		const struct exp_family *fam = &t->families[f];
		size_t len = strlen(fam->name);
		bool any = false;

		for (size_t row = first; row < end; row++) {
			if (!val->ok[row * val->stride + f] || row_idle(o, row))
				continue;
			if (!any)
				family(o, fam->name, EXP_COUNTER, fam->help);
			any = true;
			row_sample(o, fam->name, len, row, val->v[row * val->stride + f]);
		}
	}
}

/* The label sets of the rows: a port's device and port, a device's device, each with the pod
 * that holds the device. Rendered once, they are copied into every family's sample of the row
 * (~45 per port). -ENOMEM. */
static int row_labels(struct out *o, const struct exp_topo *t)
{
	size_t rows = t->n_ports + t->n_devs;

	o->off = malloc((rows + 1) * sizeof(*o->off));
	if (!o->off || exporter_buf_init(&o->lab, rows * 32) < 0)
		return -ENOMEM;
	for (size_t r = 0; r < rows; r++) {
		const char *l[14] = { "device", NULL };

		o->off[r] = o->lab.len;
		if (row_idle(o, r))
			continue;
		if (r < t->n_ports) {
			l[1] = t->ports[r].dev;
			l[2] = "port";
			l[3] = t->ports[r].num_s;
			exporter_podmap_labels(o->pods, l[1], l,
					       exporter_labels_netns(t->ports[r].netns, l, 4));
		} else {
			l[1] = t->devs[r - t->n_ports].name;
			exporter_podmap_labels(
				o->pods, l[1], l,
				exporter_labels_netns(t->devs[r - t->n_ports].netns, l, 2));
		}
		exporter_buf_labels(&o->lab, l);
	}
	o->off[rows] = o->lab.len;
	return o->lab.oom ? -ENOMEM : 0;
}

static void write_info(struct out *o, const struct exp_topo *t)
{
	family(o, "rdmak_port_info", EXP_GAUGE,
	       "A port's link layer, netdev (ibdev2netdev's), GID 0 and port GUID; value is always "
	       "1.");
	for (size_t i = 0; i < t->n_ports; i++) {
		const struct exp_port *p = &t->ports[i];
		const char *l[22] = { "device",	    p->dev,	   "port",	p->num_s,
				      "link_layer", p->link_layer, "netdev",	p->netdev,
				      "gid",	    p->gid,	   "port_guid", p->port_guid,
				      NULL };

		if (row_idle(o, i))
			continue;
		exporter_podmap_labels(o->pods, p->dev, l, exporter_labels_netns(p->netns, l, 12));
		sample_u64(o, "rdmak_port_info", l, 1);
	}
}

static void write_double(struct out *o, const char *name, const char *const *labels, double v)
{
	char num[32];
	int n = snprintf(num, sizeof(num), " %.9g\n", v);

	exporter_buf_puts(o->b, name);
	exporter_buf_labels(o->b, labels);
	exporter_buf_put(o->b, num, (size_t)n);
}

static void write_pcie(struct out *o, const struct exp_topo *t, const struct values *val)
{
	static const struct {
		const char *name, *help;
	} fams[4] = {
		{ "rdmak_pcie_link_speed_gigatransfers_per_second",
		  "PCIe link speed now (current_link_speed)" },
		{ "rdmak_pcie_link_max_speed_gigatransfers_per_second",
		  "PCIe link speed the function can train at (max_link_speed)" },
		{ "rdmak_pcie_link_width_lanes", "PCIe link width now (current_link_width)" },
		{ "rdmak_pcie_link_max_width_lanes",
		  "PCIe link width the function can train at (max_link_width)" },
	};

	for (int k = 0; k < 4; k++) {
		bool any = false;

		for (size_t i = 0; i < t->n_devs; i++) {
			const struct hw_pci_link *ln = &val->links[i];
			const char *l[14] = { "device", t->devs[i].name, "pci", t->devs[i].bdf,
					      NULL };
			double v = k == 0   ? ln->cur_gts
				   : k == 1 ? ln->max_gts
				   : k == 2 ? ln->cur_width
					    : ln->max_width;

			if (!val->link_ok[i])
				continue;
			if (!any)
				family(o, fams[k].name, EXP_GAUGE, fams[k].help);
			any = true;
			exporter_podmap_labels(o->pods, t->devs[i].name, l,
					       exporter_labels_netns(t->devs[i].netns, l, 4));
			write_double(o, fams[k].name, l, v);
		}
	}
}

static void write_doctor(struct out *o, const struct exp_topo *t)
{
	static const enum diag_status states[] = { DIAG_OK, DIAG_WARN, DIAG_FAIL, DIAG_SKIP };

	/* one series per state, 1 for the finding's and 0 for the others (kube-state-metrics'
	 * kube_pod_status_phase): a change of state changes values, never which series exist, so
	 * that a rule or a graph follows one series through it */
	family(o, "rdmak_doctor_check", EXP_GAUGE,
	       "A finding of `rdmak doctor` (node checks), the worst per check and object: 1 for "
	       "its status, 0 for the others.");
	for (size_t i = 0; i < t->n_findings; i++) {
		const struct exp_finding *f = &t->findings[i];

		for (size_t k = 0; k < ELEMENTSOF(states); k++) {
			const char *l[] = { "check",   f->check, "object",
					    f->object, "status", diag_status_name(states[k]),
					    NULL };

			sample_u64(o, "rdmak_doctor_check", l, f->status == states[k]);
		}
	}
}

/* Pod attribution: every container that holds a device (one series each: a shared HCA has one
 * per sharing container), and whether the kubelet answered. */
static void write_pods(struct out *o, struct exporter *e, const struct exp_topo *t)
{
	const char *none[] = { NULL };
	unsigned long failures = 0;
	int st;

	if (!e->pods)
		return;
	family(o, "rdmak_device_pod_info", EXP_GAUGE,
	       "A container that holds the RDMA device, from the kubelet's PodResources API; value is "
	       "always 1.");
	for (size_t i = 0; o->pods && i < t->n_devs; i++) {
		const char *l[12];
		size_t n = exporter_podmap_holders(o->pods, t->devs[i].name, 0, l);

		for (size_t k = 0; k < n; k++) {
			exporter_podmap_holders(o->pods, t->devs[i].name, k, l);
			sample_u64(o, "rdmak_device_pod_info", l, 1);
		}
	}
	st = exporter_pods_status(e, &failures, NULL, 0);
	family(o, "rdmak_exporter_pod_resources_up", EXP_GAUGE,
	       "1 when the kubelet's PodResources List answered last time (pod labels are on), else 0");
	sample_u64(o, "rdmak_exporter_pod_resources_up", none, st > 0);
	family(o, "rdmak_exporter_pod_resources_failures_total", EXP_COUNTER,
	       "PodResources List calls that failed (no socket, no answer before the deadline, an error)");
	sample_u64(o, "rdmak_exporter_pod_resources_failures_total", none, failures);
}

static void write_netlink_ports(struct out *o, const struct values *val)
{
	const char *none[] = { NULL };

	if (val->nl_ports < 0)
		return;
	family(o, "rdmak_exporter_hw_counters_netlink_ports", EXP_GAUGE,
	       "Ports whose hw_counters this scrape read through one RDMA netlink request each "
	       "(the others' through their files)");
	sample_u64(o, "rdmak_exporter_hw_counters_netlink_ports", none, (uint64_t)val->nl_ports);
}

static void write_errors(struct out *o, const struct exp_topo *t)
{
	static const char *const dirs[EXP_DIR_N] = { "", "counters/", "counters_ext/",
						     "hw_counters/" };
	const char *name = "rdmak_exporter_read_errors_total";
	char file[PATH_MAX];

	family(o, name, EXP_COUNTER,
	       "Reads of a counter or port file that failed (the sample was left out)");
	for (size_t i = 0; i < t->n_ports; i++) {
		const struct exp_port *p = &t->ports[i];
		uint64_t n = atomic_load(&p->state_errors);
		const char *l[] = { "file", file, NULL };

		if (n) {
			snprintf(file, sizeof(file),
				 "class/infiniband/%s/ports/%s/{state,phys_state,rate}", p->dev,
				 p->num_s);
			sample_u64(o, name, l, n);
		}
		for (size_t f = 0; f < t->n_families; f++) {
			if (!(n = atomic_load(&p->slots[f].errors)))
				continue;
			snprintf(file, sizeof(file), "class/infiniband/%s/ports/%s/%s%s", p->dev,
				 p->num_s, dirs[p->slots[f].dir], t->families[f].file);
			sample_u64(o, name, l, n);
		}
	}
	/* a device or port the load left out: once per topology, as the load read it once */
	for (size_t i = 0; i < t->n_skipped; i++) {
		const char *l[6] = { "file", t->skipped[i].path, NULL };

		exporter_labels_netns(t->skipped[i].netns, l, 2);
		sample_u64(o, name, l, 1);
	}
	for (size_t i = 0; i < t->n_devs; i++)
		for (size_t f = 0; f < t->n_families; f++) {
			const struct exp_device *d = &t->devs[i];
			uint64_t n = atomic_load(&d->slots[f].errors);
			const char *l[] = { "file", file, NULL };

			if (!n)
				continue;
			snprintf(file, sizeof(file), "class/infiniband/%s/hw_counters/%s", d->name,
				 t->families[f].file);
			sample_u64(o, name, l, n);
		}
}

/* ---- the idle VFs (--vf-series held) ------------------------------------------------------ */

/* Which rows are idle VFs now: a VF (with a PF on the host) that no container holds. -ENOMEM. */
static int idle_rows(struct out *o, struct exporter *e, const struct exp_topo *t)
{
	size_t rows = t->n_ports + t->n_devs;

	if (e->vf_series != EXPORTER_VF_HELD)
		return 0;
	o->idle = calloc(rows ? rows : 1, 1);
	if (!o->idle)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_devs; i++)
		o->idle[t->n_ports + i] = t->devs[i].pf != SIZE_MAX &&
					  !exporter_podmap_held(o->pods, t->devs[i].name);
	for (size_t i = 0; i < t->n_ports; i++)
		o->idle[i] = t->ports[i].dev_idx != SIZE_MAX &&
			     o->idle[t->n_ports + t->ports[i].dev_idx];
	return 0;
}

/* This scrape's values into the sums (idle_lock held). A counter's increase since its VF's last
 * value counts when the VF was idle then and is now: a VF a pod takes stops adding, one it gives
 * back starts again from where it is, and a sum never goes down (a value below the last one, a
 * concurrent scrape's older read or a counter reset, counts nothing until it passes it). The
 * exporter's first scrape takes the idle VFs' whole values, so that the sums start as the plain
 * sums. */
static void idle_update(struct exporter *e, const struct exp_topo *t, const struct values *val,
			const unsigned char *idle)
{
	const struct exp_idle *x = &t->idle;
	size_t nf = val->stride;

	for (size_t r = 0; r < t->n_ports + t->n_devs; r++) {
		size_t k = x->key[r];

		if (k == SIZE_MAX)
			continue;
		for (size_t f = 0; f < t->n_families; f++) {
			size_t at = r * nf + f;
			uint64_t v = val->v[at];

			if (!val->ok[at])
				continue;
			if (!x->seen[at]) {
				x->seen[at] = 1;
				x->last[at] = v;
				if (!e->idle_started && idle[r])
					x->sum[k * nf + f] += v;
			} else if (v > x->last[at]) {
				if (idle[r] && x->was_idle[r])
					x->sum[k * nf + f] += v - x->last[at];
				x->last[at] = v;
			}
		}
		x->was_idle[r] = idle[r];
	}
	e->idle_started = true;
}

static void write_idle(struct out *o, struct exporter *e, const struct exp_topo *t,
		       const struct values *val)
{
	const struct exp_idle *x = &t->idle;
	size_t nf = val->stride, *count;

	if (!o->idle || !x->n_keys)
		return;
	count = calloc(x->n_keys, sizeof(*count));
	if (!count) {
		o->b->oom = true;
		return;
	}
	for (size_t i = 0; i < t->n_ports; i++)
		if (o->idle[i])
			count[x->key[i]]++;
	family(o, "rdmak_idle_vfs", EXP_GAUGE,
	       "VFs of the PF's port that no pod holds: their counters are summed in the "
	       "rdmak_idle_vfs_* series of the PF's port, not served one by one");
	for (size_t k = 0; k < x->n_keys; k++) {
		const char *l[] = { "device", t->devs[x->keys[k].pf].name, "port",
				    x->keys[k].port_s, NULL };

		if (x->keys[k].port)
			sample_u64(o, "rdmak_idle_vfs", l, count[k]);
	}
	free(count);
	pthread_mutex_lock(&e->idle_lock);
	idle_update(e, t, val, o->idle);
	for (size_t f = 0; f < t->n_families; f++) {
		bool any = false;

		for (size_t k = 0; k < x->n_keys; k++) {
			const char *l[] = { "device", t->devs[x->keys[k].pf].name,
					    x->keys[k].port ? "port" : NULL, x->keys[k].port_s,
					    NULL };

			if (!x->has[k * nf + f])
				continue;
			if (!any)
				family(o, x->names[f], EXP_COUNTER,
				       "The counter of the same name summed over the PF port's idle VFs "
				       "(no pod holds them): what they counted while idle");
			any = true;
			sample_u64(o, x->names[f], l, x->sum[k * nf + f]);
		}
	}
	pthread_mutex_unlock(&e->idle_lock);
}

static double elapsed_s(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the scrape --------------------------------------------------------------------------------
 */

static int refresh_with(struct exporter *e, const struct exp_views *views, struct hw_error *err);

/* The device set changed (the host's, or that of the pods' namespaces) or a port vanished: load
 * the topology again (write lock). */
static void reload_if_needed(struct exporter *e, const struct exp_views *views)
{
	char **set = NULL;
	size_t n = 0;
	bool changed;

	pthread_rwlock_rdlock(&e->lock);
	changed = atomic_load(&e->stale) ||
		  (exporter_devset_read(e->ctx, &set, &n) == 0 &&
		   !exporter_devset_equal(set, n, e->topo->devset, e->topo->n_devset)) ||
		  !exporter_views_match(views, e->topo);
	pthread_rwlock_unlock(&e->lock);
	exporter_devset_free(set, n);
	if (changed) {
		struct hw_error err;

		/* a failed load keeps the topology there was; rdmak_exporter_topology_errors_total
		 * says so */
		refresh_with(e, views, &err);
	}
}

static void write_netns(struct out *o, struct exporter *e)
{
	const char *none[] = { NULL };

	if (!e->netns_dir)
		return;
	family(o, "rdmak_exporter_netns_scanned", EXP_GAUGE,
	       "Network namespaces looked at by this scrape for RDMA devices (--netns-dir; 0 "
	       "unless the RDMA netns mode is exclusive)");
	sample_u64(o, "rdmak_exporter_netns_scanned", none, atomic_load(&e->netns_scanned));
	family(o, "rdmak_exporter_netns_errors_total", EXP_COUNTER,
	       "Network namespaces that could not be entered, mounted or listed (left out of "
	       "that scrape)");
	sample_u64(o, "rdmak_exporter_netns_errors_total", none, atomic_load(&e->netns_errors));
}

int exporter_scrape(struct exporter *e, enum exporter_format fmt, char **ret, size_t *ret_len)
{
	struct values val = { 0 };
	struct exporter_buf b = { 0 };
	struct out o = { .b = &b, .fmt = fmt };
	struct exp_podmap *pm = NULL;
	struct exp_views views = { 0 };
	struct timespec t0;
	int r;

	if (atomic_fetch_add(&e->inflight, 1) >= e->max_scrapes) {
		atomic_fetch_sub(&e->inflight, 1);
		return -EBUSY;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = exporter_views_open(e, &views);
	if (r < 0)
		goto out;
	reload_if_needed(e, &views);
	exporter_pods_refresh(e);
	/* the previous answer's size and a margin: the buffer rarely grows */
	r = exporter_buf_init(&b, atomic_load(&e->last_len) / 8 * 9);
	if (r < 0)
		goto out;
	pthread_rwlock_rdlock(&e->lock);
	o.pods = pm = exporter_podmap_get(e, e->topo);
	r = read_all(e, e->topo, &views, &val);
	if (r == 0)
		r = idle_rows(&o, e, e->topo);
	if (r == 0)
		r = row_labels(&o, e->topo);
	if (r == 0) {
		const struct exp_topo *t = e->topo;
		const char *none[] = { NULL };

		write_state(&o, t, &val);
		write_families(&o, t, &val, 0, exporter_n_node_families, false);
		write_info(&o, t);
		write_families(&o, t, &val, exporter_n_node_families, t->n_port_families, false);
		write_families(&o, t, &val, t->n_port_families, t->n_families, true);
		write_idle(&o, e, t, &val);
		write_pcie(&o, t, &val);
		write_doctor(&o, t);
		write_pods(&o, e, t);
		exporter_rdma_scrape(e, t, &val.rdma, &views, &b, fmt);
		write_netns(&o, e);
		write_errors(&o, t);
		write_netlink_ports(&o, &val);
		family(&o, "rdmak_exporter_topology_loads_total", EXP_COUNTER,
		       "Loads of the hardware model: at start, when the set of RDMA devices "
		       "changed, at each refresh");
		sample_u64(&o, "rdmak_exporter_topology_loads_total", none, atomic_load(&e->loads));
		family(&o, "rdmak_exporter_topology_errors_total", EXP_COUNTER,
		       "Loads of the hardware model that failed (the previous topology was kept)");
		sample_u64(&o, "rdmak_exporter_topology_errors_total", none,
			   atomic_load(&e->load_errors));
		family(&o, "rdmak_exporter_scrape_duration_seconds", EXP_GAUGE,
		       "How long this scrape took to read and format, up to this line");
		write_double(&o, "rdmak_exporter_scrape_duration_seconds", none, elapsed_s(&t0));
		if (fmt == EXPORTER_OPENMETRICS)
			exporter_buf_puts(&b, "# EOF\n");
		exporter_buf_putc(&b, '\0'); /* not counted: a string for whoever wants one */
	}
	pthread_rwlock_unlock(&e->lock);
	exporter_podmap_unref(e, pm);
	if (r == 0 && b.oom)
		r = -ENOMEM;
	if (r == 0) {
		atomic_store(&e->last_len, b.len);
		*ret = b.p;
		*ret_len = b.len - 1;
		b.p = NULL;
	}
out:
	exporter_views_close(&views);
	exporter_buf_free(&b);
	exporter_buf_free(&o.lab);
	free(o.off);
	free(o.idle);
	values_free(&val);
	atomic_fetch_sub(&e->inflight, 1);
	return r;
}

/* ---- life cycle
 * ---------------------------------------------------------------------------------- */

int exporter_new(struct hw_ctx *ctx, unsigned max_scrapes, struct exporter **ret,
		 struct hw_error *err)
{
	struct exporter *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return -ENOMEM;
	e->ctx = ctx;
	e->max_scrapes = max_scrapes ? max_scrapes : 1;
	pthread_rwlock_init(&e->lock, NULL);
	pthread_mutex_init(&e->idle_lock, NULL);
	r = exporter_topo_load(ctx, NULL, &e->topo, err);
	if (r < 0) {
		pthread_rwlock_destroy(&e->lock);
		pthread_mutex_destroy(&e->idle_lock);
		free(e);
		return r;
	}
	atomic_store(&e->loads, 1);
	exporter_set_io_uring(e, true);
	*ret = e;
	return 0;
}

int exporter_set_io_uring(struct exporter *e, bool on)
{
	int st = 0;
	struct exporter_reader *r = on ? exporter_reader_new(true, &st) : NULL;

	if (on && !r)
		return -ENOMEM;
	exporter_reader_free(r);
	atomic_store(&e->io_uring, st > 0);
	return st;
}

int exporter_refresh(struct exporter *e, struct hw_error *err)
{
	struct exp_views views;
	int r = exporter_views_open(e, &views);

	if (r < 0) {
		atomic_fetch_add(&e->load_errors, 1);
		return r;
	}
	r = refresh_with(e, &views, err);
	exporter_views_close(&views);
	return r;
}

static int refresh_with(struct exporter *e, const struct exp_views *views, struct hw_error *err)
{
	struct exp_topo *t = NULL, *old;
	int r;

	/* loaded outside the lock: scrapes go on with the old topology meanwhile */
	r = exporter_topo_load(e->ctx, views, &t, err);
	if (r < 0) {
		atomic_fetch_add(&e->load_errors, 1);
		return r;
	}
	exporter_rdma_resolve(e, t);
	pthread_rwlock_wrlock(&e->lock);
	old = e->topo;
	exporter_idle_carry(old, t); /* no scrape runs: the write lock */
	e->topo = t;
	atomic_store(&e->stale, false);
	pthread_rwlock_unlock(&e->lock);
	atomic_fetch_add(&e->loads, 1);
	exporter_topo_free(old);
	return 0;
}

int exporter_vf_series_parse(const char *s, enum exporter_vf_series *ret)
{
	if (!strcmp(s, "held"))
		*ret = EXPORTER_VF_HELD;
	else if (!strcmp(s, "all"))
		*ret = EXPORTER_VF_ALL;
	else
		return -EINVAL;
	return 0;
}

void exporter_set_vf_series(struct exporter *e, enum exporter_vf_series s)
{
	e->vf_series = s;
}

unsigned long exporter_loads(struct exporter *e)
{
	return atomic_load(&e->loads);
}

void exporter_free(struct exporter *e)
{
	if (!e)
		return;
	exporter_topo_free(e->topo);
	exporter_pods_free(e->pods);
	exporter_rdma_close(e);
	free(e->netns_dir);
	if (e->rdma_procfs)
		close(e->rdma_procfs_fd);
	pthread_rwlock_destroy(&e->lock);
	pthread_mutex_destroy(&e->idle_lock);
	free(e);
}
