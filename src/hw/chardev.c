/* SPDX-License-Identifier: Apache-2.0 */
/* The char devices user space opens (/dev/infiniband/uverbsN, umadN, issmN, rdma_cm), as
 * sysfs announces them, and what the devfs root really holds at each path: a pod without
 * its uverbs node sees no device at all (libibverbs drops it silently). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

/* n emptied, named relpath, the access recorded */
static void devnode_begin(struct hw_ctx *ctx, const char *relpath, struct hw_devnode *n)
{
	memset(n, 0, sizeof(*n));
	(void)str_copy(n->path, sizeof(n->path), relpath);
	if (ctx->recorder)
		ctx->recorder(HW_ROOT_DEVFS, HW_ACCESS_STAT, n->path, ctx->recorder_ud);
}

static void devnode_fill(struct hw_devnode *n, const struct stat *st)
{
	n->present = true;
	n->is_char = S_ISCHR(st->st_mode);
	n->mode = st->st_mode & 07777;
	n->uid = st->st_uid;
	n->gid = st->st_gid;
	if (n->is_char) {
		n->major = major(st->st_rdev);
		n->minor = minor(st->st_rdev);
	}
}

void hw_devnode_stat(struct hw_ctx *ctx, const char *relpath, struct hw_devnode *n)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	devnode_begin(ctx, relpath, n);
	if ((fd = hw_ctx_open(ctx, HW_ROOT_DEVFS, n->path, O_PATH)) < 0 || fstat(fd, &st) < 0)
		return;
	devnode_fill(n, &st);
}

/* infiniband/NAME through dir, devfs's infiniband directory opened in the root (or -errno): one
 * name that is not a link, under a directory inside the root, leads nowhere else, and a
 * thousand VFs' nodes cost one fstatat each instead of open, fstat and close. A link (followed
 * inside the root) or an odd answer takes the walk from the root. */
static void probe_devfs(struct hw_ctx *ctx, int dir, struct hw_chardev *c)
{
	char path[sizeof(c->node.path)];
	struct stat st;
	int r = -EBADF;

	str_concat(path, sizeof(path), "infiniband/", c->name, "");
	if (dir >= 0)
		r = fstatat(dir, c->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	if ((r == 0 && !S_ISLNK(st.st_mode)) || r == -ENOENT) {
		devnode_begin(ctx, path, &c->node);
		if (r == 0)
			devnode_fill(&c->node, &st);
	} else
		hw_devnode_stat(ctx, path, &c->node);
	c->matches = c->node.is_char && c->node.major == c->major && c->node.minor == c->minor;
}

static int load_one(struct hw_build *b, struct hw_chardev *c, const struct hw_dir *cls,
		    const char *name, enum hw_chardev_kind kind, int devdir)
{
	struct hw_node *node = b->node;
	struct hw_dir d = { .fd = -1 };
	char buf[HW_NAME_MAX];
	unsigned long long port;
	int r;

	c->kind = kind;
	str_copy(c->name, sizeof(c->name), name);
	/* the entry's directory walked to once through its class link, its attributes opened one
	 * name deep beneath it */
	if ((r = hw_dir_open(b->ctx, cls, name, &d)) < 0 ||
	    (r = hw_dir_read(b->ctx, &d, "ibdev", buf, sizeof(buf))) < 0) {
		char path[96];

		str_concat(path, sizeof(path), name, "/ibdev", "");
		hw_dir_close(&d);
		return hw_fail(b->err, cls, path, r);
	}
	c->dev = hw_node_rdma(node, buf);
	if (kind != HW_CHR_UVERBS && hw_dir_read(b->ctx, &d, "port", buf, sizeof(buf)) >= 0 &&
	    str_to_u64(buf, 10, &port) >= 0)
		c->port = (unsigned)port;
	if (hw_dir_read(b->ctx, &d, "dev", buf, sizeof(buf)) >= 0)
		hw_parse_devnum(buf, &c->major, &c->minor);
	hw_dir_close(&d);
	probe_devfs(b->ctx, devdir, c);
	if (!c->dev)
		return 0; /* a uverbs for a device in another netns (exclusive mode) */
	if (kind == HW_CHR_UVERBS)
		c->dev->uverbs = c;
	else {
		struct hw_port *p = hw_rdma_port(c->dev, c->port);
		if (p)
			*(kind == HW_CHR_UMAD ? &p->umad : &p->issm) = c;
	}
	return 0;
}

static int load_class(struct hw_build *b, const char *class_path, char ***names, size_t *n,
		      struct hw_dir *d)
{
	int r = hw_dir_open_links(b->ctx, class_path, d);

	*names = NULL;
	*n = 0;
	if (r == -ENOENT) {
		d->fd = -1;
		return 0;
	}
	if (r < 0)
		return hw_fail(b->err, NULL, class_path, r);
	r = hw_dir_list(b->ctx, d, "", names, n);
	return r < 0 ? hw_fail(b->err, d, NULL, r) : 0;
}

struct chardev_job {
	const struct hw_dir *verbs, *mad;
	char **vn, **mn;
	size_t nv;
	int devdir; /* devfs's infiniband directory, or -errno */
};

/* Slot i: uverbs entries first, then umad/issm; each writes its own slot and its own
 * device's uverbs or port's umad/issm pointer. */
static int chardev_job(struct hw_build *b, size_t i, void *ud)
{
	struct chardev_job *j = ud;
	struct hw_chardev *c = &b->node->chardevs[i];

	if (i < j->nv)
		return load_one(b, c, j->verbs, j->vn[i], HW_CHR_UVERBS, j->devdir);
	i -= j->nv;
	return load_one(b, c, j->mad, j->mn[i], j->mn[i][0] == 'u' ? HW_CHR_UMAD : HW_CHR_ISSM,
			j->devdir);
}

/* Keep only the entries named prefix* (the class dirs also hold abi_version). */
static size_t keep_prefixed(char **v, size_t n, const char *p1, const char *p2)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (str_startswith(v[i], p1) || (p2 && str_startswith(v[i], p2)))
			v[k++] = v[i];
		else
			free(v[i]);
	}
	if (v)
		v[k] = NULL;
	return k;
}

int hw_load_chardevs(struct hw_build *b)
{
	struct hw_node *node = b->node;
	struct hw_dir verbs = { .fd = -1 }, mad = { .fd = -1 }, misc;
	_cleanup_close_ int devdir = -1;
	char **vn = NULL, **mn = NULL, buf[32];
	size_t nv = 0, nm = 0;
	long long abi;
	int r;

	node->kernel.uverbs_abi = -1;
	if ((r = load_class(b, "class/infiniband_verbs", &vn, &nv, &verbs)) < 0 ||
	    (r = load_class(b, "class/infiniband_mad", &mn, &nm, &mad)) < 0)
		goto out;
	node->chardevs = calloc(nv + nm + 1, sizeof(*node->chardevs));
	if (!node->chardevs) {
		r = -ENOMEM;
		goto out;
	}
	if (verbs.fd >= 0 && hw_read_int(b->ctx, &verbs, "abi_version", 10, &abi) >= 0)
		node->kernel.uverbs_abi = (int)abi;
	nv = keep_prefixed(vn, nv, "uverbs", NULL);
	nm = keep_prefixed(mn, nm, "umad", "issm");
	devdir = hw_ctx_open(b->ctx, HW_ROOT_DEVFS, "infiniband", O_PATH | O_DIRECTORY);
	{
		struct chardev_job job = { &verbs, &mad, vn, mn, nv, devdir };

		node->n_chardevs = nv + nm;
		r = hw_for_items(b, nv + nm, chardev_job, &job);
	}
	/* rdma_cm is a misc device: class/misc/rdma_cm exists once rdma_ucm is loaded */
	if (r >= 0 && hw_dir_open(b->ctx, NULL, "class/misc/rdma_cm", &misc) >= 0) {
		struct hw_chardev *c = &node->chardevs[node->n_chardevs++];

		c->kind = HW_CHR_RDMA_CM;
		str_copy(c->name, sizeof(c->name), "rdma_cm");
		if (hw_dir_read(b->ctx, &misc, "dev", buf, sizeof(buf)) >= 0)
			hw_parse_devnum(buf, &c->major, &c->minor);
		hw_dir_close(&misc);
		probe_devfs(b->ctx, devdir, c);
	}
out:
	strv_free(vn);
	strv_free(mn);
	hw_dir_close(&verbs);
	hw_dir_close(&mad);
	return r < 0 ? r : 0;
}
