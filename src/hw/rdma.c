/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA devices under class/infiniband and their ports. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

static bool gid_is_zero(const uint8_t g[16])
{
	for (int i = 0; i < 16; i++)
		if (g[i])
			return false;
	return true;
}

static bool gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return memcmp(g, prefix, sizeof(prefix)) == 0;
}

/* One GID slot. Empty slots are normal (never an error); on IB ports the type and ndev
 * attributes carry nothing (ndevs reads EINVAL), so they are not read there. */
static bool whole_gid_table(const struct hw_build *b, const struct hw_port *p)
{
	return (b->flags & HW_LOAD_GIDS) ||
	       ((b->flags & HW_LOAD_ROCE_GIDS) && p->link_layer == HW_LINK_ETH);
}

/* Room for one more element in *arr (n held, *cap allocated, zeroed as it grows): the tables
 * read to their end (hw_dir_open_table) learn their length only at it. */
static int table_room(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 2;
	char *a;

	if (*arr && n < *cap)
		return 0;
	if (!(a = reallocarray(*arr, c, size)))
		return -ENOMEM;
	memset(a + *cap * size, 0, (c - *cap) * size);
	*arr = a, *cap = c;
	return 0;
}

/* gd: the port's gids directory when open (the whole table is read), else NULL. Returns 1 when
 * gd holds no entry idx: the table ends before it. */
static int load_gid(struct hw_build *b, struct hw_port *p, const struct hw_dir *pd,
		    const struct hw_dir *gd, unsigned idx)
{
	char name[48], val[64], num[21];
	uint8_t raw[16];
	struct hw_gid *g;
	int r;

	str_from_u64(num, idx);
	/* "gids/N" beneath the port only when the gids directory is not open, or to name a
	 * failure */
	if (!gd)
		str_concat(name, sizeof(name), "gids/", num, "");
	r = gd ? hw_table_read(b->ctx, gd, idx, val, sizeof(val))
	       : hw_read_opt(b->ctx, pd, name, val, sizeof(val));
	if (r == -ENOENT)
		return 1; /* the whole table read: past its end */
	if (r < 0) {
		str_concat(name, sizeof(name), "gids/", num, "");
		return hw_fail(b->err, pd, name, r);
	}
	if (hw_parse_gid(val, raw) < 0 || gid_is_zero(raw))
		return 0;
	if (idx == 0)
		snprintf(p->port_guid, sizeof(p->port_guid), "%.19s", val + 20);
	if (!whole_gid_table(b, p) && idx > 0)
		return 0;
	g = &p->gids[p->n_gids];
	g->index = idx;
	str_copy(g->gid, sizeof(g->gid), val);
	g->ipv4 = gid_is_v4mapped(raw);
	if (p->link_layer != HW_LINK_IB) {
		str_concat(name, sizeof(name), "gid_attrs/types/", num, "");
		hw_read_opt(b->ctx, pd, name, g->type, sizeof(g->type));
		str_concat(name, sizeof(name), "gid_attrs/ndevs/", num, "");
		hw_read_opt(b->ctx, pd, name, g->ndev, sizeof(g->ndev));
	}
	p->n_gids++;
	return 0;
}

static int load_gids(struct hw_build *b, struct hw_port *p, const struct hw_dir *pd)
{
	struct hw_dir gd = { .fd = -1 };
	size_t cap = 0;
	int r = 0;

	/* Without HW_LOAD_GIDS only GID 0 is read (the port GUID and the RoCE netdev). The whole
	 * table is read through the gids directory's fd, one name deep, from 0 up to the first
	 * index it lacks: the kernel makes gids/0 to gids/<gid_tbl_len - 1> and nothing else
	 * (hw_dir_open_table), so that is the table's length without listing it. */
	if (whole_gid_table(b, p)) {
		r = hw_dir_open_table(b->ctx, pd, "gids", &gd);
		if (r == -ENOENT)
			return 0;
		if (r < 0)
			return hw_fail(b->err, pd, "gids", r);
	}
	for (unsigned i = 0; r >= 0 && (gd.fd >= 0 || i < 1); i++) {
		if ((r = table_room((void **)&p->gids, &cap, p->n_gids, sizeof(*p->gids))) < 0)
			break;
		r = load_gid(b, p, pd, gd.fd >= 0 ? &gd : NULL, i);
		if (r == 1) {
			p->gid_tbl_len = i;
			r = 0;
			break;
		}
	}
	hw_dir_close(&gd);
	return r < 0 ? r : 0;
}

static int load_pkeys(struct hw_build *b, struct hw_port *p, const struct hw_dir *pd)
{
	struct hw_dir kd;
	char val[16];
	size_t cap = 0;
	unsigned long long v;
	int r;

	if (!(b->flags & HW_LOAD_PKEYS))
		return 0;
	/* pkeys/0 to pkeys/<pkey_tbl_len - 1>, as gids/ (load_gids) */
	r = hw_dir_open_table(b->ctx, pd, "pkeys", &kd);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return hw_fail(b->err, pd, "pkeys", r);
	for (unsigned i = 0;; i++) {
		if ((r = table_room((void **)&p->pkeys, &cap, p->n_pkeys, sizeof(*p->pkeys))) < 0)
			break;
		r = hw_table_read(b->ctx, &kd, i, val, sizeof(val));
		if (r == -ENOENT) {
			p->pkey_tbl_len = i;
			r = 0;
			break;
		}
		if (r < 0) {
			char name[32], num[21];

			str_from_u64(num, i);
			str_concat(name, sizeof(name), "pkeys/", num, "");
			r = hw_fail(b->err, pd, name, r);
			break;
		}
		if (str_to_u64(val, 16, &v) < 0 || v == 0 || v > 0xffff)
			continue; /* 0x0000 is an empty slot */
		p->pkeys[p->n_pkeys].index = i;
		p->pkeys[p->n_pkeys++].pkey = (uint16_t)v;
	}
	hw_dir_close(&kd);
	return r;
}

static int read_u32(struct hw_build *b, const struct hw_dir *pd, const char *name, int base,
		    uint32_t *ret)
{
	long long v;
	int r = hw_read_int(b->ctx, pd, name, base, &v);

	if (r == -ENOENT || r == -EINVAL)
		return 0; /* not every driver has every attribute (sm_sl, lid_mask_count) */
	if (r < 0)
		return hw_fail(b->err, pd, name, r);
	*ret = (uint32_t)v;
	return 0;
}

/* Read a required port attribute. 1: read, in buf; 0: unreadable or rejected by parse, recorded
 * in p->errors for the caller to leave the field unknown; <0: a failure of the load (the
 * file is gone: the device may be going away, which hw_load_item decides). */
static int read_required(struct hw_build *b, struct hw_port *p, const struct hw_dir *pd,
			 const char *name, char *buf, size_t len,
			 bool (*valid)(const char *buf, struct hw_port *p))
{
	struct hw_attr_error *e = &p->errors[p->n_errors];
	int r = hw_dir_read(b->ctx, pd, name, buf, len);
	struct stat st;

	/* A directory where the attribute should be reads as broken, like garbage. A FIFO, device
	 * or socket is a tree built to hang readers: refused for the whole load (hw_strerror). */
	if (r == -HW_ENOTREG && fstatat(pd->fd, name, &st, 0) == 0 && S_ISDIR(st.st_mode))
		r = -EISDIR;
	if (r == -ENOENT || r == -ENOMEM || r == -HW_ENOTREG)
		return hw_fail(b->err, pd, name, r);
	if (r >= 0 && valid(buf, p))
		return 1;
	if (p->n_errors == ELEMENTSOF(p->errors))
		return 0;
	memset(e, 0, sizeof(*e));
	str_copy(e->name, sizeof(e->name), name);
	e->err = r < 0 ? -r : 0;
	if (r >= 0) {
		/* quote the content as printable text, cut short */
		size_t o = 0;

		for (const unsigned char *c = (const unsigned char *)buf;
		     *c && o + 5 < sizeof(e->content); c++)
			o += (size_t)snprintf(
				e->content + o, sizeof(e->content) - o,
				*c >= 0x20 && *c < 0x7f && *c != '"' ? "%c" : "\\x%02x", *c);
	}
	p->n_errors++;
	return 0;
}

static bool valid_state(const char *buf, struct hw_port *p)
{
	int st;

	if (hw_parse_state(buf, &st, p->state_name, sizeof(p->state_name)) < 0)
		return false;
	p->state = (enum hw_port_state)st;
	return true;
}

static bool valid_phys_state(const char *buf, struct hw_port *p)
{
	int ps;

	if (hw_parse_state(buf, &ps, p->phys_state_name, sizeof(p->phys_state_name)) < 0)
		return false;
	p->phys_state = (enum hw_phys_state)ps;
	return true;
}

static bool valid_link_layer(const char *buf, struct hw_port *p)
{
	p->link_layer = !strcmp(buf, "InfiniBand") ? HW_LINK_IB
			: !strcmp(buf, "Ethernet") ? HW_LINK_ETH
						   : HW_LINK_UNKNOWN;
	return p->link_layer != HW_LINK_UNKNOWN ||
	       !strcmp(buf, "Unknown"); /* the kernel's word for neither */
}

const char *hw_attr_error_str(const struct hw_port *p, const struct hw_attr_error *e,
			      const char *root, char *buf, size_t n)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%sclass/infiniband/%s/ports/%u/%s", root ? root : "",
		 root && *root ? "/" : "", p->dev->name, p->num, e->name);
	if (e->err)
		snprintf(buf, n, "%s: %s", path, hw_strerror(e->err));
	else if (!e->content[0])
		snprintf(buf, n, "empty %s", path);
	else
		snprintf(buf, n, "unexpected content \"%s\" in %s", e->content, path);
	return buf;
}

/* Port num of d, beneath its open ports directory: one name beneath an open directory is a
 * plain openat, where "ports/num" beneath the device takes the scoped walk. Returns 1 when
 * there is no port num: the ports end before it (hw_dir_open_table). */
static int load_port(struct hw_build *b, struct hw_rdma_dev *d, struct hw_port *p,
		     const struct hw_dir *ports, uint32_t num)
{
	struct hw_dir pd;
	char buf[64], name[21];
	int r;

	p->dev = d;
	p->state = HW_PORT_STATE_UNKNOWN;
	p->phys_state = HW_PHYS_UNKNOWN;
	p->num = num;
	str_from_u64(name, num);
	if ((r = hw_dir_open(b->ctx, ports, name, &pd)) == -ENOENT)
		return 1;
	if (r < 0)
		return hw_fail(b->err, ports, name, r);
	/* state, phys_state and link_layer are what every answer depends on: one that cannot be
	 * read or parsed stays unknown and is recorded, for each role to report */
	str_copy(p->state_name, sizeof(p->state_name), "UNKNOWN");
	str_copy(p->phys_state_name, sizeof(p->phys_state_name), "UNKNOWN");
	if ((r = read_required(b, p, &pd, "state", buf, sizeof(buf), valid_state)) < 0 ||
	    (r = read_required(b, p, &pd, "phys_state", buf, sizeof(buf), valid_phys_state)) < 0 ||
	    (r = read_required(b, p, &pd, "link_layer", buf, sizeof(buf), valid_link_layer)) < 0)
		goto out;
	/* rate is optional: a driver whose query fails makes the read fail */
	if (hw_read_opt(b->ctx, &pd, "rate", buf, sizeof(buf)) >= 0 && buf[0] &&
	    hw_parse_rate(buf, &p->rate) < 0)
		str_copy(p->rate.raw, sizeof(p->rate.raw), buf);
	if ((r = read_u32(b, &pd, "lid", 16, &p->lid)) < 0 ||
	    (r = read_u32(b, &pd, "sm_lid", 16, &p->sm_lid)) < 0 ||
	    (r = read_u32(b, &pd, "lid_mask_count", 10, &p->lmc)) < 0 ||
	    (r = read_u32(b, &pd, "sm_sl", 10, &p->sm_sl)) < 0 ||
	    (r = read_u32(b, &pd, "cap_mask", 16, &p->cap_mask)) < 0)
		goto out;
	snprintf(p->port_guid, sizeof(p->port_guid), "0000:0000:0000:0000");
	if ((r = load_gids(b, p, &pd)) < 0)
		goto out;
	r = load_pkeys(b, p, &pd);
out:
	hw_dir_close(&pd);
	return r;
}

static int load_device(struct hw_build *b, size_t i, const struct hw_dir *cls, const char *name)
{
	struct hw_rdma_dev *d = &b->node->rdma[i];
	struct hw_dir dd, ports;
	char buf[PATH_MAX];
	size_t cap = 0;
	int r;

	str_copy(d->name, sizeof(d->name), name);
	if ((r = hw_dir_open_link(b->ctx, cls, name, buf, sizeof(buf), &dd)) < 0)
		return hw_fail(b->err, cls, name, r);
	if (buf[0])
		hw_path_parent_bdf(buf, b->rdma_bdf[i]);
	if (hw_read_opt(b->ctx, &dd, "node_type", buf, 64) >= 0 && buf[0])
		hw_parse_node_type(buf, &d->node_type, d->node_type_name,
				   sizeof(d->node_type_name));
	hw_read_opt(b->ctx, &dd, "node_guid", d->node_guid, sizeof(d->node_guid));
	hw_read_opt(b->ctx, &dd, "sys_image_guid", d->sys_image_guid, sizeof(d->sys_image_guid));
	hw_read_opt(b->ctx, &dd, "fw_ver", d->fw_ver, sizeof(d->fw_ver));
	hw_read_opt(b->ctx, &dd, "hca_type", d->hca_type, sizeof(d->hca_type));
	hw_read_opt(b->ctx, &dd, "hw_rev", d->hw_rev, sizeof(d->hw_rev));
	hw_read_opt(b->ctx, &dd, "board_id", d->board_id, sizeof(d->board_id));
	hw_read_opt(b->ctx, &dd, "node_desc", d->node_desc, sizeof(d->node_desc));
	if ((r = hw_dir_open_table(b->ctx, &dd, "ports", &ports)) < 0) {
		r = hw_fail(b->err, &dd, "ports", r);
		goto out_dd;
	}
	/* from the kernel's first port (rdma_start_port: 0 on a switch, 1 otherwise) up to the
	 * first number the directory lacks; the kernel numbers ports with a u32 (Linux 5.13) */
	for (uint32_t num = d->node_type == 2 ? 0 : 1; r >= 0; num++) {
		struct hw_port *p;
		struct hw_error pe = { 0 };
		struct hw_build mine = *b; /* the port's own error record, for a skip */

		if ((r = table_room((void **)&d->ports, &cap, d->n_ports, sizeof(*p))) < 0)
			break;
		p = &d->ports[d->n_ports++];
		memset(p, 0, sizeof(*p));
		mine.err = &pe;
		r = load_port(&mine, d, p, &ports, num);
		if (r == 1) {
			d->n_ports--;
			r = 0;
			break;
		}
		if (r >= 0 && num == UINT32_MAX)
			break;
		if (r >= 0)
			continue;
		/* HW_LOAD_PARTIAL: a port that cannot be read is left out, the device kept; one that
		 * is gone is its device's going (hw_load_item) */
		if (!(b->flags & HW_LOAD_PARTIAL) || r == -ENOMEM || r == -ENOENT || r == -ENODEV) {
			if (pe.err)
				hw_fail(b->err, NULL, pe.path, pe.err);
			break;
		}
		free(p->gids);
		free(p->pkeys);
		memset(p, 0, sizeof(*p));
		d->n_ports--;
		if (!pe.err)
			hw_fail(&pe, &dd, "ports", r);
		r = hw_skip(b, &pe);
	}
	hw_dir_close(&ports);
out_dd:
	hw_dir_close(&dd);
	return r < 0 ? r : 0;
}

struct rdma_job {
	const struct hw_dir *cls;
	char **names;
};

static int rdma_job(struct hw_build *b, size_t i, void *ud)
{
	struct rdma_job *j = ud;
	int r = hw_load_item(b, i, j->cls, j->names[i], load_device);

	return r;
}

/* Drop the devices that vanished while read (hot-unplug, a VF's driver unbinding); their ports'
 * back pointers move with them. Nothing else points at a device yet. */
static void compact_rdma(struct hw_build *b)
{
	struct hw_node *node = b->node;
	size_t k = 0;

	for (size_t i = 0; i < node->n_rdma; i++) {
		if (b->gone[i]) {
			HW_DEV_FOREACH_PORT(&node->rdma[i], p)
			{
				free(p->gids);
				free(p->pkeys);
			}
			free(node->rdma[i].ports);
			continue;
		}
		if (k != i) {
			node->rdma[k] = node->rdma[i];
			memcpy(b->rdma_bdf[k], b->rdma_bdf[i], sizeof(b->rdma_bdf[k]));
		}
		HW_DEV_FOREACH_PORT(&node->rdma[k], p)
		p->dev = &node->rdma[k];
		k++;
	}
	node->n_rdma = k;
}

int hw_load_rdma(struct hw_build *b)
{
	struct hw_dir cls;
	char **names = NULL;
	size_t n = 0;
	int r;

	r = hw_dir_open_links(b->ctx, "class/infiniband", &cls);
	if (r == -ENOENT)
		return 0; /* no RDMA stack loaded: a finding, not a failure */
	if (r < 0)
		return hw_fail(b->err, NULL, "class/infiniband", r);
	b->node->has_rdma_class = true;
	r = hw_dir_list(b->ctx, &cls, "", &names, &n);
	if (r < 0) {
		hw_dir_close(&cls);
		return hw_fail(b->err, &cls, NULL, r);
	}
	b->node->rdma = calloc(n ? n : 1, sizeof(*b->node->rdma));
	b->rdma_bdf = calloc(n ? n : 1, sizeof(*b->rdma_bdf));
	if (!b->node->rdma || !b->rdma_bdf)
		r = -ENOMEM;
	if (r >= 0) {
		struct rdma_job job = { &cls, names };

		b->node->n_rdma = n;
		r = hw_items_begin(b, n);
		if (r >= 0)
			r = hw_for_items(b, n, rdma_job, &job);
		if (r >= 0)
			compact_rdma(b);
		r = hw_items_end(b, r);
	}
	strv_free(names);
	hw_dir_close(&cls);
	return r < 0 ? r : 0;
}

int hw_port_read_state(struct hw_ctx *ctx, const char *ibdev, unsigned port,
		       enum hw_port_state *state, enum hw_phys_state *phys_state)
{
	char path[160], buf[64];
	int r, s, ps;

	if (!str_is_safe_name(ibdev, HW_NAME_MAX - 1))
		return -EINVAL;
	snprintf(path, sizeof(path), "class/infiniband/%s/ports/%u/state", ibdev, port);
	if ((r = hw_dir_read(ctx, NULL, path, buf, sizeof(buf))) < 0)
		return r;
	if (hw_parse_state(buf, &s, NULL, 0) < 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "class/infiniband/%s/ports/%u/phys_state", ibdev, port);
	if ((r = hw_dir_read(ctx, NULL, path, buf, sizeof(buf))) < 0)
		return r;
	if (hw_parse_state(buf, &ps, NULL, 0) < 0)
		return -EINVAL;
	*state = (enum hw_port_state)s;
	*phys_state = (enum hw_phys_state)ps;
	return 0;
}
