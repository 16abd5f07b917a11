/* SPDX-License-Identifier: Apache-2.0 */
/* A read-only mirror of a tree in which reads of one file wait until the test lets them go
 * (test-only), so that a test can hold requests in progress at once without timing anything.
 *
 *   hold_fuse BACKING MOUNTPOINT HOLD_PATH CONTROL_DIR
 *
 * Serves BACKING at MOUNTPOINT, in the foreground, until unmounted (fusermount3 -u). A read of
 * HOLD_PATH (relative to BACKING, symbolic links resolved: the path the kernel asks for) waits
 * while CONTROL_DIR/hold exists; each read that starts waiting appends one line "held" to
 * CONTROL_DIR/held.log, so that the test knows how many readers it holds. Every other file reads
 * as the backing one. Reads are served by several threads: one that waits holds no other. */
#define FUSE_USE_VERSION 35
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int backing = -1;
static const char *hold_path, *control;

/* FUSE's paths start with '/': relative to the backing root */
static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	return fstatat(backing, rel(path), st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int fs_readlink(const char *path, char *buf, size_t len)
{
	ssize_t n = readlinkat(backing, rel(path), buf, len - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int fd = openat(backing, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d)))
		fill(buf, e->d_name, NULL, 0, 0);
	closedir(d);
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	int fd;

	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	fd = openat(backing, rel(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1; /* every read comes here, none from the page cache */
	return 0;
}

static void hold(void)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/held.log", control);
	fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, "held\n", 5) != 5)
			perror(p);
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/hold", control);
	while (access(p, F_OK) == 0)
		usleep(10000);
}

static int fs_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	ssize_t n;

	if (!strcmp(rel(path), hold_path)) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/hold", control);
		if (access(p, F_OK) == 0)
			hold();
	}
	n = pread((int)fi->fh, buf, len, off);
	return n < 0 ? -errno : (int)n;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.release = fs_release,
};

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: hold_fuse BACKING MOUNTPOINT HOLD_PATH CONTROL_DIR\n");
		return 2;
	}
	backing = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing < 0) {
		perror(argv[1]);
		return 1;
	}
	hold_path = argv[3];
	control = argv[4];
	/* foreground, several threads, read-only; others (the exporter as another uid) may read */
	char *fargv[] = { argv[0], "-f", "-o", "ro,allow_other,fsname=hold_fuse", argv[2], NULL };
	return fuse_main(5, fargv, &ops, NULL);
}
