/* SPDX-License-Identifier: Apache-2.0 */
#include "util/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/strv.h"

int fileio_check_regular(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	return S_ISDIR(st.st_mode) ? -EISDIR : -FILEIO_ENOTREG;
}

/* read() until len bytes or end of file, through EINTR: the count (short only at the end) */
static ssize_t read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

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

ssize_t fileio_read_regular(int fd, void *buf, size_t len)
{
	ssize_t n = read_full(fd, buf, len);
	int r;

	/* Read first and ask what the file is only when the answer could come from something
	 * else: a regular file ends with a short read, while a FIFO (opened O_NONBLOCK) ends at once
	 * or fails with EAGAIN, a directory fails with EISDIR and a device that streams fills the
	 * buffer. On a node of a thousand VFs that is one fstat less for each of 50 000 files. */
	if (n > 0 && (size_t)n < len)
		return n;
	r = fileio_check_regular(fd);
	return r < 0 ? r : n;
}

/* What getdents64 writes: the kernel's struct linux_dirent64 */
struct dirent64_ {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static bool list_keeps(int fd, unsigned flags, const struct dirent64_ *de)
{
	unsigned char t = de->type;
	struct stat st;

	if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
		return false;
	if ((flags & FILEIO_LIST_NO_HIDDEN) && de->name[0] == '.')
		return false;
	if (!(flags & FILEIO_LIST_REGULAR))
		return true;
	if (t == DT_UNKNOWN && fstatat(fd, de->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		t = S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
	return t == DT_REG;
}

int fileio_list_dir(int fd, unsigned flags, char ***ret, size_t *ret_n)
{
	_cleanup_strv_free_ char **v = NULL;
	char buf[16384] __attribute__((aligned(8)));
	size_t n = 0;
	int r;

	for (;;) {
		ssize_t got = getdents64(fd, buf, sizeof(buf));

		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		for (ssize_t off = 0; off < got;) {
			const struct dirent64_ *de = (const struct dirent64_ *)(buf + off);

			off += de->reclen;
			if (list_keeps(fd, flags, de) && (r = strv_extend(&v, &n, de->name)) < 0)
				return r;
		}
	}
	strv_sort(v);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int fileio_read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	if (max >= SIZE_MAX - 1)
		return -EINVAL;
	for (;;) {
		ssize_t n;
		size_t want;

		/* one byte more than max, so that a file of exactly max bytes is not "too big" */
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (ncap <= len)
				return -EFBIG;
			nb = realloc(buf, ncap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		want = cap - len;
		n = read_full(fd, buf + len, want);
		if (n < 0)
			return (int)n;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
		if ((size_t)n < want)
			break; /* end of file */
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int fileio_read_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return fileio_read_fd(fd, max, ret, ret_len);
}

int fileio_read_regular_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int r;

	if (fd < 0)
		return -errno;
	if ((r = fileio_check_regular(fd)) < 0)
		return r;
	return fileio_read_fd(fd, max, ret, ret_len);
}

const char *fileio_strerror(int err)
{
	err = err < 0 ? -err : err;
	return err == FILEIO_ENOTREG ? "not a regular file (a FIFO, device or socket)"
				     : strerror(err);
}

int fileio_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Split "a/b/c" into the directory fd of "a/b" (relative to dirfd) and "c". */
static int open_parent(int dirfd, const char *path, int *ret_fd, const char **ret_base)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = NULL;
	int fd;

	if (!*path || (slash && !slash[1]))
		return -EISDIR; /* "" or "dir/": no file name to replace */
	if (!slash)
		fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else {
		dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		if (!dir)
			return -ENOMEM;
		fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	*ret_base = slash ? slash + 1 : path;
	return 0;
}

static int check_replaceable(int dfd, const char *base)
{
	struct stat st;

	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	return -EEXIST;
}

int fileio_flock(int fd, int how)
{
	while (flock(fd, how) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* ".NAME.XXXXXXXX.tmp": hidden, so that a loader listing *.json (CDI) or NAME* skips it.
 * Returned locked (flock LOCK_EX): the lock says "my writer is alive" to
 * fileio_remove_stale_temps_at(), and goes with the writer, kill -9 included. */
static int create_temp(int dfd, const char *base, mode_t mode, char *tmp, size_t n)
{
	for (int tries = 0; tries < 16; tries++) {
		_cleanup_close_ int fd = -1;
		struct stat st;
		uint32_t rnd;
		int r;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint32_t)getpid() * 2654435761u + (uint32_t)tries;
		if (snprintf(tmp, n, ".%s.%08x.tmp", base, rnd) >= (int)n)
			return -ENAMETOOLONG;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			    mode & 07777);
		if (fd < 0) {
			if (errno != EEXIST)
				return -errno;
			continue;
		}
		if ((r = fileio_flock(fd, LOCK_EX)) < 0 || fstat(fd, &st) < 0) {
			r = r < 0 ? r : -errno;
			unlinkat(dfd, tmp, 0);
			return r;
		}
		/* a reclaimer that came between openat and flock took the unlocked file for a dead
		 * writer's and removed it: start again under another name */
		if (st.st_nlink == 0)
			continue;
		return TAKE_FD(fd);
	}
	return -EEXIST;
}

/* Whether name is ".BASE.XXXXXXXX.tmp" (create_temp's shape), for base (NULL: any). */
static bool temp_name(const char *name, const char *base)
{
	size_t l = strlen(name), bl;

	if (l < 1 + 1 + 1 + 8 + 4 || name[0] != '.' || strcmp(name + l - 4, ".tmp") ||
	    name[l - 13] != '.')
		return false;
	for (size_t i = l - 12; i < l - 4; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return false;
	bl = l - 14; /* the base between the leading '.' and ".XXXXXXXX.tmp" */
	return !base || (strlen(base) == bl && !memcmp(name + 1, base, bl));
}

/* Remove the temp file name of dfd if no writer holds it: 1 removed, 0 kept, -errno. */
static int remove_if_stale(int dfd, const char *name)
{
	_cleanup_close_ int fd =
		openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st, now;

	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? 0 : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno; /* a live writer */
	/* the name may have gone (renamed into place, or removed by another reclaimer) or come
	 * back as another file since openat: remove only the file we hold */
	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (now.st_dev != st.st_dev || now.st_ino != st.st_ino)
		return 0;
	if (unlinkat(dfd, name, 0) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int fileio_remove_stale_temps_at(int dirfd, const char *base, size_t *ret_removed)
{
	_cleanup_close_ int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_strv_free_ char **names = NULL;
	size_t removed = 0, n = 0;
	int r;

	if (dfd < 0)
		return -errno;
	r = fileio_list_dir(dfd, 0, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		int e;

		if (!temp_name(names[i], base))
			continue;
		e = remove_if_stale(dfd, names[i]);
		if (e > 0)
			removed++;
		else if (e < 0 && !r)
			r = e; /* go on: one unreadable name must not keep the others */
	}
	if (removed)
		(void)fsync(dfd);
	if (ret_removed)
		*ret_removed = removed;
	return r;
}

int fileio_write_atomic_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	const char *base = NULL; /* gcc -O2 cannot see open_parent() sets it on success */
	char tmp[NAME_MAX + 1];
	int r;

	r = open_parent(dirfd, path, &dfd, &base);
	if (r < 0)
		return r;
	r = check_replaceable(dfd, base);
	if (r < 0)
		return r;
	fd = create_temp(dfd, base, mode, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	r = fileio_write_all(fd, buf, len);
	/* the exact mode, whatever the umask; then the data on disk before the name points at it */
	if (r >= 0 && fchmod(fd, mode & 07777) < 0)
		r = -errno;
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	/* fd stays open, its lock held, until the temp name is gone (renamed or removed): closed
	 * earlier, the file would look like a dead writer's to a reclaimer. fsync has reported
	 * the write-back errors that close could. */
	/* a target that became a non-regular file meanwhile is still not replaced (narrow race:
	 * rename has no "only if regular" flag) */
	if (r >= 0)
		r = check_replaceable(dfd, base);
	if (r >= 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	/* the rename itself survives a power cut only once the directory is on disk */
	if (fsync(dfd) < 0)
		return -errno;
	return 0;
}

int fileio_mkdir_p(const char *path, mode_t parent_mode, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, parent_mode) < 0 && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISREG(m)  ? "a regular file"
	       : S_ISLNK(m)  ? "a symbolic link"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a regular file";
}

/* Anyone but root who may write it could swap what it holds (or, for a folder, what a name in
 * it is): the node's settings and the folders a root process writes are root's alone. */
static int check_owned(const struct stat *st, const char *path, char *err, size_t errlen)
{
	if (st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	snprintf(err, errlen,
		 "%s is owned by uid %u with mode %04o: refused (root's, not writable by group or "
		 "others)",
		 path, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
	return -EPERM;
}

int fileio_read_owned(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len,
		      char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			snprintf(err, errlen,
				 "%s is a symbolic link: refused (write the file itself)", path);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is %s: refused (a regular file only)", path,
			 file_kind(st.st_mode));
		return S_ISDIR(st.st_mode) ? -EISDIR : -FILEIO_ENOTREG;
	}
	if ((r = check_owned(&st, path, err, errlen)) < 0)
		return r;
	if ((size_t)st.st_size > max) {
		snprintf(err, errlen, "%s is larger than %zu bytes", path, max);
		return -EFBIG;
	}
	r = fileio_read_fd(fd, max, ret, ret_len);
	if (r < 0)
		snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "too large" : strerror(-r));
	return r;
}

/* base without its trailing slashes: its length ("/" is 1) */
static size_t base_len(const char *base)
{
	size_t n = strlen(base);

	while (n > 1 && base[n - 1] == '/')
		n--;
	return n;
}

/* The part of path beneath base ("" for base itself), or NULL when path is elsewhere or has a
 * "." or ".." component or an empty one. */
static const char *beneath(const char *base, const char *path)
{
	size_t n = base_len(base);
	const char *rel;

	if (base[0] != '/' || path[0] != '/' || strncmp(base, path, n))
		return NULL;
	rel = path + n;
	if (n > 1) {
		if (*rel && *rel != '/')
			return NULL; /* "/var/lib/cni2" is not beneath "/var/lib/cni" */
	}
	while (*rel == '/')
		rel++;
	for (const char *c = rel; *c;) {
		size_t k = strcspn(c, "/");

		if (k == 0 && c[1])
			return NULL; /* "a//b" */
		if ((k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
			return NULL;
		c += k;
		if (*c)
			c++;
	}
	return rel;
}

bool fileio_path_beneath(const char *base, const char *path)
{
	return beneath(base, path) != NULL;
}

/* The folder name of dir (shown as path), made with mode when missing and create: its fd. */
static int open_one_dir(int dir, const char *name, bool create, mode_t mode, const char *path,
			char *err, size_t errlen)
{
	struct stat st;
	int fd, r;

	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dir, name, mode) < 0 && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "creating %s: %s", path, strerror(-r));
			return r;
		}
		fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		r = -errno;
		if ((r == -ELOOP || r == -ENOTDIR) &&
		    fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			snprintf(err, errlen, "%s is %s: refused (a folder of root's only)", path,
				 file_kind(st.st_mode));
			return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
		}
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if ((r = check_owned(&st, path, err, errlen)) < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int fileio_open_dir_beneath(const char *base, const char *path, bool create, mode_t mode, char *err,
			    size_t errlen)
{
	_cleanup_free_ char *shown = NULL;
	_cleanup_close_ int fd = -1;
	const char *rel = beneath(base, path);
	struct stat st;
	size_t n;
	int r;

	if (!rel) {
		snprintf(err, errlen, "%s is not %s or a folder beneath it", path, base);
		return -EXDEV;
	}
	if (create && (r = fileio_mkdir_p(base, 0755, *rel ? 0755 : mode)) < 0) {
		snprintf(err, errlen, "creating %s: %s", base, strerror(-r));
		return r;
	}
	/* the owner's path, followed as given (a distribution may link /var/lib/cni elsewhere) */
	fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", base, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", base, strerror(-r));
		return r;
	}
	if ((r = check_owned(&st, base, err, errlen)) < 0)
		return r;
	if (!(shown = malloc(strlen(base) + strlen(rel) + 2)))
		return -ENOMEM;
	n = base_len(base);
	memcpy(shown, base, n);
	shown[n] = '\0';
	for (const char *c = rel; *c;) {
		size_t k = strcspn(c, "/");
		char name[NAME_MAX + 1];
		int next;

		if (k == 0)
			break; /* a trailing '/' */
		if (k > NAME_MAX) {
			snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
		memcpy(name, c, k);
		name[k] = '\0';
		if (!(n == 1 && shown[0] == '/'))
			shown[n++] = '/';
		memcpy(shown + n, name, k + 1);
		n += k;
		c += k;
		while (*c == '/')
			c++;
		next = open_one_dir(fd, name, create, *c ? 0755 : mode, shown, err, errlen);
		if (next < 0)
			return next;
		close(fd);
		fd = next;
	}
	return TAKE_FD(fd);
}
