/* Network namespace files: open one checking it is one, compare two, enter and leave. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/nsfs.h>

#include "nl/nl.h"
#include "util/cleanup.h"

int nl_netns_open(const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	int type;

	if (!path || !*path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
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
