/* The roots the model reads from, and the only functions in src/hw that touch the
 * file system: everything is resolved inside a root fd (util/inroot.h), never from "/": an
 * absolute symlink in a --root tree (fw_ver -> /etc/hostname) resolves under the root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

int hw_ctx_new(const char *sysfs, const char *devfs, struct hw_ctx **ret)
{
	_cleanup_free_ struct hw_ctx *ctx = calloc(1, sizeof(*ctx));
	int r;

	if (!ctx)
		return -ENOMEM;
	ctx->sysfs_fd = ctx->devfs_fd = -1;
	ctx->sysfs = strdup(sysfs ? sysfs : "/sys");
	ctx->devfs = strdup(devfs ? devfs : "/dev");
	if (!ctx->sysfs || !ctx->devfs) {
		r = -ENOMEM;
		goto fail;
	}
	ctx->sysfs_fd = open(ctx->sysfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ctx->sysfs_fd < 0) {
		r = -errno;
		goto fail;
	}
	/* A missing devfs is a finding (no device nodes), not a failure. */
	ctx->devfs_fd = open(ctx->devfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	*ret = TAKE_PTR(ctx);
	return 0;
fail:
	free(ctx->sysfs);
	free(ctx->devfs);
	return r;
}

int hw_ctx_new_root(const char *root, const char *sysfs, const char *devfs, struct hw_ctx **ret)
{
	_cleanup_free_ char *s = NULL, *d = NULL;

	if (root && !sysfs && asprintf(&s, "%s/sys", root) < 0)
		return -ENOMEM;
	if (root && !devfs && asprintf(&d, "%s/dev", root) < 0)
		return -ENOMEM;
	return hw_ctx_new(sysfs ? sysfs : s, devfs ? devfs : d, ret);
}

void hw_ctx_free(struct hw_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->sysfs_fd >= 0)
		close(ctx->sysfs_fd);
	if (ctx->devfs_fd >= 0)
		close(ctx->devfs_fd);
	free(ctx->sysfs);
	free(ctx->devfs);
	free(ctx);
}

const char *hw_strerror(int err)
{
	if (err < 0)
		err = -err;
	return err == HW_ENOTREG ? "not a regular file (a FIFO, device or socket: refused, sysfs holds none)" : strerror(err);
}

const char *hw_ctx_sysfs(const struct hw_ctx *ctx) { return ctx->sysfs; }
const char *hw_ctx_devfs(const struct hw_ctx *ctx) { return ctx->devfs; }

void hw_ctx_set_recorder(struct hw_ctx *ctx, hw_recorder_fn fn, void *userdata)
{
	ctx->recorder = fn;
	ctx->recorder_ud = userdata;
}

static void record(struct hw_ctx *ctx, enum hw_access how, const struct hw_dir *d, const char *name)
{
	char p[PATH_MAX];

	if (!ctx->recorder)
		return;
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

/* Open name under d (or the sysfs root), resolved inside the sysfs root. */
static int ctx_open(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, int flags)
{
	char full[PATH_MAX];
	int n;

	if (!d || !d->path[0])
		return inroot_openat(ctx->sysfs_fd, name && *name ? name : ".", flags);
	n = snprintf(full, sizeof(full), "%s/%s", d->path, name && *name ? name : ".");
	if (n < 0 || (size_t)n >= sizeof(full))
		return -ENAMETOOLONG;
	return inroot_openat_from(ctx->sysfs_fd, d->fd, name && *name ? name : ".", full, flags);
}

int hw_dir_open(struct hw_ctx *ctx, const struct hw_dir *parent, const char *name, struct hw_dir *ret)
{
	int fd, n;

	if (parent && parent->path[0])
		n = snprintf(ret->path, sizeof(ret->path), "%s/%s", parent->path, name);
	else
		n = snprintf(ret->path, sizeof(ret->path), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(ret->path))
		return -ENAMETOOLONG;
	fd = ctx_open(ctx, parent, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	ret->fd = fd;
	return 0;
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
	struct stat st;
	ssize_t n;

	record(ctx, HW_ACCESS_READ, d, name);
	/* O_NONBLOCK: opening a FIFO for reading waits for a writer; then refuse what is not a
	 * regular file (sysfs attributes are; a read of a FIFO or a tty would block) */
	fd = ctx_open(ctx, d, name, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -HW_ENOTREG;
	n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)str_rstrip(buf);
}

int hw_ctx_open(struct hw_ctx *ctx, const char *relpath, int flags)
{
	return ctx_open(ctx, NULL, relpath, flags);
}

ssize_t hw_ctx_read(struct hw_ctx *ctx, const char *relpath, void *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t got = 0;

	record(ctx, HW_ACCESS_READ, NULL, relpath);
	fd = ctx_open(ctx, NULL, relpath, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -HW_ENOTREG;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int hw_dir_readlink(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	ssize_t n;

	record(ctx, HW_ACCESS_READLINK, d, name);
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

int hw_dir_list(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char ***ret, size_t *n)
{
	_cleanup_closedir_ DIR *dir = NULL;
	_cleanup_strv_free_ char **v = NULL;
	size_t cnt = 0;
	struct dirent *de;
	int fd, r;

	record(ctx, HW_ACCESS_LIST, d, name);
	fd = ctx_open(ctx, d, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (!dir) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((r = strv_extend(&v, &cnt, de->d_name)) < 0)
			return r;
	}
	if (errno)
		return -errno;
	strv_sort(v);
	*ret = TAKE_PTR(v);
	*n = cnt;
	return 0;
}

/* The loaders may fail on several threads at once: the first one names the path. */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

int hw_fail(struct hw_error *e, const struct hw_dir *d, const char *name, int err)
{
	if (err < 0)
		err = -err;
	pthread_mutex_lock(&fail_lock);
	if (e && !e->err) {
		e->err = err;
		int n;

		if (d && d->path[0] && name && *name)
			n = snprintf(e->path, sizeof(e->path), "%s/%s", d->path, name);
		else
			n = snprintf(e->path, sizeof(e->path), "%s", name && *name ? name : (d ? d->path : ""));
		if (n < 0 || (size_t)n >= sizeof(e->path))
			e->path[sizeof(e->path) - 1] = '\0';
	}
	pthread_mutex_unlock(&fail_lock);
	return -err;
}

int hw_read_opt(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, char *buf, size_t len)
{
	int r = hw_dir_read(ctx, d, name, buf, len);

	if (r == -ENOENT || r == -EINVAL || r == -ENODATA || r == -EOPNOTSUPP) {
		buf[0] = '\0';
		return 0;
	}
	return r;
}

int hw_read_int(struct hw_ctx *ctx, const struct hw_dir *d, const char *name, int base, long long *ret)
{
	char buf[64];
	int r = hw_dir_read(ctx, d, name, buf, sizeof(buf));

	if (r < 0)
		return r;
	return str_to_i64(buf, base, ret);
}
