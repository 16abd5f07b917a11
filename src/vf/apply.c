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
#include <time.h>
#include <unistd.h>

#include "nl/nl.h"

enum undo_kind { UNDO_NUMVFS, UNDO_MTU, UNDO_DOWN };

struct undo {
	enum undo_kind kind;
	const char *bdf, *netdev;
	long long value;
};

struct run {
	struct hw_ctx *ctx;
	struct nl_rt *rt;
	const struct vf_apply_opts *o;
	struct vf_apply_report *rep;
	struct undo undo[64];
	size_t n_undo;
};

static int report(struct vf_apply_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
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

static int write_numvfs(struct run *x, const char *bdf, long long n)
{
	char path[96], text[16];
	snprintf(path, sizeof(path), "bus/pci/devices/%s/sriov_numvfs", bdf);
	int fd = hw_ctx_open(x->ctx, HW_ROOT_SYSFS, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	int len = snprintf(text, sizeof(text), "%lld\n", n);
	ssize_t w = write(fd, text, (size_t)len);
	int r = w < 0 ? -errno : w != len ? -EIO : 0;
	close(fd);
	return r;
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
				snprintf(path, sizeof(path), "bus/pci/devices/%s/virtfn%lld/net", bdf, i);
				ok = exists(x->ctx, path);
			}
			if (ok)
				break;
			if (now_ms() > deadline)
				return report(x->rep, "%s: VF %lld did not appear (%s) within %d ms", bdf, i,
					      probe ? "virtfn link and netdev" : "virtfn link", x->o->timeout_ms) < 0
					       ? -ENOMEM
					       : -ETIMEDOUT;
			usleep(20 * 1000);
		}
	}
	return 0;
}

static int push_undo(struct run *x, enum undo_kind k, const char *bdf, const char *netdev, long long v)
{
	if (x->n_undo >= sizeof(x->undo) / sizeof(x->undo[0]))
		return -E2BIG;
	x->undo[x->n_undo++] = (struct undo){ k, bdf, netdev, v };
	return 0;
}

static int link_change(struct run *x, const char *netdev, unsigned mtu, int up)
{
	struct nl_link l;
	struct nl_link_change c;
	int r = x->rt ? 0 : nl_rt_open(-1, &x->rt);
	if (r >= 0)
		r = nl_link_get(x->rt, netdev, &l);
	if (r < 0)
		return r;
	nl_link_change_init(&c);
	c.mtu = mtu;
	c.up = up;
	return nl_link_change(x->rt, l.ifindex, &c);
}

static int set_guids(struct run *x, const json_t *pf, long long vfs)
{
	const char *netdev = json_string_value(json_object_get(pf, "netdev"));
	const char *g = json_string_value(json_object_get(pf, "pf_guid"));
	uint64_t pg;
	struct nl_link l;
	if (!g || vf_guid_parse(g, &pg) < 0)
		return -ENODATA;
	int r = x->rt ? 0 : nl_rt_open(-1, &x->rt);
	if (r >= 0)
		r = nl_link_get(x->rt, netdev, &l);
	for (long long i = 0; r >= 0 && i < vfs; i++) {
		uint64_t v = vf_guid(pg, (unsigned)i);
		r = nl_link_set_vf_guid(x->rt, l.ifindex, (uint32_t)i, v, v);
	}
	return r;
}

static int do_step(struct run *x, const json_t *pf, const json_t *s)
{
	const char *bdf = json_string_value(json_object_get(pf, "pf"));
	const char *netdev = json_string_value(json_object_get(pf, "netdev"));
	const char *action = json_string_value(json_object_get(s, "action"));
	long long from = json_integer_value(json_object_get(s, "from")), to = json_integer_value(json_object_get(s, "to"));
	int r;
	if (!strcmp(action, "sriov_numvfs")) {
		if ((r = write_numvfs(x, bdf, to)) < 0)
			return report(x->rep, "%s: sriov_numvfs %lld -> %lld: %s", bdf, from, to, strerror(-r)) < 0 ? -ENOMEM : r;
		/* undo of a write to 0 is the number it had; of a write to N, 0 (then the one before) */
		if ((r = push_undo(x, UNDO_NUMVFS, bdf, NULL, from)) < 0)
			return r;
		if (to > 0 && (r = wait_vfs(x, bdf, to)) < 0)
			return r;
		return report(x->rep, "%s: sriov_numvfs %lld -> %lld", bdf, from, to);
	}
	if (!strcmp(action, "mtu")) {
		if ((r = link_change(x, netdev, (unsigned)to, -1)) < 0)
			return report(x->rep, "%s: mtu %lld -> %lld: %s", netdev, from, to, strerror(-r)) < 0 ? -ENOMEM : r;
		if ((r = push_undo(x, UNDO_MTU, bdf, netdev, from)) < 0)
			return r;
		return report(x->rep, "%s: mtu %lld -> %lld", netdev, from, to);
	}
	if (!strcmp(action, "link-up")) {
		if ((r = link_change(x, netdev, 0, 1)) < 0)
			return report(x->rep, "%s: link up: %s", netdev, strerror(-r)) < 0 ? -ENOMEM : r;
		if ((r = push_undo(x, UNDO_DOWN, bdf, netdev, 0)) < 0)
			return r;
		return report(x->rep, "%s: link up", netdev);
	}
	if (!strcmp(action, "vf-guids")) {
		long long n = json_integer_value(json_object_get(pf, "want_numvfs"));
		if ((r = set_guids(x, pf, n)) < 0)
			return report(x->rep, "%s: GUIDs of %lld VFs: %s", netdev, n, strerror(-r)) < 0 ? -ENOMEM : r;
		return report(x->rep, "%s: GUIDs of %lld VFs set", netdev, n);
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
			report(x->rep, "undo: %s: sriov_numvfs back to %lld%s%s", u->bdf, u->value, r < 0 ? ": " : "",
			       r < 0 ? strerror(-r) : "");
			break;
		case UNDO_MTU:
			r = link_change(x, u->netdev, (unsigned)u->value, -1);
			report(x->rep, "undo: %s: mtu back to %lld%s%s", u->netdev, u->value, r < 0 ? ": " : "",
			       r < 0 ? strerror(-r) : "");
			break;
		case UNDO_DOWN:
			r = link_change(x, u->netdev, 0, 0);
			report(x->rep, "undo: %s: link down%s%s", u->netdev, r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
			break;
		}
		/* an undo step that fails is reported and the rest still run */
	}
}

int vf_apply(struct hw_ctx *ctx, const json_t *plan, const struct vf_apply_opts *o, struct vf_apply_report *rep)
{
	struct run x = { .ctx = ctx, .o = o, .rep = rep };
	size_t i, k;
	json_t *pf, *s;
	int r = 0;
	*rep = (struct vf_apply_report){ .result = VF_APPLY_NOTHING };
	/* refuse before touching anything: a sriov_numvfs change removes every VF of the PF */
	json_array_foreach(json_object_get(plan, "pfs"), i, pf) {
		bool numvfs = false;
		json_array_foreach(json_object_get(pf, "steps"), k, s)
			numvfs |= !strcmp(json_string_value(json_object_get(s, "action")), "sriov_numvfs") &&
				  !strcmp(json_string_value(json_object_get(s, "when")), "live");
		json_t *h;
		json_array_foreach(json_object_get(pf, "holders"), k, h) {
			if (!numvfs)
				break;
			const char *pod = json_string_value(json_object_get(h, "pod"));
			r = report(rep, "%s: VF %lld (%s) is held by pod %s%s%s container %s%s",
				   json_string_value(json_object_get(pf, "pf")), json_integer_value(json_object_get(h, "vf_index")),
				   json_string_value(json_object_get(h, "vf")),
				   pod ? json_string_value(json_object_get(h, "namespace")) : "", pod ? "/" : "",
				   pod ? pod : json_string_value(json_object_get(h, "pod_uid")),
				   json_string_value(json_object_get(h, "container")), o->force ? " (--force: removed)" : "");
			if (r < 0)
				return r;
			if (!o->force)
				rep->result = VF_APPLY_REFUSED;
		}
	}
	if (rep->result == VF_APPLY_REFUSED)
		return 0;
	json_array_foreach(json_object_get(plan, "pfs"), i, pf) {
		json_array_foreach(json_object_get(pf, "steps"), k, s) {
			const char *when = json_string_value(json_object_get(s, "when"));
			if (strcmp(when, "live")) {
				if (!strcmp(when, "reboot") &&
				    (r = report(rep, "%s: reboot needed: %s", json_string_value(json_object_get(pf, "pf")),
						json_string_value(json_object_get(s, json_object_get(s, "command") ? "command" : "note")))) < 0)
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
	return r < 0 ? r : 0;
fail:
	undo_all(&x);
	nl_rt_free(x.rt);
	return r;
}

void vf_apply_report_clear(struct vf_apply_report *rep)
{
	for (size_t i = 0; i < rep->n_lines; i++)
		free(rep->lines[i]);
	free(rep->lines);
	*rep = (struct vf_apply_report){};
}
