/* SPDX-License-Identifier: Apache-2.0 */
/* Devices in pods' network namespaces. In the RDMA subsystem's exclusive mode a device the RDMA
 * CNI moved into a pod is in no sysfs the host mounted: sysfs shows class/infiniband (and
 * class/net) as the namespace that mounted it sees them. So each scrape lists the runtime's
 * namespace files, enters each one on this thread just long enough to mount a detached sysfs
 * there (nl_netns_sysfs), and reads that namespace's devices through it, with the same code as
 * the host's. Nothing is kept between scrapes: a mount holds its namespace alive, and a pod's
 * namespace that lives on keeps its VF from going back to the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exporter/internal.h"
#include "nl/nl.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

/* The host's ib_core netns_mode: "N" is exclusive (the kernel's bool parameter, bound to what
 * `rdma system set netns` changes). Absent (no ib_core) or "Y": not exclusive. */
static bool mode_exclusive(struct hw_ctx *ctx)
{
	char buf[8];
	ssize_t n = hw_ctx_read(ctx, HW_ROOT_SYSFS, "module/ib_core/parameters/netns_mode", buf,
				sizeof(buf) - 1);

	return n > 0 && buf[0] == 'N';
}

int exporter_netns_enable(struct exporter *e, const char *dir, bool sysfs_folders)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *copy;
	int r;

	if (fd < 0)
		return -errno;
	if (!sysfs_folders) {
		/* the privilege, now rather than at every scrape: our own namespace's sysfs */
		_cleanup_close_ int self = -1;
		int mnt = -1;

		r = nl_netns_open_self(&self);
		if (r < 0)
			return r;
		r = nl_netns_sysfs(self, &mnt);
		if (r < 0)
			return r;
		close(mnt);
	}
	copy = strdup(dir);
	if (!copy)
		return -ENOMEM;
	free(e->netns_dir);
	e->netns_dir = copy;
	e->netns_sysfs = sysfs_folders;
	return mode_exclusive(e->ctx);
}

static void view_clear(struct exp_view *v)
{
	if (v->netns_fd >= 0)
		close(v->netns_fd);
	free(v->name);
	hw_ctx_free(v->ctx);
	exporter_devset_free(v->devset, v->n_devset);
	memset(v, 0, sizeof(*v));
	v->netns_fd = -1;
}

void exporter_views_close(struct exp_views *v)
{
	for (size_t i = 0; i < v->n; i++)
		view_clear(&v->v[i]);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/* Namespace `name` into v: 1 when it holds RDMA devices (v->ctx over its sysfs, v->devset, and
 * v->netns_fd the namespace: -1 for a folder), 0 when it holds none, is gone meanwhile or is no
 * namespace (a file left behind), -errno when it could not be entered, mounted or listed. A
 * namespace without devices costs its mount and one listing: no context is made for it. */
static int view_open(struct exporter *e, const char *name, struct exp_view *v)
{
	_cleanup_close_ int ns = -1, root = -1;
	char path[PATH_MAX];
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", e->netns_dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (e->netns_sysfs) {
		root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	} else {
		r = nl_netns_open(path, &ns);
		if (r == -ENOENT || r == -EINVAL)
			return 0;
		if (r < 0)
			return r;
		r = nl_netns_sysfs(ns, &root);
		if (r < 0)
			return r;
	}
	r = exporter_devset_read_at(root, &v->devset, &v->n_devset);
	if (r < 0 || v->n_devset == 0)
		return r;
	/* the context opens its own fd on the root: ours can go */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", root);
	r = hw_ctx_new(path, NULL, &v->ctx);
	if (r < 0)
		return r;
	v->netns_fd = TAKE_FD(ns);
	return 1;
}

int exporter_views_open(struct exporter *e, struct exp_views *ret)
{
	_cleanup_close_ int fd = -1;
	char **names = NULL;
	size_t n = 0;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (!e->netns_dir || !mode_exclusive(e->ctx))
		return 0;
	fd = open(e->netns_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fileio_list_dir(fd, FILEIO_LIST_NO_HIDDEN, &names, &n) < 0) {
		atomic_fetch_add(&e->netns_errors, 1);
		return 0;
	}
	ret->v = calloc(n ? n : 1, sizeof(*ret->v));
	if (!ret->v) {
		strv_free(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct exp_view *v = &ret->v[ret->n];

		ret->scanned++;
		v->netns_fd = -1;
		r = view_open(e, names[i], v);
		if (r <= 0) {
			if (r < 0 && r != -ENOMEM)
				atomic_fetch_add(&e->netns_errors, 1);
			r = r == -ENOMEM ? r : 0;
			view_clear(v);
			continue;
		}
		v->name = names[i];
		names[i] = NULL;
		ret->n++;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	atomic_store(&e->netns_scanned, ret->scanned);
	if (r < 0)
		exporter_views_close(ret);
	return r < 0 ? r : 0;
}

const struct exp_view *exporter_views_find(const struct exp_views *v, const char *name)
{
	for (size_t i = 0; v && name && i < v->n; i++)
		if (!strcmp(v->v[i].name, name))
			return &v->v[i];
	return NULL;
}

bool exporter_views_match(const struct exp_views *v, const struct exp_topo *t)
{
	size_t k = 0;

	for (size_t i = 0; i < v->n; i++)
		for (size_t j = 0; j < v->v[i].n_devset; j++, k++) {
			const char *s = k < t->n_ns_devset ? t->ns_devset[k] : NULL;
			size_t len = strlen(v->v[i].name);

			if (!s || strncmp(s, v->v[i].name, len) || s[len] != '/' ||
			    strcmp(s + len + 1, v->v[i].devset[j]))
				return false;
		}
	return k == t->n_ns_devset;
}
