/* SPDX-License-Identifier: Apache-2.0 */
/* Why polling and not inotify: sysfs attributes such as ports/N/state and net/X/carrier never
 * generate inotify events (kernfs only notifies attributes that call sysfs_notify(), and
 * these do not), and netlink RDMA has no port-state multicast group. Netlink link events
 * would cover carrier but not IB port state, so one poll loop reads both, at the cost of one
 * pread() per port and netdev (docs/plugin.md has the figures). */
#include "pool/health.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pool/pool.h"
#include "util/fileio.h"
#include "util/cleanup.h"
#include "util/strv.h"

/* ---- judging ------------------------------------------------------------------------ */

bool pool_health_input_ok(const struct pool_health_input *in)
{
	if (in->gone)
		return false;
	if (in->kind == POOL_HEALTH_PORT)
		return hw_port_state_is_active((enum hw_port_state)in->value);
	/* carrier -1: unreadable (an admin-down link answers EINVAL); its port state decides */
	return in->value != 0;
}

void pool_health_input_describe(const struct pool_health_input *in, char *buf, size_t n)
{
	if (in->gone)
		snprintf(buf, n, "%s gone", in->name);
	else if (in->kind == POOL_HEALTH_PORT)
		snprintf(buf, n, "%s port %u %s", in->name, in->port,
			 in->value >= HW_PORT_NOP && in->value <= HW_PORT_ACTIVE_DEFER
				 ? hw_port_state_name((enum hw_port_state)in->value)
				 : "unknown");
	else
		snprintf(buf, n, "%s %s", in->name, in->value == 0 ? "no carrier" : "carrier");
}

void pool_health_member_judge(const struct pool_set *ps, struct pool_member *m)
{
	m->healthy = !m->static_fault;
	for (size_t i = 0; i < m->n_inputs && m->healthy; i++)
		if (!pool_health_input_ok(&ps->inputs[m->inputs[i]])) {
			m->healthy = false;
			m->bad_input = i;
		}
}

void pool_health_member_reason(const struct pool_set *ps, const struct pool_member *m, char *buf,
			       size_t n)
{
	if (m->healthy)
		snprintf(buf, n, "%s", "");
	else if (m->static_fault)
		snprintf(buf, n, "%s", m->static_fault);
	else
		pool_health_input_describe(&ps->inputs[m->inputs[m->bad_input]], buf, n);
}

/* ---- reading ------------------------------------------------------------------------ */

/* The hardware model's hw_port_read_state()/hw_netdev_read_carrier() walk the path on every
 * call, which on a node with a thousand VFs is most of the poll's cost; holding each
 * attribute open and re-reading it with pread(fd, 0) re-runs only the attribute's show()
 * (kernfs regenerates a seq_file read from offset 0). A removed device's open attribute
 * answers ENODEV, so "gone" is still noticed, and the fd is re-opened on recovery. */
static int attr_open(struct hw_ctx *ctx, const struct pool_health_input *in)
{
	char path[HW_NAME_MAX + 64];

	if (in->kind == POOL_HEALTH_PORT)
		snprintf(path, sizeof(path), "class/infiniband/%s/ports/%u/state", in->name,
			 in->port);
	else
		snprintf(path, sizeof(path), "class/net/%s/carrier", in->name);
	/* inside the root as every read of it; a FIFO must not block the poll */
	return hw_ctx_open(ctx, HW_ROOT_SYSFS, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
}

/* How many attributes may stay open: the soft fd limit less room for the transport. */
static size_t fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < 256)
		return 0;
	return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : (size_t)rl.rlim_cur - 192;
}

/* 0 with *value, -ENOENT when gone, other -errno for a transient failure. Past the fd budget
 * an attribute is opened, read and closed each time. */
static int attr_read(struct hw_ctx *ctx, struct pool_health_input *in, int *value, size_t *held,
		     size_t budget)
{
	char buf[64];
	ssize_t n;
	int r;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (in->fd < 0) {
			int opened = attr_open(ctx, in);

			if (opened < 0)
				return opened == -ENOENT || opened == -ENOTDIR ? -ENOENT : opened;
			in->fd = opened;
			if (*held >= budget) {
				_cleanup_close_ int fd = TAKE_FD(in->fd);

				n = pread(fd, buf, sizeof(buf) - 1, 0);
				if (n < 0 && errno == EINVAL && in->kind == POOL_HEALTH_CARRIER) {
					*value = -1;
					return 0;
				}
				if (n < 0)
					return errno == ENODEV ? -ENOENT : -errno;
				buf[n] = '\0';
				*value = hw_parse_attr_num(buf);
				return 0;
			}
			(*held)++;
		}
		n = pread(in->fd, buf, sizeof(buf) - 1, 0);
		if (n >= 0) {
			buf[n] = '\0';
			*value = hw_parse_attr_num(buf);
			return 0;
		}
		if (errno == EINVAL && in->kind == POOL_HEALTH_CARRIER) {
			*value = -1; /* an admin-down netdev refuses to say */
			return 0;
		}
		/* ENODEV: the device behind this fd went away; a new one may have the same name */
		r = -errno;
		close(in->fd);
		in->fd = -1;
		(*held)--;
		if (r != -ENODEV && r != -ENOENT)
			return r;
	}
	return -ENOENT;
}

int pool_health_poll(struct pool_set *ps, struct hw_ctx *ctx)
{
	size_t held = 0, budget = fd_budget();
	int changed = 0;

	for (size_t i = 0; i < ps->n_inputs; i++)
		held += ps->inputs[i].fd >= 0;
	for (size_t i = 0; i < ps->n_inputs; i++) {
		struct pool_health_input *in = &ps->inputs[i];
		int value = in->value, r;
		bool gone;

		r = attr_read(ctx, in, &value, &held, budget);
		gone = r == -ENOENT;
		if (r < 0 && !gone)
			continue; /* a transient read error changes nothing */
		if (gone != in->gone || (!gone && value != in->value)) {
			in->gone = gone;
			if (!gone)
				in->value = value;
			changed++;
		}
	}
	return changed;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int dir_fingerprint(struct hw_ctx *ctx, const char *rel, uint64_t *acc)
{
	_cleanup_close_ int fd = hw_ctx_open(ctx, HW_ROOT_SYSFS, rel, O_RDONLY | O_DIRECTORY);
	_cleanup_strv_free_ char **names = NULL;
	size_t n;
	int r;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	r = fileio_list_dir(fd, FILEIO_LIST_NO_HIDDEN, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		*acc += fnv1a(names[i]) ^ fnv1a(rel);
	return 0;
}

int pool_health_topology_fingerprint(struct hw_ctx *ctx, uint64_t *ret)
{
	uint64_t acc = 0;
	int r;

	if ((r = dir_fingerprint(ctx, "class/infiniband", &acc)) < 0 ||
	    (r = dir_fingerprint(ctx, "class/net", &acc)) < 0 ||
	    (r = dir_fingerprint(ctx, "class/infiniband_verbs", &acc)) < 0)
		return r;
	*ret = acc;
	return 0;
}
