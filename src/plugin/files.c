/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

int plugin_files_cdi_name(const struct pool *p, char *buf, size_t n)
{
	int l = snprintf(buf, n, "rdmak-%s_%s.json", p->res->prefix, p->res->name);

	return l < 0 || (size_t)l >= n ? -ENAMETOOLONG : 0;
}

static json_t *device_nodes(const struct kubelet_device_spec *s, size_t n, bool rdma_cm)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		bool is_cm = strcmp(s[i].host_path, "/dev/infiniband/rdma_cm") == 0;

		if (is_cm != rdma_cm)
			continue;
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "path", s[i].container_path,
						   "hostPath", s[i].host_path, "permissions",
						   s[i].permissions));
	}
	return a;
}

json_t *plugin_files_cdi_spec(const struct pool *p)
{
	json_t *spec, *devs, *common = NULL;

	spec = json_pack("{s:s, s:s}", "cdiVersion", "0.6.0", "kind", p->res->full_name);
	devs = json_array();
	if (!spec || !devs) {
		json_decref(spec);
		json_decref(devs);
		return NULL;
	}
	for (size_t i = 0; i < p->n_m; i++) {
		const struct pool_member *m = &p->m[i];

		json_array_append_new(devs, json_pack("{s:s, s:{s:o}}", "name", m->id,
						      "containerEdits", "deviceNodes",
						      device_nodes(m->specs, m->n_specs, false)));
		/* rdma_cm is one node for the whole host: spec-wide edits add it once */
		if (!common) {
			json_t *cm = device_nodes(m->specs, m->n_specs, true);

			if (json_array_size(cm))
				common = cm;
			else
				json_decref(cm);
		}
	}
	json_object_set_new(spec, "devices", devs);
	if (common)
		json_object_set_new(spec, "containerEdits",
				    json_pack("{s:o}", "deviceNodes", common));
	return spec;
}

/* ---- Multus device-info ------------------------------------------------------------- */

int plugin_files_devinfo_name(const struct pool *p, const char *id, char *buf, size_t n)
{
	int l;

	/* the device-info spec's DP path: "<resource name with '/' as '-'>-<id>-device.json" */
	l = snprintf(buf, n, "%s-%s-%s-device.json", p->res->prefix, p->res->name, id);
	if (l < 0 || (size_t)l >= n)
		return -ENAMETOOLONG;
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '-';
	return 0;
}

char *plugin_files_devinfo_json(const struct pool *p, const struct pool_member *m)
{
	json_t *doc;
	char *s;

	doc = json_pack("{s:s, s:s, s:{s:s}}", "type", "pci", "version", "1.1.0", "pci",
			"pci-address", m->id);
	if (!doc)
		return NULL;
	if (m->rdma[0])
		json_object_set_new(json_object_get(doc, "pci"), "rdma-device",
				    json_string(m->rdma));
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

/* ---- writing and removing them ------------------------------------------------------ */

void plugin_files_remove(const char *dir, struct plugin_files_written *w, plugin_files_fail_fn fail,
			 void *ud)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	for (size_t i = 0; dfd >= 0 && i < w->n; i++)
		if (unlinkat(dfd, w->names[i], 0) < 0 && errno != ENOENT) {
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/%s", dir, w->names[i]);
			fail(ud, path, -errno);
		}
	strv_free(w->names);
	*w = (struct plugin_files_written){ 0 };
}

static int open_dir(const char *dir)
{
	int r = fileio_mkdir_p(dir, 0755, 0755), fd;

	if (r < 0)
		return r;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Whether name already is a regular file of this mode holding exactly text. */
static bool file_holds(int dfd, const char *name, const char *text, size_t len, mode_t mode)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t n = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != mode ||
	    (size_t)st.st_size != len)
		return false;
	return fileio_read_fd(fd, len, &buf, &n) >= 0 && n == len && memcmp(buf, text, len) == 0;
}

/* Write name in dirfd, unless it already holds text, and remember it; 1 in place, 0 failed
 * (reported). Every rescan comes here for every file: an fsync'd rewrite of a thousand
 * unchanged files would hold the daemon loop, and with it the health poll, on a busy disk. */
static int write_one(int dfd, const char *dir, const char *name, const char *text, mode_t mode,
		     struct plugin_files_written *w, plugin_files_fail_fn fail, void *ud)
{
	size_t len = strlen(text);
	int r = file_holds(dfd, name, text, len, mode)
			? 0
			: fileio_write_atomic_at(dfd, name, text, len, mode);

	if (r >= 0)
		r = strv_extend(&w->names, &w->n, name);
	if (r < 0) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		fail(ud, path, r);
		return 0;
	}
	return 1;
}

int plugin_files_devinfo_write(const struct pool_set *ps, plugin_files_keep_fn keep,
			       const char *dir, struct plugin_files_written *w,
			       plugin_files_fail_fn fail, void *ud)
{
	_cleanup_close_ int dfd = -1;
	int written = 0;

	for (size_t i = 0; i < ps->n; i++) {
		const struct pool *p = &ps->pools[i];

		if (p->res->kind != POOL_EXCLUSIVE || !p->n_m || !keep(ud, p))
			continue;
		if (dfd < 0 && (dfd = open_dir(dir)) < 0)
			return dfd;
		for (size_t j = 0; j < p->n_m; j++) {
			_cleanup_free_ char *json = plugin_files_devinfo_json(p, &p->m[j]);
			char name[256];

			if (json &&
			    plugin_files_devinfo_name(p, p->m[j].id, name, sizeof(name)) >= 0)
				written += write_one(dfd, dir, name, json, 0444, w, fail, ud);
		}
	}
	return written;
}

int plugin_files_cdi_write(const struct pool_set *ps, plugin_files_keep_fn keep, const char *dir,
			   struct plugin_files_written *w, plugin_files_fail_fn fail, void *ud)
{
	_cleanup_close_ int dfd = open_dir(dir);
	int written = 0;

	if (dfd < 0)
		return dfd;
	for (size_t i = 0; i < ps->n; i++) {
		const struct pool *p = &ps->pools[i];
		json_t *spec = keep(ud, p) ? plugin_files_cdi_spec(p) : NULL;
		_cleanup_free_ char *text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
		char name[300];

		json_decref(spec);
		if (text && plugin_files_cdi_name(p, name, sizeof(name)) >= 0)
			written += write_one(dfd, dir, name, text, 0644, w, fail, ud);
	}
	return written;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Remove the files of *w that nw does not name, then make *w what nw was (nw emptied). */
static void files_replace(const char *dir, struct plugin_files_written *w,
			  struct plugin_files_written *nw, plugin_files_fail_fn fail, void *ud)
{
	struct plugin_files_written stale = { 0 };

	/* nw's order means nothing (a list of names to remove one day): sort it to search it */
	if (nw->n)
		qsort(nw->names, nw->n, sizeof(*nw->names), name_cmp);
	for (size_t i = 0; i < w->n; i++) {
		if (nw->n && bsearch(&w->names[i], nw->names, nw->n, sizeof(*nw->names), name_cmp))
			continue;
		/* move the name over; on ENOMEM it is forgotten, never removed while it may be ours */
		if (strv_extend(&stale.names, &stale.n, w->names[i]) < 0)
			fail(ud, w->names[i], -ENOMEM);
	}
	plugin_files_remove(dir, &stale, fail, ud);
	strv_free(w->names);
	*w = *nw;
	*nw = (struct plugin_files_written){ 0 };
}

int plugin_files_devinfo_update(const struct pool_set *ps, plugin_files_keep_fn keep,
				const char *dir, struct plugin_files_written *w,
				plugin_files_fail_fn fail, plugin_files_fail_fn fail_rm, void *ud)
{
	struct plugin_files_written nw = { 0 };
	int r = plugin_files_devinfo_write(ps, keep, dir, &nw, fail, ud);

	files_replace(dir, w, &nw, fail_rm, ud);
	return r;
}

int plugin_files_cdi_update(const struct pool_set *ps, plugin_files_keep_fn keep, const char *dir,
			    struct plugin_files_written *w, plugin_files_fail_fn fail,
			    plugin_files_fail_fn fail_rm, void *ud)
{
	struct plugin_files_written nw = { 0 };
	int r = plugin_files_cdi_write(ps, keep, dir, &nw, fail, ud);

	files_replace(dir, w, &nw, fail_rm, ud);
	return r;
}
