/* SPDX-License-Identifier: Apache-2.0 */
/* The roots the model reads from, and the only functions in src/hw that touch the
 * file system: everything is resolved inside a root fd (util/inroot.h), never from "/": an
 * absolute symlink in a --root tree (fw_ver -> /etc/hostname) resolves under the root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/hw-internal.h"
#include "util/cleanup.h"
#include "util/inroot.h"
#include "util/strutil.h"
#include "util/strv.h"

static const char *const root_sub[HW_ROOT_N] = { "/sys", "/dev", "/proc", "" };
static const char *const root_default[HW_ROOT_N] = { "/sys", "/dev", "/proc", "/" };

bool hw_roots_option(struct hw_roots *r, int c, const char *arg)
{
	switch (c) {
	case HW_OPT_ROOT: r->root = arg; return true;
	case HW_OPT_SYSFS: r->dir[HW_ROOT_SYSFS] = arg; return true;
	case HW_OPT_DEVFS: r->dir[HW_ROOT_DEVFS] = arg; return true;
	case HW_OPT_PROCFS: r->dir[HW_ROOT_PROCFS] = arg; return true;
	case HW_OPT_IMAGE: r->dir[HW_ROOT_IMAGE] = arg; return true;
	default: return false;
	}
}

/* --root DIR with DIR/sys missing: name DIR when it is DIR that is missing */
static void name_missing(const struct hw_roots *r, const char *sysfs, char *missing, size_t n)
{
	struct stat st;

	if (!missing || !n)
		return;
	if (!r->dir[HW_ROOT_SYSFS] && r->root && stat(r->root, &st) < 0)
		snprintf(missing, n, "%s (--root)", r->root);
	else
		snprintf(missing, n, "%s", sysfs);
}

int hw_ctx_new_roots(const struct hw_roots *r, struct hw_ctx **ret, char *missing,
		     size_t missing_len)
{
	struct hw_ctx *ctx = calloc(1, sizeof(*ctx));
	int e;

	if (!ctx)
		return -ENOMEM;
	for (int i = 0; i < HW_ROOT_N; i++)
		ctx->fd[i] = -ENOENT;
	for (int i = 0; i < HW_ROOT_N; i++) {
		/* --root / is this machine's own roots */
		const char *root = r->root && strcmp(r->root, "/") ? r->root : NULL;

		if (r->dir[i])
			ctx->path[i] = strdup(r->dir[i]);
		else if (!root)
			ctx->path[i] = strdup(root_default[i]);
		else if (asprintf(&ctx->path[i], "%s%s", root, root_sub[i]) < 0)
			ctx->path[i] = NULL;
		if (!ctx->path[i]) {
			hw_ctx_free(ctx);
			return -ENOMEM;
		}
		ctx->fd[i] = open(ctx->path[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (ctx->fd[i] < 0)
			ctx->fd[i] = -errno;
	}
	if (ctx->fd[HW_ROOT_SYSFS] < 0) {
		e = ctx->fd[HW_ROOT_SYSFS];
		name_missing(r, ctx->path[HW_ROOT_SYSFS], missing, missing_len);
		hw_ctx_free(ctx);
		return e;
	}
	*ret = ctx;
	return 0;
}

int hw_ctx_new(const char *sysfs, const char *devfs, struct hw_ctx **ret)
{
	struct hw_roots r = { .dir = { [HW_ROOT_SYSFS] = sysfs, [HW_ROOT_DEVFS] = devfs } };

	return hw_ctx_new_roots(&r, ret, NULL, 0);
}

void hw_ctx_free(struct hw_ctx *ctx)
{
	if (!ctx)
		return;
	for (int i = 0; i < HW_ROOT_N; i++) {
		if (ctx->fd[i] >= 0)
			close(ctx->fd[i]);
		free(ctx->path[i]);
	}
	free(ctx);
}

const char *hw_ctx_root(const struct hw_ctx *ctx, enum hw_root root)
{
	return ctx->path[root];
}
int hw_ctx_root_fd(const struct hw_ctx *ctx, enum hw_root root)
{
	return ctx->fd[root];
}

const char *hw_strerror(int err)
{
	if (err < 0)
		err = -err;
	return err == HW_ENOTREG
		       ? "not a regular file (a FIFO, device or socket: refused, sysfs holds none)"
		       : strerror(err);
}

void hw_ctx_set_recorder(struct hw_ctx *ctx, hw_recorder_fn fn, void *userdata)
{
	ctx->recorder = fn;
	ctx->recorder_ud = userdata;
}

static void record_path(struct hw_ctx *ctx, enum hw_access how, const struct hw_dir *d,
			const char *name)
{
	char p[PATH_MAX];
	int n;

	if (!d || !d->path[0])
		n = snprintf(p, sizeof(p), "%s", name);
	else if (!name || !*name)
		n = snprintf(p, sizeof(p), "%s", d->path);
	else
		n = snprintf(p, sizeof(p), "%s/%s", d->path, name);
	if (n > 0 && (size_t)n < sizeof(p))
		ctx->recorder(HW_ROOT_SYSFS, how, p, ctx->recorder_ud);
}

/* Inline, and the path joined in a function of its own: only a snapshot records, while every
 * read of every command comes through here. */
static inline void record(struct hw_ctx *ctx, enum hw_access how, const struct hw_dir *d,
			  const char *name)
{
	if (ctx->recorder)
		record_path(ctx, how, d, name);
}

/* name beneath the links directory d, through the link: resolved from the root */
static int open_through_link(struct hw_ctx *ctx, const struct hw_dir *d, const char *name,
			     int flags)
{
	char full[PATH_MAX];

	if (str_concat(full, sizeof(full), d->path, "/", name) >= sizeof(full))
		return -ENAMETOOLONG;
	return inroot_openat(ctx->fd[HW_ROOT_SYSFS], full, flags);
}

/* A directory held only to open, read links and stat beneath it: O_PATH, which spares the
 * open and the close the file system's and notification hooks of a readable directory (a listing
 * opens its own descriptor). */
#define HW_DIR_FLAGS (O_PATH | O_DIRECTORY)

/* Open name under d (or the sysfs root), resolved inside the sysfs root. */
static int ctx_open(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, int flags)
{
	if (!d || !d->path[0])
		return inroot_openat(ctx->fd[HW_ROOT_SYSFS], name && *name ? name : ".", flags);
	if (d->links_out && name && *name && strcmp(name, "."))
		return open_through_link(ctx, d, name, flags);
	return inroot_openat_from(ctx->fd[HW_ROOT_SYSFS], d->fd, d->path,
				  name && *name ? name : ".", flags);
}

int hw_dir_open(struct hw_ctx *ctx, const struct hw_dir *parent, const char *name,
		struct hw_dir *ret)
{
	int fd;

	if (parent && parent->path[0]) {
		if (str_concat(ret->path, sizeof(ret->path), parent->path, "/", name) >=
		    sizeof(ret->path))
			return -ENAMETOOLONG;
	} else if (str_copy(ret->path, sizeof(ret->path), name) < 0) {
		return -ENAMETOOLONG;
	}
	fd = ctx_open(ctx, parent, name, HW_DIR_FLAGS);
	if (fd < 0)
		return fd;
	ret->fd = fd;
	ret->links_out = false;
	return 0;
}

int hw_dir_open_link(struct hw_ctx *ctx, const struct hw_dir *links, const char *name, char *buf,
		     size_t len, struct hw_dir *ret)
{
	char full[PATH_MAX];
	int n = hw_dir_readlink(ctx, links, name, buf, len);
	int fd;

	/* not a link (a real directory in a --root tree), or a text cut short: the walk through
	 * the name, as before */
	if (n <= 0 || (size_t)n >= len - 1) {
		buf[0] = '\0';
		return hw_dir_open(ctx, links, name, ret);
	}
	if (str_concat(ret->path, sizeof(ret->path), links->path, links->path[0] ? "/" : "",
		       name) >= sizeof(ret->path))
		return -ENAMETOOLONG;
	/* the text from the link's directory (from the root when absolute), which is what the
	 * walk through the link does, but without reading the link a second time: on ext4 a
	 * link this long is a block of its own */
	if (buf[0] != '/' && str_concat(full, sizeof(full), links->path, links->path[0] ? "/" : "",
					buf) >= sizeof(full))
		return -ENAMETOOLONG;
	fd = inroot_openat(ctx->fd[HW_ROOT_SYSFS], buf[0] == '/' ? buf : full, HW_DIR_FLAGS);
	if (fd < 0)
		return fd;
	ret->fd = fd;
	ret->links_out = false;
	return 0;
}

int hw_dir_open_links(struct hw_ctx *ctx, const char *path, struct hw_dir *ret)
{
	int r = hw_dir_open(ctx, NULL, path, ret);

	if (r >= 0)
		ret->links_out = true;
	return r;
}

void hw_dir_close(struct hw_dir *d)
{
	if (d && d->fd >= 0) {
		close(d->fd);
		d->fd = -1;
	}
}

int hw_dir_read(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	char room[128];
	ssize_t n;

	record(ctx, HW_ACCESS_READ, d, name);
	/* O_NONBLOCK: opening a FIFO for reading waits for a writer; then what is not a regular
	 * file is refused (sysfs attributes are; a read of a FIFO or a tty would block) */
	fd = ctx_open(ctx, d, name, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	/* A value that fills buf (a GUID's 19 characters and newline in 20 bytes) would make the
	 * read ask what the file is (fileio_read_regular): read into room to spare, keep len - 1. */
	if (len < sizeof(room)) {
		n = fileio_read_regular(fd, room, sizeof(room) - 1);
		if (n < 0)
			return (int)n;
		if ((size_t)n > len - 1)
			n = (ssize_t)(len - 1);
		memcpy(buf, room, (size_t)n);
	} else {
		n = fileio_read_regular(fd, buf, len - 1);
		if (n < 0)
			return (int)n;
	}
	buf[n] = '\0';
	return (int)str_rstrip(buf);
}

int hw_ctx_open(struct hw_ctx *ctx, enum hw_root root, const char *relpath, int flags)
{
	if ((unsigned)root >= HW_ROOT_N)
		return -EINVAL;
	if (ctx->fd[root] < 0)
		return ctx->fd[root];
	return inroot_openat(ctx->fd[root], relpath && *relpath ? relpath : ".", flags);
}

static int ctx_open_regular(struct hw_ctx *ctx, enum hw_root root, const char *relpath)
{
	if (ctx->recorder && root <= HW_ROOT_DEVFS)
		ctx->recorder(root, HW_ACCESS_READ, relpath, ctx->recorder_ud);
	return hw_ctx_open(ctx, root, relpath, O_RDONLY | O_NOCTTY | O_NONBLOCK);
}

ssize_t hw_ctx_read(struct hw_ctx *ctx, enum hw_root root, const char *relpath, void *buf,
		    size_t len)
{
	_cleanup_close_ int fd = ctx_open_regular(ctx, root, relpath);

	if (fd < 0)
		return fd;
	return fileio_read_regular(fd, buf, len);
}

int hw_ctx_read_alloc(struct hw_ctx *ctx, enum hw_root root, const char *relpath, size_t max,
		      char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = ctx_open_regular(ctx, root, relpath);
	int r;

	if (fd < 0)
		return fd;
	if ((r = fileio_check_regular(fd)) < 0)
		return r;
	return fileio_read_fd(fd, max, ret, ret_len);
}

int hw_dir_readlink(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf,
		    size_t len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	ssize_t n;

	record(ctx, HW_ACCESS_READLINK, d, name);
	/* One name under an open directory of the root: readlinkat does not follow it and there
	 * is no other component to resolve, so nothing can lead out of the root, and it costs one
	 * syscall instead of open, fstat, readlinkat and close. */
	if (str_is_path_name(name)) {
		n = readlinkat(d && d->path[0] ? d->fd : ctx->fd[HW_ROOT_SYSFS], name, buf,
			       len - 1);
		if (n < 0)
			return -errno;
		buf[n] = '\0';
		return (int)n;
	}
	/* the link itself, its directory resolved inside the root */
	fd = ctx_open(ctx, d, name, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISLNK(st.st_mode))
		return -EINVAL;
	n = readlinkat(fd, "", buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

bool hw_dir_exists(struct hw_ctx *ctx, const struct hw_dir *d, const char *name)
{
	_cleanup_close_ int fd = -1;

	record(ctx, HW_ACCESS_STAT, d, name);
	fd = ctx_open(ctx, d, name, O_PATH);
	return fd >= 0;
}

int hw_dir_list(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char ***ret,
		size_t *n)
{
	_cleanup_close_ int fd = -1;

	record(ctx, HW_ACCESS_LIST, d, name);
	fd = ctx_open(ctx, d, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	return fileio_list_dir(fd, 0, ret, n);
}

int hw_dir_open_table(struct hw_ctx *ctx, const struct hw_dir *parent, const char *name,
		      struct hw_dir *ret)
{
	record(ctx, HW_ACCESS_LIST, parent, name);
	return hw_dir_open(ctx, parent, name, ret);
}

int hw_fail(struct hw_error *e, const struct hw_dir *d, const char *name, int err)
{
	if (err < 0)
		err = -err;
	if (e && !e->err) {
		e->err = err;
		int n;

		if (d && d->path[0] && name && *name)
			n = snprintf(e->path, sizeof(e->path), "%s/%s", d->path, name);
		else
			n = snprintf(e->path, sizeof(e->path), "%s",
				     name && *name ? name : (d ? d->path : ""));
		if (n < 0 || (size_t)n >= sizeof(e->path))
			e->path[sizeof(e->path) - 1] = '\0';
	}
	return -err;
}

/* The kernel's "no value now" for an attribute (EINVAL, ENODATA, EOPNOTSUPP). */
static bool no_value(int err)
{
	return err == -EINVAL || err == -ENODATA || err == -EOPNOTSUPP;
}

int hw_read_opt(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf, size_t len)
{
	int r = hw_dir_read(ctx, d, name, buf, len);

	if (r == -ENOENT || no_value(r)) {
		buf[0] = '\0';
		return 0;
	}
	return r;
}

int hw_read_int(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, int base,
		long long *ret)
{
	char buf[64];
	int r = hw_dir_read(ctx, d, name, buf, sizeof(buf));

	if (r < 0)
		return r;
	return str_to_i64(buf, base, ret);
}

int hw_table_read(struct hw_ctx *ctx, const struct hw_dir *table, unsigned idx, char *buf,
		  size_t len)
{
	char num[21];
	int r;

	str_from_u64(num, idx);
	r = hw_dir_read(ctx, table, num, buf, len);
	if (no_value(r)) {
		buf[0] = '\0';
		r = 0;
	}
	return r;
}
