/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespace files: open one checking it is one, compare two, enter and leave. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "nl/nl.h"
#include "util/cleanup.h"

/* What a file that is not a network namespace is, in words; NULL when it is one (as far as
 * st and sfs tell: nsfs inodes are regular files of the nsfs file system). */
static const char *kind_of(const struct stat *st, const struct statfs *sfs)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return sfs->f_type == NSFS_MAGIC ? NULL : "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	default: return "not a regular file";
	}
}

int nl_netns_open(const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	struct statfs sfs;
	struct stat st;
	int type;

	if (!path || !*path)
		return -EINVAL;
	/* O_NONBLOCK: opening a FIFO read-only would otherwise wait for a writer, for ever */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0)
		return -errno;
	if (kind_of(&st, &sfs))
		return -EINVAL;
	/* NS_GET_NSTYPE answers only on nsfs files: a plain file left where a namespace was
	 * bind-mounted (the runtime already unmounted it) is not a namespace. */
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type < 0)
		return errno == ENOTTY || errno == EINVAL ? -EINVAL : -errno;
	if (type != CLONE_NEWNET)
		return -EINVAL;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int nl_netns_describe(const char *path, const char **ret_what)
{
	_cleanup_close_ int fd = -1;
	struct statfs sfs;
	struct stat st;
	const char *what;
	int type;

	if (!path || !*path)
		return -EINVAL;
	/* stat and statfs never block on a FIFO, and follow /proc/PID/ns/net's magic link */
	if (stat(path, &st) < 0 || statfs(path, &sfs) < 0)
		return -errno;
	what = kind_of(&st, &sfs);
	if (!what) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return -errno;
		type = ioctl(fd, NS_GET_NSTYPE);
		if (type < 0)
			return -errno;
		if (type == CLONE_NEWNET)
			return 0;
		what = "a namespace of another kind";
	}
	*ret_what = what;
	return 1;
}

int nl_netns_open_self(int *ret_fd)
{
	/* thread-self: setns() changes one thread's namespace, so ask for the calling thread's */
	return nl_netns_open("/proc/thread-self/ns/net", ret_fd);
}

int nl_netns_same(int a, int b)
{
	struct stat sa, sb;

	if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
		return -errno;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int nl_netns_enter(int netns_fd, int *ret_saved)
{
	_cleanup_close_ int saved = -1;
	int r;

	r = nl_netns_open_self(&saved);
	if (r < 0)
		return r;
	if (setns(netns_fd, CLONE_NEWNET) < 0)
		return -errno;
	*ret_saved = TAKE_FD(saved);
	return 0;
}

int nl_netns_leave(int saved_fd)
{
	int r = 0;

	if (saved_fd < 0)
		return -EBADF;
	if (setns(saved_fd, CLONE_NEWNET) < 0)
		r = -errno;
	close(saved_fd);
	return r;
}

/* fsopen, fsconfig and fsmount in the namespace: the sysfs instance takes the network namespace
 * of the task that creates it as its tag, and shows what that namespace sees. */
static int sysfs_here(int *ret_fd)
{
	_cleanup_close_ int fs = fsopen("sysfs", FSOPEN_CLOEXEC);
	int mnt;

	if (fs < 0)
		return -errno;
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	mnt = fsmount(fs, FSMOUNT_CLOEXEC,
		      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return -errno;
	*ret_fd = mnt;
	return 0;
}

int nl_netns_sysfs(int netns_fd, int *ret_fd)
{
	int saved = -1, r, l;

	r = nl_netns_enter(netns_fd, &saved);
	if (r < 0)
		return r;
	r = sysfs_here(ret_fd);
	l = nl_netns_leave(saved);
	if (l < 0) {
		/* this thread would stay in the other namespace: nothing of it may be used */
		if (r == 0)
			close(*ret_fd);
		return l;
	}
	return r;
}
