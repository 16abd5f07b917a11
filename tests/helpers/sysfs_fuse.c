/* SPDX-License-Identifier: Apache-2.0 */
/* A FUSE stand-in for a node's /sys with the kernel's SR-IOV behaviour (test-only).
 *
 *   sysfs_fuse BACKING MOUNTPOINT [--log FILE]
 *
 * Serves BACKING (a sample node's sys/ tree, tools/gen-nodes.py; never written) at MOUNTPOINT,
 * in the foreground, until unmounted (fusermount3 -u). Each PF (a PCI function with
 * sriov_totalvfs) keeps its number of VFs in memory, and `sriov_numvfs` behaves as
 * drivers/pci/iov.c's sriov_numvfs_store():
 *   - the value is parsed as kstrtou16(buf, 0): junk or > 65535 is EINVAL;
 *   - N > sriov_totalvfs is ERANGE (checked before anything else, as the kernel does);
 *   - N equal to the current number succeeds and changes nothing;
 *   - a PF without a bound driver is ENOENT ("Driver does not support SRIOV configuration");
 *   - 0 removes every VF;
 *   - N while N' != 0 VFs are enabled is EBUSY ("Disable before enabling");
 *   - otherwise VFs 0..N-1 appear.
 * A VF that appears shows what the PCI core makes (its function directory, `physfn`, the PF's
 * `virtfnK`, bus/pci/devices/<BDF>) and, when the PF's sriov_drivers_autoprobe is 1 (also kept in
 * memory, writable), what its driver makes on probe: `driver`, the driver directory's link, its
 * net/ and infiniband, infiniband_mad, infiniband_verbs directories and their /sys/class links.
 *
 * The VFs' entries are those the generator built (so they have the fixture's shape exactly): the
 * stand-in only hides and shows them. A PF can therefore show at most as many VFs as its
 * fixture has (cx5-roce-sriov: 12 of 16); asking for more is refused with ENOSPC and a line on
 * stderr — a limit of the stand-in, not kernel behaviour.
 *
 * A VF's driver binds and unbinds as drivers/base/bus.c and drivers/pci/pci-driver.c define
 * (the files are served here; the fixtures have none but driver_override):
 *   - bus/pci/drivers/<drv>/bind: no such device, or a driver that does not match it (the
 *     fixture's VF driver is the only one that matches, and driver_override, when set, must
 *     name it: pci_match_device) is ENODEV; a device already bound is EBUSY (driver_probe_device);
 *   - bus/pci/drivers/<drv>/unbind: a device not bound to <drv> is ENODEV;
 *   - bus/pci/drivers_probe: no such device is ENODEV; a bound one stays as it is; an unbound
 *     one gets its driver when one matches (driver_override), otherwise stays unbound, and the
 *     write succeeds either way (bus_rescan_devices_helper);
 *   - <VF>/driver_override: reads "(null)" when unset; a write sets it, "\n" or "" clears it.
 * Binding shows what probing adds (above: `driver`, net/, the /sys/class links), unbinding
 * hides it again; a VF that numVfs removes loses its binding and its override, and a new one
 * binds as sriov_drivers_autoprobe says. A PF's own binding is not modelled: bind/unbind of a
 * PF is EPERM. Not modelled either: /dev nodes (udev's, not sysfs), pci_vfs_assigned().
 *
 * --log FILE appends one line per sriov_numvfs store: "<PF BDF> <value> <result>", and one per
 * bind, unbind or drivers_probe write: "<device> bind|unbind|drivers_probe[ <drv>] <result>",
 * where result is "ok" or the errno name, so that tests can check the order of an apply's
 * writes. */
#define FUSE_USE_VERSION 35
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PF	      64
#define MAX_VF	      256
#define MAX_DRV_PATHS 16

struct vf {
	char bdf[16];
	char pci[3][PATH_MAX];		   /* virtfnK on the PF, the function dir, bus link */
	char drv[MAX_DRV_PATHS][PATH_MAX]; /* what probing the VF driver adds */
	int ndrv;
	char driver[64];   /* the fixture's driver of this VF ("" none) */
	char override[64]; /* driver_override ("" unset) */
	bool bound;
};

struct pf {
	char bdf[16];
	char dir[PATH_MAX]; /* devices/... relative to the backing root */
	unsigned total, num, autoprobe;
	bool has_driver;
	struct vf *vfs; /* the fixture's VFs, in virtfn order */
	unsigned nshapes;
};

static int backing = -1;
static struct pf pfs[MAX_PF];
static unsigned npf;
static FILE *store_log;

/* snprintf into a fixed buffer; a name that does not fit is cut (the fixtures' names fit) */
__attribute__((format(printf, 3, 4))) static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static bool under(const char *path, const char *entry)
{
	size_t n = strlen(entry);
	return strncmp(path, entry, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Is this path hidden because its VF does not exist, or is not bound? */
static bool hidden(const char *path)
{
	for (unsigned p = 0; p < npf; p++) {
		struct pf *pf = &pfs[p];
		for (unsigned i = 0; i < pf->nshapes; i++) {
			struct vf *v = &pf->vfs[i];
			bool exists = i < pf->num, bound = exists && v->bound;
			if (!exists)
				for (int k = 0; k < 3; k++)
					if (under(path, v->pci[k]))
						return true;
			if (!bound)
				for (int k = 0; k < v->ndrv; k++)
					if (under(path, v->drv[k]))
						return true;
		}
	}
	return false;
}

enum managed { M_NONE, M_NUMVFS, M_AUTOPROBE, M_OVERRIDE, M_PROBE, M_BIND, M_UNBIND };

/* The existing VF whose function directory is `dir` (length n), or NULL. */
static struct vf *vf_at(const char *dir, size_t n, struct pf **ret_pf)
{
	for (unsigned p = 0; p < npf; p++)
		for (unsigned i = 0; i < pfs[p].num; i++)
			if (strlen(pfs[p].vfs[i].pci[1]) == n &&
			    !strncmp(dir, pfs[p].vfs[i].pci[1], n)) {
				*ret_pf = &pfs[p];
				return &pfs[p].vfs[i];
			}
	return NULL;
}

/* bus/pci/drivers/<drv>/{bind,unbind}: the driver's name in drv (a directory of the fixture's). */
static enum managed driver_file(const char *path, char *drv, size_t len)
{
	static const char prefix[] = "bus/pci/drivers/";
	if (strncmp(path, prefix, sizeof(prefix) - 1))
		return M_NONE;
	const char *name = path + sizeof(prefix) - 1, *slash = strchr(name, '/');
	if (!slash || slash == name || (size_t)(slash - name) >= len)
		return M_NONE;
	enum managed m = !strcmp(slash + 1, "bind")	? M_BIND
			 : !strcmp(slash + 1, "unbind") ? M_UNBIND
							: M_NONE;
	char dir[PATH_MAX];
	pathf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	struct stat st;
	if (m == M_NONE || fstatat(backing, dir, &st, 0) || !S_ISDIR(st.st_mode))
		return M_NONE;
	pathf(drv, len, "%.*s", (int)(slash - name), name);
	return m;
}

/* Files served here that the fixture lacks (bind, unbind, drivers_probe) */
static bool virtual_file(const char *path)
{
	char drv[64];
	return !strcmp(path, "bus/pci/drivers_probe") ||
	       driver_file(path, drv, sizeof(drv)) != M_NONE;
}

static struct pf *managed(const char *path, enum managed *what)
{
	static struct pf none; /* the "PF" of the bus-wide files */
	char drv[64];
	if (!strcmp(path, "bus/pci/drivers_probe") ||
	    (*what = driver_file(path, drv, sizeof(drv))) != M_NONE) {
		if (!strcmp(path, "bus/pci/drivers_probe"))
			*what = M_PROBE;
		return &none;
	}
	const char *base = strrchr(path, '/');
	struct pf *vpf;
	if (base && !strcmp(base + 1, "driver_override") &&
	    vf_at(path, (size_t)(base - path), &vpf)) {
		*what = M_OVERRIDE;
		return vpf;
	}
	for (unsigned p = 0; p < npf; p++) {
		size_t n = strlen(pfs[p].dir);
		if (strncmp(path, pfs[p].dir, n) || path[n] != '/')
			continue;
		if (!strcmp(path + n + 1, "sriov_numvfs")) {
			*what = M_NUMVFS;
			return &pfs[p];
		}
		if (!strcmp(path + n + 1, "sriov_drivers_autoprobe")) {
			*what = M_AUTOPROBE;
			return &pfs[p];
		}
	}
	*what = M_NONE;
	return NULL;
}

static int read_uint(int dirfd, const char *path, unsigned *out)
{
	char buf[32];
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	*out = (unsigned)strtoul(buf, NULL, 10);
	return 0;
}

/* The /sys/class links (and the driver directory's link) that point into a VF's directory. */
static void add_class_links(struct vf *v, const char *classdir)
{
	int fd = openat(backing, classdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	struct dirent *e;
	char needle[32], target[PATH_MAX];
	pathf(needle, sizeof(needle), "/%s/", v->bdf);
	while (d && (e = readdir(d)) && v->ndrv < MAX_DRV_PATHS) {
		ssize_t n = readlinkat(fd, e->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strstr(target, needle))
			pathf(v->drv[v->ndrv++], PATH_MAX, "%s/%s", classdir, e->d_name);
	}
	if (d)
		closedir(d);
}

static int scan_vf(struct pf *pf, unsigned i)
{
	struct vf *v = &pf->vfs[i];
	char link[PATH_MAX], target[PATH_MAX];
	pathf(link, sizeof(link), "%s/virtfn%u", pf->dir, i);
	ssize_t n = readlinkat(backing, link, target, sizeof(target) - 1);
	if (n <= 0)
		return -ENOENT;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	pathf(v->bdf, sizeof(v->bdf), "%s", base ? base + 1 : target);
	pathf(v->pci[0], PATH_MAX, "%s", link);
	char *slash = strrchr(pf->dir, '/');
	pathf(v->pci[1], PATH_MAX, "%.*s/%s", (int)(slash - pf->dir), pf->dir, v->bdf);
	pathf(v->pci[2], PATH_MAX, "bus/pci/devices/%s", v->bdf);
	/* what the VF driver adds on probe: `driver` and every subdirectory (net, infiniband*) */
	int fd = openat(backing, v->pci[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char drv[PATH_MAX] = "";
	n = readlinkat(fd, "driver", target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		base = strrchr(target, '/');
		pathf(drv, sizeof(drv), "bus/pci/drivers/%s/%s", base ? base + 1 : target, v->bdf);
		pathf(v->driver, sizeof(v->driver), "%s", base ? base + 1 : target);
		pathf(v->drv[v->ndrv++], PATH_MAX, "%s/driver", v->pci[1]);
		pathf(v->drv[v->ndrv++], PATH_MAX, "%s", drv);
	}
	DIR *d = fdopendir(fd);
	struct dirent *e;
	while (d && (e = readdir(d)) && v->ndrv < MAX_DRV_PATHS) {
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			pathf(v->drv[v->ndrv++], PATH_MAX, "%s/%s", v->pci[1], e->d_name);
	}
	if (d)
		closedir(d);
	static const char *const classes[] = { "class/net", "class/infiniband",
					       "class/infiniband_verbs", "class/infiniband_mad" };
	for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++)
		add_class_links(v, classes[k]);
	return 0;
}

static int scan(void)
{
	int fd = openat(backing, "bus/pci/devices", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	struct dirent *e;
	char path[PATH_MAX], target[PATH_MAX];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || npf >= MAX_PF)
			continue;
		pathf(path, sizeof(path), "bus/pci/devices/%s/sriov_totalvfs", e->d_name);
		if (faccessat(backing, path, F_OK, 0))
			continue;
		struct pf *pf = &pfs[npf];
		ssize_t n = readlinkat(fd, e->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		/* "../../../devices/..." relative to bus/pci/devices */
		const char *dev = strstr(target, "devices/");
		if (!dev)
			continue;
		pathf(pf->bdf, sizeof(pf->bdf), "%s", e->d_name);
		pathf(pf->dir, sizeof(pf->dir), "%s", dev);
		pathf(path, sizeof(path), "%s/sriov_totalvfs", pf->dir);
		if (read_uint(backing, path, &pf->total))
			continue;
		pathf(path, sizeof(path), "%s/sriov_numvfs", pf->dir);
		unsigned file_num = 0;
		read_uint(backing, path, &file_num);
		pathf(path, sizeof(path), "%s/sriov_drivers_autoprobe", pf->dir);
		pf->autoprobe = 1;
		read_uint(backing, path, &pf->autoprobe);
		pathf(path, sizeof(path), "%s/driver", pf->dir);
		pf->has_driver = faccessat(backing, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		pf->vfs = calloc(MAX_VF, sizeof(*pf->vfs));
		if (!pf->vfs)
			return -ENOMEM;
		while (pf->nshapes < MAX_VF && scan_vf(pf, pf->nshapes) == 0)
			pf->nshapes++;
		if (pf->nshapes != file_num) {
			fprintf(stderr, "sysfs_fuse: %s: sriov_numvfs says %u, %u virtfn links\n",
				pf->bdf, file_num, pf->nshapes);
			return -EINVAL;
		}
		pf->num = pf->nshapes;
		for (unsigned i = 0; i < pf->num; i++)
			pf->vfs[i].bound = pf->autoprobe && pf->vfs[i].driver[0];
		npf++;
	}
	if (d)
		closedir(d);
	return 0;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	const char *r = rel(path);
	if (hidden(r))
		return -ENOENT;
	if (virtual_file(r)) {
		/* write-only, as the kernel's bind/unbind/drivers_probe (S_IWUSR) */
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFREG | 0200;
		st->st_nlink = 1;
		st->st_size = 4096;
		return 0;
	}
	if (fstatat(backing, r, st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	enum managed m;
	if (managed(r, &m))
		st->st_size = 4096; /* as sysfs reports every attribute */
	return 0;
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	const char *r = rel(path);
	if (hidden(r))
		return -ENOENT;
	ssize_t n = readlinkat(backing, r, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	const char *r = rel(path);
	if (hidden(r))
		return -ENOENT;
	int fd = openat(backing, r, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *e;
	char child[PATH_MAX];
	while ((e = readdir(d))) {
		if (strcmp(r, "."))
			pathf(child, sizeof(child), "%s/%s", r, e->d_name);
		else
			pathf(child, sizeof(child), "%s", e->d_name);
		if (e->d_name[0] != '.' && hidden(child))
			continue;
		if (fill(buf, e->d_name, NULL, 0, 0))
			break;
	}
	closedir(d);
	static const char *const extra[] = { "drivers_probe", "bind", "unbind" };
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		pathf(child, sizeof(child), "%s/%s", r, extra[i]);
		if (virtual_file(child))
			fill(buf, extra[i], NULL, 0, 0);
	}
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	const char *r = rel(path);
	if (hidden(r))
		return -ENOENT;
	enum managed m;
	managed(r, &m);
	if ((fi->flags & O_ACCMODE) != O_RDONLY && m == M_NONE)
		return -EACCES; /* only the SR-IOV and driver attributes are writable here */
	if (virtual_file(r)) {
		fi->fh = UINT64_MAX;
		fi->direct_io = 1;
		return 0;
	}
	int fd = openat(backing, r, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1; /* every read asks again, as sysfs's show() runs on every read */
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	enum managed m;
	struct pf *pf = managed(rel(path), &m);
	if (!pf) {
		ssize_t n = pread((int)fi->fh, buf, size, off);
		return n < 0 ? -errno : (int)n;
	}
	char text[80];
	int len;
	if (m == M_PROBE || m == M_BIND || m == M_UNBIND)
		return -EIO; /* no show() */
	if (m == M_OVERRIDE) {
		struct pf *vpf;
		const char *base = strrchr(rel(path), '/');
		struct vf *v = vf_at(rel(path), (size_t)(base - rel(path)), &vpf);
		len = pathf(text, sizeof(text), "%s\n",
			    v && v->override[0] ? v->override : "(null)");
	} else
		len = pathf(text, sizeof(text), "%u\n", m == M_NUMVFS ? pf->num : pf->autoprobe);
	if (off >= len)
		return 0;
	size_t n = (size_t)(len - off) < size ? (size_t)(len - off) : size;
	memcpy(buf, text + off, n);
	return (int)n;
}

/* kstrtou16(buf, 0, &v): an optional trailing newline, base from the prefix. */
static int parse_u16(const char *buf, size_t size, unsigned *out)
{
	char text[32];
	if (size == 0 || size >= sizeof(text))
		return -EINVAL;
	memcpy(text, buf, size);
	text[size] = '\0';
	if (text[size - 1] == '\n')
		text[size - 1] = '\0';
	if (!text[0] || text[0] == '-' || text[0] == '+' || text[0] == ' ')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long v = strtoul(text, &end, 0);
	if (errno || *end || v > 0xffff)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int numvfs_store(struct pf *pf, unsigned n)
{
	if (n > pf->total)
		return -ERANGE;
	if (n == pf->num)
		return 0;
	if (!pf->has_driver)
		return -ENOENT;
	if (n == 0) {
		/* pci_iov_remove_virtfn: the devices go, with their binding and override */
		for (unsigned i = 0; i < pf->num; i++)
			pf->vfs[i].bound = false, pf->vfs[i].override[0] = '\0';
		pf->num = 0;
		return 0;
	}
	if (pf->num)
		return -EBUSY;
	if (n > pf->nshapes) {
		fprintf(stderr,
			"sysfs_fuse: %s: the fixture has the "
			"shape of %u VFs, not %u (a stand-in "
			"limit)\n",
			pf->bdf, pf->nshapes, n);
		return -ENOSPC;
	}
	for (unsigned i = 0; i < n; i++)
		pf->vfs[i].bound = pf->autoprobe && pf->vfs[i].driver[0];
	pf->num = n;
	return 0;
}

static const char *err_name(int r)
{
	return r == 0	      ? "ok"
	       : r == -EBUSY  ? "EBUSY"
	       : r == -ERANGE ? "ERANGE"
	       : r == -ENOENT ? "ENOENT"
	       : r == -ENOSPC ? "ENOSPC"
	       : r == -ENODEV ? "ENODEV"
	       : r == -EPERM  ? "EPERM"
			      : "EINVAL";
}

/* The existing VF named bdf; *is_device: any PCI device of the fixture by that name. */
static struct vf *find_vf(const char *bdf, bool *is_device)
{
	char path[PATH_MAX];
	pathf(path, sizeof(path), "bus/pci/devices/%s", bdf);
	*is_device = bdf[0] && !strchr(bdf, '/') && !hidden(path) &&
		     !faccessat(backing, path, F_OK, AT_SYMLINK_NOFOLLOW);
	for (unsigned p = 0; p < npf; p++)
		for (unsigned i = 0; i < pfs[p].num; i++)
			if (!strcmp(pfs[p].vfs[i].bdf, bdf))
				return &pfs[p].vfs[i];
	return NULL;
}

/* pci_match_device: the fixture's VF driver is the one whose id table has the VF, and a
 * driver_override, when set, must name the driver */
static bool matches(const struct vf *v, const char *drv)
{
	return v->driver[0] && !strcmp(v->driver, drv) &&
	       (!v->override[0] || !strcmp(v->override, drv));
}

static int driver_store(enum managed m, const char *drv, const char *bdf)
{
	bool device;
	struct vf *v = find_vf(bdf, &device);
	if (!v)
		return device ? -EPERM : -ENODEV; /* a PF's own binding is not modelled */
	switch (m) {
	case M_BIND: /* bind_store → device_driver_attach → __driver_probe_device */
		if (!matches(v, drv))
			return -ENODEV;
		if (v->bound)
			return -EBUSY;
		v->bound = true;
		return 0;
	case M_UNBIND: /* unbind_store: dev->driver == drv */
		if (!v->bound || strcmp(v->driver, drv))
			return -ENODEV;
		v->bound = false;
		return 0;
	default: /* drivers_probe_store → bus_rescan_devices_helper → device_attach */
		if (!v->bound && matches(v, v->override[0] ? v->override : v->driver))
			v->bound = true;
		return 0;
	}
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	enum managed m;
	struct pf *pf = managed(rel(path), &m);
	unsigned n;
	if (!pf)
		return -EACCES;
	if (m == M_PROBE || m == M_BIND || m == M_UNBIND || m == M_OVERRIDE) {
		char text[80], drv[64] = "";
		size_t len = size && buf[size - 1] == '\n' ? size - 1 : size;
		/* driver_override_store: count >= PAGE_SIZE is EINVAL; the names here are short */
		if (len >= sizeof(text))
			return -EINVAL;
		pathf(text, sizeof(text), "%.*s", (int)len, buf);
		if (m == M_OVERRIDE) {
			struct pf *vpf;
			const char *base = strrchr(rel(path), '/');
			struct vf *v = vf_at(rel(path), (size_t)(base - rel(path)), &vpf);
			if (!v || len >= sizeof(v->override))
				return -EINVAL;
			pathf(v->override, sizeof(v->override), "%s", text);
			return (int)size;
		}
		if (m != M_PROBE)
			driver_file(rel(path), drv, sizeof(drv));
		int r = driver_store(m, drv, text);
		if (store_log) {
			fprintf(store_log, "%s %s%s%s %s\n", text,
				m == M_BIND	? "bind"
				: m == M_UNBIND ? "unbind"
						: "drivers_probe",
				drv[0] ? " " : "", drv, err_name(r));
			fflush(store_log);
		}
		return r < 0 ? r : (int)size;
	}
	int r = parse_u16(buf, size, &n);
	if (r == 0 && m == M_NUMVFS)
		r = numvfs_store(pf, n);
	else if (r == 0)
		pf->autoprobe =
			n != 0; /* kstrtobool in the kernel; 0/1 is all this stand-in takes */
	if (store_log && m == M_NUMVFS) {
		size_t len = strcspn(buf, "\n");
		fprintf(store_log, "%s %.*s %s\n", pf->bdf, (int)(len < size ? len : size), buf,
			err_name(r));
		fflush(store_log);
	}
	return r < 0 ? r : (int)size;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	enum managed m;
	return managed(rel(path), &m) ? 0 : -EACCES; /* O_TRUNC on a sysfs file is a no-op */
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	if (fi->fh != UINT64_MAX)
		close((int)fi->fh);
	return 0;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* VFs come and go: nothing may be cached */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->direct_io = 1;
	return NULL;
}

static const struct fuse_operations ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.truncate = fs_truncate,
	.release = fs_release,
};

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 5 && !strcmp(argv[3], "--log"))) {
		fprintf(stderr, "usage: sysfs_fuse BACKING MOUNTPOINT [--log FILE]\n");
		return 2;
	}
	backing = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing < 0) {
		perror(argv[1]);
		return 1;
	}
	if (argc == 5 && !(store_log = fopen(argv[4], "a"))) {
		perror(argv[4]);
		return 1;
	}
	int r = scan();
	if (r < 0) {
		fprintf(stderr, "sysfs_fuse: reading %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	/* foreground, one thread (the state above has no lock), other users may read it */
	char *fargv[] = { argv[0], "-f", "-s", "-o", "allow_other,fsname=sysfs_standin",
			  argv[2], NULL };
	return fuse_main(6, fargv, &ops, NULL);
}
