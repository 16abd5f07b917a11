#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

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
	int r = fileio_check_regular(fd);

	return r < 0 ? r : read_full(fd, buf, len);
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

/* ".NAME.XXXXXXXX.tmp": hidden, so that a loader listing *.json (CDI) or NAME* skips it. */
static int create_temp(int dfd, const char *base, mode_t mode, char *tmp, size_t n)
{
	for (int tries = 0; tries < 16; tries++) {
		uint32_t rnd;
		int fd;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint32_t)getpid() * 2654435761u + (uint32_t)tries;
		if (snprintf(tmp, n, ".%s.%08x.tmp", base, rnd) >= (int)n)
			return -ENAMETOOLONG;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
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
	if (r >= 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
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
