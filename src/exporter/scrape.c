/* SPDX-License-Identifier: Apache-2.0 */
/* One scrape: read every counter of the cached topology, then write the families one after the
 * other (the text format wants a family's samples together), in the Prometheus text format
 * 0.0.4 or OpenMetrics 1.0.0. Values are printed as exact integers: the kernel's counters are
 * 64-bit, and a float's 17 digits would round them past 2^53. */
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

/* ---- the format --------------------------------------------------------------------------------
 */

enum exporter_format exporter_format_from_accept(const char *accept)
{
	const char *p = accept;

	/* "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,..." as
	 * Prometheus sends it: the first media range that is OpenMetrics, unless its q is 0 */
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		while (len && (*p == ' ' || *p == '\t'))
			p++, len--;
		if (len >= 28 && !strncasecmp(p, "application/openmetrics-text", 28)) {
			const char *q = memmem(p, len, "q=", 2);

			if (!q || strtod(q + 2, NULL) > 0)
				return EXPORTER_OPENMETRICS;
		}
		p = end ? end + 1 : NULL;
	}
	return EXPORTER_TEXT;
}

const char *exporter_content_type(enum exporter_format f)
{
	return f == EXPORTER_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

struct out {
	FILE *f;
	enum exporter_format fmt;
	const struct exp_podmap *pods; /* which pod holds a device (pods.c); NULL none */
};

/* A label value: backslash, double quote and newline escaped (both formats). */
static void put_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f), fputc(*s, f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* The family's header. OpenMetrics names a counter's family without its _total. */
static void family(struct out *o, const char *name, enum exp_type type, const char *help)
{
	size_t n = strlen(name);
	int base = (int)n;

	if (o->fmt == EXPORTER_OPENMETRICS && type == EXP_COUNTER && n > 6 &&
	    !strcmp(name + n - 6, "_total"))
		base -= 6;
	fprintf(o->f, "# HELP %.*s %s\n# TYPE %.*s %s\n", base, name, help, base, name,
		type == EXP_COUNTER ? "counter" : "gauge");
}

/* name{k="v",...} value: labels as a NULL-ended list of key, value pairs */
static void sample_u64(struct out *o, const char *name, const char *const *labels, uint64_t v)
{
	fputs(name, o->f);
	for (size_t i = 0; labels[i]; i += 2) {
		fprintf(o->f, "%c%s=\"", i ? ',' : '{', labels[i]);
		put_value(o->f, labels[i + 1]);
		fputc('"', o->f);
	}
	fprintf(o->f, "%s %" PRIu64 "\n", labels[0] ? "}" : "", v);
}

/* ---- reading ------------------------------------------------------------------------------------
 */

/* One sysfs attribute under a folder fd: one path component, never followed if a link, never
 * blocking (a FIFO planted in a test tree reads as an error). The bytes, or -errno. */
static ssize_t read_attr(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0) {
		buf[n] = '\0';
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
			buf[--n] = '\0';
	}
	return n;
}

/* 1: a value; 0: "N/A (no PMA)" (a port without a performance management agent: no value, and
 * no error, as node_exporter skips it); -errno: unreadable or not a number. */
static int read_counter(int dirfd, const char *name, uint64_t *ret)
{
	char buf[64];
	unsigned long long v;
	ssize_t n = read_attr(dirfd, name, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (!strncmp(buf, "N/A", 3))
		return 0;
	if (str_to_u64(buf, 10, &v) < 0)
		return -EINVAL;
	*ret = v;
	return 1;
}

/* What one scrape read: per port (then per device) and family, a value or none. */
struct values {
	uint64_t *v;
	unsigned char *ok;
	size_t stride;
	/* state_id, physical_state_id, rate_bytes_per_second per port */
	uint64_t (*st)[3];
	unsigned char (*st_ok)[3];
	struct hw_pci_link *links; /* per device */
	unsigned char *link_ok;
};

static void values_free(struct values *v)
{
	free(v->v);
	free(v->ok);
	free(v->st);
	free(v->st_ok);
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

static void read_port_state(struct exporter *e, struct exp_port *p, uint64_t st[3],
			    unsigned char ok[3])
{
	static const char *const files[] = { "state", "phys_state", "rate" };
	char buf[64];

	for (int i = 0; i < 3; i++) {
		ssize_t n = read_attr(p->fd[EXP_DIR_NONE], files[i], buf, sizeof(buf));
		int num;

		if (n == -ENOENT) {
			/* the port's folder is gone with its device: drop its series, reload */
			atomic_store(&e->stale, true);
			return;
		}
		if (n >= 0 && i < 2 && (num = hw_parse_attr_num(buf)) >= 0) {
			st[i] = (uint64_t)num;
			ok[i] = 1;
		} else if (n >= 0 && i == 2 && parse_rate(buf, &st[i]) == 0) {
			ok[i] = 1;
		} else {
			atomic_fetch_add(&p->state_errors, 1);
		}
	}
}

static void read_slots(const struct exp_topo *t, const int *fds, struct exp_slot *slots,
		       uint64_t *v, unsigned char *ok)
{
	for (size_t f = 0; f < t->n_families; f++) {
		const struct exp_family *fam = &t->families[f];
		int r;

		if (slots[f].dir == EXP_DIR_NONE || fds[slots[f].dir] < 0)
			continue;
		r = read_counter(fds[slots[f].dir], fam->file, &v[f]);
		if (r < 0)
			atomic_fetch_add(&slots[f].errors, 1);
		else if (r > 0) {
			v[f] *= fam->scale;
			ok[f] = 1;
		}
	}
}

static int read_all(struct exporter *e, const struct exp_topo *t, struct values *val)
{
	size_t rows = t->n_ports + t->n_devs;

	val->stride = t->n_families ? t->n_families : 1;
	val->v = calloc(rows ? rows * val->stride : 1, sizeof(*val->v));
	val->ok = calloc(rows ? rows * val->stride : 1, 1);
	val->st = calloc(t->n_ports ? t->n_ports : 1, sizeof(*val->st));
	val->st_ok = calloc(t->n_ports ? t->n_ports : 1, sizeof(*val->st_ok));
	val->links = calloc(t->n_devs ? t->n_devs : 1, sizeof(*val->links));
	val->link_ok = calloc(t->n_devs ? t->n_devs : 1, 1);
	if (!val->v || !val->ok || !val->st || !val->st_ok || !val->links || !val->link_ok)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_ports; i++) {
		struct exp_port *p = &t->ports[i];

		read_port_state(e, p, val->st[i], val->st_ok[i]);
		if (!val->st_ok[i][0] && !val->st_ok[i][1] && !val->st_ok[i][2] &&
		    atomic_load(&e->stale))
			continue; /* gone */
		read_slots(t, p->fd, p->slots, val->v + i * val->stride, val->ok + i * val->stride);
	}
	for (size_t i = 0; i < t->n_devs; i++) {
		struct exp_device *d = &t->devs[i];
		int fds[EXP_DIR_N] = { -1, -1, -1, d->hw_fd };

		read_slots(t, fds, d->slots, val->v + (t->n_ports + i) * val->stride,
			   val->ok + (t->n_ports + i) * val->stride);
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
		const char *l[16] = {
			"device",  d->name,    "board_id",  d->board_id, "firmware_version",
			d->fw_ver, "hca_type", d->hca_type, NULL
		};

		exporter_podmap_labels(o->pods, d->name, l, 8);
		sample_u64(o, "node_infiniband_info", l, 1);
	}
	for (int k = 0; k < 3; k++) {
		family(o, st[k].name, EXP_GAUGE, st[k].help);
		for (size_t i = 0; i < t->n_ports; i++) {
			const char *l[12] = { "device", t->ports[i].dev, "port", t->ports[i].num_s,
					      NULL };

			exporter_podmap_labels(o->pods, t->ports[i].dev, l, 4);
			if (val->st_ok[i][k])
				sample_u64(o, st[k].name, l, val->st[i][k]);
		}
	}
}

static void write_families(struct out *o, const struct exp_topo *t, const struct values *val,
			   size_t from, size_t to, bool devices)
{
	for (size_t f = from; f < to; f++) {
		const struct exp_family *fam = &t->families[f];
		bool any = false;
		size_t n = devices ? t->n_devs : t->n_ports;

		for (size_t i = 0; i < n; i++) {
			size_t row = devices ? t->n_ports + i : i;

			if (!val->ok[row * val->stride + f])
				continue;
			if (!any)
				family(o, fam->name, EXP_COUNTER, fam->help);
			any = true;
			if (devices) {
				const char *l[12] = { "device", t->devs[i].name, NULL };

				exporter_podmap_labels(o->pods, t->devs[i].name, l, 2);
				sample_u64(o, fam->name, l, val->v[row * val->stride + f]);
			} else {
				const char *l[12] = { "device", t->ports[i].dev, "port",
						      t->ports[i].num_s, NULL };

				exporter_podmap_labels(o->pods, t->ports[i].dev, l, 4);
				sample_u64(o, fam->name, l, val->v[row * val->stride + f]);
			}
		}
	}
}

static void write_info(struct out *o, const struct exp_topo *t)
{
	family(o, "rdmak_port_info", EXP_GAUGE,
	       "A port's link layer, netdev (ibdev2netdev's), GID 0 and port GUID; value is always "
	       "1.");
	for (size_t i = 0; i < t->n_ports; i++) {
		const struct exp_port *p = &t->ports[i];
		const char *l[20] = { "device",	    p->dev,	   "port",	p->num_s,
				      "link_layer", p->link_layer, "netdev",	p->netdev,
				      "gid",	    p->gid,	   "port_guid", p->port_guid,
				      NULL };

		exporter_podmap_labels(o->pods, p->dev, l, 12);
		sample_u64(o, "rdmak_port_info", l, 1);
	}
}

static void write_double(struct out *o, const char *name, const char *const *labels, double v)
{
	fputs(name, o->f);
	for (size_t i = 0; labels[i]; i += 2) {
		fprintf(o->f, "%c%s=\"", i ? ',' : '{', labels[i]);
		put_value(o->f, labels[i + 1]);
		fputc('"', o->f);
	}
	fprintf(o->f, "%s %.9g\n", labels[0] ? "}" : "", v);
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
			const char *l[12] = { "device", t->devs[i].name, "pci", t->devs[i].bdf,
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
			exporter_podmap_labels(o->pods, t->devs[i].name, l, 4);
			write_double(o, fams[k].name, l, v);
		}
	}
}

static void write_doctor(struct out *o, const struct exp_topo *t)
{
	family(o, "rdmak_doctor_check", EXP_GAUGE,
	       "A finding of `rdmak doctor` (node checks), the worst per check and object; value "
	       "is always 1.");
	for (size_t i = 0; i < t->n_findings; i++) {
		const struct exp_finding *f = &t->findings[i];
		const char *l[] = { "check",   f->check, "object",
				    f->object, "status", doctor_status_name(f->status),
				    NULL };

		sample_u64(o, "rdmak_doctor_check", l, 1);
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

static double elapsed_s(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the scrape --------------------------------------------------------------------------------
 */

/* The device set changed or a port vanished: load the topology again (write lock). */
static void reload_if_needed(struct exporter *e)
{
	char **set = NULL;
	size_t n = 0;
	bool changed;

	pthread_rwlock_rdlock(&e->lock);
	changed = atomic_load(&e->stale) ||
		  (exporter_devset_read(e->ctx, &set, &n) == 0 &&
		   !exporter_devset_equal(set, n, e->topo->devset, e->topo->n_devset));
	pthread_rwlock_unlock(&e->lock);
	exporter_devset_free(set, n);
	if (changed) {
		struct hw_error err;

		/* a failed load keeps the topology there was; rdmak_exporter_topology_errors_total
		 * says so */
		exporter_refresh(e, &err);
	}
}

int exporter_scrape(struct exporter *e, enum exporter_format fmt, char **ret, size_t *ret_len)
{
	struct values val = { 0 };
	struct out o = { .fmt = fmt };
	struct exp_podmap *pm = NULL;
	struct timespec t0;
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (atomic_fetch_add(&e->inflight, 1) >= e->max_scrapes) {
		atomic_fetch_sub(&e->inflight, 1);
		return -EBUSY;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	reload_if_needed(e);
	exporter_pods_refresh(e);
	o.f = open_memstream(&buf, &len);
	if (!o.f) {
		r = -ENOMEM;
		goto out;
	}
	pthread_rwlock_rdlock(&e->lock);
	o.pods = pm = exporter_podmap_get(e, e->topo);
	r = read_all(e, e->topo, &val);
	if (r == 0) {
		const struct exp_topo *t = e->topo;
		const char *none[] = { NULL };

		write_state(&o, t, &val);
		write_families(&o, t, &val, 0, exporter_n_node_families, false);
		write_info(&o, t);
		write_families(&o, t, &val, exporter_n_node_families, t->n_port_families, false);
		write_families(&o, t, &val, t->n_port_families, t->n_families, true);
		write_pcie(&o, t, &val);
		write_doctor(&o, t);
		write_pods(&o, e, t);
		exporter_rdma_scrape(e, o.f, fmt);
		write_errors(&o, t);
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
			fputs("# EOF\n", o.f);
	}
	pthread_rwlock_unlock(&e->lock);
	exporter_podmap_unref(e, pm);
	if (fclose(o.f) != 0 && r == 0)
		r = -ENOMEM;
	if (r == 0) {
		*ret = buf;
		*ret_len = len;
		buf = NULL;
	}
out:
	free(buf);
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
	r = exporter_topo_load(ctx, &e->topo, err);
	if (r < 0) {
		pthread_rwlock_destroy(&e->lock);
		free(e);
		return r;
	}
	atomic_store(&e->loads, 1);
	*ret = e;
	return 0;
}

int exporter_refresh(struct exporter *e, struct hw_error *err)
{
	struct exp_topo *t = NULL, *old;
	int r;

	/* loaded outside the lock: scrapes go on with the old topology meanwhile */
	r = exporter_topo_load(e->ctx, &t, err);
	if (r < 0) {
		atomic_fetch_add(&e->load_errors, 1);
		return r;
	}
	pthread_rwlock_wrlock(&e->lock);
	old = e->topo;
	e->topo = t;
	atomic_store(&e->stale, false);
	pthread_rwlock_unlock(&e->lock);
	atomic_fetch_add(&e->loads, 1);
	exporter_topo_free(old);
	return 0;
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
	if (e->rdma_procfs)
		close(e->rdma_procfs_fd);
	pthread_rwlock_destroy(&e->lock);
	free(e);
}

/* ---- for the families written in other files ---------------------------------------------------
 */

void exporter_out_family(FILE *f, enum exporter_format fmt, const char *name, enum exp_type type,
			 const char *help)
{
	struct out o = { .f = f, .fmt = fmt };

	family(&o, name, type, help);
}

void exporter_out_sample(FILE *f, const char *name, const char *const *labels, uint64_t v)
{
	struct out o = { .f = f };

	sample_u64(&o, name, labels, v);
}
