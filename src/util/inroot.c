/* SPDX-License-Identifier: Apache-2.0 */
#include "util/inroot.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/strutil.h"

#define MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */
#define MAX_DEPTH 256

/* 0 openat2 is tried, -1 the kernel or a seccomp profile refused it once: the walk from then on */
static atomic_int have_openat2;

/* fd, -errno, or -ENOSYS when openat2 cannot be used here */
static int try_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = { .flags = (unsigned long long)(flags | O_CLOEXEC),
				.resolve = resolve };

	if (atomic_load(&have_openat2) < 0)
		return -ENOSYS;
	for (int tries = 0; tries < 16; tries++) {
		long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

		if (fd >= 0)
			return (int)fd;
		/* EAGAIN: a rename or mount raced with the walk, which the kernel then refuses */
		if (errno == EAGAIN)
			continue;
		/* ENOSYS: before 5.6; EPERM: a seccomp profile that does not know it (the walk then
		 * gives the real answer if the file itself is the cause) */
		if (errno == ENOSYS || errno == EPERM) {
			atomic_store(&have_openat2, -1);
			return -ENOSYS;
		}
		return -errno;
	}
	return -EAGAIN;
}

struct walk {
	int fd[MAX_DEPTH]; /* fd[0] is the root (not ours), fd[k] the k-th directory below it */
	size_t depth;
};

static void walk_pop_all(struct walk *w)
{
	while (w->depth > 0)
		close(w->fd[w->depth--]);
}

/* Replace `todo` by "target/rest" (rest may be empty). */
static int splice_link(char **todo, const char *target, const char *rest)
{
	size_t lt = strlen(target), lr = strlen(rest);
	char *n = malloc(lt + lr + 2);

	if (!n)
		return -ENOMEM;
	memcpy(n, target, lt);
	n[lt] = '/';
	memcpy(n + lt + 1, rest, lr + 1);
	free(*todo);
	*todo = n;
	return 0;
}

static int walk_in_root(int rootfd, const char *path, int flags)
{
	struct walk w = { .fd = { rootfd } };
	_cleanup_free_ char *todo = strdup(path);
	bool follow_last = !(flags & O_NOFOLLOW);
	unsigned links = 0;
	char *p;
	int r;

	if (!todo)
		return -ENOMEM;
	p = todo;
	for (;;) {
		char comp[NAME_MAX + 1], target[PATH_MAX];
		struct stat st;
		size_t l;
		bool last;
		int fd;

		while (*p == '/')
			p++;
		if (!*p) { /* "", "/", or a path ending in "..": the directory reached */
			fd = openat(w.fd[w.depth], ".", flags | O_CLOEXEC);
			r = fd < 0 ? -errno : fd;
			break;
		}
		l = strcspn(p, "/");
		if (l > NAME_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		memcpy(comp, p, l);
		comp[l] = '\0';
		p += l;
		while (*p == '/')
			p++;
		last = !*p;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) { /* stops at the root, as chroot's does */
			if (w.depth > 0)
				close(w.fd[w.depth--]);
			continue;
		}
		if (fstatat(w.fd[w.depth], comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (S_ISLNK(st.st_mode) && (!last || follow_last)) {
			ssize_t n = readlinkat(w.fd[w.depth], comp, target, sizeof(target) - 1);

			if (n < 0) {
				r = -errno;
				break;
			}
			if (++links > MAX_LINKS) {
				r = -ELOOP;
				break;
			}
			target[n] = '\0';
			if (target[0] == '/') /* absolute: from the root, not from the real "/" */
				walk_pop_all(&w);
			if ((r = splice_link(&todo, target, p)) < 0)
				break;
			p = todo;
			continue;
		}
		if (last) {
			/* O_NOFOLLOW: if the name became a symlink since fstatat, open fails (or, with
			 * O_PATH, opens the link itself) rather than following it out */
			fd = openat(w.fd[w.depth], comp, flags | O_NOFOLLOW | O_CLOEXEC);
			r = fd < 0 ? -errno : fd;
			break;
		}
		if (w.depth + 1 >= MAX_DEPTH) {
			r = -ENAMETOOLONG;
			break;
		}
		fd = openat(w.fd[w.depth], comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			r = errno == ELOOP ? -EAGAIN : -errno; /* replaced by a link meanwhile */
			break;
		}
		w.fd[++w.depth] = fd;
	}
	walk_pop_all(&w);
	return r;
}

int inroot_openat(int rootfd, const char *path, int flags)
{
	int fd = try_openat2(rootfd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);

	if (fd != -ENOSYS)
		return fd;
	return walk_in_root(rootfd, path, flags);
}

int inroot_openat_from(int rootfd, int dirfd, const char *dirpath, const char *name, int flags)
{
	char full[PATH_MAX];

	/* One plain name under dirfd, not followed if it is a link: nothing else is resolved, so
	 * it cannot lead out, and openat costs less than openat2's scoped walk (its open_how, and
	 * a reference taken and dropped on dirfd as the walk's root) for each of 50 000 reads.
	 * A link (ELOOP; ENOTDIR with O_DIRECTORY) or any other failure but ENOENT takes the walk
	 * below, which follows links inside the root. O_PATH | O_NOFOLLOW would open a link
	 * itself: not taken, but with O_DIRECTORY, where a link fails with ENOTDIR. */
	if (dirfd >= 0 && dirfd != rootfd && (!(flags & O_PATH) || (flags & O_DIRECTORY)) &&
	    str_is_path_name(name)) {
		int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0 || errno == ENOENT)
			return fd >= 0 ? fd : -ENOENT;
	}
	if (dirfd >= 0 && dirfd != rootfd) {
		/* EXDEV: the path leaves dirfd (sysfs's ../../devices links do): resolve all of it */
		int fd = try_openat2(dirfd, name, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);

		if (fd != -ENOSYS && fd != -EXDEV)
			return fd;
	}
	/* built only here: on a node of a thousand VFs the walk beneath dirfd is 50 000 opens */
	if (str_concat(full, sizeof(full), dirpath, "/", name) >= sizeof(full))
		return -ENAMETOOLONG;
	return inroot_openat(rootfd, full, flags);
}
