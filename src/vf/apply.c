/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak vf apply: a plan's live steps, in the order the kernel needs them, undone in reverse
 * when one fails. The plan is the one `vf plan` prints, so apply never does what plan did not
 * say. Nothing here prints: what was done goes into the report's lines. */
#include "vf/vf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "nl/nl.h"
#include "util/fileio.h"
#include "util/strv.h"

enum undo_kind { UNDO_NUMVFS, UNDO_MTU, UNDO_DOWN, UNDO_GUID, UNDO_UNBIND, UNDO_VF_MTU };

struct undo {
	enum undo_kind kind;
	const char *bdf, *netdev;
	long long value;	       /* UNDO_GUID: the VF index */
	uint64_t node_guid, port_guid; /* UNDO_GUID: what the PF reported before the change */
	char vf[32]; /* UNDO_UNBIND: the VF's PCI address; UNDO_GUID: the VF's, when this run bound
		      * it again to read the new GUIDs (undo binds it again after the old ones);
		      * UNDO_VF_MTU: the VF's netdev */
	uint64_t had_driver[4]; /* UNDO_NUMVFS: the VFs (by index < 256) bound before */
};

struct run {
	struct hw_ctx *ctx;
	struct nl_rt *rt;
	const struct vf_apply_opts *o;
	struct vf_apply_report *rep;
	struct undo *undo; /* grows: a GUID step pushes one per VF (up to 127 on mlx5) */
	size_t n_undo;
	/* the PF whose VFs' GUIDs this run changed, and which VFs (their drivers must probe them
	 * again); steps run PF by PF */
	const char *guids_of;
	const json_t *guid_vfs;
};

/* Whether index i is in a step's vf_indices. */
static bool listed(const json_t *indices, long long i)
{
	size_t k;
	json_t *v;

	json_array_foreach(indices, k, v)
	{
		if (json_integer_value(v) == i)
			return true;
	}
	return false;
}

static int report(struct vf_apply_report *rep, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int report(struct vf_apply_report *rep, const char *fmt, ...)
{
	va_list ap;
	char *line;
	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	char **g = realloc(rep->lines, (rep->n_lines + 1) * sizeof(*g));
	if (!g) {
		free(line);
		return -ENOMEM;
	}
	rep->lines = g;
	rep->lines[rep->n_lines++] = line;
	return 0;
}

/* One sysfs store: the attribute's -errno is the kernel's answer. */
static int write_attr(struct run *x, const char *path, const char *text)
{
	int fd = hw_ctx_open(x->ctx, HW_ROOT_SYSFS, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int r = w < 0 ? -errno : (size_t)w != len ? -EIO : 0;
	close(fd);
	return r;
}

static int write_numvfs(struct run *x, const char *bdf, long long n)
{
	char path[96], text[24];
	snprintf(path, sizeof(path), "bus/pci/devices/%s/sriov_numvfs", bdf);
	snprintf(text, sizeof(text), "%lld\n", n);
	return write_attr(x, path, text);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static bool exists(struct hw_ctx *ctx, const char *path)
{
	int fd = hw_ctx_open(ctx, HW_ROOT_SYSFS, path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Each VF's virtfnN link, and with sriov_drivers_autoprobe its netdev: the PCI core adds the
 * VFs one by one and the driver probes them after, so they come some time after the write. */
static int wait_vfs(struct run *x, const char *bdf, long long n)
{
	char path[128], ap[8] = "1";
	snprintf(path, sizeof(path), "bus/pci/devices/%s/sriov_drivers_autoprobe", bdf);
	hw_ctx_read(x->ctx, HW_ROOT_SYSFS, path, ap, sizeof(ap) - 1);
	bool probe = ap[0] == '1';
	long long deadline = now_ms() + x->o->timeout_ms;
	for (long long i = 0; i < n; i++) {
		for (;;) {
			snprintf(path, sizeof(path), "bus/pci/devices/%s/virtfn%lld", bdf, i);
			bool ok = exists(x->ctx, path);
			if (ok && probe) {
				snprintf(path, sizeof(path), "bus/pci/devices/%s/virtfn%lld/net",
					 bdf, i);
				ok = exists(x->ctx, path);
			}
			if (ok)
				break;
			if (now_ms() > deadline)
				return report(x->rep,
					      "%s: VF %lld did not appear (%s) within %d ms", bdf,
					      i, probe ? "virtfn link and netdev" : "virtfn link",
					      x->o->timeout_ms) < 0
					       ? -ENOMEM
					       : -ETIMEDOUT;
			usleep(20 * 1000);
		}
	}
	return 0;
}

static int push(struct run *x, const struct undo *u)
{
	struct undo *g = realloc(x->undo, (x->n_undo + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	x->undo = g;
	x->undo[x->n_undo++] = *u;
	return 0;
}

static int push_undo(struct run *x, enum undo_kind k, const char *bdf, const char *netdev,
		     long long v)
{
	return push(x, &(struct undo){ .kind = k, .bdf = bdf, .netdev = netdev, .value = v });
}

static int link_change(struct run *x, const char *netdev, unsigned mtu, int up)
{
	struct nl_link l;
	struct nl_link_change c;
	int r = x->rt ? 0 : nl_rt_open(-1, &x->rt);
	if (r >= 0)
		r = nl_link_get(x->rt, netdev, &l);
	if (r <= 0)
		return r < 0 ? r : -ENODEV;
	nl_link_change_init(&c);
	c.mtu = mtu;
	c.up = up;
	return nl_link_change(x->rt, l.ifindex, &c);
}

/* Every VF's node and port GUID, each VF's old pair saved first (as the PF reports it) so that
 * undo puts it back. The VFs exist by now (wait_vfs); the driver reads a VF's GUID when it
 * probes the VF (mlx5), so the GUIDs go before the VFs are bound (or a bound VF is bound again
 * after, as sriov-network-operator and ib-sriov-cni do). */
static int set_guids(struct run *x, const json_t *pf, const json_t *indices)
{
	const char *bdf = json_string_value(json_object_get(pf, "pf"));
	const char *netdev = json_string_value(json_object_get(pf, "netdev"));
	const char *g = json_string_value(json_object_get(pf, "pf_guid"));
	struct nl_vf_guid *old = NULL;
	size_t n_old = 0;
	uint64_t pg;
	struct nl_link l;
	if (!g || vf_guid_parse(g, &pg) < 0)
		return -ENODATA;
	int r = x->rt ? 0 : nl_rt_open(-1, &x->rt);
	if (r >= 0)
		r = nl_link_get(x->rt, netdev, &l);
	if (r == 0)
		r = -ENODEV;
	if (r >= 0)
		r = nl_link_get_vf_guids(x->rt, l.ifindex, &old, &n_old);
	for (size_t n = 0; r >= 0 && n < json_array_size(indices); n++) {
		long long i = json_integer_value(json_array_get(indices, n));
		uint64_t v = vf_guid(pg, (unsigned)i);
		size_t k = 0;
		while (k < n_old && old[k].vf != (uint32_t)i)
			k++;
		if (k == n_old)
			r = report(
				x->rep,
				"%s: VF %lld: the PF does not report its GUIDs: undo cannot restore them",
				netdev, i);
		else
			/* saved before the change: a VF whose node GUID is set and port GUID fails
			 * still gets both back */
			r = push(x, &(struct undo){ .kind = UNDO_GUID,
						    .bdf = bdf,
						    .netdev = netdev,
						    .value = i,
						    .node_guid = old[k].node_guid,
						    .port_guid = old[k].port_guid });
		if (r >= 0)
			r = nl_link_set_vf_guid(x->rt, l.ifindex, (uint32_t)i, v, v);
	}
	free(old);
	return r;
}

static int restore_guid(struct run *x, const struct undo *u)
{
	struct nl_link l;
	int r = x->rt ? 0 : nl_rt_open(-1, &x->rt);
	if (r >= 0)
		r = nl_link_get(x->rt, u->netdev, &l);
	if (r == 0)
		r = -ENODEV;
	if (r >= 0)
		r = nl_link_set_vf_guid(x->rt, l.ifindex, (uint32_t)u->value, u->node_guid,
					u->port_guid);
	return r;
}

/* VF i's PCI address, from the PF's virtfnI link. */
static int vf_address(struct run *x, const char *pf, long long i, char *ret, size_t len)
{
	char path[96], target[256];
	snprintf(path, sizeof(path), "bus/pci/devices/%s/virtfn%lld", pf, i);
	ssize_t n =
		readlinkat(hw_ctx_root_fd(x->ctx, HW_ROOT_SYSFS), path, target, sizeof(target) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= len)
		return -ENAMETOOLONG;
	snprintf(ret, len, "%s", base);
	return 0;
}

/* The VF's driver, and its netdev (deviceType netdevice: the only one rdmak takes): probe
 * normally runs in the store, but a driver may probe asynchronously. */
static int wait_bound(struct run *x, const char *vf)
{
	char drv[96], net[96];
	snprintf(drv, sizeof(drv), "bus/pci/devices/%s/driver", vf);
	snprintf(net, sizeof(net), "bus/pci/devices/%s/net", vf);
	for (long long deadline = now_ms() + x->o->timeout_ms;
	     !exists(x->ctx, drv) || !exists(x->ctx, net);) {
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(20 * 1000);
	}
	return 0;
}

/* Bind as sriov-network-operator's BindDefaultDriver does: clear driver_override (a VF left
 * for vfio-pci would not match its own driver otherwise), then drivers_probe, so that the PCI
 * core picks the VF's driver by its IDs (mlx5: the PF's own, mlx5_core). */
static int bind_vf(struct run *x, const char *vf)
{
	char path[96], text[40];
	snprintf(path, sizeof(path), "bus/pci/devices/%s/driver_override", vf);
	int r = write_attr(x, path, "\n");
	snprintf(text, sizeof(text), "%s\n", vf);
	if (r >= 0)
		r = write_attr(x, "bus/pci/drivers_probe", text);
	return r;
}

static int unbind_vf(struct run *x, const char *vf)
{
	char path[96], text[40];
	snprintf(path, sizeof(path), "bus/pci/devices/%s/driver/unbind", vf);
	snprintf(text, sizeof(text), "%s\n", vf);
	return write_attr(x, path, text);
}

/* VF i of pf is about to be bound again for its new GUIDs: its GUID undo entry learns the VF's
 * address, so that undo binds it again once more after putting the old GUIDs back (its driver
 * reads them at probe). */
static void mark_rebound(struct run *x, const char *pf, long long i, const char *vf)
{
	for (size_t k = 0; k < x->n_undo; k++) {
		struct undo *u = &x->undo[k];

		if (u->kind == UNDO_GUID && u->value == i && !strcmp(u->bdf, pf))
			snprintf(u->vf, sizeof(u->vf), "%s", vf);
	}
}

/* the VF unbound if a driver holds it, bound, and waited for: for its new GUIDs, and on undo
 * for its old ones */
static int rebind_vf(struct run *x, const char *vf)
{
	char path[96];
	int r = 0;

	snprintf(path, sizeof(path), "bus/pci/devices/%s/driver", vf);
	if (exists(x->ctx, path))
		r = unbind_vf(x, vf);
	if (r >= 0 && (r = bind_vf(x, vf)) >= 0)
		r = wait_bound(x, vf);
	return r;
}

/* The listed VFs: one without a driver is bound (and unbound on undo); one whose GUIDs this run
 * set while it was bound is unbound and bound again, so that its driver reads them, as
 * sriov-network-operator (configSriovVFDevices) and ib-sriov-cni (RebindVf) do. No other VF is
 * touched. */
static int bind_vfs(struct run *x, const char *pf, const json_t *indices, int *ret_bound,
		    int *ret_rebound)
{
	char vf[32], path[96];
	int r = 0;
	*ret_bound = *ret_rebound = 0;
	for (size_t n = 0; r >= 0 && n < json_array_size(indices); n++) {
		long long i = json_integer_value(json_array_get(indices, n));
		if ((r = vf_address(x, pf, i, vf, sizeof(vf))) < 0)
			break;
		snprintf(path, sizeof(path), "bus/pci/devices/%s/driver", vf);
		if (!exists(x->ctx, path)) {
			struct undo u = { .kind = UNDO_UNBIND, .bdf = pf };
			snprintf(u.vf, sizeof(u.vf), "%s", vf);
			if ((r = bind_vf(x, vf)) >= 0 && (r = push(x, &u)) >= 0 &&
			    (r = wait_bound(x, vf)) >= 0)
				(*ret_bound)++;
		} else if (x->guids_of && !strcmp(x->guids_of, pf) && listed(x->guid_vfs, i)) {
			mark_rebound(x, pf, i, vf);
			if ((r = rebind_vf(x, vf)) >= 0)
				(*ret_rebound)++;
		}
		if (r < 0)
			report(x->rep, "%s: VF %lld (%s): %s: %s", pf, i, vf,
			       r == -ETIMEDOUT ? "no driver and netdev after the bind" : "bind",
			       strerror(-r));
	}
	return r;
}

/* The netdev of VF vf (its driver made one: deviceType netdevice, the only one rdmak takes). */
static int vf_netdev(struct run *x, const char *vf, char *ret, size_t len)
{
	char path[96];
	char **names = NULL;
	size_t n = 0;
	int fd, r;

	snprintf(path, sizeof(path), "bus/pci/devices/%s/net", vf);
	fd = hw_ctx_open(x->ctx, HW_ROOT_SYSFS, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	r = fileio_list_dir(fd, 0, &names, &n);
	close(fd);
	if (r >= 0 && n == 0)
		r = -ENODEV;
	if (r >= 0 && strlen(names[0]) >= len)
		r = -ENAMETOOLONG;
	if (r >= 0)
		snprintf(ret, len, "%s", names[0]);
	strv_free(names);
	return r < 0 ? r : 0;
}

/* The listed VFs' netdevs to mtu, each one's old MTU kept for undo; *ret_set counts the changed. */
static int set_vf_mtus(struct run *x, const char *pf, const json_t *indices, long long mtu,
		       int *ret_set)
{
	char vf[32] = "", name[32] = "";
	struct nl_link l;
	struct nl_link_change c;
	int r = x->rt ? 0 : nl_rt_open(-1, &x->rt);

	*ret_set = 0;
	for (size_t n = 0; r >= 0 && n < json_array_size(indices); n++) {
		long long i = json_integer_value(json_array_get(indices, n));
		if ((r = vf_address(x, pf, i, vf, sizeof(vf))) < 0 ||
		    (r = vf_netdev(x, vf, name, sizeof(name))) < 0 ||
		    (r = nl_link_get(x->rt, name, &l)) <= 0) {
			r = r < 0 ? r : -ENODEV;
			report(x->rep, "%s: VF %lld (%s): its netdev: %s", pf, i, vf, strerror(-r));
			break;
		}
		if (l.mtu == (unsigned)mtu)
			continue;
		nl_link_change_init(&c);
		c.mtu = (unsigned)mtu;
		if ((r = nl_link_change(x->rt, l.ifindex, &c)) < 0) {
			report(x->rep, "%s: VF %lld (%s): mtu %u -> %lld: %s", pf, i, name, l.mtu,
			       mtu, strerror(-r));
			break;
		}
		struct undo u = { .kind = UNDO_VF_MTU, .bdf = pf, .value = l.mtu };
		snprintf(u.vf, sizeof(u.vf), "%s", name);
		if ((r = push(x, &u)) < 0)
			break;
		(*ret_set)++;
	}
	return r;
}

static int do_step(struct run *x, const json_t *pf, const json_t *s)
{
	const char *bdf = json_string_value(json_object_get(pf, "pf"));
	const char *netdev = json_string_value(json_object_get(pf, "netdev"));
	const char *action = json_string_value(json_object_get(s, "action"));
	long long from = json_integer_value(json_object_get(s, "from")),
		  to = json_integer_value(json_object_get(s, "to"));
	int r;
	if (!strcmp(action, "sriov_numvfs")) {
		/* undo of a write to 0 is the number it had, and the VFs bound then bound again (with
		 * sriov_drivers_autoprobe 0 nothing else binds them); of a write to N, 0 */
		struct undo u = { .kind = UNDO_NUMVFS, .bdf = bdf, .value = from };
		for (long long i = 0; i < from && i < 256; i++) {
			char vf[32], path[96];
			snprintf(path, sizeof(path), "bus/pci/devices/%s/virtfn%lld/driver", bdf,
				 i);
			if (vf_address(x, bdf, i, vf, sizeof(vf)) >= 0 && exists(x->ctx, path))
				u.had_driver[i / 64] |= UINT64_C(1) << (i % 64);
		}
		if ((r = write_numvfs(x, bdf, to)) < 0)
			return report(x->rep, "%s: sriov_numvfs %lld -> %lld: %s", bdf, from, to,
				      strerror(-r)) < 0
				       ? -ENOMEM
				       : r;
		if ((r = push(x, &u)) < 0)
			return r;
		if (to > 0 && (r = wait_vfs(x, bdf, to)) < 0)
			return r;
		return report(x->rep, "%s: sriov_numvfs %lld -> %lld", bdf, from, to);
	}
	if (!strcmp(action, "mtu")) {
		if ((r = link_change(x, netdev, (unsigned)to, -1)) < 0)
			return report(x->rep, "%s: mtu %lld -> %lld: %s", netdev, from, to,
				      strerror(-r)) < 0
				       ? -ENOMEM
				       : r;
		if ((r = push_undo(x, UNDO_MTU, bdf, netdev, from)) < 0)
			return r;
		return report(x->rep, "%s: mtu %lld -> %lld", netdev, from, to);
	}
	if (!strcmp(action, "link-up")) {
		if ((r = link_change(x, netdev, 0, 1)) < 0)
			return report(x->rep, "%s: link up: %s", netdev, strerror(-r)) < 0 ? -ENOMEM
											   : r;
		if ((r = push_undo(x, UNDO_DOWN, bdf, netdev, 0)) < 0)
			return r;
		return report(x->rep, "%s: link up", netdev);
	}
	/* a step on single VFs names them: apply touches no other */
	const json_t *vfs = json_object_get(s, "vf_indices");
	size_t n = json_array_size(vfs);
	if (!strncmp(action, "vf-", 3) && !json_is_array(vfs))
		return -EINVAL;
	if (!strcmp(action, "vf-guids")) {
		x->guids_of = bdf;
		x->guid_vfs = vfs;
		if ((r = set_guids(x, pf, vfs)) < 0) {
			int q = report(x->rep, "%s: GUIDs of %zu VFs: %s", netdev, n, strerror(-r));
			return q < 0 ? q : r;
		}
		return report(x->rep, "%s: GUIDs of %zu VFs set", netdev, n);
	}
	if (!strcmp(action, "vf-mtu")) {
		int set;
		if ((r = set_vf_mtus(x, bdf, vfs, to, &set)) < 0)
			return r;
		return report(x->rep, "%s: MTU %lld on %zu VFs (%d changed)", bdf, to, n, set);
	}
	if (!strcmp(action, "vf-bind")) {
		int bound, rebound;
		if ((r = bind_vfs(x, bdf, vfs, &bound, &rebound)) < 0)
			return r;
		return report(x->rep,
			      "%s: %d VFs bound to their driver, %d bound again after their GUIDs",
			      bdf, bound, rebound);
	}
	return -EINVAL;
}

static void undo_all(struct run *x)
{
	while (x->n_undo) {
		const struct undo *u = &x->undo[--x->n_undo];
		int r = 0;
		switch (u->kind) {
		case UNDO_NUMVFS:
			/* back to 0 first: N over N' is EBUSY */
			r = write_numvfs(x, u->bdf, 0);
			if (r >= 0 && u->value > 0 && (r = write_numvfs(x, u->bdf, u->value)) >= 0)
				r = wait_vfs(x, u->bdf, u->value);
			for (long long i = 0; r >= 0 && i < u->value && i < 256; i++) {
				char vf[32], path[96];
				if (!(u->had_driver[i / 64] & (UINT64_C(1) << (i % 64))) ||
				    (r = vf_address(x, u->bdf, i, vf, sizeof(vf))) < 0)
					continue;
				snprintf(path, sizeof(path), "bus/pci/devices/%s/driver", vf);
				if (!exists(x->ctx, path) && (r = bind_vf(x, vf)) >= 0)
					r = wait_bound(x, vf);
			}
			report(x->rep, "undo: %s: sriov_numvfs back to %lld%s%s", u->bdf, u->value,
			       r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
			break;
		case UNDO_MTU:
			r = link_change(x, u->netdev, (unsigned)u->value, -1);
			report(x->rep, "undo: %s: mtu back to %lld%s%s", u->netdev, u->value,
			       r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
			break;
		case UNDO_DOWN:
			r = link_change(x, u->netdev, 0, 0);
			report(x->rep, "undo: %s: link down%s%s", u->netdev, r < 0 ? ": " : "",
			       r < 0 ? strerror(-r) : "");
			break;
		case UNDO_VF_MTU:
			r = link_change(x, u->vf, (unsigned)u->value, -1);
			report(x->rep, "undo: %s: VF netdev %s: mtu back to %lld%s%s", u->bdf,
			       u->vf, u->value, r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
			break;
		case UNDO_UNBIND:
			r = unbind_vf(x, u->vf);
			report(x->rep, "undo: %s: VF %s unbound%s%s", u->bdf, u->vf,
			       r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
			break;
		case UNDO_GUID:
			r = restore_guid(x, u);
			report(x->rep, "undo: %s: VF %lld GUIDs back to %016llx/%016llx%s%s",
			       u->netdev, u->value, (unsigned long long)u->node_guid,
			       (unsigned long long)u->port_guid, r < 0 ? ": " : "",
			       r < 0 ? strerror(-r) : "");
			if (r >= 0 && u->vf[0]) {
				r = rebind_vf(x, u->vf);
				report(x->rep,
				       "undo: %s: VF %lld (%s) bound again after its old GUIDs%s%s",
				       u->netdev, u->value, u->vf, r < 0 ? ": " : "",
				       r < 0 ? strerror(-r) : "");
			}
			break;
		}
		/* an undo step that fails is reported and the rest still run */
	}
}

/* The first live step of pf that would remove or change VF i, in words; NULL: none. */
static const char *held_step(const json_t *pf, long long i)
{
	size_t k;
	json_t *s;

	json_array_foreach(json_object_get(pf, "steps"), k, s)
	{
		const char *action = json_string_value(json_object_get(s, "action"));
		if (strcmp(json_string_value(json_object_get(s, "when")), "live"))
			continue;
		if (!strcmp(action, "sriov_numvfs"))
			return "sriov_numvfs would remove it (every VF of the PF goes)";
		if (!listed(json_object_get(s, "vf_indices"), i))
			continue;
		if (!strcmp(action, "vf-guids"))
			return "vf-guids would change its GUIDs (and bind it again)";
		if (!strcmp(action, "vf-bind"))
			return "vf-bind would bind it";
		if (!strcmp(action, "vf-mtu"))
			return "vf-mtu would change its netdev's MTU";
	}
	return NULL;
}

int vf_lock(struct hw_ctx *ctx, bool wait)
{
	int fd = hw_ctx_open(ctx, HW_ROOT_SYSFS, "bus/pci/devices",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return fd;
	/* a holder killed with -9 releases it with its fd */
	if ((r = fileio_flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int vf_apply(struct hw_ctx *ctx, const json_t *plan, const struct vf_apply_opts *o,
	     struct vf_apply_report *rep)
{
	struct run x = { .ctx = ctx, .o = o, .rep = rep };
	size_t i, k;
	json_t *pf, *s;
	int r = 0;
	*rep = (struct vf_apply_report){ .result = VF_APPLY_NOTHING };
	/* refuse before touching anything: a sriov_numvfs change removes every VF of the PF, the
	 * other live steps touch the VFs they list */
	json_array_foreach(json_object_get(plan, "pfs"), i, pf)
	{
		json_t *h;
		json_array_foreach(json_object_get(pf, "holders"), k, h)
		{
			const char *why =
				held_step(pf, json_integer_value(json_object_get(h, "vf_index")));
			if (!why)
				continue;
			const char *pod = json_string_value(json_object_get(h, "pod"));
			r = report(rep, "%s: VF %lld (%s) is held by pod %s%s%s container %s: %s%s",
				   json_string_value(json_object_get(pf, "pf")),
				   json_integer_value(json_object_get(h, "vf_index")),
				   json_string_value(json_object_get(h, "vf")),
				   pod ? json_string_value(json_object_get(h, "namespace")) : "",
				   pod ? "/" : "",
				   pod ? pod : json_string_value(json_object_get(h, "pod_uid")),
				   json_string_value(json_object_get(h, "container")), why,
				   o->force ? " (--force: done)" : "");
			if (r < 0)
				return r;
			if (!o->force)
				rep->result = VF_APPLY_REFUSED;
		}
	}
	if (rep->result == VF_APPLY_REFUSED)
		return 0;
	json_array_foreach(json_object_get(plan, "pfs"), i, pf)
	{
		json_array_foreach(json_object_get(pf, "steps"), k, s)
		{
			const char *when = json_string_value(json_object_get(s, "when"));
			if (strcmp(when, "live")) {
				if (!strcmp(when, "reboot") &&
				    (r = report(rep, "%s: reboot needed: %s",
						json_string_value(json_object_get(pf, "pf")),
						json_string_value(json_object_get(
							s, json_object_get(s, "command")
								   ? "command"
								   : "note")))) < 0)
					goto fail;
				rep->reboot = true;
				continue;
			}
			if ((r = do_step(&x, pf, s)) < 0)
				goto fail;
			rep->result = VF_APPLY_DONE;
		}
	}
	if (rep->result == VF_APPLY_NOTHING && !rep->reboot)
		r = report(rep, "nothing to do");
	nl_rt_free(x.rt);
	free(x.undo);
	return r < 0 ? r : 0;
fail:
	undo_all(&x);
	nl_rt_free(x.rt);
	free(x.undo);
	return r;
}

void vf_apply_report_clear(struct vf_apply_report *rep)
{
	for (size_t i = 0; i < rep->n_lines; i++)
		free(rep->lines[i]);
	free(rep->lines);
	*rep = (struct vf_apply_report){};
}
